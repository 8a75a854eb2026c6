// Eviction with an SSD tier (docs/directory.md): MEMORY replicas of objects
// without a LOCAL_DISK copy stay until the copy exists; Mooncake's
// offload_on_evict, offload_force_evict and offloading_queue_limit.
#include <algorithm>

#include "directory/directory_test_util.h"

namespace shelfmark {
namespace {

DirectoryOptions Tiered(bool on_evict = false, bool force = false, uint64_t queue_limit = 50'000) {
  DirectoryOptions o;
  // A pass frees at least 5% of the segment, down to 90% at most.
  o.eviction_high_watermark_ratio = 0.90;
  o.eviction_ratio = 0.05;
  o.enable_offload = true;
  o.offload_on_evict = on_evict;
  o.offload_force_evict = force;
  o.offloading_queue_limit = queue_limit;
  return o;
}

class TieringTest : public DirectoryFixture {
 protected:
  explicit TieringTest(DirectoryOptions o = Tiered()) : DirectoryFixture(o) {}

  // A 100 KiB segment of node_, with an SSD store that offloads (when
  // `disk`), filled with 100 objects of 1 KiB.
  void Fill(bool disk = true) {
    Mount(node_, "a", 100 * 1024);
    if (disk) {
      ASSERT_EQ(dir_->MountLocalDisk(node_, true, "a:7000"), ErrorCode::OK);
    }
    for (int i = 0; i < 100; ++i) ASSERT_EQ(Put(Key(i), 1024), ErrorCode::OK);
  }
  static std::string Key(int i) { return "k" + std::to_string(i); }
  void EvictNow() {
    clock_.AdvanceMs(dir_->options().default_kv_lease_ttl_ms + 1000);
    dir_->Ping(node_);
    dir_->RunBackgroundOnce();
  }
  // What node_ does: takes its tasks and reports each copied.
  size_t OffloadAll() {
    auto tasks = dir_->OffloadHeartbeat(node_, 1000);
    EXPECT_TRUE(tasks.ok());
    std::vector<OffloadedObject> done;
    for (const OffloadTask& t : *tasks) {
      done.push_back({t.tenant, t.key, {1, static_cast<int64_t>(done.size()) * 4096,
                                        static_cast<int64_t>(t.key.size()),
                                        static_cast<int64_t>(t.size), "a:7000"}});
    }
    auto codes = dir_->NotifyOffloadSuccess(node_, done);
    EXPECT_TRUE(codes.ok());
    return done.size();
  }
  int Present() {
    int n = 0;
    for (int i = 0; i < 100; ++i) n += dir_->Stat("", Key(i)).ok() ? 1 : 0;
    return n;
  }
  int OnDisk() {
    int n = 0;
    for (int i = 0; i < 100; ++i) {
      auto info = dir_->Stat("", Key(i));
      if (!info.ok()) continue;
      for (const auto& r : info->replicas) n += r.type == ReplicaType::LOCAL_DISK ? 1 : 0;
    }
    return n;
  }
};

TEST_F(TieringTest, EvictionWaitsForTheSsdCopyThenDropsOnlyMemory) {
  Fill();
  EvictNow();
  DirectoryStats s = dir_->Stats();
  EXPECT_EQ(s.evicted_objects, 0u) << "nothing is on the SSD yet";
  EXPECT_GT(s.offload_waits, 0u);
  EXPECT_EQ(Present(), 100);
  // DRAM full and offload behind: a new put is refused (back-pressure), not
  // paid for with an acknowledged object.
  EXPECT_EQ(dir_->PutStart(writer_, "", "new", 20 * 1024, {}).error(),
            ErrorCode::NO_AVAILABLE_HANDLE);
  ASSERT_EQ(OffloadAll(), 100u);
  EvictNow();
  s = dir_->Stats();
  EXPECT_GE(s.evicted_objects, 10u);
  EXPECT_EQ(s.evicted_without_copy, 0u);
  EXPECT_EQ(Present(), 100) << "evicted objects keep their LOCAL_DISK replica";
  EXPECT_EQ(OnDisk(), 100);
  EXPECT_LE(s.allocated_bytes, 90u * 1024);
  EXPECT_EQ(Put("new", 1024), ErrorCode::OK);
}

TEST_F(TieringTest, WithoutAnSsdTierEvictionDropsAsBefore) {
  Fill(/*disk=*/false);
  EvictNow();
  DirectoryStats s = dir_->Stats();
  EXPECT_GE(s.evicted_objects, 10u);
  EXPECT_EQ(s.evicted_without_copy, s.evicted_objects);
  EXPECT_EQ(Present(), 100 - static_cast<int>(s.evicted_objects));
}

TEST_F(TieringTest, ACopyNeverReportedIsQueuedAgainAfterItsTimeout) {
  Fill();
  auto taken = dir_->OffloadHeartbeat(node_, 1000);  // handed out, never reported
  ASSERT_TRUE(taken.ok());
  ASSERT_EQ(taken->size(), 100u);
  EvictNow();
  EXPECT_EQ(dir_->Stats().evicted_objects, 0u);
  clock_.AdvanceMs(61'000);  // the pins time out
  EvictNow();                // ... and eviction queues the copies again
  EXPECT_EQ(dir_->Stats().evicted_objects, 0u);
  EXPECT_GT(dir_->Stats().offload_queued, 0u);
  EXPECT_GT(OffloadAll(), 0u);
  EvictNow();
  EXPECT_GE(dir_->Stats().evicted_objects, 10u);
  EXPECT_EQ(dir_->Stats().evicted_without_copy, 0u);
}

// A node whose store cannot take a copy says so (NotifyOffloadFailure):
// the pins go, eviction drops those objects without a copy (counted), and
// waits for no copy to that node until one succeeds again, so puts are
// accepted again instead of refused for as long as the store stays full.
TEST_F(TieringTest, CopiesTheNodeCouldNotMakeAreEvictedWithoutOne) {
  Fill();
  auto taken = dir_->OffloadHeartbeat(node_, 10);
  ASSERT_TRUE(taken.ok());
  ASSERT_EQ(taken->size(), 10u);
  std::vector<OffloadFailure> failed;
  for (const OffloadTask& t : *taken) failed.push_back({t.tenant, t.key, ErrorCode::FILE_WRITE_FAIL});
  failed.push_back({"", "never-handed-out", ErrorCode::FILE_WRITE_FAIL});
  auto codes = dir_->NotifyOffloadFailure(node_, failed);
  ASSERT_TRUE(codes.ok());
  EXPECT_EQ(std::count(codes->begin(), codes->end(), ErrorCode::OK), 10);
  EXPECT_EQ(codes->back(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(dir_->Stats().offload_failures, 10u);
  // The pin is released: removable without force.
  EXPECT_EQ(dir_->Remove("", taken->front().key, false), ErrorCode::OK);
  EvictNow();
  DirectoryStats s = dir_->Stats();
  EXPECT_GE(s.evicted_objects, 9u) << "eviction still waits for copies that cannot come";
  EXPECT_EQ(s.evicted_without_copy, s.evicted_objects);
  EXPECT_EQ(Put("new", 1024), ErrorCode::OK);
  // A copy that succeeds again: eviction waits for copies once more (the
  // objects copied go first, with their copy).
  ASSERT_GT(OffloadAll(), 0u);
  for (int i = 0; i < 5; ++i) ASSERT_EQ(Put("more" + std::to_string(i), 1024), ErrorCode::OK);
  EvictNow();
  EXPECT_GT(dir_->Stats().evicted_objects, s.evicted_objects);
  EXPECT_EQ(dir_->Stats().evicted_without_copy, s.evicted_without_copy);
  EXPECT_EQ(dir_->NotifyOffloadFailure(UUID::Generate(), failed).error(),
            ErrorCode::ILLEGAL_CLIENT);
}

class OffloadOnEvictTest : public TieringTest {
 protected:
  OffloadOnEvictTest() : TieringTest(Tiered(/*on_evict=*/true)) {}
};

TEST_F(OffloadOnEvictTest, CopiesAreQueuedAtEvictionNotAtPut) {
  Fill();
  EXPECT_EQ(dir_->Stats().offload_queued, 0u) << "no copy after each put";
  EvictNow();
  const uint64_t queued = dir_->Stats().offload_queued;
  EXPECT_GE(queued, 10u) << "the eviction candidates are queued";
  EXPECT_LT(queued, 100u) << "only about what eviction wants to free";
  EXPECT_EQ(dir_->Stats().evicted_objects, 0u);
  ASSERT_EQ(OffloadAll(), queued);
  EvictNow();
  EXPECT_GE(dir_->Stats().evicted_objects, 10u);
  EXPECT_EQ(dir_->Stats().evicted_without_copy, 0u);
  EXPECT_EQ(Present(), 100);
}

class ForceEvictTest : public TieringTest {
 protected:
  ForceEvictTest() : TieringTest(Tiered(false, /*force=*/true, /*queue_limit=*/3)) {}
};

TEST_F(ForceEvictTest, WhatTheFullQueueCannotTakeIsDroppedAndCounted) {
  Fill();
  EXPECT_EQ(dir_->Stats().offload_queued, 3u) << "the queue limit";
  EvictNow();
  DirectoryStats s = dir_->Stats();
  // The target (10 KiB) is met by the dropped plus the 3 that wait.
  EXPECT_GE(s.evicted_objects + 3, 10u);
  EXPECT_GT(s.evicted_objects, 0u);
  EXPECT_EQ(s.evicted_without_copy, s.evicted_objects);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(dir_->Stat("", Key(i)).ok()) << "queued ones wait";
}

class QueueLimitTest : public TieringTest {
 protected:
  QueueLimitTest() : TieringTest(Tiered(false, /*force=*/false, /*queue_limit=*/3)) {}
};

TEST_F(QueueLimitTest, WithoutForceAFullQueueMeansWaitingNotLosing) {
  Fill();
  EvictNow();
  EXPECT_EQ(dir_->Stats().evicted_objects, 0u);
  EXPECT_EQ(Present(), 100);
  // The node drains its queue a few at a time; eviction refills it, and
  // every object gets its copy before its MEMORY replica goes.
  for (int round = 0; round < 60 && OnDisk() < 100; ++round) {
    OffloadAll();
    EvictNow();
  }
  EXPECT_EQ(dir_->Stats().evicted_without_copy, 0u);
  EXPECT_EQ(Present(), 100);
  EXPECT_GE(dir_->Stats().evicted_objects, 10u);
}

TEST_F(TieringTest, ACopyOfARemovedObjectDoesNotBringItBack) {
  Fill();
  auto tasks = dir_->OffloadHeartbeat(node_, 2);
  ASSERT_TRUE(tasks.ok());
  ASSERT_EQ(tasks->size(), 2u);
  // Meanwhile: the first object is removed, the second removed and written
  // again (a new replica of the same key and size).
  const std::string gone = (*tasks)[0].key, rewritten = (*tasks)[1].key;
  ASSERT_EQ(dir_->Remove("", gone, /*force=*/true), ErrorCode::OK);
  ASSERT_EQ(dir_->Remove("", rewritten, /*force=*/true), ErrorCode::OK);
  ASSERT_EQ(Put(rewritten, 1024), ErrorCode::OK);
  std::vector<OffloadedObject> done;
  for (const OffloadTask& t : *tasks) done.push_back({t.tenant, t.key, {1, 0, 3, 1024, "a:7000"}});
  auto codes = dir_->NotifyOffloadSuccess(node_, done);
  ASSERT_TRUE(codes.ok());
  EXPECT_EQ(*codes, (std::vector<ErrorCode>{ErrorCode::OBJECT_NOT_FOUND,
                                            ErrorCode::OBJECT_NOT_FOUND}));
  EXPECT_EQ(dir_->Stat("", gone).error(), ErrorCode::OBJECT_NOT_FOUND) << "resurrected";
  auto info = dir_->Stat("", rewritten);
  ASSERT_TRUE(info.ok());
  ASSERT_EQ(info->replicas.size(), 1u) << "the old copy was attached to the new object";
  EXPECT_EQ(info->replicas[0].type, ReplicaType::MEMORY);
  // A report without a task (a node re-reporting after a restart) still
  // creates the object.
  codes = dir_->NotifyOffloadSuccess(node_, {{"", gone, {1, 0, 3, 1024, "a:7000"}}});
  ASSERT_TRUE(codes.ok());
  EXPECT_EQ((*codes)[0], ErrorCode::OK);
  EXPECT_TRUE(dir_->Stat("", gone).ok());
}

// A node's re-report after a restart (no task: nothing pinned) attaches its
// copy to a key the master holds only when the copy's checksum names the
// live version: a key removed and put again meanwhile, with other bytes of
// the same size, must not get the old bytes as a replica.
TEST_F(TieringTest, AReReportAttachesOnlyToTheVersionItsBytesAre) {
  Mount(node_, "a", 100 * 1024);
  ASSERT_EQ(dir_->MountLocalDisk(node_, true, "a:7000"), ErrorCode::OK);
  PutConfig again;
  again.checksum = 0x2222;  // the version put while the node was down
  ASSERT_EQ(Put("k", 1024, again), ErrorCode::OK);
  ASSERT_EQ(Put("plain", 1024), ErrorCode::OK);  // put without a checksum
  auto report = [&](const UUID& node, const std::string& key, std::optional<uint64_t> checksum) {
    auto codes = dir_->NotifyOffloadSuccess(node, {{"", key, {1, 0, 1, 1024, "a:7000"}, checksum}});
    EXPECT_TRUE(codes.ok());
    return codes.ok() ? (*codes)[0] : codes.error();
  };
  EXPECT_EQ(report(node_, "k", 0x1111), ErrorCode::CHECKSUM_MISMATCH);        // the old bytes
  EXPECT_EQ(report(node_, "k", std::nullopt), ErrorCode::CHECKSUM_MISMATCH);  // an older node
  EXPECT_EQ(report(node_, "plain", 0x3333), ErrorCode::CHECKSUM_MISMATCH);    // unverifiable
  EXPECT_EQ(dir_->Stats().stale_disk_reports, 3u);
  auto info = dir_->Stat("", "k");
  ASSERT_TRUE(info.ok());
  ASSERT_EQ(info->replicas.size(), 1u) << "the old copy was attached to the new object";
  EXPECT_EQ(info->replicas[0].type, ReplicaType::MEMORY);

  EXPECT_EQ(report(node_, "k", 0x2222), ErrorCode::OK);  // a copy of the live version
  info = dir_->Stat("", "k");
  ASSERT_TRUE(info.ok());
  ASSERT_EQ(info->replicas.size(), 2u);
  EXPECT_EQ(info->replicas[1].type, ReplicaType::LOCAL_DISK);

  // A key the master does not hold is created with the report's checksum,
  // which reads verify and later reports are held to.
  EXPECT_EQ(report(node_, "new", 0x4444), ErrorCode::OK);
  auto loc = dir_->GetReplicaList("", "new");
  ASSERT_TRUE(loc.ok());
  EXPECT_EQ(loc->checksum, std::optional<uint64_t>(0x4444));
  const UUID other = UUID::Generate();
  ASSERT_EQ(dir_->MountLocalDisk(other, false, "b:7000"), ErrorCode::OK);
  EXPECT_EQ(report(other, "new", 0x5555), ErrorCode::CHECKSUM_MISMATCH);
  EXPECT_EQ(report(other, "new", 0x4444), ErrorCode::OK);
  EXPECT_EQ(dir_->Stats().stale_disk_reports, 4u);
}

}  // namespace
}  // namespace shelfmark
