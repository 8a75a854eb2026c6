#!/usr/bin/env bash
# The main job on one machine: a local Shelfmark cluster doing real puts and
# gets. Starts a shelfmark-master (snapshots to a temporary directory) and a
# shelfmark-node (a DRAM segment read with one-sided UCX RMA: this machine has
# no RDMA device; tests/softroce runs the same flow over RDMA in a VM), puts
# and gets files with shelfmark-cli, measures the master and the read path
# (shelfmark-perf), then kills the master with SIGKILL, restarts it from its
# snapshot and gets every object again through the remounted node. Stops
# everything it started, by process id, whether it succeeds or fails.
#
# Usage: scripts/demo.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

script=demo
# shellcheck source=scripts/lib/cluster.sh
. "$root/scripts/lib/cluster.sh"

build="$(build_tree "${1:-}")"
master_bin="$(find_binary "$build" shelfmark-master)"
node_bin="$(find_binary "$build" shelfmark-node)"
cli_bin="$(find_binary "$build" shelfmark-cli)"
perf_bin="$(find_binary "$build" shelfmark-perf)"

work="$(mktemp -d -t shelfmark-demo.XXXXXX)"
master_pid=""
node_pid=""
cleanup() {
  stop_pid "$node_pid" || true
  stop_pid "$master_pid" || true
  rm -rf "$work"
}
trap cleanup EXIT

export MOONCAKE_SNAPSHOT_LOCAL_PATH="$work/snapshots"
master_flags=(--memory_allocator=offset --enable_snapshot=true --enable_snapshot_restore=true
  --snapshot_object_store_type=local --snapshot_catalog_store_type=embedded
  --snapshot_interval_seconds=2 --snapshot_child_timeout_seconds=300 --snapshot_retention_count=2
  --client_ttl=10 --default_kv_lease_ttl=5000)

start_master "$master_bin" "$work/master.log" "${master_flags[@]}"
echo "== master: rpc 127.0.0.1:$rpc_port, metrics http://127.0.0.1:$metrics_port/metrics"

# The node keeps the master's address across the master's restart below, so
# the restarted master must come back on the same RPC port.
"$node_bin" --master="127.0.0.1:$rpc_port" --segment_size=$((256 << 20)) --protocol=auto \
  --metrics_port=0 >"$work/node.log" 2>&1 &
node_pid=$!
wait_line "$work/node.log" "^node " >/dev/null || die "shelfmark-node did not start"
echo "== $(grep -m1 '^node ' "$work/node.log")"

cli=("$cli_bin" --master="127.0.0.1:$rpc_port")
echo "== shelfmark-cli put / get: 20 files of 1 KiB .. 4 MiB, read back and compared"
mkdir -p "$work/in" "$work/out"
for i in $(seq 1 20); do
  head -c $(((i * i * 10007) % (4 << 20) + 1024)) /dev/urandom >"$work/in/$i"
  "${cli[@]}" put "demo/file-$i" "$work/in/$i" >/dev/null
done
for i in $(seq 1 20); do
  "${cli[@]}" get "demo/file-$i" "$work/out/$i"
  cmp -s "$work/in/$i" "$work/out/$i" || die "demo/file-$i came back different"
done
"${cli[@]}" count
"${cli[@]}" stat demo/file-7

echo "== shelfmark-perf master: puts and GetReplicaList, batch 128"
"$perf_bin" master --master="127.0.0.1:$rpc_port" --metrics="127.0.0.1:$metrics_port" \
  --connections=2 --batch=128 --seconds=2

echo "== shelfmark-perf read: MEMORY reads through Shelfmark vs the raw engine"
"$perf_bin" read --master="127.0.0.1:$rpc_port" --protocol=ucx --size=4096,65536,1048576 \
  --iters=500

echo "== waiting for a snapshot"
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$metrics_port/metrics" |
    grep -q '^shelfmark_master_snapshots_total{result="success"} [1-9]' && break
  sleep 0.1
done
curl -fsS "http://127.0.0.1:$metrics_port/metrics" | grep -E '^shelfmark_master_snapshot' | head -n 8

echo "== kill -9 the master, restart it from its snapshot on the same port"
kill -9 "$master_pid"
wait "$master_pid" 2>/dev/null || true
old_port="$rpc_port"
"$master_bin" --rpc_port="$old_port" --metrics_port=0 "${master_flags[@]}" \
  >"$work/master2.log" 2>&1 &
master_pid=$!
wait_line "$work/master2.log" "rpc port" >/dev/null || die "the master did not restart"
grep -E "restored|no usable snapshot" "$work/master2.log" || true
for i in $(seq 1 20); do
  "${cli[@]}" get "demo/file-$i" "$work/out/$i"
  cmp -s "$work/in/$i" "$work/out/$i" || die "demo/file-$i differs after the restart"
done
echo "== all 20 demo objects served, byte-identical, after the restart"
echo "== stopping node and master"
