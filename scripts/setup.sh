#!/usr/bin/env bash
# Installs the Debian packages Shelfmark needs to build, test, run the demo
# and benchmark, on Debian 12, from a minimal root (debootstrap
# --variant=minbase) up: the packages of scripts/lib/requirements.sh whose
# command or file is missing. A no-op (no apt calls) when nothing is.
#   Usage: scripts/setup.sh [STEP...]   (default: every step; a step is a
#          name of requirement_steps, e.g. thread-safety or label-softroce)
# Run as root (or with sudo at hand). Packages are installed without their
# Recommends: whatever a step uses is named in the list.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=scripts/lib/requirements.sh
. "$root/scripts/lib/requirements.sh"

steps=("$@")
# shellcheck disable=SC2207  # requirement_steps prints single words
if [ ${#steps[@]} -eq 0 ]; then steps=($(requirement_steps)); fi
missing="$(missing_packages "${steps[@]}")"
if [ -z "$missing" ]; then
  exit 0
fi

# shellcheck disable=SC2086  # one package a line
echo "setup: installing" $missing >&2
export DEBIAN_FRONTEND=noninteractive
sudo=()
if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
"${sudo[@]}" apt-get update -q
# shellcheck disable=SC2086
"${sudo[@]}" apt-get install -y -q --no-install-recommends $missing

# What the packages did not bring (a package without the file we expect of
# it) fails here, naming it, rather than in a later step.
rc=0
for step in "${steps[@]}"; do require_step "$step" || rc=1; done
exit "$rc"
