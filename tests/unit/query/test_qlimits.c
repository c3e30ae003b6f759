/* test_qlimits.c - the per-metric query limit overrides (query/qlimits.h) as OpenTSDB 2.4's
 * TestQueryLimitOverride states them: a file's overrides by regex (Matcher.find: ".*sys$" finds
 * namespace.app.sys, not namespace.app.sys.cpu), the defaults where none matches, a missing,
 * empty, malformed or bad-regex file changing nothing, and a reload that adds, changes and
 * removes overrides (timerTask*). ctsdb's additions: the first matching override of the file
 * wins, a limit of 0 is no limit, a negative limit refuses the file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/qlimits.h"
#include "tests/lib/ctest.h"

struct fx {
    char *dir;
    char path[512];
    int logs, errors;
    char last[512];
};

static void write_file(struct fx *f, const char *text)
{
    FILE *fp = fopen(f->path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    assert_int_equal(fclose(fp), 0);
}

static void on_log(void *arg, bool error, const char *msg)
{
    struct fx *f = arg;
    f->logs++;
    f->errors += error;
    snprintf(f->last, sizeof(f->last), "%s", msg);
}

static struct qlimits *open_fx(struct fx *f, const char *text)
{
    memset(f, 0, sizeof(*f));
    f->dir = ctest_mkdtemp();
    snprintf(f->path, sizeof(f->path), "%s/overrides.json", f->dir);
    if (text != NULL)
        write_file(f, text);
    struct qlimits_options o = {.file = f->path, .log = on_log, .log_arg = f};
    struct qlimits *l = NULL;
    struct ct_err err = {0};
    assert_int_equal(qlimits_new(&o, &l, &err), CT_OK);
    return l;
}

/* the limits of metric with defaults 24 points, 42 bytes (TestQueryLimitOverride's) */
static void get(struct qlimits *l, const char *metric, uint64_t *p, uint64_t *b)
{
    *p = 24;
    *b = 42;
    qlimits_get(l, metric, p, b);
}

static void test_qlimits_ctor_with_file(void **state)
{
    (void)state;
    struct fx f;
    struct qlimits *l =
        open_fx(&f, "[{\"regex\":\".*sys$\",\"byteLimit\":24,\"dataPointsLimit\":16}]");
    assert_int_equal(qlimits_count(l), 1);
    assert_int_equal(f.errors, 0);
    assert_non_null(strstr(f.last, "loaded 1 query limit override(s)"));
    uint64_t p, b;
    get(l, "namespace.app.sys", &p, &b);
    assert_int_equal(p, 16);
    assert_int_equal(b, 24);
    get(l, "namespace.app.sys.cpu", &p, &b); /* $ anchors: not found */
    assert_int_equal(p, 24);
    assert_int_equal(b, 42);
    get(l, NULL, &p, &b); /* no metric: the defaults */
    assert_int_equal(p, 24);
    get(l, "", &p, &b);
    assert_int_equal(p, 24);
    qlimits_free(l);
    ctest_rmdir(f.dir);
}

static void test_qlimits_bad_files_change_nothing(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "[{\"regex\":\".*sys$\",\"byteLim", /* ctorWithFileBadJSON */
        "[{\"regex\":\".*sy(notclosed\",\"byteLimit\":24,\"dataPointsLimit\":16}]", /* BadRegex */
        "{\"regex\":\"x\"}",                          /* not an array */
        "[{\"byteLimit\":24}]",                       /* no regex */
        "[{\"regex\":\"x\",\"dataPointsLimit\":-1}]", /* negative */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct fx f;
        struct qlimits *l = open_fx(&f, bad[i]);
        assert_int_equal(qlimits_count(l), 0);
        assert_int_equal(f.errors, 1);
        uint64_t p, b;
        get(l, "namespace.app.sys", &p, &b);
        assert_int_equal(p, 24);
        /* after a good read, a bad one keeps what was loaded */
        write_file(&f, "[{\"regex\":\"sys\",\"dataPointsLimit\":7}]");
        struct ct_err err = {0};
        assert_int_equal(qlimits_reload(l, &err), CT_OK);
        write_file(&f, bad[i]);
        assert_int_equal(qlimits_reload(l, &err), CT_EINVAL);
        assert_int_equal(qlimits_count(l), 1);
        get(l, "namespace.app.sys", &p, &b);
        assert_int_equal(p, 7);
        assert_int_equal(b, 0); /* an absent limit is 0: no limit */
        qlimits_free(l);
        ctest_rmdir(f.dir);
    }
}

static void test_qlimits_missing_or_empty_file(void **state)
{
    (void)state;
    struct fx f;
    struct qlimits *l = open_fx(&f, NULL); /* ctorFileDoesntExistException */
    assert_int_equal(qlimits_count(l), 0);
    assert_int_equal(f.errors, 1);
    assert_non_null(strstr(f.last, "overrides.json"));
    write_file(&f, "[{\"regex\":\"a\",\"dataPointsLimit\":1}]");
    struct ct_err err = {0};
    assert_int_equal(qlimits_reload(l, &err), CT_OK);
    write_file(&f, ""); /* empty: skipped */
    assert_int_equal(qlimits_reload(l, &err), CT_OK);
    assert_int_equal(qlimits_count(l), 1);
    assert_int_equal(remove(f.path), 0); /* gone: kept */
    assert_int_equal(qlimits_reload(l, &err), CT_EIO);
    assert_int_equal(qlimits_count(l), 1);
    qlimits_free(l);
    ctest_rmdir(f.dir);
}

static void test_qlimits_reload_adds_changes_removes(void **state)
{
    (void)state;
    struct fx f;
    struct qlimits *l =
        open_fx(&f, "[{\"regex\":\".*sys$\",\"byteLimit\":24,\"dataPointsLimit\":16}]");
    struct ct_err err = {0};
    uint64_t p, b;
    /* timerTaskDiffLimit */
    write_file(&f, "[{\"regex\":\".*sys$\",\"byteLimit\":60,\"dataPointsLimit\":16}]");
    assert_int_equal(qlimits_reload(l, &err), CT_OK);
    get(l, "a.sys", &p, &b);
    assert_int_equal(b, 60);
    /* timerTaskAddOne */
    write_file(&f, "[{\"regex\":\".*sys$\",\"byteLimit\":24,\"dataPointsLimit\":16},"
                   "{\"regex\":\".*if$\",\"byteLimit\":96,\"dataPointsLimit\":128}]");
    assert_int_equal(qlimits_reload(l, &err), CT_OK);
    assert_int_equal(qlimits_count(l), 2);
    get(l, "net.if", &p, &b);
    assert_int_equal(p, 128);
    assert_int_equal(b, 96);
    /* timerTaskRemoveOne */
    write_file(&f, "[{\"regex\":\".*if$\",\"byteLimit\":96,\"dataPointsLimit\":128}]");
    assert_int_equal(qlimits_reload(l, &err), CT_OK);
    assert_int_equal(qlimits_count(l), 1);
    get(l, "a.sys", &p, &b);
    assert_int_equal(p, 24);
    /* timerTaskCleared */
    write_file(&f, "[]");
    assert_int_equal(qlimits_reload(l, &err), CT_OK);
    assert_int_equal(qlimits_count(l), 0);
    qlimits_free(l);
    ctest_rmdir(f.dir);
}

static void test_qlimits_first_match_wins_and_zero_is_no_limit(void **state)
{
    (void)state;
    struct fx f;
    struct qlimits *l = open_fx(&f, "[{\"regex\":\"^sys\\\\.\",\"dataPointsLimit\":5},"
                                    "{\"regex\":\"cpu\",\"dataPointsLimit\":9,\"byteLimit\":3},"
                                    "{\"regex\":\"free\"}]");
    uint64_t p, b;
    get(l, "sys.cpu", &p, &b);
    assert_int_equal(p, 5);
    assert_int_equal(b, 0);
    get(l, "app.cpu", &p, &b);
    assert_int_equal(p, 9);
    assert_int_equal(b, 3);
    get(l, "mem.free", &p, &b);
    assert_int_equal(p, 0);
    assert_int_equal(b, 0);
    get(l, "sysx", &p, &b); /* "^sys\." wants the dot */
    assert_int_equal(p, 24);
    qlimits_free(l);
    ctest_rmdir(f.dir);
    qlimits_get(NULL, "x", &p, &b); /* none: unchanged */
    assert_int_equal(p, 24);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qlimits_ctor_with_file),
        cmocka_unit_test(test_qlimits_bad_files_change_nothing),
        cmocka_unit_test(test_qlimits_missing_or_empty_file),
        cmocka_unit_test(test_qlimits_reload_adds_changes_removes),
        cmocka_unit_test(test_qlimits_first_match_wins_and_zero_is_no_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
