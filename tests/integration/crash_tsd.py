#!/usr/bin/env python3
"""crash_tsd.py - kill -9 the TSD under ingest load and check that nothing acknowledged is lost.

Each run starts `ctsdb tsd` on 127.0.0.1 (port 0) over the SAME data directory, with a small
memstore flush size and region split size so that flushes, compactions and splits happen while
the load runs, drives it with telnet writers (a put batch is acknowledged when the reply to a
following `version` arrives) and HTTP writers (acknowledged by 204), and SIGKILLs it at a random
moment. After the last run the TSD is started once more and every series is queried:
  * every acknowledged point is present with its value (values are a function of the timestamp);
  * no point is present that was never sent (a point written twice cannot be seen through
    /api/query, whose decoder keeps one point per timestamp, so duplicates are not checked);
  * the store opened after every kill.
Bounded: RUNS runs, each at most a few seconds of load; every socket has a timeout.
Prints "ok - ..." / "not ok - ..." lines and a summary line.
"""
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

CTSDB = os.environ.get("CTSDB", os.path.join(os.path.dirname(__file__), "../../bin/ctsdb"))
RUNS = int(os.environ.get("CRASH_RUNS", "6"))
SEED = int(os.environ.get("CRASH_SEED", str(int(time.time()))))
BASE_TS = 1700000000  # seconds; each writer owns its own series
SPREAD = 40  # series per writer (tag s), so that rows are many and regions can split
# Small memstores and regions, so that flushes, compactions and splits run during the load.
EXTRA = os.environ.get("CRASH_TSD_ARGS", "--tsd.storage.memstore_flush_bytes=65536 "
                       "--tsd.storage.region_split_bytes=262144").split()

failures = 0


def ok(msg):
    print("ok - " + msg, flush=True)


def not_ok(msg):
    global failures
    failures += 1
    print("not ok - " + msg, flush=True)


def value_of(ts):
    return (ts * 7919) % 100003


def start_tsd(data, log):
    args = [CTSDB, "tsd", "--bind", "127.0.0.1", "--port", "0", "--data", data] + EXTRA
    logf = open(log, "ab")
    offset = logf.tell()  # the log is shared by every run: read only this run's lines
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=logf)
    deadline = time.time() + 30
    port = None
    while time.time() < deadline and port is None:
        if p.poll() is not None:
            break
        with open(log, "rb") as f:
            f.seek(offset)
            text = f.read().decode("utf-8", "replace")
        m = re.findall(r"listening on 127\.0\.0\.1:(\d+)", text)
        if m:
            port = int(m[-1])
            break
        time.sleep(0.05)
    return p, port


class Writer(threading.Thread):
    """Writes one series; records which timestamps were sent and which acknowledged."""

    def __init__(self, port, kind, idx, start_ts, stop):
        super().__init__(daemon=True)
        self.port, self.kind, self.idx, self.ts, self.stop = port, kind, idx, start_ts, stop
        self.sent, self.acked = [], []

    def run(self):
        try:
            if self.kind == "tel":
                self.run_telnet()
            else:
                self.run_http()
        except (OSError, ValueError, urllib.error.URLError):
            pass  # the daemon was killed

    def run_telnet(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        f = s.makefile("rb")
        while not self.stop.is_set():
            batch = []
            lines = []
            for _ in range(random.randint(1, 200)):
                batch.append(self.ts)
                lines.append("put crash.tel %d %d src=tel conn=c%d s=%d\n" % (self.ts, value_of(self.ts), self.idx, self.ts % SPREAD))
                self.ts += 1
            self.sent.extend(batch)
            s.sendall(("".join(lines) + "version\n").encode())
            got = f.readline()
            if not got:
                return
            if got.startswith(b"put:"):
                raise ValueError("put rejected: %r" % got)
            f.readline()  # the version reply has two lines
            self.acked.extend(batch)

    def run_http(self):
        while not self.stop.is_set():
            batch = []
            body = []
            for _ in range(random.randint(1, 300)):
                batch.append(self.ts)
                body.append({"metric": "crash.http", "timestamp": self.ts, "value": value_of(self.ts),
                             "tags": {"src": "http", "conn": "h%d" % self.idx, "s": str(self.ts % SPREAD)}})
                self.ts += 1
            self.sent.extend(batch)
            req = urllib.request.Request("http://127.0.0.1:%d/api/put" % self.port,
                                         data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=10) as r:
                if r.status == 204:
                    self.acked.extend(batch)


def query_series(port, metric, tagk, tagv, start, end):
    # each timestamp lives in exactly one of the SPREAD series of a writer: zimsum (no
    # interpolation) over them gives back the one value written at that timestamp
    url = ("http://127.0.0.1:%d/api/query?start=%d&end=%d&m=zimsum:%s{%s=%s}"
           % (port, start, end, metric, tagk, tagv))
    with urllib.request.urlopen(url, timeout=60) as r:
        res = json.loads(r.read().decode())
    if not res:
        return {}
    return {int(k): v for k, v in res[0]["dps"].items()}


def main():
    random.seed(SEED)
    print("# crash test: %d runs, seed %d" % (RUNS, SEED), flush=True)
    work = tempfile.mkdtemp(prefix="ctsdb-crash-")
    data = os.path.join(work, "data")
    log = os.path.join(work, "tsd.log")
    series = {}  # (kind, idx) -> (sent set, acked set)
    next_ts = {}
    total_acked = 0
    activity = {"flushes": 0, "compactions": 0, "splits": 0}
    p = None
    try:
        for run in range(RUNS):
            p, port = start_tsd(data, log)
            if port is None:
                not_ok("run %d: the TSD starts over the data left by the previous kill" % run)
                sys.stdout.write(open(log, errors="replace").read()[-3000:])
                p.kill()
                return
            stop = threading.Event()
            writers = []
            for kind, n in (("tel", 3), ("http", 2)):
                for i in range(n):
                    key = (kind, i)
                    ts0 = next_ts.get(key, BASE_TS + (len(next_ts) + 1) * 1000000)
                    w = Writer(port, kind, i, ts0, stop)
                    writers.append((key, w))
                    w.start()
            time.sleep(random.uniform(0.3, 2.5))
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/api/storage" % port, timeout=5) as r:
                    st = json.loads(r.read())["store"]
                    activity["flushes"] += st["flushes"]
                    activity["compactions"] += st["minor_compactions"] + st["major_compactions"]
                    activity["splits"] += st["splits"]
            except (OSError, ValueError, KeyError):
                pass
            p.send_signal(signal.SIGKILL)
            p.wait()
            stop.set()
            for key, w in writers:
                w.join(15)
                sent, acked = series.setdefault(key, (set(), set()))
                sent.update(w.sent)
                acked.update(w.acked)
                next_ts[key] = w.ts + 10  # never reuse a timestamp across runs
                total_acked += len(w.acked)
            print("# run %d: killed after %d acknowledged points in all" % (run, total_acked), flush=True)
        p, port = start_tsd(data, log)
        if port is None:
            not_ok("the TSD starts after the last kill")
            return
        ok("the store opened after each of %d kills" % RUNS)
        with urllib.request.urlopen("http://127.0.0.1:%d/api/storage" % port, timeout=30) as r:
            st = json.loads(r.read())["store"]
        print("# store after the runs: %d regions, %d splits, %d flushes, %d minor and %d major compactions "
              "(counted since the last start)" % (st["regions"], st["splits"], st["flushes"],
                                                  st["minor_compactions"], st["major_compactions"]), flush=True)
        checked = 0
        for (kind, idx), (sent, acked) in sorted(series.items()):
            if not sent:
                continue
            metric = "crash.tel" if kind == "tel" else "crash.http"
            tagv = ("c%d" if kind == "tel" else "h%d") % idx
            dps = query_series(port, metric, "conn", tagv, min(sent), max(sent) + 1)
            missing = [t for t in acked if t not in dps]
            wrong = [t for t, v in dps.items() if t in sent and v != value_of(t)]
            alien = [t for t in dps if t not in sent]
            checked += len(acked)
            if missing:
                not_ok("%s %s: %d acknowledged points lost (e.g. %s)" % (kind, tagv, len(missing), sorted(missing)[:5]))
            elif wrong or alien:
                not_ok("%s %s: %d wrong values, %d points never sent" % (kind, tagv, len(wrong), len(alien)))
            else:
                ok("%s %s: all %d acknowledged points present, none wrong or invented (%d present of %d sent)"
                   % (kind, tagv, len(acked), len(dps), len(sent)))
        p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = None
        if rc == 0:
            ok("clean shutdown after the checks")
        else:
            not_ok("clean shutdown after the checks (exit %r)" % rc)
        print("# crash test: %d runs, %d acknowledged points checked; the killed processes had run %d flushes, "
              "%d compactions and %d splits" % (RUNS, checked, activity["flushes"], activity["compactions"],
                                                activity["splits"]), flush=True)
    finally:
        if p is not None and p.poll() is None:
            p.kill()
            p.wait()
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
    sys.exit(1 if failures else 0)
