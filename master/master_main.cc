// shelfmark-master: the directory served over Cap'n Proto RPC, with /health
// and /metrics over HTTP; restores the newest good snapshot before the RPC
// port opens and snapshots periodically (--enable_snapshot_restore,
// --enable_snapshot). Stops cleanly on SIGINT or SIGTERM.
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <system_error>

#include "master/admin_http.h"
#include "master/directory_metrics.h"
#include "master/master_ha.h"
#include "master/master_replication.h"
#include "service/http_server.h"
#include "master/master_config.h"
#include "service/metrics.h"
#include "service/process_stats.h"
#include "master/rpc_server.h"
#include "service/service_main.h"
#include "master/empty_start_guard.h"
#include "master/snapshot_metrics.h"
#include "snapshot/local_store.h"
#include "snapshot/s3_store.h"
#include "snapshot/snapshot_catalog.h"
#include "snapshot/snapshot_restore.h"
#include "snapshot/snapshotter.h"

namespace shelfmark {
namespace {

// The snapshot object store: the directory $MOONCAKE_SNAPSHOT_LOCAL_PATH
// (created when missing) or the S3 bucket the environment names. Null and
// *error set when it cannot be opened.
std::unique_ptr<ObjectStore> OpenSnapshotStore(const MasterConfig& config, std::string* error) {
  if (config.snapshot_object_store_type == "s3") {
    auto s3_config = S3ConfigFromEnv(error);
    if (!s3_config.ok()) return nullptr;
    auto store = S3Store::Open(std::move(*s3_config), error);
    return store.ok() ? std::move(*store) : nullptr;
  }
  std::error_code ec;
  std::filesystem::path path = std::filesystem::absolute(config.snapshot_local_path, ec);
  if (!ec) std::filesystem::create_directories(path, ec);
  auto store = LocalStore::Open(path.string());
  if (ec || !store.ok()) {
    *error = "MOONCAKE_SNAPSHOT_LOCAL_PATH=" + config.snapshot_local_path +
             " is not a usable directory" + (ec ? " (" + ec.message() + ")" : "");
    return nullptr;
  }
  return std::move(*store);
}

// Restores the newest good snapshot (--snapshot_restore_id first) into the
// directory (before the RPC port opens) and tells `guard` (nullable) which
// one. False when the store cannot be opened or read.
bool RestoreAtStartUp(const MasterConfig& config, Directory& directory, SnapshotMetrics& metrics,
                      EmptyStartGuard* guard) {
  std::string error;
  std::unique_ptr<ObjectStore> store = OpenSnapshotStore(config, &error);
  if (store == nullptr) {
    std::fprintf(stderr, "shelfmark-master: snapshot store: %s\n", error.c_str());
    return false;
  }
  RestoreOptions options;
  options.cluster_id = config.snapshot_cluster_id;
  options.first_id = config.snapshot_restore_id;
  RestoreReport report = RestoreFromSnapshots(&directory, store.get(), options);
  if (guard != nullptr) guard->SetRestored(report.snapshot_id);
  std::fprintf(stderr, "shelfmark-master: %s (%s)\n", DescribeRestore(report).c_str(),
               store->Describe().c_str());
  metrics.SetRestore(report);
  if (!report.restored && report.store_unavailable) {
    std::fprintf(stderr,
                 "shelfmark-master: the snapshot store is unavailable; refusing to start empty "
                 "(its snapshots would later rotate the good ones out)\n");
    return false;
  }
  return true;
}

// With --enable_snapshot: what keeps the snapshot an empty start would
// rotate out (master/empty_start_guard.h). `config` outlives it.
std::unique_ptr<EmptyStartGuard> MakeEmptyStartGuard(const MasterConfig& config,
                                                     MetricsRegistry& metrics) {
  if (!config.enable_snapshot) return nullptr;
  EmptyStartGuardOptions options;
  options.cluster_id = config.snapshot_cluster_id;
  options.allow_empty_start = config.snapshot_allow_empty_start;
  options.open_store = [&config](std::string* error) { return OpenSnapshotStore(config, error); };
  auto guard = std::make_unique<EmptyStartGuard>(std::move(options));
  AddEmptyStartMetrics(metrics, *guard);
  return guard;
}

// This master starts serving `directory`: the guard (nullable) decides and
// what it did goes to the log.
void GuardServing(EmptyStartGuard* guard, const Directory& directory, bool loaded_copy) {
  if (guard == nullptr) return;
  EmptyStartOutcome out = guard->OnServing(directory.Stats().key_count, loaded_copy);
  if (out.log.empty()) return;
  std::fprintf(stderr, "shelfmark-master: %s%s\n", out.trusted ? "" : "warning: ",
               out.log.c_str());
}

// The periodic snapshotter over a store of its own (see snapshotter.h).
struct SnapshotService {
  std::unique_ptr<ObjectStore> store;
  std::unique_ptr<Snapshotter> snapshotter;
};

// `ha` (nullable): a standby skips its periodic snapshots.
bool StartSnapshots(const MasterConfig& config, Directory& directory, SnapshotMetrics& metrics,
                    const MasterHa* ha, SnapshotService* service) {
  std::string error;
  service->store = OpenSnapshotStore(config, &error);
  if (service->store == nullptr ||
      ProbeWritable(*service->store, std::string(kSnapshotRoot) + "/write_check", &error) !=
          ErrorCode::OK) {
    std::fprintf(stderr, "shelfmark-master: snapshot store: %s\n", error.c_str());
    return false;
  }
  SnapshotterOptions options;
  options.cluster_id = config.snapshot_cluster_id;
  options.interval_ms = config.snapshot_interval_seconds * 1000;
  options.child_timeout_ms = config.snapshot_child_timeout_seconds * 1000;
  options.retention_count = static_cast<size_t>(config.snapshot_retention_count);
  options.on_result = [&metrics](const SnapshotResult& r) { metrics.Observe(r); };
  if (ha != nullptr) options.should_take = [ha] { return ha->serving(); };
  service->snapshotter =
      std::make_unique<Snapshotter>(&directory, service->store.get(), std::move(options));
  service->snapshotter->Start();
  metrics.SetInterval(static_cast<double>(config.snapshot_interval_seconds));
  std::fprintf(stderr, "shelfmark-master: snapshots every %lld s to %s, keeping %lld\n",
               static_cast<long long>(config.snapshot_interval_seconds),
               service->store->Describe().c_str(),
               static_cast<long long>(config.snapshot_retention_count));
  return true;
}

// What this master publishes as the leader's address: the flag, else the
// bind address with the port actually bound (--rpc_port=0 picks one).
std::string AdvertisedAddress(const MasterConfig& config, uint16_t bound_port) {
  if (!config.rpc_advertise_address.empty()) return config.rpc_advertise_address;
  return HostPort{config.rpc_address, bound_port}.ToString();
}

// With --enable_ha: hot-standby replication (master/master_replication.h).
std::unique_ptr<MasterReplication> MakeReplication(const MasterConfig& config,
                                                   Directory& directory) {
  if (!config.enable_ha) return nullptr;
  MasterReplicationOptions options;
  options.cluster_id = config.cluster_id;
  options.tokens = config.tokens;
  options.sync_standbys = static_cast<int>(config.ha_sync_standbys);
  options.unsynced_takeover_ms = config.ha_unsynced_takeover_s * 1000;
  options.max_connections = static_cast<size_t>(config.ha_max_replication_connections);
  options.etcd_endpoints = config.etcd_endpoint_list;
  return std::make_unique<MasterReplication>(directory, std::move(options));
}

// With --enable_ha: the HA wiring, its gate closed until it leads; each term
// it wins first loads the standby copy (MasterReplication::BeforeServing),
// then asks `guard` (nullable) about an empty start.
std::unique_ptr<MasterHa> MakeHa(const MasterConfig& config, MasterReplication* replication,
                                 EmptyStartGuard* guard, const Directory& directory) {
  if (!config.enable_ha) return nullptr;
  MasterHaOptions options;
  options.etcd_endpoints = config.etcd_endpoint_list;
  options.cluster_id = config.cluster_id;
  options.lease_ttl_s = static_cast<int>(config.ha_lease_ttl_s);
  options.safety_margin_ms = static_cast<int>(config.ha_safety_margin_ms);
  options.before_serving = [replication, guard, &directory](int64_t term) {
    ErrorCode rc = replication->BeforeServing(term);
    if (rc == ErrorCode::OK) GuardServing(guard, directory, replication->loaded_copy());
    return rc;
  };
  options.on_view = [replication](const ha::LeaderView& view) { replication->OnView(view); };
  options.may_campaign = [replication] { return replication->MayCampaign(); };
  return std::make_unique<MasterHa>(std::move(options));
}

// Claims the published address and campaigns; false (the reason printed,
// naming the flags) when etcd does not answer or the address is taken.
bool StartHa(const MasterConfig& config, uint16_t bound_port, MasterHa& ha,
             MasterReplication& replication) {
  const std::string address = AdvertisedAddress(config, bound_port);
  replication.SetOwnAddress(address);
  std::string error;
  if (ha.Start(address, &error) == ErrorCode::OK) return true;
  const std::string& endpoints =
      config.etcd_endpoints.empty() ? config.ha_backend_connstring : config.etcd_endpoints;
  std::fprintf(stderr,
               "shelfmark-master: --enable_ha with --etcd_endpoints=%s, cluster %s, "
               "published address %s (--rpc_advertise_address): %s\n",
               endpoints.c_str(), config.cluster_id.c_str(), address.c_str(), error.c_str());
  return false;
}

int Run(const MasterConfig& config) {
  StopSignals stop_signals;
  // The background thread (client expiry, eviction) starts after restore, so
  // a long restore cannot expire the nodes whose segments it restores.
  DirectoryOptions directory_options = config.ToDirectoryOptions();
  directory_options.start_background_thread = false;
  Directory directory(directory_options);
  MetricsRegistry metrics;
  AddProcessMetrics(metrics);
  AddDirectoryMetrics(metrics, directory);
  SnapshotMetrics snapshot_metrics(metrics);
  std::unique_ptr<EmptyStartGuard> guard = MakeEmptyStartGuard(config, metrics);
  if (config.enable_snapshot_restore &&
      !RestoreAtStartUp(config, directory, snapshot_metrics, guard.get())) {
    return 1;
  }
  directory.StartBackgroundThread();
  // Before the RPC port opens: a store that cannot be written stops the
  // master at start, not at its first snapshot an interval later.
  std::unique_ptr<MasterReplication> replication = MakeReplication(config, directory);
  std::unique_ptr<MasterHa> ha = MakeHa(config, replication.get(), guard.get(), directory);
  if (ha == nullptr) GuardServing(guard.get(), directory, false);  // serves from the start
  if (ha != nullptr) {
    replication->SetOnLeaderGone([h = ha.get()](int64_t term) { h->LeaderGone(term); });
    replication->SetFence([h = ha.get()] { return h->FenceHolds(); });
  }
  SnapshotService snapshots;
  if (config.enable_snapshot &&
      !StartSnapshots(config, directory, snapshot_metrics, ha.get(), &snapshots)) {
    return 1;
  }
  RpcServerOptions rpc_options;
  rpc_options.bind_address = config.rpc_address;
  rpc_options.port = static_cast<uint16_t>(config.rpc_port);
  rpc_options.threads = static_cast<int>(config.rpc_threads);
  rpc_options.max_connections = static_cast<uint64_t>(config.rpc_max_connections);
  rpc_options.max_request_bytes = static_cast<uint64_t>(config.rpc_max_request_bytes);
  rpc_options.max_buffered_request_bytes =
      static_cast<uint64_t>(config.rpc_max_buffered_request_bytes);
  rpc_options.request_timeout_ms = config.rpc_request_timeout_sec * 1000;
  rpc_options.idle_timeout_ms = config.rpc_idle_timeout_sec * 1000;
  rpc_options.tokens = config.tokens;
  rpc_options.gate = ha != nullptr ? ha->gate() : nullptr;
  if (replication != nullptr) {
    ReplicationLeader* leader = &replication->leader();
    rpc_options.on_standby = [leader](int fd, std::string first, auto handshake_done) {
      leader->Adopt(fd, std::move(first), std::move(handshake_done));
    };
    rpc_options.replication = leader;
  }
  if (!config.token_warning.empty()) {
    std::fprintf(stderr, "shelfmark-master: warning: %s\n", config.token_warning.c_str());
  }
  RpcServer rpc(directory, &metrics, rpc_options);
  auto rpc_port = rpc.Start();
  if (!rpc_port.ok()) {
    std::fprintf(stderr, "shelfmark-master: cannot serve --rpc_port=%lld on %s\n",
                 static_cast<long long>(config.rpc_port), config.rpc_address.c_str());
    return 1;
  }
  AddRpcServerMetrics(metrics, rpc);
  // After the port listens (a standby answers NOT_LEADER from the start).
  if (ha != nullptr && !StartHa(config, *rpc_port, *ha, *replication)) {
    rpc.Stop();
    return 1;
  }
  std::function<std::string()> health_detail;
  if (ha != nullptr) {
    AddMasterHaMetrics(metrics, *ha);
    AddReplicationMetrics(metrics, *replication);
    health_detail = [h = ha.get()] {
      return std::string("ha_role ") + (h->serving() ? "leader" : "standby") + "\n";
    };
  }
  HttpServer http;
  AddHttpServerMetrics(metrics, http, "shelfmark_master_http_timed_out_connections_total",
                       "shelfmark_master_http_dropped_connections_total");
  AddAdminPages(http, directory, AdminRoleOf(ha.get()), config.metrics_token);
  auto http_port = ServeHealthAndMetrics(http, metrics, config.metrics_port, "shelfmark-master",
                                         config.metrics_token, std::move(health_detail));
  if (!http_port.ok()) return 1;
  std::fprintf(stderr, "shelfmark-master: cluster %s, rpc port %u, metrics port %u\n",
               config.cluster_id.c_str(), *rpc_port, *http_port);
  stop_signals.Wait("shelfmark-master", "stopping");
  if (snapshots.snapshotter) snapshots.snapshotter->Stop();
  http.Stop();
  if (ha != nullptr) ha->Stop();  // resign: a standby takes over at its next poll
  rpc.Stop();
  replication.reset();  // after the port: no standby is handed over any more
  return 0;
}

}  // namespace
}  // namespace shelfmark

int main(int argc, char** argv) {
  shelfmark::MasterConfig config;
  std::string message;
  switch (shelfmark::ParseMasterFlags(argc, argv, &config, &message)) {
    case shelfmark::ParseOutcome::kHelp:
      std::fputs(message.c_str(), stdout);
      return 0;
    case shelfmark::ParseOutcome::kError:
      std::fprintf(stderr, "%s\n", message.c_str());
      return 2;
    case shelfmark::ParseOutcome::kRun:
      break;
  }
  return shelfmark::Run(config);
}
