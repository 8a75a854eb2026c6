// Eviction: when allocated MEMORY bytes pass the high watermark, or after an
// allocation failed, free about `eviction_ratio` of capacity. Near-LRU by
// lease deadline: a sample of candidates gives the lease cutoff, then every
// shard evicts candidates at or below it. Candidates: COMPLETE MEMORY
// replicas of objects whose lease expired, without hard pin or references,
// not mid-put (nor mid-upsert; a pending version is never a candidate); soft-pinned objects only in a second pass. With an SSD tier
// (docs/directory.md), a candidate without a LOCAL_DISK copy keeps its
// MEMORY replicas until the copy exists (MayEvictNow queues it).
#include <algorithm>
#include <random>

#include "directory/directory_impl.h"

namespace shelfmark {
namespace {

constexpr size_t kMaxSamples = 1 << 16;
constexpr int64_t kFruitlessBackoffMs = 1000;

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

}  // namespace

int64_t DirectoryImpl::EvictionCutoff(int64_t now, uint64_t target, bool soft) {
  std::vector<std::pair<int64_t, uint64_t>> sample;  // lease deadline, bytes
  std::mt19937_64 rng(now);
  uint64_t seen = 0, seen_bytes = 0;
  for (MetadataShard& shard : shards_) {
    ReaderLock lock(&shard.mu);
    shard.tenants.ForEach([&](std::string_view, const TenantState& state) {
      state.objects.ForEach([&](std::string_view, const ObjectMetadata& meta) {
        if (!Evictable(meta, now, soft)) return;
        std::pair<int64_t, uint64_t> item{meta.lease_deadline_ms.load(), MemoryBytes(meta)};
        seen_bytes += item.second;
        if (sample.size() < kMaxSamples) {
          sample.push_back(item);
        } else if (uint64_t j = rng() % (seen + 1); j < kMaxSamples) {
          sample[j] = item;  // reservoir sampling
        }
        ++seen;
      });
    });
  }
  if (sample.empty()) return INT64_MIN;
  std::sort(sample.begin(), sample.end());
  // Scale the sample's bytes to the population's and walk to the target.
  uint64_t sample_bytes = 0;
  for (const auto& item : sample) sample_bytes += item.second;
  double scale = static_cast<double>(seen_bytes) /
                 static_cast<double>(std::max<uint64_t>(1, sample_bytes));
  double acc = 0;
  for (const auto& [lease, bytes] : sample) {
    acc += static_cast<double>(bytes) * scale;
    if (acc >= static_cast<double>(target)) return lease;
  }
  return sample.back().first;
}

uint64_t DirectoryImpl::EvictPass(int64_t now, uint64_t target, bool soft) {
  int64_t cutoff = EvictionCutoff(now, target, soft);
  if (cutoff == INT64_MIN) return 0;
  uint64_t freed = 0;
  uint64_t pending = 0;  // bytes of candidates waiting for their SSD copy
  for (MetadataShard& shard : shards_) {
    if (freed + pending >= target) break;
    size_t evicted = SweepShard(shard, [&](const KeyMap<TenantState>& tenants) {
      Victims victims;
      tenants.ForEach([&](std::string_view name, const TenantState& state) {
        state.objects.ForEach([&](std::string_view key, const ObjectMetadata& meta) {
          // Stop at the target: candidates that wait count toward it, so a
          // pass queues copies of about as much as it wants to free.
          if (freed + pending >= target || meta.lease_deadline_ms.load() > cutoff ||
              !Evictable(meta, now, soft)) {
            return;
          }
          if (!MayEvictNow(name, key, meta, now)) {
            pending += MemoryBytes(meta);
            return;
          }
          victims.emplace_back(name, key);
          freed += MemoryBytes(meta);
          evicted_bytes_.fetch_add(MemoryBytes(meta), std::memory_order_relaxed);
          if (options_.enable_offload && !meta.HasCompleteDisk()) {
            evicted_without_copy_.fetch_add(1, std::memory_order_relaxed);
          }
        });
      });
      return victims;
    }, [](const Replica& r) { return r.is_memory(); });
    evicted_objects_.fetch_add(evicted, std::memory_order_relaxed);
  }
  return freed;
}

void DirectoryImpl::EvictIfNeeded() {
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
  uint64_t target = std::max<uint64_t>(
      1, static_cast<uint64_t>(options_.eviction_ratio * static_cast<double>(capacity)));
  if (above) {  // at least back under the watermark
    uint64_t mark = static_cast<uint64_t>(options_.eviction_high_watermark_ratio *
                                          static_cast<double>(capacity));
    target = std::max(target, allocated - mark);
  }
  eviction_runs_.fetch_add(1, std::memory_order_relaxed);
  int64_t now = Now();
  const uint64_t waits_before = offload_waits_.load(std::memory_order_relaxed);
  uint64_t freed = EvictPass(now, target, /*soft=*/false);
  if (freed < target) freed += EvictPass(now, target - freed, /*soft=*/true);
  // Candidates waiting for their SSD copy become evictable as copies land:
  // look again next period rather than backing off.
  const bool waiting = offload_waits_.load(std::memory_order_relaxed) != waits_before;
  if (freed == 0 && !waiting) eviction_backoff_until_ms_ = now + kFruitlessBackoffMs;
}

}  // namespace shelfmark
