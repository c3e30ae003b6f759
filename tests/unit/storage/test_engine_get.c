/* test_engine_get.c - the engine's point read (wc_get through wc_backend_ops.get, storage/engine/
 * scan.c engine_get) against the generic path (a one-row scanner): random puts and every kind of
 * delete marker over rows, two families and four columns, with flushes, minor and major
 * compactions in between, and after each round every row read both ways under a set of read
 * options (versions, columns, time ranges, qualifier filters, TTL with MIN_VERSIONS, raw). The two
 * must agree cell for cell. A pass-through row filter sends wc_get down the generic path, and a
 * one-row scan is compared as well. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/wc.h"
#include "tests/lib/ctest.h"
#include "tests/lib/fixture.h"

static char *g_dir;
static struct wc_store *g_store;

static int setup(void **state)
{
    (void)state;
    g_store = fixture_history_open(&g_dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fixture_history_close(g_store, g_dir);
    return 0;
}

#define OUT_BYTES 16384

/* wc_get through the engine's point read, through the generic path, and a one-row scan. */
static void read_three(struct wc_table *t, const char *row, const struct wc_scan_options *base,
                       char *fast, char *generic, char *scan)
{
    struct ct_err err;
    struct wc_result r;
    fast[0] = generic[0] = scan[0] = 0;
    assert_int_equal(wc_get(t, wc_bytes_str(row), base, &r, &err), CT_OK);
    fixture_fmt_row(fast, OUT_BYTES, &r.row);
    wc_result_release(&r);

    struct wc_scan_options o = *base;
    o.row_filter = fixture_pass_all;
    assert_int_equal(wc_get(t, wc_bytes_str(row), &o, &r, &err), CT_OK);
    fixture_fmt_row(generic, OUT_BYTES, &r.row);
    wc_result_release(&r);

    char stop[64];
    size_t rl = strlen(row);
    memcpy(stop, row, rl);
    stop[rl] = 0;
    o = *base;
    o.start_row = wc_bytes_str(row);
    o.stop_row = wc_bytes_of(stop, rl + 1);
    struct wc_scanner *sc;
    assert_int_equal(wc_scanner_open(t, &o, &sc, &err), CT_OK);
    struct wc_row wr;
    int rc;
    while ((rc = wc_scanner_next(sc, &wr, &err)) == CT_OK)
        fixture_fmt_row(scan, OUT_BYTES, &wr);
    assert_int_equal(rc, CT_NOTFOUND);
    wc_scanner_close(sc);
}

static void test_point_read_equals_one_row_scan_under_random_history(void **state)
{
    (void)state;
    struct ct_err err;
    struct wc_table *t = fixture_history_table(g_store, "gt", "r1", WC_BLOOM_ROWCOL);
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    char fast[OUT_BYTES], generic[OUT_BYTES], scan[OUT_BYTES];
    size_t compared = 0, nonempty = 0;
    for (int round = 0; round < 12; round++) {
        fixture_history_write(t, &seed, round, 150, 20, "r%d", 7);
        if (round % 3 == 1)
            assert_int_equal(wc_table_flush(g_store, "gt", &err), CT_OK);
        if (round == 5)
            assert_int_equal(wc_table_compact(g_store, "gt", NULL, false, &err), CT_OK);
        if (round == 8)
            assert_int_equal(wc_table_compact(g_store, "gt", NULL, true, &err), CT_OK);

        struct wc_column cols[2];
        struct wc_column col_a = {wc_bytes_str("f"), wc_bytes_str("a"), true};
        for (int v = 0; v < 8; v++) {
            struct wc_scan_options o;
            bool shared = fixture_history_options(v, &o, cols); /* sets 0-4 */
            switch (shared ? -1 : v) {                          /* this test's own */
            case 5:
                o.has_qualifier_range = true;
                o.qualifier_min = wc_bytes_str("a");
                o.qualifier_min_inclusive = false;
                o.qualifier_max = wc_bytes_str("b");
                break;
            case 6:
                o.raw = true;
                o.max_versions = 10;
                break;
            case 7:
                o.columns = &col_a; /* one column: a ROWCOL bloom is asked for it */
                o.ncolumns = 1;
                o.max_versions = 3;
                break;
            default:
                break;
            }
            for (int r = 0; r < 20; r++) {
                char row[16];
                snprintf(row, sizeof row, "r%d", r);
                read_three(t, row, &o, fast, generic, scan);
                if (strcmp(fast, generic) != 0 || strcmp(fast, scan) != 0)
                    fail_msg("round %d options %d row %s:\n fast    %s\n generic %s\n scan    %s",
                             round, v, row, fast, generic, scan);
                compared++;
                nonempty += fast[0] != 0;
            }
        }
    }
    /* the history must have produced both empty and non-empty reads */
    assert_true(nonempty > compared / 4);
    assert_true(nonempty < compared);
    wc_table_close(t);
}

static void test_point_read_errors_match_the_scanner(void **state)
{
    (void)state;
    struct ct_err err;
    struct wc_family_desc fd;
    wc_family_desc_init(&fd, "f");
    struct wc_table_desc d;
    wc_table_desc_init(&d, "ge");
    d.families = &fd;
    d.nfamilies = 1;
    assert_int_equal(wc_table_create(g_store, &d, NULL, 0, &err), CT_OK);
    struct wc_table *t;
    assert_int_equal(wc_table_open(g_store, "ge", &t, &err), CT_OK);
    struct wc_result r;
    struct wc_scan_options o;
    wc_scan_options_init(&o);

    /* a missing row is an empty result, not an error */
    assert_int_equal(wc_get(t, wc_bytes_str("nope"), &o, &r, &err), CT_OK);
    assert_int_equal(r.row.ncells, 0);
    wc_result_release(&r);

    /* unknown family, bad time range, zero versions: the same errors on both paths */
    struct wc_column bad = {wc_bytes_str("zz"), wc_bytes_of(NULL, 0), false};
    for (int generic = 0; generic < 2; generic++) {
        wc_scan_options_init(&o);
        if (generic)
            o.row_filter = fixture_pass_all;
        o.columns = &bad;
        o.ncolumns = 1;
        assert_int_equal(wc_get(t, wc_bytes_str("r"), &o, &r, &err), CT_EINVAL);
        assert_non_null(strstr(err.msg, "Unknown column family zz"));
        o.ncolumns = 0;
        o.tmin_ms = 10;
        o.tmax_ms = 5;
        assert_int_equal(wc_get(t, wc_bytes_str("r"), &o, &r, &err), CT_EINVAL);
        o.tmin_ms = 0;
        o.tmax_ms = WC_TS_LATEST;
        o.max_versions = 0;
        assert_int_equal(wc_get(t, wc_bytes_str("r"), &o, &r, &err), CT_EINVAL);
    }

    /* a disabled table */
    assert_int_equal(wc_table_disable(g_store, "ge", &err), CT_OK);
    wc_scan_options_init(&o);
    assert_int_equal(wc_get(t, wc_bytes_str("r"), &o, &r, &err), CT_EBUSY);
    assert_non_null(strstr(err.msg, "disabled"));
    wc_table_close(t);
}

/* A column with many versions, some deleted, between two other columns, half in a file and half
 * in the memstore: reads skip the versions they do not want by seeking past the column after a
 * run of skipped cells (scan.c child_advance). The expected cells are written out by hand; the
 * reversed scan (which never seeks) must agree too. Fails if the seek lands inside the next
 * column or past it, or if a delete marker below the seek point is lost. */
static void test_reads_skip_the_versions_of_a_long_column_exactly(void **state)
{
    (void)state;
    struct ct_err err;
    struct wc_family_desc fd;
    wc_family_desc_init(&fd, "f");
    fd.versions = 3;
    fd.blocksize = 1024;
    struct wc_table_desc d;
    wc_table_desc_init(&d, "gv");
    d.families = &fd;
    d.nfamilies = 1;
    d.compaction_enabled = false;
    assert_int_equal(wc_table_create(g_store, &d, NULL, 0, &err), CT_OK);
    struct wc_table *t;
    assert_int_equal(wc_table_open(g_store, "gv", &t, &err), CT_OK);
    /* column "a": 3 versions; "b": versions 1..40, version 39 and 35 deleted, everything up to
     * 10 deleted by a column marker; "c": 2 versions. Versions 1..20 are flushed to a file. */
    for (int ts = 1; ts <= 40; ts++) {
        char v[16];
        snprintf(v, sizeof(v), "v%d", ts);
        struct wc_mutation m[3];
        size_t n = 0;
        m[n++] = (struct wc_mutation){WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("b"),
                                      wc_bytes_str(v), ts};
        if (ts <= 3)
            m[n++] = (struct wc_mutation){WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("a"),
                                          wc_bytes_str(v), ts};
        if (ts <= 2)
            m[n++] = (struct wc_mutation){WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("c"),
                                          wc_bytes_str(v), ts};
        struct wc_row_mutation rm = {wc_bytes_str("r"), m, n};
        assert_int_equal(wc_mutate_row(t, &rm, WC_DURABILITY_SKIP_WAL, &err), CT_OK);
        if (ts == 20)
            assert_int_equal(wc_table_flush(g_store, "gv", &err), CT_OK);
    }
    struct wc_mutation del[3] = {
        {WC_OP_DELETE_VERSION, wc_bytes_str("f"), wc_bytes_str("b"), {NULL, 0}, 39},
        {WC_OP_DELETE_VERSION, wc_bytes_str("f"), wc_bytes_str("b"), {NULL, 0}, 35},
        {WC_OP_DELETE_COLUMN, wc_bytes_str("f"), wc_bytes_str("b"), {NULL, 0}, 10},
    };
    struct wc_row_mutation drm = {wc_bytes_str("r"), del, 3};
    assert_int_equal(wc_mutate_row(t, &drm, WC_DURABILITY_SKIP_WAL, &err), CT_OK);

    static const struct {
        uint32_t versions;
        int64_t tmin, tmax;
        const char *want;
    } cases[] = {
        {3, 0, WC_TS_LATEST,
         "r|f:a@3/4=v3 r|f:a@2/4=v2 r|f:a@1/4=v1 r|f:b@40/4=v40 r|f:b@38/4=v38 r|f:b@37/4=v37 "
         "r|f:c@2/4=v2 r|f:c@1/4=v1"},
        {1, 0, WC_TS_LATEST, "r|f:a@3/4=v3 r|f:b@40/4=v40 r|f:c@2/4=v2"},
        {3, 12, 37, "r|f:b@36/4=v36 r|f:b@34/4=v34 r|f:b@33/4=v33"},
        /* the flush kept b's 3 newest of 1..20 (VERSIONS applies at flush, as in HBase) */
        {3, 0, 20,
         "r|f:a@3/4=v3 r|f:a@2/4=v2 r|f:a@1/4=v1 r|f:b@19/4=v19 r|f:b@18/4=v18 "
         "r|f:c@2/4=v2 r|f:c@1/4=v1"},
        {3, 0, 18, "r|f:a@3/4=v3 r|f:a@2/4=v2 r|f:a@1/4=v1 r|f:c@2/4=v2 r|f:c@1/4=v1"},
    };
    char fast[OUT_BYTES], generic[OUT_BYTES], scan[OUT_BYTES], rev[OUT_BYTES];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct wc_scan_options o;
        wc_scan_options_init(&o);
        o.max_versions = cases[i].versions;
        o.tmin_ms = cases[i].tmin;
        o.tmax_ms = cases[i].tmax;
        read_three(t, "r", &o, fast, generic, scan);
        assert_string_equal(fast, cases[i].want);
        assert_string_equal(generic, cases[i].want);
        assert_string_equal(scan, cases[i].want);
        o.reversed = true;
        struct wc_scanner *sc;
        assert_int_equal(wc_scanner_open(t, &o, &sc, &err), CT_OK);
        struct wc_row wr;
        rev[0] = 0;
        while (wc_scanner_next(sc, &wr, &err) == CT_OK)
            fixture_fmt_row(rev, OUT_BYTES, &wr);
        wc_scanner_close(sc);
        assert_string_equal(rev, cases[i].want);
    }

    /* the empty-qualifier column holds the family markers among its puts: a long run of its
     * versions is never skipped, so a DeleteFamily below them still masks column "x" */
    for (int ts = 100; ts <= 140; ts++) {
        struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str(""), wc_bytes_str("e"),
                                ts};
        struct wc_row_mutation rm = {wc_bytes_str("fm"), &m, 1};
        assert_int_equal(wc_mutate_row(t, &rm, WC_DURABILITY_SKIP_WAL, &err), CT_OK);
    }
    struct wc_mutation fm[2] = {
        {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("x"), wc_bytes_str("gone"), 50},
        {WC_OP_DELETE_FAMILY, wc_bytes_str("f"), {NULL, 0}, {NULL, 0}, 60},
    };
    struct wc_row_mutation frm = {wc_bytes_str("fm"), fm, 2};
    assert_int_equal(wc_mutate_row(t, &frm, WC_DURABILITY_SKIP_WAL, &err), CT_OK);
    struct wc_scan_options fo;
    wc_scan_options_init(&fo);
    read_three(t, "fm", &fo, fast, generic, scan);
    assert_string_equal(fast, "fm|f:@140/4=e");
    assert_string_equal(generic, "fm|f:@140/4=e");
    assert_string_equal(scan, "fm|f:@140/4=e");

    /* a counter incremented many times reads back its latest value */
    int64_t v = 0;
    for (int i = 0; i < 300; i++)
        assert_int_equal(wc_increment(t, wc_bytes_str("ctr"), wc_bytes_str("f"), wc_bytes_str("n"),
                                      2, WC_DURABILITY_SKIP_WAL, &v, &err),
                         CT_OK);
    assert_int_equal(v, 600);
    wc_table_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_point_read_equals_one_row_scan_under_random_history),
        cmocka_unit_test(test_point_read_errors_match_the_scanner),
        cmocka_unit_test(test_reads_skip_the_versions_of_a_long_column_exactly),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
