#!/usr/bin/env bash
# test_audit_tsdbquery.sh - query answers as OpenTSDB 2.4's TsdbQuery computes them: the cases of
# TestTsdbQueryQueries and TestTsdbQueryDownsample that assert numbers, carried over as HTTP
# writes and /api/query reads of the real TSD (each check names the Java test). The fixture is
# theirs: sys.cpu.user with host=web01 1..300 and host=web02 300..1, one point every 30 s from
# 1356998430 (web02 15 s later in the "offset" metric), floats from 1.25 by 0.25, the counters of
# the rate-option cases. Checked: values, timestamps, point counts, integer vs double, groups
# and aggregated tags, lerp (integer truncation) against the zero/max/min-filling aggregators,
# rate with counter/counterMax/resetValue/dropResets, downsampling (avg, count, 0all), and the
# "no data" / "no such name" answers.
# Milliseconds (storeLongTimeSeriesMs / storeFloatTimeSeriesMs, points 500 ms apart): the *Ms
# cases, runInterpolationMs (lerp at ms timestamps 250 ms apart), runInterpolationMsDownsampled,
# runMixedSingleTS / runMixedSingleTSMsAndS (integers and floats, seconds and ms in one series:
# a point is a double when the value before or after it is), and AggregationIterator's rules
# where series of different kinds meet: an integer lerp at a ms timestamp truncates toward zero,
# any float among the values a timestamp aggregates or interpolates between makes the point a
# double (until that series has ended), and mimmax fills a missing double with Double.MIN_VALUE
# (4.9e-324, not the lowest double: OpenTSDB's answer kept as is, docs/query.md).
# The Salted, Append and SaltedAppend variants (TestTsdbQuerySalted and
# TestTsdbQueryDownsampleSalted: salt width 1, 2 buckets - each a subclass running its parent's
# every case salted; TestTsdbQueryAppend: tsd.storage.enable_appends) run every check again
# against a TSD so configured ("[salted 2 buckets, appends]"), next to the default salted layout
# (1 byte, 8 buckets) and the unsalted one; the answers of the three must be byte-identical. So
# every TestTsdbQueryDownsample check named here is also TestTsdbQueryDownsampleSalted's.
# The *WNulls cases (storeLongTimeSeriesWithMissingData, 30 s buckets with a nan or zero fill):
# OpenTSDB's answer runs an hour past the end (1560 buckets: its scan end, snapped forward to
# the next row hour, bounds the fill), ctsdb's fill stops at the query's end (1441 buckets, the
# end included) - docs/opentsdb-compat.md; the 100 buckets with data are OpenTSDB's values.
source "$(dirname "$0")/lib.sh"

# one store layout (audit_stores in lib.sh)
audit_run() {
python3 - "$TSD_PORT" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
L = []
for i in range(1, 301):
    t = 1356998400 + 30 * i
    L.append("put sys.cpu.user %d %d host=web01" % (t, i))
    L.append("put sys.cpu.user %d %d host=web02" % (t, 301 - i))
    L.append("put tq.offset %d %d host=web01" % (t, i))
    L.append("put tq.offset %d %d host=web02" % (t + 15, 301 - i))
v, t = 1.25, 1356998400
while v <= 76:
    t += 30
    L.append("put tq.float %d %s host=web01" % (t, repr(v)))
    v += 0.25
M = 9223372036854775807
for metric, vals in (("rc.default", [M - 55, M - 25, 5]), ("rc.noop", [30, 60, 90]),
                     ("rc.max", [45, 75, 5]), ("rc.anom", [45, 75, 25]), ("rc.drop", [45, 75, 25, 55])):
    for k, x in enumerate(vals):
        L.append("put %s %d %d host=web01" % (metric, 1356998430 + 30 * k, x))
# storeLongTimeSeriesMs / storeFloatTimeSeriesMs
for i in range(1, 301):
    L.append("put tq.ms %d %d host=web01" % (1356998400000 + 500 * i, i))
    L.append("put tq.ms %d %d host=web02" % (1356998400000 + 500 * i, 301 - i))
    L.append("put tq.fms %d %r host=web01" % (1356998400000 + 500 * i, 1.25 + 0.25 * (i - 1)))
    L.append("put tq.fms %d %r host=web02" % (1356998400000 + 500 * i, 75 - 0.25 * (i - 1)))
    # runInterpolationMs: web02 250 ms after web01
    L.append("put im.ms %d %d host=web01" % (1356998400000 + 500 * i, i))
    L.append("put im.ms %d %d host=web02" % (1356998400250 + 500 * i, 301 - i))
    # runInterpolationMsDownsampled: web01 every 500 ms up to 100, then every 5 s
    L.append("put im.ds %d %d host=web02" % (1356998400250 + 500 * i, 301 - i))
    if i <= 120:
        L.append("put im.ds %d %d host=web01" % (1356998400000 + 500 * min(i, 100) + 5000 * max(i - 100, 0), i))
# storeMixedTimeSeriesSeconds / storeMixedTimeSeriesMsAndS: the even values are integers, and
# the ms timestamps that are whole seconds are written in seconds
for k in range(300):
    v = 1.25 + 0.25 * k
    val = str(int(v)) if v % 2 == 0 else repr(v)
    L.append("put im.mixed %d %s host=web01" % (1356998430 + 30 * k, val))
    t = 1356998400500 + 500 * k
    L.append("put im.mixedms %d %s host=web01" % (t // 1000 if t % 1000 == 0 else t, val))
# where series of different kinds meet
L += ["put ex.neg 1356998400 20 host=a", "put ex.neg 1356998401 10 host=a", "put ex.neg 1356998400333 0 host=b",
      "put ex.mix 1356998400 1 host=a", "put ex.mix 1356998460 2 host=a", "put ex.mix 1356998520 3 host=a",
      "put ex.mix 1356998430 1.5 host=b", "put ex.mix 1356998490 2.5 host=b",
      "put ex.mm 1356998400 -5.5 host=a", "put ex.mm 1356998460 -6.5 host=a",
      "put ex.mm 1356998430 -1.5 host=b", "put ex.mm 1356998490 -2.5 host=b"]
# storeLongTimeSeriesWithMissingData (as tq.wnull): web01 i + 1 every 10 s from 1356998400 with
# every third point (i % 3 == 0) left out; web02 counts down 300..1, only the odd values
for i in range(300):
    if i % 3:
        L.append("put tq.wnull %d %d host=web01" % (1356998400 + 10 * i, i + 1))
    if (300 - i) % 2:
        L.append("put tq.wnull %d %d host=web02" % (1356998400 + 10 * i, 300 - i))
L.append("version")
s.sendall(("\n".join(L) + "\n").encode())
s.shutdown(socket.SHUT_WR)
out = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    out += b
if b"put:" in out or b"error" in out.lower():
    print("not ok - the fixture is written: %s" % out[:300]); sys.exit(1)
PY
[ $? -eq 0 ] || IT_FAILS=$((IT_FAILS + 1))

PYTHONPATH="$IT_ROOT/tests/integration" python3 - "$TSD_PORT" "$AUDIT_LABEL" <<'PY'
import json, math, sys, urllib.parse
import audit_lib
from audit_lib import connect, req, finish
connect(sys.argv[1])
def report(name, why, body=""):
    audit_lib.report(sys.argv[2] + name, why, body)
R = "start=1356998400&end=1357041600&"
def q(m, extra=""):
    return "/api/query?" + R + extra + "m=" + urllib.parse.quote(m, safe=":")
def series(name, m, want, extra="", doubles=None, tags=None, agg=None, tol=1e-9):
    """want: [(seconds, value)] of the one answer; doubles: whether every value must be a double"""
    st, b = req(q(m, extra))
    why = ""
    try:
        d = json.loads(b)
        if st != 200 or len(d) != 1:
            why = "status %d, %d answers" % (st, len(d) if isinstance(d, list) else -1)
        else:
            got = sorted((int(k), v) for k, v in d[0]["dps"].items())
            if len(got) != len(want):
                why = "%d points, want %d" % (len(got), len(want))
            else:
                for (gt, gv), (wt, wv) in zip(got, want):
                    if gt != wt or abs(gv - wv) > tol:
                        why = "at %d: %r, want %r at %d" % (gt, gv, wv, wt); break
                    if doubles is not None and isinstance(gv, float) != doubles:
                        why = "at %d: %r is %s" % (gt, gv, "an integer" if doubles else "a double"); break
            if tags is not None and d[0]["tags"] != tags: why += " tags %r" % d[0]["tags"]
            if agg is not None and d[0]["aggregateTags"] != agg: why += " aggregateTags %r" % d[0]["aggregateTags"]
    except (ValueError, KeyError, TypeError) as x:
        why = "bad answer (%s)" % x
    report(name, why.strip(), b)
T = [1356998400 + 30 * i for i in range(1, 301)]

series("TestTsdbQueryQueries.runLongSingleTS", "sum:sys.cpu.user{host=web01}",
       [(t, i + 1) for i, t in enumerate(T)], doubles=False, tags={"host": "web01"}, agg=[])
series("TestTsdbQueryQueries.runLongSingleTSMs (ms)", "sum:sys.cpu.user{host=web01}",
       [(t * 1000, i + 1) for i, t in enumerate(T)], extra="ms&")
st, b = req("/api/query?start=1357041660&end=1357045200&m=sum:sys.cpu.user")
report("TestTsdbQueryQueries.runLongSingleTSNoData", "" if st == 200 and b.strip() == "[]" else "status %d" % st, b)
series("TestTsdbQueryQueries.runLongTwoAggSum", "sum:sys.cpu.user", [(t, 301) for t in T],
       doubles=False, tags={}, agg=["host"])
st, b = req(q("sum:sys.cpu.user{host=*}"))
try:
    d = json.loads(b)
    why = "" if [a["tags"]["host"] for a in d] == ["web01", "web02"] and \
        [sorted(a["dps"].values())[:2] for a in d] == [[1, 2], [1, 2]] and all(len(a["dps"]) == 300 for a in d) \
        else "answers %r" % [(a["tags"], len(a["dps"])) for a in d]
except (ValueError, KeyError, TypeError) as x:
    why = "bad answer (%s)" % x
report("TestTsdbQueryQueries.runLongTwoGroup", why, b)
series("TestTsdbQueryQueries.runLongSingleTSRate", "sum:rate:sys.cpu.user{host=web01}",
       [(t, 1 / 30) for t in T[1:]], doubles=True)
series("TestTsdbQueryQueries.runFloatSingleTS", "sum:tq.float{host=web01}",
       [(t, 1.25 + 0.25 * i) for i, t in enumerate(T)], doubles=True, tol=1e-6)
series("TestTsdbQueryQueries.runFloatSingleTSRate", "sum:rate:tq.float{host=web01}",
       [(t, 0.25 / 30) for t in T[1:]], tol=1e-6)
st, b = req(q("sum:sys.cpu.nope"))
report("TestTsdbQueryQueries.setTimeSeriesNosuchMetric", "" if st == 400 and "No such name for 'metrics': 'sys.cpu.nope'" in b else "status %d" % st, b)
st, b = req(q("sum:sys.cpu.user{dc=web01}"))
report("TestTsdbQueryQueries.setTimeSeriesNosuchTagk", "" if st == 400 and "No such name for 'tagk': 'dc'" in b else "status %d" % st, b)
st, b = req(q("sum:sys.cpu.user{host=web09}"))
report("TestTsdbQueryQueries.setTimeSeriesNosuchTagv", "" if st == 400 and "No such name for 'tagv': 'web09'" in b else "status %d" % st, b)
st, b = req("/api/query?" + R + "tsuid=sum:000001000001000001")
report("TestTsdbQueryQueries.runTSUIDQuery", "" if st == 200 and len(json.loads(b)[0]["dps"]) == 300 else "status %d" % st, b)
st, b = req("/api/query?" + R + "tsuid=sum:000001000001000001,000001000001000002")
try:
    d = json.loads(b)
    why = "" if st == 200 and set(d[0]["dps"].values()) == {301} and len(d[0]["dps"]) == 300 else "answer"
except (ValueError, KeyError, TypeError, IndexError):
    why = "status %d" % st
report("TestTsdbQueryQueries.runTSUIDsAggSum", why, b)
st, b = req("/api/query?start=1357041660&end=1357045200&tsuid=sum:000001000001000001")
report("TestTsdbQueryQueries.runTSUIDQueryNoData", "" if st == 200 and b.strip() == "[]" else "status %d" % st, b)

# rate options
def ro(counter=True, cmax=None, reset=None, drop=False):
    o = {"counter": counter}
    if cmax is not None: o["counterMax"] = cmax
    if reset is not None: o["resetValue"] = reset
    if drop: o["dropResets"] = True
    return o
def rate(name, metric, opts, want):
    st, b = req("/api/query", "POST", json.dumps({"start": 1356998400, "end": 1357041600, "queries": [
        {"metric": metric, "aggregator": "sum", "rate": True, "rateOptions": opts}]}))
    why = ""
    try:
        got = sorted((int(k), v) for k, v in json.loads(b)[0]["dps"].items())
        if len(got) != len(want) or any(g[0] != w[0] or abs(g[1] - w[1]) > 0.001 for g, w in zip(got, want)):
            why = "got %r, want %r" % (got, want)
    except (ValueError, KeyError, TypeError, IndexError) as x:
        why = "status %d (%s)" % (st, x)
    report(name, why, b)
rate("TestTsdbQueryQueries.runRateCounterDefault (wraps at Long.MAX_VALUE)", "rc.default",
     ro(cmax=9223372036854775807), [(1356998460, 1.0), (1356998490, 1.0)])
rate("TestTsdbQueryQueries.runRateCounterDefaultNoOp", "rc.noop", ro(cmax=9223372036854775807),
     [(1356998460, 1.0), (1356998490, 1.0)])
rate("TestTsdbQueryQueries.runRateCounterMaxSet", "rc.max", ro(cmax=100), [(1356998460, 1.0), (1356998490, 1.0)])
rate("TestTsdbQueryQueries.runRateCounterAnomally (above resetValue: 0)", "rc.anom", ro(cmax=10000, reset=35),
     [(1356998460, 1.0), (1356998490, 0.0)])
rate("TestTsdbQueryQueries.runRateCounterAnomallyDrop", "rc.drop", ro(cmax=10000, reset=35, drop=True),
     [(1356998460, 1.0), (1356998520, 1.0)])
series("rate counter in m= (rate{counter,100,35}): as runRateCounterAnomally", "sum:rate{counter,10000,35}:rc.anom",
       [(1356998460, 1.0), (1356998490, 0.0)])
series("rate dropcounter in m=: as runRateCounterAnomallyDrop", "sum:rate{dropcounter,10000,35}:rc.drop",
       [(1356998460, 1.0), (1356998520, 1.0)])

# interpolation: web02 15 s after web01
def interp():
    out, v, ts = [], 1, 1356998430
    for _ in range(600):
        out.append((ts, v))
        if ts == 1357007400: v = 1
        elif v in (1, 302): v = 301
        else: v = 302
        ts += 15
    return out
series("TestTsdbQueryQueries.runInterpolationSeconds (sum: integer lerp)", "sum:tq.offset", interp(), doubles=False)
raw = sorted([(t, i + 1) for i, t in enumerate(T)] + [(t + 15, 300 - i) for i, t in enumerate(T)])
for agg in ("zimsum", "mimmin", "mimmax"):
    series("interpolation: %s takes only the points present (missing is 0 / max / min)" % agg,
           agg + ":tq.offset", raw, doubles=False)
# min with lerp: at web02's times web01 counts as its lerp (1 at 1356998445, ...)
st, b = req(q("min:tq.offset"))
d = json.loads(b)[0]["dps"] if st == 200 else {}
report("interpolation: min uses the lerp of the other series",
       "" if d.get("1356998445") == 1 and d.get("1356998430") == 1 and d.get("1357007415") == 1 and len(d) == 600
       else "dps %r" % list(d.items())[:4], b)

# downsampling
ds = [(1356998400, 1.0)] + [(1356998400 + 60 * i, i * 2 + 0.5) for i in range(1, 150)] + [(1357007400, 300.0)]
series("TestTsdbQueryDownsample.runLongSingleTSDownsample (60s-avg, doubles)", "sum:1m-avg:sys.cpu.user{host=web01}",
       ds, doubles=True)
series("TestTsdbQueryDownsample.runLongSingleTSDownsampleMs", "sum:1m-avg:sys.cpu.user{host=web01}",
       [(t * 1000, v) for t, v in ds], extra="ms&")
series("TestTsdbQueryDownsample.runLongSingleTSDownsampleAndRate", "sum:1m-avg:rate:sys.cpu.user{host=web01}",
       [(1356998460, 1.5 / 60)] + [(1356998400 + 60 * i, 2 / 60) for i in range(2, 150)] + [(1357007400, 1.5 / 60)],
       doubles=True)
series("TestTsdbQueryDownsample.runLongSingleTSDownsampleCount", "sum:1m-count:sys.cpu.user{host=web01}",
       [(1356998400, 1.0)] + [(1356998400 + 60 * i, 2.0) for i in range(1, 150)] + [(1357007400, 1.0)], doubles=True)
series("TestTsdbQueryDownsample.runLongSingleTSDownsampleAll", "sum:0all-sum:sys.cpu.user{host=web01}",
       [(1356998400, 45150.0)], doubles=True)
st, b = req("/api/query?start=1356998500&end=1356998600&m=" + urllib.parse.quote("sum:0all-sum:sys.cpu.user{host=web01}", safe=":"))
try:
    d = json.loads(b)[0]["dps"]
    why = "" if d == {"1356998500": 15.0} else "dps %r" % d
except (ValueError, KeyError, TypeError, IndexError):
    why = "status %d" % st
report("TestTsdbQueryDownsample.runLongSingleTSDownsampleAllSubSet (4 + 5 + 6 at the start)", why, b)
st, b = req(q("sum:1m-none:sys.cpu.user"))
report("TestTsdbQueryDownsample.runLongSingleTSDownsampleNone", "" if st == 400 and "cannot use the NONE aggregator for downsampling" in b else "status %d" % st, b)
series("TestTsdbQueryDownsample.runFloatSingleTSDownsample", "sum:1m-avg:tq.float{host=web01}",
       [(1356998400, 1.25)] + [(1356998400 + 60 * i, 1.25 + 0.25 * (2 * i - 1) + 0.125) for i in range(1, 150)] +
       [(1357007400, 1.25 + 0.25 * 299)], doubles=True, tol=1e-5)

# the rest of TestTsdbQueryDownsample (its scan-bound cases downsampleFullyAligned/Unaligned/
# Weirdly/Milliseconds assert TsdbQuery's internal HBase scan range, which a client cannot
# observe, and runLongSingleTSDownsampleNoneSnuckIn forces a field with Whitebox)
B0, MS0 = 1356998400, 1356998400000
def vf(i):  # tq.float / tq.fms: the i-th value (i from 1)
    return 1.25 + 0.25 * (i - 1)
# tq.ms web01: i at MS0 + 500 i; 1 s buckets: (1), (2, 3), .. (298, 299), (300)
ms_avg = [(MS0, 1.0)] + [(MS0 + 1000 * k, 2 * k + 0.5) for k in range(1, 150)] + [(MS0 + 150000, 300.0)]
series("TestTsdbQueryDownsample.runLongSingleTSDownsampleMs (tq.ms, 1s-avg)", "sum:1s-avg:tq.ms{host=web01}",
       ms_avg, extra="ms&", doubles=True)
# the rate of the downsampled values, per second: (2.5 - 1) / 1, then 2, then (300 - 298.5) / 1
series("TestTsdbQueryDownsample.runLongSingleTSDownsampleAndRateMs", "sum:1s-avg:rate:tq.ms{host=web01}",
       [(MS0 + 1000, 1.5)] + [(MS0 + 1000 * k, 2.0) for k in range(2, 150)] + [(MS0 + 150000, 1.5)],
       extra="ms&", doubles=True)
# floats: bucket k (1..149) averages values 2k and 2k+1: 1.125 + 0.5 k; the last holds 76 alone
f_avg = [(0, vf(1))] + [(k, (vf(2 * k) + vf(2 * k + 1)) / 2) for k in range(1, 150)] + [(150, vf(300))]
series("TestTsdbQueryDownsample.runFloatSingleTSDownsampleMs (tq.fms, 1s-avg)", "sum:1s-avg:tq.fms{host=web01}",
       [(MS0 + 1000 * k, v) for k, v in f_avg], extra="ms&", doubles=True, tol=1e-9)
# rate of the 1m averages: (1.625 - 1.25) / 60 = 0.00625, 0.5 / 60, (76 - 75.625) / 60
series("TestTsdbQueryDownsample.runFloatSingleTSDownsampleAndRate", "sum:1m-avg:rate:tq.float{host=web01}",
       [(B0 + 60 * k, (f_avg[k][1] - f_avg[k - 1][1]) / 60) for k in range(1, 151)], doubles=True, tol=1e-9)
series("TestTsdbQueryDownsample.runFloatSingleTSDownsampleAndRateMs (0.375, 0.5 .., 0.375)",
       "sum:1s-avg:rate:tq.fms{host=web01}",
       [(MS0 + 1000 * k, f_avg[k][1] - f_avg[k - 1][1]) for k in range(1, 151)], extra="ms&", doubles=True, tol=1e-9)
# counts 1, 2 .. 2, 1 a minute; their rate: 1/60, 0 .., -1/60
series("TestTsdbQueryDownsample.runFloatSingleTSDownsampleAndRateAndCount", "sum:1m-count:rate:tq.float{host=web01}",
       [(B0 + 60, 1 / 60)] + [(B0 + 60 * k, 0.0) for k in range(2, 150)] + [(B0 + 9000, -1 / 60)],
       doubles=True, tol=1e-9)
st, b = req("/api/query?start=1356998400&m=" + urllib.parse.quote("sum:0all-sum:sys.cpu.user{host=web01}", safe=":"))
try:
    d = json.loads(b)[0]["dps"]
    why = "" if d == {"1356998400": 45150.0} else "dps %r" % d
except (ValueError, KeyError, TypeError, IndexError):
    why = "status %d" % st
report("TestTsdbQueryDownsample.runLongSingleTSDownsampleAllNoEnd (no end: now; 1 + .. + 300)", why, b)
for name, ds in (("downsampleNullAgg (no aggregator)", "1m-"), ("downsampleInvalidInterval (0)", "0m-sum")):
    st, b = req(q("sum:%s:sys.cpu.user{host=web01}" % ds))
    report("TestTsdbQueryDownsample." + name, "" if st == 400 else "status %d" % st, b)

# runTSDownsampleWithMissingData: 30 s buckets of tq.wnull, each series downsampled then the two
# aggregated; the first 100 buckets hold points of both series, every later one up to the end is
# the fill policy's (NaN or 0). Bucket b: web01 holds 3b+2, 3b+3; web02 the odd ones of 300-3b,
# 299-3b, 298-3b: 299-3b when b is even, else 300-3b and 298-3b.
def wn_bucket(b, ds):
    w1 = [3 * b + 2, 3 * b + 3]
    w2 = [300 - 3 * b, 298 - 3 * b] if b % 2 else [299 - 3 * b]
    f = {"avg": lambda v: sum(v) / len(v), "sum": sum, "min": min}[ds]
    return f(w1), f(w2)
def wnulls(name, agg, ds, fill):
    st, b = req(q("%s:30s-%s-%s:tq.wnull" % (agg, ds, fill)))
    why = ""
    try:
        got = sorted((int(k), float(v)) for k, v in json.loads(b)[0]["dps"].items())
        want_n = (1357041600 - 1356998400) // 30 + 1
        if len(got) != want_n:
            why = "%d buckets, want %d" % (len(got), want_n)
        for k, (t, v) in enumerate(got):
            if t != 1356998400 + 30 * k:
                why = "bucket %d at %d" % (k, t); break
            if k < 100:
                a, c = wn_bucket(k, ds)
                w = {"sum": a + c, "avg": (a + c) / 2, "min": min(a, c)}[agg]
                if abs(v - w) > 1e-9:
                    why = "bucket %d: %r, want %r" % (k, v, w); break
            elif not (math.isnan(v) if fill == "nan" else v == 0):
                why = "bucket %d: %r, want the %s fill" % (k, v, fill); break
    except (ValueError, KeyError, TypeError, IndexError) as x:
        why = "status %d (%s)" % (st, x)
    report("TestTsdbQueryDownsample." + name, why, b)
wnulls("runSumAvgLongSingleTSDownsampleWNulls (301.5 ..)", "sum", "avg", "nan")
wnulls("runAvgSumLongSingleTSDownsampleWNulls (152, 301.5, 155, ..)", "avg", "sum", "nan")
wnulls("runAvgAvgLongSingleTSDownsampleWNulls (150.75 .., zero fill)", "avg", "avg", "zero")
wnulls("runSumSumLongSingleTSDownsampleWNulls (304, 603, 310, ..)", "sum", "sum", "nan")
wnulls("runMinMinLongSingleTSDownsampleWNulls (2, 5, 8, .., zero fill)", "min", "min", "zero")
wnulls("runMinSumLongSingleTSDownsampleWNulls (5, 11, 17, ..)", "min", "sum", "nan")
wnulls("runSumMinLongSingleTSDownsampleWNulls (301, 300, ..)", "sum", "min", "nan")

# milliseconds
TMS = [1356998400000 + 500 * i for i in range(1, 301)]
series("TestTsdbQueryQueries.runLongSingleTSMs", "sum:tq.ms{host=web01}",
       [(t, i + 1) for i, t in enumerate(TMS)], extra="ms&", doubles=False)
series("TestTsdbQueryQueries.runLongTwoAggSumMs", "sum:tq.ms", [(t, 301) for t in TMS], extra="ms&",
       doubles=False, agg=["host"])
series("TestTsdbQueryQueries.runLongSingleTSRateMs (2 per second)", "sum:rate:tq.ms{host=web01}",
       [(t, 2.0) for t in TMS[1:]], extra="ms&", doubles=True, tol=0.001)
series("TestTsdbQueryQueries.runFloatSingleTSMs", "sum:tq.fms{host=web01}",
       [(t, 1.25 + 0.25 * i) for i, t in enumerate(TMS)], extra="ms&", doubles=True, tol=0.001)
series("TestTsdbQueryQueries.runFloatTwoAggSumMs", "sum:tq.fms", [(t, 76.25) for t in TMS], extra="ms&",
       doubles=True, tol=0.00001)
series("TestTsdbQueryQueries.runFloatSingleTSRateMs", "sum:rate:tq.fms{host=web01}",
       [(t, 0.5) for t in TMS[1:]], extra="ms&", doubles=True, tol=0.00001)
def interp_ms():
    out, v, ts = [], 1, 1356998400500
    for _ in range(600):
        out.append((ts, v))
        if ts == 1356998550000: v = 1
        elif v in (1, 302): v = 301
        else: v = 302
        ts += 250
    return out
series("TestTsdbQueryQueries.runInterpolationMs (lerp at ms timestamps 250 ms apart)", "sum:im.ms", interp_ms(),
       extra="ms&", doubles=False)
series("TestTsdbQueryQueries.runInterpolationMsDownsampled (1s-sum, then the lerp of the sums)", "sum:1s-sum:im.ds",
       [(1356998400000 + 1000 * i, 301 if i == 0 else 602 if i < 50 else 701 + (i - 50) * 0.2 - i * 4)
        for i in range(151)], extra="ms&", tol=0.0000001)
def mixed(ts):
    """avg of one series of floats with integers at the even values: only the last, 76, with
    nothing after it, is an integer"""
    return [(t, 76 if k == 299 else 1.25 + 0.25 * k) for k, t in enumerate(ts)]
def mixed_check(name, m, ts):
    st, b = req(q("avg:" + m, "ms&"))
    try:
        got = sorted((int(k), v) for k, v in json.loads(b)[0]["dps"].items())
        ints = [p for p in got if not isinstance(p[1], float)]
        why = "" if got == mixed(ts) and ints == [(ts[-1], 76)] else "points %r, integers %r" % (got[:4], ints[:4])
    except (ValueError, KeyError, TypeError, IndexError) as x:
        why = "status %d (%s)" % (st, x)
    report(name, why, b)
mixed_check("TestTsdbQueryQueries.runMixedSingleTS (a point is a double when its next value is)", "im.mixed",
            [1356998430000 + 30000 * k for k in range(300)])
mixed_check("TestTsdbQueryQueries.runMixedSingleTSMsAndS", "im.mixedms", [1356998400500 + 500 * k for k in range(300)])
def exact(name, m, want):
    """want: [(ms, value)] compared exactly, integer vs double included (repr)"""
    st, b = req(q(m, "ms&"))
    try:
        got = sorted((int(k), v) for k, v in json.loads(b)[0]["dps"].items())
        why = "" if repr(got) == repr(want) else "got %r, want %r" % (got, want)
    except (ValueError, KeyError, TypeError, IndexError) as x:
        why = "status %d (%s)" % (st, x)
    report(name, why, b)
exact("AggregationIterator: an integer lerp at a ms timestamp truncates toward zero (20 - 3330/1000 = 17)",
      "sum:ex.neg", [(1356998400000, 20), (1356998400333, 17), (1356998401000, 10)])
exact("AggregationIterator: a float among the values interpolated makes the point a double, until its series ends",
      "sum:ex.mix", [(1356998400000, 1.0), (1356998430000, 3.0), (1356998460000, 4.0), (1356998490000, 5.0),
                     (1356998520000, 3)])
exact("AggregationIterator: zimsum over the same series: the points present, doubles while a float is near",
      "zimsum:ex.mix", [(1356998400000, 1.0), (1356998430000, 1.5), (1356998460000, 2.0), (1356998490000, 2.5),
                        (1356998520000, 3)])
exact("AggregationIterator: mimmax fills a missing double with Double.MIN_VALUE (above any negative value)",
      "mimmax:ex.mm", [(1356998400000, -5.5), (1356998430000, 5e-324), (1356998460000, 5e-324), (1356998490000, -2.5)])
exact("AggregationIterator: mimmin fills a missing double with Double.MAX_VALUE", "mimmin:ex.mm",
      [(1356998400000, -5.5), (1356998430000, -1.5), (1356998460000, -6.5), (1356998490000, -2.5)])
exact("AggregationIterator: max lerps between doubles (-1.5 .. -2.5 at the midpoint: -2.0)", "max:ex.mm",
      [(1356998400000, -5.5), (1356998430000, -1.5), (1356998460000, -2.0), (1356998490000, -2.5)])
finish()
PY
}
audit_stores audit_run "TestTsdbQuerySalted / TestTsdbQueryDownsampleSalted" \
  "TestTsdbQuerySaltedAppend / TestTsdbQueryDownsampleSalted"
tsd_logs_check
it_done
