// Real shelfmark-master and two shelfmark-node processes with SSD stores
// (UCX on 127.0.0.1, each node its own store directory), over both backends:
//  - objects put on node A, offloaded to its store and evicted from memory by
//    the master's own eviction are read back through A's LOCAL_DISK service
//    (A's shelfmark_node_disk_* counters count the reads and bytes);
//  - A restarted on the same store (SIGTERM with relaxed persistence, kill -9
//    after a relaxed checkpoint, kill -9 with strict persistence) still lists
//    and serves every object it had acknowledged;
//  - A killed with kill -9 in the middle of offloading, then restarted: every
//    object the master lists on A's disk reads back with the right bytes;
//  - A killed and restarted on the same port (a master with a minute's
//    client TTL): the new process's mount drops the old one's LOCAL_DISK
//    replicas at once, so no lookup names the dead process; keys removed
//    and put again (same size, other bytes) while it was down get none of
//    its old bytes from its re-report.
// Every wait is a bounded poll; nothing asserts on timing.
#include <signal.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "client/client.h"
#include "rpc/master_client.h"
#include "ssdstore/offset_checkpoint.h"
#include "ssdstore/storage_config.h"
#include "testing/process_util.h"
#include "testing/temp_dir.h"
#include "tests/ssd_backends.h"
#include "tests/ucx_client.h"
#include "transport/transport_test_util.h"

namespace shelfmark {
namespace {

using testing::ChildProcess;
using testing::ReadFile;
using testing::WaitForText;

constexpr int kStartMs = 30'000;
constexpr int kWaitMs = 30'000;
constexpr uint64_t kSegmentBytes = 32ull << 20;
const std::string kNodeA = "ssd-a";
const std::string kNodeB = "ssd-b";

// Test objects are "obj-<i>-<size>": the key alone gives the expected bytes.
std::string KeyOf(int i, size_t size) {
  return "obj-" + std::to_string(i) + "-" + std::to_string(size);
}

// The bytes of a test key; "" when the key is not one of ours.
std::string ValueOf(const std::string& key) {
  int i = 0;
  size_t size = 0;
  if (std::sscanf(key.c_str(), "obj-%d-%zu", &i, &size) != 2) return "";
  return testing::TestPattern(size, static_cast<char>(i % 97));
}

// `count` keys cycling through sizes from 1 byte to 1 MiB.
std::vector<std::string> MixedKeys(int count) {
  static constexpr size_t kSizes[] = {1,     7,      512,     4095,    4096,
                                      4097,  65536,  100'003, 262'144, size_t{1} << 20};
  std::vector<std::string> keys;
  for (int i = 0; i < count; ++i) keys.push_back(KeyOf(i, kSizes[i % std::size(kSizes)]));
  return keys;
}

bool HasMemory(const std::vector<ReplicaDescriptor>& replicas) {
  for (const ReplicaDescriptor& r : replicas) {
    if (r.type == ReplicaType::MEMORY) return true;
  }
  return false;
}

bool OnDiskOf(const std::vector<ReplicaDescriptor>& replicas, const std::string& client_id) {
  for (const ReplicaDescriptor& r : replicas) {
    if (r.type == ReplicaType::LOCAL_DISK && r.disk.client_id.ToString() == client_id) return true;
  }
  return false;
}

// A shelfmark-node process with an SSD store.
struct NodeProcess {
  std::unique_ptr<ChildProcess> process;
  std::string client_id;  // as DiskDescriptor::client_id prints
  uint16_t metrics_port = 0;

  double Metric(const std::string& name) const {
    return testing::ScrapeMetric(metrics_port, name);
  }
};

class SsdProcessTest : public ::testing::TestWithParam<std::string> {
 protected:
  // Master with offload on, a client_ttl_ (2 s) client TTL, eviction of everything
  // evictable once half the memory is allocated; node B; the client.
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    const std::string err = dir_.Join("master.err");
    master_ = std::make_unique<ChildProcess>(
        SHELFMARK_MASTER_BIN,
        std::vector<std::string>{"--rpc_port=0", "--metrics_port=0", "--client_ttl=" + client_ttl_,
                                 "--enable_offload", "--eviction_high_watermark_ratio=0.5",
                                 "--eviction_ratio=1.0", "--default_kv_lease_ttl=2000"},
        err);
    testing::ServicePorts ports;
    ASSERT_TRUE(testing::WaitForServicePorts(err, kStartMs, &ports)) << ReadFile(err);
    rpc_ = ports.rpc;
    http_ = ports.http;
    master_client_ = std::make_unique<MasterClient>(MasterClientOptions{Master()});
    b_ = StartNode(kNodeB, "relaxed");
    ASSERT_FALSE(b_.client_id.empty());
    ClientOptions options;
    options.transfer_timeout_ms = 3000;
    client_ = testing::MakeUcxClient(Master(), options);
    ASSERT_NE(client_, nullptr);
  }

  void TearDown() override {
    client_.reset();
    master_client_.reset();
    a_.process.reset();
    b_.process.reset();
    master_.reset();
    // A failed test shows the processes' logs (the directory goes with them).
    if (HasFailure()) std::fprintf(stderr, "%s", testing::LogTails(dir_.path(), ".err").c_str());
  }

  std::string Master() const { return "127.0.0.1:" + std::to_string(rpc_); }
  std::string StoreDir(const std::string& node) const { return dir_.Join(node + ".ssd"); }

  // Starts a node named `name` on its store directory (kept across restarts)
  // with the test's backend and `persist_mode`; waits until it is mounted
  // (after its disk report). client_id is empty when it did not come up.
  NodeProcess StartNode(const std::string& name, const std::string& persist_mode,
                        const std::vector<std::string>& extra_flags = {}) {
    const std::string err = dir_.Join(name + "-" + std::to_string(++starts_) + ".err");
    std::filesystem::create_directories(StoreDir(name));
    auto env = [](std::string_view var, const std::string& value) {
      return std::string(var) + "=" + value;
    };
    NodeProcess node;
    std::vector<std::string> args = {
        env(kEnvStoragePath, StoreDir(name)), env(kEnvStorageBackend, GetParam()),
        env(kEnvPersistMode, persist_mode), env(kEnvPersistInterval, "5"),
        env(kEnvTotalSizeLimit, "64M"), SHELFMARK_NODE_BIN, "--master=" + Master(),
        "--segment_size=" + std::to_string(kSegmentBytes), "--protocol=ucx",
        "--listen_ip=127.0.0.1", "--segment_name=" + name, "--ping_interval_ms=300"};
    args.insert(args.end(), extra_flags.begin(), extra_flags.end());
    node.process = std::make_unique<ChildProcess>("/usr/bin/env", args, err);
    EXPECT_TRUE(WaitForText(err, " protocol ucx endpoint 127.0.0.1:", kStartMs)) << ReadFile(err);
    testing::NodeReady ready;
    if (!testing::ParseNodeReady(ReadFile(err), &ready)) {
      ADD_FAILURE() << "no ready lines from node " << name << ": " << ReadFile(err);
      return node;
    }
    node.client_id = ready.client_id;
    node.metrics_port = ready.metrics_port;
    return node;
  }

  // Every replica of `key` (any status) without granting a lease; empty when
  // the master does not know the key.
  std::vector<ReplicaDescriptor> Replicas(const std::string& key) {
    auto info = master_client_->Stat("", key);
    return info.ok() ? info->replicas : std::vector<ReplicaDescriptor>{};
  }

  // The test keys the master lists with a LOCAL_DISK replica on `node`.
  std::vector<std::string> ListedOnDisk(const NodeProcess& node) {
    auto keys = master_client_->ListKeys("", "obj-", 1 << 20);
    EXPECT_TRUE(keys.ok()) << ErrorCodeName(keys.error());
    std::vector<std::string> out;
    if (!keys.ok()) return out;
    for (const std::string& key : *keys) {
      if (OnDiskOf(Replicas(key), node.client_id)) out.push_back(key);
    }
    return out;
  }

  void PutOnA(const std::vector<std::string>& keys) {
    PutOptions options;
    options.config.preferred_segments = {kNodeA};
    for (const std::string& key : keys) {
      ASSERT_EQ(client_->Put("", key, ValueOf(key), options), ErrorCode::OK) << key;
    }
  }

  bool WaitOnDisk(const std::vector<std::string>& keys, const NodeProcess& node) {
    return testing::WaitFor([&] {
      for (const std::string& key : keys) {
        if (!OnDiskOf(Replicas(key), node.client_id)) return false;
      }
      return true;
    }, kWaitMs);
  }

  // Puts 1 MiB objects on node B until none of `keys` has a MEMORY replica
  // left: past the high watermark the master evicts every unleased MEMORY
  // replica (a full segment fails the put, which also triggers eviction).
  bool FillUntilEvicted(const std::vector<std::string>& keys) {
    PutOptions options;
    options.config.preferred_segments = {kNodeB};
    const std::string filler(1 << 20, 'f');
    int fills = 0;
    return testing::WaitFor([&] {
      client_->Put("", "fill-" + std::to_string(fills++), filler, options);
      for (const std::string& key : keys) {
        if (HasMemory(Replicas(key))) return false;
      }
      return true;
    }, kWaitMs);
  }

  // The old incarnation of a node is gone from the master: only B and the
  // new one are registered, and no test object keeps a MEMORY replica (they
  // were all on the old node's segment) or a LOCAL_DISK replica of it.
  bool WaitPurged(const std::string& old_client_id) {
    return testing::WaitFor([&] {
      if (testing::ScrapeMetric(http_, "shelfmark_master_clients") != 2) return false;
      auto keys = master_client_->ListKeys("", "obj-", 1 << 20);
      if (!keys.ok()) return false;
      for (const std::string& key : *keys) {
        auto replicas = Replicas(key);
        if (HasMemory(replicas) || OnDiskOf(replicas, old_client_id)) return false;
      }
      return true;
    }, kWaitMs);
  }

  // Gets every key (with `get`'s options) and checks the bytes, and that
  // `node`'s LOCAL_DISK service served exactly these reads.
  void ExpectReadsThroughDisk(const std::vector<std::string>& keys, const NodeProcess& node,
                              const GetOptions& get) {
    const double requests = node.Metric("shelfmark_node_disk_requests_total");
    const double bytes = node.Metric("shelfmark_node_disk_served_bytes_total");
    ASSERT_GE(requests, 0) << "no shelfmark_node_disk_requests_total counter";
    double expected_bytes = 0;
    for (const std::string& key : keys) {
      const std::string want = ValueOf(key);
      ASSERT_FALSE(want.empty()) << "not a test key: " << key;
      auto got = client_->Get("", key, get);
      ASSERT_TRUE(got.ok()) << key << ": " << ErrorCodeName(got.error());
      EXPECT_TRUE(*got == want) << key << ": wrong bytes (" << got->size() << " bytes)";
      expected_bytes += static_cast<double>(want.size());
    }
    EXPECT_EQ(node.Metric("shelfmark_node_disk_requests_total"),
              requests + static_cast<double>(keys.size()));
    EXPECT_EQ(node.Metric("shelfmark_node_disk_served_bytes_total"), bytes + expected_bytes);
    EXPECT_EQ(node.Metric("shelfmark_node_disk_errors_total"), 0);
  }

  // True when dir/kv_cache.meta decodes and lists every key.
  static bool CheckpointLists(const std::string& dir, const std::vector<std::string>& keys) {
    auto checkpoint = DecodeCheckpoint(ReadFile(dir + "/" + std::string(kCheckpointFileName)));
    if (!checkpoint.ok()) return false;
    std::set<std::string> listed;
    for (const CheckpointEntry& e : checkpoint->entries) listed.insert(e.key);
    for (const std::string& key : keys) {
      if (listed.count(key) == 0) return false;
    }
    return true;
  }

  bool IsOffsetBackend() const { return GetParam() == "offset_allocator_storage_backend"; }

  enum class Stop { kSigterm, kKillAfterCheckpoint, kKill };

  // Puts objects on A, waits until A acknowledged them all (LOCAL_DISK
  // replicas), stops A as `how` says, restarts it on the same store, and
  // checks that every acknowledged object is listed on the new A's disk and
  // reads back through its LOCAL_DISK service.
  void RestartKeepsAcknowledged(const std::string& persist_mode, Stop how) {
    a_ = StartNode(kNodeA, persist_mode);
    ASSERT_FALSE(a_.client_id.empty());
    const std::vector<std::string> keys = MixedKeys(30);
    ASSERT_NO_FATAL_FAILURE(PutOnA(keys));
    ASSERT_TRUE(WaitOnDisk(keys, a_)) << "not all objects offloaded to A";
    if (how == Stop::kKillAfterCheckpoint && IsOffsetBackend()) {
      // Relaxed: only what a checkpoint holds survives a crash; wait for the
      // periodic one (every 5 s) to cover the acknowledged objects.
      ASSERT_TRUE(testing::WaitFor([&] { return CheckpointLists(StoreDir(kNodeA), keys); }, kWaitMs));
    }
    const std::string old_id = a_.client_id;
    if (how == Stop::kSigterm) {
      a_.process->Signal(SIGTERM);
      ASSERT_EQ(a_.process->Wait(20'000), 0);
    } else {
      a_.process->Signal(SIGKILL);
      ASSERT_EQ(a_.process->Wait(20'000), 128 + SIGKILL);
    }
    a_ = StartNode(kNodeA, persist_mode);
    ASSERT_FALSE(a_.client_id.empty());
    ASSERT_NE(a_.client_id, old_id);
    EXPECT_GE(a_.Metric("shelfmark_node_disk_reported_objects_total"),
              static_cast<double>(keys.size()));
    ASSERT_TRUE(WaitPurged(old_id)) << "the killed A's replicas are still listed";
    const std::vector<std::string> listed = ListedOnDisk(a_);
    const std::set<std::string> listed_set(listed.begin(), listed.end());
    for (const std::string& key : keys) {
      EXPECT_EQ(listed_set.count(key), 1u) << "acknowledged " << key << " lost";
    }
    GetOptions get;
    get.prefer_local_disk = true;
    ExpectReadsThroughDisk(listed, a_, get);
  }

  testing::TempDir dir_{"ssd_process"};  // logs and store directories
  std::string client_ttl_ = "2";         // seconds
  uint16_t rpc_ = 0, http_ = 0;
  int starts_ = 0;
  std::unique_ptr<ChildProcess> master_;
  std::unique_ptr<MasterClient> master_client_;
  NodeProcess b_;
  NodeProcess a_;
  std::unique_ptr<Client> client_;
};

TEST_P(SsdProcessTest, EvictedObjectsAreReadThroughNodeADisk) {
  a_ = StartNode(kNodeA, "relaxed");
  ASSERT_FALSE(a_.client_id.empty());
  const std::vector<std::string> keys = MixedKeys(30);
  ASSERT_NO_FATAL_FAILURE(PutOnA(keys));
  ASSERT_TRUE(WaitOnDisk(keys, a_)) << "not all objects offloaded to A";
  ASSERT_TRUE(FillUntilEvicted(keys)) << "the master did not evict the MEMORY replicas";
  EXPECT_GT(testing::ScrapeMetric(http_, "shelfmark_master_evicted_objects_total"), 0);
  for (const std::string& key : keys) {
    auto location = client_->Locate("", key);
    ASSERT_TRUE(location.ok()) << key << ": " << ErrorCodeName(location.error());
    EXPECT_FALSE(HasMemory(location->info.replicas)) << key;
    EXPECT_TRUE(OnDiskOf(location->info.replicas, a_.client_id)) << key;
  }
  ExpectReadsThroughDisk(keys, a_, GetOptions{});
  EXPECT_EQ(b_.Metric("shelfmark_node_disk_requests_total"), 0);
}

TEST_P(SsdProcessTest, RelaxedSigtermRestartKeepsAcknowledgedObjects) {
  RestartKeepsAcknowledged("relaxed", Stop::kSigterm);
}

TEST_P(SsdProcessTest, RelaxedKillAfterCheckpointKeepsAcknowledgedObjects) {
  RestartKeepsAcknowledged("relaxed", Stop::kKillAfterCheckpoint);
}

TEST_P(SsdProcessTest, StrictKillRightAfterOffloadKeepsAcknowledgedObjects) {
  RestartKeepsAcknowledged("strict", Stop::kKill);
}

// kill -9 while A works through its offload queue: after the restart every
// object the master lists on A's disk reads back correctly, and at least
// those A had acknowledged before the kill are listed (strict persistence;
// the bucket backend is always durable). A writes about one object per batch
// (--offload_batch_bytes=4096: each batch persisted strictly before it is
// reported), so its queue takes long enough to be caught mid-way.
TEST_P(SsdProcessTest, KilledMidOffloadServesEveryListedObject) {
  a_ = StartNode(kNodeA, "strict", {"--offload_batch_bytes=4096"});
  ASSERT_FALSE(a_.client_id.empty());
  constexpr int kCount = 640;
  static constexpr size_t kSizes[] = {1, 1000, 4096, 16384};
  std::vector<std::string> keys, values;
  for (int i = 0; i < kCount; ++i) {
    keys.push_back(KeyOf(i, kSizes[i % std::size(kSizes)]));
    values.push_back(ValueOf(keys.back()));
  }
  PutOptions options;
  options.config.preferred_segments = {kNodeA};
  const std::vector<std::string_view> views(values.begin(), values.end());
  for (ErrorCode rc : client_->BatchPut("", keys, views, options)) ASSERT_EQ(rc, ErrorCode::OK);
  double acknowledged = 0;
  ASSERT_TRUE(testing::WaitForMetric(
      a_.metrics_port, "shelfmark_node_offloaded_objects_total",
      [&](double v) { return (acknowledged = v) > 0; }, kWaitMs));
  a_.process->Signal(SIGKILL);
  ASSERT_EQ(a_.process->Wait(20'000), 128 + SIGKILL);
  ASSERT_LT(acknowledged, kCount) << "offload finished before the kill: not caught mid-way";
  const std::string old_id = a_.client_id;
  a_ = StartNode(kNodeA, "strict");
  ASSERT_FALSE(a_.client_id.empty());
  ASSERT_TRUE(WaitPurged(old_id)) << "the killed A's replicas are still listed";
  const std::vector<std::string> listed = ListedOnDisk(a_);
  EXPECT_GE(listed.size(), 1u);
  EXPECT_GE(static_cast<double>(listed.size()), acknowledged);
  GetOptions get;
  get.prefer_local_disk = true;
  ExpectReadsThroughDisk(listed, a_, get);
}

INSTANTIATE_TEST_SUITE_P(Backends, SsdProcessTest, testing::SsdBackends(),
                         testing::SsdBackendName);

// A master that keeps a silent client for a minute: what goes at once after
// a restart was dropped by the new process's mount, not by expiry.
class SsdRestartProcessTest : public SsdProcessTest {
 protected:
  SsdRestartProcessTest() { client_ttl_ = "60"; }

  // Starts A on a port of its own (flags_), puts `keys` on it, waits until
  // its store holds them all, and kills it (kill -9).
  void PutOnAThenKillIt(const std::vector<std::string>& keys) {
    a_ = StartNode(kNodeA, "strict", flags_);
    ASSERT_FALSE(a_.client_id.empty());
    ASSERT_NO_FATAL_FAILURE(PutOnA(keys));
    ASSERT_TRUE(WaitOnDisk(keys, a_)) << "not all objects offloaded to A";
    a_.process->Signal(SIGKILL);
    ASSERT_EQ(a_.process->Wait(20'000), 128 + SIGKILL);
  }

  const std::vector<std::string> flags_ = {"--listen_port=" +
                                           std::to_string(testing::FreePort())};
};

// A killed and restarted on the same port (same endpoint, new client id):
// the new segment's mount supersedes the old process's segment and SSD
// store, so once the new A is up no key lists a LOCAL_DISK replica of the
// dead process beside the new one's; the new A re-reports its store and the
// objects read back through it.
TEST_P(SsdRestartProcessTest, RestartOnTheSamePortDropsTheOldStoreAtOnce) {
  const std::vector<std::string> keys = MixedKeys(10);
  ASSERT_NO_FATAL_FAILURE(PutOnAThenKillIt(keys));
  const std::string old_id = a_.client_id;
  a_ = StartNode(kNodeA, "strict", flags_);
  ASSERT_FALSE(a_.client_id.empty());
  ASSERT_NE(a_.client_id, old_id);
  EXPECT_EQ(testing::ScrapeMetric(http_, "shelfmark_master_segments_superseded_total"), 1);
  EXPECT_EQ(testing::ScrapeMetric(http_, "shelfmark_master_disks_superseded_total"), 1);
  for (const std::string& key : keys) {
    EXPECT_FALSE(OnDiskOf(Replicas(key), old_id)) << key << " still names the dead process";
  }
  ASSERT_TRUE(WaitOnDisk(keys, a_)) << "the new A did not re-report its store";
  for (const std::string& key : keys) {
    EXPECT_EQ(Replicas(key).size(), 1u) << key;
  }
  GetOptions get;
  get.prefer_local_disk = true;
  ExpectReadsThroughDisk(keys, a_, get);
}

// A killed; while it is down every key is removed and put again on B with
// other bytes of the same size (half of them without a checksum). The
// restarted A re-reports its store, holding the old bytes: the master
// refuses every copy (not of the live version), and every read is the new
// bytes.
TEST_P(SsdRestartProcessTest, AKeyPutAgainWhileTheNodeWasDownGetsNoneOfItsOldBytes) {
  const std::vector<std::string> keys = MixedKeys(10);
  ASSERT_NO_FATAL_FAILURE(PutOnAThenKillIt(keys));
  auto new_value = [](const std::string& key) {
    return testing::TestPattern(ValueOf(key).size(), 'N');
  };
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(client_->Remove("", keys[i], /*force=*/true), ErrorCode::OK) << keys[i];
    PutOptions options;
    options.config.preferred_segments = {kNodeB};
    options.compute_checksum = i % 2 == 0;
    ASSERT_EQ(client_->Put("", keys[i], new_value(keys[i]), options), ErrorCode::OK) << keys[i];
  }
  a_ = StartNode(kNodeA, "strict", flags_);
  ASSERT_FALSE(a_.client_id.empty());
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        return testing::ScrapeMetric(http_, "shelfmark_master_stale_disk_reports_total") >=
               static_cast<double>(keys.size());
      },
      kWaitMs))
      << "the re-report of the old bytes was not refused";
  GetOptions get;
  get.prefer_local_disk = true;
  for (const std::string& key : keys) {
    EXPECT_FALSE(OnDiskOf(Replicas(key), a_.client_id)) << key << ": old copy attached";
    auto got = client_->Get("", key, get);
    ASSERT_TRUE(got.ok()) << key << ": " << ErrorCodeName(got.error());
    EXPECT_TRUE(*got == new_value(key)) << key << ": wrong bytes (" << got->size() << " bytes)";
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, SsdRestartProcessTest, testing::SsdBackends(),
                         testing::SsdBackendName);

}  // namespace
}  // namespace shelfmark
