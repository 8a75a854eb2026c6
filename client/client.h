// Client: Shelfmark's Put/Get/Remove/Exist API (and batch forms) for
// connectors and tools. Control calls go to the master (a MasterClient per
// calling thread); bytes move one-sided between a registered staging buffer
// (or a caller buffer registered with RegisterBuffer) and the nodes' DRAM
// segments through a TransportSet; no node CPU is involved.
//
// Put   = PutStart, copy into staging, one WRITE per replica (one Transfer),
//         PutEnd. A failed transfer -> PutRevoke, and the transfer's code.
// Get   = Locate (GetReplicaList) + Read:
//   - Order: MEMORY replicas, those whose endpoint host is an address of
//     this host first, then the master's order; then the LOCAL_DISK replicas
//     (master's order). GetOptions::prefer_local_disk puts the LOCAL_DISK
//     replicas first instead. An object with no replica of either type
//     answers UNAVAILABLE_IN_CURRENT_STATUS.
//   - LOCAL_DISK read: ReadLocalDiskInto (client/local_disk_client.h), a
//     request to the DiskDescriptor's endpoint on the messages
//     (transport/am_transport.h) of this client's ucx engine (or, without
//     one, of any engine that carries messages: loopback in tests), waiting
//     up to transfer_timeout_ms (no answer -> TRANSFER_FAIL). The reply's
//     bytes land straight in the destination (Read's dst, or Get's string):
//     no staging copy. Without such an engine the replica answers
//     INVALID_PARAMS. The node's own codes (OBJECT_NOT_FOUND,
//     FILE_READ_FAIL, ...) and DATA_CORRUPTED (a reply of the wrong size)
//     count as failures of that replica. Lease and checksum rules are those
//     of MEMORY reads.
//   - Lease: the lease GetReplicaList grants is counted from a clock reading
//     taken before the RPC was sent; a read that finishes at or after
//     start + lease_ttl_ms answers LEASE_EXPIRED and returns no bytes (the
//     replica may have been evicted and reused mid-read). It is not retried
//     on another replica: the lease covers the object.
//   - Checksum: when the object has one, the bytes read must hash to it
//     (ObjectChecksum) or the replica answers CHECKSUM_MISMATCH.
//   - Failover: a replica that fails with anything but LEASE_EXPIRED
//     (TRANSFER_FAIL, CHECKSUM_MISMATCH, a descriptor this client cannot
//     use: INVALID_PARAMS, e.g. an unknown protocol, or a LOCAL_DISK node's
//     error) is followed by the next one, so a LOCAL_DISK replica is read
//     when every MEMORY replica failed; when all fail, the last replica's
//     code is returned.
// Location cache (client/location_cache.h): every master lookup's answer is
// kept, and Locate, Get and BatchGet serve a key from it, with no master RPC,
// until lease_deadline_ms - margin_ms; the lease check above still applies
// to every read. A read of a location (cached or not) that fails for any
// reason drops the key's entry; Get and BatchGet then look the key up afresh
// and read once more when the failed location came from the cache (Read, of
// a caller's location, does not retry). This client's Remove (whatever its
// answer) and successful Put / BatchPut of a key drop its entry. Not
// covered: a forced remove by another client while the entry lives (as for
// a get in flight without the cache, but for up to the whole entry's life);
// the checksum, when the object has one, still catches memory reused by
// another object. So the cache is off unless ClientOptions::location_cache.
// max_entries > 0 (kLocationCacheEntries).
// A cached location lacks the LOCAL_DISK replicas added since its lookup
// (offload), so a prefer_local_disk call takes only an entry that has one.
// GetOptions::use_location_cache = false asks the master for that call (the
// answer refreshes the entry); max_entries = 0 turns the cache off.
// Batch forms: one master RPC for the whole batch (BatchGet: for the keys
// the location cache does not hold); transfers are packed into rounds that
// fit the staging buffer, one Transfer per round (TransportSet groups the
// ops per engine); an item whose round fails is retried alone (with
// failover); an object with only LOCAL_DISK replicas is read alone.
// Answers are per item, in order.
//
// Checksum: ObjectChecksum = XXH3-64 (seed 0) of the value. Every put form
// computes it when PutOptions::compute_checksum is set (the default). Put
// and BatchPut send it with PutStart (one per key in their BatchPutStart);
// the zero-copy puts send it with PutEnd (BatchPutEnd), computed as the
// bytes are copied when a memcpy writes a one-piece value into a segment
// on this host (the source read once), else in a pass of its own. Either
// way the master stores it before the object is readable.
//
// Staging: `staging_bytes` of anonymous memory registered once with every
// engine; calls take blocks from it (waiting while it is full). A value
// larger than the staging buffer uses a buffer registered for that call.
// staging_bytes = 0: no staging at all; the calls that need it (Put,
// BatchPut, and Get / BatchGet of a MEMORY replica) answer INVALID_PARAMS,
// the zero-copy calls below work as ever.
//
// Zero-copy calls (PutFrom, PutParts, GetInto, their batch forms,
// GetIntoRanges): the bytes move one-sided between the replicas and the
// caller's memory, which must lie inside buffers registered with
// RegisterBuffer (checked before anything is sent: INVALID_PARAMS
// otherwise, never a crash); no staging, no copy. Every read and write,
// staged or not, is a TransferPlan (client/transfer_plan.h): a list of
// pieces of the object and the memory each lands in or comes from. Put is
// PutFrom over a staging block, Get a read into a staging block.
//   - Parts: an object made of several pieces (a KV block of per-layer
//     parts) is their concatenation; a put writes each part to every
//     replica at its offset (one op per part per replica, one Transfer), a
//     get scatters the object over the pieces in order (their sum must be
//     >= its size, else BUFFER_OVERFLOW). The checksum covers the
//     concatenation.
//   - Ranged reads (GetIntoRanges) read only the ranges asked for, so the
//     object's checksum cannot be verified and is not: the lease is. A
//     LOCAL_DISK replica is read whole into a temporary buffer (checksum
//     verified), then the ranges are copied out.
//
// Local segments: AttachLocalSegment names a segment this process hosts (an
// embedded node, embedded/embedded_client.h); a MEMORY replica inside it is
// read and written with memcpy instead of a transfer (client/
// local_segments.h), and read before any other replica. local_stats()
// counts those copies; the engines' counters do not move.
//
// Transfer counters: TransferCounters(protocol) reads the engine's own
// counters of posted work and moved bytes through ClientOptions::
// engine_counters (for "rdma", VerbsEngine::counters(): this library never
// links the verbs engine, transport/rdma_plugin.h supplies the reader); they
// prove which engine moved the bytes. Engines without counters (ucx,
// loopback) answer nullopt.
//
// Thread safety: every method may be called from any thread. The Client must
// outlive the calls in flight. Each calling thread holds its own connection
// to the master (made on first use, kept until the thread exits or, for the
// destroying thread, until the Client is destroyed).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/reply_poll.h"
#include "common/result.h"
#include "common/task_types.h"
#include "common/types.h"
#include "client/buffers.h"
#include "client/local_segments.h"
#include "client/location_cache.h"
#include "transport/transport_set.h"

namespace shelfmark {

struct ClientOptions {
  // host:port of shelfmark-master, or etcd://H:P[;H:P...] (follow the
  // leader published there; MasterClientOptions::address).
  std::string master = "127.0.0.1:50051";
  // With an etcd:// master: the cluster whose leader to follow ("" :
  // $SHELFMARK_CLUSTER_ID, $MC_STORE_CLUSTER_ID, then "shelfmark";
  // MasterClientOptions::cluster_id).
  std::string cluster_id;
  // With a host:port master: follow a standby's NOT_LEADER to the leader it
  // names (MasterClientOptions::follow_leader_hints; etcd:// always does).
  bool follow_leader_hints = false;
  // Proven to the master on each connection (docs/security.md); empty: the
  // cluster token (transport.cluster_token), which may be empty too.
  std::string master_token;
  // Engines to open: "auto" (ucx, plus rdma when rdma_factory is set and a
  // device is present), "rdma", "ucx", "loopback", or "none" (only engines
  // passed to Create).
  std::string protocol = "auto";
  // client_id (also the id used with the master; nil: a fresh one),
  // cluster_token, device.
  TransportOptions transport;
  TransportFactory rdma_factory;     // empty: this binary has no rdma engine
  bool rdma_device_present = false;  // what ibv_get_device_list said
  EngineCountersReader engine_counters;  // for TransferCounters (empty: none)
  uint64_t staging_bytes = 64ull << 20;  // 0: no staging (above); else >= 64
  int64_t rpc_timeout_ms = 10'000;
  int64_t transfer_timeout_ms = 5'000;
  // Lookups over the master's lookup channel (MasterClientOptions::lookup_channel).
  bool lookup_channel = true;
  // How long a thread polls for the channel's answer before it blocks
  // (MasterClientOptions::reply_poll_us).
  int64_t reply_poll_us = DefaultReplyPollMicros();
  // Reads from a segment this process hosts copy into the caller's buffer
  // with streamed stores (CopyLocal, transport/local_share.h), for callers
  // whose buffers another process reads next: the store service, whose
  // callers' buffers are its clients' shared memory. Same bytes, same
  // checksums; false: cached stores (the reader is usually this thread),
  // but for calls that read kStreamReadBytes or more, which stream either
  // way (StreamsReads, transport/local_share.h).
  bool stream_local_reads = false;
  // One-round-trip puts (docs/client.md): single puts write into ranges
  // the master reserved ahead and commit the key in one call. Needs the
  // lookup channel; off: every put is PutStart + PutEnd.
  bool reserve_puts = true;
  // Batch puts the same way (BatchReservePut / BatchCommitPut; needs
  // reserve_puts). Off by default: measured on a 2-CPU machine
  // (scripts/bench_store_service.sh, 256 x 64 KiB, four runs each way) the
  // batches' puts and the gets of what they put were slower into reserved
  // ranges (put 0.46-0.57 of memcpy against 0.58-0.69 in two steps), and
  // the master spends as much per key on a commit and its renewal as on
  // PutStart and PutEnd; the round trip it saves did not show.
  bool reserve_batch_puts = false;
  const Clock* clock = nullptr;  // lease accounting; nullptr: a steady clock
  // Locations served without a master RPC within their lease (see above);
  // max_entries = 0 (the default): off. Create answers INVALID_PARAMS for
  // margin_ms < 0.
  LocationCacheOptions location_cache;
};

struct PutOptions {
  PutConfig config;  // replicas, preferred segments, pins, group, data type
  // Store ObjectChecksum(value) with the object: every whole read verifies
  // it (here, and the node before an SSD read's bytes leave it). On by
  // default: integrity is what a store owes its users; false saves one
  // XXH3 pass per put and per get (scripts/bench_get.sh measures it).
  bool compute_checksum = true;
};

struct GetOptions {
  bool prefer_local_disk = false;  // try LOCAL_DISK replicas before MEMORY ones
  // false: ask the master even when the location cache holds the key (the
  // answer replaces the entry).
  bool use_location_cache = true;
};

// Where an object's bytes are, as one GetReplicaList answered, with the
// replicas in the order Read tries them.
struct ObjectLocation {
  std::string tenant;  // as the caller named them (LOCAL_DISK reads send them)
  std::string key;
  GetReplicaListResponse info;
  int64_t lease_deadline_ms = 0;  // on the client's clock
};

class StagingBlock;

// XXH3-64 of `value` (seed 0).
uint64_t ObjectChecksum(std::string_view value);

class Client {
 public:
  // Opens the engines, registers the staging buffer, checks nothing with the
  // master (connections are made on first use). INVALID_PARAMS for a bad
  // protocol or staging size; an engine's error code when one cannot open.
  static Result<std::unique_ptr<Client>> Create(ClientOptions options);
  // The same, with caller-built engines added first (tests, benchmarks).
  static Result<std::unique_ptr<Client>> Create(
      ClientOptions options, std::vector<std::unique_ptr<TransportEngine>> engines);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const UUID& client_id() const;

  ErrorCode Put(std::string_view tenant, std::string_view key, std::string_view value,
                const PutOptions& options = {});
  Result<std::string> Get(std::string_view tenant, std::string_view key,
                          const GetOptions& options = {});
  ErrorCode Remove(std::string_view tenant, std::string_view key, bool force = false);
  Result<bool> Exist(std::string_view tenant, std::string_view key);

  // Whole-batch failures (RPC_FAIL, INVALID_PARAMS for mismatched lengths)
  // are repeated in every item.
  std::vector<ErrorCode> BatchPut(std::string_view tenant, const std::vector<std::string>& keys,
                                  const std::vector<std::string_view>& values,
                                  const PutOptions& options = {});
  std::vector<Result<std::string>> BatchGet(std::string_view tenant,
                                            const std::vector<std::string>& keys);
  std::vector<Result<bool>> BatchExist(std::string_view tenant,
                                       const std::vector<std::string>& keys);
  // The object's size (a lookup like Get's: the location cache's entry, else
  // GetReplicaList, which grants a read lease).
  Result<uint64_t> GetSize(std::string_view tenant, std::string_view key);
  // One BatchRemove RPC; the keys' cached locations are dropped.
  std::vector<ErrorCode> BatchRemove(std::string_view tenant,
                                     const std::vector<std::string>& keys, bool force = false);
  // Removes every object of `tenant` (leased ones only with `force`); the
  // number removed. Drops the whole location cache.
  Result<uint64_t> RemoveAll(std::string_view tenant, bool force = false);
  // The tenant's objects whose key matches `pattern` (a POSIX extended
  // regular expression, searched anywhere in the key; docs/directory.md has
  // its bounds), under RemoveAll's rules; the number removed. INVALID_PARAMS
  // for a pattern the master refuses.
  Result<uint64_t> RemoveByRegex(std::string_view tenant, std::string_view pattern,
                                 bool force = false);

  // --- zero-copy puts and gets (registered caller memory, above) ----------
  // The value is [buffer, buffer + size).
  ErrorCode PutFrom(std::string_view tenant, std::string_view key, const void* buffer,
                    uint64_t size, const PutOptions& options = {});
  // The value is the concatenation of `parts`.
  ErrorCode PutParts(std::string_view tenant, std::string_view key,
                     const std::vector<ConstBuffer>& parts, const PutOptions& options = {});
  // One BatchPutStart and one BatchPutEnd (BatchPutRevoke for failed items)
  // RPC, every item's WRITEs in one Transfer (an item of a failed Transfer
  // is written alone); with compute_checksum, each key's checksum in the
  // BatchPutEnd. Whole-batch failures are repeated in every item.
  std::vector<ErrorCode> BatchPutFrom(std::string_view tenant, const std::vector<std::string>& keys,
                                      const std::vector<ConstBuffer>& buffers,
                                      const PutOptions& options = {});
  std::vector<ErrorCode> BatchPutParts(std::string_view tenant,
                                       const std::vector<std::string>& keys,
                                       const std::vector<std::vector<ConstBuffer>>& parts,
                                       const PutOptions& options = {});
  // Reads the object into [dst, dst + capacity) with Get's rules (order,
  // lease, checksum, failover, location cache); the bytes read.
  // BUFFER_OVERFLOW when capacity < size.
  Result<uint64_t> GetInto(std::string_view tenant, std::string_view key, void* dst,
                           uint64_t capacity, const GetOptions& options = {});
  // One lookup RPC for the keys the location cache lacks, every item's
  // first-replica READs in one Transfer (then failover item by item), with
  // the rules of BatchGet. Answers per item: the bytes read, or its error.
  std::vector<Result<uint64_t>> BatchGetInto(std::string_view tenant,
                                             const std::vector<std::string>& keys,
                                             const std::vector<MutableBuffer>& dsts);
  // The same, each object scattered over its pieces in order.
  std::vector<Result<uint64_t>> BatchGetIntoParts(
      std::string_view tenant, const std::vector<std::string>& keys,
      const std::vector<std::vector<MutableBuffer>>& parts);
  // Reads [offset, offset + length) of the object into each range's dst
  // (INVALID_PARAMS for a range past the object's end); the checksum is not
  // verified (above).
  ErrorCode GetIntoRanges(std::string_view tenant, std::string_view key,
                          const std::vector<ReadRange>& ranges, const GetOptions& options = {});

  // --- local segments -----------------------------------------------------
  // The segment `segment_id`, mapped in this process at `base` (its
  // Segment::base) for `size` bytes, is read and written with memcpy
  // (above). INVALID_PARAMS for a null base or zero size. Detach before the
  // memory stops being this segment's.
  ErrorCode AttachLocalSegment(const UUID& segment_id, void* base, uint64_t size);
  void DetachLocalSegment(const UUID& segment_id);
  // Asks the master to drain `segment_id`, a segment mounted under this
  // client's id: a graceful unmount's grace period (Directory::DrainSegment;
  // the call needs a token with the node or admin role). The unmount that
  // ends it is the segment node's.
  ErrorCode DrainSegment(const UUID& segment_id);
  LocalCopyStats local_stats() const;

  // --- zero-copy reads ----------------------------------------------------
  // Registers [addr, addr + size) with every engine (local access), so Read
  // and the zero-copy calls can use it. The range must be mapped readable
  // and writable (gets write into it) now, as /proc/self/maps says
  // (common/mapped_range.h); it must stay so until UnregisterBuffer:
  // unregister before freeing or protecting the memory. INVALID_PARAMS for a
  // null or empty range, one not mapped read-write (unmapped, PROT_READ,
  // PROT_NONE), or one already registered at `addr`.
  ErrorCode RegisterBuffer(void* addr, uint64_t size);
  void UnregisterBuffer(void* addr);
  // The location cache's entry when it holds the key, else GetReplicaList's
  // answer (then cached).
  Result<ObjectLocation> Locate(std::string_view tenant, std::string_view key,
                                const GetOptions& options = {});
  // Reads the object into `dst` (inside a registered buffer, `capacity` >=
  // the object's size: else BUFFER_OVERFLOW) with the rules of Get. A failed
  // read drops the key's cached location, so the next Locate asks the master.
  ErrorCode Read(const ObjectLocation& location, void* dst, uint64_t capacity);

  // --- two-phase puts and ranged reads of a located object ------------------
  // The steps mooncake.store's put and get sessions are made of
  // (storeservice/sessions.h; client_sessions.cc). StartPuts allocates each
  // object at the master (one BatchPutStart) and answers its MEMORY
  // replicas: not readable until EndPuts, and without a checksum (the bytes
  // arrive piece by piece, so none is known up front; whole reads then
  // verify nothing). WriteAt writes registered memory at object offsets into
  // every replica (INVALID_PARAMS for memory not registered, parts and
  // offsets of different lengths, or a piece past `object_size`;
  // INVALID_REPLICA for a replica that is not MEMORY). EndPuts makes the
  // objects readable (BatchPutEnd; their cached locations dropped),
  // RevokePuts drops them (BatchPutRevoke). Answers per key, in order.
  std::vector<Result<std::vector<ReplicaDescriptor>>> StartPuts(
      std::string_view tenant, const std::vector<std::string>& keys,
      const std::vector<uint64_t>& sizes, const PutConfig& config);
  ErrorCode WriteAt(const std::vector<ReplicaDescriptor>& replicas, uint64_t object_size,
                    const std::vector<ConstBuffer>& parts, const std::vector<uint64_t>& offsets);
  std::vector<ErrorCode> EndPuts(std::string_view tenant, const std::vector<std::string>& keys);
  std::vector<ErrorCode> RevokePuts(std::string_view tenant, const std::vector<std::string>& keys);
  // Reads the ranges of the object at `location` (an answer of Locate, kept
  // by the caller) with Read's order and failover: LEASE_EXPIRED, reading
  // nothing, once its lease has ended (the memory may hold another object
  // by then); INVALID_PARAMS for memory not registered or a range past the
  // object's end. The checksum is not verified (ranges).
  ErrorCode ReadRanges(const ObjectLocation& location, const std::vector<ReadRange>& ranges);

  // --- copy and move tasks (client_tasks.cc; docs/directory.md) -------------
  // CreateTask records a task at the master with this client as its
  // executor (Directory::CreateTask for the codes); RunTask executes it:
  // TaskStart reserves a range on each target, the object is read (a fresh
  // lookup, its checksum verified) through a staging block and written to
  // every target, TaskEnd attaches the copies (a move then drops its
  // source). RunTask answers the task's outcome: OK, the read's or write's
  // code (the task FAILED with it), or TaskStart's / TaskEnd's refusal.
  // A client without staging (staging_bytes 0) fails its tasks with
  // INVALID_PARAMS. QueryTask: the task as the master holds it.
  Result<UUID> CreateTask(std::string_view tenant, const TaskSpec& spec);
  ErrorCode RunTask(std::string_view tenant, const UUID& id);
  Result<TaskInfo> QueryTask(std::string_view tenant, const UUID& id);

  // The engine serving `protocol` (nullptr if none): the benchmark's raw path.
  TransportEngine* engine(std::string_view protocol) const;
  // The messages this client's LOCAL_DISK reads travel on (nullptr: none),
  // for the benchmark's baselines on the same path.
  AmTransport* messages() const;
  // The counters of the engine serving `protocol`; nullopt when there is no
  // such engine or it keeps no counters.
  std::optional<EngineCounters> TransferCounters(std::string_view protocol) const;
  // Single puts committed in one master round trip (ClientOptions::reserve_puts)
  // since Create; the others went in two.
  uint64_t reserved_puts() const;
  // The location cache's counters and size (all 0 when it is off).
  LocationCacheStats location_cache_stats() const;

 private:
  friend class StagingBlock;
  struct Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace shelfmark
