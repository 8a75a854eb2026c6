#!/usr/bin/env bash
# Clang's lock checking, one pass of scripts/test.sh: builds the tree with
# clang and -Wthread-safety -Werror=thread-safety (SHELFMARK_THREAD_SAFETY=ON),
# so a GUARDED_BY field touched without its lock, or a REQUIRES function
# called without it, fails the build (common/thread_annotations.h). Installs
# clang and its runtime archives when missing (scripts/setup.sh thread-safety).
# Build tree: build/thread-safety (Debug: no optimiser, the cheapest full
# build; about 2-4 minutes on 2 cores without ccache).
#   Usage: scripts/check_thread_safety.sh [TARGET...]
#   Default: every target (libraries, binaries, tests).
#   JOBS=n  parallel jobs (default: nproc)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$root/build/thread-safety"
# shellcheck source=scripts/lib/build_options.sh
. "$root/scripts/lib/build_options.sh"

# clang and its runtimes (the fuzz targets link them), when missing.
bash "$root/scripts/setup.sh" thread-safety
clang++ --version | head -n 1 >&2

generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
CC=clang CXX=clang++ cmake -S "$root" -B "$dir" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Debug -DSHELFMARK_THREAD_SAFETY=ON "${suite_cmake_options[@]}" >&2
targets=()
for t in "$@"; do
  if [ "$t" != all ]; then targets+=(--target "$t"); fi
done
cmake --build "$dir" -j "${JOBS:-$(nproc)}" "${targets[@]}"
echo "thread-safety check passed (${*:-all})" >&2
