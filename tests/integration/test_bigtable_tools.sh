#!/usr/bin/env bash
# test_bigtable_tools.sh - every `ctsdb` tool that opens the store, on Bigtable (Google's
# emulator) and on the embedded store, with the same commands but for the backend options:
# create-tables, import, query (reading the store), scan, uid assign/grep/lookup, mkmetric, fsck,
# each given the backend by --KEY=VALUE or by --config FILE. Each tool's output is checked
# (import then query and scan answer the imported points; uid assign then uid grep finds the
# name; fsck on the clean store says so; a metric made by mkmetric is found by a TSD on the same
# store). Also: create-tables with BIGTABLE_EMULATOR_HOST set and no backend refuses and
# creates no ./data; the TSD's start line and /api/stats (tsd.storage.info) name the backend and
# where its data is, on both backends.
#
# The emulator runs on 127.0.0.1 port 0 and is stopped by PID (SIGINT, then SIGKILL after 5 s);
# TSDs are the real daemon on 127.0.0.1 port 0 (lib.sh). Without the emulator (or a BIGTABLE=1
# build) the Bigtable half prints a SKIP line; with CI=true a missing emulator fails.
source "$(dirname "$0")/lib.sh"

tmp=$(it_tmpdir)
IT_DIRS+=("$tmp") # it_tmpdir runs in a subshell here
now=$(date +%s)
t0=$(((now - 7200) / 3600 * 3600))
cat >"$tmp/points.txt" <<EOF
tools.imp $t0 1 host=a
tools.imp $((t0 + 60)) 2 host=a
tools.imp $((t0 + 60)) 5 host=b
tools.other $t0 7 dc=x
EOF

# run_tools LABEL ARGS...: the tool sequence on the store ARGS name (ARGS go to every tool):
# create-tables, import, query, scan, uid, mkmetric, fsck, index
run_tools() {
  local label=$1
  shift
  local out rc
  out=$("$CTSDB" create-tables "$@" 2>&1)
  rc=$?
  check_eq "$label: create-tables exits 0" 0 "$rc"
  check_contains "$label: create-tables creates the three tables" "$out" "3 tables created, 0 already existed"
  out=$("$CTSDB" import "$@" "$tmp/points.txt" 2>&1)
  rc=$?
  check_eq "$label: import exits 0 ($out)" 0 "$rc"
  out=$("$CTSDB" query "$@" "$((t0 - 10))" "$((t0 + 120))" sum tools.imp host=a 2>&1)
  check_eq "$label: query answers the imported points" "tools.imp ${t0}000 1 {host=a}
tools.imp $((t0 + 60))000 2 {host=a}" "$out"
  out=$("$CTSDB" query "$@" "$((t0 - 10))" "$((t0 + 120))" sum tools.imp 2>&1)
  check_contains "$label: query aggregates across hosts" "$out" "tools.imp $((t0 + 60))000 7 {}"
  out=$("$CTSDB" scan "$@" "$((t0 - 10))" "$((t0 + 120))" tools.other 2>&1)
  check_contains "$label: scan decodes the imported row" "$out" "tools.other"
  check_contains "$label: scan shows the tag" "$out" "dc=x"
  out=$("$CTSDB" uid "$@" assign metrics tools.assigned 2>&1)
  rc=$?
  check_eq "$label: uid assign exits 0 ($out)" 0 "$rc"
  out=$("$CTSDB" uid "$@" grep metrics '^tools\.' 2>&1)
  check_contains "$label: uid grep finds the assigned name" "$out" "tools.assigned"
  check_contains "$label: uid grep finds the imported name" "$out" "tools.imp"
  out=$("$CTSDB" mkmetric "$@" tools.made 2>&1)
  check_contains "$label: mkmetric assigns" "$out" "metrics tools.made:"
  out=$("$CTSDB" uid "$@" metrics tools.made 2>&1)
  check_contains "$label: uid looks the made metric up" "$out" "tools.made"
  out=$("$CTSDB" fsck "$@" 2>&1)
  rc=$?
  check_eq "$label: fsck on a clean store exits 0 ($out)" 0 "$rc"
  check_contains "$label: fsck on a clean store finds nothing" "$out" "fsck: 0 problems found"
  out=$("$CTSDB" index "$@" rebuild 2>&1)
  check_eq "$label: index rebuild indexes the three series" "indexed 3 series" "$out"
  out=$("$CTSDB" index "$@" status 2>&1)
  check_eq "$label: index status after the rebuild" "complete" "$out"
}

# ---- the embedded store --------------------------------------------------------------------
unset BIGTABLE_EMULATOR_HOST
run_tools embedded --data "$tmp/emb"
printf 'tsd.storage.backend = embedded\ntsd.storage.directory = %s\n' "$tmp/emb" >"$tmp/emb.conf"
out=$("$CTSDB" uid --config "$tmp/emb.conf" grep metrics '^tools\.made$' 2>&1)
check_contains "embedded: uid takes the store from --config FILE" "$out" "tools.made"
TSD_DATA=$tmp/emb
tsd_start
check_contains "embedded: the start line names the data directory" "$(cat "$TSD_LOG")" "data in $tmp/emb"
out=$(curl -s -m 10 "http://127.0.0.1:$TSD_PORT/api/stats")
check_contains "embedded: /api/stats names the backend" "$out" "\"metric\":\"tsd.storage.info\""
info=$(printf '%s' "$out" | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["metric"] == "tsd.storage.info":
        print(s["value"], s["tags"].get("backend"), s["tags"].get("directory"))')
check_eq "embedded: tsd.storage.info is 1 with backend and directory tags" "1 embedded $tmp/emb" "$info"
out=$(curl -s -m 10 "http://127.0.0.1:$TSD_PORT/api/suggest?type=metrics&q=tools.ma")
check_eq "embedded: the TSD finds the metric mkmetric made" '["tools.made"]' "$out"
tsd_stop

# ---- Bigtable ------------------------------------------------------------------------------
emu_available "bigtable tools tests" || it_done
emu_start || it_done
addr=$EMU_ADDR

# the emulator is named but the backend is not: refused, nothing created in ./data
mkdir -p "$tmp/cwd"
bin=$(cd "$(dirname "$CTSDB")" && pwd)/$(basename "$CTSDB")
out=$(cd "$tmp/cwd" && "$bin" create-tables 2>&1)
rc=$?
check_eq "create-tables with the emulator set and no backend exits 2" 2 "$rc"
check_contains "create-tables says how to choose the backend" "$out" "give --tsd.storage.backend=bigtable"
check "create-tables with no backend created no ./data" test ! -e "$tmp/cwd/data"
out=$(cd "$tmp/cwd" && "$bin" uid grep metrics x 2>&1)
check_contains "a tool warns that the emulator is set but not used" "$out" "warning: BIGTABLE_EMULATOR_HOST is set but tsd.storage.backend is not"

out=$("$CTSDB" create-tables --tsd.storage.backend=bigtable 2>&1 | head -1)
check_eq "create-tables names the store it creates in" "store: Bigtable project 'ctsdb' instance 'ctsdb' on the emulator at $addr" "$out"
# (the tables exist now: run_tools' create-tables below would find them; recreate on a fresh
# instance instead so its counts hold)
run_tools bigtable --tsd.storage.backend=bigtable --tsd.storage.bigtable.instance=tools
printf 'tsd.storage.backend = bigtable\ntsd.storage.bigtable.instance = tools\n' >"$tmp/bt.conf"
out=$("$CTSDB" uid --config "$tmp/bt.conf" grep metrics '^tools\.made$' 2>&1)
check_contains "bigtable: uid takes the backend from --config FILE" "$out" "tools.made"
out=$("$CTSDB" query --config "$tmp/bt.conf" "$((t0 - 10))" "$((t0 + 120))" sum tools.other 2>&1)
check_eq "bigtable: query takes the backend from --config FILE" "tools.other ${t0}000 7 {dc=x}" "$out"
for tool in snapshot restore; do
  out=$("$CTSDB" $tool --tsd.storage.backend=bigtable --tsd.storage.bigtable.instance=tools s1 2>&1)
  rc=$?
  check_eq "bigtable: $tool exits 1" 1 "$rc"
  check_contains "bigtable: $tool says why" "$out" "snapshots are not supported on the bigtable backend"
done
check "bigtable: no tool created ./data" test ! -e "$tmp/cwd/data"

# a TSD on the same instance finds what the tools wrote, and says where its data is
unset TSD_DATA
tsd_start --tsd.storage.backend=bigtable --tsd.storage.bigtable.instance=tools
check_contains "bigtable: the start line names project, instance and emulator" "$(cat "$TSD_LOG")" "data in Bigtable project 'ctsdb' instance 'tools' on the emulator at $addr"
out=$(curl -s -m 10 "http://127.0.0.1:$TSD_PORT/api/suggest?type=metrics&q=tools.ma")
check_eq "bigtable: the TSD finds the metric mkmetric made" '["tools.made"]' "$out"
out=$(curl -s -m 10 "http://127.0.0.1:$TSD_PORT/api/query?start=$((t0 - 10))&end=$((t0 + 120))&m=sum:tools.imp%7Bhost=b%7D")
check_contains "bigtable: the TSD answers the imported points" "$out" "\"dps\":{\"$((t0 + 60))\":5}"
info=$(curl -s -m 10 "http://127.0.0.1:$TSD_PORT/api/stats" | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["metric"] == "tsd.storage.info":
        t = s["tags"]
        print(s["value"], t.get("backend"), t.get("project"), t.get("instance"), t.get("endpoint"))')
check_eq "bigtable: tsd.storage.info names backend, project, instance and endpoint" "1 bigtable ctsdb tools $addr" "$info"
tsd_stop

# an unreachable Bigtable: the error names the endpoint and the cause whole
out=$(BIGTABLE_EMULATOR_HOST=127.0.0.1:1 "$CTSDB" uid --tsd.storage.backend=bigtable --tsd.storage.bigtable.deadline_ms=2000 grep metrics x 2>&1)
rc=$?
check_eq "unreachable Bigtable: uid exits 1" 1 "$rc"
check_contains "unreachable Bigtable: the message names the endpoint" "$out" "127.0.0.1:1"

emu_stop
it_done
