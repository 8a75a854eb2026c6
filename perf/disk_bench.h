// `shelfmark-perf disk`: the node's SSD backends on their own (no master,
// no network): batch write throughput and restart time (Open rebuilding the
// DRAM index from the recovery files) for N objects, for both backends.
//
//   shelfmark-perf disk [--objects=1000000] [--value_size=N] [--key_size=N]
//       [--batch=N] [--verify=N] [--backend=bucket|offset|all] [--dir=PATH]
//       [--drop_caches] [--json]
//
// See perf/disk_bench.cc for what is timed and the output fields.
#pragma once

namespace shelfmark {

// argv[0] names the subcommand. Exit code: 0 success, 1 a failed step,
// 2 bad usage.
int RunDiskBench(int argc, const char* const* argv);

}  // namespace shelfmark
