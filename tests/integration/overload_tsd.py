#!/usr/bin/env python3
"""overload_tsd.py - more ingest than the TSD can absorb, for a bounded time.

Writers (telnet and HTTP, the crash test's Writer class: acknowledged = reply to a later
`version` / HTTP 204) push as fast as they can for LOAD_SECONDS, and "flood" writers send put
lines over telnet without waiting for anything (megabytes at a time: only the TSD's
backpressure, which stops reading their sockets, holds them back; their points are
acknowledged by one `version` at the end). A prober measures /api/version and a small
/api/query, and the TSD's resident memory is sampled from /proc (every 0.2 s, and every 50 ms
by a separate sampler thread). Checks:
  * the TSD applied backpressure: its `tsd.ingest.backpressure` counter (times it stopped
    reading sockets because every ingest batch was in use) grew during the load;
  * /api/version and a query keep answering during the overload (each within 10 s);
  * peak RSS stays under the one memory setting the TSD runs with,
    tsd.core.memory_limit_bytes = MEMORY_LIMIT_MB (default 256 MiB), from which it derives
    everything else, during the load and the verification queries after it (the anonymous
    part, RssAnon, is printed too);
  * after the load stops, every acknowledged point is queryable (nothing acknowledged is lost).
Prints "ok - ..." / "not ok - ..." and the figures.
"""
import bisect
import json
import os
import socket
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
import crash_tsd  # noqa: E402  (shares the writers and the TSD launcher)

LOAD_SECONDS = float(os.environ.get("LOAD_SECONDS", "12"))
# The one memory setting the TSD runs with (tsd.core.memory_limit_bytes): the TSD derives its
# block cache, memstore ceiling, flush size, connection limit and largest HTTP body from it
# (tsd/membudget.h, docs/tsd.md "Memory limit"), and its peak RSS must stay under it.
MEMORY_LIMIT_MB = int(os.environ.get("MEMORY_LIMIT_MB", "256"))
TEL, HTTP, FLOOD = 6, 4, 4
WINDOW = 100000  # seconds (= points per writer) per verification query: under the derived
# tsd.query.limits.data_points.default
TSD_ARGS = ["--tsd.core.memory_limit_bytes=%d" % (MEMORY_LIMIT_MB << 20)] + os.environ.get("OVERLOAD_TSD_ARGS", "").split()


class Flood(threading.Thread):
    """Telnet puts sent without waiting (1 MB at a time); acknowledged by one `version` at the end."""

    def __init__(self, port, idx, start_ts, stop):
        super().__init__(daemon=True)
        self.port, self.idx, self.ts, self.ts0, self.stop = port, idx, start_ts, start_ts, stop
        self.sent, self.acked = range(0), range(0)
        self.blocked_s = 0.0

    def run(self):
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=60)
            while not self.stop.is_set():
                lines = []
                for _ in range(20000):
                    lines.append("put crash.flood %d %d conn=f%d s=%d\n"
                                 % (self.ts, crash_tsd.value_of(self.ts), self.idx, self.ts % crash_tsd.SPREAD))
                    self.ts += 1
                self.sent = range(self.ts0, self.ts)  # a range: no list of millions of ints
                t0 = time.time()
                s.sendall("".join(lines).encode())
                self.blocked_s += time.time() - t0
            s.sendall(b"version\n")
            f = s.makefile("rb")
            got = f.readline()
            if got.startswith(b"net.opentsdb") or b"built at revision" in got:
                self.acked = self.sent
            s.close()
        except OSError:
            pass


def stat_value(port, name):
    with urllib.request.urlopen("http://127.0.0.1:%d/api/stats" % port, timeout=30) as r:
        for d in json.loads(r.read()):
            if d.get("metric") == name:
                return int(float(d["value"]))
    return None


def rss_mb(pid, field="VmRSS"):
    try:
        for line in open("/proc/%d/status" % pid):
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def rejected(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/api/stats" % port, timeout=30) as r:
        for d in json.loads(r.read()):
            if d.get("metric") == "tsd.connectionmgr.exceptions" and d.get("tags", {}).get("type") == "rejected":
                return int(float(d["value"]))
    return 0


class RssSampler(threading.Thread):
    """The TSD's resident memory every 50 ms; peak is the largest seen (peak_anon: RssAnon)."""

    def __init__(self, pid, stop):
        super().__init__(daemon=True)
        self.pid, self.stop, self.peak, self.peak_anon = pid, stop, 0.0, 0.0

    def run(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, rss_mb(self.pid))
            self.peak_anon = max(self.peak_anon, rss_mb(self.pid, "RssAnon"))
            time.sleep(0.05)


def config(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/api/config" % port, timeout=30) as r:
        return json.loads(r.read())


def main():
    import tempfile
    import subprocess
    work = tempfile.mkdtemp(prefix="ctsdb-overload-")
    crash_tsd.EXTRA = TSD_ARGS
    p, port = crash_tsd.start_tsd(os.path.join(work, "data"), os.path.join(work, "tsd.log"))
    if port is None:
        crash_tsd.not_ok("the TSD starts")
        return
    bp0 = stat_value(port, "tsd.ingest.backpressure") or 0
    cfg = config(port)
    derived = ("tsd.core.connections.limit", "tsd.storage.block_cache_bytes",
               "tsd.storage.memstore_total_bytes", "tsd.storage.memstore_flush_bytes",
               "tsd.http.request.max_body")
    print("# derived from tsd.core.memory_limit_bytes=%s: %s"
          % (cfg.get("tsd.core.memory_limit_bytes"), ", ".join("%s=%s" % (k, cfg.get(k)) for k in derived)),
          flush=True)
    if all(int(cfg.get(k, "0")) > 0 for k in derived):
        crash_tsd.ok("the TSD derived its connection limit, block cache, memstore ceiling, flush size "
                     "and largest body from the memory limit")
    else:
        crash_tsd.not_ok("the TSD did not derive every setting from the memory limit: %r" % cfg)
    sampler_stop = threading.Event()
    sampler = RssSampler(p.pid, sampler_stop)
    sampler.start()
    stop = threading.Event()
    writers = []
    for kind, n in (("tel", TEL), ("http", HTTP), ("flood", FLOOD)):
        for i in range(n):
            ts0 = crash_tsd.BASE_TS + (len(writers) + 1) * 100000000
            w = Flood(port, i, ts0, stop) if kind == "flood" else crash_tsd.Writer(port, kind, i, ts0, stop)
            writers.append(((kind, i), w))
            w.start()
    lat = []
    worst = 0.0
    peak = 0.0
    probe_fail = 0
    t_end = time.time() + LOAD_SECONDS
    while time.time() < t_end:
        peak = max(peak, rss_mb(p.pid))
        t0 = time.time()
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/api/version" % port, timeout=10).read()
            # a query that reads data being written: the first telnet writer's first 10 minutes
            t0s = crash_tsd.BASE_TS + 100000000
            urllib.request.urlopen("http://127.0.0.1:%d/api/query?start=%d&end=%d&m=sum:crash.tel{conn=c0}"
                                   % (port, t0s, t0s + 600), timeout=10).read()
        except OSError:
            probe_fail += 1
        dt = time.time() - t0
        lat.append(dt)
        worst = max(worst, dt)
        time.sleep(0.2)
    stop.set()
    for _, w in writers:
        while w.is_alive() and time.time() < t_end + 120:
            w.join(0.5)
            peak = max(peak, rss_mb(p.pid))
    peak = max(peak, rss_mb(p.pid), sampler.peak)  # the verification queries below are sampled too
    waits = stat_value(port, "tsd.ingest.memstore_waits") or 0
    bp = (stat_value(port, "tsd.ingest.backpressure") or 0) - bp0
    acked = sum(len(w.acked) for _, w in writers)
    flood_blocked = sum(w.blocked_s for (k, _), w in writers if k == "flood")
    lat.sort()
    print("# overload: %d points acknowledged in %.0f s (%.0f points/s; %d writers: %d telnet, %d HTTP, %d flood), "
          "backpressure %d times (flood senders blocked %.1f s in all), probe p50 %.3f s, worst %.3f s, "
          "peak RSS %.0f MiB, limit %d MiB (tsd.core.memory_limit_bytes), writes held for the memstore "
          "ceiling %d times"
          % (acked, LOAD_SECONDS, acked / LOAD_SECONDS, len(writers), TEL, HTTP, FLOOD, bp, flood_blocked,
             lat[len(lat) // 2], worst, peak, MEMORY_LIMIT_MB, waits), flush=True)
    if bp > 0:
        crash_tsd.ok("the TSD applied backpressure (%d times it stopped reading sockets)" % bp)
    else:
        crash_tsd.not_ok("the TSD applied backpressure (tsd.ingest.backpressure did not grow)")
    if probe_fail == 0:
        crash_tsd.ok("/api/version and a query kept answering under overload (%d probes, worst %.2f s)" % (len(lat), worst))
    else:
        crash_tsd.not_ok("%d of %d probes failed under overload" % (probe_fail, len(lat)))
    lost = 0
    for (kind, idx), w in writers:
        if not w.acked:
            continue
        metric = {"tel": "crash.tel", "http": "crash.http", "flood": "crash.flood"}[kind]
        tagv = {"tel": "c%d", "http": "h%d", "flood": "f%d"}[kind] % idx
        # acknowledged timestamps are increasing per writer; check them a window at a time so
        # that a long (make stress) run does not need one enormous answer
        acked_ts = w.acked
        lo, hi = acked_ts[0], acked_ts[-1] + 1
        for a in range(lo, hi, WINDOW):
            b = min(a + WINDOW, hi)
            dps = crash_tsd.query_series(port, metric, "conn", tagv, a, b)
            i, j = bisect.bisect_left(acked_ts, a), bisect.bisect_left(acked_ts, b)
            lost += sum(1 for k in range(i, j) if acked_ts[k] not in dps)
    if lost == 0:
        crash_tsd.ok("all %d acknowledged points are queryable after the overload" % acked)
    else:
        crash_tsd.not_ok("%d acknowledged points lost under overload" % lost)
    sampler_stop.set()
    sampler.join(5)
    peak_all = max(peak, sampler.peak)
    print("# peak RSS during the load %.0f MiB, including the verification queries %.0f MiB "
          "(anonymous %.0f MiB); connections refused by the derived limit: %d"
          % (peak, peak_all, sampler.peak_anon, rejected(port)), flush=True)
    peak = peak_all
    if peak < MEMORY_LIMIT_MB:
        crash_tsd.ok("peak RSS %.0f MiB stays under tsd.core.memory_limit_bytes (%d MiB)" % (peak, MEMORY_LIMIT_MB))
    else:
        crash_tsd.not_ok("peak RSS %.0f MiB exceeds tsd.core.memory_limit_bytes (%d MiB)" % (peak, MEMORY_LIMIT_MB))
    # for the record: the budget's parts other than connection buffers (docs/tsd.md: connections
    # x (1.25 MiB + max_header + 2 x max_body) under a limit), which this test's connections
    # hardly use
    conns_mb = int(cfg["tsd.core.connections.limit"]) * (
        1.25 * 1024 * 1024 + int(cfg["tsd.http.request.max_header"]) + 2 * int(cfg["tsd.http.request.max_body"])) / float(1 << 20)
    print("# peak anonymous memory %.0f MiB; the limit less the connection buffers' part: %.0f MiB"
          % (sampler.peak_anon, MEMORY_LIMIT_MB - conns_mb), flush=True)
    p.terminate()
    try:
        p.wait(60)
    except subprocess.TimeoutExpired:
        p.kill()
    subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
    sys.exit(1 if crash_tsd.failures else 0)
