#include "replication/standby_state.h"

#include <algorithm>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "directory/batch_pipeline.h"

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

void StandbyState::AppendName(std::string_view tenant, std::string_view key, std::string* out) {
  out->append(tenant).push_back('\0');
  out->append(key);
}

void StandbyState::Reset() {
  for (auto& shard : shards_) shard = ObjectMap();
  objects_ = 0;
  held_.clear();
  segments_ = SegmentsState{};
  seq_ = 0;
}

void StandbyState::Apply(ChangeSet&& changes) {
  if (changes.has_segments) segments_ = std::move(changes.segments);
  for (ShardState& shard : changes.shards) ApplyObjects(shard.objects);
  std::string name;
  for (const auto& [tenant, key] : changes.removed) {
    name.clear();
    AppendName(tenant, key, &name);
    objects_ -= shards_[ShardIndex(tenant, key)].Erase(name) ? 1 : 0;
  }
  for (uint64_t id : changes.released) held_.erase(id);
  for (const HeldRangeState& h : changes.held) held_[h.id] = h;
  seq_ = std::max(seq_, changes.seq);
}

void StandbyState::ApplyObjects(std::vector<ObjectState>& objects) {
  const size_t n = objects.size();
  // Every name in one buffer (no allocation per key), then each key's map
  // and hash, then the lookups.
  std::string names;
  std::vector<size_t> ends(n);
  std::vector<ObjectMap*> maps(n);
  std::vector<uint64_t> hashes(n);
  for (size_t i = 0; i < n; ++i) {
    AppendName(objects[i].tenant, objects[i].key, &names);
    ends[i] = names.size();
  }
  auto name = [&](size_t i) {
    const size_t begin = i == 0 ? 0 : ends[i - 1];
    return std::string_view(names).substr(begin, ends[i] - begin);
  };
  for (size_t i = 0; i < n; ++i) {
    maps[i] = &shards_[ShardIndex(objects[i].tenant, objects[i].key)];
    hashes[i] = ObjectMap::Hash(name(i));
  }
  RunPipelined(
      n, [&](size_t i) { maps[i]->Prefetch(hashes[i]); },
      [&](size_t i) { maps[i]->PrefetchEntry(hashes[i]); },
      [&](size_t i) {
        // A known key's entry is reused (no allocation for it).
        auto [state, inserted] = maps[i]->TryEmplace(name(i), hashes[i]);
        *state = std::move(objects[i]);
        if (inserted) ++objects_;
      });
}

ShardState StandbyState::ShardForRestore(uint32_t index) const {
  const Owners owners = OwnersOf(segments_);
  ShardState out;
  out.index = index;
  shards_[index].ForEach([&](std::string_view, const ObjectState& o) {
    ObjectState copy = o;
    auto unknown = [&](const ReplicaState& r) { return !Known(owners, r); };
    std::erase_if(copy.replicas, unknown);
    // (A pending version left without replicas loads as a placeholder.)
    if (copy.pending) std::erase_if(copy.pending->replicas, unknown);
    if (!copy.replicas.empty()) out.objects.push_back(std::move(copy));
  });
  return out;
}

std::vector<HeldRangeState> StandbyState::HeldForRestore() const {
  const Owners owners = OwnersOf(segments_);
  std::vector<HeldRangeState> out;
  for (const auto& [id, h] : held_) {
    if (owners.segments.count(h.segment) > 0) out.push_back(h);
  }
  return out;
}

SegmentsState StandbyState::SegmentsForRestore() const {
  UsedRanges used;
  std::unordered_map<UUID, uint64_t, UUIDHash> alignment;
  for (const SegmentState& s : segments_.segments) alignment[s.segment.id] = s.alignment;
  auto use = [&](const std::vector<ReplicaState>& replicas, uint64_t size) {
    for (const ReplicaState& r : replicas) {
      auto a = alignment.find(r.owner);
      if (r.type != ReplicaType::MEMORY || a == alignment.end()) continue;
      used[r.owner].emplace_back(r.offset, r.offset + AlignUp(size, a->second));
    }
  };
  for (const auto& shard : shards_) {
    shard.ForEach([&](std::string_view, const ObjectState& o) {
      use(o.replicas, o.size);
      if (o.pending) use(o.pending->replicas, o.pending->size);
    });
  }
  for (const auto& [id, h] : held_) {
    auto a = alignment.find(h.segment);
    if (a != alignment.end())
      used[h.segment].emplace_back(h.offset, h.offset + AlignUp(h.size, a->second));
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
  if (rc == ErrorCode::OK) rc = dir.RestoreHeldRanges(HeldForRestore());
  if (rc == ErrorCode::OK) rc = dir.RestoreTasks(TasksState{});
  if (rc != ErrorCode::OK) dir.Clear();
  return rc;
}

}  // namespace shelfmark
