#!/usr/bin/env bash
# test_wal_release.sh - the logs are released while the TSD runs: points of closed hours sent
# through telnet and HTTP go through the head (its log under head/) and the store (its log under
# wal/); once the writes stop, the head hands the hours off without waiting for another write
# and the store flushes its quiet regions (tsd.storage.quiet_flush_ms), so neither directory
# keeps a log segment while the TSD runs and every point is still answered. Then a second batch
# is acknowledged and the TSD killed with SIGKILL: after a restart every acknowledged point of
# both batches is there (the released logs lost nothing, the new segments replay). Last, an hour
# that closes while nothing is written is handed off and both logs released all the same.
source "$(dirname "$0")/lib.sh"

QUIET_MS=3000
tsd_start --tsd.storage.quiet_flush_ms=$QUIET_MS
data=$TSD_DATA
# every point two days back: their hours are closed, so the head hands them off at once
base=$(( ($(date +%s) - 2 * 86400) / 3600 * 3600 ))

# log_segments: how many log segments wal/ and head/ hold (files named *.log)
log_segments() { find "$data/wal" "$data/head" -name '*.log' 2>/dev/null | wc -l; }
log_list() { find "$data/wal" "$data/head" -name '*.log' -printf '%p %s bytes; ' 2>/dev/null; }
log_bytes() { find "$data/wal" "$data/head" -name '*.log' -printf '%s\n' 2>/dev/null | awk '{s += $1} END {print s + 0}'; }

# telnet PORT METRIC HOSTS POINTS: sends HOSTS x POINTS puts (10 s apart from base) on one
# connection, then `version`; prints "acked" once its reply came (it acknowledges every put)
telnet_load() {
  python3 -c '
import socket, sys
port, metric, hosts, points, base = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
s = socket.create_connection(("127.0.0.1", int(port)), timeout=60)
lines = "".join("put %s %d %d host=h%d\n" % (metric, base + 10 * p, p, h)
                for h in range(hosts) for p in range(points))
s.sendall((lines + "version\n").encode())
out = b""
while b"built at revision" not in out:
    b = s.recv(65536)
    if not b:
        break
    out += b
print("acked" if b"built at revision" in out else "no ack: %r" % out[-300:])
sys.stdout.flush()
import os; os._exit(0)  # no close: the TSD may be killed with the connection open
' "$TSD_PORT" "$1" "$2" "$3" "$base"
}

# count METRIC: points of METRIC in [base, base + 1 d) as the TSD answers them
count() {
  curl -s -m 60 "http://127.0.0.1:$TSD_PORT/api/query?start=$base&end=$((base + 86400))&m=sum:0all-count:$1" |
    python3 -c '
import json, sys
try:
    print(int(sum(float(v) for r in json.load(sys.stdin) for v in r["dps"].values())))
except Exception:
    print(0)'
}

# batch 1: 50 series x 720 points (2 hours) through telnet, 20 series x 360 through HTTP
check_eq "telnet batch 1 acknowledged" acked "$(telnet_load wr.telnet 50 720)"
body=$(it_tmpdir)/body.json
python3 -c '
import json, sys
b = int(sys.argv[1])
print(json.dumps([{"metric": "wr.http", "timestamp": b + 10 * p, "value": p, "tags": {"host": "h%d" % h}}
                  for h in range(20) for p in range(360)]))' "$base" >"$body"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$TSD_PORT/api/put" --data-binary "@$body")
check_eq "HTTP batch 1 acknowledged" 204 "$code"
# right after the acknowledgements the points are in the logs (the quiet period is 3 s)
before=$(log_bytes)
check "the logs hold the acknowledged points at first ($before bytes)" test "$before" -gt 0

# the writes stop: wait (polling, at most the quiet period + 60 s) until no log segment is left
t0=$(date +%s)
deadline=$((t0 + QUIET_MS / 1000 + 60))
while [ "$(log_segments)" -gt 0 ] && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.2; done
check_eq "wal/ and head/ keep no log segment while the TSD runs (after $(($(date +%s) - t0)) s) [$(log_list)]" \
  0 "$(log_segments)"
check "the TSD still runs" kill -0 "$TSD_PID"
sst=$(find "$data/sst" -name '*.sst' | wc -l)
check "the points are in block files ($sst)" test "$sst" -gt 0
check_eq "every telnet point answered while running" 36000 "$(count wr.telnet)"
check_eq "every HTTP point answered while running" 7200 "$(count wr.http)"

# batch 2 into the released store, acknowledged, then kill -9 before any quiet flush
check_eq "telnet batch 2 acknowledged" acked "$(telnet_load wr.late 30 360)"
check "batch 2 is in a new log segment" test "$(log_segments)" -gt 0
kill -KILL "$TSD_PID"
wait "$TSD_PID" 2>/dev/null

TSD_DATA=$data
tsd_start --tsd.storage.quiet_flush_ms=$QUIET_MS
check_eq "after kill -9: every telnet point of batch 1" 36000 "$(count wr.telnet)"
check_eq "after kill -9: every HTTP point of batch 1" 7200 "$(count wr.http)"
check_eq "after kill -9: every acknowledged point of batch 2" 10800 "$(count wr.late)"
tsd_stop
check_eq "clean stop after recovery" 0 "$?"
check_eq "no log segment after the clean stop [$(log_list)]" 0 "$(log_segments)"

# an hour that closes while no write comes: the previous hour, held open until ~12 s from now by
# the grace (tsd.storage.ctsdb.compaction_delay); its points stay in the head (and its log)
# until then, and are handed off and released without another write
now=$(date +%s)
hour=$(( now / 3600 * 3600 - 3600 ))
grace=$(( now + 12 - hour - 3600 ))
TSD_DATA=$data
tsd_start --tsd.storage.quiet_flush_ms=$QUIET_MS --tsd.storage.ctsdb.compaction_delay=$grace
base=$hour
check_eq "telnet batch 3 (an hour still open) acknowledged" acked "$(telnet_load wr.open 20 300)"
heads=$(find "$data/head" -name '*.log' | wc -l)
check "the open hour's points are in the head's log ($heads segment)" test "$heads" -gt 0
t0=$(date +%s)
deadline=$((t0 + 12 + QUIET_MS / 1000 + 60))
while [ "$(log_segments)" -gt 0 ] && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.2; done
check_eq "once the hour closed, no log segment is left without another write (after $(($(date +%s) - t0)) s) [$(log_list)]" \
  0 "$(log_segments)"
check_eq "every point of the closed hour answered" 6000 "$(count wr.open)"
kill -KILL "$TSD_PID"
wait "$TSD_PID" 2>/dev/null
tsd_start --tsd.storage.quiet_flush_ms=$QUIET_MS
check_eq "after kill -9: every point of batch 3" 6000 "$(count wr.open)"
tsd_stop
check_eq "clean stop" 0 "$?"
tsd_logs_check
it_done
