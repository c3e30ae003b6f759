#!/usr/bin/env bash
# query_micro_callgrind.sh - instructions a query of one /api/query body (tools/bench/query_micro.c)
# on a data directory, deterministic: callgrind counts the whole process once with 1 run and once
# with RUNS + 1 runs, on one scan thread; the difference divided by RUNS is a query's instructions
# without the process's start (loader, store open) and the first run's warm-up. Reads DATA_DIR
# read-only (a TSD must not hold it). QM_ROLLUPS=1 in the environment opens the rollup tables as
# query_micro does.
#
# Usage: tools/bench/query_micro_callgrind.sh DATA_DIR 'JSON BODY' [RUNS]   (default RUNS 10;
# BENCH_BIN: another query_micro build, e.g. one of the base commit, for a before/after)
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 2 ] || { echo "usage: $0 DATA_DIR 'JSON BODY' [RUNS]" >&2; exit 2; }
bin=${BENCH_BIN:-build/release/tools/bench/query_micro}
[ -x "$bin" ] || { echo "$0: $bin is not built (make $bin)" >&2; exit 1; }
runs=${3:-10}
count() { # count RUNS: the process's instructions
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$1" "$2" "$3" 1 2>&1 >/dev/null |
    awk '/Collected :/ {print $NF}'
}
one=$(count "$1" 1 "$2")
many=$(count "$1" $((runs + 1)) "$2")
[ -n "$one" ] && [ -n "$many" ] || { echo "$0: callgrind gave no count" >&2; exit 1; }
echo "$(( (many - one) / runs )) instructions a query ($runs runs, one thread, $bin)"
