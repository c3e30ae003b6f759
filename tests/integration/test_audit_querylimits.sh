#!/usr/bin/env bash
# test_audit_querylimits.sh - the query limits of OpenTSDB 2.4's QueryLimitOverride as a client
# sees them (TestQueryLimitOverride constructs the class on mocked files; over HTTP what shows is
# which limit a query meets): with no overrides file the default datapoint limit holds for each
# sub query (ctorNoFileConfigured), over it the answer is SaltScanner's 413 text; 0 is no limit;
# a negative default refuses to start (ctorNegativeDefaultsLimit). The per-metric overrides file
# (tsd.query.limits.overrides.config): an override's regex found in the metric name replaces
# both limits (ctorWithFile: ".*sys$" finds namespace.app.sys, not namespace.app.sys.cpu), in
# /api/query and in /api/query/exp's sub-queries; a missing file or a bad regex loads nothing
# (ctorFileDoesntExistException, ctorWithFileBadRegex); with tsd.query.limits.overrides.interval
# the file is read again: a changed limit, an added and a removed override, a malformed file
# that keeps the overrides in force (timerTask*). The byte limit
# (tsd.query.limits.bytes.default, or an override's byteLimit): ctsdb counts 16 bytes a raw
# datapoint read (docs/query.md, "Query limits"), over it SaltScanner's "maximum amount of N MB"
# 413. Waits for a reload poll with a timeout; query/qlimits.h's unit test covers the file rules.
source "$(dirname "$0")/lib.sh"

d=$(it_tmpdir)
out=$(timeout 20 "$CTSDB" tsd --bind 127.0.0.1 --port 0 --data "$d/data" \
  --tsd.query.limits.data_points.default=-24 2>&1)
rc=$?
case "$rc:$out" in
  2:*"bad value '-24' for tsd.query.limits.data_points.default"*) ok "ctorNegativeDefaultsLimit: a negative default refuses to start" ;;
  *) not_ok "ctorNegativeDefaultsLimit: exit $rc, ${out:0:300}" ;;
esac

OVR=$(it_tmpdir)/overrides.json
echo '[{"regex":".*sys$","dataPointsLimit":16},{"regex":"^ql\\.bytes","byteLimit":40},{"regex":"^ql\\.free$"}]' >"$OVR"
tsd_start --tsd.query.limits.data_points.default=4 "--tsd.query.limits.overrides.config=$OVR" \
  --tsd.query.limits.overrides.interval=1
{
  for i in 0 1 2 3 4; do echo "put ql.five $((1356998400 + i * 60)) $i host=a"; done
  for i in 0 1 2; do echo "put ql.three $((1356998400 + i * 60)) $i host=a"; done
  for m in namespace.app.sys namespace.app.sys.cpu ql.free ql.bytes.three; do
    for i in 0 1 2 3 4; do
      [ $m = ql.bytes.three ] && [ $i -ge 3 ] && continue
      echo "put $m $((1356998400 + i * 60)) $i host=a"
    done
  done
  for i in 0 1; do echo "put ql.bytes.two $((1356998400 + i * 60)) $i host=a"; done
  echo version
} | tsd_talk >/dev/null
PYTHONPATH="$IT_ROOT/tests/integration" python3 - "$TSD_PORT" "$OVR" "$TSD_LOG" <<'PY'
import json, sys, time
from audit_lib import connect, req, report, finish
connect(sys.argv[1])
OVR = sys.argv[2]
R = "/api/query?start=1356998400&end=1356999000&"
def msg(n):
    return ("Sorry, you have attempted to fetch more than our limit of %d data points. Please try "
            "filtering using more tags or decrease your time range." % n)
BYTES = ("Sorry, you have attempted to fetch more than our maximum amount of 0MB from storage. "
         "Please try filtering using more tags or decrease your time range.")
def why_over(path, text, method="GET", body=None):
    st, b = req(path, method, body)
    try:
        e = json.loads(b)["error"]
        return ("" if (st, e["code"], e["message"]) == (413, 413, text) else "status %d, %r" % (st, e)), b
    except (ValueError, KeyError, TypeError) as x:
        return "status %d (%s)" % (st, x), b
def over(name, path, text):
    why, b = why_over(path, text)
    report(name, why, b)
def under(name, path, n):
    st, b = req(path)
    try:
        got = [len(a["dps"]) for a in json.loads(b)]
        why = "" if st == 200 and got == n else "status %d, points %r" % (st, got)
    except (ValueError, KeyError, TypeError) as x:
        why = "status %d (%s)" % (st, x)
    report(name, why, b)
over("ctorNoFileConfigured: the default (4) holds: 5 points are a 413 with SaltScanner's text",
     R + "m=sum:ql.five", msg(4))
under("3 points are under the default", R + "m=sum:ql.three", [3])
under("the limit counts per sub query: 3 + 3 points under a limit of 4", R + "m=sum:ql.three&m=max:ql.three",
      [3, 3])
over("the limit counts points read, not answered: a 1h-sum of 5 points is a 413", R + "m=sum:1h-sum:ql.five", msg(4))
st, b = req("/api/query", "POST", json.dumps({"start": 1356998400, "end": 1356999000,
            "queries": [{"metric": "ql.five", "aggregator": "sum"}]}))
report("POST: the same 413", "" if st == 413 and msg(4) in b else "status %d" % st, b)
under("ctorWithFile: namespace.app.sys (.*sys$ finds it) has the override's 16: 5 points answered",
      R + "m=sum:namespace.app.sys", [5])
over("ctorWithFile: namespace.app.sys.cpu (not found by .*sys$) meets the default",
     R + "m=sum:namespace.app.sys.cpu", msg(4))
under("each sub query has its metric's limit: sys (16) and ql.three (4) in one query",
      R + "m=sum:namespace.app.sys&m=sum:ql.three", [5, 3])
under("an override without dataPointsLimit (0) is no limit: ql.free's 5 points", R + "m=sum:ql.free", [5])
over("byteLimit 40 (16 bytes a point): 3 points (48 bytes) are SaltScanner's byte 413",
     R + "m=sum:ql.bytes.three", BYTES)
under("byteLimit 40: 2 points (32 bytes) are answered", R + "m=sum:ql.bytes.two", [2])
EXP = {"time": {"start": "1356998400", "end": "1356999000", "aggregator": "sum"},
       "metrics": [{"id": "a", "metric": "namespace.app.sys"}, {"id": "b", "metric": "ql.five"}],
       "expressions": [{"id": "e", "expr": "a + b"}]}
why, b = why_over("/api/query/exp", msg(4), "POST", json.dumps(EXP))
report("/api/query/exp: its sub query of ql.five meets the default (a's override is 16)", why, b)
EXP["metrics"][1]["metric"] = "ql.three"
st, b = req("/api/query/exp", "POST", json.dumps(EXP))
report("/api/query/exp: sys (5 points, override 16) + ql.three (3) answered",
       "" if st == 200 and len(json.loads(b)["outputs"][0]["dps"]) == 5 else "status %d" % st, b)

def poll(name, path, text, timeout=20):
    """the reload (interval 1 s) is seen by a query once the interval has passed: poll"""
    end = time.time() + timeout
    while True:
        why, b = why_over(path, text)
        if why == "" or time.time() > end:
            report(name, why, b)
            return
        time.sleep(0.2)
def write(text):
    with open(OVR + ".tmp", "w") as f:
        f.write(text)
    import os
    os.replace(OVR + ".tmp", OVR)
write('[{"regex":".*sys$","dataPointsLimit":2}]')
poll("timerTaskDiffLimit: the file read again, namespace.app.sys's limit is now 2", R + "m=sum:namespace.app.sys", msg(2))
over("timerTaskRemoveOne: ql.free meets the default (4)", R + "m=sum:ql.free", msg(4))
write('[{"regex":".*sys$","dataPointsLimit":2},{"regex":"five","dataPointsLimit":50}]')
end = time.time() + 20
while True:
    st, b = req(R + "m=sum:ql.five")
    if st == 200 or time.time() > end:
        break
    time.sleep(0.2)
report("timerTaskAddOne: an override of ql.five added (50): its 5 points answered", "" if st == 200 else "status %d" % st, b)
write('[{"regex":".*sys$","dataPo')
# a query after the interval reads the malformed file: query until the log says so (bounded)
end = time.time() + 20
while "(the 2 override(s) in force are kept)" not in open(sys.argv[3]).read() and time.time() < end:
    req(R + "m=sum:ql.three")
    time.sleep(0.2)
over("a malformed file keeps the overrides in force (sys still 2)", R + "m=sum:namespace.app.sys", msg(2))
under("... and ql.five's 50", R + "m=sum:ql.five", [5])
finish()
PY
[ $? -eq 0 ] || IT_FAILS=$((IT_FAILS + 1))
log=$(cat "$TSD_LOG")
check_contains "the file's first read is logged" "$log" "loaded 3 query limit override(s) from $OVR"
check_contains "a malformed file is logged as an error, the overrides kept" "$log" \
  "(the 2 override(s) in force are kept)"
for k in tsd.query.limits.overrides.config tsd.query.limits.bytes.default tsd.query.limits.overrides.interval; do
  case "$log" in
    *"unknown configuration key $k"*) not_ok "$k is a known key" ;;
    *) ok "$k is a known key (no unknown-key warning)" ;;
  esac
done
tsd_stop
unset TSD_DATA
# ctorFileDoesntExistException, ctorWithFileBadRegex: the TSD starts, the defaults hold
for f in "$OVR.missing" "$OVR.badregex"; do
  echo '[{"regex":".*sy(notclosed","byteLimit":24,"dataPointsLimit":16}]' >"$OVR.badregex"
  tsd_start --tsd.query.limits.data_points.default=4 "--tsd.query.limits.overrides.config=$f"
  { for i in 0 1 2 3 4; do echo "put namespace.app.sys $((1356998400 + i * 60)) $i host=a"; done; echo version; } |
    tsd_talk >/dev/null
  r=$(curl -s -m 20 "http://127.0.0.1:$TSD_PORT/api/query?start=1356998400&end=1356999000&m=sum:namespace.app.sys")
  check_contains "${f##*.}: the default holds (413 at 4)" "$r" "our limit of 4 data points"
  check_contains "${f##*.}: logged as an error" "$(cat "$TSD_LOG")" "(the 0 override(s) in force are kept)"
  tsd_stop
  unset TSD_DATA
done
out=$(timeout 20 "$CTSDB" tsd --bind 127.0.0.1 --port 0 --data "$d/data2" \
  --tsd.query.limits.bytes.default=-1 2>&1)
rc=$?
case "$rc:$out" in
  2:*"bad value '-1' for tsd.query.limits.bytes.default"*) ok "a negative byte limit refuses to start" ;;
  *) not_ok "a negative byte limit: exit $rc, ${out:0:300}" ;;
esac
tsd_start --tsd.query.limits.data_points.default=0 --tsd.query.limits.bytes.default=40
{
  for i in $(seq 0 99); do echo "put ql.many $((1356998400 + i)) $i host=a"; done
  for i in 0 1; do echo "put ql.two $((1356998400 + i)) $i host=a"; done
  echo version
} | tsd_talk >/dev/null
r=$(curl -s -m 20 "http://127.0.0.1:$TSD_PORT/api/query?start=1356998400&end=1356999000&m=sum:ql.many")
check_contains "bytes.default=40: 100 points (1600 bytes) are a 413" "$r" \
  '"code":413,"message":"Sorry, you have attempted to fetch more than our maximum amount of 0MB from storage.'
r=$(curl -s -m 20 "http://127.0.0.1:$TSD_PORT/api/query?start=1356998400&end=1356999000&m=sum:ql.two")
check_eq "bytes.default=40: 2 points (32 bytes) answered" 2 \
  "$(python3 -c 'import json,sys; print(len(json.loads(sys.argv[1])[0]["dps"]))' "$r" 2>&1)"
tsd_stop
unset TSD_DATA
tsd_start --tsd.query.limits.data_points.default=0
{
  for i in $(seq 0 99); do echo "put ql.many $((1356998400 + i)) $i host=a"; done
  echo version
} | tsd_talk >/dev/null
r=$(curl -s -m 20 "http://127.0.0.1:$TSD_PORT/api/query?start=1356998400&end=1356999000&m=sum:ql.many")
check_eq "data_points.default=0 (and no byte limit by default): no limit (100 points answered)" 100 \
  "$(python3 -c 'import json,sys; print(len(json.loads(sys.argv[1])[0]["dps"]))' "$r" 2>&1)"
tsd_stop
unset TSD_DATA

# allow_override (OpenTSDB's TsdbQuery.configureFromQuery): a query's overrideDataPointLimit /
# overrideByteLimit lifts that limit - per-metric override included - only where
# tsd.query.limits.data_points.allow_override / .bytes.allow_override say so. Limits: 4 points,
# 40 bytes (16 a point: 2 points); ql.ovr's override 2 points, 16 bytes.
echo '[{"regex":"^ql\\.ovr$","dataPointsLimit":2,"byteLimit":16}]' >"$OVR.allow"
allow_checks() { # $1: label, $2: which overrides the TSD allows (none, both, bytes)
  PYTHONPATH="$IT_ROOT/tests/integration" python3 - "$TSD_PORT" "$1" "$2" <<'PY'
import json, sys
from audit_lib import connect, req, report, finish
connect(sys.argv[1])
L, ALLOW = sys.argv[2], sys.argv[3]
DPS = ("Sorry, you have attempted to fetch more than our limit of %d data points. Please try "
       "filtering using more tags or decrease your time range.")
BYTES = ("Sorry, you have attempted to fetch more than our maximum amount of 0MB from storage. "
         "Please try filtering using more tags or decrease your time range.")
def post(metric, **flags):
    body = dict({"start": 1356998400, "end": 1356999000,
                 "queries": [{"metric": metric, "aggregator": "sum"}]}, **flags)
    return req("/api/query", "POST", json.dumps(body))
def check(name, st_b, want):
    """want: a number of points answered, or the 413's message"""
    st, b = st_b
    try:
        j = json.loads(b)
        got = len(j[0]["dps"]) if st == 200 else j["error"]["message"]
        why = "" if (st == 200) == isinstance(want, int) and got == want else "status %d, %r" % (st, got)
    except (ValueError, KeyError, TypeError, IndexError) as x:
        why = "status %d (%s)" % (st, x)
    report(L + name, why, b)
BOTH = {"overrideDataPointLimit": True, "overrideByteLimit": True}
check("no flag: ql.five's 5 points meet the 4-point limit", post("ql.five"), DPS % 4)
if ALLOW == "none":
    check("not allowed: overrideDataPointLimit is ignored", post("ql.five", overrideDataPointLimit=True), DPS % 4)
    check("not allowed: overrideByteLimit is ignored (3 points, 48 bytes)",
          post("ql.three", overrideByteLimit=True), BYTES)
    check("not allowed: both flags, ql.ovr's override (2 points) holds", post("ql.ovr", **BOTH), DPS % 2)
elif ALLOW == "both":
    check("both flags: ql.five's 5 points answered", post("ql.five", **BOTH), 5)
    check("overrideDataPointLimit alone: the byte limit still holds (5 points, 80 bytes)",
          post("ql.five", overrideDataPointLimit=True), BYTES)
    check("overrideByteLimit alone: the point limit still holds", post("ql.five", overrideByteLimit=True), DPS % 4)
    check("overrideByteLimit alone: ql.three (3 points, 48 bytes) answered",
          post("ql.three", overrideByteLimit=True), 3)
    check("both flags lift the metric's override too: ql.ovr's 3 points", post("ql.ovr", **BOTH), 3)
    check("false flags lift nothing", post("ql.five", overrideDataPointLimit=False, overrideByteLimit=False), DPS % 4)
    st, b = req("/api/query?start=1356998400&end=1356999000&m=sum:ql.five&overrideDataPointLimit=true")
    check("GET has no override form (QueryRpc parses none)", (st, b), DPS % 4)
else:  # bytes only
    check("bytes allowed only: overrideDataPointLimit is ignored", post("ql.five", **BOTH), DPS % 4)
    check("bytes allowed only: overrideByteLimit lifts the byte limit (ql.three, 48 bytes)",
          post("ql.three", overrideByteLimit=True), 3)
finish()
PY
  [ $? -eq 0 ] || IT_FAILS=$((IT_FAILS + 1))
}
for allow in none both bytes; do
  flags=()
  if [ "$allow" = both ]; then
    flags=(--tsd.query.limits.data_points.allow_override=true --tsd.query.limits.bytes.allow_override=true)
  elif [ "$allow" = bytes ]; then
    flags=(--tsd.query.limits.bytes.allow_override=true)
  fi
  tsd_start --tsd.query.limits.data_points.default=4 --tsd.query.limits.bytes.default=40 \
    "--tsd.query.limits.overrides.config=$OVR.allow" "${flags[@]}"
  {
    for i in 0 1 2 3 4; do echo "put ql.five $((1356998400 + i * 60)) $i host=a"; done
    for i in 0 1 2; do echo "put ql.three $((1356998400 + i * 60)) $i host=a"; done
    for i in 0 1 2; do echo "put ql.ovr $((1356998400 + i * 60)) $i host=a"; done
    echo version
  } | tsd_talk >/dev/null
  allow_checks "allow_override=$allow: " $allow
  case "$(cat "$TSD_LOG")" in
    *"unknown configuration key tsd.query.limits"*) not_ok "allow_override=$allow: the keys are known" ;;
    *) ok "allow_override=$allow: the keys are known (no unknown-key warning)" ;;
  esac
  tsd_stop
  unset TSD_DATA
done

# the byte limit holds for rollup-table reads too (16 bytes a rollup value read, as a raw point)
tsd_start --tsd.rollups.enable=true --tsd.rollups.ctsdb.compute=false \
  --tsd.query.limits.data_points.default=0 --tsd.query.limits.bytes.default=40
PYTHONPATH="$IT_ROOT/tests/integration" python3 - "$TSD_PORT" <<'PY'
import json, sys
from audit_lib import connect, req, report, finish
connect(sys.argv[1])
T0, H = 1356998400, 3600
def rollups(metric, n):
    pts = [{"metric": metric, "timestamp": T0 + k * H, "value": 10 + k, "tags": {"host": "a"},
            "interval": "1h", "aggregator": "sum"} for k in range(n)]
    st, b = req("/api/rollup", "POST", json.dumps(pts))
    report("%d rollup values of %s stored" % (n, metric), "" if st == 204 else "status %d" % st, b)
rollups("ql.r3", 3)
rollups("ql.r2", 2)
def q(metric):
    return req("/api/query", "POST", json.dumps({"start": T0, "end": T0 + 12 * H, "queries": [
        {"metric": metric, "aggregator": "sum", "downsample": "1h-sum", "rollupUsage": "ROLLUP_NOFALLBACK"}]}))
st, b = q("ql.r3")
want = ("Sorry, you have attempted to fetch more than our maximum amount of 0MB from storage. "
        "Please try filtering using more tags or decrease your time range.")
try:
    why = "" if st == 413 and json.loads(b)["error"]["message"] == want else "status %d" % st
except (ValueError, KeyError, TypeError) as x:
    why = "status %d (%s)" % (st, x)
report("bytes.default=40: 3 rollup values read (48 bytes) are SaltScanner's byte 413", why, b)
st, b = q("ql.r2")
try:
    got = json.loads(b)[0]["dps"] if st == 200 else None
    why = "" if got == {str(T0): 10, str(T0 + H): 11} else "status %d, %r" % (st, got)
except (ValueError, KeyError, TypeError, IndexError) as x:
    why = "status %d (%s)" % (st, x)
report("bytes.default=40: 2 rollup values (32 bytes) answered (10, 11)", why, b)
# raw points streamed through the 0all path (read by the rollup module's raw source) count too
from audit_lib import telnet
telnet(["put ql.raw3 %d %d host=a" % (T0 + 60 * k, k + 1) for k in range(3)] +
       ["put ql.raw2 %d %d host=a" % (T0 + 60 * k, k + 1) for k in range(2)] + ["version"])
def q0(metric):
    return req("/api/query?start=%d&end=%d&m=sum:0all-sum:%s" % (T0, T0 + 12 * H, metric))
st, b = q0("ql.raw3")
try:
    why = "" if st == 413 and json.loads(b)["error"]["message"] == want else "status %d" % st
except (ValueError, KeyError, TypeError) as x:
    why = "status %d (%s)" % (st, x)
report("bytes.default=40: a 0all-sum of 3 raw points (48 bytes) is the byte 413", why, b)
st, b = q0("ql.raw2")
try:
    got = list(json.loads(b)[0]["dps"].values()) if st == 200 else None
    why = "" if got == [3] else "status %d, %r" % (st, got)
except (ValueError, KeyError, TypeError, IndexError) as x:
    why = "status %d (%s)" % (st, x)
report("bytes.default=40: a 0all-sum of 2 raw points (32 bytes) answered (1 + 2)", why, b)
finish()
PY
[ $? -eq 0 ] || IT_FAILS=$((IT_FAILS + 1))
tsd_stop
unset TSD_DATA

# points the ingest head holds (the clock pinned inside their hour: an open hour) count against
# the limits as stored ones do, also where a whole-hour downsample folds them (qrollup's path)
T0=1356998400
CTSDB_NOW_MS=$(((T0 + 1800) * 1000)) tsd_start --tsd.storage.head.enable=true \
  --tsd.query.limits.data_points.default=4 --tsd.query.limits.bytes.default=0
{
  for i in 0 1 2 3 4; do echo "put ql.hfive $((T0 + i * 60)) $i host=a"; done
  for i in 0 1 2; do echo "put ql.hthree $((T0 + i * 60)) $i host=a"; done
  echo version
} | tsd_talk >/dev/null
PYTHONPATH="$IT_ROOT/tests/integration" python3 - "$TSD_PORT" <<'PY'
import json, sys
from audit_lib import connect, req, report, finish
connect(sys.argv[1])
MSG = ("Sorry, you have attempted to fetch more than our limit of 4 data points. Please try "
       "filtering using more tags or decrease your time range.")
st, b = req("/api/stats")
held = [int(e["value"]) for e in json.loads(b) if e["metric"] == "tsd.head.points"]
report("the 8 points are held by the head", "" if held == [8] else "head points %r" % held, b)
for m in ("sum:ql.hfive", "sum:1h-sum:ql.hfive", "sum:0all-sum:ql.hfive"):
    st, b = req("/api/query?start=1356998400&end=1356999000&m=" + m)
    try:
        why = "" if st == 413 and json.loads(b)["error"]["message"] == MSG else "status %d" % st
    except (ValueError, KeyError, TypeError) as x:
        why = "status %d (%s)" % (st, x)
    report("head points count: %s over 5 held points is a 413" % m, why, b)
for m in ("sum:1h-sum:ql.hthree", "sum:0all-sum:ql.hthree"):
    st, b = req("/api/query?start=1356998400&end=1356999000&m=" + m)
    try:
        got = list(json.loads(b)[0]["dps"].values()) if st == 200 else None
        why = "" if got == [3] else "status %d, %r" % (st, got)
    except (ValueError, KeyError, TypeError, IndexError) as x:
        why = "status %d (%s)" % (st, x)
    report("head points under the limit: %s of 3 held points answered (0 + 1 + 2)" % m, why, b)
finish()
PY
[ $? -eq 0 ] || IT_FAILS=$((IT_FAILS + 1))
tsd_stop
tsd_logs_check
it_done
