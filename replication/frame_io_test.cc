#include "replication/frame_io.h"

#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "replication/replication_wire.h"

namespace shelfmark {
namespace {

// A connected pair of stream sockets, closed at the end.
class FrameIoTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds_), 0); }
  void TearDown() override {
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  void Send(const std::string& bytes) {
    ASSERT_EQ(::send(fds_[1], bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  int reader() const { return fds_[0]; }

  int fds_[2] = {-1, -1};
};

TEST_F(FrameIoTest, ReadsAFrameWithinItsLimitsAfterTheSniffedBytes) {
  std::string frame;
  AppendAck(42, &frame);
  std::string pending = frame.substr(0, 4);  // the tag the RPC port read
  Send(frame.substr(4));
  std::string body;
  ASSERT_EQ(ReadFrame(reader(), {kMaxControlFrameBytes, 1000, 1000}, &pending, &body),
            ErrorCode::OK);
  EXPECT_TRUE(pending.empty());
  auto ack = DecodeAck(body);
  ASSERT_TRUE(ack.ok());
  EXPECT_EQ(*ack, 42u);
}

TEST_F(FrameIoTest, RefusesAFrameOverTheLimitFromItsHeader) {
  std::string frame;
  AppendProof(std::string(kMaxControlFrameBytes, 'p'), &frame);  // body: type byte + length + bytes
  Send(frame.substr(0, kReplicationHeaderBytes));  // the body never comes
  std::string pending, body = "old";
  EXPECT_EQ(ReadFrame(reader(), {kMaxControlFrameBytes, 1000, -1}, &pending, &body),
            ErrorCode::RPC_FAIL);
  EXPECT_EQ(body, "old") << "nothing of the body was read or reserved";
}

TEST_F(FrameIoTest, AFrameBegunMustEndByItsDeadline) {
  std::string frame;
  AppendAck(7, &frame);
  Send(frame.substr(0, frame.size() - 1));  // all but its last byte, then silence
  std::string pending, body;
  // No wait for a first byte (as an acknowledgement is read), but the frame
  // has begun: its deadline ends the read.
  EXPECT_EQ(ReadFrame(reader(), {kMaxControlFrameBytes, -1, 50}, &pending, &body),
            ErrorCode::RPC_FAIL);
}

TEST_F(FrameIoTest, TellsAnOrderlyCloseBeforeAFrame) {
  ::shutdown(fds_[1], SHUT_WR);
  std::string pending, body;
  bool closed = false;
  EXPECT_EQ(ReadFrame(reader(), {kMaxControlFrameBytes}, &pending, &body, &closed),
            ErrorCode::RPC_FAIL);
  EXPECT_TRUE(closed);
}

// spin_us only changes how the reader waits: a frame that arrives while it
// polls, or after it went to sleep, reads whole; silence still ends at the
// wait's limit.
TEST_F(FrameIoTest, PollingBeforeSleepingReadsFramesAndStillTimesOut) {
  FrameLimits limits{kMaxControlFrameBytes, 60'000, 60'000};
  limits.spin_us = 1'000'000;  // far longer than the writer takes to start
  std::string frame;
  AppendAck(9, &frame);
  std::thread writer([&] { Send(frame); });
  std::string pending, body;
  ASSERT_EQ(ReadFrame(reader(), limits, &pending, &body), ErrorCode::OK);
  writer.join();
  auto ack = DecodeAck(body);
  ASSERT_TRUE(ack.ok());
  EXPECT_EQ(*ack, 9u);

  limits.spin_us = 1;
  limits.wait_ms = 1;  // nothing comes: the poll ends, then the wait does
  EXPECT_EQ(ReadFrame(reader(), limits, &pending, &body), ErrorCode::RPC_FAIL);
}

}  // namespace
}  // namespace shelfmark
