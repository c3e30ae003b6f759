#!/usr/bin/env bash
# test_audit_last.sh - /api/query/last as OpenTSDB 2.4's QueryRpc answers it: the cases of its
# TestQueryRpcLastDataPoint carried over as HTTP requests to the real TSD (each check names the
# Java test). OpenTSDB's fixture sits at a fixed time under a mocked clock; here the points are
# written 10 minutes ago (one series two hours ago, for the back-scan misses), and the answers
# are checked the same way: timestamps in ms, values as strings, tsuid always, metric and tags
# with resolve only, "[]" for no result, 400 naming the unknown name.
# One deliberate difference (docs/opentsdb-compat.md): a back scan of a metric without tags
# (qsMetricBackscanMissingTags) is refused by OpenTSDB, which back-scans one exact TSUID; ctsdb
# back-scans every series of the metric that matches the tags given, so it answers them all.
source "$(dirname "$0")/lib.sh"

tsd_start
B="http://127.0.0.1:$TSD_PORT"
now=$(date +%s)
T=$((now - 600))
{
  echo "put sys.cpu.user $T 42 host=web01"
  echo "put sys.cpu.user $T 24 host=web02"
  echo "put sys.cpu.system $((now - 7200)) 7 host=web01"
  echo version
} | tsd_talk >/dev/null
# a metric without series, and a tag value without series (TSUID ...000003)
curl -s -m 20 "$B/api/uid/assign?metric=sys.cpu.idle&tagv=web09" >/dev/null

PYTHONPATH="$IT_ROOT/tests/integration" python3 - "$TSD_PORT" "$T" <<'PY'
import json, sys
from audit_lib import connect, req, report, finish
connect(sys.argv[1])
T = int(sys.argv[2])
W1, W2 = "000001000001000001", "000001000001000002"
def check(name, q, want, resolve=False, method="GET", body=None):
    """want: {tsuid: value} expected (exactly those series), or ("error", substrings...)."""
    st, b = req("/api/query/last" + q, method, body or None)
    why = ""
    if isinstance(want, tuple):
        if st != 400: why = "status %d" % st
        for n in want[1:]:
            if n not in b: why += " [%s] missing" % n
    else:
        try:
            d = json.loads(b)
            got = {p["tsuid"]: p["value"] for p in d}
            if st != 200 or got != want: why = "got %s %s" % (st, got)
            for p in d:
                if p["timestamp"] != T * 1000 and p["tsuid"] in (W1, W2): why += " timestamp %s" % p["timestamp"]
                if resolve != ("metric" in p and "tags" in p): why += " metric/tags %s" % ("missing" if resolve else "present")
            if b.strip() == "[]" and want: why += " empty"
        except ValueError:
            why = "not JSON: %s %s" % (st, b[:200])
    report(name, why.strip(), b)

check("qsMetricMeta", "?timeseries=sys.cpu.user{host=web01}", {W1: "42"})
check("qsMetricMetaScan", "?timeseries=sys.cpu.user", {W1: "42", W2: "24"})
check("qsMetricMetaScanResolve", "?timeseries=sys.cpu.user&resolve", {W1: "42", W2: "24"}, resolve=True)
check("qsMetricMetaScanNoResults", "?timeseries=sys.cpu.idle", {})
check("qsMetricMetaScanBackscanZero", "?timeseries=sys.cpu.user&back_scan=0", {W1: "42", W2: "24"})
check("qsMetricBackscan", "?timeseries=sys.cpu.user{host=web01}&back_scan=1", {W1: "42"})
check("qsMetricBackscanResolved", "?timeseries=sys.cpu.user{host=web01}&back_scan=1&resolve=true", {W1: "42"}, resolve=True)
check("qsMetricBackscanNoResult (the point is 2 h old)", "?timeseries=sys.cpu.system{host=web01}&back_scan=1", {})
check("without back_scan the newest-hour index finds it", "?timeseries=sys.cpu.system{host=web01}", {"000002000001000001": "7"})
check("qsMetricTwoQueriesBackscan", "?timeseries=sys.cpu.user{host=web01}&timeseries=sys.cpu.user{host=web02}&back_scan=1", {W1: "42", W2: "24"})
check("qsMetricTwoQueriesBackscanResolve", "?timeseries=sys.cpu.user{host=web01}&timeseries=sys.cpu.user{host=web02}&back_scan=1&resolve", {W1: "42", W2: "24"}, resolve=True)
check("qsMetricTwoQueriesOneMissingBackscan", "?timeseries=sys.cpu.user{host=web01}&timeseries=sys.cpu.system{host=web01}&back_scan=1", {W1: "42"})
check("qsMetricBackscanMissingTags: ctsdb answers every series (see the header)", "?timeseries=sys.cpu.user&back_scan=1", {W1: "42", W2: "24"})
check("qsMetricNSUNMetric", "?timeseries=sys.cpu.nice{host=web01}", ("error", "No such name", "metric"))
check("qsMetricNSUNTagk", "?timeseries=sys.cpu.user{dc=web01}", ("error", "No such name", "tagk"))
check("qsMetricNSUNTagv", "?timeseries=sys.cpu.user{host=web03}", ("error", "No such name", "tagv"))
check("qsTSUIDMeta", "?tsuids=" + W1, {W1: "42"})
check("qsTSUIDMetaCommaSeparated", "?tsuids=%s,%s" % (W1, W2), {W1: "42", W2: "24"})
check("qsTSUIDMetaTwoQueries", "?tsuids=%s&tsuids=%s" % (W1, W2), {W1: "42", W2: "24"})
check("qsTSUIDMetaNoResults", "?tsuids=000001000001000003", {})
check("qsTSUIDBackscan", "?tsuids=%s&back_scan=1" % W1, {W1: "42"})
check("qsTSUIDBackscanNoResult", "?tsuids=000002000001000001&back_scan=1", {})
check("qsTSUIDCommaSeparatedBackscan", "?tsuids=%s,%s&back_scan=1" % (W1, W2), {W1: "42", W2: "24"})
check("qsTSUIDCommaSeparatedOneMissingBackscan", "?tsuids=%s,000002000001000001&back_scan=1" % W1, {W1: "42"})
check("qsTSUIDTwoQueriesBackscan", "?tsuids=%s&tsuids=%s&back_scan=1" % (W1, W2), {W1: "42", W2: "24"})
check("qsTSUIDTwoQueriesOneMissingBackscan", "?tsuids=%s&tsuids=000002000001000001&back_scan=1" % W1, {W1: "42"})
check("qsDualMeta", "?timeseries=sys.cpu.user{host=web01}&tsuids=" + W2, {W1: "42", W2: "24"})
check("qsDualBackscan", "?timeseries=sys.cpu.user{host=web01}&tsuids=%s&back_scan=1" % W2, {W1: "42", W2: "24"})
check("postMetricMeta", "", {W1: "42"}, method="POST",
      body='{"queries":[{"metric":"sys.cpu.user","tags":{"host":"web01"}}]}')
check("postMetricBackscanResolve", "", {W1: "42", W2: "24"}, resolve=True, method="POST",
      body='{"queries":[{"metric":"sys.cpu.user","tags":{"host":"web01"}},{"metric":"sys.cpu.user","tags":{"host":"web02"}}],"resolveNames":true,"backScan":1}')
check("postTSUIDs", "", {W1: "42", W2: "24"}, method="POST", body='{"queries":[{"tsuids":["%s","%s"]}]}' % (W1, W2))
check("postNSUNMetric", "", ("error", "No such name", "metric"), method="POST",
      body='{"queries":[{"metric":"sys.cpu.nice","tags":{"host":"web01"}}]}')
check("no sub queries", "", ("error", "Missing sub queries"))
finish()
PY
[ $? -eq 0 ] || IT_FAILS=$((IT_FAILS + 1))
tsd_stop
tsd_logs_check
it_done
