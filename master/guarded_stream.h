// GuardedStream: an accepted RPC connection's stream, as the RPC server's
// Cap'n Proto network reads and writes it, with the server's limits on
// hostile or broken clients applied on the way (docs/limits.md):
//  - each request's size is known from its frame table (FrameMeter) before
//    Cap'n Proto allocates for it: one larger than max_request_bytes, or one
//    that would take the bytes of requests being received by the whole
//    server past the shared RequestBudget, fails the read (DISCONNECTED),
//    which ends only this connection;
//  - the time of the last byte in or out, and when the request being
//    received began, are kept for the server's sweep (idle connections,
//    requests that arrive too slowly), which calls Abort().
//
// Thread safety: a stream belongs to its event-loop thread; RequestBudget is
// shared by all loops (atomic).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include <kj/async-io.h>

#include "master/frame_meter.h"

namespace shelfmark {

// The bytes of requests being received, server-wide, against a limit.
class RequestBudget {
 public:
  explicit RequestBudget(uint64_t limit) : limit_(limit) {}
  // False (and nothing taken) when `bytes` would pass the limit.
  bool TryTake(uint64_t bytes);
  void Give(uint64_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }
  uint64_t used() const { return used_.load(std::memory_order_relaxed); }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> used_{0};
};

// What every GuardedStream of a server checks requests against, and counts.
struct RequestLimits {
  RequestLimits(uint64_t max_request, uint64_t max_buffered)
      : max_request_bytes(max_request), budget(max_buffered) {}
  const uint64_t max_request_bytes;
  RequestBudget budget;
  std::atomic<uint64_t> too_large{0};    // requests over max_request_bytes
  std::atomic<uint64_t> over_budget{0};  // requests the budget had no room for
};

class GuardedStream final : public kj::AsyncIoStream {
 public:
  // `limits` must outlive the stream.
  GuardedStream(kj::Own<kj::AsyncIoStream> inner, RequestLimits* limits);
  ~GuardedStream() noexcept(false);  // gives back what the current request holds

  // Ends the connection: both directions of the socket are shut down, so
  // the pending read sees end of stream and Cap'n Proto disconnects.
  void Abort();
  bool aborted() const { return aborted_; }
  // Abort()s once the next write that starts from now on has completed:
  // the reply being prepared reaches the peer, then the connection ends.
  void AbortAfterNextWrite() { abort_after_write_ = true; }
  // Hands `bytes` (already received, and already seen by the limits) to the
  // next reads before anything more from the socket: the RPC server reads a
  // connection's first bytes to tell its protocol, then gives them back.
  void Unread(std::string_view bytes) { unread_.assign(bytes); }
  // The peer's IP address as text ("" when unknown).
  std::string PeerAddress();

  int64_t last_active_ms() const { return last_active_ms_; }
  // When the request being received began; -1 between requests.
  int64_t request_started_ms() const { return request_started_ms_; }
  // The steady clock the times above are read from, in ms.
  static int64_t NowMs();

  kj::Promise<size_t> tryRead(void* buffer, size_t min_bytes, size_t max_bytes) override;
  kj::Promise<void> write(const void* buffer, size_t size) override;
  kj::Promise<void> write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) override;
  kj::Promise<void> whenWriteDisconnected() override;
  void shutdownWrite() override;
  void abortRead() override;
  void getsockopt(int level, int option, void* value, kj::uint* length) override;
  void setsockopt(int level, int option, const void* value, kj::uint length) override;
  void getsockname(struct sockaddr* addr, kj::uint* length) override;
  void getpeername(struct sockaddr* addr, kj::uint* length) override;
  kj::Maybe<int> getFd() const override;

 private:
  // Reads from the socket, through the limits.
  kj::Promise<size_t> Read(void* buffer, size_t min_bytes, size_t max_bytes);
  bool StartRequest(uint64_t bytes);
  void Wrote(bool abort_after);
  bool EndRequest();

  kj::Own<kj::AsyncIoStream> inner_;
  RequestLimits* limits_;
  FrameMeter meter_;
  uint64_t held_ = 0;  // budget taken for the request being received
  int64_t last_active_ms_;
  int64_t request_started_ms_ = -1;
  bool request_ended_ = false;  // during a Feed: a request ended
  bool aborted_ = false;
  bool abort_after_write_ = false;
  std::string unread_;  // given back by Unread, not read again yet
};

}  // namespace shelfmark
