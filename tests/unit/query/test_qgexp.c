/* test_qgexp.c - /api/query/gexp's Graphite-style functions: the grammar (queries rebuilt in m=
 * syntax, nesting, arguments, errors), and each function over hand-made series against answers
 * worked out by hand (the comments show the arithmetic). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "query/qgexp.h"
#include "tests/lib/ctest.h"

/* Adds series metric{host=h} with n integer points (ts in seconds) to set. */
static void add(struct qgexp_set *set, const char *metric, const char *host, const int64_t *ts,
                const double *v, size_t n, bool ints)
{
    const char *k[] = {"host"}, *val[] = {host}, *agg[] = {"rack"};
    struct qgexp_series *s = qgexp_set_add(set, metric, k, val, 1, agg, 1);
    assert_non_null(s);
    for (size_t i = 0; i < n; i++) {
        struct qagg_point p = {.ts_ms = ts[i] * 1000, .is_int = ints};
        if (ints)
            p.v.i = (int64_t)v[i];
        else
            p.v.d = v[i];
        assert_int_equal(qgexp_series_push(s, &p), CT_OK);
    }
}

static const int64_t TS[] = {0, 60, 120, 180, 240};

/* in[0] = a{host=x}: 1 11 21 31 41, a{host=y}: 0 -5 -10 -15 -20 (ints);
 * in[1] = b{host=x}: 2 2 2 2 2 at TS, b{host=z}: 4 @60 only (doubles). */
static void inputs(struct qgexp_set in[2])
{
    memset(in, 0, 2 * sizeof(in[0]));
    static const double ax[] = {1, 11, 21, 31, 41}, ay[] = {0, -5, -10, -15, -20};
    static const double bx[] = {2, 2, 2, 2, 2}, bz[] = {4};
    static const int64_t tz[] = {60};
    add(&in[0], "a", "x", TS, ax, 5, true);
    add(&in[0], "a", "y", TS, ay, 5, true);
    add(&in[1], "b", "x", TS, bx, 5, false);
    add(&in[1], "b", "z", tz, bz, 1, false);
}

/* Parses src, checks its queries are the given ones, evaluates it over inputs() (query i of
 * the expression -> in[i]) and returns the result. */
static struct qgexp_set run(const char *src, const char *q0, const char *q1)
{
    struct qgexp *e = NULL;
    struct ct_err err = {0};
    int rc = qgexp_parse(src, &e, &err);
    if (rc != CT_OK)
        fail_msg("%s: %s", src, err.msg);
    assert_string_equal(qgexp_query(e, 0), q0);
    if (q1)
        assert_string_equal(qgexp_query(e, 1), q1);
    assert_int_equal(qgexp_nqueries(e), q1 ? 2 : 1);
    struct qgexp_set in[2], out = {0};
    inputs(in);
    rc = qgexp_eval(e, in, 0, 1000000, &out, &err);
    if (rc != CT_OK)
        fail_msg("%s: %s", src, err.msg);
    qgexp_set_clear(&in[0]);
    qgexp_set_clear(&in[1]);
    qgexp_free(e);
    return out;
}

/* The error message of evaluating src (which parses). */
static void eval_error(const char *src, const char *want)
{
    struct qgexp *e = NULL;
    struct ct_err err = {0};
    assert_int_equal(qgexp_parse(src, &e, &err), CT_OK);
    struct qgexp_set in[2], out = {0};
    inputs(in);
    assert_int_equal(qgexp_eval(e, in, 0, 1000000, &out, &err), CT_EINVAL);
    if (strstr(err.msg, want) == NULL)
        fail_msg("%s: [%s] not in [%s]", src, want, err.msg);
    assert_int_equal(out.n, 0);
    qgexp_set_clear(&in[0]);
    qgexp_set_clear(&in[1]);
    qgexp_free(e);
}

static double val(const struct qgexp_series *s, size_t i)
{
    return qagg_point_double(&s->p[i]);
}

static void test_qgexp_grammar(void **state)
{
    (void)state;
    /* a query keeps its aggregator, downsampler, rate and tag filters, blanks dropped */
    struct qgexp *e = NULL;
    struct ct_err err = {0};
    assert_int_equal(qgexp_parse(" scale ( sum:1m-avg:rate:sys.cpu{host=web*, dc=a|b} , 2 ) ", &e,
                                 &err),
                     CT_OK);
    assert_int_equal(qgexp_nqueries(e), 1);
    assert_string_equal(qgexp_query(e, 0), "sum:1m-avg:rate:sys.cpu{host=web*,dc=a|b}");
    qgexp_free(e);
    /* nested functions: queries in order of appearance */
    assert_int_equal(qgexp_parse("sumSeries(scale(sum:a,3),absolute(max:b{h=*}))", &e, &err),
                     CT_OK);
    assert_int_equal(qgexp_nqueries(e), 2);
    assert_string_equal(qgexp_query(e, 0), "sum:a");
    assert_string_equal(qgexp_query(e, 1), "max:b{h=*}");
    qgexp_free(e);

    static const struct {
        const char *src, *msg;
    } bad[] = {
        {"", "Failed to parse the expression: it is empty"},
        {"sum:a", "expected '('"},
        {"nope(sum:a)", "Function nope has not been implemented"},
        {"scale(sum:a,2", "expected ',' or ')'"},
        {"scale()", "expected a name"},
        {"scalesys.cpu)", "Function scalesys.cpu has not been implemented"},
        {"avg:a", "Function avg has not been implemented"},
        {"Scale(sum:a,2)", "Function Scale has not been implemented"},
        {"scale(sum:a,, 2)", "expected a name"},
        {"scale(sum:a{host},2)", "expected '='"},
        {"scale(sum:a{host=x,2)", "expected '='"},
        {"scale(sum:a:b:c:d:e,2)", "too many ':'"},
        {"scale(sum:a,2) extra", "unexpected text"},
        {"scale(sum:a,(2))", "expected a name"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        e = NULL;
        assert_int_equal(qgexp_parse(bad[i].src, &e, &err), CT_EINVAL);
        assert_null(e);
        if (strstr(err.msg, bad[i].msg) == NULL)
            fail_msg("%s: [%s] not in [%s]", bad[i].src, bad[i].msg, err.msg);
    }
    /* a function without a metric query parses (OpenTSDB: the NAME is an argument) and
     * answers no series, whatever its arguments (scale() reads no factor then); a function
     * of a function that answered nothing answers nothing */
    const char *none[] = {"scale(sys.cpu)", "   scale(sys.cpu)  ", "sumSeries(x)",
                          "alias(scale(y),z)"};
    for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
        assert_int_equal(qgexp_parse(none[i], &e, &err), CT_OK);
        assert_int_equal(qgexp_nqueries(e), 0);
        struct qgexp_set in[2], out = {0};
        inputs(in);
        assert_int_equal(qgexp_eval(e, in, 0, 1000000, &out, &err), CT_OK);
        assert_int_equal(out.n, 0);
        qgexp_set_clear(&in[0]);
        qgexp_set_clear(&in[1]);
        qgexp_free(e);
    }
    /* nesting is bounded */
    char deep[1200] = "";
    for (int i = 0; i < 40; i++)
        strcat(deep, "absolute(");
    strcat(deep, "sum:a");
    for (int i = 0; i < 40; i++)
        strcat(deep, ")");
    assert_int_equal(qgexp_parse(deep, &e, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "nested too deep"));
}

static void test_qgexp_scale_absolute_alias(void **state)
{
    (void)state;
    /* scale by an integer keeps integers: 1*3 = 3 ... -20*3 = -60 */
    struct qgexp_set r = run("scale(sum:a,3)", "sum:a", NULL);
    assert_int_equal(r.n, 2);
    assert_true(r.s[0].p[1].is_int);
    assert_int_equal(r.s[0].p[1].v.i, 33);
    assert_int_equal(r.s[1].p[4].v.i, -60);
    assert_string_equal(r.s[1].tagv[0], "y");
    assert_string_equal(r.s[1].agg[0], "rack");
    qgexp_set_clear(&r);
    /* by a fraction: doubles, 11 * 0.5 = 5.5 */
    r = run("scale(sum:a,0.5)", "sum:a", NULL);
    assert_false(r.s[0].p[1].is_int);
    assert_true(val(&r.s[0], 1) == 5.5);
    qgexp_set_clear(&r);
    /* absolute: |-15| = 15, still an integer */
    r = run("absolute(sum:a)", "sum:a", NULL);
    assert_true(r.s[1].p[3].is_int);
    assert_int_equal(r.s[1].p[3].v.i, 15);
    qgexp_set_clear(&r);
    /* alias: @host replaced, tags and aggregated tags dropped, values unchanged (negative) */
    r = run("alias(sum:a,cpu-@host,total)", "sum:a", NULL);
    assert_string_equal(r.s[0].metric, "cpu-x,total");
    assert_string_equal(r.s[1].metric, "cpu-y,total");
    assert_int_equal(r.s[1].ntags, 0);
    assert_int_equal(r.s[1].nagg, 0);
    assert_int_equal(r.s[1].p[2].v.i, -10);
    qgexp_set_clear(&r);
    eval_error("scale(sum:a)", "Missing scaling factor");
    eval_error("scale(sum:a,2x)", "Unparseable scale factor value: 2x");
    eval_error("alias(sum:a)", "Missing the alias");
}

static void test_qgexp_moving_average(void **state)
{
    (void)state;
    /* 2 points: 0 until two are seen, then (1+11)/2 = 6, (11+21)/2 = 16, ... */
    struct qgexp_set r = run("movingAverage(sum:a,2)", "sum:a", NULL);
    static const double want2[] = {0, 6, 16, 26, 36};
    for (size_t i = 0; i < 5; i++) {
        assert_false(r.s[0].p[i].is_int);
        assert_true(val(&r.s[0], i) == want2[i]);
    }
    qgexp_set_clear(&r);
    /* a 2-minute window holds the points less than 120 s back, and is full once a point 120 s
     * back exists: t=0 0, t=60 0 (nothing 120 s back), t=120 (21+11)/2 = 16, t=180 26 */
    r = run("movingAverage(sum:a,'2min')", "sum:a", NULL);
    static const double want_t[] = {0, 0, 16, 26, 36};
    for (size_t i = 0; i < 5; i++)
        assert_true(val(&r.s[0], i) == want_t[i]);
    qgexp_set_clear(&r);
    /* 3 points over y: -5 at 120 s is (0-5-10)/3 */
    r = run("movingAverage(sum:a,3)", "sum:a", NULL);
    assert_true(val(&r.s[1], 2) == -5);
    assert_true(val(&r.s[1], 4) == -15);
    qgexp_set_clear(&r);
    eval_error("movingAverage(sum:a)", "Missing moving average window size");
    eval_error("movingAverage(sum:a,0)", "greater than zero");
    eval_error("movingAverage(sum:a,x)", "Unparseable window size: x");
    eval_error("movingAverage(sum:a,'5y')", "Unknown time unit=y");
}

static void test_qgexp_highest(void **state)
{
    (void)state;
    /* maxima: a{x} 41, a{y} 0, b{x} 2, b{z} 4 -> top 3: a{x}, b{z}, b{x} */
    struct qgexp_set r = run("highestMax(sum:a,sum:b,3)", "sum:a", "sum:b");
    assert_int_equal(r.n, 3);
    assert_string_equal(r.s[0].metric, "a");
    assert_string_equal(r.s[1].metric, "b");
    assert_string_equal(r.s[1].tagv[0], "z");
    assert_string_equal(r.s[2].tagv[0], "x");
    assert_int_equal(r.s[0].n, 5); /* the whole series */
    qgexp_set_clear(&r);
    /* last values: a{x} 41, a{y} -20, b{x} 2, b{z} 4 -> top 2 a{x}, b{z}; more than there are */
    r = run("highestCurrent(sum:a,sum:b,2)", "sum:a", "sum:b");
    assert_int_equal(r.n, 2);
    assert_string_equal(r.s[1].tagv[0], "z");
    qgexp_set_clear(&r);
    r = run("highestCurrent(sum:a,10)", "sum:a", NULL);
    assert_int_equal(r.n, 2);
    assert_string_equal(r.s[1].tagv[0], "y");
    qgexp_set_clear(&r);
    eval_error("highestMax(sum:a,0)", "greater than zero");
    eval_error("highestCurrent(sum:a,-1)", "Unparseable top n value: -1");
}

static void test_qgexp_shift(void **state)
{
    (void)state;
    struct qgexp_set r = run("timeShift(sum:a,'2min')", "sum:a", NULL);
    assert_int_equal(r.s[0].p[0].ts_ms, 120000);
    assert_int_equal(r.s[0].p[4].ts_ms, 360000);
    assert_int_equal(r.s[0].p[4].v.i, 41);
    qgexp_set_clear(&r);
    r = run("shift(sum:a,'1day')", "sum:a", NULL);
    assert_int_equal(r.s[1].p[0].ts_ms, 86400000);
    qgexp_set_clear(&r);
    eval_error("shift(sum:a,2min)", "Invalid timeshift parameter");
    eval_error("shift(sum:a,'2lightyears')", "Unknown time unit=lightyears");
    eval_error("shift(sum:a,'0min')", "timeshift <= 0");
}

static void test_qgexp_series_functions(void **state)
{
    (void)state;
    /* union on the tag set, 0 for what is missing, every series time-synced (OpenTSDB's
     * ExpressionIterator over TimeSyncedIterators): host=x 1+2 .. 41+2; host=y a alone;
     * host=z b alone: 4 at 60, 0 at the other timestamps */
    struct qgexp_set r = run("sumSeries(sum:a,sum:b)", "sum:a", "sum:b");
    assert_int_equal(r.n, 3);
    assert_string_equal(r.s[0].tagv[0], "x");
    assert_string_equal(r.s[0].metric, "a");
    assert_true(val(&r.s[0], 0) == 3 && val(&r.s[0], 4) == 43);
    assert_string_equal(r.s[1].tagv[0], "y");
    assert_true(val(&r.s[1], 3) == -15);
    assert_string_equal(r.s[2].metric, "b"); /* named after the first operand that has it */
    assert_int_equal(r.s[2].n, 5);
    assert_true(val(&r.s[2], 0) == 0 && val(&r.s[2], 1) == 4 && val(&r.s[2], 4) == 0);
    assert_int_equal(r.s[2].nagg, 1);
    qgexp_set_clear(&r);
    /* diff: x 11-2 = 9; y -5-0; z 0-4 at 60 */
    r = run("diffSeries(sum:a,sum:b)", "sum:a", "sum:b");
    assert_true(val(&r.s[0], 1) == 9);
    assert_true(val(&r.s[2], 1) == -4);
    qgexp_set_clear(&r);
    /* multiply: x 21*2 = 42; z 0*4 = 0 at 60 */
    r = run("multiply(sum:a,sum:b)", "sum:a", "sum:b");
    assert_true(val(&r.s[0], 2) == 42);
    assert_true(val(&r.s[2], 1) == 0);
    qgexp_set_clear(&r);
    /* divide: x 31/2 = 15.5; y -5/0 = 0 (OpenTSDB's JEXL answers 0 for a zero divisor) */
    r = run("divideSeries(sum:a,sum:b)", "sum:a", "sum:b");
    assert_true(val(&r.s[0], 3) == 15.5);
    assert_true(val(&r.s[1], 1) == 0);
    qgexp_set_clear(&r);
    /* functions compose: x 2*11 + 2 = 24 */
    r = run("sum(scale(sum:a,2),sum:b)", "sum:a", "sum:b");
    assert_true(val(&r.s[0], 1) == 24);
    qgexp_set_clear(&r);
    eval_error("sumSeries(sum:a)", "Must have 2 to 26 series, got 1 instead");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qgexp_grammar),
        cmocka_unit_test(test_qgexp_scale_absolute_alias),
        cmocka_unit_test(test_qgexp_moving_average),
        cmocka_unit_test(test_qgexp_highest),
        cmocka_unit_test(test_qgexp_shift),
        cmocka_unit_test(test_qgexp_series_functions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
