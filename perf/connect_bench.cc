#include "perf/connect_bench.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "auth/credential_flags.h"
#include "common/flags.h"
#include "perf/bench_util.h"
#include "perf/master_flags.h"
#include "rpc/master_client.h"

namespace shelfmark {
namespace {

struct ConnectOptions {
  std::string master = "127.0.0.1:50051";
  std::string cluster_id;
  int64_t count = 200;
  int64_t calls = 2000;
  bool json = false;
  auth::CredentialFlags credentials;
};

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One probe call: OK when answered (the key is absent by design).
ErrorCode Probe(MasterClient& client) {
  auto exists = client.ExistKey("perf-connect", "connect-probe");
  return exists.ok() ? ErrorCode::OK : exists.error();
}

bool Fail(const char* what, ErrorCode code) {
  std::fprintf(stderr, "shelfmark-perf connect: %s: %s\n", what,
               std::string(ErrorCodeName(code)).c_str());
  return false;
}

// Fresh connections, each until its first answer.
bool TimeConnections(const MasterClientOptions& base, int64_t count, std::vector<int64_t>* ns) {
  for (int64_t i = 0; i < count; ++i) {
    MasterClient client(base);
    const int64_t start = NowNs();
    ErrorCode code = client.Connect();
    if (code == ErrorCode::OK) code = Probe(client);
    ns->push_back(NowNs() - start);
    if (code != ErrorCode::OK) return Fail("connection", code);
  }
  return true;
}

bool TimeCalls(const MasterClientOptions& base, int64_t calls, std::vector<int64_t>* ns) {
  MasterClient client(base);
  if (ErrorCode code = Probe(client); code != ErrorCode::OK) return Fail("first call", code);
  for (int64_t i = 0; i < calls; ++i) {
    const int64_t start = NowNs();
    ErrorCode code = Probe(client);
    ns->push_back(NowNs() - start);
    if (code != ErrorCode::OK) return Fail("call", code);
  }
  return true;
}

}  // namespace

int RunConnectBench(int argc, const char* const* argv) {
  ConnectOptions o;
  FlagSet flags(argv[0]);
  AddMasterFlags(&flags, &o.master, &o.cluster_id);
  flags.AddInt64("count", &o.count, "fresh connections to time", 1, 1'000'000);
  flags.AddInt64("calls", &o.calls, "calls to time on one established connection", 1,
                 100'000'000);
  flags.AddBool("json", &o.json, "one JSON line");
  o.credentials.Add(flags);
  auto credentials = ParseWithMaster(flags, argc, argv, o.master, o.cluster_id, o.credentials);
  if (!credentials) return 2;

  MasterClientOptions base;
  base.address = o.master;
  base.cluster_id = o.cluster_id;
  base.token = credentials->master_token;
  std::vector<int64_t> connect_ns, call_ns;
  if (!TimeConnections(base, o.count, &connect_ns) || !TimeCalls(base, o.calls, &call_ns)) {
    return 1;
  }
  const LatencySummary connect = SummarizeLatencyNs(&connect_ns);
  const LatencySummary call = SummarizeLatencyNs(&call_ns);
  const bool authenticated = !base.token.empty();
  if (o.json) {
    std::printf(
        "{\"bench\":\"connect\",\"authenticated\":%s,\"connections\":%llu,"
        "\"connect_p50_us\":%.1f,\"connect_p99_us\":%.1f,\"calls\":%llu,"
        "\"call_p50_us\":%.1f,\"call_p99_us\":%.1f}\n",
        authenticated ? "true" : "false", static_cast<unsigned long long>(connect.count),
        connect.p50_us, connect.p99_us, static_cast<unsigned long long>(call.count), call.p50_us,
        call.p99_us);
  } else {
    std::printf("%-28s %10s %10s %10s\n", "measure", "count", "p50_us", "p99_us");
    std::printf("%-28s %10llu %10.1f %10.1f\n",
                authenticated ? "connect+handshake+1st call" : "connect+1st call",
                static_cast<unsigned long long>(connect.count), connect.p50_us, connect.p99_us);
    std::printf("%-28s %10llu %10.1f %10.1f\n", "call (established)",
                static_cast<unsigned long long>(call.count), call.p50_us, call.p99_us);
  }
  return 0;
}

}  // namespace shelfmark
