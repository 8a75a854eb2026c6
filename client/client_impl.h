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
#include <condition_variable>
#include <functional>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "client/client.h"
#include "client/location_cache.h"
#include "rpc/master_client.h"
#include "common/offset_allocator.h"
#include "transport/am_transport.h"

namespace shelfmark {

inline constexpr uint64_t kStagingAlignment = 64;

using EngineRegions = std::vector<std::pair<TransportEngine*, MemoryRegion>>;

struct Client::Impl {
  Impl();
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

  Mutex buffers_mu;
  std::map<void*, EngineRegions> buffers GUARDED_BY(buffers_mu);

  std::optional<LocationCache> cache;  // made in Create (on `clock`)

  // This thread's connection to the master (made on first use).
  MasterClient& master();
  // Registers [addr, addr + size) with every engine; on failure undoes it.
  Result<EngineRegions> RegisterAll(void* addr, uint64_t size);
  ErrorCode OpenEngines();
  ErrorCode SetUpStaging();

  // --- locations ---
  // MEMORY replicas (this host's first), then LOCAL_DISK ones: the order of
  // client.h without prefer_local_disk (the order the cache keeps); the
  // lease counted from start_ms.
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
  // BatchGet's Locate: the cache's entries, and one BatchGetReplicaList for
  // the other keys (answers cached); an item left without a location has
  // its error in *out.
  std::vector<Located> LocateAll(std::string_view tenant, const std::vector<std::string>& keys,
                                 std::vector<Result<std::string>>* out);

  // --- reads (dst: registered memory of at least loc.info.size bytes) ---
  // Lease, then checksum, of bytes already read.
  ErrorCode CheckRead(const ObjectLocation& loc, const uint8_t* bytes) const;
  ErrorCode ReadReplica(const ObjectLocation& loc, const MemoryDescriptor& replica, uint8_t* dst);
  // ReadLocalDiskInto from the replica's node: the reply lands in dst (any
  // memory), then CheckRead.
  ErrorCode ReadDiskReplica(const ObjectLocation& loc, const DiskDescriptor& replica, uint8_t* dst);
  // Calls `read` for every replica in order until one succeeds or answers
  // LEASE_EXPIRED (see client.h, Failover); the last replica's code.
  using ReplicaReader = std::function<ErrorCode(const ReplicaDescriptor&)>;
  ErrorCode ReadEach(const ObjectLocation& loc, const ReplicaReader& read);
  ErrorCode Read(const ObjectLocation& loc, uint8_t* dst);
  // Read into a new string: LOCAL_DISK replies land in the string itself,
  // MEMORY reads go through a staging block (RMA needs registered memory).
  Result<std::string> ReadToString(const ObjectLocation& loc);
  // Get's read of what Locate found: ReadToString; when that fails the
  // key's entry is dropped and, if `found` came from the cache, GetFresh.
  Result<std::string> ReadLocated(std::string_view tenant, std::string_view key,
                                  const GetOptions& options, const Located& found);
  // Get with a master lookup, whatever the cache holds.
  Result<std::string> GetFresh(std::string_view tenant, std::string_view key,
                               const GetOptions& options);

  // --- writes ---
  // One WRITE of [src, src + size) to every replica, in one Transfer.
  ErrorCode WriteReplicas(const std::vector<ReplicaDescriptor>& replicas, uint8_t* src,
                          uint64_t size);
};

// A range of registered memory a call moves bytes through: a block of the
// staging buffer (waiting while it is full), or, for a value larger than
// the staging buffer, memory mapped and registered for the call. Given back
// on destruction.
class StagingBlock {
 public:
  StagingBlock(Client::Impl* impl, uint64_t size);
  ~StagingBlock();
  StagingBlock(const StagingBlock&) = delete;
  StagingBlock& operator=(const StagingBlock&) = delete;

  // nullptr when temporary memory could not be mapped or registered.
  uint8_t* data() const { return data_; }

 private:
  Client::Impl* const impl_;
  const uint64_t size_;
  uint8_t* data_ = nullptr;
  uint64_t offset_ = 0;
  uint64_t pooled_size_ = 0;  // 0: temporary memory
  EngineRegions temp_regions_;
};

// The single op of reading or writing a whole object at `replica`.
inline TransferOp WholeObjectOp(const MemoryDescriptor& replica, void* local, uint64_t size) {
  TransferOp op;
  op.remote = &replica;
  op.local = local;
  op.length = size;
  return op;
}

// The staging size `size` takes (64-byte aligned, at least one unit).
inline uint64_t StagingSize(uint64_t size) {
  return (std::max<uint64_t>(size, 1) + kStagingAlignment - 1) & ~(kStagingAlignment - 1);
}

}  // namespace shelfmark
