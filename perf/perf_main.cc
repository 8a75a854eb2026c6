// shelfmark-perf: benchmarks of Shelfmark, one subcommand each.
//   shelfmark-perf master --master=HOST:PORT [...]   master RPC throughput, latency, DRAM/object
//   shelfmark-perf read --master=HOST:PORT --protocol=rdma|ucx [...]   MEMORY read latency vs raw engine
//   shelfmark-perf snapshot --objects=N[,N...] [...]   snapshot pause, size, copy-on-write, restore
//   shelfmark-perf get --master=HOST:PORT --replica=memory|local_disk|all [...]   get latency per replica type
//   shelfmark-perf disk --objects=N [...]   SSD backends: batch writes and restart (index rebuild) time
//   shelfmark-perf connect --master=HOST:PORT [...]   master connection set-up (with its handshake) and call cost
//   shelfmark-perf hit --master=HOST:PORT --key=KEY [...]   one key read repeatedly: served by SSD, then promoted
//   shelfmark-perf batchget --master=HOST:PORT [...]   zero-copy BatchGetInto and same-process get vs memcpy
// The subcommand is the first positional argument; its flags follow anywhere.
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "perf/batchget_bench.h"
#include "perf/connect_bench.h"
#include "perf/failover_bench.h"
#include "perf/hit_bench.h"
#include "perf/disk_bench.h"
#include "perf/get_bench.h"
#include "perf/master_bench.h"
#include "perf/read_bench.h"
#include "perf/snapshot_bench.h"

namespace {

struct Subcommand {
  const char* name;
  const char* summary;
  int (*run)(int argc, const char* const* argv);
};

// New benchmarks add a row here.
constexpr Subcommand kSubcommands[] = {
    {"master", "master RPC throughput and latency (put, get_replica_list), DRAM per object",
     shelfmark::RunMasterBench},
    {"read", "MEMORY read latency and bandwidth, Shelfmark's path vs the raw engine",
     shelfmark::RunReadBench},
    {"snapshot", "snapshot pause (lock + fork), child time, bytes, copy-on-write, restore",
     shelfmark::RunSnapshotBench},
    {"get", "get latency per replica type (MEMORY, LOCAL_DISK): lookup, transfer, whole get",
     shelfmark::RunGetBench},
    {"disk", "SSD backends (bucket, offset allocator): batch writes, restart time",
     shelfmark::RunDiskBench},
    {"connect", "master connection set-up (TCP, token handshake, first call) and call latency",
     shelfmark::RunConnectBench},
    {"hit", "one key read repeatedly, each get attributed to the replica that served it (promotion)",
     shelfmark::RunHitBench},
    {"batchget", "zero-copy BatchGetInto of N objects, and a same-process get vs memcpy",
     shelfmark::RunBatchGetBench},
    {"failover", "puts through the leader (etcd://) and the gaps a leader's death leaves",
     shelfmark::RunFailoverBench},
};

void PrintUsage(FILE* out) {
  std::fprintf(out, "usage: shelfmark-perf SUBCOMMAND [--flag=value ...]\nsubcommands:\n");
  for (const Subcommand& s : kSubcommands) std::fprintf(out, "  %-10s %s\n", s.name, s.summary);
  std::fprintf(out, "Run `shelfmark-perf SUBCOMMAND --help` for its flags.\n");
}

}  // namespace

int main(int argc, char** argv) {
  // The first argument that is not a flag names the subcommand.
  int at = 1;
  while (at < argc && std::strncmp(argv[at], "--", 2) == 0 && std::strcmp(argv[at], "--") != 0) {
    ++at;
  }
  if (at < argc && std::strcmp(argv[at], "--") == 0) ++at;
  if (at >= argc) {
    bool help = false;
    for (int i = 1; i < argc; ++i) help |= std::strcmp(argv[i], "--help") == 0;
    PrintUsage(help ? stdout : stderr);
    return help ? 0 : 2;
  }
  std::string_view name = argv[at];
  for (const Subcommand& s : kSubcommands) {
    if (name != s.name) continue;
    // argv for the subcommand: its name first, then every other argument.
    std::string program = std::string("shelfmark-perf ") + s.name;
    std::vector<const char*> args{program.c_str()};
    for (int i = 1; i < argc; ++i) {
      if (i != at) args.push_back(argv[i]);
    }
    return s.run(static_cast<int>(args.size()), args.data());
  }
  std::fprintf(stderr, "shelfmark-perf: unknown subcommand '%s'\n", argv[at]);
  PrintUsage(stderr);
  return 2;
}
