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

log() { echo "bench_read: $*" >&2; }
die() { log "$*"; exit 1; }

if [ $# -ge 1 ]; then
  build="$1"
else
  "$root/scripts/setup.sh"
  build="$("$root/scripts/build.sh" | tail -n 1)"
fi
find_binary() {
  local path
  path="$(find "$build" -type f -name "$1" -perm -u+x -print -quit)"
  [ -n "$path" ] || die "no $1 under $build"
  echo "$path"
}
master_bin="$(find_binary shelfmark-master)"
node_bin="$(find_binary shelfmark-node)"
perf_bin="$(find_binary shelfmark-perf)"

mkdir -p "$(dirname "$out")"
logdir="$(mktemp -d)"
master_pid=""
node_pid=""
cleanup() {
  [ -z "$node_pid" ] || kill "$node_pid" 2>/dev/null || true
  [ -z "$master_pid" ] || kill "$master_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$logdir"
}
trap cleanup EXIT

# Waits up to 30 s for a line matching $2 in file $1; prints the line.
wait_line() {
  local i
  for i in $(seq 300); do
    if grep -m1 -- "$2" "$1" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  cat "$1" >&2
  return 1
}

"$master_bin" --rpc_port=0 --metrics_port=0 2> "$logdir/master.err" &
master_pid=$!
line="$(wait_line "$logdir/master.err" "rpc port")" || die "master did not start"
rpc_port="$(echo "$line" | sed -n 's/.*rpc port \([0-9]*\),.*/\1/p')"
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

kill -TERM "$node_pid"
wait "$node_pid" || die "node exited with $?"
node_pid=""
log "results in $out"
