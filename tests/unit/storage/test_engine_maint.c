/* test_engine_maint.c - flushes, compactions and regions of the embedded engine: the exploring
 * selection, minor compactions keeping markers and major ones dropping them, the compaction
 * hook, splits at a key and at midpoints with scans across regions both ways, automatic splits
 * under a bounded write load, region statistics, splits and compactions interrupted by a crash
 * (a child process exits at a failpoint; the parent reopens and checks every row), and a flush
 * racing two writers (the flush fence: a flush writes a prefix of the seqs). */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
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

#define MIB (1ull << 20)

/* ---- helpers ------------------------------------------------------------------------------ */

static struct wc_store *open_store(const char *dir, size_t flush_bytes, uint64_t split_bytes)
{
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = dir;
    o.block_cache_bytes = 1 << 20;
    o.memstore_flush_bytes = flush_bytes;
    o.region_split_bytes = split_bytes;
    return fixture_store_open(&o);
}

static struct wc_table *mk_table(struct wc_store *s, const char *name, uint32_t versions,
                                 bool compaction_enabled, const char *const *splits, size_t ns)
{
    struct wc_family_desc fd;
    wc_family_desc_init(&fd, "f");
    fd.versions = versions;
    fd.blocksize = 1024; /* many blocks, so files have a midpoint */
    struct wc_table_desc d;
    wc_table_desc_init(&d, name);
    d.families = &fd;
    d.nfamilies = 1;
    d.compaction_enabled = compaction_enabled;
    struct wc_bytes sp[8];
    for (size_t i = 0; i < ns; i++)
        sp[i] = wc_bytes_str(splits[i]);
    struct ct_err err;
    if (wc_table_create(s, &d, sp, ns, &err) != CT_OK)
        fail_msg("create %s: %s", name, err.msg);
    return fixture_table_open(s, name);
}

static void put(struct wc_table *t, const char *row, const char *qual, const char *val, size_t vlen,
                int64_t ts, enum wc_mutation_op op)
{
    struct wc_mutation m = {op, wc_bytes_str("f"), wc_bytes_str(qual), wc_bytes_of(val, vlen), ts};
    struct wc_row_mutation rm = {wc_bytes_str(row), &m, 1};
    struct ct_err err;
    if (wc_mutate_row(t, &rm, WC_DURABILITY_SYNC_WAL, &err) != CT_OK)
        fail_msg("put %s: %s", row, err.msg);
}

static void put_rows(struct wc_table *t, int from, int to, const char *val)
{
    for (int i = from; i < to; i++) {
        char row[24];
        snprintf(row, sizeof(row), "r%05d", i);
        put(t, row, "q", val, strlen(val), 1, WC_OP_PUT);
    }
}

/* Counts rows (checking order and one cell each) in one direction. */
static int count_rows(struct wc_table *t, bool reversed, const char *want_val)
{
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.reversed = reversed;
    struct wc_scanner *sc;
    struct ct_err err;
    if (wc_scanner_open(t, &o, &sc, &err) != CT_OK)
        fail_msg("scan: %s", err.msg);
    struct wc_row r;
    int n = 0, rc;
    char prev[64] = "";
    while ((rc = wc_scanner_next(sc, &r, &err)) == CT_OK) {
        char key[64];
        snprintf(key, sizeof(key), "%.*s", (int)r.key.len, (const char *)r.key.data);
        if (n && (reversed ? strcmp(key, prev) >= 0 : strcmp(key, prev) <= 0))
            fail_msg("rows out of order: %s after %s", key, prev);
        snprintf(prev, sizeof(prev), "%s", key);
        assert_int_equal(r.ncells, 1);
        if (want_val)
            assert_memory_equal(r.cells[0].value.data, want_val, strlen(want_val));
        n++;
    }
    if (rc != CT_NOTFOUND)
        fail_msg("scan next: %s", err.msg);
    wc_scanner_close(sc);
    return n;
}

static size_t nregions(struct wc_store *s, const char *name, uint64_t *files)
{
    struct wc_region_info *ri;
    size_t n;
    struct ct_err err;
    assert_int_equal(wc_table_regions(s, name, &ri, &n, &err), CT_OK);
    if (files) {
        *files = 0;
        for (size_t i = 0; i < n; i++)
            *files += ri[i].store_files;
    }
    wc_region_info_free(ri, n);
    return n;
}

static size_t files_in_dir(const char *dir)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/sst", dir);
    DIR *d = opendir(p);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

/* ---- policy ------------------------------------------------------------------------------- */

struct sel_case {
    uint64_t sizes[16];
    size_t n;
    size_t max_files;
    uint64_t max_size;
    bool found;
    size_t start, count;
};

static void test_exploring_policy_selection(void **state)
{
    (void)state;
    const struct sel_case cases[] = {
        /* fewer files than the threshold */
        {{1, 1}, 2, 10, 0, false, 0, 0},
        /* small files are always eligible: the longest run */
        {{10, 10, 10}, 3, 10, 0, true, 0, 3},
        {{5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5}, 12, 10, 0, true, 0, 10},
        /* one big old file out of ratio: the run after it */
        {{1000 * MIB, 100 * MIB, 100 * MIB, 100 * MIB}, 4, 10, 0, true, 1, 3},
        {{300 * MIB, 50 * MIB, 50 * MIB, 50 * MIB, 60 * MIB}, 5, 10, 0, true, 1, 4},
        /* all in ratio: everything (a major compaction) */
        {{500 * MIB, 400 * MIB, 300 * MIB, 200 * MIB, 100 * MIB}, 5, 10, 0, true, 0, 5},
        /* same count: the smaller total */
        {{60, 50, 50, 40}, 4, 3, 0, true, 1, 3},
        /* runs above the maximum size are not considered */
        {{100 * MIB, 100 * MIB, 100 * MIB, 100 * MIB}, 4, 10, 250 * MIB, false, 0, 0},
        /* nothing in ratio */
        {{1000 * MIB, 300 * MIB, 100 * MIB}, 3, 10, 0, false, 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct sel_case *c = &cases[i];
        struct compact_policy p;
        compact_policy_default(&p);
        p.max_files = c->max_files;
        if (c->max_size)
            p.max_size = c->max_size;
        size_t start = 99, count = 99;
        bool found = compact_select(c->sizes, c->n, &p, &start, &count);
        if (found != c->found || (found && (start != c->start || count != c->count)))
            fail_msg("case %zu: got found=%d start=%zu count=%zu, want %d %zu %zu", i, found, start,
                     count, c->found, c->start, c->count);
    }
}

/* ---- compactions --------------------------------------------------------------------------- */

static void test_minor_compaction_keeps_markers_major_drops_them(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir, 64 * MIB, 1ull << 30);
    struct wc_table *t = mk_table(s, "mc", 3, false, NULL, 0);
    struct ct_err err;
    /* file 0: the marker; files 1..9: other rows; file 10: a masked put and a big cell so the
     * policy leaves file 10 out of the 10-file run */
    put(t, "row", "q", "", 0, 100, WC_OP_DELETE_COLUMN);
    assert_int_equal(wc_table_flush(s, "mc", &err), CT_OK);
    for (int i = 1; i <= 9; i++) {
        char row[24];
        snprintf(row, sizeof(row), "other%d", i);
        put(t, row, "q", "x", 1, 1, WC_OP_PUT);
        assert_int_equal(wc_table_flush(s, "mc", &err), CT_OK);
    }
    static char big[100000];
    memset(big, 'b', sizeof(big));
    put(t, "row", "q", "masked", 6, 50, WC_OP_PUT);
    put(t, "zzz", "big", big, sizeof(big), 1, WC_OP_PUT);
    assert_int_equal(wc_table_flush(s, "mc", &err), CT_OK);
    uint64_t files;
    assert_int_equal(nregions(s, "mc", &files), 1);
    assert_int_equal(files, 11);

    struct wc_result res;
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.max_versions = 3;
    assert_int_equal(wc_get(t, wc_bytes_str("row"), &o, &res, &err), CT_OK);
    assert_int_equal(res.row.ncells, 0);
    wc_result_release(&res);

    assert_int_equal(wc_table_compact(s, "mc", NULL, false, &err), CT_OK);
    nregions(s, "mc", &files);
    assert_int_equal(files, 2);
    assert_int_equal(wc_get(t, wc_bytes_str("row"), &o, &res, &err), CT_OK);
    assert_int_equal(res.row.ncells, 0); /* the marker survived the minor compaction */
    wc_result_release(&res);
    o.raw = true;
    assert_int_equal(wc_get(t, wc_bytes_str("row"), &o, &res, &err), CT_OK);
    assert_int_equal(res.row.ncells, 2); /* marker + masked put (in the other file) */
    wc_result_release(&res);

    assert_int_equal(wc_table_compact(s, "mc", NULL, true, &err), CT_OK);
    nregions(s, "mc", &files);
    assert_int_equal(files, 1);
    assert_int_equal(wc_get(t, wc_bytes_str("row"), &o, &res, &err), CT_OK);
    assert_int_equal(res.row.ncells, 0); /* marker and masked put are both gone */
    wc_result_release(&res);
    assert_int_equal(files_in_dir(dir), 1); /* replaced files deleted */

    struct wc_store_stats st;
    assert_int_equal(wc_store_stats(s, &st, &err), CT_OK);
    assert_true(st.flushes >= 11);
    assert_true(st.minor_compactions >= 1);
    assert_true(st.major_compactions >= 1);
    wc_table_close(t);
    wc_close(s);
    ctest_rmdir(dir);
}

struct hook_state {
    int calls_minor;
    int calls_major;
};

/* On major compactions, merges a row's puts into one cell "merged" whose value joins theirs. */
static int merge_hook(void *arg, const struct wc_cell *cells, size_t n, bool major,
                      struct wc_cell_sink *sink, struct ct_err *err)
{
    struct hook_state *h = arg;
    if (!major) {
        h->calls_minor++;
        return CT_NOTFOUND;
    }
    h->calls_major++;
    char buf[256] = "";
    int64_t ts = 0;
    for (size_t i = 0; i < n; i++) {
        strncat(buf, (const char *)cells[i].value.data,
                cells[i].value.len < 16 ? cells[i].value.len : 16);
        if (cells[i].ts_ms > ts)
            ts = cells[i].ts_ms;
    }
    struct wc_cell c = cells[0];
    c.qualifier = wc_bytes_str("merged");
    c.value = wc_bytes_str(buf);
    c.ts_ms = ts;
    return wc_cell_sink_emit(sink, &c, err);
}

static void test_compaction_hook_rewrites_rows(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir, 64 * MIB, 1ull << 30);
    struct wc_table *t = mk_table(s, "hk", 1, false, NULL, 0);
    struct hook_state h = {0};
    struct ct_err err;
    assert_int_equal(wc_set_compact_hook(s, "hk", "f", merge_hook, &h, &err), CT_OK);
    put(t, "r1", "a", "A", 1, 5, WC_OP_PUT);
    put(t, "r1", "b", "B", 1, 6, WC_OP_PUT);
    put(t, "r1", "c", "C", 1, 7, WC_OP_PUT);
    put(t, "r2", "a", "Z", 1, 5, WC_OP_PUT);
    put(t, "r2", "b", "gone", 4, 5, WC_OP_DELETE_COLUMN); /* deletes are applied first */
    assert_int_equal(wc_table_flush(s, "hk", &err), CT_OK);
    assert_true(h.calls_minor >= 2); /* flushes run the hook too */
    assert_int_equal(h.calls_major, 0);
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_result res;
    assert_int_equal(wc_get(t, wc_bytes_str("r1"), &o, &res, &err), CT_OK);
    assert_int_equal(res.row.ncells, 3);
    wc_result_release(&res);
    assert_int_equal(wc_table_compact(s, "hk", NULL, true, &err), CT_OK);
    assert_int_equal(h.calls_major, 2);
    assert_int_equal(wc_get(t, wc_bytes_str("r1"), &o, &res, &err), CT_OK);
    assert_int_equal(res.row.ncells, 1);
    assert_memory_equal(res.row.cells[0].qualifier.data, "merged", 6);
    assert_int_equal(res.row.cells[0].value.len, 3);
    assert_memory_equal(res.row.cells[0].value.data, "ABC", 3);
    assert_int_equal(res.row.cells[0].ts_ms, 7);
    wc_result_release(&res);
    assert_int_equal(wc_get(t, wc_bytes_str("r2"), &o, &res, &err), CT_OK);
    assert_int_equal(res.row.ncells, 1);
    assert_memory_equal(res.row.cells[0].value.data, "Z", 1);
    wc_result_release(&res);
    /* removing the hook */
    assert_int_equal(wc_set_compact_hook(s, "hk", "f", NULL, NULL, &err), CT_OK);
    assert_true(wc_set_compact_hook(s, "hk", "nofam", merge_hook, &h, &err) < 0);
    wc_table_close(t);
    wc_close(s);
    ctest_rmdir(dir);
}

/* A hook that stays inside its first call until told to leave (the test's gate). */
struct slow_hook {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int inside, calls;
    bool leave;
};

static int slow_hook_fn(void *arg, const struct wc_cell *cells, size_t n, bool major,
                        struct wc_cell_sink *sink, struct ct_err *err)
{
    (void)cells, (void)n, (void)major, (void)sink, (void)err;
    struct slow_hook *h = arg;
    pthread_mutex_lock(&h->mu);
    h->inside++;
    h->calls++;
    pthread_cond_broadcast(&h->cv);
    while (!h->leave)
        pthread_cond_wait(&h->cv, &h->mu);
    h->inside--;
    pthread_mutex_unlock(&h->mu);
    return CT_NOTFOUND;
}

struct flusher {
    struct wc_store *s;
    int rc;
};

static void *flush_thread(void *arg)
{
    struct flusher *f = arg;
    struct ct_err err;
    f->rc = wc_table_flush(f->s, "slow", &err);
    return NULL;
}

struct unhooker {
    struct wc_store *s;
    int rc;
    atomic_bool done;
};

static void *unhook_thread(void *arg)
{
    struct unhooker *u = arg;
    struct ct_err err;
    u->rc = wc_set_compact_hook(u->s, "slow", "f", NULL, NULL, &err);
    atomic_store(&u->done, true);
    return NULL;
}

/* Removing a hook returns only once no flush or compaction is inside it (the TSD frees the
 * hook's arg right after: tsdb_close); a flush that starts afterwards does not call it. */
static void test_removing_a_hook_waits_for_the_merges_inside_it(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir, 64 * MIB, 1ull << 30);
    struct wc_table *t = mk_table(s, "slow", 1, false, NULL, 0);
    struct slow_hook h = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, false};
    struct ct_err err;
    assert_int_equal(wc_set_compact_hook(s, "slow", "f", slow_hook_fn, &h, &err), CT_OK);
    put(t, "r1", "a", "A", 1, 5, WC_OP_PUT);
    struct flusher f = {s, -1};
    pthread_t ft, ut;
    assert_int_equal(pthread_create(&ft, NULL, flush_thread, &f), 0);
    pthread_mutex_lock(&h.mu);
    while (!h.inside)
        pthread_cond_wait(&h.cv, &h.mu);
    pthread_mutex_unlock(&h.mu);
    struct unhooker u = {s, -1, false};
    assert_int_equal(pthread_create(&ut, NULL, unhook_thread, &u), 0);
    struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    assert_false(atomic_load(&u.done)); /* the flush is still inside the hook */
    pthread_mutex_lock(&h.mu);
    h.leave = true;
    pthread_cond_broadcast(&h.cv);
    pthread_mutex_unlock(&h.mu);
    assert_int_equal(pthread_join(ut, NULL), 0);
    assert_int_equal(u.rc, CT_OK);
    pthread_mutex_lock(&h.mu);
    assert_int_equal(h.inside, 0);
    int calls = h.calls;
    pthread_mutex_unlock(&h.mu);
    assert_int_equal(pthread_join(ft, NULL), 0);
    assert_int_equal(f.rc, CT_OK);
    put(t, "r2", "a", "B", 1, 5, WC_OP_PUT);
    assert_int_equal(wc_table_flush(s, "slow", &err), CT_OK);
    assert_int_equal(h.calls, calls);
    wc_table_close(t);
    wc_close(s);
    ctest_rmdir(dir);
}

/* ---- regions ------------------------------------------------------------------------------- */

static void test_split_at_key_and_at_midpoints(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir, 64 * MIB, 1ull << 30);
    struct wc_table *t = mk_table(s, "sp", 1, false, NULL, 0);
    struct ct_err err;
    put_rows(t, 0, 2000, "v");
    assert_int_equal(wc_table_flush(s, "sp", &err), CT_OK);
    put_rows(t, 1000, 1500, "w"); /* newer versions in the memstore */
    struct wc_bytes key = wc_bytes_str("r01200");
    assert_int_equal(wc_table_split(s, "sp", &key, &err), CT_OK);
    assert_int_equal(nregions(s, "sp", NULL), 2);
    assert_int_equal(wc_table_split(s, "sp", &key, &err), CT_EINVAL); /* already a start */
    assert_int_equal(count_rows(t, false, NULL), 2000);
    assert_int_equal(count_rows(t, true, NULL), 2000);
    /* daughters share the parent's file: after a major compaction each has its own */
    assert_int_equal(wc_table_flush(s, "sp", &err), CT_OK);
    assert_int_equal(wc_table_compact(s, "sp", NULL, true, &err), CT_OK);
    assert_int_equal(wc_table_split(s, "sp", NULL, &err), CT_OK);
    assert_int_equal(nregions(s, "sp", NULL), 4);
    assert_int_equal(count_rows(t, false, NULL), 2000);
    assert_int_equal(count_rows(t, true, NULL), 2000);
    struct wc_region_info *ri;
    size_t n;
    assert_int_equal(wc_table_regions(s, "sp", &ri, &n, &err), CT_OK);
    assert_int_equal(ri[0].start_len, 0);
    assert_int_equal(ri[n - 1].end_len, 0);
    for (size_t i = 1; i < n; i++) {
        assert_int_equal(ri[i].start_len, ri[i - 1].end_len);
        assert_memory_equal(ri[i].start_key, ri[i - 1].end_key, ri[i].start_len);
    }
    wc_region_info_free(ri, n);
    for (int i = 0; i < 2000; i += 97) {
        char row[24];
        snprintf(row, sizeof(row), "r%05d", i);
        struct wc_scan_options o;
        wc_scan_options_init(&o);
        struct wc_result res;
        assert_int_equal(wc_get(t, wc_bytes_str(row), &o, &res, &err), CT_OK);
        assert_int_equal(res.row.ncells, 1);
        assert_memory_equal(res.row.cells[0].value.data, i >= 1000 && i < 1500 ? "w" : "v", 1);
        wc_result_release(&res);
    }
    /* the split survives a reopen */
    wc_table_close(t);
    wc_close(s);
    s = open_store(dir, 64 * MIB, 1ull << 30);
    assert_int_equal(nregions(s, "sp", NULL), 4);
    assert_int_equal(wc_table_open(s, "sp", &t, &err), CT_OK);
    assert_int_equal(count_rows(t, false, NULL), 2000);
    /* truncate keeping the split keys */
    assert_int_equal(wc_table_truncate(s, "sp", true, &err), CT_OK);
    assert_int_equal(nregions(s, "sp", NULL), 4);
    assert_int_equal(count_rows(t, false, NULL), 0);
    assert_int_equal(wc_table_truncate(s, "sp", false, &err), CT_OK);
    assert_int_equal(nregions(s, "sp", NULL), 1);
    wc_table_close(t);
    wc_close(s);
    ctest_rmdir(dir);
}

/* Splits table `name` (one family "f" of `blocksize`, rows r00000..r00099 of 30-byte values,
 * flushed into one file) at its midpoint; returns the new boundary's row number. */
static int midpoint_split_row(struct wc_store *s, const char *name, uint32_t blocksize)
{
    struct wc_family_desc fd;
    wc_family_desc_init(&fd, "f");
    fd.blocksize = blocksize;
    struct wc_table_desc d;
    wc_table_desc_init(&d, name);
    d.families = &fd;
    d.nfamilies = 1;
    d.compaction_enabled = false;
    struct ct_err err;
    assert_int_equal(wc_table_create(s, &d, NULL, 0, &err), CT_OK);
    struct wc_table *t = fixture_table_open(s, name);
    put_rows(t, 0, 100, "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvv");
    assert_int_equal(wc_table_flush(s, name, &err), CT_OK);
    assert_int_equal(wc_table_split(s, name, NULL, &err), CT_OK);
    struct wc_region_info *ri;
    size_t n;
    assert_int_equal(wc_table_regions(s, name, &ri, &n, &err), CT_OK);
    assert_int_equal(n, 2);
    assert_int_equal(ri[1].start_len, 6);
    int row = atoi((const char *)ri[1].start_key + 1);
    wc_region_info_free(ri, n);
    assert_int_equal(count_rows(t, false, NULL), 100);
    assert_int_equal(count_rows(t, true, NULL), 100);
    wc_table_close(t);
    return row;
}

/* The midpoint is the cell in the middle of the file's data: for a file of one block (whose
 * first row is the file's first row, no split point) and for one of two uneven blocks (whose
 * second block starts at row 82: HBase's midkey) alike. */
static void test_midpoint_split_halves_files_of_one_or_two_blocks(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir, 64 * MIB, 1ull << 30);
    int one = midpoint_split_row(s, "mid1", 65536);
    assert_true(one >= 48 && one <= 52);
    int two = midpoint_split_row(s, "mid2", 3300); /* 2 blocks: 82 rows, 18 rows */
    assert_true(two >= 45 && two <= 55);
    wc_close(s);
    ctest_rmdir(dir);
}

/* A file of one block (the default 64 KiB BLOCKSIZE and a small region): the middle block's
 * first row is the file's first row, so the midpoint is the row of its middle cell. */
static void test_midpoint_split_of_a_one_block_file_uses_its_middle_row(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir, 64 * MIB, 1ull << 30);
    struct wc_family_desc fd;
    wc_family_desc_init(&fd, "f");
    struct wc_table_desc d;
    wc_table_desc_init(&d, "one");
    d.families = &fd;
    d.nfamilies = 1;
    d.compaction_enabled = false;
    struct ct_err err;
    assert_int_equal(wc_table_create(s, &d, NULL, 0, &err), CT_OK);
    struct wc_table *t = fixture_table_open(s, "one");
    put_rows(t, 0, 100, "v");
    assert_int_equal(wc_table_flush(s, "one", &err), CT_OK);
    assert_int_equal(wc_table_split(s, "one", NULL, &err), CT_OK);
    struct wc_region_info *ri;
    size_t n;
    assert_int_equal(wc_table_regions(s, "one", &ri, &n, &err), CT_OK);
    assert_int_equal(n, 2);
    assert_int_equal(ri[1].start_len, 6);
    assert_memory_equal(ri[1].start_key, "r00050", 6);
    wc_region_info_free(ri, n);
    assert_int_equal(count_rows(t, false, "v"), 100);
    assert_int_equal(count_rows(t, true, "v"), 100);
    /* a region of one row has no midpoint: nothing splits, nothing fails */
    assert_int_equal(wc_table_truncate(s, "one", false, &err), CT_OK);
    put_rows(t, 0, 1, "v");
    assert_int_equal(wc_table_flush(s, "one", &err), CT_OK);
    assert_int_equal(wc_table_split(s, "one", NULL, &err), CT_OK);
    assert_int_equal(nregions(s, "one", NULL), 1);
    wc_table_close(t);
    wc_close(s);
    ctest_rmdir(dir);
}

static void test_automatic_split_under_bounded_write_load(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    /* stepping policy: 2 x 32 KiB while one region, then 128 KiB */
    struct wc_store *s = open_store(dir, 32 << 10, 128 << 10);
    struct wc_table *t = mk_table(s, "auto", 1, true, NULL, 0);
    struct ct_err err;
    char val[200];
    memset(val, 'x', sizeof(val));
    val[sizeof(val) - 1] = 0;
    for (int i = 0; i < 4000; i++) {
        char row[24];
        /* spread over the key space */
        snprintf(row, sizeof(row), "r%05d", (i * 7919) % 4000);
        put(t, row, "q", val, sizeof(val) - 1, 1, WC_OP_PUT);
    }
    size_t n = 0;
    for (int tries = 0; tries < 200; tries++) { /* at most ~20 s */
        n = nregions(s, "auto", NULL);
        if (n >= 3)
            break;
        usleep(100 * 1000);
    }
    assert_true(n >= 2);
    assert_int_equal(count_rows(t, false, NULL), 4000);
    assert_int_equal(count_rows(t, true, NULL), 4000);
    struct wc_store_stats st;
    assert_int_equal(wc_store_stats(s, &st, &err), CT_OK);
    assert_true(st.splits >= 1);
    assert_true(st.regions >= 2);
    assert_int_equal(wc_background_error(s, &err), CT_OK);
    wc_table_close(t);
    wc_close(s);
    /* and everything is there after a reopen */
    s = open_store(dir, 32 << 10, 128 << 10);
    assert_int_equal(wc_table_open(s, "auto", &t, &err), CT_OK);
    assert_int_equal(count_rows(t, false, NULL), 4000);
    wc_table_close(t);
    wc_close(s);
    ctest_rmdir(dir);
}

static void test_region_stats_track_memstore_files_and_requests(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir, 64 * MIB, 1ull << 30);
    struct wc_table *t = mk_table(s, "st", 1, false, (const char *const[]){"m"}, 1);
    struct ct_err err;
    put(t, "a", "q", "1", 1, 1, WC_OP_PUT);
    put(t, "b", "q", "1", 1, 1, WC_OP_PUT);
    put(t, "x", "q", "1", 1, 1, WC_OP_PUT);
    struct wc_region_info *ri;
    size_t n;
    assert_int_equal(wc_table_regions(s, "st", &ri, &n, &err), CT_OK);
    assert_int_equal(n, 2);
    assert_int_equal(ri[0].write_requests, 2);
    assert_int_equal(ri[1].write_requests, 1);
    assert_true(ri[0].memstore_bytes > 0);
    assert_int_equal(ri[0].store_files, 0);
    wc_region_info_free(ri, n);
    assert_int_equal(wc_table_flush(s, "st", &err), CT_OK);
    assert_int_equal(count_rows(t, false, NULL), 3);
    assert_int_equal(wc_table_regions(s, "st", &ri, &n, &err), CT_OK);
    assert_int_equal(ri[0].memstore_bytes, 0);
    assert_int_equal(ri[0].store_files, 1);
    assert_true(ri[0].store_file_bytes > 0);
    assert_int_equal(ri[0].read_requests, 2);
    assert_int_equal(ri[1].read_requests, 1);
    wc_region_info_free(ri, n);
    wc_table_close(t);
    wc_close(s);
    ctest_rmdir(dir);
}

/* ---- crashes in the middle of a split or a compaction ------------------------------------ */

static void crash_child(const char *dir, const char *failpoint, int mode)
{
    struct wc_store *s = open_store(dir, 64 * MIB, 1ull << 30);
    struct ct_err err;
    struct wc_table *t;
    if (wc_table_open(s, "cr", &t, &err) != CT_OK)
        _exit(3);
    put_rows(t, 1000, 1200, "a"); /* in the log and the memstore only */
    engine_set_failpoint(s, failpoint);
    int rc;
    if (mode == 0) {
        struct wc_bytes key = wc_bytes_str("r00600");
        rc = wc_table_split(s, "cr", &key, &err);
    } else {
        rc = wc_table_compact(s, "cr", NULL, true, &err);
    }
    _exit(rc == CT_OK ? 4 : 5); /* the failpoint exits with 0 before this */
}

static void run_crash(const char *failpoint, int mode, size_t want_regions)
{
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir, 64 * MIB, 1ull << 30);
    struct wc_table *t = mk_table(s, "cr", 1, false, NULL, 0);
    struct ct_err err;
    put_rows(t, 0, 500, "a");
    assert_int_equal(wc_table_flush(s, "cr", &err), CT_OK);
    put_rows(t, 500, 1000, "a");
    assert_int_equal(wc_table_flush(s, "cr", &err), CT_OK);
    wc_table_close(t);
    wc_close(s);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        crash_child(dir, failpoint, mode);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0); /* died at the failpoint */
    s = open_store(dir, 64 * MIB, 1ull << 30);
    assert_int_equal(wc_table_open(s, "cr", &t, &err), CT_OK);
    assert_int_equal(nregions(s, "cr", NULL), want_regions);
    assert_int_equal(count_rows(t, false, "a"), 1200);
    assert_int_equal(count_rows(t, true, "a"), 1200);
    uint64_t files;
    nregions(s, "cr", &files);
    /* no orphan left behind (a shared file counts once per region that lists it) */
    assert_true(files_in_dir(dir) <= files);
    wc_table_close(t);
    wc_close(s);
    ctest_rmdir(dir);
}

static void test_split_interrupted_before_the_catalog_is_rolled_back(void **state)
{
    (void)state;
    run_crash("split_before_catalog", 0, 1);
}

static void test_split_interrupted_after_the_catalog_is_complete(void **state)
{
    (void)state;
    run_crash("split_after_catalog", 0, 2);
}

static void test_compaction_interrupted_before_the_catalog_loses_nothing(void **state)
{
    (void)state;
    run_crash("compact_before_catalog", 1, 1);
}

static void test_compaction_interrupted_after_the_catalog_loses_nothing(void **state)
{
    (void)state;
    run_crash("compact_after_catalog", 1, 1);
}

/* A split's second half: the daughters' background major compactions rewrite their part of the
 * parent's shared files, and the last one to stop listing a shared file deletes it. A crash in
 * the middle of one (before or after its catalog write) loses and duplicates nothing, leaves no
 * orphan, and the next compactions finish the job. */
static void crash_daughters_child(const char *dir, const char *failpoint)
{
    struct wc_store *s = open_store(dir, 64 * MIB, 1ull << 30);
    struct ct_err err;
    struct wc_table *t;
    if (wc_table_open(s, "dc", &t, &err) != CT_OK)
        _exit(3);
    put_rows(t, 1000, 1200, "a"); /* in the log and the memstore only */
    engine_set_failpoint(s, failpoint);
    struct wc_bytes key = wc_bytes_str("r00600");
    if (wc_table_split(s, "dc", &key, &err) != CT_OK)
        _exit(5);
    for (int i = 0; i < 400; i++) /* the background compaction exits at the failpoint */
        usleep(50 * 1000);
    _exit(4);
}

static void run_crash_daughters(const char *failpoint)
{
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir, 64 * MIB, 1ull << 30);
    struct wc_table *t = mk_table(s, "dc", 1, true, NULL, 0);
    struct ct_err err;
    put_rows(t, 0, 500, "a");
    assert_int_equal(wc_table_flush(s, "dc", &err), CT_OK);
    put_rows(t, 500, 1000, "a");
    assert_int_equal(wc_table_flush(s, "dc", &err), CT_OK);
    wc_table_close(t);
    wc_close(s);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        crash_daughters_child(dir, failpoint);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0); /* died at the failpoint */
    s = open_store(dir, 64 * MIB, 1ull << 30);
    assert_int_equal(wc_table_open(s, "dc", &t, &err), CT_OK);
    assert_int_equal(nregions(s, "dc", NULL), 2);
    assert_int_equal(count_rows(t, false, "a"), 1200);
    assert_int_equal(count_rows(t, true, "a"), 1200);
    uint64_t files;
    nregions(s, "dc", &files);
    assert_true(files_in_dir(dir) <= files); /* no orphan */
    /* finishing the job: afterwards no file is shared and every listed file exists once */
    assert_int_equal(wc_table_flush(s, "dc", &err), CT_OK);
    assert_int_equal(wc_table_compact(s, "dc", NULL, true, &err), CT_OK);
    nregions(s, "dc", &files);
    assert_int_equal(files, 2);
    assert_int_equal(files_in_dir(dir), 2);
    assert_int_equal(count_rows(t, false, "a"), 1200);
    assert_int_equal(count_rows(t, true, "a"), 1200);
    wc_table_close(t);
    wc_close(s);
    s = open_store(dir, 64 * MIB, 1ull << 30);
    assert_int_equal(wc_table_open(s, "dc", &t, &err), CT_OK);
    assert_int_equal(count_rows(t, true, "a"), 1200);
    wc_table_close(t);
    wc_close(s);
    ctest_rmdir(dir);
}

static void test_split_daughter_compaction_interrupted_before_the_catalog(void **state)
{
    (void)state;
    run_crash_daughters("compact_before_catalog");
}

static void test_split_daughter_compaction_interrupted_after_the_catalog(void **state)
{
    (void)state;
    run_crash_daughters("compact_after_catalog");
}

/* ---- a flush racing two writers: the flush fence ----------------------------------------- */

/* Batch A gets its seqs, then pauses before its memstore insert; batch B (later seqs, two cells)
 * inserts; then a flush runs, then a compaction, then the process dies. The flush must not write
 * B's cells with a watermark below A's seqs: the replay would add B's cells a second time, and
 * once a hook rewrote the row (as the TSD's compaction turns datapoints into one cell) the copies
 * are distinct cells - the duplicate points the crash test found (tests/integration/crash_tsd.py;
 * without the flush fence this test reads "a:A b:B c:C merged:BC"). */
struct interleave {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int write_steps;
    bool a_paused, a_release, b_inserted, flush_waiting, flush_done;
};

static void interleave_step(void *arg, const char *step)
{
    struct interleave *x = arg;
    pthread_mutex_lock(&x->mu);
    if (!strcmp(step, "write_before_insert") && x->write_steps++ == 0) {
        x->a_paused = true;
        pthread_cond_broadcast(&x->cv);
        while (!x->a_release)
            pthread_cond_wait(&x->cv, &x->mu);
    } else if (!strcmp(step, "write_before_publish") && !x->a_release) {
        x->b_inserted = true; /* A is still paused: this is B */
    } else if (!strcmp(step, "flush_waits_for_writers")) {
        x->flush_waiting = true;
    }
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&x->mu);
}

/* Waits (at most 20 s, else the child exits 6) until *a or *b is true. */
static void interleave_wait(struct interleave *x, const bool *a, const bool *b)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    pthread_mutex_lock(&x->mu);
    while (!*a && !(b && *b))
        if (pthread_cond_timedwait(&x->cv, &x->mu, &until) != 0)
            _exit(6);
    pthread_mutex_unlock(&x->mu);
}

struct interleave_writer {
    struct wc_table *t;
    const char *qual, *val; /* one or two cells: one qualifier and value byte each */
    int64_t ts;
    int rc;
};

static void *interleave_write(void *arg)
{
    struct interleave_writer *w = arg;
    struct wc_mutation m[2];
    size_t n = 0;
    for (const char *q = w->qual, *v = w->val; *q && n < 2; q++, v++, n++)
        m[n] = (struct wc_mutation){WC_OP_PUT, wc_bytes_str("f"), wc_bytes_of(q, 1),
                                    wc_bytes_of(v, 1), w->ts};
    struct wc_row_mutation rm = {wc_bytes_str("row"), m, n};
    struct ct_err err;
    w->rc = wc_mutate_row(w->t, &rm, WC_DURABILITY_SYNC_WAL, &err);
    return NULL;
}

struct interleave_flusher {
    struct wc_store *s;
    struct interleave *x;
    int rc;
};

static void *interleave_flush(void *arg)
{
    struct interleave_flusher *f = arg;
    struct ct_err err;
    f->rc = wc_table_flush(f->s, "il", &err);
    pthread_mutex_lock(&f->x->mu);
    f->x->flush_done = true;
    pthread_cond_broadcast(&f->x->cv);
    pthread_mutex_unlock(&f->x->mu);
    return NULL;
}

/* At every flush (minor) and compaction: a row's puts become one cell "merged" joining their
 * values, like the TSD's compaction of a row's datapoints into one cell. */
static int join_hook(void *arg, const struct wc_cell *cells, size_t n, bool major,
                     struct wc_cell_sink *sink, struct ct_err *err)
{
    (void)arg;
    (void)major;
    char buf[64] = "";
    for (size_t i = 0; i < n && strlen(buf) + cells[i].value.len < sizeof(buf); i++)
        strncat(buf, (const char *)cells[i].value.data, cells[i].value.len);
    struct wc_cell c = cells[0];
    c.qualifier = wc_bytes_str("merged");
    c.value = wc_bytes_str(buf);
    return wc_cell_sink_emit(sink, &c, err);
}

static void interleave_child(const char *dir)
{
    struct wc_store *s = open_store(dir, 64 * MIB, 1ull << 30);
    struct ct_err err;
    struct wc_table *t;
    if (wc_table_open(s, "il", &t, &err) != CT_OK ||
        wc_set_compact_hook(s, "il", "f", join_hook, NULL, &err) != CT_OK)
        _exit(3);
    struct interleave x = {.write_steps = 0};
    pthread_mutex_init(&x.mu, NULL);
    pthread_cond_init(&x.cv, NULL);
    engine_set_test_step(s, interleave_step, &x);
    struct interleave_writer a = {t, "a", "A", 5, -1}, b = {t, "bc", "BC", 6, -1};
    struct interleave_flusher f = {s, &x, -1};
    pthread_t ta, tb, tf;
    if (pthread_create(&ta, NULL, interleave_write, &a) != 0)
        _exit(3);
    interleave_wait(&x, &x.a_paused, NULL);
    if (pthread_create(&tb, NULL, interleave_write, &b) != 0)
        _exit(3);
    interleave_wait(&x, &x.b_inserted, NULL);
    if (pthread_create(&tf, NULL, interleave_flush, &f) != 0)
        _exit(3);
    interleave_wait(&x, &x.flush_waiting, &x.flush_done);
    pthread_mutex_lock(&x.mu);
    x.a_release = true;
    pthread_cond_broadcast(&x.cv);
    pthread_mutex_unlock(&x.mu);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    pthread_join(tf, NULL);
    if (a.rc != CT_OK || b.rc != CT_OK || f.rc != CT_OK)
        _exit(4);
    /* the compaction that follows a flush: it rewrites the row through the hook (a flush keeps
     * cells above the read point as they are) */
    if (wc_table_compact(s, "il", NULL, true, &err) != CT_OK)
        _exit(5);
    _exit(0); /* a crash: no close, the log is replayed at the next open */
}

static void test_flush_racing_two_writers_writes_a_seq_prefix(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir, 64 * MIB, 1ull << 30);
    struct wc_table *t = mk_table(s, "il", 10, false, NULL, 0);
    wc_table_close(t);
    wc_close(s);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        interleave_child(dir);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    s = open_store(dir, 64 * MIB, 1ull << 30);
    t = fixture_table_open(s, "il");
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.max_versions = 10;
    struct wc_result res;
    struct ct_err err;
    assert_int_equal(wc_get(t, wc_bytes_str("row"), &o, &res, &err), CT_OK);
    char all[128] = "";
    for (size_t i = 0; i < res.row.ncells; i++)
        snprintf(all + strlen(all), sizeof(all) - strlen(all), "%.*s:%.*s ",
                 (int)res.row.cells[i].qualifier.len, (const char *)res.row.cells[i].qualifier.data,
                 (int)res.row.cells[i].value.len, (const char *)res.row.cells[i].value.data);
    wc_result_release(&res);
    /* each write once: the flushed file holds both batches (joined), the replay adds neither
     * again (with a flush of B alone below A's seq, B's cells came back beside "merged:BC") */
    assert_string_equal(all, "merged:ABC ");
    wc_table_close(t);
    wc_close(s);
    ctest_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exploring_policy_selection),
        cmocka_unit_test(test_minor_compaction_keeps_markers_major_drops_them),
        cmocka_unit_test(test_compaction_hook_rewrites_rows),
        cmocka_unit_test(test_removing_a_hook_waits_for_the_merges_inside_it),
        cmocka_unit_test(test_split_at_key_and_at_midpoints),
        cmocka_unit_test(test_midpoint_split_of_a_one_block_file_uses_its_middle_row),
        cmocka_unit_test(test_midpoint_split_halves_files_of_one_or_two_blocks),
        cmocka_unit_test(test_automatic_split_under_bounded_write_load),
        cmocka_unit_test(test_region_stats_track_memstore_files_and_requests),
        cmocka_unit_test(test_split_interrupted_before_the_catalog_is_rolled_back),
        cmocka_unit_test(test_split_interrupted_after_the_catalog_is_complete),
        cmocka_unit_test(test_compaction_interrupted_before_the_catalog_loses_nothing),
        cmocka_unit_test(test_compaction_interrupted_after_the_catalog_loses_nothing),
        cmocka_unit_test(test_split_daughter_compaction_interrupted_before_the_catalog),
        cmocka_unit_test(test_split_daughter_compaction_interrupted_after_the_catalog),
        cmocka_unit_test(test_flush_racing_two_writers_writes_a_seq_prefix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
