#!/usr/bin/env bash
# test_tsd_memory.sh - tsd.core.memory_limit_bytes, the TSD's one memory bound (docs/tsd.md,
# "Memory limit"): explicit settings that do not fit refuse the start with the figures (exit 2,
# nothing opened); a limit alone starts, logs its split and shows the derived settings in
# /api/config; connections past the derived limit are refused; bodies up to the derived 1 MiB
# are read whole through the smaller HTTP buffers, larger ones refused; no limit changes nothing; and a
# small tsd.storage.memstore_total_bytes holds writes (tsd.ingest.memstore_waits) and flushes
# regions under their own flush size, losing nothing. Bounded: every wait has a count and time.
source "$(dirname "$0")/lib.sh"

MIB=1048576

# ---- refused starts ----------------------------------------------------------------------------
refused() { # DESC EXPECTED-MESSAGE ARGS...
  local desc=$1 want=$2 dir rc
  shift 2
  dir=$(it_tmpdir)
  timeout 30 "$CTSDB" tsd --bind 127.0.0.1 --port 0 --data "$dir/data" "$@" >"$dir/out" 2>"$dir/err"
  rc=$?
  check_eq "$desc: exit status 2" 2 "$rc"
  check_contains "$desc: says why" "$(cat "$dir/err")" "$want"
  if grep -q "listening on" "$dir/err"; then not_ok "$desc: never listens"; else ok "$desc: never listens"; fi
  if [ -e "$dir/data" ]; then not_ok "$desc: opens no store"; else ok "$desc: opens no store"; fi
}

refused "cache + memstores over the limit" \
  "tsd.core.memory_limit_bytes (256.0 MiB) is too small: the block cache and the memstores do not fit" \
  --tsd.core.memory_limit_bytes=$((256 * MIB)) --tsd.storage.block_cache_bytes=$((128 * MIB)) \
  --tsd.storage.memstore_total_bytes=$((128 * MIB))
refused "a limit under the fixed part" \
  "the fixed part and the ingest pool alone do not fit" --tsd.core.memory_limit_bytes=$((32 * MIB))
refused "64 MiB bodies on 100 connections" "tsd.core.connections.limit connections do not fit" \
  --tsd.core.memory_limit_bytes=$((512 * MIB)) --tsd.http.request.max_body=$((64 * MIB)) \
  --tsd.core.connections.limit=100
# the same settings in a config file are checked the same way
cfgdir=$(it_tmpdir)
printf 'tsd.core.memory_limit_bytes = %d\ntsd.storage.block_cache_bytes = %d\n' $((256 * MIB)) $((200 * MIB)) >"$cfgdir/tsd.conf"
refused "from a config file" "tsd.storage.block_cache_bytes does not fit" --config "$cfgdir/tsd.conf"

# ---- a limit alone ---------------------------------------------------------------------------
tsd_start --tsd.core.memory_limit_bytes=$((256 * MIB))
# fixed: 40 MiB + one writer's 8 MiB, whose 6 MiB series cache share becomes 1/32 of the limit
# (8 MiB): 50 MiB
check_contains "the split is logged" "$(cat "$TSD_LOG")" "memory: limit 256.0 MiB = fixed 50.0 + ingest"
cfg=$(curl -s "http://127.0.0.1:$TSD_PORT/api/config")
derived=$(python3 -c '
import json, sys
c = json.loads(sys.argv[1])
keys = ["tsd.core.connections.limit", "tsd.storage.block_cache_bytes", "tsd.storage.memstore_total_bytes",
        "tsd.storage.memstore_flush_bytes", "tsd.http.request.max_body", "tsd.query.limits.data_points.default"]
v = {k: int(c[k]) for k in keys}
# every part derived, under the limit, and the connections, queries and stores cover it
print("ok" if all(v.values()) and v["tsd.storage.block_cache_bytes"] + v["tsd.storage.memstore_total_bytes"] < 256 << 20
      and v["tsd.http.request.max_body"] == 1 << 20 else "bad %r" % v)
print(v["tsd.core.connections.limit"])
' "$cfg")
check_eq "/api/config shows the derived settings" ok "$(echo "$derived" | head -1)"
nconn=$(echo "$derived" | tail -1)
# connections past the derived limit are refused (the accepted ones stay usable)
conns=$(timeout 60 python3 -c '
import socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
held = []
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"version\n")
    f = s.makefile("rb")
    f.readline(); f.readline()
    held.append((s, f))
extra = socket.create_connection(("127.0.0.1", port), timeout=10)
try:
    extra.sendall(b"version\n")
    refused = extra.recv(100) == b""
except OSError:
    refused = True
print("refused" if refused else "accepted", len(held))
' "$TSD_PORT" "$nconn" 2>&1)
check_eq "connection $((nconn + 1)) is refused, $nconn are served" "refused $nconn" "$conns"
# under the limit HTTP reads 256 KiB at a time: a 0.9 MiB body (under the derived 1 MiB) is
# taken whole, a 1.5 MiB one refused with 413; the points of the first are all stored
bodies=$(timeout 60 python3 -c '
import json, sys, urllib.request, urllib.error
port = int(sys.argv[1])
def put(n, base):
    pts = [{"metric": "mem.body", "timestamp": base + i, "value": i, "tags": {"host": "a"}} for i in range(n)]
    body = json.dumps(pts).encode()
    try:
        with urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:%d/api/put" % port, data=body,
                                                           headers={"Content-Type": "application/json"}), timeout=30) as r:
            return r.status, len(body)
    except urllib.error.HTTPError as e:
        return e.code, len(body)
s1, l1 = put(12000, 1356998400)
# the big one: the TSD answers 413 from the head alone and closes, so send the head only
import socket
big = len(json.dumps([{"metric": "mem.body", "timestamp": 1357998400 + i, "value": i, "tags": {"host": "a"}}
                      for i in range(20000)]))
k = socket.create_connection(("127.0.0.1", port), timeout=30)
k.sendall(("POST /api/put HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
           % big).encode())
s2, l2 = int(k.makefile("rb").readline().split()[1]), big
k.close()
q = json.loads(urllib.request.urlopen("http://127.0.0.1:%d/api/query?start=1356998400&end=1357010399&m=sum:mem.body"
                                      % port, timeout=30).read())
print(s1, l1 > 900000 and l1 < 1048576, s2, l2 > 1048576, len(q[0]["dps"]) if q else 0)
' "$TSD_PORT" 2>&1)
check_eq "a 0.9 MiB body is stored whole, a 1.5 MiB one gets 413" "204 True 413 True 12000" "$bodies"
tsd_stop
check_eq "the TSD stops cleanly" 0 "$?"

# ---- no limit: nothing derived ----------------------------------------------------------------
tsd_start
cfg=$(curl -s "http://127.0.0.1:$TSD_PORT/api/config")
check_eq "without a limit the defaults stay (memstores: the 64 MiB default ceiling)" "67108864 67108864 0 67108864" "$(python3 -c '
import json, sys
c = json.loads(sys.argv[1])
print(c["tsd.storage.block_cache_bytes"], c["tsd.storage.memstore_total_bytes"], c["tsd.core.connections.limit"],
      c["tsd.http.request.max_body"])' "$cfg")"
if grep -q "memory: limit" "$TSD_LOG"; then not_ok "no split is logged"; else ok "no split is logged"; fi
tsd_stop

# ---- a 1 MiB memstore ceiling holds writes and flushes ---------------------------------------
# (backfill off: the 2013 points go to the memstores one cell each, not into the ingest head)
tsd_start --tsd.storage.memstore_total_bytes=$MIB --tsd.storage.memstore_flush_bytes=$((64 * MIB)) \
  --tsd.storage.head.backfill_idle_ms=0
res=$(timeout 120 python3 -c '
import json, socket, sys, urllib.request
port = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", port), timeout=60)
f = s.makefile("rb")
N = 60000
for k in range(0, N, 5000):
    lines = "".join("put mem.ceiling %d %d host=h%d\n" % (1356998400 + i, i, i % 7) for i in range(k, k + 5000))
    s.sendall((lines + "version\n").encode())
    f.readline(); f.readline()
def stat(name):
    for d in json.loads(urllib.request.urlopen("http://127.0.0.1:%d/api/stats" % port, timeout=30).read()):
        if d["metric"] == name:
            return int(d["value"])
q = json.loads(urllib.request.urlopen("http://127.0.0.1:%d/api/query?start=1356998400&end=%d&m=sum:mem.ceiling"
                                      % (port, 1356998400 + N), timeout=60).read())
got = len(q[0]["dps"]) if q else 0
print(stat("tsd.ingest.memstore_waits") > 0, stat("tsd.storage.flushes") > 0, got)
' "$TSD_PORT" 2>&1)
check_eq "writes waited for the 1 MiB memstore ceiling, regions flushed, all 60000 points read back" \
  "True True 60000" "$res"
tsd_stop
it_done
