#!/usr/bin/env bash
# test_tsd_graphite.sh - Graphite plaintext (docs/protocols.md): the real collectd
# write_graphite plugin (Debian collectd-core) sends its load, memory and cpu metrics to the
# dedicated Graphite port (tsd.graphite.port=0: any free port, read from the log), mapped by a
# template to metric + host tag, and /api/query answers them under those names; then python
# socket cases on the telnet side: the default mapping, a filter template with its own tag,
# commands still win over Graphite's shape, refused lines counted in /api/stats (and no reply);
# on the Graphite port: commands and put lines are refused (counted, no reply), Graphite lines
# stored; tsd.graphite.enable=false turns the telnet side off but not the configured port.
source "$(dirname "$0")/lib.sh"

if ! command -v collectd >/dev/null 2>&1 || [ ! -f /usr/lib/collectd/write_graphite.so ]; then
  not_ok "collectd-core is not installed (deps/test.txt; make deps)"
  it_done
fi

T=$(it_tmpdir)
# the Graphite port of the TSD just started (its log line follows the listening line)
gport() {
  local p=""
  for _ in $(seq 1 50); do
    p=$(sed -n 's/.*Graphite plaintext port on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$TSD_LOG" | head -1)
    [ -n "$p" ] && break
    sleep 0.1
  done
  echo "$p"
}
tsd_start "--tsd.graphite.templates=collectd.* .host.measurement*;servers.* .host.measurement.field* dc=eu" \
  --tsd.graphite.port=0
GPORT=$(gport)
check "the Graphite port listens (${GPORT:-none})" test -n "$GPORT" -a "$GPORT" != "$TSD_PORT"
[ -n "$GPORT" ] || it_done
U="http://127.0.0.1:$TSD_PORT"
stat() { # stat METRIC TYPE -> the value
  curl -s "$U/api/stats" | python3 -c '
import json, sys
print(sum(int(d["value"]) for d in json.load(sys.stdin)
          if d["metric"] == sys.argv[1] and d["tags"].get("type") == sys.argv[2]))' "$1" "$2"
}
# series M{TAGS} since START -> "n tags" of the answer's first series
series() {
  curl -sg "$U/api/query?start=$2&m=sum:$1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
if not isinstance(d, list) or not d:
    print("ANSWER:", json.dumps(d)); sys.exit(0)
print(len(d[0]["dps"]), json.dumps(d[0]["tags"], sort_keys=True))'
}

cat >"$T/collectd.conf" <<CONF
Hostname "ctsdb-it"
FQDNLookup false
Interval 1
BaseDir "$T"
PIDFile "$T/collectd.pid"
PluginDir "/usr/lib/collectd"
TypesDB "/usr/share/collectd/types.db"
LoadPlugin logfile
<Plugin logfile>
  LogLevel info
  File "$T/collectd.log"
</Plugin>
LoadPlugin load
LoadPlugin memory
LoadPlugin cpu
LoadPlugin write_graphite
<Plugin write_graphite>
  <Node "ctsdb">
    Host "127.0.0.1"
    Port "$GPORT"
    Protocol "tcp"
    Prefix "collectd."
    SeparateInstances true
    StoreRates false
    AlwaysAppendDS false
  </Node>
</Plugin>
CONF
collectd -f -C "$T/collectd.conf" >"$T/collectd.out" 2>&1 &
cpid=$!
IT_PIDS+=("$cpid")
lines=0
for _ in $(seq 1 100); do
  lines=$(stat tsd.graphite.lines all)
  [ "$lines" -ge 20 ] && break
  sleep 0.2
done
sleep 2
kill -TERM "$cpid" 2>/dev/null
for _ in $(seq 1 50); do kill -0 "$cpid" 2>/dev/null || break; sleep 0.1; done
kill -KILL "$cpid" 2>/dev/null
wait "$cpid" 2>/dev/null
check "collectd sent Graphite lines (counted: $lines)" test "$lines" -ge 20
check_eq "none of them rejected" 0 "$(stat tsd.graphite.lines rejected)"
check_eq "no telnet errors either" 0 "$(stat tsd.rpc.errors unknown_commands)"
start=$(($(date +%s) - 600))
r=$(series 'load.load.shortterm{host=ctsdb-it}' $start)
check_contains "load.load.shortterm under host=ctsdb-it" "$r" '{"host": "ctsdb-it"}'
check "... with points" test "${r%% *}" -ge 1
check_contains "memory.memory.used" "$(series 'memory.memory.used{host=ctsdb-it}' $start)" '"host": "ctsdb-it"'
check_contains "cpu.0.cpu.idle" "$(series 'cpu.0.cpu.idle{host=ctsdb-it}' $start)" '"host": "ctsdb-it"'

# --- hand-written lines -----------------------------------------------------------------------
out=$(printf '%s\n' \
  "servers.web01.cpu.load.avg1 0.5 1700000000" \
  "plain.metric 3 1700000000" \
  "plain.metric 4 -1" \
  "bad@name 1 1700000000" \
  "a..b 1 1700000000" \
  "plain.metric nan 1700000000" \
  "version 1 2" \
  "plain.metric 5 1700000060" | tsd_talk)
check_contains "a command wins over Graphite's shape" "$out" "net.opentsdb.tools ctsdb"
check_eq "refused Graphite lines get no reply" 0 "$(grep -vc 'opentsdb\|^Built on' <<<"$out")"
check_eq "three refused lines counted" 3 "$(stat tsd.graphite.lines rejected)"
check "the refusal is logged" grep -q "graphite: refused line" "$TSD_LOG"
r=$(curl -sg "$U/api/query?start=1699999000&end=1700000100&m=sum:cpu.load.avg1{host=web01,dc=eu}")
check_eq "filter template: metric, host from the path, dc from the entry" \
  '[{"metric":"cpu.load.avg1","tags":{"dc":"eu","host":"web01"},"aggregateTags":[],"dps":{"1700000000":0.5}}]' "$r"
r=$(curl -sg "$U/api/query?start=1699999000&end=1700000100&m=sum:plain.metric{source=graphite}")
check_eq "default mapping: the path, source=graphite" \
  '[{"metric":"plain.metric","tags":{"source":"graphite"},"aggregateTags":[],"dps":{"1700000000":3,"1700000060":5}}]' "$r"
r=$(series 'plain.metric{source=graphite}' 1h-ago)
check_contains "timestamp -1 is now" "$r" "1 "

# the Graphite port: only Graphite lines; commands and put are refused like bad lines
out=$(printf '%s\n' \
  "gport.metric 7 1700000000" \
  "version" \
  "stats" \
  "put gport.metric 1700000000 8 host=a" \
  "" \
  "gport.metric 9 1700000060" | tsd_talk "$GPORT")
check_eq "the Graphite port answers nothing" "" "$out"
check_eq "commands and put lines are refused there (3 more)" 6 "$(stat tsd.graphite.lines rejected)"
r=$(curl -sg "$U/api/query?start=1699999000&end=1700000100&m=sum:gport.metric{source=graphite}")
check_eq "its Graphite lines are stored" \
  '[{"metric":"gport.metric","tags":{"source":"graphite"},"aggregateTags":[],"dps":{"1700000000":7,"1700000060":9}}]' "$r"
r=$(curl -sg "$U/api/query?start=1699999000&end=1700000100&m=sum:gport.metric{host=a}")
check_contains "the put line was not stored" "$r" "error"
tsd_stop
check_eq "clean stop" 0 "$?"

TSD_DATA=""
tsd_start --tsd.graphite.enable=false --tsd.graphite.port=0
GPORT=$(gport)
out=$(printf 'plain.metric 3 1700000000\n' | tsd_talk)
check_contains "Graphite off: the line is an unknown command" "$out" "unknown command: plain.metric"
printf 'only.port 4 1700000000\n' | tsd_talk "$GPORT" >/dev/null
r=$(curl -sg "http://127.0.0.1:$TSD_PORT/api/query?start=1699999000&end=1700000100&m=sum:only.port{source=graphite}")
check_contains "... while the configured Graphite port still takes lines" "$r" '"dps":{"1700000000":4}'
tsd_stop
TSD_DATA=""
tsd_start
check "no Graphite port unless configured" test -z "$(sed -n '/Graphite plaintext port/p' "$TSD_LOG")"
tsd_stop
err=$(timeout 20 "$CTSDB" tsd --bind 127.0.0.1 --port 0 --data "$T/bad" \
  "--tsd.graphite.templates=measurement*.host" 2>&1)
rc=$?
check "a bad template stops the TSD at start (rc $rc)" test "$rc" -ne 0 -a "$rc" -ne 124
check_contains "... naming the key" "$err" "tsd.graphite.templates: only the last template part"
it_done
