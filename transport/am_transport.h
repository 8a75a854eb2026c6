// AmTransport: two-sided request/response messages ("active messages")
// between a client and a node, beside TransportEngine's one-sided reads. A
// node answers requests it can serve only with its own CPU (a LOCAL_DISK
// read: the bytes are on its SSD); a client sends a request to the node's
// endpoint and waits for the reply.
//
// Implementations: UcxAm (ucx_am.h: on a UcxEngine's worker and
// connections) and LoopbackAm (loopback_am.h: in-process, for tests of the
// layers above; it really moves the bytes). An engine that carries messages
// hands its AmTransport out with TransportEngine::messages().
//
// Node side: SetHandler(id, handler). The handler runs on the transport's
// progress thread and must not block there; it may keep the AmResponder and
// reply later from any other thread. Every request is answered exactly once:
// a responder destroyed without a reply answers INTERNAL_ERROR; a request for
// an id without a handler is answered INVALID_PARAMS. Requests arrive only
// from clients that presented the node's cluster token.
//
// Client side: CallInto(endpoint, id, header, payload, into, timeout_ms)
// sends the request and waits for the reply matched to it. The reply is a
// header (bytes) and data (bytes). With `into` set, the data lands straight
// in the caller's [into.data, into.data + into.capacity) and the reply's
// `data` stays empty (data_size says how many bytes were written); a reply
// larger than the capacity writes nothing and answers BUFFER_OVERFLOW. The
// caller's buffer is never touched after CallInto returns. Call() is
// CallInto without a target: the data is returned in `data`.
// Errors: a wrong cluster token -> ILLEGAL_CLIENT; a header longer than
// max_header_size() -> INVALID_PARAMS; no reply by the deadline, a broken
// connection or an unreachable node -> TRANSFER_FAIL; the handler's own
// error code when it called Fail().
//
// Thread safety: every method may be called from any thread; AmResponder may
// be moved to and used from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/uuid.h"

namespace shelfmark {

struct AmRequest {
  UUID client_id;  // from the connection's hello
  uint16_t id = 0;
  std::string header;
  std::string payload;
};

struct AmReply {
  std::string header;
  std::string data;        // empty when the data went to the caller's buffer
  uint64_t data_size = 0;  // bytes of data received, wherever they went
};

// Where a reply's data should land; data == nullptr: in AmReply::data.
struct AmReplyTarget {
  void* data = nullptr;
  uint64_t capacity = 0;
};

// What an implementation does with one reply (the node side of a request).
// Send() is called at most once, from any thread; false when the reply could
// not be sent (the connection or the transport is gone).
class AmReplySink {
 public:
  virtual ~AmReplySink() = default;
  virtual bool Send(ErrorCode status, std::string header, std::string data) = 0;
};

// One-shot reply channel for one request. Movable, not copyable.
class AmResponder {
 public:
  AmResponder() = default;
  explicit AmResponder(std::unique_ptr<AmReplySink> sink) : sink_(std::move(sink)) {}
  ~AmResponder();  // answers INTERNAL_ERROR when no reply was sent
  AmResponder(AmResponder&& other) noexcept = default;
  AmResponder& operator=(AmResponder&& other) noexcept;
  AmResponder(const AmResponder&) = delete;
  AmResponder& operator=(const AmResponder&) = delete;

  // Sends the reply; later calls do nothing and return false. Returns false
  // when the connection is gone (the reply is dropped).
  bool Reply(std::string header, std::string data);
  // Sends `code` (OK becomes INTERNAL_ERROR: a failure must say one).
  bool Fail(ErrorCode code);

 private:
  bool Send(ErrorCode status, std::string header, std::string data);

  std::unique_ptr<AmReplySink> sink_;  // null once sent
};

using AmHandler = std::function<void(AmRequest, AmResponder)>;

class AmTransport {
 public:
  virtual ~AmTransport() = default;

  // Replaces the handler for `id` (an empty handler removes it).
  virtual void SetHandler(uint16_t id, AmHandler handler) = 0;

  virtual Result<AmReply> CallInto(std::string_view endpoint, uint16_t id,
                                   std::string_view header, std::string_view payload,
                                   AmReplyTarget into, int64_t timeout_ms) = 0;

  // The largest user header CallInto() and AmResponder::Reply() accept.
  virtual size_t max_header_size() const = 0;
  // Messages dropped as malformed, unauthenticated or unmatched.
  virtual uint64_t dropped_messages() const = 0;

  Result<AmReply> Call(std::string_view endpoint, uint16_t id, std::string_view header,
                       std::string_view payload, int64_t timeout_ms) {
    return CallInto(endpoint, id, header, payload, AmReplyTarget{}, timeout_ms);
  }
};

}  // namespace shelfmark
