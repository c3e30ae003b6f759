#!/usr/bin/env bash
# test_tsd_diskfull.sh - a full disk is an error that clears when its cause does (issue #21):
# a TSD whose data directory is on a small tmpfs refuses writes once the disk is full, shows the
# state in /api/stats, and takes writes again without a restart once space is freed; every
# acknowledged point is then readable, also after a restart. Needs `mount -t tmpfs` (root);
# without it the script says so and passes nothing ("skip"). The ingest head is off here: this
# is the store's error state (the head log's write failures refuse puts but are not counted in
# tsd.storage.error.*: docs/head.md "Limits").
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

TSD_DATA=$MNT/data tsd_start --tsd.storage.head.enable=false
B="http://127.0.0.1:$TSD_PORT"
T0=1356998400
# put N: one HTTP body of 200 points of disk.m at T0 + N*200 .. ; prints the status code
put() {
  python3 -c '
import json, sys
n = int(sys.argv[1])
print(json.dumps([{"metric": "disk.m", "timestamp": 1356998400 + n * 200 + i, "value": i,
                   "tags": {"host": "h%d" % (i % 7), "pad": "p" * 40}} for i in range(200)]))
' "$1" | curl -s -o /dev/null -w '%{http_code}' -m 20 -H 'Content-Type: application/json' --data-binary @- "$B/api/put"
}
check_eq "a put on the empty disk" 204 "$(put 0)"
# fill the disk
dd if=/dev/zero of="$MNT/filler" bs=1M count=64 >/dev/null 2>&1
ok "filled the tmpfs ($(df -k "$MNT" | awk 'NR==2 {print $4}') KiB left)"
last_ok=0
failed=""
fill_started=$SECONDS
for n in $(seq 1 3000); do
  code=$(put "$n")
  if [ "$code" != 204 ]; then failed=$n; break; fi
  last_ok=$n
done
check "writes are refused once the disk is full (after $last_ok bodies)" test -n "$failed"
sleep 1.5
check_eq "still refused while it is full" "no" "$([ "$(put "$failed")" = 204 ] && echo yes || echo no)"
# 40 more refused bodies within a few seconds: the TSD's failed-batch line is rate-limited (one
# line per 10 s, the rest counted in the next), not one line per batch
for n in $(seq 1 40); do put "$failed" >/dev/null; done
lines=$(grep -c 'datapoints failed' "$TSD_LOG")
# one line when the first batch failed, then at most one per 10 s since (plus one for the
# interval in progress)
allowed=$(( 2 + (SECONDS - fill_started) / 10 ))
check "failed batches log at most $allowed lines over $((SECONDS - fill_started)) s, not one each (got $lines)" \
  test "$lines" -ge 1 -a "$lines" -le "$allowed"
sleep 10.5 # past the interval: the next failure writes a line with the count of those left out
put "$failed" >/dev/null
check_contains "... and a later line counts the ones left out" "$(grep 'datapoints failed' "$TSD_LOG" | tail -n +2)" "more like it in the last 10 s"
stats=$(curl -s -m 10 "$B/api/stats")
check_contains "/api/stats shows the error state" "$stats" '"metric":"tsd.storage.error.active"'
active=$(python3 -c 'import json,sys; print([int(x["value"]) for x in json.load(sys.stdin) if x["metric"] == "tsd.storage.error.active"][0])' <<<"$stats")
check_eq "tsd.storage.error.active is 1 while the disk is full" 1 "$active"
# free the space: writes resume without a restart
rm -f "$MNT/filler"
code=""
for _ in $(seq 1 50); do
  code=$(put "$failed")
  [ "$code" = 204 ] && break
  sleep 0.2
done
check_eq "writes resume once space is freed, without a restart" 204 "$code"
stats=$(curl -s -m 10 "$B/api/stats")
active=$(python3 -c 'import json,sys; print([int(x["value"]) for x in json.load(sys.stdin) if x["metric"] == "tsd.storage.error.active"][0])' <<<"$stats")
check_eq "tsd.storage.error.active is 0 again" 0 "$active"
want=$(( (last_ok + 2) * 200 ))
count() {
  curl -s -m 30 "$B/api/query?start=$((T0 - 1))&end=$((T0 + 700000))&m=sum:disk.m%7Bhost=*%7D" |
    python3 -c 'import json,sys; print(sum(len(s["dps"]) for s in json.load(sys.stdin)))'
}
check_eq "every acknowledged point is readable" "$want" "$(count)"
tsd_stop
TSD_DATA=$MNT/data tsd_start --tsd.storage.head.enable=false
B="http://127.0.0.1:$TSD_PORT"
check_eq "and after a restart" "$want" "$(count)"
tsd_stop
TSD_PID=""
it_done
