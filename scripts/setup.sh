#!/usr/bin/env bash
# Installs every Debian package Shelfmark needs to build, test and benchmark.
# A no-op (no apt calls) when everything is already installed. Run as root.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  capnproto libcapnp-dev
  libzstd-dev libmsgpack-cxx-dev libcurl4-openssl-dev libssl-dev libxxhash-dev
  libgtest-dev
  # scripts/check_thread_safety.sh builds the tree with clang -Wthread-safety.
  clang
  libibverbs-dev librdmacm-dev libucx-dev
  curl iproute2 procps
  # The ha tests start their own etcd (docs/ha.md) on free ports. On a real
  # Debian host this package also starts a system etcd on 2379, which the
  # tests never use.
  etcd-server
  redis-server redis-tools
  # The soft-RoCE VM suite (tests/softroce) boots Debian's kernel under QEMU.
  qemu-system-x86 busybox-static cpio rdma-core ibverbs-providers ibverbs-utils perftest
  # shelfmark-perf get --plot draws with gnuplot.
  gnuplot-nox
  # The Python package (python/, docs/python.md): pybind11 builds the native
  # module; its tests run pytest with numpy and torch (CPU tensors), and the
  # pip install check uses a venv. python3-torch is large (~1 GB installed
  # with its dependencies); it is installed once, like everything here.
  python3-dev pybind11-dev python3-pytest python3-numpy python3-torch python3-venv python3-pip
  # Operations: promtool checks /metrics and deploy/prometheus rules; the
  # package tests build .deb files (dpkg-shlibdeps) and verify systemd units.
  prometheus dpkg-dev systemd
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# The S3 tests run the npm package s3rver on Node.js (scripts/s3rver.sh); a
# machine that already has Node.js and npm keeps its own.
if ! command -v npm >/dev/null; then missing+=(nodejs npm); fi

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
