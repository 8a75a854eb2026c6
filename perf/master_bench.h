// `shelfmark-perf master`: throughput and latency of the master's hot RPCs
// (put = PutStart+PutEnd, get_replica_list) over N connections, single or
// batched, and the master's DRAM cost per object (--objects=N).
//
// No bytes move: the benchmark mounts a bookkeeping-only segment, keeps its
// client alive with a pinger thread and unmounts it at the end. Every
// connection, the pinger's too, proves the master token: --master_token_file,
// $SHELFMARK_MASTER_TOKEN, else the cluster token (--cluster_token_file,
// --cluster_token, $SHELFMARK_CLUSTER_TOKEN; auth/credential_flags.h). It
// mounts a segment, so a token table must give that token the node role as
// well as client.
#pragma once

namespace shelfmark {

// argv[0] names the subcommand ("shelfmark-perf master"); the rest are its
// flags. Returns the process exit code: 0 success, 1 failure or non-OK
// answers, 2 bad usage, 130 stopped by SIGINT (after printing what was
// measured).
int RunMasterBench(int argc, const char* const* argv);

}  // namespace shelfmark
