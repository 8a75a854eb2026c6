#!/usr/bin/env bash
# The standalone-store demo (`scripts/demo.sh --standalone`; docs/node.md,
# "The host's store service"): a store service per "host", engine processes
# that come and go as light clients of it.
#
# Starts a shelfmark-master (--enable_offload) and two
# shelfmark-store-services, as two hosts would run them: service a
# (segment 127.0.0.1:50052) and service b (127.0.0.1:50053, --enable_offload:
# an SSD tier in the temporary directory), each with a 128 MiB segment and a
# unix socket of its own. The engines are Python processes
# (scripts/demo_engine.py: mooncake.store's setup_dummy, buffers in
# MooncakeHostMemAllocator memory): engine A puts 256 x 64 KiB through
# service a and exits; engine C puts one 64 KiB object at a time through
# service b and is killed with SIGKILL mid-run. Once b's tier holds C's
# objects, service b restarts (SIGTERM, then the same socket and SSD
# directory). Then engine B reads everything through service b and engine D
# through service a (connected as vLLM's connector is: setup with a
# "standalone-store" mooncake_config.json), byte-exact, each looking up
# first where every replica lies; the table shows per read who wrote and
# who read, the objects byte-exact, the get's time and where the bytes were
# (the service's own DRAM: a memcpy in it; the other service's DRAM: a UCX
# read by it; an SSD tier: LOCAL_DISK). Every program proves a random cluster token from a
# mode-600 file. Exits non-zero on any mismatch. Stops everything it
# started, by process id.
#
# Usage: scripts/demo.sh --standalone [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
script=demo_standalone
# shellcheck source=scripts/lib/cluster.sh
. "$root/scripts/lib/cluster.sh"

build="$(build_tree "${1:-}")"
master_bin="$(find_binary "$build" shelfmark-master)"
service_bin="$(find_binary "$build" shelfmark-store-service)"
[ -d "$build/python" ] || die "no $build/python: the build has no Python package (pybind11-dev)"
python="$(command -v /usr/bin/python3 || command -v python3)"
engine=("$python" "$root/scripts/demo_engine.py")
export PYTHONPATH="$build/python"

work="$(mktemp -d -t shelfmark-standalone.XXXXXX)"
declare -A service_pid service_http
pids=()
cleanup() {
  for p in "${pids[@]}" "${service_pid[@]}"; do stop_pid "$p" || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The token as the default demo has it: random, in a mode-600 file every
# program reads; none from this shell's environment.
unset SHELFMARK_CLUSTER_TOKEN SHELFMARK_MASTER_TOKEN
token_file="$work/cluster_token"
write_cluster_token "$token_file"

start_master "$master_bin" "$work/master.log" --cluster_token_file="$token_file" --enable_offload
pids+=("$master_pid")
echo "== master: rpc 127.0.0.1:$rpc_port (--enable_offload)"

# start_service NAME PORT [FLAG...]: shelfmark-store-service NAME, segment
# 127.0.0.1:PORT of 128 MiB, socket $work/NAME.sock, metrics on a free port.
start_service() {
  local name="$1" port="$2" log
  shift 2
  log="$work/service-$name.$(date +%s%N).log"
  MOONCAKE_OFFLOAD_FILE_STORAGE_PATH="$work/ssd-$name" \
    "$service_bin" --master_server_address="127.0.0.1:$rpc_port" --host=127.0.0.1 \
    --port="$port" --global_segment_size=$((128 << 20)) --socket_path="$work/$name.sock" \
    --cluster_token_file="$token_file" --enable_http_server --http_port=0 "$@" >"$log" 2>&1 &
  service_pid[$name]=$!
  wait_line "$log" "socket " >/dev/null || die "shelfmark-store-service $name did not start"
  service_http[$name]="$(sed -n 's/.*http port \([0-9]*\).*/\1/p' "$log" | head -n 1)"
  echo "== service $name: $(grep -m1 'segment ' "$log" | sed 's/^[^:]*: //')${*:+ ($*)}"
}
# service_metric NAME METRIC: METRIC's value on service NAME's /metrics.
service_metric() {
  curl -fsS "http://127.0.0.1:${service_http[$1]}/metrics" |
    awk -v n="$2" '$1 == n { v = $2 } END { printf "%d\n", v }'
}
# wait_metric NAME METRIC AT_LEAST: waits up to 30 s for METRIC >= AT_LEAST.
wait_metric() {
  for _ in $(seq 300); do
    [ "$(service_metric "$1" "$2")" -ge "$3" ] && return 0
    sleep 0.1
  done
  die "service $1: $2 did not reach $3 within 30 s"
}
mkdir -p "$work/ssd-b"
start_service a 50052
start_service b 50053 --enable_offload
seg_a=127.0.0.1:50052
seg_b=127.0.0.1:50053

count=256
size=$((64 << 10))
echo "== engine A: batch_put_from of $count x 64 KiB through service a (into $seg_a), then exits"
"${engine[@]}" put "$token_file" "$work/a.sock" "$seg_a" engine-a- "$count" "$size" |
  sed 's/^/   /'

echo "== engine C: put_from one 64 KiB object at a time through service b (into $seg_b);"
echo "   SIGKILL once 200 puts were acknowledged"
"${engine[@]}" loop "$token_file" "$work/b.sock" "$seg_b" engine-c- "$size" >"$work/loop-c.out" &
loop_pid=$!
pids+=("$loop_pid")
wait_line "$work/loop-c.out" "^acked 199$" >/dev/null || die "engine C did not put 200 objects"
kill -9 "$loop_pid"
wait "$loop_pid" 2>/dev/null || true
acked="$(grep -c '^acked ' "$work/loop-c.out")"
echo "   killed after $acked acknowledged puts; service b now: clients" \
  "$(service_metric b shelfmark_store_service_clients), mapped bytes" \
  "$(service_metric b shelfmark_store_service_mapped_bytes) (C's shared memory unmapped)"

wait_metric b shelfmark_store_service_offloaded_objects_total "$acked"
curl -fsS "http://127.0.0.1:$metrics_port/get_segments_detail" >"$work/segments-before.json"
echo "== service b's SSD tier holds $(service_metric b shelfmark_store_service_disk_objects)" \
  "objects; restarting service b (SIGTERM, then the same socket and SSD directory)"
stop_pid "${service_pid[b]}" || die "service b did not stop cleanly"
start_service b 50053 --enable_offload
wait_metric b shelfmark_store_service_disk_reported_objects_total "$acked"
echo "   re-reported $(service_metric b shelfmark_store_service_disk_reported_objects_total)" \
  "objects from its tier"

# The segments' transport endpoints, before and after the restart, name the
# places the engines' lookups report.
curl -fsS "http://127.0.0.1:$metrics_port/get_segments_detail" >"$work/segments.json"
segments="$work/segments-before.json,$work/segments.json"
# read_all ENGINE SERVICE: the engine reads both sets through SERVICE.
failed=0
read_all() {
  local sock="$work/$2.sock" seg
  seg="$([ "$2" = a ] && echo "$seg_a" || echo "$seg_b")"
  "${engine[@]}" get "$token_file" "$sock" "$seg" "$segments" engine-a- "$count" \
    "$size" "A via a (exited)" "$1 via $2" >>"$work/reads.json" || failed=1
  "${engine[@]}" get "$token_file" "$sock" "$seg" "$segments" engine-c- "$acked" \
    "$size" "C via b (kill -9)" "$1 via $2" >>"$work/reads.json" || failed=1
}
echo "== engine B (setup_dummy) reads every acknowledged object through service b, then engine D"
echo "   through service a, connected as vLLM's connector is (setup with a mooncake_config.json"
echo "   of \"mode\": \"standalone-store\")"
read_all B b
cat >"$work/mooncake_config.json" <<EOF
{"mode": "standalone-store", "local_hostname": "localhost", "metadata_server": "P2PHANDSHAKE",
 "master_server_address": "127.0.0.1:$rpc_port", "global_segment_size": 0,
 "local_buffer_size": "16MB", "protocol": "tcp", "client_server_address": "$work/a.sock"}
EOF
MOONCAKE_CONFIG_PATH="$work/mooncake_config.json" read_all D a
"${engine[@]}" table "$work/reads.json"
disk="$(service_metric b shelfmark_store_service_disk_requests_total)"
echo "   service b's tier answered $disk LOCAL_DISK reads;" \
  "C's put in flight at the kill: $(grep -q '"next_key": true' "$work/reads.json" &&
    echo "present and whole" || echo "absent")"
[ "$failed" = 0 ] || die "a read was not byte-exact (see the table)"
echo "== every object byte-exact; stopping the services and the master"
