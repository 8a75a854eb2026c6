// TaskTable: the master's copy and move tasks (common/task_types.h;
// docs/directory.md "Copy and move tasks"), each with the segment ranges
// reserved for its executor's writes while it is PROCESSING.
//
// A reserved range belongs to this table, not to the object, until TaskEnd
// attaches it as a COMPLETE MEMORY replica or gives it back: removing the
// object meanwhile never frees memory the executor may be writing (as
// PromotionTable does for promotions).
//
// Bounded: at most `max_unfinished` tasks PENDING or PROCESSING (Add answers
// TASK_PENDING_LIMIT_EXCEEDED beyond), and the newest `max_finished`
// finished ones kept for QueryTask (older ones dropped, oldest first).
// In memory only: not in snapshots, not replicated (a master that takes
// over knows no task; its reserved ranges are free there).
//
// Thread safety: all methods are thread-safe (one mutex, a leaf lock:
// `release` callbacks run under it and may only take segment locks).
// Lifetime: reservations point at SegmentEntry objects; the directory drops
// those of a segment (DropSegments) before it erases the segment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "common/result.h"
#include "common/task_types.h"
#include "common/thread_annotations.h"
#include "common/uuid.h"

namespace shelfmark {

struct SegmentEntry;

struct TaskReservation {
  SegmentEntry* segment = nullptr;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t held_id = 0;  // its id in the directory's HeldRanges
};

// A task with what the directory keeps beside its public view.
struct TaskEntry {
  TaskInfo info;
  std::string tenant;
  int64_t deadline_ms = 0;  // directory clock: when PENDING/PROCESSING gives up
  // PROCESSING: a COMPLETE replica the object had at TaskStart (a move's
  // source replica); TaskEnd attaches nothing unless it is still there (the
  // object was not removed or replaced meanwhile).
  uint64_t source_replica_id = 0;
  std::vector<TaskReservation> reserved;  // PROCESSING: one per target
  bool lost_target = false;  // a reserved range's segment went away
};

class TaskTable {
 public:
  TaskTable(size_t max_unfinished, size_t max_finished)
      : max_unfinished_(max_unfinished), max_finished_(max_finished) {}

  // Records a new PENDING task; TASK_PENDING_LIMIT_EXCEEDED when the table
  // holds max_unfinished unfinished tasks.
  ErrorCode Add(TaskEntry entry);
  // The tenant's task; TASK_NOT_FOUND for an unknown id or another tenant's.
  Result<TaskInfo> Query(std::string_view tenant, const UUID& id) const;
  // A copy of the tenant's PENDING task assigned to `client`:
  // TASK_NOT_FOUND (unknown, another tenant's or client's) or
  // INVALID_PARAMS (not PENDING).
  Result<TaskEntry> Pending(std::string_view tenant, const UUID& id, const UUID& client) const;
  // PENDING -> PROCESSING with the ranges reserved for it. False (nothing
  // recorded: the caller frees the ranges) when the task is no longer
  // PENDING.
  bool Start(const UUID& id, int64_t now_epoch_ms, int64_t deadline_ms,
             uint64_t source_replica_id, std::vector<TaskReservation> reserved);
  // Takes a PROCESSING task of the tenant's `client` out of PROCESSING (its
  // reservations are the caller's now); the entry stays until Finish.
  // TASK_NOT_FOUND, or INVALID_PARAMS when it is not PROCESSING.
  Result<TaskEntry> TakeProcessing(std::string_view tenant, const UUID& id, const UUID& client);
  // Ends a task: SUCCESS when `error` is OK, else FAILED with it.
  void Finish(const UUID& id, ErrorCode error, int64_t now_epoch_ms);
  // Fails the unfinished tasks past their deadline with TRANSFER_FAIL (their
  // executor never started or never reported), calling `release` on each
  // reservation under the table's lock.
  void ExpireUnfinished(int64_t now_ms, int64_t now_epoch_ms,
                        const std::function<void(const TaskReservation&)>& release);
  // Forgets the reservations in `segments` (being unmounted: the range goes
  // with the segment); their tasks then fail at TaskEnd. Returns how many.
  size_t DropSegments(const std::vector<const SegmentEntry*>& segments);
  // Every reserved range, for a snapshot (exported free: see the header).
  std::vector<TaskReservation> Export() const;
  void Clear();
  size_t unfinished() const;
  size_t size() const;

 private:
  // Drops the oldest finished tasks beyond max_finished_.
  void TrimFinished() REQUIRES(mu_);
  void MarkFinished(TaskEntry& e, ErrorCode error, int64_t now_epoch_ms) REQUIRES(mu_);

  const size_t max_unfinished_;
  const size_t max_finished_;
  mutable Mutex mu_;
  std::unordered_map<UUID, TaskEntry, UUIDHash> tasks_ GUARDED_BY(mu_);
  std::deque<UUID> finished_ GUARDED_BY(mu_);  // finishing order, oldest first
  size_t unfinished_ GUARDED_BY(mu_) = 0;
};

}  // namespace shelfmark
