#!/usr/bin/env bash
# test_front_door.sh - what a new user meets first: the data directory is 0700 whichever command
# creates it (and a wider one made by someone else is reported in the log, not changed); one
# build time reported by `ctsdb version`, /api/version and telnet `version`; `make` quiet by
# default (one "  CC  file" line per step, `make run`'s progress folded into one line, the full
# commands with V=1, compiler errors printed whole) and `make run` leaving ./data to the TSD.
source "$(dirname "$0")/lib.sh"
cd "$IT_ROOT" || exit 1
tmp=$(it_tmpdir)
export LC_ALL=C # the compiler's messages in plain ASCII quotes
umask 022 # what a user's shell usually has: a plain mkdir would give 0755

mode() { stat -c %a "$1" 2>/dev/null; }
# Every directory under $1 (itself included) that group or others may enter.
wide_dirs() { find "$1" -type d -perm /077 2>/dev/null; }

# ---- the data directory ------------------------------------------------------------------
tsd_start --data "$tmp/tsd-data"
printf 'put front.door 1356998400 1 host=a\nversion\n' | tsd_talk >/dev/null
tsd_stop
check_eq "the TSD creates its data directory 0700" 700 "$(mode "$tmp/tsd-data")"
check_eq "... and everything under it is 0700" "" "$(wide_dirs "$tmp/tsd-data")"
"$CTSDB" create-tables --data "$tmp/ct" >/dev/null 2>&1
check_eq "create-tables creates it 0700" 700 "$(mode "$tmp/ct")"
# mkmetric and uid work on an existing store only: they create no directory at all.
"$CTSDB" mkmetric --data "$tmp/mk" front.m >/dev/null 2>&1
check_eq "mkmetric creates no data directory" "" "$(mode "$tmp/mk")"
"$CTSDB" uid --data "$tmp/uid" assign metrics front.u >/dev/null 2>&1
check_eq "uid assign creates no data directory" "" "$(mode "$tmp/uid")"
printf 'front.i 1356998400 1 host=a\n' >"$tmp/points.txt"
"$CTSDB" import --data "$tmp/imp" "$tmp/points.txt" >/dev/null 2>&1
check_eq "import creates it 0700" 700 "$(mode "$tmp/imp")"
"$CTSDB" shell --data "$tmp/sh" -e "create 't1', 'f'" >/dev/null 2>&1
check_eq "shell creates it 0700" 700 "$(mode "$tmp/sh")"
check_eq "no tool left a wider directory" "" \
  "$(for d in ct imp sh; do wide_dirs "$tmp/$d"; done)"

# A directory the user made wider than 0700 is reported at start and left as it is.
mkdir -m 755 "$tmp/wide"
TSD_DATA=$tmp/wide tsd_start
tsd_stop
check_contains "a 0755 data directory is reported in the log" "$(cat "$TSD_LOG")" \
  "data directory $tmp/wide is mode 0755: other users may read it"
check_eq "... and not changed behind the user's back" 755 "$(mode "$tmp/wide")"
mkdir -m 700 "$tmp/narrow"
TSD_DATA=$tmp/narrow tsd_start
tsd_stop
case "$(cat "$TSD_LOG")" in
  *"other users may read it"*) not_ok "a 0700 data directory is not reported" ;;
  *) ok "a 0700 data directory is not reported" ;;
esac
unset TSD_DATA

# ---- one build time ----------------------------------------------------------------------
cli=$("$CTSDB" version | sed -n 's/^Built on \(.*\) by .*/\1/p')
tsd_start
api=$(curl -s --max-time 10 "http://127.0.0.1:$TSD_PORT/api/version")
tel=$(printf 'version\n' | tsd_talk | sed -n 's/^Built on \(.*\) by .*/\1/p')
tsd_stop
api_ts=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["timestamp"])' "$api" 2>/dev/null)
check "/api/version's timestamp is seconds since the epoch" grep -Eq '^[0-9]{9,}$' <<<"$api_ts"
check_eq "telnet version reports the build time ctsdb version does" "$cli" "$tel"
api_date=$(date -u -d "@${api_ts:-0}" '+%Y/%m/%d %H:%M:%S +0000')
check_eq "/api/version's timestamp is the same build time" "$cli" "$api_date"

# ---- make: quiet, V=1, errors whole ------------------------------------------------------
# A private build directory holding a copy of the release objects (not the tests), so only what
# a step changes is rebuilt.
B=$tmp/b
mkdir -p "$B"
if [ -d build/release/gen ]; then
  (cd build/release && tar cf - --exclude=./tests .) | (cd "$B" && tar xf -)
fi
out=$(make --no-print-directory BUILD="$B" -B "$B/storage/clock.o" 2>&1)
check_eq "make prints one short line per compiled file" "  CC      $B/storage/clock.o" "$out"
out=$(make --no-print-directory BUILD="$B" -B V=1 "$B/storage/clock.o" 2>&1)
check_contains "V=1 prints the full command" "$out" "-c storage/clock.c -o $B/storage/clock.o"
printf 'static int front_unused(void) { return 0; }\n#error front door broken\n' >"$tmp/bad.h"
out=$(make --no-print-directory BUILD="$B" -B EXTRA_CFLAGS="-include $tmp/bad.h" \
  "$B/storage/clock.o" 2>&1)
check_contains "a compiler error prints whole" "$out" "error: #error front door broken"
check_contains "... with the compiler's own location" "$out" "$tmp/bad.h:2"
printf 'static int front_unused(void) { return 0; }\n' >"$tmp/warn.h"
out=$(make --no-print-directory BUILD="$B" -B EXTRA_CFLAGS="-include $tmp/warn.h" \
  "$B/storage/clock.o" 2>&1)
check_contains "a warning (an error with -Werror) prints whole" "$out" \
  "'front_unused' defined but not used"
# The folded progress of `make run` (build-quiet): one line whatever the number of steps; the
# build's failure passes through, with the error whole.
out=$(make --no-print-directory BUILD="$B" build-quiet \
  QB_GOAL="-B $B/storage/clock.o $B/storage/crc32c.o" 2>&1)
rc=$?
check_eq "make run's build prints one progress line" "build: 2 steps done (V=1 shows the commands)" "$out"
check_eq "... and succeeds" 0 "$rc"
out=$(make --no-print-directory BUILD="$B" build-quiet EXTRA_CFLAGS="-include $tmp/bad.h" \
  QB_GOAL="-B $B/storage/clock.o" 2>&1)
rc=$?
check "a failed build fails make run" test "$rc" -ne 0
check_contains "... printing the error whole" "$out" "error: #error front door broken"
out=$(make --no-print-directory BUILD="$B" build-quiet V=1 QB_GOAL="-B $B/storage/clock.o" 2>&1)
check_contains "with V=1 make run's build prints the commands" "$out" "-c storage/clock.c"
# `make run` leaves the data directory to the TSD (which makes it 0700): no mkdir of its own.
out=$(make --no-print-directory -n BUILD="$B" run 2>/dev/null | grep -v '^make')
check_contains "make run starts the TSD on ./data" "$out" "exec bin/ctsdb tsd --data ./data"
case "$out" in
  *"mkdir -p data"*|*"mkdir data"*) not_ok "make run does not create ./data itself" ;;
  *) ok "make run does not create ./data itself" ;;
esac
it_done
