/* test_engine_safety.c - the embedded store never deletes what it cannot prove is garbage and
 * refuses to open over missing or foreign files: a listed block file removed (the largest, as an
 * operator's `rm` would), the CATALOG removed beside block files, two block files swapped, a log
 * segment deleted or wal/ emptied each stop the open with a message naming the file, and leave
 * every file where it was; unlisted files go to quarantine/, never unlinked; a healthy store is
 * left byte for byte alone by an open and close. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "storage/coding.h"
#include "storage/crc32c.h"
#include "storage/engine/eio.h"
#include "storage/wc.h"
#include "tests/lib/ctest.h"
#include "tests/lib/fixture.h"

static struct wc_options store_opts(const char *dir)
{
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = dir;
    o.block_cache_bytes = 1 << 20;
    o.memstore_flush_bytes = 64 << 20;
    o.wal_segment_bytes = 64 << 10;
    o.major_compaction_period_ms = 0;
    return o;
}

static struct wc_store *open_store(const char *dir)
{
    struct wc_options o = store_opts(dir);
    return fixture_store_open(&o);
}

/* Writes n rows "<tag>-%05d" (value 100 bytes) with SYNC_WAL. */
static void put_rows(struct wc_table *t, const char *tag, int n)
{
    char row[64], val[101];
    memset(val, 'v', 100);
    val[100] = 0;
    for (int i = 0; i < n; i++) {
        snprintf(row, sizeof(row), "%s-%05d", tag, i);
        struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("q"), wc_bytes_str(val),
                                1};
        struct wc_row_mutation rm = {wc_bytes_str(row), &m, 1};
        struct ct_err err;
        if (wc_mutate_row(t, &rm, WC_DURABILITY_SYNC_WAL, &err) != CT_OK)
            fail_msg("put %s: %s", row, err.msg);
    }
}

/* Number of rows of table `name`. */
static int count_rows(struct wc_store *s, const char *name)
{
    struct wc_table *t = fixture_table_open(s, name);
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_scanner *sc;
    struct ct_err err;
    if (wc_scanner_open(t, &o, &sc, &err) != CT_OK)
        fail_msg("scan: %s", err.msg);
    int n = 0;
    struct wc_row r;
    int rc;
    while ((rc = wc_scanner_next(sc, &r, &err)) == CT_OK)
        n++;
    if (rc != CT_NOTFOUND)
        fail_msg("scan: %s", err.msg);
    wc_scanner_close(sc);
    wc_table_close(t);
    return n;
}

/* Table `name` with family "f", compactions off (so the block files stay as flushed). */
static void create_table(struct wc_store *s, const char *name)
{
    struct wc_family_desc fd;
    wc_family_desc_init(&fd, "f");
    struct wc_table_desc d;
    wc_table_desc_init(&d, name);
    d.families = &fd;
    d.nfamilies = 1;
    d.compaction_enabled = false;
    struct ct_err err;
    if (wc_table_create(s, &d, NULL, 0, &err) != CT_OK)
        fail_msg("create %s: %s", name, err.msg);
}

/* A store with table "t" and three block files of 300, 600 and 100 rows (the second the
 * largest), closed. */
static char *make_store(void)
{
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir);
    create_table(s, "t");
    struct wc_table *t = fixture_table_open(s, "t");
    const char *tags[] = {"a", "b", "c"};
    const int n[] = {300, 600, 100};
    struct ct_err err;
    for (int i = 0; i < 3; i++) {
        put_rows(t, tags[i], n[i]);
        if (wc_table_flush(s, "t", &err) != CT_OK)
            fail_msg("flush: %s", err.msg);
    }
    wc_table_close(t);
    wc_close(s);
    return dir;
}

/* "name size|name size|..." of every file under dir (recursively, sorted), the directory's
 * whole state as far as these tests care, plus a checksum of the contents. */
static void listing(const char *dir, char *out, size_t cap)
{
    char cmd[4300];
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && find . -type f ! -name LOCK | sort | while read f; do "
             "printf '%%s %%s|' \"$f\" \"$(cksum < \"$f\")\"; done",
             dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    pclose(p);
}

/* Path of the largest file under <dir>/sub into path. */
static void largest(const char *dir, const char *sub, char *path, size_t cap)
{
    char d[4200];
    snprintf(d, sizeof(d), "%s/%s", dir, sub);
    DIR *dd = opendir(d);
    assert_non_null(dd);
    struct dirent *de;
    off_t best = -1;
    while ((de = readdir(dd))) {
        if (de->d_name[0] == '.')
            continue;
        char p[4500];
        snprintf(p, sizeof(p), "%s/%s", d, de->d_name);
        struct stat st;
        assert_int_equal(stat(p, &st), 0);
        if (st.st_size > best) {
            best = st.st_size;
            snprintf(path, cap, "%s", p);
        }
    }
    closedir(dd);
    assert_true(best >= 0);
}

/* The open of dir fails with CT_ECORRUPT and a message containing `needle`, and leaves every
 * file as it was. */
static void assert_refused(const char *dir, const char *needle)
{
    char before[16384], after[16384];
    listing(dir, before, sizeof(before));
    struct wc_options o = store_opts(dir);
    struct wc_store *s = NULL;
    struct ct_err err = {0};
    int rc = wc_open(&o, &s, &err);
    if (rc == CT_OK)
        fail_msg("the store opened (expected a refusal naming %s)", needle);
    assert_null(s);
    assert_int_equal(rc, CT_ECORRUPT);
    if (!strstr(err.msg, needle))
        fail_msg("message '%s' does not name %s", err.msg, needle);
    listing(dir, after, sizeof(after));
    assert_string_equal(before, after);
    /* and again: a refused open is not a step towards a later successful one */
    assert_int_equal(wc_open(&o, &s, &err), CT_ECORRUPT);
}

/* The exact reproducer: the largest block file of a stopped store removed. */
static void test_missing_block_file_refuses_open(void **state)
{
    (void)state;
    char *dir = make_store();
    char victim[4600];
    largest(dir, "sst", victim, sizeof(victim));
    assert_int_equal(unlink(victim), 0);
    assert_refused(dir, strrchr(victim, '/') + 1);
    /* a read-only open (the tools) refuses the same way */
    struct wc_options o = store_opts(dir);
    o.read_only = true;
    struct wc_store *s = NULL;
    struct ct_err err;
    assert_int_equal(wc_open(&o, &s, &err), CT_ECORRUPT);
    assert_non_null(strstr(err.msg, strrchr(victim, '/') + 1));
    ctest_rmdir(dir);
}

static void test_missing_catalog_refuses_open(void **state)
{
    (void)state;
    char *dir = make_store();
    char cat[4200];
    snprintf(cat, sizeof(cat), "%s/CATALOG", dir);
    assert_int_equal(unlink(cat), 0);
    assert_refused(dir, "CATALOG");
    ctest_rmdir(dir);
}

/* Only the log is left (a crash before the first flush, then the catalog lost). */
static void test_missing_catalog_with_only_a_log_refuses_open(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir);
    fixture_table_create(s, "t", (const char *const[]){"f"}, 1, 1);
    wc_close(s);
    char p[4200];
    snprintf(p, sizeof(p), "%s/wal", dir);
    mkdir(p, 0700);
    snprintf(p, sizeof(p), "%s/wal/wal-00000000000000000007.log", dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("not empty", f);
    fclose(f);
    snprintf(p, sizeof(p), "%s/CATALOG", dir);
    assert_int_equal(unlink(p), 0);
    assert_refused(dir, "wal-00000000000000000007.log");
    ctest_rmdir(dir);
}

/* Files the catalog does not list are moved to quarantine/, never deleted; the store opens. */
static void test_unlisted_files_go_to_quarantine(void **state)
{
    (void)state;
    char *dir = make_store();
    char src[4600], p[4600], q[4600];
    largest(dir, "sst", src, sizeof(src));
    snprintf(p, sizeof(p), "%s/sst/00000000000000ff.sst", dir);
    char cmd[9400];
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", src, p);
    assert_int_equal(system(cmd), 0);
    snprintf(p, sizeof(p), "%s/sst/0000000000000100.sst.tmp", dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("half", f);
    fclose(f);
    for (int round = 0; round < 2; round++) { /* twice: a second orphan of the same name */
        if (round) {
            f = fopen(p, "w");
            assert_non_null(f);
            fputs("again", f);
            fclose(f);
        }
        struct wc_store *s = open_store(dir);
        assert_int_equal(count_rows(s, "t"), 1000);
        wc_close(s);
    }
    snprintf(q, sizeof(q), "%s/quarantine/00000000000000ff.sst", dir);
    assert_int_equal(access(q, F_OK), 0);
    snprintf(q, sizeof(q), "%s/quarantine/0000000000000100.sst.tmp", dir);
    assert_int_equal(access(q, F_OK), 0);
    snprintf(q, sizeof(q), "%s/quarantine/0000000000000100.sst.tmp.1", dir);
    assert_int_equal(access(q, F_OK), 0); /* the first one was not replaced */
    assert_int_equal(access(p, F_OK), -1);
    ctest_rmdir(dir);
}

/* A healthy store: an open and a close touch no block file, and nothing is quarantined. */
static void test_healthy_store_is_left_alone(void **state)
{
    (void)state;
    char *dir = make_store();
    char before[16384], after[16384];
    listing(dir, before, sizeof(before));
    for (int i = 0; i < 3; i++) {
        struct wc_store *s = open_store(dir);
        assert_int_equal(count_rows(s, "t"), 1000);
        wc_close(s);
    }
    listing(dir, after, sizeof(after));
    /* the catalog is rewritten by nobody when nothing changed; the block files are the same */
    assert_string_equal(before, after);
    char q[4200];
    snprintf(q, sizeof(q), "%s/quarantine", dir);
    assert_int_equal(access(q, F_OK), -1);
    ctest_rmdir(dir);
}

/* A flush that fails half-way removes its own temporary file (written by this process) and
 * nothing else; the data stays in the memstore and the next flush writes it. */
static void test_own_half_written_file_is_removed(void **state)
{
    (void)state;
    char *dir = make_store();
    struct wc_store *s = open_store(dir);
    struct wc_table *t = fixture_table_open(s, "t");
    put_rows(t, "d", 200);
    struct eio_fault f = {
        .op = EIO_OP_WRITE, .nth = 1, .errnum = ENOSPC, .repeat = true, .path_substr = ".sst.tmp"};
    eio_fault_set(&f);
    struct ct_err err;
    assert_true(wc_table_flush(s, "t", &err) < 0);
    eio_fault_clear();
    char cmd[4400], out[256] = "";
    snprintf(cmd, sizeof(cmd), "ls '%s/sst' | grep -c tmp", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    if (!fgets(out, sizeof(out), p))
        out[0] = 0;
    pclose(p);
    assert_int_equal(atoi(out), 0);
    wc_table_close(t);
    wc_close(s);
    s = open_store(dir);
    assert_int_equal(count_rows(s, "t"), 1200);
    wc_close(s);
    char q[4200];
    snprintf(q, sizeof(q), "%s/quarantine", dir);
    if (access(q, F_OK) == 0) {
        char c[4300];
        snprintf(c, sizeof(c), "ls -la %s", q);
        if (system(c) != 0) { /* diagnostics only */
        }
    }
    assert_int_equal(access(q, F_OK), -1);
    ctest_rmdir(dir);
}

/* Two block files swapped (each a valid block file, just not the one the catalog lists). */
static void test_swapped_block_files_refuse_open(void **state)
{
    (void)state;
    char *dir = make_store();
    char a[4300], b[4300], tmp[4300];
    snprintf(a, sizeof(a), "%s/sst/0000000000000001.sst", dir);
    snprintf(b, sizeof(b), "%s/sst/0000000000000002.sst", dir);
    snprintf(tmp, sizeof(tmp), "%s/sst/swap", dir);
    assert_int_equal(rename(a, tmp), 0);
    assert_int_equal(rename(b, a), 0);
    assert_int_equal(rename(tmp, b), 0);
    assert_refused(dir, "0000000000000001.sst is not the file the catalog lists");
    assert_refused(dir, "(2 block files in all)"); /* both are named (log_fn), counted here */
    ctest_rmdir(dir);
}

/* A child writes ~3 log segments of unflushed rows to table "t", flushes table "u" (so the
 * catalog is written while the log holds them), writes more and dies without closing. */
static char *make_crashed_store(void)
{
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir);
    fixture_table_create(s, "t", (const char *const[]){"f"}, 1, 1);
    fixture_table_create(s, "u", (const char *const[]){"f"}, 1, 1);
    wc_close(s);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        s = open_store(dir);
        struct wc_table *t = fixture_table_open(s, "t");
        struct wc_table *u = fixture_table_open(s, "u");
        put_rows(t, "a", 1500);
        put_rows(u, "a", 10);
        struct ct_err err;
        if (wc_table_flush(s, "u", &err) != CT_OK)
            _exit(3);
        put_rows(t, "b", 100);
        _exit(0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    return dir;
}

static int count_segments(const char *dir)
{
    char d[4200];
    snprintf(d, sizeof(d), "%s/wal", dir);
    DIR *dd = opendir(d);
    assert_non_null(dd);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(dd)))
        n += strncmp(de->d_name, "wal-", 4) == 0;
    closedir(dd);
    return n;
}

static void test_crashed_store_replays_everything(void **state)
{
    (void)state;
    char *dir = make_crashed_store();
    assert_true(count_segments(dir) >= 3);
    struct wc_store *s = open_store(dir);
    assert_int_equal(count_rows(s, "t"), 1600);
    assert_int_equal(count_rows(s, "u"), 10);
    wc_close(s);
    s = open_store(dir); /* and the next open too (the log was released at close) */
    assert_int_equal(count_rows(s, "t"), 1600);
    wc_close(s);
    ctest_rmdir(dir);
}

/* A read-only open (the tools) of a store whose TSD died sees the log's rows too, and changes
 * nothing; while it is open a writer is refused (and the other way round). */
static void test_read_only_open_replays_the_log_and_changes_nothing(void **state)
{
    (void)state;
    char *dir = make_crashed_store();
    char before[16384], after[16384];
    listing(dir, before, sizeof(before));
    struct wc_options o = store_opts(dir);
    o.read_only = true;
    struct wc_store *s = fixture_store_open(&o);
    assert_int_equal(count_rows(s, "t"), 1600);
    struct wc_options w = store_opts(dir);
    struct wc_store *ws = NULL;
    struct ct_err err;
    assert_int_equal(wc_open(&w, &ws, &err), CT_EBUSY);
    wc_close(s);
    listing(dir, after, sizeof(after));
    assert_string_equal(before, after);
    ws = open_store(dir);
    assert_int_equal(wc_open(&o, &s, &err), CT_EBUSY);
    assert_non_null(strstr(err.msg, "in use by another process"));
    wc_close(ws);
    ctest_rmdir(dir);
}

static void test_deleted_log_segment_refuses_open(void **state)
{
    (void)state;
    /* the oldest, one in the middle, the newest (all created before the last catalog write,
     * which accounts for them; segments created after it are covered only by the gap check) */
    for (int which = 0; which < 3; which++) {
        char *dir = make_crashed_store();
        int n = count_segments(dir);
        assert_true(n >= 3);
        char p[4300];
        int num = which == 0 ? 1 : which == 1 ? 2 : n;
        snprintf(p, sizeof(p), "%s/wal/wal-%020d.log", dir, num);
        assert_int_equal(unlink(p), 0);
        assert_refused(dir, strrchr(p, '/') + 1);
        ctest_rmdir(dir);
    }
}

static void test_emptied_log_refuses_open(void **state)
{
    (void)state;
    char *dir = make_crashed_store();
    char cmd[4300];
    snprintf(cmd, sizeof(cmd), "rm -f '%s'/wal/*", dir);
    assert_int_equal(system(cmd), 0);
    assert_refused(dir, "wal/ is empty");
    /* quarantine_damaged (ctsdb fsck --fix) accepts the loss, keeps every block file's cells,
     * and the store opens normally afterwards */
    struct wc_options o = store_opts(dir);
    o.quarantine_damaged = true;
    struct wc_store *s = fixture_store_open(&o);
    assert_int_equal(count_rows(s, "u"), 10);
    assert_int_equal(count_rows(s, "t"), 0);
    wc_close(s);
    s = open_store(dir);
    assert_int_equal(count_rows(s, "u"), 10);
    wc_close(s);
    ctest_rmdir(dir);
}

static uint64_t rd_var(const uint8_t **p, const uint8_t *end)
{
    uint64_t v = 0;
    size_t k = coding_get_varint64(*p, end, &v);
    assert_true(k > 0);
    *p += k;
    return v;
}

/* A TSD that never flushed: its catalog was last written before the log's first segment
 * existed, but the workers record new segments within about a second, so an emptied wal/ is
 * still caught. */
static void test_emptied_log_without_a_flush_refuses_open(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir);
    create_table(s, "t");
    wc_close(s);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        s = open_store(dir);
        struct wc_table *t = fixture_table_open(s, "t");
        put_rows(t, "a", 50);
        usleep(2500 * 1000);
        _exit(0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    char cmd[4300];
    snprintf(cmd, sizeof(cmd), "rm -f '%s'/wal/*", dir);
    assert_int_equal(system(cmd), 0);
    assert_refused(dir, "wal/ is empty");
    ctest_rmdir(dir);
}

/* Rewrites <dir>/CATALOG (version 2) as version 1: no log accounting, no file identities. */
static void downgrade_catalog(const char *dir)
{
    char path[4300];
    snprintf(path, sizeof(path), "%s/CATALOG", dir);
    uint8_t *d;
    size_t len;
    struct ct_err err;
    assert_int_equal(eio_read_file(path, &d, &len, &err), CT_OK);
    assert_int_equal(d[8], 2);
    const uint8_t *p = d + 17, *end = d + len - 4;
    uint8_t *o = malloc(len), *w = o + 17;
    assert_non_null(o);
    memcpy(o, d, 17);
    o[8] = 1;
#define VAR()     (v = rd_var(&p, end))
#define COPYVAR() (w += coding_put_varint64(w, VAR()))
#define COPYSTR()                                                                                  \
    do {                                                                                           \
        COPYVAR();                                                                                 \
        memcpy(w, p, v);                                                                           \
        w += v;                                                                                    \
        p += v;                                                                                    \
    } while (0)
#define COPYN(n)                                                                                   \
    do {                                                                                           \
        memcpy(w, p, n);                                                                           \
        w += n;                                                                                    \
        p += n;                                                                                    \
    } while (0)
    uint64_t v = 0;
    for (int i = 0; i < 4; i++)
        COPYVAR();
    (void)rd_var(&p, end); /* wal_floor */
    (void)rd_var(&p, end); /* wal_next */
    COPYVAR();
    for (uint64_t nns = v, i = 0; i < nns; i++)
        COPYSTR();
    COPYVAR();
    for (uint64_t nt = v, i = 0; i < nt; i++) {
        COPYVAR();
        COPYSTR();
        COPYN(1);
        COPYVAR();
        COPYVAR();
        COPYN(3);
        COPYVAR();
        uint64_t nf = v;
        for (uint64_t f = 0; f < nf; f++) {
            COPYSTR();
            COPYVAR();
            COPYVAR();
            COPYVAR();
            COPYN(2);
            COPYVAR();
            COPYN(4);
        }
        COPYVAR();
        for (uint64_t nr = v, r = 0; r < nr; r++) {
            COPYVAR();
            COPYSTR();
            COPYSTR();
            for (uint64_t f = 0; f < nf; f++) {
                COPYVAR();
                COPYVAR();
                for (uint64_t nfl = v, k = 0; k < nfl; k++) {
                    COPYVAR();
                    (void)rd_var(&p, end); /* size */
                    (void)rd_var(&p, end); /* identity */
                }
            }
        }
    }
#undef VAR
#undef COPYVAR
#undef COPYSTR
#undef COPYN
    assert_true(p == end);
    size_t plen = (size_t)(w - o - 17);
    coding_put_be64(o + 9, plen);
    coding_put_be32(w, crc32c_mask(crc32c_value(o + 17, plen)));
    w += 4;
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(o, 1, (size_t)(w - o), f), (size_t)(w - o));
    fclose(f);
    free(o);
    free(d);
}

/* A store written before this version (catalog format 1) opens, keeps every cell, and is
 * rewritten as format 2 (after which a swapped file is detected). */
static void test_version_1_catalog_is_upgraded(void **state)
{
    (void)state;
    char *dir = make_store();
    downgrade_catalog(dir);
    char path[4300];
    snprintf(path, sizeof(path), "%s/CATALOG", dir);
    struct wc_options o = store_opts(dir);
    o.read_only = true; /* a read-only open reads it as it is */
    struct wc_store *s = fixture_store_open(&o);
    assert_int_equal(count_rows(s, "t"), 1000);
    wc_close(s);
    uint8_t *d;
    size_t len;
    struct ct_err err;
    assert_int_equal(eio_read_file(path, &d, &len, &err), CT_OK);
    assert_int_equal(d[8], 1);
    free(d);
    s = open_store(dir);
    assert_int_equal(count_rows(s, "t"), 1000);
    wc_close(s);
    assert_int_equal(eio_read_file(path, &d, &len, &err), CT_OK);
    assert_int_equal(d[8], 2);
    free(d);
    char a[4300], b[4300], tmp[4300];
    snprintf(a, sizeof(a), "%s/sst/0000000000000001.sst", dir);
    snprintf(b, sizeof(b), "%s/sst/0000000000000003.sst", dir);
    snprintf(tmp, sizeof(tmp), "%s/sst/swap", dir);
    assert_int_equal(rename(a, tmp), 0);
    assert_int_equal(rename(b, a), 0);
    assert_int_equal(rename(tmp, b), 0);
    assert_refused(dir, "not the file the catalog lists");
    ctest_rmdir(dir);
}

/* quarantine_damaged (what `ctsdb fsck --fix` opens with): a swapped pair goes to quarantine/,
 * the third file's cells stay. */
static void test_quarantine_keeps_the_readable_files(void **state)
{
    (void)state;
    char *dir = make_store();
    char a[4300], b[4300], tmp[4300];
    snprintf(a, sizeof(a), "%s/sst/0000000000000001.sst", dir);
    snprintf(b, sizeof(b), "%s/sst/0000000000000002.sst", dir);
    snprintf(tmp, sizeof(tmp), "%s/sst/swap", dir);
    assert_int_equal(rename(a, tmp), 0);
    assert_int_equal(rename(b, a), 0);
    assert_int_equal(rename(tmp, b), 0);
    struct wc_options o = store_opts(dir);
    o.quarantine_damaged = true;
    struct wc_store *s = fixture_store_open(&o);
    assert_int_equal(count_rows(s, "t"), 100); /* file 3: rows c-* */
    wc_close(s);
    snprintf(a, sizeof(a), "%s/quarantine/0000000000000001.sst", dir);
    assert_int_equal(access(a, F_OK), 0);
    snprintf(b, sizeof(b), "%s/quarantine/0000000000000002.sst", dir);
    assert_int_equal(access(b, F_OK), 0);
    s = open_store(dir);
    assert_int_equal(count_rows(s, "t"), 100);
    wc_close(s);
    ctest_rmdir(dir);
}

/* A compaction meeting a damaged data block sets that file aside (quarantine/), keeps every
 * other file's cells, and the store goes on taking writes; the store opens again afterwards. */
static void test_compaction_quarantines_a_damaged_file(void **state)
{
    (void)state;
    char *dir = make_store();
    char victim[4300];
    snprintf(victim, sizeof(victim), "%s/sst/0000000000000002.sst", dir); /* 600 rows b-* */
    FILE *f = fopen(victim, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, 200, SEEK_SET), 0);
    int c = fgetc(f);
    assert_int_equal(fseek(f, 200, SEEK_SET), 0);
    fputc(c ^ 0x5a, f);
    fclose(f);
    struct wc_store *s = open_store(dir); /* identity is footer + meta: the open succeeds */
    struct ct_err err;
    assert_int_equal(wc_table_compact(s, "t", NULL, true, &err), CT_ECORRUPT);
    assert_non_null(strstr(err.msg, "0000000000000002.sst"));
    assert_int_equal(wc_background_error(s, &err), CT_OK);
    struct wc_table *t = fixture_table_open(s, "t");
    put_rows(t, "d", 10);
    wc_table_close(t);
    assert_int_equal(count_rows(s, "t"), 300 + 100 + 10);
    struct wc_store_stats st = fixture_store_stats(s);
    assert_int_equal(st.quarantined_files, 1);
    assert_false(st.bg_error_active);
    /* compactions go on without it */
    assert_int_equal(wc_table_compact(s, "t", NULL, true, &err), CT_OK);
    wc_close(s);
    char q[4300];
    snprintf(q, sizeof(q), "%s/quarantine/0000000000000002.sst", dir);
    assert_int_equal(access(q, F_OK), 0);
    assert_int_equal(access(victim, F_OK), -1);
    s = open_store(dir);
    assert_int_equal(count_rows(s, "t"), 410);
    wc_close(s);
    ctest_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_block_file_refuses_open),
        cmocka_unit_test(test_missing_catalog_refuses_open),
        cmocka_unit_test(test_missing_catalog_with_only_a_log_refuses_open),
        cmocka_unit_test(test_unlisted_files_go_to_quarantine),
        cmocka_unit_test(test_healthy_store_is_left_alone),
        cmocka_unit_test(test_own_half_written_file_is_removed),
        cmocka_unit_test(test_swapped_block_files_refuse_open),
        cmocka_unit_test(test_crashed_store_replays_everything),
        cmocka_unit_test(test_read_only_open_replays_the_log_and_changes_nothing),
        cmocka_unit_test(test_deleted_log_segment_refuses_open),
        cmocka_unit_test(test_emptied_log_refuses_open),
        cmocka_unit_test(test_emptied_log_without_a_flush_refuses_open),
        cmocka_unit_test(test_version_1_catalog_is_upgraded),
        cmocka_unit_test(test_quarantine_keeps_the_readable_files),
        cmocka_unit_test(test_compaction_quarantines_a_damaged_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
