#!/usr/bin/env bash
# deps.sh - installs the Debian packages listed in the given files that are not installed yet.
# A list has one package a line, '#' comments; a package followed by the word `optional` comes
# from a repository apt may not know (deps/test-extra.txt): it is installed when apt can find it,
# else reported with a hint and skipped. A package counts as installed when dpkg says so or when
# an installed package provides it (NodeSource's nodejs provides npm). Asks dpkg-query only; runs
# `apt-get update` and `apt-get install` only when something is missing, so it is idempotent
# and quick.
set -euo pipefail
provided=" $(dpkg-query -W -f='${db:Status-Abbrev} ${Provides}\n' 2>/dev/null | sed -n 's/^ii *//p' \
  | tr ',' '\n' | sed 's/[(:].*//; s/^ *//; s/ *$//' | tr '\n' ' ') "
missing=()
optional=()
for f in "$@"; do
  [ -f "$f" ] || continue
  while read -r pkg flag _; do
    case "$pkg" in ''|'#'*) continue ;; esac
    if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
      continue
    fi
    case "$provided" in *" $pkg "*) continue ;; esac
    if [ "$flag" = optional ]; then optional+=("$pkg"); else missing+=("$pkg"); fi
  done < "$f"
done
[ ${#missing[@]} -eq 0 ] && [ ${#optional[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
for pkg in "${optional[@]}"; do
  if apt-cache show "$pkg" >/dev/null 2>&1; then
    missing+=("$pkg")
  else
    echo "deps: $pkg is not in the configured apt repositories; the tests that need it are" \
         "skipped (see the comment in deps/*.txt for its repository)" >&2
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}"
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
