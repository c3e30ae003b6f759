#!/usr/bin/env bash
# engine_bench_callgrind.sh - instructions per read operation of ctsdb's engine, deterministic
# (callgrind counts instructions of the benchmarking thread only; background flushes and
# compactions run in other threads). Builds a database natively with engine_bench -e ctsdb -b
# fillrandom,overwrite -k (closed cleanly, so everything is in block files), then runs the four
# read workloads on a copy of it under valgrind --tool=callgrind --separate-threads=yes with a
# dump after each full scan, so that readseq and readreverse land in parts of their own, and
# prints instructions per Get (readrandom), per row (readseq, readreverse) and per seek
# (seekrandom). -D reuses a database kept from an earlier run (its directory holding `ctsdb`),
# so two builds (BENCH_BIN) can be compared on the same files.
#
# Usage: tools/bench/engine_bench_callgrind.sh [-n N] [-c cache_mb] [-w write_buffer_mb] [-D dir]
# (defaults: N = 200000, cache 64 MiB, write buffer 8 MiB).
set -euo pipefail
cd "$(dirname "$0")/../.."
n=200000
cache=64
wb=8
db=
while getopts "n:c:w:D:" o; do
  case $o in
    n) n=$OPTARG ;;
    c) cache=$OPTARG ;;
    w) wb=$OPTARG ;;
    D) db=$OPTARG ;;
    *) echo "usage: $0 [-n N] [-c cache_mb] [-w write_buffer_mb]" >&2; exit 2 ;;
  esac
done
bin=${BENCH_BIN:-build/release/tools/bench/engine_bench}
[ -x "$bin" ] || { echo "$0: $bin is not built (make $bin)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/ctsdb-cg.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ -z "$db" ]; then
  db=$work/db
  "$bin" -n "$n" -c "$cache" -w "$wb" -e ctsdb -b fillrandom,overwrite -d "$db" -k >/dev/null 2>&1
fi
mkdir -p "$work/r"
cp -a "$db/ctsdb" "$work/r/ctsdb"
valgrind --tool=callgrind --separate-threads=yes --dump-after=ct_scan \
  --callgrind-out-file="$work/cg.out" "$bin" -n "$n" -c "$cache" -w "$wb" -e ctsdb \
  -b readrandom,readseq,readreverse,seekrandom -d "$work/r" >"$work/run.txt" 2>&1
rows=$(awk '$1 == "ctsdb" && $2 == "readseq" {sub(/\(/, "", $7); print $7}' "$work/run.txt")
incl() { # file function: inclusive instructions of function in that dump
  callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null |
    awk -v f=":$2 " '!done && index($0, f) && $1 ~ /^[0-9,]+$/ {gsub(",", "", $1); print $1; done = 1}'
}
# part 1: readrandom, readseq; part 2: readreverse; part 3 (main thread): seekrandom
get=$(incl "$work/cg.out.1-01" ct_get)
seq=$(incl "$work/cg.out.1-01" ct_scan)
rev=$(incl "$work/cg.out.2-01" ct_scan)
seek=$(incl "$work/cg.out-01" ct_seek)
echo "callgrind, main thread, N=$n, cache ${cache} MiB, write buffer ${wb} MiB, $rows rows"
echo "readrandom  $((get / n)) instructions per Get"
echo "readseq     $((seq / rows)) instructions per row"
echo "readreverse $((rev / rows)) instructions per row"
echo "seekrandom  $((seek / n)) instructions per seek"
