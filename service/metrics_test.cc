#include "service/metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <thread>
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
  registry.AddGauge("nan_gauge", "Not a number.",
                    [] { return std::numeric_limits<double>::quiet_NaN(); });
  registry.AddGauge("inf_gauge", "Infinite.",
                    [] { return -std::numeric_limits<double>::infinity(); });
  const std::string tail =
      "# HELP nan_gauge Not a number.\n# TYPE nan_gauge gauge\nnan_gauge NaN\n"
      "# HELP inf_gauge Infinite.\n# TYPE inf_gauge gauge\ninf_gauge -Inf\n";
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
  Histogram* h = registry.AddHistogram("op_latency_us", "Op latency.", R"(op="get")",
                                       {1, 5, 10});
  for (double v : {0.5, 1.0, 3.0, 10.0, 100.0}) h->Observe(v);
  EXPECT_EQ(registry.RenderPrometheus(),
            "# HELP op_latency_us Op latency.\n"
            "# TYPE op_latency_us histogram\n"
            "op_latency_us_bucket{op=\"get\",le=\"1\"} 2\n"
            "op_latency_us_bucket{op=\"get\",le=\"5\"} 3\n"
            "op_latency_us_bucket{op=\"get\",le=\"10\"} 4\n"
            "op_latency_us_bucket{op=\"get\",le=\"+Inf\"} 5\n"
            "op_latency_us_sum{op=\"get\"} 114.5\n"
            "op_latency_us_count{op=\"get\"} 5\n");
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

TEST(Metrics, LatencyBucketsUs) {
  std::vector<double> b = LatencyBucketsUs();
  ASSERT_FALSE(b.empty());
  EXPECT_EQ(b.front(), 5);
  EXPECT_EQ(b.back(), 10'000'000);
  for (size_t i = 1; i < b.size(); ++i) EXPECT_LT(b[i - 1], b[i]);
  for (double v : {10.0, 20.0, 50.0, 100.0, 1000.0, 1'000'000.0}) {
    EXPECT_NE(std::find(b.begin(), b.end(), v), b.end()) << v;
  }
}

TEST(Metrics, ReRegisteringReturnsTheSameSeries) {
  MetricsRegistry registry;
  Counter* a = registry.AddCounter("c_total", "C.", "x=\"1\"");
  EXPECT_EQ(registry.AddCounter("c_total", "C.", "x=\"1\""), a);
  EXPECT_NE(registry.AddCounter("c_total", "C.", "x=\"2\""), a);
  Histogram* h = registry.AddHistogram("h", "H.", "", {1});
  EXPECT_EQ(registry.AddHistogram("h", "H.", "", {1}), h);
  registry.AddGauge("g", "G.", [] { return 1.0; });
  registry.AddGauge("g", "G.", [] { return 2.0; });
  std::string text = registry.RenderPrometheus();
  EXPECT_NE(text.find("\ng 2\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("\ng 1\n"), std::string::npos) << text;
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
  Histogram* h = registry.AddHistogram("lat_us", "Latency.", "", LatencyBucketsUs());
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
  EXPECT_EQ(h->BucketCounts().front(), total);  // all values <= 5
  EXPECT_DOUBLE_EQ(h->sum(), 1.5 * static_cast<double>(total));
  std::string text = registry.RenderPrometheus();
  EXPECT_NE(text.find("ops_total " + std::to_string(2 * total) + "\n"), std::string::npos);
  EXPECT_NE(text.find("lat_us_count " + std::to_string(total) + "\n"), std::string::npos);
  EXPECT_NE(text.find("lat_us_bucket{le=\"+Inf\"} " + std::to_string(total) + "\n"),
            std::string::npos);
}

}  // namespace
}  // namespace shelfmark
