#include "common/offset_allocator.h"

#include <bit>
#include <cassert>
#include <iterator>
#include <limits>

namespace shelfmark {
namespace {

uint64_t NormaliseAlignment(uint64_t alignment) {
  assert(std::has_single_bit(alignment) && "alignment must be a power of two");
  return alignment == 0 ? 1 : std::bit_floor(alignment);
}

}  // namespace

OffsetAllocator::OffsetAllocator(uint64_t capacity, uint64_t alignment)
    : alignment_(NormaliseAlignment(alignment)) {
  capacity_ = capacity & ~(alignment_ - 1);
  if (capacity_ > 0) InsertFree(0, capacity_, by_offset_.end());
}

uint64_t OffsetAllocator::AlignedSize(uint64_t size) const {
  const uint64_t mask = alignment_ - 1;
  if (size > std::numeric_limits<uint64_t>::max() - mask) return 0;
  return (size + mask) & ~mask;
}

std::optional<uint64_t> OffsetAllocator::Allocate(uint64_t size) {
  // size <= capacity_ also keeps AlignedSize from overflowing.
  if (size == 0 || size > capacity_) return std::nullopt;
  const uint64_t need = AlignedSize(size);
  auto best = by_size_.lower_bound({need, 0});
  if (best == by_size_.end()) return std::nullopt;
  const auto [extent_size, offset] = *best;
  auto it = by_offset_.find(offset);
  if (extent_size == need) {
    EraseFree(it);
  } else {
    ReshapeFree(it, best, offset + need, extent_size - need);  // the tail
  }
  return offset;
}

bool OffsetAllocator::Free(uint64_t offset, uint64_t size) {
  if (size == 0 || size > capacity_) return false;
  const uint64_t need = AlignedSize(size);
  if (!IsValidExtent(offset, need)) return false;
  const uint64_t end = offset + need;
  auto next = by_offset_.lower_bound(offset);
  if (OverlapsFree(offset, end, next)) return false;

  const auto none = by_offset_.end();
  const auto prev = next == by_offset_.begin() ? none : std::prev(next);
  const bool join_prev = prev != none && prev->first + prev->second == offset;
  const bool join_next = next != none && next->first == end;
  if (join_prev && join_next) {
    const uint64_t merged = prev->second + need + next->second;
    EraseFree(next);
    ReshapeFree(prev, SizeEntry(prev), prev->first, merged);
  } else if (join_prev) {
    ReshapeFree(prev, SizeEntry(prev), prev->first, prev->second + need);
  } else if (join_next) {
    ReshapeFree(next, SizeEntry(next), offset, need + next->second);
  } else {
    InsertFree(offset, need, next);
  }
  return true;
}

bool OffsetAllocator::IsAllocated(uint64_t offset, uint64_t size) const {
  if (size == 0 || size > capacity_) return false;
  const uint64_t need = AlignedSize(size);
  if (!IsValidExtent(offset, need)) return false;
  return !OverlapsFree(offset, offset + need, by_offset_.lower_bound(offset));
}

uint64_t OffsetAllocator::largest_free_extent() const {
  return by_size_.empty() ? 0 : by_size_.rbegin()->first;
}

double OffsetAllocator::Fragmentation() const {
  if (free_bytes_ == 0) return 0.0;
  return 1.0 - static_cast<double>(largest_free_extent()) /
                   static_cast<double>(free_bytes_);
}

std::vector<std::pair<uint64_t, uint64_t>> OffsetAllocator::FreeExtents()
    const {
  return {by_offset_.begin(), by_offset_.end()};
}

std::optional<OffsetAllocator> OffsetAllocator::FromFreeExtents(
    uint64_t capacity, uint64_t alignment,
    const std::vector<std::pair<uint64_t, uint64_t>>& extents) {
  if (!std::has_single_bit(alignment)) return std::nullopt;
  OffsetAllocator result(capacity, alignment);
  if (!result.by_offset_.empty()) result.EraseFree(result.by_offset_.begin());
  for (const auto& [offset, size] : extents) {
    if (!result.AppendFree(offset, size)) return std::nullopt;
  }
  return result;
}

bool OffsetAllocator::AppendFree(uint64_t offset, uint64_t size) {
  if (size % alignment_ != 0 || !IsValidExtent(offset, size)) return false;
  if (by_offset_.empty()) {
    InsertFree(offset, size, by_offset_.end());
    return true;
  }
  const auto last = std::prev(by_offset_.end());
  const uint64_t last_end = last->first + last->second;
  if (offset < last_end) return false;
  if (offset == last_end) {
    ReshapeFree(last, SizeEntry(last), last->first, last->second + size);
  } else {
    InsertFree(offset, size, by_offset_.end());
  }
  return true;
}

void OffsetAllocator::InsertFree(uint64_t offset, uint64_t size,
                                 OffsetMap::const_iterator hint) {
  by_offset_.emplace_hint(hint, offset, size);
  by_size_.emplace(size, offset);
  free_bytes_ += size;
}

void OffsetAllocator::ReshapeFree(OffsetMap::iterator it,
                                  SizeSet::iterator size_it, uint64_t offset,
                                  uint64_t size) {
  auto size_node = by_size_.extract(size_it);
  size_node.value() = {size, offset};
  by_size_.insert(std::move(size_node));
  free_bytes_ = free_bytes_ - it->second + size;
  if (it->first == offset) {
    it->second = size;
    return;
  }
  const auto hint = std::next(it);
  auto node = by_offset_.extract(it);
  node.key() = offset;
  node.mapped() = size;
  by_offset_.insert(hint, std::move(node));
}

OffsetAllocator::SizeSet::iterator OffsetAllocator::SizeEntry(
    OffsetMap::const_iterator it) {
  return by_size_.find({it->second, it->first});
}

OffsetAllocator::OffsetMap::iterator OffsetAllocator::EraseFree(
    OffsetMap::iterator it) {
  by_size_.erase({it->second, it->first});
  free_bytes_ -= it->second;
  return by_offset_.erase(it);
}

bool OffsetAllocator::IsValidExtent(uint64_t offset, uint64_t size) const {
  if (size == 0 || offset % alignment_ != 0) return false;
  return size <= capacity_ && offset <= capacity_ - size;
}

bool OffsetAllocator::OverlapsFree(uint64_t offset, uint64_t end,
                                   OffsetMap::const_iterator next) const {
  if (next != by_offset_.end() && next->first < end) return true;
  if (next == by_offset_.begin()) return false;
  const auto prev = std::prev(next);
  return prev->first + prev->second > offset;
}

}  // namespace shelfmark
