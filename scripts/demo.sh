#!/usr/bin/env bash
# The main job on one machine: starts a shelfmark-master, drives real puts and
# lookups against it with `shelfmark-perf master`, shows what an operator sees
# (shelfmark-cli, /metrics), then stops the master.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

bash scripts/setup.sh
build="$(bash scripts/build.sh RelWithDebInfo | tail -n 1)"

log="$(mktemp -t shelfmark-master.XXXXXX.log)"
# Port 0: the master binds free ports and prints them on its first line.
"$build/control/shelfmark-master" --rpc_port=0 --metrics_port=0 2>"$log" &
master_pid=$!
trap 'kill "$master_pid" 2>/dev/null || true; wait "$master_pid" 2>/dev/null || true; rm -f "$log"' EXIT

for _ in $(seq 1 100); do
  grep -q "metrics port" "$log" && break
  sleep 0.1
done
rpc_port="$(sed -n 's/.*rpc port \([0-9]*\).*/\1/p' "$log" | head -n 1)"
metrics_port="$(sed -n 's/.*metrics port \([0-9]*\).*/\1/p' "$log" | head -n 1)"
if [ -z "$rpc_port" ] || [ -z "$metrics_port" ]; then
  echo "demo: the master did not start:" >&2
  cat "$log" >&2
  exit 1
fi
curl -fsS "http://127.0.0.1:$metrics_port/health" >/dev/null
echo "== master up: rpc 127.0.0.1:$rpc_port, metrics http://127.0.0.1:$metrics_port/metrics"

echo "== shelfmark-perf master: puts and GetReplicaList, unbatched and batch 128"
for batch in 1 128; do
  "$build/perf/shelfmark-perf" master --master="127.0.0.1:$rpc_port" --metrics="127.0.0.1:$metrics_port" \
    --connections=2 --batch="$batch" --seconds=2
done

echo "== a few objects kept, as an operator sees them (shelfmark-cli)"
"$build/perf/shelfmark-perf" master --master="127.0.0.1:$rpc_port" --metrics="127.0.0.1:$metrics_port" \
  --seconds=1 --keep_keys=5 --key_prefix=demo/ >/dev/null
cli=("$build/control/shelfmark-cli" --master="127.0.0.1:$rpc_port")
"${cli[@]}" count
"${cli[@]}" ls --prefix=demo/ --limit=5
first="$("${cli[@]}" ls --prefix=demo/ --limit=1)"
[ -n "$first" ] && "${cli[@]}" stat "$first"

echo "== /metrics (excerpt)"
curl -fsS "http://127.0.0.1:$metrics_port/metrics" |
  grep -E '^(shelfmark_master_(key_count|allocated_bytes|total_capacity_bytes)|process_resident_memory_bytes|shelfmark_master_rpc_requests_total)' |
  head -n 20
echo "== stopping master"
