#include "perf/bench_keys.h"

#include <cstdio>

namespace shelfmark {

BenchKeys::BenchKeys(std::string_view prefix, const UUID& run, char phase, size_t key_size)
    : key_size_(key_size) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%08x%c-", static_cast<unsigned>(run.lo & 0xffffffffu), phase);
  head_ = std::string(prefix) + buf;
}

void BenchKeys::Make(uint64_t id, std::string* out) const {
  char digits[24];
  std::snprintf(digits, sizeof(digits), "%012llu", static_cast<unsigned long long>(id));
  out->assign(head_);
  out->append(digits);
  if (out->size() < key_size_) out->append(key_size_ - out->size(), 'x');
}

}  // namespace shelfmark
