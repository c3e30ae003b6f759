/* test_store.c - the TSD's write function (tsd/store.h) on a real embedded store: every point
 * of thousands of series, written in batches through the ingest pipeline, lands in its own
 * series' row (the writers' series cache, grown past its first size, never hands a point
 * another series' TSUID), also after `dropcaches`; bad points get their own outcome; writes
 * wait for a configured memstore ceiling; with the ingest head on, a write whose index fails puts
 * nothing in the head, so its retry is not a duplicate written around the head. Skipped
 * when the embedded engine is not in this build. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/head.h"
#include "schema/tsdb.h"
#include "storage/clock.h"
#include "storage/wc.h"
#include "tests/lib/ctest.h"
#include "tsd/conf.h"
#include "tsd/ingest.h"
#include "tsd/store.h"

#define BASE_S 1356998400LL /* an hour long past */
#define NSER   3000         /* the cache starts at 1024 slots: grows twice */

/* Opens the store in dir with the settings kv[0..n) (key, value, ...) on top of the test's. */
static void open_with(const char *dir, const char *const *kv, size_t n, struct conf **c,
                      struct tsdstore **st)
{
    struct ct_err err = {0};
    assert_int_equal(conf_new(c, &err), CT_OK);
    assert_int_equal(conf_set(*c, "tsd.storage.directory", dir, NULL, &err), CT_OK);
    for (size_t i = 0; i + 1 < n; i += 2)
        assert_int_equal(conf_set(*c, kv[i], kv[i + 1], NULL, &err), CT_OK);
    /* no hourly merge while the test reads single cells */
    assert_int_equal(conf_set(*c, "tsd.storage.enable_compaction", "false", NULL, &err), CT_OK);
    /* points of BASE_S's hour (long closed) go to the store as single cells, not into the
     * head's backfill chunks (docs/head.md), so the test reads them there at once */
    assert_int_equal(conf_set(*c, "tsd.storage.head.backfill_idle_ms", "0", NULL, &err), CT_OK);
    int rc = tsdstore_open(*c, TSDSTORE_CREATE, st, &err);
    if (rc == CT_EUNSUPPORTED)
        skip();
    if (rc != CT_OK)
        fail_msg("tsdstore_open: %s", err.msg);
}

static void open_all(const char *dir, struct conf **c, struct tsdstore **st)
{
    open_with(dir, NULL, 0, c, st);
}

static void series_point(int s, int round, char *host, size_t hn, char *svc, size_t sn,
                         struct put_point *p)
{
    snprintf(host, hn, "host_%d", s / 20);
    snprintf(svc, sn, "svc_%d", s % 20);
    memset(p, 0, sizeof(*p));
    p->metric = (struct put_str){s % 2 ? "cpu.user" : "cpu.idle", 8};
    p->ts_ms = (BASE_S + round * 10) * 1000;
    p->value.kind = PUT_INT;
    p->value.i = s * 10 + round;
    p->ntags = 2;
    p->tagk[0] = (struct put_str){"host", 4};
    p->tagv[0] = (struct put_str){host, strlen(host)};
    p->tagk[1] = (struct put_str){"service", 7};
    p->tagv[1] = (struct put_str){svc, strlen(svc)};
}

/* Writes one point of every series for `round` (series in a shuffled order, batches of 700). */
static void write_round(struct ingest *g, int round)
{
    struct ingest_batch *b = ingest_batch_get(g);
    for (int i = 0; i < NSER; i++) {
        int s = (int)(((unsigned)i * 1237u + (unsigned)round) % NSER);
        char host[32], svc[32];
        struct put_point p;
        series_point(s, round, host, sizeof(host), svc, sizeof(svc), &p);
        if (!ingest_batch_add(b, &p, (uint64_t)s)) {
            ingest_submit(g, b, NULL, NULL);
            b = ingest_batch_get(g);
            assert_true(ingest_batch_add(b, &p, (uint64_t)s));
        }
    }
    ingest_submit(g, b, NULL, NULL);
}

static void check_range(struct tsdstore *st, int from, int to, int rounds)
{
    struct tsdb *t = tsdstore_tsdb(st);
    struct ct_err err = {0};
    for (int s = from; s < to; s++) {
        char host[32], svc[32];
        struct put_point p;
        series_point(s, 0, host, sizeof(host), svc, sizeof(svc), &p);
        const char *k[2] = {"host", "service"}, *v[2] = {host, svc};
        uint8_t tsuid[ROWKEY_MAX_TSUID], row[ROWKEY_MAX_BYTES];
        size_t tl;
        assert_int_equal(tsdb_series_resolve(t, s % 2 ? "cpu.user" : "cpu.idle", k, v, 2, tsuid,
                                             sizeof(tsuid), &tl, &err),
                         CT_OK);
        size_t rl = rowkey_encode(tsdb_layout(t), tsuid, tl, BASE_S, row);
        struct wc_scan_options o;
        wc_scan_options_init(&o);
        struct wc_result r;
        assert_int_equal(wc_get(tsdb_data_table(t), wc_bytes_of(row, rl), &o, &r, &err), CT_OK);
        struct dpcodec_point pts[8];
        size_t n = 0, dups = 0;
        assert_int_equal(
            dpcodec_row_decode(BASE_S, r.row.cells, r.row.ncells, pts, 8, &n, &dups, &err), CT_OK);
        wc_result_release(&r);
        if (n != (size_t)rounds)
            fail_msg("series %d: %zu points, want %d", s, n, rounds);
        for (int i = 0; i < rounds; i++)
            if (pts[i].i != s * 10 + i || pts[i].ts_ms != (BASE_S + i * 10) * 1000)
                fail_msg("series %d point %d: value %lld at %lld", s, i, (long long)pts[i].i,
                         (long long)pts[i].ts_ms);
    }
}

static void check_series(struct tsdstore *st, int rounds)
{
    check_range(st, 0, NSER, rounds);
}

/* Series s holds exactly the points of rounds 0..last. */
static void check_series_point(struct tsdstore *st, int s, int last)
{
    check_range(st, s, s + 1, last + 1);
}

static void test_store_every_point_lands_in_its_own_series(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct conf *c = NULL;
    struct tsdstore *st = NULL;
    open_all(dir, &c, &st);
    struct ingest_options o;
    ingest_options_init(&o);
    o.batch_points = 700;
    struct ingest *g = NULL;
    struct ct_err err = {0};
    assert_int_equal(ingest_new(&o, tsdstore_write, st, &g, &err), CT_OK);
    write_round(g, 0); /* every series new: resolved, cached */
    write_round(g, 1); /* every series cached */
    tsdstore_drop_caches(st);
    write_round(g, 2); /* resolved again after dropcaches */
    ingest_free(g);    /* writes everything submitted */
    check_series(st, 3);
    tsdstore_close(st);
    conf_free(c);
    ctest_rmdir(dir);
}

struct outcomes {
    struct ingest *g;
    enum ingest_outcome o[3];
    char msg[3][256];
    int result;
};

static void record_outcomes(void *arg, struct ingest_batch *b)
{
    struct outcomes *x = arg;
    x->result = ingest_batch_result(b, NULL);
    for (size_t i = 0; i < ingest_batch_count(b) && i < 3; i++) {
        const char *m;
        x->o[i] = ingest_batch_outcome(b, i, &m);
        snprintf(x->msg[i], sizeof(x->msg[i]), "%s", m);
    }
    ingest_batch_release(x->g, b);
}

/* With tsd.storage.memstore_total_bytes at 256 KiB (and a 64 MiB flush size, which alone would
 * flush nothing), the writes wait (in the engine, which the TSD reports as
 * tsd.ingest.memstore_waits) while the memstores are over the ceiling, the engine flushes them,
 * and every point is still written. */
static void test_store_writes_wait_for_the_memstore_ceiling(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct conf *c = NULL;
    struct tsdstore *st = NULL;
    open_with(dir,
              (const char *const[]){"tsd.storage.memstore_total_bytes", "262144",
                                    "tsd.storage.memstore_flush_bytes", "67108864"},
              4, &c, &st);
    struct ct_err err = {0};
    struct wc_store_stats ss;
    assert_int_equal(wc_store_stats(tsdstore_wc(st), &ss, &err), CT_OK);
    assert_int_equal(ss.memstore_waits, 0);
    struct ingest_options o;
    ingest_options_init(&o);
    o.batch_points = 700;
    struct ingest *g = NULL;
    assert_int_equal(ingest_new(&o, tsdstore_write, st, &g, &err), CT_OK);
    for (int round = 0; round < 8; round++)
        write_round(g, round);
    ingest_free(g);
    assert_int_equal(wc_store_stats(tsdstore_wc(st), &ss, &err), CT_OK);
    print_message("memstore ceiling 256 KiB: %llu waits, %llu flushes, %llu bytes left\n",
                  (unsigned long long)ss.memstore_waits, (unsigned long long)ss.flushes,
                  (unsigned long long)ss.memstore_bytes);
    assert_true(ss.memstore_waits > 0);
    assert_true(ss.flushes > 0);
    check_series(st, 8);
    tsdstore_close(st);
    conf_free(c);
    ctest_rmdir(dir);
}

static void test_store_a_bad_point_fails_alone(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct conf *c = NULL;
    struct tsdstore *st = NULL;
    open_all(dir, &c, &st);
    struct ingest *g = NULL;
    struct ct_err err = {0};
    assert_int_equal(ingest_new(NULL, tsdstore_write, st, &g, &err), CT_OK);
    struct outcomes x = {.g = g};
    struct ingest_batch *b = ingest_batch_get(g);
    char host[32], svc[32];
    struct put_point p;
    series_point(7, 0, host, sizeof(host), svc, sizeof(svc), &p);
    assert_true(ingest_batch_add(b, &p, 0));
    p.ts_ms = 99999999999999LL; /* beyond what a row key holds */
    assert_true(ingest_batch_add(b, &p, 1));
    p.ts_ms = (BASE_S + 10) * 1000; /* round 1 of series 7 */
    p.value.i = 71;
    assert_true(ingest_batch_add(b, &p, 2));
    ingest_submit(g, b, record_outcomes, &x);
    ingest_free(g); /* the done callback has run when this returns */
    assert_int_equal(x.result, CT_OK);
    assert_int_equal(x.o[0], INGEST_WRITTEN);
    assert_int_equal(x.o[1], INGEST_ILLEGAL);
    assert_non_null(strstr(x.msg[1], "timestamp"));
    assert_int_equal(x.o[2], INGEST_WRITTEN);
    check_series_point(st, 7, 1);
    tsdstore_close(st);
    conf_free(c);
    ctest_rmdir(dir);
}

static void sum_point_cells(void *arg, const char *metric, int64_t ts_s, const char *value,
                            const char *tags)
{
    (void)ts_s;
    if (!strcmp(metric, "tsd.storage.data.cells") && strstr(tags, "type=point"))
        *(long long *)arg += atoll(value);
}

static long long point_cells(struct tsdstore *st)
{
    long long n = 0;
    tsdstore_stats(st, "t", sum_point_cells, &n, BASE_S);
    return n;
}

static uint64_t head_points(struct tsdstore *st)
{
    size_t ns, nc;
    uint64_t np;
    head_counts(tsdstore_head(st), &ns, &nc, &np);
    return np;
}

/* Writes point `round` of series from..from+n-1 in one batch through an ingest of its own (its
 * free waits for the write); returns the write's result. */
static int write_series(struct tsdstore *st, int from, int n, int round)
{
    struct ingest *g = NULL;
    struct ct_err err = {0};
    assert_int_equal(ingest_new(NULL, tsdstore_write, st, &g, &err), CT_OK);
    struct outcomes x = {.g = g, .result = -1};
    struct ingest_batch *b = ingest_batch_get(g);
    for (int s = from; s < from + n; s++) {
        char host[32], svc[32];
        struct put_point p;
        series_point(s, round, host, sizeof(host), svc, sizeof(svc), &p);
        assert_true(ingest_batch_add(b, &p, (uint64_t)s));
    }
    ingest_submit(g, b, record_outcomes, &x);
    ingest_free(g);
    return x.result;
}

/* With the head on and the clock in BASE_S's hour, a write of new series whose index writes fail
 * (the meta table disabled: every newest-hour and tag index write is refused) is refused and
 * leaves the head unchanged; once the table is enabled again its retry puts every point in the
 * head and none in the store's data table. (Were the points logged and put in the head before a
 * failing index write, the refused write would be in the head and its retry out of order: single
 * cells in the store, and points without index entries.) */
static void test_store_a_write_whose_index_fails_leaves_the_head_unchanged(void **state)
{
    (void)state;
    char now[32];
    snprintf(now, sizeof(now), "%lld", (BASE_S + 1800) * 1000);
    setenv("CTSDB_NOW_MS", now, 1);
    clock_reload();
    char *dir = ctest_mkdtemp();
    struct conf *c = NULL;
    struct tsdstore *st = NULL;
    open_with(dir, (const char *const[]){"tsd.storage.head.enable", "true"}, 2, &c, &st);
    struct ct_err err = {0};
    const char *meta = tsdb_get_config(tsdstore_tsdb(st))->meta_table;
    assert_int_equal(write_series(st, 0, 40, 0), CT_OK); /* the head log exists, some series */
    assert_int_equal(head_points(st), 40);
    assert_int_equal(wc_table_disable(tsdstore_wc(st), meta, &err), CT_OK);
    /* new series: their tag index and newest-hour entries are written with their points */
    assert_int_not_equal(write_series(st, 100, 40, 0), CT_OK);
    assert_int_equal(head_points(st), 40);
    assert_int_equal(wc_table_enable(tsdstore_wc(st), meta, &err), CT_OK);
    assert_int_equal(write_series(st, 100, 40, 0), CT_OK);
    assert_int_equal(head_points(st), 80);
    assert_int_equal(point_cells(st), 0);
    tsdstore_close(st);
    conf_free(c);
    ctest_rmdir(dir);
    unsetenv("CTSDB_NOW_MS");
    clock_reload();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_store_every_point_lands_in_its_own_series),
        cmocka_unit_test(test_store_a_bad_point_fails_alone),
        cmocka_unit_test(test_store_writes_wait_for_the_memstore_ceiling),
        cmocka_unit_test(test_store_a_write_whose_index_fails_leaves_the_head_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
