#!/usr/bin/env bash
# test_shell_cli.sh - `ctsdb shell` as a program: -e (repeatable), a script file, stdin, --now,
# multi-line continuation, exit status and ERROR lines, exit, bad options, and the interactive
# loop (through a pseudo-terminal from `script`, when it is installed).
source "$(dirname "$0")/lib.sh"

dir=$(it_tmpdir)
data=$dir/data
sh() { "$CTSDB" shell --data "$data" --now 1700000000000 "$@"; }

out=$("$CTSDB" shell --help)
check_eq "--help exits 0" 0 $?
check_contains "--help shows usage" "$out" "usage: ctsdb shell"
"$CTSDB" shell --bogus 2>/dev/null
check_eq "unknown option exits 2" 2 $?
"$CTSDB" shell --now abc -e list 2>/dev/null
check_eq "bad --now exits 2" 2 $?

out=$(sh -e "create 't', 'f'" -e "put 't', 'r', 'f:q', 'v'" -e "get 't', 'r'")
check_eq "-e commands run in order" 0 $?
check_eq "-e output" "Created table t
COLUMN  CELL
 f:q timestamp=1700000000000, value=v
1 row(s)" "$(grep -v '^Took ' <<<"$out")"
check_eq "every command prints a Took line" 3 "$(grep -c '^Took [0-9]*\.[0-9]\{4\} seconds$' <<<"$out")"

out=$(printf "# from stdin\nscan 't', {\n  COLUMNS => ['f:q'],\n  LIMIT => 1\n}\ncount 't'\n" | sh)
check_eq "stdin script with continuation lines" "ROW  COLUMN+CELL
 r column=f:q, timestamp=1700000000000, value=v
1 row(s)
1 row(s)" "$(grep -v '^Took ' <<<"$out")"

printf "put 't', 'r2', 'f:q', 'x'\nput 't', 'r3', 'nofam:q', 'x'\nput 't', 'r4', 'f:q', 'x'\n" >"$dir/s.rb"
err=$(sh "$dir/s.rb" 2>&1 >/dev/null)
check_eq "script error exits 1" 1 $?
check_eq "script error message on stderr" "ERROR: Unknown column family! Valid column names: f:*" "$err"
out=$(sh -e "count 't'")
check_eq "rows before the error were written, none after it" "2 row(s)" "$(grep -v '^Took ' <<<"$out")"

out=$(printf "list\nexit\nput 't', 'r9', 'f:q', 'x'\n" | sh 2>&1)
check_eq "exit ends a script with status 0" 0 $?
check_eq "exit stops reading" "2 row(s)" "$(sh -e "count 't'" | grep -v '^Took ')"

err=$(printf "scan 't', {\n" | sh 2>&1 >/dev/null)
check_eq "unterminated bracket at end of input exits 1" 1 $?
check_contains "unterminated bracket is reported" "$err" "ERROR: syntax error at line 1"

out=$("$CTSDB" shell --data "$data" --now 1700000001234 -e "put 't', 'n', 'f:q', 'x'" -e "get 't', 'n'")
check_contains "--now pins the write timestamp" "$out" "timestamp=1700000001234"

out=$(CTSDB_NOW_MS=1700000005000 "$CTSDB" shell --data "$data" --now 1700000006000 -e "put 't', 'm', 'f:q', 'x'" -e "get 't', 'm'")
check_contains "--now wins over the environment" "$out" "timestamp=1700000006000"

err=$("$CTSDB" shell --data "$dir/missing" -e "list" 2>&1 >/dev/null)
check_eq "a fresh data directory is created" 0 $?

out=$(sh -e "create 'ps', 'f', SPLITS => ['m']" -e "status 'simple'" -e "status 'detailed'" -e "status")
check_contains "status simple counts regions" "$out" "Aggregate load: 0, regions: 3"
check_contains "status simple shows the server line" "$out" "numberOfOnlineRegions=3,"
check_eq "status detailed has one line per region" 3 "$(grep -c '^        "[^"]*" readRequestsCount=[0-9]*, writeRequestsCount=[0-9]*, memstoreSizeBytes=[0-9]*, storefiles=[0-9]*, storefileSizeBytes=[0-9]*$' <<<"$out")"
check_contains "status detailed names a region by table and start key" "$out" '"ps,m,'
check_contains "status summary" "$out" "1 active master, 0 backup masters, 1 servers, 0 dead, 3.0000 average load"

if command -v script >/dev/null 2>&1; then
  out=$(printf "list\nput 't', 'x', 'bad:q', 'v'\ncreate 'i', {NAME => 'f',\nVERSIONS => 2}\nexists 'i'\nexit\n" |
    HOME=$dir timeout 30 script -qec "$CTSDB shell --data $data --now 1700000000000" /dev/null 2>&1)
  check_contains "interactive: prompt" "$out" "ctsdb(main):001:0>"
  check_contains "interactive: continuation prompt" "$out" "ctsdb(main):004:1*"
  check_contains "interactive: errors do not stop the loop" "$out" "Table i does exist"
  check_contains "interactive: error printed" "$out" "ERROR: Unknown column family!"
  check "interactive: history saved" test -s "$dir/.ctsdb_shell_history"
fi
it_done
