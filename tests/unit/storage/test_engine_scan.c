/* test_engine_scan.c - the engine's full scans (storage/engine/scan.c) against its point reads:
 * a random history of puts and every kind of delete marker over 60 rows in two regions, two
 * families (one with versions, TTL and MIN_VERSIONS) and four columns, spread over memstores and
 * several block files by flushes (and compactions in some rounds), so that many rows are held by
 * one input only (the scanner's single-input fast path) and others by several. After every round
 * a forward and a reversed full scan, under a set of read options, must return exactly the rows
 * and cells that wc_get returns row by row (engine_get: separate code that merges per row), in
 * order; a forward scan with a pass-through row filter and one cut into 1-cell batches too; and
 * forward scans opened at every row and between rows (lazy seeks), to the end and for one row;
 * multi-range scans of four range sets (check_range_scans). */
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

static void check_range_scans(struct wc_table *t, const struct wc_scan_options *base, int round,
                              int v, char want[][ROW_BYTES], char wkeys[][16], size_t nw);

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
    check_range_scans(t, base, round, v, want, wkeys, nw);
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

/* Multi-range scans (wc_scan_options.ranges) of set `set` over the rows r000..r059 (split at
 * r030): the rows of the ranges, exactly, forward and reversed, with and without a row filter.
 * Sets: 0 one-row ranges [k, k"\0") of every third row; 1 every row, one range each (adjacent
 * ones: the scanner moves from piece to piece on the same inputs); 2 two-row ranges starting
 * between rows ("r0045".."r006"), every fourth; 3 ranges across the region split. Fails if the
 * scanner moving its open inputs on to the next range (scanner_continue_region) loses rows: an
 * input left behind, one deferred by its bloom and never sought, or one sought past a row. */
static void check_range_scans(struct wc_table *t, const struct wc_scan_options *base, int round,
                              int v, char want[][ROW_BYTES], char wkeys[][16], size_t nw)
{
    static char got[NROWS][ROW_BYTES], gkeys[NROWS][16];
    static char kb[2 * NROWS][2][16];
    struct wc_row_range rr[2 * NROWS];
    for (int set = 0; set < 4; set++) {
        size_t n = 0;
        for (int r = 0; r < NROWS; r++) {
            size_t l0, l1;
            if (set == 0 && r % 3 == 0) {
                l0 = (size_t)snprintf(kb[n][0], 16, "r%03d", r);
                memcpy(kb[n][1], kb[n][0], l0 + 1); /* the row and a NUL: [k, k"\0") */
                l1 = l0 + 1;
            } else if (set == 1) {
                l0 = (size_t)snprintf(kb[n][0], 16, "r%03d", r);
                l1 = (size_t)snprintf(kb[n][1], 16, "r%03d", r + 1);
            } else if (set == 2 && r % 4 == 0) {
                l0 = (size_t)snprintf(kb[n][0], 16, "r%03d5", r);
                l1 = (size_t)snprintf(kb[n][1], 16, "r%03d", r + 3);
            } else if (set == 3 && (r == 5 || r == 28 || r == 40)) {
                l0 = (size_t)snprintf(kb[n][0], 16, "r%03d", r);
                l1 = (size_t)snprintf(kb[n][1], 16, "r%03d", r == 28 ? 33 : r + 2);
            } else {
                continue;
            }
            rr[n].start = wc_bytes_of((const uint8_t *)kb[n][0], l0);
            rr[n].stop = wc_bytes_of((const uint8_t *)kb[n][1], l1);
            n++;
        }
        /* the rows read row by row that lie in a range */
        size_t idx[NROWS], ni = 0;
        for (size_t i = 0; i < nw; i++) {
            struct wc_bytes k = wc_bytes_str(wkeys[i]);
            for (size_t j = 0; j < n; j++) {
                size_t m0 = rr[j].start.len < k.len ? rr[j].start.len : k.len;
                size_t m1 = rr[j].stop.len < k.len ? rr[j].stop.len : k.len;
                int c0 = memcmp(k.data, rr[j].start.data, m0), c1 = memcmp(k.data, rr[j].stop.data, m1);
                bool ge = c0 > 0 || (c0 == 0 && k.len >= rr[j].start.len);
                bool lt = c1 < 0 || (c1 == 0 && k.len < rr[j].stop.len);
                if (ge && lt) {
                    idx[ni++] = i;
                    break;
                }
            }
        }
        for (int mode = 0; mode < 3; mode++) {
            struct wc_scan_options o = *base;
            o.ranges = rr;
            o.nranges = n;
            o.reversed = mode == 1;
            if (mode == 2)
                o.row_filter = fixture_pass_all;
            size_t ng = scan_rows(t, &o, got, gkeys);
            if (ng != ni)
                fail_msg("round %d options %d range set %d mode %d: %zu rows scanned, %zu read",
                         round, v, set, mode, ng, ni);
            for (size_t i = 0; i < ni; i++) {
                size_t j = o.reversed ? ni - 1 - i : i;
                if (strcmp(gkeys[j], wkeys[idx[i]]) != 0 || strcmp(got[j], want[idx[i]]) != 0)
                    fail_msg("round %d options %d range set %d mode %d row %s:\n scan %s %s\n "
                             "get  %s",
                             round, v, set, mode, wkeys[idx[i]], gkeys[j], got[j], want[idx[i]]);
            }
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

/* Rows of every length from 1 to 40 bytes, each with qualifiers of lengths 0 to 40, read back
 * byte for byte by a forward and a reversed scan: from the memstore, from a block file (whose
 * qualifiers the scanner copies) and from both. The scanner copies row keys and qualifiers with
 * word moves chosen by length (0, 1-3, 4-7, 8-16, longer); a wrong case shows up here. */
#define LEN_ROWS 40
static const size_t qlens[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 40};
#define NQLENS (sizeof qlens / sizeof qlens[0])

static void len_row(size_t len, uint8_t *out)
{
    for (size_t i = 0; i < len; i++)
        out[i] = (uint8_t)('a' + (i * 7 + len) % 26);
}

static void len_qual(size_t row_len, size_t qlen, uint8_t *out)
{
    for (size_t i = 0; i < qlen; i++)
        out[i] = (uint8_t)('A' + (i * 5 + qlen + row_len) % 26);
}

static int cmp_len_rows(const void *a, const void *b)
{
    uint8_t x[LEN_ROWS], y[LEN_ROWS];
    size_t lx = *(const size_t *)a, ly = *(const size_t *)b;
    len_row(lx, x);
    len_row(ly, y);
    int c = memcmp(x, y, lx < ly ? lx : ly);
    return c ? c : (lx > ly) - (lx < ly);
}

static int cmp_qlens(size_t row_len, size_t a, size_t b)
{
    uint8_t x[64], y[64];
    len_qual(row_len, a, x);
    len_qual(row_len, b, y);
    int c = memcmp(x, y, a < b ? a : b);
    return c ? c : (a > b) - (a < b);
}

static void check_len_scan(struct wc_table *t, bool reversed, const size_t *order)
{
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.reversed = reversed;
    struct wc_scanner *sc = NULL;
    struct ct_err err = {0};
    assert_int_equal(wc_scanner_open(t, &o, &sc, &err), CT_OK);
    struct wc_row r;
    size_t n = 0;
    int rc;
    while ((rc = wc_scanner_next(sc, &r, &err)) == CT_OK) {
        assert_true(n < LEN_ROWS);
        size_t len = order[reversed ? LEN_ROWS - 1 - n : n];
        uint8_t row[LEN_ROWS];
        len_row(len, row);
        assert_int_equal(r.key.len, len);
        assert_memory_equal(r.key.data, row, len);
        /* qualifiers in byte order */
        size_t qo[NQLENS];
        memcpy(qo, qlens, sizeof qo);
        for (size_t i = 1; i < NQLENS; i++)
            for (size_t j = i; j > 0 && cmp_qlens(len, qo[j - 1], qo[j]) > 0; j--) {
                size_t x = qo[j];
                qo[j] = qo[j - 1];
                qo[j - 1] = x;
            }
        assert_int_equal(r.ncells, NQLENS);
        for (size_t q = 0; q < NQLENS; q++) {
            const struct wc_cell *c = &r.cells[q];
            uint8_t qual[64];
            len_qual(len, qo[q], qual);
            assert_int_equal(c->row.len, len);
            assert_memory_equal(c->row.data, row, len);
            assert_int_equal(c->qualifier.len, qo[q]);
            if (qo[q])
                assert_memory_equal(c->qualifier.data, qual, qo[q]);
            char want[32];
            snprintf(want, sizeof want, "v%zu.%zu", len, qo[q]);
            assert_int_equal(c->value.len, strlen(want));
            assert_memory_equal(c->value.data, want, strlen(want));
        }
        n++;
    }
    assert_int_equal(rc, CT_NOTFOUND);
    assert_int_equal(n, LEN_ROWS);
    wc_scanner_close(sc);
}

static void test_scans_return_rows_and_qualifiers_of_every_length_byte_exact(void **state)
{
    (void)state;
    const char *fams[] = {"f"};
    fixture_table_create(g_store, "lens", fams, 1, 0);
    struct wc_table *t = fixture_table_open(g_store, "lens");
    size_t order[LEN_ROWS];
    for (size_t i = 0; i < LEN_ROWS; i++)
        order[i] = i + 1;
    qsort(order, LEN_ROWS, sizeof order[0], cmp_len_rows);
    struct ct_err err = {0};
    for (int stage = 0; stage < 3; stage++) {
        /* stage 0: memstore only; 1: flushed to a file; 2: rewritten over the file, so every
         * row is in both (the newer cell of each column from the memstore) */
        if (stage != 1) {
            for (size_t len = 1; len <= LEN_ROWS; len++) {
                uint8_t row[LEN_ROWS];
                len_row(len, row);
                for (size_t q = 0; q < NQLENS; q++) {
                    uint8_t qual[64];
                    char val[32];
                    len_qual(len, qlens[q], qual);
                    snprintf(val, sizeof val, "v%zu.%zu", len, qlens[q]);
                    struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("f"),
                                            wc_bytes_of(qual, qlens[q]), wc_bytes_str(val),
                                            (int64_t)(1000 + stage)};
                    struct wc_row_mutation rm = {wc_bytes_of(row, len), &m, 1};
                    assert_int_equal(wc_mutate_row(t, &rm, WC_DURABILITY_ASYNC_WAL, &err), CT_OK);
                }
            }
        } else {
            assert_int_equal(wc_table_flush(g_store, "lens", &err), CT_OK);
        }
        check_len_scan(t, false, order);
        check_len_scan(t, true, order);
    }
    wc_table_close(t);
}

/* One put or marker (family f) of the merge test below. */
static void mput(struct wc_table *t, const char *row, enum wc_mutation_op op, const char *q,
                 int64_t ts, const char *v)
{
    struct wc_mutation m = {op, wc_bytes_str("f"), wc_bytes_str(q), wc_bytes_str(v), ts};
    struct wc_row_mutation rm = {wc_bytes_str(row), &m, 1};
    struct ct_err err = {0};
    assert_int_equal(wc_mutate_row(t, &rm, WC_DURABILITY_ASYNC_WAL, &err), CT_OK);
}

/* Reads row by row into "q@ts=v" texts joined by spaces, forward or reversed. */
static size_t merge_scan(struct wc_table *t, bool reversed, uint32_t versions, char out[][256])
{
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.reversed = reversed;
    o.max_versions = versions;
    struct wc_scanner *sc = NULL;
    struct ct_err err = {0};
    assert_int_equal(wc_scanner_open(t, &o, &sc, &err), CT_OK);
    struct wc_row r;
    size_t n = 0;
    int rc;
    while ((rc = wc_scanner_next(sc, &r, &err)) == CT_OK) {
        assert_true(n < 8);
        size_t len =
            (size_t)snprintf(out[n], 256, "%.*s:", (int)r.key.len, (const char *)r.key.data);
        for (size_t i = 0; i < r.ncells && len < 256; i++)
            len += (size_t)snprintf(
                out[n] + len, 256 - len, " %.*s@%lld=%.*s", (int)r.cells[i].qualifier.len,
                (const char *)r.cells[i].qualifier.data, (long long)r.cells[i].ts_ms,
                (int)r.cells[i].value.len, (const char *)r.cells[i].value.data);
        n++;
    }
    assert_int_equal(rc, CT_NOTFOUND);
    wc_scanner_close(sc);
    return n;
}

/* A row whose cells are spread over two block files and the memstore, with delete markers in the
 * later inputs and three versions kept, between rows held by one input each: the merge of the
 * inputs on the row (found once per row, compared after the row) must apply every marker to the
 * older inputs' cells and keep the newest versions in order, forward and reversed, whatever
 * input holds which column. Fails if an input leaves the merge too early or too late, or if the
 * single-input walk takes a row two inputs hold. */
static void test_scan_merges_a_row_over_files_and_memstore_with_later_markers(void **state)
{
    (void)state;
    const char *fams[] = {"f"};
    fixture_table_create(g_store, "mrg", fams, 1, 3);
    struct wc_table *t = fixture_table_open(g_store, "mrg");
    struct ct_err err = {0};
    /* file 1 */
    mput(t, "r0", WC_OP_PUT, "q1", 100, "x0");
    mput(t, "r1", WC_OP_PUT, "q1", 100, "a100");
    mput(t, "r1", WC_OP_PUT, "q1", 90, "a90");
    mput(t, "r1", WC_OP_PUT, "q2", 100, "b100");
    mput(t, "r1", WC_OP_PUT, "q3", 50, "c50");
    mput(t, "r1", WC_OP_PUT, "q4", 10, "d10");
    assert_int_equal(wc_table_flush(g_store, "mrg", &err), CT_OK);
    /* file 2: masks q1 up to 95, q3 at 50 exactly; adds to q2 */
    mput(t, "r1", WC_OP_DELETE_COLUMN, "q1", 95, "");
    mput(t, "r1", WC_OP_PUT, "q2", 110, "b110");
    mput(t, "r1", WC_OP_DELETE_VERSION, "q3", 50, "");
    mput(t, "r2", WC_OP_PUT, "q1", 100, "y0");
    assert_int_equal(wc_table_flush(g_store, "mrg", &err), CT_OK);
    /* memstore: newer q1 and q2, an older q2 below file 1's, q4 masked family-wide up to 20 */
    mput(t, "r1", WC_OP_PUT, "q1", 120, "a120");
    mput(t, "r1", WC_OP_PUT, "q2", 105, "b105");
    mput(t, "r1", WC_OP_PUT, "q2", 1, "b1");
    mput(t, "r1", WC_OP_DELETE_FAMILY, "", 20, "");
    mput(t, "r3", WC_OP_PUT, "q1", 100, "z0");
    char got[8][256];
    const char *want3[] = {"r0: q1@100=x0",
                           "r1: q1@120=a120 q1@100=a100 q2@110=b110 q2@105=b105 q2@100=b100",
                           "r2: q1@100=y0", "r3: q1@100=z0"};
    const char *want1[] = {"r0: q1@100=x0", "r1: q1@120=a120 q2@110=b110", "r2: q1@100=y0",
                           "r3: q1@100=z0"};
    for (int rev = 0; rev < 2; rev++) {
        size_t n = merge_scan(t, rev, 3, got);
        assert_int_equal(n, 4);
        for (size_t i = 0; i < 4; i++)
            assert_string_equal(got[i], want3[rev ? 3 - i : i]);
        n = merge_scan(t, rev, 1, got);
        assert_int_equal(n, 4);
        for (size_t i = 0; i < 4; i++)
            assert_string_equal(got[i], want1[rev ? 3 - i : i]);
    }
    wc_table_close(t);
}

/* Reversed scans walk a row that one input holds without the merge (scan.c, scanner_find_row)
 * and rewind a row of one cell without reloading it. Rows held by one block file that still need
 * the matcher's rules (three versions of a column, a column delete masking an older put, a
 * family delete masking the whole row, a version delete), rows of one cell, and rows that must
 * not take the path (a file and the memstore both holding cells of the row, a row whose only
 * cell in the newer file is a marker) must read alike in both directions and as written: the
 * reversed scan's rows are the forward scan's, last to first. Fails if the single-input walk
 * takes a row two inputs hold, or a rewind keeps a cell it should have moved from. */
static void test_reversed_single_input_rows_read_as_forward_ones(void **state)
{
    (void)state;
    const char *fams[] = {"f"};
    fixture_table_create(g_store, "rsi", fams, 1, 3);
    struct wc_table *t = fixture_table_open(g_store, "rsi");
    struct ct_err err = {0};
    /* file 1 */
    mput(t, "s0", WC_OP_PUT, "q1", 100, "one");
    mput(t, "s1", WC_OP_PUT, "q1", 100, "v100");
    mput(t, "s1", WC_OP_PUT, "q1", 90, "v90");
    mput(t, "s1", WC_OP_PUT, "q1", 80, "v80");
    mput(t, "s1", WC_OP_PUT, "q1", 70, "v70");
    mput(t, "s2", WC_OP_PUT, "q1", 90, "m90");
    mput(t, "s2", WC_OP_DELETE_COLUMN, "q1", 95, "");
    mput(t, "s2", WC_OP_PUT, "q2", 100, "k100");
    mput(t, "s3", WC_OP_PUT, "q1", 10, "gone");
    mput(t, "s3", WC_OP_DELETE_FAMILY, "", 20, "");
    mput(t, "s4", WC_OP_PUT, "q1", 100, "f100");
    mput(t, "s5", WC_OP_PUT, "q1", 50, "e50");
    mput(t, "s5", WC_OP_PUT, "q1", 60, "e60");
    mput(t, "s5", WC_OP_DELETE_VERSION, "q1", 60, "");
    mput(t, "s6", WC_OP_PUT, "q1", 100, "p100");
    assert_int_equal(wc_table_flush(g_store, "rsi", &err), CT_OK);
    /* file 2: only a marker of s6 */
    mput(t, "s6", WC_OP_DELETE_COLUMN, "q1", 100, "");
    mput(t, "s7", WC_OP_PUT, "q1", 100, "last");
    assert_int_equal(wc_table_flush(g_store, "rsi", &err), CT_OK);
    /* memstore: s4 also here (two inputs) */
    mput(t, "s4", WC_OP_PUT, "q2", 100, "m100");
    char fwd[8][256], rev[8][256];
    const char *want3[] = {"s0: q1@100=one",
                           "s1: q1@100=v100 q1@90=v90 q1@80=v80",
                           "s2: q2@100=k100",
                           "s4: q1@100=f100 q2@100=m100",
                           "s5: q1@50=e50",
                           "s7: q1@100=last"};
    const char *want1[] = {"s0: q1@100=one", "s1: q1@100=v100", "s2: q2@100=k100",
                           "s4: q1@100=f100 q2@100=m100", "s5: q1@50=e50", "s7: q1@100=last"};
    for (uint32_t v = 1; v <= 3; v += 2) {
        const char **want = v == 3 ? want3 : want1;
        size_t n = merge_scan(t, false, v, fwd);
        size_t m = merge_scan(t, true, v, rev);
        assert_int_equal(n, 6);
        assert_int_equal(m, 6);
        for (size_t i = 0; i < 6; i++) {
            assert_string_equal(fwd[i], want[i]);
            assert_string_equal(rev[i], want[5 - i]);
        }
    }
    wc_table_close(t);
}

static void pin_value(int row, int q, char *out, size_t *len)
{
    *len = 100 + (size_t)((row * 7 + q * 13) % 200);
    for (size_t i = 0; i < *len; i++)
        out[i] = (char)('a' + (row * 31 + q * 17 + (int)i) % 26);
}

/* Block-file cells are returned in place when their row ends inside the block the input holds
 * (scan.c invariant (6)), copied otherwise. With 1 KiB compressed blocks that no cache keeps
 * (BLOCKCACHE false: an iterator frees its block when it moves to another), rows of one to three
 * cells of 100-300 bytes end at every position of a block, at its end too, where the step out of
 * the row frees the block: every value must still read as written once wc_scanner_next has
 * returned, forward and reversed, with and without a row in the memstore too (and under ASan, no
 * byte of a freed block is read). Fails if a cell points into a block its input left. */
static void test_cells_in_place_stay_valid_until_the_next_row(void **state)
{
    (void)state;
    struct wc_family_desc fd;
    wc_family_desc_init(&fd, "f");
    fd.blocksize = 1024;
    fd.blockcache = false;
    fd.compression = WC_COMPRESSION_SNAPPY;
    struct wc_table_desc d;
    wc_table_desc_init(&d, "pin");
    d.families = &fd;
    d.nfamilies = 1;
    struct ct_err err = {0};
    assert_int_equal(wc_table_create(g_store, &d, NULL, 0, &err), CT_OK);
    struct wc_table *t = fixture_table_open(g_store, "pin");
    char row[16], q[8], v[512];
    size_t vl;
    for (int r = 0; r < 300; r++) {
        snprintf(row, sizeof row, "p%04d", r);
        for (int k = 0; k <= r % 3; k++) {
            snprintf(q, sizeof q, "q%d", k);
            pin_value(r, k, v, &vl);
            v[vl] = 0;
            mput(t, row, WC_OP_PUT, q, 100, v);
        }
        if (r == 149)
            assert_int_equal(wc_table_flush(g_store, "pin", &err), CT_OK);
    }
    assert_int_equal(wc_table_flush(g_store, "pin", &err), CT_OK);
    for (int mem = 0; mem < 2; mem++) {
        if (mem) /* row p0100 in a file and the memstore */
            mput(t, "p0100", WC_OP_PUT, "q9", 100, "m");
        for (int rev = 0; rev < 2; rev++) {
            struct wc_scan_options o;
            wc_scan_options_init(&o);
            o.reversed = rev;
            struct wc_scanner *sc = NULL;
            assert_int_equal(wc_scanner_open(t, &o, &sc, &err), CT_OK);
            struct wc_row wr;
            int n = 0, rc;
            while ((rc = wc_scanner_next(sc, &wr, &err)) == CT_OK) {
                int r = rev ? 299 - n : n;
                snprintf(row, sizeof row, "p%04d", r);
                assert_int_equal(wr.key.len, 5);
                assert_memory_equal(wr.key.data, row, 5);
                size_t want = (size_t)(r % 3 + 1) + (mem && r == 100);
                assert_int_equal(wr.ncells, want);
                for (size_t k = 0; k < (size_t)(r % 3 + 1); k++) {
                    pin_value(r, (int)k, v, &vl);
                    assert_int_equal(wr.cells[k].qualifier.len, 2);
                    assert_int_equal(wr.cells[k].qualifier.data[1], '0' + k);
                    assert_int_equal(wr.cells[k].value.len, vl);
                    assert_memory_equal(wr.cells[k].value.data, v, vl);
                }
                n++;
            }
            assert_int_equal(rc, CT_NOTFOUND);
            assert_int_equal(n, 300);
            wc_scanner_close(sc);
        }
    }
    wc_table_close(t);
}

/* A column without a qualifier (has_qualifier false) reads its whole family whatever its
 * qualifier field holds: wc.h gives that field meaning only with has_qualifier, and a caller that
 * left it unset once made the scanner size a copy by its garbage length (out of memory). */
static void test_a_family_column_ignores_its_unset_qualifier(void **state)
{
    (void)state;
    const char *fams[] = {"f"};
    fixture_table_create(g_store, "fcol", fams, 1, 1);
    struct wc_table *t = fixture_table_open(g_store, "fcol");
    mput(t, "r0", WC_OP_PUT, "q1", 100, "x0");
    mput(t, "r1", WC_OP_PUT, "q2", 100, "y0");
    static const uint8_t junk[1] = {0};
    struct wc_column col = {wc_bytes_str("f"), {junk, (size_t)1 << 60}, false};
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.columns = &col;
    o.ncolumns = 1;
    char got[8][256];
    for (int rev = 0; rev < 2; rev++) {
        o.reversed = rev;
        struct ct_err err = {0};
        struct wc_scanner *sc = NULL;
        int rc = wc_scanner_open(t, &o, &sc, &err);
        if (rc != CT_OK)
            fail_msg("open: %s", err.msg);
        struct wc_row wr;
        size_t n = 0;
        while ((rc = wc_scanner_next(sc, &wr, &err)) == CT_OK && n < 8) {
            got[n][0] = 0;
            fixture_fmt_row(got[n++], sizeof(got[0]), &wr);
        }
        assert_int_equal(rc, CT_NOTFOUND);
        wc_scanner_close(sc);
        assert_int_equal(n, 2);
        assert_non_null(strstr(got[rev ? 1 : 0], "q1"));
        assert_non_null(strstr(got[rev ? 0 : 1], "q2"));
        struct wc_result res;
        assert_int_equal(wc_get(t, wc_bytes_str("r1"), &o, &res, &err), CT_OK);
        assert_int_equal(res.row.ncells, 1);
        wc_result_release(&res);
    }
    wc_table_close(t);
}

/* Cell i of a long row of the test below: qualifier "q%05zu", value "<tag>-%05zu" then dots. */
static void long_cell(size_t i, char tag, char q[32], char v[256])
{
    snprintf(q, 32, "q%05zu", i);
    memset(v, '.', 256);
    int n = snprintf(v, 256, "%c-%05zu", tag, i);
    v[n] = '.';
}

/* Reads row `row` of t (alone, as one scan) and checks its n cells (long_cell, values cut to
 * vlen bytes), in qualifier order. */
static void check_long_row(struct wc_table *t, const char *row, char tag, size_t n, size_t vlen,
                           bool reversed)
{
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.start_row = wc_bytes_str(row);
    o.limit_rows = 1;
    o.reversed = reversed;
    char stop[32];
    snprintf(stop, sizeof(stop), "%s~", row);
    if (!reversed)
        o.stop_row = wc_bytes_str(stop);
    struct ct_err err = {0};
    struct wc_scanner *sc = NULL;
    assert_int_equal(wc_scanner_open(t, &o, &sc, &err), CT_OK);
    struct wc_row r;
    assert_int_equal(wc_scanner_next(sc, &r, &err), CT_OK);
    assert_int_equal(r.key.len, strlen(row));
    assert_memory_equal(r.key.data, row, r.key.len);
    assert_int_equal(r.ncells, n);
    for (size_t i = 0; i < n; i++) {
        char q[32], v[256];
        long_cell(i, tag, q, v);
        assert_int_equal(r.cells[i].qualifier.len, strlen(q));
        assert_memory_equal(r.cells[i].qualifier.data, q, strlen(q));
        assert_int_equal(r.cells[i].value.len, vlen);
        assert_memory_equal(r.cells[i].value.data, v, vlen);
    }
    wc_scanner_close(sc);
}

/* A closed scanner leaves its row buffers (cells array, one arena chunk) to its thread's next
 * scanner (scan.c, scanner_alloc): rows of many cells read one after another, by scanners
 * opened in turn, nested, forward and reversed, from a block file and the memstore, of sizes
 * below and above the kept buffers' bound, must each come back whole and byte-exact (ASan
 * builds also catch a kept buffer used after it was freed or by two scanners at once). */
static void test_long_rows_read_in_turn_reuse_row_buffers_correctly(void **state)
{
    (void)state;
    const char *fams[] = {"f"};
    fixture_table_create(g_store, "keep", fams, 1, 1);
    struct wc_table *t = fixture_table_open(g_store, "keep");
    struct ct_err err = {0};
    static const struct {
        const char *row;
        char tag;
        size_t n, vlen;
    } rows[] = {
        {"ra", 'a', 300, 40}, {"rb", 'b', 40, 9}, {"rc", 'c', 1000, 100}, {"rd", 'd', 9, 200}};
    for (size_t k = 0; k < 4; k++) {
        for (size_t i = 0; i < rows[k].n; i++) {
            char q[32], v[256];
            long_cell(i, rows[k].tag, q, v);
            struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str(q),
                                    wc_bytes_of((const uint8_t *)v, rows[k].vlen), 100};
            struct wc_row_mutation rm = {wc_bytes_str(rows[k].row), &m, 1};
            assert_int_equal(wc_mutate_row(t, &rm, WC_DURABILITY_ASYNC_WAL, &err), CT_OK);
        }
        if (k == 1) /* ra, rb in a block file; rc, rd in the memstore */
            assert_int_equal(wc_table_flush(g_store, "keep", &err), CT_OK);
    }
    static const size_t order[] = {0, 1, 2, 0, 3, 2, 1, 0, 3, 3, 0};
    for (int rev = 0; rev < 2; rev++)
        for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
            size_t k = order[i];
            check_long_row(t, rows[k].row, rows[k].tag, rows[k].n, rows[k].vlen, rev);
        }
    /* two scanners open at once: only one can have the kept buffers */
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_scanner *s1 = NULL, *s2 = NULL;
    assert_int_equal(wc_scanner_open(t, &o, &s1, &err), CT_OK);
    o.reversed = true;
    assert_int_equal(wc_scanner_open(t, &o, &s2, &err), CT_OK);
    struct wc_row r1, r2;
    for (size_t k = 0; k < 4; k++) {
        assert_int_equal(wc_scanner_next(s1, &r1, &err), CT_OK);
        assert_int_equal(wc_scanner_next(s2, &r2, &err), CT_OK);
        assert_memory_equal(r1.key.data, rows[k].row, 2);
        assert_int_equal(r1.ncells, rows[k].n);
        assert_memory_equal(r2.key.data, rows[3 - k].row, 2);
        assert_int_equal(r2.ncells, rows[3 - k].n);
        assert_int_equal(r1.cells[r1.ncells - 1].value.data[0], rows[k].tag);
        assert_int_equal(r2.cells[0].value.data[0], rows[3 - k].tag);
    }
    wc_scanner_close(s2);
    wc_scanner_close(s1);
    check_long_row(t, "rc", 'c', 1000, 100, false);
    check_long_row(t, "ra", 'a', 300, 40, true);
    wc_table_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_family_column_ignores_its_unset_qualifier),
        cmocka_unit_test(test_long_rows_read_in_turn_reuse_row_buffers_correctly),
        cmocka_unit_test(test_full_scans_equal_point_reads_under_random_history),
        cmocka_unit_test(test_scans_return_rows_and_qualifiers_of_every_length_byte_exact),
        cmocka_unit_test(test_scan_merges_a_row_over_files_and_memstore_with_later_markers),
        cmocka_unit_test(test_reversed_single_input_rows_read_as_forward_ones),
        cmocka_unit_test(test_cells_in_place_stay_valid_until_the_next_row),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
