#!/usr/bin/env bash
# test_audit_lookup.sh - /api/search/lookup as OpenTSDB 2.4's TimeSeriesLookup finds series: the
# cases of TestTimeSeriesLookup (metric only, "*", tag key only, tag value only, "*" for the
# other half of a pair, metric with a tag key / value / pair, a tag pair alone, the limit, a
# metric with no series, unknown names) carried over as lookups of the real TSD, each by
# useMeta true and false and, for the tag forms, as a GET m= query and a POST body; each check
# names the Java test. TestTimeSeriesLookupSalted: the same lookups run against the three store
# layouts (audit_stores in lib.sh) and every answer must be byte-identical, the series listed in
# TSUID order whatever the salt.
# The fixture is TestTimeSeriesLookup's seven series (BaseTsdbTest's names: metrics
# sys.cpu.user, sys.cpu.system, "filtered"; tag keys host, owner; values web01, web02; the other
# names, which the Java test leaves as bare UIDs, named here): 0 sys.cpu.user host=web01,
# 1 sys.cpu.user host=web02, 2 sys.cpu.system host=web01, 3 filtered host=web01 owner=ops,
# 4 filtered host=web02 owner=ops, 5 filtered colo=lga ref=web01 rack=r1, 6 filtered colo=lga
# ref=web99 rack=r1; and "no.values", a metric UID with no series.
source "$(dirname "$0")/lib.sh"

audit_run() {
  local out
  out=$({
    echo "put sys.cpu.user 1356998400 1 host=web01"
    echo "put sys.cpu.user 1356998400 2 host=web02"
    echo "put sys.cpu.system 1356998400 3 host=web01"
    echo "put filtered 1356998400 4 host=web01 owner=ops"
    echo "put filtered 1356998400 5 host=web02 owner=ops"
    echo "put filtered 1356998400 6 colo=lga ref=web01 rack=r1"
    echo "put filtered 1356998400 7 colo=lga ref=web99 rack=r1"
    echo version
  } | tsd_talk)
  case "$out" in
    *"put:"* | *rror*) not_ok "${AUDIT_LABEL}the fixture is written: ${out:0:300}" ;;
    *) ok "${AUDIT_LABEL}the fixture is written" ;;
  esac
  curl -s -m 20 -X POST "http://127.0.0.1:$TSD_PORT/api/uid/assign?metric=no.values" >/dev/null
  PYTHONPATH="$IT_ROOT/tests/integration" python3 - "$TSD_PORT" "$AUDIT_LABEL" <<'PY'
import json, sys, urllib.parse
from audit_lib import connect, req, report, finish
connect(sys.argv[1])
LABEL = sys.argv[2]
S = [("sys.cpu.user", {"host": "web01"}), ("sys.cpu.user", {"host": "web02"}),
     ("sys.cpu.system", {"host": "web01"}), ("filtered", {"host": "web01", "owner": "ops"}),
     ("filtered", {"host": "web02", "owner": "ops"}),
     ("filtered", {"colo": "lga", "ref": "web01", "rack": "r1"}),
     ("filtered", {"colo": "lga", "ref": "web99", "rack": "r1"})]
def results(name, st, b, want):
    """want: indexes into S; the answer's results must be those series, in TSUID order"""
    why = ""
    try:
        d = json.loads(b)
        got = [(r["metric"], r["tags"]) for r in d["results"]] if st == 200 else None
        if st != 200:
            why = "status %d" % st
        elif sorted(map(repr, got)) != sorted(repr(S[i]) for i in want):
            why = "series %r, want %r" % (got, [S[i] for i in want])
        elif [r["tsuid"] for r in d["results"]] != sorted(r["tsuid"] for r in d["results"]):
            why = "not in TSUID order"
        elif d["totalResults"] != len(want) or d["type"] != "LOOKUP":
            why = "totalResults %r type %r" % (d["totalResults"], d["type"])
    except (ValueError, KeyError, TypeError) as x:
        why = "bad answer (%s)" % x
    report(LABEL + name, why, b)
def both(name, metric, tags, want, limit=None):
    """metric (None: none) and tags [(key or None, value or None)]: POST with useMeta true and
    false; and the GET form m=metric{k=v,...} where it can say it (no null key)"""
    for meta in (True, False):
        body = {"tags": [{"key": k, "value": v} for k, v in tags], "useMeta": meta}
        if metric is not None:
            body["metric"] = metric
        if limit is not None:
            body["limit"] = limit
        st, b = req("/api/search/lookup", "POST", json.dumps(body))
        results("%s%s (POST, useMeta %s)" % (name, "Meta" if meta else "Data", str(meta).lower()), st, b, want)
    if all(k is not None for k, v in tags):
        m = (metric or "*") + ("{%s}" % ",".join("%s=%s" % (k, v or "*") for k, v in tags) if tags else "")
        st, b = req("/api/search/lookup?m=" + urllib.parse.quote(m, safe="*=,") +
                    ("&limit=%d" % limit if limit is not None else ""))
        results("%s (GET m=%s)" % (name, m), st, b, want)
both("metricOnly", "sys.cpu.user", [], [0, 1])
both("metricOnlyStar: *", "*", [], range(7))
both("metricOnly2", "sys.cpu.system", [], [2])
both("metricOnlyNoValues: a metric without series", "no.values", [], [])
both("tagkOnly", None, [("host", None)], [0, 1, 2, 3, 4])
both("tagkOnlyStar", None, [("host", "*")], [0, 1, 2, 3, 4])
both("tagkOnly2", None, [("owner", None)], [3, 4])
both("tagvOnly", None, [(None, "web01")], [0, 2, 3, 5])
both("tagvOnlyStar", None, [("*", "web01")], [0, 2, 3, 5])
both("tagvOnly2", None, [(None, "web02")], [1, 4])
both("metricAndTagk", "sys.cpu.system", [("host", None)], [2])
both("metricAndTagkStar", "sys.cpu.system", [("host", "*")], [2])
both("metricAndTagv", "filtered", [(None, "web02")], [4])
both("metricAndTagvStar", "filtered", [("*", "web02")], [4])
both("metricAndTagPair", "filtered", [("host", "web01")], [3])
both("tagPairOnly", None, [("host", "web01")], [0, 2, 3])
both("limitVerification: limit 1, the first series", None, [("host", "web01")], [0], limit=1)
def nsun(name, body, kind, what):
    st, b = req("/api/search/lookup", "POST", json.dumps(body))
    try:
        e = json.loads(b)["error"]
        why = "" if (st, e["message"], e.get("details")) == (404, "Unable to resolve one or more UIDs",
                                                             "No such name for '%s': '%s'" % (kind, what)) else "answer"
    except (ValueError, KeyError, TypeError) as x:
        why = "bad answer (%s)" % x
    report(LABEL + name, why, b)
nsun("noSuchMetricMeta: 404", {"metric": "sys.cpu.nice"}, "metrics", "sys.cpu.nice")
nsun("noSuchTagkMeta: 404", {"tags": [{"key": "dc", "value": None}]}, "tagk", "dc")
nsun("noSuchTagvMeta: 404", {"tags": [{"key": None, "value": "web03"}]}, "tagv", "web03")
finish()
PY
}
audit_stores audit_run TestTimeSeriesLookupSalted "TestTimeSeriesLookupSalted, appends"
tsd_logs_check
it_done
