/* test_qexpr.c - the /api/query/exp arithmetic: parsing (precedence, associativity, unary minus,
 * parentheses, errors with positions), every operator, both join modes and every fill policy,
 * against answers worked out by hand (comments show the arithmetic). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/qexpr.h"
#include "tests/lib/ctest.h"

static const int64_t TS3[] = {10, 20, 30};
static const int64_t TS2[] = {20, 40};

/* Evaluates src with a = {host=x: 10,20,30 @10,20,30}, b = {host=x: 2,4 @20,40}. */
static struct qexpr_result *run(const char *src, enum qexpr_join join, enum qexpr_fill fa,
                                enum qexpr_fill fb, double fv, size_t *n)
{
    static const double av[] = {10, 20, 30};
    static const double bv[] = {2, 4};
    struct qexpr_series a = {"host=x", 3, TS3, av, NULL};
    struct qexpr_series b = {"host=x", 2, TS2, bv, NULL};
    struct qexpr_input in[] = {{"a", &a, 1, fa, fv, NULL, 0}, {"b", &b, 1, fb, fv, NULL, 0}};
    struct qexpr *e;
    struct ct_err err = {0};
    assert_int_equal(qexpr_parse(src, &e, &err), 0);
    struct qexpr_result *r;
    assert_int_equal(qexpr_eval(e, in, 2, join, &r, n, &err), 0);
    qexpr_free(e);
    return r;
}

static void test_qexpr_operators_and_precedence(void **state)
{
    (void)state;
    size_t n;
    /* fill zero on b: ts 10: a=10 b=0; 20: 20,2; 30: 30,0; 40: a=0 (zero) b=4 */
    struct qexpr_result *r =
        run("a + b * 2", QEXPR_JOIN_INTERSECTION, QEXPR_FILL_ZERO, QEXPR_FILL_ZERO, 0, &n);
    assert_int_equal(n, 1);
    assert_string_equal(r[0].key, "host=x");
    assert_int_equal(r[0].n, 4);
    const int64_t ets[] = {10, 20, 30, 40};
    const double ev[] = {10, 24, 30, 8}; /* 10+0, 20+4, 30+0, 0+8 */
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(r[0].ts[i], ets[i]);
        assert_true(r[0].v[i] == ev[i]);
    }
    qexpr_results_free(r, n);

    r = run("(a + b) * 2", QEXPR_JOIN_INTERSECTION, QEXPR_FILL_ZERO, QEXPR_FILL_ZERO, 0, &n);
    assert_true(r[0].v[1] == 44); /* (20+2)*2 */
    qexpr_results_free(r, n);
    r = run("a - b - 1", QEXPR_JOIN_INTERSECTION, QEXPR_FILL_ZERO, QEXPR_FILL_ZERO, 0, &n);
    assert_true(r[0].v[1] == 17); /* (20-2)-1, left associative */
    qexpr_results_free(r, n);
    r = run("a / b / 2", QEXPR_JOIN_INTERSECTION, QEXPR_FILL_ZERO, QEXPR_FILL_ZERO, 0, &n);
    assert_true(r[0].v[1] == 5);   /* (20/2)/2 */
    assert_true(r[0].v[0] == 0); /* 10/0: 0, as JEXL's lenient division */
    qexpr_results_free(r, n);
    r = run("-a * -2 + b", QEXPR_JOIN_INTERSECTION, QEXPR_FILL_ZERO, QEXPR_FILL_ZERO, 0, &n);
    assert_true(r[0].v[1] == 42); /* -20*-2+2 */
    qexpr_results_free(r, n);
    r = run("a*1.5e1", QEXPR_JOIN_INTERSECTION, QEXPR_FILL_ZERO, QEXPR_FILL_ZERO, 0, &n);
    assert_true(r[0].v[0] == 150);
    qexpr_results_free(r, n);
}

static void test_qexpr_fill_policies(void **state)
{
    (void)state;
    size_t n;
    /* nan: ts 10 a=10 b=NaN -> NaN; 20 -> 22 */
    struct qexpr_result *r =
        run("a + b", QEXPR_JOIN_INTERSECTION, QEXPR_FILL_NAN, QEXPR_FILL_NAN, 0, &n);
    assert_int_equal(r[0].n, 4);
    assert_true(isnan(r[0].v[0]));
    assert_true(r[0].v[1] == 22);
    assert_true(isnan(r[0].v[3]));
    qexpr_results_free(r, n);
    /* scalar 100: 10+100, 20+2, 30+100, 100+4 */
    r = run("a + b", QEXPR_JOIN_INTERSECTION, QEXPR_FILL_SCALAR, QEXPR_FILL_SCALAR, 100, &n);
    assert_true(r[0].v[0] == 110 && r[0].v[1] == 22 && r[0].v[2] == 130 && r[0].v[3] == 104);
    qexpr_results_free(r, n);
    /* none and null are NaN values, as OpenTSDB's NumericFillPolicy: no timestamp dropped */
    r = run("a + b", QEXPR_JOIN_INTERSECTION, QEXPR_FILL_ZERO, QEXPR_FILL_NONE, 0, &n);
    assert_int_equal(r[0].n, 4);
    assert_true(isnan(r[0].v[0]) && r[0].v[1] == 22 && isnan(r[0].v[2]) && r[0].v[3] == 4);
    qexpr_results_free(r, n);
    r = run("a + b", QEXPR_JOIN_INTERSECTION, QEXPR_FILL_NULL, QEXPR_FILL_ZERO, 0, &n);
    assert_int_equal(r[0].n, 4);
    assert_true(r[0].v[0] == 10 && r[0].v[1] == 22 && r[0].v[2] == 30 && isnan(r[0].v[3]));
    qexpr_results_free(r, n);

    assert_int_equal(qexpr_fill_parse("nan"), QEXPR_FILL_NAN);
    assert_int_equal(qexpr_fill_parse("zero"), QEXPR_FILL_ZERO);
    assert_int_equal(qexpr_fill_parse("scalar"), QEXPR_FILL_SCALAR);
    assert_int_equal(qexpr_fill_parse("none"), QEXPR_FILL_NONE);
    assert_int_equal(qexpr_fill_parse("null"), QEXPR_FILL_NULL);
    assert_int_equal(qexpr_fill_parse("bogus"), -1);
}

static void test_qexpr_joins(void **state)
{
    (void)state;
    static const int64_t ts[] = {1};
    static const double one[] = {1}, two[] = {2}, five[] = {5};
    struct qexpr_series a[] = {{"host=x", 1, ts, one, NULL}, {"host=y", 1, ts, two, NULL}};
    struct qexpr_series b[] = {{"host=y", 1, ts, five, NULL}, {"host=z", 1, ts, five, NULL}};
    struct qexpr_input in[] = {{"a", a, 2, QEXPR_FILL_ZERO, 0, NULL, 0},
                               {"b", b, 2, QEXPR_FILL_ZERO, 0, NULL, 0}};
    struct qexpr *e, *e2;
    struct ct_err err = {0};
    assert_int_equal(qexpr_parse("a * b", &e, &err), 0);
    assert_int_equal(qexpr_nvars(e), 2);
    assert_string_equal(qexpr_var(e, 0), "a");
    struct qexpr_result *r;
    size_t n;
    assert_int_equal(qexpr_eval(e, in, 2, QEXPR_JOIN_INTERSECTION, &r, &n, &err), 0);
    assert_int_equal(n, 1); /* only host=y in both: 2*5 */
    assert_string_equal(r[0].key, "host=y");
    assert_true(r[0].v[0] == 10);
    qexpr_results_free(r, n);
    assert_int_equal(qexpr_eval(e, in, 2, QEXPR_JOIN_UNION, &r, &n, &err), 0);
    assert_int_equal(n, 3); /* x: 1*0, y: 2*5, z: 0*5, sorted by key */
    assert_string_equal(r[0].key, "host=x");
    assert_true(r[0].v[0] == 0);
    assert_string_equal(r[1].key, "host=y");
    assert_true(r[1].v[0] == 10);
    assert_string_equal(r[2].key, "host=z");
    assert_true(r[2].v[0] == 0);
    qexpr_results_free(r, n);
    /* OpenTSDB's UnionIterator: a variable with no series of a key counts 0, whatever its
     * fill (here scalar 7 and nan); a NaN value of a series it has takes its fill (7) */
    static const double nan1[] = {NAN};
    struct qexpr_series an[] = {{"host=x", 1, ts, nan1, NULL}, {"host=y", 1, ts, two, NULL}};
    struct qexpr_input inf[] = {{"a", an, 2, QEXPR_FILL_SCALAR, 7, NULL, 0},
                                {"b", b, 2, QEXPR_FILL_NAN, 0, NULL, 0}};
    assert_int_equal(qexpr_eval(e, inf, 2, QEXPR_JOIN_UNION, &r, &n, &err), 0);
    assert_int_equal(n, 3); /* x: 7*0 (b absent: 0, not NaN), y: 2*5, z: 0*5 (a absent: 0) */
    assert_true(r[0].v[0] == 0);
    assert_true(r[1].v[0] == 10);
    assert_true(r[2].v[0] == 0);
    qexpr_results_free(r, n);
    assert_int_equal(qexpr_parse("a + b", &e2, &err), 0);
    assert_int_equal(qexpr_eval(e2, inf, 2, QEXPR_JOIN_UNION, &r, &n, &err), 0);
    assert_true(r[0].v[0] == 7); /* x: NaN bound to a's fill 7, + 0 */
    qexpr_results_free(r, n);
    qexpr_free(e2);
    /* a variable with no input is an error naming it */
    qexpr_free(e);
    assert_int_equal(qexpr_parse("a + c", &e, &err), 0);
    assert_int_equal(qexpr_eval(e, in, 2, QEXPR_JOIN_UNION, &r, &n, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "'c'"));
    qexpr_free(e);
}

/* OpenTSDB 2.4's flattenTags: tags (only the query tag keys under useQueryTags), then the
 * aggregated tag keys (under includeAggTags); no tags at all is the empty key. */
static void test_qexpr_join_key(void **state)
{
    (void)state;
    static const char *const host[] = {"host"};
    struct qexpr_join_opts plain = {QEXPR_JOIN_UNION, false, true};
    struct qexpr_join_opts noagg = {QEXPR_JOIN_UNION, false, false};
    struct qexpr_join_opts qt = {QEXPR_JOIN_UNION, true, true};
    struct qexpr_join_opts qtnoagg = {QEXPR_JOIN_UNION, true, false};
    struct ct_err err = {0};
    char k[64];
    assert_int_equal(qexpr_join_key("dc=1,host=a", "cpu", host, 1, &plain, k, sizeof(k), &err), 0);
    assert_string_equal(k, "dc=1,host=a|cpu");
    assert_int_equal(qexpr_join_key("dc=1,host=a", "cpu", host, 1, &noagg, k, sizeof(k), &err), 0);
    assert_string_equal(k, "dc=1,host=a");
    assert_int_equal(qexpr_join_key("dc=1,host=a", "cpu", host, 1, &qt, k, sizeof(k), &err), 0);
    assert_string_equal(k, "host=a|cpu");
    assert_int_equal(qexpr_join_key("dc=1,host=a", NULL, host, 1, &qt, k, sizeof(k), &err), 0);
    assert_string_equal(k, "host=a");
    /* useQueryTags with no filter: no tag is kept, the aggregated keys only */
    assert_int_equal(qexpr_join_key("dc=1,host=a", "cpu", NULL, 0, &qt, k, sizeof(k), &err), 0);
    assert_string_equal(k, "|cpu");
    assert_int_equal(qexpr_join_key("dc=1,host=a", "cpu", NULL, 0, &qtnoagg, k, sizeof(k), &err),
                     0);
    assert_string_equal(k, "");
    /* a series with no tags: the empty key, aggregated keys or not */
    assert_int_equal(qexpr_join_key("", "cpu,dc", NULL, 0, &plain, k, sizeof(k), &err), 0);
    assert_string_equal(k, "");
    /* a tag key that only starts like a query tag key is not one */
    assert_int_equal(qexpr_join_key("hostname=x", NULL, host, 1, &qt, k, sizeof(k), &err), 0);
    assert_string_equal(k, "");
    assert_int_equal(qexpr_join_key("dc=1,host=a", "cpu", host, 1, &plain, k, 8, &err), CT_ELIMIT);
}

/* TestIntersectionIterator's / TestUnionIterator's flattenTags cases, the tag UIDs as names: tags
 * {a=a, b=b}, aggregated {c}, query tag keys {a}. */
static void test_qexpr_join_key_flatten_cases(void **state)
{
    (void)state;
    static const char *const qa[] = {"a"};
    static const struct {
        const char *name, *tags, *agg;
        size_t nq;
        bool qt, at;
        const char *want;
    } c[] = {
        {"flattenTags", "a=a,b=b", "c", 1, false, false, "a=a,b=b"},
        {"flattenTagsWithAgg", "a=a,b=b", "c", 1, false, true, "a=a,b=b|c"},
        {"flattenTagsQueryTags", "a=a,b=b", "c", 1, true, false, "a=a"},
        {"flattenTagsQueryTagsWithAgg", "a=a,b=b", "c", 1, true, true, "a=a|c"},
        {"flattenEmptyTags", "", "c", 1, false, false, ""},
        {"flattenEmptyTagsWithAggEmpty", "a=a,b=b", "", 1, false, true, "a=a,b=b"},
        {"flattenTagsQueryTagsEmpty", "a=a,b=b", "c", 0, true, false, ""},
        {"flattenTagsQueryTagsEmptyWithAgg", "a=a,b=b", "c", 0, true, true, "|c"},
        {"flattenTagsNullAggTagsNotRequested", "a=a,b=b", NULL, 1, false, false, "a=a,b=b"},
    };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        struct qexpr_join_opts o = {QEXPR_JOIN_INTERSECTION, c[i].qt, c[i].at};
        struct ct_err err = {0};
        char k[64];
        assert_int_equal(qexpr_join_key(c[i].tags, c[i].agg, qa, c[i].nq, &o, k, sizeof(k), &err),
                         0);
        if (strcmp(k, c[i].want) != 0)
            fail_msg("%s: \"%s\", want \"%s\"", c[i].name, k, c[i].want);
    }
}

/* OpenTSDB's JEXL expressions beyond + - * /: % (fmod) on the level of * and /, and the
 * comparisons as 1 or 0, relations above equality, both below + and - (TestExpressionIterator's
 * aModBWithTwoSeries, aGreaterThanb, aLessThanb). a = 10, 20, 30. */
static void test_qexpr_mod_and_comparisons(void **state)
{
    (void)state;
    static const int64_t ts[] = {1, 2, 3};
    static const double av[] = {10, 20, 30};
    struct qexpr_series a = {"host=x", 3, ts, av, NULL};
    struct qexpr_input in[] = {{"a", &a, 1, QEXPR_FILL_ZERO, 0, NULL, 0}};
    static const struct {
        const char *src;
        double want[3];
    } c[] = {
        {"a % 4", {2, 0, 2}},          {"a * 3 % 7", {2, 4, 6}}, /* (a * 3) % 7: one level, left to right */
        {"a % 7 * 3", {9, 18, 6}},     {"-a % 4", {-2, 0, -2}}, /* the dividend's sign */
        {"a > 15", {0, 1, 1}},         {"a < 15", {1, 0, 0}},    {"a <= 20", {1, 1, 0}},
        {"a >= 20", {0, 1, 1}},        {"a == 20", {0, 1, 0}},   {"a != 20", {1, 0, 1}},
        {"a + 1 > 2 * 10", {0, 1, 1}}, /* (a + 1) > 20 */
        {"a < 15 == 1", {1, 0, 0}},    /* (a < 15) == 1 */
        {"(a > 15) * 2", {0, 2, 2}},
        /* JEXL's logical operators: 1 or 0, a number true unless 0 or NaN */
        {"!(a > 15)", {1, 0, 0}},      {"!a", {0, 0, 0}},        {"!!a", {1, 1, 1}},
        {"a > 15 && a < 25", {0, 1, 0}}, {"a < 15 || a > 25", {1, 0, 1}},
        {"a > 5 || a > 15 && a < 0", {1, 1, 1}}, /* && binds tighter than || */
        {"(a > 5 || a > 15) && a < 25", {1, 1, 0}},
        {"a - 20 && 1", {1, 0, 1}},    {"a == 20 != 0", {0, 1, 0}},
        {"a > 15 ? a : -a", {-10, 20, 30}}, {"a - 20 ?: 7", {-10, 7, 10}},
        {"a < 15 ? 1 : a < 25 ? 2 : 3", {1, 2, 3}}, /* right associative */
        {"a > 15 ? a > 25 ? 9 : 8 : 7", {7, 8, 9}},
        {"1 + (a > 15 ? 1 : 0) * 2", {1, 3, 3}}, {"a != 20 ? a % 7 : 0 / 0", {3, 0, 2}},
    };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        struct qexpr *e;
        struct ct_err err = {0};
        struct qexpr_result *r;
        size_t n;
        if (qexpr_parse(c[i].src, &e, &err) != 0)
            fail_msg("%s: %s", c[i].src, err.msg);
        assert_int_equal(qexpr_eval(e, in, 1, QEXPR_JOIN_UNION, &r, &n, &err), 0);
        assert_int_equal(n, 1);
        for (size_t k = 0; k < 3; k++)
            if (r[0].v[k] != c[i].want[k])
                fail_msg("%s at %zu: %g, want %g", c[i].src, k, r[0].v[k], c[i].want[k]);
        qexpr_results_free(r, n);
        qexpr_free(e);
    }
    /* % by zero is 0, as / by zero (JEXL's lenient arithmetic) */
    struct qexpr *e;
    struct ct_err err = {0};
    struct qexpr_result *r;
    size_t n;
    assert_int_equal(qexpr_parse("a % 0", &e, &err), 0);
    assert_int_equal(qexpr_eval(e, in, 1, QEXPR_JOIN_UNION, &r, &n, &err), 0);
    assert_true(r[0].v[0] == 0);
    qexpr_results_free(r, n);
    qexpr_free(e);
}

static size_t eval_join(const char *src, const struct qexpr_input *in, size_t nin,
                        enum qexpr_join op, bool qt, bool agg, struct qexpr_result **r)
{
    struct qexpr *e;
    struct ct_err err = {0};
    size_t n = 0;
    struct qexpr_join_opts o = {op, qt, agg};
    assert_int_equal(qexpr_parse(src, &e, &err), 0);
    assert_int_equal(qexpr_eval_join(e, in, nin, &o, r, &n, &err), 0);
    qexpr_free(e);
    return n;
}

/* useQueryTags: series whose other tags differ match on the filters' tag keys; the result has the
 * first variable's tags. */
static void test_qexpr_eval_join_query_tags(void **state)
{
    (void)state;
    static const int64_t ts[] = {1};
    static const double one[] = {1}, two[] = {2}, ten[] = {10}, twenty[] = {20};
    static const char *const host[] = {"host"};
    struct qexpr_series a[] = {{"host=web01,owner=alice", 1, ts, one, NULL},
                               {"host=web02,owner=bob", 1, ts, two, NULL}};
    struct qexpr_series b[] = {{"host=web01,owner=carol", 1, ts, ten, NULL},
                               {"host=web02,owner=dave", 1, ts, twenty, NULL}};
    struct qexpr_input in[] = {{"a", a, 2, QEXPR_FILL_ZERO, 0, host, 1},
                               {"b", b, 2, QEXPR_FILL_ZERO, 0, host, 1}};
    struct qexpr_result *r;
    assert_int_equal(eval_join("a + b", in, 2, QEXPR_JOIN_INTERSECTION, false, true, &r), 0);
    qexpr_results_free(r, 0);
    assert_int_equal(eval_join("a + b", in, 2, QEXPR_JOIN_INTERSECTION, true, true, &r), 2);
    assert_string_equal(r[0].key, "host=web01,owner=alice"); /* a's tags: a is named first */
    assert_string_equal(r[0].agg, "");
    assert_true(r[0].v[0] == 11); /* 1 + 10 */
    assert_string_equal(r[1].key, "host=web02,owner=bob");
    assert_true(r[1].v[0] == 22); /* 2 + 20 */
    qexpr_results_free(r, 2);
    assert_int_equal(eval_join("b - a", in, 2, QEXPR_JOIN_INTERSECTION, true, true, &r), 2);
    assert_string_equal(r[0].key, "host=web01,owner=carol"); /* b named first */
    assert_true(r[0].v[0] == 9);
    qexpr_results_free(r, 2);
    /* two series of one variable on one join key: the later is kept (OpenTSDB's map put) */
    struct qexpr_series c[] = {{"host=web01,owner=x", 1, ts, ten, NULL},
                               {"host=web01,owner=y", 1, ts, twenty, NULL}};
    struct qexpr_input ic[] = {{"c", c, 2, QEXPR_FILL_ZERO, 0, host, 1}};
    assert_int_equal(eval_join("c * 2", ic, 1, QEXPR_JOIN_UNION, true, true, &r), 1);
    assert_string_equal(r[0].key, "host=web01,owner=y");
    assert_true(r[0].v[0] == 40);
    qexpr_results_free(r, 1);
    assert_int_equal(eval_join("c * 2", ic, 1, QEXPR_JOIN_UNION, false, true, &r), 2);
    qexpr_results_free(r, 2);
}

/* includeAggTags (default true): a group that aggregated tag key dc does not match a series with
 * the same tags and no aggregated key; without it they match and the result lists dc. */
static void test_qexpr_eval_join_agg_tags(void **state)
{
    (void)state;
    static const int64_t ts[] = {1};
    static const double one[] = {1}, five[] = {5};
    struct qexpr_series a[] = {{"host=web01", 1, ts, five, "dc"}};
    struct qexpr_series b[] = {{"host=web01", 1, ts, one, NULL}};
    struct qexpr_input in[] = {{"a", a, 1, QEXPR_FILL_ZERO, 0, NULL, 0},
                               {"b", b, 1, QEXPR_FILL_ZERO, 0, NULL, 0}};
    struct qexpr_result *r;
    assert_int_equal(eval_join("a + b", in, 2, QEXPR_JOIN_INTERSECTION, false, true, &r), 0);
    qexpr_results_free(r, 0);
    /* union: two results, sorted by join key ("host=web01" < "host=web01|dc") */
    assert_int_equal(eval_join("a + b", in, 2, QEXPR_JOIN_UNION, false, true, &r), 2);
    assert_string_equal(r[0].key, "host=web01");
    assert_string_equal(r[0].agg, "");
    assert_true(r[0].v[0] == 1); /* a filled with zero: 0 + 1 */
    assert_string_equal(r[1].key, "host=web01");
    assert_string_equal(r[1].agg, "dc");
    assert_true(r[1].v[0] == 5); /* 5 + 0 */
    qexpr_results_free(r, 2);
    assert_int_equal(eval_join("a + b", in, 2, QEXPR_JOIN_INTERSECTION, false, false, &r), 1);
    assert_string_equal(r[0].agg, "dc"); /* the union of the operands' aggregated keys */
    assert_true(r[0].v[0] == 6);
    qexpr_results_free(r, 1);
    /* aggregated keys of both operands merged, sorted, once each */
    struct qexpr_series c[] = {{"host=web01", 1, ts, one, "rack,dc"}};
    struct qexpr_input ic[] = {in[0], {"c", c, 1, QEXPR_FILL_ZERO, 0, NULL, 0}};
    assert_int_equal(eval_join("a * c", ic, 2, QEXPR_JOIN_INTERSECTION, false, false, &r), 1);
    assert_string_equal(r[0].agg, "dc,rack");
    qexpr_results_free(r, 1);
}

/* Every result series has every timestamp of any series evaluated (OpenTSDB's time-synced
 * iteration): host=y's series lack ts 1 and get the fill there. */
static void test_qexpr_timestamps_shared_by_every_key(void **state)
{
    (void)state;
    static const int64_t t1[] = {1, 2}, t2[] = {2, 3};
    static const double v1[] = {1, 2}, v2[] = {20, 30};
    struct qexpr_series a[] = {{"host=x", 2, t1, v1, NULL}, {"host=y", 2, t2, v2, NULL}};
    struct qexpr_series b[] = {{"host=x", 2, t1, v1, NULL}, {"host=y", 2, t2, v2, NULL}};
    struct qexpr_input in[] = {{"a", a, 2, QEXPR_FILL_SCALAR, 7, NULL, 0},
                               {"b", b, 2, QEXPR_FILL_ZERO, 0, NULL, 0}};
    struct qexpr *e;
    struct ct_err err = {0};
    assert_int_equal(qexpr_parse("a + b", &e, &err), 0);
    struct qexpr_result *r;
    size_t n;
    assert_int_equal(qexpr_eval(e, in, 2, QEXPR_JOIN_INTERSECTION, &r, &n, &err), 0);
    assert_int_equal(n, 2);
    for (size_t k = 0; k < 2; k++) {
        assert_int_equal(r[k].n, 3);
        assert_int_equal(r[k].ts[0], 1);
        assert_int_equal(r[k].ts[2], 3);
    }
    /* x: 1+1, 2+2, 7+0 at ts 3; y: 7+0 at ts 1, 20+20, 30+30 */
    assert_true(r[0].v[0] == 2 && r[0].v[1] == 4 && r[0].v[2] == 7);
    assert_true(r[1].v[0] == 7 && r[1].v[1] == 40 && r[1].v[2] == 60);
    qexpr_results_free(r, n);
    qexpr_free(e);
    /* qexpr_sync: one input's series on the same shared timestamps, filled */
    assert_int_equal(qexpr_sync(&in[0], &r, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(r[1].n, 3);
    assert_true(r[1].v[0] == 7 && r[1].v[1] == 20 && r[1].v[2] == 30);
    assert_true(r[0].v[2] == 7);
    qexpr_results_free(r, n);
}

static void test_qexpr_parse_errors(void **state)
{
    (void)state;
    static const struct {
        const char *src, *msg;
    } bad[] = {
        {"", "unexpected end at position 0"},
        {"a +", "unexpected end at position 3"},
        {"(a + b", "expected ')' at position 6"},
        {"a + b)", "unexpected character at position 5"},
        {"a $ b", "unexpected character at position 2"},
        {"a b", "unexpected character at position 2"},
        {"a ? b", "expected ':' at position 5"},
        {"a ? b :", "unexpected end at position 7"},
        {"a && ", "unexpected end at position 5"},
        {"a & b", "unexpected character at position 2"},
        {"!", "unexpected end at position 1"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct qexpr *e = (struct qexpr *)1;
        struct ct_err err = {0};
        assert_int_equal(qexpr_parse(bad[i].src, &e, &err), CT_EINVAL);
        assert_null(e);
        if (strstr(err.msg, bad[i].msg) == NULL)
            fail_msg("'%s': got '%s'", bad[i].src, err.msg);
    }
    /* no variable: parses (JEXL parses it), evaluating it is refused */
    struct qexpr *nov;
    struct ct_err nerr = {0};
    assert_int_equal(qexpr_parse("2 * 3", &nov, &nerr), 0);
    assert_int_equal(qexpr_nvars(nov), 0);
    struct qexpr_result *nr = NULL;
    size_t nn = 0;
    assert_int_equal(qexpr_eval(nov, NULL, 0, QEXPR_JOIN_UNION, &nr, &nn, &nerr), CT_EINVAL);
    assert_non_null(strstr(nerr.msg, "names no metric"));
    assert_null(nr);
    qexpr_free(nov);
    /* nesting is bounded, never a stack overflow */
    char deep[400];
    memset(deep, '(', sizeof(deep) - 2);
    deep[sizeof(deep) - 2] = 'a';
    deep[sizeof(deep) - 1] = '\0';
    struct qexpr *e;
    struct ct_err err = {0};
    assert_int_equal(qexpr_parse(deep, &e, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "nested too deeply"));
    /* so is a chain of conditions (right associative: a ? a : a ? a : ...), and 40 of them parse */
    static char chain[200 * 6 + 2];
    for (size_t n = 0; n < 2; n++) {
        size_t k = n ? 200 : 40, len = 0;
        for (size_t i = 0; i < k; i++)
            len += (size_t)snprintf(chain + len, sizeof(chain) - len, "a?a:");
        snprintf(chain + len, sizeof(chain) - len, "a");
        struct ct_err cerr = {0};
        struct qexpr *ce = NULL;
        int rc = qexpr_parse(chain, &ce, &cerr);
        if (n) {
            assert_int_equal(rc, CT_EINVAL);
            assert_non_null(strstr(cerr.msg, "nested too deeply"));
        } else {
            assert_int_equal(rc, 0);
            qexpr_free(ce);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qexpr_operators_and_precedence),
        cmocka_unit_test(test_qexpr_fill_policies),
        cmocka_unit_test(test_qexpr_joins),
        cmocka_unit_test(test_qexpr_timestamps_shared_by_every_key),
        cmocka_unit_test(test_qexpr_parse_errors),
        cmocka_unit_test(test_qexpr_mod_and_comparisons),
        cmocka_unit_test(test_qexpr_join_key),
        cmocka_unit_test(test_qexpr_join_key_flatten_cases),
        cmocka_unit_test(test_qexpr_eval_join_query_tags),
        cmocka_unit_test(test_qexpr_eval_join_agg_tags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
