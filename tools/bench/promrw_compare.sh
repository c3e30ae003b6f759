#!/usr/bin/env bash
# promrw_compare.sh - Prometheus remote write points/s: ctsdb's /api/v1/write against
# VictoriaMetrics' (Debian victoria-metrics, deps/bench.txt), the same WriteRequests from
# tools/bench/promrw_bench (built by `make <flavour> build/release/tools/bench/promrw_bench`):
# the tsd_load workload and value model (2-decimal gauges, byte gauges near 5e9, fast byte
# counters, error counters, small integer gauges), one sample per TimeSeries as Prometheus'
# queue sends them.
# RUNS runs per target (default 3), side by side (run i of both servers one after the other,
# ctsdb first in odd runs, VictoriaMetrics first in even ones), each
# a fresh interval range of HOSTS x 20 metrics x INTERVALS samples (defaults 500 x 20 x 400 =
# 10,000 series, 4,000,000 samples a run: several seconds each), over CONNS connections of
# BATCH-sample requests. Both servers bind 127.0.0.1 on free ports, with temporary data
# directories, and are stopped by PID; every wait is bounded (RUN_TIMEOUT, default 600 s, for
# promrw_bench's sending of one run; QUERY_TIMEOUT, default 300 s, for the count of one run).
# Each run is timed from promrw_bench's first request until every sample of the run is
# queryable, the same on both sides (the rule of tsd_compare.sh):
#   ctsdb: a count query (/api/query, `sum:0all-count` of each metric over the run's range,
#          polled every 0.1 s) answers the run's full count;
#   VictoriaMetrics: /internal/force_flush, then a count (`sum(count_over_time({...}[range]))`
#          at the run's last sample, -search.latencyOffset 0s) answers the full count, polled.
# The server's CPU (utime + stime of its process, /proc/PID/stat) is counted over the same
# window; peak RSS (VmHWM) per server at the end. The time until each server REPLIED to the last
# request is printed too, labelled "replied" (ctsdb: samples in its write-ahead log, readable;
# VictoriaMetrics: samples buffered, not yet searchable), with the CPU until then.
# Timestamps: by default live data, as Prometheus sends it: every run's samples lie in the
# current hour, before the time the script started (10 s apart, or closer when the hour has
# not yet run long enough for RUNS x INTERVALS x 10 s; the script waits for the hour's 15th
# second at most), so ctsdb's ingest head takes them. BACKFILL=1 sends the same load at
# 2013-01-01 instead (hours long closed: ctsdb's head takes them as backfill chunks, or single
# cells with tsd.storage.head.backfill_idle_ms=0).
# Environment: RUNS, HOSTS, INTERVALS, CONNS, BATCH, BACKFILL, RUN_TIMEOUT, QUERY_TIMEOUT, CTSDB, BENCH,
# TSD_ARGS (extra ctsdb tsd options), NO_VM=1 (ctsdb only).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# cpu_ticks, hwm_kb, now_ns, loadavg, the count queries (shared with tsd_compare.sh)
source "$ROOT/tools/bench/bench_lib.sh"
CTSDB=${CTSDB:-$ROOT/bin/ctsdb}
BENCH=${BENCH:-$ROOT/build/release/tools/bench/promrw_bench}
RUNS=${RUNS:-3}; HOSTS=${HOSTS:-500}; INTERVALS=${INTERVALS:-400}; CONNS=${CONNS:-4}; BATCH=${BATCH:-500}
QUERY_TIMEOUT=${QUERY_TIMEOUT:-300}; RUN_TIMEOUT=${RUN_TIMEOUT:-600}
VM=$(command -v victoria-metrics || true)
[ "${NO_VM:-0}" = 1 ] && VM=
dir=$(mktemp -d "${TMPDIR:-/tmp}/promrw-XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done; kill -KILL "$p" 2>/dev/null; done
  rm -rf "$dir"
}
trap cleanup EXIT
[ -x "$BENCH" ] || { echo "promrw_bench not built: $BENCH" >&2; exit 2; }
mapfile -t metrics < <("$BENCH" --list-metrics)

# shellcheck disable=SC2086 # TSD_ARGS are words
"$CTSDB" tsd --bind 127.0.0.1 --port 0 --data "$dir/ctsdb" ${TSD_ARGS:-} 2>"$dir/tsd.log" &
pids+=($!)
cport=""
for _ in $(seq 1 200); do
  cport=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$dir/tsd.log" 2>/dev/null | head -1)
  [ -n "$cport" ] && break; sleep 0.1
done
[ -n "$cport" ] || { echo "ctsdb did not start" >&2; cat "$dir/tsd.log" >&2; exit 1; }
vport=""
if [ -n "$VM" ]; then
  vport=$(bench_free_port)
  "$VM" -storageDataPath "$dir/vm" -httpListenAddr "127.0.0.1:$vport" "${BENCH_VM_ARGS[@]}" \
    >"$dir/vm.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 200); do curl -s -m 5 "http://127.0.0.1:$vport/health" >/dev/null 2>&1 && break; sleep 0.1; done
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
per_run=$((HOSTS * 20 * INTERVALS))
declare -A sum_pts sum_q_ns sum_q_ticks sum_r_ns sum_r_ticks
fmt() { awk "BEGIN {printf \"$1\", $2}"; } # FORMAT EXPRESSION
queryable() { # NAME FIRST_MS: the run's count, 0 if it cannot be read
  local end=$(($2 + INTERVALS * step))
  if [ "$1" = ctsdb ]; then
    bench_ctsdb_count "$cport" "$2" "$end" 0all-count "${metrics[@]}"
  else
    bench_vm_flush "$vport"
    # (last - range, last]: exactly the run's samples
    bench_vm_count "$vport" '{__name__=~".+"}' "$((INTERVALS * step))ms" \
      "$(fmt %.3f "$((end - step)) / 1000")"
  fi
}
run() { # NAME PORT RUN PID
  local first=$((t0 + ($3 - 1) * INTERVALS * step))
  local out pts secs start_ns ca cr n=0 deadline t1 c1 polls=0
  out=$(timeout "$RUN_TIMEOUT" "$BENCH" --port "$2" --hosts "$HOSTS" --intervals "$INTERVALS" --conns "$CONNS" \
    --batch "$BATCH" --start-ms "$first" --step-ms "$step" --cpu-pid "$4") ||
    { echo "$1 run $3: failed ($out)"; return; }
  # points N seconds S rate R start_ns T cpu_ticks A B
  read -r _ pts _ secs _ _ _ start_ns _ ca cr <<<"$out"
  deadline=$(( $(date +%s) + QUERY_TIMEOUT ))
  while [ "$(date +%s)" -lt "$deadline" ]; do
    n=$(queryable "$1" "$first")
    polls=$((polls + 1))
    [ "$n" -ge "$pts" ] && break
    sleep 0.1
  done
  t1=$(now_ns); c1=$(cpu_ticks "$4")
  if [ "$n" -lt "$pts" ]; then
    echo "$1 run $3: WARNING: counts $n of $pts samples after $QUERY_TIMEOUT s (not rated)"
    return
  fi
  local qs=$(( t1 - start_ns ))
  sum_pts[$1]=$(( ${sum_pts[$1]:-0} + pts ))
  sum_q_ns[$1]=$(( ${sum_q_ns[$1]:-0} + qs )); sum_q_ticks[$1]=$(( ${sum_q_ticks[$1]:-0} + c1 - ca ))
  sum_r_ns[$1]=$(( ${sum_r_ns[$1]:-0} + $(fmt %.0f "$secs * 1e9") ))
  sum_r_ticks[$1]=$(( ${sum_r_ticks[$1]:-0} + cr - ca ))
  echo "$1 run $3: $pts samples; queryable: $(fmt %.0f "$pts / ($qs / 1e9)") points/s," \
    "$(fmt %.2f "$qs / 1e9") s, cpu_s $(fmt %.2f "($c1 - $ca) / $clk")," \
    "cpu_s_per_M $(fmt %.2f "($c1 - $ca) / $clk / $pts * 1e6"), $polls count(s) after the last reply;" \
    "replied: $(fmt %.0f "$pts / $secs") points/s, $secs s, cpu_s_per_M $(fmt %.2f "($cr - $ca) / $clk / $pts * 1e6");" \
    "load $(cut -d' ' -f1 /proc/loadavg)"
}
echo "machine: $(nproc) CPUs, load average $(loadavg) at $(date -u +%H:%M:%S) UTC; ctsdb $("$CTSDB" version 2>/dev/null | head -1)"
echo "load: $HOSTS hosts x 20 metrics = $((HOSTS * 20)) series x $INTERVALS intervals = $per_run samples a run," \
  "$RUNS runs, $CONNS connections, $BATCH-sample requests"
[ "${BACKFILL:-0}" = 1 ] && echo "timestamps: 2013-01-01 (backfill)" ||
  echo "timestamps: live, from $((t0 / 1000)) s, ${step} ms apart"
for i in $(seq 1 "$RUNS"); do # ctsdb first in odd runs, VictoriaMetrics first in even ones
  [ -n "$vport" ] && [ $((i % 2)) = 0 ] && run victoria-metrics "$vport" "$i" "${pids[1]}"
  run ctsdb "$cport" "$i" "${pids[0]}"
  [ -n "$vport" ] && [ $((i % 2)) = 1 ] && run victoria-metrics "$vport" "$i" "${pids[1]}"
done
echo "machine at the end: load average $(loadavg) at $(date -u +%H:%M:%S) UTC"
echo "pooled over the rated runs (sum of samples / sum of seconds; CPU s per million samples; peak RSS):"
targets=(ctsdb)
[ -n "$vport" ] && targets+=(victoria-metrics)
for i in "${!targets[@]}"; do
  t=${targets[$i]}
  [ -n "${sum_pts[$t]:-}" ] || { echo "  $t: no rated run"; continue; }
  echo "  $t: queryable $(fmt %.0f "${sum_pts[$t]} / (${sum_q_ns[$t]} / 1e9)") points/s," \
    "$(fmt %.2f "${sum_q_ticks[$t]} / $clk / ${sum_pts[$t]} * 1e6") cpu_s_per_M;" \
    "replied $(fmt %.0f "${sum_pts[$t]} / (${sum_r_ns[$t]} / 1e9)") points/s," \
    "$(fmt %.2f "${sum_r_ticks[$t]} / $clk / ${sum_pts[$t]} * 1e6") cpu_s_per_M;" \
    "peak RSS $(( $(hwm_kb "${pids[$i]}") / 1024 )) MB"
done
if [ -n "${sum_pts[ctsdb]:-}" ] && [ -n "${sum_pts[victoria-metrics]:-}" ]; then
  echo "ctsdb / VictoriaMetrics points/s: queryable" \
    "$(fmt %.2f "(${sum_pts[ctsdb]} / ${sum_q_ns[ctsdb]}) / (${sum_pts[victoria-metrics]} / ${sum_q_ns[victoria-metrics]})")," \
    "replied $(fmt %.2f "(${sum_pts[ctsdb]} / ${sum_r_ns[ctsdb]}) / (${sum_pts[victoria-metrics]} / ${sum_r_ns[victoria-metrics]})") (target >= 1.5 queryable);" \
    "CPU per sample until queryable $(fmt %.2f "(${sum_q_ticks[ctsdb]} / ${sum_pts[ctsdb]}) / (${sum_q_ticks[victoria-metrics]} / ${sum_pts[victoria-metrics]})")"
fi
