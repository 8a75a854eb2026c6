#include "common/reply_poll.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <memory>
#include <vector>

#include "common/socket_io.h"

namespace shelfmark {
namespace {

using std::chrono::microseconds;

// Holds MaxPollers() waits: more than that in flight means nobody polls.
std::vector<std::unique_ptr<ReplyWait>> Crowd() {
  std::vector<std::unique_ptr<ReplyWait>> waits;
  for (int i = 0; i < ReplyWait::MaxPollers(); ++i) waits.push_back(std::make_unique<ReplyWait>());
  return waits;
}

TEST(ReplyWaitTest, PollEndsReadyTimedOutOrOff) {
  ReplyWait wait;
  EXPECT_EQ(ReplyWait::Waiting(), 1);
  int calls = 0;
  EXPECT_EQ(wait.Poll(microseconds(60'000'000), [&] { return ++calls == 3; }), PollOutcome::kReady);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(wait.Poll(microseconds(100), [] { return false; }), PollOutcome::kTimedOut);
  calls = 0;
  EXPECT_EQ(wait.Poll(microseconds(0), [&] { return ++calls > 0; }), PollOutcome::kOff);
  EXPECT_EQ(calls, 0) << "a zero budget never polls";
}

TEST(ReplyWaitTest, NobodyPollsWhileMoreWaitsThanPollersAreInFlight) {
  auto others = Crowd();
  ReplyWait wait;
  bool called = false;
  EXPECT_EQ(wait.Poll(microseconds(60'000'000), [&] { return called = true; }),
            PollOutcome::kCrowded);
  EXPECT_FALSE(called) << "the waits need the CPUs: this one blocks instead of polling";
  others.clear();
  EXPECT_EQ(wait.Poll(microseconds(60'000'000), [&] { return called = true; }),
            PollOutcome::kReady);
}

TEST(ReplyWaitTest, APollStopsWhenMoreWaitsBegin) {
  std::atomic<bool> polling{false};
  auto poller = std::async(std::launch::async, [&] {
    ReplyWait wait;
    return wait.Poll(microseconds(60'000'000), [&] {
      polling = true;
      return false;
    });
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!polling && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  ASSERT_TRUE(polling);
  auto others = Crowd();
  // Well before its 60 s budget (the deadline ends the test on failure).
  ASSERT_EQ(poller.wait_until(deadline), std::future_status::ready);
  EXPECT_EQ(poller.get(), PollOutcome::kCrowded);
  others.clear();
  EXPECT_EQ(ReplyWait::Waiting(), 0);
}

TEST(ReplyWaitTest, PollReadableSeesBytesAndTheCloseWithoutReadingThem) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  UniqueFd a(sv[0]), b(sv[1]);
  ReplyWait wait;
  EXPECT_EQ(wait.PollReadable(a.get(), microseconds(200)), PollOutcome::kTimedOut);
  ASSERT_EQ(write(b.get(), "xy", 2), 2);
  EXPECT_EQ(wait.PollReadable(a.get(), microseconds(60'000'000)), PollOutcome::kReady);
  char buf[4];
  EXPECT_EQ(read(a.get(), buf, sizeof(buf)), 2) << "the bytes are still there to read";
  b.Reset();
  EXPECT_EQ(wait.PollReadable(a.get(), microseconds(60'000'000)), PollOutcome::kReady)
      << "the close is the reader's to see";
  EXPECT_EQ(read(a.get(), buf, sizeof(buf)), 0);
}

TEST(ReplyPollerTest, MissesStopThePollsButOneProbeInSoManyUntilAHit) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  UniqueFd a(sv[0]), b(sv[1]);
  ReplyPoller poller(100);
  auto await = [&] {
    ReplyWait wait;
    poller.Await(wait, a.get());
  };
  for (int i = 0; i < ReplyPoller::kMaxMisses; ++i) {  // nothing comes: misses
    ReplyWait wait;
    EXPECT_FALSE(poller.Await(wait, a.get()));
  }
  EXPECT_EQ(poller.polls(), uint64_t{ReplyPoller::kMaxMisses});
  for (uint32_t i = 1; i < ReplyPoller::kProbeEvery; ++i) await();
  EXPECT_EQ(poller.polls(), uint64_t{ReplyPoller::kMaxMisses}) << "no polls after the misses";
  ASSERT_EQ(write(b.get(), "x", 1), 1);
  {
    ReplyWait wait;
    EXPECT_TRUE(poller.Await(wait, a.get())) << "the probe, which hits";
  }
  EXPECT_EQ(poller.polls(), uint64_t{ReplyPoller::kMaxMisses} + 1);
  await();
  EXPECT_EQ(poller.polls(), uint64_t{ReplyPoller::kMaxMisses} + 2) << "a hit resumes polling";
}

TEST(ReplyPollerTest, CrowdedPollsAreNoMisses) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  UniqueFd a(sv[0]), b(sv[1]);
  ReplyPoller poller(100);
  {
    auto others = Crowd();
    for (int i = 0; i < 2 * ReplyPoller::kMaxMisses; ++i) {
      ReplyWait wait;
      poller.Await(wait, a.get());
    }
  }
  ASSERT_EQ(write(b.get(), "x", 1), 1);
  const uint64_t before = poller.polls();
  ReplyWait wait;
  poller.Await(wait, a.get());
  EXPECT_EQ(poller.polls(), before + 1) << "still polling: crowding is not the answer's delay";
}

}  // namespace
}  // namespace shelfmark
