#!/usr/bin/env bash
# test_audit_annotation.sh - /api/annotation(s) and /api/annotation/bulk as OpenTSDB 2.4's
# AnnotationRpc answers them: TestAnnotationRpc's cases carried over as HTTP requests to the real
# TSD. Its fixture (two global annotations, two on series 000001000001000001, points of two
# series) is built once through the API; each case runs on a fresh copy of that store, as each
# Java test starts from the fixture. Checked: statuses, the Annotation JSON of the answers (every
# non-null field), 304 for a request without changes, 404s, bulk POST (merge) / PUT (replace),
# bulk deletes from the query string and from a DELETE body, and the 400s.
source "$(dirname "$0")/lib.sh"

DRIVER=$(it_tmpdir)/ann_audit.py
cat >"$DRIVER" <<'PY'
# Each case runs on a fresh copy of the fixture store (see test_audit_annotation.sh): the cases of
# TestAnnotationRpc, in its order. A case: (name, method, path, body, status, needles, after)
# where needles are substrings the answer must hold ("!x": must not), and after (optional) a
# (path, needles) check made with GET afterwards.
import json, sys
T1, T2 = "000001000001000001", "000001000001000002"
CASES = [
 ("get", "GET", "/api/annotation?tsuid=%s&start_time=1388450562" % T1, None, 200, ['"description":"Hello!"']),
 ("getGlobal", "GET", "/api/annotation?start_time=1328140800", None, 200, ['"description":"Description"']),
 ("getGlobals", "GET", "/api/annotations?start_time=1328140800", None, 200, ['"description":"Description"']),
 ("getNotFound", "GET", "/api/annotation?tsuid=%s&start_time=1388450568" % T1, None, 404, ['Unable to locate annotation in storage']),
 ("getGlobalNotFound", "GET", "/api/annotation?start_time=1388450563", None, 404, ['Unable to locate annotation in storage']),
 ("getMissingStart", "GET", "/api/annotation?tsuid=%s" % T1, None, 400, ['Missing start time']),
 ("postNew", "GET", "/api/annotation?tsuid=%s&start_time=1388450564&description=Boo&method_override=post" % T1, None, 200,
   ['"description":"Boo"', '"notes":""'], ("/api/annotation?tsuid=%s&start_time=1388450564" % T1, ['"description":"Boo"'])),
 ("postNewGlobal", "GET", "/api/annotation?start_time=1328140802&description=Boo&method_override=post", None, 200,
   ['"description":"Boo"', '"notes":""'], ("/api/annotation?start_time=1328140802", ['"description":"Boo"'])),
 ("postNewMissingStart", "GET", "/api/annotation?tsuid=%s&description=Boo&method_override=post" % T1, None, 400, []),
 ("modify", "GET", "/api/annotation?tsuid=%s&start_time=1388450562&description=Boo&method_override=post" % T1, None, 200,
   ['"description":"Boo"', '"notes":"My Notes"']),
 ("modifyGlobal", "GET", "/api/annotation?start_time=1328140800&description=Boo&method_override=post", None, 200,
   ['"description":"Boo"', '"notes":"Notes"']),
 ("modifyPOST", "POST", "/api/annotation", '{"tsuid":"%s","startTime":1388450562,"description":"Boo"}' % T1, 200,
   ['"description":"Boo"', '"notes":"My Notes"']),
 ("modifyGlobalPOST", "POST", "/api/annotation", '{"startTime":1328140800,"description":"Boo"}', 200,
   ['"description":"Boo"', '"notes":"Notes"']),
 ("modifyPut", "GET", "/api/annotation?tsuid=%s&start_time=1388450562&description=Boo&method_override=put" % T1, None, 200,
   ['"description":"Boo"', '"notes":""', '"startTime":1388450562']),
 ("modifyPutGlobal", "GET", "/api/annotation?start_time=1328140800&description=Boo&method_override=put", None, 200,
   ['"description":"Boo"', '"notes":""', '"startTime":1328140800']),
 ("modifyNoChange", "GET", "/api/annotation?tsuid=%s&start_time=1388450562&method_override=post" % T1, None, 304, []),
 ("delete", "GET", "/api/annotation?tsuid=%s&start_time=1388450562&method_override=delete" % T1, None, 204, [],
   ("/api/annotation?tsuid=%s&start_time=1388450562" % T1, ['Unable to locate annotation in storage'])),
 ("deleteGlobal", "GET", "/api/annotation?start_time=1328140800&method_override=delete", None, 204, [],
   ("/api/annotation?start_time=1328140800", ['Unable to locate annotation in storage'])),
 ("bulkBadMethodGet", "GET", "/api/annotation/bulk", None, 405, ['Method not allowed']),
 ("bulkMissingContent", "POST", "/api/annotation/bulk", "", 400, []),
 ("bulkMissingInvalidContent", "POST", "/api/annotation/bulk", "Not a json object", 400, []),
 ("bulkMissingInvalidSingleObject", "POST", "/api/annotation/bulk", '{"tsuid":"%s","startTime":1388450562,"description":"Boo"}' % T1, 400, []),
 ("bulkModifyPOST", "POST", "/api/annotation/bulk",
   '[{"tsuid":"%s","startTime":1388450562,"description":"Boo"},{"tsuid":"%s","startTime":1388450562,"description":"Gum"}]' % (T1, T2), 200,
   ['"description":"Boo"', '"notes":"My Notes"', '"description":"Gum"']),
 ("bulkModifyGlobalPOST", "POST", "/api/annotation/bulk",
   '[{"startTime":1328140800,"description":"Boo"},{"startTime":1388450562,"description":"Gum"}]', 200,
   ['"description":"Boo"', '"notes":"Notes"', '"description":"Gum"']),
 ("bulkModifyPOSTMissingStart", "POST", "/api/annotation/bulk",
   '[{"tsuid":"%s","startTime":1388450562,"description":"Boo"},{"tsuid":"%s","description":"Gum"}]' % (T1, T2), 400, []),
 ("bulkModifyPut", "PUT", "/api/annotation/bulk",
   '[{"tsuid":"%s","startTime":1328140800,"description":"Boo"},{"tsuid":"%s","startTime":1328140800,"description":"Gum"}]' % (T1, T2), 200,
   ['"description":"Boo"', '"notes":""', '"description":"Gum"']),
 ("bulkModifyPutGlobal", "PUT", "/api/annotation/bulk",
   '[{"startTime":1328140800,"description":"Boo"},{"startTime":1328140800,"description":"Gum"}]', 200,
   ['"description":"Boo"', '"notes":""', '"startTime":1328140800', '"description":"Gum"']),
 ("bulkDelete", "GET", "/api/annotation/bulk?tsuids=%s,%s&start_time=1388450560000&end_time=1388450562000&method_override=delete" % (T1, T2), None, 200,
   ['"totalDeleted":1'], ("/api/annotation?tsuid=%s&start_time=1388450563" % T1, ['"description":"Note2"'])),
 ("bulkDeleteNotFound", "GET", "/api/annotation/bulk?tsuids=%s,%s&start_time=1388450550000&end_time=1388450560000&method_override=delete" % (T1, T2), None, 200,
   ['"totalDeleted":0']),
 ("bulkDeleteAllTime", "GET", "/api/annotation/bulk?tsuids=%s,%s&start_time=1000000000000&method_override=delete" % (T1, T2), None, 200,
   ['"totalDeleted":2'], ("/api/annotation?start_time=1328140800", ['"description":"Description"'])),
 ("bulkDeleteGlobal", "GET", "/api/annotation/bulk?start_time=1328140799000&end_time=1328140800000&global=true&method_override=delete", None, 200,
   ['"totalDeleted":1'], ("/api/annotation?start_time=1328140801", ['"description":"Global 2"'])),
 ("bulkDeleteGlobalNotFound", "GET", "/api/annotation/bulk?start_time=1328140600000&end_time=1328140700000&global=true&method_override=delete", None, 200,
   ['"totalDeleted":0']),
 ("bulkDeleteGlobalAllTime", "GET", "/api/annotation/bulk?start_time=1000000000000&global=true&method_override=delete", None, 200,
   ['"totalDeleted":2'], ("/api/annotation?tsuid=%s&start_time=1388450562" % T1, ['"description":"Hello!"'])),
 ("bulkDeleteMissingStart", "GET", "/api/annotation/bulk?tsuids=%s,%s&end_time=1388450562000&method_override=delete" % (T1, T2), None, 400, []),
 ("bulkDeleteMissingTsuidsAndGlobal", "GET", "/api/annotation/bulk?&start_time=1388450562000&method_override=delete", None, 400, []),
 ("bulkDeleteEmptyTsuids", "GET", "/api/annotation/bulk?&start_time=1388450562000&tsuids=&method_override=delete", None, 400, []),
 ("bulkDeleteDELETE", "DELETE", "/api/annotation/bulk",
   '{"tsuids":["%s","%s"],"startTime":"1388450560000","endTime":"1388450562000"}' % (T1, T2), 200, ['"totalDeleted":1']),
 ("bulkDeleteGlobalDELETE", "DELETE", "/api/annotation/bulk", '{"startTime":"1328140799000","endTime":"1328140800000","global":true}', 200,
   ['"totalDeleted":1']),
 ("bulkDeleteMissingStartDELETE", "DELETE", "/api/annotation/bulk?", '{"tsuids":["%s","%s"],"endTime":"1388450562000"}' % (T1, T2), 400, []),
 ("bulkDeleteEmptyTsuidsDELETE", "DELETE", "/api/annotation/bulk", '{"startTime":"1328140799000","endTime":"1328140800000"}', 400, []),
 ("bulkDeleteNoBodyDELETE", "DELETE", "/api/annotation/bulk", None, 400, []),
 ("bulkDeleteBadJSONDELETE", "DELETE", "/api/annotation/bulk", "{thisisnotjson}", 400, []),
 ("badMethod (TRACE)", "TRACE", "/api/annotation", None, 405, []),
]
if sys.argv[1] == "count":
    print(len(CASES)); sys.exit(0)
if sys.argv[1] == "run":
    from audit_lib import connect, req, report, finish
    connect(sys.argv[2])
    c = CASES[int(sys.argv[3])]
    name, method, path, body, st, needles = c[:6]
    got_st, got = req(path, method, body)
    why = "" if got_st == st else "status %d, expected %d" % (got_st, st)
    for n in needles:
        if (n[1:] in got) if n.startswith("!") else (n not in got):
            why += " [%s] %s" % (n, "present" if n.startswith("!") else "missing")
    if not why and len(c) > 6:
        ast, ab = req(c[6][0])
        for n in c[6][1]:
            if n not in ab:
                why += " afterwards %s: [%s] missing in %s" % (c[6][0], n, ab[:200])
    report(name, why.strip(), got)
    finish()
PY

SEED=$(it_tmpdir)/seed
TSD_DATA=$SEED tsd_start
unset TSD_DATA
B="http://127.0.0.1:$TSD_PORT"
{
  echo "put sys.cpu.user $((1388448000 + 1281)) 1 host=web01"
  echo "put sys.cpu.user $((1388448000 + 1281)) 2 host=web02"
  echo version
} | tsd_talk >/dev/null
for a in \
  '{"startTime":1328140800,"endTime":1328140801,"description":"Description","notes":"Notes","custom":{"owner":"ops"}}' \
  '{"startTime":1328140801,"endTime":1328140803,"description":"Global 2","notes":"Nothing"}' \
  '{"tsuid":"000001000001000001","startTime":1388450562,"endTime":1419984000,"description":"Hello!","notes":"My Notes","custom":{"owner":"ops"}}' \
  '{"tsuid":"000001000001000001","startTime":1388450563,"endTime":1419984000,"description":"Note2","notes":"Nothing"}'; do
  check_contains "fixture annotation stored" "$(curl -s -m 20 -X PUT -d "$a" "$B/api/annotation")" '"startTime"'
done
tsd_stop
export PYTHONPATH="$IT_ROOT/tests/integration"
n=$(python3 "$DRIVER" count)
for i in $(seq 0 $((n - 1))); do
  d=$(it_tmpdir)/case
  cp -a "$SEED" "$d"
  unset TSD_DATA
  TSD_DATA=$d tsd_start
  out=$(python3 "$DRIVER" run "$TSD_PORT" "$i")
  echo "$out"
  case "$out" in "not ok"*) IT_FAILS=$((IT_FAILS + 1)) ;; esac
  tsd_stop
  rm -rf "$d"
done
tsd_logs_check
it_done
