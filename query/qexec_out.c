/* qexec_out.c - the output of a sub-query (step 6 of the plan at the top of qexec.c): groups
 * formed from the kept series, downsampled, rated and aggregated, then written as OpenTSDB's
 * JSON (or handed to a point callback); mid-size answers have their groups made in parallel into
 * memory and sent in order (qexec_write_groups).
 * Invariants: (1) of qexec.c (nothing is written before every scan finished); groups go out in
 * the order the general path writes them. */
#include "query/qexec.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "query/qexec_int.h"
#include "query/qmeta.h"
#include "schema/dpcodec.h"
#include "schema/rowkey.h"
#include "schema/uid.h"
#include "storage/clock.h"
#include "storage/hash.h"
/* ---- output ---------------------------------------------------------------------------- */

static int write_point(struct xout *xo, const struct qagg_point *pt);

/* An annotation as OpenTSDB's query answers write it (every non-null field, query/qmeta.h),
 * from its stored canonical JSON; the stored text itself if it cannot be converted. */
static void write_annotation(struct qjson *j, const char *stored)
{
    char *api = qmeta_annotation_api_json(stored, strlen(stored));
    qjson_lit(j, api ? api : stored);
    free(api);
}

/* The decimal digits of a timestamp: those of ts / 10000 (cached) and four more. out has room
 * for 24 bytes (the cached digits are copied as one 16-byte block). */
static size_t format_ts(struct xout *xo, int64_t ts, char *out)
{
    if (ts < 10000)
        return qjson_format_i64(ts, out);
    static const char pairs[] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    int64_t lo = ts - xo->ts_hi * 10000; /* points come in time order: mostly the same block */
    if (!xo->ts_hi_len || lo < 0 || lo >= 10000) {
        xo->ts_hi = ts / 10000;
        xo->ts_hi_len = qjson_format_i64(xo->ts_hi, xo->ts_hi_digits);
        lo = ts - xo->ts_hi * 10000;
    }
    if (xo->ts_hi_len <= 16)
        memcpy(out, xo->ts_hi_digits, 16);
    else
        memcpy(out, xo->ts_hi_digits, xo->ts_hi_len);
    char *o = out + xo->ts_hi_len;
    unsigned l = (unsigned)lo;
    memcpy(o, pairs + 2 * (l / 100), 2);
    memcpy(o + 2, pairs + 2 * (l % 100), 2);
    return xo->ts_hi_len + 4;
}

/* Keeps the points within [start, end]; with padding also the one just before and the one just
 * after (points arrive in time order). */
static int emit_point(void *arg, const struct qagg_point *pt)
{
    struct xout *xo = arg;
    if (pt->ts_ms < xo->q->start_ms) {
        if (xo->q->padding) {
            xo->pad = *pt;
            xo->has_pad = true;
        }
        return 0;
    }
    if (xo->has_pad) {
        xo->has_pad = false;
        int rc = write_point(xo, &xo->pad);
        if (rc)
            return rc;
    }
    if (pt->ts_ms > xo->q->end_ms) {
        if (!xo->q->padding || xo->pad_after)
            return 0;
        xo->pad_after = true;
    }
    return write_point(xo, pt);
}

static int write_point(struct xout *xo, const struct qagg_point *pt)
{
    xo->emitted++;
    if (xo->fn)
        return xo->fn(xo->fn_arg, xo->metric, xo->tags, pt);
    /* the whole point in one piece: [,]"ts":value or [,][ts,value], written in place when the
     * writer's buffer has room */
    int64_t ts = xo->q->ms_resolution ? pt->ts_ms : pt->ts_ms / 1000;
    char tmp[128];
    char *b = qjson_reserve(xo->j, sizeof(tmp));
    bool direct = b != NULL;
    if (!direct)
        b = tmp;
    size_t n = 0;
    if (!xo->first_dp)
        b[n++] = ',';
    xo->first_dp = false;
    b[n++] = xo->q->arrays ? '[' : '"';
    n += format_ts(xo, ts, b + n);
    if (xo->q->arrays) {
        b[n++] = ',';
    } else {
        b[n++] = '"';
        b[n++] = ':';
    }
    if (pt->is_int) {
        n += qjson_format_i64(pt->v.i, b + n);
    } else if (pt->v.d != pt->v.d && xo->sub->ds.enabled && xo->sub->ds.fill == QAGG_FILL_NULL) {
        memcpy(b + n, "null", 4);
        n += 4;
    } else if (isnan(pt->v.d) || isinf(pt->v.d)) { /* quoted, as qjson_double() */
        b[n++] = '"';
        n += qjson_format_double(pt->v.d, b + n);
        b[n++] = '"';
    } else {
        n += qjson_format_double(pt->v.d, b + n);
    }
    if (xo->q->arrays)
        b[n++] = ']';
    if (direct)
        qjson_commit(xo->j, n);
    else
        qjson_raw(xo->j, b, n);
    return 0;
}

/* Transforms each series of a group (downsample, rate) and aggregates it through xo. The rates
 * are taken in place: the group's series' points are consumed. */
int qexec_run_group(const struct qspec *q, const struct xsub *xs, struct xser **ser, size_t n,
                    struct xout *xo, struct ct_err *err)
{
    const struct qspec_sub *sub = xs->sub;
    struct qagg_window w;
    qagg_window_compute(q->start_ms, q->end_ms, &sub->ds, &w);
    if (q->padding)
        qagg_window_pad(&w, &sub->ds);
    struct qagg_series *ss = calloc(n, sizeof(*ss));
    struct qagg_buf *bufs = calloc(n, sizeof(*bufs)); /* the downsampled points */
    int rc = CT_OK;
    if (!ss || !bufs) {
        free(ss);
        free(bufs);
        return ct_err_set(err, CT_ENOMEM, "out of memory aggregating");
    }
    for (size_t i = 0; i < n && rc == CT_OK; i++) {
        struct qagg_point *p = ser[i]->pts.p;
        size_t np = ser[i]->pts.n;
        if (sub->ds.enabled && !xs->ds_done) {
            rc = qagg_downsample(p, np, &sub->ds, &w, q->tz, &bufs[i], err);
            p = bufs[i].p;
            np = bufs[i].n;
        } else if (sub->ds.enabled && sub->ds.fill != QAGG_FILL_NONE && !sub->ds.all) {
            /* downsampled while read (the scan, qrollup): the fill policy's buckets now */
            rc = qagg_ds_fill(p, np, &sub->ds, &w, q->tz, &bufs[i], err);
            p = bufs[i].p;
            np = bufs[i].n;
        }
        /* the rates replace the points they are taken from (a group runs once, and its
         * series' points are not read again): no buffer is allocated and faulted in per query,
         * whatever the layout the series were read from */
        if (rc == CT_OK && sub->rate)
            np = qagg_rate_in_place(p, np, &sub->rate_opts);
        ss[i].p = p;
        ss[i].n = np;
    }
    if (rc == CT_OK)
        rc = (xs->general_only ? qagg_group_run_general : qagg_group_run)(
            sub->agg, ss, n, w.win_start_ms, w.win_end_ms, sub->rate, emit_point, xo, err);
    if (rc == CT_OK && xo->has_pad) /* nothing at or after the start: the padding point alone */
        rc = write_point(xo, &xo->pad);
    for (size_t i = 0; i < n; i++)
        qagg_buf_free(&bufs[i]);
    free(bufs);
    free(ss);
    return rc;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* tags / aggregateTags of a group (SpanGroup 2.4.1 rule): a key with one distinct value across
 * the group is a tag, a key with several is aggregated. Returns sorted arrays of borrowed names
 * (values index-aligned with tag keys). */
int qexec_group_tags(struct xser **ser, size_t n, const char ***tk, const char ***tv, size_t *ntags,
                     const char ***agg, size_t *nagg)
{
    size_t cap = 0;
    for (size_t i = 0; i < n; i++)
        cap += ser[i]->ntags;
    const char **k = calloc(cap + 1, sizeof(char *)), **v = calloc(cap + 1, sizeof(char *));
    const char **a = calloc(cap + 1, sizeof(char *));
    if (!k || !v || !a) {
        free(k);
        free(v);
        free(a);
        return -1;
    }
    size_t nk = 0, na = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t t = 0; t < ser[i]->ntags; t++) {
            const char *key = ser[i]->tagk[t], *val = ser[i]->tagv[t];
            bool in_agg = false;
            for (size_t x = 0; x < na && !in_agg; x++)
                in_agg = !strcmp(a[x], key);
            if (in_agg)
                continue;
            size_t x;
            for (x = 0; x < nk && strcmp(k[x], key); x++)
                ;
            if (x == nk) {
                k[nk] = key;
                v[nk++] = val;
            } else if (strcmp(v[x], val)) {
                a[na++] = key;
                k[x] = k[nk - 1];
                v[x] = v[nk - 1];
                nk--;
            }
        }
    }
    /* sort keys keeping values aligned */
    for (size_t i = 1; i < nk; i++)
        for (size_t x = i; x > 0 && strcmp(k[x - 1], k[x]) > 0; x--) {
            const char *tk0 = k[x], *tv0 = v[x];
            k[x] = k[x - 1];
            v[x] = v[x - 1];
            k[x - 1] = tk0;
            v[x - 1] = tv0;
        }
    qsort(a, na, sizeof(char *), cmp_str);
    *tk = k;
    *tv = v;
    *ntags = nk;
    *agg = a;
    *nagg = na;
    return 0;
}

static void write_hex(struct qjson *j, const uint8_t *b, size_t n)
{
    static const char hx[] = "0123456789ABCDEF";
    char buf[2 * ROWKEY_MAX_TSUID + 2];
    size_t o = 0;
    buf[o++] = '"';
    for (size_t i = 0; i < n && o + 3 < sizeof(buf); i++) {
        buf[o++] = hx[b[i] >> 4];
        buf[o++] = hx[b[i] & 15];
    }
    buf[o++] = '"';
    qjson_raw(j, buf, o);
}

static void write_query_echo(struct qjson *j, const struct qspec_sub *sub)
{
    qjson_lit(j, "\"query\":{\"aggregator\":");
    qjson_str(j, qagg_name(sub->agg));
    qjson_lit(j, ",\"metric\":");
    if (sub->metric)
        qjson_str(j, sub->metric);
    else
        qjson_lit(j, "null");
    qjson_lit(j, ",\"tsuids\":");
    if (sub->ntsuids) {
        qjson_raw(j, "[", 1);
        for (size_t i = 0; i < sub->ntsuids; i++) {
            if (i)
                qjson_raw(j, ",", 1);
            qjson_str(j, sub->tsuids[i]);
        }
        qjson_raw(j, "]", 1);
    } else {
        qjson_lit(j, "null");
    }
    qjson_lit(j, ",\"downsample\":");
    if (sub->ds.enabled)
        qjson_str(j, sub->ds.text);
    else
        qjson_lit(j, "null");
    qjson_lit(j, sub->rate ? ",\"rate\":true" : ",\"rate\":false");
    qjson_lit(j, ",\"filters\":[");
    for (size_t i = 0; i < sub->nfilters; i++) {
        const struct qfilter *f = sub->filters[i];
        if (i)
            qjson_raw(j, ",", 1);
        qjson_lit(j, "{\"tagk\":");
        qjson_str(j, qfilter_tagk(f));
        qjson_lit(j, ",\"filter\":");
        qjson_str(j, qfilter_expr(f));
        qjson_lit(j, qfilter_group_by(f) ? ",\"group_by\":true" : ",\"group_by\":false");
        qjson_lit(j, ",\"type\":");
        qjson_str(j, qfilter_type_name(f));
        qjson_raw(j, "}", 1);
    }
    qjson_lit(j, "],\"index\":");
    qjson_i64(j, sub->index);
    qjson_lit(j, ",\"tags\":{");
    bool first = true;
    for (size_t i = 0; i < sub->nfilters; i++) {
        const struct qfilter *f = sub->filters[i];
        if (!qfilter_group_by(f))
            continue;
        if (!first)
            qjson_raw(j, ",", 1);
        first = false;
        char v[600];
        snprintf(v, sizeof(v), "%s(%s)", qfilter_type_name(f), qfilter_expr(f));
        qjson_str(j, qfilter_tagk(f));
        qjson_raw(j, ":", 1);
        qjson_str(j, v);
    }
    qjson_lit(j, "},\"rateOptions\":");
    if (sub->rate_options_set) {
        char b[200];
        snprintf(b, sizeof(b),
                 "{\"counter\":%s,\"counterMax\":%lld,\"resetValue\":%lld,\"dropResets\":%s}",
                 sub->rate_opts.counter ? "true" : "false", (long long)sub->rate_opts.counter_max,
                 (long long)sub->rate_opts.reset_value,
                 sub->rate_opts.drop_resets ? "true" : "false");
        qjson_lit(j, b);
    } else {
        qjson_lit(j, "null");
    }
    qjson_lit(j, ",\"delete\":false");
    qjson_lit(j, sub->explicit_tags ? ",\"explicitTags\":true" : ",\"explicitTags\":false");
    if (qspec_sub_is_histogram(sub)) { /* TSSubQuery's getPercentiles, getShowHistogramBuckets */
        qjson_lit(j, ",\"percentiles\":[");
        for (size_t i = 0; i < sub->npercentiles; i++) {
            char pt[24];
            qexec_float_text(sub->percentiles[i], pt, sizeof(pt));
            if (i)
                qjson_raw(j, ",", 1);
            qjson_lit(j, pt);
        }
        qjson_lit(j, sub->show_histogram_buckets ? "],\"showHistogramBuckets\":true"
                                                 : "],\"showHistogramBuckets\":false");
    }
    qjson_raw(j, "}", 1);
}

int qexec_collect_global(void *arg, const uint8_t *tsuid, size_t tsuid_len, int64_t start_ms,
                         const char *json, size_t json_len)
{
    (void)tsuid;
    (void)tsuid_len;
    struct gann *g = arg;
    if (g->n == g->cap) {
        size_t nc = g->cap ? g->cap * 2 : 8;
        struct xann *na = realloc(g->a, nc * sizeof(*na));
        if (!na)
            return CT_ENOMEM;
        g->a = na;
        g->cap = nc;
    }
    char *c = strndup(json, json_len);
    if (!c)
        return CT_ENOMEM;
    g->a[g->n].start_ms = start_ms;
    g->a[g->n++].json = c;
    return 0;
}

static int cmp_ann(const void *a, const void *b)
{
    const struct xann *x = *(struct xann *const *)a, *y = *(struct xann *const *)b;
    return x->start_ms < y->start_ms ? -1 : x->start_ms > y->start_ms;
}

void qexec_write_series_names(struct qjson *j, const char *metric, const char **tk,
                              const char **tv, size_t ntk, const char **ag, size_t nag)
{
    qjson_lit(j, "{\"metric\":");
    qjson_str(j, metric);
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
}

int qexec_write_series_extras(struct qjson *j, const struct qspec *q, const struct qspec_sub *sub,
                              struct xser **ser, size_t n, const struct gann *globals,
                              struct ct_err *err)
{
    if (q->show_query) {
        qjson_raw(j, ",", 1);
        write_query_echo(j, sub);
    }
    if (q->show_tsuids) {
        qjson_lit(j, ",\"tsuids\":[");
        for (size_t i = 0; i < n; i++) {
            if (i)
                qjson_raw(j, ",", 1);
            write_hex(j, ser[i]->tsuid, ser[i]->tsuid_len);
        }
        qjson_raw(j, "]", 1);
    }
    if (!q->no_annotations) {
        size_t na = 0;
        for (size_t i = 0; i < n; i++)
            na += ser[i]->nanns;
        if (na) {
            struct xann **all = calloc(na, sizeof(*all));
            if (!all)
                return ct_err_set(err, CT_ENOMEM, "out of memory writing annotations");
            size_t k = 0;
            for (size_t i = 0; i < n; i++)
                for (size_t a = 0; a < ser[i]->nanns; a++)
                    if (ser[i]->anns[a].start_ms >= q->start_ms &&
                        ser[i]->anns[a].start_ms <= q->end_ms)
                        all[k++] = &ser[i]->anns[a];
            qsort(all, k, sizeof(*all), cmp_ann);
            if (k) {
                qjson_lit(j, ",\"annotations\":[");
                for (size_t a = 0; a < k; a++) {
                    if (a)
                        qjson_raw(j, ",", 1);
                    write_annotation(j, all[a]->json);
                }
                qjson_raw(j, "]", 1);
            }
            free(all);
        }
    }
    /* QueryRpc fetches the global annotations only when annotations are not turned off */
    if (globals && globals->n && !q->no_annotations) {
        qjson_lit(j, ",\"globalAnnotations\":[");
        for (size_t a = 0; a < globals->n; a++) {
            if (a)
                qjson_raw(j, ",", 1);
            write_annotation(j, globals->a[a].json);
        }
        qjson_raw(j, "]", 1);
    }
    return CT_OK;
}

void qexec_write_series_stats(struct qjson *j, const struct qspec *q, const struct qspec_sub *sub,
                              uint64_t emitted)
{
    if (!q->show_stats)
        return;
    char b[200];
    snprintf(b, sizeof(b), ",\"stats\":{\"emittedDPs\":%llu,\"queryIndex\":%d}",
             (unsigned long long)emitted, sub->index);
    qjson_lit(j, b);
}

static int write_group(const struct qspec *q, struct xsub *xs, struct xser **ser, size_t n,
                       const struct gann *globals, struct qjson *j, bool *first,
                       struct qexec_stats *st, struct ct_err *err)
{
    const struct qspec_sub *sub = xs->sub;
    const char **tk = NULL, **tv = NULL, **ag = NULL;
    size_t ntk = 0, nag = 0;
    if (qexec_group_tags(ser, n, &tk, &tv, &ntk, &ag, &nag) != 0)
        return ct_err_set(err, CT_ENOMEM, "out of memory writing tags");
    uint64_t t_ser = clock_mono_ns();
    if (qspec_sub_is_histogram(sub)) {
        uint64_t emitted = 0;
        int hrc = qexec_histo_write_group(q, xs, ser, n, globals, j, first, tk, tv, ntk, ag, nag,
                                          &emitted, err);
        free(tk);
        free(tv);
        free(ag);
        if (st) {
            uint64_t d = clock_mono_ns() - t_ser;
            st->agg_ns += d;
            st->ser_ns += d;
            st->emitted_dps += emitted;
            st->groups++;
        }
        return hrc;
    }
    if (!*first)
        qjson_raw(j, ",", 1);
    *first = false;
    qexec_write_series_names(j, xs->metric_name, tk, tv, ntk, ag, nag);
    free(tk);
    free(tv);
    free(ag);
    int xrc = qexec_write_series_extras(j, q, sub, ser, n, globals, err);
    if (xrc != CT_OK)
        return xrc;
    qjson_lit(j, q->arrays ? ",\"dps\":[" : ",\"dps\":{");
    struct xout xo = {.q = q, .sub = sub, .j = j, .first_dp = true};
    uint64_t t0 = clock_mono_ns();
    int rc = qexec_run_group(q, xs, ser, n, &xo, err);
    if (st) {
        st->agg_ns += clock_mono_ns() - t0;
        st->emitted_dps += xo.emitted;
        st->groups++;
    }
    qjson_lit(j, q->arrays ? "]" : "}");
    qexec_write_series_stats(j, q, sub, xo.emitted);
    qjson_raw(j, "}", 1);
    if (st)
        st->ser_ns += clock_mono_ns() - t_ser;
    return rc;
}

/* Adds one written group's statistics (g) to the run's and to its sub-query's. */
static void add_group_stats(struct qexec_stats *run, struct xsub *xs, const struct qexec_stats *g)
{
    struct qexec_stats *to[2] = {run, &xs->st};
    for (int i = 0; i < 2; i++) {
        to[i]->agg_ns += g->agg_ns;
        to[i]->ser_ns += g->ser_ns;
        to[i]->emitted_dps += g->emitted_dps;
        to[i]->groups += g->groups;
    }
}

/* Calls fn(group) for each group of xs: consecutive series with equal group keys, or one series
 * per group with the "none" aggregator. */

int qexec_for_each_group(struct xsub *xs, qexec_group_fn fn, void *arg)
{
    size_t i = 0;
    bool none = qagg_is_none(xs->sub->agg);
    while (i < xs->nser) {
        size_t e = i + 1;
        if (!none) {
            if (!xs->ngb)
                e = xs->nser;
            else
                while (e < xs->nser && !qexec_tsuid_cmp(xs->ser[i]->gkey, xs->ser[i]->gkey_len,
                                                        xs->ser[e]->gkey, xs->ser[e]->gkey_len))
                    e++;
        }
        int rc = fn(arg, xs, xs->ser + i, e - i);
        if (rc != CT_OK)
            return rc;
        i = e;
    }
    return CT_OK;
}

static int write_group_cb(void *arg, struct xsub *xs, struct xser **ser, size_t n)
{
    struct wctx *w = arg;
    struct qexec_stats g;
    memset(&g, 0, sizeof(g));
    int rc = write_group(w->q, xs, ser, n, w->globals, w->j, &w->first, &g, w->err);
    add_group_stats(w->st, xs, &g);
    return rc;
}

/* ---- groups written in parallel --------------------------------------------------------- */

/* Points (in every series of a sub-query) for groups to be written in parallel: at most
 * the maximum, since each group's JSON is then held in memory until its turn (a few MB at
 * most; larger answers stream group by group as they are made), and at least the minimum,
 * below which waking a helper and the copies cost more than they save (max_by_host, 13 groups
 * of 3,744 points in all: 5 % slower in parallel; rate_by_dc, 4 groups of 72,000: 13 %
 * faster on two threads). */
#define QEXEC_RENDER_MAX_POINTS (1u << 18)
#define QEXEC_RENDER_MIN_POINTS (1u << 14)

int qexec_mbuf_sink(void *arg, const char *data, size_t len)
{
    struct qexec_mbuf *m = arg;
    if (m->n + len > m->cap) {
        /* the first flush is often the whole group (qjson's buffer holds 16 KiB): sized to
         * it, not to a fixed block - thousands of small groups are held until their turn, and
         * blocks of 16 KiB each cost a page fault a group on a fresh arena */
        size_t nc = m->cap ? m->cap * 2 : (len > 256 ? len : 256);
        while (nc < m->n + len)
            nc *= 2;
        char *np = realloc(m->p, nc);
        if (!np)
            return CT_ENOMEM;
        m->p = np;
        m->cap = nc;
    }
    memcpy(m->p + m->n, data, len);
    m->n += len;
    return CT_OK;
}

/* One group written to memory, its statistics and error apart. */
struct grender {
    struct xsub *xs;
    struct xser **ser;
    size_t n;
    bool first; /* the answer's first group (no comma before it) */
    struct qexec_mbuf out;
    struct qexec_stats st;
    struct ct_err err;
    int rc;
};

struct rjob {
    const struct qspec *q;
    const struct gann *globals;
    bool first; /* no group was written before these */
    struct grender *g;
    size_t ng, cap;
    atomic_size_t next;
};

static int collect_group_cb(void *arg, struct xsub *xs, struct xser **ser, size_t n)
{
    struct rjob *r = arg;
    if (r->ng == r->cap) {
        size_t nc = r->cap ? r->cap * 2 : 16;
        struct grender *ng = realloc(r->g, nc * sizeof(*ng));
        if (!ng)
            return CT_ENOMEM;
        r->g = ng;
        r->cap = nc;
    }
    struct grender *g = &r->g[r->ng];
    memset(g, 0, sizeof(*g));
    g->xs = xs;
    g->ser = ser;
    g->n = n;
    g->first = r->first && r->ng == 0;
    r->ng++;
    return CT_OK;
}

/* Takes groups to write until none are left (a pool job). */
static void render_thread(void *arg)
{
    struct rjob *r = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&r->next, 1);
        if (i >= r->ng)
            break;
        struct grender *g = &r->g[i];
        struct qjson *jg = qjson_new(qexec_mbuf_sink, &g->out, 0);
        if (!jg) {
            g->rc = ct_err_set(&g->err, CT_ENOMEM, "out of memory writing a group");
            continue;
        }
        bool first = g->first;
        g->rc = write_group(r->q, g->xs, g->ser, g->n, r->globals, jg, &first, &g->st, &g->err);
        int frc = qjson_flush(jg);
        if (g->rc == CT_OK && frc != CT_OK)
            g->rc = ct_err_set(&g->err, frc, "out of memory writing a group");
        qjson_free(jg);
    }
}

/* Writes every group of sub-query xs to w->j: in parallel into memory, then in order, when
 * the query may use several threads, the sub-query has several groups and few enough points;
 * else group by group straight to w->j. The bytes are the same either way. */
int qexec_write_groups(const struct qexec_options *o, struct xsub *xs, struct wctx *w)
{
    unsigned nth = qexec_query_threads(o, NULL);
    size_t points = 0;
    for (size_t k = 0; k < xs->nser; k++)
        points += xs->ser[k]->pts.n;
    struct rjob r = {.q = w->q, .globals = w->globals, .first = w->first};
    atomic_init(&r.next, 0);
    int rc = CT_OK;
    if (nth > 1 && points >= QEXEC_RENDER_MIN_POINTS && points <= QEXEC_RENDER_MAX_POINTS)
        rc = qexec_for_each_group(xs, collect_group_cb, &r);
    if (rc != CT_OK || r.ng < 2) { /* group by group */
        free(r.g);
        return qexec_for_each_group(xs, write_group_cb, w);
    }
    struct qpool_job job = {.fn = render_thread, .arg = &r};
    qpool_run(o->pool, &job, (unsigned)(r.ng - 1 < nth - 1 ? r.ng - 1 : nth - 1));
    for (size_t i = 0; i < r.ng; i++) {
        struct grender *g = &r.g[i];
        if (rc == CT_OK && g->rc != CT_OK) {
            rc = g->rc;
            *w->err = g->err;
        }
        if (rc == CT_OK) {
            qjson_raw(w->j, g->out.p, g->out.n);
            w->first = false;
            add_group_stats(w->st, g->xs, &g->st);
        }
        free(g->out.p);
    }
    free(r.g);
    return rc;
}
