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
// Every call takes a tenant; "" means the default tenant.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "directory/types.h"

namespace shelfmark {

struct DirectoryOptions {
  int64_t default_kv_lease_ttl_ms = 10'000;
  int64_t client_ttl_ms = 10'000;
  double eviction_ratio = 0.05;
  double eviction_high_watermark_ratio = 0.90;
  // An unfinished put older than this may be replaced by a new PutStart.
  int64_t put_start_discard_timeout_ms = 30'000;
  // An unfinished put older than this is reclaimed by the background thread.
  int64_t put_start_release_timeout_ms = 600'000;
  bool enable_offload = false;
  // Period of the background thread (eviction, client expiry, stale puts).
  int64_t background_period_ms = 100;
  // Start the background thread in the constructor. Tests drive
  // RunBackgroundOnce() by hand instead.
  bool start_background_thread = true;
  const Clock* clock = nullptr;  // nullptr: a SteadyClock owned by Directory
};

class DirectoryImpl;

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
  // when `client` did not start this put.
  ErrorCode PutEnd(const UUID& client, std::string_view tenant, std::string_view key,
                   ReplicaType type = ReplicaType::MEMORY);
  // Drops the PROCESSING replicas of `type` (and the object if none remain).
  ErrorCode PutRevoke(const UUID& client, std::string_view tenant, std::string_view key,
                      ReplicaType type = ReplicaType::MEMORY);

  // --- reads ----------------------------------------------------------------
  // COMPLETE replicas of the key and grants a read lease. OBJECT_NOT_FOUND;
  // REPLICA_IS_NOT_READY when the object exists but none is COMPLETE.
  Result<GetReplicaListResponse> GetReplicaList(std::string_view tenant, std::string_view key);
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

  // --- batches: one answer per item, in order ---------------------------------
  std::vector<Result<std::vector<ReplicaDescriptor>>> BatchPutStart(
      const UUID& client, std::string_view tenant, const std::vector<std::string>& keys,
      const std::vector<uint64_t>& sizes, const PutConfig& config);
  std::vector<ErrorCode> BatchPutEnd(const UUID& client, std::string_view tenant,
                                     const std::vector<std::string>& keys);
  std::vector<ErrorCode> BatchPutRevoke(const UUID& client, std::string_view tenant,
                                        const std::vector<std::string>& keys);
  std::vector<Result<GetReplicaListResponse>> BatchGetReplicaList(
      std::string_view tenant, const std::vector<std::string>& keys);
  std::vector<Result<bool>> BatchExistKey(std::string_view tenant,
                                          const std::vector<std::string>& keys);
  std::vector<ErrorCode> BatchRemove(std::string_view tenant,
                                     const std::vector<std::string>& keys, bool force);

  // --- offload (MEMORY -> LOCAL_DISK) ----------------------------------------
  // Takes the client's pending offload tasks (objects whose MEMORY replica
  // lives on one of its segments), at most `max_tasks`. ILLEGAL_CLIENT for an
  // unknown client; empty when offload is disabled or the client did not
  // mount a local disk with offloading enabled.
  Result<std::vector<OffloadTask>> OffloadHeartbeat(const UUID& client, size_t max_tasks);
  // Adds a COMPLETE LOCAL_DISK replica per item (creating unknown objects,
  // which is how a restarted master relearns SSD data). One code per item.
  Result<std::vector<ErrorCode>> NotifyOffloadSuccess(const UUID& client,
                                                      const std::vector<OffloadedObject>& items);
  // Removes the client's LOCAL_DISK replica of the key (the node evicted it).
  ErrorCode EvictDiskReplica(const UUID& client, std::string_view tenant, std::string_view key);

  // --- background and observation ----------------------------------------------
  // One pass of: client expiry, stale put reclamation, eviction when above
  // the watermark or after an allocation failure. Thread-safe.
  void RunBackgroundOnce();
  DirectoryStats Stats() const;
  const DirectoryOptions& options() const;

 private:
  std::unique_ptr<DirectoryImpl> impl_;
};

}  // namespace shelfmark
