#include "replication/frame_io.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <optional>

#include "common/clock.h"
#include "common/reply_poll.h"
#include "common/socket_io.h"
#include "replication/replication_wire.h"

namespace shelfmark {
namespace {

// How far the body's buffer runs ahead of the bytes that arrived: a peer
// that announces a large frame and sends little costs little.
constexpr size_t kReadChunk = 1 << 20;

// The waits of one frame: `wait_ms` until its first byte, then what is left
// of its `frame_ms` deadline. With spin_us, a ReplyWait (common/reply_poll.h)
// spans the frame's whole wait and polls once, before the first byte.
class FrameDeadline {
 public:
  FrameDeadline(const FrameLimits& limits, bool begun) : limits_(limits) {
    if (begun) {
      Begin();
    } else if (limits_.spin_us > 0) {
      wait_.emplace();
    }
  }
  // Polls `fd` for the frame's first byte for spin_us (once, before the
  // first byte); true when something is there to read.
  bool Poll(int fd) {
    if (begun_ || polled_ || !wait_) return false;
    polled_ = true;
    return wait_->PollReadable(fd, std::chrono::microseconds(limits_.spin_us)) ==
           PollOutcome::kReady;
  }
  // The frame's first byte is here: its deadline starts (once).
  void Begin() {
    if (begun_) return;
    begun_ = true;
    if (limits_.frame_ms >= 0) deadline_ms_ = SteadyClock().NowMs() + limits_.frame_ms;
  }
  // How long the next wait for bytes may take (0: the deadline passed).
  int NextWaitMs() const {
    if (!begun_ || limits_.frame_ms < 0) return limits_.wait_ms;
    return static_cast<int>(std::max<int64_t>(0, deadline_ms_ - SteadyClock().NowMs()));
  }

 private:
  const FrameLimits& limits_;
  bool begun_ = false;
  bool polled_ = false;
  int64_t deadline_ms_ = 0;
  std::optional<ReplyWait> wait_;
};

// Appends exactly `n` bytes read from `fd` to *out. On failure *out holds
// what did arrive and *eof whether the peer closed in order.
bool ReadExactly(int fd, size_t n, FrameDeadline& deadline, std::string* out, bool* eof) {
  const size_t start = out->size();
  size_t have = 0;
  while (have < n) {
    const size_t room = std::min(n - have, kReadChunk);
    out->resize(start + have + room);
    const ssize_t got = ::recv(fd, out->data() + start + have, room, MSG_DONTWAIT);
    if (got > 0) {
      have += static_cast<size_t>(got);
      deadline.Begin();
      continue;
    }
    out->resize(start + have);
    if (got == 0) {
      *eof = true;
      return false;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
    if (deadline.Poll(fd)) continue;
    const int wait_ms = deadline.NextWaitMs();
    if (wait_ms == 0 || !WaitFd(fd, POLLIN, wait_ms)) return false;
  }
  out->resize(start + n);
  return true;
}

}  // namespace

ErrorCode ReadFrame(int fd, const FrameLimits& limits, std::string* pending, std::string* body,
                    bool* peer_closed) {
  std::string header = std::move(*pending);
  pending->clear();
  if (peer_closed != nullptr) *peer_closed = false;
  if (header.size() > kReplicationHeaderBytes) return ErrorCode::RPC_FAIL;
  FrameDeadline deadline(limits, !header.empty());
  bool eof = false;
  if (!ReadExactly(fd, kReplicationHeaderBytes - header.size(), deadline, &header, &eof)) {
    if (peer_closed != nullptr) *peer_closed = eof && header.empty();
    return ErrorCode::RPC_FAIL;
  }
  uint32_t size = 0;
  if (!ParseReplicationHeader(header, &size) ||
      size > std::min(limits.max_body_bytes, kMaxReplicationFrameBytes)) {
    return ErrorCode::RPC_FAIL;
  }
  body->clear();
  return ReadExactly(fd, size, deadline, body, &eof) ? ErrorCode::OK : ErrorCode::RPC_FAIL;
}

ErrorCode WriteFrames(int fd, int timeout_ms, std::string_view frames) {
  return SendAll(fd, frames, timeout_ms) ? ErrorCode::OK : ErrorCode::RPC_FAIL;
}

}  // namespace shelfmark
