/* scan_micro.c - instructions per row of the engine's scans over a TSD's data table, without the
 * query layer: opens DATA_DIR read-only (as query_micro does) and scans the whole data table with
 * the options the query layer's scans use (family "t" only; the reversed passes also with a
 * pass-through row filter, as query/qexec_scan.c's scan_range), forward and reversed, each with
 * the block cache empty at its start (cold) and full (warm): forward cold (nothing read yet),
 * forward warm, reversed warm, and, after a reopen, reversed cold. Under callgrind
 * (tools/bench/scan_micro_callgrind.sh) each pass is one dump (CALLGRIND_DUMP_STATS_AT before
 * and after it), so a pass's dump holds only that pass's instructions; without
 * valgrind the macros do nothing. Prints the rows and cells of each pass (the same in each).
 * Usage: scan_micro DATA_DIR
 * Build: make build/release/tools/bench/scan_micro (bench.mk); not run by `make bench`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else /* no valgrind headers: no dumps (the pass's rows are still printed) */
#define CALLGRIND_DUMP_STATS_AT(name) ((void)(name))
#endif

#include "schema/tsdb.h"
#include "storage/wc.h"

static enum wc_row_decision pass_row(void *arg, const uint8_t *row, size_t len)
{
    (void)row;
    *(size_t *)arg += len; /* touches the key, as the query's filter does */
    return WC_ROW_INCLUDE;
}

/* One scan of the whole table; returns rows (cells and value bytes in *cells, *bytes). */
static __attribute__((noinline)) long scan_pass(struct wc_table *wt, bool reversed, bool filter,
                                                long *cells, long *bytes)
{
    struct wc_column col = {wc_bytes_str("t"), {NULL, 0}, false};
    struct wc_scan_options so;
    wc_scan_options_init(&so);
    so.reversed = reversed;
    so.columns = &col;
    so.ncolumns = 1;
    size_t keyb = 0;
    if (filter) {
        so.row_filter = pass_row;
        so.row_filter_arg = &keyb;
    }
    struct ct_err err = {0};
    struct wc_scanner *sc = NULL;
    if (wc_scanner_open(wt, &so, &sc, &err) != CT_OK) {
        fprintf(stderr, "scan_micro: %s\n", err.msg);
        exit(1);
    }
    struct wc_row row;
    long rows = 0;
    int rc;
    *cells = *bytes = 0;
    while ((rc = wc_scanner_next(sc, &row, &err)) == CT_OK) {
        rows++;
        *cells += (long)row.ncells;
        for (size_t i = 0; i < row.ncells; i++)
            *bytes += (long)row.cells[i].value.len;
    }
    wc_scanner_close(sc);
    if (rc != CT_NOTFOUND) {
        fprintf(stderr, "scan_micro: %s\n", err.msg);
        exit(1);
    }
    return rows;
}

static void pass(struct wc_table *wt, const char *name, bool reversed, bool filter)
{
    long cells, bytes;
    CALLGRIND_DUMP_STATS_AT("setup");
    long rows = scan_pass(wt, reversed, filter, &cells, &bytes);
    CALLGRIND_DUMP_STATS_AT(name);
    printf("%-12s rows %ld cells %ld value bytes %ld\n", name, rows, cells, bytes);
}

static void open_dir(const char *dir, struct wc_store **s, struct tsdb **t)
{
    struct ct_err err = {0};
    struct tsdb_config c;
    tsdb_config_init(&c);
    c.read_only = true;
    if (tsdb_open_dir(dir, &c, s, t, &err) != CT_OK) {
        fprintf(stderr, "scan_micro: %s\n", err.msg);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: scan_micro DATA_DIR\n");
        return 2;
    }
    struct wc_store *s = NULL;
    struct tsdb *t = NULL;
    open_dir(argv[1], &s, &t);
    pass(tsdb_data_table(t), "fwd-cold", false, false);
    pass(tsdb_data_table(t), "fwd-warm", false, false);
    pass(tsdb_data_table(t), "rev-warm", true, true);
    tsdb_close(t);
    wc_close(s);
    open_dir(argv[1], &s, &t);
    pass(tsdb_data_table(t), "rev-cold", true, true);
    tsdb_close(t);
    wc_close(s);
    return 0;
}
