#!/usr/bin/env bash
# test_shell_model.sh - random scripts (fixed seeds) checked against models of
# docs/storage-contract.md:
#   shell/model.py      puts, every kind of delete, flushes, major compactions and splits on a
#                       pre-split table, read back with get and scan (versions, time ranges,
#                       columns, bounds, prefixes, limits, both directions) - "Deletes",
#                       "Gets and scans";
#   shell/model_ttl.py  the same with the version limit, TTL and MIN_VERSIONS in play and the
#                       clock moving between phases (`#@ now MS`: a new shell process each) -
#                       "What a read returns", "Flush and compaction retention".
# The shell must print exactly what the model predicts. SHELL_MODEL_SEEDS tries other seeds.
source "$(dirname "$0")/lib.sh"
# it_tmpdir runs in a subshell under $(...), where its cleanup registration is lost: make one
# directory here, registered in this shell, and use subdirectories of it.
IT_ROOT_TMP=$(mktemp -d "${TMPDIR:-/tmp}/ctsdb-it-XXXXXX")
IT_DIRS+=("$IT_ROOT_TMP")

# run_phases RB DATA OUT: runs RB phase by phase; OUT gets stdout without Took lines and, after a
# failing phase, "[exit N]" and its stderr.
run_phases() {
  local rb=$1 data=$2 out=$3 work phase=0 now=1700000000000 rc
  work=$(dirname "$out")/phases
  mkdir -p "$work"
  awk -v dir="$work" '
    BEGIN { n = 0; file = dir "/phase0.rb" }
    /^#@ now [0-9]+[ \t]*$/ { n++; file = dir "/phase" n ".rb"; print $3 > (dir "/phase" n ".now"); next }
    { print > file }
  ' "$rb"
  : >"$out"
  while [ -f "$work/phase$phase.rb" ] || [ -f "$work/phase$phase.now" ]; do
    [ -f "$work/phase$phase.now" ] && now=$(cat "$work/phase$phase.now")
    touch "$work/phase$phase.rb"
    timeout 300 "$CTSDB" shell --data "$data" --now "$now" "$work/phase$phase.rb" \
      >"$work/stdout" 2>"$work/stderr"
    rc=$?
    grep -v '^Took ' "$work/stdout" >>"$out"
    if [ "$rc" -ne 0 ]; then
      echo "[exit $rc]" >>"$out"
      cat "$work/stderr" >>"$out"
    fi
    phase=$((phase + 1))
  done
}

for model in model model_ttl; do
  for seed in ${SHELL_MODEL_SEEDS:-1 2 3 4 5 6}; do
    d=$IT_ROOT_TMP/$model-$seed
    mkdir -p "$d"
    python3 "$IT_ROOT/tests/integration/shell/$model.py" "$seed" 400 "$d"
    run_phases "$d/model.rb" "$d/data" "$d/actual"
    if diff -u "$d/model.out" "$d/actual" >"$d/diff"; then
      ok "$model seed $seed ($(grep -c . "$d/model.rb") commands)"
    else
      not_ok "$model seed $seed"
      head -40 "$d/diff" | sed 's/^/#   /'
    fi
  done
done
it_done
