#!/usr/bin/env bash
# Benchmarks gets per replica type: starts a shelfmark-master (offload on)
# and a shelfmark-node with a DRAM segment and an SSD store in a temporary
# directory, runs `shelfmark-perf get --replica=all` (MEMORY and LOCAL_DISK
# rows, the LOCAL_DISK ones with the AM-probe and pread baselines of the
# same run), and stops both by pid.
#
# Usage: scripts/bench_get.sh [BUILD_DIR]
#   BUILD_DIR  a built tree (default: scripts/build.sh's RelWithDebInfo tree)
# Environment (all optional):
#   BENCH_BACKEND   bucket_storage_backend (default) or offset_allocator_storage_backend
#   BENCH_SIZES     object sizes (default 4096,65536,1048576)
#   BENCH_ITERS     timed gets per replica type and size (default 2000)
#   BENCH_OUT       JSON lines output (default out/bench_get.jsonl; rewritten)
#   BENCH_ARGS      more shelfmark-perf get flags (e.g. --concurrency=4 --plot=x.png)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

backend="${BENCH_BACKEND:-bucket_storage_backend}"
sizes="${BENCH_SIZES:-4096,65536,1048576}"
iters="${BENCH_ITERS:-2000}"
out="${BENCH_OUT:-$root/out/bench_get.jsonl}"

script=bench_get
# shellcheck source=scripts/lib/cluster.sh
. "$root/scripts/lib/cluster.sh"

cluster_binaries "${1:-}"

mkdir -p "$(dirname "$out")"
cluster_workdir

start_master "$master_bin" "$work/master.err" --enable_offload
log "master pid $master_pid rpc port $rpc_port"

mkdir "$work/ssd"
MOONCAKE_OFFLOAD_FILE_STORAGE_PATH="$work/ssd" \
MOONCAKE_OFFLOAD_STORAGE_BACKEND_DESCRIPTOR="$backend" \
  "$node_bin" --master="127.0.0.1:$rpc_port" --segment_size=268435456 --protocol=ucx \
  --listen_ip=127.0.0.1 --metrics_port=0 2> "$work/node.err" &
node_pid=$!
line="$(wait_line "$work/node.err" "^node .* endpoint")" || die "node did not mount"
log "$line (SSD store: $backend)"

# shellcheck disable=SC2086  # BENCH_ARGS is a list of flags
"$perf_bin" get --master="127.0.0.1:$rpc_port" --replica=all --size="$sizes" \
  --iters="$iters" --disk_dirs="$work/ssd" --json ${BENCH_ARGS:-} | tee "$out"

stop_pid "$node_pid" || die "node exited with $?"
node_pid=""
log "results in $out"
