// Snapshots of the directory: export, restore into a fresh directory and
// compare everything observable; corrupt states; the snapshot lock.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "directory/directory.h"
#include "directory/directory_test_util.h"
#include "directory/snapshot_lock.h"
#include "testing/wait_for.h"

namespace shelfmark {
namespace {

struct FullState {
  SegmentsState segments;
  std::vector<ShardState> shards;  // all 1024
  TasksState tasks;
};

FullState ExportAll(const Directory& dir) {
  FullState s;
  s.segments = dir.ExportSegments();
  for (uint32_t i = 0; i < 1024; ++i) s.shards.push_back(dir.ExportShard(i));
  s.tasks = dir.ExportTasks();
  return s;
}

// Restores `s` into `dir`, the shards from four threads at once.
ErrorCode RestoreAll(Directory& dir, const FullState& s) {
  if (ErrorCode rc = dir.RestoreSegments(s.segments); rc != ErrorCode::OK) return rc;
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (uint32_t i = t; i < 1024; i += 4) {
        if (dir.RestoreShard(s.shards[i]) != ErrorCode::OK) bad++;
      }
    });
  }
  for (auto& th : threads) th.join();
  if (bad > 0) return ErrorCode::DATA_CORRUPTED;
  return dir.RestoreTasks(s.tasks);
}

// The shard state holding the object (tenant, key), and the object in it.
std::pair<ShardState*, ObjectState*> FindObject(FullState& s, const std::string& tenant,
                                                 const std::string& key) {
  for (ShardState& shard : s.shards) {
    for (ObjectState& o : shard.objects) {
      if (o.tenant == tenant && o.key == key) return {&shard, &o};
    }
  }
  return {nullptr, nullptr};
}

void ExpectSameReplica(const ReplicaDescriptor& a, const ReplicaDescriptor& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.memory.endpoint, b.memory.endpoint);
  EXPECT_EQ(a.memory.protocol, b.memory.protocol);
  EXPECT_EQ(a.memory.buffer_address, b.memory.buffer_address);
  EXPECT_EQ(a.memory.size, b.memory.size);
  EXPECT_EQ(a.memory.rkey, b.memory.rkey);
  EXPECT_EQ(a.memory.segment_id, b.memory.segment_id);
  EXPECT_EQ(a.disk.client_id, b.disk.client_id);
  EXPECT_EQ(a.disk.object_size, b.disk.object_size);
  EXPECT_EQ(a.disk.endpoint, b.disk.endpoint);
}

void ExpectSameInfo(const ObjectInfo& a, const ObjectInfo& b) {
  SCOPED_TRACE(a.key);
  EXPECT_EQ(a.key, b.key);
  EXPECT_EQ(a.size, b.size);
  EXPECT_EQ(a.checksum, b.checksum);
  EXPECT_EQ(a.data_type, b.data_type);
  EXPECT_EQ(a.writer, b.writer);
  EXPECT_EQ(a.lease_remaining_ms, b.lease_remaining_ms);
  EXPECT_EQ(a.soft_pin_remaining_ms, b.soft_pin_remaining_ms);
  EXPECT_EQ(a.hard_pin, b.hard_pin);
  EXPECT_EQ(a.group_id, b.group_id);
  ASSERT_EQ(a.replicas.size(), b.replicas.size());
  for (size_t i = 0; i < a.replicas.size(); ++i) ExpectSameReplica(a.replicas[i], b.replicas[i]);
}

std::vector<std::tuple<std::string, std::string, uint64_t>> Tasks(
    const std::vector<OffloadTask>& tasks) {
  std::vector<std::tuple<std::string, std::string, uint64_t>> out;
  for (const OffloadTask& t : tasks) out.emplace_back(t.tenant, t.key, t.size);
  return out;
}

class SnapshotTest : public ::testing::Test {
 protected:
  SnapshotTest() {
    src_ = MakeDirectory(&src_clock_);
    dst_ = MakeDirectory(&dst_clock_);
  }

  static std::unique_ptr<Directory> MakeDirectory(const Clock* clock) {
    DirectoryOptions o;
    o.enable_offload = true;
    return MakeTestDirectory(clock, o);
  }

  static Segment MakeSegment(const std::string& name, uint64_t base) {
    return MakeTestSegment(name, base, 1 << 20, name.substr(0, 1) + "-node:1234", "rkey-" + name);
  }

  ErrorCode Put(const std::string& tenant, const std::string& key, uint64_t size,
                const PutConfig& config = {}) {
    auto started = src_->PutStart(writer_, tenant, key, size, config);
    if (!started.ok()) return started.error();
    return src_->PutEnd(writer_, tenant, key);
  }

  // Every kind of state: tenants (default included), segments on two nodes,
  // MEMORY and LOCAL_DISK replicas, several replicas, checksums, data types,
  // pins, leases, groups, an unfinished put, queued offload tasks.
  void Populate() {
    ASSERT_EQ(src_->MountSegment(node_a_, MakeSegment("a0", 0x100000)), ErrorCode::OK);
    ASSERT_EQ(src_->MountSegment(node_a_, MakeSegment("a1", 0x200000)), ErrorCode::OK);
    ASSERT_EQ(src_->MountSegment(node_b_, MakeSegment("b0", 0x100000)), ErrorCode::OK);
    ASSERT_EQ(src_->MountLocalDisk(node_a_, true, "a-node:2000"), ErrorCode::OK);
    ASSERT_EQ(src_->MountLocalDisk(node_b_, false, "b-node:2000"), ErrorCode::OK);

    PutConfig on_a;
    on_a.preferred_segments = {"a0"};
    on_a.checksum = 0xfeed;
    on_a.data_type = DataType::KVCACHE;
    ASSERT_EQ(Put("", "k-checksum", 100, on_a), ErrorCode::OK);  // queues an offload for a
    PutConfig two;
    two.replica_num = 2;
    two.preferred_segments = {"b0", "a1"};
    two.hard_pin = true;
    two.group_id = "g1";
    two.data_type = DataType::TENSOR;
    ASSERT_EQ(Put("t1", "k-two", 3000, two), ErrorCode::OK);
    PutConfig soft;
    soft.preferred_segments = {"b0"};
    soft.soft_pin_ttl_ms = 50'000;
    soft.group_id = "g1";
    soft.data_type = DataType::WEIGHT;
    ASSERT_EQ(Put("t1", "k-soft", 200, soft), ErrorCode::OK);
    for (int i = 0; i < 60; ++i) {  // spread over many shards and tenants
      PutConfig c;
      c.replica_num = 1 + i % 3;
      ASSERT_EQ(Put(i % 2 ? "t2" : "", "many/" + std::to_string(i), 64 + i, c), ErrorCode::OK);
    }
    ASSERT_TRUE(src_->GetReplicaList("", "many/4").ok());  // a lease
    src_clock_.AdvanceMs(700);
    ASSERT_TRUE(src_->ExistKey("t2", "many/5").ok());  // another lease
    // LOCAL_DISK replicas: on an existing object, and an object only on disk.
    OffloadedObject disk_copy{"", "k-checksum", {1, 0, 10, 100, "a-node:2000"}, 0xfeed};
    OffloadedObject disk_only{"t1", "disk-only", {1, 4096, 9, 5000, "a-node:2000"}};
    auto notified = src_->NotifyOffloadSuccess(node_a_, {disk_copy, disk_only});
    ASSERT_TRUE(notified.ok());
    EXPECT_EQ((*notified)[0], ErrorCode::OK);
    EXPECT_EQ((*notified)[1], ErrorCode::OK);
    // An unfinished put, in a group of its own.
    PutConfig unfinished;
    unfinished.replica_num = 2;
    unfinished.group_id = "g2";
    ASSERT_TRUE(src_->PutStart(writer_, "t1", "unfinished", 5000, unfinished).ok());
    src_clock_.AdvanceMs(800);
  }

  // The destination clock shows the same sub-second phase as the source's,
  // so second-granular soft pins come back to the millisecond.
  void AlignClocks() { dst_clock_.AdvanceMs(src_clock_.NowMs() + 4'000'000 - dst_clock_.NowMs()); }

  ManualClock src_clock_;
  ManualClock dst_clock_{1'000'000};
  std::unique_ptr<Directory> src_;
  std::unique_ptr<Directory> dst_;
  UUID node_a_ = UUID::Generate();
  UUID node_b_ = UUID::Generate();
  UUID writer_ = UUID::Generate();
};

TEST_F(SnapshotTest, RestoreIntoAFreshDirectoryKeepsEverythingObservable) {
  Populate();
  FullState state = ExportAll(*src_);
  AlignClocks();
  ASSERT_EQ(RestoreAll(*dst_, state), ErrorCode::OK);

  // Every finished object, field by field.
  for (const std::string tenant : {"", "t1", "t2"}) {
    std::vector<std::string> keys = src_->ListKeys(tenant, "", 1000);
    std::erase(keys, "unfinished");
    EXPECT_EQ(dst_->ListKeys(tenant, "", 1000), keys);
    EXPECT_EQ(dst_->CountKeys(tenant, false), keys.size());
    for (const std::string& key : keys) {
      auto want = src_->Stat(tenant, key);
      auto got = dst_->Stat(tenant, key);
      ASSERT_TRUE(want.ok() && got.ok()) << key;
      ExpectSameInfo(*want, *got);
    }
  }
  EXPECT_EQ(dst_->CountKeys("", true), src_->CountKeys("", true) - 1);
  auto soft = dst_->Stat("t1", "k-soft");
  EXPECT_GT(soft->soft_pin_remaining_ms, 40'000);
  EXPECT_GT(dst_->Stat("", "many/4")->lease_remaining_ms, 0);
  EXPECT_EQ(dst_->Stat("", "k-checksum")->replicas.size(), 2u);  // MEMORY + LOCAL_DISK
  EXPECT_EQ(dst_->Stat("t1", "disk-only")->replicas[0].type, ReplicaType::LOCAL_DISK);

  // The unfinished put is gone, with its group and its space.
  EXPECT_EQ(dst_->Stat("t1", "unfinished").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(dst_->GroupMembers("t1", "g2").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(*src_->GroupMembers("t1", "g2"), std::vector<std::string>{"unfinished"});
  EXPECT_EQ(*dst_->GroupMembers("t1", "g1"), *src_->GroupMembers("t1", "g1"));
  EXPECT_EQ(*dst_->GroupMembers("t1", "g1"), (std::vector<std::string>{"k-soft", "k-two"}));
  DirectoryStats before = src_->Stats(), after = dst_->Stats();
  EXPECT_EQ(after.allocated_bytes, before.allocated_bytes - 2 * 5056);  // 5000 aligned to 64
  EXPECT_EQ(after.total_capacity_bytes, before.total_capacity_bytes);
  EXPECT_EQ(after.segment_count, 3u);
  EXPECT_EQ(after.client_count, 2u);
  EXPECT_EQ(after.key_count, before.key_count - 1);

  // Nodes need not remount.
  EXPECT_EQ(dst_->Ping(node_a_).status, ClientStatus::OK);
  EXPECT_EQ(dst_->Ping(node_b_).status, ClientStatus::OK);
  EXPECT_EQ(dst_->Ping(node_a_).view_version, src_->Ping(node_a_).view_version);

  // The queued offload tasks come back (node a's disk offloads; b's does not).
  auto want_tasks = src_->OffloadHeartbeat(node_a_, 1000);
  auto got_tasks = dst_->OffloadHeartbeat(node_a_, 1000);
  ASSERT_TRUE(want_tasks.ok() && got_tasks.ok());
  EXPECT_FALSE(want_tasks->empty());
  EXPECT_EQ(Tasks(*got_tasks), Tasks(*want_tasks));

  // New puts land in free space only, with fresh replica ids.
  std::vector<std::tuple<UUID, uint64_t, uint64_t>> used;  // segment, start, end
  uint64_t max_id = 0;
  for (const std::string tenant : {"", "t1", "t2"}) {
    for (const std::string& key : dst_->ListKeys(tenant, "", 1000)) {
      auto info = dst_->Stat(tenant, key);
      ASSERT_TRUE(info.ok());
      for (const ReplicaDescriptor& r : info->replicas) {
        max_id = std::max(max_id, r.id);
        if (r.type != ReplicaType::MEMORY) continue;
        used.emplace_back(r.memory.segment_id, r.memory.buffer_address,
                          r.memory.buffer_address + r.memory.size);
      }
    }
  }
  for (int i = 0; i < 40; ++i) {
    PutConfig c;
    c.replica_num = 3;
    auto placed = dst_->PutStart(writer_, "", "new/" + std::to_string(i), 4000, c);
    ASSERT_TRUE(placed.ok());
    for (const ReplicaDescriptor& r : *placed) {
      EXPECT_GT(r.id, max_id);
      for (const auto& [seg, start, end] : used) {
        bool overlap = seg == r.memory.segment_id && r.memory.buffer_address < end &&
                       start < r.memory.buffer_address + r.memory.size;
        EXPECT_FALSE(overlap) << "new/" << i;
      }
    }
  }
}

TEST_F(SnapshotTest, ExportValuesAreRelativeTimesAndSortedGroups) {
  Populate();
  FullState state = ExportAll(*src_);
  auto [shard, soft] = FindObject(state, "t1", "k-soft");
  ASSERT_NE(soft, nullptr);
  EXPECT_EQ(soft->soft_pin_remaining_ms, src_->Stat("t1", "k-soft")->soft_pin_remaining_ms);
  EXPECT_EQ(soft->group, "g1");
  EXPECT_EQ(soft->data_type, DataType::WEIGHT);
  EXPECT_EQ(soft->put_age_ms, 1500);  // put at 1'000'000 (1000 s), now 1'001'500
  auto [ushard, unfinished] = FindObject(state, "t1", "unfinished");
  ASSERT_NE(unfinished, nullptr);
  EXPECT_EQ(unfinished->replicas.size(), 2u);
  EXPECT_EQ(unfinished->replicas[0].status, ReplicaStatus::PROCESSING);
  auto [dshard, deflt] = FindObject(state, "default", "k-checksum");
  ASSERT_NE(deflt, nullptr);  // the default tenant is stored by name
  EXPECT_TRUE(deflt->has_checksum);
  EXPECT_EQ(deflt->checksum, 0xfeedu);
  size_t groups = 0;
  for (const ShardState& s : state.shards) {
    for (const GroupState& g : s.groups) {
      ++groups;
      EXPECT_TRUE(std::is_sorted(g.members.begin(), g.members.end()));
    }
  }
  EXPECT_EQ(groups, 2u);  // g1 and g2 of t1
  EXPECT_EQ(state.segments.segments.size(), 3u);
  EXPECT_EQ(state.segments.disks.size(), 2u);
  ASSERT_EQ(state.tasks.offloads.size(), 1u);
  EXPECT_EQ(state.tasks.offloads[0].client, node_a_);
}

TEST_F(SnapshotTest, ExpiredLeasesAndPinsRestoreAsExpiredNotDropped) {
  Populate();
  src_clock_.AdvanceMs(3'600'000);  // everything expired, the objects stay
  FullState state = ExportAll(*src_);
  for (const ShardState& s : state.shards) {
    for (const ObjectState& o : s.objects) {
      EXPECT_EQ(o.lease_remaining_ms, 0);
      EXPECT_EQ(o.soft_pin_remaining_ms, 0);
    }
  }
  ASSERT_EQ(RestoreAll(*dst_, state), ErrorCode::OK);
  EXPECT_EQ(dst_->CountKeys("", true), src_->CountKeys("", true) - 1);
  EXPECT_EQ(dst_->Stat("t1", "k-soft")->soft_pin_remaining_ms, 0);
  EXPECT_TRUE(dst_->Stat("t1", "k-two")->hard_pin);
}

// Clear() leaves nothing: no keys, segments, clients, bytes, tasks.
void ExpectEmpty(Directory& dir, const UUID& node) {
  DirectoryStats s = dir.Stats();
  EXPECT_EQ(s.key_count, 0u);
  EXPECT_EQ(s.allocated_bytes, 0u);
  EXPECT_EQ(s.total_capacity_bytes, 0u);
  EXPECT_EQ(s.segment_count, 0u);
  EXPECT_EQ(s.client_count, 0u);
  EXPECT_EQ(dir.CountKeys("", true), 0u);
  EXPECT_TRUE(dir.ListKeys("t1", "", 10).empty());
  EXPECT_EQ(dir.GroupMembers("t1", "g1").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(dir.Ping(node).status, ClientStatus::NEED_REMOUNT);
  SegmentsState segs = dir.ExportSegments();
  EXPECT_TRUE(segs.segments.empty());
  EXPECT_TRUE(segs.disks.empty());
  EXPECT_EQ(segs.next_replica_id, 1u);
  EXPECT_TRUE(dir.ExportTasks().offloads.empty());
  for (uint32_t i = 0; i < 1024; ++i) {
    ShardState shard = dir.ExportShard(i);
    EXPECT_TRUE(shard.objects.empty() && shard.groups.empty()) << i;
  }
}

TEST_F(SnapshotTest, CorruptShardsAreRejectedAndClearEmptiesTheDirectory) {
  Populate();
  FullState good = ExportAll(*src_);
  using Mutation = std::function<void(FullState&, ShardState*&)>;
  // Each mutation corrupts one shard and names it.
  auto object_in = [](FullState& s, const char* tenant, const char* key, ShardState*& shard) {
    auto [sh, o] = FindObject(s, tenant, key);
    shard = sh;
    if (o == nullptr) ADD_FAILURE() << "no object " << tenant << "/" << key;
    return o;
  };
  std::vector<std::pair<std::string, Mutation>> cases = {
      {"unknown segment", [&](FullState& s, ShardState*& sh) {
         object_in(s, "default", "k-checksum", sh)->replicas[0].owner = UUID::Generate();
       }},
      {"unknown disk node", [&](FullState& s, ShardState*& sh) {
         object_in(s, "t1", "disk-only", sh)->replicas[0].owner = UUID::Generate();
       }},
      {"range outside the segment", [&](FullState& s, ShardState*& sh) {
         object_in(s, "default", "k-checksum", sh)->replicas[0].offset = 1 << 20;
       }},
      {"range in free space", [&](FullState& s, ShardState*& sh) {
         object_in(s, "default", "k-checksum", sh)->replicas[0].offset = (1 << 20) - 4096;
       }},
      {"wrong shard", [&](FullState& s, ShardState*& sh) {
         object_in(s, "t1", "k-two", sh);
         sh->index = (sh->index + 1) % 1024;
       }},
      {"duplicate key", [&](FullState& s, ShardState*& sh) {
         ObjectState copy = *object_in(s, "t1", "k-two", sh);
         sh->objects.push_back(copy);
       }},
      {"empty key", [&](FullState& s, ShardState*& sh) {
         object_in(s, "t1", "k-two", sh)->key = "";
       }},
      {"empty tenant", [&](FullState& s, ShardState*& sh) {
         object_in(s, "default", "k-checksum", sh)->tenant = "";
       }},
      {"too many replicas", [&](FullState& s, ShardState*& sh) {
         ObjectState* o = object_in(s, "t1", "k-two", sh);
         while (o->replicas.size() <= 32) o->replicas.push_back(o->replicas[0]);
       }},
      {"no replica", [&](FullState& s, ShardState*& sh) {
         object_in(s, "t1", "k-two", sh)->replicas.clear();
       }},
      {"zero size", [&](FullState& s, ShardState*& sh) {
         object_in(s, "t1", "k-two", sh)->size = 0;
       }},
      {"bad replica status", [&](FullState& s, ShardState*& sh) {
         object_in(s, "t1", "k-two", sh)->replicas[0].status = static_cast<ReplicaStatus>(9);
       }},
      {"replica id over 48 bits", [&](FullState& s, ShardState*& sh) {
         object_in(s, "t1", "k-two", sh)->replicas[0].id = uint64_t{1} << 48;
       }},
      {"negative lease", [&](FullState& s, ShardState*& sh) {
         object_in(s, "t1", "k-two", sh)->lease_remaining_ms = -1;
       }},
      {"group in the wrong shard", [&](FullState& s, ShardState*& sh) {
         for (ShardState& shard : s.shards) {
           if (!shard.groups.empty()) sh = &shard;
         }
         sh->groups[0].group += "-moved";
       }},
  };
  for (auto& [name, mutate] : cases) {
    SCOPED_TRACE(name);
    FullState bad = good;
    ShardState* target = nullptr;
    mutate(bad, target);
    ASSERT_NE(target, nullptr);
    ASSERT_EQ(dst_->RestoreSegments(bad.segments), ErrorCode::OK);
    uint64_t allocated = dst_->Stats().allocated_bytes;
    EXPECT_EQ(dst_->RestoreShard(*target), ErrorCode::DATA_CORRUPTED);
    EXPECT_EQ(dst_->Stats().allocated_bytes, allocated);  // nothing changed
    EXPECT_EQ(dst_->CountKeys("", true), 0u);
    dst_->Clear();
    ExpectEmpty(*dst_, node_a_);
  }
  // A shard restored twice: its keys are already there.
  ASSERT_EQ(RestoreAll(*dst_, good), ErrorCode::OK);
  auto [shard, o] = FindObject(good, "t1", "k-two");
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(dst_->RestoreShard(*shard), ErrorCode::DATA_CORRUPTED);
  dst_->Clear();
  ExpectEmpty(*dst_, node_a_);
  // After Clear the good state restores again.
  ASSERT_EQ(RestoreAll(*dst_, good), ErrorCode::OK);
  EXPECT_EQ(dst_->CountKeys("", true), src_->CountKeys("", true) - 1);
}

TEST_F(SnapshotTest, CorruptSegmentsAndTasksAreRejected) {
  Populate();
  const FullState good = ExportAll(*src_);
  std::vector<std::pair<std::string, std::function<void(SegmentsState&)>>> cases = {
      {"misaligned extent", [](SegmentsState& s) { s.segments[0].free_extents[0].first += 1; }},
      {"extent out of range",
       [](SegmentsState& s) { s.segments[0].free_extents.push_back({1 << 20, 64}); }},
      {"bad alignment", [](SegmentsState& s) { s.segments[0].alignment = 48; }},
      {"segment twice", [](SegmentsState& s) { s.segments.push_back(s.segments[0]); }},
      {"nil segment id", [](SegmentsState& s) { s.segments[1].segment.id = UUID(); }},
      {"overlapping segments",
       [](SegmentsState& s) { s.segments[1].segment.base = s.segments[0].segment.base + 64; }},
      {"nil disk client", [](SegmentsState& s) { s.disks[0].client = UUID(); }},
      {"disk twice", [](SegmentsState& s) { s.disks.push_back(s.disks[0]); }},
  };
  for (auto& [name, mutate] : cases) {
    SCOPED_TRACE(name);
    SegmentsState bad = good.segments;
    mutate(bad);
    EXPECT_EQ(dst_->RestoreSegments(bad), ErrorCode::DATA_CORRUPTED);
    dst_->Clear();
    ExpectEmpty(*dst_, node_a_);
  }
  // Tasks: a bad one is corrupt; one for an unknown client is skipped.
  ASSERT_EQ(dst_->RestoreSegments(good.segments), ErrorCode::OK);
  TasksState bad_tasks = good.tasks;
  bad_tasks.offloads[0].tasks[0].key = "";
  EXPECT_EQ(dst_->RestoreTasks(bad_tasks), ErrorCode::DATA_CORRUPTED);
  TasksState stranger = good.tasks;
  stranger.offloads[0].client = UUID::Generate();
  EXPECT_EQ(dst_->RestoreTasks(stranger), ErrorCode::OK);
  EXPECT_TRUE(dst_->ExportTasks().offloads.empty());
}

TEST_F(SnapshotTest, RestoreKeepsTheStoredViewVersionAndClearForgetsIt) {
  Populate();
  FullState state = ExportAll(*src_);
  uint64_t own = dst_->Ping(node_a_).view_version;
  ASSERT_NE(own, state.segments.view_version);
  ASSERT_EQ(RestoreAll(*dst_, state), ErrorCode::OK);
  EXPECT_EQ(dst_->Ping(node_a_).view_version, state.segments.view_version);
  dst_->Clear();
  EXPECT_EQ(dst_->Ping(node_a_).view_version, own);
}

TEST_F(SnapshotTest, RestoredClientsExpireAfterOneTtlWithoutPings) {
  Populate();
  FullState state = ExportAll(*src_);
  ASSERT_EQ(RestoreAll(*dst_, state), ErrorCode::OK);
  dst_clock_.AdvanceMs(dst_->options().client_ttl_ms / 2);
  dst_->RunBackgroundOnce();
  EXPECT_EQ(dst_->Stats().segment_count, 3u);
  EXPECT_EQ(dst_->Ping(node_a_).status, ClientStatus::OK);  // a keeps pinging
  dst_clock_.AdvanceMs(dst_->options().client_ttl_ms / 2 + 1);
  dst_->RunBackgroundOnce();
  // b went silent: its segment and its replicas are gone; a keeps its own.
  EXPECT_EQ(dst_->Stats().segment_count, 2u);
  EXPECT_EQ(dst_->Stat("t1", "k-soft").error(), ErrorCode::OBJECT_NOT_FOUND);  // only on b0
  EXPECT_EQ(dst_->Stat("t1", "k-two")->replicas.size(), 1u);
}

// --- the snapshot lock --------------------------------------------------------

TEST(SnapshotLockTest, ReadersShareAndAPauseWaitsForThem) {
  SnapshotLock lock;
  lock.lock_shared();
  std::thread other([&] {  // a second reader gets in while this one holds it
    lock.lock_shared();
    lock.unlock_shared();
  });
  other.join();
  std::atomic<bool> paused{false};
  std::thread writer([&] {
    lock.lock();
    paused = true;
    lock.unlock();
  });
  EXPECT_FALSE(paused.load());  // this reader is still in
  lock.unlock_shared();
  writer.join();
  EXPECT_TRUE(paused.load());
}

TEST(SnapshotLockTest, ReadersArrivingDuringAPauseWaitForIt) {
  SnapshotLock lock;
  lock.lock();
  std::atomic<bool> entered{false};
  std::thread reader([&] {
    lock.lock_shared();
    entered = true;
    lock.unlock_shared();
  });
  EXPECT_TRUE(testing::WaitFor([&] { return lock.waiting() != 0 || entered; }, 60'000));
  EXPECT_FALSE(entered.load());
  EXPECT_EQ(lock.waiting(), 1u);
  lock.unlock();
  reader.join();
  EXPECT_TRUE(entered.load());
}

TEST_F(SnapshotTest, RunPausedHoldsWritersBack) {
  ASSERT_EQ(src_->MountSegment(node_a_, MakeSegment("a0", 0x100000)), ErrorCode::OK);
  std::atomic<bool> put_done{false};
  std::thread put;
  src_->RunPaused([&] {
    put = std::thread([&] {
      EXPECT_TRUE(src_->PutStart(writer_, "", "during", 100, {}).ok());
      put_done = true;
    });
    // Wait until the put is held back (or, were the lock broken, done).
    EXPECT_TRUE(testing::WaitFor(
        [&] { return put_done || src_->Stats().snapshot_waiters != 0; }, 60'000));
    EXPECT_FALSE(put_done.load());
    EXPECT_EQ(src_->ExportShard(0).index, 0u);  // Export* work inside
    EXPECT_EQ(src_->Stats().key_count, 0u);
  });
  put.join();
  EXPECT_TRUE(put_done.load());
  EXPECT_EQ(src_->Stats().key_count, 1u);
}

// With the background thread and writers running, every pause sees a state
// whose parts agree, also from a forked child (how snapshots use it).
TEST(SnapshotPauseTest, PausesSeeAConsistentStateWithTheBackgroundThreadOn) {
  DirectoryOptions o;
  o.background_period_ms = 1;
  o.eviction_high_watermark_ratio = 0.5;  // eviction runs too
  Directory dir(o);
  UUID node = UUID::Generate();
  ASSERT_EQ(dir.MountSegment(node, MakeTestSegment("s", 0x1000, 256 << 10, "n:1")), ErrorCode::OK);
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int t = 0; t < 2; ++t) {
    writers.emplace_back([&, t] {
      UUID me = UUID::Generate();
      for (int i = 0; !stop; ++i) {
        std::string key = std::to_string(t) + "/" + std::to_string(i);
        if (dir.PutStart(me, "", key, 1000, {}).ok()) dir.PutEnd(me, "", key);
        dir.Ping(node);
        if (i % 3 == 0) dir.Remove("", std::to_string(t) + "/" + std::to_string(i / 2), true);
      }
    });
  }
  auto check = [&dir] {
    uint64_t objects = 0, memory_bytes = 0;
    for (uint32_t i = 0; i < 1024; ++i) {
      for (const ObjectState& obj : dir.ExportShard(i).objects) {
        ++objects;
        for (const ReplicaState& r : obj.replicas) {
          if (r.type == ReplicaType::MEMORY) memory_bytes += (obj.size + 63) / 64 * 64;
        }
      }
    }
    uint64_t free_bytes = 0;
    for (const SegmentState& s : dir.ExportSegments().segments) {
      for (const auto& [offset, size] : s.free_extents) free_bytes += size;
    }
    DirectoryStats st = dir.Stats();
    return objects == st.key_count && memory_bytes == st.allocated_bytes &&
           free_bytes + st.allocated_bytes == st.total_capacity_bytes;
  };
  for (int round = 0; round < 20; ++round) {
    bool same = false;
    dir.RunPaused([&] { same = check(); });
    EXPECT_TRUE(same) << round;
  }
  stop = true;
  for (auto& th : writers) th.join();
  // The writers are stopped first: a thread of the test could be inside
  // malloc at the fork, and the sanitizers' allocator is not fork-safe. The
  // background thread stays on (it cannot be inside the directory in f).
  int status = -1;
  dir.RunPaused([&] {
    pid_t child = fork();
    if (child == 0) _exit(check() ? 0 : 1);  // no other thread exists here
    ASSERT_GT(child, 0);
    ASSERT_EQ(waitpid(child, &status, 0), child);
  });
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace shelfmark
