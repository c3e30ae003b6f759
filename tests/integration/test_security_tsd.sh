#!/usr/bin/env bash
# test_security_tsd.sh - the TSD's security basics (tsd/auth.h, docs/security.md): everything
# open with the default configuration; the bind address and port honoured; a shared token
# required, refused and accepted over HTTP (Bearer and Basic) and telnet (`auth`); reads open
# whatever is set; an allow-list that excludes 127.0.0.1 (403 for writes, reads fine) and one
# that includes it; admin actions (dropcaches, diediedie) gated by tsd.core.enable_admin; query
# deletes refused by default; the token hidden from /api/config; bad settings stop the start;
# and the data directory created owner-only (also under umask 000). Loopback only (127.0.0.1
# and ::1).
source "$(dirname "$0")/lib.sh"

tmp=$(it_tmpdir)

# req METHOD PATH [curl args...]: prints "STATUS BODY"
req() {
  local m=$1 p=$2; shift 2
  curl -s -o "$tmp/body" -D "$tmp/headers" -w '%{http_code}' -X "$m" \
    "http://127.0.0.1:$TSD_PORT$p" "$@" >"$tmp/code"
  echo "$(cat "$tmp/code") $(cat "$tmp/body")"
}

# points METRIC: how many datapoints a query finds for the metric (reads are always open).
points() {
  curl -s "http://127.0.0.1:$TSD_PORT/api/query?start=1356998000&end=1357000000&m=sum:$1" |
    python3 -c 'import json,sys
d = json.load(sys.stdin)
print(sum(len(s["dps"]) for s in d) if isinstance(d, list) else "error: %s" % d)'
}

pt() { echo "{\"metric\":\"$1\",\"timestamp\":$2,\"value\":1,\"tags\":{\"host\":\"a\"}}"; }

# ---- default configuration: everything open but admin actions ------------------------------
tsd_start
check_eq "default: HTTP put needs nothing" "204 " "$(req POST /api/put -d "$(pt sec.open 1356998400)")"
out=$(printf 'put sec.open 1356998401 2 host=a\nversion\n' | tsd_talk)
check_contains "default: telnet put needs nothing" "$out" "built at revision"
check_eq "default: both points are stored" 2 "$(points sec.open)"
check_eq "default: uid assign is open" 200 "$(req GET '/api/uid/assign?metric=sec.assigned' | cut -c1-3)"
check_eq "default: dropcaches is disabled" \
  '403 {"error":{"code":403,"message":"Forbidden","details":"admin actions are disabled (tsd.core.enable_admin=false)"}}' \
  "$(req GET /api/dropcaches)"
check_eq "default: telnet dropcaches is disabled" \
  "dropcaches: forbidden: admin actions are disabled (tsd.core.enable_admin=false)" \
  "$(printf 'dropcaches\n' | tsd_talk)"
check_eq "default: help does not list auth" \
  "available commands: diediedie dropcaches exit help histogram put rollup stats status version " \
  "$(printf 'help\n' | tsd_talk)"
check_eq "default: auth is accepted (nothing to check)" "AUTH_SUCCESS." "$(printf 'auth x\n' | tsd_talk)"
check_eq "default: DELETE /api/query is refused" \
  '400 {"error":{"code":400,"message":"Bad request","details":"Deleting data is not enabled (tsd.http.query.allow_delete=false)"}}' \
  "$(req DELETE '/api/query?start=1356998000&m=sum:sec.open')"
check_contains "default: a query with delete:true is refused" \
  "$(req POST /api/query -d '{"start":1356998000,"delete":true,"queries":[{"aggregator":"sum","metric":"sec.open"}]}')" \
  '400 {"error":{"code":400,"message":"Bad request","details":"Deleting data is not enabled'
check_eq "default: nothing was deleted" 2 "$(points sec.open)"
cfg=$(req GET /api/config)
check_contains "default: config shows enable_admin" "$cfg" '"tsd.core.enable_admin":"false"'
check_contains "default: config shows an empty token" "$cfg" '"tsd.core.auth.token":""'
check_contains "security settings are logged" "$(cat "$TSD_LOG")" \
  "security: writes need a token: no; write allow-list: no (any address)"
# the bind address is honoured: the socket listens on 127.0.0.1 only
check_contains "bind: listening on 127.0.0.1 only" "$(ss -Hltn "sport = :$TSD_PORT")" "127.0.0.1:$TSD_PORT"
# the data directory: owner-only directories and files
tsd_stop
data0=$TSD_DATA
check_eq "data directory is 0700" 700 "$(stat -c %a "$TSD_DATA")"
check "the data directory has files" test -n "$(find "$TSD_DATA" -type f | head -1)"
check_eq "no directory under data is group/world accessible" "" \
  "$(find "$TSD_DATA" -type d -perm /077 | head -3)"
check_eq "no file under data is group/world accessible" "" \
  "$(find "$TSD_DATA" -type f -perm /077 | head -3)"

# ---- the port comes from the configuration (a config file key) -------------------------------
free=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
printf 'tsd.network.port = %s\n' "$free" >"$tmp/port.conf"
# lib.sh passes --port 0 first; a later --tsd.network.port wins, as documented
unset TSD_DATA
tsd_start --tsd.network.port="$free"
check_eq "port: tsd.network.port is honoured" "$free" "$TSD_PORT"
check_eq "port: it answers there" 200 "$(req GET /api/version | cut -c1-3)"
tsd_stop
# tsd.network.bind=::1 from a config file (started by hand: lib.sh waits for 127.0.0.1)
printf 'tsd.network.bind = ::1\ntsd.network.port = 0\n' >"$tmp/v6.conf"
# (the allow-list excludes ::1, so writes over IPv6 are refused: the IPv6 peer is parsed)
"$CTSDB" tsd --config "$tmp/v6.conf" --data "$tmp/v6data" --tsd.core.auth.allow=127.0.0.0/8 \
  2>"$tmp/v6.log" &
v6pid=$!
IT_PIDS+=("$v6pid")
v6port=""
for _ in $(seq 1 200); do
  v6port=$(sed -n 's/.*listening on \[::1\]:\([0-9][0-9]*\).*/\1/p' "$tmp/v6.log" | head -1)
  [ -n "$v6port" ] && break
  kill -0 "$v6pid" 2>/dev/null || break
  sleep 0.1
done
if [ -n "$v6port" ]; then
  check_eq "bind: tsd.network.bind=::1 answers on [::1]" 200 \
    "$(curl -s -g -o /dev/null -w '%{http_code}' "http://[::1]:$v6port/api/version")"
  check_contains "bind: listening on [::1] only" "$(ss -Hltn "sport = :$v6port")" "[::1]:$v6port"
  check_eq "allow over IPv6: ::1 outside the list is refused" \
    '403 {"error":{"code":403,"message":"Forbidden","details":"client address ::1 is not in tsd.core.auth.allow"}}' \
    "$(curl -s -g -w ' %{http_code}' -d "$(pt sec.v6 1356998400)" "http://[::1]:$v6port/api/put" |
      sed 's/^\(.*\) \([0-9]*\)$/\2 \1/')"
else
  not_ok "bind: the TSD listens on [::1] ($(tail -2 "$tmp/v6.log"))"
fi
kill -TERM "$v6pid" 2>/dev/null
wait "$v6pid" 2>/dev/null
check_eq "bind: the ::1 TSD stops cleanly" 0 "$?"

# ---- a shared token ---------------------------------------------------------------------------
unset TSD_DATA
tsd_start --tsd.core.auth.token=s3cret-T0ken --tsd.core.enable_admin=true
out=$(req POST /api/put -d "$(pt sec.tok 1356998400)")
check_eq "token: a put without it is 401" \
  '401 {"error":{"code":401,"message":"Unauthorized","details":"a token is required (tsd.core.auth.token is set): send it with '"'"'Authorization: Bearer <token>'"'"' (HTTP) or '"'"'auth <token>'"'"' (telnet)"}}' \
  "$out"
check_contains "token: 401 carries WWW-Authenticate" "$(cat "$tmp/headers")" 'WWW-Authenticate: Bearer realm="ctsdb"'
check_eq "token: a wrong token is 401" \
  '401 {"error":{"code":401,"message":"Unauthorized","details":"the token sent does not match tsd.core.auth.token"}}' \
  "$(req POST /api/put -d "$(pt sec.tok 1356998400)" -H 'Authorization: Bearer s3cret-T0keN')"
check_eq "token: a prefix of it is 401" 401 \
  "$(req POST /api/put -d "$(pt sec.tok 1356998400)" -H 'Authorization: Bearer s3cret' | cut -c1-3)"
check_eq "token: Bearer with the token is accepted" "204 " \
  "$(req POST /api/put -d "$(pt sec.tok 1356998401)" -H 'Authorization: Bearer s3cret-T0ken')"
check_eq "token: Basic with the token as password is accepted" "204 " \
  "$(req POST /api/put -d "$(pt sec.tok 1356998402)" -u grafana:s3cret-T0ken)"
check_eq "token: Basic with a wrong password is 401" 401 \
  "$(req POST /api/put -d "$(pt sec.tok 1356998403)" -u grafana:nope | cut -c1-3)"
check_eq "token: reads stay open (query)" 2 "$(points sec.tok)"
check_eq "token: reads stay open (version)" 200 "$(req GET /api/version | cut -c1-3)"
check_eq "token: reads stay open (suggest)" '200 ["sec.tok"]' "$(req GET '/api/suggest?type=metrics&q=sec.t')"
check_eq "token: reads stay open (stats)" 200 "$(req GET /api/stats | cut -c1-3)"
check_eq "token: reads stay open (annotation GET)" 404 \
  "$(req GET '/api/annotation?start_time=1356998400' | cut -c1-3)"
check_eq "token: uid assign needs it" 401 "$(req GET '/api/uid/assign?metric=sec.x' | cut -c1-3)"
check_eq "token: annotation writes need it" 401 \
  "$(req POST /api/annotation -d '{"startTime":1356998400,"description":"x"}' | cut -c1-3)"
check_eq "token: method_override cannot turn a write into a read" 401 \
  "$(req GET '/api/annotation?method_override=post&start_time=1356998400&description=x' | cut -c1-3)"
check_eq "token: annotation write with it" 200 \
  "$(req POST /api/annotation -d '{"startTime":1356998400,"description":"x"}' -H 'Authorization: Bearer s3cret-T0ken' | cut -c1-3)"
check_eq "token: uidmeta writes need it" 401 \
  "$(req POST /api/uid/uidmeta -d '{"uid":"000001","type":"metric","description":"d"}' | cut -c1-3)"
check_eq "token: tsmeta create needs it" 401 "$(req GET '/api/uid/tsmeta?m=sec.tok{host=a}&create=true' | cut -c1-3)"
check_eq "token: dropcaches needs it" 401 "$(req GET /api/dropcaches | cut -c1-3)"
check_eq "token: dropcaches with it" 200 "$(req GET /api/dropcaches -H 'Authorization: Bearer s3cret-T0ken' | cut -c1-3)"
cfg=$(req GET /api/config)
check_contains "token: /api/config hides it" "$cfg" '"tsd.core.auth.token":"********"'
case "$cfg$(cat "$TSD_LOG")" in
  *s3cret-T0ken*) not_ok "token: it appears in /api/config or the log" ;;
  *) ok "token: it appears neither in /api/config nor in the log" ;;
esac
out=$(cat <<'LINES' | tsd_talk
put sec.tel 1356998400 1 host=a
dropcaches
auth wrong
put sec.tel 1356998401 1 host=a
auth s3cret-T0ken
put sec.tel 1356998402 1 host=a
put sec.tel 1356998403 1 host=a
dropcaches
help
LINES
)
check_eq "token: telnet refuses writes until auth, then accepts them" \
  "put: unauthorized: a token is required (tsd.core.auth.token is set): send it with 'Authorization: Bearer <token>' (HTTP) or 'auth <token>' (telnet)
dropcaches: unauthorized: a token is required (tsd.core.auth.token is set): send it with 'Authorization: Bearer <token>' (HTTP) or 'auth <token>' (telnet)
AUTH_FAIL
put: unauthorized: a token is required (tsd.core.auth.token is set): send it with 'Authorization: Bearer <token>' (HTTP) or 'auth <token>' (telnet)
AUTH_SUCCESS.
Caches dropped.
available commands: auth diediedie dropcaches exit help histogram put rollup stats status version " "$out"
check_eq "token: only the telnet points sent after auth are stored" 2 "$(points sec.tel)"
out=$(printf 'put sec.tel2 1356998400 1 host=a\nversion\n' | tsd_talk)
check_contains "token: the login is per connection" "$out" "put: unauthorized: a token is required"
check_contains "token: the connection stays usable" "$out" "built at revision"
tsd_stop
check_eq "token: the TSD stops cleanly" 0 "$?"

# ---- an allow-list that excludes 127.0.0.1 (on the first run's data) ------------------------------
TSD_DATA=$data0
tsd_start --tsd.core.auth.allow=10.0.0.0/8,::2 --tsd.core.enable_admin=true
check_eq "allow (excluding): HTTP put is 403" \
  '403 {"error":{"code":403,"message":"Forbidden","details":"client address 127.0.0.1 is not in tsd.core.auth.allow"}}' \
  "$(req POST /api/put -d "$(pt sec.acl 1356998400)")"
out=$(printf 'put sec.acl 1356998401 1 host=a\nversion\n' | tsd_talk)
check_contains "allow (excluding): telnet put is refused with one line" "$out" \
  "put: unauthorized: client address 127.0.0.1 is not in tsd.core.auth.allow"
check_contains "allow (excluding): the telnet connection stays usable" "$out" "built at revision"
check_eq "allow (excluding): dropcaches is 403" 403 "$(req GET /api/dropcaches | cut -c1-3)"
check_eq "allow (excluding): uid assign is 403" 403 "$(req GET '/api/uid/assign?metric=m' | cut -c1-3)"
check_eq "allow (excluding): reads work (version)" 200 "$(req GET /api/version | cut -c1-3)"
check_eq "allow (excluding): reads work (suggest)" '200 ["sec.open"]' "$(req GET '/api/suggest?type=metrics&q=sec.o')"
check_eq "allow (excluding): reads work (query)" 2 "$(points sec.open)"
check_eq "allow (excluding): reads work (static files)" 200 \
  "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$TSD_PORT/")"
check_eq "allow (excluding): telnet stats work" 1 "$(printf 'stats\n' | tsd_talk | grep -c '^tsd.uptime ')"
tsd_stop

# ---- an allow-list that includes it ---------------------------------------------------------------
unset TSD_DATA
tsd_start --tsd.core.auth.allow="192.168.0.0/16, 127.0.0.0/8"
check_eq "allow (including): HTTP put is accepted" "204 " "$(req POST /api/put -d "$(pt sec.acl 1356998400)")"
out=$(printf 'put sec.acl 1356998401 1 host=a\nversion\n' | tsd_talk)
check_contains "allow (including): telnet put is accepted" "$out" "built at revision"
check_eq "allow (including): both points are stored" 2 "$(points sec.acl)"
tsd_stop

# ---- admin actions disabled ---------------------------------------------------------------------
unset TSD_DATA
tsd_start --tsd.core.enable_admin=false
check_eq "admin off: /api/dropcaches is 403" \
  '403 {"error":{"code":403,"message":"Forbidden","details":"admin actions are disabled (tsd.core.enable_admin=false)"}}' \
  "$(req GET /api/dropcaches)"
out=$(printf 'dropcaches\ndiediedie\nstatus\n' | tsd_talk)
check_eq "admin off: telnet dropcaches and diediedie answer one line each" \
  "dropcaches: forbidden: admin actions are disabled (tsd.core.enable_admin=false)
diediedie: forbidden: admin actions are disabled (tsd.core.enable_admin=false)
ok" "$out"
check "admin off: the TSD is still running" kill -0 "$TSD_PID"
check_eq "admin off: writes still work" "204 " "$(req POST /api/put -d "$(pt sec.adm 1356998400)")"
tsd_stop

# ---- admin and deletes enabled, behind the token ------------------------------------------------
unset TSD_DATA
tsd_start --tsd.core.enable_admin=true --tsd.http.query.allow_delete=true \
  --tsd.core.auth.token=tok-2
auth=(-H 'Authorization: Bearer tok-2')
check_eq "delete on: seed points" "204 " \
  "$(req POST /api/put -d "[$(pt sec.del 1356998400),$(pt sec.del 1356998460)]" "${auth[@]}")"
check_eq "delete on: DELETE /api/query without the token is 401" 401 \
  "$(req DELETE '/api/query?start=1356998000&end=1357000000&m=sum:sec.del' | cut -c1-3)"
check_eq "delete on: delete:true without the token is 401" 401 \
  "$(req POST /api/query -d '{"start":1356998000,"end":1357000000,"delete":true,"queries":[{"aggregator":"sum","metric":"sec.del"}]}' | cut -c1-3)"
check_eq "delete on: nothing deleted without the token" 2 "$(points sec.del)"
check_eq "delete on: delete:true with the token" 200 \
  "$(req POST /api/query "${auth[@]}" -d '{"start":1356998000,"end":1357000000,"delete":true,"queries":[{"aggregator":"sum","metric":"sec.del"}]}' | cut -c1-3)"
check_eq "delete on: the points are gone" 0 "$(points sec.del)"
out=$(printf 'diediedie\nauth tok-2\ndiediedie\n' | tsd_talk)
check_eq "admin on: diediedie needs auth, then shuts down" \
  "diediedie: unauthorized: a token is required (tsd.core.auth.token is set): send it with 'Authorization: Bearer <token>' (HTTP) or 'auth <token>' (telnet)
AUTH_SUCCESS.
Cleaning up and exiting now." "$out"
wait "$TSD_PID"
check_eq "admin on: the TSD exits 0 after diediedie" 0 "$?"

# ---- the token from a file ------------------------------------------------------------------------
printf 'file-token-9\n' >"$tmp/token"
chmod 600 "$tmp/token"
unset TSD_DATA
tsd_start --tsd.core.auth.token_file="$tmp/token"
check_eq "token_file: the file's token is accepted" "204 " \
  "$(req POST /api/put -d "$(pt sec.file 1356998400)" -H 'Authorization: Bearer file-token-9')"
check_eq "token_file: another is refused" 401 \
  "$(req POST /api/put -d "$(pt sec.file 1356998400)" -H 'Authorization: Bearer file-token-8' | cut -c1-3)"
tsd_stop

# ---- CORS only as configured (docs/opentsdb-compat.md, "General rules") -------------------------
unset TSD_DATA
tsd_start
hdrs=$(curl -s -D - -o /dev/null -H 'Origin: http://evil.example' "http://127.0.0.1:$TSD_PORT/api/version")
case "$hdrs" in
  *Access-Control-*) not_ok "CORS off: no Access-Control headers for an Origin" ;;
  *) ok "CORS off: no Access-Control headers for an Origin" ;;
esac
check_eq "CORS off: OPTIONS is 405" 405 "$(req OPTIONS /api/put -H 'Origin: http://a.example' | cut -c1-3)"
tsd_stop
unset TSD_DATA
tsd_start --tsd.http.request.cors_domains=http://a.example
check_eq "CORS on: OPTIONS without Origin is 405" 405 "$(req OPTIONS /api/put | cut -c1-3)"
pre=$(curl -s -D - -o /dev/null -X OPTIONS -H 'Origin: http://a.example' "http://127.0.0.1:$TSD_PORT/api/put")
check_contains "CORS on: the listed origin gets a 200 preflight" "$pre" "HTTP/1.1 200"
check_contains "CORS on: the listed origin is echoed" "$pre" "Access-Control-Allow-Origin: http://a.example"
case "$pre" in
  *Access-Control-Allow-Credentials*) not_ok "CORS on: credentials are never allowed" ;;
  *) ok "CORS on: credentials are never allowed" ;;
esac
out=$(curl -s -D "$tmp/h2" -X POST -H 'Origin: http://evil.example' -d "$(pt sec.cors 1356998400)" \
  "http://127.0.0.1:$TSD_PORT/api/put")
check_contains "CORS on: another origin gets the error" "$out" '"message":"CORS domain not allowed"'
case "$(cat "$tmp/h2")" in
  *Access-Control-Allow-Origin*) not_ok "CORS on: another origin gets no Allow-Origin" ;;
  *) ok "CORS on: another origin gets no Allow-Origin" ;;
esac
check_contains "CORS on: the refused origin wrote nothing" "$(points sec.cors)" "No such name for 'metrics': 'sec.cors'"
tsd_stop

# ---- bad settings stop the start ------------------------------------------------------------------
"$CTSDB" tsd --bind 127.0.0.1 --port 0 --data "$tmp/bad" --tsd.core.auth.allow=10.0.0.1/8 \
  >/dev/null 2>"$tmp/bad.log" &
badpid=$!
IT_PIDS+=("$badpid")
for _ in $(seq 1 100); do kill -0 "$badpid" 2>/dev/null || break; sleep 0.1; done
wait "$badpid" 2>/dev/null
check "bad allow-list: the TSD does not start" test "$?" -ne 0
check_contains "bad allow-list: the error names key and entry" "$(cat "$tmp/bad.log")" \
  "tsd.core.auth.allow: bad allow-list entry '10.0.0.1/8': address bits set beyond the /8 prefix"
"$CTSDB" tsd --bind 127.0.0.1 --port 0 --data "$tmp/bad" --tsd.core.enable_admin=maybe \
  >/dev/null 2>"$tmp/bad2.log"
check_eq "bad enable_admin: exit status 2" 2 "$?"
check_contains "bad enable_admin: the error lists the choices" "$(cat "$tmp/bad2.log")" \
  "expected one of false|loopback|true"

# ---- owner-only data even under a permissive umask -----------------------------------------------
# (the checks above ran under the test's umask; the modes come from the code, not the umask)
old_umask=$(umask)
umask 000
TSD_DATA=$tmp/umask0-data
tsd_start --tsd.storage.memstore_flush_bytes=65536
req POST /api/put -d "$(pt sec.umask 1356998400)" >/dev/null
tsd_stop
umask "$old_umask"
check_eq "umask 000: the data directory is still 0700" 700 "$(stat -c %a "$TSD_DATA")"
check "umask 000: block files were written" test -n "$(find "$TSD_DATA/sst" -type f | head -1)"
check_eq "umask 000: no file or directory under data is group/world accessible" "" \
  "$(find "$TSD_DATA" -perm /077 | head -3)"
"$CTSDB" fsck --data "$TSD_DATA" --quarantine >/dev/null 2>&1
check_eq "umask 000: fsck leaves nothing group/world accessible" "" \
  "$(find "$TSD_DATA" -perm /077 | head -3)"
unset TSD_DATA

it_done
