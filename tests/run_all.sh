#!/usr/bin/env bash
# run_all.sh - what `make test` runs after building: the unit tests plainly and under
# ASan+UBSan, then the integration tests (the daemon suites twice: release and ASan+UBSan
# binaries), then every fuzz target briefly; ends with one totals line "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
total_p=0
total_f=0
run_phase() {
  local log
  log=$(mktemp)
  "$@" 2>&1 | tee "$log"
  local line
  line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
  local p f
  p=$(echo "$line" | sed -n 's/.* \([0-9][0-9]*\) passed.*/\1/p')
  f=$(echo "$line" | sed -n 's/.* \([0-9][0-9]*\) failed.*/\1/p')
  if [ -z "$line" ]; then f=1; p=0; echo "phase '$*' printed no totals"; fi
  total_p=$((total_p + ${p:-0}))
  total_f=$((total_f + ${f:-0}))
  rm -f "$log"
}
run_phase tests/run_unit.sh build/release
run_phase tests/run_unit.sh build/asan
run_phase tests/integration/run.sh
# the daemon's protocol, query and hostile-input suites again with the ASan+UBSan binary
run_phase env CTSDB="$PWD/build/asan/bin/ctsdb" IT_LABEL="integration (asan daemon)" \
  IT_ONLY="test_tsd_telnet test_tsd_http test_query_api test_hostile_tsd test_tsd_durability \
  test_tsd_influx test_audit_histogram test_audit_aggregators" \
  tests/integration/run.sh
run_phase make --no-print-directory fuzz-short
echo
echo "total: $total_p passed, $total_f failed"
[ "$total_f" -eq 0 ]
