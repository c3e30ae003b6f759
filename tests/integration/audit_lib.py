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
"""
import http.client
import json
import os
import sys
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


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "same":
        same(*sys.argv[2:])
        finish()
    sys.exit("usage: audit_lib.py same NAME RECORD_A RECORD_B")
