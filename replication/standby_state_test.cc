// StandbyState against a real Directory: a full copy taken while the
// directory changes, then batches of changes, load into a fresh Directory
// that then holds exactly the leader's readable objects, with allocators
// that never hand out a range an object holds.
#include "replication/standby_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "directory/directory_test_util.h"

namespace shelfmark {
namespace {

// What the leader does for a joining standby (ReplicationLeader::FullCopy).
void FullCopy(Directory& d, StandbyState* state) {
  ChangeSet c;
  c.seq = d.ChangeSeq();
  c.has_segments = true;
  c.segments = d.ExportSegmentTable();
  for (uint32_t i = 0; i < kShardCount; ++i) {
    ShardState s = d.ExportShardLive(i);
    if (!s.objects.empty()) c.shards.push_back(std::move(s));
  }
  c.held = d.ExportHeldRanges();
  state->Reset();
  state->Apply(std::move(c));
}

using Row = std::tuple<std::string, std::string, uint64_t, std::vector<std::tuple<uint64_t, int, uint64_t>>>;

// The readable objects (every replica COMPLETE) of a directory, sorted.
std::vector<Row> Readable(const Directory& d) {
  std::vector<Row> rows;
  for (uint32_t i = 0; i < kShardCount; ++i) {
    for (const ObjectState& o : d.ExportShard(i).objects) {
      bool complete = std::all_of(o.replicas.begin(), o.replicas.end(), [](const ReplicaState& r) {
        return r.status == ReplicaStatus::COMPLETE;
      });
      if (!complete) continue;
      std::vector<std::tuple<uint64_t, int, uint64_t>> replicas;
      for (const ReplicaState& r : o.replicas) {
        replicas.emplace_back(r.id, static_cast<int>(r.type), r.offset);
      }
      std::sort(replicas.begin(), replicas.end());
      rows.emplace_back(o.tenant, o.key, o.size, replicas);
    }
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

// Bytes the MEMORY replicas of every object of `d` hold, unfinished puts
// included (64-byte alignment).
uint64_t HeldBytes(const Directory& d) {
  uint64_t held = 0;
  for (uint32_t i = 0; i < kShardCount; ++i) {
    for (const ObjectState& o : d.ExportShard(i).objects) {
      for (const ReplicaState& r : o.replicas) {
        if (r.type == ReplicaType::MEMORY) held += (o.size + 63) / 64 * 64;
      }
    }
  }
  return held;
}

class StandbyStateTest : public DirectoryFixture {};

TEST_F(StandbyStateTest, CopyThenChangesConvergeAndLoad) {
  dir_->EnableChangeTracking();
  std::mt19937 rng(7);
  const UUID node_a = UUID::Generate(), node_b = UUID::Generate();
  Segment seg_a = Mount(node_a, "a", 4 << 20);
  Mount(node_b, "b", 4 << 20);
  StandbyState state;
  auto random_op = [&](int i) {
    const std::string key = "k" + std::to_string(rng() % 300);
    switch (rng() % 6) {
      case 0:
      case 1:
      case 2: {
        PutConfig config;
        config.replica_num = 1 + rng() % 2;
        Put(key, 64 + rng() % 5000, config, i % 7 == 0 ? "acme" : "");
        break;
      }
      case 3:
        (void)dir_->PutStart(writer_, "", key + "-unfinished", 100, {});
        break;
      case 4:
        (void)dir_->Remove(i % 7 == 0 ? "acme" : "", key, /*force=*/true);
        break;
      default:
        clock_.AdvanceMs(1000);
        break;
    }
  };
  for (int i = 0; i < 200; ++i) random_op(i);
  FullCopy(*dir_, &state);
  for (int round = 0; round < 10; ++round) {
    for (int i = 0; i < 60; ++i) random_op(i);
    if (round == 5) {
      ASSERT_EQ(dir_->UnmountSegment(node_a, seg_a.id), ErrorCode::OK);
      Mount(node_a, "a2", 4 << 20);
    }
    state.Apply(dir_->TakeChanges());
  }
  EXPECT_EQ(state.seq(), dir_->ChangeSeq());

  ManualClock clock2;
  auto loaded = MakeTestDirectory(&clock2);
  ASSERT_EQ(state.LoadInto(*loaded), ErrorCode::OK);
  const auto want = Readable(*dir_);
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(Readable(*loaded), want);
  // Every range the loaded allocators hold is an object's: as many bytes
  // allocated as the leader's objects hold, unfinished puts included.
  const uint64_t held = HeldBytes(*dir_);
  EXPECT_EQ(HeldBytes(*loaded), held);
  EXPECT_EQ(loaded->Stats().allocated_bytes, held);
  // New puts on the loaded directory land beside, never over, the objects.
  for (int i = 0; i < 50; ++i) {
    auto placed = loaded->PutStart(writer_, "", "new" + std::to_string(i), 4096, {});
    ASSERT_TRUE(placed.ok()) << i;
  }
  EXPECT_EQ(loaded->Stats().allocated_bytes, held + 50 * 4096);
}

TEST_F(StandbyStateTest, ReplicasOnUnknownSegmentsAreDroppedAtLoad) {
  dir_->EnableChangeTracking();
  const UUID node = UUID::Generate();
  Mount(node, "a");
  ASSERT_EQ(Put("k1"), ErrorCode::OK);
  StandbyState state;
  ChangeSet changes = dir_->TakeChanges();
  changes.has_segments = false;  // the table arrives in a later batch
  state.Apply(std::move(changes));
  EXPECT_EQ(state.object_count(), 1u);
  ManualClock clock2;
  auto loaded = MakeTestDirectory(&clock2);
  ASSERT_EQ(state.LoadInto(*loaded), ErrorCode::OK);
  EXPECT_EQ(loaded->CountKeys("", true), 0u);
  // Removals drop the key.
  ASSERT_EQ(dir_->Remove("", "k1", true), ErrorCode::OK);
  state.Apply(dir_->TakeChanges());
  EXPECT_EQ(state.object_count(), 0u);
}

// A node restarted on its endpoint supersedes the old process's segment and
// SSD store at the leader: a standby learns both drops from the change feed,
// so after a failover no lookup names the dead process either.
TEST_F(StandbyStateTest, AStoreDroppedByARestartedNodeIsDroppedOnTheStandby) {
  dir_->EnableChangeTracking();
  ASSERT_NO_FATAL_FAILURE(MountNodeWithStore(UUID::Generate()));
  StandbyState state;
  FullCopy(*dir_, &state);
  const UUID restarted = UUID::Generate();
  ASSERT_EQ(dir_->MountSegment(restarted, MakeSegment("a", 1 << 20)), ErrorCode::OK);
  ASSERT_EQ(dir_->MountLocalDisk(restarted, false, "a:1234"), ErrorCode::OK);
  state.Apply(dir_->TakeChanges());

  ManualClock clock2;
  auto loaded = MakeTestDirectory(&clock2);
  ASSERT_EQ(state.LoadInto(*loaded), ErrorCode::OK);
  ASSERT_NO_FATAL_FAILURE(ExpectOldStoreGone(*loaded, restarted));
  EXPECT_EQ(loaded->ExportSegmentTable().disks.size(), 1u);
  EXPECT_EQ(Readable(*loaded), Readable(*dir_));
}

TEST_F(StandbyStateTest, NothingIsRecordedBeforeTrackingIsEnabled) {
  Mount(UUID::Generate(), "a");
  ASSERT_EQ(Put("k"), ErrorCode::OK);
  EXPECT_EQ(dir_->ChangeSeq(), 0u);
  EXPECT_TRUE(dir_->TakeChanges().empty());
  dir_->EnableChangeTracking();
  ASSERT_EQ(Put("k2"), ErrorCode::OK);
  const uint64_t seq = dir_->ChangeSeq();
  EXPECT_GT(seq, 0u);
  ChangeSet c = dir_->TakeChanges();
  EXPECT_EQ(c.seq, seq);
  ASSERT_EQ(c.shards.size(), 1u);
  EXPECT_EQ(c.shards[0].objects.at(0).key, "k2");
  EXPECT_TRUE(dir_->TakeChanges().empty());
}

// An unfinished put ships with its PROCESSING replicas, and a loaded copy
// (a promotion) holds it as an unfinished put started at the load: its
// client may be writing into its range, so no other put gets that range
// within the put discard timeout, the client's PutEnd on the new leader
// completes it in that range, after the timeout a new put of the key
// reclaims it, and after the release timeout the background pass drops it.
// Lookups never report it meanwhile.
TEST_F(StandbyStateTest, ALoadedCopyHoldsAnUnfinishedPutsRange) {
  dir_->EnableChangeTracking();
  constexpr uint64_t kObject = 1 << 19;
  Segment seg = Mount(UUID::Generate(), "a", 2 * kObject);
  PutConfig pinned;
  pinned.hard_pin = true;  // never evicted for a put: the segment stays full
  ASSERT_EQ(Put("done", kObject, pinned), ErrorCode::OK);
  auto started = dir_->PutStart(writer_, "", "mid", kObject, {});
  ASSERT_TRUE(started.ok()) << ErrorCodeName(started.error());
  const uint64_t mid = started->at(0).memory.buffer_address;
  clock_.AdvanceMs(20'000);  // the put started long before the failover

  ChangeSet changes = dir_->TakeChanges();
  EXPECT_TRUE(changes.removed.empty()) << "the unfinished put ships as an object";
  const ObjectState* shipped = nullptr;
  for (const ShardState& shard : changes.shards) {
    for (const ObjectState& o : shard.objects) {
      if (o.key == "mid") shipped = &o;
    }
  }
  ASSERT_NE(shipped, nullptr);
  ASSERT_EQ(shipped->replicas.size(), 1u);
  EXPECT_EQ(shipped->replicas[0].status, ReplicaStatus::PROCESSING);
  EXPECT_EQ(shipped->replicas[0].offset, mid - seg.base);
  EXPECT_EQ(shipped->put_age_ms, 20'000);
  StandbyState state;
  state.Apply(std::move(changes));
  EXPECT_EQ(state.object_count(), 2u);
  ASSERT_EQ(state.SegmentsForRestore().segments.size(), 1u);
  EXPECT_TRUE(state.SegmentsForRestore().segments[0].free_extents.empty())
      << "the copy holds both ranges";

  const int64_t discard_ms = DirectoryOptions{}.put_start_discard_timeout_ms;
  {
    SCOPED_TRACE("completed by its client");
    ManualClock clock2;
    auto loaded = MakeTestDirectory(&clock2);
    ASSERT_EQ(state.LoadInto(*loaded), ErrorCode::OK);
    auto exists = loaded->ExistKey("", "mid");
    ASSERT_TRUE(exists.ok());
    EXPECT_FALSE(*exists);
    auto looked_up = loaded->GetReplicaList("", "mid");
    ASSERT_FALSE(looked_up.ok());
    EXPECT_EQ(looked_up.error(), ErrorCode::REPLICA_IS_NOT_READY);
    auto other = loaded->PutStart(UUID::Generate(), "", "other", kObject, {});
    ASSERT_FALSE(other.ok()) << "got the unfinished put's range";
    EXPECT_EQ(other.error(), ErrorCode::NO_AVAILABLE_HANDLE);
    // Inside the discard timeout counted from the load (not from the
    // leader's start, 20 s before it), the key is not reclaimed.
    clock2.AdvanceMs(discard_ms - 1000);
    auto again = loaded->PutStart(UUID::Generate(), "", "mid", kObject, {});
    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.error(), ErrorCode::OBJECT_ALREADY_EXISTS);
    ASSERT_EQ(loaded->PutEnd(writer_, "", "mid"), ErrorCode::OK);
    auto done = loaded->GetReplicaList("", "mid");
    ASSERT_TRUE(done.ok()) << ErrorCodeName(done.error());
    EXPECT_EQ(done->replicas.at(0).memory.buffer_address, mid) << "where its client wrote";
  }
  {
    SCOPED_TRACE("reclaimed after the discard timeout");
    ManualClock clock3;
    auto loaded = MakeTestDirectory(&clock3);
    ASSERT_EQ(state.LoadInto(*loaded), ErrorCode::OK);
    clock3.AdvanceMs(discard_ms + 1000);
    auto reclaimed = loaded->PutStart(UUID::Generate(), "", "mid", kObject, {});
    ASSERT_TRUE(reclaimed.ok()) << ErrorCodeName(reclaimed.error());
    EXPECT_EQ(reclaimed->at(0).memory.buffer_address, mid);
    EXPECT_EQ(loaded->PutEnd(writer_, "", "mid"), ErrorCode::ILLEGAL_CLIENT)
        << "the first put is gone";
  }
  {
    SCOPED_TRACE("dropped by the background pass after the release timeout");
    ManualClock clock4;
    DirectoryOptions options;
    options.put_start_release_timeout_ms = 5'000;  // under the client TTL: no expiry
    auto loaded = MakeTestDirectory(&clock4, options);
    ASSERT_EQ(state.LoadInto(*loaded), ErrorCode::OK);
    clock4.AdvanceMs(4'000);  // the leader's 20 s do not count
    loaded->RunBackgroundOnce();
    EXPECT_EQ(loaded->Stats().allocated_bytes, 2 * kObject);
    clock4.AdvanceMs(2'000);
    loaded->RunBackgroundOnce();
    EXPECT_EQ(loaded->Stats().allocated_bytes, kObject);
    auto placed = loaded->PutStart(UUID::Generate(), "", "other", kObject, {});
    ASSERT_TRUE(placed.ok()) << ErrorCodeName(placed.error());
    EXPECT_EQ(placed->at(0).memory.buffer_address, mid);
  }
}

// Ranges no object holds (held ranges: a pending upsert version, a
// promotion's or a task's reservation, a retired range) ship by id, and a
// loaded copy holds each as a retired range until the leader would have
// given it back, counted from the load: in a full segment a put finds no
// room until then, and finds it after.
constexpr uint64_t kHalf = 1 << 19;

PutConfig Pinned() {
  PutConfig config;
  config.hard_pin = true;  // never evicted for a put: the segment stays full
  return config;
}

// Loads `state` into a fresh directory whose clients never expire.
std::unique_ptr<Directory> Load(const StandbyState& state, ManualClock* clock) {
  DirectoryOptions options;
  options.client_ttl_ms = int64_t{24} * 3600 * 1000;
  auto loaded = MakeTestDirectory(clock, options);
  EXPECT_EQ(state.LoadInto(*loaded), ErrorCode::OK);
  return loaded;
}

// A put of kHalf into the loaded copy finds no room until `hold_ms` after
// the load (the background pass run just before), and room after.
void ExpectHeldFor(const StandbyState& state, int64_t hold_ms) {
  ManualClock clock;
  auto loaded = Load(state, &clock);
  auto put = [&] { return loaded->PutStart(UUID::Generate(), "", "other", kHalf, {}); };
  auto refused = put();
  ASSERT_FALSE(refused.ok()) << "got a held range";
  EXPECT_EQ(refused.error(), ErrorCode::NO_AVAILABLE_HANDLE);
  clock.AdvanceMs(hold_ms - 1000);
  loaded->RunBackgroundOnce();
  refused = put();
  ASSERT_FALSE(refused.ok()) << "got a held range before its deadline";
  EXPECT_EQ(refused.error(), ErrorCode::NO_AVAILABLE_HANDLE);
  clock.AdvanceMs(2000);
  loaded->RunBackgroundOnce();
  auto placed = put();
  EXPECT_TRUE(placed.ok()) << ErrorCodeName(placed.error());
}

TEST_F(StandbyStateTest, ALoadedCopyHoldsARetiredRangeUntilTheOldLeaseEnds) {
  dir_->EnableChangeTracking();
  Mount(UUID::Generate(), "a", 2 * kHalf);
  ASSERT_EQ(Put("k", kHalf, Pinned()), ErrorCode::OK);
  StandbyState state;
  FullCopy(*dir_, &state);
  ASSERT_TRUE(dir_->GetReplicaList("", "k").ok());  // a reader's lease on the old version
  PutConfig replace = Pinned();
  replace.replace = true;
  ASSERT_EQ(Put("k", kHalf, replace), ErrorCode::OK);  // the old range is retired
  state.Apply(dir_->TakeChanges());
  EXPECT_EQ(state.held_count(), 1u);
  ExpectHeldFor(state, DirectoryOptions{}.default_kv_lease_ttl_ms);
  // Once given back at the leader, the copy lets it go too.
  clock_.AdvanceMs(DirectoryOptions{}.default_kv_lease_ttl_ms + 1);
  dir_->RunBackgroundOnce();
  state.Apply(dir_->TakeChanges());
  EXPECT_EQ(state.held_count(), 0u);
}

// An upsert in flight ships with its key (ObjectState::pending): a loaded
// copy holds its range as a pending version started at the load, lookups
// see the old version until the writer's PutEnd on the new leader swaps
// the new one in, and the release timeout (from the load) drops it.
TEST_F(StandbyStateTest, ALoadedCopyHoldsAPendingUpsertItsWriterCompletes) {
  dir_->EnableChangeTracking();
  Mount(UUID::Generate(), "a", 2 * kHalf);
  ASSERT_EQ(Put("k", kHalf, Pinned()), ErrorCode::OK);  // by writer_
  auto old = dir_->GetReplicaList("", "k");
  ASSERT_TRUE(old.ok());
  const uint64_t old_address = old->replicas.at(0).memory.buffer_address;
  PutConfig replace = Pinned();
  replace.replace = true;
  replace.data_type = DataType::TENSOR;
  auto started = dir_->PutStart(writer_, "", "k", kHalf - 64, replace);
  ASSERT_TRUE(started.ok()) << ErrorCodeName(started.error());
  const uint64_t new_address = started->at(0).memory.buffer_address;
  clock_.AdvanceMs(20'000);  // the upsert started long before the failover
  StandbyState state;
  state.Apply(dir_->TakeChanges());
  EXPECT_EQ(state.held_count(), 0u) << "the pending version travels with its key";
  ExpectHeldFor(state, DirectoryOptions{}.put_start_release_timeout_ms);

  ManualClock clock;
  auto loaded = Load(state, &clock);
  auto before = loaded->GetReplicaList("", "k");
  ASSERT_TRUE(before.ok()) << ErrorCodeName(before.error());
  EXPECT_EQ(before->size, kHalf) << "the old version until the swap";
  EXPECT_EQ(before->replicas.at(0).memory.buffer_address, old_address);
  auto again = loaded->PutStart(UUID::Generate(), "", "k", kHalf, replace);
  ASSERT_FALSE(again.ok()) << "a second upsert inside the discard timeout from the load";
  EXPECT_EQ(again.error(), ErrorCode::OBJECT_ALREADY_EXISTS);
  EXPECT_EQ(loaded->PutEnd(UUID::Generate(), "", "k"), ErrorCode::ILLEGAL_CLIENT);
  ASSERT_EQ(loaded->PutEnd(writer_, "", "k"), ErrorCode::OK);
  auto after = loaded->GetReplicaList("", "k");
  ASSERT_TRUE(after.ok()) << ErrorCodeName(after.error());
  EXPECT_EQ(after->size, kHalf - 64) << "the new version";
  EXPECT_EQ(after->replicas.at(0).memory.buffer_address, new_address) << "where its writer wrote";
  auto info = loaded->Stat("", "k");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->data_type, DataType::TENSOR);
}

// A pending version's replicas must be PROCESSING MEMORY replicas in
// allocated space: anything else is DATA_CORRUPTED and restores nothing.
TEST_F(StandbyStateTest, ABadPendingVersionIsCorrupt) {
  dir_->EnableChangeTracking();
  Mount(UUID::Generate(), "a", 2 * kHalf);
  ASSERT_EQ(Put("k", kHalf), ErrorCode::OK);
  PutConfig replace;
  replace.replace = true;
  ASSERT_TRUE(dir_->PutStart(writer_, "", "k", kHalf, replace).ok());
  StandbyState state;
  state.Apply(dir_->TakeChanges());
  const uint32_t index = static_cast<uint32_t>(ShardIndex("default", "k"));
  ManualClock clock;
  auto loaded = MakeTestDirectory(&clock);
  ASSERT_EQ(loaded->RestoreSegments(state.SegmentsForRestore()), ErrorCode::OK);
  const ShardState good = state.ShardForRestore(index);
  ASSERT_EQ(good.objects.size(), 1u);
  ASSERT_TRUE(good.objects[0].pending);
  ASSERT_EQ(good.objects[0].pending->replicas.size(), 1u);
  std::vector<std::function<void(PendingVersionState&)>> edits = {
      [](PendingVersionState& v) { v.replicas[0].status = ReplicaStatus::COMPLETE; },
      [](PendingVersionState& v) { v.replicas[0].type = ReplicaType::LOCAL_DISK; },
      [](PendingVersionState& v) { v.replicas[0].offset += 64; },  // not allocated
      [](PendingVersionState& v) { v.replicas[0].id = 0; },
      [](PendingVersionState& v) { v.size = 0; },
      [](PendingVersionState& v) { v.put_age_ms = -1; },
  };
  for (size_t i = 0; i < edits.size(); ++i) {
    ShardState bad = good;
    edits[i](*bad.objects[0].pending);
    EXPECT_EQ(loaded->RestoreShard(bad, UnfinishedPuts::kHold), ErrorCode::DATA_CORRUPTED) << i;
    EXPECT_EQ(loaded->CountKeys("", true), 0u) << i;
  }
  EXPECT_EQ(loaded->RestoreShard(good, UnfinishedPuts::kHold), ErrorCode::OK);
  EXPECT_EQ(loaded->CountKeys("", true), 1u);
}

TEST_F(StandbyStateTest, ALoadedCopyHoldsATasksReservation) {
  dir_->EnableChangeTracking();
  Mount(UUID::Generate(), "a", kHalf);
  Mount(UUID::Generate(), "b", kHalf);
  ASSERT_EQ(Put("k", kHalf, Pinned()), ErrorCode::OK);  // fills "a"
  auto id = dir_->CreateTask(writer_, "", {TaskType::REPLICA_COPY, "k", "", {"b"}});
  ASSERT_TRUE(id.ok()) << ErrorCodeName(id.error());
  ASSERT_TRUE(dir_->TaskStart(writer_, "", *id).ok());  // reserves all of "b"
  StandbyState state;
  FullCopy(*dir_, &state);
  EXPECT_EQ(state.held_count(), 1u);
  ExpectHeldFor(state, 60'000);
  ManualClock clock;
  auto loaded = Load(state, &clock);
  EXPECT_EQ(loaded->TaskEnd(writer_, "", *id, ErrorCode::OK), ErrorCode::TASK_NOT_FOUND)
      << "the new leader knows no such task";
}

class StandbyPromotionTest : public DirectoryFixture {
 protected:
  StandbyPromotionTest() : DirectoryFixture(OffloadOptions()) {}
};

TEST_F(StandbyPromotionTest, ALoadedCopyHoldsAPromotionsReservation) {
  dir_->EnableChangeTracking();
  const UUID node = UUID::Generate();
  Mount(node, "a", 2 * kHalf);
  ASSERT_EQ(dir_->MountLocalDisk(node, true, "a:7000"), ErrorCode::OK);
  auto codes = dir_->NotifyOffloadSuccess(
      node, {{"", "d", {1, 0, 1, static_cast<int64_t>(kHalf), "a:7000"}}});
  ASSERT_TRUE(codes.ok());
  ASSERT_EQ((*codes)[0], ErrorCode::OK);
  auto grants = dir_->PromoteStart(node, {{"", "d", kHalf}});
  ASSERT_TRUE(grants.ok());
  ASSERT_EQ((*grants)[0].code, ErrorCode::OK);
  ASSERT_EQ(Put("done", kHalf, Pinned()), ErrorCode::OK);  // fills the rest
  StandbyState state;
  state.Apply(dir_->TakeChanges());
  EXPECT_EQ(state.held_count(), 1u);
  ExpectHeldFor(state, 60'000);
  ManualClock clock;
  auto loaded = Load(state, &clock);
  auto ends = loaded->PromoteEnd(node, {{"", "d", true}});
  ASSERT_TRUE(ends.ok()) << ErrorCodeName(ends.error());
  EXPECT_EQ((*ends)[0], ErrorCode::OBJECT_NOT_FOUND) << "the new leader knows no such promotion";
}

}  // namespace
}  // namespace shelfmark
