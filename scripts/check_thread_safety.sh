#!/usr/bin/env bash
# Developer check (not part of scripts/test.sh): builds with clang and
# -Wthread-safety -Werror=thread-safety (SHELFMARK_THREAD_SAFETY=ON), so a
# GUARDED_BY field touched without its lock, or a REQUIRES function called
# without it, fails the build. Installs clang when it is missing.
# Build tree: build/thread-safety.
#   Usage: scripts/check_thread_safety.sh [TARGET...|all]
#   Default targets: the directory library (the annotated code) and the
#   tests that include its headers. Not the whole tree by default: clang 14
#   lacks C++20 parenthesised aggregate init, which control/ uses.
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
if [ ! -f "$dir/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$dir" "${generator[@]}" \
    -DCMAKE_BUILD_TYPE=Debug -DSHELFMARK_THREAD_SAFETY=ON >&2
fi
if [ "$#" -eq 0 ]; then
  set -- shelfmark_common shelfmark_directory directory_test offset_allocator_test key_map_test
fi
targets=()
if [ "$*" != all ]; then
  for t in "$@"; do targets+=(--target "$t"); done
fi
cmake --build "$dir" -j "${JOBS:-$(nproc)}" "${targets[@]}"
echo "thread-safety check passed ($*)" >&2
