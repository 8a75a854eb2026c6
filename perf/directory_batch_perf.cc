// shelfmark-directory-batch-perf: the directory's batch calls in process,
// one thread, with and without their keys' prefetching
// (directory/batch_pipeline.h), on a directory of --keys objects.
//
// For each arm (prefetch off, then on; a fresh directory each) it puts
// --keys keys in batches of --batch (BatchPutStart then BatchPutEnd), then
// runs --rounds batches of random present keys through BatchExistKey and
// BatchGetReplicaList. It reports the thread's CPU nanoseconds per key of
// each phase (CPU time, so that other processes on a busy machine do not
// count; their cache traffic still does), the put phase over its last
// quarter (the directory at 3/4 to full size).
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/flags.h"
#include "directory/directory.h"

namespace shelfmark {
namespace {

struct Config {
  int64_t keys = 4'000'000;
  int64_t batch = 128;
  int64_t rounds = 20'000;
  int64_t key_size = 64;
  int64_t arm = -1;  // -1: both; 0: prefetch off only; 1: on only
};

int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::string Key(uint64_t i, size_t size) {
  std::string k = "bench/object-" + std::to_string(i);
  k.resize(size, 'x');
  return k;
}

struct Figures {
  double put_ns = 0, exist_ns = 0, get_ns = 0;
  uint64_t errors = 0;
};

Figures RunArm(const Config& cfg, bool prefetch) {
  SteadyClock clock;
  DirectoryOptions options;
  options.clock = &clock;
  options.start_background_thread = false;
  options.batch_prefetch_min_keys = prefetch ? 0 : std::numeric_limits<uint64_t>::max();
  Directory dir(options);
  const UUID node = UUID::Generate(), writer = UUID::Generate();
  Segment seg;
  seg.id = UUID::Generate();
  seg.name = "bench";
  seg.base = 1 << 20;
  seg.size = uint64_t{1} << 50;  // bookkeeping only: no memory behind it
  seg.endpoint = "127.0.0.1:1";
  seg.protocol = "ucx";
  Figures f;
  if (dir.MountSegment(node, seg) != ErrorCode::OK) {
    f.errors = 1;
    return f;
  }
  const auto n = static_cast<uint64_t>(cfg.keys), b = static_cast<uint64_t>(cfg.batch);
  const auto key_size = static_cast<size_t>(cfg.key_size);
  std::vector<std::string> keys;
  const std::vector<uint64_t> sizes(b, 4096);
  PutConfig config;
  int64_t put_start = 0;
  uint64_t put_keys = 0;
  for (uint64_t first = 0; first < n; first += b) {
    if (put_start == 0 && first >= n / 4 * 3) put_start = ThreadCpuNs();
    keys.clear();
    for (uint64_t i = first; i < std::min(n, first + b); ++i) keys.push_back(Key(i, key_size));
    for (const auto& r : dir.BatchPutStart(writer, "", keys, sizes, config)) f.errors += !r.ok();
    for (ErrorCode c : dir.BatchPutEnd(writer, "", keys)) f.errors += c != ErrorCode::OK;
    if (put_start != 0) put_keys += keys.size();
  }
  f.put_ns = static_cast<double>(ThreadCpuNs() - put_start) / static_cast<double>(put_keys);
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<uint64_t> pick(0, n - 1);
  for (int phase = 0; phase < 2; ++phase) {
    const int64_t start = ThreadCpuNs();
    GetReplicaListResponse scratch;
    for (int64_t r = 0; r < cfg.rounds; ++r) {
      keys.clear();
      for (uint64_t i = 0; i < b; ++i) keys.push_back(Key(pick(rng), key_size));
      if (phase == 0) {
        for (const auto& e : dir.BatchExistKey("", keys)) f.errors += !(e.ok() && *e);
      } else {
        const std::vector<std::string_view> views(keys.begin(), keys.end());
        dir.BatchGetReplicaList("", views, &scratch,
                                [&f](size_t, ErrorCode c, const GetReplicaListResponse&) {
                                  f.errors += c != ErrorCode::OK;
                                });
      }
    }
    const double per_key =
        static_cast<double>(ThreadCpuNs() - start) / static_cast<double>(cfg.rounds * cfg.batch);
    (phase == 0 ? f.exist_ns : f.get_ns) = per_key;
  }
  return f;
}

int Main(int argc, char** argv) {
  Config cfg;
  FlagSet flags("shelfmark-directory-batch-perf");
  flags.AddInt64("keys", &cfg.keys, "objects put (the directory's size)", 1, int64_t{1} << 31);
  flags.AddInt64("batch", &cfg.batch, "keys per batch call", 1, 65536);
  flags.AddInt64("rounds", &cfg.rounds, "batches per lookup phase", 1, int64_t{1} << 31);
  flags.AddInt64("key_size", &cfg.key_size, "bytes per key", 24, 4096);
  flags.AddInt64("arm", &cfg.arm, "-1: both arms; 0: prefetch off only; 1: on only", -1, 1);
  flags.ParseOrExit(argc, argv);
  std::printf("%-9s %12s %12s %12s %8s   (thread CPU ns per key, %lld keys, batch %lld)\n",
              "prefetch", "put(last1/4)", "exist", "get", "errors",
              static_cast<long long>(cfg.keys), static_cast<long long>(cfg.batch));
  for (bool prefetch : {false, true}) {
    if (cfg.arm >= 0 && prefetch != (cfg.arm == 1)) continue;
    const Figures f = RunArm(cfg, prefetch);
    std::printf("%-9s %12.1f %12.1f %12.1f %8llu\n", prefetch ? "on" : "off", f.put_ns, f.exist_ns,
                f.get_ns, static_cast<unsigned long long>(f.errors));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace shelfmark

int main(int argc, char** argv) { return shelfmark::Main(argc, argv); }
