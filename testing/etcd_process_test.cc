#include "testing/etcd_process.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "testing/process_util.h"
#include "testing/wait_for.h"

namespace shelfmark::testing {
namespace {

constexpr int kDeadlineMs = 30'000;

bool Healthy(uint16_t port) {
  std::string body;
  return HttpGet(port, "/health", &body) == 200 && body.find("\"true\"") != std::string::npos;
}

TEST(EtcdProcess, StartsStopsAndRestartsOnTheSamePort) {
  EtcdProcess etcd;
  ASSERT_TRUE(etcd.Start()) << etcd.StartFailure();
  EXPECT_NE(etcd.client_port(), 2379);  // never the system etcd's port
  EXPECT_EQ(etcd.endpoint(), "127.0.0.1:" + std::to_string(etcd.client_port()));
  const uint16_t port = etcd.client_port();
  EXPECT_TRUE(etcd.Stop());
  EXPECT_FALSE(etcd.running());
  std::string body;
  EXPECT_TRUE(WaitFor([&] { return HttpGet(port, "/health", &body) < 0; }, kDeadlineMs));
  ASSERT_TRUE(etcd.Start()) << etcd.StartFailure();  // same data dir: a restart
  EXPECT_EQ(etcd.client_port(), port);
  EXPECT_TRUE(Healthy(port));
  ASSERT_TRUE(etcd.Restart()) << etcd.StartFailure();
  EXPECT_TRUE(Healthy(port));
}

TEST(EtcdProcess, KilledAndStartedAgainAnswersOnTheSamePort) {
  EtcdProcess etcd;
  ASSERT_TRUE(etcd.Start()) << etcd.StartFailure();
  const uint16_t port = etcd.client_port();
  EXPECT_TRUE(etcd.Kill());
  EXPECT_FALSE(etcd.running());
  EXPECT_FALSE(etcd.Kill());
  std::string body;
  EXPECT_LT(HttpGet(port, "/health", &body), 0);  // SIGKILL was waited for
  ASSERT_TRUE(etcd.Start()) << etcd.StartFailure();
  EXPECT_TRUE(Healthy(port));
}

// Another local address besides loopback: endpoint() names it.
TEST(EtcdProcess, ListensOnAClientHost) {
  EtcdProcess etcd("127.0.0.2");
  ASSERT_TRUE(etcd.Start()) << etcd.StartFailure();
  EXPECT_EQ(etcd.endpoint(), "127.0.0.2:" + std::to_string(etcd.client_port()));
  EXPECT_TRUE(Healthy(etcd.client_port()));  // loopback still answers
}

TEST(EtcdProcess, PauseAndResume) {
  EtcdProcess etcd;
  ASSERT_TRUE(etcd.Start()) << etcd.StartFailure();
  etcd.Pause();
  // A paused etcd accepts connections (the kernel does) but answers nothing.
  const int fd = ConnectLoopback(etcd.client_port());
  ASSERT_GE(fd, 0);
  EXPECT_TRUE(PeerStillWaiting(fd));
  close(fd);
  etcd.Resume();
  EXPECT_TRUE(WaitFor([&] { return Healthy(etcd.client_port()); }, kDeadlineMs));
  // Stop works on a paused process too.
  etcd.Pause();
  EXPECT_TRUE(etcd.Stop());
}

}  // namespace
}  // namespace shelfmark::testing
