#!/usr/bin/env bash
# test_tsd_ingest_fair.sh - fairness of the telnet ingest between connections (docs/tsd.md,
# "Ingest pipeline"): while three connections flood new series (every line a new series, sent
# without waiting), a light connection writing 5 existing series per round (5 puts + `version`,
# ingest_fair.py) is acknowledged in a bounded time. The bound is stated in the time the TSD
# takes to write one telnet batch of flood points (4096 points at the flood's measured write
# rate: the run adapts to the machine's speed and load): the light connection's round waits for
# the group being written (one batch's worth while lanes contend; up to 4 batches when a flood
# was alone in the queue) and then its own small group. Checked: the median round over the run
# is at most 4 batch-times (generous: measured about 1 on a busy 2-core machine; before the
# per-connection batches and fair queuing it was about 9, the pool's backlog of flood batches
# plus the group); at least 10 rounds acknowledged (the flood goes on past 15 s until they are,
# at most 60 s); and every acknowledged light point is queryable. Bounded: at most 60 s of
# flood, every wait timed.
source "$(dirname "$0")/lib.sh"

FLOOD_SECONDS=${FLOOD_SECONDS:-15}
tsd_start
out=$(timeout 300 python3 "$(dirname "$0")/ingest_fair.py" "$TSD_PORT" "$FLOOD_SECONDS")
echo "$out"
res=$(python3 - "$out" "$TSD_PORT" <<'PY'
import json, sys, urllib.request
o = json.loads(sys.argv[1])
port = int(sys.argv[2])
ok_run = not o["fail"] and o["rounds"] >= 10 and o["batch_s"] is not None
print("light_acked", ok_run)
print("light_bounded", ok_run and o["median_s"] <= 4 * o["batch_s"])
n = o["rounds"]
url = "http://127.0.0.1:%d/api/query?start=1600000000&end=%d&m=none:fair.light%%7Bs=*%%7D" % (port, 1600000000 + n)
q = json.load(urllib.request.urlopen(url, timeout=60))
print("light_queryable", len(q) == 5 and all(len(r["dps"]) == n for r in q))
PY
)
for k in light_acked light_bounded light_queryable; do
  check_eq "$k" "$k True" "$(echo "$res" | grep "^$k ")"
done
tsd_stop
it_done
