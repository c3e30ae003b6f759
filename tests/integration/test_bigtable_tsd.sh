#!/usr/bin/env bash
# test_bigtable_tsd.sh - two TSDs sharing one Bigtable store (Google's Bigtable emulator), as
# several TSDs behind a load balancer would: points put through one are queried, found by
# /api/query/last and /api/suggest through the other; telnet and HTTP puts mix; and new metric
# names put through both TSDs at the same time (the UID race) end up with one id each, so every
# point of every name is found whichever TSD answers.
#
# The emulator runs on 127.0.0.1 port 0 and is stopped by PID (SIGINT, then SIGKILL after 5 s);
# the TSDs are the real daemon on 127.0.0.1 port 0 (lib.sh). Without the emulator (or a
# BIGTABLE=1 build) the script prints a SKIP line; with CI=true a missing emulator fails.
source "$(dirname "$0")/lib.sh"

emu_available "bigtable TSD tests" || it_done
emu_start || it_done
tmp=$(it_tmpdir)

# two daemons on the same store
unset TSD_DATA
tsd_start --tsd.storage.backend=bigtable
A_PORT=$TSD_PORT
A_PID=$TSD_PID
unset TSD_DATA
tsd_start --tsd.storage.backend=bigtable
B_PORT=$TSD_PORT
B_PID=$TSD_PID

# get PORT PATH: prints the body (10 s at most)
get() { curl -s -m 10 "http://127.0.0.1:$1$2"; }
post() { curl -s -m 10 -X POST "http://127.0.0.1:$1$2" -d "$3"; }

now=$(date +%s)
t0=$((now - 120))
out=$(post "$A_PORT" "/api/put?summary" "[{\"metric\":\"bt.cpu\",\"timestamp\":$t0,\"value\":1,\"tags\":{\"host\":\"a\"}},{\"metric\":\"bt.cpu\",\"timestamp\":$((t0 + 60)),\"value\":2,\"tags\":{\"host\":\"a\"}}]")
check_eq "HTTP put through TSD A" '{"failed":0,"success":2}' "$out"
printf 'put bt.cpu %s 10 host=b\nput bt.cpu %s 20 host=b\n' "$t0" "$((t0 + 60))" | tsd_talk "$B_PORT" >/dev/null
# the telnet put is asynchronous: wait (bounded) until B's points are readable through A
q="/api/query?start=$((t0 - 10))&end=$((t0 + 100))&m=sum:bt.cpu%7Bhost=*%7D"
for _ in $(seq 1 100); do
  out=$(get "$A_PORT" "$q")
  case "$out" in *'"b"'*) break ;; esac
  sleep 0.1
done
check_contains "TSD A sees host=a" "$out" "{\"metric\":\"bt.cpu\",\"tags\":{\"host\":\"a\"},\"aggregateTags\":[],\"dps\":{\"$t0\":1,\"$((t0 + 60))\":2}}"
check_contains "TSD A sees host=b put by telnet through TSD B" "$out" "{\"metric\":\"bt.cpu\",\"tags\":{\"host\":\"b\"},\"aggregateTags\":[],\"dps\":{\"$t0\":10,\"$((t0 + 60))\":20}}"
outb=$(get "$B_PORT" "$q")
check_eq "both TSDs answer the same query alike" "$out" "$outb"
out=$(get "$B_PORT" "/api/query?start=$((t0 - 10))&end=$((t0 + 100))&m=sum:bt.cpu")
check_eq "aggregation across hosts through TSD B" "[{\"metric\":\"bt.cpu\",\"tags\":{},\"aggregateTags\":[\"host\"],\"dps\":{\"$t0\":11,\"$((t0 + 60))\":22}}]" "$out"
out=$(get "$B_PORT" "/api/query/last?timeseries=bt.cpu%7Bhost=a%7D&resolve=true&back_scan=1")
check_contains "last point of host=a (written through A) from B" "$out" "\"timestamp\":$(((t0 + 60) * 1000)),\"value\":\"2\""
out=$(get "$B_PORT" "/api/suggest?type=metrics&q=bt.")
check_eq "suggest through B" '["bt.cpu"]' "$out"
out=$(get "$A_PORT" "/api/suggest?type=tagv&q=")
check_eq "tag values from both TSDs" '["a","b"]' "$out"

# the UID race: the same 30 new names through both TSDs at once
N=30
body() { # body TS VALUE
  local i sep="" s="["
  for i in $(seq 1 $N); do
    s="$s$sep{\"metric\":\"race.m$i\",\"timestamp\":$1,\"value\":$2,\"tags\":{\"race\":\"v$i\"}}"
    sep=","
  done
  echo "$s]"
}
post "$A_PORT" "/api/put?summary" "$(body "$t0" 1)" >"$tmp/ra.txt" &
pa=$!
post "$B_PORT" "/api/put?summary" "$(body "$((t0 + 60))" 2)" >"$tmp/rb.txt" &
pb=$!
wait "$pa" "$pb"
check_eq "racing put through A" "{\"failed\":0,\"success\":$N}" "$(cat "$tmp/ra.txt")"
check_eq "racing put through B" "{\"failed\":0,\"success\":$N}" "$(cat "$tmp/rb.txt")"
bad=0
for i in $(seq 1 $N); do
  for port in "$A_PORT" "$B_PORT"; do
    out=$(get "$port" "/api/query?start=$((t0 - 10))&end=$((t0 + 100))&m=sum:race.m$i")
    want="[{\"metric\":\"race.m$i\",\"tags\":{\"race\":\"v$i\"},\"aggregateTags\":[],\"dps\":{\"$t0\":1,\"$((t0 + 60))\":2}}]"
    if [ "$out" != "$want" ]; then
      bad=$((bad + 1))
      echo "race.m$i via $port: $out"
    fi
  done
done
check_eq "every raced name has one id: both points found through both TSDs" 0 "$bad"
out=$(get "$A_PORT" "/api/suggest?type=metrics&q=race.&max=100" | tr ',' '\n' | grep -c 'race.m')
check_eq "suggest lists each raced name once" "$N" "$out"

tsd_stop
TSD_PID=$A_PID
tsd_stop
emu_stop
it_done
