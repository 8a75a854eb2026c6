// DRAM overflow onto the SSD tier (issue 17) across real processes: a
// shelfmark-master with --enable_offload and one shelfmark-node (UCX on
// 127.0.0.1, a 16 MiB segment, pings every 100 ms: the node offloads after
// each ping) with an SSD store, over both backends. A burst of 1 MiB puts
// through the client library, far above DRAM, then:
//  - Burst: an empty store. Every put is acknowledged (puts answered
//    NO_AVAILABLE_HANDLE are retried while eviction waits for SSD copies);
//    every acknowledged object reads back byte-exact right after the burst
//    and, once the offload is done, from its LOCAL_DISK replica alone; the
//    master never evicted an object without a copy.
//  - A store too small for one object (its byte limit below the object
//    size): no copy can be made; the node says so (NotifyOffloadFailure)
//    and the master evicts those objects without a copy, so puts keep being
//    accepted (none refused once retried for a bounded time); what is gone
//    is exactly what the master counts as evicted without a copy.
//  - A full store (its key limit: it evicts its oldest objects to take new
//    ones), with --offload_force_evict (and a queue limit of 2, so most
//    eviction candidates find the node's queue full and are dropped without
//    a copy) and without it. An acknowledged object is either served
//    byte-exact or gone, and the gone are accounted for: no more than the
//    SSD evictions the node reported plus the evictions without a copy the
//    master counted (none without --offload_force_evict). Every LOCAL_DISK
//    replica the master lists reads back byte-exact from the store (nothing
//    half-written is served).
//  - Promotion on hit: after the burst, an object on SSD only, read three
//    times through its node (--promote_after_hits=3), gets a COMPLETE MEMORY
//    replica again; the next get is served by it (the node's SSD read count
//    does not move) byte-exact, and both sides count one promotion.
// Every wait is a condition with a deadline (testing/wait_for.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/tier_cluster.h"

namespace shelfmark {
namespace {

using testing::BurstResult;
using testing::HasComplete;
using testing::kBurstObjects;
using testing::kObjectBytes;
using testing::kSegmentBytes;
using testing::kWaitMs;

class TierProcessTest : public testing::TierClusterTest {
 protected:
  // A full store (key limit 8, half of DRAM: it evicts its oldest objects)
  // after a burst of 2x DRAM, puts retried for 200 ms: a refused put leaves
  // no object; acknowledged objects are served byte-exact or gone, the gone
  // no more than the store's evictions plus the master's evictions without
  // a copy; every listed LOCAL_DISK replica reads back byte-exact.
  // Returns the burst's acknowledged and refused puts.
  BurstResult FullStoreBurst(const std::vector<std::string>& master_flags,
                             const std::vector<std::string>& node_flags = {}) {
    BurstResult burst;
    EXPECT_NO_FATAL_FAILURE(
        StartCluster(master_flags,
                     {std::string(kEnvTotalKeysLimit) + "=8",
                      std::string(kEnvTotalSizeLimit) + "=64M"},
                     node_flags));
    if (HasFatalFailure()) return burst;
    burst = Burst(2 * static_cast<int>(kSegmentBytes / kObjectBytes), 200);
    for (const std::string& key : burst.refused) {
      EXPECT_EQ(master_client_->Stat("", key).error(), ErrorCode::OBJECT_NOT_FOUND) << key;
    }
    EXPECT_TRUE(WaitSettled()) << "offload did not settle: " << settle_state_;
    const int gone = ServedOrGone(burst.acknowledged);
    const double disk_evictions = NodeMetric("shelfmark_node_disk_evictions_total");
    const double without_copy = MasterMetric("shelfmark_master_evicted_without_copy_total");
    EXPECT_LE(gone, disk_evictions + without_copy);
    EXPECT_GT(DiskCopiesExact(burst.acknowledged), 0);
    std::fprintf(stderr,
                 "%s: %zu acknowledged, %zu refused, %d gone, %.0f SSD evictions, %.0f evicted "
                 "without a copy, %.0f evicted from DRAM; settled: %s\n",
                 GetParam().c_str(), burst.acknowledged.size(), burst.refused.size(), gone,
                 disk_evictions, without_copy,
                 MasterMetric("shelfmark_master_evicted_objects_total"), settle_state_.c_str());
    return burst;
  }

};

TEST_P(TierProcessTest, BurstAboveDramLandsOnSsdWithNothingLost) {
  ASSERT_NO_FATAL_FAILURE(StartCluster({}, {}));
  const BurstResult burst = Burst(kBurstObjects, 20'000);
  EXPECT_TRUE(burst.refused.empty()) << burst.refused.size() << " puts refused";
  EXPECT_EQ(ServedOrGone(burst.acknowledged), 0) << "acknowledged objects lost";
  ASSERT_TRUE(testing::WaitFor([&] {
    for (const std::string& key : burst.acknowledged) {
      if (!HasComplete(Replicas(key), ReplicaType::LOCAL_DISK)) return false;
    }
    return true;
  }, kWaitMs)) << "not every acknowledged object reached the SSD";
  EXPECT_EQ(DiskCopiesExact(burst.acknowledged), static_cast<int>(burst.acknowledged.size()));
  EXPECT_GT(MasterMetric("shelfmark_master_evicted_objects_total"), 0) << "DRAM never overflowed";
  EXPECT_EQ(MasterMetric("shelfmark_master_evicted_without_copy_total"), 0);
  std::fprintf(stderr, "%s: %zu acknowledged, %llu NO_AVAILABLE_HANDLE retries\n",
               GetParam().c_str(), burst.acknowledged.size(),
               static_cast<unsigned long long>(burst.retries));
}

TEST_P(TierProcessTest, StoreThatTakesNothingNeverBlocksPuts) {
  ASSERT_NO_FATAL_FAILURE(StartCluster({}, {std::string(kEnvTotalSizeLimit) + "=512K"}));
  const BurstResult burst = Burst(3 * static_cast<int>(kSegmentBytes / kObjectBytes), 20'000);
  EXPECT_TRUE(burst.refused.empty()) << burst.refused.size() << " puts refused";
  EXPECT_GT(NodeMetric("shelfmark_node_offload_failures_reported_total"), 0)
      << "no failed copy was reported";
  EXPECT_GT(MasterMetric("shelfmark_master_offload_failures_total"), 0);
  // The master's background pass may still evict after the burst (usage
  // above the high watermark): what is gone is compared with the counters
  // of a window in which they did not move.
  double without_copy = 0, evicted = 0;
  int gone = -1;
  ASSERT_TRUE(testing::WaitFor([&] {
    without_copy = MasterMetric("shelfmark_master_evicted_without_copy_total");
    evicted = MasterMetric("shelfmark_master_evicted_objects_total");
    gone = ServedOrGone(burst.acknowledged);
    return MasterMetric("shelfmark_master_evicted_objects_total") == evicted;
  }, kWaitMs)) << "the master kept evicting";
  EXPECT_GT(without_copy, 0);
  EXPECT_EQ(evicted, without_copy);
  EXPECT_EQ(gone, without_copy);
}

TEST_P(TierProcessTest, FullStoreWithoutForceEvictLosesOnlyWhatTheStoreEvicts) {
  FullStoreBurst({});
  EXPECT_GT(NodeMetric("shelfmark_node_disk_evictions_total"), 0) << "the store never filled";
  EXPECT_EQ(MasterMetric("shelfmark_master_evicted_without_copy_total"), 0);
}

TEST_P(TierProcessTest, FullStoreWithForceEvictDropsAndCountsWhatCannotBeCopied) {
  // Force drops what a full offload queue cannot take: a node that pulls its
  // tasks only every 2 s lets the queue (2 tasks) fill during the burst.
  const BurstResult burst = FullStoreBurst(
      {"--offload_force_evict=true", "--offloading_queue_limit=2", "--eviction_ratio=0.5"},
      {"--offload_poll_interval_ms=2000"});
  EXPECT_TRUE(burst.refused.empty()) << burst.refused.size() << " puts refused";
  EXPECT_GT(MasterMetric("shelfmark_master_evicted_without_copy_total"), 0);
}

TEST_P(TierProcessTest, AnSsdObjectReadOftenIsPromotedBackToDram) {
  ASSERT_NO_FATAL_FAILURE(StartCluster({}, {}, {"--promote_after_hits=3"}));
  const BurstResult burst = Burst(kBurstObjects, 20'000);
  ASSERT_TRUE(burst.refused.empty());
  ASSERT_TRUE(WaitSettled()) << "offload did not settle: " << settle_state_;
  // Room under the eviction watermark for the copy: drop the newest objects.
  for (size_t i = burst.acknowledged.size() - 4; i < burst.acknowledged.size(); ++i) {
    ASSERT_EQ(client_->Remove("", burst.acknowledged[i], true), ErrorCode::OK);
  }
  std::string key;
  for (const std::string& k : burst.acknowledged) {
    const auto replicas = Replicas(k);
    if (!replicas.empty() && !HasComplete(replicas, ReplicaType::MEMORY)) {
      key = k;
      break;
    }
  }
  ASSERT_FALSE(key.empty()) << "no object was left on SSD only";
  GetOptions fresh;
  fresh.use_location_cache = false;
  for (int i = 0; i < 3; ++i) {
    auto got = client_->Get("", key, fresh);
    ASSERT_TRUE(got.ok()) << ErrorCodeName(got.error());
    EXPECT_TRUE(*got == LoadValue(key, kObjectBytes)) << "wrong bytes from SSD";
  }
  ASSERT_TRUE(testing::WaitFor([&] { return HasComplete(Replicas(key), ReplicaType::MEMORY); },
                               kWaitMs))
      << key << " was not promoted";
  EXPECT_TRUE(HasComplete(Replicas(key), ReplicaType::LOCAL_DISK)) << "the SSD copy stays";
  const double disk_reads = NodeMetric("shelfmark_node_disk_requests_total");
  auto got = client_->Get("", key, fresh);
  ASSERT_TRUE(got.ok()) << ErrorCodeName(got.error());
  EXPECT_TRUE(*got == LoadValue(key, kObjectBytes)) << "wrong bytes from the promoted copy";
  EXPECT_EQ(NodeMetric("shelfmark_node_disk_requests_total"), disk_reads)
      << "the get after promotion went to the SSD";
  EXPECT_EQ(NodeMetric("shelfmark_node_promoted_total"), 1);
  EXPECT_EQ(MasterMetric("shelfmark_master_promoted_total"), 1);
}

INSTANTIATE_TEST_SUITE_P(Backends, TierProcessTest, testing::SsdBackends(),
                         testing::SsdBackendName);

}  // namespace
}  // namespace shelfmark
