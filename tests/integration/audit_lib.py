"""audit_lib.py - what the Python parts of the audit scripts (tests/integration/test_audit_*.sh)
share: one HTTP helper for the TSD under test, the "ok - " / "not ok - " report lines that
tests/integration/run.sh counts, and an optional record of every answer.

The scripts run their Python from heredocs with PYTHONPATH set to this directory
(`PYTHONPATH="$IT_ROOT/tests/integration" python3 - ... <<'PY'`) and import from here.
Invariants: req() never raises on an HTTP error status (it returns it with the body); report()
prints exactly one line per check and counts the failures; finish() exits 1 when any check
failed. When the environment names AUDIT_RECORD, every request and its answer (status, body)
is appended to that file as one JSON line, so that a script can run the same checks against
differently configured TSDs and compare the answers byte for byte:
`python3 audit_lib.py same NAME RECORD_A RECORD_B` reports NAME ok when the two records are
identical, else not ok with the first request whose answer differs.
For the scripts that check the same facts on differently laid-out stores (OpenTSDB's *Salted
test classes), each_config() is the loop: it starts one TSD per entry of CONFIGS (unsalted
default, unsalted by key, OpenTSDB's salted test layout), runs the script's checks against it
with AUDIT_RECORD set, stops it by its PID and reports whether every configuration answered
byte for byte as the first. telnet() writes lines over the TSD's telnet port; stat() reads one
/api/stats counter.
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

PORT = None
FAILS = 0


def connect(port):
    """Sets the port of the TSD (on 127.0.0.1) that req() talks to."""
    global PORT
    PORT = int(port)


def req(path, method="GET", body=None, timeout=30, headers=None):
    """One HTTP request to the TSD; returns (status, body text), error statuses included."""
    r = urllib.request.Request("http://127.0.0.1:%d%s" % (PORT, path),
                               data=body.encode() if body is not None else None, method=method,
                               headers=headers or {})
    try:
        x = urllib.request.urlopen(r, timeout=timeout)
        st, text = x.status, x.read().decode()
    except urllib.error.HTTPError as e:
        st, text = e.code, e.read().decode()
    rec = os.environ.get("AUDIT_RECORD")
    if rec:
        with open(rec, "a") as f:
            f.write(json.dumps([method, path, body, st, text]) + "\n")
    return st, text


def reqh(path, method="GET", body=None, headers=None, timeout=30):
    """One HTTP request sent as given (any method, any path; body bytes or text); returns
    (status, headers as a dict with lower-case names, body text). Recorded like req()."""
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=timeout)
    try:
        c.request(method, path, body=body.encode() if isinstance(body, str) else body,
                  headers=headers or {})
        x = c.getresponse()
        st, hd, text = x.status, {k.lower(): v for k, v in x.getheaders()}, x.read().decode()
    finally:
        c.close()
    rec = os.environ.get("AUDIT_RECORD")
    if rec:
        with open(rec, "a") as f:
            f.write(json.dumps([method, path, repr(body), st, text]) + "\n")
    return st, hd, text


def report(name, why, body=""):
    """Prints "ok - NAME" when why is empty, else "not ok - NAME: WHY; answer BODY" (cut)."""
    global FAILS
    FAILS += bool(why)
    print(("not ok - %s: %s; answer %s" % (name, why, body[:400])) if why else "ok - " + name)
    sys.stdout.flush()


def finish():
    """Ends the Python part: exit status 1 when any report() failed."""
    sys.exit(1 if FAILS else 0)


def same(name, rec_a, rec_b):
    """Reports whether two AUDIT_RECORD files hold the same requests and answers."""
    try:
        with open(rec_a) as f:
            a = f.read().splitlines()
        with open(rec_b) as f:
            b = f.read().splitlines()
    except OSError as e:
        report(name, "no record (%s)" % e)
        return
    why = "" if a and a == b else "%d and %d answers recorded" % (len(a), len(b))
    for x, y in zip(a, b):
        if x != y:
            why = "first difference: %s" % ", then ".join(json.loads(x)[1:2] + [x[-200:], y[-200:]])
            break
    report(name, why)


# ---- one set of checks against several store layouts (the *Salted test classes) -------------
# (label, TSD options): the default layout, unsalted, and OpenTSDB's salted test layout (1 byte,
# 2 buckets) with appends on. Labels prefix the check names of every configuration but the first.
CONFIGS = [("", []),
           ("[unsalted] ", ["--tsd.storage.salt.width=0"]),
           ("[salted 2 buckets, appends] ", ["--tsd.storage.salt.width=1",
                                             "--tsd.storage.salt.buckets=2",
                                             "--tsd.storage.enable_appends=true"])]


def _tsd_start(ctsdb, d, opts):
    """Starts `ctsdb tsd` on 127.0.0.1, port 0, data in d/data, log d/tsd.log (where lib.sh's
    tsd_logs_check looks when d came from it_tmpdir); returns (process, port) or (process, None)
    when it did not come up within 30 s."""
    log = open(os.path.join(d, "tsd.log"), "w")
    p = subprocess.Popen([ctsdb, "tsd", "--bind", "127.0.0.1", "--port", "0", "--data",
                          os.path.join(d, "data")] + list(opts), stdout=subprocess.DEVNULL,
                         stderr=log)
    log.close()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and p.poll() is None:
        with open(os.path.join(d, "tsd.log")) as f:
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", f.read())
        if m:
            return p, int(m.group(1))
        time.sleep(0.1)
    return p, None


def _tsd_stop(p):
    """SIGTERM to the TSD this module started (by its PID), SIGKILL after 20 s; its exit status."""
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            return p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
    return p.wait()


def each_config(ctsdb, dirs, opts, checks):
    """Runs checks(label) against a fresh TSD per CONFIGS entry, started with opts plus the
    entry's options, data and log in dirs[k] (one directory per entry, from lib.sh's it_tmpdir),
    every answer recorded in dirs[k]/answers; then reports, per other entry, whether its record
    is byte-identical to the first's (same()). A TSD that does not start or exits non-zero on
    SIGTERM is a failed check."""
    for k, (label, extra) in enumerate(CONFIGS):
        p, port = _tsd_start(ctsdb, dirs[k], list(opts) + extra)
        try:
            if port is None:
                report(label + "the TSD starts", "no 'listening on' line in 30 s")
                continue
            connect(port)
            os.environ["AUDIT_RECORD"] = os.path.join(dirs[k], "answers")
            checks(label)
        finally:
            os.environ.pop("AUDIT_RECORD", None)
            st = _tsd_stop(p)
        report(label + "the TSD exits 0 on SIGTERM", "" if st == 0 else "exit status %d" % st)
    for k in range(1, len(CONFIGS)):
        same("%sanswers byte-identical to the default layout's" % CONFIGS[k][0],
             os.path.join(dirs[0], "answers"), os.path.join(dirs[k], "answers"))


def telnet(lines, timeout=30):
    """Sends lines (a list of str) on one telnet connection to the TSD, half-closes, returns
    everything it answered (until it closes the connection) as a list of lines."""
    s = socket.create_connection(("127.0.0.1", PORT), timeout=timeout)
    try:
        s.sendall(("\n".join(lines) + "\n").encode())
        s.shutdown(socket.SHUT_WR)
        out = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    finally:
        s.close()
    return out.decode("utf-8", "replace").splitlines()


def stat(metric, **tags):
    """The value of one /api/stats counter (the entry with that metric and those tags; an int
    when it is a number), or None.
    Not recorded in AUDIT_RECORD (counters include the TSD's own activity)."""
    rec = os.environ.pop("AUDIT_RECORD", None)
    try:
        st, b = req("/api/stats")
    finally:
        if rec:
            os.environ["AUDIT_RECORD"] = rec
    if st != 200:
        return None
    for x in json.loads(b):
        if x.get("metric") == metric and all(x.get("tags", {}).get(k) == v for k, v in tags.items()):
            v = x.get("value")
            try:
                return int(v)
            except (TypeError, ValueError):
                return v
    return None


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "same":
        same(*sys.argv[2:])
        finish()
    if len(sys.argv) == 2 and sys.argv[1] == "layouts":  # for lib.sh's audit_stores
        for label, extra in CONFIGS:
            print("%s|%s" % (label, " ".join(extra)))
        sys.exit(0)
    sys.exit("usage: audit_lib.py same NAME RECORD_A RECORD_B | audit_lib.py layouts")
