#!/usr/bin/env bash
# Benchmarks the master: RPC throughput and latency (put, get_replica_list;
# batch 1 and 128; 1 and 16 connections), lookups over the lookup channel
# (the default) and over Cap'n Proto RPC (--lookup_channel=false) side by
# side, over all the keys the put phase fits and over a hot set of 1000
# keys, DRAM per object, and Redis on the same machine as a baseline: GET
# at one client (-c 1 -P 1, p50), pipelined GET of one key (-P 128 -c 16,
# what redis-benchmark measures by default) and of 1,000,000 random keys
# (-r, after SETting them), the same key counts as ours. Works on a fresh
# Debian 12 machine.
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

perf() {  # VARIANT, then shelfmark-perf master flags
  local variant="$1"
  shift
  log "shelfmark-perf master $*"
  "$perf_bin" master --master="127.0.0.1:$rpc_port" --metrics="127.0.0.1:$metrics_port" \
    --json "$@" | sed "s/^{/{\"variant\":\"$variant\",/" >>"$out" ||
    log "shelfmark-perf master $* exited with $? (results kept)"
}

log "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); results in $out"
big_batch="$(printf '%s\n' $batches | sort -n | tail -n 1)"
restart_master
for b in $batches; do
  for c in $connections; do
    perf channel --batch="$b" --connections="$c" --seconds="$seconds"
    perf capnp --batch="$b" --connections="$c" --seconds="$seconds" --lookup_channel=false
  done
done
for c in $connections; do
  perf channel_hot --batch="$big_batch" --connections="$c" --seconds="$seconds" --keys=1000
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
# redis_get NAME redis-benchmark flags...: GET requests/s into redis_rps[NAME].
redis_get() {
  local name="$1" rps
  shift
  log "redis-benchmark -t get $*"
  rps="$(redis-benchmark -p "$redis_port" -t get -q "$@" 2>&1 | tr '\r' '\n' |
         sed -n 's/^GET: \([0-9.]*\) requests per second.*/\1/p' | tail -n 1)"
  redis_rps["$name"]="${rps:-0}"
  echo "{\"bench\":\"redis\",\"variant\":\"$name\",\"op\":\"get\",\"requests_per_s\":${rps:-0}}" >>"$out"
}
redis_get hot_p128_c16 -P 128 -c 16 -n "$redis_requests"
redis_get p128_c50 -P 128 -n "$redis_requests"
redis_get p1_c50 -P 1 -n "$redis_requests"
log "redis-benchmark -t set -r 1000000 (the random keys' values)"
redis-benchmark -p "$redis_port" -t set -r 1000000 -n 3000000 -P 128 -c 16 -q >/dev/null 2>&1
redis_get random_p128_c16 -P 128 -c 16 -r 1000000 -n "$redis_requests"
# One client, one request at a time: the p50 (CSV: test,rps,avg,min,p50,...).
redis_c1_p50_ms="$(redis-benchmark -p "$redis_port" -t get -c 1 -P 1 -n 50000 --csv |
                   tr -d '"' | awk -F, '$1 == "GET" { print $5 }')"
redis_c1_p50_us="$(awk -v m="${redis_c1_p50_ms:-0}" 'BEGIN{printf "%.1f", m*1000}')"
echo "{\"bench\":\"redis\",\"variant\":\"c1\",\"op\":\"get\",\"p50_us\":$redis_c1_p50_us}" >>"$out"
stop_pid "$redis_pid" || true
redis_pid=""

# Summary from the JSON lines.
pick() {  # VARIANT OP BATCH CONNECTIONS
  grep "\"variant\":\"$1\"" "$out" | grep "\"op\":\"$2\",\"batch\":$3,\"connections\":$4," || true
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
best() {  # VARIANT: the best batched get_replica_list keys/s over the connection counts
  local v best=0
  for c in $connections; do
    v="$(pick "$1" get_replica_list "$big_batch" "$c" | json_field keys_per_s)"
    if [ -n "$v" ] && awk -v a="$v" -v b="$best" 'BEGIN{exit !(a>b)}'; then best="$v"; fi
  done
  echo "$best"
}
channel_batched="$(best channel)"
capnp_batched="$(best capnp)"
hot_batched="$(best channel_hot)"
channel_p50="$(pick channel get_replica_list 1 1 | json_field p50_us)"
capnp_p50="$(pick capnp get_replica_list 1 1 | json_field p50_us)"

echo
echo "=== shelfmark master benchmark summary ($(nproc) CPUs) ==="
printf "%-60s %12s %8s\n" "measure" "value" "ratio"
printf "%-60s %12.0f\n" "get_replica_list batch=$big_batch keys/s, all keys, lookup channel" "$channel_batched"
printf "%-60s %12.0f %8s\n" "  same over Cap'n Proto RPC (ratio: channel / capnp)" "$capnp_batched" \
  "$(ratio "$channel_batched" "$capnp_batched")"
printf "%-60s %12.0f %8s\n" "  redis GET -P 128 -c 16 -r 1000000 (ratio: channel / redis)" \
  "${redis_rps[random_p128_c16]}" "$(ratio "$channel_batched" "${redis_rps[random_p128_c16]}")"
printf "%-60s %12.0f\n" "get_replica_list batch=$big_batch keys/s, 1000 hot keys, channel" "$hot_batched"
printf "%-60s %12.0f %8s\n" "  redis GET -P 128 -c 16 of one key (ratio: channel / redis)" \
  "${redis_rps[hot_p128_c16]}" "$(ratio "$hot_batched" "${redis_rps[hot_p128_c16]}")"
printf "%-60s %12s\n" "get_replica_list batch=1 conns=1 p50 us, lookup channel" "$channel_p50"
printf "%-60s %12s %8s\n" "  same over Cap'n Proto RPC (ratio: channel / capnp)" "$capnp_p50" \
  "$(ratio "$channel_p50" "$capnp_p50")"
printf "%-60s %12s %8s\n" "  redis GET -c 1 -P 1 p50 us (ratio: channel / redis)" "$redis_c1_p50_us" \
  "$(ratio "$channel_p50" "$redis_c1_p50_us")"
printf "%-60s %12.0f\n" "redis GET -P 128 (50 clients) requests/s" "${redis_rps[p128_c50]}"
printf "%-60s %12.0f\n" "redis GET -P 1 (50 clients) requests/s" "${redis_rps[p1_c50]}"
for op in get_replica_list put; do
  for c in $connections; do
    line="$(pick channel "$op" 1 "$c")"
    [ -n "$line" ] || continue
    printf "%-60s %12s\n" "$op batch=1 conns=$c p50 us (keys/s)" \
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
