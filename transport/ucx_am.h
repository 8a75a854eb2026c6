// UcxAm: request/response over UCX active messages, on a UcxEngine's worker
// and connections (the LOCAL_DISK read path: the client asks the owner node,
// the node's handler reads its SSD store and replies with the bytes).
//
// Node side: SetHandler(id, handler). The handler runs on the engine's
// progress thread and must not block there; it may keep the AmResponder and
// reply later from any other thread (reads run off the progress thread).
// Every request is answered exactly once: a responder destroyed without a
// reply answers INTERNAL_ERROR; a request for an id without a handler is
// answered INVALID_PARAMS. Requests arrive only from connections whose hello
// carried the node's cluster token; others are dropped and counted.
//
// Client side: Call(endpoint, id, header, payload, timeout_ms) connects on
// first use (the same cached connection as RMA), sends the request and waits
// for the reply matched by request id. Reply = header bytes + data bytes
// (UCX picks eager or rendezvous for the data; both are handled).
// Errors: a wrong cluster token -> ILLEGAL_CLIENT; a header longer than
// max_header_size() -> INVALID_PARAMS; no reply by the deadline, a broken
// connection or an unreachable node -> TRANSFER_FAIL; the handler's own
// error code when it called Fail().
//
// Wire format (little-endian, UCX AM header part): magic "SMAM" (u32),
// version (u8), kind (u8), user id (u16) or status (i32 on replies), request
// id (u64), user header length (u32), user header bytes. The UCX data part is
// the payload (requests) or the reply data. Malformed messages (bad magic,
// version, lengths, unknown request ids) are dropped and counted in
// dropped_messages(), never a crash.
//
// Thread safety: every method may be called from any thread; AmResponder
// may be moved to and used from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/uuid.h"

namespace shelfmark {

class UcxContext;
struct UcxAmState;

struct AmRequest {
  UUID client_id;  // from the connection's hello
  uint16_t id = 0;
  std::string header;
  std::string payload;
};

struct AmReply {
  std::string header;
  std::string data;
};

// One-shot reply channel for one request. Movable, not copyable.
class AmResponder {
 public:
  AmResponder() = default;
  ~AmResponder();  // answers INTERNAL_ERROR when no reply was sent
  AmResponder(AmResponder&& other) noexcept;
  AmResponder& operator=(AmResponder&& other) noexcept;
  AmResponder(const AmResponder&) = delete;
  AmResponder& operator=(const AmResponder&) = delete;

  // Sends the reply; later calls do nothing. Returns false when the
  // connection is gone (the reply is dropped).
  bool Reply(std::string header, std::string data);
  bool Fail(ErrorCode code);

 private:
  friend class UcxAm;
  friend class UcxAmAccess;
 public:
  struct State;

 private:
  explicit AmResponder(std::shared_ptr<State> state);
  bool Send(ErrorCode status, std::string header, std::string data);

  std::shared_ptr<State> state_;
};

using AmHandler = std::function<void(AmRequest, AmResponder)>;

class UcxAm {
 public:
  explicit UcxAm(UcxContext* context);
  ~UcxAm();
  UcxAm(const UcxAm&) = delete;
  UcxAm& operator=(const UcxAm&) = delete;

  // Replaces the handler for `id`.
  void SetHandler(uint16_t id, AmHandler handler);

  Result<AmReply> Call(std::string_view endpoint, uint16_t id, std::string_view header,
                       std::string_view payload, int64_t timeout_ms);

  // The largest user header Call() and Reply() accept.
  size_t max_header_size() const;
  // Messages dropped as malformed, unauthenticated or unmatched.
  uint64_t dropped_messages() const;

 private:
  std::unique_ptr<UcxAmState> state_;
};

}  // namespace shelfmark
