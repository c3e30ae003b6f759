#!/usr/bin/env bash
# test_bigtable_faults.sh - a TSD on Bigtable (Google's emulator) while the backend stalls: the
# emulator is stopped with SIGSTOP (its connections stay open, nothing answers), and an HTTP put
# of many new series must be answered within a few deadlines, every point failed (one failed UID
# lookup fails the write's other new series at once, not one deadline each); after SIGCONT,
# writes succeed again.
#
# The emulator runs on 127.0.0.1 port 0 and is stopped by PID (SIGCONT, SIGINT, then SIGKILL);
# the TSD is the real daemon on 127.0.0.1 port 0 (lib.sh). Without the emulator (or a
# BIGTABLE=1 build) the script prints a SKIP line; with CI=true a missing emulator fails.
source "$(dirname "$0")/lib.sh"

emu_available "bigtable fault tests" || it_done

tmp=$(it_tmpdir)
IT_DIRS+=("$tmp")
emu_start || it_done
addr=$EMU_ADDR

unset TSD_DATA
tsd_start --tsd.storage.backend=bigtable --tsd.storage.bigtable.deadline_ms=2000

check_contains "the TSD names the backend and instance in its log" "$(cat "$TSD_LOG")" "data in Bigtable project 'ctsdb' instance 'ctsdb' on the emulator at $addr"

post() { curl -s -m "$2" -X POST "http://127.0.0.1:$TSD_PORT$1" -d "$3"; }
now=$(date +%s)
t0=$((now - 120))
out=$(post "/api/put?summary" 10 "[{\"metric\":\"f.ok\",\"timestamp\":$t0,\"value\":1,\"tags\":{\"host\":\"a\"}}]")
check_eq "put before the stall" '{"failed":0,"success":1}' "$out"

# the stall: 20 new series in one put
N=20
s="["
sep=""
for i in $(seq 1 $N); do
  s="$s$sep{\"metric\":\"f.new$i\",\"timestamp\":$t0,\"value\":$i,\"tags\":{\"host\":\"a\"}}"
  sep=","
done
s="$s]"
kill -STOP "$EMU_PID"
start=$(date +%s%N)
out=$(post "/api/put?summary" 40 "$s")
ms=$((($(date +%s%N) - start) / 1000000))
kill -CONT "$EMU_PID"
check_eq "put of $N new series during the stall: every point failed" "{\"failed\":$N,\"success\":0}" "$out"
if [ "$ms" -le 4500 ]; then
  echo "ok - the stalled put is answered in ${ms} ms (deadline 2000 ms, $N new series)"
else
  not_ok "the stalled put is answered within 4500 ms (took ${ms} ms)"
fi

# the backend is back: the same put succeeds (bounded retries while the channel reconnects)
for _ in $(seq 1 40); do
  out=$(post "/api/put?summary" 10 "$s")
  [ "$out" = "{\"failed\":0,\"success\":$N}" ] && break
  sleep 0.5
done
check_eq "the put succeeds once the backend answers again" "{\"failed\":0,\"success\":$N}" "$out"

tsd_stop
emu_stop
it_done
