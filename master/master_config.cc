#include "master/master_config.h"

#include <cstdlib>

#include "auth/credentials.h"
#include "auth/token_table.h"
#include "common/flags.h"
#include "ha/etcd_client.h"
#include "ha/leader_key.h"
#include "snapshot/codec.h"

namespace shelfmark {
namespace {

constexpr int64_t kMaxSeconds = 365LL * 24 * 3600;

void AddServingFlags(FlagSet& f, MasterConfig* c) {
  f.AddInt64("rpc_port", &c->rpc_port, "Cap'n Proto RPC port (0: any free port)", 0, 65535);
  f.AddInt64("metrics_port", &c->metrics_port, "HTTP /metrics and /health port", 0, 65535);
  f.AddString("rpc_address", &c->rpc_address,
              "address the RPC server binds (and, with --enable_ha, publishes with the RPC "
              "port unless --rpc_advertise_address is given)");
  f.AddInt64("rpc_threads", &c->rpc_threads, "RPC event-loop threads", 1, 64);
  f.AddInt64("rpc_max_connections", &c->rpc_max_connections,
             "open RPC connections; at the limit a new one replaces the idlest "
             "(0: the descriptor limit less a reserve)",
             0, 1LL << 24);
  f.AddInt64("rpc_max_request_bytes", &c->rpc_max_request_bytes,
             "largest RPC request; a larger one ends its connection", 4096, 1LL << 32);
  f.AddInt64("rpc_max_buffered_request_bytes", &c->rpc_max_buffered_request_bytes,
             "bytes of RPC requests being received at once, all connections together", 4096,
             1LL << 40);
  f.AddInt64("rpc_request_timeout_sec", &c->rpc_request_timeout_sec,
             "seconds a request may take to arrive whole", 1, kMaxSeconds);
  f.AddInt64("rpc_idle_timeout_sec", &c->rpc_idle_timeout_sec,
             "seconds an RPC connection may stay silent (0: forever)", 0, kMaxSeconds);
  f.AddString("cluster_id", &c->cluster_id,
              "cluster name: its etcd keys (default shelfmark) and snapshot location (default "
              "shelfmark_cluster)");
  f.AddString("cluster_token_file", &c->cluster_token_file,
              "file of tokens and their roles (docs/security.md); callers must prove one");
  f.AddString("cluster_token", &c->cluster_token,
              "one token of every role (visible in ps: prefer --cluster_token_file or "
              "SHELFMARK_CLUSTER_TOKEN)");
  f.AddString("metrics_token_file", &c->metrics_token_file,
              "file holding a scrape token: /metrics then needs 'Authorization: Bearer' with "
              "it (/health stays open)");
}

void AddDirectoryFlags(FlagSet& f, MasterConfig* c) {
  f.AddInt64("default_kv_lease_ttl", &c->default_kv_lease_ttl, "read lease in ms", 1,
             kMaxSeconds * 1000);
  f.AddInt64("client_ttl", &c->client_ttl, "seconds a silent node stays registered", 1,
             kMaxSeconds);
  f.AddDouble("eviction_ratio", &c->eviction_ratio, "share of capacity freed per eviction",
              0.0, 1.0);
  f.AddDouble("eviction_high_watermark_ratio", &c->eviction_high_watermark_ratio,
              "usage that triggers eviction", 0.0, 1.0);
  f.AddString("eviction_policy", &c->eviction_policy,
              "which objects eviction frees first: 2q (objects read since their put outlive "
              "those never read, which may hold eviction_probation_ratio of capacity) or lru "
              "(least recently put or read)",
              {"2q", "lru"});
  f.AddDouble("eviction_probation_ratio", &c->eviction_probation_ratio,
              "2q: share of capacity objects never read since their put may hold before they "
              "go ahead of read ones",
              0.0, 1.0);
  f.AddBool("enable_offload", &c->enable_offload, "offload MEMORY objects to node SSDs");
  f.AddBool("offload_on_evict", &c->offload_on_evict,
            "copy objects to SSD when eviction wants their memory, not after every put");
  f.AddBool("offload_force_evict", &c->offload_force_evict,
            "evict without an SSD copy what a full offload queue cannot take (else wait)");
  f.AddInt64("offloading_queue_limit", &c->offloading_queue_limit,
             "offload tasks queued per node at most", 1, 100'000'000);
  f.AddInt64("put_start_discard_timeout_sec", &c->put_start_discard_timeout_sec,
             "an unfinished put older than this may be replaced", 1, kMaxSeconds);
  f.AddInt64("put_start_release_timeout_sec", &c->put_start_release_timeout_sec,
             "an unfinished put older than this is reclaimed", 1, kMaxSeconds);
  f.AddInt64("put_reservation_ttl_sec", &c->put_reservation_ttl_sec,
             "a range reserved for a client's next put and not committed is given back after this",
             1, 3600);
  f.AddDouble("put_reservation_share", &c->put_reservation_share,
              "share of the mounted capacity all clients' put reservations together may hold", 0.0,
              1.0);
  f.AddString("memory_allocator", &c->memory_allocator, "segment allocator", {"offset"});
}

void AddSnapshotFlags(FlagSet& f, MasterConfig* c) {
  f.AddBool("enable_snapshot", &c->enable_snapshot, "take periodic snapshots");
  f.AddBool("enable_snapshot_restore", &c->enable_snapshot_restore, "restore at start-up");
  f.AddString("snapshot_object_store_type", &c->snapshot_object_store_type,
              "where snapshots go", {"local", "s3"});
  f.AddString("snapshot_catalog_store_type", &c->snapshot_catalog_store_type,
              "where latest.txt lives", {"embedded"});
  f.AddInt64("snapshot_interval_seconds", &c->snapshot_interval_seconds,
             "seconds between snapshots", 1, kMaxSeconds);
  f.AddInt64("snapshot_child_timeout_seconds", &c->snapshot_child_timeout_seconds,
             "seconds before a snapshot child is killed", 1, kMaxSeconds);
  f.AddInt64("snapshot_retention_count", &c->snapshot_retention_count,
             "snapshots kept (>= 1)", 1, 1000);
  f.AddBool("snapshot_allow_empty_start", &c->snapshot_allow_empty_start,
            "may serve an empty directory over snapshots it did not restore without protecting "
            "them; releases a protection (docs/snapshot.md)");
  f.AddString("snapshot_restore_id", &c->snapshot_restore_id,
              "snapshot the start-up restore tries first (e.g. a protected one)");
}

void AddHaFlags(FlagSet& f, MasterConfig* c) {
  f.AddBool("enable_ha", &c->enable_ha,
            "campaign for leadership on etcd; serve only while leading (docs/ha.md)");
  f.AddString("etcd_endpoints", &c->etcd_endpoints, "etcd client endpoints H:P[;H:P...]");
  f.AddString("ha_backend_type", &c->ha_backend_type, "HA backend (Mooncake's flag)", {"etcd"});
  f.AddString("ha_backend_connstring", &c->ha_backend_connstring,
              "Mooncake's name for --etcd_endpoints");
  f.AddString("rpc_advertise_address", &c->rpc_advertise_address,
              "HOST:PORT the leader publishes for clients (default --rpc_address and the "
              "bound RPC port; required when --rpc_address is a wildcard)");
  f.AddInt64("ha_lease_ttl_s", &c->ha_lease_ttl_s, "leader lease TTL in seconds", 1, 3600);
  f.AddInt64("ha_sync_standbys", &c->ha_sync_standbys,
             "0: acknowledge mutations without waiting for standbys; 1 or more: every standby "
             "of the published in-sync set must hold a mutation before it is acknowledged "
             "(docs/ha.md, \"The in-sync set\")",
             0, 16);
  f.AddInt64("ha_unsynced_takeover_s", &c->ha_unsynced_takeover_s,
             "seconds without a leader after which a standby without a complete copy may "
             "take over",
             1, 86400);
  f.AddInt64("ha_safety_margin_ms", &c->ha_safety_margin_ms,
             "a leader stops acknowledging this long before its lease can expire", 0,
             3600 * 1000);
  f.AddInt64("ha_max_replication_connections", &c->ha_max_replication_connections,
             "standby connections a leader holds at once (each standby makes two); at the "
             "limit a new one replaces the oldest still in its handshake (docs/limits.md)",
             2, 1024);
}

bool IsWildcard(const std::string& host) {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]" || host == "*";
}

// The HA flags' values and how they go together.
bool CheckHaFlags(MasterConfig* c, std::string* message) {
  const std::string p = "shelfmark-master: ";
  if (!c->ha_backend_connstring.empty() && !c->etcd_endpoints.empty() &&
      c->ha_backend_connstring != c->etcd_endpoints) {
    *message = p + "flags --ha_backend_connstring and --etcd_endpoints differ; give one";
    return false;
  }
  const std::string endpoints =
      c->etcd_endpoints.empty() ? c->ha_backend_connstring : c->etcd_endpoints;
  const char* which = c->etcd_endpoints.empty() && !endpoints.empty() ? "--ha_backend_connstring"
                                                                       : "--etcd_endpoints";
  if (!endpoints.empty()) {
    auto parsed = ha::ParseEtcdEndpoints(endpoints);
    if (!parsed.ok()) {
      *message = p + "flag " + which + "=" + endpoints + " must be H:P[;H:P...]";
      return false;
    }
    c->etcd_endpoint_list = std::move(*parsed);
  }
  if (c->ha_safety_margin_ms >= c->ha_lease_ttl_s * 1000) {
    *message = p + "flag --ha_safety_margin_ms must be less than --ha_lease_ttl_s in ms";
    return false;
  }
  if (!c->rpc_advertise_address.empty() && !ParseHostPort(c->rpc_advertise_address)) {
    *message = p + "flag --rpc_advertise_address must be HOST:PORT, got '" +
               c->rpc_advertise_address + "'";
    return false;
  }
  if (!c->enable_ha) return true;
  if (c->etcd_endpoint_list.empty()) {
    *message = p + "--enable_ha needs --etcd_endpoints (or --ha_backend_connstring)";
    return false;
  }
  if (!ha::ValidClusterId(c->cluster_id)) {
    *message = p + "flag --cluster_id must be 1 to 128 of [A-Za-z0-9._-] with --enable_ha";
    return false;
  }
  if (c->rpc_advertise_address.empty() && IsWildcard(c->rpc_address)) {
    *message = p + "--enable_ha with the wildcard --rpc_address=" + c->rpc_address +
               " needs --rpc_advertise_address=HOST:PORT (the address clients reach)";
    return false;
  }
  return true;
}

// The local store's directory comes from the environment (design study:
// MOONCAKE_SNAPSHOT_LOCAL_PATH); S3 settings are read where the store opens.
bool ReadSnapshotEnvironment(MasterConfig* c, std::string* message) {
  if (!c->snapshot_restore_id.empty() && !ValidSnapshotId(c->snapshot_restore_id)) {
    *message = "shelfmark-master: --snapshot_restore_id=" + c->snapshot_restore_id +
               " is not a snapshot id (YYYYMMDD_HHMMSS_mmm, as listed under "
               "mooncake_master_snapshot/<cluster>/)";
    return false;
  }
  bool uses_store = c->enable_snapshot || c->enable_snapshot_restore;
  if (!uses_store || c->snapshot_object_store_type != "local") return true;
  const char* path = std::getenv("MOONCAKE_SNAPSHOT_LOCAL_PATH");
  if (path == nullptr || *path == '\0') {
    *message = "shelfmark-master: --snapshot_object_store_type=local with --enable_snapshot or "
               "--enable_snapshot_restore needs MOONCAKE_SNAPSHOT_LOCAL_PATH (the directory "
               "that holds the snapshots); it is not set";
    return false;
  }
  c->snapshot_local_path = path;
  return true;
}

// Fills c->tokens from the first source present: the table file, the
// literal flag, the environment.
bool LoadTokens(MasterConfig* c, std::string* message) {
  std::string error;
  if (!c->cluster_token_file.empty()) {
    auto table = auth::TokenTable::Load(c->cluster_token_file, &error, &c->token_warning);
    if (!table.ok()) {
      *message = "shelfmark-master: --cluster_token_file=" + c->cluster_token_file + ": " +
                 (error.empty() ? std::string(ErrorCodeName(table.error())) : error);
      return false;
    }
    c->tokens = std::move(*table);
  } else {
    auto token = auth::ResolveToken(
        {"", c->cluster_token, auth::kClusterTokenEnv, "cluster_token"}, &c->token_warning);
    if (!token.ok()) {
      *message = "shelfmark-master: --cluster_token / SHELFMARK_CLUSTER_TOKEN must be one word";
      return false;
    }
    // A weak single token is warned about, not refused: a table line is
    // refused (auth/token_table.h), a lone token keeps working as before.
    if (std::string weak = auth::WeakTokenReason(*token); !token->empty() && !weak.empty()) {
      c->token_warning += (c->token_warning.empty() ? "" : "; ") +
                          std::string("weak cluster token (--cluster_token or "
                                      "SHELFMARK_CLUSTER_TOKEN; a token table refuses it): ") +
                          weak;
    }
    if (!token->empty()) c->tokens = auth::TokenTable::Single(*token);
  }
  if (!c->metrics_token_file.empty()) {
    auto token = auth::ReadTokenFile(c->metrics_token_file, &c->token_warning);
    if (!token.ok()) {
      *message = "shelfmark-master: --metrics_token_file=" + c->metrics_token_file + ": " +
                 std::string(ErrorCodeName(token.error()));
      return false;
    }
    c->metrics_token = *token;
  }
  return true;
}

}  // namespace

DirectoryOptions MasterConfig::ToDirectoryOptions() const {
  DirectoryOptions o;
  o.default_kv_lease_ttl_ms = default_kv_lease_ttl;
  o.client_ttl_ms = client_ttl * 1000;
  o.eviction_ratio = eviction_ratio;
  o.eviction_high_watermark_ratio = eviction_high_watermark_ratio;
  o.eviction_policy = ParseEvictionPolicy(eviction_policy).value_or(EvictionPolicy::k2q);
  o.eviction_probation_ratio = eviction_probation_ratio;
  o.put_start_discard_timeout_ms = put_start_discard_timeout_sec * 1000;
  o.put_start_release_timeout_ms = put_start_release_timeout_sec * 1000;
  o.put_reservation_ttl_ms = put_reservation_ttl_sec * 1000;
  o.put_reservation_share = put_reservation_share;
  o.enable_offload = enable_offload;
  o.offload_on_evict = offload_on_evict;
  o.offload_force_evict = offload_force_evict;
  o.offloading_queue_limit = static_cast<uint64_t>(offloading_queue_limit);
  return o;
}

ParseOutcome ParseMasterFlags(int argc, const char* const* argv, MasterConfig* config,
                              std::string* message) {
  FlagSet flags("shelfmark-master");
  AddServingFlags(flags, config);
  AddDirectoryFlags(flags, config);
  AddSnapshotFlags(flags, config);
  AddHaFlags(flags, config);
  if (!flags.Parse(argc, argv, message)) return ParseOutcome::kError;
  if (flags.help_requested()) {
    *message = flags.Usage();
    return ParseOutcome::kHelp;
  }
  if (!flags.positional().empty()) {
    *message = "shelfmark-master: unexpected argument '" + flags.positional()[0] + "'";
    return ParseOutcome::kError;
  }
  const bool cluster_given = !config->cluster_id.empty();
  if (!cluster_given) config->cluster_id = std::string(ha::kDefaultClusterId);
  config->snapshot_cluster_id = cluster_given ? config->cluster_id : "shelfmark_cluster";
  if (config->cluster_id.find('/') != std::string::npos ||
      config->cluster_id.find("..") != std::string::npos) {
    *message = "shelfmark-master: flag --cluster_id must be a non-empty name without '/' or '..'";
    return ParseOutcome::kError;
  }
  if (config->rpc_max_buffered_request_bytes < config->rpc_max_request_bytes) {
    *message = "shelfmark-master: flag --rpc_max_buffered_request_bytes must be at least "
               "--rpc_max_request_bytes";
    return ParseOutcome::kError;
  }
  if (!CheckHaFlags(config, message)) return ParseOutcome::kError;
  if (!LoadTokens(config, message)) return ParseOutcome::kError;
  return ReadSnapshotEnvironment(config, message) ? ParseOutcome::kRun : ParseOutcome::kError;
}

}  // namespace shelfmark
