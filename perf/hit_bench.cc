#include "perf/hit_bench.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "auth/credential_flags.h"
#include "client/data_client.h"
#include "client/object_load.h"
#include "common/flags.h"
#include "perf/bench_util.h"
#include "perf/master_flags.h"

namespace shelfmark {
namespace {

constexpr const char* kProgram = "shelfmark-perf hit";

struct HitOptions {
  std::string master = "127.0.0.1:50051";
  std::string cluster_id;
  std::string tenant;
  std::string key;
  std::string compare_key;
  std::string protocol = "auto";
  int64_t iters = 1000;
  bool location_cache = false;
  bool check_bytes = true;
  bool json = false;
  auth::CredentialFlags credentials;
};

// Latencies of the gets one replica type served, and the first get's index.
struct Served {
  std::vector<int64_t> ns;
  int64_t first = -1;
};

int Fail(const std::string& what, ErrorCode code) {
  std::fprintf(stderr, "%s: %s: %s\n", kProgram, what.c_str(),
               std::string(ErrorCodeName(code)).c_str());
  return 1;
}

int64_t NsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              t0)
      .count();
}

void Print(const HitOptions& o, uint64_t size, Served& disk, Served& memory, Served& compare,
           uint64_t wrong) {
  const LatencySummary d = SummarizeLatencyNs(&disk.ns);
  const LatencySummary m = SummarizeLatencyNs(&memory.ns);
  const LatencySummary c = SummarizeLatencyNs(&compare.ns);
  if (o.json) {
    std::printf(
        "{\"bench\":\"hit\",\"key\":\"%s\",\"size\":%llu,\"gets\":%lld,\"disk_gets\":%llu,"
        "\"disk_p50_us\":%.1f,\"memory_gets\":%llu,\"memory_p50_us\":%.1f,"
        "\"first_memory_get\":%lld,\"compare_key\":\"%s\",\"compare_gets\":%llu,"
        "\"compare_p50_us\":%.1f,\"wrong_bytes\":%llu}\n",
        o.key.c_str(), static_cast<unsigned long long>(size), static_cast<long long>(o.iters),
        static_cast<unsigned long long>(d.count), d.p50_us,
        static_cast<unsigned long long>(m.count), m.p50_us, static_cast<long long>(memory.first),
        o.compare_key.c_str(), static_cast<unsigned long long>(c.count), c.p50_us,
        static_cast<unsigned long long>(wrong));
    return;
  }
  std::printf("%-12s %8s %10s %10s %12s\n", "served by", "gets", "p50_us", "p99_us", "first get");
  std::printf("%-12s %8llu %10.1f %10.1f %12lld\n", "LOCAL_DISK",
              static_cast<unsigned long long>(d.count), d.p50_us, d.p99_us,
              static_cast<long long>(disk.first));
  std::printf("%-12s %8llu %10.1f %10.1f %12lld\n", "MEMORY",
              static_cast<unsigned long long>(m.count), m.p50_us, m.p99_us,
              static_cast<long long>(memory.first));
  if (c.count > 0) {
    std::printf("%-12s %8llu %10.1f %10.1f %12s\n", o.compare_key.c_str(),
                static_cast<unsigned long long>(c.count), c.p50_us, c.p99_us, "-");
  }
  if (wrong > 0) std::printf("wrong bytes in %llu gets\n", static_cast<unsigned long long>(wrong));
}

}  // namespace

int RunHitBench(int argc, const char* const* argv) {
  HitOptions o;
  FlagSet flags(argv[0]);
  AddMasterFlags(&flags, &o.master, &o.cluster_id);
  flags.AddString("tenant", &o.tenant, "tenant of the key (\"\": the default tenant)");
  flags.AddString("key", &o.key, "the key to read (it must exist)");
  flags.AddString("compare_key", &o.compare_key,
                  "a key read after each get of --key, timed apart (same size; e.g. one in DRAM "
                  "all along: the baseline, measured interleaved so drift hits both alike)");
  flags.AddString("protocol", &o.protocol, "engine for MEMORY reads (auto, ucx, rdma)");
  flags.AddInt64("iters", &o.iters, "gets to time", 1, 100'000'000);
  flags.AddBool("location_cache", &o.location_cache,
                "reuse a location within its lease (a promotion then shows after the lease)");
  flags.AddBool("check_bytes", &o.check_bytes, "compare the bytes with shelfmark-cli fill's");
  flags.AddBool("json", &o.json, "one JSON line");
  o.credentials.Add(flags);
  auto credentials = ParseWithMaster(flags, argc, argv, o.master, o.cluster_id, o.credentials);
  if (!credentials) return 2;
  if (o.key.empty()) {
    std::fprintf(stderr, "%s: --key is required\n", kProgram);
    return 2;
  }

  ClientOptions co;
  co.master = o.master;
  co.cluster_id = o.cluster_id;
  co.protocol = o.protocol;
  co.transport.cluster_token = credentials->cluster_token;
  co.master_token = credentials->master_token;
  if (!o.location_cache) co.location_cache.max_entries = 0;
  std::unique_ptr<Client> client = CreateDataClient(std::move(co), kProgram);
  if (client == nullptr) return 1;
  auto first = client->Locate(o.tenant, o.key);
  if (!first.ok()) return Fail("locate " + o.key, first.error());
  const uint64_t size = first->info.size;
  std::vector<char> buffer(size);
  if (ErrorCode rc = client->RegisterBuffer(buffer.data(), size); rc != ErrorCode::OK) {
    return Fail("register buffer", rc);
  }
  const std::string expected = o.check_bytes ? LoadValue(o.key, size) : std::string();
  const std::string compare_expected =
      o.check_bytes && !o.compare_key.empty() ? LoadValue(o.compare_key, size) : std::string();
  Served disk, memory, compare;
  uint64_t wrong = 0;
  // One timed get of `key` into the buffer: its latency and whether MEMORY
  // served it, or the failure (printed) as the exit code.
  auto timed_get = [&](const std::string& key, const std::string& bytes, int64_t* ns,
                       bool* from_memory) {
    const auto t0 = std::chrono::steady_clock::now();
    auto loc = client->Locate(o.tenant, key);
    if (!loc.ok()) return Fail("locate " + key, loc.error());
    const ErrorCode rc = client->Read(*loc, buffer.data(), size);
    *ns = NsSince(t0);
    if (rc != ErrorCode::OK) return Fail("read " + key, rc);
    if (loc->info.size != size) return Fail(key + ": not of --key's size", ErrorCode::INVALID_PARAMS);
    *from_memory = loc->info.replicas.front().type == ReplicaType::MEMORY;
    if (o.check_bytes && std::memcmp(buffer.data(), bytes.data(), size) != 0) ++wrong;
    return 0;
  };
  for (int64_t i = 0; i < o.iters; ++i) {
    int64_t ns = 0;
    bool from_memory = false;
    if (int rc = timed_get(o.key, expected, &ns, &from_memory); rc != 0) return rc;
    Served& by = from_memory ? memory : disk;
    if (by.first < 0) by.first = i;
    by.ns.push_back(ns);
    if (o.compare_key.empty()) continue;
    if (int rc = timed_get(o.compare_key, compare_expected, &ns, &from_memory); rc != 0) return rc;
    compare.ns.push_back(ns);
  }
  client->UnregisterBuffer(buffer.data());
  Print(o, size, disk, memory, compare, wrong);
  return wrong == 0 ? 0 : 1;
}

}  // namespace shelfmark
