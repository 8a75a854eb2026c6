#!/usr/bin/env bash
# What authentication costs (issue 18), in one run on this machine: the same
# cluster (a shelfmark-master and a ucx shelfmark-node on 127.0.0.1) started
# twice, without tokens (the baseline) and with a cluster token, measuring
#   - connection set-up to the master until the first answer
#     (`shelfmark-perf connect`: TCP, the token handshake, one call), and a
#     call on an established connection;
#   - lookups: `shelfmark-perf master --batch=1 --connections=1`
#     (get_replica_list p50);
#   - whole gets of 4 KiB MEMORY objects (`shelfmark-perf get
#     --location_cache=false`: a lookup and a read each, through a client
#     whose master and node connections are authenticated).
# The cost should be per connection only: lookups and gets unchanged.
#
# Usage: scripts/bench_auth.sh [BUILD_DIR]
# Environment (all optional):
#   BENCH_CONNECTIONS  fresh connections timed (default 300)
#   BENCH_ITERS        calls / gets timed (default 5000)
#   BENCH_SECONDS      seconds of the lookup run (default 5)
#   BENCH_OUT          JSON lines output (default out/bench_auth.jsonl; rewritten)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

connections="${BENCH_CONNECTIONS:-300}"
iters="${BENCH_ITERS:-5000}"
seconds="${BENCH_SECONDS:-5}"
out="${BENCH_OUT:-$root/out/bench_auth.jsonl}"

script=bench_auth
# shellcheck source=scripts/lib/cluster.sh
. "$root/scripts/lib/cluster.sh"

cluster_binaries "${1:-}"

mkdir -p "$(dirname "$out")"
: > "$out"
cluster_workdir
unset SHELFMARK_CLUSTER_TOKEN SHELFMARK_MASTER_TOKEN

(umask 077 && head -c 32 /dev/urandom | base64 | tr -d '/+=\n' > "$work/token")

# One cluster (master + node) with the credential flags given, measured,
# then stopped. $1: the label of its JSON lines.
measure() {
  local label="$1"
  shift
  start_master "$master_bin" "$work/master.$label.err" "$@"
  "$node_bin" --master="127.0.0.1:$rpc_port" --segment_size=268435456 --protocol=ucx \
    --listen_ip=127.0.0.1 --metrics_port=0 "$@" 2> "$work/node.$label.err" &
  node_pid=$!
  wait_line "$work/node.$label.err" "^node .* endpoint" >/dev/null || die "node did not mount"
  local tag="s/^{/{\"measure\":\"$label\",/"
  {
    "$perf_bin" connect --master="127.0.0.1:$rpc_port" --count="$connections" \
      --calls="$iters" --json "$@"
    "$perf_bin" master --master="127.0.0.1:$rpc_port" --metrics="127.0.0.1:$metrics_port" \
      --batch=1 --connections=1 --seconds="$seconds" --json "$@" 2>>"$work/perf.err" |
      grep '"op":"get_replica_list"'
    "$perf_bin" get --master="127.0.0.1:$rpc_port" --replica=memory --size=4096 --keys=100 \
      --iters="$iters" --location_cache=false --json "$@" 2>>"$work/perf.err"
  } | sed "$tag" >> "$out"
  stop_pid "$node_pid" || true
  stop_pid "$master_pid" || true
  node_pid=""
  master_pid=""
}

log "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); results in $out"
measure open
measure token --cluster_token_file="$work/token"

field() { grep "\"measure\":\"$1\"" "$out" | grep "$2" | json_field "$3"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
row() {  # name, pattern, field
  local open token
  open="$(field open "$2" "$3")"
  token="$(field token "$2" "$3")"
  printf "%-34s %12s %12s %8s\n" "$1" "$open" "$token" "$(ratio "$token" "$open")"
}
echo
echo "=== authentication cost ($(nproc) CPUs, p50 in us; ratio = token / no token) ==="
printf "%-34s %12s %12s %8s\n" measure no_token token ratio
row "connect + handshake + 1st call" '"bench":"connect"' connect_p50_us
row "call on an established connection" '"bench":"connect"' call_p50_us
row "lookup (get_replica_list, batch 1)" '"op":"get_replica_list"' p50_us
row "get 4 KiB MEMORY (lookup + read)" '"bench":"get"' p50_us
echo "JSON lines: $out"
