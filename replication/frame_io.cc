#include "replication/frame_io.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "common/socket_io.h"
#include "replication/replication_wire.h"

namespace shelfmark {
namespace {

// Appends exactly `n` bytes read from `fd` to *out. On failure *out holds
// what did arrive and *eof whether the peer closed in order.
bool ReadExactly(int fd, size_t n, int timeout_ms, std::string* out, bool* eof) {
  const size_t start = out->size();
  out->resize(start + n);
  size_t have = 0;
  auto fail = [&] {
    out->resize(start + have);
    return false;
  };
  while (have < n) {
    const ssize_t got = ::recv(fd, out->data() + start + have, n - have, MSG_DONTWAIT);
    if (got > 0) {
      have += static_cast<size_t>(got);
      continue;
    }
    if (got == 0) {
      *eof = true;
      return fail();
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return fail();
    if (!WaitFd(fd, POLLIN, timeout_ms)) return fail();
  }
  return true;
}

}  // namespace

ErrorCode ReadFrame(int fd, int timeout_ms, std::string* pending, std::string* body,
                    bool* peer_closed) {
  std::string header = std::move(*pending);
  pending->clear();
  if (peer_closed != nullptr) *peer_closed = false;
  if (header.size() > kReplicationHeaderBytes) return ErrorCode::RPC_FAIL;
  bool eof = false;
  if (!ReadExactly(fd, kReplicationHeaderBytes - header.size(), timeout_ms, &header, &eof)) {
    if (peer_closed != nullptr) *peer_closed = eof && header.empty();
    return ErrorCode::RPC_FAIL;
  }
  uint32_t size = 0;
  if (!ParseReplicationHeader(header, &size) || size > kMaxReplicationFrameBytes) {
    return ErrorCode::RPC_FAIL;
  }
  body->clear();
  return ReadExactly(fd, size, timeout_ms, body, &eof) ? ErrorCode::OK : ErrorCode::RPC_FAIL;
}

ErrorCode WriteFrames(int fd, int timeout_ms, const std::string& frames) {
  return SendAll(fd, frames, timeout_ms) ? ErrorCode::OK : ErrorCode::RPC_FAIL;
}

}  // namespace shelfmark
