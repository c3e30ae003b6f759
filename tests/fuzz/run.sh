#!/usr/bin/env bash
# run.sh SECONDS - runs every built fuzz target (build/fuzz/bin/fuzz_*): first its regression
# inputs once each, then libFuzzer for SECONDS on a scratch copy of its seed corpus (the committed
# corpus is never modified). Crashes are kept under test-output/fuzz/<name>/. Prints
# "ok - ..." / "not ok - ..." per target and "fuzz: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
secs=${1:-5}
passed=0
failed=0
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
for bin in build/fuzz/bin/fuzz_*; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin" | sed 's/^fuzz_//')
  out=test-output/fuzz/$name
  mkdir -p "$out"
  log=$out/log.txt
  : >"$log"
  reg=tests/fuzz/regressions/$name
  status=0
  if [ -d "$reg" ] && [ -n "$(ls -A "$reg" 2>/dev/null)" ]; then
    timeout 300 "$bin" "$reg"/* >>"$log" 2>&1 || status=1
  fi
  if [ "$status" -eq 0 ]; then
    work=$(mktemp -d)
    [ -d "tests/fuzz/corpus/$name" ] && cp -r "tests/fuzz/corpus/$name/." "$work/"
    timeout $((secs + 120)) "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
      -artifact_prefix="$out/" -print_final_stats=1 "$work" >>"$log" 2>&1 || status=1
    rm -rf "$work"
  fi
  if [ "$status" -eq 0 ]; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    echo "ok - fuzz $name (${runs:-?} runs)"
    passed=$((passed + 1))
  else
    echo "not ok - fuzz $name (see $log)"
    tail -30 "$log"
    failed=$((failed + 1))
  fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
