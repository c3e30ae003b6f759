#!/usr/bin/env bash
# test_query_api.sh - /api/query through the real daemon: data loaded with telnet `put` and HTTP
# /api/put, then GET (m=, tsuid=, flags) and POST queries compared with answers worked out from
# OpenTSDB's rules, and every error path with its status and message.
source "$(dirname "$0")/lib.sh"

tsd_start
B="http://127.0.0.1:$TSD_PORT"

# get URL -> "STATUS BODY"
get() { curl -sg -m 20 -w ' %{http_code}' "$B$1" | awk '{s=$NF; $NF=""; sub(/ $/,""); print s" "$0}'; }
post() { curl -sg -m 20 -w ' %{http_code}' -X POST -H 'Content-Type: application/json' \
  --data-binary "$2" "$B$1" | awk '{s=$NF; $NF=""; sub(/ $/,""); print s" "$0}'; }
# json_eq DESC EXPECTED ACTUAL: structural equality (python3's json module)
json_eq() {
  if python3 -c 'import json,sys; sys.exit(0 if json.loads(sys.argv[1])==json.loads(sys.argv[2]) else 1)' "$2" "$3" 2>/dev/null
  then ok "$1"; else not_ok "$1: expected [$2] got [$3]"; fi
}

# ---- load: telnet for host=a, HTTP for host=b -------------------------------------------------
exec 3<>/dev/tcp/127.0.0.1/"$TSD_PORT"
printf 'put sys.cpu 1356998400 10 host=a dc=x\nput sys.cpu 1356998430 30 host=a dc=x\nversion\n' >&3
timeout 5 head -1 <&3 >/dev/null
exec 3>&-
r=$(post /api/put '[{"metric":"sys.cpu","timestamp":1356998415,"value":20,"tags":{"host":"b","dc":"x"}},
 {"metric":"sys.cpu","timestamp":1356998445,"value":25.5,"tags":{"host":"b","dc":"y"}},
 {"metric":"sys.ctr","timestamp":1356998400,"value":100,"tags":{"host":"a"}},
 {"metric":"sys.ctr","timestamp":1356998410,"value":150,"tags":{"host":"a"}},
 {"metric":"sys.ctr","timestamp":1356998420,"value":50,"tags":{"host":"a"}},
 {"metric":"sys.ctr","timestamp":1356998430,"value":70,"tags":{"host":"a"}}]')
check_eq "points load over HTTP" "204 " "$r"
# wait (bounded) until the telnet points are visible
for _ in $(seq 1 50); do
  r=$(get "/api/query?start=1356998400&end=1356998500&m=sum:sys.cpu{host=a}")
  case "$r" in *1356998430*) break ;; esac
  sleep 0.1
done

S="start=1356998400&end=1356998500"
r=$(get "/api/query?$S&m=sum:sys.cpu")
check_eq "sum over every series interpolates and types like OpenTSDB" \
  '200 [{"metric":"sys.cpu","tags":{},"aggregateTags":["dc","host"],"dps":{"1356998400":10.0,"1356998415":40.0,"1356998430":30.0,"1356998445":25.5}}]' "$r"
r=$(get "/api/query?$S&m=sum:sys.cpu{host=*}")
check_eq "group by host" \
  '200 [{"metric":"sys.cpu","tags":{"dc":"x","host":"a"},"aggregateTags":[],"dps":{"1356998400":10,"1356998430":30}},{"metric":"sys.cpu","tags":{"host":"b"},"aggregateTags":["dc"],"dps":{"1356998415":20.0,"1356998445":25.5}}]' "$r"
r=$(get "/api/query?$S&m=sum:1m-avg:sys.cpu{dc=x}")
check_eq "downsample 1m-avg grouped by dc" \
  '200 [{"metric":"sys.cpu","tags":{"dc":"x"},"aggregateTags":["host"],"dps":{"1356998400":40.0}}]' "$r"
r=$(get "/api/query?start=1356998400&end=1356998580&m=sum:1m-sum-null:sys.cpu{host=a}")
check_eq "fill policy null" \
  '200 [{"metric":"sys.cpu","tags":{"dc":"x","host":"a"},"aggregateTags":[],"dps":{"1356998400":40.0,"1356998460":null,"1356998520":null,"1356998580":null}}]' "$r"
r=$(get "/api/query?start=1356998400&end=1356998520&m=sum:1m-sum-nan:sys.cpu{host=a}")
check_contains "fill policy nan is quoted NaN" "$r" '"1356998460":"NaN"'
r=$(get "/api/query?start=1356998400&end=1356998520&m=sum:1m-sum-zero:sys.cpu{host=a}")
check_contains "fill policy zero" "$r" '"1356998460":0.0'
r=$(get "/api/query?$S&m=sum:0all-sum:sys.cpu")
check_eq "0all sums the whole range at the start" \
  '200 [{"metric":"sys.cpu","tags":{},"aggregateTags":["dc","host"],"dps":{"1356998400":85.5}}]' "$r"
r=$(get "/api/query?$S&m=sum:rate:sys.cpu{host=a}")
check_eq "rate" \
  '200 [{"metric":"sys.cpu","tags":{"dc":"x","host":"a"},"aggregateTags":[],"dps":{"1356998430":0.6666666666666666}}]' "$r"
r=$(get "/api/query?$S&m=sum:rate:sys.ctr")
check_eq "rate without counter goes negative" \
  '200 [{"metric":"sys.ctr","tags":{"host":"a"},"aggregateTags":[],"dps":{"1356998410":5.0,"1356998420":-10.0,"1356998430":2.0}}]' "$r"
r=$(get "/api/query?$S&m=sum:rate{counter,200}:sys.ctr")
check_eq "counter wraps at counterMax" \
  '200 [{"metric":"sys.ctr","tags":{"host":"a"},"aggregateTags":[],"dps":{"1356998410":5.0,"1356998420":10.0,"1356998430":2.0}}]' "$r"
r=$(get "/api/query?$S&m=sum:rate{counter,200,8}:sys.ctr")
check_contains "resetValue reports a big wrap as 0" "$r" '"1356998420":0.0'
r=$(get "/api/query?$S&m=sum:rate{dropcounter}:sys.ctr")
check_eq "dropResets drops the reset point" \
  '200 [{"metric":"sys.ctr","tags":{"host":"a"},"aggregateTags":[],"dps":{"1356998410":5.0,"1356998430":2.0}}]' "$r"
r=$(get "/api/query?$S&m=none:sys.cpu{dc=x}&arrays&ms")
check_eq "none aggregator, arrays and ms" \
  '200 [{"metric":"sys.cpu","tags":{"dc":"x","host":"a"},"aggregateTags":[],"dps":[[1356998400000,10],[1356998430000,30]]},{"metric":"sys.cpu","tags":{"dc":"x","host":"b"},"aggregateTags":[],"dps":[[1356998415000,20]]}]' "$r"
r=$(get "/api/query?$S&m=sum:sys.cpu{}{host=regexp(^b\$)}")
check_eq "regexp filter without grouping" \
  '200 [{"metric":"sys.cpu","tags":{"host":"b"},"aggregateTags":["dc"],"dps":{"1356998415":20.0,"1356998445":25.5}}]' "$r"
r=$(get "/api/query?$S&m=sum:explicit_tags:sys.cpu{host=a}")
check_eq "explicit tags leave out series with more keys" "200 []" "$r"
r=$(get "/api/query?$S&m=sum:sys.cpu{}{dc=not_key()}")
check_eq "not_key" "200 []" "$r"
r=$(get "/api/query?$S&m=mimmax:sys.cpu{dc=iliteral_or(X)}")
check_contains "iliteral_or matches case-insensitively" "$r" '"aggregateTags":["host"]'
r=$(get "/api/query?$S&m=sum:sys.cpu{host=a}&show_tsuids&show_query")
check_contains "show_tsuids" "$r" '"tsuids":["'
check_contains "show_query echoes the sub query" "$r" '"query":{"aggregator":"sum","metric":"sys.cpu"'
tsuid=$(printf '%s' "${r#200 }" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["tsuids"][0])')
r=$(get "/api/query?$S&tsuid=sum:$tsuid")
check_contains "tsuid= query" "$r" '"dps":{"1356998400":10,"1356998430":30}'
r=$(get "/api/query?$S&m=sum:sys.cpu{host=a}&show_summary")
check_contains "show_summary appends statsSummary" "$r" '{"statsSummary":{'
r=$(get "/api/query?start=2013/01/01-00:00:00&end=2013/01/01-00:01:40&m=sum:sys.cpu{host=a}")
check_contains "absolute dates" "$r" '"dps":{"1356998400":10,"1356998430":30}'
r=$(get "/api/query?start=2012/12/31-19:00:00&end=2012/12/31-19:01:40&timezone=America/New_York&m=sum:sys.cpu{host=a}")
check_contains "absolute dates in a time zone" "$r" '"dps":{"1356998400":10,"1356998430":30}'
r=$(get "/api/query?start=1356998400&end=1357084800&m=sum:1dc-sum:sys.cpu{host=a}&timezone=America/New_York")
check_contains "calendar day buckets in New York start at local midnight" "$r" '"dps":{}'
r=$(get "/api/query?start=1356912000&end=1357084800&m=sum:1dc-sum:sys.cpu{host=a}&timezone=America/New_York")
check_contains "calendar day bucket stamped at local midnight (05:00Z)" "$r" '"1356930000":40.0'
now_ms=$(( $(date +%s) * 1000 ))
r=$(get "/api/query?start=1h-ago&m=sum:sys.cpu")
check_eq "relative start with end defaulting to now" "200 []" "$r"

# ---- POST ---------------------------------------------------------------------------------
r=$(post /api/query '{"start":1356998400,"end":1356998500,"msResolution":true,"queries":[{"aggregator":"sum","metric":"sys.cpu","downsample":"30s-max","filters":[{"type":"wildcard","tagk":"host","filter":"*","groupBy":true}]}]}')
check_eq "POST with filters and downsample" \
  '200 [{"metric":"sys.cpu","tags":{"dc":"x","host":"a"},"aggregateTags":[],"dps":{"1356998400000":10.0,"1356998430000":30.0}},{"metric":"sys.cpu","tags":{"host":"b"},"aggregateTags":["dc"],"dps":{"1356998400000":20.0,"1356998430000":25.5}}]' "$r"
r=$(post "/api/query?arrays" '{"start":1356998400,"end":1356998500,"queries":[{"aggregator":"sum","metric":"sys.cpu","tags":{"host":"a"}}]}')
check_eq "POST with arrays in the URL (read from the query string whatever the method)" \
  '200 [{"metric":"sys.cpu","tags":{"dc":"x","host":"a"},"aggregateTags":[],"dps":[[1356998400,10],[1356998430,30]]}]' "$r"
r=$(post /api/query '{"start":"1356998400","end":"1356998500","queries":[{"aggregator":"sum","metric":"sys.ctr","rate":true,"rateOptions":{"counter":true,"counterMax":200,"resetValue":0}}]}')
check_contains "POST rateOptions" "$r" '"1356998420":10.0'
r=$(post /api/query '{"start":1356998400,"end":1356998500,"queries":[{"aggregator":"sum","metric":"sys.cpu","tags":{"host":"a"}}]}')
check_contains "POST legacy tags" "$r" '"tags":{"dc":"x","host":"a"}'

# ---- errors -------------------------------------------------------------------------------
r=$(get "/api/query?m=sum:sys.cpu")
check_eq "missing start" '400 {"error":{"code":400,"message":"Missing parameter <code>start</code>"}}' "$r"
r=$(get "/api/query?start=1h-ago")
check_eq "missing sub queries" '400 {"error":{"code":400,"message":"Missing sub queries"}}' "$r"
r=$(get "/api/query?$S&m=sum:nope")
check_eq "unknown metric" "400 {\"error\":{\"code\":400,\"message\":\"No such name for 'metrics': 'nope'\",\"details\":\"No such name for 'metrics': 'nope'\"}}" "$r"
r=$(get "/api/query?$S&m=sum:sys.cpu{nokey=a}")
check_eq "unknown tag key" "400 {\"error\":{\"code\":400,\"message\":\"No such name for 'tagk': 'nokey'\",\"details\":\"No such name for 'tagk': 'nokey'\"}}" "$r"
r=$(get "/api/query?$S&m=sum:sys.cpu{host=zz}")
check_eq "unknown tag value" "400 {\"error\":{\"code\":400,\"message\":\"No such name for 'tagv': 'zz'\",\"details\":\"No such name for 'tagv': 'zz'\"}}" "$r"
r=$(get "/api/query?$S&m=foo:sys.cpu")
check_eq "unknown aggregator" '400 {"error":{"code":400,"message":"No such aggregation function: foo"}}' "$r"
r=$(get "/api/query?$S&m=sum:1m-none:sys.cpu")
check_contains "none for downsampling" "$r" 'cannot use the NONE aggregator for downsampling'
r=$(get "/api/query?start=1356998500&end=1356998400&m=sum:sys.cpu")
check_contains "end before start" "$r" '400 {"error":{"code":400,"message":"End time [1356998400000] must be greater than the start time [1356998500000]"'
r=$(get "/api/query?$S&timezone=Nowhere/X&m=sum:sys.cpu")
check_contains "bad timezone" "$r" 'The timezone specification could not be found'
r=$(get "/api/query?$S&m=sum:sys.cpu{host=foo(x)}")
check_contains "unknown filter type" "$r" 'Could not find a filter for type: foo'
r=$(post /api/query '{"start":1356998400,"queries":[{"metric":"sys.cpu"}]}')
check_contains "POST without aggregator" "$r" '400 {"error":{"code":400,"message":"Missing the aggregation function"'
r=$(post /api/query '{nope')
check_contains "POST bad JSON" "$r" '400 {"error":{"code":400,"message":"Unable to parse the given JSON"'
r=$(post /api/query '')
check_eq "POST without a body: OpenTSDB's suggestion as details" \
  '400 {"error":{"code":400,"message":"Missing message content","details":"Supply valid JSON formatted data in the body of your request"}}' "$r"

# /api/query/last without back_scan: the newest point of each series whatever its age (the points
# above are from 2012), through the newest-hour index the TSD's writer keeps; a back_scan reads
# only its hours back from now, as OpenTSDB's
r=$(get "/api/query/last?timeseries=sys.cpu%7Bhost=a%7D&resolve=true")
check_contains "last: a point years old is found without back_scan" "$r" \
  '"metric":"sys.cpu","timestamp":1356998430000,"value":"30","tags":{"host":"a","dc":"x"}'
r=$(post /api/query/last '{"queries":[{"metric":"sys.cpu","tags":{"host":"b"}}]}')
check_contains "last POST: both host=b series, years old" "$r" '"timestamp":1356998415000,"value":"20"'
check_contains "last POST: ... and its second series" "$r" '"timestamp":1356998445000,"value":"25.5"'
tsuid=$(printf '%s' "$r" | grep -o '"tsuid":"[0-9A-F]*"' | head -1 | cut -d'"' -f4)
r=$(get "/api/query/last?tsuids=$tsuid")
check_contains "last: a TSUID years old is found without back_scan" "$r" '200 [{"timestamp":13569984'
r=$(get "/api/query/last?timeseries=sys.cpu%7Bhost=a%7D&back_scan=24")
check_eq "last: back_scan=24 does not reach it" "200 []" "$r"

# /api/query/last's errors: QueryRpc.handleLastDataPointQuery wraps what the run throws
# (NoSuchUniqueName, IllegalArgumentException) in BadRequestException(Throwable), whose details
# are the message; what parseLastPointQuery throws itself has none. A wildcard or filter in the
# tags is no filter there (Tags.parseWithMetric takes every value literally), so it is an
# unknown tag value.
r=$(get "/api/query/last?timeseries=nope")
check_eq "last: unknown metric" "400 {\"error\":{\"code\":400,\"message\":\"No such name for 'metrics': 'nope'\",\"details\":\"No such name for 'metrics': 'nope'\"}}" "$r"
r=$(get "/api/query/last?timeseries=sys.cpu{host=*}&back_scan=1000000")
check_eq "last: a wildcard is a literal, unknown tag value" "400 {\"error\":{\"code\":400,\"message\":\"No such name for 'tagv': '*'\",\"details\":\"No such name for 'tagv': '*'\"}}" "$r"
r=$(get "/api/query/last?timeseries=sys.cpu{host=a|b}")
check_eq "last: a literal_or is a literal, unknown tag value" "400 {\"error\":{\"code\":400,\"message\":\"No such name for 'tagv': 'a|b'\",\"details\":\"No such name for 'tagv': 'a|b'\"}}" "$r"
r=$(post /api/query/last '{"queries":[{"metric":"sys.cpu","tags":{"host":"regexp(.*)"}}]}')
check_eq "last POST: a filter is a literal, unknown tag value" "400 {\"error\":{\"code\":400,\"message\":\"No such name for 'tagv': 'regexp(.*)'\",\"details\":\"No such name for 'tagv': 'regexp(.*)'\"}}" "$r"
r=$(get "/api/query/last?tsuids=0001")
check_eq "last: bad TSUID, message as details" '400 {"error":{"code":400,"message":"Invalid TSUID: 0001","details":"Invalid TSUID: 0001"}}' "$r"
r=$(get "/api/query/last?resolve")
check_eq "last: no sub queries, no details" '400 {"error":{"code":400,"message":"Missing sub queries"}}' "$r"
r=$(get "/api/query/last?timeseries=sys.cpu&back_scan=x")
check_eq "last: bad back_scan, no details" '400 {"error":{"code":400,"message":"Unable to parse back_scan parameter"}}' "$r"
r=$(post /api/query/last '')
check_eq "last POST without a body: OpenTSDB's suggestion as details" \
  '400 {"error":{"code":400,"message":"Missing message content","details":"Supply valid JSON formatted data in the body of your request"}}' "$r"

r=$(curl -s -m 10 -o /dev/null -w '%{http_code}' -X PUT "$B/api/query?$S&m=sum:sys.cpu")
check_eq "PUT is not allowed" 405 "$r"
r=$(curl -sg -m 10 -w ' %{http_code}' -X DELETE "$B/api/query?$S&m=sum:sys.cpu")
check_contains "DELETE needs tsd.http.query.allow_delete" "$r" 'Deleting data is not enabled'
tsd_stop

# ---- delete with allow_delete, datapoint limit, the data directory CLI ----------------------
tsd_start --tsd.http.query.allow_delete=true --tsd.query.limits.data_points.default=3
B="http://127.0.0.1:$TSD_PORT"

# ---- OpenTSDB's QueryRpc counters (tsd.http.query.*), on this fresh daemon ------------------
# qstats: "invalid_requests exceptions success" from /api/stats (each must appear once, no tags
# but host, an integer string)
qstats() {
  curl -s -m 10 "$B/api/stats" | python3 -c '
import json, sys
got = {}
for s in json.load(sys.stdin):
    n = s["metric"]
    if n.startswith("tsd.http.query."):
        assert n not in got and list(s["tags"]) == ["host"] and s["value"].isdigit(), s
        got[n] = s["value"]
print(" ".join(got.get("tsd.http.query." + k, "missing")
               for k in ("invalid_requests", "exceptions", "success")))'
}
check_eq "query counters start at 0" "0 0 0" "$(qstats)"
r=$(get "/api/query?$S&m=sum:sys.cpu{host=a}")
check_contains "counted: a query within the limit answers 200" "$r" '200 [{"metric":"sys.cpu"'
r=$(post /api/query "{\"start\":1356998400,\"end\":1356998500,\"queries\":[{\"aggregator\":\"sum\",\"metric\":\"sys.cpu\",\"tags\":{\"host\":\"b\"}}]}")
check_contains "counted: a POST query answers 200" "$r" '200 [{"metric":"sys.cpu"'
r=$(get "/api/query?$S&m=nosuchagg:sys.cpu")
check_contains "not counted: a bad aggregator is a 400 from validation" "$r" '400 '
r=$(get "/api/query?m=sum:sys.cpu")
check_contains "not counted: a missing start is a 400 from parsing" "$r" '400 '
r=$(get "/api/query?$S&m=sum:no.such.metric")
check_contains "counted: an unknown metric is a 400 from the run" "$r" '400 '
r=$(get "/api/query?$S&m=sum:sys.cpu{nosuchtagk=a}")
check_contains "counted: an unknown tag key is a 400 from the run" "$r" '400 '
r=$(get "/api/query?$S&m=sum:sys.cpu")
check_contains "counted: over the datapoint limit is a 413" "$r" '413 '
r=$(get "/api/query/last?timeseries=sys.cpu{host=a}")
check_contains "not counted: /api/query/last" "$r" '200 ['
r=$(get "/api/query/last?timeseries=no.such.metric")
check_contains "not counted: a failing /api/query/last" "$r" '400 '
check_eq "tsd.http.query.* after 2 answers, 2 unknown names, a 413" "2 1 2" "$(qstats)"
out=$(printf 'stats\n' | tsd_talk | grep -v "^tsd\.http\.query\.answer_buffer_bytes " | grep '^tsd\.http\.query\.\|^tsd\.rpc\.exceptions \|type=http_plugin' | \
  cut -d' ' -f1,3-)
check_eq "telnet stats: the same counters, OpenTSDB's names and tags" \
"tsd.rpc.received 0 host=$(hostname) type=http_plugin
tsd.rpc.exceptions 0 host=$(hostname)
tsd.http.query.invalid_requests 2 host=$(hostname)
tsd.http.query.exceptions 1 host=$(hostname)
tsd.http.query.success 2 host=$(hostname)" "$out"
r=$(get "/api/query?$S&m=sum:sys.cpu")
check_contains "datapoint limit gives 413" "$r" '413 {"error":{"code":413,"message":"Sorry, you have attempted to fetch more than our limit of 3 data points'
out=$("$CTSDB" query --host "127.0.0.1:$TSD_PORT" 1356998400 1356998500 sum sys.cpu host=a)
check_eq "ctsdb query against the TSD" "sys.cpu 1356998400000 10 {dc=x, host=a}
sys.cpu 1356998430000 30 {dc=x, host=a}" "$out"
out=$("$CTSDB" query --host "127.0.0.1:$TSD_PORT" 1356998400 1356998500 sum:1m-avg sys.cpu dc=x)
check_eq "ctsdb query with downsampling prints %f" "sys.cpu 1356998400000 40.000000 {dc=x}" "$out"
"$CTSDB" query --host "127.0.0.1:$TSD_PORT" 1356998400 sum nope >/dev/null 2>&1
check_eq "ctsdb query: unknown metric exits 2" 2 $?
r=$(curl -sg -m 10 -w ' %{http_code}' -X DELETE "$B/api/query?$S&m=sum:sys.cpu{host=b}")
check_contains "DELETE answers with what it deleted" "$r" '"dps":{"1356998415":20.0,"1356998445":25.5}}] 200'
r=$(get "/api/query?$S&m=sum:sys.cpu{host=b}")
check_eq "deleted rows are gone" "200 []" "$r"
tsd_stop
out=$("$CTSDB" query --data "$TSD_DATA" 1356998400 1356998500 max:30s-avg sys.cpu host=a)
check_eq "ctsdb query on a data directory" "sys.cpu 1356998400000 10.000000 {dc=x, host=a}
sys.cpu 1356998430000 30.000000 {dc=x, host=a}" "$out"
it_done
