/* test_conf.c - the TSD configuration (tsd/conf.h): defaults that work with nothing set, typed
 * validation with clear messages, OpenTSDB-style files, unknown keys kept and reported; the one
 * key table (the schema's keys served once and each passed through to the schema, and from the
 * TSD's store into the tables it creates); the command-line options every tool shares. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "schema/tsdb.h"
#include "storage/wc.h"
#include "tests/lib/ctest.h"
#include "tsd/conf.h"
#include "tsd/store.h"

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
    assert_int_equal(conf_set(c, "tsd.core.preload_uid_cache", "NO", NULL, &err), CT_OK);
    conf_report_unsupported(c, count_warning, NULL);
    assert_int_equal(warned, 0);
    assert_int_equal(conf_set(c, "tsd.core.preload_uid_cache", "YES", NULL, &err), CT_OK);
    conf_report_unsupported(c, count_warning, NULL);
    assert_int_equal(warned, 1);
    assert_non_null(strstr(last_warning, "tsd.core.preload_uid_cache=YES is not supported"));
    assert_int_equal(conf_set(c, "tsd.storage.hbase.zk_quorum", "zk1,zk2", NULL, &err), CT_OK);
    assert_int_equal(conf_set(c, "tsd.query.filter.expansion_limit", "10", NULL, &err), CT_OK);
    warned = 0;
    conf_report_unsupported(c, count_warning, NULL);
    assert_int_equal(warned, 3);
    conf_free(c);
}

/* A value of key k other than its default, valid for its type and range. */
static const char *other_value(const struct ct_cfg_key *k, char *buf, size_t cap)
{
    switch (k->type) {
    case CT_CFG_BOOL:
        return strcmp(k->def, "true") ? "true" : "false";
    case CT_CFG_INT: {
        long long d = atoll(k->def), x = d < k->max ? d + 1 : d - 1;
        snprintf(buf, cap, "%lld", x);
        return buf;
    }
    case CT_CFG_ENUM: {
        const char *p = k->choices;
        for (;;) {
            const char *bar = strchr(p, '|');
            size_t n = bar ? (size_t)(bar - p) : strlen(p);
            snprintf(buf, cap, "%.*s", (int)n, p);
            if (strcasecmp(buf, k->def) != 0 || !bar)
                return buf;
            p = bar + 1;
        }
    }
    case CT_CFG_STR:
        snprintf(buf, cap, "%s_x", k->def);
        return buf;
    }
    return NULL;
}

struct walk {
    size_t nkeys, nschema, nunsupported;
    const char *prev;
};

/* Every key the conf knows, and each schema key set here, reaches tsdb_config unchanged. */
static int walk_key(void *arg, const struct ct_cfg_key *k)
{
    struct walk *w = arg;
    if (w->prev && strcmp(w->prev, k->key) >= 0)
        fail_msg("keys out of order or twice: %s then %s", w->prev, k->key);
    w->prev = k->key;
    w->nkeys++;
    if (!k->owner) {
        w->nunsupported++;
        return 0;
    }
    if (strncmp(k->owner, "schema/", 7) != 0)
        return 0; /* the TSD's own keys: tests/integration/test_conf_keys.sh checks their owner */
    w->nschema++;
    struct ct_err err = {0};
    struct conf *c = NULL;
    assert_int_equal(conf_new(&c, &err), CT_OK);
    char buf[128], got[128];
    const char *want = other_value(k, buf, sizeof(buf));
    if (conf_set(c, k->key, want, NULL, &err) != CT_OK)
        fail_msg("%s=%s: %s", k->key, want, err.msg);
    struct tsdb_config tc;
    assert_int_equal(conf_tsdb_config(c, &tc, &err), CT_OK);
    assert_int_equal(tsdb_config_get(&tc, k->key, got, sizeof(got)), CT_OK);
    if (strcasecmp(got, want) != 0)
        fail_msg("%s: set '%s' in the conf, the schema got '%s'", k->key, want, got);
    conf_free(c);
    return 0;
}

static void test_conf_every_schema_key_reaches_the_schema(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct conf *c = NULL;
    assert_int_equal(conf_new(&c, &err), CT_OK);
    struct walk w = {0, 0, 0, NULL};
    assert_int_equal(conf_each_key(c, walk_key, &w), 0);
    size_t ns = 0;
    (void)tsdb_config_keys(&ns);
    assert_int_equal(w.nschema, ns); /* every schema key is served, none twice (sorted walk) */
    assert_true(w.nkeys > ns + 40);
    assert_true(w.nunsupported >= 15);
    /* the schema's defaults are the conf's defaults, and nothing set means no layout chosen */
    struct tsdb_config tc;
    assert_int_equal(conf_tsdb_config(c, &tc, &err), CT_OK);
    assert_false(tc.layout_given);
    assert_int_equal(conf_get_int(c, "tsd.storage.salt.width"), 1);
    assert_int_equal(tc.layout.salt_width, 1);
    assert_int_equal(conf_get_int(c, "tsd.storage.salt.buckets"), tc.layout.salt_buckets);
    /* a layout key set even to its default is a choice: the store must match it */
    assert_int_equal(conf_set(c, "tsd.storage.salt.width", "1", NULL, &err), CT_OK);
    assert_int_equal(conf_tsdb_config(c, &tc, &err), CT_OK);
    assert_true(tc.layout_given);
    /* a schema key's value is checked by the schema's table, through the conf */
    assert_int_equal(conf_set(c, "tsd.storage.ctsdb.ttl", "-1", NULL, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "tsd.storage.ctsdb.ttl"));
    assert_int_equal(conf_set(c, "tsd.storage.ctsdb.compression", "lz4", NULL, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "NONE|SNAPPY|GZ"));
    conf_free(c);
}

/* The issue this exists for: --tsd.storage.ctsdb.ttl=86400 must give the data family a TTL of a
 * day, and the other table-creation keys must reach the tables; with nothing set the data
 * table is salted and pre-split per bucket. */
static void test_conf_table_keys_reach_the_tables_the_tsd_creates(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    for (int round = 0; round < 2; round++) {
        char sub[600];
        snprintf(sub, sizeof(sub), "%s/r%d", dir, round);
        struct conf *c = NULL;
        assert_int_equal(conf_new(&c, &err), CT_OK);
        assert_int_equal(conf_set(c, "tsd.storage.directory", sub, NULL, &err), CT_OK);
        if (round == 1) {
            assert_int_equal(conf_set(c, "tsd.storage.ctsdb.ttl", "86400", NULL, &err), CT_OK);
            assert_int_equal(conf_set(c, "tsd.storage.ctsdb.min_versions", "1", NULL, &err), CT_OK);
            assert_int_equal(conf_set(c, "tsd.storage.ctsdb.bloom", "rowcol", NULL, &err), CT_OK);
            assert_int_equal(conf_set(c, "tsd.storage.ctsdb.compression", "GZ", NULL, &err), CT_OK);
            assert_int_equal(conf_set(c, "tsd.storage.ctsdb.regions_per_bucket", "2", NULL, &err),
                             CT_OK);
        }
        struct tsdstore *st = NULL;
        int rc = tsdstore_open(c, TSDSTORE_CREATE, &st, &err);
        if (rc == CT_EUNSUPPORTED) {
            conf_free(c);
            ctest_rmdir(dir);
            skip();
        }
        if (rc != CT_OK)
            fail_msg("tsdstore_open: %s", err.msg);
        struct wc_table_desc *d;
        assert_int_equal(wc_table_describe(tsdstore_wc(st), "tsdb", &d, &err), CT_OK);
        assert_int_equal(d->families[0].ttl_s, round ? 86400 : WC_TTL_FOREVER);
        assert_int_equal(d->families[0].min_versions, round ? 1 : 0);
        assert_int_equal(d->families[0].bloom, round ? WC_BLOOM_ROWCOL : WC_BLOOM_ROW);
        assert_int_equal(d->families[0].compression,
                         round ? WC_COMPRESSION_GZ : WC_COMPRESSION_SNAPPY);
        wc_table_desc_free(d);
        struct wc_region_info *ri;
        size_t n;
        assert_int_equal(wc_table_regions(tsdstore_wc(st), "tsdb", &ri, &n, &err), CT_OK);
        size_t buckets = (size_t)atoi(TSDB_DEFAULT_SALT_BUCKETS);
        assert_int_equal(n, round ? 2 * buckets : buckets);
        wc_region_info_free(ri, n);
        assert_int_equal(tsdb_layout(tsdstore_tsdb(st))->salt_width, 1);
        tsdstore_close(st);
        conf_free(c);
    }
    ctest_rmdir(dir);
}

/* The options every tool shares: files first, then the rest in order; the tool's own options
 * and operands stay, in order; `--` ends the taking. */
static void test_conf_take_argv_leaves_the_tools_own_arguments(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    char path[512], cfgopt[600];
    snprintf(path, sizeof(path), "%s/t.conf", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "tsd.storage.max_tags = 5\ntsd.storage.salt.buckets = 4\n");
    fclose(f);
    snprintf(cfgopt, sizeof(cfgopt), "--config=%s", path);
    char *argv[] = {"scan",     "--tsd.storage.max_tags=6",
                    "--import", "--data",
                    "/x/y",     cfgopt,
                    "--set",    "tsd.core.uid.random_metrics=true",
                    "1h-ago",   "--set=tsd.storage.salt.width=0",
                    "--fix=3",  "m",
                    "--",       "--tsd.storage.max_tags=7",
                    NULL};
    int argc = (int)(sizeof(argv) / sizeof(argv[0])) - 1;
    struct ct_err err = {0};
    struct conf *c = NULL;
    assert_int_equal(conf_new(&c, &err), CT_OK);
    struct collect x = {{0}, 0, {0}};
    assert_int_equal(conf_take_argv(c, &argc, argv, collect_warn, &x, &err), CT_OK);
    assert_int_equal(x.warns, 0);
    assert_int_equal(argc, 7);
    assert_string_equal(argv[1], "--import");
    assert_string_equal(argv[2], "1h-ago");
    assert_string_equal(argv[3], "--fix=3"); /* no '.' in its name: the tool's */
    assert_string_equal(argv[4], "m");
    assert_string_equal(argv[5], "--");
    assert_string_equal(argv[6], "--tsd.storage.max_tags=7");
    assert_null(argv[7]);
    assert_int_equal(conf_get_int(c, "tsd.storage.max_tags"), 6); /* the command line wins */
    assert_int_equal(conf_get_int(c, "tsd.storage.salt.buckets"), 4);
    assert_int_equal(conf_get_int(c, "tsd.storage.salt.width"), 0);
    assert_true(conf_get_bool(c, "tsd.core.uid.random_metrics"));
    assert_string_equal(conf_get_str(c, "tsd.storage.directory"), "/x/y");
    /* the same key table for tools: bad values, bad --set, unknown keys */
    char *bad1[] = {"uid", "--tsd.storage.salt.width=9", NULL};
    argc = 2;
    assert_int_equal(conf_take_argv(c, &argc, bad1, NULL, NULL, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "bad value '9' for tsd.storage.salt.width"));
    char *bad2[] = {"uid", "--set", "novalue", NULL};
    argc = 3;
    assert_int_equal(conf_take_argv(c, &argc, bad2, NULL, NULL, &err), CT_EINVAL);
    assert_string_equal(err.msg, "--set needs KEY=VALUE, got 'novalue'");
    char *bad3[] = {"uid", "--data", NULL};
    argc = 2;
    assert_int_equal(conf_take_argv(c, &argc, bad3, NULL, NULL, &err), CT_EINVAL);
    char *unk[] = {"uid", "--tsd.storage.salt.widht=1", NULL};
    argc = 2;
    assert_int_equal(conf_take_argv(c, &argc, unk, collect_warn, &x, &err), CT_OK);
    assert_int_equal(x.warns, 1);
    assert_non_null(strstr(x.last_warn, "unknown configuration key tsd.storage.salt.widht"));
    conf_free(c);
    ctest_rmdir(dir);
}

/* The TSD's command line: every spelling of a key in one pass, the later wins; operands keep
 * their indexes in argv. */
static void test_conf_apply_argv_later_setting_wins_whatever_its_spelling(void **state)
{
    (void)state;
    char *argv[] = {"tsd",   "--port",     "0",     "--tsd.network.port=5", "a.txt", "--data", "/d",
                    "b.txt", "--bind=::1", "--set", "tsd.network.bind=x",   NULL};
    int argc = (int)(sizeof(argv) / sizeof(argv[0])) - 1, ops[4], nops = 0;
    bool help = true;
    struct ct_err err = {0};
    struct conf *c = NULL;
    assert_int_equal(conf_new(&c, &err), CT_OK);
    assert_int_equal(conf_apply_argv(c, argc, argv, ops, 4, &nops, &help, NULL, NULL, &err), CT_OK);
    assert_false(help);
    assert_int_equal(conf_get_int(c, "tsd.network.port"), 5);
    assert_string_equal(conf_get_str(c, "tsd.network.bind"), "x");
    assert_string_equal(conf_get_str(c, "tsd.storage.directory"), "/d");
    assert_int_equal(nops, 2);
    assert_int_equal(ops[0], 4);
    assert_int_equal(ops[1], 7);
    assert_string_equal(argv[3], "--tsd.network.port=5"); /* argv itself is unchanged */
    char *argv2[] = {"tsd", "--tsd.network.port=5", "--port", "6", NULL};
    assert_int_equal(conf_apply_argv(c, 4, argv2, ops, 0, &nops, &help, NULL, NULL, &err), CT_OK);
    assert_int_equal(conf_get_int(c, "tsd.network.port"), 6);
    char *argv3[] = {"tsd", "--port", NULL};
    assert_int_equal(conf_apply_argv(c, 2, argv3, ops, 0, &nops, &help, NULL, NULL, &err),
                     CT_EINVAL);
    assert_string_equal(err.msg, "--port needs a value");
    char *argv4[] = {"tsd", "x.txt", NULL};
    assert_int_equal(conf_apply_argv(c, 2, argv4, ops, 0, &nops, &help, NULL, NULL, &err),
                     CT_EINVAL);
    assert_string_equal(err.msg, "unexpected argument 'x.txt'");
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
        cmocka_unit_test(test_conf_every_schema_key_reaches_the_schema),
        cmocka_unit_test(test_conf_table_keys_reach_the_tables_the_tsd_creates),
        cmocka_unit_test(test_conf_take_argv_leaves_the_tools_own_arguments),
        cmocka_unit_test(test_conf_apply_argv_later_setting_wins_whatever_its_spelling),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
