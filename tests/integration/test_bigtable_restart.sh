#!/usr/bin/env bash
# test_bigtable_restart.sh - Google's Bigtable emulator crashes (SIGKILL) under a running TSD and
# comes back empty on the same port; the tables are recreated with `ctsdb create-tables` on the
# bigtable backend, as an operator would do it. Checks:
# - while it is down, every put is answered within about one deadline and fails (never
#   acknowledged);
# - back but without tables, a query answers 500 "table missing" (never 400 "No such name") and
#   a put fails;
# - after create-tables ("3 tables created": the restarted emulator was empty and create-tables
#   talked to it), writes resume within RESUME_BOUND_MS of create-tables' exit (the channel's
#   reconnect backoff is capped at 0.5 s, storage/bigtable/bt_rpc.c; gRPC's default backoff left
#   writes failing for 7-16 s more);
# - the uid caches are dropped (the generation cell, schema/uid.c (8)): a series cached before
#   the crash is written first (its former ids now belong to new names) and new names are
#   assigned after it; every answer holds exactly its own points (no point under a wrong name);
# - every point acknowledged after the restart is queryable.
#
# The emulator runs on 127.0.0.1 and is stopped by PID (lib.sh emu_*); the TSD is the real daemon
# on 127.0.0.1 port 0. Without the emulator (or a BIGTABLE=1 build) the script prints a SKIP
# line; with CI=true a missing emulator fails.
source "$(dirname "$0")/lib.sh"

emu_available "bigtable restart tests" || it_done
emu_start || it_done
EMU_PORT=${EMU_ADDR##*:}
tmp=$(it_tmpdir)

# writes must resume within this many ms of create-tables' exit: the reconnect backoff is at
# most 0.6 s (0.5 s + 20% jitter); the rest is room for a put (a UID lookup or assignment and a
# write) on a loaded 2-core machine
RESUME_BOUND_MS=2500
DEADLINE_MS=2000
unset TSD_DATA
BT=(--tsd.storage.backend=bigtable --tsd.storage.bigtable.deadline_ms=$DEADLINE_MS
  --tsd.storage.ctsdb.uid_generation_check_ms=500)
"$CTSDB" create-tables "${BT[@]}" >"$tmp/create0.out" 2>&1
check_contains "create-tables on the fresh emulator" "$(cat "$tmp/create0.out")" "3 tables created"

tsd_start "${BT[@]}"
now=$(date +%s)
t0=$((now - 3600))
ms_now() { echo $(($(date +%s%N) / 1000000)); }
put() { curl -s -m 20 -X POST "http://127.0.0.1:$TSD_PORT/api/put?summary" -d "$1"; }
pt() { echo "{\"metric\":\"$1\",\"timestamp\":$2,\"value\":$3,\"tags\":{\"host\":\"$4\"}}"; }
q() { # q METRIC -> "host=v1,v2;host=..." of the answer, or the error document
  curl -s -m 20 "http://127.0.0.1:$TSD_PORT/api/query?start=$((t0 - 60))&m=sum:$1%7Bhost=*%7D" |
    python3 -c 'import json,sys
a=json.load(sys.stdin)
print(";".join("%s=%s" % (s["tags"].get("host"), ",".join("%g" % v for _, v in sorted(s["dps"].items(), key=lambda kv: int(kv[0])))) for s in sorted(a, key=lambda s: s["tags"].get("host", ""))) if isinstance(a, list) else json.dumps(a))'
}

# before the crash: old.a, old.b, old.c take metric ids 1-3, host=ha..hc tag value ids 1-3
out=$(put "[$(pt old.a $t0 1 ha),$(pt old.b $t0 2 hb),$(pt old.c $t0 3 hc)]")
check_eq "puts before the crash" '{"failed":0,"success":3}' "$out"
check_eq "old.a answers before the crash" "ha=1" "$(q old.a)"

# the crash, and 10 s without a backend (enough for gRPC's default backoff to grow past 6 s)
emu_kill
down_start=$(ms_now)
n=0 bad=0 slow=0
while [ $(($(ms_now) - down_start)) -lt 10000 ] && [ $n -lt 50 ]; do
  s=$(ms_now)
  out=$(put "[$(pt old.a $((t0 + 60 + n)) 9 ha)]")
  [ "$out" = '{"failed":1,"success":0}' ] || bad=$((bad + 1))
  [ $(($(ms_now) - s)) -le $((DEADLINE_MS + 2500)) ] || slow=$((slow + 1))
  n=$((n + 1))
  sleep 0.2
done
check_eq "every put while the backend is down fails ($n puts)" 0 "$bad"
check_eq "every put while the backend is down is answered within the deadline + 2.5 s" 0 "$slow"

# back on the same port, empty
emu_start "$EMU_PORT" || it_done
check_eq "the emulator is back on the same address" "127.0.0.1:$EMU_PORT" "$EMU_ADDR"
# without tables: the TSD's table handles were loaded more than 10 s ago, so the next call
# reloads them (GetTable NOT_FOUND): a failure of the store, never an absent name. The put comes
# first: its write group's generation check finds the uid table missing and drops the caches.
out=$(curl -s -m 20 -X POST "http://127.0.0.1:$TSD_PORT/api/put?details" \
  -d "[$(pt old.a $((t0 + 120)) 9 ha)]")
check_contains "a put before the tables return fails" "$out" '"failed":1,"success":0'
check_contains "its error says the table is missing" "$out" "table missing"
code=$(curl -s -m 20 -o "$tmp/q0.json" -w '%{http_code}' \
  "http://127.0.0.1:$TSD_PORT/api/query?start=$((t0 - 60))&m=sum:old.a")
check_eq "a query before the tables return answers 500" 500 "$code"
check_contains "its error says the table is missing" "$(cat "$tmp/q0.json")" "table missing"
check_contains "the TSD logs that the uid caches were dropped" "$(cat "$TSD_LOG")" \
  "the uid table's generation changed"

"$CTSDB" create-tables "${BT[@]}" >"$tmp/create1.out" 2>&1
tables_ms=$(ms_now)
check_contains "create-tables recreates all three tables on the restarted emulator" \
  "$(cat "$tmp/create1.out")" "3 tables created, 0 already existed"

# the first writes after the tables' return: old.a (cached before the crash: ids 1/1/1, which
# the new names below take) until one is acknowledged; polled every 100 ms, at most 30 s
acked_a="" resumed=""
for i in $(seq 1 300); do
  out=$(put "[$(pt old.a $((t0 + 180 + i)) $((100 + i)) ha)]")
  if [ "$out" = '{"failed":0,"success":1}' ]; then
    resumed=$(($(ms_now) - tables_ms))
    acked_a=$((100 + i))
    break
  fi
  sleep 0.1
done
if [ -n "$resumed" ] && [ "$resumed" -le $RESUME_BOUND_MS ]; then
  ok "writes resume ${resumed} ms after create-tables (bound ${RESUME_BOUND_MS} ms)"
else
  not_ok "writes resume within ${RESUME_BOUND_MS} ms of create-tables (took ${resumed:-over 30 s})"
fi
# new names after the restart take the ids the TSD cached for old.b, old.c (and hb, hc)
out=$(put "[$(pt new.x $((t0 + 240)) 10 hx),$(pt new.y $((t0 + 240)) 20 hy),$(pt old.b $((t0 + 240)) 30 hb)]")
check_eq "new names put after the restart" '{"failed":0,"success":3}' "$out"
# and a run of acknowledged points: each one must be read back
acked_x="10" failed=0
for i in $(seq 1 20); do
  out=$(put "[$(pt new.x $((t0 + 300 + i)) $((1000 + i)) hx),$(pt old.a $((t0 + 300 + i)) $((2000 + i)) ha)]")
  if [ "$out" = '{"failed":0,"success":2}' ]; then
    acked_x="$acked_x,$((1000 + i))"
    acked_a="$acked_a,$((2000 + i))"
  else
    failed=$((failed + 1))
  fi
done
check_eq "puts after the restart succeed" 0 "$failed"
check_eq "old.a answers exactly its points acknowledged after the restart" "ha=$acked_a" "$(q old.a)"
check_eq "new.x answers exactly its own points" "hx=$acked_x" "$(q new.x)"
check_eq "new.y answers exactly its own point" "hy=20" "$(q new.y)"
check_eq "old.b answers exactly its point written after the restart" "hb=30" "$(q old.b)"
out=$(q old.c)
check_contains "old.c (never written after the restart) is an unknown name" "$out" "No such name"

tsd_stop
check_eq "the TSD exits 0 after the restart" 0 "$?"
emu_stop
it_done
