#!/usr/bin/env bash
# lint.sh - `make lint`: clang-format check and cppcheck over the project's C sources.
set -u
cd "$(dirname "$0")/.."
files=$(git ls-files '*.c' '*.h' | grep -v '^build/')
rc=0
if ! clang-format --dry-run -Werror $files; then rc=1; fi
if ! cppcheck --quiet --error-exitcode=1 --enable=warning,portability,performance \
     --inline-suppr --suppress=missingIncludeSystem -I. -D_GNU_SOURCE \
     -j2 storage schema query tsd tools 2>&1; then rc=1; fi
[ "$rc" -eq 0 ] && echo "lint: clean"
exit $rc
