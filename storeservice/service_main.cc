// shelfmark-store-service: the host's store service (Mooncake's standalone
// store, `mooncake_client`): hosts this host's DRAM segment at the master
// and serves the host's engine processes, light clients
// (mooncake.store's setup_dummy), over a unix socket (storeservice/
// store_service.h; docs/node.md, "The host's store service").
//   shelfmark-store-service --master_server_address=HOST:PORT
//       --global_segment_size=BYTES [--host=IP] [--port=50052]
//       [--socket_path=PATH] [--protocol=tcp|rdma|ucx|auto] [--device_names=N]
//       [--threads=N] [--tenant_id=T] [--local_buffer_size=BYTES]
//       [--enable_offload] [--enable_http_server --http_port=P]
//       [--cluster_token_file=PATH]
// Flags are Mooncake's where it has them. The socket: --socket_path, else the
// abstract unix socket "@shelfmark-store-service:PORT", which is what a
// client's server_address "HOST:PORT" names. --host is where other hosts
// reach the segment (and its name "HOST:PORT"). --threads caps the engine
// processes served at once. --enable_offload (Mooncake's flag) gives the
// segment an SSD tier (embedded/ssd_tier.h) in
// $MOONCAKE_OFFLOAD_FILE_STORAGE_PATH, set up by the other MOONCAKE_OFFLOAD_*
// variables as shelfmark-node's store is: the segment's objects are copied
// there when the master runs with --enable_offload, read back from it
// (LOCAL_DISK) once evicted from DRAM, and re-reported to the master at
// every start, so a restarted service serves them again. It needs UCX
// (--protocol tcp, ucx or auto).
// When serving it prints on stderr
//   shelfmark-store-service: segment <name> <bytes> bytes socket <socket>
// (before it, with --enable_offload: "shelfmark-store-service: ssd tier
// <config>"), and with --enable_http_server
//   shelfmark-store-service: http port <P>
// whose /metrics then has the tier's shelfmark_store_service_disk_* and
// _offloaded_objects_total (embedded/ssd_tier_metrics.h).
// Exit codes: 0 stopped by SIGINT/SIGTERM (the segment is unmounted), 1
// start-up failure, 2 bad flags or token file, or a bad SSD tier setting.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "auth/credential_flags.h"
#include "common/flags.h"
#include "embedded/embedded_client.h"
#include "embedded/ssd_tier.h"
#include "embedded/ssd_tier_metrics.h"
#include "service/metrics.h"
#include "service/process_stats.h"
#include "service/service_main.h"
#include "storeservice/service_wire.h"
#include "storeservice/store_service.h"
#include "transport/rdma_plugin.h"

namespace shelfmark::storeservice {
namespace {

constexpr const char* kProgram = "shelfmark-store-service";

struct Flags {
  std::string host = "127.0.0.1";
  int64_t port = 50052;
  std::string socket_path;
  int64_t global_segment_size = 1ll << 30;
  int64_t local_buffer_size = 64ll << 20;
  std::string master_server_address = "127.0.0.1:50051";
  std::string protocol = "tcp";
  std::string device_names;
  int64_t threads = 64;
  std::string tenant_id = "default";
  bool enable_offload = false;
  bool enable_http_server = false;
  int64_t http_port = 9300;
  auth::CredentialFlags credentials_flags;
  auth::Credentials credentials;
};

// --enable_offload's settings, checked before anything starts; false after
// a message naming what is wrong.
bool SsdTierSettingsOk(const Flags& f) {
  if (f.protocol == "rdma") {  // LOCAL_DISK reads travel on UCX (embedded/embedded_client.cc)
    std::fprintf(stderr,
                 "%s: flag --enable_offload needs UCX: --protocol=rdma has none (use auto)\n",
                 kProgram);
    return false;
  }
  std::string error;
  auto config = ResolveSsdTier(
      "", [](const char* name) { return std::getenv(name); }, &error);
  if (!config.ok()) {
    std::fprintf(stderr, "%s: flag --enable_offload: %s\n", kProgram, error.c_str());
    return false;
  }
  std::fprintf(stderr, "%s: ssd tier %s\n", kProgram, config->storage.ToString().c_str());
  return true;
}

bool Parse(int argc, char** argv, Flags* f) {
  FlagSet flags(kProgram);
  flags.AddString("host", &f->host, "address other hosts reach the segment at");
  flags.AddInt64("port", &f->port, "names the default socket @shelfmark-store-service:PORT", 1,
                 65535);
  flags.AddString("socket_path", &f->socket_path, "unix socket path (\"\": the default socket)");
  flags.AddInt64("global_segment_size", &f->global_segment_size, "DRAM segment bytes", 1,
                 INT64_MAX);
  flags.AddInt64("local_buffer_size", &f->local_buffer_size,
                 "staging bytes of the service's client (put/get of inline bytes)", 0, INT64_MAX);
  flags.AddString("master_server_address", &f->master_server_address, "HOST:PORT or etcd://...");
  flags.AddString("protocol", &f->protocol, "data-plane protocol", {"tcp", "ucx", "rdma", "auto"});
  flags.AddString("device_names", &f->device_names, "RDMA devices (the first is used)");
  flags.AddInt64("threads", &f->threads, "engine processes served at once", 1, 65536);
  flags.AddString("tenant_id", &f->tenant_id, "the tenant every client's calls act in");
  flags.AddBool("enable_offload", &f->enable_offload,
                "SSD tier in $MOONCAKE_OFFLOAD_FILE_STORAGE_PATH (MOONCAKE_OFFLOAD_* settings)");
  flags.AddBool("enable_http_server", &f->enable_http_server, "serve /health and /metrics");
  flags.AddInt64("http_port", &f->http_port, "port of /health and /metrics", 0, 65535);
  f->credentials_flags.Add(flags);
  flags.ParseOrExit(argc, argv);
  if (f->enable_offload && !SsdTierSettingsOk(*f)) return false;
  auto credentials = f->credentials_flags.Resolve(kProgram);
  if (!credentials.ok()) return false;
  f->credentials = *credentials;
  return true;
}

void AddServiceMetrics(MetricsRegistry& metrics, const StoreService& service) {
  metrics.AddGauge("shelfmark_store_service_clients", "Engine processes connected now.",
                   [&service] { return static_cast<double>(service.counters().clients); });
  metrics.AddGauge("shelfmark_store_service_mapped_bytes",
                   "Bytes of the clients' shared memory mapped now.",
                   [&service] { return static_cast<double>(service.counters().mapped_bytes); });
  metrics.AddCounterFunc("shelfmark_store_service_refused_total", "Failed handshakes.",
                         [&service] { return static_cast<double>(service.counters().refused); });
  metrics.AddCounterFunc("shelfmark_store_service_requests_total", "Requests answered.",
                         [&service] { return static_cast<double>(service.counters().requests); });
  metrics.AddCounterFunc(
      "shelfmark_store_service_polled_requests_total",
      "Requests found by the poll after an answer (served without a wake-up).",
      [&service] { return static_cast<double>(service.counters().polled_requests); });
}

int Run(const Flags& f) {
  StopSignals stop_signals;
  const RdmaPlugin rdma = LinkedRdmaPlugin();
  EmbeddedOptions eo;
  eo.master = f.master_server_address;
  eo.protocol = f.protocol == "tcp" ? "ucx" : f.protocol;
  eo.device = f.device_names.substr(0, f.device_names.find(','));
  eo.cluster_token = f.credentials.cluster_token;
  eo.master_token = f.credentials.master_token;
  eo.listen_ip = f.host;
  eo.segment_size = static_cast<uint64_t>(f.global_segment_size);
  eo.segment_name = f.host + ":" + std::to_string(f.port);
  eo.staging_bytes = static_cast<uint64_t>(f.local_buffer_size);
  // Gets copy into a client's shared memory, which the client reads next.
  eo.stream_local_reads = true;
  // The service's clients poll for its answers (ServiceClientOptions::
  // reply_poll_us); were the service to poll for the master's too, the two
  // pollers would hold both CPUs of a 2-CPU host the master needs.
  eo.reply_poll_us = 0;
  eo.rdma_factory = rdma.factory;
  eo.rdma_device_present = rdma.device_present;
  eo.engine_counters = rdma.counters;
  eo.enable_ssd_offload = f.enable_offload;  // the path: $MOONCAKE_OFFLOAD_FILE_STORAGE_PATH
  auto embedded = EmbeddedClient::Create(eo);
  if (!embedded.ok()) {
    std::fprintf(stderr, "%s: cannot mount --global_segment_size=%lld at %s: %s\n", kProgram,
                 static_cast<long long>(f.global_segment_size), f.master_server_address.c_str(),
                 std::string(ErrorCodeName(embedded.error())).c_str());
    return 1;
  }
  StoreServiceOptions so;
  so.socket = f.socket_path.empty() ? DefaultSocket(static_cast<uint16_t>(f.port)) : f.socket_path;
  so.cluster_token = f.credentials.cluster_token;
  so.tenant = f.tenant_id == "default" ? "" : f.tenant_id;
  so.max_clients = static_cast<int>(f.threads);
  auto service = StoreService::Start(so, (*embedded)->client());
  if (!service.ok()) {
    std::fprintf(stderr, "%s: cannot listen on %s\n", kProgram, so.socket.c_str());
    return 1;
  }
  std::fprintf(stderr, "%s: segment %s %lld bytes socket %s\n", kProgram,
               eo.segment_name.c_str(), static_cast<long long>(f.global_segment_size),
               so.socket.c_str());
  MetricsRegistry metrics;
  AddProcessMetrics(metrics);
  AddServiceMetrics(metrics, **service);
  if (f.enable_offload) AddSsdTierMetrics(metrics, SsdTierMetricsOf::kStoreService, **embedded);
  HttpServer http;
  if (f.enable_http_server) {
    auto port = ServeHealthAndMetrics(http, metrics, f.http_port, kProgram);
    if (!port.ok()) return 1;
    std::fprintf(stderr, "%s: http port %u\n", kProgram, *port);
  }
  stop_signals.Wait(kProgram, "unmounting");
  http.Stop();
  (*service)->Stop();
  (*embedded)->Close();
  return 0;
}

}  // namespace
}  // namespace shelfmark::storeservice

int main(int argc, char** argv) {
  shelfmark::storeservice::Flags flags;
  if (!shelfmark::storeservice::Parse(argc, argv, &flags)) return 2;
  return shelfmark::storeservice::Run(flags);
}
