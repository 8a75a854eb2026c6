// SnapshotLock: the directory's snapshot lock, a reader-writer lock built
// for a read side taken by every directory operation and a write side taken
// rarely (a snapshot every few minutes).
//
// Readers count themselves in one of kSlots cache-line-sized counters chosen
// per thread, so concurrent operations on different threads do not bounce a
// shared cache line; a reader costs two uncontended atomic read-modify-writes
// and two loads. The writer raises `paused_`, then waits until every counter
// is zero. A reader that finds `paused_` raised backs out and waits, so the
// writer is never starved by a stream of readers (unlike glibc's default
// reader-preferring rwlock), and it gets in as soon as the operations in
// progress end.
//
// Thread safety: all methods are thread-safe. Not reentrant: a thread that
// holds the lock shared must not take it again (a writer waiting in between
// would deadlock both), nor take it exclusively.
//
// Correctness (the fence argument): a reader increments its counter, then
// loads `paused_`; the writer stores `paused_`, then loads the counters; all
// four are sequentially consistent, so either the reader sees the pause and
// backs out, or the writer sees the increment and waits for it. A reader that
// leaves while `paused_` is raised notifies under `mu_`, where the writer
// checks its condition, so the wake-up cannot be lost.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>

#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace shelfmark {

class CAPABILITY("mutex") SnapshotLock {
 public:
  SnapshotLock() = default;
  SnapshotLock(const SnapshotLock&) = delete;
  SnapshotLock& operator=(const SnapshotLock&) = delete;

  void lock_shared() ACQUIRE_SHARED() {
    std::atomic<int64_t>& readers = slots_[ThreadSlot()].readers;
    for (;;) {
      readers.fetch_add(1, std::memory_order_seq_cst);
      if (!paused_.load(std::memory_order_seq_cst)) return;
      readers.fetch_sub(1, std::memory_order_seq_cst);
      WaitWhilePaused();
    }
  }

  void unlock_shared() RELEASE_SHARED() {
    slots_[ThreadSlot()].readers.fetch_sub(1, std::memory_order_seq_cst);
    if (paused_.load(std::memory_order_seq_cst)) Notify();
  }

  // Waits for the readers in progress to leave and keeps new ones out.
  void lock() ACQUIRE() NO_THREAD_SAFETY_ANALYSIS {
    writer_.lock();  // one writer at a time
    paused_.store(true, std::memory_order_seq_cst);
    MutexLock lock(&mu_);
    cv_.wait(lock, [this] { return Drained(); });
  }

  // Readers held back by a pause right now (an observation for tests and
  // metrics).
  size_t waiting() const { return waiting_.load(std::memory_order_relaxed); }

  void unlock() RELEASE() NO_THREAD_SAFETY_ANALYSIS {
    {
      MutexLock lock(&mu_);
      paused_.store(false, std::memory_order_seq_cst);
    }
    cv_.notify_all();
    writer_.unlock();
  }

 private:
  static constexpr size_t kSlots = 32;
  struct alignas(64) Slot {
    std::atomic<int64_t> readers{0};
  };

  // The calling thread's slot: threads take slots round robin at first use.
  static size_t ThreadSlot() {
    static std::atomic<size_t> next{0};
    thread_local const size_t slot = next.fetch_add(1, std::memory_order_relaxed) % kSlots;
    return slot;
  }

  bool Drained() const {
    for (const Slot& s : slots_) {
      if (s.readers.load(std::memory_order_seq_cst) != 0) return false;
    }
    return true;
  }

  void WaitWhilePaused() {
    MutexLock lock(&mu_);
    cv_.notify_all();  // this reader backed out: the writer may be waiting for it
    waiting_.fetch_add(1, std::memory_order_relaxed);
    cv_.wait(lock, [this] { return !paused_.load(std::memory_order_seq_cst); });
    waiting_.fetch_sub(1, std::memory_order_relaxed);
  }

  void Notify() {
    MutexLock lock(&mu_);
    cv_.notify_all();
  }

  std::array<Slot, kSlots> slots_;
  std::atomic<bool> paused_{false};
  std::atomic<size_t> waiting_{0};
  Mutex writer_;
  Mutex mu_;
  // _any: waits on a MutexLock (see directory_impl.h).
  std::condition_variable_any cv_;
};

// Holds a SnapshotLock shared for its scope.
class SCOPED_CAPABILITY SnapshotReader {
 public:
  explicit SnapshotReader(SnapshotLock* mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_->lock_shared(); }
  ~SnapshotReader() RELEASE() { mu_->unlock_shared(); }
  SnapshotReader(const SnapshotReader&) = delete;
  SnapshotReader& operator=(const SnapshotReader&) = delete;

 private:
  SnapshotLock* const mu_;
};

// Holds a SnapshotLock exclusively for its scope.
class SCOPED_CAPABILITY SnapshotPause {
 public:
  explicit SnapshotPause(SnapshotLock* mu) ACQUIRE(mu) : mu_(mu) { mu_->lock(); }
  ~SnapshotPause() RELEASE() { mu_->unlock(); }
  SnapshotPause(const SnapshotPause&) = delete;
  SnapshotPause& operator=(const SnapshotPause&) = delete;

 private:
  SnapshotLock* const mu_;
};

}  // namespace shelfmark
