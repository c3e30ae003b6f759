# shellcheck shell=bash
# bench_lib.sh - shell functions shared by the ingest benchmarks (tsd_compare.sh,
# promrw_compare.sh): process CPU and peak RSS from /proc, the wall clock, free loopback ports,
# and the "every point queryable" counts both scripts end their clocks with. Sourced, not run.
# Invariants: every function returns (curl calls carry -m, loops are bounded); a count that
# cannot be read prints 0, so a caller polling for the full count keeps polling until its own
# deadline.

bench_free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; } # PID: utime + stime
hwm_kb() { sed -n 's/^VmHWM:[^0-9]*\([0-9]*\).*/\1/p' "/proc/$1/status"; } # PID: peak RSS, kB
now_ns() { date +%s%N; }
# thread_ticks PID: "NAME TICKS" a line, utime + stime summed over the threads of each name
# (the TSD names its threads: ct-writer, ct-flush, ...; the main thread is the event loop)
thread_ticks() {
  local t
  for t in /proc/"$1"/task/*; do
    echo "$(tr ' ' _ <"$t/comm" 2>/dev/null) $(awk '{print $14 + $15}' "$t/stat" 2>/dev/null)"
  done | awk 'NF == 2 {a[$1] += $2} END {for (k in a) print k, a[k]}' | sort
}
# thread_report BEFORE AFTER POINTS: each thread name's CPU seconds between two thread_ticks
# outputs and per million points, busiest first
thread_report() {
  join -a2 -e0 -o 0,1.2,2.2 <(echo "$1") <(echo "$2") |
    awk -v n="$3" '{d = ($3 - $2) / 100.0; if (d > 0) printf "%s %.2f %.3f\n", $1, d, d / (n / 1e6)}' |
    sort -k2,2nr | awk '{printf "%s%s %s s (%s s/Mpt)", sep, $1, $2, $3; sep = ", "} END {print ""}'
}
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
wait_line() { # FILE PATTERN: waits up to 20 s for a line
  for _ in $(seq 1 200); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1
}

# bench_ctsdb_count PORT START END DOWNSAMPLE METRIC...: ctsdb's count of the points of every
# METRIC in [START, END) (seconds or milliseconds, as /api/query takes them), one query with a
# `sum:DOWNSAMPLE:METRIC` per metric (DOWNSAMPLE e.g. 1h-count or 0all-count: both are counted
# as the rows are read, docs/query.md), the buckets summed here.
bench_ctsdb_count() {
  local port=$1 q="start=$2&end=$3" ds=$4 m
  shift 4
  for m in "$@"; do q="$q&m=sum:$ds:$m"; done
  curl -s -m 600 "http://127.0.0.1:$port/api/query?$q" | python3 -c '
import json, sys
try:
    print(int(sum(float(v) for r in json.load(sys.stdin) for v in r["dps"].values())))
except Exception:
    print(0)'
}

# bench_vm_count PORT SELECTOR WINDOW TIME: VictoriaMetrics' count of the samples of SELECTOR
# in (TIME - WINDOW, TIME] (WINDOW as PromQL writes a duration, e.g. 1d or 300000ms). Needs
# the server started with -search.latencyOffset 0s (else the last 30 s are not read).
bench_vm_count() {
  curl -s -m 600 "http://127.0.0.1:$1/api/v1/query" --data-urlencode \
    "query=sum(count_over_time($2[$3]))" --data-urlencode "time=$4" |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(int(float(r[0]["value"][1])) if r else 0)' 2>/dev/null || echo 0
}

# bench_vm_flush PORT: VictoriaMetrics makes its buffered samples searchable (its docs'
# /internal/force_flush, for tests and benchmarks)
bench_vm_flush() { curl -s -m 600 "http://127.0.0.1:$1/internal/force_flush" >/dev/null; }

# The options tsd_compare.sh and promrw_compare.sh start VictoriaMetrics with besides its
# listeners: counts of recent samples answered at once (-search.latencyOffset 0s), no cached
# answers, and counts over up to 1e8 series and 600 s allowed (its defaults, 300,000 series and
# 30 s, refuse or cut large counts, which then read as 0).
# shellcheck disable=SC2034 # used by the scripts that source this file
BENCH_VM_ARGS=(-retentionPeriod 100y -search.latencyOffset 0s -search.disableCache
  -search.maxUniqueTimeseries 100000000 -search.maxQueryDuration 600s -loggerLevel ERROR)
