// The result rows of `shelfmark-perf get` (perf/get_bench.h) and their two
// renderings: one JSON object per line, or a fixed-width table.
//
// Thread safety: plain values and reentrant functions.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "perf/bench_util.h"

namespace shelfmark {

// What moved a row's bytes: the client's counters over the row's gets
// (warmup included), as differences.
struct ServedCounts {
  uint64_t rdma_reads = 0;       // RDMA READs posted (the verbs engine)
  uint64_t ucx_reads = 0;        // UCX RMA gets posted
  uint64_t same_host_reads = 0;  // copies from a node's segment mapped into this client
};

// The label of what served a row (GetRow::path): for a memory row the
// counters that moved, "rdma", "ucx" or "same-host" ('+'-joined when
// several did, "none" when none did); a local_disk row is "ucx-am" (its
// bytes come in LOCAL_DISK read messages, which no counter counts), with
// any memory counter that moved appended (reads that fell back to MEMORY).
std::string ServedPath(const std::string& replica, const ServedCounts& counts);

// Keys per second and object bytes per second of `keys` reads of `size`
// bytes in `ns` nanoseconds; both 0 when ns <= 0.
struct Throughput {
  double ops_per_s = 0;
  double gbytes_per_s = 0;  // bytes / 1e9
};
Throughput ThroughputOver(uint64_t keys, uint64_t size, int64_t ns);

// The nanoseconds from the earliest start to the latest end of `spans`
// (start, end) pairs, those with end < start skipped (a thread that timed
// nothing); 0 when none is left.
int64_t CombinedSpanNs(const std::vector<std::pair<int64_t, int64_t>>& spans);

struct GetRow {
  std::string replica;   // "memory" | "local_disk"
  std::string protocol;  // the protocol of the replicas read ("ucx", "rdma")
  std::string path;      // what served the bytes (ServedPath)
  uint64_t size = 0;     // bytes per object
  int64_t concurrency = 1;
  int64_t batch = 1;
  LatencyStats get;      // whole get (lookup + transfer), per operation
  double lookup_p50_us = 0;    // master lookup (GetReplicaList) alone
  double transfer_p50_us = 0;  // data transfer alone
  // Gets (keys) per second and object bytes per second / 1e9 over the
  // timed gets' wall clock: from the first one's start to the last one's
  // end, all threads together (ThroughputOver, CombinedSpanNs).
  double ops_per_s = 0;
  double gbytes_per_s = 0;
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
