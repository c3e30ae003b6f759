#!/usr/bin/env bash
# test_corrupt_tsd.sh - flipped and truncated bytes in every kind of file of a data directory
# give a clear error naming the file or right answers, never a crash (see corrupt_tsd.py).
source "$(dirname "$0")/lib.sh"
CTSDB=$CTSDB timeout 800 python3 "$(dirname "$0")/corrupt_tsd.py"
