#!/usr/bin/env bash
# test_lint_layers.sh - the layer check of tools/lint.sh: it passes on this tree, and on a scratch
# git tree it rejects an include that points up (storage -> query, query -> tsd, schema -> tools)
# and accepts includes that point down or stay in the layer.
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)

CTSDB_LINT_LAYERS_ONLY=1 bash "$root/tools/lint.sh" >/dev/null 2>&1
check_eq "the tree's includes point down only" 0 $?

scratch=$(it_tmpdir)
mkdir -p "$scratch/tools" "$scratch/storage" "$scratch/schema" "$scratch/query" "$scratch/tsd"
cp "$root/tools/lint.sh" "$scratch/tools/lint.sh"
git -C "$scratch" init -q
printf '#include "storage/a.h"\n' >"$scratch/storage/b.h"
printf '#include "storage/a.h"\n#include "schema/c.h"\n' >"$scratch/schema/d.c"
printf '#include "schema/c.h"\n#include "storage/a.h"\n#include "query/e.h"\n' >"$scratch/query/f.c"
printf '#include "query/e.h"\n' >"$scratch/tsd/g.c"
printf '#include "tsd/g.h"\n#include "tool_commands.inc"\n' >"$scratch/tools/h.c"
CTSDB_LINT_LAYERS_ONLY=1 bash "$scratch/tools/lint.sh" >/dev/null 2>&1
check_eq "downward and same-layer includes pass" 0 $?

lint_err() { CTSDB_LINT_LAYERS_ONLY=1 bash "$scratch/tools/lint.sh" 2>&1 >/dev/null; }
printf '#include "query/e.h"\n' >"$scratch/storage/up.c"
err=$(lint_err)
check_contains "storage including query is rejected" "$err" "storage/up.c:1:#include \"query/e.h\" (layer storage may not include query/)"
rm "$scratch/storage/up.c"
printf '  #  include "tsd/tsd.h"\n' >"$scratch/query/up.h"
err=$(lint_err)
check_contains "query including tsd is rejected" "$err" "layer query may not include tsd/"
rm "$scratch/query/up.h"
printf '#include "tools/tool.h"\n' >"$scratch/schema/up.c"
err=$(lint_err)
check_contains "schema including tools is rejected" "$err" "layer schema may not include tools/"
printf '#include "tests/lib/ctest.h"\n' >"$scratch/tsd/up.c"
CTSDB_LINT_LAYERS_ONLY=1 bash "$scratch/tools/lint.sh" >/dev/null 2>&1
check_eq "a violation makes the check exit 1" 1 $?
err=$(lint_err)
check_contains "tsd including tests is rejected" "$err" "layer tsd may not include tests/"
it_done
