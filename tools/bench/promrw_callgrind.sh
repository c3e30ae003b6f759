#!/usr/bin/env bash
# promrw_callgrind.sh - instructions per point of the TSD's ingest paths, deterministic enough to
# compare two builds on a shared machine (callgrind counts instructions, not time): runs
# `ctsdb tsd` under valgrind --tool=callgrind, sends it one remote-write load (promrw_bench) or
# one telnet load (tsd_load --ack) or one /api/put load (tsd_load --mode http, 500-point
# bodies), stops it with SIGTERM (callgrind dumps at exit) and prints
# the TSD's instructions per point in total and inclusive in the functions named in FUNCS.
# The counts include the TSD's start and stop (the same for both builds; subtract a run with
# --intervals 0 to remove them) and the background flushes that ran before the stop.
#
# Usage: tools/bench/promrw_callgrind.sh prom|telnet|http [HOSTS [INTERVALS]]   (defaults 100 10:
# 100 x 20 metrics x 10 intervals = 20,000 points, 4 connections, 500-sample requests)
# Timestamps: the remote-write load is live data by default (the current hour, up to the
# second the load starts, 10 s apart or closer early in the hour: the TSD's ingest head takes
# it, as it takes Prometheus' traffic); BACKFILL=1 (and the telnet and http loads always) sends
# yesterday's hours instead (closed: one stored cell per point).
# Environment: CTSDB (bin/ctsdb), PORT (the TSD's port, default any free one), BENCH
# (build/release/tools/bench/promrw_bench), KEEP=dir keeps
# the callgrind output there, TSD_ARGS (extra tsd options), FUNCS
# (function names), BACKFILL.
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=${1:-prom}
hosts=${2:-100}
intervals=${3:-10}
CTSDB=${CTSDB:-bin/ctsdb}
BENCH=${BENCH:-build/release/tools/bench/promrw_bench}
FUNCS=${FUNCS:-workpool_main ingest_writer_main prom_write_work prometheus__write_request__unpack prometheus__write_request_lazy__unpack prom_series_cache_get prom_decode_labels prom_map_series put_check_typed ingest_batch_add telnet_process put_parse_line put_parse_line_memo api_put_work jsonput_read jsonput_parse jsonput_syntax_quick api_put_point put_check_point tsdstore_write tsdb_batch_write head_append_batch headlog_append wc_mutate_batch memstore_add wal_append_batch malloc free}
work=$(mktemp -d "${TMPDIR:-/tmp}/ctsdb-rwcg.XXXXXX")
tpid=
cleanup() {
  [ -n "$tpid" ] && kill -KILL "$tpid" 2>/dev/null
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP"; cp "$work"/cg.out* "$KEEP"/ 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
[ "$mode" != prom ] || [ -x "$BENCH" ] || { echo "$0: $BENCH is not built" >&2; exit 2; }
cc -O2 -pthread -o "$work/tsd_load" tools/bench/tsd_load.c -lm
valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" \
  "$CTSDB" tsd --bind 127.0.0.1 --port "${PORT:-0}" --data "$work/db" ${TSD_ARGS:-} 2>"$work/tsd.log" &
tpid=$!
port=
for _ in $(seq 1 600); do
  port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$work/tsd.log" | head -1)
  [ -n "$port" ] && break; sleep 0.1
done
[ -n "$port" ] || { echo "$0: the TSD did not start" >&2; cat "$work/tsd.log" >&2; exit 1; }
start=$(( $(date +%s) / 3600 * 3600 - 86400 ))
if [ "$mode" = prom ] && [ "${BACKFILL:-0}" != 1 ]; then
  now=$(date +%s)
  into=$((now % 3600))
  if [ "$into" -lt 15 ]; then sleep $((15 - into)); now=$(date +%s); into=$((now % 3600)); fi
  step=10000
  [ $(( (into - 2) * 1000 / intervals )) -lt "$step" ] && step=$(( (into - 2) * 1000 / intervals ))
  [ "$step" -ge 1 ] || step=1 # more intervals than milliseconds so far this hour
  out=$("$BENCH" --port "$port" --hosts "$hosts" --intervals "$intervals" \
    --start-ms $(( (now - 1) * 1000 - intervals * step )) --step-ms "$step")
elif [ "$mode" = prom ]; then
  out=$("$BENCH" --port "$port" --hosts "$hosts" --intervals "$intervals" --start "$start")
elif [ "$mode" = http ]; then
  out=$("$work/tsd_load" --port "$port" --mode http --batch 500 --hosts "$hosts" --intervals "$intervals" --start "$start")
else
  out=$("$work/tsd_load" --port "$port" --ack --hosts "$hosts" --intervals "$intervals" --start "$start")
fi
points=$(echo "$out" | awk '{print $2}')
kill -TERM "$tpid"
for _ in $(seq 1 1200); do kill -0 "$tpid" 2>/dev/null || break; sleep 0.1; done
wait "$tpid" 2>/dev/null || true
tpid=
callgrind_annotate "$work/cg.out" 2>/dev/null >"$work/self.txt"
total=$(awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}' "$work/self.txt")
echo "$mode: $points points ($out); TSD total $total instructions, $((total / (points > 0 ? points : 1))) per point"
callgrind_annotate --inclusive=yes --threshold=100 "$work/cg.out" 2>/dev/null >"$work/incl.txt"
for f in $FUNCS; do
  n=$(awk -v f=":$f " '!d && index($0 " ", f) && $1 ~ /^[0-9,]+$/ {gsub(",", "", $1); print $1; d = 1}' "$work/incl.txt")
  [ -n "$n" ] && printf '  %-36s %8d per point (inclusive)\n' "$f" $((n / points))
done
