#include "perf/batchget_report.h"

#include "common/json_line.h"

namespace shelfmark {

double GigabytesPerSecond(uint64_t bytes, int64_t ns) {
  return ns > 0 ? static_cast<double>(bytes) / static_cast<double>(ns) : 0;  // bytes/ns = GB/s
}

double LocalVsMemcpy(const BatchGetRow& row) {
  return row.memcpy_gbps > 0 ? row.local_get_gbps / row.memcpy_gbps : 0;
}

std::string BatchGetJson(const BatchGetRow& r) {
  JsonObject j;
  j.Str("bench", "batchget").Str("protocol", r.protocol).Uint("objects", r.objects)
      .Uint("size", r.size).Int("iters", r.iters).Num("batch_p50_us", r.batch_p50_us, 2)
      .Num("batch_p99_us", r.batch_p99_us, 2).Num("batch_gbps", r.batch_gbps, 3);
  if (r.local) {
    j.Num("local_get_gbps", r.local_get_gbps, 3).Num("memcpy_gbps", r.memcpy_gbps, 3)
        .Num("local_vs_memcpy", LocalVsMemcpy(r), 3).Uint("local_copies", r.local_copies);
  } else {
    j.Null("local_get_gbps").Null("memcpy_gbps").Null("local_vs_memcpy").Null("local_copies");
  }
  return j.str();
}

}  // namespace shelfmark
