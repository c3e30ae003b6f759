#!/usr/bin/env bash
# test_tsd_head_bigtable.sh - the ingest head on the Bigtable backend (Google's Bigtable emulator),
# the clock pinned by CTSDB_NOW_MS: the head is off by default there (TSDs sharing one store do not
# see each other's heads) and on when set; with it on, 400 points of 3 series in one open hour
# write no data cell until the hour closes, then exactly one cell per series (3 mutations, counted
# by /api/stats tsd.storage.data.cells type=hour), where the head-less TSD writes one per point
# (400); both answer the same points.
# The emulator runs on 127.0.0.1 port 0 and is stopped by PID. Without the emulator (or a
# BIGTABLE=1 build) the script prints a SKIP line; with CI=true a missing emulator fails.
source "$(dirname "$0")/lib.sh"

EMULATOR=/usr/lib/google-cloud-sdk/platform/bigtable-emulator/cbtemulator
if [ ! -x "$EMULATOR" ]; then
  if [ "${CI:-}" = true ]; then not_ok "bigtable emulator present at $EMULATOR"; it_done; fi
  echo "ok - SKIP head on bigtable: emulator not found at $EMULATOR"
  exit 0
fi
if ! "$CTSDB" version | grep -q "bigtable backend"; then
  echo "ok - SKIP head on bigtable: this build has no bigtable backend (make BIGTABLE=1)"
  exit 0
fi

tmp=$(it_tmpdir)
IT_DIRS+=("$tmp") # it_tmpdir runs in a subshell here
"$EMULATOR" -host 127.0.0.1 -port 0 >"$tmp/emu.log" 2>&1 &
EMU_PID=$!
IT_PIDS+=("$EMU_PID")
addr=""
for _ in $(seq 1 200); do
  addr=$(sed -n 's/.*running on \(127\.0\.0\.1:[0-9][0-9]*\).*/\1/p' "$tmp/emu.log" | head -1)
  [ -n "$addr" ] && break
  kill -0 "$EMU_PID" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$addr" ]; then not_ok "bigtable emulator starts"; cat "$tmp/emu.log"; it_done; fi
export BIGTABLE_EMULATOR_HOST=$addr
BT=--tsd.storage.backend=bigtable

H=1356998400 # 2013-01-01T00:00:00Z
MID_MS=$(((H + 1800) * 1000))
AFTER_MS=$(((H + 3600 + 10) * 1000))
cat >"$tmp/put.py" <<'EOF'
import json, sys, urllib.request
port, H = sys.argv[1], int(sys.argv[2])
pts = []
for i in range(400):
    s = i % 3
    v = i * 1000003 if s == 0 else i * 0.1 if s == 1 else 2.5 * i
    pts.append({"metric": "bth.m", "timestamp": H + i, "value": v, "tags": {"host": "abc"[s]}})
codes = []
for k in range(4):
    body = json.dumps(pts[k * 100:(k + 1) * 100]).encode()
    r = urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:%s/api/put" % port, body), timeout=30)
    codes.append(str(r.status))
print(" ".join(codes))
EOF
cells() { # PORT: "point=N hour=N" from /api/stats tsd.storage.data.cells
  curl -s -m 10 "http://127.0.0.1:$1/api/stats" | python3 -c 'import json, sys
d = {s["tags"]["type"]: s["value"] for s in json.load(sys.stdin) if s["metric"] == "tsd.storage.data.cells"}
print("point=%s hour=%s" % (d.get("point"), d.get("hour")))'
}
query() { # PORT METRIC: every point of METRIC per host in hour H, sorted
  curl -s -m 20 "http://127.0.0.1:$1/api/query?start=$H&end=$((H + 3599))&m=none:$2%7Bhost=*%7D" |
    python3 -c 'import json, sys
r = json.load(sys.stdin)
print(json.dumps(sorted([(x["tags"]["host"], sorted(x["dps"].items())) for x in r]) if isinstance(r, list) else r))'
}

# off by default on Bigtable: one cell per point
unset TSD_DATA
CTSDB_NOW_MS=$MID_MS tsd_start "$BT"
check_eq "head-less TSD on Bigtable acknowledges every put" "204 204 204 204" \
  "$(python3 "$tmp/put.py" "$TSD_PORT" "$H")"
check_eq "the head is off by default on Bigtable: 400 point cells" "point=400 hour=0" "$(cells "$TSD_PORT")"
want=$(query "$TSD_PORT" bth.m)
check_eq "the head-less answer has the 400 points" 400 \
  "$(python3 -c 'import json, sys; print(sum(len(d) for _, d in json.loads(sys.argv[1])))' "$want")"
tsd_stop

# on when set: nothing written while the hour is open, then one cell per series (a second
# metric's rows would mix with the first's, so the head TSD writes its own metric name)
sed -i 's/"bth.m"/"bth.h"/' "$tmp/put.py"
unset TSD_DATA
CTSDB_NOW_MS=$MID_MS tsd_start "$BT" --tsd.storage.head.enable=true
data=$TSD_DATA
check_eq "head TSD on Bigtable acknowledges every put" "204 204 204 204" \
  "$(python3 "$tmp/put.py" "$TSD_PORT" "$H")"
check_eq "while the hour is open no data cell is written" "point=0 hour=0" "$(cells "$TSD_PORT")"
check_eq "the head answers the 400 points at once" "$want" \
  "$(query "$TSD_PORT" bth.h)"
tsd_stop
# past the hour: the restart replays the log and hands the hour off
TSD_DATA=$data CTSDB_NOW_MS=$AFTER_MS tsd_start "$BT" --tsd.storage.head.enable=true
check_contains "the hand-off ran" "$(cat "$TSD_LOG")" "head: handed off 3 series-hours (400 points)"
check_eq "the hour became one mutation per series: 3 hour cells, no point cell" "point=0 hour=3" \
  "$(cells "$TSD_PORT")"
check_eq "after the hand-off Bigtable answers the same 400 points" "$want" \
  "$(query "$TSD_PORT" bth.h)"
tsd_stop

kill -INT "$EMU_PID" 2>/dev/null
for _ in $(seq 1 50); do kill -0 "$EMU_PID" 2>/dev/null || break; sleep 0.1; done
kill -KILL "$EMU_PID" 2>/dev/null
it_done
