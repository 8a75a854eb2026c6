// Directory: the master's whole in-memory state (objects, replicas, leases,
// pins, groups, tenants, segments, clients) and its rules. No I/O, no RPC.
//
// Thread safety: every public method may be called from any thread
// concurrently. Objects live in 1024 shards, each behind a reader-writer
// lock; reads (GetReplicaList, ExistKey, Stat) take a shard shared, writes
// take it exclusively; no call holds two shard locks at once. Segments and
// clients live behind their own locks (taken after, never before, a shard
// lock is released, except the segment allocator lock which is a leaf).
//
// Invariants:
//  - a MEMORY replica's bytes lie inside a mounted segment, allocated from
//    that segment's allocator, until the replica is removed;
//  - GetReplicaList returns only COMPLETE replicas;
//  - an object with a live lease is neither evicted nor removed unless forced;
//  - an object without replicas does not exist (it is erased);
//  - an empty tenant state is erased.
//
// Snapshot lock: every public method except Stats() and options() holds the
// directory's snapshot lock shared for its whole duration (a batch once for
// all its items), and so does each pass of the background thread;
// RunPaused() holds it exclusively. See "snapshots" below.
//
// Every call takes a tenant; "" means the default tenant.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "common/task_types.h"
#include "directory/directory_state.h"
#include "directory/eviction_policy.h"
#include "common/types.h"

namespace shelfmark {

struct DirectoryOptions {
  int64_t default_kv_lease_ttl_ms = 10'000;
  int64_t client_ttl_ms = 10'000;
  // Eviction (docs/directory.md, "Eviction"): above the watermark the
  // background thread frees `eviction_ratio` of capacity (at least back
  // under the mark); a put that finds no room evicts at once and retries.
  double eviction_ratio = 0.02;
  double eviction_high_watermark_ratio = 0.98;
  EvictionPolicy eviction_policy = EvictionPolicy::k2q;
  // 2Q: the share of capacity objects used once (put, never read) may hold
  // before they are evicted ahead of reused ones.
  double eviction_probation_ratio = 0.2;
  // An unfinished put older than this may be replaced by a new PutStart.
  int64_t put_start_discard_timeout_ms = 30'000;
  // An unfinished put older than this is reclaimed by the background thread.
  int64_t put_start_release_timeout_ms = 600'000;
  // A put reservation (ReservePut) not committed within this is given
  // back; its client uses it for at most half of it.
  int64_t put_reservation_ttl_ms = 20'000;
  // The share of the mounted capacity all put reservations together may
  // hold (memory nobody else may use until their deadline).
  double put_reservation_share = 0.01;
  bool enable_offload = false;
  // Tiering (docs/directory.md, "Eviction with an SSD tier"), Mooncake's
  // flags of the same names. With offload enabled and an SSD tier that can
  // take an object (the owner of its MEMORY replica mounted a local disk
  // with offloading), eviction drops its MEMORY replica only once a
  // LOCAL_DISK replica exists; it queues the copy when none is queued.
  //  - offload_on_evict: copy at eviction time only (PutEnd queues nothing);
  //  - offload_force_evict: an object whose owner's offload queue is full
  //    (offloading_queue_limit) is evicted without a copy instead of waiting;
  //  - offloading_queue_limit: offload tasks queued per node at most.
  bool offload_on_evict = false;
  bool offload_force_evict = false;
  uint64_t offloading_queue_limit = 50'000;
  // Period of the background thread (eviction, client expiry, stale puts).
  int64_t background_period_ms = 100;
  // Start the background thread in the constructor. Tests drive
  // RunBackgroundOnce() by hand instead.
  bool start_background_thread = true;
  // Batches prefetch their keys' map lines (directory/batch_pipeline.h)
  // once the directory holds this many keys; below, its maps stay in the
  // caches and the prefetch steps would cost more than they hide. Tests
  // set 0 to run the prefetching path on a small directory.
  uint64_t batch_prefetch_min_keys = 1 << 16;
  const Clock* clock = nullptr;  // nullptr: a SteadyClock owned by Directory
};

class DirectoryImpl;

// A batch lookup's answer for key `index` (Directory::BatchGetReplicaList).
using BatchReplicaListVisitor =
    std::function<void(size_t index, ErrorCode code, const GetReplicaListResponse& response)>;

class Directory {
 public:
  explicit Directory(DirectoryOptions options);
  ~Directory();
  Directory(const Directory&) = delete;
  Directory& operator=(const Directory&) = delete;

  // --- segments and clients -------------------------------------------------
  // Registers `client` (as alive now) and its segment. INVALID_PARAMS for a
  // zero size, nil id, empty name or a range that overlaps another mounted
  // segment of the same endpoint; SEGMENT_ALREADY_EXISTS for a mounted id
  // (OK and no change when the same client re-mounts an identical segment).
  ErrorCode MountSegment(const UUID& client, const Segment& segment);
  // Removes the segment and every replica inside it (objects left without
  // replicas are erased). SEGMENT_NOT_FOUND / ILLEGAL_CLIENT (not the owner).
  ErrorCode UnmountSegment(const UUID& client, const UUID& segment_id);
  // Starts a graceful unmount's grace period: the segment takes no new
  // allocations (puts, copies, promotions, reservations place elsewhere)
  // while its replicas are still served, until the owner's UnmountSegment.
  // Puts already placed there complete. OK also when already draining;
  // SEGMENT_NOT_FOUND / ILLEGAL_CLIENT (not the owner).
  ErrorCode DrainSegment(const UUID& client, const UUID& segment_id);
  // Marks `client` alive. Unknown client: status NEED_REMOUNT.
  PingResponse Ping(const UUID& client);
  // Registers the client's SSD store (it can then hold LOCAL_DISK replicas).
  ErrorCode MountLocalDisk(const UUID& client, bool enable_offloading,
                           std::string_view endpoint);

  // --- puts -----------------------------------------------------------------
  // Allocates `config.replica_num` MEMORY replicas (PROCESSING) on distinct
  // segments, preferred ones first. OBJECT_ALREADY_EXISTS if the key exists
  // (unless it is an unfinished put older than the discard timeout, which is
  // reclaimed), NO_AVAILABLE_HANDLE when space cannot be found (wakes
  // eviction), INVALID_KEY / INVALID_PARAMS for bad input.
  Result<std::vector<ReplicaDescriptor>> PutStart(const UUID& client, std::string_view tenant,
                                                  std::string_view key, uint64_t size,
                                                  const PutConfig& config);
  // Marks the client's PROCESSING replicas of `type` COMPLETE. ILLEGAL_CLIENT
  // when `client` did not start this put. `checksum`: the value's checksum
  // when PutStart did not carry one (a writer that hashes while it copies);
  // stored on the object before it turns COMPLETE. One that differs from
  // PutStart's is INVALID_PARAMS and the put stays unfinished.
  ErrorCode PutEnd(const UUID& client, std::string_view tenant, std::string_view key,
                   ReplicaType type = ReplicaType::MEMORY,
                   std::optional<uint64_t> checksum = std::nullopt);
  // Drops the PROCESSING replicas of `type` (and the object if none remain).
  ErrorCode PutRevoke(const UUID& client, std::string_view tenant, std::string_view key,
                      ReplicaType type = ReplicaType::MEMORY);

  // --- one-round-trip puts (docs/directory.md, "One-round-trip puts") -------
  // Reserves `config.replica_num` MEMORY ranges of `size` for the client's
  // next put (placed as PutStart places, without running eviction): no
  // object yet, nothing a lookup sees. NO_AVAILABLE_HANDLE when they cannot
  // be placed, the client holds kMaxPutReservations already, or all
  // reservations would hold more than put_reservation_share of the capacity;
  // INVALID_PARAMS for bad input. The ranges are held ranges (hot standbys
  // hold them until the deadline).
  Result<PutReservationGrant> ReservePut(const UUID& client, uint64_t size,
                                         const PutConfig& config);
  // Names `key` for the client's reservation `id`, whose ranges the client
  // wrote the value into: the object is created COMPLETE there at once
  // (size: the reservation's; checksum, pins, data type, group: `config`'s;
  // its placement fields are ignored). Codes: LEASE_EXPIRED (no such
  // reservation of this client: given back, or never granted; or one in a
  // segment draining since, which is given back now; no object made),
  // OBJECT_ALREADY_EXISTS (as PutStart's; the reservation is
  // kept), INVALID_KEY / INVALID_PARAMS (bad input, `config.replace`
  // included; kept). After an OK commit with `renew`, `next` is a new
  // reservation of the same size and placement when one can be placed.
  CommitPutResult CommitPut(const UUID& client, std::string_view tenant, std::string_view key,
                            uint64_t id, const PutConfig& config, bool renew);
  // A batch's puts in one round trip: BatchReservePut reserves one range
  // set per size, all or none (the first refusal's code, as ReservePut's,
  // and nothing kept); BatchCommitPut commits keys[i] into reservation
  // ids[i] as CommitPut does, one result per key in order, with
  // checksums[i] as key i's checksum when `checksums` is not empty (another
  // length than the keys', or ids of another length: INVALID_PARAMS for
  // every key, nothing committed).
  Result<std::vector<PutReservationGrant>> BatchReservePut(const UUID& client,
                                                           const std::vector<uint64_t>& sizes,
                                                           const PutConfig& config);
  std::vector<CommitPutResult> BatchCommitPut(const UUID& client, std::string_view tenant,
                                              std::span<const std::string_view> keys,
                                              const std::vector<uint64_t>& ids,
                                              const std::vector<uint64_t>& checksums,
                                              const PutConfig& config, bool renew);

  // --- reads ----------------------------------------------------------------
  // COMPLETE replicas of the key and grants a read lease. OBJECT_NOT_FOUND;
  // REPLICA_IS_NOT_READY when the object exists but none is COMPLETE.
  Result<GetReplicaListResponse> GetReplicaList(std::string_view tenant, std::string_view key);
  // GetReplicaList into *out, reusing its memory (a caller answering many
  // lookups keeps one): no allocation once *out has held a reply this large.
  // On an error *out holds an unspecified valid state.
  ErrorCode GetReplicaListInto(std::string_view tenant, std::string_view key,
                               GetReplicaListResponse* out);
  // true when the key has a COMPLETE replica (grants a read lease).
  Result<bool> ExistKey(std::string_view tenant, std::string_view key);
  // Everything about one object, without granting a lease.
  Result<ObjectInfo> Stat(std::string_view tenant, std::string_view key);
  // Keys of the tenant that start with `prefix`, sorted, at most `limit`.
  std::vector<std::string> ListKeys(std::string_view tenant, std::string_view prefix,
                                    size_t limit);
  // Number of objects of the tenant ("" = default), or of all tenants when
  // `all_tenants`.
  uint64_t CountKeys(std::string_view tenant, bool all_tenants);
  // Members of a group, sorted.
  Result<std::vector<std::string>> GroupMembers(std::string_view tenant,
                                                std::string_view group_id);

  // --- removal --------------------------------------------------------------
  // OBJECT_HAS_LEASE for a leased object unless `force`; OBJECT_HAS_REFERENCE
  // while a replica is being copied (offload) unless `force`.
  ErrorCode Remove(std::string_view tenant, std::string_view key, bool force);
  // Removes every removable object of the tenant (every tenant when
  // `all_tenants`); returns how many were removed.
  uint64_t RemoveAll(std::string_view tenant, bool all_tenants, bool force);
  // Removes the tenant's objects whose key matches `pattern` under
  // RemoveAll's rules (unless `force`: only objects without a live lease or
  // a reference and with a COMPLETE replica); returns how many were removed.
  // The pattern is a POSIX extended regular expression searched anywhere in
  // the key (directory/key_pattern.h: syntax and bounds). INVALID_PARAMS for
  // an invalid tenant or a pattern KeyPattern::Compile refuses.
  Result<uint64_t> RemoveByRegex(std::string_view tenant, std::string_view pattern, bool force);

  // --- batches: one answer per item, in order ---------------------------------
  // Each item answers as its one-key call would (the clock is read once per
  // batch); a batch is faster than its calls one by one: each key is hashed
  // once and the keys' cache misses overlap. The string_view forms take
  // keys that stay valid for the call.
  using KeyViews = std::span<const std::string_view>;
  std::vector<Result<std::vector<ReplicaDescriptor>>> BatchPutStart(
      const UUID& client, std::string_view tenant, const std::vector<std::string>& keys,
      const std::vector<uint64_t>& sizes, const PutConfig& config,
      const std::vector<uint64_t>& checksums = {});
  std::vector<Result<std::vector<ReplicaDescriptor>>> BatchPutStart(
      const UUID& client, std::string_view tenant, KeyViews keys,
      const std::vector<uint64_t>& sizes, const PutConfig& config,
      const std::vector<uint64_t>& checksums = {});
  // `checksums`: empty, or one per key (PutEnd's `checksum` of key i);
  // another length is INVALID_PARAMS for every key.
  std::vector<ErrorCode> BatchPutEnd(const UUID& client, std::string_view tenant,
                                     const std::vector<std::string>& keys,
                                     const std::vector<uint64_t>& checksums = {});
  std::vector<ErrorCode> BatchPutEnd(const UUID& client, std::string_view tenant, KeyViews keys,
                                     const std::vector<uint64_t>& checksums = {});
  std::vector<ErrorCode> BatchPutRevoke(const UUID& client, std::string_view tenant,
                                        const std::vector<std::string>& keys);
  std::vector<ErrorCode> BatchPutRevoke(const UUID& client, std::string_view tenant, KeyViews keys);
  std::vector<Result<GetReplicaListResponse>> BatchGetReplicaList(
      std::string_view tenant, const std::vector<std::string>& keys);
  // The same answers handed to visit(i, code, response) in order, without
  // a vector of them: `response` (valid during that call) is *scratch,
  // whose memory every key reuses.
  void BatchGetReplicaList(std::string_view tenant, KeyViews keys, GetReplicaListResponse* scratch,
                           const BatchReplicaListVisitor& visit);
  std::vector<Result<bool>> BatchExistKey(std::string_view tenant,
                                          const std::vector<std::string>& keys);
  std::vector<Result<bool>> BatchExistKey(std::string_view tenant, KeyViews keys);
  std::vector<ErrorCode> BatchRemove(std::string_view tenant,
                                     const std::vector<std::string>& keys, bool force);
  std::vector<ErrorCode> BatchRemove(std::string_view tenant, KeyViews keys, bool force);

  // --- offload (MEMORY -> LOCAL_DISK) ----------------------------------------
  // Takes the client's pending offload tasks (objects whose MEMORY replica
  // lives on one of its segments), at most `max_tasks`. ILLEGAL_CLIENT for an
  // unknown client; empty when offload is disabled or the client did not
  // mount a local disk with offloading enabled.
  Result<std::vector<OffloadTask>> OffloadHeartbeat(const UUID& client, size_t max_tasks);
  // Adds a COMPLETE LOCAL_DISK replica per item (creating unknown objects,
  // which is how a restarted master relearns SSD data). One code per item;
  // OBJECT_NOT_FOUND for the report of a task handed out (and not timed
  // out) whose object was removed, or removed and written again, since:
  // the node copied bytes no object holds any more.
  Result<std::vector<ErrorCode>> NotifyOffloadSuccess(const UUID& client,
                                                      const std::vector<OffloadedObject>& items);
  // Removes the client's LOCAL_DISK replica of the key (the node evicted it,
  // or a read found its record missing or corrupt).
  ErrorCode EvictDiskReplica(const UUID& client, std::string_view tenant, std::string_view key);
  // The copies of these handed-out tasks failed in the client's store: each
  // task's pin is released and its object is evicted without a copy when
  // eviction picks it; until the client's next successful copy, eviction
  // waits for no copy to this client (docs/directory.md, "Eviction with an
  // SSD tier"). One code per item: OK, or OBJECT_NOT_FOUND when no such task
  // is in flight for the client. ILLEGAL_CLIENT without a mounted disk.
  Result<std::vector<ErrorCode>> NotifyOffloadFailure(const UUID& client,
                                                      const std::vector<OffloadFailure>& items);

  // --- promotion on hit (LOCAL_DISK -> MEMORY; docs/directory.md) ----------
  // For each item, an object of the client's SSD store to copy back into
  // one of the client's own segments: OK reserves aligned(size) bytes there
  // (buffer_address) for kPromotionTimeoutMs (60 s). Per item:
  // OBJECT_NOT_FOUND (no such object with a COMPLETE LOCAL_DISK replica on
  // this client's disk), INVALID_PARAMS (bad key or tenant, zero or wrong
  // size), OBJECT_ALREADY_EXISTS (it has a MEMORY replica, or its promotion
  // is in flight), NO_AVAILABLE_HANDLE (the allocation would pass the
  // eviction watermark, none of the client's segments has room, or 256
  // promotions of this client are in flight). ILLEGAL_CLIENT for a client
  // without a mounted disk. Leases, pins and the object are untouched.
  Result<std::vector<PromoteGrant>> PromoteStart(const UUID& client,
                                                 const std::vector<PromoteRequest>& items);
  // Ends the client's promotions: a copied one becomes a COMPLETE MEMORY
  // replica (OK) when the object is still the one granted (same size, same
  // LOCAL_DISK replica, no MEMORY replica meanwhile); otherwise, or when
  // abandoned (copied = false, OK), its range is given back. Per item:
  // OBJECT_NOT_FOUND when nothing was reserved (never granted, timed out,
  // the segment was unmounted, the master restarted) or the object changed;
  // INVALID_PARAMS for a bad key or tenant. ILLEGAL_CLIENT as above.
  Result<std::vector<ErrorCode>> PromoteEnd(const UUID& client,
                                            const std::vector<PromoteResult>& items);

  // --- copy and move tasks (docs/directory.md "Copy and move tasks") ----------
  // Records a task for `client` (its creator, who runs it) on the tenant's
  // key: a copy adds a COMPLETE MEMORY replica on each target segment, a
  // move one on its target and then drops the replica on its source.
  // INVALID_PARAMS (bad key or tenant; a copy with no target, a repeated or
  // empty one, or a source; a move without exactly one target other than
  // its source), SEGMENT_NOT_FOUND (a name no mounted segment has),
  // OBJECT_NOT_FOUND (no such object; a move's source holds no COMPLETE
  // replica of it), REPLICA_IS_NOT_READY (a copy of an object with no
  // COMPLETE MEMORY replica), OBJECT_ALREADY_EXISTS (a target holds a
  // replica of it), NO_AVAILABLE_HANDLE (past kMaxReplicas),
  // TASK_PENDING_LIMIT_EXCEEDED (kMaxUnfinishedTasks unfinished).
  Result<UUID> CreateTask(const UUID& client, std::string_view tenant, const TaskSpec& spec);
  // The tenant's task; TASK_NOT_FOUND for an unknown id, another tenant's,
  // or a finished one dropped (the kMaxFinishedTasks newest are kept).
  Result<TaskInfo> QueryTask(std::string_view tenant, const UUID& id);
  // The executor (the creator) starts its PENDING task: CreateTask's checks
  // again, then one range of the object's size reserved on each target
  // (PROCESSING; given back after 60 s without TaskEnd). A failed check or
  // allocation (NO_AVAILABLE_HANDLE: a target has no room) fails the task
  // with that code and answers it. TASK_NOT_FOUND (unknown, another
  // client's), INVALID_PARAMS (not PENDING).
  Result<TaskGrant> TaskStart(const UUID& client, std::string_view tenant, const UUID& id);
  // Ends a PROCESSING task: `copied` OK attaches the ranges as COMPLETE
  // replicas (a move retires its source replica as an upsert retires a
  // replaced version) when the object is still the one started (else
  // OBJECT_NOT_FOUND; SEGMENT_NOT_FOUND when a target was unmounted);
  // another code gives them back. The task ends SUCCESS or FAILED with the
  // code answered.
  ErrorCode TaskEnd(const UUID& client, std::string_view tenant, const UUID& id, ErrorCode copied);

  // --- background and observation ----------------------------------------------
  // One pass of: client expiry, stale put reclamation, eviction when above
  // the watermark or after an allocation failure. Thread-safe.
  void RunBackgroundOnce();
  // Starts the background thread when the options did not (e.g. after a
  // restore). No-op when it runs already. Not thread-safe against itself.
  void StartBackgroundThread();
  // Whether this directory is the one clients are served from (default:
  // yes). A master with HA that does not lead is not: its clients ping the
  // leader, so none of them expires here, and neither stale puts nor
  // eviction drop objects (docs/ha.md, "Nothing expires while nobody
  // leads"). Set serving again, every known client counts as
  // seen now: a full client_ttl_ms from the start of service. Thread-safe.
  void SetServing(bool serving);
  // Does not take the snapshot lock (counters only).
  DirectoryStats Stats() const;
  const DirectoryOptions& options() const;

  // --- snapshots (directory/directory_state.h holds the value types) ----------
  // Takes the snapshot lock exclusively: waits for every directory operation
  // in progress (background passes included) to end, keeps new ones waiting,
  // runs `f`, then lets them go. While `f` runs no directory operation is in
  // progress, so every shard, segment and client lock is free: `f` may fork()
  // and the child may call Export*. `f` may call Export* and Stats() itself,
  // but no other Directory method (that would deadlock). One RunPaused at a
  // time (a second waits). A writer never starves: operations arriving while
  // RunPaused waits queue behind it.
  void RunPaused(const std::function<void()>& f);

  // Export*: the state as plain values. They do not take the snapshot lock:
  // the caller guarantees quiescence (inside RunPaused, or in a forked child
  // of it, where no other thread exists); they take the shard, segment and
  // client locks, which are then free. Times become relative to the
  // directory's clock: remaining lease and soft pin (0 when expired), age of
  // the put start. Objects are exported as they are, PROCESSING replicas
  // included (RestoreShard decides), and groups with sorted members.
  // Offload reference counts (copies in flight) are not exported.
  // An index >= 1024 gives an empty ShardState.
  ShardState ExportShard(uint32_t index) const;
  // Mounted segments in mount order with their allocators' free extents,
  // local-disk registrations, the next replica id and the view version.
  SegmentsState ExportSegments() const;
  // Offload tasks queued per client and not yet handed out. Tasks already
  // handed out (in flight) are not exported: their node reports them with
  // NotifyOffloadSuccess, or the MEMORY replica stays and is offloaded again
  // only on a new PutEnd.
  TasksState ExportTasks() const;

  // Restore*: for a Directory that serves nobody yet (before the RPC port
  // opens), in this order: RestoreSegments, RestoreShard for every shard
  // (distinct indexes may run in parallel), RestoreTasks. DATA_CORRUPTED for
  // any state an export could not have produced; the directory may then be
  // partly restored: call Clear() and try an older snapshot.
  //
  // Mounts every segment with its exact allocator state, registers the
  // local disks, and registers every segment owner and disk node as alive
  // now, so a node gets one client TTL to ping before the normal expiry
  // releases its segments. DATA_CORRUPTED for bad free extents, a nil id, a
  // segment already mounted or overlapping another, a bad disk registration.
  // next_replica_id becomes at least the stored one. The view version becomes
  // the stored one: the segments are restored, so nodes need not remount,
  // and Ping tells them nothing changed (a node that did lose its place gets
  // NEED_REMOUNT as usual). A stored 0 keeps the directory's own version.
  ErrorCode RestoreSegments(const SegmentsState& segments);
  // Restores the objects of one shard. An object whose replicas are all
  // COMPLETE is kept with lease deadline = now + lease_remaining_ms, soft pin
  // = now + soft_pin_remaining_ms (seconds granularity, rounded up) and put
  // start = now - put_age_ms; any other object (an unfinished put) is
  // dropped and its MEMORY ranges are freed back to their segments, or with
  // UnfinishedPuts::kHold kept as it was with put start = now (the put
  // discard and release timeouts run from the restore on). An upsert's
  // pending version (ObjectState::pending) is kept, with kHold, as a pending
  // version started now (its writer's PutEnd swaps it in); with kDrop, or
  // left without replicas, as a placeholder without writer or replicas that
  // refuses its writer's PutEnd (ILLEGAL_CLIENT). Group
  // memberships are rebuilt from the kept objects' group (so only members
  // that exist are listed); the shard's GroupState entries are checked for
  // well-formedness only. next_replica_id is raised above every replica id.
  // DATA_CORRUPTED, changing nothing, for: an index >= 1024, an object or
  // group that does not hash to `index`, an invalid tenant, key, size, data
  // type, negative time, replica status or type, a replica id of 0 or over 48
  // bits, no replica or more than 32 (a pending version: more than 32, or
  // with kHold one not a PROCESSING MEMORY replica), a replica on an unknown segment or disk
  // node, a MEMORY range outside its segment or not allocated in it, a key
  // given twice or already present. (Two objects claiming overlapping MEMORY
  // ranges in different shards are not detected.)
  ErrorCode RestoreShard(const ShardState& shard,
                         UnfinishedPuts unfinished = UnfinishedPuts::kDrop);
  // Re-queues offload tasks for known clients (tasks of unknown clients are
  // skipped). DATA_CORRUPTED for a task with an invalid tenant or key or a
  // zero size. As the last restore step it also marks every known client
  // alive now, so nodes get a full client TTL once the port opens however
  // long the shards took.
  ErrorCode RestoreTasks(const TasksState& tasks);
  // A promoted hot standby's held ranges (HeldRangeState; after
  // RestoreShard): each becomes a retired range given back remaining_ms from
  // now (the late PromoteEnd or TaskEnd of a range that was reserved finds
  // nothing here and is refused; a writer's late bytes land in a range no
  // object holds), and is held again for this master's own standbys.
  // next_replica_id is raised above every id. DATA_CORRUPTED, changing
  // nothing, for an id of 0 or over 48 bits, an id given twice, a negative
  // remaining time, an unknown segment or a range not allocated in it.
  ErrorCode RestoreHeldRanges(const std::vector<HeldRangeState>& held);
  // --- change feed (hot standbys: directory/change_feed.h) --------------------
  // From now on, every change of an object or of the segment table is
  // recorded until TakeChanges takes it. Idempotent; never turned off.
  void EnableChangeTracking();
  // How many changes were recorded so far. A caller that mutated the
  // directory reads it after its call returns: once a TakeChanges whose
  // seq is at least this value has been shipped, the caller's change is in
  // it (directory/change_feed.h has the argument).
  uint64_t ChangeSeq() const;
  // Takes what changed since the last call (see ChangeSet). Thread-safe;
  // one taker at a time (a second would split the changes between them).
  ChangeSet TakeChanges();
  // The objects of one shard with only its shard lock held (no pause):
  // another shard may change meanwhile. With change tracking enabled first,
  // every change after this export is also in a later TakeChanges, so a
  // standby that applies the export, then the changes, converges.
  ShardState ExportShardLive(uint32_t index) const;
  // Every held range (held_ranges.h), for a standby's full copy: with
  // change tracking enabled first, a later TakeChanges ships every change
  // after it.
  std::vector<HeldRangeState> ExportHeldRanges() const;
  // The segment table (segments, disks, view version, next replica id) as
  // TakeChanges ships it.
  SegmentsState ExportSegmentTable() const;

  // Returns the directory to its freshly constructed state: no objects,
  // segments, clients or tasks; replica ids from 1, counters 0, the view
  // version it was constructed with. Takes the snapshot lock exclusively
  // (so it must not be called inside RunPaused).
  void Clear();

 private:
  std::unique_ptr<DirectoryImpl> impl_;
};

}  // namespace shelfmark
