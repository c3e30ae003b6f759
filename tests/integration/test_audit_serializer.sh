#!/usr/bin/env bash
# test_audit_serializer.sh - the body shapes OpenTSDB 2.4's HttpJsonSerializer gives a client:
# TestHttpJsonSerializer's cases carried over as HTTP requests to the real TSD (each check named
# after the Java test method), plus the error shape of HttpSerializer.formatErrorV1 (code,
# message, details; JSONP wrapping of errors) and the JSONP / pretty wrapping of answers.
# Deliberate differences (docs/opentsdb-compat.md): a parse failure carries no "details" (the
# Jackson text cannot be reproduced), tsd.http.show_stack_trace adds no "trace" (no Java stack),
# and the query statsSummary names its timings after ctsdb's phases.
source "$(dirname "$0")/lib.sh"

tsd_start --tsd.http.show_stack_trace=true
{
  echo "put sys.cpu.0.system 1356998400 1 host=web01"
  echo "put system.cpu.user 1356998700 1 host=web01"
  echo "put system.cpu.user 1357000500 7 host=web01"
  echo "put system.cpu.user 1357058700 201 host=web01"
  echo version
} | tsd_talk >/dev/null
B="http://127.0.0.1:$TSD_PORT"
g() { curl -gs -m 20 -w ' %{http_code}' "$B$1"; }
p() { curl -gs -m 20 -w ' %{http_code}' -H 'Content-Type: application/json' --data-binary "$2" "$B$1"; }
MISSING='{"error":{"code":400,"message":"Missing message content","details":"Supply valid JSON formatted data in the body of your request"}} 400'
UNPARSABLE='{"error":{"code":400,"message":"Unable to parse the given JSON"}} 400'

check_eq "parseSuggestV1" '["sys.cpu.0.system"] 200' "$(p /api/suggest '{"type":"metrics","q":"sys.cpu.0"}')"
check_eq "parseSuggestV1NoContent / EmptyContent" "$MISSING" "$(p /api/suggest '')"
check_eq "parseSuggestV1NotJSON (no details: deliberate)" "$UNPARSABLE" "$(p /api/suggest 'This is unparsable')"
check_eq "parseUidRenameV1NoContent / EmptyContent" "$MISSING" "$(p /api/uid/rename '')"
check_eq "parseUidRenameV1NotJSON" "$UNPARSABLE" "$(p /api/uid/rename 'NOT JSON')"
check_eq "formatSuggestV1" '["sys.cpu.0.system"] 200' "$(g '/api/suggest?type=metrics&q=sys.cpu.0')"
check_eq "formatSuggestV1JSONP" 'func(["sys.cpu.0.system"]) 200' \
  "$(g '/api/suggest?type=metrics&q=sys.cpu.0&jsonp=func')"
check_eq "parseUidRenameV1 / formatUidRenameV1Success" '{"result":"true"} 200' \
  "$(p /api/uid/rename '{"metric":"sys.cpu.0.system","name":"sys.cpu.2"}')"
r=$(p /api/uid/rename '{"metric":"sys.cpu.0.system","name":"sys.cpu.3"}')
check_contains "formatUidRenameV1Failed: result false" "$r" '"result":"false"'
check_contains "formatUidRenameV1Failed: the error" "$r" '"error":"Name(\"sys.cpu.0.system\") does not exist"} 400'
r=$(g /api/serializers)
for want in '"request_content_type":"application/json"' '"formatters":[' \
  '"response_content_type":"application/json; charset=UTF-8"' '"parsers":[' '"serializer":"json"' \
  '"class":"net.opentsdb.tsd.HttpJsonSerializer"'; do
  check_contains "formatSerializersV1: $want" "$r" "$want"
done

Q="/api/query?start=1356998400&end=1357060000&m=sum:system.cpu.user"
r=$(g "$Q&show_tsuids=true")
check_contains "formatQueryAsyncV1: metric" "$r" '"metric":"system.cpu.user",'
check_contains "formatQueryAsyncV1: dps" "$r" '"dps":{"1356998700":1,"1357000500":7,"1357058700":201}'
check_contains "formatQueryAsyncV1: tsuids" "$r" '"tsuids":["'
check "formatQueryAsyncV1: no timeTotal, no query" bash -c "! grep -q -e timeTotal -e '\"query\":' <<<'$r'"
check_contains "formatQueryAsyncV1wQuery" "$(g "$Q&show_query=true")" '"query":{"aggregator":"sum","metric":"system.cpu.user"'
r=$(g "$Q&show_stats=true&show_summary=true")
check_contains "formatQueryAsyncV1wStatsSummary: per-series stats" "$r" '"stats":{"emittedDPs":3'
check_contains "formatQueryAsyncV1wStatsSummary: the summary" "$r" '{"statsSummary":{'
check_contains "formatQueryAsyncV1wStatsSummary: queryIdx_00" "$r" '"queryIdx_00":'
r=$(g "$Q&show_stats=true")
check "formatQueryAsyncV1wStatsWoSummary" bash -c "grep -q '\"emittedDPs\":3' <<<'$r' && ! grep -q statsSummary <<<'$r'"
r=$(g "$Q&show_summary=true")
check "formatQueryAsyncV1woStatsWSummary" bash -c "grep -q '{\"statsSummary\":{' <<<'$r' && ! grep -q '\"stats\":{' <<<'$r'"
r=$(g "$Q")
check "formatQueryAsyncV1woStatsWoSummary" bash -c "! grep -q -e statsSummary -e '\"stats\":' <<<'$r'"
check_contains "formatQueryAsyncTimeFilterV1" "$(g '/api/query?start=1356998400&end=1357000500&m=sum:system.cpu.user')" \
  '"dps":{"1356998700":1,"1357000500":7}}] 200'
check_eq "formatQueryAsyncV1EmptyDPs" '[] 200' "$(g '/api/query?start=1400000000&m=sum:system.cpu.user')"
r=$(g /api/stats/threads)
check_contains "formatThreadStats: threadID" "$r" '"threadID":'
check_contains "formatThreadStats: name, state, interrupted, priority, stack" "$r" \
  '"state":"'
python3 -c '
import json, sys
body = sys.argv[1].rpartition(" ")[0]
a = json.loads(body)
assert isinstance(a, list) and len(a) >= 2, a
for t in a:
    assert set(t) == {"threadID", "name", "state", "interrupted", "priority", "stack"}, t
    assert t["state"] in ("RUNNABLE", "BLOCKED", "WAITING", "TERMINATED") and t["stack"] == []
' "$r" && ok "formatThreadStats: every thread has StatsRpc's fields" || not_ok "formatThreadStats: fields"

# formatErrorV1: code, message, details when there are some, JSONP-wrapped; no trace (deliberate)
check_eq "formatErrorV1: code and message" '{"error":{"code":404,"message":"Endpoint not found"}} 404' \
  "$(g /api/nothere)"
check_eq "formatErrorV1: details" \
  '{"error":{"code":405,"message":"Method not allowed","details":"The HTTP method [PUT] is not permitted for this endpoint"}} 405' \
  "$(curl -gs -m 20 -w ' %{http_code}' -X PUT "$B/api/suggest?type=metrics&q=h")"
check_eq "formatErrorV1: jsonp wraps the error" 'cb({"error":{"code":404,"message":"Endpoint not found"}}) 404' \
  "$(g '/api/nothere?jsonp=cb')"
check_eq "formatErrorV1: jsonp on a parse error" "cb(${UNPARSABLE% 400}) 400" \
  "$(p '/api/suggest?jsonp=cb' 'This is unparsable')"
check "formatErrorV1: show_stack_trace adds no trace (deliberate)" \
  bash -c "! grep -q trace <<<'$(g '/api/query?start=1&m=sum:nope')'"
# pretty (ctsdb's addition): the same document, indented
r=$(g '/api/suggest?type=metrics&q=sys&pretty')
check_eq "pretty: the same JSON" '["sys.cpu.2","system.cpu.user"]' \
  "$(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1].rpartition(" ")[0]), separators=(",",":")))' "$r")"
check_eq "pretty: spaced" '["sys.cpu.2", "system.cpu.user"] 200' "$r"
tsd_stop
tsd_logs_check
it_done
