// StorageConfig parsing: one small parser per kind of value, each error
// naming the variable (see storage_config.h).
#include "ssdstore/storage_config.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <vector>

namespace shelfmark {
namespace {

constexpr uint32_t kMinPersistInterval = 5;
constexpr uint32_t kMaxPersistInterval = 7 * 24 * 3600;
constexpr uint64_t kPage = 4096;
// The offset backend's data file (offset_backend.h, which builds on this
// library, names it kOffsetDataFileName).
constexpr std::string_view kOffsetDataFile = "kv_cache.data";

// Reads variables and records the first error.
class EnvReader {
 public:
  EnvReader(const EnvLookup& env, std::string* error) : env_(env), error_(error) {}

  bool failed() const { return failed_; }

  // The value, or nullopt-like empty view when unset or empty.
  std::string_view Get(std::string_view name) const {
    const char* v = env_(std::string(name).c_str());
    return v == nullptr ? std::string_view() : std::string_view(v);
  }

  void Fail(std::string_view name, std::string_view value, const std::string& why) {
    if (failed_) return;
    failed_ = true;
    if (error_ != nullptr) {
      *error_ = std::string(name) + "=" + std::string(value) + ": " + why;
    }
  }

  // One of `names`; *index set to its position.
  void Choice(std::string_view name, const std::vector<std::string_view>& names, int* index) {
    std::string_view v = Get(name);
    if (v.empty()) return;
    for (size_t i = 0; i < names.size(); ++i) {
      if (v == names[i]) {
        *index = static_cast<int>(i);
        return;
      }
    }
    std::string allowed;
    for (std::string_view n : names) allowed += (allowed.empty() ? "" : " | ") + std::string(n);
    Fail(name, v, "expected " + allowed);
  }

  void Unsigned(std::string_view name, uint64_t min, uint64_t max, uint64_t* out) {
    std::string_view v = Get(name);
    if (v.empty()) return;
    uint64_t n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size()) {
      Fail(name, v, "expected a non-negative integer");
    } else if (n < min || n > max) {
      Fail(name, v, "out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    } else {
      *out = n;
    }
  }

  void Bytes(std::string_view name, uint64_t min, uint64_t* out, bool* set = nullptr) {
    std::string_view v = Get(name);
    if (v.empty()) return;
    uint64_t n = 0;
    if (!ParseByteSize(v, &n)) {
      Fail(name, v, "expected a byte count such as 1073741824, 512MiB or 2G");
    } else if (n < min) {
      Fail(name, v, "at least " + std::to_string(min) + " bytes");
    } else {
      *out = n;
      if (set != nullptr) *set = true;
    }
  }

  void Ratio(std::string_view name, double* out) {
    std::string_view v = Get(name);
    if (v.empty()) return;
    std::string text(v);
    char* end = nullptr;
    double d = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size() || !std::isfinite(d) || d <= 0 || d > 1) {
      Fail(name, v, "expected a ratio in (0, 1]");
    } else {
      *out = d;
    }
  }

 private:
  const EnvLookup& env_;
  std::string* error_;
  bool failed_ = false;
};

void ReadStoragePath(EnvReader* r, StorageConfig* c) {
  std::string_view v = r->Get(kEnvStoragePath);
  if (v.empty()) {
    r->Fail(kEnvStoragePath, v, "required (the directory of the SSD store); it is not set");
    return;
  }
  if (v.front() != '/') {
    r->Fail(kEnvStoragePath, v, "must be an absolute path");
    return;
  }
  std::string path(v);
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    r->Fail(kEnvStoragePath, v, "no such directory");
  } else if (!S_ISDIR(st.st_mode)) {
    r->Fail(kEnvStoragePath, v, "not a directory");
  } else if (::access(path.c_str(), R_OK | W_OK | X_OK) != 0) {
    r->Fail(kEnvStoragePath, v, "directory not readable and writable by this process");
  } else {
    c->storage_path = path;
  }
}

// The offset backend's data file size when none is configured.
void DefaultOffsetCapacity(EnvReader* r, StorageConfig* c) {
  std::string data = c->storage_path + "/" + std::string(kOffsetDataFile);
  struct stat st {};
  if (::stat(data.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<uint64_t>(st.st_size) >= kPage) {
    c->total_size_limit_bytes = static_cast<uint64_t>(st.st_size) / kPage * kPage;
    return;
  }
  struct statvfs fs {};
  if (::statvfs(c->storage_path.c_str(), &fs) != 0) {
    r->Fail(kEnvStoragePath, c->storage_path, "cannot read the file system's free space");
    return;
  }
  uint64_t available = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  uint64_t capacity = available / 10 * 8 / kPage * kPage;
  if (capacity < kPage) {
    r->Fail(kEnvTotalSizeLimit, "", "unset, and the storage path has too little free space");
    return;
  }
  c->total_size_limit_bytes = capacity;
}

}  // namespace

std::string_view BackendName(StorageConfig::Backend backend) {
  return backend == StorageConfig::Backend::kBucket ? "bucket_storage_backend"
                                                    : "offset_allocator_storage_backend";
}

std::string_view PersistModeName(StorageConfig::PersistMode mode) {
  switch (mode) {
    case StorageConfig::PersistMode::kDisabled: return "disabled";
    case StorageConfig::PersistMode::kRelaxed: return "relaxed";
    case StorageConfig::PersistMode::kStrict: return "strict";
  }
  return "unknown";
}

std::string_view EvictionName(StorageConfig::Eviction eviction) {
  return eviction == StorageConfig::Eviction::kFifo ? "fifo" : "lru";
}

std::string StorageConfig::ToString() const {
  std::ostringstream out;
  out << "backend=" << BackendName(backend) << " path=" << storage_path
      << " total_size_limit_bytes=" << total_size_limit_bytes
      << " total_keys_limit=" << total_keys_limit;
  if (backend == Backend::kBucket) {
    out << " bucket_size_limit_bytes=" << bucket_size_limit_bytes
        << " bucket_keys_limit=" << bucket_keys_limit << " eviction=" << EvictionName(eviction);
  } else {
    out << " persist_mode=" << PersistModeName(persist_mode)
        << " persist_interval_seconds=" << persist_interval_seconds
        << " high_watermark=" << high_watermark << " low_watermark=" << low_watermark;
  }
  return out.str();
}

bool ParseByteSize(std::string_view text, uint64_t* bytes) {
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end == text.data()) return false;
  std::string_view suffix(end, static_cast<size_t>(text.data() + text.size() - end));
  int shift = 0;
  if (!suffix.empty()) {
    constexpr std::string_view kUnits = "KMGT";
    size_t unit = kUnits.find(suffix.front());
    if (unit == std::string_view::npos) return false;
    shift = 10 * static_cast<int>(unit + 1);
    suffix.remove_prefix(1);
    if (suffix != "" && suffix != "B" && suffix != "iB") return false;
  }
  if (shift > 0 && n > (UINT64_MAX >> shift)) return false;
  *bytes = n << shift;
  return true;
}

Result<StorageConfig> ParseStorageConfig(const EnvLookup& env, std::string* error) {
  EnvReader r(env, error);
  StorageConfig c;
  int backend = 0;
  r.Choice(kEnvStorageBackend, {"bucket_storage_backend", "offset_allocator_storage_backend"},
           &backend);
  c.backend = static_cast<StorageConfig::Backend>(backend);
  ReadStoragePath(&r, &c);
  int mode = 0;
  r.Choice(kEnvPersistMode, {"disabled", "relaxed", "strict"}, &mode);
  c.persist_mode = static_cast<StorageConfig::PersistMode>(mode);
  uint64_t interval = c.persist_interval_seconds;
  r.Unsigned(kEnvPersistInterval, kMinPersistInterval, kMaxPersistInterval, &interval);
  c.persist_interval_seconds = static_cast<uint32_t>(interval);
  bool size_set = false;
  r.Bytes(kEnvTotalSizeLimit, c.backend == StorageConfig::Backend::kOffsetAllocator ? kPage : 0,
          &c.total_size_limit_bytes, &size_set);
  r.Unsigned(kEnvTotalKeysLimit, 0, UINT64_MAX, &c.total_keys_limit);
  r.Bytes(kEnvBucketSizeLimit, 1, &c.bucket_size_limit_bytes);
  r.Unsigned(kEnvBucketKeysLimit, 1, UINT64_MAX, &c.bucket_keys_limit);
  int eviction = static_cast<int>(c.eviction);
  r.Choice(kEnvEvictionPolicy, {"fifo", "lru"}, &eviction);
  c.eviction = static_cast<StorageConfig::Eviction>(eviction);
  r.Ratio(kEnvHighWatermark, &c.high_watermark);
  r.Ratio(kEnvLowWatermark, &c.low_watermark);
  if (!r.failed() && c.low_watermark > c.high_watermark) {
    r.Fail(kEnvLowWatermark, r.Get(kEnvLowWatermark).empty() ? "0.85" : r.Get(kEnvLowWatermark),
           "must not exceed " + std::string(kEnvHighWatermark) + " (" +
               std::to_string(c.high_watermark) + ")");
  }
  if (!r.failed() && c.backend == StorageConfig::Backend::kOffsetAllocator && !size_set) {
    DefaultOffsetCapacity(&r, &c);
  }
  if (r.failed()) return ErrorCode::INVALID_PARAMS;
  return c;
}

Result<StorageConfig> StorageConfigFromEnvironment(std::string* error) {
  return ParseStorageConfig([](const char* name) { return std::getenv(name); }, error);
}

}  // namespace shelfmark
