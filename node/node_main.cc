// shelfmark-node: contributes a DRAM segment to the cluster.
//   shelfmark-node --master=HOST:PORT --segment_size=BYTES --protocol=rdma|ucx|auto
//       [--device=NAME] [--listen_ip=IP] [--listen_port=P] [--metrics_port=M]
//       [--cluster_token_file=PATH] [--master_token_file=PATH]
//       [--segment_name=NAME] [--ping_interval_ms=MS]
//       [--offload_poll_interval_ms=MS] [--offload_batch_bytes=BYTES]
//       [--promote_after_hits=N] [--promote_window_ms=MS]
// Credentials (auth/credential_flags.h, docs/security.md): the cluster token
// from --cluster_token_file, a literal --cluster_token (warned about: ps shows
// it) or $SHELFMARK_CLUSTER_TOKEN; clients must present it on the data plane,
// and the node proves it to the master unless --master_token_file (or
// $SHELFMARK_MASTER_TOKEN) gives a token of its own (role node). A master that
// refuses it leaves the node retrying the mount with a line
//   shelfmark-node: mount at HOST:PORT: UNAUTHENTICATED (retrying)
// (PERMISSION_DENIED for a token without the node role).
// Maps and registers the segment, mounts it at the master, keeps it alive
// with pings (remounting after a master restart), and unmounts on SIGINT or
// SIGTERM (exit 0). When mounted it prints on stderr:
//   node <client-id> segment <bytes> protocol <p> endpoint <ip:port>
//   shelfmark-node: metrics port <M>
// `auto` picks rdma when an RDMA device exists (and this build has the verbs
// engine), else ucx. /metrics (docs/metrics.md) has the process metrics, the
// segment gauges and ping counters, with rdma
// shelfmark_node_rdma_{accepted,rejected}_connections_total (the verbs
// listener's counters), and with an SSD store the shelfmark_node_disk_*
// metrics (LOCAL_DISK reads served, objects stored, bytes used against the
// store's limit, objects re-reported). Exit
// codes: 0 stopped by a signal, 1 start-up failure, 2 bad flags (the message
// names the flag), an unreadable or malformed token file, or a bad SSD store
// setting.
//
// SSD store: when MOONCAKE_OFFLOAD_FILE_STORAGE_PATH is set, the node opens
// the store configured by the MOONCAKE_OFFLOAD_* variables
// (ssdstore/storage_config.h), serves LOCAL_DISK reads on a UCX engine's
// active messages (the data-plane engine with ucx; with rdma a second UCX
// engine on --listen_ip, any free port), registers the disk at the master and
// offloads the objects the master asks for on a thread of its own
// (node/node.h: asking again at once while the master has tasks, else every
// --offload_poll_interval_ms; write batches of at most --offload_batch_bytes).
// An object read from the store --promote_after_hits times within
// --promote_window_ms is promoted back into the node's DRAM segment
// (node/node.h; 0 hits: never).
// It prints
//   shelfmark-node: ssd store <config> endpoint <ip:port>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "auth/credential_flags.h"
#include "auth/credentials.h"
#include "common/flags.h"
#include "common/host_port.h"
#include "ha/master_address.h"
#include "service/metrics.h"
#include "node/node.h"
#include "service/process_stats.h"
#include "transport/rdma_plugin.h"
#include "service/service_main.h"
#include "ssdstore/storage_backend_factory.h"
#include "ssdstore/storage_config.h"
#include "transport/transport_set.h"
#include "transport/ucx_engine.h"

namespace shelfmark {
namespace {

struct NodeFlags {
  std::string master = "127.0.0.1:50051";
  std::string cluster_id;
  bool follow_leader_hints = false;
  int64_t segment_size = 0;
  std::string protocol = "auto";
  std::string device;
  std::string listen_ip = "127.0.0.1";
  int64_t listen_port = 0;
  int64_t metrics_port = 0;
  std::string metrics_token_file;  // /metrics needs "Authorization: Bearer" with it
  std::string metrics_token;       // read from it
  auth::CredentialFlags credential_flags;
  auth::Credentials credentials;  // resolved from credential_flags
  std::string segment_name;
  int64_t ping_interval_ms = 3'000;
  int64_t offload_poll_interval_ms = 100;
  int64_t offload_batch_bytes = 64ll << 20;
  int64_t promote_after_hits = 3;
  int64_t promote_window_ms = 10'000;
};

// --help and malformed flags exit here (FlagSet::ParseOrExit); false after a
// message when the values do not fit together.
bool ParseFlags(int argc, char** argv, NodeFlags* f) {
  FlagSet flags("shelfmark-node");
  flags.AddString("master", &f->master, "HOST:PORT of shelfmark-master's RPC, or etcd://HOST:PORT[;HOST:PORT...]: follow the leader published in etcd");
  flags.AddString("cluster_id", &f->cluster_id, "with an etcd:// --master: the cluster whose leader to follow (\"\" = $SHELFMARK_CLUSTER_ID, else $MC_STORE_CLUSTER_ID, else \"shelfmark\")");
  flags.AddBool("follow_leader_hints", &f->follow_leader_hints, "with a HOST:PORT --master: follow a standby's NOT_LEADER to the leader it names (one hop; docs/ha.md); an etcd:// master always does");
  flags.AddInt64("segment_size", &f->segment_size, "bytes of DRAM to contribute", 4096,
                 INT64_MAX);
  flags.AddString("protocol", &f->protocol, "data-plane protocol", {"rdma", "ucx", "auto"});
  flags.AddString("device", &f->device, "RDMA device (\"\" = the first)");
  flags.AddString("listen_ip", &f->listen_ip, "address peers connect to");
  flags.AddInt64("listen_port", &f->listen_port, "transport port (0 = any free)", 0, 65535);
  flags.AddInt64("metrics_port", &f->metrics_port, "HTTP /metrics port (0 = any free)", 0, 65535);
  flags.AddString("metrics_token_file", &f->metrics_token_file,
                  "file holding a scrape token: /metrics then needs 'Authorization: Bearer' "
                  "with it (/health stays open)");
  f->credential_flags.Add(flags);
  flags.AddString("segment_name", &f->segment_name, "segment name (\"\" = node-<client id>)");
  flags.AddInt64("ping_interval_ms", &f->ping_interval_ms,
                 "ping period; keep it under the master's client TTL / 2", 10, 3'600'000);
  flags.AddInt64("offload_poll_interval_ms", &f->offload_poll_interval_ms,
                 "with an SSD store: wait before asking for offload tasks again after the "
                 "master had none",
                 1, 60'000);
  flags.AddInt64("offload_batch_bytes", &f->offload_batch_bytes,
                 "with an SSD store: most bytes in one offload write batch (a larger object "
                 "is a batch of its own)",
                 4096, INT64_MAX);
  flags.AddInt64("promote_after_hits", &f->promote_after_hits,
                 "with an SSD store: reads of an object from the store within "
                 "--promote_window_ms that promote it back into DRAM (0 = never)",
                 0, 1'000'000);
  flags.AddInt64("promote_window_ms", &f->promote_window_ms,
                 "with an SSD store: the window in which --promote_after_hits reads count",
                 1, 3'600'000);
  flags.ParseOrExit(argc, argv);
  if (std::string error = ha::MasterFlagError("master", f->master, f->cluster_id);
      !error.empty()) {
    std::fprintf(stderr, "shelfmark-node: %s\n", error.c_str());
    return false;
  }
  if (f->segment_size == 0) {
    std::fprintf(stderr, "shelfmark-node: flag --segment_size is required\n");
    return false;
  }
  if (f->listen_ip.empty()) {
    std::fprintf(stderr, "shelfmark-node: flag --listen_ip must not be empty\n");
    return false;
  }
  auto credentials = f->credential_flags.Resolve("shelfmark-node");
  if (!credentials.ok()) return false;  // Resolve printed why
  f->credentials = std::move(credentials).value();
  if (!f->metrics_token_file.empty()) {
    auto token = auth::ReadTokenFile(f->metrics_token_file);
    if (!token.ok()) {
      std::fprintf(stderr, "shelfmark-node: --metrics_token_file=%s: %s\n",
                   f->metrics_token_file.c_str(), std::string(ErrorCodeName(token.error())).c_str());
      return false;
    }
    f->metrics_token = *token;
  }
  return true;
}

// The verbs listener's counters (rdma only): connections accepted and
// rejected prove that clients reached this node over RDMA.
void AddRdmaMetrics(MetricsRegistry& metrics, const TransportEngine& engine,
                    const EngineCountersReader& counters) {
  const TransportEngine* e = &engine;
  auto counter = [&](const char* name, const char* help, uint64_t EngineCounters::*field) {
    metrics.AddCounterFunc(name, help, [e, counters, field] {
      std::optional<EngineCounters> c = counters(*e);
      return c ? static_cast<double>((*c).*field) : 0.0;
    });
  };
  counter("shelfmark_node_rdma_accepted_connections_total", "RDMA connections accepted.",
          &EngineCounters::accepted);
  counter("shelfmark_node_rdma_rejected_connections_total",
          "RDMA connect requests rejected (wrong token proof, stale challenge, bad request).",
          &EngineCounters::rejected);
}

// Accesses to the segment refused by this node before memory was touched
// (ucx: transport/ucx_memory_access.h), by reason.
void AddRefusedAccessMetrics(MetricsRegistry& metrics, const TransportEngine& engine) {
  const TransportEngine* e = &engine;
  for (const auto& [reason, field] :
       {std::pair<const char*, uint64_t EngineCounters::*>{"stale", &EngineCounters::refused_stale},
        {"out_of_range", &EngineCounters::refused_out_of_range},
        {"malformed", &EngineCounters::refused_malformed}}) {
    metrics.AddCounterFunc(
        "shelfmark_node_memory_access_refused_total",
        "Segment accesses refused before any byte was touched (stale: no live region with that "
        "rkey; out_of_range: outside the segment; malformed).",
        [e, f = field] {  // clang 14 captures no structured binding by name
          std::optional<EngineCounters> c = e->transfer_counters();
          return c ? static_cast<double>((*c).*f) : 0.0;
        },
        std::string("reason=\"") + reason + "\"");
  }
}

void AddNodeMetrics(MetricsRegistry& metrics, const Node& node) {
  const Node* n = &node;
  metrics.AddGauge("shelfmark_node_segment_bytes", "Bytes of the mounted DRAM segment.",
                   [n] { return static_cast<double>(n->segment().size); });
  metrics.AddGauge("shelfmark_node_mounted", "1 while the segment is mounted at the master.",
                   [n] { return n->mounted() ? 1.0 : 0.0; });
  auto counter = [&](const char* name, const char* help, uint64_t NodeCounters::*field) {
    metrics.AddCounterFunc(name, help,
                           [n, field] { return static_cast<double>(n->counters().*field); });
  };
  counter("shelfmark_node_pings_total", "Pings the master answered.", &NodeCounters::pings);
  counter("shelfmark_node_ping_failures_total", "Pings that failed.",
          &NodeCounters::ping_failures);
  counter("shelfmark_node_remounts_total", "NEED_REMOUNT answers (master restarts).",
          &NodeCounters::remounts);
  counter("shelfmark_node_offloaded_objects_total",
          "Objects offloaded to the SSD store and reported to the master.",
          &NodeCounters::offloaded);
  counter("shelfmark_node_offload_failures_total", "Offload tasks that failed.",
          &NodeCounters::offload_failures);
  counter("shelfmark_node_offloaded_bytes_total",
          "Bytes of the objects offloaded to the SSD store and reported to the master.",
          &NodeCounters::offloaded_bytes);
  counter("shelfmark_node_offload_batches_total", "Offload batches written to the SSD store.",
          &NodeCounters::offload_batches);
  counter("shelfmark_node_offload_stale_total",
          "Objects offloaded while they were removed: refused by the master, removed from the "
          "SSD store.",
          &NodeCounters::offload_stale);
  metrics.AddCounterFunc("shelfmark_node_offload_busy_seconds_total",
                         "Seconds the offload thread had work (tasks taken, batches not yet "
                         "reported): offloaded bytes / this = its throughput while busy.",
                         [n] { return static_cast<double>(n->counters().offload_busy_ns) / 1e9; });
  metrics.AddGauge("shelfmark_node_offload_inflight_tasks",
                   "Offload tasks taken from the master, not yet reported or failed.",
                   [n] { return static_cast<double>(n->counters().offload_inflight); });
  counter("shelfmark_node_disk_evictions_total", "SSD evictions reported to the master.",
          &NodeCounters::disk_evictions);
  counter("shelfmark_node_disk_lost_reported_total",
          "SSD records a read found missing or corrupt, dropped at the master.",
          &NodeCounters::disk_lost_reported);
  metrics.AddGauge("shelfmark_node_disk_reports_pending",
                   "SSD evictions and lost records the master has not answered yet (held "
                   "until their offload batch is reported, waiting to retry, or being sent).",
                   [n] { return static_cast<double>(n->counters().disk_reports_pending); });
  counter("shelfmark_node_offload_failures_reported_total",
          "Offload tasks whose failure the master was told (it then evicts without a copy).",
          &NodeCounters::offload_failures_reported);
  counter("shelfmark_node_promotions_requested_total",
          "Objects read often from the SSD store asked to be promoted (PromoteStart).",
          &NodeCounters::promotions_requested);
  counter("shelfmark_node_promoted_total",
          "Objects copied from the SSD store into the segment and attached as MEMORY replicas.",
          &NodeCounters::promoted);
  counter("shelfmark_node_promotions_refused_total",
          "Promotions the master refused (no DRAM room, already in DRAM or in flight, gone).",
          &NodeCounters::promotions_refused);
  counter("shelfmark_node_promotion_failures_total",
          "Granted promotions not completed (read or copy failed, bad address, PromoteEnd "
          "refused).",
          &NodeCounters::promotion_failures);
}

// The SSD store's metrics: the LOCAL_DISK service's counters prove which
// node's disk served a read; the store's contents, its fill against its
// byte limit, and the restart re-report.
void AddDiskMetrics(MetricsRegistry& metrics, const Node& node, const StorageBackend& disk,
                    uint64_t capacity_bytes) {
  const Node* n = &node;
  auto served = [&](const char* name, const char* help, uint64_t LocalDiskStats::*field) {
    metrics.AddCounterFunc(name, help,
                           [n, field] { return static_cast<double>(n->disk_stats().*field); });
  };
  served("shelfmark_node_disk_requests_total", "LOCAL_DISK read requests received.",
         &LocalDiskStats::requests);
  served("shelfmark_node_disk_served_bytes_total", "Object bytes in OK LOCAL_DISK replies.",
         &LocalDiskStats::bytes_served);
  served("shelfmark_node_disk_errors_total", "LOCAL_DISK replies with an error status.",
         &LocalDiskStats::errors);
  served("shelfmark_node_disk_inline_reads_total",
         "LOCAL_DISK reads answered on the progress thread from the page cache.",
         &LocalDiskStats::inline_reads);
  served("shelfmark_node_disk_misses_total",
         "LOCAL_DISK reads answered OBJECT_NOT_FOUND (not in the store, or not intact).",
         &LocalDiskStats::misses);
  const StorageBackend* d = &disk;
  metrics.AddCounterFunc("shelfmark_node_disk_corrupt_records_total",
                         "SSD records dropped because a read found them not intact (checksum "
                         "mismatch, file gone or cut short, read error); never served.",
                         [d] { return static_cast<double>(d->corrupt_records()); });
  metrics.AddGauge("shelfmark_node_disk_objects", "Objects in the SSD store.",
                   [d] { return static_cast<double>(d->object_count()); });
  metrics.AddGauge("shelfmark_node_disk_used_bytes", "Bytes the SSD store's objects take.",
                   [d] { return static_cast<double>(d->used_bytes()); });
  metrics.AddGauge("shelfmark_node_disk_capacity_bytes",
                   "The SSD store's byte limit; 0 when it has none.",
                   [capacity_bytes] { return static_cast<double>(capacity_bytes); });
  const StorageRecovery recovery = disk.recovery();  // fixed once the store is open
  metrics.AddCounterFunc("shelfmark_node_disk_recovery_discarded_files_total",
                         "Files the SSD store removed when it opened (torn, undecodable, "
                         "orphaned, partial batch).",
                         [recovery] { return static_cast<double>(recovery.files_discarded); });
  metrics.AddCounterFunc("shelfmark_node_disk_recovery_dropped_records_total",
                         "Indexed records the SSD store dropped when it opened (did not verify).",
                         [recovery] { return static_cast<double>(recovery.records_dropped); });
  metrics.AddCounterFunc("shelfmark_node_disk_reported_objects_total",
                         "Stored objects re-reported to the master after a (re)mount.",
                         [n] { return static_cast<double>(n->counters().disk_reported); });
}

// The SSD store when MOONCAKE_OFFLOAD_FILE_STORAGE_PATH is set.
struct SsdStore {
  std::unique_ptr<StorageBackend> backend;  // null: no SSD store
  UcxEngine* ucx = nullptr;                 // serves LOCAL_DISK reads
  uint64_t capacity_bytes = 0;              // its byte limit; 0: none
};

// Exit code on failure (2: a bad setting, 1: the store or engine fails).
int OpenSsdStore(TransportSet& transports, TransportEngine* data_engine,
                 const TransportOptions& to, SsdStore* store) {
  const char* path = std::getenv(std::string(kEnvStoragePath).c_str());
  if (path == nullptr || *path == '\0') return 0;
  std::string error;
  auto config = StorageConfigFromEnvironment(&error);
  if (!config.ok()) {
    std::fprintf(stderr, "shelfmark-node: %s\n", error.c_str());
    return 2;
  }
  auto backend = OpenStorageBackend(*config, nullptr, &error);
  if (!backend.ok()) {
    std::fprintf(stderr, "shelfmark-node: cannot open the ssd store: %s\n", error.c_str());
    return 1;
  }
  store->backend = std::move(*backend);
  store->capacity_bytes = config->total_size_limit_bytes;
  StorageRecovery recovery = store->backend->recovery();
  if (!recovery.empty()) {
    std::fprintf(stderr, "shelfmark-node: ssd store recovery: %s\n", recovery.Describe().c_str());
  }
  TransportEngine* engine = data_engine;
  if (engine->protocol() != UcxEngine::kProtocol) {
    TransportOptions uo = to;
    uo.listen_port = 0;
    auto ucx = transports.Open(UcxEngine::kProtocol, uo);
    if (!ucx.ok()) {
      std::fprintf(stderr, "shelfmark-node: cannot start the ucx engine for LOCAL_DISK reads: %s\n",
                   std::string(ErrorCodeName(ucx.error())).c_str());
      return 1;
    }
    engine = *ucx;
  }
  store->ucx = static_cast<UcxEngine*>(engine);
  std::fprintf(stderr, "shelfmark-node: ssd store %s endpoint %s\n", config->ToString().c_str(),
               store->ucx->endpoint().c_str());
  return 0;
}

int Run(const NodeFlags& f) {
  StopSignals stop_signals;
  RdmaPlugin rdma = LinkedRdmaPlugin();
  auto protocol = ChooseProtocol(f.protocol, rdma.factory && rdma.device_present);
  if (*protocol == "rdma" && !rdma.factory) {
    std::fprintf(stderr, "shelfmark-node: flag --protocol=rdma: this build has no verbs engine\n");
    return 2;
  }
  TransportSet transports;
  if (rdma.factory) transports.RegisterFactory("rdma", rdma.factory);
  TransportOptions to;
  to.client_id = UUID::Generate();
  to.cluster_token = f.credentials.cluster_token;
  to.listen_ip = f.listen_ip;
  to.listen_port = static_cast<uint16_t>(f.listen_port);
  to.device = f.device;
  auto engine = transports.Open(*protocol, to);
  if (!engine.ok()) {
    std::fprintf(stderr, "shelfmark-node: cannot start the %s engine on --listen_ip=%s: %s\n",
                 protocol->c_str(), f.listen_ip.c_str(),
                 std::string(ErrorCodeName(engine.error())).c_str());
    return 1;
  }
  SsdStore ssd;
  if (int rc = OpenSsdStore(transports, *engine, to, &ssd); rc != 0) return rc;
  NodeOptions no;
  if (ssd.backend) {
    no.disk = ssd.backend.get();
    no.disk_am = ssd.ucx->messages();
    no.disk_endpoint = ssd.ucx->endpoint();
  }
  no.master = f.master;
  no.cluster_id = f.cluster_id;
  no.follow_leader_hints = f.follow_leader_hints;
  no.master_token = f.credentials.master_token;
  no.client_id = to.client_id;
  no.segment_size = static_cast<uint64_t>(f.segment_size);
  no.segment_name = f.segment_name;
  no.ping_interval_ms = f.ping_interval_ms;
  no.offload_poll_interval_ms = f.offload_poll_interval_ms;
  no.offload_batch_bytes = static_cast<uint64_t>(f.offload_batch_bytes);
  no.promote_after_hits = static_cast<uint32_t>(f.promote_after_hits);
  no.promote_window_ms = f.promote_window_ms;
  bool first = true;
  const std::string client_id = to.client_id.ToString();
  no.on_mounted = [&first, &client_id](const Segment& s) {
    if (!first) {
      std::fprintf(stderr, "shelfmark-node: remounted segment %s\n", s.id.ToString().c_str());
      return;
    }
    first = false;
    std::fprintf(stderr, "node %s segment %llu protocol %s endpoint %s\n",
                 client_id.c_str(), static_cast<unsigned long long>(s.size), s.protocol.c_str(),
                 s.endpoint.c_str());
  };
  auto node = Node::Create(no, *engine);
  if (!node.ok()) {
    std::fprintf(stderr, "shelfmark-node: cannot set up --segment_size=%lld: %s\n",
                 static_cast<long long>(f.segment_size),
                 std::string(ErrorCodeName(node.error())).c_str());
    return 1;
  }
  MetricsRegistry metrics;
  AddProcessMetrics(metrics);
  AddNodeMetrics(metrics, **node);
  if (ssd.backend) AddDiskMetrics(metrics, **node, *ssd.backend, ssd.capacity_bytes);
  if (*protocol == "rdma") AddRdmaMetrics(metrics, **engine, rdma.counters);
  AddRefusedAccessMetrics(metrics, **engine);
  HttpServer http;
  AddHttpServerMetrics(metrics, http, "shelfmark_node_http_timed_out_connections_total",
                       "shelfmark_node_http_dropped_connections_total");
  auto http_port =
      ServeHealthAndMetrics(http, metrics, f.metrics_port, "shelfmark-node", f.metrics_token);
  if (!http_port.ok()) return 1;
  std::fprintf(stderr, "shelfmark-node: metrics port %u\n", *http_port);
  ErrorCode unmounted = ErrorCode::OK;
  std::thread loop([&node, &unmounted] { unmounted = (*node)->Run(); });
  stop_signals.Wait("shelfmark-node", "unmounting");
  (*node)->Stop();
  loop.join();
  if (unmounted != ErrorCode::OK) {
    std::fprintf(stderr, "shelfmark-node: unmount: %s\n",
                 std::string(ErrorCodeName(unmounted)).c_str());
  }
  http.Stop();
  node->reset();  // the LOCAL_DISK service stops before the store closes
  if (ssd.backend) {
    if (ErrorCode rc = ssd.backend->Close(); rc != ErrorCode::OK) {
      std::fprintf(stderr, "shelfmark-node: closing the ssd store: %s\n",
                   std::string(ErrorCodeName(rc)).c_str());
    }
  }
  return 0;
}

}  // namespace
}  // namespace shelfmark

int main(int argc, char** argv) {
  shelfmark::NodeFlags flags;
  if (!shelfmark::ParseFlags(argc, argv, &flags)) return 2;
  return shelfmark::Run(flags);
}
