#!/usr/bin/env python3
"""query_bench.py - query latency of ctsdb's /api/query next to VictoriaMetrics answering the
equivalent PromQL, in one run, both on loopback.

Dataset (devops-like): HOSTS hosts spread over 4 datacenters, each with a gauge
cpu.usage_user (integer percent, bounded random walk) and a counter net.bytes_recv, one point
every 10 s for HOURS hours ending now. Tags: hostname, datacenter, rack, os.

Both stores get the same points: ctsdb through telnet `put` lines on its port, VictoriaMetrics
through /api/v1/import/prometheus. VictoriaMetrics runs with -search.disableCache so that
neither side answers from a result cache.

Queries (ctsdb m= / PromQL):
  raw_day       one series raw over the whole range
  sum_1m_avg    sum of cpu.usage_user over all hosts at 1m-avg
  max_by_host   max by host within one dc at 5m-max
  rate_by_dc    the counter's rate summed by dc (1m buckets)
  last_point    the last point of one series

Before timing, both servers are left to finish the background work of the load (until neither
used CPU for 0.5 s, at most 60 s). Each query runs WARMUP times on each side, then RUNS times with the two sides alternating run
by run (so both meet the same load on a shared machine); the median wall time of a full HTTP
answer (keep-alive connection, body read to the end) is reported, with the ratio ctsdb / VM.

After the table it prints the median of a request that does no query work on either side
(ctsdb /api/version, VictoriaMetrics /health): the HTTP client, loopback and request handling
floor that every answer's time includes (it bounds the ratio of the tiniest queries). With
--only last_point it also prints each server's own median time of its last_point answers
(ctsdb's tsd.http.latency_us_50pct, VictoriaMetrics' vm_request_duration_seconds quantile 0.5
for /api/v1/query), read right after the timed runs: the answers without the round trip.

--idle poll keeps idle CPUs polling instead of halting during the timed runs
(/dev/cpu_dma_latency held at 0, as latency benchmarks often run): on this virtual machine a
halted vCPU's wake-up adds ~90 us to every round trip of both servers alike (the no-work
request: 0.13 ms halted, 0.045 ms polling), so it shows the servers' own work more than the
default --idle halt (the kernel's idle states, as every session measured) does.

The timed requests go through one client, the same for both servers: by default a small C
program (tools/bench/http_timer.c, built into the work directory) that times each request from
the write of the request to the last byte of the answer, so that the script's own per-request
cost is not in the figures; --client raw uses a minimal Python socket client (RawConn, which
adds ~0.02-0.04 ms to every answer on both sides) and --client http.client Python's
http.client (slower still).

Usage: tools/bench/query_bench.py [--hosts N] [--hours H] [--runs R]
                                  [--client c|raw|http.client] [--idle poll|halt]
Needs bin/ctsdb (make) and victoria-metrics (deps/bench.txt). Prints a markdown table.
"""
import argparse
import http.client
import json
import os
import random
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


def gen_points(hosts, hours, now_s):
    """Yields (metric, ts_s, value, tags) in time order per series."""
    start = now_s - hours * 3600
    start -= start % 10
    rnd = random.Random(42)
    for h in range(hosts):
        tags = {"hostname": "host_%d" % h, "datacenter": "dc%d" % (h % 4),
                "rack": "r%d" % (h % 10), "os": "linux"}
        cpu = rnd.randint(5, 95)
        ctr = rnd.randint(0, 1 << 30)
        for ts in range(start, now_s, 10):
            cpu = min(100, max(0, cpu + rnd.randint(-3, 3)))
            ctr += rnd.randint(1000, 5000)
            yield ("cpu.usage_user", ts, cpu, tags)
            yield ("net.bytes_recv", ts, ctr, tags)


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


def server_median_ctsdb(conn):
    """ctsdb's own median HTTP answer time in ms (/api/stats tsd.http.latency_us_50pct), or
    NaN if absent."""
    _, data = timed(conn, "/api/stats")
    for d in json.loads(data):
        if d["metric"] == "tsd.http.latency_us_50pct" and d["tags"].get("type") == "all":
            return int(d["value"]) / 1000.0
    return float("nan")


def server_median_vm(conn):
    """VictoriaMetrics' own median /api/v1/query time in ms (its /metrics summary), or NaN."""
    _, data = timed(conn, "/metrics")
    m = re.search(rb'vm_request_duration_seconds\{path="/api/v1/query",quantile="0.5"\} (\S+)',
                  data)
    return float(m.group(1)) * 1000 if m else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=int(os.environ.get("HOSTS", 50)))
    ap.add_argument("--hours", type=int, default=int(os.environ.get("HOURS", 24)))
    ap.add_argument("--runs", type=int, default=int(os.environ.get("RUNS", 15)))
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--tsd-opt", action="append", default=[],
                    help="extra `ctsdb tsd` option, e.g. --tsd-opt=--tsd.storage.salt.width=0 "
                         "(OpenTSDB's unsalted layout; the default is salted)")
    ap.add_argument("--client", choices=("c", "raw", "http.client"), default="c",
                    help="HTTP client of the timed requests, the same for both servers: c "
                         "(tools/bench/http_timer.c, timed in C; default), raw (a minimal Python "
                         "socket client: ~0.02-0.04 ms more per answer) or http.client (Python's; "
                         "what session 3's first-round figures used: tens of microseconds more)")
    ap.add_argument("--only", default="", help="comma list of query names to run")
    ap.add_argument("--idle", choices=("halt", "poll"), default="halt",
                    help="idle CPUs during the timed runs: halt (default: the kernel's idle "
                         "states) or poll (/dev/cpu_dma_latency held at 0, see "
                         "hold_cpu_polling)")
    ap.add_argument("--keep-dir", action="store_true",
                    help="keep the work directory (data of both stores) and print its path")
    ap.add_argument("--perf", default="",
                    help="record `perf record -g` of the TSD during ctsdb's timed runs of each "
                         "query into PREFIX<name>.data")
    ap.add_argument("--show-cells", action="store_true",
                    help="print how the hour rows of host_0's cpu.usage_user are stored "
                         "(`ctsdb scan` cell layouts) after the restart")
    args = ap.parse_args()
    ctsdb = os.environ.get("CTSDB", os.path.join(ROOT, "bin", "ctsdb"))
    vm_bin = shutil.which("victoria-metrics") or shutil.which("victoria-metrics-prod")
    if not os.access(ctsdb, os.X_OK) or not vm_bin:
        sys.exit("query_bench: needs bin/ctsdb and victoria-metrics (deps/bench.txt)")
    work = tempfile.mkdtemp(prefix="ctsdb-qbench-")
    procs = []
    try:
        now_s = int(time.time())
        # ---- start both servers --------------------------------------------------------
        log = open(os.path.join(work, "tsd.log"), "w+")
        tsd_cmd = [ctsdb, "tsd", "--bind", "127.0.0.1", "--port", "0", "--data",
                   os.path.join(work, "ctsdb")] + args.tsd_opt
        tsd = subprocess.Popen(tsd_cmd, stderr=log)
        procs.append(tsd)
        cport = tsd_port(log)
        vport = free_port()
        vm = subprocess.Popen([vm_bin, "-httpListenAddr", "127.0.0.1:%d" % vport,
                               "-storageDataPath", os.path.join(work, "vm"),
                               "-retentionPeriod", "10y", "-search.disableCache",
                               "-search.latencyOffset", "0s", "-loggerLevel", "ERROR"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(vm)
        if not wait_http("127.0.0.1", vport, "/health"):
            sys.exit("query_bench: victoria-metrics did not start")

        # ---- load ---------------------------------------------------------------------
        t0 = time.time()
        npts = 0
        sock = socket.create_connection(("127.0.0.1", cport))
        vm_lines = []
        buf = []
        for metric, ts, v, tags in gen_points(args.hosts, args.hours, now_s):
            t = " ".join("%s=%s" % kv for kv in sorted(tags.items()))
            buf.append("put %s %d %d %s\n" % (metric, ts, v, t))
            lbl = ",".join('%s="%s"' % kv for kv in sorted(tags.items()))
            vm_lines.append("%s{%s} %d %d\n" % (metric.replace(".", "_"), lbl, v, ts * 1000))
            npts += 1
            if len(buf) >= 20000:
                sock.sendall("".join(buf).encode())
                buf = []
        if buf:
            sock.sendall("".join(buf).encode())
        sock.sendall(b"version\n")
        sock.settimeout(600)
        got = b""
        while b"\n" not in got:  # the reply to `version` comes after every put before it
            got += sock.recv(4096)
        sock.close()
        load_ctsdb = time.time() - t0
        t0 = time.time()
        vc = http.client.HTTPConnection("127.0.0.1", vport, timeout=600)
        chunk = 200000
        for i in range(0, len(vm_lines), chunk):
            vc.request("POST", "/api/v1/import/prometheus",
                       body="".join(vm_lines[i:i + chunk]).encode())
            r = vc.getresponse()
            r.read()
        vc.request("GET", "/internal/force_flush")
        vc.getresponse().read()
        load_vm = time.time() - t0
        del vm_lines
        # ctsdb: restart so that the hours are flushed and compacted, as historical data is
        # (VictoriaMetrics was flushed with /internal/force_flush above)
        tsd.send_signal(signal.SIGTERM)
        tsd.wait(timeout=120)
        procs.remove(tsd)
        log.truncate(0)
        tsd = subprocess.Popen(tsd_cmd, stderr=log)
        procs.append(tsd)
        cport = tsd_port(log)
        if args.show_cells:
            out = subprocess.run([ctsdb, "scan", "--data", os.path.join(work, "ctsdb")] +
                                 [str(now_s - args.hours * 3600), str(now_s), "cpu.usage_user",
                                  "hostname=host_0"], capture_output=True, text=True)
            kinds = {}
            for line in out.stdout.splitlines():
                m = re.match(r"\s+(\S+ ?\S*) cell", line)
                if m:
                    kinds[m.group(1)] = kinds.get(m.group(1), 0) + 1
            print("host_0 cpu.usage_user cells by layout:", kinds or out.stdout[:2000],
                  out.stderr[:500])

        # ---- queries ------------------------------------------------------------------
        start = now_s - args.hours * 3600
        host0 = "hostname=host_0,datacenter=dc0,rack=r0,os=linux"
        s, e = start, now_s
        cq = {
            "raw_day": "/api/query?start=%d&end=%d&m=none:cpu.usage_user{%s}" % (s, e, host0),
            "sum_1m_avg": "/api/query?start=%d&end=%d&m=sum:1m-avg:cpu.usage_user" % (s, e),
            "max_by_host": "/api/query?start=%d&end=%d&m=max:5m-max:cpu.usage_user"
                           "{hostname=*,datacenter=dc1}" % (s, e),
            "rate_by_dc": "/api/query?start=%d&end=%d&m=sum:1m-avg:rate{counter}:"
                          "net.bytes_recv{datacenter=*}" % (s, e),
            "last_point": "/api/query/last?timeseries=cpu.usage_user{%s}&back_scan=2" % host0,
        }
        sel0 = 'hostname="host_0",datacenter="dc0",rack="r0",os="linux"'

        def rng(q, step):
            return "/api/v1/query_range?" + urllib.parse.urlencode(
                {"query": q, "start": s, "end": e, "step": step})
        vq = {
            "raw_day": rng("cpu_usage_user{%s}" % sel0, "10s"),
            "sum_1m_avg": rng("sum(avg_over_time(cpu_usage_user[1m]))", "1m"),
            "max_by_host": rng('max by (hostname) (max_over_time(cpu_usage_user'
                               '{datacenter="dc1"}[5m]))', "5m"),
            "rate_by_dc": rng("sum by (datacenter) (rate(net_bytes_recv[1m]))", "1m"),
            "last_point": "/api/v1/query?" + urllib.parse.urlencode(
                {"query": "last_over_time(cpu_usage_user{%s}[1h])" % sel0, "time": e}),
        }
        # the same client class for both sides (see --client)
        if args.client == "c":
            timer = CTimer(work, [cport, vport])
            procs.append(timer.proc)
            cc, vc = timer.conn(cport), timer.conn(vport)
        else:
            client = RawConn if args.client == "raw" else http.client.HTTPConnection
            cc = client("127.0.0.1", cport, timeout=600)
            vc = client("127.0.0.1", vport, timeout=600)
        # wait (bounded) until both see the last point
        for _ in range(600):
            _, body = timed(cc, cq["last_point"])
            _, vbody = timed(vc, vq["last_point"])
            if json.loads(body) and json.loads(vbody)["data"]["result"]:
                break
            time.sleep(0.1)
        # both servers settle first: the timed runs should not meet the background work the
        # load left behind (ctsdb's flushes and compactions after the restart, VictoriaMetrics'
        # merges), so wait (bounded) until neither used CPU for 0.5 s
        settled = wait_idle([tsd.pid, vm.pid], quiet_s=0.5, limit_s=60)
        qos_fd = hold_cpu_polling() if args.idle == "poll" else None
        rows = []
        server_side = None
        threads = {}
        for name in cq:
            if args.only and name not in args.only.split(","):
                continue
            res = {}
            sides = (("ctsdb", cc, cq[name]), ("vm", vc, vq[name]))
            for side, conn, path in sides:
                for _ in range(args.warmup):
                    timed(conn, path)
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
            for _ in range(args.runs):
                for side, conn, path in sides:
                    dt, data = timed(conn, path)
                    times[side].append(dt)
                    size[side] = len(data)
            if rec:
                rec.send_signal(signal.SIGINT)
                rec.wait(timeout=120)
            for side, _, _ in sides:
                res[side] = (statistics.median(times[side]) * 1000, size[side])
            if name == "last_point" and args.only == "last_point":
                # only last queries went to either server's query path so far: their own
                # timing of the answers (ctsdb from the request read to the answer handed to the
                # socket, VictoriaMetrics' handler time), read before anything else is asked
                server_side = (server_median_ctsdb(cc), server_median_vm(vc))
            counts1 = query_counts(cc)
            threads[name] = tuple(b - a for a, b in zip(counts0, counts1))
            rows.append((name, res))
        # the floor every answer pays: a request that does no query work on either side (HTTP
        # client, loopback, request parsing, one small reply), measured the same way (after the
        # queries, so that the servers' own timings above hold query answers only)
        floor = {"ctsdb": [], "vm": []}
        for _ in range(args.runs):
            for side, conn, path in (("ctsdb", cc, "/api/version"), ("vm", vc, "/health")):
                floor[side].append(timed(conn, path)[0])
        print("dataset: %d hosts x 2 metrics x %d h at 10 s = %d points; load ctsdb %.1f s "
              "(telnet), VictoriaMetrics %.1f s (import)" % (args.hosts, args.hours, npts,
                                                            load_ctsdb, load_vm))
        if not settled:
            print("warning: the servers were still using CPU after 60 s; timed anyway")
        print()
        print("| query | ctsdb median ms | VictoriaMetrics median ms | ctsdb / VM | ctsdb bytes |"
              " VM bytes |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, res in rows:
            c, v = res["ctsdb"], res["vm"]
            print("| %s | %.2f | %.2f | %.2f | %d | %d |" % (name, c[0], v[0], c[0] / v[0],
                                                              c[1], v[1]))
        print()
        print("ctsdb range queries of the timed runs on several scan threads / on one because every "
              "CPU was busy: " + ", ".join("%s %d/%d" % (n, threads[n][0], threads[n][1])
                                           for n, _ in rows if n != "last_point"))
        if "last_point" in threads:
            print("ctsdb last_point answers of the timed runs on the network loop (the rest on a "
                  "worker): %d/%d" % (threads["last_point"][2], args.runs))
        if server_side:
            print("last_point answers timed by the servers themselves, median (ctsdb "
                  "tsd.http.latency_us_50pct, VictoriaMetrics vm_request_duration_seconds "
                  "quantile 0.5 of /api/v1/query): %.3f / %.3f ms" % server_side)
        print("no-work request (ctsdb /api/version, VictoriaMetrics /health): %.3f / %.3f ms "
              "median (client: %s)" % (statistics.median(floor["ctsdb"]) * 1000,
                                       statistics.median(floor["vm"]) * 1000, args.client))
        print("idle CPUs during the timed runs: %s" %
              ("polling (/dev/cpu_dma_latency held at 0)" if qos_fd is not None else
               "the kernel's idle states" + (" (polling was asked for but is not available)"
                                             if args.idle == "poll" else "")))
        if qos_fd is not None:
            os.close(qos_fd)
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        if args.keep_dir:
            print("work directory kept: %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
