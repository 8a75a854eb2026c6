#include "master/guarded_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include <kj/debug.h>

#include "common/clock.h"

namespace shelfmark {

bool RequestBudget::TryTake(uint64_t bytes) {
  uint64_t used = used_.load(std::memory_order_relaxed);
  do {
    if (bytes > limit_ || used > limit_ - bytes) return false;
  } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  return true;
}

int64_t GuardedStream::NowMs() { return SteadyClock().NowMs(); }

GuardedStream::GuardedStream(kj::Own<kj::AsyncIoStream> inner, RequestLimits* limits)
    : inner_(kj::mv(inner)), limits_(limits), last_active_ms_(NowMs()) {
  meter_.on_start = [this](uint64_t bytes) { return StartRequest(bytes); };
  meter_.on_end = [this] { return EndRequest(); };
}

GuardedStream::~GuardedStream() noexcept(false) { limits_->budget.Give(held_); }

bool GuardedStream::StartRequest(uint64_t bytes) {
  if (bytes > limits_->max_request_bytes) {
    limits_->too_large.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  if (!limits_->budget.TryTake(bytes)) {
    limits_->over_budget.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  held_ = bytes;
  return true;
}

bool GuardedStream::EndRequest() {
  limits_->budget.Give(held_);
  held_ = 0;
  request_ended_ = true;
  return true;
}

void GuardedStream::Abort() {
  aborted_ = true;
  KJ_IF_MAYBE(fd, inner_->getFd()) { ::shutdown(*fd, SHUT_RDWR); }
}

kj::Promise<size_t> GuardedStream::tryRead(void* buffer, size_t min_bytes, size_t max_bytes) {
  if (!unread_.empty()) {
    // Bytes given back are served first, and not metered again.
    const size_t n = std::min(unread_.size(), max_bytes);
    std::memcpy(buffer, unread_.data(), n);
    unread_.erase(0, n);
    if (n >= min_bytes) return n;
    return Read(static_cast<char*>(buffer) + n, min_bytes - n, max_bytes - n)
        .then([n](size_t more) { return n + more; });
  }
  return Read(buffer, min_bytes, max_bytes);
}

kj::Promise<size_t> GuardedStream::Read(void* buffer, size_t min_bytes, size_t max_bytes) {
  return inner_->tryRead(buffer, min_bytes, max_bytes).then([this, buffer](size_t n) -> size_t {
    if (n == 0) return 0;
    last_active_ms_ = NowMs();
    request_ended_ = false;
    if (!meter_.Feed(static_cast<const uint8_t*>(buffer), n)) {
      kj::throwFatalException(
          KJ_EXCEPTION(DISCONNECTED, "request refused by the server's request limits"));
    }
    // A request that began in this read (after any that ended in it) is
    // timed from now; one still arriving keeps its start.
    if (!meter_.in_frame()) {
      request_started_ms_ = -1;
    } else if (request_started_ms_ < 0 || request_ended_) {
      request_started_ms_ = last_active_ms_;
    }
    return n;
  });
}

// The flag is read as the write starts, so a write already under way when
// AbortAfterNextWrite() is called does not end the connection before the
// reply that follows it.
kj::Promise<void> GuardedStream::write(const void* buffer, size_t size) {
  return inner_->write(buffer, size).then([this, last = abort_after_write_] { Wrote(last); });
}

kj::Promise<void> GuardedStream::write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) {
  return inner_->write(pieces).then([this, last = abort_after_write_] { Wrote(last); });
}

void GuardedStream::Wrote(bool last) {
  last_active_ms_ = NowMs();
  if (last) Abort();
}

std::string GuardedStream::PeerAddress() {
  sockaddr_storage addr{};
  kj::uint length = sizeof(addr);
  char text[INET6_ADDRSTRLEN] = {};
  try {
    inner_->getpeername(reinterpret_cast<sockaddr*>(&addr), &length);
  } catch (const kj::Exception&) {
    return "";
  }
  const void* ip = nullptr;
  if (addr.ss_family == AF_INET) ip = &reinterpret_cast<sockaddr_in*>(&addr)->sin_addr;
  if (addr.ss_family == AF_INET6) ip = &reinterpret_cast<sockaddr_in6*>(&addr)->sin6_addr;
  if (ip == nullptr || ::inet_ntop(addr.ss_family, ip, text, sizeof(text)) == nullptr) return "";
  return text;
}

kj::Promise<void> GuardedStream::whenWriteDisconnected() { return inner_->whenWriteDisconnected(); }
void GuardedStream::shutdownWrite() { inner_->shutdownWrite(); }
void GuardedStream::abortRead() { inner_->abortRead(); }
void GuardedStream::getsockopt(int level, int option, void* value, kj::uint* length) {
  inner_->getsockopt(level, option, value, length);
}
void GuardedStream::setsockopt(int level, int option, const void* value, kj::uint length) {
  inner_->setsockopt(level, option, value, length);
}
void GuardedStream::getsockname(struct sockaddr* addr, kj::uint* length) {
  inner_->getsockname(addr, length);
}
void GuardedStream::getpeername(struct sockaddr* addr, kj::uint* length) {
  inner_->getpeername(addr, length);
}
kj::Maybe<int> GuardedStream::getFd() const { return inner_->getFd(); }

}  // namespace shelfmark
