// OffsetAllocator: places MEMORY replicas inside one node DRAM segment by
// handing out aligned byte ranges of [0, capacity). Best fit over a map of
// free extents; nothing is stored per allocation, so the caller must free
// with the same size it allocated.
//
// Thread safety: none; the caller serialises access (the directory holds a
// per-segment mutex).
//
// Invariants:
//  - alignment_ is a power of two; capacity_ is a multiple of it;
//  - every free extent is non-empty, aligned (offset and size) and inside
//    [0, capacity_); no two free extents overlap or touch (they coalesce);
//  - by_size_ holds exactly the (size, offset) pairs of by_offset_;
//  - free_bytes_ is the sum of the free extents' sizes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace shelfmark {

class OffsetAllocator {
 public:
  // Manages [0, capacity). Every allocation is rounded up to `alignment` and
  // offsets are multiples of it; the tail past the last multiple is unusable.
  // `alignment` must be a power of two >= 1 (asserted; a release build uses
  // the largest power of two below it, or 1 for 0).
  OffsetAllocator(uint64_t capacity, uint64_t alignment = 64);

  // Best fit: the smallest free extent that fits, lowest offset among equal
  // sizes; the allocation takes the front of that extent. nullopt when
  // size == 0 or nothing fits. O(log n) in the number of free extents.
  std::optional<uint64_t> Allocate(uint64_t size);

  // Frees what Allocate(size) returned at `offset` (same size as asked) and
  // coalesces with the neighbours. Returns false, changing nothing, for a zero
  // size or an extent that is out of range, misaligned or overlaps free space
  // (a double free). A wrong size that stays inside allocated space cannot be
  // detected (there is no per-allocation record). O(log n).
  bool Free(uint64_t offset, uint64_t size);

  // `size` rounded up to the alignment. 0 for 0, and 0 for a size that cannot
  // be rounded up without overflowing (neither can be allocated).
  uint64_t AlignedSize(uint64_t size) const;

  uint64_t capacity() const { return capacity_; }  // usable bytes
  uint64_t alignment() const { return alignment_; }
  uint64_t allocated_bytes() const { return capacity_ - free_bytes_; }
  uint64_t free_bytes() const { return free_bytes_; }
  uint64_t largest_free_extent() const;
  size_t free_extent_count() const { return by_offset_.size(); }
  // 1 - largest_free_extent / free_bytes (0 when nothing is free).
  double Fragmentation() const;

  // True when what Allocate(size) would take at `offset` (`size` rounded up)
  // is a valid extent inside [0, capacity) that overlaps no free extent, i.e.
  // lies in allocated space. False for a zero size.
  bool IsAllocated(uint64_t offset, uint64_t size) const;

  // Free extents (offset, size) in offset order: the allocator's full state,
  // for snapshots.
  std::vector<std::pair<uint64_t, uint64_t>> FreeExtents() const;

  // Rebuilds an allocator from FreeExtents(). nullopt if the alignment is not
  // a power of two, or an extent is empty, misaligned, out of range, out of
  // order or overlaps another. Touching extents are accepted and coalesced.
  static std::optional<OffsetAllocator> FromFreeExtents(
      uint64_t capacity, uint64_t alignment,
      const std::vector<std::pair<uint64_t, uint64_t>>& extents);

 private:
  using OffsetMap = std::map<uint64_t, uint64_t>;            // offset -> size
  using SizeSet = std::set<std::pair<uint64_t, uint64_t>>;  // (size, offset)

  // Adds a free extent that neither overlaps nor touches another; `hint` is
  // the extent after it in offset order (or end()).
  void InsertFree(uint64_t offset, uint64_t size,
                  OffsetMap::const_iterator hint);
  // Gives a free extent (`it`, and `size_it` its by_size_ entry) a new offset
  // and size without changing its place in offset order, reusing both tree
  // nodes (no allocation).
  void ReshapeFree(OffsetMap::iterator it, SizeSet::iterator size_it,
                   uint64_t offset, uint64_t size);
  // The by_size_ entry of a free extent.
  SizeSet::iterator SizeEntry(OffsetMap::const_iterator it);
  // Adds a free extent after every other one, merging it with the last when
  // they touch. False (unchanged) when it is invalid or not after the last.
  bool AppendFree(uint64_t offset, uint64_t size);
  // Removes a free extent; returns the iterator after it in offset order.
  OffsetMap::iterator EraseFree(OffsetMap::iterator it);
  // True when [offset, offset + size) is aligned, non-empty and inside
  // [0, capacity_); `size` is already aligned.
  bool IsValidExtent(uint64_t offset, uint64_t size) const;
  // True when [offset, end) overlaps a free extent; `next` is the first free
  // extent at or after `offset`.
  bool OverlapsFree(uint64_t offset, uint64_t end,
                    OffsetMap::const_iterator next) const;

  uint64_t capacity_;
  uint64_t alignment_;
  uint64_t free_bytes_ = 0;
  OffsetMap by_offset_;
  SizeSet by_size_;
};

}  // namespace shelfmark
