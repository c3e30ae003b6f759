#!/usr/bin/env bash
# test_audit_gexp.sh - the functions of /api/query/gexp as OpenTSDB 2.4's test/query/expression
# classes assert them, carried over as requests to the real TSD (each check names the Java test):
# the values of TestDiffSeries, TestMultiplySeries, TestSumSeries, TestDivideSeries (one series
# each: a = 1, 2, 3, ... and b = 10, 11, 12, ... one point a minute, as SeekableViewsForTest
# generates them; several series each: one result per tag set), TestScale, TestAbsolute,
# TestAlias (@tag substitution, several arguments joined by ','), TestTimeShift,
# TestHighestCurrent and TestHighestMax, and each class's IllegalArgumentException texts as the
# 400 a client gets (ctsdb answers 400 where OpenTSDB's unchecked exception is a 500: docs/
# query.md); then the parser classes (TestExpressionFactory, TestExpressionReader,
# TestExpressionTree, TestExpressions) as exp= texts and TestPostAggregatedDataPoints' kept names,
# tags and integers. test_query_gexp.sh covers the shape of the answer and the parser's errors.
source "$(dirname "$0")/lib.sh"

tsd_start
T=1356998400
{
  for i in 0 1 2 3 4; do
    echo "put ga.a $((T + i * 60)) $((1 + i)) host=web01 dc=lga"
    echo "put ga.b $((T + i * 60)) $((10 + i)) host=web01 dc=lga"
    echo "put ga.a $((T + i * 60)) $((20 + i)) host=web02 dc=lga"
    echo "put ga.b $((T + i * 60)) $((30 + i)) host=web02 dc=lga"
    echo "put ga.n $((T + i * 60)) -$((1 + i)).5 host=web01 dc=lga"
    echo "put ga.n $((T + i * 60)) $((5 - i)) host=web02 dc=lga"
  done
  echo version
} | tsd_talk >/dev/null

PYTHONPATH="$IT_ROOT/tests/integration" python3 - "$TSD_PORT" <<'PY'
import json, sys, urllib.parse
from audit_lib import connect, req, report, finish
connect(sys.argv[1])
T = 1356998400
TS = [T + 60 * i for i in range(5)]
def gexp(e):
    return req("/api/query/gexp?start=%d&end=%d&exp=%s" % (T, T + 600, urllib.parse.quote(e, safe="(),:{}*=@'")))
def values(name, e, want):
    """want: [(metric, host or None, [values at TS...])] in answer order"""
    st, b = gexp(e)
    why = ""
    try:
        d = json.loads(b)
        got = [(a["metric"], a["tags"].get("host"), [a["dps"].get(str(t)) for t in sorted(map(int, a["dps"]))])
               for a in d] if st == 200 else None
        if st != 200:
            why = "status %d" % st
        elif len(got) != len(want):
            why = "%d series, want %d" % (len(got), len(want))
        else:
            for (gm, gh, gv), (wm, wh, wv) in zip(got, want):
                if (gm, gh) != (wm, wh) or len(gv) != len(wv) or any(abs(x - y) > 1e-9 for x, y in zip(gv, wv)):
                    why = "%r %r %r, want %r %r %r" % (gm, gh, gv, wm, wh, wv)
                    break
    except (ValueError, KeyError, TypeError) as x:
        why = "bad answer (%s)" % x
    report(name, why, b)
def error(name, e, msg):
    st, b = gexp(e)
    try:
        got = json.loads(b)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        got = None
    report(name, "" if st == 400 and got == msg else "status %d, message %r" % (st, got), b)
A, B = [1 + i for i in range(5)], [10 + i for i in range(5)]
A2, B2 = [20 + i for i in range(5)], [30 + i for i in range(5)]
W1 = "{host=web01}"
values("TestDiffSeries.diffOneSeriesEach: a - b = -9, named after a", "diffSeries(sum:ga.a%s,sum:ga.b%s)" % (W1, W1),
       [("ga.a", "web01", [-9] * 5)])
values("TestMultiplySeries.multiplyOneSeriesEach: a * b", "multiplySeries(sum:ga.a%s,sum:ga.b%s)" % (W1, W1),
       [("ga.a", "web01", [x * y for x, y in zip(A, B)])])
values("TestSumSeries.sumOneSeriesEach: a + b", "sumSeries(sum:ga.a%s,sum:ga.b%s)" % (W1, W1),
       [("ga.a", "web01", [x + y for x, y in zip(A, B)])])
values("TestDivideSeries.divideOneSeriesEach: a / b", "divideSeries(sum:ga.a%s,sum:ga.b%s)" % (W1, W1),
       [("ga.a", "web01", [x / y for x, y in zip(A, B)])])
values("TestDiffSeries.diffMultipleSeriesEach: one result per tag set",
       "diffSeries(sum:ga.b{host=*},sum:ga.a{host=*})",
       [("ga.b", "web01", [9] * 5), ("ga.b", "web02", [10] * 5)])
values("TestSumSeries.sumMultipleSeriesEach", "sumSeries(sum:ga.a{host=*},sum:ga.b{host=*})",
       [("ga.a", "web01", [x + y for x, y in zip(A, B)]), ("ga.a", "web02", [x + y for x, y in zip(A2, B2)])])
for f in ("diffSeries", "multiplySeries", "sumSeries", "divideSeries"):
    cls = "Test" + f[0].upper() + f[1:]
    error("%s: one series is refused" % cls, "%s(sum:ga.a)" % f, "Must have 2 to 26 series, got 1 instead")
    error("%s: 27 series are refused" % cls, "%s(%s)" % (f, ",".join(["sum:ga.a"] * 27)),
          "Must have 2 to 26 series, got 27 instead")
values("TestScale.evaluateFactor: each value times 2.5", "scale(sum:ga.a%s,2.5)" % W1, [("ga.a", "web01", [x * 2.5 for x in A])])
values("TestScale: a negative factor", "scale(sum:ga.a%s,-2)" % W1, [("ga.a", "web01", [x * -2 for x in A])])
error("TestScale.evaluateNoFactor", "scale(sum:ga.a)", "Missing scaling factor")
error("TestScale.evaluateFactorNotNumber", "scale(sum:ga.a,notanumber)", "Unparseable scale factor value: notanumber")
values("TestAbsolute: |value|, doubles and integers", "absolute(sum:ga.n{host=*})",
       [("ga.n", "web01", [1.5 + i for i in range(5)]), ("ga.n", "web02", [5 - i for i in range(5)])])
values("TestAlias.evaluateGroupByLong: every series named by the alias", "alias(sum:ga.a{host=*},MyAlias)",
       [("MyAlias", None, A), ("MyAlias", None, A2)])
values("TestAlias: @tagk replaced by the series' tag value", "alias(sum:ga.a{host=*},My.@host.@dc)",
       [("My.web01.lga", None, A), ("My.web02.lga", None, A2)])
values("TestAlias: several arguments joined by ',', an unknown @tag kept", "alias(sum:ga.a%s,My,@host,@dc,@none)" % W1,
       [("My,web01,lga,@none", None, A)])
error("TestAlias.evaluateNullParams", "alias(sum:ga.a)", "Missing the alias")
st, b = gexp("timeShift(sum:ga.a%s,'1min')" % W1)
try:
    d = json.loads(b)[0]["dps"]
    why = "" if d == {str(t + 60): v for t, v in zip(TS, A)} else "dps %r" % d
except (ValueError, KeyError, TypeError, IndexError) as x:
    why = "status %d (%s)" % (st, x)
report("TestTimeShift: the points one minute later, values unchanged", why, b)
error("TestTimeShift: no amount", "timeShift(sum:ga.a)", "Need amount of timeshift to perform timeshift")
error("TestTimeShift: zero", "timeShift(sum:ga.a,'0min')", "timeshift <= 0")
values("TestHighestCurrent: the series with the greatest last value", "highestCurrent(sum:ga.n{host=*},1)",
       [("ga.n", "web02", [5 - i for i in range(5)])])
values("TestHighestMax: the series with the greatest maximum", "highestMax(sum:ga.a{host=*},1)", [("ga.a", "web02", A2)])
values("TestHighestMax: n over the series count answers them all, greatest first", "highestMax(sum:ga.a{host=*},5)",
       [("ga.a", "web02", A2), ("ga.a", "web01", A)])
error("TestHighestCurrent: no n", "highestCurrent(sum:ga.a)", "Missing top n value (number of series to return)")
error("TestHighestCurrent: n not a number", "highestCurrent(sum:ga.a,x)", "Unparseable top n value: x")
error("TestHighestMax: n of zero", "highestMax(sum:ga.a,0)", "Top n value must be greater than zero: 0")
values("TestMovingAverage: a window of 2 points", "movingAverage(sum:ga.a%s,2)" % W1,
       [("ga.a", "web01", [0] + [(A[i - 1] + A[i]) / 2 for i in range(1, 5)])])
error("TestMovingAverage: no window", "movingAverage(sum:ga.a)", "Missing moving average window size")
error("TestMovingAverage: a window that is not a number", "movingAverage(sum:ga.a,x)", "Unparseable window size: x")

# ---- the parser (TestExpressionFactory, TestExpressionReader, TestExpressionTree,
# TestExpressions): OpenTSDB 2.4 parses exp= with its grammar (parser.jj), whose NAME token makes
# the function's tree before '(' is read; TestExpressions' ",," separators are the older
# Expressions.parse reader's, which /api/query/gexp does not use
values("TestExpressionFactory.getByName: scale is a function", "scale(sum:ga.a%s,1)" % W1, [("ga.a", "web01", A)])
error("TestExpressionFactory.getByNameNoSuchFunction", "nosuch(sum:ga.a)", "Function nosuch has not been implemented")
error("ExpressionFactory: names are case-sensitive (Scale)", "Scale(sum:ga.a,2)", "Function Scale has not been implemented")
error("TestExpressions.parseMissingOpenParens (the name is looked up first)", "scalesys.cpu)",
      "Function scalesys.cpu has not been implemented")
error("a metric query alone: its aggregator is read as a function name", "avg:ga.a",
      "Function avg has not been implemented")
def refused(name, e, prefix):
    st, b = gexp(e)
    try:
        got = json.loads(b)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        got = None
    report(name, "" if st == 400 and got and got.startswith(prefix) else "status %d, message %r" % (st, got), b)
refused("TestExpressions.parseMissingClosingParens", "scale(sum:ga.a,2", "Failed to parse ")
refused("TestExpressions.parseEmptyExpression (exp= empty)", "", "Failed to parse ")
refused("TestExpressions.parseMultiParameter: ',,' is no separator in 2.4's grammar",
        "diffSeries(sum:ga.a,, sum:ga.b)", "Failed to parse ")
refused("sum:ga.a without a function: a '(' is missing after sum", "sum:ga.a", "Failed to parse ")
error("TestExpressions.parse: scale(sys.cpu) names no metric query (sys.cpu is an argument)",
      "scale(sys.cpu)", "Missing sub queries")
st, b = req("/api/query/gexp?start=%d&end=%d&exp=scale(sys.cpu)&exp=%s" % (T, T + 600, urllib.parse.quote(
    "absolute(sum:ga.a%s)" % W1, safe="(),:{}*=@'")))
try:
    d = json.loads(b)
    why = "" if st == 200 and [(x["metric"], x["tags"].get("host")) for x in d] == [("ga.a", "web01")] else \
        "status %d, %d series" % (st, len(d))
except (ValueError, KeyError, TypeError) as x:
    why = "status %d (%s)" % (st, x)
report("a function without a series parameter answers no series (another exp= has a query)", why, b)
values("TestExpressions.parseWithWhitespace (blanks around every token)",
       "   scale ( sum:ga.a%s , 2 )  " % W1, [("ga.a", "web01", [2 * x for x in A])])
values("TestExpressions.parseExprWithParam: 3.1415 is an argument", "scale(sum:ga.a%s,3.1415)" % W1,
       [("ga.a", "web01", [3.1415 * x for x in A])])
values("TestExpressions.parseNestedExpr: a nested function is a series parameter, in order (b + 2a)",
       "sumSeries(sum:ga.b%s,scale(sum:ga.a%s,2))" % (W1, W1), [("ga.b", "web01", [y + 2 * x for x, y in zip(A, B)])])
values("TestExpressionTree.evaluateSubExpressionSet: the inner result feeds the outer",
       "absolute(scale(sum:ga.a%s,-1))" % W1, [("ga.a", "web01", A)])
values("TestExpressionTree: the parameter order is kept (diffSeries(b, a) = b - a)",
       "diffSeries(sum:ga.b%s,sum:ga.a%s)" % (W1, W1), [("ga.b", "web01", [9] * 5)])
# TestPostAggregatedDataPoints: a function's output keeps the name, tags, aggregated tags and
# the integer points of what it read; alias() clears tags and aggregated tags
st, b = gexp("absolute(sum:ga.a{dc=lga})")
try:
    d = json.loads(b)
    why = "" if st == 200 and len(d) == 1 and d[0]["metric"] == "ga.a" and d[0]["tags"] == {"dc": "lga"} and \
        d[0]["aggregateTags"] == ["host"] and '"%d":21,' % T in b else "status %d" % st
except (ValueError, KeyError, TypeError) as x:
    why = "status %d (%s)" % (st, x)
report("TestPostAggregatedDataPoints.ctorDefaults: name, tags, aggregated tags kept; integers stay integers", why, b)
st, b = gexp("alias(sum:ga.a{dc=lga},x)")
try:
    d = json.loads(b)
    why = "" if st == 200 and d[0]["metric"] == "x" and d[0]["tags"] == {} and d[0]["aggregateTags"] == [] \
        else "status %d" % st
except (ValueError, KeyError, TypeError, IndexError) as x:
    why = "status %d (%s)" % (st, x)
report("TestPostAggregatedDataPoints.alias: the alias names it, tags and aggregated tags cleared", why, b)
finish()
PY
[ $? -eq 0 ] || IT_FAILS=$((IT_FAILS + 1))
tsd_stop
tsd_logs_check
it_done
