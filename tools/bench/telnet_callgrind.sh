#!/usr/bin/env bash
# telnet_callgrind.sh - instructions per point of the telnet put path's parse-and-batch step (the
# event loop's put_parse_line_memo, checks, series key and batch copy), counted by callgrind in
# tools/bench/telnet_micro on one connection's share of a tsd_load stream (4 connections: a
# host's 5 metrics of a connection together, one timestamp per interval), with the connection's
# memo and without it (every line parsed afresh). Deterministic enough to compare two builds on
# a shared machine; the event loop's reads, the log and the store are not counted
# (tools/bench/promrw_callgrind.sh telnet counts the whole TSD).
#
# Usage: tools/bench/telnet_callgrind.sh [HOSTS [INTERVALS]]   (defaults 100 40: 20,000 points)
# Environment: MICRO (build/release/tools/bench/telnet_micro), FUNCS (functions whose inclusive
# counts are printed per point too), KEEP=dir keeps the callgrind output there.
set -euo pipefail
cd "$(dirname "$0")/../.."
hosts=${1:-100}
intervals=${2:-40}
MICRO=${MICRO:-build/release/tools/bench/telnet_micro}
FUNCS=${FUNCS:-bench_lines put_parse_line_memo put_parse_line ingest_batch_add_key ingest_batch_add}
[ -x "$MICRO" ] || { echo "$0: $MICRO is not built (make bench)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/ctsdb-tncg.XXXXXX")
trap 'if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP"; cp "$work"/cg.* "$KEEP"/; fi; rm -rf "$work"' EXIT
cc -O2 -pthread -o "$work/tsd_load" tools/bench/tsd_load.c -lm
"$work/tsd_load" --gen "$work/stream" --conns 4 --hosts "$hosts" --intervals "$intervals" \
  --start 1356998400 >/dev/null
for variant in memo no-memo; do
  flag=
  [ "$variant" = no-memo ] && flag=--no-memo
  valgrind --tool=callgrind --toggle-collect='bench_lines*' --callgrind-out-file="$work/cg.$variant" \
    "$MICRO" "$work/stream/conn0.telnet" $flag >"$work/out" 2>"$work/vg.log"
  total=$(awk '{print $2}' "$work/out")
  echo "$variant: $(cat "$work/out")"
  callgrind_annotate --inclusive=yes "$work/cg.$variant" 2>/dev/null >"$work/ann"
  for f in $FUNCS; do
    # the line "N (P%)  file:function [binary]" of f
    ir=$(sed 's/([^)]*)//' "$work/ann" | awk -v f="$f" 'substr($3, 1, 1) == "[" && length($2) > length(f) && substr($2, length($2) - length(f)) == ":" f && !done { gsub(",", "", $1); print $1; done = 1 }')
    [ -n "$ir" ] || continue
    awk -v f="$f" -v ir="$ir" -v n="$total" 'BEGIN { printf "  %-24s %10.1f instructions/point (inclusive)\n", f, ir / n }'
  done
done
