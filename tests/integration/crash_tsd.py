#!/usr/bin/env python3
"""crash_tsd.py - kill -9 the TSD under ingest load and check that nothing acknowledged is lost.

Each run starts `ctsdb tsd` on 127.0.0.1 (port 0) over the SAME data directory, with a small
memstore flush size and region split size so that flushes, compactions and splits happen while
the load runs, drives it with telnet writers (a put batch is acknowledged when the reply to a
following `version` arrives) and HTTP writers (acknowledged by 204), and kills it with SIGKILL.
Runs cycle through PHASES, so that kills land in each kind of moment:
  * "ingest": the harness sends SIGKILL at a random moment of the load;
  * "flush_before_catalog", "flush_after_catalog", "compact_before_catalog",
    "compact_after_catalog", "split_before_catalog", "split_after_catalog": the daemon runs with
    CTSDB_FAILPOINT=<phase> and the engine raises SIGKILL on itself at that step of the first
    memstore flush, compaction or region split that runs once the writers are going (the
    harness creates the CTSDB_FAILPOINT_GATE file then; storage/engine/store.c
    engine_failpoint); the run fails if the daemon does not die by SIGKILL within PHASE_WAIT
    seconds of load (the phase was never reached).
After the last run the TSD is started once more and every series is queried:
  * every acknowledged point is present with its value (values are a function of the timestamp);
  * no point is present that was never sent;
  * the store opened after every kill;
  * after a clean shutdown, `ctsdb fsck` reads every row and finds no duplicate timestamp
    (a point written twice, e.g. by a log replay over data already flushed) and no bad cell.
CRASH_HEAD=1 (a second pass of test_crash_tsd.sh) aims the same kills at the ingest head instead:
the daemon's clock is pinned (CTSDB_NOW_MS) in the middle of an hour, the writers send
millisecond timestamps inside that hour, so every point is an open hour's point held by the head
and its log (schema/head.h) and the store gets none of them; only the "ingest" phase then (no
flush ever runs), and the check reads the head replayed from its log after each kill.
Bounded: RUNS runs, each at most a few seconds of load (PHASE_WAIT s for failpoint runs); every
socket has a timeout. Prints "ok - ..." / "not ok - ..." lines and a summary line with runs,
kills per phase and points checked.
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
PHASES = ["ingest", "flush_before_catalog", "flush_after_catalog", "compact_before_catalog",
          "compact_after_catalog", "split_before_catalog", "split_after_catalog"]
if os.environ.get("CRASH_PHASES"):  # e.g. CRASH_PHASES=ingest,flush_after_catalog (to chase one)
    PHASES = os.environ["CRASH_PHASES"].split(",")
RUNS = int(os.environ.get("CRASH_RUNS", str(len(PHASES))))
PHASE_WAIT = float(os.environ.get("CRASH_PHASE_WAIT", "30"))
SEED = int(os.environ.get("CRASH_SEED", str(int(time.time()))))
BASE_TS = 1700000000  # seconds; each writer owns its own series
SPREAD = 40  # series per writer (tag s), so that rows are many and regions can split
# Small memstores and regions, so that flushes, compactions and splits run during the load;
# OpenTSDB's unsalted layout (explicitly: the default is salted), so that the load goes to one
# region, which splits within the run (over the 8 pre-split regions of the salted default it
# may not reach the split size in time).
EXTRA = os.environ.get("CRASH_TSD_ARGS", "--tsd.storage.memstore_flush_bytes=65536 "
                       "--tsd.storage.region_split_bytes=262144 --tsd.storage.salt.width=0").split()

# The head pass: every timestamp in milliseconds inside hour HEAD_HOUR, each writer's (its own
# series) from the hour's start on, one point a millisecond (5 runs send a few hundred thousand
# points a writer: minutes of the hour), the clock pinned at the hour's last minute so none of it
# is late.
HEAD = os.environ.get("CRASH_HEAD") == "1"
HEAD_HOUR = 1356998400  # 2013-01-01T00:00:00Z
if HEAD:
    PHASES = ["ingest"]
    RUNS = int(os.environ.get("CRASH_RUNS", "5"))

failures = 0


def ok(msg):
    print("ok - " + msg, flush=True)


def not_ok(msg):
    global failures
    failures += 1
    print("not ok - " + msg, flush=True)


def value_of(ts):
    return (ts * 7919) % 100003


def start_tsd(data, log, failpoint=None, gate=None):
    args = [CTSDB, "tsd", "--bind", "127.0.0.1", "--port", "0", "--data", data] + EXTRA
    logf = open(log, "ab")
    offset = logf.tell()  # the log is shared by every run: read only this run's lines
    env = dict(os.environ)
    env.pop("CTSDB_FAILPOINT", None)
    env.pop("CTSDB_NOW_MS", None)
    if HEAD:
        env["CTSDB_NOW_MS"] = str((HEAD_HOUR + 3540) * 1000)
    if failpoint:
        env["CTSDB_FAILPOINT"] = failpoint
        env["CTSDB_FAILPOINT_GATE"] = gate
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=logf, env=env)
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
                if HEAD and self.ts >= (HEAD_HOUR + 3600) * 1000:
                    return  # the hour is full (far beyond what a bounded run sends)
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
                if HEAD and self.ts >= (HEAD_HOUR + 3600) * 1000:
                    return
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
    # interpolation) over them gives back the one value written at that timestamp (start, end
    # and the answer's timestamps in ms in the head pass)
    url = ("http://127.0.0.1:%d/api/query?start=%d&end=%d&m=zimsum:%s{%s=%s}%s"
           % (port, start, end, metric, tagk, tagv, "&ms=true" if HEAD else ""))
    with urllib.request.urlopen(url, timeout=60) as r:
        res = json.loads(r.read().decode())
    if not res:
        return {}
    return {int(k): v for k, v in res[0]["dps"].items()}


def main():
    random.seed(SEED)
    print("# crash test%s: %d runs, seed %d" % (" of the ingest head" if HEAD else "", RUNS, SEED), flush=True)
    work = tempfile.mkdtemp(prefix="ctsdb-crash-")
    data = os.path.join(work, "data")
    log = os.path.join(work, "tsd.log")
    series = {}  # (kind, idx) -> (sent set, acked set)
    next_ts = {}
    total_acked = 0
    activity = {"flushes": 0, "compactions": 0, "splits": 0}
    kills = {}  # phase -> kills landed there
    p = None
    try:
        for run in range(RUNS):
            phase = PHASES[run % len(PHASES)]
            gate = os.path.join(work, "failpoint-gate")
            if os.path.exists(gate):
                os.unlink(gate)
            p, port = start_tsd(data, log, None if phase == "ingest" else phase, gate)
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
                    first = HEAD_HOUR * 1000 if HEAD else BASE_TS + (len(next_ts) + 1) * 1000000
                    ts0 = next_ts.get(key, first)
                    w = Writer(port, kind, i, ts0, stop)
                    writers.append((key, w))
                    w.start()
            if phase == "ingest":
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
                kills[phase] = kills.get(phase, 0) + 1
            else:
                open(gate, "w").close()  # arm the failpoint now that the writers run
                try:
                    rc = p.wait(PHASE_WAIT)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
                    rc = None
                if rc == -signal.SIGKILL:
                    kills[phase] = kills.get(phase, 0) + 1
                else:
                    not_ok("run %d: the daemon died by SIGKILL at failpoint %s within %.0f s (exit %r)"
                           % (run, phase, PHASE_WAIT, rc))
            stop.set()
            for key, w in writers:
                w.join(15)
                sent, acked = series.setdefault(key, (set(), set()))
                sent.update(w.sent)
                acked.update(w.acked)
                next_ts[key] = w.ts + 10  # never reuse a timestamp across runs
                total_acked += len(w.acked)
            print("# run %d (%s): killed after %d acknowledged points in all" % (run, phase, total_acked), flush=True)
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
        if HEAD:  # the points are the head's, replayed from its log, not the store's
            with urllib.request.urlopen("http://127.0.0.1:%d/api/stats" % port, timeout=30) as r:
                held = sum(int(x["value"]) for x in json.loads(r.read()) if x["metric"] == "tsd.head.points")
            acked_all = sum(len(a) for _, a in series.values())
            if held >= acked_all > 0:
                ok("the head holds %d points after the last replay (%d acknowledged)" % (held, acked_all))
            else:
                not_ok("the head holds %d points after the last replay, fewer than the %d acknowledged"
                       % (held, acked_all))
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
        # duplicates: /api/query keeps one point per timestamp, fsck reads the cells themselves
        f = subprocess.run([CTSDB, "fsck", "--data", data], capture_output=True, timeout=300)
        out = f.stdout.decode(errors="replace") + f.stderr.decode(errors="replace")
        m = re.search(r"(\d+) points checked", out)
        dup = re.search(r"(\d+) rows with duplicates, (\d+) rows with conflicting duplicates", out)
        if f.returncode == 0 and m and dup and dup.group(1) == "0" and dup.group(2) == "0":
            ok("fsck finds no duplicated point and no bad cell (%s points read)" % m.group(1))
        else:
            not_ok("fsck after the runs (exit %d): %s" % (f.returncode, out[-600:]))
        landed = ", ".join("%s %d" % (ph, kills.get(ph, 0)) for ph in PHASES)
        missed = [ph for ph in PHASES[:min(RUNS, len(PHASES))] if not kills.get(ph)]
        if missed:
            not_ok("kills landed in every phase (none in %s)" % ", ".join(missed))
        else:
            ok("kills landed in every phase: %s" % landed)
        print("# crash test: %d runs, %d kills (%s), %d acknowledged points checked; the randomly killed "
              "processes had run %d flushes, %d compactions and %d splits"
              % (RUNS, sum(kills.values()), landed, checked, activity["flushes"], activity["compactions"],
                 activity["splits"]), flush=True)
    finally:
        if p is not None and p.poll() is None:
            p.kill()
            p.wait()
        if os.environ.get("CRASH_KEEP"):  # keep the data directory to inspect a failure
            print("# kept %s" % work, flush=True)
        else:
            subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
    sys.exit(1 if failures else 0)
