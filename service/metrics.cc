#include "service/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace shelfmark {
namespace {

// Prometheus float text: shortest round-trip decimal, or NaN / +Inf / -Inf.
// Whole numbers below 1e15 (byte counts) print as plain integers, not 1e+12;
// like Go's %g (Prometheus' own clients, whose `le` labels these match),
// exponent notation is for magnitudes below 1e-4 (5e-06, but 0.0005).
std::string FormatDouble(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  const double magnitude = std::fabs(v);
  std::to_chars_result r;
  if (magnitude < 1e15 && (v == std::trunc(v) || magnitude >= 1e-4)) {
    r = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed);
  } else if (magnitude < 1e-4) {
    r = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  } else {
    r = std::to_chars(buf, buf + sizeof(buf), v);
  }
  auto [end, ec] = r;
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
      AppendLine(out, Series(name, e->labels), FormatDouble(e->read ? e->read() : 0.0));
    }
  }
}

// True when `word` is one of the `_`-separated words of `name`.
bool HasWord(std::string_view name, std::string_view word) {
  const std::string padded = "_" + std::string(name) + "_";
  return padded.find("_" + std::string(word) + "_") != std::string::npos;
}

// The first of `words` that is a word of `name`; "" when none is.
std::string FirstWord(std::string_view name, std::initializer_list<std::string_view> words) {
  for (std::string_view word : words) {
    if (HasWord(name, word)) return std::string(word);
  }
  return "";
}

// A word of `name` naming a unit other than the base one: "milliseconds",
// "kilobytes", "minutes", "bits"; "" when none does.
std::string NonBaseUnit(std::string_view name) {
  std::string word = FirstWord(name, {"minutes", "hours", "days", "weeks", "bits"});
  if (!word.empty()) return word;
  for (std::string_view base : {"seconds", "bytes"}) {
    for (std::string_view prefix :
         {"pico", "nano", "micro", "milli", "centi", "deci", "deca", "hecto", "kilo", "kibi",
          "mega", "mebi", "mibi", "giga", "gibi", "tera", "tebi", "peta", "pebi"}) {
      std::string unit = std::string(prefix) + std::string(base);
      if (HasWord(name, unit)) return unit;
    }
  }
  return "";
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

std::vector<double> LatencyBucketsSeconds() {
  // Whole microseconds divided once, so each bound is the double nearest its
  // decimal value and renders as that decimal (5e-06, 1e-05, ...).
  std::vector<double> bounds;
  for (double decade = 1; decade <= 10'000'000; decade *= 10) {
    for (double m : {1.0, 2.0, 5.0}) {
      double us = m * decade;
      if (us >= 5 && us <= 10'000'000) bounds.push_back(us / 1e6);
    }
  }
  return bounds;  // 5e-06, 1e-05, 2e-05, 5e-05, ..., 5, 10
}

std::string MetricNameProblem(std::string_view name, std::string_view type,
                              std::string_view help) {
  if (name.empty()) return "empty name";
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || c == '_' || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return "not lower snake case ([a-z_][a-z0-9_]*; ':' is for recording rules)";
  }
  if (help.empty()) return "no HELP text";
  const bool counter = type == "counter", histogram = type == "histogram";
  if (!counter && !histogram && type != "gauge") return "unknown type";
  if (counter != name.ends_with("_total")) {
    return counter ? "a counter's name ends in _total" : "only a counter's name ends in _total";
  }
  for (std::string_view reserved : {"_count", "_sum", "_bucket"}) {
    if (!histogram && name.ends_with(reserved)) {
      return "the " + std::string(reserved) + " suffix is a histogram's";
    }
  }
  if (std::string type_word = FirstWord(name, {"counter", "gauge", "histogram", "summary"});
      !type_word.empty()) {
    return "the type ('" + type_word + "') in the name";
  }
  if (std::string unit = FirstWord(name, {"s", "ms", "us", "ns", "sec", "b", "kb", "mb", "gb",
                                          "tb", "pb", "m", "h", "d"});
      !unit.empty()) {
    return "abbreviated unit '" + unit + "' (use seconds or bytes)";
  }
  if (std::string unit = NonBaseUnit(name); !unit.empty()) {
    return "unit '" + unit + "' (use seconds or bytes)";
  }
  return "";
}

// Registering the same name and labels again returns the existing counter
// (or histogram, keeping its original bounds), so a series is never duplicated.
// A series' name is checked (CheckName) once, when it is first registered:
// re-registering on a hot path costs a lookup only.
Counter* MetricsRegistry::AddCounter(const std::string& name, const std::string& help,
                                     const std::string& labels) {
  MutexLock lock(&mu_);
  for (Entry& e : entries_) {
    if (e.counter && e.name == name && e.labels == labels) return e.counter;
  }
  CheckName(name, help, "counter", labels, /*read=*/false);
  Counter* counter = &counters_.emplace_back();
  entries_.push_back(Entry{name, help, labels, "counter", counter, nullptr, {}});
  return counter;
}

Histogram* MetricsRegistry::AddHistogram(const std::string& name, const std::string& help,
                                         const std::string& labels,
                                         std::vector<double> upper_bounds) {
  MutexLock lock(&mu_);
  for (Entry& e : entries_) {
    if (e.histogram && e.name == name && e.labels == labels) return e.histogram;
  }
  CheckName(name, help, "histogram", labels, /*read=*/false);
  Histogram* h =
      histograms_.emplace_back(std::make_unique<Histogram>(std::move(upper_bounds))).get();
  entries_.push_back(Entry{name, help, labels, "histogram", nullptr, h, {}});
  return h;
}

void MetricsRegistry::AddGauge(const std::string& name, const std::string& help,
                               std::function<double()> read, const std::string& labels) {
  AddRead(name, help, "gauge", std::move(read), labels);
}

void MetricsRegistry::AddCounterFunc(const std::string& name, const std::string& help,
                                     std::function<double()> read, const std::string& labels) {
  AddRead(name, help, "counter", std::move(read), labels);
}

// Registering the same name and labels again replaces the reader.
void MetricsRegistry::AddRead(const std::string& name, const std::string& help,
                              const std::string& type, std::function<double()> read,
                              const std::string& labels) {
  MutexLock lock(&mu_);
  for (Entry& e : entries_) {
    if (!e.counter && !e.histogram && e.type == type && e.name == name && e.labels == labels) {
      e.read = std::move(read);
      return;
    }
  }
  CheckName(name, help, type, labels, /*read=*/true);
  entries_.push_back(Entry{name, help, labels, type, nullptr, nullptr, std::move(read)});
}

void MetricsRegistry::CheckName(const std::string& name, const std::string& help,
                                const std::string& type, const std::string& labels,
                                bool read) const {
  std::string problem = MetricNameProblem(name, type, help);
  for (const Entry& e : entries_) {
    if (!problem.empty() || e.name != name) continue;
    if (e.type != type) {
      problem = "registered as a " + e.type + " too";
    } else if (e.labels == labels && read == (e.counter || e.histogram)) {
      problem = "series {" + labels + "} registered twice, stored and read at render time";
    }
  }
  if (problem.empty()) return;
  std::fprintf(stderr, "MetricsRegistry: %s metric %s breaks the naming conventions: %s\n",
               type.c_str(), name.c_str(), problem.c_str());
  std::abort();
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
