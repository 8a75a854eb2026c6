#include "perf/snapshot_bench.h"

#include <stdlib.h>

#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/flags.h"
#include "common/json_line.h"
#include "service/process_stats.h"
#include "directory/directory.h"
#include "perf/bench_keys.h"
#include "perf/bench_segment.h"
#include "snapshot/local_store.h"
#include "snapshot/snapshot_restore.h"
#include "snapshot/snapshotter.h"

namespace shelfmark {
namespace {

constexpr uint64_t kBatch = 1024;
constexpr uint64_t kSegmentBase = 0x10000000000ULL;  // bookkeeping only: no bytes move
constexpr double kGiB = 1024.0 * 1024 * 1024;

struct SnapshotBenchOptions {
  std::string objects = "1000000";
  int64_t key_size = 64;
  int64_t value_size = 4096;
  std::string dir;  // "" = $TMPDIR or /tmp
  int64_t restore_threads = 0;  // 0: one per core
  bool json = false;
  double redis_fork_ms_per_gb = -1;
  double redis_load_ms = -1;
};

struct Figures {
  uint64_t objects = 0;
  uint64_t rss_bytes = 0;
  SnapshotResult snapshot;
  uint64_t load_ops = 0;  // writer operations done while the snapshot ran
  RestoreReport restore;
};

// "1000000,10000000" -> {1000000, 10000000}; empty on a bad list.
std::vector<uint64_t> ParseCounts(std::string_view text) {
  std::vector<uint64_t> out;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    uint64_t n = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
    if (ec != std::errc() || end != item.data() + item.size() || n == 0) return {};
    out.push_back(n);
    text = comma == std::string_view::npos ? "" : text.substr(comma + 1);
  }
  return out;
}

class SnapshotBench {
 public:
  explicit SnapshotBench(const SnapshotBenchOptions& o)
      : o_(o), keys_("sb", UUID::Generate(), 'f', static_cast<size_t>(o.key_size)) {}

  // False (with a message on stderr) when a put, the snapshot or the restore fails.
  bool Run(uint64_t objects, Figures* f);

 private:
  DirectoryOptions Options() const {
    DirectoryOptions d;
    d.start_background_thread = false;  // no eviction or expiry during the measurement
    return d;
  }
  bool Fill(Directory& d, uint64_t objects);
  // Puts and removes keys beyond `objects` until *stop.
  void WriteLoad(Directory* d, uint64_t objects, std::atomic<bool>* stop,
                 std::atomic<uint64_t>* ops) const;

  SnapshotBenchOptions o_;
  BenchKeys keys_;
  UUID writer_ = UUID::Generate();
};

bool SnapshotBench::Fill(Directory& d, uint64_t objects) {
  std::vector<std::string> keys;
  std::vector<uint64_t> sizes;
  for (uint64_t first = 0; first < objects; first += kBatch) {
    keys.resize(std::min(kBatch, objects - first));
    sizes.assign(keys.size(), static_cast<uint64_t>(o_.value_size));
    for (size_t i = 0; i < keys.size(); ++i) keys_.Make(first + i, &keys[i]);
    for (const auto& r : d.BatchPutStart(writer_, "", keys, sizes, {})) {
      if (!r.ok()) {
        std::fprintf(stderr, "shelfmark-perf snapshot: PutStart: %s\n",
                     std::string(ErrorCodeName(r.error())).c_str());
        return false;
      }
    }
    for (ErrorCode rc : d.BatchPutEnd(writer_, "", keys)) {
      if (rc != ErrorCode::OK) return false;
    }
  }
  return true;
}

void SnapshotBench::WriteLoad(Directory* d, uint64_t objects, std::atomic<bool>* stop,
                              std::atomic<uint64_t>* ops) const {
  std::string key, old_key;
  for (uint64_t i = 0; !stop->load(std::memory_order_relaxed); ++i) {
    keys_.Make(objects + i, &key);
    if (d->PutStart(writer_, "", key, static_cast<uint64_t>(o_.value_size), {}).ok()) {
      d->PutEnd(writer_, "", key);
    }
    if (i >= 64) {  // keeps the extra keys few
      keys_.Make(objects + i - 64, &old_key);
      d->Remove("", old_key, /*force=*/true);
    }
    ops->fetch_add(3, std::memory_order_relaxed);
  }
}

bool SnapshotBench::Run(uint64_t objects, Figures* f) {
  f->objects = objects;
  auto source = std::make_unique<Directory>(Options());
  const Segment seg = BookkeepingSegment(
      "bench", kSegmentBase, (objects + 4096) * static_cast<uint64_t>(o_.value_size + 4096));
  if (source->MountSegment(UUID::Generate(), seg) != ErrorCode::OK || !Fill(*source, objects)) {
    return false;
  }
  f->rss_bytes = ProcessResidentMemoryBytes();

  std::string base = (o_.dir.empty() ? std::filesystem::temp_directory_path().string() : o_.dir) +
                     "/shelfmark-snapshot-bench-XXXXXX";
  if (mkdtemp(base.data()) == nullptr) {
    std::fprintf(stderr, "shelfmark-perf snapshot: cannot create a directory in --dir\n");
    return false;
  }
  auto store = LocalStore::Open(std::filesystem::absolute(base).string());
  bool ok = store.ok();
  if (ok) {
    SnapshotterOptions so;
    so.cluster_id = "bench";
    so.child_timeout_ms = 3'600'000;
    Snapshotter snapshotter(source.get(), store->get(), so);
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> ops{0};
    std::thread load([&] { WriteLoad(source.get(), objects, &stop, &ops); });
    f->snapshot = snapshotter.TakeSnapshotNow();
    stop.store(true);
    load.join();
    f->load_ops = ops.load();
    ok = f->snapshot.code == ErrorCode::OK;
  }
  source.reset();  // frees its memory before the restore
  if (ok) {
    auto restored = std::make_unique<Directory>(Options());
    RestoreOptions ro;
    ro.cluster_id = "bench";
    ro.threads = static_cast<unsigned>(o_.restore_threads);
    f->restore = RestoreFromSnapshots(restored.get(), store->get(), ro);
    ok = f->restore.restored;
    if (!ok) std::fprintf(stderr, "shelfmark-perf snapshot: %s\n", DescribeRestore(f->restore).c_str());
  }
  std::error_code ignored;
  std::filesystem::remove_all(base, ignored);
  return ok;
}

void Report(const SnapshotBenchOptions& o, const Figures& f) {
  double gib = static_cast<double>(f.rss_bytes) / kGiB;
  double per_gb = gib > 0 ? f.snapshot.fork_pause_ms / gib : 0;
  double restore_rate = f.restore.ms > 0 ? static_cast<double>(f.restore.objects) * 1000 / f.restore.ms : 0;
  if (o.json) {
    JsonObject j;
    j.Str("bench", "snapshot").Uint("objects", f.objects).Uint("rss_bytes", f.rss_bytes);
    j.Num("fork_pause_ms", f.snapshot.fork_pause_ms, 3).Num("fork_pause_ms_per_gb", per_gb, 3);
    j.Num("child_ms", f.snapshot.child_ms, 1).Uint("snapshot_bytes", f.snapshot.snapshot_bytes);
    j.Num("snapshot_bytes_per_object",
          static_cast<double>(f.snapshot.snapshot_bytes) / static_cast<double>(f.objects), 2);
    j.Uint("cow_bytes", f.snapshot.cow_bytes).Uint("load_ops_during_snapshot", f.load_ops);
    j.Num("restore_ms", f.restore.ms, 1).Num("restore_objects_per_s", restore_rate, 0);
    if (o.redis_fork_ms_per_gb >= 0) {
      j.Num("redis_fork_ms_per_gb", o.redis_fork_ms_per_gb, 3);
    } else {
      j.Null("redis_fork_ms_per_gb");
    }
    if (o.redis_load_ms >= 0) {
      j.Num("redis_load_ms", o.redis_load_ms, 1);
    } else {
      j.Null("redis_load_ms");
    }
    std::printf("%s\n", j.str().c_str());
  } else {
    std::printf("snapshot of %llu objects (RSS %.2f GiB)\n",
                static_cast<unsigned long long>(f.objects), gib);
    std::printf("  pause (lock + fork)   %10.3f ms  (%.3f ms/GiB; redis %s ms/GiB)\n",
                f.snapshot.fork_pause_ms, per_gb,
                o.redis_fork_ms_per_gb >= 0 ? std::to_string(o.redis_fork_ms_per_gb).c_str() : "-");
    std::printf("  child run             %10.1f ms\n", f.snapshot.child_ms);
    std::printf("  snapshot bytes        %10llu  (%.2f per object)\n",
                static_cast<unsigned long long>(f.snapshot.snapshot_bytes),
                static_cast<double>(f.snapshot.snapshot_bytes) / static_cast<double>(f.objects));
    std::printf("  child private dirty   %10llu bytes (%llu writer ops meanwhile)\n",
                static_cast<unsigned long long>(f.snapshot.cow_bytes),
                static_cast<unsigned long long>(f.load_ops));
    std::printf("  restore               %10.1f ms  (%.0f objects/s; redis load %s ms)\n",
                f.restore.ms, restore_rate,
                o.redis_load_ms >= 0 ? std::to_string(o.redis_load_ms).c_str() : "-");
  }
  std::fflush(stdout);
}

}  // namespace

int RunSnapshotBench(int argc, const char* const* argv) {
  SnapshotBenchOptions o;
  FlagSet flags(argv[0]);
  flags.AddString("objects", &o.objects, "object counts, comma-separated");
  flags.AddInt64("key_size", &o.key_size, "bytes per key",
                 static_cast<int64_t>(BenchKeys::kIdBytes) + 2, 4096);
  flags.AddInt64("value_size", &o.value_size, "object size the directory records", 1, 1 << 30);
  flags.AddString("dir", &o.dir, "where the snapshot is written (default: the temp directory)");
  flags.AddInt64("restore_threads", &o.restore_threads, "restore threads (0: one per core)", 0,
                 1024);
  flags.AddBool("json", &o.json, "one JSON line per object count");
  flags.AddDouble("redis_fork_ms_per_gb", &o.redis_fork_ms_per_gb,
                  "Redis BGSAVE fork ms per GiB of RSS, to print beside ours (-1: unknown)", -1,
                  1e9);
  flags.AddDouble("redis_load_ms", &o.redis_load_ms,
                  "Redis RDB load ms with as many keys (-1: unknown)", -1, 1e12);
  flags.ParseOrExit(argc, argv);
  std::vector<uint64_t> counts = ParseCounts(o.objects);
  if (counts.empty()) {
    std::fprintf(stderr, "%s: flag --objects must be positive counts separated by commas\n",
                 argv[0]);
    return 2;
  }
  SnapshotBench bench(o);
  for (uint64_t n : counts) {
    Figures f;
    if (!bench.Run(n, &f)) return 1;
    Report(o, f);
  }
  return 0;
}

}  // namespace shelfmark
