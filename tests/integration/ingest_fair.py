#!/usr/bin/env python3
"""ingest_fair.py - a light telnet connection's acknowledgements while others flood new series.

Usage: ingest_fair.py PORT SECONDS
Three flood connections send put lines whose every line names a new series (metric fair.flood,
points of hours long closed) without waiting, reading whatever the TSD answers. A light
connection writes 5 existing series (fair.light, s=0..4) in rounds: 5 puts, then `version`,
whose reply acknowledges them; the time from sending a round to its reply is its latency. The
floods start once the light writer's first round is acknowledged; the run lasts SECONDS, longer
(up to 4 x SECONDS) until 10 rounds are measured.
The TSD's write rate during the flood (tsd.datapoints.added from /api/stats, before and after)
gives the time the TSD takes to write one telnet batch of flood points (4096 points), the unit
the fairness bound is stated in (docs/tsd.md, "Ingest pipeline"). Prints one JSON object.
"""
import json
import socket
import statistics
import sys
import threading
import time
import urllib.request

port, seconds = int(sys.argv[1]), float(sys.argv[2])
stop = threading.Event()
BASE_TS = 1600000000
BATCH_POINTS = 4096  # ingest_options_init's batch_points (tsd/ingest.c)


def added():
    with urllib.request.urlopen("http://127.0.0.1:%d/api/stats" % port, timeout=60) as r:
        return sum(int(d["value"]) for d in json.load(r) if d["metric"] == "tsd.datapoints.added")


class Flood(threading.Thread):
    def __init__(self, idx):
        super().__init__(daemon=True)
        self.idx, self.sent = idx, 0

    def drain(self, s):
        try:
            while s.recv(65536):
                pass
        except OSError:
            pass

    def run(self):
        s = socket.create_connection(("127.0.0.1", port), timeout=120)
        r = threading.Thread(target=self.drain, args=(s,), daemon=True)
        r.start()
        n = 0
        try:
            while not stop.is_set():
                lines = "".join("put fair.flood %d 1 s=%d-%010d\n" % (BASE_TS + (n + i) % 600, self.idx, n + i)
                                for i in range(2000))
                n += 2000
                s.sendall(lines.encode())
                self.sent = n
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        r.join(60)


class Light(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        self.lat, self.fail, self.rounds = [], "", 0

    def run(self):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=120)
            f = s.makefile("rb")
            while not stop.is_set():
                ts = BASE_TS + self.rounds
                lines = "".join("put fair.light %d %d s=%d\n" % (ts, self.rounds, i) for i in range(5))
                t0 = time.monotonic()
                s.sendall((lines + "version\n").encode())
                a, b = f.readline(), f.readline()
                if b"net.opentsdb" not in a or not b.startswith(b"Built on"):
                    self.fail = (a + b).decode(errors="replace")
                    return
                if self.rounds > 0:  # the first round creates the series, before the flood
                    self.lat.append(time.monotonic() - t0)
                self.rounds += 1
                time.sleep(0.05)
        except OSError as e:
            self.fail = str(e)


light = Light()
light.start()
t0 = time.monotonic()
while light.rounds < 1 and light.is_alive() and time.monotonic() - t0 < 30:
    time.sleep(0.02)
floods = [Flood(i) for i in range(3)]
a0, t0 = added(), time.monotonic()
for t in floods:
    t.start()
# at least SECONDS, and on until 10 rounds are measured (a slow machine), at most 4 x SECONDS
while light.is_alive() and time.monotonic() - t0 < 4 * seconds and \
        (time.monotonic() - t0 < seconds or len(light.lat) < 10):
    time.sleep(0.1)
a1, t1 = added(), time.monotonic()
stop.set()
for t in floods:
    t.join(60)
light.join(120)
rate = (a1 - a0) / (t1 - t0)
lat = sorted(light.lat)
print(json.dumps({
    "rounds": light.rounds, "fail": light.fail, "sent": sum(t.sent for t in floods),
    "flood_rate": round(rate), "batch_s": round(BATCH_POINTS / rate, 4) if rate > 0 else None,
    "median_s": round(statistics.median(lat), 4) if lat else None,
    "p90_s": round(lat[int(len(lat) * 0.9)], 4) if lat else None,
    "max_s": round(lat[-1], 4) if lat else None}))
