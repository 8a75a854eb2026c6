#!/usr/bin/env bash
# The Python store against the C++ client, in one run on this machine
# (issue 12). A shelfmark-master and one ucx shelfmark-node (a 256 MiB
# segment), then BENCH_ROUNDS rounds, each running in turn:
#   - python/bench/batch_get.py: mooncake.store's batch_get_into of 64
#     objects of 256 KiB into one registered buffer, BENCH_ITERS timed
#     batches from Python, alternating in blocks with the same call timed by
#     the native store's own C++ loop on the same client and buffers in the
#     same process (the comparison: separate processes differ by more than
#     the 5% in question on this machine); and `shelfmark-perf batchget`, the
#     C++ client's own benchmark of the same batch, as a reference; each
#     once with the objects in the client's own segment ("own") and once on
#     the node ("node");
#   - in the own mode, a get of one object in the process's own segment
#     against a memcpy of the same size: 256 KiB in both languages, and
#     BENCH_LOCAL_SIZE (64 MiB) in Python;
#   - python/bench/one_call.py: one-object put_from, get_into and is_exist
#     (4 KiB, in the store's own segment) from Python against the same call
#     in the native store's C++ loop, alternating in blocks in one process,
#     BENCH_ONE_ITERS (2000) calls of each (the per-call overhead; goal
#     <= 1.2).
# The table shows medians over the rounds: the batch p50 of Python, of C++
# in the same process and of shelfmark-perf, the Python / same-process C++
# ratio (goal <= 1.05), and get / memcpy bandwidth (goal >= 0.8). Every get
# includes its master lookup (as in Mooncake; no location cache).
#
# Usage: scripts/bench_python.sh [BUILD_DIR]
# Environment: BENCH_ROUNDS (3), BENCH_ITERS (200), BENCH_LOCAL_SIZE
# (67108864), BENCH_ONE_ITERS (2000), BENCH_OUT (out/bench_python.jsonl; rewritten).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
rounds="${BENCH_ROUNDS:-3}"
iters="${BENCH_ITERS:-200}"
local_size="${BENCH_LOCAL_SIZE:-67108864}"
one_iters="${BENCH_ONE_ITERS:-2000}"
out="${BENCH_OUT:-$root/out/bench_python.jsonl}"

script=bench_python
# shellcheck source=scripts/lib/cluster.sh
. "$root/scripts/lib/cluster.sh"
cluster_binaries "${1:-}"
[ -d "$build/python" ] || die "no $build/python: the build has no Python package (pybind11-dev)"
python="$(command -v /usr/bin/python3 || command -v python3)"
mkdir -p "$(dirname "$out")"
: > "$out"
cluster_workdir

start_master "$master_bin" "$work/master.err"
"$node_bin" --master="127.0.0.1:$rpc_port" --segment_size=268435456 --protocol=ucx \
  --listen_ip=127.0.0.1 --metrics_port=0 2> "$work/node.err" &
node_pid=$!
wait_line "$work/node.err" "^node .* endpoint" >/dev/null || die "node did not mount"

log "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); $rounds rounds of" \
  "$iters batches of 64 x 256 KiB; results in $out"
for ((r = 1; r <= rounds; r++)); do
  for mode in own node; do
    seg=()
    [ "$mode" = own ] || seg=(--segment_size=0)
    "$perf_bin" batchget --master="127.0.0.1:$rpc_port" --iters="$iters" --warmup=5 "${seg[@]}" \
      --json | sed "s/^{/{\"lang\":\"cpp\",\"mode\":\"$mode\",\"round\":$r,/" >> "$out"
    PYTHONPATH="$build/python" "$python" python/bench/batch_get.py \
      --master="127.0.0.1:$rpc_port" --iters="$iters" "${seg[@]}" --json |
      sed "s/^{/{\"lang\": \"python\", \"mode\": \"$mode\", \"round\": $r, /" >> "$out"
  done
  PYTHONPATH="$build/python" "$python" python/bench/batch_get.py --master="127.0.0.1:$rpc_port" \
    --iters=20 --local_size="$local_size" --json |
    sed "s/^{/{\"lang\": \"python\", \"mode\": \"own-large\", \"round\": $r, /" >> "$out"
  PYTHONPATH="$build/python" "$python" python/bench/one_call.py --master="127.0.0.1:$rpc_port" \
    --iters="$one_iters" --json | sed "s/^{/{\"lang\": \"python\", \"mode\": \"one\", \"round\": $r, /" >> "$out"
done

# median LANG MODE FIELD [CALL]: the median over the rounds (of CALL's lines).
median() {
  local call="${4:+\"call\": \"$4\"}"  # "" matches every line
  grep -E "\"lang\": ?\"$1\", ?\"mode\": ?\"$2\"" "$out" | grep -F -- "$call" |
    json_fields "$3" | median_value | grep . || echo null
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "null" }'; }

echo
echo "=== mooncake.store (Python) against the C++ client: medians of $rounds rounds ==="
printf "%-34s %12s %12s %8s %14s\n" measure "C++ (same)" Python ratio "shelfmark-perf"
for mode in own node; do
  printf "%-34s %12s %12s %8s %14s\n" "batch get 64 x 256 KiB p50 us ($mode)" \
    "$(median python "$mode" cpp_p50_us)" "$(median python "$mode" batch_p50_us)" \
    "$(median python "$mode" python_vs_cpp)" "$(median cpp "$mode" batch_p50_us)"
done
printf "%-34s %12s %12s\n" "own-segment get / memcpy, 256 KiB" \
  "$(median cpp own local_vs_memcpy)" "$(median python own local_vs_memcpy)"
printf "%-34s %12s %12s\n" "own-segment get / memcpy, $((local_size >> 20)) MiB" "-" \
  "$(median python own-large local_vs_memcpy)"
printf "%-34s %12s %12s\n" "  (GB/s: get, memcpy)" "-" \
  "$(median python own-large local_get_gbps), $(median python own-large memcpy_gbps)"
for call in put_from get_into is_exist; do
  printf "%-34s %12s %12s %8s\n" "one $call 4 KiB p50 us (own)" \
    "$(median python one cpp_p50_us "$call")" "$(median python one python_p50_us "$call")" \
    "$(median python one python_vs_cpp "$call")"
done
echo "(ratio: Python p50 / same-process C++ p50, goal <= 1.05 batched, <= 1.2 one call;" \
  "get / memcpy goal >= 0.8)"
echo "JSON lines: $out"
