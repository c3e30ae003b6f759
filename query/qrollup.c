/* qrollup.c - see qrollup.h. One pass per source (1d table, 1h table, raw rows), each over every
 * salt bucket's key range of the metric (oldest first), folds values into each series' current
 * bucket accumulator; a bucket is finished into the series' point (if it has what the function
 * needs) when the series moves to a later bucket, and at the end.
 * Invariants: the three sources cover disjoint hour ranges [lo, cut1), [cut1, cut2), [cut2, hi)
 * of the window, each a whole number of its own intervals, and are read in that order; a bucket
 * is indexed (ts - lo) / interval (span buckets: (ts - g_lo_ms) / g_iv_ms) and lies inside the
 * window; a series' bucket indexes never decrease (acc_at refuses one that does). The ingest
 * head's points
 * (x->head_*, collected by run_sub) join the raw source: a series' raw rows from the hour of its
 * first head point in [cut2, hi) on are kept as points and merged with the head's (the head's
 * point wins a shared timestamp, as qexec_head_merge), then folded in time order, so each bucket
 * adds its points in the order the general path does. */
#include "query/qrollup.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "query/qindex.h"
#include "schema/dpcodec.h"
#include "schema/rowkey.h"
#include "storage/coding.h"
#include "storage/hash.h"

#define HOUR_MS 3600000LL
#define DAY_MS  86400000LL

/* Whether one of sub's filters is not a wildcard (picks some series by their values). */
static bool qrollup_picks(const struct qspec_sub *sub)
{
    for (size_t i = 0; i < sub->nfilters; i++) {
        enum qfilter_type t = qfilter_type(sub->filters[i]);
        if (t != QFILTER_WILDCARD && t != QFILTER_IWILDCARD)
            return true;
    }
    return false;
}

bool qrollup_eligible(const struct qspec *q, const struct qspec_sub *sub,
                      const struct qexec_options *o, bool head, enum rollup_iv *iv)
{
    if (o->general_only || !sub->metric || q->padding || q->delete_data)
        return false;
    const struct qagg_ds *ds = &sub->ds;
    if (!ds->enabled || ds->calendar || qagg_stream_kind(ds->fn) == QAGG_STREAM_NO)
        return false;
    if (ds->all || (ds->interval_ms > 0 && ds->interval_ms % HOUR_MS)) {
        /* span buckets, raw rows only; an interval dividing an hour is the scan's own, unless
         * the head holds points of the window (the scan then cannot downsample as it reads) */
        if (!ds->all && HOUR_MS % ds->interval_ms == 0 && !head)
            return false;
        *iv = ROLLUP_1H;
        return true;
    }
    if (ds->interval_ms <= 0)
        return false;
    bool raw_only = !o->rollup || sub->rollup_usage == QSPEC_ROLLUP_RAW;
    /* a fill policy fills what the rollup tables lack (a bucket of NaN only has no rollup) */
    if (ds->fill != QAGG_FILL_NONE && !raw_only)
        return false;
    /* raw rows only, 1h, with a filter that picks some of the metric's series (not a
     * wildcard): the scan's own downsampling, which skips the other rows as it reads them (the
     * fold here took 1.20 against 0.95 ms for 1h-max by host of one dc, 200 series x 30 days;
     * it is faster when every series is read) */
    if (raw_only && ds->interval_ms == HOUR_MS && !head && qrollup_picks(sub))
        return false;
    *iv = ds->interval_ms % DAY_MS == 0 ? ROLLUP_1D : ROLLUP_1H;
    return true;
}

unsigned qrollup_slices(const struct xscan *x, const struct qspec_sub *sub,
                        const struct qexec_options *o, unsigned nth)
{
    const struct qagg_ds *ds = &sub->ds;
    bool raw_only = !o->rollup || sub->rollup_usage == QSPEC_ROLLUP_RAW;
    int64_t iv_s = ds->interval_ms / 1000; /* whole hours (tested next) */
    if (nth <= 1 || !raw_only || x->nhead || ds->all || iv_s < 3600 || ds->interval_ms % HOUR_MS)
        return 1;
    /* the window's whole buckets, as qrollup_scan() takes them */
    int64_t lo = x->win_start_s + (iv_s - x->win_start_s % iv_s) % iv_s;
    int64_t hi = x->win_end_s - x->win_end_s % iv_s;
    if (hi <= lo)
        return 1;
    uint64_t nbk = (uint64_t)((hi - lo) / iv_s);
    unsigned want = QROLLUP_PIECES * nth, nb = x->nbuckets ? x->nbuckets : 1;
    uint64_t n = (want + nb - 1) / nb;
    if (n > nbk)
        n = nbk;
    /* slices of ceil(nbk / n) buckets: as many as that makes (none empty) */
    uint64_t per = (nbk + n - 1) / n;
    n = (nbk + per - 1) / per;
    return n ? (unsigned)n : 1;
}

/* A source's interval and the part of the window it serves. */
struct rsrc {
    enum rollup_iv iv;
    int64_t from, to;
};

/* One bucket's accumulator. */
struct racc {
    double sum, min, max;
    int64_t count;
    uint8_t has; /* bit per rollup_agg seen; RACC_RAW: a raw point (NaN too) was seen */
};
#define RACC_RAW (1u << ROLLUP_NAGG)

/* A raw point waiting for the head's points of its series (see the top). */
struct rpend {
    int64_t ts_ms;
    double v;
};

struct rser {
    uint8_t tsuid[ROWKEY_MAX_TSUID];
    size_t tsuid_len;
    /* the bucket being folded (index cur_ix; -1: none yet) and the finished buckets' points,
     * ascending: every source visits a series' buckets in time order (the sources cover
     * [lo, cut1), [cut1, cut2), [cut2, hi) and are read in that order, each forward), so
     * memory is one point per bucket holding data, never one per bucket of the window */
    struct racc cur;
    int64_t cur_ix;
    struct qagg_point *pts;
    size_t npts, cappts;
    long head;           /* index of its points in x->head_*, or -1 */
    int64_t head_from_s; /* with head >= 0: raw rows from this hour on go to pend */
    struct rpend *pend;  /* ascending */
    size_t npend, cappend;
    struct xann *anns; /* annotations of the raw rows read (moved to the xser) */
    size_t nanns;
    bool seen; /* a raw row or head point of it was read (span: the series is answered) */
    struct rser *after; /* the series of the row read after its last row (row_series) */
};

struct rctx {
    struct xscan *x;
    const struct hashset *hix;    /* the head's series (x->head_ts index), NULL when none */
    int64_t raw_from_s, raw_to_s; /* the raw source's hours [cut2, hi) */
    int64_t lo_s, iv_s;
    size_t nb;
    /* the raw points' bucket grid: bucket i is [g_lo_ms + i g_iv_ms, + g_iv_ms); points outside
     * [g_from_ms, g_to_ms) are read but folded nowhere; annotations kept in [ann_lo_ms,
     * ann_hi_ms). Whole hours: lo_s and iv_s in ms, from the raw source's first hour to hi. */
    int64_t g_lo_ms, g_iv_ms, g_from_ms, g_to_ms, ann_lo_ms, ann_hi_ms;
    bool span; /* buckets are not whole hours (0all, 7m, 90m ...): raw rows only */
    enum qagg_stream kind;
    struct rser **ser;
    size_t n, cap;
    struct hashset ht;
    bool need[ROLLUP_NAGG];
    struct rsrc src;          /* the source being scanned */
    struct dpcodec_cols cols; /* raw rows' points, reused row to row */
    struct rser *last;        /* the series of the last row (row_series), NULL before one */
    /* rows and raw points read and not yet added to x->rows and x->dps (count_flush): one
     * shared addition per RCTX_DPS_BATCH points, not one per row (the other scan threads add
     * to the same cache line) */
    uint64_t rows, dps;
};
#define RCTX_DPS_BATCH 8192

static uint64_t rser_hash_of(void *arg, size_t i)
{
    struct rctx *c = arg;
    return hash_bytes(c->ser[i]->tsuid, c->ser[i]->tsuid_len, 0);
}

static bool rser_eq(void *arg, size_t i, const void *key, size_t len)
{
    struct rctx *c = arg;
    return c->ser[i]->tsuid_len == len && !memcmp(c->ser[i]->tsuid, key, len);
}

static uint64_t head_hash_of(void *arg, size_t i)
{
    const struct xscan *x = arg;
    return hash_bytes(x->head_ts[i], x->head_tl[i], 0);
}

static bool head_eq(void *arg, size_t i, const void *key, size_t len)
{
    const struct xscan *x = arg;
    return x->head_tl[i] == len && !memcmp(x->head_ts[i], key, len);
}

/* Adds c's pending counts to the query's (x->rows, x->dps) and checks the limits on the total,
 * as the point-by-point checks did (the total only grows, so an exceeded limit is found
 * whenever it is checked): span buckets' datapoint limit on raw points (whole-hour buckets
 * count series x buckets instead, rser_get), the byte limit (over_bytes). */
static bool over_bytes(const struct rctx *c, uint64_t total, struct ct_err *err);
static int count_flush(struct rctx *c, struct ct_err *err)
{
    struct xscan *x = c->x;
    if (c->rows)
        atomic_fetch_add(&x->rows, c->rows);
    uint64_t n = c->dps;
    c->rows = c->dps = 0;
    if (!n)
        return CT_OK;
    uint64_t total = atomic_fetch_add(&x->dps, n) + n;
    if (c->span && x->max_dps && total > x->max_dps) /* the scan's limit (raw points) */
        return ct_err_set(err, CT_ELIMIT,
                          "Sorry, you have attempted to fetch more than our limit of %llu "
                          "data points. Please try filtering using more tags or decrease "
                          "your time range.",
                          (unsigned long long)x->max_dps);
    if (over_bytes(c, total, err))
        return err->code;
    return CT_OK;
}

static struct rser *rser_get(struct rctx *c, const uint8_t *tsuid, size_t len, struct ct_err *err)
{
    if (hashset_reserve(&c->ht, 256, rser_hash_of, c, err) != CT_OK)
        return NULL;
    size_t h = 0;
    long i = hashset_find(&c->ht, hash_bytes(tsuid, len, 0), rser_eq, c, tsuid, len, &h);
    if (i >= 0)
        return c->ser[i];
    uint64_t limit = c->x->max_dps;
    if (limit && (uint64_t)(c->n + 1) * c->nb > limit) {
        ct_err_set(err, CT_ELIMIT,
                   "Sorry, you have attempted to fetch more than our limit of %llu data points. "
                   "Please try filtering using more tags or decrease your time range.",
                   (unsigned long long)limit);
        return NULL;
    }
    if (c->n == c->cap) {
        size_t nc = c->cap ? 2 * c->cap : 64;
        struct rser **ns = realloc(c->ser, nc * sizeof(*ns));
        if (!ns) {
            ct_err_set(err, CT_ENOMEM, "out of memory collecting rollup series");
            return NULL;
        }
        c->ser = ns;
        c->cap = nc;
    }
    struct rser *s = calloc(1, sizeof(*s));
    if (!s) {
        ct_err_set(err, CT_ENOMEM, "out of memory collecting rollup series");
        return NULL;
    }
    memcpy(s->tsuid, tsuid, len);
    s->tsuid_len = len;
    s->head = -1;
    s->cur_ix = -1;
    if (c->hix && c->hix->cap) {
        struct xscan *x = c->x;
        size_t slot = 0;
        long hi = hashset_find(c->hix, hash_bytes(tsuid, len, 0), head_eq, x, tsuid, len, &slot);
        /* its first head point inside the raw source's hours */
        struct head_iter it;
        struct dpcodec_point p;
        if (hi >= 0)
            qexec_head_iter(x, (size_t)hi, &it);
        while (hi >= 0 && head_iter_next(&it, &p)) {
            int64_t t = p.ts_ms;
            if (t >= c->raw_from_s * 1000 && t < c->raw_to_s * 1000) {
                s->head = hi;
                s->head_from_s = rowkey_base_hour_s(t / 1000);
                break;
            }
        }
    }
    hashset_insert_at(&c->ht, h, c->n);
    c->ser[c->n++] = s;
    return s;
}

/* The point of bucket ix from its accumulator a, for the sub-query's function (false: none). */
static bool acc_point(const struct rctx *c, const struct racc *a, int64_t ix, struct qagg_point *pt)
{
    bool hs = a->has & (1u << ROLLUP_SUM), hc = a->has & (1u << ROLLUP_COUNT);
    double v;
    if ((a->has & RACC_RAW) && !hc) { /* raw points, all NaN: NaN, as the raw path */
        v = NAN;
    } else {
        switch (c->kind) {
        case QAGG_STREAM_SUM:
            if (!hs)
                return false;
            v = a->sum;
            break;
        case QAGG_STREAM_COUNT:
            if (!hc)
                return false;
            v = (double)a->count;
            break;
        case QAGG_STREAM_AVG:
            if (!hs || !hc || a->count == 0)
                return false;
            v = a->sum / (double)a->count;
            break;
        case QAGG_STREAM_MIN:
            if (!(a->has & (1u << ROLLUP_MIN)))
                return false;
            v = a->min;
            break;
        default:
            if (!(a->has & (1u << ROLLUP_MAX)))
                return false;
            v = a->max;
            break;
        }
    }
    pt->ts_ms = c->g_lo_ms + ix * c->g_iv_ms;
    pt->is_int = false;
    pt->v.d = v;
    return true;
}

/* Finishes s's current bucket: its point (if any) appended to s->pts. */
static int acc_flush(const struct rctx *c, struct rser *s, struct ct_err *err)
{
    if (s->cur_ix < 0)
        return CT_OK;
    struct qagg_point pt;
    if (acc_point(c, &s->cur, s->cur_ix, &pt)) {
        if (s->npts == s->cappts) {
            size_t nc = s->cappts ? 2 * s->cappts : 8;
            struct qagg_point *np = realloc(s->pts, nc * sizeof(*np));
            if (!np)
                return ct_err_set(err, CT_ENOMEM, "out of memory for rollup points");
            s->pts = np;
            s->cappts = nc;
        }
        s->pts[s->npts++] = pt;
    }
    s->cur_ix = -1;
    return CT_OK;
}

/* The accumulator of s's bucket ix (the current one, or a new one after finishing it); NULL
 * with err set when out of memory, or (our bug) when a source went back in time. */
static struct racc *acc_at(const struct rctx *c, struct rser *s, int64_t ix, struct ct_err *err)
{
    if (ix == s->cur_ix)
        return &s->cur;
    if (ix < s->cur_ix || ix < 0 || (size_t)ix >= c->nb) {
        ct_err_set(err, CT_ECORRUPT, "rollup bucket %lld read after %lld", (long long)ix,
                   (long long)s->cur_ix);
        return NULL;
    }
    if (acc_flush(c, s, err) != CT_OK)
        return NULL;
    memset(&s->cur, 0, sizeof(s->cur));
    s->cur_ix = ix;
    return &s->cur;
}

static void fold(struct racc *a, enum rollup_agg g, double v, int64_t cnt)
{
    switch (g) {
    case ROLLUP_SUM:
        a->sum += v;
        break;
    case ROLLUP_COUNT:
        a->count += cnt;
        break;
    case ROLLUP_MIN:
        if (!(a->has & (1u << ROLLUP_MIN)) || v < a->min)
            a->min = v;
        break;
    case ROLLUP_MAX:
        if (!(a->has & (1u << ROLLUP_MAX)) || v > a->max)
            a->max = v;
        break;
    }
    a->has |= (uint8_t)(1u << g);
}

static enum wc_row_decision rf_filter(void *arg, const uint8_t *row, size_t len)
{
    const struct xscan *x = arg;
    return !x->rf || rowkey_filter_match(x->rf, row, len) ? WC_ROW_INCLUDE : WC_ROW_SKIP;
}

/* Calls row_fn for every row of table tab in the metric's key range of salt bucket b whose
 * base lies in [first_base, last_base], oldest hour first. Raw rows (raw): the exact key ranges
 * of the series the tag index picked, or of the leading tags the filter pins, when the scan's
 * plan has them (x->exact, x->nlead: as the raw scan reads them), forward. */
typedef int (*row_fn)(struct rctx *c, const struct wc_row *row, int64_t base, struct ct_err *err);
static int scan_table(struct rctx *c, unsigned b, struct wc_table *tab, int64_t first_base,
                      int64_t last_base, bool raw, row_fn fn, struct ct_err *err)
{
    struct xscan *x = c->x;
    const struct rowkey_layout *l = x->l;
    int rc = CT_OK;
    struct wc_row_range *ranges = NULL;
    {
        uint8_t k0[ROWKEY_MAX_BYTES], k1[ROWKEY_MAX_BYTES];
        struct wc_scan_options so;
        wc_scan_options_init(&so);
        if (raw && x->exact) {
            rc = qindex_ranges(l, b, first_base, last_base, x->tsuids, x->tsuid_lens, x->ntsuids,
                               &ranges, &so.nranges, err);
        } else if (raw && x->nlead) {
            rc = rowkey_lead_ranges(l, b, x->metric, first_base, last_base, x->lead_vals, x->lead_n,
                                    x->nlead, &ranges, &so.nranges, err);
        } else {
            size_t l0 = rowkey_scan_start(l, b, x->metric, first_base, k0);
            size_t l1 = rowkey_scan_stop(l, b, x->metric, last_base, k1);
            so.start_row = wc_bytes_of(k0, l0);
            so.stop_row = wc_bytes_of(k1, l1);
        }
        so.ranges = ranges;
        if (rc != CT_OK || (ranges == NULL && raw && (x->exact || x->nlead))) {
            free(ranges); /* an error, or no range in this bucket: nothing to read */
            return rc;
        }
        /* a filter with no tag clause checks what the key range and the shape test below
         * already do: not run per row */
        struct qexec_rf_memo memo;
        if (!x->rf_no_tags) {
            qexec_rf_memo_init(&memo, l, rf_filter, x);
            so.row_filter = qexec_rf_memo_filter;
            so.row_filter_arg = &memo;
        }
        size_t head = l->salt_width + l->metric_width + ROWKEY_TIMESTAMP_BYTES;
        size_t pair = l->tagk_width + l->tagv_width;
        struct wc_scanner *sc = NULL;
        if ((rc = wc_scanner_open(tab, &so, &sc, err)) != CT_OK) {
            free(ranges);
            return rc;
        }
        atomic_fetch_add(&x->scanners, 1);
        atomic_fetch_add(&x->key_ranges, so.nranges ? so.nranges : 1);
        struct wc_row row;
        while ((rc = wc_scanner_next(sc, &row, err)) == CT_OK) {
            /* rowkey_filter_match's shape test: a key that does not fit the layout is skipped */
            size_t kl = row.key.len;
            if (kl < head || (kl - head) % pair != 0)
                continue;
            c->rows++;
            int64_t base = coding_get_be32(row.key.data + l->salt_width + l->metric_width);
            if ((rc = fn(c, &row, base, err)) != CT_OK)
                break;
        }
        if (rc == CT_NOTFOUND)
            rc = CT_OK;
        wc_scanner_close(sc);
        if (rc == CT_OK)
            rc = count_flush(c, err);
    }
    free(ranges);
    return rc;
}

/* True when row key `key` names series s (its TSUID compared in place). */
static bool row_is(const struct rowkey_layout *l, const struct rser *s, const uint8_t *key,
                   size_t kl)
{
    size_t mw = l->metric_width, head = l->salt_width + mw + ROWKEY_TIMESTAMP_BYTES;
    return kl >= head && kl - head + mw == s->tsuid_len &&
           !memcmp(s->tsuid, key + l->salt_width, mw) &&
           !memcmp(s->tsuid + mw, key + head, kl - head);
}

/* The series of a row. Rows come by hour, each hour's series in key order, and every hour
 * repeats the order of the one before: the series that followed the previous row's series last
 * time (rser.after) is tried first, compared in place, before a lookup by TSUID (rser_get). */
static struct rser *row_series(struct rctx *c, const struct wc_row *row, struct ct_err *err)
{
    const struct rowkey_layout *l = c->x->l;
    struct rser *s = c->last ? c->last->after : NULL;
    if (!s || !row_is(l, s, row->key.data, row->key.len)) {
        uint8_t tsuid[ROWKEY_MAX_TSUID];
        size_t tl = rowkey_tsuid_of(l, row->key.data, row->key.len, tsuid, sizeof(tsuid));
        if (!tl) {
            ct_err_set(err, CT_ECORRUPT, "short row key");
            return NULL;
        }
        if (!(s = rser_get(c, tsuid, tl, err)))
            return NULL;
    }
    if (c->last)
        c->last->after = s;
    c->last = s;
    return s;
}

/* One rollup of a row: the newest cell written for an (aggregator, interval) of the row. */
struct rslot {
    int64_t cell_ms; /* the cell's write time */
    int64_t ts;      /* the interval's start, seconds */
    double v;
    int64_t cnt;
};
#define RSLOTS 32 /* intervals in a row: 24 hours of a day, 28..31 days of a month */

/* A row's rollups folded into their buckets. A row can hold two cells for one aggregator and
 * interval (a second write with another value type or length: other flags, another qualifier;
 * or one in the name form and one in the numeric-id form); as in raw rows (dpcodec_row_decode)
 * the newest cell wins (write time, then cell order), never both. */
/* The query's byte limit (qexec_options.max_bytes) against `total` values read, each counted
 * QEXEC_POINT_BYTES as a raw point: true (err set, SaltScanner's 413 text) when it is passed. */
static bool over_bytes(const struct rctx *c, uint64_t total, struct ct_err *err)
{
    if (!c->x->max_bytes || total <= c->x->max_bytes / QEXEC_POINT_BYTES)
        return false;
    ct_err_set(err, CT_ELIMIT,
               "Sorry, you have attempted to fetch more than our maximum amount of %lluMB from "
               "storage. Please try filtering using more tags or decrease your time range.",
               (unsigned long long)(c->x->max_bytes / 1024 / 1024));
    return true;
}

static int rollup_row(struct rctx *c, const struct wc_row *row, int64_t base, struct ct_err *err)
{
    uint64_t nval = 0; /* values folded, counted once for the row */
    struct rser *s = NULL;
    const struct rsrc *src = &c->src;
    struct rslot slot[ROLLUP_NAGG][RSLOTS];
    uint32_t used[ROLLUP_NAGG] = {0};
    int64_t iv_s = rollup_iv_seconds(src->iv);
    for (size_t i = 0; i < row->ncells; i++) {
        const struct wc_cell *cell = &row->cells[i];
        /* cells of aggregators not needed are skipped before decoding: by the first letter of
         * the name form (sum, count, min/max), by the id of the 3-byte form */
        const uint8_t *q0 = cell->qualifier.data;
        if (cell->qualifier.len > 3) {
            int g = (q0[0] | 0x20) == 's'                            ? ROLLUP_SUM
                    : (q0[0] | 0x20) == 'c'                          ? ROLLUP_COUNT
                    : (q0[0] | 0x20) == 'm' && (q0[1] | 0x20) == 'i' ? ROLLUP_MIN
                    : (q0[0] | 0x20) == 'm'                          ? ROLLUP_MAX
                                                                     : -1;
            if (g < 0 || !c->need[g])
                continue;
        } else if (cell->qualifier.len == 3 && (q0[0] >= ROLLUP_NAGG || !c->need[q0[0]])) {
            continue;
        }
        enum rollup_agg a;
        int64_t ts;
        struct dpcodec_point p;
        int rc = rollup_cell_decode(src->iv, base, cell->qualifier.data, cell->qualifier.len,
                                    cell->value.data, cell->value.len, &a, &ts, &p, err);
        if (rc == CT_NOTFOUND)
            continue;
        if (rc != CT_OK)
            return rc;
        if (ts < src->from || ts >= src->to || !c->need[a])
            continue;
        int64_t ix = (ts - base) / iv_s;
        if (ix < 0 || ix >= RSLOTS) /* not an interval of this row's span */
            continue;
        struct rslot *sl = &slot[a][ix];
        if ((used[a] >> ix) & 1u && cell->ts_ms < sl->cell_ms)
            continue;
        used[a] |= 1u << ix;
        *sl = (struct rslot){.cell_ms = cell->ts_ms,
                             .ts = ts,
                             .v = p.type == DPCODEC_INT ? (double)p.i : p.f,
                             .cnt = p.type == DPCODEC_INT ? p.i : (int64_t)p.f};
    }
    for (int ix = 0; ix < RSLOTS; ix++) /* in time order: one bucket at a time */
        for (int a = 0; a < ROLLUP_NAGG; a++) {
            if (!((used[a] >> ix) & 1u))
                continue;
            if (!s && !(s = row_series(c, row, err)))
                return err->code;
            const struct rslot *sl = &slot[a][ix];
            struct racc *acc = acc_at(c, s, (sl->ts - c->lo_s) / c->iv_s, err);
            if (!acc)
                return err->code;
            fold(acc, (enum rollup_agg)a, sl->v, sl->cnt);
            nval++;
        }
    if (nval > 0 && over_bytes(c, atomic_fetch_add(&c->x->dps, nval) + nval, err))
        return err->code;
    return CT_OK;
}

/* The points of c->cols (a raw row of s) appended to s->pend. */
static int pend_row(struct rctx *c, struct rser *s, struct ct_err *err)
{
    struct dpcodec_cols *k = &c->cols;
    size_t n = k->n;
    if (s->npend + n > s->cappend) {
        size_t nc = s->cappend ? 2 * s->cappend : 512;
        while (nc < s->npend + n)
            nc *= 2;
        struct rpend *np = realloc(s->pend, nc * sizeof(*np));
        if (!np)
            return ct_err_set(err, CT_ENOMEM, "out of memory keeping %zu raw points", n);
        s->pend = np;
        s->cappend = nc;
    }
    if (k->ts_regular)
        dpcodec_cols_fill_ts(k);
    struct rpend *o = s->pend + s->npend;
    for (size_t i = 0; i < n; i++) {
        o[i].ts_ms = k->ts[i];
        o[i].v = k->kinds == DPCODEC_COLS_INTS    ? (double)(int64_t)k->val[i]
                 : k->kinds == DPCODEC_COLS_REALS ? ((const double *)(const void *)k->val)[i]
                                                  : dpcodec_cols_double(k, i);
    }
    s->npend += n;
    atomic_fetch_add(&c->x->dps, n);
    return CT_OK;
}

/* One raw point (of the raw source's hours) folded into its bucket, as raw_row() folds a row's
 * points one by one: NaN marks the bucket raw and is otherwise skipped. */
static int fold_point(struct rctx *c, struct rser *s, int64_t ts_ms, double v, struct ct_err *err)
{
    if (ts_ms < c->g_from_ms || ts_ms >= c->g_to_ms)
        return CT_OK;
    struct racc *a = acc_at(c, s, (ts_ms - c->g_lo_ms) / c->g_iv_ms, err);
    if (!a)
        return err->code;
    a->has |= RACC_RAW;
    if (isnan(v))
        return CT_OK;
    a->sum += v;
    if (!(a->has & (1u << ROLLUP_MIN)) || v < a->min)
        a->min = v;
    if (!(a->has & (1u << ROLLUP_MAX)) || v > a->max)
        a->max = v;
    a->count++;
    a->has |= (uint8_t)((1u << ROLLUP_SUM) | (1u << ROLLUP_COUNT) | (1u << ROLLUP_MIN) |
                        (1u << ROLLUP_MAX));
    return CT_OK;
}

/* The head's series of salt bucket b: each one's kept raw points and head points merged in time
 * order (the head's point wins a shared timestamp) and folded. */
static int fold_head(struct rctx *c, unsigned b, struct ct_err *err)
{
    struct xscan *x = c->x;
    for (size_t i = 0; i < x->nhead; i++) {
        const uint8_t *ts = x->head_ts[i];
        size_t tl = x->head_tl[i];
        unsigned hb = x->nbuckets > 1 ? rowkey_salt_bucket(x->l, ts, tl) : 0;
        if ((hb < x->nbuckets ? hb : 0) != b)
            continue;
        struct rser *s = rser_get(c, ts, tl, err);
        if (!s)
            return err->code;
        if (s->head < 0)
            continue; /* no head point in the raw source's hours */
        s->seen = true;
        struct head_iter it;
        struct dpcodec_point hp; /* the head's next point while more */
        qexec_head_iter(x, i, &it);
        bool more = head_iter_next(&it, &hp);
        int rc = CT_OK;
        for (size_t k = 0; k < s->npend && rc == CT_OK; k++) {
            const struct rpend *r = &s->pend[k];
            for (; more && hp.ts_ms < r->ts_ms && rc == CT_OK; more = head_iter_next(&it, &hp))
                rc = fold_point(c, s, hp.ts_ms, hp.type == DPCODEC_INT ? (double)hp.i : hp.f, err);
            if (more && hp.ts_ms == r->ts_ms)
                continue; /* the head's point is newer */
            if (rc == CT_OK)
                rc = fold_point(c, s, r->ts_ms, r->v, err);
        }
        for (; more && rc == CT_OK; more = head_iter_next(&it, &hp))
            rc = fold_point(c, s, hp.ts_ms, hp.type == DPCODEC_INT ? (double)hp.i : hp.f, err);
        if (rc != CT_OK)
            return rc;
        atomic_fetch_add(&x->dps, x->head_np[i]);
        free(s->pend);
        s->pend = NULL;
        s->npend = s->cappend = 0;
    }
    return CT_OK;
}

/* sum + v[0] + v[1] + ... + v[n-1], added one by one in that order (the same bits as the plain
 * loop), four a step: fewer loop tests on the folds' hottest line. */
static double sum_in_order(double sum, const double *v, size_t n)
{
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        sum += v[j];
        sum += v[j + 1];
        sum += v[j + 2];
        sum += v[j + 3];
    }
    for (; j < n; j++)
        sum += v[j];
    return sum;
}

/* sum_in_order() of integers, each converted to a double before its addition. */
static double sum_in_order_ints(double sum, const int64_t *v, size_t n)
{
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        sum += (double)v[j];
        sum += (double)v[j + 1];
        sum += (double)v[j + 2];
        sum += (double)v[j + 3];
    }
    for (; j < n; j++)
        sum += (double)v[j];
    return sum;
}

/* The points [i, e) of a raw row (k) folded into bucket a, one by one in time order (so sums
 * are added in the order the general path adds them: the same bits), only the aggregates
 * needed. */
static void fold_range(const struct rctx *c, struct racc *a, const struct dpcodec_cols *k, size_t i,
                       size_t e)
{
    a->has |= RACC_RAW;
    double sum = a->sum, mn = a->min, mx = a->max;
    int64_t cnt = 0;
    bool first_min = !(a->has & (1u << ROLLUP_MIN)), first_max = !(a->has & (1u << ROLLUP_MAX));
    bool need_sum = c->need[ROLLUP_SUM], need_min = c->need[ROLLUP_MIN],
         need_max = c->need[ROLLUP_MAX];
    if (k->kinds == DPCODEC_COLS_INTS) { /* integers: never NaN */
        const int64_t *v = (const int64_t *)(const void *)k->val;
        if (need_sum)
            sum = sum_in_order_ints(sum, v + i, e - i);
        if (need_min || need_max) {
            int64_t lo = v[i], hi = v[i];
            for (size_t j = i + 1; j < e; j++) {
                lo = v[j] < lo ? v[j] : lo;
                hi = v[j] > hi ? v[j] : hi;
            }
            mn = first_min || (double)lo < mn ? (double)lo : mn;
            mx = first_max || (double)hi > mx ? (double)hi : mx;
            first_min = first_max = false;
        }
        cnt = (int64_t)(e - i);
    } else if (k->kinds == DPCODEC_COLS_REALS && !need_min && !need_max) {
        /* sum and count only (sum, count, avg): the same additions in the same order */
        const double *dv = (const double *)(const void *)k->val;
        int64_t nn = 0;
        if (k->no_nan) /* no NaN to skip (a row of decimals) */
            sum = sum_in_order(sum, dv + i, e - i);
        for (size_t j = k->no_nan ? e : i; j < e; j++) {
            double v = dv[j];
            if (isnan(v)) {
                nn++;
                continue;
            }
            sum += v;
        }
        cnt = (int64_t)(e - i) - nn; /* min and max are not read: left as they were */
    } else if (k->kinds == DPCODEC_COLS_REALS && k->no_nan) {
        /* doubles, none NaN, min or max needed: the loop below without its tests; a strict
         * comparison keeps the first of equal values (+0 before -0) in the row, and the row's
         * against the bucket's, as point by point */
        const double *dv = (const double *)(const void *)k->val;
        if (need_sum)
            sum = sum_in_order(sum, dv + i, e - i);
        double lo = need_min ? qexec_min_no_nan(dv + i, e - i) : dv[i];
        double hi = need_max ? qexec_max_no_nan(dv + i, e - i) : dv[i];
        mn = first_min || lo < mn ? lo : mn;
        mx = first_max || hi > mx ? hi : mx;
        cnt = (int64_t)(e - i);
    } else {
        for (size_t j = i; j < e; j++) {
            double v = k->kinds == DPCODEC_COLS_REALS ? ((const double *)(const void *)k->val)[j]
                                                      : dpcodec_cols_double(k, j);
            if (isnan(v))
                continue;
            sum += v;
            if (first_min || v < mn)
                mn = v;
            if (first_max || v > mx)
                mx = v;
            first_min = first_max = false;
            cnt++;
        }
    }
    if (cnt) {
        a->sum = sum;
        a->min = mn;
        a->max = mx;
        a->count += cnt;
        a->has |= (uint8_t)((1u << ROLLUP_SUM) | (1u << ROLLUP_COUNT) | (1u << ROLLUP_MIN) |
                            (1u << ROLLUP_MAX));
    }
}

/* A raw row folded into its buckets' accumulators (fold_range); its annotations kept for the
 * series. Whole-hour buckets: the row lies in one bucket (lo is aligned to the interval). Span
 * buckets: the row's points are cut at the bucket ends; the raw scan is forward, so a series'
 * rows come oldest first and a bucket spanning rows still adds its points in time order. */
static int raw_row(struct rctx *c, const struct wc_row *row, int64_t base, struct ct_err *err)
{
    const struct rsrc *src = &c->src;
    if (base < src->from || base >= src->to)
        return CT_OK;
    int rc = dpcodec_row_decode_cols(base, row->cells, row->ncells, &c->cols, NULL, err);
    if (rc != CT_OK)
        return rc;
    bool has_ann = false;
    for (size_t i = 0; i < row->ncells && !has_ann; i++)
        has_ann =
            dpcodec_is_annotation_q(row->cells[i].qualifier.data, row->cells[i].qualifier.len);
    size_t n = c->cols.n;
    if (!n && !has_ann)
        return CT_OK;
    struct rser *s = row_series(c, row, err);
    if (!s)
        return err->code;
    s->seen = true;
    for (size_t i = 0; i < row->ncells && has_ann; i++) {
        const struct wc_cell *cell = &row->cells[i];
        int64_t st;
        struct ct_err e2 = {0};
        if (!dpcodec_is_annotation_q(cell->qualifier.data, cell->qualifier.len) ||
            dpcodec_annotation_time(base, cell->qualifier.data, cell->qualifier.len, &st, &e2) !=
                CT_OK ||
            st < c->ann_lo_ms || st >= c->ann_hi_ms)
            continue;
        if (qexec_xann_append(&s->anns, &s->nanns, st, cell->value.data, cell->value.len) != CT_OK)
            return ct_err_set(err, CT_ENOMEM, "out of memory keeping an annotation");
    }
    if (!n)
        return CT_OK;
    c->dps += n;
    if (s->head >= 0 && base >= s->head_from_s) { /* merged with the head's points later */
        /* the limits checked with its points counted, then pend_row counts them */
        if ((rc = count_flush(c, err)) != CT_OK)
            return rc;
        atomic_fetch_sub(&c->x->dps, n);
        return pend_row(c, s, err);
    }
    if (c->dps >= RCTX_DPS_BATCH && (rc = count_flush(c, err)) != CT_OK)
        return rc;
    struct dpcodec_cols *k = &c->cols;
    if (!c->span) {
        struct racc *a = acc_at(c, s, (base - c->lo_s) / c->iv_s, err);
        if (!a)
            return err->code;
        fold_range(c, a, k, 0, n);
        return CT_OK;
    }
    if (k->ts_regular) {
        /* the fast path of regular rows: a row wholly inside the grid and one bucket (every
         * row of 0all, most of long spans) is folded whole, its times never written */
        int64_t first = k->ts_first, last = k->ts_first + (int64_t)(n - 1) * k->ts_step;
        if (k->ts_step > 0 && first >= c->g_from_ms && last < c->g_to_ms &&
            (first - c->g_lo_ms) / c->g_iv_ms == (last - c->g_lo_ms) / c->g_iv_ms) {
            struct racc *a = acc_at(c, s, (first - c->g_lo_ms) / c->g_iv_ms, err);
            if (!a)
                return err->code;
            fold_range(c, a, k, 0, n);
            return CT_OK;
        }
        dpcodec_cols_fill_ts(k);
    }
    size_t i = 0;
    while (i < n && k->ts[i] < c->g_from_ms)
        i++;
    while (i < n && k->ts[i] < c->g_to_ms) {
        int64_t ix = (k->ts[i] - c->g_lo_ms) / c->g_iv_ms;
        int64_t bend = c->g_lo_ms + (ix + 1) * c->g_iv_ms;
        size_t e = i + 1;
        while (e < n && k->ts[e] < bend && k->ts[e] < c->g_to_ms)
            e++;
        struct racc *a = acc_at(c, s, ix, err);
        if (!a)
            return err->code;
        fold_range(c, a, k, i, e);
        i = e;
    }
    return CT_OK;
}

/* The series' points into a new xser in set (its current bucket finished first). */
static int emit_series(struct rctx *c, struct rser *s, struct xset *set, struct ct_err *err)
{
    int frc = acc_flush(c, s, err);
    if (frc != CT_OK)
        return frc;
    size_t n = s->npts;
    struct qagg_point *pts = s->pts ? s->pts : malloc(sizeof(*pts));
    if (!pts)
        return ct_err_set(err, CT_ENOMEM, "out of memory for rollup points");
    s->pts = NULL; /* moved: freed below or owned by the xser */
    s->npts = s->cappts = 0;
    if (!n && !s->nanns && !(c->span && s->seen)) {
        free(pts);
        return CT_OK;
    }
    if (set->n == set->cap) {
        size_t nc = set->cap ? 2 * set->cap : 64;
        struct xser **ns = realloc(set->ser, nc * sizeof(*ns));
        if (!ns) {
            free(pts);
            return ct_err_set(err, CT_ENOMEM, "out of memory for rollup series");
        }
        set->ser = ns;
        set->cap = nc;
    }
    struct xser *xs = calloc(1, sizeof(*xs));
    if (!xs || !(xs->tsuid = malloc(s->tsuid_len))) {
        free(xs);
        free(pts);
        return ct_err_set(err, CT_ENOMEM, "out of memory for rollup series");
    }
    memcpy(xs->tsuid, s->tsuid, s->tsuid_len);
    xs->tsuid_len = s->tsuid_len;
    xs->pts_base = pts;
    xs->pts_top = n;
    xs->pts.p = pts;
    xs->pts.n = n;
    xs->pts.cap = n;
    xs->anns = s->anns; /* moved */
    xs->nanns = s->nanns;
    s->anns = NULL;
    s->nanns = 0;
    set->ser[set->n++] = xs;
    return CT_OK;
}

/* The plan shared by the threads: one piece of work per salt bucket. */
struct rplan {
    struct xscan *x;
    struct rollup *r;
    enum qagg_stream kind;
    int64_t lo, hi, cut1, cut2, iv_s;
    size_t nb;
    int64_t g_lo_ms, g_iv_ms, g_from_ms, g_to_ms, ann_lo_ms, ann_hi_ms; /* as struct rctx */
    bool span;
    bool need[ROLLUP_NAGG];
    struct hashset hix; /* the head's series */
    unsigned nslices;   /* x->nslices: > 1 only for raw rows only, whole-hour buckets, no head */
    int64_t slice_s;    /* a slice's seconds (whole buckets), newest slice first from hi */
    atomic_uint next;
    struct qpool_job job;
};

static int run_bucket(struct rplan *p, unsigned b, unsigned slice, struct xset *set,
                      struct ct_err *err)
{
    struct rctx c;
    memset(&c, 0, sizeof(c));
    c.x = p->x;
    c.iv_s = p->iv_s;
    c.lo_s = p->lo;
    c.nb = p->nb;
    memcpy(c.need, p->need, sizeof(c.need));
    c.hix = p->x->nhead ? &p->hix : NULL;
    c.raw_from_s = p->cut2;
    c.raw_to_s = p->hi;
    c.g_lo_ms = p->g_lo_ms;
    c.g_iv_ms = p->g_iv_ms;
    c.g_from_ms = p->g_from_ms;
    c.g_to_ms = p->g_to_ms;
    c.ann_lo_ms = p->ann_lo_ms;
    c.ann_hi_ms = p->ann_hi_ms;
    c.span = p->span;
    c.kind = p->kind;
    dpcodec_cols_init(&c.cols);
    /* rows of regular timestamps leave ts unwritten (raw_row() and pend_row() fill it when they
     * need it) */
    c.cols.lazy_ts = true;
    int rc = CT_OK;
    if (p->cut1 > p->lo) {
        c.src = (struct rsrc){ROLLUP_1D, p->lo, p->cut1};
        rc = scan_table(&c, b, rollup_table(p->r, ROLLUP_1D), rollup_row_base(ROLLUP_1D, p->lo),
                        rollup_row_base(ROLLUP_1D, p->cut1 - 1), false, rollup_row, err);
    }
    if (rc == CT_OK && p->cut2 > p->cut1) {
        c.src = (struct rsrc){ROLLUP_1H, p->cut1, p->cut2};
        rc = scan_table(&c, b, rollup_table(p->r, ROLLUP_1H), rollup_row_base(ROLLUP_1H, p->cut1),
                        rollup_row_base(ROLLUP_1H, p->cut2 - 1), false, rollup_row, err);
    }
    int64_t raw_lo = p->cut2, raw_hi = p->hi;
    if (p->nslices > 1) { /* raw rows only: this slice's whole buckets (slice 0 the newest) */
        raw_hi = p->hi - (int64_t)slice * p->slice_s;
        raw_lo = raw_hi - p->slice_s;
        if (raw_lo < p->cut2)
            raw_lo = p->cut2;
        c.raw_from_s = raw_lo;
        c.raw_to_s = raw_hi;
    }
    if (rc == CT_OK && raw_hi > raw_lo) {
        c.src = (struct rsrc){ROLLUP_1H, raw_lo, raw_hi};
        rc = scan_table(&c, b, tsdb_data_table(p->x->t), raw_lo, raw_hi - 3600, true, raw_row, err);
    }
    if (rc == CT_OK && c.hix)
        rc = fold_head(&c, b, err);
    for (size_t i = 0; i < c.n && rc == CT_OK; i++)
        rc = emit_series(&c, c.ser[i], set, err);
    for (size_t i = 0; i < c.n; i++) {
        for (size_t a = 0; a < c.ser[i]->nanns; a++)
            free(c.ser[i]->anns[a].json);
        free(c.ser[i]->anns);
        free(c.ser[i]->pend);
        free(c.ser[i]->pts);
        free(c.ser[i]);
    }
    dpcodec_cols_free(&c.cols);
    free(c.ser);
    hashset_destroy(&c.ht);
    return rc;
}

static void rplan_thread(void *arg)
{
    struct rplan *p = arg;
    struct xscan *x = p->x;
    for (;;) {
        unsigned i = atomic_fetch_add(&p->next, 1);
        if (i >= x->nbuckets * p->nslices || atomic_load(&x->stop))
            break;
        unsigned b = i / p->nslices, slice = i % p->nslices;
        /* the bucket's first set (the one run_sub keeps), or its slice's */
        unsigned w = b * x->nslices + slice;
        /* raw rows only: no series of the filter has a row there (rollup tables may hold
         * series the index does not list: /api/rollup writes them) */
        if (p->cut2 == p->lo && !x->nhead && !qexec_bucket_wanted(x, b))
            continue;
        x->rcs[w] = run_bucket(p, b, slice, &x->sets[w], &x->errs[w]);
        if (x->rcs[w] != CT_OK)
            atomic_store(&x->stop, 1);
    }
}

int qrollup_scan(struct xscan *x, const struct qspec_sub *sub, const struct qagg_window *w,
                 struct rollup *r, enum rollup_iv iv, struct qpool *pool, unsigned threads,
                 struct ct_err *err)
{
    struct rplan p;
    memset(&p, 0, sizeof(p));
    p.x = x;
    p.r = r;
    const struct qagg_ds *ds = &sub->ds;
    p.span = ds->all || ds->interval_ms % HOUR_MS;
    if (p.span) { /* raw rows of the whole window; buckets as ds_plain makes them */
        p.lo = x->win_start_s;
        p.hi = x->win_end_s;
        p.iv_s = HOUR_MS / 1000;
        if (ds->all) { /* one bucket: the points in [start, end), stamped at the start */
            p.g_lo_ms = p.g_from_ms = w->q_start_ms;
            p.g_to_ms = w->q_end_ms;
            p.g_iv_ms = p.g_to_ms > p.g_lo_ms ? p.g_to_ms - p.g_lo_ms : 1;
        } else { /* from the Downsampler's first bucket on */
            int64_t div = ds->interval_ms, seek = w->win_start_ms + div - 1;
            p.g_lo_ms = p.g_from_ms = seek - seek % div;
            p.g_to_ms = w->win_end_ms;
            p.g_iv_ms = div;
        }
        p.nb = p.g_to_ms > p.g_from_ms ? (size_t)((p.g_to_ms - 1 - p.g_lo_ms) / p.g_iv_ms + 1) : 0;
        p.ann_lo_ms = p.lo * 1000;
        p.ann_hi_ms = p.hi * 1000;
    } else {
        p.iv_s = ds->interval_ms / 1000;
        /* the window's whole buckets (qagg_window_compute aligns it to the interval, then
         * hours) */
        p.lo = x->win_start_s + (p.iv_s - x->win_start_s % p.iv_s) % p.iv_s;
        p.hi = x->win_end_s - x->win_end_s % p.iv_s;
        if (p.hi <= p.lo)
            return CT_OK;
        p.nb = (size_t)((p.hi - p.lo) / p.iv_s);
        p.g_lo_ms = p.lo * 1000;
        p.g_iv_ms = p.iv_s * 1000;
        p.g_to_ms = p.ann_hi_ms = p.hi * 1000;
        p.ann_lo_ms = p.lo * 1000;
    }
    p.kind = qagg_stream_kind(sub->ds.fn);
    p.need[ROLLUP_SUM] = p.kind == QAGG_STREAM_SUM || p.kind == QAGG_STREAM_AVG;
    p.need[ROLLUP_COUNT] = p.kind == QAGG_STREAM_COUNT || p.kind == QAGG_STREAM_AVG;
    p.need[ROLLUP_MIN] = p.kind == QAGG_STREAM_MIN;
    p.need[ROLLUP_MAX] = p.kind == QAGG_STREAM_MAX;
    p.cut1 = p.lo;
    p.cut2 = p.hi;
    if (!r || sub->rollup_usage == QSPEC_ROLLUP_RAW || p.span) { /* raw rows only */
        p.cut2 = p.lo;
    } else if (sub->rollup_usage == QSPEC_ROLLUP_NOFALLBACK) {
        p.cut1 = iv == ROLLUP_1D ? p.hi : p.lo;
    } else {
        int64_t hp = 0, dp = 0;
        int rc;
        if ((rc = rollup_progress_get(r, ROLLUP_1H, &hp, err)) != CT_OK ||
            (rc = rollup_progress_get(r, ROLLUP_1D, &dp, err)) != CT_OK)
            return rc;
        if (iv == ROLLUP_1D)
            p.cut1 = dp < p.lo ? p.lo : dp > p.hi ? p.hi : dp;
        p.cut2 = hp < p.cut1 ? p.cut1 : hp > p.hi ? p.hi : hp;
    }
    if (!p.span)
        p.g_from_ms = p.cut2 * 1000; /* raw points are folded from the raw source's hours on */
    for (size_t i = 0; i < x->nhead; i++) { /* the head's series, read by every thread */
        size_t slot = 0;
        uint64_t h = hash_bytes(x->head_ts[i], x->head_tl[i], 0);
        int rc = hashset_reserve(&p.hix, 256, head_hash_of, x, err);
        if (rc != CT_OK) {
            hashset_destroy(&p.hix);
            return rc;
        }
        if (hashset_find(&p.hix, h, head_eq, x, x->head_ts[i], x->head_tl[i], &slot) < 0)
            hashset_insert_at(&p.hix, slot, i);
    }
    p.nslices = 1;
    if (x->nslices > 1 && !p.span && p.cut2 == p.lo && x->nhead == 0) {
        /* raw rows only (qrollup_slices): slices of whole buckets, newest first from hi */
        int64_t nbk = (p.hi - p.lo) / p.iv_s, per = (nbk + x->nslices - 1) / x->nslices;
        p.slice_s = per * p.iv_s;
        p.nslices = x->nslices;
    }
    if (threads > x->nbuckets * p.nslices)
        threads = x->nbuckets * p.nslices;
    p.job.fn = rplan_thread;
    p.job.arg = &p;
    qpool_run(pool, &p.job, threads ? threads - 1 : 0);
    hashset_destroy(&p.hix);
    return CT_OK;
}
