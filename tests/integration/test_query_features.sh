#!/usr/bin/env bash
# test_query_features.sh - /api/query's padding, the scalar fill policy's value and Java-syntax
# regexp filters through the real daemon, in both the GET (m=) and POST (JSON) forms, compared
# with answers worked out by hand, plus their error replies.
source "$(dirname "$0")/lib.sh"

tsd_start
B="http://127.0.0.1:$TSD_PORT"
get() { curl -sg -m 20 -w ' %{http_code}' "$B$1" | awk '{s=$NF; $NF=""; sub(/ $/,""); print s" "$0}'; }
# getq PATH NAME=VALUE...: GET with URL-encoded parameters
getq() {
  local p=$1; shift
  local a=()
  for kv in "$@"; do a+=(--data-urlencode "$kv"); done
  curl -sG -m 20 -w ' %{http_code}' "${a[@]}" "$B$p" | awk '{s=$NF; $NF=""; sub(/ $/,""); print s" "$0}'
}
post() { curl -sg -m 20 -w ' %{http_code}' -X POST -H 'Content-Type: application/json' \
  --data-binary "$2" "$B$1" | awk '{s=$NF; $NF=""; sub(/ $/,""); print s" "$0}'; }

H=1356998400
r=$(post /api/put "[
 {\"metric\":\"m\",\"timestamp\":$((H - 1800)),\"value\":1,\"tags\":{\"host\":\"web01\"}},
 {\"metric\":\"m\",\"timestamp\":$H,\"value\":2,\"tags\":{\"host\":\"web01\"}},
 {\"metric\":\"m\",\"timestamp\":$((H + 10)),\"value\":3,\"tags\":{\"host\":\"web01\"}},
 {\"metric\":\"m\",\"timestamp\":$((H + 20)),\"value\":4,\"tags\":{\"host\":\"web01\"}},
 {\"metric\":\"m\",\"timestamp\":$((H + 30)),\"value\":5,\"tags\":{\"host\":\"web01\"}},
 {\"metric\":\"m\",\"timestamp\":$((H + 3700)),\"value\":6,\"tags\":{\"host\":\"web01\"}},
 {\"metric\":\"m\",\"timestamp\":$((H + 20)),\"value\":100,\"tags\":{\"host\":\"web02\"}},
 {\"metric\":\"m\",\"timestamp\":$((H + 20)),\"value\":1000,\"tags\":{\"host\":\"db1\"}}]")
check_eq "points load" "204 " "$r"

# ---- padding ----------------------------------------------------------------------------------
S="start=$((H + 5))&end=$((H + 25))"
check_eq "without padding: the range only" \
  '200 [{"metric":"m","tags":{"host":"web01"},"aggregateTags":[],"dps":{"1356998410":3,"1356998420":4}}]' \
  "$(get "/api/query?$S&m=sum:m{host=web01}")"
check_eq "padding adds the point before and the point after" \
  '200 [{"metric":"m","tags":{"host":"web01"},"aggregateTags":[],"dps":{"1356998400":2,"1356998410":3,"1356998420":4,"1356998430":5}}]' \
  "$(get "/api/query?$S&m=sum:m{host=web01}&padding")"
check_eq "padding reads the neighbouring hour rows (POST)" \
  '200 [{"metric":"m","tags":{"host":"web01"},"aggregateTags":[],"dps":{"1356996600":1,"1356998400":2,"1356998410":3,"1356998420":4,"1356998430":5,"1357002100":6}}]' \
  "$(post /api/query "{\"start\":$H,\"end\":$((H + 30)),\"padding\":true,\"queries\":[{\"aggregator\":\"sum\",\"metric\":\"m\",\"tags\":{\"host\":\"web01\"}}]}")"
check_eq "padding with arrays and ms" \
  '200 [{"metric":"m","tags":{"host":"web01"},"aggregateTags":[],"dps":[[1356998430000,5],[1357002100000,6]]}]' \
  "$(get "/api/query?start=$((H + 31))&end=$((H + 100))&m=sum:m{host=web01}&padding&arrays&ms")"
check_eq "padding=false is no padding" \
  '200 [{"metric":"m","tags":{"host":"web01"},"aggregateTags":[],"dps":{"1356998410":3,"1356998420":4}}]' \
  "$(get "/api/query?$S&m=sum:m{host=web01}&padding=false")"

# ---- scalar fill --------------------------------------------------------------------------------
S="start=$H&end=$((H + 120))"
want='200 [{"metric":"m","tags":{"host":"web02"},"aggregateTags":[],"dps":{"1356998400":100.0,"1356998460":-1.5,"1356998520":-1.5}}]'
check_eq "scalar(-1.5) in m=" "$want" "$(getq /api/query "start=$H" "end=$((H + 120))" 'm=sum:1m-sum-scalar(-1.5):m{host=web02}')"
check_eq "scalar fill in a JSON downsample string" "$want" \
  "$(post /api/query "{\"start\":$H,\"end\":$((H + 120)),\"queries\":[{\"aggregator\":\"sum\",\"metric\":\"m\",\"downsample\":\"1m-sum-scalar(-1.5)\",\"tags\":{\"host\":\"web02\"}}]}")"
check_eq "scalar fill as a downsampler object with a NumericFillPolicy" "$want" \
  "$(post /api/query "{\"start\":$H,\"end\":$((H + 120)),\"queries\":[{\"aggregator\":\"sum\",\"metric\":\"m\",\"downsample\":{\"interval\":\"1m\",\"aggregator\":\"sum\",\"fillPolicy\":{\"policy\":\"scalar\",\"value\":-1.5}},\"tags\":{\"host\":\"web02\"}}]}")"
check_eq "fillPolicy beside a downsample string" "$want" \
  "$(post /api/query "{\"start\":$H,\"end\":$((H + 120)),\"queries\":[{\"aggregator\":\"sum\",\"metric\":\"m\",\"downsample\":\"1m-sum\",\"fillPolicy\":{\"policy\":\"scalar\",\"value\":-1.5},\"tags\":{\"host\":\"web02\"}}]}")"
check_contains "plain scalar fills 0.0" "$(get "/api/query?$S&m=sum:1m-sum-scalar:m{host=web02}")" '"1356998460":0.0'
check_contains "showQuery echoes the scalar specifier" \
  "$(getq /api/query "start=$H" "end=$((H + 120))" 'm=sum:1m-sum-scalar(7):m{host=web02}' show_query)" \
  '"downsample":"1m-sum-scalar(7)"'
check_contains "a scalar value that is not a number" \
  "$(getq /api/query "start=$H" 'm=sum:1m-sum-scalar(x):m')" \
  '400 {"error":{"code":400,"message":"Invalid scalar fill value '"'"'x'"'"': must be a finite number"'
check_contains "a value for another policy" \
  "$(post /api/query "{\"start\":$H,\"queries\":[{\"aggregator\":\"sum\",\"metric\":\"m\",\"downsample\":\"1m-sum\",\"fillPolicy\":{\"policy\":\"zero\",\"value\":3}}]}")" \
  '400 {"error":{"code":400,"message":"The value for ZERO must be 0"'

# ---- regexp filters with java.util.regex syntax ------------------------------------------------
S="start=$((H + 15))&end=$((H + 25))"
check_eq "regexp with \\d+ and anchors groups the web hosts" \
  '200 [{"metric":"m","tags":{"host":"web01"},"aggregateTags":[],"dps":{"1356998420":4}},{"metric":"m","tags":{"host":"web02"},"aggregateTags":[],"dps":{"1356998420":100}}]' \
  "$(getq /api/query "start=$((H + 15))" "end=$((H + 25))" 'm=sum:m{host=regexp(^web\d+$)}')"
check_eq "regexp matches anywhere in the value (find)" \
  '200 [{"metric":"m","tags":{"host":"db1"},"aggregateTags":[],"dps":{"1356998420":1000}}]' \
  "$(getq /api/query "start=$((H + 15))" "end=$((H + 25))" 'm=sum:m{host=regexp(b\d$)}')"
check_eq "regexp with an inline flag and a lookahead (POST)" \
  '200 [{"metric":"m","tags":{"host":"web02"},"aggregateTags":[],"dps":{"1356998420":100}}]' \
  "$(post /api/query "{\"start\":$((H + 15)),\"end\":$((H + 25)),\"queries\":[{\"aggregator\":\"sum\",\"metric\":\"m\",\"filters\":[{\"type\":\"regexp\",\"tagk\":\"host\",\"filter\":\"(?i)^WEB0(?!1)\",\"groupBy\":true}]}]}")"
r=$(getq /api/query "start=$H" 'm=sum:m{}{host=regexp(web[)}')
check_contains "an invalid regexp is a 400 naming the index" "$r" '400 {"error":{"code":400,"message":"'
check_contains "an invalid regexp names where" "$r" 'near index 4'
# ---- the other request fields of issue #7, in the JSON form -----------------------------------
J="\"start\":$((H + 15)),\"end\":$((H + 25))"
r=$(post /api/query "{$J,\"showTSUIDs\":true,\"showSummary\":true,\"showStats\":true,\"queries\":[{\"aggregator\":\"sum\",\"metric\":\"m\",\"tags\":{\"host\":\"web02\"}}]}")
check_contains "showTSUIDs lists the series" "$r" '"tsuids":["000001000001000002"]'
check_contains "showStats adds the sub query's stats" "$r" '"stats":{'
check_contains "showSummary ends with statsSummary" "$r" '{"statsSummary":{'
check_contains "show_stats in the URL form" "$(get "/api/query?start=$((H + 15))&end=$((H + 25))&m=sum:m&show_stats")" '"stats":{'
r=$(post /api/query "{$J,\"queries\":[{\"aggregator\":\"sum\",\"metric\":\"m\",\"explicitTags\":true,\"filters\":[{\"type\":\"literal_or\",\"tagk\":\"host\",\"filter\":\"web02|db1\",\"groupBy\":false}]}]}")
check_contains "explicitTags with filters" "$r" '"aggregateTags":["host"],"dps":{"1356998420":1100}'
r=$(post /api/query "{\"start\":$((H - 86400)),\"end\":$((H + 86400)),\"timezone\":\"America/New_York\",\"useCalendar\":true,\"queries\":[{\"aggregator\":\"sum\",\"metric\":\"m\",\"downsample\":\"1d-sum\",\"tags\":{\"host\":\"web02\"}}]}")
check_contains "useCalendar buckets at local midnight" "$r" '"dps":{"1356930000":100.0}'
r=$(getq /api/query "start=$((H - 86400))" "end=$((H + 86400))" 'm=sum:1d-sum:m{host=web02}' timezone=America/New_York use_calendar)
check_contains "use_calendar in the URL form" "$r" '"dps":{"1356930000":100.0}'
r=$(post /api/query "{$J,\"msResolution\":true,\"noAnnotations\":true,\"globalAnnotations\":true,\"queries\":[{\"aggregator\":\"sum\",\"tsuids\":[\"000001000001000002\"],\"rate\":true,\"rateOptions\":{\"counter\":true,\"counterMax\":1000,\"resetValue\":10,\"dropResets\":true}}]}")
check_eq "tsuids with rate options and msResolution" '200 [{"metric":"m","tags":{"host":"web02"},"aggregateTags":[],"dps":{}}]' "$r"
check_contains "delete without allow_delete" \
  "$(post /api/query "{$J,\"delete\":true,\"queries\":[{\"aggregator\":\"sum\",\"metric\":\"m\"}]}")" \
  'Deleting data is not enabled'
it_done
