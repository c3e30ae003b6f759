#!/usr/bin/env bash
# test_audit_histogram.sh - histogram queries as OpenTSDB 2.4 answers them: the cases of its
# TestTsdbQueryHistogramQueries carried over as HTTP queries to the real TSD (each check names
# the Java test), with TSSubQuery.checkHistogramQuery's errors, TestHttpJsonSerializer's
# statsSummary asserts, TagVFilter.tagsToFilters' duplicate rule as the query echo shows it, and
# the telnet `histogram` command's batched path (many lines in one session, all readable; each
# bad line answered by its own line, in order).
#
# OpenTSDB's test stores its histograms with a test codec whose "percentile" is the stored value
# times p; ctsdb serves SimpleHistogram only, so the data is built to make the same facts show:
#   lh.m: 300 points a series, 500 ms apart from 2013-01-01 00:00 UTC (the Java test's "TsMs"
#         series); point i (1..300) of host=web01 is one bucket [i, i+1), of host=web02 one
#         bucket [301-i, 302-i): any percentile of one series at point i is its midpoint.
#   lh.c: same times; point i of web01 is bucket [0, 10) with count i, of web02 count 301 - i:
#         summed, every timestamp holds 301 (the Java test's "301 * p" sum).
# Over HTTP the percentiles come sorted (TSSubQuery.setPercentiles sorts them), named as Java's
# Float.toString writes them (98 -> "98.0"). The JSON helper is inline, as in the other audit
# scripts (to be folded into a shared audit_lib.py).
source "$(dirname "$0")/lib.sh"

tsd_start '--tsd.core.histograms.config={"net.opentsdb.core.SimpleHistogramDecoder": 0}'
T0=1356998400000

# ---- the data, over telnet: 1,200 histogram lines and bad lines in one session --------------
lines=$(it_tmpdir)/lines.txt
python3 - "$T0" >"$lines" <<'PY'
import sys
t0 = int(sys.argv[1])
for i in range(1, 301):
    ts = t0 + (i - 1) * 500
    print("histogram lh.m %d %d,%d=1 host=web01" % (ts, i, i + 1))
    print("histogram lh.m %d %d,%d=1 host=web02" % (ts, 301 - i, 302 - i))
    print("histogram lh.c %d 0,10=%d host=web01" % (ts, i))
    print("histogram lh.c %d 0,10=%d host=web02" % (ts, 301 - i))
    if i <= 2:
        print("put fx.m %d %d host=web01" % (ts, i))     # datapoints for the query echo checks
    if i == 100:
        print("histogram lh.m %d 1,2=x host=web01" % ts)   # a count that is not a number
    if i == 200:
        print("histogram lh.m %d 1,2=1" % ts)             # no tag
    if i == 250:
        print("histogram lh.m 0 1,2=1 host=web01")         # timestamp 0
    if i == 260:                                            # failing in the batch's write:
        print("histogram lh.m! %d 1,2=1 host=web01" % ts)  # a bad metric name
        print("histogram lh.m %d 1,2=1 %s" % (ts, " ".join("t%d=v" % k for k in range(9))))
PY
echo "version" >>"$lines"
got=$(tsd_talk <"$lines")
want='histogram: HBase error: For input string: "x"
histogram: illegal argument: not enough arguments (need least 5, got 3)
histogram: illegal argument: invalid timestamp: 0
histogram: HBase error: Invalid metric name ("lh.m!"): illegal character: !
histogram: HBase error: Too many tags: 9 maximum allowed: 8, tags: {t0=v, t1=v, t2=v, t3=v, t4=v, t5=v, t6=v, t7=v, t8=v}'
check_eq "telnet: 1,200 histogram lines batched; each bad line answered by its own line, in order (parse errors at once, write errors when their batch returns)" \
  "$want" "$(head -n 5 <<<"$got")"
check_contains "telnet: the version reply after them (every earlier line written first)" \
  "$(sed -n 6p <<<"$got")" "net.opentsdb.tools"

# ---- annotations (runWithAnnotation): one on web01's series inside the range ----------------
tsuid_of() {
  curl -s -m 20 "http://127.0.0.1:$TSD_PORT/api/query?start=$T0&end=$((T0 + 200000))&ms&show_tsuids&m=none:percentiles%5B50%5D:lh.m%7Bhost=$1%7D" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["tsuids"][0])'
}
W1=$(tsuid_of web01)
W2=$(tsuid_of web02)
check "the two series' tsuids read back" test -n "$W1" -a -n "$W2" -a "$W1" != "$W2"
curl -s -m 20 -o /dev/null -X POST \
  -d "{\"tsuid\":\"$W1\",\"startTime\":1356998490,\"description\":\"Hello World!\"}" \
  "http://127.0.0.1:$TSD_PORT/api/annotation"

python3 - "$TSD_PORT" "$T0" "$W1" "$W2" <<'PY'
import json, sys, urllib.request, urllib.error
port, t0, w1, w2 = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
T_END = t0 + 12 * 3600 * 1000
fails = 0
def req(path, body=None):
    r = urllib.request.Request("http://127.0.0.1:%s%s" % (port, path),
                               data=body.encode() if body is not None else None,
                               method="POST" if body is not None else "GET")
    try:
        x = urllib.request.urlopen(r, timeout=30); return x.status, x.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
def enc(s):
    return s.replace("{", "%7B").replace("}", "%7D").replace("[", "%5B").replace("]", "%5D") \
        .replace("|", "%7C").replace(" ", "%20")
def q(args, start=None, end=None):
    st, b = req("/api/query?start=%d&end=%d&ms&%s" % (start or t0, end or T_END, enc(args)))
    try:
        return st, json.loads(b), b
    except ValueError:
        return st, None, b
def report(name, why, body=""):
    global fails
    fails += bool(why)
    print(("not ok - %s: %s; answer %s" % (name, why, body[:300])) if why else "ok - " + name)
def ts(i):                      # point i (1..300)
    return t0 + (i - 1) * 500
def series(d, name, tags=None, agg=None, n=300, values=None, anns=None):
    """why one answer series differs: metric, tags, aggregateTags, point count, values(i),
    annotation descriptions (anns None: not checked; []: none)"""
    why = []
    if d.get("metric") != name: why.append("metric %r" % d.get("metric"))
    if tags is not None and d.get("tags") != tags: why.append("tags %r" % d.get("tags"))
    if agg is not None and d.get("aggregateTags") != agg: why.append("aggregateTags %r" % d.get("aggregateTags"))
    dps = d.get("dps", {})
    if len(dps) != n: why.append("%d points" % len(dps))
    if values:
        bad = [(k, v) for k, v in dps.items() if abs(v - values((int(k) - t0) // 500 + 1)) > 1e-4]
        if bad: why.append("%d wrong values, first %r" % (len(bad), bad[0]))
    a = d.get("annotations")
    if anns is not None and [x.get("description") for x in (a or [])] != anns:
        why.append("annotations %r" % a)
    return "; ".join(why)
def check(name, args, want, start=None, end=None):
    """want: list of (metric, kwargs for series()) in answer order"""
    st, d, b = q(args, start, end)
    if st != 200 or not isinstance(d, list):
        return report(name, "status %d" % st, b)
    if len(d) != len(want):
        return report(name, "%d series, want %d" % (len(d), len(want)), b)
    report(name, "; ".join(w for w in (series(x, m, **kw) for x, (m, kw) in zip(d, want)) if w), b)
def error(name, args, code, msg):
    st, d, b = q(args)
    got = d.get("error", {}).get("message") if isinstance(d, dict) else None
    report(name, "" if st == code and got == msg else "status %d message %r" % (st, got), b)

mid1 = lambda i: i + 0.5            # web01's bucket midpoint at point i
mid2 = lambda i: 301 - i + 0.5      # web02's
W01, W02 = {"host": "web01"}, {"host": "web02"}

check("runSingleTsMsSinglePercentile: <metric>_pct_<p>, the series' tags, 300 points",
      "m=sum:percentiles[98]:lh.m{host=web01}",
      [("lh.m_pct_98.0", dict(tags=W01, agg=[], values=mid1))])
check("runSingleTsMsDoulePercentile: one series per percentile, sorted",
      "m=sum:percentiles[98,95]:lh.m{host=web01}",
      [("lh.m_pct_95.0", dict(tags=W01, agg=[], values=mid1)),
       ("lh.m_pct_98.0", dict(tags=W01, agg=[], values=mid1))])
check("runSingleTsMsTwoAggSum: both hosts summed (aggregateTags host, no tags); p98 of the sum",
      "m=sum:percentiles[98]:lh.m",
      [("lh.m_pct_98.0", dict(tags={}, agg=["host"], values=lambda i: max(mid1(i), mid2(i))))])
check("runSingleTsMsTwoAggSum (the sum itself): every bucket count 301, 300 points",
      "m=sum:show-histogram-buckets:lh.c",
      [("lh.c_0.0_10.0", dict(tags={}, agg=["host"], values=lambda i: 301))])
check("runSingleTsMsAggNone: one series per host",
      "m=none:percentiles[98]:lh.m",
      [("lh.m_pct_98.0", dict(tags=W01, agg=[], values=mid1)),
       ("lh.m_pct_98.0", dict(tags=W02, agg=[], values=mid2))])
check("runSingleTsMsAggSumTwoGroups: group by host=*",
      "m=sum:percentiles[98]:lh.m{host=*}",
      [("lh.m_pct_98.0", dict(tags=W01, agg=[], values=mid1)),
       ("lh.m_pct_98.0", dict(tags=W02, agg=[], values=mid2))])
check("runWithAnnotation: the series' annotation on the percentile series",
      "m=sum:percentiles[98]:lh.m{host=web01}&no_annotations=false",
      [("lh.m_pct_98.0", dict(tags=W01, values=mid1, anns=["Hello World!"]))])
check("runWithAnnotation (no_annotations leaves it out)",
      "m=sum:percentiles[98]:lh.m{host=web01}&no_annotations",
      [("lh.m_pct_98.0", dict(tags=W01, values=mid1, anns=[]))])
check("runSingleTsMsSinglePercentile on web02: no annotation there",
      "m=sum:percentiles[98]:lh.m{host=web02}",
      [("lh.m_pct_98.0", dict(tags=W02, values=mid2, anns=[]))])
check("runTSUIDQuery: a tsuid sub-query", "tsuid=sum:percentiles[98]:" + w1,
      [("lh.m_pct_98.0", dict(tags=W01, agg=[], values=mid1, anns=["Hello World!"]))])
check("runTSUIDsAggSum: two tsuids summed", "tsuid=sum:percentiles[98]:%s,%s" % (w1, w2),
      [("lh.m_pct_98.0", dict(tags={}, agg=["host"], values=lambda i: max(mid1(i), mid2(i)),
                              anns=["Hello World!"]))])
st, d, b = q("tsuid=sum:percentiles[98]:" + w1, start=t0 + 86400000, end=t0 + 2 * 86400000)
report("runTSUIDQueryNoData: no histogram in the range -> []", "" if st == 200 and d == [] else "status %d" % st, b)
check("a sub-range: only the points inside (points 11..20)",
      "m=sum:percentiles[50]:lh.m{host=web01}",
      [("lh.m_pct_50.0", dict(tags=W01, n=10, values=mid1))], start=ts(11), end=ts(20))
# downsampling (HistogramDownsampler, sum): 300 points 500 ms apart = 150 s -> 1m buckets of
# 120, 120 and 60 points; lh.c's web01 counts summed per minute
def ds_sum(lo, hi):
    return sum(range(lo, hi + 1))
st, d, b = q("m=sum:1m-sum:show-histogram-buckets:lh.c{host=web01}")
want = {str(t0): ds_sum(1, 120), str(t0 + 60000): ds_sum(121, 240), str(t0 + 120000): ds_sum(241, 300)}
report("downsample 1m-sum: the histograms of each minute summed",
       "" if st == 200 and d and d[0].get("dps") == want and d[0].get("metric") == "lh.c_0.0_10.0"
       else "status %d" % st, b)
check("downsample 1m-sum then percentiles: one point a minute",
      "m=sum:1m-sum:percentiles[50]:lh.c{host=web01}",
      [("lh.c_pct_50.0", dict(tags=W01, n=3, values=lambda i: 5.0))])
# POST form: percentiles as a JSON list, showHistogramBuckets
st, b = req("/api/query", json.dumps({"start": t0, "end": T_END, "msResolution": True, "queries": [
    {"aggregator": "sum", "metric": "lh.c", "percentiles": [50.0], "showHistogramBuckets": True}]}))
d = json.loads(b) if st == 200 else None
report("POST percentiles + showHistogramBuckets: the percentile series, then one per bucket",
       "" if d and [x["metric"] for x in d] == ["lh.c_pct_50.0", "lh.c_0.0_10.0"] and
       all(v == 301 for v in d[1]["dps"].values()) and len(d[1]["dps"]) == 300 else "status %d" % st, b)

# TSSubQuery.checkHistogramQuery
error("checkHistogramQuery: an aggregator other than none/sum",
      "m=avg:percentiles[50]:lh.m", 400,
      "Only NONE or SUM aggregation function supported for histogram query")
error("checkHistogramQuery: a downsampling function other than sum",
      "m=sum:1m-avg:percentiles[50]:lh.m", 400,
      "Only SUM downsampling aggregation supported for histogram query")
error("checkHistogramQuery: a percentile past 100 (Float.toString)",
      "m=sum:percentiles[101]:lh.m", 400, "Invalid percentile parameters: 101.0")
error("checkHistogramQuery: a negative percentile",
      "m=sum:percentiles[-2.5]:lh.m", 400, "Invalid percentile parameters: -2.5")
st, d, b = q("m=sum:lh.c")
report("a plain sub-query of a histogram metric finds no datapoints", "" if st == 200 and d == [] else "status %d" % st, b)

# statsSummary (TestHttpJsonSerializer.formatQueryAsyncV1wStatsSummary): OpenTSDB's keys,
# sorted, measured values
st, d, b = q("m=sum:lh.c{host=web01}&m=sum:percentiles[50]:lh.m{host=web01}&show_summary")
why = []
if st != 200 or not d or "statsSummary" not in d[-1]:
    why.append("no statsSummary")
else:
    s = d[-1]["statsSummary"]
    keys = list(s)
    if keys != sorted(keys): why.append("keys not sorted: %r" % keys)
    if "processingPreWriteTime" not in s or not s["processingPreWriteTime"] > 0: why.append("processingPreWriteTime")
    for k in ("avgSerializationTime", "maxSerializationTime", "avgAggregationTime",
              "maxAggregationTime", "avgQueryScanTime", "maxQueryScanTime"):
        if not isinstance(s.get(k), (int, float)) or not s[k] > 0: why.append("%s=%r" % (k, s.get(k)))
    if "datapoints" in s: why.append("ctsdb's old key datapoints")
    if s.get("emittedDPs") != 300: why.append("emittedDPs=%r (want 300: lh.c has no datapoints, lh.m's percentile series 300)" % s.get("emittedDPs"))
    q0, q1 = s.get("queryIdx_00", {}), s.get("queryIdx_01", {})
    if q0.get("queryIndex") != 0 or q1.get("queryIndex") != 1: why.append("queryIdx maps %r %r" % (q0, q1))
    if "serializationTime" in q0 or "emittedDPs" in q0: why.append("sub-query 0 wrote no series: %r" % q0)
    if not (q1.get("serializationTime", 0) > 0 and q1.get("aggregationTime", 0) > 0 and q1.get("emittedDPs") == 300):
        why.append("sub-query 1 %r" % q1)
    if not (q1.get("queryScanTime", 0) > 0 and q0.get("queryScanTime", 0) > 0): why.append("queryScanTime")
    if q1.get("serializationTime", 0) > s["processingPreWriteTime"]: why.append("serialization longer than the run")
    if list(q1) != sorted(q1): why.append("sub-query keys not sorted: %r" % list(q1))
report("formatQueryAsyncV1wStatsSummary: statsSummary with serializationTime, processingPreWriteTime, queryIdx_00 (measured)",
       "; ".join(why), b)

# TagVFilter.tagsToFilters: a tag equal to a filter is listed once, as a group by
def echo_filters(body):
    st, b = req("/api/query", json.dumps(body))
    try:
        e = json.loads(b)[0]["query"]
        return sorted((f["type"], f["tagk"], f["filter"], f["group_by"]) for f in e["filters"]), b
    except (ValueError, KeyError, IndexError, TypeError):
        return None, b
sub = {"aggregator": "sum", "metric": "fx.m", "tags": {"host": "web01"},
       "filters": [{"type": "literal_or", "tagk": "host", "filter": "web01", "groupBy": False}]}
got, b = echo_filters({"start": t0, "end": T_END, "showQuery": True, "queries": [sub]})
report("tagsToFiltersDuplicate: tags {host: web01} + the same literal_or filter -> one, group by",
       "" if got == [("literal_or", "host", "web01", True)] else "filters %r" % (got,), b)
sub["filters"][0]["filter"] = "web02|web01"
sub["tags"] = {"host": "web01|web02"}
got, b = echo_filters({"start": t0, "end": T_END, "showQuery": True, "queries": [sub]})
report("tagsToFiltersDuplicate: literal lists compared as sets",
       "" if got is not None and len(got) == 1 and got[0][3] is True else "filters %r" % (got,), b)
sub["filters"][0]["filter"] = "web01|web02"
sub["tags"] = {"host": "web01"}
got, b = echo_filters({"start": t0, "end": T_END, "showQuery": True, "queries": [sub]})
report("tagsToFiltersSameTagDiffValues: another value keeps both",
       "" if got == [("literal_or", "host", "web01", True),
                     ("literal_or", "host", "web01|web02", False)]
       else "filters %r" % (got,), b)
sys.exit(1 if fails else 0)
PY
[ $? -eq 0 ] || IT_FAILS=$((IT_FAILS + 1))
tsd_stop

# ---- part 2, on three store layouts (TestTsdbQueryHistogramQueriesSalted) ---------------------
# TestHistogramDataPointRpc's cases a client can observe (HTTP and telnet writes, bucket and
# binary forms, the refusals, the counters in /api/stats; the mocked HBase errors are not
# observable), runWithOnlyAnnotation, a two-series sum with the class's grouping cases (none,
# group by, two tsuids, downsampling), and the answer options a histogram
# query shares with datapoint queries (show_query, show_stats, globalAnnotations), against the
# default, an unsalted and OpenTSDB's salted test layout (audit_lib.each_config), whose answers
# must be byte-identical. The codec id is 42 and auto-create is off, as in the Java test.
DIRS=("$(it_tmpdir)" "$(it_tmpdir)" "$(it_tmpdir)")
PYTHONPATH="$IT_ROOT/tests/integration" python3 - "$CTSDB" "${DIRS[@]}" <<'PY'
import base64, json, struct, sys, urllib.parse
from audit_lib import each_config, req, report, finish, stat, telnet

CTSDB, DIRS = sys.argv[1], sys.argv[2:5]
T0 = 1356998400


def varint(v):
    out = b""
    while v >> 7:
        out += bytes([(v & 0x7F) | 0x80])
        v >>= 7
    return out + bytes([v])


def simple_histogram(buckets, underflow=0, overflow=0):
    """SimpleHistogram's bytes without the codec id (histogram(false)): bucket count, then per
    bucket its bounds as floats and its count, then underflow and overflow"""
    b = struct.pack(">H", len(buckets))
    for lo, hi, c in buckets:
        b += struct.pack(">ff", lo, hi) + varint(c)
    return b + varint(underflow) + varint(overflow)


# the Java test's histogram: [0,1) 42, [1,5) 24, overflow 1
TEST_HISTO = base64.b64encode(simple_histogram([(0, 1, 42), (1, 5, 24)], 0, 1)).decode()


def post(path, body):
    st, b = req(path, "POST", json.dumps(body))
    try:
        return st, json.loads(b) if b else None, b
    except ValueError:
        return st, None, b


def hp(metric, ts=T0, tags=None, **kw):
    d = {"metric": metric, "timestamp": ts, "tags": {"host": "web01"} if tags is None else tags}
    d.update(kw if kw else {"id": 42, "value": TEST_HISTO})
    return d


def buckets(name, metric, want, tags="{host=web01}"):
    """want: {(lo, hi): {ts: count}} read back with show-histogram-buckets"""
    st, b = req("/api/query?start=%d&end=%d&m=%s" % (T0, T0 + 7200, urllib.parse.quote(
        "sum:show-histogram-buckets:" + metric + tags)))
    try:
        d = json.loads(b)
        got = {x["metric"]: {int(k): v for k, v in x["dps"].items()} for x in d}
    except (ValueError, TypeError, KeyError):
        got = None
    exp = {"%s_%.1f_%.1f" % (metric, lo, hi): v for (lo, hi), v in want.items()}
    report(name, "" if st == 200 and got == exp else "status %d, got %r, want %r" % (st, got, exp), b)


def counted(name, before, key, n):
    metric = "tsd.rpc.received" if key in ("http_put", "put") else "tsd.rpc.errors"
    now = stat(metric, type=key)
    report(name, "" if before is not None and now == before + n else
           "%s type=%s went %r -> %r, want +%d" % (metric, key, before, now, n))


NAMES = ["h.single", "h.bin", "h.two", "h.good", "h.tel", "h.telbin", "h.ann", "h.sum"]
TESTB = {(0, 1): {T0: 42}, (1, 5): {T0: 24}}


def checks(L):
    st, b = req("/api/uid/assign", "POST", json.dumps({"metric": NAMES, "tagk": ["host"],
                                                       "tagv": ["web01", "web02"]}))
    report(L + "the names are assigned", "" if st == 200 else "status %d" % st, b)
    # ---- TestHistogramDataPointRpc, HTTP ---------------------------------------------------
    put0 = stat("tsd.rpc.received", type="http_put")
    st, d, b = post("/api/histogram", {"metric": "h.single", "timestamp": T0, "overflow": 1,
                                       "buckets": {"0,1": 42, "1,5": 24}, "tags": {"host": "web01"}})
    report(L + "executeHttpSingle: 204", "" if st == 204 and b == "" else "status %d" % st, b)
    counted(L + "executeHttpSingle: one HTTP put request counted", put0, "http_put", 1)
    buckets(L + "executeHttpSingle: the buckets read back", "h.single", TESTB)
    st, d, b = post("/api/histogram", hp("h.bin"))
    report(L + "executeHttpSingleBinary: 204 (id 42 + base64 SimpleHistogram bytes)", "" if st == 204 else "status %d" % st, b)
    buckets(L + "executeHttpSingleBinary: the same histogram read back", "h.bin", TESTB)
    st, d, b = post("/api/histogram", [hp("h.two"), hp("h.two", T0 + 60)])
    report(L + "executeHttpTwoBinary: 204", "" if st == 204 else "status %d" % st, b)
    buckets(L + "executeHttpTwoBinary: both read back", "h.two",
            {(0, 1): {T0: 42, T0 + 60: 42}, (1, 5): {T0: 24, T0 + 60: 24}})
    ia0, put0 = stat("tsd.rpc.errors", type="illegal_arguments"), stat("tsd.rpc.received", type="http_put")
    st, d, b = post("/api/histogram", [hp("h.good"), hp("h.good", T0 + 60, id=42, value=TEST_HISTO[:4])])
    report(L + "executeHttpTwoOneGoodOneBadBinary: 400", "" if st == 400 else "status %d" % st, b)
    counted(L + "executeHttpTwoOneGoodOneBadBinary: one illegal argument", ia0, "illegal_arguments", 1)
    counted(L + "executeHttpTwoOneGoodOneBadBinary: one HTTP put request", put0, "http_put", 1)
    buckets(L + "executeHttpTwoOneGoodOneBadBinary: the good one stored, not the bad", "h.good", TESTB)
    um0 = stat("tsd.rpc.errors", type="unknown_metrics")
    for case, dp in (("httpNSUNMetric", hp("h.nosuch")), ("httpNSUNTagk", hp("h.single", tags={"nosuchk": "web01"})),
                     ("httpNSUNTagv", hp("h.single", tags={"host": "nosuchv"}))):
        st, d, b = post("/api/histogram?details", dp)
        errs = [e.get("error") for e in d.get("errors", [])] if isinstance(d, dict) else None
        report(L + case + ": 400, Unknown metric", "" if st == 400 and errs == ["Unknown metric"] else
               "status %d errors %r" % (st, errs), b)
    counted(L + "httpNSUNMetric/Tagk/Tagv: unknown_metrics counted 3 times", um0, "unknown_metrics", 3)
    # ---- TestHistogramDataPointRpc, telnet (success is silent; "version" ends the session) --
    rp0 = stat("tsd.rpc.received", type="put")
    out = telnet(["histogram h.tel %d u=0:o=1:0,1=42:1,5=24 host=web01" % T0,
                  "histogram h.telbin %d 42 %s host=web01" % (T0, TEST_HISTO), "version"])
    report(L + "executeTelnet / executeTelnetBinary: no reply but version's",
           "" if len(out) >= 1 and "net.opentsdb" in out[0] else "answer %r" % out[:3])
    counted(L + "executeTelnet / executeTelnetBinary: counted as telnet puts", rp0, "put", 2)
    buckets(L + "executeTelnet: the text form's histogram read back", "h.tel", TESTB)
    buckets(L + "executeTelnetBinary: the binary form's read back", "h.telbin", TESTB)
    out = telnet(["histogram h.tel %d 42 %s host=web01" % (T0 + 60, TEST_HISTO[:4]),
                  "histogram h.tel %d 42 %s host=web01" % (T0 + 120, TEST_HISTO[:8]),
                  "histogram h.tel %d 42" % (T0 + 180),
                  "histogram h.tel %d 42 %s nosuchk=web01" % (T0 + 240, TEST_HISTO),
                  "histogram h.tel %d 42 %s host=nosuchv" % (T0 + 300, TEST_HISTO), "version"])
    want = ["histogram: HBase error: Unable to decode the histogram value",
            "histogram: HBase error: Unable to decode the histogram value",
            "histogram: illegal argument: not enough arguments (need least 5, got 3)",
            "histogram: HBase error: No such name for 'tagk': 'nosuchk'",
            "histogram: HBase error: No such name for 'tagv': 'nosuchv'"]
    why = "" if len(out) >= 6 and "net.opentsdb" in out[5] else "answer %r" % out
    for got, w in zip(out, want):
        if not got.startswith(w):
            why = "%r does not start with %r" % (got, w)
    report(L + "executeTelnetBinaryValueTooShort / CorruptValue / executeShortArray / executeNSUNTagk / "
           "executeNSUNTagV: one error line each, in order", why)
    buckets(L + "the refused telnet lines stored nothing", "h.tel", TESTB)
    # ---- TestTsdbQueryHistogramQueries: runWithOnlyAnnotation, a sum of two series ---------
    # h.ann: one bucket [k, k+1) a minute in hours 0 and 2; hour 1 holds only an annotation
    pts = [hp("h.ann", T0 + 60 * k, buckets={"%d,%d" % (k, k + 1): 1}) for k in range(180) if not 60 <= k < 120]
    st, d, b = post("/api/histogram", pts)
    report(L + "runWithOnlyAnnotation: 120 histograms written", "" if st == 204 else "status %d" % st, b)
    st, b = req("/api/query?start=%d&end=%d&show_tsuids&m=sum:percentiles%%5B50%%5D:h.ann" % (T0, T0 + 3 * 3600))
    tsuid = json.loads(b)[0]["tsuids"][0] if st == 200 else ""
    st, d, b = post("/api/annotation", {"tsuid": tsuid, "startTime": T0 + 5400, "description": "Hello World!"})
    st, d, b = post("/api/query", {"start": T0, "end": T0 + 3 * 3600, "queries": [
        {"metric": "h.ann", "aggregator": "sum", "percentiles": [50]}]})
    why = "status %d" % st
    if st == 200 and d:
        s = d[0]
        dps = {int(k): v for k, v in s["dps"].items()}
        want = {T0 + 60 * k: k + 0.5 for k in range(180) if not 60 <= k < 120}
        why = "" if dps == want and [a["description"] for a in s.get("annotations", [])] == ["Hello World!"] \
            else "annotations %r, %d points" % (s.get("annotations"), len(dps))
    report(L + "runWithOnlyAnnotation: the annotation of the hour without histograms, the other hours' 120 points", why, b)
    st, d, b = post("/api/histogram", [hp("h.sum", T0 + 60 * k, tags={"host": h}, buckets={"0,10": c})
                                       for k in range(10) for h, c in (("web01", k + 1), ("web02", 10 - k))])
    report(L + "runSingleTsMsTwoAggSum: two series written", "" if st == 204 else "status %d" % st, b)
    buckets(L + "runSingleTsMsTwoAggSum: summed across the series (every minute 11)", "h.sum",
            {(0, 10): {T0 + 60 * k: 11 for k in range(10)}}, tags="")
    # the other grouping cases of the class on h.sum, so that the layouts' answers are compared
    def dps_of(args):
        st, b = req("/api/query?start=%d&end=%d&show_tsuids&%s" % (T0, T0 + 3600, args))
        try:
            return st, [(x["metric"], x["tags"], x["aggregateTags"], {int(k): v for k, v in x["dps"].items()},
                         x.get("tsuids")) for x in json.loads(b)], b
        except (ValueError, KeyError, TypeError):
            return st, None, b
    mid = lambda c: {T0 + 60 * k: 5.0 for k in range(10)}   # one bucket [0, 10): any percentile is 5
    st, got, b = dps_of("m=none:percentiles%5B50%5D:h.sum")
    ok = st == 200 and got and [(g[0], g[1], g[2], g[3]) for g in got] == [
        ("h.sum_pct_50.0", {"host": "web01"}, [], mid(0)), ("h.sum_pct_50.0", {"host": "web02"}, [], mid(0))]
    report(L + "runSingleTsMsAggNone: one series per host", "" if ok else "status %d %r" % (st, got), b)
    st, got2, b = dps_of("m=sum:percentiles%5B50%5D:h.sum%7Bhost=*%7D")
    ok = st == 200 and got2 and [(g[0], g[1], g[2], g[3]) for g in got2] == [(g[0], g[1], g[2], g[3]) for g in got or []]
    report(L + "runSingleTsMsAggSumTwoGroups: host=* groups as none splits", "" if ok else "status %d %r" % (st, got2), b)
    tsuids = [g[4][0] for g in got or [] if g[4]]
    st, got3, b = dps_of("tsuid=sum:show-histogram-buckets:" + ",".join(tsuids))
    ok = st == 200 and got3 and [(g[0], g[1], g[2], g[3]) for g in got3] == [
        ("h.sum_0.0_10.0", {}, ["host"], {T0 + 60 * k: 11 for k in range(10)})]
    report(L + "runTSUIDsAggSum: the two tsuids summed", "" if ok else "status %d %r" % (st, got3), b)
    st, got4, b = dps_of("m=sum:5m-sum:show-histogram-buckets:h.sum")
    ok = st == 200 and got4 and [g[3] for g in got4] == [{T0: 55, T0 + 300: 55}]
    report(L + "downsample 5m-sum: five minutes of both series per point", "" if ok else "status %d %r" % (st, got4), b)
    # ---- show_query, show_stats, globalAnnotations on a histogram answer ------------------
    st, d, b = post("/api/annotation", {"startTime": T0 + 30, "description": "global"})
    st, d, b = post("/api/query", {"start": T0, "end": T0 + 3600, "showQuery": True, "showStats": True,
                                   "globalAnnotations": True, "queries": [
        {"metric": "h.sum", "aggregator": "sum", "percentiles": [99, 50], "showHistogramBuckets": True}]})
    why = []
    if st != 200 or not isinstance(d, list) or len(d) != 3:
        why.append("status %d, %s series" % (st, len(d) if isinstance(d, list) else "no"))
    else:
        if [s["metric"] for s in d] != ["h.sum_pct_50.0", "h.sum_pct_99.0", "h.sum_0.0_10.0"]:
            why.append("metrics %r" % [s["metric"] for s in d])
        for s in d:
            q = s.get("query", {})
            if (q.get("metric"), q.get("aggregator"), q.get("index"), q.get("percentiles"),
                    q.get("showHistogramBuckets")) != ("h.sum", "sum", 0, [50.0, 99.0], True):
                why.append("%s: query echo %r" % (s["metric"], q))
            if s.get("stats") != {"emittedDPs": 10, "queryIndex": 0}:
                why.append("%s: stats %r" % (s["metric"], s.get("stats")))
            if [a.get("description") for a in s.get("globalAnnotations", [])] != ["global"]:
                why.append("%s: globalAnnotations %r" % (s["metric"], s.get("globalAnnotations")))
            if list(s)[:4] != ["metric", "tags", "aggregateTags", "query"] or list(s)[-2:] != ["dps", "stats"]:
                why.append("%s: key order %r" % (s["metric"], list(s)))
    report(L + "show_query / show_stats / globalAnnotations: each percentile and bucket series carries the "
           "query echo (with its percentiles), its stats and the global annotations, as datapoint series do",
           "; ".join(why), b)
    st, b = req("/api/query?start=%d&end=%d&show_query&m=sum:percentiles%%5B50%%5D:h.sum&no_annotations"
                "&global_annotations" % (T0, T0 + 3600))
    report(L + "no_annotations leaves the global annotations out (QueryRpc fetches them only without it)",
           "" if st == 200 and "globalAnnotations" not in b and '"query":{' in b else "status %d" % st, b)


each_config(CTSDB, DIRS, ['--tsd.core.histograms.config={"net.opentsdb.core.SimpleHistogramDecoder": 42}',
                          "--tsd.core.auto_create_metrics=false", "--tsd.core.auto_create_tagks=false",
                          "--tsd.core.auto_create_tagvs=false"], checks)
finish()
PY
[ $? -eq 0 ] || IT_FAILS=$((IT_FAILS + 1))
tsd_logs_check
it_done
