// The directory's public value types: what callers pass in and get back.
// Internal storage (directory/object_metadata.h) is more compact; these are
// the expanded, self-contained forms that travel over RPC.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error_code.h"
#include "common/uuid.h"

namespace shelfmark {

enum class ReplicaStatus : uint8_t {
  INITIALIZED = 0,
  PROCESSING = 1,
  COMPLETE = 2,
  REMOVED = 3,
  FAILED = 4,
};

enum class ReplicaType : uint8_t { MEMORY = 0, LOCAL_DISK = 1 };

enum class DataType : uint8_t { UNKNOWN = 0, KVCACHE = 1, TENSOR = 2, WEIGHT = 3 };

const char* ReplicaStatusName(ReplicaStatus s);
const char* ReplicaTypeName(ReplicaType t);

// A node's DRAM segment as it mounts it. `rkey` is opaque bytes whose meaning
// belongs to `protocol` (rdma: the MR's rkey; ucx: a packed rkey).
struct Segment {
  UUID id;
  std::string name;
  uint64_t base = 0;
  uint64_t size = 0;
  std::string endpoint;  // "ip:port" of the owner's transport
  std::string protocol;  // "rdma" | "ucx" | "loopback" | ...
  std::string rkey;
};

// Where a MEMORY replica's bytes are: enough for one one-sided read.
struct MemoryDescriptor {
  std::string endpoint;
  std::string protocol;
  uint64_t buffer_address = 0;
  uint64_t size = 0;
  std::string rkey;
  UUID segment_id;
};

// Which node holds a LOCAL_DISK replica; the node's own index finds the bytes.
struct DiskDescriptor {
  UUID client_id;
  uint64_t object_size = 0;
  std::string endpoint;
};

struct ReplicaDescriptor {
  uint64_t id = 0;
  ReplicaStatus status = ReplicaStatus::INITIALIZED;
  ReplicaType type = ReplicaType::MEMORY;
  MemoryDescriptor memory;  // meaningful when type == MEMORY
  DiskDescriptor disk;      // meaningful when type == LOCAL_DISK
};

struct PutConfig {
  uint32_t replica_num = 1;
  // Segment names tried first, in order; other segments fill the rest.
  std::vector<std::string> preferred_segments;
  // Non-empty: an address (as segments' endpoints spell their host, e.g.
  // "10.0.0.2"); after preferred_segments, the segments whose endpoint is on
  // that host are tried before the others (Mooncake's
  // prefer_alloc_in_same_node: the writer names its own host).
  std::string prefer_host;
  std::optional<uint64_t> checksum;
  DataType data_type = DataType::UNKNOWN;
  bool hard_pin = false;
  // > 0: soft-pinned until put end + soft_pin_ttl_ms.
  int64_t soft_pin_ttl_ms = 0;
  // Non-empty: the object joins this group (same tenant).
  std::string group_id;
  // Upsert: a put of a key that exists replaces it atomically instead of
  // failing with OBJECT_ALREADY_EXISTS (docs/directory.md, "Upsert"). The
  // live version stays readable until PutEnd swaps the new one in.
  bool replace = false;
};

// Ranges reserved for a client's next put of one size (Directory::ReservePut;
// docs/directory.md, "One-round-trip puts"): the client writes the value
// into `replicas`, then CommitPut names a key for them. Given back by the
// master `ttl_ms` after the grant unless committed; a client uses one only
// well within that (half of it, counted from when it received the grant).
struct PutReservationGrant {
  uint64_t id = 0;
  int64_t ttl_ms = 0;
  std::vector<ReplicaDescriptor> replicas;
};

// CommitPut's answer: its code and, after an OK commit asked to renew, the
// reservation for the client's next put of the same size (none when the
// master could not place one).
struct CommitPutResult {
  ErrorCode code = ErrorCode::OK;
  std::optional<PutReservationGrant> next;
};

struct GetReplicaListResponse {
  std::vector<ReplicaDescriptor> replicas;  // COMPLETE replicas only
  uint64_t size = 0;
  std::optional<uint64_t> checksum;
  DataType data_type = DataType::UNKNOWN;
  int64_t lease_ttl_ms = 0;  // the lease granted by this read
};

// The operator's view of one object (shelfmark-cli stat).
struct ObjectInfo {
  std::string key;
  uint64_t size = 0;
  std::optional<uint64_t> checksum;
  DataType data_type = DataType::UNKNOWN;
  UUID writer;
  int64_t lease_remaining_ms = 0;     // 0 when expired
  int64_t soft_pin_remaining_ms = 0;  // 0 when none or expired
  bool hard_pin = false;
  std::string group_id;
  std::vector<ReplicaDescriptor> replicas;  // every replica, any status
};

enum class ClientStatus : uint8_t { OK = 0, NEED_REMOUNT = 1 };

struct PingResponse {
  uint64_t view_version = 0;
  ClientStatus status = ClientStatus::OK;
};

// A MEMORY object the node should copy to its SSD store.
struct OffloadTask {
  std::string tenant;
  std::string key;
  uint64_t size = 0;
  // Set when handed out (OffloadHeartbeat): the absolute address of the
  // MEMORY replica the master pinned for the copy, inside the node's own
  // segment, so the node copies without looking the object up.
  uint64_t buffer_address = 0;
};

// Where a node's SSD store put an object (the node's second-level index).
struct StorageObjectMetadata {
  int64_t bucket_id = 0;
  int64_t offset = 0;
  int64_t key_size = 0;
  int64_t data_size = 0;
  std::string transport_endpoint;
};

struct OffloadedObject {
  std::string tenant;
  std::string key;
  StorageObjectMetadata location;
  // ValueChecksum (XXH3-64) of the bytes the store holds, which names the
  // version they are of: the master attaches the copy to a key it already
  // holds only when this equals the object's checksum (docs/directory.md,
  // "Offload"). nullopt: a store that does not say (an older node).
  std::optional<uint64_t> checksum = std::nullopt;
};

// An offload task whose copy the node's SSD store could not make, and why.
struct OffloadFailure {
  std::string tenant;
  std::string key;
  ErrorCode code = ErrorCode::OK;
};

// Promotion on hit (LOCAL_DISK -> MEMORY): an object of a node's SSD store
// that the node asks to copy back into its own segment.
struct PromoteRequest {
  std::string tenant;
  std::string key;
  uint64_t size = 0;
};

// The master's answer to one PromoteRequest: OK with the absolute address of
// a range of `size` bytes it reserved for the copy in the node's segment.
struct PromoteGrant {
  ErrorCode code = ErrorCode::OK;
  uint64_t buffer_address = 0;
};

// How a granted promotion ended: `copied` (the bytes are in the reserved
// range) or abandoned (the range may be given back).
struct PromoteResult {
  std::string tenant;
  std::string key;
  bool copied = false;
};

struct DirectoryStats {
  uint64_t key_count = 0;
  uint64_t allocated_bytes = 0;
  uint64_t total_capacity_bytes = 0;
  uint64_t segment_count = 0;
  uint64_t client_count = 0;
  uint64_t evicted_objects = 0;
  uint64_t evicted_bytes = 0;
  uint64_t eviction_runs = 0;
  // Of the evicted objects, those never read since their put; puts of keys
  // 2Q's ghost list still remembered (they entered the protected queue);
  // eviction runs made by a put that found no room (it then retried).
  uint64_t evicted_unread = 0;
  uint64_t eviction_ghost_hits = 0;
  uint64_t eviction_runs_for_puts = 0;
  // Puts refused as impossible (no eviction could place them): more
  // replicas than segments able to hold them, or larger than any segment.
  uint64_t unplaceable_puts = 0;
  // Segments dropped because a new owner mounted at their endpoint (a node
  // restarted there, or a client naming a live node's endpoint).
  uint64_t superseded_segments = 0;
  // SSD store registrations dropped, with their LOCAL_DISK replicas, because
  // a new client took their endpoint: mounted a segment superseding their
  // owner's, or registered a store at the same endpoint.
  uint64_t superseded_disks = 0;
  // SSD copies of keys the master holds that NotifyOffloadSuccess refused
  // because they were not shown to be of the live version (checksums differ,
  // or one side has none): e.g. a node's re-report after a restart of a key
  // removed and put again meanwhile.
  uint64_t stale_disk_reports = 0;
  // Completed passes of the background work (client expiry, offload
  // time-outs, stale puts, eviction).
  uint64_t background_runs = 0;
  // Operations waiting for a RunPaused (snapshot) to end, right now.
  uint64_t snapshot_waiters = 0;
  // Objects eviction erased with no LOCAL_DISK replica while offload was
  // enabled: acknowledged objects lost to DRAM pressure (issue 17).
  uint64_t evicted_without_copy = 0;
  // Offload tasks queued at the master, all nodes, now (not yet handed out).
  uint64_t offload_queued = 0;
  // Eviction candidates kept because their copy to SSD is not done yet.
  uint64_t offload_waits = 0;
  // Copies to SSD that nodes reported they could not make
  // (NotifyOffloadFailure): their objects are evicted without one.
  uint64_t offload_failures = 0;
  // Promotion on hit (LOCAL_DISK -> MEMORY): ranges reserved for nodes'
  // copies, copies attached as MEMORY replicas, requests refused for want
  // of room (DRAM at the eviction watermark, or the node's segments full),
  // reserved ranges given back (abandoned, timed out, or the object changed
  // meanwhile), and reservations in flight now.
  uint64_t promotions_granted = 0;
  uint64_t promoted = 0;
  uint64_t promotions_refused = 0;
  uint64_t promotions_abandoned = 0;
  uint64_t promotions_inflight = 0;
  // Upserts (PutConfig::replace): MEMORY bytes of replaced versions held
  // until their readers' leases end, now; and versions swapped in by
  // PutEnd since start.
  uint64_t retired_bytes = 0;
  uint64_t upserts = 0;
  // One-round-trip puts: reservations granted (ReservePut, and CommitPut's
  // renewals), committed into objects, given back unused (deadline passed,
  // client expired, a segment went) since start, and held now.
  uint64_t put_reservations_granted = 0;
  uint64_t put_reservations_committed = 0;
  uint64_t put_reservations_released = 0;
  uint64_t put_reservations_held = 0;
};

}  // namespace shelfmark
