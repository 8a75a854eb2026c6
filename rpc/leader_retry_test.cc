#include "rpc/leader_retry.h"

#include <gtest/gtest.h>

namespace shelfmark {
namespace {

TEST(ShouldRetryOnLeader, NotLeaderIsRetriedForEveryCall) {
  for (bool sent : {false, true}) {
    for (bool read_only : {false, true}) {
      EXPECT_TRUE(ShouldRetryOnLeader(ErrorCode::NOT_LEADER, sent, read_only));
    }
  }
}

TEST(ShouldRetryOnLeader, UnsentCallsAreRetriedSentMutationsAreNot) {
  EXPECT_TRUE(ShouldRetryOnLeader(ErrorCode::RPC_FAIL, false, false));
  EXPECT_TRUE(ShouldRetryOnLeader(ErrorCode::RPC_FAIL, false, true));
  EXPECT_TRUE(ShouldRetryOnLeader(ErrorCode::RPC_FAIL, true, true));
  EXPECT_FALSE(ShouldRetryOnLeader(ErrorCode::RPC_FAIL, true, false));
}

TEST(ShouldRetryOnLeader, AnswersAreFinal) {
  for (ErrorCode code : {ErrorCode::OK, ErrorCode::OBJECT_NOT_FOUND, ErrorCode::UNAUTHENTICATED,
                         ErrorCode::INVALID_PARAMS}) {
    EXPECT_FALSE(ShouldRetryOnLeader(code, false, true)) << static_cast<int>(code);
    EXPECT_FALSE(ShouldRetryOnLeader(code, true, true)) << static_cast<int>(code);
  }
}

TEST(ShouldReResolve, OnlyNotLeaderAndTransportFailures) {
  EXPECT_TRUE(ShouldReResolve(ErrorCode::NOT_LEADER));
  EXPECT_TRUE(ShouldReResolve(ErrorCode::RPC_FAIL));
  EXPECT_FALSE(ShouldReResolve(ErrorCode::OK));
  EXPECT_FALSE(ShouldReResolve(ErrorCode::OBJECT_NOT_FOUND));
}

TEST(RetryBackoff, DoublesToTheCapAndStopsAtTheDeadline) {
  using std::chrono::milliseconds;
  const auto t0 = RetryBackoff::Clock::time_point() + std::chrono::hours(1);
  RetryBackoff backoff(t0 + milliseconds(1000));
  EXPECT_EQ(backoff.Next(t0), milliseconds(50));
  EXPECT_EQ(backoff.Next(t0), milliseconds(100));
  EXPECT_EQ(backoff.Next(t0), milliseconds(200));
  EXPECT_EQ(backoff.Next(t0), milliseconds(200));  // the cap
  EXPECT_EQ(backoff.Next(t0), milliseconds(200));
  EXPECT_EQ(backoff.Next(t0 + milliseconds(900)), milliseconds(100));  // clamped to the deadline
  EXPECT_EQ(backoff.Next(t0 + milliseconds(2000)), milliseconds(0));
  EXPECT_FALSE(backoff.Expired(t0 + milliseconds(999)));
  EXPECT_TRUE(backoff.Expired(t0 + milliseconds(1000)));
}

}  // namespace
}  // namespace shelfmark
