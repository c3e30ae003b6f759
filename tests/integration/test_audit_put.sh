#!/usr/bin/env bash
# test_audit_put.sh - /api/put as OpenTSDB 2.4's PutDataPointRpc answers it: the cases of its
# TestPutRpc that a client can observe over HTTP, carried over as requests to the real TSD (each
# check names the Java test): single and batched puts (204), summary / details bodies, integer,
# float, double and scientific values, the per-point errors with details (Metric name was
# empty, Invalid timestamp, Empty value, Unable to parse value to a number for NaN and the
# infinities in every spelling, Missing tags, Unknown metric without auto-create), bad / no
# JSON, sync with one or two failures, and GET refused. (The cases only mocks can produce -
# HBase errors, throttling, null channels - have no HTTP counterpart and are left out.)
source "$(dirname "$0")/lib.sh"

tsd_start --tsd.core.auto_create_metrics=false
curl -s -m 20 "http://127.0.0.1:$TSD_PORT/api/uid/assign?metric=sys.cpu.user,sys.cpu.system&tagk=host&tagv=web01" >/dev/null
PYTHONPATH="$IT_ROOT/tests/integration" python3 - "$TSD_PORT" <<'PY'
import sys, json
from audit_lib import connect, req, report, finish
connect(sys.argv[1])
M = "sys.cpu.user"
def dp(**kw):
    d = {"metric": M, "timestamp": 1365465600, "value": 42, "tags": {"host": "web01"}}
    for k, v in kw.items():
        if v is DEL: d.pop(k)
        else: d[k] = v
    return d
DEL = object()
cases = [
 ("putSingle", "/api/put", json.dumps(dp()), 204, None),
 ("putTwo", "/api/put", json.dumps([dp(), dp(metric="sys.cpu.system", value=24)]), 204, None),
 ("putSingleSummary", "/api/put?summary", json.dumps(dp()), 200, ['"failed":0', '"success":1']),
 ("putSingleDetails", "/api/put?details", json.dumps(dp()), 200, ['"failed":0', '"success":1', '"errors":[]']),
 ("putSingleSummaryAndDetails", "/api/put?summary&details", json.dumps(dp()), 200, ['"errors":[]']),
 ("putTwoSummary", "/api/put?summary", json.dumps([dp(), dp(metric="sys.cpu.system")]), 200, ['"success":2']),
 ("putNegativeInt", "/api/put", json.dumps(dp(value=-42)), 204, None),
 ("putFloat", "/api/put", json.dumps(dp(value=42.2)), 204, None),
 ("putDoublePrecisionFloatingPoint", "/api/put", '{"metric":"%s","timestamp":1365465600,"value":42.22222222222222,"tags":{"host":"web01"}}' % M, 204, None),
 ("putSEBig", "/api/put", '{"metric":"%s","timestamp":1365465600,"value":4.22e3,"tags":{"host":"web01"}}' % M, 204, None),
 ("putSECaseBig", "/api/put", '{"metric":"%s","timestamp":1365465600,"value":4.22E3,"tags":{"host":"web01"}}' % M, 204, None),
 ("putNegativeSETiny", "/api/put", '{"metric":"%s","timestamp":1365465600,"value":-4.22e-3,"tags":{"host":"web01"}}' % M, 204, None),
 ("badJSON", "/api/put", '{"metric":"%s","timestamp:1365465600,"value":42,"tags":{"host":"web01"}}' % M, 400, None),
 ("notJSON", "/api/put", "Hello World", 400, None),
 ("noContent", "/api/put", "", 400, None),
 ("noSuchUniqueName (auto-create off: unknown metric)", "/api/put?details", json.dumps(dp(metric="no.such.metric")), 400, ['"error":"Unknown metric"', '"failed":1', '"success":0']),
 ("missingMetric", "/api/put?details", json.dumps(dp(metric=DEL)), 400, ['"error":"Metric name was empty"', '"failed":1', '"success":0']),
 ("nullMetric", "/api/put?details", json.dumps(dp(metric=None)), 400, ['"error":"Metric name was empty"']),
 ("missingTimestamp", "/api/put?details", json.dumps(dp(timestamp=DEL)), 400, ['"error":"Invalid timestamp"']),
 ("nullTimestamp", "/api/put?details", json.dumps(dp(timestamp=None)), 400, ['"error":"Invalid timestamp"']),
 ("invalidTimestamp", "/api/put?details", json.dumps(dp(timestamp=-1)), 400, ['"error":"Invalid timestamp"']),
 ("missingValue", "/api/put?details", json.dumps(dp(value=DEL)), 400, ['"error":"Empty value"']),
 ("nullValue", "/api/put?details", json.dumps(dp(value=None)), 400, ['"error":"Empty value"']),
 ("emptyValue", "/api/put?details", json.dumps(dp(value="")), 400, ['"error":"Empty value"']),
 ("badValue", "/api/put?details", json.dumps(dp(value="notanumber")), 400, ['"error":"Unable to parse value to a number"']),
 ("ValueNaN", "/api/put?details", json.dumps(dp(value="NaN")), 400, ['"error":"Unable to parse value to a number"']),
 ("ValueNaNCase", "/api/put?details", json.dumps(dp(value="nan")), 400, ['"error":"Unable to parse value to a number"']),
 ("ValueINF", "/api/put?details", json.dumps(dp(value="+INF")), 400, ['"error":"Unable to parse value to a number"']),
 ("ValueNINF", "/api/put?details", json.dumps(dp(value="-INF")), 400, ['"error":"Unable to parse value to a number"']),
 ("ValueINFUnsigned", "/api/put?details", json.dumps(dp(value="INF")), 400, ['"error":"Unable to parse value to a number"']),
 ("ValueINFCase", "/api/put?details", json.dumps(dp(value="+inf")), 400, ['"error":"Unable to parse value to a number"']),
 ("ValueInfinity", "/api/put?details", json.dumps(dp(value="+Infinity")), 400, ['"error":"Unable to parse value to a number"']),
 ("ValueNInfinity", "/api/put?details", json.dumps(dp(value="-Infinity")), 400, ['"error":"Unable to parse value to a number"']),
 ("ValueInfinityUnsigned", "/api/put?details", json.dumps(dp(value="Infinity")), 400, ['"error":"Unable to parse value to a number"']),
 ("missingTags", "/api/put?details", json.dumps(dp(tags=DEL)), 400, ['"error":"Missing tags"']),
 ("nullTags", "/api/put?details", json.dumps(dp(tags=None)), 400, ['"error":"Missing tags"']),
 ("emptyTags", "/api/put?details", json.dumps(dp(tags={})), 400, ['"error":"Missing tags"']),
 ("syncOKNoDetails", "/api/put?sync=true", json.dumps([dp(), dp(metric="sys.cpu.system")]), 204, None),
 ("syncOKSummary", "/api/put?sync=true&summary", json.dumps([dp(), dp(metric="sys.cpu.system")]), 200, ['"failed":0', '"success":2', '!"errors":[]']),
 ("syncOKSummaryDetails", "/api/put?sync=true&summary&details", json.dumps([dp(), dp(metric="sys.cpu.system")]), 200, ['"success":2', '"errors":[]']),
 ("syncOKDetails", "/api/put?sync=true&details", json.dumps([dp(), dp(metric="sys.cpu.system")]), 200, ['"success":2', '"errors":[]']),
 ("syncTwoFailedDetails (a bad one and an unknown metric)", "/api/put?sync=true&details", json.dumps([dp(value="x"), dp(metric="no.such.metric")]), 400, ['"success":0', '"failed":2', '"errors":[{']),
 ("one of two failed, summary (no errors list)", "/api/put?summary", json.dumps([dp(), dp(metric="no.such.metric")]), 400, ['"failed":1', '"success":1', '!"errors"']),
 ("one of two failed, no flags: OpenTSDB's error object", "/api/put", json.dumps([dp(), dp(metric="no.such.metric")]), 400, ['"code":400', '"message":']),
]
for name, path, body, st, needles in cases:
    got_st, got = req(path, "POST", body)
    why = "" if got_st == st else "expected %d got %d" % (st, got_st)
    for n in needles or []:
        if n.startswith("!"):
            if n[1:] in got: why += " unexpected %s" % n[1:]
        elif n not in got:
            why += " missing %s" % n
    report(name, why.strip(), got)
st, body = req("/api/put", "GET")
# PutDataPointRpc: 405 "Method not allowed", details naming the method
report("badMethod: GET /api/put is refused", "" if st == 405 and '"Method not allowed"' in body else "status %d" % st, body)
finish()
PY
[ $? -eq 0 ] || IT_FAILS=$((IT_FAILS + 1))
tsd_stop
tsd_logs_check
it_done
