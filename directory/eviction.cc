// Eviction: when allocated MEMORY bytes pass the high watermark the
// background thread frees about `eviction_ratio` of capacity (at least back
// under the mark); a put that finds no room runs a pass itself and retries
// (EvictForPut). Order: the policy's queues (eviction_policy.h), least
// recently used first inside each: a sample of the candidates gives each
// queue's last-use cutoff, then the shards, from a rotating start, evict the
// candidates at or below it. Candidates: COMPLETE MEMORY replicas of objects
// whose lease expired, without hard pin or references, not mid-put (nor
// mid-upsert; a pending version is never a candidate); soft-pinned objects
// only in a second pass. With an SSD tier (docs/directory.md), a candidate
// without a LOCAL_DISK copy keeps its MEMORY replicas until the copy exists
// (MayEvictNow queues it).
#include <algorithm>
#include <random>

#include "directory/directory_impl.h"

namespace shelfmark {
namespace {

constexpr size_t kMaxSamples = 1 << 16;
constexpr int64_t kFruitlessBackoffMs = 1000;
constexpr size_t kMinGhostsPerShard = 8;

bool Evictable(const ObjectMetadata& meta, int64_t now, bool allow_soft_pinned) {
  if (meta.hard_pin || meta.LeaseLive(now) || meta.ReferenceCount() > 0) return false;
  // An upsert in progress counts as mid-put: its PutEnd swaps the object.
  if (meta.HasProcessing() || meta.has_pending || !meta.HasCompleteMemory()) return false;
  return allow_soft_pinned || !meta.SoftPinned(now);
}

// Memory bytes eviction of the object frees.
uint64_t MemoryBytes(const ObjectMetadata& meta) {
  uint64_t n = 0;
  for (const Replica& r : meta.replicas) {
    if (r.is_memory()) n += r.segment()->AlignedSize(meta.size);
  }
  return n;
}

// Reservoir sampling of one queue's candidates.
void SampleInto(QueueCandidates& queue, uint64_t& seen, std::mt19937_64& rng, UseSample item) {
  queue.bytes += item.bytes;
  if (queue.sample.size() < kMaxSamples) {
    queue.sample.push_back(item);
  } else if (uint64_t j = rng() % (seen + 1); j < kMaxSamples) {
    queue.sample[j] = item;
  }
  ++seen;
}

}  // namespace

EvictionCutoffs DirectoryImpl::EvictionCutoff(int64_t now, uint64_t target, bool soft) {
  QueueCandidates queues[kQueueCount];
  uint64_t seen[kQueueCount] = {0, 0};
  std::mt19937_64 rng(static_cast<uint64_t>(now));
  const EvictionPolicy policy = options_.eviction_policy;
  for (MetadataShard& shard : shards_) {
    ReaderLock lock(&shard.mu);
    shard.tenants.ForEach([&](std::string_view, const TenantState& state) {
      state.objects.ForEach([&](std::string_view, const ObjectMetadata& meta) {
        if (!Evictable(meta, now, soft)) return;
        const EvictionQueue q = QueueOf(policy, meta.uses());
        SampleInto(queues[q], seen[q], rng, {meta.last_use(), MemoryBytes(meta)});
      });
    });
  }
  const uint64_t bytes[kQueueCount] = {queues[0].bytes, queues[1].bytes};
  const auto probation_limit = static_cast<uint64_t>(
      options_.eviction_probation_ratio * static_cast<double>(segments_.capacity_bytes()));
  return ComputeCutoffs(queues, SplitTarget(policy, target, bytes, probation_limit));
}

uint64_t DirectoryImpl::EvictPass(int64_t now, uint64_t target, bool soft) {
  const EvictionCutoffs cut = EvictionCutoff(now, target, soft);
  if (!cut.any()) return 0;
  const EvictionPolicy policy = options_.eviction_policy;
  const size_t ghost_limit =
      kMinGhostsPerShard + key_count_.load(std::memory_order_relaxed) / kShardCount;
  uint64_t freed = 0;
  uint64_t pending = 0;  // bytes of candidates waiting for their SSD copy
  // A rotating start: where the cutoffs tie, no shard is always first.
  const size_t start = eviction_start_shard_.fetch_add(337, std::memory_order_relaxed);
  for (size_t i = 0; i < kShardCount && freed + pending < target; ++i) {
    MetadataShard& shard = shards_[(start + i) % kShardCount];
    std::vector<uint64_t> ghosts;  // probation victims, remembered below
    size_t evicted = SweepShard(shard, [&](const TenantMap& tenants) {
      Victims victims;
      tenants.ForEach([&](std::string_view name, const TenantState& state) {
        state.objects.ForEach([&](std::string_view key, const ObjectMetadata& meta) {
          // Stop at the target: candidates that wait count toward it, so a
          // pass queues copies of about as much as it wants to free.
          if (freed + pending >= target || !Evictable(meta, now, soft)) return;
          const EvictionQueue q = QueueOf(policy, meta.uses());
          if (!cut.evict[q] || meta.last_use() > cut.last_use[q]) return;
          if (!MayEvictNow(name, key, meta, now)) {
            pending += MemoryBytes(meta);
            return;
          }
          victims.emplace_back(name, key);
          freed += MemoryBytes(meta);
          NoteEvicted(meta);
          if (policy == EvictionPolicy::k2q && q == kProbationQueue) {
            ghosts.push_back(TenantKeyHash(name, key));
          }
        });
      });
      return victims;
    }, [](const Replica& r) { return r.is_memory(); });
    evicted_objects_.fetch_add(evicted, std::memory_order_relaxed);
    if (!ghosts.empty()) {
      WriterLock lock(&shard.mu);
      for (uint64_t h : ghosts) shard.ghosts.Add(h, ghost_limit);
    }
  }
  return freed;
}

void DirectoryImpl::NoteEvicted(const ObjectMetadata& meta) {
  evicted_bytes_.fetch_add(MemoryBytes(meta), std::memory_order_relaxed);
  if (meta.uses() <= 1) evicted_unread_.fetch_add(1, std::memory_order_relaxed);
  if (options_.enable_offload && !meta.HasCompleteDisk()) {
    evicted_without_copy_.fetch_add(1, std::memory_order_relaxed);
  }
}

uint64_t DirectoryImpl::RunEviction(uint64_t target) {
  eviction_runs_.fetch_add(1, std::memory_order_relaxed);
  int64_t now = Now();
  const uint64_t waits_before = offload_waits_.load(std::memory_order_relaxed);
  uint64_t freed = EvictPass(now, target, /*soft=*/false);
  if (freed < target) freed += EvictPass(now, target - freed, /*soft=*/true);
  // Candidates waiting for their SSD copy become evictable as copies land:
  // look again next period rather than backing off.
  const bool waiting = offload_waits_.load(std::memory_order_relaxed) != waits_before;
  if (freed == 0 && !waiting) eviction_backoff_until_ms_ = now + kFruitlessBackoffMs;
  // Puts that find no room while copies are pending wait for the next
  // background pass rather than each scanning every object again.
  if (freed == 0 && waiting) puts_wait_for_copies_until_ms_ = now + options_.background_period_ms;
  return freed;
}

uint64_t DirectoryImpl::RatioTarget(uint64_t capacity) const {
  return std::max<uint64_t>(
      1, static_cast<uint64_t>(options_.eviction_ratio * static_cast<double>(capacity)));
}

void DirectoryImpl::EvictIfNeeded() {
  MutexLock lock(&eviction_mu_);
  uint64_t capacity = segments_.capacity_bytes();
  uint64_t allocated = segments_.allocated_bytes();
  bool failed = allocation_failed_.exchange(false);
  bool above = capacity > 0 && static_cast<double>(allocated) >
                                   options_.eviction_high_watermark_ratio *
                                       static_cast<double>(capacity);
  if (!failed && !above) return;
  // A pass that found nothing to evict (all leased or pinned) scans every
  // object; do not repeat it more than once per kFruitlessBackoffMs.
  if (Now() < eviction_backoff_until_ms_.load(std::memory_order_relaxed)) return;
  uint64_t target = RatioTarget(capacity);
  if (above) {  // at least back under the watermark
    uint64_t mark = static_cast<uint64_t>(options_.eviction_high_watermark_ratio *
                                          static_cast<double>(capacity));
    target = std::max(target, allocated - mark);
  }
  RunEviction(target);
}

bool DirectoryImpl::EvictForPut(uint64_t need) {
  MutexLock lock(&eviction_mu_);
  const uint64_t capacity = segments_.capacity_bytes();
  // Another put's pass, which this one waited for, may have made the room.
  if (segments_.allocated_bytes() + need + RatioTarget(capacity) / 2 <= capacity) return true;
  const int64_t now = Now();
  if (now < eviction_backoff_until_ms_.load(std::memory_order_relaxed) ||
      now < puts_wait_for_copies_until_ms_.load(std::memory_order_relaxed)) {
    return false;
  }
  eviction_runs_for_puts_.fetch_add(1, std::memory_order_relaxed);
  allocation_failed_ = false;  // this pass is the one the failure asked for
  return RunEviction(std::max(need, RatioTarget(capacity))) > 0;
}

}  // namespace shelfmark
