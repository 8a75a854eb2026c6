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
//    size): no copy can be made, so nothing is evicted and puts are refused
//    with NO_AVAILABLE_HANDLE once DRAM is full; a refused put leaves no
//    object; every acknowledged object reads back byte-exact.
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
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "client/client.h"
#include "client/object_load.h"
#include "rpc/master_client.h"
#include "ssdstore/storage_config.h"
#include "testing/process_util.h"
#include "testing/temp_dir.h"
#include "tests/ssd_backends.h"
#include "tests/ucx_client.h"

namespace shelfmark {
namespace {

using testing::ChildProcess;
using testing::ReadFile;

constexpr int kStartMs = 30'000;
constexpr int kWaitMs = 30'000;
constexpr uint64_t kSegmentBytes = 16ull << 20;
constexpr uint64_t kObjectBytes = 1ull << 20;
constexpr int kBurstObjects = 48;  // 3x the segment
const std::string kPrefix = "tier";

bool HasComplete(const std::vector<ReplicaDescriptor>& replicas, ReplicaType type) {
  for (const ReplicaDescriptor& r : replicas) {
    if (r.type == type && r.status == ReplicaStatus::COMPLETE) return true;
  }
  return false;
}

struct BurstResult {
  std::vector<std::string> acknowledged;
  std::vector<std::string> refused;  // NO_AVAILABLE_HANDLE after the retries
  uint64_t retries = 0;
};

class TierProcessTest : public ::testing::TestWithParam<std::string> {
 protected:
  void TearDown() override {
    client_.reset();
    master_client_.reset();
    node_.reset();
    master_.reset();
    // A failed test shows the processes' logs (the directory goes with them).
    if (HasFailure()) std::fprintf(stderr, "%s", testing::LogTails(dir_.path(), ".err").c_str());
  }

  // The master (offload on, short read leases, `master_flags`), the node with
  // an empty store of the test's backend (`store_env`: more MOONCAKE_*
  // variables) and the client.
  void StartCluster(const std::vector<std::string>& master_flags,
                    const std::vector<std::string>& store_env,
                    const std::vector<std::string>& node_flags = {}) {
    ASSERT_FALSE(dir_.path().empty());
    const std::string master_err = dir_.Join("master.err");
    std::vector<std::string> args = {"--enable_offload=true", "--default_kv_lease_ttl=500"};
    args.insert(args.end(), master_flags.begin(), master_flags.end());
    testing::ServicePorts ports;
    master_ = testing::StartMaster(SHELFMARK_MASTER_BIN, args, master_err, &ports, kStartMs);
    ASSERT_NE(master_, nullptr) << ReadFile(master_err);
    rpc_ = ports.rpc;
    http_ = ports.http;
    master_client_ = std::make_unique<MasterClient>(MasterClientOptions{Master()});

    const std::string store = dir_.Join("ssd");
    std::filesystem::create_directories(store);
    std::vector<std::string> node_args = {std::string(kEnvStoragePath) + "=" + store,
                                          std::string(kEnvStorageBackend) + "=" + GetParam()};
    node_args.insert(node_args.end(), store_env.begin(), store_env.end());
    if (GetParam() == "offset_allocator_storage_backend" && store_env.empty()) {
      // Else it preallocates 80% of the free space.
      node_args.push_back(std::string(kEnvTotalSizeLimit) + "=256M");
    }
    for (const std::string& a :
         {std::string(SHELFMARK_NODE_BIN), "--master=" + Master(),
          "--segment_size=" + std::to_string(kSegmentBytes), std::string("--protocol=ucx"),
          std::string("--listen_ip=127.0.0.1"), std::string("--metrics_port=0"),
          std::string("--ping_interval_ms=100")}) {
      node_args.push_back(a);
    }
    node_args.insert(node_args.end(), node_flags.begin(), node_flags.end());
    const std::string node_err = dir_.Join("node.err");
    node_ = std::make_unique<ChildProcess>("/usr/bin/env", node_args, node_err);
    ASSERT_TRUE(testing::WaitForText(node_err, " protocol ucx endpoint 127.0.0.1:", kStartMs))
        << ReadFile(node_err);
    testing::NodeReady ready;
    ASSERT_TRUE(testing::ParseNodeReady(ReadFile(node_err), &ready)) << ReadFile(node_err);
    node_http_ = ready.metrics_port;
    ClientOptions options;
    options.transfer_timeout_ms = 3000;
    client_ = testing::MakeUcxClient(Master(), options);
    ASSERT_NE(client_, nullptr);
  }

  std::string Master() const { return "127.0.0.1:" + std::to_string(rpc_); }
  double MasterMetric(const std::string& name) const { return testing::ScrapeMetric(http_, name); }
  double NodeMetric(const std::string& name) const {
    return testing::ScrapeMetric(node_http_, name);
  }

  // Puts `count` objects of 1 MiB (client/object_load.h's keys and bytes) as
  // fast as they are acknowledged, each retried for up to `retry_ms` while it
  // is answered NO_AVAILABLE_HANDLE; any other answer fails the test.
  BurstResult Burst(int count, int64_t retry_ms) {
    BurstResult result;
    PutOptions options;
    options.compute_checksum = true;
    for (int i = 0; i < count; ++i) {
      const std::string key = LoadKey(kPrefix, static_cast<uint64_t>(i));
      const std::string value = LoadValue(key, kObjectBytes);
      const ErrorCode rc =
          PutRetryingWhileFull(*client_, "", key, value, options, retry_ms, &result.retries);
      if (rc == ErrorCode::OK) {
        result.acknowledged.push_back(key);
      } else {
        EXPECT_EQ(rc, ErrorCode::NO_AVAILABLE_HANDLE) << key;
        result.refused.push_back(key);
      }
    }
    return result;
  }

  std::vector<ReplicaDescriptor> Replicas(const std::string& key) {
    auto info = master_client_->Stat("", key);
    return info.ok() ? info->replicas : std::vector<ReplicaDescriptor>{};
  }

  // Gets every key afresh from the master: each is served byte-exact or, at
  // most, gone (OBJECT_NOT_FOUND); any other answer or wrong bytes fail the
  // test. Returns how many are gone.
  int ServedOrGone(const std::vector<std::string>& keys) {
    GetOptions fresh;
    fresh.use_location_cache = false;
    int gone = 0;
    for (const std::string& key : keys) {
      auto got = client_->Get("", key, fresh);
      if (!got.ok() && got.error() == ErrorCode::OBJECT_NOT_FOUND) {
        ++gone;
        continue;
      }
      EXPECT_TRUE(got.ok()) << key << ": " << ErrorCodeName(got.error());
      if (got.ok()) {
        EXPECT_TRUE(*got == LoadValue(key, kObjectBytes)) << key << ": wrong bytes";
      }
    }
    return gone;
  }

  // Reads every key that the master lists with a COMPLETE LOCAL_DISK replica
  // through that replica alone (no MEMORY fallback) and checks the bytes.
  // Returns how many were read so.
  int DiskCopiesExact(const std::vector<std::string>& keys) {
    GetOptions fresh;
    fresh.use_location_cache = false;
    std::vector<char> buffer(kObjectBytes);
    EXPECT_EQ(client_->RegisterBuffer(buffer.data(), buffer.size()), ErrorCode::OK);
    int read = 0;
    for (const std::string& key : keys) {
      auto where = client_->Locate("", key, fresh);
      if (!where.ok()) continue;
      std::vector<ReplicaDescriptor> disk;
      for (const ReplicaDescriptor& r : where->info.replicas) {
        if (r.type == ReplicaType::LOCAL_DISK && r.status == ReplicaStatus::COMPLETE) {
          disk.push_back(r);
        }
      }
      if (disk.empty()) continue;
      where->info.replicas = disk;
      const ErrorCode rc = client_->Read(*where, buffer.data(), buffer.size());
      // A full store may evict the copy between the lookup and the read.
      if (rc == ErrorCode::OBJECT_NOT_FOUND) continue;
      EXPECT_EQ(rc, ErrorCode::OK) << key << " from LOCAL_DISK";
      if (rc != ErrorCode::OK) continue;
      EXPECT_TRUE(std::string_view(buffer.data(), buffer.size()) == LoadValue(key, kObjectBytes))
          << key << ": wrong bytes from LOCAL_DISK";
      ++read;
    }
    client_->UnregisterBuffer(buffer.data());
    return read;
  }

  // The offload work is done and every SSD eviction is reported: the
  // master's queue is empty, the node has no task in flight, and its store
  // holds what it offloaded less what it reported evicted.
  bool WaitSettled() {
    return testing::WaitFor([&] {
      const double offloaded = NodeMetric("shelfmark_node_offloaded_objects_total");
      const double evicted = NodeMetric("shelfmark_node_disk_evictions_total");
      const double stored = NodeMetric("shelfmark_node_disk_objects");
      return MasterMetric("shelfmark_master_offload_queued_tasks") == 0 &&
             NodeMetric("shelfmark_node_offload_inflight_tasks") == 0 && offloaded >= 0 &&
             evicted >= 0 && stored >= 0 && stored + evicted == offloaded;
    }, kWaitMs);
  }

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
    EXPECT_TRUE(WaitSettled()) << "offload did not settle";
    const int gone = ServedOrGone(burst.acknowledged);
    const double disk_evictions = NodeMetric("shelfmark_node_disk_evictions_total");
    const double without_copy = MasterMetric("shelfmark_master_evicted_without_copy_total");
    EXPECT_LE(gone, disk_evictions + without_copy);
    EXPECT_GT(DiskCopiesExact(burst.acknowledged), 0);
    std::fprintf(stderr,
                 "%s: %zu acknowledged, %zu refused, %d gone, %.0f SSD evictions, %.0f evicted "
                 "without a copy, %.0f evicted from DRAM\n",
                 GetParam().c_str(), burst.acknowledged.size(), burst.refused.size(), gone,
                 disk_evictions, without_copy,
                 MasterMetric("shelfmark_master_evicted_objects_total"));
    return burst;
  }

  testing::TempDir dir_{"tier_process"};  // logs and the store
  uint16_t rpc_ = 0, http_ = 0, node_http_ = 0;
  std::unique_ptr<ChildProcess> master_;
  std::unique_ptr<ChildProcess> node_;
  std::unique_ptr<MasterClient> master_client_;
  std::unique_ptr<Client> client_;
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

TEST_P(TierProcessTest, StoreThatTakesNothingRefusesPutsOnceDramIsFull) {
  ASSERT_NO_FATAL_FAILURE(StartCluster({}, {std::string(kEnvTotalSizeLimit) + "=512K"}));
  const BurstResult burst = Burst(2 * static_cast<int>(kSegmentBytes / kObjectBytes), 200);
  EXPECT_FALSE(burst.refused.empty()) << "DRAM never filled";
  EXPECT_LE(burst.acknowledged.size(), kSegmentBytes / kObjectBytes);
  EXPECT_GT(NodeMetric("shelfmark_node_offload_failures_total"), 0) << "no copy was refused";
  for (const std::string& key : burst.refused) {
    EXPECT_EQ(master_client_->Stat("", key).error(), ErrorCode::OBJECT_NOT_FOUND) << key;
  }
  EXPECT_EQ(ServedOrGone(burst.acknowledged), 0) << "acknowledged objects lost";
  EXPECT_EQ(MasterMetric("shelfmark_master_evicted_objects_total"), 0);
  EXPECT_EQ(MasterMetric("shelfmark_master_evicted_without_copy_total"), 0);
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
  ASSERT_TRUE(WaitSettled()) << "offload did not settle";
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
