// Metrics: counters, gauges and histograms rendered as Prometheus text.
//
// Names follow the Prometheus conventions that `promtool check metrics`
// enforces (docs/metrics.md): base units (seconds, bytes), `_total` on
// counters and only on them, no `_count`/`_sum`/`_bucket` suffix outside
// histograms, no abbreviated units, no type in the name, lower snake case,
// and a HELP text. Registering a name that breaks them is a programming
// error: the Add* call prints the metric and the rule and aborts, so the
// first test that registers it fails (MetricNameProblem says why).
//
// Thread safety: Add* may be called at any time from any thread (pointers
// returned stay valid for the registry's lifetime); Counter::Inc and
// Histogram::Observe are lock-free and may be called from any thread;
// RenderPrometheus may run concurrently with updates.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/mutex.h"

namespace shelfmark {

class Counter {
 public:
  void Inc(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// Cumulative histogram with fixed upper bounds (ascending) plus +Inf.
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double value);
  const std::vector<double>& upper_bounds() const { return bounds_; }
  // Per-bucket (non-cumulative) counts; the last one is +Inf.
  std::vector<uint64_t> BucketCounts() const;
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  double sum() const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0.0};  // C++20 atomic fetch_add: lock-free CAS, no overflow
};

// Default latency bounds in seconds: 5us .. 10s (1, 2, 5 per decade).
std::vector<double> LatencyBucketsSeconds();

// What breaks the naming conventions above in a metric `name` of `type`
// ("counter", "gauge" or "histogram") with `help`; "" when nothing does.
std::string MetricNameProblem(std::string_view name, std::string_view type,
                              std::string_view help);

class MetricsRegistry {
 public:
  // `labels` is the Prometheus label text without braces, e.g.
  // `method="PutStart"`; metrics of one name share one HELP/TYPE header.
  Counter* AddCounter(const std::string& name, const std::string& help,
                      const std::string& labels = "");
  Histogram* AddHistogram(const std::string& name, const std::string& help,
                          const std::string& labels, std::vector<double> upper_bounds);
  // A gauge read when rendering; `read` must be thread-safe.
  void AddGauge(const std::string& name, const std::string& help,
                std::function<double()> read, const std::string& labels = "");
  // A counter whose value is read when rendering (a total kept elsewhere,
  // e.g. a component's own atomic counter); `read` must be thread-safe and
  // must never decrease.
  void AddCounterFunc(const std::string& name, const std::string& help,
                      std::function<double()> read, const std::string& labels = "");
  // Prometheus text exposition format 0.0.4.
  std::string RenderPrometheus() const;

 private:
  struct Entry {
    std::string name, help, labels, type;
    Counter* counter = nullptr;
    Histogram* histogram = nullptr;
    std::function<double()> read;  // gauges and counters read at render time
  };
  // Aborts when `name` breaks the conventions, is registered with another
  // type, or its series `labels` is registered both stored (AddCounter,
  // AddHistogram) and `read` at render time (AddGauge, AddCounterFunc).
  void CheckName(const std::string& name, const std::string& help, const std::string& type,
                 const std::string& labels, bool read) const REQUIRES(mu_);
  void AddRead(const std::string& name, const std::string& help, const std::string& type,
               std::function<double()> read, const std::string& labels);
  mutable Mutex mu_;
  std::vector<Entry> entries_ GUARDED_BY(mu_);
  std::deque<Counter> counters_ GUARDED_BY(mu_);
  std::deque<std::unique_ptr<Histogram>> histograms_ GUARDED_BY(mu_);
};

}  // namespace shelfmark
