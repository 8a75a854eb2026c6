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
  // The shards' own lines (lock, tenant map with the default tenant's
  // pointer) first: no map is read for them.
  for (const KeyRef& k : refs) {
    __builtin_prefetch(&k.shard->mu);
    // The map's last byte's line: the map may start in the lock's line.
    __builtin_prefetch(reinterpret_cast<const char*>(&k.shard->tenants + 1) - 1);
  }
  RunPipelined(
      refs.size(), [&](size_t i) { PrefetchSlot(tenant, refs[i]); },
      [&](size_t i) { PrefetchEntry(tenant, refs[i]); }, [&](size_t i) { visit(i, refs[i]); });
}

template <typename Answer, typename One>
std::vector<Answer> DirectoryImpl::Collect(std::string_view tenant, Keys keys, One&& one) {
  std::vector<Answer> out;
  out.reserve(keys.size());
  ForBatch(EffectiveTenant(tenant), keys,
           [&](size_t i, const KeyRef& k) { out.push_back(one(i, k)); });
  return out;
}

std::vector<Result<std::vector<ReplicaDescriptor>>> DirectoryImpl::BatchPutStart(
    const UUID& client, std::string_view tenant, Keys keys, const std::vector<uint64_t>& sizes,
    const PutConfig& config, const std::vector<uint64_t>& checksums) {
  PutConfig item = config;  // with each key's own checksum, when given
  const int64_t now = Now();
  return Collect<Result<std::vector<ReplicaDescriptor>>>(
      tenant, keys, [&](size_t i, const KeyRef& k) -> Result<std::vector<ReplicaDescriptor>> {
        if (i >= sizes.size() || (!checksums.empty() && i >= checksums.size())) {
          return ErrorCode::INVALID_PARAMS;
        }
        if (!checksums.empty()) item.checksum = checksums[i];
        return PutStartAt(client, tenant, k, sizes[i], item, now);
      });
}

std::vector<CommitPutResult> DirectoryImpl::BatchCommitPut(const UUID& client,
                                                           std::string_view tenant, Keys keys,
                                                           const std::vector<uint64_t>& ids,
                                                           const std::vector<uint64_t>& checksums,
                                                           const PutConfig& config, bool renew) {
  if (ids.size() != keys.size() || (!checksums.empty() && checksums.size() != keys.size())) {
    return std::vector<CommitPutResult>(keys.size(),
                                        CommitPutResult{ErrorCode::INVALID_PARAMS, {}});
  }
  PutConfig item = config;  // with each key's own checksum, when given
  const bool bad_config = config.replace || BadVersionConfig(config);
  const int64_t now = Now();
  return Collect<CommitPutResult>(tenant, keys, [&](size_t i, const KeyRef& k) -> CommitPutResult {
    if (ErrorCode rc = ValidateTenantKey(tenant, k.key); rc != ErrorCode::OK) return {rc, {}};
    if (bad_config) return {ErrorCode::INVALID_PARAMS, {}};
    if (!checksums.empty()) item.checksum = checksums[i];
    return CommitPutAt(client, EffectiveTenant(tenant), k, ids[i], item, renew, now);
  });
}

std::vector<ErrorCode> DirectoryImpl::BatchPutEnd(const UUID& client, std::string_view tenant,
                                                  Keys keys, ReplicaType type,
                                                  const std::vector<uint64_t>& checksums) {
  if (!checksums.empty() && checksums.size() != keys.size()) {
    return std::vector<ErrorCode>(keys.size(), ErrorCode::INVALID_PARAMS);
  }
  return Collect<ErrorCode>(tenant, keys, [&](size_t i, const KeyRef& k) {
    const std::optional<uint64_t> checksum =
        checksums.empty() ? std::nullopt : std::optional<uint64_t>(checksums[i]);
    return PutEndAt(client, tenant, k, type, checksum);
  });
}

std::vector<ErrorCode> DirectoryImpl::BatchPutRevoke(const UUID& client, std::string_view tenant,
                                                     Keys keys, ReplicaType type) {
  return Collect<ErrorCode>(
      tenant, keys, [&](size_t, const KeyRef& k) { return PutRevokeAt(client, tenant, k, type); });
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
  const int64_t now = Now();
  return Collect<Result<bool>>(tenant, keys,
                               [&](size_t, const KeyRef& k) { return ExistKeyAt(tenant, k, now); });
}

std::vector<ErrorCode> DirectoryImpl::BatchRemove(std::string_view tenant, Keys keys, bool force) {
  const int64_t now = Now();
  return Collect<ErrorCode>(
      tenant, keys, [&](size_t, const KeyRef& k) { return RemoveAt(tenant, k, force, now); });
}

}  // namespace shelfmark
