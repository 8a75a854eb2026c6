#!/usr/bin/env bash
# Configures and builds Shelfmark.
# Usage: scripts/build.sh [BUILD_TYPE [CMAKE_OPTION...]]
# BUILD_TYPE: RelWithDebInfo (default), Release, Debug, Sanitize (ASan+UBSan)
# or Tsan (ThreadSanitizer; run its tests with the environment scripts/test.sh
# sets for them). CMAKE_OPTIONs (e.g. -DSHELFMARK_WERROR=ON, which
# scripts/test.sh passes) are handed to cmake's configure step, which then
# runs again. Build tree: build/<type-in-lower-case>. Prints the build
# directory last.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
type="${1:-RelWithDebInfo}"
shift || true
case "$type" in
  RelWithDebInfo | Release | Debug | Sanitize | Tsan) ;;
  *)
    echo "build.sh: unknown build type '$type' (RelWithDebInfo, Release, Debug, Sanitize, Tsan)" >&2
    exit 2
    ;;
esac
dir="$root/build/$(echo "$type" | tr '[:upper:]' '[:lower:]')"
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
if [ ! -f "$dir/CMakeCache.txt" ] || [ $# -gt 0 ]; then
  cmake -S "$root" -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE="$type" "$@" >&2
fi
cmake --build "$dir" -j "$(nproc)" >&2
echo "$dir"
