// The client side of LOCAL_DISK reads: one request (kLocalDiskReadAmId,
// rpc/local_disk_wire.h) on an AmTransport to the node that owns the object
// on its SSD, waiting up to `timeout_ms` for the bytes.
//
// ReadLocalDiskInto lands the bytes straight in the caller's
// [dst, dst + size) (any memory: nothing is registered for two-sided
// messages) and returns where the node found them. ReadLocalDisk returns the
// bytes in a string (tools, tests and the benchmark's placement probe).
//
// Errors: INVALID_PARAMS for a tenant or key outside the wire limits (checked
// before sending); the node's status (OBJECT_NOT_FOUND, INVALID_PARAMS for a
// size mismatch, FILE_READ_FAIL, ...); the transport's own errors
// (TRANSFER_FAIL, ILLEGAL_CLIENT, ...); DATA_CORRUPTED for a reply that does
// not decode or whose data_size disagrees with the bytes received (or with
// the size asked for: `size`, or `expected_size` when not 0); BUFFER_OVERFLOW
// (ReadLocalDiskInto) when the node sends more than `size` bytes.
//
// Thread safety: as AmTransport::CallInto (any thread, concurrent calls).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "transport/am_transport.h"

namespace shelfmark {

// Where the node found the bytes (its StorageBackend's DiskPlace).
struct LocalDiskPlace {
  int64_t bucket_id = 0;
  int64_t offset = 0;
};

struct LocalDiskRead {
  std::string data;
  int64_t bucket_id = 0;  // as LocalDiskPlace
  int64_t offset = 0;
};

Result<LocalDiskPlace> ReadLocalDiskInto(AmTransport& am, std::string_view endpoint,
                                         std::string_view tenant, std::string_view key,
                                         void* dst, uint64_t size, int64_t timeout_ms);

Result<LocalDiskRead> ReadLocalDisk(AmTransport& am, std::string_view endpoint,
                                    std::string_view tenant, std::string_view key,
                                    uint64_t expected_size, int64_t timeout_ms);

// The transport-only round trip of the same shape: a probe
// (kLocalDiskProbeAmId) answered with `size` bytes, no disk involved, landing
// in [dst, dst + size) when dst is set. OK when exactly `size` bytes came
// back; INVALID_PARAMS for size > kMaxProbeBytes; DATA_CORRUPTED for another
// length; the transport's errors as they are.
ErrorCode ProbeLocalDisk(AmTransport& am, std::string_view endpoint, uint64_t size,
                         int64_t timeout_ms, void* dst = nullptr);

}  // namespace shelfmark
