#!/usr/bin/env bash
# test_bigtable_shell.sh - `ctsdb shell --backend bigtable` against Google's Bigtable emulator:
# create with families, GC attributes and splits, put/get/scan both ways, describe, incr,
# namespaces with configuration, delete (latest, one version, family version), deleteall,
# truncate, drop; two shell processes sharing one store see each other's
# writes and never hand out one counter value twice.
#
# The emulator runs on 127.0.0.1 port 0 (its "running on" line gives the port) and is stopped by
# PID: SIGINT, then SIGKILL after 5 s. Without the emulator (or without a BIGTABLE=1 build) the
# script prints a SKIP line; with CI=true a missing emulator is a failure.
source "$(dirname "$0")/lib.sh"

emu_available "bigtable shell tests" || it_done
emu_start || it_done

bt() { "$CTSDB" shell --backend bigtable "$@" 2>&1 | grep -v '^Took '; }

out=$(bt -e "create 't1', {NAME => 'f', VERSIONS => 3, TTL => '18000', MIN_VERSIONS => 1}, 'g', {SPLITS => ['m', 'c']}")
check_eq "create" "Created table t1" "$out"
out=$(bt -e "put 't1', 'r1', 'f:a', 'v1', 1000" -e "put 't1', 'r1', 'f:a', 'v2', 2000" \
  -e "put 't1', 'r2', 'g:b', 'w', 1500" -e "put 't1', 'x9', 'f:a', 'z', 1000")
check_eq "puts print nothing" "" "$out"
out=$(bt --now 3000 -e "scan 't1', {VERSIONS => 3}")
check_eq "scan forward with versions" "ROW  COLUMN+CELL
 r1 column=f:a, timestamp=2000, value=v2
 r1 column=f:a, timestamp=1000, value=v1
 r2 column=g:b, timestamp=1500, value=w
 x9 column=f:a, timestamp=1000, value=z
3 row(s)" "$out"
out=$(bt --now 3000 -e "scan 't1', {REVERSED => true, STARTROW => 'r2', LIMIT => 2}")
check_eq "scan reversed with limit" "ROW  COLUMN+CELL
 r2 column=g:b, timestamp=1500, value=w
 r1 column=f:a, timestamp=2000, value=v2
2 row(s)" "$out"
# TTL 18000 s: at now = 18000*1000 + 1500 the version at 1000 is expired, 2000 is not; with
# MIN_VERSIONS 1 the newest version of a column stays however old it is.
out=$(bt --now 18001500 -e "get 't1', 'r1', {COLUMN => 'f:a', VERSIONS => 3}")
check_eq "TTL applies at read time" "COLUMN  CELL
 f:a timestamp=2000, value=v2
1 row(s)" "$out"
out=$(bt --now 99999999 -e "get 't1', 'r1', {COLUMN => 'f:a', VERSIONS => 3}")
check_eq "MIN_VERSIONS keeps the newest version" "COLUMN  CELL
 f:a timestamp=2000, value=v2
1 row(s)" "$out"
out=$(bt -e "describe 't1'")
check_contains "describe shows the GC attributes" "$out" \
  "{NAME => 'f', BLOOMFILTER => 'ROW', IN_MEMORY => 'false', VERSIONS => '3', KEEP_DELETED_CELLS => 'FALSE', DATA_BLOCK_ENCODING => 'NONE', COMPRESSION => 'NONE', TTL => '18000 SECONDS (5 HOURS)', MIN_VERSIONS => '1'"
out=$(bt -e "get_splits 't1'")
check_eq "split keys" "Total number of splits = 3
c
m" "$out"
out=$(bt -e "put 't1', 'r3', 'q:a', 'v'" 2>&1)
check_contains "unknown family is an error" "$out" "Unknown column family"

# the store's place comes from the TSD's keys: --tsd.storage.bigtable.instance=X works on table
# ids of instance X only (the emulator keeps instances apart), with --backend or the backend key
out=$(bt --tsd.storage.bigtable.instance=other -e "create 'tinst', 'f'" -e "list")
check_eq "a table created in instance 'other'" "Created table tinst
TABLE
tinst
1 row(s)" "$out"
out=$(bt -e "list")
check_eq "the default instance does not hold it" "TABLE
t1
1 row(s)" "$out"
out=$("$CTSDB" shell --tsd.storage.backend=bigtable --tsd.storage.bigtable.instance=other \
  -e "list" 2>&1 | grep -v '^Took ')
check_eq "tsd.storage.backend=bigtable finds it in instance 'other'" "TABLE
tinst
1 row(s)" "$out"
cdir=$(it_tmpdir)
IT_DIRS+=("$cdir")
cfg=$cdir/bt.conf
printf 'tsd.storage.backend = bigtable\ntsd.storage.bigtable.instance = other\n' >"$cfg"
out=$("$CTSDB" shell --config "$cfg" -e "disable 'tinst'" -e "drop 'tinst'" -e "list" 2>&1 | grep -v '^Took ')
check_contains "a --config file places the shell too" "$out" "0 row(s)"

# two processes share the store: counters never repeat
dir=$(it_tmpdir)
IT_DIRS+=("$dir")
for p in 1 2; do
  (for i in $(seq 1 20); do bt -e "incr 't1', 'ctr', 'f:n', 1"; done >"$dir/incr$p.txt") &
done
wait_ok=1
for _ in $(seq 1 600); do
  [ "$(cat "$dir"/incr*.txt 2>/dev/null | grep -c 'COUNTER VALUE')" -ge 40 ] && break
  sleep 0.1
done
values=$(cat "$dir"/incr*.txt | sed -n 's/COUNTER VALUE = //p' | sort -n | uniq | wc -l)
check_eq "40 increments from two processes give 40 distinct values" 40 "$values"
out=$(bt -e "get_counter 't1', 'ctr', 'f:n'")
check_eq "the counter ends at 40" "COUNTER VALUE = 40" "$out"

out=$(bt -e "create_namespace 'ns1'" -e "create 'ns1:t2', 'f'" -e "list" -e "list_namespace")
check_eq "namespaces and list" "Created table ns1:t2
TABLE
ns1:t2
t1
2 row(s)
NAMESPACE
default
hbase
ns1
3 row(s)" "$out"
out=$(bt -e "drop_namespace 'ns1'" 2>&1)
check_contains "a namespace with tables cannot be dropped" "$out" "ERROR"
out=$(bt -e "disable 'ns1:t2'" -e "drop 'ns1:t2'" -e "drop_namespace 'ns1'" -e "list_namespace")
check_eq "drop table and namespace" "NAMESPACE
default
hbase
2 row(s)" "$out"

out=$(bt -e "create_namespace 'ns2', {'owner' => 'ops', 'tier' => 'gold'}" -e "describe_namespace 'ns2'" -e "drop_namespace 'ns2'")
check_eq "namespace configuration kept and described" "DESCRIPTION
{NAME => 'ns2', owner => 'ops', tier => 'gold'}
1 row(s)" "$out"

# the shell's deletes (docs/storage-contract.md, "How markers are produced"): latest version, one
# version, family version, family <= T
out=$(bt -e "create 'd1', {NAME => 'f', VERSIONS => 5}, 'g'" \
  -e "put 'd1', 'r', 'f:a', 'a1', 100" -e "put 'd1', 'r', 'f:a', 'a2', 200" \
  -e "put 'd1', 'r', 'f:a', 'a3', 300" -e "put 'd1', 'r', 'f:b', 'b2', 200" \
  -e "put 'd1', 'r', 'f:c', 'c4', 400" -e "put 'd1', 'r', 'g:x', 'x2', 200" \
  -e "delete 'd1', 'r', 'f:a'" -e "delete 'd1', 'r', 'f:a', 100" -e "delete 'd1', 'r', 'f', 200" \
  -e "scan 'd1', {VERSIONS => 5}")
check_eq "delete latest, one version and a family version" "Created table d1
ROW  COLUMN+CELL
 r column=f:c, timestamp=400, value=c4
 r column=g:x, timestamp=200, value=x2
1 row(s)" "$out"
out=$(bt -e "put 'd1', 'r', 'f:a', 'a5', 500" -e "deleteall 'd1', 'r', 'f', 450" -e "scan 'd1'" \
  -e "disable 'd1'" -e "drop 'd1'")
check_eq "deleteall of a family <= T spares newer cells" "ROW  COLUMN+CELL
 r column=f:a, timestamp=500, value=a5
 r column=g:x, timestamp=200, value=x2
1 row(s)" "$out"

out=$(bt -e "deleteall 't1', 'r1'" -e "count 't1'")
check_eq "deleteall removes the row" "3 row(s)" "$out"
out=$(bt -e "truncate 't1'" -e "count 't1'" -e "get_splits 't1'")
check_contains "truncate empties the table" "$out" "0 row(s)"
check_contains "truncate drops the split keys" "$out" "Total number of splits = 1"
out=$(bt -e "drop 't1'" 2>&1)
check_contains "drop needs a disabled table" "$out" "Disable it first"
out=$(bt -e "disable 't1'" -e "drop 't1'" -e "exists 't1'")
check_eq "drop" "Table t1 does not exist" "$out"
for cmd in "snapshot 't1', 's'" "list_snapshots" "restore_snapshot 's'" "clone_snapshot 's', 'c'" \
  "delete_snapshot 's'"; do
  out=$(bt -e "$cmd")
  check_eq "$cmd is refused on Bigtable" \
    "ERROR: snapshots are not supported on the bigtable backend (use Bigtable backups)" "$out"
done

emu_stop
it_done
