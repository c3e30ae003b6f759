/* test_engine_longrows.c - rows of many small cells (time-series rows before their hour is
 * compacted: hundreds of single-point cells) read by forward scans, reversed scans and gets,
 * checked against a model of docs/storage-contract.md ("What a read returns", "Deletes") kept by
 * the test: versions, delete-column and delete-version markers, time ranges and qualifier ranges.
 *
 * Runs of single-version puts in a file's block are pushed straight from the block's entries
 * (scan.c scanner_walk_puts), stopping at second versions, markers and times outside the read;
 * the reads below with several versions, a time range and a qualifier range cover its exits.
 * The scanner steps through such rows with the block's "same row as the previous entry" flags
 * instead of comparing row keys, and a reversed scan finds a row's first cell the same way; the
 * flags are false at restart points (no shared prefix) and across blocks. Rows here are chosen
 * so that a wrong flag shows: "k10" with qualifiers starting with '0' is followed by "k100",
 * whose key shares more bytes with it than "k10"'s row length, rows have 1 to 300 cells over
 * 1 KiB blocks (many restart points and block changes inside a row), two families (one stored
 * plain, values read in place; one snappy-compressed, values copied) and 1-40 byte values. The
 * cells are spread over two block files and a memstore (rows one input holds and rows merged
 * over several), then compacted into one file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/wc.h"
#include "tests/lib/ctest.h"
#include "tests/lib/fixture.h"

#define NROWS  8
#define NQUALS 300
#define NFAMS  2
#define MAXPUT 3 /* puts per cell: at most the family's VERSIONS, so none is collected */

static const char *const rows[NROWS] = {"k1", "k10", "k100", "k1000", "k101", "k11", "k2", "k3"};
static const char *const fams[NFAMS] = {"p", "z"};

struct mcol { /* the model of one column */
    int nput;
    int64_t put_ts[MAXPUT];
    uint8_t val[MAXPUT][40];
    uint8_t vlen[MAXPUT];
    int64_t delcol; /* newest delete-column marker, INT64_MIN: none */
    int ndv;
    int64_t dv[4]; /* delete-version markers */
};

static struct mcol model[NFAMS][NROWS][NQUALS];
static int64_t g_ts = 1000;

#define QL 3
static void qual_of(int q, uint8_t out[QL])
{
    out[0] = '0'; /* "k10" + any qualifier shares "k100" */
    out[1] = (uint8_t)(q / 256);
    out[2] = (uint8_t)(q % 256);
}

static void apply(struct wc_table *t, int f, int r, int q, enum wc_mutation_op op, uint64_t *seed)
{
    struct mcol *c = &model[f][r][q];
    uint8_t qb[QL], vb[40];
    qual_of(q, qb);
    struct wc_mutation m = {op, wc_bytes_str(fams[f]), wc_bytes_of(qb, QL), {NULL, 0}, 0};
    int64_t ts = g_ts += 1 + (int64_t)(fixture_rnd(seed) % 3);
    if (op == WC_OP_PUT) {
        if (c->nput == MAXPUT)
            return;
        size_t vl =
            fixture_rnd(seed) % 8 == 0 ? 17 + fixture_rnd(seed) % 24 : 1 + fixture_rnd(seed) % 12;
        for (size_t i = 0; i < vl; i++)
            vb[i] = (uint8_t)fixture_rnd(seed);
        m.value = wc_bytes_of(vb, vl);
        c->put_ts[c->nput] = ts;
        memcpy(c->val[c->nput], vb, vl);
        c->vlen[c->nput] = (uint8_t)vl;
        c->nput++;
    } else if (op == WC_OP_DELETE_COLUMN) {
        if (!c->nput)
            return;
        ts = c->put_ts[fixture_rnd(seed) % (unsigned)c->nput]; /* covers that put and older */
        c->delcol = ts > c->delcol ? ts : c->delcol;
    } else {
        if (!c->nput || c->ndv == 4)
            return;
        ts = c->put_ts[fixture_rnd(seed) % (unsigned)c->nput];
        c->dv[c->ndv++] = ts;
    }
    m.ts_ms = ts;
    struct wc_row_mutation rm = {wc_bytes_str(rows[r]), &m, 1};
    struct ct_err err;
    assert_int_equal(wc_mutate_row(t, &rm, WC_DURABILITY_SKIP_WAL, &err), CT_OK);
}

/* Writes a round: every row gets puts on a random run of qualifiers; later rounds add markers. */
static void write_round(struct wc_table *t, int round, uint64_t *seed)
{
    for (int f = 0; f < NFAMS; f++)
        for (int r = 0; r < NROWS; r++) {
            if (fixture_rnd(seed) % 4 == 0)
                continue; /* not in this round's input */
            int n = r == 0 ? 1 : 1 + (int)(fixture_rnd(seed) % NQUALS);
            int q0 = (int)(fixture_rnd(seed) % (NQUALS - n + 1));
            for (int q = q0; q < q0 + n; q++) {
                apply(t, f, r, q, WC_OP_PUT, seed);
                if (round > 0 && fixture_rnd(seed) % 16 == 0)
                    apply(t, f, r, q, WC_OP_DELETE_COLUMN, seed);
                if (round > 0 && fixture_rnd(seed) % 16 == 0)
                    apply(t, f, r, q, WC_OP_DELETE_VERSION, seed);
            }
        }
}

struct rq { /* a read's options, as the model sees them */
    uint32_t versions;
    int64_t tmin, tmax;
    int qmin, qmax; /* qualifier indexes, inclusive */
    int fam;        /* -1: both */
};

static void fmt_cell(char **p, char *end, const char *row, const char *fam, const uint8_t *q,
                     int64_t ts, const uint8_t *v, size_t vl)
{
    *p += snprintf(*p, (size_t)(end - *p), "%s/%s/%02x%02x%02x/%lld/", row, fam, q[0], q[1], q[2],
                   (long long)ts);
    for (size_t i = 0; i < vl && *p < end - 3; i++)
        *p += snprintf(*p, (size_t)(end - *p), "%02x", v[i]);
    *p += snprintf(*p, (size_t)(end - *p), ";");
    assert_true(*p < end - 1);
}

/* The model's answer for one row (empty string: no cell). */
static void model_row(int r, const struct rq *o, char *out, size_t size)
{
    char *p = out, *end = out + size;
    *p = 0;
    for (int f = 0; f < NFAMS; f++) {
        if (o->fam >= 0 && o->fam != f)
            continue;
        for (int q = o->qmin; q <= o->qmax; q++) {
            const struct mcol *c = &model[f][r][q];
            int idx[MAXPUT], n = 0;
            for (int i = 0; i < c->nput; i++) {
                int64_t ts = c->put_ts[i];
                bool del = ts <= c->delcol;
                for (int d = 0; d < c->ndv; d++)
                    del |= c->dv[d] == ts;
                if (!del && ts >= o->tmin && ts < o->tmax)
                    idx[n++] = i;
            }
            /* newest first: puts were made in increasing ts */
            for (int k = 0; k < n && k < (int)o->versions; k++) {
                int i = idx[n - 1 - k];
                uint8_t qb[QL];
                qual_of(q, qb);
                fmt_cell(&p, end, rows[r], fams[f], qb, c->put_ts[i], c->val[i], c->vlen[i]);
            }
        }
    }
}

static void fmt_wc_row(const struct wc_row *wr, char *out, size_t size)
{
    char *p = out + strlen(out), *end = out + size;
    for (size_t i = 0; i < wr->ncells; i++) {
        const struct wc_cell *c = &wr->cells[i];
        char row[16], fam[8];
        assert_true(c->row.len < sizeof row && c->family.len < sizeof fam &&
                    c->qualifier.len == QL);
        memcpy(row, c->row.data, c->row.len);
        row[c->row.len] = 0;
        memcpy(fam, c->family.data, c->family.len);
        fam[c->family.len] = 0;
        fmt_cell(&p, end, row, fam, c->qualifier.data, c->ts_ms, c->value.data, c->value.len);
    }
}

#define ROWTXT (NFAMS * NQUALS * MAXPUT * 110)

static void set_options(const struct rq *q, struct wc_scan_options *o, struct wc_column *col,
                        uint8_t qmin[QL], uint8_t qmax[QL])
{
    wc_scan_options_init(o);
    o->max_versions = q->versions;
    o->tmin_ms = q->tmin;
    o->tmax_ms = q->tmax;
    if (q->qmin > 0 || q->qmax < NQUALS - 1) {
        qual_of(q->qmin, qmin);
        qual_of(q->qmax, qmax);
        o->has_qualifier_range = true;
        o->qualifier_min = wc_bytes_of(qmin, QL);
        o->qualifier_min_inclusive = true;
        o->qualifier_max = wc_bytes_of(qmax, QL);
        o->qualifier_max_inclusive = true;
    }
    if (q->fam >= 0) {
        col->family = wc_bytes_str(fams[q->fam]);
        col->qualifier = wc_bytes_of(NULL, 0);
        col->has_qualifier = false;
        o->columns = col;
        o->ncolumns = 1;
    }
}

static void check_reads(struct wc_table *t, const char *stage, const struct rq *q)
{
    static char want[NROWS][ROWTXT], got[ROWTXT];
    struct ct_err err;
    struct wc_scan_options o;
    struct wc_column col = {{NULL, 0}, {NULL, 0}, false};
    uint8_t qmin[QL], qmax[QL];
    set_options(q, &o, &col, qmin, qmax);
    int nw = 0;
    for (int r = 0; r < NROWS; r++) {
        model_row(r, q, want[r], ROWTXT);
        nw += want[r][0] != 0;
        /* a get of the row */
        struct wc_result res;
        assert_int_equal(wc_get(t, wc_bytes_str(rows[r]), &o, &res, &err), CT_OK);
        got[0] = 0;
        fmt_wc_row(&res.row, got, ROWTXT);
        wc_result_release(&res);
        if (strcmp(got, want[r]) != 0)
            fail_msg("%s v%u get %s:\n got  %.300s\n want %.300s", stage, q->versions, rows[r], got,
                     want[r]);
    }
    for (int rev = 0; rev < 2; rev++) {
        o.reversed = rev;
        struct wc_scanner *sc;
        assert_int_equal(wc_scanner_open(t, &o, &sc, &err), CT_OK);
        struct wc_row wr;
        int rc, seen = 0;
        int r = rev ? NROWS - 1 : 0;
        while ((rc = wc_scanner_next(sc, &wr, &err)) == CT_OK) {
            while (r >= 0 && r < NROWS && !want[r][0])
                r += rev ? -1 : 1;
            assert_true(r >= 0 && r < NROWS);
            got[0] = 0;
            fmt_wc_row(&wr, got, ROWTXT);
            if (strcmp(got, want[r]) != 0)
                fail_msg("%s v%u %s scan row %s:\n got  %.300s\n want %.300s", stage, q->versions,
                         rev ? "reversed" : "forward", rows[r], got, want[r]);
            seen++;
            r += rev ? -1 : 1;
        }
        assert_int_equal(rc, CT_NOTFOUND);
        wc_scanner_close(sc);
        assert_int_equal(seen, nw);
    }
}

static void check_all(struct wc_table *t, const char *stage)
{
    const struct rq qs[] = {
        {1, 0, WC_TS_LATEST, 0, NQUALS - 1, -1}, {3, 0, WC_TS_LATEST, 0, NQUALS - 1, -1},
        {2, 0, WC_TS_LATEST, 0, NQUALS - 1, 1},  {3, g_ts / 3, g_ts * 2 / 3, 0, NQUALS - 1, -1},
        {1, 0, WC_TS_LATEST, 40, 222, 0},
    };
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++)
        check_reads(t, stage, &qs[i]);
}

static void test_rows_of_many_small_cells_read_as_the_model_says(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_options wo;
    wc_options_init(&wo);
    wo.data_dir = dir;
    wo.block_cache_bytes = 1 << 20;
    struct wc_store *s = fixture_store_open(&wo);
    struct wc_family_desc fd[NFAMS];
    for (int f = 0; f < NFAMS; f++) {
        wc_family_desc_init(&fd[f], fams[f]);
        fd[f].versions = MAXPUT;
        fd[f].blocksize = 1024;
    }
    fd[1].compression = WC_COMPRESSION_SNAPPY;
    struct wc_table_desc d;
    wc_table_desc_init(&d, "lr");
    d.families = fd;
    d.nfamilies = NFAMS;
    struct ct_err err;
    assert_int_equal(wc_table_create(s, &d, NULL, 0, &err), CT_OK);
    struct wc_table *t = fixture_table_open(s, "lr");
    for (int f = 0; f < NFAMS; f++)
        for (int r = 0; r < NROWS; r++)
            for (int q = 0; q < NQUALS; q++)
                model[f][r][q].delcol = INT64_MIN;
    uint64_t seed = 0x9e3779b97f4a7c15ull;

    write_round(t, 0, &seed);
    check_all(t, "memstore");
    assert_int_equal(wc_table_flush(s, "lr", &err), CT_OK);
    check_all(t, "one file");
    write_round(t, 1, &seed);
    assert_int_equal(wc_table_flush(s, "lr", &err), CT_OK);
    check_all(t, "two files");
    write_round(t, 2, &seed);
    check_all(t, "two files and a memstore");
    assert_int_equal(wc_table_flush(s, "lr", &err), CT_OK);
    assert_int_equal(wc_table_compact(s, "lr", NULL, true, &err), CT_OK);
    check_all(t, "compacted");

    wc_table_close(t);
    wc_close(s);
    ctest_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_of_many_small_cells_read_as_the_model_says),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
