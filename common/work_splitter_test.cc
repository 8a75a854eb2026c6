#include "common/work_splitter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace shelfmark {
namespace {

TEST(WorkSplitter, EveryJobRunsExactlyOnce) {
  WorkSplitter splitter(2);
  std::vector<std::atomic<int>> runs(1000);
  splitter.Run(runs.size(), [&](size_t i) { runs[i].fetch_add(1); });
  for (size_t i = 0; i < runs.size(); ++i) ASSERT_EQ(runs[i].load(), 1) << "job " << i;
}

// Each of two jobs waits until the other has started: only a helper
// running one while the caller runs the other lets both end in time.
TEST(WorkSplitter, AHelperRunsJobsBesideTheCaller) {
  WorkSplitter splitter(1);
  std::atomic<int> started{0};
  std::atomic<int> met{0};
  splitter.Run(2, [&](size_t) {
    ++started;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (started.load() < 2 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    if (started.load() == 2) ++met;
  });
  EXPECT_EQ(met.load(), 2);
  EXPECT_EQ(splitter.helped(), 1u);
}

TEST(WorkSplitter, WithoutHelpersTheCallerRunsThemAll) {
  WorkSplitter splitter(0);
  const std::thread::id caller = std::this_thread::get_id();
  int ran = 0;
  splitter.Run(5, [&](size_t) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    ++ran;
  });
  EXPECT_EQ(ran, 5);
  EXPECT_EQ(splitter.helped(), 0u);
}

// Calls from many threads at once: one holds the helpers, the others run
// their jobs alone; every job of every call runs once and every call
// returns after its own jobs.
TEST(WorkSplitter, ConcurrentCallsEachRunAllTheirJobs) {
  WorkSplitter splitter(2);
  constexpr int kCallers = 4;
  constexpr int kCalls = 200;
  constexpr size_t kJobs = 16;
  std::atomic<int> wrong{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&] {
      for (int call = 0; call < kCalls; ++call) {
        std::vector<std::atomic<int>> runs(kJobs);
        splitter.Run(kJobs, [&](size_t i) { runs[i].fetch_add(1); });
        for (auto& r : runs) {
          if (r.load() != 1) ++wrong;
        }
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(WorkSplitter, SplitJobsRunsSmallCallsInOrderOnThisThread) {
  std::vector<size_t> order;
  SplitJobs(4, kSplitCopyBytes - 1, [&](size_t i) { order.push_back(i); });
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3}));
  std::vector<std::atomic<int>> runs(64);
  SplitJobs(runs.size(), kSplitCopyBytes, [&](size_t i) { runs[i].fetch_add(1); });
  for (auto& r : runs) EXPECT_EQ(r.load(), 1);
}

}  // namespace
}  // namespace shelfmark
