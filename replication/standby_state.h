// StandbyState: a hot standby's copy of the leader's directory, as plain
// values (directory/directory_state.h), kept current by the replication
// stream's batches, and loaded into a Directory when the standby becomes
// the leader.
//
// The copy holds what a snapshot holds: objects (with their replicas,
// pins, groups) and the segment table, and also unfinished puts with their
// PROCESSING replicas: a loaded copy holds them as started at the load
// (UnfinishedPuts::kHold), since their clients may be writing into their
// ranges, and so are upserts' pending versions (ObjectState::pending); and
// the held ranges (directory/held_ranges.h: promotions and copy/move tasks
// in flight, retired ranges), by id, which a loaded copy holds as retired ranges until the
// time the leader would have given them back, counted from the load.
// Allocator state is not shipped: on load every segment's free space is
// derived from the objects and the held ranges (a range is in use exactly
// when a stored replica, a pending version's or a held range covers it). Offload tasks queued
// but not handed out are not shipped: eviction queues them again where
// needed.
//
// Thread safety: not thread-safe; the standby's receiver thread owns it
// (LoadInto runs after that thread stopped).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "directory/key_map.h"

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
  size_t held_count() const { return held_.size(); }
  const SegmentsState& segments() const { return segments_; }

  // The state as a restore takes it: segments with free extents derived
  // from the objects, replicas on segments or disks the table does not
  // hold dropped (a batch may carry an object before the table that holds
  // its segment), objects left without replicas dropped.
  SegmentsState SegmentsForRestore() const;
  ShardState ShardForRestore(uint32_t index) const;
  // The held ranges on segments the table holds.
  std::vector<HeldRangeState> HeldForRestore() const;
  // Restores into `dir`, which must serve nobody yet and hold nothing:
  // RestoreSegments, RestoreShard (UnfinishedPuts::kHold) for every shard,
  // RestoreHeldRanges, RestoreTasks({}).
  // DATA_CORRUPTED from the restore (the directory is then Clear()ed).
  ErrorCode LoadInto(Directory& dir) const;

 private:
  using ObjectMap = KeyMap<ObjectState>;
  // Files every object of a batch under its name, the lookups pipelined
  // (directory/batch_pipeline.h): a batch's keys lie scattered over maps
  // far larger than the caches.
  void ApplyObjects(std::vector<ObjectState>& objects);
  // Appends tenant "\0" key to *out.
  static void AppendName(std::string_view tenant, std::string_view key, std::string* out);

  uint64_t seq_ = 0;
  size_t objects_ = 0;
  SegmentsState segments_;
  // Per shard: tenant "\0" key -> state, open addressing (key_map.h: one
  // allocation per key, holding its name; no hash node, no string of its own).
  std::array<ObjectMap, kShardCount> shards_;
  std::unordered_map<uint64_t, HeldRangeState> held_;
};

}  // namespace shelfmark
