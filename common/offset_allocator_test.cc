#include "common/offset_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <utility>
#include <vector>

namespace shelfmark {
namespace {

using Extents = std::vector<std::pair<uint64_t, uint64_t>>;
constexpr uint64_t kU = 64;  // one alignment unit
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

// Checks the invariants visible through the public API.
void ExpectConsistent(const OffsetAllocator& a) {
  uint64_t sum = 0;
  uint64_t largest = 0;
  uint64_t prev_end = 0;
  bool first = true;
  for (const auto& [offset, size] : a.FreeExtents()) {
    EXPECT_GT(size, 0u);
    EXPECT_EQ(offset % a.alignment(), 0u);
    EXPECT_EQ(size % a.alignment(), 0u);
    EXPECT_LE(offset + size, a.capacity());
    if (!first) {
      EXPECT_GT(offset, prev_end) << "extents touch or overlap";
    }
    first = false;
    prev_end = offset + size;
    sum += size;
    largest = std::max(largest, size);
  }
  EXPECT_EQ(sum, a.free_bytes());
  EXPECT_EQ(a.allocated_bytes() + a.free_bytes(), a.capacity());
  EXPECT_EQ(largest, a.largest_free_extent());
  EXPECT_EQ(a.FreeExtents().size(), a.free_extent_count());
}

TEST(OffsetAllocator, RoundsToAlignment) {
  OffsetAllocator a(1 << 20, kU);
  EXPECT_EQ(a.AlignedSize(0), 0u);
  EXPECT_EQ(a.AlignedSize(1), kU);
  EXPECT_EQ(a.AlignedSize(kU), kU);
  EXPECT_EQ(a.AlignedSize(kU + 1), 2 * kU);
  EXPECT_EQ(a.AlignedSize(kMax), 0u);  // would overflow
  EXPECT_EQ(a.Allocate(1), 0u);
  EXPECT_EQ(a.Allocate(kU + 1), kU);
  EXPECT_EQ(a.Allocate(kU), 3 * kU);
  EXPECT_EQ(a.allocated_bytes(), 4 * kU);
  EXPECT_EQ(a.free_bytes(), (1u << 20) - 4 * kU);
  ExpectConsistent(a);
}

TEST(OffsetAllocator, AlignmentOfOneIsExact) {
  OffsetAllocator a(100, 1);
  EXPECT_EQ(a.AlignedSize(7), 7u);
  EXPECT_EQ(a.Allocate(7), 0u);
  EXPECT_EQ(a.Allocate(3), 7u);
  EXPECT_EQ(a.allocated_bytes(), 10u);
}

TEST(OffsetAllocator, CapacityTailIsUnusable) {
  OffsetAllocator a(1000, kU);
  EXPECT_EQ(a.capacity(), 960u);
  EXPECT_EQ(a.free_bytes(), 960u);
  EXPECT_EQ(a.Allocate(961), std::nullopt);
  EXPECT_EQ(a.Allocate(960), 0u);
  EXPECT_EQ(a.Allocate(1), std::nullopt);

  OffsetAllocator tiny(63, kU);
  EXPECT_EQ(tiny.capacity(), 0u);
  EXPECT_EQ(tiny.free_extent_count(), 0u);
  EXPECT_EQ(tiny.Allocate(1), std::nullopt);
  EXPECT_EQ(tiny.Fragmentation(), 0.0);
}

TEST(OffsetAllocator, PicksSmallestFittingExtentLowestOffsetFirst) {
  OffsetAllocator a(100 * kU, kU);
  // Blocks of 5,1,3,1,3,1,8,1 units then the rest; free the 5, 3, 3, 8 ones.
  std::vector<uint64_t> units = {5, 1, 3, 1, 3, 1, 8, 1, 77};
  std::vector<uint64_t> offsets;
  for (uint64_t u : units) offsets.push_back(*a.Allocate(u * kU));
  ASSERT_EQ(a.free_bytes(), 0u);
  for (int i : {0, 2, 4, 6}) ASSERT_TRUE(a.Free(offsets[i], units[i] * kU));
  EXPECT_EQ(a.FreeExtents(), (Extents{{0, 5 * kU}, {6 * kU, 3 * kU},
                                      {10 * kU, 3 * kU}, {14 * kU, 8 * kU}}));
  EXPECT_EQ(a.Allocate(2 * kU), 6 * kU);   // a 3-hole, the lower one
  EXPECT_EQ(a.Allocate(3 * kU), 10 * kU);  // exact fit beats the 5-hole
  EXPECT_EQ(a.Allocate(4 * kU), 0u);       // 5-hole beats the 8-hole
  EXPECT_EQ(a.Allocate(6 * kU), 14 * kU);
  EXPECT_EQ(a.FreeExtents(),
            (Extents{{4 * kU, kU}, {8 * kU, kU}, {20 * kU, 2 * kU}}));
  EXPECT_EQ(a.Allocate(3 * kU), std::nullopt);
  EXPECT_EQ(a.largest_free_extent(), 2 * kU);
  EXPECT_DOUBLE_EQ(a.Fragmentation(), 0.5);
  ExpectConsistent(a);
}

TEST(OffsetAllocator, ExhaustionReturnsNullopt) {
  OffsetAllocator a(10 * kU, kU);
  std::vector<uint64_t> got;
  for (int i = 0; i < 10; ++i) {
    auto off = a.Allocate(kU);
    ASSERT_TRUE(off.has_value());
    got.push_back(*off);
  }
  std::sort(got.begin(), got.end());
  EXPECT_EQ(std::unique(got.begin(), got.end()), got.end());
  EXPECT_EQ(a.Allocate(1), std::nullopt);
  EXPECT_EQ(a.Allocate(kMax), std::nullopt);
  EXPECT_EQ(a.free_bytes(), 0u);
  EXPECT_EQ(a.largest_free_extent(), 0u);
  EXPECT_EQ(a.Fragmentation(), 0.0);
  ASSERT_TRUE(a.Free(got[3], kU));
  EXPECT_EQ(a.Allocate(2 * kU), std::nullopt);
  EXPECT_EQ(a.Allocate(kU), got[3]);
}

TEST(OffsetAllocator, ZeroSizeIsRejected) {
  OffsetAllocator a(10 * kU, kU);
  EXPECT_EQ(a.Allocate(0), std::nullopt);
  ASSERT_EQ(a.Allocate(kU), 0u);
  EXPECT_FALSE(a.Free(0, 0));
  EXPECT_EQ(a.allocated_bytes(), kU);
}

TEST(OffsetAllocator, FreeingEverythingInRandomOrderCoalescesToOneExtent) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    OffsetAllocator a((1 << 20) + 13, kU);
    std::vector<std::pair<uint64_t, uint64_t>> live;
    std::uniform_int_distribution<uint64_t> size_dist(1, 5000);
    for (uint64_t size = size_dist(rng);; size = size_dist(rng)) {
      auto off = a.Allocate(size);
      if (!off) break;
      live.emplace_back(*off, size);
    }
    while (auto off = a.Allocate(1)) live.emplace_back(*off, 1);  // the tail
    ASSERT_EQ(a.free_bytes(), 0u);
    std::shuffle(live.begin(), live.end(), rng);
    for (const auto& [offset, size] : live) {
      ASSERT_TRUE(a.Free(offset, size)) << "seed " << seed;
      ExpectConsistent(a);
    }
    ExpectConsistent(a);
    EXPECT_EQ(a.FreeExtents(), (Extents{{0, a.capacity()}})) << "seed " << seed;
    EXPECT_EQ(a.allocated_bytes(), 0u);
    EXPECT_EQ(a.Fragmentation(), 0.0);
  }
}

TEST(OffsetAllocator, BadFreesAreRejectedWithoutChangingState) {
  OffsetAllocator a(64 * kU, kU);
  uint64_t x = *a.Allocate(4 * kU);  // [0, 4u)
  uint64_t y = *a.Allocate(4 * kU);  // [4u, 8u)
  uint64_t z = *a.Allocate(4 * kU);  // [8u, 12u)
  ASSERT_TRUE(a.Free(y, 4 * kU));
  const Extents before = a.FreeExtents();
  const uint64_t allocated = a.allocated_bytes();

  struct Case { uint64_t offset, size; const char* what; };
  for (Case c : {Case{y, 4 * kU, "double free"},
                 Case{y + kU, kU, "inside a free extent"},
                 Case{x, 5 * kU, "runs into a free extent"},
                 Case{x + 3 * kU, 2 * kU, "straddles allocated and free"},
                 Case{z + 3 * kU, 2 * kU, "runs into the free tail"},
                 Case{x + 1, kU, "misaligned offset"},
                 Case{64 * kU, kU, "starts at capacity"},
                 Case{63 * kU, 2 * kU, "ends past capacity"},
                 Case{kMax - kU + 1, 2 * kU, "offset + size overflows"},
                 Case{x, kMax, "size overflows when aligned"},
                 Case{x, 0, "zero size"}}) {
    EXPECT_FALSE(a.Free(c.offset, c.size)) << c.what;
    EXPECT_EQ(a.FreeExtents(), before) << c.what;
    EXPECT_EQ(a.allocated_bytes(), allocated) << c.what;
  }
  EXPECT_TRUE(a.Free(x, 4 * kU));
  EXPECT_TRUE(a.Free(z, 4 * kU));
  EXPECT_EQ(a.FreeExtents(), (Extents{{0, 64 * kU}}));
}

// Random allocations and frees; returns the live (offset, size) list.
std::vector<std::pair<uint64_t, uint64_t>> Churn(OffsetAllocator& a,
                                                 uint32_t seed, int ops) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint64_t> size_dist(1, 20 * kU);
  std::vector<std::pair<uint64_t, uint64_t>> live;
  for (int i = 0; i < ops; ++i) {
    if (!live.empty() && rng() % 3 == 0) {
      size_t k = rng() % live.size();
      EXPECT_TRUE(a.Free(live[k].first, live[k].second));
      live[k] = live.back();
      live.pop_back();
    } else if (uint64_t size = size_dist(rng); auto off = a.Allocate(size)) {
      live.emplace_back(*off, size);
    }
  }
  return live;
}

TEST(OffsetAllocator, FreeExtentsRoundTrip) {
  OffsetAllocator a(1000 * kU + 5, kU);
  auto live = Churn(a, 7, 2000);
  ASSERT_GT(a.free_extent_count(), 3u);
  auto b = OffsetAllocator::FromFreeExtents(1000 * kU + 5, kU, a.FreeExtents());
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->FreeExtents(), a.FreeExtents());
  EXPECT_EQ(b->capacity(), a.capacity());
  EXPECT_EQ(b->allocated_bytes(), a.allocated_bytes());
  EXPECT_EQ(b->largest_free_extent(), a.largest_free_extent());
  ExpectConsistent(*b);
  // Both make the same decisions from here on, and the rebuilt one accepts
  // frees of the original's live allocations.
  for (uint64_t size : {1u, 100u, 1000u, 3000u, 64u}) {
    EXPECT_EQ(a.Allocate(size), b->Allocate(size));
  }
  for (const auto& [offset, size] : live) EXPECT_TRUE(b->Free(offset, size));

  auto full = OffsetAllocator::FromFreeExtents(10 * kU, kU, {});
  ASSERT_TRUE(full.has_value());
  EXPECT_EQ(full->free_bytes(), 0u);
  EXPECT_EQ(full->allocated_bytes(), 10 * kU);
  EXPECT_EQ(full->Allocate(1), std::nullopt);
}

TEST(OffsetAllocator, FromFreeExtentsRejectsBadLists) {
  const uint64_t cap = 100 * kU;
  struct Case { uint64_t alignment; Extents extents; const char* what; };
  for (const Case& c : std::vector<Case>{
           {kU, {{0, 2 * kU}, {kU, kU}}, "overlap"},
           {kU, {{4 * kU, kU}, {0, kU}}, "unsorted"},
           {kU, {{kU, kU}, {kU, kU}}, "duplicate"},
           {kU, {{1, kU}}, "misaligned offset"},
           {kU, {{0, kU + 1}}, "misaligned size"},
           {kU, {{0, 0}}, "empty extent"},
           {kU, {{99 * kU, 2 * kU}}, "past capacity"},
           {kU, {{100 * kU, kU}}, "starts at capacity"},
           {kU, {{kMax - kU + 1, 2 * kU}}, "offset + size overflows"},
           {0, {}, "zero alignment"},
           {48, {}, "alignment not a power of two"}}) {
    EXPECT_FALSE(OffsetAllocator::FromFreeExtents(cap, c.alignment, c.extents)
                     .has_value())
        << c.what;
  }
  auto touching = OffsetAllocator::FromFreeExtents(
      cap, kU, {{0, kU}, {kU, kU}, {5 * kU, kU}, {6 * kU, 2 * kU}});
  ASSERT_TRUE(touching.has_value());
  EXPECT_EQ(touching->FreeExtents(), (Extents{{0, 2 * kU}, {5 * kU, 3 * kU}}));
  EXPECT_EQ(touching->free_bytes(), 5 * kU);
}

// The reference: one bool per alignment unit (true = allocated).
struct Model {
  std::vector<bool> used;

  Extents FreeRuns() const {  // in units
    Extents runs;
    for (size_t i = 0; i < used.size();) {
      if (used[i]) { ++i; continue; }
      size_t j = i;
      while (j < used.size() && !used[j]) ++j;
      runs.emplace_back(i, j - i);
      i = j;
    }
    return runs;
  }
  // Best fit in units: smallest run >= need, lowest start among equals.
  std::optional<uint64_t> BestFit(uint64_t need) const {
    std::optional<std::pair<uint64_t, uint64_t>> best;  // (len, start)
    for (const auto& [start, len] : FreeRuns()) {
      if (len >= need && (!best || len < best->first)) best = {{len, start}};
    }
    if (!best) return std::nullopt;
    return best->second;
  }
  bool AnyUsed(uint64_t first, uint64_t n, bool value) const {
    for (uint64_t i = first; i < first + n; ++i) {
      if (used[i] == value) return true;
    }
    return false;
  }
  void Set(uint64_t first, uint64_t n, bool value) {
    for (uint64_t i = first; i < first + n; ++i) used[i] = value;
  }
};

void ExpectMatchesModel(const OffsetAllocator& a, const Model& m) {
  Extents expected;
  uint64_t free_units = 0;
  for (const auto& [start, len] : m.FreeRuns()) {
    expected.emplace_back(start * kU, len * kU);
    free_units += len;
  }
  ASSERT_EQ(a.FreeExtents(), expected);
  ASSERT_EQ(a.free_bytes(), free_units * kU);
  ASSERT_EQ(a.allocated_bytes(), (m.used.size() - free_units) * kU);
}

void RunAgainstModel(uint32_t seed) {
  const uint64_t units = 1000;
  OffsetAllocator a(units * kU + 17, kU);
  Model m{std::vector<bool>(units, false)};
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint64_t> size_dist(1, 40 * kU);
  std::vector<std::pair<uint64_t, uint64_t>> live;  // (offset, asked size)
  for (int op = 0; op < 20000; ++op) {
    const uint64_t roll = rng() % 100;
    if (roll < 55 || live.empty()) {
      const uint64_t size = size_dist(rng);
      const uint64_t need = a.AlignedSize(size) / kU;
      auto off = a.Allocate(size);
      auto want = m.BestFit(need);
      ASSERT_EQ(off.has_value(), want.has_value()) << "op " << op;
      if (!off) continue;
      ASSERT_EQ(*off, *want * kU) << "op " << op;
      ASSERT_FALSE(m.AnyUsed(*off / kU, need, true)) << "overlaps a live one";
      m.Set(*off / kU, need, true);
      live.emplace_back(*off, size);
    } else if (roll < 95) {
      const size_t k = rng() % live.size();
      const auto [offset, size] = live[k];
      ASSERT_TRUE(a.Free(offset, size)) << "op " << op;
      m.Set(offset / kU, a.AlignedSize(size) / kU, false);
      live[k] = live.back();
      live.pop_back();
    } else {
      // A free that covers at least one free unit must be refused.
      const uint64_t start = rng() % units;
      const uint64_t n = 1 + rng() % std::min<uint64_t>(8, units - start);
      if (!m.AnyUsed(start, n, false)) continue;
      const uint64_t free_before = a.free_bytes();
      ASSERT_FALSE(a.Free(start * kU, n * kU)) << "op " << op;
      ASSERT_EQ(a.free_bytes(), free_before);
    }
    if (op % 97 == 0) ExpectMatchesModel(a, m);
  }
  ExpectMatchesModel(a, m);
  ExpectConsistent(a);
}

TEST(OffsetAllocator, RandomizedAgainstReferenceModel) {
  for (uint32_t seed : {1u, 2u, 3u, 42u}) {
    SCOPED_TRACE(seed);
    RunAgainstModel(seed);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace shelfmark
