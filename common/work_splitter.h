// WorkSplitter: runs a call's independent jobs (the memcpy copies of a
// batch's objects) on the calling thread and a few helper threads at once.
// One core copies at a fraction of what the memory system moves: on the
// 2-CPU benchmark VM two threads copied 16 MiB in about 0.65 of one's time
// (37 against 23 GB/s, a plain memcpy loop), so a same-host batch put or
// get of many objects splits its copies (SplitJobs) instead of doing them
// one after another.
//
// Contract: Run(n, job) calls job(i) exactly once for every i in [0, n)
// and returns after the last call returned; the jobs must not depend on
// each other's order. While another call holds the helpers, a call runs
// all of its jobs on its own thread (the CPUs are busy anyway). In a
// forked child, whose helpers were not copied, the caller claims them all.
// Thread safety: Run from any thread; the destructor must not race a Run.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "common/mutex.h"

namespace shelfmark {

class WorkSplitter {
 public:
  explicit WorkSplitter(size_t helpers);
  ~WorkSplitter();
  WorkSplitter(const WorkSplitter&) = delete;
  WorkSplitter& operator=(const WorkSplitter&) = delete;

  // The process's splitter: a helper for each CPU but the caller's, at most
  // kMaxHelpers (none on one CPU).
  static WorkSplitter& Shared();
  static constexpr size_t kMaxHelpers = 3;

  void Run(size_t n, const std::function<void(size_t)>& job);
  size_t helpers() const { return threads_.size(); }
  // Jobs run on helper threads so far (tests, benchmarks).
  uint64_t helped() const { return helped_.load(std::memory_order_relaxed); }

 private:
  struct Task {
    const std::function<void(size_t)>* job = nullptr;
    size_t n = 0;
    std::atomic<size_t> next{0};  // the next job to claim
    size_t busy = 0;              // helpers in it (guarded by the splitter's mu_)
  };
  // Claims and runs the task's jobs until none is left; how many it ran.
  static size_t Work(Task& task);
  void HelperLoop();

  std::mutex run_mu_;  // held by the call whose jobs the helpers take
  Mutex mu_;
  std::condition_variable_any wake_;  // a task published, or stopping_
  std::condition_variable_any idle_;  // a task's last helper left it
  Task* task_ GUARDED_BY(mu_) = nullptr;
  uint64_t round_ GUARDED_BY(mu_) = 0;  // tasks published so far
  bool stopping_ GUARDED_BY(mu_) = false;
  std::atomic<uint64_t> helped_{0};
  std::vector<std::thread> threads_;
};

// Bytes a call's copies must move together before they are split: below,
// waking a helper (some microseconds) costs more than it saves.
inline constexpr uint64_t kSplitCopyBytes = 1ull << 20;

// Runs job(0) .. job(n - 1): split over WorkSplitter::Shared() when `bytes`
// (what the jobs move together) reaches kSplitCopyBytes, else in order on
// this thread. (A template: a call too small to split, a one-object get,
// builds no std::function.)
template <typename Job>
void SplitJobs(size_t n, uint64_t bytes, Job&& job) {
  if (bytes >= kSplitCopyBytes) {
    WorkSplitter::Shared().Run(n, job);
    return;
  }
  for (size_t i = 0; i < n; ++i) job(i);
}

}  // namespace shelfmark
