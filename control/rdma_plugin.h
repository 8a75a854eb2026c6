// The "rdma" engine for binaries that link shelfmark::transport_verbs (it
// exists only where rdma-core builds): CMake defines SHELFMARK_HAVE_VERBS for
// them. The client library and the node logic never link verbs; binaries
// hand this plugin to ClientOptions / TransportSet instead.
//
//  - factory: CreateVerbsEngine, which writes why an engine cannot open
//    (e.g. "no RDMA device named 'x'") to stderr;
//  - counters: the verbs engine's counters (VerbsEngine::counters()) as
//    EngineCounters, nullopt for any other engine;
//  - CreateDataClient: a Client with the plugin filled into its options, for
//    the tools that move bytes (shelfmark-cli put/get, shelfmark-perf read);
//  - PrintTransferCounters: one stderr line per engine of such a client,
//    "<program>: rdma reads posted: N, writes posted: N, bytes read: N,
//    bytes written: N, connects: N" ("<program>: ucx: no transfer counters"
//    for an engine that keeps none).
//
// Thread safety: every function may be called from any thread.
#pragma once

#include <cinttypes>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "control/client.h"
#include "transport/transport_set.h"
#if defined(SHELFMARK_HAVE_VERBS)
#include "transport/verbs_engine.h"
#endif

namespace shelfmark {

struct RdmaPlugin {
  TransportFactory factory;      // empty: this binary has no rdma engine
  EngineCountersReader counters;  // empty: this binary has no rdma engine
  bool device_present = false;    // ibv_get_device_list found a device
};

inline RdmaPlugin LinkedRdmaPlugin() {
  RdmaPlugin plugin;
#if defined(SHELFMARK_HAVE_VERBS)
  plugin.factory = CreateVerbsEngine;
  plugin.counters = [](const TransportEngine& engine) -> std::optional<EngineCounters> {
    const auto* verbs = dynamic_cast<const VerbsEngine*>(&engine);
    if (verbs == nullptr) return std::nullopt;
    return verbs->counters();
  };
  plugin.device_present = RdmaDevicePresent();
#endif
  return plugin;
}

// A Client for `options` with the linked rdma plugin. `program` prefixes the
// messages on stderr; nullptr after one (--protocol=rdma in a build without
// the verbs engine, or Client::Create failing).
inline std::unique_ptr<Client> CreateDataClient(ClientOptions options, std::string_view program) {
  const RdmaPlugin rdma = LinkedRdmaPlugin();
  options.rdma_factory = rdma.factory;
  options.rdma_device_present = rdma.device_present;
  options.engine_counters = rdma.counters;
  const std::string protocol = options.protocol;
  if (protocol == "rdma" && !rdma.factory) {
    std::fprintf(stderr, "%.*s: flag --protocol=rdma: this build has no verbs engine\n",
                 static_cast<int>(program.size()), program.data());
    return nullptr;
  }
  auto client = Client::Create(std::move(options));
  if (!client.ok()) {
    std::fprintf(stderr, "%.*s: --protocol=%s: cannot open the engines: %s\n",
                 static_cast<int>(program.size()), program.data(), protocol.c_str(),
                 std::string(ErrorCodeName(client.error())).c_str());
    return nullptr;
  }
  return std::move(client).value();
}

inline void PrintTransferCounters(const Client& client, std::string_view program) {
  const int n = static_cast<int>(program.size());
  for (const char* protocol : {"rdma", "ucx", "loopback"}) {
    if (client.engine(protocol) == nullptr) continue;
    std::optional<EngineCounters> c = client.TransferCounters(protocol);
    if (!c) {
      std::fprintf(stderr, "%.*s: %s: no transfer counters\n", n, program.data(), protocol);
      continue;
    }
    std::fprintf(stderr,
                 "%.*s: %s reads posted: %" PRIu64 ", writes posted: %" PRIu64
                 ", bytes read: %" PRIu64 ", bytes written: %" PRIu64 ", connects: %" PRIu64 "\n",
                 n, program.data(), protocol, c->reads_posted, c->writes_posted, c->bytes_read,
                 c->bytes_written, c->connects);
  }
}

}  // namespace shelfmark
