// Offload (MEMORY -> LOCAL_DISK): tasks queued at PutEnd for the segment
// owner's SSD store, handed out by OffloadHeartbeat (pinning the MEMORY
// replica with a reference while the node copies it), and LOCAL_DISK
// replicas added by NotifyOffloadSuccess.
#include "common/object_key.h"
#include "directory/directory_impl.h"

namespace shelfmark {
namespace {

// A queued copy not handed out within this long is queued again by eviction
// (its task may have been lost with a node's queue).
constexpr int64_t kRequeueAfterMs = kOffloadTimeoutMs;
// ObjectMetadata::offload_queued_stamp: seconds modulo kStampPeriod, plus 1;
// kCopyFailed (never a time stamp): the node reported it could not copy it.
constexpr int64_t kStampPeriod = 65'534;
constexpr uint16_t kCopyFailed = 65'535;

uint16_t OffloadStamp(int64_t now_ms) {
  return static_cast<uint16_t>((now_ms / 1000) % kStampPeriod + 1);
}

// Whether a copy of the object was queued less than kRequeueAfterMs ago.
bool QueuedLately(const ObjectMetadata& meta, int64_t now_ms) {
  if (meta.offload_queued_stamp == 0) return false;
  const int64_t age_s =
      (OffloadStamp(now_ms) - meta.offload_queued_stamp + kStampPeriod) % kStampPeriod;
  return age_s * 1000 < kRequeueAfterMs;
}

// The SSD store of the owner of a COMPLETE MEMORY replica, if it offloads.
std::pair<const UUID*, const DiskNode*> TierOf(const ObjectMetadata& meta,
                                               const ClientRegistry& clients) {
  for (const Replica& r : meta.replicas) {
    if (!r.is_memory() || !r.is_complete()) continue;
    const UUID& owner = r.segment()->owner;
    const DiskNode* disk = clients.Disk(owner);
    if (disk != nullptr && disk->enable_offloading) return {&owner, disk};
  }
  return {nullptr, nullptr};
}

}  // namespace

bool DirectoryImpl::QueueOffloadFor(std::string_view tenant, std::string_view key,
                                    const ObjectMetadata& meta) {
  if (!options_.enable_offload) return false;
  const auto [owner, disk] = TierOf(meta, clients_);
  if (owner == nullptr ||
      !clients_.QueueOffload(*owner, {std::string(tenant), std::string(key), meta.size},
                             options_.offloading_queue_limit)) {
    return false;
  }
  meta.offload_queued_stamp = OffloadStamp(Now());
  return true;
}

const DiskNode* DirectoryImpl::OffloadTier(const ObjectMetadata& meta) const {
  if (!options_.enable_offload || meta.HasCompleteDisk()) return nullptr;
  return TierOf(meta, clients_).second;
}

bool DirectoryImpl::MayEvictNow(std::string_view tenant, std::string_view key,
                                const ObjectMetadata& meta, int64_t now) {
  const DiskNode* tier = OffloadTier(meta);
  if (tier == nullptr) return true;
  // A copy the node could not make, or a node whose store makes none now:
  // waiting would refuse puts for as long as the store stays so.
  if (meta.offload_queued_stamp == kCopyFailed ||
      tier->copies_failing.load(std::memory_order_relaxed)) {
    return true;
  }
  if (!QueuedLately(meta, now) && !QueueOffloadFor(tenant, key, meta) &&
      options_.offload_force_evict) {
    return true;  // beyond the offload cap: dropped without a copy
  }
  offload_waits_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

// Pins the client's COMPLETE MEMORY replica of the task's object and says
// where its bytes are; false when the object is gone or already on this
// client's disk.
static bool PinForOffload(ObjectMetadata* meta, const UUID& client, const DiskNode* disk,
                          uint64_t* replica_id, uint64_t* buffer_address) {
  if (meta == nullptr) return false;
  Replica* pinned = nullptr;
  for (Replica& r : meta->replicas) {
    if (!r.is_memory() && r.owner == disk) return false;
    if (pinned == nullptr && r.is_memory() && r.is_complete() && r.segment()->owner == client &&
        r.refcnt < 1023) {
      pinned = &r;
    }
  }
  if (pinned == nullptr) return false;
  pinned->refcnt = pinned->refcnt + 1;
  *replica_id = pinned->id;
  *buffer_address = pinned->segment()->segment.base + pinned->offset;
  return true;
}

Result<std::vector<OffloadTask>> DirectoryImpl::OffloadHeartbeat(const UUID& client,
                                                                 size_t max_tasks) {
  if (!clients_.Ping(client, Now())) return ErrorCode::ILLEGAL_CLIENT;
  DiskNode* disk = clients_.Disk(client);
  std::vector<OffloadTask> out;
  if (!options_.enable_offload || disk == nullptr || !disk->enable_offloading) return out;
  for (OffloadTask& task : clients_.TakeOffload(client, max_tasks)) {
    MetadataShard& shard = ShardOf(task.tenant, task.key);
    WriterLock lock(&shard.mu);
    uint64_t replica_id = 0;
    ObjectMetadata* meta = Find(shard, task.tenant, task.key);
    if (meta != nullptr) meta->offload_queued_stamp = 0;  // handed out: pinned or moot
    if (!PinForOffload(meta, client, disk, &replica_id,
                       &task.buffer_address)) {
      continue;
    }
    clients_.AddInflight(client, {task.tenant, task.key, replica_id, Now() + kOffloadTimeoutMs});
    out.push_back(std::move(task));
  }
  return out;
}

// Drops the offload pin on replica `replica_id` of the key; false when the
// object or that replica no longer exists.
static bool Unpin(ObjectMetadata* meta, uint64_t replica_id) {
  if (meta == nullptr) return false;
  for (Replica& r : meta->replicas) {
    if (r.id != replica_id) continue;
    if (r.refcnt > 0) r.refcnt = r.refcnt - 1;
    return true;
  }
  return false;
}

Result<std::vector<ErrorCode>> DirectoryImpl::NotifyOffloadSuccess(
    const UUID& client, const std::vector<OffloadedObject>& items) {
  DiskNode* disk = clients_.Disk(client);
  if (disk == nullptr) return ErrorCode::ILLEGAL_CLIENT;
  clients_.Ping(client, Now());
  std::vector<ErrorCode> out;
  out.reserve(items.size());
  for (const OffloadedObject& item : items) {
    std::string_view tenant = EffectiveTenant(item.tenant);
    ErrorCode rc = ValidateTenantKey(tenant, item.key);
    if (rc == ErrorCode::OK && item.location.data_size <= 0) rc = ErrorCode::INVALID_PARAMS;
    if (rc != ErrorCode::OK) {
      out.push_back(rc);
      continue;
    }
    MetadataShard& shard = ShardOf(tenant, item.key);
    WriterLock lock(&shard.mu);
    if (clients_.Disk(client) != disk) {  // re-mounted or expired meanwhile
      out.push_back(ErrorCode::ILLEGAL_CLIENT);
      continue;
    }
    uint64_t replica_id = 0;
    const bool pinned = clients_.FinishInflight(client, tenant, item.key, &replica_id);
    if (pinned) {
      disk->copies_failing.store(false, std::memory_order_relaxed);  // a copy was made
      ObjectMetadata* meta = Find(shard, tenant, item.key);
      // The node copied the replica pinned for the task: if the object was
      // removed (or removed and written again) meanwhile, that copy is of
      // no object the directory holds and must not bring one back.
      if (!Unpin(meta, replica_id)) {
        out.push_back(ErrorCode::OBJECT_NOT_FOUND);
        continue;
      }
    }
    out.push_back(AddDiskReplica(shard, tenant, item, client, disk, pinned));
  }
  return out;
}

// Whether a disk copy with checksum `reported` is of the version `meta` is:
// its checksum names the bytes (same function as the writer's, ValueChecksum
// = ObjectChecksum); without one on either side only a pinned copy is known
// to be. A removed and re-put key keeps its size, so size proves nothing.
static bool CopyOfVersion(const ObjectMetadata& meta, const std::optional<uint64_t>& reported,
                          bool pinned) {
  if (meta.has_checksum && reported.has_value()) return meta.checksum == *reported;
  return pinned;
}

ErrorCode DirectoryImpl::AddDiskReplica(MetadataShard& shard, std::string_view tenant,
                                        const OffloadedObject& item, const UUID& client,
                                        const DiskNode* disk, bool pinned) {
  uint64_t size = static_cast<uint64_t>(item.location.data_size);
  ObjectMetadata* meta = Find(shard, tenant, item.key);
  const bool known = meta != nullptr;
  if (!known) {
    TenantState& state = *shard.tenants.TryEmplace(tenant).first;
    meta = state.objects.TryEmplace(item.key).first;
    meta->writer = client;
    meta->put_start_s = CeilSeconds(Now());
    meta->size = size;
    // Reads verify it, and later reports of the key are held to it.
    meta->has_checksum = item.checksum.has_value();
    meta->checksum = item.checksum.value_or(0);
    key_count_.fetch_add(1, std::memory_order_relaxed);
  } else if (meta->size != size) {
    return ErrorCode::INVALID_PARAMS;
  }
  // Already attached, so of this version (removing a version drops its
  // replicas, and the store's record changes only by a pinned copy).
  for (const Replica& r : meta->replicas) {
    if (r.owner == disk) return ErrorCode::OK;
  }
  if (known && !CopyOfVersion(*meta, item.checksum, pinned)) {
    stale_disk_reports_.fetch_add(1, std::memory_order_relaxed);
    return ErrorCode::CHECKSUM_MISMATCH;
  }
  if (meta->replicas.size() >= kMaxReplicas) return ErrorCode::INVALID_PARAMS;
  uint64_t id = next_replica_id_.fetch_add(1, std::memory_order_relaxed);
  meta->replicas.push_back(
      MakeReplica(id, ReplicaStatus::COMPLETE, ReplicaType::LOCAL_DISK, disk, 0));
  Touch(shard, tenant, item.key);
  return ErrorCode::OK;
}

Result<std::vector<ErrorCode>> DirectoryImpl::NotifyOffloadFailure(
    const UUID& client, const std::vector<OffloadFailure>& items) {
  DiskNode* disk = clients_.Disk(client);
  if (disk == nullptr) return ErrorCode::ILLEGAL_CLIENT;
  clients_.Ping(client, Now());
  std::vector<ErrorCode> out;
  out.reserve(items.size());
  for (const OffloadFailure& item : items) {
    std::string_view tenant = EffectiveTenant(item.tenant);
    ErrorCode rc = ValidateTenantKey(tenant, item.key);
    if (rc != ErrorCode::OK) {
      out.push_back(rc);
      continue;
    }
    MetadataShard& shard = ShardOf(tenant, item.key);
    WriterLock lock(&shard.mu);
    uint64_t replica_id = 0;
    if (clients_.Disk(client) != disk ||
        !clients_.FinishInflight(client, tenant, item.key, &replica_id)) {
      out.push_back(ErrorCode::OBJECT_NOT_FOUND);
      continue;
    }
    ObjectMetadata* meta = Find(shard, tenant, item.key);
    if (Unpin(meta, replica_id)) meta->offload_queued_stamp = kCopyFailed;
    disk->copies_failing.store(true, std::memory_order_relaxed);
    offload_failures_.fetch_add(1, std::memory_order_relaxed);
    out.push_back(ErrorCode::OK);
  }
  return out;
}

ErrorCode DirectoryImpl::EvictDiskReplica(const UUID& client, std::string_view tenant,
                                          std::string_view key) {
  tenant = EffectiveTenant(tenant);
  if (ErrorCode rc = ValidateKey(key); rc != ErrorCode::OK) return rc;
  DiskNode* disk = clients_.Disk(client);
  if (disk == nullptr) return ErrorCode::ILLEGAL_CLIENT;
  MetadataShard& shard = ShardOf(tenant, key);
  GroupDrops drops;
  size_t removed;
  {
    WriterLock lock(&shard.mu);
    removed = RemoveReplicas(shard, tenant, key,
                             [disk](const Replica& r) { return r.owner == disk; }, &drops);
  }
  DropGroupMembers(tenant, drops);
  return removed > 0 ? ErrorCode::OK : ErrorCode::OBJECT_NOT_FOUND;
}

void DirectoryImpl::ExpireInflightOffloads() {
  for (const InflightOffload& f : clients_.TakeTimedOutInflight(Now())) {
    MetadataShard& shard = ShardOf(f.tenant, f.key);
    WriterLock lock(&shard.mu);
    Unpin(Find(shard, f.tenant, f.key), f.replica_id);
  }
}

}  // namespace shelfmark
