#!/usr/bin/env bash
# Starts and stops s3rver (npm package; an S3 server on the local disk) for
# the S3 object store tests. s3rver 3.7.1 checks the access key id and that
# x-amz-content-sha256 is present, but does not verify SigV4 signatures
# (snapshot/s3_signing_test.cc checks libcurl's against AWS's published examples).
#
#   scripts/s3rver.sh install                  install only (no-op when present)
#   scripts/s3rver.sh start DIR PORT [BUCKET]  serve 127.0.0.1:PORT from a fresh
#                                              DIR/data with BUCKET (default
#                                              shelfmark-test) created; pid in
#                                              DIR/s3rver.pid, log in DIR/s3rver.log;
#                                              returns once it answers HTTP
#   scripts/s3rver.sh stop DIR                 kill the server started in DIR
#
# Credentials: access key S3RVER, secret S3RVER (s3rver's defaults).
# s3rver is installed with npm into $SHELFMARK_NPM_CACHE (default
# $HOME/.cache/shelfmark/npm), never into the repository; npm's output goes to
# npm-install.log there. Needs node, curl, and npm and flock to install
# (Debian: nodejs, curl, npm, util-linux). With S3RVER_PARENT_PID set, the
# server is also killed when that process exits (a crashed test leaves no
# server behind).
#
# Exit status: 0 ok, 2 usage, 3 a program it needs (node, npm, flock, curl)
# is not installed, 4 the server did not come up (its log is printed),
# 5 installing s3rver failed (npm's exit status and the last lines of its
# output are printed).
set -euo pipefail

version=3.7.1
cache="${SHELFMARK_NPM_CACHE:-${HOME:-/tmp}/.cache/shelfmark/npm}"
pkg="$cache/node_modules/s3rver"

die() { local code="$1"; shift; echo "s3rver.sh: $*" >&2; exit "$code"; }

installed() {
  [ -f "$pkg/package.json" ] &&
    [ "$(node -p "require('$pkg/package.json').version" 2>/dev/null)" = "$version" ]
}

install_s3rver() {
  command -v node >/dev/null || die 3 "node is not installed (Debian: apt-get install nodejs npm)"
  installed && return 0
  command -v npm >/dev/null || die 3 "npm is not installed (Debian: apt-get install npm)"
  command -v flock >/dev/null || die 3 "flock is not installed (Debian: apt-get install util-linux)"
  mkdir -p "$cache" || die 5 "cannot create the npm directory $cache"
  # One install at a time (parallel tests); fd 9 is closed again before the
  # server starts, which must not inherit the lock.
  exec 9>"$cache/.install.lock" || die 5 "cannot open $cache/.install.lock"
  flock 9 || die 5 "cannot lock $cache/.install.lock"
  local log="$cache/npm-install.log" rc=0
  if ! installed; then
    npm install --prefix "$cache" --no-audit --no-fund --loglevel=error "s3rver@$version" \
      >"$log" 2>&1 || rc=$?
    [ "$rc" -eq 0 ] || die 5 "npm install s3rver@$version into $cache failed (npm exit status $rc); \
last lines of its output (all of it in $log):
$(tail -n 20 "$log")"
    installed || die 5 "npm install s3rver@$version exited 0 but s3rver $version is not in $cache \
(npm's output is in $log)"
  fi
  exec 9>&-
}

start() {
  local dir="$1" port="$2" bucket="${3:-shelfmark-test}"
  install_s3rver
  # The readiness poll below would take a missing curl for an answer.
  command -v curl >/dev/null || die 3 "curl is not installed (Debian: apt-get install curl)"
  mkdir -p "$dir"
  rm -rf "$dir/data"
  mkdir -p "$dir/data"
  # Detached from our stdout/stderr: whoever captures this script's output
  # (ctest) must not wait for the server.
  # --openssl-legacy-provider: s3rver encrypts ListObjectsV2 continuation
  # tokens with DES, which OpenSSL 3 only offers in its legacy provider
  # (without it every truncated listing is an HTTP 500).
  node --openssl-legacy-provider "$pkg/bin/s3rver.js" -d "$dir/data" -a 127.0.0.1 -p "$port" -s \
    --configure-bucket "$bucket" </dev/null >"$dir/s3rver.log" 2>&1 &
  local pid=$!
  echo "$pid" >"$dir/s3rver.pid"
  if [ -n "${S3RVER_PARENT_PID:-}" ]; then
    (tail --pid="$S3RVER_PARENT_PID" -f /dev/null; kill "$pid" 2>/dev/null) \
      </dev/null >/dev/null 2>&1 &
  fi
  for _ in $(seq 1 300); do
    kill -0 "$pid" 2>/dev/null || die 4 "s3rver exited: $(tail -n 20 "$dir/s3rver.log")"
    if [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$port/")" != 000 ]; then
      return 0
    fi
    sleep 0.1
  done
  kill "$pid" 2>/dev/null || true
  die 4 "s3rver did not answer on 127.0.0.1:$port: $(tail -n 20 "$dir/s3rver.log")"
}

stop() {
  local dir="$1" pid
  [ -f "$dir/s3rver.pid" ] || return 0
  pid="$(cat "$dir/s3rver.pid")"
  kill "$pid" 2>/dev/null || true
  # Until it has exited (or is a zombie whose reaper is not us); then -9.
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    grep -q '^[0-9]* (.*) Z' "/proc/$pid/stat" 2>/dev/null && break
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$dir/s3rver.pid"
}

case "${1:-}" in
  install) install_s3rver ;;
  start) [ $# -ge 3 ] || die 2 "usage: $0 start DIR PORT [BUCKET]"; start "$2" "$3" "${4:-}" ;;
  stop) [ $# -eq 2 ] || die 2 "usage: $0 stop DIR"; stop "$2" ;;
  *) die 2 "usage: $0 install | start DIR PORT [BUCKET] | stop DIR" ;;
esac
