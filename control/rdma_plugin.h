// The "rdma" engine for binaries that link shelfmark::transport_verbs (it
// exists only where rdma-core builds): CMake defines SHELFMARK_HAVE_VERBS for
// them. The client library and the node logic never link verbs; binaries
// hand this factory to ClientOptions / TransportSet instead.
//
// Thread safety: LinkedRdmaPlugin() may be called from any thread.
#pragma once

#include <memory>
#include <utility>

#include "transport/transport_set.h"
#if defined(SHELFMARK_HAVE_VERBS)
#include "transport/verbs_device.h"
#include "transport/verbs_engine.h"
#endif

namespace shelfmark {

struct RdmaPlugin {
  TransportFactory factory;    // empty: this binary has no rdma engine
  bool device_present = false; // ibv_get_device_list found a device
};

inline RdmaPlugin LinkedRdmaPlugin() {
  RdmaPlugin plugin;
#if defined(SHELFMARK_HAVE_VERBS)
  plugin.factory = [](const TransportOptions& o) -> Result<std::unique_ptr<TransportEngine>> {
    auto engine = VerbsEngine::Create(o);
    if (!engine.ok()) return engine.error();
    return std::unique_ptr<TransportEngine>(std::move(engine).value());
  };
  plugin.device_present = !VerbsDevice::DeviceNames().empty();
#endif
  return plugin;
}

}  // namespace shelfmark
