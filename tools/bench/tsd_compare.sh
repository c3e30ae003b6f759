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
# The stream is generated once before any clock starts (tsd_load --gen: one file per connection
# and protocol under $dir/stream-*, telnet lines and complete HTTP requests) and every target is
# sent the same files (tsd_load --replay, sendfile; the load tool's RSS stays a few MiB at any
# size, printed as "load tool peak RSS"). The rate is timed around the replay process plus the
# queryability check; tsd_load's own figure (send start to last acknowledgement) is printed too
# ("load-timed"), for ctsdb and the bare reader. ctsdb's background work (flushes with the hourly compaction, at a lower CPU
# priority) partly runs after the last acknowledgement: "cpu_s/Mpoint settled" adds the CPU the
# TSD used until it was idle again (no CPU for 0.5 s, at most 10 s).
# Ends with the ratios the targets are stated in (issue 6).
# Usage: tools/bench/tsd_compare.sh [tsd_load options, e.g. --hosts 1000 --intervals 60]
# Environment: CONNS (default 4), BENCH_DIR (default build/bench-tsd; the streams need about
# 250 bytes a point on disk there, both protocols), CTSDB (bin/ctsdb), TSD_ARGS (extra ctsdb tsd
# options, e.g. --tsd.storage.write_threads=2), CTSDB_VARIANTS (several ctsdb configurations one
# after the other in the same run, `name=options;name=options`, e.g.
# 'head-on=;head-off=--tsd.storage.head.enable=false'; default one, `ctsdb=$TSD_ARGS`),
# BASELINE (runs of the bare reader: 2 first and last (default), 1 first only, 0 none), NO_VM=1
# (skip VictoriaMetrics), LOAD_TIMEOUT (seconds one replay may take, default 1800; a replay cut
# by it fails the run of that target with a warning), KEEP_STREAM=1 / REUSE_STREAM=1 (keep the
# generated streams for the next run / send the kept ones again), COUNT_BY=written (ctsdb: end
# its window when tsd.datapoints.written reaches the points sent instead of when the count query
# does, e.g. under tsd.core.memory_limit_bytes, whose derived datapoint limit a whole-day count
# over many series exceeds), PROTOS (default "telnet http"; e.g. telnet alone at the largest
# size), LIVE=1 (the live mode below).
#
# Two modes (each figure printed says which: "mode: backfill" / "mode: live"):
#   backfill (default): telnet's stream covers [H - 3 d, H - 2 d), HTTP's the day after, H the
#          current hour: every hour has closed before its points arrive (the path of a backfill
#          or of a collector that was down for days). ctsdb's ingest head takes them into
#          backfill chunks, handed off as hour cells for room and when idle (docs/head.md,
#          `tsd.storage.head.backfill_idle_ms`); with that key at 0 the head refuses them
#          (HEAD_LATE) and every point is written as a single cell.
#   live (LIVE=1): each protocol's stream is generated just before its pass (tsd_load --start
#          now: its last interval is the time of generation, the others before it), so the points
#          belong to the hours a TSD still holds open in its head, the path of collectors sending
#          the current time. Each protocol runs in its own invocation with fresh servers (telnet
#          first, then HTTP, under $BENCH_DIR/live-<proto>): both streams cover the same minutes
#          and series, so a second protocol sent to the same servers would repeat the first's
#          points. An hour closes at base + 3600 + grace (tsd.storage.ctsdb.compaction_delay,
#          default 0), so the hours before the current one of a stream that reaches back over the
#          top of the hour would close before or during the pass and their points become single
#          cells: the script passes ctsdb a grace that keeps every hour of the stream open until
#          LIVE_HOLD seconds (default 1800) after generation, and warns when a ctsdb pass ends
#          later than that. A stream spanning more than 3 base hours overflows the head's
#          HEAD_MAX_HOURS: refused. After each protocol the script prints how the points were taken
#          (/api/stats: datapoints.written, tsd.storage.data.cells type=point and type=hour, the
#          head's points, bytes and log): head-taken = written - point cells. The count query
#          reads the head and the store as one (docs/head.md, "How queries read the head").
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
root=$PWD
CTSDB=${CTSDB:-$root/bin/ctsdb}
CONNS=${CONNS:-4}
dir=${BENCH_DIR:-$root/build/bench-tsd}
LIVE=${LIVE:-0}
if [ "$LIVE" = 1 ] && [ "$(wc -w <<<"${PROTOS:-telnet http}")" -gt 1 ]; then
  # live: one invocation a protocol, each with fresh servers and a stream generated just before
  # its pass; the bare reader runs with the first protocol only
  rc=0 first=1
  for p in ${PROTOS:-telnet http}; do
    echo "==== live mode, protocol $p ($dir/live-$p)"
    if [ "$first" = 1 ]; then
      PROTOS=$p BENCH_DIR=$dir/live-$p bash "$0" "$@" || rc=1
    else
      BASELINE=0 PROTOS=$p BENCH_DIR=$dir/live-$p bash "$0" "$@" || rc=1
    fi
    first=0
  done
  exit "$rc"
fi
[ "$LIVE" = 1 ] && REUSE_STREAM=0 # a kept live stream would be old: generated anew each run
# REUSE_STREAM=1 keeps the streams a previous run left with KEEP_STREAM=1 (same size, CONNS)
PROTOS=${PROTOS:-telnet http}
gen_protos=$PROTOS # the protocols sent, and telnet for the bare reader
[ "${BASELINE:-2}" -ge 1 ] && [[ " $PROTOS " != *" telnet "* ]] && gen_protos="telnet $PROTOS"
reusable=1
for proto in $gen_protos; do [ -f "$dir/stream-$proto/meta" ] || reusable=0; done
if [ "${REUSE_STREAM:-0}" = 1 ] && [ "$reusable" = 1 ] && [ -f "$dir/stream-start" ]; then
  find "$dir" -mindepth 1 -maxdepth 1 ! -name 'stream-*' -exec rm -rf {} +
else
  REUSE_STREAM=0
  rm -rf "$dir"
fi
mkdir -p "$dir"
cc -O2 -pthread -o "$dir/tsd_load" tools/bench/tsd_load.c -lm || exit 1
cc -O2 -pthread -o "$dir/tsd_baseline" tools/bench/tsd_baseline.c || exit 1
VM=$(command -v victoria-metrics || true)

pids=()
cleanup() { for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; }
trap cleanup EXIT

# free ports, CPU ticks, peak RSS, the clock, the count queries (shared with promrw_compare.sh)
source "$root/tools/bench/bench_lib.sh"
free_port() { bench_free_port; }

load_args=("$@")
LOAD_TIMEOUT=${LOAD_TIMEOUT:-1800}
BASELINE=${BASELINE:-2}
points=$("$dir/tsd_load" --conns 1 "${load_args[@]}" --count)
start=$(( $(date +%s) / 3600 * 3600 - 3 * 86400 ))
[ "$REUSE_STREAM" = 1 ] && start=$(cat "$dir/stream-start")
if [ "$LIVE" = 1 ]; then
  echo "mode: live (the stream ends at the time of its generation: open hours, ctsdb's head)"
else
  echo "mode: backfill (the stream starts 3 days back: closed hours, backfill chunks in ctsdb's head)"
  echo "stream: $points points per protocol (${load_args[*]:-defaults}), $CONNS connections, start $start"
fi
echo "machine: $(nproc) CPUs, load average $(loadavg) at $(date -u +%H:%M:%S) UTC"

# ---- the streams, generated once before any clock starts ----------------------------------
# telnet covers [start, start + 1 d), HTTP the day after; every target is sent these files
gen_t0=$(now_ns)
: >"$dir/gen.out"
for proto in $gen_protos; do
  [ "$REUSE_STREAM" = 1 ] && break
  pstart=$start
  [ "$proto" = http ] && pstart=$((start + 86400))
  [ "$LIVE" = 1 ] && pstart=now # every stream of a live run ends now (one protocol a run)
  "$dir/tsd_load" --conns "$CONNS" "${load_args[@]}" --start "$pstart" --mode "$proto" \
    --gen "$dir/stream-$proto" >>"$dir/gen.out" || { echo "tsd_load --gen failed"; exit 1; }
done
live_grace=0
if [ "$LIVE" = 1 ]; then
  # meta: mode conns points start step intervals; the streams of a live run agree on them
  gen_s=$(date +%s)
  read -r _ _ _ start lstep lintervals <"$dir/stream-$PROTOS/meta"
  lend=$((start + lintervals * lstep)) # one step past the last point
  hours=$(( (lend - 1) / 3600 - start / 3600 + 1 ))
  LIVE_HOLD=${LIVE_HOLD:-1800}
  # the oldest hour closes at base + 3600 + grace: after generation + LIVE_HOLD
  live_grace=$(( gen_s + LIVE_HOLD - (start / 3600 * 3600 + 3600) ))
  [ "$live_grace" -lt 0 ] && live_grace=0
  echo "stream: $points points (${load_args[*]:-defaults}), $CONNS connections," \
    "[$start, $lend) = $(date -u -d "@$start" +%H:%M:%S)-$(date -u -d "@$lend" +%H:%M:%S) UTC," \
    "$hours base hour(s), generated at $(date -u -d "@$gen_s" +%H:%M:%S)"
  echo "ctsdb: --tsd.storage.ctsdb.compaction_delay=$live_grace (grace: the stream's oldest hour" \
    "closes at $(date -u -d "@$((start / 3600 * 3600 + 3600 + live_grace))" +%H:%M:%S) UTC, at least LIVE_HOLD=$LIVE_HOLD s after generation)"
  [ "$hours" -gt 3 ] && echo "  WARNING: the stream spans $hours base hours, the head holds 3 a series: the oldest hours' points are refused (single cells)"
fi
echo "$start" >"$dir/stream-start"
[ "$REUSE_STREAM" = 1 ] && echo "streams reused from the previous run (start $start)"
echo "streams generated in $(( ($(now_ns) - gen_t0) / 1000000 )) ms:" \
  "$(for proto in $gen_protos; do printf '%s %s bytes, ' "$proto" "$(du -sb "$dir/stream-$proto" | cut -f1)"; done)" \
  "(generator peak RSS $(awk '{print $8}' "$dir/gen.out" | sort -n | tail -1) kB)"
warm() { # PROTO: reads the stream of PROTO into the page cache, before a clock starts (a stream
  # reused from an earlier run, or pushed out by another pass, is otherwise read from disk by
  # whichever target comes first)
  cat "$dir/stream-$1"/* >/dev/null
}
replay() { # PROTO PORT [--ack]: sends the stream of PROTO, output in $dir/load.out; 0 if it all went
  timeout "$LOAD_TIMEOUT" "$dir/tsd_load" --port "$2" ${3:-} --replay "$dir/stream-$1" >"$dir/load.out"
  local rc=$?
  [ "$rc" -eq 0 ] || echo "  WARNING: tsd_load --replay $1 exited $rc (124: cut after $LOAD_TIMEOUT s)"
  return "$rc"
}
results=()
declare -A rates
declare -A cpus
declare -A load_rates
declare -A settled
load_hwm=0

report() { # NAME PROTO POINTS NS CPU_TICKS
  local rate cpu
  rate=$(python3 -c "print(round($3 / ($4 / 1e9)))")
  rates["$1 $2"]=$rate
  cpu=$(python3 -c "print(round($5 / 100.0 / ($3 / 1e6), 2))")
  cpus["$1 $2"]=$cpu
  results+=("$(printf '%-16s %-7s %12s %14s %8s   %s' "$1" "$2" "$rate" "$cpu" \
    "$(python3 -c "print(round($4 / 1e9, 1))")" "$(loadavg)")")
  echo "  $1 $2: $rate points/s, $cpu CPU s per million points, $(python3 -c "print(round($4 / 1e9, 1))") s (load average $(loadavg))"
}

load_rate() { # KEY: tsd_load's own rate from $dir/load.out ("points N seconds S rate R maxrss_kb X")
  load_rates["$1"]=$(awk '{print $6}' "$dir/load.out")
  local h
  h=$(awk '{print $8}' "$dir/load.out")
  [ -n "$h" ] && [ "$h" -gt "$load_hwm" ] && load_hwm=$h
  echo "    (load-timed: ${load_rates[$1]} points/s, send start to last acknowledgement)"
}
settle() { # PID CPU_TICKS_AT_START NAME [POINTS]: CPU s per million points once the process is idle
  local last now
  last=$(cpu_ticks "$1")
  now=$last
  for _ in $(seq 1 20); do
    sleep 0.5
    now=$(cpu_ticks "$1")
    [ "$now" -eq "$last" ] && break
    last=$now
  done
  settled["$3"]=$(python3 -c "print(round(($now - $2) / 100.0 / (${4:-$points} / 1e6), 2))")
  echo "    (with the background work it left, until idle: ${settled[$3]} CPU s per million points)"
}

# ---- baseline: read and split only --------------------------------------------------------
# Run first and again last (every other server stopped); the ratio uses the mean of the two, so
# that the machine's load changing during the run swings it less (both rates are printed).
base_hwm=0
baseline_run() { # NAME
  "$dir/tsd_baseline" >"$dir/baseline.out" 2>"$dir/baseline.log" &
  local bpid=$! bport c0 t0 t1 c1
  pids+=("$bpid")
  wait_line "$dir/baseline.log" "listening on" || { echo "baseline did not start"; exit 1; }
  bport=$(sed -n 's/.*:\([0-9]*\)$/\1/p' "$dir/baseline.log")
  warm telnet
  c0=$(cpu_ticks "$bpid"); t0=$(now_ns)
  replay telnet "$bport" --ack
  t1=$(now_ns); c1=$(cpu_ticks "$bpid")
  report "$1" telnet "$points" $((t1 - t0)) $((c1 - c0))
  load_rate "$1 telnet"
  base_hwm=$(hwm_kb "$bpid")
  kill -TERM "$bpid"; wait "$bpid" 2>/dev/null
  rm -f "$dir/baseline.log"
}
[ "$BASELINE" -ge 1 ] && baseline_run baseline

# ---- ctsdb, one pass per configuration ----------------------------------------------------
metric_list=$("$dir/tsd_load" --conns 1 "${load_args[@]}" --intervals 1 --print | awk '!s[$2]++ {print $2}' | head -20)
declare -A c_points c_hwm c_hwm_ingest c_disk c_wal c_disk_run c_wal_run
log_bytes() { # DIR: bytes of the log segments (wal/*.log, head/*.log) of a ctsdb data directory
  find "$1" \( -path '*/wal/*' -o -path '*/head/*' \) -name '*.log' -type f -printf '%s\n' | awk '{s += $1} END {printf "%.0f\n", s}'
}
disk_parts() { # DIR: bytes of each top-level part of a ctsdb data directory (wal, head, sst, ...)
  local d out=""
  for d in "$1"/*/; do
    [ -d "$d" ] && out="$out$(basename "$d") $(du -sb "$d" | cut -f1), "
  done
  echo "${out%, }"
}
variants=()
ctsdb_pass() { # NAME TSD_OPTIONS
  local name=$1 cdir="$dir/ctsdb-$1" cpid cport c0 t0 t1 c1 opts=$2
  [ "$LIVE" = 1 ] && opts="--tsd.storage.ctsdb.compaction_delay=$live_grace $opts"
  # shellcheck disable=SC2086 # the options are words
  "$CTSDB" tsd --bind 127.0.0.1 --port 0 --data "$cdir" $opts 2>"$dir/$name.log" &
  cpid=$!; pids+=("$cpid")
  wait_line "$dir/$name.log" "listening on" || { echo "$name did not start"; cat "$dir/$name.log"; exit 1; }
  cport=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$dir/$name.log")
  echo "$name: ctsdb tsd ${opts:-(defaults)}"
  written() { curl -s -m 60 "http://127.0.0.1:$cport/api/stats" | python3 -c '
import json, sys
print(sum(int(d["value"]) for d in json.load(sys.stdin) if d["metric"] == "tsd.datapoints.written"))'; }
  head_report() { # how the points were taken: the head's share, single cells, hour cells
    curl -s -m 60 "http://127.0.0.1:$cport/api/stats" | python3 -c '
import json, sys
v = {}
for d in json.load(sys.stdin):
    k = d["metric"] + "".join(" %s=%s" % kv for kv in sorted(d.get("tags", {}).items()) if kv[0] == "type")
    if k.startswith(("tsd.datapoints.written", "tsd.storage.data.cells", "tsd.head.")):
        v[k] = v.get(k, 0) + int(float(d["value"]))
w = v.get("tsd.datapoints.written", 0)
pc = v.get("tsd.storage.data.cells type=point", 0)
print("    points: written %d, taken by the head %d (%.1f%%), single cells %d, hour cells %d; "
      "head now: %d points, %d series, %d bytes, log %d bytes, %d open hour(s)" % (
      w, w - pc, 100.0 * (w - pc) / max(1, w), pc, v.get("tsd.storage.data.cells type=hour", 0),
      v.get("tsd.head.points", 0), v.get("tsd.head.series", 0), v.get("tsd.head.bytes", 0),
      v.get("tsd.head.log.bytes", 0), v.get("tsd.head.log.open_hours", 0)))'
  }
  ctsdb_count() { # START END: points of every metric in [START, END)
    # 1h-count, summed here: hour buckets are counted as the rows are read (query/qexec.c's
    # streamed downsample), where 0all-count would first hold every point of every series (over
    # 400 MB at 2000x1d: the count, not the ingest, would set the peak RSS)
    # shellcheck disable=SC2086 # the metric names are words
    bench_ctsdb_count "$cport" "$1" "$2" 1h-count $metric_list
  }
  ctsdb_queryable() { # START BASE: polls the count every 0.1 s (at most 120 s) until it is every point
    local n=0 deadline=$(( $(date +%s) + 120 ))
    while [ "$(date +%s)" -lt "$deadline" ]; do
      if [ "${COUNT_BY:-query}" = written ]; then
        n=$(( $(written) - $2 ))
      else
        # from the stream's first hour: a bucket stamped before the query's start is left out
        # (as OpenTSDB does), and a live stream starts mid-hour
        n=$(ctsdb_count $(($1 / 3600 * 3600)) $(($1 + 86400)))
      fi
      [ "$n" -ge "$points" ] && return 0
      sleep 0.1
    done
    echo "  WARNING: $name counts $n of $points points after 120 s"
  }
  local proto pstart base=0 done_n th0
  c_points[$name]=0
  for proto in $PROTOS; do
    pstart=$start
    [ "$proto" = http ] && [ "$LIVE" != 1 ] && pstart=$((start + 86400))
    warm "$proto"
    c0=$(cpu_ticks "$cpid"); t0=$(now_ns); th0=$(thread_ticks "$cpid")
    if [ "$proto" = telnet ]; then replay telnet "$cport" --ack; else replay http "$cport"; fi
    if [ $? -eq 0 ]; then
      echo "    threads until the last acknowledgement: $(thread_report "$th0" "$(thread_ticks "$cpid")" "$points")"
      # peak RSS of the ingest alone: the count queries below read every point of the day
      c_hwm_ingest[$name]=$(hwm_kb "$cpid")
      local ca ta
      ca=$(cpu_ticks "$cpid"); ta=$(now_ns)
      ctsdb_queryable "$pstart" "$base"
      t1=$(now_ns); c1=$(cpu_ticks "$cpid")
      done_n=$points
      load_rate "$name $proto"
      echo "    (at the last acknowledgement: $(python3 -c "print(round(($ca - $c0) / 100.0 / ($points / 1e6), 2))") CPU s per million points;" \
        "the count until queryable then took $(python3 -c "print(round(($t1 - $ta) / 1e9, 1))") s and $(python3 -c "print(round(($c1 - $ca) / 100.0, 1))") CPU s)"
    else # cut by LOAD_TIMEOUT: rated on the points written until the count stops growing
      local w last=-1 since
      since=$(date +%s)
      while [ $(($(date +%s) - since)) -lt 3 ] && [ $(($(date +%s) - since)) -lt 120 ]; do
        w=$(written)
        if [ "$w" -gt "$last" ]; then last=$w; t1=$(now_ns); c1=$(cpu_ticks "$cpid"); since=$(date +%s); fi
        sleep 0.2
      done
      done_n=$((last - base))
      echo "  $name $proto: cut after $LOAD_TIMEOUT s; $done_n of $points points written when its count stopped growing (rated on those)"
    fi
    report "$name" "$proto" "$done_n" $((t1 - t0)) $((c1 - c0))
    settle "$cpid" "$c0" "$name $proto" "$done_n"
    base=$((base + done_n))
    c_points[$name]=$base
    [ "$(written)" -eq "$base" ] || echo "  WARNING: $name wrote $(written) of $base points"
    head_report
  done
  if [ "$LIVE" = 1 ] && [ "$(date +%s)" -ge $((start / 3600 * 3600 + 3600 + live_grace)) ]; then
    echo "  WARNING: the pass ended after the stream's oldest hour closed (LIVE_HOLD=$LIVE_HOLD s is too short): see the single cells above"
  fi
  # on disk while it runs, once idle: the write-ahead log is released once its points are in
  # block files (the head's log counts here too, under head/): a region without a write for
  # tsd.storage.quiet_flush_ms (30 s unless set in the options) is flushed, so the figure is
  # taken once the logs are gone or have not shrunk for that long + 10 s (polled every second,
  # at most the quiet period + 60 s); how long that took is printed
  local quiet_ms=30000 q w0 wlast wsince tw0
  q=$(sed -n 's/.*--tsd\.storage\.quiet_flush_ms[= ]\([0-9]*\).*/\1/p' <<<"$2")
  [ -n "$q" ] && quiet_ms=$q
  tw0=$(date +%s)
  wlast=$(log_bytes "$cdir"); wsince=$tw0
  while [ "$wlast" -gt 0 ] && [ $(($(date +%s) - tw0)) -lt $((quiet_ms / 1000 + 60)) ] &&
    [ $(($(date +%s) - wsince)) -lt $((quiet_ms / 1000 + 10)) ]; do
    sleep 1
    w0=$(log_bytes "$cdir")
    if [ "$w0" -ne "$wlast" ]; then wlast=$w0; wsince=$(date +%s); fi
  done
  c_disk_run[$name]=$(du -sb "$cdir" | cut -f1)
  c_wal_run[$name]=$(log_bytes "$cdir")
  echo "  $name running, idle ($(($(date +%s) - tw0)) s after the last acknowledgement and the count, waiting for the logs to be released): ${c_disk_run[$name]} bytes in $cdir, of which logs (wal/, head/) ${c_wal_run[$name]}"
  echo "    by directory: $(disk_parts "$cdir")"
  head_report
  c_hwm[$name]=$(hwm_kb "$cpid")
  echo "  $name peak RSS: $((${c_hwm_ingest[$name]:-0} / 1024)) MB at the last acknowledgement (ingest), $((c_hwm[$name] / 1024)) MB with the count queries"
  kill -TERM "$cpid"; wait "$cpid"
  c_disk[$name]=$(du -sb "$cdir" | cut -f1)
  # the logs left after the clean stop (docs/engine.md: none once every memstore is flushed)
  c_wal[$name]=$(log_bytes "$cdir")
  echo "  $name after a clean stop: ${c_disk[$name]} bytes in $cdir, of which logs ${c_wal[$name]}"
  echo "    by directory: $(disk_parts "$cdir")"
  variants+=("$name")
  rm -rf "$cdir"
}
IFS=';' read -r -a vspecs <<<"${CTSDB_VARIANTS:-ctsdb=${TSD_ARGS:-}}"
for v in "${vspecs[@]}"; do
  [ "$v" = none ] && break # CTSDB_VARIANTS=none: VictoriaMetrics (and the bare reader) only
  ctsdb_pass "${v%%=*}" "${v#*=}"
done

# ---- VictoriaMetrics ------------------------------------------------------------------------
[ "${NO_VM:-0}" = 1 ] && VM=
if [ -n "$VM" ]; then
  vh=$(free_port); vt=$(free_port); vp=$(free_port)
  "$VM" -storageDataPath "$dir/vm" -httpListenAddr "127.0.0.1:$vh" \
    -opentsdbListenAddr "127.0.0.1:$vt" -opentsdbHTTPListenAddr "127.0.0.1:$vp" \
    "${BENCH_VM_ARGS[@]}" >"$dir/vm.log" 2>&1 &
  vpid=$!; pids+=("$vpid")
  for _ in $(seq 1 200); do curl -s "http://127.0.0.1:$vh/health" >/dev/null 2>&1 && break; sleep 0.1; done
  # (BENCH_VM_ARGS: -search.maxUniqueTimeseries, whose default, 300,000, refuses the count over
  # 1,000,000 series; -search.maxQueryDuration, whose default, 30 s, cut the count over 1,000,000
  # live series on a busy machine, which then read as 0)
  vm_count() { bench_vm_count "$vh" '{__name__=~"sys[.].+"}' 1d "$1"; } # TIME: samples in the day before TIME
  vm_run() { # PROTO PORT START
    local c0 t0 t1 c1 n=0
    warm "$1"
    c0=$(cpu_ticks "$vpid"); t0=$(now_ns)
    replay "$1" "$2"
    # poll (force_flush, then the count) until every sample counts; if the count, once above 0, stops growing for 20 s
    # (VictoriaMetrics dropped some), stop and rate what it did store up to the last growth
    local last=-1 t_last c_last since=0 deadline=$(( $(date +%s) + 600 ))
    t_last=$(now_ns); c_last=$(cpu_ticks "$vpid")
    while [ "$(date +%s)" -lt "$deadline" ]; do
      bench_vm_flush "$vh"
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
    vm_points=$((vm_points + last))
  }
  vm_points=0
  for proto in $PROTOS; do
    if [ "$LIVE" = 1 ]; then # the day before the stream's end (it holds the whole stream)
      if [ "$proto" = telnet ]; then vm_run telnet "$vt" $((lend - 86400)); else vm_run http "$vp" $((lend - 86400)); fi
    elif [ "$proto" = telnet ]; then vm_run telnet "$vt" "$start"; else vm_run http "$vp" $((start + 86400)); fi
  done
  vm_hwm=$(hwm_kb "$vpid")
  vm_disk_run=$(du -sb "$dir/vm" | cut -f1)
  kill -TERM "$vpid"; wait "$vpid" 2>/dev/null
  vm_disk=$(du -sb "$dir/vm" | cut -f1)
  echo "  victoria-metrics: $vm_disk_run bytes running (after force_flush), $vm_disk after its stop"
else
  echo "victoria-metrics: not run (not installed (deps/bench.txt) or NO_VM=1)"
fi

[ "$BASELINE" -ge 2 ] && baseline_run baseline-again

echo
echo "machine at the end: load average $(loadavg) at $(date -u +%H:%M:%S) UTC"
echo "mode: $([ "$LIVE" = 1 ] && echo "live ($PROTOS)" || echo backfill), stream ${load_args[*]:-defaults}"
printf '%-16s %-7s %12s %14s %8s   %s\n' target proto points/s cpu_s/Mpoint seconds "load average at its end"
for r in "${results[@]}"; do echo "$r"; done
echo
printf '%-16s %10s %16s %16s\n' target peak_rss_MB disk_B/pt_running disk_B/pt_stopped
[ "$BASELINE" -ge 1 ] && printf '%-16s %10s %16s %16s\n' baseline $((base_hwm / 1024)) - -
for v in "${variants[@]}"; do
  printf '%-16s %10s %16s %16s\n' "$v" $((c_hwm[$v] / 1024)) \
    "$(python3 -c "print(round(${c_disk_run[$v]} / max(1, ${c_points[$v]}), 2))")" \
    "$(python3 -c "print(round(${c_disk[$v]} / max(1, ${c_points[$v]}), 2))")"
done
[ -n "$VM" ] && printf '%-16s %10s %16s %16s\n' victoria-metrics $((vm_hwm / 1024)) \
  "$(python3 -c "print(round($vm_disk_run / max(1, $vm_points), 2))")" \
  "$(python3 -c "print(round($vm_disk / max(1, $vm_points), 2))")"
echo "load tool peak RSS: $((load_hwm / 1024)) MB (replay), streams on disk: $(du -sb "$dir"/stream-* | awk '{s += $1} END {printf "%.0f", s}') bytes"
ratio() { # A B: A / B, or - when either is missing
  if [ -n "${rates[$1]:-}" ] && [ -n "${rates[$2]:-}" ]; then
    python3 -c "print(f'{${rates[$1]} / ${rates[$2]}:.2f}')"
  else
    echo -
  fi
}
cpu_ratio() { # A B: CPU per point of A / of B
  if [ -n "${cpus[$1]:-}" ] && [ -n "${cpus[$2]:-}" ]; then
    python3 -c "print(f'{${cpus[$1]} / ${cpus[$2]}:.2f}')"
  else
    echo -
  fi
}
echo
if [ "$BASELINE" -ge 2 ]; then
  rates["baseline-mean telnet"]=$(((${rates["baseline telnet"]} + ${rates["baseline-again telnet"]}) / 2))
  base="baseline-mean telnet"
else
  base="baseline telnet"
fi
for v in "${variants[@]}"; do
  echo "$v telnet / bare reader: $(ratio "$v telnet" "$base") (target >= 0.50)"
  echo "$v CPU s per million points with the background work it left (until idle):" \
    "telnet ${settled["$v telnet"]:--}, http ${settled["$v http"]:--}"
  echo "$v / VictoriaMetrics points/s: telnet $(ratio "$v telnet" 'victoria-metrics telnet')," \
    "http $(ratio "$v http" 'victoria-metrics http') (target >= 1.5)"
  echo "$v / VictoriaMetrics CPU s per million points (until queryable): telnet" \
    "$(cpu_ratio "$v telnet" 'victoria-metrics telnet'), http $(cpu_ratio "$v http" 'victoria-metrics http') (target <= 0.7)"
done
rm -rf "$dir/vm"
[ "${KEEP_STREAM:-0}" = 1 ] || rm -rf "$dir"/stream-*
