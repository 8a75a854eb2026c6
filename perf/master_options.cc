#include "perf/master_options.h"

#include <optional>

#include "common/flags.h"
#include "common/object_key.h"
#include "perf/bench_keys.h"
#include "perf/master_flags.h"

namespace shelfmark {
namespace {

constexpr int64_t kMinKeySize = 2 + BenchKeys::kIdBytes;  // with the default prefix "pm"

void AddFlags(FlagSet* flags, MasterBenchOptions* o) {
  AddMasterFlags(flags, &o->master, &o->cluster_id);
  flags->AddString("metrics", &o->metrics,
                   "HOST:PORT of the master's HTTP /metrics (default: master host, port 9003; "
                   "required with an etcd:// --master)");
  flags->AddString("tenant", &o->tenant, "tenant of the benchmark keys (\"\" = default)");
  flags->AddInt64("connections", &o->connections, "client threads, one connection each", 1,
                  1024);
  flags->AddInt64("batch", &o->batch, "keys per call (1: single RPCs, >1: batch RPCs)", 1,
                  65536);
  flags->AddDouble("seconds", &o->seconds, "duration of each timed op", 0.1, 86400);
  flags->AddInt64("objects", &o->objects,
                  "N > 0: measure the master's DRAM per object with N objects instead of "
                  "throughput (use a freshly started master: memory freed by earlier runs is "
                  "reused and hides part of the cost)",
                  0, 1'000'000'000);
  flags->AddInt64("key_size", &o->key_size, "bytes per key", kMinKeySize,
                  static_cast<int64_t>(kMaxKeyLength));
  flags->AddString("key_prefix", &o->key_prefix,
                   "keys are PREFIX<run id><phase>-<12-digit id>, padded with 'x' to --key_size");
  flags->AddInt64("keep_keys", &o->keep_keys,
                  "leave this many benchmark keys in place (and the segment mounted; they go "
                  "when the master expires the client after client_ttl)",
                  0, 1'000'000'000);
  flags->AddInt64("value_size", &o->value_size, "object size registered per put", 1, 1LL << 30);
  flags->AddInt64("segment_size", &o->segment_size,
                  "bytes of the bookkeeping segment (0 = automatic)", 0, 1LL << 50);
  flags->AddInt64("timeout_ms", &o->timeout_ms, "per-RPC timeout", 1, 3'600'000);
  flags->AddInt64("keys", &o->keys,
                  "N > 0: put at most N keys, so the get phase reads among N keys (0: as many "
                  "as the put phase fits in --seconds)",
                  0, 1'000'000'000);
  flags->AddBool("lookup_channel", &o->lookup_channel,
                 "lookups over the master's lookup channel (false: Cap'n Proto RPC)");
  flags->AddBool("reserve_puts", &o->reserve_puts,
                 "unbatched puts in one round trip into ranges reserved ahead, as the client "
                 "library puts (false: PutStart + PutEnd)");
  flags->AddBool("reserve_batches", &o->reserve_batches,
                 "batched puts in one round trip into ranges reserved ahead (BatchCommitPut), as "
                 "a client with reserve_batch_puts puts (false: BatchPutStart + BatchPutEnd)");
  flags->AddBool("reads", &o->reads,
                 "after the puts, time lookups and existence checks of what was put (false: "
                 "puts only)");
  flags->AddBool("json", &o->json, "one JSON object per result line");
  o->credential_flags.Add(*flags);
}

// "" when the parsed values are consistent, else what is wrong.
std::string Check(const FlagSet& flags, MasterBenchOptions* o) {
  if (!flags.positional().empty()) return "unexpected argument '" + flags.positional()[0] + "'";
  if (std::string error = CheckMasterFlags(o->master, o->cluster_id); !error.empty()) {
    return error;
  }
  if (o->metrics.empty() && FollowsLeader(o->master)) {
    return "flag --metrics is required with an etcd:// --master (the leader's host is not "
           "known before the run)";
  }
  std::optional<HostPort> metrics = o->metrics.empty()
                                        ? HostPort{ParseHostPort(o->master)->host, 9003}
                                        : ParseHostPort(o->metrics);
  if (!metrics) return "flag --metrics expects HOST:PORT, got '" + o->metrics + "'";
  o->metrics_at = *metrics;
  if (!o->tenant.empty() && ValidateTenant(o->tenant) != ErrorCode::OK) {
    return "flag --tenant must be 1.." + std::to_string(kMaxTenantLength) + " bytes";
  }
  if (o->key_prefix.size() + BenchKeys::kIdBytes > static_cast<size_t>(o->key_size)) {
    return "flag --key_prefix leaves no room: --key_size must be at least " +
           std::to_string(o->key_prefix.size() + BenchKeys::kIdBytes);
  }
  if (o->segment_size != 0 && o->segment_size < (1 << 20)) {
    return "flag --segment_size must be 0 (automatic) or at least 1048576";
  }
  return "";
}

}  // namespace

FlagOutcome ParseMasterBenchOptions(int argc, const char* const* argv, MasterBenchOptions* o,
                                    std::string* message) {
  return ParseBenchFlags(
      argc, argv, [o](FlagSet* f) { AddFlags(f, o); },
      [o](const FlagSet& f) { return Check(f, o); }, message);
}

}  // namespace shelfmark
