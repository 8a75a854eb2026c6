#include "common/reply_poll.h"

#include <sched.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <thread>

namespace shelfmark {

std::atomic<int> ReplyWait::waits_{0};

int ReplyWait::MaxPollers() {
  static const int max = [] {
    const unsigned cpus = std::thread::hardware_concurrency();
    return cpus >= 4 ? static_cast<int>(cpus / 2) : 1;
  }();
  return max;
}

void ReplyWait::Pause() { sched_yield(); }

PollOutcome ReplyWait::PollReadable(int fd, std::chrono::microseconds budget) {
  return Poll(budget, [fd] {
    char byte;
    const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  });
}

bool ReplyPoller::Await(ReplyWait& wait, int fd) {
  if (budget_.count() <= 0) return false;
  if (misses_ >= kMaxMisses && ++skipped_ % kProbeEvery != 0) return false;
  ++polls_;
  switch (wait.PollReadable(fd, budget_)) {
    case PollOutcome::kReady:
      misses_ = 0;
      skipped_ = 0;
      return true;
    case PollOutcome::kTimedOut:
      ++misses_;
      return false;
    case PollOutcome::kCrowded:
    case PollOutcome::kOff:
      return false;
  }
  return false;
}

int64_t DefaultReplyPollMicros() {
  static const int64_t micros = [] {
    constexpr int64_t kDefault = 200;
    const char* env = std::getenv("SHELFMARK_REPLY_POLL_US");
    if (env == nullptr || *env == '\0') return kDefault;
    char* end = nullptr;
    const long long v = std::strtoll(env, &end, 10);
    if (*end != '\0' || v < 0 || v > 10'000) return kDefault;
    return static_cast<int64_t>(v);
  }();
  return micros;
}

}  // namespace shelfmark
