# shellcheck shell=bash
# Shell functions shared by the benchmark scripts (source it; not a script).
# The sourcing script sets `script` (the tag of its log lines) first.
# Needs bash, curl (master health) and ss (free_port).

# shellcheck disable=SC2154  # `script` is the sourcing script's
log() { echo "$script: $*" >&2; }
die() { log "$*"; exit 1; }

# build_tree [BUILD_DIR]: prints BUILD_DIR when given, else installs the
# packages (scripts/setup.sh) and builds the RelWithDebInfo tree
# (scripts/build.sh) with scripts/test.sh's options (build_options.sh: the
# test suite run afterwards finds it built), printing its directory.
build_tree() {
  if [ -n "${1:-}" ]; then
    echo "$1"
    return
  fi
  local scripts
  scripts="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  # shellcheck source=scripts/lib/build_options.sh
  . "$scripts/lib/build_options.sh"
  "$scripts/setup.sh" >&2
  "$scripts/build.sh" RelWithDebInfo "${suite_cmake_options[@]}" | tail -n 1
}

# find_binary BUILD_DIR NAME: the executable NAME built under BUILD_DIR (not
# the copies the soft-RoCE suite packs into BUILD_DIR/softroce); dies when
# there is none.
find_binary() {
  local dir="${1%/}" path
  path="$(find "$dir" -path "$dir/softroce" -prune -o -type f -name "$2" -perm -u+x -print -quit)"
  [ -n "$path" ] || die "no $2 under $1"
  echo "$path"
}

# cluster_binaries [BUILD_DIR]: sets `build` (build_tree) and the globals
# master_bin, node_bin and perf_bin (find_binary) for the benchmarks that
# start a cluster.
# shellcheck disable=SC2034  # the globals are the sourcing script's
cluster_binaries() {
  build="$(build_tree "${1:-}")"
  master_bin="$(find_binary "$build" shelfmark-master)"
  node_bin="$(find_binary "$build" shelfmark-node)"
  perf_bin="$(find_binary "$build" shelfmark-perf)"
}

# cluster_workdir: a temporary directory `work`, empty `master_pid` and
# `node_pid`, and an EXIT trap that stops both processes and removes `work`.
# shellcheck disable=SC2034  # the globals are the sourcing script's
cluster_workdir() {
  work="$(mktemp -d)"
  master_pid=""
  node_pid=""
  trap 'stop_pid "$node_pid" || true; stop_pid "$master_pid" || true; rm -rf "$work"' EXIT
}

# write_cluster_token FILE: a random cluster token in FILE, readable by this
# user only (mode 600); dies when it could not be written. As a master's
# token table (auth/token_table.h) a line with a token alone has every role.
write_cluster_token() {
  (umask 077 && head -c 32 /dev/urandom | base64 | tr -d '/+=' >"$1")
  [ -s "$1" ] || die "could not write the cluster token to $1"
}

# free_port: a TCP port nobody listens on (for servers that cannot bind port 0).
free_port() {
  local p
  while true; do
    p=$((20000 + RANDOM % 40000))
    ss -Htln "sport = :$p" | grep -q . || { echo "$p"; return; }
  done
}

# wait_line FILE PATTERN: waits up to 30 s for a line of FILE matching the
# grep PATTERN and prints it; prints FILE to stderr and fails otherwise.
wait_line() {
  for _ in $(seq 300); do
    if grep -m1 -- "$2" "$1" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  cat "$1" >&2
  return 1
}

# start_master MASTER_BIN LOG [FLAG...]: starts shelfmark-master on ports 0
# (it binds free ports and prints "rpc port N, metrics port M" on stderr)
# with stdout and stderr in LOG, and waits up to 30 s for /health. Sets
# master_pid, rpc_port and metrics_port (for the caller); dies when the master exits or
# never becomes healthy.
# shellcheck disable=SC2034  # master_pid, rpc_port, metrics_port: for the caller
start_master() {
  local bin="$1" master_log="$2" ports
  shift 2
  "$bin" --rpc_port=0 --metrics_port=0 "$@" >"$master_log" 2>&1 &
  master_pid=$!
  rpc_port=""
  metrics_port=""
  for _ in $(seq 1 300); do
    # Both ports from one read of the one line that names them.
    ports="$(sed -n 's/.*rpc port \([0-9]*\), metrics port \([0-9]*\).*/\1 \2/p' "$master_log" |
               head -n 1)"
    rpc_port="${ports% *}"
    metrics_port="${ports#* }"
    if [ -n "$ports" ] && curl -fsS "http://127.0.0.1:$metrics_port/health" >/dev/null 2>&1; then
      return 0
    fi
    kill -0 "$master_pid" 2>/dev/null || die "shelfmark-master exited; see $master_log"
    sleep 0.1
  done
  die "shelfmark-master did not become healthy within 30 s; see $master_log"
}

# stop_pid PID: SIGTERM to PID (a child of this shell) and waits for it; a
# PID that is empty or already gone is fine. Returns the child's status.
stop_pid() {
  [ -n "$1" ] || return 0
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null
}

# start_etcd NAME DIR: a single-member etcd on free loopback ports, its data
# and log (DIR/etcd.log) in DIR; sets etcd_port and etcd_pid once it answers
# /health (dies otherwise).
start_etcd() {
  local name="$1" dir="$2" peer_port
  command -v etcd >/dev/null || die "etcd is not installed (scripts/setup.sh installs etcd-server)"
  etcd_port="$(free_port)"
  peer_port="$(free_port)"
  etcd --name "$name" --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" \
    --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "$name=http://127.0.0.1:$peer_port" >"$dir/etcd.log" 2>&1 &
  etcd_pid=$!
  for _ in $(seq 1 100); do
    curl -fsS "http://127.0.0.1:$etcd_port/health" 2>/dev/null | grep -q true && return 0
    kill -0 "$etcd_pid" 2>/dev/null || break
    sleep 0.1
  done
  die "etcd did not start; see $dir/etcd.log"
}

# wait_redis PORT PID SECONDS LOG: waits for redis-server PID to answer PING
# with PONG (it answers LOADING while an RDB file loads); dies when it exits
# or does not answer within SECONDS.
wait_redis() {
  for _ in $(seq 1 $(($3 * 10))); do
    [ "$(redis-cli -p "$1" ping 2>/dev/null)" = "PONG" ] && return 0
    kill -0 "$2" 2>/dev/null || die "redis-server exited; see $4"
    sleep 0.1
  done
  die "redis-server did not answer within $3 s; see $4"
}

# json_fields NAME: the value of "NAME" in each flat JSON object on stdin (one
# object a line), one value a line in input order; objects without it print
# nothing. For callers that choose among several (max, median, sum). No jq on
# a fresh machine.
json_fields() { sed -n "s/.*\"$1\": *\([^,}]*\).*/\1/p"; }

# json_field NAME: the value of "NAME" in the one flat JSON object on stdin
# (given several, the first's: choose among them with json_fields).
json_field() { json_fields "$1" | head -n 1; }

# median_value: the median of the numbers on stdin, one a line (of an even
# count, the lower middle one; empty lines are skipped); prints nothing when
# there are none.
median_value() { sort -g | awk 'NF { v[++n] = $1 } END { if (n) print v[int((n + 1) / 2)] }'; }
