/* test_engine_namespaces.c - namespaces with configuration pairs on the embedded engine: kept in
 * the catalog across reopen, returned in creation order, dropped with their namespace, and the
 * neutral checks of wc.c (empty or repeated keys). */
#include <stdlib.h>
#include <string.h>

#include "storage/wc.h"
#include "tests/lib/ctest.h"

static struct wc_store *open_store(const char *dir)
{
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = dir;
    struct wc_store *s = NULL;
    struct ct_err err = {0};
    assert_int_equal(wc_open(&o, &s, &err), CT_OK);
    return s;
}

static void test_namespace_config_survives_reopen_in_order(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir);
    struct ct_err err = {0};
    const char *kv[] = {"owner", "ops", "hbase.namespace.quota.maxtables", "5", "empty", ""};
    assert_int_equal(wc_namespace_create_config(s, "cfg", kv, 3, &err), CT_OK);
    assert_int_equal(wc_namespace_create(s, "plain", &err), CT_OK);
    wc_close(s);

    s = open_store(dir);
    char **got = NULL;
    size_t n = 0;
    assert_int_equal(wc_namespace_get_config(s, "cfg", &got, &n, &err), CT_OK);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < 6; i++)
        assert_string_equal(got[i], kv[i]);
    wc_namespace_config_free(got, n);
    assert_int_equal(wc_namespace_get_config(s, "plain", &got, &n, &err), CT_OK);
    assert_int_equal(n, 0);
    assert_null(got);
    assert_int_equal(wc_namespace_get_config(s, "nope", &got, &n, &err), CT_NOTFOUND);
    /* dropping removes the pairs with the name; a new namespace of that name starts empty */
    assert_int_equal(wc_namespace_drop(s, "cfg", &err), CT_OK);
    assert_int_equal(wc_namespace_create(s, "cfg", &err), CT_OK);
    wc_close(s);
    s = open_store(dir);
    assert_int_equal(wc_namespace_get_config(s, "cfg", &got, &n, &err), CT_OK);
    assert_int_equal(n, 0);
    assert_int_equal(wc_namespace_exists(s, "plain", &err), CT_OK);
    wc_close(s);
    ctest_rmdir(dir);
}

static void test_namespace_config_rejects_bad_pairs_and_creates_nothing(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir);
    struct ct_err err = {0};
    const char *dup[] = {"a", "1", "a", "2"};
    assert_int_equal(wc_namespace_create_config(s, "x", dup, 2, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "given twice"));
    const char *empty[] = {"", "1"};
    assert_int_equal(wc_namespace_create_config(s, "x", empty, 1, &err), CT_EINVAL);
    assert_int_equal(wc_namespace_exists(s, "x", &err), CT_NOTFOUND);
    const char *ok[] = {"a", "1"};
    assert_int_equal(wc_namespace_create_config(s, "x", ok, 1, &err), CT_OK);
    assert_int_equal(wc_namespace_create_config(s, "x", ok, 1, &err), CT_EEXIST);
    wc_close(s);
    ctest_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_namespace_config_survives_reopen_in_order),
        cmocka_unit_test(test_namespace_config_rejects_bad_pairs_and_creates_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
