#include "common/work_splitter.h"

#include <algorithm>

namespace shelfmark {

WorkSplitter::WorkSplitter(size_t helpers) {
  threads_.reserve(helpers);
  for (size_t i = 0; i < helpers; ++i) threads_.emplace_back([this] { HelperLoop(); });
}

WorkSplitter::~WorkSplitter() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

WorkSplitter& WorkSplitter::Shared() {
  // Never destroyed: a copy may still run on some thread while the process
  // exits, and its helpers end with it.
  static WorkSplitter* shared = new WorkSplitter(
      std::min<size_t>(kMaxHelpers, std::max(1u, std::thread::hardware_concurrency()) - 1));
  return *shared;
}

size_t WorkSplitter::Work(Task& task) {
  size_t ran = 0;
  for (size_t i; (i = task.next.fetch_add(1, std::memory_order_relaxed)) < task.n; ++ran) {
    (*task.job)(i);
  }
  return ran;
}

void WorkSplitter::Run(size_t n, const std::function<void(size_t)>& job) {
  std::unique_lock<std::mutex> solo(run_mu_, std::defer_lock);
  if (n < 2 || threads_.empty() || !solo.try_lock()) {
    for (size_t i = 0; i < n; ++i) job(i);
    return;
  }
  Task task;
  task.job = &job;
  task.n = n;
  {
    MutexLock lock(&mu_);
    task_ = &task;
    ++round_;
  }
  wake_.notify_all();
  Work(task);
  // Every job is claimed: no helper joins from here, and the task (on this
  // stack) outlives the helpers still running the jobs they claimed.
  MutexLock lock(&mu_);
  task_ = nullptr;
  while (task.busy > 0) idle_.wait(lock);
}

void WorkSplitter::HelperLoop() {
  MutexLock lock(&mu_);
  uint64_t seen = 0;
  for (;;) {
    while (!stopping_ && (task_ == nullptr || round_ == seen)) wake_.wait(lock);
    if (stopping_) return;
    seen = round_;
    Task& task = *task_;
    ++task.busy;
    lock.unlock();
    const size_t ran = Work(task);
    lock.lock();
    helped_.fetch_add(ran, std::memory_order_relaxed);
    if (--task.busy == 0) idle_.notify_all();
  }
}

}  // namespace shelfmark
