/* test_bigtable_emulator.c - the Bigtable backend (storage/bigtable/) against Google's Bigtable
 * emulator: administration and the GC-rule mapping as the service stores it, reads and writes in
 * both directions, read-time VERSIONS / TTL / MIN_VERSIONS, increments, check-and-mutate, large
 * batches, client-side limits, namespaces, several threads sharing one store and handle, and a
 * scan (both directions) and a batch that survive a connection dropped mid-stream (a loopback
 * TCP proxy that cuts a connection after some bytes).
 *
 * The emulator is started once by the group setup (test_bigtable_emu.h). Without it the tests are
 * skipped (cmocka prints the skipped count) unless CI=true, where that is a failure. The
 * backend-neutral contract suite runs in test_bigtable_contract.c. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "storage/clock.h"
#include "storage/coding.h"
#include "storage/wc.h"
#include "tests/lib/ctest.h"
#include "tests/unit/storage/test_bigtable_emu.h"

static struct wc_store *open_store(void)
{
    struct wc_options o;
    wc_options_init(&o);
    o.backend = WC_BACKEND_BIGTABLE;
    o.bt_deadline_ms = 10000;
    struct wc_store *s = NULL;
    struct ct_err err = {0};
    int rc = wc_open(&o, &s, &err);
    if (rc != CT_OK)
        fail_msg("wc_open: %s", err.msg);
    return s;
}

#define SKIP_WITHOUT_EMULATOR()                                                                    \
    do {                                                                                           \
        if (emu_missing)                                                                           \
            skip();                                                                                \
    } while (0)

#define OK(call)                                                                                   \
    do {                                                                                           \
        struct ct_err e_ = {0};                                                                    \
        (void)e_;                                                                                  \
        int rc_ = (call);                                                                          \
        if (rc_ != CT_OK)                                                                          \
            fail_msg("%s -> %d: %s", #call, rc_, err.msg);                                         \
    } while (0)

static void make_table(struct wc_store *s, const char *name, struct wc_family_desc *fams, size_t n,
                       const struct wc_bytes *splits, size_t nsplits)
{
    struct ct_err err = {0};
    struct wc_table_desc d;
    wc_table_desc_init(&d, name);
    d.families = fams;
    d.nfamilies = n;
    OK(wc_table_create(s, &d, splits, nsplits, &err));
}

static void drop_table(struct wc_store *s, const char *name)
{
    struct ct_err err = {0};
    OK(wc_table_disable(s, name, &err));
    OK(wc_table_drop(s, name, &err));
}

/* make_table, then opens the new table. */
static struct wc_table *new_table(struct wc_store *s, const char *name, struct wc_family_desc *fams,
                                  size_t n, const struct wc_bytes *splits, size_t nsplits)
{
    make_table(s, name, fams, n, splits, nsplits);
    struct ct_err err = {0};
    struct wc_table *t;
    OK(wc_table_open(s, name, &t, &err));
    return t;
}

/* The end of a test: closes t, drops its table `name`, closes the store. */
static void end_test(struct wc_store *s, struct wc_table *t, const char *name)
{
    wc_table_close(t);
    drop_table(s, name);
    wc_close(s);
}

static void put(struct wc_table *t, const char *row, const char *fam, const char *q, const char *v,
                int64_t ts)
{
    struct ct_err err = {0};
    struct wc_mutation m = {WC_OP_PUT, wc_bytes_str(fam), wc_bytes_str(q), wc_bytes_str(v), ts};
    struct wc_row_mutation rm = {wc_bytes_str(row), &m, 1};
    OK(wc_mutate_row(t, &rm, WC_DURABILITY_USE_DEFAULT, &err));
}

/* Scans and renders "row/fam:q@ts=v ..." for comparison. */
static void scan_text(struct wc_table *t, const struct wc_scan_options *o, char *out, size_t size)
{
    struct ct_err err = {0};
    struct wc_scanner *sc;
    OK(wc_scanner_open(t, o, &sc, &err));
    struct wc_row r;
    size_t pos = 0;
    out[0] = 0;
    int rc;
    while ((rc = wc_scanner_next(sc, &r, &err)) == CT_OK)
        for (size_t i = 0; i < r.ncells; i++) {
            const struct wc_cell *c = &r.cells[i];
            int w = snprintf(out + pos, size - pos, "%s%.*s/%.*s:%.*s@%lld=%.*s", pos ? " " : "",
                             (int)r.key.len, (const char *)r.key.data, (int)c->family.len,
                             (const char *)c->family.data, (int)c->qualifier.len,
                             (const char *)c->qualifier.data, (long long)c->ts_ms,
                             (int)c->value.len, (const char *)c->value.data);
            pos += (size_t)w < size - pos ? (size_t)w : size - pos - 1;
        }
    assert_int_equal(rc, CT_NOTFOUND);
    wc_scanner_close(sc);
}

/* Fails the test unless scanning t with o renders (scan_text) as `want`. */
static void assert_scan(struct wc_table *t, const struct wc_scan_options *o, const char *want)
{
    char out[8192];
    scan_text(t, o, out, sizeof(out));
    assert_string_equal(out, want);
}

static void test_admin_round_trips_families_gc_rules_and_splits(void **state)
{
    (void)state;
    SKIP_WITHOUT_EMULATOR();
    struct wc_store *s = open_store();
    struct ct_err err = {0};
    struct wc_family_desc f[2];
    wc_family_desc_init(&f[0], "a");
    f[0].versions = 5;
    f[0].ttl_s = 18000;
    f[0].min_versions = 2;
    f[0].compression = WC_COMPRESSION_SNAPPY;
    wc_family_desc_init(&f[1], "b");
    struct wc_bytes splits[2] = {wc_bytes_str("m"), wc_bytes_str("g")};
    make_table(s, "admin1", f, 2, splits, 2);
    assert_int_equal(wc_table_exists(s, "admin1", &err), CT_OK);
    assert_int_equal(wc_table_exists(s, "nope", &err), CT_NOTFOUND);
    struct wc_table_desc d2;
    wc_table_desc_init(&d2, "admin1");
    d2.families = f;
    d2.nfamilies = 1;
    assert_int_equal(wc_table_create(s, &d2, NULL, 0, &err), CT_EEXIST);

    struct wc_table_desc *d;
    OK(wc_table_describe(s, "admin1", &d, &err));
    assert_string_equal(d->name, "default:admin1");
    assert_int_equal(d->nfamilies, 2);
    assert_string_equal(d->families[0].name, "a");
    assert_int_equal(d->families[0].versions, 5);
    assert_int_equal(d->families[0].min_versions, 2);
    assert_true(d->families[0].ttl_s == 18000);
    assert_int_equal(d->families[0].compression, WC_COMPRESSION_SNAPPY);
    assert_int_equal(d->families[1].versions, 1);
    assert_true(d->enabled);
    wc_table_desc_free(d);

    struct wc_region_info *r;
    size_t nr;
    OK(wc_table_regions(s, "admin1", &r, &nr, &err));
    assert_int_equal(nr, 3);
    assert_int_equal(r[1].start_len, 1);
    assert_memory_equal(r[1].start_key, "g", 1);
    assert_memory_equal(r[2].start_key, "m", 1);
    wc_region_info_free(r, nr);

    /* alter: modify a, drop b, add c */
    struct wc_family_desc g[2];
    wc_family_desc_init(&g[0], "a");
    g[0].versions = 2;
    wc_family_desc_init(&g[1], "c");
    g[1].ttl_s = 60;
    struct wc_table_desc ad;
    wc_table_desc_init(&ad, "admin1");
    ad.families = g;
    ad.nfamilies = 2;
    OK(wc_table_alter(s, &ad, &err));
    OK(wc_table_describe(s, "admin1", &d, &err));
    assert_int_equal(d->nfamilies, 2);
    assert_string_equal(d->families[0].name, "a");
    assert_int_equal(d->families[0].versions, 2);
    assert_true(d->families[0].ttl_s == WC_TTL_FOREVER);
    assert_string_equal(d->families[1].name, "c");
    assert_true(d->families[1].ttl_s == 60);
    wc_table_desc_free(d);

    /* drop needs a disabled table; a disabled table refuses reads and writes, also through a
     * handle opened before the disable */
    struct wc_table *t;
    OK(wc_table_open(s, "admin1", &t, &err));
    put(t, "r", "a", "q", "v", 1000);
    assert_int_equal(wc_table_drop(s, "admin1", &err), CT_EBUSY);
    OK(wc_table_disable(s, "admin1", &err));
    struct wc_result res;
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    assert_int_equal(wc_get(t, wc_bytes_str("r"), &o, &res, &err), CT_EBUSY);
    struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("a"), wc_bytes_str("q"), wc_bytes_str("v"), 1};
    struct wc_row_mutation rm = {wc_bytes_str("r"), &m, 1};
    assert_int_equal(wc_mutate_row(t, &rm, WC_DURABILITY_USE_DEFAULT, &err), CT_EBUSY);
    assert_non_null(strstr(err.msg, "disabled"));
    wc_table_close(t);
    OK(wc_table_drop(s, "admin1", &err));
    assert_int_equal(wc_table_exists(s, "admin1", &err), CT_NOTFOUND);
    wc_close(s);
}

static int collect_name(void *arg, const char *name)
{
    char *buf = arg;
    strcat(buf, name);
    strcat(buf, ",");
    return 0;
}

static void test_namespaces_and_table_ids(void **state)
{
    (void)state;
    SKIP_WITHOUT_EMULATOR();
    struct wc_store *s = open_store();
    struct ct_err err = {0};
    OK(wc_namespace_create(s, "ns1", &err));
    assert_int_equal(wc_namespace_create(s, "ns1", &err), CT_EEXIST);
    assert_int_equal(wc_namespace_exists(s, "ns1", &err), CT_OK);
    assert_int_equal(wc_namespace_exists(s, "ns2", &err), CT_NOTFOUND);
    char names[512] = "";
    OK(wc_namespace_list(s, collect_name, names, &err));
    assert_string_equal(names, "default,hbase,ns1,");
    struct wc_family_desc f;
    wc_family_desc_init(&f, "f");
    make_table(s, "ns1:t.x", &f, 1, NULL, 0);
    make_table(s, "t.x", &f, 1, NULL, 0); /* default:t.x must not collide with t:x */
    struct wc_table_desc d;
    wc_table_desc_init(&d, "nsz:t");
    d.families = &f;
    d.nfamilies = 1;
    assert_int_equal(wc_table_create(s, &d, NULL, 0, &err), CT_NOTFOUND);
    names[0] = 0;
    OK(wc_table_list(s, collect_name, names, &err));
    assert_string_equal(names, "default:t.x,ns1:t.x,");
    assert_int_equal(wc_namespace_drop(s, "ns1", &err), CT_EBUSY);
    drop_table(s, "ns1:t.x");
    drop_table(s, "t.x");
    OK(wc_namespace_drop(s, "ns1", &err));
    assert_int_equal(wc_namespace_exists(s, "ns1", &err), CT_NOTFOUND);
    wc_close(s);
}

static void test_scans_forward_reversed_prefix_limit_and_columns(void **state)
{
    (void)state;
    SKIP_WITHOUT_EMULATOR();
    struct wc_store *s = open_store();
    struct ct_err err = {0};
    struct wc_family_desc f[2];
    wc_family_desc_init(&f[0], "f");
    wc_family_desc_init(&f[1], "g");
    struct wc_table *t = new_table(s, "scan1", f, 2, NULL, 0);
    const char *rows[] = {"a1", "a2", "b1", "b2", "c1"};
    for (int i = 0; i < 5; i++) {
        put(t, rows[i], "f", "q", rows[i], 1000);
        put(t, rows[i], "g", "x", "gx", 1000);
    }
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_column col = {wc_bytes_str("f"), wc_bytes_of(NULL, 0), false};
    o.columns = &col;
    o.ncolumns = 1;
    assert_scan(t, &o,
                "a1/f:q@1000=a1 a2/f:q@1000=a2 b1/f:q@1000=b1 b2/f:q@1000=b2 "
                "c1/f:q@1000=c1");
    o.reversed = true;
    o.start_row = wc_bytes_str("b2");
    o.stop_row = wc_bytes_str("a1");
    assert_scan(t, &o, "b2/f:q@1000=b2 b1/f:q@1000=b1 a2/f:q@1000=a2");
    wc_scan_options_init(&o);
    o.reversed = true;
    o.row_prefix = wc_bytes_str("a");
    o.limit_rows = 1;
    assert_scan(t, &o, "a2/f:q@1000=a2 a2/g:x@1000=gx");
    wc_scan_options_init(&o);
    o.start_row = wc_bytes_str("b");
    o.qualifier_prefix = wc_bytes_str("x");
    assert_scan(t, &o, "b1/g:x@1000=gx b2/g:x@1000=gx c1/g:x@1000=gx");
    struct wc_column bad = {wc_bytes_str("zz"), wc_bytes_of(NULL, 0), false};
    wc_scan_options_init(&o);
    o.columns = &bad;
    o.ncolumns = 1;
    struct wc_scanner *sc;
    assert_int_equal(wc_scanner_open(t, &o, &sc, &err), CT_EINVAL);
    struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("zz"), wc_bytes_str("q"), wc_bytes_str("v"),
                            WC_TS_LATEST};
    struct wc_row_mutation rm = {wc_bytes_str("r"), &m, 1};
    assert_int_equal(wc_mutate_row(t, &rm, WC_DURABILITY_USE_DEFAULT, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "Unknown column family"));
    end_test(s, t, "scan1");
}

static void test_versions_ttl_and_min_versions_apply_at_read(void **state)
{
    (void)state;
    SKIP_WITHOUT_EMULATOR();
    struct wc_store *s = open_store();
    struct wc_family_desc f[2];
    wc_family_desc_init(&f[0], "v");
    f[0].versions = 2;
    f[0].ttl_s = 100;
    wc_family_desc_init(&f[1], "m");
    f[1].versions = 3;
    f[1].ttl_s = 100;
    f[1].min_versions = 1;
    struct wc_table *t = new_table(s, "ttl1", f, 2, NULL, 0);
    setenv("CTSDB_NOW_MS", "1000000", 1);
    clock_reload();
    for (int64_t ts = 1000; ts <= 4000; ts += 1000) {
        put(t, "r", "v", "q", "x", 800000 + ts);
        put(t, "r", "m", "q", "y", ts); /* all long expired */
    }
    char out[4096];
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.max_versions = 10;
    scan_text(t, &o, out, sizeof(out));
    /* v: expiry at 900000 hides everything -> nothing; m: newest one survives (MIN_VERSIONS 1) */
    assert_string_equal(out, "r/m:q@4000=y");
    setenv("CTSDB_NOW_MS", "850000", 1);
    clock_reload();
    assert_scan(t, &o, "r/m:q@4000=y r/v:q@804000=x r/v:q@803000=x");
    o.tmin_ms = 801000;
    o.tmax_ms = 803000; /* versions are counted inside the time range */
    assert_scan(t, &o, "r/v:q@802000=x r/v:q@801000=x");
    unsetenv("CTSDB_NOW_MS");
    clock_reload();
    end_test(s, t, "ttl1");
}

static void test_deletes_increment_and_check_and_mutate(void **state)
{
    (void)state;
    SKIP_WITHOUT_EMULATOR();
    struct wc_store *s = open_store();
    struct ct_err err = {0};
    struct wc_family_desc f;
    wc_family_desc_init(&f, "f");
    f.versions = 5;
    struct wc_table *t = new_table(s, "ops1", &f, 1, NULL, 0);
    put(t, "r", "f", "a", "1", 1000);
    put(t, "r", "f", "a", "2", 2000);
    put(t, "r", "f", "a", "3", 3000);
    put(t, "r", "f", "b", "b", 2000);
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.max_versions = 5;
    /* delete latest version of a, then the column b <= 2000, then family version at 1000 */
    struct wc_mutation m = {WC_OP_DELETE_VERSION, wc_bytes_str("f"), wc_bytes_str("a"),
                            wc_bytes_of(NULL, 0), WC_TS_LATEST};
    struct wc_row_mutation rm = {wc_bytes_str("r"), &m, 1};
    OK(wc_mutate_row(t, &rm, WC_DURABILITY_USE_DEFAULT, &err));
    assert_scan(t, &o, "r/f:a@2000=2 r/f:a@1000=1 r/f:b@2000=b");
    m.op = WC_OP_DELETE_FAMILY_VERSION;
    m.ts_ms = 1000;
    OK(wc_mutate_row(t, &rm, WC_DURABILITY_USE_DEFAULT, &err));
    m.op = WC_OP_DELETE_COLUMN;
    m.qualifier = wc_bytes_str("b");
    m.ts_ms = 2000;
    OK(wc_mutate_row(t, &rm, WC_DURABILITY_USE_DEFAULT, &err));
    assert_scan(t, &o, "r/f:a@2000=2");
    m.op = WC_OP_DELETE_ROW;
    m.ts_ms = WC_TS_LATEST;
    OK(wc_mutate_row(t, &rm, WC_DURABILITY_USE_DEFAULT, &err));
    assert_scan(t, &o, "");

    int64_t v = 0;
    OK(wc_increment(t, wc_bytes_str("c"), wc_bytes_str("f"), wc_bytes_str("n"), 5,
                    WC_DURABILITY_USE_DEFAULT, &v, &err));
    assert_true(v == 5);
    OK(wc_increment(t, wc_bytes_str("c"), wc_bytes_str("f"), wc_bytes_str("n"), -2,
                    WC_DURABILITY_USE_DEFAULT, &v, &err));
    assert_true(v == 3);
    put(t, "c", "f", "s", "abc", 1000);
    /* the emulator's status code differs from the service's: assert the failure only */
    assert_true(wc_increment(t, wc_bytes_str("c"), wc_bytes_str("f"), wc_bytes_str("s"), 1,
                             WC_DURABILITY_USE_DEFAULT, &v, &err) < 0);
    print_message("increment of a 3-byte value: %s\n", err.msg);

    bool applied = false;
    struct wc_mutation pm = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("u"), wc_bytes_str("one"),
                             WC_TS_LATEST};
    struct wc_row_mutation prm = {wc_bytes_str("k"), &pm, 1};
    OK(wc_check_and_mutate(t, prm.row, pm.family, pm.qualifier, NULL, &prm,
                           WC_DURABILITY_USE_DEFAULT, &applied, &err));
    assert_true(applied);
    OK(wc_check_and_mutate(t, prm.row, pm.family, pm.qualifier, NULL, &prm,
                           WC_DURABILITY_USE_DEFAULT, &applied, &err));
    assert_false(applied); /* now it exists */
    struct wc_bytes want = wc_bytes_str("two");
    OK(wc_check_and_mutate(t, prm.row, pm.family, pm.qualifier, &want, &prm,
                           WC_DURABILITY_USE_DEFAULT, &applied, &err));
    assert_false(applied);
    want = wc_bytes_str("one");
    pm.value = wc_bytes_str("three");
    OK(wc_check_and_mutate(t, prm.row, pm.family, pm.qualifier, &want, &prm,
                           WC_DURABILITY_USE_DEFAULT, &applied, &err));
    assert_true(applied);
    end_test(s, t, "ops1");
}

static void test_large_batch_and_client_side_limits(void **state)
{
    (void)state;
    SKIP_WITHOUT_EMULATOR();
    struct wc_store *s = open_store();
    struct ct_err err = {0};
    struct wc_family_desc f;
    wc_family_desc_init(&f, "f");
    struct wc_bytes splits[1] = {wc_bytes_str("r05000")};
    struct wc_table *t = new_table(s, "batch1", &f, 1, splits, 1);
    enum {
        NROWS = 10000,
        NCELLS = 12
    };
    char(*keys)[16] = malloc(NROWS * sizeof(*keys));
    char quals[NCELLS][16];
    struct wc_mutation *muts = malloc(NROWS * NCELLS * sizeof(*muts));
    struct wc_row_mutation *rows = malloc(NROWS * sizeof(*rows));
    assert_non_null(keys);
    assert_non_null(muts);
    assert_non_null(rows);
    static char value[600];
    memset(value, 'v', sizeof(value) - 1);
    for (int q = 0; q < NCELLS; q++)
        snprintf(quals[q], sizeof(quals[q]), "q%02d", q);
    for (int i = 0; i < NROWS; i++) {
        snprintf(keys[i], sizeof(keys[i]), "r%05d", i);
        for (int q = 0; q < NCELLS; q++)
            muts[i * NCELLS + q] = (struct wc_mutation){
                WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str(quals[q]), wc_bytes_str(value), 5000};
        rows[i] = (struct wc_row_mutation){wc_bytes_str(keys[i]), &muts[i * NCELLS], NCELLS};
    }
    /* 120k cells, ~72 MB: several MutateRows requests, some in flight together */
    OK(wc_mutate_batch(t, rows, NROWS, WC_DURABILITY_USE_DEFAULT, &err));
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_scanner *sc;
    OK(wc_scanner_open(t, &o, &sc, &err));
    struct wc_row r;
    int nrows = 0, ncells = 0, rc;
    while ((rc = wc_scanner_next(sc, &r, &err)) == CT_OK) {
        char want[16];
        snprintf(want, sizeof(want), "r%05d", nrows);
        assert_int_equal(r.key.len, 6);
        assert_memory_equal(r.key.data, want, 6);
        nrows++;
        ncells += (int)r.ncells;
    }
    assert_int_equal(rc, CT_NOTFOUND);
    wc_scanner_close(sc);
    assert_int_equal(nrows, NROWS);
    assert_int_equal(ncells, NROWS * NCELLS);

    /* limits the emulator would not enforce */
    static uint8_t bigkey[5000];
    memset(bigkey, 'k', sizeof(bigkey));
    struct wc_row_mutation big = {wc_bytes_of(bigkey, sizeof(bigkey)), muts, 1};
    assert_int_equal(wc_mutate_row(t, &big, WC_DURABILITY_USE_DEFAULT, &err), CT_ELIMIT);
    assert_non_null(strstr(err.msg, "4096"));
    /* such a row cannot exist: a get finds nothing, scans bounded by long keys still work */
    struct wc_result res;
    OK(wc_get(t, wc_bytes_of(bigkey, sizeof(bigkey)), &o, &res, &err));
    assert_int_equal(res.row.ncells, 0);
    wc_result_release(&res);
    static uint8_t lo[5000];
    memcpy(lo, "r09998", 6);
    memset(lo + 6, 0, sizeof(lo) - 6);
    o.start_row = wc_bytes_of(lo, sizeof(lo)); /* r09998\0\0...: above r09998 itself */
    OK(wc_scanner_open(t, &o, &sc, &err));
    nrows = 0;
    while ((rc = wc_scanner_next(sc, &r, &err)) == CT_OK) {
        assert_memory_equal(r.key.data, "r09999", 6);
        nrows++;
    }
    assert_int_equal(rc, CT_NOTFOUND);
    wc_scanner_close(sc);
    assert_int_equal(nrows, 1);
    free(keys);
    free(muts);
    free(rows);
    end_test(s, t, "batch1");
}

/* Timestamps are stored as microseconds in 64 bits: the largest millisecond timestamp that fits
 * round-trips exactly, one more is refused (not silently capped). Cells over the wide-column
 * 10 MiB limit are refused as by the engine, although Bigtable would take 100 MiB. */
static void test_timestamp_and_cell_size_edges(void **state)
{
    (void)state;
    SKIP_WITHOUT_EMULATOR();
    struct wc_store *s = open_store();
    struct ct_err err = {0};
    struct wc_family_desc f;
    wc_family_desc_init(&f, "f");
    f.versions = 3;
    struct wc_table *t = new_table(s, "edges1", &f, 1, NULL, 0);
    const int64_t max_ms = INT64_MAX / 1000;
    put(t, "r", "f", "q", "top", max_ms);
    put(t, "r", "f", "q", "below", max_ms - 1);
    struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("q"), wc_bytes_str("over"),
                            max_ms + 1};
    struct wc_row_mutation rm = {wc_bytes_str("r"), &m, 1};
    assert_int_equal(wc_mutate_row(t, &rm, WC_DURABILITY_USE_DEFAULT, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "timestamp"));
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.max_versions = 3;
    assert_scan(t, &o, "r/f:q@9223372036854775=top r/f:q@9223372036854774=below");
    /* a delete of exactly the top version, then of the latest */
    struct wc_mutation d = {WC_OP_DELETE_VERSION, wc_bytes_str("f"), wc_bytes_str("q"),
                            wc_bytes_of(NULL, 0), max_ms};
    rm.mutations = &d;
    OK(wc_mutate_row(t, &rm, WC_DURABILITY_USE_DEFAULT, &err));
    assert_scan(t, &o, "r/f:q@9223372036854774=below");
    d.ts_ms = WC_TS_LATEST;
    OK(wc_mutate_row(t, &rm, WC_DURABILITY_USE_DEFAULT, &err));
    assert_scan(t, &o, "");
    size_t big_len = (10u << 20) + 1;
    uint8_t *big = calloc(1, big_len);
    assert_non_null(big);
    m.ts_ms = 1;
    m.value = wc_bytes_of(big, big_len);
    rm.mutations = &m;
    assert_int_equal(wc_mutate_row(t, &rm, WC_DURABILITY_USE_DEFAULT, &err), CT_EINVAL);
    free(big);
    end_test(s, t, "edges1");
}

/* KEEP_DELETED_CELLS needs delete markers: refused at create and alter, nothing changed. */
static void test_keep_deleted_cells_is_refused(void **state)
{
    (void)state;
    SKIP_WITHOUT_EMULATOR();
    struct wc_store *s = open_store();
    struct ct_err err = {0};
    struct wc_family_desc f;
    wc_family_desc_init(&f, "f");
    f.keep_deleted = WC_KEEP_DELETED_TRUE;
    struct wc_table_desc d;
    wc_table_desc_init(&d, "kdc1");
    d.families = &f;
    d.nfamilies = 1;
    assert_int_equal(wc_table_create(s, &d, NULL, 0, &err), CT_EUNSUPPORTED);
    assert_non_null(strstr(err.msg, "KEEP_DELETED_CELLS"));
    assert_int_equal(wc_table_exists(s, "kdc1", &err), CT_NOTFOUND);
    f.keep_deleted = WC_KEEP_DELETED_FALSE;
    OK(wc_table_create(s, &d, NULL, 0, &err));
    f.keep_deleted = WC_KEEP_DELETED_TTL;
    f.versions = 4;
    assert_int_equal(wc_table_alter(s, &d, &err), CT_EUNSUPPORTED);
    struct wc_table_desc *got;
    OK(wc_table_describe(s, "kdc1", &got, &err));
    assert_int_equal(got->families[0].keep_deleted, WC_KEEP_DELETED_FALSE);
    assert_int_equal(got->families[0].versions, 1);
    wc_table_desc_free(got);
    drop_table(s, "kdc1");
    wc_close(s);
}

/* ---- read-dependent deletes under concurrent writers ------------------------------------ */

struct deleter {
    struct wc_table *t;
    struct wc_mutation m; /* the delete to repeat */
    int times;            /* > 0: exactly this many; 0: until *stop */
    atomic_int *stop;
    atomic_int *pause;  /* NULL, or: while set, the deleter waits between deletes ... */
    atomic_int *paused; /* ... and says so here */
    /* as a check-and-mutate on g:lock == "held" (which always holds). In another family than
     * the raced columns: the emulator's reads of a family can be torn while a column of it is
     * added or removed (see pair_writer), and the check is re-read after a conflict */
    bool via_check;
    int done;
    int conflicts; /* CT_ECONFLICT: gave up after repeated concurrent changes (allowed) */
    int failures;
    char msg[256];
};

static void sleep_ms(int ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static void *deleter_main(void *arg)
{
    struct deleter *d = arg;
    struct wc_row_mutation rm = {wc_bytes_str("r"), &d->m, 1};
    /* bounded by count, or by the writer's end (at most 100000 rounds) */
    for (int i = 0; d->times ? i < d->times : !atomic_load(d->stop) && i < 100000; i++) {
        if (d->pause && atomic_load(d->pause)) {
            atomic_store(d->paused, 1);
            for (int w = 0; w < 10000 && atomic_load(d->pause) && !atomic_load(d->stop); w++)
                sleep_ms(1); /* at most ~10 s */
            atomic_store(d->paused, 0);
            continue;
        }
        struct ct_err err = {0};
        int rc;
        if (d->via_check) {
            struct wc_bytes held = wc_bytes_str("held");
            bool applied = false;
            rc = wc_check_and_mutate(d->t, rm.row, wc_bytes_str("g"), wc_bytes_str("lock"), &held,
                                     &rm, WC_DURABILITY_USE_DEFAULT, &applied, &err);
            if (rc == CT_OK && !applied)
                rc = ct_err_set(&err, CT_EIO, "check-and-mutate on a holding check not applied");
        } else {
            rc = wc_mutate_row(d->t, &rm, WC_DURABILITY_USE_DEFAULT, &err);
        }
        if (rc == CT_ECONFLICT) {
            d->conflicts++;
        } else if (rc != CT_OK) {
            if (!d->failures++)
                snprintf(d->msg, sizeof(d->msg), "%s", err.msg);
        } else {
            d->done++;
        }
    }
    return NULL;
}

/* Versions of r f:a, oldest first, as "1,2,3". */
static void versions_text(struct wc_table *t, char *out, size_t size)
{
    struct ct_err err = {0};
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.max_versions = 100000;
    struct wc_result res;
    OK(wc_get(t, wc_bytes_str("r"), &o, &res, &err));
    size_t pos = 0;
    out[0] = 0;
    for (size_t i = res.row.ncells; i-- > 0 && pos + 24 < size;)
        pos += (size_t)snprintf(out + pos, size - pos, "%s%lld", pos ? "," : "",
                                (long long)res.row.cells[i].ts_ms);
    wc_result_release(&res);
}

struct version_writer {
    struct wc_table *t;
    int n;
    int64_t first_ts;
    int failures;
    char msg[256];
};

static void *version_writer_main(void *arg)
{
    struct version_writer *w = arg;
    for (int i = 0; i < w->n; i++) {
        struct ct_err err = {0};
        struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("a"), wc_bytes_str("w"),
                                w->first_ts + i};
        struct wc_row_mutation rm = {wc_bytes_str("r"), &m, 1};
        if (wc_mutate_row(w->t, &rm, WC_DURABILITY_USE_DEFAULT, &err) != CT_OK && !w->failures++)
            snprintf(w->msg, sizeof(w->msg), "%s", err.msg);
    }
    return NULL;
}

/* Four threads delete the latest version of one column 30 times each while a fifth adds 60 newer
 * versions: every delete removes exactly one version (a read-then-delete loses deletes when two
 * threads read the same latest), so 160 + 60 - 120 versions remain, the 40 oldest among them
 * (120 deletes of the newest cannot reach them). */
static void test_concurrent_delete_latest_removes_one_version_each(void **state)
{
    (void)state;
    SKIP_WITHOUT_EMULATOR();
    struct wc_store *s = open_store();
    struct ct_err err = {0};
    struct wc_family_desc f;
    wc_family_desc_init(&f, "f");
    f.versions = 1000;
    struct wc_table *t = new_table(s, "dlatest", &f, 1, NULL, 0);
    enum {
        NT = 4,
        EACH = 30,
        NV = 160,
        NW = 60
    };
    struct wc_mutation puts[NV];
    for (int i = 0; i < NV; i++)
        puts[i] = (struct wc_mutation){WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("a"),
                                       wc_bytes_str("v"), i + 1};
    struct wc_row_mutation prm = {wc_bytes_str("r"), puts, NV};
    OK(wc_mutate_row(t, &prm, WC_DURABILITY_USE_DEFAULT, &err));
    struct deleter d[NT];
    pthread_t th[NT], tw;
    struct version_writer vw = {t, NW, 10001, 0, ""};
    assert_int_equal(pthread_create(&tw, NULL, version_writer_main, &vw), 0);
    for (int i = 0; i < NT; i++) {
        d[i] = (struct deleter){.t = t,
                                .m = {WC_OP_DELETE_VERSION, wc_bytes_str("f"), wc_bytes_str("a"),
                                      wc_bytes_of(NULL, 0), WC_TS_LATEST},
                                .times = EACH};
        assert_int_equal(pthread_create(&th[i], NULL, deleter_main, &d[i]), 0);
    }
    for (int i = 0; i < NT; i++) {
        pthread_join(th[i], NULL);
        if (d[i].failures || d[i].conflicts)
            fail_msg("deleter %d: %d failures, %d conflicts: %s", i, d[i].failures, d[i].conflicts,
                     d[i].msg);
    }
    pthread_join(tw, NULL);
    if (vw.failures)
        fail_msg("writer: %d failures: %s", vw.failures, vw.msg);
    char out[8192], want[4096];
    versions_text(t, out, sizeof(out));
    size_t pos = 0, count = *out != 0;
    for (const char *c = out; *c; c++)
        count += *c == ',';
    assert_int_equal(count, NV + NW - NT * EACH);
    for (int v = 1; v <= NV - NT * EACH; v++)
        pos += (size_t)snprintf(want + pos, sizeof(want) - pos, "%d,", v);
    if (strncmp(out, want, pos) != 0)
        fail_msg("the oldest versions went: %s", out);
    end_test(s, t, "dlatest");
}

/* A writer puts {a@T = i, n<i>@T = i} in one row mutation, while another thread repeats a
 * delete that covers T. Each delete must be atomic against each write: whenever some n<j> is
 * visible, `a` (written with every n<j>) must be too. A delete that reads the columns first and
 * deletes them later removes `a` of a write that landed in between and leaves its n<i>.
 *
 * After each write the writer pauses the deleter (its delete in flight, the one that may race
 * with the write, completes first) and then reads: the emulator's reads can be torn while a
 * column of the family is added or removed (the row copy a read works on shares the family's
 * column-name array, which writes and deletes change in place), so the check reads a quiet row. */
struct pair_writer {
    struct wc_table *t;
    int64_t ts;
    int rounds;
    atomic_int *stop, *pause, *paused;
    int violations, failures;
    char msg[256];
};

static void *pair_writer_main(void *arg)
{
    struct pair_writer *w = arg;
    for (int i = 0; i < w->rounds; i++) {
        char q[32], v[32];
        snprintf(q, sizeof(q), "n%05d", i);
        snprintf(v, sizeof(v), "%d", i);
        struct wc_mutation m[2] = {
            {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("a"), wc_bytes_str(v), w->ts},
            {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str(q), wc_bytes_str(v), w->ts},
        };
        struct wc_row_mutation rm = {wc_bytes_str("r"), m, 2};
        struct ct_err err = {0};
        if (wc_mutate_row(w->t, &rm, WC_DURABILITY_USE_DEFAULT, &err) != CT_OK) {
            if (!w->failures++)
                snprintf(w->msg, sizeof(w->msg), "%s", err.msg);
            continue;
        }
        atomic_store(w->pause, 1);
        for (int k = 0; k < 10000 && !atomic_load(w->paused); k++)
            sleep_ms(1); /* at most ~10 s */
        if (!atomic_load(w->paused)) {
            if (!w->failures++)
                snprintf(w->msg, sizeof(w->msg), "the deleter did not pause");
            atomic_store(w->pause, 0);
            break;
        }
        struct wc_scan_options o;
        wc_scan_options_init(&o);
        o.tmin_ms = w->ts;
        o.tmax_ms = w->ts + 1;
        struct wc_result res;
        int rc = wc_get(w->t, wc_bytes_str("r"), &o, &res, &err);
        atomic_store(w->pause, 0);
        for (int k = 0; k < 10000 && atomic_load(w->paused); k++)
            sleep_ms(1); /* let it run again before the next write */
        if (rc != CT_OK) {
            if (!w->failures++)
                snprintf(w->msg, sizeof(w->msg), "%s", err.msg);
            continue;
        }
        bool has_a = false, has_n = false;
        for (size_t k = 0; k < res.row.ncells; k++) {
            struct wc_bytes cq = res.row.cells[k].qualifier;
            if (cq.len == 1 && cq.data[0] == 'a')
                has_a = true;
            else if (cq.len && cq.data[0] == 'n')
                has_n = true;
        }
        wc_result_release(&res);
        if (has_n && !has_a)
            w->violations++;
    }
    atomic_store(w->stop, 1);
    return NULL;
}

static void run_pair_race(struct wc_table *t, enum wc_mutation_op op, int64_t delete_ts,
                          int64_t write_ts, bool via_check, int *deletes_done)
{
    atomic_int stop = 0, pause = 0, paused = 0;
    struct pair_writer w = {t, write_ts, 300, &stop, &pause, &paused, 0, 0, ""};
    struct deleter d = {
        .t = t,
        .m = {op, wc_bytes_str("f"), wc_bytes_of(NULL, 0), wc_bytes_of(NULL, 0), delete_ts},
        .stop = &stop,
        .pause = &pause,
        .paused = &paused,
        .via_check = via_check,
    };
    pthread_t tw, td;
    assert_int_equal(pthread_create(&td, NULL, deleter_main, &d), 0);
    assert_int_equal(pthread_create(&tw, NULL, pair_writer_main, &w), 0);
    pthread_join(tw, NULL);
    pthread_join(td, NULL);
    if (w.failures)
        fail_msg("writer: %d failures: %s", w.failures, w.msg);
    if (d.failures)
        fail_msg("deleter: %d failures: %s", d.failures, d.msg);
    print_message("%d writes, %d deletes (%d gave up on conflicts), %d half-deleted writes seen\n",
                  w.rounds, d.done, d.conflicts, w.violations);
    assert_int_equal(w.violations, 0);
    *deletes_done = d.done;
}

static void test_family_deletes_are_atomic_against_a_concurrent_writer(void **state)
{
    (void)state;
    SKIP_WITHOUT_EMULATOR();
    struct wc_store *s = open_store();
    struct wc_family_desc f[2];
    wc_family_desc_init(&f[0], "f");
    f[0].versions = 5;
    wc_family_desc_init(&f[1], "g");
    struct wc_table *t = new_table(s, "dpair", f, 2, NULL, 0);
    int done = 0;
    /* DeleteFamilyVersion at exactly the writer's timestamp */
    run_pair_race(t, WC_OP_DELETE_FAMILY_VERSION, 5000, 5000, false, &done);
    assert_true(done > 0);
    /* the same inside a check-and-mutate whose check always holds */
    put(t, "r", "g", "lock", "held", 1);
    run_pair_race(t, WC_OP_DELETE_FAMILY_VERSION, 5000, 5000, true, &done);
    assert_true(done > 0);
    /* DeleteFamily <= T while a cell newer than T exists: the column-by-column path */
    put(t, "r", "f", "future", "stays", 9000);
    run_pair_race(t, WC_OP_DELETE_FAMILY, 6000, 5000, false, &done);
    assert_true(done > 0);
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.tmin_ms = 9000;
    assert_scan(t, &o, "r/f:future@9000=stays");
    end_test(s, t, "dpair");
}

/* A DeleteFamilyVersion over more columns than one request's predicate may name is sent in
 * qualifier-range steps: every column loses exactly its cell at T. */
static void test_family_version_delete_over_thousands_of_columns(void **state)
{
    (void)state;
    SKIP_WITHOUT_EMULATOR();
    struct wc_store *s = open_store();
    struct ct_err err = {0};
    struct wc_family_desc f[2];
    wc_family_desc_init(&f[0], "f");
    f[0].versions = 5;
    wc_family_desc_init(&f[1], "g");
    struct wc_table *t = new_table(s, "dwide", f, 2, NULL, 0);
    enum {
        NC = 2500
    };
    static char quals[NC][16];
    static struct wc_mutation m[2 * NC + 1];
    for (int i = 0; i < NC; i++) {
        snprintf(quals[i], sizeof(quals[i]), "c%05d", i);
        m[2 * i] = (struct wc_mutation){WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str(quals[i]),
                                        wc_bytes_str("x"), 5};
        m[2 * i + 1] = (struct wc_mutation){WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str(quals[i]),
                                            wc_bytes_str("y"), 6};
    }
    m[2 * NC] =
        (struct wc_mutation){WC_OP_PUT, wc_bytes_str("g"), wc_bytes_str("k"), wc_bytes_str("z"), 5};
    struct wc_row_mutation rm = {wc_bytes_str("r"), m, 2 * NC + 1};
    OK(wc_mutate_row(t, &rm, WC_DURABILITY_USE_DEFAULT, &err));
    struct wc_mutation dm = {WC_OP_DELETE_FAMILY_VERSION, wc_bytes_str("f"), wc_bytes_of(NULL, 0),
                             wc_bytes_of(NULL, 0), 5};
    struct wc_row_mutation drm = {wc_bytes_str("r"), &dm, 1};
    OK(wc_mutate_row(t, &drm, WC_DURABILITY_USE_DEFAULT, &err));
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.max_versions = 5;
    struct wc_result res;
    OK(wc_get(t, wc_bytes_str("r"), &o, &res, &err));
    size_t at5 = 0, at6 = 0, other = 0;
    for (size_t i = 0; i < res.row.ncells; i++) {
        const struct wc_cell *c = &res.row.cells[i];
        if (c->family.len == 1 && c->family.data[0] == 'g')
            other++;
        else if (c->ts_ms == 5)
            at5++;
        else if (c->ts_ms == 6)
            at6++;
    }
    wc_result_release(&res);
    assert_int_equal(at5, 0);
    assert_int_equal(at6, NC);
    assert_int_equal(other, 1);
    end_test(s, t, "dwide");
}

struct worker {
    struct wc_table *t;
    int id;
    int failures;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < 100; i++) {
        char row[32], val[32];
        snprintf(row, sizeof(row), "w%d-%03d", w->id, i);
        snprintf(val, sizeof(val), "v%d", i);
        struct ct_err err = {0};
        struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("q"), wc_bytes_str(val),
                                1000 + i};
        struct wc_row_mutation rm = {wc_bytes_str(row), &m, 1};
        int64_t n = 0;
        struct wc_scan_options o;
        wc_scan_options_init(&o);
        struct wc_result res;
        if (wc_mutate_row(w->t, &rm, WC_DURABILITY_USE_DEFAULT, &err) != CT_OK ||
            wc_increment(w->t, wc_bytes_str("counter"), wc_bytes_str("f"), wc_bytes_str("n"), 1,
                         WC_DURABILITY_USE_DEFAULT, &n, &err) != CT_OK ||
            wc_get(w->t, wc_bytes_str(row), &o, &res, &err) != CT_OK) {
            w->failures++;
            continue;
        }
        if (res.row.ncells != 1 || res.row.cells[0].value.len != strlen(val) ||
            memcmp(res.row.cells[0].value.data, val, strlen(val)))
            w->failures++;
        wc_result_release(&res);
    }
    return NULL;
}

static void test_threads_share_one_store_and_handle(void **state)
{
    (void)state;
    SKIP_WITHOUT_EMULATOR();
    struct wc_store *s = open_store();
    struct ct_err err = {0};
    struct wc_family_desc f;
    wc_family_desc_init(&f, "f");
    struct wc_table *t = new_table(s, "threads1", &f, 1, NULL, 0);
    enum {
        NT = 4
    };
    struct worker w[NT];
    pthread_t th[NT];
    for (int i = 0; i < NT; i++) {
        w[i] = (struct worker){t, i, 0};
        assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
    }
    for (int i = 0; i < NT; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].failures, 0);
    }
    int64_t n = 0;
    OK(wc_increment(t, wc_bytes_str("counter"), wc_bytes_str("f"), wc_bytes_str("n"), 0,
                    WC_DURABILITY_USE_DEFAULT, &n, &err));
    assert_true(n == NT * 100); /* every increment counted once */
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.row_prefix = wc_bytes_str("w");
    struct wc_scanner *sc;
    OK(wc_scanner_open(t, &o, &sc, &err));
    struct wc_row r;
    int rows = 0;
    while (wc_scanner_next(sc, &r, &err) == CT_OK)
        rows++;
    wc_scanner_close(sc);
    assert_int_equal(rows, NT * 100);
    end_test(s, t, "threads1");
}

/* ---- a loopback proxy that cuts its first connection once armed ---------------------------- */

struct proxy {
    int listen_fd;
    int port;
    struct sockaddr_in upstream;
    atomic_int armed;    /* bytes to let through (server to client) before cutting; 0 = off */
    atomic_int armed_up; /* the same for client-to-server bytes */
    atomic_int cuts;
    atomic_int stop;
    pthread_t thread;
};

static void *proxy_conn(void *arg);

struct proxy_pair {
    struct proxy *p;
    int client, server;
};

static void *proxy_main(void *arg)
{
    struct proxy *p = arg;
    while (!atomic_load(&p->stop)) {
        struct pollfd pfd = {p->listen_fd, POLLIN, 0};
        if (poll(&pfd, 1, 100) <= 0)
            continue;
        int c = accept(p->listen_fd, NULL, NULL);
        if (c < 0)
            continue;
        int u = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(u, (struct sockaddr *)&p->upstream, sizeof(p->upstream)) != 0) {
            close(c);
            close(u);
            continue;
        }
        struct proxy_pair *pp = malloc(sizeof(*pp));
        pp->p = p;
        pp->client = c;
        pp->server = u;
        pthread_t th;
        pthread_create(&th, NULL, proxy_conn, pp);
        pthread_detach(th);
    }
    return NULL;
}

static void *proxy_conn(void *arg)
{
    struct proxy_pair *pp = arg;
    struct proxy *p = pp->p;
    char buf[16384];
    long passed_since_armed = 0, passed_up = 0;
    for (int idle = 0; idle < 600 && !atomic_load(&p->stop);) {
        struct pollfd fds[2] = {{pp->client, POLLIN, 0}, {pp->server, POLLIN, 0}};
        int n = poll(fds, 2, 100);
        if (n <= 0) {
            idle++;
            continue;
        }
        idle = 0;
        if (fds[0].revents) {
            ssize_t r = read(pp->client, buf, sizeof(buf));
            if (r <= 0 || write(pp->server, buf, (size_t)r) != r)
                break;
            int armed = atomic_load(&p->armed_up);
            if (armed) {
                passed_up += r;
                if (passed_up > armed) { /* cut while the client is still sending */
                    atomic_store(&p->armed_up, 0);
                    atomic_fetch_add(&p->cuts, 1);
                    break;
                }
            }
        }
        if (fds[1].revents) {
            ssize_t r = read(pp->server, buf, sizeof(buf));
            if (r <= 0 || write(pp->client, buf, (size_t)r) != r)
                break;
            int armed = atomic_load(&p->armed);
            if (armed) {
                passed_since_armed += r;
                if (passed_since_armed > armed) { /* cut this connection mid-stream, once */
                    atomic_store(&p->armed, 0);
                    atomic_fetch_add(&p->cuts, 1);
                    break;
                }
            }
        }
    }
    close(pp->client);
    close(pp->server);
    free(pp);
    return NULL;
}

static void test_scan_and_batch_survive_connection_drops(void **state)
{
    (void)state;
    SKIP_WITHOUT_EMULATOR();
    struct proxy p;
    memset(&p, 0, sizeof(p));
    p.upstream.sin_family = AF_INET;
    p.upstream.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    p.upstream.sin_port = htons((uint16_t)atoi(strchr(emu_addr, ':') + 1));
    p.listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(p.listen_fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(p.listen_fd, 16), 0);
    socklen_t al = sizeof(a);
    getsockname(p.listen_fd, (struct sockaddr *)&a, &al);
    p.port = ntohs(a.sin_port);
    pthread_create(&p.thread, NULL, proxy_main, &p);
    char proxied[64];
    snprintf(proxied, sizeof(proxied), "127.0.0.1:%d", p.port);
    setenv("BIGTABLE_EMULATOR_HOST", proxied, 1);

    struct wc_store *s = open_store();
    struct ct_err err = {0};
    struct wc_family_desc f;
    wc_family_desc_init(&f, "f");
    struct wc_table *t = new_table(s, "retry1", &f, 1, NULL, 0);
    enum {
        NROWS = 3000
    };
    static char value[1000];
    memset(value, 'x', sizeof(value) - 1);
    struct wc_mutation *muts = malloc(NROWS * sizeof(*muts));
    struct wc_row_mutation *rows = malloc(NROWS * sizeof(*rows));
    char(*keys)[16] = malloc(NROWS * sizeof(*keys));
    for (int i = 0; i < NROWS; i++) {
        snprintf(keys[i], sizeof(keys[i]), "r%05d", i);
        muts[i] = (struct wc_mutation){WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("q"),
                                       wc_bytes_str(value), 1000};
        rows[i] = (struct wc_row_mutation){wc_bytes_str(keys[i]), &muts[i], 1};
    }
    OK(wc_mutate_batch(t, rows, NROWS, WC_DURABILITY_USE_DEFAULT, &err));
    /* runs 2 and 3 read four row ranges in one ReadRows, cut inside the third one they visit
     * (forward [700, 2000) after 200 rows, reversed the same range after 300): the retried
     * request must leave out the ranges already read and start the cut one after its last row */
    static const int rr_lo[4] = {0, 200, 700, 2500}, rr_hi[4] = {100, 300, 2000, 2600};
    char rr_keys[4][2][16];
    struct wc_row_range rr[4];
    int rr_rows[1800], nrr = 0;
    for (int i = 0; i < 4; i++) {
        snprintf(rr_keys[i][0], sizeof(rr_keys[i][0]), "r%05d", rr_lo[i]);
        snprintf(rr_keys[i][1], sizeof(rr_keys[i][1]), "r%05d", rr_hi[i]);
        rr[i].start = wc_bytes_str(rr_keys[i][0]);
        rr[i].stop = wc_bytes_str(rr_keys[i][1]);
        for (int k = rr_lo[i]; k < rr_hi[i]; k++)
            rr_rows[nrr++] = k;
    }
    for (int run = 0; run < 4; run++) {
        bool rev = run & 1, multi = run >= 2;
        atomic_store(&p.armed, 400000); /* ~400 rows into a ~3 MB (~1.8 MB) answer */
        struct wc_scan_options o;
        wc_scan_options_init(&o);
        o.reversed = rev;
        if (multi) {
            o.ranges = rr;
            o.nranges = 4;
        }
        int total = multi ? nrr : NROWS;
        struct wc_scanner *sc;
        OK(wc_scanner_open(t, &o, &sc, &err));
        struct wc_row r;
        int n = 0, rc;
        while ((rc = wc_scanner_next(sc, &r, &err)) == CT_OK) {
            assert_true(n < total);
            int i = rev ? total - 1 - n : n;
            char want[16];
            snprintf(want, sizeof(want), "r%05d", multi ? rr_rows[i] : i);
            assert_memory_equal(r.key.data, want, 6); /* each row once, in order */
            n++;
        }
        if (rc != CT_NOTFOUND)
            fail_msg("scan failed: %s", err.msg);
        wc_scanner_close(sc);
        assert_int_equal(n, total);
        assert_int_equal(atomic_load(&p.cuts), run + 1); /* the cut really happened */
    }
    /* a batch whose connection is cut while it is being sent: only unanswered rows are
     * re-sent (timestamps are explicit, so re-sending is harmless) and every row lands */
    for (int i = 0; i < NROWS; i++)
        muts[i].ts_ms = 2000;
    atomic_store(&p.armed_up, 1000000); /* ~1 MB into a ~3 MB batch */
    OK(wc_mutate_batch(t, rows, NROWS, WC_DURABILITY_USE_DEFAULT, &err));
    assert_int_equal(atomic_load(&p.cuts), 5);
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.tmin_ms = 2000;
    struct wc_scanner *sc;
    OK(wc_scanner_open(t, &o, &sc, &err));
    struct wc_row r;
    int n = 0, rc;
    while ((rc = wc_scanner_next(sc, &r, &err)) == CT_OK) {
        assert_int_equal(r.ncells, 1);
        assert_true(r.cells[0].ts_ms == 2000);
        n++;
    }
    assert_int_equal(rc, CT_NOTFOUND);
    wc_scanner_close(sc);
    assert_int_equal(n, NROWS);
    free(muts);
    free(rows);
    free(keys);
    end_test(s, t, "retry1");
    atomic_store(&p.stop, 1);
    pthread_join(p.thread, NULL);
    close(p.listen_fd);
    setenv("BIGTABLE_EMULATOR_HOST", emu_addr, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_admin_round_trips_families_gc_rules_and_splits),
        cmocka_unit_test(test_namespaces_and_table_ids),
        cmocka_unit_test(test_scans_forward_reversed_prefix_limit_and_columns),
        cmocka_unit_test(test_versions_ttl_and_min_versions_apply_at_read),
        cmocka_unit_test(test_deletes_increment_and_check_and_mutate),
        cmocka_unit_test(test_large_batch_and_client_side_limits),
        cmocka_unit_test(test_threads_share_one_store_and_handle),
        cmocka_unit_test(test_timestamp_and_cell_size_edges),
        cmocka_unit_test(test_keep_deleted_cells_is_refused),
        cmocka_unit_test(test_concurrent_delete_latest_removes_one_version_each),
        cmocka_unit_test(test_family_deletes_are_atomic_against_a_concurrent_writer),
        cmocka_unit_test(test_family_version_delete_over_thousands_of_columns),
        cmocka_unit_test(test_scan_and_batch_survive_connection_drops),
    };
    return cmocka_run_group_tests(tests, emulator_start, emulator_stop);
}
