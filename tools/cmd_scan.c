/* cmd_scan.c - `ctsdb scan`: dumps the data rows of a metric over a time range, raw (row keys,
 * cells and the points decoded from every cell layout) or as import lines, like OpenTSDB's
 * `tsdb scan`. Reads the store read-only; scans every salt bucket in key order. */
#include <ctype.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "query/qtime.h"
#include "schema/tsdb.h"
#include "storage/clock.h"
#include "tools/tool.h"
#include "tools/tool_opts.h"

#define SCAN_MAX_POINTS 4096 /* decode buffer; rows with more points grow it */

static void scan_usage(FILE *out)
{
    fprintf(out,
            "usage: ctsdb scan [options] START [END] [AGG [rate] [downsample N F]] METRIC "
            "[TAG=VALUE...]\n\n"
            "Prints the stored rows of METRIC between START and END (default now): each row key\n"
            "decoded, each cell with its layout, and the points decoded from it. TAG=VALUE keeps\n"
            "rows with that tag (VALUE * = any value). An OpenTSDB-style aggregator prefix\n"
            "(e.g. `sum rate`) is accepted and ignored.\n"
            "Times as /api/query's start and end (UTC): seconds or milliseconds since the\n"
            "epoch, yyyy/MM/dd[-HH:mm[:ss]], or relative like 2h-ago (units ms s m h d w n y).\n\n"
            "options:\n"
            "  --config FILE     configuration file (key = value, as the TSD's)\n"
            "  --data DIR        data directory (default ./data)\n"
            "  --import          print the points as import lines (metric ts value tags)\n"
            "  --KEY=VALUE       any configuration key (docs/tsd.md); --set KEY=VALUE: the same\n"
            "  -h, --help        this text\n");
}

/* Parses a time with the query layer's parser (as /api/query's start and end, in UTC); returns
 * ms, or -1 when s is not a time. */
static int64_t scan_parse_time(const char *s)
{
    int64_t ms;
    struct ct_err err = {0};
    if (qtime_parse(s, NULL, clock_now_ms(), &ms, &err) != CT_OK || ms < 0)
        return -1;
    return ms;
}

static void scan_iso(int64_t ms, char *buf, size_t cap)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    size_t n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, cap - n, ".%03dZ", (int)(ms % 1000));
}

static void scan_bytes(const uint8_t *p, size_t n)
{
    printf("[");
    for (size_t i = 0; i < n && i < 64; i++)
        printf("%s%u", i ? ", " : "", p[i]);
    if (n > 64)
        printf(", ... (%zu bytes)", n);
    printf("]");
}

static void scan_value(const struct dpcodec_point *p, char *buf, size_t cap)
{
    if (p->type == DPCODEC_INT)
        snprintf(buf, cap, "%" PRId64, p->i);
    else if (p->type == DPCODEC_FLOAT)
        snprintf(buf, cap, "%.9g", p->f);
    else
        snprintf(buf, cap, "%.17g", p->f);
}

static const char *const scan_kinds[] = {"single",     "compacted",  "append",
                                         "compressed", "annotation", "other"};

struct scan_ctx {
    struct tsdb *t;
    bool import;
    const char *metric;
    struct dpcodec_point *pts;
    size_t cap;
    size_t rows, points, errors;
};

/* The "tag=value ..." text of a row (reverse lookups). */
static void scan_tags(struct scan_ctx *x, const struct rowkey_parts *p, char *buf, size_t cap)
{
    const struct rowkey_layout *l = tsdb_layout(x->t);
    size_t o = 0;
    buf[0] = 0;
    for (size_t i = 0; i < p->ntags && o < cap; i++) {
        struct rowkey_tag tg = rowkey_parts_tag(l, p, i);
        char k[UID_MAX_NAME + 1], v[UID_MAX_NAME + 1];
        size_t kl, vl;
        struct ct_err err = {0};
        if (uid_get_name(tsdb_uid(x->t), UID_TAGK, tg.tagk, k, sizeof(k), &kl, &err) != CT_OK)
            uid_format_hex(tg.tagk, l->tagk_width, k);
        if (uid_get_name(tsdb_uid(x->t), UID_TAGV, tg.tagv, v, sizeof(v), &vl, &err) != CT_OK)
            uid_format_hex(tg.tagv, l->tagv_width, v);
        o += (size_t)snprintf(buf + o, cap - o, "%s%s=%s", i ? " " : "", k, v);
    }
}

static int scan_row(struct scan_ctx *x, const struct wc_row *row, int64_t start_ms, int64_t end_ms)
{
    const struct rowkey_layout *l = tsdb_layout(x->t);
    struct rowkey_parts p;
    struct ct_err err = {0};
    if (rowkey_decode(l, row->key.data, row->key.len, &p, &err) != CT_OK) {
        printf("bad row ");
        scan_bytes(row->key.data, row->key.len);
        printf(": %s\n", err.msg);
        x->errors++;
        return 0;
    }
    char tags[2048], when[40];
    scan_tags(x, &p, tags, sizeof(tags));
    x->rows++;
    if (!x->import) {
        scan_iso(p.base_s * 1000, when, sizeof(when));
        scan_bytes(row->key.data, row->key.len);
        printf(" %s %lld (%s) %s\n", x->metric, (long long)p.base_s, when, tags);
    }
    for (size_t c = 0; c < row->ncells; c++) {
        const struct wc_cell *cell = &row->cells[c];
        enum dpcodec_qkind k = dpcodec_qualifier_kind(cell->qualifier.data, cell->qualifier.len);
        if (!x->import) {
            printf("  ");
            scan_bytes(cell->qualifier.data, cell->qualifier.len);
            printf("\t");
            scan_bytes(cell->value.data, cell->value.len);
            printf("\t%s, written %lld\n", scan_kinds[k], (long long)cell->ts_ms);
            if (k == DPCODEC_Q_ANNOTATION) {
                int64_t s_ms;
                if (dpcodec_annotation_time(p.base_s, cell->qualifier.data, cell->qualifier.len,
                                            &s_ms, &err) == CT_OK)
                    printf("    annotation at %lld: %.*s\n", (long long)s_ms, (int)cell->value.len,
                           (const char *)cell->value.data);
            }
        }
        struct dpcodec_iter it;
        dpcodec_iter_init(&it, p.base_s, cell->qualifier.data, cell->qualifier.len,
                          cell->value.data, cell->value.len);
        struct dpcodec_point pt;
        int rc;
        while ((rc = dpcodec_iter_next(&it, &pt, &err)) == CT_OK) {
            if (pt.ts_ms < start_ms || pt.ts_ms > end_ms)
                continue;
            char val[40];
            scan_value(&pt, val, sizeof(val));
            x->points++;
            if (x->import) {
                if (pt.ms)
                    printf("%s %lld %s %s\n", x->metric, (long long)pt.ts_ms, val, tags);
                else
                    printf("%s %lld %s %s\n", x->metric, (long long)(pt.ts_ms / 1000), val, tags);
            } else {
                scan_iso(pt.ts_ms, when, sizeof(when));
                printf("    %lld\t%s\t(%s)\t%s%s\n", (long long)pt.ts_ms, val, when,
                       pt.type == DPCODEC_INT     ? "int"
                       : pt.type == DPCODEC_FLOAT ? "float"
                                                  : "double",
                       pt.ms ? ", ms" : "");
            }
        }
        dpcodec_iter_end(&it);
        if (rc != CT_NOTFOUND) {
            fprintf(stderr, "ctsdb scan: %s\n", err.msg);
            x->errors++;
        }
    }
    return 0;
}

static const char *const scan_aggs[] = {
    "sum",   "avg",  "min",    "max",       "dev",      "zimsum", "mimmin", "mimmax",
    "count", "none", "first",  "last",      "p50",      "p75",    "p90",    "p95",
    "p99",   "p999", "median", "squareSum", "multiply", "diff",   NULL};

static bool scan_is_agg(const char *s)
{
    for (size_t i = 0; scan_aggs[i]; i++)
        if (!strcmp(s, scan_aggs[i]))
            return true;
    return false;
}

static int scan_run(int argc, char **argv)
{
    static const struct option longs[] = {
        {"import", no_argument, 0, 'i'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    struct tool_opts to;
    int st = tool_opts_init(&to, "scan", scan_usage, &argc, argv);
    if (st >= 0)
        return st;
    bool import = false;
    int opt;
    while ((opt = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        if (opt == 'i')
            import = true;
        else if ((st = tool_opts_handle(&to, opt, argv)) >= 0)
            return st;
    }
    int i = optind;
    if (i >= argc) {
        fprintf(stderr, "ctsdb scan: missing START time\n");
        scan_usage(stderr);
        return 2;
    }
    int64_t start_ms = scan_parse_time(argv[i++]), end_ms = clock_now_ms();
    if (start_ms < 0) {
        fprintf(stderr, "ctsdb scan: invalid start time '%s'\n", argv[i - 1]);
        return 2;
    }
    if (i < argc && scan_parse_time(argv[i]) >= 0 &&
        (isdigit((unsigned char)argv[i][0]) || !strcmp(argv[i], "now")))
        end_ms = scan_parse_time(argv[i++]);
    if (i < argc && scan_is_agg(argv[i]) && i + 1 < argc) {
        i++;
        if (i < argc && !strcmp(argv[i], "rate"))
            i++;
        if (i < argc && !strncmp(argv[i], "counter", 7))
            i++;
        if (i + 2 < argc && !strcmp(argv[i], "downsample"))
            i += 3;
    }
    if (i >= argc) {
        fprintf(stderr, "ctsdb scan: missing METRIC\n");
        return 2;
    }
    if (end_ms < start_ms) {
        fprintf(stderr, "ctsdb scan: end time is before start time\n");
        return 2;
    }
    const char *metric = argv[i++];
    to.config.read_only = true;
    struct wc_store *s = NULL;
    struct tsdb *t = NULL;
    if (tool_opts_open(&to, &s, &t) != 0)
        return 1;
    struct ct_err err = {0};
    int status = 1;
    struct rowkey_filter *f = NULL;
    struct uid *u = tsdb_uid(t);
    const struct rowkey_layout *l = tsdb_layout(t);
    uint64_t mid;
    if (uid_get_id(u, UID_METRIC, metric, strlen(metric), &mid, &err) != CT_OK) {
        fprintf(stderr, "ctsdb scan: %s\n", err.msg);
        goto done;
    }
    if (rowkey_filter_new(l, &f, &err) != CT_OK) {
        fprintf(stderr, "ctsdb scan: %s\n", err.msg);
        goto done;
    }
    rowkey_filter_set_metric(f, mid);
    for (; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq || eq == argv[i] || !eq[1]) {
            fprintf(stderr, "ctsdb scan: invalid tag '%s' (expected TAG=VALUE)\n", argv[i]);
            status = 2;
            goto done;
        }
        *eq = 0;
        uint64_t k, v;
        if (uid_get_id(u, UID_TAGK, argv[i], strlen(argv[i]), &k, &err) != CT_OK ||
            (strcmp(eq + 1, "*") &&
             uid_get_id(u, UID_TAGV, eq + 1, strlen(eq + 1), &v, &err) != CT_OK)) {
            fprintf(stderr, "ctsdb scan: %s\n", err.msg);
            goto done;
        }
        bool any = !strcmp(eq + 1, "*");
        if (rowkey_filter_add(f, k, any ? NULL : &v, any ? 0 : 1, false, &err) != CT_OK) {
            fprintf(stderr, "ctsdb scan: %s\n", err.msg);
            goto done;
        }
    }
    struct scan_ctx x = {.t = t, .import = import, .metric = metric};
    unsigned buckets = l->salt_width ? l->salt_buckets : 1;
    status = 0;
    for (unsigned b = 0; b < buckets && status == 0; b++) {
        uint8_t start[32], stop[32];
        size_t sl = rowkey_scan_start(l, b, mid, start_ms / 1000, start);
        size_t el = rowkey_scan_stop(l, b, mid, end_ms / 1000, stop);
        struct wc_scan_options o;
        wc_scan_options_init(&o);
        o.start_row = wc_bytes_of(start, sl);
        o.stop_row = wc_bytes_of(stop, el);
        struct wc_column col = {wc_bytes_str(TSDB_DATA_FAMILY), {0}, false};
        o.columns = &col;
        o.ncolumns = 1;
        o.row_filter = rowkey_filter_fn;
        o.row_filter_arg = f;
        struct wc_scanner *sc;
        if (wc_scanner_open(tsdb_data_table(t), &o, &sc, &err) != CT_OK) {
            fprintf(stderr, "ctsdb scan: %s\n", err.msg);
            status = 1;
            break;
        }
        struct wc_row row;
        int rc;
        while ((rc = wc_scanner_next(sc, &row, &err)) == CT_OK)
            scan_row(&x, &row, start_ms, end_ms);
        if (rc != CT_NOTFOUND) {
            fprintf(stderr, "ctsdb scan: %s\n", err.msg);
            status = 1;
        }
        wc_scanner_close(sc);
    }
    if (!import)
        printf("%zu rows, %zu points%s\n", x.rows, x.points,
               x.errors ? ", with errors (see stderr; run ctsdb fsck)" : "");
    if (x.errors && status == 0)
        status = 1;
done:
    rowkey_filter_free(f);
    tsdb_close(t);
    wc_close(s);
    return status;
}

const struct tool_command tool_cmd_scan = {"scan", "dump the stored rows and points of a metric",
                                           scan_run};
