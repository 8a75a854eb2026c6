// SegmentTable: the node DRAM segments mounted at the master and the offset
// allocator of each, which places MEMORY replicas.
//
// Thread safety: all methods are thread-safe. Lock order: a shard lock may be
// held while calling in (the table's locks are leaves), never the reverse.
// Lifetime: a SegmentEntry stays valid until Erase(); the directory erases it
// only after removing every replica that points at it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/result.h"
#include "common/thread_annotations.h"
#include "common/uuid.h"
#include "directory/directory_state.h"
#include "common/offset_allocator.h"
#include "common/types.h"

namespace shelfmark {

struct SegmentEntry {
  SegmentEntry(const UUID& owner_id, const Segment& seg)
      : owner(owner_id), segment(seg), allocator(seg.size, kAlignment) {}
  // A restored segment with its allocator's exact state.
  SegmentEntry(const UUID& owner_id, const Segment& seg, OffsetAllocator restored)
      : owner(owner_id), segment(seg), allocator(std::move(restored)) {}
  static constexpr uint64_t kAlignment = 64;

  const UUID owner;
  const Segment segment;  // immutable after mount: read without locks
  Mutex mu;
  OffsetAllocator allocator GUARDED_BY(mu);
  std::atomic<bool> unmounting{false};
  // Draining (a graceful unmount's grace period): no new allocations, its
  // replicas still served, until its owner unmounts it.
  std::atomic<bool> draining{false};

  // `size` rounded to the allocator's alignment, and its capacity. Both read
  // only fields the allocator never changes after construction, so no lock
  // is needed; the analysis cannot tell, hence the exemption.
  uint64_t AlignedSize(uint64_t size) const NO_THREAD_SAFETY_ANALYSIS {
    return allocator.AlignedSize(size);
  }
  uint64_t Capacity() const NO_THREAD_SAFETY_ANALYSIS { return allocator.capacity(); }
};

// Where one replica was placed.
struct Placement {
  SegmentEntry* segment;
  uint64_t offset;
};

// Whether `seg` is where a placement asked for: one of `preferred` (segment
// names), or on `prefer_host`; true when neither is given.
bool HonoursPreference(const SegmentEntry& seg, const std::vector<std::string>& preferred,
                       const std::string& prefer_host);

class SegmentTable {
 public:
  // See Directory::MountSegment for the codes.
  ErrorCode Mount(const UUID& owner, const Segment& segment);
  // Marks the segment unmounting (no new allocations) and returns it;
  // SEGMENT_NOT_FOUND / ILLEGAL_CLIENT (owner differs).
  Result<SegmentEntry*> BeginUnmount(const UUID& owner, const UUID& segment_id);
  // Marks every segment of `owner` unmounting and returns them.
  std::vector<SegmentEntry*> BeginUnmountAll(const UUID& owner);
  // Marks unmounting, and returns, the segments that `segment` (valid, of
  // another owner) supersedes: those at its endpoint and protocol. An
  // endpoint is a listening address one process holds at a time, so they
  // are a previous incarnation's, whose memory is gone (issue 28).
  std::vector<SegmentEntry*> BeginUnmountSuperseded(const UUID& owner, const Segment& segment);
  // Marks the segment draining: Allocate, AllocateOwned and AllocateNamed
  // skip it, HasNamed and CouldEverPlace ignore it, Find still returns it
  // (reads of its replicas are served). OK also when already draining;
  // SEGMENT_NOT_FOUND / ILLEGAL_CLIENT (owner differs).
  ErrorCode BeginDrain(const UUID& owner, const UUID& segment_id);
  // Forgets the segment. Precondition: no replica points at it.
  void Erase(SegmentEntry* entry);

  // Places `count` replicas of `size` bytes on distinct segments, preferred
  // names first, then (prefer_host non-empty) the segments whose endpoint's
  // host is prefer_host, then round-robin. All or nothing:
  // NO_AVAILABLE_HANDLE.
  Result<std::vector<Placement>> Allocate(uint32_t count, uint64_t size,
                                          const std::vector<std::string>& preferred,
                                          const std::string& prefer_host = "");
  // Places one range of `size` bytes on a segment of `owner` (mount order);
  // NO_AVAILABLE_HANDLE when none has room.
  Result<Placement> AllocateOwned(const UUID& owner, uint64_t size);
  // Places one range of `size` bytes on a segment named `name` (mount
  // order; copy tasks). SEGMENT_NOT_FOUND when no mounted segment has that
  // name; NO_AVAILABLE_HANDLE when none of them has room.
  Result<Placement> AllocateNamed(std::string_view name, uint64_t size);
  // Whether a mounted (not unmounting, not draining) segment is named `name`.
  bool HasNamed(std::string_view name) const;
  void Free(SegmentEntry* segment, uint64_t offset, uint64_t size);
  // Whether `count` replicas of `size` bytes could be placed if every
  // segment were empty: that many mounted segments (not unmounting, not
  // draining) are each
  // at least that large. When false no eviction can make the put succeed.
  bool CouldEverPlace(uint32_t count, uint64_t size) const;

  // --- snapshots ---
  // Mounted segments in mount order, with their allocators' free extents.
  std::vector<SegmentState> Export() const;
  // Mounts a segment with a given allocator (from a snapshot). The codes of
  // Mount, except that any mounted id is SEGMENT_ALREADY_EXISTS.
  ErrorCode Restore(const UUID& owner, const Segment& segment, OffsetAllocator allocator);
  // The mounted (not unmounting) segment with this id, or null.
  SegmentEntry* Find(const UUID& segment_id) const;
  // True when [offset, offset + size) of the segment is allocated space.
  bool Holds(SegmentEntry* segment, uint64_t offset, uint64_t size) const EXCLUDES(segment->mu);
  // One Holds question, for HoldsAll.
  struct HoldQuery {
    SegmentEntry* segment;
    uint64_t offset;
    uint64_t size;
  };
  // True when Holds(q.segment, q.offset, q.size) for every query. Takes each
  // segment's lock once per run of consecutive queries on it (a caller with
  // many queries sorts them by segment first).
  bool HoldsAll(const std::vector<HoldQuery>& queries) const;
  // Forgets every segment. Precondition: no replica points at any.
  void Clear();

  uint64_t allocated_bytes() const { return allocated_.load(std::memory_order_relaxed); }
  uint64_t capacity_bytes() const { return capacity_.load(std::memory_order_relaxed); }
  size_t segment_count() const;

 private:
  std::vector<SegmentEntry*> OrderCandidates(const std::vector<std::string>& preferred,
                                             const std::string& prefer_host)
      REQUIRES_SHARED(mu_);
  bool TryAllocate(SegmentEntry* seg, uint64_t size, uint64_t* offset) EXCLUDES(seg->mu);

  mutable SharedMutex mu_;
  std::unordered_map<UUID, std::unique_ptr<SegmentEntry>, UUIDHash> segments_ GUARDED_BY(mu_);
  std::vector<SegmentEntry*> order_ GUARDED_BY(mu_);  // mount order, for round-robin
  std::atomic<uint64_t> next_start_{0};
  std::atomic<uint64_t> allocated_{0};
  std::atomic<uint64_t> capacity_{0};
};

}  // namespace shelfmark
