// BucketBackend ("bucket_storage_backend", the default StorageBackend):
// objects packed into `<bucket_id>.bucket` files (per object: key bytes then
// value bytes) under one directory, each described by `<bucket_id>.meta`
// (bucket_format.h). The index (tenant, key) -> {bucket_id, offset, key_size,
// data_size, checksum} lives in DRAM; reads never touch a .meta.
//
// Integrity: each .meta entry holds the XXH3-64 of its value
// (ValueChecksum), computed from the bytes WriteBatch writes; every read
// hashes what it read and returns it only when it matches. A record that
// does not read back intact (other bytes, its .bucket gone or truncated, a
// read error) is dropped from the index and answered DATA_CORRUPTED
// (storage_backend.h); the page-cache path (ReadValueCached) leaves such a
// record to ReadValue.
//
// Persistence rule (WriteBatch): per bucket, write the .bucket, fdatasync it,
// then write the .meta to `<id>.meta.tmp`, fsync, rename to `<id>.meta`,
// fsync the directory. Objects are indexed only after every bucket of the
// batch has its durable .meta. A batch larger than one bucket (bucket_bytes
// or bucket_keys) spans consecutive bucket ids; every .meta names the batch
// (first id, count) and recovery keeps a batch only when all its buckets are
// intact, so a batch is all or nothing across crashes too. On an error the
// buckets already written are removed and nothing is indexed.
//
// Recovery (Open): scans the directory; removes `*.meta.tmp`, any .meta that
// does not decode (DATA_CORRUPTED) or whose .bucket is missing or shorter
// than recorded, any .bucket without a .meta, and every bucket of an
// incomplete batch. Within the rest, the newest bucket id wins for a key seen
// several times. New ids continue after the highest id seen. A directory it
// cannot list, or a read error, fails Open without deleting anything; so does
// an intact .meta of a newer format version (VERSION_MISMATCH); one of an
// older version (1: no per-object checksums) is discarded with its bucket.
//
// Eviction: whole batches of buckets (a single-bucket batch is one bucket),
// oldest bucket id first (kFifo) or least recently read/written first
// (kLru), before a batch is written, until used_bytes + batch <= total_bytes
// and object_count + batch keys <= total_keys (0: no limit), and, when a
// write fails because the disk is full (ENOSPC, EDQUOT), one batch at a
// time until the write succeeds or nothing is left (then the batch fails):
// a full disk acts as the size limit. For each evicted
// key still indexed the evict callback runs, then the .meta files go; each
// .bucket file is removed when the last in-flight read of it finishes
// (buckets are shared_ptr-held by readers). A batch whose keys are all
// removed or replaced is deleted the same way (no callbacks).
//
// used_bytes() counts the .bucket files of live buckets (bytes of removed or
// replaced objects stay counted until their bucket goes).
//
// Thread safety: every method may be called from any thread; one mutex
// guards the index and bucket table, file I/O runs outside it. The evict
// callback runs on the thread of the WriteBatch/Remove that evicted, with no
// backend lock held (it may call Read, not WriteBatch on this backend).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "common/result.h"
#include "ssdstore/bucket_format.h"
#include "ssdstore/file_io.h"
#include "ssdstore/storage_backend.h"

namespace shelfmark {

inline constexpr std::string_view kBucketBackendName = "bucket_storage_backend";

// The file holding bucket `id`'s bytes, relative to the backend's root:
// "<id>.bucket" (a DiskPlace's bucket_id names it).
std::string BucketFileName(uint64_t id);

enum class BucketEviction { kFifo, kLru };

struct BucketBackendOptions {
  std::string root;                         // directory (created when missing)
  uint64_t bucket_bytes = 256ull << 20;     // soft size of one .bucket file
  uint64_t bucket_keys = 4096;              // most objects in one bucket
  uint64_t total_bytes = 0;                 // 0: no limit
  uint64_t total_keys = 0;                  // 0: no limit
  BucketEviction eviction = BucketEviction::kFifo;
  uint64_t max_open_fds = 64;               // read fds kept open
};

class BucketBackend final : public StorageBackend {
 public:
  // INVALID_PARAMS for an empty root or zero bucket_bytes/bucket_keys/
  // max_open_fds; otherwise the recovery above.
  static Result<std::unique_ptr<BucketBackend>> Open(BucketBackendOptions options,
                                                     std::shared_ptr<FileIo> io);
  ~BucketBackend() override;

  std::string_view name() const override { return kBucketBackendName; }
  // INVALID_KEY / INVALID_PARAMS for a bad key or tenant (empty tenant:
  // kDefaultTenant), INVALID_PARAMS for a batch that exceeds total_bytes or
  // total_keys alone; FILE_* on I/O errors (nothing of the batch visible).
  Result<std::vector<StoredLocation>> WriteBatch(const std::vector<StoredObject>& batch) override;
  ErrorCode ReadValue(std::string_view tenant, std::string_view key, uint64_t expected_size,
                      std::string* out, DiskPlace* place) override;
  ErrorCode ReadValueCached(std::string_view tenant, std::string_view key,
                            uint64_t expected_size, std::string* out, DiskPlace* place,
                            bool* served) override;
  ErrorCode Remove(std::string_view tenant, std::string_view key) override;
  std::vector<StoredLocation> List() const override;
  uint64_t object_count() const override;
  uint64_t used_bytes() const override;
  uint64_t corrupt_records() const override;
  void SetEvictCallback(EvictCallback cb) override;
  // Drops the open read fds; the data is already durable. Later calls
  // answer UNAVAILABLE_IN_CURRENT_STATUS.
  ErrorCode Close() override;
  StorageRecovery recovery() const override { return recovery_; }

  // Live bucket ids, ascending (tests and tools).
  std::vector<uint64_t> BucketIds() const;
  // Batches evicted because a write met a full disk.
  uint64_t disk_full_evictions() const {
    return disk_full_evictions_.load(std::memory_order_relaxed);
  }

 private:
  struct Bucket;
  struct Victim;
  struct IndexKey {
    std::string tenant;
    std::string key;
    bool operator==(const IndexKey&) const = default;
  };
  struct IndexKeyHash {
    size_t operator()(const IndexKey& k) const;
  };
  struct Location {
    uint64_t bucket_id = 0;
    uint64_t offset = 0;
    uint64_t key_size = 0;
    uint64_t data_size = 0;
    uint64_t checksum = 0;  // ValueChecksum of the value
  };

  BucketBackend(BucketBackendOptions options, std::shared_ptr<FileIo> io);
  ErrorCode Recover();
  std::string PathOf(uint64_t id, std::string_view suffix) const;
  // *full: it failed because the disk is full.
  ErrorCode WriteBucket(const std::vector<StoredObject>& batch, const std::vector<size_t>& items,
                        uint64_t id, uint64_t first_id, uint32_t count, BucketMeta* meta,
                        bool* full);
  // Evicts one batch (the policy's victim) for a write that met a full
  // disk; false when there is none.
  bool EvictForDiskFull();
  void RemoveBucketFiles(const std::vector<uint64_t>& ids);
  // Installs a durable bucket and indexes its entries (newest wins);
  // appends groups that became empty to *empty.
  void InstallLocked(std::shared_ptr<Bucket> bucket, std::vector<Victim>* empty) REQUIRES(mu_);
  void DropKeyLocked(const Location& loc, std::vector<Victim>* empty) REQUIRES(mu_);
  // Detaches the whole batch group of `any_id` from the table and index.
  void DetachGroupLocked(uint64_t any_id, bool collect_keys, std::vector<Victim>* out)
      REQUIRES(mu_);
  void EvictForLocked(uint64_t bytes, uint64_t keys, std::vector<Victim>* out) REQUIRES(mu_);
  uint64_t PickVictimLocked() const REQUIRES(mu_);
  // Callbacks, then .meta removal; the .bucket goes with the last reference.
  void FinishVictims(std::vector<Victim> victims);
  // Looks the key up and reads it (cached_only: PReadCached, and no open of
  // a bucket file; *served false when that would have to wait).
  ErrorCode ReadIndexed(std::string_view tenant, std::string_view key, uint64_t expected_size,
                        std::string* out, DiskPlace* place, bool cached_only, bool* served);
  // Reads and verifies; DATA_CORRUPTED when the record does not read back
  // intact (cached_only: *served false instead).
  ErrorCode ReadAt(const std::shared_ptr<Bucket>& bucket, const Location& loc, std::string* out,
                   bool cached_only, bool* served);
  // Drops the record `loc` of `k` (if the index still points at it).
  void DropCorrupt(const IndexKey& k, const Location& loc);

  const BucketBackendOptions options_;
  const std::shared_ptr<FileIo> io_;

  mutable Mutex mu_;
  bool closed_ GUARDED_BY(mu_) = false;
  StorageRecovery recovery_;  // what Recover() repaired; written only during Open
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
  uint64_t tick_ GUARDED_BY(mu_) = 0;
  uint64_t used_bytes_ GUARDED_BY(mu_) = 0;
  uint64_t reserved_bytes_ GUARDED_BY(mu_) = 0;  // batches being written
  uint64_t reserved_keys_ GUARDED_BY(mu_) = 0;
  uint64_t open_fds_ GUARDED_BY(mu_) = 0;
  std::map<uint64_t, std::shared_ptr<Bucket>> buckets_ GUARDED_BY(mu_);
  std::unordered_map<IndexKey, Location, IndexKeyHash> index_ GUARDED_BY(mu_);

  std::atomic<uint64_t> corrupt_records_{0};
  std::atomic<uint64_t> disk_full_evictions_{0};

  Mutex cb_mu_;
  EvictCallback on_evict_ GUARDED_BY(cb_mu_);
};

}  // namespace shelfmark
