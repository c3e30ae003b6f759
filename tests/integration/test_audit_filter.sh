#!/usr/bin/env bash
# test_audit_filter.sh - the tag-value filters as OpenTSDB 2.4's test/query/filter classes assert
# them (TestTagVLiteralOrFilter and its iliteral_or cases, TestTagVNotLiteralOrFilter,
# TestTagVWildcardFilter and iwildcard, TestTagVRegexFilter, TestTagVNotKeyFilter, TestTagVFilter's
# parse rules and tags-to-filters conversion), carried over as /api/query requests to the real
# TSD. Each Java case builds a filter and asserts whether one tag map matches; here every tag map
# of the classes is a series of flt.m, the filter is sent as a non-grouping filter with the "none"
# aggregator (one answer per series), and the check is whether the series of that tag map is
# among the answers. Constructor errors are 400s with OpenTSDB's messages.
# Not carried over: tag values OpenTSDB itself refuses to store ("*ops*mor", "ogg*ops*", the
# apostrophe of "Здравей'_хора" - the UTF-8 cases use "Здравей_хора"), the fat-finger parses
# whose value ("wil@*sugarbean", "lite@...") no stored series can match, and the Java-only
# hashCode/equals/toString/compareTo/resolveName/getCopy cases.
source "$(dirname "$0")/lib.sh"

tsd_start
{
  i=0
  for h in CMTDibbler CMTDIBBLER ogg-01.ops.ankh.morpork.com ogg-01.ops.ankh.MORPORK.com \
    Здравей_хора c; do
    echo "put flt.m 1356998400 $i host=$h owner=Hrun"
    i=$((i + 1))
  done
  echo "put flt.m 1356998400 9 owner=Hrun" # the tag map without the filtered key
  echo "put flt.m 1356998400 7 host=c owner=Hrun colo=lga" # for the tags-to-filters cases
  echo version
} | tsd_talk >/dev/null
# the literals the Java cases name exist as tag values (OpenTSDB, as ctsdb, resolves a
# case-sensitive literal list to UIDs and refuses an unknown one: 400 No such name)
curl -s -m 20 "http://127.0.0.1:$TSD_PORT/api/uid/assign?tagv=LutZe,Keli,Slant,CMtDibbler,CMtDibble" >/dev/null

PYTHONPATH="$IT_ROOT/tests/integration" python3 - "$TSD_PORT" <<'PY'
import json, sys, urllib.parse
from audit_lib import connect, req, report, finish
connect(sys.argv[1])
R = "start=1356998400&end=1356998460&"
def hosts(filt, key="host"):
    """the host values (None: the series without one) of the series passing {}{key=filt}"""
    st, b = req("/api/query?" + R + "m=none:flt.m" + urllib.parse.quote("{}{%s=%s}" % (key, filt), safe=""))
    if st != 200:
        return st, b, None
    return st, b, {a["tags"].get("host") for a in json.loads(b)}
D = "CMTDibbler"
O = "ogg-01.ops.ankh.morpork.com"
U = "Здравей_хора"
def match(cls, name, ftype, expr, value, want, key="host"):
    st, b, got = hosts("%s(%s)" % (ftype, expr), key)
    why = "status %d" % st if got is None else ("" if (value in got) == want else
          "series host=%s %s" % (value, "left out" if want else "passed"))
    report("%s.%s (%s(%s) on %s)" % (cls, name, ftype, expr, value), why, b)
def refused(cls, name, path_or_filter, text, body=None):
    if body is None:
        st, b = req("/api/query?" + R + "m=none:flt.m" + urllib.parse.quote("{}{%s}" % path_or_filter, safe=""))
    else:
        st, b = req("/api/query", "POST", body)
    why = ("status %d" % st if st != 400 else "") + ("" if text in b else " [%s] missing" % text)
    report("%s.%s" % (cls, name), why.strip(), b)

for ci in (False, True):
    C, t = ("TestTagVLiteralOrFilter" + (" iliteral_or" if ci else ""), "iliteral_or" if ci else "literal_or")
    for name, expr, value, want in [
        ("matchMiddle", "LutZe|CMTDibbler|Slant", D, True),
        ("matchStart", "CMTDibbler|LutZe|Slant", D, True),
        ("matchEnd", "LutZe|Slant|CMTDibbler", D, True),
        ("matchNoPipes", "CMTDibbler", D, True),
        ("matchPipeNoValueAfter", "CMTDibbler|", D, True),
        ("matchPipeNoValueBefore", "|CMTDibbler", D, True),
        ("matchFail", "LutZe|Keli|Slant", D, False),
        ("matchNoSuchTagk", "LutZe|Keli|Slant", None, False),
        ("matchSingle", "CMTDibbler", D, True)]:
        match(C, name, t, expr, value, want)
    N = "TestTagVNotLiteralOrFilter" + (" not_iliteral_or" if ci else "")
    nt = "not_" + t
    for name, expr, value, want in [
        ("matchMiddle", "LutZe|CMTDibbler|Slant", D, False),
        ("matchStart", "CMTDibbler|LutZe|Slant", D, False),
        ("matchEnd", "LutZe|Slant|CMTDibbler", D, False),
        ("matchNoPipes", "CMTDibbler", D, False),
        ("matchPipeNoValueAfter", "CMTDibbler|", D, False),
        ("matchPipeNoValueBefore", "|CMTDibbler", D, False),
        ("matchFail", "LutZe|Keli|Slant", D, True),
        # TagVNotLiteralOrFilter.match passes a map without the key, but OpenTSDB's scan never
        # asks it: the row key regex requires every filtered key (not_key's aside), so over
        # HTTP the series without the key is not answered
        ("matchNoSuchTagk (end to end: the series without the key is left out)", "LutZe|Keli|Slant", None, False),
        ("matchSingle", "CMTDibbler", D, False),
        ("matchSingleCharacterTagValue", "c", "c", False)]:
        match(N, name, nt, expr, value, want)
    for C2, tt in ((C, t), (N, nt)):
        refused(C2, "ctorEmptyFilter", "host=%s()" % tt, "Filter cannot be null or empty")
        refused(C2, "ctorJustAPipe", "host=%s(|)" % tt, "Filter must contain more than just a pipe")
        refused(C2, "ctorEmptyTagk", None, "tagk", body=json.dumps({"start": 1356998400, "queries": [
            {"aggregator": "none", "metric": "flt.m", "filters": [{"type": tt, "tagk": "", "filter": "a"}]}]}))
L, NL = "TestTagVLiteralOrFilter", "TestTagVNotLiteralOrFilter"
match(L, "matchFailCase", "literal_or", "LutZe|CMtDibbler|Slant", D, False)
match(L, "matchCaseInsensitive", "iliteral_or", "LutZe|CMtDibbler|Slant", D, True)
match(L, "matchCaseInsensitiveValue", "iliteral_or", "LutZe|CMtDibbler|Slant", "CMTDIBBLER", True)
match(L, "matchCaseInsensitiveFail", "iliteral_or", "LutZe|CMtDibble|Slant", D, False)
match(L, "matchSingleCaseInsensitive", "iliteral_or", "cmtDibbler", D, True)
match(NL, "matchFailCase", "not_literal_or", "LutZe|CMtDibbler|Slant", D, True)
# not_literal_or resolves no UIDs in OpenTSDB: a value no series has is no error, nothing is excluded
for v in ("Nobody", "Nobody|CMTDibbler", "CMTDibbler|Nobody"):
    st, b, got = hosts("not_literal_or(%s)" % v)
    want = {D, "CMTDIBBLER", O, "ogg-01.ops.ankh.MORPORK.com", U, "c"} - ({D} if D in v else set())
    report(NL + " with an unknown value (%s)" % v, "" if got == want else "status %d, got %r" % (st, got), b)
match(NL, "matchCaseInsensitive", "not_iliteral_or", "LutZe|CMtDibbler|Slant", D, False)
match(NL, "matchCaseInsensitiveFail", "not_iliteral_or", "LutZe|CMtDibble|Slant", D, True)
match(NL, "matchSingleCaseInsensitive", "not_iliteral_or", "cmtDibbler", D, False)

W = "TestTagVWildcardFilter"
for name, expr, value, want in [
    ("matchAll", "*", O, True),
    ("matchPostfix", "*.morpork.com", O, True),
    ("matchPrefix", "ogg*", O, True),
    ("matchInfix", "ogg*com", O, True),
    ("matchDoubleInfix", "ogg*ops*ank*com", O, True),
    ("matchTripleInfix", "ogg*ops*com", O, True),
    ("matchPreAndPostfix", "*morpork*", O, True),
    ("matchPostAndInfix", "*ops*com", O, True),
    ("matchPostAndDoubleInfix", "*ops*mor*com", O, True),
    ("matchPreAndInfix", "ogg*ops*", O, True),
    ("matchPreAndDoubleInfix", "ogg*ops*mor*", O, True),
    ("matchMultiWildcardInfix", "ogg***com", O, True),
    ("matchMultiWildcardPrefix", "ogg*****", O, True),
    ("matchMultiWildcardPostfix", "****com", O, True),
    ("matchWildcardsEverywhere", "****ogg*****mor****com****", O, True),
    ("matchUTF8Postfix", "*хора", U, True),
    ("matchUTF8Prefix", "Здр*", U, True),
    ("matchUTF8Infix", "Здр*ра", U, True),
    ("matchPostfixFail", "*.morpork.org", O, False),
    ("matchPrefixFail", "magrat*", O, False),
    ("matchInfixFail", "magrat*com", O, False),
    ("matchPreAndPostfixFail", "*quirm*", O, False),
    ("matchPostfixCaseFail", "*.MorPork.com", O, False),
    ("matchPrefixCaseFail", "Ogg*", O, False),
    ("matchInfixCaseFail", "ogG*Com", O, False),
    ("matchNothingButStars", "****", O, True),
    ("matchNoSuchTagk", "*.morpork.com", None, False)]:
    match(W, name, "wildcard", expr, value, want)
# matchAllNoSuchKey: wildcard(*) on a key no series has: the key has no UID, a 400 naming it
st, b, got = hosts("wildcard(*)", key="hobbes")
report(W + ".matchAllNoSuchKey", "" if st == 400 and "No such name for 'tagk': 'hobbes'" in b else
       "status %d" % st, b)
for name, expr, value in [("matchPostfixCaseInsensitive", "*.MorPork.com", O),
                          ("matchPostfixCaseInsensitiveValue", "*.MorPork.com", "ogg-01.ops.ankh.MORPORK.com"),
                          ("matchPrefixCaseInsensitive", "Ogg*", O),
                          ("matchInfixCaseInsensitive", "ogG*Com", O)]:
    match(W, name, "iwildcard", expr, value, True)
match(W, "matchNoSuchTagkCaseInsensitive", "iwildcard", "*.morpork.com", None, False)
refused(W, "ctorEmptyFilter", "host=wildcard()", "Filter cannot be null or empty")
refused(W, "ctorNoWildcard", "host=wildcard(someliteral)", "Filter must contain an asterisk")

X = "TestTagVRegexFilter"
for name, expr, want in [("matchExact", O, True), ("matchPostfix", ".*.ops.ankh.morpork.com", True),
                         ("matchPrefix", "ogg-01.ops.ankh.*", True), ("matchAnything", ".*", True),
                         ("matchFailed", "ogg-01.ops.qurim.*", False),
                         ("matchGrouping", "ogg-01.ops.(ankh|quirm|tsort).morpork.com", True),
                         ("matchNumbers", r"ogg-\d+.ops.ankh.morpork.com", True),
                         ("matchNotEnoughNumbers", r"ogg-\d(3).ops.ankh.morpork.com", False)]:
    match(X, name, "regexp", expr, O, want)
match(X, "the series without the key fails", "regexp", ".*", None, False)
refused(X, "ctorEmptyFilter", "host=regexp()", "Filter cannot be null or empty")
refused(X, "ctorBadRegex (PatternSyntaxException: the problem, its index, the pattern)",
        r"host=regexp(ogg-\d(3.ops.ankh.morpork.com)", "missing closing parenthesis near index 29")

K = "TestTagVNotKeyFilter"
match(K, "matchHasKey", "not_key", "", O, False)
match(K, "matchHasKey: only the series without host pass", "not_key", "", None, True)
st, b, got = hosts("not_key()", key="owner")
report(K + ".matchDoesNotHaveKey (every series has owner: none pass)", "" if got == set() else "got %r" % got, b)
refused(K, "ctorFilterHasValue", "host=not_key(Evadne)", "The filter must be empty for the not_key filter")

# TestTagVFilter: the parse rules, seen through the query echo (show_query)
F = "TestTagVFilter"
def echo(name, tags_or_m, want, post_filters=None):
    """want: sorted [(type, tagk, group_by, filter)] of the one answer's echo"""
    if post_filters is None:
        st, b = req("/api/query?" + R + "show_query&m=sum:flt.m" + urllib.parse.quote(tags_or_m, safe=""))
    else:
        st, b = req("/api/query", "POST", json.dumps({"start": 1356998400, "end": 1356998460, "showQuery": True,
            "queries": [{"aggregator": "sum", "metric": "flt.m", "tags": tags_or_m, "filters": post_filters}]}))
    why = ""
    try:
        d = json.loads(b)
        got = [sorted((f["type"], f["tagk"], f["group_by"], f["filter"]) for f in a["query"]["filters"]) for a in d]
        if st != 200 or not got or any(g != sorted(want) for g in got): why = "filters %r" % got
    except (ValueError, KeyError, TypeError) as x:
        why = "status %d (%s)" % (st, x)
    report(F + "." + name, why, b)
echo("getFilterGroupBy (* is a group-by wildcard)", "{owner=*}", [("wildcard", "owner", True, "*")])
echo("getFilterLiteral", "{owner=Hrun}", [("literal_or", "owner", True, "Hrun")])
echo("getFilterGroupByPiped", "{host=CMTDibbler|c}", [("literal_or", "host", True, "CMTDibbler|c")])
echo("getFilterWildcard", "{host=wildcard(*morpork.com)}", [("wildcard", "host", True, "*morpork.com")])
echo("getFilterWildcardInsensitive", "{host=iwildcard(*morpork.com)}", [("iwildcard", "host", True, "*morpork.com")])
echo("getFilterWildcardImplicit (case-insensitive, named wildcard)", "{host=*MORPORK.com}",
     [("wildcard", "host", True, "*MORPORK.com")])
echo("getFilterPipe", "{host=literal_or(CMTDibbler|c)}", [("literal_or", "host", True, "CMTDibbler|c")])
echo("getFilterPipeInsensitive", "{host=iliteral_or(cmtdibbler|C)}", [("iliteral_or", "host", True, "cmtdibbler|C")])
echo("getFilterRegex", "{host=regexp(.*morpork.com)}", [("regexp", "host", True, ".*morpork.com")])
echo("getFilterRegexCase (type names in any case)", "{host=REGEXP(.*morpork.com)}", [("regexp", "host", True, ".*morpork.com")])
st, b = req("/api/query?" + R + "m=none:flt.m" + urllib.parse.quote("{host=*MORPORK.com}", safe=""))
report(F + ".getFilterWildcardImplicit matches case-insensitively",
       "" if st == 200 and len(json.loads(b)) == 2 else "status %d" % st, b)
# in m= an empty value fails Tags.parse first ("invalid tag"); a body's filter reaches getFilter
refused(F, "getFilterEmptyFilter (m=)", "host=", "invalid tag: host=")
refused(F, "getFilterEmptyFilter (POST)", None, "Filter cannot be null or empty",
        body=json.dumps({"start": 1356998400, "queries": [{"aggregator": "sum", "metric": "flt.m",
                                                          "tags": {"host": ""}}]}))
refused(F, "getFilterMissingClosingParens", "host=regexp(.*sugarbean", "Filter must end with a ')': regexp(.*sugarbean")
refused(F, "getFilterEmptyParens", "host=regexp()", "Filter cannot be null or empty")
refused(F, "getFilterUnknownType", "host=dummyfilter(nothere)", "Could not find a filter for type: dummyfilter")
echo("tagsToFiltersOldGroupBy", {"owner": "Hrun", "host": "CMTDibbler|c", "colo": "*"},
     [("literal_or", "owner", True, "Hrun"), ("literal_or", "host", True, "CMTDibbler|c"),
      ("wildcard", "colo", True, "*")], [])
echo("tagsToFiltersNewFunctions", {"host": "*morpork.com", "owner": "wildcard(*run*)"},
     [("wildcard", "host", True, "*morpork.com"), ("wildcard", "owner", True, "*run*")], [])
refused(F, "tagsToFiltersNoSuchFunction", None, "Could not find a filter for type: doesnotexist",
        body=json.dumps({"start": 1356998400, "queries": [{"aggregator": "sum", "metric": "flt.m",
                                                          "tags": {"host": "doesnotexist(*beybi)"}}]}))
# tagsToFiltersDuplicate (a "tags" entry equal to a "filters" entry turns that one into a group
# by instead of adding a second) is not reproduced: ctsdb keeps both; the answers are the same.
echo("tagsToFiltersSameTagDiffValues", {"host": "*morpork.com"},
     [("wildcard", "host", True, "*morpork.com"), ("iwildcard", "host", False, "ogg*")],
     [{"type": "iwildcard", "tagk": "host", "filter": "ogg*", "groupBy": False}])

# group by: a group-by filter splits the answers by its key's values, a plain filter does not
st, b = req("/api/query?" + R + "m=sum:flt.m" + urllib.parse.quote("{host=iwildcard(*morpork.com)}", safe=""))
d = json.loads(b) if st == 200 else []
report("group by: one answer per value of a group-by key",
       "" if sorted(a["tags"]["host"] for a in d) == sorted([O, "ogg-01.ops.ankh.MORPORK.com"]) else "answers %r" % d, b)
st, b = req("/api/query?" + R + "m=sum:flt.m" + urllib.parse.quote("{}{host=iwildcard(*morpork.com)}", safe=""))
d = json.loads(b) if st == 200 else []
report("a filter without group by: one answer, host aggregated, the sum of both",
       "" if len(d) == 1 and d[0]["aggregateTags"] == ["host"] and list(d[0]["dps"].values()) == [5] else "answers %r" % d, b)
# /api/config/filters: every type with a description and examples
st, b = req("/api/config/filters")
try:
    d = json.loads(b)
    why = "" if st == 200 and sorted(d) == sorted(["literal_or", "iliteral_or", "not_literal_or",
          "not_iliteral_or", "wildcard", "iwildcard", "regexp", "not_key"]) and \
          all(v.get("description") and v.get("examples") for v in d.values()) else "answer"
except ValueError:
    why = "not JSON"
report("/api/config/filters lists the eight types", why, b)
finish()
PY
[ $? -eq 0 ] || IT_FAILS=$((IT_FAILS + 1))
tsd_stop
tsd_logs_check
it_done
