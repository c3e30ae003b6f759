#!/usr/bin/env bash
# test_prometheus.sh - the real client: Debian's prometheus scrapes itself every second and
# remote_writes to the TSD (/api/v1/write), with a recording rule whose name has a ':' (escaped
# in ctsdb) and whose series has no label (the default tag). Once ctsdb holds the samples, the
# first Prometheus answers a query_range and is stopped; a second one with empty storage and
# remote_read (read_recent) from the TSD (/api/v1/read) must answer the same query_range with the
# same series and values, and the same values ctsdb itself returns through /api/query. Matchers
# (=~, !=) and bad bodies (400) are checked too.
# Queries without a __name__ equality matcher (a regex on __name__, a label matcher alone) read
# back through both Prometheus and a direct remote read (a small Python client below). Two
# recording rules carry label values with characters OpenTSDB forbids (space, '=', '|', ':',
# '/', a literal "/2F", UTF-8, quote, backslash): they must read back byte for byte; after a
# restart with tsd.core.tag.allow_specialchars=: a series written then keeps ':' raw and still
# reads back exactly, and tsd.prometheus.read_max_metrics refuses a query selecting too many
# metrics. Every server binds 127.0.0.1 and is stopped by PID; every wait is bounded.
source "$(dirname "$0")/lib.sh"

if ! command -v prometheus >/dev/null 2>&1; then
  not_ok "prometheus is not installed (deps/test.txt; make deps)"
  it_done
fi

export PYTHONIOENCODING=utf-8
tsd_start
dir=$(it_tmpdir)

# promrw.py: a minimal remote read/write client (protobuf and snappy written by hand: Debian's
# python3 has neither module). read PORT START_MS END_MS T:NAME:VALUE... prints each returned
# series as one line (name=value, tab-separated, sorted by name, then n=<samples>), the lines
# sorted, or "HTTP <code> <body>";
# write PORT TS_MS VALUE NAME=VALUE... sends one sample and prints the HTTP status;
# burst PORT NAME N S TS_MS [reject] sends N requests on one keep-alive connection (below).
cat >"$dir/promrw.py" <<'PY'
import json, sys, urllib.request, urllib.error, struct

def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)

def field(num, wt, payload):
    key = varint((num << 3) | wt)
    if wt == 2:
        return key + varint(len(payload)) + payload
    return key + payload

def snappy_literal(b):  # valid snappy made of literals only
    out = bytearray(varint(len(b)))
    for i in range(0, len(b), 65536):
        chunk = b[i:i + 65536]
        out += bytes([61 << 2]) + (len(chunk) - 1).to_bytes(2, "little") + chunk
    return bytes(out)

def unsnappy(b):
    n = shift = i = 0
    while True:
        c = b[i]; i += 1
        n |= (c & 0x7f) << shift; shift += 7
        if c < 0x80:
            break
    out = bytearray()
    while i < len(b):
        tag = b[i]; i += 1
        t = tag & 3
        if t == 0:
            ln = tag >> 2
            if ln < 60:
                ln += 1
            else:
                nb = ln - 59
                ln = int.from_bytes(b[i:i + nb], "little") + 1; i += nb
            out += b[i:i + ln]; i += ln
            continue
        if t == 1:
            ln = ((tag >> 2) & 7) + 4; off = ((tag >> 5) << 8) | b[i]; i += 1
        elif t == 2:
            ln = (tag >> 2) + 1; off = int.from_bytes(b[i:i + 2], "little"); i += 2
        else:
            ln = (tag >> 2) + 1; off = int.from_bytes(b[i:i + 4], "little"); i += 4
        for _ in range(ln):
            out.append(out[-off])
    assert len(out) == n, "snappy length"
    return bytes(out)

def fields(b):
    i = 0
    while i < len(b):
        key = 0; shift = 0
        while True:
            c = b[i]; i += 1
            key |= (c & 0x7f) << shift; shift += 7
            if c < 0x80:
                break
        num, wt = key >> 3, key & 7
        if wt == 0:
            v = 0; shift = 0
            while True:
                c = b[i]; i += 1
                v |= (c & 0x7f) << shift; shift += 7
                if c < 0x80:
                    break
        elif wt == 1:
            v = b[i:i + 8]; i += 8
        elif wt == 2:
            ln = 0; shift = 0
            while True:
                c = b[i]; i += 1
                ln |= (c & 0x7f) << shift; shift += 7
                if c < 0x80:
                    break
            v = b[i:i + ln]; i += ln
        elif wt == 5:
            v = b[i:i + 4]; i += 4
        else:
            raise ValueError("wire type %d" % wt)
        yield num, v

def post(port, path, body):
    rq = urllib.request.Request("http://127.0.0.1:%s%s" % (port, path), data=snappy_literal(body),
                                headers={"Content-Encoding": "snappy",
                                         "Content-Type": "application/x-protobuf"})
    try:
        with urllib.request.urlopen(rq, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()

def label(name, value):
    return field(1, 2, name.encode()) + field(2, 2, value.encode())

if sys.argv[1] == "read":
    port, start, end = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    q = field(1, 0, varint(start)) + field(2, 0, varint(end))
    for m in sys.argv[5:]:
        t, name, value = m.split(":", 2)
        q += field(3, 2, field(1, 0, varint({"EQ": 0, "NEQ": 1, "RE": 2, "NRE": 3}[t]))
                   + field(2, 2, name.encode()) + field(3, 2, value.encode()))
    code, body = post(port, "/api/v1/read", field(1, 2, q))
    if code != 200:
        print("HTTP", code, body.decode("utf-8", "replace").strip())
        sys.exit(0)
    lines = []
    for num, res in fields(unsnappy(body)):
        for num2, ts in fields(res):
            labels, n = {}, 0
            for num3, v in fields(ts):
                if num3 == 1:
                    kv = dict(fields(v))
                    labels[kv.get(1, b"").decode()] = kv.get(2, b"").decode()
                elif num3 == 2:
                    n += 1
            lines.append("\t".join("%s=%s" % kv for kv in sorted(labels.items()))
                         + "\tn=%d" % n)
    print("\n".join(sorted(lines)))
elif sys.argv[1] == "badlabel":
    # two series: the first well formed, the second with a label whose bytes are no Label
    port, ts = sys.argv[2], int(sys.argv[3])
    sample = field(2, 2, field(1, 1, struct.pack("<d", 1.0)) + field(2, 0, varint(ts)))
    good = field(1, 2, label("__name__", "ctsdb_it_badlabel_ok")) + sample
    bad = field(1, 2, label("__name__", "ctsdb_it_badlabel_bad")) + field(1, 2, b"\x0a\x7f") + sample
    code, body = post(port, "/api/v1/write", field(1, 2, good) + field(1, 2, bad))
    print(("%d %s" % (code, body.decode("utf-8", "replace"))).strip())
elif sys.argv[1] == "hostile":
    # N well-formed series, then: "truncated" cuts the body inside its last series (the length
    # prefix runs past the end); "badtail" adds a series whose sample holds an unterminated
    # varint, so decoding fails after the N series were unpacked (several arena blocks)
    port, ts, mode, n = sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
    sample = field(2, 2, field(1, 1, struct.pack("<d", 1.0)) + field(2, 0, varint(ts)))
    body = b"".join(field(1, 2, field(1, 2, label("__name__", "ctsdb_it_hostile"))
                              + field(1, 2, label("i", str(i))) + sample) for i in range(n))
    if mode == "truncated":
        body = body[:-7]
    else:
        body += field(1, 2, field(1, 2, label("__name__", "ctsdb_it_hostile"))
                      + field(2, 2, field(2, 0, b"\xff" * 11)))
    code, rb = post(port, "/api/v1/write", body)
    print(("%d %s" % (code, rb.decode("utf-8", "replace"))).strip())
elif sys.argv[1] == "burst":
    # N requests of S samples (one series each, metric NAME, label i) on one keep-alive
    # connection, each sent once the previous one's reply was read; with "reject" each request
    # also carries a sample dated 1970 (refused before the batches). Prints each reply as
    # "<status> <body>", one a line.
    import http.client
    port, name, n, s, ts = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    reject = len(sys.argv) > 7 and sys.argv[7] == "reject"
    hc = http.client.HTTPConnection("127.0.0.1", int(port), timeout=60)
    for k in range(n):
        body = b"".join(field(1, 2, field(1, 2, label("__name__", name)) + field(1, 2, label("i", str(i)))
                                  + field(2, 2, field(1, 1, struct.pack("<d", float(k)))
                                          + field(2, 0, varint(ts + k))))
                        for i in range(s))
        if reject:
            body += field(1, 2, field(1, 2, label("__name__", name))
                          + field(2, 2, field(1, 1, struct.pack("<d", 1.0)) + field(2, 0, varint(1000))))
        hc.request("POST", "/api/v1/write", snappy_literal(body),
                   {"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf"})
        rs = hc.getresponse()
        print(("%d %s" % (rs.status, rs.read().decode("utf-8", "replace"))).strip())
    hc.close()
else:
    port, ts, value = sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    series = b"".join(field(1, 2, label(*kv.split("=", 1))) for kv in sys.argv[5:])
    series += field(2, 2, field(1, 1, struct.pack("<d", value)) + field(2, 0, varint(ts)))
    code, body = post(port, "/api/v1/write", field(1, 2, series))
    print(("%d %s" % (code, body.decode("utf-8", "replace"))).strip())
PY
promrw() { python3 "$dir/promrw.py" "$@"; }
# the label values OpenTSDB forbids, read back byte for byte (set in rules.yml below)
W1='/a b=c|d:e/2Fé"x\y,{}'
W2='/2F/3A/zz /'

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PA=$(free_port)

cat >"$dir/rules.yml" <<YML
groups:
  - name: ctsdb_it
    interval: 1s
    rules:
      - record: ctsdb_it:scrape_samples:sum
        expr: sum(scrape_samples_scraped)
      - record: ctsdb_it:weird
        expr: vector(1)
        labels:
          ctsdb_set: weird
          path: '$W1'
      - record: ctsdb_it:weird
        expr: vector(2)
        labels:
          ctsdb_set: weird
          path: '$W2'
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
wp=""
for _ in $(seq 1 40); do
  wp=$(ctsdb_points 'ctsdb_it/3Aweird' | cut -d' ' -f3- | sort -u)
  [ "$(echo "$wp" | grep -c .)" -ge 2 ] && break
  sleep 0.5
done
check_contains "forbidden characters are stored escaped (1)" "$wp" \
  "path=/2Fa/20b/3Dc/7Cd/3Ae/2F2F/C3/A9/22x/5Cy/2C/7B/7D"
check_contains "forbidden characters are stored escaped (2)" "$wp" "path=/2F2F/2F3A/2Fzz/20/2F"

# the compared window: from the first stored sample to 2 s ago, once ctsdb has samples past it
read -r start_ms _ < <(ctsdb_points scrape_duration_seconds | sort -n | head -1)
end_s=$(( $(date +%s) - 2 ))
for _ in $(seq 1 40); do
  last=$(ctsdb_points scrape_duration_seconds | sort -n | tail -1 | cut -d' ' -f1)
  [ "${last:-0}" -gt $(( (end_s + 1) * 1000 )) ] && break
  sleep 0.5
done
# ... and once every recorded series (two weird ones and the sum) has samples past it (remote
# write sends series through parallel shards)
for _ in $(seq 1 40); do
  wlast=$( (ctsdb_points 'ctsdb_it/3Aweird'; ctsdb_points 'ctsdb_it/3Ascrape_samples/3Asum') |
    python3 -c '
import sys
last = {}
for l in sys.stdin:
    t, v, tags = l.rstrip("\n").split(" ", 2)
    last[tags] = max(last.get(tags, 0), int(t))
print(min(last.values()) if len(last) >= 3 else 0)')
  [ "${wlast:-0}" -gt $(( (end_s + 1) * 1000 )) ] && break
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
qa_w=$(qr "$PA" 'ctsdb_it:weird')
qa_re=$(qr "$PA" '{__name__=~"ctsdb_it:.*"}')
qa_lab=$(qr "$PA" '{ctsdb_set="weird"}')
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

# forbidden characters read back through Prometheus byte for byte; queries without a __name__
# equality matcher (a regex on __name__, a label matcher alone) answer what Prometheus does
qb_w=$(qr "$PB" 'ctsdb_it:weird')
check "the weird series read back ($(echo "$qb_w" | wc -l) steps)" test "$(echo "$qb_w" | wc -l)" -ge 6
check_eq "label values OpenTSDB forbids read back equal through Prometheus" "$qa_w" "$qb_w"
check_contains "the value with space, =, |, :, /2F, UTF-8, quote, backslash" "$qb_w" "path=$W1 "
check_contains "the value with escape look-alikes" "$qb_w" "path=$W2 "
qb_re=$(qr "$PB" '{__name__=~"ctsdb_it:.*"}')
nre=$(echo "$qb_re" | sed 's/[, ].*//' | sort -u | wc -l)
check "a regex on __name__ reads several metrics ($nre)" test "$nre" -ge 2
check_eq "PromQL {__name__=~\"ctsdb_it:.*\"} through remote read equals Prometheus' own" "$qa_re" "$qb_re"
qb_lab=$(qr "$PB" '{ctsdb_set="weird"}')
check "a label matcher alone reads series ($(echo "$qb_lab" | wc -l) steps)" test "$(echo "$qb_lab" | wc -l)" -ge 6
check_eq "PromQL {ctsdb_set=\"weird\"} (no __name__) equals Prometheus' own" "$qa_lab" "$qb_lab"

# the same through a direct remote read
now_ms=$(( ($(date +%s) + 1) * 1000 ))
rd_lab=$(promrw read "$TSD_PORT" $((start_s * 1000)) "$now_ms" EQ:ctsdb_set:weird | sed 's/\tn=[0-9]*$//')
rd_re=$(promrw read "$TSD_PORT" $((start_s * 1000)) "$now_ms" 'RE:__name__:ctsdb_it:w.*' | sed 's/\tn=[0-9]*$//')
check_eq "direct remote read of a label matcher alone: two series" "2" "$(echo "$rd_lab" | grep -c .)"
check_contains "direct remote read: the value with forbidden characters, exact" "$rd_lab" \
  "$(printf '__name__=ctsdb_it:weird\tctsdb_set=weird\tpath=%s' "$W1")"
check_contains "direct remote read: the escape look-alikes, exact" "$rd_lab" \
  "$(printf '__name__=ctsdb_it:weird\tctsdb_set=weird\tpath=%s' "$W2")"
check_eq "direct remote read: a regex on __name__ gives the same series" "$rd_lab" "$rd_re"
rd_none=$(promrw read "$TSD_PORT" $((start_s * 1000)) "$now_ms" 'RE:__name__:no_such_.*' EQ:ctsdb_set:weird)
check_eq "a regex matching no metric reads as no series" "" "$rd_none"
rd_nre=$(promrw read "$TSD_PORT" $((start_s * 1000)) "$now_ms" 'NRE:__name__:ctsdb_it:w.*' EQ:ctsdb_set:weird)
check_eq "a negative regex on __name__ excludes the metric" "" "$rd_nre"

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
# labels are decoded lazily (only those of series not in the series cache), but all of them
# before anything is written: a later series' bad label refuses the whole body
bl=$(promrw badlabel "$TSD_PORT" "$(( $(date +%s) * 1000 ))")
check_contains "a series with an undecodable label refuses the body (400)" "$bl" "400"
check_eq "and the well-formed series before it is not written" "[]" \
  "$(curl -s "http://127.0.0.1:$TSD_PORT/api/suggest?type=metrics&q=ctsdb_it_badlabel")"
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Encoding: snappy' --data-binary 'x' \
  "http://127.0.0.1:$TSD_PORT/api/v1/read")
check_eq "a bad read body is 400" "400" "$code"
# hostile bodies on the write path's reused buffers (decode buffer, arena): a truncated body and
# one that fails to decode after 10,000 series were unpacked (several arena blocks) are 400,
# write nothing, leak nothing (the sanitizer check at the end) and leave the buffers fit for the
# next request, whose sample reads back
ht=$(promrw hostile "$TSD_PORT" "$(( $(date +%s) * 1000 ))" truncated 10000)
check_contains "a truncated WriteRequest is 400" "$ht" "400 body is not a protobuf"
hb=$(promrw hostile "$TSD_PORT" "$(( $(date +%s) * 1000 ))" badtail 10000)
check_contains "a WriteRequest failing after 10,000 decoded series is 400" "$hb" \
  "400 body is not a protobuf"
check_eq "and neither wrote a sample" "[]" \
  "$(curl -s "http://127.0.0.1:$TSD_PORT/api/suggest?type=metrics&q=ctsdb_it_hostile")"
now_h=$(( $(date +%s) * 1000 ))
wr=$(promrw write "$TSD_PORT" "$now_h" 42.5 __name__=ctsdb_it_after_hostile a=b)
check_eq "the next write on the reused buffers is 204" "204" "$wr"
check_contains "and its sample reads back" "$(ctsdb_points ctsdb_it_after_hostile)" "42.5"

# the reply is sent by whichever thread finishes a request's last batch (the ingest writer, or
# the worker): on one keep-alive connection, 40 requests of 600 samples in a row are each 204 and
# every sample reads back; requests of 5,000 samples (two ingest batches of at most 4,096) with
# one refused sample each are answered only once both batches are written, counting all of them
now_b=$(( $(date +%s) * 1000 - 60000 ))
bu=$(promrw burst "$TSD_PORT" ctsdb_it_burst 40 600 "$now_b")
check_eq "40 keep-alive remote writes in a row are each 204" "40" "$(grep -c '^204$' <<<"$bu")"
bn=$(curl -s "http://127.0.0.1:$TSD_PORT/api/query?start=1h-ago&m=sum:0all-count:ctsdb_it_burst" |
  python3 -c 'import json,sys; print(int(sum(sum(r["dps"].values()) for r in json.load(sys.stdin))))')
check_eq "and all 24,000 samples read back" "24000" "$bn"
br=$(promrw burst "$TSD_PORT" ctsdb_it_burst2 3 5000 "$now_b" reject)
check_eq "requests over two batches with a refused sample are each 400 with both batches counted" \
  "3" "$(grep -c '^400 1 of 5001 samples rejected, 5000 written: ' <<<"$br")"
bn=$(curl -s "http://127.0.0.1:$TSD_PORT/api/query?start=1h-ago&m=sum:0all-count:ctsdb_it_burst2" |
  python3 -c 'import json,sys; print(int(sum(sum(r["dps"].values()) for r in json.load(sys.stdin))))')
check_eq "and their 15,000 written samples read back" "15000" "$bn"

kill -TERM "$bpid"
for _ in $(seq 1 100); do kill -0 "$bpid" 2>/dev/null || break; sleep 0.1; done
tsd_stop

# restart on the same data: ':' allowed in names from now on, at most 1 metric per read query,
# and no remote write series cache (every series' labels decoded and mapped: the other path)
tsd_start --tsd.core.tag.allow_specialchars=: --tsd.prometheus.read_max_metrics=1 \
  --tsd.prometheus.series_cache_bytes=0
rd_re2=$(promrw read "$TSD_PORT" $((start_s * 1000)) "$now_ms" 'RE:__name__:ctsdb_it:w.*' | sed 's/\tn=[0-9]*$//')
check_eq "series escaped before allow_specialchars changed read back the same" "$rd_re" "$rd_re2"
cap=$(promrw read "$TSD_PORT" $((start_s * 1000)) "$now_ms" 'RE:__name__:ctsdb_it:.*')
check_contains "a query selecting more metrics than read_max_metrics is 400" "$cap" "HTTP 400"
check_contains "naming the key" "$cap" "tsd.prometheus.read_max_metrics"
now2=$(( $(date +%s) * 1000 ))
wr=$(promrw write "$TSD_PORT" "$now2" 5 __name__=ctsdb_it_colon 'path=a:b/3Ac d')
check_eq "remote write of a label with ':' and an escape look-alike" "204" "$wr"
stored=$(ctsdb_points ctsdb_it_colon)
check_contains "with allow_specialchars=: the ':' is stored raw, '/' and ' ' escaped" "$stored" \
  "path=a:b/2F3Ac/20d"
rd_colon=$(promrw read "$TSD_PORT" $((now2 - 1000)) $((now2 + 1000)) EQ:__name__:ctsdb_it_colon)
check_eq "and reads back exactly" "$(printf '__name__=ctsdb_it_colon\tpath=a:b/3Ac d\tn=1')" "$rd_colon"
tsd_stop
it_done
