// `shelfmark-perf disk`: per SSD backend, in a fresh directory under --dir
// (removed at the end):
//   1. write --objects objects (keys of --key_size bytes, values of
//      --value_size bytes, a pseudo-random stream derived from the object's
//      number) in WriteBatch calls of --batch objects;
//   2. Close (the offset backend runs in relaxed persist mode with the
//      periodic checkpoint pushed out to its longest interval, so the only
//      checkpoint is the one Close writes, after an fdatasync of the data);
//   3. open the directory again (the restart: the bucket backend scans the
//      .meta files, the offset backend reads kv_cache.meta and verifies every
//      record against kv_cache.data) and check that object_count() is what
//      was written and that --verify keys, spread over the whole range, read
//      back byte-exact.
// Any failure, miscount, eviction or wrong byte: a message and exit 1.
//
// Figures (JSON fields; the table has the same):
//   write_s                sum of the WriteBatch call times
//   write_objects_per_s    objects / write_s
//   write_mb_per_s         value bytes / write_s, in 10^6 bytes
//   batch_p50_us/p99_us    WriteBatch call time percentiles
//   close_s                Close (offset: fdatasync + the checkpoint)
//   restart_s              the second OpenStorageBackend call
//   restart_objects_per_s  objects / restart_s
//   disk_bytes             blocks allocated in the directory after Close (du;
//                          the offset backend's data file is preallocated)
//   backend_used_bytes     the backend's used_bytes() after the restart
//   verified               keys read back byte-exact after the restart
//   page_cache             "warm": the restart read files the writes had just
//                          cached; "dropped": --drop_caches (root) emptied the
//                          page cache before it
#include "perf/disk_bench.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/flags.h"
#include "common/json_line.h"
#include "common/uuid.h"
#include "perf/bench_keys.h"
#include "perf/bench_util.h"
#include "ssdstore/offset_record.h"
#include "ssdstore/storage_backend_factory.h"

namespace shelfmark {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::string_view kTenant = "perf-disk";
constexpr std::string_view kKeyPrefix = "disk-";
constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kSlackBytes = 64 * kMiB;  // room asked for beyond the estimate
// Longest relaxed checkpoint period (storage_config.h): no periodic
// checkpoint runs during the measurement.
constexpr uint32_t kNoPeriodicCheckpoint = 7 * 24 * 3600;

struct DiskBenchOptions {
  int64_t objects = 1'000'000;
  int64_t value_size = 128;
  int64_t key_size = 40;
  int64_t batch = 1000;
  int64_t verify = 10'000;
  std::string backend = "all";
  std::string dir;  // "" = $TMPDIR or /tmp
  bool json = false;
  bool drop_caches = false;
};

struct Figures {
  std::string backend;
  double write_s = 0;
  LatencySummary batch;
  double close_s = 0;
  double restart_s = 0;
  uint64_t disk_bytes = 0;
  uint64_t used_bytes = 0;
  uint64_t verified = 0;
  bool cache_dropped = false;
};

double Seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

double PerSecond(double count, double seconds) { return seconds > 0 ? count / seconds : 0; }

// The value of object `id`: a splitmix64 stream seeded by the id, so that
// every object differs and a sampled one can be derived again to compare.
void FillValue(uint64_t id, std::string* out) {
  uint64_t x = id * 0x9E3779B97F4A7C15ULL;
  for (size_t at = 0; at < out->size(); at += sizeof(uint64_t)) {
    x += 0x9E3779B97F4A7C15ULL;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    std::memcpy(out->data() + at, &z, std::min(sizeof(z), out->size() - at));
  }
}

// Bytes the files of the directory occupy on disk (allocated blocks, as du).
uint64_t DiskBytes(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir, ec)) {
    struct stat st {};
    if (::lstat(entry.path().c_str(), &st) == 0) total += static_cast<uint64_t>(st.st_blocks) * 512;
  }
  return total;
}

// A fresh directory under `base`, absolute, removed with its contents on
// destruction; path() is empty when it could not be made.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& base) {
    std::string tmpl = base + "/shelfmark-disk-bench-XXXXXX";
    if (mkdtemp(tmpl.data()) != nullptr) path_ = std::filesystem::absolute(tmpl).string();
  }
  ~ScratchDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class DiskBench {
 public:
  explicit DiskBench(const DiskBenchOptions& o)
      : o_(o),
        objects_(static_cast<uint64_t>(o.objects)),
        keys_(kKeyPrefix, UUID::Generate(), 'w', static_cast<size_t>(o.key_size)) {}

  // False (with a message on stderr) when a step fails or a check does not hold.
  bool Run(StorageConfig::Backend backend, Figures* f);

 private:
  bool Fail(const std::string& what) const {
    std::fprintf(stderr, "shelfmark-perf disk: %s\n", what.c_str());
    return false;
  }
  bool Fail(const std::string& what, ErrorCode rc) const {
    return Fail(what + ": " + std::string(ErrorCodeName(rc)));
  }

  // Offset backend: kv_cache.data with room for every record (each rounded
  // up to kRecordAlignment) plus 1/8 so the default watermarks never evict.
  uint64_t OffsetCapacity() const {
    const uint64_t total =
        RecordTotalSize(kTenant.size(), static_cast<size_t>(o_.key_size),
                        static_cast<uint64_t>(o_.value_size));
    const uint64_t alloc = (total + kRecordAlignment - 1) / kRecordAlignment * kRecordAlignment;
    const uint64_t bytes = objects_ * alloc + objects_ * alloc / 8 + kMiB;
    return bytes / kRecordAlignment * kRecordAlignment;
  }

  // Bytes the run writes at most (plus slack), for the free-space check.
  uint64_t SpaceNeeded(StorageConfig::Backend backend) const {
    const uint64_t key = static_cast<uint64_t>(o_.key_size);
    const uint64_t per_entry = kTenant.size() + key + 32;  // a .meta / checkpoint entry
    if (backend == StorageConfig::Backend::kOffsetAllocator) {
      return OffsetCapacity() + 2 * objects_ * per_entry + kSlackBytes;  // checkpoint + .tmp
    }
    const uint64_t buckets = objects_ / std::min<uint64_t>(o_.batch, 4096) + 1;
    return objects_ * (key + static_cast<uint64_t>(o_.value_size) + per_entry) +
           buckets * 2 * 4096 + kSlackBytes;
  }

  bool CheckSpace(const std::string& dir, StorageConfig::Backend backend) const;
  StorageConfig Config(StorageConfig::Backend backend, const std::string& dir) const;
  Result<std::unique_ptr<StorageBackend>> Open(const StorageConfig& config) const;
  bool Write(StorageBackend* b, Figures* f) const;
  bool DropCaches() const;
  bool Verify(StorageBackend* b, Figures* f) const;

  const DiskBenchOptions o_;
  const uint64_t objects_;
  const BenchKeys keys_;
};

bool DiskBench::CheckSpace(const std::string& dir, StorageConfig::Backend backend) const {
  struct statvfs vfs {};
  if (::statvfs(dir.c_str(), &vfs) != 0) return Fail("cannot statvfs " + dir + " (see --dir)");
  const uint64_t available = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  const uint64_t needed = SpaceNeeded(backend);
  if (available >= needed) return true;
  return Fail(std::string(BackendName(backend)) + " with " + std::to_string(objects_) +
              " objects needs about " + std::to_string(needed / kMiB) + " MiB; " + dir +
              " has " + std::to_string(available / kMiB) + " MiB available (see --dir)");
}

StorageConfig DiskBench::Config(StorageConfig::Backend backend, const std::string& dir) const {
  StorageConfig c;
  c.backend = backend;
  c.storage_path = dir;
  if (backend == StorageConfig::Backend::kOffsetAllocator) {
    c.persist_mode = StorageConfig::PersistMode::kRelaxed;
    c.persist_interval_seconds = kNoPeriodicCheckpoint;
    c.total_size_limit_bytes = OffsetCapacity();
  }
  return c;
}

Result<std::unique_ptr<StorageBackend>> DiskBench::Open(const StorageConfig& config) const {
  std::string error;
  auto opened = OpenStorageBackend(config, nullptr, &error);
  if (!opened.ok()) Fail(error);
  return opened;
}

bool DiskBench::Write(StorageBackend* b, Figures* f) const {
  const size_t batch = static_cast<size_t>(o_.batch);
  std::vector<StoredObject> objects(batch);
  std::vector<std::string> values(batch, std::string(static_cast<size_t>(o_.value_size), '\0'));
  for (size_t i = 0; i < batch; ++i) {
    objects[i].tenant = kTenant;
    objects[i].value = values[i];
  }
  std::vector<int64_t> batch_ns;
  batch_ns.reserve(objects_ / batch + 1);
  for (uint64_t first = 0; first < objects_; first += batch) {
    objects.resize(std::min<uint64_t>(batch, objects_ - first));
    for (size_t i = 0; i < objects.size(); ++i) {
      keys_.Make(first + i, &objects[i].key);
      FillValue(first + i, &values[i]);
    }
    const auto start = Clock::now();
    auto written = b->WriteBatch(objects);
    const auto end = Clock::now();
    if (!written.ok()) {
      return Fail("WriteBatch at object " + std::to_string(first), written.error());
    }
    batch_ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count());
  }
  int64_t total_ns = 0;
  for (int64_t ns : batch_ns) total_ns += ns;
  f->write_s = static_cast<double>(total_ns) / 1e9;
  f->batch = SummarizeLatencyNs(&batch_ns);
  return true;
}

bool DiskBench::DropCaches() const {
  ::sync();
  std::ofstream out("/proc/sys/vm/drop_caches");
  out << "3\n";
  out.flush();
  if (!out) return Fail("--drop_caches: cannot write /proc/sys/vm/drop_caches");
  return true;
}

bool DiskBench::Verify(StorageBackend* b, Figures* f) const {
  if (b->object_count() != objects_) {
    return Fail(std::string(b->name()) + " restarted with " + std::to_string(b->object_count()) +
                " objects, " + std::to_string(objects_) + " were written");
  }
  const uint64_t samples = std::min(objects_, static_cast<uint64_t>(o_.verify));
  std::string key, expected(static_cast<size_t>(o_.value_size), '\0'), got;
  for (uint64_t s = 0; s < samples; ++s) {
    // Evenly spread, first and last object included.
    const uint64_t id = samples == 1 ? 0 : s * (objects_ - 1) / (samples - 1);
    keys_.Make(id, &key);
    FillValue(id, &expected);
    ErrorCode rc = b->Read(kTenant, key, expected.size(), &got);
    if (rc != ErrorCode::OK) return Fail("read of object " + std::to_string(id), rc);
    if (got != expected) {
      return Fail("object " + std::to_string(id) + " read back different bytes after the restart");
    }
    ++f->verified;
  }
  return true;
}

bool DiskBench::Run(StorageConfig::Backend backend, Figures* f) {
  f->backend = BackendName(backend);
  const std::string base =
      o_.dir.empty() ? std::filesystem::temp_directory_path().string() : o_.dir;
  if (!CheckSpace(base, backend)) return false;
  ScratchDir dir(base);
  if (dir.path().empty()) return Fail("cannot create a directory in " + base + " (see --dir)");
  const StorageConfig config = Config(backend, dir.path());
  {
    auto b = Open(config);
    if (!b.ok()) return false;
    uint64_t evicted = 0;
    (*b)->SetEvictCallback([&evicted](std::string_view, std::string_view) { ++evicted; });
    if (!Write(b->get(), f)) return false;
    if (evicted != 0 || (*b)->object_count() != objects_) {
      return Fail(f->backend + " holds " + std::to_string((*b)->object_count()) +
                  " objects after " + std::to_string(objects_) + " writes (" +
                  std::to_string(evicted) + " evicted)");
    }
    const auto start = Clock::now();
    ErrorCode rc = (*b)->Close();
    f->close_s = Seconds(start, Clock::now());
    if (rc != ErrorCode::OK) return Fail("Close", rc);
  }
  f->disk_bytes = DiskBytes(dir.path());
  if (o_.drop_caches) {
    if (!DropCaches()) return false;
    f->cache_dropped = true;
  }
  const auto start = Clock::now();
  auto b = Open(config);
  f->restart_s = Seconds(start, Clock::now());
  if (!b.ok()) return false;
  f->used_bytes = (*b)->used_bytes();
  bool ok = Verify(b->get(), f);
  ErrorCode rc = (*b)->Close();
  if (ok && rc != ErrorCode::OK) return Fail("Close after the restart", rc);
  return ok;
}

void PrintHeader() {
  std::printf("%-34s %9s %9s %11s %8s %12s %12s %8s %10s %11s %10s %9s\n", "backend", "objects",
              "write_s", "write_obj/s", "write_MB/s", "batch_p50_us", "batch_p99_us", "close_s",
              "restart_s", "restart_o/s", "disk_MiB", "verified");
}

void Report(const DiskBenchOptions& o, const Figures& f) {
  const double objects = static_cast<double>(o.objects);
  const double write_ops = PerSecond(objects, f.write_s);
  const double write_mb = PerSecond(objects * static_cast<double>(o.value_size) / 1e6, f.write_s);
  const double restart_ops = PerSecond(objects, f.restart_s);
  if (o.json) {
    JsonObject j;
    j.Str("bench", "disk").Str("backend", f.backend).Int("objects", o.objects)
        .Int("key_size", o.key_size).Int("value_size", o.value_size).Int("batch", o.batch)
        .Num("write_s", f.write_s, 3).Num("write_objects_per_s", write_ops, 0)
        .Num("write_mb_per_s", write_mb, 2).Num("batch_p50_us", f.batch.p50_us, 1)
        .Num("batch_p99_us", f.batch.p99_us, 1).Num("close_s", f.close_s, 3)
        .Num("restart_s", f.restart_s, 3).Num("restart_objects_per_s", restart_ops, 0)
        .Uint("disk_bytes", f.disk_bytes).Uint("backend_used_bytes", f.used_bytes)
        .Uint("verified", f.verified).Str("page_cache", f.cache_dropped ? "dropped" : "warm");
    std::printf("%s\n", j.str().c_str());
  } else {
    std::printf("%-34s %9lld %9.3f %11.0f %10.2f %12.1f %12.1f %8.3f %10.3f %11.0f %10.1f %9llu\n",
                f.backend.c_str(), static_cast<long long>(o.objects), f.write_s, write_ops,
                write_mb, f.batch.p50_us, f.batch.p99_us, f.close_s, f.restart_s, restart_ops,
                static_cast<double>(f.disk_bytes) / static_cast<double>(kMiB),
                static_cast<unsigned long long>(f.verified));
  }
  std::fflush(stdout);
}

// --help and malformed flags exit here (FlagSet::ParseOrExit); false after a
// message for a combination that cannot run.
bool ParseOptions(int argc, const char* const* argv, DiskBenchOptions* o) {
  FlagSet flags(argv[0]);
  flags.AddInt64("objects", &o->objects, "objects written per backend", 1, 1'000'000'000);
  flags.AddInt64("value_size", &o->value_size, "bytes per value", 1, int64_t{64} << 20);
  flags.AddInt64("key_size", &o->key_size, "bytes per key",
                 static_cast<int64_t>(kKeyPrefix.size() + BenchKeys::kIdBytes), 4096);
  flags.AddInt64("batch", &o->batch, "objects per WriteBatch", 1, 1'000'000);
  flags.AddInt64("verify", &o->verify, "keys read back and compared after the restart", 1,
                 1'000'000'000);
  flags.AddString("backend", &o->backend, "backends to measure", {"bucket", "offset", "all"});
  flags.AddString("dir", &o->dir, "where the scratch directories go (default: the temp directory)");
  flags.AddBool("json", &o->json, "one JSON line per backend");
  flags.AddBool("drop_caches", &o->drop_caches,
                "empty the page cache before each restart (needs root)");
  flags.ParseOrExit(argc, argv);
  if (o->drop_caches && ::geteuid() != 0) {
    std::fprintf(stderr, "%s: flag --drop_caches needs root (it writes /proc/sys/vm/drop_caches)\n",
                 argv[0]);
    return false;
  }
  return true;
}

}  // namespace

int RunDiskBench(int argc, const char* const* argv) {
  DiskBenchOptions o;
  if (!ParseOptions(argc, argv, &o)) return 2;
  std::vector<StorageConfig::Backend> backends;
  if (o.backend != "offset") backends.push_back(StorageConfig::Backend::kBucket);
  if (o.backend != "bucket") backends.push_back(StorageConfig::Backend::kOffsetAllocator);
  DiskBench bench(o);
  bool any_warm = false;
  for (StorageConfig::Backend backend : backends) {
    Figures f;
    if (!bench.Run(backend, &f)) return 1;
    if (!o.json && backend == backends.front()) PrintHeader();
    Report(o, f);
    any_warm = any_warm || !f.cache_dropped;
  }
  if (!o.json && any_warm) {
    std::printf("restart ran with a warm page cache (the files were just written); "
                "--drop_caches as root for a cold one\n");
  }
  return 0;
}

}  // namespace shelfmark
