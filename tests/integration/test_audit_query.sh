#!/usr/bin/env bash
# test_audit_query.sh - /api/query as OpenTSDB 2.4's QueryRpc answers it: the cases of its
# TestQueryRpc carried over as HTTP requests to the real TSD (each check names the Java test).
# OpenTSDB's tests call the parser directly and inspect the TSSubQuery it builds; over HTTP the
# same facts show in the answer's "query" echo (show_query): aggregator, metric, tsuids,
# downsample, rate, explicitTags, tags and the filters (type, tagk, group_by). The execute*
# cases check the answer itself: "[]" for no data, the metric, one answer for a duplicated sub
# query, 400 with the NoSuchUniqueName text, the fill-policy error, delete refused. The v1Auth*
# cases need OpenTSDB's authentication plugin (test_security_tsd.sh covers ctsdb's own). Then
# the options QueryRpc reads around the parser (ms, show_tsuids, show_stats, show_summary,
# no_annotations, global_annotations, arrays, timezone and use_calendar) are checked on points
# written at fixed times.
# Deliberate difference (docs/opentsdb-compat.md): "padding" returns the points just outside the
# range (2.0-2.2's documented behaviour); 2.4 parses it and drops them.
source "$(dirname "$0")/lib.sh"

tsd_start '--tsd.core.histograms.config={"net.opentsdb.core.SimpleHistogramDecoder": 0}'
now=$(date +%s)
T=$((now - 600))
{
  for h in web01 quirm tsort; do echo "put sys.cpu.0 $T 1 host=$h colo=lga"; done
  echo "put sys.cpu.0 $((now - 60)) 9 host=web01 colo=lga" # inside 1h-ago, after 5m-ago
  echo "put sys.cpu.0 $T 2 host=somethingfoo colo=lga"
  echo "put sys.cpu.1 $T 5 host=web01"
  echo "put sys.cpu.user $T 7 host=web01"
  # fixed-time data: 2013-01-01 00:00 UTC, one point a minute for 5 minutes, two hosts
  for i in 0 1 2 3 4; do
    echo "put fx.m $((1356998400 + i * 60)) $((10 + i)) host=a"
    echo "put fx.m $((1356998400 + i * 60 + 30)) $((20 + i)) host=b"
  done
  echo "put fx.m 1356998100 99 host=a" # 5 minutes before the start (padding)
  echo version
} | tsd_talk >/dev/null
curl -s -m 20 -X POST -d '{"description":"global","startTime":1356998460}' \
  "http://127.0.0.1:$TSD_PORT/api/annotation" >/dev/null

PYTHONPATH="$IT_ROOT/tests/integration" python3 - "$TSD_PORT" <<'PY'
import json, sys
from audit_lib import connect, req, report, finish
connect(sys.argv[1])
class Each:
    """per-answer expected values of one echo field"""
    def __init__(self, v): self.v = v
def q(args):
    return "/api/query?" + args.replace("{", "%7B").replace("}", "%7D").replace("|", "%7C") \
        .replace("[", "%5B").replace("]", "%5D").replace(" ", "%20")
def echo(name, args, **want):
    """GET with show_query; want: fields of each answer's query echo (a list: one per answer);
    filters=[(type, tagk, group_by), ...] compared as a set."""
    st, b = req(q("start=1h-ago&show_query&" + args))
    why = ""
    try:
        d = json.loads(b)
        if st != 200 or not isinstance(d, list) or not d:
            why = "status %d, %d answers" % (st, len(d) if isinstance(d, list) else -1)
        else:
            n = want.pop("n", 1)
            if len(d) != n: why += " %d answers" % len(d)
            for k, v in want.items():
                vs = v.v if isinstance(v, Each) else [v] * len(d)
                for i, a in enumerate(d[:len(vs)]):
                    e = a["query"]
                    got = e.get(k) if k != "filters" else \
                        sorted(repr((f["type"], f["tagk"], f["group_by"])) for f in e["filters"])
                    exp = vs[i] if k != "filters" else sorted(repr(x) for x in vs[i])
                    if got != exp: why += " %s[%d]=%r, want %r" % (k, i, got, exp)
    except (ValueError, KeyError, TypeError) as x:
        why = "bad answer (%s)" % x
    report(name, why.strip(), b)
def error(name, path, status, *texts, method="GET", body=None):
    st, b = req(path, method, body)
    why = "" if st == status else "status %d" % st
    for t in texts:
        if t not in b: why += " [%s] missing" % t
    report(name, why.strip(), b)
def answer(name, path, check, method="GET", body=None):
    """check(parsed answer) -> "" or why not."""
    st, b = req(path, method, body)
    try:
        why = "status %d" % st if st != 200 else check(json.loads(b))
    except (ValueError, KeyError, TypeError, IndexError) as x:
        why = "bad answer (%s)" % x
    report(name, why, b)

W = ("wildcard", "host", True)
echo("parseQueryMType", "m=sum:sys.cpu.0", aggregator="sum", metric="sys.cpu.0", rate=False,
     downsample=None, tsuids=None, filters=[])
answer("parseQueryMTypeWEnd (the point after 5m-ago is left out)",
       q("start=1h-ago&end=5m-ago&m=sum:sys.cpu.0{host=web01}"),
       lambda d: "" if list(d[0]["dps"].values()) == [1] else "dps %r" % d[0]["dps"])
echo("parseQuery2MType", "m=sum:sys.cpu.0&m=avg:sys.cpu.1", n=2, aggregator=Each(["sum", "avg"]),
     metric=Each(["sys.cpu.0", "sys.cpu.1"]), index=Each([0, 1]))
echo("parseQueryMTypeWRate", "m=sum:rate:sys.cpu.0", rate=True, downsample=None)
echo("parseQueryMTypeWDS", "m=sum:1h-avg:sys.cpu.0", downsample="1h-avg", rate=False)
echo("parseQueryMTypeWRateAndDS", "m=sum:1h-avg:rate:sys.cpu.0", downsample="1h-avg", rate=True)
echo("parseQueryMTypeWTag", "m=sum:sys.cpu.0{host=web01}", tags={"host": "literal_or(web01)"},
     filters=[("literal_or", "host", True)])
echo("parseQueryMTypeWGroupByRegex", "m=sum:sys.cpu.0{host=regexp(something(foo|bar))}",
     filters=[("regexp", "host", True)], tags={"host": "regexp(something(foo|bar))"})
echo("parseQueryMTypeWGroupByWildcardExplicit", "m=sum:sys.cpu.0{host=wildcard(*quirm)}", filters=[W])
echo("parseQueryMTypeWGroupByWildcardImplicit", "m=sum:sys.cpu.0{host=*quirm}", filters=[W])
echo("parseQueryMTypeWWildcardFilterExplicit", "m=sum:sys.cpu.0{}{host=wildcard(*quirm)}",
     filters=[("wildcard", "host", False)], tags={})
echo("parseQueryMTypeWWildcardFilterImplicit", "m=sum:sys.cpu.0{}{host=*quirm}",
     filters=[("wildcard", "host", False)])
echo("parseQueryMTypeWGroupByAndWildcardFilterExplicit",
     "m=sum:sys.cpu.0{colo=lga}{host=wildcard(*quirm)}",
     filters=[("literal_or", "colo", True), ("wildcard", "host", False)])
echo("parseQueryMTypeWGroupByAndWildcardFilterSameTagK",
     "m=sum:sys.cpu.0{host=quirm|tsort}{host=wildcard(*quirm)}",
     filters=[("literal_or", "host", True), ("wildcard", "host", False)])
# every filter must pass: no host matches both patterns, so nothing is answered; with patterns
# one host matches, both filters show
answer("parseQueryMTypeWGroupByFilterAndWildcardFilterSameTagK",
       q("start=1h-ago&m=sum:sys.cpu.0{host=wildcard(*tsort)}{host=wildcard(*quirm)}"),
       lambda d: "" if d == [] else "answer %r" % d)
echo("parseQueryMTypeWGroupByFilterAndWildcardFilterSameTagK, both matching",
     "m=sum:sys.cpu.0{host=wildcard(*sort)}{host=wildcard(ts*)}",
     filters=[W, ("wildcard", "host", False)])
error("parseQueryMTypeWGroupByFilterMissingClose",
      q("start=1h-ago&m=sum:sys.cpu.0{host=wildcard(*tsort)}{host=wildcard(*quirm)"), 400, "Missing '}'")
error("parseQueryMTypeWGroupByFilterMissingEquals",
      q("start=1h-ago&m=sum:sys.cpu.0{host=wildcard(*tsort)}{hostwildcard(*quirm)}"), 400,
      "invalid tag: hostwildcard(*quirm)")
error("parseQueryMTypeWGroupByNoSuchFilter",
      q("start=1h-ago&m=sum:sys.cpu.0{host=nosuchfilter(*tsort)}{host=dummyfilter(*quirm)}"), 400,
      "Could not find a filter for type: nosuchfilter")
echo("parseQueryMTypeWEmptyFilterBrackets", "m=sum:sys.cpu.0{}{}", filters=[])
# explicit_tags: sys.cpu.0's series also carry colo, so only sys.cpu.1 (host alone) matches
answer("explicit_tags leaves out a series with more tags",
       q("start=1h-ago&m=sum:explicit_tags:sys.cpu.0{host=web01}"), lambda d: "" if d == [] else "answer %r" % d)
echo("parseQueryMTypeWExplicit", "m=sum:explicit_tags:sys.cpu.1{host=web01}", explicitTags=True,
     tags={"host": "literal_or(web01)"}, rate=False)
echo("parseQueryMTypeWExplicitAndRate", "m=sum:explicit_tags:rate:sys.cpu.1{host=web01}",
     explicitTags=True, rate=True)
echo("parseQueryMTypeWExplicitAndRateAndDS", "m=sum:explicit_tags:rate:1m-sum:sys.cpu.1{host=web01}",
     explicitTags=True, rate=True, downsample="1m-sum")
echo("parseQueryMTypeWExplicitAndDSAndRate", "m=sum:explicit_tags:1m-sum:rate:sys.cpu.1{host=web01}",
     explicitTags=True, rate=True, downsample="1m-sum")
# TSUIDs of sys.cpu.0 (UIDs in order of first use): metric 000001; tag keys host 000001, colo
# 000002; values web01 000001, lga 000002, quirm 000003
A, Bq = "000001000001000001000002000002", "000001000001000003000002000002"
echo("parseQueryTSUIDType", "tsuid=sum:" + A, aggregator="sum", tsuids=[A], metric=None)
echo("parseQueryTSUIDTypeMulti", "tsuid=sum:%s,%s" % (A, Bq), tsuids=[A, Bq])
echo("parseQuery2TSUIDType", "tsuid=sum:%s&tsuid=avg:%s" % (A, Bq), n=2, aggregator=Each(["sum", "avg"]),
     tsuids=Each([[A], [Bq]]))
echo("parseQueryTSUIDTypeWRate", "tsuid=sum:rate:" + A, tsuids=[A], rate=True)
echo("parseQueryTSUIDTypeWDS", "tsuid=sum:1m-sum:" + A, tsuids=[A], downsample="1m-sum")
echo("parseQueryTSUIDTypeWRateAndDS", "tsuid=sum:1m-sum:rate:" + A, downsample="1m-sum", rate=True)
error("parseQueryStartMissing", q("end=1h-ago&m=sum:sys.cpu.0"), 400, "Missing parameter <code>start</code>")
error("parseQueryNoSubQuery", q("start=1h-ago"), 400, "Missing sub queries")
answer("postQuerySimplePass", "/api/query",
       lambda d: "" if d == [] or d[0]["metric"] == "sys.cpu.0" else "answer %r" % d, "POST",
       '{"start":"1h-ago","queries":[{"metric":"sys.cpu.0","aggregator":"sum","rate":true,'
       '"rateOptions":{"counter":false}}]}')
# The Java mocks NoSuchUniqueName("foo", "metrics") with kind and name swapped; the real
# exception names the kind first, as here.
error("postQueryNoMetricBadRequest", "/api/query", 400, "No such name for 'metrics': 'foo'",
      method="POST", body='{"start":"1h-ago","queries":[{"metric":"foo","aggregator":"sum"}]}')
answer("executeEmpty (a metric without data in the range)", q("start=1h-ago&m=sum:fx.m"),
       lambda d: "" if d == [] else "answer %r" % d)
answer("executeURI", q("start=1h-ago&m=sum:sys.cpu.user"),
       lambda d: "" if [a["metric"] for a in d] == ["sys.cpu.user"] else "answer %r" % d)
answer("executeURIDuplicates (one answer)", q("start=1h-ago&m=sum:sys.cpu.user&m=sum:sys.cpu.user"),
       lambda d: "" if [a["metric"] for a in d] == ["sys.cpu.user"] else "answer %r" % d)
error("executeNSU", q("start=1h-ago&m=sum:foo"), 400, "No such name for 'metrics': 'foo'")
error("executeWithBadDSFill", q("start=1h-ago&m=sum:10m-avg-badbadbad:sys.cpu.user"), 400,
      '"message":"Unrecognized fill policy: badbadbad')
# parseQueryMTypeWDSAndFill only parses "1h-avg-lerp"; executed, 2.4 refuses "lerp" the same way
error("parseQueryMTypeWDSAndFill executed", q("start=1h-ago&m=sum:1h-avg-lerp:sys.cpu.0"), 400,
      "Unrecognized fill policy: lerp")
answer("executePOST", "/api/query",
       lambda d: "" if [a["metric"] for a in d] == ["sys.cpu.user"] else "answer %r" % d, "POST",
       '{"start":"1h-ago","queries":[{"metric":"sys.cpu.user","aggregator":"sum"}]}')
# QueryRpc collapses identical sub queries of the URL form only; a body's are all answered
answer("executePOSTDuplicates (two answers)", "/api/query",
       lambda d: "" if [a["metric"] for a in d] == ["sys.cpu.user"] * 2 else "answer %r" % d, "POST",
       '{"start":"1h-ago","queries":[{"metric":"sys.cpu.user","aggregator":"sum"},'
       '{"metric":"sys.cpu.user","aggregator":"sum"}]}')
error("deleteDatapointsBadRequest", q("start=1356998400&m=sum:sys.cpu.user"), 400,
      "Deleting data is not enabled", method="DELETE")
answer("gexp", "/api/query/gexp?start=1h-ago&exp=scale(sum:sys.cpu.user,1)",
       lambda d: "" if d[0]["metric"] == "sys.cpu.user" else "answer %r" % d)
error("gexpBadExpression", "/api/query/gexp?start=1h-ago&exp=scale(sum:sys.cpu.user,notanumber)", 400, "factor")
for i, p in enumerate(["[0.98,0.95,0.99]", " [0.98,0.95,0.99]", "[ 0.98,0.95,0.99]",
                       "[0.98,0.95,0.99 ]", "[ 0.98, 0.95,0.99]"]):
    # a percentile query answers one series per percentile, named <metric>_pct_<p>
    answer("testParsePercentile %d (%s)" % (i, p), q("start=1h-ago&m=sum:percentiles%s:sys.cpu.user" % p),
           lambda d: "" if sorted(a["metric"] for a in d) == ["sys.cpu.user_pct_0.95",
           "sys.cpu.user_pct_0.98", "sys.cpu.user_pct_0.99"] else "answer %r" % d)
answer("parseHistogramQueryMType", q("start=1h-ago&m=sum:percentiles[0.98]:sys.cpu.user"),
       lambda d: "" if [a["metric"] for a in d] == ["sys.cpu.user_pct_0.98"] else "answer %r" % d)
answer("parseHistogramQueryTSUIDType", q("start=1h-ago&tsuid=sum:percentiles[0.98]:" + A),
       lambda d: "" if [(a["metric"], a["tags"]["host"]) for a in d] == [("sys.cpu.0_pct_0.98", "web01")]
       else "answer %r" % d)

# QueryRpc's options around the parser, on the fixed-time data (host a: 10..14 at :00,
# host b: 20..24 at :30 of each minute from 1356998400)
F = "start=1356998400&end=1356998699&"
FA = "000004000001000006" # fx.m{host=a}: metric 000004, host 000001, a 000006
st, b = req("/api/annotation", "POST", '{"tsuid":"%s","description":"local","startTime":1356998520}' % FA)
report("a series annotation is stored", "" if st == 200 else "status %d" % st, b)
def dps(want, key="dps"):
    return lambda d: "" if [a[key] for a in d] == want else "dps %r" % [a[key] for a in d]
answer("group by host, seconds", q(F + "m=sum:fx.m{host=a}"),
       dps([{str(1356998400 + i * 60): 10 + i for i in range(5)}]))
answer("ms (msResolution): millisecond keys", q(F + "ms&m=sum:fx.m{host=a}"),
       dps([{str((1356998400 + i * 60) * 1000): 10 + i for i in range(5)}]))
answer("POST msResolution", "/api/query",
       dps([{str((1356998400 + i * 60) * 1000): 10 + i for i in range(5)}]), "POST",
       '{"start":1356998400,"end":1356998699,"msResolution":true,'
       '"queries":[{"metric":"fx.m","aggregator":"sum","tags":{"host":"a"}}]}')
answer("arrays", q(F + "arrays&m=sum:fx.m{host=a}"),
       dps([[[1356998400 + i * 60, 10 + i] for i in range(5)]]))
answer("downsample all: one bucket per series at the start", q(F + "m=sum:0all-sum:fx.m{host=*}"),
       dps([{"1356998400": 60}, {"1356998400": 110}]))
answer("downsample 2m-sum, fill none: empty buckets left out", q(F + "m=sum:2m-sum:fx.m{host=a}"),
       dps([{"1356998400": 21, "1356998520": 25, "1356998640": 14}]))
answer("downsample 1m-sum-zero over 7 minutes: every bucket", q("start=1356998400&end=1356998819&m=sum:1m-sum-zero:fx.m{host=a}"),
       dps([dict({str(1356998400 + i * 60): 10 + i for i in range(5)},
                 **{"1356998700": 0, "1356998760": 0})]))
answer("downsample 1m-sum-null: null for an empty bucket", q("start=1356998400&end=1356998760&m=sum:1m-sum-null:fx.m{host=a}"),
       lambda d: "" if d[0]["dps"]["1356998700"] is None and d[0]["dps"]["1356998640"] == 14 else "dps %r" % d[0]["dps"])
answer("downsample 1m-sum-nan: NaN for an empty bucket", q("start=1356998400&end=1356998760&m=sum:1m-sum-nan:fx.m{host=a}"),
       lambda d: "" if d[0]["dps"]["1356998700"] == "NaN" else "dps %r" % d[0]["dps"])
answer("show_tsuids", q(F + "show_tsuids&m=sum:fx.m"),
       lambda d: "" if d[0]["tsuids"] == [FA, "000004000001000007"] else "tsuids %r" % d[0]["tsuids"])
answer("show_stats: stats per answer", q(F + "show_stats&m=sum:fx.m{host=a}"),
       lambda d: "" if "stats" in d[0] and d[0]["stats"]["emittedDPs"] == 5 else "answer %r" % d)
answer("show_summary: a final statsSummary object", q(F + "show_summary&m=sum:fx.m{host=a}"),
       lambda d: "" if len(d) == 2 and "statsSummary" in d[1] else "answer %r" % d)
answer("annotations of the series by default, no globals",
       q(F + "m=sum:fx.m{host=a}"),
       lambda d: "" if [x["description"] for x in d[0].get("annotations", [])] == ["local"]
       and "globalAnnotations" not in d[0] else "answer %r" % d)
answer("no_annotations", q(F + "no_annotations&m=sum:fx.m{host=a}"),
       lambda d: "" if "annotations" not in d[0] else "answer %r" % d)
answer("global_annotations", q(F + "global_annotations&m=sum:fx.m{host=a}"),
       lambda d: "" if [x["description"] for x in d[0]["globalAnnotations"]] == ["global"] else "answer %r" % d)
answer("padding (deliberate: the point 5 minutes before the start is returned)",
       q(F + "padding&m=sum:fx.m{host=a}"),
       lambda d: "" if d[0]["dps"].get("1356998100") == 99 else "dps %r" % d[0]["dps"])
# 2013-01-01 00:00 UTC is 2012-12-31 19:00 in New York: a calendar day there starts at 05:00 UTC
answer("timezone + use_calendar: 1dc buckets start at local midnight",
       q("start=1356930000&end=1356998699&timezone=America/New_York&use_calendar&m=sum:1dc-count:fx.m{host=a}"),
       dps([{str(1356930000): 6}])) # the five points and the one at 1356998100
answer("1dc without timezone: UTC midnight", q(F + "m=sum:1dc-count:fx.m{host=a}"),
       dps([{"1356998400": 5}]))
answer("timezone for start/end strings",
       q("start=2012/12/31-19:00:00&end=2012/12/31-19:01:00&timezone=America/New_York&m=sum:fx.m{host=a}"),
       dps([{"1356998400": 10, "1356998460": 11}]))
error("unknown timezone", q(F + "timezone=Nowhere/Land&m=sum:fx.m"), 400)
error("end before start", q("start=1356998400&end=1356998300&m=sum:fx.m"), 400,
      "End time [1356998300000] must be greater than the start time [1356998400000]")
error("unknown aggregator", q(F + "m=foo:fx.m"), 400, "No such aggregation function: foo")
error("unknown downsampler", q(F + "m=sum:1m-foo:fx.m"), 400, "No such downsampling function: foo")
error("unknown tag key", q(F + "m=sum:fx.m{nokey=a}"), 400, "No such name for 'tagk': 'nokey'")
finish()
PY
[ $? -eq 0 ] || IT_FAILS=$((IT_FAILS + 1))
tsd_stop
tsd_logs_check
it_done
