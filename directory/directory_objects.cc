#include "directory/directory_impl.h"

#include <algorithm>
#include <random>

#include "common/object_key.h"
#include "directory/key_pattern.h"

namespace shelfmark {

ErrorCode ValidateTenantKey(std::string_view tenant, std::string_view key) {
  ErrorCode rc = ValidateTenant(EffectiveTenant(tenant));
  return rc != ErrorCode::OK ? rc : ValidateKey(key);
}

namespace {

uint64_t RandomViewVersion() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) | rd();
}

}  // namespace

uint64_t TenantKeyHash(std::string_view tenant, std::string_view name) {
  uint64_t h = std::hash<std::string_view>()(name);
  if (!tenant.empty() && tenant != kDefaultTenant) {
    h ^= std::hash<std::string_view>()(tenant) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  }
  return h;
}

size_t ShardIndex(std::string_view tenant, std::string_view name) {
  return TenantKeyHash(tenant, name) % kShardCount;
}

DirectoryImpl::DirectoryImpl(DirectoryOptions options)
    : options_(options),
      owned_clock_(options.clock ? nullptr : std::make_unique<SteadyClock>()),
      clock_(options.clock ? options.clock : owned_clock_.get()),
      initial_view_version_(RandomViewVersion()),
      view_version_(initial_view_version_) {
  if (options_.start_background_thread) StartBackgroundThread();
}

void DirectoryImpl::StartBackgroundThread() {
  if (!background_.joinable()) background_ = std::thread([this] { BackgroundLoop(); });
}

DirectoryImpl::~DirectoryImpl() {
  {
    MutexLock lock(&background_mu_);
    stopping_ = true;
  }
  background_cv_.notify_all();
  if (background_.joinable()) background_.join();
}

ObjectMetadata* DirectoryImpl::Find(MetadataShard& shard, std::string_view tenant,
                                    std::string_view key, uint64_t hash) {
  TenantState* t = shard.tenants.Find(EffectiveTenant(tenant));
  return t == nullptr ? nullptr : t->objects.Find(key, hash);
}

ReplicaDescriptor DirectoryImpl::Describe(const ObjectMetadata& meta, const Replica& r) const {
  ReplicaDescriptor d;
  DescribeInto(meta, r, &d);
  return d;
}

void DirectoryImpl::DescribeMemory(const SegmentEntry& segment, uint64_t offset, uint64_t size,
                                   MemoryDescriptor* m) {
  const Segment& seg = segment.segment;
  m->endpoint.assign(seg.endpoint);  // assign: the string's capacity is reused
  m->protocol.assign(seg.protocol);
  m->buffer_address = seg.base + offset;
  m->size = size;
  m->rkey.assign(seg.rkey);
  m->segment_id = seg.id;
}

void DirectoryImpl::DescribeInto(const ObjectMetadata& meta, const Replica& r,
                                 ReplicaDescriptor* d) const {
  d->id = r.id;
  d->status = r.status_enum();
  d->type = r.type_enum();
  if (r.is_memory()) {
    DescribeMemory(*r.segment(), r.offset, meta.size, &d->memory);
    d->disk = {};
  } else {
    d->disk.client_id = r.disk()->client_id;
    d->disk.object_size = meta.size;
    d->disk.endpoint.assign(r.disk()->endpoint);
    d->memory = {};
  }
}

void DirectoryImpl::FreeReplica(const ObjectMetadata& meta, const Replica& r) {
  if (r.is_memory()) {
    FreeRange(const_cast<SegmentEntry*>(r.segment()), r.offset, meta.size);
  }
}

void DirectoryImpl::EraseObject(MetadataShard& shard, std::string_view tenant,
                                std::string_view key, GroupDrops* drops) {
  tenant = EffectiveTenant(tenant);
  TenantState* t = shard.tenants.Find(tenant);
  if (t == nullptr) return;
  TenantState& state = *t;
  if (ObjectMetadata* meta = state.objects.Find(key)) {
    Touch(shard, tenant, key);  // before the frees (change_feed.h, "Frees")
    if (meta->has_pending) DropPending(state, key);  // a removed key takes its upsert along
    for (const Replica& r : meta->replicas) FreeReplica(*meta, r);
    if (meta->group) drops->emplace_back(*meta->group, std::string(key));
    state.EndProcessing(key);  // before the entry its view points into goes
    state.objects.Erase(key);
    key_count_.fetch_sub(1, std::memory_order_relaxed);
  }
  if (state.Empty()) shard.tenants.Erase(tenant);
}

size_t DirectoryImpl::RemoveReplicas(MetadataShard& shard, std::string_view tenant,
                                     std::string_view key,
                                     const std::function<bool(const Replica&)>& pred,
                                     GroupDrops* drops) {
  ObjectMetadata* meta = Find(shard, tenant, key);
  if (meta == nullptr) return 0;
  // The touch comes before the frees (change_feed.h, "Frees").
  if (std::any_of(meta->replicas.begin(), meta->replicas.end(), pred)) Touch(shard, tenant, key);
  size_t removed = meta->replicas.erase_if([&](const Replica& r) {
    if (!pred(r)) return false;
    FreeReplica(*meta, r);
    return true;
  });
  if (meta->replicas.empty()) {
    EraseObject(shard, tenant, key, drops);
  } else if (!meta->HasProcessing()) {
    shard.tenants.Find(EffectiveTenant(tenant))->EndProcessing(key);
  }
  return removed;
}

Result<std::vector<Placement>> DirectoryImpl::PlaceReplicas(uint64_t size,
                                                            const PutConfig& config) {
  auto placed = segments_.Allocate(config.replica_num, size, config.preferred_segments,
                                   config.prefer_host);
  if (placed.ok()) return placed;
  // Evict only for a put that eviction can help: one that can never be
  // placed (more replicas than segments, larger than any segment) must not
  // cost live objects.
  if (segments_.CouldEverPlace(config.replica_num, size)) {
    allocation_failed_ = true;
    background_cv_.notify_one();
  } else {
    unplaceable_puts_.fetch_add(1, std::memory_order_relaxed);
  }
  return placed;
}

std::vector<ReplicaDescriptor> DirectoryImpl::InitVersion(ObjectMetadata& meta,
                                                          const UUID& client, uint64_t size,
                                                          const PutConfig& config, int64_t now,
                                                          const std::vector<Placement>& placed) {
  FillVersion(meta, client, size, config, now, placed, ReplicaStatus::PROCESSING);
  std::vector<ReplicaDescriptor> out;
  out.reserve(placed.size());
  for (const Replica& r : meta.replicas) out.push_back(Describe(meta, r));
  return out;
}

void DirectoryImpl::FillVersion(ObjectMetadata& meta, const UUID& client, uint64_t size,
                                const PutConfig& config, int64_t now,
                                const std::vector<Placement>& placed, ReplicaStatus status) {
  meta.writer = client;
  meta.put_start_s = CeilSeconds(now);
  meta.size = size;
  meta.has_checksum = config.checksum.has_value();
  meta.checksum = config.checksum.value_or(0);
  meta.data_type = config.data_type;
  meta.hard_pin = config.hard_pin;
  meta.soft_pin_deadline_s =
      config.soft_pin_ttl_ms > 0 ? CeilSeconds(now + config.soft_pin_ttl_ms) : 0;
  if (!config.group_id.empty()) meta.group = std::make_unique<const std::string>(config.group_id);
  for (const Placement& p : placed) {
    uint64_t id = next_replica_id_.fetch_add(1, std::memory_order_relaxed);
    meta.replicas.push_back(MakeReplica(id, status, ReplicaType::MEMORY, p.segment, p.offset));
  }
}

Result<std::vector<ReplicaDescriptor>> DirectoryImpl::PutStart(const UUID& client,
                                                               std::string_view tenant,
                                                               std::string_view key,
                                                               uint64_t size,
                                                               const PutConfig& config) {
  return PutStartAt(client, tenant, Locate(tenant, key), size, config, Now());
}

Result<std::vector<ReplicaDescriptor>> DirectoryImpl::PutStartAt(const UUID& client,
                                                                 std::string_view tenant,
                                                                 const KeyRef& k, uint64_t size,
                                                                 const PutConfig& config,
                                                                 int64_t now) {
  auto out = TryPutStart(client, tenant, k, size, config, now);
  // No room: evict now and retry once, rather than refuse a put the
  // background pass would have made room for a moment later.
  if (out.ok() || out.error() != ErrorCode::NO_AVAILABLE_HANDLE ||
      !segments_.CouldEverPlace(config.replica_num, size)) {
    return out;
  }
  if (!EvictForPut(size * config.replica_num)) return out;
  return TryPutStart(client, tenant, k, size, config, Now());
}

Result<std::vector<ReplicaDescriptor>> DirectoryImpl::TryPutStart(const UUID& client,
                                                                  std::string_view tenant,
                                                                  const KeyRef& k, uint64_t size,
                                                                  const PutConfig& config,
                                                                  int64_t now) {
  const std::string_view key = k.key;
  if (ErrorCode rc = ValidateTenantKey(tenant, key); rc != ErrorCode::OK) return rc;
  if (client.is_nil() || BadPlacement(size, config) || BadVersionConfig(config)) {
    return ErrorCode::INVALID_PARAMS;
  }
  tenant = EffectiveTenant(tenant);
  MetadataShard& shard = *k.shard;
  GroupDrops drops;
  std::vector<ReplicaDescriptor> out;
  {
    WriterLock lock(&shard.mu);
    if (ObjectMetadata* old = Find(shard, tenant, key, k.hash)) {
      // An upsert of a readable object: a pending version beside it. (One
      // mid-put is no object to replace yet: the rules below apply.)
      if (config.replace && old->HasComplete()) {
        old->NoteUse(NextUseTick());
        Touch(shard, tenant, key);  // the pending version ships with the key
        return StartReplacement(*shard.tenants.Find(tenant), key, client, size, config, *old,
                                now);
      }
      if (ErrorCode rc = ClaimKey(shard, tenant, key, *old, now, &drops); rc != ErrorCode::OK) {
        return rc;
      }
    }
    auto placed = PlaceReplicas(size, config);
    if (!placed.ok()) return placed.error();
    TenantState& state = *shard.tenants.TryEmplace(tenant).first;
    ObjectMetadata& meta = *state.objects.TryEmplace(key, k.hash).first;
    out = InitVersion(meta, client, size, config, now, *placed);
    meta.StartUses(NextUseTick(), FirstUses(shard, tenant, key));
    state.processing.emplace(KeyMap<ObjectMetadata>::KeyOf(&meta));
    Touch(shard, tenant, key);
    key_count_.fetch_add(1, std::memory_order_relaxed);
  }
  DropGroupMembers(tenant, drops);
  if (!config.group_id.empty()) AddGroupMember(tenant, config.group_id, key);
  return out;
}

ErrorCode DirectoryImpl::ClaimKey(MetadataShard& shard, std::string_view tenant,
                                  std::string_view key, ObjectMetadata& old, int64_t now,
                                  GroupDrops* drops) {
  const bool stale =
      !old.HasComplete() && old.put_start_ms() + options_.put_start_discard_timeout_ms < now;
  if (!stale) {
    // A writer that holds the bytes of a key already stored uses it.
    if (old.HasComplete()) old.NoteUse(NextUseTick());
    return ErrorCode::OBJECT_ALREADY_EXISTS;
  }
  EraseObject(shard, tenant, key, drops);
  return ErrorCode::OK;
}

uint32_t DirectoryImpl::FirstUses(MetadataShard& shard, std::string_view tenant,
                                  std::string_view key) {
  if (options_.eviction_policy != EvictionPolicy::k2q) return 1;
  if (shard.ghosts.size() == 0 || !shard.ghosts.Take(TenantKeyHash(tenant, key))) return 1;
  eviction_ghost_hits_.fetch_add(1, std::memory_order_relaxed);
  return 2;  // evicted from probation too soon: enters protected
}

ErrorCode DirectoryImpl::FinishPut(TenantState& state, std::string_view tenant,
                                   std::string_view key, const UUID& client, ObjectMetadata& meta,
                                   ReplicaType type, std::optional<uint64_t> checksum) {
  if (meta.writer != client) return ErrorCode::ILLEGAL_CLIENT;
  auto unfinished = [type](const Replica& r) {
    return r.type_enum() == type && r.status_enum() == ReplicaStatus::PROCESSING;
  };
  if (std::none_of(meta.replicas.begin(), meta.replicas.end(), unfinished)) {
    if (!meta.HasComplete()) return ErrorCode::INVALID_WRITE;
    // A repeated PutEnd (its first answer was lost): the version is sealed,
    // so its checksum is compared, never added or changed (readers verify
    // against it).
    return checksum && meta.has_checksum && meta.checksum != *checksum ? ErrorCode::INVALID_PARAMS
                                                                       : ErrorCode::OK;
  }
  if (ErrorCode rc = AdoptEndChecksum(meta, checksum); rc != ErrorCode::OK) return rc;
  for (Replica& r : meta.replicas) {
    if (unfinished(r)) r.status = static_cast<uint64_t>(ReplicaStatus::COMPLETE);
  }
  if (!meta.HasProcessing()) state.EndProcessing(key);
  if (type == ReplicaType::MEMORY && !options_.offload_on_evict) {
    QueueOffloadFor(tenant, key, meta);
  }
  return ErrorCode::OK;
}

ErrorCode DirectoryImpl::AdoptEndChecksum(ObjectMetadata& version,
                                          std::optional<uint64_t> checksum) {
  if (!checksum) return ErrorCode::OK;
  if (version.has_checksum && version.checksum != *checksum) return ErrorCode::INVALID_PARAMS;
  version.has_checksum = true;
  version.checksum = *checksum;
  return ErrorCode::OK;
}

ErrorCode DirectoryImpl::PutEnd(const UUID& client, std::string_view tenant, std::string_view key,
                                ReplicaType type, std::optional<uint64_t> checksum) {
  return PutEndAt(client, tenant, Locate(tenant, key), type, checksum);
}

ErrorCode DirectoryImpl::PutEndAt(const UUID& client, std::string_view tenant, const KeyRef& k,
                                  ReplicaType type, std::optional<uint64_t> checksum) {
  const std::string_view key = k.key;
  if (ErrorCode rc = ValidateTenantKey(tenant, key); rc != ErrorCode::OK) return rc;
  tenant = EffectiveTenant(tenant);
  MetadataShard& shard = *k.shard;
  GroupDrops drops;
  std::string joined;
  ErrorCode rc;
  {
    WriterLock lock(&shard.mu);
    ObjectMetadata* meta = Find(shard, tenant, key, k.hash);
    if (meta == nullptr) return ErrorCode::OBJECT_NOT_FOUND;
    TenantState& state = *shard.tenants.Find(tenant);
    // Touched whatever the outcome (a state shipped twice is harmless), and
    // first: a replacement frees the old version's ranges (change_feed.h).
    Touch(shard, tenant, key);
    rc = meta->has_pending && type == ReplicaType::MEMORY
             ? FinishReplacement(state, tenant, key, client, *meta, &drops, &joined, checksum)
             : FinishPut(state, tenant, key, client, *meta, type, checksum);
  }
  DropGroupMembers(tenant, drops);
  if (!joined.empty()) AddGroupMember(tenant, joined, key);
  return rc;
}

ErrorCode DirectoryImpl::PutRevoke(const UUID& client, std::string_view tenant,
                                   std::string_view key, ReplicaType type) {
  return PutRevokeAt(client, tenant, Locate(tenant, key), type);
}

ErrorCode DirectoryImpl::PutRevokeAt(const UUID& client, std::string_view tenant, const KeyRef& k,
                                     ReplicaType type) {
  const std::string_view key = k.key;
  if (ErrorCode rc = ValidateTenantKey(tenant, key); rc != ErrorCode::OK) return rc;
  tenant = EffectiveTenant(tenant);
  MetadataShard& shard = *k.shard;
  GroupDrops drops;
  size_t removed;
  {
    WriterLock lock(&shard.mu);
    ObjectMetadata* meta = Find(shard, tenant, key, k.hash);
    if (meta == nullptr) return ErrorCode::OBJECT_NOT_FOUND;
    if (meta->has_pending && type == ReplicaType::MEMORY) {
      Touch(shard, tenant, key);  // before the frees (change_feed.h, "Frees")
      return RevokeReplacement(*shard.tenants.Find(tenant), key, client);
    }
    if (meta->writer != client) return ErrorCode::ILLEGAL_CLIENT;
    removed = RemoveReplicas(shard, tenant, key, [type](const Replica& r) {
      return r.type_enum() == type && r.status_enum() == ReplicaStatus::PROCESSING;
    }, &drops);
  }
  DropGroupMembers(tenant, drops);
  return removed > 0 ? ErrorCode::OK : ErrorCode::INVALID_WRITE;
}

Result<GetReplicaListResponse> DirectoryImpl::GetReplicaList(std::string_view tenant,
                                                             std::string_view key) {
  GetReplicaListResponse resp;
  if (ErrorCode rc = GetReplicaListInto(tenant, key, &resp); rc != ErrorCode::OK) return rc;
  return resp;
}

ErrorCode DirectoryImpl::GetReplicaListInto(std::string_view tenant, std::string_view key,
                                            GetReplicaListResponse* out) {
  return GetReplicaListAt(tenant, Locate(EffectiveTenant(tenant), key), Now(), out);
}

ErrorCode DirectoryImpl::GetReplicaListAt(std::string_view tenant, const KeyRef& k, int64_t now,
                                          GetReplicaListResponse* out) {
  if (ErrorCode rc = ValidateTenantKey(tenant, k.key); rc != ErrorCode::OK) return rc;
  MetadataShard& shard = *k.shard;
  ReaderLock lock(&shard.mu);
  ObjectMetadata* meta = Find(shard, tenant, k.key, k.hash);
  if (meta == nullptr) return ErrorCode::OBJECT_NOT_FOUND;
  size_t n = 0;
  for (const Replica& r : meta->replicas) {
    if (!r.is_complete()) continue;
    if (out->replicas.size() <= n) out->replicas.emplace_back();
    DescribeInto(*meta, r, &out->replicas[n++]);
  }
  out->replicas.resize(n);
  if (n == 0) return ErrorCode::REPLICA_IS_NOT_READY;
  meta->ExtendLease(now + options_.default_kv_lease_ttl_ms);
  meta->NoteUse(NextUseTick());
  out->size = meta->size;
  out->checksum.reset();
  if (meta->has_checksum) out->checksum = meta->checksum;
  out->data_type = meta->data_type;
  out->lease_ttl_ms = options_.default_kv_lease_ttl_ms;
  return ErrorCode::OK;
}

Result<bool> DirectoryImpl::ExistKey(std::string_view tenant, std::string_view key) {
  return ExistKeyAt(tenant, Locate(EffectiveTenant(tenant), key), Now());
}

Result<bool> DirectoryImpl::ExistKeyAt(std::string_view tenant, const KeyRef& k, int64_t now) {
  if (ErrorCode rc = ValidateTenantKey(tenant, k.key); rc != ErrorCode::OK) return rc;
  MetadataShard& shard = *k.shard;
  ReaderLock lock(&shard.mu);
  ObjectMetadata* meta = Find(shard, tenant, k.key, k.hash);
  if (meta == nullptr || !meta->HasComplete()) return false;
  meta->ExtendLease(now + options_.default_kv_lease_ttl_ms);
  meta->NoteUse(NextUseTick());  // an engine asks before it reads
  return true;
}

Result<ObjectInfo> DirectoryImpl::Stat(std::string_view tenant, std::string_view key) {
  if (ErrorCode rc = ValidateTenantKey(tenant, key); rc != ErrorCode::OK) return rc;
  MetadataShard& shard = ShardOf(EffectiveTenant(tenant), key);
  ReaderLock lock(&shard.mu);
  ObjectMetadata* meta = Find(shard, tenant, key);
  if (meta == nullptr) return ErrorCode::OBJECT_NOT_FOUND;
  int64_t now = Now();
  ObjectInfo info;
  info.key = std::string(key);
  info.size = meta->size;
  if (meta->has_checksum) info.checksum = meta->checksum;
  info.data_type = meta->data_type;
  info.writer = meta->writer;
  info.lease_remaining_ms = std::max<int64_t>(0, meta->lease_deadline_ms.load() - now);
  info.soft_pin_remaining_ms = std::max<int64_t>(0, meta->soft_pin_deadline_ms() - now);
  info.hard_pin = meta->hard_pin;
  if (meta->group) info.group_id = *meta->group;
  for (const Replica& r : meta->replicas) info.replicas.push_back(Describe(*meta, r));
  return info;
}

std::vector<std::string> DirectoryImpl::ListKeys(std::string_view tenant,
                                                 std::string_view prefix, size_t limit) {
  tenant = EffectiveTenant(tenant);
  std::vector<std::string> keys;
  for (MetadataShard& shard : shards_) {
    ReaderLock lock(&shard.mu);
    const TenantState* t = shard.tenants.Find(tenant);
    if (t == nullptr) continue;
    t->objects.ForEach([&](std::string_view key, const ObjectMetadata&) {
      if (key.substr(0, prefix.size()) == prefix) keys.emplace_back(key);
    });
  }
  size_t n = std::min(limit, keys.size());
  std::partial_sort(keys.begin(), keys.begin() + static_cast<ptrdiff_t>(n), keys.end());
  keys.resize(n);
  return keys;
}

uint64_t DirectoryImpl::CountKeys(std::string_view tenant, bool all_tenants) {
  if (all_tenants) return key_count_.load(std::memory_order_relaxed);
  tenant = EffectiveTenant(tenant);
  uint64_t n = 0;
  for (MetadataShard& shard : shards_) {
    ReaderLock lock(&shard.mu);
    if (const TenantState* t = shard.tenants.Find(tenant)) n += t->objects.size();
  }
  return n;
}

ErrorCode DirectoryImpl::Remove(std::string_view tenant, std::string_view key, bool force) {
  return RemoveAt(tenant, Locate(tenant, key), force, Now());
}

ErrorCode DirectoryImpl::RemoveAt(std::string_view tenant, const KeyRef& k, bool force,
                                  int64_t now) {
  const std::string_view key = k.key;
  if (ErrorCode rc = ValidateTenantKey(tenant, key); rc != ErrorCode::OK) return rc;
  tenant = EffectiveTenant(tenant);
  MetadataShard& shard = *k.shard;
  GroupDrops drops;
  {
    WriterLock lock(&shard.mu);
    ObjectMetadata* meta = Find(shard, tenant, key, k.hash);
    if (meta == nullptr) return ErrorCode::OBJECT_NOT_FOUND;
    if (!force) {
      if (meta->LeaseLive(now)) return ErrorCode::OBJECT_HAS_LEASE;
      if (meta->ReferenceCount() > 0) return ErrorCode::OBJECT_HAS_REFERENCE;
      if (!meta->HasComplete()) return ErrorCode::REPLICA_IS_NOT_READY;
    }
    EraseObject(shard, tenant, key, &drops);
  }
  DropGroupMembers(tenant, drops);
  return ErrorCode::OK;
}

uint64_t DirectoryImpl::RemoveAll(std::string_view tenant, bool all_tenants, bool force) {
  return RemoveMatching(tenant, all_tenants, force, [](std::string_view) { return true; });
}

Result<uint64_t> DirectoryImpl::RemoveByRegex(std::string_view tenant, std::string_view pattern,
                                              bool force) {
  if (ValidateTenant(EffectiveTenant(tenant)) != ErrorCode::OK) return ErrorCode::INVALID_PARAMS;
  Result<KeyPattern> compiled = KeyPattern::Compile(pattern);  // once per call
  if (!compiled.ok()) return compiled.error();
  return RemoveMatching(tenant, /*all_tenants=*/false, force,
                        [&](std::string_view key) { return compiled->Matches(key); });
}

uint64_t DirectoryImpl::RemoveMatching(std::string_view tenant, bool all_tenants, bool force,
                                       const std::function<bool(std::string_view)>& match) {
  tenant = EffectiveTenant(tenant);
  uint64_t removed = 0;
  for (MetadataShard& shard : shards_) {
    removed += SweepShard(shard, [&](const TenantMap& tenants) {
      int64_t now = Now();
      Victims victims;
      tenants.ForEach([&](std::string_view name, const TenantState& state) {
        if (!all_tenants && name != tenant) return;
        state.objects.ForEach([&](std::string_view key, const ObjectMetadata& meta) {
          bool removable = force || (!meta.LeaseLive(now) && meta.ReferenceCount() == 0 &&
                                     meta.HasComplete());
          if (removable && match(key)) victims.emplace_back(name, key);
        });
      });
      return victims;
    }, [](const Replica&) { return true; });
  }
  return removed;
}

size_t DirectoryImpl::SweepShard(MetadataShard& shard, const SelectVictims& select,
                                 const std::function<bool(const Replica&)>& pred) {
  std::vector<std::pair<std::string, GroupDrops>> drops_by_tenant;
  size_t picked;
  {
    WriterLock lock(&shard.mu);
    Victims victims = select(shard.tenants);
    picked = victims.size();
    for (const auto& [name, key] : victims) {
      drops_by_tenant.emplace_back(name, GroupDrops{});
      RemoveReplicas(shard, name, key, pred, &drops_by_tenant.back().second);
    }
  }
  for (const auto& [name, drops] : drops_by_tenant) DropGroupMembers(name, drops);
  return picked;
}

void DirectoryImpl::AddGroupMember(std::string_view tenant, const std::string& group,
                                   std::string_view key) {
  MetadataShard& shard = ShardOf(tenant, group);
  WriterLock lock(&shard.mu);
  shard.tenants.TryEmplace(tenant).first->groups[group].emplace(key);
}

void DirectoryImpl::DropGroupMembers(std::string_view tenant, const GroupDrops& drops) {
  for (const auto& [group, key] : drops) {
    MetadataShard& shard = ShardOf(tenant, group);
    WriterLock lock(&shard.mu);
    TenantState* t = shard.tenants.Find(tenant);
    if (t == nullptr) continue;
    auto g = t->groups.find(group);
    if (g == t->groups.end()) continue;
    g->second.erase(key);
    if (g->second.empty()) t->groups.erase(g);
    if (t->Empty()) shard.tenants.Erase(tenant);
  }
}

Result<std::vector<std::string>> DirectoryImpl::GroupMembers(std::string_view tenant,
                                                             std::string_view group_id) {
  if (ErrorCode rc = ValidateTenantKey(tenant, group_id); rc != ErrorCode::OK) return rc;
  tenant = EffectiveTenant(tenant);
  MetadataShard& shard = ShardOf(tenant, group_id);
  ReaderLock lock(&shard.mu);
  const TenantState* t = shard.tenants.Find(tenant);
  if (t == nullptr) return ErrorCode::OBJECT_NOT_FOUND;
  auto g = t->groups.find(group_id);
  if (g == t->groups.end()) return ErrorCode::OBJECT_NOT_FOUND;
  return std::vector<std::string>(g->second.begin(), g->second.end());
}

// Unfinished puts of a shard's tenants started before `cutoff`.
static Victims StalePuts(const TenantMap& tenants, int64_t cutoff) {
  Victims stale;
  tenants.ForEach([&](std::string_view name, const TenantState& state) {
    for (std::string_view key : state.processing) {
      const ObjectMetadata* meta = state.objects.Find(key);
      if (meta != nullptr && meta->put_start_ms() < cutoff) stale.emplace_back(name, key);
    }
  });
  return stale;
}

void DirectoryImpl::ReclaimStalePuts() {
  auto processing = [](const Replica& r) { return r.status_enum() == ReplicaStatus::PROCESSING; };
  for (MetadataShard& shard : shards_) {
    int64_t cutoff = Now() - options_.put_start_release_timeout_ms;
    ReclaimStaleReplacements(shard, cutoff);
    {
      ReaderLock peek(&shard.mu);  // the common case: nothing to do
      if (StalePuts(shard.tenants, cutoff).empty()) continue;
    }
    SweepShard(shard, [cutoff](const TenantMap& tenants) {
      return StalePuts(tenants, cutoff);
    }, processing);
  }
}

void DirectoryImpl::RunBackgroundOnce() {
  ExpireClients();
  ExpireInflightOffloads();
  ExpirePromotions();
  ExpireTasks();
  ExpireReservations();
  ReleaseRetired();
  // A master that is not the serving leader drops no object on its own:
  // the leader's reclaims and evictions reach it as changes (docs/ha.md).
  if (!clients_.expiry_held()) {
    ReclaimStalePuts();
    EvictIfNeeded();
  }
  background_runs_.fetch_add(1, std::memory_order_relaxed);
}

void DirectoryImpl::BackgroundLoop() {
  MutexLock lock(&background_mu_);
  while (!stopping_) {
    background_cv_.wait_for(lock, std::chrono::milliseconds(options_.background_period_ms));
    if (stopping_) break;
    lock.unlock();
    {
      SnapshotReader hold(&snapshot_lock_);
      RunBackgroundOnce();
    }
    lock.lock();
  }
}

DirectoryStats DirectoryImpl::Stats() const {
  DirectoryStats s;
  s.key_count = key_count_.load();
  s.allocated_bytes = segments_.allocated_bytes();
  s.total_capacity_bytes = segments_.capacity_bytes();
  s.segment_count = segments_.segment_count();
  s.client_count = clients_.size();
  s.evicted_objects = evicted_objects_.load();
  s.evicted_bytes = evicted_bytes_.load();
  s.eviction_runs = eviction_runs_.load();
  s.evicted_unread = evicted_unread_.load();
  s.eviction_ghost_hits = eviction_ghost_hits_.load();
  s.eviction_runs_for_puts = eviction_runs_for_puts_.load();
  s.unplaceable_puts = unplaceable_puts_.load();
  s.superseded_segments = superseded_segments_.load();
  s.superseded_disks = superseded_disks_.load();
  s.stale_disk_reports = stale_disk_reports_.load();
  s.background_runs = background_runs_.load();
  s.snapshot_waiters = snapshot_lock_.waiting();
  s.evicted_without_copy = evicted_without_copy_.load();
  s.offload_queued = clients_.QueuedOffloads();
  s.offload_waits = offload_waits_.load();
  s.offload_failures = offload_failures_.load();
  s.promotions_granted = promotions_granted_.load();
  s.promoted = promoted_.load();
  s.promotions_refused = promotions_refused_.load();
  s.promotions_abandoned = promotions_abandoned_.load();
  s.promotions_inflight = promotions_.size();
  s.retired_bytes = retired_.bytes();
  s.put_reservations_granted = reservations_granted_.load();
  s.put_reservations_committed = reservations_committed_.load();
  s.put_reservations_released = reservations_released_.load();
  s.put_reservations_held = reservations_.size();
  s.upserts = upserts_.load();
  return s;
}

}  // namespace shelfmark
