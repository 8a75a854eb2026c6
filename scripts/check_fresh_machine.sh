#!/usr/bin/env bash
# Checks README's promise on a fresh machine: builds a minimal Debian 12 root
# (debootstrap --variant=minbase) from this host's apt sources, clones this
# repository into it (its committed HEAD: uncommitted changes are not part of
# the check) and runs README's two commands inside, as root: scripts/demo.sh,
# then scripts/test.sh. Prints a summary at the end: the exit status and time
# of each command and test.sh's own summary. Not part of CI or of
# scripts/test.sh: a full run takes an hour or more on 2 cores (five builds
# of the tree without ccache, then the suite).
#
# What it needs from the host (host tools, not dependencies of the project):
#   - root: debootstrap, chroot and mounts;
#   - debootstrap (apt-get install debootstrap), git, util-linux (unshare);
#   - network: the Debian mirror of the host's apt sources (the packages and
#     the kernel package the softroce tests download) and registry.npmjs.org
#     (the s3 tests' s3rver);
#   - a kernel with network namespaces, veth and bridge devices and tc's tbf:
#     the cluster tests create namespaces and devices in the host's network
#     namespace (removed again by the tests) and the demo and tests bind free
#     loopback ports; the root gets its own /proc, /sys, /dev/shm and /run,
#     the host's /dev and /dev/pts, all in a mount namespace of its own; it
#     uses the host's resolver (/etc/resolv.conf) and the CA certificates the
#     host added (/usr/local/share/ca-certificates: a TLS-inspecting proxy's);
#   - disk: about 25 GiB free under WORK_DIR (the root with its packages
#     ~5 GiB, the build trees of the demo and test.sh ~15 GiB).
#
# Usage: scripts/check_fresh_machine.sh [WORK_DIR]
#   WORK_DIR (default /var/tmp/shelfmark-fresh-machine): the root is
#   WORK_DIR/root (an earlier one is removed first, and this one is kept
#   afterwards for a look: remove it with rm -rf), the log WORK_DIR/check.log
#   (FRESH_LOG=FILE for another place); everything also goes to stdout.
# Environment:
#   FRESH_STOP_AFTER=root|setup|build|demo  stop after that step (smoke runs):
#       root: debootstrap and the clone; setup: + scripts/setup.sh (installs
#       everything and checks every step's requirements); build: + the
#       RelWithDebInfo build with test.sh's options; demo: + scripts/demo.sh
#   FRESH_SUITE=bookworm  the Debian release to bootstrap
# Exit status: 0 when every command ran passed, 1 when one failed, 2 on bad
# usage or a host that lacks what is above.
# (shellcheck takes what follows the `exec unshare` below as unreachable.)
# shellcheck disable=SC2317
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
work="${1:-/var/tmp/shelfmark-fresh-machine}"
stop_after="${FRESH_STOP_AFTER:-}"
suite="${FRESH_SUITE:-bookworm}"

fail_usage() { echo "check_fresh_machine: $*" >&2; exit 2; }
case "$stop_after" in "" | root | setup | build | demo) ;;
  *) fail_usage "FRESH_STOP_AFTER must be root, setup, build or demo, not '$stop_after'" ;;
esac
[ "$(id -u)" -eq 0 ] || fail_usage "run as root (debootstrap, chroot and mounts)"
for tool in debootstrap git unshare chroot mount; do
  command -v "$tool" >/dev/null ||
    fail_usage "$tool is missing on this host (apt-get install debootstrap git util-linux mount)"
done

# Mounts and chroots happen in a mount namespace of this script's own: what
# it mounts never shows on the host, and is gone with the namespace even if
# this script is killed. The cleanup below unmounts in order all the same.
if [ -z "${FRESH_IN_NAMESPACE:-}" ]; then
  export FRESH_IN_NAMESPACE=1
  exec unshare --mount --propagation private -- bash "$0" "$@"
fi

mkdir -p "$work" || fail_usage "cannot create $work"
work="$(cd "$work" && pwd -P)"  # as /proc/PID/root shows it (stop_root_processes)
root="$work/root"
log="${FRESH_LOG:-$work/check.log}"
mkdir -p "$(dirname "$log")" || fail_usage "cannot create the directory of $log"
: >"$log" || fail_usage "cannot write $log"
exec > >(tee -a "$log") 2>&1

say() { echo "[fresh $(date +%H:%M:%S)] $*"; }
results=()
failed=0
test_log="$root/root/test.log"  # scripts/test.sh's output, for its summary

# --- the host's apt sources -------------------------------------------------
# Debian's entries (one-line and deb822 formats, the files apt reads): "URI
# SUITE COMPONENTS...", one a line. Only the suites of the release checked.
debian_sources() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -n -E 's/^[[:space:]]*deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+)[[:space:]]+(.*)$/\2 \3/p' "$f"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    # One stanza a paragraph: Types, URIs, Suites, Components (an entry per
    # URI and suite).
    awk 'function flush() {
           if (types ~ /(^| )deb( |$)/) {
             nu = split(uris, u, " "); ns = split(suites, s, " ")
             for (i = 1; i <= nu; i++) for (j = 1; j <= ns; j++) print u[i], s[j], comps
           }
           types = uris = suites = comps = ""
         }
         /^[[:space:]]*$/ { flush(); next }
         /^#/ { next }
         tolower($1) == "types:" { $1 = ""; types = $0 }
         tolower($1) == "uris:" { $1 = ""; uris = $0 }
         tolower($1) == "suites:" { $1 = ""; suites = $0 }
         tolower($1) == "components:" { $1 = ""; comps = $0 }
         END { flush() }' "$f" | sed -E 's/[[:space:]]+/ /g; s/^ //'
  done | awk -v suite="$suite" '$2 == suite || index($2, suite "-") == 1'
}

# --- steps --------------------------------------------------------------------
# step NAME COMMAND...: runs it, times it, records "NAME: exit N, S s".
step() {
  local name="$1" start=$SECONDS rc
  shift
  say "== $name"
  "$@"
  rc=$?
  results+=("$(printf '%-22s exit %3s  %6s s' "$name" "$rc" $((SECONDS - start)))")
  say "== $name: exit $rc after $((SECONDS - start)) s"
  [ "$rc" -eq 0 ] || failed=1
  return "$rc"
}

mounted=()
mount_in_root() {  # mount_in_root TARGET MOUNT-ARGS...: mounts at $root/TARGET
  local target="$root$1"
  shift
  mkdir -p "$target" && mount "$@" "$target" && mounted+=("$target")
}

# Processes still running inside the root (started by the commands below),
# by process id: their root directory is the root's.
stop_root_processes() {
  local p pids=()
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && pids+=("${p#/proc/}")
  done
  [ ${#pids[@]} -eq 0 ] && return
  say "stopping ${#pids[@]} process(es) left in the root: ${pids[*]}"
  kill -TERM "${pids[@]}" 2>/dev/null
  sleep 2
  kill -KILL "${pids[@]}" 2>/dev/null
}

cleanup() {
  local i
  stop_root_processes
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" 2>/dev/null ||
      say "could not unmount ${mounted[i]}"
  done
  mounted=()
}

summary() {
  local line
  echo
  say "== summary (log: $log, root: $root)"
  for line in "${results[@]}"; do echo "  $line"; done
  if [ -f "$test_log" ]; then
    echo "  scripts/test.sh's summary:"
    sed -n '/^== summary/,$p' "$test_log" | sed 's/^/    /'
  fi
}
trap 'cleanup; summary' EXIT
trap 'exit 130' INT TERM

make_root() {
  local mirror sources
  sources="$(debian_sources)"
  mirror="$(awk -v suite="$suite" '$2 == suite { print $1; exit }' <<<"$sources")"
  [ -n "$mirror" ] || { say "no '$suite' entry in this host's apt sources"; return 2; }
  say "mirror $mirror; the root's sources:"
  # shellcheck disable=SC2001
  sed 's/^/  deb /' <<<"$sources"
  if [ -e "$root" ]; then
    say "removing the earlier root $root"
    rm -rf --one-file-system "$root" || return 1
  fi
  debootstrap --variant=minbase "$suite" "$root" "$mirror" || return 1
  # shellcheck disable=SC2001
  sed 's/^/deb /' <<<"$sources" >"$root/etc/apt/sources.list" || return 1
  # What an installed machine has and debootstrap leaves out: a name for
  # this host and localhost in /etc/hosts (the Python tests connect to
  # "localhost").
  printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
  # The root uses the host's network: its resolver and the certificate
  # authorities the host added for it (a TLS-inspecting proxy's, say;
  # ca-certificates, installed by setup.sh, takes them in).
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    say "the host's own CA certificates: $(cd /usr/local/share/ca-certificates && echo ./*.crt)"
    mkdir -p "$root/usr/local/share/ca-certificates" &&
      cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  fi
}

clone() {
  local head
  head="$(git -C "$repo" rev-parse HEAD)" || return 1
  say "cloning $repo at $head (committed HEAD; $(git -C "$repo" status --porcelain | wc -l)" \
    "uncommitted path(s) left out)"
  git clone -q --no-local --no-checkout "$repo" "$root/root/shelfmark" &&
    git -C "$root/root/shelfmark" fetch -q "$repo" "$head" &&
    git -C "$root/root/shelfmark" checkout -q --detach "$head"
}

# The root is a mount point of its own first: `ip netns exec` (the cluster
# tests) remounts / and fails in a root that is a plain directory.
mount_all() {
  mount_in_root "" --bind "$root" &&
    mount_in_root /proc -t proc proc &&
    mount_in_root /sys -t sysfs sysfs &&
    mount_in_root /dev --bind /dev &&
    mount_in_root /dev/pts --bind /dev/pts &&
    mount_in_root /dev/shm -t tmpfs -o mode=1777,nosuid,nodev tmpfs &&
    mount_in_root /run -t tmpfs -o mode=755,nosuid,nodev tmpfs &&
    mkdir "$root/run/lock" && chmod 1777 "$root/run/lock"
}

# inside COMMAND: runs COMMAND (a bash command line) in the clone inside the
# root, as root, with a clean environment (a fresh login's).
inside() {
  chroot "$root" /usr/bin/env -i HOME=/root USER=root LOGNAME=root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash -c "cd /root/shelfmark && $1"
}

stopping_after() { [ "$stop_after" = "$1" ] && say "stopping after $1 (FRESH_STOP_AFTER)"; }

say "checking README's commands on a fresh Debian ($suite, minbase) root under $work"
step "debootstrap" make_root || exit 1
step "clone" clone || exit 1
mount_all || { say "could not mount /proc, /sys, /dev, /dev/pts, /dev/shm, /run in the root"; exit 2; }
stopping_after root && exit 0

if [ "$stop_after" = setup ] || [ "$stop_after" = build ]; then
  step "scripts/setup.sh" inside "scripts/setup.sh" || exit 1
  stopping_after setup && exit 0
  # shellcheck disable=SC2016  # expanded inside the root
  step "scripts/build.sh" inside '. scripts/lib/build_options.sh &&
    scripts/build.sh RelWithDebInfo "${suite_cmake_options[@]}"' || exit 1
  stopping_after build && exit 0
fi

step "scripts/demo.sh" inside "scripts/demo.sh"
stopping_after demo && exit "$failed"
step "scripts/test.sh" inside "scripts/test.sh 2>&1 | tee /root/test.log; exit \${PIPESTATUS[0]}"
exit "$failed"
