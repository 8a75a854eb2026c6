#include "replication/doorbell.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "testing/wait_for.h"

namespace shelfmark {
namespace {

TEST(Doorbell, ARingBeforeTheWaitCountsOnce) {
  Doorbell bell;
  bell.Ring();
  bell.Ring();  // not consumed yet: still one ring
  EXPECT_TRUE(bell.Wait(10'000));
  EXPECT_FALSE(bell.Wait(1));  // consumed: this one times out
  EXPECT_EQ(bell.wakes(), 0u) << "nobody slept: no futex wake";
}

TEST(Doorbell, ARingCountsAWakeOnlyWhenItFindsTheWaiterAsleep) {
  Doorbell bell;
  std::atomic<bool> woke{false};
  std::thread waiter([&] { woke = bell.Wait(60'000); });
  ASSERT_TRUE(testing::WaitFor([&] { return bell.asleep(); }, 10'000));
  bell.Ring();
  bell.Ring();  // not consumed yet: no second wake
  waiter.join();
  EXPECT_TRUE(woke);
  EXPECT_EQ(bell.wakes(), 1u);
}

TEST(Doorbell, WakesASleepingWaiter) {
  Doorbell bell;
  std::atomic<bool> woke{false};
  std::thread waiter([&] { woke = bell.Wait(60'000); });
  // Rings until the waiter returns; a ring it consumed before sleeping
  // wakes it just as well. Its wait is far longer than the test's timeout,
  // so only a ring can end it.
  while (!woke) {
    bell.Ring();
    std::this_thread::yield();
  }
  waiter.join();
  EXPECT_TRUE(woke);
}

TEST(Doorbell, ManyRingersNeverLoseTheLastRing) {
  Doorbell bell;
  std::atomic<int> rounds{0};
  std::thread waiter([&] {
    while (rounds < 1000) {
      if (bell.Wait(60'000)) ++rounds;
    }
  });
  std::thread ringers[4];
  for (auto& t : ringers) {
    t = std::thread([&] {
      while (rounds < 1000) bell.Ring();
    });
  }
  for (auto& t : ringers) t.join();
  waiter.join();
  EXPECT_EQ(rounds, 1000);
}

}  // namespace
}  // namespace shelfmark
