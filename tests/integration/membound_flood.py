#!/usr/bin/env python3
"""membound_flood.py - a new-series flood against a TSD started with a memory limit.

Usage: membound_flood.py PORT PID SECONDS TAGLEN [MAX_LINES [BASE_TS]]
Flood writers send telnet put lines whose every line names a new series (metric mb.flood, tag
s=<counter><padding to TAGLEN bytes>) without waiting, and read whatever the TSD answers
(error lines for refused series). A steady writer keeps 20 existing series (mb.steady, s=0..19)
ingesting through the flood: one line per series per round, each round acknowledged by a
`version` reply; the floods start once its first round is acknowledged (so the steady series
exist before any bound is reached). VmRSS of PID is sampled every 0.5 s. Bounded by SECONDS and
MAX_LINES. Timestamps start at BASE_TS (default 1600000000, hours long closed; `now`: the
current second, so the points go into an ingest head): floods BASE_TS + n % 600, the steady
writer BASE_TS + round. Prints one JSON object: peak and samples of VmRSS (KiB), lines sent,
errors seen (counted by their first three words, and the first full line of each kind), the
steady writer's acknowledged rounds and BASE_TS.
"""
import json
import socket
import sys
import threading
import time

port, pid, seconds, taglen = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
max_lines = int(sys.argv[5]) if len(sys.argv) > 5 else 50_000_000
stop = threading.Event()
BASE_TS = 1600000000
if len(sys.argv) > 6:
    BASE_TS = int(time.time()) if sys.argv[6] == "now" else int(sys.argv[6])


def rss_kib():
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return -1
    return -1


class Flood(threading.Thread):
    def __init__(self, idx):
        super().__init__(daemon=True)
        self.idx, self.sent, self.errors, self.example = idx, 0, {}, {}
        self.buf = b""

    def reader(self, s):
        f = s.makefile("rb")
        for line in f:
            key = b" ".join(line.split()[:3]).decode(errors="replace")
            self.errors[key] = self.errors.get(key, 0) + 1
            self.example.setdefault(key, line.decode(errors="replace").rstrip("\n"))

    def run(self):
        s = socket.create_connection(("127.0.0.1", port), timeout=120)
        r = threading.Thread(target=self.reader, args=(s,), daemon=True)
        r.start()
        n = 0
        pad = "x" * max(0, taglen - 12)
        try:
            while not stop.is_set() and self.sent < max_lines:
                lines = []
                for _ in range(5000):
                    lines.append("put mb.flood %d 1 s=%d-%010d%s\n" % (BASE_TS + n % 600, self.idx, n, pad))
                    n += 1
                s.sendall("".join(lines).encode())
                self.sent += len(lines)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        r.join(30)


class Steady(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        self.acked = 0  # timestamps BASE_TS .. BASE_TS+acked-1 acknowledged for every series
        self.fail = ""

    def run(self):
        try:
            # 90 s: the steady lines' acknowledgement waits for the group being written and
            # then its own (the writers are fair between connections, docs/tsd.md "Ingest
            # pipeline"; test_tsd_ingest_fair.sh measures about one flood batch-time), at most
            # about 5 flood batch-times; the slowest CI run seen wrote a batch in about 3 s
            # (when the steady writer still waited for the flood's whole backlog, over 30 s),
            # and under the whole suite's load on 2 cores one round once took over 30 s. This
            # script checks memory and that acknowledged points are queryable, not latency: a
            # round still waiting at the end is simply not counted as acknowledged
            s = socket.create_connection(("127.0.0.1", port), timeout=90)
            f = s.makefile("rb")
            ts = 0
            while not stop.is_set():
                lines = "".join("put mb.steady %d %d s=%d\n" % (BASE_TS + ts, ts, i) for i in range(20))
                s.sendall((lines + "version\n").encode())
                got = f.readline()
                if b"net.opentsdb" not in got:
                    self.fail = got.decode(errors="replace")
                    return
                got = f.readline()  # the version reply's second line
                if not got.startswith(b"Built on"):
                    self.fail = got.decode(errors="replace")
                    return
                ts += 1
                self.acked = ts
                time.sleep(0.05)
        except OSError as e:
            self.fail = str(e)


floods = [Flood(i) for i in range(2)]
steady = Steady()
samples = []
t0 = time.time()
steady.start()
while steady.acked < 1 and steady.is_alive() and time.time() - t0 < 30:
    time.sleep(0.02)
t0 = time.time()
for t in floods:
    t.start()
while time.time() - t0 < seconds and any(t.is_alive() for t in floods):
    samples.append(rss_kib())
    time.sleep(0.5)
stop.set()
for _ in range(6):  # a few more samples while the TSD drains
    samples.append(rss_kib())
    time.sleep(0.5)
for t in floods:
    t.join(30)
steady.join(30)
errors, examples = {}, {}
for t in floods:
    for k, v in t.errors.items():
        errors[k] = errors.get(k, 0) + v
    for k, v in t.example.items():
        examples.setdefault(k, v)
print(json.dumps({"peak_kib": max(samples), "samples_kib": samples, "sent": sum(t.sent for t in floods),
                  "errors": errors, "examples": examples, "base_ts": BASE_TS,
                  "steady_acked": steady.acked, "steady_fail": steady.fail,
                  "seconds": round(time.time() - t0, 1)}))
