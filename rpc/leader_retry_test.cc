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

TEST(AbandonsHint, AnyAnswerButTheLeadersOwn) {
  for (ErrorCode code : {ErrorCode::NOT_LEADER, ErrorCode::RPC_FAIL, ErrorCode::UNAUTHENTICATED,
                         ErrorCode::RATE_LIMITED}) {
    EXPECT_TRUE(AbandonsHint(code)) << ErrorCodeName(code);
  }
  for (ErrorCode code : {ErrorCode::OK, ErrorCode::OBJECT_NOT_FOUND,
                         ErrorCode::PERMISSION_DENIED, ErrorCode::INVALID_PARAMS}) {
    EXPECT_FALSE(AbandonsHint(code)) << ErrorCodeName(code);
  }
}

// An attempt's report with `code`, `sent` and `read_only`; the rest false.
AttemptReport Report(ErrorCode code, bool sent, bool read_only) {
  AttemptReport r;
  r.code = code;
  r.sent = sent;
  r.read_only = read_only;
  return r;
}

TEST(NextAfter, AFollowedHintIsTriedAtOnceByEveryCall) {
  for (bool follows_leader : {false, true}) {
    for (bool read_only : {false, true}) {
      AttemptReport r = Report(ErrorCode::NOT_LEADER, true, read_only);
      r.follows_leader = follows_leader;
      r.followed_hint = true;
      EXPECT_EQ(NextAfter(r), NextStep::kRetryNow);
    }
  }
}

TEST(NextAfter, FollowingTheLeaderRetriesAfterAPauseWhereShouldRetryOnLeaderSays) {
  for (ErrorCode code : {ErrorCode::NOT_LEADER, ErrorCode::RPC_FAIL, ErrorCode::OK,
                         ErrorCode::UNAUTHENTICATED}) {
    for (bool sent : {false, true}) {
      for (bool read_only : {false, true}) {
        AttemptReport r = Report(code, sent, read_only);
        r.follows_leader = true;
        const NextStep want = ShouldRetryOnLeader(code, sent, read_only)
                                  ? NextStep::kRetryAfterPause
                                  : NextStep::kReturn;
        EXPECT_EQ(NextAfter(r), want) << ErrorCodeName(code) << sent << read_only;
      }
    }
  }
}

TEST(NextAfter, AFixedAddressAnswersAsBeforeHa) {
  EXPECT_EQ(NextAfter(Report(ErrorCode::NOT_LEADER, true, true)), NextStep::kReturn);
  EXPECT_EQ(NextAfter(Report(ErrorCode::RPC_FAIL, false, true)), NextStep::kReturn);
  AttemptReport dropped = Report(ErrorCode::RPC_FAIL, true, true);
  dropped.first_drop = true;
  EXPECT_EQ(NextAfter(dropped), NextStep::kRetryNow) << "a read on a fresh connection";
  dropped.read_only = false;
  EXPECT_EQ(NextAfter(dropped), NextStep::kReturn) << "a mutation's outcome is unknown";
}

TEST(NextAfter, ALeftHintIsRetriedWhenNothingHappenedThere) {
  AttemptReport stale = Report(ErrorCode::NOT_LEADER, true, false);
  stale.left_hint = true;
  EXPECT_EQ(NextAfter(stale), NextStep::kRetryAfterPause);
  // The hinted address did not prove the token: the request never left.
  AttemptReport impostor = Report(ErrorCode::UNAUTHENTICATED, false, false);
  impostor.left_hint = true;
  EXPECT_EQ(NextAfter(impostor), NextStep::kRetryAfterPause);
  AttemptReport lost = Report(ErrorCode::RPC_FAIL, true, false);
  lost.left_hint = true;
  EXPECT_EQ(NextAfter(lost), NextStep::kReturn) << "a mutation that may have arrived";
  lost.read_only = true;
  EXPECT_EQ(NextAfter(lost), NextStep::kRetryAfterPause);
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
