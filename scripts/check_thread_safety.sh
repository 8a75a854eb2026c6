#!/usr/bin/env bash
# Clang's lock checking, one pass of scripts/test.sh: builds the tree with
# clang and -Wthread-safety -Werror=thread-safety (SHELFMARK_THREAD_SAFETY=ON),
# so a GUARDED_BY field touched without its lock, or a REQUIRES function
# called without it, fails the build (common/thread_annotations.h). Installs
# clang when it is missing (scripts/setup.sh installs it too).
# Build tree: build/thread-safety (Debug: no optimiser, the cheapest full
# build; about 2-4 minutes on 2 cores without ccache).
#   Usage: scripts/check_thread_safety.sh [TARGET...]
#   Default: every target (libraries, binaries, tests).
#   JOBS=n  parallel jobs (default: nproc)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$root/build/thread-safety"

if ! command -v clang++ >/dev/null || ! command -v clang >/dev/null; then
  echo "== installing clang ==" >&2
  sudo=()
  if [ "$(id -u)" != 0 ]; then sudo=(sudo); fi
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq clang
fi
clang++ --version | head -n 1 >&2

generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
CC=clang CXX=clang++ cmake -S "$root" -B "$dir" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Debug -DSHELFMARK_THREAD_SAFETY=ON -DSHELFMARK_WERROR=ON >&2
targets=()
for t in "$@"; do
  if [ "$t" != all ]; then targets+=(--target "$t"); fi
done
cmake --build "$dir" -j "${JOBS:-$(nproc)}" "${targets[@]}"
echo "thread-safety check passed (${*:-all})" >&2
