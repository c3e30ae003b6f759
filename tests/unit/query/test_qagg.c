/* test_qagg.c - OpenTSDB 2.4 arithmetic, table-driven: every aggregator on integers and doubles
 * (NaN skipping, percentile estimators), cross-series aggregation with each interpolation rule and
 * AggregationIterator's integer/float rule, downsampling with fill policies, 0all and calendar
 * buckets, rate with counter options, and the scan window. Expected values are worked out by
 * hand from OpenTSDB's semantics (comments show the arithmetic). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "query/qagg.h"
#include "tests/lib/ctest.h"

static struct qagg_point ip(int64_t ts_s, int64_t v)
{
    struct qagg_point p = {.ts_ms = ts_s * 1000, .is_int = true};
    p.v.i = v;
    return p;
}

static struct qagg_point dp(int64_t ts_s, double v)
{
    struct qagg_point p = {.ts_ms = ts_s * 1000, .is_int = false};
    p.v.d = v;
    return p;
}

static void test_qagg_lists_every_opentsdb_aggregator(void **state)
{
    (void)state;
    static const char *names[] = {"sum",    "min",    "max",    "avg",       "dev",     "median",
                                  "mult",   "diff",   "count",  "zimsum",    "mimmin",  "mimmax",
                                  "first",  "last",   "pfsum",  "squareSum", "none",    "p50",
                                  "p75",    "p90",    "p95",    "p99",       "p999",    "ep50r3",
                                  "ep75r3", "ep90r3", "ep95r3", "ep99r3",    "ep999r3", "ep50r7",
                                  "ep75r7", "ep90r7", "ep95r7", "ep99r7",    "ep999r7"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        assert_non_null(qagg_lookup(names[i]));
    assert_int_equal(qagg_count(), sizeof(names) / sizeof(names[0]));
    assert_null(qagg_lookup("SUM"));
    assert_null(qagg_lookup("bogus"));
    assert_true(qagg_is_none(qagg_lookup("none")));
}

static void test_qagg_values_integer_and_double_forms(void **state)
{
    (void)state;
    static const struct {
        const char *agg;
        int64_t in[8];
        size_t n;
        int64_t want_long;
        double want_double;
    } cases[] = {
        {"sum", {1, 2, 3}, 3, 6, 6},
        {"zimsum", {1, 2, 3}, 3, 6, 6},
        {"min", {3, 1, 2}, 3, 1, 1},
        {"max", {3, 1, 2}, 3, 3, 3},
        {"avg", {1, 2, 4}, 3, 2, 7.0 / 3},          /* long: 7/3 truncates */
        {"dev", {2, 4, 4, 4, 5, 5, 7, 9}, 8, 2, 2}, /* population std-dev */
        {"dev", {5}, 1, 0, 0},
        {"count", {7, 7, 7}, 3, 3, 3},
        {"mult", {2, 3, 4}, 3, 24, 24},
        {"diff", {5, 7, 9}, 3, 4, 4},
        {"first", {5, 7, 9}, 3, 5, 5},
        {"last", {5, 7, 9}, 3, 9, 9},
        {"squareSum", {1, 2, 3}, 3, 14, 14},
        {"median", {1, 3, 2, 4}, 4, 3, 3},    /* sorted 1 2 3 4 -> [n/2] */
        {"p50", {4, 1, 3, 2}, 4, 2, 2.5},     /* pos 0.5*5=2.5 -> 2 + .5*(3-2) */
        {"p99", {1, 2, 3, 4}, 4, 4, 4},       /* pos 4.95 >= n -> max */
        {"p75", {1, 2, 3, 4}, 4, 3, 3.75},    /* pos 3.75 -> 3 + .75 */
        {"ep50r3", {1, 2, 3, 4}, 4, 2, 2.5},  /* long: rint(2)=2 -> s[1]; double: legacy */
        {"ep50r7", {1, 2, 3, 4}, 4, 2, 2.5},  /* 1 + 3*.5 = 2.5 */
        {"ep75r7", {1, 2, 3, 4}, 4, 3, 3.75}, /* long: 1+3*.75=3.25 -> 3 */
        {"p999", {10}, 1, 10, 10},
    };
    double scratch[16], dscr[16], dv[8];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct qagg *a = qagg_lookup(cases[i].agg);
        assert_non_null(a);
        assert_true(qagg_run_long(a, cases[i].in, cases[i].n, scratch) == cases[i].want_long);
        for (size_t k = 0; k < cases[i].n; k++)
            dv[k] = (double)cases[i].in[k];
        assert_true(fabs(qagg_run_double(a, dv, cases[i].n, dscr) - cases[i].want_double) < 1e-12);
    }
    /* NaN values (fill policies) are skipped; all NaN gives NaN */
    double with_nan[] = {NAN, 1.5, 2.0};
    assert_true(qagg_run_double(qagg_lookup("sum"), with_nan, 3, dscr) == 3.5);
    assert_true(qagg_run_double(qagg_lookup("avg"), with_nan, 3, dscr) == 1.75);
    assert_true(qagg_run_double(qagg_lookup("min"), with_nan, 3, dscr) == 1.5);
    assert_true(qagg_run_double(qagg_lookup("count"), with_nan, 3, dscr) == 2);
    double only_nan[] = {NAN};
    assert_true(isnan(qagg_run_double(qagg_lookup("sum"), only_nan, 1, dscr)));
    assert_true(isnan(qagg_run_double(qagg_lookup("max"), only_nan, 1, dscr)));
    /* integer sums wrap like Java longs */
    int64_t big[] = {INT64_MAX, 1};
    assert_true(qagg_run_long(qagg_lookup("sum"), big, 2, scratch) == INT64_MIN);
}

struct collected {
    struct qagg_point p[64];
    size_t n;
};

static int collect(void *arg, const struct qagg_point *pt)
{
    struct collected *c = arg;
    if (c->n < 64)
        c->p[c->n++] = *pt;
    return 0;
}

/* Runs `agg` over two series and checks the output (ts in s, value, integer?). */
struct want {
    int64_t ts_s;
    double v;
    bool is_int;
};

static void check_group(const char *agg, const struct qagg_point *a, size_t na,
                        const struct qagg_point *b, size_t nb, bool rate, const struct want *w,
                        size_t nw)
{
    struct qagg_series s[2] = {{a, na}, {b, nb}};
    struct collected c = {.n = 0};
    struct ct_err err = {0};
    assert_int_equal(qagg_group_run(qagg_lookup(agg), s, 2, 0, 1000000, rate, collect, &c, &err),
                     CT_OK);
    assert_int_equal(c.n, nw);
    for (size_t i = 0; i < nw; i++) {
        assert_true(c.p[i].ts_ms == w[i].ts_s * 1000);
        assert_int_equal(c.p[i].is_int, w[i].is_int);
        double got = c.p[i].is_int ? (double)c.p[i].v.i : c.p[i].v.d;
        if (isnan(w[i].v))
            assert_true(isnan(got));
        else
            assert_true(fabs(got - w[i].v) < 1e-9 || got == w[i].v);
    }
}

/* Collects every emitted point (growing). */
struct allpts {
    struct qagg_point *p;
    size_t n, cap;
};

static int collect_all(void *arg, const struct qagg_point *pt)
{
    struct allpts *c = arg;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 256;
        c->p = realloc(c->p, c->cap * sizeof(*c->p));
    }
    c->p[c->n++] = *pt;
    return 0;
}

static void test_qagg_group_fast_path_matches_the_iterator(void **state)
{
    (void)state;
    /* random groups, aligned (the fast path) and not, of ints, doubles, NaNs and mixes, with
     * and without rate, windows cutting the ends: qagg_group_run must emit exactly what the
     * general iterator does, bit for bit, for every aggregator */
    enum {
        NS = 6,
        NP = 40
    };
    static struct qagg_point pts[NS][NP];
    unsigned seed = 5;
    int aligned_runs = 0;
    for (int round = 0; round < 400; round++) {
        size_t ns = 1 + (size_t)(rand_r(&seed) % NS), np = 1 + (size_t)(rand_r(&seed) % NP);
        int mix = rand_r(&seed) % 4; /* 0 ints, 1 doubles, 2 mixed, 3 doubles with NaN */
        bool aligned = rand_r(&seed) % 4 != 0;
        aligned_runs += aligned;
        struct qagg_series s[NS];
        for (size_t i = 0; i < ns; i++) {
            int64_t ts = 1000 + (aligned ? 0 : rand_r(&seed) % 3) * 1000;
            for (size_t k = 0; k < np; k++) {
                ts += aligned ? 10000 : 1000 * (1 + rand_r(&seed) % 15);
                bool is_int = mix == 0 || (mix == 2 && rand_r(&seed) % 2);
                pts[i][k] = is_int ? ip(ts / 1000, rand_r(&seed) % 1000 - 500)
                                   : dp(ts / 1000, (rand_r(&seed) % 100000) / 64.0);
                if (mix == 3 && rand_r(&seed) % 5 == 0)
                    pts[i][k].v.d = NAN;
            }
            s[i].p = pts[i];
            s[i].n = np;
        }
        bool rate = rand_r(&seed) % 3 == 0;
        int64_t ws = rand_r(&seed) % 2 ? 0 : 30000, we = rand_r(&seed) % 2 ? 10000000 : 200000;
        for (size_t a = 0; a < qagg_count(); a++) {
            const struct qagg *ag = qagg_at(a);
            struct allpts f = {0}, g = {0};
            struct ct_err err = {0};
            assert_int_equal(qagg_group_run(ag, s, ns, ws, we, rate, collect_all, &f, &err), CT_OK);
            assert_int_equal(qagg_group_run_general(ag, s, ns, ws, we, rate, collect_all, &g, &err),
                             CT_OK);
            if (f.n != g.n)
                fail_msg("round %d %s: %zu points, iterator %zu", round, qagg_name(ag), f.n, g.n);
            for (size_t k = 0; k < f.n; k++) {
                assert_true(f.p[k].ts_ms == g.p[k].ts_ms);
                assert_int_equal(f.p[k].is_int, g.p[k].is_int);
                if (memcmp(&f.p[k].v, &g.p[k].v, sizeof(f.p[k].v)))
                    fail_msg("round %d %s point %zu differs", round, qagg_name(ag), k);
            }
            free(f.p);
            free(g.p);
        }
    }
    assert_true(aligned_runs > 200);
}

static void test_qagg_group_interpolates_per_aggregator(void **state)
{
    (void)state;
    const struct qagg_point a[] = {ip(10, 10), ip(30, 30)}, b[] = {ip(20, 20)};
    /* sum, LERP: at 20 A = 10 + (20-10)*(30-10)/(30-10) = 20; B has no point before 20 */
    const struct want sum[] = {{10, 10, true}, {20, 40, true}, {30, 30, true}};
    check_group("sum", a, 2, b, 1, false, sum, 3);
    const struct want zim[] = {{10, 10, true}, {20, 20, true}, {30, 30, true}};
    check_group("zimsum", a, 2, b, 1, false, zim, 3);
    /* mimmin: A missing at 20 -> Long.MAX, so min = 20 */
    const struct want mimmin[] = {{10, 10, true}, {20, 20, true}, {30, 30, true}};
    check_group("mimmin", a, 2, b, 1, false, mimmin, 3);
    const struct want mimmax[] = {{10, 10, true}, {20, 20, true}, {30, 30, true}};
    check_group("mimmax", a, 2, b, 1, false, mimmax, 3);
    /* count is ZIM: the interpolated-as-zero A still counts at 20 */
    const struct want count[] = {{10, 1, true}, {20, 2, true}, {30, 1, true}};
    check_group("count", a, 2, b, 1, false, count, 3);
    const struct want mx[] = {{10, 10, true}, {20, 20, true}, {30, 30, true}};
    check_group("max", a, 2, b, 1, false, mx, 3);
    /* integer LERP truncates: A at 20 = 10 + 10000*10/30000 = 13 */
    const struct qagg_point a2[] = {ip(10, 10), ip(40, 20)}, b2[] = {ip(20, 5)};
    const struct want trunc[] = {{10, 10, true}, {20, 18, true}, {40, 20, true}};
    check_group("sum", a2, 2, b2, 1, false, trunc, 3);
    /* pfsum carries A's previous value */
    const struct want prev[] = {{10, 10, true}, {20, 15, true}, {40, 20, true}};
    check_group("pfsum", a2, 2, b2, 1, false, prev, 3);
    /* a float anywhere in the current or next slots makes the point a double, even at 10
     * where B only announces its next value (AggregationIterator.isInteger) */
    const struct qagg_point bf[] = {dp(20, 20.5)};
    const struct want fl[] = {{10, 10, false}, {20, 40.5, false}, {30, 30, true}};
    check_group("sum", a, 2, bf, 1, false, fl, 3);
    /* double LERP with doubles: A at 20 = 1.0 + 10*(2.0-1.0)/20 = 1.5 */
    const struct qagg_point ad[] = {dp(10, 1.0), dp(30, 2.0)}, bd[] = {dp(20, 0.25)};
    const struct want dl[] = {{10, 1.0, false}, {20, 1.75, false}, {30, 2.0, false}};
    check_group("sum", ad, 2, bd, 1, false, dl, 3);
    /* mimmax with doubles: missing A = Double.MIN_VALUE, which loses to 0.25 */
    const struct want mmd[] = {{10, 1.0, false}, {20, 0.25, false}, {30, 2.0, false}};
    check_group("mimmax", ad, 2, bd, 1, false, mmd, 3);
    /* rate: no lerp, a series contributes its previous (or first) rate */
    const struct qagg_point ra[] = {dp(10, 1.0), dp(30, 3.0)}, rb[] = {dp(20, 10.0), dp(40, 20.0)};
    /* the first rate of each series becomes its current value without being emitted */
    const struct want rt[] = {{30, 13.0, false}, {40, 20.0, false}};
    check_group("sum", ra, 2, rb, 2, true, rt, 2);
}

static void test_qagg_downsample_buckets_and_fill(void **state)
{
    (void)state;
    const struct qagg_point in[] = {ip(0, 1), ip(30, 2), ip(60, 3), ip(90, 4), ip(150, 5)};
    struct ct_err err = {0};
    struct qagg_ds ds;
    struct qagg_window w;
    struct qagg_buf out = {0};
    assert_int_equal(qagg_ds_parse("1m-sum", &ds, &err), CT_OK);
    qagg_window_compute(0, 200000, &ds, &w);
    assert_true(w.win_start_ms == 0 && w.win_end_ms == 3600000);
    assert_int_equal(qagg_downsample(in, 5, &ds, &w, NULL, &out, &err), CT_OK);
    assert_int_equal(out.n, 3);
    assert_true(out.p[0].ts_ms == 0 && out.p[0].v.d == 3.0 && !out.p[0].is_int);
    assert_true(out.p[1].ts_ms == 60000 && out.p[1].v.d == 7.0);
    assert_true(out.p[2].ts_ms == 120000 && out.p[2].v.d == 5.0);
    out.n = 0;
    assert_int_equal(qagg_ds_parse("1m-avg-nan", &ds, &err), CT_OK);
    assert_int_equal(ds.fill, QAGG_FILL_NAN);
    assert_int_equal(qagg_downsample(in, 5, &ds, &w, NULL, &out, &err), CT_OK);
    assert_int_equal(out.n, 60); /* every bucket of the window [0, 3600 s) */
    assert_true(out.p[0].v.d == 1.5 && out.p[1].v.d == 3.5 && out.p[2].v.d == 5.0);
    assert_true(isnan(out.p[3].v.d) && out.p[3].ts_ms == 180000);
    out.n = 0;
    assert_int_equal(qagg_ds_parse("1m-max-zero", &ds, &err), CT_OK);
    assert_int_equal(qagg_downsample(in, 5, &ds, &w, NULL, &out, &err), CT_OK);
    assert_true(out.p[3].v.d == 0.0 && out.p[1].v.d == 4.0);
    out.n = 0;
    /* 0all: one bucket over [start, end) stamped at the query start */
    assert_int_equal(qagg_ds_parse("0all-sum", &ds, &err), CT_OK);
    assert_true(ds.all);
    qagg_window_compute(0, 150000, &ds, &w);
    assert_int_equal(qagg_downsample(in, 5, &ds, &w, NULL, &out, &err), CT_OK);
    assert_int_equal(out.n, 1);
    assert_true(out.p[0].ts_ms == 0 && out.p[0].v.d == 10.0); /* 150 s is at the end: out */
    out.n = 0;
    /* calendar days in New York: three UTC points on two UTC days share one local day */
    struct qtime_tz *ny = NULL;
    assert_int_equal(qtime_tz_load("America/New_York", &ny, &err), CT_OK);
    const struct qagg_point cal[] = {ip(1357034400, 1), ip(1357081200, 2), ip(1357088400, 3)};
    assert_int_equal(qagg_ds_parse("1dc-sum", &ds, &err), CT_OK);
    assert_true(ds.calendar);
    w.win_start_ms = 1356998400000LL;
    w.win_end_ms = 1357171200000LL;
    assert_int_equal(qagg_downsample(cal, 3, &ds, &w, ny, &out, &err), CT_OK);
    assert_int_equal(out.n, 1);
    assert_true(out.p[0].ts_ms == 1357016400000LL && out.p[0].v.d == 6.0);
    out.n = 0;
    assert_int_equal(qagg_downsample(cal, 3, &ds, &w, NULL, &out, &err), CT_OK);
    assert_int_equal(out.n, 2); /* UTC: Jan 1 (1+2) and Jan 2 (3) */
    assert_true(out.p[0].ts_ms == 1356998400000LL && out.p[0].v.d == 3.0);
    assert_true(out.p[1].ts_ms == 1357084800000LL && out.p[1].v.d == 3.0);
    qtime_tz_free(ny);
    qagg_buf_free(&out);
}

static void test_qagg_downsample_specifier_errors(void **state)
{
    (void)state;
    static const struct {
        const char *spec, *msg;
    } bad[] = {
        {"1m", "Invalid downsampling specifier '1m': must provide at least interval and "
               "function"},
        {"1m-avg-nan-x", "Invalid downsampling specifier '1m-avg-nan-x': must consist of "
                         "interval, function, and optional fill policy"},
        {"1m-none", "cannot use the NONE aggregator for downsampling"},
        {"1m-foo", "No such downsampling function: foo"},
        {"1m-avg-foo", "Unrecognized fill policy: foo"},
        {"0m-avg", "Zero or negative duration: 0m"},
        {"1q-avg", "Invalid duration (suffix): 1q"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct qagg_ds ds;
        struct ct_err err = {0};
        assert_int_equal(qagg_ds_parse(bad[i].spec, &ds, &err), CT_EINVAL);
        assert_string_equal(err.msg, bad[i].msg);
    }
    struct qagg_ds ds;
    struct ct_err err = {0};
    assert_int_equal(qagg_ds_parse("1h-p99-null", &ds, &err), CT_OK);
    assert_true(ds.interval_ms == 3600000 && ds.fill == QAGG_FILL_NULL && !ds.calendar);
}

/* The scalar fill policy with its value: "scalar(<number>)" in a string specifier (negative
 * values keep their '-'), plain "scalar" fills 0.0; empty buckets get the value, real ones theirs. */
static void test_qagg_downsample_scalar_fill_value(void **state)
{
    (void)state;
    const struct qagg_point in[] = {ip(0, 1), ip(30, 2), ip(150, 5)};
    struct ct_err err = {0};
    struct qagg_ds ds;
    struct qagg_window w;
    struct qagg_buf out = {0};
    static const struct {
        const char *spec;
        double value;
    } ok[] = {
        {"1m-sum-scalar(42)", 42.0}, {"1m-sum-scalar(-1.5)", -1.5}, {"1m-sum-SCALAR(1e3)", 1000.0},
        {"1m-sum-scalar", 0.0},      {"1m-sum-scalar(0.25)", 0.25},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        assert_int_equal(qagg_ds_parse(ok[i].spec, &ds, &err), CT_OK);
        assert_int_equal(ds.fill, QAGG_FILL_SCALAR);
        assert_string_equal(ds.text, ok[i].spec);
        qagg_window_compute(0, 200000, &ds, &w);
        out.n = 0;
        assert_int_equal(qagg_downsample(in, 3, &ds, &w, NULL, &out, &err), CT_OK);
        assert_int_equal(out.n, 60);
        assert_true(out.p[0].ts_ms == 0 && out.p[0].v.d == 3.0);
        assert_true(out.p[1].ts_ms == 60000 && out.p[1].v.d == ok[i].value); /* empty */
        assert_true(out.p[2].ts_ms == 120000 && out.p[2].v.d == 5.0);
        assert_true(out.p[59].ts_ms == 3540000 && out.p[59].v.d == ok[i].value);
        assert_false(out.p[1].is_int);
    }
    qagg_buf_free(&out);
    /* a trailing '-' is dropped as Java's split() does */
    assert_int_equal(qagg_ds_parse("1m-avg-", &ds, &err), CT_OK);
    assert_int_equal(ds.fill, QAGG_FILL_NONE);
    static const struct {
        const char *spec, *msg;
    } bad[] = {
        {"1m-avg-scalar(x)", "Invalid scalar fill value 'x': must be a finite number"},
        {"1m-avg-scalar()", "Invalid scalar fill value '': must be a finite number"},
        {"1m-avg-scalar(NaN)", "Invalid scalar fill value 'NaN': must be a finite number"},
        {"1m-avg-zero(1)", "Invalid downsampling specifier '1m-avg-zero(1)': only the scalar "
                           "fill policy takes a value, as scalar(<number>)"},
        {"1m-avg-scalar(1", "Invalid downsampling specifier '1m-avg-scalar(1': only the scalar "
                            "fill policy takes a value, as scalar(<number>)"},
        {"1m-avg-scalar(1)-x", "Invalid downsampling specifier '1m-avg-scalar(1)-x': must "
                               "consist of interval, function, and optional fill policy"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(qagg_ds_parse(bad[i].spec, &ds, &err), CT_EINVAL);
        if (strcmp(err.msg, bad[i].msg))
            fail_msg("case %zu: got [%s] want [%s]", i, err.msg, bad[i].msg);
    }
}

static void test_qagg_rate_and_counter_options(void **state)
{
    (void)state;
    const struct qagg_point in[] = {ip(10, 10), ip(20, 30), ip(30, 20)};
    struct qagg_rate r;
    struct qagg_buf out = {0};
    struct ct_err err = {0};
    qagg_rate_init(&r);
    assert_true(r.counter_max == INT64_MAX && r.reset_value == 0);
    assert_int_equal(qagg_rate_apply(in, 3, &r, &out, &err), CT_OK);
    assert_int_equal(out.n, 3); /* the first rate is against 0 at time zero: 10/10 s */
    assert_true(out.p[0].ts_ms == 10000 && out.p[0].v.d == 1.0 && !out.p[0].is_int);
    assert_true(out.p[1].ts_ms == 20000 && out.p[1].v.d == 2.0);
    assert_true(out.p[2].ts_ms == 30000 && out.p[2].v.d == -1.0);
    out.n = 0;
    r.counter = true;
    r.counter_max = 100; /* wrap: (100 - 30 + 20) / 10 */
    assert_int_equal(qagg_rate_apply(in, 3, &r, &out, &err), CT_OK);
    assert_true(out.n == 3 && out.p[2].v.d == 9.0);
    out.n = 0;
    r.reset_value = 5; /* 9 > 5 after a wrap: reported as 0 */
    assert_int_equal(qagg_rate_apply(in, 3, &r, &out, &err), CT_OK);
    assert_true(out.n == 3 && out.p[2].v.d == 0.0 && out.p[1].v.d == 2.0);
    out.n = 0;
    r.drop_resets = true;
    assert_int_equal(qagg_rate_apply(in, 3, &r, &out, &err), CT_OK);
    assert_int_equal(out.n, 2);
    out.n = 0;
    const struct qagg_point dbl[] = {dp(1, 1.5), dp(3, 2.5)};
    qagg_rate_init(&r);
    assert_int_equal(qagg_rate_apply(dbl, 2, &r, &out, &err), CT_OK);
    assert_true(out.n == 2 && out.p[0].v.d == 1.5 && out.p[1].v.d == 0.5);
    qagg_buf_free(&out);
}

/* qagg_rate_in_place gives qagg_rate_apply's points, bit for bit, over mixed integers and
 * doubles, repeated and backward timestamps, and counters wrapping near INT64_MAX, with every
 * counter option: it keeps the previous point by value while overwriting the input. */
static void test_qagg_rate_in_place_matches_apply(void **state)
{
    (void)state;
    enum {
        N = 400
    };
    static struct qagg_point in[N], work[N];
    uint64_t st = 7;
    int64_t ts = 0, ctr = INT64_MAX - 50000;
    for (size_t i = 0; i < N; i++) {
        st = st * 6364136223846793005ULL + 1442695040888963407ULL;
        unsigned r = (unsigned)(st >> 40);
        ts += r % 7 == 0 ? 0 : r % 11 == 0 ? -5000 : 10000; /* repeats and steps back */
        ctr = ctr > INT64_MAX - 20000 ? (int64_t)(r % 1000) : ctr + (int64_t)(r % 20000);
        in[i] = r % 5 == 0 ? dp(0, (double)(r % 100000) / 100) : ip(0, ctr);
        in[i].ts_ms = ts;
    }
    struct qagg_rate opt[4];
    for (int k = 0; k < 4; k++)
        qagg_rate_init(&opt[k]);
    opt[1].counter = true;
    opt[2].counter = true;
    opt[2].drop_resets = true;
    opt[3].counter = true;
    opt[3].counter_max = INT64_MAX - 10;
    opt[3].reset_value = 1000000;
    struct ct_err err = {0};
    for (int k = 0; k < 4; k++) {
        struct qagg_buf out = {0};
        assert_int_equal(qagg_rate_apply(in, N, &opt[k], &out, &err), CT_OK);
        memcpy(work, in, sizeof(in));
        size_t n = qagg_rate_in_place(work, N, &opt[k]);
        assert_int_equal(n, out.n);
        assert_true(n > N / 2);
        for (size_t i = 0; i < n; i++) {
            assert_true(work[i].ts_ms == out.p[i].ts_ms && !work[i].is_int);
            assert_memory_equal(&work[i].v.d, &out.p[i].v.d, sizeof(double));
        }
        qagg_buf_free(&out);
    }
}

static void test_qagg_window_matches_tsdbquery_scan_bounds(void **state)
{
    (void)state;
    struct qagg_window w;
    struct qagg_ds ds;
    struct ct_err err = {0};
    /* start 00:00:30, end 01:00:00: start to the hour, end + 1 s then to the next hour */
    qagg_window_compute(1356998430000LL, 1357002000000LL, NULL, &w);
    assert_true(w.win_start_ms == 1356998400000LL && w.win_end_ms == 1357005600000LL);
    assert_int_equal(qagg_ds_parse("1m-avg", &ds, &err), CT_OK);
    qagg_window_compute(1356998430000LL, 1357002000000LL, &ds, &w);
    assert_true(w.win_start_ms == 1356998400000LL && w.win_end_ms == 1357005600000LL);
    assert_int_equal(qagg_ds_parse("1d-avg", &ds, &err), CT_OK);
    qagg_window_compute(1357002000000LL, 1357005000000LL, &ds, &w);
    assert_true(w.win_start_ms == 1356998400000LL); /* aligned down to the day */
    /* padding: one more hour row on each side, or the downsample interval when longer */
    qagg_window_compute(1356998430000LL, 1357002000000LL, NULL, &w);
    qagg_window_pad(&w, NULL);
    assert_true(w.win_start_ms == 1356994800000LL && w.win_end_ms == 1357009200000LL);
    assert_true(w.q_start_ms == 1356998430000LL && w.q_end_ms == 1357002000000LL);
    assert_int_equal(qagg_ds_parse("90m-avg", &ds, &err), CT_OK);
    qagg_window_compute(1356998430000LL, 1357002000000LL, &ds, &w);
    int64_t s0 = w.win_start_ms, e0 = w.win_end_ms;
    qagg_window_pad(&w, &ds);
    assert_true(w.win_start_ms == s0 - 7200000 && w.win_end_ms == e0 + 7200000);
    w.win_start_ms = 1000;
    qagg_window_pad(&w, NULL);
    assert_true(w.win_start_ms == 0); /* never before the epoch */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qagg_lists_every_opentsdb_aggregator),
        cmocka_unit_test(test_qagg_values_integer_and_double_forms),
        cmocka_unit_test(test_qagg_group_interpolates_per_aggregator),
        cmocka_unit_test(test_qagg_group_fast_path_matches_the_iterator),
        cmocka_unit_test(test_qagg_downsample_buckets_and_fill),
        cmocka_unit_test(test_qagg_downsample_scalar_fill_value),
        cmocka_unit_test(test_qagg_downsample_specifier_errors),
        cmocka_unit_test(test_qagg_rate_and_counter_options),
        cmocka_unit_test(test_qagg_rate_in_place_matches_apply),
        cmocka_unit_test(test_qagg_window_matches_tsdbquery_scan_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
