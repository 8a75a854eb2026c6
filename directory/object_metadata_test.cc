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

TEST(ObjectMetadata, LeaseOnlyGrows) {
  ObjectMetadata m;
  m.ExtendLease(100);
  m.ExtendLease(50);
  EXPECT_EQ(m.lease_deadline_ms.load(), 100);
  EXPECT_TRUE(m.LeaseLive(99));
  EXPECT_FALSE(m.LeaseLive(100));
}

TEST(ObjectMetadata, StaysCompact) {
  // The memory goal is <= 200 bytes per single-replica object beyond its key.
  EXPECT_LE(sizeof(ObjectMetadata), 88u);
}

}  // namespace
}  // namespace shelfmark
