#!/usr/bin/env bash
# test_rollup_tsd.sh - rollups through the real daemon: raw points over 60 closed hours, the
# TSD's job rolls them up (tsd.rollups.ctsdb.period=1, grace 0), and for every function rollups
# serve (sum, count, min, max, avg) with downsample 1h and 1d, with and without a group-by, the
# answer read only from rollups (ROLLUP_NOFALLBACK), the default (rollups then raw) and raw
# (ROLLUP_RAW) are equal; /api/rollup stores points that queries read back, with /api/put's
# answers and errors; a point written late into a rolled-up hour reaches its rollups; a restart
# neither loses the job's progress nor counts anything twice.
source "$(dirname "$0")/lib.sh"

dir=$(it_tmpdir)
export TSD_DATA=$dir/data
RK=(--tsd.rollups.enable=true --tsd.rollups.ctsdb.period=1 --tsd.rollups.ctsdb.grace=0)

post() { curl -sg -m 60 -w ' %{http_code}' -X POST -H 'Content-Type: application/json' \
  --data-binary "$2" "http://127.0.0.1:$TSD_PORT$1" | awk '{s=$NF; $NF=""; sub(/ $/,""); print s" "$0}'; }

now=$(date +%s)
D0=$(( now - now % 86400 - 3 * 86400 )) # a UTC day three days ago
# ---- raw points, the job off ----------------------------------------------------------------
tsd_start "${RK[@]}" --tsd.rollups.ctsdb.compute=false
python3 - "$D0" >"$dir/body.json" <<'EOF'
import json, sys
d0 = int(sys.argv[1]); pts = []
for s, (h, dc) in enumerate([("a", "x"), ("b", "x"), ("c", "y"), ("d", "y")]):
    for t in range(d0, d0 + 60 * 3600, 300):
        if s == 3 and (t // 3600) % 7 == 0:
            continue  # gaps in one series
        pts.append({"metric": "r.m", "timestamp": t, "value": (s + 1) * 100 + (t // 300 * 31 + s) % 89 - 40,
                    "tags": {"host": h, "dc": dc}})
print(json.dumps(pts))
EOF
check_eq "raw points load" "204 " "$(post /api/put "@$dir/body.json")"

q() { # q FN DS USAGE START END [GB]: the dps of the first result
  local gb=""
  [ -n "${6:-}" ] && gb=',"tags":{"dc":"*"}'
  post /api/query "{\"start\":$4,\"end\":$5,\"queries\":[{\"metric\":\"r.m\",\"aggregator\":\"sum\",\"downsample\":\"$2-$1\"$3$gb}]}"
}
raw1h=$(q sum 1h ',"rollupUsage":"ROLLUP_RAW"' $D0 $((D0 + 60 * 3600 - 1)))
nof1h=$(q sum 1h ',"rollupUsage":"ROLLUP_NOFALLBACK"' $D0 $((D0 + 60 * 3600 - 1)))
check_eq "before the job: no rollups (NOFALLBACK is empty)" "200 []" "$nof1h"
check_eq "before the job: the default reads raw" "$raw1h" "$(q sum 1h '' $D0 $((D0 + 60 * 3600 - 1)))"
tsd_stop

# ---- the job rolls up every closed hour and day ---------------------------------------------
tsd_start "${RK[@]}"
for _ in $(seq 1 300); do
  grep -q 'rollup job: .* rows rolled up' "$TSD_LOG" && break
  sleep 0.1
done
check_contains "the job ran" "$(cat "$TSD_LOG")" "rows rolled up"
# 4 series x 60 hours, and 4 x 3 days
rolled=$(sed -n 's/.*rollup job: \([0-9]*\) rows.*/\1/p' "$TSD_LOG" | awk '{s+=$1} END {print s}')
gaps=$(python3 -c "import sys; d=int(sys.argv[1]); print(sum(1 for h in range(60) if (d // 3600 + h) % 7 == 0))" "$D0")
check_eq "rows rolled up: 4 series x 60 hours (less d's $gaps empty hours) + 4 x 3 days" \
  $((4 * 60 - gaps + 12)) "$rolled"
E1=$((D0 + 60 * 3600 - 1)); E2=$((D0 + 3 * 86400 - 1))
for fn in sum count min max avg; do
  for gb in "" 1; do
    raw=$(q $fn 1h ',"rollupUsage":"ROLLUP_RAW"' $D0 $E1 $gb)
    case "$raw" in "200 [{"*) ;; *) not_ok "raw 1h-$fn answers: $raw" ;; esac
    check_eq "1h-$fn${gb:+ by dc}: rollups only = raw" "$raw" "$(q $fn 1h ',"rollupUsage":"ROLLUP_NOFALLBACK"' $D0 $E1 $gb)"
    check_eq "1h-$fn${gb:+ by dc}: default = raw" "$raw" "$(q $fn 1h '' $D0 $E1 $gb)"
    raw=$(q $fn 1d ',"rollupUsage":"ROLLUP_RAW"' $D0 $E2 $gb)
    check_eq "1d-$fn${gb:+ by dc}: rollups only = raw" "$raw" "$(q $fn 1d ',"rollupUsage":"ROLLUP_NOFALLBACK"' $D0 $E2 $gb)"
    check_eq "1d-$fn${gb:+ by dc}: ROLLUP_FALLBACK = raw" "$raw" "$(q $fn 1d ',"rollupUsage":"ROLLUP_FALLBACK"' $D0 $E2 $gb)"
  done
done
# the default up to now mixes rollups and raw rows: equal to raw over the same range
raw=$(q avg 1h ',"rollupUsage":"ROLLUP_RAW"' $D0 $now)
check_eq "1h-avg to now: default = raw" "$raw" "$(q avg 1h '' $D0 $now)"
raw=$(q max 1d ',"rollupUsage":"ROLLUP_RAW"' $D0 $now 1)
check_eq "1d-max to now by dc: default = raw" "$raw" "$(q max 1d '' $D0 $now 1)"
# a point written late into an hour (and day) already rolled up: the next job pass redoes both
check_eq "a late point loads" "204 " "$(post /api/put "{\"metric\":\"r.m\",\"timestamp\":$((D0 + 7200 + 5)),\"value\":100000,\"tags\":{\"host\":\"a\",\"dc\":\"x\"}}")"
for _ in $(seq 1 50); do
  [ "$(q sum 1h ',"rollupUsage":"ROLLUP_NOFALLBACK"' $D0 $E1)" == "$(q sum 1h ',"rollupUsage":"ROLLUP_RAW"' $D0 $E1)" ] && break
  sleep 0.1
done
check_eq "late point: 1h-sum rollups = raw" "$(q sum 1h ',"rollupUsage":"ROLLUP_RAW"' $D0 $E1)" "$(q sum 1h ',"rollupUsage":"ROLLUP_NOFALLBACK"' $D0 $E1)"
check_eq "late point: 1d-max rollups = raw" "$(q max 1d ',"rollupUsage":"ROLLUP_RAW"' $D0 $E2)" "$(q max 1d ',"rollupUsage":"ROLLUP_NOFALLBACK"' $D0 $E2)"
check_contains "late point: in the day's max (summed over the series)" "$(q max 1d ',"rollupUsage":"ROLLUP_NOFALLBACK"' $D0 $E2)" "\"$D0\":10"
before=$(q avg 1h ',"rollupUsage":"ROLLUP_NOFALLBACK"' $D0 $E1)

# ---- /api/rollup ------------------------------------------------------------------------------
T=$((D0 + 3600 + 120)) # snapped to D0 + 3600
r=$(post /api/rollup "[{\"metric\":\"ext.m\",\"timestamp\":$T,\"value\":90,\"tags\":{\"host\":\"a\"},\"interval\":\"1h\",\"aggregator\":\"sum\"},
 {\"metric\":\"ext.m\",\"timestamp\":$T,\"value\":4,\"tags\":{\"host\":\"a\"},\"interval\":\"1h\",\"aggregator\":\"count\"},
 {\"metric\":\"ext.m\",\"timestamp\":$D0,\"value\":2.5,\"tags\":{\"host\":\"a\"},\"interval\":\"1d\",\"aggregator\":\"MAX\"}]")
check_eq "/api/rollup stores points" "204 " "$r"
ext() { post /api/query "{\"start\":$D0,\"end\":$((D0 + 86399)),\"queries\":[{\"metric\":\"ext.m\",\"aggregator\":\"sum\",\"downsample\":\"$1\",\"rollupUsage\":\"ROLLUP_NOFALLBACK\"}]}"; }
check_contains "1h-avg of /api/rollup's sum and count" "$(ext 1h-avg)" "\"dps\":{\"$((D0 + 3600))\":22.5}"
check_contains "1h-sum reads back" "$(ext 1h-sum)" "\"dps\":{\"$((D0 + 3600))\":90.0}"
check_contains "1d-max reads back" "$(ext 1d-max)" "\"dps\":{\"$D0\":2.5}"
r=$(post "/api/rollup?details" "[{\"metric\":\"ext.m\",\"timestamp\":$T,\"value\":1,\"tags\":{\"host\":\"a\"},\"aggregator\":\"sum\"},
 {\"metric\":\"ext.m\",\"timestamp\":$T,\"value\":1,\"tags\":{\"host\":\"a\"},\"interval\":\"5m\",\"aggregator\":\"sum\"},
 {\"metric\":\"ext.m\",\"timestamp\":$T,\"value\":1,\"tags\":{\"host\":\"a\"},\"interval\":\"1h\",\"aggregator\":\"p99\"},
 {\"metric\":\"ext.m\",\"timestamp\":$T,\"value\":1,\"tags\":{\"host\":\"a\"},\"interval\":\"1h\",\"aggregator\":\"sum\",\"groupByAggregator\":\"sum\"},
 {\"metric\":\"ext.m\",\"timestamp\":$T,\"value\":\"x\",\"tags\":{\"host\":\"a\"},\"interval\":\"1h\",\"aggregator\":\"sum\"},
 {\"metric\":\"ext.m\",\"timestamp\":$T,\"value\":7,\"tags\":{\"host\":\"b\"},\"interval\":\"1h\",\"aggregator\":\"sum\"}]")
check_contains "details: status and counts" "$r" '400 {"errors":['
check_contains "details: success and failed" "$r" '"failed":5,"success":1}'
check_contains "missing interval" "$r" '"error":"Missing interval"'
check_contains "an interval without a table" "$r" "No rollup interval '5m'"
check_contains "an aggregator rollups do not hold" "$r" "No rollup aggregator 'p99'"
check_contains "pre-aggregates refused" "$r" "groupByAggregator"
check_contains "a bad value: put's message" "$r" "Unable to parse value to a number"
# a JSON number is typed as put types its text (integral below 1e17: an integer, else a float or
# a double), which the timestamp check's message shows as the value's bytes and flags
BT=99999999999999 # milliseconds past put's range
r=$(post "/api/rollup?details" "[{\"metric\":\"ext.m\",\"timestamp\":$BT,\"value\":1.5,\"tags\":{\"host\":\"a\"},\"interval\":\"1h\",\"aggregator\":\"sum\"},
 {\"metric\":\"ext.m\",\"timestamp\":$BT,\"value\":1e16,\"tags\":{\"host\":\"a\"},\"interval\":\"1h\",\"aggregator\":\"sum\"},
 {\"metric\":\"ext.m\",\"timestamp\":$BT,\"value\":0.1,\"tags\":{\"host\":\"a\"},\"interval\":\"1h\",\"aggregator\":\"sum\"},
 {\"metric\":\"ext.m\",\"timestamp\":$T,\"value\":1e999,\"tags\":{\"host\":\"a\"},\"interval\":\"1h\",\"aggregator\":\"sum\"},
 {\"metric\":\"ext.m\",\"timestamp\":$T,\"value\":1e999,\"tags\":{},\"interval\":\"1h\",\"aggregator\":\"sum\"}]")
check_contains "a float value: put's bad timestamp message" "$r" \
  "\"error\":\"bad timestamp=$BT when trying to add value=[63, -64, 0, 0]/11 to metric=ext.m, tags={host=a}\""
check_contains "an integral value: an integer" "$r" "add value=[0, 35, -122, -14, 111, -63, 0, 0]/7 to"
check_contains "a value a float cannot hold: a double" "$r" \
  "add value=[63, -71, -103, -103, -103, -103, -103, -102]/15 to"
check_contains "a number out of range (1e999): put's message" "$r" \
  '"value":null,"tags":{"host":"a"},"interval":"1h","aggregator":"sum"},"error":"Unable to parse value to a number"'
check_contains "missing tags before the value's check" "$r" '"error":"Missing tags"'
check_contains "typed values: all failed" "$r" '"failed":5,"success":0}'
r=$(post /api/rollup "{\"metric\":\"ext.m\",\"timestamp\":$T,\"value\":1,\"tags\":{\"host\":\"a\"}}")
check_contains "without details: put's 400" "$r" '400 {"error":{"code":400,"message":"One or more data points had errors"'
check_contains "bad JSON" "$(post /api/rollup '{"metric":')" '400 {"error":{"code":400,"message":"Unable to parse the given JSON"'
tsd_stop

# ---- restart: progress kept, nothing counted twice ------------------------------------------
tsd_start "${RK[@]}"
sleep 2.5 # two or three job passes
check_eq "after a restart: the same rollups" "$before" "$(q avg 1h ',"rollupUsage":"ROLLUP_NOFALLBACK"' $D0 $E1)"
check_eq "after a restart: count unchanged" "$(q count 1d ',"rollupUsage":"ROLLUP_RAW"' $D0 $E2)" \
  "$(q count 1d ',"rollupUsage":"ROLLUP_NOFALLBACK"' $D0 $E2)"
again=$(sed -n 's/.*rollup job: \([0-9]*\) rows.*/\1/p' "$TSD_LOG" | awk '{s+=$1} END {print s+0}')
check "after a restart: closed hours are not rolled up again (at most the hour that closed since)" \
  test "$again" -le 8
tsd_stop
# without tsd.rollups.enable there is no /api/rollup
tsd_start
check_contains "/api/rollup needs tsd.rollups.enable" "$(post /api/rollup '[]')" '404 {"error":{"code":404,"message":"Endpoint not found"'
tsd_stop
it_done
