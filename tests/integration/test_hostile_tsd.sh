#!/usr/bin/env bash
# test_hostile_tsd.sh - bad and hostile input against the real TSD (see hostile_tsd.py), then
# the daemon must still be running and shut down cleanly. Then, with tsd.core.socket.timeout
# set, idle and slowloris connections are closed by the TSD while it keeps answering.
source "$(dirname "$0")/lib.sh"
ulimit -n 8192 2>/dev/null || ulimit -n 4096 2>/dev/null
tsd_start
python3 "$(dirname "$0")/hostile_tsd.py" "$TSD_PORT" "$TSD_PID"
if kill -0 "$TSD_PID" 2>/dev/null; then ok "the TSD is still running"; else not_ok "the TSD is still running"; fi
tsd_stop
check_eq "clean shutdown after hostile input" 0 $?

# tsd.core.socket.timeout: a connection silent for that long is closed (idle telnet, a request
# whose headers never finish), others are served meanwhile
tsd_start --tsd.core.socket.timeout=2
out=$(python3 - "$TSD_PORT" <<'PY'
import socket, sys, time, urllib.request
port = int(sys.argv[1])
idle = socket.create_connection(("127.0.0.1", port), timeout=15)
slow = socket.create_connection(("127.0.0.1", port), timeout=15)
slow.sendall(b"GET /api/version HTTP/1.1\r\nHost: x\r\n")
t0 = time.time()
for s, name in ((idle, "idle"), (slow, "slowloris")):
    try:
        data = s.recv(4096)
        print("%s closed after %.1f s (%d bytes)" % (name, time.time() - t0, len(data)))
    except socket.timeout:
        print("%s still open after 15 s" % name)
v = urllib.request.urlopen("http://127.0.0.1:%d/api/version" % port, timeout=10).status
print("version %d" % v)
PY
)
check_contains "socket.timeout: an idle connection is closed" "$out" "idle closed after"
check_contains "socket.timeout: a request whose headers never finish is closed" "$out" "slowloris closed after"
check_contains "socket.timeout: the TSD still answers" "$out" "version 200"
tsd_stop
check_eq "clean shutdown after the timeouts" 0 $?
it_done
