#include "perf/batchget_bench.h"

#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "auth/credential_flags.h"
#include "transport/rdma_plugin.h"
#include "common/flags.h"
#include "common/host_port.h"
#include "embedded/embedded_client.h"
#include "perf/batchget_report.h"
#include "perf/master_flags.h"
#include "perf/bench_util.h"

namespace shelfmark {
namespace {

struct Options {
  std::string master = "127.0.0.1:50051";
  std::string cluster_id;
  std::string protocol = "ucx";
  int64_t objects = 64;
  int64_t size = 256 << 10;
  int64_t iters = 20;
  int64_t warmup = 2;
  int64_t segment_size = -1;  // -1: objects * size + 16 MiB
  std::string listen_ip = "127.0.0.1";
  std::string tenant = "perf-batchget";
  std::string device;
  bool json = false;
  bool location_cache = false;
  auth::CredentialFlags credential_flags;
  auth::Credentials credentials;
};

bool ParseOptions(int argc, const char* const* argv, Options* o) {
  FlagSet flags(argv[0]);
  AddMasterFlags(&flags, &o->master, &o->cluster_id);
  flags.AddString("protocol", &o->protocol, "engine of the client (and its segment)",
                  {"ucx", "rdma", "auto"});
  flags.AddInt64("objects", &o->objects, "objects per batch", 1, 1'000'000);
  flags.AddInt64("size", &o->size, "bytes per object", 1, 1ll << 32);
  flags.AddInt64("iters", &o->iters, "timed batches", 1, 1'000'000);
  flags.AddInt64("warmup", &o->warmup, "untimed batches first", 0, 1'000'000);
  flags.AddInt64("segment_size", &o->segment_size,
                 "bytes of this process's own segment (0: put into existing nodes; "
                 "-1: objects * size + 16 MiB)", -1, 1ll << 42);
  flags.AddString("listen_ip", &o->listen_ip, "address other clients reach the segment at");
  flags.AddString("tenant", &o->tenant, "tenant of the benchmark objects");
  flags.AddString("device", &o->device, "RDMA device (\"\" = the first)");
  flags.AddBool("json", &o->json, "one JSON line");
  flags.AddBool("location_cache", &o->location_cache,
                "serve lookups from the client's location cache (off: a master RPC per get)");
  o->credential_flags.Add(flags);
  flags.ParseOrExit(argc, argv);
  if (std::string error = CheckMasterFlags(o->master, o->cluster_id); !error.empty()) {
    std::fprintf(stderr, "%s: %s\n", argv[0], error.c_str());
    return false;
  }
  auto credentials = o->credential_flags.Resolve(argv[0]);
  if (!credentials.ok()) return false;  // Resolve printed why
  o->credentials = std::move(credentials).value();
  return true;
}

using SteadyClock = std::chrono::steady_clock;

int64_t ElapsedNs(SteadyClock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - start).count();
}

// Anonymous memory registered with the client for the run.
class RegisteredMemory {
 public:
  RegisteredMemory(Client& client, uint64_t size) : client_(client), size_(size) {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                   -1, 0);
    if (p == MAP_FAILED) return;
    data_ = static_cast<uint8_t*>(p);
    if (client_.RegisterBuffer(data_, size_) != ErrorCode::OK) {
      munmap(data_, size_);
      data_ = nullptr;
    }
  }
  ~RegisteredMemory() {
    if (data_ == nullptr) return;
    client_.UnregisterBuffer(data_);
    munmap(data_, size_);
  }
  uint8_t* data() const { return data_; }

 private:
  Client& client_;
  const uint64_t size_;
  uint8_t* data_ = nullptr;
};

class BatchGetBench {
 public:
  explicit BatchGetBench(Options o) : o_(std::move(o)) {}

  int Run() {
    if (!SetUp() || !PutAll()) return 1;
    BatchGetRow row;
    row.protocol = o_.protocol;
    row.objects = static_cast<uint64_t>(o_.objects);
    row.size = static_cast<uint64_t>(o_.size);
    row.iters = o_.iters;
    const uint64_t copies_before = client_->local_stats().copies;
    bool ok = TimeBatches(&row) && (embedded_->segment() ? TimeLocalGet(&row) : true);
    row.local_copies = client_->local_stats().copies - copies_before;
    (void)client_->BatchRemove(o_.tenant, keys_, /*force=*/true);
    if (!ok) return 1;
    Emit(row);
    return 0;
  }

 private:
  bool Fail(const std::string& what, ErrorCode rc) {
    std::fprintf(stderr, "shelfmark-perf batchget: %s: %s\n", what.c_str(),
                 std::string(ErrorCodeName(rc)).c_str());
    return false;
  }

  uint64_t Bytes() const { return static_cast<uint64_t>(o_.objects) * o_.size; }

  bool SetUp() {
    EmbeddedOptions eo;
    eo.master = o_.master;
    eo.cluster_id = o_.cluster_id;
    eo.master_token = o_.credentials.master_token;
    eo.cluster_token = o_.credentials.cluster_token;
    eo.protocol = o_.protocol;
    eo.device = o_.device;
    eo.listen_ip = o_.listen_ip;
    eo.segment_size = o_.segment_size >= 0 ? static_cast<uint64_t>(o_.segment_size)
                                           : Bytes() + (16ull << 20);
    eo.staging_bytes = 0;  // every byte moves through registered memory
    if (o_.location_cache) eo.location_cache.max_entries = kLocationCacheEntries;
    const RdmaPlugin rdma = LinkedRdmaPlugin();
    eo.rdma_factory = rdma.factory;
    eo.rdma_device_present = rdma.device_present;
    eo.engine_counters = rdma.counters;
    auto made = EmbeddedClient::Create(std::move(eo));
    if (!made.ok()) return Fail("embedded client", made.error());
    embedded_ = std::move(made).value();
    client_ = embedded_->client();
    src_ = std::make_unique<RegisteredMemory>(*client_, Bytes());
    dst_ = std::make_unique<RegisteredMemory>(*client_, Bytes());
    if (src_->data() == nullptr || dst_->data() == nullptr) {
      return Fail("registered buffers", ErrorCode::NO_AVAILABLE_HANDLE);
    }
    const std::string id = client_->client_id().ToString().substr(0, 8);
    for (int64_t i = 0; i < o_.objects; ++i) {
      keys_.push_back("batchget-" + id + "-" + std::to_string(i));
      uint8_t* at = src_->data() + static_cast<uint64_t>(i) * o_.size;
      for (int64_t b = 0; b < o_.size; ++b) at[b] = static_cast<uint8_t>(b * 7 + i);
      sources_.push_back({at, static_cast<uint64_t>(o_.size)});
      dsts_.push_back({dst_->data() + static_cast<uint64_t>(i) * o_.size,
                       static_cast<uint64_t>(o_.size)});
    }
    return true;
  }

  bool PutAll() {
    PutOptions po;
    if (auto seg = embedded_->segment()) po.config.preferred_segments = {seg->name};
    const std::vector<ErrorCode> put = client_->BatchPutFrom(o_.tenant, keys_, sources_, po);
    for (size_t i = 0; i < put.size(); ++i) {
      if (put[i] != ErrorCode::OK) return Fail("put " + keys_[i], put[i]);
    }
    return true;
  }

  bool TimeBatches(BatchGetRow* row) {
    std::vector<int64_t> ns;
    int64_t total = 0;
    for (int64_t i = 0; i < o_.warmup + o_.iters; ++i) {
      const auto start = SteadyClock::now();
      const auto got = client_->BatchGetInto(o_.tenant, keys_, dsts_);
      const int64_t took = ElapsedNs(start);
      for (size_t k = 0; k < got.size(); ++k) {
        if (!got[k].ok()) return Fail("batch get " + keys_[k], got[k].error());
      }
      if (i < o_.warmup) continue;
      ns.push_back(took);
      total += took;
    }
    if (std::memcmp(src_->data(), dst_->data(), Bytes()) != 0) {
      return Fail("batch get returned wrong bytes", ErrorCode::CHECKSUM_MISMATCH);
    }
    row->batch_gbps = GigabytesPerSecond(Bytes() * static_cast<uint64_t>(o_.iters), total);
    row->batch_p50_us = static_cast<double>(Percentile(&ns, 50)) / 1e3;
    row->batch_p99_us = static_cast<double>(Percentile(&ns, 99)) / 1e3;
    return true;
  }

  // GetInto of the first object (in the own segment) and memcpy of as many
  // bytes, interleaved so that the machine's noise falls on both alike.
  bool TimeLocalGet(BatchGetRow* row) {
    const uint64_t size = static_cast<uint64_t>(o_.size);
    int64_t get_ns = 0, copy_ns = 0;
    for (int64_t i = 0; i < o_.warmup + o_.iters; ++i) {
      auto start = SteadyClock::now();
      auto got = client_->GetInto(o_.tenant, keys_[0], dst_->data(), size);
      const int64_t g = ElapsedNs(start);
      if (!got.ok()) return Fail("get " + keys_[0], got.error());
      start = SteadyClock::now();
      std::memcpy(dst_->data(), src_->data(), size);
      const int64_t c = ElapsedNs(start);
      if (i < o_.warmup) continue;
      get_ns += g;
      copy_ns += c;
    }
    row->local = true;
    row->local_get_gbps = GigabytesPerSecond(size * static_cast<uint64_t>(o_.iters), get_ns);
    row->memcpy_gbps = GigabytesPerSecond(size * static_cast<uint64_t>(o_.iters), copy_ns);
    return true;
  }

  void Emit(const BatchGetRow& r) {
    if (o_.json) {
      std::printf("%s\n", BatchGetJson(r).c_str());
    } else {
      std::printf("batchget %llu x %llu B (%s): p50 %.2f us, p99 %.2f us per batch, %.3f GB/s\n",
                  static_cast<unsigned long long>(r.objects),
                  static_cast<unsigned long long>(r.size), r.protocol.c_str(), r.batch_p50_us,
                  r.batch_p99_us, r.batch_gbps);
      if (r.local) {
        std::printf("same-process get %.3f GB/s, memcpy %.3f GB/s, ratio %.3f (%llu local copies)\n",
                    r.local_get_gbps, r.memcpy_gbps, LocalVsMemcpy(r),
                    static_cast<unsigned long long>(r.local_copies));
      }
    }
    std::fflush(stdout);
  }

  Options o_;
  std::unique_ptr<EmbeddedClient> embedded_;
  Client* client_ = nullptr;
  // Declared after embedded_: unregistered before the client closes.
  std::unique_ptr<RegisteredMemory> src_, dst_;
  std::vector<std::string> keys_;
  std::vector<ConstBuffer> sources_;
  std::vector<MutableBuffer> dsts_;
};

}  // namespace

int RunBatchGetBench(int argc, const char* const* argv) {
  Options o;
  if (!ParseOptions(argc, argv, &o)) return 2;
  return BatchGetBench(std::move(o)).Run();
}

}  // namespace shelfmark
