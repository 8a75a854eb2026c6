// `shelfmark-perf snapshot`: what a master snapshot costs and how fast a
// restart restores it, on an in-process Directory of N objects.
//
// Per object count: fill one Directory (one bookkeeping-only segment big
// enough for every object), then take one fork + copy-on-write snapshot into
// a LocalStore in a temporary directory while a writer thread keeps putting
// and removing objects, and report: the pause of the directory (lock +
// fork, in ms and in ms per GiB of the process's RSS), the child's run time,
// the snapshot's bytes, the child's private dirty memory (copy-on-write
// copies + its own buffers); then restore into a fresh Directory and report
// its time and objects/s. The Redis baseline (BGSAVE fork time per GiB,
// RDB load time with as many keys) is measured by scripts/bench_snapshot.sh
// and passed in with --redis_fork_ms_per_gb / --redis_load_ms so that one
// JSON line holds both.
#pragma once

namespace shelfmark {

// argv[0] names the subcommand. Returns 0, 1 (a snapshot or restore failed)
// or 2 (bad usage).
int RunSnapshotBench(int argc, const char* const* argv);

}  // namespace shelfmark
