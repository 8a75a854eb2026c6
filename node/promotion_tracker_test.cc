// PromotionTracker: hits within a window request once; Done and the
// request's expiry re-arm a key; the window restarts after it passes; the
// key count is bounded; hits == 0 disables it; concurrent hits request once.
#include "node/promotion_tracker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace shelfmark {
namespace {

PromotionTracker Tracker(uint32_t hits, int64_t window_ms = 1000, size_t max_keys = 65536) {
  return PromotionTracker(PromotionTrackerOptions{hits, window_ms, max_keys});
}

TEST(PromotionTrackerTest, RequestsOnceWhenHitsReachedWithinTheWindow) {
  PromotionTracker t = Tracker(3);
  EXPECT_FALSE(t.Hit("t", "k", 0));
  EXPECT_FALSE(t.Hit("t", "k", 10));
  EXPECT_TRUE(t.Hit("t", "k", 999));  // third read, still inside the window
  for (int64_t now = 1000; now < 1999; now += 100) EXPECT_FALSE(t.Hit("t", "k", now)) << now;
  EXPECT_EQ(t.tracked(), 1u);
}

TEST(PromotionTrackerTest, AReadAfterTheWindowStartsANewWindowAtOne) {
  PromotionTracker t = Tracker(3);
  EXPECT_FALSE(t.Hit("t", "k", 0));
  EXPECT_FALSE(t.Hit("t", "k", 500));
  EXPECT_FALSE(t.Hit("t", "k", 1000));  // window [0, 1000) is over: count 1 again
  EXPECT_FALSE(t.Hit("t", "k", 1500));
  EXPECT_TRUE(t.Hit("t", "k", 1999));
}

TEST(PromotionTrackerTest, DoneRearmsTheKey) {
  PromotionTracker t = Tracker(2);
  EXPECT_FALSE(t.Hit("t", "k", 0));
  EXPECT_TRUE(t.Hit("t", "k", 1));
  EXPECT_FALSE(t.Hit("t", "k", 2));
  t.Done("t", "k");
  EXPECT_EQ(t.tracked(), 0u);
  EXPECT_FALSE(t.Hit("t", "k", 3));  // counted afresh
  EXPECT_TRUE(t.Hit("t", "k", 4));
  t.Done("t", "absent");  // no-op
  EXPECT_EQ(t.tracked(), 1u);
}

TEST(PromotionTrackerTest, ARequestNotDoneIsRetriedAfterTheWindow) {
  PromotionTracker t = Tracker(2);
  EXPECT_FALSE(t.Hit("t", "k", 0));
  EXPECT_TRUE(t.Hit("t", "k", 100));  // requested at 100, never Done (refused)
  EXPECT_FALSE(t.Hit("t", "k", 600));
  EXPECT_FALSE(t.Hit("t", "k", 1099));
  EXPECT_FALSE(t.Hit("t", "k", 1100));  // request expired: a new window at 1
  EXPECT_TRUE(t.Hit("t", "k", 1101));
}

TEST(PromotionTrackerTest, OneHitRequestsOnTheFirstRead) {
  PromotionTracker t = Tracker(1);
  EXPECT_TRUE(t.Hit("t", "k", 0));
  EXPECT_FALSE(t.Hit("t", "k", 1));
  EXPECT_TRUE(t.Hit("t", "k", 1000));
}

TEST(PromotionTrackerTest, TenantsAndKeysAreDistinct) {
  PromotionTracker t = Tracker(2);
  EXPECT_FALSE(t.Hit("a", "bc", 0));
  EXPECT_FALSE(t.Hit("ab", "c", 0));  // not the same (tenant, key)
  EXPECT_FALSE(t.Hit("b", "bc", 0));
  EXPECT_EQ(t.tracked(), 3u);
  EXPECT_TRUE(t.Hit("ab", "c", 1));
}

TEST(PromotionTrackerTest, ZeroHitsIsOff) {
  PromotionTracker t = Tracker(0);
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(t.Hit("t", "k", i));
  EXPECT_EQ(t.tracked(), 0u);
}

TEST(PromotionTrackerTest, BoundedWhenFullNewKeysAreNotTracked) {
  PromotionTracker t = Tracker(1, /*window_ms=*/1000, /*max_keys=*/4);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(t.Hit("t", "k" + std::to_string(i), 0));
  // Full, nothing expired: a hostile stream of new keys tracks nothing.
  for (int i = 4; i < 10'000; ++i) EXPECT_FALSE(t.Hit("t", "k" + std::to_string(i), 500));
  EXPECT_EQ(t.tracked(), 4u);
  // Tracked keys still count.
  EXPECT_FALSE(t.Hit("t", "k0", 600));
  // Once their windows expire, room is made for new keys.
  EXPECT_TRUE(t.Hit("t", "new", 1000));
  EXPECT_LE(t.tracked(), 4u);
  EXPECT_EQ(t.tracked(), 1u);
}

TEST(PromotionTrackerTest, ForgetsOnlyExpiredKeysWhenFull) {
  PromotionTracker t = Tracker(2, /*window_ms=*/800, /*max_keys=*/2);
  EXPECT_FALSE(t.Hit("t", "old", 0));
  EXPECT_FALSE(t.Hit("t", "young", 500));
  EXPECT_FALSE(t.Hit("t", "x", 900));  // "old" expired (window 0..800): forgotten
  EXPECT_EQ(t.tracked(), 2u);
  EXPECT_TRUE(t.Hit("t", "young", 901));  // kept its count
  EXPECT_TRUE(t.Hit("t", "x", 902));
}

TEST(PromotionTrackerTest, ConcurrentHitsRequestOnce) {
  PromotionTracker t = Tracker(50, /*window_ms=*/1'000'000);
  std::atomic<int> requested{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 1000; ++j) {
        if (t.Hit("t", "k", j)) requested.fetch_add(1);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(requested.load(), 1);
}

}  // namespace
}  // namespace shelfmark
