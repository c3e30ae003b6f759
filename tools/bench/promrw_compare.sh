#!/usr/bin/env bash
# promrw_compare.sh - Prometheus remote write points/s: ctsdb's /api/v1/write against
# VictoriaMetrics' (Debian victoria-metrics, deps/bench.txt), the same WriteRequests from
# tools/bench/promrw_bench (built by `make <flavour> build/release/tools/bench/promrw_bench`).
# RUNS runs per target (default 3), each a fresh interval range of HOSTS x 20 metrics x
# INTERVALS samples (defaults 500 x 20 x 30 = 300,000), over CONNS connections of BATCH-sample
# requests. Both servers bind 127.0.0.1 on free ports, with temporary data directories, and are
# stopped by PID. ctsdb replies once the samples are in its write-ahead log; VictoriaMetrics
# replies once it has buffered them.
# Timestamps: by default live data, as Prometheus sends it: every run's samples lie in the
# current hour, before the time the script started (10 s apart, or closer when the hour has
# not yet run long enough for RUNS x INTERVALS x 10 s; the script waits for the hour's 15th
# second at most), so ctsdb's ingest head takes them. BACKFILL=1 sends the same load at
# 2013-01-01 instead (hours long closed: one stored cell per sample on ctsdb).
# Each line also gives the server's CPU seconds during the run (utime + stime of the process,
# /proc/PID/stat; background work a server defers past its replies is not counted).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CTSDB=${CTSDB:-$ROOT/bin/ctsdb}
BENCH=${BENCH:-$ROOT/build/release/tools/bench/promrw_bench}
RUNS=${RUNS:-3}; HOSTS=${HOSTS:-500}; INTERVALS=${INTERVALS:-30}; CONNS=${CONNS:-4}; BATCH=${BATCH:-500}
VM=$(command -v victoria-metrics || true)
dir=$(mktemp -d "${TMPDIR:-/tmp}/promrw-XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done; kill -KILL "$p" 2>/dev/null; done
  rm -rf "$dir"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
[ -x "$BENCH" ] || { echo "promrw_bench not built: $BENCH" >&2; exit 2; }

"$CTSDB" tsd --bind 127.0.0.1 --port 0 --data "$dir/ctsdb" 2>"$dir/tsd.log" &
pids+=($!)
cport=""
for _ in $(seq 1 200); do
  cport=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$dir/tsd.log" | head -1)
  [ -n "$cport" ] && break; sleep 0.1
done
[ -n "$cport" ] || { echo "ctsdb did not start" >&2; cat "$dir/tsd.log" >&2; exit 1; }
vport=""
if [ -n "$VM" ]; then
  vport=$(free_port)
  "$VM" -storageDataPath "$dir/vm" -httpListenAddr "127.0.0.1:$vport" -retentionPeriod 100y \
    -loggerLevel ERROR >"$dir/vm.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 200); do curl -s "http://127.0.0.1:$vport/health" >/dev/null 2>&1 && break; sleep 0.1; done
fi

# the first sample's time of run 1 (ms) and the spacing of intervals (ms)
step=10000
if [ "${BACKFILL:-0}" = 1 ]; then
  t0=$((1356998400000 + INTERVALS * step))
else
  now=$(date +%s)
  into=$((now % 3600))
  if [ "$into" -lt 15 ]; then sleep $((15 - into)); now=$(date +%s); into=$((now % 3600)); fi
  need=$((RUNS * INTERVALS))
  [ $(( (into - 2) * 1000 / need )) -lt "$step" ] && step=$(( (into - 2) * 1000 / need ))
  if [ "$step" -lt 1 ]; then # more intervals than milliseconds so far this hour
    step=1
    echo "note: $need intervals do not fit this hour so far; the first ones are in a closed hour" >&2
  fi
  t0=$(( (now - 1) * 1000 - need * step ))
fi
clk=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
run() { # NAME PORT RUN PID
  local first=$((t0 + ($3 - 1) * INTERVALS * step))
  local out c0 c1
  c0=$(cpu_ticks "$4")
  out=$("$BENCH" --port "$2" --hosts "$HOSTS" --intervals "$INTERVALS" --conns "$CONNS" \
    --batch "$BATCH" --start-ms "$first" --step-ms "$step") ||
    { echo "$1 run $3: failed ($out)"; return; }
  c1=$(cpu_ticks "$4")
  local pts
  pts=$(echo "$out" | awk '{print $2}')
  echo "$1 run $3: $out cpu_s $(awk -v t=$((c1 - c0)) -v k="$clk" 'BEGIN {printf "%.2f", t / k}')" \
    "cpu_s_per_M $(awk -v t=$((c1 - c0)) -v k="$clk" -v p="$pts" 'BEGIN {printf "%.2f", t / k / (p > 0 ? p : 1) * 1e6}')" \
    "load $(cut -d' ' -f1 /proc/loadavg)"
}
[ "${BACKFILL:-0}" = 1 ] && echo "timestamps: 2013-01-01 (backfill)" ||
  echo "timestamps: live, from $((t0 / 1000)) s, ${step} ms apart"
for i in $(seq 1 "$RUNS"); do
  run ctsdb "$cport" "$i" "${pids[0]}"
  [ -n "$vport" ] && run victoria-metrics "$vport" "$i" "${pids[1]}"
done
