#!/usr/bin/env bash
# Benchmarks MEMORY reads: starts a shelfmark-master and a shelfmark-node on
# 127.0.0.1 (free ports, read from their stderr), runs
# `shelfmark-perf read` (Shelfmark's read path vs the raw engine, same run),
# and stops both by pid.
#
# Usage: scripts/bench_read.sh [BUILD_DIR]
#   BUILD_DIR  a built tree (default: scripts/build.sh's RelWithDebInfo tree)
# Environment (all optional):
#   BENCH_PROTOCOL  ucx (default) or rdma (needs an RDMA device)
#   BENCH_SIZES     object sizes (default 4096,65536,1048576)
#   BENCH_ITERS     timed reads per size and path (default 2000)
#   BENCH_OUT       JSON lines output (default out/bench_read.jsonl; rewritten)
#   BENCH_SEGMENT   node segment bytes (default 268435456)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

protocol="${BENCH_PROTOCOL:-ucx}"
sizes="${BENCH_SIZES:-4096,65536,1048576}"
iters="${BENCH_ITERS:-2000}"
out="${BENCH_OUT:-$root/out/bench_read.jsonl}"
segment="${BENCH_SEGMENT:-268435456}"

script=bench_read
# shellcheck source=scripts/lib/cluster.sh
. "$root/scripts/lib/cluster.sh"

cluster_binaries "${1:-}"

mkdir -p "$(dirname "$out")"
logdir="$(mktemp -d)"
master_pid=""
node_pid=""
cleanup() {
  stop_pid "$node_pid" || true
  stop_pid "$master_pid" || true
  rm -rf "$logdir"
}
trap cleanup EXIT

start_master "$master_bin" "$logdir/master.err"
log "master pid $master_pid rpc port $rpc_port"

"$node_bin" --master="127.0.0.1:$rpc_port" --segment_size="$segment" --protocol="$protocol" \
  --listen_ip=127.0.0.1 --metrics_port=0 2> "$logdir/node.err" &
node_pid=$!
line="$(wait_line "$logdir/node.err" "^node .* endpoint")" || die "node did not mount"
log "$line"

"$perf_bin" read --master="127.0.0.1:$rpc_port" --protocol="$protocol" --size="$sizes" \
  --iters="$iters" --json | tee "$out"
"$perf_bin" read --master="127.0.0.1:$rpc_port" --protocol="$protocol" --size="$sizes" \
  --iters="$iters" >&2

stop_pid "$node_pid" || die "node exited with $?"
node_pid=""
log "results in $out"
