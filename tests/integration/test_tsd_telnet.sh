#!/usr/bin/env bash
# test_tsd_telnet.sh - the telnet side of the TSD: silent puts, every error line of
# docs/opentsdb-compat.md, "`put` and its checks", with the connection staying usable,
# version/help/stats/status/dropcaches/exit, unknown commands, collectd's runs of spaces, lines
# split across writes, over-long lines, diediedie and its gate; then the points are found in the
# store.
source "$(dirname "$0")/lib.sh"

tsd_start --tsd.core.enable_admin=true

out=$(printf 'put sys.cpu.user 1356998400 42 host=web01 cpu=0\nput sys.cpu.user 1356998401 42.5 host=web01 cpu=0\n' | tsd_talk)
check_eq "successful puts are silent" "" "$out"

out=$(printf 'put sys.cpu.user 1356998402 1 host=web01\nversion\n' | tsd_talk)
check_contains "version answers after a put (line 1)" "$out" "built at revision"
check_eq "version answers with two lines" 2 "$(printf '%s\n' "$out" | wc -l)"

# every error of "`put` and its checks", in order, on one connection that stays usable
errs=$(cat <<'LINES' | tsd_talk
put
put  1 2 a=b
put m 12x 1 a=b
put m 0 1 a=b
put m 1  a=b
put m 1 1 a=b=c
put m 1 1 host=a host=b
put m 1 x a=b
put m 1 1e999 a=b
put m 10000000000000 1 a=b
put m 1 1 
put m 1 1 a=1 b=2 c=3 d=4 e=5 f=6 g=7 h=8 i=9
put m!x 1 1 a=b
status
LINES
)
expected=$(cat <<'EXPECTED'
put: illegal argument: not enough arguments (need least 4, got 0)
put: illegal argument: empty metric name
put: invalid value: Invalid character 'x' in 12x
put: illegal argument: invalid timestamp: 0
put: illegal argument: empty value
put: illegal argument: invalid tag: a=b=c
put: illegal argument: duplicate tag: host=b, tags={host=a}
put: invalid value: Invalid character 'x' in x
put: illegal argument: value is NaN or Infinite: Infinity for metric=m timestamp=1
put: illegal argument: bad timestamp=10000000000000 when trying to add value=[1]/0 to metric=m, tags={a=b}
put: illegal argument: Need at least one tag (metric=m, tags={})
put: illegal argument: Too many tags: 9 maximum allowed: 8, tags: {a=1, b=2, c=3, d=4, e=5, f=6, g=7, h=8, i=9}
put: illegal argument: Invalid metric name ("m!x"): illegal character: !
ok
EXPECTED
)
check_eq "each bad put gets its one error line, in order, connection usable" "$expected" "$errs"
# an error text longer than any former fixed buffer (1 KiB) arrives whole: the duplicate-tag
# message quotes both values of a line just under the line limit
v1=$(python3 -c 'print("x" * 490)')
v2=$(python3 -c 'print("y" * 490)')
out=$(printf 'put m 1 1 a=%s a=%s\n' "$v1" "$v2" | tsd_talk)
check_eq "a long error line arrives whole" \
  "put: illegal argument: duplicate tag: a=$v2, tags={a=$v1}" "$out"

# a connection keeps the last tags text and timestamp it parsed (docs/tsd.md, "Telnet"): the
# same text again answers as a fresh parse, a refused one is refused each time, one byte changed
# is another series
out=$(cat <<'LINES' | tsd_talk
put memo.a 1356998400 1 host=m1 dc=eu
put memo.b 1356998400 2 host=m1 dc=eu
put memo.a 1356998400 3 host=m1 dc=ev
put memo.b 1356998400 4 host=m1 dc=ev
put memo.a 1356998402 5 host=m1  dc=eu
put memo.a 1356998400 6 h@st=m1 dc=eu
put memo.a 1356998400 6 h@st=m1 dc=eu
put memo.a 1356998400 7 host=m1=x
put memo.a 1356998400 7 host=m1=x
put memo.a 1356998403 8 host=m1 dc=eu dc=eu
put memo.b 1356998400 9 host=m1 dc=eu host=m2
put memo.b 1356998400 9 host=m1 dc=eu host=m2
put memo.a 1356998400x 10 host=m1 dc=eu
put memo.a 1356998400x 10 host=m1 dc=eu
put memo.a 1356998404 11 host=m1 dc=eu
status
LINES
)
check_eq "repeated tags and timestamps answer as fresh parses" 'put: illegal argument: Invalid tag name with value [m1] ("h@st"): illegal character: @
put: illegal argument: Invalid tag name with value [m1] ("h@st"): illegal character: @
put: illegal argument: invalid tag: host=m1=x
put: illegal argument: invalid tag: host=m1=x
put: illegal argument: duplicate tag: host=m2, tags={host=m1, dc=eu}
put: illegal argument: duplicate tag: host=m2, tags={host=m1, dc=eu}
put: invalid value: Invalid character '"'x'"' in 1356998400x
put: invalid value: Invalid character '"'x'"' in 1356998400x
ok' "$out"
memo_q() {
  curl -sg "http://127.0.0.1:$TSD_PORT/api/query?start=1356998000&end=1356999000&m=sum:$1" |
    python3 -c 'import json, sys; print(" ".join("%s:%s" % (k, v) for r in json.load(sys.stdin) for k, v in sorted(r["dps"].items())))'
}
check_eq "memo.a{dc=eu}: the same series whatever the spaces and repeats" "1356998400:1 1356998402:5 1356998403:8 1356998404:11" "$(memo_q 'memo.a{host=m1,dc=eu}')"
check_eq "memo.a{dc=ev}: one byte changed is its own series" "1356998400:3" "$(memo_q 'memo.a{host=m1,dc=ev}')"
check_eq "memo.b{dc=eu}" "1356998400:2" "$(memo_q 'memo.b{host=m1,dc=eu}')"
check_eq "memo.b{dc=ev}" "1356998400:4" "$(memo_q 'memo.b{host=m1,dc=ev}')"

out=$(printf 'help\n' | tsd_talk)
check_eq "help lists the commands" "available commands: diediedie dropcaches exit help histogram put rollup stats status version " "$out"
out=$(printf 'dropcaches\n' | tsd_talk)
check_eq "dropcaches" "Caches dropped." "$out"
out=$(printf 'foo bar\n' | tsd_talk)
check_eq "unknown command" "unknown command: foo.  Try \`help'." "$out"
out=$(printf 'stats\n' | tsd_talk)
check_contains "stats has put counts" "$out" "tsd.rpc.received "
check_contains "stats lines carry a host tag" "$out" "host="
check_contains "stats include storage figures" "$out" "tsd.storage.region.write_requests"
first=$(printf '%s\n' "$out" | head -1)
check "stats lines have the put-line shape" python3 -c '
import sys; f = sys.argv[1].split(" ")
assert len(f) >= 4 and f[1].isdigit() and "=" in f[3]' "$first"

# collectd's write_tsdb sends runs of spaces in tag positions and CRLF line ends
out=$(printf 'put collectd.load 1356998400 0.5 fqdn=h1  \r\nput collectd.load 1356998460 0.25 fqdn=h1 \r\nversion\r\n' | tsd_talk | head -1)
check_contains "collectd-style lines are accepted" "$out" "built at revision"

# a line split across writes (and even inside a token): the pieces arrive 0.2 s apart
out=$(python3 -c '
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
for piece in [b"put sys.spl", b"it.line 1356998400 7 host=a\nput sys.split.line 13569984",
              b"10 8 host=a\n", b"vers", b"ion\n"]:
    s.sendall(piece)
    time.sleep(0.2)
s.shutdown(socket.SHUT_WR)
out = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    out += b
sys.stdout.write(out.decode())
' "$TSD_PORT" | head -1)
check_contains "lines split across reads are joined" "$out" "built at revision"

# an over-long line: one error, the rest of it discarded, the connection stays usable
long=$(head -c 3000 /dev/zero | tr '\0' 'x')
out=$(printf 'put m 1 1 a=%s\nversion\n' "$long" | tsd_talk)
check_contains "an over-long line gets an error" "$(printf '%s\n' "$out" | head -1)" "line too long"
check_contains "after an over-long line the connection still works" "$(printf '%s\n' "$out" | sed -n 2p)" "built at revision"

# exit ends the connection without a reply; later lines are not read
out=$(printf 'exit\nversion\n' | tsd_talk)
check_eq "exit closes without a reply" "" "$out"

# the daemon keeps serving after all of this
out=$(printf 'status\n' | tsd_talk)
check_eq "status is ok" "ok" "$out"

tsd_stop
check_eq "tsd exits 0 on SIGTERM" 0 "$?"
check_contains "shutdown is logged" "$(cat "$TSD_LOG")" "shutdown complete"

# the points are in the store: UIDs assigned and rows written
uids=$("$CTSDB" shell --data "$TSD_DATA" -e "scan 'tsdb-uid'" 2>&1)
check_contains "metric sys.cpu.user has a UID" "$uids" "sys.cpu.user column=id:metrics"
check_contains "metric sys.split.line has a UID" "$uids" "sys.split.line column=id:metrics"
check_contains "collectd metric has a UID" "$uids" "collectd.load column=id:metrics"
rows=$("$CTSDB" shell --data "$TSD_DATA" -e "count 'tsdb'" 2>&1)
check_contains "data rows were written (one per series and hour; 4 of them memo.*)" "$rows" "8 row(s)"

# OpenTSDB's setting: unknown metrics refused (the answer comes from the store, before version)
TSD_DATA=
tsd_start --tsd.core.enable_admin=true --tsd.core.auto_create_metrics=false
out=$(printf 'put brand.new 1356998400 1 host=a\nversion\n' | tsd_talk | head -1)
check_eq "unknown metric refused when auto-create is off" "put: unknown metric: No such name for 'metrics': 'brand.new'" "$out"
# each failed put is answered by its own line, in order (OpenTSDB answers every put); puts
# with the same error are not folded into one line
out=$(printf 'put brand.new 1356998400 1 host=a\nput brand.new 1356998401 2 host=a\nput other.new 1356998400 3 host=a\nput brand.new 1356998402 4 host=b\nput other.new 1356998401 5 host=a\nversion\n' | tsd_talk | grep '^put: ')
check_eq "one error line per failed put, in order" "put: unknown metric: No such name for 'metrics': 'brand.new'
put: unknown metric: No such name for 'metrics': 'brand.new'
put: unknown metric: No such name for 'metrics': 'other.new'
put: unknown metric: No such name for 'metrics': 'brand.new'
put: unknown metric: No such name for 'metrics': 'other.new'" "$out"
# past 100 failed puts of one connection in one batch, one line counts the rest
out=$(for i in $(seq 1 150); do printf 'put brand.new %d %d host=a\n' $((1356998400 + i)) "$i"; done | tsd_talk)
n=$(printf '%s\n' "$out" | grep -c "^put: unknown metric: No such name for 'metrics': 'brand.new'$")
more=$(printf '%s\n' "$out" | sed -n 's/^put: \([0-9]*\) more puts failed.*/\1/p' | awk '{s += $1} END {print s + 0}')
check_eq "150 failed puts: every one answered or counted" 150 "$((n + ${more:-0}))"
check_eq "150 failed puts in one batch: 100 lines and a count of 50" "100 50" "$n ${more:-0}"
# a client that never reads its replies does not make the TSD buffer without bound
rss=$(python3 -c '
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.setblocking(False)
t = time.time()
while time.time() - t < 2:
    try:
        s.send(b"version\n" * 1000)
    except BlockingIOError:
        time.sleep(0.01)
print(open("/proc/%s/status" % sys.argv[2]).read().split("VmRSS:")[1].split()[0])
' "$TSD_PORT" "$TSD_PID")
check "memory stays bounded with a client that never reads (RSS ${rss} kB)" test "$rss" -lt 200000
check_eq "the TSD still answers others" "ok" "$(printf 'status\n' | tsd_talk)"
tsd_stop
tsd_start --tsd.core.enable_admin=true --tsd.mode=ro  # on the same data: read-only mode creates no tables
check_eq "read-only mode refuses puts" "put: illegal argument: the TSD is in read-only mode" "$(printf 'put m 1356998400 1 a=b\n' | tsd_talk)"
tsd_stop

# diediedie: refused when gated, shuts the TSD down otherwise
TSD_DATA=
tsd_start --tsd.core.enable_admin=true --tsd.no_diediedie=true
out=$(printf 'diediedie\nstatus\n' | tsd_talk)
check_eq "diediedie is unknown when disabled" "unknown command: diediedie.  Try \`help'.
ok" "$out"
tsd_stop
TSD_DATA=
tsd_start --tsd.core.enable_admin=true
out=$(printf 'diediedie\n' | tsd_talk)
check_eq "diediedie answers" "Cleaning up and exiting now." "$out"
for _ in $(seq 1 100); do kill -0 "$TSD_PID" 2>/dev/null || break; sleep 0.1; done
wait "$TSD_PID"
check_eq "diediedie stops the TSD with status 0" 0 "$?"
it_done
