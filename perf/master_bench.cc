#include "perf/master_bench.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "common/object_key.h"
#include "rpc/master_client.h"
#include "perf/bench_keys.h"
#include "perf/bench_main.h"
#include "perf/bench_segment.h"
#include "perf/bench_util.h"
#include "service/http_client.h"
#include "perf/master_options.h"
#include "perf/master_report.h"
#include "perf/phase_runner.h"
#include "perf/pinger.h"

namespace shelfmark {
namespace {

constexpr uint64_t kSegmentBase = 0x10000000000ULL;  // 1 TiB; bookkeeping only
constexpr uint64_t kGiB = 1ULL << 30;
constexpr int64_t kMemoryBatch = 1024;
constexpr int64_t kRemoveBatch = 1024;
// Puts stop when the segment would be this full at the most pessimistic
// allocator alignment, so eviction (watermark 0.90) never removes benchmark keys.
constexpr double kCapacityGuard = 0.8;
constexpr uint64_t kPessimisticAlignment = 4096;

uint64_t RoundUp(uint64_t n, uint64_t unit) { return (n + unit - 1) / unit * unit; }

class MasterBench {
 public:
  explicit MasterBench(MasterBenchOptions o) : o_(std::move(o)) {
    client_options_.address = o_.master;
    client_options_.cluster_id = o_.cluster_id;
    client_options_.call_timeout_ms = o_.timeout_ms;
    client_options_.token = o_.credentials.master_token;  // the Pinger's too
    client_options_.lookup_channel = o_.lookup_channel;
    // client_options_.client_id: a fresh UUID shared by every connection.
  }

  int Run();

 private:
  uint64_t AlignedValue() const { return RoundUp(static_cast<uint64_t>(o_.value_size), kPessimisticAlignment); }
  ErrorCode Mount(MasterClient* setup);
  void Emit(const MasterResult& r);
  MasterResult ResultOf(const std::string& op, int64_t batch, size_t connections,
                        PhaseOutcome* phase) const;

  // Puts ids handed out from `next` in batches of `batch` until `limit`
  // (exclusive) or the phase ends.
  WorkerFactory PutWorkers(const BenchKeys& keys, std::atomic<uint64_t>* next, uint64_t limit,
                           int64_t batch, std::atomic<bool>* capped) const;
  // Lookups (`exist` false: GetReplicaList; true: ExistKey) of random ids
  // below `id_count`, `batch` keys a call.
  WorkerFactory GetWorkers(const BenchKeys& keys, uint64_t id_count, int64_t batch,
                           bool exist) const;
  // One put in one round trip (as Client::Impl::PutReserved, without the
  // bytes): CommitPut into *held (ReservePut first when there is none),
  // which it renews. nullopt: go in two steps (none to be had, or given
  // back); *refused once the master reserves nothing for this client.
  std::optional<ErrorCode> PutReserved(MasterClient& c, const std::string& key, uint64_t size,
                                       const PutConfig& config,
                                       std::optional<PutReservationGrant>* held,
                                       bool* refused) const;
  // The same for a batch (as Client::Impl::BatchPutReserved): BatchCommitPut
  // into reservations from *held (one BatchReservePut first for those
  // missing), whose renewals go back to *held.
  std::optional<Step> BatchPutReserved(MasterClient& c, const std::vector<std::string>& keys,
                                       uint64_t size, const PutConfig& config,
                                       std::vector<PutReservationGrant>* held, bool* refused) const;
  mutable std::atomic<uint64_t> one_round_trip_{0};  // the put phase's one-round-trip commits
  WorkerFactory RemoveWorkers(const BenchKeys& keys, std::atomic<uint64_t>* next,
                              uint64_t limit) const;
  // Removes ids [--keep_keys, count) with force.
  // Connects a worker's client on the worker thread.
  Result<std::shared_ptr<MasterClient>> Connect() const;

  bool RunThroughput();                // false on a fatal error
  bool RunMemory();                    // false on a fatal error
  void RemoveUnkept(const BenchKeys& keys, uint64_t count, size_t connections);

  MasterBenchOptions o_;
  MasterClientOptions client_options_;
  Segment segment_;
  uint64_t errors_ = 0;
  bool printed_header_ = false;
};

Result<std::shared_ptr<MasterClient>> MasterBench::Connect() const {
  auto client = std::make_shared<MasterClient>(client_options_);
  ErrorCode rc = client->Connect();
  if (rc != ErrorCode::OK) return rc;
  return client;
}

ErrorCode MasterBench::Mount(MasterClient* setup) {
  uint64_t size = static_cast<uint64_t>(o_.segment_size);
  if (size == 0) {
    // Generous: the segment is bookkeeping only, and a roomy one keeps the
    // directory far below its eviction watermark.
    size = std::max<uint64_t>(256 * kGiB, 2 * static_cast<uint64_t>(o_.objects) * AlignedValue());
  }
  size = RoundUp(size, 1 << 20);
  segment_ = BookkeepingSegment("perf", 0, size);
  // A segment left by a killed run (until client_ttl expires) may overlap
  // the fixed base; shift past it.
  ErrorCode rc = ErrorCode::OK;
  for (int attempt = 0; attempt < 16; ++attempt) {
    segment_.base = kSegmentBase + static_cast<uint64_t>(attempt) * RoundUp(size, kGiB);
    rc = setup->MountSegment(segment_);
    if (rc != ErrorCode::INVALID_PARAMS) break;
  }
  return rc;
}

void MasterBench::Emit(const MasterResult& r) {
  if (o_.json) {
    std::printf("%s\n", MasterResultJson(r).c_str());
  } else {
    if (!printed_header_) {
      std::printf("%s\n", MasterResultTableHeader().c_str());
      printed_header_ = true;
    }
    std::printf("%s\n", MasterResultTableRow(r).c_str());
  }
  std::fflush(stdout);
  errors_ += r.errors;
}

MasterResult MasterBench::ResultOf(const std::string& op, int64_t batch, size_t connections,
                                   PhaseOutcome* phase) const {
  MasterResult r;
  r.op = op;
  r.batch = batch;
  r.connections = static_cast<int64_t>(connections);
  r.key_size = o_.key_size;
  r.value_size = o_.value_size;
  r.seconds = phase->seconds;
  r.calls = phase->calls;
  r.keys = phase->ok;
  r.errors = phase->errors;
  r.interrupted = phase->stopped;
  LatencySummary s = SummarizeLatencyNs(&phase->latencies_ns);
  r.p50_us = s.p50_us;
  r.p99_us = s.p99_us;
  r.max_us = s.max_us;
  return r;
}

WorkerFactory MasterBench::PutWorkers(const BenchKeys& keys, std::atomic<uint64_t>* next,
                                      uint64_t limit, int64_t batch,
                                      std::atomic<bool>* capped) const {
  return [this, &keys, next, limit, batch, capped](size_t) -> Result<StepFn> {
    auto client = Connect();
    if (!client.ok()) return client.error();
    struct State {
      std::vector<std::string> keys;
      std::vector<uint64_t> sizes;
      std::optional<PutReservationGrant> reservation;       // this connection's, for its next put
      std::vector<PutReservationGrant> batch_reservations;  // ... for its next batch
      bool refused = false;                                 // the master reserves nothing
    };
    auto st = std::make_shared<State>();
    PutConfig config;
    config.replica_num = 1;
    uint64_t value_size = static_cast<uint64_t>(o_.value_size);
    return StepFn([this, c = *client, st, config, value_size, &keys, next, limit, batch,
                   capped]() -> Step {
      uint64_t first = next->fetch_add(static_cast<uint64_t>(batch));
      if (first >= limit) {
        if (capped != nullptr) capped->store(true);
        return Step{.done = true};
      }
      uint64_t n = std::min<uint64_t>(static_cast<uint64_t>(batch), limit - first);
      st->keys.resize(n);
      st->sizes.assign(n, value_size);
      for (uint64_t i = 0; i < n; ++i) keys.Make(first + i, &st->keys[i]);
      Step s;
      if (batch == 1 && o_.reserve_puts && !st->refused) {
        if (std::optional<ErrorCode> rc = PutReserved(*c, st->keys[0], value_size, config,
                                                      &st->reservation, &st->refused)) {
          (*rc == ErrorCode::OK ? s.ok : s.errors) += 1;
          return s;
        }
      }
      if (batch == 1) {
        auto started = c->PutStart(o_.tenant, st->keys[0], value_size, config);
        ErrorCode rc = started.ok() ? c->PutEnd(o_.tenant, st->keys[0]) : started.error();
        (rc == ErrorCode::OK ? s.ok : s.errors) += 1;
        return s;
      }
      if (o_.reserve_batches && !st->refused) {
        if (std::optional<Step> done = BatchPutReserved(*c, st->keys, value_size, config,
                                                        &st->batch_reservations, &st->refused)) {
          return *done;
        }
      }
      auto started = c->BatchPutStart(o_.tenant, st->keys, st->sizes, config);
      if (!started.ok()) return Step{.errors = n};
      std::vector<std::string> placed;
      placed.reserve(n);
      for (uint64_t i = 0; i < n; ++i) {
        if ((*started)[i].ok()) placed.push_back(std::move(st->keys[i]));
        else ++s.errors;
      }
      if (placed.empty()) return s;
      auto ended = c->BatchPutEnd(o_.tenant, placed);
      if (!ended.ok()) return Step{.errors = n};
      for (ErrorCode rc : *ended) (rc == ErrorCode::OK ? s.ok : s.errors) += 1;
      return s;
    });
  };
}

std::optional<ErrorCode> MasterBench::PutReserved(MasterClient& c, const std::string& key,
                                                  uint64_t size, const PutConfig& config,
                                                  std::optional<PutReservationGrant>* held,
                                                  bool* refused) const {
  if (!*held) {
    auto grant = c.ReservePut(o_.tenant, size, config);
    if (!grant.ok()) {
      *refused = MasterClient::ReservationRefusalLasts(grant.error());
      return std::nullopt;
    }
    *held = std::move(*grant);
  }
  // (No bytes move in this benchmark: a client writes the value now.)
  auto committed = c.CommitPut(o_.tenant, key, (*held)->id, config, /*renew=*/true);
  if (committed.ok()) {
    *held = std::move(*committed);
    one_round_trip_.fetch_add(1, std::memory_order_relaxed);
    return ErrorCode::OK;
  }
  if (committed.error() == ErrorCode::LEASE_EXPIRED) {
    held->reset();
    return std::nullopt;
  }
  return committed.error();
}

std::optional<Step> MasterBench::BatchPutReserved(MasterClient& c,
                                                  const std::vector<std::string>& keys,
                                                  uint64_t size, const PutConfig& config,
                                                  std::vector<PutReservationGrant>* held,
                                                  bool* refused) const {
  const size_t n = keys.size();
  if (held->size() < n) {
    auto grants =
        c.BatchReservePut(o_.tenant, std::vector<uint64_t>(n - held->size(), size), config);
    if (!grants.ok()) {
      *refused = MasterClient::ReservationRefusalLasts(grants.error());
      return std::nullopt;
    }
    for (PutReservationGrant& g : *grants) held->push_back(std::move(g));
  }
  std::vector<uint64_t> ids;
  for (size_t i = held->size() - n; i < held->size(); ++i) ids.push_back((*held)[i].id);
  held->resize(held->size() - n);
  // (No bytes move in this benchmark: a client writes the values now.)
  auto committed = c.BatchCommitPut(o_.tenant, keys, ids, {}, config, /*renew=*/true);
  if (!committed.ok()) return Step{.errors = n};
  Step s;
  for (auto& r : *committed) {
    if (!r.ok()) {
      ++s.errors;
      continue;
    }
    ++s.ok;
    if (*r) held->push_back(std::move(**r));
  }
  one_round_trip_.fetch_add(s.ok, std::memory_order_relaxed);
  return s;
}

WorkerFactory MasterBench::GetWorkers(const BenchKeys& keys, uint64_t id_count, int64_t batch,
                                      bool exist) const {
  return [this, &keys, id_count, batch, exist](size_t index) -> Result<StepFn> {
    auto client = Connect();
    if (!client.ok()) return client.error();
    auto names = std::make_shared<std::vector<std::string>>(static_cast<size_t>(batch));
    auto rng = std::make_shared<std::mt19937_64>(0x5eed + index * 7919);
    return StepFn([this, c = *client, names, rng, &keys, id_count, batch, exist]() -> Step {
      std::uniform_int_distribution<uint64_t> pick(0, id_count - 1);
      for (auto& name : *names) keys.Make(pick(*rng), &name);
      Step s;
      // An existence check counts as OK only when the key is there.
      if (exist && batch == 1) {
        auto there = c->ExistKey(o_.tenant, (*names)[0]);
        (there.ok() && *there ? s.ok : s.errors) += 1;
        return s;
      }
      if (exist) {
        auto there = c->BatchExistKey(o_.tenant, *names);
        if (!there.ok()) return Step{.errors = static_cast<uint64_t>(batch)};
        for (const auto& one : *there) (one.ok() && *one ? s.ok : s.errors) += 1;
        return s;
      }
      if (batch == 1) {
        (c->GetReplicaList(o_.tenant, (*names)[0]).ok() ? s.ok : s.errors) += 1;
        return s;
      }
      auto got = c->BatchGetReplicaList(o_.tenant, *names);
      if (!got.ok()) return Step{.errors = static_cast<uint64_t>(batch)};
      for (const auto& one : *got) (one.ok() ? s.ok : s.errors) += 1;
      return s;
    });
  };
}

WorkerFactory MasterBench::RemoveWorkers(const BenchKeys& keys, std::atomic<uint64_t>* next,
                                         uint64_t limit) const {
  return [this, &keys, next, limit](size_t) -> Result<StepFn> {
    auto client = Connect();
    if (!client.ok()) return client.error();
    auto names = std::make_shared<std::vector<std::string>>();
    return StepFn([this, c = *client, names, &keys, next, limit]() -> Step {
      uint64_t first = next->fetch_add(kRemoveBatch);
      if (first >= limit) return Step{.done = true};
      uint64_t n = std::min<uint64_t>(kRemoveBatch, limit - first);
      names->resize(n);
      for (uint64_t i = 0; i < n; ++i) keys.Make(first + i, &(*names)[i]);
      auto removed = c->BatchRemove(o_.tenant, *names, /*force=*/true);
      // OBJECT_NOT_FOUND is fine: a failed put, or evicted.
      Step s;
      if (!removed.ok()) return Step{.errors = n};
      for (ErrorCode rc : *removed) {
        (rc == ErrorCode::OK || rc == ErrorCode::OBJECT_NOT_FOUND ? s.ok : s.errors) += 1;
      }
      return s;
    });
  };
}

void MasterBench::RemoveUnkept(const BenchKeys& keys, uint64_t count, size_t connections) {
  const uint64_t first = static_cast<uint64_t>(o_.keep_keys);
  if (count <= first) return;
  std::atomic<uint64_t> next{first};
  PhaseSpec spec{.label = "remove", .workers = connections, .seconds = 0, .stop = nullptr};
  PhaseOutcome out = RunPhase(spec, RemoveWorkers(keys, &next, count));
  if (out.setup_error != ErrorCode::OK || out.errors != 0) {
    std::fprintf(stderr, "shelfmark-perf master: cleanup left keys behind (%s, %llu errors)\n",
                 std::string(ErrorCodeName(out.setup_error)).c_str(),
                 static_cast<unsigned long long>(out.errors));
  }
}

bool MasterBench::RunThroughput() {
  const size_t conns = static_cast<size_t>(o_.connections);
  const std::string shape =
      " batch=" + std::to_string(o_.batch) + " conns=" + std::to_string(o_.connections);
  BenchKeys keys(o_.key_prefix, segment_.id, 't', static_cast<size_t>(o_.key_size));
  uint64_t limit =
      static_cast<uint64_t>(kCapacityGuard * static_cast<double>(segment_.size)) / AlignedValue();
  if (o_.keys > 0) limit = std::min(limit, static_cast<uint64_t>(o_.keys));
  std::atomic<uint64_t> next{0};
  std::atomic<bool> capped{false};

  PhaseSpec put{.label = "put" + shape, .workers = conns, .seconds = o_.seconds,
                .stop = &InterruptFlag()};
  PhaseOutcome put_out = RunPhase(put, PutWorkers(keys, &next, limit, o_.batch, &capped));
  if (put_out.setup_error != ErrorCode::OK) {
    std::fprintf(stderr, "shelfmark-perf master: connect failed: %s\n",
                 std::string(ErrorCodeName(put_out.setup_error)).c_str());
    return false;
  }
  const uint64_t attempted = std::min(next.load(), limit);
  MasterResult put_result = ResultOf("put", o_.batch, conns, &put_out);
  put_result.capped = capped.load();
  put_result.one_round_trip = one_round_trip_.load();
  Emit(put_result);

  // Lookups, then existence checks, of what was put (unless --reads=false).
  for (const bool exist : {false, true}) {
    if (!o_.reads || InterruptFlag().load() || put_out.ok == 0) break;
    const std::string op = exist ? "exist_key" : "get_replica_list";
    PhaseSpec read{.label = op + shape, .workers = conns, .seconds = o_.seconds,
                   .stop = &InterruptFlag()};
    PhaseOutcome read_out = RunPhase(read, GetWorkers(keys, attempted, o_.batch, exist));
    if (read_out.setup_error == ErrorCode::OK) Emit(ResultOf(op, o_.batch, conns, &read_out));
  }
  RemoveUnkept(keys, attempted, std::max<size_t>(conns, 4));
  return true;
}

bool MasterBench::RunMemory() {
  auto scrape = [&](uint64_t* rss, uint64_t* key_count) {
    Result<HttpReply> page = HttpGet(o_.metrics_at, "/metrics");
    if (!page.ok() || page->status != 200) {
      std::fprintf(stderr, "shelfmark-perf master: cannot read http://%s/metrics\n",
                   o_.metrics_at.ToString().c_str());
      return false;
    }
    auto r = PrometheusValue(page->body, "process_resident_memory_bytes");
    auto k = PrometheusValue(page->body, "shelfmark_master_keys");
    if (!r || !k) {
      std::fprintf(stderr, "shelfmark-perf master: /metrics lacks process_resident_memory_bytes or "
                           "shelfmark_master_keys\n");
      return false;
    }
    *rss = static_cast<uint64_t>(*r);
    *key_count = static_cast<uint64_t>(*k);
    return true;
  };
  const size_t conns = std::max<size_t>(static_cast<size_t>(o_.connections), 4);
  const uint64_t n = static_cast<uint64_t>(o_.objects);
  BenchKeys keys(o_.key_prefix, segment_.id, 'm', static_cast<size_t>(o_.key_size));
  MemoryFigures m;
  if (!scrape(&m.rss_before, &m.key_count_before)) return false;
  if (m.key_count_before > 0) {
    std::fprintf(stderr,
                 "shelfmark-perf master: the master already holds %llu keys; bytes_per_object "
                 "is only clean on a freshly started master\n",
                 static_cast<unsigned long long>(m.key_count_before));
  }

  std::atomic<uint64_t> next{0};
  PhaseSpec put{.label = "memory put objects=" + std::to_string(n), .workers = conns,
                .seconds = 0, .stop = &InterruptFlag()};
  PhaseOutcome out = RunPhase(put, PutWorkers(keys, &next, n, kMemoryBatch, nullptr));
  if (out.setup_error != ErrorCode::OK) {
    std::fprintf(stderr, "shelfmark-perf master: connect failed: %s\n",
                 std::string(ErrorCodeName(out.setup_error)).c_str());
    return false;
  }
  bool scraped = scrape(&m.rss_after, &m.key_count_after);
  m.objects = out.ok;
  m.average_key_bytes = static_cast<double>(o_.key_size);  // every key is exactly key_size
  MasterResult r = ResultOf("memory", kMemoryBatch, conns, &out);
  if (scraped) r.memory = m;
  Emit(r);
  RemoveUnkept(keys, std::min(next.load(), n), conns);
  return scraped;
}

int MasterBench::Run() {
  MasterClient setup(client_options_);
  if (ErrorCode rc = setup.Connect(); rc != ErrorCode::OK) {
    std::fprintf(stderr, "shelfmark-perf master: cannot reach master at %s: %s\n", o_.master.c_str(),
                 std::string(ErrorCodeName(rc)).c_str());
    return 1;
  }
  if (ErrorCode rc = Mount(&setup); rc != ErrorCode::OK) {
    std::fprintf(stderr, "shelfmark-perf master: MountSegment failed: %s\n",
                 std::string(ErrorCodeName(rc)).c_str());
    return 1;
  }
  bool ok;
  uint64_t ping_failures;
  {
    Pinger pinger(client_options_, segment_);
    if (!o_.json) {
      std::printf("# shelfmark-perf master: master=%s tenant=%s key_size=%lld value_size=%lld\n",
                  o_.master.c_str(), std::string(EffectiveTenant(o_.tenant)).c_str(),
                  static_cast<long long>(o_.key_size), static_cast<long long>(o_.value_size));
    }
    ok = o_.objects > 0 ? RunMemory() : RunThroughput();
    ping_failures = pinger.failures();
  }
  if (o_.keep_keys > 0) {
    // Unmounting would drop every replica in the segment, kept keys included.
    std::fprintf(stderr,
                 "shelfmark-perf master: kept up to %lld keys; segment %s stays mounted until "
                 "the master expires client %s (client_ttl)\n",
                 static_cast<long long>(o_.keep_keys), segment_.name.c_str(),
                 client_options_.client_id.ToString().c_str());
  } else if (ErrorCode rc = setup.UnmountSegment(segment_.id); rc != ErrorCode::OK) {
    std::fprintf(stderr, "shelfmark-perf master: UnmountSegment failed: %s\n",
                 std::string(ErrorCodeName(rc)).c_str());
  }
  if (ping_failures > 0) {
    std::fprintf(stderr, "shelfmark-perf master: %llu pings failed\n",
                 static_cast<unsigned long long>(ping_failures));
  }
  if (InterruptFlag().load()) return 130;
  if (!ok) return 1;
  if (errors_ > 0) {
    std::fprintf(stderr, "shelfmark-perf master: %llu non-OK answers\n",
                 static_cast<unsigned long long>(errors_));
    return 1;
  }
  return 0;
}

}  // namespace

int RunMasterBench(int argc, const char* const* argv) {
  MasterBenchOptions o;
  std::string message;
  const int exit_code = ExitCodeFor(ParseMasterBenchOptions(argc, argv, &o, &message), message);
  if (exit_code >= 0) return exit_code;
  auto credentials = o.credential_flags.Resolve(argv[0]);
  if (!credentials.ok()) return 2;  // Resolve printed why
  o.credentials = std::move(credentials).value();
  InterruptFlag();  // Ctrl-C ends the current phase
  return MasterBench(std::move(o)).Run();
}

}  // namespace shelfmark
