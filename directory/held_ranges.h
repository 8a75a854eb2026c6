// HeldRanges: MEMORY ranges the leader holds outside any object (a
// promotion's or a copy/move task's reserved range, a retired range), each
// under an id (a replica id: unique), with what changed since the change
// feed last took them (change_feed.h). (An upsert's pending version needs
// none: it ships with its key, ObjectState::pending.)
//
// A hot standby keeps the same set by id (replication/standby_state.h) and a
// promoted standby loads each as a retired range held until the leader
// would have given it back: whoever may still write into it or read from it
// (a writer mid-put, a node copying, a reader of an old lease) never finds
// a new object placed there.
//
// The owners of these ranges (RetiredRanges, PromotionTable, TaskTable)
// still decide when a range is given back; this
// list only mirrors which are held, for the feed. A later owner (a client's
// reservation, a pool of ranges kept for puts) registers here the same way.
//
// Deltas: Add/Release with `track` (the feed is on) also record the id as
// added or released until TakeAdded/TakeReleased takes it. A release drops
// a pending add of the same id and an add drops a pending release, so what
// is taken is the net change: a standby applies the releases, then the adds
// (an add overwrites the id's entry).
//
// Thread safety: all methods are thread-safe (one mutex, a leaf lock).
// Lifetime: `segment` is only compared, never dereferenced.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "common/uuid.h"
#include "directory/directory_state.h"

namespace shelfmark {

struct SegmentEntry;

struct HeldRange {
  uint64_t id = 0;
  const SegmentEntry* segment = nullptr;
  UUID segment_id;
  uint64_t offset = 0;
  uint64_t size = 0;     // the object's size (the allocator rounds it up)
  int64_t until_ms = 0;  // when the leader gives it back at the latest
  // A loaded copy holds it at least this long from the load (a promotion's
  // or a task's timeout: the new leader knows neither, and their node may
  // write until its own timeout).
  int64_t min_remaining_ms = 0;
};

class HeldRanges {
 public:
  // Holds `range` (replacing an entry of the same id).
  void Add(const HeldRange& range, bool track);
  // Gives back the range of `id`; false when none is held.
  bool Release(uint64_t id, bool track);
  // Gives back the ranges in one of `segments` (unmounted). Returns how many.
  size_t DropSegments(const std::vector<const SegmentEntry*>& segments, bool track);
  // The ids released since the last call.
  std::vector<uint64_t> TakeReleased();
  // The ranges added since the last call (and still held), their remaining
  // time counted from `now_ms`.
  std::vector<HeldRangeState> TakeAdded(int64_t now_ms);
  // Every range held, for a standby's full copy.
  std::vector<HeldRangeState> Export(int64_t now_ms) const;
  void Clear();
  size_t size() const;

 private:
  static HeldRangeState StateOf(const HeldRange& r, int64_t now_ms);
  // Records the release of `id` (caller holds mu_).
  void NoteReleased(uint64_t id, bool track) REQUIRES(mu_);

  mutable Mutex mu_;
  std::unordered_map<uint64_t, HeldRange> held_ GUARDED_BY(mu_);
  std::unordered_set<uint64_t> added_ GUARDED_BY(mu_);
  std::unordered_set<uint64_t> released_ GUARDED_BY(mu_);
};

}  // namespace shelfmark
