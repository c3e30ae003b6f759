#!/usr/bin/env python3
"""http_safety.py - the TSD's HTTP data-safety cases against a running daemon: slow readers of
large /api/query answers (they must not hold the query workers; the write timeout or the answer
pool closes them), HTTP/1.1 framing per RFC 9112 (conflicting Content-Length, Content-Length
with Transfer-Encoding, whitespace before a header's colon, ...: 400 or 501 and the connection
closed, nothing after it answered) and pipelined puts followed by a half-close (every one
answered, every point stored).

Usage: http_safety.py PORT CASE [CASE...] with CASE one of
  load        store the data of the large answers (big.m, 4 series x 100,000 points)
  slow        two clients send a large /api/query and never read; their unsent answers are
              charged to the answer pool; a third query is answered in < 5 s; then the two are
              closed by the TSD (write timeout) and the pool is back to 0
  slowcut     the same with a pool too small for the answers: they are cut instead
  framing     the RFC 9112 framing cases
  halfclose   pipelined puts in one write, then shutdown(SHUT_WR)
Prints "ok - ..." / "not ok - ..." lines. Bounded: every socket has a timeout, every loop a
fixed count.
"""
import json
import socket
import sys
import time
import urllib.error
import urllib.request

PORT = int(sys.argv[1])
T0 = 1700000000  # first timestamp of big.m
SERIES, POINTS = 4, 100000
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


def http(method, path, body=None, timeout=20):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (PORT, path), data=body, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def conn(timeout=10, rcvbuf=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(timeout)
    s.connect(("127.0.0.1", PORT))
    return s


def read_all(s, limit_s=10):
    """Reads until EOF (or a reset); returns (bytes, closed)."""
    data = b""
    t_end = time.time() + limit_s
    while time.time() < t_end:
        try:
            b = s.recv(65536)
        except socket.timeout:
            return data, False
        except ConnectionResetError:
            return data, True
        if not b:
            return data, True
        data += b
    return data, False


def responses(data):
    """The status codes of the HTTP responses in data (Content-Length framed ones)."""
    out = []
    rest = data
    for _ in range(1000):
        if not rest.startswith(b"HTTP/1."):
            break
        head, sep, rest = rest.partition(b"\r\n\r\n")
        if not sep:
            break
        lines = head.split(b"\r\n")
        status = int(lines[0].split()[1])
        n = 0
        for line in lines[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                n = int(v.strip())
        out.append((status, rest[:n]))
        rest = rest[n:]
    return out


def error_shape(body, code):
    try:
        e = json.loads(body)["error"]
        return e["code"] == code and isinstance(e["message"], str)
    except (ValueError, KeyError, TypeError):
        return False


def case_load():
    s = conn(timeout=60)
    for h in range(SERIES):
        lines = "".join("put big.m %d %d.25 host=h%d\n" % (T0 + i, i, h) for i in range(POINTS))
        s.sendall(lines.encode())
    s.sendall(b"version\n")
    got = b""
    for _ in range(1000):
        b = s.recv(65536)
        if not b or b"version" in got + b or b"ctsdb" in got + b:
            got += b
            break
        got += b
    s.close()
    # the points are readable (a count through a downsampled query)
    q = "/api/query?start=%d&end=%d&m=sum:1h-count:big.m" % (T0 - 7200, T0 + POINTS + 7200)
    total = 0
    for _ in range(100):
        st, body = http("GET", q, timeout=30)
        if st == 200:
            total = sum(sum(v for v in r["dps"].values()) for r in json.loads(body))
            if total >= SERIES * POINTS:
                break
        time.sleep(0.2)
    check(total == SERIES * POINTS, "load: %d points stored" % (SERIES * POINTS), "got %d" % total)


BIG = json.dumps({"start": T0, "end": T0 + POINTS,
                  "queries": [{"aggregator": "none", "metric": "big.m"}]}).encode()


def pool_bytes():
    """tsd.http.query.answer_buffer_bytes of /api/stats: answer bytes held for slow readers."""
    st, body = http("GET", "/api/stats", timeout=10)
    for d in json.loads(body):
        if d["metric"] == "tsd.http.query.answer_buffer_bytes":
            return int(d["value"])
    return -1


def case_slow(pool_room=True):
    # two slow readers: a tiny receive window, a large answer, never read
    slow = []
    for _ in range(2):
        s = conn(timeout=30, rcvbuf=4096)
        s.sendall(b"POST /api/query HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n%s" % (len(BIG), BIG))
        slow.append(s)
    time.sleep(1.0)  # both are on the workers, their answers written as far as they go
    held = pool_bytes()
    if pool_room:  # their unsent answers are held in the pool, not by the workers
        check(held > 1 << 20, "slow readers: their unsent answers are charged to the answer "
              "pool (%d bytes)" % held)
    else:  # a small pool: full, or given back already by the answers cut
        print("# answer pool while the slow readers hang: %d bytes" % held)
    t0 = time.time()
    try:
        st, body = http("GET", "/api/query?start=%d&end=%d&m=sum:1h-count:big.m{host=h0}"
                        % (T0, T0 + POINTS), timeout=5)
        took = time.time() - t0
        check(st == 200 and b"dps" in body and took < 5,
              "slow readers: a third query is answered promptly (%.2f s)" % took, "status %d" % st)
    except OSError as e:
        not_ok("slow readers: a third query is answered promptly: %s after %.2f s"
               % (e, time.time() - t0))
    # the TSD closes them: they read nothing, so by now (or soon) the TSD has given up on them
    t_close = time.time()
    time.sleep(4.0)
    for i, s in enumerate(slow):
        data, closed = read_all(s, limit_s=20)
        ended = data.endswith(b"0\r\n\r\n")
        check(closed and not ended and len(data) > 0,
              "slow reader %d: its connection was closed, answer cut short (%d bytes, %.1f s)"
              % (i, len(data), time.time() - t_close),
              "closed=%s complete=%s" % (closed, ended))
        s.close()
    # what the two held is given back to the answer pool once they are closed
    held = -1
    for _ in range(50):
        held = pool_bytes()
        if held == 0:
            break
        time.sleep(0.2)
    check(held == 0, "slow readers: the answer pool is back to 0 bytes after they are closed",
          "%d bytes still charged" % held)
    # a full read of the same answer still works (a client that reads gets all of it)
    t0 = time.time()
    st, body = http("POST", "/api/query", BIG, timeout=60)
    n = sum(len(r["dps"]) for r in json.loads(body)) if st == 200 else -1
    check(n == SERIES * POINTS, "a reading client gets the whole large answer (%d points, %.1f s)"
          % (n, time.time() - t0))


PUT1 = b'{"metric":"frame.m","timestamp":1700000000,"value":1,"tags":{"h":"a"}}'


def framing_case(name, raw, want_status, want_answers=1):
    s = conn(timeout=10)
    s.sendall(raw)
    data, closed = read_all(s, limit_s=10)
    s.close()
    rs = responses(data)
    check(len(rs) == want_answers and rs[0][0] == want_status and
          error_shape(rs[0][1], want_status) and closed,
          "framing: %s: %d, error object, connection closed, nothing after it answered"
          % (name, want_status),
          "answers %s closed %s raw %r" % ([r[0] for r in rs], closed, data[:300]))


def case_framing():
    get = b"GET /api/version HTTP/1.1\r\nHost: x\r\n\r\n"
    # the reproducer: with the first length used the rest of the body was a second request
    body = b"[]" + get
    framing_case("two different Content-Length headers, a GET pipelined in the body",
                 b"POST /api/put HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (len(body), body), 400)
    framing_case("a comma list of different Content-Length values",
                 b"POST /api/put HTTP/1.1\r\nHost: x\r\nContent-Length: 2, %d\r\n\r\n%s"
                 % (len(body), body), 400)
    chunked = b"2\r\n[]\r\n0\r\n\r\n"
    framing_case("Content-Length with Transfer-Encoding",
                 b"POST /api/put HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n%s%s" % (len(chunked), chunked, get), 400)
    framing_case("whitespace before a header's colon (Transfer-Encoding : chunked)",
                 b"POST /api/put HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n%s%s"
                 % (chunked, get), 400)
    framing_case("whitespace before a header's colon (Content-Length :)",
                 b"POST /api/put HTTP/1.1\r\nHost: x\r\nContent-Length : 2\r\n\r\n[]" + get, 400)
    framing_case("an invalid Content-Length (+2)",
                 b"POST /api/put HTTP/1.1\r\nHost: x\r\nContent-Length: +2\r\n\r\n[]" + get, 400)
    framing_case("an invalid Content-Length (-1)",
                 b"POST /api/put HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n" + get, 400)
    framing_case("an obs-fold header line",
                 b"GET /api/version HTTP/1.1\r\nHost: x\r\nX-A: a\r\n  b\r\n\r\n" + get, 400)
    framing_case("Transfer-Encoding without chunked last (gzip)",
                 b"POST /api/put HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n" + get, 400)
    framing_case("a transfer coding other than chunked (gzip, chunked)",
                 b"POST /api/put HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
                 + chunked + get, 501)
    framing_case("Transfer-Encoding in HTTP/1.0",
                 b"POST /api/put HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                 + chunked + get, 400)
    # a valid chunked put (chunk extension, upper-case hex) is still taken, and the pipelined GET
    # after it answered
    pt = PUT1.replace(b"frame.m", b"chunk.m")
    body = b"%X;ext=1\r\n%s\r\n0\r\n\r\n" % (len(pt), pt)
    s = conn(timeout=10)
    s.sendall(b"POST /api/put HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
              + body + get)
    s.shutdown(socket.SHUT_WR)
    data, closed = read_all(s, limit_s=10)
    s.close()
    rs = responses(data)
    check([r[0] for r in rs] == [204, 200], "framing: a valid chunked put is taken (204, then the "
          "pipelined GET 200)", "answers %s raw %r" % ([r[0] for r in rs], data[:300]))
    framing_case("a chunk size with a 0x prefix",
                 b"POST /api/put HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                 b"0x2\r\n[]\r\n0\r\n\r\n" + get, 400)
    # an identical repeated length, and a list of identical values, are one length (RFC 9112
    # 6.3): the put is stored and the pipelined GET answered on the same connection
    for name, cl in (("a repeated identical Content-Length",
                      b"Content-Length: %d\r\nContent-Length: %d" % (len(PUT1), len(PUT1))),
                     ("a comma list of identical Content-Length values",
                      b"Content-Length: %d , %d" % (len(PUT1), len(PUT1)))):
        s = conn(timeout=10)
        s.sendall(b"POST /api/put HTTP/1.1\r\nHost: x\r\n%s\r\n\r\n%s%s" % (cl, PUT1, get))
        s.shutdown(socket.SHUT_WR)
        data, closed = read_all(s, limit_s=10)
        s.close()
        rs = responses(data)
        check([r[0] for r in rs] == [204, 200] and b"version" in rs[1][1],
              "framing: %s is accepted (204, then the pipelined GET 200)" % name,
              "answers %s raw %r" % ([r[0] for r in rs], data[:300]))


def case_halfclose():
    n = 25
    reqs = b""
    for i in range(n):
        body = json.dumps({"metric": "pipe.m", "timestamp": T0 + i, "value": i,
                           "tags": {"h": "a"}}).encode()
        reqs += (b"POST /api/put HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    s = conn(timeout=10)
    s.sendall(reqs)  # one write
    s.shutdown(socket.SHUT_WR)
    data, closed = read_all(s, limit_s=15)
    s.close()
    rs = responses(data)
    check(len(rs) == n and all(r[0] == 204 for r in rs) and closed,
          "half-close: %d pipelined puts in one write then SHUT_WR: all answered 204, then "
          "closed" % n, "answers %s closed %s" % ([r[0] for r in rs], closed))
    pts = -1
    for _ in range(50):
        st, body = http("GET", "/api/query?start=%d&end=%d&m=none:pipe.m" % (T0, T0 + n))
        if st == 200:
            pts = sum(len(r["dps"]) for r in json.loads(body))
            if pts == n:
                break
        time.sleep(0.2)
    check(pts == n, "half-close: every pipelined point is stored (%d of %d)" % (pts, n))


def main():
    cases = {"load": case_load, "slow": case_slow, "slowcut": lambda: case_slow(False),
             "framing": case_framing, "halfclose": case_halfclose}
    for c in sys.argv[2:]:
        cases[c]()
    st, _ = http("GET", "/api/version", timeout=10)
    check(st == 200, "the TSD still answers /api/version")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
