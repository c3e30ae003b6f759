#!/usr/bin/env python3
"""hostile_tsd.py - bad and hostile input against the real TSD: every case gets OpenTSDB's error
shape (a `put: ...` line on telnet, {"error":{...}} over HTTP) and the daemon stays unharmed
(it keeps answering /api/version, and it is still alive at the end).

Usage: hostile_tsd.py PORT. Prints "ok - ..." / "not ok - ..." lines. Bounded: every socket has
a timeout, every loop a fixed count.
"""
import json
import socket
import sys
import time
import urllib.error
import urllib.request

PORT = int(sys.argv[1])
failures = 0


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
st, body = http("PATCH", "/api/put", b"{}")
check(st == 405 and error_shape(body), "an unknown method gets 405 with an error object", "%d %r" % (st, body[:200]))

# --- queries that would return too much -----------------------------------------------------
st, body = http("GET", "/api/query?start=0&m=sum:hostile.m")
check(st in (200, 400, 413), "a query from the epoch answers (data or a clear error)", "%d" % st)
pt = {"metric": "hostile.recent", "timestamp": int(time.time()) - 60, "value": 1, "tags": {"h": "a"}}
st, body = http("POST", "/api/put", json.dumps(pt).encode())
check(st == 204, "a recent point is stored", "%d %r" % (st, body[:200]))
st, body = http("GET", "/api/query?start=30d-ago&m=sum:1ms-count-zero:hostile.recent")
check(st in (400, 413) and error_shape(body), "a query that would emit billions of filled points is refused with an error object",
      "%d %r" % (st, body[:200]))
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
idle = []
for i in range(1000):
    try:
        idle.append(socket.create_connection(("127.0.0.1", PORT), timeout=10))
    except OSError as e:
        break
check(len(idle) == 1000, "1000 idle connections are accepted", "%d opened" % len(idle))
half = []
for s in idle[:200]:
    s.sendall(b"put m 13569")  # half a line each
alive("a slowloris request and 1000 idle connections")
for s in idle:
    s.close()
slow.close()
alive("all the idle connections closed")

print("# hostile: %d failures" % failures)
sys.exit(1 if failures else 0)
