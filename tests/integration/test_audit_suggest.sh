#!/usr/bin/env bash
# test_audit_suggest.sh - /api/suggest as OpenTSDB 2.4's SuggestRpc answers it: TestSuggestRpc's
# cases carried over as HTTP requests to the real TSD (metrics, tagk, tagv by URL and by POST,
# max, and the 400s for a missing or bad type, empty content and a bad max; PUT is 405 as
# SuggestRpc answers it).
source "$(dirname "$0")/lib.sh"

tsd_start
{
  echo "put sys.cpu.0.system 1365465600 1 host=web01.mysite.com"
  echo "put sys.mem.free 1365465600 1 host=web01.mysite.com"
  echo version
} | tsd_talk >/dev/null
B="http://127.0.0.1:$TSD_PORT"
g() { curl -gs -m 20 -w ' %{http_code}' "$B$1"; }
p() { curl -gs -m 20 -w ' %{http_code}' -H 'Content-Type: application/json' --data-binary "$1" "$B/api/suggest"; }

check_eq "metricsQS" '["sys.cpu.0.system","sys.mem.free"] 200' "$(g "/api/suggest?type=metrics&q=sys")"
check_eq "metricsPOST" '["sys.cpu.0.system","sys.mem.free"] 200' "$(p '{"type":"metrics","q":"sys"}')"
check_eq "metricQSMax" '["sys.cpu.0.system"] 200' "$(g "/api/suggest?type=metrics&q=sys&max=1")"
check_eq "metricsPOSTMax" '["sys.cpu.0.system"] 200' "$(p '{"type":"metrics","q":"s","max":1}')"
check_eq "tagkQS" '["host"] 200' "$(g "/api/suggest?type=tagk&q=h")"
check_eq "tagkPOST" '["host"] 200' "$(p '{"type":"tagk","q":"h"}')"
check_eq "tagvQS" '["web01.mysite.com"] 200' "$(g "/api/suggest?type=tagv&q=w")"
check_eq "tagvPOST" '["web01.mysite.com"] 200' "$(p '{"type":"tagv","q":"w"}')"
check_eq "missingType" '{"error":{"code":400,"message":"Missing parameter <code>type</code>"}} 400' \
  "$(g "/api/suggest?q=h")"
check_contains "missingContent: 400" "$(p '')" " 400"
check_eq "badType" "{\"error\":{\"code\":400,\"message\":\"Invalid 'type' parameter:doesnotexist\"}} 400" \
  "$(g "/api/suggest?type=doesnotexist&q=h")"
check_eq "missingTypePOST" "{\"error\":{\"code\":400,\"message\":\"Missing 'type' parameter\"}} 400" \
  "$(p '{"q":"w"}')"
check_eq "badMaxQS" "{\"error\":{\"code\":400,\"message\":\"Unable to parse 'max' as a number\"}} 400" \
  "$(g "/api/suggest?type=tagv&q=w&max=foo")"
check_eq "badMaxPOST" "{\"error\":{\"code\":400,\"message\":\"Unable to parse 'max' as a number\"}} 400" \
  "$(p '{"type":"metrics","q":"s","max":"foo"}')"
check_eq "badMethod: PUT" \
  '{"error":{"code":405,"message":"Method not allowed","details":"The HTTP method [PUT] is not permitted for this endpoint"}} 405' \
  "$(curl -gs -m 20 -w ' %{http_code}' -X PUT "$B/api/suggest?type=metrics&q=h")"

tsd_stop
tsd_logs_check
it_done
