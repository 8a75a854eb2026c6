#include "perf/bench_segment.h"

#include <string>

namespace shelfmark {

Segment BookkeepingSegment(std::string_view prefix, uint64_t base, uint64_t size) {
  Segment s;
  s.id = UUID::Generate();
  const std::string id = s.id.ToString();
  s.name = std::string(prefix) + "-" + id;
  s.base = base;
  s.size = size;
  s.endpoint = "bookkeeping/" + id;
  s.protocol = "tcp";
  return s;
}

}  // namespace shelfmark
