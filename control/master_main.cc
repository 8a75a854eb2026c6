// shelfmark-master: the directory served over Cap'n Proto RPC, with /health
// and /metrics over HTTP. Stops cleanly on SIGINT or SIGTERM.
#include <csignal>
#include <cstdio>
#include <pthread.h>

#include "control/directory_metrics.h"
#include "control/http_server.h"
#include "control/master_config.h"
#include "control/metrics.h"
#include "control/process_stats.h"
#include "control/rpc_server.h"

namespace shelfmark {
namespace {

// Blocks the stop signals in every thread started after this call, so that
// WaitForStopSignal() receives them.
sigset_t BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  return set;
}

int WaitForStopSignal(const sigset_t& set) {
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

void InstallHttpHandlers(HttpServer& http, const MetricsRegistry& metrics) {
  http.Handle("/health", [] { return HttpResponse{200, "text/plain", "ok\n"}; });
  http.Handle("/metrics", [&metrics] {
    return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8",
                        metrics.RenderPrometheus()};
  });
}

int Run(const MasterConfig& config) {
  sigset_t stop_signals = BlockStopSignals();
  if (config.enable_snapshot || config.enable_snapshot_restore) {
    std::fprintf(stderr, "shelfmark-master: snapshot flags accepted; snapshots are not "
                         "implemented in this build, the directory starts empty\n");
  }
  Directory directory(config.ToDirectoryOptions());
  MetricsRegistry metrics;
  AddProcessMetrics(metrics);
  AddDirectoryMetrics(metrics, directory);
  RpcServerOptions rpc_options;
  rpc_options.bind_address = config.rpc_address;
  rpc_options.port = static_cast<uint16_t>(config.rpc_port);
  rpc_options.threads = static_cast<int>(config.rpc_threads);
  RpcServer rpc(directory, &metrics, rpc_options);
  auto rpc_port = rpc.Start();
  if (!rpc_port.ok()) {
    std::fprintf(stderr, "shelfmark-master: cannot serve --rpc_port=%lld on %s\n",
                 static_cast<long long>(config.rpc_port), config.rpc_address.c_str());
    return 1;
  }
  metrics.AddGauge("shelfmark_master_rpc_open_connections", "open RPC connections", [&rpc] {
    double n = 0;
    for (int c : rpc.OpenConnections()) n += c;
    return n;
  });
  HttpServer http;
  InstallHttpHandlers(http, metrics);
  auto http_port = http.Start(static_cast<uint16_t>(config.metrics_port));
  if (!http_port.ok()) {
    std::fprintf(stderr, "shelfmark-master: cannot serve --metrics_port=%lld\n",
                 static_cast<long long>(config.metrics_port));
    return 1;
  }
  std::fprintf(stderr, "shelfmark-master: cluster %s, rpc port %u, metrics port %u\n",
               config.cluster_id.c_str(), *rpc_port, *http_port);
  int sig = WaitForStopSignal(stop_signals);
  std::fprintf(stderr, "shelfmark-master: signal %d, stopping\n", sig);
  http.Stop();
  rpc.Stop();
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
