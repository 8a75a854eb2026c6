// DiskReporter against a real master service (an RpcServer over a real
// Directory on a loopback port): lost records are dropped at the master
// before Lost() returns, nothing is sent before SetReady, and a key whose
// offload batch is held keeps its eviction until the batch is released;
// pending() counts what the master has not answered.
#include "node/disk_reporter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "master/rpc_server_test_util.h"
#include "testing/wait_for.h"

namespace shelfmark {
namespace {

constexpr int kWaitMs = 10'000;

class DiskReporterTest : public RpcServerFixture {
 protected:
  // The node's SSD store at the master, holding k0 .. k<n-1> (SSD only).
  void ReportStored(int n) {
    ASSERT_EQ(dir_->MountLocalDisk(node_, true, "127.0.0.1:9"), ErrorCode::OK);
    std::vector<OffloadedObject> items;
    for (int i = 0; i < n; ++i) {
      items.push_back({"t", "k" + std::to_string(i), {1, 4096L * i, 2, 100, "127.0.0.1:9"}});
    }
    auto codes = dir_->NotifyOffloadSuccess(node_, items);
    ASSERT_TRUE(codes.ok());
    for (ErrorCode c : *codes) ASSERT_EQ(c, ErrorCode::OK);
  }
  bool Listed(const std::string& key) { return dir_->Stat("t", key).ok(); }
  DiskReporterOptions Options(int64_t lost_wait_ms = 5'000) {
    DiskReporterOptions o;
    o.master = ClientOptions(node_);
    o.retry_interval_ms = 50;
    o.lost_wait_ms = lost_wait_ms;
    return o;
  }

  const UUID node_ = UUID::Generate();
};

TEST_F(DiskReporterTest, ALostRecordIsGoneAtTheMasterWhenLostReturns) {
  ASSERT_NO_FATAL_FAILURE(ReportStored(2));
  DiskReporter reporter(Options());
  reporter.SetReady(true);
  reporter.Lost("t", "k0");
  EXPECT_FALSE(Listed("k0"));
  EXPECT_TRUE(Listed("k1"));
  EXPECT_EQ(reporter.lost_sent(), 1u);
  reporter.Lost("", "absent");  // the master answers OBJECT_NOT_FOUND: settled too
  EXPECT_EQ(reporter.lost_sent(), 2u);
}

TEST_F(DiskReporterTest, NothingIsSentBeforeItIsReady) {
  ASSERT_NO_FATAL_FAILURE(ReportStored(1));
  DiskReporter reporter(Options(/*lost_wait_ms=*/50));
  reporter.Lost("t", "k0");  // gives up waiting: not ready
  EXPECT_TRUE(Listed("k0"));
  EXPECT_EQ(reporter.lost_sent(), 0u);
  EXPECT_EQ(reporter.pending(), 1u);
  reporter.SetReady(true);  // the queued report goes now
  EXPECT_TRUE(testing::WaitFor([&] { return !Listed("k0"); }, kWaitMs));
  EXPECT_TRUE(testing::WaitFor([&] { return reporter.pending() == 0; }, kWaitMs));
  EXPECT_EQ(reporter.lost_sent(), 1u);
}

// A key whose offload batch is written but not reported keeps its eviction
// (and is not reported lost: its new copy is on its way) until released.
TEST_F(DiskReporterTest, AHeldKeysEvictionWaitsForItsRelease) {
  ASSERT_NO_FATAL_FAILURE(ReportStored(3));
  DiskReporter reporter(Options());
  reporter.SetReady(true);
  reporter.Hold({{"t", "k1"}}, true);
  EXPECT_TRUE(reporter.Held("t", "k1"));
  reporter.Evicted("t", "k1");
  reporter.Evicted("t", "k2");
  ASSERT_TRUE(testing::WaitFor([&] { return !Listed("k2"); }, kWaitMs));
  EXPECT_TRUE(Listed("k1")) << "a held key's eviction was sent";
  EXPECT_TRUE(testing::WaitFor([&] { return reporter.pending() == 1; }, kWaitMs))
      << "pending: " << reporter.pending() << " (k1's eviction waits)";
  reporter.Lost("t", "k1");
  EXPECT_TRUE(Listed("k1"));
  reporter.Hold({{"t", "k1"}}, false);
  EXPECT_FALSE(reporter.Held("t", "k1"));
  EXPECT_TRUE(testing::WaitFor([&] { return !Listed("k1"); }, kWaitMs));
  EXPECT_TRUE(Listed("k0"));
  // The count moves when the answer is back, after the master dropped k1.
  EXPECT_TRUE(testing::WaitFor([&] { return reporter.evictions_sent() == 2u; }, kWaitMs))
      << "evictions sent: " << reporter.evictions_sent();
  EXPECT_EQ(reporter.pending(), 0u);
  EXPECT_EQ(reporter.lost_sent(), 0u);
}

}  // namespace
}  // namespace shelfmark
