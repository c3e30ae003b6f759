#!/usr/bin/env bash
# test_shell_scripts.sh - runs every tests/integration/shell/*.rb through `ctsdb shell` against a
# fresh data directory and compares what it prints with the .out file beside it.
#
# A script is split into phases by directive lines (Ruby comments, so the shell ignores them):
#   #@ now MS      starts a new phase: a new `ctsdb shell --data DIR --now MS` process on the
#                  same data directory (the first phase runs at --now 1700000000000)
# Each phase runs as a script file. The compared output is, per phase: stdout with the
# `Took N.NNNN seconds` lines deleted, then, if the phase failed, `[exit N]` and its stderr.
# Scripts and outputs are plain files, so a failing case can be rerun by hand:
#   bin/ctsdb shell --data /tmp/d --now 1700000000000 tests/integration/shell/x.rb
source "$(dirname "$0")/lib.sh"
# it_tmpdir runs in a subshell under $(...), where its cleanup registration is lost: make one
# directory here, registered in this shell, and use subdirectories of it.
IT_ROOT_TMP=$(mktemp -d "${TMPDIR:-/tmp}/ctsdb-it-XXXXXX")
IT_DIRS+=("$IT_ROOT_TMP")

SHELL_DIR=$IT_ROOT/tests/integration/shell
run_case() {
  local rb=$1 name data work phase=0 now=1700000000000 out
  name=$(basename "$rb" .rb)
  work=$IT_ROOT_TMP/$name
  mkdir -p "$work"
  data=$work/data
  out=$work/actual
  : >"$out"
  # split into phase files
  awk -v dir="$work" '
    BEGIN { n = 0; file = dir "/phase0.rb"; nows[0] = "" }
    /^#@ now [0-9]+[ \t]*$/ { n++; file = dir "/phase" n ".rb"; print $3 > (dir "/phase" n ".now"); next }
    { print > file }
  ' "$rb"
  while [ -f "$work/phase$phase.rb" ] || [ -f "$work/phase$phase.now" ]; do
    [ -f "$work/phase$phase.now" ] && now=$(cat "$work/phase$phase.now")
    touch "$work/phase$phase.rb"
    timeout 120 "$CTSDB" shell --data "$data" --now "$now" "$work/phase$phase.rb" \
      >"$work/stdout" 2>"$work/stderr"
    local rc=$?
    grep -v '^Took ' "$work/stdout" >>"$out"
    if [ "$rc" -ne 0 ]; then
      echo "[exit $rc]" >>"$out"
      cat "$work/stderr" >>"$out"
    fi
    phase=$((phase + 1))
  done
  if diff -u "$SHELL_DIR/$name.out" "$out" >"$work/diff"; then
    ok "shell script $name"
  else
    not_ok "shell script $name"
    head -80 "$work/diff" | sed 's/^/#   /'
  fi
}

for rb in "$SHELL_DIR"/*.rb; do
  [ -f "$rb" ] || continue
  if [ -n "${SHELL_CASE:-}" ] && [ "$(basename "$rb" .rb)" != "$SHELL_CASE" ]; then continue; fi
  run_case "$rb"
done
it_done
