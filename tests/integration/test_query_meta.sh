#!/usr/bin/env bash
# test_query_meta.sh - the endpoints around queries through the real daemon: /api/query/last,
# /api/suggest, /api/search/lookup, /api/uid/assign, /api/uid/uidmeta, /api/uid/tsmeta,
# /api/annotation(s) (+ bulk, and annotations inside query results), /api/config/filters and
# /api/aggregators, with their error paths.
source "$(dirname "$0")/lib.sh"

tsd_start
B="http://127.0.0.1:$TSD_PORT"
get() { curl -sg -m 20 -w ' %{http_code}' "$B$1" | awk '{s=$NF; $NF=""; sub(/ $/,""); print s" "$0}'; }
send() { curl -sg -m 20 -w ' %{http_code}' -X "$1" -H 'Content-Type: application/json' \
  --data-binary "$3" "$B$2" | awk '{s=$NF; $NF=""; sub(/ $/,""); print s" "$0}'; }
py() { python3 -c "import json,sys; d=json.loads(sys.argv[1]); $1" "$2"; }

now=$(date +%s)
t1=$((now - 120)); t2=$((now - 60))
r=$(send POST /api/put "[{\"metric\":\"app.req\",\"timestamp\":$t1,\"value\":5,\"tags\":{\"host\":\"web01\",\"dc\":\"lga\"}},
 {\"metric\":\"app.req\",\"timestamp\":$t2,\"value\":7.25,\"tags\":{\"host\":\"web01\",\"dc\":\"lga\"}},
 {\"metric\":\"app.req\",\"timestamp\":$t2,\"value\":3,\"tags\":{\"host\":\"web02\",\"dc\":\"sjc\"}},
 {\"metric\":\"app.err\",\"timestamp\":$t2,\"value\":1,\"tags\":{\"host\":\"web02\"}}]")
check_eq "points load" "204 " "$r"
for _ in $(seq 1 50); do
  r=$(get "/api/query/last?timeseries=app.req{host=web01}")
  case "$r" in *timestamp*) break ;; esac
  sleep 0.1
done

# ---- last point ---------------------------------------------------------------------------
r=$(get "/api/query/last?timeseries=app.req{host=web01}&resolve")
check_contains "last point by metric and tags, resolved" "$r" \
  "\"metric\":\"app.req\",\"timestamp\":${t2}000,\"value\":\"7.25\",\"tags\":{"
tsuid=$(py 'print(d[0]["tsuid"])' "${r#200 }")
r=$(get "/api/query/last?tsuids=$tsuid")
check_eq "last point by tsuid, unresolved" "200 [{\"timestamp\":${t2}000,\"value\":\"7.25\",\"tsuid\":\"$tsuid\"}]" "$r"
r=$(send POST /api/query/last '{"queries":[{"metric":"app.req","tags":{}}],"resolveNames":false,"backScan":1}')
check_eq "last point POST finds every series of the metric" 2 "$(py 'print(len(d))' "${r#200 }")"
r=$(get "/api/query/last?timeseries=app.req&back_scan=x")
check_contains "bad back_scan" "$r" '400 {"error":{"code":400,"message":"Unable to parse back_scan parameter"'
r=$(get "/api/query/last?timeseries=nope")
check_contains "last point of an unknown metric" "$r" "No such name for 'metrics': 'nope'"

# ---- suggest ------------------------------------------------------------------------------
check_eq "suggest metrics" '200 ["app.err","app.req"]' "$(get "/api/suggest?type=metrics&q=app")"
check_eq "suggest max" '200 ["app.err"]' "$(get "/api/suggest?type=metrics&max=1")"
check_eq "suggest tagv prefix" '200 ["web01","web02"]' "$(get "/api/suggest?type=tagv&q=web")"
check_eq "suggest POST" '200 ["dc","host"]' "$(send POST /api/suggest '{"type":"tagk"}')"
check_contains "suggest without type (URL: a required parameter)" "$(get "/api/suggest?q=a")" \
  '400 {"error":{"code":400,"message":"Missing parameter <code>type</code>"'
check_contains "suggest POST without type" "$(send POST /api/suggest '{"q":"a"}')" \
  "400 {\"error\":{\"code\":400,\"message\":\"Missing 'type' parameter\""
check_eq "suggest max=0 is the default max" '200 ["app.err","app.req"]' "$(get "/api/suggest?type=metrics&q=app&max=0")"
check_contains "suggest bad type" "$(get "/api/suggest?type=foo")" "Invalid 'type' parameter:foo"
check_contains "suggest bad max" "$(get "/api/suggest?type=tagk&max=x")" "Unable to parse 'max' as a number"

# ---- search/lookup ------------------------------------------------------------------------
r=$(get "/api/search/lookup?m=app.req{host=*}")
check_eq "lookup counts the series" 2 "$(py 'print(d["totalResults"])' "${r#200 }")"
check_eq "lookup type" LOOKUP "$(py 'print(d["type"])' "${r#200 }")"
r=$(send POST /api/search/lookup '{"metric":"app.req","tags":[{"key":"dc","value":"sjc"}]}')
check_eq "lookup POST with a tag value" "web02" "$(py 'print(d["results"][0]["tags"]["host"])' "${r#200 }")"
# useMeta: the series rows of tsdb-meta (the TSD writes one per series) instead of the data rows
r=$(get "/api/search/lookup?m=app.req{host=*}&use_meta=true")
check_eq "lookup use_meta counts the same series" 2 "$(py 'print(d["totalResults"])' "${r#200 }")"
r=$(send POST /api/search/lookup '{"metric":"app.req","tags":[{"key":"dc","value":"sjc"}],"useMeta":true}')
check_eq "lookup useMeta POST with a tag value" "web02 1" \
  "$(py 'print(d["results"][0]["tags"]["host"], d["totalResults"])' "${r#200 }")"
# a series known to tsdb-meta only (a TSMeta written for names that have no data): useMeta
# finds it, the data scan does not
r=$(send POST /api/uid/assign '{"tagv":["web77"]}')
r=$(send POST "/api/uid/tsmeta?m=app.req%7Bhost=web77,dc=lga%7D&create=true" '{"description":"meta only"}')
check_contains "a TSMeta created for a series without data" "$r" '"description":"meta only"'
r=$(get "/api/search/lookup?m=app.req&use_meta=true")
check_eq "useMeta finds the meta-only series too" 3 "$(py 'print(d["totalResults"])' "${r#200 }")"
r=$(get "/api/search/lookup?m=app.req")
check_eq "the data scan does not" 2 "$(py 'print(d["totalResults"])' "${r#200 }")"
check_contains "other search types need a plugin: 400 as OpenTSDB without one" "$(get "/api/search/tsmeta?query=x")" "400 {\"error\":{\"code\":400,\"message\":\"Searching is not enabled\""

# ---- uid ----------------------------------------------------------------------------------
r=$(get "/api/uid/assign?metric=new.one,app.req&tagk=rack")
check_eq "assign answers 400 when one name exists" 400 "${r%% *}"
check_eq "assign gives a 6-hex-digit id" 6 "$(py 'print(len(d["metric"]["new.one"]))' "${r#400 }")"
check_contains "assign reports the existing one" "$r" '"metric_errors":{"app.req":"Name already exists with UID: '
r=$(send POST /api/uid/assign '{"tagv":["rack1"]}')
check_contains "assign POST" "$r" '200 {"tagv":{"rack1":"'
check_contains "assign nothing" "$(get "/api/uid/assign")" "Missing values to assign UIDs"
mid=${tsuid:0:6}
r=$(get "/api/uid/uidmeta?uid=$mid&type=metric")
check_contains "uidmeta GET" "$r" "200 {\"uid\":\"$mid\",\"type\":\"METRIC\",\"name\":\"app.req\""
r=$(send POST "/api/uid/uidmeta" "{\"uid\":\"$mid\",\"type\":\"metric\",\"description\":\"requests\"}")
check_contains "uidmeta POST stores a field" "$r" '"description":"requests"'
check_contains "uidmeta keeps it" "$(get "/api/uid/uidmeta?uid=$mid&type=metric")" '"description":"requests"'
check_contains "uidmeta unknown uid" "$(get "/api/uid/uidmeta?uid=FFFFFF&type=metric")" \
  '404 {"error":{"code":404,"message":"Could not find the requested UID"'
r=$(curl -s -m 20 -o /dev/null -w '%{http_code}' -X POST "$B/api/uid/uidmeta?uid=$mid&type=metric")
check_eq "uidmeta POST without a change is 304" 304 "$r"
r=$(curl -s -m 20 -w ' %{http_code}' -X POST "$B/api/uid/uidmeta?uid=$mid&type=metric&display_name=Requests")
check_contains "uidmeta POST from the query string (display_name)" "$r" '"displayName":"Requests"'
check_contains "uidmeta GET without a type" "$(get "/api/uid/uidmeta?uid=$mid")" \
  '400 {"error":{"code":400,"message":"Missing parameter <code>type</code>"'
r=$(get "/api/uid/tsmeta?tsuid=$tsuid")
check_contains "tsmeta GET before any TSMeta was written (test_query_uid.sh writes them)" "$r" \
  '404 {"error":{"code":404,"message":"Could not find Timeseries meta data"'

# ---- annotations --------------------------------------------------------------------------
r=$(send POST /api/annotation "{\"tsuid\":\"$tsuid\",\"startTime\":$t1,\"description\":\"deploy\",\"custom\":{\"owner\":\"ops\"}}")
check_eq "annotation POST (Annotation's JSON: every non-null field)" "200 {\"tsuid\":\"$tsuid\",\"description\":\"deploy\",\"notes\":\"\",\"custom\":{\"owner\":\"ops\"},\"endTime\":0,\"startTime\":$t1}" "$r"
r=$(get "/api/annotation?tsuid=$tsuid&start_time=$t1")
check_eq "annotation GET" "200 {\"tsuid\":\"$tsuid\",\"description\":\"deploy\",\"notes\":\"\",\"custom\":{\"owner\":\"ops\"},\"endTime\":0,\"startTime\":$t1}" "$r"
r=$(send POST /api/annotation "{\"tsuid\":\"$tsuid\",\"startTime\":$t1,\"notes\":\"v2\"}")
check_contains "annotation POST merges" "$r" '"description":"deploy","notes":"v2"'
r=$(send PUT /api/annotations "{\"tsuid\":\"$tsuid\",\"startTime\":$t1,\"notes\":\"only\"}")
check_eq "annotation PUT replaces" "200 {\"tsuid\":\"$tsuid\",\"description\":\"\",\"notes\":\"only\",\"endTime\":0,\"startTime\":$t1}" "$r"
r=$(send POST /api/annotation "{\"startTime\":$t2,\"description\":\"global\"}")
check_eq "global annotation" "200 {\"tsuid\":\"\",\"description\":\"global\",\"notes\":\"\",\"endTime\":0,\"startTime\":$t2}" "$r"
r=$(get "/api/query?start=$((now - 300))&m=sum:app.req{host=web01}&global_annotations")
check_contains "series annotations in query results" "$r" "\"annotations\":[{\"tsuid\":\"$tsuid\",\"description\":\"\",\"notes\":\"only\",\"endTime\":0,\"startTime\":$t1}]"
check_contains "global annotations in query results" "$r" "\"globalAnnotations\":[{\"tsuid\":\"\",\"description\":\"global\",\"notes\":\"\",\"endTime\":0,\"startTime\":$t2}]"
r=$(get "/api/query?start=$((now - 300))&m=sum:app.req{host=web01}&no_annotations")
case "$r" in *annotations*) not_ok "no_annotations leaves them out: $r" ;; *) ok "no_annotations leaves them out" ;; esac
check_contains "annotation without start" "$(send POST /api/annotation '{"description":"x"}')" '400 {"error":{"code":400,"message":"Missing start time"'
r=$(curl -s -m 10 -o /dev/null -w '%{http_code}' -X DELETE "$B/api/annotation?tsuid=$tsuid&start_time=$t1")
check_eq "annotation DELETE" 204 "$r"
check_contains "deleted annotation is gone" "$(get "/api/annotation?tsuid=$tsuid&start_time=$t1")" "404 {\"error\":{\"code\":404,\"message\":\"Unable to locate annotation in storage\""
r=$(send POST /api/annotation/bulk "[{\"tsuid\":\"$tsuid\",\"startTime\":$t1,\"description\":\"a\"},{\"tsuid\":\"$tsuid\",\"startTime\":$t2,\"description\":\"b\"}]")
check_eq "bulk POST stores every annotation" 2 "$(py 'print(len(d))' "${r#200 }")"
r=$(send DELETE /api/annotation/bulk "{\"tsuids\":[\"$tsuid\"],\"startTime\":$((now - 300)),\"endTime\":$now}")
check_contains "bulk DELETE counts" "$r" '"totalDeleted":2'

# ---- small documents ----------------------------------------------------------------------
r=$(get /api/config/filters)
check_eq "config/filters lists the eight filter types" \
  "iliteral_or iwildcard literal_or not_iliteral_or not_key not_literal_or regexp wildcard" \
  "$(py 'print(" ".join(sorted(d)))' "${r#200 }")"
r=$(get /api/aggregators)
check_contains "aggregators from query/qagg.h" "$r" '"zimsum","mimmin","mimmax"'
tsd_stop

# ---- read-only mode: reads work, writes are refused -----------------------------------------
tsd_start --tsd.mode=ro
B="http://127.0.0.1:$TSD_PORT"
check_contains "ro: uid assign refused" "$(get "/api/uid/assign?metric=x.y")" "404 "
check_contains "ro: annotation POST refused" "$(send POST /api/annotation "{\"startTime\":$t1}")" "404 "
check_contains "ro: queries still answer" "$(get "/api/query?start=$((now - 300))&m=sum:app.req")" '"metric":"app.req"'
tsd_stop

# ---- a key ctsdb does not implement says so at start (realtime meta is implemented now:
# test_meta_realtime.sh) --------------------------------------------------------------------
tsd_start --tsd.core.preload_uid_cache=true
B="http://127.0.0.1:$TSD_PORT"
check_contains "preload_uid_cache=true warns that it is not supported" "$(cat "$TSD_LOG")" \
  "tsd.core.preload_uid_cache=true is not supported by ctsdb"
check_contains "the TSD still serves" "$(get /api/version)" '"version"'
it_done
