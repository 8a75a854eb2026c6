// Doorbell: wakes one sleeping thread (the replication leader's shipper)
// from any thread, at the cost of one futex wake when it sleeps and none
// while it runs.
//
// Why not a condition variable: std::condition_variable_any (the only one
// that waits on a shelfmark::Mutex) notifies while holding its internal
// mutex, so on a busy CPU the woken shipper runs at once, blocks on that
// mutex and must be woken a second time: two extra context switches per
// put acknowledged through a standby (docs/ha.md, "What a put waits for").
//
// Thread safety: Ring may be called from any thread; Wait from one thread
// at a time.
#pragma once

#include <atomic>
#include <cstdint>

namespace shelfmark {

class Doorbell {
 public:
  // Wakes the waiter, or makes its next Wait return at once.
  void Ring();
  // Returns once rung (true; the ring is consumed) or after `timeout_ms`
  // (false). A ring before the call counts.
  bool Wait(int64_t timeout_ms);

  // True from just before the waiter sleeps until it returns: a Ring now
  // wakes it (and counts in wakes()).
  bool asleep() const { return sleeping_.load(); }
  // Rings that found the waiter asleep and paid a futex wake: the cost the
  // shipper's callers try to avoid (rings while it runs are free).
  uint64_t wakes() const { return wakes_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint32_t> rung_{0};  // 1: rung and not consumed
  std::atomic<bool> sleeping_{false};
  std::atomic<uint64_t> wakes_{0};
};

}  // namespace shelfmark
