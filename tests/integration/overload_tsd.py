#!/usr/bin/env python3
"""overload_tsd.py - more ingest than the TSD can absorb, for a bounded time.

Writers (telnet and HTTP, the crash test's Writer class: acknowledged = reply to a later
`version` / HTTP 204) push as fast as they can for LOAD_SECONDS while a prober measures
/api/version and a small /api/query, and the TSD's resident memory is sampled from /proc. Checks:
  * /api/version and a query keep answering during the overload (each within 10 s);
  * peak RSS stays under RSS_LIMIT_MB (default 768 MiB: a fixed ceiling well above what the
    default ingest batch pool, memstores and block cache need, not computed from the config);
  * after the load stops, every acknowledged point is queryable (nothing acknowledged is lost).
Prints "ok - ..." / "not ok - ..." and the figures.
"""
import os
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
import crash_tsd  # noqa: E402  (shares the writers and the TSD launcher)

LOAD_SECONDS = float(os.environ.get("LOAD_SECONDS", "12"))
RSS_LIMIT_MB = int(os.environ.get("RSS_LIMIT_MB", "768"))


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
    p, port = crash_tsd.start_tsd(os.path.join(work, "data"), os.path.join(work, "tsd.log"))
    if port is None:
        crash_tsd.not_ok("the TSD starts")
        return
    stop = threading.Event()
    writers = []
    for kind, n in (("tel", 6), ("http", 4)):
        for i in range(n):
            w = crash_tsd.Writer(port, kind, i, crash_tsd.BASE_TS + (len(writers) + 1) * 10000000, stop)
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
            urllib.request.urlopen("http://127.0.0.1:%d/api/query?start=1h-ago&m=sum:crash.tel" % port, timeout=10).read()
        except OSError:
            probe_fail += 1
        dt = time.time() - t0
        lat.append(dt)
        worst = max(worst, dt)
        time.sleep(0.2)
    stop.set()
    for _, w in writers:
        w.join(30)
    peak = max(peak, rss_mb(p.pid))
    acked = sum(len(w.acked) for _, w in writers)
    lat.sort()
    print("# overload: %d points acknowledged in %.0f s (%.0f points/s), probe p50 %.3f s, worst %.3f s, peak RSS %.0f MiB"
          % (acked, LOAD_SECONDS, acked / LOAD_SECONDS, lat[len(lat) // 2], worst, peak), flush=True)
    if probe_fail == 0:
        crash_tsd.ok("/api/version and a query kept answering under overload (%d probes, worst %.2f s)" % (len(lat), worst))
    else:
        crash_tsd.not_ok("%d of %d probes failed under overload" % (probe_fail, len(lat)))
    if peak < RSS_LIMIT_MB:
        crash_tsd.ok("peak RSS %.0f MiB stays under %d MiB" % (peak, RSS_LIMIT_MB))
    else:
        crash_tsd.not_ok("peak RSS %.0f MiB exceeds %d MiB" % (peak, RSS_LIMIT_MB))
    lost = 0
    for (kind, idx), w in writers:
        if not w.acked:
            continue
        metric = "crash.tel" if kind == "tel" else "crash.http"
        tagv = ("c%d" if kind == "tel" else "h%d") % idx
        dps = crash_tsd.query_series(port, metric, "conn", tagv, min(w.sent), max(w.sent) + 1)
        lost += sum(1 for t in w.acked if t not in dps)
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
