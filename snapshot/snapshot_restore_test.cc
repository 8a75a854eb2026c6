#include "snapshot/snapshot_restore.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "snapshot/codec.h"
#include "snapshot/snapshot_catalog.h"
#include "snapshot/snapshot_test_util.h"
#include "snapshot/snapshotter.h"

namespace shelfmark {
namespace {

using testing::DumpObjects;
using testing::DumpSegmentsAndTasks;

class SnapshotRestoreTest : public ::testing::Test {
 protected:
  SnapshotRestoreTest() {
    SnapshotterOptions o;
    o.cluster_id = "c1";
    o.retention_count = 10;
    snapshotter_ = std::make_unique<Snapshotter>(source_.get(), store_.get(), o);
  }

  // Puts keys [from, to) of the default tenant into the source directory.
  void PutKeys(int from, int to) {
    for (int i = from; i < to; ++i) {
      std::string key = "key-" + std::to_string(i);
      ASSERT_TRUE(source_->PutStart(writer_, "", key, 100 + i, {}).ok());
      ASSERT_EQ(source_->PutEnd(writer_, "", key), ErrorCode::OK);
    }
  }
  std::string Snapshot() {
    SnapshotResult r = snapshotter_->TakeSnapshotNow();
    EXPECT_EQ(r.code, ErrorCode::OK) << r.failed_stage;
    return r.snapshot_id;
  }
  RestoreReport Restore(unsigned threads = 0, std::string first_id = "") {
    RestoreOptions o;
    o.cluster_id = "c1";
    o.threads = threads;
    o.first_id = std::move(first_id);
    return RestoreFromSnapshots(restored_.get(), store_.get(), o);
  }
  std::string Key(const std::string& id, std::string_view name) {
    return catalog_.ObjectKey(id, name);
  }
  void Rewrite(const std::string& key, const std::function<void(std::string&)>& edit) {
    auto bytes = store_->Get(key);
    ASSERT_TRUE(bytes.ok()) << key;
    edit(*bytes);
    ASSERT_EQ(store_->Put(key, *bytes), ErrorCode::OK);
  }
  // Two snapshots: `old_id` with 10 keys, `new_id` with 25.
  void TwoSnapshots() {
    ASSERT_EQ(source_->MountSegment(node_, testing::TestSegment("s", 0x100000)), ErrorCode::OK);
    PutKeys(0, 10);
    old_id_ = Snapshot();
    PutKeys(10, 25);
    new_id_ = Snapshot();
    ASSERT_NE(old_id_, new_id_);
  }
  void ExpectRestoredOld(const RestoreReport& r) {
    EXPECT_TRUE(r.restored);
    EXPECT_EQ(r.snapshot_id, old_id_);
    EXPECT_EQ(r.candidates_tried, 2);
    EXPECT_EQ(r.objects, 10u);
    EXPECT_EQ(restored_->Stats().key_count, 10u);
    EXPECT_EQ(restored_->Stats().segment_count, 1u);
    ASSERT_EQ(r.rejected.size(), 1u);
    EXPECT_EQ(r.rejected[0].rfind(new_id_, 0), 0u) << r.rejected[0];
  }

  ManualClock clock_;
  testing::TempDir dir_;
  std::unique_ptr<LocalStore> store_ = testing::OpenLocalStore(dir_.path());
  SnapshotCatalog catalog_{store_.get(), "c1"};
  std::unique_ptr<Directory> source_ = testing::MakeDirectory(&clock_);
  std::unique_ptr<Directory> restored_ = testing::MakeDirectory(&clock_);
  std::unique_ptr<Snapshotter> snapshotter_;
  UUID node_ = UUID::Generate();
  UUID writer_ = UUID::Generate();
  std::string old_id_, new_id_;
};

TEST_F(SnapshotRestoreTest, RoundTripKeepsEveryKindOfState) {
  testing::PopulatedState p = testing::PopulateEveryKindOfState(*source_, clock_);
  std::string id = Snapshot();
  // What restore must drop: the unfinished put. Revoking it in the source
  // frees its range the same way.
  ASSERT_EQ(source_->PutRevoke(p.writer, "", p.unfinished_key), ErrorCode::OK);

  RestoreReport r = Restore();
  ASSERT_TRUE(r.restored) << DescribeRestore(r);
  EXPECT_EQ(r.snapshot_id, id);
  EXPECT_EQ(r.candidates_tried, 1);
  EXPECT_TRUE(r.rejected.empty());
  EXPECT_EQ(r.objects, source_->Stats().key_count);
  EXPECT_EQ(DumpObjects(*restored_), DumpObjects(*source_));
  EXPECT_EQ(DumpSegmentsAndTasks(*restored_), DumpSegmentsAndTasks(*source_));
  // The comparison covered every kind of state.
  std::string objects = DumpObjects(*restored_), nodes = DumpSegmentsAndTasks(*restored_);
  for (const char* want : {"group=g1", "LOCAL_DISK", "hard=1", "checksum=1", "t2/other-tenant",
                           "group default/g1: member-1 member-2"}) {
    EXPECT_NE(objects.find(want), std::string::npos) << want;
  }
  for (const char* want : {"offload=1", "offload=0", "tasks ", "free: "}) {
    EXPECT_NE(nodes.find(want), std::string::npos) << want << "\n" << nodes;
  }

  DirectoryStats a = source_->Stats(), b = restored_->Stats();
  EXPECT_EQ(b.key_count, a.key_count);
  EXPECT_EQ(b.allocated_bytes, a.allocated_bytes);
  EXPECT_EQ(b.total_capacity_bytes, a.total_capacity_bytes);
  EXPECT_EQ(b.segment_count, a.segment_count);
  EXPECT_EQ(b.client_count, a.client_count);
  // Nodes are known: their next ping is OK, with the same view.
  for (const UUID& node : {p.node_a, p.node_b}) {
    PingResponse ping = restored_->Ping(node);
    EXPECT_EQ(ping.status, ClientStatus::OK);
    EXPECT_EQ(ping.view_version, source_->Ping(node).view_version);
  }
  // Every complete object is served; the unfinished one is gone; groups
  // and the soft pin survived; the expired lease was reset, not a reason to drop.
  for (const std::string& key : p.complete_keys) {
    EXPECT_TRUE(restored_->GetReplicaList("", key).ok()) << key;
  }
  EXPECT_EQ(restored_->Stat("", p.unfinished_key).error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(*restored_->GroupMembers("", "g1"), (std::vector<std::string>{"member-1", "member-2"}));
  EXPECT_GT(restored_->Stat("", "soft-pinned")->soft_pin_remaining_ms, 0);
  EXPECT_EQ(restored_->Stat("t2", "other-tenant")->checksum, 0xfeedfacecafebeefULL);
  // New replica ids continue after the restored ones.
  ASSERT_TRUE(restored_->PutStart(p.writer, "", "after", 10, {}).ok());
  uint64_t after_id = restored_->Stat("", "after")->replicas[0].id;
  auto before = restored_->Stat("", "two-replicas");
  for (const ReplicaDescriptor& rd : before->replicas) EXPECT_GT(after_id, rd.id);
}

TEST_F(SnapshotRestoreTest, ParallelDecodeOfManyShards) {
  ASSERT_EQ(source_->MountSegment(node_, testing::TestSegment("s", 0x100000, 64 << 20)),
            ErrorCode::OK);
  PutKeys(0, 5000);
  Snapshot();
  RestoreReport r = Restore(/*threads=*/4);
  ASSERT_TRUE(r.restored) << DescribeRestore(r);
  EXPECT_EQ(r.objects, 5000u);
  EXPECT_EQ(DumpObjects(*restored_), DumpObjects(*source_));
}

TEST_F(SnapshotRestoreTest, EmptyStoreStartsEmpty) {
  RestoreReport r = Restore();
  EXPECT_FALSE(r.restored);
  EXPECT_EQ(r.candidates_tried, 0);
  EXPECT_EQ(r.objects, 0u);
  EXPECT_TRUE(r.rejected.empty());
  EXPECT_NE(DescribeRestore(r).find("starting empty"), std::string::npos);
}

TEST_F(SnapshotRestoreTest, TruncatedPayloadFallsBackToThePrevious) {
  TwoSnapshots();
  Rewrite(Key(new_id_, "metadata"), [](std::string& b) { b.resize(b.size() / 2); });
  ExpectRestoredOld(Restore());
}

TEST_F(SnapshotRestoreTest, TruncatedPayloadWithMatchingManifestFallsBack) {
  TwoSnapshots();
  // A consistent manifest does not save a payload that does not decode.
  std::string cut;
  Rewrite(Key(new_id_, "metadata"), [&](std::string& b) { b.resize(b.size() - 7); cut = b; });
  Rewrite(Key(new_id_, "manifest.txt"), [&](std::string& text) {
    Manifest m = *DecodeManifest(text);
    m.metadata_bytes = cut.size();
    text = EncodeManifest(m);
  });
  ExpectRestoredOld(Restore());
}

TEST_F(SnapshotRestoreTest, BitFlippedMetadataFallsBackToThePrevious) {
  TwoSnapshots();
  Rewrite(Key(new_id_, "metadata"), [](std::string& b) { b[b.size() / 2] ^= 0x10; });
  ExpectRestoredOld(Restore());
}

TEST_F(SnapshotRestoreTest, BitFlippedSegmentsFallBackAndLeaveNoTrace) {
  TwoSnapshots();
  Rewrite(Key(new_id_, "segments"), [](std::string& b) { b[b.size() - 5] ^= 0x01; });
  ExpectRestoredOld(Restore());
}

TEST_F(SnapshotRestoreTest, BitFlippedTasksFallBackAfterShardsWereRestored) {
  TwoSnapshots();
  Rewrite(Key(new_id_, "task_manager"), [](std::string& b) { b[b.size() - 1] ^= 0x80; });
  // The newest candidate's segments and shards were restored before its
  // tasks failed: Clear() must leave nothing of them behind.
  ExpectRestoredOld(Restore());
  EXPECT_EQ(DumpObjects(*restored_).find("key-24"), std::string::npos);
}

TEST_F(SnapshotRestoreTest, ManifestOfAnotherVersionFallsBack) {
  TwoSnapshots();
  Rewrite(Key(new_id_, "manifest.txt"), [](std::string& text) {
    size_t at = text.find("version=1\n");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 10, "version=99\n");
  });
  RestoreReport r = Restore();
  ExpectRestoredOld(r);
  EXPECT_NE(r.rejected[0].find("VERSION_MISMATCH"), std::string::npos) << r.rejected[0];
}

TEST_F(SnapshotRestoreTest, ManifestOfAnotherSnapshotFallsBack) {
  TwoSnapshots();
  ASSERT_EQ(store_->Put(Key(new_id_, "manifest.txt"), *store_->Get(Key(old_id_, "manifest.txt"))),
            ErrorCode::OK);
  ExpectRestoredOld(Restore());
}

TEST_F(SnapshotRestoreTest, MissingPayloadFallsBack) {
  TwoSnapshots();
  ASSERT_EQ(store_->Remove(Key(new_id_, "segments")), ErrorCode::OK);
  ExpectRestoredOld(Restore());
}

TEST_F(SnapshotRestoreTest, LatestNamingAMissingSnapshotFallsBackToListedOnes) {
  TwoSnapshots();
  std::string ghost = SnapshotIdAt(4'000'000'000'000);
  ASSERT_EQ(catalog_.SetLatest(ghost), ErrorCode::OK);
  RestoreReport r = Restore();
  EXPECT_TRUE(r.restored);
  EXPECT_EQ(r.snapshot_id, new_id_);
  EXPECT_EQ(r.candidates_tried, 2);
  EXPECT_EQ(r.fallbacks(), 1);
  EXPECT_EQ(r.objects, 25u);
  EXPECT_EQ(r.latest_problem, catalog_.LatestKey() + " names " + ghost + ", which is not in the store");
  EXPECT_NE(DescribeRestore(r).find(r.latest_problem), std::string::npos);
}

// A torn or foreign latest.txt: the newest listed snapshot is used, and the
// report (so the master's log) says why latest.txt was ignored.
TEST_F(SnapshotRestoreTest, LatestWithoutAValidIdIsReportedAndIgnored) {
  TwoSnapshots();
  ASSERT_EQ(store_->Put(catalog_.LatestKey(), "20261\x01garbage"), ErrorCode::OK);
  RestoreReport r = Restore();
  EXPECT_TRUE(r.restored);
  EXPECT_EQ(r.snapshot_id, new_id_);
  EXPECT_EQ(r.fallbacks(), 0);
  EXPECT_EQ(r.latest_problem, catalog_.LatestKey() + " holds no valid snapshot id (13 bytes)");
  EXPECT_NE(DescribeRestore(r).find("holds no valid snapshot id"), std::string::npos);
}

TEST_F(SnapshotRestoreTest, LatestIsPreferredOverNewerListedSnapshots) {
  TwoSnapshots();
  ASSERT_EQ(catalog_.SetLatest(old_id_), ErrorCode::OK);
  RestoreReport r = Restore();
  EXPECT_EQ(r.snapshot_id, old_id_);
  EXPECT_EQ(r.candidates_tried, 1);
}

TEST_F(SnapshotRestoreTest, AnOperatorsChosenSnapshotGoesBeforeLatest) {
  TwoSnapshots();  // latest names new_id_
  RestoreReport r = Restore(0, old_id_);
  EXPECT_EQ(r.snapshot_id, old_id_);
  EXPECT_EQ(r.candidates_tried, 1);
  EXPECT_EQ(restored_->Stats().key_count, 10u);
}

TEST_F(SnapshotRestoreTest, AllCandidatesBadStartsEmpty) {
  TwoSnapshots();
  for (const std::string& id : {old_id_, new_id_}) {
    Rewrite(Key(id, "metadata"), [](std::string& b) { b[b.size() / 3] ^= 0x40; });
  }
  RestoreReport r = Restore();
  EXPECT_FALSE(r.restored);
  EXPECT_EQ(r.candidates_tried, 2);
  EXPECT_EQ(r.rejected.size(), 2u);
  DirectoryStats s = restored_->Stats();
  EXPECT_EQ(s.key_count, 0u);
  EXPECT_EQ(s.segment_count, 0u);
  EXPECT_EQ(s.client_count, 0u);
  EXPECT_EQ(DumpObjects(*restored_), "");
}

}  // namespace
}  // namespace shelfmark
