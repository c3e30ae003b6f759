#!/usr/bin/env bash
# test_web_e2e.sh - the dashboard end to end: starts the real TSD (serving web/ from the
# repository), checks the static file server (content types, caching headers, no way out of
# web/), loads known data over telnet, then runs tests/e2e/e2e.mjs in headless Debian Chromium
# through playwright-core. Screenshots land in test-output/web/ (gitignored).
# Needs: node + npm (playwright-core is installed from tests/e2e/package-lock.json with `npm ci`
# when missing), /usr/bin/chromium (deps/test.txt), web/vendor/ (made by `make`).
source "$(dirname "$0")/lib.sh"
cd "$IT_ROOT" || exit 1
E2E=$IT_ROOT/tests/e2e
OUT=$IT_ROOT/test-output/web
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  not_ok "node and npm are installed"
  it_done
fi
if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  not_ok "chromium is installed (tools/deps.sh deps/test.txt)"
  it_done
fi
if [ ! -f web/vendor/uPlot.iife.min.js ]; then
  make --no-print-directory web-vendor >/dev/null 2>&1
fi
check "web/vendor holds uPlot (vendored by make)" test -f web/vendor/uPlot.iife.min.js
# The version is pinned exactly (package.json and the lock file, with its sha512 integrity) and
# the vendored file is that version, with its license beside it.
uplot_pin=$(node -p 'require(process.argv[1]).dependencies.uplot' "$IT_ROOT/web/npm/package.json" 2>/dev/null)
check "uPlot is pinned to an exact version in web/npm/package.json" \
  grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+$' <<<"$uplot_pin"
lock=$(node -p 'const p = require(process.argv[1]).packages["node_modules/uplot"];
  p.version + " " + p.integrity' "$IT_ROOT/web/npm/package-lock.json" 2>/dev/null)
check_contains "the lock file pins the same uPlot with a sha512 integrity" "$lock" "$uplot_pin sha512-"
check_contains "web/vendor/uPlot.iife.min.js is the pinned version" \
  "$(head -c 200 web/vendor/uPlot.iife.min.js)" "uPlot (v$uplot_pin)"
check_contains "uPlot's license is vendored beside it" "$(cat web/vendor/LICENSE.uPlot.txt 2>/dev/null)" \
  "The MIT License"
# (Re)install when node_modules is missing or holds another version than the lock file pins.
pinned=$(node -p 'require(process.argv[1]).packages["node_modules/playwright-core"].version' \
  "$E2E/package-lock.json" 2>/dev/null)
have=$(node -p 'require(process.argv[1]).version' "$E2E/node_modules/playwright-core/package.json" \
  2>/dev/null)
if [ -z "$have" ] || [ "$have" != "$pinned" ]; then
  (cd "$E2E" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >/dev/null 2>&1
fi
if [ ! -f "$E2E/node_modules/playwright-core/package.json" ]; then
  not_ok "npm ci installs playwright-core in tests/e2e"
  it_done
fi

# The default key layout, salted (one byte, 8 buckets, so the data table is pre-split into 8
# regions), for the storage page. The loaded data is put in store files, so that queries read
# it through the block cache and the storage page has a cache hit ratio to draw: its closed hours
# go from the ingest head's backfill chunks (handed off after 1 s idle) to the memstores, flushed
# by size (64 KiB) or after 1 s without a write; the check after the load waits for that.
tsd_start --staticroot "$IT_ROOT/web" --tsd.storage.memstore_flush_bytes=65536 \
  --tsd.storage.head.backfill_idle_ms=1000 --tsd.storage.quiet_flush_ms=1000
URL="http://127.0.0.1:$TSD_PORT"
tmp=$(it_tmpdir)

# ---- static files --------------------------------------------------------------------------
# ctype PATH: the Content-Type of a GET (empty when the status is not 200).
ctype() {
  curl -s -o /dev/null -w '%{http_code} %{content_type}' --max-time 10 "$URL$1"
}
header() { # header PATH NAME
  curl -s -D - -o /dev/null --max-time 10 "$URL$1" | tr -d '\r' | sed -n "s/^$2: //Ip" | head -1
}
check_contains "/ is the dashboard as HTML" "$(ctype /)" "200 text/html"
check_contains "/ serves index.html" "$(curl -s --max-time 10 "$URL/")" '<script type="module" src="js/app.js">'
check_contains "/index.html is text/html" "$(ctype /index.html)" "200 text/html"
check_contains "/js/app.js is JavaScript" "$(ctype /js/app.js)" "200 application/javascript"
check_contains "/js/model.js is JavaScript" "$(ctype /js/model.js)" "200 application/javascript"
check_contains "/style.css is CSS" "$(ctype /style.css)" "200 text/css"
check_contains "/vendor/uPlot.iife.min.js is JavaScript" "$(ctype /vendor/uPlot.iife.min.js)" "200 application/javascript"
check_contains "/vendor/uPlot.min.css is CSS" "$(ctype /vendor/uPlot.min.css)" "200 text/css"
check_contains "/favicon.svg is SVG" "$(ctype /favicon.svg)" "200 image/svg+xml"
check_contains "uPlot's license is served as text" "$(ctype /vendor/LICENSE.uPlot.txt)" "200 text/plain"
check_contains "the vendored uPlot served is the pinned version" \
  "$(curl -s --max-time 10 "$URL/vendor/uPlot.iife.min.js" | head -c 200)" "uPlot (v$uplot_pin)"
check_contains "stylesheets may be cached (Cache-Control)" "$(header /style.css Cache-Control)" "max-age="
check_contains "index.html by name is revalidated too" "$(header /index.html Cache-Control)" "no-cache"
check_contains "a missing file is 404" "$(ctype /no-such-file.js)" "404"
check_contains "the page is revalidated (Cache-Control)" "$(header / Cache-Control)" "no-cache"
check_contains "scripts may be cached (Cache-Control)" "$(header /js/app.js Cache-Control)" "max-age="
etag=$(header /js/app.js ETag)
check "scripts carry an ETag" test -n "$etag"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H "If-None-Match: $etag" "$URL/js/app.js")
check_eq "a matching If-None-Match gets 304" 304 "$code"
# Nothing outside web/ can be reached, however the path is spelled.
makefile_head=$(head -1 Makefile)
for p in '/../Makefile' '/%2e%2e/Makefile' '/js/../../Makefile' '/js/%2e%2e/%2e%2e/Makefile' \
  '/..%2fMakefile' '/%2e%2e%2fMakefile' '/js/..%5c..%5cMakefile' '/%2E%2E/%2E%2E/etc/passwd' \
  '/../../../../etc/passwd' '/./../Makefile' '//etc/passwd' '/index.html%00.js' '/js/./app.js/..'; do
  body=$(curl -s --path-as-is --max-time 10 -w '\n%{http_code}' "$URL$p")
  code=${body##*$'\n'}
  case "$code" in
    400|404) ok "traversal $p refused ($code)" ;;
    *) not_ok "traversal $p refused: got $code" ;;
  esac
  case "$body" in
    *"$makefile_head"*|*"root:x:0:0"*) not_ok "traversal $p leaked a file" ;;
  esac
done

# ---- known data ----------------------------------------------------------------------------
# Written over the telnet protocol (tests/e2e/load.mjs: put lines, then `version`, answered once
# every point is in the write-ahead log).
BASE=$(( ($(date +%s) / 60 - 95) * 60 ))
node - "$BASE" "$tmp" <<'JS'
const fs = require('fs');
const [base, dir] = [Number(process.argv[2]), process.argv[3]];
const lines = [];
for (let i = 0; i < 90; i++) {
  const ts = base + 60 * i;
  lines.push(`put e2e.cpu ${ts} ${i} host=web01 dc=lga`);
  lines.push(`put e2e.cpu ${ts} ${100 + i} host=web02 dc=lga`);
  lines.push(`put e2e.counter ${ts} ${120 * i} host=web01`);
  if (i < 30 || i >= 60) lines.push(`put e2e.gap ${ts} 7 host=web01`);
  // A counter rising 1 per second that wraps at 1000 (5 times in 90 minutes).
  lines.push(`put e2e.wrap ${ts} ${(60 * i) % 1000} host=web01`);
}
lines.push(`put e2e.live ${base} 1 host=web01`);
const last = base + 60 * 89;
for (let k = 0; k < 20000; k++) {
  lines.push(`put e2e.big ${last - 19999 + k} ${(Math.round(1000 * Math.sin(k / 500)) / 10 + 200).toFixed(1)} host=web01`);
}
// 100,000 points: five series of 20000, value 1000*h + (k % 600).
for (let h = 1; h <= 5; h++) {
  for (let k = 0; k < 20000; k++) lines.push(`put e2e.huge ${last - 19999 + k} ${1000 * h + (k % 600)} host=h${h}`);
}
fs.writeFileSync(`${dir}/points.txt`, lines.join('\n') + '\n');
JS
check "known data is written over telnet" node "$E2E/load.mjs" "$TSD_PORT" "$tmp/points.txt"
n=""
for _ in $(seq 1 50); do
  n=$(curl -s --max-time 10 "$URL/api/query?start=$((BASE - 60))&m=sum:e2e.cpu" | grep -o '"[0-9]*":' | wc -l)
  [ "$n" -eq 90 ] && break
  sleep 0.2
done
check_eq "the data reads back through /api/query" 90 "$n"
# every data region's memstore empty: the closed hours are in store files (the open hour's
# points stay in the head)
mem=""
for _ in $(seq 1 150); do
  mem=$(curl -s --max-time 10 "$URL/api/stats" | python3 -c '
import json, sys
print(sum(int(d["value"]) for d in json.load(sys.stdin)
          if d["metric"] == "tsd.storage.region.memstore_bytes" and d["tags"].get("table") == "default:tsdb"))')
  [ "$mem" = 0 ] && break
  sleep 0.2
done
check_eq "the known data's closed hours are in store files (data memstores empty)" 0 "$mem"

# ---- the browser -----------------------------------------------------------------------------
mkdir -p "$OUT"
TSD_URL=$URL TSD_PORT=$TSD_PORT E2E_BASE=$BASE E2E_OUT=$OUT timeout 600 node "$E2E/e2e.mjs" >"$tmp/e2e.log" 2>&1
rc=$?
grep -E '^(ok|not ok) - |^# ' "$tmp/e2e.log"
if [ "$rc" -ne 0 ] && ! grep -q '^not ok - ' "$tmp/e2e.log"; then
  not_ok "the browser tests ran (exit $rc)"
  tail -30 "$tmp/e2e.log"
fi
[ "$rc" -eq 0 ] || IT_FAILS=$((IT_FAILS + 1))
tsd_stop
check "the TSD stops cleanly after the browser tests" test "$?" -eq 0
it_done
