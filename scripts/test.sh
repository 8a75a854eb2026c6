#!/usr/bin/env bash
# Runs Shelfmark's whole test suite from a fresh clone: installs the Debian
# packages it needs, builds, runs every ctest label, then runs the quick suite
# again under the Sanitize build type (ASan + UBSan).
#   SHELFMARK_SKIP_SANITIZE=1  skip the sanitizer pass
#   SHELFMARK_TEST_LABEL=quick run only that label
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

bash scripts/setup.sh
jobs="$(nproc)"

run_suite() {  # build type, label regex
  local dir
  dir="$(bash scripts/build.sh "$1" | tail -n 1)"
  echo "== ctest ($1${2:+, label $2}) ==" >&2
  if [ -n "$2" ]; then
    ctest --test-dir "$dir" --output-on-failure -j "$jobs" -L "$2"
  else
    ctest --test-dir "$dir" --output-on-failure -j "$jobs"
  fi
}

run_suite RelWithDebInfo "${SHELFMARK_TEST_LABEL:-}"
if [ "${SHELFMARK_SKIP_SANITIZE:-0}" != 1 ]; then
  run_suite Sanitize quick
fi
