// Client::Impl: the client library's shared state (engines, staging buffer,
// per-thread master connections) and the single-object read/write steps that
// client.cc (single calls) and client_batch.cc (batch calls) build on.
// Internal to the client library; see client/client.h for the contracts.
//
// Thread safety: as Client; staging_alloc and buffers are guarded by their
// mutexes, the location cache by its own; everything else is set up in
// Create and read-only after.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "client/client.h"
#include "client/location_cache.h"
#include "client/put_reservation_pool.h"
#include "client/transfer_plan.h"
#include "rpc/master_client.h"
#include "common/offset_allocator.h"
#include "transport/am_transport.h"

namespace shelfmark {

inline constexpr uint64_t kStagingAlignment = 64;

using EngineRegions = std::vector<std::pair<TransportEngine*, MemoryRegion>>;

struct Client::Impl {
  // `stream_local_reads`: ClientOptions::stream_local_reads (for `local`).
  explicit Impl(bool stream_local_reads);
  ~Impl();

  ClientOptions options;
  const uint64_t instance;  // key of this client's per-thread MasterClients
  SteadyClock steady;
  const Clock* clock = nullptr;
  TransportSet transports;
  std::vector<TransportEngine*> engines;  // every engine in `transports`
  AmTransport* messages = nullptr;        // LOCAL_DISK requests (nullptr: none)
  std::set<std::string> local_hosts;      // this host's addresses

  uint8_t* staging = nullptr;
  EngineRegions staging_regions;
  Mutex staging_mu;
  std::condition_variable_any staging_cv;
  std::optional<OffsetAllocator> staging_alloc GUARDED_BY(staging_mu);

  // Caller buffers registered with RegisterBuffer, by address.
  struct Registration {
    uint64_t size = 0;
    EngineRegions regions;
  };
  Mutex buffers_mu;
  std::map<uint8_t*, Registration> buffers GUARDED_BY(buffers_mu);

  std::optional<LocationCache> cache;  // made in Create (on `clock`)
  LocalSegments local;                 // segments this process hosts

  // This thread's connection to the master (made on first use).
  MasterClient& master();
  // Registers [addr, addr + size) with every engine; on failure undoes it.
  Result<EngineRegions> RegisterAll(void* addr, uint64_t size);
  ErrorCode OpenEngines();
  ErrorCode SetUpStaging();
  // True when [addr, addr + size) lies inside one registered caller buffer
  // (size 0: always).
  bool Registered(const void* addr, uint64_t size);
  // INVALID_PARAMS unless every buffer is Registered.
  template <typename Buffers>
  ErrorCode CheckRegistered(const Buffers& buffers) {
    for (const auto& b : buffers) {
      if (!Registered(b.data, b.size)) return ErrorCode::INVALID_PARAMS;
    }
    return ErrorCode::OK;
  }
  // Every move of bytes: ops inside a local segment by memcpy, the rest in
  // one TransportSet::Transfer.
  TransferStatus Move(TransferKind kind, std::span<const TransferOp> ops);

  // --- locations ---
  // Replicas in an attached local segment, then this host's MEMORY
  // replicas, then the others, then LOCAL_DISK ones: the order of client.h
  // without prefer_local_disk (the order the cache keeps); the lease
  // counted from start_ms.
  ObjectLocation Order(std::string_view tenant, std::string_view key, GetReplicaListResponse info,
                       int64_t start_ms) const;
  // Where an object is, and whether the location cache said so.
  struct Located {
    std::shared_ptr<const ObjectLocation> location;  // in the order `options` asks for
    bool cached = false;
  };
  // The cache's entry (when options.use_location_cache), else LookUp's.
  Result<Located> Locate(std::string_view tenant, std::string_view key,
                         const GetOptions& options);
  // GetReplicaList, its answer ordered and inserted into the cache.
  Result<std::shared_ptr<const ObjectLocation>> LookUp(std::string_view tenant,
                                                       std::string_view key);
  // The batch calls' Locate: the cache's entries, and one
  // BatchGetReplicaList for the other keys (answers cached).
  std::vector<Result<Located>> LocateAll(std::string_view tenant,
                                         const std::vector<std::string>& keys);

  // --- reads (a plan of pieces of the object, client/transfer_plan.h) ---
  // Lease, then (for a whole plan) checksum, of bytes already read; `sum`:
  // the plan's checksum when the read computed it (else computed here).
  ErrorCode CheckRead(const ObjectLocation& loc, const TransferPlan& plan,
                      std::optional<uint64_t> sum = std::nullopt) const;
  // Asks the read's one op (a whole object in one piece, with a checksum
  // to verify) for the checksum of the bytes a memcpy copies, into *sum
  // (TransferOp::checksum); other plans are checksummed after the move.
  static void AskChecksum(const ObjectLocation& loc, const TransferPlan& plan,
                          std::span<TransferOp> ops, std::optional<uint64_t>* sum);
  ErrorCode ReadReplica(const ObjectLocation& loc, const MemoryDescriptor& replica,
                        const TransferPlan& plan);
  // ReadLocalDiskInto from the replica's node: straight into the plan's one
  // piece when it is the whole object, else into a temporary buffer (whole
  // object, checksum verified) whose ranges are copied out.
  ErrorCode ReadDiskReplica(const ObjectLocation& loc, const DiskDescriptor& replica,
                            const TransferPlan& plan);
  // Calls `read` for every replica in order until one succeeds or answers
  // LEASE_EXPIRED (see client.h, Failover); the last replica's code.
  using ReplicaReader = std::function<ErrorCode(const ReplicaDescriptor&)>;
  ErrorCode ReadEach(const ObjectLocation& loc, const ReplicaReader& read);
  ErrorCode Read(const ObjectLocation& loc, const TransferPlan& plan);
  // Read scattered over `parts`; the bytes read.
  Result<uint64_t> ReadInto(const ObjectLocation& loc, std::span<const MutableBuffer> parts);
  // Read into a new string: LOCAL_DISK replies land in the string itself,
  // MEMORY reads go through a staging block (RMA needs registered memory).
  Result<std::string> ReadToString(const ObjectLocation& loc);
  // Get's rule for reading what Locate found with `read(location)`: when it
  // fails, the key's entry is dropped and, if `found` came from the cache,
  // ReadFresh.
  template <typename T, typename ReadFn>
  Result<T> ReadFound(std::string_view tenant, std::string_view key, const GetOptions& options,
                      const Located& found, const ReadFn& read) {
    Result<T> got = read(*found.location);
    if (got.ok()) return got;
    cache->Invalidate(tenant, key);
    if (!found.cached) return got;
    return ReadFresh<T>(tenant, key, options, read);
  }
  // `read` of a location the master is asked for, whatever the cache holds;
  // a failed read drops the key's entry.
  template <typename T, typename ReadFn>
  Result<T> ReadFresh(std::string_view tenant, std::string_view key, const GetOptions& options,
                      const ReadFn& read) {
    GetOptions fresh = options;
    fresh.use_location_cache = false;
    auto found = Locate(tenant, key, fresh);
    if (!found.ok()) return found.error();
    Result<T> got = read(*found->location);
    if (!got.ok()) cache->Invalidate(tenant, key);
    return got;
  }
  // The batch reads: each item's first replica into its plan, in one Move
  // (AskChecksum: a memcpy computes each object's checksum as it copies
  // it, not in a second pass over bytes the rest of the batch pushed out
  // of cache); an item that fails is read alone with failover. rc[k] for
  // items[k]; a failed item's entry is dropped and, when its location came
  // from the cache, its index is added to *stale (the caller reads it
  // afresh).
  struct BatchRead {
    size_t index = 0;  // in the caller's keys
    const Located* found = nullptr;
    TransferPlan plan;
  };
  std::vector<ErrorCode> ReadBatch(std::string_view tenant, const std::vector<BatchRead>& items,
                                   std::vector<size_t>* stale);

  // --- writes ---
  // The plan's pieces to every replica (one op per piece per replica), in
  // one Move. INVALID_REPLICA for a replica that is not MEMORY. `sum`
  // (nullptr: none wanted): see AskWriteChecksum.
  ErrorCode WriteReplicas(const std::vector<ReplicaDescriptor>& replicas, const TransferPlan& plan,
                          std::optional<uint64_t>* sum = nullptr);
  // Asks a write's first op (`first`: the first replica's ops) for the
  // checksum its memcpy computes as it copies (TransferOp::checksum) when
  // the plan is one piece, so a put into a segment on this host reads its
  // source once; *sum stays unset otherwise (WrittenChecksum computes it).
  static void AskWriteChecksum(const TransferPlan& plan, std::span<TransferOp> first,
                               std::optional<uint64_t>* sum);
  // The plan's checksum: `sum` when the write computed it, else computed.
  static uint64_t WrittenChecksum(const TransferPlan& plan, const std::optional<uint64_t>& sum);
  // A put: in one master round trip when it can (PutReserved), else in
  // two (PutTwoSteps).
  ErrorCode PutPlanned(std::string_view tenant, std::string_view key, const TransferPlan& plan,
                       const PutOptions& options);
  // PutStart, WriteReplicas, PutEnd (PutRevoke and the write's code when it
  // fails); the checksum, when asked for, over the plan's bytes, computed
  // as the bytes are copied where it can be and sent with PutEnd.
  ErrorCode PutTwoSteps(std::string_view tenant, std::string_view key, const TransferPlan& plan,
                        const PutOptions& options);
  // The one-round-trip put (docs/client.md): WriteReplicas into a
  // reservation this thread holds (one ReservePut first when it holds
  // none of the shape), then CommitPut, which renews it. nullopt when no
  // reservation could be had, the write into it failed, or the master gave
  // it back before the commit (nothing is visible then): the caller puts in
  // two steps instead.
  std::optional<ErrorCode> PutReserved(std::string_view tenant, std::string_view key,
                                       const TransferPlan& plan, const PutOptions& options);
  std::optional<PutReservationPool::Held> TakeReservation(std::string_view tenant, uint64_t size,
                                                          const PutConfig& config);
  // A commit (CommitPut, or one key of BatchCommitPut) refused with `rc`:
  // nullopt when it left nothing and the put goes in two steps (its
  // reservation was given back, or granted by a master that no longer
  // leads, or the channel is not usable now); else the put's answer:
  // RPC_FAIL (it may have been committed: not repeated), or the master's
  // refusal, which kept the reservation: `held` goes back to this thread's
  // pool for the next key.
  std::optional<ErrorCode> CommitRefused(ErrorCode rc, uint64_t size, const PutConfig& config,
                                         PutReservationPool::Held&& held);
  // This thread's reservations (with master()).
  PutReservationPool& reservations();
  // How long a client asks for no reservation after a refusal that will
  // last (no channel, an older master).
  static constexpr int64_t kReservationPauseMs = 30'000;
  // ... and after "no room for one now".
  static constexpr int64_t kNoRoomPauseMs = 1'000;
  // Whether a put of `config` may go into a reservation.
  static bool ReservableConfig(const PutConfig& config);
  std::atomic<uint64_t> reserved_puts{0};  // puts committed in one round trip
  // One BatchPutStart of `sizes` (with each key's checksum when `checksums`
  // is not empty), `write(pending, started, &out)` for the started items,
  // then one BatchPutRevoke of the failed ones and one BatchPutEnd of the
  // written ones (their cached locations dropped), with their checksums
  // from *end_checksums (one per key, filled by `write`) when not nullptr.
  using StartedReplicas = std::vector<Result<std::vector<ReplicaDescriptor>>>;
  using BatchWriter = std::function<void(const std::vector<size_t>& pending,
                                         const StartedReplicas& started,
                                         std::vector<ErrorCode>* out)>;
  std::vector<ErrorCode> BatchPutWith(std::string_view tenant, const std::vector<std::string>& keys,
                                      const std::vector<uint64_t>& sizes, const PutConfig& config,
                                      const std::vector<uint64_t>& checksums,
                                      const BatchWriter& write,
                                      const std::vector<uint64_t>* end_checksums = nullptr);
  // One BatchPutWith call's arguments (client_batch_put.cc).
  struct BatchPutCall {
    std::string_view tenant;
    const std::vector<std::string>& keys;
    const std::vector<uint64_t>& sizes;
    const PutConfig& config;
    const std::vector<uint64_t>& checksums;
    const BatchWriter& write;
    const std::vector<uint64_t>* end_checksums;
  };
  // The batch in one master round trip (docs/client.md, "One-round-trip
  // puts"): the items written into reservations this thread holds (one
  // BatchReservePut first for those it lacks, all or none), then one
  // BatchCommitPut, which renews them. Returns the items to put in two
  // steps instead (all of them when no reservations could be had; those
  // whose write failed or whose reservation the master gave back); the
  // others' answers go to *out.
  std::vector<size_t> BatchPutReserved(const BatchPutCall& call, std::vector<ErrorCode>* out);
  // One reserved range set per item, taken from this thread's pool or
  // granted now; false (nothing taken) when not every item got one.
  bool TakeReservations(const BatchPutCall& call, std::vector<PutReservationPool::Held>* held);
  // `items` (indexes into call.keys) in two steps: BatchPutStart, write,
  // BatchPutRevoke of the failed, BatchPutEnd of the written.
  void BatchPutTwoSteps(const BatchPutCall& call, const std::vector<size_t>& items,
                        std::vector<ErrorCode>* out);
  // After a refused ReservePut or BatchReservePut: no reservations for a
  // while when the refusal will last, none for a moment when there was no
  // room, none skipped otherwise (a transport error).
  void PauseReservations(ErrorCode refusal, int64_t now);
  // Writes items (indexes into `started`, each with its plan) in one Move;
  // when that fails, each item alone, so only bad ones fail. `sums`
  // (nullptr: none wanted): item k's AskWriteChecksum into (*sums)[k].
  void WriteBatch(const std::vector<size_t>& items, const std::vector<const TransferPlan*>& plans,
                  const StartedReplicas& started, std::vector<ErrorCode>* out,
                  std::vector<std::optional<uint64_t>>* sums = nullptr);
};

// A range of registered memory a call moves bytes through: a block of the
// staging buffer (waiting while it is full), or, for a value larger than
// the staging buffer, memory mapped and registered for the call. Given back
// on destruction.
//
// A client without staging (staging_bytes = 0) gives none: data() is
// nullptr and error() INVALID_PARAMS.
class StagingBlock {
 public:
  StagingBlock(Client::Impl* impl, uint64_t size);
  ~StagingBlock();
  StagingBlock(const StagingBlock&) = delete;
  StagingBlock& operator=(const StagingBlock&) = delete;

  // nullptr when there is no staging, or temporary memory could not be
  // mapped or registered (error() says which).
  uint8_t* data() const { return data_; }
  ErrorCode error() const { return error_; }

 private:
  Client::Impl* const impl_;
  const uint64_t size_;
  uint8_t* data_ = nullptr;
  ErrorCode error_ = ErrorCode::OK;
  uint64_t offset_ = 0;
  uint64_t pooled_size_ = 0;  // 0: temporary memory
  EngineRegions temp_regions_;
};

// The staging size `size` takes (64-byte aligned, at least one unit).
inline uint64_t StagingSize(uint64_t size) {
  return (std::max<uint64_t>(size, 1) + kStagingAlignment - 1) & ~(kStagingAlignment - 1);
}

}  // namespace shelfmark
