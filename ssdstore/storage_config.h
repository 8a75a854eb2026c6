// StorageConfig: the node's SSD store settings, read from the environment
// (the design study's variables). Unset or empty variables take the default.
//
//   MOONCAKE_OFFLOAD_STORAGE_BACKEND_DESCRIPTOR  bucket_storage_backend (default)
//                                                | offset_allocator_storage_backend
//   MOONCAKE_OFFLOAD_FILE_STORAGE_PATH           required; an existing absolute directory
//   MOONCAKE_OFFSET_PERSIST_MODE                 disabled (default) | relaxed | strict
//   MOONCAKE_OFFSET_PERSIST_INTERVAL_SECONDS     relaxed checkpoint period; default 60, 5..604800
//   MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES      bytes on SSD; bucket: 0 or unset = no limit;
//                                                offset: size of kv_cache.data (>= 4096), unset =
//                                                the size of an existing kv_cache.data, else 80%
//                                                of the space available in the path, rounded
//                                                down to 4 KiB
//   MOONCAKE_OFFLOAD_TOTAL_KEYS_LIMIT            objects on SSD; 0 (default) = no limit
//   MOONCAKE_OFFLOAD_BUCKET_SIZE_LIMIT_BYTES     bucket: bytes per .bucket file; default 256 MiB
//   MOONCAKE_OFFLOAD_BUCKET_KEYS_LIMIT           bucket: objects per bucket; default 4096
//   MOONCAKE_OFFLOAD_EVICTION_POLICY             bucket: lru (default) | fifo
//   MOONCAKE_OFFSET_HIGH_WATERMARK               offset: evict above this share; default 0.95
//   MOONCAKE_OFFSET_LOW_WATERMARK                offset: ... down to this share; default 0.85
//                                                (0 < low <= high <= 1)
//
// Byte sizes are decimal integers with an optional binary suffix K, M, G or
// T (also KiB, MiB, ...; powers of 1024). Settings of the other backend are
// parsed and checked but unused. A bad value is INVALID_PARAMS with a message
// naming the variable and the value.
//
// Thread safety: pure functions; the environment lookup is the caller's.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace shelfmark {

inline constexpr std::string_view kEnvStorageBackend = "MOONCAKE_OFFLOAD_STORAGE_BACKEND_DESCRIPTOR";
inline constexpr std::string_view kEnvStoragePath = "MOONCAKE_OFFLOAD_FILE_STORAGE_PATH";
inline constexpr std::string_view kEnvPersistMode = "MOONCAKE_OFFSET_PERSIST_MODE";
inline constexpr std::string_view kEnvPersistInterval = "MOONCAKE_OFFSET_PERSIST_INTERVAL_SECONDS";
inline constexpr std::string_view kEnvTotalSizeLimit = "MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES";
inline constexpr std::string_view kEnvTotalKeysLimit = "MOONCAKE_OFFLOAD_TOTAL_KEYS_LIMIT";
inline constexpr std::string_view kEnvBucketSizeLimit = "MOONCAKE_OFFLOAD_BUCKET_SIZE_LIMIT_BYTES";
inline constexpr std::string_view kEnvBucketKeysLimit = "MOONCAKE_OFFLOAD_BUCKET_KEYS_LIMIT";
inline constexpr std::string_view kEnvEvictionPolicy = "MOONCAKE_OFFLOAD_EVICTION_POLICY";
inline constexpr std::string_view kEnvHighWatermark = "MOONCAKE_OFFSET_HIGH_WATERMARK";
inline constexpr std::string_view kEnvLowWatermark = "MOONCAKE_OFFSET_LOW_WATERMARK";

struct StorageConfig {
  enum class Backend { kBucket, kOffsetAllocator };
  enum class PersistMode { kDisabled, kRelaxed, kStrict };
  enum class Eviction { kFifo, kLru };

  Backend backend = Backend::kBucket;
  std::string storage_path;  // absolute, an existing directory, no trailing '/'
  PersistMode persist_mode = PersistMode::kDisabled;
  uint32_t persist_interval_seconds = 60;
  uint64_t total_size_limit_bytes = 0;  // offset backend: always set (> 0) after parsing
  uint64_t total_keys_limit = 0;
  uint64_t bucket_size_limit_bytes = 256ull << 20;
  uint64_t bucket_keys_limit = 4096;
  Eviction eviction = Eviction::kLru;
  double high_watermark = 0.95;
  double low_watermark = 0.85;

  // One line for the start-up log ("backend=... path=... ...").
  std::string ToString() const;
};

std::string_view BackendName(StorageConfig::Backend backend);
std::string_view PersistModeName(StorageConfig::PersistMode mode);
std::string_view EvictionName(StorageConfig::Eviction eviction);

// Like getenv: the value of `name`, or nullptr when unset.
using EnvLookup = std::function<const char*(const char* name)>;

// Parses and checks every variable above. On INVALID_PARAMS `*error` (when
// given) names the variable and says what is wrong.
Result<StorageConfig> ParseStorageConfig(const EnvLookup& env, std::string* error);

// ParseStorageConfig over the process environment (::getenv).
Result<StorageConfig> StorageConfigFromEnvironment(std::string* error);

// "256MiB", "4K", "1048576" -> bytes; false on a malformed or overflowing
// value.
bool ParseByteSize(std::string_view text, uint64_t* bytes);

}  // namespace shelfmark
