// Upsert (PutConfig::replace; docs/directory.md "Upsert"): a put of a key
// that exists allocates a pending version kept apart from the live object
// (TenantState::replacing) while the live one stays readable; PutEnd swaps
// them under the shard lock, so a lookup sees the old version or the new
// one, never a mix. The old version's MEMORY ranges go to RetiredRanges
// until its lease deadline (readers that looked it up may still be reading
// them); its LOCAL_DISK replicas are dropped from the directory.
#include <algorithm>

#include "directory/directory_impl.h"

namespace shelfmark {

Result<std::vector<ReplicaDescriptor>> DirectoryImpl::StartReplacement(
    TenantState& state, std::string_view key, const UUID& client, uint64_t size,
    const PutConfig& config, ObjectMetadata& live, int64_t now) {
  if (ObjectMetadata* pending = state.replacing.Find(key)) {
    // One replacement at a time; a stale one (its writer vanished) is
    // reclaimed like a stale unfinished put.
    if (pending->put_start_ms() + options_.put_start_discard_timeout_ms >= now) {
      return ErrorCode::OBJECT_ALREADY_EXISTS;
    }
    DropPending(state, key);
  }
  auto placed = PlaceReplicas(size, config);
  if (!placed.ok()) return placed.error();
  ObjectMetadata& pending = *state.replacing.TryEmplace(key).first;
  live.has_pending = true;
  // (The caller touched the key: the pending version ships with it.)
  return InitVersion(pending, client, size, config, now, *placed);
}

ErrorCode DirectoryImpl::FinishReplacement(TenantState& state, std::string_view tenant,
                                           std::string_view key, const UUID& client,
                                           ObjectMetadata& live, GroupDrops* drops,
                                           std::string* joined, std::optional<uint64_t> checksum) {
  ObjectMetadata* pending = state.replacing.Find(key);
  if (pending == nullptr) return ErrorCode::OBJECT_NOT_FOUND;  // not reached: has_pending
  // (A restored placeholder's writer is nil: its writer's PutEnd is refused.)
  if (pending->writer != client) return ErrorCode::ILLEGAL_CLIENT;
  if (ErrorCode rc = AdoptEndChecksum(*pending, checksum); rc != ErrorCode::OK) return rc;
  for (Replica& r : pending->replicas) r.status = static_cast<uint64_t>(ReplicaStatus::COMPLETE);
  SwapVersions(live, *pending);  // `pending` now holds the old version
  live.has_pending = false;
  const ObjectMetadata& old = *pending;
  RetireVersion(old, Now());
  const bool same_group = old.group && live.group && *old.group == *live.group;
  if (old.group && !same_group) drops->emplace_back(*old.group, std::string(key));
  if (live.group && !same_group) *joined = *live.group;
  state.replacing.Erase(key);
  upserts_.fetch_add(1, std::memory_order_relaxed);
  if (!options_.offload_on_evict) QueueOffloadFor(tenant, key, live);
  return ErrorCode::OK;
}

ErrorCode DirectoryImpl::RevokeReplacement(TenantState& state, std::string_view key,
                                           const UUID& client) {
  const ObjectMetadata* pending = state.replacing.Find(key);
  if (pending != nullptr && pending->writer != client) return ErrorCode::ILLEGAL_CLIENT;
  DropPending(state, key);
  return ErrorCode::OK;
}

void DirectoryImpl::DropPending(TenantState& state, std::string_view key) {
  if (ObjectMetadata* live = state.objects.Find(key)) live->has_pending = false;
  ObjectMetadata* pending = state.replacing.Find(key);
  if (pending == nullptr) return;
  for (const Replica& r : pending->replicas) FreeReplica(*pending, r);
  state.replacing.Erase(key);
}

void DirectoryImpl::RetireVersion(const ObjectMetadata& old, int64_t now) {
  for (const Replica& r : old.replicas) {
    if (r.is_memory()) RetireReplica(old, r, now);
    // LOCAL_DISK: the next offload overwrites the node's copy.
  }
}

void DirectoryImpl::RetireReplica(const ObjectMetadata& meta, const Replica& r, int64_t now) {
  int64_t until = meta.lease_deadline_ms.load();
  // A node copying the old bytes to its SSD (offload pin) reads them too.
  if (r.refcnt > 0) until = std::max(until, now + kOffloadTimeoutMs);
  if (until <= now) {
    FreeReplica(meta, r);  // nobody may be reading: free at once
    return;
  }
  auto* segment = const_cast<SegmentEntry*>(r.segment());
  HoldRange(r.id, segment, r.offset, meta.size, until);
  retired_.Add({segment, r.offset, meta.size, segment->AlignedSize(meta.size), until, r.id});
}

void DirectoryImpl::PurgePendingReplicas(MetadataShard& shard,
                                         const std::function<bool(const Replica&)>& owned) {
  WriterLock lock(&shard.mu);
  shard.tenants.ForEach([&](std::string_view, TenantState& state) {
    std::vector<std::string> emptied;
    state.replacing.ForEach([&](std::string_view key, ObjectMetadata& pending) {
      const size_t purged = pending.replicas.erase_if([&](const Replica& r) {
        if (!owned(r)) return false;
        FreeReplica(pending, r);
        return true;
      });
      // (A restored placeholder has no replica: it stays.)
      if (purged > 0 && pending.replicas.empty()) emptied.emplace_back(key);
    });
    for (const std::string& key : emptied) DropPending(state, key);
  });
}

// Whether a pending version of the shard started before `cutoff`.
static bool HasStalePending(const TenantMap& tenants, int64_t cutoff) {
  bool stale = false;
  tenants.ForEach([&](std::string_view, const TenantState& state) {
    state.replacing.ForEach([&](std::string_view, const ObjectMetadata& pending) {
      stale = stale || pending.put_start_ms() < cutoff;
    });
  });
  return stale;
}

void DirectoryImpl::ReclaimStaleReplacements(MetadataShard& shard, int64_t cutoff) {
  {
    ReaderLock peek(&shard.mu);  // the common case: nothing to do
    if (!HasStalePending(shard.tenants, cutoff)) return;
  }
  WriterLock lock(&shard.mu);
  std::vector<std::pair<std::string, std::string>> stale;  // (tenant, key)
  shard.tenants.ForEach([&](std::string_view tenant, const TenantState& state) {
    state.replacing.ForEach([&](std::string_view key, const ObjectMetadata& pending) {
      if (pending.put_start_ms() < cutoff) stale.emplace_back(tenant, key);
    });
  });
  // Outside the lambdas: the analysis sees the lock held here.
  for (const auto& [tenant, key] : stale) {
    Touch(shard, tenant, key);  // before the frees (change_feed.h, "Frees")
    DropPending(*shard.tenants.Find(tenant), key);
  }
}

void DirectoryImpl::ReleaseRetired() {
  retired_.TakeExpired(Now(), [this](const RetiredRange& r) {
    ReleaseHeld(r.held_id);
    FreeRange(r.segment, r.offset, r.size);
  });
}

}  // namespace shelfmark
