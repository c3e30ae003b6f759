/* qexec_int.h - what the parts of the query executor share (not public: qexec.h is): the series
 * and scan state (qexec_scan.c), the sub-query (qexec.c) and the output (qexec_out.c). The plan
 * and invariants are at the top of qexec.c. */
#ifndef CT_QEXEC_INT_H
#define CT_QEXEC_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "query/qagg.h"
#include "query/qexec.h"
#include "query/qpool.h"
#include "schema/dpcodec.h"
#include "schema/head.h"
#include "schema/rowkey.h"
#include "schema/uid.h"
#include "storage/ct_err.h"
#include "storage/hash.h"
#include "storage/wc.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Where finished group points go: JSON or a callback. */
struct xout {
    const struct qspec *q;
    const struct qspec_sub *sub;
    struct qjson *j;
    bool first_dp;
    uint64_t emitted;
    qexec_point_fn fn;
    void *fn_arg;
    const char *metric;
    const char *tags;
    /* padding: the last point before the start, written before the first one after it */
    struct qagg_point pad;
    bool has_pad, pad_after;
    /* the digits of the last timestamp / 10000, which consecutive points share */
    int64_t ts_hi;
    char ts_hi_digits[24];
    size_t ts_hi_len; /* 0: none yet */
};

struct gann {
    struct xann *a;
    size_t n, cap;
};

struct wctx {
    const struct qspec *q;
    const struct gann *globals;
    struct qjson *j;
    bool first;
    struct qexec_stats *st;
    struct ct_err *err;
};

/* A sub-query's tag names by (kind, uid), each looked up once (qexec.c xnames_get): the series
 * of a query share a few keys and values, and a series' names point into this table. */
struct xname {
    uint64_t id;
    int kind; /* 0: free slot, else uid_kind + 1 */
    char *name;
};
struct xnames {
    struct xname *tab; /* open addressing, cap a power of two, at most half full */
    size_t cap, n;
};

struct xsub {
    const struct qspec_sub *sub;
    struct xnames names;
    char metric_name[UID_MAX_NAME + 1];
    uint64_t metric;
    struct xfilt *filts;
    size_t nfilts;
    uint64_t *gb_tagk; /* group-by tag key uids, ascending */
    size_t ngb;
    struct xser **ser; /* kept series, sorted by group key then tsuid */
    size_t nser;
    struct xset *sets;
    unsigned nsets;
    struct qagg_point *pts_block; /* the finished series' points (qexec_series_finish) */
    bool ds_done;                 /* the scan downsampled the series already (xscan.ds) */
    bool general_only;            /* qexec_options.general_only */
    struct qexec_stats st;        /* this sub-query's share (statsSummary's queryIdx_NN) */
};

struct xann {
    int64_t start_ms;
    char *json;
};

/* Appends an annotation of a series (its start and a copy of its `len` bytes of JSON, made a
 * string) to the array *anns of *n: the scan's series, a rollup series, a time slice merged into
 * its bucket's. Returns CT_OK, or CT_ENOMEM with *anns and *n still valid (the array may have
 * grown; *n is unchanged) for the caller to say what it was doing. Borrows `json`. */
static inline int qexec_xann_append(struct xann **anns, size_t *n, int64_t start_ms,
                                    const void *json, size_t len)
{
    struct xann *na = realloc(*anns, (*n + 1) * sizeof(*na));
    if (!na)
        return CT_ENOMEM;
    *anns = na;
    char *j = malloc(len + 1);
    if (!j)
        return CT_ENOMEM;
    if (len)
        memcpy(j, json, len);
    j[len] = 0;
    na[*n].start_ms = start_ms;
    na[(*n)++].json = j;
    return CT_OK;
}

/* A histogram cell kept for a histogram sub-query: its time and value bytes (codec id + codec
 * bytes, schema/histogram.h), owned. */
struct xhist {
    int64_t ts_ms;
    uint8_t *v;
    size_t len;
};

struct xser {
    uint8_t *tsuid;
    size_t tsuid_len;
    /* the points read, ascending: pts.p = pts_base + (pts_top - pts.n), pts.cap = pts.n; rows
     * arrive newest first, so each row's points go below the newer ones (series_room()) */
    struct qagg_buf pts;
    struct qagg_point *pts_base; /* the allocation (NULL once pts_borrowed) */
    size_t pts_top;              /* its size in points */
    struct xann *anns;
    size_t nanns;
    struct xhist *hists; /* histogram sub-queries only (xscan.histo) */
    size_t nhists;
    int64_t *row_base; /* base hour of every row read (only for delete queries) */
    size_t nrows, caprows;
    /* the same series' points in the older time slices of its bucket, newest first (owned;
     * qexec_series_finish() folds them in) */
    struct xser *older, *oldest;
    bool pts_borrowed; /* pts.p lies in the sub-query's block (xsub.pts_block), not owned */
    bool pts_slab;     /* pts_base lies in a point slab of the set that read it, not owned */
    struct xset *home; /* the set whose scan fills it (its slabs; the scan's only) */
    /* after the scan: tagk_id is one block holding tagk_id, tagv_id, tagk and tagv when
     * tags_block is set (names borrowed from the sub-query's xnames), else each is owned */
    size_t ntags;
    uint64_t *tagk_id, *tagv_id;
    char **tagk, **tagv;
    bool tags_block;
    uint8_t *gkey; /* group key: tagv ids of the group-by keys */
    size_t gkey_len;
};

/* One bucket's (or thread's) collection of series with a hash index on the TSUID. */
struct xset {
    struct xser **ser;
    size_t n, cap;
    struct hashset ht; /* of ser[], by TSUID */
    /* point slabs its series' small buffers are cut from (qexec_scan.c: reused from query to
     * query, so a scan does not fault fresh pages in); the last one is filled up to slab_used */
    struct qagg_point **slabs;
    size_t nslabs, slab_used;
};

struct head;
struct xscan {
    struct tsdb *t;
    const struct rowkey_layout *l;
    uint64_t metric;
    int64_t win_start_s, win_end_s;
    struct rowkey_filter *rf;
    /* rf has no tag clause: it only checks the metric and the key's shape (false: unknown) */
    bool rf_no_tags;
    /* the leading tags rf pins (rowkey_filter_lead): values of tagk uids 1 .. nlead */
    size_t nlead;
    const uint64_t *lead_vals[ROWKEY_MAX_TAGS];
    size_t lead_n[ROWKEY_MAX_TAGS];
    uint8_t **tsuids; /* sorted; a tsuid query's series, or those the tag index picked */
    size_t *tsuid_lens;
    size_t ntsuids;
    bool exact; /* tsuids came from the tag index (query/qindex.h): scan exactly their rows */
    /* bit b: salt bucket b may hold a series the filter accepts (qindex_buckets; every bit
     * when the index cannot say): the scans skip the other buckets */
    uint64_t bucket_mask;
    unsigned nbuckets;
    unsigned nslices; /* time slices per bucket, newest first (parallelism without salt) */
    int64_t slice_hours;
    uint64_t max_dps;
    uint64_t max_bytes;   /* qexec_options.max_bytes or the metric's override */
    uint64_t deadline_ns; /* 0 = none */
    bool keep_rows;       /* remember each row's hour (delete queries) */
    bool histo;           /* keep the rows' histogram cells (a histogram sub-query) */
    /* downsampling inside the scan (row_downsample): the interval divides an hour, so every
     * bucket lies in one row and a row's buckets are final */
    const struct qagg_ds *ds;   /* NULL: series keep their raw points */
    int64_t ds_seek_ms;         /* the Downsampler's first bucket start */
    enum qagg_stream ds_stream; /* ds->fn folded in one pass, or QAGG_STREAM_NO */
    atomic_int stop;
    /* the ingest head (qexec_options.head; NULL: none): the series of this sub-query it holds
     * points of in [head_start_ms, head_end_ms] (the scan window's whole hours), picked before
     * the scan (qexec_head_collect) and merged into the sets after it (qexec_head_merge) */
    struct head *head;
    uint8_t **head_ts;
    size_t *head_tl;
    size_t nhead, head_cap;
    /* series i's points as head_copy() bytes [head_off[i], head_off[i + 1]) of head_copy (a few
     * bytes a point; read with head_iter over the window), head_np[i] of them */
    uint8_t *head_copy;
    size_t *head_off, *head_np, head_copy_cap;
    int64_t head_start_ms, head_end_ms;
    /* per bucket */
    struct xset *sets;
    int *rcs;
    struct ct_err *errs;
    struct qpool_job job; /* on the executor (qexec_options.pool) */
    /* what the scan threads write, on a cache line of its own: a count added per row next to
     * the fields every row reads (ds, max_dps, stop) made the other thread miss on them */
    _Alignas(64) atomic_uint next_bucket;
    atomic_uint_fast64_t dps;
    atomic_uint_fast64_t rows;
    atomic_uint_fast64_t scanners;   /* opened: one per piece of work (bucket, time slice) */
    atomic_uint_fast64_t key_ranges; /* the row ranges they read (1 for a start/stop scan) */
};

/* One scan's memo of a row filter's decisions by series (qexec_rf_memo_init, then
 * qexec_rf_memo_filter as the scan's wc_row_filter_fn with the memo as its argument), for a
 * filter that decides on the key's metric and tags alone, not its salt or hour
 * (rowkey_filter_match, the series lists): it decides the same for every hour of a series, so
 * each series is judged once and its later rows cost a hash and a compare (a filtered scan
 * meets a series once an hour: 720 times over 30 days). Two ways of QEXEC_RF_MEMO_SETS sets (a
 * series' set from a hash of its tag bytes, the older way replaced): a scan meeting many more
 * series an hour than that would miss on almost every row, so after its first
 * QEXEC_RF_MEMO_TRIAL rows a memo that answered fewer than half of them stops looking (every
 * row then goes to the filter, as without a memo). Invariant: a way holds the metric and tag
 * bytes of a key the filter judged and that decision; keys longer than QEXEC_RF_MEMO_KEY bytes
 * of metric and tags are judged every time. On the scan's stack (about 17 KB): one thread, no
 * lock. */
#define QEXEC_RF_MEMO_SETS  128
#define QEXEC_RF_MEMO_KEY   64
#define QEXEC_RF_MEMO_TRIAL 512
struct qexec_rf_memo {
    wc_row_filter_fn fn;
    void *arg;
    size_t mstart, mlen;   /* the metric's bytes in a key */
    size_t tstart;         /* where the tag pairs start */
    uint32_t looked, hits; /* counted over the trial */
    bool off;              /* the trial failed: every row goes to fn */
    struct {
        uint8_t older; /* the way to replace next */
        struct {
            uint8_t len; /* metric + tag bytes held; 0 = empty */
            uint8_t decision;
            uint8_t key[QEXEC_RF_MEMO_KEY];
        } way[2];
    } set[QEXEC_RF_MEMO_SETS];
};
void qexec_rf_memo_init(struct qexec_rf_memo *m, const struct rowkey_layout *l, wc_row_filter_fn fn,
                        void *arg);
enum wc_row_decision qexec_rf_memo_filter(void *arg, const uint8_t *row, size_t len);
/* The set a key of at least the tag pairs' offset would be held in (tests). */
size_t qexec_rf_memo_set_of(const struct qexec_rf_memo *m, const uint8_t *row, size_t len);

typedef int (*qexec_group_fn)(void *arg, struct xsub *xs, struct xser **ser, size_t n);

void qexec_xset_clear(struct xset *x);
size_t qexec_series_finish_size(const struct xser *s);
int qexec_series_finish(struct xser *s, struct qagg_point **dst, struct ct_err *err);
int qexec_tsuid_cmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl);
int qexec_xset_merge(struct xset *dst, struct xset *src, struct ct_err *err);
/* Threads a query's parallel parts may use: qexec_options.scan_threads, else the executor's
 * (qpool_threads), or one when the executor says every CPU is already busy (then *busy is set;
 * busy may be NULL). */
unsigned qexec_query_threads(const struct qexec_options *o, bool *busy);
/* Transforms each series of a group (downsample, rate) and aggregates it through xo; consumes
 * the series' points (rates are taken in place), so a group runs once. */
int qexec_run_group(const struct qspec *q, const struct xsub *xs, struct xser **ser, size_t n,
                    struct xout *xo, struct ct_err *err);
int qexec_group_tags(struct xser **ser, size_t n, const char ***tk, const char ***tv, size_t *ntags,
                     const char ***agg, size_t *nagg);
int qexec_for_each_group(struct xsub *xs, qexec_group_fn fn, void *arg);
/* Writes sub-query xs's groups to w->j (qexec_out.c), after the groups written before (w->first
 * false once one was), adding their statistics to w->st and xs->st. */
int qexec_write_groups(const struct qexec_options *o, struct xsub *xs, struct wctx *w);
/* A growing memory buffer (p, n bytes of cap, malloc'd) and its qjson sink. */
struct qexec_mbuf {
    char *p;
    size_t n, cap;
};
int qexec_mbuf_sink(void *arg, const char *data, size_t len);
/* Writes a histogram sub-query's group (qexec_histo.c): one series per percentile, and per
 * bucket with showHistogramBuckets, with the group's tags; *emitted += the points written. */
int qexec_histo_write_group(const struct qspec *q, const struct xsub *xs, struct xser **ser,
                            size_t n, const struct gann *globals, struct qjson *j, bool *first,
                            const char **tk, const char **tv, size_t ntk, const char **ag,
                            size_t nag, uint64_t *emitted, struct ct_err *err);
/* Java's Float.toString for the values percentiles and bucket bounds take (qexec_histo.c): the
 * shortest decimal that reads back as the same float, with ".0" when it has no fraction (values
 * past 1e7 or below 1e-3 keep C's exponent form, where Java writes 1.0E7). */
void qexec_float_text(float f, char *out, size_t cap);
/* What an answer series carries between its aggregateTags and its dps (qexec_out.c), the same
 * for datapoint and histogram series: with show_query the sub-query's echo, with show_tsuids
 * the group's tsuids, unless no_annotations the group's annotations in the range, and the
 * global annotations (globals, may be NULL); each written as ",\"key\":...". */
/* A series' opening: {"metric":..,"tags":{..},"aggregateTags":[..] (the caller goes on with
 * the extras and "dps"). */
void qexec_write_series_names(struct qjson *j, const char *metric, const char **tk, const char **tv,
                              size_t ntk, const char **ag, size_t nag);
int qexec_write_series_extras(struct qjson *j, const struct qspec *q, const struct qspec_sub *sub,
                              struct xser **ser, size_t n, const struct gann *globals,
                              struct ct_err *err);
/* With show_stats, a series' ",\"stats\":{\"emittedDPs\":N,\"queryIndex\":I}" after its dps. */
void qexec_write_series_stats(struct qjson *j, const struct qspec *q, const struct qspec_sub *sub,
                              uint64_t emitted);
/* The largest (qexec_max_no_nan) or smallest (qexec_min_no_nan) of v[0..n), n >= 1, none NaN,
 * with the bits of the strict-comparison loop (`r = v[j] > r ? v[j] : r` from r = v[0]): two
 * lanes of maxpd / minpd, then that loop whenever the result is zero (+0 and -0 compare equal,
 * and the loop keeps the first one met; other equal doubles have equal bits). A bucket's 60
 * points take about 15 instructions instead of 60 for the loop. */
static inline double qexec_extreme_no_nan(const double *v, size_t n, bool max)
{
    size_t j = 1;
    double r = v[0];
#if defined(__SSE2__)
    if (n >= 8) {
        __m128d a = _mm_loadu_pd(v), b = _mm_loadu_pd(v + 2);
        for (j = 4; j + 4 <= n; j += 4) {
            __m128d x = _mm_loadu_pd(v + j), y = _mm_loadu_pd(v + j + 2);
            a = max ? _mm_max_pd(a, x) : _mm_min_pd(a, x);
            b = max ? _mm_max_pd(b, y) : _mm_min_pd(b, y);
        }
        double t[2];
        _mm_storeu_pd(t, max ? _mm_max_pd(a, b) : _mm_min_pd(a, b));
        r = (max ? t[0] > t[1] : t[0] < t[1]) ? t[0] : t[1];
        for (; j < n; j++)
            r = (max ? v[j] > r : v[j] < r) ? v[j] : r;
        if (r != 0)
            return r;
        j = 1;
        r = v[0];
    }
#endif
    for (; j < n; j++)
        r = (max ? v[j] > r : v[j] < r) ? v[j] : r;
    return r;
}

static inline double qexec_max_no_nan(const double *v, size_t n)
{
    return qexec_extreme_no_nan(v, n, true);
}

static inline double qexec_min_no_nan(const double *v, size_t n)
{
    return qexec_extreme_no_nan(v, n, false);
}

/* Whether salt bucket b may hold a series of the sub-query (xscan.bucket_mask). */
static inline bool qexec_bucket_wanted(const struct xscan *x, unsigned b)
{
    return b >= 64 || (x->bucket_mask >> b & 1);
}
void qexec_scan_thread(void *arg);
/* Picks the head's series of the scan (x->head set, x->rf / x->tsuids planned, window set): the
 * metric's series the row filter accepts that hold points in the window's hours. */
int qexec_head_collect(struct xscan *x, struct ct_err *err);
/* Counts the head points read (qexec_head_collect) against the query's limits, once the
 * limits are set, as stored points are counted: CT_ELIMIT past the datapoint or byte limit,
 * whichever path (the raw merge, qrollup's fold) then uses them. */
int qexec_head_count(struct xscan *x, struct ct_err *err);
/* An iterator over head series i's points in the window (head_iter_next). */
void qexec_head_iter(const struct xscan *x, size_t i, struct head_iter *it);
/* After the scan and the time slices' merge: puts the picked series' head points into the
 * sets (a stored point with the same timestamp gives way: the head's is newer; they were
 * counted by qexec_head_count). */
int qexec_head_merge(struct xscan *x, struct ct_err *err);
void qexec_head_free(struct xscan *x);
/* Gathers a global annotation (tsdb_annotation_scan callback) into the struct gann at arg. */
int qexec_collect_global(void *arg, const uint8_t *tsuid, size_t tsuid_len, int64_t start_ms,
                         const char *json, size_t json_len);

#endif
