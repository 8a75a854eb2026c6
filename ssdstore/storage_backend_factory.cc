#include "ssdstore/storage_backend_factory.h"

#include <utility>

#include "ssdstore/bucket_backend.h"
#include "ssdstore/offset_backend.h"

namespace shelfmark {
namespace {

// A backend that also owns the FileIo it borrows: `io_` is declared first so
// it is destroyed after `inner_`.
class IoOwningBackend final : public StorageBackend {
 public:
  IoOwningBackend(std::shared_ptr<FileIo> io, std::unique_ptr<StorageBackend> inner)
      : io_(std::move(io)), inner_(std::move(inner)) {}

  std::string_view name() const override { return inner_->name(); }
  Result<std::vector<StoredLocation>> WriteBatch(const std::vector<StoredObject>& batch) override {
    return inner_->WriteBatch(batch);
  }
  ErrorCode Read(std::string_view tenant, std::string_view key, uint64_t expected_size,
                 std::string* out) override {
    return inner_->Read(tenant, key, expected_size, out);
  }
  ErrorCode Remove(std::string_view tenant, std::string_view key) override {
    return inner_->Remove(tenant, key);
  }
  std::vector<StoredLocation> List() const override { return inner_->List(); }
  uint64_t object_count() const override { return inner_->object_count(); }
  uint64_t used_bytes() const override { return inner_->used_bytes(); }
  void SetEvictCallback(EvictCallback cb) override { inner_->SetEvictCallback(std::move(cb)); }
  ErrorCode Close() override { return inner_->Close(); }

 private:
  std::shared_ptr<FileIo> io_;
  std::unique_ptr<StorageBackend> inner_;
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
