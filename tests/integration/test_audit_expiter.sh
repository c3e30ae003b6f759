#!/usr/bin/env bash
# test_audit_expiter.sh - /api/query/exp's joins and time syncing as OpenTSDB 2.4's iterator test
# classes assert them (TestIntersectionIterator, TestUnionIterator, TestTimeSyncedIterator,
# TestExpressionIterator), carried over as requests to the real TSD; each check names the Java
# test. BaseTimeSyncedIteratorTest's fixtures are stored side by side, one pair of metrics each
# (fixture PREFIX: PREFIX.A and PREFIX.B, one point a minute from 1431561600): OE oneExtraSameE,
# TS threeSameE, TG threeSameEGaps, TO timeOffset, DE threeDifE, DJ threeDisjointSameE, RO
# reduceToOne, AE twoSeriesAggedE, AZ twoSeriesAggedEandExtraTagK, OT oneAggedTheOtherTagged, NB
# threeSameENoB (NB.B exists without data), ME threeAMissingE, ND no data at all; OX and RX are
# oneExtraSameE and reduceToOne with the extra points the *ExtraDP* tests add (at +30 s) really
# stored - in the Java tests they are added after the queries ran, so they are never read.
# The Java queries map onto the request's metrics: queryAB_Dstar is a D=* group-by filter on a
# and b, queryAB_AggAll no filter, queryA_DD a literal D=D filter on a alone. The iterator's
# (useQueryTags, includeAggTags) are the join's options.
# What a Java test reads per variable, a client sees through two expressions on the same join:
# x = a + 0 * b (a's value in each joined series) and y = b + 0 * a (b's). Where the Java test's
# iterators fill a missing point with NaN, a is filled with scalar -1000 and b with -2000 here,
# so that the filled slots are told apart from the 0 a union gives a variable with no series of
# a key (UnionIterator's own zero fill). The values are the Java tests' expected ones.
source "$(dirname "$0")/lib.sh"

tsd_start
PYTHONPATH="$IT_ROOT/tests/integration" python3 - "$TSD_PORT" <<'PY'
import json, math, sys
from audit_lib import connect, req, report, finish, telnet
connect(sys.argv[1])
T = 1431561600
L = []
def put(metric, sec, v, **tags):
    L.append("put %s %d %d %s" % (metric, T + sec, v, " ".join("%s=%s" % kv for kv in sorted(tags.items()))))
def series(metric, tags, first, minutes=(0, 1, 2), step=1):
    for k, m in enumerate(minutes):
        put(metric, 60 * m, first + step * k, **tags)
DE, DF, DG = {"D": "D", "E": "E"}, {"D": "F", "E": "E"}, {"D": "G", "E": "E"}
for p in ("OE", "OX"):                                     # oneExtraSameE
    series(p + ".A", DE, 1); series(p + ".A", DF, 4)
    series(p + ".B", DE, 11); series(p + ".B", DF, 14); series(p + ".B", DG, 17)
put("OX.B", 30, 14, D="G", E="E")                          # twoAndThreeSeriesExtraDP*
for p in ("TS", "NB"):                                     # threeSameE, threeSameENoB
    series(p + ".A", DE, 1); series(p + ".A", DF, 4); series(p + ".A", DG, 7)
series("TS.B", DE, 11); series("TS.B", DF, 14); series("TS.B", DG, 17)
for d, k, v in (("D", 0, 1), ("D", 2, 3), ("F", 0, 4), ("F", 1, 5), ("G", 1, 8), ("G", 2, 9)):
    put("TG.A", 60 * k, v, D=d, E="E")                     # threeSameEGaps
for d, k, v in (("D", 2, 13), ("F", 1, 15), ("G", 2, 19)):
    put("TG.B", 60 * k, v, D=d, E="E")
series("TO.A", DE, 1, (0, 1)); series("TO.A", DF, 4, (0, 1))  # timeOffset
series("TO.B", DE, 13, (2, 3)); series("TO.B", DF, 16, (2, 3))
for d, ea, eb, va, vb in (("D", "A", "D", 1, 11), ("F", "B", "F", 4, 14), ("G", "C", "G", 7, 17)):
    series("DE.A", {"D": d, "E": ea}, va); series("DE.B", {"D": d, "E": eb}, vb)   # threeDifE
series("DJ.A", DE, 1); series("DJ.A", DF, 4); series("DJ.A", DG, 7)               # threeDisjointSameE
series("DJ.B", DE, 11); series("DJ.B", {"D": "Q", "E": "E"}, 14); series("DJ.B", DG, 17)
for p in ("RO", "RX"):                                     # reduceToOne
    series(p + ".A", DE, 1); series(p + ".A", DF, 4); series(p + ".A", DG, 7)
    series(p + ".B", {"D": "P", "E": "E"}, 11); series(p + ".B", {"D": "Q", "E": "E"}, 14)
    series(p + ".B", DG, 17)
put("RX.A", 30, 1024, D="F", E="E"); put("RX.B", 30, 1024, D="Q", E="E")  # ...ExtraDPs
for p, extra in (("AE", ({}, {})), ("AZ", ({"Z": "A"}, {"Z": "B"}))):     # twoSeriesAggedE(andExtraTagK)
    series(p + ".A", DE, 1); series(p + ".A", {"D": "D", "E": "F"}, 1)
    series(p + ".B", dict(DE, **extra[0]), 11); series(p + ".B", dict({"D": "D", "E": "F"}, **extra[1]), 11)
series("OT.A", DE, 1); series("OT.A", {"D": "E", "E": "F"}, 1); series("OT.B", DE, 11)  # oneAggedTheOtherTagged
series("ME.A", {"D": "D"}, 1); series("ME.A", {"D": "F"}, 4); series("ME.A", {"D": "G"}, 7)  # threeAMissingE
series("ME.B", DE, 11); series("ME.B", DF, 14); series("ME.B", DG, 17)
telnet(L + ["version"])
st, b = req("/api/uid/assign", "POST", json.dumps({"metric": ["NB.B", "ND.A", "ND.B"]}))
report("metrics without data (NB.B, ND.A, ND.B) exist", "" if st == 200 else "status %d" % st, b)

M = [(T + 60 * k) * 1000 for k in range(4)]
M30 = (T + 30) * 1000
N = "NaN"
FA, FB = -1000, -2000  # a's and b's fill where the Java iterators fill NaN
DSTAR = [{"id": "f1", "tags": [{"type": "wildcard", "tagk": "D", "filter": "*", "groupBy": True}]}]
DD = [{"id": "f1", "tags": [{"type": "literal_or", "tagk": "D", "filter": "D", "groupBy": True}]}]
def request(fx, style, op, qt=False, agg=False, exprs=None, fill=True):
    fa = {"policy": "scalar", "value": FA} if fill else None
    fb = {"policy": "scalar", "value": FB} if fill else None
    a = {"id": "a", "metric": fx + ".A"}
    b = {"id": "b", "metric": fx + ".B"}
    if style != "AggAll":
        a["filter"] = b["filter"] = "f1"
    for m, f in ((a, fa), (b, fb)):
        if f:
            m["fillPolicy"] = f
    join = {"operator": op, "useQueryTags": qt, "includeAggTags": agg}
    exprs = exprs or [("x", "a + 0 * b"), ("y", "b + 0 * a")]
    q = {"time": {"start": str(T), "end": str(T + 600), "aggregator": "sum"},
         "metrics": [a] if style == "A_DD" else [a, b],
         "expressions": [{"id": i, "expr": e, "join": join} for i, e in exprs]}
    if style != "AggAll":
        q["filters"] = DD if style == "A_DD" else DSTAR
    return q
def run(q):
    return req("/api/query/exp", "POST", json.dumps(q))
def num(v):
    """a value compared to 12 significant digits (the Java tests: within 0.0001); NaN as the string NaN"""
    return N if isinstance(v, str) or (isinstance(v, float) and math.isnan(v)) else float("%.12g" % v)
def rows(cols, ts):
    """cols: one list of values per series; the answer's rows [ts, v1, v2, ...]"""
    return [[t] + [num(c[i]) for c in cols] for i, t in enumerate(ts)]
def got_outputs(b):
    return {o["id"]: o for o in json.loads(b)["outputs"]}
def joined(name, q, want, ts=M[:3], meta=None):
    """want: {expression id: [per-series value lists]}; meta: [(commonTags, aggregatedTags)] of
    the first expression's series"""
    st, b = run(q)
    why = ""
    try:
        out = got_outputs(b)
        for i, cols in want.items():
            got = [[int(r[0])] + [num(v) for v in r[1:]] for r in out[i]["dps"]]
            exp = rows(cols, ts) if cols else []
            if st != 200 or got != exp:
                why = "status %d, %s: got %r, want %r" % (st, i, got, exp)
                break
        if not why and meta is not None:
            first = out[list(want)[0]]
            gm = [(m["commonTags"], m["aggregatedTags"]) for m in first["meta"][1:]]
            if gm != meta:
                why = "meta %r, want %r" % (gm, meta)
    except (ValueError, KeyError, TypeError, IndexError) as x:
        why = "status %d (%s)" % (st, x)
    report(name, why, b)
def refused(name, q, message):
    st, b = run(q)
    try:
        e = json.loads(b)["error"]
        why = "" if st == 400 and e["message"].startswith(message) else "status %d, %r" % (st, e)
    except (ValueError, KeyError, TypeError) as x:
        why = "status %d (%s)" % (st, x)
    report(name, why, b)
def up(first, n=3, step=1):
    return [first + step * k for k in range(n)]
Z3 = [0, 0, 0]
NI = "No intersections found"

# ---- TestIntersectionIterator -------------------------------------------------------------
TI = "TestIntersectionIterator."
joined(TI + "twoAndThreeSeries (D=G of b kicked)", request("OE", "Dstar", "intersection"),
       {"x": [up(1), up(4)], "y": [up(11), up(14)]})
joined(TI + "twoAndThreeSeriesExtraDPinKickedSeries (a point only in the kicked series adds no timestamp)",
       request("OX", "Dstar", "intersection"), {"x": [up(1), up(4)], "y": [up(11), up(14)]})
joined(TI + "threeSeriesIntersectToTwo", request("DJ", "Dstar", "intersection"),
       {"x": [up(1), up(7)], "y": [up(11), up(17)]})
joined(TI + "threeSeriesIntersectToOne", request("RO", "Dstar", "intersection"), {"x": [up(7)], "y": [up(17)]})
joined(TI + "threeSeriesIntersectToExtraDPsinKicked (points only in kicked series add no timestamp)",
       request("RX", "Dstar", "intersection"), {"x": [up(7)], "y": [up(17)]})
joined(TI + "threeSeriesAggedIntoOne (sums 12, 42, +3 a minute; E common, D aggregated)",
       request("TS", "AggAll", "intersection"), {"x": [up(12, step=3)], "y": [up(42, step=3)]},
       meta=[({"E": "E"}, ["D"])])
# threeSameEGaps: the Java NaNs are the fills (a -1000, b -2000)
joined(TI + "threeSeriesFullIntersetWithNaNs (every series at every timestamp, gaps filled)",
       request("TG", "Dstar", "intersection"),
       {"x": [[1, FA, 3], [4, 5, FA], [FA, 8, 9]], "y": [[FB, FB, 13], [FB, 15, FB], [FB, FB, 19]]})
q = request("TG", "Dstar", "intersection", exprs=[("x", "a + b")])
for m in q["metrics"]:
    m["fillPolicy"] = {"policy": "nan"}
joined(TI + "threeSeriesFullIntersetWithNaNs, nan fills: NaN where a point is missing", q,
       {"x": [[N, N, 16], [N, 20, N], [N, N, 28]]})
joined(TI + "twoSeriesTimeOffset (a at T0, T1, b at T2, T3: filled outside)", request("TO", "Dstar", "intersection"),
       {"x": [[1, 2, FA, FA], [4, 5, FA, FA]], "y": [[FB, FB, 13, 14], [FB, FB, 16, 17]]}, ts=M)
refused(TI + "noIntersectionUsingResultTags (threeDifE)", request("DE", "Dstar", "intersection"), NI)
joined(TI + "intersectUsingQueryTags (threeDifE matched on D)", request("DE", "Dstar", "intersection", qt=True),
       {"x": [up(1), up(4), up(7)], "y": [up(11), up(14), up(17)]})
joined(TI + "commonAggregatedTag (E aggregated in both: 1+1, 11+11)", request("AE", "Dstar", "intersection"),
       {"x": [up(2, step=2)], "y": [up(22, step=2)]}, meta=[({"D": "D"}, ["E"])])
joined(TI + "extraAggTagIgnored (b aggregates E and Z; includeAggTags false)",
       request("AZ", "Dstar", "intersection"), {"x": [up(2, step=2)], "y": [up(22, step=2)]},
       meta=[({"D": "D"}, ["E", "Z"])])
refused(TI + "extraAggTagNoIntersection (includeAggTags: E vs E,Z)",
        request("AZ", "Dstar", "intersection", agg=True), NI)
refused(TI + "onlyOneResultSet (b has no data)", request("NB", "Dstar", "intersection", agg=True), NI)
refused(TI + "oneAggedOneTaggedNoIntersection (a's empty tag set vs b's D=D,E=E)",
        request("OT", "AggAll", "intersection", agg=True), NI)
joined(TI + "oneAggedOneTaggedUseQueryTagsWoutQueryTags (no filter: everything matches)",
       request("OT", "AggAll", "intersection", qt=True), {"x": [up(2, step=2)], "y": [up(11)]},
       meta=[({}, ["D", "E"])])
joined(TI + "singleSeries (a alone, D=D)", request("OE", "A_DD", "intersection", exprs=[("x", "a")]),
       {"x": [up(1)]})
refused(TI + "setAMissingE (a has no E tag)", request("ME", "Dstar", "intersection"), NI)
joined(TI + "setAMissingEQueryTags (matched on D)", request("ME", "Dstar", "intersection", qt=True),
       {"x": [up(1), up(4), up(7)], "y": [up(11), up(14), up(17)]})
joined(TI + "noData (no series: nothing, no error)", request("ND", "Dstar", "intersection"),
       {"x": [], "y": []})

# ---- TestUnionIterator --------------------------------------------------------------------
TU = "TestUnionIterator."
joined(TU + "twoAndThreeSeries (a has no D=G: 0)", request("OE", "Dstar", "union"),
       {"x": [up(1), up(4), Z3], "y": [up(11), up(14), up(17)]})
# the extra point really stored: a row at +30 s, the present series filled there
joined(TU + "twoAndThreeSeriesExtraDP (stored: a row at +30 s, filled where a series has no point)",
       request("OX", "Dstar", "union"),
       {"x": [[1, FA, 2, 3], [4, FA, 5, 6], [0, 0, 0, 0]],
        "y": [[11, FB, 12, 13], [14, FB, 15, 16], [17, 14, 18, 19]]}, ts=[M[0], M30, M[1], M[2]])
joined(TU + "threeSeriesUnionToFour (D, F, G, Q)", request("DJ", "Dstar", "union"),
       {"x": [up(1), up(4), up(7), Z3], "y": [up(11), Z3, up(17), up(14)]})
joined(TU + "threeSeriesUnionToExtraDPs (reduceToOne: D, F, G, P, Q)", request("RO", "Dstar", "union"),
       {"x": [up(1), up(4), up(7), Z3, Z3], "y": [Z3, Z3, up(17), up(11), up(14)]})
joined(TU + "threeSeriesUnionToExtraDPs, the points stored (a row at +30 s)", request("RX", "Dstar", "union"),
       {"x": [[1, FA, 2, 3], [4, 1024, 5, 6], [7, FA, 8, 9], [0] * 4, [0] * 4],
        "y": [[0] * 4, [0] * 4, [17, FB, 18, 19], [11, FB, 12, 13], [14, 1024, 15, 16]]},
       ts=[M[0], M30, M[1], M[2]])
joined(TU + "threeSeriesAgged", request("TS", "AggAll", "union"), {"x": [up(12, step=3)], "y": [up(42, step=3)]})
joined(TU + "threeSeriesWithNaNs (gaps filled)", request("TG", "Dstar", "union"),
       {"x": [[1, FA, 3], [4, 5, FA], [FA, 8, 9]], "y": [[FB, FB, 13], [FB, 15, FB], [FB, FB, 19]]})
joined(TU + "twoSeriesTimeOffset", request("TO", "Dstar", "union"),
       {"x": [[1, 2, FA, FA], [4, 5, FA, FA]], "y": [[FB, FB, 13, 14], [FB, FB, 16, 17]]}, ts=M)
joined(TU + "threeSeriesUsingResultTags (threeDifE: six series, each with the other's 0)",
       request("DE", "Dstar", "union"),
       {"x": [up(1), Z3, up(4), Z3, up(7), Z3], "y": [Z3, up(11), Z3, up(14), Z3, up(17)]})
joined(TU + "threeSeriesUsingQueryTags (threeDifE matched on D)", request("DE", "Dstar", "union", qt=True),
       {"x": [up(1), up(4), up(7)], "y": [up(11), up(14), up(17)]})
joined(TU + "commonAggregatedTag", request("AE", "Dstar", "union"), {"x": [up(2, step=2)], "y": [up(22, step=2)]})
joined(TU + "extraAggTagIgnored", request("AZ", "Dstar", "union"), {"x": [up(2, step=2)], "y": [up(22, step=2)]})
joined(TU + "extraAggTag (includeAggTags: D=D|E and D=D|E,Z apart)", request("AZ", "Dstar", "union", agg=True),
       {"x": [up(2, step=2), Z3], "y": [Z3, up(22, step=2)]}, meta=[({"D": "D"}, ["E"]), ({"D": "D"}, ["E", "Z"])])
joined(TU + "onlyOneResultSet (b has no data: 0)", request("NB", "Dstar", "union"),
       {"x": [up(1), up(4), up(7)], "y": [Z3, Z3, Z3]})
joined(TU + "onlyOneResultSetQueryTags", request("NB", "Dstar", "union", qt=True),
       {"x": [up(1), up(4), up(7)], "y": [Z3, Z3, Z3]})
joined(TU + "onlyOneResultSetAggTags", request("NB", "Dstar", "union", agg=True),
       {"x": [up(1), up(4), up(7)], "y": [Z3, Z3, Z3]})
joined(TU + "oneAggedOneTagged (a's empty tag set first, then b's D=D,E=E)",
       request("OT", "AggAll", "union", agg=True), {"x": [up(2, step=2), Z3], "y": [Z3, up(11)]})
joined(TU + "oneAggedOneTaggedUseQueryTagsWoutQueryTags", request("OT", "AggAll", "union", qt=True),
       {"x": [up(2, step=2)], "y": [up(11)]})
joined(TU + "singleSeries", request("OE", "A_DD", "union", exprs=[("x", "a")]), {"x": [up(1)]})
joined(TU + "setAMissingE (six series: D=D, D=D,E=E, D=F, ...)", request("ME", "Dstar", "union"),
       {"x": [up(1), Z3, up(4), Z3, up(7), Z3], "y": [Z3, up(11), Z3, up(14), Z3, up(17)]})
joined(TU + "setAMissingEQueryTags", request("ME", "Dstar", "union", qt=True),
       {"x": [up(1), up(4), up(7)], "y": [up(11), up(14), up(17)]})
joined(TU + "noData", request("ND", "Dstar", "union"), {"x": [], "y": []})

# ---- TestTimeSyncedIterator: a metric's series on the shared timestamps, filled by its policy
# (a metric named as an output is answered time-synced, as its TimeSyncedIterator iterates)
TT = "TestTimeSyncedIterator."
def synced(name, fx, style, fill, want, ts=M[:3]):
    q = request(fx, style, "union", exprs=[("x", "a")], fill=False)
    q["metrics"] = q["metrics"][:1]
    if fill is not None:
        q["metrics"][0]["fillPolicy"] = fill
    q["outputs"] = [{"id": "a"}]
    joined(name, q, {"a": want}, ts)
synced(TT + "threeSeries (threeDisjointSameE's a)", "DJ", "Dstar", None, [up(1), up(4), up(7)])
synced(TT + "singleSeries (D=D)", "DJ", "A_DD", None, [up(1)])
synced(TT + "noData", "ND", "Dstar", None, [])
synced(TT + "ctor: the default fill is zero (threeSameEGaps)", "TG", "Dstar", None, [[1, 0, 3], [4, 5, 0], [0, 8, 9]])
synced(TT + "threeSeriesMissing (fill nan)", "TG", "Dstar", {"policy": "nan"}, [[1, N, 3], [4, 5, N], [N, 8, 9]])
synced(TT + "threeSeriesMissingFillZero", "TG", "Dstar", {"policy": "zero"}, [[1, 0, 3], [4, 5, 0], [0, 8, 9]])
synced(TT + "threeSeriesMissingNull (NULL's value is NaN)", "TG", "Dstar", {"policy": "null"},
       [[1, N, 3], [4, 5, N], [N, 8, 9]])
synced(TT + "threeSeriesMissingScalar", "TG", "Dstar", {"policy": "scalar", "value": 42},
       [[1, 42, 3], [4, 5, 42], [42, 8, 9]])

# ---- TestExpressionIterator: the expression's values (metrics' default fill: zero)
TE = "TestExpressionIterator."
def ei(name, fx, op, expr, cols, ts=M[:3], qt=False, nested=None, fill=False, meta=None):
    q = request(fx, "Dstar", op, qt=qt, exprs=[("e", expr)] + (nested or []), fill=fill)
    q["outputs"] = [{"id": (nested[-1][0] if nested else "e")}]
    joined(name, q, {q["outputs"][0]["id"]: cols}, ts, meta)
ei(TE + "aPlusBWithTwoSeries", "OE", "intersection", "a + b", [up(12, step=2), up(18, step=2)],
   meta=[({"D": "D", "E": "E"}, []), ({"D": "F", "E": "E"}, [])])
ei(TE + "aMinusBWithTwoSeries", "OE", "intersection", "a - b", [[-10] * 3, [-10] * 3])
ei(TE + "aTimesBWithTwoSeries", "OE", "intersection", "a * b", [[11, 24, 39], [56, 75, 96]])
ei(TE + "aDivideBWithTwoSeries", "OE", "intersection", "a / b",
   [[x / y for x, y in zip(up(1), up(11))], [x / y for x, y in zip(up(4), up(14))]])
ei(TE + "aDivideByZeroWithTwoSeries (JEXL answers 0)", "OE", "intersection", "a / 0", [Z3, Z3])
ei(TE + "a % 0 is 0 too", "OE", "intersection", "a % 0", [Z3, Z3])
ei(TE + "doubleVariableAndPrecedence (a + (b * b))", "OE", "intersection", "a + (b * b)",
   [[122, 146, 172], [200, 230, 262]])
ei(TE + "doubleVariableAndPrecedenceChanged ((a + b) * b)", "OE", "intersection", "(a + b) * b",
   [[132, 168, 208], [252, 300, 352]])
ei(TE + "aPlusScalarDropB (a + 1, b joined but unused)", "OE", "intersection", "a + 1", [up(2), up(5)])
ei(TE + "aPlusBMissingPointsDefaultFillZero", "TG", "intersection", "a + b", [[1, 0, 16], [4, 20, 0], [0, 8, 28]])
q = request("TG", "Dstar", "intersection", exprs=[("e", "a + b")], fill=False)
for m in q["metrics"]:
    m["fillPolicy"] = {"policy": "scalar", "value": 1}
q["outputs"] = [{"id": "e"}]
joined(TE + "aPlusBMissingPointsFillOne", q, {"e": [[2, 2, 16], [5, 20, 2], [2, 9, 28]]})
for m in q["metrics"]:
    m["fillPolicy"] = {"policy": "nan"}
joined(TE + "aPlusBMissingPointsFillInfectiousNaN", q, {"e": [[N, N, 16], [N, 20, N], [N, N, 28]]})
ei(TE + "aPlusBResultsOffsetDefaultFill", "TO", "intersection", "a + b", [[1, 2, 13, 14], [4, 5, 16, 17]], ts=M)
q = request("OT", "AggAll", "intersection", qt=True, exprs=[("e", "a + b")], fill=False)
q["outputs"] = [{"id": "e"}]
joined(TE + "aPlusBOneAggedOneTaggedUseQueryTagsWoutQueryTags (2+11.., D and E aggregated)", q,
       {"e": [[13, 16, 19]]}, meta=[({}, ["D", "E"])])
ei(TE + "singleNestedExpression (x = e * 2)", "OE", "intersection", "a + b", [up(24, step=4), up(36, step=4)],
   nested=[("x", "e * 2")])
ei(TE + "doubleNestedExpression (e3 = (e * 2) * 2)", "OE", "intersection", "a + b",
   [up(48, step=8), up(72, step=8)], nested=[("e2", "e * 2"), ("e3", "e2 * 2")])
refused(TE + "noIntersectionFound (threeDifE)", request("DE", "Dstar", "intersection", exprs=[("e", "a + b")]), NI)
q = request("OE", "Dstar", "intersection", exprs=[("e", "a + b + c")])
st, b = run(q)
try:
    msg = json.loads(b)["error"]["message"]
except (ValueError, KeyError, TypeError):
    msg = None
report(TE + "missingRequiredVariable / addResultsMissingId (a + b + c)",
       "" if st == 400 and msg == "Expression [a + b + c] was missing input c" else "status %d, %r" % (st, msg), b)
refused(TE + "ctorNoVariables (1 + 1: after the request validated)",
        request("OE", "Dstar", "intersection", exprs=[("e", "1 + 1")]),
        "The expression didn't appear to have any variables")
refused(TE + "ctorNoVariables comes after validate(): a missing input of a later expression first",
        request("OE", "Dstar", "intersection", exprs=[("e", "1 + 1"), ("f", "a + z")]),
        "Expression [a + z] was missing input z")
refused(TE + "ctorBadExpression (' a / ')", request("OE", "Dstar", "intersection", exprs=[("e", " a / ")]),
        "Invalid expression at index 0")
ei(TE + "unionOneExtraSeries (D=G: 0 + 17..)", "OE", "union", "a + b", [up(12, step=2), up(18, step=2), up(17)])
ei(TE + "unionOffset", "TO", "union", "a + b", [[1, 2, 13, 14], [4, 5, 16, 17]], ts=M)
ei(TE + "unionNoIntersection (threeDifE: six series)", "DE", "union", "a + b",
   [up(1), up(11), up(4), up(14), up(7), up(17)])
ei(TE + "aGreaterThanb (a boolean is 0 or 1)", "OE", "intersection", "a > b", [Z3, Z3])
ei(TE + "aLessThanb", "OE", "intersection", "a < b", [[1] * 3, [1] * 3])
finish()
PY
[ $? -eq 0 ] || IT_FAILS=$((IT_FAILS + 1))
tsd_stop
tsd_logs_check
it_done
