#include "service/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <unordered_map>
#include <utility>

namespace shelfmark {
namespace {

// Prometheus float text: shortest round-trip decimal, or NaN / +Inf / -Inf.
// Whole numbers below 1e15 (byte counts) print as plain integers, not 1e+12.
std::string FormatDouble(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  bool whole = std::fabs(v) < 1e15 && v == std::trunc(v);
  auto [end, ec] = whole ? std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed)
                         : std::to_chars(buf, buf + sizeof(buf), v);
  if (ec != std::errc()) return "NaN";
  return std::string(buf, end);
}

// `name{labels,extra}`, omitting the braces when both are empty.
std::string Series(const std::string& name, const std::string& labels,
                   const std::string& extra = "") {
  if (labels.empty() && extra.empty()) return name;
  std::string out = name + "{" + labels;
  if (!labels.empty() && !extra.empty()) out += ",";
  return out + extra + "}";
}

// HELP text escapes backslash and line feed (format 0.0.4).
std::string EscapeHelp(const std::string& help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void AppendLine(std::string& out, const std::string& series, const std::string& value) {
  out += series;
  out += ' ';
  out += value;
  out += '\n';
}

void RenderHistogram(std::string& out, const std::string& name, const std::string& labels,
                     const Histogram& h) {
  // Read the buckets once; _count is their total so it always equals +Inf.
  std::vector<uint64_t> counts = h.BucketCounts();
  const std::vector<double>& bounds = h.upper_bounds();
  uint64_t cumulative = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    cumulative += counts[i];
    std::string le = i < bounds.size() ? FormatDouble(bounds[i]) : "+Inf";
    AppendLine(out, Series(name + "_bucket", labels, "le=\"" + le + "\""),
               std::to_string(cumulative));
  }
  AppendLine(out, Series(name + "_sum", labels), FormatDouble(h.sum()));
  AppendLine(out, Series(name + "_count", labels), std::to_string(cumulative));
}

// One metric name: the shared header, then each entry's lines. A template
// because the registry's Entry type is private.
template <typename Entry>
void RenderGroup(std::string& out, const std::vector<const Entry*>& group) {
  const std::string& name = group.front()->name;
  out += "# HELP " + name + " " + EscapeHelp(group.front()->help) + "\n";
  out += "# TYPE " + name + " " + group.front()->type + "\n";
  for (const Entry* e : group) {
    if (e->counter) {
      AppendLine(out, Series(name, e->labels), std::to_string(e->counter->value()));
    } else if (e->histogram) {
      RenderHistogram(out, name, e->labels, *e->histogram);
    } else {
      AppendLine(out, Series(name, e->labels), FormatDouble(e->gauge ? e->gauge() : 0.0));
    }
  }
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)) {
  // +Inf is implicit and NaN cannot order; keep finite bounds, ascending, unique.
  std::erase_if(bounds_, [](double b) { return !std::isfinite(b); });
  std::sort(bounds_.begin(), bounds_.end());
  bounds_.erase(std::unique(bounds_.begin(), bounds_.end()), bounds_.end());
  buckets_ = std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1);
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double value) {
  // First bound >= value: a value equal to a bound belongs to that bucket.
  // NaN compares false everywhere; send it to +Inf rather than bucket 0.
  size_t index = bounds_.size();
  if (!std::isnan(value)) {
    index = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  }
  buckets_[index].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

std::vector<uint64_t> Histogram::BucketCounts() const {
  std::vector<uint64_t> counts(bounds_.size() + 1);
  for (size_t i = 0; i < counts.size(); ++i) {
    counts[i] = buckets_[i].load(std::memory_order_relaxed);
  }
  return counts;
}

double Histogram::sum() const { return sum_.load(std::memory_order_relaxed); }

std::vector<double> LatencyBucketsUs() {
  std::vector<double> bounds;
  for (double decade = 1; decade <= 10'000'000; decade *= 10) {
    for (double m : {1.0, 2.0, 5.0}) {
      double v = m * decade;
      if (v >= 5 && v <= 10'000'000) bounds.push_back(v);
    }
  }
  return bounds;  // 5, 10, 20, 50, ..., 5e6, 1e7
}

// Registering the same name and labels again returns the existing counter
// (or histogram, keeping its original bounds), so a series is never duplicated.
Counter* MetricsRegistry::AddCounter(const std::string& name, const std::string& help,
                                     const std::string& labels) {
  MutexLock lock(&mu_);
  for (Entry& e : entries_) {
    if (e.type == "counter" && e.name == name && e.labels == labels) return e.counter;
  }
  Counter* counter = &counters_.emplace_back();
  entries_.push_back(Entry{name, help, labels, "counter", counter, nullptr, {}});
  return counter;
}

Histogram* MetricsRegistry::AddHistogram(const std::string& name, const std::string& help,
                                         const std::string& labels,
                                         std::vector<double> upper_bounds) {
  MutexLock lock(&mu_);
  for (Entry& e : entries_) {
    if (e.type == "histogram" && e.name == name && e.labels == labels) return e.histogram;
  }
  Histogram* h =
      histograms_.emplace_back(std::make_unique<Histogram>(std::move(upper_bounds))).get();
  entries_.push_back(Entry{name, help, labels, "histogram", nullptr, h, {}});
  return h;
}

// Registering the same gauge name and labels again replaces its reader.
void MetricsRegistry::AddGauge(const std::string& name, const std::string& help,
                               std::function<double()> read, const std::string& labels) {
  MutexLock lock(&mu_);
  for (Entry& e : entries_) {
    if (e.type == "gauge" && e.name == name && e.labels == labels) {
      e.gauge = std::move(read);
      return;
    }
  }
  entries_.push_back(Entry{name, help, labels, "gauge", nullptr, nullptr, std::move(read)});
}

// Entries are grouped by name in order of first registration; HELP and TYPE
// come from the first entry of each name. Gauges are read outside the lock so
// a reader may itself use the registry.
std::string MetricsRegistry::RenderPrometheus() const {
  std::vector<Entry> snapshot;
  {
    MutexLock lock(&mu_);
    snapshot = entries_;
  }
  std::vector<std::string> order;
  std::unordered_map<std::string, std::vector<const Entry*>> groups;
  for (const Entry& e : snapshot) {
    auto& group = groups[e.name];
    if (group.empty()) order.push_back(e.name);
    group.push_back(&e);
  }
  std::string out;
  for (const std::string& name : order) RenderGroup(out, groups[name]);
  return out;
}

}  // namespace shelfmark
