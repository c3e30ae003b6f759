#!/usr/bin/env bash
# test_tsd_head_backfill.sh - a backfill (points of hours closed long ago, in time order, every
# series per timestamp) through the daemon with the ingest head's backfill on
# (tsd.storage.head.backfill_idle_ms): the head takes the points, a series' oldest hour goes to
# the store as one cell in the background once the series moved on to a newer hour (or, with
# that off, when it needs room for a fourth, inside the append), the rest when idle; every
# acknowledged point is readable at once, while hours are being handed off too, and the answers
# equal a head-off TSD's for the same writes (telnet and HTTP); a kill -9 at each step of the
# background, room and start-up hand-offs loses no acknowledged point; after the idle hand-off
# every point is in an hour cell (no single cell) and the head log holds no segment.
source "$(dirname "$0")/lib.sh"

H=1356998400                      # 2013-01-01T00:00:00Z, the first hour written
NOW_MS=$(((H + 10 * 86400) * 1000)) # every hour of the stream closed long ago
work=$(it_tmpdir)

# the stream: 4 series x 5 hours, one point a minute, every series per timestamp; hour 0 by
# telnet (stream.telnet: 240 points), hours 1-4 by HTTP (stream.json: 16 requests of 60 points)
python3 - "$H" "$work" <<'EOF'
import json, sys
H, work = int(sys.argv[1]), sys.argv[2]
tel, js = [], []
for m in range(5 * 60):
    t = H + m * 60
    for s, host in enumerate("abcd"):
        v = m * 7 + s if s % 2 == 0 else m * 0.25 + s
        if m < 60:
            tel.append("put bf.m %d %s host=%s" % (t, v, host))
        else:
            js.append({"metric": "bf.m", "timestamp": t, "value": v, "tags": {"host": host}})
open(work + "/stream.telnet", "w").write("\n".join(tel) + "\nversion\n")
json.dump([js[i:i + 60] for i in range(0, len(js), 60)], open(work + "/stream.json", "w"))
EOF

send_http() { # PORT [FROM]: posts the requests of stream.json from FROM; prints how many got 204
  python3 - "$1" "$work/stream.json" "${2:-0}" <<'EOF'
import json, sys, urllib.request
port, path, start = sys.argv[1], sys.argv[2], int(sys.argv[3])
reqs = json.load(open(path))
n = start
for body in reqs[start:]:
    try:
        r = urllib.request.urlopen(urllib.request.Request(
            "http://127.0.0.1:%s/api/put" % port, json.dumps(body).encode()), timeout=30)
        if r.status != 204:
            break
    except Exception:
        break
    n += 1
print(n)
EOF
}
send_all() { # PORT: telnet then HTTP; prints the telnet reply's first word and the 204 count
  local v
  v=$(tsd_talk "$1" <"$work/stream.telnet" | head -c 20 | tr -d '\n' | cut -c1-5)
  echo "$v $(send_http "$1")"
}

query_q() { # PORT QUERYSTRING: the answer, sorted by tags
  curl -s "http://127.0.0.1:$1/api/query?$2" | python3 -c 'import json, sys
r = json.load(sys.stdin)
print(json.dumps(sorted([(sorted(x["tags"].items()), sorted(x["dps"].items())) for x in r]) if isinstance(r, list) else r))'
}
QS=("start=$H&end=$((H + 5 * 3600))&m=none:bf.m%7Bhost=*%7D"
  "start=$((H + 1800))&end=$((H + 4 * 3600))&m=sum:10m-avg:bf.m"
  "start=$H&end=$((H + 5 * 3600))&m=sum:rate:bf.m%7Bhost=a%7Cb%7D"
  "start=$((H + 2 * 3600))&end=$((H + 3 * 3600 - 1))&m=max:bf.m%7Bhost=c%7D")
queries_all() { for q in "${QS[@]}"; do query_q "$1" "$q"; done; }
last_all() {
  curl -s "http://127.0.0.1:$1/api/query/last?timeseries=bf.m&back_scan=24000" | python3 -c 'import json, sys
r = json.load(sys.stdin)
print(json.dumps(sorted(r, key=lambda x: x["tsuid"]) if isinstance(r, list) else r, sort_keys=True))'
}
npoints() { python3 -c 'import json, sys; print(sum(len(d) for _, d in json.loads(sys.argv[1])))' "$1"; }
# acked_present ANSWER N: every point of the telnet part and of the first N HTTP requests is in
# ANSWER (the first query's) with its value; prints the count of those missing
acked_present() {
  python3 - "$1" "$2" "$work/stream.telnet" "$work/stream.json" <<'EOF'
import json, sys
got = {}
for tags, dps in json.loads(sys.argv[1]):
    for ts, v in dps:
        got[(dict(tags)["host"], int(ts))] = v
want = []
for line in open(sys.argv[3]):
    p = line.split()
    if p and p[0] == "put":
        want.append((p[4].split("=")[1], int(p[2]), float(p[3])))
for req in json.load(open(sys.argv[4]))[:int(sys.argv[2])]:
    for x in req:
        want.append((x["tags"]["host"], x["timestamp"], float(x["value"])))
print(sum(1 for h, t, v in want if (h, t) not in got or abs(got[(h, t)] - v) > 1e-9))
EOF
}

# the reference: the same writes with the head off
CTSDB_NOW_MS=$NOW_MS tsd_start --tsd.storage.head.enable=false
check_eq "reference: telnet synced, 16 HTTP requests acknowledged" "net.o 16" "$(send_all "$TSD_PORT")"
want_all=$(queries_all "$TSD_PORT")
check_eq "reference: 1200 points" 1200 "$(npoints "$(head -1 <<<"$want_all")")"
check_eq "every reference answer has series" 0 "$(grep -c '^\[\]$\|error' <<<"$want_all")"
want_last=$(last_all "$TSD_PORT")
tsd_stop
unset TSD_DATA

# backfill on, idle far away, the background hand-off off (CTSDB_HEAD_MOVED=0, tests only):
# room hand-offs inside the appends only, while the stream runs
BF=(--tsd.storage.head.enable=true --tsd.storage.head.backfill_idle_ms=600000)
CTSDB_NOW_MS=$NOW_MS CTSDB_HEAD_MOVED=0 tsd_start "${BF[@]}"
check_eq "room: telnet synced, 16 HTTP requests acknowledged" "net.o 16" "$(send_all "$TSD_PORT")"
check_eq "room: the answers of a head-off TSD" "$want_all" "$(queries_all "$TSD_PORT")"
check_eq "room: no point went as a single cell" 0 \
  "$(tsd_stat "$TSD_PORT" "tsd.storage.data.cells type=point")"
check_eq "room: hours 0 and 1 of the 4 series went for room: 8 hour cells" 8 \
  "$(tsd_stat "$TSD_PORT" "tsd.storage.data.cells type=hour")"
check_eq "room: the head holds hours 2-4 of the 4 series" 12 "$(tsd_stat "$TSD_PORT" "tsd.head.chunks")"
tsd_stop
unset TSD_DATA

# the background hand-off on (the default): each series' older hour goes once it moved on
CTSDB_NOW_MS=$NOW_MS tsd_start "${BF[@]}"
data=$TSD_DATA
check_eq "backfill: telnet synced, 16 HTTP requests acknowledged" "net.o 16" "$(send_all "$TSD_PORT")"
check_eq "backfill read at once: the answers of a head-off TSD" "$want_all" "$(queries_all "$TSD_PORT")"
check_eq "backfill read at once: the last points of a head-off TSD" "$want_last" "$(last_all "$TSD_PORT")"
check_eq "no point went as a single cell" 0 "$(tsd_stat "$TSD_PORT" "tsd.storage.data.cells type=point")"
check_eq "hours 0-3 of the 4 series went in the background: 16 hour cells" 16 \
  "$(tsd_stat_wait "$TSD_PORT" "tsd.storage.data.cells type=hour" 16)"
check_eq "the head holds hour 4 of the 4 series" 4 "$(tsd_stat "$TSD_PORT" "tsd.head.chunks")"
check_eq "after the background hand-off: the answers of a head-off TSD" "$want_all" \
  "$(queries_all "$TSD_PORT")"
kill -KILL "$TSD_PID"
wait "$TSD_PID" 2>/dev/null

# restarts killed at each step of the start-up hand-off (the replayed hours); each replays again
for point in handoff_before_store handoff_mid_store handoff_before_release; do
  CTSDB_NOW_MS=$NOW_MS CTSDB_HEAD_CRASH=$point "$CTSDB" tsd --bind 127.0.0.1 --port 0 \
    --data "$data" "${BF[@]}" 2>"$work/crash.log" &
  pid=$!
  IT_PIDS+=("$pid")
  for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    not_ok "the TSD dies at $point"
    kill -KILL "$pid"
  fi
  wait "$pid" 2>/dev/null
  check_contains "killed at $point" "$(cat "$work/crash.log")" "killing the process at $point"
done
TSD_DATA=$data CTSDB_NOW_MS=$NOW_MS tsd_start "${BF[@]}"
check_eq "after kills at every start-up hand-off step: the answers of a head-off TSD" "$want_all" \
  "$(queries_all "$TSD_PORT")"
check_eq "the replayed hours are in the store: the head holds nothing" 0 \
  "$(tsd_stat "$TSD_PORT" "tsd.head.chunks")"
tsd_stop
unset TSD_DATA

# kill -9 at each step of a background and of a room hand-off (the background one off, :0),
# mid-stream: every acknowledged point survives, and the stream sent again from the first
# unacknowledged request answers as the reference
for spec in moved_before_store:1 moved_mid_store:1 room_before_store:0 room_mid_store:0 \
  handoff_before_release:1; do
  point=${spec%%:*}
  d=$(it_tmpdir)/data
  TSD_DATA=$d CTSDB_NOW_MS=$NOW_MS CTSDB_HEAD_MOVED=${spec##*:} CTSDB_HEAD_CRASH=$point \
    tsd_start "${BF[@]}"
  # the telnet part (hour 0) hands nothing off; the HTTP part opens hour 1 (the first background
  # hand-off) and hour 3 (the first room hand-off)
  tsd_talk "$TSD_PORT" <"$work/stream.telnet" >/dev/null
  acked=$(send_http "$TSD_PORT")
  for _ in $(seq 1 100); do kill -0 "$TSD_PID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$TSD_PID" 2>/dev/null; then
    not_ok "the TSD dies at $point (acked $acked)"
    kill -KILL "$TSD_PID"
  fi
  wait "$TSD_PID" 2>/dev/null
  check_contains "killed at $point" "$(cat "$TSD_LOG")" "killing the process at $point"
  TSD_DATA=$d CTSDB_NOW_MS=$NOW_MS tsd_start "${BF[@]}"
  got=$(query_q "$TSD_PORT" "${QS[0]}")
  check_eq "$point: every acknowledged point (telnet + $acked requests) is read after the restart" \
    0 "$(acked_present "$got" "$acked")"
  send_http "$TSD_PORT" "$acked" >/dev/null
  check_eq "$point: the rest sent again: the answers of a head-off TSD" "$want_all" \
    "$(queries_all "$TSD_PORT")"
  tsd_stop
  unset TSD_DATA
done

# a short idle time: everything goes as hour cells, and the whole head log is released
CTSDB_NOW_MS=$NOW_MS tsd_start --tsd.storage.head.enable=true --tsd.storage.head.backfill_idle_ms=1000
data=$TSD_DATA
check_eq "idle run: telnet synced, 16 HTTP requests acknowledged" "net.o 16" "$(send_all "$TSD_PORT")"
chunks=""
for _ in $(seq 1 300); do
  chunks=$(tsd_stat "$TSD_PORT" "tsd.head.chunks")
  segs=$(ls "$data"/head/wal-*.log 2>/dev/null | wc -l)
  [ "$chunks" = 0 ] && [ "$segs" = 0 ] && break
  sleep 0.1
done
check_eq "the idle hand-off empties the head" 0 "$chunks"
check_eq "the idle hand-off releases the whole head log (no segment left)" 0 \
  "$(ls "$data"/head/wal-*.log 2>/dev/null | wc -l)"
check_eq "every series-hour is one hour cell" 20 "$(tsd_stat "$TSD_PORT" "tsd.storage.data.cells type=hour")"
check_eq "no single cell" 0 "$(tsd_stat "$TSD_PORT" "tsd.storage.data.cells type=point")"
check_eq "after the idle hand-off: the answers of a head-off TSD" "$want_all" "$(queries_all "$TSD_PORT")"
check_eq "after the idle hand-off: the last points of a head-off TSD" "$want_last" "$(last_all "$TSD_PORT")"
# a later point of a handed-off hour is read with the hour
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$TSD_PORT/api/put" \
  -d "{\"metric\":\"bf.m\",\"timestamp\":$((H + 30)),\"value\":5,\"tags\":{\"host\":\"a\"}}")
check_eq "a late point acknowledged" 204 "$code"
check_eq "1201 points" 1201 "$(npoints "$(query_q "$TSD_PORT" "${QS[0]}")")"
tsd_stop
check_eq "clean stop" 0 "$?"
TSD_DATA=$data CTSDB_NOW_MS=$NOW_MS tsd_start --tsd.storage.head.enable=true
check_eq "after a restart: 1201 points" 1201 "$(npoints "$(query_q "$TSD_PORT" "${QS[0]}")")"
tsd_stop
unset TSD_DATA

tsd_logs_check
it_done
