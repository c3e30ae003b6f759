#!/usr/bin/env bash
# test_tag_index.sh - the tag index (docs/query.md "The tag index") through the real daemon: a new
# store starts with a complete index; queries pinning tags answer exactly as with the index off
# (tsd.query.tag_index=0) after UID renames, a delete query, restarts and new series; `ctsdb index
# status|drop|rebuild` and its errors.
source "$(dirname "$0")/lib.sh"

D=$(it_tmpdir)/data
S=1356998400
start_tsd() { TSD_DATA=$D tsd_start --tsd.http.query.allow_delete=true "$@"; B="http://127.0.0.1:$TSD_PORT"; }
put_series() { # put_series FROM TO HOURS: hosts hFROM..hTO, a point every 15 min
  python3 - "$1" "$2" "$3" "$S" <<'PY' | curl -sg -m 30 -o /dev/null -w '%{http_code}' -X POST --data-binary @- "$B/api/put"
import json, sys
a, b, hours, s = map(int, sys.argv[1:])
pts = [{"metric": "idx.m", "timestamp": s + i * 900 + h, "value": h * 100 + i + (0.5 if h % 2 else 0),
        "tags": {"host": "h%d" % h, "dc": "d%d" % (h % 3), "rack": "r%d" % (h % 5)}}
       for h in range(a, b + 1) for i in range(hours * 4)]
print(json.dumps(pts))
PY
}
QS=("sum:idx.m{host=h3}" "sum:idx.m{dc=d1}" "none:idx.m{rack=r2,dc=d0|d2}" "sum:idx.m{dc=*}"
    "max:idx.m{host=h5|h6|h7,rack=*}" "sum:idx.m" "avg:15m-max:idx.m{rack=r4}" "none:idx.m{host=h31}")
answers() { # every query of QS with the given key names substituted
  local q
  for q in "${QS[@]}"; do
    q=${q//rack=/$RACK=}; q=${q//host=h5/host=$H5}
    curl -sg -m 30 "$B/api/query?start=$S&end=$((S + 4 * 3600))&m=$q"; echo
  done
}
RACK=rack H5=h5

start_tsd
check_eq "points load" 204 "$(put_series 0 29 3)"
a1=$(answers)
check_contains "a one-series answer" "$a1" '"host":"h3"'
tsd_stop
check_eq "a new store's index is complete" complete "$("$CTSDB" index status --data "$D")"
start_tsd --tsd.query.tag_index=0
check_eq "index on and off answer alike" "$a1" "$(answers)"
tsd_stop

# ---- renames and a delete ----------------------------------------------------------------------
start_tsd
check_eq "rename a tag value" '{"result":"true"}' "$(curl -sg -m 20 "$B/api/uid/rename?tagv=h5&name=h5x")"
check_eq "rename a tag key" '{"result":"true"}' "$(curl -sg -m 20 "$B/api/uid/rename?tagk=rack&name=shelf")"
RACK=shelf H5=h5x
a2=$(answers)
check_contains "the renamed value answers" "$a2" '"host":"h5x"'
r=$(curl -sg -m 30 "$B/api/query?start=$S&end=$((S + 4 * 3600))&m=sum:idx.m{host=h7}&delete=true")
check_contains "delete a series' rows" "$r" '"host":"h7"'
a3=$(answers)
# ---- a restart, then new series and more points of old ones ----------------------------------
tsd_stop
start_tsd
check_eq "after a restart the same answers" "$a3" "$(answers)"
check_eq "new series load" 204 "$(put_series 28 33 4)"
a4=$(answers)
check_contains "a series new after the restart answers" "$a4" '"host":"h31"'
tsd_stop
start_tsd --tsd.query.tag_index=0
check_eq "after renames, a delete and a restart: index on and off answer alike" "$a4" "$(answers)"
tsd_stop

# ---- the tool -----------------------------------------------------------------------------------
"$CTSDB" index drop --data "$D"
check_eq "drop marks it incomplete" incomplete "$("$CTSDB" index status --data "$D")"
start_tsd
check_eq "an incomplete index is not used: same answers" "$a4" "$(answers)"
tsd_stop
r=$("$CTSDB" index rebuild --data "$D")
check_contains "rebuild lists the series" "$r" "indexed "
check_eq "rebuild marks it complete" complete "$("$CTSDB" index status --data "$D")"
start_tsd
check_eq "after the rebuild the same answers" "$a4" "$(answers)"
tsd_stop
"$CTSDB" index frob --data "$D" >/dev/null 2>&1
check_eq "an unknown subcommand is a usage error" 2 "$?"
it_done
