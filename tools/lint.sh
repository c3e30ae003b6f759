#!/usr/bin/env bash
# lint.sh - `make lint`: the layer check, clang-format check and cppcheck over the project's C
# sources.
# Layer check: an #include "x/..." line in layer L is allowed only when x is L or a layer below
# it (storage < schema < query < tsd < tools; tools may include everything). Includes without a
# folder (generated files such as tools/tool_commands.inc) are exempt. CTSDB_LINT_LAYERS_ONLY=1
# runs the layer check alone (fast; tests/integration/test_lint_layers.sh uses it).
set -u
cd "$(dirname "$0")/.."
rc=0

# One awk pass over `git grep` output (file:line:text); rank: a file of rank r may include files
# of rank <= r.
layer_check() {
    git grep --untracked -n -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' -- \
        'storage/*.[ch]' 'schema/*.[ch]' 'query/*.[ch]' 'tsd/*.[ch]' 'tools/*.[ch]' |
        awk 'BEGIN { r["storage"] = 1; r["schema"] = 2; r["query"] = 3; r["tsd"] = 4; r["tools"] = 5 }
        {
            if (!match($0, /include[ \t]*"[^"]*"/)) next
            inc = substr($0, RSTART, RLENGTH); sub(/^include[ \t]*"/, "", inc); sub(/"$/, "", inc)
            if (index(inc, "/") == 0) next
            split($0, f, "/"); from = f[1]
            split(inc, t, "/"); to = t[1]
            if (!(to in r) || r[to] > r[from]) {
                printf "lint: layer violation: %s (layer %s may not include %s/)\n", $0, from, to > "/dev/stderr"
                bad = 1
            }
        }
        END { exit bad }'
}

if ! layer_check; then rc=1; fi
if [ "${CTSDB_LINT_LAYERS_ONLY:-0}" = 1 ]; then
    [ "$rc" -eq 0 ] && echo "lint: layers clean"
    exit $rc
fi

files=$(git ls-files '*.c' '*.h' | grep -v '^build/')
if ! clang-format --dry-run -Werror $files; then rc=1; fi
if ! cppcheck --quiet --error-exitcode=1 --enable=warning,portability,performance \
     --inline-suppr --suppress=missingIncludeSystem -I. -D_GNU_SOURCE \
     -j2 storage schema query tsd tools 2>&1; then rc=1; fi
[ "$rc" -eq 0 ] && echo "lint: clean"
exit $rc
