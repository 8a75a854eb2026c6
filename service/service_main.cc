#include "service/service_main.h"

#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <string>
#include <utility>

namespace shelfmark {

StopSignals::StopSignals() {
  sigemptyset(&set_);
  sigaddset(&set_, SIGINT);
  sigaddset(&set_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set_, &previous_);
  std::signal(SIGPIPE, SIG_IGN);
}

StopSignals::~StopSignals() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

int StopSignals::Wait(std::string_view program, std::string_view doing) const {
  int sig = 0;
  sigwait(&set_, &sig);
  std::fprintf(stderr, "%.*s: signal %d, %.*s\n", static_cast<int>(program.size()),
               program.data(), sig, static_cast<int>(doing.size()), doing.data());
  return sig;
}

Result<uint16_t> ServeHealthAndMetrics(HttpServer& http, const MetricsRegistry& metrics,
                                       int64_t port, std::string_view program,
                                       const std::string& metrics_token,
                                       std::function<std::string()> health_detail) {
  http.Handle("/health", [detail = std::move(health_detail)] {
    return HttpResponse{200, "text/plain", detail ? "ok\n" + detail() : "ok\n"};
  });
  http.Handle("/metrics", [&metrics] {
    return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8",
                        metrics.RenderPrometheus()};
  });
  if (!metrics_token.empty()) http.Protect("/metrics", metrics_token);
  Result<uint16_t> bound = ErrorCode::INVALID_PARAMS;
  if (port >= 0 && port <= 65535) bound = http.Start(static_cast<uint16_t>(port));
  if (!bound.ok()) {
    std::fprintf(stderr, "%.*s: cannot serve --metrics_port=%lld\n",
                 static_cast<int>(program.size()), program.data(), static_cast<long long>(port));
  }
  return bound;
}

void AddHttpServerMetrics(MetricsRegistry& registry, const HttpServer& http,
                          const std::string& timed_out_name, const std::string& dropped_name) {
  const HttpServer* server = &http;
  registry.AddCounterFunc(timed_out_name,
                          "HTTP connections closed at their request or response deadline.",
                          [server] { return static_cast<double>(server->stats().timed_out); });
  registry.AddCounterFunc(dropped_name,
                          "HTTP connections closed to make room for a new one (64 at once).",
                          [server] { return static_cast<double>(server->stats().dropped); });
}

}  // namespace shelfmark
