// UcxContext: the setup half of the UCX engine. One ucp context (features
// AM + WAKEUP, no RMA: ucx_memory_access.h), one worker (UCS_THREAD_MODE_SERIALIZED, every call made
// under mu()), the worker's progress thread, the node-side address server
// and both kinds of connections:
//  - client connections (ClientConn), made on first use per endpoint
//    "ip:port": the node's worker address is fetched from that TCP port
//    (ucx_address_server.h), the endpoint is created from it (so UCX picks
//    shared memory or CMA lanes on one host, network lanes across hosts),
//    then a hello {client id, connection id, this worker's address, the
//    node's ticket, a client nonce and a proof of the cluster token over
//    both nonces} is answered by the node's verdict and, on acceptance, a
//    session {id, secret} that every request carries and the node's own
//    proof; the connection is READY only once that proof verified (else
//    UNAUTHENTICATED: nothing is ever posted to it); cached until UCX
//    reports the peer failed (the next user reconnects) or a user closes it;
//  - node connections, one per accepted hello: the node creates its own
//    endpoint to the client's worker address, on a second worker whose
//    address is never published (so UCX never pairs it with the client's
//    endpoint to the first); its replies travel on it, and its error
//    callback tells when the client is gone. A request is served
//    only when it carries a live session's id and secret. A hello whose
//    ticket is not outstanding (replayed, expired, never issued: the
//    ChallengeBook forgets a ticket once named) or whose proof is wrong is
//    answered with a rejection on a temporary endpoint, closed after it.
//
// Progress: the progress thread sleeps on the workers' event fds (with a
// short poll timeout as a safety net), progresses the worker, then runs
// the work queued for it: deferred AM handler invocations (outside the
// lock). Threads waiting for their own operations progress the worker
// themselves (WaitLocked). Callbacks from UCX run inside progress, under
// mu(); they never call back into the worker directly but queue worker calls
// with AfterProgressLocked(), run right after the progress call returns.
//
// Thread safety: every public method may be called from any thread; the
// *Locked methods require mu().
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "auth/proof.h"
#include "common/result.h"
#include "transport/challenge_book.h"
#include "transport/transport.h"
#include "transport/ucx_wire.h"

namespace shelfmark {

// UCX active message ids used on the wire.
enum UcxAmId : unsigned {
  kUcxAmHello = 1,
  kUcxAmHelloReply = 2,
  kUcxAmRequest = 3,
  kUcxAmResponse = 4,
};

int64_t UcxNowMs();

class UcxContext;
class UcxAddressServer;
class LocalMapping;
class LocalShareServer;

// The argument UCX passes to an endpoint's error callback.
struct UcxEpArg {
  UcxContext* context = nullptr;
  uint64_t conn_id = 0;
};

// A connection from this engine to a node.
struct ClientConn {
  // UNAUTHENTICATED: the node accepted the hello but could not prove the
  // cluster token (an impostor, or a node of another cluster).
  enum class State { CONNECTING, READY, REJECTED, UNAUTHENTICATED, FAILED, CLOSED };
  std::string endpoint;
  uint64_t id = 0;  // echoed by the node's hello reply
  ucp_ep_h ep = nullptr;
  State state = State::CONNECTING;
  std::string error;  // why FAILED
  ucx_wire::Session session;  // the node's, once READY
  // The handshake: the hello sent and the node nonce it answered; the
  // node's proof is checked against both.
  ucx_wire::Hello hello;
  auth::Nonce node_nonce{};
  // The node's segment mapped here when it runs on this host and shares it
  // (local_share.h); reads and writes covered by it are a memcpy.
  std::shared_ptr<LocalMapping> local;
  std::unique_ptr<UcxEpArg> arg;
};


class UcxContext {
 public:
  static Result<std::unique_ptr<UcxContext>> Create(const TransportOptions& options);
  ~UcxContext();
  UcxContext(const UcxContext&) = delete;
  UcxContext& operator=(const UcxContext&) = delete;

  const TransportOptions& options() const { return options_; }
  std::string endpoint() const { return endpoint_; }
  ucp_context_h ucp() const { return context_; }
  ucp_worker_h worker() const { return worker_; }
  Mutex& mu() SHELFMARK_THREAD_ANNOTATION(lock_returned(mu_)) { return mu_; }
  size_t max_am_header() const { return max_am_header_; }

  // The READY connection to `endpoint`, connecting (and waiting for the
  // node's hello verdict) until `deadline_ms` if needed. On failure *code is
  // TRANSFER_FAIL (unreachable, timeout, connection lost), ILLEGAL_CLIENT
  // (the node rejected the hello) or UNAUTHENTICATED (the node did not
  // prove the cluster token) and *error says why.
  std::shared_ptr<ClientConn> ConnectLocked(MutexLock& lock, std::string_view endpoint, int64_t deadline_ms,
                                            ErrorCode* code, std::string* error) REQUIRES(mu_);
  // Closes `conn` (force: its outstanding operations complete with an error)
  // and forgets it; the next ConnectLocked() makes a new one.
  void CloseLocked(std::shared_ptr<ClientConn> conn) REQUIRES(mu_);

  // Progresses the worker until done() or the deadline; returns done().
  // Lets other threads use the worker while waiting.
  bool WaitLocked(MutexLock& lock, const std::function<bool()>& done, int64_t deadline_ms)
      REQUIRES(mu_);
  // Runs `fn` under mu() right after the current progress call (from a UCX
  // callback: calls into the worker are not allowed there).
  void AfterProgressLocked(std::function<void()> fn) REQUIRES(mu_);
  // Runs `fn` on the progress thread, outside mu().
  void RunOnProgressThreadLocked(std::function<void()> fn) REQUIRES(mu_);
  // Wakes the progress thread (after posting work from another thread).
  void Signal();

  // Node side: true when `session` is a live node connection's (its hello
  // passed); *client_id is the client's.
  bool AuthorizedLocked(const ucx_wire::Session& session, UUID* client_id) REQUIRES(mu_);
  // Node side: the endpoint of a live node connection, nullptr when gone.
  ucp_ep_h NodeEpLocked(uint64_t conn_id) REQUIRES(mu_);
  // Registers an AM handler for a UcxAm id (kUcxAmRequest / kUcxAmResponse).
  void SetAmHandler(unsigned id, ucp_am_recv_callback_t cb, void* arg);

  // Sends an AM whose header and data `owned` keeps alive until completion;
  // returns false when the send failed at once.
  bool SendOwnedLocked(ucp_ep_h ep, unsigned id, std::shared_ptr<std::string> header,
                       std::shared_ptr<std::string> data) REQUIRES(mu_);

  void CountDropped() { dropped_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  // Node side: hellos accepted and rejected (a wrong proof or a stale
  // ticket) so far; of the rejected, those whose ticket was not outstanding
  // (a replay, an expired or a never issued challenge).
  uint64_t accepted() const { return accepted_.load(std::memory_order_relaxed); }
  uint64_t rejected() const { return rejected_.load(std::memory_order_relaxed); }
  uint64_t stale_hellos() const { return stale_hellos_.load(std::memory_order_relaxed); }
  // This worker's address as UCX packs it (what the address server serves).
  const std::string& worker_address() const { return worker_address_; }
  // Node side: offers [base, base + size) of `memfd` to clients on this host
  // (local_share.h) and announces it with the worker address.
  // INVALID_PARAMS without an address server (not a node).
  Result<bool> ShareLocally(int memfd, uint64_t base, uint64_t size);
  // Client side: connections that mapped their node's segment, and tries
  // that failed (the node refused, another network namespace, ...).
  uint64_t local_maps() const { return local_maps_.load(std::memory_order_relaxed); }
  uint64_t local_map_failures() const {
    return local_map_failures_.load(std::memory_order_relaxed);
  }

  // Fault hooks for tests (ucx_engine_test); never set otherwise.
  struct Testing {
    // Node: accepts every hello, proving with its own token (an impostor).
    bool accept_any_hello = false;
    // Client: the last hello sent, as encoded (what a recorder on the path sees).
    std::string sent_hello;
    // Client: sent instead of its own hello when not empty (a replay).
    std::string replay_hello;
  };
  Testing& testing() REQUIRES(mu_) { return testing_; }

 private:
  struct NodeConn {
    ucp_ep_h ep = nullptr;
    std::unique_ptr<UcxEpArg> arg;
    uint64_t secret = 0;
    UUID client_id;
  };

  explicit UcxContext(const TransportOptions& options);
  Result<bool> Init();
  Result<bool> StartAddressServer();
  // Creates an endpoint to a packed worker address with `on_error`
  // (argument `arg`); nullptr when UCX refuses the address.
  ucp_ep_h CreateEpLocked(ucp_worker_h worker, std::string_view address,
                          ucp_err_handler_cb_t on_error, UcxEpArg* arg, ucs_status_t* status)
      REQUIRES(mu_);
  // Progresses the worker (and the reply worker) until idle; events seen.
  unsigned ProgressWorkersLocked() REQUIRES(mu_);
  // Arms both workers' event fds; false when one has events pending.
  bool ArmWorkersLocked() REQUIRES(mu_);
  // Finishes a connection whose node address was fetched (or not: empty
  // `address`, `fetch_error` says why): endpoint, then hello.
  void StartHelloLocked(ClientConn& conn, const std::optional<ucx_wire::NodeAddress>& address,
                        const std::string& fetch_error) REQUIRES(mu_);
  // The node's segment when `address` says it is shared on this host;
  // nullptr otherwise (counted when a try failed). Blocking: no lock held.
  std::shared_ptr<LocalMapping> MapIfLocal(const std::optional<ucx_wire::NodeAddress>& address,
                                           int timeout_ms);
  // Node side: answers `hello` (under mu_, after the progress call).
  void AnswerHelloLocked(const ucx_wire::Hello& hello) REQUIRES(mu_);
  void ProgressThread();
  unsigned ProgressLocked() REQUIRES(mu_);
  // Closes `ep`; `arg` (its error callback's argument) lives until the close
  // completes.
  void CloseEpLocked(ucp_ep_h ep, std::unique_ptr<UcxEpArg> arg, bool flush = false)
      REQUIRES(mu_);
  void ReapClosedLocked() REQUIRES(mu_);
  void CloseNodeConnLocked(uint64_t conn_id, bool flush) REQUIRES(mu_);

  // UCX callbacks: they run inside ucp_worker_progress(), always under mu_
  // (which the analysis cannot see through UCX).
  static void OnClientEpError(void* arg, ucp_ep_h ep, ucs_status_t status)
      NO_THREAD_SAFETY_ANALYSIS;
  static void OnNodeEpError(void* arg, ucp_ep_h ep, ucs_status_t status)
      NO_THREAD_SAFETY_ANALYSIS;
  static ucs_status_t OnHello(void* arg, const void* header, size_t header_length, void* data,
                              size_t length, const ucp_am_recv_param_t* param)
      NO_THREAD_SAFETY_ANALYSIS;
  static ucs_status_t OnHelloReply(void* arg, const void* header, size_t header_length,
                                   void* data, size_t length, const ucp_am_recv_param_t* param)
      NO_THREAD_SAFETY_ANALYSIS;

  const TransportOptions options_;
  std::string endpoint_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  // Node side: the worker of the endpoints back to clients (never published).
  ucp_worker_h reply_worker_ = nullptr;
  int reply_efd_ = -1;
  std::string worker_address_;
  std::string boot_id_;  // this host's (local_share.h: HostBootId)
  // Node side: issued by the address server, taken by hellos (outlives both).
  ChallengeBook challenges_;
  std::unique_ptr<UcxAddressServer> address_server_;
  std::unique_ptr<LocalShareServer> share_;
  int efd_ = -1;
  size_t max_am_header_ = 0;

  Mutex mu_;
  std::condition_variable_any progressed_;
  bool stop_ GUARDED_BY(mu_) = false;
  std::vector<std::function<void()>> after_progress_ GUARDED_BY(mu_);
  std::vector<std::function<void()>> on_thread_ GUARDED_BY(mu_);
  struct Closing {
    void* request = nullptr;
    std::unique_ptr<UcxEpArg> arg;
  };
  std::vector<Closing> closing_ GUARDED_BY(mu_);  // ep closes in flight
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
  std::map<std::string, std::shared_ptr<ClientConn>, std::less<>> clients_ GUARDED_BY(mu_);
  std::unordered_map<uint64_t, std::shared_ptr<ClientConn>> clients_by_id_ GUARDED_BY(mu_);
  std::unordered_map<uint64_t, NodeConn> nodes_ GUARDED_BY(mu_);
  Testing testing_ GUARDED_BY(mu_);
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> local_maps_{0};
  std::atomic<uint64_t> local_map_failures_{0};
  std::atomic<uint64_t> rejected_{0};
  std::atomic<uint64_t> stale_hellos_{0};
  std::thread thread_;
};

}  // namespace shelfmark
