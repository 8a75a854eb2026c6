// StandbyState: a hot standby's copy of the leader's directory, as plain
// values (directory/directory_state.h), kept current by the replication
// stream's batches, and loaded into a Directory when the standby becomes
// the leader.
//
// The copy holds what a snapshot holds: objects (with their replicas,
// pins, groups) and the segment table, and also unfinished puts with their
// PROCESSING replicas: a loaded copy holds them as started at the load
// (UnfinishedPuts::kHold), since their clients may be writing into their
// ranges. Allocator state is not shipped: on load every segment's free
// space is derived from the objects (a range is in use exactly when a
// stored replica covers it), which is what a snapshot's export would give
// minus the ranges no object holds (upsert versions still pending, retired
// ranges, promotions in flight: the same ranges a snapshot exports as
// free). Offload tasks queued but not handed out are not shipped: eviction
// queues them again where needed.
//
// Thread safety: not thread-safe; the standby's receiver thread owns it
// (LoadInto runs after that thread stopped).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "common/error_code.h"
#include "directory/directory.h"
#include "directory/directory_state.h"
#include "directory/shard.h"

namespace shelfmark {

class StandbyState {
 public:
  // Drops everything (a full copy follows).
  void Reset();
  // Applies one batch: the segment table when it carries one, each object
  // state (replacing the key's), each removal. Objects are filed under the
  // shard their (tenant, key) hashes to, whatever shard a batch names.
  void Apply(ChangeSet&& changes);

  uint64_t seq() const { return seq_; }
  size_t object_count() const { return objects_; }
  const SegmentsState& segments() const { return segments_; }

  // The state as a restore takes it: segments with free extents derived
  // from the objects, replicas on segments or disks the table does not
  // hold dropped (a batch may carry an object before the table that holds
  // its segment), objects left without replicas dropped.
  SegmentsState SegmentsForRestore() const;
  ShardState ShardForRestore(uint32_t index) const;
  // Restores into `dir`, which must serve nobody yet and hold nothing:
  // RestoreSegments, RestoreShard (UnfinishedPuts::kHold) for every shard,
  // RestoreTasks({}).
  // DATA_CORRUPTED from the restore (the directory is then Clear()ed).
  ErrorCode LoadInto(Directory& dir) const;

 private:
  static std::string Name(const std::string& tenant, const std::string& key);

  uint64_t seq_ = 0;
  size_t objects_ = 0;
  SegmentsState segments_;
  // Per shard: tenant "\0" key -> state.
  std::array<std::unordered_map<std::string, ObjectState>, kShardCount> shards_;
};

}  // namespace shelfmark
