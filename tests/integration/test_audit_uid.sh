#!/usr/bin/env bash
# test_audit_uid.sh - /api/uid/* as OpenTSDB 2.4's UniqueIdRpc answers it: TestUniqueIdRpc's
# rename, uidmeta, tsmeta and assign-error cases carried over as HTTP requests to the real TSD
# (each check names the Java test). The fixture (metrics sys.cpu.0-2, tag keys host and
# datacenter, tag values web01 localhost web02 dc01, a UIDMeta on metric 000001, TSMetas on
# sys.cpu.0{host=web01} and sys.cpu.2{host=web01,datacenter=dc01}) is built once through the
# API; each case runs on a fresh copy of that store, as each Java test starts from its fixture.
# (The assign cases with mocked ids are covered by test_query_uid.sh / test_query_meta.sh.)
source "$(dirname "$0")/lib.sh"

DRIVER=$(it_tmpdir)/uid_audit.py
cat >"$DRIVER" <<'PY'
# TestUniqueIdRpc's rename, uidmeta and tsmeta cases (see test_audit_uid.sh); each case runs on a
# fresh copy of the fixture store. A case: (name, method, path, body, status, needles).
import sys
T1 = "000001000001000001"
CASES = [
 ("renamePostMetric", "POST", "/api/uid/rename", '{"metric":"sys.cpu.1","name":"sys.cpu.5"}', 200, ['{"result":"true"}']),
 ("renamePostTagk", "POST", "/api/uid/rename", '{"tagk":"datacenter","name":"datacluster"}', 200, ['{"result":"true"}']),
 ("renamePostTagv", "POST", "/api/uid/rename", '{"tagv":"localhost","name":"127.0.0.1"}', 200, ['{"result":"true"}']),
 ("renamePostNoName", "POST", "/api/uid/rename", '{"tagk":"localhost","not_name":"127.0.0.1"}', 400, []),
 ("renamePostNoType", "POST", "/api/uid/rename", '{"name":"127.0.0.1"}', 400, []),
 ("renamePostNotJSON", "POST", "/api/uid/rename", 'Not JSON', 400, []),
 ("renamePostZeroLengthContent", "POST", "/api/uid/rename", '', 400, []),
 ("renamePostEmptyJSON", "POST", "/api/uid/rename", '{}', 400, []),
 ("renameQsMetric", "GET", "/api/uid/rename?metric=sys.cpu.1&name=sys.cpu.5", None, 200, ['{"result":"true"}']),
 ("renameQsTagk", "GET", "/api/uid/rename?tagk=datacenter&name=datacluster", None, 200, ['{"result":"true"}']),
 ("renameQsTagv", "GET", "/api/uid/rename?tagv=localhost&name=127.0.0.1", None, 200, ['{"result":"true"}']),
 ("renameQsSkipUnsupportedParam", "GET", "/api/uid/rename?tagv=localhost&name=127.0.0.1&drop=db", None, 200, ['{"result":"true"}']),
 ("renameQsMissingType", "GET", "/api/uid/rename?name=127.0.0.1", None, 400, []),
 ("renameQsMissingName", "GET", "/api/uid/rename?metric=sys.cpu.1", None, 400, []),
 ("renameQsNoParamValue", "GET", "/api/uid/rename?metric=&name=sys.cpu.2", None, 400, []),
 ("renameQsNoParam", "GET", "/api/uid/rename?", None, 400, []),
 ("renameRenameException (to its own name)", "GET", "/api/uid/rename?tagv=localhost&name=localhost", None, 400, ['"result":"false"', '"error":"']),
 ("renameBadMethod", "PUT", "/api/uid/rename", '', 405, []),
 ("uidGet", "GET", "/api/uid/uidmeta?type=metric&uid=000001", None, 200, ['"displayName":"System CPU"', '"name":"sys.cpu.0"']),
 ("uidGetNoUID", "GET", "/api/uid/uidmeta?type=metric", None, 400, []),
 ("uidGetNoType", "GET", "/api/uid/uidmeta?uid=000001", None, 400, []),
 ("uidGetNSU", "GET", "/api/uid/uidmeta?type=metric&uid=000009", None, 404, ['Could not find the requested UID']),
 ("uidPost", "POST", "/api/uid/uidmeta", '{"uid":"000001","type":"metric","displayName":"Hello!"}', 200, ['"displayName":"Hello!"']),
 ("uidPostNotModified", "POST", "/api/uid/uidmeta", '{"uid":"000001","type":"metric"}', 304, []),
 ("uidPostMissingUID", "POST", "/api/uid/uidmeta", '{"type":"metric","displayName":"Hello!"}', 400, []),
 ("uidPostMissingType", "POST", "/api/uid/uidmeta", '{"uid":"000001","displayName":"Hello!"}', 400, []),
 ("uidPostNSU", "POST", "/api/uid/uidmeta", '{"uid":"000009","type":"metric","displayName":"Hello!"}', 404, []),
 ("uidPostQS", "GET", "/api/uid/uidmeta?uid=000001&type=metric&display_name=Hello&method_override=post", None, 200, ['"displayName":"Hello"']),
 ("uidPut", "PUT", "/api/uid/uidmeta", '{"uid":"000001","type":"metric","displayName":"Hello!"}', 200, ['"displayName":"Hello!"']),
 ("uidPutNotModified", "PUT", "/api/uid/uidmeta", '{"uid":"000001","type":"metric"}', 304, []),
 ("uidPutMissingUID", "PUT", "/api/uid/uidmeta", '{"type":"metric","displayName":"Hello!"}', 400, []),
 ("uidPutMissingType", "PUT", "/api/uid/uidmeta", '{"uid":"000001","displayName":"Hello!"}', 400, []),
 ("uidPutNSU", "PUT", "/api/uid/uidmeta", '{"uid":"000009","type":"metric","displayName":"Hello!"}', 404, []),
 ("uidPutQS", "GET", "/api/uid/uidmeta?uid=000001&type=metric&display_name=Hello&method_override=put", None, 200, ['"displayName":"Hello"']),
 ("uidDelete", "DELETE", "/api/uid/uidmeta", '{"uid":"000001","type":"metric","displayName":"Hello!"}', 204, []),
 ("uidDeleteMissingUID", "DELETE", "/api/uid/uidmeta", '{"type":"metric","displayName":"Hello!"}', 400, []),
 ("uidDeleteMissingType", "DELETE", "/api/uid/uidmeta", '{"uid":"000001","displayName":"Hello!"}', 400, []),
 ("uidDeleteQS", "GET", "/api/uid/uidmeta?uid=000001&type=metric&method_override=delete", None, 204, []),
 ("tsuidGet", "GET", "/api/uid/tsmeta?tsuid=" + T1, None, 200, ['"tsuid":"%s"' % T1, '"displayName":"Display"']),
 ("tsuidGetByM", "GET", "/api/uid/tsmeta?m=sys.cpu.0{host=web01}", None, 200, ['"tsuid":"%s"' % T1]),
 ("tsuidPostByM", "POST", "/api/uid/tsmeta?m=sys.cpu.0{host=web02}&create=true", '{"displayName":"Hello World"}', 200, ['"displayName":"Hello World"']),
 ("tsuidPostByMNoCreate", "POST", "/api/uid/tsmeta?m=sys.cpu.0{host=web02}", '{"displayName":"Hello World"}', 400, []),
 ("tsuidGetByMMultiTagWrongOrder", "GET", "/api/uid/tsmeta?m=sys.cpu.2{datacenter=dc01,host=web01}", None, 200, ['"displayName":"Two tags"']),
 ("tsuidGetByMMultiTag", "GET", "/api/uid/tsmeta?m=sys.cpu.2{host=web01,datacenter=dc01}", None, 200, ['"displayName":"Two tags"']),
 ("tsuidGetByMEmpty", "GET", "/api/uid/tsmeta?m=", None, 400, []),
 ("tsuidGetByMBadSyntax", "GET", "/api/uid/tsmeta?m=sys.cpu.0{datacenter=dc", None, 400, []),
 ("tsuidGetNotFound", "GET", "/api/uid/tsmeta?tsuid=000001000001000003", None, 404, ['Could not find Timeseries meta data']),
 ("tsuidGetMissingTSUID", "GET", "/api/uid/tsmeta", None, 400, []),
 ("tsuidPost", "POST", "/api/uid/tsmeta", '{"tsuid":"%s", "displayName":"Hello World"}' % T1, 200, ['"displayName":"Hello World"']),
 ("tsuidPostNoTSUID", "POST", "/api/uid/tsmeta", '{"displayName":"Hello World"}', 400, []),
 ("tsuidPostNotModified", "POST", "/api/uid/tsmeta", '{"tsuid":"%s"}' % T1, 304, []),
 ("tsuidPostQS", "GET", "/api/uid/tsmeta?tsuid=%s&display_name=42&method_override=post" % T1, None, 200, ['"displayName":"42"']),
 ("tsuidPostQSNoTSUID", "GET", "/api/uid/tsmeta?display_name=42&method_override=post", None, 400, []),
 ("tsuidPut", "PUT", "/api/uid/tsmeta", '{"tsuid":"%s", "displayName":"Hello World"}' % T1, 200, ['"displayName":"Hello World"']),
 ("tsuidPutNoTSUID", "PUT", "/api/uid/tsmeta", '{"displayName":"Hello World"}', 400, []),
 ("tsuidPutNotModified", "PUT", "/api/uid/tsmeta", '{"tsuid":"%s"}' % T1, 304, []),
 ("tsuidPutQS", "GET", "/api/uid/tsmeta?tsuid=%s&display_name=42&method_override=put" % T1, None, 200, ['"displayName":"42"']),
 ("tsuidPutQSNoTSUID", "GET", "/api/uid/tsmeta?display_name=42&method_override=put", None, 400, []),
 ("tsuidDelete", "DELETE", "/api/uid/tsmeta", '{"tsuid":"%s", "displayName":"Hello World"}' % T1, 204, []),
 ("tsuidDeleteQS", "GET", "/api/uid/tsmeta?tsuid=%s&method_override=delete" % T1, None, 204, []),
 ("assignQsEmpty", "GET", "/api/uid/assign", None, 400, []),
 ("assignQsNoParamValue", "GET", "/api/uid/assign?tagv=", None, 400, []),
 ("assignQsTypo", "GET", "/api/uid/assign/metrics=hello", None, 400, []),
 ("assignPostNotJSON", "POST", "/api/uid/assign", "Hello", 400, []),
 ("assignPostNoContent", "POST", "/api/uid/assign", "", 400, []),
 ("assignPostEmptyJSON", "POST", "/api/uid/assign", "{}", 400, []),
 ("notImplemented: /api/uid", "GET", "/api/uid", None, 501, ["Other UID endpoints have not been implemented yet"]),
 ("assign in any case (/api/uid/ASSIGN)", "GET", "/api/uid/ASSIGN?metric=sys.cpu.7", None, 200, ['"sys.cpu.7":"']),
]
if sys.argv[1] == "count":
    print(len(CASES)); sys.exit(0)
from audit_lib import connect, req, report, finish
connect(sys.argv[2])
name, method, path, body, st, needles = CASES[int(sys.argv[3])]
got_st, got = req(path, method, body)
why = "" if got_st == st else "status %d, expected %d" % (got_st, st)
for n in needles:
    if n not in got: why += " [%s] missing" % n
report(name, why.strip(), got)
finish()
PY

SEED=$(it_tmpdir)/seed
TSD_DATA=$SEED tsd_start
unset TSD_DATA
B="http://127.0.0.1:$TSD_PORT"
curl -s -m 20 "$B/api/uid/assign?metric=sys.cpu.0,sys.cpu.1,sys.cpu.2&tagk=host,datacenter&tagv=web01,localhost,web02,dc01" >/dev/null
{
  echo "put sys.cpu.0 1366671600 1 host=web01"
  echo "put sys.cpu.2 1366671600 1 host=web01 datacenter=dc01"
  echo version
} | tsd_talk >/dev/null
check_contains "fixture UIDMeta" \
  "$(curl -s -m 20 -X POST -d '{"uid":"000001","type":"metric","displayName":"System CPU","description":"Description","notes":"MyNotes"}' "$B/api/uid/uidmeta")" \
  '"displayName":"System CPU"'
check_contains "fixture TSMeta" \
  "$(curl -gs -m 20 -X POST -d '{"displayName":"Display","description":"Description"}' "$B/api/uid/tsmeta?m=sys.cpu.0{host=web01}&create=true")" \
  '"displayName":"Display"'
check_contains "fixture TSMeta with two tags" \
  "$(curl -gs -m 20 -X POST -d '{"displayName":"Two tags"}' "$B/api/uid/tsmeta?m=sys.cpu.2{host=web01,datacenter=dc01}&create=true")" \
  '"displayName":"Two tags"'
tsd_stop
export PYTHONPATH="$IT_ROOT/tests/integration"
n=$(python3 "$DRIVER" count)
for i in $(seq 0 $((n - 1))); do
  d=$(it_tmpdir)/case
  cp -a "$SEED" "$d"
  TSD_DATA=$d tsd_start
  unset TSD_DATA
  out=$(python3 "$DRIVER" run "$TSD_PORT" "$i")
  echo "$out"
  case "$out" in "not ok"*) IT_FAILS=$((IT_FAILS + 1)) ;; esac
  tsd_stop
  rm -rf "$d"
done
tsd_logs_check
it_done
