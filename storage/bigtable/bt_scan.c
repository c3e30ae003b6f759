/* bt_scan.c - scanners (and so gets) over Bigtable ReadRows.
 *
 * A scan becomes one ReadRows request: the row set (the start/stop/prefix range intersected, in
 * either direction; or every non-empty range of a multi-range scan, wc_scan_options.ranges, in
 * one RowSet, which the service reads in the scan's direction), a filter that selects families
 * and columns, the time range, the qualifier prefix and range, TTL expiry (when MIN_VERSIONS is
 * 0) and the per-column version limit, and a row limit when nothing is filtered client-side.
 * Answers go through the chunk merger; each committed row then passes the caller's row filter and
 * the read rules of docs/storage-contract.md, "What a read returns", again on the client (Bigtable
 * garbage-collects lazily, MIN_VERSIONS has no filter, and the client check makes results exact
 * whatever the server applied).
 *
 * Retries: a stream that fails with a retryable status (or sends nothing for deadline_ms) is
 * re-issued for the rows after the last committed key, with backoff, up to BT_RETRY_ATTEMPTS
 * times without progress: ranges wholly before that key (in the scan's direction) are dropped
 * from the row set and the one holding it is cut after it. Rows already handed out are never
 * repeated.
 *
 * Invariants: (1) cells handed out are in "Cell order"; (2) rows handed out are strictly
 * ordered in the scan's direction (the merger checks the service); (3) `req` always describes
 * the rows not yet committed; (4) rg holds nrg non-empty, disjoint ranges in ascending order. A
 * scanner is used by one thread at a time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/bigtable/bt_int.h"
#include "storage/bigtable/bt_merge.h"
#include "storage/clock.h"

/* One end of a row range; len 0 = unbounded. */
struct bt_bound {
    struct bt_buf key;
    bool closed;
};

/* One row range of the request, never empty (bt_range_empty). */
struct bt_range {
    struct bt_bound lo, hi;
};

struct bt_scanner {
    struct wc_scanner base;
    struct bt_table *t;
    struct wc_scan_options o;
    struct wc_family_desc *fams;
    size_t nfams;
    int64_t now_ms;
    /* the row ranges not yet read, ascending: one for a start/stop/prefix scan, the non-empty
     * ones of wc_scan_options.ranges for a multi-range scan (nrg 0: nothing to read) */
    struct bt_range *rg;
    size_t nrg;
    bool empty;
    bool done;
    bool push_limit;
    struct bt_merge *merge;
    struct bt_call *call;
    int failures; /* consecutive failed attempts without progress */
    uint64_t progress_ns; /* monotonic time of the first attempt or of the last progress: no
                           * retry starts once deadline_ms has passed since (one deadline
                           * bounds a stalled scan, whatever its attempts) */
    uint64_t committed_at_start;
    uint64_t rows_returned;
    struct bt_buf req;
    struct bt_arena arena; /* decodes one ReadRowsResponse at a time */
    struct bt_buf scanned; /* last_scanned_row_key sent with no row in progress (len 0: none) */
    /* the row being handed out (batch_cells splits it) */
    struct wc_cell *cells;
    size_t ncells, cells_cap, pos;
    struct bt_buf rowkey;
    bool row_open;
};

static int bt_bytes_cmp(struct wc_bytes a, struct wc_bytes b)
{
    size_t n = a.len < b.len ? a.len : b.len;
    int c = n ? memcmp(a.data, b.data, n) : 0;
    if (c)
        return c;
    return a.len < b.len ? -1 : a.len > b.len;
}

static struct wc_bytes bt_bound_key(const struct bt_bound *b)
{
    return wc_bytes_of(b->key.p, b->key.len);
}

static int bt_bound_set(struct bt_bound *b, struct wc_bytes key, bool closed)
{
    b->key.len = 0;
    if (bt_buf_append(&b->key, key.data, key.len) == SIZE_MAX)
        return -1;
    b->closed = closed;
    return 0;
}

/* next(p): drop trailing 0xFF bytes, increment the last remaining byte; len 0 if none. */
static size_t bt_prefix_next(struct wc_bytes p, uint8_t *out)
{
    size_t n = p.len;
    while (n > 0 && p.data[n - 1] == 0xFF)
        n--;
    if (n == 0)
        return 0;
    memcpy(out, p.data, n);
    out[n - 1]++;
    return n;
}

/* Tightens lo to (key, closed) if that is higher. */
static int bt_raise_lo(struct bt_bound *lo, struct wc_bytes key, bool closed)
{
    if (!key.len)
        return 0;
    if (lo->key.len) {
        int c = bt_bytes_cmp(key, bt_bound_key(lo));
        if (c < 0 || (c == 0 && (closed || !lo->closed)))
            return 0;
    }
    return bt_bound_set(lo, key, closed);
}

static int bt_lower_hi(struct bt_bound *hi, struct wc_bytes key, bool closed)
{
    if (!key.len)
        return 0;
    if (hi->key.len) {
        int c = bt_bytes_cmp(key, bt_bound_key(hi));
        if (c > 0 || (c == 0 && (closed || !hi->closed)))
            return 0;
    }
    return bt_bound_set(hi, key, closed);
}

static bool bt_range_empty(const struct bt_bound *lo, const struct bt_bound *hi)
{
    if (!lo->key.len || !hi->key.len)
        return false;
    int c = bt_bytes_cmp(bt_bound_key(lo), bt_bound_key(hi));
    return c > 0 || (c == 0 && !(lo->closed && hi->closed));
}

static const struct wc_family_desc *bt_scan_family(const struct bt_scanner *sc,
                                                   struct wc_bytes name)
{
    for (size_t i = 0; i < sc->nfams; i++)
        if (strlen(sc->fams[i].name) == name.len &&
            (name.len == 0 || !memcmp(sc->fams[i].name, name.data, name.len)))
            return &sc->fams[i];
    return NULL;
}

/* Whether family f is read whole (no column list, or listed as a family). */
static bool bt_family_whole(const struct wc_scan_options *o, const char *f)
{
    if (!o->ncolumns)
        return true;
    for (size_t i = 0; i < o->ncolumns; i++)
        if (!o->columns[i].has_qualifier && o->columns[i].family.len == strlen(f) &&
            !memcmp(o->columns[i].family.data, f, strlen(f)))
            return true;
    return false;
}

static bool bt_family_selected(const struct wc_scan_options *o, const char *f)
{
    if (bt_family_whole(o, f))
        return true;
    for (size_t i = 0; i < o->ncolumns; i++)
        if (o->columns[i].family.len == strlen(f) &&
            !memcmp(o->columns[i].family.data, f, strlen(f)))
            return true;
    return false;
}

/* The client-side column checks: column list, qualifier prefix, qualifier range. */
static bool bt_cell_selected(const struct wc_scan_options *o, const struct wc_family_desc *f,
                             struct wc_bytes q)
{
    if (!bt_family_whole(o, f->name)) {
        bool found = false;
        for (size_t i = 0; i < o->ncolumns && !found; i++)
            found = o->columns[i].has_qualifier && o->columns[i].family.len == strlen(f->name) &&
                    !memcmp(o->columns[i].family.data, f->name, strlen(f->name)) &&
                    !bt_bytes_cmp(o->columns[i].qualifier, q);
        if (!found)
            return false;
    }
    if (o->qualifier_prefix.len &&
        (q.len < o->qualifier_prefix.len ||
         memcmp(q.data, o->qualifier_prefix.data, o->qualifier_prefix.len)))
        return false;
    if (o->has_qualifier_range) {
        if (o->qualifier_min.len) {
            int c = bt_bytes_cmp(q, o->qualifier_min);
            if (c < 0 || (c == 0 && !o->qualifier_min_inclusive))
                return false;
        }
        if (o->qualifier_max.len) {
            int c = bt_bytes_cmp(q, o->qualifier_max);
            if (c > 0 || (c == 0 && !o->qualifier_max_inclusive))
                return false;
        }
    }
    return true;
}

static uint32_t bt_max_versions(const struct wc_scan_options *o, const struct wc_family_desc *f)
{
    return o->raw || o->max_versions < f->versions ? o->max_versions : f->versions;
}

static int64_t bt_oldest_ms(const struct wc_family_desc *f, int64_t now_ms)
{
    return f->ttl_s >= WC_TTL_FOREVER ? INT64_MIN : now_ms - f->ttl_s * 1000;
}

Btpb__RowFilter *bt_filter_new(struct bt_pool *p)
{
    Btpb__RowFilter *f = bt_pool_alloc(p, sizeof(*f));
    if (f)
        btpb__row_filter__init(f);
    return f;
}

Btpb__RowFilter *bt_filter_column_range(struct bt_pool *p, const char *family, struct wc_bytes lo,
                                        bool lo_set, bool lo_closed, struct wc_bytes hi,
                                        bool hi_set, bool hi_closed)
{
    Btpb__RowFilter *f = bt_filter_new(p);
    Btpb__ColumnRange *cr = bt_pool_alloc(p, sizeof(*cr));
    if (!f || !cr)
        return NULL;
    btpb__column_range__init(cr);
    cr->family_name = bt_pool_strndup(p, family, strlen(family));
    if (!cr->family_name)
        return NULL;
    if (lo_set) {
        cr->start_qualifier_case = lo_closed
                                       ? BTPB__COLUMN_RANGE__START_QUALIFIER_START_QUALIFIER_CLOSED
                                       : BTPB__COLUMN_RANGE__START_QUALIFIER_START_QUALIFIER_OPEN;
        ProtobufCBinaryData b = {lo.len, (uint8_t *)lo.data};
        if (lo_closed)
            cr->start_qualifier_closed = b;
        else
            cr->start_qualifier_open = b;
    }
    if (hi_set) {
        cr->end_qualifier_case = hi_closed ? BTPB__COLUMN_RANGE__END_QUALIFIER_END_QUALIFIER_CLOSED
                                           : BTPB__COLUMN_RANGE__END_QUALIFIER_END_QUALIFIER_OPEN;
        ProtobufCBinaryData b = {hi.len, (uint8_t *)hi.data};
        if (hi_closed)
            cr->end_qualifier_closed = b;
        else
            cr->end_qualifier_open = b;
    }
    f->filter_case = BTPB__ROW_FILTER__FILTER_COLUMN_RANGE_FILTER;
    f->column_range_filter = cr;
    return f;
}

Btpb__RowFilter *bt_filter_group(struct bt_pool *p, Btpb__RowFilter **fs, size_t n, bool chain)
{
    if (n == 1)
        return fs[0];
    Btpb__RowFilter *f = bt_filter_new(p);
    Btpb__RowFilter **arr = bt_pool_alloc(p, n * sizeof(*arr));
    if (!f || !arr)
        return NULL;
    memcpy(arr, fs, n * sizeof(*arr));
    if (chain) {
        Btpb__RowFilter__Chain *c = bt_pool_alloc(p, sizeof(*c));
        if (!c)
            return NULL;
        btpb__row_filter__chain__init(c);
        c->n_filters = n;
        c->filters = arr;
        f->filter_case = BTPB__ROW_FILTER__FILTER_CHAIN;
        f->chain = c;
    } else {
        Btpb__RowFilter__Interleave *c = bt_pool_alloc(p, sizeof(*c));
        if (!c)
            return NULL;
        btpb__row_filter__interleave__init(c);
        c->n_filters = n;
        c->filters = arr;
        f->filter_case = BTPB__ROW_FILTER__FILTER_INTERLEAVE;
        f->interleave = c;
    }
    return f;
}

/* The time window [start_us, end_us) (end 0 = open) and version limit a family reads with. */
struct bt_tail {
    int64_t start_us, end_us;
    uint32_t maxv;
};

static struct bt_tail bt_family_tail(const struct wc_scan_options *o,
                                     const struct wc_family_desc *fam, int64_t now_ms)
{
    struct bt_tail t;
    int64_t start_ms = o->tmin_ms;
    int64_t oldest = bt_oldest_ms(fam, now_ms);
    if (fam->min_versions == 0 && !o->raw && oldest > start_ms)
        start_ms = oldest;
    t.end_us = o->tmax_ms > BT_MAX_TS_MS ? 0 : o->tmax_ms * 1000;
    t.start_us = start_ms <= 0 ? 0 : start_ms >= INT64_MAX / 1000 ? INT64_MAX : start_ms * 1000;
    t.maxv = bt_max_versions(o, fam);
    return t;
}

/* Appends the time-range and version-limit filters of a tail to parts. */
static int bt_filter_tail(struct bt_pool *p, struct bt_tail tl, Btpb__RowFilter **parts, size_t *np)
{
    if (tl.start_us || tl.end_us) {
        Btpb__RowFilter *tf = bt_filter_new(p);
        Btpb__TimestampRange *tr = bt_pool_alloc(p, sizeof(*tr));
        if (!tf || !tr)
            return -1;
        btpb__timestamp_range__init(tr);
        tr->start_timestamp_micros = tl.start_us;
        tr->end_timestamp_micros = tl.end_us;
        if (tl.end_us && tl.start_us >= tl.end_us) { /* nothing can match: keep it valid */
            tf->filter_case = BTPB__ROW_FILTER__FILTER_BLOCK_ALL_FILTER;
            tf->block_all_filter = 1;
        } else {
            tf->filter_case = BTPB__ROW_FILTER__FILTER_TIMESTAMP_RANGE_FILTER;
            tf->timestamp_range_filter = tr;
        }
        parts[(*np)++] = tf;
    }
    if (tl.maxv < INT32_MAX) {
        Btpb__RowFilter *lf = bt_filter_new(p);
        if (!lf)
            return -1;
        lf->filter_case = BTPB__ROW_FILTER__FILTER_CELLS_PER_COLUMN_LIMIT_FILTER;
        lf->cells_per_column_limit_filter = (int32_t)tl.maxv;
        parts[(*np)++] = lf;
    }
    return 0;
}

/* The filter for one family: its selection (name, or columns, qualifier prefix and range, which
 * name the family themselves), then its time range and version limit. */
static Btpb__RowFilter *bt_filter_family(struct bt_pool *p, const struct wc_scan_options *o,
                                         const struct wc_family_desc *fam, int64_t now_ms)
{
    Btpb__RowFilter *parts[6];
    size_t np = 0;
    bool named = false; /* a column range already restricts the family */
    if (!bt_family_whole(o, fam->name)) {
        Btpb__RowFilter **cols = bt_pool_alloc(p, (o->ncolumns ? o->ncolumns : 1) * sizeof(*cols));
        size_t nc = 0;
        if (!cols)
            return NULL;
        for (size_t i = 0; i < o->ncolumns; i++) {
            const struct wc_column *c = &o->columns[i];
            if (!c->has_qualifier || c->family.len != strlen(fam->name) ||
                memcmp(c->family.data, fam->name, c->family.len))
                continue;
            if (!(cols[nc++] = bt_filter_column_range(p, fam->name, c->qualifier, true, true,
                                                      c->qualifier, true, true)))
                return NULL;
        }
        if (!(parts[np++] = bt_filter_group(p, cols, nc, false)))
            return NULL;
        named = true;
    }
    if (o->qualifier_prefix.len) {
        uint8_t *next = bt_pool_alloc(p, o->qualifier_prefix.len);
        if (!next)
            return NULL;
        size_t nl = bt_prefix_next(o->qualifier_prefix, next);
        if (!(parts[np++] = bt_filter_column_range(p, fam->name, o->qualifier_prefix, true, true,
                                                   wc_bytes_of(next, nl), nl > 0, false)))
            return NULL;
        named = true;
    }
    if (o->has_qualifier_range) {
        if (!(parts[np++] =
                  bt_filter_column_range(p, fam->name, o->qualifier_min, o->qualifier_min.len > 0,
                                         o->qualifier_min_inclusive, o->qualifier_max,
                                         o->qualifier_max.len > 0, o->qualifier_max_inclusive)))
            return NULL;
        named = true;
    }
    if (!named) {
        Btpb__RowFilter *f = bt_filter_new(p);
        char re[2 * WC_MAX_FAMILY_BYTES + 8];
        bt_family_regex(fam->name, re, sizeof(re));
        if (!f || !(f->family_name_regex_filter = bt_pool_strndup(p, re, strlen(re))))
            return NULL;
        f->filter_case = BTPB__ROW_FILTER__FILTER_FAMILY_NAME_REGEX_FILTER;
        parts[np++] = f;
    }
    if (bt_filter_tail(p, bt_family_tail(o, fam, now_ms), parts, &np))
        return NULL;
    return bt_filter_group(p, parts, np, true);
}

/* The whole-scan filter. When every family is read whole with the same time window and version
 * limit (the usual case: one family), one chain without family names does; regular-expression
 * family filters cost the service far more than the limits themselves. */
static Btpb__RowFilter *bt_filter_scan(struct bt_pool *p, const struct bt_scanner *sc,
                                       Btpb__RowFilter **fs)
{
    const struct wc_scan_options *o = &sc->o;
    bool uniform = sc->nfams > 0 && !o->qualifier_prefix.len && !o->has_qualifier_range;
    struct bt_tail first = {0, 0, 0};
    for (size_t i = 0; i < sc->nfams && uniform; i++) {
        struct bt_tail tl = bt_family_tail(o, &sc->fams[i], sc->now_ms);
        if (i == 0)
            first = tl;
        uniform = bt_family_whole(o, sc->fams[i].name) && tl.start_us == first.start_us &&
                  tl.end_us == first.end_us && tl.maxv == first.maxv;
    }
    if (uniform) {
        Btpb__RowFilter *parts[2];
        size_t np = 0;
        if (bt_filter_tail(p, first, parts, &np))
            return NULL;
        if (np)
            return bt_filter_group(p, parts, np, true);
        Btpb__RowFilter *all = bt_filter_new(p);
        if (all) {
            all->filter_case = BTPB__ROW_FILTER__FILTER_PASS_ALL_FILTER;
            all->pass_all_filter = 1;
        }
        return all;
    }
    size_t nf = 0;
    for (size_t i = 0; i < sc->nfams; i++) {
        if (!bt_family_selected(o, sc->fams[i].name))
            continue;
        if (!(fs[nf++] = bt_filter_family(p, o, &sc->fams[i], sc->now_ms)))
            return NULL;
    }
    if (nf)
        return bt_filter_group(p, fs, nf, false);
    Btpb__RowFilter *none = bt_filter_new(p);
    if (none) {
        none->filter_case = BTPB__ROW_FILTER__FILTER_BLOCK_ALL_FILTER;
        none->block_all_filter = 1;
    }
    return none;
}

/* Encodes the ReadRows request for the rows not yet committed into sc->req. */
static int bt_scan_build(struct bt_scanner *sc, struct ct_err *err)
{
    struct bt_pool pool = {0};
    int rc = CT_ENOMEM;
    Btpb__ReadRowsRequest rq;
    btpb__read_rows_request__init(&rq);
    rq.table_name = sc->t->path;
    rq.reversed = sc->o.reversed;
    Btpb__RowSet rs;
    btpb__row_set__init(&rs);
    Btpb__RowRange *rr = calloc(sc->nrg, sizeof(*rr));
    Btpb__RowRange **rrp = calloc(sc->nrg, sizeof(*rrp));
    Btpb__RowFilter **fs = NULL;
    if (!rr || !rrp)
        goto done;
    for (size_t i = 0; i < sc->nrg; i++) {
        const struct bt_range *g = &sc->rg[i];
        btpb__row_range__init(&rr[i]);
        rrp[i] = &rr[i];
        if (g->lo.key.len) {
            ProtobufCBinaryData b = {g->lo.key.len, g->lo.key.p};
            rr[i].start_key_case = g->lo.closed ? BTPB__ROW_RANGE__START_KEY_START_KEY_CLOSED
                                                : BTPB__ROW_RANGE__START_KEY_START_KEY_OPEN;
            if (g->lo.closed)
                rr[i].start_key_closed = b;
            else
                rr[i].start_key_open = b;
        }
        if (g->hi.key.len) {
            ProtobufCBinaryData b = {g->hi.key.len, g->hi.key.p};
            rr[i].end_key_case = g->hi.closed ? BTPB__ROW_RANGE__END_KEY_END_KEY_CLOSED
                                              : BTPB__ROW_RANGE__END_KEY_END_KEY_OPEN;
            if (g->hi.closed)
                rr[i].end_key_closed = b;
            else
                rr[i].end_key_open = b;
        }
    }
    /* no row set reads the whole table: only for one unbounded range (bt_scan_start never
     * builds a request for none) */
    if (sc->nrg > 1 || sc->rg[0].lo.key.len || sc->rg[0].hi.key.len) {
        rs.n_row_ranges = sc->nrg;
        rs.row_ranges = rrp;
        rq.rows = &rs;
    }
    fs = calloc(sc->nfams ? sc->nfams : 1, sizeof(*fs));
    if (!fs || !(rq.filter = bt_filter_scan(&pool, sc, fs)))
        goto done;
    if (sc->push_limit && sc->o.limit_rows)
        rq.rows_limit = (int64_t)(sc->o.limit_rows - (bt_merge_committed(sc->merge)));
    rc = bt_pack(&rq.base, &sc->req, err);
done:
    free(fs);
    free(rrp);
    free(rr);
    bt_pool_free(&pool);
    if (rc == CT_ENOMEM && err->code != CT_ENOMEM)
        return ct_err_set(err, CT_ENOMEM, "out of memory building a ReadRows request");
    return rc;
}

static int bt_scan_start(struct bt_scanner *sc, struct ct_err *err)
{
    /* resume after the last committed row, or after the last row the service said it scanned
     * (it may have read far past it through rows the filter dropped), whichever is further */
    struct wc_bytes last = bt_merge_last_key(sc->merge);
    if (sc->scanned.len) {
        struct wc_bytes sk = wc_bytes_of(sc->scanned.p, sc->scanned.len);
        int c = bt_bytes_cmp(sk, last);
        if (!last.len || (sc->o.reversed ? c < 0 : c > 0))
            last = sk;
    }
    if (last.len) {
        /* every range past `last` in the scan's direction is cut to what follows it, and
         * dropped once nothing does (a range read whole, or the one read up to `last`) */
        size_t keep = 0;
        for (size_t i = 0; i < sc->nrg; i++) {
            struct bt_range *g = &sc->rg[i];
            int r = sc->o.reversed ? bt_lower_hi(&g->hi, last, false)
                                   : bt_raise_lo(&g->lo, last, false);
            if (r)
                return ct_err_set(err, CT_ENOMEM, "out of memory resuming a scan");
            if (bt_range_empty(&g->lo, &g->hi)) {
                bt_buf_free(&g->lo.key);
                bt_buf_free(&g->hi.key);
                continue;
            }
            sc->rg[keep++] = *g;
        }
        sc->nrg = keep;
        if (!sc->nrg || (sc->push_limit && sc->o.limit_rows &&
                         bt_merge_committed(sc->merge) >= sc->o.limit_rows)) {
            sc->done = true;
            return CT_OK;
        }
    }
    int rc = bt_scan_build(sc, err);
    if (rc != CT_OK)
        return rc;
    struct bt_md md[2] = {
        {"x-goog-request-params", sc->t->routing},
        {"bigtable-features", "CAE="}, /* FeatureFlags{reverse_scans: true} */
    };
    sc->committed_at_start = bt_merge_committed(sc->merge);
    if (!sc->progress_ns)
        sc->progress_ns = clock_mono_ns();
    return bt_call_start(sc->t->s->rpc, BT_CHANNEL_DATA, BT_METHOD_DATA "ReadRows", md, 2,
                         sc->req.p, sc->req.len, 0, &sc->call, err);
}

/* Feeds one ReadRowsResponse to the merger. */
static int bt_scan_feed(struct bt_scanner *sc, struct wc_bytes msg, struct ct_err *err)
{
    bt_arena_reset(&sc->arena);
    Btpb__ReadRowsResponse *r =
        btpb__read_rows_response__unpack(&sc->arena.alloc, msg.len, msg.data);
    if (!r)
        return ct_err_set(err, sc->arena.failed ? CT_ENOMEM : CT_ECORRUPT,
                          "cannot decode a ReadRows answer of %zu bytes", msg.len);
    int rc = CT_OK;
    for (size_t i = 0; i < r->n_chunks && rc == CT_OK; i++) {
        const Btpb__ReadRowsResponse__CellChunk *c = r->chunks[i];
        struct bt_chunk ch;
        memset(&ch, 0, sizeof(ch));
        ch.row_key = wc_bytes_of(c->row_key.data, c->row_key.len);
        ch.has_family = c->family_name != NULL;
        if (c->family_name)
            ch.family = wc_bytes_str(c->family_name->value);
        ch.has_qualifier = c->qualifier != NULL;
        if (c->qualifier)
            ch.qualifier = wc_bytes_of(c->qualifier->value.data, c->qualifier->value.len);
        ch.ts_us = c->timestamp_micros;
        ch.nlabels = c->n_labels;
        if (c->n_labels)
            ch.label = wc_bytes_str(c->labels[0]);
        ch.value = wc_bytes_of(c->value.data, c->value.len);
        ch.value_size = c->value_size;
        ch.reset_row =
            c->row_status_case == BTPB__READ_ROWS_RESPONSE__CELL_CHUNK__ROW_STATUS_RESET_ROW &&
            c->reset_row;
        ch.commit_row =
            c->row_status_case == BTPB__READ_ROWS_RESPONSE__CELL_CHUNK__ROW_STATUS_COMMIT_ROW &&
            c->commit_row;
        rc = bt_merge_feed(sc->merge, &ch, err);
    }
    /* a scanned-row marker counts only when no row is half-received (then every row up to it
     * was committed or filtered out) */
    if (rc == CT_OK && r->last_scanned_row_key.len && bt_merge_idle(sc->merge)) {
        sc->scanned.len = 0;
        if (bt_buf_append(&sc->scanned, r->last_scanned_row_key.data,
                          r->last_scanned_row_key.len) == SIZE_MAX)
            sc->scanned.len = 0; /* only an optimisation: resume from the committed row */
    }
    bt_arena_reset(&sc->arena); /* the merger copied what it keeps */
    return rc;
}

/* Gets more committed rows into the merger: CT_OK (maybe none yet), CT_NOTFOUND at the end. */
static int bt_scan_fill(struct bt_scanner *sc, struct ct_err *err)
{
    if (sc->done)
        return CT_NOTFOUND;
    int rc;
    if (!sc->call && (rc = bt_scan_start(sc, err)) != CT_OK)
        return rc;
    if (sc->done)
        return CT_NOTFOUND;
    struct wc_bytes msg;
    rc = bt_call_recv(sc->call, sc->t->s->deadline_ms, &msg, err);
    if (rc == CT_OK)
        return bt_scan_feed(sc, msg, err);
    int code = BT_GRPC_DEADLINE_EXCEEDED;
    if (rc == CT_NOTFOUND) {
        rc = bt_call_finish(sc->call, &code, err);
        if (rc == CT_OK) {
            bt_call_free(sc->call);
            sc->call = NULL;
            sc->done = true;
            rc = bt_merge_finish(sc->merge, err);
            return rc == CT_OK ? CT_NOTFOUND : rc;
        }
    } else if (rc != CT_EUNAVAIL) { /* no answer within the wait */
        return rc;
    }
    bt_call_free(sc->call);
    sc->call = NULL;
    if (bt_merge_committed(sc->merge) > sc->committed_at_start) {
        sc->failures = 0;
        sc->progress_ns = clock_mono_ns();
    }
    bool spent = clock_mono_ns() - sc->progress_ns >= (uint64_t)sc->t->s->deadline_ms * 1000000u;
    if (!bt_rpc_retryable(code, err->msg) || ++sc->failures >= BT_RETRY_ATTEMPTS || spent)
        return ct_err_prefix(err, "scan of %s (after %d attempts)", sc->t->full, sc->failures);
    bt_merge_restart(sc->merge);
    bt_backoff(sc->failures);
    return CT_OK;
}

static int bt_cell_order(const void *a, const void *b)
{
    const struct wc_cell *x = a, *y = b;
    int c = bt_bytes_cmp(x->family, y->family);
    if (c)
        return c;
    if ((c = bt_bytes_cmp(x->qualifier, y->qualifier)))
        return c;
    return x->ts_ms > y->ts_ms ? -1 : x->ts_ms < y->ts_ms;
}

/* Turns a merged row into the cells a reader may see ("What a read returns", for puts). */
static int bt_scan_row(struct bt_scanner *sc, struct wc_bytes key, const struct bt_cell *in,
                       size_t n, struct ct_err *err)
{
    if (bt_grow((void **)&sc->cells, &sc->cells_cap, n ? n : 1, sizeof(*sc->cells)))
        return ct_err_set(err, CT_ENOMEM, "out of memory for a row of %zu cells", n);
    sc->rowkey.len = 0;
    if (bt_buf_append(&sc->rowkey, key.data, key.len) == SIZE_MAX)
        return ct_err_set(err, CT_ENOMEM, "out of memory for a row key");
    struct wc_bytes rk = wc_bytes_of(sc->rowkey.p, key.len);
    bool sorted = true;
    for (size_t i = 0; i < n; i++) {
        struct wc_cell *c = &sc->cells[i];
        c->row = rk;
        c->family = in[i].family;
        c->qualifier = in[i].qualifier;
        c->value = in[i].value;
        c->ts_ms = in[i].ts_us >= 0 ? in[i].ts_us / 1000 : -((-in[i].ts_us + 999) / 1000);
        c->type = WC_TYPE_PUT;
        if (i && bt_cell_order(&sc->cells[i - 1], c) > 0)
            sorted = false;
    }
    if (!sorted) /* the service orders families its own way */
        qsort(sc->cells, n, sizeof(*sc->cells), bt_cell_order);
    size_t out = 0, count = 0;
    const struct wc_family_desc *fam = NULL;
    for (size_t i = 0; i < n; i++) {
        struct wc_cell c = sc->cells[i];
        bool new_col = i == 0 || bt_bytes_cmp(c.family, sc->cells[i - 1].family) ||
                       bt_bytes_cmp(c.qualifier, sc->cells[i - 1].qualifier);
        if (i == 0 || bt_bytes_cmp(c.family, sc->cells[i - 1].family))
            fam = bt_scan_family(sc, c.family);
        if (new_col)
            count = 0;
        if (!fam || !bt_family_selected(&sc->o, fam->name) ||
            !bt_cell_selected(&sc->o, fam, c.qualifier))
            continue;
        int64_t oldest = sc->o.raw ? INT64_MIN : bt_oldest_ms(fam, sc->now_ms);
        uint32_t minv = fam->min_versions;
        if (minv == 0 && c.ts_ms < oldest)
            continue;
        if (c.ts_ms >= sc->o.tmax_ms || c.ts_ms < sc->o.tmin_ms)
            continue;
        count++;
        if (count > bt_max_versions(&sc->o, fam))
            continue;
        if ((count <= minv || c.ts_ms >= oldest) &&
            (!sc->o.cell_filter || sc->o.cell_filter(sc->o.cell_filter_arg, &c)))
            sc->cells[out++] = c;
    }
    sc->ncells = out;
    sc->pos = 0;
    sc->row_open = out > 0;
    return CT_OK;
}

int bt_scanner_next(struct wc_scanner *base, struct wc_row *row, struct ct_err *err)
{
    struct bt_scanner *sc = (struct bt_scanner *)base;
    for (;;) {
        if (sc->row_open) {
            size_t take = sc->ncells - sc->pos;
            if (sc->o.batch_cells && take > sc->o.batch_cells)
                take = sc->o.batch_cells;
            row->key = wc_bytes_of(sc->rowkey.p, sc->rowkey.len);
            row->cells = sc->cells + sc->pos;
            row->ncells = take;
            sc->pos += take;
            if (sc->pos >= sc->ncells)
                sc->row_open = false;
            return CT_OK;
        }
        if (sc->empty || (sc->o.limit_rows && sc->rows_returned >= sc->o.limit_rows))
            return CT_NOTFOUND;
        struct wc_bytes key;
        const struct bt_cell *cells;
        size_t n;
        int rc = bt_merge_pop(sc->merge, &key, &cells, &n);
        if (rc == CT_ENOMEM)
            return ct_err_set(err, CT_ENOMEM, "out of memory handing out a row");
        if (rc == CT_NOTFOUND) {
            rc = bt_scan_fill(sc, err);
            if (rc == CT_NOTFOUND && bt_merge_pending(sc->merge))
                continue;
            if (rc != CT_OK)
                return rc;
            continue;
        }
        if (sc->o.row_filter) {
            enum wc_row_decision d = sc->o.row_filter(sc->o.row_filter_arg, key.data, key.len);
            if (d == WC_ROW_SKIP)
                continue;
            if (d == WC_ROW_STOP) {
                sc->empty = true;
                return CT_NOTFOUND;
            }
        }
        if ((rc = bt_scan_row(sc, key, cells, n, err)) != CT_OK)
            return rc;
        if (sc->row_open)
            sc->rows_returned++;
    }
}

void bt_scanner_close(struct wc_scanner *base)
{
    struct bt_scanner *sc = (struct bt_scanner *)base;
    if (!sc)
        return;
    bt_call_free(sc->call);
    bt_merge_free(sc->merge);
    free(sc->fams);
    for (size_t i = 0; i < sc->nrg; i++) {
        bt_buf_free(&sc->rg[i].lo.key);
        bt_buf_free(&sc->rg[i].hi.key);
    }
    free(sc->rg);
    bt_buf_free(&sc->req);
    bt_arena_destroy(&sc->arena);
    bt_buf_free(&sc->scanned);
    bt_buf_free(&sc->rowkey);
    free(sc->cells);
    free(sc);
}

/* Bigtable row keys are at most 4 KiB, and it refuses longer range keys: a longer lower bound K
 * admits exactly the rows above K's first 4 KiB, a longer upper bound the rows up to and
 * including them. */
static void bt_range_clip(struct bt_range *g)
{
    if (g->lo.key.len > BT_MAX_ROW_KEY_BYTES) {
        g->lo.key.len = BT_MAX_ROW_KEY_BYTES;
        g->lo.closed = false;
    }
    if (g->hi.key.len > BT_MAX_ROW_KEY_BYTES) {
        g->hi.key.len = BT_MAX_ROW_KEY_BYTES;
        g->hi.closed = true;
    }
}

/* The scan's row ranges into sc->rg (empty ones left out): the start/stop/prefix range
 * (intersected, in either direction), or each of o->ranges (wc.c checked their order). */
static int bt_scan_ranges(struct bt_scanner *sc, const struct wc_scan_options *o,
                          struct ct_err *err)
{
    size_t n = o->nranges ? o->nranges : 1;
    if (!(sc->rg = calloc(n, sizeof(*sc->rg))))
        return ct_err_set(err, CT_ENOMEM, "out of memory opening a scanner");
    int mem = 0;
    for (size_t i = 0; i < o->nranges; i++) {
        struct bt_range *g = &sc->rg[sc->nrg++];
        mem |= bt_raise_lo(&g->lo, o->ranges[i].start, true);
        mem |= bt_lower_hi(&g->hi, o->ranges[i].stop, false);
        bt_range_clip(g);
        if (!mem && bt_range_empty(&g->lo, &g->hi)) {
            bt_buf_free(&g->lo.key);
            bt_buf_free(&g->hi.key);
            sc->nrg--;
        }
    }
    if (o->nranges)
        return mem ? ct_err_set(err, CT_ENOMEM, "out of memory opening a scanner") : CT_OK;
    struct bt_range *g = &sc->rg[sc->nrg++];
    if (o->reversed) {
        mem |= bt_lower_hi(&g->hi, o->start_row, true);
        mem |= bt_raise_lo(&g->lo, o->stop_row, false);
    } else {
        mem |= bt_raise_lo(&g->lo, o->start_row, true);
        mem |= bt_lower_hi(&g->hi, o->stop_row, false);
    }
    if (o->row_prefix.len) {
        uint8_t *next = malloc(o->row_prefix.len);
        if (!next)
            return ct_err_set(err, CT_ENOMEM, "out of memory opening a scanner");
        size_t nl = bt_prefix_next(o->row_prefix, next);
        mem |= bt_raise_lo(&g->lo, o->row_prefix, true);
        mem |= bt_lower_hi(&g->hi, wc_bytes_of(next, nl), false);
        free(next);
    }
    if (mem)
        return ct_err_set(err, CT_ENOMEM, "out of memory opening a scanner");
    bool empty = bt_range_empty(&g->lo, &g->hi);
    if (!o->reversed && o->start_row.len && o->stop_row.len &&
        bt_bytes_cmp(o->start_row, o->stop_row) >= 0)
        empty = true;
    if (o->reversed && o->start_row.len && o->stop_row.len &&
        bt_bytes_cmp(o->start_row, o->stop_row) <= 0)
        empty = true;
    bt_range_clip(g);
    if (empty || bt_range_empty(&g->lo, &g->hi)) {
        bt_buf_free(&g->lo.key);
        bt_buf_free(&g->hi.key);
        sc->nrg--;
    }
    return CT_OK;
}

int bt_scanner_open(struct wc_table *tbase, const struct wc_scan_options *o,
                    struct wc_scanner **out, struct ct_err *err)
{
    struct bt_table *t = (struct bt_table *)tbase;
    int rc0 = bt_table_check_enabled(t, err);
    if (rc0 != CT_OK)
        return rc0;
    struct bt_scanner *sc = calloc(1, sizeof(*sc));
    if (!sc)
        return ct_err_set(err, CT_ENOMEM, "out of memory opening a scanner");
    sc->base.ops = t->base.ops;
    sc->t = t;
    sc->o = *o;
    sc->now_ms = clock_now_ms();
    bt_arena_init(&sc->arena);
    int rc = bt_table_families(t, &sc->fams, &sc->nfams, err);
    if (rc != CT_OK)
        goto fail;
    for (size_t i = 0; i < o->ncolumns; i++)
        if (!bt_scan_family(sc, o->columns[i].family)) {
            rc = bt_table_refresh(t, err);
            if (rc == CT_OK) {
                free(sc->fams);
                sc->fams = NULL;
                rc = bt_table_families(t, &sc->fams, &sc->nfams, err);
            }
            if (rc != CT_OK)
                goto fail;
            if (!bt_scan_family(sc, o->columns[i].family)) {
                rc = ct_err_set(err, CT_EINVAL, "Unknown column family %.*s in table %s",
                                (int)o->columns[i].family.len,
                                (const char *)o->columns[i].family.data, t->full);
                goto fail;
            }
        }
    if ((rc = bt_merge_new(o->reversed, &sc->merge, err)) != CT_OK)
        goto fail;
    if ((rc = bt_scan_ranges(sc, o, err)) != CT_OK)
        goto fail;
    /* push the row limit down only when the client drops no row the service returns */
    sc->push_limit = !o->row_filter && !o->cell_filter;
    for (size_t i = 0; i < sc->nfams; i++)
        if (sc->fams[i].min_versions > 0 && sc->fams[i].ttl_s < WC_TTL_FOREVER)
            sc->push_limit = false;
    if (!sc->nrg)
        sc->empty = sc->done = true;
    *out = &sc->base;
    return CT_OK;
fail:
    bt_scanner_close(&sc->base);
    return rc;
}
