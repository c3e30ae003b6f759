# lib.sh - shared by the integration tests (tests/integration/test_*.sh); source it.
#
# Gives: CTSDB (the binary), it_tmpdir (a temporary directory removed at exit), tsd_start /
# tsd_stop (the real daemon on 127.0.0.1, port 0, a temporary data directory; started and
# stopped by PID whatever happens), tsd_stat (one /api/stats value), emu_available /
# emu_start / emu_stop / emu_kill (Google's Bigtable emulator on 127.0.0.1, by PID), the check helpers, which print "ok - ..." or
# "not ok - ..." lines that tests/integration/run.sh counts, and tsd_logs_check (sanitizer
# reports in the TSD logs).
#
# Contract with `ctsdb tsd`: it prints a line containing "listening on 127.0.0.1:PORT" to
# stderr once it accepts connections, and exits 0 on SIGTERM after a clean shutdown.

set -u
IT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CTSDB=${CTSDB:-$IT_ROOT/bin/ctsdb}
IT_FAILS=0
IT_PIDS=()
IT_DIRS=() # directories a script registers itself (IT_DIRS+=("$d")) are removed too
# Temporary directories are listed in a file, so that it_tmpdir works in $(...) subshells too.
IT_DIRS_FILE=$(mktemp "${TMPDIR:-/tmp}/ctsdb-it-dirs-XXXXXX")

# it_stop_pids: every process the script started (IT_PIDS) still running gets SIGTERM, then
# SIGKILL after 5 s.
it_stop_pids() {
  local pid
  for pid in "${IT_PIDS[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null
      wait "$pid" 2>/dev/null
    fi
  done
}

it_cleanup() {
  it_stop_pids
  local d
  while IFS= read -r d; do [ -n "$d" ] && rm -rf "$d"; done <"$IT_DIRS_FILE"
  rm -f "$IT_DIRS_FILE"
  for d in "${IT_DIRS[@]}"; do rm -rf "$d"; done
}
trap it_cleanup EXIT

it_tmpdir() {
  local d
  d=$(mktemp -d "${TMPDIR:-/tmp}/ctsdb-it-XXXXXX")
  echo "$d" >>"$IT_DIRS_FILE"
  echo "$d"
}

ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; IT_FAILS=$((IT_FAILS + 1)); }

# check DESC CMD...: passes when CMD exits 0.
check() {
  local desc=$1; shift
  if "$@" >/dev/null 2>&1; then ok "$desc"; else not_ok "$desc (command failed: $*)"; fi
}

# check_eq DESC EXPECTED ACTUAL
check_eq() {
  if [ "$2" == "$3" ]; then ok "$1"; else not_ok "$1: expected [$2] got [$3]"; fi
}

# check_contains DESC HAYSTACK NEEDLE
check_contains() {
  case "$2" in *"$3"*) ok "$1" ;; *) not_ok "$1: [$3] not in [$2]" ;; esac
}

# tsd_start [ARGS...]: starts the daemon with a fresh data dir (or TSD_DATA if set); sets
# TSD_PID, TSD_PORT, TSD_LOG, TSD_DATA. Fails the script if it is not ready in 20 s.
tsd_start() {
  local dir
  dir=$(it_tmpdir)
  TSD_DATA=${TSD_DATA:-$dir/data}
  TSD_LOG=$dir/tsd.log
  : >"$TSD_LOG"
  "$CTSDB" tsd --bind 127.0.0.1 --port 0 --data "$TSD_DATA" "$@" 2>"$TSD_LOG" &
  TSD_PID=$!
  IT_PIDS+=("$TSD_PID")
  TSD_PORT=""
  for _ in $(seq 1 200); do
    TSD_PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$TSD_LOG" | head -1)
    [ -n "$TSD_PORT" ] && return 0
    kill -0 "$TSD_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "tsd did not start; log:" >&2
  cat "$TSD_LOG" >&2
  not_ok "tsd starts"
  exit 1
}

# tsd_talk [PORT]: sends stdin on one telnet connection to PORT (default $TSD_PORT), half-closes,
# prints everything the TSD answers until it closes.
tsd_talk() {
  python3 -c '
import socket, sys
data = sys.stdin.buffer.read()
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(data)
s.shutdown(socket.SHUT_WR)
out = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    out += b
sys.stdout.write(out.decode("utf-8", "replace"))
' "${1:-$TSD_PORT}"
}

# tsd_stat PORT NAME: the value of one /api/stats line, NAME "metric" or "metric k=v ..." (its
# tags but host, sorted), empty when there is none.
tsd_stat() {
  curl -s "http://127.0.0.1:$1/api/stats" | python3 -c 'import json, sys
want = sys.argv[1]
for s in json.load(sys.stdin):
    k = s["metric"] + "".join(" %s=%s" % kv for kv in sorted(s.get("tags", {}).items()) if kv[0] != "host")
    if k == want:
        print(s["value"]); break' "$2"
}

# tsd_stat_wait PORT NAME WANT: tsd_stat until it prints WANT, polled every 0.1 s for at most
# 10 s (work the TSD finishes on its own threads); prints the last value read.
tsd_stat_wait() {
  local v=""
  for _ in $(seq 1 100); do
    v=$(tsd_stat "$1" "$2")
    [ "$v" = "$3" ] && break
    sleep 0.1
  done
  echo "$v"
}

# tsd_stop: SIGTERM, wait up to 20 s, then SIGKILL; returns the daemon's exit status.
tsd_stop() {
  local pid=$TSD_PID
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fi
  wait "$pid" 2>/dev/null
}

# audit_stores RUN SALTED_NAME APPEND_NAME: the store-layout variants of an audit (OpenTSDB's
# Test*Salted / *Append classes). Runs the script's function RUN three times, each against a
# fresh TSD of one layout: the default salted one (1 byte, 8 buckets), unsalted (salt width 0),
# and OpenTSDB's salted test layout (1 byte, 2 buckets) with tsd.storage.enable_appends on. RUN
# sees TSD_PORT, AUDIT_LABEL (the layout's prefix for check names: "", "[unsalted] ",
# "[salted 2 buckets, appends] ") and AUDIT_RECORD exported (audit_lib.py's req() appends every
# answer there); RUN returning non-zero counts one failure. Then two checks: the unsalted answers
# (named SALTED_NAME), and the 2-bucket ones (APPEND_NAME), byte-identical to the default's.
# The layouts are audit_lib.py's CONFIGS (its each_config() is the same loop for audits
# written in Python).
audit_stores() {
  local run=$1 rec k label opts
  local -a AUDIT_LABELS=() AUDIT_STORES=()
  while IFS='|' read -r label opts; do
    AUDIT_LABELS+=("$label")
    AUDIT_STORES+=("$opts")
  done < <(python3 "$IT_ROOT/tests/integration/audit_lib.py" layouts)
  rec=$(it_tmpdir)
  for k in 0 1 2; do
    unset TSD_DATA # a fresh store each time (tsd_start keeps a TSD_DATA it finds)
    # shellcheck disable=SC2086 # the options are words
    tsd_start ${AUDIT_STORES[k]}
    AUDIT_LABEL=${AUDIT_LABELS[k]} AUDIT_RECORD=$rec/answers.$k "$run" || IT_FAILS=$((IT_FAILS + 1))
    tsd_stop
  done
  python3 "$IT_ROOT/tests/integration/audit_lib.py" same \
    "$2: unsalted answers byte-identical to the salted default" \
    "$rec/answers.0" "$rec/answers.1" || IT_FAILS=$((IT_FAILS + 1))
  python3 "$IT_ROOT/tests/integration/audit_lib.py" same \
    "$3 (2 buckets, appends on): answers byte-identical to the default" \
    "$rec/answers.0" "$rec/answers.2" || IT_FAILS=$((IT_FAILS + 1))
}

# ---- Google's Bigtable emulator (the test_bigtable_*.sh scripts) ----------------------------
# The emulator (cbtemulator, package google-cloud-cli-bigtable-emulator, not on PATH) binds
# 127.0.0.1; it is started and stopped by PID, never through the gcloud wrapper (which leaves an
# orphan when killed).
EMULATOR=${EMULATOR:-/usr/lib/google-cloud-sdk/platform/bigtable-emulator/cbtemulator}
EMU_PID=""
EMU_ADDR=""
EMU_LOG=""

# emu_available WHAT: 0 when the emulator and a BIGTABLE=1 build are there; otherwise prints
# "ok - SKIP WHAT: ..." and returns 1 (with CI=true a missing emulator is a failure, not_ok).
# Use: emu_available "bigtable x tests" || it_done
emu_available() {
  if [ ! -x "$EMULATOR" ]; then
    if [ "${CI:-}" = true ]; then
      not_ok "bigtable emulator present at $EMULATOR"
    else
      echo "ok - SKIP $1: emulator not found at $EMULATOR"
    fi
    return 1
  fi
  if ! "$CTSDB" version | grep -q "bigtable backend"; then
    echo "ok - SKIP $1: this build has no bigtable backend (make BIGTABLE=1)"
    return 1
  fi
  return 0
}

# emu_start [PORT]: starts the emulator on 127.0.0.1:PORT (default 0: a free port it prints);
# sets EMU_PID, EMU_ADDR (127.0.0.1:PORT), EMU_LOG and exports BIGTABLE_EMULATOR_HOST. Returns 1
# (not_ok with its log) when it does not say "running on" within 20 s or exits first (a fixed
# PORT still taken).
emu_start() {
  EMU_LOG=$(it_tmpdir)/emu.log
  "$EMULATOR" -host 127.0.0.1 -port "${1:-0}" >"$EMU_LOG" 2>&1 &
  EMU_PID=$!
  IT_PIDS+=("$EMU_PID")
  EMU_ADDR=""
  for _ in $(seq 1 200); do
    EMU_ADDR=$(sed -n 's/.*running on \(127\.0\.0\.1:[0-9][0-9]*\).*/\1/p' "$EMU_LOG" | head -1)
    [ -n "$EMU_ADDR" ] && break
    kill -0 "$EMU_PID" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$EMU_ADDR" ]; then
    not_ok "bigtable emulator starts on 127.0.0.1:${1:-0}"
    cat "$EMU_LOG"
    return 1
  fi
  export BIGTABLE_EMULATOR_HOST=$EMU_ADDR
}

# emu_stop: ends the emulator (SIGCONT in case it was stopped, SIGINT, SIGKILL after 5 s) and
# reaps it.
emu_stop() {
  [ -n "$EMU_PID" ] || return 0
  kill -CONT "$EMU_PID" 2>/dev/null
  kill -INT "$EMU_PID" 2>/dev/null
  for _ in $(seq 1 50); do kill -0 "$EMU_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$EMU_PID" 2>/dev/null
  wait "$EMU_PID" 2>/dev/null
  EMU_PID=""
}

# emu_kill: SIGKILL (a crash: everything it held is lost) and reaps it, so that its port is free
# when this returns.
emu_kill() {
  [ -n "$EMU_PID" ] || return 0
  kill -KILL "$EMU_PID" 2>/dev/null
  wait "$EMU_PID" 2>/dev/null
  EMU_PID=""
}

# tsd_logs_check: fails the script (one not_ok with the first lines found) when the log of any
# TSD it started (tsd_start's tsd.log in its temporary directories) holds a sanitizer report:
# UBSan's "runtime error:", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer" (written at exit,
# so call this after tsd_stop) or a ThreadSanitizer warning. A report that does not abort the
# daemon (or aborts it in a way the checks do not notice) is otherwise never seen.
IT_LOGS_CHECKED=0
tsd_logs_check() {
  IT_LOGS_CHECKED=1
  local d n=0 hits=""
  while IFS= read -r d; do
    [ -f "$d/tsd.log" ] || continue
    n=$((n + 1))
    hits+=$(grep -E -m 3 'runtime error:|ERROR: (Address|Leak)Sanitizer|WARNING: ThreadSanitizer' \
      "$d/tsd.log" | sed "s|^|$d/tsd.log: |" | tr "\n" " ")
  done <"$IT_DIRS_FILE"
  if [ -n "$hits" ]; then
    not_ok "no sanitizer report in the TSD logs: $hits"
  else
    ok "no sanitizer report in the $n TSD log(s)"
  fi
}

# it_done: ends a test script with the right status. Every script's TSDs are checked for
# sanitizer reports (tsd_logs_check) unless the script did it itself: the processes it started
# are stopped first (it_stop_pids), so a leak report written at exit is read.
it_done() {
  if [ "$IT_LOGS_CHECKED" = 0 ] && [ -s "$IT_DIRS_FILE" ]; then
    local d found=0
    while IFS= read -r d; do [ -f "$d/tsd.log" ] && found=1; done <"$IT_DIRS_FILE"
    if [ "$found" = 1 ]; then
      it_stop_pids
      tsd_logs_check
    fi
  fi
  [ "$IT_FAILS" -eq 0 ]
  exit $?
}
