// LoopbackAm: the in-process AmTransport (am_transport.h) of a LoopbackEngine,
// for tests of the layers above (LOCAL_DISK service and client) without UCX.
// It keeps the contract of UcxAm and really moves the bytes: a reply's data
// is copied into the caller's target exactly as a UCX eager reply is.
//
// Model:
//  - a process-wide registry maps the engine's endpoint ("loopback:<n>") to
//    its LoopbackAm while the LoopbackAm lives;
//  - each LoopbackAm has one dispatcher thread, its "progress thread": a
//    request is queued there and its handler runs on it (so a handler that
//    blocks delays later requests, as on UCX);
//  - CallInto checks, in order: header size (INVALID_PARAMS), a live peer at
//    the endpoint (TRANSFER_FAIL), the peer's cluster token equal to ours
//    (ILLEGAL_CLIENT); then waits for the reply until the deadline
//    (TRANSFER_FAIL). A reply arriving after the deadline is dropped and
//    counted in dropped_messages(); it never touches the caller's buffer;
//  - a LoopbackAm destroyed with requests still queued answers them
//    TRANSFER_FAIL (the node went away).
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "transport/am_transport.h"
#include "transport/transport.h"

namespace shelfmark {

struct LoopbackAmCore;

class LoopbackAm final : public AmTransport {
 public:
  static constexpr size_t kMaxHeaderSize = 4096;

  // Reachable at `endpoint`; sends options.client_id and cluster_token with
  // every request and accepts only requests carrying the same token.
  LoopbackAm(std::string endpoint, const TransportOptions& options);
  ~LoopbackAm() override;
  LoopbackAm(const LoopbackAm&) = delete;
  LoopbackAm& operator=(const LoopbackAm&) = delete;

  void SetHandler(uint16_t id, AmHandler handler) override;
  Result<AmReply> CallInto(std::string_view endpoint, uint16_t id, std::string_view header,
                           std::string_view payload, AmReplyTarget into,
                           int64_t timeout_ms) override;
  size_t max_header_size() const override { return kMaxHeaderSize; }
  uint64_t dropped_messages() const override;

 private:
  const std::string endpoint_;
  const TransportOptions options_;
  std::shared_ptr<LoopbackAmCore> core_;
};

}  // namespace shelfmark
