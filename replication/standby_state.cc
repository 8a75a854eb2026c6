#include "replication/standby_state.h"

#include <algorithm>
#include <unordered_set>
#include <utility>
#include <vector>

namespace shelfmark {
namespace {

// A restore's view of the segment and disk ids the table holds.
struct Owners {
  std::unordered_set<UUID, UUIDHash> segments;
  std::unordered_set<UUID, UUIDHash> disks;
};

Owners OwnersOf(const SegmentsState& s) {
  Owners out;
  for (const SegmentState& seg : s.segments) out.segments.insert(seg.segment.id);
  for (const DiskNodeState& d : s.disks) out.disks.insert(d.client);
  return out;
}

bool Known(const Owners& owners, const ReplicaState& r) {
  return r.type == ReplicaType::MEMORY ? owners.segments.count(r.owner) > 0
                                       : owners.disks.count(r.owner) > 0;
}

uint64_t AlignUp(uint64_t size, uint64_t alignment) {
  return (size + alignment - 1) & ~(alignment - 1);
}

// [offset, end) ranges in use per segment id.
using UsedRanges = std::unordered_map<UUID, std::vector<std::pair<uint64_t, uint64_t>>, UUIDHash>;

// The complement of `used` (sorted, merged on the fly) within the
// allocator's capacity: what OffsetAllocator::FromFreeExtents takes.
std::vector<std::pair<uint64_t, uint64_t>> FreeExtents(
    uint64_t size, uint64_t alignment, std::vector<std::pair<uint64_t, uint64_t>> used) {
  const uint64_t capacity = size & ~(alignment - 1);
  std::sort(used.begin(), used.end());
  std::vector<std::pair<uint64_t, uint64_t>> free;
  uint64_t at = 0;
  for (const auto& [begin, end] : used) {
    if (begin > at) free.emplace_back(at, std::min(begin, capacity) - at);
    at = std::max(at, end);
    if (at >= capacity) break;
  }
  if (at < capacity) free.emplace_back(at, capacity - at);
  return free;
}

}  // namespace

std::string StandbyState::Name(const std::string& tenant, const std::string& key) {
  std::string name;
  name.reserve(tenant.size() + 1 + key.size());
  name.append(tenant).push_back('\0');
  name.append(key);
  return name;
}

void StandbyState::Reset() {
  for (auto& shard : shards_) shard.clear();
  objects_ = 0;
  segments_ = SegmentsState{};
  seq_ = 0;
}

void StandbyState::Apply(ChangeSet&& changes) {
  if (changes.has_segments) segments_ = std::move(changes.segments);
  for (ShardState& shard : changes.shards) {
    for (ObjectState& o : shard.objects) {
      auto& map = shards_[ShardIndex(o.tenant, o.key)];
      // One lookup; a known key's node is reused (no allocation for it).
      auto [it, inserted] = map.try_emplace(Name(o.tenant, o.key));
      it->second = std::move(o);
      if (inserted) ++objects_;
    }
  }
  for (const auto& [tenant, key] : changes.removed) {
    objects_ -= shards_[ShardIndex(tenant, key)].erase(Name(tenant, key));
  }
  seq_ = std::max(seq_, changes.seq);
}

ShardState StandbyState::ShardForRestore(uint32_t index) const {
  const Owners owners = OwnersOf(segments_);
  ShardState out;
  out.index = index;
  for (const auto& [name, o] : shards_[index]) {
    ObjectState copy = o;
    std::erase_if(copy.replicas, [&](const ReplicaState& r) { return !Known(owners, r); });
    if (!copy.replicas.empty()) out.objects.push_back(std::move(copy));
  }
  return out;
}

SegmentsState StandbyState::SegmentsForRestore() const {
  UsedRanges used;
  std::unordered_map<UUID, uint64_t, UUIDHash> alignment;
  for (const SegmentState& s : segments_.segments) alignment[s.segment.id] = s.alignment;
  for (const auto& shard : shards_) {
    for (const auto& [name, o] : shard) {
      for (const ReplicaState& r : o.replicas) {
        auto a = alignment.find(r.owner);
        if (r.type != ReplicaType::MEMORY || a == alignment.end()) continue;
        used[r.owner].emplace_back(r.offset, r.offset + AlignUp(o.size, a->second));
      }
    }
  }
  SegmentsState out = segments_;
  for (SegmentState& s : out.segments) {
    s.free_extents = FreeExtents(s.segment.size, s.alignment, std::move(used[s.segment.id]));
  }
  return out;
}

ErrorCode StandbyState::LoadInto(Directory& dir) const {
  ErrorCode rc = dir.RestoreSegments(SegmentsForRestore());
  for (uint32_t i = 0; rc == ErrorCode::OK && i < kShardCount; ++i) {
    if (!shards_[i].empty()) rc = dir.RestoreShard(ShardForRestore(i), UnfinishedPuts::kHold);
  }
  if (rc == ErrorCode::OK) rc = dir.RestoreTasks(TasksState{});
  if (rc != ErrorCode::OK) dir.Clear();
  return rc;
}

}  // namespace shelfmark
