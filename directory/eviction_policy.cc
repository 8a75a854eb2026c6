#include "directory/eviction_policy.h"

#include <algorithm>

namespace shelfmark {

std::optional<EvictionPolicy> ParseEvictionPolicy(std::string_view name) {
  if (name == "lru") return EvictionPolicy::kLru;
  if (name == "2q") return EvictionPolicy::k2q;
  return std::nullopt;
}

std::string_view EvictionPolicyName(EvictionPolicy policy) {
  return policy == EvictionPolicy::kLru ? "lru" : "2q";
}

EvictionQueue QueueOf(EvictionPolicy policy, uint32_t uses) {
  if (policy == EvictionPolicy::kLru) return kProtectedQueue;
  return uses <= 1 ? kProbationQueue : kProtectedQueue;
}

QueueTargets SplitTarget(EvictionPolicy policy, uint64_t target,
                         const uint64_t (&bytes)[kQueueCount], uint64_t probation_limit) {
  QueueTargets t;
  const uint64_t probation = bytes[kProbationQueue], protect = bytes[kProtectedQueue];
  if (policy == EvictionPolicy::kLru) {
    t.bytes[kProtectedQueue] = std::min(target, protect);
    return t;
  }
  // Probation's excess first, then protected, then whatever probation has left.
  const uint64_t excess = probation > probation_limit ? probation - probation_limit : 0;
  uint64_t from_probation = std::min(target, excess);
  const uint64_t from_protected = std::min(target - from_probation, protect);
  from_probation += std::min(target - from_probation - from_protected, probation - from_probation);
  t.bytes[kProbationQueue] = from_probation;
  t.bytes[kProtectedQueue] = from_protected;
  return t;
}

EvictionCutoffs ComputeCutoffs(QueueCandidates (&queues)[kQueueCount],
                               const QueueTargets& targets) {
  EvictionCutoffs cut;
  for (int q = 0; q < kQueueCount; ++q) {
    std::vector<UseSample>& sample = queues[q].sample;
    if (targets.bytes[q] == 0 || sample.empty()) continue;
    std::sort(sample.begin(), sample.end(),
              [](const UseSample& a, const UseSample& b) { return a.last_use < b.last_use; });
    uint64_t sample_bytes = 0;
    for (const UseSample& s : sample) sample_bytes += s.bytes;
    const double scale = static_cast<double>(queues[q].bytes) /
                         static_cast<double>(std::max<uint64_t>(1, sample_bytes));
    double acc = 0;
    cut.evict[q] = true;
    cut.last_use[q] = sample.back().last_use;
    for (const UseSample& s : sample) {
      acc += static_cast<double>(s.bytes) * scale;
      if (acc >= static_cast<double>(targets.bytes[q])) {
        cut.last_use[q] = s.last_use;
        break;
      }
    }
  }
  return cut;
}

}  // namespace shelfmark
