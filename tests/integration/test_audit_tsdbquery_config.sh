#!/usr/bin/env bash
# test_audit_tsdbquery_config.sh - OpenTSDB 2.4's TestTsdbQuery (configureFromQuery*) where an HTTP
# client can observe it: a sub-query naming an unknown metric, tag key or tag value (alone or in
# a pipe `a|b` group-by) fails with 400 "No such name for '<kind>': '<name>'" before anything is
# read (configureFromQueryNSUMetric/NSUTagk/NSUTagv, GroupByPipeNSUTagk/NSUTagv); with
# tsd.query.skip_unresolved_tagvs=true the unknown value of a pipe is left out and the query
# answers the known ones (configureFromQueryGroupByPipeNSUTagvSkipUnresolved), a filter left
# with no known value matches nothing, while an unknown metric or tag key still fails.
source "$(dirname "$0")/lib.sh"

T0=1356998400
load() {
  curl -s -m 20 -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' --data-binary \
    "[{\"metric\":\"sys.cpu.user\",\"timestamp\":$T0,\"value\":1,\"tags\":{\"host\":\"web01\"}},
      {\"metric\":\"sys.cpu.user\",\"timestamp\":$T0,\"value\":2,\"tags\":{\"host\":\"web02\"}}]" \
    "http://127.0.0.1:$TSD_PORT/api/put"
}
# q M: status and the answer's (tags, dps) or error message, compact
q() {
  curl -s -m 20 -w '\n%{http_code}' "http://127.0.0.1:$TSD_PORT/api/query?start=$T0&end=$((T0 + 60))&m=$1" |
    python3 -c '
import json, sys
body, code = sys.stdin.read().rsplit("\n", 1)
d = json.loads(body)
if isinstance(d, dict):
    print(code, d["error"]["message"])
else:
    print(code, json.dumps(sorted([s["tags"], s["dps"]] for s in d), sort_keys=True))'
}

for skip in false true; do
  tsd_start --tsd.query.skip_unresolved_tagvs=$skip
  check_eq "skip=$skip: the fixture" 204 "$(load)"
  m="skip=$skip:"
  check_eq "$m configureFromQueryNSUMetric: 400" "400 No such name for 'metrics': 'nosuch.metric'" \
    "$(q 'sum:nosuch.metric')"
  check_eq "$m configureFromQueryNSUTagk: 400" "400 No such name for 'tagk': 'nosuchk'" \
    "$(q 'sum:sys.cpu.user%7Bnosuchk=web01%7D')"
  check_eq "$m configureFromQueryGroupByPipeNSUTagk: 400" "400 No such name for 'tagk': 'nosuchk'" \
    "$(q 'sum:sys.cpu.user%7Bnosuchk=web01%7Cweb02%7D')"
  if [ "$skip" = false ]; then
    check_eq "$m configureFromQueryNSUTagv: 400" "400 No such name for 'tagv': 'nosuchv'" \
      "$(q 'sum:sys.cpu.user%7Bhost=nosuchv%7D')"
    check_eq "$m configureFromQueryGroupByPipeNSUTagv: 400" "400 No such name for 'tagv': 'nosuchv'" \
      "$(q 'sum:sys.cpu.user%7Bhost=web01%7Cnosuchv%7D')"
  else
    check_eq "$m configureFromQueryGroupByPipeNSUTagvSkipUnresolved: the known value answers" \
      "200 [[{\"host\": \"web01\"}, {\"$T0\": 1}]]" "$(q 'sum:sys.cpu.user%7Bhost=web01%7Cnosuchv%7D')"
    check_eq "$m a filter whose only value is unknown matches nothing" "200 []" \
      "$(q 'sum:sys.cpu.user%7Bhost=nosuchv%7D')"
    check_eq "$m literal_or in a v2 filter: the unknown value left out" \
      "200 [[{\"host\": \"web02\"}, {\"$T0\": 2}]]" \
      "$(q 'sum:sys.cpu.user%7Bhost=literal_or(nosuchv%7Cweb02)%7D')"
  fi
  tsd_stop
done
it_done
