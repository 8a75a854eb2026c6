// Node against the real master service: mount, unmount on Stop, remount
// after the master restarts (a fresh, empty directory on the same port).
#include "control/node.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "control/rpc_server.h"
#include "directory/directory.h"
#include "transport/loopback_engine.h"

namespace shelfmark {
namespace {

// A master: a Directory served on 127.0.0.1:port (0: any free port).
struct Master {
  explicit Master(uint16_t port) {
    DirectoryOptions d;
    d.start_background_thread = false;
    directory = std::make_unique<Directory>(d);
    RpcServerOptions r;
    r.bind_address = "127.0.0.1";
    r.port = port;
    server = std::make_unique<RpcServer>(*directory, nullptr, r);
    auto bound = server->Start();
    EXPECT_TRUE(bound.ok());
    this->port = bound.ok() ? *bound : 0;
  }
  std::unique_ptr<Directory> directory;
  std::unique_ptr<RpcServer> server;
  uint16_t port = 0;
};

// Counts on_mounted calls; waits for a given count.
struct MountWatch {
  std::mutex mu;
  std::condition_variable cv;
  int mounts = 0;
  void Mounted() {
    std::lock_guard<std::mutex> lock(mu);
    ++mounts;
    cv.notify_all();
  }
  void WaitFor(int n) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return mounts >= n; });
  }
};

NodeOptions Options(uint16_t port, MountWatch* watch) {
  NodeOptions o;
  o.master = "127.0.0.1:" + std::to_string(port);
  o.segment_size = 1 << 20;
  o.segment_name = "node-test";
  o.ping_interval_ms = 20;
  o.retry_interval_ms = 20;
  o.on_mounted = [watch](const Segment&) { watch->Mounted(); };
  return o;
}

TEST(NodeTest, MountsThenUnmountsOnStop) {
  Master master(0);
  LoopbackEngine engine(TransportOptions{});
  MountWatch watch;
  auto node = Node::Create(Options(master.port, &watch), &engine);
  ASSERT_TRUE(node.ok());
  const Segment& s = (*node)->segment();
  EXPECT_EQ(s.size, 1u << 20);
  EXPECT_EQ(s.protocol, "loopback");
  EXPECT_EQ(s.endpoint, engine.endpoint());
  EXPECT_EQ(s.base, reinterpret_cast<uint64_t>((*node)->memory()));
  EXPECT_FALSE(s.rkey.empty());
  ErrorCode unmounted = ErrorCode::INTERNAL_ERROR;
  std::thread loop([&] { unmounted = (*node)->Run(); });
  watch.WaitFor(1);
  EXPECT_TRUE((*node)->mounted());
  EXPECT_EQ(master.directory->Stats().segment_count, 1u);
  (*node)->Stop();
  loop.join();
  EXPECT_EQ(unmounted, ErrorCode::OK);
  EXPECT_FALSE((*node)->mounted());
  EXPECT_EQ(master.directory->Stats().segment_count, 0u);
}

TEST(NodeTest, RemountsAfterTheMasterRestarts) {
  auto master = std::make_unique<Master>(0);
  const uint16_t port = master->port;
  LoopbackEngine engine(TransportOptions{});
  MountWatch watch;
  auto node = Node::Create(Options(port, &watch), &engine);
  ASSERT_TRUE(node.ok());
  std::thread loop([&] { (void)(*node)->Run(); });
  watch.WaitFor(1);
  master.reset();                          // the master goes away...
  master = std::make_unique<Master>(port);  // ...and comes back empty
  ASSERT_EQ(master->port, port);
  watch.WaitFor(2);
  EXPECT_GE((*node)->counters().remounts, 1u);
  EXPECT_EQ(master->directory->Stats().segment_count, 1u);
  (*node)->Stop();
  loop.join();
  EXPECT_EQ(master->directory->Stats().segment_count, 0u);
}

TEST(NodeTest, StopBeforeTheMasterAnswersReturns) {
  LoopbackEngine engine(TransportOptions{});
  MountWatch watch;
  // Port 1 on loopback: nothing listens, mounts fail and are retried.
  auto node = Node::Create(Options(1, &watch), &engine);
  ASSERT_TRUE(node.ok());
  std::thread loop([&] { EXPECT_EQ((*node)->Run(), ErrorCode::OK); });
  (*node)->Stop();
  loop.join();
  EXPECT_EQ((*node)->counters().mounts, 0u);
}

TEST(NodeTest, CreateRejectsBadOptions) {
  LoopbackEngine engine(TransportOptions{});
  MountWatch watch;
  NodeOptions o = Options(1, &watch);
  o.segment_size = 0;
  EXPECT_EQ(Node::Create(o, &engine).error(), ErrorCode::INVALID_PARAMS);
  o = Options(1, &watch);
  o.master = "nohost";
  EXPECT_EQ(Node::Create(o, &engine).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(Node::Create(Options(1, &watch), nullptr).error(), ErrorCode::INVALID_PARAMS);
}

}  // namespace
}  // namespace shelfmark
