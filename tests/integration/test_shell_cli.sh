#!/usr/bin/env bash
# test_shell_cli.sh - `ctsdb shell` as a program: -e (repeatable), a script file, stdin, --now,
# multi-line continuation, exit status and ERROR lines, exit, bad options, and the interactive
# loop (through a pseudo-terminal from `script`, when it is installed).
source "$(dirname "$0")/lib.sh"
# it_tmpdir runs in a subshell under $(...), where its cleanup registration is lost: make one
# directory here, registered in this shell, and use subdirectories of it.
IT_ROOT_TMP=$(mktemp -d "${TMPDIR:-/tmp}/ctsdb-it-XXXXXX")
IT_DIRS+=("$IT_ROOT_TMP")

dir=$IT_ROOT_TMP
data=$dir/data
sh() { "$CTSDB" shell --data "$data" --now 1700000000000 "$@"; }

out=$("$CTSDB" shell --help)
check_eq "--help exits 0" 0 $?
check_contains "--help shows usage" "$out" "usage: ctsdb shell"
"$CTSDB" shell --bogus 2>/dev/null
check_eq "unknown option exits 2" 2 $?
"$CTSDB" shell --now abc -e list 2>/dev/null
check_eq "bad --now exits 2" 2 $?

out=$(sh -e "version" -e "help")
check_contains "version names ctsdb" "$out" "ctsdb 0."
check_contains "help lists the commands" "$out" "get_splits 't'"

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

printf "scan 't', {LIMIT => 1}\nscan 't', {\n  STARTROW => 'a', BOGUS => 1}\n" >"$dir/opt.rb"
err=$(sh "$dir/opt.rb" 2>&1 >/dev/null)
check_contains "an unknown option's error points at its line and column" "$err" "unknown option BOGUS"
check_contains "the unknown option BOGUS is at line 3, column 20 of the script" "$err" "(line 3, column 20)"
err=$(sh -e "create 'pos', {NAME => 'f', TTL => -5}" 2>&1 >/dev/null)
check_eq "a bad attribute value's error points at the value" \
  "ERROR: TTL must be > 0 and <= 2147483647 seconds (got -5) (line 1, column 36)" "$err"

out=$(printf "list\nexit\nput 't', 'r9', 'f:q', 'x'\n" | sh 2>&1)
check_eq "exit ends a script with status 0" 0 $?
check_eq "exit stops reading" "2 row(s)" "$(sh -e "count 't'" | grep -v '^Took ')"

err=$(printf "scan 't', {\n" | sh 2>&1 >/dev/null)
check_eq "unterminated bracket at end of input exits 1" 1 $?
check_contains "unterminated bracket is reported" "$err" "ERROR: syntax error at line 1"

out=$("$CTSDB" shell --data "$data" --now 1700000001234 -e "put 't', 'n', 'f:q', 'x'" -e "get 't', 'n'")
check_contains "--now pins the write timestamp" "$out" "timestamp=1700000001234"

# the environment alone pins the clock, for writes and for TTL expiry (strict at now - TTL)
out=$(CTSDB_NOW_MS=1700000003000 "$CTSDB" shell --data "$dir/envdata" -e "create 'ttlenv', {NAME => 'f', TTL => 2}" \
  -e "put 'ttlenv', 'e', 'f:q', 'x'" -e "get 'ttlenv', 'e'")
check_contains "CTSDB_NOW_MS pins the write timestamp" "$out" "timestamp=1700000003000"
out=$(CTSDB_NOW_MS=1700000005000 "$CTSDB" shell --data "$dir/envdata" -e "count 'ttlenv'")
check_contains "CTSDB_NOW_MS: a cell exactly TTL old is live" "$out" "1 row(s)"
out=$(CTSDB_NOW_MS=1700000005001 "$CTSDB" shell --data "$dir/envdata" -e "count 'ttlenv'")
check_contains "CTSDB_NOW_MS: one millisecond later it has expired" "$out" "0 row(s)"

out=$(CTSDB_NOW_MS=1700000005000 "$CTSDB" shell --data "$data" --now 1700000006000 -e "put 't', 'm', 'f:q', 'x'" -e "get 't', 'm'")
check_contains "--now wins over the environment" "$out" "timestamp=1700000006000"

err=$("$CTSDB" shell --data "$dir/missing" -e "list" 2>&1 >/dev/null)
check_eq "a fresh data directory is created" 0 $?

printf 'a\n\\x00b\nc\n' >"$dir/splits.txt"
out=$(sh -e "create 'sf', 'f', SPLITS_FILE => '$dir/splits.txt'" -e "get_splits 'sf'" \
  -e "alter_status 'sf'" -e "show_filters" -e "put 'sf', 'abc', 'f:q', 'x'" \
  -e "scan 'sf', FILTER => \"(PrefixFilter ('ab')) AND (ColumnPrefixFilter('q'))\"" \
  -e "disable 'sf'" -e "drop 'sf'" | grep -v '^Took ')
check_eq "SPLITS_FILE, alter_status, show_filters, parenthesised filters" "Created table sf
Total number of splits = 4
\x00b
a
c
4/4 regions updated.
Done.
ColumnPrefixFilter
ColumnRangeFilter
PrefixFilter
ROW  COLUMN+CELL
 abc column=f:q, timestamp=1700000000000, value=x
1 row(s)" "$out"
err=$(sh -e "create 'sf2', 'f', SPLITS_FILE => '$dir/nope.txt'" 2>&1 >/dev/null)
check_eq "a missing SPLITS_FILE is an error" "ERROR: cannot open SPLITS_FILE $dir/nope.txt: No such file or directory" "$err"

out=$(sh -e "create 'ps', 'f', SPLITS => ['m']" -e "status 'simple'" -e "status 'detailed'" -e "status")
check_contains "status simple counts regions" "$out" "Aggregate load: 0, regions: 3"
check_contains "status simple shows the server line" "$out" "numberOfOnlineRegions=3,"
check_eq "status detailed has one line per region" 3 "$(grep -c '^        "[^"]*" readRequestsCount=[0-9]*, writeRequestsCount=[0-9]*, memstoreSizeBytes=[0-9]*, storefiles=[0-9]*, storefileSizeBytes=[0-9]*$' <<<"$out")"
check_contains "status detailed names a region by table and start key" "$out" '"ps,m,'
check_contains "status summary" "$out" "1 active master, 0 backup masters, 1 servers, 0 dead, 3.0000 average load"

# hbase:meta is built for each command in a scratch store under $TMPDIR and removed after it
mkdir -p "$dir/metatmp"
out=$(TMPDIR=$dir/metatmp sh -e "scan 'hbase:meta', {COLUMNS => 'table:state'}" -e "count 'hbase:meta'")
check_contains "hbase:meta lists the tables" "$out" " t column=table:state, timestamp="
check_eq "hbase:meta leaves nothing in TMPDIR" "" "$(ls -A "$dir/metatmp")"

# Per-region statistics show a hotspot: four writes and the reads of rows below 'g' land in the
# first region, one write in the second, none in the third (request counts, memstore bytes until
# a flush, then store files and their bytes).
hot_before=$(sh -e "create 'hot', 'f', SPLITS => ['g', 'p']" -e "put 'hot', 'a1', 'f:q', 'v', 1" \
  -e "put 'hot', 'a2', 'f:q', 'v', 1" -e "put 'hot', 'a3', 'f:q', 'v', 1" \
  -e "put 'hot', 'a4', 'f:q', 'v', 1" -e "put 'hot', 'h', 'f:q', 'v', 1" -e "get 'hot', 'a1'" \
  -e "get 'hot', 'h'" -e "status 'detailed'" | grep '"hot,')
check "status detailed: the hot region's writes and memstore" grep -q \
  '"hot,,[0-9]*" readRequestsCount=1, writeRequestsCount=4, memstoreSizeBytes=[1-9][0-9]*, storefiles=0, storefileSizeBytes=0$' <<<"$hot_before"
check "status detailed: the second region's" grep -q \
  '"hot,g,[0-9]*" readRequestsCount=1, writeRequestsCount=1, memstoreSizeBytes=[1-9][0-9]*, storefiles=0, storefileSizeBytes=0$' <<<"$hot_before"
check "status detailed: the idle region's" grep -q \
  '"hot,p,[0-9]*" readRequestsCount=0, writeRequestsCount=0, memstoreSizeBytes=0, storefiles=0, storefileSizeBytes=0$' <<<"$hot_before"
# (a new process: the counters start again at zero, as HBase's do when a region reopens)
hot_after=$(sh -e "flush 'hot'" -e "scan 'hot', {STARTROW => 'a', STOPROW => 'b'}" -e "count 'hot'" \
  -e "status 'detailed'" | grep '"hot,')
check "status detailed after a flush and reads: files and read counts" grep -q \
  '"hot,,[0-9]*" readRequestsCount=8, writeRequestsCount=0, memstoreSizeBytes=0, storefiles=1, storefileSizeBytes=[1-9][0-9]*$' <<<"$hot_after"
check "status detailed after a flush: the second region's" grep -q \
  '"hot,g,[0-9]*" readRequestsCount=1, writeRequestsCount=0, memstoreSizeBytes=0, storefiles=1, storefileSizeBytes=[1-9][0-9]*$' <<<"$hot_after"
check "status detailed after a flush: the idle region's" grep -q \
  '"hot,p,[0-9]*" readRequestsCount=0, writeRequestsCount=0, memstoreSizeBytes=0, storefiles=0, storefileSizeBytes=0$' <<<"$hot_after"

if command -v script >/dev/null 2>&1; then
  # script(1) runs its command through $SHELL -c (or /bin/sh when SHELL is unset, as in CI); `exec`
  # makes the shell itself the terminal's foreground process, so Ctrl-C reaches only the shell and
  # not a wrapping dash that would die of it.
  out=$(printf "list\nput 't', 'x', 'bad:q', 'v'\ncreate 'i', {NAME => 'f',\nVERSIONS => 2}\nexists 'i'\nexit\n" |
    HOME=$dir timeout 30 script -qec "exec $CTSDB shell --data $data --now 1700000000000" /dev/null 2>&1)
  check_contains "interactive: prompt" "$out" "ctsdb(main):001:0>"
  check_contains "interactive: continuation prompt" "$out" "ctsdb(main):004:1*"
  check_contains "interactive: errors do not stop the loop" "$out" "Table i does exist"
  check_contains "interactive: error printed" "$out" "ERROR: Unknown column family!"
  check "interactive: history saved" test -s "$dir/.ctsdb_shell_history"
  printf "put 't', 'x', 'bad:q', 'v'\nlist\n" |
    HOME=$dir timeout 30 script -qec "exec $CTSDB shell -n --data $data --now 1700000000000" /dev/null \
      >"$dir/n.out" 2>&1
  check_eq "-n: a terminal's input is a script that stops at the first error" 1 $?
  check "-n: nothing after the error ran" bash -c "! grep -q '^TABLE' '$dir/n.out'"

  # Line editing and history (libedit, emacs keys): Ctrl-A moves to the start of the line, Ctrl-B
  # one character back, Up recalls earlier lines, also those of an earlier session (the history
  # file). None of these keys means anything to the terminal's own line discipline, so only the
  # line editor can turn them into the commands checked here.
  mkdir -p "$dir/edhome"
  out=$(printf "create 'ed', 'f'\nist\001l\nexists 'e'\002d\n\033[A\033[A\nexit\n" |
    HOME=$dir/edhome timeout 30 script -qec "exec $CTSDB shell --data $data --now 1700000000000" /dev/null 2>&1)
  check_contains "line editing: Ctrl-B inserts before the cursor" "$out" "Table ed does exist"
  check_eq "line editing: Ctrl-A, then Up Up recall 'list'" 2 "$(grep -c '^TABLE' <<<"$(tr -d '\r' <<<"$out")")"
  check_eq "line editing: no mangled command reached the shell" 0 "$(grep -c 'ERROR' <<<"$out")"
  out=$(printf "\033[A\033[A\033[A\nexit\n" |
    HOME=$dir/edhome timeout 30 script -qec "exec $CTSDB shell --data $data --now 1700000000000" /dev/null 2>&1)
  check_contains "history: a new session recalls the last one's lines" "$out" "Table ed does exist"

  # Ctrl-C at the prompt drops the pending lines instead of ending the shell. Input goes through a
  # FIFO, each piece sent once the expected prompt is on screen (bounded waits, no timing).
  fifo=$dir/tty.in
  mkfifo "$fifo"
  HOME=$dir timeout 60 script -qfec "exec $CTSDB shell --data $data --now 1700000000000" "$dir/tty.log" \
    <"$fifo" >/dev/null 2>&1 &
  spid=$!
  IT_PIDS+=("$spid")
  exec 7>"$fifo"
  wait_for() { # wait_for TEXT COUNT: until TEXT appears COUNT times in the log (at most 20 s)
    for _ in $(seq 1 200); do
      [ "$(grep -o -F "$1" "$dir/tty.log" 2>/dev/null | wc -l)" -ge "$2" ] && return 0
      sleep 0.1
    done
    return 1
  }
  wait_for "ctsdb(main):001:0>" 1 && printf "create 'sig', {NAME => 'f',\n" >&7
  wait_for "ctsdb(main):002:1*" 1 && printf "\003" >&7
  wait_for "ctsdb(main):002:0>" 1 && printf "exists 'sig'\n" >&7
  wait_for "ctsdb(main):003:0>" 1 && printf "half a line\003" >&7
  wait_for "ctsdb(main):003:0>" 2 && printf "exit\n" >&7
  exec 7>&-
  wait "$spid"
  check_eq "interactive: Ctrl-C does not end the shell" 0 $?
  check_contains "interactive: Ctrl-C dropped the open command" "$(cat "$dir/tty.log")" \
    "Table sig does not exist"
  check "interactive: Ctrl-C dropped the half-typed line" \
    bash -c "! grep -q \"unknown command 'half'\" '$dir/tty.log'"
fi
it_done
