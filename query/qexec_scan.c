/* qexec_scan.c - the scan of one sub-query (steps 3 and 4 of the plan at the top of qexec.c):
 * the series sets a scan fills, one reversed scan per salt bucket or time slice, each row's cells
 * decoded into reused columns and put below the series' newer points (or downsampled right
 * there), and the time slices of a bucket joined back (qexec_series_finish). The hot path of
 * a query: everything a row goes through is static here.
 * Invariants: (2) and (3) of qexec.c. Threading: the scan threads share one struct xscan; each
 * fills its own struct xset. */
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
#include "schema/dpcodec.h"
#include "schema/head.h"
#include "schema/histogram.h"
#include "schema/rowkey.h"
#include "schema/uid.h"
#include "storage/clock.h"
#include "storage/hash.h"

/* ---- series ---------------------------------------------------------------------------- */

static void xser_free(struct xser *s)
{
    if (!s)
        return;
    xser_free(s->older);
    free(s->tsuid);
    if (!s->pts_borrowed && !s->pts_slab)
        free(s->pts_base);
    for (size_t i = 0; i < s->nanns; i++)
        free(s->anns[i].json);
    free(s->anns);
    for (size_t i = 0; i < s->nhists; i++)
        free(s->hists[i].v);
    free(s->hists);
    free(s->row_base);
    if (s->tags_block) { /* one block; names borrowed from xsub.names */
        free(s->tagk_id);
    } else {
        for (size_t i = 0; i < s->ntags; i++) {
            if (s->tagk)
                free(s->tagk[i]);
            if (s->tagv)
                free(s->tagv[i]);
        }
        free(s->tagk);
        free(s->tagv);
        free(s->tagk_id);
        free(s->tagv_id);
    }
    free(s->gkey);
    free(s);
}

/* ---- point slabs ------------------------------------------------------------------------
 * A series' buffer of at most QEXEC_SLAB_SMALL points is cut from a slab of its set instead of
 * being malloc'd alone. Slabs are kept in a small process-wide cache when the set is cleared and
 * taken from it by the next scan: the pages stay mapped, where buffers of a few tens of KB freed
 * by the scan threads' arenas were given back to the system (heap trimming) and faulted in
 * again by every query (a third of a salted whole-metric query's time). The cache holds at most
 * QEXEC_SLAB_CACHE slabs (QEXEC_SLAB_CACHE x QEXEC_SLAB_POINTS x 24 bytes = 12 MiB idle). */
#define QEXEC_SLAB_POINTS 16384 /* 384 KiB */
#define QEXEC_SLAB_SMALL  (QEXEC_SLAB_POINTS / 4)
#define QEXEC_SLAB_CACHE  32

static pthread_mutex_t slab_mu = PTHREAD_MUTEX_INITIALIZER;
static struct qagg_point *slab_cache[QEXEC_SLAB_CACHE];
static unsigned slab_ncache;

static struct qagg_point *slab_take(void)
{
    struct qagg_point *p = NULL;
    pthread_mutex_lock(&slab_mu);
    if (slab_ncache)
        p = slab_cache[--slab_ncache];
    pthread_mutex_unlock(&slab_mu);
    return p ? p : malloc(QEXEC_SLAB_POINTS * sizeof(*p));
}

static void slab_give(struct qagg_point *p)
{
    pthread_mutex_lock(&slab_mu);
    if (slab_ncache < QEXEC_SLAB_CACHE) {
        slab_cache[slab_ncache++] = p;
        p = NULL;
    }
    pthread_mutex_unlock(&slab_mu);
    free(p);
}

/* n <= QEXEC_SLAB_SMALL points from x's slabs (NULL: out of memory). */
static struct qagg_point *xset_slab_points(struct xset *x, size_t n)
{
    if (!x->nslabs || x->slab_used + n > QEXEC_SLAB_POINTS) {
        struct qagg_point **ns = realloc(x->slabs, (x->nslabs + 1) * sizeof(*ns));
        if (!ns)
            return NULL;
        x->slabs = ns;
        if (!(ns[x->nslabs] = slab_take()))
            return NULL;
        x->nslabs++;
        x->slab_used = 0;
    }
    struct qagg_point *p = x->slabs[x->nslabs - 1] + x->slab_used;
    x->slab_used += n;
    return p;
}

void qexec_xset_clear(struct xset *x)
{
    for (size_t i = 0; i < x->n; i++)
        xser_free(x->ser[i]);
    for (size_t i = 0; i < x->nslabs; i++)
        slab_give(x->slabs[i]);
    free(x->slabs);
    free(x->ser);
    hashset_destroy(&x->ht);
    memset(x, 0, sizeof(*x));
}

static uint64_t xset_hash_of(void *arg, size_t i)
{
    const struct xset *x = arg;
    return hash_bytes(x->ser[i]->tsuid, x->ser[i]->tsuid_len, 0);
}

static bool xset_eq(void *arg, size_t i, const void *key, size_t len)
{
    const struct xser *s = ((const struct xset *)arg)->ser[i];
    return s->tsuid_len == len && !memcmp(s->tsuid, key, len);
}

static struct xser *xset_get(struct xset *x, const uint8_t *tsuid, size_t len)
{
    struct ct_err err;
    if (hashset_reserve(&x->ht, 256, xset_hash_of, x, &err) != CT_OK)
        return NULL;
    size_t h = 0;
    long i = hashset_find(&x->ht, hash_bytes(tsuid, len, 0), xset_eq, x, tsuid, len, &h);
    if (i >= 0)
        return x->ser[i];
    if (x->n == x->cap) {
        size_t nc = x->cap ? x->cap * 2 : 64;
        struct xser **ns = realloc(x->ser, nc * sizeof(*ns));
        if (!ns)
            return NULL;
        x->ser = ns;
        x->cap = nc;
    }
    struct xser *s = calloc(1, sizeof(*s));
    if (!s || !(s->tsuid = malloc(len))) {
        free(s);
        return NULL;
    }
    memcpy(s->tsuid, tsuid, len);
    s->tsuid_len = len;
    s->home = x;
    hashset_insert_at(&x->ht, h, x->n);
    x->ser[x->n++] = s;
    return s;
}

/* Room for `most` points of a row below the series' points, at the returned pointer (NULL:
 * out of memory); series_put() then places the m <= most written there. hint: the points to
 * make room for at the first row. */
static struct qagg_point *series_room(struct xser *s, size_t most, size_t hint)
{
    size_t lo = s->pts_top - s->pts.n;
    if (lo < most) { /* grow; the points move to the top of the new allocation */
        size_t nc = s->pts_top ? 2 * s->pts_top : hint;
        if (nc < s->pts.n + most)
            nc = s->pts.n + most;
        bool slab = nc <= QEXEC_SLAB_SMALL;
        struct qagg_point *nb = slab ? xset_slab_points(s->home, nc) : malloc(nc * sizeof(*nb));
        if (!nb)
            return NULL;
        if (s->pts.n)
            memcpy(nb + nc - s->pts.n, s->pts.p, s->pts.n * sizeof(*nb));
        if (!s->pts_slab)
            free(s->pts_base);
        s->pts_slab = slab;
        s->pts_base = nb;
        s->pts_top = nc;
        s->pts.p = nb + nc - s->pts.n;
        lo = nc - s->pts.n;
    }
    return s->pts_base + lo - most;
}

/* Puts the m points written at series_room(s, most)'s pointer before the series' points. */
static void series_put(struct xser *s, size_t most, size_t m)
{
    struct qagg_point *at = s->pts.p - most;
    if (m < most) /* a row with empty buckets: its points end where the newer ones start */
        memmove(at + (most - m), at, m * sizeof(*at));
    s->pts.p -= m;
    s->pts.n += m;
    s->pts.cap = s->pts.n;
}

/* Points qexec_series_finish() copies for s (0: already in order, one time slice). */
size_t qexec_series_finish_size(const struct xser *s)
{
    if (!s->older)
        return 0;
    size_t total = 0;
    for (const struct xser *e = s; e; e = e->older)
        total += e->pts.n;
    return total;
}

/* Puts the points of a series read in several time slices (s, then the older ones chained on
 * s->older, each already ascending) in ascending order, in one copy to *dst (advanced past
 * them). */
int qexec_series_finish(struct xser *s, struct qagg_point **dst, struct ct_err *err)
{
    if (!s->older)
        return CT_OK;
    size_t total = 0, nparts = 0;
    for (const struct xser *e = s; e; e = e->older) {
        total += e->pts.n;
        nparts++;
    }
    struct qagg_point *np = *dst;
    const struct xser **parts = malloc(nparts * sizeof(*parts));
    if (!parts)
        return ct_err_set(err, CT_ENOMEM, "out of memory ordering %zu points", total);
    *dst += total;
    size_t k = 0;
    for (const struct xser *e = s; e; e = e->older)
        parts[k++] = e;
    size_t o = 0;
    while (k-- > 0) { /* the oldest slice first */
        const struct xser *e = parts[k];
        if (e->pts.n)
            memcpy(np + o, e->pts.p, e->pts.n * sizeof(*np));
        o += e->pts.n;
    }
    free(parts);
    xser_free(s->older);
    s->older = s->oldest = NULL;
    if (!s->pts_borrowed && !s->pts_slab)
        free(s->pts_base);
    s->pts_base = NULL;
    s->pts_slab = false;
    s->pts_top = 0;
    s->pts.p = np;
    s->pts.n = s->pts.cap = total;
    s->pts_borrowed = true;
    return CT_OK;
}

/* ---- scanning -------------------------------------------------------------------------- */

/* Points a scan counts by itself before adding them to the query's total (xscan.dps) and
 * checking the datapoint limit: one shared addition per few dozen rows, not per row. */
#define QEXEC_DPS_BATCH 8192

/* Adds a scan's counts to the query's and checks the datapoint limit (exceeded: CT_ELIMIT, the
 * same whenever it is found, since the total only grows). */
static int xscan_count(struct xscan *x, uint64_t *rows, uint64_t *dps, struct ct_err *err)
{
    atomic_fetch_add(&x->rows, *rows);
    uint64_t total = atomic_fetch_add(&x->dps, *dps) + *dps;
    *rows = *dps = 0;
    if (x->max_dps && total > x->max_dps)
        return ct_err_set(err, CT_ELIMIT,
                          "Sorry, you have attempted to fetch more than our limit of %llu "
                          "data points. Please try filtering using more tags or decrease "
                          "your time range.",
                          (unsigned long long)x->max_dps);
    if (x->max_bytes && total > x->max_bytes / QEXEC_POINT_BYTES)
        return ct_err_set(err, CT_ELIMIT,
                          "Sorry, you have attempted to fetch more than our maximum amount of "
                          "%lluMB from storage. Please try filtering using more tags or decrease "
                          "your time range.",
                          (unsigned long long)(x->max_bytes / 1024 / 1024));
    return CT_OK;
}

int qexec_tsuid_cmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    if (c)
        return c;
    return al < bl ? -1 : al > bl ? 1 : 0;
}

static bool tsuid_wanted(const struct xscan *x, const uint8_t *ts, size_t len)
{
    size_t lo = 0, hi = x->ntsuids;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = qexec_tsuid_cmp(x->tsuids[mid], x->tsuid_lens[mid], ts, len);
        if (c == 0)
            return true;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

static enum wc_row_decision xscan_row_filter(void *arg, const uint8_t *row, size_t len)
{
    const struct xscan *x = arg;
    if (x->rf && !rowkey_filter_match(x->rf, row, len))
        return WC_ROW_SKIP;
    if (x->ntsuids && !x->exact) { /* exact ranges hold only the wanted series */
        uint8_t ts[ROWKEY_MAX_TSUID];
        size_t tl = rowkey_tsuid_of(x->l, row, len, ts, sizeof(ts));
        if (!tl || !tsuid_wanted(x, ts, tl))
            return WC_ROW_SKIP;
    }
    return WC_ROW_INCLUDE;
}

void qexec_rf_memo_init(struct qexec_rf_memo *m, const struct rowkey_layout *l, wc_row_filter_fn fn,
                        void *arg)
{
    m->fn = fn;
    m->arg = arg;
    m->mstart = l->salt_width;
    m->mlen = l->metric_width;
    m->tstart = l->salt_width + l->metric_width + ROWKEY_TIMESTAMP_BYTES;
    m->looked = m->hits = 0;
    m->off = false;
    for (size_t i = 0; i < QEXEC_RF_MEMO_SETS; i++) {
        m->set[i].older = 0;
        m->set[i].way[0].len = m->set[i].way[1].len = 0;
    }
}

static inline uint64_t memo_load(const uint8_t *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

/* Whether the n bytes at a and b are equal (inline: the keys are a few tens of bytes). */
static inline bool memo_eq(const uint8_t *a, const uint8_t *b, size_t n)
{
    if (n < 8) {
        for (size_t i = 0; i < n; i++)
            if (a[i] != b[i])
                return false;
        return true;
    }
    uint64_t d = 0;
    for (size_t i = 0; i + 8 < n; i += 8)
        d |= memo_load(a + i) ^ memo_load(b + i);
    return (d | (memo_load(a + n - 8) ^ memo_load(b + n - 8))) == 0; /* the last 8 overlap */
}

size_t qexec_rf_memo_set_of(const struct qexec_rf_memo *m, const uint8_t *row, size_t len)
{
    const uint8_t *tags = row + m->tstart;
    size_t tl = len - m->tstart;
    /* a multiplicative hash of the tag bytes, 8 at a time (the last 8 overlapping the word
     * before when the length is not a multiple of 8) */
    uint64_t h = tl;
    if (tl >= 8) {
        for (size_t i = 0; i + 8 < tl; i += 8)
            h = (h ^ memo_load(tags + i)) * 0x9E3779B97F4A7C15ull;
        h ^= memo_load(tags + tl - 8);
    } else {
        for (size_t i = 0; i < tl; i++)
            h = h << 8 | tags[i];
    }
    h *= 0xD6E8FEB86659FD93ull;
    return (size_t)(h >> 57) % QEXEC_RF_MEMO_SETS;
}

enum wc_row_decision qexec_rf_memo_filter(void *arg, const uint8_t *row, size_t len)
{
    struct qexec_rf_memo *m = arg;
    if (m->off || len < m->tstart || len - m->tstart + m->mlen > QEXEC_RF_MEMO_KEY)
        return m->fn(m->arg, row, len);
    if (m->looked < QEXEC_RF_MEMO_TRIAL && ++m->looked == QEXEC_RF_MEMO_TRIAL &&
        m->hits < QEXEC_RF_MEMO_TRIAL / 2)
        m->off = true; /* too many series for the ways: judged row by row from now */
    const uint8_t *tags = row + m->tstart;
    size_t tl = len - m->tstart, kl = m->mlen + tl;
    size_t at = qexec_rf_memo_set_of(m, row, len);
    const uint8_t *metric = row + m->mstart;
    for (unsigned w = 0; w < 2; w++) {
        const uint8_t *k = m->set[at].way[w].key;
        if (m->set[at].way[w].len == kl && memo_eq(k + m->mlen, tags, tl) &&
            memo_eq(k, metric, m->mlen)) {
            m->hits += m->looked < QEXEC_RF_MEMO_TRIAL;
            return (enum wc_row_decision)m->set[at].way[w].decision;
        }
    }
    enum wc_row_decision d = m->fn(m->arg, row, len);
    unsigned w = m->set[at].older;
    m->set[at].older = (uint8_t)(w ^ 1);
    uint8_t *k = m->set[at].way[w].key;
    memcpy(k, metric, m->mlen);
    memcpy(k + m->mlen, tags, tl);
    m->set[at].way[w].len = (uint8_t)kl;
    m->set[at].way[w].decision = (uint8_t)d;
    return d;
}

static int add_hist(struct xser *s, int64_t ts_ms, const uint8_t *v, size_t len)
{
    struct xhist *nh = realloc(s->hists, (s->nhists + 1) * sizeof(*nh));
    if (!nh)
        return -1;
    s->hists = nh;
    uint8_t *c = malloc(len ? len : 1);
    if (!c)
        return -1;
    memcpy(c, v, len);
    s->hists[s->nhists++] = (struct xhist){ts_ms, c, len};
    return 0;
}

/* Appends the buckets of one row's points (ascending) to out, as the plain Downsampler makes
 * them (qagg_downsample without fill): each bucket's values in time order through the
 * downsampling function. Only used when the interval divides an hour, so that no bucket spans
 * two rows and the row's buckets are the series' buckets. vals and scratch hold c->n doubles. */
/* One bucket of doubles through a single-pass function, NaN skipped: the loops of
 * row_downsample() for values that may be NaN (the same additions and comparisons in the same
 * order, so the same bits); with no_nan (the row has none) without the tests. */
static double bucket_reals(enum qagg_stream kind, const double *v, size_t n, bool no_nan)
{
    double r = 0;
    size_t k = 0;
    if (no_nan && n > 0) { /* no NaN to skip (dpcodec_cols.no_nan): the same loops untested */
        switch (kind) {
        case QAGG_STREAM_SUM:
        case QAGG_STREAM_AVG:
            for (size_t j = 0; j < n; j++)
                r += v[j];
            return kind == QAGG_STREAM_AVG ? r / (double)n : r;
        case QAGG_STREAM_MIN:
            return qexec_min_no_nan(v, n);
        case QAGG_STREAM_MAX:
            return qexec_max_no_nan(v, n);
        default: /* count */
            return (double)n;
        }
    }
    switch (kind) {
    case QAGG_STREAM_SUM:
    case QAGG_STREAM_AVG:
        for (size_t j = 0; j < n; j++)
            if (!isnan(v[j])) {
                r += v[j];
                k++;
            }
        return k == 0 ? NAN : kind == QAGG_STREAM_AVG ? r / (double)k : r;
    case QAGG_STREAM_MIN:
        for (size_t j = 0; j < n; j++)
            if (!isnan(v[j]) && (k++ == 0 || v[j] < r))
                r = v[j];
        return k == 0 ? NAN : r;
    case QAGG_STREAM_MAX:
        for (size_t j = 0; j < n; j++)
            if (!isnan(v[j]) && (k++ == 0 || v[j] > r))
                r = v[j];
        return k == 0 ? NAN : r;
    default: /* count */
        for (size_t j = 0; j < n; j++)
            k += !isnan(v[j]);
        return k == 0 ? NAN : (double)k;
    }
}

/* For a regular row (ts_first + k x ts_step): the first point at or after the seek (*i), the
 * start of its bucket (*bstart) and the most buckets the row's points from there can fill
 * (*most); false when no point is left. Shared by row_downsample_regular and row_pick_regular. */
static bool regular_span(const struct xscan *x, const struct dpcodec_cols *c, size_t *i,
                         int64_t *bstart, size_t *most)
{
    int64_t iv = x->ds->interval_ms, t0 = c->ts_first, st = c->ts_step;
    *i = 0;
    if (x->ds_seek_ms > t0)
        *i = (size_t)((x->ds_seek_ms - t0 + st - 1) / st);
    if (*i >= c->n)
        return false;
    int64_t ti = t0 + (int64_t)*i * st, tlast = t0 + (int64_t)(c->n - 1) * st;
    *bstart = ti - ti % iv;
    *most = (size_t)((tlast - *bstart) / iv) + 1;
    return true;
}

/* row_downsample() for a row of regular timestamps left unwritten (dpcodec_cols.ts_regular)
 * whose step divides the interval, and a single-pass function of integers or doubles (NaN
 * skipped: bucket_reals()): every bucket after the first holds exactly interval / step points,
 * so its points are counted, not compared, and no timestamp column is written. The same
 * buckets and bits as the loops of row_downsample(). */
static int row_downsample_regular(const struct xscan *x, const struct dpcodec_cols *c,
                                  struct xser *s, size_t hint, struct ct_err *err)
{
    int64_t iv = x->ds->interval_ms, t0 = c->ts_first, st = c->ts_step, bstart;
    size_t n = c->n, i, most;
    if (!regular_span(x, c, &i, &bstart, &most))
        return CT_OK;
    struct qagg_buf ob = {series_room(s, most, hint), 0, most}, *out = &ob;
    if (!ob.p)
        return ct_err_set(err, CT_ENOMEM, "out of memory growing a series by %zu points", most);
    enum qagg_stream kind = x->ds_stream;
    const int64_t *v = (const int64_t *)(const void *)c->val;
    const double *dv = (const double *)(const void *)c->val; /* DPCODEC_COLS_REALS */
    bool reals = c->kinds == DPCODEC_COLS_REALS;
    size_t k = (size_t)(iv / st);
    /* the first bucket ends at the first point at or after bstart + iv */
    size_t e = (size_t)((bstart + iv - t0 + st - 1) / st);
    for (; i < n; bstart += iv, e = i + k) {
        if (reals) { /* row_downsample()'s NaN-skipping loops over [i, e) */
            if (e > n)
                e = n;
            struct qagg_point *pt = &out->p[out->n++];
            pt->ts_ms = bstart;
            pt->is_int = false;
            pt->v.d = bucket_reals(kind, dv + i, e - i, c->no_nan);
            i = e;
            continue;
        }
        if (i > 0 && (kind == QAGG_STREAM_SUM || kind == QAGG_STREAM_AVG)) {
            /* the whole buckets after the first, k points each: the loop below without its
             * per-bucket tests, two points per step (the same additions in the same order,
             * so the same bits) */
            double dk = (double)k;
            for (; n - i >= k; i += k, bstart += iv) {
                const int64_t *w = v + i;
                double r = 0;
                size_t j = 0;
                for (; j + 2 <= k; j += 2) {
                    r += (double)w[j];
                    r += (double)w[j + 1];
                }
                if (j < k)
                    r += (double)w[j];
                if (kind == QAGG_STREAM_AVG)
                    r /= dk;
                struct qagg_point *pt = &out->p[out->n++];
                pt->ts_ms = bstart;
                pt->is_int = false;
                pt->v.d = r;
            }
            if (i >= n)
                break;
            e = i + k;
        }
        if (e > n)
            e = n;
        double r;
        if (kind == QAGG_STREAM_SUM || kind == QAGG_STREAM_AVG) {
            r = 0;
            for (size_t j = i; j < e; j++)
                r += (double)v[j];
            if (kind == QAGG_STREAM_AVG)
                r /= (double)(e - i);
        } else if (kind == QAGG_STREAM_COUNT) {
            r = (double)(e - i);
        } else {
            int64_t m = v[i];
            if (kind == QAGG_STREAM_MIN)
                for (size_t j = i + 1; j < e; j++)
                    m = v[j] < m ? v[j] : m;
            else
                for (size_t j = i + 1; j < e; j++)
                    m = v[j] > m ? v[j] : m;
            r = (double)m;
        }
        struct qagg_point *pt = &out->p[out->n++];
        pt->ts_ms = bstart;
        pt->is_int = false;
        pt->v.d = r;
        i = e;
    }
    series_put(s, most, ob.n);
    return CT_OK;
}

/* row_downsample_regular() for "first" and "last" (qagg_run_double's: the bucket's first or
 * last value, NaN or not): one value picked per bucket, no timestamp column, no conversion pass
 * (a counter's rate is usually asked after a "last" downsample). */
static int row_pick_regular(const struct xscan *x, const struct dpcodec_cols *c, struct xser *s,
                            size_t hint, bool last, struct ct_err *err)
{
    int64_t iv = x->ds->interval_ms, t0 = c->ts_first, st = c->ts_step, bstart;
    size_t n = c->n, i, most;
    if (!regular_span(x, c, &i, &bstart, &most))
        return CT_OK;
    struct qagg_point *out = series_room(s, most, hint);
    if (!out)
        return ct_err_set(err, CT_ENOMEM, "out of memory growing a series by %zu points", most);
    const int64_t *v = (const int64_t *)(const void *)c->val;
    const double *dv = (const double *)(const void *)c->val; /* DPCODEC_COLS_REALS */
    bool reals = c->kinds == DPCODEC_COLS_REALS;
    size_t k = (size_t)(iv / st), m = 0;
    /* the first bucket ends at the first point at or after bstart + iv */
    size_t e = (size_t)((bstart + iv - t0 + st - 1) / st);
    for (; i < n; bstart += iv, i = e, e += k) {
        if (e > n)
            e = n;
        size_t at = last ? e - 1 : i;
        out[m].ts_ms = bstart;
        out[m].is_int = false;
        out[m].v.d = reals ? dv[at] : (double)v[at];
        m++;
    }
    series_put(s, most, m);
    return CT_OK;
}

/* The downsampling function's pick for row_pick_regular(): 1 "first", 2 "last", 0 neither. */
static int ds_pick(const struct qagg *fn)
{
    const char *name = qagg_name(fn);
    return !strcmp(name, "last") ? 2 : !strcmp(name, "first") ? 1 : 0;
}

/* Downsamples a row's points (c) into series s's buckets (placed by series_room()/series_put();
 * hint: series_room()'s). */
static int row_downsample(const struct xscan *x, struct dpcodec_cols *c, struct xser *s,
                          size_t hint, double *vals, double *scratch, struct ct_err *err)
{
    int64_t iv = x->ds->interval_ms;
    if (c->ts_regular) {
        if ((c->kinds == DPCODEC_COLS_INTS || c->kinds == DPCODEC_COLS_REALS) && c->ts_step > 0 &&
            iv % c->ts_step == 0) {
            if (x->ds_stream != QAGG_STREAM_NO)
                return row_downsample_regular(x, c, s, hint, err);
            int pick = ds_pick(x->ds->fn);
            if (pick)
                return row_pick_regular(x, c, s, hint, pick == 2, err);
        }
        dpcodec_cols_fill_ts(c);
    }
    const int64_t *ts = c->ts;
    size_t i = 0, n = c->n;
    while (i < n && ts[i] < x->ds_seek_ms)
        i++;
    if (i == n)
        return CT_OK;
    int64_t first = ts[i] - ts[i] % iv;
    size_t most = (size_t)((ts[n - 1] - first) / iv) + 1;
    struct qagg_buf ob = {series_room(s, most, hint), 0, most}, *out = &ob;
    if (!ob.p)
        return ct_err_set(err, CT_ENOMEM, "out of memory growing a series by %zu points", most);
    bool nan_free = c->kinds == DPCODEC_COLS_INTS; /* integers are never NaN */
    enum qagg_stream kind = x->ds_stream;
    if (nan_free && (kind == QAGG_STREAM_SUM || kind == QAGG_STREAM_AVG)) {
        /* the common case in one pass: integer values summed (as doubles, in time order) */
        const uint64_t *val = c->val;
        int64_t bstart = ts[i] - ts[i] % iv, bend = bstart + iv;
        size_t b = i;
        double r = 0;
        for (; i < n; i++) {
            if (ts[i] >= bend) {
                struct qagg_point *pt = &out->p[out->n++];
                pt->ts_ms = bstart;
                pt->is_int = false;
                pt->v.d = kind == QAGG_STREAM_AVG ? r / (double)(i - b) : r;
                bstart = ts[i] - ts[i] % iv;
                bend = bstart + iv;
                b = i;
                r = 0;
            }
            r += (double)(int64_t)val[i];
        }
        struct qagg_point *pt = &out->p[out->n++];
        pt->ts_ms = bstart;
        pt->is_int = false;
        pt->v.d = kind == QAGG_STREAM_AVG ? r / (double)(i - b) : r;
        series_put(s, most, ob.n);
        return CT_OK;
    }
    if (nan_free && kind != QAGG_STREAM_NO) {
        /* min, max and count of integers as integers (no conversion pass): the min and max of
         * the integers are those of their doubles, the conversion being monotonic */
        const int64_t *v = (const int64_t *)(const void *)c->val;
        while (i < n) {
            int64_t bstart = ts[i] - ts[i] % iv, bend = bstart + iv;
            size_t b = i;
            int64_t m = v[i++];
            if (kind == QAGG_STREAM_MIN)
                for (; i < n && ts[i] < bend; i++)
                    m = v[i] < m ? v[i] : m;
            else if (kind == QAGG_STREAM_MAX)
                for (; i < n && ts[i] < bend; i++)
                    m = v[i] > m ? v[i] : m;
            else /* count */
                while (i < n && ts[i] < bend)
                    i++;
            struct qagg_point *pt = &out->p[out->n++];
            pt->ts_ms = bstart;
            pt->is_int = false;
            pt->v.d = kind == QAGG_STREAM_COUNT ? (double)(i - b) : (double)m;
        }
        series_put(s, most, ob.n);
        return CT_OK;
    }
    /* the values as doubles (qagg_point_double), then one tight loop per bucket */
    if (nan_free)
        for (size_t k = i; k < n; k++)
            vals[k] = (double)(int64_t)c->val[k];
    else if (c->kinds == DPCODEC_COLS_REALS)
        memcpy(vals + i, c->val + i, (n - i) * sizeof(double));
    else
        for (size_t k = i; k < n; k++)
            vals[k] = dpcodec_cols_double(c, k);
    while (i < n) {
        int64_t bstart = ts[i] - ts[i] % iv, bend = bstart + iv;
        size_t b = i, k = 0;
        while (i < n && ts[i] < bend)
            i++;
        double r = 0;
        /* qagg_run_double's single passes (NaN skipped), or the call itself */
        switch (kind) {
        case QAGG_STREAM_SUM:
        case QAGG_STREAM_AVG:
            if (nan_free) {
                for (size_t j = b; j < i; j++)
                    r += vals[j];
                k = i - b;
            } else {
                for (size_t j = b; j < i; j++)
                    if (!isnan(vals[j])) {
                        r += vals[j];
                        k++;
                    }
            }
            r = k == 0 ? NAN : kind == QAGG_STREAM_AVG ? r / (double)k : r;
            break;
        case QAGG_STREAM_MIN:
            if (nan_free) { /* the first value, then each smaller one */
                r = vals[b];
                for (size_t j = b + 1; j < i; j++)
                    r = vals[j] < r ? vals[j] : r;
                break;
            }
            for (size_t j = b; j < i; j++)
                if (!isnan(vals[j]) && (k++ == 0 || vals[j] < r))
                    r = vals[j];
            r = k == 0 ? NAN : r;
            break;
        case QAGG_STREAM_MAX:
            if (nan_free) {
                r = vals[b];
                for (size_t j = b + 1; j < i; j++)
                    r = vals[j] > r ? vals[j] : r;
                break;
            }
            for (size_t j = b; j < i; j++)
                if (!isnan(vals[j]) && (k++ == 0 || vals[j] > r))
                    r = vals[j];
            r = k == 0 ? NAN : r;
            break;
        case QAGG_STREAM_COUNT:
            for (size_t j = b; j < i; j++)
                k += !isnan(vals[j]);
            r = k == 0 ? NAN : (double)k;
            break;
        default:
            r = qagg_run_double(x->ds->fn, vals + b, i - b, scratch);
            break;
        }
        struct qagg_point *pt = &out->p[out->n++];
        pt->ts_ms = bstart;
        pt->is_int = false;
        pt->v.d = r;
    }
    series_put(s, most, ob.n);
    return CT_OK;
}

/* At most this many key ranges per hour when the filter pins the leading tags (beyond, the
 * hour's rows are walked whole): a range costs a seek (and its piece of the scan's inputs),
 * worth a few rows that the row filter would reject (~1,600 instructions each), and nothing
 * says how many series a range holds, so a long list of values is read the usual way. */
#define QEXEC_LEAD_RANGES 8
/* ... and at most this many in a whole scan window */
#define QEXEC_LEAD_MAX 2048

size_t qexec_lead_tags(const struct rowkey_filter *rf, uint64_t hours, const uint64_t **vals,
                       size_t *nvals)
{
    size_t n = rowkey_filter_lead(rf, QEXEC_LEAD_RANGES, vals, nvals);
    /* every hour of the window costs its ranges even when it holds nothing: a long window
     * (sparse data) is walked whole instead */
    uint64_t ranges = hours;
    for (size_t i = 0; i < n && ranges <= QEXEC_LEAD_MAX; i++)
        ranges *= nvals[i];
    return ranges > QEXEC_LEAD_MAX ? 0 : n;
}

/* What the scans of one piece of work reuse from range to range. */
struct xscratch {
    struct dpcodec_cols cols;
    double *dsv; /* a bucket's values and qagg_run_double's scratch (2 x dsv_cap) */
    size_t dsv_cap;
};

/* Scans the rows of one piece of work (in bucket b, hours bottom_s..top_s), newest first, with
 * one scanner: so holds the piece's rows (start_row and stop_row, or its key ranges); the rest
 * of the options are set here. */
static int scan_range(struct xscan *x, struct wc_scan_options *so_rows, int64_t bottom_s,
                      int64_t top_s, struct xset *set, struct xscratch *xs, struct ct_err *err)
{
    const struct rowkey_layout *l = x->l;
    struct wc_column col = {wc_bytes_str(TSDB_DATA_FAMILY), {NULL, 0}, false};
    struct wc_scan_options so = *so_rows;
    so.reversed = true;
    so.columns = &col;
    so.ncolumns = 1;
    struct qexec_rf_memo memo;
    qexec_rf_memo_init(&memo, l, xscan_row_filter, x);
    so.row_filter = qexec_rf_memo_filter;
    so.row_filter_arg = &memo;
    struct wc_scanner *sc = NULL;
    int rc = wc_scanner_open(tsdb_data_table(x->t), &so, &sc, err);
    if (rc != CT_OK)
        return rc;
    atomic_fetch_add(&x->scanners, 1);
    atomic_fetch_add(&x->key_ranges, so.nranges ? so.nranges : 1);
    struct dpcodec_cols cols = xs->cols; /* reused for every row (given back below) */
    double *dsv = xs->dsv;
    size_t dsv_cap = xs->dsv_cap;
    struct wc_row row;
    uint64_t my_rows = 0, my_dps = 0; /* not yet in x->rows, x->dps (xscan_count) */
    while ((rc = wc_scanner_next(sc, &row, err)) == CT_OK) {
        if (atomic_load(&x->stop)) {
            rc = CT_ECLOSED;
            break;
        }
        if (x->deadline_ns && clock_mono_ns() > x->deadline_ns) {
            rc = ct_err_set(err, CT_ETIMEOUT, "Query timeout exceeded");
            break;
        }
        struct rowkey_parts parts;
        if ((rc = rowkey_decode(l, row.key.data, row.key.len, &parts, err)) != CT_OK)
            break;
        uint8_t ts[ROWKEY_MAX_TSUID];
        size_t tl = rowkey_tsuid_of(l, row.key.data, row.key.len, ts, sizeof(ts));
        if (!tl)
            continue;
        if ((rc = dpcodec_row_decode_cols(parts.base_s, row.cells, row.ncells, &cols, NULL, err)) !=
            CT_OK)
            break;
        size_t n = cols.n;
        bool has_ann = false;
        for (size_t c = 0; c < row.ncells && !has_ann; c++)
            has_ann =
                dpcodec_is_annotation_q(row.cells[c].qualifier.data, row.cells[c].qualifier.len);
        bool has_hist = false;
        int64_t hts;
        for (size_t c = 0; c < row.ncells && x->histo && !has_hist; c++)
            has_hist = histo_qualifier_time(parts.base_s, row.cells[c].qualifier.data,
                                            row.cells[c].qualifier.len, &hts);
        if (n == 0 && !has_ann && !has_hist)
            continue;
        my_rows++;
        struct xser *s = xset_get(set, ts, tl);
        if (!s) {
            rc = ct_err_set(err, CT_ENOMEM, "out of memory adding a series");
            break;
        }
        if (x->keep_rows) {
            if (s->nrows == s->caprows) {
                size_t nc = s->caprows ? s->caprows * 2 : 8;
                int64_t *nb = realloc(s->row_base, nc * sizeof(int64_t));
                if (!nb) {
                    rc = ct_err_set(err, CT_ENOMEM, "out of memory adding a row");
                    break;
                }
                s->row_base = nb;
                s->caprows = nc;
            }
            s->row_base[s->nrows++] = parts.base_s;
        }
        if (n) {
            /* the series' first row in this scan makes room for the whole slice (buckets, or
             * this row's count for every hour), so that it rarely grows */
            uint64_t hint = 0;
            if (!s->pts_base) {
                uint64_t hours = (uint64_t)(top_s - bottom_s) / ROWKEY_HOUR_S + 1;
                hint =
                    x->ds ? hours * ROWKEY_HOUR_S * 1000 / (uint64_t)x->ds->interval_ms : hours * n;
                if (hint > 1u << 20)
                    hint = 1u << 20;
            }
            if (x->ds) {
                if (n > dsv_cap) {
                    size_t nc = dsv_cap ? dsv_cap : 512;
                    while (nc < n)
                        nc *= 2;
                    double *nv = realloc(dsv, 2 * nc * sizeof(double));
                    if (!nv) {
                        rc = ct_err_set(err, CT_ENOMEM, "out of memory downsampling");
                        break;
                    }
                    dsv = nv;
                    dsv_cap = nc;
                }
                if ((rc = row_downsample(x, &cols, s, (size_t)hint, dsv, dsv + dsv_cap, err)) !=
                    CT_OK)
                    break;
            } else {
                struct qagg_point *o = series_room(s, n, (size_t)hint);
                if (!o) {
                    rc = ct_err_set(err, CT_ENOMEM, "out of memory growing a series by %zu points",
                                    n);
                    break;
                }
                for (size_t i = 0; i < n; i++) {
                    o[i].ts_ms = cols.ts[i];
                    o[i].is_int = cols.is_int[i];
                    if (o[i].is_int)
                        o[i].v.i = (int64_t)cols.val[i];
                    else
                        o[i].v.d = dpcodec_cols_double(&cols, i);
                }
                series_put(s, n, n);
            }
            my_dps += n;
            if (my_dps >= QEXEC_DPS_BATCH && (rc = xscan_count(x, &my_rows, &my_dps, err)) != CT_OK)
                break;
        }
        for (size_t c = 0; c < row.ncells && has_hist && rc == CT_OK; c++) {
            const struct wc_cell *cell = &row.cells[c];
            if (histo_qualifier_time(parts.base_s, cell->qualifier.data, cell->qualifier.len,
                                     &hts) &&
                add_hist(s, hts, cell->value.data, cell->value.len) != 0)
                rc = ct_err_set(err, CT_ENOMEM, "out of memory keeping a histogram");
        }
        if (rc != CT_OK)
            break;
        for (size_t c = 0; c < row.ncells && has_ann; c++) {
            const struct wc_cell *cell = &row.cells[c];
            if (!dpcodec_is_annotation_q(cell->qualifier.data, cell->qualifier.len))
                continue;
            int64_t st;
            struct ct_err e2 = {0};
            if (dpcodec_annotation_time(parts.base_s, cell->qualifier.data, cell->qualifier.len,
                                        &st, &e2) != CT_OK)
                continue;
            if (qexec_xann_append(&s->anns, &s->nanns, st, cell->value.data, cell->value.len) !=
                CT_OK) {
                rc = ct_err_set(err, CT_ENOMEM, "out of memory keeping an annotation");
                break;
            }
        }
        if (rc != CT_OK)
            break;
    }
    if (rc == CT_NOTFOUND)
        rc = CT_OK;
    if (rc == CT_OK)
        rc = xscan_count(x, &my_rows, &my_dps, err);
    else { /* the statistics still count what was read; the first error stands */
        struct ct_err e2 = {0};
        (void)xscan_count(x, &my_rows, &my_dps, &e2);
    }
    xs->cols = cols;
    xs->dsv = dsv;
    xs->dsv_cap = dsv_cap;
    wc_scanner_close(sc);
    return rc;
}

/* Scans bucket b's rows with base hours in [bottom_s, top_s], newest first, with one scanner.
 * Reversed is the planning issue #7 specifies (the query layer reverse-scans time ranges): a
 * forward scan was measured 6-10% cheaper per query (e1cbf3a, reverted) because the engine
 * seeks again for every row of a reversed scan; that cost belongs in the engine's reversed step,
 * not in the plan. When the row filter pins the leading tags (rowkey_filter_lead), the scan is a
 * multi-range one (wc_scan_options.ranges) over the few key ranges each hour's accepted rows can
 * lie in (rowkey_lead_ranges: ascending; the reversed scan visits them newest hour first, each
 * hour's ranges in descending key order), so the rows of other series are never walked. */
static int scan_bucket(struct xscan *x, unsigned b, int64_t bottom_s, int64_t top_s,
                       struct xset *set, struct ct_err *err)
{
    const struct rowkey_layout *l = x->l;
    uint8_t lo[ROWKEY_MAX_BYTES + ROWKEY_MAX_TSUID], hi[ROWKEY_MAX_BYTES + ROWKEY_MAX_TSUID];
    struct xscratch xs;
    memset(&xs, 0, sizeof(xs));
    dpcodec_cols_init(&xs.cols);
    xs.cols.lazy_ts = x->ds != NULL; /* only row_downsample() reads ts then */
    struct wc_scan_options so;
    wc_scan_options_init(&so);
    struct wc_row_range *ranges = NULL;
    int rc = CT_OK;
    if (x->exact) { /* the tag index's series: exactly their rows (query/qindex.h) */
        rc = qindex_ranges(l, b, bottom_s, top_s, x->tsuids, x->tsuid_lens, x->ntsuids, &ranges,
                           &so.nranges, err);
        so.ranges = ranges;
    } else if (!x->nlead) {
        size_t lol = 0, hil = 0;
        rowkey_scan_window_reversed(l, b, x->metric, bottom_s, top_s, hi, &hil, lo, &lol);
        so.start_row = wc_bytes_of(hi, hil);
        so.stop_row = wc_bytes_of(lo, lol);
    } else {
        rc = rowkey_lead_ranges(l, b, x->metric, bottom_s, top_s, x->lead_vals, x->lead_n, x->nlead,
                                &ranges, &so.nranges, err);
        so.ranges = ranges;
    }
    if (rc == CT_OK && ((!x->nlead && !x->exact) || so.nranges))
        rc = scan_range(x, &so, bottom_s, top_s, set, &xs, err);
    free(ranges);
    dpcodec_cols_free(&xs.cols);
    free(xs.dsv);
    return rc;
}

void qexec_scan_thread(void *arg)
{
    struct xscan *x = arg;
    for (;;) {
        unsigned w = atomic_fetch_add(&x->next_bucket, 1);
        if (w >= x->nbuckets * x->nslices)
            break;
        unsigned b = w / x->nslices, sl = w % x->nslices;
        int64_t top = x->win_end_s - ROWKEY_HOUR_S - (int64_t)sl * x->slice_hours * ROWKEY_HOUR_S;
        int64_t bottom = top - (x->slice_hours - 1) * ROWKEY_HOUR_S;
        if (bottom < x->win_start_s)
            bottom = x->win_start_s;
        x->rcs[w] = top < bottom || !qexec_bucket_wanted(x, b)
                        ? CT_OK
                        : scan_bucket(x, b, bottom, top, &x->sets[w], &x->errs[w]);
        if (x->rcs[w] != CT_OK)
            atomic_store(&x->stop, 1);
    }
}

/* Hands the series of src (an older time slice of the same bucket) to dst's series: the
 * points are chained (d->older, copied once by qexec_series_finish()), annotations and row hours
 * appended. src keeps no series. */
int qexec_xset_merge(struct xset *dst, struct xset *src, struct ct_err *err)
{
    /* series appended without being indexed (qrollup's emit_series(): a piece's set is only
     * listed) are indexed first, so that an older slice's part of a series finds it */
    for (size_t i = dst->ht.n; i < dst->n && src->n; i++) {
        const struct xser *s = dst->ser[i];
        size_t h = 0;
        if (hashset_reserve(&dst->ht, 256, xset_hash_of, dst, err) != CT_OK)
            return err->code;
        if (hashset_find(&dst->ht, hash_bytes(s->tsuid, s->tsuid_len, 0), xset_eq, dst, s->tsuid,
                         s->tsuid_len, &h) < 0)
            hashset_insert_at(&dst->ht, h, i);
    }
    if (src->nslabs) { /* the slabs go with the points cut from them; none is cut any more */
        struct qagg_point **ns = realloc(dst->slabs, (dst->nslabs + src->nslabs) * sizeof(*ns));
        if (!ns)
            return ct_err_set(err, CT_ENOMEM, "out of memory merging time slices");
        memcpy(ns + dst->nslabs, src->slabs, src->nslabs * sizeof(*ns));
        dst->slabs = ns;
        dst->nslabs += src->nslabs;
        dst->slab_used = QEXEC_SLAB_POINTS;
        free(src->slabs);
        src->slabs = NULL;
        src->nslabs = 0;
    }
    for (size_t i = 0; i < src->n; i++) {
        struct xser *s = src->ser[i];
        struct xser *d = xset_get(dst, s->tsuid, s->tsuid_len);
        if (!d)
            return ct_err_set(err, CT_ENOMEM, "out of memory merging time slices");
        src->ser[i] = NULL;
        if (d->oldest)
            d->oldest->older = s;
        else
            d->older = s;
        d->oldest = s;
        for (size_t a = 0; a < s->nanns; a++) {
            const char *json = s->anns[a].json;
            if (qexec_xann_append(&d->anns, &d->nanns, s->anns[a].start_ms, json, strlen(json)) !=
                CT_OK)
                return ct_err_set(err, CT_ENOMEM, "out of memory merging time slices");
        }
        for (size_t h = 0; h < s->nhists; h++)
            if (add_hist(d, s->hists[h].ts_ms, s->hists[h].v, s->hists[h].len) != 0)
                return ct_err_set(err, CT_ENOMEM, "out of memory merging time slices");
        if (s->nrows) {
            int64_t *nb = realloc(d->row_base, (d->nrows + s->nrows) * sizeof(int64_t));
            if (!nb)
                return ct_err_set(err, CT_ENOMEM, "out of memory merging time slices");
            d->row_base = nb;
            memcpy(d->row_base + d->nrows, s->row_base, s->nrows * sizeof(int64_t));
            d->nrows += s->nrows;
            d->caprows = d->nrows;
        }
    }
    return CT_OK;
}

/* ---- the ingest head ------------------------------------------------------------------------
 * The head (schema/head.h) holds the newest points of each series before they are stored. Its
 * series are picked before the scan by the same row filter (a row key is made from the TSUID),
 * so the scan knows it must keep raw points (no in-scan downsampling, no rollup), and merged
 * after it: each picked series' points of the window's hours are put into its set (salt bucket),
 * merged with the stored points by timestamp; on equal timestamps the head's point wins, as it
 * was written after every stored cell of that hour (head_iter's cell_ts_ms). */

static int head_pick(void *arg, const uint8_t *ts, size_t tl)
{
    struct xscan *x = arg;
    const struct rowkey_layout *l = x->l;
    size_t pair = l->tagk_width + l->tagv_width;
    if (tl > ROWKEY_MAX_TSUID || tl < l->metric_width || (tl - l->metric_width) % pair)
        return CT_OK; /* not a TSUID of this layout */
    uint8_t key[ROWKEY_MAX_BYTES];
    size_t kl = rowkey_encode(l, ts, tl, x->win_start_s, key);
    if (x->rf && !rowkey_filter_match(x->rf, key, kl))
        return CT_OK;
    if (x->ntsuids && !tsuid_wanted(x, ts, tl))
        return CT_OK;
    if (x->nhead == x->head_cap) {
        size_t nc = x->head_cap ? 2 * x->head_cap : 16;
        uint8_t **nt = realloc(x->head_ts, nc * sizeof(*nt));
        if (!nt)
            return CT_ENOMEM;
        x->head_ts = nt;
        size_t *nl = realloc(x->head_tl, nc * sizeof(*nl));
        if (!nl)
            return CT_ENOMEM;
        x->head_tl = nl;
        x->head_cap = nc;
    }
    uint8_t *c = malloc(tl);
    if (!c)
        return CT_ENOMEM;
    memcpy(c, ts, tl);
    x->head_ts[x->nhead] = c;
    x->head_tl[x->nhead++] = tl;
    return CT_OK;
}

int qexec_head_collect(struct xscan *x, struct ct_err *err)
{
    if (!x->head || x->head_end_ms < x->head_start_ms)
        return CT_OK;
    uint8_t prefix[ROWKEY_MAX_UID_WIDTH];
    rowkey_put_uid(prefix, x->metric, x->l->metric_width);
    int rc = head_each_series(x->head, prefix, x->l->metric_width, x->head_start_ms, x->head_end_ms,
                              head_pick, x);
    if (rc != CT_OK)
        return ct_err_set(err, rc, "out of memory listing the head's series");
    if (!x->nhead)
        return CT_OK;
    /* the points now, before the scan: an hour handed off from here on is in the store before
     * the head drops it (tsd/store.c), so the scan, which starts later, reads it there. They are
     * copied as the head holds them (a few bytes a point) and decoded where they are used. */
    if (!(x->head_off = malloc((x->nhead + 1) * sizeof(size_t))) ||
        !(x->head_np = malloc((x->nhead + 1) * sizeof(size_t))))
        return ct_err_set(err, CT_ENOMEM, "out of memory reading the head");
    size_t len = 0, kept = 0;
    for (size_t i = 0; i < x->nhead; i++) {
        size_t before = len, np = 0;
        rc = head_copy(x->head, x->head_ts[i], x->head_tl[i], x->head_start_ms, x->head_end_ms,
                       &x->head_copy, &x->head_copy_cap, &len, &np, err);
        if (rc != CT_OK)
            return rc;
        if (np == 0) { /* handed off since it was listed: the scan reads it */
            free(x->head_ts[i]);
            x->head_ts[i] = NULL;
            continue;
        }
        x->head_ts[kept] = x->head_ts[i];
        if (kept != i)
            x->head_ts[i] = NULL;
        x->head_tl[kept] = x->head_tl[i];
        x->head_np[kept] = np;
        x->head_off[kept++] = before;
    }
    x->head_off[kept] = len;
    x->nhead = kept;
    return CT_OK;
}

void qexec_head_iter(const struct xscan *x, size_t i, struct head_iter *it)
{
    head_iter_init(it, x->head_copy + x->head_off[i], x->head_off[i + 1] - x->head_off[i],
                   x->head_start_ms, x->head_end_ms);
}

int qexec_head_count(struct xscan *x, struct ct_err *err)
{
    uint64_t rows = 0, dps = 0;
    for (size_t i = 0; i < x->nhead; i++)
        dps += x->head_np[i];
    return dps ? xscan_count(x, &rows, &dps, err) : CT_OK;
}

void qexec_head_free(struct xscan *x)
{
    for (size_t i = 0; i < x->nhead; i++)
        free(x->head_ts[i]);
    free(x->head_ts);
    free(x->head_tl);
    free(x->head_off);
    free(x->head_np);
    free(x->head_copy);
    x->head_ts = NULL;
    x->head_tl = NULL;
    x->head_off = NULL;
    x->head_np = NULL;
    x->head_copy = NULL;
    x->nhead = x->head_cap = x->head_copy_cap = 0;
}

static void head_qpoint(const struct dpcodec_point *p, struct qagg_point *q)
{
    q->ts_ms = p->ts_ms;
    q->is_int = p->type == DPCODEC_INT;
    if (q->is_int)
        q->v.i = p->i;
    else
        q->v.d = p->f;
}

/* Merges head series hi's n points (ascending, unique) into s's points (its time slices, each
 * ascending, the newest first on s->older), into one owned buffer. */
static int series_merge_head(const struct xscan *x, size_t hi, struct xser *s, size_t n,
                             struct ct_err *err)
{
    size_t total = 0, nparts = 0;
    for (const struct xser *e = s; e; e = e->older) {
        total += e->pts.n;
        nparts++;
    }
    struct qagg_point *nb = malloc((total + n) * sizeof(*nb));
    const struct xser **parts = malloc(nparts * sizeof(*parts));
    if (!nb || !parts) {
        free(nb);
        free(parts);
        return ct_err_set(err, CT_ENOMEM, "out of memory merging %zu head points", n);
    }
    size_t k = 0;
    for (const struct xser *e = s; e; e = e->older)
        parts[k++] = e;
    size_t m = 0;
    struct head_iter it;
    struct dpcodec_point hp;
    qexec_head_iter(x, hi, &it);
    bool more = head_iter_next(&it, &hp); /* hp: the head's next point */
    while (k-- > 0) {                     /* the oldest slice first */
        const struct xser *e = parts[k];
        for (size_t i = 0; i < e->pts.n; i++) {
            const struct qagg_point *sp = &e->pts.p[i];
            for (; more && hp.ts_ms < sp->ts_ms; more = head_iter_next(&it, &hp))
                head_qpoint(&hp, &nb[m++]);
            if (more && hp.ts_ms == sp->ts_ms)
                continue; /* the head's point is newer */
            nb[m++] = *sp;
        }
    }
    for (; more; more = head_iter_next(&it, &hp))
        head_qpoint(&hp, &nb[m++]);
    free(parts);
    xser_free(s->older);
    s->older = s->oldest = NULL;
    if (!s->pts_borrowed && !s->pts_slab)
        free(s->pts_base);
    s->pts_borrowed = s->pts_slab = false;
    s->pts_base = nb;
    s->pts_top = total + n;
    s->pts.p = nb;
    s->pts.n = s->pts.cap = m;
    return CT_OK;
}

int qexec_head_merge(struct xscan *x, struct ct_err *err)
{
    int rc = CT_OK;
    for (size_t i = 0; i < x->nhead && rc == CT_OK; i++) {
        const uint8_t *ts = x->head_ts[i];
        size_t tl = x->head_tl[i], n = x->head_np[i];
        unsigned b = x->nbuckets > 1 ? rowkey_salt_bucket(x->l, ts, tl) : 0;
        if (b >= x->nbuckets)
            b = 0;
        struct xser *s = xset_get(&x->sets[(size_t)b * x->nslices], ts, tl);
        if (!s)
            return ct_err_set(err, CT_ENOMEM, "out of memory adding a series");
        rc = series_merge_head(x, i, s, n, err); /* counted by qexec_head_count */
    }
    return rc;
}
