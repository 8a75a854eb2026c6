// UcxAddressServer: how clients learn a node's UCX worker address (and its
// local share, local_share.h). The node listens on its endpoint's TCP port
// ("ip:port", the endpoint the master publishes); every connection is sent
// the encoded address (ucx_wire::EncodeNodeAddress) with a challenge issued
// for it alone (ChallengeBook: the hello must answer it) and closed at
// once. Nothing is ever read
// from a connection, so whatever bytes a peer sends cannot reach a parser
// (this replaced UCX's sockaddr listener, which aborted the node on 4 KiB of
// zeros). Accept errors (out of descriptors) back off and go on; the loop
// never ends before Stop.
//
// FetchUcxNodeAddress: the client half: connects to "host:port", reads
// until the node closes (at most ucx_wire::kMaxWorkerAddress bytes), decodes.
//
// Thread safety: Start and the destructor from one thread; Update() and
// served() from any.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/mutex.h"
#include "common/poll_thread.h"
#include "common/result.h"
#include "transport/challenge_book.h"
#include "transport/ucx_wire.h"

namespace shelfmark {

class UcxAddressServer {
 public:
  // Listens on numeric `ip` and `port` (0: any free port) and serves
  // `address` with a challenge from `challenges` (which outlives the
  // server; address.ticket and nonce are ignored). INVALID_PARAMS when the
  // address cannot be bound.
  static Result<std::unique_ptr<UcxAddressServer>> Start(const std::string& ip, uint16_t port,
                                                          const ucx_wire::NodeAddress& address,
                                                          ChallengeBook* challenges);
  ~UcxAddressServer();
  UcxAddressServer(const UcxAddressServer&) = delete;
  UcxAddressServer& operator=(const UcxAddressServer&) = delete;

  uint16_t port() const { return port_; }
  // Serves `address` from now on.
  void Update(const ucx_wire::NodeAddress& address);
  uint64_t served() const { return served_.load(std::memory_order_relaxed); }

 private:
  UcxAddressServer() = default;
  void Serve();
  void AcceptAll();

  Mutex mu_;
  ucx_wire::NodeAddress address_ GUARDED_BY(mu_);
  ChallengeBook* challenges_ = nullptr;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  int64_t backoff_until_ms_ = 0;  // serve thread only
  std::atomic<uint64_t> served_{0};
  PollThread loop_;  // last: stopped first
};

// The node address served at `endpoint` ("host:port"), or nullopt with
// *error saying why (unreachable, no answer within `timeout_ms` per wait,
// not an address message).
std::optional<ucx_wire::NodeAddress> FetchUcxNodeAddress(std::string_view endpoint,
                                                         int timeout_ms, std::string* error);

}  // namespace shelfmark
