#!/usr/bin/env bash
# The standalone-store shape against the embedded one (issue 31), in one run
# on this machine: a shelfmark-master and a shelfmark-store-service (a
# 512 MiB segment, unix socket in a temporary directory), then
# python/bench/service_batch.py: batch_put_from / batch_get_into of
# BENCH_OBJECTS x BENCH_SIZE (256 x 64 KiB) through the service (a dummy
# client, buffers in MooncakeHostMemAllocator memory), on an embedded
# store's own segment in the same Python process, from a segment-less
# client (global_segment_size=0) into the service's segment (same-host
# copies through its mapping, transport/local_share.h), and numpy's copy of
# the same bytes, interleaved over BENCH_ROUNDS rounds; GB/s, the ratios to the
# copy, one 64 KiB get_into through each path, and the page faults each
# path's calls cost (this process's and the service's).
#
# Usage: scripts/bench_store_service.sh [BUILD_DIR]
# Environment: BENCH_ROUNDS (8), BENCH_OBJECTS (256), BENCH_SIZE (65536),
# BENCH_RESERVATION_SHARE (0.01: the master's --put_reservation_share).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
script=bench_store_service
# shellcheck source=scripts/lib/cluster.sh
. "$root/scripts/lib/cluster.sh"
cluster_binaries "${1:-}"
service_bin="$(find_binary "$build" shelfmark-store-service)"
[ -d "$build/python" ] || die "no $build/python: the build has no Python package (pybind11-dev)"
python="$(command -v /usr/bin/python3 || command -v python3)"
cluster_workdir

# --put_reservation_share: what reservations may hold of the pool. Batch
# puts use them only with ClientOptions::reserve_batch_puts (off); with it
# on, three clients' 16 MiB batches need about 9% of this pool.
start_master "$master_bin" "$work/master.err" \
  --put_reservation_share="${BENCH_RESERVATION_SHARE:-0.01}"
token="bench-store-service-token-$RANDOM$RANDOM"
printf '%s\n' "$token" > "$work/token"
chmod 600 "$work/token"
"$service_bin" --master_server_address="127.0.0.1:$rpc_port" --host=127.0.0.1 \
  --global_segment_size=536870912 --socket_path="$work/store.sock" \
  --cluster_token_file="$work/token" 2> "$work/service.err" &
node_pid=$!  # stopped by cluster_workdir's trap
wait_line "$work/service.err" "socket " >/dev/null || die "store service did not start"

log "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
SHELFMARK_CLUSTER_TOKEN="$token" PYTHONPATH="$build/python" "$python" \
  python/bench/service_batch.py --master="127.0.0.1:$rpc_port" --service="$work/store.sock" \
  --service_segment=127.0.0.1:50052 --service_pid="$node_pid" \
  --rounds="${BENCH_ROUNDS:-8}" --objects="${BENCH_OBJECTS:-256}" --size="${BENCH_SIZE:-65536}"
# How the puts went: objects committed in one master round trip (into a
# reservation), of the batch puts of the three paths.
committed="$(curl -fsS "http://127.0.0.1:$metrics_port/metrics" |
  awk '$1 == "shelfmark_master_put_reservations_committed_total" {print $2}')"
log "batch puts committed in one master round trip: $committed of" \
  "$((3 * ${BENCH_ROUNDS:-8} * ${BENCH_OBJECTS:-256}))"
