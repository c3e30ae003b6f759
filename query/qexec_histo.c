/* qexec_histo.c - the answer of a histogram sub-query (OpenTSDB 2.4's TsdbQuery histogram path):
 * the histogram cells the scan kept for a group's series (struct xhist) are decoded, summed per
 * timestamp across the group (SUM, the only histogram aggregation) or per downsampling interval
 * (SUM again), and written as one series per percentile, named "<metric>_pct_<p>", and with
 * showHistogramBuckets one per bucket of the group's first histogram, "<metric>_<lo>_<hi>", its
 * counts as integers (0 where a histogram lacks that bucket).
 *
 * Invariants: histograms outside the query's range are left out; a cell that does not decode
 * is skipped (fsck's business), never an error of the answer; the series objects have
 * /api/query's shape, written by the same code as datapoint series (qexec_write_series_extras
 * and qexec_write_series_stats: metric, tags, aggregateTags, the query echo with show_query,
 * tsuids with show_tsuids, the group's annotations in the range, globalAnnotations, dps, stats
 * with show_stats), as OpenTSDB 2.4 serializes a histogram answer as any other. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/qexec_int.h"
#include "schema/histogram.h"

struct hpoint {
    int64_t ts_ms; /* the point's time, or its interval's start */
    struct histo h;
};

static int cmp_hpoint(const void *a, const void *b)
{
    const struct hpoint *x = a, *y = b;
    return x->ts_ms < y->ts_ms ? -1 : x->ts_ms > y->ts_ms;
}

void qexec_float_text(float f, char *out, size_t cap)
{
    if (f == truncf(f) && fabsf(f) < 1e7f) {
        snprintf(out, cap, "%.0f.0", (double)f);
        return;
    }
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(out, cap, "%.*g", prec, (double)f);
        if (strtof(out, NULL) == f)
            break;
    }
}

/* A series' head: metric, tags, aggregateTags, the extras (qexec_write_series_extras), "dps". */
static int write_head(struct qjson *j, bool *first, const char *metric, const char *suffix,
                      const char **tk, const char **tv, size_t ntk, const char **ag, size_t nag,
                      const struct qspec *q, const struct qspec_sub *sub, struct xser **ser,
                      size_t n, const struct gann *globals, struct ct_err *err)
{
    bool arrays = q->arrays;
    if (!*first)
        qjson_raw(j, ",", 1);
    *first = false;
    char name[UID_MAX_NAME + 64];
    snprintf(name, sizeof(name), "%s%s", metric, suffix);
    qexec_write_series_names(j, name, tk, tv, ntk, ag, nag);
    int rc = qexec_write_series_extras(j, q, sub, ser, n, globals, err);
    qjson_lit(j, arrays ? ",\"dps\":[" : ",\"dps\":{");
    return rc;
}

static void write_dp(struct qjson *j, const struct qspec *q, int64_t ts_ms, bool first,
                     const char *value, size_t vlen)
{
    int64_t ts = q->ms_resolution ? ts_ms : ts_ms / 1000;
    if (!first)
        qjson_raw(j, ",", 1);
    qjson_raw(j, q->arrays ? "[" : "\"", 1);
    qjson_i64(j, ts);
    qjson_raw(j, q->arrays ? "," : "\":", q->arrays ? 1 : 2);
    qjson_raw(j, value, vlen);
    if (q->arrays)
        qjson_raw(j, "]", 1);
}

int qexec_histo_write_group(const struct qspec *q, const struct xsub *xs, struct xser **ser,
                            size_t n, const struct gann *globals, struct qjson *j, bool *first,
                            const char **tk, const char **tv, size_t ntk, const char **ag,
                            size_t nag, uint64_t *emitted, struct ct_err *err)
{
    const struct qspec_sub *sub = xs->sub;
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += ser[i]->nhists;
    struct hpoint *pts = calloc(total ? total : 1, sizeof(*pts));
    if (!pts)
        return ct_err_set(err, CT_ENOMEM, "out of memory reading histograms");
    size_t np = 0;
    int64_t iv = sub->ds.enabled && !sub->ds.all ? sub->ds.interval_ms : 0;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < ser[i]->nhists; k++) {
            const struct xhist *x = &ser[i]->hists[k];
            if (x->ts_ms < q->start_ms || x->ts_ms > q->end_ms)
                continue;
            struct ct_err e2 = {0};
            histo_init(&pts[np].h, 0);
            if (histo_decode(x->v, x->len, true, &pts[np].h, &e2) != CT_OK) {
                histo_clear(&pts[np].h);
                continue;
            }
            int64_t t = x->ts_ms;
            if (sub->ds.enabled)
                t = iv > 0 ? t - ((t % iv) + iv) % iv : q->start_ms;
            pts[np++].ts_ms = t;
        }
    qsort(pts, np, sizeof(*pts), cmp_hpoint);
    /* one histogram per timestamp (or interval): the sum of those that share it */
    size_t nm = 0;
    int rc = CT_OK;
    for (size_t i = 0; i < np && rc == CT_OK; i++) {
        if (nm && pts[nm - 1].ts_ms == pts[i].ts_ms) {
            rc = histo_merge(&pts[nm - 1].h, &pts[i].h, err);
            histo_clear(&pts[i].h);
        } else {
            struct hpoint tmp = pts[i];
            pts[i] = pts[nm];
            pts[nm++] = tmp;
        }
    }
    for (size_t p = 0; p < sub->npercentiles && rc == CT_OK; p++) {
        char suffix[48], pt[24];
        qexec_float_text(sub->percentiles[p], pt, sizeof(pt));
        snprintf(suffix, sizeof(suffix), "_pct_%s", pt);
        rc = write_head(j, first, xs->metric_name, suffix, tk, tv, ntk, ag, nag, q, sub, ser, n,
                        globals, err);
        for (size_t i = 0; i < nm; i++) {
            char v[40];
            size_t vl = qjson_format_double(histo_percentile(&pts[i].h, sub->percentiles[p]), v);
            write_dp(j, q, pts[i].ts_ms, i == 0, v, vl);
        }
        *emitted += nm;
        qjson_lit(j, q->arrays ? "]" : "}");
        qexec_write_series_stats(j, q, sub, nm);
        qjson_raw(j, "}", 1);
    }
    if (sub->show_histogram_buckets && nm > 0 && rc == CT_OK) {
        const struct histo *h0 = &pts[0].h;
        for (size_t b = 0; b < h0->n && rc == CT_OK; b++) {
            char suffix[64], lo[24], hi[24];
            qexec_float_text(h0->b[b].lo, lo, sizeof(lo));
            qexec_float_text(h0->b[b].hi, hi, sizeof(hi));
            snprintf(suffix, sizeof(suffix), "_%s_%s", lo, hi);
            rc = write_head(j, first, xs->metric_name, suffix, tk, tv, ntk, ag, nag, q, sub, ser, n,
                            globals, err);
            for (size_t i = 0; i < nm; i++) {
                uint64_t c = 0;
                for (size_t k = 0; k < pts[i].h.n; k++)
                    if (pts[i].h.b[k].lo == h0->b[b].lo && pts[i].h.b[k].hi == h0->b[b].hi)
                        c = pts[i].h.b[k].count;
                char v[24];
                size_t vl = qjson_format_i64((int64_t)c, v);
                write_dp(j, q, pts[i].ts_ms, i == 0, v, vl);
            }
            *emitted += nm;
            qjson_lit(j, q->arrays ? "]" : "}");
            qexec_write_series_stats(j, q, sub, nm);
            qjson_raw(j, "}", 1);
        }
    }
    for (size_t i = 0; i < np; i++)
        histo_clear(&pts[i].h);
    free(pts);
    return rc;
}
