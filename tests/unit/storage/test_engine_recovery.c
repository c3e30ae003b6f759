/* test_engine_recovery.c - durability of the embedded engine: the log replays through a reopen
 * (puts, every marker, several families, altered and truncated tables), a process SIGKILLed at
 * random moments while writing with SYNC_WAL loses no acknowledged mutation and the store
 * opens, a failed background flush is a sticky error, and a store whose memstores are all
 * flushed keeps no log (an idle table's small memstore pinning the log is flushed, and a region
 * without a write for wc_options.quiet_flush_ms is flushed so the log is released). */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "storage/engine/eio.h"
#include "storage/wc.h"
#include "tests/lib/ctest.h"
#include "tests/lib/fixture.h"

static struct wc_store *open_store(const char *dir, size_t flush_bytes)
{
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = dir;
    o.block_cache_bytes = 1 << 20;
    o.memstore_flush_bytes = flush_bytes;
    o.wal_segment_bytes = 256 << 10;
    o.region_split_bytes = 512 << 10;
    return fixture_store_open(&o);
}

static void create(struct wc_store *s, const char *name, const char *const *fams, size_t nf)
{
    fixture_table_create(s, name, fams, nf, 3);
}

static int mut(struct wc_table *t, const char *row, enum wc_mutation_op op, const char *fam,
               const char *qual, const char *val, int64_t ts, enum wc_durability d)
{
    struct wc_mutation m = {op, wc_bytes_str(fam), wc_bytes_str(qual), wc_bytes_str(val), ts};
    struct wc_row_mutation rm = {wc_bytes_str(row), &m, 1};
    struct ct_err err;
    return wc_mutate_row(t, &rm, d, &err);
}

static void row_str(struct wc_table *t, const char *row, char *out, size_t size)
{
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.max_versions = 3;
    struct wc_result res;
    struct ct_err err;
    if (wc_get(t, wc_bytes_str(row), &o, &res, &err) != CT_OK)
        fail_msg("get %s: %s", row, err.msg);
    out[0] = 0;
    for (size_t i = 0; i < res.row.ncells; i++) {
        const struct wc_cell *c = &res.row.cells[i];
        size_t l = strlen(out);
        snprintf(out + l, size - l, "%s%.*s:%.*s@%lld=%.*s", l ? " " : "", (int)c->family.len,
                 (const char *)c->family.data, (int)c->qualifier.len,
                 (const char *)c->qualifier.data, (long long)c->ts_ms, (int)c->value.len,
                 (const char *)c->value.data);
    }
    wc_result_release(&res);
}

/* Fails the test unless row `row` of t renders (row_str) as `want`. */
static void assert_row(struct wc_table *t, const char *row, const char *want)
{
    char got[512];
    row_str(t, row, got, sizeof(got));
    assert_string_equal(got, want);
}

/* A child writes, then dies without closing the store; the parent reopens. */
static void test_log_replays_every_kind_of_mutation_after_a_crash(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir, 64 << 20);
    create(s, "rp", (const char *const[]){"f", "g"}, 2);
    create(s, "tr", (const char *const[]){"f"}, 1);
    wc_close(s);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        s = open_store(dir, 64 << 20);
        struct wc_table *t, *t2;
        struct ct_err err;
        if (wc_table_open(s, "rp", &t, &err) != CT_OK || wc_table_open(s, "tr", &t2, &err) != CT_OK)
            _exit(3);
        int rc = 0;
        for (int ts = 1; ts <= 4; ts++)
            rc |= mut(t, "r1", WC_OP_PUT, "f", "q", "v", ts, WC_DURABILITY_SYNC_WAL);
        rc |= mut(t, "r1", WC_OP_DELETE_VERSION, "f", "q", "", 4, WC_DURABILITY_SYNC_WAL);
        rc |= mut(t, "r1", WC_OP_PUT, "g", "x", "gx", 7, WC_DURABILITY_FSYNC_WAL);
        rc |= mut(t, "r2", WC_OP_PUT, "f", "a", "1", 5, WC_DURABILITY_SYNC_WAL);
        rc |= mut(t, "r2", WC_OP_DELETE_COLUMN, "f", "a", "", 5, WC_DURABILITY_SYNC_WAL);
        rc |= mut(t, "r2", WC_OP_PUT, "f", "a", "late", 3, WC_DURABILITY_SYNC_WAL);
        rc |= mut(t, "r3", WC_OP_PUT, "f", "a", "1", 5, WC_DURABILITY_SYNC_WAL);
        rc |= mut(t, "r3", WC_OP_DELETE_ROW, "", "", "", 6, WC_DURABILITY_SYNC_WAL);
        /* a truncated table must not get its old rows back from the log */
        rc |= mut(t2, "old", WC_OP_PUT, "f", "q", "old", 1, WC_DURABILITY_SYNC_WAL);
        if (wc_table_truncate(s, "tr", false, &err) != CT_OK)
            _exit(4);
        rc |= mut(t2, "new", WC_OP_PUT, "f", "q", "new", 1, WC_DURABILITY_SYNC_WAL);
        /* a removed and re-added family starts empty */
        struct wc_family_desc fd[2];
        wc_family_desc_init(&fd[0], "f");
        fd[0].versions = 3;
        struct wc_table_desc d;
        wc_table_desc_init(&d, "rp");
        d.families = fd;
        d.nfamilies = 1;
        rc |= mut(t, "r4", WC_OP_PUT, "g", "x", "dropped", 1, WC_DURABILITY_SYNC_WAL);
        if (wc_table_alter(s, &d, &err) != CT_OK)
            _exit(5);
        wc_family_desc_init(&fd[1], "g");
        d.nfamilies = 2;
        if (wc_table_alter(s, &d, &err) != CT_OK)
            _exit(6);
        _exit(rc ? 7 : 0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    s = open_store(dir, 64 << 20);
    struct wc_table *t, *t2;
    struct ct_err err;
    assert_int_equal(wc_table_open(s, "rp", &t, &err), CT_OK);
    assert_int_equal(wc_table_open(s, "tr", &t2, &err), CT_OK);
    /* r1's g:x was in family g, removed and re-added after it was written */
    assert_row(t, "r1", "f:q@3=v f:q@2=v f:q@1=v");
    assert_row(t, "r2", "");
    assert_row(t, "r3", "");
    assert_row(t, "r4", "");
    assert_row(t2, "old", "");
    assert_row(t2, "new", "f:q@1=new");
    /* and once more after a clean close (flushed this time) */
    wc_table_close(t);
    wc_table_close(t2);
    wc_close(s);
    s = open_store(dir, 64 << 20);
    assert_int_equal(wc_table_open(s, "rp", &t, &err), CT_OK);
    assert_row(t, "r1", "f:q@3=v f:q@2=v f:q@1=v");
    wc_table_close(t);
    wc_close(s);
    ctest_rmdir(dir);
}

static void test_async_wal_survives_a_clean_close(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir, 64 << 20);
    create(s, "as", (const char *const[]){"f"}, 1);
    struct wc_table *t;
    struct ct_err err;
    assert_int_equal(wc_table_open(s, "as", &t, &err), CT_OK);
    for (int i = 0; i < 100; i++) {
        char row[16];
        snprintf(row, sizeof(row), "r%03d", i);
        assert_int_equal(mut(t, row, WC_OP_PUT, "f", "q", "v", 1, WC_DURABILITY_ASYNC_WAL), CT_OK);
    }
    wc_table_close(t);
    wc_close(s);
    s = open_store(dir, 64 << 20);
    assert_int_equal(wc_table_open(s, "as", &t, &err), CT_OK);
    assert_row(t, "r099", "f:q@1=v");
    wc_table_close(t);
    wc_close(s);
    ctest_rmdir(dir);
}

#define CRASH_RUNS     20
#define CRASH_MAX_ROWS 200000

/* The child writes rows r<i> (batches of 1..4 rows, SYNC_WAL) with a small memstore, so
 * flushes, compactions and splits run while it is killed, and reports each acknowledged batch
 * by writing its last row number to the pipe. */
static void crash_writer(const char *dir, int fd, unsigned seed)
{
    struct wc_store *s = open_store(dir, 16 << 10);
    struct wc_table *t;
    struct ct_err err;
    if (wc_table_open(s, "kill", &t, &err) != CT_OK)
        _exit(3);
    char rows[4][16];
    struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("q"),
                            wc_bytes_str("value-of-some-length-0123456789"), 1};
    struct wc_row_mutation rm[4];
    for (int i = 0; i < CRASH_MAX_ROWS;) {
        int n = 1 + (int)(rand_r(&seed) % 4);
        for (int k = 0; k < n; k++) {
            snprintf(rows[k], sizeof(rows[k]), "r%07d", i + k);
            rm[k] = (struct wc_row_mutation){wc_bytes_str(rows[k]), &m, 1};
        }
        if (wc_mutate_batch(t, rm, (size_t)n, WC_DURABILITY_SYNC_WAL, &err) != CT_OK)
            _exit(4);
        i += n;
        int32_t last = i - 1;
        if (write(fd, &last, sizeof(last)) != sizeof(last))
            _exit(5);
    }
    _exit(0);
}

static void test_sigkill_loses_no_acknowledged_write(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir, 16 << 10);
    create(s, "kill", (const char *const[]){"f"}, 1);
    wc_close(s);
    unsigned seed = (unsigned)time(NULL);
    int acked = -1;
    for (int run = 0; run < CRASH_RUNS; run++) {
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(p[0]);
            /* each run continues where the previous acknowledged rows end */
            crash_writer(dir, p[1], seed + (unsigned)run);
        }
        close(p[1]);
        struct timespec ts = {0, (long)(20 + rand_r(&seed) % 200) * 1000 * 1000};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        int32_t v;
        int last = -1;
        ssize_t r;
        while ((r = read(p[0], &v, sizeof(v))) == sizeof(v))
            last = v;
        close(p[0]);
        if (last > acked)
            acked = last;
        /* the store opens and holds every acknowledged row */
        s = open_store(dir, 16 << 10);
        struct wc_table *t;
        struct ct_err err;
        assert_int_equal(wc_table_open(s, "kill", &t, &err), CT_OK);
        struct wc_scan_options o;
        wc_scan_options_init(&o);
        o.stop_row = wc_bytes_str("r9");
        struct wc_scanner *sc;
        assert_int_equal(wc_scanner_open(t, &o, &sc, &err), CT_OK);
        struct wc_row row;
        int n = 0;
        while (wc_scanner_next(sc, &row, &err) == CT_OK) {
            char want[16];
            snprintf(want, sizeof(want), "r%07d", n);
            if (n <= acked && (row.key.len != strlen(want) || memcmp(row.key.data, want, 8)))
                fail_msg("run %d: row %d missing (found %.*s)", run, n, (int)row.key.len,
                         (const char *)row.key.data);
            n++;
        }
        wc_scanner_close(sc);
        if (n <= acked)
            fail_msg("run %d: %d rows, but %d were acknowledged", run, n, acked + 1);
        assert_int_equal(wc_background_error(s, &err), CT_OK);
        wc_table_close(t);
        wc_close(s);
    }
    assert_true(acked > 0);
    fprintf(stderr, "sigkill test: %d acknowledged rows over %d runs, all present\n", acked + 1,
            CRASH_RUNS);
    ctest_rmdir(dir);
}

/* A background flush failing on a full disk refuses writes until a retry succeeds, then the
 * store goes on by itself. */
static void test_failed_background_flush_clears_when_the_disk_has_room(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir, 4 << 10);
    create(s, "bg", (const char *const[]){"f"}, 1);
    struct wc_table *t;
    struct ct_err err;
    assert_int_equal(wc_table_open(s, "bg", &t, &err), CT_OK);
    struct eio_fault f = {
        .op = EIO_OP_WRITE, .nth = 1, .errnum = ENOSPC, .repeat = true, .path_substr = ".sst"};
    eio_fault_set(&f);
    int rc = CT_OK;
    for (int i = 0; i < 2000 && rc == CT_OK; i++) {
        char row[16];
        snprintf(row, sizeof(row), "r%05d", i);
        rc = mut(t, row, WC_OP_PUT, "f", "q", "some value bytes", 1, WC_DURABILITY_SYNC_WAL);
        if (rc == CT_OK && wc_background_error(s, &err) != CT_OK)
            break;
        usleep(1000);
    }
    int bg = CT_OK;
    for (int tries = 0; tries < 100 && bg == CT_OK; tries++) { /* at most ~10 s */
        bg = wc_background_error(s, &err);
        if (bg == CT_OK)
            usleep(100 * 1000);
    }
    assert_true(bg < 0);
    assert_non_null(strstr(err.msg, ".sst"));
    /* writes now fail with the same error, and keep failing while the disk is full */
    assert_true(mut(t, "after", WC_OP_PUT, "f", "q", "x", 1, WC_DURABILITY_SYNC_WAL) < 0);
    usleep(1500 * 1000); /* a retry or two fail */
    assert_true(wc_background_error(s, &err) < 0);
    struct wc_store_stats st = fixture_store_stats(s);
    assert_true(st.bg_error_active && st.bg_error_transient);
    assert_true(st.bg_errors >= 2);
    /* the disk has room again: the error clears by itself (no restart) and writes go on */
    eio_fault_clear();
    for (int tries = 0; tries < 100 && wc_background_error(s, &err) != CT_OK; tries++)
        usleep(100 * 1000);
    assert_int_equal(wc_background_error(s, &err), CT_OK);
    assert_int_equal(mut(t, "after", WC_OP_PUT, "f", "q", "x", 1, WC_DURABILITY_SYNC_WAL), CT_OK);
    st = fixture_store_stats(s);
    assert_false(st.bg_error_active);
    assert_int_equal(st.bg_recoveries, 1);
    assert_row(t, "after", "f:q@1=x");
    wc_table_close(t);
    wc_close(s);
    /* nothing acknowledged was lost: the log still has it */
    s = open_store(dir, 64 << 20);
    assert_int_equal(wc_table_open(s, "bg", &t, &err), CT_OK);
    assert_row(t, "r00000", "f:q@1=some value bytes");
    wc_table_close(t);
    wc_close(s);
    ctest_rmdir(dir);
}

/* The log runs out of space (extending its segment fails with ENOSPC): writes fail with the
 * error naming the segment, and go on without a restart once there is room again. */
static void test_full_disk_on_the_log_clears_by_itself(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir, 64 << 20);
    create(s, "w", (const char *const[]){"f"}, 1);
    struct wc_table *t;
    struct ct_err err;
    assert_int_equal(wc_table_open(s, "w", &t, &err), CT_OK);
    assert_int_equal(mut(t, "a", WC_OP_PUT, "f", "q", "1", 1, WC_DURABILITY_SYNC_WAL), CT_OK);
    struct eio_fault f = {
        .op = EIO_OP_WRITE, .nth = 1, .errnum = ENOSPC, .repeat = true, .path_substr = "wal-"};
    eio_fault_set(&f);
    char val[4096];
    memset(val, 'x', sizeof(val) - 1);
    val[sizeof(val) - 1] = 0;
    int rc = CT_OK;
    for (int i = 0; i < 2000 && rc == CT_OK; i++) { /* until the segment must grow */
        char row[16];
        snprintf(row, sizeof(row), "r%05d", i);
        rc = mut(t, row, WC_OP_PUT, "f", "q", val, 1, WC_DURABILITY_SYNC_WAL);
    }
    assert_true(rc < 0);
    assert_true(mut(t, "b", WC_OP_PUT, "f", "q", "2", 1, WC_DURABILITY_SYNC_WAL) < 0);
    usleep(1200 * 1000);
    assert_true(mut(t, "b", WC_OP_PUT, "f", "q", "2", 1, WC_DURABILITY_SYNC_WAL) < 0);
    struct wc_store_stats st = fixture_store_stats(s); /* the state is visible */
    assert_true(st.bg_error_active && st.bg_error_transient);
    eio_fault_clear();
    rc = -1;
    for (int tries = 0; tries < 50 && rc != CT_OK; tries++) {
        usleep(100 * 1000);
        rc = mut(t, "b", WC_OP_PUT, "f", "q", "2", 1, WC_DURABILITY_SYNC_WAL);
    }
    assert_int_equal(rc, CT_OK);
    assert_false(fixture_store_stats(s).bg_error_active);
    wc_table_close(t);
    wc_close(s);
    s = open_store(dir, 64 << 20); /* and the log replays cleanly */
    assert_int_equal(wc_table_open(s, "w", &t, &err), CT_OK);
    assert_row(t, "a", "f:q@1=1");
    assert_row(t, "b", "f:q@1=2");
    wc_table_close(t);
    wc_close(s);
    ctest_rmdir(dir);
}

static size_t wal_segments(const char *dir)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/wal", dir);
    DIR *d = opendir(p);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strstr(de->d_name, ".log"))
            n++;
    closedir(d);
    return n;
}

/* A store in dir with 8 KiB log segments and two one-family tables: "quiet", which gets one
 * row ("once", f:q@1=v), then "busy", which gets `busy_rows` rows of 199 bytes (r00000, ...),
 * all logged with SYNC_WAL. Returns the store, *q and *b the open tables. */
static struct wc_store *open_quiet_and_busy(const char *dir, int busy_rows, struct wc_table **q,
                                            struct wc_table **b)
{
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = dir;
    o.block_cache_bytes = 1 << 20;
    o.wal_segment_bytes = 8 << 10;
    struct wc_store *s = fixture_store_open(&o);
    create(s, "quiet", (const char *const[]){"f"}, 1);
    create(s, "busy", (const char *const[]){"f"}, 1);
    *q = fixture_table_open(s, "quiet");
    *b = fixture_table_open(s, "busy");
    assert_int_equal(mut(*q, "once", WC_OP_PUT, "f", "q", "v", 1, WC_DURABILITY_SYNC_WAL), CT_OK);
    char val[200];
    memset(val, 'x', sizeof(val) - 1);
    val[sizeof(val) - 1] = 0;
    for (int i = 0; i < busy_rows; i++) {
        char row[16];
        snprintf(row, sizeof(row), "r%05d", i);
        assert_int_equal(mut(*b, row, WC_OP_PUT, "f", "q", val, 1, WC_DURABILITY_SYNC_WAL), CT_OK);
    }
    return s;
}

/* Memstores far below their flush size still get flushed when the log grows long. */
static void test_long_log_flushes_the_oldest_memstore(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_table *q, *b;
    struct wc_store *s = open_quiet_and_busy(dir, 2000, &q, &b);
    size_t n = wal_segments(dir);
    for (int tries = 0; tries < 100 && n > 12; tries++) { /* at most ~10 s */
        usleep(100 * 1000);
        n = wal_segments(dir);
    }
    assert_true(n <= 12);
    assert_row(q, "once", "f:q@1=v");
    wc_table_close(q);
    wc_table_close(b);
    wc_close(s);
    ctest_rmdir(dir);
}

/* Bytes of every log segment in dir/wal. */
static long long wal_bytes(const char *dir)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/wal", dir);
    DIR *d = opendir(p);
    assert_non_null(d);
    long long n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strstr(de->d_name, ".log"))
            continue;
        char f[4400];
        snprintf(f, sizeof(f), "%s/%s", p, de->d_name);
        struct stat sb;
        if (stat(f, &sb) == 0)
            n += (long long)sb.st_size;
    }
    closedir(d);
    return n;
}

/* Once every table's memstores are flushed, the log is rolled and no segment is kept: a store
 * whose data is all in block files carries no log bytes, while running and after a clean close;
 * the data is intact after reopening and writes go on into a new segment. */
static void test_flushed_store_keeps_no_log_bytes(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir, 64 << 20);
    create(s, "a", (const char *const[]){"f"}, 1);
    create(s, "b", (const char *const[]){"f"}, 1);
    struct wc_table *a, *b;
    struct ct_err err;
    assert_int_equal(wc_table_open(s, "a", &a, &err), CT_OK);
    assert_int_equal(wc_table_open(s, "b", &b, &err), CT_OK);
    for (int i = 0; i < 300; i++) {
        char row[16];
        snprintf(row, sizeof(row), "r%04d", i);
        assert_int_equal(mut(a, row, WC_OP_PUT, "f", "q", "va", 5, WC_DURABILITY_SYNC_WAL), CT_OK);
        assert_int_equal(mut(b, row, WC_OP_PUT, "f", "q", "vb", 5, WC_DURABILITY_SYNC_WAL), CT_OK);
    }
    assert_true(wal_bytes(dir) > 300 * 2 * 20);
    assert_int_equal(wc_table_flush(s, "a", &err), CT_OK);
    assert_true(wal_bytes(dir) > 0); /* b's edits still need the log */
    assert_int_equal(wc_table_flush(s, "b", &err), CT_OK);
    assert_int_equal(wal_bytes(dir), 0);
    assert_int_equal(wal_segments(dir), 0);
    /* writes go on into a new segment; a clean close leaves no log either */
    assert_int_equal(mut(a, "later", WC_OP_PUT, "f", "q", "v2", 6, WC_DURABILITY_FSYNC_WAL), CT_OK);
    assert_int_equal(wal_segments(dir), 1);
    wc_table_close(a);
    wc_table_close(b);
    wc_close(s);
    assert_int_equal(wal_bytes(dir), 0);
    s = open_store(dir, 64 << 20);
    assert_int_equal(wc_table_open(s, "a", &a, &err), CT_OK);
    assert_int_equal(wc_table_open(s, "b", &b, &err), CT_OK);
    assert_row(a, "r0123", "f:q@5=va");
    assert_row(b, "r0299", "f:q@5=vb");
    assert_row(a, "later", "f:q@6=v2");
    /* a write after the reopen is kept across the next close and open */
    assert_int_equal(mut(b, "after", WC_OP_PUT, "f", "q", "v3", 7, WC_DURABILITY_SYNC_WAL), CT_OK);
    wc_table_close(a);
    wc_table_close(b);
    wc_close(s);
    s = open_store(dir, 64 << 20);
    assert_int_equal(wc_table_open(s, "b", &b, &err), CT_OK);
    assert_row(b, "after", "f:q@7=v3");
    wc_table_close(b);
    wc_close(s);
    ctest_rmdir(dir);
}

static uint64_t table_files(struct wc_store *s, const char *name, uint64_t *memstore_bytes)
{
    struct wc_region_info *ri = NULL;
    size_t n = 0;
    struct ct_err err;
    if (wc_table_regions(s, name, &ri, &n, &err) != CT_OK)
        fail_msg("regions of %s: %s", name, err.msg);
    uint64_t files = 0;
    *memstore_bytes = 0;
    for (size_t i = 0; i < n; i++) {
        files += ri[i].store_files;
        *memstore_bytes += ri[i].memstore_bytes;
    }
    wc_region_info_free(ri, n);
    return files;
}

/* An idle table's small memstore that pins closed log segments is flushed (HBase's log roller)
 * long before the log reaches its segment limit (8), so that once the busy table is flushed
 * the log keeps nothing. */
static void test_idle_small_memstore_pinning_the_log_is_flushed(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_table *q, *b;
    /* 150 rows: ~36 KB of log, 4-5 segments of 8 KiB */
    struct wc_store *s = open_quiet_and_busy(dir, 150, &q, &b);
    struct ct_err err;
    assert_true(wal_segments(dir) <= 8); /* below the 8-segment rule: the idle rule acts */
    uint64_t ms = 0, files = table_files(s, "quiet", &ms);
    for (int tries = 0; tries < 150 && files == 0; tries++) { /* at most ~15 s */
        usleep(100 * 1000);
        files = table_files(s, "quiet", &ms);
    }
    assert_int_equal(files, 1);
    assert_int_equal(ms, 0);
    assert_int_equal(wc_table_flush(s, "busy", &err), CT_OK);
    assert_int_equal(wal_bytes(dir), 0);
    assert_row(q, "once", "f:q@1=v");
    wc_table_close(q);
    wc_table_close(b);
    wc_close(s);
    ctest_rmdir(dir);
}

static struct wc_store *open_quiet_flush(const char *dir, int64_t quiet_ms)
{
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = dir;
    o.block_cache_bytes = 1 << 20;
    o.quiet_flush_ms = quiet_ms; /* 64 MiB segments: only the quiet rule can release the log */
    return fixture_store_open(&o);
}

/* Polls (every 50 ms, at most ~20 s) until dir/wal holds no segment; returns how many it holds. */
static size_t wait_no_wal_segment(const char *dir)
{
    size_t n = wal_segments(dir);
    for (int tries = 0; tries < 400 && n > 0; tries++) {
        usleep(50 * 1000);
        n = wal_segments(dir);
    }
    return n;
}

/* wc_options.quiet_flush_ms: a region without a write for the quiet period is flushed while the
 * store runs, so that the log is released (the active segment too once nothing is left in a
 * memstore); a region still being written is not; the released store survives a crash (a child
 * writes, waits for the release, writes again and dies without closing) with every write. */
static void test_quiet_region_is_flushed_and_the_log_released(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    /* 2 s: a region written every 50 ms stays far from it even on a loaded machine */
    struct wc_store *s = open_quiet_flush(dir, 2000);
    create(s, "quiet", (const char *const[]){"f"}, 1);
    create(s, "busy", (const char *const[]){"f"}, 1);
    struct wc_table *q = fixture_table_open(s, "quiet"), *b = fixture_table_open(s, "busy");
    for (int i = 0; i < 50; i++) {
        char row[16];
        snprintf(row, sizeof(row), "q%03d", i);
        assert_int_equal(mut(q, row, WC_OP_PUT, "f", "q", "vq", 2, WC_DURABILITY_SYNC_WAL), CT_OK);
    }
    /* busy gets a write every 50 ms until quiet is flushed (at most ~20 s) */
    uint64_t ms = 0, files = 0;
    int w = 0;
    for (; w < 400 && files == 0; w++) {
        char row[16];
        snprintf(row, sizeof(row), "b%03d", w);
        assert_int_equal(mut(b, row, WC_OP_PUT, "f", "q", "vb", 3, WC_DURABILITY_SYNC_WAL), CT_OK);
        usleep(50 * 1000);
        files = table_files(s, "quiet", &ms);
    }
    assert_int_equal(files, 1);
    assert_int_equal(ms, 0);
    /* written every 50 ms, far under the quiet period: still in its memstore, so the log stays
     * (quiet took about the quiet period + one check: its flush is the quiet rule's, not the
     * hourly or log-length one) */
    assert_true(w >= 20);
    assert_int_equal(table_files(s, "busy", &ms), 0);
    assert_true(ms > 0);
    assert_true(wal_bytes(dir) > 0);
    /* the writes stop: busy is flushed too and no log segment is left while the store runs */
    assert_int_equal(wait_no_wal_segment(dir), 0);
    assert_int_equal(table_files(s, "busy", &ms), 1);
    assert_int_equal(ms, 0);
    assert_row(q, "q049", "f:q@2=vq");
    assert_row(b, "b000", "f:q@3=vb");
    wc_table_close(q);
    wc_table_close(b);
    wc_close(s);

    /* a crash after a release while running: a later write goes into a new segment, and the
     * replay finds every write (block files up to flushed_upto, the log after it) */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        s = open_quiet_flush(dir, 300);
        struct wc_table *t;
        struct ct_err err;
        if (wc_table_open(s, "quiet", &t, &err) != CT_OK)
            _exit(3);
        if (mut(t, "c1", WC_OP_PUT, "f", "q", "v1", 4, WC_DURABILITY_SYNC_WAL) != CT_OK)
            _exit(4);
        if (wait_no_wal_segment(dir) != 0)
            _exit(5);
        if (mut(t, "c2", WC_OP_PUT, "f", "q", "v2", 5, WC_DURABILITY_SYNC_WAL) != CT_OK)
            _exit(6);
        _exit(0); /* no close: the store is left as a crash leaves it */
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_int_equal(wal_segments(dir), 1); /* c2's */
    s = open_quiet_flush(dir, 0);
    q = fixture_table_open(s, "quiet");
    b = fixture_table_open(s, "busy");
    assert_row(q, "q000", "f:q@2=vq");
    assert_row(q, "c1", "f:q@4=v1");
    assert_row(q, "c2", "f:q@5=v2");
    char last[16];
    snprintf(last, sizeof(last), "b%03d", w - 1);
    assert_row(b, last, "f:q@3=vb");
    wc_table_close(q);
    wc_table_close(b);
    wc_close(s);
    ctest_rmdir(dir);
}

/* A read-only open reads the block files, refuses writes and leaves the directory alone; it
 * holds the lock shared (readers together, never beside a writer). */
static void test_read_only_open_reads_and_refuses_writes(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir, 64 << 20);
    create(s, "ro", (const char *const[]){"f"}, 1);
    struct wc_table *t;
    struct ct_err err;
    assert_int_equal(wc_table_open(s, "ro", &t, &err), CT_OK);
    assert_int_equal(mut(t, "r", WC_OP_PUT, "f", "q", "v", 1, WC_DURABILITY_SYNC_WAL), CT_OK);
    wc_table_close(t);
    wc_close(s); /* flushes */
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = dir;
    o.read_only = true;
    assert_int_equal(wc_open(&o, &s, &err), CT_OK);
    assert_int_equal(wc_table_open(s, "ro", &t, &err), CT_OK);
    assert_row(t, "r", "f:q@1=v");
    assert_true(mut(t, "r2", WC_OP_PUT, "f", "q", "v", 1, WC_DURABILITY_SYNC_WAL) < 0);
    struct wc_family_desc fd;
    wc_family_desc_init(&fd, "f");
    struct wc_table_desc d;
    wc_table_desc_init(&d, "other");
    d.families = &fd;
    d.nfamilies = 1;
    assert_true(wc_table_create(s, &d, NULL, 0, &err) < 0);
    /* a writer cannot open the directory meanwhile (the read-only open holds LOCK shared),
     * a second reader can */
    struct wc_options o3;
    wc_options_init(&o3);
    o3.data_dir = dir;
    struct wc_store *w = NULL;
    assert_int_equal(wc_open(&o3, &w, &err), CT_EBUSY);
    assert_non_null(strstr(err.msg, "in use by another process"));
    struct wc_store *r2 = NULL;
    assert_int_equal(wc_open(&o, &r2, &err), CT_OK);
    wc_close(r2);
    wc_table_close(t);
    wc_close(s);
    /* and a second writer is refused while one is open */
    w = open_store(dir, 64 << 20);
    struct wc_options o2;
    wc_options_init(&o2);
    o2.data_dir = dir;
    struct wc_store *w2 = NULL;
    assert_int_equal(wc_open(&o2, &w2, &err), CT_EBUSY);
    assert_null(w2);
    /* and so is a reader: it would see the block files without the log, i.e. too little */
    assert_int_equal(wc_open(&o, &w2, &err), CT_EBUSY);
    assert_non_null(strstr(err.msg, "in use by another process"));
    assert_null(w2);
    wc_close(w);
    ctest_rmdir(dir);
}

/* When the catalog cannot be written, administrative commands fail and change nothing. */
static void test_failed_catalog_write_changes_nothing(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir, 64 << 20);
    create(s, "keep", (const char *const[]){"f"}, 1);
    struct wc_table *t;
    struct ct_err err;
    assert_int_equal(wc_table_open(s, "keep", &t, &err), CT_OK);
    assert_int_equal(mut(t, "r", WC_OP_PUT, "f", "q", "v", 1, WC_DURABILITY_SYNC_WAL), CT_OK);
    struct eio_fault f = {
        .op = EIO_OP_WRITE, .nth = 1, .errnum = ENOSPC, .repeat = true, .path_substr = "CATALOG"};
    eio_fault_set(&f);
    struct wc_family_desc fd[2];
    wc_family_desc_init(&fd[0], "f");
    fd[0].versions = 3;
    wc_family_desc_init(&fd[1], "g");
    struct wc_table_desc d;
    wc_table_desc_init(&d, "nope");
    d.families = fd;
    d.nfamilies = 1;
    assert_true(wc_table_create(s, &d, NULL, 0, &err) < 0);
    assert_non_null(strstr(err.msg, "CATALOG"));
    assert_int_equal(wc_table_exists(s, "nope", &err), CT_NOTFOUND);
    wc_table_desc_init(&d, "keep");
    d.families = fd;
    d.nfamilies = 2;
    assert_true(wc_table_alter(s, &d, &err) < 0);
    assert_true(wc_namespace_create(s, "nsx", &err) < 0);
    assert_int_equal(wc_namespace_exists(s, "nsx", &err), CT_NOTFOUND);
    assert_true(wc_table_disable(s, "keep", &err) < 0);
    assert_true(wc_table_truncate(s, "keep", false, &err) < 0);
    eio_fault_clear();
    struct wc_table_desc *desc;
    assert_int_equal(wc_table_describe(s, "keep", &desc, &err), CT_OK);
    assert_int_equal(desc->nfamilies, 1);
    assert_int_equal(desc->families[0].versions, 3);
    assert_true(desc->enabled);
    wc_table_desc_free(desc);
    assert_row(t, "r", "f:q@1=v");
    /* a background catalog write that met the fault (recording the new log segment) is a
     * transient error: it clears on its own within about a second */
    for (int tries = 0; tries < 50 && wc_background_error(s, &err) != CT_OK; tries++)
        usleep(100 * 1000);
    assert_int_equal(mut(t, "r", WC_OP_PUT, "f", "q", "w", 2, WC_DURABILITY_SYNC_WAL), CT_OK);
    wc_table_close(t);
    wc_close(s);
    s = open_store(dir, 64 << 20);
    assert_int_equal(wc_table_exists(s, "nope", &err), CT_NOTFOUND);
    assert_int_equal(wc_table_describe(s, "keep", &desc, &err), CT_OK);
    assert_int_equal(desc->nfamilies, 1);
    wc_table_desc_free(desc);
    assert_int_equal(wc_table_open(s, "keep", &t, &err), CT_OK);
    assert_row(t, "r", "f:q@2=w f:q@1=v");
    wc_table_close(t);
    wc_close(s);
    ctest_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_replays_every_kind_of_mutation_after_a_crash),
        cmocka_unit_test(test_async_wal_survives_a_clean_close),
        cmocka_unit_test(test_sigkill_loses_no_acknowledged_write),
        cmocka_unit_test(test_failed_background_flush_clears_when_the_disk_has_room),
        cmocka_unit_test(test_full_disk_on_the_log_clears_by_itself),
        cmocka_unit_test(test_long_log_flushes_the_oldest_memstore),
        cmocka_unit_test(test_flushed_store_keeps_no_log_bytes),
        cmocka_unit_test(test_idle_small_memstore_pinning_the_log_is_flushed),
        cmocka_unit_test(test_quiet_region_is_flushed_and_the_log_released),
        cmocka_unit_test(test_read_only_open_reads_and_refuses_writes),
        cmocka_unit_test(test_failed_catalog_write_changes_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
