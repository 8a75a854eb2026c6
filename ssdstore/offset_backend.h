// OffsetBackend ("offset_allocator_storage_backend"): every object is one
// record (offset_record.h) inside a single preallocated kv_cache.data, placed
// by an OffsetAllocator with 4 KiB alignment. The DRAM index maps
// (tenant, key) -> {offset, total_size, value_size, allocation, fifo seq}.
//
// Eviction: FIFO by write sequence. When a batch would push the allocated
// bytes above high_watermark * capacity, the oldest objects are evicted until
// it fits under low_watermark * capacity (and more, oldest first, while an
// allocation still fails, or while the object count would pass max_objects).
// Each evicted key is removed from the index, the evict callback is called
// for it, and only then is its space freed; space an in-flight Read still
// uses is freed when that read finishes. A batch that fails after evicting
// does not bring the evicted objects back.
//
// Persistence (OffsetPersistMode):
//  - kDisabled: Open starts empty (removes an old kv_cache.meta; the data
//    file's bytes are ignored and overwritten).
//  - kRelaxed: a checkpoint (offset_checkpoint.h) every persist_interval
//    (at least 5 s) from a background thread and at Close(). After a crash,
//    objects of the last checkpoint that still verify come back; later ones
//    do not.
//  - kStrict: after every WriteBatch and Remove, fdatasync kv_cache.data and
//    write a checkpoint that includes the change; if either fails the call
//    fails and its effect is not visible (memory is left as before).
//
// Recovery (Open, relaxed/strict): kv_cache.meta is the truth. Every entry's
// record is read back and verified once (header, tenant, key, sequence equal
// to the entry's, CRC-32C over the whole record); failures, overlapping or
// out-of-range entries are dropped and counted. Free space is the complement
// of the surviving records. A missing checkpoint starts empty; a corrupt one
// (DATA_CORRUPTED) starts empty and says so in recovery_report(); an I/O error
// (directory, data file or meta file unreadable: EACCES, EIO, ...) or a
// checkpoint of another format version fails Open and deletes nothing.
// Integrity: the index holds each value's XXH3-64 (ValueChecksum), computed
// from the bytes WriteBatch writes (recovery: from the bytes whose CRC-32C
// it just verified); every read hashes what it read and returns it only
// when it matches. A record that does not read back intact (other bytes, a
// truncated file's short read, a read error) is dropped from the index and
// answered DATA_CORRUPTED (storage_backend.h); ReadValueCached leaves it to
// ReadValue. (XXH3 rather than the record's CRC-32C: it runs several times
// faster, and the value alone is read.)
//
// Relaxed mode: a Remove or eviction after the last checkpoint is not
// durable; after a crash such an object comes back if its bytes still verify
// (it is intact, and List() re-reports it).
//
// Costs (known, acceptable for now): a strict checkpoint rewrites the whole
// index per batch; recovery reads every live record once; batches are
// written one at a time.
//
// Thread safety: all methods may be called from any thread. The evict
// callback runs on a writer's thread without backend locks held, but while
// the batch waits: it must not call WriteBatch, Remove, WriteCheckpoint or
// Close. WriteBatch,
// Remove, checkpoints and Close are serialised by write_mu_; reads only
// take mu_ briefly to look up and pin a record, and read without locks.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/result.h"
#include "common/offset_allocator.h"
#include "ssdstore/file_io.h"
#include "ssdstore/offset_checkpoint.h"
#include "ssdstore/storage_backend.h"
#include "ssdstore/storage_config.h"

namespace shelfmark {

using OffsetPersistMode = StorageConfig::PersistMode;

inline constexpr std::string_view kOffsetBackendName = "offset_allocator_storage_backend";
inline constexpr std::string_view kOffsetDataFileName = "kv_cache.data";
inline constexpr uint32_t kMinPersistIntervalSeconds = 5;

struct OffsetBackendOptions {
  std::string root;             // directory of kv_cache.data / kv_cache.meta (created if missing)
  uint64_t capacity_bytes = 0;  // size of kv_cache.data; rounded down to 4 KiB; >= 4 KiB
  OffsetPersistMode persist_mode = OffsetPersistMode::kDisabled;
  uint32_t persist_interval_seconds = 60;  // relaxed; raised to kMinPersistIntervalSeconds
  double high_watermark = 0.95;            // 0 < low <= high <= 1
  double low_watermark = 0.85;
  uint64_t max_objects = 0;  // 0: no limit; else FIFO-evict to stay at or under it
};

// The options a parsed environment (storage_config.h) asks for.
OffsetBackendOptions OffsetOptionsFromConfig(const StorageConfig& config);

// What Open found (for logs and tests).
struct OffsetRecoveryReport {
  bool checkpoint_found = false;
  bool checkpoint_corrupt = false;  // unreadable content: started empty
  uint64_t recovered = 0;           // entries that verified
  uint64_t dropped = 0;             // entries dropped (bad record, overlap, range)
  uint64_t tombstones = 0;          // tombstones listed in the checkpoint
};

class OffsetBackend final : public StorageBackend {
 public:
  // `io` must outlive the backend. INVALID_PARAMS for bad options; FILE_*
  // codes for I/O errors; VERSION_MISMATCH for a checkpoint of another format.
  static Result<std::unique_ptr<OffsetBackend>> Open(FileIo* io, OffsetBackendOptions options);
  // Stops the checkpoint thread and closes the file without a checkpoint
  // (a crash, as far as the files are concerned); Close() first to keep data.
  ~OffsetBackend() override;

  std::string_view name() const override { return kOffsetBackendName; }
  // BUFFER_OVERFLOW when an object cannot fit even with everything else
  // evicted (or the batch alone has more than max_objects keys); INVALID_KEY / INVALID_PARAMS for bad keys or tenants (an empty
  // tenant means kDefaultTenant); FILE_WRITE_FAIL on I/O errors.
  Result<std::vector<StoredLocation>> WriteBatch(const std::vector<StoredObject>& batch) override;
  ErrorCode ReadValue(std::string_view tenant, std::string_view key, uint64_t expected_size,
                      std::string* out, DiskPlace* place) override;
  ErrorCode ReadValueCached(std::string_view tenant, std::string_view key,
                            uint64_t expected_size, std::string* out, DiskPlace* place,
                            bool* served) override;
  ErrorCode Remove(std::string_view tenant, std::string_view key) override;
  std::vector<StoredLocation> List() const override;
  uint64_t object_count() const override;
  uint64_t used_bytes() const override;  // allocated bytes of kv_cache.data
  uint64_t corrupt_records() const override;
  void SetEvictCallback(EvictCallback cb) override;
  // Final checkpoint (relaxed and strict), then closes the data file. Later
  // calls other than the destructor fail with UNAVAILABLE_IN_CURRENT_STATUS.
  ErrorCode Close() override;

  // Writes a checkpoint now (relaxed/strict; OK and nothing in disabled mode).
  ErrorCode WriteCheckpoint();
  const OffsetRecoveryReport& recovery_report() const { return report_; }
  StorageRecovery recovery() const override;
  uint64_t capacity() const { return capacity_; }

 private:
  // Looks the key up, pins its extent and reads the value (cached_only:
  // PReadCached; *served false when that would have to wait).
  ErrorCode ReadIndexed(std::string_view tenant, std::string_view key, uint64_t expected_size,
                        std::string* out, DiskPlace* place, bool cached_only, bool* served);
  using IndexKey = std::pair<std::string, std::string>;  // (tenant, key)
  struct IndexKeyHash {
    size_t operator()(const IndexKey& k) const;
  };
  // Where a record's allocation lies; shared by the index and pinned reads.
  struct Extent {
    uint64_t offset = 0;
    uint64_t alloc_size = 0;
    int readers = 0;        // in-flight reads
    bool released = false;  // out of the index: free when readers reach 0
  };
  struct Entry {
    std::shared_ptr<Extent> extent;
    uint64_t total_size = 0;
    uint64_t value_size = 0;
    uint64_t seq = 0;
    uint64_t checksum = 0;  // ValueChecksum of the value
  };
  // One record of a batch being written.
  struct Pending {
    IndexKey id;
    Entry entry;
  };

  OffsetBackend(FileIo* io, OffsetBackendOptions options, uint64_t capacity);

  ErrorCode OpenFiles();
  ErrorCode Recover();
  // Rebuilds index, FIFO and allocator from a checkpoint (I/O errors fail).
  ErrorCode RecoverEntries(const Checkpoint& checkpoint);
  // Counts a dropped entry and keeps its reason (the first few).
  void Drop(const CheckpointEntry& e, std::string_view why);

  // Evicts the oldest objects while `allocated + extra_bytes > target_bytes`
  // or `count + extra_objects > max_objects` (when max_objects != 0), or just
  // one when `force_one`; returns false when there was nothing to evict.
  bool EvictDown(uint64_t extra_bytes, uint64_t target_bytes, uint64_t extra_objects,
                 bool force_one) REQUIRES(write_mu_);
  Result<uint64_t> AllocateWithEviction(uint64_t size) REQUIRES(write_mu_);
  void ReleaseLocked(const std::shared_ptr<Extent>& extent) REQUIRES(mu_);
  void EraseLocked(const IndexKey& id) REQUIRES(mu_);
  // Drops the record of `id` that a read found corrupt (if still indexed at
  // `extent`) and counts it.
  void DropCorruptLocked(const IndexKey& id, const std::shared_ptr<Extent>& extent) REQUIRES(mu_);
  ErrorCode WriteRecord(const StoredObject& obj, const Pending& p);
  // The checkpoint of the index as it will be after dropping `removed` and
  // adding `added` (in order).
  Checkpoint BuildCheckpoint(const std::vector<IndexKey>& removed,
                             const std::vector<Pending>& added) REQUIRES(write_mu_);
  ErrorCode PersistLocked(const std::vector<IndexKey>& removed, const std::vector<Pending>& added)
      REQUIRES(write_mu_);
  void CheckpointLoop();
  void StopCheckpointer();
  // Reads the record back and checks it (DATA_CORRUPTED); *checksum: the
  // value's ValueChecksum.
  ErrorCode VerifyOnDisk(const CheckpointEntry& e, uint64_t* checksum);

  FileIo* const io_;
  const OffsetBackendOptions options_;
  const uint64_t capacity_;
  int data_fd_ = -1;
  OffsetRecoveryReport report_;
  std::vector<std::string> dropped_reasons_;  // first few, for recovery()

  Mutex write_mu_;  // before mu_
  uint64_t next_seq_ GUARDED_BY(write_mu_) = 1;
  std::vector<IndexKey> tombstones_ GUARDED_BY(write_mu_);

  mutable Mutex mu_;
  OffsetAllocator allocator_ GUARDED_BY(mu_);
  std::unordered_map<IndexKey, Entry, IndexKeyHash> index_ GUARDED_BY(mu_);
  std::map<uint64_t, IndexKey> fifo_ GUARDED_BY(mu_);  // seq -> key, oldest first
  EvictCallback on_evict_ GUARDED_BY(mu_);
  bool closed_ GUARDED_BY(mu_) = false;
  uint64_t corrupt_records_ GUARDED_BY(mu_) = 0;
  int active_reads_ GUARDED_BY(mu_) = 0;
  std::condition_variable_any reads_done_;

  Mutex stop_mu_;
  std::condition_variable_any stop_cv_;
  bool stop_ GUARDED_BY(stop_mu_) = false;
  Mutex join_mu_;
  std::thread checkpointer_ GUARDED_BY(join_mu_);
};

}  // namespace shelfmark
