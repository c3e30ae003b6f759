#!/usr/bin/env bash
# test_hostile_tsd.sh - bad and hostile input against the real TSD (see hostile_tsd.py), then
# the daemon must still be running and shut down cleanly.
source "$(dirname "$0")/lib.sh"
ulimit -n 4096 2>/dev/null
tsd_start
python3 "$(dirname "$0")/hostile_tsd.py" "$TSD_PORT"
if kill -0 "$TSD_PID" 2>/dev/null; then ok "the TSD is still running"; else not_ok "the TSD is still running"; fi
tsd_stop
check_eq "clean shutdown after hostile input" 0 $?
it_done
