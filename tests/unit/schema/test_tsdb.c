/* test_tsdb.c - the tsdb handle on a real store: table creation with families and salt
 * pre-splits, the recorded key layout, series resolution with OpenTSDB's messages, batched
 * writes read back through every layout, the compaction hook end to end in both formats (ms/s
 * mixed, duplicates with fix_duplicates off and on, incomplete hours left alone), and
 * annotations. Skipped when the embedded engine is not in this build. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "schema/tsdb.h"
#include "storage/clock.h"
#include "tests/lib/ctest.h"

#define BASE    1356998400LL /* an hour long past: compaction may merge it */
#define BASE_MS (BASE * 1000)

struct fixture {
    char *dir;
    struct wc_store *s;
    struct tsdb *t;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    f->dir = ctest_mkdtemp();
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    tsdb_close(f->t);
    wc_close(f->s);
    ctest_rmdir(f->dir);
    free(f);
    unsetenv("CTSDB_NOW_MS");
    clock_reload();
    return 0;
}

static void open_store(struct fixture *f)
{
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = f->dir;
    struct ct_err err = {0};
    int rc = wc_open(&o, &f->s, &err);
    if (rc == CT_EUNSUPPORTED)
        skip();
    if (rc != CT_OK)
        fail_msg("wc_open: %s", err.msg);
}

static void open_tsdb(struct fixture *f, const struct tsdb_config *c)
{
    open_store(f);
    struct ct_err err = {0};
    if (tsdb_open(f->s, c, &f->t, &err) != CT_OK)
        fail_msg("tsdb_open: %s", err.msg);
}

static void test_create_tables_families_and_presplit(void **state)
{
    struct fixture *f = *state;
    open_store(f);
    struct tsdb_config c;
    tsdb_config_init(&c);
    c.layout.salt_width = 1;
    c.layout.salt_buckets = 8;
    c.regions_per_bucket = 2;
    c.ttl_s = 86400;
    c.bloom = WC_BLOOM_ROWCOL;
    struct ct_err err = {0};
    int created;
    assert_int_equal(tsdb_create_tables(f->s, &c, &created, &err), CT_OK);
    assert_int_equal(created, 3);
    assert_int_equal(tsdb_create_tables(f->s, &c, &created, &err), CT_OK);
    assert_int_equal(created, 0);
    struct wc_table_desc *d;
    assert_int_equal(wc_table_describe(f->s, "tsdb", &d, &err), CT_OK);
    assert_int_equal(d->nfamilies, 1);
    assert_string_equal(d->families[0].name, "t");
    assert_int_equal(d->families[0].ttl_s, 86400);
    assert_int_equal(d->families[0].bloom, WC_BLOOM_ROWCOL);
    wc_table_desc_free(d);
    assert_int_equal(wc_table_describe(f->s, "tsdb-uid", &d, &err), CT_OK);
    assert_int_equal(d->nfamilies, 2);
    assert_string_equal(d->families[0].name, "id");
    assert_string_equal(d->families[1].name, "name");
    wc_table_desc_free(d);
    struct wc_region_info *ri;
    size_t n;
    assert_int_equal(wc_table_regions(f->s, "tsdb", &ri, &n, &err), CT_OK);
    assert_int_equal(n, 16);              /* 8 buckets x 2 */
    assert_int_equal(ri[2].start_len, 1); /* bucket 1 starts its own region */
    assert_int_equal(ri[2].start_key[0], 1);
    wc_region_info_free(ri, n);
    struct rowkey_layout l;
    assert_int_equal(tsdb_layout_stored(f->s, "tsdb-meta", &l, &err), CT_OK);
    assert_int_equal(l.salt_width, 1);
    assert_int_equal(l.salt_buckets, 8);
    /* opening with another layout given in the config is refused with both layouts named */
    c.layout.salt_buckets = 20;
    c.layout_given = true;
    assert_int_equal(tsdb_open(f->s, &c, &f->t, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "salt_buckets=8"));
    assert_non_null(strstr(err.msg, "salt_buckets=20"));
    assert_null(f->t);
    /* without a layout given, the recorded one is used */
    c.layout_given = false;
    assert_int_equal(tsdb_open(f->s, &c, &f->t, &err), CT_OK);
    assert_int_equal(tsdb_layout(f->t)->salt_buckets, 8);
}

static void test_series_resolution_messages(void **state)
{
    struct fixture *f = *state;
    struct tsdb_config c;
    tsdb_config_init(&c);
    c.auto_create_metrics = false;
    c.max_tags = 2;
    open_tsdb(f, &c);
    struct ct_err err = {0};
    uint8_t tsuid[ROWKEY_MAX_TSUID];
    size_t len;
    const char *k[3] = {"host", "dc", "rack"}, *v[3] = {"web01", "eu", "r1"};
    assert_int_equal(tsdb_series_resolve(f->t, "m", k, v, 1, tsuid, sizeof(tsuid), &len, &err),
                     CT_NOTFOUND);
    assert_string_equal(err.msg, "No such name for 'metrics': 'm'");
    uint64_t id;
    assert_int_equal(uid_assign_id(tsdb_uid(f->t), UID_METRIC, "m", 1, &id, &err), CT_OK);
    assert_int_equal(tsdb_series_resolve(f->t, "m", k, v, 0, tsuid, sizeof(tsuid), &len, &err),
                     CT_EINVAL);
    assert_string_equal(err.msg, "Need at least one tag (metric=m, tags={})");
    assert_int_equal(tsdb_series_resolve(f->t, "m", k, v, 3, tsuid, sizeof(tsuid), &len, &err),
                     CT_EINVAL);
    assert_non_null(strstr(err.msg, "Too many tags: 3 maximum allowed: 2"));
    const char *bad[1] = {"we b"};
    assert_int_equal(tsdb_series_resolve(f->t, "m", k, bad, 1, tsuid, sizeof(tsuid), &len, &err),
                     CT_EINVAL);
    assert_string_equal(err.msg,
                        "Invalid tag value with key [host] (\"we b\"): illegal character:  ");
    assert_int_equal(tsdb_series_resolve(f->t, "m", k, v, 2, tsuid, sizeof(tsuid), &len, &err),
                     CT_OK);
    assert_int_equal(len, 3 + 2 * 6);
    /* tags come out sorted by tagk uid: host (1) before dc (2) */
    assert_int_equal(tsuid[5], 1);
    assert_int_equal(tsuid[11], 2);
}

/* Reads a series' hour row and decodes its points. */
static size_t read_hour(struct fixture *f, const uint8_t *tsuid, size_t len, int64_t base,
                        struct dpcodec_point *out, size_t cap, size_t *ncells)
{
    uint8_t row[ROWKEY_MAX_BYTES];
    size_t rl = rowkey_encode(tsdb_layout(f->t), tsuid, len, base, row);
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_result r;
    struct ct_err err = {0};
    assert_int_equal(wc_get(tsdb_data_table(f->t), wc_bytes_of(row, rl), &o, &r, &err), CT_OK);
    size_t n = 0, dups;
    assert_int_equal(dpcodec_row_decode(base, r.row.cells, r.row.ncells, out, cap, &n, &dups, &err),
                     CT_OK);
    if (ncells)
        *ncells = r.row.ncells;
    wc_result_release(&r);
    return n;
}

/* Writes one point of series tsuid at BASE_MS. */
static void write_point(struct fixture *f, const uint8_t *tsuid, size_t len, int64_t v)
{
    struct tsdb_batch *b;
    struct ct_err err = {0};
    assert_int_equal(tsdb_batch_new(4, &b, &err), CT_OK);
    struct dpcodec_point p = dpcodec_point_int(BASE_MS, false, v);
    assert_int_equal(tsdb_batch_add(b, tsdb_layout(f->t), tsuid, len, &p, &err), CT_OK);
    assert_int_equal(tsdb_batch_write(f->t, b, WC_DURABILITY_USE_DEFAULT, &err), CT_OK);
    tsdb_batch_free(b);
}

/* The row keys of the data table, in order, as count and first key's length. */
static size_t data_rows(struct fixture *f, size_t *first_len, uint8_t *first_byte)
{
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_scanner *sc;
    struct ct_err err = {0};
    assert_int_equal(wc_scanner_open(tsdb_data_table(f->t), &o, &sc, &err), CT_OK);
    size_t n = 0;
    struct wc_row row;
    while (wc_scanner_next(sc, &row, &err) == CT_OK) {
        if (n++ == 0) {
            *first_len = row.key.len;
            *first_byte = row.key.data[0];
        }
    }
    wc_scanner_close(sc);
    return n;
}

static void reopen(struct fixture *f, const struct tsdb_config *c, int want, struct ct_err *err)
{
    tsdb_close(f->t);
    f->t = NULL;
    assert_int_equal(tsdb_open(f->s, c, &f->t, err), want);
}

static void test_default_layout_is_salted_and_presplit(void **state)
{
    struct fixture *f = *state;
    struct tsdb_config c;
    tsdb_config_init(&c);
    assert_int_equal(c.layout.salt_width, 1);
    assert_int_equal(c.layout.salt_buckets, atoi(TSDB_DEFAULT_SALT_BUCKETS));
    assert_false(c.layout_given);
    open_tsdb(f, &c);
    struct ct_err err = {0};
    struct wc_region_info *ri;
    size_t n;
    assert_int_equal(wc_table_regions(f->s, "tsdb", &ri, &n, &err), CT_OK);
    assert_int_equal(n, (size_t)atoi(TSDB_DEFAULT_SALT_BUCKETS)); /* one region per bucket */
    for (size_t i = 1; i < n; i++) {
        assert_int_equal(ri[i].start_len, 1);
        assert_int_equal(ri[i].start_key[0], i);
    }
    wc_region_info_free(ri, n);
    struct rowkey_layout l;
    assert_int_equal(tsdb_layout_stored(f->s, "tsdb-meta", &l, &err), CT_OK);
    assert_int_equal(l.salt_width, 1);
    assert_int_equal(l.salt_buckets, atoi(TSDB_DEFAULT_SALT_BUCKETS));
}

/* A store made unsalted (OpenTSDB's layout, one setting away) keeps being read and written
 * unsalted under the salted default, and a config that asks for salt is refused. */
static void test_unsalted_store_keeps_its_layout_under_the_salted_default(void **state)
{
    struct fixture *f = *state;
    struct tsdb_config c;
    tsdb_config_init(&c);
    struct ct_err err = {0};
    assert_int_equal(tsdb_config_set(&c, "tsd.storage.salt.width", "0", &err), CT_OK);
    assert_true(c.layout_given);
    open_tsdb(f, &c);
    uint8_t tsuid[ROWKEY_MAX_TSUID];
    size_t len;
    const char *k[1] = {"host"}, *v[1] = {"a"};
    assert_int_equal(tsdb_series_resolve(f->t, "m", k, v, 1, tsuid, sizeof(tsuid), &len, &err),
                     CT_OK);
    write_point(f, tsuid, len, 1);
    struct tsdb_config d; /* the default: salted */
    tsdb_config_init(&d);
    reopen(f, &d, CT_OK, &err);
    assert_int_equal(tsdb_layout(f->t)->salt_width, 0);
    write_point(f, tsuid, len, 2); /* the same unsalted row */
    struct dpcodec_point pts[4];
    assert_int_equal(read_hour(f, tsuid, len, BASE, pts, 4, NULL), 1);
    assert_int_equal(pts[0].i, 2);
    size_t flen = 0;
    uint8_t fb = 0xFF;
    assert_int_equal(data_rows(f, &flen, &fb), 1);
    assert_int_equal(flen, 4 + len); /* no salt byte */
    assert_int_equal(fb, tsuid[0]);
    /* asking for salt on it is refused, naming both layouts */
    assert_int_equal(tsdb_config_set(&d, "tsd.storage.salt.width", "1", &err), CT_OK);
    reopen(f, &d, CT_EINVAL, &err);
    assert_non_null(strstr(err.msg, "salt_width=0"));
    assert_non_null(strstr(err.msg, "salt_width=1"));
}

/* Tables made before the layout was recorded (or by OpenTSDB) are read unsalted, and a writable
 * open records that, not the salted default. */
static void test_store_without_layout_record_is_read_unsalted(void **state)
{
    struct fixture *f = *state;
    struct tsdb_config c;
    tsdb_config_init(&c);
    struct ct_err err = {0};
    assert_int_equal(tsdb_config_set(&c, "tsd.storage.salt.width", "0", &err), CT_OK);
    open_tsdb(f, &c);
    uint8_t tsuid[ROWKEY_MAX_TSUID];
    size_t len;
    const char *k[1] = {"host"}, *v[1] = {"a"};
    assert_int_equal(tsdb_series_resolve(f->t, "m", k, v, 1, tsuid, sizeof(tsuid), &len, &err),
                     CT_OK);
    write_point(f, tsuid, len, 7);
    /* remove the record, as an older build's store has none */
    struct wc_mutation m = {WC_OP_DELETE_ROW, wc_bytes_str(""), wc_bytes_str(""), wc_bytes_str(""),
                            WC_TS_LATEST};
    struct wc_row_mutation rm = {wc_bytes_of("\0ctsdb.layout", 13), &m, 1};
    assert_int_equal(
        wc_mutate_batch(tsdb_meta_table(f->t), &rm, 1, WC_DURABILITY_USE_DEFAULT, &err), CT_OK);
    struct rowkey_layout l;
    assert_int_equal(tsdb_layout_stored(f->s, "tsdb-meta", &l, &err), CT_NOTFOUND);
    struct tsdb_config d;
    tsdb_config_init(&d);
    d.read_only = true; /* first read-only: nothing is recorded */
    reopen(f, &d, CT_OK, &err);
    assert_int_equal(tsdb_layout(f->t)->salt_width, 0);
    struct dpcodec_point pts[4];
    assert_int_equal(read_hour(f, tsuid, len, BASE, pts, 4, NULL), 1);
    assert_int_equal(pts[0].i, 7);
    assert_int_equal(tsdb_layout_stored(f->s, "tsdb-meta", &l, &err), CT_NOTFOUND);
    d.read_only = false;
    reopen(f, &d, CT_OK, &err);
    assert_int_equal(tsdb_layout(f->t)->salt_width, 0);
    assert_int_equal(tsdb_layout_stored(f->s, "tsdb-meta", &l, &err), CT_OK);
    assert_int_equal(l.salt_width, 0);
}

static void write_hour(struct fixture *f, const uint8_t *tsuid, size_t len, bool with_dup)
{
    struct tsdb_batch *b;
    struct ct_err err = {0};
    assert_int_equal(tsdb_batch_new(4, &b, &err), CT_OK);
    for (int i = 0; i < 360; i++) {
        struct dpcodec_point p = i % 7 == 3
                                     ? dpcodec_point_int(BASE_MS + i * 10000LL + 250, true, i)
                                     : dpcodec_point_real(BASE_MS + i * 10000LL, false, i / 4.0);
        assert_int_equal(tsdb_batch_add(b, tsdb_layout(f->t), tsuid, len, &p, &err), CT_OK);
    }
    assert_int_equal(tsdb_batch_count(b), 360);
    assert_int_equal(tsdb_batch_write(f->t, b, WC_DURABILITY_USE_DEFAULT, &err), CT_OK);
    if (with_dup) {
        tsdb_batch_reset(b);
        /* the same second as point 1, written later with a ms qualifier and another value */
        struct dpcodec_point p = dpcodec_point_int(BASE_MS + 10000, true, 999);
        assert_int_equal(tsdb_batch_add(b, tsdb_layout(f->t), tsuid, len, &p, &err), CT_OK);
        assert_int_equal(tsdb_batch_write(f->t, b, WC_DURABILITY_USE_DEFAULT, &err), CT_OK);
    }
    tsdb_batch_free(b);
}

static void check_hour(const struct dpcodec_point *pts, size_t n, bool dup_applied)
{
    assert_int_equal(n, 360);
    for (int i = 0; i < 360; i++) {
        if (i == 1 && dup_applied) {
            assert_true(pts[i].type == DPCODEC_INT && pts[i].i == 999);
            continue;
        }
        if (i % 7 == 3) {
            assert_true(pts[i].ts_ms == BASE_MS + i * 10000LL + 250);
            assert_true(pts[i].type == DPCODEC_INT && pts[i].i == i && pts[i].ms);
        } else {
            assert_true(pts[i].ts_ms == BASE_MS + i * 10000LL);
            assert_true(pts[i].type != DPCODEC_INT && pts[i].f == i / 4.0);
        }
    }
}

static void compaction_round_trip(void **state, enum dpcodec_format fmt, bool fix_dups)
{
    struct fixture *f = *state;
    struct tsdb_config c;
    tsdb_config_init(&c);
    c.layout.salt_width = 1;
    c.layout.salt_buckets = 4;
    c.format = fmt;
    c.fix_duplicates = fix_dups;
    open_tsdb(f, &c);
    struct ct_err err = {0};
    uint8_t a[ROWKEY_MAX_TSUID], b[ROWKEY_MAX_TSUID];
    size_t al, bl;
    const char *k[1] = {"host"}, *va[1] = {"a"}, *vb[1] = {"b"};
    assert_int_equal(tsdb_series_resolve(f->t, "m", k, va, 1, a, sizeof(a), &al, &err), CT_OK);
    assert_int_equal(tsdb_series_resolve(f->t, "m", k, vb, 1, b, sizeof(b), &bl, &err), CT_OK);
    write_hour(f, a, al, false);
    write_hour(f, b, bl, true);
    struct dpcodec_point pts[400];
    size_t ncells;
    check_hour(pts, read_hour(f, a, al, BASE, pts, 400, &ncells), false);
    assert_int_equal(ncells, 360);
    check_hour(pts, read_hour(f, b, bl, BASE, pts, 400, &ncells), true); /* newest wins on read */
    assert_int_equal(ncells, 361);
    assert_int_equal(wc_table_flush(f->s, "tsdb", &err), CT_OK);
    assert_int_equal(wc_table_compact(f->s, "tsdb", NULL, true, &err), CT_OK);
    check_hour(pts, read_hour(f, a, al, BASE, pts, 400, &ncells), false);
    assert_int_equal(ncells, 1); /* one merged cell */
    check_hour(pts, read_hour(f, b, bl, BASE, pts, 400, &ncells), true);
    assert_int_equal(ncells, fix_dups ? 1 : 361); /* a conflict without fix_duplicates stays */
}

static void test_compaction_compressed_format(void **state)
{
    compaction_round_trip(state, DPCODEC_FORMAT_COMPRESSED, false);
}

static void test_compaction_opentsdb_format_fix_duplicates(void **state)
{
    compaction_round_trip(state, DPCODEC_FORMAT_OPENTSDB, true);
}

static void test_compaction_compressed_fix_duplicates(void **state)
{
    compaction_round_trip(state, DPCODEC_FORMAT_COMPRESSED, true);
}

static void test_compaction_leaves_the_current_hour_alone(void **state)
{
    struct fixture *f = *state;
    char now[32];
    snprintf(now, sizeof(now), "%lld", (long long)(BASE_MS + 1800000)); /* mid-hour */
    setenv("CTSDB_NOW_MS", now, 1);
    clock_reload();
    struct tsdb_config c;
    tsdb_config_init(&c);
    open_tsdb(f, &c);
    struct ct_err err = {0};
    uint8_t a[ROWKEY_MAX_TSUID];
    size_t al;
    const char *k[1] = {"host"}, *va[1] = {"a"};
    assert_int_equal(tsdb_series_resolve(f->t, "m", k, va, 1, a, sizeof(a), &al, &err), CT_OK);
    write_hour(f, a, al, false);
    assert_int_equal(wc_table_flush(f->s, "tsdb", &err), CT_OK);
    assert_int_equal(wc_table_compact(f->s, "tsdb", NULL, true, &err), CT_OK);
    struct dpcodec_point pts[400];
    size_t ncells;
    check_hour(pts, read_hour(f, a, al, BASE, pts, 400, &ncells), false);
    assert_int_equal(ncells, 360);
}

static void test_late_points_after_a_merged_hour_are_kept(void **state)
{
    /* merge the hour (flush + major compaction), then a late point arrives and is merged by a
     * later compaction into a second compressed cell: neither cell may hide the other */
    struct fixture *f = *state;
    struct tsdb_config c;
    tsdb_config_init(&c);
    open_tsdb(f, &c);
    struct ct_err err = {0};
    uint8_t a[ROWKEY_MAX_TSUID];
    size_t al;
    const char *k[1] = {"host"}, *va[1] = {"a"};
    assert_int_equal(tsdb_series_resolve(f->t, "m", k, va, 1, a, sizeof(a), &al, &err), CT_OK);
    write_hour(f, a, al, false);
    assert_int_equal(wc_table_flush(f->s, "tsdb", &err), CT_OK);
    assert_int_equal(wc_table_compact(f->s, "tsdb", NULL, true, &err), CT_OK);
    struct tsdb_batch *b;
    assert_int_equal(tsdb_batch_new(1, &b, &err), CT_OK);
    struct dpcodec_point late = dpcodec_point_int(BASE_MS + 3599000, false, -5);
    assert_int_equal(tsdb_batch_add(b, tsdb_layout(f->t), a, al, &late, &err), CT_OK);
    assert_int_equal(tsdb_batch_write(f->t, b, WC_DURABILITY_USE_DEFAULT, &err), CT_OK);
    tsdb_batch_free(b);
    assert_int_equal(wc_table_flush(f->s, "tsdb", &err), CT_OK);
    struct dpcodec_point pts[400];
    size_t ncells;
    size_t n = read_hour(f, a, al, BASE, pts, 400, &ncells);
    assert_int_equal(n, 361);
    assert_true(pts[360].ts_ms == BASE_MS + 3599000 && pts[360].i == -5);
    assert_int_equal(wc_table_compact(f->s, "tsdb", NULL, true, &err), CT_OK);
    n = read_hour(f, a, al, BASE, pts, 400, &ncells);
    assert_int_equal(n, 361);
    assert_int_equal(ncells, 1);
    check_hour(pts, 360, false);
}

/* tsdb_merge_hour: an hour cell merged with a row holding an overlapping hour cell and single
 * cells (one of another value at a timestamp the new cell holds) leaves one cell: every point
 * once, the new cell's value at shared timestamps, a point only the row held kept; under a
 * pinned clock too (the merged cell's version is after every deleted one). A row with nothing
 * gets the cell as it is. */
static void test_merge_hour_leaves_one_cell(void **state)
{
    struct fixture *f = *state;
    setenv("CTSDB_NOW_MS", "1700000000000", 1);
    clock_reload();
    struct tsdb_config c;
    tsdb_config_init(&c);
    open_tsdb(f, &c);
    struct ct_err err = {0};
    uint8_t a[ROWKEY_MAX_TSUID];
    size_t al;
    const char *k[1] = {"host"}, *va[1] = {"a"};
    assert_int_equal(tsdb_series_resolve(f->t, "m", k, va, 1, a, sizeof(a), &al, &err), CT_OK);
    uint8_t row[ROWKEY_MAX_BYTES], q[DPCODEC_CQ_LEN], v[256];
    size_t rl = rowkey_encode(tsdb_layout(f->t), a, al, BASE, row), vl = 0;
    /* the row: an hour cell of points 0..4 (values k), a single cell at 10 s (value 7) and one
     * at 100 s (value 100, only in the row) */
    struct dpcodec_point old[5], neu[6];
    for (int i = 0; i < 5; i++)
        old[i] = dpcodec_point_int(BASE_MS + i * 1000, false, i);
    dpcodec_compressed_qualifier(old, 5, q);
    assert_int_equal(dpcodec_compressed_encode(BASE, old, 5, v, &vl, &err), CT_OK);
    struct wc_mutation m = {WC_OP_PUT, wc_bytes_str(TSDB_DATA_FAMILY), {q, sizeof(q)}, {v, vl},
                            WC_TS_LATEST};
    struct wc_row_mutation rm = {{row, rl}, &m, 1};
    assert_int_equal(wc_mutate_row(tsdb_data_table(f->t), &rm, WC_DURABILITY_USE_DEFAULT, &err),
                     CT_OK);
    struct tsdb_batch *b;
    assert_int_equal(tsdb_batch_new(2, &b, &err), CT_OK);
    struct dpcodec_point s1 = dpcodec_point_int(BASE_MS + 10000, false, 7);
    struct dpcodec_point s2 = dpcodec_point_int(BASE_MS + 100000, false, 100);
    assert_int_equal(tsdb_batch_add(b, tsdb_layout(f->t), a, al, &s1, &err), CT_OK);
    assert_int_equal(tsdb_batch_add(b, tsdb_layout(f->t), a, al, &s2, &err), CT_OK);
    assert_int_equal(tsdb_batch_write(f->t, b, WC_DURABILITY_USE_DEFAULT, &err), CT_OK);
    tsdb_batch_free(b);
    /* the new hour: points 2..4 with values 10 + k, 10 s with 8, 20 s with 9 */
    for (int i = 0; i < 3; i++)
        neu[i] = dpcodec_point_int(BASE_MS + (2 + i) * 1000, false, 12 + i);
    neu[3] = dpcodec_point_int(BASE_MS + 10000, false, 8);
    neu[4] = dpcodec_point_int(BASE_MS + 20000, false, 9);
    dpcodec_compressed_qualifier(neu, 5, q);
    assert_int_equal(dpcodec_compressed_encode(BASE, neu, 5, v, &vl, &err), CT_OK);
    size_t dups = 0;
    assert_int_equal(tsdb_merge_hour(f->t, row, rl, BASE, q, sizeof(q), v, vl,
                                     WC_DURABILITY_USE_DEFAULT, &dups, &err),
                     CT_OK);
    assert_int_equal(dups, 4); /* 2, 3, 4 s and 10 s */
    struct dpcodec_point pts[16];
    size_t ncells;
    size_t n = read_hour(f, a, al, BASE, pts, 16, &ncells);
    assert_int_equal(ncells, 1);
    int64_t want_ts[] = {0, 1000, 2000, 3000, 4000, 10000, 20000, 100000};
    int64_t want_v[] = {0, 1, 12, 13, 14, 8, 9, 100};
    assert_int_equal(n, 8);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(pts[i].ts_ms, BASE_MS + want_ts[i]);
        assert_int_equal(pts[i].i, want_v[i]);
    }
    /* an empty row: the cell as it is */
    uint8_t row2[ROWKEY_MAX_BYTES];
    size_t rl2 = rowkey_encode(tsdb_layout(f->t), a, al, BASE + 3600, row2);
    neu[5] = dpcodec_point_int((BASE + 3600) * 1000, false, 5);
    dpcodec_compressed_qualifier(&neu[5], 1, q);
    assert_int_equal(dpcodec_compressed_encode(BASE + 3600, &neu[5], 1, v, &vl, &err), CT_OK);
    assert_int_equal(tsdb_merge_hour(f->t, row2, rl2, BASE + 3600, q, sizeof(q), v, vl,
                                     WC_DURABILITY_USE_DEFAULT, &dups, &err),
                     CT_OK);
    assert_int_equal(dups, 0);
    n = read_hour(f, a, al, BASE + 3600, pts, 16, &ncells);
    assert_int_equal(n, 1);
    assert_int_equal(ncells, 1);
    assert_int_equal(pts[0].i, 5);
}

static void test_batch_in_any_order_reads_back_and_later_write_of_a_cell_wins(void **state)
{
    /* tsdb_batch_write puts cells into store order; the points of every series must come
     * back whole, and a cell written twice in one batch must keep the later value */
    struct fixture *f = *state;
    char now[32];
    snprintf(now, sizeof(now), "%lld", (long long)(BASE_MS + 1800000)); /* no compaction */
    setenv("CTSDB_NOW_MS", now, 1);
    clock_reload();
    struct tsdb_config c;
    tsdb_config_init(&c);
    open_tsdb(f, &c);
    struct ct_err err = {0};
    enum {
        NS = 7,
        NP = 50
    };
    uint8_t ts[NS][ROWKEY_MAX_TSUID];
    size_t tl[NS];
    const char *k[2] = {"host", "dc"};
    for (int s = 0; s < NS; s++) {
        char host[16];
        snprintf(host, sizeof(host), "h%d", (s * 5) % NS);
        const char *v[2] = {host, s % 2 ? "eu" : "us"};
        assert_int_equal(tsdb_series_resolve(f->t, s % 3 ? "m.a" : "m.b", k, v, 2, ts[s],
                                             sizeof(ts[s]), &tl[s], &err),
                         CT_OK);
    }
    struct tsdb_batch *b;
    assert_int_equal(tsdb_batch_new(8, &b, &err), CT_OK);
    /* series interleaved, time descending within each, two hours */
    for (int i = NP - 1; i >= 0; i--) {
        for (int s = NS - 1; s >= 0; s--) {
            int64_t t = BASE_MS - 1800000 + i * 60000LL;
            struct dpcodec_point p = dpcodec_point_int(t, false, s * 1000 + i);
            assert_int_equal(tsdb_batch_add(b, tsdb_layout(f->t), ts[s], tl[s], &p, &err), CT_OK);
        }
    }
    struct dpcodec_point again = dpcodec_point_int(BASE_MS + 60000, false, -1000);
    assert_int_equal(tsdb_batch_add(b, tsdb_layout(f->t), ts[3], tl[3], &again, &err), CT_OK);
    assert_int_equal(tsdb_batch_write(f->t, b, WC_DURABILITY_USE_DEFAULT, &err), CT_OK);
    tsdb_batch_free(b);
    for (int s = 0; s < NS; s++) {
        struct dpcodec_point pts[NP];
        size_t n0 = read_hour(f, ts[s], tl[s], BASE - 3600, pts, NP, NULL);
        assert_int_equal(n0, 30);
        for (size_t i = 0; i < n0; i++)
            assert_true(pts[i].ts_ms == BASE_MS - 1800000 + (int64_t)i * 60000 &&
                        pts[i].i == s * 1000 + (int64_t)i);
        size_t n1 = read_hour(f, ts[s], tl[s], BASE, pts, NP, NULL);
        assert_int_equal(n1, 20);
        for (size_t i = 0; i < n1; i++) {
            int64_t want = s == 3 && i == 1 ? -1000 : s * 1000 + 30 + (int64_t)i;
            if (!(pts[i].ts_ms == BASE_MS + (int64_t)i * 60000 && pts[i].i == want))
                fail_msg("series %d point %zu: ts %lld value %lld, want %lld", s, i,
                         (long long)pts[i].ts_ms, (long long)pts[i].i, (long long)want);
        }
    }
}

struct ann_acc {
    int n;
    int64_t when[4];
    char json[4][64];
};

static int ann_collect(void *arg, const uint8_t *tsuid, size_t len, int64_t start_ms,
                       const char *json, size_t json_len)
{
    (void)tsuid;
    (void)len;
    struct ann_acc *a = arg;
    if (a->n < 4) {
        a->when[a->n] = start_ms;
        snprintf(a->json[a->n], 64, "%.*s", (int)json_len, json);
        a->n++;
    }
    return 0;
}

static void test_annotations_series_and_global(void **state)
{
    struct fixture *f = *state;
    struct tsdb_config c;
    tsdb_config_init(&c);
    c.layout.salt_width = 1;
    /* a pinned clock: the store stamps cells with it, and the re-put below must come after the
     * delete's millisecond (a delete masks puts of its own millisecond, as in HBase) */
    setenv("CTSDB_NOW_MS", "1400000000000", 1);
    clock_reload();
    open_tsdb(f, &c);
    struct ct_err err = {0};
    uint8_t a[ROWKEY_MAX_TSUID];
    size_t al;
    const char *k[1] = {"host"}, *va[1] = {"a"};
    assert_int_equal(tsdb_series_resolve(f->t, "m", k, va, 1, a, sizeof(a), &al, &err), CT_OK);
    const char *j1 = "{\"description\":\"deploy\"}", *j2 = "{\"description\":\"ms\"}";
    assert_int_equal(tsdb_annotation_put(f->t, a, al, BASE_MS + 60000, j1, strlen(j1), &err),
                     CT_OK);
    assert_int_equal(tsdb_annotation_put(f->t, a, al, BASE_MS + 7200500, j2, strlen(j2), &err),
                     CT_OK);
    assert_int_equal(tsdb_annotation_put(f->t, NULL, 0, BASE_MS + 5000, j1, strlen(j1), &err),
                     CT_OK);
    char *json;
    size_t jl;
    assert_int_equal(tsdb_annotation_get(f->t, a, al, BASE_MS + 60000, &json, &jl, &err), CT_OK);
    assert_string_equal(json, j1);
    free(json);
    assert_int_equal(tsdb_annotation_get(f->t, a, al, BASE_MS + 61000, &json, &jl, &err),
                     CT_NOTFOUND);
    assert_string_equal(err.msg, "Unable to locate annotation in storage");
    struct ann_acc acc = {0};
    assert_int_equal(tsdb_annotation_scan(f->t, a, al, BASE_MS, BASE_MS + 3 * 3600000LL,
                                          ann_collect, &acc, &err),
                     CT_OK);
    assert_int_equal(acc.n, 2);
    assert_true(acc.when[0] == BASE_MS + 60000 && acc.when[1] == BASE_MS + 7200500);
    assert_string_equal(acc.json[1], j2);
    memset(&acc, 0, sizeof(acc));
    assert_int_equal(
        tsdb_annotation_scan(f->t, NULL, 0, BASE_MS, BASE_MS + 3600000, ann_collect, &acc, &err),
        CT_OK);
    assert_int_equal(acc.n, 1);
    assert_true(acc.when[0] == BASE_MS + 5000);
    assert_int_equal(tsdb_annotation_delete(f->t, a, al, BASE_MS + 60000, &err), CT_OK);
    assert_int_equal(tsdb_annotation_get(f->t, a, al, BASE_MS + 60000, &json, &jl, &err),
                     CT_NOTFOUND);
    /* annotations survive compaction next to the merged points */
    setenv("CTSDB_NOW_MS", "1400000000001", 1);
    clock_reload();
    write_hour(f, a, al, false);
    assert_int_equal(tsdb_annotation_put(f->t, a, al, BASE_MS + 60000, j1, strlen(j1), &err),
                     CT_OK);
    assert_int_equal(wc_table_flush(f->s, "tsdb", &err), CT_OK);
    assert_int_equal(wc_table_compact(f->s, "tsdb", NULL, true, &err), CT_OK);
    assert_int_equal(tsdb_annotation_get(f->t, a, al, BASE_MS + 60000, &json, &jl, &err), CT_OK);
    free(json);
    struct dpcodec_point pts[400];
    size_t ncells;
    check_hour(pts, read_hour(f, a, al, BASE, pts, 400, &ncells), false);
    assert_int_equal(ncells, 2);
}

static void test_config_keys(void **state)
{
    (void)state;
    struct tsdb_config c;
    tsdb_config_init(&c);
    struct ct_err err = {0};
    assert_int_equal(tsdb_config_set(&c, "tsd.storage.salt.width", "2", &err), CT_OK);
    assert_int_equal(c.layout.salt_width, 2);
    assert_int_equal(tsdb_config_set(&c, "tsd.core.auto_create_metrics", "false", &err), CT_OK);
    assert_false(c.auto_create_metrics);
    assert_int_equal(tsdb_config_set(&c, "tsd.storage.ctsdb.compact_format", "opentsdb", &err),
                     CT_OK);
    assert_int_equal(c.format, DPCODEC_FORMAT_OPENTSDB);
    assert_int_equal(tsdb_config_set(&c, "tsd.storage.salt.width", "9", &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "tsd.storage.salt.width"));
    assert_int_equal(tsdb_config_set(&c, "tsd.storage.fix_duplicates", "maybe", &err), CT_EINVAL);
    assert_int_equal(tsdb_config_set(&c, "tsd.network.port", "4242", &err), CT_NOTFOUND);
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
    case CT_CFG_ENUM: { /* the first choice that is not the default */
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

/* Every key of the schema's table: its default is what tsdb_config_init gives, and a value set
 * is the value read back (so each key lands in its own field, none is dropped or crossed). */
static void test_every_config_key_sets_its_own_field(void **state)
{
    (void)state;
    size_t n = 0;
    const struct ct_cfg_key *keys = tsdb_config_keys(&n);
    assert_true(n >= 25);
    struct tsdb_config def;
    tsdb_config_init(&def);
    for (size_t i = 0; i < n; i++) {
        char buf[128], want[128], got[128];
        assert_int_equal(tsdb_config_get(&def, keys[i].key, got, sizeof(got)), CT_OK);
        if (strcasecmp(got, keys[i].def) != 0)
            fail_msg("%s: default '%s', tsdb_config_init gives '%s'", keys[i].key, keys[i].def,
                     got);
        struct tsdb_config c;
        tsdb_config_init(&c);
        snprintf(want, sizeof(want), "%s", other_value(&keys[i], buf, sizeof(buf)));
        struct ct_err err = {0};
        if (tsdb_config_set(&c, keys[i].key, want, &err) != CT_OK)
            fail_msg("%s=%s: %s", keys[i].key, want, err.msg);
        assert_int_equal(tsdb_config_get(&c, keys[i].key, got, sizeof(got)), CT_OK);
        if (strcasecmp(got, want) != 0)
            fail_msg("%s: set '%s', read back '%s'", keys[i].key, want, got);
        /* and no other key changed */
        for (size_t j = 0; j < n; j++) {
            char a[128], b[128];
            if (j == i)
                continue;
            assert_int_equal(tsdb_config_get(&c, keys[j].key, a, sizeof(a)), CT_OK);
            assert_int_equal(tsdb_config_get(&def, keys[j].key, b, sizeof(b)), CT_OK);
            if (strcmp(a, b) != 0)
                fail_msg("setting %s changed %s", keys[i].key, keys[j].key);
        }
        bool layout = !strncmp(keys[i].key, "tsd.storage.salt.", 17) ||
                      !strncmp(keys[i].key, "tsd.storage.uid.width.", 22);
        assert_int_equal(c.layout_given, layout);
    }
    struct ct_err err = {0};
    assert_int_equal(tsdb_config_set(&def, "tsd.storage.ctsdb.ttl", "0", &err), CT_OK);
    assert_int_equal(def.ttl_s, WC_TTL_FOREVER);
    assert_int_equal(tsdb_config_set(&def, "tsd.storage.ctsdb.compression", "gz", &err), CT_OK);
    assert_int_equal(def.compression, WC_COMPRESSION_GZ);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_keys),
        cmocka_unit_test(test_every_config_key_sets_its_own_field),
        cmocka_unit_test_setup_teardown(test_default_layout_is_salted_and_presplit, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_unsalted_store_keeps_its_layout_under_the_salted_default, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_without_layout_record_is_read_unsalted, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_create_tables_families_and_presplit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_series_resolution_messages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compaction_compressed_format, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compaction_opentsdb_format_fix_duplicates, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_compaction_compressed_fix_duplicates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compaction_leaves_the_current_hour_alone, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_late_points_after_a_merged_hour_are_kept, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_annotations_series_and_global, setup, teardown),
        cmocka_unit_test_setup_teardown(test_merge_hour_leaves_one_cell, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_batch_in_any_order_reads_back_and_later_write_of_a_cell_wins, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
