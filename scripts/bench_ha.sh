#!/usr/bin/env bash
# Master high availability (docs/ha.md), in one run on this machine:
#   1. put throughput and latency (`shelfmark-perf master`, unbatched at one
#      connection and batched 128 at 16) against a master without HA, then
#      against the leader of two --enable_ha masters whose standby must hold
#      every put before it is acknowledged (--ha_sync_standbys=1);
#   2. failover: BENCH_KILLS times, a client that follows the leader through
#      etcd (`shelfmark-perf failover`) puts one object after another while
#      the leader is killed with SIGKILL; the failover time is the gap from
#      the last put the old leader acknowledged to the first the new leader
#      acknowledged; every acknowledged put must read back afterwards. The
#      killed master restarts as the next standby and copies the directory
#      before the next kill.
# Prints p50 and max of the failover times and the throughput ratios.
#
# Usage: scripts/bench_ha.sh [BUILD_DIR]
# Environment (all optional):
#   BENCH_KILLS    leader kills (default 10; 0: throughput only)
#   BENCH_SECONDS  seconds per throughput phase (default 5)
#   BENCH_OUT      JSON lines output (default out/bench_ha.jsonl; rewritten)
#   BENCH_PIN=1    throughput phase only: the master under test and the perf
#                  client on CPU 0, the standby and etcd on CPU 1 (with HA
#                  and without), so that the standby does not take the
#                  leader's CPU, as on a machine of its own
#   BENCH_REPEAT   throughput rounds (default 1): each round measures every
#                  shape without HA, then with the standby, so the two
#                  alternate; the summary gives each shape's median and its
#                  lowest and highest ratio over the rounds (on a shared
#                  machine one round's ratio can be off by half)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

kills="${BENCH_KILLS:-10}"
seconds="${BENCH_SECONDS:-5}"
repeat="${BENCH_REPEAT:-1}"
case "$repeat" in '' | *[!0-9]* | 0) echo "bench_ha: BENCH_REPEAT must be a positive number" >&2; exit 2 ;; esac
out="${BENCH_OUT:-$root/out/bench_ha.jsonl}"

script=bench_ha
# shellcheck source=scripts/lib/cluster.sh
. "$root/scripts/lib/cluster.sh"

build="$(build_tree "${1:-}")"
master_bin="$(find_binary "$build" shelfmark-master)"
perf_bin="$(find_binary "$build" shelfmark-perf)"

mkdir -p "$(dirname "$out")"
: > "$out"
work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do stop_pid "$p" || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_etcd bench "$work"
pids+=("$etcd_pid")
ha_flags=(--enable_ha "--etcd_endpoints=127.0.0.1:$etcd_port" --rpc_address=127.0.0.1
          --cluster_id=bench_ha)

pin=()  # the perf client's CPU
pin_pid() {  # CPU PID: every thread of PID (BENCH_PIN=1 only)
  if [ "${BENCH_PIN:-0}" = 1 ]; then taskset -a -pc "$1" "$2" >/dev/null; fi
}
if [ "${BENCH_PIN:-0}" = 1 ]; then
  pin=(taskset -c 0)
  pin_pid 1 "$etcd_pid"
fi

perf_master() {  # VARIANT ROUND RPC_PORT METRICS_PORT, then flags
  local variant="$1" round="$2" rpc="$3" metrics="$4"
  shift 4
  log "shelfmark-perf master ($variant, round $round) $*"
  "${pin[@]}" "$perf_bin" master --master="127.0.0.1:$rpc" --metrics="127.0.0.1:$metrics" --json \
    --reads=false "$@" |
    grep '"op":"put"' | sed "s/^{/{\"variant\":\"$variant\",\"round\":$round,/" >>"$out" || true
}
shapes=("1 1" "1 16" "128 16")  # batch connections
perf_shapes() {  # VARIANT ROUND RPC_PORT METRICS_PORT
  local shape
  for shape in "${shapes[@]}"; do
    # shellcheck disable=SC2086  # a shape is two words
    set -- "$1" "$2" "$3" "$4" $shape
    perf_master "$1" "$2" "$3" "$4" --batch="$5" --connections="$6" --seconds="$seconds"
  done
}

# HA masters: name -> pid, rpc port, metrics port.
declare -A mpid mrpc mmetrics
start_ha() {
  start_master "$master_bin" "$work/master.$1.$RANDOM.log" "${ha_flags[@]}"
  pids+=("$master_pid")
  mpid[$1]="$master_pid"
  mrpc[$1]="$rpc_port"
  mmetrics[$1]="$metrics_port"
}
metric() { curl -fsS "http://127.0.0.1:${mmetrics[$1]}/metrics" | awk -v n="$2" '$1 == n { print $2 }'; }
leading() { [ "$(metric "$1" shelfmark_master_ha_role)" = "1" ]; }
wait_for() {  # SECONDS COMMAND...: polls the command every 50 ms
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.05
  done
}
synced() { [ "$(metric "$1" shelfmark_master_ha_standby_synced)" = "1" ]; }
one_leads() { leading a || leading b; }

log "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); results in $out"
# 1. Throughput: no HA, then a leader with one synchronous standby, round
# after round. Both stay up throughout (the idle one sleeps), so each
# round's two runs meet directories grown alike.
start_master "$master_bin" "$work/plain.log"
pids+=("$master_pid")
plain_pid="$master_pid" plain_rpc="$rpc_port" plain_metrics="$metrics_port"
pin_pid 0 "$plain_pid"
start_ha a
start_ha b
wait_for 30 one_leads || die "no leader"
if leading a; then leader=a standby=b; else leader=b standby=a; fi
wait_for 30 synced "$standby" || die "the standby did not copy the directory"
pin_pid 0 "${mpid[$leader]}"
pin_pid 1 "${mpid[$standby]}"
for round in $(seq 1 "$repeat"); do
  perf_shapes no_ha "$round" "$plain_rpc" "$plain_metrics"
  perf_shapes ha "$round" "${mrpc[$leader]}" "${mmetrics[$leader]}"
done
stop_pid "$plain_pid" || true

# 2. Failover: kill the leader while a client puts.
for k in $(seq 1 "$kills"); do
  wait_for 60 synced "$standby" || die "kill $k: the standby did not copy the directory"
  "$perf_bin" failover --master="etcd://127.0.0.1:$etcd_port" --cluster_id=bench_ha \
    --seconds=6 --gap_ms=10 >"$work/failover.$k" 2>"$work/failover.$k.err" &
  writer=$!
  sleep 1.5  # the writer is putting at full speed by now
  kill -9 "${mpid[$leader]}"
  wait "${mpid[$leader]}" 2>/dev/null || true
  wait "$writer" || log "kill $k: shelfmark-perf failover exited with $? (see below)"
  cat "$work/failover.$k.err" >&2
  gap="$( (grep '"bench":"failover"' "$work/failover.$k" || true) | json_fields gap_ms | sort -g |
          tail -n 1)"
  summary="$(grep failover_summary "$work/failover.$k" || echo '{}')"
  echo "{\"bench\":\"failover_kill\",\"kill\":$k,\"failover_ms\":${gap:-null},\"summary\":$summary}" >>"$out"
  log "kill $k: failover ${gap:-?} ms, $(echo "$summary" | json_field acked) puts acknowledged, $(echo "$summary" | json_field lost) lost"
  wait_for 30 leading "$standby" || die "kill $k: the standby did not take over"
  dead="$leader"
  leader="$standby"
  start_ha "$dead"
  standby="$dead"
done

# Summary.
# put VARIANT BATCH CONNECTIONS FIELD: the field of every round, in round order.
put() { grep "\"variant\":\"$1\"" "$out" | grep "\"batch\":$2,\"connections\":$3," | json_fields "$4"; }
# ratios BATCH CONNECTIONS: each round's keys/s with HA over without, one a line.
ratios() {
  paste <(put no_ha "$1" "$2" keys_per_s) <(put ha "$1" "$2" keys_per_s) |
    awk 'NF == 2 { if ($1 > 0) printf "%.2f\n", $2 / $1; else print "n/a" }'
}
spread() {  # numbers on stdin: "median" or, of several, "median (lowest-highest)"
  sort -g | awk 'NF { v[++n] = $1 } END {
    if (!n) { print "n/a"; exit }
    m = v[int((n + 1) / 2)]
    if (n == 1) print m; else printf "%s (%s-%s)\n", m, v[1], v[n] }'
}
# Kills whose writer saw no gap have "failover_ms":null: not a time.
times="$( (grep failover_kill "$out" || true) | json_fields failover_ms | (grep -vx null || true) |
         sort -g)"
count="$(echo "$times" | grep -c . || true)"
p50="$(echo "$times" | median_value)"
max="$(echo "$times" | tail -n 1)"
lost="$( (grep failover_kill "$out" || true) | json_fields lost | awk '{ s += $1 } END { print s + 0 }')"
echo
echo "=== shelfmark master HA ($(nproc) CPUs, $repeat round(s); medians) ==="
printf "%-52s %12s %18s\n" measure value "ratio HA / no HA"
for shape in "${shapes[@]}"; do
  # shellcheck disable=SC2086  # a shape is two words
  set -- $shape
  printf "%-52s %12s\n" "put batch=$1 conns=$2 keys/s, no HA" "$(put no_ha "$1" "$2" keys_per_s | median_value)"
  printf "%-52s %12s %18s\n" "  with one synchronous standby" "$(put ha "$1" "$2" keys_per_s | median_value)" \
    "$(ratios "$1" "$2" | spread)"
  printf "%-52s %12s\n" "  p50 us, no HA / HA" \
    "$(put no_ha "$1" "$2" p50_us | median_value) / $(put ha "$1" "$2" p50_us | median_value)"
done
printf "%-58s %12s\n" "failover ms (SIGKILL -> first put acknowledged), p50" "${p50:-n/a}"
printf "%-58s %12s\n" "failover ms, max over $count kills" "${max:-n/a}"
printf "%-58s %12s\n" "acknowledged puts lost over all kills" "$lost"
echo "JSON lines: $out"
