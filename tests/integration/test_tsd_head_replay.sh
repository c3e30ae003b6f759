#!/usr/bin/env bash
# test_tsd_head_replay.sh - the ingest head's backfill across a kill -9: hours handed off in the
# background as their series moved on (hour cells), then more points of the first (a late point,
# a rewrite), kill -9 while
# the head log still holds the hour's records, restart: the replay rebuilds the hour from those
# records and its hand-off merges it with the stored row, so every acknowledged point reads back
# once with its latest value and `ctsdb fsck` finds no duplicate timestamp. Also: a rewrite of a
# point the head holds (same timestamp, new value) answers as a head-off TSD (the latest write),
# before and after the hand-off. See docs/head.md "Replay".
source "$(dirname "$0")/lib.sh"

H=1356998400                         # 2013-01-01T00:00:00Z, hour 0 of the stream
NOW_MS=$(((H + 10 * 86400) * 1000))  # every hour of the stream closed long ago
BF=(--tsd.storage.head.enable=true --tsd.storage.head.backfill_idle_ms=600000)
work=$(it_tmpdir)

# series b holds hour 0 (so the head log keeps every record from hour 0's first on); series a
# fills hours 0-2 and opens hour 3 (its hours 0-2 go in the background as it moves on: three hour
# cells), then gets a late point of hour 0 (a single cell: its series handed the hour off) and a
# rewrite of one of hour 0's
python3 - "$H" "$work" <<'EOF'
import sys
H, work = int(sys.argv[1]), sys.argv[2]
lines = ["put rp.m %d 1 host=b" % H]
for hour in range(3):
    for k in range(10):
        t = H + hour * 3600 + k * 60
        lines.append("put rp.m %d %d host=a" % (t, hour * 100 + k))
lines.append("put rp.m %d 300 host=a" % (H + 3 * 3600))
lines.append("version")  # a sync point (the hand-offs are waited for after it)
open(work + "/part1.telnet", "w").write("\n".join(lines) + "\n")
lines = ["put rp.m %d 42 host=a" % (H + 30 * 60),   # late: after the hand-off of hour 0
         "put rp.m %d 77 host=a" % (H + 5 * 60),    # a rewrite of a point of the handed-off hour
         "version"]
open(work + "/part2.telnet", "w").write("\n".join(lines) + "\n")
EOF

answer() { # PORT: every point of rp.m, by host: "host ts=v ..." lines
  curl -s "http://127.0.0.1:$1/api/query?start=$H&end=$((H + 4 * 3600))&m=none:rp.m%7Bhost=*%7D" |
    python3 -c 'import json, sys
r = json.load(sys.stdin)
for x in sorted(r, key=lambda x: x["tags"]["host"]):
    print(x["tags"]["host"], " ".join("%s=%g" % (t, v) for t, v in sorted(x["dps"].items())))'
}

# the reference: the same writes with the head off
CTSDB_NOW_MS=$NOW_MS tsd_start --tsd.storage.head.enable=false
tsd_talk <"$work/part1.telnet" >/dev/null
tsd_talk <"$work/part2.telnet" >/dev/null
want=$(answer "$TSD_PORT")
check_contains "reference: the rewrite's value is read (the latest write)" "$want" "$((H + 300))=77"
check_eq "reference: 33 points, one a timestamp" 33 "$(echo "$want" | tr ' ' '\n' | grep -c =)"
tsd_stop
unset TSD_DATA

# backfill: hours 0-2 of a go in the background, then the late point and the rewrite, kill -9
CTSDB_NOW_MS=$NOW_MS tsd_start "${BF[@]}"
data=$TSD_DATA
check_contains "part 1 synced" "$(tsd_talk <"$work/part1.telnet")" "net.opentsdb"
check_eq "a's hours 0-2 went in the background: three hour cells" 3 \
  "$(tsd_stat_wait "$TSD_PORT" "tsd.storage.data.cells type=hour" 3)"
check_contains "part 2 synced" "$(tsd_talk <"$work/part2.telnet")" "net.opentsdb"
check_eq "the late point and the rewrite of the handed-off hour went as single cells" 2 \
  "$(tsd_stat "$TSD_PORT" "tsd.storage.data.cells type=point")"
check_eq "before the kill: the answer of a head-off TSD" "$want" "$(answer "$TSD_PORT")"
kill -KILL "$TSD_PID"
wait "$TSD_PID" 2>/dev/null

# restart: the replay rebuilds a's hour 0 (its records are unreleased: b holds hour 0) with the
# late point and the rewrite, and the start-up hand-off merges it with the row
TSD_DATA=$data CTSDB_NOW_MS=$NOW_MS tsd_start "${BF[@]}"
check_eq "after kill -9 and replay: the answer of a head-off TSD" "$want" "$(answer "$TSD_PORT")"
check_contains "the start-up hand-off merged the replayed hours with their rows" \
  "$(cat "$TSD_LOG")" "of them merged with their row after a replay"
tsd_stop
check_eq "clean stop" 0 "$?"
out=$("$CTSDB" fsck --data "$data" 2>&1)
check_contains "fsck: no duplicate timestamp" "$out" "0 rows with duplicates, 0 rows with conflicting duplicates"
check_contains "fsck: 33 points in the store, each once" "$out" " 33 points checked"
TSD_DATA=$data CTSDB_NOW_MS=$NOW_MS tsd_start "${BF[@]}"
check_eq "after the hand-off: the answer of a head-off TSD" "$want" "$(answer "$TSD_PORT")"
tsd_stop
unset TSD_DATA

# an idle hand-off (which a replay does not repeat): a's hour 0 goes idle while b keeps hour 0
# (and so the log of hour 0) busy, then a late point and a rewrite of a's hour 0, kill -9: the
# replay rebuilds a's hour 0 with both, a different point set than the stored cell's (and another
# value at one timestamp, which compaction would not merge), merged at the start-up hand-off
unset TSD_DATA
CTSDB_NOW_MS=$NOW_MS tsd_start --tsd.storage.head.enable=true --tsd.storage.head.backfill_idle_ms=3000
data=$TSD_DATA
python3 - "$H" <<'EOF2' | tsd_talk >/dev/null
import sys
H = int(sys.argv[1])
print("\n".join("put rp.i %d %d host=a" % (H + k * 60, k) for k in range(10)))
print("put rp.i %d 1 host=b\nversion" % H)
EOF2
cells=""
# (at least 200 x 0.05 s: the hand-off thread's check, once a second, sees a's hour idle 3 s
# after its last point however fast the puts go)
for k in $(seq 1 200); do # b's hour 0 touched (well within 3 s) until a's hour 0 went idle
  printf 'put rp.i %d %d host=b\nversion\n' $((H + k)) "$k" | tsd_talk >/dev/null
  cells=$(tsd_stat "$TSD_PORT" "tsd.storage.data.cells type=hour")
  [ "$cells" != 0 ] && break
  sleep 0.05
done
check_eq "a's hour 0 went idle (one hour cell) while b's stays" 1 "$cells"
printf 'put rp.i %d 42 host=a\nput rp.i %d 99 host=a\nput rp.i %d 61 host=b\nversion\n' \
  $((H + 30 * 60 + 1)) $((H + 5 * 60)) $((H + 61)) | tsd_talk >/dev/null
kill -KILL "$TSD_PID"
wait "$TSD_PID" 2>/dev/null
TSD_DATA=$data CTSDB_NOW_MS=$NOW_MS tsd_start --tsd.storage.head.enable=true
n=$(curl -s "http://127.0.0.1:$TSD_PORT/api/query?start=$H&end=$((H + 3600))&m=none:rp.i%7Bhost=a%7D" |
  python3 -c 'import json, sys; d = json.load(sys.stdin)[0]["dps"]; print(len(d), d[str(int(sys.argv[1]) + 300)])' "$H")
check_eq "after kill -9 and replay: a's 11 points, the rewrite's value" "11 99" "$n"
tsd_stop
out=$("$CTSDB" fsck --data "$data" 2>&1)
check_contains "idle case, fsck: no duplicate timestamp" "$out" "0 rows with duplicates, 0 rows with conflicting duplicates"
unset TSD_DATA

# a rewrite of a point the head holds: taken, replacing it (the latest write wins, as without
# the head), read at once and after the hand-off (the new values have the old ones' widths: with
# the clock pinned, two single cells of one timestamp share a cell time, and of two qualifiers
# the store path would keep the later-sorting one, not the later write)
CTSDB_NOW_MS=$NOW_MS tsd_start "${BF[@]}"
data=$TSD_DATA
tsd_talk <"$work/part1.telnet" >/dev/null
printf 'put rp.m %d 255 host=a\nput rp.m %d 56 host=b\nversion\n' $((H + 3 * 3600)) "$H" |
  tsd_talk >/dev/null
check_eq "rewrites of held points: no single cell" 0 \
  "$(tsd_stat "$TSD_PORT" "tsd.storage.data.cells type=point")"
held=$(answer "$TSD_PORT")
check_contains "the rewrite of a held point is read (a)" "$held" "$((H + 3 * 3600))=255"
check_contains "the rewrite of a held point is read (b)" "$held" "b $H=56"
tsd_stop
TSD_DATA=$data CTSDB_NOW_MS=$NOW_MS tsd_start --tsd.storage.head.enable=false
check_eq "after the hand-off: the same answer" "$held" "$(answer "$TSD_PORT")"
tsd_stop
unset TSD_DATA
CTSDB_NOW_MS=$NOW_MS tsd_start --tsd.storage.head.enable=false
tsd_talk <"$work/part1.telnet" >/dev/null
printf 'put rp.m %d 255 host=a\nput rp.m %d 56 host=b\nversion\n' $((H + 3 * 3600)) "$H" |
  tsd_talk >/dev/null
check_eq "the same writes with the head off: the same answer" "$held" "$(answer "$TSD_PORT")"
tsd_stop
unset TSD_DATA

tsd_logs_check
it_done
