// Which MEMORY replicas eviction frees first (docs/directory.md, "Eviction").
//
// Every put and every read of an object is a use: it stamps the object with
// the directory's use clock and counts one more use since the put
// (ObjectMetadata::use_stamp). A policy splits the candidates into queues
// and says how many bytes each gives up; inside a queue the least recently
// used go first, whatever their shard.
//  - kLru: one queue.
//  - k2q: a probation queue (objects used once: put, never read since) and
//    a protected one (used again). Probation gives up what it holds beyond
//    `probation_ratio` of capacity first, then protected gives up the rest
//    (probation again when protected runs dry). A key evicted from
//    probation is remembered (GhostKeys); put again, it enters protected.
//    New blocks thus get a bounded share to prove themselves, and blocks
//    that were ever reused are not flushed by a burst of one-time puts.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace shelfmark {

enum class EvictionPolicy : uint8_t { kLru, k2q };

// "lru" or "2q"; nullopt otherwise.
std::optional<EvictionPolicy> ParseEvictionPolicy(std::string_view name);
std::string_view EvictionPolicyName(EvictionPolicy policy);

// The queue a candidate with `uses` uses since its put is in.
enum EvictionQueue : uint8_t { kProbationQueue = 0, kProtectedQueue = 1, kQueueCount = 2 };
EvictionQueue QueueOf(EvictionPolicy policy, uint32_t uses);

// One sampled candidate: its last use and the memory bytes evicting it frees.
struct UseSample {
  uint64_t last_use;
  uint64_t bytes;
};

// Per queue: the candidates' total bytes and a uniform sample of them.
struct QueueCandidates {
  uint64_t bytes = 0;
  std::vector<UseSample> sample;
};

// Per queue, the last use at or below which candidates are evicted; a
// queue with nothing to give has `evict` false.
struct EvictionCutoffs {
  uint64_t last_use[kQueueCount] = {0, 0};
  bool evict[kQueueCount] = {false, false};
  bool any() const { return evict[0] || evict[1]; }
};

// How many of `target` bytes each queue gives up under `policy`, given the
// candidates' bytes per queue and probation's share limit in bytes.
struct QueueTargets {
  uint64_t bytes[kQueueCount] = {0, 0};
};
QueueTargets SplitTarget(EvictionPolicy policy, uint64_t target, const uint64_t (&bytes)[kQueueCount],
                         uint64_t probation_limit);

// The cutoffs that free about targets.bytes[q] from each queue, walking the
// queue's sample (sorted here) from the least recently used, its bytes
// scaled to the queue's population.
EvictionCutoffs ComputeCutoffs(QueueCandidates (&queues)[kQueueCount], const QueueTargets& targets);

}  // namespace shelfmark
