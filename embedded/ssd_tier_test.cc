// The SSD tier of an embedded client: its settings (ResolveSsdTier), then a
// real master service in-process (RpcServer + Directory with offload
// enabled and its background thread, 127.0.0.1:0), real UCX engines and a
// real bucket store in a temp directory.
#include "embedded/ssd_tier.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "directory/directory.h"
#include "embedded/embedded_client.h"
#include "master/rpc_server_test_util.h"
#include "testing/temp_dir.h"
#include "testing/wait_for.h"
#include "transport/transport_test_util.h"

namespace shelfmark {
namespace {

// --- settings -----------------------------------------------------------------

EnvLookup Env(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(ResolveSsdTierTest, TheExplicitPathWinsOverTheEnvironment) {
  testing::TempDir mine, theirs;
  std::string error;
  auto c = ResolveSsdTier(mine.path(),
                          Env({{"MOONCAKE_OFFLOAD_FILE_STORAGE_PATH", theirs.path()},
                               {"MOONCAKE_OFFLOAD_BUCKET_KEYS_LIMIT", "7"}}),
                          &error);
  ASSERT_TRUE(c.ok()) << error;
  EXPECT_EQ(c->storage.storage_path, mine.path());
  EXPECT_EQ(c->storage.bucket_keys_limit, 7u);  // the other variables still apply
  EXPECT_EQ(c->offload_poll_interval_ms, 100);
}

TEST(ResolveSsdTierTest, WithoutAPathTheEnvironmentNamesIt) {
  testing::TempDir dir;
  auto c = ResolveSsdTier("",
                          Env({{"MOONCAKE_OFFLOAD_FILE_STORAGE_PATH", dir.path()},
                               {"MOONCAKE_OFFLOAD_HEARTBEAT_INTERVAL_SECONDS", "2"}}),
                          nullptr);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->storage.storage_path, dir.path());
  EXPECT_EQ(c->offload_poll_interval_ms, 2000);
}

TEST(ResolveSsdTierTest, BadSettingsAreRefusedWithTheirName) {
  testing::TempDir dir;
  std::string error;
  EXPECT_EQ(ResolveSsdTier("", Env({}), &error).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(error.find("ssd_offload_path"), std::string::npos) << error;
  EXPECT_EQ(
      ResolveSsdTier("", Env({{"MOONCAKE_OFFLOAD_FILE_STORAGE_PATH", "relative/dir"}}), &error)
          .error(),
      ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(error.rfind("MOONCAKE_OFFLOAD_FILE_STORAGE_PATH=relative/dir", 0), 0u) << error;
  EXPECT_EQ(ResolveSsdTier(dir.Join("missing"), Env({}), &error).error(),
            ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(error.rfind("ssd_offload_path=" + dir.Join("missing"), 0), 0u) << error;
  for (const char* bad : {"0", "x", "3601", "-1"}) {
    EXPECT_EQ(ResolveSsdTier(dir.path(),
                             Env({{"MOONCAKE_OFFLOAD_HEARTBEAT_INTERVAL_SECONDS", bad}}), &error)
                  .error(),
              ErrorCode::INVALID_PARAMS)
        << bad;
    EXPECT_NE(error.find("MOONCAKE_OFFLOAD_HEARTBEAT_INTERVAL_SECONDS"), std::string::npos);
  }
  EXPECT_EQ(
      ResolveSsdTier(dir.path(), Env({{"MOONCAKE_OFFLOAD_EVICTION_POLICY", "random"}}), &error)
          .error(),
      ErrorCode::INVALID_PARAMS);
  EXPECT_NE(error.find("MOONCAKE_OFFLOAD_EVICTION_POLICY"), std::string::npos) << error;
}

// --- an embedded client's tier ---------------------------------------------------

constexpr uint64_t kSegmentBytes = 4 << 20;
constexpr size_t kObjectBytes = 64 << 10;
constexpr int64_t kDeadlineMs = 20'000;

class EmbeddedSsdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DirectoryOptions d;
    d.enable_offload = true;  // --enable_offload: every put is copied to its segment's tier
    d.client_ttl_ms = 1'000;  // a closed store's disk is forgotten soon
    d.background_period_ms = 20;
    dir_ = std::make_unique<Directory>(d);
    StartLoopbackMaster(*dir_, &server_, &address_);
  }

  void TearDown() override { server_->Stop(); }

  EmbeddedOptions Options() const {
    EmbeddedOptions o;
    o.master = address_;
    o.protocol = "ucx";
    o.segment_size = kSegmentBytes;
    o.segment_name = "emb-ssd";
    o.staging_bytes = 4 << 20;
    o.ping_interval_ms = 200;
    o.enable_ssd_offload = true;
    o.ssd_offload_path = ssd_.path();
    return o;
  }

  std::unique_ptr<EmbeddedClient> Make() {
    auto made = EmbeddedClient::Create(Options());
    EXPECT_TRUE(made.ok()) << ErrorCodeName(made.error());
    return made.ok() ? std::move(made).value() : nullptr;
  }

  static std::string Key(int i) { return "obj-" + std::to_string(i); }
  static std::string Value(int i) {
    return testing::TestPattern(kObjectBytes, static_cast<char>(i));
  }

  // Puts Key(i) for i in [begin, end); a put that finds DRAM full of
  // objects whose copies are not yet on SSD (NO_AVAILABLE_HANDLE) is
  // retried until they land.
  static void PutRange(Client& c, int begin, int end) {
    for (int i = begin; i < end; ++i) {
      ErrorCode rc = ErrorCode::OK;
      ASSERT_TRUE(testing::WaitFor(
          [&] {
            rc = c.Put("t", Key(i), Value(i), PutOptions{});
            return rc != ErrorCode::NO_AVAILABLE_HANDLE;
          },
          kDeadlineMs));
      ASSERT_EQ(rc, ErrorCode::OK) << Key(i) << ": " << ErrorCodeName(rc);
    }
  }

  // The endpoints of the key's replicas of `type` at the master.
  std::set<std::string> Replicas(const std::string& key, ReplicaType type) {
    std::set<std::string> out;
    auto info = dir_->Stat("t", key);
    if (!info.ok()) return out;
    for (const ReplicaDescriptor& r : info->replicas) {
      if (r.type != type || r.status != ReplicaStatus::COMPLETE) continue;
      out.insert(type == ReplicaType::MEMORY ? r.memory.endpoint : r.disk.endpoint);
    }
    return out;
  }

  testing::TempDir ssd_{"ssd-tier"};
  std::unique_ptr<Directory> dir_;
  std::unique_ptr<RpcServer> server_;
  std::string address_;
};

// Half again as many bytes as DRAM holds: the master copies each object to
// the tier and evicts DRAM replicas whose copies landed; those objects are
// then read back byte-exact through the store's own LOCAL_DISK service.
TEST_F(EmbeddedSsdTest, ObjectsBeyondDramAreReadBackFromTheTier) {
  auto store = Make();
  ASSERT_TRUE(store);
  Client& c = *store->client();
  ASSERT_TRUE(store->disk_stats().has_value());
  constexpr int kFirst = 48;  // 3 MiB of a 4 MiB segment
  constexpr int kTotal = 96;  // 6 MiB
  PutRange(c, 0, kFirst);
  ASSERT_TRUE(
      testing::WaitFor([&] { return store->node_counters().offloaded >= kFirst; }, kDeadlineMs));
  PutRange(c, kFirst, kTotal);

  const std::string disk_endpoint = c.engine("ucx")->endpoint();
  std::vector<int> disk_only;
  for (int i = 0; i < kTotal; ++i) {
    if (Replicas(Key(i), ReplicaType::MEMORY).empty()) {
      EXPECT_EQ(Replicas(Key(i), ReplicaType::LOCAL_DISK), std::set<std::string>{disk_endpoint})
          << Key(i);
      disk_only.push_back(i);
    }
  }
  // 6 MiB put into 4 MiB of DRAM: at least 2 MiB left it, all to the tier.
  EXPECT_GE(disk_only.size(), (kTotal * kObjectBytes - kSegmentBytes) / kObjectBytes);
  const SsdTierStats before = *store->disk_stats();
  EXPECT_GE(before.objects, static_cast<uint64_t>(kFirst));
  EXPECT_GE(before.used_bytes, kFirst * kObjectBytes);
  for (int i : disk_only) {
    auto got = c.Get("t", Key(i));
    ASSERT_TRUE(got.ok()) << Key(i) << ": " << ErrorCodeName(got.error());
    EXPECT_TRUE(*got == Value(i)) << Key(i) << " differs";
  }
  const SsdTierStats after = *store->disk_stats();
  EXPECT_EQ(after.served.requests - before.served.requests, disk_only.size());
  EXPECT_EQ(after.served.bytes_served - before.served.bytes_served,
            disk_only.size() * kObjectBytes);
  EXPECT_EQ(after.served.errors, 0u);
  EXPECT_EQ(store->node_counters().offload_failures, 0u);
}

// Close stops the node (the master drops the segment's DRAM replicas) and
// closes the store with its objects on disk; a store opened later on the
// same directory re-reports them, and they read back from it.
TEST_F(EmbeddedSsdTest, CloseKeepsTheTierAndTheNextStoreReReportsIt) {
  constexpr int kObjects = 8;
  {
    auto store = Make();
    ASSERT_TRUE(store);
    PutRange(*store->client(), 0, kObjects);
    ASSERT_TRUE(testing::WaitFor([&] { return store->node_counters().offloaded >= kObjects; },
                                 kDeadlineMs));
    ASSERT_EQ(store->Close(), ErrorCode::OK);
    EXPECT_EQ(store->client(), nullptr);
    EXPECT_FALSE(store->disk_stats().has_value());
    EXPECT_FALSE(store->segment().has_value());
    for (int i = 0; i < kObjects; ++i) EXPECT_TRUE(Replicas(Key(i), ReplicaType::MEMORY).empty());
  }
  auto next = Make();
  ASSERT_TRUE(next);
  const std::string endpoint = next->client()->engine("ucx")->endpoint();
  EXPECT_EQ(next->disk_stats()->objects, static_cast<uint64_t>(kObjects));
  // The closed store's disk replicas go with its client id (client TTL); the
  // new store's report is what remains.
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        for (int i = 0; i < kObjects; ++i) {
          if (Replicas(Key(i), ReplicaType::LOCAL_DISK) != std::set<std::string>{endpoint}) {
            return false;
          }
        }
        return true;
      },
      kDeadlineMs));
  EXPECT_GE(next->node_counters().disk_reported, static_cast<uint64_t>(kObjects));
  for (int i = 0; i < kObjects; ++i) {
    auto got = next->client()->Get("t", Key(i));
    ASSERT_TRUE(got.ok()) << Key(i) << ": " << ErrorCodeName(got.error());
    EXPECT_TRUE(*got == Value(i)) << Key(i) << " differs";
  }
  EXPECT_EQ(next->disk_stats()->served.requests, static_cast<uint64_t>(kObjects));
}

TEST_F(EmbeddedSsdTest, ATierNeedsASegmentAndGoodSettings) {
  EmbeddedOptions no_segment = Options();
  no_segment.segment_size = 0;
  EXPECT_EQ(EmbeddedClient::Create(no_segment).error(), ErrorCode::INVALID_PARAMS);
  EmbeddedOptions bad_path = Options();
  bad_path.ssd_offload_path = ssd_.Join("missing");
  EXPECT_EQ(EmbeddedClient::Create(bad_path).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(dir_->Stats().segment_count, 0u);  // neither mounted anything
  // Without the tier a store keeps no disk stats.
  EmbeddedOptions plain = Options();
  plain.enable_ssd_offload = false;
  auto made = EmbeddedClient::Create(plain);
  ASSERT_TRUE(made.ok());
  EXPECT_EQ(dir_->Stats().segment_count, 1u);
  EXPECT_FALSE((*made)->disk_stats().has_value());
}

}  // namespace
}  // namespace shelfmark
