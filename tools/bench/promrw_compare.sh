#!/usr/bin/env bash
# promrw_compare.sh - Prometheus remote write points/s: ctsdb's /api/v1/write against
# VictoriaMetrics' (Debian victoria-metrics, deps/bench.txt), the same WriteRequests from
# tools/bench/promrw_bench (built by `make <flavour> build/release/tools/bench/promrw_bench`).
# RUNS runs per target (default 3), each a fresh interval range of HOSTS x 20 metrics x
# INTERVALS samples (defaults 500 x 20 x 30 = 300,000), over CONNS connections of BATCH-sample
# requests. Both servers bind 127.0.0.1 on free ports, with temporary data directories, and are
# stopped by PID. ctsdb replies once the samples are in its write-ahead log; VictoriaMetrics
# replies once it has buffered them.
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

run() { # NAME PORT RUN
  local start=$((1356998400 + $3 * INTERVALS * 10))
  local out
  out=$("$BENCH" --port "$2" --hosts "$HOSTS" --intervals "$INTERVALS" --conns "$CONNS" \
    --batch "$BATCH" --start "$start") || { echo "$1 run $3: failed ($out)"; return; }
  echo "$1 run $3: $out"
}
for i in $(seq 1 "$RUNS"); do
  run ctsdb "$cport" "$i"
  [ -n "$vport" ] && run victoria-metrics "$vport" "$i"
done
