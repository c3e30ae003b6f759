#!/usr/bin/env bash
# run.sh - runs every tests/integration/test_*.sh (each bounded by a timeout) and prints the
# totals of their "ok -" / "not ok -" lines: "integration: N passed, N failed".
# A script that exits non-zero without a "not ok" line counts as one failure. IT_ONLY limits the
# run to some scripts, IT_LABEL names the totals line, CTSDB picks the binary (lib.sh).
set -u
cd "$(dirname "$0")/../.."
passed=0
failed=0
label=${IT_LABEL:-integration}
for t in tests/integration/test_*.sh; do
  [ -f "$t" ] || continue
  # IT_ONLY: a space-separated list of script names to run (default: every script)
  if [ -n "${IT_ONLY:-}" ]; then
    case " $IT_ONLY " in *" $(basename "$t" .sh) "*) ;; *) continue ;; esac
  fi
  out=$(mktemp)
  timeout 900 bash "$t" >"$out" 2>&1
  rc=$?
  p=$(grep -c '^ok - ' "$out")
  f=$(grep -c '^not ok - ' "$out")
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  passed=$((passed + p))
  failed=$((failed + f))
  if [ "$f" -ne 0 ]; then
    echo "---- $t (exit $rc)"
    tail -60 "$out"
  else
    echo "ok   $t ($p)"
  fi
  rm -f "$out"
done
echo "$label: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
