#!/usr/bin/env bash
# Runs Shelfmark's whole test suite from a fresh clone: installs the Debian
# packages it needs (scripts/setup.sh, a step of its own), then runs these
# passes in order:
#   1. RelWithDebInfo build, then every ctest label (unit, process, s3,
#      cluster, softroce, python, ...), one ctest run per label;
#   2. Sanitize build (ASan + UBSan), labels unit and process;
#   3. Tsan build (ThreadSanitizer), label unit, with UCX's memory hooks off
#      (UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none: with them every
#      UCX test crashes under TSan) and TSAN_OPTIONS="halt_on_error=1
#      second_deadlock_stack=1 suppressions=scripts/tsan.supp" (third-party
#      code only), followed by any TSAN_OPTIONS of the caller;
#   4. scripts/check_thread_safety.sh: the whole tree built with clang
#      -Wthread-safety -Werror=thread-safety;
#   5. in that clang tree, ctest label fuzz: every libFuzzer target (ASan +
#      UBSan) for SHELFMARK_FUZZ_SECONDS (20) seconds each.
# A failing build or label is recorded and the script goes on with the next
# one; at the end a summary lists every step with PASS/FAIL and its wall
# time, and the exit status is non-zero when any step failed. Before each
# step its tools are checked (scripts/lib/requirements.sh): a step whose
# command, header or runtime is missing fails at once, naming the Debian
# package (scripts/setup.sh installs them all), instead of failing in the
# compiler, linker or CPack. The builds use the CMake options of
# scripts/lib/build_options.sh, as scripts/demo.sh does, so running the demo
# first leaves nothing for pass 1 to compile.
#   SHELFMARK_TEST_LABEL=REGEX       pass 1 runs only the labels matching the
#                                    regex (ctest -L style, e.g. unit or
#                                    "unit|process")
#   SHELFMARK_SKIP_SANITIZE=1        skip pass 2
#   SHELFMARK_SKIP_TSAN=1            skip pass 3
#   SHELFMARK_SKIP_THREAD_SAFETY=1   skip passes 4 and 5
#   SHELFMARK_SKIP_FUZZ=1            skip pass 5
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root" || exit 1

# shellcheck source=scripts/lib/requirements.sh
. scripts/lib/requirements.sh
# shellcheck source=scripts/lib/build_options.sh
. scripts/lib/build_options.sh

jobs="$(nproc)"

summary=()
failures=0
start_all=$SECONDS

# record NAME STATUS SECONDS [NOTE]
record() {
  local verdict=PASS
  if [ "$2" -ne 0 ]; then
    verdict=FAIL
    failures=$((failures + 1))
  fi
  summary+=("$(printf '%s  %-30s %6ss%s' "$verdict" "$1" "$3" "${4:+  $4}")")
  echo "== $verdict: $1 ($3 s${4:+, $4}) ==" >&2
}

# require STEP NAME: whether STEP's tools are here (require_step names what
# is missing); when not, NAME is recorded as failed, with the packages.
require() {
  require_step "$1" && return 0
  record "$2" 1 0 "missing Debian package(s): $(missing_packages "$1" | paste -sd ' ')"
  return 1
}

# build TYPE: builds it (scripts/build.sh), sets $dir; non-zero on failure.
build() {
  local start=$SECONDS rc
  echo "== build ($1) ==" >&2
  require build "$1 build" || return 1
  case "$1" in
    Sanitize) require sanitize "$1 build" || return 1 ;;
    Tsan) require tsan "$1 build" || return 1 ;;
  esac
  dir="$(bash scripts/build.sh "$1" "${suite_cmake_options[@]}" | tail -n 1)"
  rc=$?
  record "$1 build" "$rc" $((SECONDS - start))
  return "$rc"
}

# run_labels TYPE REGEX [VAR=VALUE...]: one ctest run per label of $dir that
# matches REGEX, in the given environment.
run_labels() {
  local type="$1" regex="$2" labels label start rc
  shift 2
  labels="$(ctest --test-dir "$dir" --print-labels | sed -n 's/^  //p' | grep -E -- "$regex")"
  if [ -z "$labels" ]; then
    echo "test.sh: no ctest label of $dir matches '$regex'" >&2
    record "$type labels '$regex'" 1 0
    return
  fi
  for label in $labels; do
    echo "== ctest ($type, label $label) ==" >&2
    require "label-$label" "$type $label" || continue
    start=$SECONDS
    env "$@" ctest --test-dir "$dir" --output-on-failure -j "$jobs" -L "^${label}\$"
    rc=$?
    record "$type $label" "$rc" $((SECONDS - start))
  done
}

# 0. The packages. When some cannot be installed, the steps that need them
# fail naming them (require) and the others still run.
start=$SECONDS
echo "== scripts/setup.sh ==" >&2
bash scripts/setup.sh
record "setup.sh" "$?" $((SECONDS - start))

# 1. Everything, optimised.
if build RelWithDebInfo; then
  run_labels RelWithDebInfo "${SHELFMARK_TEST_LABEL:-.}"
fi

# 2. ASan + UBSan.
if [ "${SHELFMARK_SKIP_SANITIZE:-0}" != 1 ] && build Sanitize; then
  run_labels Sanitize '^(unit|process)$'
fi

# 3. ThreadSanitizer.
if [ "${SHELFMARK_SKIP_TSAN:-0}" != 1 ] && build Tsan; then
  run_labels Tsan '^unit$' UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none \
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$root/scripts/tsan.supp ${TSAN_OPTIONS:-}"
fi

# 4. Clang's lock annotations over the whole tree.
if [ "${SHELFMARK_SKIP_THREAD_SAFETY:-0}" != 1 ]; then
  start=$SECONDS
  echo "== thread-safety (clang -Wthread-safety, all targets) ==" >&2
  rc=1
  if require thread-safety thread-safety; then
    bash scripts/check_thread_safety.sh
    rc=$?
    record "thread-safety" "$rc" $((SECONDS - start))
  fi
  # 5. The fuzz targets it built (clang only), each for a bounded time.
  if [ "$rc" -eq 0 ] && [ "${SHELFMARK_SKIP_FUZZ:-0}" != 1 ]; then
    dir="$root/build/thread-safety"
    run_labels clang-fuzz '^fuzz$'
  fi
fi

echo >&2
echo "== summary ($((SECONDS - start_all)) s) ==" >&2
for line in "${summary[@]}"; do echo "$line" >&2; done
if [ "$failures" -ne 0 ]; then
  echo "test.sh: $failures step(s) failed" >&2
  exit 1
fi
echo "test.sh: all passed" >&2
