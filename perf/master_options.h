// The flags of `shelfmark-perf master` and their validation. Every bad value
// is a usage error whose message names the flag.
//
// Thread safety: plain values and a reentrant function.
#pragma once

#include <cstdint>
#include <string>

#include "auth/credential_flags.h"
#include "perf/bench_main.h"
#include "perf/bench_util.h"

namespace shelfmark {

struct MasterBenchOptions {
  std::string master = "127.0.0.1:50051";  // host:port or etcd://...
  std::string cluster_id;  // with an etcd:// master ("" : the environment, then "shelfmark")
  // "" = the master's host, port 9003 (required with an etcd:// master)
  std::string metrics;
  std::string tenant;   // "" = the default tenant
  int64_t connections = 1;
  int64_t batch = 1;
  double seconds = 5;
  int64_t objects = 0;  // > 0: the memory run instead of throughput
  int64_t key_size = 64;
  std::string key_prefix = "pm";
  int64_t keep_keys = 0;
  int64_t value_size = 64;
  int64_t segment_size = 0;  // 0 = automatic
  int64_t timeout_ms = 10'000;
  int64_t keys = 0;              // > 0: at most this many keys are put (and read)
  bool lookup_channel = true;    // MasterClientOptions::lookup_channel
  // Unbatched puts in one round trip (ReservePut once per connection, then
  // CommitPut renewing), as the client library puts; false: PutStart +
  // PutEnd. Puts the master will not reserve for go in two steps.
  bool reserve_puts = true;
  // Batched puts the same way (BatchReservePut, BatchCommitPut), as a
  // client with ClientOptions::reserve_batch_puts puts; off as there.
  bool reserve_batches = false;
  // After the put phase, lookups and then existence checks of what was
  // put, each timed as long as the puts; false: the puts alone (a
  // benchmark of puts, such as scripts/bench_ha.sh, spends no time there).
  bool reads = true;
  bool json = false;
  auth::CredentialFlags credential_flags;  // --cluster_token_file, ...
  HostPort metrics_at;  // resolved from `metrics` (or the default)
  // Resolved from credential_flags by RunMasterBench, after the parser.
  auth::Credentials credentials;
};

// Parses argv[1..argc) (argv[0] names the program in messages). kHelp: the
// usage text is in *message. kBadUsage: *message names the flag and ends
// with the usage text.
FlagOutcome ParseMasterBenchOptions(int argc, const char* const* argv, MasterBenchOptions* o,
                                    std::string* message);

}  // namespace shelfmark
