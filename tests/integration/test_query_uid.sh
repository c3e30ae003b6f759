#!/usr/bin/env bash
# test_query_uid.sh - /api/uid/rename and the /api/uid/tsmeta writes through the real daemon:
# OpenTSDB's replies and status codes (200, 304, 400, 404, 405, 501), the query-string and JSON
# forms, the renamed names seen by queries and suggest, TSMeta kept across a restart, and both
# refused in read-only mode.
source "$(dirname "$0")/lib.sh"

tsd_start
B="http://127.0.0.1:$TSD_PORT"
get() { curl -sg -m 20 -w ' %{http_code}' "$B$1" | awk '{s=$NF; $NF=""; sub(/ $/,""); print s" "$0}'; }
send() { curl -sg -m 20 -w ' %{http_code}' -X "$1" -H 'Content-Type: application/json' \
  --data-binary "$3" "$B$2" | awk '{s=$NF; $NF=""; sub(/ $/,""); print s" "$0}'; }
py() { python3 -c "import json,sys; d=json.loads(sys.argv[1]); $1" "$2"; }

r=$(send POST /api/put '[{"metric":"old.cpu","timestamp":1356998400,"value":5,"tags":{"host":"web01","dc":"lga"}},
 {"metric":"old.cpu","timestamp":1356998460,"value":7,"tags":{"host":"web02","dc":"lga"}},
 {"metric":"taken.name","timestamp":1356998400,"value":1,"tags":{"host":"web01"}}]')
check_eq "points load" "204 " "$r"
Q="/api/query?start=1356998400&end=1356998500"

# ---- /api/uid/rename --------------------------------------------------------------------------
check_eq "rename a metric (GET form)" '200 {"result":"true"}' "$(get "/api/uid/rename?metric=old.cpu&name=new.cpu")"
r=$(get "$Q&m=sum:new.cpu")
check_contains "the data answers to the new name" "$r" '"metric":"new.cpu"'
check_contains "the old name is unknown" "$(get "$Q&m=sum:old.cpu")" "400 "
check_eq "suggest lists the new name only" '200 ["new.cpu"]' "$(get "/api/suggest?type=metrics&q=new")"
check_eq "suggest no longer lists the old one" '200 []' "$(get "/api/suggest?type=metrics&q=old")"
r=$(send POST /api/put '{"metric":"old.cpu","timestamp":1356998470,"value":9,"tags":{"host":"web01","dc":"lga"}}')
check_eq "a put under the old name after the rename" "204 " "$r"
check_eq "... makes a new metric, not more data for the renamed one" \
  '200 [{"metric":"old.cpu","tags":{"dc":"lga","host":"web01"},"aggregateTags":[],"dps":{"1356998470":9}}]' \
  "$(get "$Q&m=sum:old.cpu")"
check_contains "the renamed metric keeps only its own points" "$(get "$Q&m=sum:new.cpu")" '"dps":{"1356998400":5,"1356998460":7}}'
check_eq "rename a tag value (POST form)" '200 {"result":"true"}' \
  "$(send POST /api/uid/rename '{"tagv":"web02","name":"web-02"}')"
r=$(get "$Q&m=sum:new.cpu{host=*}")
check_contains "group by shows the renamed value" "$r" '"host":"web-02"'
check_eq "rename a tag key" '200 {"result":"true"}' "$(get "/api/uid/rename?tagk=dc&name=datacenter")"
check_contains "queries use the renamed key" "$(get "$Q&m=sum:new.cpu{datacenter=lga}")" '"datacenter":"lga"'
check_eq "rename of an unknown name" '400 {"result":"false","error":"Name(\"nope\") does not exist"}' \
  "$(get "/api/uid/rename?metric=nope&name=x")"
check_eq "rename onto a taken name" \
  '400 {"result":"false","error":"When trying rename(\"new.cpu\", \"taken.name\") on UniqueId(tsdb-uid, metrics, 3): new name already assigned ID=[0, 0, 2]"}' \
  "$(get "/api/uid/rename?metric=new.cpu&name=taken.name")"
check_eq "rename to an invalid name" \
  '400 {"result":"false","error":"Invalid metric (\"a:b\"): illegal character: :"}' \
  "$(get "/api/uid/rename?metric=new.cpu&name=a:b")"
check_contains "rename without a new name" "$(get "/api/uid/rename?metric=new.cpu")" \
  '400 {"error":{"code":400,"message":"Missing necessary values to rename UID"'
check_contains "rename by PUT is not allowed" "$(send PUT /api/uid/rename '{"metric":"a","name":"b"}')" \
  '405 {"error":{"code":405,"message":"Method not allowed"'
check_contains "other uid endpoints are not implemented" "$(get /api/uid/nothing)" \
  '501 {"error":{"code":501,"message":"Other UID endpoints have not been implemented yet"'

# ---- /api/uid/tsmeta ---------------------------------------------------------------------------
r=$(get "/api/search/lookup?m=new.cpu{host=web01}")
tsuid=$(py 'print(d["results"][0]["tsuid"])' "${r#200 }")
check_contains "tsmeta GET before one is written" "$(get "/api/uid/tsmeta?tsuid=$tsuid")" \
  '404 {"error":{"code":404,"message":"Could not find Timeseries meta data"'
check_contains "tsmeta POST without create" \
  "$(send POST "/api/uid/tsmeta?m=new.cpu{host=web01,datacenter=lga}" '{"description":"x"}')" \
  '400 {"error":{"code":400,"message":"Could not find TSMeta, specify \"create=true\" to create a new one."'
r=$(send POST "/api/uid/tsmeta?m=new.cpu{host=web01,datacenter=lga}&create=true" \
  '{"description":"CPU of web01","units":"%","max":100,"custom":{"owner":"ops"}}')
check_eq "tsmeta create answers 200" 200 "${r%% *}"
check_eq "tsmeta create answers the TSUID of the series" "$tsuid" "$(py 'print(d["tsuid"])' "${r#200 }")"
check_contains "tsmeta create stores the fields" "$r" '"description":"CPU of web01","displayName":"","notes":"","created":0,"custom":{"owner":"ops"},"units":"%","dataType":"","retention":0,"max":100.0,"min":"NaN","lastReceived":'
check_contains "tsmeta create writes a zero counter" "$r" '"totalDatapoints":0}'
check_contains "tsmeta merges the metric's UIDMeta" "$r" '"metric":{"uid":"000001","type":"METRIC","name":"new.cpu"'
r=$(send POST /api/uid/tsmeta "{\"tsuid\":\"$tsuid\",\"notes\":\"checked\"}")
check_contains "tsmeta POST merges one field" "$r" '"description":"CPU of web01","displayName":"","notes":"checked"'
r=$(curl -s -m 20 -o /dev/null -w '%{http_code}' -X POST "$B/api/uid/tsmeta?tsuid=$tsuid")
check_eq "tsmeta POST with no change is 304" 304 "$r"
r=$(curl -s -m 20 -w ' %{http_code}' -X POST "$B/api/uid/tsmeta?tsuid=$tsuid&display_name=web01%20cpu&retention=30&min=0")
check_contains "tsmeta POST from the query string" "$r" '"displayName":"web01 cpu","notes":"checked"'
check_contains "tsmeta query-string numbers" "$r" '"retention":30,"max":100.0,"min":0.0'
check_contains "tsmeta bad retention" \
  "$(curl -s -m 20 -w ' %{http_code}' -X POST "$B/api/uid/tsmeta?tsuid=$tsuid&retention=soon")" \
  '"message":"Unable to parse '"'"'retention'"'"' value"'
r=$(send PUT /api/uid/tsmeta "{\"tsuid\":\"$tsuid\",\"dataType\":\"gauge\"}")
check_contains "tsmeta PUT replaces every user field" "$r" '"description":"","displayName":"","notes":"","created":0,"custom":null,"units":"","dataType":"gauge","retention":0,"max":"NaN","min":"NaN"'
check_contains "tsmeta GET answers what was written" "$(get "/api/uid/tsmeta?tsuid=$tsuid")" '"dataType":"gauge"'
r=$(send POST "/api/uid/tsmeta?m=new.cpu{host=web-02,datacenter=lga}&create=true" '{"notes":"second"}')
check_eq "a second series' TSMeta" 200 "${r%% *}"
r=$(get "/api/uid/tsmeta?m=new.cpu")
check_eq "tsmeta GET by metric lists every stored one" 2 "$(py 'print(len(d))' "${r#200 }")"
r=$(get "/api/uid/tsmeta?m=new.cpu{host=web-02}")
check_eq "tsmeta GET by metric and tag" '["second"]' "$(py 'print(json.dumps([x["notes"] for x in d]))' "${r#200 }")"
check_contains "tsmeta GET by an unknown metric" "$(get "/api/uid/tsmeta?m=nope")" "404 "
check_contains "tsmeta POST for an unknown tag value" \
  "$(send POST "/api/uid/tsmeta?m=new.cpu{host=zz}&create=true" '{}')" \
  '404 {"error":{"code":404,"message":"Unable to find one or more UIDs"'
tsd_stop

# ---- TSMeta survives a restart, then DELETE -------------------------------------------------
tsd_start
B="http://127.0.0.1:$TSD_PORT"
check_contains "tsmeta kept across a restart" "$(get "/api/uid/tsmeta?tsuid=$tsuid")" '200 {"tsuid":"'"$tsuid"'"'
check_contains "tsmeta kept its fields" "$(get "/api/uid/tsmeta?tsuid=$tsuid")" '"dataType":"gauge"'
r=$(curl -s -m 20 -o /dev/null -w '%{http_code}' -X DELETE "$B/api/uid/tsmeta?tsuid=$tsuid")
check_eq "tsmeta DELETE is 204" 204 "$r"
check_contains "deleted tsmeta is gone" "$(get "/api/uid/tsmeta?tsuid=$tsuid")" "404 "
check_contains "tsmeta DELETE without a tsuid" "$(send DELETE /api/uid/tsmeta '{}')" \
  '400 {"error":{"code":400,"message":"Unable to delete TSMeta information"'
tsd_stop

# ---- read-only mode refuses both ------------------------------------------------------------
tsd_start --tsd.mode=ro
B="http://127.0.0.1:$TSD_PORT"
check_contains "ro: rename refused" "$(get "/api/uid/rename?metric=new.cpu&name=x")" "404 "
check_contains "ro: tsmeta POST refused" \
  "$(send POST "/api/uid/tsmeta?m=new.cpu{host=web01,datacenter=lga}&create=true" '{}')" "404 "
check_contains "ro: tsmeta GET still answers" "$(get "/api/uid/tsmeta?m=new.cpu")" "200 "
it_done
