/* test_rollup.c - schema/rollup: the rollup qualifier bytes (aggregator name, ':', offset << 4 |
 * flags), values as data cells, the id form read back, bad cells refused; row bases (UTC day for
 * 1h, UTC month for 1d); the job's 1h and 1d rollups equal sums, counts, minima and maxima
 * computed here from the points written, NaN skipped; running an interval again leaves the same
 * values (no double counting) and progress is recorded and honoured; a point written late into
 * an hour already rolled up is picked up by the next step (the hour and its day redone). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "schema/rollup.h"
#include "tests/lib/ctest.h"
#include "tests/lib/tsdb_fixture.h"

#define DAY0 1356998400LL /* 2013-01-01T00:00:00Z */

static void test_rollup_qualifier_bytes(void **state)
{
    (void)state;
    uint8_t q[16], v[8];
    size_t ql, vl;
    struct ct_err err = {0};
    struct dpcodec_point p = dpcodec_point_int(0, false, 5);
    /* hour 3 of the day, int 5 in one byte: "sum:" 0x00 0x30 */
    assert_int_equal(
        rollup_cell_encode(ROLLUP_1H, ROLLUP_SUM, DAY0, DAY0 + 3 * 3600, &p, q, &ql, v, &vl, &err),
        CT_OK);
    assert_int_equal(ql, 6);
    assert_memory_equal(q, "sum:\x00\x30", 6);
    assert_int_equal(vl, 1);
    assert_int_equal(v[0], 5);
    /* hour 23, a double: flags 0x0F */
    p = dpcodec_point_real(0, false, 0.1);
    assert_int_equal(
        rollup_cell_encode(ROLLUP_1H, ROLLUP_MAX, DAY0, DAY0 + 23 * 3600, &p, q, &ql, v, &vl, &err),
        CT_OK);
    assert_memory_equal(q, "max:\x01\x7F", 6);
    assert_int_equal(vl, 8);
    enum rollup_agg a;
    int64_t ts;
    struct dpcodec_point o;
    assert_int_equal(rollup_cell_decode(ROLLUP_1H, DAY0, q, ql, v, vl, &a, &ts, &o, &err), CT_OK);
    assert_int_equal(a, ROLLUP_MAX);
    assert_int_equal(ts, DAY0 + 23 * 3600);
    assert_true(o.type == DPCODEC_DOUBLE && o.f == 0.1);
    /* count in the 1d table: day 10 of January, int 300 in two bytes */
    p = dpcodec_point_int(0, false, 300);
    assert_int_equal(rollup_cell_encode(ROLLUP_1D, ROLLUP_COUNT, DAY0, DAY0 + 9 * 86400, &p, q, &ql,
                                        v, &vl, &err),
                     CT_OK);
    assert_memory_equal(q, "count:\x00\x91", 8);
    assert_int_equal(rollup_cell_decode(ROLLUP_1D, DAY0, q, ql, v, vl, &a, &ts, &o, &err), CT_OK);
    assert_int_equal(a, ROLLUP_COUNT);
    assert_int_equal(ts, DAY0 + 9 * 86400);
    assert_int_equal(o.i, 300);
    /* the id form (min = 2) and an upper-case name are read */
    const uint8_t idq[3] = {2, 0x00, 0x50};
    assert_int_equal(rollup_cell_decode(ROLLUP_1H, DAY0, idq, 3, v, 2, &a, &ts, &o, &err),
                     CT_ECORRUPT);
    const uint8_t idq1[3] = {2, 0x00, 0x50};
    const uint8_t one[1] = {7};
    assert_int_equal(rollup_cell_decode(ROLLUP_1H, DAY0, idq1, 3, one, 1, &a, &ts, &o, &err),
                     CT_OK);
    assert_int_equal(a, ROLLUP_MIN);
    assert_int_equal(ts, DAY0 + 5 * 3600);
    assert_int_equal(o.i, 7);
    assert_int_equal(rollup_cell_decode(ROLLUP_1H, DAY0, (const uint8_t *)"SUM:\x00\x10", 6, one, 1,
                                        &a, &ts, &o, &err),
                     CT_OK);
    assert_int_equal(a, ROLLUP_SUM);
    /* another aggregator's cell is skipped; an offset beyond the row is corrupt */
    assert_int_equal(rollup_cell_decode(ROLLUP_1H, DAY0, (const uint8_t *)"p99:\x00\x10", 6, one, 1,
                                        &a, &ts, &o, &err),
                     CT_NOTFOUND);
    assert_int_equal(rollup_cell_decode(ROLLUP_1H, DAY0, (const uint8_t *)"sum:\x01\x80", 6, one, 1,
                                        &a, &ts, &o, &err),
                     CT_ECORRUPT);
    /* unaligned or outside the row */
    assert_int_equal(
        rollup_cell_encode(ROLLUP_1H, ROLLUP_SUM, DAY0, DAY0 + 60, &p, q, &ql, v, &vl, &err),
        CT_EINVAL);
    assert_int_equal(
        rollup_cell_encode(ROLLUP_1H, ROLLUP_SUM, DAY0, DAY0 + 86400, &p, q, &ql, v, &vl, &err),
        CT_EINVAL);
}

static void test_rollup_row_bases_and_names(void **state)
{
    (void)state;
    assert_int_equal(rollup_row_base(ROLLUP_1H, DAY0 + 5 * 3600 + 7), DAY0);
    assert_int_equal(rollup_row_next(ROLLUP_1H, DAY0), DAY0 + 86400);
    assert_int_equal(rollup_row_base(ROLLUP_1D, DAY0 + 40 * 86400), DAY0 + 31 * 86400); /* Feb 1 */
    assert_int_equal(rollup_row_next(ROLLUP_1D, DAY0 + 31 * 86400), DAY0 + 59 * 86400); /* Mar 1 */
    assert_int_equal(rollup_iv_parse("1h"), ROLLUP_1H);
    assert_int_equal(rollup_iv_parse("60m"), ROLLUP_1H);
    assert_int_equal(rollup_iv_parse("1d"), ROLLUP_1D);
    assert_int_equal(rollup_iv_parse("2h"), -1);
    assert_int_equal(rollup_iv_parse("h"), -1);
    assert_int_equal(rollup_agg_parse("AVG"), -1);
    assert_int_equal(rollup_agg_parse("Max"), ROLLUP_MAX);
}

static int setup(void **state)
{
    *state = tsdb_fixture_open(4);
    return 0;
}

static int teardown(void **state)
{
    tsdb_fixture_close(*state);
    return 0;
}

static struct rollup *open_rollup(struct tsdb_fixture *f)
{
    struct rollup_config c = {{"r1h", "r1d"}, {0, 0}, true};
    struct rollup *r = NULL;
    struct ct_err err = {0};
    if (rollup_open(f->s, f->t, &c, &r, &err) != CT_OK)
        fail_msg("rollup_open: %s", err.msg);
    return r;
}

/* The stored rollup values of series `tsuid` for interval ts_s: vals[agg], have[agg]. */
static void read_cells(struct rollup *r, enum rollup_iv iv, const uint8_t *tsuid, size_t tl,
                       int64_t ts_s, double *vals, bool *have)
{
    uint8_t key[ROWKEY_MAX_BYTES];
    int64_t base = rollup_row_base(iv, ts_s);
    size_t kl = rowkey_encode(tsdb_layout(rollup_tsdb(r)), tsuid, tl, base, key);
    struct wc_scan_options so;
    wc_scan_options_init(&so);
    struct wc_result res;
    struct ct_err err = {0};
    assert_int_equal(wc_get(rollup_table(r, iv), wc_bytes_of(key, kl), &so, &res, &err), CT_OK);
    memset(have, 0, ROLLUP_NAGG * sizeof(bool));
    for (size_t i = 0; i < res.row.ncells; i++) {
        const struct wc_cell *c = &res.row.cells[i];
        enum rollup_agg a;
        int64_t ts;
        struct dpcodec_point p;
        assert_int_equal(rollup_cell_decode(iv, base, c->qualifier.data, c->qualifier.len,
                                            c->value.data, c->value.len, &a, &ts, &p, &err),
                         CT_OK);
        if (ts != ts_s)
            continue;
        have[a] = true;
        vals[a] = p.type == DPCODEC_INT ? (double)p.i : p.f;
    }
    wc_result_release(&res);
}

static void test_rollup_job_matches_points_and_is_idempotent(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    const char *k[1] = {"host"}, *hv[2] = {"a", "b"};
    /* two series over 30 hours from DAY0: one point a minute, value depends on series and time;
     * series b has a NaN in hour 2 */
    double sum[2][30] = {{0}}, mn[2][30], mx[2][30];
    int64_t cnt[2][30] = {{0}};
    for (int s = 0; s < 2; s++)
        for (int h = 0; h < 30; h++) {
            mn[s][h] = INFINITY;
            mx[s][h] = -INFINITY;
            for (int m = 0; m < 60; m++) {
                int64_t ts = DAY0 + h * 3600 + m * 60;
                int64_t v = (s + 1) * 1000 + ((h * 7 + m * 13) % 101) - 50;
                struct dpcodec_point p = dpcodec_point_int(ts * 1000, false, v);
                if (s == 1 && h == 2 && m == 30)
                    p = dpcodec_point_real(ts * 1000, false, NAN);
                tsdb_fixture_put(f->t, "m", k, &hv[s], 1, p);
                if (p.type != DPCODEC_INT)
                    continue;
                sum[s][h] += (double)v;
                cnt[s][h]++;
                mn[s][h] = fmin(mn[s][h], (double)v);
                mx[s][h] = fmax(mx[s][h], (double)v);
            }
        }
    struct rollup *r = open_rollup(f);
    struct ct_err err = {0};
    uint64_t rows = 0;
    /* one second before hour 29 closes (29h + 3600 + grace 600): hours 0 .. 28 are closed */
    assert_int_equal(rollup_job_step(r, DAY0 + 30 * 3600 + 599, 600, &rows, &err), CT_OK);
    int64_t hp, dp;
    assert_int_equal(rollup_progress_get(r, ROLLUP_1H, &hp, &err), CT_OK);
    assert_int_equal(rollup_progress_get(r, ROLLUP_1D, &dp, &err), CT_OK);
    assert_int_equal(hp, DAY0 + 29 * 3600);
    assert_int_equal(dp, DAY0 + 86400);
    assert_int_equal(rows, 2 * 29 + 2); /* 29 hour rows per series and one day each */
    for (int pass = 0; pass < 2; pass++) {
        for (int s = 0; s < 2; s++) {
            uint8_t tsuid[ROWKEY_MAX_TSUID];
            size_t tl;
            assert_int_equal(
                tsdb_series_resolve(f->t, "m", k, &hv[s], 1, tsuid, sizeof(tsuid), &tl, &err),
                CT_OK);
            double v[ROLLUP_NAGG];
            bool have[ROLLUP_NAGG];
            double dsum = 0, dmin = INFINITY, dmax = -INFINITY;
            int64_t dcnt = 0;
            for (int h = 0; h < 30; h++) {
                read_cells(r, ROLLUP_1H, tsuid, tl, DAY0 + h * 3600, v, have);
                if (h == 29) { /* not closed: nothing */
                    assert_false(have[ROLLUP_SUM] || have[ROLLUP_COUNT]);
                    continue;
                }
                assert_true(have[0] && have[1] && have[2] && have[3]);
                assert_true(v[ROLLUP_SUM] == sum[s][h]);
                assert_true(v[ROLLUP_COUNT] == (double)cnt[s][h]);
                assert_true(v[ROLLUP_MIN] == mn[s][h]);
                assert_true(v[ROLLUP_MAX] == mx[s][h]);
                if (h < 24) {
                    dsum += sum[s][h];
                    dcnt += cnt[s][h];
                    dmin = fmin(dmin, mn[s][h]);
                    dmax = fmax(dmax, mx[s][h]);
                }
            }
            read_cells(r, ROLLUP_1D, tsuid, tl, DAY0, v, have);
            assert_true(have[0] && have[1] && have[2] && have[3]);
            assert_true(v[ROLLUP_SUM] == dsum);
            assert_true(v[ROLLUP_COUNT] == (double)dcnt);
            assert_true(v[ROLLUP_MIN] == dmin);
            assert_true(v[ROLLUP_MAX] == dmax);
            read_cells(r, ROLLUP_1D, tsuid, tl, DAY0 + 86400, v, have);
            assert_false(have[ROLLUP_SUM]); /* day 2 is not closed */
        }
        /* a restart that lost the progress recomputes the same intervals: same values */
        assert_int_equal(rollup_progress_set(r, ROLLUP_1H, 0, &err), CT_OK);
        assert_int_equal(rollup_progress_set(r, ROLLUP_1D, 0, &err), CT_OK);
        assert_int_equal(rollup_job_step(r, DAY0 + 30 * 3600 + 599, 600, &rows, &err), CT_OK);
    }
    /* progress honoured: a second step at the same time does nothing */
    assert_int_equal(rollup_job_step(r, DAY0 + 30 * 3600 + 599, 600, &rows, &err), CT_OK);
    assert_int_equal(rows, 0);
    /* a late point in hour 3 (rolled up, its day too): the next step rolls the hour up again
     * and redoes the day */
    tsdb_fixture_put(f->t, "m", k, &hv[0], 1,
                     dpcodec_point_int((DAY0 + 3 * 3600 + 1) * 1000, false, 1000000));
    /* the late pass looks at cells written at or after the previous step's start (inclusive):
     * a step in the same millisecond as the write would see it once more (harmlessly) */
    nanosleep(&(struct timespec){0, 3000000}, NULL);
    assert_int_equal(rollup_job_step(r, DAY0 + 30 * 3600 + 599, 600, &rows, &err), CT_OK);
    assert_int_equal(rows, 1);
    uint8_t tsuid[ROWKEY_MAX_TSUID];
    size_t tl;
    assert_int_equal(tsdb_series_resolve(f->t, "m", k, &hv[0], 1, tsuid, sizeof(tsuid), &tl, &err),
                     CT_OK);
    double v[ROLLUP_NAGG], d[ROLLUP_NAGG];
    bool have[ROLLUP_NAGG];
    read_cells(r, ROLLUP_1H, tsuid, tl, DAY0 + 3 * 3600, v, have);
    assert_true(v[ROLLUP_SUM] == sum[0][3] + 1000000);
    assert_true(v[ROLLUP_COUNT] == (double)cnt[0][3] + 1);
    assert_true(v[ROLLUP_MAX] == 1000000);
    double dsum = 0;
    for (int h = 0; h < 24; h++)
        dsum += sum[0][h];
    read_cells(r, ROLLUP_1D, tsuid, tl, DAY0, d, have);
    assert_true(d[ROLLUP_SUM] == dsum + 1000000);
    assert_true(d[ROLLUP_MAX] == 1000000);
    assert_int_equal(rollup_job_step(r, DAY0 + 30 * 3600 + 599, 600, &rows, &err), CT_OK);
    assert_int_equal(rows, 0);
    rollup_close(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rollup_qualifier_bytes),
        cmocka_unit_test(test_rollup_row_bases_and_names),
        cmocka_unit_test_setup_teardown(test_rollup_job_matches_points_and_is_idempotent, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
