#!/usr/bin/env bash
# test_audit_aggregators.sh - the aggregators as OpenTSDB 2.4 computes them across series: every
# case of TestTsdbQueryAggregators (zimsum, min, max, avg, dev, mimmin, mimmax, count and the
# percentiles p50..p999, ep50r3..ep999r3, ep50r7..ep999r7; integer and float series, aligned
# and 15 s apart, and the series with missing points), carried over as telnet writes and
# /api/query reads of the real TSD (each check names the Java test); the values TestAggregators
# asserts for first, last, median, dev, squareSum and the percentiles, observed over HTTP as the
# aggregate of many series at one timestamp; and mult, diff, squareSum, pfsum and none as 2.4's
# Aggregators.java computes them (no 2.4 test asserts those). Both interpolation behaviours are
# covered: the lerp aggregators (sum/min/max/avg/dev/percentiles: a series without a point at a
# timestamp counts as its linear interpolation, integer-truncated between integers), the
# zim/mim ones (zimsum, mimmin, mimmax, count: only the points present) and pfsum's previous
# value.
# Salted variants (TestTsdbQueryAggregatorsSalted): the same checks run against three TSDs - the
# default salted layout (1 byte, 8 buckets), unsalted (salt.width 0) and OpenTSDB's salted test
# layout (1 byte, 2 buckets) with tsd.storage.enable_appends on - and every answer of the three
# must be byte-identical.
# The fixture is TestTsdbQueryAggregators': sys.cpu.user (here ag.long) host=web01 1..300 and
# host=web02 300..1, one point every 30 s from 1356998430 (web02 15 s later in the "offset"
# metrics); floats 1.25..76 and 75..0.25 by 0.25; the missing-data series every 10 s from
# 1356998400 (web01 without every third point, web02 without every other).
source "$(dirname "$0")/lib.sh"

FIXTURE=$(it_tmpdir)/fixture.txt
python3 - >"$FIXTURE" <<'PY'
L = []
def two(metric, web01, web02, offset):
    for k, v in enumerate(web01):
        L.append("put %s %d %s host=web01" % (metric, 1356998430 + 30 * k, v))
    for k, v in enumerate(web02):
        L.append("put %s %d %s host=web02" % (metric, 1356998430 + 30 * k + (15 if offset else 0), v))
longs = ([str(i) for i in range(1, 301)], [str(i) for i in range(300, 0, -1)])
floats = ([repr(1.25 + 0.25 * k) for k in range(300)], [repr(75 - 0.25 * k) for k in range(300)])
two("ag.long", *longs, False)
two("ag.long.off", *longs, True)
two("ag.float", *floats, False)
two("ag.float.off", *floats, True)
for i in range(300):  # storeLongTimeSeriesWithMissingData
    if i % 3:
        L.append("put ag.missing %d %d host=web01" % (1356998400 + 10 * i, i + 1))
for k, i in enumerate(range(300, 0, -1)):
    if i % 2:
        L.append("put ag.missing %d %d host=web02" % (1356998400 + 10 * k, i))
# TestAggregators' value sets, one series per value (host=h<n>) at one timestamp
def many(metric, vals):
    for n, v in enumerate(vals):
        L.append("put %s 1356998400 %s host=h%05d" % (metric, v, n))
many("agv.pct", range(1, 1001))
many("agv.first", range(10))
many("agv.firstd", [repr(0.5 + k) for k in range(10)])
many("agv.median5", [5, 2, -1, 400, 3])
many("agv.median6", [5, 2, -1, 400, 3, -42])
many("agv.median1", [42])
many("agv.mediand5", ["5.1", "2.434", "-1.99", "400.69487", "3.15168"])
many("agv.mediand6", ["5.1", "2.434", "-1.99", "400.69487", "3.15168", "-42"])
many("agv.mediand1", ["42.5"])
many("agv.dev", range(10000))
many("agv.dev3", [3, 3, 3])
many("agv.dev2", [1, 2])
print("\n".join(L))
PY

# one store layout (audit_stores in lib.sh)
audit_run() {
  out=$({ cat "$FIXTURE"; echo version; } | tsd_talk)
  case "$out" in
    *"put:"* | *rror*) not_ok "${AUDIT_LABEL}the fixture is written: ${out:0:300}" ;;
    *) ok "${AUDIT_LABEL}the fixture is written" ;;
  esac
  PYTHONPATH="$IT_ROOT/tests/integration" python3 - "$TSD_PORT" "$AUDIT_LABEL" <<'PY'
import json, sys, urllib.parse
from audit_lib import connect, req, report, finish
connect(sys.argv[1])
LABEL = sys.argv[2]
R = "start=1356998400&end=1357041600&"
def series(name, m, want, doubles=None, tol=1e-9, extra="", grouped=True):
    """want: [(seconds, value)] of the one answer, or a function(ts, value) -> "" or why not
    with n points; doubles: whether every value must be a double (False: an integer)"""
    st, b = req("/api/query?" + R + extra + "m=" + urllib.parse.quote(m, safe=":"))
    why = ""
    try:
        d = json.loads(b)
        if st != 200 or len(d) != 1:
            why = "status %d, %d answers" % (st, len(d) if isinstance(d, list) else -1)
        else:
            got = sorted((int(k), v) for k, v in d[0]["dps"].items())
            if len(got) != len(want):
                why = "%d points, want %d" % (len(got), len(want))
            for (gt, gv), (wt, wv) in zip(got, want):
                if gt != wt or (abs(gv - wv) > tol if not callable(wv) else not wv(gv)):
                    why = "at %d: %r, want %r at %d" % (gt, gv, wv, wt); break
                if doubles is not None and isinstance(gv, float) != doubles:
                    why = "at %d: %r is %s" % (gt, gv, "an integer" if doubles else "a double"); break
            if grouped and (d[0]["aggregateTags"] != ["host"] or d[0]["tags"] != {}):
                why += " tags %r aggregateTags %r" % (d[0]["tags"], d[0]["aggregateTags"])
    except (ValueError, KeyError, TypeError) as x:
        why = "bad answer (%s)" % x
    report(LABEL + name, why.strip(), b)

T30 = [1356998430 + 30 * k for k in range(300)]
T15 = [1356998430 + 15 * k for k in range(600)]
LAST = 1357007400  # web01's last point in the offset fixtures

# The expected sequences, as TestTsdbQueryAggregators walks them
def const(ts, v): return [(t, v) for t in ts]
def updown(ts, v, step, turn, at):
    """v, then v + step per point until turn(v) holds; from there at, going the other way"""
    out, s = [], step
    for t in ts:
        out.append((t, v))
        v += s
        if s == step and turn(v):
            v, s = at, -step
    return out
def interleaved(a0, a_step, b0, b_step):
    return [(t, a0 + a_step * (k // 2) if k % 2 == 0 else b0 + b_step * (k // 2)) for k, t in enumerate(T15)]
def min_offset():
    out, v, c, dec = [], 1, 0, False
    for t in T15:
        out.append((t, v))
        if c % 2:
            v += -1 if dec else 1
        elif v == 151:
            v, dec, c = 150, True, c - 1
        c += 1
    return out
def max_offset():
    out, v, c, dec = [], 1, 0, True
    for t in T15:
        out.append((t, v))
        if v == 1: v = 300
        elif t == LAST: v = 1
        elif c % 2 == 0: v += -1 if dec else 1
        if v == 150: v, dec, c = 151, False, c - 1
        c += 1
    return out
def max_float_offset():
    out, v, dec = [], 1.25, True
    for t in T15:
        out.append((t, v))
        if v == 1.25: v = 75.0
        elif t == LAST: v = 0.25
        else:
            v += -0.125 if dec else 0.125
            if v < 38.25: v, dec = 38.25, False
    return out
def avg_offset():
    out, v = [], 1
    for t in T15:
        out.append((t, v))
        if v == 1: v = 150
        elif t == LAST: v = 1
        elif v == 150: v = 151
        else: v = 150
    return out
def avg_float_offset():
    out, v = [], 1.25
    for t in T15:
        out.append((t, v))
        if v == 1.25: v = 38.1875
        elif t == LAST: v = 0.25
    return out
def dev_offset():
    out, v, c, dec = [], 0, 0, True
    for t in T15:
        out.append((t, v))
        if t == 1356998430: v = 149
        elif t == LAST: v = 0
        elif c % 2 == 0:
            v += -1 if dec else 1
            if v < 0: v, dec, c = 0, False, c + 1
        c += 1
    return out
def dev_float_offset():
    out, v, dec = [], 0.0, True
    for t in T15:
        out.append((t, v))
        if t == 1356998430: v = 36.8125
        elif t == LAST: v = 0.0
        else:
            v += -0.125 if dec else 0.125
            if v < 0.0625: v, dec = 0.0625, False
    return out
def missing():
    """runZimSumWithMissingData: per 60 s, both missing, 301, web01's, web02's, web01's, 301"""
    out, i, ts = [], 0, 1356998400
    while len(out) < 250:
        off = i % 6
        if off == 0:
            ts, i, off = ts + 10, i + 1, 1
        out.append((ts, 301 if off in (1, 5) else i + 1 if off in (2, 4) else 300 - i))
        ts, i = ts + 10, i + 1
    return out

C = "TestTsdbQueryAggregators."
ZIM_OFF = interleaved(1, 1, 300, -1)
ZIM_FLOAT_OFF = interleaved(1.25, 0.25, 75.0, -0.25)
MIN = updown(T30, 1, 1, lambda v: v == 151, 150)
MIN_FLOAT = updown(T30, 1.25, 0.25, lambda v: v > 38, 38.0)
MAX = updown(T30, 300, -1, lambda v: v == 150, 151)
MAX_FLOAT = updown(T30, 75.0, -0.25, lambda v: v < 38.25, 38.25)
for agg in ("zimsum", "mimmin", "mimmax"):
    j = {"zimsum": "ZimSum", "mimmin": "MimMin", "mimmax": "MimMax"}[agg]
    series(C + "run%sOffset (%s:ag.long.off: only the points present)" % (j, agg), agg + ":ag.long.off",
           ZIM_OFF, doubles=False)
    series(C + "run%sFloatOffset" % j, agg + ":ag.float.off", ZIM_FLOAT_OFF, doubles=True, tol=0.001)
series(C + "runZimSum", "zimsum:ag.long", const(T30, 301), doubles=False)
series(C + "runZimSumFloat", "zimsum:ag.float", const(T30, 76.25), doubles=True, tol=0.001)
series(C + "runZimSumWithMissingData (a gap where both miss)", "zimsum:ag.missing", missing(), doubles=False)
for agg, j in (("min", "Min"), ("mimmin", "MimMin")):
    series(C + "run%s" % j, agg + ":ag.long", MIN, doubles=False)
    series(C + "run%sFloat" % j, agg + ":ag.float", MIN_FLOAT, doubles=True, tol=0.0001)
for agg, j in (("max", "Max"), ("mimmax", "MimMax")):
    series(C + "run%s" % j, agg + ":ag.long", MAX, doubles=False)
    series(C + "run%sFloat" % j, agg + ":ag.float", MAX_FLOAT, doubles=True, tol=0.001)
series(C + "runMinOffset (lerp: the other series' interpolation counts)", "min:ag.long.off", min_offset(), doubles=False)
series(C + "runMinFloatOffset", "min:ag.float.off",
       updown(T15, 1.25, 0.125, lambda v: v > 38.125, 38.125), doubles=True, tol=0.001)
series(C + "runMaxOffset", "max:ag.long.off", max_offset(), doubles=False)
series(C + "runMaxFloatOffset", "max:ag.float.off", max_float_offset(), doubles=True, tol=0.0001)
series(C + "runAvg (integer division)", "avg:ag.long", const(T30, 150), doubles=False)
series(C + "runAvgFloat", "avg:ag.float", const(T30, 38.125), doubles=True, tol=0.001)
series(C + "runAvgOffset", "avg:ag.long.off", avg_offset(), doubles=False)
series(C + "runAvgFloatOffset", "avg:ag.float.off", avg_float_offset(), doubles=True, tol=0.0001)
series(C + "runDev", "dev:ag.long", updown(T30, 149, -1, lambda v: v < 0, 0), doubles=False)
series(C + "runDevFloat", "dev:ag.float", updown(T30, 36.875, -0.25, lambda v: v < 0.125, 0.125),
       doubles=True, tol=0.001)
series(C + "runDevOffset", "dev:ag.long.off", dev_offset(), doubles=False)
series(C + "runDevFloatOffset", "dev:ag.float.off", dev_float_offset(), doubles=True, tol=0.0001)
series(C + "runCount", "count:ag.long", const(T30, 2), doubles=False)
series(C + "runCountFloat (doubles: doubleValue)", "count:ag.float", const(T30, 2.0), doubles=True, tol=0.001)
series(C + "runCountOffset (1 where one series has no point)", "count:ag.long.off",
       [(t, 1 if k in (0, 599) else 2) for k, t in enumerate(T15)], doubles=False)
series(C + "runCountFloatOffset", "count:ag.float.off",
       [(t, 1 if k in (0, 599) else 2) for k, t in enumerate(T15)], doubles=True, tol=0.0001)
PCT = ["p50", "p75", "p90", "p95", "p99", "p999"]
PCT += ["ep%sr%d" % (p[1:], r) for r in (3, 7) for p in PCT]
for p in PCT:  # runPercentiles: two values, 150 +- 150 (OpenTSDB tests only that they run)
    series(C + "runPercentiles (%s over two series 15 s apart)" % p, p + ":ag.long.off",
           [(t, lambda v: abs(v - 150) <= 150) for t in T15], doubles=False)

# TestAggregators' values, as the aggregate of one point per series at 1356998400
def one(name, m, want, tol=0, doubles=None, grouped=True):
    series("TestAggregators." + name, m, [(1356998400, want)], doubles=doubles, tol=tol, grouped=grouped)
for p, want in zip(PCT, [500, 750, 900, 950, 990, 999] * 3):
    one("testPercentiles (%s of 1..1000 = %d)" % (p, want), p + ":agv.pct", want, doubles=False)
one("testFirst (longs 0..9)", "first:agv.first", 0, doubles=False)
one("testFirst (doubles 0.5..9.5)", "first:agv.firstd", 0.5, tol=0.0001, doubles=True)
one("testLast (longs 0..9)", "last:agv.first", 9, doubles=False)
one("testLast (doubles 0.5..9.5)", "last:agv.firstd", 9.5, tol=0.0001, doubles=True)
one("testMedian (5 2 -1 400 3)", "median:agv.median5", 3, doubles=False)
one("testMedian (5 2 -1 400 3 -42: the upper middle)", "median:agv.median6", 3, doubles=False)
one("testMedian (42)", "median:agv.median1", 42, doubles=False, grouped=False)
one("testMedian (doubles, five)", "median:agv.mediand5", 3.15168, tol=0.0001, doubles=True)
one("testMedian (doubles, six)", "median:agv.mediand6", 3.15168, tol=0.0001, doubles=True)
one("testMedian (42.5)", "median:agv.mediand1", 42.5, tol=0.0001, doubles=True, grouped=False)
one("testStdDevKnownValues (0..9999: 2886.75 +- 1)", "dev:agv.dev", 2886.7513315143719, tol=1.0, doubles=False)
one("testStdDevNoDeviation (3 3 3)", "dev:agv.dev3", 0, doubles=False)
one("testStdDevFewDataInputs (1 2: 0.5 +- 1)", "dev:agv.dev2", 0.5, tol=1.0, doubles=False)
one("testSquareSumFewDataInputs (1 2)", "squareSum:agv.dev2", 5, doubles=False)

# The aggregators no 2.4 test asserts, as its Aggregators.java computes them
A = "Aggregators (2.4 source): "
one(A + "mult of 5 2 -1 400 3", "mult:agv.median5", -12000, doubles=False)
series(A + "mult: web01 x web02 per timestamp", "mult:ag.long", [(t, (k + 1) * (300 - k)) for k, t in enumerate(T30)],
       doubles=False)
one(A + "diff: the last value minus the first (0..9)", "diff:agv.first", 9, doubles=False)
one(A + "diff of doubles (0.5..9.5)", "diff:agv.firstd", 9.0, doubles=True)
one(A + "diff of one value: 0", "diff:agv.median1", 0, doubles=False, grouped=False)
series(A + "squareSum: web01^2 + web02^2 (missing: 0)", "squareSum:ag.long",
       [(t, (k + 1) ** 2 + (300 - k) ** 2) for k, t in enumerate(T30)], doubles=False)
series(A + "pfsum: a missing value is the series' previous one", "pfsum:ag.long.off",
       [(t, 1 if k in (0, 599) else 302 if k % 2 == 0 else 301) for k, t in enumerate(T15)], doubles=False)
st, b = req("/api/query?" + R + "m=none:ag.long")
try:
    d = sorted(json.loads(b), key=lambda a: a["tags"]["host"])
    why = "" if st == 200 and [a["tags"]["host"] for a in d] == ["web01", "web02"] and \
        [sorted((int(k), v) for k, v in a["dps"].items()) for a in d] == \
        [[(t, k + 1) for k, t in enumerate(T30)], [(t, 300 - k) for k, t in enumerate(T30)]] else "answers"
except (ValueError, KeyError, TypeError) as x:
    why = "status %d (%s)" % (st, x)
report(LABEL + A + "none: every series answered on its own, unaggregated", why, b)
finish()
PY
}
audit_stores audit_run TestTsdbQueryAggregatorsSalted "TestTsdbQueryAggregatorsSalted, appends"
tsd_logs_check
it_done
