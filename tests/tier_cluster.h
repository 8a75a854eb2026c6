// The fixture of the SSD tier's process tests (tier_process_test,
// ssd_fault_process_test): a shelfmark-master with --enable_offload and
// one shelfmark-node (UCX on 127.0.0.1, a 16 MiB segment, pings every
// 100 ms: the node offloads after each ping) with an SSD store of the
// test's backend (the GoogleTest parameter, tests/ssd_backends.h), and a
// client; bursts of 1 MiB puts (client/object_load.h's keys and bytes) and
// the checks they share. Every wait is a condition with a deadline
// (testing/wait_for.h).
#pragma once

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

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
#include "testing/wait_for.h"
#include "tests/ssd_backends.h"
#include "tests/ucx_client.h"

namespace shelfmark::testing {

inline constexpr int kStartMs = 30'000;
inline constexpr int kWaitMs = 30'000;
inline constexpr uint64_t kSegmentBytes = 16ull << 20;
inline constexpr uint64_t kObjectBytes = 1ull << 20;
inline constexpr int kBurstObjects = 48;  // 3x the segment
inline const std::string kPrefix = "tier";

inline bool HasComplete(const std::vector<ReplicaDescriptor>& replicas, ReplicaType type) {
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

class TierClusterTest : public ::testing::TestWithParam<std::string> {
 protected:
  void TearDown() override {
    client_.reset();
    master_client_.reset();
    node_.reset();
    master_.reset();
    if (store_mounted_) umount2(StoreDir().c_str(), MNT_DETACH);
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

    const std::string store = StoreDir();
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
  std::string StoreDir() const { return dir_.Join("ssd"); }

  // Makes the store directory a tmpfs of `bytes` (a small disk that fills
  // up); false when this process may not mount (root with mount rights).
  bool MountSmallStore(uint64_t bytes) {
    std::filesystem::create_directories(StoreDir());
    const std::string size = "size=" + std::to_string(bytes);
    store_mounted_ =
        geteuid() == 0 && mount("tmpfs", StoreDir().c_str(), "tmpfs", 0, size.c_str()) == 0;
    return store_mounted_;
  }
  double MasterMetric(const std::string& name) const { return testing::ScrapeMetric(http_, name); }
  double NodeMetric(const std::string& name) const {
    return testing::ScrapeMetric(node_http_, name);
  }

  // Puts `count` objects of 1 MiB (client/object_load.h's keys under
  // `prefix`, and their bytes) as fast as they are acknowledged, each
  // retried for up to `retry_ms` while it is answered NO_AVAILABLE_HANDLE;
  // any other answer fails the test.
  BurstResult Burst(int count, int64_t retry_ms, const std::string& prefix = kPrefix) {
    BurstResult result;
    PutOptions options;
    options.compute_checksum = true;
    for (int i = 0; i < count; ++i) {
      const std::string key = LoadKey(prefix, static_cast<uint64_t>(i));
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
  // master's queue is empty, the node has no task in flight and no eviction
  // (or lost record) the master has not answered. settle_state_ then holds
  // the figures of one look after the wait, for a failure's message.
  bool WaitSettled() {
    const bool settled = testing::WaitFor(
        [&] {
          return MasterMetric("shelfmark_master_offload_queued_tasks") == 0 &&
                 NodeMetric("shelfmark_node_offload_inflight_tasks") == 0 &&
                 NodeMetric("shelfmark_node_disk_reports_pending") == 0;
        },
        kWaitMs);
    settle_state_ = SettleFigures();
    return settled;
  }

  // The offload's figures at one look (each scraped once).
  std::string SettleFigures() const {
    auto figure = [](double v) { return std::to_string(static_cast<long long>(v)); };
    return "queued " + figure(MasterMetric("shelfmark_master_offload_queued_tasks")) +
           ", in flight " + figure(NodeMetric("shelfmark_node_offload_inflight_tasks")) +
           ", reports pending " + figure(NodeMetric("shelfmark_node_disk_reports_pending")) +
           ", offloaded " + figure(NodeMetric("shelfmark_node_offloaded_objects_total")) +
           ", stored " + figure(NodeMetric("shelfmark_node_disk_objects")) +
           ", evictions reported " + figure(NodeMetric("shelfmark_node_disk_evictions_total")) +
           ", stale " + figure(NodeMetric("shelfmark_node_offload_stale_total")) + ", failed " +
           figure(NodeMetric("shelfmark_node_offload_failures_total"));
  }

  testing::TempDir dir_{"tier_process"};  // logs and the store
  bool store_mounted_ = false;
  std::string settle_state_;  // SettleFigures() after the last WaitSettled
  uint16_t rpc_ = 0, http_ = 0, node_http_ = 0;
  std::unique_ptr<ChildProcess> master_;
  std::unique_ptr<ChildProcess> node_;
  std::unique_ptr<MasterClient> master_client_;
  std::unique_ptr<Client> client_;
};

}  // namespace shelfmark::testing
