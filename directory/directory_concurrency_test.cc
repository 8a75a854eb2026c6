// Many threads on many shards at once; run under the Sanitize build type to
// catch races. Asserts the directory's accounting stays exact.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "directory/directory_test_util.h"

namespace shelfmark {
namespace {

using ConcurrencyTest = DirectoryFixture;

TEST_F(ConcurrencyTest, ParallelPutsReadsAndRemovesKeepAccountingExact) {
  Mount(node_, "a", 64 << 20);
  Mount(node_, "b", 64 << 20);
  constexpr int kThreads = 8;
  constexpr int kKeys = 2000;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      UUID me = UUID::Generate();
      std::string tenant = t % 2 ? "t-odd" : "";
      for (int i = 0; i < kKeys; ++i) {
        std::string key = "t" + std::to_string(t) + "/" + std::to_string(i);
        PutConfig c;
        c.replica_num = 1 + i % 2;
        if (i % 7 == 0) c.group_id = "g" + std::to_string(i % 3);
        if (!dir_->PutStart(me, tenant, key, 100 + i, c).ok()) failures++;
        if (dir_->PutEnd(me, tenant, key) != ErrorCode::OK) failures++;
        if (!dir_->GetReplicaList(tenant, key).ok()) failures++;
        if (i % 2 == 0 && dir_->Remove(tenant, key, true) != ErrorCode::OK) failures++;
      }
    });
  }
  std::atomic<bool> stop{false};
  std::thread observer([&] {
    while (!stop) {
      dir_->Stats();
      dir_->CountKeys("", true);
      dir_->ListKeys("t-odd", "t1/", 5);
      dir_->RunBackgroundOnce();
    }
  });
  for (auto& th : threads) th.join();
  stop = true;
  observer.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(dir_->Stats().key_count, static_cast<uint64_t>(kThreads * kKeys / 2));
  EXPECT_EQ(dir_->CountKeys("", false) + dir_->CountKeys("t-odd", false),
            static_cast<uint64_t>(kThreads * kKeys / 2));
  EXPECT_EQ(dir_->RemoveAll("", true, true), static_cast<uint64_t>(kThreads * kKeys / 2));
  EXPECT_EQ(dir_->Stats().allocated_bytes, 0u);
  EXPECT_EQ(dir_->Stats().key_count, 0u);
  EXPECT_EQ(dir_->GroupMembers("", "g0").error(), ErrorCode::OBJECT_NOT_FOUND);
}

// Prefetching batches (at any directory size) racing each other and a
// remover on shared keys: every prefetch reads its map under the shard lock.
class PrefetchingConcurrencyTest : public DirectoryFixture {
 protected:
  PrefetchingConcurrencyTest() : DirectoryFixture(PrefetchingOptions()) {}
};

TEST_F(PrefetchingConcurrencyTest, BatchesRacingRemovesKeepAccountingExact) {
  Mount(node_, "a", 64 << 20);
  constexpr int kThreads = 4;
  constexpr int kRounds = 40;
  constexpr int kBatch = 64;
  std::atomic<int> failures{0};
  std::atomic<bool> stop{false};
  std::thread remover([&] {  // removes a shared key range, over and over
    std::vector<std::string> shared;
    for (int i = 0; i < kBatch; ++i) shared.push_back("shared/" + std::to_string(i));
    while (!stop) dir_->BatchRemove("", shared, /*force=*/true);
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const UUID me = UUID::Generate();
      for (int r = 0; r < kRounds; ++r) {
        std::vector<std::string> own, shared;
        for (int i = 0; i < kBatch; ++i) {
          own.push_back("t" + std::to_string(t) + "/" + std::to_string(r * kBatch + i));
          shared.push_back("shared/" + std::to_string(i));
        }
        const std::vector<uint64_t> sizes(kBatch, 64);
        for (const auto& one : dir_->BatchPutStart(me, "", own, sizes, {})) failures += !one.ok();
        for (ErrorCode c : dir_->BatchPutEnd(me, "", own)) failures += c != ErrorCode::OK;
        for (const auto& one : dir_->BatchExistKey("", own)) failures += !(one.ok() && *one);
        dir_->BatchPutStart(me, "", shared, sizes, {});  // any answer: the remover races it
        dir_->BatchPutEnd(me, "", shared);
        dir_->BatchGetReplicaList("", shared);
      }
    });
  }
  for (auto& th : threads) th.join();
  stop = true;
  remover.join();
  std::vector<std::string> shared;
  for (int i = 0; i < kBatch; ++i) shared.push_back("shared/" + std::to_string(i));
  dir_->BatchRemove("", shared, /*force=*/true);
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(dir_->Stats().key_count, static_cast<uint64_t>(kThreads * kRounds * kBatch));
  EXPECT_EQ(dir_->RemoveAll("", true, true), static_cast<uint64_t>(kThreads * kRounds * kBatch));
  EXPECT_EQ(dir_->Stats().allocated_bytes, 0u);
}

TEST_F(ConcurrencyTest, UnmountDuringPutsLeavesNoDanglingReplicas) {
  for (int round = 0; round < 5; ++round) {
    Segment s = Mount(node_, "a" + std::to_string(round), 16 << 20);
    std::thread writer([&] {
      for (int i = 0; i < 2000; ++i) {
        std::string key = "r" + std::to_string(round) + "/" + std::to_string(i);
        if (dir_->PutStart(writer_, "", key, 64, {}).ok()) dir_->PutEnd(writer_, "", key);
      }
    });
    std::this_thread::yield();  // not synchronisation: the test holds at any interleaving
    ASSERT_EQ(dir_->UnmountSegment(node_, s.id), ErrorCode::OK);
    writer.join();
    EXPECT_EQ(dir_->Stats().key_count, 0u);
    EXPECT_EQ(dir_->Stats().allocated_bytes, 0u);
  }
}

// Promotion on hit racing removal, re-offload, eviction and an unmount:
// every reserved range ends attached or given back, never both, never lost.
class PromotionRaceTest : public DirectoryFixture {
 protected:
  PromotionRaceTest() : DirectoryFixture(OffloadOptions()) {}
  static constexpr int kKeys = 2000;
  static std::string Key(int i) { return "d" + std::to_string(i); }
  void ReportOnDisk(int i) {
    EXPECT_TRUE(dir_->NotifyOffloadSuccess(node_, {{"", Key(i), {1, 0, 5, 1024, "a:7000"}}}).ok());
  }
  // The node: asks for every key, reports most as copied, some abandoned.
  void PromoteAll() {
    for (int i = 0; i < kKeys; ++i) {
      auto grants = dir_->PromoteStart(node_, {{"", Key(i), 1024}});
      if (grants.ok() && (*grants)[0].code == ErrorCode::OK) {
        EXPECT_TRUE(dir_->PromoteEnd(node_, {{"", Key(i), i % 5 != 0}}).ok());
      }
    }
  }
  // MEMORY replicas of the keys, as the directory lists them.
  uint64_t MemoryReplicas() {
    uint64_t n = 0;
    for (int i = 0; i < kKeys; ++i) {
      auto info = dir_->Stat("", Key(i));
      if (!info.ok()) continue;
      for (const auto& r : info->replicas) n += r.type == ReplicaType::MEMORY ? 1 : 0;
    }
    return n;
  }
};

TEST_F(PromotionRaceTest, RemovalAndReofloadDuringPromotionsLoseNoRange) {
  Mount(node_, "a", 8 << 20);
  ASSERT_EQ(dir_->MountLocalDisk(node_, true, "a:7000"), ErrorCode::OK);
  for (int i = 0; i < kKeys; ++i) ReportOnDisk(i);
  std::thread node([&] { PromoteAll(); });
  std::thread remover([&] {
    for (int i = 0; i < kKeys; i += 3) {
      dir_->Remove("", Key(i), true);
      if (i % 2 == 0) ReportOnDisk(i);  // back on disk, a new object
    }
  });
  std::atomic<bool> stop{false};
  std::thread background([&] {
    while (!stop) dir_->RunBackgroundOnce();
  });
  node.join();
  remover.join();
  stop = true;
  background.join();
  DirectoryStats s = dir_->Stats();
  EXPECT_EQ(s.promotions_inflight, 0u);
  EXPECT_GT(s.promoted, 0u);
  EXPECT_EQ(s.allocated_bytes, MemoryReplicas() * 1024) << "every range attached or given back";
  dir_->RemoveAll("", true, true);
  EXPECT_EQ(dir_->Stats().allocated_bytes, 0u);
}

TEST_F(PromotionRaceTest, UnmountDuringPromotionsLeavesNoReservation) {
  Segment seg = Mount(node_, "a", 8 << 20);
  ASSERT_EQ(dir_->MountLocalDisk(node_, true, "a:7000"), ErrorCode::OK);
  for (int i = 0; i < kKeys; ++i) ReportOnDisk(i);
  std::thread node([&] { PromoteAll(); });
  std::this_thread::yield();  // not synchronisation: the test holds at any interleaving
  ASSERT_EQ(dir_->UnmountSegment(node_, seg.id), ErrorCode::OK);
  node.join();
  EXPECT_EQ(dir_->Stats().promotions_inflight, 0u);
  EXPECT_EQ(dir_->Stats().allocated_bytes, 0u);
  EXPECT_EQ(MemoryReplicas(), 0u);
  EXPECT_EQ(dir_->Stats().key_count, static_cast<uint64_t>(kKeys)) << "the disk copies stay";
}

}  // namespace
}  // namespace shelfmark
