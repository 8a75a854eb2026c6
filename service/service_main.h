// The plumbing the long-running processes (shelfmark-master, shelfmark-node)
// share around their own work: stopping on SIGINT/SIGTERM, and serving
// /health and /metrics over HTTP.
//
// StopSignals: constructed first in the main thread, before any other thread
// starts, it blocks SIGINT and SIGTERM (threads started later inherit the
// mask, so no thread is interrupted by them) and ignores SIGPIPE (a peer that
// closes a socket mid-write gives EPIPE, not death). Wait() returns the first
// stop signal that arrives and prints "<program>: signal <n>, <doing>" on
// stderr; the destructor restores the previous mask.
//
// ServeHealthAndMetrics: GET /health answers "ok\n" (followed by what
// `health_detail` returns, when given: lines such as "ha_role leader\n");
// GET /metrics renders
// `metrics` (which must outlive the server) as Prometheus text, to requests
// bearing "Authorization: Bearer <metrics_token>" when that is not empty
// (--metrics_token_file; docs/security.md).
//
// Thread safety: StopSignals is used by the thread that made it.
// ServeHealthAndMetrics as HttpServer::Handle/Start (before/at start-up).
#pragma once

#include <signal.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "service/http_server.h"
#include "service/metrics.h"

namespace shelfmark {

class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Blocks until SIGINT or SIGTERM is pending; returns it (consumed).
  int Wait(std::string_view program, std::string_view doing) const;

 private:
  sigset_t set_;
  sigset_t previous_;
};

// Installs /health and /metrics on `http` and starts it on `port` (0: any
// free port). On failure prints "<program>: cannot serve --metrics_port=<port>"
// and returns the error; else the bound port.
Result<uint16_t> ServeHealthAndMetrics(HttpServer& http, const MetricsRegistry& metrics,
                                       int64_t port, std::string_view program,
                                       const std::string& metrics_token = "",
                                       std::function<std::string()> health_detail = nullptr);

// Registers `http`'s connection counters (HttpServerStats) under the two
// names given (a literal each at the call site, so docs/metrics.md's check
// sees them). `http` must outlive the registry's use.
void AddHttpServerMetrics(MetricsRegistry& registry, const HttpServer& http,
                          const std::string& timed_out_name, const std::string& dropped_name);

}  // namespace shelfmark
