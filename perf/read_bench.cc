#include "perf/read_bench.h"

#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "auth/credential_flags.h"
#include "common/flags.h"
#include "common/json_line.h"
#include "client/client.h"
#include "client/data_client.h"
#include "perf/bench_util.h"
#include "perf/master_flags.h"
#include "transport/ucx_engine.h"
#if defined(SHELFMARK_HAVE_VERBS)
#include "transport/verbs_engine.h"
#endif

namespace shelfmark {
namespace {

struct ReadBenchOptions {
  std::string master = "127.0.0.1:50051";
  std::string cluster_id;
  std::string protocol = "ucx";
  std::string sizes_text = "4096,65536,1048576";
  std::vector<uint64_t> sizes;
  int64_t iters = 1000;
  int64_t warmup = 50;
  bool checksum = false;
  bool json = false;
  auth::CredentialFlags credential_flags;
  auth::Credentials credentials;  // resolved from credential_flags
  std::string device;
  std::string tenant = "perf-read";
};

struct Row {
  uint64_t size = 0;
  double p50_us = 0, p99_us = 0, p999_us = 0, gbps = 0;
  double raw_p50_us = 0, raw_p99_us = 0, raw_gbps = 0;
  double memcpy_p50_us = 0, memcpy_p99_us = 0, memcpy_gbps = 0;  // the same bytes, one process
};

// --help and malformed flags exit here (FlagSet::ParseOrExit); false after a
// message for values that do not parse.
bool ParseOptions(int argc, const char* const* argv, ReadBenchOptions* o) {
  FlagSet flags(argv[0]);
  AddMasterFlags(&flags, &o->master, &o->cluster_id);
  flags.AddString("protocol", &o->protocol, "engine to read with", {"rdma", "ucx"});
  flags.AddString("size", &o->sizes_text, "object sizes in bytes, comma-separated");
  flags.AddInt64("iters", &o->iters, "timed reads per size and path", 1, 100'000'000);
  flags.AddInt64("warmup", &o->warmup, "untimed reads per size and path first", 0, 1'000'000);
  flags.AddBool("checksum", &o->checksum, "store a checksum: shelfmark reads verify it");
  flags.AddBool("json", &o->json, "one JSON line per size");
  o->credential_flags.Add(flags);
  flags.AddString("device", &o->device, "RDMA device for the client's QPs (\"\" = the first)");
  flags.AddString("tenant", &o->tenant, "tenant of the benchmark objects");
  flags.ParseOrExit(argc, argv);
  if (std::string error = CheckMasterFlags(o->master, o->cluster_id); !error.empty()) {
    std::fprintf(stderr, "%s: %s\n", argv[0], error.c_str());
    return false;
  }
  if (!ParseSizeList(o->sizes_text, &o->sizes)) {
    std::fprintf(stderr, "%s: flag --size expects positive integers separated by commas\n",
                 argv[0]);
    return false;
  }
  auto credentials = o->credential_flags.Resolve(argv[0]);
  if (!credentials.ok()) return false;  // Resolve printed why
  o->credentials = std::move(credentials).value();
  return true;
}

using Clock = std::chrono::steady_clock;
constexpr int64_t kRawTimeoutMs = 5000;

// Runs `a` and `b` warmup + iters times each, interleaved (a b, b a, a b, ...)
// so that noise from the rest of the machine falls on both alike; the
// nanoseconds of the timed runs of each, or the first failing code.
Result<std::pair<std::vector<int64_t>, std::vector<int64_t>>> TimeInterleaved(
    int64_t warmup, int64_t iters, const std::function<ErrorCode()>& a,
    const std::function<ErrorCode()>& b) {
  std::pair<std::vector<int64_t>, std::vector<int64_t>> ns;
  ns.first.reserve(static_cast<size_t>(iters));
  ns.second.reserve(static_cast<size_t>(iters));
  auto run = [](const std::function<ErrorCode()>& read, bool timed, std::vector<int64_t>* out) {
    const auto start = Clock::now();
    ErrorCode rc = read();
    const auto end = Clock::now();
    if (timed) out->push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count());
    return rc;
  };
  for (int64_t i = 0; i < warmup + iters; ++i) {
    const bool timed = i >= warmup;
    const bool a_first = i % 2 == 0;
    ErrorCode rc = run(a_first ? a : b, timed, a_first ? &ns.first : &ns.second);
    if (rc == ErrorCode::OK) rc = run(a_first ? b : a, timed, a_first ? &ns.second : &ns.first);
    if (rc != ErrorCode::OK) return rc;
  }
  return ns;
}

// Fills the percentile and bandwidth fields from `ns` (reordered).
void Summarize(std::vector<int64_t>* ns, uint64_t size, double* p50, double* p99, double* p999,
               double* gbps) {
  int64_t total = 0;
  for (int64_t v : *ns) total += v;
  *p50 = Percentile(ns, 50) / 1e3;
  *p99 = Percentile(ns, 99) / 1e3;
  if (p999 != nullptr) *p999 = Percentile(ns, 99.9) / 1e3;
  *gbps = total > 0 ? static_cast<double>(size) * 8 * static_cast<double>(ns->size()) / total : 0;
}

class ReadBench {
 public:
  explicit ReadBench(ReadBenchOptions o) : o_(std::move(o)) {}
  ~ReadBench() {
    if (raw_region_.handle != 0) raw_engine_->UnregisterMemory(raw_region_);
    if (client_ && buffer_ != nullptr) client_->UnregisterBuffer(buffer_);
    if (buffer_ != nullptr) munmap(buffer_, buffer_size_);
  }

  int Run() {
    if (!SetUp()) return 1;
    if (!o_.json) {
      std::printf("%10s %10s %10s %10s %9s %12s %10s %13s %11s %10s\n", "size", "p50_us",
                  "p99_us", "p999_us", "gbps", "raw_p50_us", "raw_gbps", "memcpy_p50_us",
                  "memcpy_gbps", "vs_memcpy");
    }
    int rc = 0;
    for (uint64_t size : o_.sizes) {
      Row row;
      if (!Measure(size, &row)) {
        rc = 1;
        break;
      }
      Emit(row);
    }
    for (uint64_t size : o_.sizes) (void)client_->Remove(o_.tenant, Key(size), /*force=*/true);
    PrintTransferCounters(*client_, "shelfmark-perf read");
    return rc;
  }

 private:
  std::string Key(uint64_t size) const { return "read-" + std::to_string(size) + "-" + id_; }

  bool Fail(const std::string& what, ErrorCode rc) {
    std::fprintf(stderr, "shelfmark-perf read: %s: %s\n", what.c_str(),
                 std::string(ErrorCodeName(rc)).c_str());
    return false;
  }

  bool SetUp() {
    ClientOptions co;
    co.master = o_.master;
    co.cluster_id = o_.cluster_id;
    co.protocol = o_.protocol;
    co.transport.cluster_token = o_.credentials.cluster_token;
    co.master_token = o_.credentials.master_token;
    co.transport.device = o_.device;
    client_ = CreateDataClient(std::move(co), "shelfmark-perf read");
    if (client_ == nullptr) return false;
    id_ = client_->client_id().ToString().substr(0, 8);
    for (uint64_t s : o_.sizes) buffer_size_ = std::max(buffer_size_, s);
    void* mem = mmap(nullptr, buffer_size_, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (mem == MAP_FAILED) return Fail("buffer", ErrorCode::NO_AVAILABLE_HANDLE);
    buffer_ = static_cast<uint8_t*>(mem);
    ErrorCode rc = client_->RegisterBuffer(buffer_, buffer_size_);
    if (rc != ErrorCode::OK) return Fail("register buffer", rc);
    raw_engine_ = client_->engine(o_.protocol);
    if (o_.protocol == UcxEngine::kProtocol) return true;  // RawUcxGet needs no region
    // rdma: the raw path's own registration of the same buffer (RawRead
    // wants the region; the client keeps its registrations private).
    auto region = raw_engine_->RegisterMemory(buffer_, buffer_size_, /*remote_access=*/false);
    if (!region.ok()) return Fail("register buffer for the raw path", region.error());
    raw_region_ = std::move(region).value();
    return true;
  }

  bool Measure(uint64_t size, Row* row) {
    std::string value(size, '\0');
    for (uint64_t i = 0; i < size; ++i) value[i] = static_cast<char>(i * 7 + 3);
    PutOptions po;
    po.compute_checksum = o_.checksum;
    ErrorCode rc = client_->Put(o_.tenant, Key(size), value, po);
    if (rc != ErrorCode::OK) return Fail("put " + std::to_string(size), rc);
    auto loc = client_->Locate(o_.tenant, Key(size));
    if (!loc.ok()) return Fail("locate", loc.error());
    if (loc->info.replicas.empty() || loc->info.replicas[0].memory.protocol != o_.protocol) {
      return Fail("no " + o_.protocol + " replica", ErrorCode::INVALID_REPLICA);
    }
    ObjectLocation location = std::move(loc).value();
    const MemoryDescriptor replica = location.info.replicas[0].memory;  // the raw path's
    auto shelfmark_read = [&] {
      ErrorCode r = client_->Read(location, buffer_, buffer_size_);
      if (r != ErrorCode::LEASE_EXPIRED) return r;
      auto again = client_->Locate(o_.tenant, Key(size));  // lease ran out: renew
      if (!again.ok()) return again.error();
      location = std::move(again).value();
      return client_->Read(location, buffer_, buffer_size_);
    };
    auto times = TimeInterleaved(o_.warmup, o_.iters, shelfmark_read, RawRead(replica, size));
    if (!times.ok()) return Fail("read " + std::to_string(size), times.error());
    if (std::memcmp(buffer_, value.data(), size) != 0) {
      return Fail("read " + std::to_string(size) + " returned wrong bytes",
                  ErrorCode::CHECKSUM_MISMATCH);
    }
    auto& [shelfmark, raw] = *times;
    row->size = size;
    Summarize(&shelfmark, size, &row->p50_us, &row->p99_us, &row->p999_us, &row->gbps);
    Summarize(&raw, size, &row->raw_p50_us, &row->raw_p99_us, nullptr, &row->raw_gbps);
    // The ceiling of a same-host read: memcpy of the same size into the same
    // buffer, in this process (both arguments are the copy: one sample set).
    auto copy = [&] {
      std::memcpy(buffer_, value.data(), size);
      return ErrorCode::OK;
    };
    auto copies = TimeInterleaved(o_.warmup, o_.iters / 2 + 1, copy, copy);
    std::vector<int64_t> all = std::move(copies->first);
    all.insert(all.end(), copies->second.begin(), copies->second.end());
    Summarize(&all, size, &row->memcpy_p50_us, &row->memcpy_p99_us, nullptr, &row->memcpy_gbps);
    return true;
  }

  // One read of `size` bytes of `replica` through the bare engine: ucx
  // RawUcxGet (one ucp_get_nbx), rdma VerbsEngine::RawRead (one RDMA READ on
  // the cached connection).
  std::function<ErrorCode()> RawRead(const MemoryDescriptor& replica, uint64_t size) {
    if (o_.protocol == UcxEngine::kProtocol) {
      auto* ucx = static_cast<UcxEngine*>(raw_engine_);
      return [ucx, &replica, size, this] {
        return RawUcxGet(*ucx, replica, 0, buffer_, size, kRawTimeoutMs).code;
      };
    }
#if defined(SHELFMARK_HAVE_VERBS)
    auto* verbs = static_cast<VerbsEngine*>(raw_engine_);
    return [verbs, &replica, size, this] {
      return verbs->RawRead(replica, 0, raw_region_, buffer_, size, kRawTimeoutMs).code;
    };
#else
    return [] { return ErrorCode::INVALID_PARAMS; };  // no rdma client without verbs
#endif
  }

  // Shelfmark's read bandwidth over memcpy's (1: as fast as a local copy).
  static double VsMemcpy(const Row& r) { return r.memcpy_gbps > 0 ? r.gbps / r.memcpy_gbps : 0; }

  void Emit(const Row& r) {
    if (o_.json) {
      JsonObject j;
      j.Str("bench", "read").Str("protocol", o_.protocol).Uint("size", r.size)
          .Int("iters", o_.iters).Num("p50_us", r.p50_us, 2).Num("p99_us", r.p99_us, 2)
          .Num("p999_us", r.p999_us, 2).Num("gbps", r.gbps, 3)
          .Num("raw_p50_us", r.raw_p50_us, 2).Num("raw_p99_us", r.raw_p99_us, 2)
          .Num("raw_gbps", r.raw_gbps, 3).Num("memcpy_p50_us", r.memcpy_p50_us, 2)
          .Num("memcpy_gbps", r.memcpy_gbps, 3).Num("vs_memcpy", VsMemcpy(r), 3);
      std::printf("%s\n", j.str().c_str());
    } else {
      std::printf("%10llu %10.2f %10.2f %10.2f %9.3f %12.2f %10.3f %13.2f %11.3f %10.3f\n",
                  static_cast<unsigned long long>(r.size), r.p50_us, r.p99_us, r.p999_us, r.gbps,
                  r.raw_p50_us, r.raw_gbps, r.memcpy_p50_us, r.memcpy_gbps, VsMemcpy(r));
    }
    std::fflush(stdout);
  }

  ReadBenchOptions o_;
  std::unique_ptr<Client> client_;
  std::string id_;
  uint8_t* buffer_ = nullptr;
  uint64_t buffer_size_ = 0;
  TransportEngine* raw_engine_ = nullptr;  // the engine of --protocol
  MemoryRegion raw_region_;  // rdma: buffer_, registered with raw_engine_ (handle 0: none)
};

}  // namespace

int RunReadBench(int argc, const char* const* argv) {
  ReadBenchOptions o;
  if (!ParseOptions(argc, argv, &o)) return 2;
  return ReadBench(std::move(o)).Run();
}

}  // namespace shelfmark
