#!/bin/sh
# /init of the soft-RoCE test VM (run_vm_suite.sh builds the initramfs around
# it). Runs as PID 1 under busybox sh: sets up two soft-RoCE devices over a
# veth pair, runs each test, prints "SHELFMARK-TEST <name> PASS|FAIL
# (<seconds>s)" per test and "SHELFMARK-VM-END" last, then powers off. The
# host side reads these lines from the serial console, and the benchmark
# figures from the lines starting "SHELFMARK-PERF <tool> " (perftest's
# ib_read_lat / ib_read_bw rows and shelfmark-perf read's JSON lines).
export PATH=/bin:/sbin:/usr/bin
export HOME=/tmp
export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/shm /dev/pts
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /dev/shm
mount -t configfs configfs /sys/kernel/config 2>/dev/null

uptime_cs() { # centiseconds since boot
  read -r up _ </proc/uptime
  echo "${up%.*}${up#*.}"
}
elapsed() { # elapsed START_CS -> "1.23"
  d=$(( $(uptime_cs) - $1 ))
  printf '%d.%02d' $((d / 100)) $((d % 100))
}
result() { # result NAME STATUS START_CS
  if [ "$2" -eq 0 ]; then r=PASS; else r=FAIL; fi
  echo "SHELFMARK-TEST $1 $r ($(elapsed "$3")s)"
}
finish() {
  echo "SHELFMARK-VM-END"
  sync
  poweroff -f
  sleep 5
}

echo "shelfmark VM: kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) cpus"

# --- setup: modules, veth pair, rxe0/rxe1 ----------------------------------------
t=$(uptime_cs)
setup() {
  depmod || return 1
  for m in crc32_generic configfs rdma_rxe rdma_ucm ib_uverbs veth; do
    modprobe "$m" || { echo "modprobe $m failed"; return 1; }
  done
  echo "modules loaded ($(elapsed "$t")s)"
  grep -q ' /sys/kernel/config ' /proc/mounts || mount -t configfs configfs /sys/kernel/config
  # One iproute2 run for the veth pair and its routing (every program start
  # is slow on an emulated CPU).
  printf '%s\n' \
    "link set lo up" \
    "link add veth0 type veth peer name veth1" \
    "addr add 192.168.77.1/24 dev veth0" \
    "addr add 192.168.77.2/24 dev veth1" \
    "link set veth0 up" \
    "link set veth1 up" \
    "rule add pref 1 iif veth0 lookup local" \
    "rule add pref 1 iif veth1 lookup local" \
    "rule add pref 10 from 192.168.77.2 to 192.168.77.1 lookup 10" \
    "rule add pref 10 from 192.168.77.1 to 192.168.77.2 lookup 11" \
    "route add 192.168.77.1 dev veth1 src 192.168.77.2 table 10" \
    "route add 192.168.77.2 dev veth0 src 192.168.77.1 table 11" \
    "rule add pref 100 lookup local" \
    "rule del pref 0 lookup local" >/tmp/net.batch
  # Both addresses are local, so by default the kernel routes .2 -> .1 over
  # lo and rdma_cm cannot resolve rxe1 -> rxe0. The rules above send traffic
  # between them over the veth pair instead: packets arriving on a veth are
  # delivered locally, locally sent ones between the two addresses leave
  # through the veth of the source address, and the local table moves behind
  # them. accept_local lets a veth take packets from a local source address.
  # (This runs inside the VM only.)
  for c in all default; do
    echo 1 >/proc/sys/net/ipv4/conf/$c/accept_local
    echo 0 >/proc/sys/net/ipv4/conf/$c/rp_filter
  done
  # A 4 MiB transfer is 4096 packets in one burst: a longer backlog keeps the
  # veth from dropping them (each drop costs rxe a retransmission time-out).
  echo 20000 >/proc/sys/net/core/netdev_max_backlog
  iproute2-ip -batch /tmp/net.batch || return 1
  echo "veth pair routed ($(elapsed "$t")s)"
  ping -c 1 -W 5 -I veth1 192.168.77.1 >/dev/null || { echo "ping over veth failed"; return 1; }
  echo "ping .2 -> .1 over veth ok ($(elapsed "$t")s)"
  rdma link add rxe0 type rxe netdev veth0 || return 1
  rdma link add rxe1 type rxe netdev veth1 || return 1
  echo "rxe0, rxe1 added ($(elapsed "$t")s)"
  rdma link show
  ibv_devinfo -d rxe0 | grep -E 'hca_id|state|active_mtu'
}
setup
st=$?
result setup $st "$t"
if [ $st -ne 0 ]; then finish; fi

export SHELFMARK_RDMA_DEVICE=rxe0
export SHELFMARK_RDMA_CLIENT_DEVICE=rxe1
export SHELFMARK_RDMA_SERVER_IP=192.168.77.1
export SHELFMARK_RDMA_CLIENT_IP=192.168.77.2
export SHELFMARK_RDMA_EXPECT_MTU=1024

# --- the verbs engine's own tests ---------------------------------------------------
t=$(uptime_cs)
/tests/verbs_engine_test --gtest_filter="$(cat /tests/gtest_filter)"
result verbs_engine_test $? "$t"

# --- raw verbs baseline: perftest, rxe1 -> rxe0 over the veth pair ----------------
gid_index() { # gid_index DEV IPV4_HEX -> index of DEV's RoCE v2 GID ::ffff:<ip>
  for g in /sys/class/infiniband/$1/ports/1/gids/*; do
    i=${g##*/}
    if [ "$(cat "$g" 2>/dev/null)" = "0000:0000:0000:0000:0000:ffff:$2" ] &&
       [ "$(cat "/sys/class/infiniband/$1/ports/1/gid_attrs/types/$i" 2>/dev/null)" = "RoCE v2" ]; then
      echo "$i"
      return 0
    fi
  done
  return 1
}
perf_lines() { # perf_lines LABEL FILE: perftest's header and rows as "SHELFMARK-PERF LABEL ..."
  awk -v label="$1" '/^[ \t]*(#bytes|[0-9]+[ \t])/ {$1 = $1; print "SHELFMARK-PERF " label " " $0}' "$2"
}
perftest() { # perftest TOOL SIZE ITERS: one perftest run, rxe1 -> rxe0
  # QPs on rxe0 (192.168.77.1) and rxe1 (192.168.77.2), like the engine's
  # test, so the reads cross the veth pair; perftest's own TCP exchange of
  # QP numbers runs over lo.
  g0=$(gid_index rxe0 c0a8:4d01) && g1=$(gid_index rxe1 c0a8:4d02) ||
    { echo "no RoCE v2 GID for 192.168.77.1/.2"; return 1; }
  "$1" -d rxe0 -x "$g0" -s "$2" -n "$3" -F >/tmp/perftest_server.log 2>&1 &
  server=$!
  tries=0
  while [ $tries -lt 20 ]; do
    if "$1" -d rxe1 -x "$g1" -s "$2" -n "$3" -F 192.168.77.1 >/tmp/perftest.log 2>&1; then
      wait $server
      perf_lines "$1" /tmp/perftest.log
      return 0
    fi
    tries=$((tries + 1))
    sleep 0.5  # the server may not listen yet; perftest's client does not retry
  done
  cat /tmp/perftest.log /tmp/perftest_server.log
  kill $server 2>/dev/null
  return 1
}
perftests() {
  st=0
  for tool in ib_read_lat ib_read_bw; do
    perftest $tool 4096 1000 || st=1
    perftest $tool 65536 500 || st=1
    perftest $tool 1048576 100 || st=1
  done
  return $st
}
t=$(uptime_cs)
perftests
result perftest $? "$t"

# --- master + node + client over rdma (when the build has them) --------------------
wait_for() { # wait_for TRIES COMMAND...: retries COMMAND every 0.5 s
  n=$1
  shift
  while [ "$n" -gt 0 ]; do
    "$@" >/dev/null 2>&1 && return 0
    n=$((n - 1))
    sleep 0.5  # a process starting up: nothing to wait on but its answer
  done
  return 1
}
# The node's QPs are on rxe0 (192.168.77.1); the clients' on rxe1
# (192.168.77.2) through --device, so their reads cross the veth pair
# (without --device a client would take rxe0 and loop back).
master=127.0.0.1:50051
cli="/tests/shelfmark-cli --master=$master"
data="--protocol=rdma --device=rxe1 --cluster_token=vm-token"
metric() { # metric NAME: its value on the node's /metrics ("" when absent)
  wget -q -O /tmp/node.metrics http://127.0.0.1:9004/metrics 2>/dev/null
  awk -v name="$1" '$1 == name {print $2 + 0}' /tmp/node.metrics
}
reads_posted() { # reads_posted FILE: N of "rdma reads posted: N" in a tool's stderr
  sed -n 's/.* rdma reads posted: \([0-9]*\).*/\1/p' "$1"
}
cluster_up() {
  /tests/shelfmark-master --rpc_port=50051 --metrics_port=9003 --enable_offload \
    >/tmp/master.log 2>&1 &
  master_pid=$!
  wait_for 60 $cli count || { echo "master did not answer"; cat /tmp/master.log; return 1; }
  # The node's SSD store (LOCAL_DISK replicas for perf_get) lives in the
  # VM's tmpfs.
  mkdir -p /tmp/ssd
  MOONCAKE_OFFLOAD_FILE_STORAGE_PATH=/tmp/ssd \
  /tests/shelfmark-node --master=$master --segment_size=67108864 --protocol=rdma \
    --device=rxe0 --listen_ip=192.168.77.1 --metrics_port=9004 --cluster_token=vm-token \
    --ping_interval_ms=500 >/tmp/node.log 2>&1 &
  node_pid=$!
  wait_for 60 grep -q endpoint /tmp/node.log || { echo "node did not mount"; cat /tmp/node.log; return 1; }
  grep endpoint /tmp/node.log
}
cluster_down() {
  st=0
  kill $node_pid
  wait $node_pid || { echo "node exited with $?"; st=1; }
  kill $master_pid
  wait $master_pid
  [ $st -eq 0 ] || { cat /tmp/node.log /tmp/master.log; }
  return $st
}
# put/get over rdma; the get's counters and the node's /metrics prove that
# the bytes moved by RDMA READ over connections the node accepted.
cluster_flow() {
  dd if=/dev/urandom of=/tmp/object bs=65536 count=16 2>/dev/null
  st=0
  $cli put $data --verbose obj/1 /tmp/object || st=1
  $cli get $data --verbose obj/1 /tmp/object.back 2>/tmp/get.err || st=1
  cat /tmp/get.err
  cmp /tmp/object /tmp/object.back || { echo "bytes differ"; st=1; }
  n=$(reads_posted /tmp/get.err)
  if [ -z "$n" ] || [ "$n" -eq 0 ]; then
    echo "get posted no RDMA READ (rdma reads posted: '$n')"; st=1
  fi
  if $cli get --protocol=rdma --device=rxe1 --cluster_token=wrong obj/1 /tmp/object.bad; then
    echo "a wrong cluster token was accepted"; st=1
  fi
  accepted=$(metric shelfmark_node_rdma_accepted_connections_total)
  rejected=$(metric shelfmark_node_rdma_rejected_connections_total)
  echo "node /metrics: rdma accepted connections ${accepted:-none}, rejected ${rejected:-none}"
  [ "${accepted:-0}" -ge 2 ] || { echo "the node accepted fewer than 2 RDMA connections"; st=1; }
  [ "${rejected:-0}" -ge 1 ] || { echo "the node rejected no RDMA connection"; st=1; }
  $cli stat obj/1
  return $st
}
# shelfmark-perf read against the same master and node: Shelfmark's read path
# and the raw RDMA READ (VerbsEngine::RawRead) side by side.
perf_read() {
  /tests/shelfmark-perf read --master=$master $data --size=4096,65536,1048576 \
    --iters=200 --warmup=5 --json >/tmp/perf_read.out 2>/tmp/perf_read.err
  rc=$?
  while read -r line; do echo "SHELFMARK-PERF shelfmark-perf-read $line"; done </tmp/perf_read.out
  grep 'reads posted' /tmp/perf_read.err | while read -r line; do
    echo "SHELFMARK-PERF shelfmark-perf-read-counters $line"
  done
  [ $rc -eq 0 ] || { cat /tmp/perf_read.err; return 1; }
  n=$(reads_posted /tmp/perf_read.err)
  [ -n "$n" ] && [ "$n" -gt 0 ] || { echo "perf read posted no RDMA READ"; return 1; }
  [ "$(wc -l </tmp/perf_read.out)" -eq 3 ] || { echo "perf read did not print 3 lines"; return 1; }
}
# shelfmark-perf get against the same cluster: MEMORY rows over RDMA READ,
# LOCAL_DISK rows through the node's SSD store (UCX active messages), with
# the same run's baselines. The table and the JSON lines become perf lines
# (scripts/demo.sh --vm prints the table).
perf_get() {
  # A few hundred objects put and read back over RDMA first (the demo's
  # fill / verify), so the node also offloads while perf get runs.
  $cli fill vm-demo --count=300 --size=65536 $data >/tmp/fill.out 2>&1 ||
    { cat /tmp/fill.out; return 1; }
  $cli verify vm-demo --count=300 --size=65536 $data >/tmp/verify.out 2>&1
  rc=$?
  while read -r line; do echo "SHELFMARK-PERF shelfmark-cli-load $line"; done </tmp/fill.out
  while read -r line; do echo "SHELFMARK-PERF shelfmark-cli-load $line"; done </tmp/verify.out
  [ $rc -eq 0 ] || return 1
  /tests/shelfmark-perf get --master=$master $data --replica=all --size=4096,65536,1048576 \
    --iters=200 --warmup=5 --keys=8 --disk_dirs=/tmp/ssd --json_out=/tmp/perf_get.jsonl \
    >/tmp/perf_get.out 2>/tmp/perf_get.err
  rc=$?
  while read -r line; do echo "SHELFMARK-PERF shelfmark-perf-get-table $line"; done </tmp/perf_get.out
  while read -r line; do echo "SHELFMARK-PERF shelfmark-perf-get $line"; done </tmp/perf_get.jsonl
  [ $rc -eq 0 ] || { cat /tmp/perf_get.err; return 1; }
  n=$(reads_posted /tmp/perf_get.err)
  [ -n "$n" ] && [ "$n" -gt 0 ] || { echo "perf get posted no RDMA READ"; return 1; }
  [ "$(grep -c '"replica":"local_disk"' /tmp/perf_get.jsonl)" -eq 3 ] ||
    { echo "perf get did not print 3 local_disk rows"; return 1; }
  [ "$(grep -c '"replica":"memory","protocol":"rdma","path":"rdma"' /tmp/perf_get.jsonl)" -eq 3 ] ||
    { echo "perf get did not print 3 memory rows over rdma"; return 1; }
}
if [ -x /tests/shelfmark-master ] && [ -x /tests/shelfmark-node ] && [ -x /tests/shelfmark-cli ] &&
   [ -x /tests/shelfmark-perf ]; then
  t=$(uptime_cs)
  if cluster_up; then
    cluster_flow
    result cluster_flow $? "$t"
    t=$(uptime_cs)
    perf_read
    result perf_read $? "$t"
    t=$(uptime_cs)
    perf_get
    result perf_get $? "$t"
    t=$(uptime_cs)
    cluster_down
    result cluster_down $? "$t"
  else
    result cluster_up 1 "$t"
  fi
else
  echo "SHELFMARK-TEST cluster_flow SKIP (shelfmark-master/node/cli/perf not built)"
fi

finish
