#!/usr/bin/env bash
# deps.sh - installs the Debian packages listed in the given files (one per line, '#' comments)
# that are not installed yet. Asks dpkg-query per package; runs `apt-get update` and
# `apt-get install` only when something is missing, so it is idempotent and quick.
set -euo pipefail
missing=()
for f in "$@"; do
  [ -f "$f" ] || continue
  while read -r pkg _; do
    case "$pkg" in ''|'#'*) continue ;; esac
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$pkg")
    fi
  done < "$f"
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
