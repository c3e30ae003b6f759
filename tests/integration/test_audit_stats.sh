#!/usr/bin/env bash
# test_audit_stats.sh - OpenTSDB 2.4's StatsRpc and the small RPCs over HTTP and telnet, as a
# client observes them: TestStatsRpc's cases (printThreadStats, printJVMStats), the /api/stats
# list, /api/version, /api/aggregators, /api/serializers, /api/dropcaches, /api/config,
# /api/config/filters, /api/stats/{query,region_clients}, TestRpcManager / TestRpcPlugin's
# HTTP-visible routing (an unknown /api path, a /plugin path with no plugin loaded), and the
# telnet stats, version, help, dropcaches, diediedie and unknown-command answers.
# Deliberate differences (docs/opentsdb-compat.md): no Java runtime (jvm sections carry the
# process's figures, gc and pools empty, thread stacks empty), /api/stats/query keeps no
# query history and /api/stats/region_clients has no HBase clients (both empty), dropcaches
# needs tsd.core.enable_admin.
source "$(dirname "$0")/lib.sh"

tsd_start --tsd.core.enable_admin=true
B="http://127.0.0.1:$TSD_PORT"
g() { curl -gs -m 20 -w ' %{http_code}' "$B$1"; }
body() { printf '%s' "${1% *}"; }
js() { python3 -c "import json,sys; d=json.loads(sys.argv[1].rpartition(' ')[0]); $2" "$1"; }

echo "put sys.cpu.user 1356998400 1 host=a" | tsd_talk >/dev/null
r=$(g /api/stats/threads)
js "$r" 'sys.exit(0 if any(t["threadID"] == '"$TSD_PID"' for t in d) else 1)' &&
  ok "printThreadStats: the TSD's main thread is listed by its id" ||
  not_ok "printThreadStats: main thread $TSD_PID not in $r"
check_contains "printThreadStats: 200" "$r" " 200"
r=$(g /api/stats/jvm)
for sec in os gc runtime pools memory; do
  check_contains "printJVMStats: \"$sec\":{" "$r" "\"$sec\":{"
done
js "$r" 'assert d["runtime"]["uptime"] >= 0 and d["memory"]["heapMemoryUsage"]["used"] > 0' &&
  ok "printJVMStats: uptime and resident memory are figures" || not_ok "printJVMStats: figures: $r"

r=$(g /api/stats)
js "$r" '
for e in d: assert set(e) == {"metric", "timestamp", "value", "tags"} and isinstance(e["value"], str), e
put = [e for e in d if e["metric"] == "tsd.rpc.received" and e["tags"].get("type") == "put"]
assert put and int(put[0]["value"]) >= 1 and put[0]["tags"]["host"], put' &&
  ok "/api/stats: metric, timestamp, string value, tags with host; the put counted" ||
  not_ok "/api/stats shape: $(body "$r" | head -c 300)"
js "$(g /api/version)" 'assert set(d) >= {"version","short_revision","full_revision","timestamp","repo_status","user","host","repo","branch"} and all(isinstance(v, str) for v in d.values())' &&
  ok "/api/version: VersionRpc's keys, string values" || not_ok "/api/version"
js "$(g /api/aggregators)" 'assert {"sum","avg","min","max","dev","zimsum","mimmin","mimmax","count","none","p99","first","last"} <= set(d)' &&
  ok "/api/aggregators: OpenTSDB 2.4's names" || not_ok "/api/aggregators"
check_contains "/api/serializers: the json serializer" "$(g /api/serializers)" '"serializer":"json"'
check_eq "/api/dropcaches" '{"message":"Caches dropped","status":"200"} 200' "$(g /api/dropcaches)"
js "$(g /api/config)" 'assert all(isinstance(v, str) for v in d.values()) and list(d) == sorted(d) and d["tsd.core.enable_admin"] == "true"' &&
  ok "/api/config: every key a string, sorted, the running value" || not_ok "/api/config"
js "$(g /api/config/filters)" 'assert {"literal_or","iliteral_or","not_literal_or","wildcard","iwildcard","regexp"} <= set(d) and all(set(v) == {"examples","description"} for v in d.values())' &&
  ok "/api/config/filters: per type, examples and description" || not_ok "/api/config/filters"
check_eq "/api/stats/query: running and completed (no history: deliberate)" '{"running":[],"completed":[]} 200' "$(g /api/stats/query)"
check_eq "/api/stats/region_clients: no HBase clients (deliberate)" '[] 200' "$(g /api/stats/region_clients)"
check_eq "RpcManager: an unknown /api path" '{"error":{"code":404,"message":"Endpoint not found"}} 404' "$(g /api/nothere)"
check_contains "RpcPlugin: a /plugin path with no plugin loaded: 404 page" "$(g /plugin/dummy/test)" "Page Not Found"

out=$(printf 'stats\nversion\nhelp\ndropcaches\nbogus\n' | tsd_talk)
check "telnet stats: put-shaped lines with host" grep -Eq '^tsd\.rpc\.received [0-9]+ [0-9]+ host=[^ ]+ type=put$' <<<"$out"
check "telnet version: revision line" grep -Eq '^net\.opentsdb\.tools ctsdb [^ ]+ built at revision [0-9a-f]+ \((MINT|MODIFIED)\)$' <<<"$out"
check "telnet version: build line" grep -Eq '^Built on .+ by .+@.+$' <<<"$out"
check "telnet help" grep -qx 'available commands: diediedie dropcaches exit help histogram put rollup stats status version ' <<<"$out"
check "telnet dropcaches" grep -qx 'Caches dropped.' <<<"$out"
check "telnet unknown command" grep -qx "unknown command: bogus.  Try \`help'." <<<"$out"
check_eq "telnet diediedie" "Cleaning up and exiting now." "$(echo diediedie | tsd_talk)"
gone=no
for _ in $(seq 1 200); do kill -0 "$TSD_PID" 2>/dev/null || { gone=yes; break; }; sleep 0.1; done
check_eq "diediedie: the TSD exits" yes "$gone"
tsd_stop
tsd_logs_check
it_done
