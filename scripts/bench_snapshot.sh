#!/usr/bin/env bash
# Benchmarks master snapshots (fork pause, child time, bytes, copy-on-write,
# restore) with `shelfmark-perf snapshot`, and Redis on the same machine with
# the same number of keys as the baseline: BGSAVE's fork time per GiB of RSS
# (INFO latest_fork_usec, used_memory_rss) and the RDB load time of a restart
# ("DB loaded from disk: X seconds" in its log). One JSON line per object
# count holds both. Works on a fresh Debian 12 machine.
#
# Usage: scripts/bench_snapshot.sh [BUILD_DIR]
#   BUILD_DIR  a built tree (default: scripts/build.sh's RelWithDebInfo tree)
# Environment (all optional):
#   BENCH_OUT       JSON lines output (default out/bench_snapshot.jsonl; rewritten)
#   BENCH_OBJECTS   object counts (default "1000000 10000000")
#   BENCH_DIR       where snapshots and the RDB file are written (default: a temp dir)
#   REDIS_VALUE     bytes per Redis value (default 64: a metadata-sized record)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

out="${BENCH_OUT:-$root/out/bench_snapshot.jsonl}"
objects="${BENCH_OBJECTS-1000000 10000000}"
redis_value="${REDIS_VALUE:-64}"

script=bench_snapshot
# shellcheck source=scripts/lib/cluster.sh
. "$root/scripts/lib/cluster.sh"

build="$(build_tree "${1:-}")"
perf_bin="$(find_binary "$build" shelfmark-perf)"

work="${BENCH_DIR:-}"
made_work=""
if [ -z "$work" ]; then work="$(mktemp -d)"; made_work=1; fi
mkdir -p "$work" "$(dirname "$out")"
: > "$out"
redis_pid=""
cleanup() {
  stop_pid "$redis_pid" || true
  rm -rf "$work/redis"
  [ -z "$made_work" ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# redis-server in $work/redis with an RDB file there; loads it when present.
start_redis() {
  redis_port="$(free_port)"
  redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$work/redis" \
    --dbfilename bench.rdb --save "" --appendonly no --enable-debug-command local \
    --logfile "$work/redis/redis.log" &
  redis_pid=$!
  wait_redis "$redis_port" "$redis_pid" 60 "$work/redis/redis.log"
}

stop_redis() {
  redis-cli -p "$redis_port" shutdown nosave >/dev/null 2>&1 || true
  wait "$redis_pid" 2>/dev/null || true
  redis_pid=""
}

info_field() { redis-cli -p "$redis_port" info "$1" | tr -d '\r' | sed -n "s/^$2:\(.*\)/\1/p"; }

# Sets redis_fork_ms_per_gb and redis_load_ms for $1 keys.
redis_baseline() {
  local n="$1"
  rm -rf "$work/redis"
  mkdir -p "$work/redis"
  start_redis
  log "redis: DEBUG POPULATE $n keys of $redis_value-byte values"
  redis-cli -p "$redis_port" debug populate "$n" key "$redis_value" >/dev/null
  local rss
  rss="$(info_field memory used_memory_rss)"
  redis-cli -p "$redis_port" bgsave >/dev/null
  for _ in $(seq 1 6000); do
    [ "$(info_field persistence rdb_bgsave_in_progress)" = "0" ] && break
    sleep 0.1
  done
  [ "$(info_field persistence rdb_last_bgsave_status)" = "ok" ] || die "redis BGSAVE failed"
  local fork_usec
  fork_usec="$(info_field stats latest_fork_usec)"
  redis_fork_ms_per_gb="$(awk -v u="$fork_usec" -v r="$rss" \
    'BEGIN{ printf "%.3f", (u / 1000) / (r / 1073741824) }')"
  stop_redis
  start_redis
  # "DB loaded from disk: 1.234 seconds"
  local seconds
  seconds="$(sed -n 's/.*DB loaded from disk: \([0-9.]*\) seconds.*/\1/p' "$work/redis/redis.log" |
             tail -n 1)"
  [ -n "$seconds" ] || die "no 'DB loaded from disk' line in $work/redis/redis.log"
  redis_load_ms="$(awk -v s="$seconds" 'BEGIN{ printf "%.1f", s * 1000 }')"
  log "redis: rss $rss bytes, fork $fork_usec us ($redis_fork_ms_per_gb ms/GiB), load $redis_load_ms ms"
  stop_redis
  rm -rf "$work/redis"
}

log "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); results in $out"
for n in $objects; do
  redis_baseline "$n"
  log "shelfmark-perf snapshot --objects=$n"
  "$perf_bin" snapshot --objects="$n" --dir="$work" --json \
    --redis_fork_ms_per_gb="$redis_fork_ms_per_gb" --redis_load_ms="$redis_load_ms" >>"$out" ||
    die "shelfmark-perf snapshot --objects=$n failed"
done

# Summary from the JSON lines.
echo
echo "=== shelfmark snapshot benchmark ($(nproc) CPUs) ==="
printf "%-12s %12s %14s %14s %12s %12s %12s %12s %14s\n" objects "pause ms" "pause ms/GiB" \
  "redis ms/GiB" "child ms" "bytes/obj" "cow MiB" "restore ms" "redis load ms"
while IFS= read -r line; do
  printf "%-12s %12s %14s %14s %12s %12s %12s %12s %14s\n" \
    "$(echo "$line" | json_field objects)" "$(echo "$line" | json_field fork_pause_ms)" \
    "$(echo "$line" | json_field fork_pause_ms_per_gb)" "$(echo "$line" | json_field redis_fork_ms_per_gb)" \
    "$(echo "$line" | json_field child_ms)" "$(echo "$line" | json_field snapshot_bytes_per_object)" \
    "$(awk -v b="$(echo "$line" | json_field cow_bytes)" 'BEGIN{ printf "%.1f", b / 1048576 }')" \
    "$(echo "$line" | json_field restore_ms)" "$(echo "$line" | json_field redis_load_ms)"
done < "$out"
echo "JSON lines: $out"
