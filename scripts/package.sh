#!/usr/bin/env bash
# Builds Shelfmark in Release and makes its Debian packages with CPack:
# shelfmark-master, shelfmark-node, shelfmark-store-service, shelfmark-tools,
# libshelfmark-dev and python3-shelfmark
# (cmake/packaging.cmake). Usage: scripts/package.sh
# Build tree: build/release (configured with the install prefix /usr); the
# packages land in build/release/packages. Prints their paths last, one a line.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$root/build/release"
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
cmake -S "$root" -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX=/usr >&2
cmake --build "$dir" -j "$(nproc)" --target shelfmark-packaged >&2
rm -rf "$dir/packages"
(cd "$dir" && cpack --config CPackConfig.cmake >&2)
debs=("$dir"/packages/*.deb)
if [ ! -e "${debs[0]}" ]; then
  echo "package.sh: cpack made no .deb in $dir/packages" >&2
  exit 1
fi
printf '%s\n' "${debs[@]}"
