#!/usr/bin/env bash
# Benchmarks the master: RPC throughput and latency (put, get_replica_list;
# batch 1 and 128; 1 and 16 connections), lookups over the lookup channel
# (the default) and over Cap'n Proto RPC (--lookup_channel=false) side by
# side, over all the keys the put phase fits and over a hot set of 1000
# keys, DRAM per object, and Redis on the same machine as a baseline: GET
# at one client (-c 1 -P 1, p50), pipelined GET of one key (-P 128 -c 16,
# what redis-benchmark measures by default) and of 1,000,000 random keys
# (-r, after SETting them), the same key counts as ours. Then the write
# path (issue 32's table): unbatched put (PutStart + PutEnd) p50 at one
# connection and keys/s at 16, batched puts (128 keys a call, 16
# connections) and existence checks at the same shapes, each over the
# framed channel (the default) and over Cap'n Proto (the old path), against
# redis-benchmark SET and EXISTS at the same shape (-c, -P) over 1,000,000
# random keys. Works on a fresh Debian 12 machine.
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
#   BENCH_PIN=1        the same CPU placement for both systems: the server
#                      (shelfmark-master, redis-server) on CPU 0, a client of
#                      one connection on CPU 0 beside it (no cross-CPU wake-up
#                      per request, as on a quiet core of a big machine), a
#                      client of several connections on CPU 1 (the server
#                      keeps a CPU to itself); unset: the scheduler places all
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

out="${BENCH_OUT:-$root/out/bench_master.jsonl}"
seconds="${BENCH_SECONDS:-5}"
batches="${BENCH_BATCHES:-1 128}"
connections="${BENCH_CONNECTIONS:-1 16}"
objects="${BENCH_OBJECTS-1000000 10000000}"
redis_requests="${REDIS_REQUESTS:-2000000}"

pinned="${BENCH_PIN:-0}"

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

# on_cpu CONNECTIONS COMMAND...: runs a client of CONNECTIONS connections
# where BENCH_PIN places it (see above); unpinned, as it is.
on_cpu() {
  local c="$1"
  shift
  if [ "$pinned" != 1 ]; then
    "$@"
  elif [ "$c" -le 1 ] || [ "$(nproc)" -lt 2 ]; then
    taskset -c 0 "$@"
  else
    taskset -c 1 "$@"
  fi
}
# pin_server PID: every thread of PID on CPU 0 (BENCH_PIN=1 only).
pin_server() {
  if [ "$pinned" = 1 ]; then taskset -a -pc 0 "$1" >/dev/null; fi
}

# Each start gets its own log.
restart_master() {
  stop_pid "$master_pid" || true
  start_master "$master_bin" "$logdir/bench_master.master.$((++master_starts)).log"
  pin_server "$master_pid"
}

perf() {  # VARIANT CONNECTIONS, then more shelfmark-perf master flags
  local variant="$1" c="$2"
  shift 2
  log "shelfmark-perf master --connections=$c $*"
  on_cpu "$c" "$perf_bin" master --master="127.0.0.1:$rpc_port" \
    --metrics="127.0.0.1:$metrics_port" --connections="$c" --json "$@" |
    sed "s/^{/{\"variant\":\"$variant\",/" >>"$out" ||
    log "shelfmark-perf master --connections=$c $* exited with $? (results kept)"
}

log "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), BENCH_PIN=$pinned; results in $out"
big_batch="$(printf '%s\n' $batches | sort -n | tail -n 1)"
restart_master
for b in $batches; do
  for c in $connections; do
    perf channel "$c" --batch="$b" --seconds="$seconds"
    perf capnp "$c" --batch="$b" --seconds="$seconds" --lookup_channel=false
  done
done
for c in $connections; do
  perf channel_hot "$c" --batch="$big_batch" --seconds="$seconds" --keys=1000
done
# Each memory run gets a fresh master: RSS freed by earlier runs stays in the
# allocator's arenas and would hide part of the cost.
for n in $objects; do
  restart_master
  perf memory 1 --objects="$n"
done
stop_pid "$master_pid" || true
master_pid=""

# Redis baseline on the same machine.
redis_port="$(free_port)"
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no \
  >"$logdir/bench_master.redis.log" 2>&1 &
redis_pid=$!
pin_server "$redis_pid"
wait_redis "$redis_port" "$redis_pid" 10 "$logdir/bench_master.redis.log"
declare -A redis_rps
# clients_of redis-benchmark flags...: its -c (redis-benchmark's default: 50).
clients_of() {
  local c=50
  while [ $# -gt 0 ]; do
    if [ "$1" = -c ]; then c="$2"; fi
    shift
  done
  echo "$c"
}
# redis_get NAME redis-benchmark flags...: GET requests/s into redis_rps[NAME].
redis_get() {
  local name="$1" rps
  shift
  log "redis-benchmark -t get $*"
  rps="$(on_cpu "$(clients_of "$@")" redis-benchmark -p "$redis_port" -t get -q "$@" 2>&1 | tr '\r' '\n' |
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
redis_c1_p50_ms="$(on_cpu 1 redis-benchmark -p "$redis_port" -t get -c 1 -P 1 -n 50000 --csv |
                   tr -d '"' | awk -F, '$1 == "GET" { print $5 }')"
redis_c1_p50_us="$(awk -v m="${redis_c1_p50_ms:-0}" 'BEGIN{printf "%.1f", m*1000}')"
echo "{\"bench\":\"redis\",\"variant\":\"c1\",\"op\":\"get\",\"p50_us\":$redis_c1_p50_us}" >>"$out"
# The write path's baselines: SET and EXISTS at each of our shapes (CSV:
# test,rps,avg,min,p50,...); EXISTS is a custom command, named by its text.
# redis_csv NAME COMMAND-LABEL redis-benchmark flags...: one JSON line.
redis_csv() {
  local name="$1" op="$2" line rps p50_ms
  shift 2
  log "redis-benchmark $* ($name)"
  line="$(on_cpu "$(clients_of "$@")" redis-benchmark -p "$redis_port" --csv "$@" 2>/dev/null | tr -d '"' | tail -n 1)"
  rps="$(echo "$line" | awk -F, '{print $2+0}')"
  p50_ms="$(echo "$line" | awk -F, '{print $5+0}')"
  echo "{\"bench\":\"redis\",\"variant\":\"$name\",\"op\":\"$op\",\"requests_per_s\":${rps:-0},\"p50_us\":$(awk -v m="${p50_ms:-0}" 'BEGIN{printf "%.1f", m*1000}')}" >>"$out"
}
redis_csv set_c1 set -t set -c 1 -P 1 -r 1000000 -n 50000
redis_csv set_c16 set -t set -c 16 -P 1 -r 1000000 -n "$redis_requests"
redis_csv set_p128_c16 set -t set -c 16 -P 128 -r 1000000 -n "$redis_requests"
redis_csv exists_c1 exists -c 1 -P 1 -r 1000000 -n 50000 EXISTS "key:__rand_int__"
redis_csv exists_c16 exists -c 16 -P 1 -r 1000000 -n "$redis_requests" EXISTS "key:__rand_int__"
redis_csv exists_p128_c16 exists -c 16 -P 128 -r 1000000 -n "$redis_requests" \
  EXISTS "key:__rand_int__"
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
{ grep '"op":"memory"' "$out" || true; } | while IFS= read -r line; do
  printf "%-52s %15s\n" "bytes/object at $(echo "$line" | json_field objects) objects (beyond key)" \
    "$(echo "$line" | json_field bytes_per_object) ($(echo "$line" | json_field overhead_beyond_key_bytes))"
done
# The write path: ours over the framed channel and over Cap'n Proto (the
# old path) against redis at the same shape.
redis_field() { grep "\"variant\":\"$1\"" "$out" | json_field "$2"; }
ours() {  # VARIANT OP BATCH CONNECTIONS FIELD
  local v
  v="$(pick "$1" "$2" "$3" "$4" | json_field "$5")"
  echo "${v:-0}"
}
echo
echo "=== write path (issue 32): framed channel vs Cap'n Proto vs redis, same run, BENCH_PIN=$pinned ==="
printf "%-44s %12s %12s %12s %9s %9s\n" "measure" "channel" "capnp" "redis" "ch/redis" "ch/capnp"
row() {  # LABEL OP BATCH CONNECTIONS FIELD REDIS-VARIANT REDIS-FIELD
  local ch cp rd
  ch="$(ours channel "$2" "$3" "$4" "$5")"
  cp="$(ours capnp "$2" "$3" "$4" "$5")"
  rd="$(redis_field "$6" "$7")"
  printf "%-44s %12.1f %12.1f %12.1f %9s %9s\n" "$1" "$ch" "$cp" "${rd:-0}" \
    "$(ratio "$ch" "${rd:-0}")" "$(ratio "$ch" "$cp")"
}
row "put batch=1 conns=1 p50 us (redis SET c=1)" put 1 1 p50_us set_c1 p50_us
row "put batch=1 conns=16 keys/s (SET -c16)" put 1 16 keys_per_s set_c16 requests_per_s
row "put batch=128 conns=16 keys/s (SET -P128 -c16)" put "$big_batch" 16 keys_per_s \
  set_p128_c16 requests_per_s
row "exist batch=1 conns=1 p50 us (EXISTS c=1)" exist_key 1 1 p50_us exists_c1 p50_us
row "exist batch=1 conns=16 keys/s (EXISTS -c16)" exist_key 1 16 keys_per_s exists_c16 \
  requests_per_s
row "exist batch=128 conns=16 keys/s (-P128 -c16)" exist_key "$big_batch" 16 keys_per_s \
  exists_p128_c16 requests_per_s
p1="$(ours channel put 1 1 keys_per_s)"
p16="$(ours channel put 1 16 keys_per_s)"
printf "%-44s %12s\n" "unbatched put scaling, 16 conns / 1 conn" "$(ratio "$p16" "$p1")"

errors="$(grep '"bench":"master"' "$out" | json_fields errors | awk '{s+=$1} END{print s+0}')"
printf "%-52s %15s\n" "non-OK answers in all master runs" "$errors"
echo "JSON lines: $out"
