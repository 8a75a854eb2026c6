// DirectoryImpl: the state behind Directory (see directory.h for the
// contracts). Split across directory.cc (objects), directory_nodes.cc
// (segments and clients), directory_offload.cc and eviction.cc.
//
// Thread safety: see directory.h. Lock order: the snapshot lock (taken by
// Directory's methods and the background loop, never by DirectoryImpl's),
// then at most one shard lock at a time; segment and client locks are leaves
// taken inside or outside it.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "directory/change_feed.h"
#include "directory/client_registry.h"
#include "directory/directory.h"
#include "directory/promotion_table.h"
#include "directory/held_ranges.h"
#include "directory/put_reservations.h"
#include "directory/retired_ranges.h"
#include "directory/segment_table.h"
#include "directory/shard.h"
#include "directory/task_table.h"
#include "directory/snapshot_lock.h"

namespace shelfmark {

// Group memberships of erased objects, dropped after the shard lock is
// released (the group's shard may differ from the key's).
using GroupDrops = std::vector<std::pair<std::string, std::string>>;  // group, key
// Objects picked by a sweep of one shard: (tenant, key) pairs.
using Victims = std::vector<std::pair<std::string, std::string>>;
using SelectVictims = std::function<Victims(const TenantMap& tenants)>;

// How long a node may take to report an offload before its pin is dropped
// (directory_offload.cc); a replaced version's pinned range is retired at
// least this long (directory_upsert.cc).
inline constexpr int64_t kOffloadTimeoutMs = 60'000;
// Copy/move tasks the master holds unfinished at most, and finished ones it
// keeps for QueryTask (directory/task_table.h).
inline constexpr size_t kMaxUnfinishedTasks = 10'000;
inline constexpr size_t kMaxFinishedTasks = 10'000;
// One-round-trip puts: reservations one client may hold at once (one per
// put in flight: a client's threads each hold one per key of the put or
// batch they write). What they may hold in bytes is bounded apart
// (put_reservation_share).
inline constexpr size_t kMaxPutReservations = 1024;

// Fills *out (a fresh ObjectState) from the object and its pending
// version (null: none); times relative to `now` (directory_snapshot.cc).
void ExportObject(std::string_view tenant, std::string_view key, const ObjectMetadata& meta,
                  const ObjectMetadata* pending, int64_t now, ObjectState* out);
// The key's pending version in `state` when the object has one, else null.
inline const ObjectMetadata* PendingOf(const TenantState& state, std::string_view key,
                                       const ObjectMetadata& meta) {
  return meta.has_pending ? state.replacing.Find(key) : nullptr;
}

// The tenant (after EffectiveTenant) and key checks every keyed call makes:
// ValidateTenant's code, else ValidateKey's.
ErrorCode ValidateTenantKey(std::string_view tenant, std::string_view key);
// A put's placement a PutStart (or a reservation) cannot take: no size, no
// replica or more than kMaxReplicas.
inline bool BadPlacement(uint64_t size, const PutConfig& config) {
  return size == 0 || config.replica_num == 0 || config.replica_num > kMaxReplicas;
}
// A put's object fields a version cannot take: a negative soft pin, an
// unknown data type.
inline bool BadVersionConfig(const PutConfig& config) {
  return config.soft_pin_ttl_ms < 0 ||
         static_cast<uint8_t>(config.data_type) > static_cast<uint8_t>(DataType::WEIGHT);
}

class DirectoryImpl {
 public:
  explicit DirectoryImpl(DirectoryOptions options);
  ~DirectoryImpl();

  // objects (directory.cc)
  Result<std::vector<ReplicaDescriptor>> PutStart(const UUID& client, std::string_view tenant,
                                                  std::string_view key, uint64_t size,
                                                  const PutConfig& config);
  ErrorCode PutEnd(const UUID& client, std::string_view tenant, std::string_view key,
                   ReplicaType type, std::optional<uint64_t> checksum);
  ErrorCode PutRevoke(const UUID& client, std::string_view tenant, std::string_view key,
                      ReplicaType type);
  // one-round-trip puts (directory_reservations.cc)
  Result<PutReservationGrant> ReservePut(const UUID& client, uint64_t size,
                                         const PutConfig& config);
  CommitPutResult CommitPut(const UUID& client, std::string_view tenant, std::string_view key,
                            uint64_t id, const PutConfig& config, bool renew);
  Result<std::vector<PutReservationGrant>> BatchReservePut(const UUID& client,
                                                           const std::vector<uint64_t>& sizes,
                                                           const PutConfig& config);
  std::vector<CommitPutResult> BatchCommitPut(const UUID& client, std::string_view tenant,
                                              std::span<const std::string_view> keys,
                                              const std::vector<uint64_t>& ids,
                                              const std::vector<uint64_t>& checksums,
                                              const PutConfig& config, bool renew);
  Result<GetReplicaListResponse> GetReplicaList(std::string_view tenant, std::string_view key);
  ErrorCode GetReplicaListInto(std::string_view tenant, std::string_view key,
                               GetReplicaListResponse* out);
  Result<bool> ExistKey(std::string_view tenant, std::string_view key);

  // batches (directory_batches.cc): one answer per key, in order, each as
  // the one-key call's; a key's shard and hash are computed once, the clock
  // is read once per batch and the keys' cache misses overlap
  // (directory/batch_pipeline.h).
  using Keys = std::span<const std::string_view>;
  std::vector<Result<std::vector<ReplicaDescriptor>>> BatchPutStart(
      const UUID& client, std::string_view tenant, Keys keys, const std::vector<uint64_t>& sizes,
      const PutConfig& config, const std::vector<uint64_t>& checksums);
  std::vector<ErrorCode> BatchPutEnd(const UUID& client, std::string_view tenant, Keys keys,
                                     ReplicaType type, const std::vector<uint64_t>& checksums);
  std::vector<ErrorCode> BatchPutRevoke(const UUID& client, std::string_view tenant, Keys keys,
                                        ReplicaType type);
  // visit(i, code, response) per key; `response` is scratch reused by every
  // key (valid during the call only).
  void BatchGetReplicaList(std::string_view tenant, Keys keys, GetReplicaListResponse* scratch,
                           const BatchReplicaListVisitor& visit);
  std::vector<Result<bool>> BatchExistKey(std::string_view tenant, Keys keys);
  std::vector<ErrorCode> BatchRemove(std::string_view tenant, Keys keys, bool force);

  Result<ObjectInfo> Stat(std::string_view tenant, std::string_view key);
  std::vector<std::string> ListKeys(std::string_view tenant, std::string_view prefix,
                                    size_t limit);
  uint64_t CountKeys(std::string_view tenant, bool all_tenants);
  Result<std::vector<std::string>> GroupMembers(std::string_view tenant,
                                                std::string_view group_id);
  ErrorCode Remove(std::string_view tenant, std::string_view key, bool force);
  uint64_t RemoveAll(std::string_view tenant, bool all_tenants, bool force);
  Result<uint64_t> RemoveByRegex(std::string_view tenant, std::string_view pattern, bool force);

  // segments and clients (directory_nodes.cc)
  ErrorCode MountSegment(const UUID& client, const Segment& segment);
  ErrorCode UnmountSegment(const UUID& client, const UUID& segment_id);
  ErrorCode DrainSegment(const UUID& client, const UUID& segment_id);
  PingResponse Ping(const UUID& client);
  ErrorCode MountLocalDisk(const UUID& client, bool enable_offloading, std::string_view endpoint);
  void ExpireClients();
  void SetServing(bool serving);

  // offload (directory_offload.cc)
  Result<std::vector<OffloadTask>> OffloadHeartbeat(const UUID& client, size_t max_tasks);
  Result<std::vector<ErrorCode>> NotifyOffloadSuccess(const UUID& client,
                                                      const std::vector<OffloadedObject>& items);
  ErrorCode EvictDiskReplica(const UUID& client, std::string_view tenant, std::string_view key);
  Result<std::vector<ErrorCode>> NotifyOffloadFailure(const UUID& client,
                                                      const std::vector<OffloadFailure>& items);
  void ExpireInflightOffloads();
  // Adds the disk node's COMPLETE LOCAL_DISK replica (creating the object if
  // unknown, with the report's checksum). To an object it holds, only a copy
  // shown to be of that version: checksums equal, or, where either side has
  // none, `pinned` (the copy is of the replica this master pinned for it);
  // else CHECKSUM_MISMATCH, counted. Caller holds the shard exclusively.
  ErrorCode AddDiskReplica(MetadataShard& shard, std::string_view tenant,
                           const OffloadedObject& item, const UUID& client, const DiskNode* disk,
                           bool pinned) REQUIRES(shard.mu);

  // promotion on hit (directory_promotion.cc)
  Result<std::vector<PromoteGrant>> PromoteStart(const UUID& client,
                                                 const std::vector<PromoteRequest>& items);
  Result<std::vector<ErrorCode>> PromoteEnd(const UUID& client,
                                            const std::vector<PromoteResult>& items);
  // Gives back the ranges of promotions not reported in time.
  void ExpirePromotions();
  // Places and records a reservation like `model` (size, placement) for
  // `client`, its deadline counted from `now`. Caller holds a shard lock
  // (any): an unmount then cannot erase a segment it placed in before the
  // unmounting check that follows the record.
  Result<PutReservationGrant> GrantReservation(const PutReservation& model, int64_t now);
  // A reservation of `client` placed as `config` says (its size left 0).
  static PutReservation ReservationModel(const UUID& client, const PutConfig& config);
  // Gives back a reservation's ranges (counted as released).
  void ReleaseReservation(const PutReservation& r);
  // Its held ranges released, then its ranges freed.
  void GiveBackRanges(const PutReservation& r);
  // Gives back reservations past their deadline, and those of `clients`.
  void ExpireReservations();
  void DropClientReservations(const std::vector<UUID>& clients);

  // copy and move tasks (directory_tasks.cc; see directory.h)
  Result<UUID> CreateTask(const UUID& client, std::string_view tenant, const TaskSpec& spec);
  Result<TaskInfo> QueryTask(std::string_view tenant, const UUID& id);
  Result<TaskGrant> TaskStart(const UUID& client, std::string_view tenant, const UUID& id);
  ErrorCode TaskEnd(const UUID& client, std::string_view tenant, const UUID& id, ErrorCode copied);
  // Fails the tasks not started or reported in time, giving back their ranges.
  void ExpireTasks();

  // upserts (directory_upsert.cc). The TenantState& ones: the caller holds
  // the state's shard exclusively.
  // PutStart with replace on a key whose live object has a COMPLETE
  // replica: places the pending version. OBJECT_ALREADY_EXISTS while
  // another (not stale) is pending.
  Result<std::vector<ReplicaDescriptor>> StartReplacement(TenantState& state,
                                                          std::string_view key,
                                                          const UUID& client, uint64_t size,
                                                          const PutConfig& config,
                                                          ObjectMetadata& live, int64_t now);
  // PutEnd of a pending version: swaps it in, retires the old one. Group
  // changes for after the lock: the old group to leave in *drops, the new
  // one to join in *joined.
  ErrorCode FinishReplacement(TenantState& state, std::string_view tenant, std::string_view key,
                              const UUID& client, ObjectMetadata& live, GroupDrops* drops,
                              std::string* joined, std::optional<uint64_t> checksum);
  // PutRevoke of a pending version (ILLEGAL_CLIENT for another writer).
  ErrorCode RevokeReplacement(TenantState& state, std::string_view key, const UUID& client);
  // Frees the key's pending version, if any, and clears its live object's
  // has_pending.
  void DropPending(TenantState& state, std::string_view key);
  // The replaced version's MEMORY ranges: to RetiredRanges until its lease
  // deadline (and an offload pin's timeout), or freed now when none is live.
  void RetireVersion(const ObjectMetadata& old, int64_t now);
  // One MEMORY replica of `meta` (already out of its list) retired the same
  // way (a moved replica's source too).
  void RetireReplica(const ObjectMetadata& meta, const Replica& r, int64_t now);
  // Removes the pending versions' replicas that `owned` picks (their owner
  // goes); drops the versions left without one.
  void PurgePendingReplicas(MetadataShard& shard,
                            const std::function<bool(const Replica&)>& owned);
  // Drops the shard's pending versions started before `cutoff`.
  void ReclaimStaleReplacements(MetadataShard& shard, int64_t cutoff);
  // Gives back the retired ranges whose deadline passed.
  void ReleaseRetired();

  // eviction (eviction.cc)
  // The background thread's check: evicts above the watermark or after a
  // failed allocation.
  void EvictIfNeeded() EXCLUDES(eviction_mu_);
  // A put that found no room for `need` bytes: evicts at least that much
  // now (unless a fruitless pass backs off). True when the put may retry.
  bool EvictForPut(uint64_t need) EXCLUDES(eviction_mu_);
  // Per queue of the policy, the last use at or below which evicting
  // candidates frees about `target` bytes in all.
  EvictionCutoffs EvictionCutoff(int64_t now, uint64_t target, bool soft);
  // Evicts candidates up to the cutoffs; returns the bytes freed.
  uint64_t EvictPass(int64_t now, uint64_t target, bool soft);
  // Both passes (soft pins second), counted; backs off when fruitless.
  uint64_t RunEviction(uint64_t target) REQUIRES(eviction_mu_);
  // eviction_ratio of `capacity`, at least 1 byte.
  uint64_t RatioTarget(uint64_t capacity) const;
  // Counts an object eviction takes.
  void NoteEvicted(const ObjectMetadata& meta);
  // The use clock's next tick (ObjectMetadata::use_stamp).
  uint64_t NextUseTick() { return use_clock_.fetch_add(1, std::memory_order_relaxed) + 1; }

  // snapshots (directory_snapshot.cc); see directory.h
  ShardState ExportShard(uint32_t index) const;
  SegmentsState ExportSegments() const;
  SegmentsState ExportSegmentTable() const;
  // change feed (directory_changes.cc); see directory.h
  void EnableChangeTracking() { feed_.Enable(); }
  uint64_t ChangeSeq() const { return feed_.seq(); }
  ChangeSet TakeChanges();
  std::vector<HeldRangeState> ExportHeldRanges() const { return held_.Export(Now()); }
  TasksState ExportTasks() const;
  ErrorCode RestoreSegments(const SegmentsState& state);
  ErrorCode RestoreShard(const ShardState& state, UnfinishedPuts unfinished);
  ErrorCode RestoreTasks(const TasksState& state);
  ErrorCode RestoreHeldRanges(const std::vector<HeldRangeState>& held);
  void Clear();

  void ReclaimStalePuts();
  void RunBackgroundOnce();
  void StartBackgroundThread();
  DirectoryStats Stats() const;
  const DirectoryOptions& options() const { return options_; }

 private:
  friend class Directory;

  int64_t Now() const { return clock_->NowMs(); }
  MetadataShard& ShardOf(std::string_view tenant, std::string_view key) {
    return shards_[ShardIndex(tenant, key)];
  }
  // The object or null. Caller holds the shard lock (shared or exclusive).
  ObjectMetadata* Find(MetadataShard& shard, std::string_view tenant, std::string_view key)
      REQUIRES_SHARED(shard.mu) {
    return Find(shard, tenant, key, KeyMap<ObjectMetadata>::Hash(key));
  }
  // The same with the key's object-map hash computed (`hash` ==
  // KeyMap<ObjectMetadata>::Hash(key)).
  ObjectMetadata* Find(MetadataShard& shard, std::string_view tenant, std::string_view key,
                       uint64_t hash) REQUIRES_SHARED(shard.mu);

  // A key of a call, located once: its shard and its object-map hash.
  struct KeyRef {
    std::string_view key;
    MetadataShard* shard;
    uint64_t hash;  // KeyMap<ObjectMetadata>::Hash(key)
  };
  KeyRef Locate(std::string_view tenant, std::string_view key) {
    return {key, &ShardOf(tenant, key), KeyMap<ObjectMetadata>::Hash(key)};
  }
  // The one-key calls on a located key, `now` read by the caller (once per
  // batch). The public one-key calls are these on Locate's key.
  Result<std::vector<ReplicaDescriptor>> PutStartAt(const UUID& client, std::string_view tenant,
                                                    const KeyRef& k, uint64_t size,
                                                    const PutConfig& config, int64_t now);
  // CommitPut of a located key (`tenant` effective, the input checked), at `now`.
  CommitPutResult CommitPutAt(const UUID& client, std::string_view tenant, const KeyRef& k,
                              uint64_t id, const PutConfig& config, bool renew, int64_t now);
  ErrorCode PutEndAt(const UUID& client, std::string_view tenant, const KeyRef& k, ReplicaType type,
                     std::optional<uint64_t> checksum);
  ErrorCode PutRevokeAt(const UUID& client, std::string_view tenant, const KeyRef& k,
                        ReplicaType type);
  ErrorCode GetReplicaListAt(std::string_view tenant, const KeyRef& k, int64_t now,
                             GetReplicaListResponse* out);
  Result<bool> ExistKeyAt(std::string_view tenant, const KeyRef& k, int64_t now);
  ErrorCode RemoveAt(std::string_view tenant, const KeyRef& k, bool force, int64_t now);
  // The batch loop: locates every key, then runs visit(i, key i located)
  // in order with the keys' slots and entries prefetched ahead
  // (RunPipelined, under each shard's reader lock for the moment of the
  // prefetch). `tenant` is effective.
  template <typename Visit>
  void ForBatch(std::string_view tenant, Keys keys, Visit&& visit);
  // ForBatch collecting one(i, key i located) per key, in order; `tenant`
  // as the caller got it.
  template <typename Answer, typename One>
  std::vector<Answer> Collect(std::string_view tenant, Keys keys, One&& one);
  // ForBatch's two prefetch steps for a key of the (effective) tenant.
  void PrefetchSlot(std::string_view tenant, const KeyRef& k);
  void PrefetchEntry(std::string_view tenant, const KeyRef& k);
  ReplicaDescriptor Describe(const ObjectMetadata& meta, const Replica& r) const;
  // Describe into *d, reusing its strings' capacity.
  void DescribeInto(const ObjectMetadata& meta, const Replica& r, ReplicaDescriptor* d) const;
  // Tasks (directory_tasks.cc): the object checks of CreateTask and
  // TaskStart (see directory.h for the codes); the targets' ranges, all or
  // none; whether TaskEnd may attach a task's ranges.
  ErrorCode CheckTask(const ObjectMetadata* meta, const TaskSpec& spec) const;
  ErrorCode ReserveTargets(const TaskSpec& spec, uint64_t size, std::vector<TaskReservation>* out);
  bool TaskAttachable(const ObjectMetadata* meta, const TaskEntry& task) const;
  // Gives a task's reserved range back (held range released, then freed).
  void GiveBack(const TaskReservation& r);
  // A new put of a key that holds `old` (not an upsert): OBJECT_ALREADY_EXISTS
  // (a use of it, when stored) unless `old` is an unfinished put older than
  // the discard timeout, which is erased (OK). Caller holds the shard
  // exclusively.
  ErrorCode ClaimKey(MetadataShard& shard, std::string_view tenant, std::string_view key,
                     ObjectMetadata& old, int64_t now, GroupDrops* drops) REQUIRES(shard.mu);
  // One attempt of PutStart (which evicts and retries once on no room).
  Result<std::vector<ReplicaDescriptor>> TryPutStart(const UUID& client, std::string_view tenant,
                                                     const KeyRef& k, uint64_t size,
                                                     const PutConfig& config, int64_t now);
  // Uses a new object of the key starts with: 1, or 2 when 2Q's ghost list
  // of the shard remembered the key (taken from it). Caller holds the
  // shard's writer lock.
  uint32_t FirstUses(MetadataShard& shard, std::string_view tenant, std::string_view key)
      REQUIRES(shard.mu);
  // Places `config.replica_num` MEMORY replicas of `size` bytes. On failure
  // wakes eviction when it could help, else counts an unplaceable put.
  Result<std::vector<Placement>> PlaceReplicas(uint64_t size, const PutConfig& config);
  // Fills a fresh version from a put (writer, start, size, checksum, pins,
  // data type, group) with PROCESSING replicas at `placed`; returns their
  // descriptors.
  std::vector<ReplicaDescriptor> InitVersion(ObjectMetadata& meta, const UUID& client,
                                             uint64_t size, const PutConfig& config,
                                             int64_t now, const std::vector<Placement>& placed);
  // The same without the descriptors, its replicas in `status`.
  void FillVersion(ObjectMetadata& meta, const UUID& client, uint64_t size,
                   const PutConfig& config, int64_t now, const std::vector<Placement>& placed,
                   ReplicaStatus status);
  // A MEMORY descriptor of `size` bytes at `offset` in the segment.
  static void DescribeMemory(const SegmentEntry& segment, uint64_t offset, uint64_t size,
                             MemoryDescriptor* m);
  // PutEnd of an ordinary put: its PROCESSING replicas of `type` COMPLETE.
  ErrorCode FinishPut(TenantState& state, std::string_view tenant, std::string_view key,
                      const UUID& client, ObjectMetadata& meta, ReplicaType type,
                      std::optional<uint64_t> checksum);
  // PutEnd's checksum onto the version it finishes (before it turns
  // COMPLETE): INVALID_PARAMS, version unchanged, when it differs from the
  // one PutStart gave; none leaves the version as it is.
  static ErrorCode AdoptEndChecksum(ObjectMetadata& version, std::optional<uint64_t> checksum);
  // Frees a range of a segment. A range an exported object held is freed
  // only after its key was touched (change_feed.h, "Frees"). Every free of
  // the directory goes here.
  void FreeRange(SegmentEntry* segment, uint64_t offset, uint64_t size) {
    segments_.Free(segment, offset, size);
  }
  void FreeReplica(const ObjectMetadata& meta, const Replica& r);
  // Frees every replica, erases the object and, when its tenant becomes
  // empty, the tenant. Caller holds the shard exclusively.
  void EraseObject(MetadataShard& shard, std::string_view tenant, std::string_view key,
                   GroupDrops* drops) REQUIRES(shard.mu);
  // Removes replicas matching `pred` from the object (freeing them); erases
  // the object when none remain. Returns the number removed.
  size_t RemoveReplicas(MetadataShard& shard, std::string_view tenant, std::string_view key,
                        const std::function<bool(const Replica&)>& pred, GroupDrops* drops)
      REQUIRES(shard.mu);
  // Under the shard's write lock, removes the replicas matching `pred` of
  // every object `select` picks (objects left without replicas are erased);
  // then drops the erased objects' group memberships. Returns how many
  // objects were picked.
  size_t SweepShard(MetadataShard& shard, const SelectVictims& select,
                    const std::function<bool(const Replica&)>& pred);
  // RemoveAll's sweep, restricted to the keys `match` accepts: removes every
  // object of the tenant (every tenant when `all_tenants`) that is removable
  // (`force`, or no live lease, no reference and a COMPLETE replica) and
  // matches. Returns how many were removed.
  uint64_t RemoveMatching(std::string_view tenant, bool all_tenants, bool force,
                          const std::function<bool(std::string_view key)>& match);
  // Scans every shard and removes the replicas whose owner is in `owners`.
  void PurgeOwners(const std::vector<const void*>& owners);
  void AddGroupMember(std::string_view tenant, const std::string& group, std::string_view key);
  void DropGroupMembers(std::string_view tenant, const GroupDrops& drops);
  // Queues the copy of `meta` to the SSD store of a node holding one of its
  // COMPLETE MEMORY replicas (one that mounted a disk with offloading) and
  // stamps the object; false when no such node exists, its queue is full
  // (offloading_queue_limit) or offload is disabled. Under the shard's
  // writer lock.
  bool QueueOffloadFor(std::string_view tenant, std::string_view key, const ObjectMetadata& meta);
  // The node whose SSD store should hold a copy of `meta` before its MEMORY
  // replicas go (null: none can: offload disabled, a disk copy exists, or no
  // owner has a disk that offloads).
  const DiskNode* OffloadTier(const ObjectMetadata& meta) const;
  // Eviction's question for a candidate under its shard's writer lock: may
  // its MEMORY replicas go now? No while an SSD tier can take it and the
  // copy is not done: the copy is (re)queued unless one was queued lately;
  // yes without a copy only with offload_force_evict and a full queue.
  bool MayEvictNow(std::string_view tenant, std::string_view key, const ObjectMetadata& meta,
                   int64_t now);
  template <typename Answer, typename Item, typename One>
  Result<std::vector<Answer>> ForDiskClient(const UUID& client, const std::vector<Item>& items,
                                            One one);
  // One item of PromoteStart / PromoteEnd.
  PromoteGrant PromoteOne(const UUID& client, const DiskNode* disk, const PromoteRequest& item);
  ErrorCode FinishPromotion(const UUID& client, const DiskNode* disk, const PromoteResult& item);
  // Whether `size` more bytes keep DRAM at or under the eviction watermark
  // (a promotion never makes eviction run).
  bool RoomToPromote(uint64_t size) const;
  // Unmount's first step after marking segments unmounting: drops their
  // promotions in flight (before their replicas are purged and they are
  // erased; see PromotionTable).
  void DropReservationsOn(const std::vector<SegmentEntry*>& segments);
  // Unmount's step after the purge, before the erase: drops the retired
  // ranges in the segments. After, not before, the purge: a PutEnd swapping
  // in a new version retires the old one's range while its shard still
  // holds a replica in the segment, which the purge's sweep of that shard
  // ends; so no range of the segment is retired once the purge returned.
  void DropRetiredOn(const std::vector<SegmentEntry*>& segments);
  // Records a change of the object (tenant, key) of `shard` for the change
  // feed (a no-op while it is off). Caller holds the shard exclusively.
  void Touch(MetadataShard& shard, std::string_view tenant, std::string_view key)
      REQUIRES(shard.mu);
  // Holds a range no object holds under `id` (held_ranges.h), for the
  // change feed: before the range is handed to whoever writes into it.
  void HoldRange(uint64_t id, const SegmentEntry* segment, uint64_t offset, uint64_t size,
                 int64_t until_ms, int64_t min_remaining_ms = 0) {
    const bool track = feed_.enabled();
    held_.Add({id, segment, segment->segment.id, offset, size, until_ms, min_remaining_ms}, track);
    if (track) feed_.MarkHeld();
  }
  // Gives back the held range `id` (no-op when none): before its range is
  // freed, or, when it becomes an object's replica, with the key touched
  // under the same shard lock.
  void ReleaseHeld(uint64_t id) {
    const bool track = feed_.enabled();
    if (held_.Release(id, track) && track) feed_.MarkHeld();
  }
  // A fresh id for a held range (from the replica ids: unique).
  uint64_t NextHeldId() { return next_replica_id_.fetch_add(1, std::memory_order_relaxed); }
  // Records a change of the segment table.
  void TouchSegments() {
    if (feed_.enabled()) feed_.MarkSegments();
  }
  // The changed objects of shard `index` into out's one ShardState (and the
  // vanished ones into out->removed).
  void TakeShardChanges(size_t index, ChangeSet* out);
  void BackgroundLoop();
  // Raises next_replica_id_ to at least `id`.
  void RaiseNextReplicaId(uint64_t id);

  DirectoryOptions options_;
  SnapshotLock snapshot_lock_;
  std::unique_ptr<Clock> owned_clock_;
  const Clock* clock_;
  std::array<MetadataShard, kShardCount> shards_;
  SegmentTable segments_;
  ClientRegistry clients_;
  PromotionTable promotions_;
  TaskTable tasks_{kMaxUnfinishedTasks, kMaxFinishedTasks};
  ChangeFeed feed_;
  RetiredRanges retired_;
  HeldRanges held_;
  PutReservations reservations_;
  std::atomic<uint64_t> reservations_granted_{0};
  std::atomic<uint64_t> reservations_committed_{0};
  std::atomic<uint64_t> reservations_released_{0};
  const uint64_t initial_view_version_;
  std::atomic<uint64_t> view_version_;
  std::atomic<uint64_t> next_replica_id_{1};
  std::atomic<uint64_t> key_count_{0};
  std::atomic<bool> allocation_failed_{false};
  std::atomic<uint64_t> evicted_objects_{0};
  std::atomic<uint64_t> evicted_bytes_{0};
  std::atomic<uint64_t> evicted_without_copy_{0};
  std::atomic<uint64_t> offload_waits_{0};
  std::atomic<uint64_t> offload_failures_{0};  // copies nodes reported they could not make
  std::atomic<uint64_t> eviction_runs_{0};
  std::atomic<uint64_t> promotions_granted_{0};
  std::atomic<uint64_t> promoted_{0};
  std::atomic<uint64_t> promotions_refused_{0};
  std::atomic<uint64_t> promotions_abandoned_{0};
  std::atomic<uint64_t> unplaceable_puts_{0};
  std::atomic<uint64_t> superseded_segments_{0};
  std::atomic<uint64_t> superseded_disks_{0};
  std::atomic<uint64_t> stale_disk_reports_{0};
  std::atomic<uint64_t> upserts_{0};
  std::atomic<uint64_t> background_runs_{0};
  std::atomic<int64_t> eviction_backoff_until_ms_{0};
  std::atomic<int64_t> puts_wait_for_copies_until_ms_{0};
  std::atomic<uint64_t> evicted_unread_{0};
  std::atomic<uint64_t> eviction_ghost_hits_{0};
  std::atomic<uint64_t> eviction_runs_for_puts_{0};
  std::atomic<size_t> eviction_start_shard_{0};
  std::atomic<uint64_t> use_clock_{0};
  // One eviction pass at a time: the background thread's or a put's.
  Mutex eviction_mu_;

  Mutex background_mu_;
  // _any: waits on a MutexLock (a plain std::condition_variable needs a
  // std::unique_lock<std::mutex>, which the analysis cannot see).
  std::condition_variable_any background_cv_;
  bool stopping_ GUARDED_BY(background_mu_) = false;
  std::thread background_;
};

}  // namespace shelfmark
