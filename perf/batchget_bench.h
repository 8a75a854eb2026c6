// `shelfmark-perf batchget`: the C++ baselines of the Mooncake-compatible
// store (python/): a zero-copy batch get and a same-process get.
//
//   shelfmark-perf batchget --master=HOST:PORT [--protocol=ucx|rdma|auto]
//       [--objects=64] [--size=262144] [--iters=20] [--warmup=2]
//       [--segment_size=BYTES] [--listen_ip=127.0.0.1] [--tenant=T]
//       [--cluster_token_file=PATH] [--master_token_file=PATH] [--device=NAME]
//       [--location_cache] [--json]
//
// Needs a running master. The benchmark is an EmbeddedClient
// (embedded/embedded_client.h): with --segment_size > 0 (the default: room
// for the objects plus 16 MiB) it hosts a segment of its own and puts the
// objects there (preferred segment); with --segment_size=0 the objects go
// to the cluster's existing nodes. It puts --objects objects of --size
// bytes with one BatchPutFrom from a registered buffer, then times
// --iters BatchGetInto calls of all of them into one registered buffer
// (after --warmup untimed ones; every batch's bytes are checked after the
// run): p50 / p99 per batch and GB/s (1e9 bytes/s over the timed batches).
// With a hosted segment it also times GetInto of one object in that
// segment (the client copies it with memcpy: Client::local_stats) against a
// plain memcpy of the same size, interleaved: GB/s of each and the ratio.
// Every get includes its lookup: a master RPC, unless --location_cache
// (then the timed loop asks the master about once per lease).
// Output: one JSON line (perf/batchget_report.h) or a short table. The
// objects are removed at the end (and with the segment when it closes).
#pragma once

namespace shelfmark {

// argv[0] names the subcommand. Exit code: 0 success, 1 a failed put, get
// or setup, 2 bad usage.
int RunBatchGetBench(int argc, const char* const* argv);

}  // namespace shelfmark
