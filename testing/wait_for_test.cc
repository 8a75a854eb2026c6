#include "testing/wait_for.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace shelfmark::testing {
namespace {

TEST(WaitFor, TrueAtOnceWhenTheConditionHolds) {
  int calls = 0;
  EXPECT_TRUE(WaitFor([&] { return ++calls > 0; }, 0));
  EXPECT_EQ(calls, 1);
}

TEST(WaitFor, SeesAConditionAnotherThreadMakesTrue) {
  std::atomic<bool> flag{false};
  std::thread setter([&] { flag.store(true); });
  EXPECT_TRUE(WaitFor([&] { return flag.load(); }, 60'000));
  setter.join();
}

TEST(WaitFor, FalseAfterTheDeadlineCheckingOnceMoreAtIt) {
  int calls = 0;
  EXPECT_FALSE(WaitFor([&] { return ++calls < 0; }, 20));
  EXPECT_GE(calls, 2);  // at least once in the loop and once at the deadline
}

}  // namespace
}  // namespace shelfmark::testing
