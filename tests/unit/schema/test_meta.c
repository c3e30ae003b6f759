/* test_meta.c - schema/meta: UID meta and TSMeta records are read back as written, in OpenTSDB's
 * columns (tsdb-uid "name:metric_meta", tsdb-meta "name:ts_meta" / "name:ts_ctr"); a TSMeta write
 * is a check-and-put against what was read; the counter is created only where there is none and
 * survives a TSMeta delete; a counter of the wrong size is reported as corrupt. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "schema/meta.h"
#include "schema/rowkey.h"
#include "tests/lib/ctest.h"
#include "tests/lib/tsdb_fixture.h"

static int setup(void **state)
{
    *state = tsdb_fixture_open(0);
    return 0;
}

static int teardown(void **state)
{
    tsdb_fixture_close(*state);
    return 0;
}

/* The value of table/row/family:qualifier as stored, or NULL (a new string). */
static char *raw_cell(struct wc_table *tb, const uint8_t *row, size_t rl, const char *qual)
{
    struct wc_column col = {wc_bytes_str("name"), wc_bytes_str(qual), true};
    struct wc_scan_options so;
    wc_scan_options_init(&so);
    so.columns = &col;
    so.ncolumns = 1;
    struct wc_result res;
    struct ct_err err = {0};
    assert_int_equal(wc_get(tb, wc_bytes_of(row, rl), &so, &res, &err), CT_OK);
    char *s = NULL;
    if (res.row.ncells) {
        s = calloc(1, res.row.cells[0].value.len + 1);
        assert_non_null(s);
        memcpy(s, res.row.cells[0].value.data, res.row.cells[0].value.len);
    }
    wc_result_release(&res);
    return s;
}

static void test_meta_uid_round_trips_in_opentsdbs_column(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    struct ct_err err = {0};
    char *json = NULL;
    size_t len = 0;
    assert_int_equal(meta_uid_get(f->t, UID_METRIC, 1, &json, &len, &err), CT_NOTFOUND);
    assert_null(json);
    assert_int_equal(meta_uid_put(f->t, UID_METRIC, 1, "{\"notes\":\"n\"}", &err), CT_OK);
    assert_int_equal(meta_uid_get(f->t, UID_METRIC, 1, &json, &len, &err), CT_OK);
    assert_string_equal(json, "{\"notes\":\"n\"}");
    assert_int_equal(len, strlen(json));
    free(json);
    const uint8_t row[3] = {0, 0, 1};
    char *raw = raw_cell(tsdb_uid_table(f->t), row, 3, "metric_meta");
    assert_non_null(raw);
    assert_string_equal(raw, "{\"notes\":\"n\"}");
    free(raw);
    /* another kind, same id: its own column */
    assert_int_equal(meta_uid_get(f->t, UID_TAGK, 1, &json, &len, &err), CT_NOTFOUND);
    assert_string_equal(meta_uid_qualifier(UID_TAGV), "tagv_meta");
    assert_int_equal(meta_uid_put(f->t, UID_METRIC, 1, NULL, &err), CT_OK); /* delete */
    assert_int_equal(meta_uid_get(f->t, UID_METRIC, 1, &json, &len, &err), CT_NOTFOUND);
}

static void test_meta_ts_check_and_put_and_counter(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    struct ct_err err = {0};
    const uint8_t ts[9] = {0, 0, 1, 0, 0, 1, 0, 0, 1};
    struct meta_ts m;
    assert_int_equal(meta_ts_get(f->t, ts, 9, &m, &err), CT_OK);
    assert_null(m.json);
    assert_false(m.has_ctr);
    bool applied = false;
    assert_int_equal(meta_ts_put(f->t, ts, 9, "{\"v\":1}", NULL, &applied, &err), CT_OK);
    assert_true(applied);
    assert_int_equal(meta_ts_put(f->t, ts, 9, "{\"v\":2}", NULL, &applied, &err), CT_OK);
    assert_false(applied); /* one exists now */
    struct wc_bytes stale = wc_bytes_str("{\"v\":0}");
    assert_int_equal(meta_ts_put(f->t, ts, 9, "{\"v\":2}", &stale, &applied, &err), CT_OK);
    assert_false(applied);
    assert_int_equal(meta_ts_get(f->t, ts, 9, &m, &err), CT_OK);
    assert_string_equal(m.json, "{\"v\":1}");
    struct wc_bytes cur = wc_bytes_of(m.json, m.json_len);
    assert_int_equal(meta_ts_put(f->t, ts, 9, "{\"v\":2}", &cur, &applied, &err), CT_OK);
    assert_true(applied);
    meta_ts_clear(&m);
    char *raw = raw_cell(tsdb_meta_table(f->t), ts, 9, "ts_meta");
    assert_string_equal(raw, "{\"v\":2}");
    free(raw);

    /* the counter: created at zero only where there is none */
    assert_int_equal(meta_ts_counter_init(f->t, ts, 9, &err), CT_OK);
    assert_int_equal(meta_ts_get(f->t, ts, 9, &m, &err), CT_OK);
    assert_true(m.has_ctr && m.ctr == 0);
    meta_ts_clear(&m);
    uint8_t five[8] = {0, 0, 0, 0, 0, 0, 0, 5};
    struct wc_mutation mu = {WC_OP_PUT, wc_bytes_str("name"), wc_bytes_str("ts_ctr"),
                             wc_bytes_of(five, 8), WC_TS_LATEST};
    struct wc_row_mutation rm = {wc_bytes_of(ts, 9), &mu, 1};
    assert_int_equal(wc_mutate_row(tsdb_meta_table(f->t), &rm, WC_DURABILITY_USE_DEFAULT, &err),
                     CT_OK);
    assert_int_equal(meta_ts_counter_init(f->t, ts, 9, &err), CT_OK);
    assert_int_equal(meta_ts_delete(f->t, ts, 9, &err), CT_OK);
    assert_int_equal(meta_ts_get(f->t, ts, 9, &m, &err), CT_OK);
    assert_null(m.json);                  /* deleted */
    assert_true(m.has_ctr && m.ctr == 5); /* the counter stays, not reset */
    meta_ts_clear(&m);

    /* a counter that is not 8 bytes */
    mu.value = wc_bytes_of(five, 3);
    assert_int_equal(wc_mutate_row(tsdb_meta_table(f->t), &rm, WC_DURABILITY_USE_DEFAULT, &err),
                     CT_OK);
    assert_int_equal(meta_ts_get(f->t, ts, 9, &m, &err), CT_ECORRUPT);
    assert_non_null(strstr(err.msg, "bad TSMeta counter (3 bytes)"));
    assert_null(m.json);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_meta_uid_round_trips_in_opentsdbs_column, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_meta_ts_check_and_put_and_counter, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
