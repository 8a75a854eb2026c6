// UcxAm: the AmTransport (am_transport.h) of a UcxEngine: requests and
// replies are UCX active messages on the engine's worker and connections (the
// LOCAL_DISK read path: the client asks the owner node, the node's handler
// reads its SSD store and replies with the bytes).
//
// Node side: handlers run on the engine's progress thread. Requests arrive
// only from connections whose hello carried the node's cluster token; others
// are dropped and counted. A reply whose header does not fit UCX's AM header
// limit is answered INVALID_PARAMS instead (the caller is told at once).
//
// Client side: CallInto connects on first use (the same cached connection as
// RMA), sends the request and waits for the reply matched by request id.
// Reply data comes eager (copied from UCX's buffer into the target) or by
// rendezvous (UCX receives it straight into the target); both are handled.
// When the deadline passes while a rendezvous receive into the caller's
// buffer is in flight, the connection is closed and CallInto waits for UCX to
// complete or cancel that receive before it returns, so the buffer is never
// written after the call.
//
// Wire format (little-endian, UCX AM header part): magic "SMAM" (u32),
// version (u8), user id (u16) on requests or status (i32) on replies,
// request id (u64), user header (u32 length + bytes). The UCX data part is
// the payload (requests) or the reply data. Malformed messages (bad magic,
// version, lengths, unknown request ids) are dropped and counted in
// dropped_messages(), never a crash.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "transport/am_transport.h"
#include "transport/ucx_context.h"

namespace shelfmark {

struct UcxAmState;

// One request of a batch (UcxAm::CallAllLocked) on a READY connection.
struct UcxAmOut {
  std::shared_ptr<ClientConn> conn;
  uint16_t id = 0;
  std::string header;
  std::string_view payload;  // copied when sent
  AmReplyTarget into;
};

class UcxAm final : public AmTransport {
 public:
  explicit UcxAm(UcxContext* context);
  ~UcxAm() override;
  UcxAm(const UcxAm&) = delete;
  UcxAm& operator=(const UcxAm&) = delete;

  void SetHandler(uint16_t id, AmHandler handler) override;
  Result<AmReply> CallInto(std::string_view endpoint, uint16_t id, std::string_view header,
                           std::string_view payload, AmReplyTarget into,
                           int64_t timeout_ms) override;
  size_t max_header_size() const override;
  uint64_t dropped_messages() const override;

  // Client side, for batches (UcxEngine::Transfer): sends every call on its
  // connection, then waits until each is answered, its connection is lost
  // or deadline_ms passes; one result per call, with CallInto's codes. No
  // call's target is written after it returns (a connection with a reply
  // still landing is closed and the landing waited for).
  std::vector<Result<AmReply>> CallAllLocked(MutexLock& lock, std::span<UcxAmOut> calls,
                                             int64_t deadline_ms) REQUIRES(context_->mu());

 private:
  UcxContext* const context_;
  std::unique_ptr<UcxAmState> state_;
};

}  // namespace shelfmark
