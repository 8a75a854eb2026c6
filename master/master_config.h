// MasterConfig: every flag of shelfmark-master, parsed and validated. The
// names follow the design study verbatim (`--name=value`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "auth/token_table.h"
#include "common/host_port.h"
#include "directory/directory.h"

namespace shelfmark {

struct MasterConfig {
  int64_t rpc_port = 50051;
  int64_t metrics_port = 9003;
  std::string rpc_address = "0.0.0.0";
  int64_t rpc_threads = 2;
  // Limits on hostile or broken RPC clients (master/rpc_server.h).
  int64_t rpc_max_connections = 0;  // 0: RLIMIT_NOFILE less a reserve
  int64_t rpc_max_request_bytes = 64ll << 20;
  int64_t rpc_max_buffered_request_bytes = 256ll << 20;
  int64_t rpc_request_timeout_sec = 30;
  int64_t rpc_idle_timeout_sec = 0;  // 0: never
  int64_t default_kv_lease_ttl = 10'000;  // ms
  int64_t client_ttl = 10;                // s
  // Eviction (DirectoryOptions; docs/directory.md, "Eviction").
  double eviction_ratio = 0.02;
  double eviction_high_watermark_ratio = 0.98;
  std::string eviction_policy = "2q";  // or "lru"
  double eviction_probation_ratio = 0.2;
  // --cluster_id: the etcd keys' cluster (default kDefaultClusterId,
  // ha/leader_key.h) and the snapshots' <cluster_id>. Not given, snapshots
  // keep their historical default "shelfmark_cluster" (docs/snapshot.md).
  std::string cluster_id;
  std::string snapshot_cluster_id;  // set by ParseMasterFlags
  bool enable_offload = false;
  bool offload_on_evict = false;        // Mooncake's flags (DirectoryOptions)
  bool offload_force_evict = false;
  int64_t offloading_queue_limit = 50'000;
  int64_t put_start_discard_timeout_sec = 30;
  int64_t put_start_release_timeout_sec = 600;
  int64_t put_reservation_ttl_sec = 20;
  double put_reservation_share = 0.01;
  std::string memory_allocator = "offset";
  // Snapshot flags (used by the snapshot subsystem).
  bool enable_snapshot = false;
  bool enable_snapshot_restore = false;
  std::string snapshot_object_store_type = "local";
  std::string snapshot_catalog_store_type = "embedded";
  int64_t snapshot_interval_seconds = 600;
  int64_t snapshot_child_timeout_seconds = 300;
  int64_t snapshot_retention_count = 2;
  // A master that starts serving empty over snapshots it did not restore
  // protects the latest from retention unless this is set (master/
  // empty_start_guard.h); set, it also releases an earlier protection.
  bool snapshot_allow_empty_start = false;
  std::string snapshot_restore_id;  // RestoreOptions::first_id; "" or a ValidSnapshotId
  // $MOONCAKE_SNAPSHOT_LOCAL_PATH: required (and read) when snapshots or
  // restore use the local object store.
  std::string snapshot_local_path;
  // Authentication (docs/security.md): --cluster_token_file (a token table,
  // auth/token_table.h), else --cluster_token or $SHELFMARK_CLUSTER_TOKEN
  // (one token, every role). All empty: no authentication.
  std::string cluster_token_file;
  std::string cluster_token;
  // --metrics_token_file: /metrics answers only "Authorization: Bearer
  // <token>" (a scrape token of its own: it crosses the wire in clear).
  std::string metrics_token_file;
  std::string metrics_token;     // read from it by ParseMasterFlags
  auth::TokenTable tokens;       // loaded from the above by ParseMasterFlags
  std::string token_warning;     // for the operator (a literal token, an open file)

  // High availability (docs/ha.md, "The master's role").
  bool enable_ha = false;
  std::string etcd_endpoints;           // "H:P[;H:P...]"
  std::string ha_backend_type = "etcd";  // Mooncake's flag; only etcd
  std::string ha_backend_connstring;     // Mooncake's name for --etcd_endpoints
  // HOST:PORT published as the leader's address; "" : --rpc_address and the
  // bound RPC port (required when --rpc_address is a wildcard).
  std::string rpc_advertise_address;
  int64_t ha_lease_ttl_s = 2;
  int64_t ha_safety_margin_ms = 500;    // < ha_lease_ttl_s * 1000
  // Standbys whose acknowledgement a mutation waits for (fewer while fewer
  // are in sync; 0: none), and how long a cluster stays without a leader
  // before a standby without a complete copy may take over (docs/ha.md).
  int64_t ha_sync_standbys = 1;
  int64_t ha_unsynced_takeover_s = 10;
  // Replication connections a leader holds at once (docs/limits.md).
  int64_t ha_max_replication_connections = 16;
  std::vector<HostPort> etcd_endpoint_list;  // parsed by ParseMasterFlags

  DirectoryOptions ToDirectoryOptions() const;
};

enum class ParseOutcome { kRun, kHelp, kError };

// Parses argv into *config (and the environment variables the flags call
// for). kError sets *message to a line naming the flag or variable; kHelp
// sets it to the usage text.
ParseOutcome ParseMasterFlags(int argc, const char* const* argv, MasterConfig* config,
                              std::string* message);

}  // namespace shelfmark
