/* test_qlast.c - qlast_run_bounded (/api/query/last within a budget of store work, as the TSD
 * runs it on its network loop): within the budget it answers byte for byte like qlast_run
 * (also its errors), and a run that would pass any bound ends with CT_ELIMIT having written
 * nothing; a bigger budget never fails where a smaller one passed. Real store in a temp dir. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/qlast.h"
#include "schema/tagidx.h"
#include "schema/tsdb.h"
#include "tests/lib/ctest.h"
#include "tests/lib/tsdb_fixture.h"

static const int64_t NOW = 1356998500000LL;
#define H (NOW / 1000 - NOW / 1000 % 3600) /* the base hour of NOW */

static void put_pt(struct tsdb *t, const char *metric, const char *host, const char *dc,
                   int64_t ts_s, int64_t v)
{
    const char *k[2] = {"host", "dc"}, *vals[2] = {host, dc};
    tsdb_fixture_put(t, metric, k, vals, 2, dpcodec_point_int(ts_s * 1000, false, v));
}

/* sys.lat: ten series over the last 4 hours (l3 only 5 hours back, l7 a double);
 * sys.big: one series with 600 points in hour H; sys.wide: 60 series with a point in H. */
static void load(struct tsdb *t)
{
    for (int s = 0; s < 10; s++) {
        char host[16];
        snprintf(host, sizeof(host), "l%d", s);
        if (s == 3) {
            put_pt(t, "sys.lat", host, "q", H - 5 * 3600 + 7, 3);
            continue;
        }
        for (int h = 0; h < 4; h++)
            if ((s + h) % 3 != 0 || h == 3)
                put_pt(t, "sys.lat", host, s % 2 ? "q" : "r", H - h * 3600 + 10 * s + h,
                       100 * s + h);
    }
    const char *k[2] = {"host", "dc"}, *v7[2] = {"l7", "q"};
    tsdb_fixture_put(t, "sys.lat", k, v7, 2, dpcodec_point_real((H + 90) * 1000, false, 2.5));
    for (int i = 0; i < 600; i++)
        put_pt(t, "sys.big", "b", "q", H - 3600 + 6 * i, i);
    for (int i = 0; i < 60; i++) {
        char host[16];
        snprintf(host, sizeof(host), "w%02d", i);
        put_pt(t, "sys.wide", host, "q", H + i, i);
    }
}

static int setup_with(void **state, unsigned salt_buckets)
{
    struct tsdb_fixture *f = tsdb_fixture_open(salt_buckets);
    *state = f;
    if (f)
        load(f->t);
    return 0;
}
static int setup_unsalted(void **state)
{
    return setup_with(state, 0);
}
static int setup_salted(void **state)
{
    return setup_with(state, 4);
}
static int teardown(void **state)
{
    tsdb_fixture_close(*state);
    return 0;
}

static size_t count_of(const char *s, const char *needle)
{
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

/* One run's outcome: rc, status and what was written (or the error message). */
struct outcome {
    int rc;
    enum qexec_status st;
    char *out; /* the answer, or "" */
    char msg[256];
};

static struct outcome run(struct tsdb_fixture *f, const char *body, const struct qlast_budget *b)
{
    struct qlast_req *r = NULL;
    struct ct_err err = {0};
    assert_int_equal(qlast_parse_json(body, strlen(body), &r, &err), CT_OK);
    struct tsdb_fixture_buf buf = {0};
    struct qjson *j = qjson_new(tsdb_fixture_sink, &buf, 0);
    assert_non_null(j);
    struct outcome o = {0};
    o.rc = b ? qlast_run_bounded(f->t, r, NOW, b, j, &o.st, &err)
             : qlast_run(f->t, r, NOW, j, &o.st, &err);
    if (o.rc == CT_OK)
        assert_int_equal(qjson_flush(j), CT_OK);
    else
        snprintf(o.msg, sizeof(o.msg), "%s", err.msg);
    qjson_free(j);
    qlast_req_free(r);
    o.out = buf.data ? buf.data : strdup("");
    return o;
}

static const char *const bodies[] = {
    "{\"queries\":[{\"metric\":\"sys.lat\",\"tags\":{\"host\":\"l1\",\"dc\":\"q\"}}],"
    "\"backScan\":2}",
    "{\"queries\":[{\"metric\":\"sys.lat\",\"tags\":{\"host\":\"l6\"}}],\"backScan\":1}",
    "{\"queries\":[{\"metric\":\"sys.lat\",\"tags\":{\"dc\":\"q\"}}],\"resolveNames\":true,"
    "\"backScan\":3}",
    "{\"queries\":[{\"metric\":\"sys.lat\"}],\"backScan\":6}",
    "{\"queries\":[{\"metric\":\"sys.lat\",\"tags\":{\"host\":\"l7\"}},{\"metric\":\"sys.big\"}],"
    "\"resolveNames\":true}",
    "{\"queries\":[{\"metric\":\"sys.lat\",\"tags\":{\"host\":\"l3\"}}],\"backScan\":4}",
    "{\"queries\":[{\"metric\":\"sys.wide\",\"tags\":{\"host\":\"w07\"}}]}",
    "{\"queries\":[{\"metric\":\"sys.nope\"}]}",
    "{\"queries\":[{\"metric\":\"sys.lat\",\"tags\":{\"host\":\"nobody\"}}]}",
    "{\"queries\":[{\"tsuids\":[\"00\"]}]}",
};
#define NBODIES (sizeof(bodies) / sizeof(bodies[0]))

/* Every budget from tiny to ample, each bound varied alone and all counts together, and
 * deadlines of 0-700 us: the run either answers exactly like qlast_run or ends with CT_ELIMIT
 * having written nothing, and once a count budget passes every bigger one passes. */
static void check_budgets(struct tsdb_fixture *f)
{
    for (size_t i = 0; i < NBODIES; i++) {
        struct outcome want = run(f, bodies[i], NULL);
        const struct qlast_budget ample = {1000, 100000, 1000000, 1000, 0};
        struct outcome got = run(f, bodies[i], &ample);
        assert_int_equal(got.rc, want.rc);
        assert_int_equal(got.st, want.st);
        assert_string_equal(got.out, want.out);
        assert_string_equal(got.msg, want.msg);
        free(got.out);
        for (int dim = 0; dim < 6; dim++) {
            bool passed = false;
            for (uint32_t n = 0; n <= 700; n += n < 40 ? 1 : 60) {
                struct qlast_budget b = ample;
                if (dim == 0 || dim == 4)
                    b.max_scans = n;
                if (dim == 1 || dim == 4)
                    b.max_rows = n;
                if (dim == 2 || dim == 4)
                    b.max_cells = n;
                if (dim == 3 || dim == 4)
                    b.max_series = n;
                if (dim == 5) /* a deadline: either outcome, never a partial answer */
                    b.max_ns = n ? (uint64_t)n * 1000 : 1;
                got = run(f, bodies[i], &b);
                if (got.rc == CT_ELIMIT) {
                    if (passed && dim != 5) /* time is not monotonic on a busy machine */
                        fail_msg("%s: budget dim %d n %u fails after a smaller one passed",
                                 bodies[i], dim, n);
                    assert_string_equal(got.out, "");
                } else {
                    passed = true;
                    assert_int_equal(got.rc, want.rc);
                    assert_int_equal(got.st, want.st);
                    assert_string_equal(got.out, want.out);
                    assert_string_equal(got.msg, want.msg);
                }
                free(got.out);
            }
            if (!passed && dim != 5)
                fail_msg("%s: budget dim %d never passes up to 700", bodies[i], dim);
        }
        free(want.out);
    }
}

static void test_bounded_runs_answer_like_unbounded_ones_or_write_nothing(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    check_budgets(*state);
}

/* The counts behind the TSD's loop budget: a fully tagged series over the default layout costs
 * one discovery scan per hour of the window and one row read; more series, hours or cells than
 * the budget ends the run, and series that cannot all be read within it end it before any row
 * is read. */
static void test_each_bound_ends_a_run_that_passes_it(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    const char *one = bodies[0]; /* l1, backScan 2: 3 hour scans + 1 row read */
    struct qlast_budget b = {4, 100, 100, 1, 0};
    struct outcome o = run(f, one, &b);
    assert_int_equal(o.rc, CT_OK);
    assert_non_null(strstr(o.out, "\"value\":\"100\""));
    free(o.out);
    b.max_scans = 3;
    o = run(f, one, &b);
    assert_int_equal(o.rc, CT_ELIMIT);
    assert_string_equal(o.out, "");
    assert_non_null(strstr(o.msg, "more than 3 row reads"));
    free(o.out);
    /* sys.wide has 60 series in hour H: 60 keys for one discovery scan */
    const char *wide = "{\"queries\":[{\"metric\":\"sys.wide\"}],\"backScan\":1}";
    struct qlast_budget rows = {1000, 59, 100000, 1000, 0};
    o = run(f, wide, &rows);
    assert_int_equal(o.rc, CT_ELIMIT);
    assert_string_equal(o.out, "");
    assert_non_null(strstr(o.msg, "more than 59 row keys"));
    free(o.out);
    rows.max_rows = 60;
    o = run(f, wide, &rows);
    assert_int_equal(o.rc, CT_OK);
    free(o.out);
    /* 60 series need 60 row reads besides the discovery scan (the scan itself reads each
     * series' newest row): a budget of 60 scans stops the scan at the 60th series */
    struct qlast_budget reads = {60, 1000, 100000, 1000, 0};
    o = run(f, wide, &reads);
    assert_int_equal(o.rc, CT_ELIMIT);
    assert_string_equal(o.out, "");
    assert_non_null(strstr(o.msg, "more than 60 row reads"));
    free(o.out);
    /* the rows the scan reads count their cells (one each here) */
    reads.max_scans = 61;
    reads.max_cells = 59;
    o = run(f, wide, &reads);
    assert_int_equal(o.rc, CT_ELIMIT);
    assert_string_equal(o.out, "");
    assert_non_null(strstr(o.msg, "more than 59 cells read"));
    free(o.out);
    reads.max_cells = 60;
    o = run(f, wide, &reads);
    assert_int_equal(o.rc, CT_OK);
    assert_int_equal(count_of(o.out, "\"tsuid\""), 60);
    free(o.out);
    /* ... and so does a budget of 59 series, or of 8 over two sub-queries of 5 series each */
    struct qlast_budget series = {1000, 1000, 100000, 59, 0};
    o = run(f, wide, &series);
    assert_int_equal(o.rc, CT_ELIMIT);
    assert_non_null(strstr(o.msg, "or 59 series"));
    free(o.out);
    const char *two = "{\"queries\":[{\"metric\":\"sys.lat\",\"tags\":{\"dc\":\"q\"}},"
                      "{\"metric\":\"sys.lat\",\"tags\":{\"dc\":\"r\"}}],\"backScan\":6}";
    struct qlast_budget eight = {1000, 1000, 100000, 8, 0};
    o = run(f, two, &eight);
    assert_int_equal(o.rc, CT_ELIMIT);
    assert_string_equal(o.out, "");
    free(o.out);
    /* a deadline already passed stops the run at its first check, whatever else */
    struct qlast_budget late = {1000, 1000, 100000, 1000, 1};
    o = run(f, one, &late);
    assert_int_equal(o.rc, CT_ELIMIT);
    assert_string_equal(o.out, "");
    assert_non_null(strstr(o.msg, "more than 0 us"));
    free(o.out);
    eight.max_series = 10;
    o = run(f, two, &eight);
    assert_int_equal(o.rc, CT_OK);
    assert_int_equal(count_of(o.out, "\"tsuid\""), 10);
    free(o.out);
    /* sys.big's newest row holds 600 cells */
    const char *big = "{\"queries\":[{\"metric\":\"sys.big\"}],\"backScan\":1}";
    struct qlast_budget cells = {1000, 1000, 599, 1000, 0};
    o = run(f, big, &cells);
    assert_int_equal(o.rc, CT_ELIMIT);
    assert_string_equal(o.out, "");
    assert_non_null(strstr(o.msg, "more than 599 cells"));
    free(o.out);
    cells.max_cells = 600;
    o = run(f, big, &cells);
    assert_int_equal(o.rc, CT_OK);
    assert_non_null(strstr(o.out, "\"value\":\"599\""));
    free(o.out);
}

/* A URL's parameters for qlast_parse_params: "name=value" strings, a flag without '='. */
static const char *params_at(void *arg, const char *name, size_t idx)
{
    const char *const *kv = arg;
    size_t nl = strlen(name);
    for (; *kv; kv++) {
        if (strncmp(*kv, name, nl) || ((*kv)[nl] != '=' && (*kv)[nl] != 0))
            continue;
        if (idx-- == 0)
            return (*kv)[nl] ? *kv + nl + 1 : "";
    }
    return NULL;
}

/* QueryRpc.handleLastDataPointQuery answers a request without sub queries, in either form,
 * with "Missing sub queries", and a back_scan that is not an int with its own message. */
static void test_parse_errors_are_opentsdbs(void **state)
{
    (void)state;
    static const struct {
        const char *params[3]; /* GET form, or NULL: body is the POST form */
        const char *body;
        const char *msg;
    } cases[] = {
        {{NULL}, NULL, "Missing sub queries"},
        {{"resolve", "back_scan=2"}, NULL, "Missing sub queries"},
        {{"timeseries=sys.lat", "back_scan=x"}, NULL, "Unable to parse back_scan parameter"},
        {{"timeseries=sys.lat", "back_scan=2147483648"},
         NULL,
         "Unable to parse back_scan parameter"},
        {{"timeseries=sys.lat", "back_scan= 2"}, NULL, "Unable to parse back_scan parameter"},
        {{NULL}, "{\"queries\":[]}", "Missing sub queries"},
        {{NULL}, "{\"resolveNames\":true}", "Missing sub queries"},
        {{NULL}, "", "Missing message content"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct qlast_req *r = NULL;
        struct ct_err err = {0};
        int rc = cases[i].body ? qlast_parse_json(cases[i].body, strlen(cases[i].body), &r, &err)
                               : qlast_parse_params(params_at, (void *)cases[i].params, &r, &err);
        assert_int_equal(rc, CT_EINVAL);
        assert_null(r);
        assert_string_equal(err.msg, cases[i].msg);
    }
}

/* What QueryRpc.parseLastPointQuery accepts: resolve is on when present, whatever its value;
 * back_scan is any 32-bit int, one not above 0 meaning the default window. */
static void test_params_are_read_as_opentsdb_reads_them(void **state)
{
    (void)state;
    static const struct {
        const char *params[4];
        bool resolve;
        int64_t back_scan_h;
    } cases[] = {
        {{"timeseries=sys.lat"}, false, 0},
        {{"timeseries=sys.lat", "resolve"}, true, 0},
        {{"timeseries=sys.lat", "resolve=false", "back_scan=-3"}, true, 0},
        {{"timeseries=sys.lat", "resolve=true", "back_scan=+5"}, true, 5},
        {{"timeseries=sys.lat", "back_scan=0"}, false, 0},
        {{"timeseries=sys.lat", "back_scan=2147483647"}, false, 2147483647},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct qlast_req *r = NULL;
        struct ct_err err = {0};
        assert_int_equal(qlast_parse_params(params_at, (void *)cases[i].params, &r, &err), CT_OK);
        assert_int_equal(r->resolve, cases[i].resolve);
        assert_int_equal(r->back_scan_h, cases[i].back_scan_h);
        qlast_req_free(r);
    }
    const char *body = "{\"queries\":[{\"metric\":\"sys.lat\"}],\"backScan\":-2}";
    struct qlast_req *r = NULL;
    struct ct_err err = {0};
    assert_int_equal(qlast_parse_json(body, strlen(body), &r, &err), CT_OK);
    assert_int_equal(r->back_scan_h, 0);
    qlast_req_free(r);
}

/* The i-th "tsuid" of an answer (copied into out), false past the last. */
static bool nth_tsuid(const char *ans, size_t i, char *out, size_t cap)
{
    const char *p = ans;
    for (size_t k = 0; (p = strstr(p, "\"tsuid\":\"")) != NULL; k++) {
        p += 9;
        const char *e = strchr(p, '"');
        assert_non_null(e);
        if (k == i) {
            snprintf(out, cap, "%.*s", (int)(e - p), p);
            return true;
        }
    }
    return false;
}

/* QueryRpc.handleLastDataPointQuery adds every sub-query's points to one list: a series named by
 * two sub-queries (metric and tags twice, a metric query and a TSUID, a TSUID listed twice) is
 * answered each time, each sub-query's points after the ones before it; and a sub-query with
 * TSUIDs ignores its metric and tags (an unknown metric there is no error). */
static void test_duplicate_sub_queries_are_each_answered_in_request_order(void **state)
{
    struct tsdb_fixture *f = *state;
    struct outcome o =
        run(f, "{\"queries\":[{\"metric\":\"sys.lat\",\"tags\":{\"host\":\"l1\"}}]}", NULL);
    char l1[64], l2[64], w[64], got[64];
    assert_true(nth_tsuid(o.out, 0, l1, sizeof(l1)));
    free(o.out);
    o = run(f, "{\"queries\":[{\"metric\":\"sys.lat\",\"tags\":{\"host\":\"l2\"}}]}", NULL);
    assert_true(nth_tsuid(o.out, 0, l2, sizeof(l2)));
    free(o.out);
    o = run(f, "{\"queries\":[{\"metric\":\"sys.wide\",\"tags\":{\"host\":\"w07\"}}]}", NULL);
    assert_true(nth_tsuid(o.out, 0, w, sizeof(w)));
    free(o.out);
    assert_true(strcmp(l1, l2) < 0);

    char body[1024];
    snprintf(body, sizeof(body),
             "{\"queries\":[{\"metric\":\"sys.lat\",\"tags\":{\"host\":\"l2\"}},"
             "{\"metric\":\"sys.lat\",\"tags\":{\"host\":\"l1\",\"dc\":\"q\"}},"
             "{\"metric\":\"sys.lat\",\"tags\":{\"host\":\"l2\"}},"
             "{\"metric\":\"sys.nope\",\"tsuids\":[\"%s\",\"%s\"]},"
             "{\"metric\":\"sys.wide\",\"tags\":{\"host\":\"w07\"}},"
             "{\"metric\":\"sys.lat\",\"tags\":{\"dc\":\"q\"}}]}",
             l1, l1);
    const char *want[] = {l2, l1, l2, l1, l1, w};
    for (int bounded = 0; bounded < 2; bounded++) {
        const struct qlast_budget ample = {1000, 100000, 100000, 1000, 0};
        o = run(f, body, bounded ? &ample : NULL);
        assert_int_equal(o.rc, CT_OK);
        size_t i = 0;
        for (; i < sizeof(want) / sizeof(want[0]); i++) {
            assert_true(nth_tsuid(o.out, i, got, sizeof(got)));
            assert_string_equal(got, want[i]);
        }
        /* the last sub-query: every dc=q series once, in TSUID order, l1 among them again */
        char prev[64] = "";
        size_t dcq = 0;
        bool l1_again = false;
        for (; nth_tsuid(o.out, i, got, sizeof(got)); i++, dcq++) {
            assert_true(strcmp(prev, got) < 0);
            l1_again |= !strcmp(got, l1);
            snprintf(prev, sizeof(prev), "%s", got);
        }
        assert_true(dcq >= 2);
        assert_true(l1_again);
        free(o.out);
    }
}

/* The newest point of a row is not its last cell: a millisecond qualifier sorts after every
 * seconds one, so a row holding a seconds point at 100 s and a millisecond one at 50.5 s ends
 * with the older point; and a row whose newest point is a millisecond one, a double among
 * integers. The scan folds every cell (dpcodec_newest); taking the last cell would answer
 * 50,500 ms for "o1" (fails if the fold or the cell filter drops a cell). By metric and by
 * TSUID (point gets), plain and within a budget. */
static void test_the_newest_point_is_not_the_last_cell(void **state)
{
    struct tsdb_fixture *f = *state;
    const char *k[2] = {"host", "dc"}, *o1[2] = {"o1", "q"}, *o2[2] = {"o2", "q"};
    tsdb_fixture_put(f->t, "sys.order", k, o1, 2, dpcodec_point_int((H + 100) * 1000, false, 1));
    tsdb_fixture_put(f->t, "sys.order", k, o1, 2,
                     dpcodec_point_int((H + 50) * 1000 + 500, true, 2));
    tsdb_fixture_put(f->t, "sys.order", k, o2, 2, dpcodec_point_int((H + 10) * 1000, false, 3));
    tsdb_fixture_put(f->t, "sys.order", k, o2, 2,
                     dpcodec_point_real((H + 20) * 1000 + 500, true, 4.25));
    char want1[64], want2[64];
    snprintf(want1, sizeof(want1), "\"timestamp\":%lld,\"value\":\"1\"",
             (long long)(H + 100) * 1000);
    snprintf(want2, sizeof(want2), "\"timestamp\":%lld,\"value\":\"4.25\"",
             (long long)(H + 20) * 1000 + 500);
    const struct qlast_budget ample = {1000, 100000, 100000, 1000, 0};
    for (int bounded = 0; bounded < 2; bounded++) {
        struct outcome o =
            run(f, "{\"queries\":[{\"metric\":\"sys.order\",\"tags\":{\"dc\":\"q\"}}]}",
                bounded ? &ample : NULL);
        assert_int_equal(o.rc, CT_OK);
        assert_non_null(strstr(o.out, want1));
        assert_non_null(strstr(o.out, want2));
        char t1[64], t2[64], t3[64], body[256];
        assert_true(nth_tsuid(o.out, 0, t1, sizeof(t1)));
        assert_true(nth_tsuid(o.out, 1, t2, sizeof(t2)));
        assert_false(nth_tsuid(o.out, 2, t3, sizeof(t3)));
        free(o.out);
        snprintf(body, sizeof(body), "{\"queries\":[{\"tsuids\":[\"%s\",\"%s\"]}]}", t1, t2);
        o = run(f, body, bounded ? &ample : NULL);
        assert_int_equal(o.rc, CT_OK);
        assert_non_null(strstr(o.out, want1));
        assert_non_null(strstr(o.out, want2));
        free(o.out);
    }
}

/* A back-scan metric query whose tags the complete tag index picks reads its series' hours by
 * point gets (qlast.c, last_of_metric step 0): every body answers byte for byte as the scan
 * path did before the index was marked complete (bounded and not), and the fully tagged series
 * that the scan path reads with 3 hour scans and a row read (test_each_bound_...) now takes the
 * index read and one get. */
static void test_the_tag_index_path_answers_as_the_scan(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    size_t nb = sizeof(bodies) / sizeof(bodies[0]);
    struct outcome want[sizeof(bodies) / sizeof(bodies[0])];
    for (size_t i = 0; i < nb; i++)
        want[i] = run(f, bodies[i], NULL);
    const struct qlast_budget two = {2, 100, 100, 1, 0};
    struct outcome o = run(f, bodies[0], &two);
    assert_int_equal(o.rc, CT_ELIMIT); /* the scan path: 3 hour scans + 1 row read */
    free(o.out);
    struct ct_err err = {0};
    uint64_t n = 0;
    assert_int_equal(tagidx_rebuild(f->t, &n, &err), CT_OK);
    bool complete = false;
    assert_int_equal(tagidx_complete(f->t, &complete, &err), CT_OK);
    assert_true(complete);
    o = run(f, bodies[0], &two);
    assert_int_equal(o.rc, CT_OK);
    assert_string_equal(o.out, want[0].out);
    free(o.out);
    const struct qlast_budget ample = {1000, 100000, 100000, 1000, 0};
    for (size_t i = 0; i < nb; i++) {
        for (int bounded = 0; bounded < 2; bounded++) {
            o = run(f, bodies[i], bounded ? &ample : NULL);
            assert_int_equal(o.rc, want[i].rc);
            assert_int_equal(o.st, want[i].st);
            assert_string_equal(o.out, want[i].out);
            assert_string_equal(o.msg, want[i].msg);
            free(o.out);
        }
        free(want[i].out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_the_newest_point_is_not_the_last_cell, setup_unsalted,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_the_newest_point_is_not_the_last_cell, setup_salted,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_bounded_runs_answer_like_unbounded_ones_or_write_nothing, setup_unsalted,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_bounded_runs_answer_like_unbounded_ones_or_write_nothing, setup_salted, teardown),
        cmocka_unit_test_setup_teardown(test_each_bound_ends_a_run_that_passes_it, setup_unsalted,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_duplicate_sub_queries_are_each_answered_in_request_order, setup_unsalted,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_duplicate_sub_queries_are_each_answered_in_request_order, setup_salted, teardown),
        cmocka_unit_test_setup_teardown(test_the_tag_index_path_answers_as_the_scan,
                                        setup_unsalted, teardown),
        cmocka_unit_test_setup_teardown(test_the_tag_index_path_answers_as_the_scan, setup_salted,
                                        teardown),
        cmocka_unit_test(test_parse_errors_are_opentsdbs),
        cmocka_unit_test(test_params_are_read_as_opentsdb_reads_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
