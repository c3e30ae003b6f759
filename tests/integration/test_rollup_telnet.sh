#!/usr/bin/env bash
# test_rollup_telnet.sh - the telnet `rollup` command (OpenTSDB 2.4's RollupDataPointRpc, telnet
# side; TestRollupRpc's execute* cases): with rollups off every line is refused; with them on
# `rollup 1h-sum m ts v tags` stores what POST /api/rollup stores for the same point (queries
# read the telnet-written metric exactly as the HTTP-written one, from the rollup table alone),
# a stored line is acknowledged by the reply to a later line (a query right after it sees it),
# and every refused form is answered by its own line, in order, with OpenTSDB's classes.
source "$(dirname "$0")/lib.sh"

now=$(date +%s)
H0=$(( now - now % 3600 - 5 * 3600 )) # an hour five hours ago

# ---- rollups off ------------------------------------------------------------------------------
tsd_start
check_eq "rollups off: the line is refused (executeRollupsDisabled)" \
  "rollup: illegal argument: rollups are not enabled (tsd.rollups.enable)" \
  "$(echo "rollup 1h-sum r.t $H0 42 host=a" | tsd_talk)"
check_contains "help lists rollup" "$(echo help | tsd_talk)" " rollup "
tsd_stop

# ---- rollups on (the job off: only what the clients write) ------------------------------------
tsd_start --tsd.rollups.enable=true --tsd.rollups.ctsdb.compute=false \
  --tsd.core.auto_create_metrics=false
B="http://127.0.0.1:$TSD_PORT"
# the metrics exist (auto-create is off, so an unknown one is refused below)
curl -s -m 10 -o /dev/null "$B/api/uid/assign?metric=r.t,r.h&tagk=host&tagv=a,b"
# the same rollups over telnet (r.t) and HTTP (r.h): two hours, two hosts, four aggregators;
# timestamps inside the hour are snapped to its start; ms timestamps too
lines=() body="["
for h in 0 1; do
  for host in a b; do
    for agg in sum count min max; do
      v=$(( (h + 1) * 10 + ${#host} * 3 + ${#agg} ))
      [ "$host" = b ] && v="$v.5"
      ts=$(( H0 + h * 3600 + 17 ))
      [ "$h" = 1 ] && ts="${ts}250"
      lines+=("rollup 1h-$agg r.t $ts $v host=$host")
      body+="{\"metric\":\"r.h\",\"timestamp\":$ts,\"value\":$v,\"tags\":{\"host\":\"$host\"},\"interval\":\"1h\",\"aggregator\":\"$agg\"},"
    done
  done
done
body="${body%,}]"
check_eq "HTTP: the same rollups stored" 204 \
  "$(curl -s -m 20 -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "$body" "$B/api/rollup")"
# telnet: silent successes, then each refused form in order, then a reply that acknowledges all
out=$(printf '%s\n' "${lines[@]}" \
  "rollup 1h-sum r.t $H0 notanum host=a" \
  "rollup sum r.t $H0 42 host=a" \
  "rollup 1h-sum:sum r.t $H0 42 host=a" \
  "rollup 10m-sum r.t $H0 42 host=a" \
  "rollup 1h-avg r.t $H0 42 host=a" \
  "rollup 1h-sum r.t $H0 42" \
  "rollup  r.t $H0 42 host=a" \
  "rollup 1h-sum  $H0 42 host=a" \
  "rollup 1h-sum r.t -5 42 host=a" \
  "rollup 1h-sum r.nope $H0 42 host=a" \
  version | tsd_talk)
check_eq "telnet rollup lines: silent successes, then each error in order" \
  "rollup: invalid value: Invalid character 'n' in notanum
rollup: illegal argument: Pre-aggregated rollups (groupByAggregator) are not supported
rollup: illegal argument: Pre-aggregated rollups (groupByAggregator) are not supported
rollup: illegal argument: No rollup interval '10m': the rollup tables are 1h and 1d
rollup: illegal argument: No rollup aggregator 'avg': rollups hold sum, count, min and max
rollup: illegal argument: not enough arguments (need least 7, got 4)
rollup: illegal argument: Missing interval or aggregator
rollup: illegal argument: empty metric name
rollup: illegal argument: invalid timestamp: -5" \
  "$(echo "$out" | grep '^rollup: ' | grep -v 'unknown metric')"
check_contains "an unknown metric is refused as put refuses it" "$out" "rollup: unknown metric: "
check_contains "the reply after them acknowledges the stored lines" "$out" "net.opentsdb.tools ctsdb"

q() { # q METRIC FN [GROUPBY]: the answer read from the rollup table alone
  local gb=""
  [ -n "${3:-}" ] && gb=',"tags":{"host":"*"}'
  curl -s -m 20 -H 'Content-Type: application/json' -d "{\"start\":$H0,\"end\":$((H0 + 7199)),\"queries\":[{\"metric\":\"$1\",\"aggregator\":\"sum\",\"downsample\":\"1h-$2\",\"rollupUsage\":\"ROLLUP_NOFALLBACK\"$gb}]}" "$B/api/query" |
    python3 -c 'import json,sys; print(json.dumps([[s["tags"], s["dps"]] for s in json.load(sys.stdin)], sort_keys=True))'
}
for fn in sum count min max avg; do
  for gb in "" 1; do
    t=$(q r.t $fn $gb) h=$(q r.h $fn $gb)
    if [ "$t" = "$h" ] && [ "$t" != "[]" ]; then ok "telnet = HTTP: 1h-$fn${gb:+ by host}"
    else not_ok "telnet = HTTP: 1h-$fn${gb:+ by host}: telnet $t HTTP $h"; fi
  done
done
# hand-computed: the sum cell of host a, hour 0 = 10 + 1 * 3 + len("sum") = 16, hour 1 = 26; host
# b the same plus .5
check_eq "hand-computed 1h-sum by host" \
  "[[{\"host\": \"a\"}, {\"$H0\": 16.0, \"$((H0 + 3600))\": 26.0}], [{\"host\": \"b\"}, {\"$H0\": 16.5, \"$((H0 + 3600))\": 26.5}]]" \
  "$(q r.t sum 1)"
tsd_stop
it_done
