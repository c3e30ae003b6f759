#!/usr/bin/env bash
# test_audit_http.sh - the HTTP front door as OpenTSDB 2.4's RpcHandler and HttpQuery answer it:
# the cases of TestRpcHandler (CORS: ignored, public, specific and refused origins, simple and
# OPTIONS requests; the refused configurations; an empty path) and TestHttpQuery (routes and API
# versions, path case, method_override, serializer selection, request content, error and
# not-found shapes, JSON escaping in errors, the static files' content types) carried over as
# requests to the real TSD; each check names the Java test. OpenTSDB's tests call HttpQuery's
# methods on a mocked channel; over HTTP the same facts show as the status, headers and body a
# client gets. TestTreeRpc and TestGraphHandler: ctsdb has no trees and no gnuplot graphs; the
# answers a client gets for their paths are checked here as docs/opentsdb-compat.md states them
# ("Deliberate differences").
source "$(dirname "$0")/lib.sh"

WEB=$(it_tmpdir)
printf '<html>page</html>' >"$WEB/index.html"
for f in x.png x.html x.css x.js x.gif x.ico x.unknownext; do printf 'content' >"$WEB/$f"; done

# TestRpcHandler's constructors: a configuration OpenTSDB refuses stops the TSD at start
refused() { # refused WHAT ARGS...: a TSD so configured stops at start, naming the key
  local what=$1 d out rc
  shift
  d=$(it_tmpdir)
  out=$(timeout 20 "$CTSDB" tsd --bind 127.0.0.1 --port 0 --data "$d/data" "$@" 2>&1)
  rc=$?
  case "$rc:$out" in
    1:*tsd.http.request.cors_*) ok "$what: the TSD refuses to start" ;;
    *) not_ok "$what: the TSD refuses to start: exit $rc, ${out:0:300}" ;;
  esac
}
refused "ctorCORSPublicAndDomains" "--tsd.http.request.cors_domains=*,aurther.com,dent.net,beeblebrox.org"
refused "cors_headers not a list of header names" "--tsd.http.request.cors_domains=42.com" \
  "--tsd.http.request.cors_headers=Bad header!"

# one TSD per CORS configuration (TestRpcHandler), the last one also serves the static files
CORS=("" "*" "42.com,aurther.com,dent.net,beeblebrox.org" "aurther.com,dent.net,beeblebrox.org")
NAMES=("not configured" "public" "specific" "not allowed")
for k in 0 1 2 3; do
  unset TSD_DATA
  tsd_start "--tsd.http.request.cors_domains=${CORS[k]}" "--tsd.http.staticroot=$WEB"
  PYTHONPATH="$IT_ROOT/tests/integration" python3 - "$TSD_PORT" "${NAMES[k]}" <<'PY'
import json, sys
from audit_lib import connect, reqh, report, finish
connect(sys.argv[1])
CFG = sys.argv[2]
ACAO = "access-control-allow-origin"
O = {"Origin": "42.com"}
def cors(name, method, headers, status, allow, body_has=None):
    st, hd, b = reqh("/api/v1/version", method, headers=headers)
    why = "" if st == status else "status %d, want %d" % (st, status)
    if hd.get(ACAO) != allow:
        why += " Access-Control-Allow-Origin %r, want %r" % (hd.get(ACAO), allow)
    if body_has is not None and body_has not in b:
        why += " [%s] missing" % body_has
    report("%s (CORS %s)" % (name, CFG), why.strip(), b)
if CFG == "not configured":
    cors("httpCORSIgnored", "GET", O, 200, None, '"version"')
    cors("httpOptionsNoCORS", "OPTIONS", {}, 405, None,
         '{"error":{"code":405,"message":"Method not allowed","details":"The HTTP method [OPTIONS] is not permitted"}}')
    cors("httpOptionsCORSNotConfigured", "OPTIONS", O, 405, None, "Method not allowed")
elif CFG in ("public", "specific"):
    cors("httpCORS%sSimple" % CFG.capitalize(), "GET", O, 200, "42.com", '"version"')
    cors("httpOptionsCORS%s" % CFG.capitalize(), "OPTIONS", O, 200, "42.com")
    st, hd, b = reqh("/api/version", "OPTIONS", headers=O)
    report("httpOptionsCORS%s: the preflight's methods and headers, no body (CORS %s)" % (CFG.capitalize(), CFG),
           "" if (hd.get("access-control-allow-methods"), b) == ("GET, POST, PUT, DELETE", "")
           and "X-Requested-With" in hd.get("access-control-allow-headers", "") else "headers %r" % hd, b)
    st, hd, b = reqh("/api/version", headers={"Origin": "42.COM"})
    report("origins compare case-insensitively, echoed as sent (CORS %s)" % CFG,
           "" if st == 200 and hd.get(ACAO) == "42.COM" else "status %d, %r" % (st, hd.get(ACAO)), b)
    cors("a request without Origin is served, no CORS header", "GET", {}, 200, None, '"version"')
else:
    cors("httpCORSNotAllowedSimple", "GET", O, 200, None,
         '{"error":{"code":200,"message":"CORS domain not allowed","details":"The domain [42.com] is not permitted access"}}')
    cors("httpOptionsCORSNotAllowed", "OPTIONS", O, 200, None, "CORS domain not allowed")
    # the rest of TestHttpQuery runs on this TSD (CORS on, requests without Origin)
    def check(name, path, status, want=None, method="GET", body=None, headers=None, ctype=None, has=None):
        st, hd, b = reqh(path, method, body, headers)
        why = "" if st == status else "status %d, want %d" % (st, status)
        if want is not None:
            try:
                got = json.loads(b) if isinstance(want, (dict, list)) else b
            except ValueError:
                got = b
            if got != want:
                why += " body %r, want %r" % (b[:200], want)
        if has is not None and has not in b:
            why += " [%s] missing" % has
        if ctype is not None and hd.get("content-type") != ctype:
            why += " Content-Type %r, want %r" % (hd.get("content-type"), ctype)
        report(name, why.strip(), b)
    J = "application/json; charset=UTF-8"
    NF = {"error": {"code": 404, "message": "Endpoint not found"}}
    def version(b): return '"version":"' in b
    # routes (getQueryBaseRoute*, explodeAPIPath*)
    check("getQueryBaseRouteAPIQS: /api/v1/version?x", "/api/v1/version?metric=mine", 200, ctype=J, has='"version":')
    check("getQueryBaseRouteAPIDefaultV: /api/version", "/api/version", 200, has='"version":')
    check("getQueryBaseRouteAPICap: /API/V1/VERSION", "/API/V1/VERSION", 200, has='"version":')
    check("getQueryBaseRouteVersion: /api/version/query routes to api/version", "/api/version/query", 200,
          has='"version":')
    check("a sub path takes its longest routed parent: /api/v1/aggregators/x", "/api/v1/aggregators/x", 200,
          has='"sum"')
    check("explodeAPIPathCase: /Api/Uri is api/uri, no such endpoint", "/Api/Uri", 404, NF, ctype=J)
    check("getQueryBaseRouteAPINoEP: /api", "/api", 404, NF)
    check("getQueryBaseRouteAPINoEPSlash: /api/", "/api/", 404, NF)
    check("explodeAPIPathRootVersion: /api/v1", "/api/v1", 404, NF)
    check("notFoundDefaultSerializer: /api/error", "/api/error", 404, NF)
    check("getQueryBaseRouteAPIVNotImplemented: /api/v3/put", "/api/v3/put", 501,
          {"error": {"code": 501, "message": "Requested API version is greater than the max implemented",
                     "details": "API version [3] is greater than the max [1]"}})
    check("getQueryBaseRouteVBadNumber: /api/v1a/put", "/api/v1a/put", 400,
          {"error": {"code": 400, "message": "Invalid API version format supplied",
                     "details": "API version [1a] cannot be parsed to an integer"}})
    check("explodeAPIPathExtended: /api/v1/uid/assign", "/api/v1/uid/assign?metric=a.b", 200,
          has='"metric":{"a.b":"')
    check("getQueryBaseRouteRoot: / is the home page", "/", 200, "<html>page</html>")
    check("getQueryBaseRouteRootQS: /?param=value", "/?param=value", 200, "<html>page</html>")
    check("notFoundDeprecated: a page outside /api, HTML", "/nothere", 404, ctype="text/html; charset=UTF-8",
          has="<!DOCTYPE html>")
    check("notFoundDeprecatedJSON: ?json", "/nothere?json", 404, {"err": "Page Not Found"})
    # methods (getAPIMethod*)
    # a global annotation: missing (GET), created (POST), changed (PUT), deleted (DELETE), then
    # missing again (DELETE in capitals)
    A = "/api/annotation?start_time=1356998400&description=x&method_override="
    for m, st_want, name in (("get", 404, "Get"), ("post", 200, "Post"), ("put", 200, "Put"),
                             ("delete", 204, "Delete"), ("DELETE", 404, "DeleteCase")):
        st, hd, b = reqh(A + m)
        report("getAPIMethodOverride%s: method_override=%s acts as %s" % (name, m, m.upper()),
               "" if st == st_want else "status %d, want %d" % (st, st_want), b)
    check("getAPIMethodOverride: a GET acting as POST reaches the POST-only /api/put", "/api/put?method_override=post",
          400, has="Missing request content")
    check("getAPIMethodOverrideMissingValue", "/api/version?method_override", 405,
          {"error": {"code": 405, "message": "Missing method override value"}})
    check("getAPIMethodOverrideMissingValue (empty)", "/api/version?method_override=", 405,
          {"error": {"code": 405, "message": "Missing method override value"}})
    check("getAPIMethodOverrideInvalidMEthod", "/api/version?method_override=notaverb", 405,
          {"error": {"code": 405, "message": "Unknown or unsupported method override value"}})
    check("getAPIMethodPost: a POST ignores method_override", "/api/version?method_override=notaverb", 200,
          method="POST", has='"version":')
    check("getAPIMethodPut: PUT on a GET/POST endpoint", "/api/version", 405, method="PUT",
          want={"error": {"code": 405, "message": "Method not allowed",
                          "details": "The HTTP method [PUT] is not permitted for this endpoint"}})
    # serializers (setSerializer*)
    check("setFormatterQS: serializer=json", "/api/version?serializer=json", 200, has='"version":')
    check("setSerializerDummyQS: no such serializer", "/api/version?serializer=dummy", 400,
          {"error": {"code": 400, "message": "Requested serializer was not found",
                     "details": "Could not find a serializer with the name: dummy"}})
    check("setSerializerCT: Content-Type application/json", "/api/aggregators", 200, method="POST", body="",
          headers={"Content-Type": "application/json; charset=UTF-8"}, ctype=J)
    check("setSerializerDefaultCT: an unknown Content-Type falls back to JSON", "/api/aggregators", 200,
          method="POST", body="", headers={"Content-Type": "text/plain"}, ctype=J)
    # content (hasContent*, getContent*)
    P = '{"metric":"hq.m","timestamp":1356998400,"value":1,"tags":{"host":"a"}}'
    check("hasContentFalse: a POST without a body", "/api/put", 400, method="POST",
          want={"error": {"code": 400, "message": "Missing request content"}})
    check("getContentDefault: a UTF-8 body (no charset)", "/api/put?details", 200, method="POST",
          body=P.replace('"a"', '"Se\u00f1or"'), want={"errors": [], "failed": 0, "success": 1})
    check("getContentDefault: the UTF-8 tag value reads back", "/api/search/lookup?m=hq.m", 200,
          has='"tags":{"host":"Se\u00f1or"}')
    # getContentEncoding: deliberate difference, bodies are read as UTF-8 whatever charset says
    check("getContentEncoding (deliberate: a UTF-16 body is not decoded)", "/api/put", 400, method="POST",
          body=P.encode("utf-16"), headers={"Content-Type": "application/json; charset=UTF-16"},
          has="Unable to parse the given JSON")
    check("getCharsetInvalid (deliberate: the charset is not read)", "/api/put?details", 200, method="POST",
          body=P, headers={"Content-Type": "application/json; charset=foobar"},
          want={"errors": [], "failed": 0, "success": 1})
    # escapeJson: an error carrying quotes, a backslash and control characters is valid JSON
    st, hd, b = reqh("/api/query?start=1h-ago&m=sum:a%22b%5Cc%09d%01e")
    try:
        msg = json.loads(b)["error"]["message"]
        why = "" if st == 400 and msg == "No such name for 'metrics': 'a\"b\\c\td\x01e'" else "message %r" % msg
    except (ValueError, KeyError) as x:
        why = "not JSON (%s)" % x
    report("escapeJson: quotes, backslash and control characters escaped in an error", why, b)
    # static files (guessMimeTypeFromUri*); ctsdb serves them at the root, not under /s/
    for f, t in (("x.png", "image/png"), ("x.html", "text/html; charset=UTF-8"), ("x.css", "text/css; charset=UTF-8"),
                 ("x.gif", "image/gif"), ("x.ico", "image/x-icon")):
        check("guessMimeTypeFromUri%s" % f[2:].upper(), "/" + f, 200, "content", ctype=t)
    check("guessMimeTypeFromUriJS (deliberate: RFC 9239's type)", "/x.js", 200, "content",
          ctype="application/javascript; charset=UTF-8")
    check("guessMimeTypeFromUriOther (deliberate: no sniffing, octet-stream)", "/x.unknownext", 200, "content",
          ctype="application/octet-stream")
    # TestGraphHandler, TestTreeRpc, LogsRpc: not in ctsdb (docs/opentsdb-compat.md)
    check("TestGraphHandler: /q is not served (HTML 404)", "/q?start=1h-ago&m=sum:hq.m", 404,
          ctype="text/html; charset=UTF-8", has="Page Not Found")
    check("TestGraphHandler: /q?json answers the JSON 404", "/q?start=1h-ago&m=sum:hq.m&json", 404, {"err": "Page Not Found"})
    check("/logs is not served", "/logs", 404, has="Page Not Found")
    for p in ("/api/tree", "/api/tree/branch?branch=0001", "/api/tree/rule", "/api/tree/rules", "/api/tree/test",
              "/api/tree/collisions", "/api/tree/notmatched"):
        for m in ("GET", "POST", "DELETE"):
            check("TestTreeRpc: %s %s is an unknown endpoint" % (m, p), p, 404, NF, method=m)
finish()
PY
  [ $? -eq 0 ] || IT_FAILS=$((IT_FAILS + 1))
  # TestRpcHandler.emptyPathIsBadRequest: a request line without a path
  out=$(printf 'GET  HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' | tsd_talk)
  case "$out" in
    "HTTP/1.1 400 "*'"message":"Invalid request target"'*) ok "emptyPathIsBadRequest (CORS ${NAMES[k]})" ;;
    *) not_ok "emptyPathIsBadRequest (CORS ${NAMES[k]}): ${out:0:300}" ;;
  esac
  tsd_stop
done
tsd_logs_check
it_done
