// StandbyState against a real Directory: a full copy taken while the
// directory changes, then batches of changes, load into a fresh Directory
// that then holds exactly the leader's readable objects, with allocators
// that never hand out a range an object holds.
#include "replication/standby_state.h"

#include <gtest/gtest.h>

#include <algorithm>
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
  // allocated as the leader's readable objects hold (its unfinished puts
  // are not restored).
  uint64_t held = 0;
  for (const Row& row : want) {
    held += std::get<3>(row).size() * ((std::get<2>(row) + 63) / 64 * 64);
  }
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

// What lets a put's start be answered before standbys acknowledge it: an
// unfinished put ships as absent (a loaded standby drops it anyway), and
// FreeSeq covers the removal whose range the new put reuses, so a standby
// that acknowledged it holds no object in that range any more.
TEST_F(StandbyStateTest, UnfinishedPutsShipAsAbsentAndFreeSeqCoversReusedRanges) {
  dir_->EnableChangeTracking();
  Mount(UUID::Generate(), "a", 1 << 20);
  ASSERT_EQ(Put("old", 1 << 20), ErrorCode::OK);  // fills the segment
  EXPECT_EQ(dir_->FreeSeq(), 0u) << "puts free nothing";
  StandbyState state;
  state.Apply(dir_->TakeChanges());
  ASSERT_EQ(state.object_count(), 1u);
  auto old = dir_->GetReplicaList("", "old");
  ASSERT_TRUE(old.ok());

  const uint64_t before_remove = dir_->ChangeSeq();
  ASSERT_EQ(dir_->Remove("", "old", true), ErrorCode::OK);
  auto started = dir_->PutStart(writer_, "", "new", 1 << 20, {});
  ASSERT_TRUE(started.ok()) << ErrorCodeName(started.error());
  ASSERT_EQ(started->at(0).memory.buffer_address, old->replicas.at(0).memory.buffer_address)
      << "the new put reuses the removed object's range";
  const uint64_t free_seq = dir_->FreeSeq();
  EXPECT_GT(free_seq, before_remove) << "the removal is counted before its range is freed";
  EXPECT_LE(free_seq, dir_->ChangeSeq());

  ChangeSet changes = dir_->TakeChanges();
  EXPECT_GE(changes.seq, free_seq);
  EXPECT_TRUE(changes.shards.empty()) << "the unfinished put ships as absent";
  EXPECT_EQ(changes.removed.size(), 2u);  // "old" and the unfinished "new"
  state.Apply(std::move(changes));
  EXPECT_EQ(state.object_count(), 0u) << "no object left in the reused range";

  ASSERT_EQ(dir_->PutEnd(writer_, "", "new"), ErrorCode::OK);
  ChangeSet finished = dir_->TakeChanges();
  ASSERT_EQ(finished.shards.size(), 1u);
  EXPECT_EQ(finished.shards[0].objects.at(0).key, "new");
  state.Apply(std::move(finished));
  EXPECT_EQ(state.object_count(), 1u);
}

}  // namespace
}  // namespace shelfmark
