// The "rdma" engine for binaries that link shelfmark::transport_verbs (it
// exists only where rdma-core builds): CMake defines SHELFMARK_HAVE_VERBS for
// them. The client and node libraries never link verbs; binaries hand this
// plugin to ClientOptions / TransportSet instead.
//
//  - factory: CreateVerbsEngine, which writes why an engine cannot open
//    (e.g. "no RDMA device named 'x'") to stderr;
//  - counters: the verbs engine's counters (VerbsEngine::counters()) as
//    EngineCounters, nullopt for any other engine;
//    (client/data_client.h hands the plugin to a Client.)
//
// Thread safety: every function may be called from any thread.
#pragma once

#include <optional>

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

}  // namespace shelfmark
