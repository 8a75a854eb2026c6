#include "directory/object_metadata.h"

#include <gtest/gtest.h>

namespace shelfmark {
namespace {

TEST(ReplicaList, GrowsBeyondInlineAndErases) {
  ReplicaList list;
  EXPECT_TRUE(list.empty());
  for (uint64_t i = 1; i <= 5; ++i) {
    list.push_back(MakeReplica(i, ReplicaStatus::COMPLETE, ReplicaType::MEMORY, nullptr, i * 64));
  }
  ASSERT_EQ(list.size(), 5u);
  for (uint64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(list[i].id, i + 1);
    EXPECT_EQ(list[i].offset, (i + 1) * 64);
  }
  EXPECT_EQ(list.erase_if([](const Replica& r) { return r.id % 2 == 0; }), 2u);
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[1].id, 3u);
}

TEST(ReplicaList, FieldsRoundTripThroughBitfields) {
  Replica r = MakeReplica((1ULL << 48) - 1, ReplicaStatus::FAILED, ReplicaType::LOCAL_DISK,
                          nullptr, 7);
  EXPECT_EQ(r.id, (1ULL << 48) - 1);
  EXPECT_EQ(r.status_enum(), ReplicaStatus::FAILED);
  EXPECT_EQ(r.type_enum(), ReplicaType::LOCAL_DISK);
  EXPECT_EQ(r.refcnt, 0u);
}

TEST(ReplicaList, SwapExchangesInlineAndHeapLists) {
  ReplicaList one, three;
  one.push_back(MakeReplica(1, ReplicaStatus::COMPLETE, ReplicaType::MEMORY, nullptr, 64));
  for (uint64_t i = 10; i < 13; ++i) {
    three.push_back(MakeReplica(i, ReplicaStatus::PROCESSING, ReplicaType::MEMORY, nullptr, i));
  }
  one.swap(three);
  ASSERT_EQ(one.size(), 3u);
  ASSERT_EQ(three.size(), 1u);
  EXPECT_EQ(one[2].id, 12u);
  EXPECT_EQ(three[0].id, 1u);
  three.push_back(MakeReplica(2, ReplicaStatus::COMPLETE, ReplicaType::MEMORY, nullptr, 128));
  EXPECT_EQ(three[1].id, 2u);  // the inline list grows as before
}

TEST(ObjectMetadata, SwapVersionsExchangesEverything) {
  ObjectMetadata live, pending;
  live.size = 100;
  live.lease_deadline_ms = 5000;
  live.has_pending = true;
  live.group = std::make_unique<const std::string>("old");
  pending.size = 300;
  pending.hard_pin = true;
  pending.replicas.push_back(MakeReplica(7, ReplicaStatus::COMPLETE, ReplicaType::MEMORY, nullptr, 0));
  SwapVersions(live, pending);
  EXPECT_EQ(live.size, 300u);
  EXPECT_TRUE(live.hard_pin);
  EXPECT_EQ(live.lease_deadline_ms.load(), 0);
  EXPECT_FALSE(live.has_pending);
  EXPECT_EQ(live.group, nullptr);
  ASSERT_EQ(live.replicas.size(), 1u);
  EXPECT_EQ(pending.size, 100u);
  EXPECT_EQ(pending.lease_deadline_ms.load(), 5000);
  EXPECT_EQ(*pending.group, "old");
  EXPECT_TRUE(pending.replicas.empty());
}

TEST(ObjectMetadata, LeaseOnlyGrows) {
  ObjectMetadata m;
  m.ExtendLease(100);
  m.ExtendLease(50);
  EXPECT_EQ(m.lease_deadline_ms.load(), 100);
  EXPECT_TRUE(m.LeaseLive(99));
  EXPECT_FALSE(m.LeaseLive(100));
}

TEST(ObjectMetadata, UsesCountFromThePutAndSaturate) {
  ObjectMetadata m;
  m.StartUses(7, 1);
  EXPECT_EQ(m.last_use(), 7u);
  EXPECT_EQ(m.uses(), 1u);
  m.NoteUse(9);
  EXPECT_EQ(m.last_use(), 9u);
  EXPECT_EQ(m.uses(), 2u);
  for (uint64_t t = 10; t < 20; ++t) m.NoteUse(t);
  EXPECT_EQ(m.last_use(), 19u);
  EXPECT_EQ(m.uses(), ObjectMetadata::kMaxUses);
  m.StartUses(20, 5);  // a put entering as reused (a ghost hit) is clamped
  EXPECT_EQ(m.uses(), ObjectMetadata::kMaxUses);
}

TEST(ObjectMetadata, StaysCompact) {
  // The memory goal is <= 200 bytes per single-replica object beyond its key
  // (96 of them: 8 for the use stamp eviction orders by).
  EXPECT_LE(sizeof(ObjectMetadata), 96u);
}

}  // namespace
}  // namespace shelfmark
