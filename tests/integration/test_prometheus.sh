#!/usr/bin/env bash
# test_prometheus.sh - the real client: Debian's prometheus scrapes itself every second and
# remote_writes to the TSD (/api/v1/write), with a recording rule whose name has a ':' (escaped
# in ctsdb) and whose series has no label (the default tag). Once ctsdb holds the samples, the
# first Prometheus answers a query_range and is stopped; a second one with empty storage and
# remote_read (read_recent) from the TSD (/api/v1/read) must answer the same query_range with the
# same series and values, and the same values ctsdb itself returns through /api/query. Matchers
# (=~, !=) and bad bodies (400) are checked too. Every server binds 127.0.0.1 and is stopped by
# PID; every wait is bounded.
source "$(dirname "$0")/lib.sh"

if ! command -v prometheus >/dev/null 2>&1; then
  not_ok "prometheus is not installed (deps/test.txt; make deps)"
  it_done
fi

tsd_start
dir=$(it_tmpdir)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PA=$(free_port)

cat >"$dir/rules.yml" <<'YML'
groups:
  - name: ctsdb_it
    interval: 1s
    rules:
      - record: ctsdb_it:scrape_samples:sum
        expr: sum(scrape_samples_scraped)
YML
cat >"$dir/a.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: ["$dir/rules.yml"]
scrape_configs:
  - job_name: prom
    static_configs:
      - targets: ["127.0.0.1:$PA"]
remote_write:
  - url: http://127.0.0.1:$TSD_PORT/api/v1/write
    queue_config:
      batch_send_deadline: 1s
      max_samples_per_send: 500
YML
prometheus --config.file="$dir/a.yml" --storage.tsdb.path="$dir/a" \
  --web.listen-address="127.0.0.1:$PA" --log.level=warn >"$dir/a.log" 2>&1 &
apid=$!
IT_PIDS+=("$apid")

# ctsdb's raw points of a metric as "ts value" lines (ms), all series together
ctsdb_points() {
  curl -s "http://127.0.0.1:$TSD_PORT/api/query?start=1h-ago&ms=true&m=none:$1" |
    python3 -c '
import json, sys
try:
    d = json.load(sys.stdin)
except Exception:
    sys.exit(0)
if not isinstance(d, list):
    sys.exit(0)
for s in d:
    for t, v in s["dps"].items():
        print(t, v, " ".join("%s=%s" % kv for kv in sorted(s["tags"].items())))
' 2>/dev/null
}

# wait (bounded, 60 s) until ctsdb holds 10 samples of scrape_duration_seconds
n=0
for _ in $(seq 1 120); do
  n=$(ctsdb_points scrape_duration_seconds | wc -l)
  [ "$n" -ge 10 ] && break
  kill -0 "$apid" 2>/dev/null || break
  sleep 0.5
done
if [ "$n" -lt 10 ]; then
  not_ok "prometheus remote_writes its samples to ctsdb (got $n points)"
  tail -20 "$dir/a.log"
  tail -20 "$TSD_LOG"
  it_done
fi
ok "prometheus remote_writes its samples to ctsdb ($n points of scrape_duration_seconds)"

# the series carries job and the escaped instance (':' -> /3A); the recorded series (no label)
# is stored under its escaped name with the default tag
pts=$(ctsdb_points scrape_duration_seconds | head -1)
check_contains "labels become tags, ':' escaped" "$pts" "instance=127.0.0.1/3A$PA job=prom"
rec=""
for _ in $(seq 1 40); do
  rec=$(ctsdb_points 'ctsdb_it/3Ascrape_samples/3Asum' | head -1)
  [ -n "$rec" ] && break
  sleep 0.5
done
check_contains "a series without labels gets the default tag" "$rec" "__prom=none"

# the compared window: from the first stored sample to 2 s ago, once ctsdb has samples past it
read -r start_ms _ < <(ctsdb_points scrape_duration_seconds | sort -n | head -1)
end_s=$(( $(date +%s) - 2 ))
for _ in $(seq 1 40); do
  last=$(ctsdb_points scrape_duration_seconds | sort -n | tail -1 | cut -d' ' -f1)
  [ "${last:-0}" -gt $(( (end_s + 1) * 1000 )) ] && break
  sleep 0.5
done
start_s=$(( start_ms / 1000 + 1 ))
qr() { # PORT QUERY: query_range over the window, as sorted "labels ts value" lines
  curl -s -G "http://127.0.0.1:$1/api/v1/query_range" --data-urlencode "query=$2" \
    --data-urlencode "start=$start_s" --data-urlencode "end=$end_s" --data-urlencode "step=1" |
    python3 -c '
import json, sys
d = json.load(sys.stdin)
if d.get("status") != "success":
    print("ERROR", d); sys.exit(0)
for s in d["data"]["result"]:
    lab = ",".join("%s=%s" % kv for kv in sorted(s["metric"].items()))
    for t, v in s["values"]:
        print(lab, t, v)
' | sort
}
qa=$(qr "$PA" scrape_duration_seconds)
qa_rec=$(qr "$PA" 'ctsdb_it:scrape_samples:sum')
check "prometheus answers the window itself ($(echo "$qa" | wc -l) steps)" test "$(echo "$qa" | wc -l)" -ge 3
kill -TERM "$apid"
for _ in $(seq 1 100); do kill -0 "$apid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$apid" 2>/dev/null && kill -KILL "$apid"

# the second Prometheus: empty storage, no scrapes, remote_read from ctsdb
PB=$(free_port)
cat >"$dir/b.yml" <<YML
global:
  scrape_interval: 1h
remote_read:
  - url: http://127.0.0.1:$TSD_PORT/api/v1/read
    read_recent: true
YML
prometheus --config.file="$dir/b.yml" --storage.tsdb.path="$dir/b" \
  --web.listen-address="127.0.0.1:$PB" --log.level=warn >"$dir/b.log" 2>&1 &
bpid=$!
IT_PIDS+=("$bpid")
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$PB/-/ready" >/dev/null && break
  sleep 0.2
done
qb=$(qr "$PB" scrape_duration_seconds)
check "the second Prometheus reads series back ($(echo "$qb" | wc -l) steps)" test "$(echo "$qb" | wc -l)" -ge 3
check_eq "remote read through Prometheus answers the same query_range" "$qa" "$qb"
qb_rec=$(qr "$PB" 'ctsdb_it:scrape_samples:sum')
check_eq "the label-less recorded series reads back without the default tag" "$qa_rec" "$qb_rec"
check_contains "the recorded series' name reads back unescaped" "$qb_rec" "__name__=ctsdb_it:scrape_samples:sum"
check_contains "instance reads back unescaped" "$qb" "instance=127.0.0.1:$PA"

# the same values ctsdb itself returns: each step's value is the last raw point at or before it
expect=$(ctsdb_points scrape_duration_seconds | python3 -c '
import sys
pts = sorted((int(l.split()[0]), float(l.split()[1])) for l in sys.stdin if l.strip())
start, end = int(sys.argv[1]), int(sys.argv[2])
for t in range(start, end + 1):
    prev = [v for ts, v in pts if ts <= t * 1000 and ts > t * 1000 - 300000]
    if prev:
        print(t, repr(prev[-1]))
' "$start_s" "$end_s")
got=$(echo "$qb" | python3 -c '
import sys
for l in sys.stdin:
    lab, t, v = l.split()
    print(int(float(t)), repr(float(v)))
' | sort -n)
check_eq "the values are the raw points of /api/query" "$expect" "$got"

# matchers go through remote read: =~ keeps the series, != drops it, unknown names are empty
m1=$(qr "$PB" 'scrape_duration_seconds{job=~"pr.m"}' | wc -l)
check_eq "regex matcher keeps the series" "$(echo "$qb" | wc -l)" "$m1"
m2=$(qr "$PB" 'scrape_duration_seconds{job!="prom"}' | wc -l)
check_eq "not-equal matcher drops it" "0" "$m2"
m3=$(qr "$PB" 'no_such_metric_anywhere' | wc -l)
check_eq "an unknown metric reads as no series" "0" "$m3"

# bad bodies: 400 with a text body (Prometheus drops, does not retry)
code=$(curl -s -o "$dir/bad.out" -w '%{http_code}' -H 'Content-Encoding: snappy' \
  -H 'Content-Type: application/x-protobuf' --data-binary 'not snappy at all' \
  "http://127.0.0.1:$TSD_PORT/api/v1/write")
check_eq "a body that is not snappy is 400" "400" "$code"
check_contains "with the reason" "$(cat "$dir/bad.out")" "snappy"
code=$(printf '\x05\x10\x0a\x03\xff\xff\xff' | curl -s -o "$dir/bad.out" -w '%{http_code}' \
  -H 'Content-Encoding: snappy' --data-binary @- "http://127.0.0.1:$TSD_PORT/api/v1/write")
check_eq "snappy holding no protobuf WriteRequest is 400" "400" "$code"
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Encoding: snappy' --data-binary 'x' \
  "http://127.0.0.1:$TSD_PORT/api/v1/read")
check_eq "a bad read body is 400" "400" "$code"

kill -TERM "$bpid"
for _ in $(seq 1 100); do kill -0 "$bpid" 2>/dev/null || break; sleep 0.1; done
tsd_stop
it_done
