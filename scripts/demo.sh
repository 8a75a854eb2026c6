#!/usr/bin/env bash
# The main job on one machine: a local Shelfmark cluster doing real puts and
# gets, and how fast a get is per replica type.
#
# Starts a shelfmark-master (offload on, snapshots to a temporary directory)
# and two shelfmark-nodes, each with a DRAM segment and an SSD store under
# the same temporary directory (node A: bucket backend, node B: offset
# allocator backend with relaxed persistence). Puts a few thousand objects
# of three sizes (more than the DRAM holds, so the master evicts MEMORY
# replicas while the nodes offload to SSD), reads every object back and
# counts where each was served from, runs `shelfmark-perf get` for both
# replica types and prints its table (and a latency plot), then kills the
# master with SIGKILL, restarts it from its snapshot and reads everything
# again. Stops everything it started, by process id, whether it succeeds or
# fails.
#
# The cluster runs with a token (docs/security.md): a random one in a mode-600
# file of the temporary directory, given to every program with
# --cluster_token_file; one call without it shows the master refusing it
# (UNAUTHENTICATED).
#
# The clients (shelfmark-cli, shelfmark-perf) run on the nodes' host, so they
# read MEMORY replicas from the nodes' segments mapped into them (same-host: a
# memcpy, no transport, no work by the node; docs/transport.md); the table's
# path column names what served each row, from the client's counters. With
# --vm the same cluster runs inside the soft-RoCE VM (tests/softroce) and
# MEMORY reads go over RDMA.
#
# Before the kill it waits for a snapshot taken after shelfmark-perf get
# removed its own objects, so the restored master holds the demo's objects
# and no others (a snapshot from the benchmark's last row would bring back
# its 16 objects of 1 MiB, tenant perf-get, removed since).
#
# Usage: scripts/demo.sh [--vm | --ha | --standalone] [BUILD_DIR]
#   --ha: etcd, three masters with --enable_ha and two nodes; the leader is
#         killed during puts (scripts/demo_ha.sh, docs/ha.md)
#   --standalone: the standalone-store shape: a store service per "host"
#         and engine processes that come and go as its light clients
#         (scripts/demo_standalone.sh, docs/node.md)
# Environment: DEMO_OUT (default out/demo): the table (get.txt), JSON lines
# (get.jsonl) and the plot (get.png) of the last run.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

script=demo
# shellcheck source=scripts/lib/cluster.sh
. "$root/scripts/lib/cluster.sh"

vm=0
if [ "${1:-}" = "--ha" ]; then
  shift
  exec bash "$(dirname "$0")/demo_ha.sh" "$@"
fi
if [ "${1:-}" = "--standalone" ]; then
  shift
  exec bash "$(dirname "$0")/demo_standalone.sh" "$@"
fi
if [ "${1:-}" = "--vm" ]; then
  vm=1
  shift
fi
build="$(build_tree "${1:-}")"
out="${DEMO_OUT:-$root/out/demo}"
mkdir -p "$out"

if [ "$vm" = 1 ]; then
  echo "== the demo cluster inside the soft-RoCE VM (MEMORY reads over RDMA)"
  echo "   (the VM suite: verbs tests, perftest, a master + node with an SSD store over"
  echo "   soft-RoCE, shelfmark-cli fill / verify of 300 objects and shelfmark-perf read and"
  echo "   get over RDMA; QEMU without KVM is slow: a few minutes)"
  "$root/tests/softroce/run_vm_suite.sh" "$build" >"$out/vm.log" 2>&1 ||
    { tail -n 40 "$out/vm.log"; die "the VM suite failed; see $out/vm.log"; }
  sed -n 's/^shelfmark-cli-load //p' "$build/softroce/perf.txt"
  sed -n 's/^shelfmark-perf-get-table //p' "$build/softroce/perf.txt" | tee "$out/get-vm.txt"
  sed -n 's/^shelfmark-perf-get //p' "$build/softroce/perf.txt" >"$out/get-vm.jsonl"
  echo "   (MEMORY rows: RDMA READ between rxe devices inside the VM; JSON: $out/get-vm.jsonl)"
  exit 0
fi

master_bin="$(find_binary "$build" shelfmark-master)"
node_bin="$(find_binary "$build" shelfmark-node)"
cli_bin="$(find_binary "$build" shelfmark-cli)"
perf_bin="$(find_binary "$build" shelfmark-perf)"

work="$(mktemp -d -t shelfmark-demo.XXXXXX)"
master_pid=""
node_pids=()
cleanup() {
  for pid in "${node_pids[@]}"; do stop_pid "$pid" || true; done
  stop_pid "$master_pid" || true
  rm -rf "$work"
}
trap cleanup EXIT

# The cluster token: random, readable by this user only. The master's file is
# a token table (auth/token_table.h): a line with a token alone gives it every
# role (node, client, admin); nodes, shelfmark-cli and shelfmark-perf read the
# same file. Tokens in this shell's environment are dropped: they would let the
# call without a token below through.
unset SHELFMARK_CLUSTER_TOKEN SHELFMARK_MASTER_TOKEN
token_file="$work/cluster_token"
write_cluster_token "$token_file"
token_flag=(--cluster_token_file="$token_file")

export MOONCAKE_SNAPSHOT_LOCAL_PATH="$work/snapshots"
master_flags=("${token_flag[@]}" --memory_allocator=offset --enable_offload
  --enable_snapshot=true --enable_snapshot_restore=true
  --snapshot_object_store_type=local --snapshot_catalog_store_type=embedded
  --snapshot_interval_seconds=2 --snapshot_child_timeout_seconds=300 --snapshot_retention_count=2
  --client_ttl=10 --default_kv_lease_ttl=2000
  --eviction_high_watermark_ratio=0.85 --eviction_ratio=0.10)

start_master "$master_bin" "$work/master.log" "${master_flags[@]}"
echo "== master: rpc 127.0.0.1:$rpc_port, metrics http://127.0.0.1:$metrics_port/metrics"

# start_node NAME BACKEND: a node with a 64 MiB segment and an SSD store in
# $work/ssd-NAME. The nodes keep the master's address across its restart
# below, so the restarted master comes back on the same RPC port.
start_node() {
  mkdir -p "$work/ssd-$1"
  MOONCAKE_OFFLOAD_FILE_STORAGE_PATH="$work/ssd-$1" \
  MOONCAKE_OFFLOAD_STORAGE_BACKEND_DESCRIPTOR="$2" \
  MOONCAKE_OFFSET_PERSIST_MODE=relaxed MOONCAKE_OFFSET_PERSIST_INTERVAL_SECONDS=5 \
  MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES=1G \
    "$node_bin" --master="127.0.0.1:$rpc_port" "${token_flag[@]}" --segment_size=$((64 << 20)) \
    --protocol=auto --segment_name="node-$1" --listen_ip=127.0.0.1 --ping_interval_ms=500 \
    --metrics_port=0 \
    >"$work/node-$1.log" 2>&1 &
  node_pids+=($!)
  wait_line "$work/node-$1.log" "^node " >/dev/null || die "shelfmark-node $1 did not start"
  echo "== node $1 ($2): $(grep -m1 '^node ' "$work/node-$1.log" | cut -d' ' -f3-)"
}
start_node a bucket_storage_backend
start_node b offset_allocator_storage_backend

cli=("$cli_bin" --master="127.0.0.1:$rpc_port" "${token_flag[@]}")

echo "== the master refuses a call without the token (shelfmark-cli count, no token flag):"
if refused="$("$cli_bin" --master="127.0.0.1:$rpc_port" count 2>&1)"; then
  die "the master answered a call without a token: $refused"
fi
echo "   $refused"
grep -q UNAUTHENTICATED <<<"$refused" || die "expected UNAUTHENTICATED, got: $refused"
echo "== with the token: shelfmark-cli count = $("${cli[@]}" count)"
sets=("small 2000 4096" "medium 500 65536" "large 120 1048576")
fill() {
  read -r name count size <<<"$1"
  "${cli[@]}" fill "demo-$name" --count="$count" --size="$size"
}

# The nodes offload in the background; wait_offload waits until their SSD
# stores stop growing (or 60 s).
disk_objects() {
  local total=0 port v
  for log in "$work"/node-*.log; do
    port="$(sed -n 's/.*metrics port \([0-9]*\).*/\1/p' "$log" | head -n 1)"
    v="$(curl -fsS "http://127.0.0.1:$port/metrics" |
           sed -n 's/^shelfmark_node_disk_objects \([0-9.]*\).*/\1/p')"
    total=$((total + ${v%.*}))
  done
  echo "$total"
}
wait_offload() {
  local last=-1 now
  for _ in $(seq 60); do
    now="$(disk_objects)"
    [ "$now" = "$last" ] && break
    last="$now"
    sleep 1
  done
  echo "== objects on the nodes' SSDs: $(disk_objects)"
}

echo "== shelfmark-cli fill: 2620 objects (2000 x 4 KiB, 500 x 64 KiB, 120 x 1 MiB = 159 MiB"
echo "   for 128 MiB of DRAM: the master evicts MEMORY replicas, the nodes offload to SSD)"
for s in "${sets[@]}"; do fill "$s"; done
wait_offload
echo "== 40 more 1 MiB objects: eviction now takes MEMORY replicas of offloaded objects,"
echo "   which stay readable from LOCAL_DISK"
sets+=("extra 40 1048576")
fill "extra 40 1048576"
wait_offload

verify_all() {
  for s in "${sets[@]}"; do
    read -r name count size <<<"$s"
    "${cli[@]}" verify "demo-$name" --count="$count" --size="$size"
  done
}
echo "== shelfmark-cli verify: every object read back, compared, and where it was served from"
verify_all

echo "== shelfmark-perf get: latency per replica type (microseconds; lookup = the master's"
echo "   GetReplicaList, xfer = the data transfer; LOCAL_DISK rows with the same run's"
echo "   baselines: a UCX active-message round trip and a pread of the same bytes)"
"$perf_bin" get --master="127.0.0.1:$rpc_port" "${token_flag[@]}" --replica=all \
  --size=4096,65536,1048576 --iters=1000 --keys=16 --disk_dirs="$work/ssd-a,$work/ssd-b" \
  --plot="$out/get.png" --json_out="$out/get.jsonl" | tee "$out/get.txt"
echo "   (JSON lines: $out/get.jsonl; latency distribution plot: $out/get.png)"
memory_path="$(sed -n '/"replica":"memory"/s/.*"path":"\([^"]*\)".*/\1/p' "$out/get.jsonl" |
                 sort -u | paste -sd, -)"
case "$memory_path" in
  same-host) echo "   MEMORY rows: path same-host, copies from the nodes' segments mapped into" \
                  "shelfmark-perf (no UCX or RDMA transfer: this client runs on the nodes' host)" ;;
  *) echo "   MEMORY rows: path $memory_path (the client's transfer counters)" ;;
esac

# The master's metric NAME (the whole first field of its line). awk reads
# the whole page: curl must not meet a closed pipe (pipefail).
master_metric() {
  curl -fsS "http://127.0.0.1:$metrics_port/metrics" |
    awk -v n="$1" '$1 == n { v = $2 } END { print v }'
}
# The second snapshot to succeed from now was started after now: after
# shelfmark-perf get removed its objects (tenant perf-get; without this wait
# the last snapshot may be one taken during its last row, and the restarted
# master would bring back its 16 objects of 1 MiB, removed since).
held="$("${cli[@]}" count --all_tenants)"
snapshots="$(master_metric 'shelfmark_master_snapshots_total{result="success"}')"
want=$((${snapshots%.*} + 2))
echo "== waiting for a snapshot taken after shelfmark-perf get removed its objects" \
  "(the master holds $held)"
for _ in $(seq 1 300); do
  snapshots="$(master_metric 'shelfmark_master_snapshots_total{result="success"}')"
  [ "${snapshots%.*}" -ge "$want" ] && break
  sleep 0.1
done
[ "${snapshots%.*}" -ge "$want" ] || die "no snapshot within 30 s"
curl -fsS "http://127.0.0.1:$metrics_port/metrics" | awk '/^shelfmark_master_snapshot/ && n++ < 8'
in_snapshot="$(master_metric shelfmark_master_snapshot_last_objects)"
echo "   the snapshot holds ${in_snapshot%.*} objects"

echo "== kill -9 the master, restart it from its snapshot on the same port"
kill -9 "$master_pid"
wait "$master_pid" 2>/dev/null || true
"$master_bin" --rpc_port="$rpc_port" --metrics_port=0 "${master_flags[@]}" \
  >"$work/master2.log" 2>&1 &
master_pid=$!
wait_line "$work/master2.log" "rpc port" >/dev/null || die "the master did not restart"
grep -E "restored|no usable snapshot" "$work/master2.log" || true
restored="$(sed -n 's/.*restored snapshot [^:]*: \([0-9]*\) objects.*/\1/p' "$work/master2.log")"
echo "   restored ${restored:-no} objects of all tenants (the master held $held at the kill);" \
  "the demo's, by key prefix:"
"${cli[@]}" ls | sed -E 's/-[0-9]+$//' | sort | uniq -c | sed 's/^ */     /'
[ "${restored:-}" = "$held" ] ||
  die "the master restored ${restored:-no} objects, not the $held it held at the kill"
# The nodes remount within a ping and re-report their SSD contents.
sleep 2
echo "== shelfmark-cli verify after the restart"
verify_all
echo "== (engines as light clients of a store service per host: scripts/demo.sh --standalone)"
echo "== stopping the nodes and the master"
