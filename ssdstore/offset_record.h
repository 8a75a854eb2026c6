// Offset-backend records: how one object lies in kv_cache.data, and CRC-32C.
//
// Layout of a record at a 4 KiB aligned offset (all integers little-endian):
//   header (kRecordHeaderSize = 40 bytes)
//     0  magic      u32  kRecordMagic
//     4  flags      u32  0 (reserved for future use; decode rejects others)
//     8  tenant_len u32  1..kMaxTenantLength
//    12  key_len    u32  1..kMaxKeyLength
//    16  value_len  u64
//    24  seq        u64  the backend's write sequence (also its FIFO order)
//    32  crc        u32  CRC-32C over header bytes [0, 32) + tenant + key + value
//    36  reserved   u32  0
//   tenant bytes, key bytes, zero padding so the value starts on a 4 KiB
//   boundary (RecordValueOffset), then the value bytes.
// A record occupies RecordTotalSize bytes; the allocator rounds that up.
//
// Thread safety: everything here is a pure function (Crc32c picks its
// implementation once, thread-safely).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace shelfmark {

inline constexpr uint32_t kRecordMagic = 0x524B4D53;  // "SMKR"
inline constexpr uint64_t kRecordAlignment = 4096;
inline constexpr uint64_t kRecordHeaderSize = 40;

// CRC-32C (Castagnoli, reflected, init/xorout 0xFFFFFFFF): Crc32c("123456789")
// == 0xE3069283. `crc` continues a previous result (0 to start), so
// Crc32c(b, Crc32c(a)) == Crc32c(a + b). Uses SSE4.2 when the CPU has it,
// slicing-by-8 tables otherwise; both give the same values.
uint32_t Crc32c(const void* data, size_t len, uint32_t crc = 0);
inline uint32_t Crc32c(std::string_view s, uint32_t crc = 0) {
  return Crc32c(s.data(), s.size(), crc);
}
// The portable implementation alone (tests compare it with Crc32c).
uint32_t Crc32cPortable(const void* data, size_t len, uint32_t crc = 0);

struct RecordHeader {
  uint32_t flags = 0;
  uint32_t tenant_len = 0;
  uint32_t key_len = 0;
  uint64_t value_len = 0;
  uint64_t seq = 0;
  uint32_t crc = 0;
};

// Offset of the value inside a record: header + tenant + key rounded up to
// kRecordAlignment.
uint64_t RecordValueOffset(size_t tenant_len, size_t key_len);
// Bytes a record spans: RecordValueOffset + value_len.
uint64_t RecordTotalSize(size_t tenant_len, size_t key_len, uint64_t value_len);

// The record's bytes before the value (header, tenant, key, zero padding;
// RecordValueOffset bytes), with the CRC computed over `value` too. The value
// is written after it separately (pwritev), so it is never copied.
std::string EncodeRecordPrefix(std::string_view tenant, std::string_view key,
                               std::string_view value, uint64_t seq);

// Parses the first kRecordHeaderSize bytes of `bytes`. DATA_CORRUPTED for a
// short buffer, a wrong magic, non-zero flags or reserved bits, or lengths out
// of range. Does not check the CRC (see RecordCrc).
Result<RecordHeader> DecodeRecordHeader(std::string_view bytes);

// The CRC a record with this header, tenant, key and value must carry.
uint32_t RecordCrc(const RecordHeader& header, std::string_view tenant, std::string_view key,
                   std::string_view value);

// OK when `prefix` (RecordValueOffset bytes at least) + `value` form a valid
// record for (tenant, key, seq) whose CRC matches; DATA_CORRUPTED otherwise.
ErrorCode VerifyRecord(std::string_view prefix, std::string_view value, std::string_view tenant,
                       std::string_view key, uint64_t seq);

}  // namespace shelfmark
