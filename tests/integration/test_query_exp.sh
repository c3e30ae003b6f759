#!/usr/bin/env bash
# test_query_exp.sh - /api/query/exp against a real TSD: known points of two metrics on two hosts,
# an expression's values (hand-computed) with intersection and union joins and a fill policy,
# the answer's shape (outputs, dps rows, dpsMeta, meta tags, the echoed query), and the 400
# error answers for a bad body, a bad expression, an unknown variable and an unknown metric; the datapoint limit's 413.
source "$(dirname "$0")/lib.sh"

tsd_start
T=1700000000
{
  echo "put exp.a $T 10 host=x"
  echo "put exp.a $((T + 60)) 20 host=x"
  echo "put exp.a $T 1 host=y"
  echo "put exp.b $T 2 host=x"
  echo "put exp.b $((T + 60)) 4 host=x"
  echo "put exp.b $T 3 host=z"
  echo version
} | tsd_talk >/dev/null

post() {
  python3 - "$TSD_PORT" "$1" <<'PY'
import sys, urllib.request, urllib.error
req = urllib.request.Request("http://127.0.0.1:%s/api/query/exp" % sys.argv[1],
                             data=sys.argv[2].encode(), method="POST")
try:
    r = urllib.request.urlopen(req, timeout=20)
    print(r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
PY
}

body() { # $1 expr, $2 join operator, $3 fill policy of b (value 7 with scalar)
  local v=0
  [ "$3" = scalar ] && v=7
  cat <<JSON
{"time":{"start":"$((T - 10))","end":"$((T + 100))","aggregator":"sum"},
 "filters":[{"id":"f1","tags":[{"type":"wildcard","tagk":"host","filter":"*","groupBy":true}]}],
 "metrics":[{"id":"a","metric":"exp.a","filter":"f1"},
            {"id":"b","metric":"exp.b","filter":"f1","fillPolicy":{"policy":"$3","value":$v}}],
 "expressions":[{"id":"e","expr":"$1","join":{"operator":"$2"}}],
 "outputs":[{"id":"e","alias":"E"}]}
JSON
}

ans=$(post "$(body 'a * 2 + b' intersection zero)")
check_eq "intersection: host=x only, (10*2+2, 20*2+4)" \
  '200 [[1700000000000, 22], [1700000060000, 44]] x 1 2' \
  "$(echo "$ans" | python3 -c '
import sys, json
st, _, js = sys.stdin.read().partition(" ")
o = json.loads(js)["outputs"][0]
print(st, o["dps"], o["meta"][1]["commonTags"]["host"], o["dpsMeta"]["series"], o["dpsMeta"]["setCount"])')"
check_contains "alias and the echoed query" "$ans" '"alias":"E"'
# JEXL's logical operators and conditions: 1/0, && over ||, c ? a : b
ans=$(post "$(body 'a > 15 && b > 3 || a == 10 && b == 0 ? a * 100 + b : -1' intersection zero)")
check_eq "logical operators and a condition: (10, 2) -> -1, (20, 4) -> 2004" \
  '200 [[1700000000000, -1], [1700000060000, 2004]]' \
  "$(echo "$ans" | python3 -c '
import sys, json
st, _, js = sys.stdin.read().partition(" ")
print(st, json.loads(js)["outputs"][0]["dps"])')"
check_contains "the echoed query" "$ans" '"query":{"time"'

ans=$(post "$(body 'a - b' union scalar)")
check_eq "union with scalar fill 7 on b: x (10-2, 20-4), y (1-0, 0-0: b has no y series, 0 as OpenTSDB's union; a's missing point its zero fill), z (0-3, 0-7: a has no z series, b's missing point 7)" \
  "200 [[1700000000000, 8, 1, -3], [1700000060000, 16, 0, -7]] x,y,z" \
  "$(echo "$ans" | python3 -c '
import sys, json
st, _, js = sys.stdin.read().partition(" ")
o = json.loads(js)["outputs"][0]
print(st, o["dps"], ",".join(m["commonTags"]["host"] for m in o["meta"][1:]))')"

# no join: OpenTSDB's default is a union (the same answer as the union above); a join without
# an operator is refused
outs() { python3 -c 'import sys, json; st, _, js = sys.stdin.read().partition(" "); print(st, json.loads(js)["outputs"])'; }
check_eq "no join: a union" "$(echo "$ans" | outs)" \
  "$(post "$(body 'a - b' union scalar | sed 's/,"join":{"operator":"union"}//')" | outs)"
ans=$(post "$(body 'a - b' union scalar | sed 's/"join":{"operator":"union"}/"join":{}/')")
check_contains "a join without operator: 400" "$ans" '400 {"error":{"code":400,"message":"Missing join operator"'
ans=$(post '{"time":{"start":"1h-ago","aggregator":"sum"}}')
check_contains "no metrics: 400" "$ans" '400 '
check_contains "no metrics: message" "$ans" 'missing or empty metrics'
ans=$(post 'not json')
check_contains "bad body: 400" "$ans" '400 '
ans=$(post "$(body 'a * (b' intersection zero)")
check_contains "bad expression: 400 with position" "$ans" "expected ')' at position 6"
ans=$(post "$(body 'a + c' intersection zero)")
check_contains "unknown variable: 400" "$ans" "Expression [a + c] was missing input c"
ans=$(post "$(body 'a + b' cross zero)")
check_contains "unsupported join: 400" "$ans" 'Unsupported join operator: cross'
ans=$(post "$(body 'a + b' union bogus)")
check_contains "bad fill policy: 400" "$ans" '400 '
ans=$(post "$(body 'a + b' intersection zero | sed 's/exp.b/exp.nope/')")
check_contains "unknown metric: 400" "$ans" '400 '
check_contains "unknown metric: named" "$ans" 'exp.nope'

tsd_stop
check_eq "tsd exits cleanly" "0" "$?"

# the datapoint limit holds for each metric's sub-query as for /api/query (413)
TSD_DATA_KEEP=$TSD_DATA
TSD_DATA=$TSD_DATA_KEEP tsd_start --tsd.query.limits.data_points.default=2
ans=$(post "$(body 'a + b' intersection zero)")
check_contains "datapoint limit: 413" "$ans" '413 '
tsd_stop
it_done
