#!/usr/bin/env bash
# scan_micro_callgrind.sh - instructions per row of the engine's forward and reversed scans over
# a TSD's data table (tools/bench/scan_micro.c), deterministic: callgrind counts the main
# thread's instructions of each pass (one dump each, CALLGRIND_ZERO_STATS before it) and the
# script divides by the rows the pass returned. The passes: forward with the block cache cold,
# forward warm, reversed (row filter, as the query layer's scans) warm, reversed cold after a
# reopen. Reads DATA_DIR read-only (a copy is not needed); a TSD must not hold it.
#
# Usage: tools/bench/scan_micro_callgrind.sh DATA_DIR   (BENCH_BIN: another scan_micro build)
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -eq 1 ] || { echo "usage: $0 DATA_DIR" >&2; exit 2; }
bin=${BENCH_BIN:-build/release/tools/bench/scan_micro}
[ -x "$bin" ] || { echo "$0: $bin is not built (make $bin)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/ctsdb-scg.XXXXXX")
trap 'rm -rf "$work"' EXIT
valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$work/cg.out" \
  "$bin" "$1" >"$work/run.txt" 2>"$work/vg.txt" || { cat "$work/vg.txt" >&2; exit 1; }
echo "callgrind, main thread, $1"
for f in "$work"/cg.out.*-01; do
  name=$(awk '$1 == "desc:" && $2 == "Trigger:" {print $NF}' "$f" | tr -d "'")
  [ -n "$name" ] && [ "${name#fwd}" != "$name" -o "${name#rev}" != "$name" ] || continue
  total=$(awk '$1 == "totals:" || $1 == "summary:" {print $2; exit}' "$f")
  rows=$(awk -v n="$name" '$1 == n {print $3}' "$work/run.txt")
  printf "%-9s %7d rows %12d instructions %6d a row\n" "$name" "$rows" "$total" $((total / rows))
done
