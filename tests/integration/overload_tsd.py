#!/usr/bin/env python3
"""overload_tsd.py - more ingest than the TSD can absorb, for a bounded time.

Writers (telnet and HTTP, the crash test's Writer class: acknowledged = reply to a later
`version` / HTTP 204) push as fast as they can for LOAD_SECONDS, and "flood" writers send put
lines over telnet without waiting for anything (megabytes at a time: only the TSD's
backpressure, which stops reading their sockets, holds them back; their points are
acknowledged by one `version` at the end). A prober measures /api/version and a small
/api/query, and the TSD's resident memory is sampled from /proc. Checks:
  * the TSD applied backpressure: its `tsd.ingest.backpressure` counter (times it stopped
    reading sockets because every ingest batch was in use) grew during the load;
  * /api/version and a query keep answering during the overload (each within 10 s);
  * peak RSS stays under the memory bound that follows from the configuration the TSD runs
    with (see memory_bound_mb: block cache + the store's memstore ceiling + the ingest batch
    pool + per-connection buffers + a fixed base for the program itself), or RSS_LIMIT_MB if
    given;
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
BLOCK_CACHE = 16 << 20
FLUSH_BYTES = 4 << 20
TEL, HTTP, FLOOD = 6, 4, 4
WINDOW = 400000  # seconds (= points per writer) per verification query
TSD_ARGS = ["--tsd.storage.block_cache_bytes=%d" % BLOCK_CACHE, "--tsd.storage.memstore_flush_bytes=%d" % FLUSH_BYTES]


def memory_bound_mb():
    """The most the TSD should hold with this configuration (docs/tsd.md, storage/engine):
    the block cache; all memstores together, flushed past max(4 x flush size, 256 MiB) and
    writes blocked per region past 4 x flush size; the ingest pool (8 batches of 512 KiB); per
    connection at most 256 KiB telnet input + 1 MiB unsent output, or 1 MiB HTTP input + 4 MiB
    unsent output; and 64 MiB for the program, its threads' stacks and allocator slack."""
    memstores = max(4 * FLUSH_BYTES, 256 << 20)
    conns = (TEL + FLOOD + 2) * (256 << 10) + (TEL + FLOOD + 2) * (1 << 20) + (HTTP + 2) * (5 << 20)
    return (BLOCK_CACHE + memstores + 8 * (512 << 10) + conns + (64 << 20)) / float(1 << 20)


RSS_LIMIT_MB = float(os.environ.get("RSS_LIMIT_MB", "0")) or memory_bound_mb()


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


def rss_mb(pid):
    try:
        for line in open("/proc/%d/status" % pid):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


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
    peak = max(peak, rss_mb(p.pid))
    bp = (stat_value(port, "tsd.ingest.backpressure") or 0) - bp0
    acked = sum(len(w.acked) for _, w in writers)
    flood_blocked = sum(w.blocked_s for (k, _), w in writers if k == "flood")
    lat.sort()
    print("# overload: %d points acknowledged in %.0f s (%.0f points/s; %d writers: %d telnet, %d HTTP, %d flood), "
          "backpressure %d times (flood senders blocked %.1f s in all), probe p50 %.3f s, worst %.3f s, "
          "peak RSS %.0f MiB, bound %.0f MiB"
          % (acked, LOAD_SECONDS, acked / LOAD_SECONDS, len(writers), TEL, HTTP, FLOOD, bp, flood_blocked,
             lat[len(lat) // 2], worst, peak, RSS_LIMIT_MB), flush=True)
    if bp > 0:
        crash_tsd.ok("the TSD applied backpressure (%d times it stopped reading sockets)" % bp)
    else:
        crash_tsd.not_ok("the TSD applied backpressure (tsd.ingest.backpressure did not grow)")
    if probe_fail == 0:
        crash_tsd.ok("/api/version and a query kept answering under overload (%d probes, worst %.2f s)" % (len(lat), worst))
    else:
        crash_tsd.not_ok("%d of %d probes failed under overload" % (probe_fail, len(lat)))
    if peak < RSS_LIMIT_MB:
        crash_tsd.ok("peak RSS %.0f MiB stays under the configured bound %.0f MiB" % (peak, RSS_LIMIT_MB))
    else:
        crash_tsd.not_ok("peak RSS %.0f MiB exceeds the configured bound %.0f MiB" % (peak, RSS_LIMIT_MB))
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
    p.terminate()
    try:
        p.wait(60)
    except subprocess.TimeoutExpired:
        p.kill()
    subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
    sys.exit(1 if crash_tsd.failures else 0)
