/* qexec.c - see qexec.h. The plan of one sub-query (steps 1, 2 and 5 here, 3 and 4 in
 * qexec_scan.c, 6 in qexec_out.c; what they share in qexec_int.h):
 *   1. resolve the metric and every filter's tag key (and literal values) to UIDs; an unknown
 *      name is a 400 before anything is read;
 *   2. build a rowkey_filter (literal values, required and forbidden keys) that the store applies
 *      to each row key before materialising the row (wc_scan_options.row_filter; each scan
 *      keeps a memo of its decisions by series, qexec_rf_memo); the tag index may pick the
 *      series (exact key ranges) or the salt buckets they live in (query/qindex.h);
 *   3. one reversed scan per salt bucket over the hour rows of the scan window (TsdbQuery's
 *      getScanStartTimeSeconds / getScanEndTimeSeconds), buckets spread over threads; with
 *      fewer than four buckets per thread each bucket's hours are cut into time slices
 *      (newest first) taken by whichever thread is free, whose series are chained back
 *      together before step 5;
 *   4. decode every cell layout of each row into reused columns (dpcodec_row_decode_cols), keep
 *      the row's annotations; when the downsampling interval divides an hour (no calendar)
 *      the row's buckets are computed right there (row_downsample: no bucket spans two rows),
 *      else the row's points are kept; either way they go below the series' newer points
 *      (series_room/series_put), so a series read by one scan is in order. `0all` and the
 *      other fixed intervals (1d, 7m, 90m) with a single-pass function are not scanned here:
 *      qrollup's raw source folds each series' points into per-bucket accumulators as rows
 *      are read (query/qrollup.h), so memory is series x buckets, not points; a fill policy
 *      is applied to the finished buckets in step 6;
 *   5. resolve tag names, apply every filter by name (regexp, wildcard, case-insensitive ones),
 *      explicitTags, group by the group-by keys (series lacking one are dropped, as OpenTSDB);
 *      join the time slices of the kept series, into one block (qexec_series_finish);
 *   6. per series downsample (unless step 4 did), then rate; aggregate each group
 *      (qagg_group_run); emit the points inside [start, end] (with several threads and a
 *      mid-size answer the groups are made in parallel, each into memory, then sent in order:
 *      qexec_write_groups). Each sub-query but the last is written into memory as soon as its
 *      scan is done and its series freed (qexec_run), so an answer holds the series of one
 *      sub-query at a time and the finished answers of those before it.
 * Invariants: (1) every scan of every sub-query finishes before the first output byte, so errors
 * (400/408/413) never follow partial output; (2) a series lives in exactly one salt bucket, so
 * per-bucket results are concatenated, never merged; (3) points of a series are ascending once
 * they are written (rows arrive newest first and are put below the newer ones: series_room();
 * qexec_series_finish() only joins the time slices of a bucket); (4) every fast path
 * (in-scan downsampling, aligned groups) answers byte for byte as the general path
 * (qexec_options.general_only; test_qexec compares them). */
#include "query/qexec.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "query/qexec_int.h"
#include "query/qindex.h"
#include "query/qlimits.h"
#include "query/qrollup.h"
#include "schema/dpcodec.h"
#include "schema/head.h"
#include "schema/rowkey.h"
#include "schema/uid.h"
#include "storage/clock.h"
#include "storage/hash.h"

void qexec_options_init(struct qexec_options *o)
{
    memset(o, 0, sizeof(*o));
    o->index_ranges = QEXEC_INDEX_RANGES;
}

/* ---- one sub-query --------------------------------------------------------------------- */

/* A resolved filter: its tagk uid (0 if the series can never have it). */
struct xfilt {
    const struct qfilter *f;
    uint64_t tagk;
};

static void xsub_free(struct xsub *xs)
{
    free(xs->filts);
    free(xs->gb_tagk);
    free(xs->ser);
    for (unsigned i = 0; i < xs->nsets; i++)
        qexec_xset_clear(&xs->sets[i]);
    free(xs->sets);
    free(xs->pts_block);
    for (size_t i = 0; i < xs->names.cap; i++)
        free(xs->names.tab[i].name);
    free(xs->names.tab);
    memset(xs, 0, sizeof(*xs));
}

static int map_uid_err(int rc, enum qexec_status *status)
{
    if (rc == CT_NOTFOUND || rc == CT_EINVAL)
        *status = QEXEC_BAD_REQUEST;
    else if (rc == CT_ETIMEOUT)
        *status = QEXEC_TIMEOUT;
    else if (rc == CT_ELIMIT)
        *status = QEXEC_TOO_LARGE;
    else
        *status = QEXEC_INTERNAL;
    return rc == CT_NOTFOUND ? CT_EINVAL : rc;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Resolves names and builds the row filter (plan steps 1 and 2); skip_unresolved: a literal tag
 * value without a UID is left out of its filter, not a 400 (tsd.query.skip_unresolved_tagvs). */
static int plan_sub(struct tsdb *t, const struct qspec_sub *sub, bool skip_unresolved,
                    struct xsub *xs, struct rowkey_filter **rf_out, struct xscan *x,
                    enum qexec_status *status, struct ct_err *err)
{
    struct uid *u = tsdb_uid(t);
    const struct rowkey_layout *l = tsdb_layout(t);
    int rc;
    xs->sub = sub;
    if (sub->ntsuids) {
        x->tsuids = calloc(sub->ntsuids, sizeof(uint8_t *));
        x->tsuid_lens = calloc(sub->ntsuids, sizeof(size_t));
        if (!x->tsuids || !x->tsuid_lens)
            return ct_err_set(err, CT_ENOMEM, "out of memory planning a query");
        for (size_t i = 0; i < sub->ntsuids; i++) {
            const char *h = sub->tsuids[i];
            size_t hl = strlen(h), bl = hl / 2;
            size_t pair = l->tagk_width + l->tagv_width;
            if (hl % 2 || bl < l->metric_width + pair || (bl - l->metric_width) % pair) {
                *status = QEXEC_BAD_REQUEST;
                return ct_err_set(err, CT_EINVAL, "Invalid TSUID: %s", h);
            }
            uint8_t *b = malloc(bl);
            if (!b)
                return ct_err_set(err, CT_ENOMEM, "out of memory planning a query");
            x->tsuids[x->ntsuids] = b;
            x->tsuid_lens[x->ntsuids++] = bl;
            for (size_t k = 0; k < bl; k++) {
                unsigned v;
                if (sscanf(h + 2 * k, "%2x", &v) != 1) {
                    *status = QEXEC_BAD_REQUEST;
                    return ct_err_set(err, CT_EINVAL, "Invalid TSUID: %s", h);
                }
                b[k] = (uint8_t)v;
            }
            uint64_t m = rowkey_get_uid(b, l->metric_width);
            if (i == 0)
                xs->metric = m;
            else if (m != xs->metric) {
                *status = QEXEC_BAD_REQUEST;
                return ct_err_set(err, CT_EINVAL, "All TSUIDs must be the same metric");
            }
        }
        /* sort for the in-scan binary search */
        for (size_t i = 1; i < x->ntsuids; i++)
            for (size_t k = i; k > 0 && qexec_tsuid_cmp(x->tsuids[k - 1], x->tsuid_lens[k - 1],
                                                        x->tsuids[k], x->tsuid_lens[k]) > 0;
                 k--) {
                uint8_t *tb = x->tsuids[k];
                size_t tlen = x->tsuid_lens[k];
                x->tsuids[k] = x->tsuids[k - 1];
                x->tsuid_lens[k] = x->tsuid_lens[k - 1];
                x->tsuids[k - 1] = tb;
                x->tsuid_lens[k - 1] = tlen;
            }
        size_t nl;
        rc = uid_get_name(u, UID_METRIC, xs->metric, xs->metric_name, sizeof(xs->metric_name), &nl,
                          err);
        if (rc != CT_OK)
            return map_uid_err(rc, status);
    } else {
        snprintf(xs->metric_name, sizeof(xs->metric_name), "%s", sub->metric);
        rc = uid_get_id(u, UID_METRIC, sub->metric, strlen(sub->metric), &xs->metric, err);
        if (rc != CT_OK)
            return map_uid_err(rc, status);
    }
    struct rowkey_filter *rf = NULL;
    if ((rc = rowkey_filter_new(l, &rf, err)) != CT_OK)
        return rc;
    *rf_out = rf;
    rowkey_filter_set_metric(rf, xs->metric);
    xs->filts = calloc(sub->nfilters ? sub->nfilters : 1, sizeof(*xs->filts));
    xs->gb_tagk = calloc(sub->nfilters ? sub->nfilters : 1, sizeof(uint64_t));
    if (!xs->filts || !xs->gb_tagk)
        return ct_err_set(err, CT_ENOMEM, "out of memory planning a query");
    uint64_t *ids = NULL;
    for (size_t i = 0; i < sub->nfilters; i++) {
        const struct qfilter *f = sub->filters[i];
        const char *k = qfilter_tagk(f);
        uint64_t kid;
        rc = uid_get_id(u, UID_TAGK, k, strlen(k), &kid, err);
        if (rc != CT_OK) {
            free(ids);
            return map_uid_err(rc, status);
        }
        xs->filts[xs->nfilts].f = f;
        xs->filts[xs->nfilts++].tagk = kid;
        if (qfilter_group_by(f)) {
            bool dup = false;
            for (size_t g = 0; g < xs->ngb; g++)
                dup |= xs->gb_tagk[g] == kid;
            if (!dup)
                xs->gb_tagk[xs->ngb++] = kid;
        }
        size_t nlit = 0;
        const char *const *lits = qfilter_literals(f, &nlit);
        enum qfilter_type ft = qfilter_type(f);
        if (ft == QFILTER_LITERAL_OR || ft == QFILTER_NOT_LITERAL_OR) {
            uint64_t *nids = realloc(ids, (nlit ? nlit : 1) * sizeof(uint64_t));
            if (!nids) {
                free(ids);
                return ct_err_set(err, CT_ENOMEM, "out of memory planning a query");
            }
            ids = nids;
            size_t nid = 0;
            for (size_t v = 0; v < nlit; v++) {
                uint64_t vid;
                if (!*lits[v]) /* "a|" or "|a": no series has an empty value */
                    continue;
                rc = uid_get_id(u, UID_TAGV, lits[v], strlen(lits[v]), &vid, err);
                if (rc == CT_NOTFOUND && (ft == QFILTER_NOT_LITERAL_OR || skip_unresolved)) {
                    rc = CT_OK; /* an unknown value: nothing has it (to exclude or to match) */
                    continue;
                }
                if (rc != CT_OK) {
                    free(ids);
                    return map_uid_err(rc, status);
                }
                ids[nid++] = vid;
            }
            /* not_literal_or: the key must be there with another value (OpenTSDB's row key
             * regex requires every filtered key but not_key's, so a series without the key
             * never reaches TagVNotLiteralOrFilter.match) */
            if (ft == QFILTER_LITERAL_OR || nid)
                rc = rowkey_filter_add(rf, kid, ids, nid, ft == QFILTER_NOT_LITERAL_OR, err);
            else
                rc = rowkey_filter_add(rf, kid, NULL, 0, false, err);
        } else if (ft == QFILTER_NOT_KEY) {
            rc = rowkey_filter_add(rf, kid, NULL, 0, true, err);
        } else {
            rc = rowkey_filter_add(rf, kid, NULL, 0, false, err); /* the key must be there */
        }
        if (rc != CT_OK) {
            free(ids);
            return rc;
        }
    }
    free(ids);
    for (size_t g = 0; g < xs->ngb; g++) /* group-by keys must be present */
        if ((rc = rowkey_filter_add(rf, xs->gb_tagk[g], NULL, 0, false, err)) != CT_OK)
            return rc;
    qsort(xs->gb_tagk, xs->ngb, sizeof(uint64_t), cmp_u64);
    x->rf_no_tags = sub->nfilters == 0 && xs->ngb == 0; /* every filter added a clause */
    return CT_OK;
}

static int ser_cmp_tsuid(const void *a, const void *b)
{
    const struct xser *x = *(struct xser *const *)a, *y = *(struct xser *const *)b;
    return qexec_tsuid_cmp(x->tsuid, x->tsuid_len, y->tsuid, y->tsuid_len);
}

static int ser_cmp_group(const void *a, const void *b)
{
    const struct xser *x = *(struct xser *const *)a, *y = *(struct xser *const *)b;
    int c = qexec_tsuid_cmp(x->gkey, x->gkey_len, y->gkey, y->gkey_len);
    return c ? c : ser_cmp_tsuid(a, b);
}

#define XNAMES_MUL 0x9E3779B97F4A7C15ULL /* xnames' hash: the uid times an odd constant */

/* The name of tag uid `id` of kind k (UID_TAGK or UID_TAGV) from the sub-query's table, looked
 * up in the UID table the first time (*name: owned by xs->names until xsub_free). */
static int xnames_get(struct xsub *xs, struct uid *u, enum uid_kind k, uint64_t id, char **name,
                      struct ct_err *err)
{
    struct xnames *nm = &xs->names;
    if (2 * (nm->n + 1) > nm->cap) { /* grow: at most half full */
        size_t nc = nm->cap ? 2 * nm->cap : 64;
        struct xname *nt = calloc(nc, sizeof(*nt));
        if (!nt)
            return ct_err_set(err, CT_ENOMEM, "out of memory resolving tags");
        for (size_t i = 0; i < nm->cap; i++) {
            if (!nm->tab[i].kind)
                continue;
            uint64_t key = nm->tab[i].id ^ (uint64_t)nm->tab[i].kind << 62;
            size_t h = (size_t)hash_mix(key, XNAMES_MUL) & (nc - 1);
            while (nt[h].kind)
                h = (h + 1) & (nc - 1);
            nt[h] = nm->tab[i];
        }
        free(nm->tab);
        nm->tab = nt;
        nm->cap = nc;
    }
    int kind = (int)k + 1;
    size_t h = (size_t)hash_mix(id ^ (uint64_t)kind << 62, XNAMES_MUL) & (nm->cap - 1);
    for (; nm->tab[h].kind; h = (h + 1) & (nm->cap - 1))
        if (nm->tab[h].kind == kind && nm->tab[h].id == id) {
            *name = nm->tab[h].name;
            return CT_OK;
        }
    char buf[UID_MAX_NAME + 1];
    size_t nl;
    int rc = uid_get_name(u, k, id, buf, sizeof(buf), &nl, err);
    if (rc != CT_OK)
        return rc;
    if (!(*name = strdup(buf)))
        return ct_err_set(err, CT_ENOMEM, "out of memory resolving tags");
    nm->tab[h] = (struct xname){id, kind, *name};
    nm->n++;
    return CT_OK;
}

/* Resolves a series' tag names and decides whether it passes every filter (plan step 5). */
static int ser_resolve(struct tsdb *t, struct xsub *xs, struct xser *s, bool *keep,
                       struct ct_err *err)
{
    const struct rowkey_layout *l = tsdb_layout(t);
    struct uid *u = tsdb_uid(t);
    size_t pair = l->tagk_width + l->tagv_width;
    s->ntags = (s->tsuid_len - l->metric_width) / pair;
    /* the four arrays in one block (8-byte elements each) */
    void *block = calloc(s->ntags ? 4 * s->ntags : 1, 8);
    if (!block)
        return ct_err_set(err, CT_ENOMEM, "out of memory resolving tags");
    s->tags_block = true;
    s->tagk_id = block;
    s->tagv_id = s->tagk_id + s->ntags;
    s->tagk = (char **)(s->tagv_id + s->ntags);
    s->tagv = s->tagk + s->ntags;
    int rc;
    for (size_t i = 0; i < s->ntags; i++) {
        const uint8_t *p = s->tsuid + l->metric_width + i * pair;
        s->tagk_id[i] = rowkey_get_uid(p, l->tagk_width);
        s->tagv_id[i] = rowkey_get_uid(p + l->tagk_width, l->tagv_width);
        if ((rc = xnames_get(xs, u, UID_TAGK, s->tagk_id[i], &s->tagk[i], err)) != CT_OK ||
            (rc = xnames_get(xs, u, UID_TAGV, s->tagv_id[i], &s->tagv[i], err)) != CT_OK)
            return rc;
    }
    *keep = true;
    for (size_t fi = 0; fi < xs->nfilts && *keep; fi++) {
        const char *v = NULL;
        for (size_t i = 0; i < s->ntags; i++)
            if (s->tagk_id[i] == xs->filts[fi].tagk)
                v = s->tagv[i];
        *keep = qfilter_match(xs->filts[fi].f, v);
    }
    if (*keep && xs->sub->explicit_tags) {
        /* the series' keys must be exactly the filtered keys */
        size_t nk = 0;
        for (size_t fi = 0; fi < xs->nfilts; fi++) {
            bool seen = false;
            for (size_t fj = 0; fj < fi; fj++)
                seen |= xs->filts[fj].tagk == xs->filts[fi].tagk;
            if (!seen)
                nk++;
        }
        *keep = nk == s->ntags;
        for (size_t i = 0; i < s->ntags && *keep; i++) {
            bool found = false;
            for (size_t fi = 0; fi < xs->nfilts; fi++)
                found |= xs->filts[fi].tagk == s->tagk_id[i];
            *keep = found;
        }
    }
    if (*keep && xs->ngb) {
        s->gkey_len = xs->ngb * 8;
        if (!(s->gkey = malloc(s->gkey_len)))
            return ct_err_set(err, CT_ENOMEM, "out of memory grouping");
        for (size_t g = 0; g < xs->ngb && *keep; g++) {
            bool found = false;
            for (size_t i = 0; i < s->ntags; i++) {
                if (s->tagk_id[i] == xs->gb_tagk[g]) {
                    for (int b = 0; b < 8; b++)
                        s->gkey[g * 8 + b] = (uint8_t)(s->tagv_id[i] >> (56 - 8 * b));
                    found = true;
                }
            }
            *keep = found; /* OpenTSDB drops a series lacking a group-by key */
        }
    }
    return CT_OK;
}

/* delete=true: removes every row the query read of every series it kept, as TsdbQuery does
 * (whole hour rows of the scan window), and the same hours of those series from the ingest head
 * (x->head; the deletion is logged first, so a restart does not bring the points back). The
 * answer is still computed from what was read. */
static int delete_rows(struct tsdb *t, const struct xscan *x, struct xsub *xs, struct ct_err *err)
{
    const struct rowkey_layout *l = tsdb_layout(t);
    struct wc_mutation del = {.op = WC_OP_DELETE_ROW, .ts_ms = WC_TS_LATEST};
    for (size_t i = 0; i < xs->nser; i++) {
        struct xser *s = xs->ser[i];
        if (x->head && x->head_end_ms >= x->head_start_ms) {
            int rc = head_delete_hours(x->head, s->tsuid, s->tsuid_len, x->head_start_ms / 1000,
                                       x->head_end_ms / 1000 + 1, NULL, err);
            if (rc != CT_OK)
                return rc;
        }
        for (size_t r = 0; r < s->nrows; r++) {
            uint8_t key[ROWKEY_MAX_BYTES];
            size_t kl = rowkey_encode(l, s->tsuid, s->tsuid_len, s->row_base[r], key);
            struct wc_row_mutation rm = {wc_bytes_of(key, kl), &del, 1};
            int rc = wc_mutate_row(tsdb_data_table(t), &rm, WC_DURABILITY_USE_DEFAULT, err);
            if (rc != CT_OK)
                return rc;
        }
    }
    return CT_OK;
}

/* Threads a query's parallel parts may use: qexec_options.scan_threads, else the executor's
 * (qpool_threads), or one when the executor says every CPU is already busy (then *busy is set;
 * busy may be NULL). */
unsigned qexec_query_threads(const struct qexec_options *o, bool *busy)
{
    if (o->bound) /* a bounded run never waits for another thread (qexec_bound) */
        return 1;
    unsigned nth = o->scan_threads ? o->scan_threads : qpool_threads(o->pool);
    if (!o->scan_threads && nth > 1 && qpool_busy(o->pool)) {
        nth = 1;
        if (busy)
            *busy = true;
    }
    return nth > 64 ? 64 : nth;
}

/* A bounded run's check of a planned sub-query (qexec_bound): CT_ELIMIT with QEXEC_OVER_BOUND
 * when its plan is not a few exact key ranges, would read rollup tables, fills more buckets than
 * the bound's datapoints, or the run is past its deadline. */
static int bound_check_plan(const struct qspec *q, const struct qspec_sub *sub,
                            const struct qexec_options *o, const struct xscan *x,
                            enum qexec_status *status, struct ct_err *err)
{
    const struct qexec_bound *b = o->bound;
    uint64_t hours = (uint64_t)((x->win_end_s - x->win_start_s) / ROWKEY_HOUR_S + 1);
    enum rollup_iv riv;
    const char *why = NULL;
    if (!x->exact || (uint64_t)x->ntsuids * hours > b->max_ranges)
        why = "its plan is not a few exact key ranges";
    /* rollup tables or span buckets (0all, 7m) go to a worker; a sub-query folded by qrollup
     * only because the head holds points of its window (head = true there) stays: its raw rows
     * are the exact ranges above, counted against the bound's datapoints, and its head points
     * were collected already */
    else if (!x->histo && qrollup_eligible(q, sub, o, false, &riv))
        why = "it reads rollup tables";
    else if (sub->ds.enabled && !sub->ds.all && sub->ds.fill != QAGG_FILL_NONE &&
             sub->ds.interval_ms > 0 &&
             (uint64_t)((q->end_ms - q->start_ms) / sub->ds.interval_ms) + 1 > b->max_dps)
        why = "its fill policy fills too many buckets";
    else if (b->deadline_ns && clock_mono_ns() > b->deadline_ns)
        why = "its time is up";
    if (!why)
        return CT_OK;
    *status = QEXEC_OVER_BOUND;
    return ct_err_set(err, CT_ELIMIT, "a bounded query run stopped: %s", why);
}

static int run_sub(struct tsdb *t, const struct qspec *q, const struct qspec_sub *sub,
                   const struct qexec_options *o, struct xsub *xs, enum qexec_status *status,
                   struct qexec_stats *st, uint64_t deadline_ns, struct ct_err *err)
{
    const struct rowkey_layout *l = tsdb_layout(t);
    /* the sub-query's limits: the query's, or its metric's override (query/qlimits.h) */
    uint64_t max_dps = o->max_datapoints, max_bytes = o->max_bytes;
    qlimits_get(o->limits, sub->metric, &max_dps, &max_bytes);
    if (q->override_bytes && o->allow_bytes_override)
        max_bytes = 0;
    if (q->override_dps && o->allow_dps_override)
        max_dps = 0;
    struct xscan x;
    memset(&x, 0, sizeof(x));
    x.bucket_mask = UINT64_MAX;
    struct rowkey_filter *rf = NULL;
    int rc = plan_sub(t, sub, o->skip_unresolved_tagvs, xs, &rf, &x, status, err);
    if (rc != CT_OK)
        goto out;
    /* A fill policy emits every bucket of the range whatever is stored: refuse, before scanning
     * anything, an answer that would exceed the limit (memory stays bounded). */
    if (sub->ds.enabled && !sub->ds.all && sub->ds.fill != QAGG_FILL_NONE &&
        sub->ds.interval_ms > 0 && max_dps) {
        uint64_t buckets = (uint64_t)((q->end_ms - q->start_ms) / sub->ds.interval_ms) + 1;
        if (buckets > max_dps) {
            *status = QEXEC_TOO_LARGE;
            rc = ct_err_set(err, CT_ELIMIT,
                            "Sorry, you have attempted to fetch more than our limit of %llu data "
                            "points: downsampling %s fills %llu buckets per series. Please "
                            "decrease your time range or use a larger interval.",
                            (unsigned long long)max_dps, sub->ds.text, (unsigned long long)buckets);
            goto out;
        }
    }
    struct qagg_window w;
    qagg_window_compute(q->start_ms, q->end_ms, &sub->ds, &w);
    if (q->padding)
        qagg_window_pad(&w, &sub->ds);
    x.t = t;
    x.l = l;
    x.metric = xs->metric;
    x.win_start_s = w.win_start_ms / 1000;
    x.win_end_s = w.win_end_ms / 1000;
    x.rf = rf;
    if (o->head) { /* before planning in-scan downsampling: head points arrive after the scan */
        x.head = o->head;
        int64_t top = rowkey_base_hour_s(x.win_end_s - ROWKEY_HOUR_S);
        x.head_start_ms = rowkey_base_hour_s(x.win_start_s) * 1000;
        x.head_end_ms = (top + ROWKEY_HOUR_S) * 1000 - 1;
        if ((rc = qexec_head_collect(&x, err)) != CT_OK) {
            *status = QEXEC_INTERNAL;
            goto out;
        }
    }
    if (rf && !o->general_only) /* general_only: the tests' reference reads whole hours */
        x.nlead = qexec_lead_tags(rf, (uint64_t)((x.win_end_s - x.win_start_s) / ROWKEY_HOUR_S + 1),
                                  x.lead_vals, x.lead_n);
    if (rf && !o->general_only && !x.ntsuids && o->index_ranges) {
        uint64_t hours = (uint64_t)((x.win_end_s - x.win_start_s) / ROWKEY_HOUR_S + 1);
        rc = qindex_select(t, rf, xs->metric, hours, o->index_ranges, &x.tsuids, &x.tsuid_lens,
                           &x.ntsuids, err);
        if (rc == CT_OK)
            x.exact = true;
        else if (rc == CT_NOTFOUND)
            rc = CT_OK;
        else
            goto out;
        /* too many key ranges for the index's series: the metric's key range is walked, but
         * only in the salt buckets where they live */
        if (!x.exact && (rc = qindex_buckets(t, rf, xs->metric, &x.bucket_mask, err)) != CT_OK) {
            if (rc != CT_NOTFOUND)
                goto out;
            rc = CT_OK;
        }
    }
    x.histo = qspec_sub_is_histogram(sub);
    if (o->bound && (rc = bound_check_plan(q, sub, o, &x, status, err)) != CT_OK)
        goto out;
    if (!x.histo && !o->general_only && sub->ds.enabled && !sub->ds.all && !sub->ds.calendar &&
        sub->ds.interval_ms > 0 && (ROWKEY_HOUR_S * 1000) % sub->ds.interval_ms == 0 &&
        x.nhead == 0) {
        int64_t iv = sub->ds.interval_ms, seek = w.win_start_ms + iv - 1;
        x.ds = &sub->ds;
        x.ds_seek_ms = seek - seek % iv;
        x.ds_stream = o->general_only ? QAGG_STREAM_NO : qagg_stream_kind(sub->ds.fn);
    }
    xs->ds_done = x.ds != NULL;
    xs->general_only = o->general_only;
    x.nbuckets = l->salt_width ? l->salt_buckets : 1;
    unsigned nth = qexec_query_threads(o, st ? &st->busy_one_thread : NULL);
    /* a few exact key ranges (one series by its tags over a few hours) are read on the calling
     * thread: waking a helper and waiting for it costs more than such a scan (unless the
     * caller asked for a thread count) */
    if (x.exact && !o->scan_threads &&
        (uint64_t)x.ntsuids * (uint64_t)((x.win_end_s - x.win_start_s) / ROWKEY_HOUR_S + 1) <=
            QEXEC_ONE_THREAD_RANGES)
        nth = 1;
    /* fewer than four pieces of work per thread: split each bucket's hours into time slices.
     * Threads take pieces as they come free, so a thread that starts late or is preempted on a
     * busy machine leaves its share to the others instead of holding up the query. */
    int64_t hours = (x.win_end_s - x.win_start_s) / ROWKEY_HOUR_S;
    unsigned want = 4 * nth;
    /* one thread: whole buckets (a series' points then need no stitching) */
    x.nslices = nth == 1 || x.nbuckets >= want ? 1 : (want + x.nbuckets - 1) / x.nbuckets;
    if (hours < 1)
        hours = 1;
    if ((int64_t)x.nslices > hours)
        x.nslices = (unsigned)hours;
    x.slice_hours = (hours + x.nslices - 1) / x.nslices;
    enum rollup_iv riv;
    bool rolled = false, roll = !x.histo && qrollup_eligible(q, sub, o, x.nhead > 0, &riv);
    if (roll) /* the raw source's own slices (whole downsample buckets) */
        x.nslices = qrollup_slices(&x, sub, o, nth);
    unsigned nwork = x.nbuckets * x.nslices;
    x.max_dps = max_dps;
    x.max_bytes = max_bytes;
    if (o->bound && (!x.max_dps || o->bound->max_dps < x.max_dps))
        x.max_dps = o->bound->max_dps;
    x.deadline_ns = deadline_ns;
    if ((rc = qexec_head_count(&x, err)) != CT_OK) {
        map_uid_err(rc, status);
        goto out;
    }
    x.keep_rows = q->delete_data && o->allow_delete;
    x.sets = calloc(nwork, sizeof(struct xset));
    x.rcs = calloc(nwork, sizeof(int));
    /* 2 KiB each, read only where rcs[] says a piece failed (whose scan filled it): not
     * zeroed (a whole-buffer calloc was ~30,000 instructions of a small query) */
    x.errs = malloc(nwork * sizeof(struct ct_err));
    if (!x.sets || !x.rcs || !x.errs) {
        free(x.sets);
        x.sets = NULL;
        rc = ct_err_set(err, CT_ENOMEM, "out of memory planning a query");
        goto out;
    }
    for (unsigned wi = 0; wi < nwork; wi++) { /* an empty message, should a piece fail silently */
        x.errs[wi].code = CT_OK;
        x.errs[wi].msg[0] = 0;
    }
    xs->sets = x.sets;
    xs->nsets = nwork;
    uint64_t t0 = clock_mono_ns();
    if (nth > nwork)
        nth = nwork;
    if (st && nth > st->scan_threads)
        st->scan_threads = nth;
    if (roll) { /* rollup tables (head points folded) */
        xs->ds_done = rolled = true;
        if ((rc = qrollup_scan(&x, sub, &w, o->rollup, riv, o->pool, nth, err)) != CT_OK) {
            map_uid_err(rc, status);
            goto out;
        }
    } else {
        x.job.fn = qexec_scan_thread;
        x.job.arg = &x;
        qpool_run(o->pool, &x.job, nth - 1);
    }
    for (unsigned wi = 0; wi < nwork; wi++) {
        if (x.rcs[wi] != CT_OK && x.rcs[wi] != CT_ECLOSED) {
            rc = x.rcs[wi];
            *err = x.errs[wi];
            map_uid_err(rc, status);
            goto out;
        }
    }
    /* slices of a bucket, newest first: chain the older ones behind the newest (qexec_series_finish()
     * puts them before it) */
    for (unsigned b = 0; b < x.nbuckets && x.nslices > 1; b++) {
        for (unsigned sl = 1; sl < x.nslices; sl++) {
            rc = qexec_xset_merge(&x.sets[b * x.nslices], &x.sets[b * x.nslices + sl], err);
            qexec_xset_clear(&x.sets[b * x.nslices + sl]);
            if (rc != CT_OK) {
                *status = QEXEC_INTERNAL;
                goto out;
            }
        }
    }
    if (x.nhead && !rolled && (rc = qexec_head_merge(&x, err)) != CT_OK) {
        map_uid_err(rc, status);
        goto out;
    }
    xs->st.scan_ns += clock_mono_ns() - t0;
    xs->st.raw_dps += atomic_load(&x.dps);
    xs->st.rows += atomic_load(&x.rows);
    if (st) {
        st->scan_ns += clock_mono_ns() - t0;
        st->raw_dps += atomic_load(&x.dps);
        st->rows += atomic_load(&x.rows);
        st->scanners += atomic_load(&x.scanners);
        st->key_ranges += atomic_load(&x.key_ranges);
    }
    size_t total = 0;
    for (unsigned wi = 0; wi < nwork; wi++)
        total += x.sets[wi].n;
    xs->ser = calloc(total ? total : 1, sizeof(struct xser *));
    if (!xs->ser) {
        rc = ct_err_set(err, CT_ENOMEM, "out of memory collecting series");
        goto out;
    }
    for (unsigned wi = 0; wi < nwork; wi += x.nslices) {
        for (size_t i = 0; i < x.sets[wi].n; i++) {
            struct xser *s = x.sets[wi].ser[i];
            bool keep = false;
            if ((rc = ser_resolve(t, xs, s, &keep, err)) != CT_OK) {
                *status = QEXEC_INTERNAL;
                goto out;
            }
            if (keep)
                xs->ser[xs->nser++] = s;
        }
    }
    /* the kept series in time order, all in one block (one large allocation, which malloc
     * keeps for the next query, instead of one per series) */
    size_t block = 0;
    for (size_t i = 0; i < xs->nser; i++)
        block += qexec_series_finish_size(xs->ser[i]);
    if (block && !(xs->pts_block = malloc(block * sizeof(struct qagg_point)))) {
        rc = ct_err_set(err, CT_ENOMEM, "out of memory ordering %zu points", block);
        *status = QEXEC_INTERNAL;
        goto out;
    }
    struct qagg_point *dst = xs->pts_block;
    for (size_t i = 0; i < xs->nser; i++) {
        if ((rc = qexec_series_finish(xs->ser[i], &dst, err)) != CT_OK) {
            *status = QEXEC_INTERNAL;
            goto out;
        }
    }
    if (xs->nser > 1)
        qsort(xs->ser, xs->nser, sizeof(struct xser *),
              xs->ngb && !qagg_is_none(sub->agg) ? ser_cmp_group : ser_cmp_tsuid);
    if (x.keep_rows && (rc = delete_rows(t, &x, xs, err)) != CT_OK) {
        *status = QEXEC_INTERNAL;
        goto out;
    }
    if (st) {
        st->series += xs->nser;
        for (size_t i = 0; i < xs->nser; i++)
            st->held_points += xs->ser[i]->pts.n;
    }
out:
    qexec_head_free(&x);
    rowkey_filter_free(rf);
    for (size_t i = 0; i < x.ntsuids; i++)
        free(x.tsuids[i]);
    free(x.tsuids);
    free(x.tsuid_lens);
    free(x.rcs);
    free(x.errs);
    return rc;
}

/* The deadline of a run (clock_mono_ns; 0: none): its timeout's or its bound's, the earlier. */
static uint64_t run_deadline(const struct qexec_options *o)
{
    uint64_t deadline = o->timeout_ms > 0 ? clock_mono_ns() + (uint64_t)o->timeout_ms * 1000000 : 0;
    if (o->bound && o->bound->deadline_ns && (!deadline || o->bound->deadline_ns < deadline))
        deadline = o->bound->deadline_ns;
    return deadline;
}

/* Runs sub-query i's scans (phase 1) into xs[i]. */
static int run_one(struct tsdb *t, const struct qspec *q, size_t i, const struct qexec_options *o,
                   struct xsub *xs, enum qexec_status *status, struct qexec_stats *st,
                   uint64_t deadline, struct ct_err *err)
{
    *status = QEXEC_INTERNAL;
    int rc = run_sub(t, q, &q->subs[i], o, &xs[i], status, st, deadline, err);
    /* a bounded run's datapoint limit or deadline may be its bound's: the unbounded run finds
     * the query's own (qexec_bound) */
    if (o->bound && (rc == CT_ELIMIT || rc == CT_ETIMEOUT)) {
        *status = QEXEC_OVER_BOUND;
        return CT_ELIMIT;
    }
    if (rc == CT_OK)
        *status = QEXEC_OK;
    return rc;
}

static int run_all(struct tsdb *t, const struct qspec *q, const struct qexec_options *o,
                   struct xsub *xs, enum qexec_status *status, struct qexec_stats *st,
                   struct ct_err *err)
{
    uint64_t deadline = run_deadline(o);
    for (size_t i = 0; i < q->nsubs; i++) {
        int rc = run_one(t, q, i, o, xs, status, st, deadline, err);
        if (rc != CT_OK)
            return rc;
    }
    *status = QEXEC_OK;
    return CT_OK;
}

/* Writes "name":value into an object, a comma first unless *first. */
static void summary_key(struct qjson *j, bool *first, const char *name)
{
    if (!*first)
        qjson_raw(j, ",", 1);
    *first = false;
    qjson_str(j, name);
    qjson_raw(j, ":", 1);
}

/* A time in ns, written as OpenTSDB's DateTime.msFromNano: ms, a double. */
static void summary_ms(struct qjson *j, bool *first, const char *name, uint64_t ns)
{
    char b[48];
    summary_key(j, first, name);
    qjson_raw(j, b, qjson_format_double((double)ns / 1e6, b));
}

static void summary_count(struct qjson *j, bool *first, const char *name, uint64_t v)
{
    char b[24];
    summary_key(j, first, name);
    qjson_raw(j, b, qjson_format_i64((int64_t)v, b));
}

/* The final {"statsSummary":{...}} of showSummary, shaped as OpenTSDB 2.4's
 * QueryStats.getStats(true, ...): keys sorted (its TreeMap); per sub-query a "queryIdx_NN" map
 * (queryIndex; queryScanTime, its scans; rowsPostFilter / dpsPostFilter, the rows and
 * datapoints of its matching series read; and once it has written a series, aggregationTime,
 * serializationTime - writing its series' JSON, the aggregation included - and emittedDPs);
 * over all: the avg/max of those times across the sub-queries that have them, the counters
 * summed, and processingPreWriteTime, the run up to this summary. Times in ms (doubles). No
 * per-scanner maps: ctsdb's scans are not OpenTSDB's salt scanners. */
static void write_summary(struct qjson *j, const struct qspec *q, const struct xsub *xs,
                          uint64_t pre_write_ns, bool first_in_answer)
{
    struct tstat {
        uint64_t sum, max;
        size_t n;
    } agg = {0}, ser = {0}, scan = {0};
    uint64_t dps = 0, rows = 0, emitted = 0;
    for (size_t i = 0; i < q->nsubs; i++) {
        const struct qexec_stats *s = &xs[i].st;
        struct tstat *t[3] = {&scan, &agg, &ser};
        uint64_t v[3] = {s->scan_ns, s->agg_ns, s->ser_ns};
        for (int k = 0; k < (s->groups ? 3 : 1); k++) {
            t[k]->sum += v[k];
            t[k]->max = v[k] > t[k]->max ? v[k] : t[k]->max;
            t[k]->n++;
        }
        dps += s->raw_dps;
        rows += s->rows;
        emitted += s->emitted_dps;
    }
    bool f = true;
    qjson_lit(j, first_in_answer ? "{\"statsSummary\":{" : ",{\"statsSummary\":{");
    if (agg.n)
        summary_ms(j, &f, "avgAggregationTime", agg.sum / agg.n);
    summary_ms(j, &f, "avgQueryScanTime", scan.sum / scan.n);
    if (ser.n)
        summary_ms(j, &f, "avgSerializationTime", ser.sum / ser.n);
    summary_count(j, &f, "dpsPostFilter", dps);
    if (agg.n)
        summary_count(j, &f, "emittedDPs", emitted);
    if (agg.n)
        summary_ms(j, &f, "maxAggregationTime", agg.max);
    summary_ms(j, &f, "maxQueryScanTime", scan.max);
    if (ser.n)
        summary_ms(j, &f, "maxSerializationTime", ser.max);
    summary_ms(j, &f, "processingPreWriteTime", pre_write_ns);
    for (size_t i = 0; i < q->nsubs; i++) {
        const struct qexec_stats *s = &xs[i].st;
        char name[32];
        snprintf(name, sizeof(name), "queryIdx_%02zu", i);
        summary_key(j, &f, name);
        bool sf = true;
        qjson_raw(j, "{", 1);
        if (s->groups)
            summary_ms(j, &sf, "aggregationTime", s->agg_ns);
        summary_count(j, &sf, "dpsPostFilter", s->raw_dps);
        if (s->groups)
            summary_count(j, &sf, "emittedDPs", s->emitted_dps);
        summary_count(j, &sf, "queryIndex", i);
        summary_ms(j, &sf, "queryScanTime", s->scan_ns);
        summary_count(j, &sf, "rowsPostFilter", s->rows);
        if (s->groups)
            summary_ms(j, &sf, "serializationTime", s->ser_ns);
        qjson_raw(j, "}", 1);
    }
    summary_count(j, &f, "rowsPostFilter", rows);
    qjson_lit(j, "}}");
}

/* Frees what sub-query xs's scan and answer held, keeping its statistics for the summary. */
static void xsub_done(struct xsub *xs)
{
    struct qexec_stats keep = xs->st;
    const struct qspec_sub *sub = xs->sub;
    xsub_free(xs);
    xs->st = keep;
    xs->sub = sub;
}

/* Bytes of finished sub-queries' answers held in memory (qexec_run) before later sub-queries
 * keep their series instead, unless qexec_options.held_max_bytes says otherwise. */
#define QEXEC_HELD_MAX_BYTES (8u << 20)

/* The answer: the sub-queries run one after the other, and each one's groups, but the last
 * one's, are written at once into memory (held) and its series freed, so the answer holds one
 * sub-query's series at a time, not every one's (invariant (1): nothing reaches j before the
 * last scan is done). The last sub-query's groups go straight to j after the held bytes. Past
 * held_max_bytes held (large raw answers, whose JSON takes more than their points), the
 * sub-queries after keep their series until the end, as the last one does. */
int qexec_run(struct tsdb *t, const struct qspec *q, const struct qexec_options *o, struct qjson *j,
              enum qexec_status *status, struct qexec_stats *stats, struct ct_err *err)
{
    struct qexec_stats local;
    memset(&local, 0, sizeof(local));
    struct qexec_stats *st = stats ? stats : &local;
    uint64_t t0 = clock_mono_ns();
    struct xsub *xs = calloc(q->nsubs, sizeof(*xs));
    if (!xs) {
        *status = QEXEC_INTERNAL;
        return ct_err_set(err, CT_ENOMEM, "out of memory running a query");
    }
    struct gann globals = {0};
    struct qexec_mbuf held = {0};
    struct qjson *jh = NULL;
    struct wctx w = {q, &globals, NULL, true, st, err};
    uint64_t deadline = run_deadline(o);
    int rc = CT_OK;
    *status = QEXEC_OK;
    /* global annotations first: every held group carries them */
    if (q->global_annotations) {
        rc = tsdb_annotation_scan(t, NULL, 0, q->start_ms, q->end_ms, qexec_collect_global,
                                  &globals, err);
        if (rc != CT_OK)
            *status = QEXEC_INTERNAL;
        else if (o->bound && o->bound->deadline_ns && clock_mono_ns() > o->bound->deadline_ns) {
            *status = QEXEC_OVER_BOUND;
            rc = ct_err_set(err, CT_ELIMIT, "a bounded query run stopped: its time is up");
        }
    }
    size_t held_max = o->held_max_bytes ? o->held_max_bytes : QEXEC_HELD_MAX_BYTES;
    size_t kept = q->nsubs ? q->nsubs - 1 : 0; /* the first sub-query not held */
    for (size_t i = 0; i < q->nsubs && rc == CT_OK; i++) {
        rc = run_one(t, q, i, o, xs, status, st, deadline, err);
        if (rc != CT_OK || i + 1 == q->nsubs)
            break;
        if (kept < i)
            continue; /* holding stopped: its series stay until the end */
        if (held.n >= held_max) {
            kept = i;
            continue;
        }
        if (!jh && !(jh = qjson_new(qexec_mbuf_sink, &held, 0)))
            rc = ct_err_set(err, CT_ENOMEM, "out of memory running a query");
        w.j = jh;
        if (rc == CT_OK)
            rc = qexec_write_groups(o, &xs[i], &w);
        if (rc == CT_OK)
            rc = qjson_flush(jh) == CT_OK ? CT_OK
                                          : ct_err_set(err, CT_ENOMEM, "out of memory writing");
        if (rc != CT_OK)
            *status = QEXEC_INTERNAL;
        xsub_done(&xs[i]);
    }
    if (rc == CT_OK) {
        w.j = j;
        qjson_raw(j, "[", 1);
        if (held.n)
            qjson_raw(j, held.p, held.n);
        for (size_t i = kept; i < q->nsubs && rc == CT_OK; i++)
            rc = qexec_write_groups(o, &xs[i], &w);
        if (rc == CT_OK && q->show_summary)
            write_summary(j, q, xs, clock_mono_ns() - t0, w.first);
        qjson_raw(j, "]", 1);
        if (rc != CT_OK)
            *status = QEXEC_INTERNAL;
    }
    st->total_ns = clock_mono_ns() - t0;
    qjson_free(jh);
    free(held.p);
    for (size_t i = 0; i < globals.n; i++)
        free(globals.a[i].json);
    free(globals.a);
    for (size_t i = 0; i < q->nsubs; i++)
        xsub_free(&xs[i]);
    free(xs);
    return rc;
}

struct pctx {
    const struct qspec *q;
    qexec_group_start_fn gfn;
    qexec_point_fn fn;
    void *arg;
    struct ct_err *err;
};

static int points_group_cb(void *arg, struct xsub *xs, struct xser **ser, size_t n)
{
    struct pctx *p = arg;
    const char **tk = NULL, **tv = NULL, **ag = NULL;
    size_t ntk = 0, nag = 0;
    if (qexec_group_tags(ser, n, &tk, &tv, &ntk, &ag, &nag) != 0)
        return ct_err_set(p->err, CT_ENOMEM, "out of memory");
    int rc = 0;
    if (p->gfn) {
        struct qexec_group g = {.sub = (size_t)(xs->sub - p->q->subs),
                                .metric = xs->metric_name,
                                .tagk = tk,
                                .tagv = tv,
                                .ntags = ntk,
                                .agg = ag,
                                .nagg = nag};
        rc = p->gfn(p->arg, &g);
    }
    char tags[4096];
    size_t o = 0;
    tags[0] = 0;
    for (size_t i = 0; i < ntk && o < sizeof(tags); i++)
        o += (size_t)snprintf(tags + o, sizeof(tags) - o, "%s%s=%s", i ? " " : "", tk[i], tv[i]);
    free(tk);
    free(tv);
    free(ag);
    if (rc != 0)
        return rc;
    struct xout xo = {.q = p->q,
                      .sub = xs->sub,
                      .fn = p->fn,
                      .fn_arg = p->arg,
                      .metric = xs->metric_name,
                      .tags = tags};
    return qexec_run_group(p->q, xs, ser, n, &xo, p->err);
}

int qexec_run_groups(struct tsdb *t, const struct qspec *q, const struct qexec_options *o,
                     qexec_group_start_fn gfn, qexec_point_fn fn, void *arg,
                     enum qexec_status *status, struct ct_err *err)
{
    struct xsub *xs = calloc(q->nsubs, sizeof(*xs));
    if (!xs) {
        *status = QEXEC_INTERNAL;
        return ct_err_set(err, CT_ENOMEM, "out of memory running a query");
    }
    int rc = run_all(t, q, o, xs, status, NULL, err);
    struct pctx p = {q, gfn, fn, arg, err};
    for (size_t i = 0; i < q->nsubs && rc == CT_OK; i++)
        rc = qexec_for_each_group(&xs[i], points_group_cb, &p);
    for (size_t i = 0; i < q->nsubs; i++)
        xsub_free(&xs[i]);
    free(xs);
    return rc;
}

int qexec_run_points(struct tsdb *t, const struct qspec *q, const struct qexec_options *o,
                     qexec_point_fn fn, void *arg, enum qexec_status *status, struct ct_err *err)
{
    return qexec_run_groups(t, q, o, NULL, fn, arg, status, err);
}
