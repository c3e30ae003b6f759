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
python3 - "$TSD_PORT" <<'PY'
import sys, json, urllib.request, urllib.error
port = sys.argv[1]
M = "sys.cpu.user"
def post(path, body, method="POST"):
    req = urllib.request.Request("http://127.0.0.1:%s%s" % (port, path), data=body.encode() if body is not None else None, method=method)
    try:
        r = urllib.request.urlopen(req, timeout=20); return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
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
fails = 0
for name, path, body, st, needles in cases:
    got_st, got = post(path, body)
    ok = got_st == st
    why = ""
    for n in needles or []:
        if n.startswith("!"):
            if n[1:] in got: ok = False; why = "unexpected %s" % n[1:]
        elif n not in got:
            ok = False; why = "missing %s" % n
    fails += not ok
    print(("ok - " if ok else "not ok - ") + "%s%s" % (name, "" if ok else ": expected %d got %d %s %s" % (st, got_st, got[:300], why)))
st, body = post("/api/put", None, "GET")
# PutDataPointRpc: 405 "Method not allowed", details naming the method
ok = st == 405 and '"Method not allowed"' in body
fails += not ok
print(("ok - " if ok else "not ok - ") + "badMethod: GET /api/put is refused (%d %s)" % (st, body[:200]))
sys.exit(1 if fails else 0)
PY
[ $? -eq 0 ] || IT_FAILS=$((IT_FAILS + 1))
tsd_stop
it_done
