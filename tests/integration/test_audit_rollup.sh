#!/usr/bin/env bash
# test_audit_rollup.sh - rollups as OpenTSDB 2.4 writes and reads them: the cases of its
# TestRollupRpc (POST /api/rollup and the telnet `rollup` command: every status, error message
# and counter a client can observe)
# and the cases of TestTsdbQueryRollup / TestTsdbQueryRollupSalted (queries answered from the
# rollup tables: sum, max, min, avg = sum / count, zimsum / mimmax / mimmin read as sum / max /
# min, a downsample that is a multiple of the rollup interval, rate, a group by, the missing
# sum/count cases, ROLLUP_NOFALLBACK finding nothing, ROLLUP_RAW and the fallback to raw rows),
# each check naming the Java test. The *Salted class is the same checks against three store
# layouts (audit_lib.each_config), whose answers must be byte-identical.
#
# OpenTSDB's tests roll up into a 10m table; ctsdb's rollup tables are fixed at 1h and 1d, so
# every Java "10m" case runs here at 1h with the same shape: the Java fixture's values step by
# the interval in seconds (600 there, 3600 here) over 2013-01-01 00:00 to 12:00 UTC (13 points),
# its 30m downsample of 10m rollups is a 3h downsample of 1h rollups. Where the Java test uses
# the storage mocks (HBase errors, "please throttle", the column bytes) there is nothing a client
# sees and no check here. ctsdb's answer differs deliberately in four places, each in
# docs/opentsdb-compat.md "/api/rollup and rollup reads": groupByAggregator (pre-aggregates) is
# refused, an interval or aggregator the tables do not hold is refused with a message that says
# so (OpenTSDB: "Unexpected exception" / "No ID found mapping to aggregator"), a second write of
# the same rollup cell replaces the first (runDupes), and the default rollupUsage is
# ROLLUP_FALLBACK (OpenTSDB: ROLLUP_NOFALLBACK), so the checks name their usage.
source "$(dirname "$0")/lib.sh"

DIRS=("$(it_tmpdir)" "$(it_tmpdir)" "$(it_tmpdir)")
PYTHONPATH="$IT_ROOT/tests/integration" python3 - "$CTSDB" "${DIRS[@]}" <<'PY'
import json, sys, time, urllib.parse
from audit_lib import each_config, req, report, finish, stat, telnet

CTSDB, DIRS = sys.argv[1], sys.argv[2:5]
T0, T_END = 1356998400, 1357041600   # setQuery's range: 2013-01-01 00:00 to 12:00 UTC
H = 3600
HOURS = [T0 + H * k for k in range(13)]


def rollup(points, args=""):
    """POST /api/rollup; (status, parsed body or None, body text)"""
    st, b = req("/api/rollup" + args, "POST", json.dumps(points))
    try:
        return st, json.loads(b) if b else None, b
    except ValueError:
        return st, None, b


def rp(metric, ts, value, agg, tags=None, interval="1h"):
    """one /api/rollup point (the Java tests' addAggregatePoint)"""
    p = {"metric": metric, "timestamp": ts, "value": value, "tags": {"host": "web01"} if tags is None else tags}
    if interval is not None:
        p["interval"] = interval
    if agg is not None:
        p["aggregator"] = agg
    return p


def store(metric, agg, values, hosts=("web01",), step=H, start=T0):
    """writes values[k] at start + k * step for each host (one request); True when it answered 204"""
    st, _, b = rollup([rp(metric, start + step * k, v, agg, {"host": h})
                       for h in hosts for k, v in enumerate(values)])
    return st == 204


def query(metric, ds, agg="sum", usage="ROLLUP_NOFALLBACK", tags=None, rate=False, end=T_END,
          start=T0):
    body = {"start": start, "end": end, "queries": [
        {"metric": metric, "aggregator": agg, "downsample": ds, "rate": rate,
         "tags": {"host": "web01"} if tags is None else tags}]}
    if usage:
        body["queries"][0]["rollupUsage"] = usage
    st, b = req("/api/query", "POST", json.dumps(body))
    try:
        return st, json.loads(b), b
    except ValueError:
        return st, None, b


def series(name, got, want, metric, tags=None, agg=None, doubles=True):
    """want: [(seconds, value)]; checks the one answer series, its tags and its value types"""
    st, d, b = got
    why = ""
    if st != 200 or not isinstance(d, list) or len(d) != 1:
        why = "status %d, %s answers" % (st, len(d) if isinstance(d, list) else "no")
    else:
        s = d[0]
        pts = sorted((int(k), v) for k, v in s["dps"].items())
        if s["metric"] != metric:
            why = "metric %r" % s["metric"]
        elif s["tags"] != (tags if tags is not None else {"host": "web01"}):
            why = "tags %r" % s["tags"]
        elif s["aggregateTags"] != (agg or []):
            why = "aggregateTags %r" % s["aggregateTags"]
        elif len(pts) != len(want):
            why = "%d points, want %d" % (len(pts), len(want))
        else:
            for (gt, gv), (wt, wv) in zip(pts, want):
                if gt != wt or abs(gv - wv) > 1e-4:
                    why = "at %d: %r, want %r at %d" % (gt, gv, wv, wt)
                    break
                if doubles and not isinstance(gv, float):
                    why = "at %d: %r is not a double (isInteger false)" % (gt, gv)
                    break
        if not why and "annotations" in s:
            why = "annotations %r" % s["annotations"]
    report(name, why, b)


def empty(name, got):
    st, d, b = got
    report(name, "" if st == 200 and d == [] else "status %d" % st, b)


def detail(name, got, status, error, failed=1, success=0):
    """a ?details answer: status, the one error's message, failed and success"""
    st, d, b = got
    why = []
    if st != status:
        why.append("status %d" % st)
    if not isinstance(d, dict):
        why.append("no details object")
    else:
        errs = [e.get("error") for e in d.get("errors", [])]
        if error is not None and errs != [error]:
            why.append("errors %r" % errs)
        if d.get("failed") != failed or d.get("success") != success:
            why.append("failed %r success %r" % (d.get("failed"), d.get("success")))
    report(name, "; ".join(why), b)


def counted(name, before, key, n):
    """an /api/stats counter (tsd.rpc.errors type=KEY, or tsd.rpc.received type=http_put) grew by n"""
    metric = "tsd.rpc.received" if key == "http_put" else "tsd.rpc.errors"
    now = stat(metric, type=key)
    report(name, "" if before is not None and now == before + n else
           "%s type=%s went %r -> %r, want +%d" % (metric, key, before, now, n))


METRICS = ["sys.cpu.user", "sys.cpu.nice", "r.long", "r.long2", "r.max", "r.min", "r.other", "r.float",
           "r.avg", "r.nocount", "r.nosum", "r.mc", "r.ms", "r.mz", "r.os", "r.be", "r.dup", "r.raw", "r.inms"]


def checks(L):
    # names are assigned up front: the TSDs do not create them on write (the Java tests' mocked
    # UIDs; the NSUN_* names are the ones never assigned)
    st, b = req("/api/uid/assign", "POST", json.dumps({"metric": METRICS, "tagk": ["host"],
                                                       "tagv": ["web01", "web02"]}))
    report(L + "the names are assigned", "" if st == 200 else "status %d" % st, b)
    # ---- TestRollupRpc over HTTP -----------------------------------------------------------
    put0 = stat("tsd.rpc.received", type="http_put")
    st, d, b = rollup(rp("sys.cpu.user", T0, 42, "sum"))
    report(L + "httpAddSingleRollupPoint: 204, no body", "" if st == 204 and b == "" else "status %d" % st, b)
    counted(L + "httpAddSingleRollupPoint: counted as an HTTP put request (rpc.received type=put's counter)",
            put0, "http_put", 1)
    series(L + "httpAddSingleRollupPoint: the 1h sum reads back (a double: rollups are read as doubles)",
           query("sys.cpu.user", "1h-sum"), [(T0, 42)], "sys.cpu.user")
    st, d, b = rollup([rp("sys.cpu.user", T0 + H, 42, "sum"), rp("sys.cpu.nice", T0 + H, 24, "sum")])
    report(L + "httpAddTwoRollupPoints: 204", "" if st == 204 else "status %d" % st, b)
    series(L + "httpAddTwoRollupPoints: the second metric's point",
           query("sys.cpu.nice", "1h-sum"), [(T0 + H, 24)], "sys.cpu.nice")
    # NSUN_METRIC: tsd.core.auto_create_metrics is off in these TSDs (as in BaseTestPutRpc)
    um0, put0 = stat("tsd.rpc.errors", type="unknown_metrics"), stat("tsd.rpc.received", type="http_put")
    st, d, b = rollup([rp("sys.cpu.user", T0 + 2 * H, 42, "sum"), rp("sys.cpu.nosuch", T0 + 2 * H, 24, "sum")])
    report(L + "httpAddTwoRollupPointsOneGoodOneBad: 400 One or more data points had errors",
           "" if st == 400 and d and d["error"]["message"] == "One or more data points had errors" else "status %d" % st, b)
    counted(L + "httpAddTwoRollupPointsOneGoodOneBad: unknown_metrics counted once", um0, "unknown_metrics", 1)
    counted(L + "httpAddTwoRollupPointsOneGoodOneBad: one HTTP put request", put0, "http_put", 1)
    series(L + "httpAddTwoRollupPointsOneGoodOneBad: the good point is stored",
           query("sys.cpu.user", "1h-sum"), [(T0, 42), (T0 + H, 42), (T0 + 2 * H, 42)], "sys.cpu.user")

    ia0 = stat("tsd.rpc.errors", type="illegal_arguments")
    detail(L + "httpMissingInterval: Missing interval",
           rollup(rp("sys.cpu.user", 1365465600, 42, "sum", interval=None), "?details"), 400, "Missing interval")
    detail(L + "httpEmptyInterval: Missing interval",
           rollup(rp("sys.cpu.user", 1365465600, 42, "sum", interval=""), "?details"), 400, "Missing interval")
    detail(L + "httpMissingAggregator: Missing aggregator",
           rollup(rp("sys.cpu.user", 1365465600, 42, None), "?details"), 400, "Missing aggregator")
    detail(L + "httpEmptyAggregator: Missing aggregator",
           rollup(rp("sys.cpu.user", 1365465600, 42, ""), "?details"), 400, "Missing aggregator")
    counted(L + "the four missing interval/aggregator points: illegal_arguments counted 4 times",
            ia0, "illegal_arguments", 4)
    ia0 = stat("tsd.rpc.errors", type="illegal_arguments")
    detail(L + "httpInvalidAggregator: 400 (ctsdb names the aggregators rollups hold)",
           rollup(rp("sys.cpu.user", T0 + 5 * H, 42, "nosuchagg"), "?details"), 400,
           "No rollup aggregator 'nosuchagg': rollups hold sum, count, min and max")
    counted(L + "httpInvalidAggregator: an illegal argument", ia0, "illegal_arguments", 1)
    empty(L + "httpInvalidAggregator: nothing stored", query("sys.cpu.user", "1h-sum", start=T0 + 5 * H))
    st, d, b = rollup(rp("sys.cpu.user", 1365465600, 42, "sum", interval="13m"))
    report(L + "httpUnknownInterval: 400", "" if st == 400 else "status %d" % st, b)
    detail(L + "httpUnknownInterval with details (ctsdb names the tables' intervals)",
           rollup(rp("sys.cpu.user", 1365465600, 42, "sum", interval="13m"), "?details"), 400,
           "No rollup interval '13m': the rollup tables are 1h and 1d")
    um0 = stat("tsd.rpc.errors", type="unknown_metrics")
    detail(L + "httpNSUNMetric: 400 Unknown metric",
           rollup(rp("sys.cpu.nosuch", 1365465600, 42, "sum"), "?details"), 400, "Unknown metric")
    detail(L + "httpNSUNTagk: 400 Unknown metric (PutDataPointRpc's wording for any unassigned name)",
           rollup(rp("sys.cpu.user", 1365465600, 42, "sum", {"nosuchk": "web01"}), "?details"), 400, "Unknown metric")
    detail(L + "httpNSUNTagv: 400 Unknown metric",
           rollup(rp("sys.cpu.user", 1365465600, 42, "sum", {"host": "nosuchv"}), "?details"), 400, "Unknown metric")
    counted(L + "httpNSUNMetric/Tagk/Tagv: unknown_metrics counted 3 times", um0, "unknown_metrics", 3)
    iv0 = stat("tsd.rpc.errors", type="invalid_values")
    detail(L + "executeBadValue (over HTTP): Unable to parse value to a number",
           rollup(rp("sys.cpu.user", 1365465600, "notanum", "sum"), "?details"), 400,
           "Unable to parse value to a number")
    counted(L + "executeBadValue: an invalid value", iv0, "invalid_values", 1)
    detail(L + "executeMissingTags (over HTTP): Missing tags",
           rollup(rp("sys.cpu.user", 1365465600, 42, "sum", {}), "?details"), 400, "Missing tags")
    # httpAddSingleGroupByPoint / httpAddSingleRollupAndGroupByPoint: pre-aggregates (deliberate)
    detail(L + "httpAddSingleGroupByPoint: ctsdb has no pre-aggregated tables (refused, 400)",
           rollup({"metric": "sys.cpu.user", "timestamp": T0, "value": 42, "groupByAggregator": "sum",
                   "tags": {"host": "web01"}}, "?details"), 400,
           "Pre-aggregated rollups (groupByAggregator) are not supported")
    st, d, b = rollup([], "")
    report(L + "an empty array: 400 No datapoints found in content",
           "" if st == 400 and d and d["error"]["message"] == "No datapoints found in content" else "status %d" % st, b)
    st, d, b = rollup(rp("sys.cpu.user", T0, 42, "sum"), "?summary")
    report(L + "summary: 200 {failed 0, success 1}", "" if st == 200 and d == {"failed": 0, "success": 1} else "status %d" % st, b)
    st, b = req("/api/rollup")
    report(L + "GET /api/rollup: 405 Method not allowed", "" if st == 405 else "status %d" % st, b)
    # the telnet "rollup" command (RollupDataPointRpc.execute*): success writes nothing back (the
    # later "version" line's reply is the first), each refusal one line
    out = telnet(["rollup 1h-sum sys.cpu.nice %d 42 host=web01" % (T0 + 5 * H), "version"])
    report(L + "execute (telnet): nothing written back, the value stored",
           "" if out and out[0].startswith("net.opentsdb.tools") else "answer %r" % out[:2])
    series(L + "execute (telnet): the 1h sum reads back",
           query("sys.cpu.nice", "1h-sum"), [(T0 + H, 24), (T0 + 5 * H, 42)], "sys.cpu.nice")
    iv0, ia0 = stat("tsd.rpc.errors", type="invalid_values"), stat("tsd.rpc.errors", type="illegal_arguments")
    out = telnet(["rollup 10-msum sys.cpu.nice 1365465600 notanum host=web01",
                  "rollup 1h-sum  1365465600 42 host=web01", "rollup sum sys.cpu.nice 1356998400 42 host=web01",
                  "rollup 1h-sum:sum sys.cpu.nice 1356998400 42 host=web01", "version"])
    want = ["rollup: invalid value: Invalid character 'n' in notanum",
            "rollup: illegal argument: empty metric name"] + \
        ["rollup: illegal argument: Pre-aggregated rollups (groupByAggregator) are not supported"] * 2
    report(L + "executeBadValue, executeMissingMetric (telnet) one line each; executeAggOnly and "
           "executeRollupWithAgg refused (ctsdb has no pre-aggregated tables)",
           "" if out[:4] == want else "answer %r" % out[:5])
    counted(L + "executeBadValue (telnet): invalid_values counted", iv0, "invalid_values", 1)
    counted(L + "executeMissingMetric and the two group-by forms (telnet): illegal_arguments counted",
            ia0, "illegal_arguments", 3)

    # ---- TestTsdbQueryRollup -----------------------------------------------------------------
    up = [H * (k + 1) for k in range(13)]            # web01: 3600, 7200 .. 46800
    down = [H * (12 - k) for k in range(13)]         # web02: 43200 .. 0 (storeLongRollup's second loop)
    ok = all([store("r.long", "sum", up), store("r.long", "sum", down, ("web02",)),
              store("r.long2", "sum", up), store("r.long2", "sum", down, ("web02",)),
              store("r.max", "max", up), store("r.max", "max", down, ("web02",)),
              store("r.min", "min", up), store("r.min", "min", down, ("web02",)),
              store("r.other", "sum", up), store("r.other", "max", [v + 1 for v in up]),
              store("r.other", "min", [v - 1 for v in up]),
              store("r.float", "sum", [v + 0.5 for v in up]),
              store("r.avg", "sum", up), store("r.avg", "count", [2] * 13),
              store("r.nocount", "sum", up), store("r.nosum", "count", [1] * 13)])
    report(L + "the rollup fixture is written (storeLongRollup, storeFloatRollup, storeCount)", "" if ok else "a write failed")
    W = lambda vals, hours=HOURS: list(zip(hours, vals))
    series(L + "run10mSumLongSingleTS (1h): 13 sums, 3600 apart, doubles",
           query("r.long", "1h-sum"), W(up), "r.long")
    series(L + "run30mSumLongSingleTS (3h of 1h rollups): each three hours summed",
           query("r.long", "3h-sum", end=T_END - 1), [(T0 + 3 * H * b, 3600 * (9 * b + 6)) for b in range(4)], "r.long")
    series(L + "run10mZimSumLongSingleTS: zimsum reads the sum rollups",
           query("r.long", "1h-zimsum", agg="zimsum"), W(up), "r.long")
    empty(L + "run10mMaxLongSingleTSNotFound: max of sum-only rollups -> []",
          query("r.long", "1h-max", agg="max"))
    series(L + "run10mSumLongSingleTSRate: 1 a second from the second hour",
           query("r.long", "1h-sum", rate=True), [(t, 1.0) for t in HOURS[1:]], "r.long")
    series(L + "run10mSumFloatSingleTS: float sums read back",
           query("r.float", "1h-sum"), W([v + 0.5 for v in up]), "r.float")
    series(L + "run10mSumFloatSingleTSRate", query("r.float", "1h-sum", rate=True),
           [(t, 1.0) for t in HOURS[1:]], "r.float")
    series(L + "run10mSumLongDoubleTSFilter: the other metric is not read",
           query("r.long2", "1h-sum"), W(up), "r.long2")
    series(L + "run10mSumLongDoubleTS: both hosts summed (46800 each hour), aggregateTags host",
           query("r.long", "1h-sum", tags={}), W([46800] * 13), "r.long", tags={}, agg=["host"])
    series(L + "run10mSumLongDoubleTSFilterOtherAggs: the sum column only",
           query("r.other", "1h-sum"), W(up), "r.other")
    series(L + "run10mMaxLongSingleTS", query("r.max", "1h-max", agg="max"), W(up), "r.max")
    series(L + "run10mMinLongSingleTS", query("r.min", "1h-min", agg="min"), W(up), "r.min")
    series(L + "mimmax / mimmin read the max / min rollups (RollupQuery's mapping)",
           query("r.other", "1h-mimmax", agg="mimmax"), W([v + 1 for v in up]), "r.other")
    series(L + "mimmin", query("r.other", "1h-mimmin", agg="mimmin"), W([v - 1 for v in up]), "r.other")
    series(L + "run10mAvgLongSingleTS: avg = sum / count (count 2)",
           query("r.avg", "1h-avg", agg="avg"), W([v / 2 for v in up]), "r.avg")
    empty(L + "run10mAvgLongSingleTSMissingCount: sums only -> no avg", query("r.nocount", "1h-avg", agg="avg"))
    empty(L + "run10mAvgLongSingleTSMissingSum: counts only -> no avg", query("r.nosum", "1h-avg", agg="avg"))
    ok = rollup([rp("r.mc", T0, 20, "sum"), rp("r.mc", T0, 2, "count"), rp("r.mc", T0 + H, 40, "sum"),
                 rp("r.mc", T0 + 2 * H, 60, "sum"), rp("r.mc", T0 + 2 * H, 3, "count"),
                 rp("r.mc", T0 + 3 * H, 80, "sum"), rp("r.mc", T0 + 3 * H, 4, "count"),
                 rp("r.ms", T0, 20, "sum"), rp("r.ms", T0, 2, "count"), rp("r.ms", T0 + H, 5, "count"),
                 rp("r.ms", T0 + 2 * H, 60, "sum"), rp("r.ms", T0 + 2 * H, 3, "count"),
                 rp("r.ms", T0 + 3 * H, 80, "sum"), rp("r.ms", T0 + 3 * H, 4, "count"),
                 rp("r.mz", T0, 20, "sum"), rp("r.mz", T0 + H, 5, "count"),
                 rp("r.mz", T0 + 2 * H, 60, "sum"), rp("r.mz", T0 + 3 * H, 4, "count")])[0] == 204
    D = 86400
    ok = ok and rollup([rp("r.os", T0, 20, "sum"), rp("r.os", T0, 2, "count"), rp("r.os", T0 + H, 40, "sum"),
                        rp("r.os", T0 + H, 5, "count"), rp("r.os", T0 + D, 60, "sum"),
                        rp("r.os", T0 + D + H, 4, "count"), rp("r.os", T0 + 2 * D, 90, "sum"),
                        rp("r.os", T0 + 2 * D, 3, "count"), rp("r.os", T0 + 2 * D + H, 100, "sum"),
                        rp("r.os", T0 + 2 * D + H, 5, "count"),
                        rp("r.be", T0, 20, "sum"), rp("r.be", T0 + H, 5, "count"),
                        rp("r.be", T0 + D, 60, "sum"), rp("r.be", T0 + D, 3, "count"),
                        rp("r.be", T0 + D + H, 80, "sum"), rp("r.be", T0 + D + H, 4, "count"),
                        rp("r.be", T0 + 2 * D, 3, "count"), rp("r.be", T0 + 2 * D + H, 100, "sum")])[0] == 204
    report(L + "the storePoint fixtures are written", "" if ok else "a write failed")
    series(L + "run10mAvgLongSingleTSMissingACount: the hour without a count has no avg",
           query("r.mc", "1h-avg", agg="avg"), [(T0, 10), (T0 + 2 * H, 20), (T0 + 3 * H, 20)], "r.mc")
    series(L + "run10mAvgLongSingleTSMissingASum: the hour without a sum has no avg",
           query("r.ms", "1h-avg", agg="avg"), [(T0, 10), (T0 + 2 * H, 20), (T0 + 3 * H, 20)], "r.ms")
    empty(L + "run10mAvgLongSingleTSMissingToZero: sums and counts never in the same hour -> []",
          query("r.mz", "1h-avg", agg="avg"))
    series(L + "run10mAvgLongSingleTSMissingToZeroOneSpan: over three days, the day without a pair has no point",
           query("r.os", "1h-avg", agg="avg", end=1359590400),
           [(T0, 10), (T0 + H, 8), (T0 + 2 * D, 30), (T0 + 2 * D + H, 20)], "r.os")
    series(L + "run10mAvgLongSingleTSMissingToZeroBookends: only the middle day's pairs",
           query("r.be", "1h-avg", agg="avg", end=1359590400), [(T0 + D, 20), (T0 + D + H, 20)], "r.be")
    # runDupes: two writes of one cell (an integer, then a float); OpenTSDB keeps both and fails
    # the query unless tsd.storage.fix_duplicates; ctsdb's cell holds the last write
    ok = store("r.dup", "sum", [2147483647], start=1357026600) and (time.sleep(0.02) or True) and \
        store("r.dup", "sum", [42.5], start=1357026600)
    series(L + "runDupes: the later write of the cell is read (ctsdb: the newest cell wins, as in raw rows)",
           query("r.dup", "1h-sum") if ok else (0, None, "write failed"), [(1357023600, 42.5)], "r.dup")
    # the other order: the newer cell (an integer, qualifier flags 0x3) sorts before the older
    # float's (0x0B), so the write time decides, not the cell order
    # (a cell's write time is in milliseconds: the pause keeps the two writes in different ones,
    # else the tie goes to the cell order)
    ok = store("r.dup", "sum", [42.5], start=T0) and (time.sleep(0.02) or True) and \
        store("r.dup", "sum", [7], start=T0)
    series(L + "runDupes (the newer cell first in the row): the newer write is read",
           query("r.dup", "1h-sum", end=T0 + 1) if ok else (0, None, "write failed"), [(T0, 7)], "r.dup")
    # run10mSumLongSingleTSInMS: OpenTSDB refuses a millisecond timestamp; ctsdb snaps it
    st, d, b = rollup(rp("r.inms", T0 * 1000 + 1234, 5, "sum"))
    report(L + "run10mSumLongSingleTSInMS: ctsdb takes a millisecond timestamp (204)", "" if st == 204 else "status %d" % st, b)
    series(L + "run10mSumLongSingleTSInMS: snapped to its hour", query("r.inms", "1h-sum"), [(T0, 5)], "r.inms")
    # rollupUsage: RAW reads raw rows (none here), the default (ctsdb: ROLLUP_FALLBACK) the rollups
    empty(L + "ROLLUP_RAW: the raw table, where nothing was written -> []",
          query("r.long", "1h-sum", usage="ROLLUP_RAW"))
    empty(L + "the default usage (ctsdb: ROLLUP_FALLBACK) reads raw rows for the hours the TSD's job has not "
          "rolled up (all of them: the job is off), not rollups written there by /api/rollup -> []",
          query("r.long", "1h-sum", usage=None))
    # the fallback to raw rows: raw points in hours without rollups (r.raw has no rollups at all)
    st, b = req("/api/put", "POST", json.dumps([{"metric": "r.raw", "timestamp": T0 + 60 * k, "value": k,
                                                  "tags": {"host": "web01"}} for k in range(120)]))
    report(L + "raw points for the fallback are written", "" if st == 204 else "status %d" % st, b)
    empty(L + "ROLLUP_NOFALLBACK: raw points only -> []", query("r.raw", "1h-sum"))
    for usage in ("ROLLUP_FALLBACK", "ROLLUP_FALLBACK_RAW"):
        series(L + usage + ": no rollups -> the raw points, summed per hour",
               query("r.raw", "1h-sum", usage=usage), [(T0, sum(range(60))), (T0 + H, sum(range(60, 120)))],
               "r.raw", doubles=False)
    series(L + "ROLLUP_RAW: the same raw answer", query("r.raw", "1h-sum", usage="ROLLUP_RAW"),
           [(T0, sum(range(60))), (T0 + H, sum(range(60, 120)))], "r.raw", doubles=False)
    st, d, b = query("r.long", "1h-sum", usage="ROLLUP_NOSUCH")
    report(L + "an unknown rollupUsage: 400 (OpenTSDB logs it and uses the default; ctsdb refuses)",
           "" if st == 400 and "ROLLUP_NOSUCH" in b else "status %d" % st, b)


each_config(CTSDB, DIRS, ["--tsd.rollups.enable=true", "--tsd.rollups.ctsdb.compute=false",
                          "--tsd.core.auto_create_metrics=false", "--tsd.core.auto_create_tagks=false",
                          "--tsd.core.auto_create_tagvs=false"],
            checks)
finish()
PY
[ $? -eq 0 ] || IT_FAILS=$((IT_FAILS + 1))
tsd_logs_check
it_done
