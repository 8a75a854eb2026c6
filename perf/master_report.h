// MasterResult: one measured result of `shelfmark-perf master`, and its two
// renderings: one JSON object per line (--json) and an aligned table row.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace shelfmark {

// The memory figures of an `--objects=N` run (RSS read from the master's
// /metrics before and after putting N single-replica objects).
struct MemoryFigures {
  uint64_t objects = 0;  // objects put successfully
  uint64_t rss_before = 0;
  uint64_t rss_after = 0;
  uint64_t key_count_before = 0;
  uint64_t key_count_after = 0;
  double average_key_bytes = 0;
  // (rss_after - rss_before) / objects; negative when RSS shrank.
  double bytes_per_object() const;
  double overhead_beyond_key_bytes() const { return bytes_per_object() - average_key_bytes; }
};

struct MasterResult {
  std::string op;  // "put" | "get_replica_list" | "exist_key" | "remove" | "memory"
  int64_t batch = 1;
  int64_t connections = 1;
  int64_t key_size = 0;
  int64_t value_size = 0;
  double seconds = 0;   // measured wall time of the timed phase
  uint64_t calls = 0;   // RPCs (a batch pair counts once)
  uint64_t keys = 0;    // keys answered OK
  uint64_t errors = 0;  // non-OK answers (per key)
  double p50_us = 0;    // per call
  double p99_us = 0;
  double max_us = 0;
  bool interrupted = false;  // stopped early by SIGINT
  bool capped = false;       // put phase stopped at the segment-capacity guard
  // Puts committed in one master round trip (ReservePut/CommitPut); the
  // rest of `keys` went as PutStart + PutEnd.
  uint64_t one_round_trip = 0;
  std::optional<MemoryFigures> memory;

  double keys_per_s() const { return seconds > 0 ? static_cast<double>(keys) / seconds : 0; }
};

// {"bench":"master","op":...,"batch":...,...} without a trailing newline.
std::string MasterResultJson(const MasterResult& r);
// The header line matching MasterResultTableRow, and one row.
std::string MasterResultTableHeader();
std::string MasterResultTableRow(const MasterResult& r);

}  // namespace shelfmark
