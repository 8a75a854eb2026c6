// BenchKeys: the keys a benchmark puts, computed from a number so that no
// key list is kept (10M keys would cost the benchmark more DRAM than the
// master). Key i is "<prefix><run><phase>-<i as 12 digits>" padded with 'x'
// to exactly key_size bytes, so keys of different runs and phases never
// collide and every key has the same length.
//
// Thread safety: immutable after construction; Make() is reentrant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/uuid.h"

namespace shelfmark {

class BenchKeys {
 public:
  // Bytes every key needs beyond the prefix: 8 hex digits of the run id,
  // the phase letter, '-', 12 digits.
  static constexpr size_t kIdBytes = 22;

  // Precondition: prefix.size() + kIdBytes <= key_size.
  BenchKeys(std::string_view prefix, const UUID& run, char phase, size_t key_size);

  // Writes key `id` (< 10^12) into *out, reusing its capacity.
  void Make(uint64_t id, std::string* out) const;
  size_t key_size() const { return key_size_; }

 private:
  std::string head_;  // prefix + run + phase + '-'
  size_t key_size_;
};

}  // namespace shelfmark
