// HeldRanges: the set by id, and the net adds and releases a change feed
// takes from it.
#include "directory/held_ranges.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace shelfmark {
namespace {

const SegmentEntry* Fake(uintptr_t n) { return reinterpret_cast<const SegmentEntry*>(n); }

HeldRange Range(uint64_t id, uintptr_t segment, int64_t until_ms, int64_t min_remaining_ms = 0) {
  return {id, Fake(segment), UUID{0, segment}, id * 64, 64, until_ms, min_remaining_ms};
}

std::vector<uint64_t> Ids(const std::vector<HeldRangeState>& states) {
  std::vector<uint64_t> out;
  for (const HeldRangeState& s : states) out.push_back(s.id);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint64_t> Sorted(std::vector<uint64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(HeldRangesTest, TakesAddsWithTheirRemainingTime) {
  HeldRanges held;
  held.Add(Range(1, 8, 1000), true);
  held.Add(Range(2, 8, 500, 60'000), true);  // at least a minute from a load
  held.Add(Range(3, 8, 100), true);
  std::vector<HeldRangeState> added = held.TakeAdded(400);
  ASSERT_EQ(Ids(added), (std::vector<uint64_t>{1, 2, 3}));
  for (const HeldRangeState& s : added) {
    EXPECT_EQ(s.segment, (UUID{0, 8}));
    EXPECT_EQ(s.offset, s.id * 64);
    EXPECT_EQ(s.size, 64u);
    const int64_t want = s.id == 1 ? 600 : s.id == 2 ? 60'000 : 0;  // past: 0, never negative
    EXPECT_EQ(s.remaining_ms, want) << s.id;
  }
  EXPECT_TRUE(held.TakeAdded(400).empty()) << "taken once";
  EXPECT_TRUE(held.TakeReleased().empty());
  EXPECT_EQ(held.size(), 3u);
}

TEST(HeldRangesTest, ReleasesAreNetOfAdds) {
  HeldRanges held;
  held.Add(Range(1, 8, 1000), true);
  held.Add(Range(2, 8, 1000), true);
  EXPECT_EQ(Ids(held.TakeAdded(0)), (std::vector<uint64_t>{1, 2}));
  EXPECT_TRUE(held.Release(1, true));
  EXPECT_FALSE(held.Release(1, true)) << "released already";
  EXPECT_FALSE(held.Release(9, true)) << "never held";
  held.Add(Range(3, 8, 1000), true);
  EXPECT_TRUE(held.Release(3, true));  // added and released before a take
  EXPECT_TRUE(held.TakeAdded(0).empty()) << "an add released before the take is not shipped";
  EXPECT_EQ(Sorted(held.TakeReleased()), (std::vector<uint64_t>{1, 3}));
  // A released id held again: the add wins over the pending release.
  EXPECT_TRUE(held.Release(2, true));
  held.Add(Range(2, 16, 2000), true);
  EXPECT_TRUE(held.TakeReleased().empty());
  std::vector<HeldRangeState> added = held.TakeAdded(0);
  ASSERT_EQ(added.size(), 1u);
  EXPECT_EQ(added[0].segment, (UUID{0, 16}));
}

TEST(HeldRangesTest, UntrackedChangesKeepTheSetOnly) {
  HeldRanges held;
  held.Add(Range(1, 8, 1000), false);
  held.Add(Range(2, 8, 1000), false);
  EXPECT_TRUE(held.Release(2, false));
  EXPECT_TRUE(held.TakeAdded(0).empty());
  EXPECT_TRUE(held.TakeReleased().empty());
  EXPECT_EQ(Ids(held.Export(0)), (std::vector<uint64_t>{1}));
}

TEST(HeldRangesTest, DropSegmentsReleasesTheirRangesOnly) {
  HeldRanges held;
  held.Add(Range(1, 8, 1000), true);
  held.Add(Range(2, 16, 1000), true);
  held.Add(Range(3, 8, 1000), true);
  held.TakeAdded(0);
  EXPECT_EQ(held.DropSegments({Fake(8)}, true), 2u);
  EXPECT_EQ(Sorted(held.TakeReleased()), (std::vector<uint64_t>{1, 3}));
  EXPECT_EQ(Ids(held.Export(0)), (std::vector<uint64_t>{2}));
  held.Clear();
  EXPECT_EQ(held.size(), 0u);
  EXPECT_TRUE(held.Export(0).empty());
}

}  // namespace
}  // namespace shelfmark
