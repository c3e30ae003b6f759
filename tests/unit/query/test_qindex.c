/* test_qindex.c - the tag index (schema/tagidx.h) in query planning (query/qindex.h), on a real
 * embedded store (salted, 4 buckets): the exact key ranges built, and answers identical with and
 * without the index over random filter sets, also after a delete leaves stale entries and while
 * the index is incomplete. Skipped when this build has no embedded engine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/qexec.h"
#include "query/qindex.h"
#include "query/qpool.h"
#include "query/qspec.h"
#include "schema/rowkey.h"
#include "schema/tagidx.h"
#include "schema/tsdb.h"
#include "storage/wc.h"
#include "tests/lib/ctest.h"
#include "tests/lib/tsdb_fixture.h"

static const int64_t NOW = 1357020000000LL;
#define T0     1356998400LL /* an hour boundary */
#define NHOST  48
#define NHOURS 3

static void put(struct tsdb *t, int host, int64_t ts_s, int64_t v)
{
    char h[16], dc[8], rack[8];
    snprintf(h, sizeof(h), "h%02d", host);
    snprintf(dc, sizeof(dc), "d%d", host % 4);
    snprintf(rack, sizeof(rack), "r%d", host % 5);
    const char *k[3] = {"host", "dc", "rack"}, *vals[3] = {h, dc, rack};
    tsdb_fixture_put(t, "sys.cpu", k, vals, 3, dpcodec_point_int(ts_s * 1000, false, v));
}

static int setup(void **state)
{
    struct tsdb_fixture *f = tsdb_fixture_open(4);
    *state = f;
    if (!f)
        return 0;
    for (int h = 0; h < NHOST; h++)
        for (int i = 0; i < NHOURS * 6; i++) /* every 10 minutes */
            put(f->t, h, T0 + i * 600 + h, h * 1000 + i);
    /* one series of another metric sharing the tag values */
    const char *k[1] = {"host"}, *v[1] = {"h01"};
    tsdb_fixture_put(f->t, "sys.mem", k, v, 1, dpcodec_point_int(T0 * 1000, false, 7));
    return 0;
}

static int teardown(void **state)
{
    tsdb_fixture_close(*state);
    return 0;
}

struct kv {
    const char *const *p;
};

static const char *get_param(void *arg, const char *name, size_t idx)
{
    const struct kv *kv = arg;
    size_t nl = strlen(name), seen = 0;
    for (size_t i = 0; kv->p[i]; i++) {
        if (strncmp(kv->p[i], name, nl) || (kv->p[i][nl] != '=' && kv->p[i][nl]))
            continue;
        if (seen++ == idx)
            return kv->p[i][nl] == '=' ? kv->p[i] + nl + 1 : "";
    }
    return NULL;
}

/* Runs m over the data's hours; index_ranges 0 = without the index. */
static char *run(struct tsdb_fixture *f, const char *m, uint64_t index_ranges, bool del,
                 struct qexec_stats *st)
{
    char start[32], end[32];
    snprintf(start, sizeof(start), "start=%lld", T0);
    snprintf(end, sizeof(end), "end=%lld", T0 + NHOURS * 3600 - 1);
    const char *p[] = {start, end, m, NULL};
    struct kv kv = {p};
    struct qspec *q = NULL;
    struct ct_err err = {0};
    assert_int_equal(qspec_parse_params(get_param, &kv, NOW, &q, &err), CT_OK);
    q->delete_data = del;
    struct qexec_options o;
    qexec_options_init(&o);
    o.index_ranges = index_ranges;
    o.allow_delete = del;
    o.scan_threads = 2;
    struct tsdb_fixture_buf b = {0};
    struct qjson *j = qjson_new(tsdb_fixture_sink, &b, 64);
    assert_non_null(j);
    enum qexec_status status;
    memset(st, 0, sizeof(*st));
    if (qexec_run(f->t, q, &o, j, &status, st, &err) != CT_OK)
        fail_msg("%s: %s", m, err.msg);
    assert_int_equal(qjson_flush(j), CT_OK);
    qjson_free(j);
    qspec_free(q);
    return b.data ? b.data : strdup("");
}

/* Runs m over the data's hours with the index on, on `pool`, scan_threads as given. */
static char *run_pool(struct tsdb_fixture *f, const char *m, struct qpool *pool, unsigned threads,
                      struct qexec_stats *st)
{
    char start[32], end[32];
    snprintf(start, sizeof(start), "start=%lld", T0);
    snprintf(end, sizeof(end), "end=%lld", T0 + NHOURS * 3600 - 1);
    const char *p[] = {start, end, m, NULL};
    struct kv kv = {p};
    struct qspec *q = NULL;
    struct ct_err err = {0};
    assert_int_equal(qspec_parse_params(get_param, &kv, NOW, &q, &err), CT_OK);
    struct qexec_options o;
    qexec_options_init(&o);
    o.pool = pool;
    o.scan_threads = threads;
    struct tsdb_fixture_buf b = {0};
    struct qjson *j = qjson_new(tsdb_fixture_sink, &b, 64);
    assert_non_null(j);
    enum qexec_status status;
    memset(st, 0, sizeof(*st));
    if (qexec_run(f->t, q, &o, j, &status, st, &err) != CT_OK)
        fail_msg("%s: %s", m, err.msg);
    assert_int_equal(qjson_flush(j), CT_OK);
    qjson_free(j);
    qspec_free(q);
    return b.data ? b.data : strdup("");
}

static void build_index(struct tsdb_fixture *f)
{
    struct ct_err err = {0};
    uint64_t n = 0;
    bool c = true;
    assert_int_equal(tagidx_complete(f->t, &c, &err), CT_OK);
    assert_false(c);
    assert_int_equal(tagidx_rebuild(f->t, &n, &err), CT_OK);
    assert_int_equal(n, NHOST + 1);
    assert_int_equal(tagidx_complete(f->t, &c, &err), CT_OK);
    assert_true(c);
}

static bool never_busy(void *arg)
{
    (void)arg;
    return false;
}

/* A query the index answers with a few exact ranges runs on the calling thread alone; one with
 * more ranges, or the same one with a thread count asked for, uses the executor's threads. */
static void test_qindex_few_ranges_run_on_one_thread(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    build_index(f);
    struct qpool_options po;
    qpool_options_init(&po);
    po.helpers = 3;
    po.threads = 4;
    po.busy = never_busy; /* the machine's load plays no part */
    struct qpool *pool = NULL;
    struct ct_err err = {0};
    assert_int_equal(qpool_new(&po, &pool, &err), CT_OK);
    struct qexec_stats one, many, asked;
    /* one series over the window's 3-4 hours: at most 4 ranges */
    char *a = run_pool(f, "m=sum:sys.cpu{host=h07}", pool, 0, &one);
    char *b = run_pool(f, "m=sum:sys.cpu{host=h07}", pool, 4, &asked);
    assert_true(one.key_ranges <= QEXEC_ONE_THREAD_RANGES);
    assert_int_equal(one.scan_threads, 1);
    assert_true(asked.scan_threads > 1);
    assert_string_equal(a, b);
    /* 12 series x 3-4 hours: over the bound */
    char *c = run_pool(f, "m=sum:sys.cpu{rack=r1,dc=d1|d2}", pool, 0, &many);
    assert_true(many.key_ranges > QEXEC_ONE_THREAD_RANGES);
    assert_true(many.scan_threads > 1);
    free(a);
    free(b);
    free(c);
    qpool_free(pool);
}

/* One series picked by its tags reads exactly its rows: one key range per hour of the window,
 * the series' rows only, where the plain scan walks every series of the metric. */
static void test_qindex_one_series_reads_only_its_rows(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    struct qexec_stats a, b;
    struct qexec_stats c;
    char *plain = run(f, "m=sum:sys.cpu{host=h07}", 16384, false, &a); /* incomplete: unused */
    free(run(f, "m=sum:sys.cpu{host=h07}", 0, false, &c));
    assert_int_equal(a.key_ranges, c.key_ranges);
    assert_int_equal(a.scanners, c.scanners);
    build_index(f);
    char *ix = run(f, "m=sum:sys.cpu{host=h07}", 16384, false, &b);
    assert_string_equal(ix, plain);
    assert_non_null(strstr(ix, "\"dps\":{\""));
    assert_int_equal(b.rows, NHOURS);
    assert_true(b.key_ranges >= NHOURS && b.key_ranges <= NHOURS + 1); /* the window's hours */
    uint64_t per = b.key_ranges;
    free(ix);
    /* three values of a non-leading tag: 12 series each, every hour */
    ix = run(f, "m=sum:sys.cpu{rack=r1,dc=d1|d2}", 16384, false, &b);
    char *p2 = run(f, "m=sum:sys.cpu{rack=r1,dc=d1|d2}", 0, false, &a);
    assert_string_equal(ix, p2);
    size_t want = 0;
    for (int h = 0; h < NHOST; h++)
        want += h % 5 == 1 && (h % 4 == 1 || h % 4 == 2);
    assert_int_equal(b.key_ranges, want * per);
    assert_int_equal(b.rows, want * NHOURS);
    /* past the budget the index is not used: the metric's whole rows again */
    char *p3 = run(f, "m=sum:sys.cpu{rack=r1,dc=d1|d2}", want * per - 1, false, &b);
    assert_string_equal(p3, p2);
    assert_int_equal(b.key_ranges, b.scanners);
    free(ix);
    free(p2);
    free(p3);
    free(plain);
}

/* Random filter sets (literal_or, not_literal_or, wildcard, group-by, several tags) answer the
 * same with and without the index, before and after a delete that leaves stale entries, and a
 * picked series whose rows are all gone answers nothing. */
static void test_qindex_answers_identical_over_random_filters(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    build_index(f);
    static const char *const aggs[] = {"sum", "max", "none", "avg", "count"};
    static const char *const ds[] = {"", "10m-max:", "1h-avg:"};
    srand(20);
    int fewer_buckets = 0;
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 120; i++) {
            char m[256], filt[160] = "";
            size_t fl = 0;
            int nclauses = 1 + rand() % 3;
            bool used[3] = {false, false, false};
            for (int c = 0; c < nclauses; c++) {
                int k = rand() % 3;
                if (used[k])
                    continue;
                used[k] = true;
                const char *key = k == 0 ? "host" : k == 1 ? "dc" : "rack";
                int card = k == 0 ? NHOST : k == 1 ? 4 : 5;
                char vals[96] = "";
                size_t vl = 0;
                int nv = 1 + rand() % 3;
                int kind = rand() % 8; /* 0: not_literal_or, 1: wildcard, else literal */
                for (int v = 0; v < nv; v++)
                    vl += (size_t)snprintf(vals + vl, sizeof(vals) - vl, "%s%s%0*d", v ? "|" : "",
                                           k == 0   ? "h"
                                           : k == 1 ? "d"
                                                    : "r",
                                           k == 0 ? 2 : 1, rand() % card);
                if (kind == 0) {
                    fl += (size_t)snprintf(filt + fl, sizeof(filt) - fl, "%s%s=not_literal_or(%s)",
                                           fl ? "," : "", key, vals);
                } else if (kind == 1) {
                    fl += (size_t)snprintf(filt + fl, sizeof(filt) - fl, "%s%s=*", fl ? "," : "",
                                           key);
                } else {
                    fl += (size_t)snprintf(filt + fl, sizeof(filt) - fl, "%s%s=%s", fl ? "," : "",
                                           key, vals);
                }
            }
            snprintf(m, sizeof(m), "m=%s:%ssys.cpu{%s}", aggs[rand() % 5], ds[rand() % 3], filt);
            struct qexec_stats a, b, c;
            char *plain = run(f, m, 0, false, &a);
            char *ix = run(f, m, 16384, false, &b);
            if (strcmp(ix, plain))
                fail_msg("round %d %s:\n index %.300s\n plain %.300s", round, m, ix, plain);
            assert_true(b.rows <= a.rows);
            /* a budget of one key range: the index's series are too many ranges, so the key
             * range is walked, in the salt buckets they live in only (qindex_buckets) */
            char *bk = run(f, m, 1, false, &c);
            if (strcmp(bk, plain))
                fail_msg("round %d %s:\n buckets %.300s\n plain   %.300s", round, m, bk, plain);
            assert_true(c.scanners <= a.scanners && c.rows <= a.rows);
            fewer_buckets += c.scanners < a.scanners;
            free(plain);
            free(ix);
            free(bk);
        }
        if (round == 0) { /* delete three series' rows: their entries stay, stale */
            struct qexec_stats st;
            free(run(f, "m=sum:sys.cpu{host=h03|h17|h30}", 0, true, &st));
            assert_true(st.rows > 0);
            char *gone = run(f, "m=none:sys.cpu{host=h03|h17|h30}", 16384, false, &st);
            assert_string_equal(gone, "[]");
            free(gone);
            gone = run(f, "m=none:sys.cpu{host=h03|h17|h30}", 1, false, &st);
            assert_string_equal(gone, "[]");
            free(gone);
        }
    }
    assert_true(fewer_buckets > 20); /* filters picking few series skipped salt buckets */
}

/* The ranges: one per series of the bucket and hour, ascending and disjoint, each holding
 * exactly its series' row key (a longer TSUID sharing the prefix lies outside). */
static void test_qindex_ranges_are_exact_and_ordered(void **state)
{
    (void)state;
    struct rowkey_layout l;
    rowkey_layout_init(&l);
    l.salt_width = 1;
    l.salt_buckets = 3;
    uint8_t a[7] = {0, 0, 1, 0, 0, 1, 0}, b[13] = {0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0};
    a[6] = 5;
    b[6] = 5;
    b[12] = 9; /* b = a plus one more tag */
    uint8_t c[7] = {0, 0, 1, 0, 0, 1, 9};
    uint8_t *ts[3] = {a, b, c};
    size_t lens[3] = {7, 13, 7};
    struct ct_err err = {0};
    size_t total = 0;
    for (uint32_t bk = 0; bk < 3; bk++) {
        struct wc_row_range *r = NULL;
        size_t n = 0;
        assert_int_equal(qindex_ranges(&l, bk, T0, T0 + 2 * 3600 + 59, ts, lens, 3, &r, &n, &err),
                         CT_OK);
        size_t mine = 0;
        for (int i = 0; i < 3; i++)
            mine += rowkey_salt_bucket(&l, ts[i], lens[i]) == bk;
        assert_int_equal(n, mine * 3);
        total += n;
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(r[i].stop.len, r[i].start.len + 1);
            assert_memory_equal(r[i].start.data, r[i].stop.data, r[i].start.len);
            assert_int_equal(r[i].stop.data[r[i].start.len], 0);
            assert_int_equal(r[i].start.data[0], bk);
            if (i) { /* the previous stop is at most this start */
                size_t pl = r[i - 1].stop.len, cl = r[i].start.len;
                int cmp = memcmp(r[i - 1].stop.data, r[i].start.data, pl < cl ? pl : cl);
                assert_true(cmp < 0 || (cmp == 0 && pl <= cl));
            }
        }
        free(r);
    }
    assert_int_equal(total, 9);
    struct wc_row_range *r = NULL;
    size_t n = 5;
    assert_int_equal(qindex_ranges(&l, 0, T0, T0, ts, lens, 0, &r, &n, &err), CT_OK);
    assert_null(r);
    assert_int_equal(n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qindex_ranges_are_exact_and_ordered),
        cmocka_unit_test_setup_teardown(test_qindex_few_ranges_run_on_one_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_qindex_one_series_reads_only_its_rows, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_qindex_answers_identical_over_random_filters, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
