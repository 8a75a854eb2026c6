// shelfmark-keymap-perf: KeyMap<Meta> against std::unordered_map<std::string,
// Meta> (the directory's previous container), single-threaded.
//
// Builds --keys distinct keys of --key_size bytes (one contiguous buffer),
// inserts them into each container in its own phase (RSS growth from
// /proc/self/statm around each build gives bytes per key: keys, values, slots
// or buckets and allocator overhead), then measures for --seconds each:
//   - find:       one Find per key, keys in a random order;
//   - batch_find: KeyMap only, batches of 128 keys in two phases: Hash +
//                 Prefetch for all 128, then Find with the precomputed hash.
// Every lookup hits; a miss is reported as an error.
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/flags.h"
#include "directory/key_map.h"

namespace shelfmark {
namespace {

struct Config {
  int64_t keys = 1'000'000;
  int64_t key_size = 64;
  double seconds = 3;
  int64_t seed = 1;
  bool json = false;
};

// Stand-in for ObjectMetadata: 88 bytes.
struct Meta {
  uint64_t words[11] = {};
};
static_assert(sizeof(Meta) == 88);

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};
using StdMap = std::unordered_map<std::string, Meta, StringHash, std::equal_to<>>;

constexpr size_t kBatch = 128;

int64_t RssBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size_pages = 0, rss_pages = 0;
  statm >> size_pages >> rss_pages;
  return rss_pages * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

// N distinct keys in one buffer: the index in hex (at most 16 digits) followed
// by random printable filler.
class Keys {
 public:
  Keys(size_t n, size_t size, uint64_t seed) : n_(n), size_(size), bytes_(n * size) {
    std::mt19937_64 rng(seed);
    const size_t digits = size < 16 ? size : 16;
    for (size_t i = 0; i < n; ++i) {
      char* k = bytes_.data() + i * size;
      for (size_t d = 0; d < digits; ++d) {
        k[d] = "0123456789abcdef"[(i >> (4 * (digits - 1 - d))) & 15];
      }
      for (size_t d = digits; d < size; ++d) k[d] = static_cast<char>('!' + rng() % 94);
    }
  }
  size_t size() const { return n_; }
  std::string_view operator[](size_t i) const { return {bytes_.data() + i * size_, size_}; }

 private:
  size_t n_, size_;
  std::vector<char> bytes_;
};

// Random key order for the lookups (a power-of-two length, >= the key count).
std::vector<uint32_t> LookupOrder(size_t n, uint64_t seed) {
  size_t len = 1;
  while (len < n || len < (size_t{1} << 20)) len *= 2;
  std::vector<uint32_t> order(len);
  std::mt19937_64 rng(seed ^ 0x5eed);
  for (auto& i : order) i = static_cast<uint32_t>(rng() % n);
  return order;
}

struct Rate {
  double keys_per_s = 0;
  uint64_t misses = 0;
};

// Runs `chunk(first, count)` over the lookup order, `count` keys at a time,
// until `seconds` pass; returns keys per second.
template <typename Chunk>
Rate Timed(double seconds, const std::vector<uint32_t>& order, Chunk&& chunk) {
  using Clock = std::chrono::steady_clock;
  constexpr size_t kChunk = kBatch * 64;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration<double>(seconds);
  uint64_t done = 0, misses = 0;
  size_t pos = 0;
  while (Clock::now() < deadline) {
    misses += chunk(order.data() + pos, kChunk);
    done += kChunk;
    pos = (pos + kChunk) & (order.size() - 1);
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  return {static_cast<double>(done) / elapsed, misses};
}

uint64_t FindStd(const StdMap& m, const Keys& keys, const uint32_t* idx, size_t n) {
  uint64_t misses = 0;
  for (size_t i = 0; i < n; ++i) {
    auto it = m.find(keys[idx[i]]);
    misses += (it == m.end() || it->second.words[0] != idx[i]);
  }
  return misses;
}

uint64_t FindKeyMap(const KeyMap<Meta>& m, const Keys& keys, const uint32_t* idx, size_t n) {
  uint64_t misses = 0;
  for (size_t i = 0; i < n; ++i) {
    const Meta* v = m.Find(keys[idx[i]]);
    misses += (v == nullptr || v->words[0] != idx[i]);
  }
  return misses;
}

uint64_t BatchFindKeyMap(KeyMap<Meta>& m, const Keys& keys, const uint32_t* idx, size_t n) {
  uint64_t misses = 0;
  uint64_t hashes[kBatch];
  for (size_t b = 0; b < n; b += kBatch) {
    for (size_t i = 0; i < kBatch; ++i) {
      hashes[i] = KeyMap<Meta>::Hash(keys[idx[b + i]]);
      m.Prefetch(hashes[i]);
    }
    for (size_t i = 0; i < kBatch; ++i) {
      const Meta* v = m.Find(keys[idx[b + i]], hashes[i]);
      misses += (v == nullptr || v->words[0] != idx[b + i]);
    }
  }
  return misses;
}

void PrintMemory(const char* name, int64_t rss_delta, size_t n, size_t slots, bool json) {
  const double per_key = static_cast<double>(rss_delta) / static_cast<double>(n);
  const char* fmt = json
      ? "{\"result\":\"memory\",\"container\":\"%s\",\"rss_bytes\":%lld,"
        "\"rss_bytes_per_key\":%.1f,\"slots_or_buckets\":%zu}\n"
      : "memory     %-14s rss=%lld bytes  per_key=%.1f bytes  slots_or_buckets=%zu\n";
  std::printf(fmt, name, static_cast<long long>(rss_delta), per_key, slots);
}

void PrintRate(const char* name, const char* op, const Rate& r, bool json) {
  const char* fmt = json
      ? "{\"result\":\"lookup\",\"container\":\"%s\",\"op\":\"%s\",\"keys_per_s\":%.0f,"
        "\"misses\":%llu}\n"
      : "lookup     %-14s %-10s keys/s=%.0f misses=%llu\n";
  std::printf(fmt, name, op, r.keys_per_s, static_cast<unsigned long long>(r.misses));
}

void PrintRatio(const char* what, double ratio, bool json) {
  const char* fmt = json ? "{\"result\":\"ratio\",\"what\":\"%s\",\"ratio\":%.2f}\n"
                         : "ratio      %-40s %.2fx\n";
  std::printf(fmt, what, ratio);
}

bool ParseConfig(int argc, char** argv, Config& cfg) {
  FlagSet flags("shelfmark-keymap-perf");
  flags.AddInt64("keys", &cfg.keys, "distinct keys", 1, int64_t{1} << 31);
  flags.AddInt64("key_size", &cfg.key_size, "bytes per key", 8, 4096);
  flags.AddDouble("seconds", &cfg.seconds, "seconds per lookup measurement", 0.01, 3600);
  flags.AddInt64("seed", &cfg.seed, "random seed", 0, std::numeric_limits<int64_t>::max());
  flags.AddBool("json", &cfg.json, "one JSON object per result line");
  flags.ParseOrExit(argc, argv);
  return true;
}

int Main(int argc, char** argv) {
  Config cfg;
  if (!ParseConfig(argc, argv, cfg)) return 2;
  const auto n = static_cast<size_t>(cfg.keys);
  const Keys keys(n, static_cast<size_t>(cfg.key_size), static_cast<uint64_t>(cfg.seed));
  const std::vector<uint32_t> order = LookupOrder(n, static_cast<uint64_t>(cfg.seed));
  std::printf(cfg.json ? "{\"result\":\"config\",\"keys\":%zu,\"key_size\":%lld,\"seconds\":%.2f,"
                         "\"batch\":%zu,\"value_bytes\":%zu}\n"
                       : "config: keys=%zu key_size=%lld seconds=%.2f batch=%zu value_bytes=%zu\n",
              n, static_cast<long long>(cfg.key_size), cfg.seconds, kBatch, sizeof(Meta));

  int64_t rss0 = RssBytes();
  KeyMap<Meta> km;
  for (size_t i = 0; i < n; ++i) km.TryEmplace(keys[i]).first->words[0] = i;
  PrintMemory("KeyMap", RssBytes() - rss0, n, km.SlotCount(), cfg.json);

  rss0 = RssBytes();
  StdMap sm;
  for (size_t i = 0; i < n; ++i) {
    sm.emplace(std::string(keys[i]), Meta{}).first->second.words[0] = i;
  }
  PrintMemory("unordered_map", RssBytes() - rss0, n, sm.bucket_count(), cfg.json);
  std::fflush(stdout);

  const Rate std_find = Timed(cfg.seconds, order, [&](const uint32_t* idx, size_t c) {
    return FindStd(sm, keys, idx, c);
  });
  PrintRate("unordered_map", "find", std_find, cfg.json);
  const Rate km_find = Timed(cfg.seconds, order, [&](const uint32_t* idx, size_t c) {
    return FindKeyMap(km, keys, idx, c);
  });
  PrintRate("KeyMap", "find", km_find, cfg.json);
  const Rate km_batch = Timed(cfg.seconds, order, [&](const uint32_t* idx, size_t c) {
    return BatchFindKeyMap(km, keys, idx, c);
  });
  PrintRate("KeyMap", "batch_find", km_batch, cfg.json);
  PrintRatio("KeyMap find / unordered_map find", km_find.keys_per_s / std_find.keys_per_s,
             cfg.json);
  PrintRatio("KeyMap batch_find / unordered_map find",
             km_batch.keys_per_s / std_find.keys_per_s, cfg.json);
  return std_find.misses + km_find.misses + km_batch.misses == 0 ? 0 : 1;
}

}  // namespace
}  // namespace shelfmark

int main(int argc, char** argv) { return shelfmark::Main(argc, argv); }
