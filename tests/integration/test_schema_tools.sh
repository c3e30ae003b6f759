#!/usr/bin/env bash
# test_schema_tools.sh - the schema tools on a real data directory: create-tables, mkmetric, uid
# (assign, lookups, grep, rename, delete), points written by the real TSD then read back by scan,
# and fsck on a deliberately damaged store (wrongly salted row, bad row key, undecodable cell,
# conflicting duplicate, orphaned and one-sided UID mappings, a low counter), before and after
# --fix.
source "$(dirname "$0")/lib.sh"

dir=$(it_tmpdir)
data=$dir/data
C() { "$CTSDB" "$@"; }

# ---- help and usage errors --------------------------------------------------------------------
for cmd in create-tables uid mkmetric scan fsck; do
  out=$(C "$cmd" --help)
  check_eq "$cmd --help exits 0" 0 $?
  check_contains "$cmd --help shows usage" "$out" "usage: ctsdb $cmd"
  err=$(C "$cmd" --no-such-option 2>&1 >/dev/null)
  check_eq "$cmd rejects an unknown option with exit 2" 2 "$(C "$cmd" --no-such-option >/dev/null 2>&1; echo $?)"
  check_contains "$cmd names the bad option" "$err" "--no-such-option"
done
err=$(C create-tables --data "$data" --salt-width 9 2>&1)
check_contains "create-tables explains a bad salt width" "$err" "tsd.storage.salt.width"
err=$(C scan --data "$dir/none" 1h-ago m 2>&1)
check_eq "scan of a missing data directory fails" 1 "$(C scan --data "$dir/none" 1h-ago m >/dev/null 2>&1; echo $?)"

# ---- create-tables ----------------------------------------------------------------------------
out=$(C create-tables --data "$data" --salt-width 1 --salt-buckets 4 --ttl 31536000)
check_contains "create-tables pre-splits one region per bucket" "$out" "tsdb: 4 regions"
check_contains "create-tables creates three tables" "$out" "3 tables created"
out=$(C create-tables --data "$data" --salt-width 1 --salt-buckets 4)
check_contains "create-tables is idempotent" "$out" "0 tables created, 3 already existed"
out=$(C shell --data "$data" -e "describe 'tsdb-uid'" 2>&1)
check_contains "tsdb-uid has family id" "$out" "NAME => 'id'"
check_contains "tsdb-uid has family name" "$out" "NAME => 'name'"

# ---- uids -------------------------------------------------------------------------------------
out=$(C mkmetric --data "$data" sys.cpu.user)
check_eq "mkmetric assigns the first metric uid" "metrics sys.cpu.user: [0, 0, 1]" "$out"
err=$(C mkmetric --data "$data" sys.cpu.user 2>&1)
check_contains "mkmetric refuses an existing name" "$err" "Name already exists with UID: 000001"
out=$(C uid --data "$data" assign tagk host dc)
check_contains "uid assign gives tagk uids" "$out" "tagk dc: [0, 0, 2]"
err=$(C uid --data "$data" assign tagv "bad name" 2>&1)
check_contains "uid assign checks names" "$err" "illegal character"
out=$(C uid --data "$data" metrics sys.cpu.user)
check_eq "uid looks a name up" "metrics sys.cpu.user: [0, 0, 1]" "$out"
out=$(C uid --data "$data" metrics 000001)
check_eq "uid looks a hex uid up" "metrics sys.cpu.user: [0, 0, 1]" "$out"
out=$(C uid --data "$data" grep 'cpu')
check_eq "uid grep finds by regex" "metrics sys.cpu.user: [0, 0, 1]" "$out"
C uid --data "$data" assign metrics old.name >/dev/null
out=$(C uid --data "$data" rename metrics old.name new.name)
check_eq "uid rename keeps the uid" "metrics new.name: [0, 0, 2]" "$out"
check_eq "the old name is gone" 1 "$(C uid --data "$data" metrics old.name >/dev/null 2>&1; echo $?)"
C uid --data "$data" delete metrics new.name >/dev/null
check_eq "uid delete removes the name" 1 "$(C uid --data "$data" metrics new.name >/dev/null 2>&1; echo $?)"

# ---- points through the TSD, read back by scan ------------------------------------------------
TSD_DATA=$data tsd_start --tsd.storage.salt.width=1 --tsd.storage.salt.buckets=4
exec 3<>"/dev/tcp/127.0.0.1/$TSD_PORT"
for i in 0 1 2 3 4; do
  echo "put sys.cpu.user $((1356998400 + i * 10)) $((i * 3)) host=web01 dc=eu" >&3
  echo "put sys.cpu.user $((1356998400 + i * 10)) $i.5 host=web02 dc=eu" >&3
done
echo "version" >&3
read -r -t 10 line <&3
check_contains "the TSD answers after the puts" "$line" "ctsdb"
exec 3>&-
# an unknown name is the same failure, with the same exit status, through the TSD and on the
# data directory (the directory is read once the TSD has let it go)
C query --host "127.0.0.1:$TSD_PORT" 1356998000 1356999999 sum no.such.metric >/dev/null 2>"$dir/q.err"
check_eq "query --host: an unknown metric exits 2" 2 $?
check_contains "... naming it" "$(cat "$dir/q.err")" "No such name for 'metrics': 'no.such.metric'"
tsd_stop
C query --data "$data" 1356998000 1356999999 sum no.such.metric >/dev/null 2>"$dir/q.err"
check_eq "query --data: an unknown metric exits 2 as well" 2 $?
check_contains "... naming it" "$(cat "$dir/q.err")" "No such name for 'metrics': 'no.such.metric'"
out=$(C scan --data "$data" 2013/01/01 1356999999 sys.cpu.user)
check_contains "scan counts rows and points" "$out" "2 rows, 10 points"
check_contains "scan decodes cells" "$out" "1356998410000	3	(2013-01-01T00:00:10.000Z)	int"
# the query layer's time parser: OpenTSDB's "yyyy/MM/dd HH:mm:ss" form and ms end times too
out=$(C scan --data "$data" "2013/01/01 00:00:00" 1356999999000 sys.cpu.user)
check_contains "scan reads times as /api/query does" "$out" "2 rows, 10 points"
err=$(C scan --data "$data" 13:00-ago sys.cpu.user 2>&1)
check_contains "scan refuses a bad time" "$err" "invalid start time '13:00-ago'"
out=$(C scan --data "$data" --import 1356998400 1356999999 sum sys.cpu.user host=web02)
check_eq "scan --import prints import lines, filtered by tag" "sys.cpu.user 1356998400 0.5 host=web02 dc=eu
sys.cpu.user 1356998410 1.5 host=web02 dc=eu
sys.cpu.user 1356998420 2.5 host=web02 dc=eu
sys.cpu.user 1356998430 3.5 host=web02 dc=eu
sys.cpu.user 1356998440 4.5 host=web02 dc=eu" "$out"
err=$(C scan --data "$data" 1356998400 no.such.metric 2>&1)
check_contains "scan names an unknown metric" "$err" "No such name for 'metrics': 'no.such.metric'"
out=$(C fsck --data "$data")
check_contains "fsck finds a clean store clean" "$out" "fsck: 0 problems found"

# ---- damage, then fsck ------------------------------------------------------------------------
# the row of host=web01 as \x escapes, from scan's "[b0, b1, ...] metric ..." line
rowline=$(C scan --data "$data" 2013/01/01 1356999999 sys.cpu.user host=web01 | head -1)
bytes=$(echo "$rowline" | sed 's/^\[\([0-9, ]*\)\].*/\1/' | tr -d ' ' | tr ',' ' ')
set -- $bytes
salt=$1
shift
rest=""
for b in "$@"; do rest="$rest$(printf '\\x%02X' "$b")"; done
good="$(printf '\\x%02X' "$salt")$rest"
wrong="$(printf '\\x%02X' $(((salt + 1) % 4)))$rest"
# a copy of a point in the wrong bucket; a conflicting ms duplicate of 10 s (value 42); a float
# flag with a 3-byte value; a key too short to decode; a reverse uid with no forward; a forward
# tagv with no reverse (and beyond the tagv counter); the orphan's id is beyond the metric counter
C shell --data "$data" \
  -e "put 'tsdb', \"$wrong\", \"t:\\x03\\x20\", \"\\x07\"" \
  -e "put 'tsdb', \"$good\", \"t:\\xF0\\x09\\xC4\\x00\", \"\\x2A\"" \
  -e "put 'tsdb', \"$good\", \"t:\\x00\\x2B\", \"\\x01\\x02\\x03\"" \
  -e "put 'tsdb', \"\\x00\\x01\", \"t:\\x00\\x00\", \"\\x01\"" \
  -e "put 'tsdb-uid', \"\\x00\\x00\\x09\", 'name:metrics', 'ghost'" \
  -e "put 'tsdb-uid', 'lonely', 'id:tagv', \"\\x00\\x00\\x07\"" >/dev/null 2>&1
check_eq "the damage was written" 0 $?
out=$(C fsck --data "$data")
rc=$?
check_eq "fsck fails on a damaged store" 1 "$rc"
check_contains "fsck reports the wrongly salted row" "$out" "its series belongs elsewhere"
check_contains "fsck reports the bad row key" "$out" "bad row key 0001"
check_contains "fsck reports the bad cell" "$out" "value length does not match"
check_contains "fsck reports the conflicting duplicate" "$out" "duplicate timestamp(s) with different values"
check_contains "fsck reports the orphaned reverse uid" "$out" "uid metrics 000009 -> 'ghost' is orphaned"
check_contains "fsck reports the forward uid without reverse" "$out" "uid tagv 'lonely' -> 000007 has no reverse mapping"
check_contains "fsck reports the low counter" "$out" "uid counter of tagv is 3 but id 7 is in use"
check_contains "fsck reports the metric counter below the orphan's id" "$out" "uid counter of metrics is 2 but id 9 is in use"
check_contains "fsck counts every problem" "$out" "fsck: 8 problems found, 0 fixed"
out=$(C fsck --data "$data" --fix)
check_eq "fsck --fix repairs everything" 0 $?
check_contains "fsck --fix says what it did" "$out" "8 problems found, 8 fixed"
out=$(C fsck --data "$data")
check_eq "the repaired store is clean" 0 $?
check_contains "no problem is left" "$out" "fsck: 0 problems found"
out=$(C scan --data "$data" --import 1356998400 1356999999 sys.cpu.user host=web01)
check_contains "the moved point is in the right row" "$out" "sys.cpu.user 1356998450 7 host=web01 dc=eu"
check_contains "the duplicate kept the latest write" "$out" "sys.cpu.user 1356998410000 42 host=web01 dc=eu"
check_eq "the old value of the duplicate is gone" "" "$(echo "$out" | grep ' 1356998410 3 ')"
out=$(C uid --data "$data" tagv 000007)
check_eq "the one-sided uid got its reverse" "tagv lonely: [0, 0, 7]" "$out"
it_done
