#include "perf/get_report.h"

#include <algorithm>
#include <cstdio>

#include "common/json_line.h"
#include "perf/get_options.h"

namespace shelfmark {

std::string ServedPath(const std::string& replica, const ServedCounts& counts) {
  std::string path = replica == kReplicaLocalDisk ? "ucx-am" : "";
  const std::pair<uint64_t, const char*> moved[] = {{counts.rdma_reads, "rdma"},
                                                     {counts.ucx_reads, "ucx"},
                                                     {counts.same_host_reads, "same-host"}};
  for (const auto& [count, name] : moved) {
    if (count == 0) continue;
    if (!path.empty()) path += "+";
    path += name;
  }
  return path.empty() ? "none" : path;
}

Throughput ThroughputOver(uint64_t keys, uint64_t size, int64_t ns) {
  if (ns <= 0) return {};
  const double seconds = static_cast<double>(ns) / 1e9;
  const double n = static_cast<double>(keys);
  return {n / seconds, n * static_cast<double>(size) / seconds / 1e9};
}

int64_t CombinedSpanNs(const std::vector<std::pair<int64_t, int64_t>>& spans) {
  bool any = false;
  int64_t first = 0, last = 0;
  for (const auto& [start, end] : spans) {
    if (end < start) continue;
    first = any ? std::min(first, start) : start;
    last = any ? std::max(last, end) : end;
    any = true;
  }
  return any ? last - first : 0;
}

double GetRow::BaselineRatio() const {
  if (!has_baselines || baseline_pread_p50_us < 0) return 0;
  const double base = baseline_am_p50_us + baseline_pread_p50_us;
  return base > 0 ? transfer_p50_us / base : 0;
}

double GetRow::CacheHitPercent() const {
  const uint64_t lookups = cache_hits + cache_misses;
  return lookups > 0 ? 100.0 * static_cast<double>(cache_hits) / static_cast<double>(lookups) : 0;
}

std::string GetRowJson(const GetRow& r) {
  JsonObject j;
  j.Str("bench", "get").Str("replica", r.replica).Str("protocol", r.protocol)
      .Str("path", r.path).Uint("size", r.size).Uint("iters", r.get.count)
      .Int("concurrency", r.concurrency).Int("batch", r.batch)
      .Num("t_min_us", r.get.min_us, 2).Num("t_max_us", r.get.max_us, 2)
      .Num("t_typical_us", r.get.typical_us, 2).Num("t_avg_us", r.get.avg_us, 2)
      .Num("stdev_us", r.get.stdev_us, 2).Num("p50_us", r.get.typical_us, 2)
      .Num("p99_us", r.get.p99_us, 2).Num("p999_us", r.get.p999_us, 2)
      .Num("lookup_p50_us", r.lookup_p50_us, 2).Num("transfer_p50_us", r.transfer_p50_us, 2)
      .Num("ops_per_s", r.ops_per_s, 1).Num("gbytes_per_s", r.gbytes_per_s, 4)
      .Bool("location_cache", r.location_cache).Uint("cache_hits", r.cache_hits)
      .Uint("cache_misses", r.cache_misses);
  if (r.has_baselines) {
    j.Num("baseline_am_p50_us", r.baseline_am_p50_us, 2);
    if (r.baseline_pread_p50_us >= 0) {
      j.Num("baseline_pread_p50_us", r.baseline_pread_p50_us, 2).Num("ratio", r.BaselineRatio(), 3);
    } else {
      j.Null("baseline_pread_p50_us").Null("ratio");
    }
  }
  j.Bool("interrupted", r.interrupted);
  return j.str();
}

std::string GetTableHeader() {
  char line[256];
  std::snprintf(line, sizeof(line),
                "%-10s %-9s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %9s %7s %6s %8s %8s %6s",
                "replica", "path", "size", "iters", "t_min", "t_typ", "t_avg", "stdev", "p99",
                "p99.9", "lookup", "xfer", "ops/s", "GB/s", "hit%", "base_am", "base_rd",
                "ratio");
  return line;
}

std::string GetTableRow(const GetRow& r) {
  char base[64] = "       -        -      -";
  if (r.has_baselines && r.baseline_pread_p50_us >= 0) {
    std::snprintf(base, sizeof(base), "%8.1f %8.1f %6.2f", r.baseline_am_p50_us,
                  r.baseline_pread_p50_us, r.BaselineRatio());
  } else if (r.has_baselines) {
    std::snprintf(base, sizeof(base), "%8.1f        -      -", r.baseline_am_p50_us);
  }
  char hits[16] = "   off";
  if (r.location_cache) std::snprintf(hits, sizeof(hits), "%6.1f", r.CacheHitPercent());
  char line[320];
  std::snprintf(line, sizeof(line),
                "%-10s %-9s %8llu %8llu %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %9.0f "
                "%7.3f %s %s%s",
                r.replica.c_str(), r.path.c_str(), static_cast<unsigned long long>(r.size),
                static_cast<unsigned long long>(r.get.count), r.get.min_us, r.get.typical_us,
                r.get.avg_us, r.get.stdev_us, r.get.p99_us, r.get.p999_us, r.lookup_p50_us,
                r.transfer_p50_us, r.ops_per_s, r.gbytes_per_s, hits, base,
                r.interrupted ? " (interrupted)" : "");
  return line;
}

}  // namespace shelfmark
