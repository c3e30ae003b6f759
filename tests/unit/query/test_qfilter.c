/* test_qfilter.c - OpenTSDB tag value filters, table-driven: every type's match rule (including
 * series without the tag key), case folding, the m= shorthand and the error messages. */
#include <stdlib.h>
#include <string.h>

#include "query/qfilter.h"
#include "tests/lib/ctest.h"

static void test_qfilter_match_rules_per_type(void **state)
{
    (void)state;
    static const struct {
        const char *type, *expr, *value; /* value NULL: the series lacks the key */
        bool want;
    } cases[] = {
        {"literal_or", "web01|web02", "web01", true},
        {"literal_or", "web01|web02", "web02", true},
        {"literal_or", "web01|web02", "web03", false},
        {"literal_or", "web01", "WEB01", false},
        {"literal_or", "web01", NULL, false},
        {"iliteral_or", "WEB01|x", "web01", true},
        {"iliteral_or", "web01", "Web01", true},
        {"not_literal_or", "web01", "web01", false},
        {"not_literal_or", "web01", "web02", true},
        {"not_literal_or", "web01", NULL, true},
        {"not_iliteral_or", "WEB01", "web01", false},
        {"not_iliteral_or", "WEB01", NULL, true},
        {"wildcard", "web*", "web01", true},
        {"wildcard", "web*", "Web01", false},
        {"wildcard", "web*", NULL, false},
        {"wildcard", "*", "anything", true},
        {"wildcard", "*.lga.*", "a.lga.b", true},
        {"wildcard", "*.lga.*", "a.sjc.b", false},
        {"wildcard", "web*01", "web-x-01", true},
        {"wildcard", "web*01", "web-x-02", false},
        {"wildcard", "*01", "web01", true},
        {"iwildcard", "WEB*", "web01", true},
        {"iwildcard", "*Lga*", "x.LGA.y", true},
        {"regexp", "^web[0-9]+$", "web01", true},
        {"regexp", "^web[0-9]+$", "webx", false},
        {"regexp", "eb", "web01", true}, /* find(), not matches() */
        {"regexp", ".*", NULL, false},
        {"not_key", "", NULL, true},
        {"not_key", "", "x", false},
        {"LITERAL_OR", "a", "a", true}, /* type names are case-insensitive */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct qfilter *f = NULL;
        struct ct_err err = {0};
        assert_int_equal(qfilter_new(cases[i].type, "host", cases[i].expr, false, &f, &err), CT_OK);
        if (qfilter_match(f, cases[i].value) != cases[i].want)
            fail_msg("case %zu: %s(%s) on %s", i, cases[i].type, cases[i].expr,
                     cases[i].value ? cases[i].value : "(none)");
        qfilter_free(f);
    }
}

static void test_qfilter_errors_use_opentsdb_messages(void **state)
{
    (void)state;
    static const struct {
        const char *type, *expr, *msg;
    } bad[] = {
        {"foo", "x", "Could not find a filter for type: foo"},
        {"literal_or", "", "Filter cannot be null or empty"},
        {"literal_or", "|", "Filter must contain more than just a pipe"},
        {"wildcard", "abc", "Filter must contain an asterisk"},
        {"not_key", "x", "The filter must be empty for the not_key filter"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct qfilter *f = NULL;
        struct ct_err err = {0};
        assert_int_equal(qfilter_new(bad[i].type, "host", bad[i].expr, false, &f, &err), CT_EINVAL);
        assert_string_equal(err.msg, bad[i].msg);
        assert_null(f);
    }
    struct qfilter *f = NULL;
    struct ct_err err = {0};
    assert_int_equal(qfilter_new("regexp", "host", "(web", false, &f, &err), CT_EINVAL);
    /* like Java's PatternSyntaxException: the problem, "near index N", then the pattern */
    assert_non_null(strstr(err.msg, "near index 4\n(web"));
    assert_null(f);
}

/* java.util.regex syntax that POSIX ERE lacks, matched with Matcher.find() (unanchored). */
static void test_qfilter_regexp_follows_java_pattern_syntax(void **state)
{
    (void)state;
    static const struct {
        const char *expr, *value;
        bool want;
    } cases[] = {
        {"web\\d+", "web01", true},
        {"^web\\d+$", "web0x", false},
        {"\\w+\\.lga", "db-1.lga", true},
        {"^\\S+$", "a b", false},
        {"(?i)^WEB", "web01", true},
        {"^web(?=0)", "web01", true},
        {"^web(?!0)", "web01", false},
        {"^web.*?1$", "web011", true},
        {"^a++b", "aab", true},
        {"^\\Qa.b\\E$", "a.b", true},
        {"^\\Qa.b\\E$", "axb", false},
        {"^(?<h>web)\\d", "web1", true},
        {"^\\p{L}+$", "caf\xc3\xa9", true}, /* UTF-8 letters are one character each */
        {"^caf.$", "caf\xc3\xa9", true},
        {"x{2,3}", "axxb", true},
        {"[[:digit:]]", "a1", true}, /* POSIX classes work inside brackets too */
        {"lga", "sjc", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct qfilter *f = NULL;
        struct ct_err err = {0};
        if (qfilter_new("regexp", "host", cases[i].expr, false, &f, &err) != CT_OK)
            fail_msg("case %zu: %s does not compile: %s", i, cases[i].expr, err.msg);
        if (qfilter_match(f, cases[i].value) != cases[i].want)
            fail_msg("case %zu: /%s/ on %s", i, cases[i].expr, cases[i].value);
        qfilter_free(f);
    }
}

static void test_qfilter_shorthand_picks_the_type(void **state)
{
    (void)state;
    static const struct {
        const char *value;
        enum qfilter_type type;
        const char *expr;
        const char *name; /* as echoed by showQuery */
    } cases[] = {
        {"*", QFILTER_WILDCARD, "*", "wildcard"},
        /* matches case-insensitively, named "wildcard" as OpenTSDB's shorthand filter is */
        {"web*", QFILTER_IWILDCARD, "web*", "wildcard"},
        {"iwildcard(web*)", QFILTER_IWILDCARD, "web*", "iwildcard"},
        {"regexp(web.*)", QFILTER_REGEXP, "web.*", "regexp"},
        {"not_key()", QFILTER_NOT_KEY, "", "not_key"},
        {"a|b", QFILTER_LITERAL_OR, "a|b", "literal_or"},
        {"web01", QFILTER_LITERAL_OR, "web01", "literal_or"},
        {"iliteral_or(A|b)", QFILTER_ILITERAL_OR, "A|b", "iliteral_or"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct qfilter *f = NULL;
        struct ct_err err = {0};
        assert_int_equal(qfilter_new_shorthand("host", cases[i].value, true, &f, &err), CT_OK);
        assert_int_equal(qfilter_type(f), cases[i].type);
        assert_string_equal(qfilter_expr(f), cases[i].expr);
        assert_string_equal(qfilter_type_name(f), cases[i].name);
        assert_true(qfilter_group_by(f));
        assert_string_equal(qfilter_tagk(f), "host");
        qfilter_free(f);
    }
    struct qfilter *f = NULL;
    struct ct_err err = {0};
    /* a '(' names a filter type: without the closing ')' it is an error, not a wildcard */
    assert_int_equal(qfilter_new_shorthand("host", "regexp(.*bean", false, &f, &err), CT_EINVAL);
    assert_string_equal(err.msg, "Filter must end with a ')': regexp(.*bean");
    assert_null(f);
    assert_int_equal(qfilter_new_shorthand("host", "a|b|c", false, &f, &err), CT_OK);
    size_t n = 0;
    const char *const *lits = qfilter_literals(f, &n);
    assert_int_equal(n, 3);
    assert_string_equal(lits[2], "c");
    qfilter_free(f);
    size_t ninfo = 0;
    const struct qfilter_info *info = qfilter_infos(&ninfo);
    assert_int_equal(ninfo, 8);
    assert_string_equal(info[0].name, "literal_or");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qfilter_match_rules_per_type),
        cmocka_unit_test(test_qfilter_errors_use_opentsdb_messages),
        cmocka_unit_test(test_qfilter_regexp_follows_java_pattern_syntax),
        cmocka_unit_test(test_qfilter_shorthand_picks_the_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
