#!/usr/bin/env bash
# test_web_model.sh - the dashboard's pure logic (web/js/model.js) under node: m= grammar, URL
# state, time specs, gaps, alignment, region rates. No browser and no TSD needed.
source "$(dirname "$0")/lib.sh"
if ! command -v node >/dev/null; then
  not_ok "node is installed (needed for the dashboard tests)"
  it_done
fi
# The node harness prints the ok/not ok lines itself.
node "$IT_ROOT/tests/e2e/model.test.mjs" | grep -E '^(ok|not ok) - '
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] || IT_FAILS=$((IT_FAILS + 1))
it_done
