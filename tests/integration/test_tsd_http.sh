#!/usr/bin/env bash
# test_tsd_http.sh - the HTTP side of the TSD: /api/put variants (204, summary, details, gzip,
# deflate, chunked off and on, limits, errors), OpenTSDB's 404/405 error shapes, /api/v1 and
# trailing slashes, the small endpoints, jsonp and pretty, keep-alive with pipelining, query
# answers sent whole (small) or chunked (large), CORS,
# and static files (content types, caching, no way out of the root), and the HTTP latency
# percentiles of /api/stats and telnet `stats`, counted for replies sent whole from the loop,
# written by a worker, and streamed.
source "$(dirname "$0")/lib.sh"

# req METHOD PATH [curl args...]: prints "STATUS BODY"
req() {
  local m=$1 p=$2; shift 2
  curl -s -o "$tmp/body" -w '%{http_code}' -X "$m" "http://127.0.0.1:$TSD_PORT$p" "$@" >"$tmp/code"
  echo "$(cat "$tmp/code") $(cat "$tmp/body")"
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ctsdb-it-http-XXXXXX")
IT_DIRS+=("$tmp")
tsd_start --tsd.core.enable_admin=true

pt='{"metric":"http.one","timestamp":1356998400,"value":42,"tags":{"host":"a"}}'
check_eq "put of one object answers 204" "204 " "$(req POST /api/put -d "$pt")"
arr='[{"metric":"http.arr","timestamp":1356998400,"value":1.5,"tags":{"host":"a"}},
      {"metric":"http.arr","timestamp":1356998400123,"value":"7","tags":{"host":"b"}}]'
check_eq "put of an array answers 204" "204 " "$(req POST /api/put -d "$arr")"
check_eq "summary" '200 {"failed":0,"success":2}' "$(req POST '/api/put?summary' -d "$arr")"
bad='[{"metric":"http.arr","timestamp":1356998400,"value":1,"tags":{"host":"a"}},
      {"metric":"","timestamp":1356998400,"value":1,"tags":{"host":"a"}},
      {"metric":"m","timestamp":0,"value":1,"tags":{"host":"a"}},
      {"metric":"m","timestamp":1356998400,"value":"","tags":{"host":"a"}},
      {"metric":"m","timestamp":1356998400,"value":1,"tags":{}},
      {"metric":"m","timestamp":1356998400,"value":"abc","tags":{"host":"a"}},
      {"metric":"m!","timestamp":1356998400,"value":1,"tags":{"host":"a"}}]'
out=$(req POST '/api/put?details' -d "$bad")
check_contains "details: status 400" "$out" "400 "
check_contains "details: counts" "$out" '"failed":6,"success":1'
lm=$(python3 -c 'print("m" * 1500)') # an error text longer than the former 1 KiB buffer
lout=$(req POST '/api/put?details' -d "{\"metric\":\"$lm!\",\"timestamp\":1356998400,\"value\":1,\"tags\":{\"host\":\"a\"}}")
check_contains "details: a long error text arrives whole" "$lout" \
  "\"error\":\"Invalid metric name (\\\"$lm!\\\"): illegal character: !\"}]"
check_contains "details: empty metric" "$out" '"error":"Metric name was empty"'
check_contains "details: bad timestamp" "$out" '"error":"Invalid timestamp"'
check_contains "details: empty value" "$out" '"error":"Empty value"'
check_contains "details: missing tags" "$out" '"error":"Missing tags"'
check_contains "details: not a number" "$out" '"error":"Unable to parse value to a number"'
check_contains "details: bad name" "$out" '"error":"Invalid metric name (\"m!\"): illegal character: !"'
check_contains "details: the point is echoed" "$out" '"datapoint":{"metric":"m!"'
check_eq "errors without details or summary" \
  '400 {"error":{"code":400,"message":"One or more data points had errors","details":"Please see the TSD logs or append \"details\" to the put request"}}' \
  "$(req POST /api/put -d "$bad")"
check_eq "empty body" '400 {"error":{"code":400,"message":"Missing request content"}}' "$(req POST /api/put)"
check_eq "empty array" '400 {"error":{"code":400,"message":"No datapoints found in content"}}' "$(req POST /api/put -d '[]')"
check_contains "unparseable JSON" "$(req POST /api/put -d '{"metric":')" '400 {"error":{"code":400,"message":"Unable to parse the given JSON"'
check_eq "sync_timeout adds timeouts to the summary" '200 {"failed":0,"success":1,"timeouts":0}' \
  "$(req POST '/api/put?summary&sync&sync_timeout=30000' -d "$pt")"
# bodies of two ingest batches (4096 points each): answered once both are written (the answer
# leaves from the writer), with both batches' points counted, also beside a point refused while
# the body is read; keep-alive puts in a row, each answered before the next is sent
python3 -c '
import json
pts = [{"metric": "http.big", "timestamp": 1356998400 + i, "value": i, "tags": {"host": "a"}}
       for i in range(6000)]
json.dump(pts, open("'"$tmp"'/big.json", "w"))
pts[5000]["value"] = "x"
json.dump(pts, open("'"$tmp"'/bigbad.json", "w"))'
check_eq "a two-batch body: every point counted" '200 {"failed":0,"success":6000}' \
  "$(req POST '/api/put?summary' --data-binary @"$tmp/big.json")"
check_contains "a two-batch body with a bad point in its second batch: both counted" \
  "$(req POST '/api/put?details' --data-binary @"$tmp/bigbad.json")" '"failed":1,"success":5999'
check_eq "keep-alive: 30 puts in a row on one connection, each 204" "204 x30" "$(python3 - "$TSD_PORT" <<'PY'
import http.client, json, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
codes = set()
for i in range(30):
    body = json.dumps([{"metric": "http.ka", "timestamp": 1356998400 + i * 10 + k, "value": k,
                        "tags": {"host": "a"}} for k in range(10)])
    c.request("POST", "/api/put", body)
    r = c.getresponse()
    r.read()
    codes.add(r.status)
print(" ".join("%d x30" % s for s in sorted(codes)))
PY
)"
check_eq "keep-alive: the 300 points read back" 300 "$(curl -s "http://127.0.0.1:$TSD_PORT/api/query?start=1356998400&end=1356998800&m=sum:0all-count:http.ka" |
  python3 -c 'import json, sys; print(int(sum(json.load(sys.stdin)[0]["dps"].values())))')"

printf '%s' '{"metric":"http.gz","timestamp":1356998400,"value":3,"tags":{"host":"a"}}' | gzip -c >"$tmp/pt.gz"
check_eq "gzip request body" "204 " "$(req POST /api/put --data-binary @"$tmp/pt.gz" -H 'Content-Encoding: gzip')"
python3 -c 'import zlib,sys; sys.stdout.buffer.write(zlib.compress(b"{\"metric\":\"http.deflate\",\"timestamp\":1356998400,\"value\":3,\"tags\":{\"host\":\"a\"}}"))' >"$tmp/pt.z"
check_eq "deflate request body" "204 " "$(req POST /api/put --data-binary @"$tmp/pt.z" -H 'Content-Encoding: deflate')"
check_eq "corrupt gzip body" '400 {"error":{"code":400,"message":"Unable to decompress the request body"}}' \
  "$(req POST /api/put -d 'not gzip' -H 'Content-Encoding: gzip')"
check_eq "chunked bodies are refused by default" \
  '400 {"error":{"code":400,"message":"Chunked request not supported."}}' \
  "$(req POST /api/put -d "$pt" -H 'Transfer-Encoding: chunked')"

# errors and routing
check_eq "405 shape" \
  '405 {"error":{"code":405,"message":"Method not allowed","details":"The HTTP method [GET] is not permitted for this endpoint"}}' \
  "$(req GET /api/put)"
check_eq "unknown verbs are 405" "405" "$(req PATCH /api/version | cut -c1-3)"
check_eq "404 shape under /api" '404 {"error":{"code":404,"message":"Endpoint not found"}}' "$(req GET /api/nope)"
check_contains "/api/v1/ and a trailing slash" "$(req GET /api/v1/version/)" '200 {"version":"'
check_contains "aggregators" "$(req GET /api/aggregators)" '"sum"'
check_contains "config" "$(req GET /api/config)" '"tsd.network.port":"0"'
check_eq "dropcaches" '200 {"message":"Caches dropped","status":"200"}' "$(req GET /api/dropcaches)"
check_contains "serializers" "$(req GET /api/serializers)" '"serializer":"json"'
check_eq "status" '200 {"status":"ok"}' "$(req GET /api/status)"
stats=$(req GET /api/stats)
check_contains "stats are OpenTSDB datapoints" "$stats" '"metric":"tsd.datapoints.added","timestamp":'
check_contains "stats carry storage figures" "$stats" '"metric":"tsd.storage.region.memstore_bytes"'
check_contains "stats carry the cache hit ratio" "$stats" 'tsd.storage.cache.hit_ratio_pct'
storage=$(req GET /api/storage)
check_contains "storage lists tables" "$storage" '"name":"default:tsdb"'
check_contains "storage lists regions" "$storage" '"store_file_bytes":'
check_contains "storage lists families" "$storage" '"families":[{"name":"t"'
gzhdr=$(curl -s --compressed -D - -o "$tmp/cfg.json" "http://127.0.0.1:$TSD_PORT/api/config")
check_contains "large replies are gzipped for clients that accept it" "$gzhdr" "Content-Encoding: gzip"
check "the gzipped reply decodes to the JSON" python3 -c 'import json,sys; assert "tsd.network.port" in json.load(open(sys.argv[1]))' "$tmp/cfg.json"
plain=$(curl -s -D - -o /dev/null "http://127.0.0.1:$TSD_PORT/api/config")
case "$plain" in *Content-Encoding*) not_ok "no gzip without Accept-Encoding" ;; *) ok "no gzip without Accept-Encoding" ;; esac
check_eq "jsonp" '200 cb({"status":"ok"})' "$(req GET '/api/status?jsonp=cb')"
check_contains "pretty" "$(req GET '/api/status?pretty')" $'{\n'

# keep-alive and pipelining: three requests in one write, three answers in order
pipe=$(python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
body = b"{\"metric\":\"http.pipe\",\"timestamp\":1356998400,\"value\":1,\"tags\":{\"h\":\"a\"}}"
reqs = (b"GET /api/status HTTP/1.1\r\nHost: x\r\n\r\n" +
        b"POST /api/put HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body +
        b"GET /api/nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
s.sendall(reqs)
out = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    out += b
import re
print(" ".join(c.decode() for c in re.findall(rb"HTTP/1\.1 (\d{3}) ", out)))
' "$TSD_PORT")
check_eq "pipelined requests are answered in order on one connection" "200 204 404" "$pipe"

# a body over the limit is refused before it is read
big=$(req POST /api/put -H 'Content-Length: 999999999999' -d x)
check_contains "Content-Length over tsd.http.request.max_body is 413" "$big" "413 "

# static files
mkdir -p "$tmp/web/css" "$tmp/outside"
echo '<html>ctsdb</html>' >"$tmp/web/index.html"
echo 'body{}' >"$tmp/web/css/site.css"
echo 'secret' >"$tmp/outside/secret.txt"
ln -s "$tmp/outside/secret.txt" "$tmp/web/link.txt"
tsd_stop
TSD_DATA=
tsd_start --tsd.core.enable_admin=true --staticroot "$tmp/web" --tsd.http.request.cors_domains=http://a.example,HTTP://B.example
check_eq "index.html at /" "200 <html>ctsdb</html>" "$(req GET /)"
ct=$(curl -s -o /dev/null -w '%{content_type}' "http://127.0.0.1:$TSD_PORT/css/site.css")
check_eq "css content type" "text/css; charset=UTF-8" "$ct"
hdrs=$(curl -s -D - -o /dev/null "http://127.0.0.1:$TSD_PORT/css/site.css")
check_contains "static files carry an ETag" "$hdrs" "ETag: "
check_contains "static files carry Cache-Control" "$hdrs" "Cache-Control: public"
etag=$(printf '%s' "$hdrs" | sed -n 's/^ETag: \(.*\)\r$/\1/p')
check_eq "If-None-Match gives 304" "304" "$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $etag" "http://127.0.0.1:$TSD_PORT/css/site.css")"
check_eq "a symlink out of the root is not served" "404" "$(req GET /link.txt | cut -c1-3)"
trav=$(curl -s --path-as-is -o /dev/null -w '%{http_code}' "http://127.0.0.1:$TSD_PORT/../outside/secret.txt")
check_eq ".. is not served" "404" "$trav"
trav=$(curl -s --path-as-is -o /dev/null -w '%{http_code}' "http://127.0.0.1:$TSD_PORT/css/%2e%2e/%2e%2e/outside/secret.txt")
check_eq "encoded .. is not served" "404" "$trav"
check_contains "unknown pages get an HTML 404" "$(req GET /nope.html)" "404 <!DOCTYPE html>"

# Query answers: up to 256 KiB the answer is sent whole (Content-Length), beyond that streamed in
# chunks; both are complete JSON.
python3 -c 'import json; print(json.dumps([{"metric":"http.big","timestamp":1356998400+i,"value":i,"tags":{"host":"a"}} for i in range(20000)]))' >"$tmp/big.json"
check_eq "put of 20000 points" "204 " "$(req POST /api/put --data-binary @"$tmp/big.json")"
qs='/api/query?start=1356998400&end=1356998409&m=sum:http.big'
hd=$(curl -s -D - -o "$tmp/small" "http://127.0.0.1:$TSD_PORT$qs")
check_contains "a small query answer has a Content-Length" "$hd" "Content-Length: $(wc -c <"$tmp/small")"
check_eq "a small query answer is not chunked" "" "$(printf '%s' "$hd" | grep -i 'Transfer-Encoding')"
check_contains "the small answer is the query's" "$(cat "$tmp/small")" '"metric":"http.big"'
check_contains "a small answer with jsonp" "$(req GET "$qs&jsonp=cb")" '200 cb([{"metric":"http.big"'
hd=$(curl -s --http1.0 -D - -o /dev/null "http://127.0.0.1:$TSD_PORT$qs")
check_contains "HTTP/1.0 gets a small answer with a Content-Length" "$hd" "Content-Length:"
hd=$(curl -s -D - -o "$tmp/large" "http://127.0.0.1:$TSD_PORT/api/query?start=1356998000&end=1357030000&m=sum:http.big")
check_contains "a large query answer is chunked" "$hd" "Transfer-Encoding: chunked"
check_eq "the large answer is whole" 20000 \
  "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))[0]["dps"]))' "$tmp/large")"
hd=$(curl -s -D - "http://127.0.0.1:$TSD_PORT/api/query/last?timeseries=http.big%7Bhost=a%7D&back_scan=1000000")
check_contains "a last point answers whole" "$hd" "Content-Length:"
check_contains "the last point" "$hd" '[{"timestamp":1357018399000,"value":"19999","tsuid":"'

# CORS
pre=$(curl -s -D - -o /dev/null -X OPTIONS -H 'Origin: http://b.example' "http://127.0.0.1:$TSD_PORT/api/put")
check_contains "CORS preflight is 200" "$pre" "HTTP/1.1 200"
check_contains "CORS allows the origin (case-insensitive list)" "$pre" "Access-Control-Allow-Origin: http://b.example"
check_contains "CORS lists the methods" "$pre" "Access-Control-Allow-Methods: GET, POST, PUT, DELETE"
check_contains "CORS lists the headers" "$pre" "Access-Control-Allow-Headers: Authorization, Content-Type"
check_eq "CORS refuses other origins with 200 and an error" \
  '200 {"error":{"code":200,"message":"CORS domain not allowed","details":"The domain [http://c.example] is not permitted access"}}' \
  "$(req GET /api/status -H 'Origin: http://c.example')"
lo="http://$(python3 -c 'print("c" * 900)').example" # longer than any former fixed buffer
check_eq "a refused origin arrives whole however long" \
  "200 {\"error\":{\"code\":200,\"message\":\"CORS domain not allowed\",\"details\":\"The domain [$lo] is not permitted access\"}}" \
  "$(req GET /api/status -H "Origin: $lo")"
tsd_stop
TSD_DATA=
tsd_start --tsd.core.enable_admin=true --tsd.http.request.enable_chunked=true --tsd.http.request.max_chunk=300
check_eq "OPTIONS without CORS is 405" "405" "$(req OPTIONS /api/put | cut -c1-3)"
check_eq "chunked bodies when enabled" "204 " "$(req POST /api/put -d "$pt" -H 'Transfer-Encoding: chunked')"
long=$(python3 -c 'print("[" + ",".join(["{\"metric\":\"c\",\"timestamp\":1356998400,\"value\":1,\"tags\":{\"h\":\"a\"}}"]*10) + "]")')
check_eq "chunked bodies over max_chunk are 413" \
  '413 {"error":{"code":413,"message":"Chunked request body larger than tsd.http.request.max_chunk (300 bytes)"}}' \
  "$(req POST /api/put -d "$long" -H 'Transfer-Encoding: chunked')"
tsd_stop

# tsd.core.enable_api / enable_ui: OpenTSDB leaves the disabled handlers out (404); telnet stays.
TSD_DATA=
tsd_start --staticroot "$tmp/web" --tsd.core.enable_api=false --tsd.storage.hbase.zk_quorum=zk1
check_eq "enable_api=false: /api/version is 404" \
  '404 {"error":{"code":404,"message":"Endpoint not found"}}' "$(req GET /api/version)"
check_eq "enable_api=false: /api/put is 404" "404" "$(req POST /api/put -d "$pt" | cut -c1-3)"
check_eq "enable_api=false: the page is still served" "200 <html>ctsdb</html>" "$(req GET /)"
tver=$(printf 'version\n' | tsd_talk)
check_contains "enable_api=false: telnet still answers" "$tver" "ctsdb"
check_contains "a key with no effect warns at start" "$(cat "$TSD_LOG")" \
  "tsd.storage.hbase.zk_quorum=zk1 is not supported by ctsdb"
tsd_stop
TSD_DATA=
tsd_start --staticroot "$tmp/web" --tsd.core.enable_ui=false
check_eq "enable_ui=false: / is 404" "404" "$(req GET / | cut -c1-3)"
check_eq "enable_ui=false: static files are 404" "404" "$(req GET /css/site.css | cut -c1-3)"
check_eq "enable_ui=false: the API still answers" "200" "$(req GET /api/version | cut -c1-3)"
tsd_stop

# HTTP latency: OpenTSDB's tsd.http.latency_<p>pct type=all (ms, the upper bounds of its
# Histogram(16000, 2, 100) buckets) and ctsdb's tsd.http.latency_us_<p>pct type=all. Each fresh
# daemon answers one kind of HTTP request and nothing else over HTTP (telnet `stats` reads the
# figures without adding to them), so a path that failed to count its request leaves zeros.
# lat_check WHAT STATS: STATS holds the eight figures (ms 50 75 90 95, us 50 75 90 95).
lat_check() {
  python3 - "$2" <<'PY' && ok "$1: latency percentiles are sane" || not_ok "$1: latency [$2]"
import sys
v = [int(x) for x in sys.argv[1].split()]
ms, us = v[:4], v[4:]
bounds = {2 * (i + 1) for i in range(50)} | {100 + (2 << k) for k in range(1, 14)} | {2147483647}
assert len(v) == 8 and all(x > 0 for x in v), "counted"
assert all(x in bounds for x in ms), "ms values are OpenTSDB bucket bounds"
assert ms == sorted(ms) and us == sorted(us), "non-decreasing"
# both histograms report the bucket of the same request, x us: the ms bucket [lo, m) holds
# floor(x / 1000), so lo * 1000 <= x < m * 1000, and x < u <= x * 17/16 + 1
lows = dict(zip(sorted(bounds), [0] + sorted(bounds)[:-1]))
assert all(lows[m] * 1000 < u <= m * 1063 + 1 for m, u in zip(ms, us)), "us agrees with ms"
PY
}
# lat_telnet: the eight figures from telnet `stats`, in order, after checking each has type=all
lat_telnet() {
  printf 'stats\n' | tsd_talk | python3 -c '
import sys
got = {}
for line in sys.stdin:
    f = line.split()
    if f and f[0].startswith("tsd.http.latency_") and "type=all" in f[3:]:
        got[f[0]] = f[2]
names = ["tsd.http.latency_%s%dpct" % (u, p) for u in ("", "us_") for p in (50, 75, 90, 95)]
print(" ".join(got.get(n, "missing") for n in names))'
}
TSD_DATA=
tsd_start
check_eq "no HTTP request yet: every latency percentile is 0" "0 0 0 0 0 0 0 0" "$(lat_telnet)"
check_eq "a reply sent whole from the loop" "200" "$(req GET /api/version | cut -c1-3)"
lat_check "after one reply from the loop" "$(lat_telnet)"
for _ in $(seq 1 30); do req GET /api/status >/dev/null; done
stats=$(req GET /api/stats)
for p in 50 75 90 95; do
  check_contains "/api/stats has tsd.http.latency_${p}pct" "$stats" "\"metric\":\"tsd.http.latency_${p}pct\""
  check_contains "/api/stats has tsd.http.latency_us_${p}pct" "$stats" "\"metric\":\"tsd.http.latency_us_${p}pct\""
done
apilat=$(printf '%s' "${stats#* }" | python3 -c '
import json, sys
got = {(d["metric"], d["tags"].get("type")): d["value"] for d in json.load(sys.stdin)}
names = ["tsd.http.latency_%s%dpct" % (u, p) for u in ("", "us_") for p in (50, 75, 90, 95)]
print(" ".join(got.get((n, "all"), "missing") for n in names))')
lat_check "/api/stats (values are strings, tag type=all)" "$apilat"
tsd_stop
TSD_DATA=
tsd_start
check_contains "a reply written by a worker (/api/stats)" "$(req GET /api/stats)" \
  '"metric":"tsd.http.latency_50pct","timestamp":'
lat_check "after one reply written by a worker" "$(lat_telnet)"
tsd_stop
TSD_DATA=
tsd_start
python3 -c '
for i in range(20000):
    print("put http.lat %d %d host=a" % (1356998400 + i, i))
print("version")' | tsd_talk >/dev/null
check_eq "telnet puts add no HTTP latency" "0 0 0 0 0 0 0 0" "$(lat_telnet)"
hd=$(curl -s -D - -o "$tmp/lat" "http://127.0.0.1:$TSD_PORT/api/query?start=1356998000&end=1357030000&m=sum:http.lat")
check_contains "a streamed (chunked) answer" "$hd" "Transfer-Encoding: chunked"
lat_check "after one streamed answer" "$(lat_telnet)"
tsd_stop
check_eq "tsd exits 0" 0 "$?"
it_done
