#!/usr/bin/env python3
"""query_bench.py - query latency of ctsdb's /api/query next to VictoriaMetrics answering the
equivalent MetricsQL, in one run, both on loopback, every answer checked against the other's.

Dataset: tools/bench/tsd_load.c's value model (the ingest benchmark's): --size SERIESxDURATION,
SERIES/20 hosts x 20 metrics (2-decimal gauges 0..100, byte gauges near 5e9 with large steps,
counters growing ~1.5e7 a point, small integers), tags host, dc (3), rack (40), service (10),
os (2); one point every 10 s (every 60 s for 30d). Sizes: 2000x1d (17.3 M points, default),
100000x1h (36 M), 200x30d (8.6 M). The data ends at the last day boundary (UTC), so that day
buckets are whole days on both sides.

Loading: tsd_load (built into the work directory) sends the same telnet `put` stream to both at
once, --load-conns connections each (2; 4 from 20,000 series, as 100000x1h): to ctsdb with
--ack (every put is in its log when it ends), to VictoriaMetrics' OpenTSDB telnet listener,
which acknowledges nothing, so the script flushes it
(/internal/force_flush) and counts its samples until it holds every point. Bounded by
--load-timeout. ctsdb is then restarted (its memstores flushed and compacted, as historical
data is) and its sys.cpu.user points are counted too. VictoriaMetrics runs with
-search.disableCache so that neither side answers from a result cache.

--rollups: the restarted TSD runs with rollup tables (tsd.rollups.enable, its job every second
with no grace: every loaded hour is closed), and the script waits (bounded by --rollup-timeout)
until the tables hold every loaded point: the 1h and (sizes of whole days) the 1d counts of
sys.cpu.user read with rollupUsage ROLLUP_NOFALLBACK (rollups only) equal its raw point count.
The queries whose downsample is whole hours with sum, count, min, max or avg (30d:
sum_all_1h_avg, max_by_host_1h, group_by_service, avg_1h_all, avg_1d_all) are then answered from
the rollups by default; each gets a twin NAME_raw asked with rollup_raw in m= (raw rows only),
timed too. Both are checked against VictoriaMetrics, and the rollup answer against the raw one
(the same 1e-9 test).

Queries (ctsdb m= / MetricsQL; D = 1m on 10 s data, 1h on 30 days; F = 5m, 1h on 30 days):
  raw_one           one series raw over the whole range (query_range at the point step)
  sum_all_D_avg     sum of sys.cpu.user over all hosts at D-avg
  max_by_host_F     max by host within one dc at F-max
  rate_by_dc        the counter sys.net.rx_bytes' rate summed by dc: D-last then rate (OpenTSDB
                    downsamples before the rate), which is MetricsQL's rate over [D]
  tags_pick_one     one series picked by two tags (host, dc) among all, raw
  group_by_service  avg by service of sys.load.1m at F-avg
  avg_1h_all, avg_1d_all   (sizes of 2 days or more) avg of all hosts at 1h-avg and 1d-avg
  count_0all, avg_0all  sum of sys.cpu.user's per-series count / avg over the whole range
                    (0all-count, 0all-avg: one bucket, streamed) / sum(count_over_time([dur]))
  last_grafana      the last point asked as Grafana asks it: its OpenTSDB data source POSTs
                    /api/query {start, end (epoch ms), queries: [{metric, aggregator: sum,
                    downsample: "<interval>-avg", filters: [literal_or host]}], msResolution,
                    globalAnnotations, showQuery} for the panel's last hour and takes the last
                    point; its Prometheus data source asks an instant query at the range's end
  last_api          OpenTSDB's /api/query/last (back_scan=48, or more hours back to the data's
                    end) / last_over_time([1d])
OpenTSDB labels a bucket with its start, a MetricsQL rollup [D] at T covers (T-D, T]: the
VictoriaMetrics range queries run at each bucket's last point and their timestamps are moved
back to the bucket's start before comparing.

Checking: before timing a query, one answer of each side is parsed and compared series by
series (by the grouping tag), timestamp by timestamp; values must agree within 1e-9 relative
(float summation order), last points must be the data's last point. A difference is printed
(ANSWERS DIFFER), the query is left out of the table, and the script exits 1 at the end.

Timing: before it, both servers are left to finish the background work of the load (until
neither used CPU for 0.5 s, at most 60 s). Each query runs WARMUP times on each side, then RUNS
times with the two sides alternating run by run (so both meet the same load on a shared
machine); the median wall time of a full HTTP answer (keep-alive connection, body read to the
end) is reported, with the ratio ctsdb / VM, and beside it each server's CPU time (user + system
from /proc) over the timed runs divided by the runs: on a busy machine the wall times measure
the scheduler as much as the servers (VictoriaMetrics spreads a query over every CPU, ctsdb's
scan goes to one thread when every CPU is busy), the CPU time much less so. After the table it
prints the median of a request that does no query work on either side (ctsdb /api/version,
VictoriaMetrics /health): the HTTP client, loopback and request handling floor that every
answer's time includes.

--idle poll keeps idle CPUs polling instead of halting during the timed runs
(/dev/cpu_dma_latency held at 0, as latency benchmarks often run): on this virtual machine a
halted vCPU's wake-up adds ~90 us to every round trip of both servers alike.

The timed requests go through one client, the same for both servers: by default a small C
program (tools/bench/http_timer.c, built into the work directory) that times each request from
the write of the request to the last byte of the answer; --client raw uses a minimal Python
socket client (RawConn, ~0.02-0.04 ms more per answer on both sides) and --client http.client
Python's http.client (slower still).

Keeping the data: --keep-data DIR loads both stores into DIR/ctsdb and DIR/vm and, once both
hold every point (ctsdb after its restart), stamps DIR/stamp.json with the size, the stream's
start and end and the load times; --reuse-data DIR skips the load and runs both servers on that
data (the time range is the stamp's, not today's; every point is counted again on both sides
and every answer checked as usual). A 100000x1h load takes tens of minutes on a shared machine;
later runs start in seconds. The TSD's runs write into DIR/ctsdb (compactions, with --rollups
its rollup tables): the stored points stay the same.

Usage: tools/bench/query_bench.py [--size 2000x1d|100000x1h|200x30d] [--runs R] [--warmup W]
           [--only q1,q2] [--client c|raw|http.client] [--idle poll|halt] [--tsd-opt=OPT]
           [--load-timeout S] [--load-conns C] [--rollups] [--rollup-timeout S] [--keep-dir]
           [--keep-data DIR | --reuse-data DIR] [--perf PREFIX]
Needs bin/ctsdb (make), cc, and victoria-metrics (deps/bench.txt). Prints a markdown table.
"""
import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def tsd_port(log):
    for _ in range(600):
        log.seek(0)
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", log.read())
        if m:
            return int(m.group(1))
        time.sleep(0.1)
    sys.exit("query_bench: ctsdb tsd did not start")


def wait_http(host, port, path, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        try:
            c = http.client.HTTPConnection(host, port, timeout=2)
            c.request("GET", path)
            r = c.getresponse()
            r.read()
            c.close()
            if r.status < 500:
                return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


class RawConn:
    """A minimal keep-alive HTTP/1.1 client on a plain socket: the request is a few bytes
    written at once, the answer is read by Content-Length or chunked framing. The same class
    serves both servers, so both pay the same (smaller) client cost; http.client's header parsing
    (email.parser) added tens of microseconds to every answer on both sides. Same interface as
    the part of http.client.HTTPConnection that timed() uses."""

    def __init__(self, host, port, timeout=600):
        self.host, self.port, self.timeout = host, port, timeout
        self.sock = None
        self.buf = bytearray()

    def _connect(self):
        self.sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()

    def close(self):
        if self.sock:
            self.sock.close()
            self.sock = None

    def _fill(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("connection closed by the server")
        self.buf += chunk

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line = bytes(self.buf[:i])
                del self.buf[:i + 2]
                return line
            self._fill()

    def _take(self, n):
        while len(self.buf) < n:
            self._fill()
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data

    def request(self, method, path, body=None):
        if self.sock is None:
            self._connect()
        head = "%s %s HTTP/1.1\r\nHost: %s:%d\r\nAccept-Encoding: identity\r\n" % (
            method, path, self.host, self.port)
        if body is not None:
            if isinstance(body, str):
                body = body.encode()
            head += "Content-Length: %d\r\n" % len(body)
        self.sock.sendall(head.encode() + b"\r\n" + (body or b""))

    def response(self):
        """(status, body bytes) of the next answer."""
        status = int(self._line().split(b" ", 2)[1])
        length, chunked, close = None, False, False
        while True:
            line = self._line()
            if not line:
                break
            k, _, v = line.partition(b":")
            k = k.strip().lower()
            v = v.strip().lower()
            if k == b"content-length":
                length = int(v)
            elif k == b"transfer-encoding" and b"chunked" in v:
                chunked = True
            elif k == b"connection" and v == b"close":
                close = True
        if chunked:
            parts = []
            while True:
                n = int(self._line().split(b";")[0], 16)
                if n == 0:
                    while self._line():  # trailers, then the blank line
                        pass
                    break
                parts.append(self._take(n))
                self._take(2)
            data = b"".join(parts)
        elif length is not None:
            data = self._take(length)
        else:  # read to the end
            try:
                while True:
                    self._fill()
            except ConnectionError:
                pass
            data, self.buf = bytes(self.buf), bytearray()
            close = True
        if close:
            self.close()
        return status, data


class CTimer:
    """The http_timer co-process (tools/bench/http_timer.c): one keep-alive connection per
    endpoint, requests timed in C (see the module's docstring)."""

    def __init__(self, work, endpoints):
        exe = os.path.join(work, "http_timer")
        subprocess.run(["cc", "-O2", "-o", exe, os.path.join(ROOT, "tools/bench/http_timer.c")],
                       check=True)
        self.proc = subprocess.Popen([exe] + ["127.0.0.1:%d" % p for p in endpoints],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.index = {p: i for i, p in enumerate(endpoints)}

    def conn(self, port):
        return CConn(self, self.index[port])

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


class CConn:
    """One of CTimer's connections; timed() takes the time measured in C."""

    def __init__(self, timer, index):
        self.timer, self.index = timer, index

    def run(self, method, path, body=None):
        """(seconds, status, body bytes)."""
        if isinstance(body, str):
            body = body.encode()
        body = body or b""
        p = self.timer.proc
        p.stdin.write(b"%d %s %s %d\n" % (self.index, method.encode(), path.encode(), len(body)))
        p.stdin.write(body)
        p.stdin.flush()
        head = p.stdout.readline().split()
        if not head or head[0] == b"error":
            raise RuntimeError("http_timer: %s" % b" ".join(head).decode())
        data = p.stdout.read(int(head[2]))
        return int(head[0]) / 1e9, int(head[1]), data


CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def hold_cpu_polling():
    """Asks the kernel to keep idle CPUs polling rather than halted (PM QoS: 0 us of wake-up
    latency through /dev/cpu_dma_latency, held while the returned fd stays open), as latency
    benchmarks commonly do (tuned's latency-performance profile sets the same). On a virtual
    machine a halted vCPU takes a hypervisor exit to wake, which added ~90 us to every round
    trip here (the no-work request: 0.13 ms halted, 0.045 ms polling) on both servers alike,
    more than most queries' own work. Returns the fd, or None when the kernel or permissions do
    not allow it."""
    try:
        fd = os.open("/dev/cpu_dma_latency", os.O_WRONLY)
    except OSError:
        return None
    try:
        os.write(fd, (0).to_bytes(4, sys.byteorder))
    except OSError:
        os.close(fd)
        return None
    return fd


def wait_idle(pids, quiet_s, limit_s):
    """Waits until none of pids used CPU for quiet_s seconds, at most limit_s; True if so."""
    end = time.time() + limit_s
    last = [cpu_ticks(p) for p in pids]
    while time.time() < end:
        time.sleep(quiet_s)
        now = [cpu_ticks(p) for p in pids]
        if now == last:
            return True
        last = now
    return False


def timed(conn, path, method="GET", body=None):
    if isinstance(conn, CConn):
        dt, status, data = conn.run(method, path, body)
        if status != 200:
            raise RuntimeError("%s -> %d %s" % (path, status, data[:200]))
        return dt, data
    if isinstance(conn, RawConn):
        t0 = time.perf_counter()
        conn.request(method, path, body=body)
        status, data = conn.response()
        dt = time.perf_counter() - t0
        if status != 200:
            raise RuntimeError("%s -> %d %s" % (path, status, data[:200]))
        return dt, data
    t0 = time.perf_counter()
    conn.request(method, path, body=body)
    r = conn.getresponse()
    data = r.read()
    dt = time.perf_counter() - t0
    if r.status != 200:
        raise RuntimeError("%s -> %d %s" % (path, r.status, data[:200]))
    return dt, data


def query_counts(conn):
    """ctsdb's /api/stats counters of how queries ran: (range queries scanned on several
    threads, on one thread because every CPU was busy, last queries answered on the network
    loop)."""
    _, data = timed(conn, "/api/stats")
    v = {(d["metric"], d["tags"].get("type")): int(d["value"]) for d in json.loads(data)}
    return (v.get(("tsd.query.scans", "parallel"), 0),
            v.get(("tsd.query.scans", "one_thread_cpus_busy"), 0),
            v.get(("tsd.query.last", "loop"), 0))


SIZES = {  # --size: (series, seconds covered, seconds between points); see tsd_load.c
    "1d": (86400, 10), "1h": (3600, 10), "10m": (600, 10), "30d": (30 * 86400, 60),
}


def parse_size(text):
    """'2000x1d' -> (hosts, seconds, step): 20 metrics a host, as tsd_load's --size."""
    m = re.fullmatch(r"(\d+)x(1d|1h|10m|30d)", text)
    if not m or int(m.group(1)) < 20 or int(m.group(1)) % 20:
        sys.exit("query_bench: --size wants Nx1d|Nx1h|Nx10m|Nx30d, N a multiple of 20 "
                 "(2000x1d, 100000x1h, 200x30d)")
    dur, step = SIZES[m.group(2)]
    return int(m.group(1)) // 20, dur, step


def vm_sel(metric, **labels):
    """A MetricsQL series selector for an OpenTSDB-named metric (dots kept as VM stores them)."""
    parts = ['__name__="%s"' % metric] + ['%s="%s"' % kv for kv in sorted(labels.items())]
    return "{" + ",".join(parts) + "}"


def build_queries(hosts, dur, step, s, e, rollups=False):
    """The query set of one size. Data points lie at s + k*step for s <= t < e; e is a day
    boundary. Each entry: name -> dict with
      c: ctsdb request (path, or (path, JSON body) for a POST),
      v: VictoriaMetrics request path,
      key: the tag naming each answer series ("" for one series),
      shift: seconds to subtract from VM's timestamps to get ctsdb's (OpenTSDB labels a bucket
             with its start, a MetricsQL rollup [D] at T covers (T-D, T], so the VM query runs
             at bucket start + D - step, the bucket's last point),
      kind: "range" (series of points), "last" (one value, the series' last point).
    The equivalences are exact (same points in, same arithmetic) but for float summation order;
    compare() checks them."""
    last = e - step
    # downsample interval of the range queries: one minute on 10 s data, one hour on 30 days
    d = 3600 if dur > 86400 else 60
    dn = "1h" if d == 3600 else "1m"
    five = 3600 if dur > 86400 else 300
    fiven = "1h" if five == 3600 else "5m"
    pick = hosts - 7 if hosts > 7 else hosts - 1

    def rng(q, dsec, first=None):
        """query_range whose steps are the last point of each dsec bucket from `first`."""
        b0 = first if first is not None else s - s % dsec
        t0 = b0 + dsec - step
        t1 = last - last % dsec + dsec - step
        return "/api/v1/query_range?" + urllib.parse.urlencode(
            {"query": q, "start": t0, "end": t1, "step": "%ds" % dsec})

    def cq(m, extra=""):
        return "/api/query?start=%d&end=%d&m=%s%s" % (s, last, m, extra)

    q = {}
    q["raw_one"] = dict(
        c=cq("none:sys.cpu.user{host=host_0}"),
        v="/api/v1/query_range?" + urllib.parse.urlencode(
            {"query": vm_sel("sys.cpu.user", host="host_0"), "start": s, "end": last,
             "step": "%ds" % step}),
        key="", shift=0, kind="range")
    q["sum_all_%s_avg" % dn] = dict(
        c=cq("sum:%s-avg:sys.cpu.user" % dn),
        v=rng("sum(avg_over_time(%s[%s]))" % (vm_sel("sys.cpu.user"), dn), d),
        key="", shift=d - step, kind="range")
    q["max_by_host_%s" % fiven] = dict(
        c=cq("max:%s-max:sys.cpu.user{host=*,dc=dc_1}" % fiven),
        v=rng("max by (host) (max_over_time(%s[%s]))" % (vm_sel("sys.cpu.user", dc="dc_1"),
                                                       fiven), five),
        key="host", shift=five - step, kind="range")
    # OpenTSDB downsamples first, then takes the rate between buckets: with the last point of
    # each bucket that is (v(t+d-step) - v(t-step)) / d, which is MetricsQL's rate over [d]
    # (last point minus the last one before the window); the first bucket has no rate
    first = s - s % d + d
    q["rate_by_dc"] = dict(
        c=cq("sum:%s-last:rate{counter}:sys.net.rx_bytes{dc=*}" % dn),
        v=rng("sum by (dc) (rate(%s[%s]))" % (vm_sel("sys.net.rx_bytes"), dn), d, first),
        key="dc", shift=d - step, kind="range")
    q["tags_pick_one"] = dict(
        c=cq("none:sys.mem.used{host=host_%d,dc=dc_%d}" % (pick, pick % 3)),
        v="/api/v1/query_range?" + urllib.parse.urlencode(
            {"query": vm_sel("sys.mem.used", host="host_%d" % pick, dc="dc_%d" % (pick % 3)),
             "start": s, "end": last, "step": "%ds" % step}),
        key="", shift=0, kind="range")
    q["group_by_service"] = dict(
        c=cq("avg:%s-avg:sys.load.1m{service=*}" % fiven),
        v=rng("avg by (service) (avg_over_time(%s[%s]))" % (vm_sel("sys.load.1m"), fiven), five),
        key="service", shift=five - step, kind="range")
    if dur >= 86400 * 2:
        for dsec, name in ((3600, "1h"), (86400, "1d")):
            q["avg_%s_all" % name] = dict(
                c=cq("avg:%s-avg:sys.cpu.user" % name),
                v=rng("avg(avg_over_time(%s[%s]))" % (vm_sel("sys.cpu.user"), name), dsec),
                key="", shift=dsec - step, kind="range")
    # one bucket over the whole range (OpenTSDB's 0all: the points in [start, end), stamped at
    # the start; end = the data's end, so every point counts) against MetricsQL's rollup over
    # the whole duration at the last point, moved back to the start
    for fn, vfn in (("count", "count_over_time"), ("avg", "avg_over_time")):
        q["%s_0all" % fn] = dict(
            c="/api/query?start=%d&end=%d&m=sum:0all-%s:sys.cpu.user" % (s, e, fn),
            v=rng("sum(%s(%s[%ds]))" % (vfn, vm_sel("sys.cpu.user"), dur), dur, s),
            key="", shift=dur - step, kind="range")
    # the last point as Grafana asks it: its OpenTSDB data source POSTs /api/query with the
    # panel's range (absolute: epoch ms; a relative one would be "1h-ago"), the downsample
    # "<interval>-avg" and literal_or filters, and reads the last point of the answer; its
    # Prometheus data source asks an instant query at the range's end
    body = json.dumps({
        "start": (e - 3600) * 1000, "end": e * 1000, "msResolution": False,
        "globalAnnotations": True, "showQuery": True,
        "queries": [{"metric": "sys.cpu.user", "aggregator": "sum",
                     "downsample": "%ds-avg" % step,
                     "filters": [{"type": "literal_or", "tagk": "host", "filter": "host_0",
                                  "groupBy": False}]}]})
    q["last_grafana"] = dict(
        c=("/api/query", body),
        v="/api/v1/query?" + urllib.parse.urlencode(
            {"query": vm_sel("sys.cpu.user", host="host_0"), "time": e}),
        key="", shift=0, kind="last")
    # OpenTSDB's own last-point API (back_scan in hours, counted from now; the data ends at the
    # last day boundary, or earlier with --reuse-data: 48 hours, more if the data is older)
    back_scan = max(48, (int(time.time()) - last) // 3600 + 2)
    q["last_api"] = dict(
        c="/api/query/last?timeseries=sys.cpu.user{host=host_0}&back_scan=%d" % back_scan,
        v="/api/v1/query?" + urllib.parse.urlencode(
            {"query": "last_over_time(%s[1d])" % vm_sel("sys.cpu.user", host="host_0"),
             "time": e}),
        key="", shift=0, kind="last")
    if rollups:
        # the twins of the queries the rollup tables answer: raw rows only (rollup_raw in m=)
        out = {}
        for name, qq in q.items():
            out[name] = qq
            m = re.search(r"m=[a-z0-9]+:\d+[hd]-(sum|count|min|max|avg):", qq["c"]) \
                if isinstance(qq["c"], str) else None
            if m:
                raw = dict(qq)
                raw["c"] = qq["c"].replace(m.group(0), m.group(0) + "rollup_raw:", 1)
                raw["pair"] = name
                out[name + "_raw"] = raw
        q = out
    return q


def answer_ctsdb(q, data):
    """ctsdb's answer as {series key: {ts: value}} (kind range) or (ts, value) (kind last)."""
    doc = json.loads(data)
    if q["kind"] == "last":
        if isinstance(doc, list) and doc and "dps" in doc[0]:  # /api/query: its last point
            dps = doc[0]["dps"]
            if not dps:
                return None
            t = max(dps, key=int)
            return int(t), float(dps[t])
        if isinstance(doc, list) and doc:  # /api/query/last
            return int(doc[0]["timestamp"]) // 1000, float(doc[0]["value"])
        return None
    out = {}
    for r in doc:
        k = r["tags"].get(q["key"], "") if q["key"] else ""
        if k in out:
            raise RuntimeError("ctsdb: two answer series for %r" % k)
        out[k] = {int(t): float(v) for t, v in r["dps"].items()}
    return out


def answer_vm(q, data):
    doc = json.loads(data)
    if doc.get("status") != "success":
        raise RuntimeError("VictoriaMetrics: %s" % data[:300])
    res = doc["data"]["result"]
    if q["kind"] == "last":
        if len(res) != 1:
            return None
        return None, float(res[0]["value"][1])
    out = {}
    for r in res:
        k = r["metric"].get(q["key"], "") if q["key"] else ""
        if k in out:
            raise RuntimeError("VictoriaMetrics: two answer series for %r" % k)
        out[k] = {int(t) - q["shift"]: float(v) for t, v in r["values"]}
    return out


def close(a, b):
    """Equal but for float summation order (and the last digit of a printed double)."""
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b)) + 1e-12


def compare(name, q, cdata, vdata, last_ts):
    """Raises with the first difference between the two answers; returns the number of values
    compared. The data's last point is at last_ts (checked for the last-point queries)."""
    c, v = answer_ctsdb(q, cdata), answer_vm(q, vdata)
    if q["kind"] == "last":
        if c is None or v is None:
            raise RuntimeError("%s: no last point (ctsdb %r, VictoriaMetrics %r)" % (name, c, v))
        if c[0] != last_ts:
            raise RuntimeError("%s: ctsdb's last point is at %d, the data's at %d" %
                               (name, c[0], last_ts))
        if not close(c[1], v[1]):
            raise RuntimeError("%s: ctsdb %r, VictoriaMetrics %r" % (name, c[1], v[1]))
        return 1
    if not c:
        raise RuntimeError("%s: empty answers" % name)
    if set(c) != set(v):
        raise RuntimeError("%s: series differ: ctsdb %s, VictoriaMetrics %s" %
                           (name, sorted(c)[:10], sorted(v)[:10]))
    n = 0
    for k in sorted(c):
        if set(c[k]) != set(v[k]):
            only_c = sorted(set(c[k]) - set(v[k]))
            only_v = sorted(set(v[k]) - set(c[k]))
            raise RuntimeError("%s %r: timestamps differ: %d only in ctsdb %s, %d only in "
                               "VictoriaMetrics %s" % (name, k, len(only_c), only_c[:5],
                                                       len(only_v), only_v[:5]))
        for t in c[k]:
            if not close(c[k][t], v[k][t]):
                raise RuntimeError("%s %r at %d: ctsdb %r, VictoriaMetrics %r" %
                                   (name, k, t, c[k][t], v[k][t]))
            n += 1
    return n


def compare_ctsdb(name, a, raw_name, b):
    """Raises unless ctsdb's answers a (rollup tables) and b (raw rows) agree (close())."""
    if a is None:
        raise RuntimeError("%s: no answer of %s to compare with" % (raw_name, name))
    if set(a) != set(b):
        raise RuntimeError("%s vs %s: series differ" % (name, raw_name))
    for k in a:
        if set(a[k]) != set(b[k]):
            raise RuntimeError("%s vs %s %r: timestamps differ" % (name, raw_name, k))
        for t in a[k]:
            if not close(a[k][t], b[k][t]):
                raise RuntimeError("%s vs %s %r at %d: %r vs %r" %
                                   (name, raw_name, k, t, a[k][t], b[k][t]))


def rollup_count(conn, iv, s, e):
    """Points of sys.cpu.user the rollup tables hold in [s, e) at interval iv (1h or 1d): the
    sum of their counts read with ROLLUP_NOFALLBACK (rollups only)."""
    body = json.dumps({"start": s, "end": e - 1, "queries": [
        {"metric": "sys.cpu.user", "aggregator": "sum", "downsample": "%s-count" % iv,
         "rollupUsage": "ROLLUP_NOFALLBACK"}]})
    conn.request("POST", "/api/query", body=body)
    r = conn.getresponse()
    data = r.read()
    if r.status != 200:
        return -1
    return int(sum(float(v) for x in json.loads(data) for v in x["dps"].values()))


def read_stamp(d):
    """The stamp a --keep-data run wrote into d once both stores held every point."""
    try:
        with open(os.path.join(d, "stamp.json")) as f:
            st = json.load(f)
        for k in ("size", "start", "end", "points", "load_ctsdb_s", "load_vm_s"):
            st[k]
    except (OSError, ValueError, KeyError) as ex:
        sys.exit("query_bench: --reuse-data %s: no usable stamp.json (%s): was it left by a "
                 "--keep-data run that finished its load?" % (d, ex))
    for sub in ("ctsdb", "vm"):
        if not os.path.isdir(os.path.join(d, sub)):
            sys.exit("query_bench: --reuse-data %s has no %s directory" % (d, sub))
    return st


def build_tsd_load(work):
    exe = os.path.join(work, "tsd_load")
    subprocess.run(["cc", "-O2", "-pthread", "-o", exe,
                    os.path.join(ROOT, "tools/bench/tsd_load.c"), "-lm"], check=True)
    return exe


def vm_count(vconn, metric_re, s, e):
    """Samples VictoriaMetrics holds of the metrics matching metric_re in [s, e)."""
    path = "/api/v1/query?" + urllib.parse.urlencode(
        {"query": 'sum(count_over_time({__name__=~"%s"}[%ds]))' % (metric_re, e - s),
         "time": e - 1})
    vconn.request("GET", path)
    r = vconn.getresponse()
    doc = json.loads(r.read())
    res = doc.get("data", {}).get("result", [])
    return int(float(res[0]["value"][1])) if res else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default=os.environ.get("SIZE", "2000x1d"),
                    help="SERIESxDURATION of tsd_load's value model: 2000x1d (default), "
                         "100000x1h, 200x30d (one point a minute), or any N (multiple of 20) "
                         "x 1d|1h|10m|30d")
    ap.add_argument("--runs", type=int, default=int(os.environ.get("RUNS", 15)))
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--load-timeout", type=int, default=900,
                    help="seconds the load of both stores may take (each bounded; default 900)")
    ap.add_argument("--load-conns", type=int, default=0,
                    help="telnet connections of each load (default 2; 4 from 20,000 series)")
    ap.add_argument("--rollups", action="store_true",
                    help="restart the TSD with rollup tables, wait until its job has rolled up "
                         "every loaded point, answer the whole-hour downsamples from them and "
                         "time each also from raw rows (NAME_raw)")
    ap.add_argument("--rollup-timeout", type=int, default=900,
                    help="seconds the rollup job may take to cover the data (default 900)")
    ap.add_argument("--tsd-opt", action="append", default=[],
                    help="extra `ctsdb tsd` option, e.g. --tsd-opt=--tsd.storage.salt.width=0 "
                         "(OpenTSDB's unsalted layout; the default is salted)")
    ap.add_argument("--client", choices=("c", "raw", "http.client"), default="c",
                    help="HTTP client of the timed requests, the same for both servers: c "
                         "(tools/bench/http_timer.c, timed in C; default), raw (a minimal Python "
                         "socket client: ~0.02-0.04 ms more per answer) or http.client (Python's; "
                         "tens of microseconds more)")
    ap.add_argument("--only", default="", help="comma list of query names to run")
    ap.add_argument("--idle", choices=("halt", "poll"), default="halt",
                    help="idle CPUs during the timed runs: halt (default: the kernel's idle "
                         "states) or poll (/dev/cpu_dma_latency held at 0, see "
                         "hold_cpu_polling)")
    ap.add_argument("--keep-dir", action="store_true",
                    help="keep the work directory (data of both stores) and print its path")
    ap.add_argument("--keep-data", default="",
                    help="load both stores into DIR/ctsdb and DIR/vm (DIR new or empty) and "
                         "keep them, stamped (DIR/stamp.json: size, the stream's start and "
                         "end), for later runs with --reuse-data DIR")
    ap.add_argument("--reuse-data", default="",
                    help="skip the load: run both servers on the data a --keep-data run left "
                         "in DIR (its size and time range from DIR/stamp.json; every point is "
                         "still counted on both sides and every answer checked)")
    ap.add_argument("--perf", default="",
                    help="record `perf record -g` of the TSD during ctsdb's timed runs of each "
                         "query into PREFIX<name>.data")
    args = ap.parse_args()
    stamp = None
    if args.keep_data and args.reuse_data:
        sys.exit("query_bench: --keep-data and --reuse-data exclude each other")
    if args.reuse_data:
        stamp = read_stamp(args.reuse_data)
        if "--size" in " ".join(sys.argv) and args.size != stamp["size"]:
            sys.exit("query_bench: %s holds %s, not --size %s" %
                     (args.reuse_data, stamp["size"], args.size))
        args.size = stamp["size"]
    if args.keep_data:
        args.keep_data = os.path.abspath(args.keep_data)
        if os.path.exists(args.keep_data) and os.listdir(args.keep_data):
            sys.exit("query_bench: --keep-data %s exists and is not empty" % args.keep_data)
        os.makedirs(args.keep_data, exist_ok=True)
    hosts, dur, step = parse_size(args.size)
    ctsdb = os.environ.get("CTSDB", os.path.join(ROOT, "bin", "ctsdb"))
    vm_bin = shutil.which("victoria-metrics") or shutil.which("victoria-metrics-prod")
    if not os.access(ctsdb, os.X_OK) or not vm_bin:
        sys.exit("query_bench: needs bin/ctsdb and victoria-metrics (deps/bench.txt)")
    work = tempfile.mkdtemp(prefix="ctsdb-qbench-")
    procs = []
    failed = []
    try:
        # the data ends at the last day boundary (so that 1d-avg buckets are whole days and both
        # stores see the same bucket edges) and covers `dur` seconds before it
        e = int(time.time()) // 86400 * 86400
        if stamp:
            e = stamp["end"]
        s = e - dur
        npts = hosts * 20 * (dur // step)
        if stamp and (stamp["start"] != s or stamp["points"] != npts):
            sys.exit("query_bench: %s/stamp.json is inconsistent with its size" %
                     args.reuse_data)
        # (os.path.abspath("") is the current directory: only a given --reuse-data is made
        # absolute, else a run without either option would load into the stores of the last)
        data_dir = args.keep_data or (os.path.abspath(args.reuse_data) if args.reuse_data
                                      else work)
        loader = None if stamp else build_tsd_load(work)
        # ---- start both servers --------------------------------------------------------
        log = open(os.path.join(work, "tsd.log"), "w+")
        tsd_cmd = [ctsdb, "tsd", "--bind", "127.0.0.1", "--port", "0", "--data",
                   os.path.join(data_dir, "ctsdb")] + args.tsd_opt
        rollup_opts = ["--tsd.rollups.enable=true", "--tsd.rollups.ctsdb.period=1",
                       "--tsd.rollups.ctsdb.grace=0"] if args.rollups else []
        if stamp:  # loaded, restarted and counted by an earlier run: the restart's TSD at once
            tsd_cmd += rollup_opts
        tsd = subprocess.Popen(tsd_cmd, stderr=log)
        procs.append(tsd)
        cport = tsd_port(log)
        vport, vtport = free_port(), free_port()
        vm = subprocess.Popen([vm_bin, "-httpListenAddr", "127.0.0.1:%d" % vport,
                               "-opentsdbListenAddr", "127.0.0.1:%d" % vtport,
                               "-storageDataPath", os.path.join(data_dir, "vm"),
                               "-retentionPeriod", "10y", "-search.disableCache",
                               "-search.latencyOffset", "0s",
                               "-search.maxPointsPerTimeseries", "1000000",
                               "-search.maxSamplesPerQuery", "10000000000",
                               "-loggerLevel", "ERROR"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(vm)
        if not wait_http("127.0.0.1", vport, "/health"):
            sys.exit("query_bench: victoria-metrics did not start")

        if stamp:  # the stores were loaded by an earlier run: count VictoriaMetrics' points
            load_ctsdb, load_vm = stamp["load_ctsdb_s"], stamp["load_vm_s"]
            # (a VictoriaMetrics just started may count nothing for a moment on a busy machine:
            # counted again until it holds every point, at most 120 s)
            hc = http.client.HTTPConnection("127.0.0.1", vport, timeout=600)
            t1 = time.time()
            got = vm_count(hc, r"sys\\..*", s, e)
            while got != npts and time.time() - t1 < 120:
                time.sleep(1)
                got = vm_count(hc, r"sys\\..*", s, e)
            hc.close()
            if got != npts:
                sys.exit("query_bench: VictoriaMetrics in %s holds %d points of %d" %
                         (args.reuse_data, got, npts))
        if not stamp:
            # ---- load: the same tsd_load telnet stream into both, at once ----------------------
            # ctsdb acknowledges (`version` after the puts: all in its log); VictoriaMetrics'
            # OpenTSDB listener does not, so it is flushed and counted until it holds every point
            conns = args.load_conns or (4 if hosts * 20 >= 20000 else 2)
            load_args = ["--size", args.size, "--start", str(s), "--mode", "telnet", "--conns",
                         str(conns)]
            t0 = time.time()
            lc = subprocess.Popen([loader, "--port", str(cport), "--ack"] + load_args,
                                  stdout=subprocess.PIPE, text=True)
            lv = subprocess.Popen([loader, "--port", str(vtport)] + load_args,
                                  stdout=subprocess.PIPE, text=True)
            procs += [lc, lv]
            for p, side in ((lc, "ctsdb"), (lv, "VictoriaMetrics")):
                try:
                    p.communicate(timeout=max(1, args.load_timeout - (time.time() - t0)))
                except subprocess.TimeoutExpired:
                    sys.exit("query_bench: loading %s took over %d s" % (side, args.load_timeout))
                if p.returncode != 0:
                    sys.exit("query_bench: tsd_load into %s failed (%d)" % (side, p.returncode))
                procs.remove(p)
                if p is lc:
                    load_ctsdb = time.time() - t0
            hc = http.client.HTTPConnection("127.0.0.1", vport, timeout=600)
            got = -1
            while time.time() - t0 < args.load_timeout:
                hc.request("GET", "/internal/force_flush")
                hc.getresponse().read()
                got = vm_count(hc, r"sys\\..*", s, e)
                if got >= npts:
                    break
                time.sleep(1)
            load_vm = time.time() - t0
            if got != npts:
                sys.exit("query_bench: VictoriaMetrics holds %d points of %d after %d s" %
                         (got, npts, args.load_timeout))
            # ctsdb: restart so that the data is flushed and compacted, as historical data is
            tsd.send_signal(signal.SIGTERM)
            tsd.wait(timeout=300)
            procs.remove(tsd)
            log.truncate(0)
            tsd_cmd += rollup_opts  # the job rolls up every loaded (closed) hour now
            tsd = subprocess.Popen(tsd_cmd, stderr=log)
            procs.append(tsd)
            cport = tsd_port(log)
        rolled_s = None
        if args.rollups:
            t1 = time.time()
            rc = http.client.HTTPConnection("127.0.0.1", cport, timeout=600)
            # the 1d table only when the data spans whole days
            ivs = ("1h", "1d") if dur % 86400 == 0 else ("1h",)
            want = tuple(npts // 20 for _ in ivs)
            got = None
            while time.time() - t1 < args.rollup_timeout:
                got = tuple(rollup_count(rc, iv, s, e) for iv in ivs)
                if got == want:
                    break
                time.sleep(1)
            rc.close()
            if got != want:
                sys.exit("query_bench: after %d s the rollup tables hold %s sys.cpu.user points "
                         "(%s) of %d" % (args.rollup_timeout, got, ", ".join(ivs), want[0]))
            rolled_s = time.time() - t1

        # ---- queries ------------------------------------------------------------------
        queries = build_queries(hosts, dur, step, s, e, args.rollups)
        if args.only:
            unknown = set(args.only.split(",")) - set(queries)
            if unknown:
                sys.exit("query_bench: unknown query %s (this size has: %s)" %
                         (",".join(sorted(unknown)), ", ".join(queries)))
        if args.client == "c":
            timer = CTimer(work, [cport, vport])
            procs.append(timer.proc)
            cc, vc = timer.conn(cport), timer.conn(vport)
        else:
            client = RawConn if args.client == "raw" else http.client.HTTPConnection
            cc = client("127.0.0.1", cport, timeout=600)
            vc = client("127.0.0.1", vport, timeout=600)

        def ask(conn, req):
            if isinstance(req, tuple):
                return timed(conn, req[0], "POST", req[1])
            return timed(conn, req)
        # every point of ctsdb is counted too (after the restart), so that a lost point fails
        # here rather than as a wrong answer below
        _, data = ask(cc, "/api/query?start=%d&end=%d&m=sum:0all-count:sys.cpu.user" %
                      (s, e - 1))
        cnt = sum(float(x) for r in json.loads(data) for x in r["dps"].values())
        if int(cnt) != npts // 20:
            sys.exit("query_bench: ctsdb holds %d sys.cpu.user points of %d" %
                     (cnt, npts // 20))
        if args.keep_data:  # both stores hold every point: later runs may reuse them
            with open(os.path.join(args.keep_data, "stamp.json"), "w") as f:
                json.dump({"size": args.size, "start": s, "end": e, "points": npts,
                           "load_ctsdb_s": round(load_ctsdb, 1), "load_vm_s": round(load_vm, 1),
                           "tsd_opt": args.tsd_opt}, f)
                f.write("\n")
        settled = wait_idle([tsd.pid, vm.pid], quiet_s=0.5, limit_s=60)
        qos_fd = hold_cpu_polling() if args.idle == "poll" else None
        rows = []
        threads = {}
        cpu = {}  # name -> (ctsdb, VM) server CPU ms per query over the timed runs
        checked = {}
        answers = {}  # ctsdb's parsed answers, for the rollup / raw comparison
        for name, q in queries.items():
            if args.only and name not in args.only.split(","):
                continue
            sides = (("ctsdb", cc, q["c"]), ("vm", vc, q["v"]))
            # the answers, checked before any timing: the same numbers or the run fails
            _, cdata = ask(cc, q["c"])
            _, vdata = ask(vc, q["v"])
            try:
                checked[name] = compare(name, q, cdata, vdata, e - step)
                if q["kind"] == "range":
                    answers[name] = answer_ctsdb(q, cdata)
                if "pair" in q:  # raw rows against the rollup tables' answer
                    compare_ctsdb(q["pair"], answers.get(q["pair"]), name, answers[name])
            except (RuntimeError, KeyError, ValueError) as ex:
                failed.append(str(ex))
                print("ANSWERS DIFFER: %s" % ex, file=sys.stderr)
                continue
            for side, conn, req in sides:
                for _ in range(args.warmup):
                    ask(conn, req)
            rec = None
            if args.perf:
                rec = subprocess.Popen(["perf", "record", "-g", "-q", "-p", str(tsd.pid),
                                        "-o", args.perf + name + ".data"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(0.5)
            # the two sides alternate run by run, so that both see the same load on a shared
            # machine (back to back blocks of runs each met a different moment)
            times = {"ctsdb": [], "vm": []}
            size = {}
            counts0 = query_counts(cc)
            cpu0 = (cpu_ticks(tsd.pid), cpu_ticks(vm.pid))
            for _ in range(args.runs):
                for side, conn, req in sides:
                    dt, data = ask(conn, req)
                    times[side].append(dt)
                    size[side] = len(data)
            cpu1 = (cpu_ticks(tsd.pid), cpu_ticks(vm.pid))
            cpu[name] = tuple((b - a) * 1000.0 / CLK_TCK / args.runs for a, b in zip(cpu0, cpu1))
            if rec:
                rec.send_signal(signal.SIGINT)
                rec.wait(timeout=120)
            res = {side: (statistics.median(times[side]) * 1000, size[side])
                   for side, _, _ in sides}
            counts1 = query_counts(cc)
            threads[name] = tuple(b - a for a, b in zip(counts0, counts1))
            rows.append((name, res))
        floor = {"ctsdb": [], "vm": []}
        for _ in range(args.runs):
            for side, conn, path in (("ctsdb", cc, "/api/version"), ("vm", vc, "/health")):
                floor[side].append(timed(conn, path)[0])
        print("dataset %s: %d hosts x 20 metrics (tsd_load's value model), one point every %d s "
              "for %s, ending %s = %d points; loaded at once into both%s: ctsdb %.1f s (telnet, "
              "acknowledged), VictoriaMetrics %.1f s (OpenTSDB telnet, until all counted)" %
              (args.size, hosts, step, args.size.split("x")[1],
               time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(e)), npts,
               " by an earlier run (--reuse-data)" if stamp else "", load_ctsdb, load_vm))
        if rolled_s is not None:
            print("rollups: the TSD's job rolled up every loaded point (1h and 1d tables) "
                  "%.1f s after the restart; NAME = rollup tables (default usage), NAME_raw = "
                  "the same query from raw rows (rollup_raw), both checked against "
                  "VictoriaMetrics and against each other" % rolled_s)
        if not settled:
            print("warning: the servers were still using CPU after 60 s; timed anyway")
        print()
        print("| query | ctsdb median ms | VictoriaMetrics median ms | ctsdb / VM | server CPU "
              "ms a query, ctsdb / VM (ratio) | values checked | ctsdb bytes | VM bytes |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for name, res in rows:
            c, v = res["ctsdb"], res["vm"]
            cc_ms, vc_ms = cpu[name]
            print("| %s | %.2f | %.2f | %.2f | %.2f / %.2f (%s) | %d | %d | %d |" % (
                name, c[0], v[0], c[0] / v[0], cc_ms, vc_ms,
                "%.2f" % (cc_ms / vc_ms) if vc_ms else "-", checked[name], c[1], v[1]))
        print()
        print("server CPU: user + system time of each server's process over the timed runs "
              "(/proc, %d Hz ticks), divided by the runs: less sensitive to a busy machine than "
              "wall time, coarse for answers of a few ms (a tick is %.1f ms over %d runs)" %
              (CLK_TCK, 1000.0 / CLK_TCK / args.runs, args.runs))
        print()
        print("ctsdb range queries of the timed runs on several scan threads / on one because "
              "every CPU was busy: " + ", ".join("%s %d/%d" % (n, threads[n][0], threads[n][1])
                                                for n, _ in rows if not n.startswith("last")))
        print("no-work request (ctsdb /api/version, VictoriaMetrics /health): %.3f / %.3f ms "
              "median (client: %s)" % (statistics.median(floor["ctsdb"]) * 1000,
                                       statistics.median(floor["vm"]) * 1000, args.client))
        print("idle CPUs during the timed runs: %s" %
              ("polling (/dev/cpu_dma_latency held at 0)" if qos_fd is not None else
               "the kernel's idle states" + (" (polling was asked for but is not available)"
                                             if args.idle == "poll" else "")))
        if qos_fd is not None:
            os.close(qos_fd)
        if failed:
            print("FAILED: %d queries' answers differ between ctsdb and VictoriaMetrics:" %
                  len(failed))
            for f in failed:
                print("  " + f)
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
        if args.keep_dir:
            print("work directory kept: %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
