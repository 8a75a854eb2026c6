#include "transport/ucx_address_server.h"

#include <poll.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "common/socket_io.h"
#include "transport/ucx_wire.h"

namespace shelfmark {
namespace {

std::string Endpoint(const UcxAddressServer& server) {
  return "127.0.0.1:" + std::to_string(server.port());
}

// What was served, less the challenge.
ucx_wire::NodeAddress WithoutChallenge(ucx_wire::NodeAddress address) {
  address.ticket = 0;
  address.nonce = {};
  return address;
}

TEST(UcxAddressServer, EveryConnectionGetsTheAddressWhateverItSends) {
  ChallengeBook challenges;
  const ucx_wire::NodeAddress address{std::string("\x02worker\0address", 15), "boot", ""};
  auto server = UcxAddressServer::Start("127.0.0.1", 0, address, &challenges);
  ASSERT_TRUE(server.ok());
  ASSERT_NE((*server)->port(), 0);
  for (int i = 0; i < 3; ++i) {
    UniqueFd noisy = ConnectTcp(HostPort{"127.0.0.1", (*server)->port()}, 5000);
    ASSERT_TRUE(noisy.valid());
    SendAll(noisy.get(), std::string(4096, '\0'), 1000);  // never read by the server
    std::string error;
    auto fetched = FetchUcxNodeAddress(Endpoint(**server), 5000, &error);
    ASSERT_TRUE(fetched.has_value()) << error;
    EXPECT_EQ(WithoutChallenge(*fetched), address);
  }
  EXPECT_GE((*server)->served(), 3u);
  const ucx_wire::NodeAddress shared{"w", "boot", "share-name"};
  (*server)->Update(shared);
  std::string error;
  auto fetched = FetchUcxNodeAddress(Endpoint(**server), 5000, &error);
  ASSERT_TRUE(fetched.has_value()) << error;
  EXPECT_EQ(WithoutChallenge(*fetched), shared);
}

// Every connection is a challenge of its own, which the book hands back
// once: the hello that answers it is the only one that can.
TEST(UcxAddressServer, EachConnectionGetsAFreshChallengeFromTheBook) {
  ChallengeBook challenges;
  auto server = UcxAddressServer::Start("127.0.0.1", 0, {"w", "", ""}, &challenges);
  ASSERT_TRUE(server.ok());
  std::string error;
  auto first = FetchUcxNodeAddress(Endpoint(**server), 5000, &error);
  auto second = FetchUcxNodeAddress(Endpoint(**server), 5000, &error);
  ASSERT_TRUE(first.has_value() && second.has_value()) << error;
  EXPECT_NE(first->ticket, second->ticket);
  EXPECT_NE(first->nonce, second->nonce);
  auto issued = challenges.Take(first->ticket);
  ASSERT_TRUE(issued.has_value());
  EXPECT_EQ(issued->nonce, first->nonce);
  EXPECT_FALSE(challenges.Take(first->ticket).has_value());
  EXPECT_TRUE(challenges.Take(second->ticket).has_value());
}

TEST(UcxAddressServer, APortInUseIsInvalidParams) {
  ChallengeBook challenges;
  const ucx_wire::NodeAddress a{"a", "", ""};
  auto first = UcxAddressServer::Start("127.0.0.1", 0, a, &challenges);
  ASSERT_TRUE(first.ok());
  // SO_REUSEADDR does not let a second listener bind a listening port.
  auto second = UcxAddressServer::Start("127.0.0.1", (*first)->port(), a, &challenges);
  EXPECT_EQ(second.error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(UcxAddressServer::Start("not-an-ip", 0, a, &challenges).error(),
            ErrorCode::INVALID_PARAMS);
}

TEST(UcxAddressServer, FetchSaysWhyItFailed) {
  std::string error;
  EXPECT_FALSE(FetchUcxNodeAddress("no port", 1000, &error).has_value());
  EXPECT_NE(error.find("bad endpoint"), std::string::npos) << error;

  int closed = ListenTcp("127.0.0.1", 0, 1);
  ASSERT_GE(closed, 0);
  const uint16_t port = BoundPort(closed);
  CloseFd(closed);
  EXPECT_FALSE(FetchUcxNodeAddress("127.0.0.1:" + std::to_string(port), 1000, &error));
  EXPECT_NE(error.find("cannot reach"), std::string::npos) << error;

  // A port that answers something else, then closes.
  UniqueFd other(ListenTcp("127.0.0.1", 0, 1));
  ASSERT_TRUE(other.valid());
  const std::string endpoint = "127.0.0.1:" + std::to_string(BoundPort(other.get()));
  std::thread answer([&] {
    ASSERT_TRUE(WaitFd(other.get(), POLLIN, 5000));
    UniqueFd conn(::accept4(other.get(), nullptr, nullptr, SOCK_CLOEXEC));
    SendAll(conn.get(), "HTTP/1.0 200 OK\r\n\r\n", 1000);
  });
  EXPECT_FALSE(FetchUcxNodeAddress(endpoint, 5000, &error).has_value());
  answer.join();
  EXPECT_NE(error.find("sent no worker address"), std::string::npos) << error;
}

}  // namespace
}  // namespace shelfmark
