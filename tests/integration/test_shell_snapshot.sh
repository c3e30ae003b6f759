#!/usr/bin/env bash
# test_shell_snapshot.sh - the shell's snapshot commands (snapshot, list_snapshots,
# restore_snapshot, clone_snapshot, delete_snapshot) on the embedded store, with exact output:
# restore gives back the cells of snapshot time (needs a disabled table, leaves it disabled),
# clone makes an independent table, delete removes only the snapshot, and the errors (bad names,
# taken names, unknown snapshots and tables, wrong arguments) change nothing.
source "$(dirname "$0")/lib.sh"
IT_ROOT_TMP=$(mktemp -d "${TMPDIR:-/tmp}/ctsdb-it-XXXXXX")
IT_DIRS+=("$IT_ROOT_TMP")
data=$IT_ROOT_TMP/data
sh() { "$CTSDB" shell --data "$data" --now 1700000000000 "$@" 2>&1 | grep -v '^Took '; }

sh -e "create 't', {NAME => 'f', VERSIONS => 2}, SPLITS => ['m']" -e "put 't', 'a', 'f:q', 'a1'" \
  -e "put 't', 'z', 'f:q', 'z1'" -e "flush 't'" -e "put 't', 'b', 'f:q', 'b1'" >/dev/null
out=$(sh -e "snapshot 't', 'snap1'" -e "list_snapshots")
check_eq "snapshot and list_snapshots" "SNAPSHOT  TABLE + CREATION TIME
snap1  t (2023-11-14 22:13:20 +0000)
1 row(s)" "$out"
sh -e "put 't', 'a', 'f:q', 'a2', 1700000000001" -e "deleteall 't', 'z'" -e "put 't', 'c', 'f:q', 'c1'" \
  -e "major_compact 't'" >/dev/null
out=$(sh -e "restore_snapshot 'snap1'")
check_eq "restore needs a disabled table" "ERROR: Table default:t is enabled. Disable it first." "$out"
out=$(sh -e "disable 't'" -e "restore_snapshot 'snap1'" -e "is_enabled 't'" -e "enable 't'" -e "scan 't'")
check_eq "restore gives the cells of snapshot time and leaves the table disabled" "false
ROW  COLUMN+CELL
 a column=f:q, timestamp=1700000000000, value=a1
 b column=f:q, timestamp=1700000000000, value=b1
 z column=f:q, timestamp=1700000000000, value=z1
3 row(s)" "$out"
out=$(sh -e "get_splits 't'")
check_contains "restore gives back the regions" "$out" "Total number of splits = 2"
out=$(sh -e "clone_snapshot 'snap1', 'copy'" -e "put 'copy', 'x', 'f:q', 'x1'" -e "count 'copy'" -e "count 't'" \
  -e "describe 'copy'")
check_contains "the clone has the snapshot's rows plus its own" "$out" "4 row(s)"
check_contains "the source is untouched" "$out" "3 row(s)"
check_contains "the clone has the snapshot's families" "$out" "{NAME => 'f', BLOOMFILTER => 'ROW', IN_MEMORY => 'false', VERSIONS => '2',"
out=$(sh -e "clone_snapshot 'snap1', 'copy'")
check_eq "clone onto an existing table" "ERROR: Table already exists: default:copy!" "$out"
out=$(sh -e "snapshot 't', 'snap1'")
check_eq "a taken name" "ERROR: Snapshot 'snap1' already exists" "$out"
out=$(sh -e "snapshot 'nosuch', 'snap2'")
check_eq "an unknown table" "ERROR: Table default:nosuch does not exist." "$out"
out=$(sh -e "snapshot 't', 'bad/name'")
check_eq "a bad name" \
  "ERROR: illegal character in snapshot name 'bad/name' at 3 (allowed: letters, digits, '_', '-', '.')" "$out"
out=$(sh -e "snapshot 't'")
check_eq "wrong arguments" "ERROR: wrong arguments for 'snapshot'. Usage: snapshot 't', 'snapshot_name'" "$out"
out=$(sh -e "snapshot 'copy', 'snap2'" -e "list_snapshots 'snap2'" -e "list_snapshots")
check_contains "list_snapshots with a regex" "$out" "snap2  copy (2023-11-14 22:13:20 +0000)
1 row(s)"
check_contains "list_snapshots lists both" "$out" "2 row(s)"
out=$(sh -e "delete_snapshot 'snap1'" -e "list_snapshots" -e "count 't'" -e "count 'copy'")
check_eq "delete removes only the snapshot" "SNAPSHOT  TABLE + CREATION TIME
snap2  copy (2023-11-14 22:13:20 +0000)
1 row(s)
3 row(s)
4 row(s)" "$out"
check "the snapshot's directory is gone" test ! -e "$data/snapshots/snap1"
out=$(sh -e "delete_snapshot 'snap1'")
check_eq "deleting it again" "ERROR: Snapshot 'snap1' doesn't exist" "$out"
out=$(sh -e "restore_snapshot 'snap1'")
check_eq "restoring a deleted snapshot" "ERROR: Snapshot 'snap1' doesn't exist" "$out"
it_done
