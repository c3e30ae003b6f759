#!/usr/bin/env bash
# tsd_compare.sh - TSD ingest benchmark: the same deterministic devops stream (tsd_load.c), in
# the same run, sent to ctsdb, to VictoriaMetrics (Debian victoria-metrics, through its
# OpenTSDB telnet and HTTP listeners) and to a bare reader (tsd_baseline.c), all on loopback.
#
# Reports per target and protocol: points/s until everything is queryable, CPU seconds per
# million points, peak RSS, and bytes on disk per point.
#   ctsdb: a telnet connection's `version` reply / an HTTP 204 means its points are in the
#          write-ahead log and the memstore, i.e. readable by scans, so the run ends at the
#          last acknowledgement; the TSD's datapoints.written counter is checked afterwards.
#   VictoriaMetrics: its listeners acknowledge nothing, so the run ends when a query counts
#          every sample (polled every 0.1 s, with -search.latencyOffset=0s); if the count, once
#          above 0, stops growing for 20 s, it is rated on the samples it stored (with a warning).
#   bare reader: run first and again last; the target ratio uses the mean of the two.
# The rate is timed around the whole tsd_load process, so it includes tsd_load generating its
# stream (~0.1 s for the default one, the same for every target); tsd_load's own figure (send
# start to last acknowledgement, without that) is printed too ("load-timed"), for ctsdb and the
# bare reader. ctsdb's background work (flushes with the hourly compaction, at a lower CPU
# priority) partly runs after the last acknowledgement: "cpu_s/Mpoint settled" adds the CPU the
# TSD used until it was idle again (no CPU for 0.5 s, at most 10 s).
# Ends with the ratios the targets are stated in (issue 6).
# Usage: tools/bench/tsd_compare.sh [tsd_load options, e.g. --hosts 1000 --intervals 60]
# Environment: CONNS (default 4), BENCH_DIR (default build/bench-tsd), CTSDB (bin/ctsdb),
# TSD_ARGS (extra ctsdb tsd options, e.g. --tsd.storage.write_threads=2).
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
CTSDB=${CTSDB:-$root/bin/ctsdb}
CONNS=${CONNS:-4}
dir=${BENCH_DIR:-$root/build/bench-tsd}
rm -rf "$dir"
mkdir -p "$dir"
cc -O2 -pthread -o "$dir/tsd_load" tools/bench/tsd_load.c -lm || exit 1
cc -O2 -pthread -o "$dir/tsd_baseline" tools/bench/tsd_baseline.c || exit 1
VM=$(command -v victoria-metrics || true)

pids=()
cleanup() { for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hwm_kb() { sed -n 's/^VmHWM:[^0-9]*\([0-9]*\).*/\1/p' "/proc/$1/status"; }
now_ns() { date +%s%N; }
wait_line() { # FILE PATTERN: waits up to 20 s for a line
  for _ in $(seq 1 200); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1
}

load_args=("$@")
points=$("$dir/tsd_load" --conns 1 "${load_args[@]}" --count)
start=$(( $(date +%s) / 3600 * 3600 - 3 * 86400 ))
echo "stream: $points points per protocol (${load_args[*]:-defaults}), $CONNS connections, start $start"
results=()
declare -A rates
declare -A load_rates

report() { # NAME PROTO POINTS NS CPU_TICKS
  local rate cpu
  rate=$(python3 -c "print(round($3 / ($4 / 1e9)))")
  rates["$1 $2"]=$rate
  cpu=$(python3 -c "print(round($5 / 100.0 / ($3 / 1e6), 2))")
  results+=("$(printf '%-16s %-7s %12s %14s' "$1" "$2" "$rate" "$cpu")")
  echo "  $1 $2: $rate points/s, $cpu CPU s per million points"
}

load_rate() { # KEY: tsd_load's own rate from $dir/load.out ("points N seconds S rate R")
  load_rates["$1"]=$(awk '{print $6}' "$dir/load.out")
  echo "    (load-timed: ${load_rates[$1]} points/s, send start to last acknowledgement)"
}
settle() { # PID CPU_TICKS_AT_START NAME: CPU s per million points once the process is idle
  local last now i
  last=$(cpu_ticks "$1")
  for i in $(seq 1 20); do
    sleep 0.5
    now=$(cpu_ticks "$1")
    [ "$now" -eq "$last" ] && break
    last=$now
  done
  settled["$3"]=$(python3 -c "print(round(($now - $2) / 100.0 / ($points / 1e6), 2))")
  echo "    (with the background work it left, until idle: ${settled[$3]} CPU s per million points)"
}
declare -A settled

# ---- baseline: read and split only --------------------------------------------------------
# Run first and again last (every other server stopped); the ratio uses the mean of the two, so
# that the machine's load changing during the run swings it less (both rates are printed).
baseline_run() { # NAME
  "$dir/tsd_baseline" >"$dir/baseline.out" 2>"$dir/baseline.log" &
  local bpid=$! bport c0 t0 t1 c1
  pids+=("$bpid")
  wait_line "$dir/baseline.log" "listening on" || { echo "baseline did not start"; exit 1; }
  bport=$(sed -n 's/.*:\([0-9]*\)$/\1/p' "$dir/baseline.log")
  c0=$(cpu_ticks "$bpid"); t0=$(now_ns)
  "$dir/tsd_load" --port "$bport" --ack --conns "$CONNS" --start "$start" "${load_args[@]}" >"$dir/load.out"
  t1=$(now_ns); c1=$(cpu_ticks "$bpid")
  report "$1" telnet "$points" $((t1 - t0)) $((c1 - c0))
  load_rate "$1 telnet"
  base_hwm=$(hwm_kb "$bpid")
  kill -TERM "$bpid"; wait "$bpid" 2>/dev/null
  rm -f "$dir/baseline.log"
}
baseline_run baseline

# ---- ctsdb --------------------------------------------------------------------------------
"$CTSDB" tsd --bind 127.0.0.1 --port 0 --data "$dir/ctsdb" ${TSD_ARGS:-} 2>"$dir/ctsdb.log" &
cpid=$!; pids+=("$cpid")
wait_line "$dir/ctsdb.log" "listening on" || { echo "ctsdb did not start"; cat "$dir/ctsdb.log"; exit 1; }
cport=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$dir/ctsdb.log")
written() { curl -s "http://127.0.0.1:$cport/api/stats" | python3 -c '
import json, sys
print(sum(int(d["value"]) for d in json.load(sys.stdin) if d["metric"] == "tsd.datapoints.written"))'; }
metric_list=$("$dir/tsd_load" --conns 1 "${load_args[@]}" --intervals 1 --print | awk '!s[$2]++ {print $2}' | head -20)
ctsdb_count() { # START END: points of every metric in [START, END)
  local q="start=$1&end=$2" m
  for m in $metric_list; do q="$q&m=sum:0all-count:$m"; done
  curl -s "http://127.0.0.1:$cport/api/query?$q" | python3 -c '
import json, sys
try:
    print(int(sum(float(v) for r in json.load(sys.stdin) for v in r["dps"].values())))
except Exception:
    print(0)'
}
ctsdb_queryable() { # START: polls the count every 0.1 s (at most 120 s) until it is every point
  local n=0
  for _ in $(seq 1 1200); do
    n=$(ctsdb_count "$1" $(($1 + 86400)))
    [ "$n" -ge "$points" ] && return 0
    sleep 0.1
  done
  echo "  WARNING: ctsdb counts $n of $points points after 120 s"
}
c0=$(cpu_ticks "$cpid"); t0=$(now_ns)
"$dir/tsd_load" --port "$cport" --ack --conns "$CONNS" --start "$start" "${load_args[@]}" >"$dir/load.out"
ctsdb_queryable "$start"
t1=$(now_ns); c1=$(cpu_ticks "$cpid")
report ctsdb telnet "$points" $((t1 - t0)) $((c1 - c0))
load_rate "ctsdb telnet"
settle "$cpid" "$c0" "ctsdb telnet"
[ "$(written)" -eq "$points" ] || echo "  WARNING: ctsdb wrote $(written) of $points telnet points"
c0=$(cpu_ticks "$cpid"); t0=$(now_ns)
"$dir/tsd_load" --port "$cport" --mode http --conns "$CONNS" --start $((start + 86400)) "${load_args[@]}" >"$dir/load.out"
ctsdb_queryable $((start + 86400))
t1=$(now_ns); c1=$(cpu_ticks "$cpid")
report ctsdb http "$points" $((t1 - t0)) $((c1 - c0))
load_rate "ctsdb http"
settle "$cpid" "$c0" "ctsdb http"
[ "$(written)" -eq $((2 * points)) ] || echo "  WARNING: ctsdb wrote $(written) of $((2 * points)) points"
ctsdb_hwm=$(hwm_kb "$cpid")
kill -TERM "$cpid"; wait "$cpid"
ctsdb_disk=$(du -sb "$dir/ctsdb" | cut -f1)
# the write-ahead log left after the clean stop (docs/engine.md: none once every memstore is
# flushed), counted in ctsdb_disk; printed so that the figure is known to be block files
ctsdb_wal=$(find "$dir/ctsdb" -path '*/wal/*' -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
echo "  ctsdb after a clean stop: $ctsdb_disk bytes in $dir/ctsdb, of which write-ahead log $ctsdb_wal"

# ---- VictoriaMetrics ------------------------------------------------------------------------
if [ -n "$VM" ]; then
  vh=$(free_port); vt=$(free_port); vp=$(free_port)
  "$VM" -storageDataPath "$dir/vm" -httpListenAddr "127.0.0.1:$vh" \
    -opentsdbListenAddr "127.0.0.1:$vt" -opentsdbHTTPListenAddr "127.0.0.1:$vp" \
    -retentionPeriod 100y -search.latencyOffset 0s -search.disableCache -loggerLevel ERROR >"$dir/vm.log" 2>&1 &
  vpid=$!; pids+=("$vpid")
  for _ in $(seq 1 200); do curl -s "http://127.0.0.1:$vh/health" >/dev/null 2>&1 && break; sleep 0.1; done
  vm_count() { # TIME: samples in the day before TIME
    curl -s "http://127.0.0.1:$vh/api/v1/query" --data-urlencode \
      'query=sum(count_over_time({__name__=~"sys[.].+"}[1d]))' --data-urlencode "time=$1" |
      python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(int(float(r[0]["value"][1])) if r else 0)'
  }
  vm_run() { # PROTO PORT START
    local c0 t0 t1 c1 n=0
    c0=$(cpu_ticks "$vpid"); t0=$(now_ns)
    if [ "$1" = telnet ]; then
      "$dir/tsd_load" --port "$2" --conns "$CONNS" --start "$3" "${load_args[@]}" >/dev/null
    else
      "$dir/tsd_load" --port "$2" --mode http --conns "$CONNS" --start "$3" "${load_args[@]}" >/dev/null
    fi
    # poll (force_flush, then the count) until every sample counts; if the count, once above 0, stops growing for 20 s
    # (VictoriaMetrics dropped some), stop and rate what it did store up to the last growth
    local last=-1 t_last c_last since=0
    t_last=$(now_ns); c_last=$(cpu_ticks "$vpid")
    for _ in $(seq 1 1200); do
      curl -s "http://127.0.0.1:$vh/internal/force_flush" >/dev/null
      n=$(vm_count $(($3 + 86400 - 1)))
      if [ "$n" -gt "$last" ]; then
        last=$n; t_last=$(now_ns); c_last=$(cpu_ticks "$vpid"); since=$(date +%s)
      fi
      [ "$n" -ge "$points" ] && break
      [ "$last" -gt 0 ] && [ $(($(date +%s) - since)) -ge 20 ] && break
      sleep 0.1
    done
    t1=$t_last; c1=$c_last
    [ "$n" -ge "$points" ] || echo "  WARNING: VictoriaMetrics shows $n of $points $1 points (rated on those)"
    [ "$last" -gt 0 ] || last=1
    report victoria-metrics "$1" "$last" $((t1 - t0)) $((c1 - c0))
  }
  vm_run telnet "$vt" "$start"
  vm_run http "$vp" $((start + 86400))
  vm_hwm=$(hwm_kb "$vpid")
  kill -TERM "$vpid"; wait "$vpid" 2>/dev/null
  vm_disk=$(du -sb "$dir/vm" | cut -f1)
else
  echo "victoria-metrics is not installed (deps/bench.txt): skipped"
fi

baseline_run baseline-again
b1=${rates["baseline telnet"]}
b2=${rates["baseline-again telnet"]}
rates["baseline-mean telnet"]=$(((b1 + b2) / 2))
lb1=${load_rates["baseline telnet"]}
lb2=${load_rates["baseline-again telnet"]}

echo
printf '%-16s %-7s %12s %14s\n' target proto points/s cpu_s/Mpoint
for r in "${results[@]}"; do echo "$r"; done
echo
printf '%-16s %10s %14s\n' target peak_rss_MB disk_B/point
printf '%-16s %10s %14s\n' baseline $((base_hwm / 1024)) -
printf '%-16s %10s %14s\n' ctsdb $((ctsdb_hwm / 1024)) "$(python3 -c "print(round($ctsdb_disk / (2 * $points), 1))")"
[ -n "$VM" ] && printf '%-16s %10s %14s\n' victoria-metrics $((vm_hwm / 1024)) "$(python3 -c "print(round($vm_disk / (2 * $points), 1))")"
ratio() { # A B: A / B, or - when either is missing
  if [ -n "${rates[$1]:-}" ] && [ -n "${rates[$2]:-}" ]; then
    python3 -c "print(f'{${rates[$1]} / ${rates[$2]}:.2f}')"
  else
    echo -
  fi
}
echo
echo "ctsdb telnet / bare reader (mean of its first and last run):" \
  "$(ratio 'ctsdb telnet' 'baseline-mean telnet') (target >= 0.50)"
echo "  load-timed (without tsd_load's stream generation): ctsdb ${load_rates["ctsdb telnet"]}" \
  "vs bare reader $lb1 / $lb2 points/s:" \
  "$(python3 -c "print(f'{${load_rates["ctsdb telnet"]} / (($lb1 + $lb2) / 2):.2f}')")"
echo "ctsdb CPU s per million points with the background work it left (until idle):" \
  "telnet ${settled["ctsdb telnet"]}, http ${settled["ctsdb http"]}"
echo "ctsdb / VictoriaMetrics: telnet $(ratio 'ctsdb telnet' 'victoria-metrics telnet')," \
  "http $(ratio 'ctsdb http' 'victoria-metrics http') (target >= 1.5)"
rm -rf "$dir/ctsdb" "$dir/vm"
