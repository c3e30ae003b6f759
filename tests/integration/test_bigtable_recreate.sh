#!/usr/bin/env bash
# test_bigtable_recreate.sh - a TSD on Bigtable (Google's emulator) whose tables are recreated or
# lost under it, as an operator would do it:
# (1) the tables are dropped and recreated with `ctsdb create-tables` (on Bigtable) while the TSD
#     runs; new names are then put through the TSD and through a second writer (`ctsdb import`
#     semantics by a second TSD) that reuses the old ids: the TSD's uid generation check drops its
#     caches, and every point answers under its own metric and tags (no point under a wrong name);
# (2) a missing data table answers a stated 5xx with "table ... missing" text (never "No such
#     name") on /api/query, and a put into it fails naming the missing table;
# (3) the emulator is stopped: a query answers 503 with OpenTSDB's error shape.
#
# The emulator runs on 127.0.0.1 and is stopped by PID; TSDs are the real daemon on 127.0.0.1
# port 0 (lib.sh). Without the emulator (or a BIGTABLE=1 build) the script prints a SKIP line;
# with CI=true a missing emulator fails.
source "$(dirname "$0")/lib.sh"

emu_available "bigtable recreate tests" || it_done

tmp=$(it_tmpdir)
IT_DIRS+=("$tmp")
emu_start || it_done

unset TSD_DATA
# a 50-character data table id (Bigtable's longest): the missing table's error text in (2) is
# then longer than the 150 characters a batch's error used to keep
DATA=ctsdb-recreate-data-table-with-the-longest-name-01
BT=(--tsd.storage.backend=bigtable --tsd.storage.hbase.data_table=$DATA
  --tsd.storage.bigtable.deadline_ms=3000 --tsd.storage.ctsdb.uid_generation_check_ms=500)
bt_shell() { "$CTSDB" shell --backend bigtable "$@" 2>&1 | grep -v '^Took '; }
recreate() {
  bt_shell -e "disable '$DATA'" -e "drop '$DATA'" -e "disable 'tsdb-uid'" -e "drop 'tsdb-uid'" \
    -e "disable 'tsdb-meta'" -e "drop 'tsdb-meta'" >"$tmp/drop.out"
  "$CTSDB" create-tables "${BT[@]}" >"$tmp/create.out" 2>&1
}

tsd_start "${BT[@]}"
A_PORT=$TSD_PORT A_PID=$TSD_PID A_LOG=$TSD_LOG
now=$(date +%s)
t0=$((now - 600))
put() { curl -s -m 20 -X POST "http://127.0.0.1:$1/api/put?summary" -d "$2"; }
pt() { echo "{\"metric\":\"$1\",\"timestamp\":$2,\"value\":$3,\"tags\":{\"host\":\"$4\"}}"; }
out=$(put "$A_PORT" "[$(pt old.a $t0 1 ha),$(pt old.b $t0 2 hb)]")
check_eq "puts before the recreation" '{"failed":0,"success":2}' "$out"

# (1) the tables recreated under the running TSD; another TSD assigns new names first, reusing
# ids 1 and 2 (old.a's and old.b's in the TSD's cache)
recreate
check "create-tables on bigtable recreates the tables" grep -q "tsdb-uid" "$tmp/create.out"
tsd_start "${BT[@]}"
B_PORT=$TSD_PORT B_PID=$TSD_PID
out=$(put "$B_PORT" "[$(pt new.x $((t0 + 60)) 10 hx),$(pt new.y $((t0 + 60)) 20 hy)]")
check_eq "the second TSD assigns new names in the new tables" '{"failed":0,"success":2}' "$out"
sleep 1 # more than the check period
out=$(put "$A_PORT" "[$(pt old.a $((t0 + 120)) 3 ha),$(pt new.z $((t0 + 120)) 30 hz)]")
check_eq "the first TSD writes after the recreation" '{"failed":0,"success":2}' "$out"
check_contains "the first TSD logs the generation change" "$(cat "$A_LOG")" \
  "the uid table's generation changed"
q() { # q PORT METRIC -> "tags:dps" of the answer
  curl -s -m 20 "http://127.0.0.1:$1/api/query?start=$((t0 - 60))&m=sum:$2%7Bhost=*%7D" |
    python3 -c 'import json,sys
a=json.load(sys.stdin)
print(";".join("%s=%s" % (s["tags"].get("host"), ",".join("%g" % v for _, v in sorted(s["dps"].items()))) for s in a) if isinstance(a, list) else a)'
}
check_eq "new.x answers only its own point" "hx=10" "$(q "$B_PORT" new.x)"
check_eq "new.y answers only its own point" "hy=20" "$(q "$B_PORT" new.y)"
check_eq "old.a (recreated) answers only its new point" "ha=3" "$(q "$B_PORT" old.a)"
check_eq "new.z answers only its own point" "hz=30" "$(q "$B_PORT" new.z)"
check_eq "the first TSD answers the same for new.x" "hx=10" "$(q "$A_PORT" new.x)"
check_eq "the first TSD answers the same for old.a" "ha=3" "$(q "$A_PORT" old.a)"
TSD_PID=$B_PID tsd_stop

# (2) a missing data table: a stated 5xx naming the missing table, never "No such name"; a put's
# error text arrives whole
bt_shell -e "disable '$DATA'" -e "drop '$DATA'" >"$tmp/drop2.out"
code=$(curl -s -m 20 -o "$tmp/q.json" -w '%{http_code}' \
  "http://127.0.0.1:$A_PORT/api/query?start=$((t0 - 60))&m=sum:old.a")
check_eq "a query of a missing data table answers 500" "500" "$code"
check_contains "its error names the missing table" "$(cat "$tmp/q.json")" "table missing"
check "its error is not 'No such name'" bash -c "! grep -q 'No such name' '$tmp/q.json'"
out=$(curl -s -m 20 -X POST "http://127.0.0.1:$A_PORT/api/put?details" -d "[$(pt old.a $((t0 + 180)) 4 ha)]")
check_contains "a put into a missing data table fails" "$out" '"failed":1,"success":0'
# the whole error text, to its end: the missing table's full name and "not found"
err=$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["errors"][0]["error"])')
case "$err" in
*"table missing"*"projects/ctsdb/instances/ctsdb/tables/$DATA"*'" not found') ok "the put's error text arrives whole (${#err} characters)" ;;
*) not_ok "the put's error text arrives whole: [$err]" ;;
esac
check_contains "the put's failure is logged as a missing table" "$(cat "$A_LOG")" "table missing"

# (3) the emulator is gone
emu_stop
code=$(curl -s -m 20 -o "$tmp/q3.json" -w '%{http_code}' \
  "http://127.0.0.1:$A_PORT/api/query?start=$((t0 - 60))&m=sum:old.a")
check_eq "a query with the backend down answers 503" "503" "$code"
check_contains "the 503 has OpenTSDB's error shape" "$(cat "$tmp/q3.json")" '"error":{"code":503'
TSD_PID=$A_PID tsd_stop
emu_stop
it_done
