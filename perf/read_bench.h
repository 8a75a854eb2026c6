// `shelfmark-perf read`: latency and bandwidth of MEMORY reads, Shelfmark's
// read path side by side with the raw engine in the same run.
//
//   shelfmark-perf read --master=HOST:PORT --protocol=rdma|ucx
//       [--size=4096,65536,1048576] [--iters=N] [--warmup=N] [--checksum]
//       [--cluster_token_file=PATH] [--master_token_file=PATH] [--device=NAME]
//       [--tenant=T] [--json]
//
// Credentials as every program takes them (auth/credential_flags.h): the
// cluster token (--cluster_token_file, --cluster_token, $SHELFMARK_CLUSTER_TOKEN)
// for the nodes and, unless --master_token_file or $SHELFMARK_MASTER_TOKEN
// gives another, for the master. An unreadable token file is exit 2.
//
// Needs a running master and at least one node of that protocol (it starts
// nothing; scripts/bench_read.sh does). Per size it puts one object, fetches
// its descriptor once (Client::Locate) and then times:
//   - shelfmark: Client::Read into a registered buffer, the data path of Get
//     (replica choice, TransportSet routing, lease check, checksum when
//     --checksum) with no master RPC in the loop (a descriptor whose lease
//     ran out is fetched again, outside the timing);
//   - raw: the same bytes through the bare engine (ucx: RawUcxGet, one
//     checked read request; rdma: VerbsEngine::RawRead, one RDMA READ on the cached
//     connection, busy-polled) with none of those layers. For ucx this is
//     always the UCX endpoint, even where Shelfmark's path reads a
//     same-host node's shared segment (docs/transport.md);
//   - memcpy: the same number of bytes copied in this process, the ceiling
//     of a same-host read (vs_memcpy = gbps / memcpy_gbps).
// --device names the RDMA device of the client's QPs ("" = the first). At
// the end the engine's transfer counters go to stderr ("read: rdma reads
// posted: N, ..., same-host reads: N"), so a run shows what moved the bytes.
// Output: one JSON line per size
//   {"bench":"read","protocol":..,"size":..,"iters":..,"p50_us":..,"p99_us":..,
//    "p999_us":..,"gbps":..,"raw_p50_us":..,"raw_p99_us":..,"raw_gbps":..,
//    "memcpy_p50_us":..,"memcpy_gbps":..,"vs_memcpy":..}
// or a table. gbps = bits moved / time spent in the timed reads (one read in
// flight at a time). The objects are removed at the end.
#pragma once

namespace shelfmark {

// argv[0] names the subcommand. Exit code: 0 success, 1 a failed read or
// setup, 2 bad usage.
int RunReadBench(int argc, const char* const* argv);

}  // namespace shelfmark
