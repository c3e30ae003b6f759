/* test_engine_scan.c - the engine's full scans (storage/engine/scan.c) against its point reads:
 * a random history of puts and every kind of delete marker over 60 rows in two regions, two
 * families (one with versions, TTL and MIN_VERSIONS) and four columns, spread over memstores and
 * several block files by flushes (and compactions in some rounds), so that many rows are held by
 * one input only (the scanner's single-input fast path) and others by several. After every round
 * a forward and a reversed full scan, under a set of read options, must return exactly the rows
 * and cells that wc_get returns row by row (engine_get: separate code that merges per row), in
 * order; a forward scan with a pass-through row filter and one cut into 1-cell batches too; and
 * forward scans opened at every row and between rows (lazy seeks), to the end and for one row. */
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

#define NROWS     60
#define ROW_BYTES 4096

/* A full scan into per-row texts (rows in the order returned; batches of a row joined). */
static size_t scan_rows(struct wc_table *t, const struct wc_scan_options *o, char rows[][ROW_BYTES],
                        char keys[][16])
{
    struct ct_err err;
    struct wc_scanner *sc;
    assert_int_equal(wc_scanner_open(t, o, &sc, &err), CT_OK);
    struct wc_row wr;
    int rc;
    size_t n = 0;
    while ((rc = wc_scanner_next(sc, &wr, &err)) == CT_OK) {
        assert_true(wr.key.len < 16);
        bool same = n > 0 && strlen(keys[n - 1]) == wr.key.len &&
                    memcmp(keys[n - 1], wr.key.data, wr.key.len) == 0;
        if (!same) {
            assert_true(n < NROWS);
            memcpy(keys[n], wr.key.data, wr.key.len);
            keys[n][wr.key.len] = 0;
            rows[n][0] = 0;
            n++;
        }
        fixture_fmt_row(rows[n - 1], ROW_BYTES, &wr);
    }
    assert_int_equal(rc, CT_NOTFOUND);
    wc_scanner_close(sc);
    return n;
}

static void check_scans(struct wc_table *t, const struct wc_scan_options *base, int round, int v,
                        size_t *nonempty)
{
    static char want[NROWS][ROW_BYTES], got[NROWS][ROW_BYTES];
    static char wkeys[NROWS][16], gkeys[NROWS][16];
    struct ct_err err;
    size_t nw = 0;
    for (int r = 0; r < NROWS; r++) {
        char row[16];
        snprintf(row, sizeof row, "r%03d", r);
        struct wc_result res;
        assert_int_equal(wc_get(t, wc_bytes_str(row), base, &res, &err), CT_OK);
        if (res.row.ncells) {
            snprintf(wkeys[nw], sizeof wkeys[nw], "%s", row);
            want[nw][0] = 0;
            fixture_fmt_row(want[nw], ROW_BYTES, &res.row);
            nw++;
        }
        wc_result_release(&res);
    }
    *nonempty += nw;
    for (int mode = 0; mode < 4; mode++) {
        struct wc_scan_options o = *base;
        if (mode == 1)
            o.reversed = true;
        if (mode == 2)
            o.row_filter = fixture_pass_all;
        if (mode == 3)
            o.batch_cells = 1;
        size_t ng = scan_rows(t, &o, got, gkeys);
        if (ng != nw)
            fail_msg("round %d options %d mode %d: %zu rows scanned, %zu read", round, v, mode, ng,
                     nw);
        for (size_t i = 0; i < nw; i++) {
            size_t j = o.reversed ? nw - 1 - i : i;
            if (strcmp(gkeys[j], wkeys[i]) != 0 || strcmp(got[j], want[i]) != 0)
                fail_msg("round %d options %d mode %d row %s:\n scan %s %s\n get  %s", round, v,
                         mode, wkeys[i], gkeys[j], got[j], want[i]);
        }
    }
    /* Forward scans opened at every row and between rows (lazy seeks: inputs whose row bloom
     * rules the start row out are sought only when the scan looks past it), to the end and
     * for one row: the rows at or after the start, exactly. Fails if a deferred input is never
     * sought (rows it holds after the start go missing) or if the start row is taken from the
     * other inputs when none of them holds it (a smaller row of a deferred input is skipped). */
    for (int s = 0; s < 2 * NROWS + 1; s++) {
        char start[16];
        if (s % 2 == 0)
            snprintf(start, sizeof start, "r%03d", s / 2); /* r060: after the last row */
        else
            snprintf(start, sizeof start, "r%03d5", s / 2); /* between r(s/2) and the next */
        size_t first = 0;
        while (first < nw && strcmp(wkeys[first], start) < 0)
            first++;
        for (int lim = 0; lim < 2; lim++) {
            struct wc_scan_options o = *base;
            o.start_row = wc_bytes_str(start);
            o.limit_rows = (uint64_t)lim;
            size_t ng = scan_rows(t, &o, got, gkeys);
            size_t expect = lim && nw - first > 1 ? 1 : nw - first;
            if (ng != expect)
                fail_msg("round %d options %d start %s limit %d: %zu rows scanned, %zu read", round,
                         v, start, lim, ng, expect);
            for (size_t i = 0; i < ng; i++)
                if (strcmp(gkeys[i], wkeys[first + i]) != 0 || strcmp(got[i], want[first + i]))
                    fail_msg("round %d options %d start %s limit %d row %s:\n scan %s %s\n get  %s",
                             round, v, start, lim, wkeys[first + i], gkeys[i], got[i],
                             want[first + i]);
        }
    }
}

static void test_full_scans_equal_point_reads_under_random_history(void **state)
{
    (void)state;
    struct ct_err err;
    struct wc_table *t = fixture_history_table(g_store, "st", "r030", WC_BLOOM_ROW);
    uint64_t seed = 0x243f6a8885a308d3ull;
    size_t nonempty = 0, checks = 0;
    for (int round = 0; round < 10; round++) {
        int nput = round < 4 ? 25 : 80; /* early rounds: sparse files, many single-input rows */
        fixture_history_write(t, &seed, round, nput, NROWS, "r%03d", 5);
        if (round % 2 == 0 || round == 7) /* most rounds end in a file of their own */
            assert_int_equal(wc_table_flush(g_store, "st", &err), CT_OK);
        if (round == 6)
            assert_int_equal(wc_table_compact(g_store, "st", NULL, false, &err), CT_OK);
        if (round == 8)
            assert_int_equal(wc_table_compact(g_store, "st", NULL, true, &err), CT_OK);

        struct wc_column cols[2];
        for (int v = 0; v < 6; v++) {
            struct wc_scan_options o;
            bool shared = fixture_history_options(v, &o, cols); /* sets 0-4 */
            switch (shared ? -1 : v) {                          /* this test's own */
            case 5:
                o.raw = true;
                o.max_versions = 10;
                break;
            default:
                break;
            }
            check_scans(t, &o, round, v, &nonempty);
            checks++;
        }
    }
    assert_true(nonempty > checks * 10); /* the history left rows to compare */
    wc_table_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_scans_equal_point_reads_under_random_history),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
