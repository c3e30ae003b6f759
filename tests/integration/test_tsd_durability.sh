#!/usr/bin/env bash
# test_tsd_durability.sh - the durability contract: a datapoint acknowledged by the TSD (HTTP
# 204, or the answer to a later telnet command on the same connection) is in the write-ahead
# log, so it survives kill -9: after a restart every acknowledged point is in the store.
source "$(dirname "$0")/lib.sh"

tsd_start
data=$TSD_DATA

# HTTP: 20 series in one body, acknowledged with 204
body=$(python3 -c 'import json; print(json.dumps([{"metric":"dur.http","timestamp":1356998400,"value":i,"tags":{"host":"h%d" % i}} for i in range(20)]))')
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$TSD_PORT/api/put" -d "$body")
check_eq "HTTP put acknowledged" 204 "$code"

# telnet: 100 series, then `version`; its answer acknowledges every earlier put
ack=$(python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
lines = "".join("put dur.telnet 1356998400 %d host=h%d\n" % (i, i) for i in range(100))
s.sendall((lines + "version\n").encode())
out = b""
while out.count(b"\n") < 2:
    b = s.recv(4096)
    if not b:
        break
    out += b
print("acked" if b"built at revision" in out else "no ack: %r" % out)
# no close: the TSD is killed with the connection open
sys.stdout.flush()
import os; os._exit(0)
' "$TSD_PORT")
check_eq "telnet puts acknowledged by the version reply" "acked" "$ack"

kill -KILL "$TSD_PID"
wait "$TSD_PID" 2>/dev/null

TSD_DATA=$data
tsd_start
check_contains "restart after kill -9 recovers" "$(cat "$TSD_LOG")" "listening on"
tsd_stop
check_eq "clean stop after recovery" 0 "$?"

uids=$("$CTSDB" shell --data "$data" -e "scan 'tsdb-uid'" 2>&1)
check_contains "the HTTP metric survived" "$uids" "dur.http column=id:metrics"
check_contains "the telnet metric survived" "$uids" "dur.telnet column=id:metrics"
rows=$("$CTSDB" shell --data "$data" -e "count 'tsdb'" 2>&1)
check_contains "every acknowledged series is in the store (20 + 100 rows)" "$rows" "120 row(s)"
it_done
