// The change feed (directory/change_feed.h): recording changed keys and
// taking them with their current state.
#include <algorithm>

#include "common/object_key.h"
#include "directory/batch_pipeline.h"
#include "directory/directory_impl.h"

namespace shelfmark {

void DirectoryImpl::Touch(MetadataShard& shard, std::string_view tenant, std::string_view key) {
  if (!feed_.enabled()) return;
  shard.changed.Add(EffectiveTenant(tenant), key);
  feed_.MarkShard(static_cast<size_t>(&shard - shards_.data()));
}

SegmentsState DirectoryImpl::ExportSegmentTable() const {
  SegmentsState out;
  out.view_version = view_version_.load();
  out.next_replica_id = next_replica_id_.load();
  out.segments = segments_.Export();
  out.disks = clients_.ExportDisks();
  return out;
}

void DirectoryImpl::TakeShardChanges(size_t index, ChangeSet* out) {
  MetadataShard& shard = shards_[index];
  const int64_t now = Now();
  // Every shard's objects go to one ShardState (named by the first shard
  // that has any): one payload per batch, and no merge of many afterwards.
  if (out->shards.empty()) out->shards.emplace_back().index = static_cast<uint32_t>(index);
  ShardState& changed = out->shards.front();
  WriterLock lock(&shard.mu);  // exclusive: the list is taken, not copied
  const std::vector<ChangedKeys::Pair> keys = shard.changed.Distinct();
  // Each key's tenant state (or none) and hash, read under the lock held.
  std::vector<const TenantState*> tenants(keys.size());
  std::vector<uint64_t> hashes(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    tenants[i] = shard.tenants.Find(keys[i].tenant);
    hashes[i] = KeyMap<ObjectMetadata>::Hash(keys[i].key);
  }
  // A take after a batch of puts visits many keys of a big map: their
  // misses overlap as in a batch call (batch_pipeline.h).
  RunPipelined(
      keys.size(),
      [&](size_t i) {
        if (tenants[i] != nullptr) tenants[i]->objects.Prefetch(hashes[i]);
      },
      [&](size_t i) {
        if (tenants[i] != nullptr) tenants[i]->objects.PrefetchEntry(hashes[i]);
      },
      [&](size_t i) {
        const auto [tenant, key] = keys[i];
        const TenantState* t = tenants[i];
        const ObjectMetadata* meta = t == nullptr ? nullptr : t->objects.Find(key, hashes[i]);
        // An unfinished put ships too (its PROCESSING replicas), and so does
        // an upsert's pending version: a loaded copy holds their ranges,
        // which their clients may be writing into already.
        if (meta == nullptr || meta->replicas.empty()) {
          out->removed.emplace_back(tenant, key);
        } else {
          ExportObject(tenant, key, *meta, PendingOf(*t, key, *meta), now,
                       &changed.objects.emplace_back());
        }
      });
  shard.changed.Clear();
}

ChangeSet DirectoryImpl::TakeChanges() {
  ChangeSet out;
  out.seq = feed_.seq();  // first: see change_feed.h
  if (feed_.TakeSegments()) {
    out.has_segments = true;
    out.segments = ExportSegmentTable();
  }
  // Releases before the shards, adds after them (change_feed.h).
  const bool held = feed_.TakeHeld();
  if (held) out.released = held_.TakeReleased();
  for (size_t i = 0; i < kShardCount; ++i) {
    if (feed_.TakeShard(i)) TakeShardChanges(i, &out);
  }
  if (!out.shards.empty() && out.shards.front().objects.empty()) out.shards.clear();
  if (held) out.held = held_.TakeAdded(Now());
  return out;
}

}  // namespace shelfmark
