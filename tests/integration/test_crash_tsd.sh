#!/usr/bin/env bash
# test_crash_tsd.sh - SIGKILL the TSD under telnet and HTTP ingest at random moments (bounded
# runs) and check every acknowledged point after restart. See crash_tsd.py; `make stress` runs
# more iterations (CRASH_RUNS).
source "$(dirname "$0")/lib.sh"
CTSDB=$CTSDB python3 "$(dirname "$0")/crash_tsd.py"
# the same kills aimed at the ingest head: every point an open hour's, held by the head and its log
CTSDB=$CTSDB CRASH_HEAD=1 python3 "$(dirname "$0")/crash_tsd.py"
