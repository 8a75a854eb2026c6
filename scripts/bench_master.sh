#!/usr/bin/env bash
# Benchmarks the master: RPC throughput and latency (put, get_replica_list;
# batch 1 and 128; 1 and 16 connections), DRAM per object, and Redis on the
# same machine as a baseline. Works on a fresh Debian 12 machine.
#
# Usage: scripts/bench_master.sh [BUILD_DIR]
#   BUILD_DIR  a built tree (default: scripts/build.sh's RelWithDebInfo tree)
# Environment (all optional):
#   BENCH_OUT          JSON lines output (default out/bench_master.jsonl; rewritten)
#   BENCH_SECONDS      seconds per timed op (default 5)
#   BENCH_BATCHES      batch sizes (default "1 128")
#   BENCH_CONNECTIONS  connection counts (default "1 16")
#   BENCH_OBJECTS      object counts of the memory runs (default "1000000 10000000";
#                      empty: no memory run)
#   REDIS_REQUESTS     requests per redis-benchmark run (default 2000000)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

out="${BENCH_OUT:-$root/out/bench_master.jsonl}"
seconds="${BENCH_SECONDS:-5}"
batches="${BENCH_BATCHES:-1 128}"
connections="${BENCH_CONNECTIONS:-1 16}"
objects="${BENCH_OBJECTS-1000000 10000000}"
redis_requests="${REDIS_REQUESTS:-2000000}"

script=bench_master
# shellcheck source=scripts/lib/cluster.sh
. "$root/scripts/lib/cluster.sh"

build="$(build_tree "${1:-}")"
master_bin="$(find_binary "$build" shelfmark-master)"
perf_bin="$(find_binary "$build" shelfmark-perf)"

mkdir -p "$(dirname "$out")"
: > "$out"
logdir="$(dirname "$out")"
master_pid=""
master_starts=0
redis_pid=""
cleanup() {
  stop_pid "$master_pid" || true
  stop_pid "$redis_pid" || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Each start gets its own log.
restart_master() {
  stop_pid "$master_pid" || true
  start_master "$master_bin" "$logdir/bench_master.master.$((++master_starts)).log"
}

perf() {
  log "shelfmark-perf master $*"
  "$perf_bin" master --master="127.0.0.1:$rpc_port" --metrics="127.0.0.1:$metrics_port" \
    --json "$@" >>"$out" || log "shelfmark-perf master $* exited with $? (results kept)"
}

log "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); results in $out"
restart_master
for b in $batches; do
  for c in $connections; do
    perf --batch="$b" --connections="$c" --seconds="$seconds"
  done
done
# Each memory run gets a fresh master: RSS freed by earlier runs stays in the
# allocator's arenas and would hide part of the cost.
for n in $objects; do
  restart_master
  perf --objects="$n"
done
stop_pid "$master_pid" || true
master_pid=""

# Redis baseline on the same machine.
redis_port="$(free_port)"
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no \
  >"$logdir/bench_master.redis.log" 2>&1 &
redis_pid=$!
wait_redis "$redis_port" "$redis_pid" 10 "$logdir/bench_master.redis.log"
declare -A redis_rps
for pipeline in 128 1; do
  log "redis-benchmark -t get,set -P $pipeline -n $redis_requests"
  while IFS= read -r line; do
    # "GET: 1234567.89 requests per second, p50=0.455 msec"
    op="$(echo "$line" | sed -n 's/^\([A-Z]*\): .*/\1/p' | tr '[:upper:]' '[:lower:]')"
    rps="$(echo "$line" | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p')"
    [ -n "$op" ] && [ -n "$rps" ] || continue
    redis_rps["$op,$pipeline"]="$rps"
    echo "{\"bench\":\"redis\",\"op\":\"$op\",\"pipeline\":$pipeline,\"clients\":50,\"requests_per_s\":$rps}" >>"$out"
  done < <(redis-benchmark -p "$redis_port" -t get,set -P "$pipeline" -n "$redis_requests" -q 2>&1 |
             tr '\r' '\n' | grep 'requests per second')
done
stop_pid "$redis_pid" || true
redis_pid=""

# Summary from the JSON lines.
pick() { grep "\"op\":\"$1\",\"batch\":$2,\"connections\":$3," "$out" || true; }
big_batch="$(printf '%s\n' $batches | sort -n | tail -n 1)"
best_batched_get=0
best_conns="-"
for c in $connections; do
  v="$(pick get_replica_list "$big_batch" "$c" | json_field keys_per_s)"
  if [ -n "$v" ] && awk -v a="$v" -v b="$best_batched_get" 'BEGIN{exit !(a>b)}'; then
    best_batched_get="$v"; best_conns="$c"
  fi
done
redis_get="${redis_rps[get,128]:-0}"
ratio="$(awk -v a="$best_batched_get" -v b="$redis_get" 'BEGIN{ if (b>0) printf "%.2f", a/b; else print "n/a" }')"

echo
echo "=== shelfmark master benchmark summary ($(nproc) CPUs) ==="
printf "%-52s %15s\n" "measure" "value"
printf "%-52s %15.0f\n" "get_replica_list batch=$big_batch conns=$best_conns keys/s" "$best_batched_get"
printf "%-52s %15.0f\n" "redis GET -P 128 (50 clients) requests/s" "$redis_get"
printf "%-52s %15s\n" "ratio shelfmark / redis (batched)" "$ratio"
printf "%-52s %15.0f\n" "redis GET -P 1 (50 clients) requests/s" "${redis_rps[get,1]:-0}"
printf "%-52s %15.0f\n" "redis SET -P 128 (50 clients) requests/s" "${redis_rps[set,128]:-0}"
for op in get_replica_list put; do
  for c in $connections; do
    line="$(pick "$op" 1 "$c")"
    [ -n "$line" ] || continue
    printf "%-52s %15s\n" "$op batch=1 conns=$c p50 us (keys/s)" \
      "$(echo "$line" | json_field p50_us) ($(echo "$line" | json_field keys_per_s | cut -d. -f1))"
  done
done
grep '"op":"memory"' "$out" | while IFS= read -r line; do
  printf "%-52s %15s\n" "bytes/object at $(echo "$line" | json_field objects) objects (beyond key)" \
    "$(echo "$line" | json_field bytes_per_object) ($(echo "$line" | json_field overhead_beyond_key_bytes))"
done
errors="$(grep '"bench":"master"' "$out" | sed -n 's/.*"errors":\([0-9]*\).*/\1/p' | awk '{s+=$1} END{print s+0}')"
printf "%-52s %15s\n" "non-OK answers in all master runs" "$errors"
echo "JSON lines: $out"
