#!/usr/bin/env python3
"""hostile_tsd.py - bad and hostile input against the real TSD: every case gets OpenTSDB's error
shape (a `put: ...` line on telnet, {"error":{...}} over HTTP) and the daemon stays unharmed
(it keeps answering /api/version, and it is still alive at the end).

Usage: hostile_tsd.py PORT [PID] (with the PID, the daemon's resident memory is checked around
the queries that would return billions of points). Prints "ok - ..." / "not ok - ..." lines.
Bounded: every socket has a timeout, every loop a fixed count.
"""
import json
import socket
import sys
import time
import urllib.error
import urllib.request

PORT = int(sys.argv[1])
PID = int(sys.argv[2]) if len(sys.argv) > 2 else None
IDLE = 3000  # "thousands of idle connections" (the .sh raises the open-file limit to 8192)
failures = 0


def rss_mb():
    try:
        for line in open("/proc/%d/status" % PID):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except (OSError, TypeError):
        pass
    return None


def ok(msg):
    print("ok - " + msg, flush=True)


def not_ok(msg):
    global failures
    failures += 1
    print("not ok - " + msg, flush=True)


def check(cond, msg, detail=""):
    if cond:
        ok(msg)
    else:
        not_ok(msg + (": " + detail if detail else ""))


def http(method, path, body=None, headers=None, timeout=20):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (PORT, path), data=body, method=method,
                                 headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def error_shape(body):
    try:
        e = json.loads(body)["error"]
        return isinstance(e["code"], int) and isinstance(e["message"], str)
    except (ValueError, KeyError, TypeError):
        return False


def alive(what):
    t0 = time.time()
    try:
        st, body = http("GET", "/api/version", timeout=10)
        check(st == 200 and b"version" in body, "the TSD still answers /api/version after %s (%.2f s)" % (what, time.time() - t0))
    except OSError as e:
        not_ok("the TSD still answers /api/version after %s: %s" % (what, e))


def telnet(lines, read_lines):
    s = socket.create_connection(("127.0.0.1", PORT), timeout=10)
    s.sendall(lines)
    f = s.makefile("rb")
    out = [f.readline().decode("utf-8", "replace") for _ in range(read_lines)]
    s.close()
    return out


# --- telnet ---------------------------------------------------------------------------------
long_line = b"put m 1356998400 1 host=" + b"a" * 5000 + b"\n"
out = telnet(long_line + b"version\n", 2)
check(out[0].startswith("put:") or "too long" in out[0].lower() or "error" in out[0].lower(),
      "an oversized telnet line gets one error line", repr(out[0][:120]))
check("ctsdb" in out[1] or "version" in out[1].lower() or "built" in out[1].lower(),
      "the connection stays usable after an oversized line", repr(out[1][:120]))
out = telnet(b"put m\xff\xfe 1356998400 1 host=a\nversion\n", 1)
check(out[0].startswith("put: illegal argument: Invalid metric name"), "invalid UTF-8 in a metric name is refused", repr(out[0]))
tags = " ".join("t%d=v" % i for i in range(20))
out = telnet(("put m 1356998400 1 %s\n" % tags).encode(), 1)
check(out[0].startswith("put: illegal argument: Too many tags: 20 maximum allowed: 8"), "too many tags", repr(out[0]))
for ts, what in (("99999999999999999", "enormous"), ("-5", "negative"), ("0", "zero")):
    out = telnet(("put m %s 1 host=a\n" % ts).encode(), 1)
    check(out[0].startswith("put: "), "a %s timestamp is refused with a put: line" % what, repr(out[0]))
for v in ("NaN", "Infinity", "-Infinity"):
    out = telnet(("put m 1356998400 %s host=a\n" % v).encode(), 1)
    check(out[0].startswith("put: illegal argument: value is NaN or Infinite") or out[0].startswith("put: invalid value"),
          "value %s is refused" % v, repr(out[0]))
out = telnet(b"\x00\x01\x02 binary junk\nversion\n", 2)
check(out[0].startswith("unknown command"), "binary junk is an unknown command", repr(out[0]))
out = telnet(b"put m 1356998400 1 host=" + b"a" * (4 << 20) + b"\nversion\n", 2)
check(out[0].startswith("put: illegal argument: line too long"), "a 4 MiB telnet line is discarded with one error line",
      repr(out[0][:120]))
check("built at revision" in out[1], "the connection stays usable after a 4 MiB line", repr(out[1][:120]))

# --- HTTP /api/put ---------------------------------------------------------------------------
st, body = http("POST", "/api/put", b"[" * 100000 + b"]" * 100000, {"Content-Type": "application/json"})
check(st in (400, 413) and error_shape(body), "deeply nested JSON in /api/put gets an error object", "%d %r" % (st, body[:200]))
st, body = http("POST", "/api/query", b"{\"a\":" * 50000 + b"1" + b"}" * 50000, {"Content-Type": "application/json"})
check(st in (400, 413) and error_shape(body), "deeply nested JSON in /api/query gets an error object", "%d %r" % (st, body[:200]))
big = b"x" * (64 << 20)
try:
    st, body = http("POST", "/api/put", big, {"Content-Type": "application/json"}, timeout=60)
    check(st in (400, 413) and error_shape(body), "a 64 MiB body is refused with an error object", "%d %r" % (st, body[:200]))
except OSError as e:
    # closing the connection after the error reply is acceptable if the reply was sent first
    not_ok("a 64 MiB body is refused with an error object: %s" % e)
alive("an oversized body")
st, body = http("POST", "/api/put", b"{\"metric\":\"m\",\"timestamp\":1356998400,\"value\":\"\xff\xfe\",\"tags\":{\"h\":\"a\"}}")
check(st == 400 and error_shape(body), "invalid UTF-8 in a JSON value is a 400 error object", "%d %r" % (st, body[:200]))
pt = {"metric": "hostile.m", "timestamp": 1356998400, "value": 1, "tags": {"h": "a"}, "bogus": {"x": [1, 2]}}
st, body = http("POST", "/api/put", json.dumps(pt).encode())
check(st == 204, "unknown fields in a datapoint are ignored", "%d %r" % (st, body[:200]))
for v in ("NaN", "Infinity"):
    pt = {"metric": "hostile.m", "timestamp": 1356998400, "value": v, "tags": {"h": "a"}}
    st, body = http("POST", "/api/put?details", json.dumps(pt).encode())
    check(st == 400 and b"failed" in body, "value %s in /api/put is a failed point" % v, "%d %r" % (st, body[:200]))
pt = {"metric": "hostile.m", "timestamp": 1e30, "value": 1, "tags": {"h": "a"}}
st, body = http("POST", "/api/put?details", json.dumps(pt).encode())
check(st == 400, "an enormous timestamp in /api/put is a failed point", "%d %r" % (st, body[:200]))
tags = {"t%d" % i: "v" for i in range(20)}
pt = {"metric": "hostile.m", "timestamp": 1356998400, "value": 1, "tags": tags}
st, body = http("POST", "/api/put?details", json.dumps(pt).encode())
check(st == 400 and b"Too many tags: 20 maximum allowed: 8" in body, "too many tags in /api/put is a failed point",
      "%d %r" % (st, body[:200]))
pt = {"metric": "hostile.m", "timestamp": -5, "value": 1, "tags": {"h": "a"}}
st, body = http("POST", "/api/put?details", json.dumps(pt).encode())
check(st == 400 and b"Invalid timestamp" in body, "a negative timestamp in /api/put is a failed point",
      "%d %r" % (st, body[:200]))
st, body = http("POST", "/api/put", b"[" + b"1," * 2000000 + b"1]", {"Content-Type": "application/json"})
check(st == 400 and error_shape(body), "a huge JSON array (2M elements, 4 MB) is a 400 error object",
      "%d %r" % (st, body[:200]))
s = socket.create_connection(("127.0.0.1", PORT), timeout=10)
s.sendall(b"GET /api/version HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n")
data = b""
while b"\r\n\r\n" not in data or not data.rstrip().endswith(b"}"):
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
s.close()
check(data.startswith(b"HTTP/1.1 431") and error_shape(data.split(b"\r\n\r\n", 1)[-1]),
      "a 100 KB request header gets 431 with an error object", repr(data[:120]))
s = socket.create_connection(("127.0.0.1", PORT), timeout=10)
s.sendall(b"GET /api/query?start=1356998000&m=sum:hostile.\xff\xfe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
s.close()
body = data.split(b"\r\n\r\n", 1)[-1]
check(data.startswith(b"HTTP/1.1 400") and error_shape(body) and "\ufffd" in json.loads(body)["error"]["message"],
      "invalid UTF-8 in a query's metric is a 400 error object (valid JSON: the bytes echoed as U+FFFD)",
      repr(data[-160:]))
s = socket.create_connection(("127.0.0.1", PORT), timeout=10)
s.sendall(b"GET /api/uid/assign?metric=hostile.\xff HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
s.close()
try:
    errs = json.loads(data.split(b"\r\n\r\n", 1)[-1])["metric_errors"]
    check(any("not UTF-8" in v for v in errs.values()), "invalid UTF-8 in a UID assignment is refused in valid JSON")
except (ValueError, KeyError, TypeError) as e:
    not_ok("invalid UTF-8 in a UID assignment is refused in valid JSON: %s %r" % (e, data[-160:]))
q = {"start": 1356998000, "end": 1356999000, "queries": [{"metric": "hostile.m", "aggregator": "sum", "bogus": [1]}],
     "unknownTopLevel": {"x": 1}}
st, body = http("POST", "/api/query", json.dumps(q).encode())
check(st == 200 and b'"hostile.m"' in body, "unknown fields in a /api/query body are ignored", "%d %r" % (st, body[:200]))
st, body = http("PATCH", "/api/put", b"{}")
check(st == 405 and error_shape(body), "an unknown method gets 405 with an error object", "%d %r" % (st, body[:200]))

# --- queries that would return too much -----------------------------------------------------
st, body = http("GET", "/api/query?start=0&m=sum:hostile.m")
check(st in (200, 400, 413), "a query from the epoch answers (data or a clear error)", "%d" % st)
pt = {"metric": "hostile.recent", "timestamp": int(time.time()) - 60, "value": 1, "tags": {"h": "a"}}
st, body = http("POST", "/api/put", json.dumps(pt).encode())
check(st == 204, "a recent point is stored", "%d %r" % (st, body[:200]))
rss0 = rss_mb()
peak = rss0 or 0
for q in ("start=30d-ago&m=sum:1ms-count-zero:hostile.recent", "start=0&m=sum:1ms-sum-zero:hostile.m",
          "start=1000y-ago&m=zimsum:1ms-avg-nan:hostile.recent{h=*}"):
    for _ in range(3):
        st, body = http("GET", "/api/query?" + q)
        peak = max(peak, rss_mb() or 0)
    check(st in (400, 413) and error_shape(body), "a query that would emit billions of filled points is refused "
          "with an error object (%s)" % q, "%d %r" % (st, body[:200]))
if PID:
    grown = peak - rss0
    check(grown < 64, "memory stays bounded through 9 billion-point queries (RSS %.0f -> peak %.0f MiB)" % (rss0, peak),
          "grew %.0f MiB" % grown)
alive("huge queries")

# --- static files ---------------------------------------------------------------------------
for path in ("/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/..%2f..%2fetc%2fpasswd", "/static/../../Makefile"):
    s = socket.create_connection(("127.0.0.1", PORT), timeout=10)
    s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path).encode())
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    status = data.split(b" ", 2)[1] if data.startswith(b"HTTP/") else b"?"
    check(status in (b"400", b"403", b"404") and b"root:" not in data, "path traversal %s is refused" % path, repr(data[:80]))

# --- slow and idle clients ------------------------------------------------------------------
slow = socket.create_connection(("127.0.0.1", PORT), timeout=10)
slow.sendall(b"GET /api/version HTTP/1.1\r\nHost: x\r\n")  # never finishes its headers
# slowloris: 300 clients dribble their headers a few bytes at a time for ~3 s while the TSD
# keeps answering others
loris = []
for i in range(300):
    c = socket.create_connection(("127.0.0.1", PORT), timeout=10)
    c.sendall(b"GET /api/version HTTP/1.1\r\n")
    loris.append(c)
worst = 0.0
for step in range(10):
    for c in loris:
        c.sendall(b"X-Slow-%d: a\r\n" % step)
    t0 = time.time()
    st, body = http("GET", "/api/version", timeout=10)
    worst = max(worst, time.time() - t0)
    if st != 200:
        break
    time.sleep(0.3)
check(st == 200 and worst < 5, "300 slowloris clients do not stop /api/version (worst %.2f s)" % worst)
for c in loris:
    c.close()
idle = []
for i in range(IDLE):
    try:
        idle.append(socket.create_connection(("127.0.0.1", PORT), timeout=10))
    except OSError as e:
        break
check(len(idle) == IDLE, "%d idle connections are accepted" % IDLE, "%d opened" % len(idle))
half = []
for s in idle[:200]:
    s.sendall(b"put m 13569")  # half a line each
alive("a slowloris request and %d idle connections" % IDLE)
st, body = http("GET", "/api/query?start=1356998000&end=1356999000&m=sum:hostile.m")
check(st == 200 and b"hostile.m" in body, "a query is answered with %d idle connections open" % IDLE, "%d" % st)
for s in idle:
    s.close()
slow.close()
alive("all the idle connections closed")

print("# hostile: %d failures" % failures)
sys.exit(1 if failures else 0)
