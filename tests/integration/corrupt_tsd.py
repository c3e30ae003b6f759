#!/usr/bin/env python3
"""corrupt_tsd.py - damage every kind of file in a data directory and check the TSD's reaction.

A store is built through the real TSD (HTTP puts, clean shutdown, so there are block files, a
catalog and log segments - an older one and the newest, each left by a kill; the catalog is also
the store's manifest: it lists every region's block files). Then, for every file and for each kind of damage (a flipped byte in the middle, a
flipped byte at the start where the magic number lives, the file cut in half), a copy of the
store is damaged (log segments also get a flipped bit inside their first record, with records
behind it) and:
  1. `ctsdb fsck`, before anything opens the store, names the file as damaged with exit status 1
     (a newest log segment whose only damage is its last record is reported as a torn tail,
     which is what a crash leaves);
  2. the TSD is started on it. Acceptable outcomes: it refuses to start, exits with a status
     (not killed by a signal) and names the file; or it starts and every answer it gives is
     right (each returned point has the value that was written; missing points are tolerated
     only if the log names the damaged file) or an error object naming the file, and it shuts
     down cleanly;
  3. when it refused and the file is not the catalog (where quarantine is safe: the catalog
     lists every other file), `ctsdb fsck --quarantine` moves the file to quarantine/ and the
     TSD then starts and answers right.
Last, the TSD with tsd.storage.quarantine_damaged=true starts over a truncated block file,
logs it and sets it aside itself.
A crash, a hang, or a wrong value is a failure.
Prints "ok - ..." / "not ok - ..." lines. Bounded: ~3 damages per file, 20 s per start.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

CTSDB = os.environ.get("CTSDB", os.path.join(os.path.dirname(__file__), "../../bin/ctsdb"))
failures = 0
T0 = 1700000000


def ok(msg):
    print("ok - " + msg, flush=True)


def not_ok(msg):
    global failures
    failures += 1
    print("not ok - " + msg, flush=True)


def value_of(ts):
    return (ts * 31) % 9973


def check(cond, msg, detail=""):
    if cond:
        ok(msg)
    else:
        not_ok(msg + (": " + detail if detail else ""))


EXPECTED = 12 * 1500 + 500
last_wal = None


def fsck(data, *args):
    f = subprocess.run([CTSDB, "fsck", "--data", data] + list(args), capture_output=True, timeout=120)
    return (f.stdout + f.stderr).decode(errors="replace"), f.returncode


def error_names(body, name):
    try:
        e = json.loads(body)["error"]
        return name in e.get("message", "") + e.get("details", "")
    except (ValueError, KeyError, TypeError):
        return False


def check_values(port):
    """(points returned, wrong values) over the four series, one query per host."""
    got = wrong = 0
    url = "http://127.0.0.1:%d/api/query?start=%d&end=%d&m=sum:corrupt.m{host=h%d}"
    for h in range(4):
        try:
            with urllib.request.urlopen(url % (port, T0 - 10, T0 + 30000, h), timeout=30) as r:
                for series in json.loads(r.read()):
                    for k, v in series["dps"].items():
                        got += 1
                        if v != value_of(int(k)):
                            wrong += 1
        except urllib.error.HTTPError:
            pass
    return got, wrong


def start(data, log, extra=()):
    # OpenTSDB's unsalted layout, explicitly (the default is salted): the files this test damages
    # and counts (block files, "files: 5 checked") are those of one data region
    p = subprocess.Popen([CTSDB, "tsd", "--bind", "127.0.0.1", "--port", "0", "--data", data,
                          "--tsd.storage.salt.width=0"] + list(extra),
                         stdout=subprocess.DEVNULL, stderr=open(log, "wb"))
    deadline = time.time() + 20
    while time.time() < deadline:
        if p.poll() is not None:
            return p, None
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", open(log, errors="replace").read())
        if m:
            return p, int(m.group(1))
        time.sleep(0.05)
    return p, None


def stop(p):
    p.send_signal(signal.SIGTERM)
    try:
        return p.wait(30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return "hang"


def build_store(data, log):
    p, port = start(data, log)
    if port is None:
        raise SystemExit("not ok - the TSD starts to build the store")
    for b in range(12):
        body = [{"metric": "corrupt.m", "timestamp": T0 + b * 1500 + i, "value": value_of(T0 + b * 1500 + i),
                 "tags": {"host": "h%d" % (i % 4)}} for i in range(1500)]
        req = urllib.request.Request("http://127.0.0.1:%d/api/put" % port, data=json.dumps(body).encode(), method="POST")
        urllib.request.urlopen(req, timeout=30).read()
    # a flush makes block files; a later batch stays in the log only
    stop(p)
    # five log records, so that damage inside the log has records behind it: three, a kill, two
    # more and a kill leave two segments (the restart replays the first into memstores and
    # writes to a new one), so damage in an OLDER segment, which a crash never leaves, is
    # covered as well as damage in the newest
    for lo, hi in ((0, 3), (3, 5)):
        p, port = start(data, log)
        for b in range(lo, hi):
            body = [{"metric": "corrupt.m", "timestamp": T0 + 20000 + b * 100 + i,
                     "value": value_of(T0 + 20000 + b * 100 + i), "tags": {"host": "h%d" % (i % 4)}}
                    for i in range(100)]
            req = urllib.request.Request("http://127.0.0.1:%d/api/put" % port, data=json.dumps(body).encode(),
                                         method="POST")
            urllib.request.urlopen(req, timeout=30).read()
        p.kill()  # leave the batches in the log
        p.wait()


def query_all(port):
    url = "http://127.0.0.1:%d/api/query?start=%d&end=%d&m=sum:corrupt.m{host=*}" % (port, T0 - 10, T0 + 30000)
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def damage(path, kind):
    size = os.path.getsize(path)
    if size == 0:
        return False
    with open(path, "r+b") as f:
        if kind == "flip-middle":
            f.seek(size // 2)
            b = f.read(1)
            f.seek(size // 2)
            f.write(bytes([b[0] ^ 0x5A]))
        elif kind == "flip-start":
            f.seek(1)
            b = f.read(1)
            f.seek(1)
            f.write(bytes([b[0] ^ 0xFF]))
        elif kind == "truncate":
            f.truncate(size // 2)
        elif kind == "flip-record":  # log segments: inside the first record, records behind it
            f.seek(40)
            b = f.read(1)
            f.seek(40)
            f.write(bytes([b[0] ^ 0x01]))
    return True


def main():
    work = tempfile.mkdtemp(prefix="ctsdb-corrupt-")
    try:
        pristine = os.path.join(work, "pristine")
        build_store(pristine, os.path.join(work, "build.log"))
        files = sorted(os.path.relpath(os.path.join(d, f), pristine)
                       for d, _, fs in os.walk(pristine) for f in fs if f != "LOCK")
        kinds = set()
        for rel in files:
            kinds.add(re.sub(r"[0-9]+", "N", rel))
        print("# files: %s" % ", ".join(files), flush=True)
        global last_wal
        wals = [f for f in files if f.startswith("wal/")]
        last_wal = wals[-1] if wals else None
        check(len(wals) >= 2, "the store to damage has an older log segment and the newest (%s)" % ", ".join(wals))
        checked = 0
        stats = {"refused": 0, "served": 0, "quarantined": 0, "fsck": 0}
        for rel in files:
            for kind in ("flip-middle", "flip-start", "truncate") + (("flip-record",) if rel.startswith("wal/") else ()):
                data = os.path.join(work, "case")
                shutil.rmtree(data, ignore_errors=True)
                shutil.copytree(pristine, data)
                if not damage(os.path.join(data, rel), kind):
                    continue
                checked += 1
                name = os.path.basename(rel)
                # fsck sets a head log file aside as head-<name> (its segments share the
                # write-ahead log's names)
                qname = ("head-" if rel.startswith("head/") else "") + name
                what = "%s %s" % (kind, rel)
                # 1. fsck, before anything opens the store, names the damaged file
                out, frc = fsck(data)
                torn = ("note: %s" % os.path.join(data, rel)) in out
                clean_fsck = False
                if frc < 0:
                    not_ok("%s: fsck crashed (%d)" % (what, frc))
                elif ("damaged %s" % os.path.join(data, rel)) in out and frc == 1:
                    ok("%s: fsck reports the damaged file (exit 1)" % what)
                    stats["fsck"] += 1
                elif torn and rel.startswith("wal/") and rel == last_wal:
                    ok("%s: fsck reports a torn tail of the newest log segment (what a crash leaves)" % what)
                    stats["fsck"] += 1
                elif frc == 0 and "fsck: damaged" not in out:
                    clean_fsck = True  # nothing lost (e.g. a cut in a log's zero tail): checked below
                else:
                    not_ok("%s: fsck does not name the damaged file (exit %d): %s" % (what, frc, out[-400:]))
                # 2. the TSD on the damaged copy: refuses naming the file, or answers right
                log = os.path.join(work, "case.log")
                p, port = start(data, log)
                if port is None:
                    text = open(log, errors="replace").read()
                    rc = p.wait() if p.poll() is None else p.returncode
                    if clean_fsck:
                        not_ok("%s: fsck found nothing but the TSD refuses to start: %s" % (what, text[-300:]))
                    if rc is None or rc < 0:
                        not_ok("%s: the TSD crashed on start (status %s): %s" % (what, rc, text[-300:]))
                    elif name in text or rel in text:
                        ok("%s: refused to start, naming the file" % what)
                        stats["refused"] += 1
                    else:
                        not_ok("%s: refused to start without naming the file: %s" % (what, text[-300:]))
                    # 3. where it is safe (not the catalog), fsck --quarantine sets the file
                    # aside and the store opens again, answering right
                    if rel == "CATALOG":
                        out, frc = fsck(data, "--quarantine")
                        check(not os.path.exists(os.path.join(data, "quarantine", qname)),
                              "%s: the catalog is never quarantined (it lists every other file)" % what)
                        continue
                    out, frc = fsck(data, "--quarantine")
                    moved = os.path.exists(os.path.join(data, "quarantine", qname))
                    if frc < 0 or not moved or "quarantined %s" % os.path.join(data, rel) not in out:
                        not_ok("%s: fsck --quarantine sets the file aside (exit %d, in quarantine/: %s): %s"
                               % (what, frc, moved, out[-400:]))
                        continue
                    p, port = start(data, log)
                    if port is None:
                        not_ok("%s: the TSD starts after fsck --quarantine: %s"
                               % (what, open(log, errors="replace").read()[-300:]))
                        if p.poll() is None:
                            stop(p)
                        continue
                    st, res = query_all(port)
                    got, wrong = check_values(port)
                    rc = stop(p)
                    if st == 200 and wrong == 0 and rc == 0:
                        ok("%s: after fsck --quarantine the TSD opens and answers right (%d of %d points; "
                           "the file is in quarantine/)" % (what, got, EXPECTED))
                        stats["quarantined"] += 1
                    elif st in (400, 500) and wrong == 0 and rc == 0 and b'"error"' in res:
                        # the file held UID mappings: the series' names are gone, and queries say so
                        ok("%s: after fsck --quarantine the TSD opens and answers with an error object "
                           "(%d: %s; the file is in quarantine/)" % (what, st, res[:90].decode(errors="replace")))
                        stats["quarantined"] += 1
                    else:
                        not_ok("%s: after fsck --quarantine: query %d, %d wrong values, shutdown %s"
                               % (what, st, wrong, rc))
                    continue
                st, res = query_all(port)
                text = open(log, errors="replace").read()
                if p.poll() is not None:
                    not_ok("%s: the TSD died answering a query (status %s)" % (what, p.returncode))
                    continue
                if st == 200:
                    got, wrong = check_values(port)
                    text = open(log, errors="replace").read()
                    if wrong:
                        not_ok("%s: %d wrong values returned" % (what, wrong))
                    elif clean_fsck and got < EXPECTED:
                        not_ok("%s: fsck found nothing, yet %d of %d points are returned" % (what, got, EXPECTED))
                    elif clean_fsck:
                        ok("%s: the damage removed nothing (fsck clean, all %d points answered)" % (what, got))
                        stats["served"] += 1
                    elif got < EXPECTED and name not in text:
                        not_ok("%s: %d of %d points returned and the damage was not reported" % (what, got, EXPECTED))
                    else:
                        ok("%s: answers are right (%d of %d points%s)" % (what, got, EXPECTED,
                                                                        ", damage reported" if name in text else ""))
                        stats["served"] += 1
                    if rel.startswith("wal/") and ("damaged %s" % os.path.join(data, rel)) in out:
                        # records behind the damage: the engine cuts the log but keeps the segment
                        kept = os.path.join(data, "quarantine", qname)
                        check("kept in %s" % kept in text and os.path.exists(kept),
                              "%s: the TSD keeps the damaged segment in quarantine/ before cutting it" % what,
                              text[-400:])
                else:
                    body = res if isinstance(res, bytes) else json.dumps(res).encode()
                    if error_names(body, name):
                        ok("%s: queries answer with an error object naming the file (%d)" % (what, st))
                        stats["served"] += 1
                    else:
                        not_ok("%s: query status %d without an error object naming %s: %r" % (what, st, name, body[:300]))
                rc = stop(p)
                if rc == "hang" or (isinstance(rc, int) and rc < 0):
                    not_ok("%s: shutdown %s" % (what, rc))
        # the TSD's own quarantine (tsd.storage.quarantine_damaged=true): a block file damaged
        # where the open checks it (its footer) is set aside at start
        sst = [f for f in files if f.startswith("sst/")][-1]
        data = os.path.join(work, "case")
        shutil.rmtree(data, ignore_errors=True)
        shutil.copytree(pristine, data)
        damage(os.path.join(data, sst), "truncate")
        log = os.path.join(work, "case.log")
        p, port = start(data, log, ["--tsd.storage.quarantine_damaged=true"])
        text = open(log, errors="replace").read()
        if port is None:
            not_ok("tsd.storage.quarantine_damaged=true: the TSD starts over a truncated %s: %s" % (sst, text[-300:]))
            if p.poll() is None:
                stop(p)
        else:
            got, wrong = check_values(port)
            rc = stop(p)
            check(wrong == 0 and rc == 0 and "quarantined damaged block file" in text and os.path.basename(sst) in text
                  and os.path.exists(os.path.join(data, "quarantine", os.path.basename(sst))),
                  "tsd.storage.quarantine_damaged=true: the TSD starts over a truncated %s, logs and quarantines "
                  "it, answers right (%d of %d points)" % (sst, got, EXPECTED),
                  "wrong %d, shutdown %s, log %s" % (wrong, rc, text[-300:]))
            out, frc = fsck(data)
            # every file the store holds after the run, the quarantined one set aside (the run
            # may have released head-log segments or flushed new files)
            now = [f for d, _, fs in os.walk(data) for f in fs
                   if f != "LOCK" and not os.path.relpath(d, data).startswith("quarantine")]
            check("fsck: damaged" not in out and "files: %d checked" % len(now) in out
                  and os.path.basename(sst) not in now,
                  "fsck finds no damaged file after the TSD's quarantine (UID rows lost with it are reported)",
                  out[-300:])
        print("# corruption: %d damaged copies checked over %d files (%s): fsck named the damage in %d, "
              "the TSD refused naming the file in %d, served right answers or an error naming the file in %d, "
              "fsck --quarantine made %d open again" % (checked, len(files), ", ".join(sorted(kinds)), stats["fsck"],
                                                        stats["refused"], stats["served"], stats["quarantined"]))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
    sys.exit(1 if failures else 0)
