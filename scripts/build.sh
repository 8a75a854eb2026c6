#!/usr/bin/env bash
# Configures and builds Shelfmark. Usage: scripts/build.sh [BUILD_TYPE]
# BUILD_TYPE: RelWithDebInfo (default), Release, Debug or Sanitize (ASan+UBSan).
# Build tree: build/<type-in-lower-case>. Prints the build directory last.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
type="${1:-RelWithDebInfo}"
dir="$root/build/$(echo "$type" | tr '[:upper:]' '[:lower:]')"
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
if [ ! -f "$dir/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE="$type" >&2
fi
cmake --build "$dir" -j "$(nproc)" >&2
echo "$dir"
