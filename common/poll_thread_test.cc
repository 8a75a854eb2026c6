#include "common/poll_thread.h"

#include <poll.h>

#include <gtest/gtest.h>

#include <atomic>

namespace shelfmark {
namespace {

TEST(PollThreadTest, StopWakesTheLoopAndJoinsIt) {
  PollThread thread;
  std::atomic<int> woke{0};
  ASSERT_TRUE(thread.Start([&] {
    pollfd p{thread.wake_fd(), POLLIN, 0};
    while (poll(&p, 1, -1) != 1) {
    }
    woke = 1;
  }));
  EXPECT_TRUE(thread.running());
  EXPECT_FALSE(thread.Start([] {}));  // one loop at a time
  thread.Stop();
  EXPECT_EQ(woke.load(), 1);
  EXPECT_FALSE(thread.running());
  EXPECT_EQ(thread.wake_fd(), -1);
  thread.Stop();  // again: nothing to do
}

}  // namespace
}  // namespace shelfmark
