// SsdTier: the SSD store of an embedded client's hosted segment (Mooncake's
// setup(..., enable_ssd_offload, ssd_offload_path) and mooncake_client's
// --enable_offload), the same tier shelfmark-node gives its segment: an
// ssdstore/ backend the segment's Node offloads into and serves LOCAL_DISK
// reads from (node/node.h, NodeOptions::disk), on the active messages of the
// client's UCX engine.
//
//   Settings: ssd_offload_path ("" : $MOONCAKE_OFFLOAD_FILE_STORAGE_PATH)
//             plus every other MOONCAKE_OFFLOAD_* / MOONCAKE_OFFSET_* variable
//             the node reads (ssdstore/storage_config.h), and Mooncake's
//             MOONCAKE_OFFLOAD_HEARTBEAT_INTERVAL_SECONDS (1..3600): the wait
//             before asking the master for offload tasks again after it had
//             none (unset: 100 ms; the node asks again at once while the
//             master has some).
//   Open:     opens the backend (its recovery runs: the objects of an earlier
//             run are listed and re-reported by the node after its mount).
//   Wire:     sets the node's disk, disk_am and disk_endpoint.
//   Close:    closes the backend; the node (its LOCAL_DISK service) must be
//             gone first. The destructor closes.
//
// Thread safety: stats() from any thread until Close; Close once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"
#include "node/local_disk_service.h"
#include "node/node.h"
#include "ssdstore/storage_backend.h"
#include "ssdstore/storage_config.h"
#include "transport/transport.h"

namespace shelfmark {

inline constexpr std::string_view kEnvOffloadHeartbeat =
    "MOONCAKE_OFFLOAD_HEARTBEAT_INTERVAL_SECONDS";

struct SsdTierConfig {
  StorageConfig storage;
  int64_t offload_poll_interval_ms = 100;
};

// The tier's settings: `path` when not empty, else the environment's, and
// the rest from `env`. INVALID_PARAMS with `*error` (when given) naming the
// variable (or ssd_offload_path) and what is wrong: no path at all, a path
// that is not an existing absolute directory, a bad value.
Result<SsdTierConfig> ResolveSsdTier(std::string_view path, const EnvLookup& env,
                                     std::string* error);

// What the tier holds and served.
struct SsdTierStats {
  LocalDiskStats served;         // LOCAL_DISK reads the node answered
  uint64_t objects = 0;          // in the store
  uint64_t used_bytes = 0;       // bytes its objects take
  uint64_t capacity_bytes = 0;   // its byte limit; 0: none
  uint64_t corrupt_records = 0;  // dropped because a read found them not intact
};

class SsdTier {
 public:
  // `engine` carries the LOCAL_DISK reads: it must carry messages and listen
  // (INVALID_PARAMS otherwise) and outlive the tier. The backend's Open
  // codes (FILE_*, VERSION_MISMATCH, ...), with `*error` saying why.
  static Result<std::unique_ptr<SsdTier>> Open(const SsdTierConfig& config, TransportEngine* engine,
                                               std::string* error);
  ~SsdTier();
  SsdTier(const SsdTier&) = delete;
  SsdTier& operator=(const SsdTier&) = delete;

  // Gives `node` this tier (NodeOptions::disk, disk_am, disk_endpoint,
  // offload_poll_interval_ms).
  void Wire(NodeOptions& node);
  // The store's side of the stats (`served` is the node's: zeros here).
  SsdTierStats stats() const;
  const SsdTierConfig& config() const { return config_; }
  // The backend's Close code; OK when already closed.
  ErrorCode Close();

 private:
  SsdTier(SsdTierConfig config, std::unique_ptr<StorageBackend> backend, TransportEngine* engine);

  const SsdTierConfig config_;
  std::unique_ptr<StorageBackend> backend_;
  TransportEngine* const engine_;
  bool closed_ = false;
};

}  // namespace shelfmark
