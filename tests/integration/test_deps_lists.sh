#!/usr/bin/env bash
# test_deps_lists.sh - the deps lists (deps/build.txt, test.txt, test-extra.txt, lint.txt) name
# every command, library, header and Python module that `make run`, `make test` and `make lint`
# use (tests/integration/deps_check.py maps each to its Debian package). Then the check itself
# is checked: with npm, git or cppcheck taken out of a copy of the lists, it must fail and name
# what is missing; tools/deps.sh must count a package another one provides as installed.
source "$(dirname "$0")/lib.sh"
cd "$IT_ROOT" || exit 1
CHECK=tests/integration/deps_check.py
if ! command -v dpkg >/dev/null; then
  not_ok "dpkg is installed (the lists are Debian package names)"
  it_done
fi
tmp=$(it_tmpdir)

out=$(python3 "$CHECK" 2>&1)
rc=$?
echo "$out" | grep -E '^(ok|not ok) - '
[ "$rc" -eq 0 ] || IT_FAILS=$((IT_FAILS + 1))
check_contains "make run is checked" "$out" "ok - make run:"
check_contains "make test is checked" "$out" "ok - make test:"
check_contains "make lint is checked" "$out" "ok - make lint:"
list=$(python3 "$CHECK" --list 2>&1)
for thing in "command npm" "command cc" "library event" "header event2/event.h" \
  "command protoc-c" "command /usr/bin/chromium" "command cppcheck"; do
  check_contains "the check sees $thing" "$list" "$thing "
done

# without_pkg LIST PKG: a copy of deps/ with PKG removed from LIST; prints the copy's path.
without_pkg() {
  local d
  d=$(mktemp -d "$tmp/deps-XXXXXX")
  cp deps/*.txt "$d/"
  grep -v "^$2\$" "deps/$1" >"$d/$1"
  echo "$d"
}
d=$(without_pkg build.txt npm)
out=$(python3 "$CHECK" --deps "$d" 2>&1)
check_eq "without npm in build.txt the check fails" 1 "$?"
check_contains "... naming npm for make run" "$out" "not ok - make run: command npm"
d=$(without_pkg build.txt git)
out=$(python3 "$CHECK" --deps "$d" 2>&1)
check_contains "without git in build.txt the check names git" "$out" "not ok - make run: command git"
d=$(without_pkg lint.txt cppcheck)
out=$(python3 "$CHECK" --deps "$d" 2>&1)
check_contains "without cppcheck in lint.txt the check names it" "$out" \
  "not ok - make lint: command cppcheck"
d=$(without_pkg build.txt libevent-dev)
out=$(python3 "$CHECK" --deps "$d" 2>&1)
check_contains "without libevent-dev the check names its library" "$out" \
  "not ok - make run: library event "
check_contains "... and its headers" "$out" "header event2/"

# tools/deps.sh: nothing to install when every listed package is installed or provided (it
# must not reach apt-get: PATH holds an apt-get and a sudo that fail loudly).
mkdir -p "$tmp/bin"
printf '#!/bin/sh\necho "apt-get called: $*"; exit 3\n' >"$tmp/bin/apt-get"
cp "$tmp/bin/apt-get" "$tmp/bin/sudo"
chmod +x "$tmp/bin/apt-get" "$tmp/bin/sudo"
provider=$(dpkg-query -W -f='${db:Status-Abbrev} ${Provides}\n' 2>/dev/null | sed -n 's/^ii *//p' \
  | tr ',' '\n' | sed 's/[(:].*//; s/^ *//; s/ *$//' | grep -v '^$' | head -1)
if [ -n "$provider" ] && ! dpkg-query -W -f='${Status}' "$provider" 2>/dev/null | grep -q 'ok installed'; then
  printf '# a virtual package\n%s\n' "$provider" >"$tmp/virtual.txt"
  out=$(PATH="$tmp/bin:$PATH" bash tools/deps.sh "$tmp/virtual.txt" 2>&1)
  check_eq "deps.sh counts a provided package ($provider) as installed" "0 " "$? $out"
fi
printf 'no-such-package-ctsdb optional\n' >"$tmp/opt.txt"
out=$(PATH="$tmp/bin:$PATH" bash tools/deps.sh "$tmp/opt.txt" 2>&1)
check_contains "an optional package that is missing goes to apt (update first)" "$out" "apt-get called: update"
it_done
