#!/usr/bin/env bash
# The whole get against its baselines, in one run on this machine (issue 14):
# starts a shelfmark-master and a ucx shelfmark-node on 127.0.0.1 (so reads
# are same-host: the node's shared segment, docs/transport.md) and measures
# per object size
#   - cold:  `shelfmark-perf get --location_cache=false` (a master lookup and
#            a read per get; the lookup over the master's lookup channel),
#   - cold_capnp: the same with the lookup over Cap'n Proto RPC
#            (`--lookup_channel=false`), the baseline of the lookup channel,
#   - hot:   `--keys=1 --location_cache=true` (one key read again and again:
#            the cached location, no master RPC),
#   - read:  `shelfmark-perf read` (the read alone, the raw UCX get of the
#            same bytes, and memcpy of the same size in one process),
#   - redis: redis-server's GET of a value of the same size at one client
#            (`redis-benchmark -c 1 -P 1 -d SIZE -t set,get`),
# then prints a summary with the ratios the issue asks for.
#
# Usage: scripts/bench_hot_get.sh [BUILD_DIR]
# Environment (all optional):
#   BENCH_SIZES   object sizes (default 4096,65536,1048576)
#   BENCH_ITERS   timed operations per measure and size (default 5000)
#   BENCH_OUT     JSON lines output (default out/bench_hot_get.jsonl; rewritten)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

sizes="${BENCH_SIZES:-4096,65536,1048576}"
iters="${BENCH_ITERS:-5000}"
out="${BENCH_OUT:-$root/out/bench_hot_get.jsonl}"

script=bench_hot_get
# shellcheck source=scripts/lib/cluster.sh
. "$root/scripts/lib/cluster.sh"

cluster_binaries "${1:-}"

mkdir -p "$(dirname "$out")"
: > "$out"
work="$(mktemp -d)"
master_pid=""
node_pid=""
redis_pid=""
cleanup() {
  stop_pid "$redis_pid" || true
  stop_pid "$node_pid" || true
  stop_pid "$master_pid" || true
  rm -rf "$work"
}
trap cleanup EXIT

start_master "$master_bin" "$work/master.err"
"$node_bin" --master="127.0.0.1:$rpc_port" --segment_size=268435456 --protocol=ucx \
  --listen_ip=127.0.0.1 --metrics_port=0 2> "$work/node.err" &
node_pid=$!
wait_line "$work/node.err" "^node .* endpoint" >/dev/null || die "node did not mount"
log "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"

get() {  # label, then shelfmark-perf get flags
  local label="$1"
  shift
  "$perf_bin" get --master="127.0.0.1:$rpc_port" --replica=memory --size="$sizes" \
    --iters="$iters" --json "$@" 2>>"$work/perf.err" |
    sed "s/^{/{\"measure\":\"$label\",/" >> "$out"
}
get cold --keys=100 --location_cache=false
get cold_capnp --keys=100 --location_cache=false --lookup_channel=false
get hot --keys=1 --location_cache=true
get hot_uncached --keys=1 --location_cache=false
"$perf_bin" read --master="127.0.0.1:$rpc_port" --protocol=ucx --size="$sizes" \
  --iters="$iters" --json 2>>"$work/perf.err" | sed 's/^{/{"measure":"read",/' >> "$out"
grep "same-host reads" "$work/perf.err" | tail -n 1 >&2 || true

redis_port="$(free_port)"
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no \
  > "$work/redis.log" 2>&1 &
redis_pid=$!
wait_redis "$redis_port" "$redis_pid" 10 "$work/redis.log"
for size in ${sizes//,/ }; do
  # CSV: "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",...
  p50_ms="$(redis-benchmark -p "$redis_port" -c 1 -P 1 -n "$iters" -d "$size" -t set,get --csv |
            tr -d '"' | awk -F, '$1 == "GET" { print $5 }')"
  echo "{\"measure\":\"redis\",\"size\":$size,\"p50_us\":$(awk -v m="$p50_ms" 'BEGIN{printf "%.2f", m*1000}')}" >> "$out"
done

# Summary from the JSON lines.
field() { grep "\"measure\":\"$1\"" "$out" | grep "\"size\":$2," | json_field "$3"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
echo
echo "=== shelfmark get vs redis GET and memcpy ($(nproc) CPUs, p50 in us) ==="
printf "%9s %9s %10s %9s %12s %9s %10s %10s %12s %12s %10s\n" size cold cold_capnp hot \
  hot_nocache redis cold/redis hot/redis read_gbps memcpy_gbps read/memcpy
for size in ${sizes//,/ }; do
  cold="$(field cold "$size" p50_us)"
  cold_capnp="$(field cold_capnp "$size" p50_us)"
  hot="$(field hot "$size" p50_us)"
  nocache="$(field hot_uncached "$size" p50_us)"
  redis="$(field redis "$size" p50_us)"
  read_gbps="$(field read "$size" gbps)"
  memcpy_gbps="$(field read "$size" memcpy_gbps)"
  printf "%9s %9s %10s %9s %12s %9s %10s %10s %12s %12s %10s\n" "$size" "$cold" "$cold_capnp" \
    "$hot" "$nocache" \
    "$redis" "$(ratio "$cold" "$redis")" "$(ratio "$hot" "$redis")" "$read_gbps" \
    "$memcpy_gbps" "$(ratio "$read_gbps" "$memcpy_gbps")"
done
echo "JSON lines: $out"
