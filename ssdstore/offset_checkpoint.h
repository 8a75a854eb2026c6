// kv_cache.meta: the offset backend's checkpoint, the truth about which
// records of kv_cache.data are live after a restart.
//
// Format (little-endian):
//   "SMKVMETA" (8 bytes), version u32 (kCheckpointVersion),
//   data_file_size u64, alignment u64, next_seq u64,
//   free extent count u64, then (offset u64, size u64) per extent,
//   entry count u64, then per entry in FIFO order (oldest first):
//     tenant_len u32, key_len u32, tenant, key,
//     offset u64, total_size u64, value_size u64, seq u64,
//   tombstone count u64, then per tombstone: tenant_len u32, key_len u32,
//     tenant, key (keys removed or evicted since the previous checkpoint),
//   crc u32: CRC-32C of every byte before it.
//
// Decoding is defensive: any truncation, bad count, bad length, trailing
// byte or CRC mismatch is DATA_CORRUPTED; a good magic with another version
// is VERSION_MISMATCH. Semantic checks (extents inside the file, no overlap)
// are the backend's job on recovery.
//
// Writing (WriteCheckpointFile) is crash-safe: the bytes go to
// kv_cache.meta.tmp, which is fsynced, renamed over kv_cache.meta, and the
// directory is fsynced; a crash at any point leaves either the old or the new
// checkpoint in place. The caller fdatasyncs the data file first.
//
// Thread safety: pure functions; a FileIo is used as its contract allows.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "ssdstore/file_io.h"

namespace shelfmark {

inline constexpr uint32_t kCheckpointVersion = 1;
inline constexpr std::string_view kCheckpointFileName = "kv_cache.meta";
inline constexpr std::string_view kCheckpointTempFileName = "kv_cache.meta.tmp";

struct CheckpointEntry {
  std::string tenant;
  std::string key;
  uint64_t offset = 0;      // of the record in kv_cache.data
  uint64_t total_size = 0;  // RecordTotalSize (unaligned)
  uint64_t value_size = 0;
  uint64_t seq = 0;  // the record's sequence = FIFO order
  bool operator==(const CheckpointEntry&) const = default;
};

struct Checkpoint {
  uint64_t data_file_size = 0;
  uint64_t alignment = 0;
  uint64_t next_seq = 0;
  std::vector<std::pair<uint64_t, uint64_t>> free_extents;
  std::vector<CheckpointEntry> entries;                         // FIFO order, oldest first
  std::vector<std::pair<std::string, std::string>> tombstones;  // (tenant, key)
  bool operator==(const Checkpoint&) const = default;
};

std::string EncodeCheckpoint(const Checkpoint& checkpoint);
Result<Checkpoint> DecodeCheckpoint(std::string_view bytes);

// Writes `checkpoint` as dir/kv_cache.meta via the temp file, fsync, rename
// and directory fsync. FILE_* codes from `io` on failure (the old checkpoint
// stays in place).
ErrorCode WriteCheckpointFile(FileIo* io, const std::string& dir, const Checkpoint& checkpoint);

// Reads and decodes dir/kv_cache.meta. FILE_NOT_FOUND when there is none;
// FILE_OPEN_FAIL / FILE_READ_FAIL for I/O errors (the caller must not treat
// these as "no checkpoint"); DATA_CORRUPTED / VERSION_MISMATCH from decoding.
Result<Checkpoint> ReadCheckpointFile(FileIo* io, const std::string& dir);

}  // namespace shelfmark
