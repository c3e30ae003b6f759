#!/usr/bin/env bash
# test_tsd_collectd.sh - a real collector: collectd's write_tsdb plugin (Debian collectd-core)
# pushes its load, memory and cpu metrics to the TSD over the telnet protocol on loopback,
# running in the foreground with a generated config for a bounded time and stopped by PID; the
# series are then in the store.
source "$(dirname "$0")/lib.sh"

if ! command -v collectd >/dev/null 2>&1 || [ ! -f /usr/lib/collectd/write_tsdb.so ]; then
  not_ok "collectd-core is not installed (deps/test.txt; make deps)"
  it_done
fi

tsd_start
dir=$(mktemp -d "${TMPDIR:-/tmp}/ctsdb-it-collectd-XXXXXX")
IT_DIRS+=("$dir")
cat >"$dir/collectd.conf" <<CONF
Hostname "ctsdb-it"
FQDNLookup false
Interval 1
BaseDir "$dir"
PIDFile "$dir/collectd.pid"
PluginDir "/usr/lib/collectd"
TypesDB "/usr/share/collectd/types.db"
LoadPlugin logfile
<Plugin logfile>
  LogLevel info
  File "$dir/collectd.log"
</Plugin>
LoadPlugin load
LoadPlugin memory
LoadPlugin cpu
LoadPlugin write_tsdb
<Plugin write_tsdb>
  <Node "ctsdb">
    Host "127.0.0.1"
    Port "$TSD_PORT"
    HostTags "source=collectd"
    StoreRates false
    AlwaysAppendDS false
  </Node>
</Plugin>
CONF
collectd -f -C "$dir/collectd.conf" >"$dir/collectd.out" 2>&1 &
cpid=$!
IT_PIDS+=("$cpid")
# wait (bounded) until the TSD has written points from collectd
written=0
for _ in $(seq 1 100); do
  written=$(curl -s "http://127.0.0.1:$TSD_PORT/api/stats" | python3 -c '
import json, sys
print(sum(int(d["value"]) for d in json.load(sys.stdin) if d["metric"] == "tsd.datapoints.written"))')
  [ "$written" -ge 20 ] && break
  sleep 0.2
done
sleep 2
kill -TERM "$cpid" 2>/dev/null
for _ in $(seq 1 50); do kill -0 "$cpid" 2>/dev/null || break; sleep 0.1; done
kill -KILL "$cpid" 2>/dev/null
wait "$cpid" 2>/dev/null
check "collectd wrote datapoints to the TSD (written: $written)" test "$written" -ge 20
errs=$(curl -s "http://127.0.0.1:$TSD_PORT/api/stats" | python3 -c '
import json, sys
print(sum(int(d["value"]) for d in json.load(sys.stdin) if d["metric"] == "tsd.rpc.errors"))')
check_eq "collectd's lines raised no errors" 0 "$errs"
tsd_stop
check_eq "clean stop" 0 "$?"
uids=$("$CTSDB" shell --data "$TSD_DATA" -e "scan 'tsdb-uid'" 2>&1)
check_contains "collectd's load metric is stored" "$uids" "load.load.shortterm column=id:metrics"
check_contains "collectd's memory metric is stored" "$uids" "memory.used.memory column=id:metrics"
check_contains "collectd's cpu metric is stored" "$uids" "cpu.0.cpu.idle column=id:metrics"
check_contains "collectd's fqdn tag is stored" "$uids" "fqdn column=id:tagk"
check_contains "collectd's host tag value is stored" "$uids" "ctsdb-it column=id:tagv"
check_contains "collectd's extra tag is stored" "$uids" "source column=id:tagk"
# the points, wherever they are (the store's rows, or the ingest head's log for the open hour)
pts=$("$CTSDB" query --data "$TSD_DATA" 1h-ago none cpu.0.cpu.idle 2>&1)
check "collectd's cpu points are read back from the data directory" python3 -c '
import sys; ls = [l for l in sys.argv[1].splitlines() if l.startswith("cpu.0.cpu.idle ")]; assert len(ls) >= 2, sys.argv[1][-300:]' "$pts"
it_done
