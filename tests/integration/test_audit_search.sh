#!/usr/bin/env bash
# test_audit_search.sh - /api/search as OpenTSDB 2.4's SearchRpc answers it (the cases of its
# TestSearchRpc, carried over as HTTP requests to the real TSD): lookup by metric, by tag key
# only (GET m={host=} and POST with a null value), useMeta false and true, the missing m=, an
# unparsable m=, unknown names (404 "Unable to resolve one or more UIDs" with the
# NoSuchUniqueName text as details), a bad limit, a body with neither metric nor tags, and the
# other search types without a search plugin: no type / an unknown type (400 "Invalid search
# query type supplied"), a missing query=, bad limit / start_index, a well-formed search (400
# "Searching is not enabled"), and PUT (400 "Unsupported method: PUT"). TestSearchQuery (its
# parseSearchType cases): each type name in the Java test's spelling (tsmeta, TSMeta_Summary,
# tsuids, UIDMeta, Annotation: the case is ignored) is accepted - without a plugin that shows as
# "Searching is not enabled" rather than "Invalid search query type supplied" - as is lookup in
# any case (answered as lookup); a null or empty type and "NotAType" are refused with its
# messages as the details.
source "$(dirname "$0")/lib.sh"

tsd_start
T=1700000000
{
  echo "put sys.cpu.user $T 1 host=web01"
  echo "put sys.cpu.user $T 2 host=web02"
  echo "put sys.cpu.nice $T 3 host=web01"
  echo "put sys.mem $T 4 host=web01 owner=ops"
  echo "put sys.mem $T 5 host=web02 owner=ops"
  echo version
} | tsd_talk >/dev/null
B="http://127.0.0.1:$TSD_PORT"

# req METHOD PATH [BODY]: "STATUS BODY"
req() {
  if [ $# -ge 3 ]; then
    curl -gs -m 20 -w ' %{http_code}' -X "$1" --data-binary "$3" "$B$2"
  else
    curl -gs -m 20 -w ' %{http_code}' -X "$1" "$B$2"
  fi | awk '{s=$NF; $NF=""; sub(/ $/,""); print s" "$0}'
}
# field EXPR: evaluates EXPR over the JSON answer d (after the status)
field() { python3 -c "import json,sys; st,_,b=sys.argv[2].partition(' '); d=json.loads(b); print(st, $1)" "$1" "$2"; }
err() { field 'd["error"]["code"], d["error"]["message"], d["error"].get("details", "")' "$1"; }

# ---- lookup (searchLookup*) ------------------------------------------------------------------
r=$(req GET "/api/search/lookup?m=sys.cpu.user")
check_eq "lookup by metric" "200 2 sys.cpu.user" \
  "$(field 'd["totalResults"], d["results"][0]["metric"]' "$r")"
r=$(req GET "/api/search/lookup?m={host=}")
check_eq "lookup by tag key only (GET m={host=}): every series with host" "200 5" \
  "$(field 'd["totalResults"]' "$r")"
r=$(req POST /api/search/lookup '{"tags":[{"key":"host","value":null}]}')
check_eq "lookup POST by tag key only" "200 5" "$(field 'd["totalResults"]' "$r")"
r=$(req POST /api/search/lookup '{"tags":[{"key":"host","value":null}],"useMeta":false}')
check_eq "lookup POST useMeta false" "200 5" "$(field 'd["totalResults"]' "$r")"
r=$(req POST /api/search/lookup '{"tags":[{"key":"owner","value":"ops"}],"useMeta":true}')
check_eq "lookup POST useMeta true" "200 2 ops" \
  "$(field 'd["totalResults"], d["results"][0]["tags"]["owner"]' "$r")"
r=$(req GET "/api/search/lookup?m=sys.mem{host=web02}")
check_eq "lookup with a tag pair: the TSUID (metric and two tag pairs) and names" "200 1 web02 30" \
  "$(field 'd["totalResults"], d["results"][0]["tags"]["host"], len(d["results"][0]["tsuid"])' "$r")"
check_eq "lookup without m= (searchLookupMissingQuery)" \
  "400 400 Missing parameter <code>m</code> " "$(err "$(req GET /api/search/lookup)")"
check_eq "lookup with m={ (searchLookupBadQuery)" \
  "400 400 Unable to parse query Missing '}' at the end of: {" \
  "$(err "$(req GET "/api/search/lookup?m={")")"
check_eq "lookup of an unknown metric (searchLookupNSUN): 404, the name in details" \
  "404 404 Unable to resolve one or more UIDs No such name for 'metrics': 'no.such'" \
  "$(err "$(req GET "/api/search/lookup?m=no.such")")"
check_eq "lookup of an unknown tag value: 404" \
  "404 404 Unable to resolve one or more UIDs No such name for 'tagv': 'web99'" \
  "$(err "$(req POST /api/search/lookup '{"metric":"sys.mem","tags":[{"key":"host","value":"web99"}]}')")"
check_eq "lookup with a bad limit" \
  "400 400 Unable to convert 'limit' to a valid number " \
  "$(err "$(req GET "/api/search/lookup?m=sys.mem&limit=nan")")"
check_eq "lookup with neither metric nor tags" \
  "400 400 Missing metric and tags. Please supply at least one value. " \
  "$(err "$(req POST /api/search/lookup '{"limit":3}')")"
# TimeSeriesLookup stops at the limit and SearchRpc's totalResults is the size of what it found
check_eq "lookup limit cuts the results, totalResults counts those answered" "200 1 1" \
  "$(field 'len(d["results"]), d["totalResults"]' "$(req GET "/api/search/lookup?m={host=*}&limit=1")")"

# ---- other search types without a plugin (search*) -------------------------------------------
check_eq "no type (searchMissingType)" \
  "400 400 Invalid search query type supplied Type provided was null or empty" \
  "$(err "$(req GET "/api/search?query=*")")"
check_eq "an unknown type (searchBadTypeType)" \
  "400 400 Invalid search query type supplied Unknown type: badtype" \
  "$(err "$(req GET "/api/search/badtype?query=*")")"
check_eq "no query= (searchMissingQuery)" \
  "400 400 Missing parameter <code>query</code> " "$(err "$(req GET /api/search/tsmeta)")"
check_eq "a bad limit (searchInvalidLimit)" \
  "400 400 Unable to convert 'limit' to a valid number " \
  "$(err "$(req GET "/api/search/tsmeta?query=*&limit=nan")")"
check_eq "a bad start_index (searchInvalidStartIndex)" \
  "400 400 Unable to convert 'start_index' to a valid number " \
  "$(err "$(req GET "/api/search/uidmeta?query=*&start_index=nan")")"
check_eq "a well-formed search without a plugin (searchPluginNotEnabled)" \
  "400 400 Searching is not enabled Searching has not been enabled on this TSD" \
  "$(err "$(req GET "/api/search/annotation?query=*")")"
check_eq "a POSTed search without a plugin" \
  "400 400 Searching is not enabled Searching has not been enabled on this TSD" \
  "$(err "$(req POST /api/search/tsmeta '{"query":"*","limit":42,"startIndex":2}')")"
check_eq "PUT (searchBadMethod)" "400 400 Unsupported method: PUT " \
  "$(err "$(req PUT "/api/search/tsmeta?query=*")")"
check_eq "PUT on lookup" "400 400 Unsupported method: PUT " \
  "$(err "$(req PUT "/api/search/lookup?m=sys.mem")")"

# ---- TestSearchQuery: SearchQuery.parseSearchType over the URL's type ------------------------
NOPLUGIN="400 400 Searching is not enabled Searching has not been enabled on this TSD"
for c in "parseSearchTypeTSMeta tsmeta" "parseSearchTypeTSMetaSummary TSMeta_Summary" \
  "parseSearchTypeTSUIDs tsuids" "parseSearchTypeUIDMeta UIDMeta" "parseSearchTypeAnnotation Annotation"; do
  set -- $c
  check_eq "TestSearchQuery.$1: type $2 accepted (no plugin: not enabled)" "$NOPLUGIN" \
    "$(err "$(req GET "/api/search/$2?query=*")")"
done
check_eq "TestSearchQuery.parseSearchTypeNull: no type" \
  "400 400 Invalid search query type supplied Type provided was null or empty" \
  "$(err "$(req GET "/api/search?query=*")")"
check_eq "TestSearchQuery.parseSearchTypeEmtpy: an empty type (/api/search/)" \
  "400 400 Invalid search query type supplied Type provided was null or empty" \
  "$(err "$(req GET "/api/search/?query=*")")"
check_eq "TestSearchQuery.parseSearchTypeInvalid: NotAType" \
  "400 400 Invalid search query type supplied Unknown type: NotAType" \
  "$(err "$(req GET "/api/search/NotAType?query=*")")"
check_eq "parseSearchType: LookUp is lookup (the case ignored)" "200 2 sys.cpu.user" \
  "$(field 'd["totalResults"], d["results"][0]["metric"]' "$(req GET "/api/search/LookUp?m=sys.cpu.user")")"
check_eq "parseSearchType: LOOKUP POSTed" "200 5" \
  "$(field 'd["totalResults"]' "$(req POST /api/search/LOOKUP '{"tags":[{"key":"host","value":null}]}')")"

tsd_stop
tsd_logs_check
it_done
