// StorageBackend: a node's SSD store for LOCAL_DISK replicas, with its own
// DRAM index (the second level of the two-level location: key -> place in
// the node's files). Two implementations: BucketBackend
// ("bucket_storage_backend", bucket_backend.h) and OffsetBackend
// ("offset_allocator_storage_backend", offset_backend.h).
//
// Contracts:
//  - Keys are (tenant, key) pairs as in common/object_key.h.
//  - WriteBatch is all or nothing: OK means every object of the batch is
//    stored, indexed and (per the backend's persistence rule) durable; on any
//    error nothing of the batch is visible and the caller does not tell the
//    master. A key already stored is replaced.
//  - Every record carries the checksum of its value (ValueChecksum below),
//    computed by the backend from the bytes it writes and kept in its DRAM
//    index (and on disk as each backend documents).
//  - Read fills `out` with exactly the stored bytes, verified against that
//    checksum before it returns; OBJECT_NOT_FOUND for an unknown key;
//    INVALID_PARAMS when expected_size differs from the stored size (0: any
//    size). A record that does not read back intact (checksum mismatch, a
//    read error, its file missing or shorter than recorded) is never
//    returned: it is dropped from the index (no evict callback: the caller
//    reports it), counted in corrupt_records() and answered DATA_CORRUPTED
//    (later reads: OBJECT_NOT_FOUND). Lookups never read SSD metadata: the
//    index is in DRAM. ReadValue does the same and, when `place` is not null
//    and the read succeeds, says where the bytes came from (the file and
//    offset the index pointed at for this very read).
//  - Eviction: before space holding an object is reused or a file removed,
//    `on_evict` is called for each evicted key (the node tells the master,
//    EvictDiskReplica); in-flight reads of an evicted object finish first.
//  - Open() rebuilds the index from the recovery files (drops torn or corrupt
//    ones as documented per backend) and fails start-up, without deleting
//    anything, on a transient error (e.g. a directory it cannot open).
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/types.h"

namespace shelfmark {

struct StoredObject {
  std::string tenant;
  std::string key;
  std::string_view value;  // the bytes to store (WriteBatch); not owned
};

// Where an object lies, as reported to the master (StorageObjectMetadata
// minus the endpoint) and listed on re-report after a restart.
struct StoredLocation {
  std::string tenant;
  std::string key;
  int64_t bucket_id = 0;  // offset backend: 0
  int64_t offset = 0;     // of the value bytes in the bucket / data file
  int64_t key_size = 0;
  int64_t data_size = 0;
  // ValueChecksum of the stored value (every record carries it): reported
  // so the master attaches the copy only to the version it is of. nullopt:
  // a backend that does not know it (the master then attaches it only to a
  // key it does not hold).
  std::optional<uint64_t> checksum = std::nullopt;
};

// Where one read found an object's value bytes: bucket backend
// `<bucket_id>.bucket` at `offset`; offset backend kv_cache.data at `offset`
// (bucket_id 0).
struct DiskPlace {
  int64_t bucket_id = 0;
  int64_t offset = 0;
};

// What a backend's Open found wrong on disk and repaired, for the node's
// log and metrics (nothing here is an error: Open succeeded).
struct StorageRecovery {
  uint64_t files_discarded = 0;   // files removed (torn, undecodable, orphaned, partial batch)
  uint64_t records_dropped = 0;   // indexed entries whose record did not verify
  bool checkpoint_corrupt = false;  // the index checkpoint was unreadable: started empty
  // The first kMaxReasons problems, one line each ("<file>: <why>").
  std::vector<std::string> reasons;
  static constexpr size_t kMaxReasons = 8;
  void Note(std::string reason) {
    if (reasons.size() < kMaxReasons) reasons.push_back(std::move(reason));
  }
  bool empty() const { return files_discarded == 0 && records_dropped == 0 && !checkpoint_corrupt; }
  // "discarded N file(s), dropped M record(s)[, corrupt checkpoint]: reason; reason".
  std::string Describe() const;
};

// The checksum every SSD record carries: XXH3-64 (seed 0) of the value, the
// same function as the client's ObjectChecksum (client/client.h).
uint64_t ValueChecksum(std::string_view value);

// Logs (stderr) that `backend` at `root` dropped the record of (tenant, key)
// because it did not read back intact, the `count`-th such record: the
// first ten, then every thousandth (a removed directory makes every record
// a miss; the metric counts them all).
void LogCorruptRecord(std::string_view backend, std::string_view root, std::string_view tenant,
                      std::string_view key, uint64_t count);

using EvictCallback =
    std::function<void(std::string_view tenant, std::string_view key)>;

class StorageBackend {
 public:
  virtual ~StorageBackend() = default;
  virtual std::string_view name() const = 0;
  virtual Result<std::vector<StoredLocation>> WriteBatch(const std::vector<StoredObject>& batch) = 0;
  virtual ErrorCode ReadValue(std::string_view tenant, std::string_view key,
                              uint64_t expected_size, std::string* out, DiskPlace* place) = 0;
  ErrorCode Read(std::string_view tenant, std::string_view key, uint64_t expected_size,
                 std::string* out) {
    return ReadValue(tenant, key, expected_size, out, nullptr);
  }
  // ReadValue that never waits for the device (it may run on a network
  // progress thread): *served false and nothing read when the bytes are not
  // all in the page cache or a file would have to be opened first, or when
  // they do not read back intact (it never drops a record: the caller's
  // ReadValue does); else *served true and ReadValue's answer (an unknown
  // key or a size mismatch is answered here too). The default never serves.
  virtual ErrorCode ReadValueCached(std::string_view /*tenant*/, std::string_view /*key*/,
                                    uint64_t /*expected_size*/, std::string* /*out*/,
                                    DiskPlace* /*place*/, bool* served) {
    *served = false;
    return ErrorCode::OK;
  }
  virtual ErrorCode Remove(std::string_view tenant, std::string_view key) = 0;
  // Every stored object (re-reported to a master that lost them).
  virtual std::vector<StoredLocation> List() const = 0;
  virtual uint64_t object_count() const = 0;
  virtual uint64_t used_bytes() const = 0;
  // Records dropped because they did not read back intact (see Read).
  virtual uint64_t corrupt_records() const = 0;
  virtual void SetEvictCallback(EvictCallback cb) = 0;
  // Clean shutdown (relaxed persistence: a final checkpoint).
  virtual ErrorCode Close() = 0;
  // What Open repaired.
  virtual StorageRecovery recovery() const = 0;
};

// A decorator's base: forwards every call to `inner` (not owned, must
// outlive it); a decorator overrides only what it changes.
class ForwardingBackend : public StorageBackend {
 public:
  explicit ForwardingBackend(StorageBackend* inner) : inner_(inner) {}

  std::string_view name() const override { return inner_->name(); }
  Result<std::vector<StoredLocation>> WriteBatch(const std::vector<StoredObject>& batch) override {
    return inner_->WriteBatch(batch);
  }
  ErrorCode ReadValue(std::string_view tenant, std::string_view key, uint64_t expected_size,
                      std::string* out, DiskPlace* place) override {
    return inner_->ReadValue(tenant, key, expected_size, out, place);
  }
  ErrorCode ReadValueCached(std::string_view tenant, std::string_view key,
                            uint64_t expected_size, std::string* out, DiskPlace* place,
                            bool* served) override {
    return inner_->ReadValueCached(tenant, key, expected_size, out, place, served);
  }
  ErrorCode Remove(std::string_view tenant, std::string_view key) override {
    return inner_->Remove(tenant, key);
  }
  std::vector<StoredLocation> List() const override { return inner_->List(); }
  uint64_t object_count() const override { return inner_->object_count(); }
  uint64_t used_bytes() const override { return inner_->used_bytes(); }
  uint64_t corrupt_records() const override { return inner_->corrupt_records(); }
  void SetEvictCallback(EvictCallback cb) override { inner_->SetEvictCallback(std::move(cb)); }
  ErrorCode Close() override { return inner_->Close(); }
  StorageRecovery recovery() const override { return inner_->recovery(); }

 private:
  StorageBackend* const inner_;
};

}  // namespace shelfmark
