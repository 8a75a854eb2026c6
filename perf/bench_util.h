// Small pure helpers of the benchmarks: latency percentiles and size lists.
// (Reading another process's /metrics is service/http_client.h.)
//
// Thread safety: every function is reentrant; none keeps state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/host_port.h"
#include "common/result.h"

namespace shelfmark {

// Nearest-rank percentile (p in [0, 100]) of `values`, which it reorders
// (nth_element). 0 for an empty vector.
int64_t Percentile(std::vector<int64_t>* values, double p);

struct LatencySummary {
  uint64_t count = 0;
  double p50_us = 0;
  double p99_us = 0;
  double max_us = 0;
};

// Summarizes per-call latencies given in nanoseconds (reorders them).
LatencySummary SummarizeLatencyNs(std::vector<int64_t>* latencies_ns);

// The columns users know from perftest, in microseconds: t_min, t_max,
// t_typical (the median), t_avg, stdev (population), p99, p99.9.
struct LatencyStats {
  uint64_t count = 0;
  double min_us = 0, max_us = 0, typical_us = 0, avg_us = 0, stdev_us = 0;
  double p99_us = 0, p999_us = 0;
};

// LatencyStats of latencies in nanoseconds (reorders them); all zero for an
// empty vector.
LatencyStats DescribeLatencyNs(std::vector<int64_t>* latencies_ns);

// "4096,65536" -> {4096, 65536}; false on an empty list, an empty, zero,
// negative or malformed entry (`out` is then unspecified).
bool ParseSizeList(const std::string& text, std::vector<uint64_t>* out);


}  // namespace shelfmark
