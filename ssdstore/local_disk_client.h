// ReadLocalDisk: the client side of LOCAL_DISK reads: one UcxAm call
// (kLocalDiskReadAmId, local_disk_wire.h) to the node that owns the object on
// its SSD, waiting up to `timeout_ms` for the bytes.
//
// Errors: INVALID_PARAMS for a tenant or key outside the wire limits (checked
// before sending); the node's status (OBJECT_NOT_FOUND, INVALID_PARAMS for a
// size mismatch, FILE_READ_FAIL, ...); UcxAm's own errors (TRANSFER_FAIL,
// ILLEGAL_CLIENT, ...); DATA_CORRUPTED for a reply that does not decode or
// whose data_size disagrees with the bytes received (or, when
// expected_size != 0, with expected_size).
//
// Thread safety: as UcxAm::Call (any thread, concurrent calls allowed).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "transport/ucx_am.h"

namespace shelfmark {

struct LocalDiskRead {
  std::string data;
  int64_t bucket_id = 0;  // where the node found the bytes (DiskPlace)
  int64_t offset = 0;
};

Result<LocalDiskRead> ReadLocalDisk(UcxAm& am, std::string_view endpoint, std::string_view tenant,
                                    std::string_view key, uint64_t expected_size,
                                    int64_t timeout_ms);

// The transport-only round trip of the same shape: a probe AM
// (kLocalDiskProbeAmId) answered with `size` bytes, no disk involved. OK when
// exactly `size` bytes came back; INVALID_PARAMS for size > kMaxProbeBytes;
// DATA_CORRUPTED for another length; UcxAm's errors as they are.
ErrorCode ProbeLocalDisk(UcxAm& am, std::string_view endpoint, uint64_t size, int64_t timeout_ms);

}  // namespace shelfmark
