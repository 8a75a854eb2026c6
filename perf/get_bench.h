// `shelfmark-perf get`: latency of a whole get per replica type, with the
// master lookup and the data transfer timed apart.
//
//   shelfmark-perf get --master=HOST:PORT --replica=memory|local_disk|all
//       [--protocol=rdma|ucx|auto] [--size=4096,65536,1048576] [--iters=N]
//       [--warmup=N] [--concurrency=N] [--keys=N] [--key_dist=uniform|zipf]
//       [--zipf_theta=0.99] [--batch=N] [--location_cache=true|false]
//       [--disk_dirs=DIR[,DIR]]
//       [--offload_wait_s=S] [--json] [--json_out=FILE] [--plot=FILE.png]
//       [--cluster_token_file=PATH] [--master_token_file=PATH]
//
// Credentials as every program takes them (auth/credential_flags.h): the
// cluster token (--cluster_token_file, --cluster_token, $SHELFMARK_CLUSTER_TOKEN)
// for the nodes and, unless --master_token_file or $SHELFMARK_MASTER_TOKEN
// gives another, for the master. An unreadable token file is exit 2.
//
// Needs a running master and nodes (it starts nothing; scripts/demo.sh and
// scripts/bench_get.sh do). Per size it puts --keys objects (MEMORY
// replicas, hard-pinned so that eviction leaves them alone; a put finding
// memory full is retried for up to 10 s while eviction runs), and for
// local_disk waits until every one also has a LOCAL_DISK replica (the
// master needs --enable_offload and a node an SSD store). Then per replica
// type and size, --iters gets are spread over --concurrency threads; each
// get is one Client::Locate (the lookup: one GetReplicaList RPC, or none
// when the client's location cache holds the key, client/location_cache.h)
// and one Client::Read (the transfer, into a registered buffer; for
// local_disk the LOCAL_DISK replica is tried first, GetOptions::
// prefer_local_disk), keys drawn uniformly or zipf from the --keys objects
// (--keys=1: one hot key). The cache is on here (kLocationCacheEntries
// entries: the benchmark's objects are its own, no other client removes
// them); --location_cache=false turns it off, so every lookup is a master
// RPC (the same run with both shows what the cache saves). A get whose first replica is not of the measured
// type, that fails, or whose bytes differ from what was put fails the run
// (exit 1). --batch=N>1 (memory only) times one BatchGet of N keys per
// operation instead (its lookup and transfer are not separable: reported 0;
// ops/s and GB/s count keys).
//
// Baselines of local_disk rows, measured in the same run on the same keys,
// each call after the master lookup a get makes (untimed) so that both meet
// the node's and the client's threads in the same state:
//   - baseline_am: a probe active message to the same node returning the
//     same number of bytes without touching the disk (kLocalDiskProbeAmId);
//   - baseline_pread: pread() of the same size at the same offset of the
//     same file (the node says where, LocalDiskRead::bucket_id/offset; the
//     file is looked for under --disk_dirs and must hold the same bytes).
// The goal of the path: transfer p50 within 1.2x of am + pread p50.
//
// Output per (replica, size): what served the bytes (path, from the
// client's transfer counters over the row's gets, warmup included:
// "same-host" for copies from a node's segment mapped into this client,
// "ucx" for UCX RMA, "rdma" for RDMA READs; "ucx-am" for LOCAL_DISK read
// messages; perf/get_report.h ServedPath), the perftest columns t_min,
// t_max, t_typical (median), t_avg, stdev, p99, p99.9 in microseconds for
// the whole get, lookup and transfer p50s, ops/s and GB/s (the timed gets
// over their own wall clock: from the first one's start to the last one's
// end, all threads together), the share of lookups the location cache
// answered (hit%; its hits and misses over the row's gets, warmup
// included, in JSON); a table, or with --json one object per line
// (--json_out writes those lines to a file as well, next to the table on
// stdout; "protocol" is the protocol of the replicas read):
//   {"bench":"get","replica":..,"protocol":..,"path":..,"size":..,"iters":..,
//    "concurrency":..,"batch":..,"t_min_us":..,"t_max_us":..,"t_typical_us":..,
//    "t_avg_us":..,"stdev_us":..,"p50_us":..,"p99_us":..,"p999_us":..,
//    "lookup_p50_us":..,"transfer_p50_us":..,"ops_per_s":..,"gbytes_per_s":..,
//    "location_cache":true|false,"cache_hits":..,"cache_misses":..,
//    ["baseline_am_p50_us":..,"baseline_pread_p50_us":..,"ratio":..,]
//    "interrupted":false}
// --plot writes the latency distributions (CDF, one curve per replica type
// and size) to a PNG with gnuplot. A line per second of progress goes to
// stderr; Ctrl-C stops the loops and prints what was measured so far
// ("interrupted":true). The objects are removed at the end.
#pragma once

namespace shelfmark {

// argv[0] names the subcommand. Exit code: 0 success, 1 a failed get or
// setup, 2 bad usage, 130 interrupted (after printing the partial results).
int RunGetBench(int argc, const char* const* argv);

}  // namespace shelfmark
