/* qexec_histo.c - the answer of a histogram sub-query (OpenTSDB 2.4's TsdbQuery histogram path):
 * the histogram cells the scan kept for a group's series (struct xhist) are decoded, summed per
 * timestamp across the group (SUM, the only histogram aggregation) or per downsampling interval
 * (SUM again), and written as one series per percentile, named "<metric>_pct_<p>", and with
 * showHistogramBuckets one per bucket of the group's first histogram, "<metric>_<lo>_<hi>", its
 * counts as integers (0 where a histogram lacks that bucket).
 *
 * Invariants: histograms outside the query's range are left out; a cell that does not decode
 * is skipped (fsck's business), never an error of the answer; the series objects have
 * /api/query's shape (metric, tags, aggregateTags, tsuids with show_tsuids, the group's
 * annotations in the range, dps). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/qexec_int.h"
#include "query/qmeta.h"
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

/* Java's Float.toString for the values percentiles and bucket bounds take: the shortest
 * decimal that reads back as the same float, with ".0" when it has no fraction (values past
 * 1e7 or below 1e-3 keep C's exponent form, where Java writes 1.0E7). */
static void float_text(float f, char *out, size_t cap)
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

static int cmp_ann_ptr(const void *a, const void *b)
{
    const struct xann *x = *(struct xann *const *)a, *y = *(struct xann *const *)b;
    return x->start_ms < y->start_ms ? -1 : x->start_ms > y->start_ms;
}

/* The group's tsuids (show_tsuids) and its series' annotations in the range, as the datapoint
 * series of /api/query carry them (every percentile and bucket series of the group alike). */
static int write_extras(struct qjson *j, const struct qspec *q, struct xser **ser, size_t n,
                        struct ct_err *err)
{
    static const char hx[] = "0123456789ABCDEF";
    if (q->show_tsuids) {
        qjson_lit(j, ",\"tsuids\":[");
        for (size_t i = 0; i < n; i++) {
            char buf[2 * ROWKEY_MAX_TSUID + 3];
            size_t o = 0;
            buf[o++] = '"';
            for (size_t k = 0; k < ser[i]->tsuid_len && k < ROWKEY_MAX_TSUID; k++) {
                buf[o++] = hx[ser[i]->tsuid[k] >> 4];
                buf[o++] = hx[ser[i]->tsuid[k] & 15];
            }
            buf[o++] = '"';
            if (i)
                qjson_raw(j, ",", 1);
            qjson_raw(j, buf, o);
        }
        qjson_raw(j, "]", 1);
    }
    if (q->no_annotations)
        return CT_OK;
    size_t na = 0, k = 0;
    for (size_t i = 0; i < n; i++)
        na += ser[i]->nanns;
    if (na == 0)
        return CT_OK;
    struct xann **all = calloc(na, sizeof(*all));
    if (!all)
        return ct_err_set(err, CT_ENOMEM, "out of memory writing annotations");
    for (size_t i = 0; i < n; i++)
        for (size_t a = 0; a < ser[i]->nanns; a++)
            if (ser[i]->anns[a].start_ms >= q->start_ms && ser[i]->anns[a].start_ms <= q->end_ms)
                all[k++] = &ser[i]->anns[a];
    qsort(all, k, sizeof(*all), cmp_ann_ptr);
    if (k) {
        qjson_lit(j, ",\"annotations\":[");
        for (size_t a = 0; a < k; a++) {
            if (a)
                qjson_raw(j, ",", 1);
            char *api = qmeta_annotation_api_json(all[a]->json, strlen(all[a]->json));
            qjson_lit(j, api ? api : all[a]->json);
            free(api);
        }
        qjson_raw(j, "]", 1);
    }
    free(all);
    return CT_OK;
}

static int write_head(struct qjson *j, bool *first, const char *metric, const char *suffix,
                      const char **tk, const char **tv, size_t ntk, const char **ag, size_t nag,
                      const struct qspec *q, struct xser **ser, size_t n, struct ct_err *err)
{
    bool arrays = q->arrays;
    if (!*first)
        qjson_raw(j, ",", 1);
    *first = false;
    char name[UID_MAX_NAME + 64];
    snprintf(name, sizeof(name), "%s%s", metric, suffix);
    qjson_lit(j, "{\"metric\":");
    qjson_str(j, name);
    qjson_lit(j, ",\"tags\":{");
    for (size_t i = 0; i < ntk; i++) {
        if (i)
            qjson_raw(j, ",", 1);
        qjson_str(j, tk[i]);
        qjson_raw(j, ":", 1);
        qjson_str(j, tv[i]);
    }
    qjson_lit(j, "},\"aggregateTags\":[");
    for (size_t i = 0; i < nag; i++) {
        if (i)
            qjson_raw(j, ",", 1);
        qjson_str(j, ag[i]);
    }
    qjson_raw(j, "]", 1);
    int rc = write_extras(j, q, ser, n, err);
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
                            size_t n, struct qjson *j, bool *first, const char **tk,
                            const char **tv, size_t ntk, const char **ag, size_t nag,
                            uint64_t *emitted, struct ct_err *err)
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
        float_text(sub->percentiles[p], pt, sizeof(pt));
        snprintf(suffix, sizeof(suffix), "_pct_%s", pt);
        rc = write_head(j, first, xs->metric_name, suffix, tk, tv, ntk, ag, nag, q, ser, n, err);
        for (size_t i = 0; i < nm; i++) {
            char v[40];
            size_t vl = qjson_format_double(histo_percentile(&pts[i].h, sub->percentiles[p]), v);
            write_dp(j, q, pts[i].ts_ms, i == 0, v, vl);
        }
        *emitted += nm;
        qjson_lit(j, q->arrays ? "]}" : "}}");
    }
    if (sub->show_histogram_buckets && nm > 0 && rc == CT_OK) {
        const struct histo *h0 = &pts[0].h;
        for (size_t b = 0; b < h0->n && rc == CT_OK; b++) {
            char suffix[64], lo[24], hi[24];
            float_text(h0->b[b].lo, lo, sizeof(lo));
            float_text(h0->b[b].hi, hi, sizeof(hi));
            snprintf(suffix, sizeof(suffix), "_%s_%s", lo, hi);
            rc =
                write_head(j, first, xs->metric_name, suffix, tk, tv, ntk, ag, nag, q, ser, n, err);
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
            qjson_lit(j, q->arrays ? "]}" : "}}");
        }
    }
    for (size_t i = 0; i < np; i++)
        histo_clear(&pts[i].h);
    free(pts);
    return rc;
}
