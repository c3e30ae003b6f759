#!/usr/bin/env bash
# test_shell_bulk.sh - the shell over a few thousand rows in a HexStringSplit pre-split table:
# count's progress lines at the default INTERVAL, full scans in both directions equal to the
# sorted key list (across region boundaries, memstore and files), split at region midpoints,
# and automatic splits of a table whose MAX_FILESIZE and MEMSTORE_FLUSHSIZE are small.
# BLOCKSIZE is 1 KiB so each file has several blocks; a region's midpoint is the row of the cell
# in the middle of its largest file's data.
source "$(dirname "$0")/lib.sh"
# it_tmpdir runs in a subshell under $(...), where its cleanup registration is lost: make one
# directory here, registered in this shell, and use subdirectories of it.
IT_ROOT_TMP=$(mktemp -d "${TMPDIR:-/tmp}/ctsdb-it-XXXXXX")
IT_DIRS+=("$IT_ROOT_TMP")

dir=$IT_ROOT_TMP
data=$dir/data
sh() { timeout 300 "$CTSDB" shell --data "$data" --now 1700000000000 "$@"; }
N=2500
# keys: 8 hex digits spread over the 32-bit space; python3 writes the script and the expectations
python3 - "$dir" "$N" <<'PY'
import sys
d, n = sys.argv[1], int(sys.argv[2])
keys = ["%08x" % ((i * 2654435761) % (1 << 32)) for i in range(n)]
assert len(set(keys)) == n
with open(d + "/load.rb", "w") as f:
    f.write("create 'bulk', {NAME => 'f', BLOCKSIZE => 1024}, {NUMREGIONS => 4, SPLITALGO => 'HexStringSplit'}\n")
    for i, k in enumerate(keys):
        f.write("put 'bulk', '%s', 'f:q', 'v%d'\n" % (k, i))
        if i == n // 2:
            f.write("flush 'bulk'\n")
srt = sorted(keys)
val = {k: i for i, k in enumerate(keys)}
with open(d + "/count.exp", "w") as f:
    for c in range(1000, n + 1, 1000):
        f.write("Current count: %d, row: %s\n" % (c, srt[c - 1]))
    f.write("%d row(s)\n" % n)
with open(d + "/fwd.exp", "w") as f:
    f.write("ROW  COLUMN+CELL\n")
    for k in srt:
        f.write(" %s column=f:q, timestamp=1700000000000, value=v%d\n" % (k, val[k]))
    f.write("%d row(s)\n" % n)
with open(d + "/rev.exp", "w") as f:
    f.write("ROW  COLUMN+CELL\n")
    for k in reversed(srt):
        f.write(" %s column=f:q, timestamp=1700000000000, value=v%d\n" % (k, val[k]))
    f.write("%d row(s)\n" % n)
mid = [k for k in srt if "40000000" <= k < "c0000000"]
with open(d + "/mid.exp", "w") as f:
    f.write("ROW  COLUMN+CELL\n")
    for k in reversed(mid[:]):
        f.write(" %s column=f:q, timestamp=1700000000000, value=v%d\n" % (k, val[k]))
    f.write("%d row(s)\n" % len(mid))
PY
sh "$dir/load.rb" >"$dir/load.out" 2>&1
check_eq "load of $N rows exits 0" 0 $?
check_eq "every put has its Took line" "$((N + 2))" "$(grep -c '^Took ' "$dir/load.out")"

out=$(sh -e "count 'bulk'" | grep -v '^Took ')
check_eq "count prints progress every 1000 rows" "$(cat "$dir/count.exp")" "$out"
out=$(sh -e "scan 'bulk'" | grep -v '^Took ')
check_eq "forward scan returns every row in key order" "$(cat "$dir/fwd.exp")" "$out"
out=$(sh -e "scan 'bulk', {REVERSED => true}" | grep -v '^Took ')
check_eq "reversed scan returns every row in descending order" "$(cat "$dir/rev.exp")" "$out"
out=$(sh -e "scan 'bulk', {REVERSED => true, STARTROW => 'bfffffff~', STOPROW => '3fffffff~'}" |
  grep -v '^Took ')
check_eq "reversed scan over the two middle regions" "$(cat "$dir/mid.exp")" "$out"

out=$(sh -e "flush 'bulk'" -e "split 'bulk'" -e "get_splits 'bulk'" | grep -v '^Took ')
check_eq "split at midpoints doubles the regions" "Total number of splits = 8" "$(head -1 <<<"$out")"
keys=$(tail -n +2 <<<"$out")
check_eq "split keys stay sorted" "$(sort <<<"$keys")" "$keys"
check_contains "the pre-split keys remain" "$keys" "40000000
"
out=$(sh -e "scan 'bulk'" | grep -v '^Took ')
check_eq "forward scan unchanged after the split" "$(cat "$dir/fwd.exp")" "$out"
out=$(sh -e "scan 'bulk', {REVERSED => true}" | grep -v '^Took ')
check_eq "reversed scan unchanged after the split" "$(cat "$dir/rev.exp")" "$out"
out=$(sh -e "count 'bulk', INTERVAL => 100000" | grep -v '^Took ')
check_eq "count after the split" "$N row(s)" "$out"

# Automatic splits (docs/storage-contract.md, "Flush, compaction and split policy", stepping
# policy): 2 x MEMSTORE_FLUSHSIZE while the table has one region, MAX_FILESIZE afterwards; the
# writes come in a scattered order.
python3 - "$dir" <<'PY'
import sys
d = sys.argv[1]
with open(d + "/auto.rb", "w") as f:
    f.write("create 'auto', 'f', MAX_FILESIZE => 65536, MEMSTORE_FLUSHSIZE => 16384\n")
    for i in range(3000):
        f.write("put 'auto', 'r%05d', 'f:q', '%s'\n" % ((i * 7919) % 3000, "x" * 60))
with open(d + "/auto_rev.exp", "w") as f:
    f.write("ROW  COLUMN+CELL\n")
    for i in reversed(range(3000)):
        f.write(" r%05d column=f:q, timestamp=1700000000000, value=%s\n" % (i, "x" * 60))
    f.write("3000 row(s)\n")
PY
sh "$dir/auto.rb" >/dev/null 2>&1
check_eq "load of the auto-split table exits 0" 0 $?
out=$(sh -e "get_splits 'auto'" | grep -v '^Took ')
regions=$(head -1 <<<"$out" | sed 's/.*= //')
check "the table split by itself (regions: $regions)" test "$regions" -ge 2
keys=$(tail -n +2 <<<"$out")
check_eq "automatic split keys are sorted" "$(sort <<<"$keys")" "$keys"
# a midpoint halves its region's data: no region ends up with a sliver of it
gap=$(printf 'r00000\n%s\nr03000\n' "$keys" |
  awk '{ v = substr($0, 2) + 0; if (NR > 1 && (m == "" || v - p < m)) m = v - p; p = v } END { print m }')
check "every automatically split region holds at least 200 of the 3000 rows (smallest: $gap)" \
  test "$gap" -ge 200
out=$(sh -e "scan 'auto', {REVERSED => true}" | grep -v '^Took ')
check_eq "reversed scan over the automatically split regions" "$(cat "$dir/auto_rev.exp")" "$out"
out=$(sh -e "count 'auto', INTERVAL => 100000" | grep -v '^Took ')
check_eq "count over the automatically split regions" "3000 row(s)" "$out"
it_done
