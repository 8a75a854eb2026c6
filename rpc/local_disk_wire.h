// The LOCAL_DISK read messages (a UcxAm request to the node that owns the
// object on its SSD, and the node's reply): the user headers carried inside
// UcxAm's own framing (transport/ucx_am.h), little-endian (common/wire_bytes.h).
//
//   request header: magic "SMLQ" (u32), version (u8), request id (u64),
//                   tenant (u32 length + bytes), key (u32 length + bytes),
//                   expected size (u64; 0: any size); no payload.
//   reply header:   magic "SMLR" (u32), version (u8), status (i32, an
//                   ErrorCode), bucket_id (i64), offset (i64), data_size
//                   (u64); the AM reply data is the object's bytes (empty
//                   unless status is OK).
//
//   probe request:  magic "SMLP" (u32), size (u64, at most kMaxProbeBytes);
//                   the reply has no header and `size` bytes of data.
//
// Decoding is bounds-checked: bad magic or version, a truncated message,
// trailing bytes, an empty key, a key longer than kMaxKeyLength or a tenant
// longer than kMaxTenantLength (common/object_key.h) are INVALID_PARAMS
// (an empty tenant means kDefaultTenant). A reply whose status is not an
// ErrorCode decodes as INTERNAL_ERROR (ErrorCodeFromInt).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/error_code.h"
#include "common/result.h"

namespace shelfmark {

// The UcxAm handler id of LOCAL_DISK reads.
inline constexpr uint16_t kLocalDiskReadAmId = 0x4c44;  // "LD"
inline constexpr uint32_t kLocalDiskRequestMagic = 0x514c4d53;  // "SMLQ"
inline constexpr uint32_t kLocalDiskReplyMagic = 0x524c4d53;    // "SMLR"
inline constexpr uint8_t kLocalDiskWireVersion = 1;
// The UcxAm handler id of the probe: an AM round trip that returns `size`
// bytes without touching the disk (the benchmark's transport baseline).
inline constexpr uint16_t kLocalDiskProbeAmId = 0x4c50;  // "LP"
inline constexpr uint32_t kLocalDiskProbeMagic = 0x504c4d53;  // "SMLP"
inline constexpr uint64_t kMaxProbeBytes = 64ull << 20;

struct LocalDiskRequest {
  uint64_t request_id = 0;
  std::string tenant;
  std::string key;
  uint64_t expected_size = 0;
};

struct LocalDiskReply {
  ErrorCode status = ErrorCode::OK;
  int64_t bucket_id = 0;
  int64_t offset = 0;
  uint64_t data_size = 0;
};

// OK when tenant and key fit the limits above, INVALID_PARAMS otherwise.
ErrorCode CheckLocalDiskNames(std::string_view tenant, std::string_view key);

std::string EncodeLocalDiskRequest(const LocalDiskRequest& request);
Result<LocalDiskRequest> DecodeLocalDiskRequest(std::string_view bytes);

std::string EncodeLocalDiskReply(const LocalDiskReply& reply);

// INVALID_PARAMS for bad magic, a wrong length or size > kMaxProbeBytes.
std::string EncodeLocalDiskProbe(uint64_t size);
Result<uint64_t> DecodeLocalDiskProbe(std::string_view bytes);
Result<LocalDiskReply> DecodeLocalDiskReply(std::string_view bytes);

}  // namespace shelfmark
