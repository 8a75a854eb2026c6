// shelfmark-allocator-perf: OffsetAllocator (best fit) under a random
// allocate/free workload, against a first-fit baseline in the same process.
//
// Workload: sizes uniform in [--min_size, --max_size]; the live-allocation
// target is N = --fill * capacity / mean size. Each op frees a random live
// allocation with probability min(1, live / 2N) and allocates otherwise, so
// the live count reverts to N where ops are half frees, half allocations.
// Both allocators see the same random stream (same seed); their op sequences
// stay identical until one fails an allocation the other satisfies.
//
// Timing: every Allocate call is timed on its own with steady_clock; the
// figures include one clock read (the overhead of a back-to-back pair is
// measured and printed as clock_overhead_ns).
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/flags.h"
#include "common/offset_allocator.h"

namespace shelfmark {
namespace {

using SteadyTime = std::chrono::steady_clock;

struct Config {
  int64_t capacity = int64_t{64} << 30;
  int64_t ops = 2'000'000;
  int64_t min_size = 4 << 10;
  int64_t max_size = 4 << 20;
  int64_t alignment = 64;
  int64_t seed = 1;
  double fill = 0.85;
  bool json = false;
  bool baseline = true;
};

// The baseline: first fit by a linear scan of the free extents in offset
// order, coalescing on free. No validation beyond what the workload needs.
class FirstFitAllocator {
 public:
  FirstFitAllocator(uint64_t capacity, uint64_t alignment)
      : capacity_(capacity & ~(alignment - 1)), alignment_(alignment) {
    if (capacity_ > 0) free_[0] = capacity_;
    free_bytes_ = capacity_;
  }

  std::optional<uint64_t> Allocate(uint64_t size) {
    const uint64_t need = (size + alignment_ - 1) & ~(alignment_ - 1);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < need) continue;
      const auto [offset, extent] = *it;
      free_.erase(it);
      if (extent > need) free_.emplace(offset + need, extent - need);
      free_bytes_ -= need;
      return offset;
    }
    return std::nullopt;
  }

  bool Free(uint64_t offset, uint64_t size) {
    uint64_t need = (size + alignment_ - 1) & ~(alignment_ - 1);
    free_bytes_ += need;
    auto next = free_.lower_bound(offset);
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        offset = prev->first;
        need += prev->second;
        free_.erase(prev);
      }
    }
    if (next != free_.end() && next->first == offset + need) {
      need += next->second;
      free_.erase(next);
    }
    free_.emplace(offset, need);
    return true;
  }

  uint64_t capacity() const { return capacity_; }
  uint64_t allocated_bytes() const { return capacity_ - free_bytes_; }
  size_t free_extent_count() const { return free_.size(); }
  double Fragmentation() const {
    uint64_t largest = 0;
    for (const auto& [offset, size] : free_) largest = std::max(largest, size);
    if (free_bytes_ == 0) return 0.0;
    return 1.0 - static_cast<double>(largest) / static_cast<double>(free_bytes_);
  }

 private:
  uint64_t capacity_;
  uint64_t alignment_;
  uint64_t free_bytes_ = 0;
  std::map<uint64_t, uint64_t> free_;
};

struct Stats {
  std::string name;
  uint64_t allocs = 0;  // Allocate calls
  uint64_t alloc_failures = 0;
  uint64_t frees = 0;
  double allocs_per_s = 0;  // calls / summed per-call time
  double ops_per_s = 0;     // whole workload, wall clock
  uint64_t p50_ns = 0;
  uint64_t p99_ns = 0;
  uint64_t max_ns = 0;
  double fragmentation = 0;
  size_t free_extents = 0;
  double utilisation = 0;
  size_t live = 0;
};

uint64_t ElapsedNs(SteadyTime::time_point from, SteadyTime::time_point to) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count());
}

uint64_t Percentile(std::vector<uint64_t>& samples, double q) {
  if (samples.empty()) return 0;
  auto nth = samples.begin() +
             static_cast<ptrdiff_t>(q * static_cast<double>(samples.size() - 1));
  std::nth_element(samples.begin(), nth, samples.end());
  return *nth;
}

uint64_t LiveTarget(const Config& cfg) {
  const double mean = (static_cast<double>(cfg.min_size) +
                       static_cast<double>(cfg.max_size)) / 2.0;
  const double n = cfg.fill * static_cast<double>(cfg.capacity) / mean;
  return std::max<uint64_t>(1, static_cast<uint64_t>(n));
}

template <typename Allocator>
void FillResultStats(const Allocator& alloc, std::vector<uint64_t>& latencies,
                     Stats& s) {
  uint64_t total_ns = 0;
  for (uint64_t ns : latencies) total_ns += ns;
  s.allocs_per_s = total_ns == 0 ? 0 : 1e9 * static_cast<double>(s.allocs) /
                                           static_cast<double>(total_ns);
  s.max_ns = latencies.empty() ? 0 : *std::max_element(latencies.begin(), latencies.end());
  s.p50_ns = Percentile(latencies, 0.50);
  s.p99_ns = Percentile(latencies, 0.99);
  s.fragmentation = alloc.Fragmentation();
  s.free_extents = alloc.free_extent_count();
  s.utilisation = alloc.capacity() == 0 ? 0 : static_cast<double>(alloc.allocated_bytes()) /
                                                   static_cast<double>(alloc.capacity());
}

// The state of one workload run.
struct Run {
  std::mt19937_64 rng;
  std::uniform_int_distribution<uint64_t> size_dist;
  std::vector<std::pair<uint64_t, uint64_t>> live;  // (offset, asked size)
  std::vector<uint64_t> latencies;                  // ns per Allocate call
  Stats stats;
};

template <typename Allocator>
void FreeRandom(Allocator& alloc, Run& run) {
  const size_t k = run.rng() % run.live.size();
  if (!alloc.Free(run.live[k].first, run.live[k].second)) {
    std::fprintf(stderr, "%s: Free refused a live allocation\n", run.stats.name.c_str());
    std::exit(1);
  }
  run.live[k] = run.live.back();
  run.live.pop_back();
  ++run.stats.frees;
}

template <typename Allocator>
void TimedAllocate(Allocator& alloc, Run& run) {
  const uint64_t size = run.size_dist(run.rng);
  const auto t0 = SteadyTime::now();
  const std::optional<uint64_t> offset = alloc.Allocate(size);
  const auto t1 = SteadyTime::now();
  run.latencies.push_back(ElapsedNs(t0, t1));
  ++run.stats.allocs;
  if (offset) {
    run.live.emplace_back(*offset, size);
  } else {
    ++run.stats.alloc_failures;
  }
}

template <typename Allocator>
Stats RunWorkload(const std::string& name, Allocator& alloc, const Config& cfg) {
  Run run{std::mt19937_64(static_cast<uint64_t>(cfg.seed)),
          std::uniform_int_distribution<uint64_t>(static_cast<uint64_t>(cfg.min_size),
                                                  static_cast<uint64_t>(cfg.max_size)),
          {}, {}, {}};
  run.stats.name = name;
  run.latencies.reserve(static_cast<size_t>(cfg.ops));
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  const double target = static_cast<double>(LiveTarget(cfg));
  const auto start = SteadyTime::now();
  for (int64_t op = 0; op < cfg.ops; ++op) {
    const double p_free = std::min(1.0, static_cast<double>(run.live.size()) / (2 * target));
    if (!run.live.empty() && coin(run.rng) < p_free) {
      FreeRandom(alloc, run);
    } else {
      TimedAllocate(alloc, run);
    }
  }
  const double wall_s = static_cast<double>(ElapsedNs(start, SteadyTime::now())) / 1e9;
  run.stats.ops_per_s = wall_s > 0 ? static_cast<double>(cfg.ops) / wall_s : 0;
  run.stats.live = run.live.size();
  FillResultStats(alloc, run.latencies, run.stats);
  return run.stats;
}

// Median cost of a back-to-back steady_clock::now() pair.
uint64_t ClockOverheadNs() {
  std::vector<uint64_t> samples(100'000);
  for (auto& ns : samples) {
    const auto t0 = SteadyTime::now();
    ns = ElapsedNs(t0, SteadyTime::now());
  }
  return Percentile(samples, 0.5);
}

void PrintConfig(const Config& cfg, uint64_t clock_ns) {
  const char* fmt = cfg.json
      ? "{\"result\":\"config\",\"capacity\":%lld,\"ops\":%lld,\"min_size\":%lld,"
        "\"max_size\":%lld,\"alignment\":%lld,\"seed\":%lld,\"fill\":%.3f,"
        "\"live_target\":%llu,\"clock_overhead_ns\":%llu}\n"
      : "config: capacity=%lld ops=%lld min_size=%lld max_size=%lld alignment=%lld"
        " seed=%lld fill=%.3f live_target=%llu clock_overhead_ns=%llu\n"
        "        (Allocate timed per call with steady_clock; latencies include"
        " one clock read)\n";
  std::printf(fmt, static_cast<long long>(cfg.capacity), static_cast<long long>(cfg.ops),
              static_cast<long long>(cfg.min_size), static_cast<long long>(cfg.max_size),
              static_cast<long long>(cfg.alignment), static_cast<long long>(cfg.seed),
              cfg.fill, static_cast<unsigned long long>(LiveTarget(cfg)),
              static_cast<unsigned long long>(clock_ns));
}

void PrintStats(const Stats& s, bool json) {
  const char* fmt = json
      ? "{\"result\":\"allocator\",\"allocator\":\"%s\",\"allocs\":%llu,"
        "\"alloc_failures\":%llu,\"frees\":%llu,\"allocs_per_s\":%.0f,"
        "\"ops_per_s\":%.0f,\"alloc_p50_ns\":%llu,\"alloc_p99_ns\":%llu,"
        "\"alloc_max_ns\":%llu,\"fragmentation\":%.4f,\"free_extents\":%zu,"
        "\"utilisation\":%.4f,\"live\":%zu}\n"
      : "%-10s allocs=%llu failures=%llu frees=%llu allocs/s=%.0f ops/s=%.0f"
        " alloc_p50_ns=%llu alloc_p99_ns=%llu alloc_max_ns=%llu"
        " fragmentation=%.4f free_extents=%zu utilisation=%.4f live=%zu\n";
  std::printf(fmt, s.name.c_str(), static_cast<unsigned long long>(s.allocs),
              static_cast<unsigned long long>(s.alloc_failures),
              static_cast<unsigned long long>(s.frees), s.allocs_per_s, s.ops_per_s,
              static_cast<unsigned long long>(s.p50_ns),
              static_cast<unsigned long long>(s.p99_ns),
              static_cast<unsigned long long>(s.max_ns), s.fragmentation,
              s.free_extents, s.utilisation, s.live);
}

double Ratio(double a, double b) { return b == 0 ? 0 : a / b; }

void PrintRatio(const Stats& best, const Stats& first, bool json) {
  const double speed = Ratio(best.allocs_per_s, first.allocs_per_s);
  const double p50 = Ratio(static_cast<double>(first.p50_ns), static_cast<double>(best.p50_ns));
  const double p99 = Ratio(static_cast<double>(first.p99_ns), static_cast<double>(best.p99_ns));
  const char* fmt = json
      ? "{\"result\":\"ratio\",\"numerator\":\"%s\",\"denominator\":\"%s\","
        "\"allocs_per_s\":%.2f,\"p50_speedup\":%.2f,\"p99_speedup\":%.2f}\n"
      : "ratio      %s/%s allocs/s=%.2fx p50_speedup=%.2fx p99_speedup=%.2fx\n";
  std::printf(fmt, best.name.c_str(), first.name.c_str(), speed, p50, p99);
}

bool ParseConfig(int argc, char** argv, Config& cfg) {
  FlagSet flags("shelfmark-allocator-perf");
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  flags.AddInt64("capacity", &cfg.capacity, "segment bytes", 1, kMax);
  flags.AddInt64("ops", &cfg.ops, "allocate + free operations", 1, int64_t{1} << 32);
  flags.AddInt64("min_size", &cfg.min_size, "smallest allocation, bytes", 1, kMax);
  flags.AddInt64("max_size", &cfg.max_size, "largest allocation, bytes", 1, kMax);
  flags.AddInt64("alignment", &cfg.alignment, "power of two", 1, int64_t{1} << 30);
  flags.AddInt64("seed", &cfg.seed, "random seed", 0, kMax);
  flags.AddDouble("fill", &cfg.fill, "live-bytes target / capacity", 0.01, 1.0);
  flags.AddBool("json", &cfg.json, "one JSON object per result line");
  flags.AddBool("baseline", &cfg.baseline, "also run the first-fit baseline");
  flags.ParseOrExit(argc, argv);
  if (cfg.min_size > cfg.max_size || (cfg.alignment & (cfg.alignment - 1)) != 0) {
    std::fprintf(stderr, "need min_size <= max_size and a power-of-two alignment\n");
    return false;
  }
  return true;
}

int Main(int argc, char** argv) {
  Config cfg;
  if (!ParseConfig(argc, argv, cfg)) return 2;
  PrintConfig(cfg, ClockOverheadNs());
  const auto capacity = static_cast<uint64_t>(cfg.capacity);
  const auto alignment = static_cast<uint64_t>(cfg.alignment);
  OffsetAllocator best(capacity, alignment);
  const Stats best_stats = RunWorkload("best_fit", best, cfg);
  PrintStats(best_stats, cfg.json);
  if (!cfg.baseline) return 0;
  std::fflush(stdout);
  FirstFitAllocator first(capacity, alignment);
  const Stats first_stats = RunWorkload("first_fit", first, cfg);
  PrintStats(first_stats, cfg.json);
  PrintRatio(best_stats, first_stats, cfg.json);
  return 0;
}

}  // namespace
}  // namespace shelfmark

int main(int argc, char** argv) { return shelfmark::Main(argc, argv); }
