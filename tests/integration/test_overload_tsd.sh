#!/usr/bin/env bash
# test_overload_tsd.sh - bounded overload: the TSD applies backpressure, keeps answering, keeps
# memory bounded and loses nothing acknowledged (see overload_tsd.py).
source "$(dirname "$0")/lib.sh"
CTSDB=$CTSDB timeout 600 python3 "$(dirname "$0")/overload_tsd.py"
