// Bucket backend recovery record: the encoding of `<bucket_id>.meta`, which
// lists the objects packed into `<bucket_id>.bucket` (per object: key bytes
// then value bytes).
//
// Layout (all integers little-endian, fixed width):
//   magic "SMBKMETA" (8 bytes) | u32 version | u32 entry count
//   u64 bucket_id | u64 bucket_size (bytes of the .bucket file)
//   u64 batch_first_id | u32 batch_count   (the WriteBatch this bucket belongs
//                                           to: buckets batch_first_id ..
//                                           batch_first_id + batch_count - 1)
//   per entry: u32 tenant_size | tenant | u32 key_size | key
//              | u64 offset (of the value bytes) | u64 data_size
//              | u64 checksum (XXH3-64, seed 0, of the value bytes:
//                ValueChecksum, storage_backend.h; every read verifies it)
//   u64 XXH3-64 (seed 0) of every byte before it.
// Version 1 had no per-entry checksum; the backend discards such records
// (BucketMetaVersion tells them from a newer format's).
//
// Contracts: EncodeBucketMeta never fails for a meta that satisfies the
// invariants below. DecodeBucketMeta never crashes, never reads out of bounds
// and never allocates more than the input justifies: anything that is not
// exactly what EncodeBucketMeta produces (bad magic, checksum mismatch,
// truncation, trailing bytes, tenant of 0 or > kMaxTenantLength bytes, key of
// 0 or > kMaxKeyLength bytes, an entry whose key+value range is not inside
// [0, bucket_size), bucket_id outside the batch range, batch_count 0) is
// DATA_CORRUPTED; an intact record of another version is VERSION_MISMATCH.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace shelfmark {

inline constexpr uint32_t kBucketMetaVersion = 2;

struct BucketMetaEntry {
  std::string tenant;
  std::string key;
  uint64_t offset = 0;  // of the value; the key lies at offset - key.size()
  uint64_t data_size = 0;
  uint64_t checksum = 0;  // ValueChecksum of the value bytes

  bool operator==(const BucketMetaEntry&) const = default;
};

struct BucketMeta {
  uint64_t bucket_id = 0;
  uint64_t bucket_size = 0;
  uint64_t batch_first_id = 0;
  uint32_t batch_count = 1;
  std::vector<BucketMetaEntry> entries;

  bool operator==(const BucketMeta&) const = default;
};

std::string EncodeBucketMeta(const BucketMeta& meta);
Result<BucketMeta> DecodeBucketMeta(std::string_view bytes);
// The version field of a record that starts with the magic; 0 otherwise (it
// does not check the record: for telling an older format from a newer one
// after DecodeBucketMeta answered VERSION_MISMATCH).
uint32_t BucketMetaVersion(std::string_view bytes);

}  // namespace shelfmark
