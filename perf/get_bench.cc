#include "perf/get_bench.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "client/client.h"
#include "client/object_load.h"
#include "client/data_client.h"
#include "perf/bench_main.h"
#include "perf/bench_util.h"
#include "perf/get_options.h"
#include "perf/get_report.h"
#include "perf/key_chooser.h"
#include "perf/latency_plot.h"
#include "ssdstore/bucket_backend.h"
#include "client/local_disk_client.h"
#include "ssdstore/offset_backend.h"
#include "transport/ucx_engine.h"

namespace shelfmark {
namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr const char* kProgram = "shelfmark-perf get";
constexpr int64_t kBaselineTimeoutMs = 30'000;

int64_t NsSince(SteadyClock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - start).count();
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             SteadyClock::now().time_since_epoch())
      .count();
}

// The value of key `index` of `size` bytes: a byte pattern, with a stamp
// (index, size) at the start, middle and end so that a sampled check after
// each timed get catches bytes of another key or size.
struct Stamp {
  uint32_t magic = 0x534d4754;  // "SMGT"
  uint32_t index = 0;
  uint64_t size = 0;
};

// Non-overlapping stamp places; none for values too small to hold three
// (those are compared whole).
std::vector<uint64_t> StampOffsets(uint64_t size) {
  if (size < 3 * sizeof(Stamp)) return {};
  return {0, (size - sizeof(Stamp)) / 2, size - sizeof(Stamp)};
}

std::string MakeValue(uint32_t index, uint64_t size) {
  std::string v(size, '\0');
  for (uint64_t j = 0; j < size; ++j) v[j] = static_cast<char>(j * 131 + index * 7 + 1);
  const Stamp stamp{0x534d4754, index, size};
  for (uint64_t at : StampOffsets(size)) std::memcpy(v.data() + at, &stamp, sizeof(stamp));
  return v;
}

bool StampsMatch(const uint8_t* bytes, uint32_t index, uint64_t size) {
  if (size < 3 * sizeof(Stamp)) {
    return std::memcmp(bytes, MakeValue(index, size).data(), size) == 0;
  }
  const Stamp want{0x534d4754, index, size};
  for (uint64_t at : StampOffsets(size)) {
    if (std::memcmp(bytes + at, &want, sizeof(want)) != 0) return false;
  }
  return true;
}

// Per-thread samples of one (replica, size) measurement.
struct Samples {
  std::vector<int64_t> get_ns, lookup_ns, transfer_ns;
  // NowNs() at the start of the first timed operation and at the end of the
  // last (end < start: none was timed), for the row's throughput.
  int64_t timed_start_ns = 0;
  int64_t timed_end_ns = -1;
  ErrorCode error = ErrorCode::OK;
  std::string what;  // the failing step, for the message
  std::string protocol;
};

// Where a local_disk key's bytes lie, for the baselines.
struct DiskTarget {
  std::string endpoint;
  int fd = -1;  // the node's file holding the bytes (-1: not found)
  int64_t offset = 0;
};

class GetBench {
 public:
  explicit GetBench(GetBenchOptions o) : o_(std::move(o)) {}
  ~GetBench() {
    if (json_out_ != nullptr) std::fclose(json_out_);
    CloseTargets();
  }

  int Run() {
    if (!o_.json_out.empty()) {
      json_out_ = std::fopen(o_.json_out.c_str(), "w");
      if (json_out_ == nullptr) {
        std::fprintf(stderr, "%s: --json_out: cannot create %s\n", kProgram, o_.json_out.c_str());
        return 1;
      }
    }
    if (!SetUp()) return 1;
    if (!o_.json) std::printf("%s\n", GetTableHeader().c_str());
    int rc = 0;
    for (uint64_t size : o_.sizes) {
      if (!PutObjects(size)) {
        rc = 1;
        break;
      }
      for (const std::string& replica : o_.replicas) {
        if (InterruptFlag().load()) break;
        if (!MeasureOne(replica, size)) {
          rc = 1;
          break;
        }
      }
      RemoveObjects(size);
      if (rc != 0 || InterruptFlag().load()) break;
    }
    PrintTransferCounters(*client_, kProgram);
    if (rc == 0 && !o_.plot.empty()) rc = Plot();
    if (rc == 0 && InterruptFlag().load()) rc = 130;
    return rc;
  }

 private:
  bool Fail(const std::string& what, ErrorCode rc) {
    std::fprintf(stderr, "%s: %s: %s\n", kProgram, what.c_str(),
                 std::string(ErrorCodeName(rc)).c_str());
    return false;
  }

  std::string Key(uint64_t size, uint64_t i) const {
    return "get-" + run_id_ + "-" + std::to_string(size) + "-" + std::to_string(i);
  }

  bool SetUp() {
    ClientOptions co;
    co.master = o_.master;
    co.cluster_id = o_.cluster_id;
    // LOCAL_DISK reads need the ucx engine; "auto" opens it (and rdma when
    // a device exists). --protocol only checks what MEMORY rows used.
    co.protocol = o_.protocol == "rdma" && o_.replica == kReplicaMemory ? "rdma" : "auto";
    co.transport.cluster_token = o_.credentials.cluster_token;
    co.master_token = o_.credentials.master_token;
    co.transport.device = o_.device;
    // The benchmark's objects are its own: no other client force-removes them.
    co.location_cache.max_entries = o_.location_cache ? kLocationCacheEntries : 0;
    co.lookup_channel = o_.lookup_channel;
    client_ = CreateDataClient(std::move(co), kProgram);
    if (client_ == nullptr) return false;
    run_id_ = client_->client_id().ToString().substr(0, 8);
    return true;
  }

  // Puts --keys objects of `size` (and waits for their LOCAL_DISK replicas
  // when local_disk is measured), then reads each back in full once.
  bool PutObjects(uint64_t size) {
    PutOptions po;
    po.config.hard_pin = true;  // the master's eviction must not take them mid-run
    for (int64_t i = 0; i < o_.keys; ++i) {
      uint64_t retries = 0;
      const ErrorCode rc = PutRetryingWhileFull(*client_, o_.tenant, Key(size, i),
                                                MakeValue(i, size), po, 10'000, &retries);
      if (rc != ErrorCode::OK) return Fail("put " + Key(size, i), rc);
    }
    if (std::find(o_.replicas.begin(), o_.replicas.end(), kReplicaLocalDisk) !=
            o_.replicas.end() &&
        !WaitOffloaded(size)) {
      return false;
    }
    for (int64_t i = 0; i < o_.keys; ++i) {
      auto got = client_->Get(o_.tenant, Key(size, i));
      if (!got.ok()) return Fail("verify " + Key(size, i), got.error());
      if (*got != MakeValue(i, size)) {
        return Fail("verify " + Key(size, i) + ": wrong bytes", ErrorCode::DATA_CORRUPTED);
      }
    }
    return true;
  }

  static bool HasDiskReplica(const ObjectLocation& loc) {
    for (const ReplicaDescriptor& r : loc.info.replicas) {
      if (r.type == ReplicaType::LOCAL_DISK) return true;
    }
    return false;
  }

  bool WaitOffloaded(uint64_t size) {
    const auto deadline = SteadyClock::now() + std::chrono::seconds(o_.offload_wait_s);
    GetOptions fresh;  // the master's current answer, not a cached one from before the offload
    fresh.use_location_cache = false;
    for (int64_t i = 0; i < o_.keys;) {
      auto loc = client_->Locate(o_.tenant, Key(size, i), fresh);
      if (!loc.ok()) return Fail("locate " + Key(size, i), loc.error());
      if (HasDiskReplica(*loc)) {
        ++i;
        continue;
      }
      if (SteadyClock::now() > deadline || InterruptFlag().load()) {
        std::fprintf(stderr,
                     "%s: %s has no LOCAL_DISK replica after %lld s: does the master run with "
                     "--enable_offload and a node with an SSD store "
                     "(MOONCAKE_OFFLOAD_FILE_STORAGE_PATH)?\n",
                     kProgram, Key(size, i).c_str(), static_cast<long long>(o_.offload_wait_s));
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return true;
  }

  void RemoveObjects(uint64_t size) {
    for (int64_t i = 0; i < o_.keys; ++i) (void)client_->Remove(o_.tenant, Key(size, i), true);
  }

  // One get of key `i` (lookup + transfer) into `buf`; false on any failure
  // or when the first replica is not of the measured type.
  bool OneGet(const std::string& replica, uint64_t size, uint32_t i, uint8_t* buf, bool timed,
              Samples* s) {
    GetOptions go;
    go.prefer_local_disk = replica == kReplicaLocalDisk;
    const auto t0 = SteadyClock::now();
    auto loc = client_->Locate(o_.tenant, Key(size, i), go);
    const int64_t lookup = NsSince(t0);
    if (!loc.ok()) return SetError(s, "locate " + Key(size, i), loc.error());
    const auto t1 = SteadyClock::now();
    const ErrorCode rc = client_->Read(*loc, buf, size);
    const int64_t transfer = NsSince(t1);
    if (rc != ErrorCode::OK) return SetError(s, "read " + Key(size, i), rc);
    const ReplicaDescriptor& first = loc->info.replicas.front();
    const bool memory = replica == kReplicaMemory;
    if ((first.type == ReplicaType::MEMORY) != memory ||
        (memory && o_.protocol != "auto" && first.memory.protocol != o_.protocol)) {
      return SetError(s, Key(size, i) + ": no " + replica + " replica" +
                             (memory ? " of protocol " + o_.protocol : ""),
                      ErrorCode::INVALID_REPLICA);
    }
    if (!StampsMatch(buf, i, size)) {
      return SetError(s, Key(size, i) + ": wrong bytes", ErrorCode::DATA_CORRUPTED);
    }
    s->protocol = memory ? first.memory.protocol : std::string(UcxEngine::kProtocol);
    if (timed) {
      s->lookup_ns.push_back(lookup);
      s->transfer_ns.push_back(transfer);
      s->get_ns.push_back(lookup + transfer);
    }
    return true;
  }

  // One BatchGet of `batch` keys drawn by `chooser` (memory only).
  bool OneBatch(uint64_t size, KeyChooser& chooser, bool timed, Samples* s) {
    std::vector<std::string> keys;
    std::vector<uint32_t> index;
    for (int64_t b = 0; b < o_.batch; ++b) {
      index.push_back(static_cast<uint32_t>(chooser.Next()));
      keys.push_back(Key(size, index.back()));
    }
    const auto t0 = SteadyClock::now();
    auto got = client_->BatchGet(o_.tenant, keys);
    const int64_t ns = NsSince(t0);
    for (size_t k = 0; k < got.size(); ++k) {
      if (!got[k].ok()) return SetError(s, "batch get " + keys[k], got[k].error());
      if (got[k]->size() != size ||
          !StampsMatch(reinterpret_cast<const uint8_t*>(got[k]->data()), index[k], size)) {
        return SetError(s, keys[k] + ": wrong bytes", ErrorCode::DATA_CORRUPTED);
      }
    }
    // BatchGet reads MEMORY replicas with the engine serving them: rdma when
    // this client has it (and --protocol allows), else ucx.
    s->protocol = o_.protocol != "auto" ? o_.protocol
                  : client_->engine("rdma") != nullptr ? "rdma"
                                                       : std::string(UcxEngine::kProtocol);
    if (timed) s->get_ns.push_back(ns);
    return true;
  }

  static bool SetError(Samples* s, std::string what, ErrorCode rc) {
    s->error = rc;
    s->what = std::move(what);
    return false;
  }

  // A thread's loop: warmup untimed gets, then `iters` timed ones (or until
  // Ctrl-C); `done` counts timed operations for the progress line.
  void Worker(const std::string& replica, uint64_t size, int64_t iters, uint64_t seed,
              std::atomic<int64_t>* done, Samples* s) {
    KeyChooser chooser(o_.keys, o_.distribution, o_.zipf_theta, seed);
    std::vector<uint8_t> buffer(size);
    const bool batched = o_.batch > 1;
    if (!batched && client_->RegisterBuffer(buffer.data(), size) != ErrorCode::OK) {
      SetError(s, "register buffer", ErrorCode::NO_AVAILABLE_HANDLE);
      return;
    }
    s->get_ns.reserve(iters);
    for (int64_t n = 0; n < o_.warmup + iters && !InterruptFlag().load(); ++n) {
      const bool timed = n >= o_.warmup;
      if (n == o_.warmup) s->timed_start_ns = NowNs();
      const bool ok = batched ? OneBatch(size, chooser, timed, s)
                              : OneGet(replica, size, static_cast<uint32_t>(chooser.Next()),
                                       buffer.data(), timed, s);
      if (!ok) break;
      if (timed) {
        s->timed_end_ns = NowNs();
        done->fetch_add(1, std::memory_order_relaxed);
      }
    }
    if (!batched) client_->UnregisterBuffer(buffer.data());
  }

  bool MeasureOne(const std::string& replica, uint64_t size) {
    const int64_t threads = o_.concurrency;
    std::vector<Samples> samples(threads);
    std::atomic<int64_t> done{0};
    const int64_t per_thread = (o_.iters + threads - 1) / threads;
    const int64_t ops_total = per_thread * threads;
    std::vector<std::thread> workers;
    const LocationCacheStats cache_before = client_->location_cache_stats();
    const ServedCounts served_before = Served();
    for (int64_t t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        Worker(replica, size, per_thread, size * 1000 + t + 1, &done, &samples[t]);
      });
    }
    ShowProgress(replica, size, ops_total, done);
    for (std::thread& w : workers) w.join();
    const LocationCacheStats cache_after = client_->location_cache_stats();
    const ServedCounts served_after = Served();
    GetRow row;
    row.location_cache = o_.location_cache;
    row.cache_hits = cache_after.hits - cache_before.hits;
    row.cache_misses = cache_after.misses - cache_before.misses;
    Samples all;
    std::vector<std::pair<int64_t, int64_t>> spans;
    for (Samples& s : samples) {
      if (s.error != ErrorCode::OK) return Fail(s.what, s.error);
      spans.emplace_back(s.timed_start_ns, s.timed_end_ns);
      all.get_ns.insert(all.get_ns.end(), s.get_ns.begin(), s.get_ns.end());
      all.lookup_ns.insert(all.lookup_ns.end(), s.lookup_ns.begin(), s.lookup_ns.end());
      all.transfer_ns.insert(all.transfer_ns.end(), s.transfer_ns.begin(), s.transfer_ns.end());
      if (all.protocol.empty()) all.protocol = s.protocol;
    }
    if (all.get_ns.empty()) return true;  // interrupted before the first timed get
    plot_.push_back({replica + " " + std::to_string(size) + " B", all.get_ns});
    row.replica = replica;
    row.protocol = all.protocol;
    row.path = ServedPath(replica, {served_after.rdma_reads - served_before.rdma_reads,
                                    served_after.ucx_reads - served_before.ucx_reads,
                                    served_after.same_host_reads - served_before.same_host_reads});
    row.size = size;
    row.concurrency = threads;
    row.batch = o_.batch;
    row.get = DescribeLatencyNs(&all.get_ns);
    row.lookup_p50_us = Percentile(&all.lookup_ns, 50) / 1e3;
    row.transfer_p50_us = Percentile(&all.transfer_ns, 50) / 1e3;
    const Throughput rate =
        ThroughputOver(row.get.count * o_.batch, size, CombinedSpanNs(spans));
    row.ops_per_s = rate.ops_per_s;
    row.gbytes_per_s = rate.gbytes_per_s;
    row.interrupted = InterruptFlag().load();
    if (replica == kReplicaLocalDisk && !row.interrupted && !MeasureBaselines(size, &row)) {
      return false;
    }
    Emit(row);
    return true;
  }

  // The client's counters of what moved bytes (ServedCounts): its rdma and
  // ucx engines' (only ucx reads same-host segments, transport/local_share.h).
  ServedCounts Served() const {
    ServedCounts c;
    if (auto rdma = client_->TransferCounters("rdma")) c.rdma_reads = rdma->reads_posted;
    if (auto ucx = client_->TransferCounters(UcxEngine::kProtocol)) {
      c.ucx_reads = ucx->reads_posted;
      c.same_host_reads = ucx->local_reads;
    }
    return c;
  }

  // A stderr line per second while the workers run (runs longer than 1 s);
  // the rows' figures are the workers' own clocks, not this poll's.
  void ShowProgress(const std::string& replica, uint64_t size, int64_t total,
                    const std::atomic<int64_t>& done) {
    const auto start = SteadyClock::now();
    auto last = start;
    int64_t last_done = 0;
    while (done.load() < total && !InterruptFlag().load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (SteadyClock::now() - last < std::chrono::seconds(1)) continue;
      const int64_t now_done = done.load();
      const double secs = std::chrono::duration<double>(SteadyClock::now() - last).count();
      std::fprintf(stderr, "%s: %s %llu B: %lld/%lld gets, %.0f gets/s\n", kProgram,
                   replica.c_str(), static_cast<unsigned long long>(size),
                   static_cast<long long>(now_done), static_cast<long long>(total),
                   static_cast<double>(now_done - last_done) / secs);
      last = SteadyClock::now();
      last_done = now_done;
      // Workers that failed stop early: leave when all are quiet.
      if (now_done == total) break;
    }
  }

  // --- local_disk baselines -------------------------------------------------

  // Asks the node where each key's bytes lie (ReadLocalDisk's bucket_id and
  // offset) and opens the file under --disk_dirs that holds those bytes.
  bool FindTargets(uint64_t size) {
    CloseTargets();
    AmTransport* am = client_->messages();
    if (am == nullptr) return Fail("no ucx engine for LOCAL_DISK", ErrorCode::INVALID_PARAMS);
    for (int64_t i = 0; i < o_.keys; ++i) {
      GetOptions go;
      go.prefer_local_disk = true;
      auto loc = client_->Locate(o_.tenant, Key(size, i), go);
      if (!loc.ok()) return Fail("locate " + Key(size, i), loc.error());
      DiskTarget t;
      t.endpoint = loc->info.replicas.front().disk.endpoint;
      auto read = ReadLocalDisk(*am, t.endpoint, o_.tenant, Key(size, i), size,
                                kBaselineTimeoutMs);
      if (!read.ok()) return Fail("LOCAL_DISK read " + Key(size, i), read.error());
      t.offset = read->offset;
      t.fd = OpenHolder(*read);
      targets_.push_back(std::move(t));
    }
    return true;
  }

  void CloseTargets() {
    for (DiskTarget& t : targets_) {
      if (t.fd >= 0) close(t.fd);
    }
    targets_.clear();
  }

  // The file under --disk_dirs holding `read`'s bytes at its offset; -1
  // when none does.
  int OpenHolder(const LocalDiskRead& read) const {
    const std::string names[] = {BucketFileName(read.bucket_id),
                                 std::string(kOffsetDataFileName)};
    std::string back(read.data.size(), '\0');
    for (const std::string& dir : o_.disk_dirs) {
      for (const std::string& name : names) {
        const int fd = open((dir + "/" + name).c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        if (pread(fd, back.data(), back.size(), read.offset) ==
                static_cast<ssize_t>(back.size()) &&
            back == read.data) {
          return fd;
        }
        close(fd);
      }
    }
    return -1;
  }

  // Probe AMs and preads over the same keys, each after the master lookup a
  // get makes, as many as the measurement's gets (single thread).
  bool MeasureBaselines(uint64_t size, GetRow* row) {
    if (!FindTargets(size)) return false;
    AmTransport* am = client_->messages();
    const bool have_pread = std::all_of(targets_.begin(), targets_.end(),
                                        [](const DiskTarget& t) { return t.fd >= 0; });
    if (!have_pread) {
      std::fprintf(stderr, "%s: pread baseline skipped: the nodes' SSD files are not under "
                           "--disk_dirs\n", kProgram);
    }
    KeyChooser chooser(o_.keys, o_.distribution, o_.zipf_theta, size + 7);
    std::vector<int64_t> am_ns, pread_ns;
    std::vector<char> buf(size), probed(size);
    const int64_t n = std::min<int64_t>(o_.iters, 20'000);
    for (int64_t k = 0; k < o_.warmup + n && !InterruptFlag().load(); ++k) {
      const uint64_t i = chooser.Next();
      const DiskTarget& t = targets_[i];
      // The same lookup a get makes first (untimed; a master RPC unless the
      // location cache holds the key), so that the probe meets the node's
      // and this client's threads as a get does (back to back, nothing has
      // gone to sleep: measured ~15 us faster).
      (void)client_->Locate(o_.tenant, Key(size, i));
      const auto t0 = SteadyClock::now();
      // Into a buffer, as a get's LOCAL_DISK reply lands in the caller's.
      const ErrorCode rc =
          ProbeLocalDisk(*am, t.endpoint, size, kBaselineTimeoutMs, probed.data());
      const int64_t am = NsSince(t0);
      if (rc != ErrorCode::OK) {
        return Fail("probe " + t.endpoint + " (" + std::to_string(size) + " B, call " +
                        std::to_string(k + 1) + ", " + std::to_string(am / 1000) + " us)",
                    rc);
      }
      if (k >= o_.warmup) am_ns.push_back(am);
      if (!have_pread) continue;
      const auto t1 = SteadyClock::now();
      const ssize_t got = pread(t.fd, buf.data(), size, t.offset);
      const int64_t rd = NsSince(t1);
      if (got != static_cast<ssize_t>(size)) return Fail("pread", ErrorCode::FILE_READ_FAIL);
      if (k >= o_.warmup) pread_ns.push_back(rd);
    }
    row->has_baselines = true;
    row->baseline_am_p50_us = Percentile(&am_ns, 50) / 1e3;
    row->baseline_pread_p50_us = have_pread ? Percentile(&pread_ns, 50) / 1e3 : -1;
    return true;
  }

  void Emit(const GetRow& row) {
    std::printf("%s\n", o_.json ? GetRowJson(row).c_str() : GetTableRow(row).c_str());
    std::fflush(stdout);
    if (json_out_ != nullptr) {
      std::fprintf(json_out_, "%s\n", GetRowJson(row).c_str());
      std::fflush(json_out_);
    }
  }

  int Plot() {
    std::string error;
    if (!WriteLatencyPlot(plot_, o_.plot, &error)) {
      std::fprintf(stderr, "%s: --plot: %s\n", kProgram, error.c_str());
      return 1;
    }
    std::fprintf(stderr, "%s: latency distributions drawn to %s\n", kProgram, o_.plot.c_str());
    return 0;
  }

  GetBenchOptions o_;
  std::unique_ptr<Client> client_;
  std::string run_id_;
  std::vector<DiskTarget> targets_;  // per key of the size being measured
  std::vector<LatencySeries> plot_;
  std::FILE* json_out_ = nullptr;
};

}  // namespace

int RunGetBench(int argc, const char* const* argv) {
  GetBenchOptions o;
  std::string message;
  const int exit_code = ExitCodeFor(ParseGetBenchOptions(argc, argv, &o, &message), message);
  if (exit_code >= 0) return exit_code;
  auto credentials = o.credential_flags.Resolve(argv[0]);
  if (!credentials.ok()) return 2;  // Resolve printed why
  o.credentials = std::move(credentials).value();
  InterruptFlag();  // Ctrl-C stops the loops; what was measured is printed
  return GetBench(std::move(o)).Run();
}

}  // namespace shelfmark
