#!/usr/bin/env bash
# Benchmarks the node's SSD backends on their own (no master, no network)
# with `shelfmark-perf disk`: batch write throughput, Close, and the restart
# time (index rebuild) for N objects, for the bucket and the offset backend.
# One JSON line per backend, then a table.
#
# Usage: scripts/bench_disk.sh [BUILD_DIR]
#   BUILD_DIR  a built tree (default: scripts/build.sh's RelWithDebInfo tree)
# Environment (all optional):
#   BENCH_OBJECTS     objects per backend (default 1000000)
#   BENCH_VALUE_SIZE  bytes per value (default 128)
#   BENCH_BATCH       objects per WriteBatch (default 1000)
#   BENCH_BACKEND     bucket, offset or all (default all)
#   BENCH_DIR         where the scratch directories go (default: the temp directory);
#                     the offset backend preallocates about 9 KiB per 128-byte object
#   BENCH_OUT         JSON lines output (default out/bench_disk.jsonl; rewritten)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

objects="${BENCH_OBJECTS:-1000000}"
value_size="${BENCH_VALUE_SIZE:-128}"
batch="${BENCH_BATCH:-1000}"
backend="${BENCH_BACKEND:-all}"
out="${BENCH_OUT:-$root/out/bench_disk.jsonl}"

script=bench_disk
# shellcheck source=scripts/lib/cluster.sh
. "$root/scripts/lib/cluster.sh"

build="$(build_tree "${1:-}")"
perf_bin="$(find_binary "$build" shelfmark-perf)"

flags=(--objects="$objects" --value_size="$value_size" --batch="$batch" --backend="$backend")
[ -z "${BENCH_DIR:-}" ] || flags+=(--dir="$BENCH_DIR")

mkdir -p "$(dirname "$out")"
log "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); results in $out"
"$perf_bin" disk "${flags[@]}" --json | tee "$out" || die "shelfmark-perf disk failed"

echo
echo "=== shelfmark SSD backends: $objects objects of $value_size bytes, batches of $batch ==="
printf "%-34s %10s %12s %10s %12s %10s %12s %12s\n" backend "write s" "write obj/s" \
  "p99 us" "close s" "restart s" "restart o/s" "disk MiB"
while IFS= read -r line; do
  printf "%-34s %10s %12s %10s %12s %10s %12s %12s\n" \
    "$(echo "$line" | json_field backend | tr -d '"')" "$(echo "$line" | json_field write_s)" \
    "$(echo "$line" | json_field write_objects_per_s)" "$(echo "$line" | json_field batch_p99_us)" \
    "$(echo "$line" | json_field close_s)" "$(echo "$line" | json_field restart_s)" \
    "$(echo "$line" | json_field restart_objects_per_s)" \
    "$(awk -v b="$(echo "$line" | json_field disk_bytes)" 'BEGIN{ printf "%.1f", b / 1048576 }')"
done < "$out"
# page_cache is the run's (--drop_caches), the same in every line: the first's.
echo "page cache: $(head -n 1 "$out" | json_field page_cache | tr -d '"') at restart;" \
  "JSON lines: $out"
