// rdma_cm connections of the "rdma" engine (setup side; the post/poll hot
// path is in verbs_engine.cc).
//
//  - The handshake: mutual challenge-response on the cluster token
//    (auth/proof.h), in the private data of two connect requests, since a
//    request carries at most 56 bytes and the node's nonce must come first:
//      1. client -> node  request {magic "SHMK", version, kind hello, client
//                         id, client nonce}
//         node -> client  reject {magic, reason "challenge", ticket, node
//                         nonce} (the ticket names the node's ChallengeBook
//                         entry, which remembers the client's id and nonce)
//      2. client -> node  request {magic, version, kind proof, ticket,
//                         Prove(token, "verbs/client", both nonces, ticket,
//                         client id)} on a new rdma_cm id (a rejected one is
//                         spent)
//         node -> client  accept {magic, version, Prove(token, "verbs/node",
//                         the same)}, or reject "wrong token" / "stale
//                         challenge" (a ticket named before, expired or never
//                         issued: a recorded request never verifies twice)
//    The token never travels. The client checks the node's proof when the
//    connection is established and drops it before posting anything when
//    it does not verify.
//  - VerbsListener (node side): an rdma_cm listener on ip:port and a thread
//    serving its events. It answers hellos with challenges; a request with
//    malformed private data, a wrong proof or a stale ticket is rejected
//    (the reject carries a reason the client turns into "cluster token
//    rejected" and so on; counted in rejected()); a right proof gets an RC
//    QP on the node's PD and is accepted with the device's read-responder
//    resources. Peers that disconnect are cleaned up; the destructor
//    disconnects every peer (they see DISCONNECTED, or their next op fails)
//    and frees everything.
//  - VerbsConnection (client side): one RC QP to a node, made with
//    rdma_resolve_addr (from the device's own IPv4 address, so the QP lives
//    on the configured device) / rdma_resolve_route / rdma_connect, twice
//    (the handshake above), each step bounded by the connect deadline. It owns its CQ, completion channel and
//    event channel. Healthy() reads pending rdma_cm events without blocking
//    and turns false once the peer disconnected.
//  - VerbsPeer / VerbsConnectionCache: one slot per peer endpoint; the
//    slot's mutex serialises the transfers to that peer; Acquire() connects
//    on first use and reconnects after Drop() or a disconnect.
//
// Thread safety: VerbsListener runs its own thread and its public methods may
// be called from any thread. A VerbsConnection belongs to the thread that
// holds its VerbsPeer's mutex. VerbsConnectionCache may be used from any
// thread.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <variant>

#include "auth/proof.h"
#include "common/mutex.h"
#include "common/result.h"
#include "common/thread_annotations.h"
#include "common/uuid.h"
#include "transport/challenge_book.h"
#include "transport/verbs_device.h"

namespace shelfmark {

// --- private data -----------------------------------------------------------
inline constexpr size_t kVerbsConnectDataSize = 56;  // RC connect limit (RDMA_PS_TCP)
inline constexpr size_t kVerbsChallengeSize = 48;
inline constexpr size_t kVerbsAcceptSize = 40;
using VerbsConnectData = std::array<uint8_t, kVerbsConnectDataSize>;

// First request: who asks, with a fresh nonce.
struct VerbsConnectHello {
  UUID client_id;
  auth::Nonce client_nonce{};
  bool operator==(const VerbsConnectHello&) const = default;
};
// Second request: the answer to the node's challenge (VerbsClientProof).
struct VerbsConnectProof {
  uint64_t ticket = 0;
  auth::Proof proof{};
  bool operator==(const VerbsConnectProof&) const = default;
};
using VerbsConnectRequest = std::variant<VerbsConnectHello, VerbsConnectProof>;
// The node's challenge, in the reject of the first request.
struct VerbsChallenge {
  uint64_t ticket = 0;
  auth::Nonce node_nonce{};
  bool operator==(const VerbsChallenge&) const = default;
};

VerbsConnectData EncodeConnectRequest(const VerbsConnectRequest& request);
// nullopt when `data` is not a request of this version (short, magic,
// version, kind). The CM may pad private data: longer is fine.
std::optional<VerbsConnectRequest> DecodeConnectRequest(const void* data, size_t size);
std::array<uint8_t, kVerbsChallengeSize> EncodeChallenge(const VerbsChallenge& challenge);
std::optional<VerbsChallenge> DecodeChallenge(const void* data, size_t size);
// The accept's private data: the node's proof (VerbsNodeProof).
std::array<uint8_t, kVerbsAcceptSize> EncodeAcceptProof(const auth::Proof& proof);
std::optional<auth::Proof> DecodeAcceptProof(const void* data, size_t size);

// The proofs ("verbs/client", "verbs/node"): both nonces, the ticket and
// the client id.
auth::Proof VerbsClientProof(std::string_view token, const VerbsChallenge& challenge,
                             const VerbsConnectHello& hello);
auth::Proof VerbsNodeProof(std::string_view token, const VerbsChallenge& challenge,
                           const VerbsConnectHello& hello);

// Why a node rejected a connect request (sent in the reject's private data).
// kChallenge is no failure: it carries the challenge of step 1.
enum class VerbsRejectReason : uint8_t {
  kBadRequest = 1,
  kWrongToken = 2,
  kChallenge = 3,
  kStaleChallenge = 4,
};

// --- node side ------------------------------------------------------------------
class VerbsListener {
 public:
  // Listens on ip:port (port 0: a free port) on `device`, which must outlive
  // the listener. Bad address or port in use -> INVALID_PARAMS; rdma_cm
  // failures -> TRANSFER_FAIL; the reason goes to *error.
  static Result<std::unique_ptr<VerbsListener>> Start(VerbsDevice* device, const std::string& ip,
                                                      uint16_t port, std::string_view cluster_token,
                                                      std::string* error);
  ~VerbsListener();
  VerbsListener(const VerbsListener&) = delete;
  VerbsListener& operator=(const VerbsListener&) = delete;

  uint16_t port() const { return port_; }
  uint64_t accepted() const { return accepted_.load(); }
  // Requests rejected (bad request, wrong proof, stale ticket; not the
  // challenges of step 1), and of them those naming a stale ticket.
  uint64_t rejected() const { return rejected_.load(); }
  uint64_t stale_challenges() const { return stale_.load(); }
  size_t live_peers() const;

  // Fault hook for tests: accept every proof, proving with this node's own
  // token (an impostor). Never set otherwise.
  void TestingAcceptAnyProof() { accept_any_proof_.store(true); }

 private:
  VerbsListener() = default;
  void Run();
  void OnEvent(rdma_cm_event* event);
  void OnConnectRequest(rdma_cm_id* id, const rdma_conn_param& param);
  void Accept(rdma_cm_id* id, const rdma_conn_param& param, const auth::Proof& proof);
  void Reject(rdma_cm_id* id, VerbsRejectReason reason);
  void Release(rdma_cm_id* id);

  VerbsDevice* device_ = nullptr;
  std::string token_;
  ChallengeBook challenges_;  // step 1's, remembering each hello
  rdma_event_channel* channel_ = nullptr;
  rdma_cm_id* listen_id_ = nullptr;
  ibv_cq* cq_ = nullptr;  // shared by the passive QPs (nothing is posted on them)
  int wake_fd_ = -1;      // eventfd: the destructor wakes the thread
  uint16_t port_ = 0;
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> rejected_{0};
  std::atomic<uint64_t> stale_{0};
  std::atomic<bool> accept_any_proof_{false};
  mutable Mutex mu_;
  std::map<rdma_cm_id*, bool> peers_ GUARDED_BY(mu_);  // id -> has a QP
  std::thread thread_;
};

// --- client side -------------------------------------------------------------------
struct VerbsCmEvent;  // an rdma_cm event, copied (verbs_connection.cc)

struct VerbsConnectParams {
  std::string endpoint;    // "ip:port" of the node's listener
  std::string source_ip;   // "" : let rdma_cm choose (may pick another device)
  UUID client_id;
  std::string cluster_token;
  int64_t timeout_ms = 2000;
  uint32_t send_depth = 128;  // max outstanding signalled work requests
  // Fault hooks for tests: the step-2 request sent, and one to send instead
  // (a replay). Never set otherwise.
  std::shared_ptr<VerbsConnectData> testing_sent_proof;
  std::optional<VerbsConnectData> testing_replay_proof;
};

class VerbsConnection {
 public:
  // Connects to params.endpoint within params.timeout_ms (both steps of the
  // handshake). A rejected proof -> TRANSFER_FAIL "cluster token rejected by
  // <endpoint>"; a node that does not prove the token -> UNAUTHENTICATED
  // "<endpoint> did not prove the cluster token" (the connection is closed
  // unused); unreachable peer, no listener, time-out -> TRANSFER_FAIL with
  // the rdma_cm event; a bad endpoint -> INVALID_PARAMS. The message goes to
  // *error.
  static Result<std::unique_ptr<VerbsConnection>> Connect(const VerbsDevice& device,
                                                          const VerbsConnectParams& params,
                                                          std::string* error);
  ~VerbsConnection();
  VerbsConnection(const VerbsConnection&) = delete;
  VerbsConnection& operator=(const VerbsConnection&) = delete;

  const std::string& endpoint() const { return endpoint_; }
  ibv_qp* qp() const { return id_->qp; }
  ibv_cq* cq() const { return cq_; }
  ibv_comp_channel* completion_channel() const { return comp_channel_; }
  uint32_t send_depth() const { return send_depth_; }
  // Readable when an rdma_cm event (e.g. the peer's disconnect) is pending.
  int event_fd() const { return channel_->fd; }

  // Reads pending rdma_cm events without blocking; false once the peer
  // disconnected or the connection failed (then the caller drops it).
  bool Healthy();

 private:
  VerbsConnection() = default;
  // One connect request carrying `data` on this (new) connection: resolves,
  // makes the QP, connects, and waits until `deadline` for the event that
  // answers it (*answer). Failures before that as Connect().
  Result<bool> Request(const VerbsDevice& device, const VerbsConnectParams& params,
                       std::span<const uint8_t> data,
                       std::chrono::steady_clock::time_point deadline, VerbsCmEvent* answer,
                       std::string* error);

  std::string endpoint_;
  rdma_event_channel* channel_ = nullptr;
  rdma_cm_id* id_ = nullptr;
  ibv_comp_channel* comp_channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  uint32_t send_depth_ = 0;
  bool established_ = false;
  bool broken_ = false;
};

// One peer endpoint's connection slot. Hold `mu` for the whole transfer.
class VerbsPeer {
 public:
  VerbsPeer(const VerbsDevice* device, VerbsConnectParams params)
      : device_(device), params_(std::move(params)) {}

  Mutex mu;

  // The live connection: connects first when there is none or the cached
  // one's peer disconnected. Failures as VerbsConnection::Connect.
  Result<VerbsConnection*> Acquire(std::string* error) REQUIRES(mu);
  // Closes the connection (after a failed transfer); the next Acquire()
  // reconnects. Destroying the QP guarantees the device no longer touches
  // the buffers of work requests still posted on it.
  void Drop() REQUIRES(mu);
  uint64_t connects() const { return connects_.load(); }

 private:
  const VerbsDevice* const device_;
  const VerbsConnectParams params_;
  std::unique_ptr<VerbsConnection> connection_ GUARDED_BY(mu);
  std::atomic<uint64_t> connects_{0};
};

class VerbsConnectionCache {
 public:
  // `base` supplies everything but the endpoint. `device` outlives the cache.
  VerbsConnectionCache(const VerbsDevice* device, VerbsConnectParams base)
      : device_(device), base_(std::move(base)) {}

  // The slot for `endpoint` (made on first use; never removed).
  std::shared_ptr<VerbsPeer> Peer(const std::string& endpoint);
  // Connections made so far, over all peers (first connects and reconnects).
  uint64_t connects() const;

 private:
  const VerbsDevice* const device_;
  const VerbsConnectParams base_;
  mutable Mutex mu_;
  std::map<std::string, std::shared_ptr<VerbsPeer>> peers_ GUARDED_BY(mu_);
};

}  // namespace shelfmark
