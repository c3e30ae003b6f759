/* test_fsck_uid.c - UID assignment by concurrent writer threads and what `ctsdb fsck` makes of
 * the result: threads of one service assigning the same new names waste no ids and leave no
 * reverse row behind (fsck exits 0); services racing each other (as two processes would) leave
 * no orphan either; a reverse row left by a crash after a lost race is a benign warning (exit 0,
 * --fix removes it), while a genuine inconsistency still fails fsck. Runs the real fsck command
 * on a real store in a temporary directory. Skipped without the embedded engine. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "schema/tsdb.h"
#include "schema/uid.h"
#include "tests/lib/ctest.h"
#include "tools/tool.h"

extern const struct tool_command tool_cmd_fsck;

#define RACE_THREADS 4
#define RACE_NAMES   50

struct fixture {
    char *dir;
    struct wc_store *s;
    struct tsdb *t;
};

/* Opens the store in f->dir and the tsdb tables on it (creating them the first time). */
static int open_store(struct fixture *f, const struct tsdb_config *c)
{
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = f->dir;
    struct ct_err err = {0};
    int rc = wc_open(&o, &f->s, &err);
    if (rc != CT_OK)
        return rc;
    rc = tsdb_open(f->s, c, &f->t, &err);
    if (rc != CT_OK)
        fail_msg("tsdb_open: %s", err.msg);
    return CT_OK;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->dir = ctest_mkdtemp();
    struct tsdb_config c;
    tsdb_config_init(&c);
    c.uid_cache_entries = 0; /* every lookup goes to the store: the widest race window */
    int rc = open_store(f, &c);
    if (rc == CT_EUNSUPPORTED) {
        ctest_rmdir(f->dir);
        free(f);
        *state = NULL;
        return 0;
    }
    assert_int_equal(rc, CT_OK);
    *state = f;
    return 0;
}

static void fixture_close_store(struct fixture *f)
{
    tsdb_close(f->t);
    wc_close(f->s);
    f->t = NULL;
    f->s = NULL;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    if (!f)
        return 0;
    fixture_close_store(f);
    ctest_rmdir(f->dir);
    free(f);
    return 0;
}

struct race_arg {
    struct uid *u;
    int thread;
    uint64_t ids[RACE_NAMES];
    int failures;
};

static void *race_worker(void *p)
{
    struct race_arg *a = p;
    struct ct_err err = {0};
    char name[32];
    for (int i = 0; i < RACE_NAMES; i++) {
        int n = (i + a->thread * 7) % RACE_NAMES; /* same names, different starting points */
        snprintf(name, sizeof(name), "race.m.%d", n);
        for (int k = 0; k < UID_NKINDS; k++) {
            uint64_t id;
            if (uid_get_or_create_id(a->u, (enum uid_kind)k, name, strlen(name), &id, &err) !=
                CT_OK) {
                a->failures++;
                continue;
            }
            if (k == UID_METRIC)
                a->ids[n] = id;
        }
    }
    return NULL;
}

/* Runs RACE_THREADS threads over the same RACE_NAMES new names of every kind, each thread on
 * us[i] (the same service for all, or one each). Checks every thread saw one id per name. */
static void run_race(struct uid **us, uint64_t *ids_out)
{
    pthread_t th[RACE_THREADS];
    struct race_arg *args = calloc(RACE_THREADS, sizeof(*args));
    assert_non_null(args);
    for (int i = 0; i < RACE_THREADS; i++) {
        args[i].u = us[i];
        args[i].thread = i;
        assert_int_equal(pthread_create(&th[i], NULL, race_worker, &args[i]), 0);
    }
    for (int i = 0; i < RACE_THREADS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < RACE_THREADS; i++) {
        assert_int_equal(args[i].failures, 0);
        for (int n = 0; n < RACE_NAMES; n++)
            assert_true(args[i].ids[n] == args[0].ids[n]);
    }
    memcpy(ids_out, args[0].ids, sizeof(args[0].ids));
    free(args);
}

/* Counts the reverse cells (family `name`) of kind k in tsdb-uid. */
static size_t count_reverse(struct tsdb *t, enum uid_kind k)
{
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_column col = {wc_bytes_str(UID_FAMILY_NAME), wc_bytes_str(uid_kind_qualifier(k)),
                            true};
    o.columns = &col;
    o.ncolumns = 1;
    struct ct_err err = {0};
    struct wc_scanner *sc;
    assert_int_equal(wc_scanner_open(tsdb_uid_table(t), &o, &sc, &err), CT_OK);
    struct wc_row row;
    size_t n = 0;
    int rc;
    while ((rc = wc_scanner_next(sc, &row, &err)) == CT_OK)
        n += row.ncells;
    assert_int_equal(rc, CT_NOTFOUND);
    wc_scanner_close(sc);
    return n;
}

/* Every name has one id both ways, and ids are distinct. */
static void check_consistent(struct uid *u, const uint64_t *ids)
{
    struct ct_err err = {0};
    for (int n = 0; n < RACE_NAMES; n++) {
        char want[32], got[64];
        size_t len;
        uint64_t id;
        snprintf(want, sizeof(want), "race.m.%d", n);
        assert_int_equal(uid_get_id(u, UID_METRIC, want, strlen(want), &id, &err), CT_OK);
        assert_true(id == ids[n]);
        assert_int_equal(uid_get_name(u, UID_METRIC, id, got, sizeof(got), &len, &err), CT_OK);
        assert_string_equal(got, want);
        for (int m = n + 1; m < RACE_NAMES; m++)
            assert_true(ids[n] != ids[m]);
    }
}

/* Runs `ctsdb fsck --data DIR [extra]` with stdout captured; returns its exit status and the
 * output in a new string (free it). */
static int run_fsck(const char *dir, const char *extra, char **out)
{
    char path[] = "/tmp/ctsdb-fsck-out-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    assert_true(saved >= 0);
    assert_true(dup2(fd, STDOUT_FILENO) >= 0);
    char *argv[5] = {"fsck", "--data", (char *)dir, (char *)extra, NULL};
    int argc = extra ? 4 : 3;
    int st = tool_cmd_fsck.run(argc, argv);
    fflush(stdout);
    assert_true(dup2(saved, STDOUT_FILENO) >= 0);
    close(saved);
    off_t size = lseek(fd, 0, SEEK_END);
    assert_true(size >= 0);
    char *buf = calloc(1, (size_t)size + 1);
    assert_non_null(buf);
    assert_int_equal(pread(fd, buf, (size_t)size, 0), size);
    close(fd);
    unlink(path);
    *out = buf;
    return st;
}

static void test_fsck_threads_of_one_service_waste_no_ids(void **state)
{
    struct fixture *f = *state;
    if (!f)
        skip();
    struct uid *u = tsdb_uid(f->t);
    struct uid *us[RACE_THREADS];
    for (int i = 0; i < RACE_THREADS; i++)
        us[i] = u; /* one TSD: its writer threads share the service */
    uint64_t ids[RACE_NAMES];
    run_race(us, ids);
    check_consistent(u, ids);
    struct ct_err err = {0};
    for (int k = 0; k < UID_NKINDS; k++) {
        uint64_t max;
        assert_int_equal(uid_max_id(u, (enum uid_kind)k, &max, &err), CT_OK);
        assert_int_equal(max, RACE_NAMES); /* no id drawn and lost */
        assert_int_equal(count_reverse(f->t, (enum uid_kind)k), RACE_NAMES);
    }
    fixture_close_store(f);
    char *out;
    assert_int_equal(run_fsck(f->dir, NULL, &out), 0);
    assert_non_null(strstr(out, "fsck: 0 problems found"));
    assert_null(strstr(out, "benign"));
    free(out);
}

static void test_fsck_racing_services_leave_no_orphan(void **state)
{
    struct fixture *f = *state;
    if (!f)
        skip();
    /* one service per thread, as separate processes on one Bigtable instance would have */
    struct uid_options o;
    uid_options_init(&o);
    o.cache_entries = 0;
    struct ct_err err = {0};
    struct uid *us[RACE_THREADS];
    for (int i = 0; i < RACE_THREADS; i++)
        assert_int_equal(uid_open(tsdb_uid_table(f->t), &o, &us[i], &err), CT_OK);
    uint64_t ids[RACE_NAMES];
    run_race(us, ids);
    check_consistent(us[0], ids);
    for (int k = 0; k < UID_NKINDS; k++)
        assert_int_equal(count_reverse(f->t, (enum uid_kind)k), RACE_NAMES); /* losers cleaned */
    for (int i = 0; i < RACE_THREADS; i++)
        uid_close(us[i]);
    fixture_close_store(f);
    char *out;
    assert_int_equal(run_fsck(f->dir, NULL, &out), 0);
    assert_non_null(strstr(out, "fsck: 0 problems found"));
    free(out);
}

static void put_cell(struct tsdb *t, struct wc_bytes row, const char *family, const char *qual,
                     struct wc_bytes value)
{
    struct wc_mutation m = {WC_OP_PUT, wc_bytes_str(family), wc_bytes_str(qual), value,
                            WC_TS_LATEST};
    struct wc_row_mutation rm = {row, &m, 1};
    struct ct_err err = {0};
    assert_int_equal(wc_mutate_row(tsdb_uid_table(t), &rm, WC_DURABILITY_USE_DEFAULT, &err), CT_OK);
}

static void test_fsck_race_leftover_is_benign_inconsistency_is_not(void **state)
{
    struct fixture *f = *state;
    if (!f)
        skip();
    struct uid *u = tsdb_uid(f->t);
    struct ct_err err = {0};
    uint64_t id;
    assert_int_equal(uid_get_or_create_id(u, UID_METRIC, "sys.cpu", 7, &id, &err), CT_OK);
    assert_int_equal(id, 1);
    /* what a writer that lost the race for sys.cpu with id 2 and crashed before cleaning up
     * leaves: the counter moved, a reverse row 2 -> sys.cpu, no forward row to 2 */
    int64_t v;
    uint8_t zero = 0;
    assert_int_equal(wc_increment(tsdb_uid_table(f->t), wc_bytes_of(&zero, 1),
                                  wc_bytes_str(UID_FAMILY_ID), wc_bytes_str("metrics"), 1,
                                  WC_DURABILITY_USE_DEFAULT, &v, &err),
                     CT_OK);
    assert_int_equal(v, 2);
    const uint8_t id2[3] = {0, 0, 2};
    put_cell(f->t, wc_bytes_of(id2, 3), UID_FAMILY_NAME, "metrics", wc_bytes_str("sys.cpu"));
    fixture_close_store(f);
    char *out;
    assert_int_equal(run_fsck(f->dir, NULL, &out), 0);
    assert_non_null(strstr(out, "warning: uid metrics 000002 -> 'sys.cpu' is left over from a "
                                "lost assignment race (the name maps to 000001): benign"));
    assert_non_null(strstr(out, "fsck: 0 problems found"));
    free(out);
    assert_int_equal(run_fsck(f->dir, "--fix", &out), 0);
    assert_non_null(strstr(out, "(1 removed)"));
    free(out);
    assert_int_equal(run_fsck(f->dir, NULL, &out), 0);
    assert_null(strstr(out, "benign"));
    free(out);
    /* a genuine inconsistency: a forward row whose id's reverse names another name */
    struct tsdb_config c;
    tsdb_config_init(&c);
    assert_int_equal(open_store(f, &c), CT_OK);
    const uint8_t id1[3] = {0, 0, 1};
    put_cell(f->t, wc_bytes_str("mem.used"), UID_FAMILY_ID, "metrics", wc_bytes_of(id1, 3));
    fixture_close_store(f);
    assert_int_equal(run_fsck(f->dir, NULL, &out), 1);
    assert_non_null(strstr(out, "uid metrics 'mem.used' -> 000001 but 000001 names another"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fsck_threads_of_one_service_waste_no_ids, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fsck_racing_services_leave_no_orphan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fsck_race_leftover_is_benign_inconsistency_is_not,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
