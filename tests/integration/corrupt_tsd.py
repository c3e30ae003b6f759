#!/usr/bin/env python3
"""corrupt_tsd.py - damage every kind of file in a data directory and check the TSD's reaction.

A store is built through the real TSD (HTTP puts, clean shutdown, so there are block files, a
catalog and log segments). Then, for every file and for each kind of damage (a flipped byte in
the middle, a flipped byte at the start where the magic number lives, the file cut in half), a
copy of the store is damaged and the TSD is started on it. Acceptable outcomes:
  * it refuses to start, exits with a status (not killed by a signal) and names the file;
  * it starts and every answer it gives is right: each returned point has the value that was
    written (missing points are tolerated only if the log names the damaged file, i.e. the file
    was quarantined or reported), and it shuts down cleanly.
A crash, a hang, or a wrong value is a failure. `ctsdb fsck`, when present, must report the
damaged file with a non-zero exit status.
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


def start(data, log):
    p = subprocess.Popen([CTSDB, "tsd", "--bind", "127.0.0.1", "--port", "0", "--data", data],
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
    p, port = start(data, log)
    body = [{"metric": "corrupt.m", "timestamp": T0 + 20000 + i, "value": value_of(T0 + 20000 + i),
             "tags": {"host": "h%d" % (i % 4)}} for i in range(500)]
    req = urllib.request.Request("http://127.0.0.1:%d/api/put" % port, data=json.dumps(body).encode(), method="POST")
    urllib.request.urlopen(req, timeout=30).read()
    p.kill()  # leave the last batch in the log
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
        has_fsck = b"fsck" in subprocess.run([CTSDB, "--help"], capture_output=True).stdout
        checked = 0
        for rel in files:
            for kind in ("flip-middle", "flip-start", "truncate"):
                data = os.path.join(work, "case")
                shutil.rmtree(data, ignore_errors=True)
                shutil.copytree(pristine, data)
                if not damage(os.path.join(data, rel), kind):
                    continue
                checked += 1
                name = os.path.basename(rel)
                what = "%s %s" % (kind, rel)
                log = os.path.join(work, "case.log")
                p, port = start(data, log)
                text = open(log, errors="replace").read()
                if port is None:
                    rc = p.wait() if p.poll() is None else p.returncode
                    if rc is None or rc < 0:
                        not_ok("%s: the TSD crashed on start (status %s): %s" % (what, rc, text[-300:]))
                    elif name in text or rel in text:
                        ok("%s: refused to start, naming the file" % what)
                    else:
                        not_ok("%s: refused to start without naming the file: %s" % (what, text[-300:]))
                    continue
                st, res = query_all(port)
                text = open(log, errors="replace").read()
                if p.poll() is not None:
                    not_ok("%s: the TSD died answering a query (status %s)" % (what, p.returncode))
                    continue
                if st == 200:
                    wrong = 0
                    got = 0
                    for series in res:
                        for k, v in series["dps"].items():
                            got += 1
                    # one series per host: check every value
                    url = "http://127.0.0.1:%d/api/query?start=%d&end=%d&m=sum:corrupt.m{host=h%d}"
                    for h in range(4):
                        try:
                            with urllib.request.urlopen(url % (port, T0 - 10, T0 + 30000, h), timeout=30) as r:
                                for series in json.loads(r.read()):
                                    for k, v in series["dps"].items():
                                        if v != value_of(int(k)):
                                            wrong += 1
                        except urllib.error.HTTPError:
                            pass
                    expected = 12 * 1500 + 500
                    if wrong:
                        not_ok("%s: %d wrong values returned" % (what, wrong))
                    elif got < expected and name not in text:
                        not_ok("%s: %d of %d points returned and the damage was not reported" % (what, got, expected))
                    else:
                        ok("%s: answers are right (%d of %d points%s)" % (what, got, expected,
                                                                        ", damage reported" if name in text else ""))
                else:
                    body = res if isinstance(res, bytes) else json.dumps(res).encode()
                    if b"error" in body:
                        ok("%s: queries answer with an error object (%d)" % (what, st))
                    else:
                        not_ok("%s: query status %d without an error object" % (what, st))
                rc = stop(p)
                if rc == "hang" or (isinstance(rc, int) and rc < 0):
                    not_ok("%s: shutdown %s" % (what, rc))
                if has_fsck:
                    f = subprocess.run([CTSDB, "fsck", "--data", data], capture_output=True, timeout=120)
                    out = (f.stdout + f.stderr).decode(errors="replace")
                    if f.returncode < 0:
                        not_ok("%s: fsck crashed" % what)
                    elif ".sst" in rel and kind == "flip-middle" and name not in text:
                        # damage the TSD did not notice must be found by fsck, naming the file
                        if f.returncode != 0 and name in out:
                            ok("%s: fsck reports the damaged file (exit %d)" % (what, f.returncode))
                        else:
                            not_ok("%s: fsck does not report the damage (exit %d): %s"
                                   % (what, f.returncode, out[-300:]))
        print("# corruption: %d damaged copies checked over %d files (%s)" % (checked, len(files), ", ".join(sorted(kinds))))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
    sys.exit(1 if failures else 0)
