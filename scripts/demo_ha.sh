#!/usr/bin/env bash
# The HA demo (`scripts/demo.sh --ha`, docs/ha.md): etcd, three masters with
# --enable_ha, two nodes and the tools all finding the leader through etcd
# (--master=etcd://...). It fills objects, kills the leader with SIGKILL
# while a client keeps putting, shows the failover time that client saw,
# then fills more through the new leader and reads every object back,
# byte-exact, through it. The killed master restarts as a standby.
#
# Usage: scripts/demo.sh --ha [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
script=demo_ha
# shellcheck source=scripts/lib/cluster.sh
. "$root/scripts/lib/cluster.sh"

cluster_binaries "${1:-}"
cli_bin="$(find_binary "$build" shelfmark-cli)"
work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do stop_pid "$p" || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_etcd demo "$work"
pids+=("$etcd_pid")
echo "== etcd on 127.0.0.1:$etcd_port"
master="etcd://127.0.0.1:$etcd_port"
cluster=(--cluster_id=demo)

declare -A mpid mmetrics
start_ha() {
  start_master "$master_bin" "$work/master-$1.log" --enable_ha \
    "--etcd_endpoints=127.0.0.1:$etcd_port" --rpc_address=127.0.0.1 "${cluster[@]}"
  pids+=("$master_pid")
  mpid[$1]="$master_pid"
  mmetrics[$1]="$metrics_port"
}
role() { curl -fsS "http://127.0.0.1:${mmetrics[$1]}/health" | sed -n 's/^ha_role //p'; }
leader() {
  for m in a b c; do
    if [ "$(role "$m" 2>/dev/null)" = leader ]; then echo "$m"; fi
  done
}
for m in a b c; do start_ha "$m"; done
for _ in $(seq 1 100); do [ -n "$(leader)" ] && break; sleep 0.1; done
lead="$(leader)"
[ -n "$lead" ] || die "no master leads"
echo "== masters a, b, c; master $lead leads"

for n in a b; do
  "$node_bin" --master="$master" "${cluster[@]}" --segment_size=$((64 << 20)) --protocol=auto \
    --segment_name="node-$n" --listen_ip=127.0.0.1 --metrics_port=0 >"$work/node-$n.log" 2>&1 &
  pids+=($!)
  wait_line "$work/node-$n.log" "^node " >/dev/null || die "shelfmark-node $n did not start"
  echo "== node $n: $(grep -m1 '^node ' "$work/node-$n.log" | cut -d' ' -f3-)"
done
cli=("$cli_bin" --master="$master" "${cluster[@]}")

echo "== shelfmark-cli fill through the leader: 200 x 64 KiB"
"${cli[@]}" fill demo-before --count=200 --size=65536
echo "== SIGKILL of master $lead while shelfmark-perf failover puts"
"$perf_bin" failover --master="$master" "${cluster[@]}" --seconds=6 --gap_ms=10 \
  >"$work/failover.jsonl" &
writer=$!
sleep 1.5
kill -9 "${mpid[$lead]}"
wait "${mpid[$lead]}" 2>/dev/null || true
wait "$writer" || die "shelfmark-perf failover lost an acknowledged put (exit $?)"
gap="$( (grep '"bench":"failover"' "$work/failover.jsonl" || true) | json_fields gap_ms | sort -g |
        tail -n 1)"
summary="$(grep failover_summary "$work/failover.jsonl")"
for _ in $(seq 1 100); do [ -n "$(leader)" ] && break; sleep 0.1; done
echo "   failover seen by the client: ${gap:-?} ms (last put on $lead -> first on $(leader));" \
  "$(echo "$summary" | json_field acked) puts acknowledged, $(echo "$summary" | json_field lost) lost"
start_ha "$lead"
echo "== master $lead restarted: $(role "$lead") (it copies the leader's directory)"
echo "== shelfmark-cli fill through the new leader: 100 x 64 KiB"
"${cli[@]}" fill demo-after --count=100 --size=65536
echo "== shelfmark-cli verify: every object, byte-exact, through the new leader"
"${cli[@]}" verify demo-before --count=200 --size=65536
"${cli[@]}" verify demo-after --count=100 --size=65536
echo "== shelfmark-cli count = $("${cli[@]}" count)"
