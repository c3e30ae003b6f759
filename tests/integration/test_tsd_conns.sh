#!/usr/bin/env bash
# test_tsd_conns.sh - many concurrent clients on the one port: 1000 telnet connections and 40
# HTTP keep-alive connections at once, each writing its own series and reading its answers;
# every client is answered and every series is stored. Bounded: at most 1040 sockets, 120 s.
source "$(dirname "$0")/lib.sh"

tsd_start
out=$(timeout 120 python3 -c '
import socket, sys, threading, json
port = int(sys.argv[1])
ok = {"telnet": 0, "http": 0}
lock = threading.Lock()
errors = []
def telnet(i):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=60)
        lines = "".join("put conns.telnet %d %d conn=c%d\n" % (1356998400 + j, j, i) for j in range(25))
        s.sendall((lines + "version\n").encode())
        out = b""
        while out.count(b"\n") < 2:
            b = s.recv(4096)
            if not b:
                break
            out += b
        s.close()
        if b"built at revision" in out:
            with lock:
                ok["telnet"] += 1
        else:
            errors.append("telnet %d: %r" % (i, out))
    except Exception as e:
        errors.append("telnet %d: %s" % (i, e))
def http(i):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=60)
        f = s.makefile("rb")
        good = 0
        for j in range(5):
            body = json.dumps([{"metric": "conns.http", "timestamp": 1356998400 + j, "value": j,
                                "tags": {"conn": "c%d" % i}}]).encode()
            s.sendall(b"POST /api/put HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            status = f.readline()
            while f.readline() not in (b"\r\n", b""):
                pass
            if status.startswith(b"HTTP/1.1 204"):
                good += 1
        s.close()
        if good == 5:
            with lock:
                ok["http"] += 1
        else:
            errors.append("http %d: %d of 5" % (i, good))
    except Exception as e:
        errors.append("http %d: %s" % (i, e))
threads = [threading.Thread(target=telnet, args=(i,)) for i in range(1000)]
threads += [threading.Thread(target=http, args=(i,)) for i in range(40)]
for t in threads:
    t.start()
for t in threads:
    t.join(90)
print("%d %d" % (ok["telnet"], ok["http"]))
for e in errors[:5]:
    sys.stderr.write(e + "\n")
' "$TSD_PORT")
check_eq "every telnet (1000) and HTTP (40) client was answered" "1000 40" "$out"
stats=$(curl -s "http://127.0.0.1:$TSD_PORT/api/stats")
check_contains "the TSD counted the connections" "$stats" '"metric":"tsd.connectionmgr.connections"'
tsd_stop
check_eq "clean stop" 0 "$?"
rows=$("$CTSDB" shell --data "$TSD_DATA" -e "count 'tsdb'" 2>&1)
check_contains "every client's series is stored (1000 + 40 rows)" "$rows" "1040 row(s)"
it_done
