// The batch calls: each key answers as its one-key call (directory_objects.cc)
// would, run through ForBatch, which hashes each key once, reads the clock
// once and overlaps the keys' cache misses.
#include "common/object_key.h"
#include "directory/batch_pipeline.h"
#include "directory/directory_impl.h"

namespace shelfmark {

// The prefetches read the maps under the shard's reader lock; a line they
// request may be stale by the visit, which then only costs its miss.
void DirectoryImpl::PrefetchSlot(std::string_view tenant, const KeyRef& k) {
  ReaderLock lock(&k.shard->mu);
  if (const TenantState* t = k.shard->tenants.Find(tenant)) t->objects.Prefetch(k.hash);
}

void DirectoryImpl::PrefetchEntry(std::string_view tenant, const KeyRef& k) {
  ReaderLock lock(&k.shard->mu);
  if (const TenantState* t = k.shard->tenants.Find(tenant)) t->objects.PrefetchEntry(k.hash);
}

template <typename Visit>
void DirectoryImpl::ForBatch(std::string_view tenant, Keys keys, Visit&& visit) {
  std::vector<KeyRef> refs;
  refs.reserve(keys.size());
  for (std::string_view key : keys) refs.push_back(Locate(tenant, key));
  if (key_count_.load(std::memory_order_relaxed) < options_.batch_prefetch_min_keys) {
    for (size_t i = 0; i < refs.size(); ++i) visit(i, refs[i]);
    return;
  }
  // The shards' own lines (lock, map header) first: no map is read for it.
  for (const KeyRef& k : refs) __builtin_prefetch(&k.shard->mu);
  RunPipelined(
      refs.size(), [&](size_t i) { PrefetchSlot(tenant, refs[i]); },
      [&](size_t i) { PrefetchEntry(tenant, refs[i]); }, [&](size_t i) { visit(i, refs[i]); });
}

std::vector<Result<std::vector<ReplicaDescriptor>>> DirectoryImpl::BatchPutStart(
    const UUID& client, std::string_view tenant, Keys keys, const std::vector<uint64_t>& sizes,
    const PutConfig& config, const std::vector<uint64_t>& checksums) {
  std::vector<Result<std::vector<ReplicaDescriptor>>> out;
  out.reserve(keys.size());
  PutConfig item = config;  // with each key's own checksum, when given
  const int64_t now = Now();
  ForBatch(EffectiveTenant(tenant), keys, [&](size_t i, const KeyRef& k) {
    if (i >= sizes.size() || (!checksums.empty() && i >= checksums.size())) {
      out.emplace_back(ErrorCode::INVALID_PARAMS);
      return;
    }
    if (!checksums.empty()) item.checksum = checksums[i];
    out.push_back(PutStartAt(client, tenant, k, sizes[i], item, now));
  });
  return out;
}

std::vector<ErrorCode> DirectoryImpl::BatchPutEnd(const UUID& client, std::string_view tenant,
                                                  Keys keys, ReplicaType type) {
  std::vector<ErrorCode> out;
  out.reserve(keys.size());
  ForBatch(EffectiveTenant(tenant), keys,
           [&](size_t, const KeyRef& k) { out.push_back(PutEndAt(client, tenant, k, type)); });
  return out;
}

std::vector<ErrorCode> DirectoryImpl::BatchPutRevoke(const UUID& client, std::string_view tenant,
                                                     Keys keys, ReplicaType type) {
  std::vector<ErrorCode> out;
  out.reserve(keys.size());
  ForBatch(EffectiveTenant(tenant), keys,
           [&](size_t, const KeyRef& k) { out.push_back(PutRevokeAt(client, tenant, k, type)); });
  return out;
}

void DirectoryImpl::BatchGetReplicaList(std::string_view tenant, Keys keys,
                                        GetReplicaListResponse* scratch,
                                        const BatchReplicaListVisitor& visit) {
  const int64_t now = Now();
  ForBatch(EffectiveTenant(tenant), keys, [&](size_t i, const KeyRef& k) {
    visit(i, GetReplicaListAt(tenant, k, now, scratch), *scratch);
  });
}

std::vector<Result<bool>> DirectoryImpl::BatchExistKey(std::string_view tenant, Keys keys) {
  std::vector<Result<bool>> out;
  out.reserve(keys.size());
  const int64_t now = Now();
  ForBatch(EffectiveTenant(tenant), keys,
           [&](size_t, const KeyRef& k) { out.push_back(ExistKeyAt(tenant, k, now)); });
  return out;
}

std::vector<ErrorCode> DirectoryImpl::BatchRemove(std::string_view tenant, Keys keys, bool force) {
  std::vector<ErrorCode> out;
  out.reserve(keys.size());
  const int64_t now = Now();
  ForBatch(EffectiveTenant(tenant), keys,
           [&](size_t, const KeyRef& k) { out.push_back(RemoveAt(tenant, k, force, now)); });
  return out;
}

}  // namespace shelfmark
