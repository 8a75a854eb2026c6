#!/usr/bin/env bash
# Trace replay (issue 27): Mooncake's synthetic trace (tests/data) replayed
# by shelfmark-replay (python/shelfmark/trace_replay.py) through a master and
# one ucx node started afresh for each run, with the master's default
# eviction settings:
#   for each DRAM capacity (BENCH_CAPACITIES, in blocks of BENCH_BLOCK bytes)
#     dram: the node's segment holds exactly that many blocks (the
#           offline caches get the same; the master evicts above its
#           watermark, which the comparison charges it);
#     ssd:  the same DRAM plus an SSD store (bucket backend) of
#           BENCH_SSD_FACTOR x capacity blocks (MOONCAKE_OFFLOAD_TOTAL_KEYS_
#           LIMIT), the master with --enable_offload.
# Each run prints the prefix hit rate against offline LRU and Belady caches
# of the DRAM capacity (ratios), for SSD runs also against LRU and Belady at
# DRAM + SSD, blocks served per tier (the node's metrics), puts refused,
# requests/s and request latency p50/p99, wrong bytes; a table at the end;
# one JSON line per run in BENCH_OUT.
#
# The replay honours the trace's timestamps BENCH_SPEEDUP (50) times faster
# than recorded, so requests/s is that pace (the table's "x trace" shows the
# speed reached: below BENCH_SPEEDUP, the replay could not keep up) and
# p50/p99 are latencies under it; BENCH_SPEEDUP=0 ignores the timestamps
# (requests/s: as fast as the threads go). The master's read lease, which
# keeps an object from eviction in wall time, is scaled down alike
# (BENCH_LEASE_MS, default the 10 s default / BENCH_SPEEDUP; 200 ms when
# ignoring timestamps).
#
# Usage: scripts/bench_replay.sh [BUILD_DIR]
# Environment (all optional):
#   BENCH_TRACE        the trace (default tests/data/mooncake_synthetic_trace.jsonl)
#   BENCH_CAPACITIES   DRAM capacities in blocks (default "10000 30000")
#   BENCH_BLOCK        bytes per block (default 32768)
#   BENCH_SSD_FACTOR   SSD blocks per DRAM block in the ssd runs (default 4)
#   BENCH_TIERS        which runs (default "dram ssd")
#   BENCH_POLICIES     the master's --eviction_policy for each run (default "2q lru":
#                      the shipped policy and plain LRU, both live, in one run)
#   BENCH_CONCURRENCY  replay threads (default 1)
#   BENCH_SPEEDUP      replay the trace this many times faster (default 50; 0: ignore timestamps)
#   BENCH_LEASE_MS     the master's --default_kv_lease_ttl (default 10000 / BENCH_SPEEDUP, or 200)
#   BENCH_MASTER_ARGS  more shelfmark-master flags (e.g. an eviction policy)
#   BENCH_NODE_ARGS    more shelfmark-node flags
#   BENCH_REPLAY_ARGS  more shelfmark-replay flags (e.g. --requests=1000)
#   BENCH_OUT          JSON lines output (default out/bench_replay.jsonl; rewritten)
#   PYTHON             the interpreter (default /usr/bin/python3, the build's)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

trace="${BENCH_TRACE:-$root/tests/data/mooncake_synthetic_trace.jsonl}"
read -r -a capacities <<<"${BENCH_CAPACITIES:-10000 30000}"
block="${BENCH_BLOCK:-32768}"
ssd_factor="${BENCH_SSD_FACTOR:-4}"
read -r -a tiers <<<"${BENCH_TIERS:-dram ssd}"
read -r -a policies <<<"${BENCH_POLICIES:-2q lru}"
concurrency="${BENCH_CONCURRENCY:-1}"
speedup="${BENCH_SPEEDUP:-50}"
[[ $speedup =~ ^[0-9]+$ ]] || { echo "bench_replay: BENCH_SPEEDUP must be a whole number" >&2; exit 1; }
pace=(--timestamps=ignore)
default_lease=200
if [ "$speedup" -gt 0 ]; then
  pace=(--timestamps=honour --speedup="$speedup")
  default_lease=$((10000 / speedup))
fi
lease_ms="${BENCH_LEASE_MS:-$default_lease}"
read -r -a master_args <<<"${BENCH_MASTER_ARGS:-}"
read -r -a node_args <<<"${BENCH_NODE_ARGS:-}"
read -r -a replay_args <<<"${BENCH_REPLAY_ARGS:-}"
out="${BENCH_OUT:-$root/out/bench_replay.jsonl}"
python="${PYTHON:-/usr/bin/python3}"
[ -x "$python" ] || python="$(command -v python3)"

script=bench_replay
# shellcheck source=scripts/lib/cluster.sh
. "$root/scripts/lib/cluster.sh"

cluster_binaries "${1:-}"
[ -d "$build/python" ] || die "no $build/python: the Python package was not built (pybind11-dev)"
[ -r "$trace" ] || die "cannot read the trace $trace"
mkdir -p "$(dirname "$out")"
: > "$out"
cluster_workdir
unset SHELFMARK_CLUSTER_TOKEN SHELFMARK_MASTER_TOKEN

# segment_for BLOCKS: bytes of segment holding BLOCKS blocks, in 64-byte
# allocation units, rounded up to a page.
segment_for() {
  local unit=$(((block + 63) / 64 * 64))
  echo $((($1 * unit + 4095) / 4096 * 4096))
}

# run CAPACITY TIER POLICY: one cluster, one replay, its JSON line appended
# to $out.
run() {
  local capacity="$1" tier="$2" label="$1-$2-$3" segment ssd_blocks=0 env=()
  local mflags=(--eviction_policy="$3")
  segment="$(segment_for "$capacity")"
  if [ "$tier" = ssd ]; then
    ssd_blocks=$((ssd_factor * capacity))
    mkdir "$work/ssd-$label"
    env=(MOONCAKE_OFFLOAD_FILE_STORAGE_PATH="$work/ssd-$label"
         MOONCAKE_OFFLOAD_STORAGE_BACKEND_DESCRIPTOR=bucket_storage_backend
         MOONCAKE_OFFLOAD_TOTAL_KEYS_LIMIT="$ssd_blocks")
    mflags+=(--enable_offload=true)
  fi
  start_master "$master_bin" "$work/master.$label.err" --default_kv_lease_ttl="$lease_ms" \
    "${mflags[@]}" "${master_args[@]}"
  env "${env[@]}" "$node_bin" --master="127.0.0.1:$rpc_port" --segment_size="$segment" \
    --protocol=ucx --listen_ip=127.0.0.1 --metrics_port=0 "${node_args[@]}" \
    2> "$work/node.$label.err" &
  node_pid=$!
  wait_line "$work/node.$label.err" "^node .* endpoint" >/dev/null || die "node did not mount"
  local node_port
  node_port="$(sed -n 's/.*metrics port \([0-9]*\).*/\1/p' "$work/node.$label.err" | head -n 1)"
  [ -n "$node_port" ] || die "no node metrics port in $work/node.$label.err"
  log "$label: $capacity blocks of $block B in DRAM (segment $segment B), $ssd_blocks on SSD"
  local line rc=0
  line="$(PYTHONPATH="$build/python" "$python" -m shelfmark.trace_replay "$trace" \
            --master="127.0.0.1:$rpc_port" --block_size="$block" --segment_size="$segment" \
            --ssd_capacity_blocks="$ssd_blocks" --concurrency="$concurrency" "${pace[@]}" \
            --node_metrics="127.0.0.1:$node_port" --json "${replay_args[@]}")" || rc=$?
  [ -n "$line" ] || die "$label: shelfmark-replay failed (exit $rc)"
  echo "{\"run\":\"$label\",\"lease_ms\":$lease_ms,${line#\{}" >> "$out"
  [ "$rc" -eq 0 ] || log "$label: shelfmark-replay exited $rc (3: wrong bytes)"
  stop_pid "$node_pid" || true
  stop_pid "$master_pid" || true
  node_pid=""
  master_pid=""
}

for capacity in "${capacities[@]}"; do
  for tier in "${tiers[@]}"; do
    for policy in "${policies[@]}"; do
      run "$capacity" "$tier" "$policy"
    done
  done
done

# The table, from the JSON lines.
"$python" - "$out" <<'EOF'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
head = ("run", "hit", "LRU", "hit/LRU", "Belady", "hit/Bel", "LRU d+s", "hit/LRUds",
        "req/s", "x trace", "p50 ms", "p99 ms", "LOCAL_DISK", "refused", "wrong B")
fmt = "%-16s %6s %6s %7s %6s %7s %7s %9s %7s %7s %7s %7s %10s %8s %7s"
print(fmt % head)
for r in rows:
    def g(k, f="%.3f"):
        v = r.get(k)
        return "-" if v is None else f % v
    print(fmt % (r["run"], g("hit_rate"), g("lru_hit_rate"), g("hit_over_lru", "%.2f"),
                 g("belady_hit_rate"), g("hit_over_belady", "%.2f"), g("lru_hit_rate_tiers"),
                 g("hit_over_lru_tiers", "%.2f"), g("requests_per_s", "%.0f"),
                 g("speed_vs_trace", "%.1f"), g("p50_ms", "%.2f"), g("p99_ms", "%.2f"),
                 g("local_disk_blocks", "%d"), sum(r["puts_refused"].values()),
                 r["wrong_bytes"]))
for r in rows:
    if r["puts_refused"] or r["read_failures"]:
        print("%s: puts refused %s; reads failed %s" % (r["run"], r["puts_refused"],
                                                       r["read_failures"]))
EOF
log "JSON lines in $out"
