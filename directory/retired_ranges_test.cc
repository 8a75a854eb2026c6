// RetiredRanges: ranges held until their deadline, dropped with their
// segment, counted in bytes.
#include "directory/retired_ranges.h"

#include <gtest/gtest.h>

namespace shelfmark {
namespace {

SegmentEntry* Fake(uintptr_t n) { return reinterpret_cast<SegmentEntry*>(n); }

TEST(RetiredRangesTest, ReleasesOnlyPastTheirDeadline) {
  RetiredRanges list;
  list.Add({Fake(8), 0, 100, 128, 1000});
  list.Add({Fake(8), 128, 60, 64, 2000});
  EXPECT_EQ(list.bytes(), 192u);
  std::vector<uint64_t> released;
  auto release = [&](const RetiredRange& r) { released.push_back(r.offset); };
  list.TakeExpired(999, release);
  EXPECT_TRUE(released.empty());
  list.TakeExpired(1000, release);
  EXPECT_EQ(released, std::vector<uint64_t>{0});
  EXPECT_EQ(list.bytes(), 64u);
  list.TakeExpired(5000, release);
  EXPECT_EQ(released, (std::vector<uint64_t>{0, 128}));
  EXPECT_EQ(list.bytes(), 0u);
}

TEST(RetiredRangesTest, DropSegmentsForgetsTheirRangesOnly) {
  RetiredRanges list;
  list.Add({Fake(8), 0, 64, 64, 1000});
  list.Add({Fake(16), 0, 64, 64, 1000});
  list.Add({Fake(8), 64, 64, 64, 1000});
  EXPECT_EQ(list.DropSegments({Fake(8)}), 2u);
  ASSERT_EQ(list.Export().size(), 1u);
  EXPECT_EQ(list.Export()[0].segment, Fake(16));
  EXPECT_EQ(list.bytes(), 64u);
  list.Clear();
  EXPECT_EQ(list.bytes(), 0u);
  EXPECT_TRUE(list.Export().empty());
}

}  // namespace
}  // namespace shelfmark
