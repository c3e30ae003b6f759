/* test_engine_concurrency.c - many threads on one store: writers of whole rows (two families,
 * several columns, one value per mutation), scanners in both directions and gets checking that
 * a row is never seen half-written, while flushes, compactions and splits run in the
 * background (tiny memstore, small split size); increments from several threads never lose an
 * update, plain puts racing increments of the same cell are not lost, and concurrent
 * deletes of a cell's latest version each remove a different version. Bounded in operations,
 * not time. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/clock.h"
#include "storage/coding.h"
#include "storage/wc.h"
#include "tests/lib/ctest.h"
#include "tests/lib/fixture.h"

#define WRITERS           3
#define READERS           2
#define ROWS              300
#define WRITES_PER_WRITER 1500

struct ctx {
    struct wc_store *s;
    struct wc_table *t;
    atomic_int writers_done;
    atomic_int bad;
    atomic_long rows_seen;
    char msg[320];
};

static void *writer(void *arg)
{
    struct ctx *c = arg;
    static _Atomic unsigned seed_base = 1;
    unsigned seed = atomic_fetch_add(&seed_base, 7919);
    for (int i = 0; i < WRITES_PER_WRITER; i++) {
        char row[16], val[32];
        snprintf(row, sizeof(row), "row%04u", rand_r(&seed) % ROWS);
        snprintf(val, sizeof(val), "v%u-%d", seed, i);
        struct wc_mutation m[4] = {
            {WC_OP_PUT, wc_bytes_str("a"), wc_bytes_str("x"), wc_bytes_str(val), WC_TS_LATEST},
            {WC_OP_PUT, wc_bytes_str("a"), wc_bytes_str("y"), wc_bytes_str(val), WC_TS_LATEST},
            {WC_OP_PUT, wc_bytes_str("b"), wc_bytes_str("x"), wc_bytes_str(val), WC_TS_LATEST},
            {WC_OP_PUT, wc_bytes_str("b"), wc_bytes_str(""), wc_bytes_str(val), WC_TS_LATEST},
        };
        struct wc_row_mutation rm = {wc_bytes_str(row), m, 4};
        struct ct_err err;
        if (wc_mutate_row(c->t, &rm, WC_DURABILITY_SYNC_WAL, &err) != CT_OK) {
            snprintf(c->msg, sizeof(c->msg), "write: %s", err.msg);
            atomic_fetch_add(&c->bad, 1);
            break;
        }
    }
    atomic_fetch_add(&c->writers_done, 1);
    return NULL;
}

/* All cells of a row carry the value of one mutation. */
static void check_row(struct ctx *c, const struct wc_row *r)
{
    if (r->ncells != 4) {
        snprintf(c->msg, sizeof(c->msg), "row %.*s has %zu cells", (int)r->key.len,
                 (const char *)r->key.data, r->ncells);
        atomic_fetch_add(&c->bad, 1);
        return;
    }
    for (size_t i = 1; i < r->ncells; i++)
        if (r->cells[i].value.len != r->cells[0].value.len ||
            memcmp(r->cells[i].value.data, r->cells[0].value.data, r->cells[0].value.len)) {
            snprintf(c->msg, sizeof(c->msg), "row %.*s is half written", (int)r->key.len,
                     (const char *)r->key.data);
            atomic_fetch_add(&c->bad, 1);
            return;
        }
}

static void *reader(void *arg)
{
    struct ctx *c = arg;
    int pass = 0;
    while (atomic_load(&c->writers_done) < WRITERS && !atomic_load(&c->bad)) {
        struct wc_scan_options o;
        wc_scan_options_init(&o);
        o.reversed = pass++ % 2;
        struct wc_scanner *sc;
        struct ct_err err;
        if (wc_scanner_open(c->t, &o, &sc, &err) != CT_OK) {
            snprintf(c->msg, sizeof(c->msg), "scan: %s", err.msg);
            atomic_fetch_add(&c->bad, 1);
            break;
        }
        struct wc_row r;
        char prev[16] = "";
        int rc;
        while ((rc = wc_scanner_next(sc, &r, &err)) == CT_OK) {
            char key[16];
            snprintf(key, sizeof(key), "%.*s", (int)r.key.len, (const char *)r.key.data);
            if (*prev && (o.reversed ? strcmp(key, prev) >= 0 : strcmp(key, prev) <= 0)) {
                snprintf(c->msg, sizeof(c->msg), "order: %s after %s", key, prev);
                atomic_fetch_add(&c->bad, 1);
            }
            memcpy(prev, key, sizeof(prev));
            check_row(c, &r);
            atomic_fetch_add(&c->rows_seen, 1);
        }
        if (rc != CT_NOTFOUND) {
            snprintf(c->msg, sizeof(c->msg), "scan next: %s", err.msg);
            atomic_fetch_add(&c->bad, 1);
        }
        wc_scanner_close(sc);
        /* a few gets too */
        for (int i = 0; i < 20; i++) {
            char row[16];
            snprintf(row, sizeof(row), "row%04d", (pass * 37 + i * 11) % ROWS);
            struct wc_result res;
            if (wc_get(c->t, wc_bytes_str(row), &o, &res, &err) != CT_OK) {
                snprintf(c->msg, sizeof(c->msg), "get: %s", err.msg);
                atomic_fetch_add(&c->bad, 1);
                break;
            }
            if (res.row.ncells)
                check_row(c, &res.row);
            wc_result_release(&res);
        }
    }
    return NULL;
}

static void test_rows_are_atomic_under_concurrent_writes_flushes_and_splits(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = dir;
    o.block_cache_bytes = 1 << 20;
    o.memstore_flush_bytes = 16 << 10;
    o.region_split_bytes = 64 << 10;
    struct ct_err err;
    struct ctx c = {0};
    assert_int_equal(wc_open(&o, &c.s, &err), CT_OK);
    struct wc_family_desc fd[2];
    wc_family_desc_init(&fd[0], "a");
    wc_family_desc_init(&fd[1], "b");
    fd[0].blocksize = fd[1].blocksize = 1024;
    struct wc_table_desc d;
    wc_table_desc_init(&d, "conc");
    d.families = fd;
    d.nfamilies = 2;
    assert_int_equal(wc_table_create(c.s, &d, NULL, 0, &err), CT_OK);
    assert_int_equal(wc_table_open(c.s, "conc", &c.t, &err), CT_OK);
    pthread_t w[WRITERS], r[READERS];
    for (int i = 0; i < WRITERS; i++)
        assert_int_equal(pthread_create(&w[i], NULL, writer, &c), 0);
    for (int i = 0; i < READERS; i++)
        assert_int_equal(pthread_create(&r[i], NULL, reader, &c), 0);
    /* explicit maintenance from this thread while the others run */
    for (int i = 0; i < 5; i++) {
        assert_int_equal(wc_table_flush(c.s, "conc", &err), CT_OK);
        assert_int_equal(wc_table_compact(c.s, "conc", NULL, i % 2, &err), CT_OK);
        if (wc_table_split(c.s, "conc", NULL, &err) != CT_OK)
            fail_msg("split: %s", err.msg);
    }
    for (int i = 0; i < WRITERS; i++)
        pthread_join(w[i], NULL);
    for (int i = 0; i < READERS; i++)
        pthread_join(r[i], NULL);
    if (atomic_load(&c.bad))
        fail_msg("%d problems, e.g. %s", atomic_load(&c.bad), c.msg);
    assert_int_equal(wc_background_error(c.s, &err), CT_OK);
    struct wc_store_stats st;
    assert_int_equal(wc_store_stats(c.s, &st, &err), CT_OK);
    fprintf(stderr,
            "concurrency: %ld rows read while writing; %llu flushes, %llu compactions, "
            "%llu splits, %llu regions\n",
            atomic_load(&c.rows_seen), (unsigned long long)st.flushes,
            (unsigned long long)(st.minor_compactions + st.major_compactions),
            (unsigned long long)st.splits, (unsigned long long)st.regions);
    assert_true(st.flushes >= 5);
    assert_true(st.splits >= 1);
    /* every row that was written is whole, in both directions, and after a reopen */
    struct wc_scan_options so;
    wc_scan_options_init(&so);
    for (int pass = 0; pass < 3; pass++) {
        so.reversed = pass == 1;
        struct wc_scanner *sc;
        assert_int_equal(wc_scanner_open(c.t, &so, &sc, &err), CT_OK);
        struct wc_row row;
        int n = 0;
        while (wc_scanner_next(sc, &row, &err) == CT_OK) {
            check_row(&c, &row);
            n++;
        }
        wc_scanner_close(sc);
        assert_int_equal(atomic_load(&c.bad), 0);
        assert_true(n > ROWS / 2 && n <= ROWS);
        if (pass == 1) {
            wc_table_close(c.t);
            wc_close(c.s);
            assert_int_equal(wc_open(&o, &c.s, &err), CT_OK);
            assert_int_equal(wc_table_open(c.s, "conc", &c.t, &err), CT_OK);
        }
    }
    wc_table_close(c.t);
    wc_close(c.s);
    ctest_rmdir(dir);
}

struct incr_ctx {
    struct wc_table *t;
    atomic_int bad;
};

static void *incrementer(void *arg)
{
    struct incr_ctx *c = arg;
    for (int i = 0; i < 500; i++) {
        int64_t v;
        struct ct_err err;
        if (wc_increment(c->t, wc_bytes_str("ctr"), wc_bytes_str("a"), wc_bytes_str("n"), 1,
                         WC_DURABILITY_SYNC_WAL, &v, &err) != CT_OK)
            atomic_fetch_add(&c->bad, 1);
    }
    return NULL;
}

static void test_concurrent_increments_lose_no_update(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = dir;
    o.memstore_flush_bytes = 8 << 10;
    struct wc_store *s = fixture_store_open(&o);
    fixture_table_create(s, "ctr", (const char *const[]){"a"}, 1, 0);
    struct incr_ctx c = {0};
    c.t = fixture_table_open(s, "ctr");
    struct ct_err err;
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, incrementer, &c), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&c.bad), 0);
    int64_t v;
    assert_int_equal(wc_increment(c.t, wc_bytes_str("ctr"), wc_bytes_str("a"), wc_bytes_str("n"), 0,
                                  WC_DURABILITY_SYNC_WAL, &v, &err),
                     CT_OK);
    assert_int_equal(v, 2000);
    wc_table_close(c.t);
    wc_close(s);
    ctest_rmdir(dir);
}

/* Plain puts and increments of one cell are serialised: a putter stores k << 32 (k = 1, 2, ...)
 * and reads the cell back, which must show a value >= k << 32 (an increment that read the
 * value before the put and wrote after it would have lost the put). The clock is pinned, so
 * every write has the same timestamp and the newest write wins. Half of the puts go through
 * two-row batches (several row locks at once). */
#define MIX_PUTS  400
#define MIX_INCRS 1500

struct mix_ctx {
    struct wc_table *t;
    atomic_int bad;
    atomic_int putter_done;
    char msg[200];
};

static int64_t mix_read(struct mix_ctx *c)
{
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_result r;
    struct ct_err err;
    if (wc_get(c->t, wc_bytes_str("ctr"), &o, &r, &err) != CT_OK || r.row.ncells != 1 ||
        r.row.cells[0].value.len != 8) {
        if (err.code == CT_OK)
            wc_result_release(&r);
        return -1;
    }
    int64_t v = (int64_t)coding_get_be64(r.row.cells[0].value.data);
    wc_result_release(&r);
    return v;
}

static void *mix_putter(void *arg)
{
    struct mix_ctx *c = arg;
    for (int64_t k = 1; k <= MIX_PUTS; k++) {
        uint8_t buf[8];
        coding_put_be64(buf, (uint64_t)k << 32);
        struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("a"), wc_bytes_str("n"),
                                wc_bytes_of(buf, 8), WC_TS_LATEST};
        struct wc_mutation other = {WC_OP_PUT, wc_bytes_str("a"), wc_bytes_str("x"),
                                    wc_bytes_str("y"), WC_TS_LATEST};
        struct wc_row_mutation rows[2] = {{wc_bytes_str("ctr"), &m, 1},
                                          {wc_bytes_str("other-row"), &other, 1}};
        struct ct_err err;
        int rc = k % 2 ? wc_mutate_batch(c->t, rows, 2, WC_DURABILITY_SYNC_WAL, &err)
                       : wc_mutate_row(c->t, &rows[0], WC_DURABILITY_SYNC_WAL, &err);
        if (rc != CT_OK) {
            atomic_fetch_add(&c->bad, 1);
            break;
        }
        int64_t v = mix_read(c);
        if (v < (k << 32) && atomic_fetch_add(&c->bad, 1) == 0)
            snprintf(c->msg, sizeof c->msg, "after put %lld the cell holds %lld:%lld", (long long)k,
                     (long long)(v >> 32), (long long)(v & 0xffffffff));
    }
    atomic_store(&c->putter_done, 1);
    return NULL;
}

static void *mix_incrementer(void *arg)
{
    struct mix_ctx *c = arg;
    int64_t prev = 0;
    for (int i = 0; i < MIX_INCRS || !atomic_load(&c->putter_done); i++) {
        if (i > 20 * MIX_INCRS)
            break; /* bounded */
        int64_t v;
        struct ct_err err;
        if (wc_increment(c->t, wc_bytes_str("ctr"), wc_bytes_str("a"), wc_bytes_str("n"), 1,
                         WC_DURABILITY_SYNC_WAL, &v, &err) != CT_OK) {
            atomic_fetch_add(&c->bad, 1);
            break;
        }
        /* puts only raise the high half; this thread's results never go back */
        if ((v >> 32) < (prev >> 32) && atomic_fetch_add(&c->bad, 1) == 0)
            snprintf(c->msg, sizeof c->msg, "increment went back from %lld to %lld",
                     (long long)prev, (long long)v);
        prev = v;
    }
    return NULL;
}

static void test_increments_and_plain_puts_of_one_cell_are_serialised(void **state)
{
    (void)state;
    setenv("CTSDB_NOW_MS", "1700000000000", 1);
    clock_reload();
    char *dir = ctest_mkdtemp();
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = dir;
    o.memstore_flush_bytes = 64 << 10;
    struct wc_store *s = fixture_store_open(&o);
    fixture_table_create(s, "mix", (const char *const[]){"a"}, 1, 0);
    struct mix_ctx c = {0};
    c.t = fixture_table_open(s, "mix");
    pthread_t th[3];
    assert_int_equal(pthread_create(&th[0], NULL, mix_putter, &c), 0);
    assert_int_equal(pthread_create(&th[1], NULL, mix_incrementer, &c), 0);
    assert_int_equal(pthread_create(&th[2], NULL, mix_incrementer, &c), 0);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    if (atomic_load(&c.bad))
        fail_msg("%d violations; first: %s", atomic_load(&c.bad), c.msg);
    assert_true(mix_read(&c) >> 32 == MIX_PUTS); /* the last put is never lost */
    wc_table_close(c.t);
    wc_close(s);
    ctest_rmdir(dir);
    unsetenv("CTSDB_NOW_MS");
    clock_reload();
}

/* Concurrent deletes of the latest version each remove a different version: DL_THREADS threads
 * each delete the latest version of one cell DL_EACH times; the cell started with DL_VERSIONS
 * versions (explicit timestamps 1..DL_VERSIONS), so exactly DL_VERSIONS - DL_THREADS * DL_EACH
 * remain. Two deletes that resolved "latest" to the same version would leave more. */
#define DL_THREADS  4
#define DL_EACH     40
#define DL_VERSIONS 400

struct dl_ctx {
    struct wc_table *t;
    atomic_int bad;
};

static void *dl_deleter(void *arg)
{
    struct dl_ctx *c = arg;
    for (int i = 0; i < DL_EACH; i++) {
        struct wc_mutation m = {
            WC_OP_DELETE_VERSION, wc_bytes_str("a"), wc_bytes_str("q"), {0}, WC_TS_LATEST};
        struct wc_row_mutation rm = {wc_bytes_str("dl"), &m, 1};
        struct ct_err err;
        if (wc_mutate_row(c->t, &rm, WC_DURABILITY_SYNC_WAL, &err) != CT_OK) {
            atomic_fetch_add(&c->bad, 1);
            break;
        }
    }
    return NULL;
}

static void test_concurrent_delete_latest_remove_distinct_versions(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = dir;
    struct wc_store *s = fixture_store_open(&o);
    fixture_table_create(s, "dl", (const char *const[]){"a"}, 1, 1000);
    struct dl_ctx c = {0};
    c.t = fixture_table_open(s, "dl");
    struct ct_err err;
    for (int v = 1; v <= DL_VERSIONS; v++) {
        struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("a"), wc_bytes_str("q"), wc_bytes_str("v"),
                                v};
        struct wc_row_mutation rm = {wc_bytes_str("dl"), &m, 1};
        assert_int_equal(wc_mutate_row(c.t, &rm, WC_DURABILITY_SKIP_WAL, &err), CT_OK);
    }
    pthread_t th[DL_THREADS];
    for (int i = 0; i < DL_THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, dl_deleter, &c), 0);
    for (int i = 0; i < DL_THREADS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&c.bad), 0);
    struct wc_scan_options so;
    wc_scan_options_init(&so);
    so.max_versions = 1000;
    struct wc_result r;
    assert_int_equal(wc_get(c.t, wc_bytes_str("dl"), &so, &r, &err), CT_OK);
    assert_int_equal(r.row.ncells, DL_VERSIONS - DL_THREADS * DL_EACH);
    /* the survivors are the oldest versions */
    assert_int_equal(r.row.cells[0].ts_ms, DL_VERSIONS - DL_THREADS * DL_EACH);
    wc_result_release(&r);
    wc_table_close(c.t);
    wc_close(s);
    ctest_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_are_atomic_under_concurrent_writes_flushes_and_splits),
        cmocka_unit_test(test_concurrent_increments_lose_no_update),
        cmocka_unit_test(test_increments_and_plain_puts_of_one_cell_are_serialised),
        cmocka_unit_test(test_concurrent_delete_latest_remove_distinct_versions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
