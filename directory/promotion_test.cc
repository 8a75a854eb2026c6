// Promotion on hit (docs/directory.md): PromoteStart reserves a range in the
// node's own segment, PromoteEnd attaches it as a MEMORY replica only when
// the object is still the one granted; removal, eviction, timeouts, unmounts
// and snapshots never leave a range owned twice or lost.
#include "directory/directory_test_util.h"

namespace shelfmark {
namespace {

constexpr uint64_t kSegmentBase = 0x100000;
constexpr uint64_t kSegmentSize = 64 * 1024;

class PromotionTest : public DirectoryFixture {
 protected:
  PromotionTest() : DirectoryFixture(OffloadOptions()) {}

  void SetUp() override {
    segment_ = Mount(node_, "a", kSegmentSize);
    ASSERT_EQ(dir_->MountLocalDisk(node_, true, "a:7000"), ErrorCode::OK);
  }

  // An object only on node_'s SSD (what a node re-reports after a restart,
  // or what eviction leaves after the copy).
  void OnDiskOnly(const std::string& key, uint64_t size = 1024) {
    auto codes = dir_->NotifyOffloadSuccess(
        node_, {{"", key, {1, 0, static_cast<int64_t>(key.size()), static_cast<int64_t>(size),
                           "a:7000"}}});
    ASSERT_TRUE(codes.ok());
    ASSERT_EQ((*codes)[0], ErrorCode::OK);
  }
  PromoteGrant Start(const std::string& key, uint64_t size = 1024, const UUID* who = nullptr) {
    auto grants = dir_->PromoteStart(who ? *who : node_, {{"", key, size}});
    EXPECT_TRUE(grants.ok());
    return grants.ok() ? (*grants)[0] : PromoteGrant{grants.error(), 0};
  }
  ErrorCode End(const std::string& key, bool copied = true) {
    auto codes = dir_->PromoteEnd(node_, {{"", key, copied}});
    EXPECT_TRUE(codes.ok());
    return codes.ok() ? (*codes)[0] : codes.error();
  }
  // The object's MEMORY replica addresses (COMPLETE or not).
  std::vector<uint64_t> MemoryAddresses(const std::string& key) {
    std::vector<uint64_t> out;
    auto info = dir_->Stat("", key);
    if (!info.ok()) return out;
    for (const ReplicaDescriptor& r : info->replicas) {
      if (r.type == ReplicaType::MEMORY) out.push_back(r.memory.buffer_address);
    }
    return out;
  }
  bool OnDisk(const std::string& key) {
    auto info = dir_->Stat("", key);
    if (!info.ok()) return false;
    for (const ReplicaDescriptor& r : info->replicas) {
      if (r.type == ReplicaType::LOCAL_DISK) return true;
    }
    return false;
  }
  uint64_t Allocated() { return dir_->Stats().allocated_bytes; }

  Segment segment_;
};

TEST_F(PromotionTest, GrantInTheNodesSegmentThenAttachedAsCompleteMemory) {
  OnDiskOnly("hot");
  PromoteGrant g = Start("hot");
  ASSERT_EQ(g.code, ErrorCode::OK);
  EXPECT_GE(g.buffer_address, kSegmentBase);
  EXPECT_LE(g.buffer_address + 1024, kSegmentBase + kSegmentSize);
  EXPECT_EQ(Allocated(), 1024u);
  // Reserved, not yet a replica: readers still see the disk copy only.
  EXPECT_TRUE(MemoryAddresses("hot").empty());
  EXPECT_EQ(dir_->Stats().promotions_inflight, 1u);

  EXPECT_EQ(End("hot"), ErrorCode::OK);
  EXPECT_EQ(MemoryAddresses("hot"), std::vector<uint64_t>{g.buffer_address});
  auto list = dir_->GetReplicaList("", "hot");
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->replicas.size(), 2u);
  for (const ReplicaDescriptor& r : list->replicas) EXPECT_EQ(r.status, ReplicaStatus::COMPLETE);
  DirectoryStats s = dir_->Stats();
  EXPECT_EQ(s.promotions_granted, 1u);
  EXPECT_EQ(s.promoted, 1u);
  EXPECT_EQ(s.promotions_inflight, 0u);
  // Reported twice: nothing left to attach.
  EXPECT_EQ(End("hot"), ErrorCode::OBJECT_NOT_FOUND);
}

TEST_F(PromotionTest, RefusalsAreTypedAndReserveNothing) {
  OnDiskOnly("d");
  EXPECT_EQ(Start("missing").code, ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(Start("d", 999).code, ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(Start("d", 0).code, ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(Start("").code, ErrorCode::INVALID_KEY);
  ASSERT_EQ(Put("in-dram", 1024), ErrorCode::OK);
  EXPECT_EQ(Start("in-dram").code, ErrorCode::OBJECT_NOT_FOUND) << "not on this node's disk";
  // A node without a disk, and another node's disk copy.
  UUID other = UUID::Generate();
  Mount(other, "b", kSegmentSize);
  EXPECT_EQ(dir_->PromoteStart(other, {{"", "d", 1024}}).error(), ErrorCode::ILLEGAL_CLIENT);
  ASSERT_EQ(dir_->MountLocalDisk(other, true, "b:7000"), ErrorCode::OK);
  EXPECT_EQ(Start("d", 1024, &other).code, ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(Allocated(), 1024u) << "only the put";
  // In flight already, then in DRAM already.
  ASSERT_EQ(Start("d").code, ErrorCode::OK);
  EXPECT_EQ(Start("d").code, ErrorCode::OBJECT_ALREADY_EXISTS);
  ASSERT_EQ(End("d"), ErrorCode::OK);
  EXPECT_EQ(Start("d").code, ErrorCode::OBJECT_ALREADY_EXISTS);
  EXPECT_EQ(dir_->Stats().promotions_granted, 1u);
}

TEST_F(PromotionTest, NeverAboveTheEvictionWatermark) {
  // 98% watermark (the default) of 64 KiB: 62.72 KiB. 61 KiB of puts leave
  // no room for 2 KiB.
  for (int i = 0; i < 61; ++i) ASSERT_EQ(Put("p" + std::to_string(i), 1024), ErrorCode::OK);
  OnDiskOnly("d", 2048);
  EXPECT_EQ(Start("d", 2048).code, ErrorCode::NO_AVAILABLE_HANDLE);
  EXPECT_EQ(dir_->Stats().promotions_refused, 1u);
  EXPECT_EQ(Allocated(), 61u * 1024);
  OnDiskOnly("small", 512);
  EXPECT_EQ(Start("small", 512).code, ErrorCode::OK) << "512 bytes still fit under the mark";
}

TEST_F(PromotionTest, RemovedMeanwhileTheRangeIsGivenBackNotAttached) {
  OnDiskOnly("gone");
  ASSERT_EQ(Start("gone").code, ErrorCode::OK);
  ASSERT_EQ(dir_->Remove("", "gone", false), ErrorCode::OK) << "a reservation pins nothing";
  EXPECT_EQ(Allocated(), 1024u) << "the node may still be writing the range";
  EXPECT_EQ(End("gone"), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(Allocated(), 0u);
  EXPECT_FALSE(dir_->Stat("", "gone").ok());
  EXPECT_EQ(dir_->Stats().promotions_abandoned, 1u);
}

TEST_F(PromotionTest, ReplacedMeanwhileTheOldCopyIsNotAttached) {
  OnDiskOnly("k");
  ASSERT_EQ(Start("k").code, ErrorCode::OK);
  ASSERT_EQ(dir_->Remove("", "k", true), ErrorCode::OK);
  OnDiskOnly("k");  // a new object of the same key and size, a new disk replica
  EXPECT_EQ(End("k"), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_TRUE(MemoryAddresses("k").empty());
  EXPECT_TRUE(OnDisk("k"));
  EXPECT_EQ(Allocated(), 0u);
}

TEST_F(PromotionTest, AbandonedGivesTheRangeBack) {
  OnDiskOnly("k");
  ASSERT_EQ(Start("k").code, ErrorCode::OK);
  EXPECT_EQ(End("k", /*copied=*/false), ErrorCode::OK);
  EXPECT_EQ(Allocated(), 0u);
  EXPECT_TRUE(MemoryAddresses("k").empty());
  EXPECT_EQ(Start("k").code, ErrorCode::OK) << "and it may be asked again";
}

TEST_F(PromotionTest, EvictionLeavesTheReservationAndLaterDropsOnlyTheCopy) {
  OnDiskOnly("hot");
  ASSERT_EQ(Start("hot").code, ErrorCode::OK);
  // DRAM fills while the node copies; eviction runs and cannot touch the
  // reservation.
  for (int i = 0; i < 60; ++i) Put("p" + std::to_string(i), 1024);
  clock_.AdvanceMs(dir_->options().default_kv_lease_ttl_ms + 1000);
  dir_->Ping(node_);
  dir_->RunBackgroundOnce();
  ASSERT_EQ(End("hot"), ErrorCode::OK);
  ASSERT_EQ(MemoryAddresses("hot").size(), 1u);
  // The promoted object has its disk copy: eviction drops DRAM only, at
  // once (the others are hard-pinned: it is the one candidate).
  for (int i = 0; i < 60; ++i) dir_->Remove("", "p" + std::to_string(i), true);
  PutConfig pinned;
  pinned.hard_pin = true;
  for (int i = 0; i < 62; ++i) ASSERT_EQ(Put("q" + std::to_string(i), 1024, pinned), ErrorCode::OK);
  clock_.AdvanceMs(dir_->options().default_kv_lease_ttl_ms + 1000);
  dir_->Ping(node_);
  dir_->RunBackgroundOnce();
  EXPECT_TRUE(MemoryAddresses("hot").empty());
  EXPECT_TRUE(OnDisk("hot"));
}

TEST_F(PromotionTest, TimedOutReservationsAreGivenBack) {
  OnDiskOnly("slow");
  ASSERT_EQ(Start("slow").code, ErrorCode::OK);
  for (int s = 0; s < 61; s += 5) {  // the node keeps pinging, never reports
    clock_.AdvanceMs(5000);
    dir_->Ping(node_);
    dir_->RunBackgroundOnce();
  }
  EXPECT_EQ(Allocated(), 0u);
  EXPECT_EQ(dir_->Stats().promotions_inflight, 0u);
  EXPECT_EQ(End("slow"), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_TRUE(MemoryAddresses("slow").empty());
}

TEST_F(PromotionTest, UnmountDropsReservationsWithTheSegment) {
  OnDiskOnly("k");
  ASSERT_EQ(Start("k").code, ErrorCode::OK);
  ASSERT_EQ(dir_->UnmountSegment(node_, segment_.id), ErrorCode::OK);
  EXPECT_EQ(dir_->Stats().promotions_inflight, 0u);
  EXPECT_EQ(End("k"), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_TRUE(OnDisk("k"));
  EXPECT_EQ(Start("k").code, ErrorCode::NO_AVAILABLE_HANDLE) << "no segment of its own left";
}

TEST_F(PromotionTest, ASnapshotRecordsReservationsAsFree) {
  OnDiskOnly("k");
  ASSERT_EQ(Put("kept", 4096), ErrorCode::OK);
  ASSERT_EQ(Start("k").code, ErrorCode::OK);
  SegmentsState exported = dir_->ExportSegments();
  ManualClock clock;
  auto restored = MakeTestDirectory(&clock, OffloadOptions());
  ASSERT_EQ(restored->RestoreSegments(exported), ErrorCode::OK);
  EXPECT_EQ(restored->Stats().allocated_bytes, 4096u) << "the put's range only";
  EXPECT_EQ(Allocated(), 4096u + 1024u) << "the live directory still holds both";
}

}  // namespace
}  // namespace shelfmark
