#!/usr/bin/env bash
# test_audit_exp.sh - /api/query/exp as OpenTSDB 2.4's TestQueryExecutor and its query/pojo and
# query/expression classes assert it, carried over as requests to the real TSD (each check names
# the Java test). The fixtures are BaseTimeSyncedIteratorTest's: oneExtraSameE (A: D=D 1,2,3 and
# D=F 4,5,6; B: D=D 11,12,13, D=F 14,15,16, D=G 17,18,19; E=E on all, one point a minute from
# 1431561600), threeSameEGaps (as metrics GA, GB: the same series with points left out) and
# threeDifE (as DA, DB: the E tag differs between A and B); metrics D and F exist with no data.
# The query is TestQueryExecutor's: time from 1431561600 with sum, filter f1 = wildcard D=*
# grouped, a = A and b = B through f1, e = a + b joined by intersection, output e as "A plus B".
# Values are hand-computed from the fixture (comments); the expression answers are compared
# whole (rows, series count, meta metrics). Checked: outputs and aliases (an output naming a
# metric id: its series), default outputs, nested expressions at one and two levels in any
# request order, self references and cycles ("Self referencing expression found", "Circular
# reference found"), "No intersections found" (tag sets that differ, a nested operand with no
# data, a metric with no data), empty answers, the unknown metric's 400, the per-variable fill
# policies (metrics default zero; nan, null, none, zero, scalar; an expression's own fill when
# another names it) and the NumericFillPolicy value rules, and every Query/Timespan/Metric/
# Filter/Expression/Downsampler validate() message in OpenTSDB's order: a nested object's
# failure is OpenTSDB's outer message ("Invalid metric at index 0") with the cause in
# "details"; OpenTSDB answers those with a 500 (an unchecked exception), ctsdb with a 400
# (docs/query.md). QueryExecutor's join options as flattenTags builds the key: useQueryTags
# (JA/JB: the owner tag differs, the host filter's key matches; TestIntersectionIterator's
# intersectUsingQueryTags / noIntersectionUsingResultTags on threeDifE), includeAggTags (AG
# aggregates dc away, BG does not), the output's commonTags/aggregatedTags; time.rate (RA/RB,
# a rateOptions in time ignored as 2.4 ignores it); Metric.timeOffset validated, not applied.
# Runs on the three store layouts (audit_stores in lib.sh).
source "$(dirname "$0")/lib.sh"

audit_run() {
PYTHONPATH="$IT_ROOT/tests/integration" python3 - "$TSD_PORT" "${AUDIT_LABEL:-}" <<'PY'
import copy, json, math, sys
from audit_lib import connect, req, report, finish, telnet
connect(sys.argv[1])
LABEL = sys.argv[2]
T = 1431561600
L = []
def put(metric, ts, v, **tags):
    L.append("put %s %d %d %s" % (metric, ts, v, " ".join("%s=%s" % kv for kv in sorted(tags.items()))))
# oneExtraSameE
for k in range(3):
    put("A", T + 60 * k, 1 + k, D="D", E="E")
    put("A", T + 60 * k, 4 + k, D="F", E="E")
    put("B", T + 60 * k, 11 + k, D="D", E="E")
    put("B", T + 60 * k, 14 + k, D="F", E="E")
    put("B", T + 60 * k, 17 + k, D="G", E="E")
# threeSameEGaps (A -> GA, B -> GB)
for m, pts in (("GA", [("D", 0, 1), ("D", 2, 3), ("F", 0, 4), ("F", 1, 5), ("G", 1, 8), ("G", 2, 9)]),
               ("GB", [("D", 2, 13), ("F", 1, 15), ("G", 2, 19)])):
    for d, k, v in pts:
        put(m, T + 60 * k, v, D=d, E="E")
# threeDifE (A -> DA, B -> DB)
for k in range(3):
    for d, e, v in (("D", "A", 1), ("F", "B", 4), ("G", "C", 7)):
        put("DA", T + 60 * k, v + k, D=d, E=e)
    for d, e, v in (("D", "D", 11), ("F", "F", 14), ("G", "G", 17)):
        put("DB", T + 60 * k, v + k, D=d, E=e)
# join options (QueryExecutor's useQueryTags / includeAggTags): JA and JB share the host tag but
# not the owner tag; AG aggregates dc away under a host filter, BG has the host tag only
for k in range(3):
    put("JA", T + 60 * k, 1 + k, host="web01", owner="alice")
    put("JA", T + 60 * k, 4 + k, host="web02", owner="bob")
    put("JB", T + 60 * k, 10 * (k + 1), host="web01", owner="carol")
    put("JB", T + 60 * k, 10 * (k + 4), host="web02", owner="dave")
    put("AG", T + 60 * k, 1, host="web01", dc="1")
    put("AG", T + 60 * k, 2, host="web01", dc="2")
    put("BG", T + 60 * k, 10 * (k + 1), host="web01")
# time.rate: RA 1, 3, 9 and RB 10, 4, 7 (a drop: no counter handling) a minute apart
for k, (ra, rb) in enumerate(((1, 10), (3, 4), (9, 7))):
    put("RA", T + 60 * k, ra, D="D", E="E")
    put("RB", T + 60 * k, rb, D="D", E="E")
telnet(L + ["version"])
st, b = req("/api/uid/assign", "POST", json.dumps({"metric": ["D", "F"]}))
report(LABEL + "metrics D and F exist without data", "" if st == 200 else "status %d" % st, b)

F1 = [{"id": "f1", "tags": [{"type": "wildcard", "tagk": "D", "filter": "*", "groupBy": True}]}]
INTER = {"operator": "intersection"}
def query(metrics=None, expressions=None, outputs="default", time=None, filters=F1):
    q = {"time": time or {"start": str(T), "aggregator": "sum"}, "filters": copy.deepcopy(filters),
         "metrics": metrics or [{"id": "a", "metric": "A", "filter": "f1"},
                                {"id": "b", "metric": "B", "filter": "f1"}],
         "expressions": expressions or [{"id": "e", "expr": "a + b", "join": INTER}]}
    if outputs == "default":
        q["outputs"] = [{"id": "e", "alias": "A plus B"}]
    elif outputs is not None:
        q["outputs"] = outputs
    return q
def run(q):
    return req("/api/query/exp", "POST", json.dumps(q))
def num(v):
    return "NaN" if isinstance(v, str) or (isinstance(v, float) and math.isnan(v)) else float(v)
def outputs(name, q, want):
    """want: [(id, alias or None, rows, metrics)] in order; rows compared as floats ("NaN")"""
    st, b = run(q)
    try:
        got = [(o["id"], o.get("alias"), [[int(r[0])] + [num(v) for v in r[1:]] for r in o["dps"]],
                o["meta"][1]["metrics"] if len(o["meta"]) > 1 else [],
                o["dpsMeta"]["series"], o["dpsMeta"]["setCount"], o["dpsMeta"]["firstTimestamp"])
               for o in json.loads(b)["outputs"]]
        exp = [(i, a, [[r[0]] + [num(v) for v in r[1:]] for r in rows], m,
                len(rows[0]) - 1 if rows else 0, len(rows), rows[0][0] if rows else 0)
               for i, a, rows, m in want]
        why = "" if st == 200 and got == exp else "status %d, got %r, want %r" % (st, got, exp)
    except (ValueError, KeyError, TypeError, IndexError) as x:
        why = "status %d (%s)" % (st, x)
    report(LABEL + name, why, b)
def error(name, q, status, message, details=None, prefix=False):
    st, b = run(q)
    try:
        e = json.loads(b)["error"]
        ok = st == status and e["code"] == status and (
            e["message"].startswith(message) if prefix else e["message"] == message)
        if details is not None:
            ok = ok and e.get("details") == details
        why = "" if ok else "status %d, %r" % (st, e)
    except (ValueError, KeyError, TypeError) as x:
        why = "status %d (%s)" % (st, x)
    report(LABEL + name, why, b)

M0, M1, M2 = T * 1000, (T + 60) * 1000, (T + 120) * 1000
E_ROWS = [[M0, 12, 18], [M1, 14, 20], [M2, 16, 22]]        # D=D: 1+11.., D=F: 4+14..
E2_ROWS = [[M0, 24, 36], [M1, 28, 40], [M2, 32, 44]]       # e * 2
E4_ROWS = [[M0, 48, 72], [M1, 56, 80], [M2, 64, 88]]       # e2 + e3 = 4e
AB = ["A", "B"]
outputs("TestQueryExecutor.oneExpressionWithOutputAlias", query(), [("e", "A plus B", E_ROWS, AB)])
outputs("TestQueryExecutor.oneExpressionDefaultOutput (no outputs: every expression)",
        query(outputs=None), [("e", None, E_ROWS, AB)])
outputs("TestQueryExecutor.oneExpressionOutputAndBAlso (a metric id as an output: its series)",
        query(outputs=[{"id": "e", "alias": "A plus B"}, {"id": "a"}, {"id": "b"}]),
        [("e", "A plus B", E_ROWS, AB),
         ("a", None, [[M0, 1, 4], [M1, 2, 5], [M2, 3, 6]], ["A"]),
         ("b", None, [[M0, 11, 14, 17], [M1, 12, 15, 18], [M2, 13, 16, 19]], ["B"])])
outputs("outputs: an id naming nothing is left out, the order is the request's",
        query(outputs=[{"id": "b"}, {"id": "nothing"}, {"id": "e"}]),
        [("b", None, [[M0, 11, 14, 17], [M1, 12, 15, 18], [M2, 13, 16, 19]], ["B"]),
         ("e", None, E_ROWS, AB)])
# threeSameEGaps: every series has every timestamp of any; a missing point is 0 (a metric's
# default fill): D=D 1+0, 0+0, 3+13; D=F 4+0, 5+15, 0+0; D=G 0+0, 8+0, 9+19
GAPS = [[M0, 1, 4, 0], [M1, 0, 20, 8], [M2, 16, 0, 28]]
GM = [{"id": "a", "metric": "GA", "filter": "f1"}, {"id": "b", "metric": "GB", "filter": "f1"}]
outputs("TestQueryExecutor.oneExpressionDefaultFill (metrics fill zero)", query(metrics=GM),
        [("e", "A plus B", GAPS, ["GA", "GB"])])
outputs("TestQueryExecutor.oneExpressionDownsamplingMissingTimestampNoFill",
        query(metrics=GM, time={"start": str(T), "aggregator": "sum",
                                "downsampler": {"interval": "1m", "aggregator": "sum"}}),
        [("e", "A plus B", GAPS, ["GA", "GB"])])
outputs("TestQueryExecutor.oneExpressionNoFilter (5+42, 7+45, 9+48)",
        query(metrics=[{"id": "a", "metric": "A"}, {"id": "b", "metric": "B"}]),
        [("e", "A plus B", [[M0, 47], [M1, 52], [M2, 57]], AB)])
outputs("TestQueryExecutor.twoExpressionsDefaultOutput (e2 = a * b: 1*11, 4*14, ...)",
        query(outputs=None, expressions=[{"id": "e", "expr": "a + b", "join": INTER},
                                         {"id": "e2", "expr": "a * b", "join": INTER}]),
        [("e", None, E_ROWS, AB), ("e2", None, [[M0, 11, 56], [M1, 24, 75], [M2, 39, 96]], AB)])
outputs("TestQueryExecutor.twoExpressionsOneWithoutResultsDefaultOutput (union of no series: empty)",
        query(outputs=None, metrics=[{"id": "a", "metric": "A", "filter": "f1"},
                                     {"id": "b", "metric": "B", "filter": "f1"},
                                     {"id": "d", "metric": "D", "filter": "f1"},
                                     {"id": "f", "metric": "F", "filter": "f1"}],
              expressions=[{"id": "e", "expr": "a + b", "join": INTER}, {"id": "x", "expr": "d + f"}]),
        [("e", None, E_ROWS, AB), ("x", None, [], [])])
NEST = [{"id": "e", "expr": "a + b", "join": INTER}, {"id": "e2", "expr": "e * 2", "join": INTER},
        {"id": "e3", "expr": "e * 2", "join": INTER}, {"id": "e4", "expr": "e2 + e3", "join": INTER}]
outputs("TestQueryExecutor.multiExpressionsOneOutput", query(expressions=NEST),
        [("e", "A plus B", E_ROWS, AB)])
outputs("TestQueryExecutor.nestedExpressionsOneLevelDefaultOutput",
        query(outputs=None, expressions=[{"id": "e", "expr": "a + b", "join": INTER},
                                         {"id": "e2", "expr": "e * 2", "join": INTER}]),
        [("e", None, E_ROWS, AB), ("e2", None, E2_ROWS, AB)])
outputs("Expression.validate: no join is a union (D=G: a filled with 0, 0+17, 0+18, 0+19)",
        query(outputs=None, expressions=[{"id": "e", "expr": "a + b"}]),
        [("e", None, [[M0, 12, 18, 17], [M1, 14, 20, 18], [M2, 16, 22, 19]], AB)])
outputs("TestQueryExecutor.nestedExpressionsTwoLevelsDefaultOutput", query(outputs=None, expressions=NEST),
        [("e", None, E_ROWS, AB), ("e2", None, E2_ROWS, AB), ("e3", None, E2_ROWS, AB),
         ("e4", None, E4_ROWS, AB)])
outputs("TestQueryExecutor.nestedExpressionsTwoLevelsDefaultOutputOrdering (named before defined)",
        query(outputs=None, expressions=[NEST[1], NEST[3], NEST[2], NEST[0]]),
        [("e2", None, E2_ROWS, AB), ("e4", None, E4_ROWS, AB), ("e3", None, E2_ROWS, AB),
         ("e", None, E_ROWS, AB)])
outputs("nested: an output may name a nested expression only", query(expressions=NEST, outputs=[{"id": "e4", "alias": "4e"}]),
        [("e4", "4e", E4_ROWS, AB)])
outputs("TestQueryExecutor.emptyResultSet (nothing stored in the range)",
        query(time={"start": str(T + 3600), "end": str(T + 7200), "aggregator": "sum"}),
        [("e", "A plus B", [], [])])
error("TestQueryExecutor.nsunMetric", query(metrics=[{"id": "a", "metric": "A", "filter": "f1"},
                                                    {"id": "b", "metric": "NSUN", "filter": "f1"}]),
      400, "No such name for 'metrics': 'NSUN'", prefix=True)
SELF = [{"id": "e", "expr": "a + b"}, {"id": "e2", "expr": "e * 2"}, {"id": "e3", "expr": "e * 2"},
        {"id": "e4", "expr": "e2 + e4"}]
error("TestQueryExecutor.selfReferencingExpression", query(expressions=SELF), 400,
      "Self referencing expression found: e4")
CIRC = [{"id": "e", "expr": "a + e4"}, {"id": "e2", "expr": "e * 2"}, {"id": "e3", "expr": "e * 2"},
        {"id": "e4", "expr": "e2 + e3"}]
# references added in request order: e -> e4, e2 -> e, e3 -> e, then e4 -> e2 closes the cycle
error("TestQueryExecutor.circularReferenceExpression", query(expressions=CIRC), 400,
      "Circular reference found: e4")
error("Circular reference of two", query(expressions=[{"id": "x", "expr": "y + 1"}, {"id": "y", "expr": "x * a"}]),
      400, "Circular reference found: y")
error("TestQueryExecutor.noIntersectionsFound (threeDifE: the E tags differ)",
      query(metrics=[{"id": "a", "metric": "DA", "filter": "f1"}, {"id": "b", "metric": "DB", "filter": "f1"}]),
      400, "No intersections found", prefix=True)
error("TestQueryExecutor.noIntersectionsFoundNestedExpression (d has no data)",
      query(metrics=[{"id": "a", "metric": "A", "filter": "f1"}, {"id": "b", "metric": "B", "filter": "f1"},
                     {"id": "d", "metric": "D", "filter": "f1"}],
            expressions=[{"id": "e", "expr": "a + b", "join": INTER}, {"id": "x", "expr": "d + e", "join": INTER}]),
      400, "No intersections found", prefix=True)
error("TestQueryExecutor.noIntersectionsFoundOneMetricEmpty",
      query(metrics=[{"id": "a", "metric": "A", "filter": "f1"}, {"id": "b", "metric": "D", "filter": "f1"}]),
      400, "No intersections found", prefix=True)
error("TestQueryExecutor.notEnoughMetrics (a + b + c)", query(expressions=[{"id": "e", "expr": "a + b + c"}]),
      400, "Expression [a + b + c] was missing input c")

# fill policies per variable (NumericFillPolicy; TimeSyncedIterator.next fills with its value)
def gm(fa=None, fb=None):
    a = {"id": "a", "metric": "GA", "filter": "f1"}
    b = {"id": "b", "metric": "GB", "filter": "f1"}
    if fa is not None:
        a["fillPolicy"] = fa
    if fb is not None:
        b["fillPolicy"] = fb
    return [a, b]
N = "NaN"
outputs("fill nan on b: where b lacks a point the sum is NaN (a's missing points are 0)",
        query(metrics=gm(fb={"policy": "nan"})),
        [("e", "A plus B", [[M0, N, N, N], [M1, N, 20, N], [M2, 16, N, 28]], ["GA", "GB"])])
outputs("fill scalar 100 on a, zero on b: 1+0, 100+0, 3+13 | 4+0, 5+15, 100+0 | 100+0, 8+0, 9+19",
        query(metrics=gm(fa={"policy": "scalar", "value": 100}, fb={"policy": "zero"})),
        [("e", "A plus B", [[M0, 1, 4, 100], [M1, 100, 20, 8], [M2, 16, 100, 28]], ["GA", "GB"])])
for pol in ("null", "none"):
    outputs("fill %s on b: a NaN value, as nan (no timestamp left out)" % pol,
            query(metrics=gm(fb={"policy": pol})),
            [("e", "A plus B", [[M0, N, N, N], [M1, N, 20, N], [M2, 16, N, 28]], ["GA", "GB"])])
outputs("fill without a policy: a value of 5 means scalar 5",
        query(metrics=gm(fb={"value": 5})),
        [("e", "A plus B", [[M0, 6, 9, 5], [M1, 5, 20, 13], [M2, 16, 5, 28]], ["GA", "GB"])])
outputs("an output naming a metric is filled by its policy (GB scalar 5; GB has no point at the first minute)",
        query(metrics=gm(fb={"policy": "scalar", "value": 5}), outputs=[{"id": "b"}]),
        [("b", None, [[M1, 5, 15, 5], [M2, 13, 5, 19]], ["GB"])])
# a union operand with no series of a key counts 0 at every timestamp, whatever its fill policy
# (UnionIterator fills a missing series with its own zero fill; nothing sets another):
# x = e + c with c = GA (D=D, D=F, D=G) and e = a + b over A/B (D=D, D=F) in a union: D=G lacks e
U = [{"id": "e", "expr": "a + b", "join": INTER}, {"id": "x", "expr": "e + c", "join": {"operator": "union"}}]
UM = [{"id": "a", "metric": "A", "filter": "f1"}, {"id": "b", "metric": "B", "filter": "f1"},
      {"id": "c", "metric": "GA", "filter": "f1"}]
# D=D: 12+1, 14+0, 16+3; D=F: 18+4, 20+5, 22+0; D=G: 0+0, 0+8, 0+9 (e absent: 0)
outputs("TestUnionIterator: an expression lacking a key in a union counts 0 (not its NaN fill)",
        query(metrics=UM, expressions=U, outputs=[{"id": "x"}]),
        [("x", None, [[M0, 13, 22, 0], [M1, 14, 25, 8], [M2, 19, 22, 9]], ["A", "B", "GA"])])
U2 = [dict(U[0], fillPolicy={"policy": "scalar", "value": 1000}), U[1]]
outputs("TestUnionIterator: ... nor its own fillPolicy (scalar 1000)",
        query(metrics=UM, expressions=U2, outputs=[{"id": "x"}]),
        [("x", None, [[M0, 13, 22, 0], [M1, 14, 25, 8], [M2, 19, 22, 9]], ["A", "B", "GA"])])
UB = [dict(UM[0], fillPolicy={"policy": "scalar", "value": 1000}), UM[1], UM[2]]
outputs("TestUnionIterator: a metric lacking a key in a union counts 0 (not its scalar 1000)",
        query(metrics=UB, expressions=[{"id": "e", "expr": "a + b"}], outputs=[{"id": "e"}]),
        [("e", None, [[M0, 12, 18, 17], [M1, 14, 20, 18], [M2, 16, 22, 19]], ["A", "B"])])
# an expression's NaN value takes the expression's fillPolicy where another names it
# (ExpressionIterator binds a NaN operand to its fill value; NaN by default): e = a + b over
# GA/GB with b filled nan is NaN where GB has no point (D=D: N, N, 16; D=F: N, 20, N; D=G: N, N,
# 28); x = e + c with c = A (D=D 1, 2, 3; D=F 4, 5, 6), an intersection (D=G left out)
NE = [{"id": "e", "expr": "a + b", "join": INTER}, {"id": "x", "expr": "e + c", "join": INTER}]
NM = [{"id": "a", "metric": "GA", "filter": "f1"},
      {"id": "b", "metric": "GB", "filter": "f1", "fillPolicy": {"policy": "nan"}},
      {"id": "c", "metric": "A", "filter": "f1"}]
outputs("ExpressionIterator: an expression's NaN stays NaN under its default fill (nan)",
        query(metrics=NM, expressions=NE, outputs=[{"id": "x"}]),
        [("x", None, [[M0, N, N], [M1, N, 25], [M2, 19, N]], ["GA", "GB", "A"])])
NE2 = [dict(NE[0], fillPolicy={"policy": "scalar", "value": 1000}), NE[1]]
outputs("ExpressionIterator: an expression's NaN takes its own fillPolicy (scalar 1000)",
        query(metrics=NM, expressions=NE2, outputs=[{"id": "x"}]),
        [("x", None, [[M0, 1001, 1004], [M1, 1002, 25], [M2, 19, 1006]], ["GA", "GB", "A"])])

# the validate() messages, in Query.validate's order (outer message, cause in details)
def mod(f):
    q = query()
    f(q)
    return q
def drop(d, k):
    d.pop(k)
error("TestQuery: missing time", mod(lambda q: drop(q, "time")), 400, "missing time")
error("TestTimeSpan: missing start", mod(lambda q: drop(q["time"], "start")), 400, "Invalid time",
      "missing or empty start")
error("TestTimeSpan: empty start", mod(lambda q: q["time"].update(start="")), 400, "Invalid time",
      "missing or empty start")
error("TestTimeSpan: bad start", mod(lambda q: q["time"].update(start="notatime")), 400, "Invalid time")
error("TestTimeSpan: bad end", mod(lambda q: q["time"].update(end="1x-ago")), 400, "Invalid time")
error("TestTimeSpan: missing aggregator", mod(lambda q: drop(q["time"], "aggregator")), 400, "Invalid time",
      "Missing or empty aggregator")
error("TestTimeSpan: invalid aggregator", mod(lambda q: q["time"].update(aggregator="nope")), 400,
      "Invalid time", "Invalid aggregator")
outputs("Timespan: the aggregator's case is ignored (SUM)", mod(lambda q: q["time"].update(aggregator="SUM")),
        [("e", "A plus B", E_ROWS, AB)])
error("TestDownsampler: missing interval", mod(lambda q: q["time"].update(downsampler={"aggregator": "sum"})),
      400, "Invalid time", "Missing or empty interval")
error("TestDownsampler: bad interval", mod(lambda q: q["time"].update(downsampler={"interval": "1x", "aggregator": "sum"})),
      400, "Invalid time")
error("TestDownsampler: missing aggregator", mod(lambda q: q["time"].update(downsampler={"interval": "1m"})),
      400, "Invalid time", "Missing or empty aggregator")
error("TestDownsampler: invalid aggregator",
      mod(lambda q: q["time"].update(downsampler={"interval": "1m", "aggregator": "nope"})),
      400, "Invalid time", "Invalid aggregator")
error("TestQuery: missing metrics", mod(lambda q: drop(q, "metrics")), 400, "missing or empty metrics")
error("TestQuery: empty metrics", mod(lambda q: q.update(metrics=[])), 400, "missing or empty metrics")
error("TestQuery: duplicated metric id", mod(lambda q: q["metrics"][1].update(id="a")), 400,
      "duplicated metric id: a")
error("TestQuery: duplicated filter id", mod(lambda q: q["filters"].append(copy.deepcopy(F1[0]))), 400,
      "duplicated filter id: f1")
error("TestQuery: an expression id equal to a metric id", mod(lambda q: q["expressions"][0].update(id="a")),
      400, "Duplicated variable or expression id: a")
error("TestQuery: duplicated expression id",
      mod(lambda q: q["expressions"].append({"id": "e", "expr": "a * b"})), 400,
      "Duplicated variable or expression id: e")
error("TestMetric: missing metric", mod(lambda q: drop(q["metrics"][1], "metric")), 400,
      "Invalid metric at index 1", "missing or empty metric")
error("TestMetric: missing id", mod(lambda q: drop(q["metrics"][0], "id")), 400,
      "Invalid metric at index 0", "missing or empty id")
error("TestMetric: invalid id (validateId)", mod(lambda q: q["metrics"][0].update(id="a_1")), 400,
      "Invalid metric at index 0", 'Invalid id ("a_1"): illegal character: _')
error("TestMetric: an id that is one digit", mod(lambda q: q["metrics"][0].update(id="1")), 400,
      "Invalid metric at index 0", "The ID cannot be an integer")
error("TestMetric: invalid aggregator", mod(lambda q: q["metrics"][0].update(aggregator="nope")), 400,
      "Invalid metric at index 0", "Invalid aggregator")
error("TestNumericFillPolicy: zero with a value", mod(lambda q: q["metrics"][0].update(fillPolicy={"policy": "zero", "value": 1})),
      400, "Invalid metric at index 0", "The value for ZERO must be 0")
error("TestNumericFillPolicy: nan with a value", mod(lambda q: q["metrics"][0].update(fillPolicy={"policy": "nan", "value": 1})),
      400, "Invalid metric at index 0", "The value for NONE and NAN must be NaN")
error("TestNumericFillPolicy: none with a value", mod(lambda q: q["metrics"][0].update(fillPolicy={"policy": "none", "value": 2})),
      400, "Invalid metric at index 0", "The value for NONE and NAN must be NaN")
error("TestNumericFillPolicy: null with a value", mod(lambda q: q["metrics"][0].update(fillPolicy={"policy": "null", "value": 2})),
      400, "Invalid metric at index 0", "The value for NULL must be 0")
error("FillPolicy.fromString: unknown policy", mod(lambda q: q["metrics"][0].update(fillPolicy={"policy": "bogus"})),
      400, "Unrecognized fill policy: bogus")
error("TestFilter: missing id", mod(lambda q: drop(q["filters"][0], "id")), 400, "Invalid filter at index 0",
      "Missing or empty id")
error("TestFilter: invalid id", mod(lambda q: q["filters"][0].update(id="f-1")), 400, "Invalid filter at index 0",
      'Invalid id ("f-1"): illegal character: -')
error("TestExpression: missing id", mod(lambda q: drop(q["expressions"][0], "id")), 400,
      "Invalid expression at index 0", "missing or empty id")
error("TestExpression: invalid id", mod(lambda q: q["expressions"][0].update(id="e.1")), 400,
      "Invalid expression at index 0", 'Invalid id ("e.1"): illegal character: .')
error("TestExpression: missing expr", mod(lambda q: drop(q["expressions"][0], "expr")), 400,
      "Invalid expression at index 0", "missing or empty expr")
error("TestExpression: expr that does not parse", mod(lambda q: q["expressions"][0].update(expr="a + (b")), 400,
      "Invalid expression at index 0")
error("TestJoin: a join without operator", mod(lambda q: q["expressions"][0].update(join={})), 400,
      "Missing join operator")
error("Query.validateFilters: unrecognized filter id", mod(lambda q: q["metrics"][1].update(filter="f9")), 400,
      "unrecognized filter id f9 in metric b")
error("Query.validate: an expression variable naming nothing", mod(lambda q: q["expressions"][0].update(expr="a + z")),
      400, "Expression [a + z] was missing input z")
error("order: the metric checks come before the filter checks",
      mod(lambda q: (q["metrics"][0].update(id="a_"), q["filters"][0].update(id="f_"))), 400,
      "Invalid metric at index 0")

# ---- join.useQueryTags / join.includeAggTags (QueryExecutor -> IntersectionIterator /
# UnionIterator.flattenTags), time.rate, Metric.timeOffset
FH = [{"id": "fh", "tags": [{"type": "wildcard", "tagk": "host", "filter": "*", "groupBy": True}]}]
def meta_of(name, q, want):
    """want: per output series (commonTags, aggregatedTags), in order, of the first output"""
    st, b = run(q)
    try:
        got = [(m["commonTags"], m["aggregatedTags"]) for m in json.loads(b)["outputs"][0]["meta"][1:]]
        why = "" if st == 200 and got == want else "status %d, got %r, want %r" % (st, got, want)
    except (ValueError, KeyError, TypeError, IndexError) as x:
        why = "status %d (%s)" % (st, x)
    report(LABEL + name, why, b)
JM = [{"id": "a", "metric": "JA", "filter": "fh"}, {"id": "b", "metric": "JB", "filter": "fh"}]
def jq(join, metrics=JM, expr="a + b", outputs="default"):
    return query(metrics=metrics, filters=FH, outputs=outputs,
                 expressions=[{"id": "e", "expr": expr, "join": join}])
error("Join.useQueryTags false (default): the owner tag differs, no intersection", jq(INTER), 400,
      "No intersections found", prefix=True)
# web01: 1+10, 2+20, 3+30; web02: 4+40, 5+50, 6+60
JROWS = [[M0, 11, 44], [M1, 22, 55], [M2, 33, 66]]
QT = {"operator": "intersection", "useQueryTags": True}
outputs("Join.useQueryTags: series matched on the filter's tag key (host) only", jq(QT),
        [("e", "A plus B", JROWS, ["JA", "JB"])])
outputs("Join.useQueryTags with a union", jq({"operator": "union", "useQueryTags": True}),
        [("e", "A plus B", JROWS, ["JA", "JB"])])
meta_of("Join.useQueryTags: an output series has the tags of the first variable named", jq(QT),
        [({"host": "web01", "owner": "alice"}, []), ({"host": "web02", "owner": "bob"}, [])])
meta_of("Join.useQueryTags: b named first, b's tags", jq(QT, expr="b - a"),
        [({"host": "web01", "owner": "carol"}, []), ({"host": "web02", "owner": "dave"}, [])])
outputs("Join.useQueryTags: b - a (10-1, 20-2, ..)", jq(QT, expr="b - a"),
        [("e", "A plus B", [[M0, 9, 36], [M1, 18, 45], [M2, 27, 54]], ["JA", "JB"])])
# TestExpressionIterator's JEXL operators beyond + - * / on oneExtraSameE (a: 1,2,3 / 4,5,6;
# b: 11,12,13 / 14,15,16): a % b is a; a > b is 0 and a < b 1 throughout
for name, expr, rows in (("aModBWithTwoSeries", "a % b", [[M0, 1, 4], [M1, 2, 5], [M2, 3, 6]]),
                         ("aGreaterThanb", "a > b", [[M0, 0, 0], [M1, 0, 0], [M2, 0, 0]]),
                         ("aLessThanb", "a < b", [[M0, 1, 1], [M1, 1, 1], [M2, 1, 1]])):
    outputs("TestExpressionIterator." + name, query(expressions=[{"id": "e", "expr": expr, "join": INTER}]),
            [("e", "A plus B", rows, AB)])
outputs("TestOutput.unknownFieldShouldBeIgnored (an output with an unknown field)",
        query(outputs=[{"id": "e", "alias": "A plus B", "unknownfield": "boo"}]), [("e", "A plus B", E_ROWS, AB)])
# TestIntersectionIterator.intersectUsingQueryTags: threeDifE (E differs between a and b) with
# useQueryTags matches on D (f1's tag key): D=D 1+11.., D=F 4+14.., D=G 7+17..
DM = [{"id": "a", "metric": "DA", "filter": "f1"}, {"id": "b", "metric": "DB", "filter": "f1"}]
outputs("TestIntersectionIterator.intersectUsingQueryTags (threeDifE matched on D)",
        query(metrics=DM, expressions=[{"id": "e", "expr": "a + b", "join": QT}]),
        [("e", "A plus B", [[M0, 12, 18, 24], [M1, 14, 20, 26], [M2, 16, 22, 28]], ["DA", "DB"])])
error("TestIntersectionIterator.noIntersectionUsingResultTags (threeDifE, the whole tag set)",
      query(metrics=DM), 400, "No intersections found", prefix=True)
# no filter on b: no query tag keys, so only the (empty) aggregated part is compared: b's one
# series (all JB summed: 50, 70, 90; no common tag, host and owner aggregated) keys "|host,owner"
# and a's series "host=web0x" (the filter's key) do not meet
error("Join.useQueryTags: a metric without filter has no query tag keys", jq(QT, metrics=[
      JM[0], {"id": "b", "metric": "JB"}]), 400, "No intersections found", prefix=True)
# includeAggTags: AG under the host filter is one group host=web01 (1+2 = 3) that aggregated dc
AGM = [{"id": "a", "metric": "AG", "filter": "fh"}, {"id": "b", "metric": "BG", "filter": "fh"}]
error("Join.includeAggTags true (default): an aggregated tag key keeps series apart",
      jq(INTER, metrics=AGM), 400, "No intersections found", prefix=True)
NOAGG = {"operator": "intersection", "includeAggTags": False}
outputs("Join.includeAggTags false: matched on the tags alone (3+10, 3+20, 3+30)",
        jq(NOAGG, metrics=AGM), [("e", "A plus B", [[M0, 13], [M1, 23], [M2, 33]], ["AG", "BG"])])
meta_of("Join.includeAggTags false: the output lists the operands' aggregated tag keys",
        jq(NOAGG, metrics=AGM), [({"host": "web01"}, ["dc"])])
# a union keeps both apart, BG's key sorting first: BG + 0 (a's fill), then 0 + AG's 3
outputs("Join.includeAggTags true with a union: two series, each with the other's fill",
        jq({"operator": "union"}, metrics=AGM),
        [("e", "A plus B", [[M0, 10, 3], [M1, 20, 3], [M2, 30, 3]], ["AG", "BG"])])
meta_of("Join.includeAggTags true with a union: each series' own aggregated tag keys",
        jq({"operator": "union"}, metrics=AGM), [({"host": "web01"}, []), ({"host": "web01"}, ["dc"])])
meta_of("a metric as an output: its group's aggregated tag keys",
        jq(NOAGG, metrics=AGM, outputs=[{"id": "a"}]), [({"host": "web01"}, ["dc"])])
# time.rate: every sub-query's rate (per second, default options): RA 2/60, 6/60; RB -6/60, 3/60
RM = [{"id": "a", "metric": "RA", "filter": "f1"}, {"id": "b", "metric": "RB", "filter": "f1"}]
RT = {"start": str(T), "aggregator": "sum", "rate": True}
def g15(v):  # the JSON writer's 15 significant digits
    return float("%.15g" % v)
outputs("Timespan.rate: each metric's rate, then the expression (2/60-6/60, 6/60+3/60)",
        query(metrics=RM, time=RT), [("e", "A plus B", [[M1, g15(2 / 60 - 6 / 60)], [M2, g15(6 / 60 + 3 / 60)]], ["RA", "RB"])])
outputs("Timespan.rate: a metric output is its rate",
        query(metrics=RM, time=RT, outputs=[{"id": "b"}]), [("b", None, [[M1, -0.1], [M2, 0.05]], ["RB"])])
outputs("Timespan.rate false: the values (1+10, 3+4, 9+7)",
        query(metrics=RM, time=dict(RT, rate=False)), [("e", "A plus B", [[M0, 11], [M1, 7], [M2, 16]], ["RA", "RB"])])
outputs("Timespan has no rateOptions: a counter option there is ignored (the drop stays negative)",
        query(metrics=RM, time=dict(RT, rateOptions={"counter": True, "counterMax": 100})),
        [("e", "A plus B", [[M1, g15(2 / 60 - 6 / 60)], [M2, g15(6 / 60 + 3 / 60)]], ["RA", "RB"])])
# Metric.timeOffset: parsed as a time by Metric.validate, applied nowhere in 2.4
outputs("TestMetric.deserializeAllFields: timeOffset 1h-ago is accepted (and not applied)",
        mod(lambda q: q["metrics"][0].update(timeOffset="1h-ago")), [("e", "A plus B", E_ROWS, AB)])
st, b = run(mod(lambda q: q["metrics"][1].update(timeOffset="1h")))
try:
    e = json.loads(b)["error"]
    why = "" if st == 400 and e["message"] == "Invalid metric at index 1" and \
        e.get("details", "").startswith("Invalid time: 1h.") else "status %d, %r" % (st, e)
except (ValueError, KeyError, TypeError) as x:
    why = "status %d (%s)" % (st, x)
report(LABEL + "Metric.validate: a timeOffset that is no time (1h)", why, b)
finish()
PY
}
audit_stores audit_run "TestQueryExecutor (unsalted)" "TestQueryExecutor (salted"
tsd_logs_check
it_done
