#include "replication/doorbell.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace shelfmark {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "the futex waits on the atomic's own word");

void Doorbell::Ring() {
  // seq_cst on both sides (Dekker): either Wait sees the ring before it
  // sleeps, or this sees it sleeping and wakes it; the futex itself only
  // sleeps while rung_ is still 0.
  if (rung_.exchange(1) == 0 && sleeping_.load()) {
    wakes_.fetch_add(1, std::memory_order_relaxed);
    ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&rung_), FUTEX_WAKE_PRIVATE, 1, nullptr,
              nullptr, 0);
  }
}

bool Doorbell::Wait(int64_t timeout_ms) {
  if (rung_.exchange(0) != 0) return true;
  sleeping_.store(true);
  if (rung_.load() == 0) {
    timespec timeout{static_cast<time_t>(timeout_ms / 1000),
                     static_cast<long>(timeout_ms % 1000) * 1'000'000};
    // Returns on a wake, the timeout, a signal or a ring just before (EAGAIN).
    ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&rung_), FUTEX_WAIT_PRIVATE, 0, &timeout,
              nullptr, 0);
  }
  sleeping_.store(false);
  return rung_.exchange(0) != 0;
}

}  // namespace shelfmark
