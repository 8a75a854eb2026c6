#include "replication/frame_io.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "common/socket_io.h"
#include "replication/replication_wire.h"

namespace shelfmark {
namespace {

// Appends exactly `n` bytes read from `fd` to *out.
bool ReadExactly(int fd, size_t n, int timeout_ms, std::string* out) {
  const size_t start = out->size();
  out->resize(start + n);
  size_t have = 0;
  while (have < n) {
    const ssize_t got = ::recv(fd, out->data() + start + have, n - have, MSG_DONTWAIT);
    if (got > 0) {
      have += static_cast<size_t>(got);
      continue;
    }
    if (got == 0) return false;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
    if (!WaitFd(fd, POLLIN, timeout_ms)) return false;
  }
  return true;
}

}  // namespace

ErrorCode ReadFrame(int fd, int timeout_ms, std::string* pending, std::string* body) {
  std::string header = std::move(*pending);
  pending->clear();
  if (header.size() > kReplicationHeaderBytes) return ErrorCode::RPC_FAIL;
  if (!ReadExactly(fd, kReplicationHeaderBytes - header.size(), timeout_ms, &header)) {
    return ErrorCode::RPC_FAIL;
  }
  uint32_t size = 0;
  if (!ParseReplicationHeader(header, &size) || size > kMaxReplicationFrameBytes) {
    return ErrorCode::RPC_FAIL;
  }
  body->clear();
  return ReadExactly(fd, size, timeout_ms, body) ? ErrorCode::OK : ErrorCode::RPC_FAIL;
}

ErrorCode WriteFrames(int fd, int timeout_ms, const std::string& frames) {
  return SendAll(fd, frames, timeout_ms) ? ErrorCode::OK : ErrorCode::RPC_FAIL;
}

}  // namespace shelfmark
