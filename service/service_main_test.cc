// Tests of the long-running processes' shared plumbing with the real pieces:
// signals sent to this thread, a real HttpServer fetched over TCP.
#include "service/service_main.h"

#include <pthread.h>
#include <unistd.h>

#include <csignal>
#include <string>

#include <gtest/gtest.h>

#include "common/host_port.h"
#include "service/http_client.h"
#include "testing/process_util.h"
#include "testing/wait_for.h"

namespace shelfmark {
namespace {

bool Blocked(int sig) {
  sigset_t now;
  pthread_sigmask(SIG_BLOCK, nullptr, &now);
  return sigismember(&now, sig) == 1;
}

TEST(StopSignalsTest, BlocksWhileAliveAndRestoresAfter) {
  ASSERT_FALSE(Blocked(SIGTERM));
  {
    StopSignals stop;
    EXPECT_TRUE(Blocked(SIGINT));
    EXPECT_TRUE(Blocked(SIGTERM));
  }
  EXPECT_FALSE(Blocked(SIGINT));
  EXPECT_FALSE(Blocked(SIGTERM));
}

TEST(StopSignalsTest, WaitReturnsThePendingStopSignal) {
  StopSignals stop;
  // Blocked, so the signal stays pending on this thread until Wait takes it.
  ASSERT_EQ(pthread_kill(pthread_self(), SIGTERM), 0);
  EXPECT_EQ(stop.Wait("service_main_test", "stopping"), SIGTERM);
  ASSERT_EQ(pthread_kill(pthread_self(), SIGINT), 0);
  EXPECT_EQ(stop.Wait("service_main_test", "stopping"), SIGINT);
}

TEST(StopSignalsTest, IgnoresSigpipe) {
  StopSignals stop;
  struct sigaction action {};
  ASSERT_EQ(sigaction(SIGPIPE, nullptr, &action), 0);
  EXPECT_EQ(action.sa_handler, SIG_IGN);
}

TEST(ServeHealthAndMetricsTest, ServesBothPaths) {
  MetricsRegistry metrics;
  metrics.AddGauge("service_main_test_value", "a gauge", [] { return 42.0; });
  HttpServer http;
  auto port = ServeHealthAndMetrics(http, metrics, 0, "service_main_test");
  ASSERT_TRUE(port.ok());
  const HostPort where{"127.0.0.1", *port};
  auto health = HttpGet(where, "/health");
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, "ok\n");
  auto page = HttpGet(where, "/metrics");
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(PrometheusValue(page->body, "service_main_test_value"), 42.0);
  http.Stop();
}

TEST(ServeHealthAndMetricsTest, HttpServerCountersAreExported) {
  MetricsRegistry metrics;
  HttpServer http;
  AddHttpServerMetrics(metrics, http, "test_http_timed_out_total", "test_http_dropped_total");
  auto port = ServeHealthAndMetrics(http, metrics, 0, "service_main_test");
  ASSERT_TRUE(port.ok());
  int silent = testing::ConnectLoopback(*port);  // times out after 2 s unanswered
  ASSERT_GE(silent, 0);
  const HostPort where{"127.0.0.1", *port};
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        auto page = HttpGet(where, "/metrics");
        return page.ok() && PrometheusValue(page->body, "test_http_timed_out_total") == 1.0;
      },
      20'000));
  auto page = HttpGet(where, "/metrics");
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(PrometheusValue(page->body, "test_http_dropped_total"), 0.0);
  ::close(silent);
  http.Stop();
}

TEST(ServeHealthAndMetricsTest, PortInUseIsAnError) {
  MetricsRegistry metrics;
  HttpServer first;
  auto port = ServeHealthAndMetrics(first, metrics, 0, "service_main_test");
  ASSERT_TRUE(port.ok());
  HttpServer second;
  EXPECT_FALSE(ServeHealthAndMetrics(second, metrics, *port, "service_main_test").ok());
  EXPECT_FALSE(ServeHealthAndMetrics(second, metrics, 70000, "service_main_test").ok());
}

}  // namespace
}  // namespace shelfmark
