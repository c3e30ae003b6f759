#!/usr/bin/env bash
# test_query_small_loop.sh - small /api/query range queries answered on the network loop
# (tsd/api_query.c (5), query/qexec.h qexec_bound) and the rest by the workers: the same bytes
# either way (statuses, headers but Date, bodies; GET and POST, Grafana's POST, pretty, jsonp,
# gzip, rate, errors), counted in tsd.query.on_loop (answered / over_loop_budget) and in the
# /api/query outcome counters alike; a query over the bound (too many series, datapoints or fill
# buckets) is moved to a worker, one that is not small by its parsed form (no tag filter, more
# than 8 hours) is not tried; and while one connection's pipelined large queries keep the
# workers busy, another connection's small queries are answered on the loop meanwhile.
source "$(dirname "$0")/lib.sh"

# the windows are relative to the current hour: keep clear of an hour's last minute
NOW=$(date +%s)
if [ $((NOW % 3600)) -gt 3540 ]; then sleep $((3600 - NOW % 3600 + 1)); NOW=$(date +%s); fi
# ... and of its first minute (the newest points are written up to 35 s into it)
if [ $((NOW % 3600)) -lt 60 ]; then sleep $((61 - NOW % 3600)); NOW=$(date +%s); fi
H=$((NOW - NOW % 3600))
S=$((H - 3 * 3600)) # every query's start: the window is at most 4 hours
# the loop's time budget well above these queries' cost, so that the counted bounds alone
# decide where each runs (a preemption must not send one to a worker); the time bound has its
# own check below
tsd_start --tsd.query.loop_us=500000
# sys.lat: 6 series over the last 3 hours; sys.wide: 300 series in this hour (more series than
# the loop's 16 key ranges); sys.big: one series of 100,000 points over 2.8 hours (more than the
# loop's 4,096; a worker takes tens of ms to answer it)
{
  for s in 0 1 2 3 4 5; do
    dc=q; [ $((s % 2)) -eq 0 ] && dc=r
    for h in 0 1 2; do
      for k in 0 1 2 3; do
        echo "put sys.lat $((H - h * 3600 - 600 * k + 7 * s)) $((100 * s + 10 * h + k)) host=h$s dc=$dc"
      done
    done
  done
  for i in $(seq 0 299); do echo "put sys.wide $((S + 3600 + i % 60)) $i host=w$i dc=q"; done
  for i in $(seq 0 99999); do echo "put sys.big $((S * 1000 + 100 * i)) $i host=b dc=q"; done
  echo version
} | tsd_talk >/dev/null

py=$(it_tmpdir)/http.py
cat >"$py" <<'EOF'
import gzip, json, socket, statistics, sys, threading, time

def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
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
        self.s, self.buf = s, b""
    def fill(self):
        b = self.s.recv(1 << 16)
        if not b:
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

def show(a):
    status, hdrs, body = a
    if any(h.lower().startswith("content-encoding: gzip") for h in hdrs):
        body = b"gunzipped:" + gzip.decompress(body)
    return "%s | %s | %s" % (status, "; ".join(hdrs), body.decode("utf-8", "replace"))

mode, port, H, S = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def q(m, extra=""):
    return "/api/query?start=%d&m=%s%s" % (S, m, extra)
grafana = json.dumps({
    "start": S * 1000, "end": (H + 1800) * 1000, "msResolution": False,
    "globalAnnotations": True, "showQuery": True,
    "queries": [{"metric": "sys.lat", "aggregator": "sum", "downsample": "1m-avg",
                 "filters": [{"type": "literal_or", "tagk": "host", "filter": "h1|h2",
                              "groupBy": False}]}]})
SMALL = [  # (method, path, body, extra headers): each small by its plan
    ("GET", q("sum:sys.lat%7Bhost=h1%7D"), "", ""),
    ("GET", q("none:sys.lat%7Bdc=q%7D", "&show_tsuids=true"), "", ""),
    ("POST", "/api/query", grafana, ""),
    ("GET", q("none:sys.lat%7Bhost=h0|h1|h2%7D", "&show_query=true"), "", "Accept-Encoding: gzip\r\n"),
    ("GET", q("sum:sys.lat%7Bhost=h1%7D", "&pretty"), "", ""),
    ("GET", q("sum:sys.lat%7Bhost=h1%7D", "&jsonp=cb"), "", ""),
    ("GET", q("sum:rate:sys.lat%7Bhost=h3%7D"), "", ""),
    ("GET", q("avg:10m-max:sys.lat%7Bhost=h1%7D%7Bdc=*%7D"), "", ""),
    ("GET", q("sum:sys.lat%7Bhost=nobody%7D"), "", ""),
    ("GET", q("sum:sys.nope%7Bhost=h1%7D"), "", ""),
]
OVER = [  # tried on the loop, past its bound: series, datapoints, fill buckets
    ("GET", q("sum:sys.wide%7Bdc=q%7D"), "", ""),
    ("GET", q("sum:sys.big%7Bhost=b%7D", "&ms=true"), "", ""),
    ("GET", q("sum:1s-avg-zero:sys.lat%7Bhost=h1%7D", "&end=%d" % H), "", ""),
]
NOT_TRIED = [  # not small by their parsed form: no tag filter, a window of two days
    ("GET", q("sum:sys.wide"), "", ""),
    ("GET", "/api/query?start=%d&m=sum:sys.lat%%7Bhost=h1%%7D" % (H - 48 * 3600), "", ""),
]
# a large query with a small answer: 100,000 points read, 24 written (7 minutes do not divide
# an hour, and `last` is not folded as rows are read: the points are kept, then downsampled)
BIG = "/api/query?start=%d&m=sum:7m-last:sys.big%%7Bhost=b%%7D" % S
if mode == "answers":
    for m, p, body, extra in SMALL + OVER + NOT_TRIED:
        s = connect(port)
        s.sendall(request(m, p, body, extra))
        print(show(Reader(s).answer()))
        s.close()
elif mode == "busy":
    # connection A pipelines K large queries (each over the loop's bound: a worker's); B asks
    # small ones one after another until A has every answer, timing each
    K = 8
    a = connect(port)
    done = threading.Event()
    a_out = []
    def read_a():
        r = Reader(a)
        for _ in range(K):
            st, _, body = r.answer()
            a_out.append((st.split()[1], body.endswith(b'":99999.0}}]')))
        done.set()
    a.sendall(b"".join(request("GET", BIG) for _ in range(K)))
    t0 = time.monotonic()
    th = threading.Thread(target=read_a)
    th.start()
    b = connect(port)
    rb = Reader(b)
    lat, bad = [], 0
    while not done.is_set() and len(lat) < 5000 and time.monotonic() - t0 < 60:
        t1 = time.monotonic()
        b.sendall(request("GET", q("sum:sys.lat%7Bhost=h1%7D")))
        st, _, body = rb.answer()
        lat.append(time.monotonic() - t1)
        bad += not st.startswith("HTTP/1.1 200") or b'"sys.lat"' not in body
    th.join(60)
    busy = time.monotonic() - t0
    print("A: %s" % " ".join("%s:%s" % x for x in a_out))
    print("B: %d answers while A was busy (%.0f ms), %d bad" % (len(lat), busy * 1e3, bad))
    med = statistics.median(lat) if lat else 1e9
    # B's median answer time against A's busy time: a small query that had to wait for A's
    # large ones on the loop would take a large query's time (busy / K)
    print("B's median below A's busy time / (4 K): %s (%.2f ms vs %.2f ms)" %
          (med < busy / (4 * K), med * 1e3, busy * 1e3 / (4 * K)))
EOF

stat() { curl -s -m 10 "http://127.0.0.1:$TSD_PORT/api/stats" | python3 -c '
import json, sys
v = {}
for d in json.load(sys.stdin):
    if d["metric"] == "tsd.query.on_loop":
        v[d["tags"].get("type")] = d["value"]
    if d["metric"].startswith("tsd.http.query."):
        v[d["metric"]] = d["value"]
print(" ".join(str(v.get(k)) for k in sys.argv[1:]))' "$@"; }
OUTCOMES="tsd.http.query.success tsd.http.query.invalid_requests tsd.http.query.exceptions"
# A loop run that had to wait (a lock a worker held, a page fault's I/O: seen under ASan) stops
# the loop paths for 10 s by design (tsd.query.last type=loop_waits); the counts after one are
# then lower than these, and the check says so instead of failing.
waits() { curl -s -m 10 "http://127.0.0.1:$TSD_PORT/api/stats" | python3 -c '
import json, sys
print(sum(int(d["value"]) for d in json.load(sys.stdin)
          if d["metric"] == "tsd.query.last" and d["tags"].get("type") == "loop_waits"))'; }
check_loop_counts() { # NAME EXPECTED: exact without loop waits, else at most EXPECTED each
  local got w
  got=$(stat answered over_loop_budget)
  w=$(waits)
  if [ "$w" = 0 ]; then
    check_eq "$1" "$2" "$got"
  else
    read -r ea eo <<<"$2"
    read -r ga go <<<"$got"
    check "$1 (the loop waited $w time(s): counts $got at most $2)" \
      test "$ga" -le "$ea" -a "$go" -le "$eo" -a "$ga" -ge 1
  fi
}

on=$(python3 "$py" answers "$TSD_PORT" "$H" "$S")
# of the 15: the 10 small ones on the loop (the 2 unknown names found there: 400), the 3 over
# the bound moved to a worker, the 2 not small never tried
check_loop_counts "small queries answered on the loop / moved to a worker" "10 3"
on_outcomes=$(stat $OUTCOMES)
check_eq "outcomes: 13 answers, 2 unknown names, no exceptions" "13 2 0" "$on_outcomes"
check_eq "15 answers" 15 "$(echo "$on" | grep -c '^HTTP/1.1 ')"
check_contains "the loop answers a tagged series" "$on" '"metric":"sys.lat","tags":{"dc":"q","host":"h1"}'
check_contains "the loop answers Grafana's POST (showQuery)" "$on" '"query":{'
check_contains "... gzipped" "$on" 'Content-Encoding: gzip'
check_contains "the loop answers jsonp" "$on" 'cb([{'
check_contains "an unknown tag value is 400 on the loop" "$on" 'HTTP/1.1 400 Bad Request'
check_contains "the 100,000-point series is answered (by a worker)" "$on" '":99999}}]'

busy=$(python3 "$py" busy "$TSD_PORT" "$H" "$S")
w1=$(waits)
check_eq "the large pipelined queries are answered by workers" \
  "A:$(for _ in $(seq 1 8); do printf ' 200:True'; done)" "$(echo "$busy" | sed -n 1p)"
nb=$(echo "$busy" | sed -n 2p | awk '{print $2}')
check_contains "... another connection's small queries all answered well meanwhile" "$busy" " 0 bad"
if [ "$w1" = 0 ]; then
  # had the large ones run on the loop, B would get about one answer between two of them (at
  # most ~8; with the bound removed: 1). Usually thousands; on 2 busy cores a B query preempted
  # past tsd.query.loop_us goes to a worker behind A's, so as few as 20 were seen: 12 is the bar
  check "... at least 12 of them while A was busy ($nb)" test "${nb:-0}" -ge 12
  check_contains "... each in a fraction of a large query's time" "$busy" \
    "below A's busy time / (4 K): True"
else
  # a loop run waited (here: on a lock a worker running A's queries held): by design the loop
  # path stops for 10 s and B's queries share the busy workers (seen 2 runs in 6, quiet machine)
  check "... at least one while A was busy ($nb; the loop waited $w1 time(s) and stopped its path)" \
    test "${nb:-0}" -ge 1
fi
check_loop_counts "... on the loop; the 8 large ones over its bound" "$((10 + nb)) 11"
tsd_stop

# a loop time budget of 1 us: a small query passes it (the check after its planning) and is
# answered by a worker, counted as over the loop's budget
tsd_start --tsd.query.loop_us=1
a=$(curl -s -m 10 "http://127.0.0.1:$TSD_PORT/api/query?start=$S&m=sum:sys.lat%7Bhost=h1%7D")
check_contains "over tsd.query.loop_us a worker answers" "$a" '"metric":"sys.lat"'
check_eq "... counted as past the loop's budget" "0 1" "$(stat answered over_loop_budget)"
tsd_stop

# the same data with every query on the workers: the same bytes and outcome counts
tsd_start --tsd.query.on_loop=false
off=$(python3 "$py" answers "$TSD_PORT" "$H" "$S")
check_eq "with tsd.query.on_loop=false no query runs on the loop" "0 0" \
  "$(stat answered over_loop_budget)"
check_eq "the loop and the workers give the same answers" "$off" "$on"
check_eq "... and the same outcome counts" "$on_outcomes" "$(stat $OUTCOMES)"
tsd_stop
it_done
