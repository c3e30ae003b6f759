#!/usr/bin/env bash
# test_shell_model.sh - random scripts (fixed seeds) of puts, every kind of delete, flushes, major
# compactions and splits on a pre-split table, read back with get and scan (versions, time
# ranges, columns, bounds, prefixes, limits, both directions), must print exactly what the model
# of spec §5-§7 in shell/model.py predicts. Set SHELL_MODEL_SEEDS to try other seeds.
source "$(dirname "$0")/lib.sh"
# it_tmpdir runs in a subshell under $(...), where its cleanup registration is lost: make one
# directory here, registered in this shell, and use subdirectories of it.
IT_ROOT_TMP=$(mktemp -d "${TMPDIR:-/tmp}/ctsdb-it-XXXXXX")
IT_DIRS+=("$IT_ROOT_TMP")

for seed in ${SHELL_MODEL_SEEDS:-1 2 3 4 5 6 7 8}; do
  d=$IT_ROOT_TMP/seed$seed
  mkdir -p "$d"
  python3 "$IT_ROOT/tests/integration/shell/model.py" "$seed" 400 "$d"
  timeout 300 "$CTSDB" shell --data "$d/data" --now 1700000000000 "$d/model.rb" >"$d/stdout" 2>"$d/stderr"
  rc=$?
  grep -v '^Took ' "$d/stdout" >"$d/actual"
  if [ "$rc" -eq 0 ] && diff -u "$d/model.out" "$d/actual" >"$d/diff"; then
    ok "model seed $seed ($(grep -c . "$d/model.rb") commands)"
  else
    not_ok "model seed $seed (exit $rc)"
    head -5 "$d/stderr" | sed 's/^/#   /'
    head -40 "$d/diff" | sed 's/^/#   /'
  fi
done
it_done
