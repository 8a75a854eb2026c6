#include "common/socket_io.h"

#include <poll.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace shelfmark {
namespace {

// A listener on 127.0.0.1 and a connection to it, accepted.
struct Pair {
  UniqueFd listener;
  UniqueFd client;
  UniqueFd server;
};

Pair Connected() {
  Pair p;
  p.listener.Reset(ListenTcp("127.0.0.1", 0, 8));
  EXPECT_TRUE(p.listener.valid()) << std::strerror(errno);
  const uint16_t port = BoundPort(p.listener.get());
  EXPECT_NE(port, 0);
  p.client = ConnectTcp(HostPort{"127.0.0.1", port}, 5000);
  EXPECT_TRUE(p.client.valid());
  EXPECT_TRUE(WaitFd(p.listener.get(), POLLIN, 5000));
  p.server.Reset(::accept4(p.listener.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
  EXPECT_TRUE(p.server.valid());
  return p;
}

TEST(SocketIoTest, SendsAndReceivesUntilTheSenderCloses) {
  Pair p = Connected();
  const std::string message(100000, 'x');
  std::thread sender([&] {
    EXPECT_TRUE(SendAll(p.server.get(), message, 5000));
    p.server.Reset();
  });
  std::string got;
  EXPECT_TRUE(ReceiveAll(p.client.get(), &got, message.size(), 5000));
  sender.join();
  EXPECT_EQ(got, message);
}

TEST(SocketIoTest, ReceiveStopsPastTheLimit) {
  Pair p = Connected();
  ASSERT_TRUE(SendAll(p.server.get(), std::string(100, 'y'), 5000));
  p.server.Reset();
  std::string got;
  EXPECT_FALSE(ReceiveAll(p.client.get(), &got, 10, 5000));
}

TEST(SocketIoTest, ReceiveGivesUpOnASilentPeer) {
  Pair p = Connected();  // the server never writes nor closes
  std::string got;
  EXPECT_FALSE(ReceiveAll(p.client.get(), &got, 10, 20));
  EXPECT_TRUE(got.empty());
}

TEST(SocketIoTest, ConnectToAClosedPortFails) {
  int fd = ListenTcp("127.0.0.1", 0, 1);
  ASSERT_GE(fd, 0);
  const uint16_t port = BoundPort(fd);
  CloseFd(fd);
  EXPECT_EQ(fd, -1);
  bool refused = false;
  EXPECT_FALSE(ConnectTcp(HostPort{"127.0.0.1", port}, 2000, &refused).valid());
  EXPECT_TRUE(refused) << "the host answered: nothing listens";
}

TEST(SocketIoTest, RefusedOnlyWhenTheHostAnswersThatNothingListens) {
  int fd = ListenTcp("127.0.0.1", 0, 1);
  ASSERT_GE(fd, 0);
  bool refused = true;
  EXPECT_TRUE(ConnectTcp(HostPort{"127.0.0.1", BoundPort(fd)}, 2000, &refused).valid());
  EXPECT_FALSE(refused);
  // A listener whose backlog is full drops further SYNs (Linux's default,
  // tcp_abort_on_overflow=0): silence, which is no refusal.
  std::vector<UniqueFd> queued;
  for (int i = 0; i < 8; ++i) {
    bool refused_now = true;
    UniqueFd c = ConnectTcp(HostPort{"127.0.0.1", BoundPort(fd)}, 100, &refused_now);
    if (!c.valid()) {
      EXPECT_FALSE(refused_now);
      break;
    }
    queued.push_back(std::move(c));
  }
  EXPECT_LT(queued.size(), 8u) << "the backlog filled up";
  CloseFd(fd);
  refused = true;
  EXPECT_FALSE(ConnectTcp(HostPort{"no-such-host.invalid", 9}, 50, &refused).valid());
  EXPECT_FALSE(refused);
}

TEST(SocketIoTest, ListenRefusesAHostThatIsNotANumericAddress) {
  EXPECT_EQ(ListenTcp("localhost", 0, 1), -1);
  EXPECT_EQ(errno, EINVAL);
  int v6 = ListenTcp("::1", 0, 1);
  if (v6 >= 0) {  // hosts without IPv6 refuse the bind itself
    EXPECT_NE(BoundPort(v6), 0);
    CloseFd(v6);
  }
}

TEST(SocketIoTest, UniqueFdMovesOwnership) {
  UniqueFd a(ListenTcp("127.0.0.1", 0, 1));
  ASSERT_TRUE(a.valid());
  const int raw = a.get();
  UniqueFd b(std::move(a));
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): the contract
  EXPECT_EQ(b.get(), raw);
  b.Reset();
  EXPECT_FALSE(b.valid());
}

}  // namespace
}  // namespace shelfmark
