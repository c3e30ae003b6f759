#!/usr/bin/env bash
# test_tsd_safety.sh - data safety of the embedded store through the real binary (issues #21,
# #26): the tools refuse a data directory a running TSD holds with the lock error (never read
# it as empty); a stopped store whose largest block file was removed, whose CATALOG was
# removed, or whose block files were swapped is refused by the TSD naming the file, with
# nothing deleted; plain fsck reports each with a non-zero exit; fsck --fix sets the damage
# aside (quarantine/, nothing deleted) and the TSD then starts with every other cell.
source "$(dirname "$0")/lib.sh"

T0=1356998400
tsd_start
data=$TSD_DATA
lines=""
for h in $(seq 1 20); do
  for i in $(seq 0 9); do lines+="put safe.m $((T0 + i * 10)) $i host=h$h"$'\n'; done
done
printf '%s' "$lines" | tsd_talk >/dev/null

# 1. every tool refuses the held directory with the lock error (issue #26)
for cmd in "scan $T0 safe.m" "query $T0 sum safe.m" "fsck" "uid grep metrics safe"; do
  sub=${cmd%% *}
  args=${cmd#"$sub"}
  # shellcheck disable=SC2086
  out=$("$CTSDB" $sub --data "$data" $args 2>&1)
  rc=$?
  check "ctsdb $sub on a held directory exits non-zero" test "$rc" -ne 0
  check_contains "ctsdb $sub on a held directory names the lock" "$out" "in use by another process"
done
before=$(cd "$data" && ls sst wal | sort)
out=$("$CTSDB" fsck --fix --data "$data" 2>&1)
check "fsck --fix on a held directory exits non-zero" test $? -ne 0
check_contains "fsck --fix on a held directory names the lock" "$out" "in use by another process"
check_eq "fsck --fix on a held directory moves nothing" "$before" "$(cd "$data" && ls sst wal | sort)"
tsd_stop
n=$("$CTSDB" query --data "$data" "$T0" sum safe.m | wc -l)
check_eq "after the TSD stopped the tools read every point" 10 "$n"

listing() { (cd "$1" && find . -type f ! -name LOCK -exec cksum {} + | sort); }

# tsd_try DIR: starts a TSD on DIR; 0 if it starts (it is stopped again), 1 if it exits;
# its stderr is in $WORK/try.log.
tsd_try() {
  "$CTSDB" tsd --bind 127.0.0.1 --port 0 --data "$1" 2>"$WORK/try.log" &
  local pid=$!
  IT_PIDS+=("$pid")
  for _ in $(seq 1 200); do
    if grep -q "listening on 127.0.0.1:" "$WORK/try.log"; then
      kill -TERM "$pid"; wait "$pid" 2>/dev/null; return 0
    fi
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 1; }
    sleep 0.1
  done
  kill -KILL "$pid"; wait "$pid" 2>/dev/null; return 0
}

WORK=$(it_tmpdir)
fresh() { rm -rf "$WORK/d"; cp -a "$data" "$WORK/d"; rm -f "$WORK/d/LOCK"; }

# 2. the exact reproducer: the largest block file of a stopped store removed
fresh
largest=$(ls -S "$WORK/d/sst" | head -1)
rm "$WORK/d/sst/$largest"
before=$(listing "$WORK/d")
if tsd_try "$WORK/d"; then not_ok "the TSD refuses a store missing $largest"; else ok "the TSD refuses a store missing a block file"; fi
check_contains "the refusal names the missing file" "$(cat "$WORK/try.log")" "$largest"
check_eq "nothing was deleted or written" "$before" "$(listing "$WORK/d")"
out=$("$CTSDB" fsck --data "$WORK/d" 2>&1); rc=$?
check "plain fsck exits non-zero" test "$rc" -ne 0
check_contains "plain fsck names the missing file" "$out" "$largest"
check_eq "plain fsck changes nothing" "$before" "$(listing "$WORK/d")"
"$CTSDB" fsck --fix --data "$WORK/d" >"$WORK/fix.log" 2>&1
if tsd_try "$WORK/d"; then ok "after fsck --fix the TSD starts"; else not_ok "after fsck --fix the TSD starts: $(tail -3 "$WORK/try.log")"; fi

# 3. CATALOG missing while block files and log exist
fresh
rm "$WORK/d/CATALOG"
before=$(listing "$WORK/d")
if tsd_try "$WORK/d"; then not_ok "the TSD refuses a store without its CATALOG"; else ok "the TSD refuses a store without its CATALOG"; fi
check_contains "the refusal names the catalog" "$(cat "$WORK/try.log")" "CATALOG is missing"
check_eq "nothing was deleted or written (no new catalog)" "$before" "$(listing "$WORK/d")"
out=$("$CTSDB" fsck --data "$WORK/d" 2>&1); rc=$?
check "fsck without a catalog exits non-zero" test "$rc" -ne 0
check_contains "fsck names the missing catalog" "$out" "CATALOG is missing"

# 4. two block files swapped
fresh
set -- $(ls "$WORK/d/sst" | head -2)
if [ $# -eq 2 ]; then
  mv "$WORK/d/sst/$1" "$WORK/d/sst/x" && mv "$WORK/d/sst/$2" "$WORK/d/sst/$1" && mv "$WORK/d/sst/x" "$WORK/d/sst/$2"
  before=$(listing "$WORK/d")
  if tsd_try "$WORK/d"; then not_ok "the TSD refuses swapped block files"; else ok "the TSD refuses swapped block files"; fi
  check_contains "the refusal says which file is not the one listed" "$(cat "$WORK/try.log")" "is not the file the catalog lists"
  check_eq "nothing was deleted or written" "$before" "$(listing "$WORK/d")"
  out=$("$CTSDB" fsck --data "$WORK/d" 2>&1); rc=$?
  check "fsck on swapped files exits non-zero" test "$rc" -ne 0
  "$CTSDB" fsck --fix --data "$WORK/d" >"$WORK/fix.log" 2>&1
  q=$(ls "$WORK/d/quarantine" 2>/dev/null | wc -l)
  check "fsck --fix moved the swapped files to quarantine/" test "$q" -ge 2
  if tsd_try "$WORK/d"; then ok "after fsck --fix the TSD starts"; else not_ok "after fsck --fix the TSD starts: $(tail -3 "$WORK/try.log")"; fi
else
  not_ok "the store has two block files to swap"
fi

it_done
