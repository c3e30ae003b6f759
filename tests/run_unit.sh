#!/usr/bin/env bash
# run_unit.sh BUILD_DIR - runs every cmocka unit-test program under BUILD_DIR/tests/unit and
# prints their totals as the last line: "unit (<flavour>): N passed, N failed".
# Each program runs in its own temporary directory with a time limit; a crash or timeout counts
# as one failed test.
set -u
build=${1:-build/release}
flavour=$(basename "$build")
passed=0
failed=0
failed_names=()
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
while IFS= read -r bin; do
  out=$(mktemp)
  timeout 600 "$bin" >"$out" 2>&1
  rc=$?
  p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\..*/\1/p' "$out" | tail -1)
  f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s).*/\1/p' "$out" | tail -1)
  p=${p:-0}
  f=${f:-0}
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  passed=$((passed + p))
  failed=$((failed + f))
  if [ "$f" -ne 0 ]; then
    failed_names+=("$bin")
    echo "---- $bin (exit $rc)"
    tail -40 "$out"
  else
    echo "ok   $bin ($p)"
  fi
  rm -f "$out"
done < <(find "$build/tests/unit" -type f -name 'test_*' -perm -u+x 2>/dev/null | sort)
for n in "${failed_names[@]}"; do echo "FAILED: $n"; done
echo "unit ($flavour): $passed passed, $failed failed"
[ "$failed" -eq 0 ]
