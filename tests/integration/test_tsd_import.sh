#!/usr/bin/env bash
# test_tsd_import.sh - `ctsdb import`: plain and gzip OpenTSDB import files load into the store,
# bad lines are reported as FILE:LINE: message and skipped, the exit status tells, and a TSD
# started on the imported directory serves the same store.
source "$(dirname "$0")/lib.sh"

dir=$(mktemp -d "${TMPDIR:-/tmp}/ctsdb-it-import-XXXXXX")
IT_DIRS+=("$dir")
cat >"$dir/a.txt" <<'DATA'
# a comment
imp.cpu 1356998400 1 host=a
imp.cpu 1356998460 2.5 host=a

imp.cpu 1356998400 3 host=b
not a datapoint
imp.mem 1356998400 x host=a
DATA
python3 -c '
for i in range(5000):
    print("imp.gz %d %d host=h%d" % (1356998400 + i // 50, i, i % 50))' | gzip -c >"$dir/b.txt.gz"

out=$("$CTSDB" import --data "$dir/data" "$dir/a.txt" "$dir/b.txt.gz" 2>"$dir/err")
rc=$?
check_eq "import exits 1 when some lines were bad" 1 "$rc"
check_contains "import reports what it loaded" "$out" "imported 5003 datapoints from 2 files"
check_contains "import reports the bad-line count" "$out" "2 bad lines"
err=$(cat "$dir/err")
check_contains "a bad line is named by file and line" "$err" "$dir/a.txt:6: illegal argument: not enough arguments"
check_contains "a bad value is named by file and line" "$err" "$dir/a.txt:7: invalid value: Invalid character 'x' in x"
check_contains "the progress bar shows rate and ETA" "$err" "points/s"
check_contains "the progress bar ends at 100%" "$err" "100.0%"

printf 'imp.ok 1356998400 1 host=a\n' >"$dir/c.txt"
"$CTSDB" import --data "$dir/data" "$dir/c.txt" >/dev/null 2>&1
check_eq "a clean import exits 0" 0 "$?"
"$CTSDB" import --data "$dir/data" "$dir/missing.txt" >/dev/null 2>&1
check_eq "a missing file exits 3" 3 "$?"
"$CTSDB" import --data "$dir/data" >/dev/null 2>&1
check_eq "no files is a usage error" 2 "$?"

rows=$("$CTSDB" shell --data "$dir/data" -e "count 'tsdb'" 2>&1)
# imp.cpu a, imp.cpu b, 50 imp.gz series in one hour, imp.ok
check_contains "every imported series and hour is stored" "$rows" "53 row(s)"

TSD_DATA=$dir/data
tsd_start
out=$(curl -s "http://127.0.0.1:$TSD_PORT/api/stats")
check_contains "a TSD opens the imported store" "$out" "tsd.storage.regions"
tsd_stop
check_eq "clean stop" 0 "$?"
it_done
