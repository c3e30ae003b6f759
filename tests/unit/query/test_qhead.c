/* test_qhead.c - queries read the ingest head (schema/head.h) and the stored rows as one: the same
 * dataset is written once wholly as stored cells (fixture A) and once with its two newest hours
 * in a head (fixture B: the older hours stored, the newest ones appended to the head, the points
 * the head refuses - out of order, or a timestamp it already holds - stored as single cells, as
 * the TSD does). Every /api/query (raw, downsampled, rates, group-by, filters, ranges straddling
 * the head's hours; downsamples folded by qrollup's raw source with the head's points merged,
 * 0all and intervals dividing an hour among them) and every /api/query/last (metric, tags, back_scan, TSUID) answers byte for
 * byte alike on A and on B with the head passed in the options, salted and unsalted, on one and
 * on four scan threads. Without the head, B answers differently (the test would notice a query
 * that ignores it). The same for a backfill (fixture B's head with backfill on and every hour
 * closed: all four hours offered to the head, the oldest of each series handed to B's store as
 * one cell for room, the rest held in backfill chunks). Skipped when this build has no embedded
 * engine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/qexec.h"
#include "query/qlast.h"
#include "query/qspec.h"
#include "schema/head.h"
#include "schema/rowkey.h"
#include "schema/tsdb.h"
#include "tests/lib/ctest.h"
#include "tests/lib/tsdb_fixture.h"

static const int64_t T0 = 1356998400;         /* the first hour */
static const int64_t HEAD_FROM = 1356998400 + 7200; /* hours from here are in B's head */
static const int64_t NOW_MS = (1356998400LL + 4 * 3600 - 100) * 1000;

enum { NS = 30, HEAD_ONLY = 25 }; /* hosts h25..h29 have points in the last hour only */

struct pair {
    struct tsdb_fixture *a, *b;
    struct head *h;
    /* a backfill (setup_backfill_*): every hour is closed and B's head takes them all with
     * backfill on; the oldest hour of each series goes to B's store as one cell for room */
    bool backfill;
    size_t room_cells;
};

static void resolve(struct tsdb *t, int host, uint8_t *ts, size_t *tl)
{
    char hn[16], dc[8];
    snprintf(hn, sizeof(hn), "h%02d", host);
    snprintf(dc, sizeof(dc), "d%d", host % 2);
    const char *k[2] = {"host", "dc"}, *v[2] = {hn, dc};
    struct ct_err err = {0};
    if (tsdb_series_resolve(t, "r.m", k, v, 2, ts, ROWKEY_MAX_TSUID, tl, &err) != CT_OK)
        fail_msg("resolve: %s", err.msg);
}

static void store_put(struct tsdb *t, int host, struct dpcodec_point p)
{
    uint8_t ts[ROWKEY_MAX_TSUID];
    size_t tl;
    resolve(t, host, ts, &tl);
    struct ct_err err = {0};
    struct tsdb_batch *b = NULL;
    if (tsdb_batch_new(4, &b, &err) != CT_OK ||
        tsdb_batch_add(b, tsdb_layout(t), ts, tl, &p, &err) != CT_OK ||
        tsdb_batch_write(t, b, WC_DURABILITY_SKIP_WAL, &err) != CT_OK)
        fail_msg("put: %s", err.msg);
    tsdb_batch_free(b);
}

/* B's write path: the head takes the points of its hours it can, the rest are stored cells. */
static void head_put(struct pair *p, int host, struct dpcodec_point pt)
{
    if (!p->backfill && pt.ts_ms < HEAD_FROM * 1000) {
        store_put(p->b->t, host, pt);
        return;
    }
    uint8_t ts[ROWKEY_MAX_TSUID];
    size_t tl;
    resolve(p->b->t, host, ts, &tl);
    enum head_result res;
    struct ct_err err = {0};
    assert_int_equal(head_append(p->h, ts, tl, &pt, &res, &err), CT_OK);
    if (res != HEAD_TAKEN)
        store_put(p->b->t, host, pt);
}

static struct dpcodec_point value_at(int host, int64_t ts_s, int k)
{
    if (host % 2 == 0)
        return dpcodec_point_int(ts_s * 1000, false, 1000 * host + k * (k % 7 - 3));
    return dpcodec_point_real(ts_s * 1000, false, host + k * 0.37 - (k % 5) * 1.5);
}

static void fill(struct pair *p)
{
    for (int k = 0; k < 4 * 360; k++) {
        int64_t ts = T0 + 10 * k;
        for (int host = 0; host < NS; host++) {
            if (host >= HEAD_ONLY && ts < T0 + 3 * 3600)
                continue;
            struct dpcodec_point pt = value_at(host, ts, k);
            store_put(p->a->t, host, pt);
            head_put(p, host, pt);
        }
    }
    /* out of order in a head hour: between two points the head holds (a stored cell in B) */
    struct dpcodec_point late = dpcodec_point_real((HEAD_FROM + 5) * 1000, false, 7.5);
    store_put(p->a->t, 1, late);
    head_put(p, 1, late);
    late = dpcodec_point_int((HEAD_FROM + 3605) * 1000, false, -42);
    store_put(p->a->t, 2, late);
    head_put(p, 2, late);
    /* a timestamp the head holds, written again with another value: the latest write wins in
     * both (A: a newer single cell over the first; B: the head replaces its point) */
    struct dpcodec_point again = dpcodec_point_int((HEAD_FROM + 20) * 1000, false, 999999);
    store_put(p->a->t, 4, again);
    head_put(p, 4, again);
}

/* The room function of B's backfill head: the series-hour as one compressed cell in B's store,
 * as the TSD's hand-off writes it. */
static int room_cell(void *arg, const uint8_t *tsuid, size_t tlen, int64_t base_s,
                     bool replayed, const struct dpcodec_point *pts, size_t n, struct ct_err *err)
{
    (void)replayed;
    struct pair *p = arg;
    struct tsdb *t = p->b->t;
    uint8_t row[ROWKEY_MAX_BYTES], q[DPCODEC_CQ_LEN];
    size_t rl = rowkey_encode(tsdb_layout(t), tsuid, tlen, base_s, row), vl = 0;
    uint8_t *v = malloc(dpcodec_compressed_bound(n));
    assert_non_null(v);
    dpcodec_compressed_qualifier(pts, n, q);
    int rc = dpcodec_compressed_encode(base_s, pts, n, v, &vl, err);
    if (rc == CT_OK) {
        struct wc_mutation m = {
            WC_OP_PUT, wc_bytes_str(TSDB_DATA_FAMILY), {q, sizeof(q)}, {v, vl}, WC_TS_LATEST};
        struct wc_row_mutation rm = {{row, rl}, &m, 1};
        rc = wc_mutate_batch(tsdb_data_table(t), &rm, 1, WC_DURABILITY_SKIP_WAL, err);
    }
    free(v);
    if (rc == CT_OK)
        p->room_cells++;
    return rc;
}

static int setup_n(void **state, unsigned salt, bool backfill)
{
    struct pair *p = calloc(1, sizeof(*p));
    p->a = tsdb_fixture_open(salt);
    p->b = tsdb_fixture_open(salt);
    struct ct_err err = {0};
    if (!p->a || !p->b || head_new(&p->h, &err) != CT_OK) {
        tsdb_fixture_close(p->a);
        tsdb_fixture_close(p->b);
        free(p);
        *state = NULL;
        return 0;
    }
    if (backfill) {
        p->backfill = true;
        head_set_closed_before(p->h, T0 + 24 * 3600);
        head_set_backfill(p->h, true, 0, room_cell, p);
    }
    fill(p);
    if (backfill) /* hour 0 of the 25 series that have one went for room */
        assert_int_equal(p->room_cells, HEAD_ONLY);
    *state = p;
    return 0;
}

static int setup_salted(void **state)
{
    return setup_n(state, 4, false);
}

static int setup_unsalted(void **state)
{
    return setup_n(state, 0, false);
}

static int setup_backfill_salted(void **state)
{
    return setup_n(state, 4, true);
}

static int setup_backfill_unsalted(void **state)
{
    return setup_n(state, 0, true);
}

static int teardown(void **state)
{
    struct pair *p = *state;
    if (p) {
        tsdb_fixture_close(p->a);
        tsdb_fixture_close(p->b);
        head_free(p->h);
        free(p);
    }
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

static char *run_query(struct tsdb_fixture *f, struct head *h, const char *const *params,
                       unsigned threads)
{
    struct kv kv = {params};
    struct qspec *q = NULL;
    struct ct_err err = {0};
    if (qspec_parse_params(get_param, &kv, NOW_MS, &q, &err) != CT_OK)
        fail_msg("parse: %s", err.msg);
    struct qexec_options o;
    qexec_options_init(&o);
    o.scan_threads = threads;
    o.head = h;
    enum qexec_status st;
    char *json;
    if (tsdb_fixture_run(f->t, q, &o, &json, &st, &err) != CT_OK)
        fail_msg("query: %d %s", (int)st, err.msg);
    return json;
}

/* Runs params on B with the head and returns what the series held after the scan. */
static uint64_t held_points(struct pair *p, const char *const *params, bool general)
{
    struct kv kv = {params};
    struct qspec *q = NULL;
    struct ct_err err = {0};
    if (qspec_parse_params(get_param, &kv, NOW_MS, &q, &err) != CT_OK)
        fail_msg("parse: %s", err.msg);
    struct qexec_options o;
    qexec_options_init(&o);
    o.head = p->h;
    o.general_only = general;
    struct tsdb_fixture_buf b = {0};
    struct qjson *j = qjson_new(tsdb_fixture_sink, &b, 64);
    assert_non_null(j);
    struct qexec_stats st;
    memset(&st, 0, sizeof(st));
    enum qexec_status status;
    if (qexec_run(p->b->t, q, &o, j, &status, &st, &err) != CT_OK)
        fail_msg("query: %s", err.msg);
    qjson_free(j);
    qspec_free(q);
    free(b.data);
    return st.held_points;
}

static char *run_last(struct tsdb_fixture *f, struct head *h, const char *body)
{
    struct qlast_req *r = NULL;
    struct ct_err err = {0};
    assert_int_equal(qlast_parse_json(body, strlen(body), &r, &err), CT_OK);
    r->head = h;
    struct tsdb_fixture_buf b = {0};
    struct qjson *j = qjson_new(tsdb_fixture_sink, &b, 0);
    enum qexec_status st;
    if (qlast_run(f->t, r, NOW_MS, j, &st, &err) != CT_OK)
        fail_msg("qlast_run: %s", err.msg);
    assert_int_equal(qjson_flush(j), CT_OK);
    qjson_free(j);
    qlast_req_free(r);
    return b.data;
}

static void test_queries_answer_alike_from_head_and_store(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct pair *p = *state;
    size_t ns = 0, nc = 0;
    uint64_t np = 0;
    head_counts(p->h, &ns, &nc, &np);
    assert_int_equal(ns, NS);
    assert_true(np > 10000);
    /* start, end, m: ranges inside the stored hours, straddling into the head, inside it */
    static const char *const qs[][3] = {
        {"start=1356998400", "end=1357012800", "m=sum:r.m"},
        {"start=1356998400", "end=1357012800", "m=none:r.m"},
        {"start=1357003000", "end=1357010000", "m=sum:1m-avg:r.m{dc=*}"},
        {"start=1357003000", "end=1357010000", "m=max:10m-max:r.m{host=h01|h02|h04|h27}"},
        {"start=1357005000", "end=1357006000", "m=sum:rate:r.m{host=*}"},
        {"start=1357005000", "end=1357012800", "m=avg:rate{counter}:r.m{dc=d0}"},
        {"start=1357006800", "end=1357007000", "m=none:r.m{host=h04}"},
        {"start=1357006800", "end=1357012000", "m=zimsum:30s-count:r.m{host=h2*}"},
        {"start=1356998400", "end=1357001000", "m=sum:1m-sum:r.m"},
        {"start=1357010800", "end=1357012800", "m=min:r.m{host=h26}"},
        /* downsamples of whole hours folded row by row (qrollup's raw source), the head's
         * points merged in: buckets before, across and inside the head's hours */
        {"start=1356998400", "end=1357012800", "m=sum:2h-avg:r.m{dc=*}"},
        {"start=1356998400", "end=1357012800", "m=max:3h-max:r.m{host=*}"},
        {"start=1356998400", "end=1357012800", "m=sum:2h-sum:r.m{host=h01|h02|h04|h27}"},
        {"start=1357003000", "end=1357012000", "m=count:2h-count:r.m{dc=*}"},
        {"start=1356998400", "end=1357012800", "m=min:1d-min:r.m"},
        {"start=1356998400", "end=1357012800", "m=avg:1d-avg:r.m{host=*}"},
        /* span buckets with the head (0all, odd intervals, and intervals dividing an hour,
         * which the scan cannot downsample while the head holds points): folded too */
        {"start=1356998400", "end=1357012800", "m=sum:0all-avg:r.m{dc=*}"},
        {"start=1357003000", "end=1357012001", "m=count:0all-count:r.m{host=*}"},
        {"start=1356998400", "end=1357012800", "m=max:7m-max:r.m{host=h01|h02|h04|h27}"},
        {"start=1357003000", "end=1357012000", "m=sum:1h-sum:r.m{dc=*}"},
        {"start=1357003000", "end=1357012000", "m=avg:5m-avg-zero:r.m{host=h2*}"},
    };
    for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
        const char *params[] = {qs[i][0], qs[i][1], qs[i][2], "ms=true", NULL};
        for (unsigned th = 1; th <= 4; th *= 4) {
            char *a = run_query(p->a, NULL, params, th);
            char *b = run_query(p->b, p->h, params, th);
            assert_true(strlen(a) > 2);
            if (strcmp(a, b))
                fail_msg("query %s %s %s (%u threads):\nstore %.300s\nhead  %.300s", qs[i][0],
                         qs[i][1], qs[i][2], th, a, b);
            free(a);
            free(b);
        }
    }
    /* while the head holds points of the window, a 1m downsample is folded as it is read
     * (qrollup's raw source), not kept as raw points: one point a series and bucket */
    const char *hp[] = {"start=1357003000", "end=1357012000", "m=sum:1m-avg:r.m", NULL};
    uint64_t folded = held_points(p, hp, false), raw = held_points(p, hp, true);
    assert_true(folded <= (uint64_t)NS * (2 * 3600 / 60 + 1 + 2 * 60));
    assert_true(raw > 5 * folded);
    /* the head is what makes them alike: without it B misses points of the head's hours */
    const char *params[] = {"start=1357006800", "end=1357012800", "m=sum:r.m", NULL};
    char *a = run_query(p->a, NULL, params, 1), *b = run_query(p->b, NULL, params, 1);
    assert_string_not_equal(a, b);
    free(a);
    free(b);
}

static void test_last_answers_alike_from_head_and_store(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct pair *p = *state;
    uint8_t ts[ROWKEY_MAX_TSUID];
    size_t tl;
    resolve(p->a->t, 27, ts, &tl);
    char hex[2 * ROWKEY_MAX_TSUID + 1];
    for (size_t i = 0; i < tl; i++)
        snprintf(hex + 2 * i, 3, "%02X", ts[i]);
    char tsq[2 * ROWKEY_MAX_TSUID + 64];
    snprintf(tsq, sizeof(tsq), "{\"queries\":[{\"tsuids\":[\"%s\"]}]}", hex);
    const char *bodies[] = {
        "{\"queries\":[{\"metric\":\"r.m\"}],\"resolveNames\":true}",
        "{\"queries\":[{\"metric\":\"r.m\",\"tags\":{\"dc\":\"d1\"}}],\"backScan\":3}",
        "{\"queries\":[{\"metric\":\"r.m\",\"tags\":{\"host\":\"h02\"}}],\"backScan\":1}",
        tsq,
    };
    for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        char *a = run_last(p->a, NULL, bodies[i]);
        char *b = run_last(p->b, p->h, bodies[i]);
        assert_true(strlen(a) > 2);
        if (strcmp(a, b))
            fail_msg("last %s:\nstore %.300s\nhead  %.300s", bodies[i], a, b);
        free(a);
        free(b);
    }
    char *b = run_last(p->b, NULL, bodies[0]), *a = run_last(p->a, NULL, bodies[0]);
    assert_string_not_equal(a, b);
    free(a);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_queries_answer_alike_from_head_and_store,
                                        setup_salted, teardown),
        cmocka_unit_test_setup_teardown(test_queries_answer_alike_from_head_and_store,
                                        setup_unsalted, teardown),
        cmocka_unit_test_setup_teardown(test_last_answers_alike_from_head_and_store, setup_salted,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_last_answers_alike_from_head_and_store,
                                        setup_unsalted, teardown),
        cmocka_unit_test_setup_teardown(test_queries_answer_alike_from_head_and_store,
                                        setup_backfill_salted, teardown),
        cmocka_unit_test_setup_teardown(test_queries_answer_alike_from_head_and_store,
                                        setup_backfill_unsalted, teardown),
        cmocka_unit_test_setup_teardown(test_last_answers_alike_from_head_and_store,
                                        setup_backfill_salted, teardown),
        cmocka_unit_test_setup_teardown(test_last_answers_alike_from_head_and_store,
                                        setup_backfill_unsalted, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
