// Eviction order and eligibility.
#include "directory/directory_test_util.h"

namespace shelfmark {
namespace {

// The watermark and ratio of these tests: a pass frees at least 5% of the
// segment, down to 90% at most.
DirectoryOptions TestOptions(EvictionPolicy policy = EvictionPolicy::k2q) {
  DirectoryOptions o;
  o.eviction_high_watermark_ratio = 0.90;
  o.eviction_ratio = 0.05;
  o.eviction_policy = policy;
  return o;
}

class EvictionTest : public DirectoryFixture {
 protected:
  explicit EvictionTest(DirectoryOptions options = TestOptions()) : DirectoryFixture(options) {}
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

TEST_F(EvictionTest, APutWithoutRoomEvictsAtOnceBelowWatermark) {
  ASSERT_EQ(dir_->RemoveAll("", false, true), 100u);
  for (int i = 0; i < 80; ++i) ASSERT_EQ(Put(Key(i), 1024), ErrorCode::OK);
  clock_.AdvanceMs(1);
  // 80% used, under the watermark: the 30 KiB put finds no room, evicts the
  // 30 least recently used objects itself and is placed.
  ASSERT_TRUE(dir_->PutStart(writer_, "", "huge", 30 * 1024, {}).ok());
  DirectoryStats s = dir_->Stats();
  EXPECT_EQ(s.eviction_runs_for_puts, 1u);
  EXPECT_GE(s.evicted_objects, 30u);
  EXPECT_LT(s.evicted_objects, 40u);
  EXPECT_FALSE(Present(0));
  EXPECT_FALSE(Present(29));
  EXPECT_TRUE(Present(79));
}

TEST_F(EvictionTest, APutWithoutRoomIsRefusedWhenNothingMayGo) {
  ASSERT_EQ(dir_->RemoveAll("", false, true), 100u);
  for (int i = 0; i < 80; ++i) ASSERT_EQ(Put(Key(i), 1024), ErrorCode::OK);
  for (int i = 0; i < 80; ++i) ReadAt(i);  // live leases: nothing evictable
  EXPECT_EQ(dir_->PutStart(writer_, "", "huge", 30 * 1024, {}).error(),
            ErrorCode::NO_AVAILABLE_HANDLE);
  EXPECT_EQ(dir_->Stats().evicted_objects, 0u);
  EXPECT_EQ(dir_->Stats().key_count, 80u);
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
  // A put that fits once others are evicted makes room at once (and is no
  // "unplaceable" put).
  EXPECT_TRUE(dir_->PutStart(writer_, "", "fits-later", 30 * 1024, {}).ok());
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
  // Copies of these very objects: reports from a store that holds their
  // bytes, shown by their checksum (SetUp's puts carry none).
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(dir_->Remove("", Key(i), /*force=*/true), ErrorCode::OK);
    PutConfig config;
    config.checksum = i;
    ASSERT_EQ(Put(Key(i), 1024, config), ErrorCode::OK);
    items.push_back({"", Key(i), {0, 0, 2, 1024, "n:1"}, i});
  }
  ASSERT_TRUE(dir_->NotifyOffloadSuccess(node_, items).ok());
  EvictNow();
  ASSERT_GT(dir_->Stats().evicted_objects, 0u);
  EXPECT_EQ(dir_->Stats().key_count, 100u);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(dir_->GetReplicaList("", Key(i)).ok());
}

// Recency starts at the put: with 80 old objects read once (leases over)
// and 20 new ones never read, LRU evicts the oldest reads, not the new puts.
TEST_F(EvictionTest, NewUnreadObjectsOutliveOlderReadOnes) {
  ASSERT_EQ(dir_->RemoveAll("", false, true), 100u);
  for (int i = 0; i < 80; ++i) ASSERT_EQ(Put(Key(i), 1024), ErrorCode::OK);
  for (int i = 0; i < 80; ++i) ReadAt(i);
  clock_.AdvanceMs(dir_->options().default_kv_lease_ttl_ms + 1000);
  for (int i = 80; i < 100; ++i) ASSERT_EQ(Put(Key(i), 1024), ErrorCode::OK);
  EvictNow();
  ASSERT_GE(dir_->Stats().evicted_objects, 10u);
  for (int i = 80; i < 100; ++i) EXPECT_TRUE(Present(i)) << i;
  EXPECT_FALSE(Present(0));
  EXPECT_FALSE(Present(9));
}

class LruEvictionTest : public EvictionTest {
 protected:
  LruEvictionTest() : EvictionTest(TestOptions(EvictionPolicy::kLru)) {}
};

// The evicted objects are exactly the least recently used, whatever shard
// each lies in: every evicted key was used before every kept one, pass
// after pass (keys hash to shards at random; a shard-order walk fails this).
TEST_F(LruEvictionTest, EvictsTheLeastRecentlyUsedAcrossShards) {
  ASSERT_EQ(dir_->RemoveAll("", false, true), 100u);
  std::vector<int> order;  // keys from the least to the most recently used
  for (int i = 0; i < 400; ++i) {
    ASSERT_EQ(Put(Key(i), 256), ErrorCode::OK);
    order.push_back(i);
  }
  int next = 400;
  for (int pass = 0; pass < 3; ++pass) {
    // Read the oldest fifty: now the most recently used.
    for (int j = 0; j < 50; ++j) {
      ReadAt(order.front());
      order.push_back(order.front());
      order.erase(order.begin());
    }
    EvictNow();
    size_t evicted = 0;
    while (evicted < order.size() && !Present(order[evicted])) ++evicted;
    ASSERT_GT(evicted, 0u) << pass;
    for (size_t j = evicted; j < order.size(); ++j) {
      EXPECT_TRUE(Present(order[j])) << "pass " << pass << ": key " << order[j]
                                     << " evicted while an older one was kept";
    }
    order.erase(order.begin(), order.begin() + static_cast<ptrdiff_t>(evicted));
    // Refill with new keys.
    while (order.size() < 400 && Put(Key(next), 256) == ErrorCode::OK) order.push_back(next++);
  }
}

// 2Q: objects read since their put survive a burst of puts never read.
TEST_F(EvictionTest, ReusedObjectsOutliveABurstOfOneTimePuts) {
  ASSERT_EQ(dir_->RemoveAll("", false, true), 100u);
  for (int i = 0; i < 30; ++i) ASSERT_EQ(Put(Key(i), 1024), ErrorCode::OK);
  for (int i = 0; i < 30; ++i) ReadAt(i);  // reused: protected
  clock_.AdvanceMs(dir_->options().default_kv_lease_ttl_ms + 1000);
  // 200 one-time puts through the 70 KiB left: each put without room evicts.
  for (int i = 100; i < 300; ++i) ASSERT_EQ(Put(Key(i), 1024), ErrorCode::OK) << i;
  for (int i = 0; i < 30; ++i) EXPECT_TRUE(Present(i)) << i;
  EXPECT_GT(dir_->Stats().evicted_unread, 100u);
  EXPECT_TRUE(Present(299)) << "the newest put survives too";
}

// A key evicted from probation and put again enters protected.
TEST_F(EvictionTest, AKeyPutAgainSoonAfterItsEvictionIsProtected) {
  ASSERT_EQ(dir_->RemoveAll("", false, true), 100u);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(Put(Key(i), 1024), ErrorCode::OK);
  EvictNow();  // probation over its 20%: the oldest go
  ASSERT_FALSE(Present(0));
  ASSERT_EQ(dir_->Stats().eviction_ghost_hits, 0u);
  ASSERT_EQ(Put(Key(0), 1024), ErrorCode::OK);
  EXPECT_EQ(dir_->Stats().eviction_ghost_hits, 1u);
  // Fill again: probation (every other key) goes first, k0 stays.
  for (int i = 100; i < 200; ++i) ASSERT_EQ(Put(Key(i), 1024), ErrorCode::OK) << i;
  EXPECT_TRUE(Present(0));
}

// A directory that is not served from (an HA master that does not lead)
// drops nothing on its own: no eviction above the watermark, no stale put
// reclaimed; served again, both resume (issue 29).
TEST_F(EvictionTest, NothingIsDroppedWhileTheDirectoryIsNotServedFrom) {
  ASSERT_EQ(dir_->Remove("", Key(99), true), ErrorCode::OK);
  ASSERT_TRUE(dir_->PutStart(writer_, "", "unfinished", 1024, {}).ok());
  dir_->SetServing(false);
  clock_.AdvanceMs(dir_->options().put_start_release_timeout_ms + 1000);
  dir_->Ping(node_);
  dir_->RunBackgroundOnce();
  DirectoryStats s = dir_->Stats();
  EXPECT_EQ(s.eviction_runs, 0u);
  EXPECT_EQ(s.key_count, 100u) << "99 objects and the unfinished put, all kept";
  dir_->SetServing(true);
  dir_->RunBackgroundOnce();
  s = dir_->Stats();
  EXPECT_EQ(s.eviction_runs, 1u);
  EXPECT_GT(s.evicted_objects, 0u);
  EXPECT_FALSE(dir_->Stat("", "unfinished").ok()) << "the stale put is reclaimed once served";
}

}  // namespace
}  // namespace shelfmark
