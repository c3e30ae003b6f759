/* test_engine_memtotal.c - the store-wide memstore total and the write wait on it
 * (wc_options.memstore_total_bytes; write.c invariant (7)): estore.memstore_total, kept as
 * memstores change, equals the sum wc_store_stats() computes region by region after random
 * writes of every kind, flushes, splits, compactions, alters, truncates, drops and a log replay;
 * writes wait while the total is at or over the ceiling and go on once a flush brings it under;
 * writers, flushes (meeting the flush fence) and splits together never deadlock; and a ceiling
 * of 0 never holds a write. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "storage/engine/engine_int.h"
#include "storage/wc.h"
#include "tests/lib/ctest.h"
#include "tests/lib/fixture.h"

#define KIB (1ull << 10)
#define MIB (1ull << 20)

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static uint64_t fast_total(struct wc_store *s)
{
    return atomic_load(&estore_of(s)->memstore_total);
}

/* Waits (at most 20 s) until no background job is queued or running. */
static void wait_idle(struct wc_store *ws)
{
    struct estore *s = estore_of(ws);
    for (int i = 0; i < 4000; i++) {
        pthread_mutex_lock(&s->bg_mu);
        bool idle = !s->jobs_head && s->running_jobs == 0;
        pthread_mutex_unlock(&s->bg_mu);
        if (idle)
            return;
        sleep_ms(5);
    }
    fail_msg("background jobs still running after 20 s");
}

/* With no job running, the counter and the region-by-region sum agree exactly. */
static void check_total(struct wc_store *s, const char *when)
{
    wait_idle(s);
    uint64_t slow = fixture_store_stats(s).memstore_bytes, fast = fast_total(s);
    if (slow != fast)
        fail_msg("%s: memstore_total %llu, regions' sum %llu", when, (unsigned long long)fast,
                 (unsigned long long)slow);
}

static void create_table(struct wc_store *s, const char *name, const char *const *fams, size_t nf,
                         const char *split)
{
    struct wc_family_desc fd[4];
    for (size_t i = 0; i < nf; i++)
        wc_family_desc_init(&fd[i], fams[i]);
    struct wc_table_desc d;
    wc_table_desc_init(&d, name);
    d.families = fd;
    d.nfamilies = nf;
    struct wc_bytes sp = wc_bytes_str(split ? split : "");
    struct ct_err err;
    if (wc_table_create(s, &d, split ? &sp : NULL, split ? 1 : 0, &err) != CT_OK)
        fail_msg("create %s: %s", name, err.msg);
}

static void alter_families(struct wc_store *s, const char *name, const char *const *fams, size_t nf)
{
    struct wc_family_desc fd[4];
    for (size_t i = 0; i < nf; i++)
        wc_family_desc_init(&fd[i], fams[i]);
    struct wc_table_desc d;
    wc_table_desc_init(&d, name);
    d.families = fd;
    d.nfamilies = nf;
    struct ct_err err;
    if (wc_table_alter(s, &d, &err) != CT_OK)
        fail_msg("alter %s: %s", name, err.msg);
}

static char value_buf[4096];

/* Writes a batch of 1..16 rows of 1..3 cells (families from fams[0..nf)), values 1..2,000
 * bytes, at a random durability; returns what wc_mutate_batch returned (err filled). */
static int random_batch(struct wc_table *t, uint64_t *seed, const char *const *fams, size_t nf,
                        struct ct_err *err)
{
    struct wc_row_mutation rm[16];
    struct wc_mutation m[16][3];
    char rows[16][24], quals[16][3][8];
    size_t n = 1 + fixture_rnd(seed) % 16;
    for (size_t i = 0; i < n; i++) {
        snprintf(rows[i], sizeof(rows[i]), "%c%05u", 'a' + (int)(fixture_rnd(seed) % 26),
                 (unsigned)(fixture_rnd(seed) % 2000));
        size_t nm = 1 + fixture_rnd(seed) % 3;
        for (size_t k = 0; k < nm; k++) {
            snprintf(quals[i][k], sizeof(quals[i][k]), "q%u", (unsigned)(fixture_rnd(seed) % 5));
            m[i][k] = (struct wc_mutation){
                WC_OP_PUT, wc_bytes_str(fams[fixture_rnd(seed) % nf]), wc_bytes_str(quals[i][k]),
                wc_bytes_of(value_buf, 1 + fixture_rnd(seed) % 2000), WC_TS_LATEST};
        }
        rm[i] = (struct wc_row_mutation){wc_bytes_str(rows[i]), m[i], nm};
    }
    enum wc_durability d = (enum wc_durability)(WC_DURABILITY_SKIP_WAL + fixture_rnd(seed) % 3);
    return wc_mutate_batch(t, rm, n, d, err);
}

/* A delete marker of some kind on a random row. */
static void random_delete(struct wc_table *t, uint64_t *seed)
{
    static const enum wc_mutation_op ops[] = {WC_OP_DELETE_VERSION, WC_OP_DELETE_COLUMN,
                                              WC_OP_DELETE_FAMILY, WC_OP_DELETE_ROW,
                                              WC_OP_DELETE_FAMILY_VERSION};
    char row[24];
    snprintf(row, sizeof(row), "%c%05u", 'a' + (int)(fixture_rnd(seed) % 26),
             (unsigned)(fixture_rnd(seed) % 2000));
    enum wc_mutation_op op = ops[fixture_rnd(seed) % 5];
    struct wc_mutation m = {op, wc_bytes_str("f"), wc_bytes_str("q1"), wc_bytes_of(NULL, 0),
                            op == WC_OP_DELETE_VERSION ? WC_TS_LATEST : 5000};
    struct wc_row_mutation rm = {wc_bytes_str(row), &m, 1};
    struct ct_err err;
    if (wc_mutate_row(t, &rm, WC_DURABILITY_SYNC_WAL, &err) != CT_OK)
        fail_msg("delete: %s", err.msg);
}

struct history {
    struct wc_store *s;
    struct wc_table *t, *u;
    bool has_h;
    int ops[12];
};

/* One random operation on tables "t" (families f, g and at times h) and "u" (family f). */
static void history_step(struct history *h, uint64_t *seed)
{
    static const char *const fg[] = {"f", "g"}, *const fgh[] = {"f", "g", "h"},
                             *const f_only[] = {"f"};
    struct ct_err err;
    unsigned x = (unsigned)(fixture_rnd(seed) % 100);
    int rc;
    if (x < 50) {
        if (random_batch(h->t, seed, h->has_h ? fgh : fg, h->has_h ? 3 : 2, &err) != CT_OK)
            fail_msg("batch: %s", err.msg);
        h->ops[0]++;
    } else if (x < 58) {
        random_delete(h->t, seed);
        h->ops[1]++;
    } else if (x < 62) {
        int64_t v;
        if (wc_increment(h->t, wc_bytes_str("ctr"), wc_bytes_str("g"), wc_bytes_str("n"), 3,
                         WC_DURABILITY_USE_DEFAULT, &v, &err) != CT_OK)
            fail_msg("increment: %s", err.msg);
        h->ops[2]++;
    } else if (x < 66) {
        char row[16];
        snprintf(row, sizeof(row), "cam%u", (unsigned)(fixture_rnd(seed) % 50));
        struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("c"),
                                wc_bytes_of(value_buf, 300), WC_TS_LATEST};
        struct wc_row_mutation rm = {wc_bytes_str(row), &m, 1};
        bool applied;
        if (wc_check_and_mutate(h->t, rm.row, m.family, m.qualifier, NULL, &rm,
                                WC_DURABILITY_USE_DEFAULT, &applied, &err) != CT_OK)
            fail_msg("check-and-mutate: %s", err.msg);
        h->ops[3]++;
    } else if (x < 72) {
        if (wc_table_flush(h->s, "t", &err) != CT_OK)
            fail_msg("flush: %s", err.msg);
        h->ops[4]++;
    } else if (x < 77) {
        char key[24];
        snprintf(key, sizeof(key), "%c%05u", 'a' + (int)(fixture_rnd(seed) % 26),
                 (unsigned)(fixture_rnd(seed) % 2000));
        struct wc_bytes k = wc_bytes_str(key);
        rc = wc_table_split(h->s, "t", &k, &err);
        if (rc != CT_OK && rc != CT_EINVAL && rc != CT_NOTFOUND)
            fail_msg("split at %s: %s", key, err.msg);
        h->ops[5]++;
    } else if (x < 79) {
        rc = wc_table_split(h->s, "t", NULL, &err);
        if (rc != CT_OK && rc != CT_NOTFOUND)
            fail_msg("split at midpoints: %s", err.msg);
        h->ops[6]++;
    } else if (x < 81) {
        if (wc_table_truncate(h->s, "t", fixture_rnd(seed) % 2, &err) != CT_OK)
            fail_msg("truncate: %s", err.msg);
        h->ops[7]++;
    } else if (x < 84) {
        h->has_h = !h->has_h;
        alter_families(h->s, "t", h->has_h ? fgh : fg, h->has_h ? 3 : 2);
        h->ops[8]++;
    } else if (x < 94) {
        if (random_batch(h->u, seed, f_only, 1, &err) != CT_OK)
            fail_msg("batch of u: %s", err.msg);
        h->ops[9]++;
    } else if (x < 96) {
        wc_table_close(h->u);
        if (wc_table_disable(h->s, "u", &err) != CT_OK || wc_table_drop(h->s, "u", &err) != CT_OK)
            fail_msg("drop u: %s", err.msg);
        create_table(h->s, "u", f_only, 1, "m");
        h->u = fixture_table_open(h->s, "u");
        h->ops[10]++;
    } else {
        if (wc_table_compact(h->s, "t", NULL, fixture_rnd(seed) % 2, &err) != CT_OK)
            fail_msg("compact: %s", err.msg);
        h->ops[11]++;
    }
}

/* A store with the given flush size (0: the default), region split size (0: the default) and
 * store-wide memstore ceiling. */
static struct wc_store *open_store(const char *dir, size_t flush_bytes, uint64_t split_bytes,
                                   size_t total_bytes)
{
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = dir;
    o.block_cache_bytes = 1 << 20;
    if (flush_bytes)
        o.memstore_flush_bytes = flush_bytes;
    if (split_bytes)
        o.region_split_bytes = split_bytes;
    o.memstore_total_bytes = total_bytes;
    return fixture_store_open(&o);
}

/* Background flushes, and splits after them. */
static struct wc_store *open_small(const char *dir, size_t total_bytes)
{
    return open_store(dir, 96 * KIB, 512 * KIB, total_bytes);
}

/* The counter after 600 random operations, checked every 6 against the slow sum. */
static void test_memstore_total_equals_the_regions_sum(void **state)
{
    (void)state;
    memset(value_buf, 'v', sizeof(value_buf));
    char *dir = ctest_mkdtemp();
    struct history h = {0};
    h.s = open_small(dir, 0);
    static const char *const fg[] = {"f", "g"}, *const f_only[] = {"f"};
    create_table(h.s, "t", fg, 2, "m");
    create_table(h.s, "u", f_only, 1, "m");
    h.t = fixture_table_open(h.s, "t");
    h.u = fixture_table_open(h.s, "u");
    check_total(h.s, "empty");
    uint64_t seed = 0x5eed1234;
    uint64_t max_seen = 0;
    for (int i = 1; i <= 600; i++) {
        history_step(&h, &seed);
        if (i % 6 == 0) {
            char when[32];
            snprintf(when, sizeof(when), "after step %d", i);
            check_total(h.s, when);
            if (fast_total(h.s) > max_seen)
                max_seen = fast_total(h.s);
        }
    }
    struct wc_store_stats st = fixture_store_stats(h.s);
    print_message("ops: %d batches, %d deletes, %d increments, %d cams, %d flushes, %d splits, "
                  "%d midpoint splits, %d truncates, %d alters, %d u batches, %d drops, "
                  "%d compactions; %llu flushes, %llu splits in all; largest total %llu\n",
                  h.ops[0], h.ops[1], h.ops[2], h.ops[3], h.ops[4], h.ops[5], h.ops[6], h.ops[7],
                  h.ops[8], h.ops[9], h.ops[10], h.ops[11], (unsigned long long)st.flushes,
                  (unsigned long long)st.splits, (unsigned long long)max_seen);
    assert_true(st.splits > 0 && st.flushes > 0 && max_seen > 0);
    for (int k = 0; k < 12; k++)
        assert_true(h.ops[k] > 0);
    assert_int_equal(st.memstore_waits, 0); /* no ceiling set */
    struct ct_err err;
    assert_int_equal(wc_table_flush(h.s, "t", &err), CT_OK);
    assert_int_equal(wc_table_flush(h.s, "u", &err), CT_OK);
    check_total(h.s, "all flushed");
    assert_int_equal(fast_total(h.s), 0);
    wc_table_close(h.t);
    wc_table_close(h.u);
    wc_close(h.s);
    ctest_rmdir(dir);
}

/* Memstores refilled by the log replay after a crash are counted too. */
static void test_memstore_total_counts_the_replayed_log(void **state)
{
    (void)state;
    memset(value_buf, 'v', sizeof(value_buf));
    char *dir = ctest_mkdtemp();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) { /* writes, then dies without closing (the log holds the writes) */
        struct wc_options o;
        wc_options_init(&o);
        o.data_dir = dir;
        o.memstore_flush_bytes = 4 * MIB;
        struct wc_store *s;
        struct ct_err err;
        if (wc_open(&o, &s, &err) != CT_OK)
            _exit(3);
        struct wc_family_desc fd[2];
        wc_family_desc_init(&fd[0], "f");
        wc_family_desc_init(&fd[1], "g");
        struct wc_table_desc d;
        wc_table_desc_init(&d, "t");
        d.families = fd;
        d.nfamilies = 2;
        struct wc_bytes sp = wc_bytes_str("m");
        struct wc_table *t;
        if (wc_table_create(s, &d, &sp, 1, &err) != CT_OK || wc_table_open(s, "t", &t, &err))
            _exit(4);
        uint64_t seed = 77;
        static const char *const fg[] = {"f", "g"};
        for (int i = 0; i < 200; i++)
            if (random_batch(t, &seed, fg, 2, &err) != CT_OK)
                _exit(5);
        if (wc_table_flush(s, "t", &err) != CT_OK) /* some of it in files, the rest in the log */
            _exit(6);
        for (int i = 0; i < 200; i++)
            if (random_batch(t, &seed, fg, 2, &err) != CT_OK)
                _exit(7);
        _exit(0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    struct wc_store *s = open_small(dir, 0);
    assert_true(fast_total(s) > 100 * KIB);
    check_total(s, "after the replay");
    wc_close(s);
    ctest_rmdir(dir);
}

/* ---- the wait ------------------------------------------------------------------------------ */

struct putter {
    struct wc_table *t;
    int first, n; /* rows "w<first>".."w<first + n - 1>" */
    size_t value_len;
    atomic_bool done;
    int rc;
};

static void *putter_main(void *arg)
{
    struct putter *p = arg;
    p->rc = CT_OK;
    for (int i = 0; i < p->n && p->rc == CT_OK; i++) {
        char row[24];
        snprintf(row, sizeof(row), "w%06d", p->first + i);
        struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("q"),
                                wc_bytes_of(value_buf, p->value_len), 1};
        struct wc_row_mutation rm = {wc_bytes_str(row), &m, 1};
        struct ct_err err;
        p->rc = wc_mutate_row(p->t, &rm, WC_DURABILITY_ASYNC_WAL, &err);
    }
    atomic_store(&p->done, true);
    return NULL;
}

/* No region reaches its flush size: only the ceiling flushes. */
static struct wc_store *open_ceiling(const char *dir, size_t total_bytes)
{
    return open_store(dir, 64 * MIB, 0, total_bytes);
}

/* Over a 256 KiB ceiling, with every flush held back (the table's maint_lock taken exclusive,
 * as a split would), a write waits; once the flush may run, it brings the total under the
 * ceiling and the write goes on. */
static void test_writes_wait_over_the_ceiling_until_a_flush(void **state)
{
    (void)state;
    memset(value_buf, 'v', sizeof(value_buf));
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_ceiling(dir, 256 * KIB);
    static const char *const f_only[] = {"f"};
    create_table(s, "t", f_only, 1, NULL);
    struct wc_table *t = fixture_table_open(s, "t");
    struct estore *es = estore_of(s);
    struct etable *et = ((struct etable_handle *)t)->t;
    pthread_rwlock_wrlock(&et->maint_lock); /* no flush of t can start */
    /* 96 x 4 KiB: the writes up to the ceiling go through, the next one waits */
    struct putter p = {t, 0, 96, 4096, false, CT_OK};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, putter_main, &p), 0);
    for (int i = 0; i < 2000 && !atomic_load(&es->n_memstore_waits); i++)
        sleep_ms(5);
    assert_int_equal(atomic_load(&es->n_memstore_waits), 1);
    uint64_t over = fast_total(s);
    assert_true(over >= 256 * KIB);
    sleep_ms(300); /* it stays held: nothing can flush */
    assert_false(atomic_load(&p.done));
    assert_int_equal(fast_total(s), over);
    assert_int_equal(fixture_store_stats(s).flushes, 0);
    /* reads go on while it waits (it holds nothing) */
    struct wc_scan_options so;
    wc_scan_options_init(&so);
    struct wc_result res;
    struct ct_err err;
    assert_int_equal(wc_get(t, wc_bytes_str("w000000"), &so, &res, &err), CT_OK);
    assert_int_equal(res.row.ncells, 1);
    wc_result_release(&res);
    pthread_rwlock_unlock(&et->maint_lock);
    for (int i = 0; i < 4000 && !atomic_load(&p.done); i++)
        sleep_ms(5);
    assert_true(atomic_load(&p.done));
    pthread_join(th, NULL);
    assert_int_equal(p.rc, CT_OK);
    /* the flush releases its memstores (the writer goes on) before it saves the catalog and
     * counts itself finished: the count may come a little after the writer is done */
    for (int i = 0; i < 2000 && fixture_store_stats(s).flushes == 0; i++)
        sleep_ms(5);
    struct wc_store_stats st = fixture_store_stats(s);
    print_message("waits %llu, flushes %llu, total %llu (held at %llu)\n",
                  (unsigned long long)st.memstore_waits, (unsigned long long)st.flushes,
                  (unsigned long long)fast_total(s), (unsigned long long)over);
    assert_true(st.flushes >= 1);
    assert_true(st.memstore_waits >= 1);
    check_total(s, "after the wait");
    /* every row is there */
    struct wc_scanner *sc;
    assert_int_equal(wc_scanner_open(t, &so, &sc, &err), CT_OK);
    struct wc_row r;
    int n = 0, rc;
    while ((rc = wc_scanner_next(sc, &r, &err)) == CT_OK)
        n++;
    assert_int_equal(rc, CT_NOTFOUND);
    wc_scanner_close(sc);
    assert_int_equal(n, 96);
    wc_table_close(t);
    wc_close(s);
    ctest_rmdir(dir);
}

/* With memstore_total_bytes 0 the same writes, with flushes held back just as long, never wait
 * (the old behaviour: only a region's own 4x flush size holds its writers). */
static void test_zero_ceiling_never_holds_a_write(void **state)
{
    (void)state;
    memset(value_buf, 'v', sizeof(value_buf));
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_ceiling(dir, 0);
    static const char *const f_only[] = {"f"};
    create_table(s, "t", f_only, 1, NULL);
    struct wc_table *t = fixture_table_open(s, "t");
    struct estore *es = estore_of(s);
    struct etable *et = ((struct etable_handle *)t)->t;
    pthread_rwlock_wrlock(&et->maint_lock);
    struct putter p = {t, 0, 512, 4096, false, CT_OK}; /* 2 MiB */
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, putter_main, &p), 0);
    for (int i = 0; i < 4000 && !atomic_load(&p.done); i++)
        sleep_ms(5);
    assert_true(atomic_load(&p.done)); /* all written with no flush possible */
    pthread_rwlock_unlock(&et->maint_lock);
    pthread_join(th, NULL);
    assert_int_equal(p.rc, CT_OK);
    assert_true(fast_total(s) >= 2 * MIB);
    assert_int_equal(atomic_load(&es->n_memstore_waits), 0);
    assert_int_equal(fixture_store_stats(s).memstore_waits, 0);
    check_total(s, "no ceiling");
    wc_table_close(t);
    wc_close(s);
    ctest_rmdir(dir);
}

/* ---- no deadlock --------------------------------------------------------------------------- */

#define NWRITERS 4
#define NBATCHES 300

struct race {
    struct wc_store *s;
    struct wc_table *t;
    atomic_bool stop;
    int admin_rc; /* the admin thread's first error (checked by the test's thread) */
    char admin_msg[300];
    atomic_int fence_waits;
    atomic_int writer_pauses;
    atomic_int done_writers;
};

/* Pauses some batches between getting their seqs and inserting (every 7th), so a flush finds
 * unpublished seqs and fences later batches off (write.c invariant (6)). */
static void race_step(void *arg, const char *step)
{
    struct race *r = arg;
    if (!strcmp(step, "flush_waits_for_writers")) {
        atomic_fetch_add(&r->fence_waits, 1);
    } else if (!strcmp(step, "write_before_insert")) {
        if (atomic_fetch_add(&r->writer_pauses, 1) % 7 == 0)
            sleep_ms(1);
    }
}

struct race_writer {
    struct race *r;
    int id;
    int rc;
};

static void *race_writer_main(void *arg)
{
    struct race_writer *w = arg;
    uint64_t seed = 1000 + (uint64_t)w->id;
    w->rc = CT_OK;
    for (int b = 0; b < NBATCHES && w->rc == CT_OK; b++) {
        struct ct_err err;
        if (b % 10 == 9) { /* now and then a read-modify-write */
            int64_t v;
            w->rc = wc_increment(w->r->t, wc_bytes_str("ctr"), wc_bytes_str("f"), wc_bytes_str("n"),
                                 1, WC_DURABILITY_USE_DEFAULT, &v, &err);
            continue;
        }
        /* 8 rows over the whole key space (several regions), 2 KiB each */
        struct wc_row_mutation rm[8];
        struct wc_mutation m[8];
        char rows[8][24];
        for (int i = 0; i < 8; i++) {
            snprintf(rows[i], sizeof(rows[i]), "%c-%d-%05d", 'a' + (int)(fixture_rnd(&seed) % 26),
                     w->id, b * 8 + i);
            m[i] = (struct wc_mutation){WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("q"),
                                        wc_bytes_of(value_buf, 2048), 1};
            rm[i] = (struct wc_row_mutation){wc_bytes_str(rows[i]), &m[i], 1};
        }
        w->rc = wc_mutate_batch(w->r->t, rm, 8, WC_DURABILITY_ASYNC_WAL, &err);
    }
    atomic_fetch_add(&w->r->done_writers, 1);
    return NULL;
}

/* Flushes, and now and then splits, until the writers are done. */
static void *race_admin_main(void *arg)
{
    struct race *r = arg;
    uint64_t seed = 99;
    for (int i = 0; i < 100000 && !atomic_load(&r->stop) && r->admin_rc == CT_OK; i++) {
        struct ct_err err;
        int rc;
        if (i % 8 == 7) {
            char key[24];
            snprintf(key, sizeof(key), "%c-", 'b' + (int)(fixture_rnd(&seed) % 24));
            struct wc_bytes k = wc_bytes_str(key);
            rc = wc_table_split(r->s, "t", &k, &err);
            if (rc == CT_EINVAL || rc == CT_NOTFOUND)
                rc = CT_OK;
        } else {
            rc = wc_table_flush(r->s, "t", &err);
        }
        if (rc != CT_OK) {
            snprintf(r->admin_msg, sizeof(r->admin_msg), "%s", err.msg);
            r->admin_rc = rc;
        }
        sleep_ms(2);
    }
    return NULL;
}

/* 4 writers (batches over several regions, increments) under a 512 KiB ceiling, with flushes
 * and splits from another thread and the background's, and batches paused between their seqs
 * and their inserts so flushes wait at the fence: everything ends, within a bounded time, with
 * every row written. */
static void test_writers_flushes_and_the_fence_do_not_deadlock(void **state)
{
    (void)state;
    memset(value_buf, 'v', sizeof(value_buf));
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_ceiling(dir, 512 * KIB);
    static const char *const f_only[] = {"f"};
    create_table(s, "t", f_only, 1, "m");
    struct race r = {.s = s, .t = fixture_table_open(s, "t")};
    engine_set_test_step(s, race_step, &r);
    pthread_t wt[NWRITERS], at;
    struct race_writer w[NWRITERS];
    for (int i = 0; i < NWRITERS; i++) {
        w[i] = (struct race_writer){&r, i, CT_OK};
        assert_int_equal(pthread_create(&wt[i], NULL, race_writer_main, &w[i]), 0);
    }
    assert_int_equal(pthread_create(&at, NULL, race_admin_main, &r), 0);
    /* bounded: 120 s for 4 x 300 batches of 16 KiB (a deadlock fails here, not in a hang) */
    time_t deadline = time(NULL) + 120;
    while (atomic_load(&r.done_writers) < NWRITERS && time(NULL) < deadline)
        sleep_ms(20);
    if (atomic_load(&r.done_writers) < NWRITERS)
        fail_msg("writers stuck: %d of %d done after 120 s (fence waits %d)",
                 atomic_load(&r.done_writers), NWRITERS, atomic_load(&r.fence_waits));
    atomic_store(&r.stop, true);
    for (int i = 0; i < NWRITERS; i++) {
        pthread_join(wt[i], NULL);
        assert_int_equal(w[i].rc, CT_OK);
    }
    pthread_join(at, NULL);
    if (r.admin_rc != CT_OK)
        fail_msg("flush or split: %s", r.admin_msg);
    engine_set_test_step(s, NULL, NULL);
    struct wc_store_stats st = fixture_store_stats(s);
    print_message("fence waits %d, memstore waits %llu, flushes %llu, splits %llu\n",
                  atomic_load(&r.fence_waits), (unsigned long long)st.memstore_waits,
                  (unsigned long long)st.flushes, (unsigned long long)st.splits);
    assert_true(st.memstore_waits > 0);
    assert_true(atomic_load(&r.fence_waits) > 0);
    check_total(s, "after the race");
    /* every row of every writer, and the counter */
    struct wc_scan_options so;
    wc_scan_options_init(&so);
    struct wc_scanner *sc;
    struct ct_err err;
    assert_int_equal(wc_scanner_open(r.t, &so, &sc, &err), CT_OK);
    struct wc_row row;
    int n = 0, rc;
    while ((rc = wc_scanner_next(sc, &row, &err)) == CT_OK)
        n++;
    assert_int_equal(rc, CT_NOTFOUND);
    wc_scanner_close(sc);
    int batches = NBATCHES - NBATCHES / 10;
    assert_int_equal(n, NWRITERS * batches * 8 + 1);
    wc_table_close(r.t);
    wc_close(s);
    ctest_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memstore_total_equals_the_regions_sum),
        cmocka_unit_test(test_memstore_total_counts_the_replayed_log),
        cmocka_unit_test(test_writes_wait_over_the_ceiling_until_a_flush),
        cmocka_unit_test(test_zero_ceiling_never_holds_a_write),
        cmocka_unit_test(test_writers_flushes_and_the_fence_do_not_deadlock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
