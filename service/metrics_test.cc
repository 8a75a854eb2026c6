#include "service/metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <thread>
#include <utility>
#include <vector>

namespace shelfmark {
namespace {

TEST(Metrics, CounterRendersExactly) {
  MetricsRegistry registry;
  Counter* puts = registry.AddCounter("shelfmark_puts_total", "Completed puts.");
  puts->Inc();
  puts->Inc(2);
  EXPECT_EQ(puts->value(), 3u);
  EXPECT_EQ(registry.RenderPrometheus(),
            "# HELP shelfmark_puts_total Completed puts.\n"
            "# TYPE shelfmark_puts_total counter\n"
            "shelfmark_puts_total 3\n");
}

TEST(Metrics, SameNameSharesHeaderAndIsGrouped) {
  MetricsRegistry registry;
  registry.AddCounter("rpc_total", "RPCs served.", R"(method="PutStart")")->Inc(4);
  registry.AddGauge("up", "Server is up.", [] { return 1.0; });
  registry.AddCounter("rpc_total", "RPCs served.", R"(method="Get")")->Inc();
  EXPECT_EQ(registry.RenderPrometheus(),
            "# HELP rpc_total RPCs served.\n"
            "# TYPE rpc_total counter\n"
            "rpc_total{method=\"PutStart\"} 4\n"
            "rpc_total{method=\"Get\"} 1\n"
            "# HELP up Server is up.\n"
            "# TYPE up gauge\n"
            "up 1\n");
}

TEST(Metrics, GaugeValuesAreReadAtRenderTime) {
  MetricsRegistry registry;
  std::atomic<double> value{2.5};
  registry.AddGauge("segment_bytes", "Bytes mounted.", [&] { return value.load(); },
                    R"(segment="a")");
  registry.AddGauge("nan_value", "Not a number.",
                    [] { return std::numeric_limits<double>::quiet_NaN(); });
  registry.AddGauge("inf_value", "Infinite.",
                    [] { return -std::numeric_limits<double>::infinity(); });
  const std::string tail =
      "# HELP nan_value Not a number.\n# TYPE nan_value gauge\nnan_value NaN\n"
      "# HELP inf_value Infinite.\n# TYPE inf_value gauge\ninf_value -Inf\n";
  EXPECT_EQ(registry.RenderPrometheus(),
            "# HELP segment_bytes Bytes mounted.\n# TYPE segment_bytes gauge\n"
            "segment_bytes{segment=\"a\"} 2.5\n" + tail);
  value = 1e12;
  EXPECT_EQ(registry.RenderPrometheus(),
            "# HELP segment_bytes Bytes mounted.\n# TYPE segment_bytes gauge\n"
            "segment_bytes{segment=\"a\"} 1000000000000\n" + tail);
}

TEST(Metrics, HistogramRendersCumulativeBuckets) {
  MetricsRegistry registry;
  Histogram* h = registry.AddHistogram("op_latency_seconds", "Op latency.", R"(op="get")",
                                       {1, 5, 10});
  for (double v : {0.5, 1.0, 3.0, 10.0, 100.0}) h->Observe(v);
  EXPECT_EQ(registry.RenderPrometheus(),
            "# HELP op_latency_seconds Op latency.\n"
            "# TYPE op_latency_seconds histogram\n"
            "op_latency_seconds_bucket{op=\"get\",le=\"1\"} 2\n"
            "op_latency_seconds_bucket{op=\"get\",le=\"5\"} 3\n"
            "op_latency_seconds_bucket{op=\"get\",le=\"10\"} 4\n"
            "op_latency_seconds_bucket{op=\"get\",le=\"+Inf\"} 5\n"
            "op_latency_seconds_sum{op=\"get\"} 114.5\n"
            "op_latency_seconds_count{op=\"get\"} 5\n");
}

TEST(Metrics, HistogramWithoutLabelsAndFractionalBounds) {
  MetricsRegistry registry;
  Histogram* h = registry.AddHistogram("ratio", "A ratio.", "", {0.25, 0.5});
  h->Observe(0.3);
  EXPECT_EQ(registry.RenderPrometheus(),
            "# HELP ratio A ratio.\n"
            "# TYPE ratio histogram\n"
            "ratio_bucket{le=\"0.25\"} 0\n"
            "ratio_bucket{le=\"0.5\"} 1\n"
            "ratio_bucket{le=\"+Inf\"} 1\n"
            "ratio_sum 0.3\n"
            "ratio_count 1\n");
}

TEST(Metrics, HistogramBucketsValueEqualToBoundGoesIntoThatBucket) {
  Histogram h({10, 1, 5, std::numeric_limits<double>::infinity(), 5});
  EXPECT_EQ(h.upper_bounds(), (std::vector<double>{1, 5, 10}));  // sorted, unique, finite
  for (double v : {1.0, 1.0000001, 5.0, 10.0, 10.5, -3.0}) h.Observe(v);
  h.Observe(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(h.BucketCounts(), (std::vector<uint64_t>{2, 2, 1, 2}));
  EXPECT_EQ(h.count(), 7u);
}

TEST(Metrics, LatencyBucketsSeconds) {
  std::vector<double> b = LatencyBucketsSeconds();
  ASSERT_FALSE(b.empty());
  EXPECT_EQ(b.front(), 5e-6);
  EXPECT_EQ(b.back(), 10);
  for (size_t i = 1; i < b.size(); ++i) EXPECT_LT(b[i - 1], b[i]);
  for (double v : {1e-5, 2e-5, 5e-5, 1e-4, 1e-3, 1.0}) {
    EXPECT_NE(std::find(b.begin(), b.end(), v), b.end()) << v;
  }
}

TEST(Metrics, LatencyBoundsRenderAsTheirDecimals) {
  MetricsRegistry registry;
  registry.AddHistogram("wait_seconds", "Wait.", "", LatencyBucketsSeconds());
  const std::string text = registry.RenderPrometheus();
  for (const char* le : {"5e-06", "1e-05", "5e-05", "0.0001", "0.0002", "0.005", "0.1", "2",
                         "10"}) {
    EXPECT_NE(text.find(std::string("le=\"") + le + "\"}"), std::string::npos) << le << text;
  }
}

TEST(Metrics, ReRegisteringReturnsTheSameSeries) {
  MetricsRegistry registry;
  Counter* a = registry.AddCounter("c_total", "C.", "x=\"1\"");
  EXPECT_EQ(registry.AddCounter("c_total", "C.", "x=\"1\""), a);
  EXPECT_NE(registry.AddCounter("c_total", "C.", "x=\"2\""), a);
  Histogram* h = registry.AddHistogram("hist_seconds", "H.", "", {1});
  EXPECT_EQ(registry.AddHistogram("hist_seconds", "H.", "", {1}), h);
  registry.AddGauge("g", "G.", [] { return 1.0; });
  registry.AddGauge("g", "G.", [] { return 2.0; });
  registry.AddCounterFunc("f_total", "F.", [] { return 1.0; });
  registry.AddCounterFunc("f_total", "F.", [] { return 2.0; });
  std::string text = registry.RenderPrometheus();
  EXPECT_NE(text.find("\ng 2\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("\ng 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nf_total 2\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("\nf_total 1\n"), std::string::npos) << text;
}

TEST(Metrics, CounterFuncIsReadAtRenderTime) {
  MetricsRegistry registry;
  std::atomic<double> cpu{1.25};
  registry.AddCounterFunc("cpu_seconds_total", "CPU time.", [&] { return cpu.load(); },
                          R"(mode="user")");
  EXPECT_EQ(registry.RenderPrometheus(),
            "# HELP cpu_seconds_total CPU time.\n# TYPE cpu_seconds_total counter\n"
            "cpu_seconds_total{mode=\"user\"} 1.25\n");
  cpu = 7;
  EXPECT_NE(registry.RenderPrometheus().find("\ncpu_seconds_total{mode=\"user\"} 7\n"),
            std::string::npos);
}

TEST(Metrics, NamesFollowingTheConventionsPass) {
  for (auto [name, type] : std::vector<std::pair<const char*, const char*>>{
           {"shelfmark_master_keys", "gauge"},
           {"shelfmark_master_total_capacity_bytes", "gauge"},
           {"process_cpu_seconds_total", "counter"},
           {"shelfmark_node_disk_served_bytes_total", "counter"},
           {"shelfmark_master_rpc_latency_seconds", "histogram"},
           {"shelfmark_master_snapshot_last_success_timestamp_seconds", "gauge"},
           {"shelfmark_node_disk_objects", "gauge"}}) {
    EXPECT_EQ(MetricNameProblem(name, type, "help"), "") << name;
  }
}

TEST(Metrics, NamesBreakingTheConventionsAreNamed) {
  struct Case {
    const char* name;
    const char* type;
    const char* problem;  // a part of the answer
  };
  for (const Case& c : std::vector<Case>{
           {"shelfmark_master_key_count", "gauge", "_count suffix"},
           {"x_sum", "counter", "_total"},
           {"x_bucket", "gauge", "_bucket suffix"},
           {"process_cpu_seconds_total", "gauge", "only a counter"},
           {"shelfmark_node_pings", "counter", "ends in _total"},
           {"shelfmark_master_restore_ms", "gauge", "abbreviated unit 'ms'"},
           {"shelfmark_master_rpc_latency_us", "histogram", "abbreviated unit 'us'"},
           {"disk_kb", "gauge", "abbreviated unit 'kb'"},
           {"snapshot_duration_milliseconds", "histogram", "unit 'milliseconds'"},
           {"segment_kilobytes", "gauge", "unit 'kilobytes'"},
           {"uptime_minutes", "gauge", "unit 'minutes'"},
           {"queue_gauge", "gauge", "type ('gauge')"},
           {"rpcLatency", "gauge", "snake case"},
           {"job:rpc:rate5m", "gauge", "snake case"},
           {"9lives", "gauge", "snake case"},
           {"", "gauge", "empty"},
           {"x", "summary", "unknown type"}}) {
    const std::string problem = MetricNameProblem(c.name, c.type, "help");
    EXPECT_NE(problem.find(c.problem), std::string::npos) << c.name << ": " << problem;
  }
  EXPECT_EQ(MetricNameProblem("keys", "gauge", ""), "no HELP text");
}

TEST(MetricsDeathTest, RegisteringABadNameAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  MetricsRegistry registry;
  EXPECT_DEATH(registry.AddGauge("shelfmark_master_key_count", "Keys.", [] { return 0.0; }),
               "shelfmark_master_key_count breaks the naming conventions: .*_count suffix");
  EXPECT_DEATH(registry.AddCounter("pings", "Pings."), "pings .*_total");
  EXPECT_DEATH(registry.AddCounterFunc("remounts", "Remounts.", [] { return 0.0; }),
               "remounts .*_total");
  EXPECT_DEATH(registry.AddHistogram("latency_ms", "Latency.", "", {1}), "'ms'");
  registry.AddGauge("keys", "Keys.", [] { return 0.0; });
  EXPECT_DEATH(registry.AddHistogram("keys", "Keys.", "", {1}), "registered as a gauge too");
  registry.AddCounter("puts_total", "Puts.", "op=\"a\"");
  registry.AddCounterFunc("puts_total", "Puts.", [] { return 0.0; }, "op=\"b\"");
  EXPECT_DEATH(registry.AddCounterFunc("puts_total", "Puts.", [] { return 0.0; }, "op=\"a\""),
               "registered twice");
}

TEST(Metrics, HelpTextIsEscaped) {
  MetricsRegistry registry;
  registry.AddCounter("c_total", "line one\nback\\slash");
  EXPECT_EQ(registry.RenderPrometheus(),
            "# HELP c_total line one\\nback\\\\slash\n# TYPE c_total counter\nc_total 0\n");
}

TEST(Metrics, EmptyRegistryRendersNothing) {
  MetricsRegistry registry;
  EXPECT_EQ(registry.RenderPrometheus(), "");
}

TEST(Metrics, ConcurrentUpdatesTotalCorrectly) {
  MetricsRegistry registry;
  Counter* counter = registry.AddCounter("ops_total", "Ops.");
  Histogram* h = registry.AddHistogram("lat_seconds", "Latency.", "", LatencyBucketsSeconds());
  constexpr int kThreads = 8;
  constexpr int kPerThread = 50'000;
  std::atomic<bool> done{false};
  std::thread renderer([&] {
    while (!done) EXPECT_FALSE(registry.RenderPrometheus().empty());
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        counter->Inc();
        h->Observe(static_cast<double>((i + t) % 4));  // 0..3, exact in binary
        registry.AddCounter("ops_total", "Ops.")->Inc();  // same series, concurrently
      }
    });
  }
  for (auto& w : workers) w.join();
  done = true;
  renderer.join();
  const uint64_t total = uint64_t{kThreads} * kPerThread;
  EXPECT_EQ(counter->value(), 2 * total);
  EXPECT_EQ(h->count(), total);
  EXPECT_EQ(h->BucketCounts().front(), total / 4);  // the zeros (<= 5e-06)
  EXPECT_EQ(h->BucketCounts().back(), 0u);          // none above 10
  EXPECT_DOUBLE_EQ(h->sum(), 1.5 * static_cast<double>(total));
  std::string text = registry.RenderPrometheus();
  EXPECT_NE(text.find("ops_total " + std::to_string(2 * total) + "\n"), std::string::npos);
  EXPECT_NE(text.find("lat_seconds_count " + std::to_string(total) + "\n"), std::string::npos);
  EXPECT_NE(text.find("lat_seconds_bucket{le=\"+Inf\"} " + std::to_string(total) + "\n"),
            std::string::npos);
}

}  // namespace
}  // namespace shelfmark
