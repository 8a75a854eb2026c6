#include "tests/netns_util.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace shelfmark::testing {
namespace {

// A TCP listener on 0.0.0.0:<any>; its port.
int Listen(int* fd) {
  *fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  EXPECT_EQ(bind(*fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_EQ(listen(*fd, 4), 0);
  socklen_t len = sizeof(addr);
  getsockname(*fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

TEST(NetNamespace, ProcessesInsideReachTheHostOverTheVeth) {
  const std::string why = NetNamespace::Unavailable();
  if (!why.empty()) GTEST_SKIP() << why;
  std::string error;
  auto a = NetNamespace::Create(1, &error);
  ASSERT_NE(a, nullptr) << error;
  auto b = NetNamespace::Create(2, &error);
  ASSERT_NE(b, nullptr) << error;
  EXPECT_NE(a->ip(), b->ip());
  std::string addrs;
  ASSERT_EQ(RunCommand({"ip", "-n", a->name(), "-4", "addr"}, &addrs), 0);
  EXPECT_NE(addrs.find(a->ip() + "/24"), std::string::npos) << addrs;
  int fd = -1;
  const int port = Listen(&fd);
  // From inside `a`, the host's end of a's veth is reachable; loopback of the
  // host is not (a has its own lo).
  std::vector<std::string> ok = a->Wrap(
      "bash", {"-c", "exec 3<>/dev/tcp/" + a->host_ip() + "/" + std::to_string(port)});
  ok.insert(ok.begin(), "ip");
  EXPECT_EQ(RunCommand(ok), 0);
  std::vector<std::string> lo =
      a->Wrap("bash", {"-c", "exec 3<>/dev/tcp/127.0.0.1/" + std::to_string(port)});
  lo.insert(lo.begin(), "ip");
  EXPECT_NE(RunCommand(lo), 0);
  close(fd);
  const std::string name = a->name();
  a.reset();
  std::string list;
  RunCommand({"ip", "netns", "list"}, &list);
  EXPECT_EQ(list.find(name + " "), std::string::npos) << "removed on destruction";
  EXPECT_EQ(list.find(name + "\n"), std::string::npos);
}

TEST(TestNetwork, NamespacesShareOneBridgeAndRouteToTheHost) {
  const std::string why = NetNamespace::Unavailable();
  if (!why.empty()) GTEST_SKIP() << why;
  std::string error;
  auto net = TestNetwork::Create(&error);
  ASSERT_NE(net, nullptr) << error;
  NetNamespace* a = net->Namespace(3, &error);
  ASSERT_NE(a, nullptr) << error;
  NetNamespace* b = net->Namespace(4, &error);
  ASSERT_NE(b, nullptr) << error;
  EXPECT_EQ(net->Namespace(3, &error), a) << "made once";
  std::string addrs;
  ASSERT_EQ(RunCommand({"ip", "-4", "addr", "show", "dev", net->bridge()}, &addrs), 0);
  EXPECT_NE(addrs.find(a->host_ip() + "/24"), std::string::npos) << addrs;
  EXPECT_NE(addrs.find(b->host_ip() + "/24"), std::string::npos) << addrs;
  // From inside `a`, b's host address is reachable (the default route).
  int fd = -1;
  const int port = Listen(&fd);
  std::vector<std::string> cmd = a->Wrap(
      "bash", {"-c", "exec 3<>/dev/tcp/" + b->host_ip() + "/" + std::to_string(port)});
  cmd.insert(cmd.begin(), "ip");
  EXPECT_EQ(RunCommand(cmd), 0);
  close(fd);
  const std::string bridge = net->bridge();
  net.reset();
  EXPECT_NE(RunCommand({"ip", "link", "show", bridge}), 0) << "bridge removed";
}

}  // namespace
}  // namespace shelfmark::testing
