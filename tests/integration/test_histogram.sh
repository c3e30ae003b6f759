#!/usr/bin/env bash
# test_histogram.sh - OpenTSDB 2.4's histograms through the real TSD: /api/histogram off (503
# with OpenTSDB's message) and on (tsd.core.histograms.config naming SimpleHistogramDecoder),
# both write forms (buckets, and a base64 "value" with its codec id), per-point validation
# with details, then percentile and bucket queries (GET m= and POST) against answers worked out
# by hand: per series, summed across a group, summed per downsampling interval, after a restart
# (the cells are in the store), and a plain query of the metric (no datapoints: []).
# The telnet `histogram` command (HistogramDataPointRpc's telnet side): off -> its illegal-argument
# line; on -> the same points in both line forms (buckets `lo,hi=n:...:u=n:o=n`, and a codec id
# with base64 bytes) written as metric tlat answer every query exactly as lat written over HTTP,
# before and after a restart; each error line in order, successes silent.
source "$(dirname "$0")/lib.sh"

tsd_start
B="http://127.0.0.1:$TSD_PORT"
T=1700000000
post() { curl -s -m 20 -w ' %{http_code}' -X POST --data-binary "$2" "$B$1"; }
check_eq "histograms off: 503 with OpenTSDB's message" \
  "{\"error\":{\"code\":503,\"message\":\"Histogram storage has not been enabled. Check the 'tsd.core.histograms.config' configuration.\"}} 503" \
  "$(post /api/histogram "{\"metric\":\"lat\",\"timestamp\":$T,\"tags\":{\"host\":\"a\"},\"buckets\":{\"1,2\":1}}")"
check_eq "telnet histogram off: executeTelnetHistosDisabled's illegal argument" \
  "histogram: illegal argument: Histogram storage has not been enabled. Check the 'tsd.core.histograms.config' configuration." \
  "$(echo "histogram lat $T 1,2=1 host=a" | tsd_talk)"
tsd_stop

DATA=$(it_tmpdir)/data
CFG='--tsd.core.histograms.config={"net.opentsdb.core.SimpleHistogramDecoder": 0}'
TSD_DATA=$DATA tsd_start "$CFG"
unset TSD_DATA
B="http://127.0.0.1:$TSD_PORT"
# host a at T: [1,6) 5, [6,10) 10, [10,20) 1 (16 in all: p50 -> 8, p99 -> 15)
check_eq "a histogram by buckets: 204" " 204" \
  "$(post /api/histogram "{\"metric\":\"lat\",\"timestamp\":$T,\"tags\":{\"host\":\"a\"},\"buckets\":{\"1,6\":5,\"6,10\":10,\"10,20\":1},\"underflow\":0,\"overflow\":5}")"
# host b at T: 5, 0, 20; and a bad one in the same batch
r=$(post "/api/histogram?details" "[{\"metric\":\"lat\",\"timestamp\":$T,\"tags\":{\"host\":\"b\"},\"buckets\":{\"1,6\":5,\"6,10\":0,\"10,20\":20}},{\"metric\":\"\",\"timestamp\":$T,\"tags\":{\"host\":\"b\"},\"buckets\":{\"1,6\":1}}]")
check_contains "details: one stored, one refused" "$r" '"failed":1,"success":1} 400'
check_contains "details: HistogramPojo's message" "$r" '"error":"Metric name was empty"'
# host a at T+60 by value: one bucket [1,6) 7, given as base64 of the codec bytes
V=$(python3 -c 'import base64,struct; print(base64.b64encode(struct.pack(">h",1)+struct.pack(">ff",1,6)+bytes([7,0,0])).decode())')
check_eq "a histogram by value and codec id: 204" " 204" \
  "$(post /api/histogram "{\"metric\":\"lat\",\"timestamp\":$((T + 60)),\"tags\":{\"host\":\"a\"},\"id\":0,\"value\":\"$V\"}")"
err() { python3 -c 'import json,sys; s,_,b=sys.argv[1].rpartition(" "); d=json.loads(s); print(b, d["errors"][0]["error"])' "$1"; }
check_eq "no buckets and no value" "400 Histogram buckets cannot be null or empty if 'value' is empty." \
  "$(err "$(post "/api/histogram?details" "{\"metric\":\"lat\",\"timestamp\":$T,\"tags\":{\"host\":\"a\"}}")")"
LM=$(python3 -c 'print("m" * 600)') # an error text longer than the former 320-byte buffer
check_eq "a long error text arrives whole" \
  "400 Invalid metric name (\"$LM!\"): illegal character: !" \
  "$(err "$(post "/api/histogram?details" "{\"metric\":\"$LM!\",\"timestamp\":$T,\"tags\":{\"host\":\"a\"},\"buckets\":{\"1,2\":1}}")")"
check_eq "missing tags" "400 Missing tags" \
  "$(err "$(post "/api/histogram?details" "{\"metric\":\"lat\",\"timestamp\":$T,\"buckets\":{\"1,2\":1}}")")"
check_eq "bad timestamp" "400 Invalid timestamp" \
  "$(err "$(post "/api/histogram?details" "{\"metric\":\"lat\",\"timestamp\":-5,\"tags\":{\"host\":\"a\"},\"buckets\":{\"1,2\":1}}")")"
check_eq "an id with no codec" "400 No codec found for ID 9" \
  "$(err "$(post "/api/histogram?details" "{\"metric\":\"lat\",\"timestamp\":$T,\"tags\":{\"host\":\"a\"},\"id\":9,\"value\":\"$V\"}")")"
check_eq "bytes that are not a histogram" "400 Unable to decode the histogram value: A histogram needs at least 4 bytes, got 2" \
  "$(err "$(post "/api/histogram?details" "{\"metric\":\"lat\",\"timestamp\":$T,\"tags\":{\"host\":\"a\"},\"id\":0,\"value\":\"AAE=\"}")")"
check_eq "bad bucket bounds" "400 Unable to parse bucket bounds: 1-2" \
  "$(err "$(post "/api/histogram?details" "{\"metric\":\"lat\",\"timestamp\":$T,\"tags\":{\"host\":\"a\"},\"buckets\":{\"1-2\":1}}")")"
check_contains "not JSON" "$(post /api/histogram 'nope')" "Unable to parse the given JSON"

# The same points over telnet as tlat (executeTelnet: bucket form; executeTelnetBinary: id and
# base64), then every error form in order; successes answer nothing.
TL=$(printf '%s\n' "histogram tlat $T 1,6=5:6,10=10:10,20=1:u=0:o=5 host=a" \
  "histogram tlat $T 1,6=5:6,10=0:10,20=20 host=b" "histogram tlat $((T + 60)) 0 $V host=a" \
  "histogram tlat $T 1,2=1" "histogram  $T 1,2=1 host=a" "histogram tlat 12x 1,2=1 host=a" \
  "histogram tlat -5 1,2=1 host=a" "histogram tlat $T 1,2=1 host" \
  "histogram tlat $T 1,2=1 host=a host=b" "histogram tlat $T 1-2=1 host=a" \
  "histogram tlat $T 1,2 host=a" "histogram tlat $T 9 $V host=a" "histogram tlat $T 0 AAE= host=a" \
  "histogram tlat $T 0 $V" "histogram tlat $T 1,2=x host=a" "histogram tlat $T 0 !!! host=a" \
  "histogram tlat $T 1,2=1 ho\$t=a" | tsd_talk)
check_eq "telnet histogram lines: silent successes, then each error in order" \
  "histogram: illegal argument: not enough arguments (need least 5, got 3)
histogram: illegal argument: empty metric name
histogram: invalid value: Invalid character 'x' in 12x
histogram: illegal argument: invalid timestamp: -5
histogram: illegal argument: invalid tag: host
histogram: illegal argument: duplicate tag: host=b, tags={host=a}
histogram: HBase error: Improperly formatted bounds: 1-2=1
histogram: HBase error: Improperly formatted bucket: 1,2
histogram: HBase error: No codec found for ID 9
histogram: HBase error: Unable to decode the histogram value: A histogram needs at least 4 bytes, got 2
histogram: HBase error: Need at least one tag (metric=tlat, tags={})
histogram: HBase error: For input string: \"x\"
histogram: HBase error: Unable to decode the histogram value (base64)
histogram: HBase error: Invalid tag name with value [a] (\"ho\$t\"): illegal character: \$" "$TL"

q() { curl -gs -m 20 "$B/api/query?start=$((T - 10))&end=$((T + 600))&m=$1"; }
summary() {
  python3 -c '
import json, sys
out = []
for s in json.loads(sys.stdin.read()):
    tags = ",".join("%s=%s" % kv for kv in sorted(s["tags"].items()))
    out.append("%s{%s}=%s" % (s["metric"], tags, ",".join(str(s["dps"][k]) for k in sorted(s["dps"]))))
print(" ".join(out))'
}
check_eq "percentiles per host" \
  "lat_pct_50.0{host=a}=8.0,3.5 lat_pct_99.0{host=a}=15.0,3.5 lat_pct_50.0{host=b}=15.0 lat_pct_99.0{host=b}=15.0" \
  "$(q 'sum:percentiles%5B99,50%5D:lat%7Bhost=*%7D' | summary)"
# summed across hosts at T: [1,6) 10, [6,10) 10, [10,20) 21 -> 41: p50 in [10,20) -> 15
check_eq "percentile and buckets of the sum over hosts" \
  "lat_pct_50.0{}=15.0,3.5 lat_1.0_6.0{}=10,7 lat_6.0_10.0{}=10,0 lat_10.0_20.0{}=21,0" \
  "$(q 'sum:percentiles%5B50%5D:show-histogram-buckets:lat' | summary)"
# summed per hour: [1,6) 17, [6,10) 10, [10,20) 21 -> 48: p25 (35 %) in [1,6) -> 3.5, p75 -> 15
check_eq "POST percentiles with a 1h-sum downsampler" "lat_pct_25.0{}=3.5 lat_pct_75.0{}=15.0" \
  "$(curl -s -m 20 -d "{\"start\":$((T - 10)),\"end\":$((T + 600)),\"queries\":[{\"aggregator\":\"sum\",\"metric\":\"lat\",\"percentiles\":[75,25],\"downsample\":\"1h-sum\"}]}" "$B/api/query" | summary)"
check_contains "only SUM downsampling for histograms" \
  "$(curl -s -m 20 -d "{\"start\":$((T - 10)),\"queries\":[{\"aggregator\":\"sum\",\"metric\":\"lat\",\"percentiles\":[75],\"downsample\":\"1h-avg\"}]}" "$B/api/query")" \
  "Only SUM downsampling aggregation supported for histogram query"
check_contains "a percentile past 100" "$(q 'sum:percentiles%5B101%5D:lat')" "Invalid percentile parameters: 101"
check_eq "a plain query of the metric: no datapoints" "[]" "$(q 'sum:lat')"
# telnet-written tlat answers as HTTP-written lat, per host and summed with its buckets
tl_same() {
  local http tel
  http=$(q "$2" | python3 -c 'import json,sys; print(sorted(json.dumps(s, sort_keys=True) for s in json.load(sys.stdin)))')
  tel=$(q "${2/:lat/:tlat}" | sed 's/tlat/lat/g' | python3 -c 'import json,sys; print(sorted(json.dumps(s, sort_keys=True) for s in json.load(sys.stdin)))')
  if [ "$http" != "[]" ] && [ "$http" = "$tel" ]; then ok "$1"; else not_ok "$1: HTTP '$http' telnet '$tel'"; fi
}
tl_same "telnet = HTTP: percentiles per host" 'sum:percentiles%5B99,50%5D:lat%7Bhost=*%7D'
tl_same "telnet = HTTP: percentile and buckets of the sum" 'sum:percentiles%5B50%5D:show-histogram-buckets:lat'
tsd_stop
TSD_DATA=$DATA tsd_start "$CFG"
unset TSD_DATA
B="http://127.0.0.1:$TSD_PORT"
check_eq "after a restart: the same percentiles" \
  "lat_pct_50.0{host=a}=8.0,3.5 lat_pct_50.0{host=b}=15.0" \
  "$(q 'sum:percentiles%5B50%5D:lat%7Bhost=*%7D' | summary)"
tl_same "after a restart: telnet = HTTP" 'sum:percentiles%5B50%5D:show-histogram-buckets:lat%7Bhost=*%7D'
tsd_stop
it_done
