#!/usr/bin/env bash
# test_snapshot_tsd.sh - whole-store snapshots of a running TSD and offline restore: the TSD
# ingests, a snapshot is taken through POST /api/admin/snapshot while a writer keeps writing,
# more data (new points, a new series, a new metric) is written after it, the TSD is stopped,
# `ctsdb restore` puts the snapshot back, the TSD is started again, and every query answer
# captured at snapshot time is answered again byte for byte; the writer's points are exactly
# a prefix of its acknowledged writes (each one acknowledged before the snapshot call, none
# after it returned). Also: `ctsdb snapshot` / `ctsdb restore` refuse a store a TSD holds, the
# endpoint is an admin action, and the offline `ctsdb snapshot` and shell listing.
source "$(dirname "$0")/lib.sh"

BASE=1356998400
req() { # METHOD PATH [curl args...]: "<status> <body>"
  local m=$1 p=$2
  shift 2
  curl -sg -m 60 -X "$m" -w ' %{http_code}' "$@" "http://127.0.0.1:$TSD_PORT$p" |
    awk '{s=$NF; $NF=""; sub(/ $/,""); print s" "$0}'
}
put_lines() { # telnet-free: one /api/put with the JSON array on stdin
  curl -s -m 60 -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    --data-binary @- "http://127.0.0.1:$TSD_PORT/api/put"
}
points_json() { # METRIC FROM TO HOSTS VALUE_BASE: a JSON array of points
  python3 -c 'import json,sys
m, a, b, hosts, vb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(","), int(sys.argv[5])
print(json.dumps([{"metric": m, "timestamp": t, "value": vb + t % 97 + i, "tags": {"host": h, "dc": "eu" if i % 2 else "us"}}
                  for t in range(a, b, 10) for i, h in enumerate(hosts)]))' "$@"
}
QUERIES=(
  "/api/query?start=$BASE&end=$((BASE + 7200))&m=sum:snap.fixed"
  "/api/query?start=$BASE&end=$((BASE + 7200))&m=avg:snap.fixed%7Bhost=*%7D"
  "/api/query?start=$BASE&end=$((BASE + 7200))&m=max:10m-avg:snap.fixed%7Bdc=eu%7D"
  "/api/query?start=$BASE&end=$((BASE + 7200))&m=sum:rate:snap.fixed%7Bhost=web01%7Cweb02%7D"
  "/api/query?start=$BASE&end=$((BASE + 7200))&m=sum:snap.after"
  "/api/suggest?type=metrics&q=snap"
  "/api/suggest?type=tagv&q=web"
)
capture() { # prints every query's answer, one per line
  local q
  for q in "${QUERIES[@]}"; do req GET "$q"; done
}

tsd_start --tsd.core.enable_admin=true
DATA=$TSD_DATA
check_eq "the first points are stored" 204 "$(points_json snap.fixed $BASE $((BASE + 3600)) web01,web02,web03 0 | put_lines)"

# ---- while the TSD runs: the direct tools are refused, the endpoint works ---------------------
out=$("$CTSDB" snapshot --data "$DATA" s0 2>&1)
check_eq "ctsdb snapshot refuses a store a TSD holds" 1 $?
check_contains "and says why" "$out" "is in use by another process"
check_contains "and where to go" "$out" "POST /api/admin/snapshot?name=s0"
out=$("$CTSDB" restore --data "$DATA" s0 2>&1)
check_eq "ctsdb restore refuses a store a TSD holds" 1 $?
check_contains "restore says why" "$out" "is in use by another process"
check_contains "a bad name is a 400" "$(req POST '/api/admin/snapshot?name=a%20b')" '400 {"error":{"code":400'
check_contains "a missing name is a 400" "$(req POST /api/admin/snapshot)" "Missing parameter"

# a writer that writes one point per request and records how many were acknowledged
acked=$(it_tmpdir)/acked
echo 0 >"$acked"
python3 - "$TSD_PORT" "$acked" "$BASE" <<'PY' &
import json, sys, time, urllib.request
port, path, base = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
deadline = time.time() + 60
for i in range(3000):
    if time.time() > deadline:
        break
    body = json.dumps({"metric": "snap.live", "timestamp": base + i, "value": i, "tags": {"w": "1"}}).encode()
    req = urllib.request.Request("http://127.0.0.1:%d/api/put" % port, data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        if r.status != 204:
            break
    with open(path + ".tmp", "w") as f:
        f.write(str(i + 1))
    import os
    os.replace(path + ".tmp", path)
PY
WRITER=$!
IT_PIDS+=("$WRITER")
for _ in $(seq 1 300); do [ "$(cat "$acked")" -ge 100 ] && break; sleep 0.1; done
before=$(capture)
lo=$(cat "$acked")
snap=$(req POST '/api/admin/snapshot?name=s1')
hi=$(cat "$acked")
check_contains "the snapshot is taken while the writer writes" "$snap" '200 {"name":"s1","table":"","tables":3,"created":'
check_contains "a second snapshot of the name is a 409" "$(req POST '/api/admin/snapshot?name=s1')" '409 '
check_contains "the snapshot is listed" "$(req GET /api/admin/snapshot)" '"name":"s1"'
wait "$WRITER"
total=$(cat "$acked")
check "the writer wrote on after the snapshot" test "$total" -gt "$hi"

# ---- after the snapshot: new points, a new series, a new metric ------------------------------
check_eq "later points are stored" 204 "$(points_json snap.fixed $((BASE + 3600)) $((BASE + 7200)) web01,web04 5 | put_lines)"
check_eq "a later metric is stored" 204 "$(points_json snap.after $BASE $((BASE + 600)) web01 0 | put_lines)"
after=$(capture)
check "the later writes changed the answers" test "$before" != "$after"
tsd_stop

# ---- offline: restore, then the answers of snapshot time ------------------------------------
out=$("$CTSDB" restore --data "$DATA" nosuch 2>&1)
check_eq "restoring an unknown snapshot fails" 1 $?
check_contains "and names it" "$out" "Snapshot 'nosuch' doesn't exist"
out=$("$CTSDB" restore --data "$DATA" s1 2>&1)
check_eq "ctsdb restore exits 0" 0 $?
check_contains "ctsdb restore says what it did" "$out" "snapshot s1 restored"
tsd_start --tsd.core.enable_admin=true
restored=$(capture)
check_eq "every query answer is the one of snapshot time" "$before" "$restored"
live=$(req GET "/api/query?start=$BASE&end=$((BASE + 7200))&m=sum:snap.live")
k=$(printf '%s' "${live#200 }" | python3 -c 'import json,sys
d = json.load(sys.stdin)
ts = sorted(int(t) for t in d[0]["dps"]) if d else []
base = int(sys.argv[1])
# the points must be writes 0..k-1 with their values, nothing else
ok = ts == [base + i for i in range(len(ts))] and all(d[0]["dps"][str(t)] == t - base for t in ts)
print(len(ts) if ok else "gap")' "$BASE")
check "the writer's points are a prefix of its writes ($lo <= $k <= $hi)" \
  test "$k" != gap -a "$k" -ge "$lo" -a "$k" -le "$hi"
tsd_stop

# ---- offline snapshot and the shell's view --------------------------------------------------
out=$("$CTSDB" snapshot --data "$DATA" s2 2>&1)
check_eq "ctsdb snapshot offline exits 0" 0 $?
out=$("$CTSDB" shell --data "$DATA" -e "list_snapshots" 2>&1)
check_contains "the shell lists the TSD's snapshot" "$out" "s1  (all 3 tables) ("
check_contains "the shell lists the offline snapshot" "$out" "s2  (all 3 tables) ("
check_contains "two snapshots" "$out" "2 row(s)"
out=$("$CTSDB" snapshot --data "$DATA" s2 2>&1)
check_eq "a taken name is refused" 1 $?
check_contains "with the reason" "$out" "Snapshot 's2' already exists"
missing="$(it_tmpdir)/no-such-store"
out=$("$CTSDB" snapshot --data "$missing" s3 2>&1)
check_eq "ctsdb snapshot of a missing directory fails" 1 $?
check_contains "saying so" "$out" "data directory $missing does not exist"
check "and creates no store there" test ! -e "$missing"
out=$("$CTSDB" restore --data "$missing" s1 2>&1)
check_eq "ctsdb restore into a missing directory fails" 1 $?
check "and creates nothing" test ! -e "$missing"
out=$("$CTSDB" fsck --data "$DATA" 2>&1)
check_eq "fsck finds the restored store clean" 0 $?

# ---- the endpoint is an admin action ---------------------------------------------------------
tsd_start
check_contains "without tsd.core.enable_admin a snapshot is refused" \
  "$(req POST '/api/admin/snapshot?name=s3')" '403 {"error":{"code":403,"message":"Forbidden"'
check_contains "and so is the listing" "$(req GET /api/admin/snapshot)" '403 '
tsd_stop
check "the refused snapshot was not taken" test ! -e "$DATA/snapshots/s3"
it_done
