#include "perf/bench_util.h"


#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace shelfmark {

int64_t Percentile(std::vector<int64_t>* values, double p) {
  if (values->empty()) return 0;
  p = std::clamp(p, 0.0, 100.0);
  size_t n = values->size();
  // Nearest rank: the smallest value with at least p% of values <= it.
  // (The epsilon keeps 99.9% of 1000 at rank 999 despite 0.999 * 1000
  // rounding to 999.0000000000001.)
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(n) - 1e-9));
  size_t index = rank == 0 ? 0 : rank - 1;
  std::nth_element(values->begin(), values->begin() + static_cast<ptrdiff_t>(index),
                   values->end());
  return (*values)[index];
}

LatencySummary SummarizeLatencyNs(std::vector<int64_t>* latencies_ns) {
  LatencySummary s;
  s.count = latencies_ns->size();
  if (s.count == 0) return s;
  s.p50_us = static_cast<double>(Percentile(latencies_ns, 50)) / 1000.0;
  s.p99_us = static_cast<double>(Percentile(latencies_ns, 99)) / 1000.0;
  s.max_us = static_cast<double>(*std::max_element(latencies_ns->begin(), latencies_ns->end())) /
             1000.0;
  return s;
}

LatencyStats DescribeLatencyNs(std::vector<int64_t>* latencies_ns) {
  LatencyStats s;
  s.count = latencies_ns->size();
  if (s.count == 0) return s;
  double sum = 0;
  for (int64_t v : *latencies_ns) sum += static_cast<double>(v);
  const double mean = sum / static_cast<double>(s.count);
  double squares = 0;
  for (int64_t v : *latencies_ns) squares += (static_cast<double>(v) - mean) * (static_cast<double>(v) - mean);
  const auto [lo, hi] = std::minmax_element(latencies_ns->begin(), latencies_ns->end());
  s.min_us = static_cast<double>(*lo) / 1000.0;
  s.max_us = static_cast<double>(*hi) / 1000.0;
  s.avg_us = mean / 1000.0;
  s.stdev_us = std::sqrt(squares / static_cast<double>(s.count)) / 1000.0;
  s.typical_us = static_cast<double>(Percentile(latencies_ns, 50)) / 1000.0;
  s.p99_us = static_cast<double>(Percentile(latencies_ns, 99)) / 1000.0;
  s.p999_us = static_cast<double>(Percentile(latencies_ns, 99.9)) / 1000.0;
  return s;
}

bool ParseSizeList(const std::string& text, std::vector<uint64_t>* out) {
  size_t at = 0;
  while (at <= text.size()) {
    size_t comma = text.find(',', at);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(at, comma - at);
    char* end = nullptr;
    const unsigned long long v = std::strtoull(item.c_str(), &end, 10);
    if (item.empty() || item[0] < '0' || item[0] > '9' || *end != '\0' || v == 0) return false;
    out->push_back(v);
    at = comma + 1;
  }
  return !out->empty();
}

}  // namespace shelfmark
