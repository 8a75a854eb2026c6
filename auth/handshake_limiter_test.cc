#include "auth/handshake_limiter.h"

#include <gtest/gtest.h>

namespace shelfmark::auth {
namespace {

TEST(HandshakeLimiterTest, FailuresEmptyAPeersBucketWhichRefills) {
  ManualClock clock;
  HandshakeLimiter limiter(clock, {3, 2, 16});
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(limiter.Allow("10.0.0.1")) << i;
    limiter.Failed("10.0.0.1");
  }
  EXPECT_FALSE(limiter.Allow("10.0.0.1"));
  EXPECT_TRUE(limiter.Allow("10.0.0.2")) << "another peer is not limited";
  clock.AdvanceMs(499);
  EXPECT_FALSE(limiter.Allow("10.0.0.1"));
  clock.AdvanceMs(1);  // 0.5 s at 2/s: one failure back
  EXPECT_TRUE(limiter.Allow("10.0.0.1"));
  limiter.Failed("10.0.0.1");
  EXPECT_FALSE(limiter.Allow("10.0.0.1"));
  clock.AdvanceMs(60'000);  // refills to the burst, no further
  for (int i = 0; i < 3; ++i) limiter.Failed("10.0.0.1");
  EXPECT_FALSE(limiter.Allow("10.0.0.1"));
}

TEST(HandshakeLimiterTest, KeepsAtMostMaxPeersForgettingTheLeastRecent) {
  ManualClock clock;
  HandshakeLimiter limiter(clock, {1, 0.001, 2});
  limiter.Failed("a");
  limiter.Failed("b");
  EXPECT_FALSE(limiter.Allow("a"));  // a is now the most recent
  limiter.Failed("c");               // forgets b
  EXPECT_FALSE(limiter.Allow("a"));
  EXPECT_FALSE(limiter.Allow("c"));
  EXPECT_TRUE(limiter.Allow("b")) << "b was forgotten: a fresh bucket";
}

}  // namespace
}  // namespace shelfmark::auth
