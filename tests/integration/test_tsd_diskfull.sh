#!/usr/bin/env bash
# test_tsd_diskfull.sh - a full disk is an error that clears when its cause does (issues #21, #19):
# a TSD whose data directory is on a small tmpfs refuses writes once the disk is full, with an
# error naming the cause, shows the state in /api/stats (tsd.storage.error.*), and takes writes
# again without a restart once space is freed; every acknowledged point is then readable, also
# after a restart. Run twice: with the ingest head off (the store's own write-ahead log and
# memstores fill the disk) and on (the head log fills it: its failures are part of the same error
# state, docs/head.md). The clock is pinned mid-hour so that, with the head on, every point is in
# the open hour (in the head and its log, not the store). Needs `mount -t tmpfs` (root); without
# it the script says so and passes nothing ("skip").
source "$(dirname "$0")/lib.sh"

MNT=$(it_tmpdir)/mnt
mkdir -p "$MNT"
if ! mount -t tmpfs -o size=24m tmpfs "$MNT" 2>/dev/null; then
  ok "skip: cannot mount a tmpfs here (not root?)"
  it_done
fi
# stop the TSD (by PID), unmount, then the usual cleanup
on_exit() {
  if [ -n "${TSD_PID:-}" ] && kill -0 "$TSD_PID" 2>/dev/null; then tsd_stop; fi
  umount "$MNT" 2>/dev/null
  it_cleanup
}
trap on_exit EXIT

T0=1356998400                # an hour's start
export CTSDB_NOW_MS=$(( (T0 + 1800) * 1000 )) # mid-hour: T0's hour is open
# put N [details]: one HTTP body of 1000 points of disk.m at T0 s + N*1000 + i ms (7 series, all
# in T0's hour for N < 3600; large bodies fill the disk in fewer requests); prints the status
# code, or with details the reply body
put() {
  local fmt='%{http_code}' out=/dev/null url="$B/api/put"
  [ -n "${2:-}" ] && { fmt=''; out=-; url="$B/api/put?details"; }
  python3 -c '
import json, sys
n = int(sys.argv[1])
print(json.dumps([{"metric": "disk.m", "timestamp": 1356998400000 + n * 1000 + i, "value": i,
                   "tags": {"host": "h%d" % (i % 7), "pad": "p" * 40}} for i in range(1000)]))
' "$1" | curl -s -o "$out" -w "$fmt" -m 20 -H 'Content-Type: application/json' --data-binary @- "$url"
}
stat_of() { # METRIC: its value in /api/stats
  curl -s -m 10 "$B/api/stats" |
    python3 -c 'import json,sys; print([int(x["value"]) for x in json.load(sys.stdin) if x["metric"] == sys.argv[1]][0])' "$1"
}
count() {
  curl -s -m 30 "$B/api/query?start=$((T0 - 1))&end=$((T0 + 3599))&ms=true&m=sum:disk.m%7Bhost=*%7D" |
    python3 -c 'import json,sys; print(sum(len(s["dps"]) for s in json.load(sys.stdin)))'
}

# run_mode HEAD: the whole scenario with tsd.storage.head.enable=HEAD on a fresh data directory
run_mode() {
  local head=$1 m="head=$1:"
  rm -rf "$MNT/data" "$MNT/filler"
  TSD_DATA=$MNT/data tsd_start --tsd.storage.head.enable="$head"
  B="http://127.0.0.1:$TSD_PORT"
  check_eq "$m a put on the empty disk" 204 "$(put 0)"
  if [ "$head" = true ]; then
    check_eq "$m the points are in the head (its open hour)" 1000 "$(stat_of tsd.head.points)"
  fi
  # fill the disk
  dd if=/dev/zero of="$MNT/filler" bs=1M count=64 >/dev/null 2>&1
  ok "$m filled the tmpfs ($(df -k "$MNT" | awk 'NR==2 {print $4}') KiB left)"
  local last_ok=0 failed="" fill_started=$SECONDS n code
  # bodies 1, 2, ... from one process (no process start per body) until one is refused
  local fill
  fill=$(python3 -c '
import json, sys, urllib.request, urllib.error
url, last = sys.argv[1] + "/api/put", 0
for n in range(1, 3000):
    body = json.dumps([{"metric": "disk.m", "timestamp": 1356998400000 + n * 1000 + i, "value": i,
                        "tags": {"host": "h%d" % (i % 7), "pad": "p" * 40}} for i in range(1000)])
    req = urllib.request.Request(url, body.encode(), {"Content-Type": "application/json"})
    try:
        code = urllib.request.urlopen(req, timeout=20).status
    except urllib.error.HTTPError as e:
        code = e.code
    if code != 204:
        print(last, n)
        sys.exit(0)
    last = n
print(last, "")
' "$B")
  last_ok=${fill%% *}
  failed=${fill#* }
  check "$m writes are refused once the disk is full (after $last_ok bodies)" test -n "$failed"
  sleep 1.5
  check_eq "$m still refused while it is full" "no" "$([ "$(put "$failed")" = 204 ] && echo yes || echo no)"
  local body
  body=$(put "$failed" details)
  check_contains "$m the refusal says why (no space)" "$body" "No space left on device"
  if [ "$head" = true ]; then
    check_contains "$m ... naming the head log" "$body" "head log $MNT/data/head"
    check_contains "$m the TSD's log names the head log's error" \
      "$(grep 'head log write error' "$TSD_LOG")" "No space left on device"
  fi
  # 40 more refused bodies within a few seconds: the TSD's failed-batch line is rate-limited (one
  # line per 10 s, the rest counted in the next), not one line per batch
  for n in $(seq 1 40); do put "$failed" >/dev/null; done
  local lines allowed
  lines=$(grep -c 'datapoints failed' "$TSD_LOG")
  # one line when the first batch failed, then at most one per 10 s since (plus one for the
  # interval in progress)
  allowed=$(( 2 + (SECONDS - fill_started) / 10 ))
  check "$m failed batches log at most $allowed lines over $((SECONDS - fill_started)) s, not one each (got $lines)" \
    test "$lines" -ge 1 -a "$lines" -le "$allowed"
  sleep 10.5 # past the interval: the next failure writes a line with the count of those left out
  put "$failed" >/dev/null
  check_contains "$m ... and a later line counts the ones left out" "$(grep 'datapoints failed' "$TSD_LOG" | tail -n +2)" "more like it in the last 10 s"
  local stats
  stats=$(curl -s -m 10 "$B/api/stats")
  check_contains "$m /api/stats shows the error state" "$stats" '"metric":"tsd.storage.error.active"'
  local active=0
  if [ "$head" = true ]; then
    # the head log's state holds until an append succeeds: still 1 seconds after the last put
    sleep 2
    check_eq "$m tsd.storage.error.active is 1 while the disk is full" 1 "$(stat_of tsd.storage.error.active)"
  else
    # the store lifts its log's full-disk error about every second to retry (storage/engine), so
    # it is read right after a refused put, a few times (a busy machine may take a second)
    for _ in $(seq 1 10); do
      put "$failed" >/dev/null
      active=$(stat_of tsd.storage.error.active)
      [ "$active" = 1 ] && break
    done
    check_eq "$m tsd.storage.error.active is 1 while the disk is full" 1 "$active"
  fi
  local failures
  failures=$(stat_of tsd.storage.error.failures)
  # the head log counts each refused append, so with the head on every refused put above is in
  # it (the store, with the head off, counts its background failures, not a full log's refusals)
  if [ "$head" = true ]; then
    check "$m tsd.storage.error.failures counts the refused puts ($failures >= 40)" \
      test "$failures" -ge 40
  fi
  # free the space: writes resume without a restart
  rm -f "$MNT/filler"
  code=""
  for _ in $(seq 1 50); do
    code=$(put "$failed")
    [ "$code" = 204 ] && break
    sleep 0.2
  done
  check_eq "$m writes resume once space is freed, without a restart" 204 "$code"
  # the store's own state clears by its background retry (about every second): poll
  active=1
  for _ in $(seq 1 50); do
    active=$(stat_of tsd.storage.error.active)
    [ "$active" = 0 ] && break
    sleep 0.2
  done
  check_eq "$m tsd.storage.error.active is 0 again" 0 "$active"
  if [ "$head" = true ]; then
    check "$m tsd.storage.error.recoveries counts it" test "$(stat_of tsd.storage.error.recoveries)" -ge 1
    check_contains "$m the TSD's log says the head log's error cleared" \
      "$(grep 'head log error cleared' "$TSD_LOG")" "puts accepted again"
    check_eq "$m nothing went to the store's data table (all in the head)" 0 \
      "$(curl -s -m 10 "$B/api/stats" | python3 -c 'import json,sys; print(sum(int(x["value"]) for x in json.load(sys.stdin) if x["metric"] == "tsd.storage.data.cells"))')"
  fi
  local want=$(( (last_ok + 2) * 1000 ))
  check_eq "$m every acknowledged point is readable" "$want" "$(count)"
  tsd_stop
  TSD_DATA=$MNT/data tsd_start --tsd.storage.head.enable="$head"
  B="http://127.0.0.1:$TSD_PORT"
  check_eq "$m and after a restart" "$want" "$(count)"
  tsd_stop
  TSD_PID=""
}

run_mode false
run_mode true
it_done
