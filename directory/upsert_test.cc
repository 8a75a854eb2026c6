// Upsert (PutConfig::replace): the live version stays readable until PutEnd
// swaps the new one in; the old MEMORY ranges are retired until the old
// lease ends; revoke, remove, unmount, staleness, batches, snapshots.
#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "directory/directory.h"
#include "directory/directory_test_util.h"

namespace shelfmark {
namespace {

PutConfig Replace(uint64_t checksum = 0) {
  PutConfig c;
  c.replace = true;
  if (checksum != 0) c.checksum = checksum;
  return c;
}

class UpsertTest : public DirectoryFixture {
 protected:
  void SetUp() override { seg_ = Mount(node_, "seg-a"); }

  uint64_t Address(const std::string& key) {
    auto got = dir_->GetReplicaList("", key);
    EXPECT_TRUE(got.ok()) << key;
    return got.ok() ? got->replicas[0].memory.buffer_address : 0;
  }
  // Expires every lease granted so far; the node stays alive (pings).
  void PassLeases() { Advance(dir_->options().default_kv_lease_ttl_ms + 1); }
  void Advance(int64_t ms) {
    clock_.AdvanceMs(ms);
    dir_->Ping(node_);
  }

  Segment seg_;
};

TEST_F(UpsertTest, TheOldVersionIsReadUntilPutEndThenOnlyTheNewOne) {
  PutConfig first;
  first.checksum = 1;
  ASSERT_EQ(Put("k", 100, first), ErrorCode::OK);
  const uint64_t old_address = Address("k");
  auto started = dir_->PutStart(writer_, "", "k", 1000, Replace(2));
  ASSERT_TRUE(started.ok()) << ErrorCodeName(started.error());
  EXPECT_EQ((*started)[0].status, ReplicaStatus::PROCESSING);
  EXPECT_NE((*started)[0].memory.buffer_address, old_address);
  auto before = dir_->GetReplicaList("", "k");
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->size, 100u);
  EXPECT_EQ(before->checksum, 1u);
  EXPECT_EQ(before->replicas[0].memory.buffer_address, old_address);
  EXPECT_EQ(dir_->Stat("", "k")->replicas.size(), 1u) << "the pending version is not listed";

  ASSERT_EQ(dir_->PutEnd(writer_, "", "k"), ErrorCode::OK);
  auto after = dir_->GetReplicaList("", "k");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->size, 1000u);
  EXPECT_EQ(after->checksum, 2u);
  ASSERT_EQ(after->replicas.size(), 1u);
  EXPECT_EQ(after->replicas[0].status, ReplicaStatus::COMPLETE);
  EXPECT_EQ(after->replicas[0].memory.buffer_address, (*started)[0].memory.buffer_address);
  EXPECT_EQ(dir_->Stats().key_count, 1u);
  EXPECT_EQ(dir_->Stats().upserts, 1u);
}

// An upsert's checksum may come with its PutEnd: the new version is
// swapped in with it; a mismatch leaves the old version the readable one.
TEST_F(UpsertTest, PutEndsChecksumGoesWithTheNewVersion) {
  ASSERT_EQ(Put("k", 100, Replace(1)), ErrorCode::OK);
  ASSERT_TRUE(dir_->PutStart(writer_, "", "k", 200, Replace(3)).ok());
  EXPECT_EQ(dir_->PutEnd(writer_, "", "k", ReplicaType::MEMORY, 4), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(dir_->GetReplicaList("", "k")->checksum, std::optional<uint64_t>(1));
  ASSERT_EQ(dir_->PutRevoke(writer_, "", "k"), ErrorCode::OK);
  ASSERT_TRUE(dir_->PutStart(writer_, "", "k", 300, Replace()).ok());
  ASSERT_EQ(dir_->PutEnd(writer_, "", "k", ReplicaType::MEMORY, 9), ErrorCode::OK);
  auto after = dir_->GetReplicaList("", "k");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->size, 300u);
  EXPECT_EQ(after->checksum, std::optional<uint64_t>(9));
}

TEST_F(UpsertTest, OldRangesAreFreedOnlyOnceTheOldLeasePassed) {
  ASSERT_EQ(Put("k", 100), ErrorCode::OK);
  ASSERT_TRUE(dir_->GetReplicaList("", "k").ok());  // a reader's lease
  ASSERT_TRUE(dir_->PutStart(writer_, "", "k", 100, Replace()).ok());
  ASSERT_EQ(dir_->PutEnd(writer_, "", "k"), ErrorCode::OK);
  EXPECT_EQ(dir_->Stats().allocated_bytes, 256u);
  EXPECT_EQ(dir_->Stats().retired_bytes, 128u);
  dir_->RunBackgroundOnce();
  EXPECT_EQ(dir_->Stats().retired_bytes, 128u) << "the reader may still be reading";
  PassLeases();
  dir_->RunBackgroundOnce();
  EXPECT_EQ(dir_->Stats().retired_bytes, 0u);
  EXPECT_EQ(dir_->Stats().allocated_bytes, 128u);
  // Without a live lease the old range is free at once.
  ASSERT_TRUE(dir_->PutStart(writer_, "", "k", 100, Replace()).ok());
  ASSERT_EQ(dir_->PutEnd(writer_, "", "k"), ErrorCode::OK);
  EXPECT_EQ(dir_->Stats().allocated_bytes, 128u);
  EXPECT_EQ(dir_->Stats().retired_bytes, 0u);
}

TEST_F(UpsertTest, RevokeDropsThePendingVersionOnly) {
  ASSERT_EQ(Put("k", 100), ErrorCode::OK);
  ASSERT_TRUE(dir_->PutStart(writer_, "", "k", 500, Replace()).ok());
  EXPECT_EQ(dir_->PutEnd(UUID::Generate(), "", "k"), ErrorCode::ILLEGAL_CLIENT);
  EXPECT_EQ(dir_->PutRevoke(UUID::Generate(), "", "k"), ErrorCode::ILLEGAL_CLIENT);
  ASSERT_EQ(dir_->PutRevoke(writer_, "", "k"), ErrorCode::OK);
  EXPECT_EQ(dir_->GetReplicaList("", "k")->size, 100u);
  EXPECT_EQ(dir_->Stats().allocated_bytes, 128u);
  EXPECT_EQ(dir_->Stats().upserts, 0u);
}

TEST_F(UpsertTest, RemoveDropsAPendingVersion) {
  for (bool force : {false, true}) {
    ASSERT_EQ(Put("k", 100), ErrorCode::OK);
    ASSERT_TRUE(dir_->PutStart(writer_, "", "k", 500, Replace()).ok());
    ASSERT_EQ(dir_->Remove("", "k", force), ErrorCode::OK);
    EXPECT_EQ(dir_->Stats().allocated_bytes, 0u) << force;
    EXPECT_EQ(dir_->PutEnd(writer_, "", "k"), ErrorCode::OBJECT_NOT_FOUND) << force;
    EXPECT_EQ(dir_->Stats().key_count, 0u);
  }
  ASSERT_EQ(Put("k", 100), ErrorCode::OK);
  ASSERT_TRUE(dir_->PutStart(writer_, "", "k", 500, Replace()).ok());
  EXPECT_EQ(*dir_->RemoveByRegex("", "^k$", false), 1u);
  EXPECT_EQ(dir_->Stats().allocated_bytes, 0u);
}

TEST_F(UpsertTest, ASecondReplaceWaitsUnlessTheFirstIsStale) {
  ASSERT_EQ(Put("k", 100), ErrorCode::OK);
  ASSERT_TRUE(dir_->PutStart(writer_, "", "k", 100, Replace()).ok());
  UUID other = UUID::Generate();
  EXPECT_EQ(dir_->PutStart(other, "", "k", 100, Replace()).error(),
            ErrorCode::OBJECT_ALREADY_EXISTS);
  EXPECT_EQ(dir_->PutStart(other, "", "k", 100, {}).error(), ErrorCode::OBJECT_ALREADY_EXISTS)
      << "a plain put of an existing key is refused as ever";
  clock_.AdvanceMs(dir_->options().put_start_discard_timeout_ms + 1000);
  ASSERT_TRUE(dir_->PutStart(other, "", "k", 100, Replace()).ok());
  EXPECT_EQ(dir_->Stats().allocated_bytes, 256u) << "the stale pending version was freed";
  EXPECT_EQ(dir_->PutEnd(writer_, "", "k"), ErrorCode::ILLEGAL_CLIENT);
  EXPECT_EQ(dir_->PutEnd(other, "", "k"), ErrorCode::OK);
}

TEST_F(UpsertTest, TheBackgroundPassReclaimsAnAbandonedPendingVersion) {
  ASSERT_EQ(Put("k", 100), ErrorCode::OK);
  ASSERT_TRUE(dir_->PutStart(writer_, "", "k", 100, Replace()).ok());
  Advance(dir_->options().put_start_release_timeout_ms + 1000);
  dir_->RunBackgroundOnce();
  EXPECT_EQ(dir_->Stats().allocated_bytes, 128u);
  EXPECT_EQ(dir_->GetReplicaList("", "k")->size, 100u);
}

TEST_F(UpsertTest, AReplaceOfAMissingKeyIsAPlainPut) {
  ASSERT_TRUE(dir_->PutStart(writer_, "", "new", 100, Replace()).ok());
  ASSERT_EQ(dir_->PutEnd(writer_, "", "new"), ErrorCode::OK);
  EXPECT_EQ(dir_->GetReplicaList("", "new")->size, 100u);
  EXPECT_EQ(dir_->Stats().upserts, 0u);
}

TEST_F(UpsertTest, GroupsFollowTheNewVersion) {
  PutConfig g1;
  g1.group_id = "g1";
  ASSERT_EQ(Put("k", 100, g1), ErrorCode::OK);
  PutConfig g2 = Replace();
  g2.group_id = "g2";
  ASSERT_TRUE(dir_->PutStart(writer_, "", "k", 100, g2).ok());
  EXPECT_EQ(dir_->GroupMembers("", "g2").error(), ErrorCode::OBJECT_NOT_FOUND);
  ASSERT_EQ(dir_->PutEnd(writer_, "", "k"), ErrorCode::OK);
  EXPECT_EQ(dir_->GroupMembers("", "g1").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(*dir_->GroupMembers("", "g2"), std::vector<std::string>{"k"});
}

TEST_F(UpsertTest, UnmountDropsPendingVersionsAndRetiredRangesInTheSegment) {
  UUID node_b = UUID::Generate();
  Segment b = MakeSegment("seg-b", 1 << 20, 0x900000);
  ASSERT_EQ(dir_->MountSegment(node_b, b), ErrorCode::OK);
  PutConfig on_a, on_b = Replace();
  on_a.preferred_segments = {"seg-a"};
  on_b.preferred_segments = {"seg-b"};
  // A pending version on seg-b goes with it; the live one stays.
  ASSERT_EQ(Put("k", 100, on_a), ErrorCode::OK);
  ASSERT_TRUE(dir_->PutStart(writer_, "", "k", 100, on_b).ok());
  ASSERT_EQ(dir_->UnmountSegment(node_b, b.id), ErrorCode::OK);
  EXPECT_EQ(dir_->GetReplicaList("", "k")->size, 100u);
  EXPECT_EQ(dir_->Stats().allocated_bytes, 128u);
  // A retired range on seg-b goes with it.
  ASSERT_EQ(dir_->MountSegment(node_b, b), ErrorCode::OK);
  PutConfig plain_b;
  plain_b.preferred_segments = {"seg-b"};
  ASSERT_EQ(Put("j", 100, plain_b), ErrorCode::OK);
  ASSERT_TRUE(dir_->GetReplicaList("", "j").ok());  // leased: retired, not freed
  PutConfig replace_a = Replace();
  replace_a.preferred_segments = {"seg-a"};
  ASSERT_TRUE(dir_->PutStart(writer_, "", "j", 100, replace_a).ok());
  ASSERT_EQ(dir_->PutEnd(writer_, "", "j"), ErrorCode::OK);
  EXPECT_EQ(dir_->Stats().retired_bytes, 128u);
  ASSERT_EQ(dir_->UnmountSegment(node_b, b.id), ErrorCode::OK);
  EXPECT_EQ(dir_->Stats().retired_bytes, 0u);
  EXPECT_EQ(dir_->Stats().allocated_bytes, 256u);  // k and j on seg-a
  PassLeases();
  dir_->RunBackgroundOnce();  // nothing left to release on the erased segment
  EXPECT_EQ(dir_->Stats().allocated_bytes, 256u);
}

TEST_F(UpsertTest, EvictionNeverTakesAnObjectMidUpsert) {
  ASSERT_EQ(Put("k", 100), ErrorCode::OK);
  ASSERT_TRUE(dir_->PutStart(writer_, "", "k", 900 << 10, Replace()).ok());  // past the watermark
  dir_->RunBackgroundOnce();
  EXPECT_EQ(dir_->Stats().evicted_objects, 0u);
  ASSERT_EQ(dir_->PutEnd(writer_, "", "k"), ErrorCode::OK);
  EXPECT_EQ(dir_->GetReplicaList("", "k")->size, uint64_t{900} << 10);
}

TEST_F(UpsertTest, BatchesHonourReplace) {
  const std::vector<std::string> keys = {"a", "b"};
  ASSERT_EQ(Put("a", 100), ErrorCode::OK);
  ASSERT_EQ(Put("b", 100), ErrorCode::OK);
  for (const auto& r : dir_->BatchPutStart(writer_, "", keys, {300, 400}, Replace())) {
    ASSERT_TRUE(r.ok()) << ErrorCodeName(r.error());
  }
  EXPECT_EQ(dir_->GetReplicaList("", "a")->size, 100u);
  for (ErrorCode c : dir_->BatchPutEnd(writer_, "", keys)) EXPECT_EQ(c, ErrorCode::OK);
  EXPECT_EQ(dir_->GetReplicaList("", "a")->size, 300u);
  EXPECT_EQ(dir_->GetReplicaList("", "b")->size, 400u);
  for (const auto& r : dir_->BatchPutStart(writer_, "", keys, {1, 1}, Replace())) {
    ASSERT_TRUE(r.ok());
  }
  for (ErrorCode c : dir_->BatchPutRevoke(writer_, "", keys)) EXPECT_EQ(c, ErrorCode::OK);
  EXPECT_EQ(dir_->GetReplicaList("", "b")->size, 400u);
}

uint64_t FreeBytes(const SegmentsState& state) {
  uint64_t free = 0;
  for (const SegmentState& s : state.segments) {
    for (const auto& [offset, length] : s.free_extents) free += length;
  }
  return free;
}

TEST_F(UpsertTest, SnapshotsRecordRetiredAndPendingRangesAsFree) {
  ASSERT_EQ(Put("k", 100), ErrorCode::OK);
  ASSERT_TRUE(dir_->GetReplicaList("", "k").ok());
  ASSERT_TRUE(dir_->PutStart(writer_, "", "k", 100, Replace()).ok());
  ASSERT_EQ(dir_->PutEnd(writer_, "", "k"), ErrorCode::OK);       // retires 128 bytes
  ASSERT_EQ(Put("j", 100), ErrorCode::OK);
  ASSERT_TRUE(dir_->PutStart(writer_, "", "j", 100, Replace()).ok());  // 128 pending
  EXPECT_EQ(dir_->Stats().allocated_bytes, 4 * 128u);
  SegmentsState exported;
  dir_->RunPaused([&] { exported = dir_->ExportSegments(); });
  EXPECT_EQ(FreeBytes(exported), seg_.size - 2 * 128u) << "only the live versions are held";
  // Restored, the directory holds the live versions only.
  auto restored = MakeTestDirectory(&clock_);
  ASSERT_EQ(restored->RestoreSegments(exported), ErrorCode::OK);
  for (uint32_t i = 0; i < 1024; ++i) {
    ShardState shard;
    dir_->RunPaused([&] { shard = dir_->ExportShard(i); });
    ASSERT_EQ(restored->RestoreShard(shard), ErrorCode::OK);
  }
  EXPECT_EQ(restored->Stats().allocated_bytes, 2 * 128u);
  EXPECT_EQ(restored->GetReplicaList("", "j")->size, 100u);
  // The pending version's writer is refused (its bytes are not stored),
  // not told OK over the old version it also wrote.
  EXPECT_EQ(restored->PutEnd(writer_, "", "j"), ErrorCode::ILLEGAL_CLIENT);
  EXPECT_EQ(restored->Stats().allocated_bytes, 2 * 128u);
  // The placeholder goes like a stale pending version.
  clock_.AdvanceMs(restored->options().put_start_discard_timeout_ms + 1000);
  EXPECT_TRUE(restored->PutStart(writer_, "", "j", 100, Replace()).ok());
}

// Upserts race reads, removes and background passes; once quiet, every
// allocated byte is a live replica's or a retired range's, and all of it
// comes back when the leases pass and everything is removed.
TEST(UpsertConcurrencyTest, AllocatedBytesStayExact) {
  ManualClock clock;
  auto dir = MakeTestDirectory(&clock);
  const UUID node = UUID::Generate();
  ASSERT_EQ(dir->MountSegment(node, MakeTestSegment("s", 0x100000, 64 << 20, "s:1")),
            ErrorCode::OK);
  constexpr int kKeys = 16;
  std::atomic<bool> stop{false};
  auto key = [](std::mt19937& rng) { return "k" + std::to_string(rng() % kKeys); };
  std::vector<std::thread> threads;
  for (int w = 0; w < 3; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937 rng(w);
      const UUID me = UUID::Generate();
      for (int i = 0; i < 3000; ++i) {
        const std::string k = key(rng);
        auto started = dir->PutStart(me, "", k, 64 + rng() % 4096, Replace());
        if (!started.ok()) continue;
        if (rng() % 4 == 0) {
          dir->PutRevoke(me, "", k);
        } else {
          dir->PutEnd(me, "", k);
        }
      }
    });
  }
  threads.emplace_back([&] {
    std::mt19937 rng(7);
    while (!stop) {
      (void)dir->GetReplicaList("", key(rng));
      if (rng() % 8 == 0) dir->Remove("", key(rng), rng() % 2 == 0);
    }
  });
  threads.emplace_back([&] {
    while (!stop) {
      clock.AdvanceMs(500);
      dir->RunBackgroundOnce();
    }
  });
  for (int w = 0; w < 3; ++w) threads[w].join();
  stop = true;
  for (size_t t = 3; t < threads.size(); ++t) threads[t].join();

  uint64_t live = 0;
  for (const std::string& k : dir->ListKeys("", "", 1000)) {
    auto info = dir->Stat("", k);
    ASSERT_TRUE(info.ok());
    for (const ReplicaDescriptor& r : info->replicas) {
      if (r.type == ReplicaType::MEMORY) live += (info->size + 63) / 64 * 64;
    }
  }
  EXPECT_EQ(dir->Stats().allocated_bytes, live + dir->Stats().retired_bytes)
      << "pending versions were all ended or revoked";
  clock.AdvanceMs(dir->options().put_start_release_timeout_ms + 1);
  dir->RunBackgroundOnce();
  dir->RemoveAll("", false, true);
  EXPECT_EQ(dir->Stats().allocated_bytes, 0u);
  EXPECT_EQ(dir->Stats().retired_bytes, 0u);
}

}  // namespace
}  // namespace shelfmark
