// The change feed (directory/change_feed.h): recording changed keys and
// taking them with their current state.
#include <algorithm>

#include "common/object_key.h"
#include "directory/directory_impl.h"

namespace shelfmark {

void DirectoryImpl::Touch(MetadataShard& shard, std::string_view tenant, std::string_view key) {
  if (!feed_.enabled()) return;
  shard.changed.emplace_back(EffectiveTenant(tenant), key);
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
  ShardState changed;
  changed.index = static_cast<uint32_t>(index);
  WriterLock lock(&shard.mu);  // exclusive: the list is taken, not copied
  std::vector<std::pair<std::string, std::string>> keys;
  keys.swap(shard.changed);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (auto& [tenant, key] : keys) {
    const ObjectMetadata* meta = Find(shard, tenant, key);
    // An unfinished put ships too (its PROCESSING replicas): a loaded copy
    // holds its ranges, which its client may be writing into already.
    if (meta == nullptr || meta->replicas.empty()) {
      out->removed.emplace_back(std::move(tenant), std::move(key));
    } else {
      ExportObject(tenant, key, *meta, now, &changed.objects.emplace_back());
    }
  }
  if (!changed.objects.empty()) out->shards.push_back(std::move(changed));
}

ChangeSet DirectoryImpl::TakeChanges() {
  ChangeSet out;
  out.seq = feed_.seq();  // first: see change_feed.h
  if (feed_.TakeSegments()) {
    out.has_segments = true;
    out.segments = ExportSegmentTable();
  }
  for (size_t i = 0; i < kShardCount; ++i) {
    if (feed_.TakeShard(i)) TakeShardChanges(i, &out);
  }
  return out;
}

}  // namespace shelfmark
