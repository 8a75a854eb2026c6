#include "ssdstore/storage_backend_factory.h"

#include <utility>

#include "ssdstore/bucket_backend.h"
#include "ssdstore/offset_backend.h"

namespace shelfmark {
namespace {

// A backend that also owns the FileIo it borrows: `io_` is declared first so
// it is destroyed after `owned_`.
class IoOwningBackend final : public ForwardingBackend {
 public:
  IoOwningBackend(std::shared_ptr<FileIo> io, std::unique_ptr<StorageBackend> inner)
      : ForwardingBackend(inner.get()), io_(std::move(io)), owned_(std::move(inner)) {}

 private:
  std::shared_ptr<FileIo> io_;
  std::unique_ptr<StorageBackend> owned_;
};

BucketBackendOptions BucketOptionsFromConfig(const StorageConfig& config) {
  BucketBackendOptions o;
  o.root = config.storage_path;
  o.bucket_bytes = config.bucket_size_limit_bytes;
  o.bucket_keys = config.bucket_keys_limit;
  o.total_bytes = config.total_size_limit_bytes;
  o.total_keys = config.total_keys_limit;
  o.eviction = config.eviction == StorageConfig::Eviction::kLru ? BucketEviction::kLru
                                                                 : BucketEviction::kFifo;
  return o;
}

}  // namespace

Result<std::unique_ptr<StorageBackend>> OpenStorageBackend(const StorageConfig& config,
                                                           std::shared_ptr<FileIo> io,
                                                           std::string* error) {
  if (io == nullptr) io = MakePosixFileIo();
  ErrorCode code = ErrorCode::OK;
  std::unique_ptr<StorageBackend> backend;
  if (config.backend == StorageConfig::Backend::kBucket) {
    auto opened = BucketBackend::Open(BucketOptionsFromConfig(config), io);
    if (opened.ok()) {
      backend = std::move(opened).value();
    } else {
      code = opened.error();
    }
  } else {
    auto opened = OffsetBackend::Open(io.get(), OffsetOptionsFromConfig(config));
    if (opened.ok()) {
      backend = std::make_unique<IoOwningBackend>(io, std::move(opened).value());
    } else {
      code = opened.error();
    }
  }
  if (code != ErrorCode::OK) {
    if (error != nullptr) {
      *error = "cannot open " + std::string(BackendName(config.backend)) + " at '" +
               config.storage_path + "': " + std::string(ErrorCodeName(code));
    }
    return code;
  }
  return backend;
}

}  // namespace shelfmark
