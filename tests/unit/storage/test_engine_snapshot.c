/* test_engine_snapshot.c - snapshots of the embedded engine (wc_snapshot_*): restore and clone
 * give exactly the cells of snapshot time (after later puts, deletes, flushes, compactions and a
 * reopen), a snapshot taken while a writer thread writes holds a prefix of its acknowledged
 * writes (every write acknowledged before the call, none after the return), compaction and drop
 * of the live table leave a snapshot's files alone, delete removes the snapshot and only it,
 * whole-store snapshots, and the error answers (names, duplicates, missing tables and
 * snapshots, enabled tables, read-only stores). Real stores in temporary directories. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "storage/wc.h"
#include "tests/lib/ctest.h"
#include "tests/lib/fixture.h"

#define DUMP_BYTES (1 << 20)

struct fx {
    char *dir;
    struct wc_store *s;
};

static struct wc_store *open_store(const char *dir, bool read_only)
{
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = dir;
    o.read_only = read_only;
    o.major_compaction_period_ms = 0;
    return fixture_store_open(&o);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->dir = ctest_mkdtemp();
    f->s = open_store(f->dir, false);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    wc_close(f->s);
    ctest_rmdir(f->dir);
    free(f);
    return 0;
}

static void put(struct wc_table *t, const char *row, const char *qual, const char *val)
{
    struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str(qual), wc_bytes_str(val),
                            WC_TS_LATEST};
    struct wc_row_mutation rm = {wc_bytes_str(row), &m, 1};
    struct ct_err err = {0};
    if (wc_mutate_row(t, &rm, WC_DURABILITY_USE_DEFAULT, &err) != CT_OK)
        fail_msg("put %s: %s", row, err.msg);
}

static void delete_row(struct wc_table *t, const char *row)
{
    struct wc_mutation m = {WC_OP_DELETE_ROW, {0}, {0}, {0}, WC_TS_LATEST};
    struct wc_row_mutation rm = {wc_bytes_str(row), &m, 1};
    struct ct_err err = {0};
    if (wc_mutate_row(t, &rm, WC_DURABILITY_USE_DEFAULT, &err) != CT_OK)
        fail_msg("delete %s: %s", row, err.msg);
}

/* Every visible cell of table `name` (3 versions) as text; a new string to free. */
static char *dump(struct wc_store *s, const char *name)
{
    struct wc_table *t = fixture_table_open(s, name);
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.max_versions = 3;
    struct wc_scanner *sc;
    struct ct_err err = {0};
    if (wc_scanner_open(t, &o, &sc, &err) != CT_OK)
        fail_msg("scan %s: %s", name, err.msg);
    char *out = calloc(1, DUMP_BYTES);
    assert_non_null(out);
    size_t len = 0;
    struct wc_row r;
    int rc;
    while ((rc = wc_scanner_next(sc, &r, &err)) == CT_OK) {
        fixture_fmt_row(out + len, DUMP_BYTES - len, &r);
        len += strlen(out + len);
        assert_true(len + 2 < DUMP_BYTES);
        out[len++] = '\n';
    }
    assert_int_equal(rc, CT_NOTFOUND);
    wc_scanner_close(sc);
    wc_table_close(t);
    return out;
}

static void create_split_table(struct wc_store *s, const char *name)
{
    struct wc_family_desc fam;
    wc_family_desc_init(&fam, "f");
    fam.versions = 3;
    struct wc_table_desc d;
    wc_table_desc_init(&d, name);
    d.families = &fam;
    d.nfamilies = 1;
    d.compaction_enabled = true;
    struct wc_bytes split = wc_bytes_str("m");
    struct ct_err err = {0};
    if (wc_table_create(s, &d, &split, 1, &err) != CT_OK)
        fail_msg("create %s: %s", name, err.msg);
}

static void check(int rc, const struct ct_err *err, const char *what)
{
    if (rc != CT_OK)
        fail_msg("%s: %s", what, err->msg);
}

/* Rows in two regions, some in block files and some only in memstores. */
static void write_history(struct wc_store *s, const char *name)
{
    struct wc_table *t = fixture_table_open(s, name);
    char row[16], val[16];
    struct ct_err err = {0};
    for (int i = 0; i < 40; i++) {
        snprintf(row, sizeof(row), "%c%02d", 'a' + i % 26, i);
        snprintf(val, sizeof(val), "v%d", i);
        put(t, row, "q", val);
        if (i == 19)
            check(wc_table_flush(s, name, &err), &err, "flush");
    }
    put(t, "b01", "q", "second-version");
    wc_table_close(t);
}

static int count_snapshots(void *arg, const struct wc_snapshot_info *info)
{
    (void)info;
    (*(int *)arg)++;
    return 0;
}

static void test_snapshot_restore_gives_snapshot_time_cells(void **state)
{
    struct fx *f = *state;
    struct ct_err err = {0};
    create_split_table(f->s, "t");
    write_history(f->s, "t");
    char *before = dump(f->s, "t");
    check(wc_snapshot_create(f->s, "s1", "t", &err), &err, "snapshot");
    /* later puts, deletes, a flush and a major compaction (which replaces every file) */
    struct wc_table *t = fixture_table_open(f->s, "t");
    put(t, "zz", "q", "after");
    put(t, "a00", "q", "changed");
    delete_row(t, "c02");
    check(wc_table_flush(f->s, "t", &err), &err, "flush");
    check(wc_table_compact(f->s, "t", NULL, true, &err), &err, "compact");
    put(t, "n99", "q", "memstore-only");
    wc_table_close(t);
    char *changed = dump(f->s, "t");
    assert_string_not_equal(before, changed);
    /* restore needs a disabled table, as in HBase */
    assert_int_equal(wc_snapshot_restore(f->s, "s1", &err), CT_EBUSY);
    assert_non_null(strstr(err.msg, "Disable it first"));
    char *still = dump(f->s, "t");
    assert_string_equal(changed, still);
    check(wc_table_disable(f->s, "t", &err), &err, "disable");
    check(wc_snapshot_restore(f->s, "s1", &err), &err, "restore");
    struct wc_table_desc *d;
    check(wc_table_describe(f->s, "t", &d, &err), &err, "describe");
    assert_false(d->enabled); /* left disabled */
    assert_int_equal(d->families[0].versions, 3);
    wc_table_desc_free(d);
    check(wc_table_enable(f->s, "t", &err), &err, "enable");
    char *after = dump(f->s, "t");
    assert_string_equal(before, after);
    struct wc_region_info *ri;
    size_t nr;
    check(wc_table_regions(f->s, "t", &ri, &nr, &err), &err, "regions");
    assert_int_equal(nr, 2);
    wc_region_info_free(ri, nr);
    /* the log still holds the later writes: a reopen must not replay them into the table */
    wc_close(f->s);
    f->s = open_store(f->dir, false);
    char *reopened = dump(f->s, "t");
    assert_string_equal(before, reopened);
    /* and the restored table takes writes, flushes and compactions like any other */
    t = fixture_table_open(f->s, "t");
    put(t, "new", "q", "x");
    wc_table_close(t);
    check(wc_table_flush(f->s, "t", &err), &err, "flush");
    check(wc_table_compact(f->s, "t", NULL, true, &err), &err, "compact");
    char *more = dump(f->s, "t");
    assert_non_null(strstr(more, "new|f:q"));
    free(before);
    free(changed);
    free(still);
    free(after);
    free(reopened);
    free(more);
}

/* A child restores and dies without closing the store (nothing flushed at close): the log still
 * holds the writes made between the snapshot and the restore, and the reopen must not replay
 * them into the restored table, while a write made after the restore is replayed. */
static void test_snapshot_restore_survives_a_crash_without_replaying_older_writes(void **state)
{
    struct fx *f = *state;
    struct ct_err err = {0};
    create_split_table(f->s, "t");
    write_history(f->s, "t");
    char *before = dump(f->s, "t");
    create_split_table(f->s, "other");
    wc_close(f->s);
    f->s = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct wc_store *s = open_store(f->dir, false);
        struct wc_table *t, *o;
        /* an unflushed write to another table keeps the log from being released */
        struct wc_mutation om = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("q"), wc_bytes_str("x"),
                                 WC_TS_LATEST};
        struct wc_row_mutation orm = {wc_bytes_str("keep"), &om, 1};
        if (wc_table_open(s, "other", &o, &err) != CT_OK ||
            wc_mutate_row(o, &orm, WC_DURABILITY_SYNC_WAL, &err) != CT_OK)
            _exit(2);
        if (wc_snapshot_create(s, "s1", "t", &err) != CT_OK ||
            wc_table_open(s, "t", &t, &err) != CT_OK)
            _exit(3);
        struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("q"),
                                wc_bytes_str("between"), WC_TS_LATEST};
        struct wc_row_mutation rm = {wc_bytes_str("between"), &m, 1};
        if (wc_mutate_row(t, &rm, WC_DURABILITY_SYNC_WAL, &err) != CT_OK)
            _exit(4);
        if (wc_table_disable(s, "t", &err) != CT_OK ||
            wc_snapshot_restore(s, "s1", &err) != CT_OK || wc_table_enable(s, "t", &err) != CT_OK)
            _exit(5);
        m.value = wc_bytes_str("post");
        rm.row = wc_bytes_str("post");
        if (wc_mutate_row(t, &rm, WC_DURABILITY_SYNC_WAL, &err) != CT_OK)
            _exit(6);
        _exit(0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    f->s = open_store(f->dir, false);
    char *after = dump(f->s, "t");
    char *other = dump(f->s, "other");
    assert_non_null(strstr(other, "keep|f:q"));
    free(other);
    assert_null(strstr(after, "between|"));
    const char *p = strstr(after, "post|f:q");
    assert_non_null(p);
    /* everything else is the snapshot's */
    char *expect = calloc(1, DUMP_BYTES);
    assert_non_null(expect);
    const char *bol = p;
    while (bol > after && bol[-1] != '\n')
        bol--;
    snprintf(expect, DUMP_BYTES, "%.*s%s", (int)(bol - after), after, strchr(p, '\n') + 1);
    assert_string_equal(before, expect);
    free(before);
    free(after);
    free(expect);
}

static void test_snapshot_clone_is_independent_of_its_source(void **state)
{
    struct fx *f = *state;
    struct ct_err err = {0};
    create_split_table(f->s, "t");
    write_history(f->s, "t");
    char *before = dump(f->s, "t");
    check(wc_snapshot_create(f->s, "s1", "default:t", &err), &err, "snapshot");
    check(wc_snapshot_clone(f->s, "s1", "c", &err), &err, "clone");
    char *clone = dump(f->s, "c");
    assert_string_equal(before, clone);
    /* cloning onto an existing table is refused */
    assert_int_equal(wc_snapshot_clone(f->s, "s1", "c", &err), CT_EEXIST);
    assert_int_equal(wc_snapshot_clone(f->s, "s1", "nons:c", &err), CT_NOTFOUND);
    /* writes to the clone do not reach the source, and the source's compaction, drop and the
     * snapshot's delete leave the clone's files alone */
    struct wc_table *c = fixture_table_open(f->s, "c");
    put(c, "only-in-clone", "q", "x");
    wc_table_close(c);
    char *src = dump(f->s, "t");
    assert_string_equal(before, src);
    check(wc_table_compact(f->s, "t", NULL, true, &err), &err, "compact");
    check(wc_table_disable(f->s, "t", &err), &err, "disable");
    check(wc_table_drop(f->s, "t", &err), &err, "drop");
    check(wc_snapshot_delete(f->s, "s1", &err), &err, "delete");
    wc_close(f->s);
    f->s = open_store(f->dir, false); /* orphan removal at open must keep the clone's files */
    char *clone2 = dump(f->s, "c");
    assert_non_null(strstr(clone2, "only-in-clone|f:q"));
    char *expect = calloc(1, DUMP_BYTES);
    assert_non_null(expect);
    /* the clone's cells are the snapshot's plus the one row written to it */
    const char *p = strstr(clone2, "only-in-clone|");
    const char *eol = strchr(p, '\n');
    snprintf(expect, DUMP_BYTES, "%.*s%s", (int)(p - clone2), clone2, eol + 1);
    assert_string_equal(before, expect);
    free(before);
    free(clone);
    free(src);
    free(clone2);
    free(expect);
}

static void test_snapshot_delete_removes_only_the_snapshot(void **state)
{
    struct fx *f = *state;
    struct ct_err err = {0};
    create_split_table(f->s, "t");
    write_history(f->s, "t");
    char *before = dump(f->s, "t");
    check(wc_snapshot_create(f->s, "s1", "t", &err), &err, "snapshot");
    check(wc_snapshot_create(f->s, "s2", NULL, &err), &err, "snapshot of the store");
    int n = 0;
    check(wc_snapshot_list(f->s, count_snapshots, &n, &err), &err, "list");
    assert_int_equal(n, 2);
    char path[4200];
    snprintf(path, sizeof(path), "%s/snapshots/s1", f->dir);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    check(wc_snapshot_delete(f->s, "s1", &err), &err, "delete");
    assert_int_not_equal(stat(path, &st), 0);
    n = 0;
    check(wc_snapshot_list(f->s, count_snapshots, &n, &err), &err, "list");
    assert_int_equal(n, 1);
    assert_int_equal(wc_snapshot_delete(f->s, "s1", &err), CT_NOTFOUND);
    assert_non_null(strstr(err.msg, "Snapshot 's1' doesn't exist"));
    assert_int_equal(wc_snapshot_restore(f->s, "s1", &err), CT_NOTFOUND);
    assert_int_equal(wc_snapshot_clone(f->s, "s1", "c", &err), CT_NOTFOUND);
    char *after = dump(f->s, "t");
    assert_string_equal(before, after);
    /* the store snapshot holds several tables: restorable, not clonable */
    assert_int_equal(wc_snapshot_clone(f->s, "s2", "c", &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "only a snapshot of one table can be cloned"));
    free(before);
    free(after);
}

struct snap_list {
    char names[4][WC_MAX_SNAPSHOT_NAME + 1];
    char tables[4][WC_MAX_TABLE_NAME];
    size_t ntables[4];
    int64_t created[4];
    int n;
};

static int collect(void *arg, const struct wc_snapshot_info *info)
{
    struct snap_list *l = arg;
    if (l->n < 4) {
        snprintf(l->names[l->n], sizeof(l->names[0]), "%s", info->name);
        snprintf(l->tables[l->n], sizeof(l->tables[0]), "%s", info->table);
        l->ntables[l->n] = info->ntables;
        l->created[l->n] = info->created_ms;
    }
    l->n++;
    return 0;
}

static void test_snapshot_names_and_errors(void **state)
{
    struct fx *f = *state;
    struct ct_err err = {0};
    create_split_table(f->s, "t");
    const char *bad[] = {"", ".hidden", "-x", "a b", "a/b", "é"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err.msg[0] = 0;
        assert_int_equal(wc_snapshot_create(f->s, bad[i], "t", &err), CT_EINVAL);
        assert_non_null(strstr(err.msg, "snapshot name"));
    }
    char longname[WC_MAX_SNAPSHOT_NAME + 2];
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = 0;
    assert_int_equal(wc_snapshot_create(f->s, longname, "t", &err), CT_EINVAL);
    assert_int_equal(wc_snapshot_create(f->s, "ok", "nosuch", &err), CT_NOTFOUND);
    assert_non_null(strstr(err.msg, "default:nosuch does not exist"));
    check(wc_snapshot_create(f->s, "b.snap-1_x", "t", &err), &err, "snapshot");
    assert_int_equal(wc_snapshot_create(f->s, "b.snap-1_x", "t", &err), CT_EEXIST);
    assert_non_null(strstr(err.msg, "already exists"));
    check(wc_snapshot_create(f->s, "a", NULL, &err), &err, "snapshot of the store");
    struct snap_list l = {0};
    check(wc_snapshot_list(f->s, collect, &l, &err), &err, "list");
    assert_int_equal(l.n, 2); /* the failed attempts left nothing */
    assert_string_equal(l.names[0], "a");
    assert_string_equal(l.tables[0], "");
    assert_int_equal(l.ntables[0], 1);
    assert_string_equal(l.names[1], "b.snap-1_x");
    assert_string_equal(l.tables[1], "default:t");
    assert_true(l.created[1] > 1500000000000LL);
    /* a read-only store lists but does not change snapshots */
    wc_close(f->s);
    f->s = open_store(f->dir, true);
    memset(&l, 0, sizeof(l));
    check(wc_snapshot_list(f->s, collect, &l, &err), &err, "list read-only");
    assert_int_equal(l.n, 2);
    assert_int_equal(wc_snapshot_create(f->s, "c", "t", &err), CT_EINVAL);
    assert_int_equal(wc_snapshot_delete(f->s, "a", &err), CT_EINVAL);
    assert_int_equal(wc_snapshot_restore(f->s, "a", &err), CT_EINVAL);
    /* nor compacts nor splits (estore_check_writable, as for snapshots) */
    assert_int_equal(wc_table_compact(f->s, "t", NULL, true, &err), CT_EINVAL);
    assert_string_equal(err.msg, "the store was opened read-only");
    assert_int_equal(wc_table_split(f->s, "t", NULL, &err), CT_EINVAL);
    assert_string_equal(err.msg, "the store was opened read-only");
}

/* ---- a snapshot while a writer writes ---------------------------------------------------- */

#define WRITER_ROWS 4000

struct writer {
    struct wc_table *t;
    atomic_int acked; /* rows 0..acked-1 are acknowledged */
    atomic_bool stop;
    int failures;
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    char row[16];
    struct ct_err err = {0};
    for (int i = 0; i < WRITER_ROWS && !atomic_load(&w->stop); i++) {
        /* alternate between the two regions (split at "m"), so a snapshot that were not one
         * point in time across regions would miss a write older than one it holds */
        snprintf(row, sizeof(row), "%c%06d", i % 2 ? 'z' : 'a', i);
        struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("q"), wc_bytes_str(row),
                                WC_TS_LATEST};
        struct wc_row_mutation rm = {wc_bytes_str(row), &m, 1};
        if (wc_mutate_row(w->t, &rm, WC_DURABILITY_SKIP_WAL, &err) != CT_OK) {
            w->failures++;
            break;
        }
        atomic_store(&w->acked, i + 1);
    }
    return NULL;
}

static void test_snapshot_while_a_writer_writes_holds_a_prefix(void **state)
{
    struct fx *f = *state;
    struct ct_err err = {0};
    create_split_table(f->s, "w");
    struct writer w = {.t = fixture_table_open(f->s, "w")};
    atomic_init(&w.acked, 0);
    atomic_init(&w.stop, false);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, writer_main, &w), 0);
    /* wait (bounded) until the writer is under way */
    for (int i = 0; i < 5000 && atomic_load(&w.acked) < 200; i++)
        usleep(1000);
    int lo = atomic_load(&w.acked);
    check(wc_snapshot_create(f->s, "live", "w", &err), &err, "snapshot");
    int hi = atomic_load(&w.acked);
    pthread_join(th, NULL);
    assert_int_equal(w.failures, 0);
    wc_table_close(w.t);
    check(wc_snapshot_clone(f->s, "live", "wc", &err), &err, "clone");
    /* the clone holds the rows of writes 0..k-1, no gap, lo <= k <= hi */
    struct wc_table *c = fixture_table_open(f->s, "wc");
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_scanner *sc;
    check(wc_scanner_open(c, &o, &sc, &err), &err, "scan");
    struct wc_row r;
    int k = 0, rc;
    bool *seen = calloc(WRITER_ROWS, sizeof(*seen));
    assert_non_null(seen);
    while ((rc = wc_scanner_next(sc, &r, &err)) == CT_OK) {
        char key[16] = {0};
        assert_true(r.key.len == 7);
        memcpy(key, r.key.data, r.key.len);
        int i = atoi(key + 1);
        assert_true(i >= 0 && i < WRITER_ROWS);
        assert_true(key[0] == (i % 2 ? 'z' : 'a'));
        seen[i] = true;
        k++;
    }
    assert_int_equal(rc, CT_NOTFOUND);
    wc_scanner_close(sc);
    wc_table_close(c);
    for (int i = 0; i < k; i++)
        if (!seen[i])
            fail_msg("the snapshot holds %d writes but not write %d", k, i);
    free(seen);
    assert_true(k >= lo);
    assert_true(k <= hi);
    assert_true(k > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_snapshot_restore_gives_snapshot_time_cells, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_snapshot_restore_survives_a_crash_without_replaying_older_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_clone_is_independent_of_its_source, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_delete_removes_only_the_snapshot, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_names_and_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_while_a_writer_writes_holds_a_prefix, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
