// DirectoryState: the directory's durable state as plain values, for
// snapshots (snapshot/ encodes these; directory/ produces and consumes them).
// Times that are relative to the master's steady clock are stored as
// "remaining milliseconds at export time"; restore adds them to its own now.
//
// Contracts:
//  - ExportShard/ExportSegments/ExportTasks read a consistent state only while
//    the caller keeps every mutation out (Directory::RunPaused in the parent,
//    or the forked child, where no other thread exists);
//  - Restore* run on a Directory that serves nobody yet (before the RPC port
//    opens); RestoreShard calls for distinct shard indexes may run in
//    parallel; segments must be restored before the shards that point at
//    them; Clear() drops everything restored so far (a bad candidate).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/uuid.h"
#include "common/types.h"

namespace shelfmark {

struct ReplicaState {
  uint64_t id = 0;
  ReplicaStatus status = ReplicaStatus::COMPLETE;
  ReplicaType type = ReplicaType::MEMORY;
  UUID owner;           // MEMORY: segment id; LOCAL_DISK: the disk node's client id
  uint64_t offset = 0;  // MEMORY: offset inside the segment
};

// The fields of one version of an object: the live one (ObjectState) or an
// upsert's pending version (PutConfig::replace, docs/directory.md
// "Upsert": what its PutStart gave, with its PROCESSING MEMORY replicas).
struct VersionState {
  UUID writer;
  uint64_t size = 0;
  bool has_checksum = false;
  uint64_t checksum = 0;
  DataType data_type = DataType::UNKNOWN;
  bool hard_pin = false;
  int64_t soft_pin_remaining_ms = 0;  // 0: not soft-pinned (or expired)
  int64_t put_age_ms = 0;             // how long ago the put started
  std::string group;                  // "" : no group
  std::vector<ReplicaState> replicas;
};
using PendingVersionState = VersionState;

struct ObjectState : VersionState {
  std::string tenant;  // "" is never stored: the default tenant is "default"
  std::string key;
  int64_t lease_remaining_ms = 0;  // 0: expired
  // The key's upsert in flight, if any. A restore with UnfinishedPuts::kHold
  // keeps it as a pending version started at the load (its writer's PutEnd
  // swaps it in); with kDrop (a snapshot, whose export records its ranges
  // as free) it keeps a placeholder without replicas, started at the
  // restore, which refuses the writer's PutEnd (ILLEGAL_CLIENT: the put is
  // gone) instead of finding the old version and answering OK, until the
  // discard or release timeout drops it.
  std::optional<PendingVersionState> pending;
};

struct GroupState {
  std::string tenant;
  std::string group;
  std::vector<std::string> members;  // sorted
};

// One of the 1024 shards.
struct ShardState {
  uint32_t index = 0;
  std::vector<ObjectState> objects;
  std::vector<GroupState> groups;
};

struct SegmentState {
  UUID owner;  // client id of the node
  Segment segment;
  uint64_t alignment = 64;
  std::vector<std::pair<uint64_t, uint64_t>> free_extents;  // OffsetAllocator::FreeExtents
  // Draining (Directory::DrainSegment), for listings. Snapshots and HA
  // replication do not carry it: draining is a grace period the owner ends
  // with an unmount, so a restored or promoted master serves the segment as
  // mounted until that unmount (or the owner's expiry) arrives; at worst a
  // few more objects land there and go with it.
  bool draining = false;
};

struct DiskNodeState {
  UUID client;
  std::string endpoint;
  bool enable_offloading = false;
};

// Segments, allocator state and local-disk registrations.
struct SegmentsState {
  uint64_t view_version = 0;
  uint64_t next_replica_id = 1;
  std::vector<SegmentState> segments;
  std::vector<DiskNodeState> disks;
};

struct PendingOffloadState {
  UUID client;
  std::vector<OffloadTask> tasks;  // queued, not yet handed out (in-flight ones are not kept)
};

// Background work that must survive a restart.
struct TasksState {
  std::vector<PendingOffloadState> offloads;
};

// What RestoreShard does with an object that has a replica not COMPLETE
// (an unfinished put): a snapshot restore drops it and frees its ranges
// (every master restarted: its writer's put is refused and retried); a
// promoted hot standby holds it, ranges included, as an unfinished put
// started at the load (its writer may be writing into those ranges, and its
// PutEnd may come to the new leader: docs/ha.md).
enum class UnfinishedPuts : uint8_t { kDrop, kHold };

// A MEMORY range the leader holds outside any object (directory/held_ranges.h):
// a hot standby keeps it, and a promoted standby holds it as a retired
// range until `remaining_ms` after its load.
struct HeldRangeState {
  uint64_t id = 0;  // a replica id: unique
  UUID segment;     // segment id
  uint64_t offset = 0;
  uint64_t size = 0;  // the object's size (the allocator rounds it up)
  int64_t remaining_ms = 0;
};

// What changed since the last TakeChanges (Directory::TakeChanges): the
// current state of every changed object that exists, all in one ShardState
// whatever shards they belong to (its index is the first one's; a standby
// files each object by its own key's hash; `groups` left empty:
// memberships follow from the objects), the
// (tenant, key) of every changed object that no longer exists, and the
// segment table when it changed (free extents as they were; a standby
// derives its allocators from the objects instead), and the held ranges
// added and released (a standby applies `released` first, then `held`,
// which overwrites by id).
struct ChangeSet {
  uint64_t seq = 0;  // every change counted up to here is in this set
  std::vector<ShardState> shards;
  std::vector<std::pair<std::string, std::string>> removed;
  bool has_segments = false;
  SegmentsState segments;
  std::vector<HeldRangeState> held;
  std::vector<uint64_t> released;
  bool empty() const {
    return shards.empty() && removed.empty() && !has_segments && held.empty() && released.empty();
  }
};

}  // namespace shelfmark
