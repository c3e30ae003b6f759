#!/usr/bin/env bash
# test_tsd_head.sh - the ingest head (tsd.storage.head.enable, on by default) with the real daemon, the
# clock pinned by CTSDB_NOW_MS: points of an open hour go to the head and its log, not the store;
# a kill -9 mid-hour and kills at every hand-off step (CTSDB_HEAD_CRASH) lose no acknowledged
# point; after the hand-off the store answers exactly what a TSD without the head answers for the
# same writes; a late point of a handed-off hour is written as a single cell and read with the
# hour's cell; once every hour is handed off the head log holds no segment; a start with the head
# off drains a log left mid-hour into the store.
source "$(dirname "$0")/lib.sh"

H=1356998400 # 2013-01-01T00:00:00Z, the hour written
MID_MS=$(((H + 1800) * 1000))
AFTER_MS=$(((H + 3600 + 10) * 1000)) # past the hour + the default grace (compaction_delay 0)

# puts.json: 3 series, 400 points of hour H (ints, floats, doubles, s and ms timestamps)
work=$(it_tmpdir)
python3 - "$H" >"$work/puts.json" <<'EOF'
import json, sys
H = int(sys.argv[1])
pts = []
for i in range(400):
    s = i % 3
    if s == 0:
        pts.append({"metric": "head.m", "timestamp": H + i, "value": i * 1000003, "tags": {"host": "a"}})
    elif s == 1:
        pts.append({"metric": "head.m", "timestamp": (H + i) * 1000 + 7, "value": i * 0.1, "tags": {"host": "b"}})
    else:
        pts.append({"metric": "head.m", "timestamp": H + i, "value": 2.5 * i, "tags": {"host": "c"}})
print(json.dumps(pts))
EOF

put_all() { # PORT: posts puts.json in 4 requests; prints the HTTP codes
  python3 - "$1" "$work/puts.json" <<'EOF'
import json, sys, urllib.request
port, path = sys.argv[1], sys.argv[2]
pts = json.load(open(path))
codes = []
for k in range(4):
    body = json.dumps(pts[k * 100:(k + 1) * 100]).encode()
    r = urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:%s/api/put" % port, body), timeout=30)
    codes.append(str(r.status))
print(" ".join(codes))
EOF
}

query() { # PORT: every point of head.m per host in hour H, as sorted JSON (ms timestamps)
  curl -s "http://127.0.0.1:$1/api/query?start=$H&end=$((H + 3599))&ms=true&m=none:head.m%7Bhost=*%7D" |
    python3 -c 'import json, sys
r = json.load(sys.stdin)
print(json.dumps(sorted([(x["tags"]["host"], sorted(x["dps"].items())) for x in r]) if isinstance(r, list) else r))'
}

query_q() { # PORT QUERYSTRING: the answer of /api/query?QUERYSTRING, sorted by tags
  curl -s "http://127.0.0.1:$1/api/query?$2" | python3 -c 'import json, sys
r = json.load(sys.stdin)
print(json.dumps(sorted([(sorted(x["tags"].items()), sorted(x["dps"].items())) for x in r]) if isinstance(r, list) else r))'
}
# queries over ranges that straddle the open hour's middle, with downsampling, rates, groups
QS=("start=$H&end=$((H + 3599))&ms=true&m=sum:1m-avg:head.m"
  "start=$((H + 60))&end=$((H + 200))&ms=true&m=sum:rate:head.m%7Bhost=*%7D"
  "start=$((H - 7200))&end=$((H + 7200))&m=max:10m-max:head.m%7Bhost=a%7Cc%7D"
  "start=$((H + 100))&end=$((H + 300))&m=zimsum:head.m%7Bhost=b%7D")
queries_all() { for q in "${QS[@]}"; do query_q "$1" "$q"; done; }
# /api/query/last: the index path, a back scan, resolved names, a TSUID
LQS=("timeseries=head.m" "timeseries=head.m%7Bhost=b%7D&back_scan=2" "timeseries=head.m&resolve=true"
  "tsuids=000001000001000001")
last_all() {
  for q in "${LQS[@]}"; do
    curl -s "http://127.0.0.1:$1/api/query/last?$q" | python3 -c 'import json, sys
r = json.load(sys.stdin)
print(json.dumps(sorted(r, key=lambda x: x["tsuid"]) if isinstance(r, list) else r, sort_keys=True))'
  done
}

npoints() { python3 -c 'import json, sys; print(sum(len(d) for _, d in json.loads(sys.argv[1])))' "$1"; }

# the reference: the same writes without the head
NOHEAD=--tsd.storage.head.enable=false
CTSDB_NOW_MS=$MID_MS tsd_start "$NOHEAD"
check_eq "reference TSD acknowledges every put" "204 204 204 204" "$(put_all "$TSD_PORT")"
want=$(query "$TSD_PORT")
check_eq "reference TSD answers 400 points" 400 "$(npoints "$want")"
want_all=$(queries_all "$TSD_PORT")
check_eq "every reference answer has series" "0" "$(grep -c '^\[\]$\|error' <<<"$want_all")"
want_last=$(last_all "$TSD_PORT")
check_eq "every reference last answer has points" "0" "$(grep -c '^\[\]$\|error' <<<"$want_last")"
tsd_stop
unset TSD_DATA

# the head: write mid-hour, then kill -9
HEAD=--tsd.storage.head.enable=true
CTSDB_NOW_MS=$MID_MS tsd_start "$HEAD"
data=$TSD_DATA
check_eq "head TSD acknowledges every put" "204 204 204 204" "$(put_all "$TSD_PORT")"
check_eq "read at once from the head: the same 400 points as without the head" "$want" \
  "$(query "$TSD_PORT")"
check_eq "downsample, rate, group, filters over the open hour: as without the head" "$want_all" \
  "$(queries_all "$TSD_PORT")"
check_eq "/api/query/last over the open hour: as without the head" "$want_last" "$(last_all "$TSD_PORT")"
stats=$(curl -s "http://127.0.0.1:$TSD_PORT/api/stats" | python3 -c 'import json, sys
print(" ".join("%s=%s" % (s["metric"], s["value"]) for s in json.load(sys.stdin) if s["metric"].startswith("tsd.head.")))')
check_contains "/api/stats: the head holds the 400 points" "$stats" "tsd.head.points=400"
check_contains "/api/stats: in 3 series" "$stats" "tsd.head.series=3"
kill -KILL "$TSD_PID"
wait "$TSD_PID" 2>/dev/null
check "the head log has a segment" ls "$data"/head/wal-*.log
# a restart mid-hour: the log replayed into the head answers at once
TSD_DATA=$data CTSDB_NOW_MS=$MID_MS tsd_start "$HEAD"
check_contains "the mid-hour restart replayed the log" "$(cat "$TSD_LOG")" "head: replayed 400 points"
check_eq "after a mid-hour restart: the same 400 points from the head" "$want" "$(query "$TSD_PORT")"
check_eq "after a mid-hour restart: the same answers" "$want_all" "$(queries_all "$TSD_PORT")"
check_eq "after a mid-hour restart: the same last points" "$want_last" "$(last_all "$TSD_PORT")"
kill -KILL "$TSD_PID"
wait "$TSD_PID" 2>/dev/null
rows=$("$CTSDB" shell --data "$data" -e "count 'tsdb'" 2>&1)
check_contains "no cell reached the store while the hour was open" "$rows" "0 row(s)"

# restarts past the hour, killed at each hand-off step; each replays the log again
for point in handoff_before_store handoff_mid_store handoff_before_release; do
  CTSDB_NOW_MS=$AFTER_MS CTSDB_HEAD_CRASH=$point "$CTSDB" tsd --bind 127.0.0.1 --port 0 \
    --data "$data" "$HEAD" 2>"$work/crash.log" &
  pid=$!
  IT_PIDS+=("$pid")
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    not_ok "the TSD dies at $point"
    kill -KILL "$pid"
  fi
  wait "$pid" 2>/dev/null
  check_contains "killed at $point" "$(cat "$work/crash.log")" "killing the process at $point"
done
rows=$("$CTSDB" shell --data "$data" -e "count 'tsdb'" 2>&1)
check_contains "the crashed hand-offs wrote the series' rows" "$rows" "3 row(s)"

# a clean start past the hour: the hand-off completes; the store answers as the reference
TSD_DATA=$data CTSDB_NOW_MS=$AFTER_MS tsd_start "$HEAD"
check_contains "the restart replayed the log" "$(cat "$TSD_LOG")" "head: replayed 400 points"
got=$(query "$TSD_PORT")
check_eq "after the hand-off: the same 400 points as without the head" "$want" "$got"
check_eq "after the hand-off: the same answers" "$want_all" "$(queries_all "$TSD_PORT")"
check_eq "after the hand-off: the same last points" "$want_last" "$(last_all "$TSD_PORT")"

# a late point of the handed-off hour: a single cell, read with the hour's cell
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$TSD_PORT/api/put" \
  -d "{\"metric\":\"head.m\",\"timestamp\":$((H + 3000)),\"value\":77,\"tags\":{\"host\":\"a\"}}")
check_eq "late point acknowledged" 204 "$code"
got=$(query "$TSD_PORT")
check_eq "the late point is read with the hour" 401 "$(npoints "$got")"
check_contains "the late point's value" "$got" "[\"$(((H + 3000) * 1000))\", 77]"
tsd_stop
check_eq "clean stop" 0 "$?"
segs=$(ls "$data"/head/wal-*.log 2>/dev/null | wc -l)
check_eq "every hour handed off: the head log holds no segment" 0 "$segs"
check "the release mark is on disk" test -s "$data/head/released"

# restart: nothing replayed, the answer unchanged
TSD_DATA=$data CTSDB_NOW_MS=$AFTER_MS tsd_start "$HEAD"
got=$(query "$TSD_PORT")
check_eq "after another restart: 401 points" 401 "$(npoints "$got")"
tsd_stop

# a damaged release mark: the TSD refuses to start, fsck names the file (exit 1) and with
# --quarantine sets it aside; the log then replays whole and the answer is unchanged
printf 'X' | dd of="$data/head/released" bs=1 seek=7 conv=notrunc status=none
TSD_DATA=$data CTSDB_NOW_MS=$AFTER_MS "$CTSDB" tsd --bind 127.0.0.1 --port 0 --data "$data" \
  "$HEAD" >/dev/null 2>"$work/mark.log" &
mpid=$!
for _ in $(seq 1 100); do kill -0 "$mpid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$mpid" 2>/dev/null; then kill -KILL "$mpid"; fi
wait "$mpid" 2>/dev/null
check_contains "a damaged release mark stops the TSD" "$(cat "$work/mark.log")" "bad checksum in"
out=$("$CTSDB" fsck --data "$data" 2>&1)
check_eq "fsck: a damaged release mark is exit 1" 1 "$?"
check_contains "fsck names the release mark" "$out" "fsck: damaged $data/head/released: bad checksum"
out=$("$CTSDB" fsck --data "$data" --quarantine 2>&1)
check_contains "fsck --quarantine sets the mark aside" "$out" "quarantined $data/head/released"
check "the mark is in quarantine/" test -s "$data/quarantine/head-released"
TSD_DATA=$data CTSDB_NOW_MS=$AFTER_MS tsd_start "$HEAD"
got=$(query "$TSD_PORT")
check_eq "after the quarantine: 401 points" 401 "$(npoints "$got")"
tsd_stop

# points the head refuses in an open hour it holds (out of order) are single cells read with the
# head's points at once; a rewrite of a timestamp it holds replaces its point (the latest write
# wins, as without the head), before and after the hand-off
unset TSD_DATA
CTSDB_NOW_MS=$MID_MS tsd_start "$HEAD"
data=$TSD_DATA
check_eq "head TSD acknowledges every put (3)" "204 204 204 204" "$(put_all "$TSD_PORT")"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$TSD_PORT/api/put" \
  -d "[{\"metric\":\"head.m\",\"timestamp\":$((H + 1)),\"value\":5,\"tags\":{\"host\":\"a\"}},
       {\"metric\":\"head.m\",\"timestamp\":$((H + 3)),\"value\":999,\"tags\":{\"host\":\"a\"}},
       {\"metric\":\"head.m\",\"timestamp\":$((H + 10)),\"value\":6,\"tags\":{\"host\":\"d\"}}]")
check_eq "out-of-order points acknowledged" 204 "$code"
got=$(query "$TSD_PORT")
check_eq "the out-of-order points are read with the head's at once" 402 "$(npoints "$got")"
check_contains "the out-of-order point's value" "$got" "[\"$(((H + 1) * 1000))\", 5]"
check_contains "a rewrite of a held point: the latest write" "$got" "[\"$(((H + 3) * 1000))\", 999]"
check_contains "a series only the head holds is found by its tag" \
  "$(query_q "$TSD_PORT" "start=$H&end=$((H + 3599))&m=sum:head.m%7Bhost=d%7D")" '"1356998410", 6'
tsd_stop
TSD_DATA=$data CTSDB_NOW_MS=$AFTER_MS tsd_start "$HEAD"
got2=$(query "$TSD_PORT")
check_eq "after the hand-off: the same answer as from the head" "$got" "$got2"
tsd_stop

# series only the head holds, seen by every reader: /api/search/lookup (the data scan), a
# read-only TSD on the same directory and `ctsdb query --data` (both replay the head log
# read-only); delete=true drops the head's hours too, logged, so a restart does not bring the
# points back, while a point written after the delete stays
unset TSD_DATA
CTSDB_NOW_MS=$MID_MS tsd_start "$HEAD" --tsd.http.query.allow_delete=true
data=$TSD_DATA
check_eq "head TSD acknowledges every put (4)" "204 204 204 204" "$(put_all "$TSD_PORT")"
lookup() { # PORT QUERY: totalResults of /api/search/lookup?QUERY
  curl -sg "http://127.0.0.1:$1/api/search/lookup?$2" |
    python3 -c 'import json, sys; print(json.load(sys.stdin).get("totalResults"))'
}
check_eq "lookup finds the 3 series only the head holds" 3 "$(lookup "$TSD_PORT" "m=head.m")"
check_eq "lookup with a tag filter over the head's series" 1 "$(lookup "$TSD_PORT" "m=head.m{host=b}")"
tsd_stop
ref_a=$(python3 -c 'import json, sys
for h, d in json.loads(sys.argv[1]):
    if h == "a":
        for t, v in d: print("head.m %s %s {host=a}" % (t, v))' "$want")
out=$("$CTSDB" query --data "$data" "$H" "$((H + 3599))" none head.m host=a 2>&1)
check_eq "ctsdb query --data reads the head log's open hour (host=a)" "$ref_a" "$out"
TSD_DATA=$data CTSDB_NOW_MS=$MID_MS tsd_start "$HEAD" --tsd.mode=ro
check_contains "the read-only TSD read the head log" "$(cat "$TSD_LOG")" \
  "head: read 400 points of open hours"
check_eq "a read-only TSD answers the open hour from the head log" "$want" "$(query "$TSD_PORT")"
check_eq "a read-only TSD: the same answers" "$want_all" "$(queries_all "$TSD_PORT")"
check_eq "a read-only TSD: lookup finds the head's series" 3 "$(lookup "$TSD_PORT" "m=head.m")"
tsd_stop
check_eq "the read-only TSD left the head log as it was" 1 "$(ls "$data"/head/wal-*.log | wc -l)"
TSD_DATA=$data CTSDB_NOW_MS=$MID_MS tsd_start "$HEAD" --tsd.http.query.allow_delete=true
code=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE \
  "http://127.0.0.1:$TSD_PORT/api/query?start=$H&end=$((H + 3599))&m=sum:head.m%7Bhost=a%7D")
check_eq "delete=true of host=a answers" 200 "$code"
got=$(query "$TSD_PORT")
check_eq "delete=true dropped host=a's 134 head points" 266 "$(npoints "$got")"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$TSD_PORT/api/put" \
  -d "{\"metric\":\"head.m\",\"timestamp\":$((H + 2000)),\"value\":42,\"tags\":{\"host\":\"a\"}}")
check_eq "a point after the delete acknowledged" 204 "$code"
kill -KILL "$TSD_PID"
wait "$TSD_PID" 2>/dev/null
TSD_DATA=$data CTSDB_NOW_MS=$MID_MS tsd_start "$HEAD"
got=$(query "$TSD_PORT")
check_eq "after a kill -9 and replay: the deleted points stay deleted, the later one stays" 267 \
  "$(npoints "$got")"
check_contains "the point written after the delete" "$got" "[\"$(((H + 2000) * 1000))\", 42]"
tsd_stop
TSD_DATA=$data CTSDB_NOW_MS=$AFTER_MS tsd_start "$HEAD"
check_eq "after the hand-off: the same 267 points" "$got" "$(query "$TSD_PORT")"
tsd_stop

# turning the head off mid-hour strands nothing: the next start drains its log into the store
unset TSD_DATA
CTSDB_NOW_MS=$MID_MS tsd_start "$HEAD"
data=$TSD_DATA
check_eq "head TSD acknowledges every put (2)" "204 204 204 204" "$(put_all "$TSD_PORT")"
kill -KILL "$TSD_PID"
wait "$TSD_PID" 2>/dev/null
TSD_DATA=$data CTSDB_NOW_MS=$MID_MS tsd_start "$NOHEAD"
got=$(query "$TSD_PORT")
check_eq "head off after a kill mid-hour: the same 400 points" "$want" "$got"
tsd_stop
segs=$(ls "$data"/head/wal-*.log 2>/dev/null | wc -l)
check_eq "the drained head log holds no segment" 0 "$segs"
it_done
