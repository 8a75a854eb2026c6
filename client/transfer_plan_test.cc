// TransferPlan: how objects are laid over caller pieces, ranges and parts,
// the checksum over pieces, and the ops against a replica.
#include "client/transfer_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "client/client.h"

namespace shelfmark {
namespace {

TEST(TransferPlanTest, ScatterFillsPiecesInOrderAndTrimsTheLast) {
  std::vector<char> a(4), b(10), c(8);
  const std::vector<MutableBuffer> parts = {{a.data(), a.size()}, {nullptr, 0}, {b.data(), b.size()},
                                            {c.data(), c.size()}};
  auto plan = ScatterPlan(parts, 9);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->whole);
  ASSERT_EQ(plan->pieces.size(), 2u);  // the empty part skipped, c unused
  EXPECT_EQ(plan->pieces[0].offset, 0u);
  EXPECT_EQ(plan->pieces[0].length, 4u);
  EXPECT_EQ(plan->pieces[1].offset, 4u);
  EXPECT_EQ(plan->pieces[1].length, 5u);
  EXPECT_EQ(PlanBytes(*plan), 9u);
  EXPECT_EQ(ScatterPlan(parts, 23).error(), ErrorCode::BUFFER_OVERFLOW);
  EXPECT_TRUE(ScatterPlan(parts, 22).ok());
  const std::vector<MutableBuffer> null_part = {{nullptr, 5}};
  EXPECT_EQ(ScatterPlan(null_part, 3).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_TRUE(ScatterPlan({}, 0).ok());  // an empty object needs no memory
}

TEST(TransferPlanTest, RangesPastTheEndAreInvalid) {
  char dst[8];
  std::vector<ReadRange> ranges = {{2, 4, dst}, {10, 0, dst}};
  auto plan = RangePlan(ranges, 10);
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->whole);
  EXPECT_EQ(plan->pieces.size(), 1u);
  EXPECT_EQ(RangePlan(std::vector<ReadRange>{{8, 3, dst}}, 10).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(RangePlan(std::vector<ReadRange>{{11, 0, dst}}, 10).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(RangePlan(std::vector<ReadRange>{{1, UINT64_MAX, dst}}, 10).error(),
            ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(RangePlan(std::vector<ReadRange>{{0, 1, nullptr}}, 10).error(),
            ErrorCode::INVALID_PARAMS);
}

TEST(TransferPlanTest, ChecksumOfPartsIsTheChecksumOfTheirConcatenation) {
  const std::string value = "per-layer pieces of one KV block";
  const std::vector<ConstBuffer> parts = {{value.data(), 7}, {value.data() + 7, 0},
                                          {value.data() + 7, value.size() - 7}};
  auto plan = GatherPlan(parts);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(PlanBytes(*plan), value.size());
  EXPECT_EQ(PlanChecksum(*plan), ObjectChecksum(value));
  EXPECT_EQ(GatherPlan(std::vector<ConstBuffer>{{nullptr, 1}}).error(), ErrorCode::INVALID_PARAMS);
}

TEST(TransferPlanTest, OpsAndCopiesFollowThePieces) {
  const std::string object = "0123456789";
  char x[3], y[2];
  auto plan = RangePlan(std::vector<ReadRange>{{7, 3, x}, {1, 2, y}}, object.size());
  ASSERT_TRUE(plan.ok());
  CopyPieces(*plan, reinterpret_cast<const uint8_t*>(object.data()));
  EXPECT_EQ(std::string(x, 3), "789");
  EXPECT_EQ(std::string(y, 2), "12");
  MemoryDescriptor replica;
  std::vector<TransferOp> ops;
  AppendOps(*plan, replica, &ops);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].remote, &replica);
  EXPECT_EQ(ops[0].remote_offset, 7u);
  EXPECT_EQ(ops[0].length, 3u);
  EXPECT_EQ(ops[1].local, static_cast<void*>(y));
}

}  // namespace
}  // namespace shelfmark
