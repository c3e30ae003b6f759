/* test_conf.c - the TSD configuration (tsd/conf.h): defaults that work with nothing set, typed
 * validation with clear messages, OpenTSDB-style files, unknown keys kept and reported. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/ctest.h"
#include "tsd/conf.h"

static void test_conf_defaults_work_with_nothing_set(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct conf *c = NULL;
    assert_int_equal(conf_new(&c, &err), CT_OK);
    assert_int_equal(conf_get_int(c, "tsd.network.port"), 4242);
    assert_string_equal(conf_get_str(c, "tsd.network.bind"), "0.0.0.0");
    assert_string_equal(conf_get_str(c, "tsd.storage.directory"), "./data");
    assert_int_equal(conf_get_int(c, "tsd.storage.max_tags"), 8);
    assert_true(conf_get_bool(c, "tsd.core.auto_create_metrics"));
    assert_false(conf_get_bool(c, "tsd.http.request.enable_chunked"));
    assert_int_equal(conf_get_int(c, "tsd.http.request.max_chunk"), 4096);
    assert_string_equal(conf_get(c, "tsd.mode"), "rw");
    assert_null(conf_get(c, "no.such.key"));
    conf_free(c);
}

static void test_conf_set_validates_types_with_clear_messages(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct conf *c = NULL;
    assert_int_equal(conf_new(&c, &err), CT_OK);
    bool unknown = true;
    assert_int_equal(conf_set(c, "tsd.network.port", "8080", &unknown, &err), CT_OK);
    assert_false(unknown);
    assert_int_equal(conf_get_int(c, "tsd.network.port"), 8080);
    assert_int_equal(conf_set(c, "tsd.network.port", "80x", NULL, &err), CT_EINVAL);
    assert_string_equal(err.msg, "bad value '80x' for tsd.network.port: expected an integer");
    assert_int_equal(conf_set(c, "tsd.network.port", "70000", NULL, &err), CT_EINVAL);
    assert_string_equal(err.msg,
                        "bad value '70000' for tsd.network.port: expected an integer from 0 to "
                        "65535");
    assert_int_equal(conf_get_int(c, "tsd.network.port"), 8080); /* unchanged */
    assert_int_equal(conf_set(c, "tsd.no_diediedie", "maybe", NULL, &err), CT_EINVAL);
    assert_string_equal(err.msg, "bad value 'maybe' for tsd.no_diediedie: expected true or false");
    assert_int_equal(conf_set(c, "tsd.no_diediedie", "YES", NULL, &err), CT_OK);
    assert_true(conf_get_bool(c, "tsd.no_diediedie"));
    assert_int_equal(conf_set(c, "tsd.mode", "rx", NULL, &err), CT_EINVAL);
    assert_string_equal(err.msg, "bad value 'rx' for tsd.mode: expected one of rw|ro|wo");
    assert_int_equal(conf_set(c, "tsd.foo.bar", "x", &unknown, &err), CT_OK);
    assert_true(unknown);
    assert_string_equal(conf_get(c, "tsd.foo.bar"), "x");
    conf_free(c);
}

struct collect {
    char keys[4096];
    int warns;
    char last_warn[512];
};

static int collect_key(void *arg, const char *key, const char *value)
{
    (void)value;
    struct collect *x = arg;
    strncat(x->keys, key, sizeof(x->keys) - strlen(x->keys) - 2);
    strncat(x->keys, "\n", sizeof(x->keys) - strlen(x->keys) - 1);
    return 0;
}

static void collect_warn(void *arg, const char *msg)
{
    struct collect *x = arg;
    x->warns++;
    snprintf(x->last_warn, sizeof(x->last_warn), "%s", msg);
}

static void test_conf_file_with_comments_unknown_keys_and_walk_order(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    char path[512];
    snprintf(path, sizeof(path), "%s/opentsdb.conf", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "# OpenTSDB config\n! also a comment\n\n  tsd.network.port = 4343  \n"
               "tsd.http.request.cors_domains=*\ntsd.zzz.custom = 1\ntsd.aaa.custom=2\n");
    fclose(f);
    struct ct_err err = {0};
    struct conf *c = NULL;
    assert_int_equal(conf_new(&c, &err), CT_OK);
    struct collect x = {{0}, 0, {0}};
    assert_int_equal(conf_load_file(c, path, collect_warn, &x, &err), CT_OK);
    assert_int_equal(conf_get_int(c, "tsd.network.port"), 4343);
    assert_string_equal(conf_get_str(c, "tsd.http.request.cors_domains"), "*");
    assert_int_equal(x.warns, 2);
    assert_non_null(
        strstr(x.last_warn, "opentsdb.conf:7: unknown configuration key tsd.aaa.custom"));
    conf_each(c, collect_key, &x);
    /* sorted walk, unknown keys merged in */
    const char *a = strstr(x.keys, "tsd.aaa.custom\n");
    const char *b = strstr(x.keys, "tsd.core.auto_create_metrics\n");
    const char *z = strstr(x.keys, "tsd.zzz.custom\n");
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(z);
    assert_true(a < b && b < z);
    conf_free(c);
    ctest_rmdir(dir);
}

static void test_conf_file_bad_value_names_file_and_line(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    char path[512];
    snprintf(path, sizeof(path), "%s/bad.conf", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "tsd.network.port = 1\ntsd.storage.max_tags = lots\n");
    fclose(f);
    struct ct_err err = {0};
    struct conf *c = NULL;
    assert_int_equal(conf_new(&c, &err), CT_OK);
    assert_int_equal(conf_load_file(c, path, NULL, NULL, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "bad.conf:2: bad value 'lots' for tsd.storage.max_tags"));
    snprintf(path, sizeof(path), "%s/missing.conf", dir);
    assert_int_equal(conf_load_file(c, path, NULL, NULL, &err), CT_EIO);
    assert_non_null(strstr(err.msg, "missing.conf: No such file or directory"));
    snprintf(path, sizeof(path), "%s/noeq.conf", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "tsd.network.port 1\n");
    fclose(f);
    assert_int_equal(conf_load_file(c, path, NULL, NULL, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "noeq.conf:1: expected key = value"));
    conf_free(c);
    ctest_rmdir(dir);
}

/* Keys ctsdb accepts but does not act on are reported only when set away from their default,
 * whatever spelling of the boolean was used. */
static int warned;
static char last_warning[512];
static void count_warning(void *arg, const char *msg)
{
    (void)arg;
    warned++;
    snprintf(last_warning, sizeof(last_warning), "%s", msg);
}

static void test_conf_reports_unsupported_keys_only_when_set(void **state)
{
    (void)state;
    struct conf *c;
    struct ct_err err;
    assert_int_equal(conf_new(&c, &err), CT_OK);
    warned = 0;
    conf_report_unsupported(c, count_warning, NULL);
    assert_int_equal(warned, 0);
    assert_int_equal(conf_set(c, "tsd.core.meta.enable_realtime_uid", "NO", NULL, &err), CT_OK);
    conf_report_unsupported(c, count_warning, NULL);
    assert_int_equal(warned, 0);
    assert_int_equal(conf_set(c, "tsd.core.meta.enable_tsuid_tracking", "YES", NULL, &err), CT_OK);
    conf_report_unsupported(c, count_warning, NULL);
    assert_int_equal(warned, 1);
    assert_non_null(
        strstr(last_warning, "tsd.core.meta.enable_tsuid_tracking=YES is not supported"));
    assert_int_equal(conf_set(c, "tsd.storage.hbase.zk_quorum", "zk1,zk2", NULL, &err), CT_OK);
    assert_int_equal(conf_set(c, "tsd.query.filter.expansion_limit", "10", NULL, &err), CT_OK);
    warned = 0;
    conf_report_unsupported(c, count_warning, NULL);
    assert_int_equal(warned, 3);
    conf_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conf_defaults_work_with_nothing_set),
        cmocka_unit_test(test_conf_reports_unsupported_keys_only_when_set),
        cmocka_unit_test(test_conf_set_validates_types_with_clear_messages),
        cmocka_unit_test(test_conf_file_with_comments_unknown_keys_and_walk_order),
        cmocka_unit_test(test_conf_file_bad_value_names_file_and_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
