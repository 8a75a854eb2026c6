// The result rows of `shelfmark-perf get` (perf/get_bench.h) and their two
// renderings: one JSON object per line, or a fixed-width table.
//
// Thread safety: plain values and reentrant functions.
#pragma once

#include <cstdint>
#include <string>

#include "perf/bench_util.h"

namespace shelfmark {

struct GetRow {
  std::string replica;   // "memory" | "local_disk"
  std::string protocol;  // the engine that moved the bytes ("ucx", "rdma")
  uint64_t size = 0;     // bytes per object
  int64_t concurrency = 1;
  int64_t batch = 1;
  LatencyStats get;      // whole get (lookup + transfer), per operation
  double lookup_p50_us = 0;    // master lookup (GetReplicaList) alone
  double transfer_p50_us = 0;  // data transfer alone
  double ops_per_s = 0;        // gets (keys) per second, wall clock, all threads
  double gbytes_per_s = 0;     // object bytes per second / 1e9
  bool location_cache = true;  // the client's location cache was on
  uint64_t cache_hits = 0;     // its hits and misses over this row's gets (warmup included)
  uint64_t cache_misses = 0;
  bool has_baselines = false;  // local_disk rows
  double baseline_am_p50_us = 0;     // probe AM round trip of the same size
  double baseline_pread_p50_us = -1; // pread of the same bytes; < 0: not measured
  bool interrupted = false;          // Ctrl-C cut the measurement short

  // transfer p50 / (am + pread p50); 0 when a baseline is missing.
  double BaselineRatio() const;
  // Percentage of this row's lookups the location cache answered.
  double CacheHitPercent() const;
};

std::string GetRowJson(const GetRow& row);
std::string GetTableHeader();
std::string GetTableRow(const GetRow& row);

}  // namespace shelfmark
