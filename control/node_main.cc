// shelfmark-node: contributes a DRAM segment to the cluster.
//   shelfmark-node --master=HOST:PORT --segment_size=BYTES --protocol=rdma|ucx|auto
//       [--device=NAME] [--listen_ip=IP] [--listen_port=P] [--metrics_port=M]
//       [--cluster_token=T] [--segment_name=NAME] [--ping_interval_ms=MS]
// Maps and registers the segment, mounts it at the master, keeps it alive
// with pings (remounting after a master restart), and unmounts on SIGINT or
// SIGTERM (exit 0). When mounted it prints on stderr:
//   node <client-id> segment <bytes> protocol <p> endpoint <ip:port>
//   shelfmark-node: metrics port <M>
// `auto` picks rdma when an RDMA device exists (and this build has the verbs
// engine), else ucx. Exit codes: 0 stopped by a signal, 1 start-up failure,
// 2 bad flags (the message names the flag).
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

#include "common/flags.h"
#include "common/host_port.h"
#include "control/http_server.h"
#include "control/metrics.h"
#include "control/node.h"
#include "control/process_stats.h"
#include "control/rdma_plugin.h"
#include "transport/transport_set.h"

namespace shelfmark {
namespace {

struct NodeFlags {
  std::string master = "127.0.0.1:50051";
  int64_t segment_size = 0;
  std::string protocol = "auto";
  std::string device;
  std::string listen_ip = "127.0.0.1";
  int64_t listen_port = 0;
  int64_t metrics_port = 0;
  std::string cluster_token;
  std::string segment_name;
  int64_t ping_interval_ms = 3'000;
};

sigset_t BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  return set;
}

int ParseFlags(int argc, char** argv, NodeFlags* f) {
  FlagSet flags("shelfmark-node");
  flags.AddString("master", &f->master, "HOST:PORT of shelfmark-master's RPC");
  flags.AddInt64("segment_size", &f->segment_size, "bytes of DRAM to contribute", 4096,
                 INT64_MAX);
  flags.AddString("protocol", &f->protocol, "data-plane protocol", {"rdma", "ucx", "auto"});
  flags.AddString("device", &f->device, "RDMA device (\"\" = the first)");
  flags.AddString("listen_ip", &f->listen_ip, "address peers connect to");
  flags.AddInt64("listen_port", &f->listen_port, "transport port (0 = any free)", 0, 65535);
  flags.AddInt64("metrics_port", &f->metrics_port, "HTTP /metrics port (0 = any free)", 0, 65535);
  flags.AddString("cluster_token", &f->cluster_token, "token clients must present");
  flags.AddString("segment_name", &f->segment_name, "segment name (\"\" = node-<client id>)");
  flags.AddInt64("ping_interval_ms", &f->ping_interval_ms,
                 "ping period; keep it under the master's client TTL / 2", 10, 3'600'000);
  std::string error;
  if (!flags.Parse(argc, argv, &error)) {
    std::fprintf(stderr, "%s\n%s", error.c_str(), flags.Usage().c_str());
    return 2;
  }
  if (flags.help_requested()) {
    std::printf("%s", flags.Usage().c_str());
    return 0;
  }
  if (!ParseHostPort(f->master)) {
    std::fprintf(stderr, "shelfmark-node: flag --master expects HOST:PORT, got '%s'\n",
                 f->master.c_str());
    return 2;
  }
  if (f->segment_size == 0) {
    std::fprintf(stderr, "shelfmark-node: flag --segment_size is required\n");
    return 2;
  }
  if (f->listen_ip.empty()) {
    std::fprintf(stderr, "shelfmark-node: flag --listen_ip must not be empty\n");
    return 2;
  }
  return -1;
}

void AddNodeMetrics(MetricsRegistry& metrics, const Node& node) {
  const Node* n = &node;
  metrics.AddGauge("shelfmark_node_segment_bytes", "bytes of the mounted DRAM segment",
                   [n] { return static_cast<double>(n->segment().size); });
  metrics.AddGauge("shelfmark_node_mounted", "1 while the segment is mounted at the master",
                   [n] { return n->mounted() ? 1.0 : 0.0; });
  metrics.AddGauge("shelfmark_node_pings", "pings the master answered",
                   [n] { return static_cast<double>(n->counters().pings); });
  metrics.AddGauge("shelfmark_node_ping_failures", "pings that failed",
                   [n] { return static_cast<double>(n->counters().ping_failures); });
  metrics.AddGauge("shelfmark_node_remounts", "NEED_REMOUNT answers (master restarts)",
                   [n] { return static_cast<double>(n->counters().remounts); });
}

int Run(const NodeFlags& f) {
  sigset_t stop_signals = BlockStopSignals();
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
  to.cluster_token = f.cluster_token;
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
  NodeOptions no;
  no.master = f.master;
  no.client_id = to.client_id;
  no.segment_size = static_cast<uint64_t>(f.segment_size);
  no.segment_name = f.segment_name;
  no.ping_interval_ms = f.ping_interval_ms;
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
  HttpServer http;
  http.Handle("/health", [] { return HttpResponse{200, "text/plain", "ok\n"}; });
  http.Handle("/metrics", [&metrics] {
    return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8",
                        metrics.RenderPrometheus()};
  });
  auto http_port = http.Start(static_cast<uint16_t>(f.metrics_port));
  if (!http_port.ok()) {
    std::fprintf(stderr, "shelfmark-node: cannot serve --metrics_port=%lld\n",
                 static_cast<long long>(f.metrics_port));
    return 1;
  }
  std::fprintf(stderr, "shelfmark-node: metrics port %u\n", *http_port);
  ErrorCode unmounted = ErrorCode::OK;
  std::thread loop([&node, &unmounted] { unmounted = (*node)->Run(); });
  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::fprintf(stderr, "shelfmark-node: signal %d, unmounting\n", sig);
  (*node)->Stop();
  loop.join();
  if (unmounted != ErrorCode::OK) {
    std::fprintf(stderr, "shelfmark-node: unmount: %s\n",
                 std::string(ErrorCodeName(unmounted)).c_str());
  }
  http.Stop();
  return 0;
}

}  // namespace
}  // namespace shelfmark

int main(int argc, char** argv) {
  shelfmark::NodeFlags flags;
  int rc = shelfmark::ParseFlags(argc, argv, &flags);
  if (rc >= 0) return rc;
  return shelfmark::Run(flags);
}
