#!/usr/bin/env bash
# jsonput_callgrind.sh - instructions per point of the /api/put body path (parse + per-point
# callback: checks, series key, ingest batch), counted by callgrind in tools/bench/jsonput_micro
# (one body after another through tsd/api_put.c's code; the writer's instructions are not
# counted). Deterministic enough to compare two builds on a shared machine.
#
# Usage: tools/bench/jsonput_callgrind.sh [POINTS [ROUNDS]]   (defaults 500 40: 20,000 points)
# Environment: MICRO (build/release/tools/bench/jsonput_micro), FUNCS (functions whose
# inclusive counts are printed per point too), KEEP=dir keeps the callgrind output there.
set -euo pipefail
cd "$(dirname "$0")/../.."
points=${1:-500}
rounds=${2:-40}
MICRO=${MICRO:-build/release/tools/bench/jsonput_micro}
FUNCS=${FUNCS:-bench_body.constprop.0 jsonput_read jp_point api_put_point put_check_point_names ingest_batch_add}
[ -x "$MICRO" ] || { echo "$0: $MICRO is not built (make bench)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/ctsdb-jpcg.XXXXXX")
trap 'if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP"; cp "$work"/cg.out* "$KEEP"/; fi; rm -rf "$work"' EXIT
valgrind --tool=callgrind --toggle-collect='bench_body*' --callgrind-out-file="$work/cg.out" \
  "$MICRO" --points "$points" --rounds "$rounds" >"$work/out" 2>"$work/vg.log"
cat "$work/out"
total=$((points * rounds))
callgrind_annotate --inclusive=yes "$work/cg.out" 2>/dev/null >"$work/ann"
for f in $FUNCS; do
  # the line "N (P%)  file:function [binary]" of f
  ir=$(sed 's/([^)]*)//' "$work/ann" | awk -v f="$f" 'substr($3, 1, 1) == "[" && length($2) > length(f) && substr($2, length($2) - length(f)) == ":" f && !done { gsub(",", "", $1); print $1; done = 1 }')
  [ -n "$ir" ] || ir=0
  awk -v f="$f" -v ir="$ir" -v n="$total" 'BEGIN { printf "%-24s %10.1f instructions/point (inclusive)\n", f, ir / n }'
done
