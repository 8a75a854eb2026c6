// Snapshots: the directory's durable state as plain values
// (directory_state.h) and back. Contracts in directory.h ("snapshots").
//
// Restore checks a whole shard before changing anything, so a corrupt shard
// leaves the directory as it was; RestoreSegments stops at the first bad
// entry (the caller clears the directory then).
#include <algorithm>
#include <functional>
#include <limits>
#include <string_view>
#include <tuple>
#include <unordered_set>

#include "common/object_key.h"
#include "directory/directory_impl.h"

namespace shelfmark {
namespace {

constexpr uint64_t kMaxReplicaId = (uint64_t{1} << 48) - 1;  // Replica::id is 48 bits

// now + delta, saturating.
int64_t AddMs(int64_t now, int64_t delta) {
  if (delta > 0 && now > std::numeric_limits<int64_t>::max() - delta) {
    return std::numeric_limits<int64_t>::max();
  }
  if (delta < 0 && now < std::numeric_limits<int64_t>::min() - delta) {
    return std::numeric_limits<int64_t>::min();
  }
  return now + delta;
}

// CeilSeconds clamped to the int32 range the object keeps.
int32_t ClampedSeconds(int64_t ms) {
  constexpr int64_t kMax = int64_t{std::numeric_limits<int32_t>::max()} * 1000;
  constexpr int64_t kMin = int64_t{std::numeric_limits<int32_t>::min()} * 1000;
  return CeilSeconds(std::clamp(ms, kMin, kMax));
}

ReplicaState ExportReplica(const Replica& r) {
  ReplicaState out;
  out.id = r.id;
  out.status = r.status_enum();
  out.type = r.type_enum();
  out.owner = r.is_memory() ? r.segment()->segment.id : r.disk()->client_id;
  out.offset = r.is_memory() ? r.offset : 0;
  return out;
}

// The fields of a version (VersionState: an object's or a pending one's).
void ExportVersion(const ObjectMetadata& meta, int64_t now, VersionState* out) {
  out->writer = meta.writer;
  out->size = meta.size;
  out->has_checksum = meta.has_checksum;
  out->checksum = meta.checksum;
  out->data_type = meta.data_type;
  out->hard_pin = meta.hard_pin;
  out->soft_pin_remaining_ms =
      meta.soft_pin_deadline_s == 0 ? 0 : std::max<int64_t>(0, meta.soft_pin_deadline_ms() - now);
  out->put_age_ms = std::max<int64_t>(0, now - meta.put_start_ms());
  if (meta.group) out->group = *meta.group;
  out->replicas.reserve(meta.replicas.size());
  for (const Replica& r : meta.replicas) out->replicas.push_back(ExportReplica(r));
}

}  // namespace

void ExportObject(std::string_view tenant, std::string_view key, const ObjectMetadata& meta,
                  const ObjectMetadata* pending, int64_t now, ObjectState* out) {
  out->tenant = tenant;
  out->key = key;
  ExportVersion(meta, now, out);
  out->lease_remaining_ms = std::max<int64_t>(0, meta.lease_deadline_ms.load() - now);
  if (pending != nullptr) ExportVersion(*pending, now, &out->pending.emplace());
}

namespace {

bool ValidTenantKey(std::string_view tenant, std::string_view key) {
  // The stored tenant is never "" (the default tenant is stored by name).
  return ValidateTenant(tenant) == ErrorCode::OK && ValidateKey(key) == ErrorCode::OK;
}

// The fields of an object that need no owner lookup are in range.
// The fields ExportVersion exports are in range.
bool ValidVersionFields(const VersionState& v) {
  return v.size != 0 &&
         static_cast<uint8_t>(v.data_type) <= static_cast<uint8_t>(DataType::WEIGHT) &&
         v.soft_pin_remaining_ms >= 0 && v.put_age_ms >= 0 && v.replicas.size() <= kMaxReplicas &&
         (v.group.empty() || ValidateKey(v.group) == ErrorCode::OK);
}

bool ValidObjectFields(const ObjectState& o, uint32_t index) {
  return ValidTenantKey(o.tenant, o.key) && ShardIndex(o.tenant, o.key) == index &&
         ValidVersionFields(o) && o.lease_remaining_ms >= 0 && !o.replicas.empty() &&
         (!o.pending || ValidVersionFields(*o.pending));
}

// Sets the fields ExportVersion exports (times from `now`); the group
// membership is the caller's.
void RestoreVersion(const VersionState& v, int64_t now, ObjectMetadata& meta) {
  meta.writer = v.writer;
  meta.size = v.size;
  meta.has_checksum = v.has_checksum;
  meta.checksum = v.has_checksum ? v.checksum : 0;
  meta.data_type = v.data_type;
  meta.hard_pin = v.hard_pin;
  meta.soft_pin_deadline_s =
      v.soft_pin_remaining_ms > 0 ? ClampedSeconds(AddMs(now, v.soft_pin_remaining_ms)) : 0;
  meta.put_start_s = ClampedSeconds(AddMs(now, -v.put_age_ms));
  if (!v.group.empty()) meta.group = std::make_unique<const std::string>(v.group);
}

// Replica owners by id, remembering the last segment and the last disk node
// found: a shard's replicas mostly share a few owners, so the table locks
// are taken about once per owner instead of once per replica.
class OwnerCache {
 public:
  OwnerCache(const SegmentTable& segments, const ClientRegistry& clients)
      : segments_(segments), clients_(clients) {}

  SegmentEntry* Segment(const UUID& id) {
    if (segment_ == nullptr || id != segment_id_) {
      segment_ = segments_.Find(id);
      segment_id_ = id;
    }
    return segment_;
  }
  const DiskNode* Disk(const UUID& id) {
    if (disk_ == nullptr || id != disk_id_) {
      disk_ = clients_.Disk(id);
      disk_id_ = id;
    }
    return disk_;
  }

 private:
  const SegmentTable& segments_;
  const ClientRegistry& clients_;
  UUID segment_id_;
  SegmentEntry* segment_ = nullptr;
  UUID disk_id_;
  const DiskNode* disk_ = nullptr;
};

// A shard's objects checked and resolved: object i's replicas are
// replicas[first_replica[i], first_replica[i + 1]), its pending version's
// (UnfinishedPuts::kHold) pending[first_pending[i], first_pending[i + 1]);
// hashes[i] is KeyMap::Hash of its key.
struct PreparedShard {
  std::vector<uint64_t> hashes;
  std::vector<Replica> replicas;
  std::vector<uint32_t> first_replica;
  std::vector<Replica> pending;
  std::vector<uint32_t> first_pending;
  std::vector<bool> keep;  // every replica COMPLETE, or UnfinishedPuts::kHold
  size_t kept = 0;
};

// True when some (tenant, key) appears twice. Sorts (key hash, index)
// pairs; only objects whose hashes are equal are compared by name.
bool HasDuplicateKeys(const std::vector<ObjectState>& objects,
                      const std::vector<uint64_t>& hashes) {
  std::vector<std::pair<uint64_t, uint32_t>> by_hash(objects.size());
  for (size_t i = 0; i < objects.size(); ++i) by_hash[i] = {hashes[i], static_cast<uint32_t>(i)};
  std::sort(by_hash.begin(), by_hash.end());
  std::vector<std::pair<std::string_view, std::string_view>> names;
  for (size_t i = 0; i + 1 < by_hash.size();) {
    size_t end = i + 1;
    while (end < by_hash.size() && by_hash[end].first == by_hash[i].first) ++end;
    if (end - i > 1) {  // equal hashes: compare the names, sorted
      names.clear();
      for (size_t j = i; j < end; ++j) {
        const ObjectState& o = objects[by_hash[j].second];
        names.emplace_back(o.tenant, o.key);
      }
      std::sort(names.begin(), names.end());
      if (std::adjacent_find(names.begin(), names.end()) != names.end()) return true;
    }
    i = end;
  }
  return false;
}

}  // namespace

ShardState DirectoryImpl::ExportShard(uint32_t index) const {
  ShardState out;
  out.index = index;
  if (index >= kShardCount) return out;
  const MetadataShard& shard = shards_[index];
  int64_t now = Now();
  ReaderLock lock(&shard.mu);
  size_t count = 0;
  shard.tenants.ForEach(
      [&](std::string_view, const TenantState& state) { count += state.objects.size(); });
  out.objects.reserve(count);
  shard.tenants.ForEach([&](std::string_view tenant, const TenantState& state) {
    state.objects.ForEach([&](std::string_view key, const ObjectMetadata& meta) {
      ExportObject(tenant, key, meta, PendingOf(state, key, meta), now,
                   &out.objects.emplace_back());
    });
    for (const auto& [group, members] : state.groups) {  // std::set: sorted
      out.groups.push_back({std::string(tenant), group, {members.begin(), members.end()}});
    }
  });
  return out;
}

// Records the range [offset, offset + aligned size) of `segment` as free
// (unsorted: the caller sorts once).
static void ExportFree(const SegmentEntry* segment, uint64_t offset, uint64_t size,
                       std::vector<SegmentState>* segments) {
  for (SegmentState& s : *segments) {
    if (s.segment.id == segment->segment.id) {
      s.free_extents.emplace_back(offset, segment->AlignedSize(size));
    }
  }
}

SegmentsState DirectoryImpl::ExportSegments() const {
  SegmentsState out;
  out.view_version = view_version_.load();
  out.next_replica_id = next_replica_id_.load();
  out.segments = segments_.Export();
  // Ranges held outside any object are exported free: a restored master
  // knows no promotion in flight (a late PromoteEnd then finds nothing and
  // is refused), no copy/move task (a late TaskEnd: TASK_NOT_FOUND, nothing
  // attached), no pending upsert version (like an unfinished put: its
  // PutEnd finds the old version and the writer's client retries) and no
  // retired range (the readers of a replaced version are long gone once a
  // master restarted: their leases were granted by the old process).
  for (const InflightPromotion& p : promotions_.Export()) {
    ExportFree(p.segment, p.offset, p.size, &out.segments);
  }
  for (const TaskReservation& r : tasks_.Export()) {
    ExportFree(r.segment, r.offset, r.size, &out.segments);
  }
  for (const RetiredRange& r : retired_.Export()) {
    ExportFree(r.segment, r.offset, r.size, &out.segments);
  }
  // Nor any put reservation (the client's commit: LEASE_EXPIRED; it puts
  // again in two steps).
  for (const PutReservation& r : reservations_.Export()) {
    for (const Placement& p : r.placed) ExportFree(p.segment, p.offset, r.size, &out.segments);
  }
  for (const MetadataShard& shard : shards_) {
    ReaderLock lock(&shard.mu);
    shard.tenants.ForEach([&](std::string_view, const TenantState& state) {
      state.replacing.ForEach([&](std::string_view, const ObjectMetadata& pending) {
        for (const Replica& r : pending.replicas) {
          if (r.is_memory()) ExportFree(r.segment(), r.offset, pending.size, &out.segments);
        }
      });
    });
  }
  for (SegmentState& s : out.segments) std::sort(s.free_extents.begin(), s.free_extents.end());
  out.disks = clients_.ExportDisks();
  return out;
}

TasksState DirectoryImpl::ExportTasks() const {
  TasksState out;
  out.offloads = clients_.ExportOffloads();
  return out;
}

void DirectoryImpl::RaiseNextReplicaId(uint64_t id) {
  uint64_t cur = next_replica_id_.load();
  while (cur < id && !next_replica_id_.compare_exchange_weak(cur, id)) {
  }
}

ErrorCode DirectoryImpl::RestoreSegments(const SegmentsState& state) {
  int64_t now = Now();
  for (const SegmentState& s : state.segments) {
    auto allocator =
        OffsetAllocator::FromFreeExtents(s.segment.size, s.alignment, s.free_extents);
    if (!allocator) return ErrorCode::DATA_CORRUPTED;
    if (segments_.Restore(s.owner, s.segment, std::move(*allocator)) != ErrorCode::OK) {
      return ErrorCode::DATA_CORRUPTED;
    }
    clients_.Touch(s.owner, now);
  }
  for (const DiskNodeState& d : state.disks) {
    if (d.client.is_nil() || d.endpoint.empty() || d.endpoint.size() > 1024 ||
        clients_.Disk(d.client) != nullptr) {
      return ErrorCode::DATA_CORRUPTED;
    }
    clients_.MountDisk(d.client, d.endpoint, d.enable_offloading, now);
  }
  if (state.next_replica_id > kMaxReplicaId + 1) return ErrorCode::DATA_CORRUPTED;
  RaiseNextReplicaId(state.next_replica_id);
  if (state.view_version != 0) view_version_ = state.view_version;
  return ErrorCode::OK;
}

// SegmentTable::HoldsAll over `holds` grouped by segment (sorted first
// unless they are).
static bool HoldsAllSorted(const SegmentTable& segments,
                           std::vector<SegmentTable::HoldQuery>* holds) {
  auto by_segment = [](const SegmentTable::HoldQuery& a, const SegmentTable::HoldQuery& b) {
    return std::less<const SegmentEntry*>()(a.segment, b.segment);
  };
  if (!std::is_sorted(holds->begin(), holds->end(), by_segment)) {
    std::sort(holds->begin(), holds->end(), by_segment);
  }
  return segments.HoldsAll(*holds);
}

// Checks one replica of a version of `size` bytes and appends it, resolved,
// to *into (its MEMORY range to *holds); false when it is not valid.
static bool ResolveReplica(const ReplicaState& r, uint64_t size, OwnerCache& owners,
                           std::vector<SegmentTable::HoldQuery>* holds,
                           std::vector<Replica>* into) {
  if (r.id == 0 || r.id > kMaxReplicaId ||
      static_cast<uint8_t>(r.status) > static_cast<uint8_t>(ReplicaStatus::FAILED)) {
    return false;
  }
  const void* owner = nullptr;
  if (r.type == ReplicaType::MEMORY) {
    SegmentEntry* seg = owners.Segment(r.owner);
    if (seg == nullptr) return false;
    holds->push_back({seg, r.offset, size});
    owner = seg;
  } else if (r.type == ReplicaType::LOCAL_DISK) {
    owner = owners.Disk(r.owner);
    if (owner == nullptr) return false;
  } else {
    return false;
  }
  into->push_back(
      MakeReplica(r.id, r.status, r.type, owner, r.type == ReplicaType::MEMORY ? r.offset : 0));
  return true;
}

// Checks every object of `state` and resolves its replicas' owners into
// *out. Takes segment and client locks (leaves) only.
static ErrorCode PrepareShard(const ShardState& state, UnfinishedPuts unfinished,
                              const SegmentTable& segments, const ClientRegistry& clients,
                              PreparedShard* out) {
  const size_t n = state.objects.size();
  out->hashes.resize(n);
  out->keep.assign(n, true);
  out->first_replica.resize(n + 1);
  out->first_pending.resize(n + 1);
  out->replicas.reserve(n);
  OwnerCache owners(segments, clients);
  std::vector<SegmentTable::HoldQuery> holds;  // MEMORY replicas must lie in allocated space
  holds.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const ObjectState& o = state.objects[i];
    if (!ValidObjectFields(o, state.index)) return ErrorCode::DATA_CORRUPTED;
    out->hashes[i] = KeyMap<ObjectMetadata>::Hash(o.key);
    out->first_replica[i] = static_cast<uint32_t>(out->replicas.size());
    for (const ReplicaState& r : o.replicas) {
      if (!ResolveReplica(r, o.size, owners, &holds, &out->replicas)) {
        return ErrorCode::DATA_CORRUPTED;
      }
      if (r.status != ReplicaStatus::COMPLETE && unfinished == UnfinishedPuts::kDrop) {
        out->keep[i] = false;
      }
    }
    if (out->keep[i]) ++out->kept;
    out->first_pending[i] = static_cast<uint32_t>(out->pending.size());
    // A pending version's ranges: held with kHold; with kDrop (a snapshot)
    // they are free space already, so none is kept.
    if (o.pending && unfinished == UnfinishedPuts::kHold) {
      for (const ReplicaState& r : o.pending->replicas) {
        if (r.type != ReplicaType::MEMORY || r.status != ReplicaStatus::PROCESSING ||
            !ResolveReplica(r, o.pending->size, owners, &holds, &out->pending)) {
          return ErrorCode::DATA_CORRUPTED;
        }
      }
    }
  }
  out->first_replica[n] = static_cast<uint32_t>(out->replicas.size());
  out->first_pending[n] = static_cast<uint32_t>(out->pending.size());
  if (!HoldsAllSorted(segments, &holds)) return ErrorCode::DATA_CORRUPTED;
  return ErrorCode::OK;
}

// Groups are rebuilt from the objects; their entries are only checked.
static bool ValidGroups(const ShardState& state) {
  for (const GroupState& g : state.groups) {
    if (!ValidTenantKey(g.tenant, g.group) || ShardIndex(g.tenant, g.group) != state.index) {
      return false;
    }
    for (const std::string& member : g.members) {
      if (ValidateKey(member) != ErrorCode::OK) return false;
    }
  }
  return true;
}

// Kept objects per tenant (tenants come in runs: ExportShard writes each
// tenant's objects together). At most kMaxCounted tenants are counted.
static std::vector<std::pair<std::string_view, size_t>> KeptPerTenant(
    const ShardState& state, const PreparedShard& p) {
  constexpr size_t kMaxCounted = 64;
  std::vector<std::pair<std::string_view, size_t>> counts;
  size_t last = 0;
  for (size_t i = 0; i < state.objects.size(); ++i) {
    if (!p.keep[i]) continue;
    std::string_view tenant = state.objects[i].tenant;
    if (counts.empty() || counts[last].first != tenant) {
      auto it = std::find_if(counts.begin(), counts.end(),
                             [&](const auto& c) { return c.first == tenant; });
      if (it == counts.end()) {
        if (counts.size() == kMaxCounted) continue;
        it = counts.insert(counts.end(), {tenant, 0});
      }
      last = static_cast<size_t>(it - counts.begin());
    }
    ++counts[last].second;
  }
  return counts;
}

ErrorCode DirectoryImpl::RestoreShard(const ShardState& state, UnfinishedPuts unfinished) {
  if (state.index >= kShardCount || !ValidGroups(state)) return ErrorCode::DATA_CORRUPTED;
  PreparedShard p;
  ErrorCode rc = PrepareShard(state, unfinished, segments_, clients_, &p);
  if (rc != ErrorCode::OK) return rc;
  if (HasDuplicateKeys(state.objects, p.hashes)) return ErrorCode::DATA_CORRUPTED;
  MetadataShard& shard = shards_[state.index];
  std::vector<std::tuple<std::string_view, const std::string*, std::string_view>> joins;
  uint64_t max_id = 0;
  {
    WriterLock lock(&shard.mu);
    if (!shard.tenants.empty()) {  // restoring into a shard that holds objects already
      for (size_t i = 0; i < state.objects.size(); ++i) {
        const TenantState* t = shard.tenants.Find(state.objects[i].tenant);
        if (t != nullptr && t->objects.Find(state.objects[i].key, p.hashes[i]) != nullptr) {
          return ErrorCode::DATA_CORRUPTED;
        }
      }
    }
    // From here on nothing fails.
    for (const auto& [name, count] : KeptPerTenant(state, p)) {
      TenantState& tenant = *shard.tenants.TryEmplace(name).first;  // gets >= 1 object below
      tenant.objects.Reserve(tenant.objects.size() + count);
    }
    int64_t now = Now();
    TenantState* tenant = nullptr;
    std::string_view tenant_name;
    for (size_t i = 0; i < state.objects.size(); ++i) {
      const ObjectState& o = state.objects[i];
      const Replica* first = p.replicas.data() + p.first_replica[i];
      const Replica* last = p.replicas.data() + p.first_replica[i + 1];
      if (!p.keep[i]) {  // an unfinished put: give its space back
        for (const Replica* r = first; r != last; ++r) {
          if (r->is_memory()) {
            FreeRange(const_cast<SegmentEntry*>(r->segment()), r->offset, o.size);
          }
        }
        continue;
      }
      if (tenant == nullptr || tenant_name != o.tenant) {  // entries never move
        tenant = shard.tenants.TryEmplace(o.tenant).first;
        tenant_name = o.tenant;
      }
      ObjectMetadata& meta = *tenant->objects.TryEmplace(o.key, p.hashes[i]).first;
      RestoreVersion(o, now, meta);
      meta.lease_deadline_ms = o.lease_remaining_ms > 0 ? AddMs(now, o.lease_remaining_ms) : 0;
      // Recency is not kept in snapshots: a restored object counts as put now.
      meta.StartUses(NextUseTick(), 1);
      if (!o.group.empty()) joins.emplace_back(o.tenant, &o.group, o.key);
      for (const Replica* r = first; r != last; ++r) {
        meta.replicas.push_back(*r);
        max_id = std::max<uint64_t>(max_id, r->id);
      }
      if (meta.HasProcessing()) {  // held unfinished (UnfinishedPuts::kHold): started now
        meta.put_start_s = CeilSeconds(now);
        tenant->processing.emplace(KeyMap<ObjectMetadata>::KeyOf(&meta));
      }
      if (o.pending) {
        meta.has_pending = true;
        ObjectMetadata& version = *tenant->replacing.TryEmplace(o.key).first;
        const Replica* pending_first = p.pending.data() + p.first_pending[i];
        const Replica* pending_last = p.pending.data() + p.first_pending[i + 1];
        // Without replicas (a snapshot's, or all on segments gone) only a
        // placeholder: no writer, so the writer's PutEnd is refused.
        if (pending_first != pending_last) RestoreVersion(*o.pending, now, version);
        version.put_start_s = CeilSeconds(now);  // the timeouts run from the load
        for (const Replica* r = pending_first; r != pending_last; ++r) {
          version.replicas.push_back(*r);
          max_id = std::max<uint64_t>(max_id, r->id);
        }
      }
    }
  }
  key_count_.fetch_add(p.kept, std::memory_order_relaxed);
  // Group lists live in the group's shard: one shard lock at a time.
  for (const auto& [tenant, group, key] : joins) AddGroupMember(tenant, *group, key);
  RaiseNextReplicaId(max_id + 1);
  return ErrorCode::OK;
}

ErrorCode DirectoryImpl::RestoreTasks(const TasksState& state) {
  for (const PendingOffloadState& p : state.offloads) {
    for (const OffloadTask& t : p.tasks) {
      if (!ValidTenantKey(t.tenant, t.key) || t.size == 0) return ErrorCode::DATA_CORRUPTED;
    }
  }
  for (const PendingOffloadState& p : state.offloads) {
    if (!clients_.Known(p.client)) continue;
    for (const OffloadTask& t : p.tasks) clients_.QueueOffload(p.client, t);
  }
  clients_.TouchAll(Now());
  return ErrorCode::OK;
}

ErrorCode DirectoryImpl::RestoreHeldRanges(const std::vector<HeldRangeState>& held) {
  std::vector<SegmentEntry*> segments(held.size());
  std::vector<SegmentTable::HoldQuery> holds;
  std::unordered_set<uint64_t> ids;
  OwnerCache owners(segments_, clients_);
  for (size_t i = 0; i < held.size(); ++i) {
    const HeldRangeState& h = held[i];
    segments[i] = owners.Segment(h.segment);
    if (h.id == 0 || h.id > kMaxReplicaId || !ids.insert(h.id).second || h.remaining_ms < 0 ||
        h.size == 0 || segments[i] == nullptr) {
      return ErrorCode::DATA_CORRUPTED;
    }
    holds.push_back({segments[i], h.offset, h.size});
  }
  if (!HoldsAllSorted(segments_, &holds)) return ErrorCode::DATA_CORRUPTED;
  // From here on nothing fails.
  const int64_t now = Now();
  for (size_t i = 0; i < held.size(); ++i) {
    const HeldRangeState& h = held[i];
    const int64_t until = AddMs(now, h.remaining_ms);
    HoldRange(h.id, segments[i], h.offset, h.size, until);
    retired_.Add({segments[i], h.offset, h.size, segments[i]->AlignedSize(h.size), until, h.id});
    RaiseNextReplicaId(h.id + 1);
  }
  return ErrorCode::OK;
}

void DirectoryImpl::Clear() {
  for (MetadataShard& shard : shards_) {
    TenantMap gone;  // destroyed after the lock is released
    WriterLock lock(&shard.mu);
    gone = std::move(shard.tenants);
    shard.ghosts.Clear();
  }
  key_count_ = 0;
  promotions_.Clear();
  tasks_.Clear();
  retired_.Clear();
  reservations_.Clear();
  held_.Clear();
  segments_.Clear();
  clients_.Clear();
  next_replica_id_ = 1;
  view_version_ = initial_view_version_;
  allocation_failed_ = false;
  evicted_objects_ = 0;
  evicted_bytes_ = 0;
  eviction_runs_ = 0;
  evicted_unread_ = 0;
  eviction_ghost_hits_ = 0;
  eviction_runs_for_puts_ = 0;
  puts_wait_for_copies_until_ms_ = 0;
  eviction_backoff_until_ms_ = 0;
}

}  // namespace shelfmark
