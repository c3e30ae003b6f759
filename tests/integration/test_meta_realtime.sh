#!/usr/bin/env bash
# test_meta_realtime.sh - OpenTSDB's realtime meta tracking (tsd.core.meta.*) through the real
# daemon: each combination of the keys writes what OpenTSDB 2.4 writes (tsd/metatrack.h), and
# with counting on, four connections writing the same series at once leave its counter equal to
# the points written (no increment lost between writer threads).
source "$(dirname "$0")/lib.sh"

M=tsd.core.meta
get() { curl -sg -m 20 -w ' %{http_code}' "http://127.0.0.1:$TSD_PORT$1"; }
jfield() { python3 -c 'import json,sys; d=json.loads(sys.argv[1].rsplit(" ",1)[0]); print(d.get(sys.argv[2]))' "$1" "$2"; }
# load N: N points each of sys.rt{host=h0..h2} on 4 connections at once (each connection its own
# timestamps), then waits (bounded) until all are queryable
load() {
  local n=$1 pids=()
  for c in 0 1 2 3; do
    python3 - "$TSD_PORT" "$c" "$n" <<'PY' &
import socket, sys
port, c, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
s = socket.create_connection(("127.0.0.1", port), timeout=20)
lines = []
for i in range(n):
    for h in range(3):
        lines.append("put sys.rt %d %d host=h%d\n" % (1700000000 + c * 100000 + i, i, h))
s.sendall(("".join(lines) + "version\n").encode())
buf = b""
while b"\n" not in buf:
    b = s.recv(4096)
    if not b:
        break
    buf += b
s.close()
PY
    pids+=($!)
  done
  wait "${pids[@]}"
  local want=$((4 * n * 3)) got=""
  for _ in $(seq 1 100); do
    got=$(curl -s -m 10 "http://127.0.0.1:$TSD_PORT/api/query?start=1699999999&end=1700400000&m=sum:0all-count:sys.rt" |
      python3 -c 'import json,sys; d=json.load(sys.stdin); print(int(sum(d[0]["dps"].values())) if d else 0)')
    [ "$got" = "$want" ] && break
    sleep 0.1
  done
  check_eq "all $want points queryable" "$want" "$got"
}
tsuid_of() { # tsuid_of HOST
  curl -s -m 10 "http://127.0.0.1:$TSD_PORT/api/query/last?timeseries=sys.rt%7Bhost=$1%7D" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["tsuid"])'
}

# ---- counting: tracking + realtime_ts + incrementing (+ realtime_uid) ------------------------
T0=$(date +%s)
tsd_start --$M.enable_tsuid_tracking=true --$M.enable_realtime_ts=true \
  --$M.enable_tsuid_incrementing=true --$M.enable_realtime_uid=true
load 500
r=$(get "/api/uid/tsmeta?m=sys.rt%7Bhost=h1%7D")
check_contains "counting: a TSMeta was created by the writes" "$r" '"tsuid":"'
check_eq "counting: totalDatapoints = the 2000 points h1 got from 4 connections" 2000 \
  "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1].rsplit(" ",1)[0])[0]["totalDatapoints"])' "$r")"
created=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1].rsplit(" ",1)[0])[0]["created"])' "$r")
check "counting: created is the time of the first write ($created >= $T0)" test "$created" -ge "$T0"
last=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1].rsplit(" ",1)[0])[0]["lastReceived"])' "$r")
check "counting: lastReceived is the last write's time ($last >= $T0)" test "$last" -ge "$T0"
r=$(get "/api/uid/uidmeta?uid=000001&type=metric")
check_contains "realtime_uid: the metric's UIDMeta names it" "$r" '"name":"sys.rt"'
ucreated=$(jfield "$r" created)
check "realtime_uid: the UIDMeta was created at assignment ($ucreated >= $T0)" test "$ucreated" -ge "$T0"
r=$(get "/api/uid/uidmeta?uid=000001&type=tagv")
check "realtime_uid: tag values too" test "$(jfield "$r" created)" -ge "$T0"
# a restart empties the writers' caches: the counter goes on from the stored value
tsd_stop
T0=$T0 TSD_DATA=$TSD_DATA tsd_start --$M.enable_tsuid_tracking=true --$M.enable_realtime_ts=true \
  --$M.enable_tsuid_incrementing=true
exec 3<>/dev/tcp/127.0.0.1/"$TSD_PORT"
printf 'put sys.rt 1700400000 1 host=h1\nput sys.rt 1700400001 1 host=h1\nversion\n' >&3
timeout 5 head -1 <&3 >/dev/null
exec 3>&-
r=$(get "/api/uid/tsmeta?m=sys.rt%7Bhost=h1%7D")
check_eq "counting: after a restart the counter goes on (2002), the TSMeta is kept" "2002 $created" \
  "$(python3 -c 'import json,sys; d=json.loads(sys.argv[1].rsplit(" ",1)[0])[0]; print(d["totalDatapoints"], d["created"])' "$r")"
tsd_stop
unset TSD_DATA

# ---- storeIfNecessary: tracking + realtime_ts: a TSMeta, no counter --------------------------
tsd_start --$M.enable_tsuid_tracking=true --$M.enable_realtime_ts=true
load 20
r=$(get "/api/uid/tsmeta?tsuid=$(tsuid_of h2)")
check_contains "realtime_ts: a TSMeta was created" "$r" '"created":'
check_eq "realtime_ts: no counter (totalDatapoints 0)" 0 "$(jfield "$r" totalDatapoints)"
r=$(get "/api/uid/uidmeta?uid=000001&type=metric")
check_eq "realtime_uid off: no UIDMeta stored (created 0)" 0 "$(jfield "$r" created)"
tsd_stop
unset TSD_DATA

# ---- tracking alone: the counter cell set to 1, no TSMeta ------------------------------------
tsd_start --$M.enable_tsuid_tracking=true
load 20
r=$(get "/api/uid/tsmeta?tsuid=$(tsuid_of h0)")
check_contains "tracking alone: no TSMeta (404)" "$r" '"code":404'
tsd_stop
# the stored cells, as the shell shows them: each of the 3 series has ts_ctr = 1 (8 bytes) and
# no ts_meta
cells=$(echo "scan 'tsdb-meta'" | "$CTSDB" shell --data "$TSD_DATA" 2>&1)
check_eq "tracking alone: a counter of 1 for each series" 3 \
  "$(printf '%s\n' "$cells" | grep -c 'column=name:ts_ctr, .*value=\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x01$')"
check_eq "tracking alone: no ts_meta cell" 0 "$(printf '%s\n' "$cells" | grep -c 'column=name:ts_meta')"
unset TSD_DATA

# ---- realtime_ts without tracking: nothing, as in OpenTSDB -----------------------------------
tsd_start --$M.enable_realtime_ts=true --$M.enable_tsuid_incrementing=true
load 20
r=$(get "/api/uid/tsmeta?tsuid=$(tsuid_of h0)")
check_contains "realtime_ts without tracking: no TSMeta" "$r" '"code":404'
tsd_stop

it_done
