#!/usr/bin/env bash
# test_tsd_influx.sh - the InfluxDB 1.x door (docs/protocols.md): the real `influx` CLI (Debian
# influxdb-client) connects (/ping) and INSERTs line protocol into the TSD, and /api/query answers
# those points exactly under measurement.field metrics; then curl cases: precisions, bools,
# a line without tags (the default tag), each error with InfluxDB's status and {"error": ...}
# body - also those the router and the HTTP layer give (405, 413) and auth's 401/403, which the
# influx CLI prints as it would InfluxDB's - and a token sent as the CLI's password.
source "$(dirname "$0")/lib.sh"

if ! command -v influx >/dev/null 2>&1; then
  not_ok "the influx CLI is not installed (influxdb-client, deps/test.txt; make deps)"
  it_done
fi

T=$(it_tmpdir)
tsd_start --tsd.http.request.max_body=65536
U="http://127.0.0.1:$TSD_PORT"

# query M TAGS START -> "ts=value ..." of the one series, sorted (ms resolution)
q() {
  curl -sg "$U/api/query?start=$3&ms=true&m=sum:$1$2" | python3 -c '
import json, sys
d = json.load(sys.stdin)
if not isinstance(d, list) or len(d) != 1:
    print("ANSWER:", json.dumps(d)); sys.exit(0)
print(" ".join("%s=%g" % (k, v) for k, v in sorted(d[0]["dps"].items(), key=lambda kv: int(kv[0]))))'
}

# --- the real client -------------------------------------------------------------------------
out=$(timeout 20 influx -host 127.0.0.1 -port "$TSD_PORT" -database telegraf -precision s \
  -execute 'INSERT cpu,host=web01,region=eu usage_user=12.5,usage_idle=80i 1700000000' 2>&1)
check_eq "influx CLI INSERT succeeds (no output)" "" "$out"
out=$(timeout 20 influx -host 127.0.0.1 -port "$TSD_PORT" -database telegraf -precision s \
  -execute 'INSERT cpu,host=web01,region=eu usage_user=13.25,up=true 1700000060' 2>&1)
check_eq "second INSERT succeeds" "" "$out"
check_eq "cpu.usage_user answered exactly" "1700000000000=12.5 1700000060000=13.25" \
  "$(q cpu.usage_user '{host=web01,region=eu}' 1699999990)"
check_eq "integer field cpu.usage_idle" "1700000000000=80" "$(q cpu.usage_idle '{host=web01}' 1699999990)"
check_eq "bool field stored as 1" "1700000060000=1" "$(q cpu.up '{region=eu}' 1699999990)"
out=$(timeout 20 influx -host 127.0.0.1 -port "$TSD_PORT" -database telegraf \
  -execute 'INSERT cpu,host=web01 bad=' 2>&1)
check_contains "the CLI shows the parse error" "$out" "unable to parse"

# --- curl cases ------------------------------------------------------------------------------
code=$(curl -s -o /dev/null -D "$T/h" -w '%{http_code}' "$U/ping")
check_eq "GET /ping is 204" 204 "$code"
check "/ping carries X-Influxdb-Version" grep -qi '^X-Influxdb-Version:' "$T/h"
check_eq "HEAD /ping is 204" 204 "$(curl -s -o /dev/null -I -w '%{http_code}' "$U/ping")"

w() { # w QUERY BODY -> "code body"
  curl -s -o "$T/b" -w '%{http_code}' -XPOST "$U/write?$1" --data-binary "$2"
  printf ' %s' "$(cat "$T/b")"
}
check_eq "ms precision" "204 " "$(w 'db=x&precision=ms' 'mem,host=a used=5 1700000100123')"
check_eq "ms point stored at its ms" "1700000100123=5" "$(q mem.used '{host=a}' 1700000100000)"
check_eq "ns default precision" "204 " "$(w 'db=x' 'mem,host=a used=6 1700000200123456789')"
check_eq "ns floored to ms" "1700000200123=6" "$(q mem.used '{host=a}' 1700000200000)"
check_eq "h precision" "204 " "$(w 'db=x&precision=h' 'mem,host=b used=7 472222')"
check_eq "hours" "1699999200000=7" "$(q mem.used '{host=b}' 1699999000)"
check_eq "line without tags" "204 " "$(w 'db=x&precision=s' 'notags value=3 1700000300')"
check_eq "gets source=influx" "1700000300000=3" "$(q notags.value '{source=influx}' 1700000200)"
body=$'disk,host=a free=1 1700000400\n\n# comment\ndisk,host=a free=2 1700000401\r\n'
check_eq "several lines, blank and comment lines" "204 " "$(w 'db=x&precision=s' "$body")"
check_eq "both stored" "1700000400000=1 1700000401000=2" "$(q disk.free '{host=a}' 1700000300)"

r=$(w 'db=x&precision=s' $'net,host=a rx=1 1700000500\nnet,host=a rx=oops 1700000501\nnet,host=a rx=3 1700000502')
check_contains "a malformed line: 400 with InfluxDB's error object" "$r" "400 {\"error\":\"unable to parse '"
check_eq "... naming the line and the reason" \
  "400 {\"error\":\"unable to parse 'net,host=a rx=oops 1700000501': invalid field value\"}" "$r"
check_eq "the good lines are still written" "1700000500000=1 1700000502000=3" "$(q net.rx '{host=a}' 1700000400)"
r=$(w 'db=x&precision=s' 'str,host=a v="text" 1700000600')
check_contains "string fields are refused" "$r" "400 {\"error\":\"unable to parse"
r=$(w 'db=x&precision=s' 'bad,host=a@b v=1 1700000000')
check_contains "a point the checks refuse: partial write, dropped=1" "$r" "partial write:"
check_contains "... with the count" "$r" "dropped=1\"}"
check_eq "no db: 400" '400 {"error":"database is required"}' "$(w 'precision=s' 'a,h=b v=1 1700000000')"
check_eq "bad precision: 400" '400 {"error":"invalid precision"}' "$(w 'db=x&precision=q' 'a,h=b v=1 1700000000')"
code=$(curl -s -o "$T/b" -D "$T/h" -w '%{http_code}' "$U/write?db=x")
check_eq "GET /write: 405" 405 "$code"
check_eq "... with InfluxDB's error object" \
  '{"error":"Method not allowed: The HTTP method [GET] is not permitted for this endpoint"}' "$(cat "$T/b")"
check "... and the X-Influxdb-Error header" grep -qi '^X-Influxdb-Error: Method not allowed' "$T/h"
head -c 70000 /dev/zero | tr '\0' 'x' >"$T/big"
r=$(curl -s -o "$T/b" -w '%{http_code}' -XPOST "$U/write?db=x" --data-binary @"$T/big")
check_eq "a body above tsd.http.request.max_body: 413" 413 "$r"
check_eq "... with InfluxDB's error object" '{"error":"Request body too large"}' "$(cat "$T/b")"
errs=$(curl -s "$U/api/stats" | python3 -c '
import json, sys
print(sum(int(d["value"]) for d in json.load(sys.stdin) if d["metric"] == "tsd.datapoints.written"))')
check "points written are counted in /api/stats" test "$errs" -ge 12
tsd_stop
check_eq "clean stop" 0 "$?"

# --- auth: /write is a write route ------------------------------------------------------------
TSD_DATA=""
tsd_start --tsd.core.auth.token=s3cret
U="http://127.0.0.1:$TSD_PORT"
r=$(w 'db=x&precision=s' 'a,h=b v=1 1700000000')
check_contains "no token: 401" "$r" "401 "
check_contains "... in InfluxDB's shape, saying why" "$r" '401 {"error":"Unauthorized: a token is required'
out=$(timeout 20 influx -host 127.0.0.1 -port "$TSD_PORT" -database x \
  -execute 'INSERT a,h=b v=1 1700000000' 2>&1)
check_contains "the influx CLI prints the reason (no token)" "$out" 'ERR: {"error":"Unauthorized: a token is required'
out=$(timeout 20 influx -host 127.0.0.1 -port "$TSD_PORT" -database x -username u -password wrong \
  -execute 'INSERT a,h=b v=1 1700000000' 2>&1)
check_contains "the influx CLI prints the reason (bad token)" "$out" \
  'ERR: {"error":"Unauthorized: the token sent does not match tsd.core.auth.token"}'
out=$(timeout 20 influx -host 127.0.0.1 -port "$TSD_PORT" -database x -username u -password s3cret \
  -precision s -execute 'INSERT authed,h=b v=4 1700000000' 2>&1)
check_eq "the token as the influx CLI's password: INSERT succeeds" "" "$out"
check_eq "... and is stored" "1700000000000=4" "$(q authed.v '{h=b}' 1699999990)"
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer s3cret' -XPOST \
  "$U/write?db=x&precision=s" --data-binary 'a,h=b v=1 1700000000')
check_eq "with the token: 204" 204 "$code"
check_eq "/ping needs no token" 204 "$(curl -s -o /dev/null -w '%{http_code}' "$U/ping")"
tsd_stop
TSD_DATA=""
tsd_start --tsd.core.auth.allow=10.9.9.9
U="http://127.0.0.1:$TSD_PORT"
r=$(w 'db=x&precision=s' 'a,h=b v=1 1700000000')
check_contains "address not allowed: 403" "$r" "403 "
check_contains "... in InfluxDB's shape" "$r" '403 {"error":"Forbidden: client address 127.0.0.1 is not in tsd.core.auth.allow"}'
tsd_stop
tsd_start --tsd.mode=ro # on the last TSD's data (a read-only TSD needs tables)
U="http://127.0.0.1:$TSD_PORT"
check_contains "read-only TSD refuses /write" "$(w 'db=x&precision=s' 'a,h=b v=1 1700000000')" "403 "
tsd_stop
# the answer waits for every batch of the request (the writer's outcomes, here a new metric
# refused by the writer with auto_create_metrics off): 5,000 points are two ingest batches
tsd_start --tsd.core.auto_create_metrics=false
U="http://127.0.0.1:$TSD_PORT"
python3 -c 'print("\n".join("newm,host=h%d v=1 1700000000" % i for i in range(5000)))' >"$T/big"
code=$(curl -s -o "$T/b" -w '%{http_code}' -XPOST "$U/write?db=x&precision=s" --data-binary @"$T/big")
check_eq "5,000 points of an unknown metric: partial write counting both batches" \
  '400 {"error":"partial write: Unknown metric dropped=5000"}' "$code $(cat "$T/b")"
tsd_stop
it_done
