#!/usr/bin/env bash
# DRAM overflow onto the SSD tier (issue 17), in one run on this machine. A
# shelfmark-master with --enable_offload (its eviction runs every 100 ms by
# itself) and one ucx shelfmark-node with a 64 MiB segment and an empty SSD
# store, started afresh for each of:
#   1. burst: `shelfmark-cli fill` of N 1 MiB objects (N = 3x DRAM) at full
#      speed;
#   2. fixed rate: fills of BENCH_CHUNK objects each (distinct key prefixes)
#      started on a schedule of BENCH_RATE_MIBS MiB/s, N objects in all.
# Each reports what fill acknowledged (it retries a put answered
# NO_AVAILABLE_HANDLE every 50 ms for up to BENCH_RETRY_MS, counting the
# retries: the master's back-pressure while DRAM waits for SSD copies; a put
# still refused then stops that fill and is not acknowledged), the time from
# the end of the fill until every acknowledged object is on SSD (the node's
# shelfmark_node_offloaded_objects_total reaches the acknowledged count and the
# master's shelfmark_master_offload_queued_tasks is 0, polled every 50 ms up to
# BENCH_DEADLINE_S), then `shelfmark-cli verify` of every object (served
# byte-exact, and from where; evicted = lost; wrong bytes) and the master's
# eviction counters (shelfmark_master_evicted_without_copy_total must stay 0).
#   3. backlog: a fill of BENCH_BACKLOG_OBJECTS into a segment twice as large (nothing is
#      evicted) while the node, having just found no task, waits
#      BENCH_BACKLOG_POLL_MS before it asks again: it then finds the whole
#      fill queued and drains it at its own speed. Its busy rate (below) is
#      the node's offload throughput with work waiting, the figure the goal
#      (>= 0.8 of the backend's batch write rate) is about; burst and rate
#      are bound by the fill's speed end to end.
#   4. promotion on hit (docs/directory.md), in the burst's cluster after
#      its verify: `shelfmark-perf hit` reads the oldest object eviction left
#      on SSD only BENCH_HIT_ITERS times without the location cache,
#      attributing each get to the replica that served it: LOCAL_DISK until
#      the node (after --promote_after_hits reads) has it promoted, MEMORY
#      after; each get is followed by one of the newest object (in DRAM all
#      along), the baseline a promoted get should equal, timed apart. The 8
#      objects before the newest are removed first, so the copy has room
#      under the eviction watermark.
#   5. offload throughput: bytes the node offloaded (shelfmark_node_offloaded_
#      bytes_total where the node exports it, else objects x size) over the
#      time from the start of the fill until the last acknowledged object was
#      on SSD, against `shelfmark-perf disk`'s batch write rate for the same
#      backend and object size, run first in the same work directory; and
#      "busy": those bytes over shelfmark_node_offload_busy_seconds_total
#      (the time the node's offload thread had work), its throughput while
#      it has work, set against the backend's rate (goal: ratio >= 0.8).
# A summary table at the end; one JSON line per measurement in BENCH_OUT.
#
# Usage: scripts/bench_tier.sh [BUILD_DIR]
#   BUILD_DIR  a built tree (default: scripts/build.sh's RelWithDebInfo tree)
# Environment (all optional):
#   BENCH_OBJECTS     objects per phase (default 192: 3x the 64 MiB segment)
#   BENCH_SIZE        bytes per object (default 1048576)
#   BENCH_SEGMENT     the node's DRAM segment in bytes (default 67108864)
#   BENCH_BACKEND     bucket_storage_backend (default) or offset_allocator_storage_backend
#   BENCH_RATE_MIBS   the fixed-rate phase's schedule in MiB/s (default 64)
#   BENCH_CHUNK       objects per fill in the fixed-rate phase (default 8)
#   BENCH_RETRY_MS    fill's --retry_ms (default 10000, fill's own default)
#   BENCH_BACKLOG_OBJECTS objects of the backlog phase (default 512: enough batches
#                     that the first and last do not dominate the drain rate)
#   BENCH_BACKLOG_POLL_MS  the backlog phase node's --offload_poll_interval_ms (default 5000)
#   BENCH_HIT_ITERS   gets per key in the promotion phase (default 2000)
#   BENCH_DEADLINE_S  how long a phase waits for everything to be on SSD (default 45)
#   BENCH_DISK_BATCH  objects per WriteBatch of the disk baseline (default 64,
#                     the objects the node asks for per offload round)
#   BENCH_NODE_ARGS   more shelfmark-node flags (e.g. --ping_interval_ms=100)
#   BENCH_MASTER_ARGS more shelfmark-master flags (e.g. --offload_on_evict=true)
#   BENCH_OUT         JSON lines output (default out/bench_tier.jsonl; rewritten)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

objects="${BENCH_OBJECTS:-192}"
size="${BENCH_SIZE:-1048576}"
segment="${BENCH_SEGMENT:-67108864}"
backend="${BENCH_BACKEND:-bucket_storage_backend}"
rate_mibs="${BENCH_RATE_MIBS:-64}"
chunk="${BENCH_CHUNK:-8}"
retry_ms="${BENCH_RETRY_MS:-10000}"
deadline_s="${BENCH_DEADLINE_S:-45}"
disk_batch="${BENCH_DISK_BATCH:-64}"
backlog_poll_ms="${BENCH_BACKLOG_POLL_MS:-5000}"
backlog_objects="${BENCH_BACKLOG_OBJECTS:-512}"
hit_iters="${BENCH_HIT_ITERS:-2000}"
out="${BENCH_OUT:-$root/out/bench_tier.jsonl}"
read -r -a node_args <<<"${BENCH_NODE_ARGS:-}"
read -r -a master_args <<<"${BENCH_MASTER_ARGS:-}"

script=bench_tier
# shellcheck source=scripts/lib/cluster.sh
. "$root/scripts/lib/cluster.sh"

case "$backend" in
  bucket_storage_backend) disk_backend=bucket ;;
  offset_allocator_storage_backend) disk_backend=offset ;;
  *) die "BENCH_BACKEND must be bucket_storage_backend or offset_allocator_storage_backend" ;;
esac
[ $((objects % chunk)) -eq 0 ] || die "BENCH_OBJECTS ($objects) must be a multiple of BENCH_CHUNK ($chunk)"

cluster_binaries "${1:-}"
cli_bin="$(find_binary "$build" shelfmark-cli)"

mkdir -p "$(dirname "$out")"
: > "$out"
cluster_workdir
unset SHELFMARK_CLUSTER_TOKEN SHELFMARK_MASTER_TOKEN

# calc EXPR VAR=VALUE...: awk arithmetic (metrics print like %g, e.g.
# 2.01e+08), printed with 15 significant digits.
calc() {
  local expr="$1"
  shift
  awk "${@/#/-v}" "BEGIN { printf \"%.15g\", ($expr) }" </dev/null
}

# json_line KEY VALUE...: one flat JSON object; numbers, true, false and null
# as they are, anything else quoted.
json_line() {
  local text="" num='^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$'
  while [ $# -ge 2 ]; do
    if [[ $2 =~ $num || $2 == true || $2 == false || $2 == null ]]; then
      text+=",\"$1\":$2"
    else
      text+=",\"$1\":\"$2\""
    fi
    shift 2
  done
  echo "{${text#,}}"
}

# metric PORT NAME: the sample NAME of http://127.0.0.1:PORT/metrics; empty
# when the page or the series is missing.
metric() {
  curl -fsS "http://127.0.0.1:$1/metrics" 2>/dev/null | awk -v n="$2" '$1 == n { print $2; exit }'
}

# One cluster: the master (rpc_port, metrics_port) and the node (node_port:
# its metrics) with an empty SSD store under $work/ssd-LABEL; more node
# flags after the label, and a segment of $segment bytes unless one says
# otherwise.
start_cluster() {
  local label="$1" ssd="$work/ssd-$1"
  shift
  start_master "$master_bin" "$work/master.$label.err" --enable_offload=true \
    "${master_args[@]}"
  mkdir "$ssd"
  local env=(MOONCAKE_OFFLOAD_FILE_STORAGE_PATH="$ssd"
             MOONCAKE_OFFLOAD_STORAGE_BACKEND_DESCRIPTOR="$backend")
  # The offset backend preallocates its data file (default: 80% of the free
  # space): twice the data is plenty.
  [ "$disk_backend" = bucket ] ||
    env+=(MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES=$((2 * objects * size + (64 << 20))))
  env "${env[@]}" "$node_bin" --master="127.0.0.1:$rpc_port" --segment_size="$segment" \
    --protocol=ucx --listen_ip=127.0.0.1 --metrics_port=0 "${node_args[@]}" "$@" \
    2> "$work/node.$label.err" &
  node_pid=$!
  wait_line "$work/node.$label.err" "^node .* endpoint" >/dev/null || die "node did not mount"
  node_port="$(sed -n 's/.*metrics port \([0-9]*\).*/\1/p' "$work/node.$label.err" | head -n 1)"
  [ -n "$node_port" ] || die "no node metrics port in $work/node.$label.err"
}

stop_cluster() {
  stop_pid "$node_pid" || true
  stop_pid "$master_pid" || true
  node_pid=""
  master_pid=""
}

# Objects and bytes the node has offloaded, and the master's queued tasks:
# "OBJECTS BYTES QUEUED" (bytes from shelfmark_node_offloaded_bytes_total
# where the node exports it, else objects x size).
offload_state() {
  local page objs bytes queued
  page="$(curl -fsS "http://127.0.0.1:$node_port/metrics" 2>/dev/null)" || true
  objs="$(awk '$1 == "shelfmark_node_offloaded_objects_total" { print $2; exit }' <<<"$page")"
  bytes="$(awk '$1 == "shelfmark_node_offloaded_bytes_total" { print $2; exit }' <<<"$page")"
  queued="$(metric "$metrics_port" shelfmark_master_offload_queued_tasks)"
  objs="$(calc 'o + 0' o="${objs:-0}")"
  [ -n "$bytes" ] || bytes="$(calc 'o * s' o="$objs" s="$size")"
  echo "$objs $(calc 'b + 0' b="$bytes") ${queued:--1}"
}

# Samples offload_state every 50 ms into FILE ("TIME OBJECTS BYTES QUEUED")
# while the node runs; sets sampler_pid.
start_sampler() {
  local file="$1" pid="$node_pid"
  (
    while kill -0 "$pid" 2>/dev/null; do
      echo "$EPOCHREALTIME $(offload_state)"
      sleep 0.05
    done
  ) > "$file" &
  sampler_pid=$!
}

# fill PREFIX COUNT: one shelfmark-cli fill; prints "STORED RETRIES ERROR"
# (ERROR: the ErrorCode that stopped it, "-" when none).
fill() {
  local text rc=0 err stored retries
  text="$("$cli_bin" --master="127.0.0.1:$rpc_port" fill "$1" --count="$2" --size="$size" \
            --retry_ms="$retry_ms" --protocol=ucx 2> "$work/fill.err")" || rc=$?
  stored="$(sed -n 's/.*: \([0-9]*\) objects of .* stored, \([0-9]*\) retries.*/\1/p' <<<"$text")"
  retries="$(sed -n 's/.* stored, \([0-9]*\) retries.*/\1/p' <<<"$text")"
  [ -n "$stored" ] || { cat "$work/fill.err" >&2; die "fill $1 printed no counts"; }
  err=-
  [ "$rc" -eq 0 ] || err="$(sed -n 's/^shelfmark-cli: .*: \([A-Z_]*\)$/\1/p' "$work/fill.err" | tail -n 1)"
  echo "$stored $retries ${err:-exit-$rc}"
}

# verify PREFIX COUNT: shelfmark-cli verify's JSON counts of one prefix, as
# "MEMORY_ONLY MEMORY_AND_DISK DISK_ONLY EVICTED WRONG ERRORS".
verify() {
  local line
  line="$("$cli_bin" --master="127.0.0.1:$rpc_port" --json verify "$1" --count="$2" \
            --size="$size" --protocol=ucx 2>>"$work/verify.err")" || true
  [ -n "$line" ] || { cat "$work/verify.err" >&2; die "verify $1 printed nothing"; }
  local f counts=()
  for f in memory_only memory_and_disk disk_only evicted wrong_bytes errors; do
    counts+=("$(json_field "$f" <<<"$line")")
  done
  echo "${counts[*]}"
}

# measure LABEL: after the phase's fills (fill_start/fill_end times, acked,
# retries, fill_errors, prefixes: "PREFIX STORED" lines: a fill stores
# PREFIX-0 .. PREFIX-(STORED-1) and stops at a put still refused), waits until every
# acknowledged object is on SSD, verifies, and writes the phase's JSON line.
measure() {
  local label="$1" samples="$work/samples.$1" deadline line state t_ssd=""
  deadline="$(calc 't + d' t="$fill_end" d="$deadline_s")"
  while :; do
    line="$(tail -n 1 "$samples")"
    state_objs="" state_queued=""
    read -r _ state_objs _ state_queued <<<"$line" || true
    if [ -n "${state_objs:-}" ] &&
       [ "$(calc 'o >= a && q == 0' o="$state_objs" a="$acked" q="$state_queued")" = 1 ]; then
      t_ssd="${line%% *}"
      break
    fi
    [ "$(calc 'n > d' n="$EPOCHREALTIME" d="$deadline")" = 0 ] || break
    sleep 0.05
  done
  stop_pid "$sampler_pid" || true
  state="$(offload_state)"
  local offloaded_objs offloaded_bytes to_ssd_s all_on_ssd=true
  read -r offloaded_objs offloaded_bytes _ <<<"$state"
  if [ -n "$t_ssd" ]; then
    # When the last acknowledged object landed (maybe before the fill ended:
    # a fill stopped by a refused put).
    t_ssd="$(awk -v a="$acked" '$2 >= a && $4 == 0 { print $1; exit }' "$samples")"
  else
    all_on_ssd=false
    t_ssd="$(tail -n 1 "$samples" | cut -d' ' -f1)"
    log "$label: not every acknowledged object on SSD within ${deadline_s} s ($state)"
  fi
  to_ssd_s="$(calc 'int(1000 * (s > f ? s - f : 0) + 0.5) / 1000' s="$t_ssd" f="$fill_end")"
  # Offload rates in 10^6 bytes/s (perf disk's unit): fill start -> all on
  # SSD, and over the node's busy time.
  local e2e busy_s busy
  e2e="$(calc '(t > f ? int(10 * b / (t - f) / 1e6 + 0.5) / 10 : 0)' b="$offloaded_bytes" \
           t="$t_ssd" f="$fill_start")"
  busy_s="$(calc 'x + 0' x="$(metric "$node_port" shelfmark_node_offload_busy_seconds_total)")"
  busy="$(calc '(s > 0 ? int(10 * b / s / 1e6 + 0.5) / 10 : 0)' b="$offloaded_bytes" s="$busy_s")"
  local mo=0 md=0 dk=0 ev=0 wr=0 er=0 p c v
  while read -r p c; do
    [ "${c:-0}" -gt 0 ] || continue
    read -r -a v <<<"$(verify "$p" "$c")"
    mo=$((mo + v[0])); md=$((md + v[1])); dk=$((dk + v[2]))
    ev=$((ev + v[3])); wr=$((wr + v[4])); er=$((er + v[5]))
  done <<<"$prefixes"
  local m=() name
  for name in evicted_without_copy_total offload_waits_total evicted_objects_total \
              offload_queued_tasks; do
    m+=("$(calc 'x + 0' x="$(metric "$metrics_port" "shelfmark_master_$name")")")
  done
  local failures
  failures="$(calc 'x + 0' x="$(metric "$node_port" shelfmark_node_offload_failures_total)")"
  local fill_s
  fill_s="$(calc 'e - s' e="$fill_end" s="$fill_start")"
  local ratio=null
  [ "$(calc 'd > 0' d="$disk_mb")" = 0 ] || ratio="$(calc 'int(100 * e / d + 0.5) / 100' e="$busy" d="$disk_mb")"
  json_line bench tier phase "$label" backend "$backend" objects "$objects" size "$size" \
    segment "$segment" acknowledged "$acked" fill_retries "$retries" fill_errors "$fill_errors" \
    fill_s "$(calc 'int(1000 * x + 0.5) / 1000' x="$fill_s")" \
    fill_mb_per_s "$(calc 'int(10 * a * s / t / 1e6 + 0.5) / 10' a="$acked" s="$size" t="$fill_s")" \
    to_ssd_s "$to_ssd_s" all_on_ssd "$all_on_ssd" offloaded_objects "$offloaded_objs" \
    offloaded_bytes "$offloaded_bytes" offload_mb_per_s "$e2e" offload_busy_s "$busy_s" offload_busy_mb_per_s "$busy" \
    disk_write_mb_per_s "$disk_mb" ratio_to_disk "$ratio" served "$((mo + md + dk))" \
    memory_only "$mo" memory_and_disk "$md" disk_only "$dk" evicted "$ev" wrong_bytes "$wr" \
    errors "$er" evicted_without_copy "${m[0]}" offload_waits "${m[1]}" evicted_objects "${m[2]}" \
    offload_queued_tasks "${m[3]}" node_offload_failures "$failures" >> "$out"
}

log "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); $objects x $size bytes," \
  "segment $segment, $backend; results in $out"

# 5. The backend on its own: batch writes of the same object size, in the
# same file system as the nodes' stores. disk_baseline LABEL COUNT: COUNT
# objects; its JSON line (phase LABEL) goes to $out; prints the MB/s.
disk_baseline() {
  sync
  "$perf_bin" disk --objects="$2" --value_size="$size" --batch="$disk_batch" \
    --backend="$disk_backend" --verify=8 --dir="$work" --json > "$work/disk.json" ||
    die "shelfmark-perf disk failed"
  sed "s/^{/{\"phase\":\"$1\",/" "$work/disk.json" >> "$out"
  json_field write_mb_per_s < "$work/disk.json"
}
disk_mb="$(disk_baseline disk_baseline "$objects")"
log "disk baseline: $disk_mb MB/s ($disk_backend, batches of $disk_batch)"

# 1. Burst: one fill at full speed.
start_cluster burst
start_sampler "$work/samples.burst"
fill_start="$EPOCHREALTIME"
read -r acked retries fill_errors <<<"$(fill tier "$objects")"
fill_end="$EPOCHREALTIME"
prefixes="tier $acked"  # fill stops at the first put it could not store
log "burst: fill acknowledged $acked of $objects ($retries retries, error $fill_errors)"
measure burst

# 4. Promotion on hit, in the burst's cluster.
hit() {
  "$perf_bin" hit --master="127.0.0.1:$rpc_port" --key="$1" --compare_key="$2" \
    --iters="$hit_iters" --json 2>>"$work/hit.err" ||
    { cat "$work/hit.err" >&2; die "shelfmark-perf hit $1 failed"; }
}
for ((i = acked - 9; i < acked - 1; i++)); do
  "$cli_bin" --master="127.0.0.1:$rpc_port" rm "tier-$i" --force >/dev/null 2>&1 || true
done
# The oldest object that eviction left on SSD only (which ones it took
# depends on the shards' order, not the keys').
disk_key=""
for ((i = 0; i < acked - 9; i++)); do
  replicas="$("$cli_bin" --master="127.0.0.1:$rpc_port" --json stat "tier-$i" 2>/dev/null)" || continue
  if ! grep -q '"type":"MEMORY"' <<<"$replicas" && grep -q '"type":"LOCAL_DISK"' <<<"$replicas"; then
    disk_key="tier-$i"
    break
  fi
done
[ -n "$disk_key" ] || die "promotion: no object of the burst is on SSD only"
hit_disk="$(hit "$disk_key" "tier-$((acked - 1))")"
promoted_p50="$(json_field memory_p50_us <<<"$hit_disk")"
memory_p50="$(json_field compare_p50_us <<<"$hit_disk")"
json_line bench tier phase promotion backend "$backend" key "$disk_key" size "$size" gets "$hit_iters" \
  disk_gets "$(json_field disk_gets <<<"$hit_disk")" \
  disk_p50_us "$(json_field disk_p50_us <<<"$hit_disk")" \
  promoted_gets "$(json_field memory_gets <<<"$hit_disk")" promoted_p50_us "$promoted_p50" \
  first_promoted_get "$(json_field first_memory_get <<<"$hit_disk")" \
  memory_baseline_p50_us "$memory_p50" \
  ratio_to_memory "$(calc '(m > 0 && p > 0 ? int(100 * p / m + 0.5) / 100 : 0)' p="$promoted_p50" m="$memory_p50")" \
  node_promoted "$(calc 'x + 0' x="$(metric "$node_port" shelfmark_node_promoted_total)")" \
  master_promotions_refused "$(calc 'x + 0' x="$(metric "$metrics_port" shelfmark_master_promotions_refused_total)")" \
  >> "$out"
stop_cluster

# 2. Fixed rate: fills of `chunk` objects on a schedule.
start_cluster rate
start_sampler "$work/samples.rate"
acked=0 retries=0 fill_errors="" prefixes=""
fill_start="$EPOCHREALTIME"
for ((i = 0; i < objects / chunk; i++)); do
  at="$(calc 's + i * c * z / (r * 1048576)' s="$fill_start" i="$i" c="$chunk" z="$size" \
          r="$rate_mibs")"
  wait_s="$(calc 'int(1000 * (a > n ? a - n : 0)) / 1000' a="$at" n="$EPOCHREALTIME")"
  sleep "$wait_s"
  read -r st re er <<<"$(fill "rate$i" "$chunk")"
  acked=$((acked + st)) retries=$((retries + re))
  [ "$er" = - ] || fill_errors+="rate$i:$er "
  prefixes+="rate$i $st"$'\n'
done
fill_end="$EPOCHREALTIME"
fill_errors="${fill_errors% }"
[ -n "$fill_errors" ] || fill_errors=-
prefixes="${prefixes%$'\n'}"
log "rate: fills acknowledged $acked of $objects ($retries retries, errors $fill_errors)"
measure rate
stop_cluster

# 3. Backlog: the whole fill queued before the node asks again. This
# machine's disk varies from run to run by 2x or more, and a write's speed
# depends on the dirty pages earlier writes left (the offset backend does
# not sync each batch), so the drain is set against the backend's batch
# writes of the same bytes just before and just after it, each of the three
# started after a sync.
segment_saved="$segment" objects_saved="$objects" disk_mb_saved="$disk_mb"
objects="$backlog_objects"
disk_before="$(disk_baseline disk_before_backlog "$objects")"
disk_mb="$disk_before"
segment=$((2 * objects * size > segment ? 2 * objects * size : segment))
start_cluster backlog --offload_poll_interval_ms="$backlog_poll_ms"
sync
start_sampler "$work/samples.backlog"
fill_start="$EPOCHREALTIME"
read -r acked retries fill_errors <<<"$(fill backlog "$objects")"
fill_end="$EPOCHREALTIME"
prefixes="backlog $acked"
log "backlog: fill acknowledged $acked of $objects ($retries retries, error $fill_errors)"
measure backlog
stop_cluster
disk_after="$(disk_baseline disk_after_backlog "$objects")"
drain="$(grep '"phase":"backlog"' "$out" | json_field offload_busy_mb_per_s)"
json_line bench tier phase backlog_vs_disk drain_mb_per_s "$drain" disk_before_mb_per_s \
  "$disk_before" disk_after_mb_per_s "$disk_after" \
  ratio "$(calc 'int(100 * r / ((a + b) / 2) + 0.5) / 100' r="$drain" a="$disk_before" b="$disk_after")" \
  >> "$out"
objects="$objects_saved" disk_mb="$disk_mb_saved" segment="$segment_saved"

row() {
  local line
  line="$(grep "\"phase\":\"$1\"" "$out")"
  local f vals=()
  for f in acknowledged fill_retries fill_s fill_mb_per_s to_ssd_s served evicted wrong_bytes \
           evicted_without_copy offload_waits offload_mb_per_s offload_busy_mb_per_s \
           ratio_to_disk; do
    vals+=("$(json_field "$f" <<<"$line")")
  done
  printf "%-7s %5s %5s %6s %9s %6s %6s %4s %5s %7s %5s %8s %9s %5s\n" "$1" "${vals[@]}"
}
echo
echo "=== DRAM overflow onto SSD: $objects x $size bytes into a $((segment >> 20)) MiB segment," \
  "$backend ($(nproc) CPUs) ==="
echo "fill: acknowledged puts, NO_AVAILABLE_HANDLE retries, seconds, MB/s; to-SSD: seconds from"
echo "the end of the fill until every acknowledged object is on SSD; verify: served byte-exact,"
echo "evicted (lost), wrong; the master's evicted_without_copy and offload waits; offload MB/s"
echo "(fill start -> all on SSD), busy MB/s (over the node's busy time) and its ratio to the"
echo "backend's batch write rate ($disk_mb MB/s; backlog: see below)"
printf "%-7s %5s %5s %6s %9s %6s %6s %4s %5s %7s %5s %8s %9s %5s\n" phase acked retry "fill s" \
  "fill MB/s" to-SSD served lost wrong no-copy waits "off MB/s" "busy MB/s" ratio
row burst
row rate
row backlog
vs="$(grep '"phase":"backlog_vs_disk"' "$out")"
echo "backlog: the node drained the whole fill at $(json_field drain_mb_per_s <<<"$vs") MB/s (busy)"
echo "against the backend's batch writes of the same bytes just before and after:" \
  "$(json_field disk_before_mb_per_s <<<"$vs") and $(json_field disk_after_mb_per_s <<<"$vs") MB/s;" \
  "ratio to their mean $(json_field ratio <<<"$vs")"
promo="$(grep '"phase":"promotion"' "$out")"
echo
echo "=== promotion on hit: $(json_field key <<<"$promo" | tr -d '"') (on SSD only) read $hit_iters times," \
  "then a key in DRAM ==="
printf "%-22s %8s %10s %12s\n" "served by" gets p50_us "first get"
printf "%-22s %8s %10s %12s\n" "LOCAL_DISK (before)" "$(json_field disk_gets <<<"$promo")" \
  "$(json_field disk_p50_us <<<"$promo")" 0
printf "%-22s %8s %10s %12s\n" "MEMORY (promoted)" "$(json_field promoted_gets <<<"$promo")" \
  "$(json_field promoted_p50_us <<<"$promo")" "$(json_field first_promoted_get <<<"$promo")"
printf "%-22s %8s %10s %12s\n" "MEMORY (never evicted)" "$hit_iters" \
  "$(json_field memory_baseline_p50_us <<<"$promo")" 0
echo "promoted / never-evicted p50: $(json_field ratio_to_memory <<<"$promo")"
echo "JSON lines: $out"
