// Promotion on hit (LOCAL_DISK -> MEMORY; docs/directory.md): a node that
// serves an object from its SSD store often asks for it to come back into
// its own segment. PromoteStart reserves the range (a PromotionTable entry,
// not yet a replica), the node copies the bytes there, PromoteEnd attaches
// the range as a COMPLETE MEMORY replica or gives it back.
#include "common/object_key.h"
#include "directory/directory_impl.h"

namespace shelfmark {
namespace {

// How long a node may take between PromoteStart and PromoteEnd before its
// range is given back.
constexpr int64_t kPromotionTimeoutMs = 60'000;
// Promotions in flight per node at most (a node asks for a few at a time).
constexpr size_t kMaxPromotionsPerNode = 256;

// The id of the disk node's COMPLETE LOCAL_DISK replica of the object; 0
// when it has none.
uint64_t DiskReplicaOf(const ObjectMetadata& meta, const DiskNode* disk) {
  for (const Replica& r : meta.replicas) {
    if (!r.is_memory() && r.owner == disk && r.is_complete()) return r.id;
  }
  return 0;
}

bool HasMemoryReplica(const ObjectMetadata& meta) {
  for (const Replica& r : meta.replicas) {
    if (r.is_memory()) return true;
  }
  return false;
}

}  // namespace

bool DirectoryImpl::RoomToPromote(uint64_t size) const {
  const double capacity = static_cast<double>(segments_.capacity_bytes());
  return static_cast<double>(segments_.allocated_bytes() + size) <=
         options_.eviction_high_watermark_ratio * capacity;
}

PromoteGrant DirectoryImpl::PromoteOne(const UUID& client, const DiskNode* disk,
                                       const PromoteRequest& item) {
  std::string_view tenant = EffectiveTenant(item.tenant);
  ErrorCode rc = ValidateTenantKey(tenant, item.key);
  if (rc == ErrorCode::OK && item.size == 0) rc = ErrorCode::INVALID_PARAMS;
  if (rc != ErrorCode::OK) return {rc, 0};
  MetadataShard& shard = ShardOf(tenant, item.key);
  ReaderLock lock(&shard.mu);
  const ObjectMetadata* meta = Find(shard, tenant, item.key);
  const uint64_t disk_replica = meta == nullptr ? 0 : DiskReplicaOf(*meta, disk);
  if (disk_replica == 0) return {ErrorCode::OBJECT_NOT_FOUND, 0};
  if (meta->size != item.size) return {ErrorCode::INVALID_PARAMS, 0};
  if (HasMemoryReplica(*meta)) return {ErrorCode::OBJECT_ALREADY_EXISTS, 0};
  if (!RoomToPromote(item.size)) {
    promotions_refused_.fetch_add(1, std::memory_order_relaxed);
    return {ErrorCode::NO_AVAILABLE_HANDLE, 0};
  }
  auto placed = segments_.AllocateOwned(client, item.size);
  if (!placed.ok()) {
    promotions_refused_.fetch_add(1, std::memory_order_relaxed);
    return {placed.error(), 0};
  }
  SegmentEntry* seg = placed->segment;
  const int64_t deadline = Now() + kPromotionTimeoutMs;
  const uint64_t held_id = NextHeldId();
  HoldRange(held_id, seg, placed->offset, item.size, deadline, kPromotionTimeoutMs);
  rc = promotions_.Add(client,
                       {std::string(tenant), item.key, disk_replica, seg, placed->offset, item.size,
                        deadline, held_id},
                       kMaxPromotionsPerNode);
  // An unmount that began meanwhile may have dropped the segment's entries
  // before ours was added: take ours back (the shard lock we hold keeps
  // the segment from being erased until we are done).
  if (rc == ErrorCode::OK && seg->unmounting.load()) {
    promotions_.Take(client, tenant, item.key);
    rc = ErrorCode::NO_AVAILABLE_HANDLE;
  }
  if (rc != ErrorCode::OK) {
    ReleaseHeld(held_id);
    FreeRange(seg, placed->offset, item.size);
    return {rc, 0};
  }
  promotions_granted_.fetch_add(1, std::memory_order_relaxed);
  return {ErrorCode::OK, seg->segment.base + placed->offset};
}

// One answer per item from `one(client, disk, item)`, for a client with a
// mounted disk (which this call counts as a ping); else ILLEGAL_CLIENT.
template <typename Answer, typename Item, typename One>
Result<std::vector<Answer>> DirectoryImpl::ForDiskClient(const UUID& client,
                                                         const std::vector<Item>& items,
                                                         One one) {
  const DiskNode* disk = clients_.Disk(client);
  if (disk == nullptr || !clients_.Ping(client, Now())) return ErrorCode::ILLEGAL_CLIENT;
  std::vector<Answer> out;
  out.reserve(items.size());
  for (const Item& item : items) out.push_back((this->*one)(client, disk, item));
  return out;
}

Result<std::vector<PromoteGrant>> DirectoryImpl::PromoteStart(
    const UUID& client, const std::vector<PromoteRequest>& items) {
  return ForDiskClient<PromoteGrant>(client, items, &DirectoryImpl::PromoteOne);
}

ErrorCode DirectoryImpl::FinishPromotion(const UUID& client, const DiskNode* disk,
                                         const PromoteResult& item) {
  std::string_view tenant = EffectiveTenant(item.tenant);
  if (ValidateTenantKey(tenant, item.key) != ErrorCode::OK) return ErrorCode::INVALID_PARAMS;
  MetadataShard& shard = ShardOf(tenant, item.key);
  WriterLock lock(&shard.mu);
  // Taken under the shard lock: an unmount of the segment cannot erase it
  // before this call is done (it sweeps every shard first).
  std::optional<InflightPromotion> p = promotions_.Take(client, tenant, item.key);
  if (!p) return ErrorCode::OBJECT_NOT_FOUND;  // timed out, or a restarted master
  ObjectMetadata* meta = Find(shard, tenant, item.key);
  const bool attach = item.copied && !p->segment->unmounting.load() && meta != nullptr &&
                      meta->size == p->size && DiskReplicaOf(*meta, disk) == p->disk_replica_id &&
                      !HasMemoryReplica(*meta) && meta->replicas.size() < kMaxReplicas;
  if (!attach) {
    ReleaseHeld(p->held_id);
    FreeRange(p->segment, p->offset, p->size);
    promotions_abandoned_.fetch_add(1, std::memory_order_relaxed);
    // Abandoned by the node: given back as asked. Copied but the object
    // changed (removed, replaced, its disk copy gone): not promoted.
    return item.copied ? ErrorCode::OBJECT_NOT_FOUND : ErrorCode::OK;
  }
  uint64_t id = next_replica_id_.fetch_add(1, std::memory_order_relaxed);
  meta->replicas.push_back(
      MakeReplica(id, ReplicaStatus::COMPLETE, ReplicaType::MEMORY, p->segment, p->offset));
  Touch(shard, tenant, item.key);
  ReleaseHeld(p->held_id);  // after the touch, under the shard lock (change_feed.h)
  promoted_.fetch_add(1, std::memory_order_relaxed);
  return ErrorCode::OK;
}

Result<std::vector<ErrorCode>> DirectoryImpl::PromoteEnd(const UUID& client,
                                                         const std::vector<PromoteResult>& items) {
  return ForDiskClient<ErrorCode>(client, items, &DirectoryImpl::FinishPromotion);
}

void DirectoryImpl::ExpirePromotions() {
  promotions_.TakeExpired(Now(), [this](const InflightPromotion& p) {
    ReleaseHeld(p.held_id);
    FreeRange(p.segment, p.offset, p.size);
    promotions_abandoned_.fetch_add(1, std::memory_order_relaxed);
  });
}

}  // namespace shelfmark
