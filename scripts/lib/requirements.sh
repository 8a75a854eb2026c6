# shellcheck shell=bash
# What each step of scripts/test.sh and scripts/demo.sh needs from the
# machine (source it; not a script): the Debian 12 packages, each with the
# commands or files of it that the step uses. The one list of them:
#   - scripts/setup.sh [STEP...] installs every package of the steps (all
#     steps by default) whose command or file is missing;
#   - scripts/test.sh checks a step's requirements before running it
#     (require_step), so a step whose tool is missing fails with a message
#     naming the Debian package instead of a compiler, linker or CPack error.
#
# An entry is "PACKAGE WHAT...", each WHAT one of:
#   NAME          a command on PATH;
#   /PATH         a file;
#   py:MODULE     a top-level module /usr/bin/python3 finds (not imported;
#                 the interpreter python/CMakeLists.txt tests with);
#   gcc-lib:FILE  a file of g++'s library directory (g++ -print-file-name);
#   clang-rt:FILE a file of clang's runtime directory
#                 (<clang -print-resource-dir>/lib/linux).
# A machine that has a WHAT from elsewhere (Node.js and npm from NodeSource,
# say) keeps its own: a requirement is the WHAT, the package is how to get it.
# Every entry names the packages of Debian 12 (bookworm): gcc 12, clang 14.
# The lists are read by name (requirement_entries).
# shellcheck disable=SC2034

# Every gcc build (RelWithDebInfo, Release for the packages, Sanitize, Tsan).
requirements_build=(
  "build-essential g++ make"
  "cmake cmake"
  "pkg-config pkg-config"
  "capnproto capnp"
  "libcapnp-dev /usr/include/capnp/message.h"
  "libzstd-dev /usr/include/zstd.h"
  "libmsgpack-cxx-dev /usr/include/msgpack.hpp"
  "libcurl4-openssl-dev /usr/include/x86_64-linux-gnu/curl/curl.h"
  "libssl-dev /usr/include/openssl/ssl.h"
  "libxxhash-dev /usr/include/xxhash.h"
  "libgtest-dev /usr/include/gtest/gtest.h"
  "libibverbs-dev /usr/include/infiniband/verbs.h"
  "librdmacm-dev /usr/include/rdma/rdma_cma.h"
  "libucx-dev /usr/include/ucp/api/ucp.h"
  # python/ (the native module) is skipped without these, and with it the
  # python label.
  "python3-dev python3-config"
  "pybind11-dev /usr/include/pybind11/pybind11.h"
)
# The Sanitize build (ASan + UBSan) and the Tsan build: gcc's runtimes.
requirements_sanitize=("libgcc-12-dev gcc-lib:libasan.so gcc-lib:libubsan.so")
requirements_tsan=("libgcc-12-dev gcc-lib:libtsan.so")
# scripts/check_thread_safety.sh: the whole tree with clang, libFuzzer
# targets included (-fsanitize=fuzzer,address,undefined links clang's
# runtime archives, which Debian ships apart from clang, as a Recommends).
requirements_thread_safety=(
  "clang clang clang++"
  "libclang-rt-dev clang-rt:libclang_rt.fuzzer-x86_64.a clang-rt:libclang_rt.asan-x86_64.a
   clang-rt:libclang_rt.ubsan_standalone-x86_64.a"
)
# The ctest labels (README, docs/architecture.md).
# unit: the layout and metric-name checkers (python3), promtool over
# deploy/prometheus.
requirements_label_unit=("python3 python3" "prometheus promtool")
# process: metrics_process_test runs `promtool check metrics`.
requirements_label_process=("prometheus promtool")
# s3: scripts/s3rver.sh installs the npm package s3rver from
# registry.npmjs.org (https: the CA certificates) and runs it on Node.js.
requirements_label_s3=(
  "nodejs node"
  "npm npm"
  "curl curl"
  "util-linux flock"
  "ca-certificates /etc/ssl/certs/ca-certificates.crt"
)
# ha: testing/etcd_process.cc starts /usr/bin/etcd.
requirements_label_ha=("etcd-server /usr/bin/etcd")
# cluster: network namespaces, veth pairs, a bridge, tc (tests/netns_util.cc).
requirements_label_cluster=("iproute2 ip tc")
# python: pytest over the package, numpy arrays and torch tensors.
requirements_label_python=(
  "python3-pytest py:pytest"
  "python3-numpy py:numpy"
  "python3-torch py:torch"
)
# softroce: tests/softroce/run_vm_suite.sh (QEMU, an initramfs of busybox,
# iproute2, perftest and the rxe provider; Debian's kernel package is
# downloaded with apt-get download and unpacked with dpkg-deb).
requirements_label_softroce=(
  "qemu-system-x86 qemu-system-x86_64"
  "busybox-static /bin/busybox"
  "cpio cpio"
  "iproute2 ip rdma"
  "ibverbs-providers /etc/libibverbs.d/rxe.driver"
  "ibverbs-utils ibv_devinfo"
  "perftest ib_read_lat ib_read_bw ib_write_lat"
  "binutils strip"
)
requirements_label_hostile=()
# package: CPack's DEB generator (file, dpkg-shlibdeps), the packages'
# checks (objdump, systemd-analyze) and their maintainer scripts (dpkg -i
# runs adduser and deb-systemd-helper).
requirements_label_package=(
  "file file"
  "dpkg-dev dpkg-shlibdeps"
  "binutils objdump"
  "systemd systemd-analyze"
  "adduser adduser"
  "init-system-helpers deb-systemd-helper"
)
# scripts/demo.sh (and the benchmarks' scripts/lib/cluster.sh): curl for
# /health and /metrics, ss for free ports, gnuplot for the latency plot.
requirements_demo=("curl curl" "iproute2 ss" "gnuplot-nox gnuplot")
# Not a step's, installed by scripts/setup.sh for faster builds, for the
# benchmarks (redis-server and redis-benchmark are their baselines), for
# `pip install ./python` in a venv (docs/python.md) and for working in the
# clone.
requirements_extras=(
  "ninja-build ninja"  # scripts/build.sh generates for ninja when it is here, else make
  "redis-server redis-server"
  "redis-tools redis-cli redis-benchmark"
  "python3-venv py:ensurepip"
  "python3-pip pip3"
  "procps ps pkill"
  "git git"
)

# requirement_steps: every step's name (the NAME of requirements_NAME with
# "_" as "-"), in scripts/test.sh's order.
requirement_steps() {
  echo build sanitize tsan thread-safety label-unit label-process label-s3 label-ha \
    label-cluster label-python label-softroce label-hostile label-package demo extras
}

# requirement_entries STEP: the entries of STEP, one a line; status 2 for an
# unknown step. A label without a list of its own needs nothing more.
requirement_entries() {
  local var="requirements_${1//-/_}"
  if ! declare -p "$var" >/dev/null 2>&1; then
    case "$1" in
      label-*) return 0 ;;
      *) echo "requirements: unknown step '$1' ($(requirement_steps))" >&2; return 2 ;;
    esac
  fi
  local -n entries="$var"
  local entry
  # shellcheck disable=SC2086  # unquoted: an entry's words on one line
  for entry in "${entries[@]}"; do echo $entry; done
}

# describe WHAT: WHAT (above) in words.
describe() {
  case "$1" in
    /*) echo "file $1" ;;
    py:*) echo "python3 module ${1#py:}" ;;
    gcc-lib:*) echo "g++ runtime ${1#gcc-lib:}" ;;
    clang-rt:*) echo "clang runtime ${1#clang-rt:}" ;;
    *) echo "command $1" ;;
  esac
}

# have WHAT: whether WHAT (above) is on this machine.
have() {
  local what="$1" dir
  case "$what" in
    /*) [ -e "$what" ] ;;
    py:*)
      [ -x /usr/bin/python3 ] &&
        /usr/bin/python3 -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec(sys.argv[1]) is None)' \
          "${what#py:}" 2>/dev/null
      ;;
    gcc-lib:*)
      command -v g++ >/dev/null || return 1
      dir="$(g++ -print-file-name="${what#gcc-lib:}")"
      [ "${dir#/}" != "$dir" ] && [ -e "$dir" ]
      ;;
    clang-rt:*)
      command -v clang >/dev/null || return 1
      [ -e "$(clang -print-resource-dir)/lib/linux/${what#clang-rt:}" ]
      ;;
    *) command -v "$what" >/dev/null ;;
  esac
}

# missing_packages STEP...: the packages of the steps that lack a WHAT, one a
# line, each once, in order.
missing_packages() {
  local step entry pkg what
  for step in "$@"; do
    requirement_entries "$step" || return
  done | while read -r pkg what; do
    for w in $what; do
      if ! have "$w"; then echo "$pkg"; break; fi
    done
  done | awk '!seen[$0]++'
}

# require_package PKG WHAT...: 0 when every WHAT is here; else one line on
# stderr per missing WHAT naming PKG, and status 1.
require_package() {
  local pkg="$1" what rc=0
  shift
  for what in "$@"; do
    if ! have "$what"; then
      echo "missing $(describe "$what"): install the Debian package $pkg" \
        "(apt-get install $pkg, or scripts/setup.sh)" >&2
      rc=1
    fi
  done
  return "$rc"
}

# require_step STEP: require_package for every entry of STEP; 0 when all are
# here, else 1 after naming each missing one.
require_step() {
  local pkg what rc=0 entries
  entries="$(requirement_entries "$1")" || return 1
  while read -r pkg what; do
    [ -n "$pkg" ] || continue
    # shellcheck disable=SC2086  # WHATs are single words
    require_package "$pkg" $what || rc=1
  done <<<"$entries"
  return "$rc"
}
