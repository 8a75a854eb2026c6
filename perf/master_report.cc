#include "perf/master_report.h"

#include <cstdio>

#include "common/json_line.h"

namespace shelfmark {

double MemoryFigures::bytes_per_object() const {
  if (objects == 0) return 0;
  return (static_cast<double>(rss_after) - static_cast<double>(rss_before)) /
         static_cast<double>(objects);
}

std::string MasterResultJson(const MasterResult& r) {
  JsonObject j;
  j.Str("bench", "master")
      .Str("op", r.op)
      .Int("batch", r.batch)
      .Int("connections", r.connections)
      .Num("keys_per_s", r.keys_per_s(), 1)
      .Num("p50_us", r.p50_us, 1)
      .Num("p99_us", r.p99_us, 1)
      .Uint("errors", r.errors)
      .Num("max_us", r.max_us, 1)
      .Uint("calls", r.calls)
      .Uint("keys", r.keys)
      .Num("seconds", r.seconds, 3)
      .Int("key_size", r.key_size)
      .Int("value_size", r.value_size);
  if (r.op == "put") j.Uint("one_round_trip", r.one_round_trip);
  if (r.memory) {
    const MemoryFigures& m = *r.memory;
    j.Uint("objects", m.objects)
        .Num("bytes_per_object", m.bytes_per_object(), 1)
        .Num("overhead_beyond_key_bytes", m.overhead_beyond_key_bytes(), 1)
        .Uint("rss_before", m.rss_before)
        .Uint("rss_after", m.rss_after)
        .Num("average_key_bytes", m.average_key_bytes, 1)
        .Uint("key_count_before", m.key_count_before)
        .Uint("key_count_after", m.key_count_after);
  }
  if (r.interrupted) j.Bool("interrupted", true);
  if (r.capped) j.Bool("capped", true);
  return j.str();
}

std::string MasterResultTableHeader() {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "%-17s %6s %5s %13s %10s %10s %7s  %s", "op", "batch", "conns",
                "keys/s", "p50_us", "p99_us", "errors", "notes");
  return buf;
}

std::string MasterResultTableRow(const MasterResult& r) {
  std::string notes;
  if (r.memory) {
    const MemoryFigures& m = *r.memory;
    char mem[256];
    std::snprintf(mem, sizeof(mem),
                  "objects=%llu bytes/object=%.1f beyond_key=%.1f rss %.1f -> %.1f MiB",
                  static_cast<unsigned long long>(m.objects), m.bytes_per_object(),
                  m.overhead_beyond_key_bytes(), static_cast<double>(m.rss_before) / 1048576.0,
                  static_cast<double>(m.rss_after) / 1048576.0);
    notes = mem;
  }
  // Batched puts too: with --reserve_batches they may commit in one round trip.
  if (r.op == "put") notes += "one_round_trip=" + std::to_string(r.one_round_trip);
  if (r.interrupted) notes += notes.empty() ? "interrupted" : " interrupted";
  if (r.capped) notes += notes.empty() ? "capped" : " capped";
  char buf[512];
  std::snprintf(buf, sizeof(buf), "%-17s %6lld %5lld %13.0f %10.1f %10.1f %7llu  %s",
                r.op.c_str(), static_cast<long long>(r.batch),
                static_cast<long long>(r.connections), r.keys_per_s(), r.p50_us, r.p99_us,
                static_cast<unsigned long long>(r.errors), notes.c_str());
  return buf;
}

}  // namespace shelfmark
