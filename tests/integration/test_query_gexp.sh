#!/usr/bin/env bash
# test_query_gexp.sh - /api/query/gexp against a real TSD: known points of two metrics on three
# hosts, each Graphite-style function's answer (hand-computed) in /api/query's shape, several
# exp= at once, the ms and arrays flags, and the 400 answers (unknown function, bad syntax, bad
# argument, unknown metric, no exp=) and the 405 for POST.
source "$(dirname "$0")/lib.sh"

tsd_start
T=1700000000
{
  for i in 0 1 2 3 4; do
    echo "put g.a $((T + i * 60)) $((i * 10 + 1)) host=x dc=d1"
    echo "put g.a $((T + i * 60)) $((i * -5)) host=y dc=d1"
    echo "put g.a $((T + i * 60)) $((100 - i)) host=z dc=d2"
    echo "put g.b $((T + i * 60)) 2 host=x dc=d1"
  done
  echo version
} | tsd_talk >/dev/null

# gexp EXP... [-- EXTRA_PARAMS]: "STATUS BODY"
gexp() {
  python3 - "$TSD_PORT" "$T" "$@" <<'PY'
import sys, urllib.request, urllib.error, urllib.parse
port, t = sys.argv[1], int(sys.argv[2])
args = sys.argv[3:]
extra = []
if "--" in args:
    i = args.index("--")
    args, extra = args[:i], args[i + 1:]
params = [("start", str(t - 10)), ("end", str(t + 600))] + [("exp", e) for e in args]
params += [tuple(x.split("=", 1)) for x in extra]
url = "http://127.0.0.1:%s/api/query/gexp?%s" % (port, urllib.parse.urlencode(params))
try:
    r = urllib.request.urlopen(url, timeout=20)
    print(r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
PY
}

# summary: each series as metric{tags}[aggregateTags]=v1,v2,...
summary() {
  python3 -c '
import sys, json
st, _, js = sys.stdin.read().partition(" ")
out = []
for s in json.loads(js):
    tags = ",".join("%s=%s" % kv for kv in sorted(s["tags"].items()))
    dps = s["dps"]
    vals = [v for _, v in dps] if isinstance(dps, list) else [dps[k] for k in sorted(dps)]
    out.append("%s{%s}[%s]=%s" % (s["metric"], tags, ",".join(s["aggregateTags"]),
                                  ",".join(str(v) for v in vals)))
print(st, " ".join(out))'
}

check_eq "scale by 2 keeps integers" \
  "200 g.a{dc=d1,host=x}[]=2,22,42,62,82" \
  "$(gexp 'scale(sum:g.a{host=x},2)' | summary)"
check_eq "scale by 0.5 gives doubles" \
  "200 g.a{dc=d1,host=x}[]=0.5,5.5,10.5,15.5,20.5" \
  "$(gexp 'scale(sum:g.a{host=x},0.5)' | summary)"
check_eq "absolute" \
  "200 g.a{dc=d1,host=y}[]=0,5,10,15,20" \
  "$(gexp 'absolute(sum:g.a{host=y})' | summary)"
check_eq "alias with @host, tags dropped, values kept" \
  "200 x-cpu{}[]=1,11,21,31,41 y-cpu{}[]=0,-5,-10,-15,-20" \
  "$(gexp 'alias(sum:g.a{dc=d1,host=*},@host-cpu)' | summary)"
check_eq "movingAverage over 2 points" \
  "200 g.a{dc=d1,host=x}[]=0.0,6.0,16.0,26.0,36.0" \
  "$(gexp 'movingAverage(sum:g.a{host=x},2)' | summary)"
check_eq "movingAverage over 2 minutes" \
  "200 g.a{dc=d1,host=x}[]=0.0,0.0,16.0,26.0,36.0" \
  "$(gexp "movingAverage(sum:g.a{host=x},'2min')" | summary)"
check_eq "highestMax 1 of 3 hosts" \
  "200 g.a{dc=d2,host=z}[]=100,99,98,97,96" \
  "$(gexp 'highestMax(sum:g.a{host=*},1)' | summary)"
check_eq "highestCurrent 2: z (96) then x (41)" \
  "200 g.a{dc=d2,host=z}[]=100,99,98,97,96 g.a{dc=d1,host=x}[]=1,11,21,31,41" \
  "$(gexp 'highestCurrent(sum:g.a{host=*},2)' | summary)"
ans=$(gexp "timeShift(sum:g.a{host=x},'1min')")
check_contains "timeShift moves every point a minute later" "$ans" \
  "\"dps\":{\"$((T + 60))\":1,\"$((T + 120))\":11,\"$((T + 180))\":21,\"$((T + 240))\":31,\"$((T + 300))\":41}"
check_eq "sumSeries joins on tags, 0 for a missing operand" \
  "200 g.a{dc=d1,host=x}[]=3.0,13.0,23.0,33.0,43.0 g.a{dc=d1,host=y}[]=0.0,-5.0,-10.0,-15.0,-20.0 g.a{dc=d2,host=z}[]=100.0,99.0,98.0,97.0,96.0" \
  "$(gexp 'sumSeries(sum:g.a{host=*},sum:g.b{host=*})' | summary)"
check_eq "divideSeries: x/2, y/0 and z/0 are 0 (JEXL's lenient division)" \
  "200 g.a{dc=d1,host=x}[]=0.5,5.5,10.5,15.5,20.5 g.a{dc=d1,host=y}[]=0.0,0.0,0.0,0.0,0.0 g.a{dc=d2,host=z}[]=0.0,0.0,0.0,0.0,0.0" \
  "$(gexp 'divideSeries(sum:g.a{host=*},sum:g.b{host=*})' | summary)"
check_eq "an aggregated group keeps its aggregateTags" \
  "200 g.a{}[dc,host]=101,105,109,113,117" \
  "$(gexp 'absolute(sum:g.a)' | summary)"
check_eq "two exp= answer in order" \
  "200 g.a{dc=d1,host=x}[]=2,22,42,62,82 g.b{dc=d1,host=x}[]=2,2,2,2,2" \
  "$(gexp 'scale(sum:g.a{host=x},2)' 'absolute(sum:g.b)' | summary)"
check_contains "ms timestamps with ms" "$(gexp 'absolute(sum:g.b)' -- ms=true)" "\"${T}000\":2"
check_contains "arrays" "$(gexp 'absolute(sum:g.b)' -- arrays=true)" "\"dps\":[[$T,2],"

check_eq "unknown function: 400" \
  '400 Function nope has not been implemented' \
  "$(gexp 'nope(sum:g.a)' | python3 -c '
import sys, json
st, _, js = sys.stdin.read().partition(" ")
print(st, json.loads(js)["error"]["message"])')"
check_contains "bad syntax: 400" "$(gexp 'scale(sum:g.a,2')" "400 "
check_contains "bad syntax names the position" "$(gexp 'scale(sum:g.a,2')" "at position"
check_contains "bad argument: 400 with the reason" "$(gexp 'scale(sum:g.a,x)')" \
  "Unparseable scale factor value: x"
check_contains "too few series for sumSeries" "$(gexp 'sumSeries(sum:g.a)')" \
  "Must have 2 to 26 series, got 1 instead"
check_contains "unknown metric: 400" "$(gexp 'scale(sum:no.such,2)')" "400 "
check_contains "no exp=: 400 Missing sub queries" \
  "$(curl -s "http://127.0.0.1:$TSD_PORT/api/query/gexp?start=1h-ago")" "Missing sub queries"
check_eq "POST is not allowed" "405" \
  "$(curl -s -o /dev/null -w '%{http_code}' -X POST -d '{}' "http://127.0.0.1:$TSD_PORT/api/query/gexp")"
check "the TSD still answers" curl -sf "http://127.0.0.1:$TSD_PORT/api/version"

tsd_stop
it_done
