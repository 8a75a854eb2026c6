// Eviction order and eligibility.
#include "directory/directory_test_util.h"

namespace shelfmark {
namespace {

class EvictionTest : public DirectoryFixture {
 protected:
  // 100 objects of 1 KiB fill a 100 KiB segment completely.
  void SetUp() override {
    Mount(node_, "a", 100 * 1024);
    for (int i = 0; i < 100; ++i) {
      ASSERT_EQ(Put(Key(i), 1024), ErrorCode::OK);
      clock_.AdvanceMs(1);
    }
  }
  static std::string Key(int i) { return "k" + std::to_string(i); }
  void ReadAt(int i) { ASSERT_TRUE(dir_->GetReplicaList("", Key(i)).ok()); }
  bool Present(int i) { return dir_->Stat("", Key(i)).ok(); }
  void EvictNow() {
    clock_.AdvanceMs(dir_->options().default_kv_lease_ttl_ms + 1000);
    dir_->Ping(node_);
    dir_->RunBackgroundOnce();
  }
};

TEST_F(EvictionTest, FullSegmentEvictsAboutRatioOldestLeaseFirst) {
  for (int i = 99; i >= 0; --i) {  // lease order: k99 oldest ... k0 newest
    ReadAt(i);
    clock_.AdvanceMs(1);
  }
  EvictNow();
  DirectoryStats s = dir_->Stats();
  EXPECT_EQ(s.eviction_runs, 1u);
  // Above the 0.90 watermark at 100%: evicts down to it (>= 10 objects).
  EXPECT_GE(s.evicted_objects, 10u);
  EXPECT_LE(s.evicted_objects, 20u);
  EXPECT_LE(s.allocated_bytes, 90u * 1024);
  EXPECT_FALSE(Present(99));
  EXPECT_FALSE(Present(90));
  EXPECT_TRUE(Present(0));
  EXPECT_TRUE(Present(50));
}

TEST_F(EvictionTest, LiveLeasesAndHardPinsAreNeverEvicted) {
  ASSERT_EQ(dir_->RemoveAll("", false, true), 100u);
  PutConfig pinned;
  pinned.hard_pin = true;
  for (int i = 0; i < 50; ++i) ASSERT_EQ(Put(Key(i), 1024, pinned), ErrorCode::OK);
  for (int i = 50; i < 100; ++i) ASSERT_EQ(Put(Key(i), 1024), ErrorCode::OK);
  clock_.AdvanceMs(1);
  for (int i = 50; i < 100; ++i) ReadAt(i);  // live leases
  dir_->Ping(node_);
  dir_->RunBackgroundOnce();
  EXPECT_EQ(dir_->Stats().evicted_objects, 0u);
  EXPECT_EQ(dir_->Stats().key_count, 100u);
  EvictNow();  // leases expired now: only the unpinned half may go
  EXPECT_GT(dir_->Stats().evicted_objects, 0u);
  for (int i = 0; i < 50; ++i) EXPECT_TRUE(Present(i)) << i;
}

TEST_F(EvictionTest, SoftPinnedGoOnlyInSecondPass) {
  ASSERT_EQ(dir_->RemoveAll("", false, true), 100u);
  PutConfig soft;
  soft.soft_pin_ttl_ms = 1'000'000;
  for (int i = 0; i < 95; ++i) ASSERT_EQ(Put(Key(i), 1024, soft), ErrorCode::OK);
  for (int i = 95; i < 100; ++i) ASSERT_EQ(Put(Key(i), 1024), ErrorCode::OK);
  EvictNow();
  // The 5 unpinned are not enough to get under the watermark: soft pins go too.
  for (int i = 95; i < 100; ++i) EXPECT_FALSE(Present(i)) << i;
  EXPECT_GE(dir_->Stats().evicted_objects, 10u);
}

TEST_F(EvictionTest, AllocationFailureTriggersEvictionBelowWatermark) {
  ASSERT_EQ(dir_->RemoveAll("", false, true), 100u);
  for (int i = 0; i < 80; ++i) ASSERT_EQ(Put(Key(i), 1024), ErrorCode::OK);
  EXPECT_EQ(dir_->PutStart(writer_, "", "huge", 30 * 1024, {}).error(),
            ErrorCode::NO_AVAILABLE_HANDLE);
  EvictNow();
  EXPECT_GE(dir_->Stats().evicted_objects, 5u);  // about eviction_ratio of capacity
  EXPECT_LT(dir_->Stats().evicted_objects, 80u);
}

TEST_F(EvictionTest, PutsThatCanNeverBePlacedEvictNothing) {
  ASSERT_EQ(dir_->RemoveAll("", false, true), 100u);
  for (int i = 0; i < 80; ++i) ASSERT_EQ(Put(Key(i), 1024), ErrorCode::OK);  // under the mark
  PutConfig two;
  two.replica_num = 2;  // one segment only
  EXPECT_EQ(dir_->PutStart(writer_, "", "two", 1024, two).error(),
            ErrorCode::NO_AVAILABLE_HANDLE);
  EXPECT_EQ(dir_->PutStart(writer_, "", "big", 101 * 1024, {}).error(),
            ErrorCode::NO_AVAILABLE_HANDLE);
  for (uint64_t size : {UINT64_MAX, UINT64_MAX - 1, uint64_t{1} << 63}) {
    EXPECT_EQ(dir_->PutStart(writer_, "", "absurd", size, {}).error(),
              ErrorCode::NO_AVAILABLE_HANDLE);
  }
  EvictNow();
  DirectoryStats s = dir_->Stats();
  EXPECT_EQ(s.unplaceable_puts, 5u);
  EXPECT_EQ(s.eviction_runs, 0u);
  EXPECT_EQ(s.evicted_objects, 0u);
  EXPECT_EQ(s.key_count, 80u);
  // A put that fits once others are evicted still makes room (and is no
  // "unplaceable" put).
  EXPECT_EQ(dir_->PutStart(writer_, "", "fits-later", 30 * 1024, {}).error(),
            ErrorCode::NO_AVAILABLE_HANDLE);
  EvictNow();
  EXPECT_GT(dir_->Stats().evicted_objects, 0u);
  EXPECT_EQ(dir_->Stats().unplaceable_puts, 5u);
}

TEST_F(EvictionTest, FruitlessPassBacksOffThenRetries) {
  for (int i = 0; i < 100; ++i) ReadAt(i);  // every lease live: nothing evictable
  dir_->RunBackgroundOnce();
  EXPECT_EQ(dir_->Stats().eviction_runs, 1u);
  dir_->RunBackgroundOnce();
  EXPECT_EQ(dir_->Stats().eviction_runs, 1u);  // backing off
  EXPECT_EQ(dir_->Stats().evicted_objects, 0u);
  EvictNow();  // leases expired, backoff over
  EXPECT_EQ(dir_->Stats().eviction_runs, 2u);
  EXPECT_GE(dir_->Stats().evicted_objects, 10u);
}

TEST_F(EvictionTest, ObjectsWithDiskReplicaKeepIt) {
  ASSERT_EQ(dir_->MountLocalDisk(node_, false, "n:1"), ErrorCode::OK);
  std::vector<OffloadedObject> items;
  for (int i = 0; i < 100; ++i) items.push_back({"", Key(i), {0, 0, 2, 1024, "n:1"}});
  ASSERT_TRUE(dir_->NotifyOffloadSuccess(node_, items).ok());
  EvictNow();
  ASSERT_GT(dir_->Stats().evicted_objects, 0u);
  EXPECT_EQ(dir_->Stats().key_count, 100u);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(dir_->GetReplicaList("", Key(i)).ok());
}

}  // namespace
}  // namespace shelfmark
