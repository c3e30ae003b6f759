/* test_shell_exec.c - the shell's commands against a real embedded store in a temporary
 * directory, through shell_run_text() with in-memory streams: output of the main commands,
 * errors that change nothing, and a store reopened by a second shell seeing the first one's
 * writes. (The integration tests run the same commands through bin/ctsdb; this runs them under
 * the sanitizers too.) */
#include <stdlib.h>
#include <string.h>

#include "storage/clock.h"
#include "tests/lib/ctest.h"
#include "tools/shell.h"

struct exec_run {
    char *out, *err;
    int status;
};

/* Runs a script on a fresh shell over `dir`; Took lines are removed from out. */
static void exec_script(const char *dir, const char *script, struct exec_run *r)
{
    char *obuf = NULL, *ebuf = NULL;
    size_t olen = 0, elen = 0;
    FILE *out = open_memstream(&obuf, &olen), *errf = open_memstream(&ebuf, &elen);
    assert_non_null(out);
    assert_non_null(errf);
    struct shell_options o = {0};
    o.backend = WC_BACKEND_EMBEDDED;
    o.data_dir = dir;
    o.out = out;
    o.err = errf;
    struct shell *sh;
    struct ct_err err = {0};
    assert_int_equal(shell_new(&o, &sh, &err), CT_OK);
    r->status = shell_run_text(sh, script, strlen(script));
    shell_free(sh);
    fclose(out);
    fclose(errf);
    /* drop "Took N.NNNN seconds" lines */
    char *w = obuf;
    for (char *p = obuf; *p;) {
        char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p + 1) : strlen(p);
        if (strncmp(p, "Took ", 5) != 0) {
            memmove(w, p, n);
            w += n;
        }
        p += n;
    }
    *w = 0;
    r->out = obuf;
    r->err = ebuf;
}

static void exec_free(struct exec_run *r)
{
    free(r->out);
    free(r->err);
}

static int exec_setup(void **state)
{
    setenv("CTSDB_NOW_MS", "1700000000000", 1);
    clock_reload();
    *state = ctest_mkdtemp();
    return 0;
}

static int exec_teardown(void **state)
{
    ctest_rmdir(*state);
    unsetenv("CTSDB_NOW_MS");
    clock_reload();
    return 0;
}

static void test_create_put_get_scan_print_hbase_tables(void **state)
{
    struct exec_run r;
    exec_script(*state,
                "create 't', {NAME => 'f', VERSIONS => 2}, SPLITS => ['m']\n"
                "put 't', 'a', 'f:q', 'v1', 1\n"
                "put 't', 'a', 'f:q', 'v2', 2\n"
                "put 't', \"z\\x00\", 'f:q', \"\\xff\"\n"
                "get 't', 'a', {VERSIONS => 5}\n"
                "scan 't', {REVERSED => true}\n"
                "get_splits 't'\n",
                &r);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err, "");
    assert_string_equal(r.out, "Created table t\n"
                               "COLUMN  CELL\n"
                               " f:q timestamp=2, value=v2\n"
                               " f:q timestamp=1, value=v1\n"
                               "1 row(s)\n"
                               "ROW  COLUMN+CELL\n"
                               " z\\x00 column=f:q, timestamp=1700000000000, value=\\xFF\n"
                               " a column=f:q, timestamp=2, value=v2\n"
                               "2 row(s)\n"
                               "Total number of splits = 2\n"
                               "m\n");
    exec_free(&r);
}

static void test_failed_command_changes_nothing_and_stops_the_script(void **state)
{
    struct exec_run r;
    exec_script(*state,
                "create 't', 'f'\n"
                "alter 't', {NAME => 'g'}, {NAME => 'f', MIN_VERSIONS => 3}\n"
                "put 't', 'never', 'f:q', 'x'\n",
                &r);
    assert_int_equal(r.status, 1);
    assert_string_equal(r.out, "Created table t\n");
    assert_string_equal(r.err, "ERROR: family f: MIN_VERSIONS (3) must be <= VERSIONS (1)\n");
    exec_free(&r);
    /* a second shell on the same directory: no family g, no row written */
    exec_script(*state, "describe 't'\ncount 't'\n", &r);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "COLUMN FAMILIES DESCRIPTION\n{NAME => 'f', "));
    assert_null(strstr(r.out, "NAME => 'g'"));
    assert_non_null(strstr(r.out, "1 row(s)\n0 row(s)\n"));
    exec_free(&r);
}

static void test_deletes_map_to_the_spec_markers(void **state)
{
    struct exec_run r;
    exec_script(*state,
                "create 'd', {NAME => 'f', VERSIONS => 3}\n"
                "put 'd', 'r', 'f:a', '1', 1\n"
                "put 'd', 'r', 'f:a', '2', 2\n"
                "put 'd', 'r', 'f:b', 'b', 2\n"
                "delete 'd', 'r', 'f:a'\n" /* newest version: 2 */
                "get 'd', 'r', {VERSIONS => 3}\n"
                "delete 'd', 'r', 'f', 1\n" /* family version at 1 */
                "get 'd', 'r', {VERSIONS => 3}\n"
                "deleteall 'd', 'r', 'f:b'\n" /* column, at now */
                "get 'd', 'r'\n"
                "scan 'd', {RAW => true, VERSIONS => 5}\n",
                &r);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "Created table d\n"
                               "COLUMN  CELL\n"
                               " f:a timestamp=1, value=1\n"
                               " f:b timestamp=2, value=b\n"
                               "1 row(s)\n"
                               "COLUMN  CELL\n"
                               " f:b timestamp=2, value=b\n"
                               "1 row(s)\n"
                               "COLUMN  CELL\n"
                               "0 row(s)\n"
                               "ROW  COLUMN+CELL\n"
                               " r column=f:, timestamp=1, type=DeleteFamilyVersion\n"
                               " r column=f:a, timestamp=2, type=Delete\n"
                               " r column=f:a, timestamp=2, value=2\n"
                               " r column=f:a, timestamp=1, value=1\n"
                               " r column=f:b, timestamp=1700000000000, type=DeleteColumn\n"
                               " r column=f:b, timestamp=2, value=b\n"
                               "1 row(s)\n");
    exec_free(&r);
}

static void test_counters_and_namespaces(void **state)
{
    struct exec_run r;
    exec_script(*state,
                "create_namespace 'n'\n"
                "create 'n:c', 'f'\n"
                "incr 'n:c', 'r', 'f:x', 5\n"
                "incr 'n:c', 'r', 'f:x'\n"
                "get_counter 'n:c', 'r', 'f:x'\n"
                "list_namespace_tables 'n'\n"
                "drop_namespace 'n'\n",
                &r);
    assert_int_equal(r.status, 1);
    assert_string_equal(r.out, "Created table n:c\n"
                               "COUNTER VALUE = 5\n"
                               "COUNTER VALUE = 6\n"
                               "COUNTER VALUE = 6\n"
                               "TABLE\nc\n1 row(s)\n");
    assert_string_equal(r.err, "ERROR: Only empty namespaces can be removed. Namespace n has 1 "
                               "table(s)\n");
    exec_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_put_get_scan_print_hbase_tables, exec_setup,
                                        exec_teardown),
        cmocka_unit_test_setup_teardown(test_failed_command_changes_nothing_and_stops_the_script,
                                        exec_setup, exec_teardown),
        cmocka_unit_test_setup_teardown(test_deletes_map_to_the_spec_markers, exec_setup,
                                        exec_teardown),
        cmocka_unit_test_setup_teardown(test_counters_and_namespaces, exec_setup, exec_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
