#!/bin/bash
# run_vm_suite.sh BUILD_DIR: runs the soft-RoCE test suite inside a QEMU
# virtual machine booted on Debian's own kernel (the host kernel may lack
# InfiniBand; the VM's has it as modules).
#
# Steps (host side):
#  1. installs what it needs (scripts/setup.sh label-softroce: only what is
#     missing);
#  2. downloads the kernel image package that linux-image-amd64 depends on
#     and unpacks it (dpkg-deb -x, never installed) into
#     BUILD_DIR/softroce/kernel/<package>/ (kept and reused by later runs);
#  3. builds an initramfs: busybox, the RDMA and veth modules, iproute2's `ip`
#     (as `iproute2-ip`, so busybox's own applet does not shadow it) and
#     `rdma`, the project's test binaries and every library they load,
#     libibverbs' rxe provider, UCX's modules, and tests/softroce/vm_init.sh
#     as /init;
#  4. boots it with TCG (KVM guests hang on these machines), 1 GiB, 2 vCPUs,
#     no network card, with a time-out; the console goes to
#     BUILD_DIR/softroce/console.log. A boot that never reaches /init (TCG
#     can hang bringing up a second vCPU) is killed and retried with 1 vCPU;
#     the hung boot's console is kept as console.hung.log.
# Inside, /init sets up veth0 (192.168.77.1) <-> veth1 (192.168.77.2) with
# rxe0 and rxe1 on them, runs each test (verbs_engine_test; perftest's
# ib_read_lat and ib_read_bw at 4 KiB, 64 KiB and 1 MiB; master + node + cli
# put/get over rdma, which must show RDMA READs posted and connections the
# node accepted and rejected; shelfmark-perf read and get against that
# cluster, the node with an SSD store in the VM's tmpfs),
# prints "SHELFMARK-TEST <name> PASS|FAIL" per test and "SHELFMARK-VM-END"
# last, then powers off. The benchmark figures ("SHELFMARK-PERF " lines) are
# copied, without that prefix, to BUILD_DIR/softroce/perf.txt and printed.
#
# (No pipe in here ends its reader early: with pipefail a SIGPIPE would abort.)
# Exit status: 0 when every test passed and the end marker was seen; 1 on any
# FAIL, a missing marker or a time-out; 2 on bad usage or a setup failure.
# Environment: SHELFMARK_VM_TIMEOUT (seconds, default 600, both boots together),
# SHELFMARK_VM_BOOT_TIMEOUT (seconds from boot to /init's first line, default
# 150; a boot that hangs is retried once with 1 vCPU), SHELFMARK_VM_SMP
# (vCPUs of the first boot, default 2),
# SHELFMARK_VM_GTEST_FILTER (passed to the verbs test as --gtest_filter).
set -euo pipefail

if [[ $# -ne 1 || ! -d "$1" ]]; then
  echo "usage: $0 BUILD_DIR   (a configured and built Shelfmark build folder)" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work="$build/softroce"
timeout_s="${SHELFMARK_VM_TIMEOUT:-600}"
boot_timeout_s="${SHELFMARK_VM_BOOT_TIMEOUT:-150}"
vcpus="${SHELFMARK_VM_SMP:-2}"
hung_rc=200  # boot_vm's status for a boot that never reached /init (not timeout's 124-137)
start_s=$(date +%s)

# Kernel modules the VM loads (paths under lib/modules/<version>/kernel/).
module_paths=(drivers/infiniband/core drivers/infiniband/sw/rxe net/ipv4/udp_tunnel.ko
              net/ipv6/ip6_udp_tunnel.ko fs/configfs crypto/crc32_generic.ko drivers/net/veth.ko)

log() { echo "[softroce] $*" >&2; }
die() { echo "[softroce] error: $*" >&2; exit 2; }

# --- 1. packages -------------------------------------------------------------
# scripts/setup.sh's step label-softroce (scripts/lib/requirements.sh).
ensure_packages() {
  bash "$here/../../scripts/setup.sh" label-softroce >&2 || die "scripts/setup.sh label-softroce failed"
}

# --- 2. kernel ---------------------------------------------------------------
kernel_dir=""
kernel_version=""
fetch_kernel() {
  local pkg
  pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
        awk '/Depends: linux-image-[0-9]/ && !seen {print $2; seen = 1}')
  [[ -n "$pkg" ]] || die "apt-cache depends linux-image-amd64 names no kernel image"
  kernel_dir="$work/kernel/$pkg"
  if ! compgen -G "$kernel_dir/boot/vmlinuz-*" >/dev/null; then
    log "downloading $pkg (cached under $kernel_dir)"
    local tmp="$work/kernel/download"
    rm -rf "$tmp" "$kernel_dir"
    mkdir -p "$tmp"
    chmod 777 "$tmp"  # apt-get download drops privileges to _apt when it can
    (cd "$tmp" && apt-get download "$pkg" >&2) ||
      { apt-get update -q >&2 && (cd "$tmp" && apt-get download "$pkg" >&2); } ||
      die "apt-get download $pkg failed"
    local part="$kernel_dir.partial"
    mkdir -p "$part"
    dpkg-deb -x "$tmp"/*.deb "$part"
    # Keep the image and the modules the VM needs (a few MiB, not 400).
    local mods rel
    mods=$(echo "$part"/lib/modules/*)
    mkdir -p "$part/keep"
    for rel in "${module_paths[@]}"; do
      [[ -e "$mods/kernel/$rel" ]] || die "module path $rel missing in $pkg"
      mkdir -p "$part/keep/$(dirname "$rel")"
      mv "$mods/kernel/$rel" "$part/keep/$(dirname "$rel")/"
    done
    rm -rf "$mods/kernel" "$part/usr" "$part/etc"
    mv "$part/keep" "$mods/kernel"
    mv "$part" "$kernel_dir"
    rm -rf "$tmp"
  fi
  local module_dirs=("$kernel_dir"/lib/modules/*/)
  kernel_version=$(basename "${module_dirs[0]}")
}

# --- 3. initramfs --------------------------------------------------------------
root=""
copy_with_libs() {  # copy_with_libs SRC DEST_IN_ROOT [strip]
  local src="$1" dest="$root$2"
  mkdir -p "$(dirname "$dest")"
  cp -L "$src" "$dest"
  if [[ "${3:-}" == strip ]]; then strip --strip-debug "$dest" 2>/dev/null || true; fi
  local lib
  for lib in $(ldd "$src" 2>/dev/null | awk '/=> \// {print $3} /^\t\/lib/ {print $1}'); do
    if [[ ! -e "$root$lib" ]]; then
      mkdir -p "$root$(dirname "$lib")"
      cp -L "$lib" "$root$lib"
    fi
  done
}

build_initramfs() {
  root="$work/root"
  rm -rf "$root"
  mkdir -p "$root"/{bin,sbin,etc,proc,sys,dev,tmp,run,lib,lib64,usr/bin,tests,mnt}
  cp /bin/busybox "$root/bin/busybox"
  local applet
  for applet in $("$root/bin/busybox" --list); do
    [[ -e "$root/bin/$applet" ]] || ln -s busybox "$root/bin/$applet"
  done

  # Modules (the whole infiniband core, rxe and what they load).
  local mods="$kernel_dir/lib/modules/$kernel_version"
  local mroot="$root/lib/modules/$kernel_version"
  local rel
  for rel in "${module_paths[@]}"; do
    [[ -e "$mods/kernel/$rel" ]] || die "module path $rel missing in $kernel_version"
    mkdir -p "$mroot/kernel/$(dirname "$rel")"
    cp -r "$mods/kernel/$rel" "$mroot/kernel/$(dirname "$rel")/"
  done
  cp "$mods"/modules.{order,builtin} "$mroot/" 2>/dev/null || true

  # iproute2 (busybox ip cannot make a veth pair) and the RDMA tools.
  copy_with_libs "$(command -v ip)" /bin/iproute2-ip
  copy_with_libs "$(command -v rdma)" /bin/rdma
  local tool
  for tool in ib_read_lat ib_write_lat ib_read_bw ibv_devinfo; do
    copy_with_libs "$(command -v $tool)" "/usr/bin/$tool"
  done
  local multiarch=/usr/lib/x86_64-linux-gnu
  mkdir -p "$root/etc/libibverbs.d" "$root$multiarch/libibverbs"
  cp /etc/libibverbs.d/rxe.driver "$root/etc/libibverbs.d/"
  copy_with_libs "$multiarch/libibverbs/librxe-rdmav34.so" "$multiarch/libibverbs/librxe-rdmav34.so"
  local gcc_s
  gcc_s=$(ldconfig -p | awk '/libgcc_s.so.1 .*x86-64/ && !seen {print $NF; seen = 1}')
  [[ -n "$gcc_s" ]] && cp -L "$gcc_s" "$root$gcc_s"
  if [[ -d "$multiarch/ucx" ]]; then
    mkdir -p "$root$multiarch/ucx"
    local m
    for m in "$multiarch"/ucx/*.so.0; do copy_with_libs "$m" "${m}"; done
  fi

  # The project's test binaries (stripped of debug info: a smaller initrd boots faster).
  local bin
  for bin in transport/verbs_engine_test master/shelfmark-master node/shelfmark-node \
             tools/shelfmark-cli perf/shelfmark-perf; do
    [[ -x "$build/$bin" ]] && copy_with_libs "$build/$bin" "/tests/$(basename "$bin")" strip
  done
  [[ -x "$root/tests/verbs_engine_test" ]] ||
    die "$build/transport/verbs_engine_test is missing: build it first"

  cp "$here/vm_init.sh" "$root/init"
  chmod +x "$root/init"
  echo "${SHELFMARK_VM_GTEST_FILTER:-*}" >"$root/tests/gtest_filter"

  (cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"$work/initrd.gz"
}

# --- 4. boot ----------------------------------------------------------------------
# boot_vm SMP DEADLINE_S CONSOLE: boots the VM with SMP vCPUs and waits for it
# to end (at most DEADLINE_S). Returns qemu's status, 124/137 when it ran past
# its deadline, or $hung_rc when the kernel never reached /init's first line
# ("shelfmark VM:") within boot_timeout_s: TCG guests can hang while
# bringing up their second vCPU on some hosts, with nothing on the console.
boot_vm() {
  local smp="$1" deadline="$2" console="$3"
  rm -f "$console"
  local images=("$kernel_dir"/boot/vmlinuz-*)
  log "booting $kernel_version under TCG, $smp vCPU(s) (time-out ${deadline}s)"
  timeout --kill-after=10 "$deadline" qemu-system-x86_64 -accel tcg -m 1024 -smp "$smp" \
    -kernel "${images[0]}" -initrd "$work/initrd.gz" \
    -append "console=ttyS0 panic=-1" \
    -display none -monitor none -serial "file:$console" -nic none -no-reboot \
    </dev/null >&2 &
  local pid=$! boot_s
  boot_s=$(date +%s)
  until grep -aq '^shelfmark VM:' "$console" 2>/dev/null; do
    kill -0 "$pid" 2>/dev/null || break
    if (( $(date +%s) - boot_s >= boot_timeout_s )); then
      kill "$pid" 2>/dev/null
      wait "$pid" || true
      return "$hung_rc"
    fi
    sleep 1  # polls the console file; the deadline above bounds the wait
  done
  local rc=0
  wait "$pid" || rc=$?
  return "$rc"
}

# run_vm: boots with $vcpus vCPUs; a boot that hangs before /init is logged
# and retried once with 1 vCPU (it skips the secondary-CPU bring-up; the
# suite takes about as long), in what is left of timeout_s.
run_vm() {
  local console="$work/console.log" vm_start_s rc=0
  vm_start_s=$(date +%s)
  boot_vm "$vcpus" "$timeout_s" "$console" || rc=$?
  if ((rc == hung_rc)); then
    echo "VM boot hung: no /init output after ${boot_timeout_s}s with $vcpus vCPU(s); console tail:"
    tail -n 20 "$console" 2>/dev/null | tr -d '\r' || true
    local left=$(( timeout_s - ($(date +%s) - vm_start_s) ))
    # (`timeout 0` would mean no time-out at all.)
    if ((left > 0)); then
      mv -f "$console" "$work/console.hung.log" 2>/dev/null || true
      rc=0
      boot_vm 1 "$left" "$console" || rc=$?
    fi
  fi
  local vm_s=$(( $(date +%s) - vm_start_s ))
  [[ -f "$console" ]] || ((rc == hung_rc)) || die "qemu wrote no console log (exit status $rc)"
  touch "$console"
  tr -d '\r' <"$console"
  echo "----- softroce perf (also in $work/perf.txt) -----"
  { grep -a '^SHELFMARK-PERF ' "$console" || true; } | tr -d '\r' |
    sed 's/^SHELFMARK-PERF //' >"$work/perf.txt"
  cat "$work/perf.txt"
  echo "----- softroce summary -----"
  grep -a '^SHELFMARK-TEST ' "$console" | tr -d '\r' || true
  local failed=0
  if ((rc == 124 || rc == 137)); then
    echo "VM timed out after ${timeout_s}s"; failed=1
  fi
  if ((rc == hung_rc)); then
    echo "VM boot hung (no /init output within ${boot_timeout_s}s, retried with 1 vCPU when time was left)"; failed=1
  fi
  if ! grep -aq '^SHELFMARK-VM-END' "$console"; then
    echo "end marker SHELFMARK-VM-END missing"; failed=1
  fi
  if grep -aq '^SHELFMARK-TEST .* FAIL' "$console"; then failed=1; fi
  if ! grep -aq '^SHELFMARK-TEST .* PASS' "$console"; then
    echo "no test passed"; failed=1
  fi
  echo "VM wall time ${vm_s}s, total $(( $(date +%s) - start_s ))s"
  return $failed
}

mkdir -p "$work"
ensure_packages
fetch_kernel
build_initramfs
log "initramfs $(du -h "$work/initrd.gz" | cut -f1), kernel $kernel_version"
if run_vm; then echo "softroce suite: PASS"; else echo "softroce suite: FAIL"; exit 1; fi
