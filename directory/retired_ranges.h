// RetiredRanges: MEMORY ranges of versions an upsert replaced
// (PutConfig::replace, docs/directory.md "Upsert"), held until the replaced
// version's lease deadline, then given back by the background pass.
//
// A reader that looked the key up before the swap holds a lease and may
// still be reading the old bytes with one-sided reads the master never sees;
// so the range belongs to this list, not to any object, until then: no put
// can be placed over bytes someone still reads.
//
// Thread safety: all methods are thread-safe (one mutex, a leaf lock:
// `release` callbacks run under it and may only take segment locks).
// Lifetime: entries point at SegmentEntry objects; the directory drops the
// entries of a segment (DropSegments) before it erases the segment.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace shelfmark {

struct SegmentEntry;

struct RetiredRange {
  SegmentEntry* segment = nullptr;
  uint64_t offset = 0;
  uint64_t size = 0;        // the object's size (the allocator rounds it up)
  uint64_t bytes = 0;       // what the range takes in its segment (aligned)
  int64_t until_ms = 0;     // given back once the clock passes this
  uint64_t held_id = 0;     // its id in the directory's HeldRanges
};

class RetiredRanges {
 public:
  void Add(const RetiredRange& range);
  // Removes the ranges whose deadline passed (until_ms <= now_ms), calling
  // `release` on each under the list's lock (so a concurrent DropSegments
  // waits for it).
  void TakeExpired(int64_t now_ms, const std::function<void(const RetiredRange&)>& release);
  // Forgets the ranges in one of `segments` (being unmounted: they go with
  // the segment). Returns how many.
  size_t DropSegments(const std::vector<const SegmentEntry*>& segments);
  // Every range, for a snapshot (which records them as free space).
  std::vector<RetiredRange> Export() const;
  void Clear();
  // Bytes held now (sum of `bytes`).
  uint64_t bytes() const;

 private:
  mutable Mutex mu_;
  std::vector<RetiredRange> ranges_ GUARDED_BY(mu_);
  uint64_t bytes_ GUARDED_BY(mu_) = 0;
};

}  // namespace shelfmark
