// The flags of `shelfmark-perf get` (perf/get_bench.h) and their validation.
// Every bad value is a usage error whose message names the flag.
//
// Thread safety: plain values and a reentrant function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "auth/credential_flags.h"
#include "perf/key_chooser.h"
#include "perf/master_options.h"

namespace shelfmark {

inline constexpr const char* kReplicaMemory = "memory";
inline constexpr const char* kReplicaLocalDisk = "local_disk";

struct GetBenchOptions {
  std::string master = "127.0.0.1:50051";  // host:port or etcd://...
  std::string cluster_id;  // with an etcd:// master
  std::string replica = "all";  // memory | local_disk | all
  std::string protocol = "auto";
  std::string sizes_text = "4096,65536,1048576";
  int64_t iters = 1000;    // timed gets per replica type and size, all threads together
  int64_t warmup = 50;     // untimed gets first, per thread
  int64_t concurrency = 1;
  int64_t keys = 16;       // objects per size
  std::string key_dist = "uniform";
  double zipf_theta = 0.99;
  int64_t batch = 1;
  // The client's location cache (kLocationCacheEntries); false: every get
  // asks the master.
  bool location_cache = true;
  bool lookup_channel = true;  // ClientOptions::lookup_channel
  std::string disk_dirs_text;  // where nodes keep their SSD files (pread baseline)
  int64_t offload_wait_s = 60;
  bool json = false;
  std::string json_out;  // also write the JSON lines to this file ("" = no)
  std::string plot;  // PNG path; "" = none
  auth::CredentialFlags credential_flags;  // --cluster_token_file, ...
  std::string device;
  std::string tenant = "perf-get";

  // Derived by the parser.
  std::vector<std::string> replicas;  // in measuring order
  std::vector<uint64_t> sizes;
  std::vector<std::string> disk_dirs;
  KeyDistribution distribution = KeyDistribution::kUniform;
  // Resolved from credential_flags by RunGetBench, after the parser.
  auth::Credentials credentials;
};

// Parses argv[1..argc) (argv[0] names the program in messages), as
// ParseMasterBenchOptions does: kHelp with the usage in *message, kBadUsage
// with a message naming the flag.
FlagOutcome ParseGetBenchOptions(int argc, const char* const* argv, GetBenchOptions* o,
                                 std::string* message);

}  // namespace shelfmark
