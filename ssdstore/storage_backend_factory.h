// OpenStorageBackend: the node's SSD store as configured by the environment
// (storage_config.h): a BucketBackend or an OffsetBackend over `io`, with
// StorageConfig mapped onto the backend's options (OffsetOptionsFromConfig
// for the offset backend; the bucket backend takes the bucket and total
// limits and the eviction policy).
//
// Contracts:
//  - `io` null means the real file layer (MakePosixFileIo()). The returned
//    backend keeps `io` alive for as long as it lives (the offset backend
//    itself only borrows a FileIo*).
//  - Errors are the backend's Open errors (INVALID_PARAMS, FILE_*,
//    VERSION_MISMATCH); `*error` (when given) then names the backend, the
//    path and the code.
//
// Thread safety: a pure function; the backend is as storage_backend.h says.
#pragma once

#include <memory>
#include <string>

#include "common/result.h"
#include "ssdstore/file_io.h"
#include "ssdstore/storage_backend.h"
#include "ssdstore/storage_config.h"

namespace shelfmark {

Result<std::unique_ptr<StorageBackend>> OpenStorageBackend(const StorageConfig& config,
                                                           std::shared_ptr<FileIo> io,
                                                           std::string* error);

}  // namespace shelfmark
