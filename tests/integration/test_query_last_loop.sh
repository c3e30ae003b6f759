#!/usr/bin/env bash
# test_query_last_loop.sh - /api/query/last answered on the network loop (within its budget of
# store work, tsd.query.last.loop_us of time) and by the workers (over the budget, or with
# tsd.query.last.on_loop=false): the same bytes either way (statuses, headers but Date, bodies;
# GET and POST, resolve, pretty, jsonp, gzip, errors); on one keep-alive connection, pipelined
# last queries mixed with puts, slow range queries and over-budget last queries are answered in
# request order, a put is seen
# by the last query after it, a client that reads late gets every answer in order, and
# Connection: close and a half-closed socket end the connection after the answer; a worker's
# request finished without waking the loop (parked) does not hold up shutdown or the socket
# timeout of its idle connection. Range queries: tsd.query.scan_threads and the tsd.query.scans
# counters.
source "$(dirname "$0")/lib.sh"

# the windows are relative to the current hour: keep clear of an hour's last minute
NOW=$(date +%s)
if [ $((NOW % 3600)) -gt 3540 ]; then sleep $((3600 - NOW % 3600 + 1)); NOW=$(date +%s); fi
H=$((NOW - NOW % 3600))
# the loop's time budget well above these queries' cost, so that the counted budgets alone
# decide where each runs (at the default 200 us a page fault or a preemption sent one to a
# worker once); qlast_run_bounded's deadline has its own unit test (test_qlast)
# The counted budgets (LAST_LOOP_MAX_SCANS in tsd/api_query.c) count discovery scans per salt
# bucket, so which of these queries fit on the loop depends on the key layout: this test uses
# OpenTSDB's unsalted layout, explicitly (the default is salted).
# backfill into the head off: the closed hours' points are stored at once, so the newest-hour
# index answers sys.lat without back_scan (held in the head, the index has none of them until
# their hand-off and the query falls back to a 24-hour scan, past the loop's budget)
tsd_start --tsd.query.last.loop_us=50000 --tsd.storage.salt.width=0 \
  --tsd.storage.head.backfill_idle_ms=0
# sys.lat: 6 series over the last 3 hours; sys.wide: 300 series in this hour (300 row keys for
# a metric-only query: over the loop's budget of 160, so it goes to a worker)
{
  for s in 0 1 2 3 4 5; do
    dc=q; [ $((s % 2)) -eq 0 ] && dc=r
    for h in 0 1 2; do
      echo "put sys.lat $((H - h * 3600 + 7 * s + h)) $((100 * s + h)) host=h$s dc=$dc"
    done
  done
  echo "put sys.lat $((H + 36)) 2.5 host=h5 dc=q"
  for i in $(seq 0 299); do echo "put sys.wide $((H + i % 60)) $i host=w$i dc=q"; done
  echo version
} | tsd_talk >/dev/null

py=$(it_tmpdir)/http.py
cat >"$py" <<'EOF'
import gzip, json, socket, sys, time

def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s

def request(method, path, body=b"", extra=""):
    if isinstance(body, str):
        body = body.encode()
    head = "%s %s HTTP/1.1\r\nHost: x\r\n%s" % (method, path, extra)
    if method == "POST":
        head += "Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
    return head.encode() + b"\r\n" + body

class Reader:
    def __init__(self, s):
        self.s, self.buf, self.eof = s, b"", False
    def fill(self):
        b = self.s.recv(1 << 16)
        if not b:
            self.eof = True
            raise EOFError
        self.buf += b
    def line(self):
        while b"\r\n" not in self.buf:
            self.fill()
        l, self.buf = self.buf.split(b"\r\n", 1)
        return l
    def take(self, n):
        while len(self.buf) < n:
            self.fill()
        d, self.buf = self.buf[:n], self.buf[n:]
        return d
    def answer(self):
        """(status line, headers without Date, body bytes)"""
        status = self.line().decode()
        hdrs, length, chunked = [], None, False
        while True:
            l = self.line().decode()
            if not l:
                break
            k, v = l.split(":", 1)
            if k.lower() != "date":
                hdrs.append(l)
            if k.lower() == "content-length":
                length = int(v)
            if k.lower() == "transfer-encoding" and "chunked" in v:
                chunked = True
        if chunked:
            body = b""
            while True:
                n = int(self.line().split(b";")[0], 16)
                if n == 0:
                    self.line()
                    break
                body += self.take(n)
                self.take(2)
        else:
            body = self.take(length or 0)
        return status, hdrs, body
    def closed(self):
        try:
            while True:
                self.fill()
        except EOFError:
            return self.buf == b""
        except OSError:
            return False

def show(a):
    status, hdrs, body = a
    if any(h.lower().startswith("content-encoding: gzip") for h in hdrs):
        body = b"gunzipped:" + gzip.decompress(body)
    return "%s | %s | %s" % (status, "; ".join(hdrs), body.decode("utf-8", "replace"))

mode, port = sys.argv[1], int(sys.argv[2])
H = int(sys.argv[3]) if len(sys.argv) > 3 else 0
L1 = "/api/query/last?timeseries=sys.lat%7Bhost=h1,dc=q%7D&back_scan=2"
WIDE = "/api/query/last?timeseries=sys.wide&back_scan=1"
if mode == "answers":
    # each on its own connection; printed for comparison between the two TSD settings
    reqs = [
        ("GET", L1, ""),
        ("GET", "/api/query/last?timeseries=sys.lat%7Bdc=q%7D&resolve=true&back_scan=3", ""),
        ("GET", "/api/query/last?timeseries=sys.lat&back_scan=0", ""),
        ("GET", "/api/query/last?timeseries=sys.lat%7Bhost=h5%7D&back_scan=1", ""),
        ("POST", "/api/query/last", '{"queries":[{"metric":"sys.lat","tags":{"host":"h2"}},'
         '{"metric":"sys.lat","tags":{"host":"h3"}}],"resolveNames":true,"backScan":2}'),
        ("GET", WIDE, ""),
        ("GET", WIDE + "&resolve", "Accept-Encoding: gzip\r\n"),
        ("GET", L1 + "&resolve&pretty", ""),
        ("GET", L1 + "&jsonp=cb", ""),
        ("GET", "/api/query/last?timeseries=sys.nope", ""),
        ("GET", "/api/query/last?timeseries=sys.lat%7Bhost=nobody%7D", ""),
        ("GET", "/api/query/last?tsuids=ZZ", ""),
        ("GET", "/api/query/last?timeseries=sys.lat&back_scan=x", ""),
        ("POST", "/api/query/last", '{"queries":[{"metric":"sys.lat"}],"backScan":"y"}'),
    ]
    for m, p, extra in reqs:
        s = connect(port)
        s.sendall(request(m, p, "", extra) if m == "GET" else request(m, p, extra))
        print(show(Reader(s).answer()))
        s.close()
elif mode == "pipeline":
    put = '{"metric":"sys.lat","timestamp":%d,"value":4242,"tags":{"host":"h1","dc":"q"}}' % (H + 3000)
    reqs = [request("GET", L1),
            request("POST", "/api/put", put),
            request("GET", L1),
            request("GET", "/api/query?start=%d&m=sum:sys.wide" % (H - 3600)),
            request("GET", WIDE),
            request("GET", "/api/version"),
            request("GET", L1, extra="Connection: close\r\n")]
    s = connect(port)
    s.sendall(b"".join(reqs))
    r = Reader(s)
    out = []
    for _ in reqs:
        st, _, body = r.answer()
        code = st.split()[1]
        if b'"tsuid"' in body and body.count(b'"tsuid"') == 1:
            kind = "last=" + str(json.loads(body)[0]["value"])
        elif b'"tsuid"' in body:
            kind = "last*%d" % body.count(b'"tsuid"')
        elif b'"dps"' in body:
            kind = "query"
        elif b'"version"' in body:
            kind = "version"
        else:
            kind = "empty" if not body else "other"
        out.append("%s:%s" % (code, kind))
    out.append("closed" if r.closed() else "open")
    print(" ".join(out))
elif mode == "late":
    # 200 pipelined requests alternating loop and worker last queries, read only after 1 s
    s = connect(port)
    s.sendall(b"".join(request("GET", L1 if i % 2 == 0 else WIDE) for i in range(200)))
    time.sleep(1)
    r = Reader(s)
    bad = 0
    for i in range(200):
        st, _, body = r.answer()
        n = body.count(b'"tsuid"')
        if not st.startswith("HTTP/1.1 200") or n != (1 if i % 2 == 0 else 300):
            bad += 1
    print("answers in order" if bad == 0 else "%d answers out of order" % bad)
elif mode == "hold":
    # an answered request, then an idle keep-alive connection until the server closes it
    s = connect(port)
    s.settimeout(25)
    s.sendall(request("GET", WIDE))
    r = Reader(s)
    st, _, body = r.answer()
    print(st.split()[1], body.count(b'"tsuid"'), flush=True)
    print("closed by the server" if r.closed() else "not closed", flush=True)
elif mode == "halfclose":
    s = connect(port)
    s.sendall(request("GET", L1))
    s.shutdown(socket.SHUT_WR)
    r = Reader(s)
    st, _, body = r.answer()
    print(st.split()[1], body.count(b'"tsuid"'), "closed" if r.closed() else "open")
EOF

on=$(python3 "$py" answers "$TSD_PORT")
stat() { curl -s -m 10 "http://127.0.0.1:$TSD_PORT/api/stats" | python3 -c '
import json, sys
for d in json.load(sys.stdin):
    if d["metric"] == "tsd.query.last" and d["tags"].get("type") == sys.argv[1]:
        print(d["value"])' "$1"; }
# of the 14: the loop answered 7 queries of 1-6 series and 3 with an unknown name or a bad
# TSUID (found there); the two sys.wide ones (300 series) went past its budget; the 2 with a
# bad back_scan were refused by the parser before
check_eq "last queries answered on the loop" 10 "$(stat loop)"
check_eq "last queries past the loop's budget" 2 "$(stat over_loop_budget)"
check_eq "no waits on the loop" 0 "$(stat loop_waits)"
check_contains "the loop answers a fully tagged series" "$on" '"timestamp":'"$((H + 7))"'000,"value":"100","tsuid":'
check_contains "the loop answers a double" "$on" '"value":"2.5"'
check_contains "an over-budget query is answered (gzipped, 300 series)" "$on" 'gunzipped:[{"metric":"sys.wide"'
check_contains "unknown metric is 400" "$on" 'HTTP/1.1 400 Bad Request'
check_eq "14 answers" 14 "$(echo "$on" | grep -c '^HTTP/1.1 ')"

check_eq "pipelined last queries, a put, a range query, an over-budget last and version keep their order" \
  "200:last=100 204:empty 200:last=4242 200:query 200:last*300 200:version 200:last=4242 closed" \
  "$(python3 "$py" pipeline "$TSD_PORT" "$H")"
check_eq "a client reading late gets 200 alternating loop and worker answers in order" \
  "answers in order" "$(python3 "$py" late "$TSD_PORT")"
check_eq "a half-closed connection gets its answer, then is closed" "200 1 closed" \
  "$(python3 "$py" halfclose "$TSD_PORT")"
check "the TSD still answers" curl -sf -m 10 "http://127.0.0.1:$TSD_PORT/api/version" -o /dev/null
on2=$(python3 "$py" answers "$TSD_PORT")
tsd_stop

# a loop time budget of 1 us: a query of 3 series over 4 hours (tens of us of store work) passes
# it and is answered by a worker, counted as over the loop's budget (the default runs it on the
# loop, above)
tsd_start --tsd.query.last.loop_us=1
check_contains "over tsd.query.last.loop_us a worker answers" \
  "$(curl -s -m 10 "http://127.0.0.1:$TSD_PORT/api/query/last?timeseries=sys.lat%7Bdc=q%7D&back_scan=3")" \
  '"tsuid":'
check_eq "... counted as past the loop's budget" "0 1" "$(stat loop) $(stat over_loop_budget)"
tsd_stop

# the same data with every last query on the workers: the same bytes
tsd_start --tsd.query.last.on_loop=false
off=$(python3 "$py" answers "$TSD_PORT")
check_eq "with tsd.query.last.on_loop=false no last query runs on the loop" "0 0" \
  "$(stat loop) $(stat over_loop_budget)"
check_eq "the loop and the workers give the same answers" "$off" "$on2"
check_eq "pipelining with the loop path off" \
  "200:last=4242 204:empty 200:last=4242 200:query 200:last*300 200:version 200:last=4242 closed" \
  "$(python3 "$py" pipeline "$TSD_PORT" "$H")"
check_eq "a client reading late gets 200 worker answers in order" \
  "answers in order" "$(python3 "$py" late "$TSD_PORT")"
check_eq "a half-closed connection gets its worker's answer, then is closed" "200 1 closed" \
  "$(python3 "$py" halfclose "$TSD_PORT")"
# a worker's finished request on an idle keep-alive connection (left to the loop's next
# callback) does not hold up the shutdown
hold=$(it_tmpdir)/hold.out
python3 "$py" hold "$TSD_PORT" >"$hold" 2>&1 &
hold_pid=$!
for _ in $(seq 1 100); do grep -q '^200' "$hold" && break; sleep 0.1; done
check_eq "an idle connection after a worker's answer" "200 300" "$(head -1 "$hold")"
tsd_stop
wait "$hold_pid"
check_eq "shutdown closes it" "closed by the server" "$(sed -n 2p "$hold")"
check_contains "shutdown completes" "$(cat "$TSD_LOG")" "shutdown complete"

# the same with tsd.core.socket.timeout: the idle connection's timeout finds the parked request
tsd_start --tsd.query.last.on_loop=false --tsd.core.socket.timeout=1
python3 "$py" hold "$TSD_PORT" >"$hold" 2>&1
check_eq "a parked request's idle connection is closed by its timeout" \
  "200 300|closed by the server" "$(head -1 "$hold")|$(sed -n 2p "$hold")"
check "the TSD still answers after the timeout" curl -sf -m 10 "http://127.0.0.1:$TSD_PORT/api/version" -o /dev/null
tsd_stop
check_contains "shutdown completes after the timeout" "$(cat "$TSD_LOG")" "shutdown complete"

# range queries: tsd.query.scan_threads and the /api/stats counters of the threads they used
# (a 3-hour window is cut into time slices, so two threads share it)
scans() { curl -s -m 10 "http://127.0.0.1:$TSD_PORT/api/stats" | python3 -c '
import json, sys
v = {d["tags"].get("type"): d["value"] for d in json.load(sys.stdin) if d["metric"] == "tsd.query.scans"}
print(v.get("parallel"), v.get("one_thread_cpus_busy"))'; }
range_q="/api/query?start=$((H - 3 * 3600))&m=sum:sys.lat"
for threads in 2 1; do
  tsd_start --tsd.query.scan_threads=$threads
  a=$(curl -s -m 10 "http://127.0.0.1:$TSD_PORT$range_q")
  b=$(curl -s -m 10 "http://127.0.0.1:$TSD_PORT$range_q")
  check_contains "scan_threads=$threads: the range query answers" "$a" '"metric":"sys.lat"'
  check_eq "scan_threads=$threads: the same answer twice" "$a" "$b"
  [ "$threads" = 2 ] && two=$a
  [ "$threads" = 1 ] && check_eq "one thread and two give the same answer" "$two" "$a"
  check_eq "scan_threads=$threads: queries on several threads / on one for busy CPUs" \
    "$([ "$threads" = 2 ] && echo 2 || echo 0) 0" "$(scans)"
  tsd_stop
done
it_done
