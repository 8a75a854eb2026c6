#include "perf/failover_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "auth/credential_flags.h"
#include "common/flags.h"
#include "perf/bench_segment.h"
#include "perf/master_flags.h"
#include "perf/pinger.h"
#include "rpc/master_client.h"

namespace shelfmark {
namespace {

constexpr const char* kProgram = "shelfmark-perf failover";

struct FailoverOptions {
  std::string master = "127.0.0.1:50051";
  std::string cluster_id;
  double seconds = 10;
  int64_t gap_ms = 200;
  int64_t timeout_ms = 15'000;
  std::string put_log;
  int64_t retry_pause_ms = 0;
  auth::CredentialFlags credentials;
};

using Clock = std::chrono::steady_clock;

int64_t RealtimeNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double MsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// A bookkeeping segment (the bench only registers puts), at a range of its
// own (another run's may still be mounted).
Segment BenchSegment() {
  Segment s = BookkeepingSegment("failover", 0, 1ull << 30);
  s.base = (1ull << 40) + (s.id.lo % 4096) * (1ull << 30);
  return s;
}

}  // namespace

int RunFailoverBench(int argc, const char* const* argv) {
  FailoverOptions o;
  FlagSet flags(argv[0]);
  AddMasterFlags(&flags, &o.master, &o.cluster_id);
  flags.AddDouble("seconds", &o.seconds, "how long to put", 0.1, 86400);
  flags.AddInt64("gap_ms", &o.gap_ms, "report gaps between acknowledged puts longer than this",
                 1, 3'600'000);
  flags.AddInt64("timeout_ms", &o.timeout_ms, "per-call timeout (a call follows the leader "
                 "within it)", 1, 3'600'000);
  flags.AddString("put_log", &o.put_log, "append one JSON line per put (key, result, "
                  "CLOCK_REALTIME start_ns and end_ns) to this file");
  flags.AddInt64("retry_pause_ms", &o.retry_pause_ms, "pause after a failed put", 0, 60'000);
  o.credentials.Add(flags);
  auto credentials = ParseWithMaster(flags, argc, argv, o.master, o.cluster_id, o.credentials);
  if (!credentials) return 2;
  MasterClientOptions mo;
  mo.address = o.master;
  mo.cluster_id = o.cluster_id;
  mo.call_timeout_ms = o.timeout_ms;
  mo.token = credentials->master_token;
  FILE* put_log = nullptr;
  if (!o.put_log.empty() && (put_log = std::fopen(o.put_log.c_str(), "a")) == nullptr) {
    std::fprintf(stderr, "%s: cannot open --put_log=%s\n", kProgram, o.put_log.c_str());
    return 2;
  }
  MasterClient client(mo);
  const Segment segment = BenchSegment();
  if (ErrorCode rc = client.MountSegment(segment); rc != ErrorCode::OK) {
    std::fprintf(stderr, "%s: mount: %s\n", kProgram, std::string(ErrorCodeName(rc)).c_str());
    if (put_log != nullptr) std::fclose(put_log);
    return 1;
  }
  Pinger pinger(mo, segment);

  std::vector<std::string> acked;
  std::vector<double> gaps;
  uint64_t failed = 0;
  const auto end = Clock::now() + std::chrono::duration<double>(o.seconds);
  auto last_ack = Clock::now();
  for (uint64_t i = 0; Clock::now() < end; ++i) {
    const std::string key = "failover-" + segment.id.ToString() + "-" + std::to_string(i);
    const int64_t start_ns = RealtimeNs();
    auto started = client.PutStart("", key, 64, {});
    const ErrorCode rc = started.ok() ? client.PutEnd("", key) : started.error();
    if (put_log != nullptr) {
      std::fprintf(put_log,
                   "{\"put\":%llu,\"key\":\"%s\",\"result\":\"%s\",\"start_ns\":%lld,"
                   "\"end_ns\":%lld}\n",
                   static_cast<unsigned long long>(i), key.c_str(),
                   std::string(ErrorCodeName(rc)).c_str(), static_cast<long long>(start_ns),
                   static_cast<long long>(RealtimeNs()));
      std::fflush(put_log);
    }
    if (rc != ErrorCode::OK) {
      ++failed;
      if (o.retry_pause_ms > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(o.retry_pause_ms));
      }
      continue;
    }
    const auto now = Clock::now();
    if (MsBetween(last_ack, now) > static_cast<double>(o.gap_ms)) {
      gaps.push_back(MsBetween(last_ack, now));
      std::printf("{\"bench\":\"failover\",\"gap_ms\":%.1f}\n", gaps.back());
      std::fflush(stdout);
    }
    last_ack = now;
    acked.push_back(key);
  }
  uint64_t lost = 0;
  for (const std::string& key : acked) {
    auto r = client.GetReplicaList("", key);
    if (!r.ok()) {
      if (++lost <= 5) {
        std::fprintf(stderr, "%s: acknowledged %s is gone: %s\n", kProgram, key.c_str(),
                     std::string(ErrorCodeName(r.error())).c_str());
      }
    }
  }
  double max_gap = 0;
  for (double g : gaps) max_gap = std::max(max_gap, g);
  std::printf(
      "{\"bench\":\"failover_summary\",\"acked\":%zu,\"failed_puts\":%llu,\"lost\":%llu,"
      "\"gaps\":%zu,\"max_gap_ms\":%.1f}\n",
      acked.size(), static_cast<unsigned long long>(failed), static_cast<unsigned long long>(lost),
      gaps.size(), max_gap);
  for (size_t i = 0; i < acked.size(); i += 1000) {  // only this run's keys
    const size_t n = std::min<size_t>(1000, acked.size() - i);
    (void)client.BatchRemove("", {acked.begin() + i, acked.begin() + i + n}, /*force=*/true);
  }
  (void)client.UnmountSegment(segment.id);
  if (put_log != nullptr) std::fclose(put_log);
  return lost == 0 ? 0 : 1;
}

}  // namespace shelfmark
