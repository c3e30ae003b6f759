#!/usr/bin/env bash
# test_cli.sh - the `ctsdb` program itself: --help lists commands, version, unknown commands.
source "$(dirname "$0")/lib.sh"

out=$("$CTSDB" --help)
check_eq "--help exits 0" 0 $?
check_contains "--help lists version" "$out" "version"
out=$("$CTSDB" version)
check_contains "version prints the version" "$out" "ctsdb 0."
check_contains "version prints the revision" "$out" "built at revision"
if head=$(git -C "$(dirname "$0")" rev-parse HEAD 2>/dev/null); then
  check_contains "version prints the checkout's full revision" "$out" "built at revision $head ("
  check_contains "version prints the branch" "$out" "branch $(git -C "$(dirname "$0")" rev-parse --abbrev-ref HEAD))"
fi
"$CTSDB" no-such-command 2>/dev/null
check_eq "unknown command exits 2" 2 $?
err=$("$CTSDB" no-such-command 2>&1)
check_contains "unknown command names itself" "$err" "unknown command 'no-such-command'"
"$CTSDB" 2>/dev/null
check_eq "no command exits 2" 2 $?
it_done
