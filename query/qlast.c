/* qlast.c - see qlast.h.
 * A TSUID query reads the series' own hour rows with point gets, newest hour first, and stops at
 * the first hour holding a point. Without back_scan, a metric query takes its series and their
 * newest hour from one scan of the metric's newest-hour index entries; those of the last
 * QLAST_DEFAULT_BACK_SCAN_H hours are read by the back scan below over the hours they span, the
 * rest (and any it missed) like a TSUID from their newest hour down. Entries keep their TSUIDs
 * in chunks (struct lastset), so an entry is a few dozen bytes, not a widest-layout TSUID. With a back_scan (or a metric without index entries), it scans each
 * salt bucket's row keys of the back-scan window in reverse (newest first) with the literal tags
 * as a row filter that lets through only each series' newest row and skips the series' older
 * rows unread; a cell filter folds the newest row's cells into its newest point
 * (dpcodec_newest) as the scan walks them, leaving every cell out, so no cell is copied and no
 * row comes back; a series whose newest row held no point is then read as a TSUID query reads
 * it, from the hour before down (when the tags pin the leading tag keys, only the key ranges
 * that can hold a matching row are scanned: one multi-range scanner per bucket).
 * Invariants: (1) the answer is each sub-query's answer in request order, as OpenTSDB's list of
 * results keeps them (a series named by two sub-queries, or listed twice in one, is answered each
 * time); a metric sub-query answers each matching series once, sorted by TSUID bytes; (2) a
 * sub-query listing TSUIDs ignores its metric and tags (QueryRpc: TSUIDs take precedence);
 * (3) nothing is written to the output before every read is done, so a bounded run that stops at
 * its budget (qlast_run_bounded: struct qlast_limit counts key ranges and point reads, row keys
 * and cells) has written nothing. */
#include "query/qlast.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "query/qindex.h"
#include "schema/dpcodec.h"
#include "schema/head.h"
#include "schema/meta.h"
#include "schema/rowkey.h"
#include "schema/uid.h"
#include "storage/clock.h"
#include "storage/coding.h"
#include "storage/hash.h"

/* The strings of a request, copied into chunks that live as long as it (a query of a metric and
 * four tags made 17 allocations with a strndup per string and a realloc per tag). */
struct qlast_strs {
    struct qlast_strs *next;
    size_t used, cap;
    char data[];
};

static char *req_strndup(struct qlast_req *r, const char *s, size_t n)
{
    struct qlast_strs *c = r->strs;
    if (!c || c->cap - c->used < n + 1) {
        size_t cap = n + 1 > 512 ? n + 1 : 512;
        if (!(c = malloc(sizeof(*c) + cap)))
            return NULL;
        c->next = r->strs;
        c->used = 0;
        c->cap = cap;
        r->strs = c;
    }
    char *d = c->data + c->used;
    memcpy(d, s, n);
    d[n] = '\0';
    c->used += n + 1;
    return d;
}

/* Makes room for one more entry in an array of *cap (doubling from 4); false when out of
 * memory. */
static bool grow_ptrs(char ***a, size_t n, size_t *cap)
{
    if (n < *cap)
        return true;
    size_t nc = *cap ? *cap * 2 : 4;
    char **na = realloc(*a, nc * sizeof(char *));
    if (!na)
        return false;
    *a = na;
    *cap = nc;
    return true;
}

void qlast_req_free(struct qlast_req *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nq; i++) {
        free(r->q[i].tagk);
        free(r->q[i].tagv);
        free(r->q[i].tsuids);
    }
    free(r->q);
    while (r->strs) {
        struct qlast_strs *n = r->strs->next;
        free(r->strs);
        r->strs = n;
    }
    free(r);
}

static int add_query(struct qlast_req *r, struct qlast_query **out, struct ct_err *err)
{
    struct qlast_query *nq = realloc(r->q, (r->nq + 1) * sizeof(*nq));
    if (!nq)
        return ct_err_set(err, CT_ENOMEM, "out of memory parsing a last-point query");
    r->q = nq;
    memset(&r->q[r->nq], 0, sizeof(*nq));
    *out = &r->q[r->nq++];
    return CT_OK;
}

static int add_tag(struct qlast_req *r, struct qlast_query *q, const char *k, size_t kl,
                   const char *v, size_t vl, struct ct_err *err)
{
    size_t kcap = q->tags_cap;
    if (!grow_ptrs(&q->tagk, q->ntags, &kcap) || !grow_ptrs(&q->tagv, q->ntags, &q->tags_cap))
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    if (!(q->tagk[q->ntags] = req_strndup(r, k, kl)) ||
        !(q->tagv[q->ntags] = req_strndup(r, v, vl)))
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    q->ntags++;
    return CT_OK;
}

static int add_tsuid(struct qlast_req *r, struct qlast_query *q, const char *s, size_t len,
                     struct ct_err *err)
{
    if (!grow_ptrs(&q->tsuids, q->ntsuids, &q->tsuids_cap) ||
        !(q->tsuids[q->ntsuids] = req_strndup(r, s, len)))
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    q->ntsuids++;
    return CT_OK;
}

/* "metric{k=v,k2=v2}" */
static int parse_timeseries(struct qlast_req *r, const char *s, struct qlast_query *q,
                            struct ct_err *err)
{
    const char *brace = strchr(s, '{');
    size_t ml = brace ? (size_t)(brace - s) : strlen(s);
    if (ml == 0)
        return ct_err_set(err, CT_EINVAL, "Missing metric in timeseries: %s", s);
    if (!(q->metric = req_strndup(r, s, ml)))
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    if (!brace)
        return CT_OK;
    size_t len = strlen(s);
    if (s[len - 1] != '}')
        return ct_err_set(err, CT_EINVAL, "Missing '}' at the end of: %s", s);
    const char *p = brace + 1, *end = s + len - 1;
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *e = comma ? comma : end;
        const char *eq = memchr(p, '=', (size_t)(e - p));
        if (!eq || eq == p || eq + 1 == e)
            return ct_err_set(err, CT_EINVAL, "invalid tag: %.*s", (int)(e - p), p);
        int rc = add_tag(r, q, p, (size_t)(eq - p), eq + 1, (size_t)(e - eq - 1), err);
        if (rc != CT_OK)
            return rc;
        p = comma ? comma + 1 : end;
    }
    return CT_OK;
}

int qlast_parse_params(qspec_param_fn get, void *arg, struct qlast_req **out, struct ct_err *err)
{
    struct qlast_req *r = calloc(1, sizeof(*r));
    if (!r)
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    int rc = CT_OK;
    const char *v;
    for (size_t i = 0; rc == CT_OK && (v = get(arg, "timeseries", i)) != NULL; i++) {
        struct qlast_query *q;
        if ((rc = add_query(r, &q, err)) == CT_OK)
            rc = parse_timeseries(r, v, q, err);
    }
    for (size_t i = 0; rc == CT_OK && (v = get(arg, "tsuids", i)) != NULL; i++) {
        struct qlast_query *q;
        if ((rc = add_query(r, &q, err)) != CT_OK)
            break;
        const char *p = v;
        while (rc == CT_OK && p && *p) {
            const char *c = strchr(p, ',');
            size_t l = c ? (size_t)(c - p) : strlen(p);
            if (l)
                rc = add_tsuid(r, q, p, l, err);
            p = c ? c + 1 : NULL;
        }
    }
    /* QueryRpc.handleLastDataPointQuery's check, for both forms */
    if (rc == CT_OK && r->nq == 0)
        rc = ct_err_set(err, CT_EINVAL, "Missing sub queries");
    /* as QueryRpc.parseLastPointQuery: resolve is on when present (whatever its value), and
     * back_scan is any int (Integer.parseInt: an optional sign, digits, 32 bits); one not above
     * 0 means the default window, as a missing one */
    r->resolve = get(arg, "resolve", 0) != NULL;
    const char *bs = get(arg, "back_scan", 0);
    if (rc == CT_OK && bs) {
        char *end;
        errno = 0;
        long long b = strtoll(bs, &end, 10);
        if (!*bs || isspace((unsigned char)*bs) || *end || errno || b < INT32_MIN || b > INT32_MAX)
            rc = ct_err_set(err, CT_EINVAL, "Unable to parse back_scan parameter");
        else
            r->back_scan_h = b > 0 ? b : 0;
    }
    if (rc != CT_OK) {
        qlast_req_free(r);
        return rc;
    }
    *out = r;
    return CT_OK;
}

int qlast_parse_json(const char *body, size_t len, struct qlast_req **out, struct ct_err *err)
{
    if (!body || !len)
        return ct_err_set(err, CT_EINVAL, "Missing message content");
    cJSON *root = cJSON_ParseWithLength(body, len);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return ct_err_set(err, CT_EINVAL, "Unable to parse the given JSON");
    }
    struct qlast_req *r = calloc(1, sizeof(*r));
    int rc = CT_OK;
    if (!r) {
        cJSON_Delete(root);
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    }
    const cJSON *qs = cJSON_GetObjectItemCaseSensitive(root, "queries"), *jq;
    cJSON_ArrayForEach(jq, qs)
    {
        struct qlast_query *q;
        if ((rc = add_query(r, &q, err)) != CT_OK)
            break;
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(jq, "metric");
        if (cJSON_IsString(m) && *m->valuestring &&
            !(q->metric = req_strndup(r, m->valuestring, strlen(m->valuestring)))) {
            rc = ct_err_set(err, CT_ENOMEM, "out of memory");
            break;
        }
        const cJSON *tags = cJSON_GetObjectItemCaseSensitive(jq, "tags"), *t;
        cJSON_ArrayForEach(t, tags)
        {
            if (!cJSON_IsString(t)) {
                rc = ct_err_set(err, CT_EINVAL, "Unable to parse the given JSON");
                break;
            }
            if ((rc = add_tag(r, q, t->string, strlen(t->string), t->valuestring,
                              strlen(t->valuestring), err)) != CT_OK)
                break;
        }
        const cJSON *ts = cJSON_GetObjectItemCaseSensitive(jq, "tsuids");
        cJSON_ArrayForEach(t, ts)
        {
            if (cJSON_IsString(t) &&
                (rc = add_tsuid(r, q, t->valuestring, strlen(t->valuestring), err)) != CT_OK)
                break;
        }
        if (rc != CT_OK)
            break;
        if (!q->metric && !q->ntsuids) {
            rc = ct_err_set(err, CT_EINVAL, "Missing metric or tsuids in a last point query");
            break;
        }
    }
    if (rc == CT_OK && r->nq == 0)
        rc = ct_err_set(err, CT_EINVAL, "Missing sub queries");
    r->resolve = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "resolveNames")) ||
                 cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "resolve"));
    const cJSON *bs = cJSON_GetObjectItemCaseSensitive(root, "backScan");
    if (rc == CT_OK && bs) {
        if (!cJSON_IsNumber(bs) || bs->valuedouble < INT32_MIN || bs->valuedouble > INT32_MAX)
            rc = ct_err_set(err, CT_EINVAL, "Unable to parse back_scan parameter");
        else /* an int field: one not above 0 means the default window (the GET form too) */
            r->back_scan_h = bs->valuedouble > 0 ? (int64_t)bs->valuedouble : 0;
    }
    cJSON_Delete(root);
    if (rc != CT_OK) {
        qlast_req_free(r);
        return rc;
    }
    *out = r;
    return CT_OK;
}

/* ---- running ---------------------------------------------------------------------------- */

struct lastpt {
    const uint8_t *tsuid; /* in its set's TSUID chunks */
    size_t len;
    struct dpcodec_point p;
    /* a discovery entry (struct lastfind.found): p.ts_ms is the series' newest hour (s), and
     * what the discovery scan made of that hour's row */
    enum {
        ROW_UNREAD,
        ROW_NO_POINT,
        ROW_POINT
    } row;
};

/* Series and their points: a[0, n), of which a[base, n) is the current sub-query's part, the
 * only one the hash table (slots hold index + 1) knows, so a series is unique within it. */
struct lastset {
    struct lastpt *a;
    size_t n, cap;
    size_t base;
    struct hashset ht;         /* of a[base, n), by TSUID */
    struct qlast_strs *tsuids; /* the entries' TSUIDs, in chunks that never move */
};

static void lastset_free(struct lastset *s)
{
    free(s->a);
    hashset_destroy(&s->ht);
    while (s->tsuids) {
        struct qlast_strs *n = s->tsuids->next;
        free(s->tsuids);
        s->tsuids = n;
    }
}

/* A copy of ts in s's TSUID chunks (NULL when out of memory). */
static const uint8_t *lastset_keep(struct lastset *s, const uint8_t *ts, size_t len)
{
    struct qlast_strs *c = s->tsuids;
    if (!c || c->cap - c->used < len) {
        size_t cap = len > 16384 ? len : 16384;
        if (!(c = malloc(sizeof(*c) + cap)))
            return NULL;
        c->next = s->tsuids;
        c->used = 0;
        c->cap = cap;
        s->tsuids = c;
    }
    uint8_t *d = (uint8_t *)c->data + c->used;
    memcpy(d, ts, len);
    c->used += len;
    return d;
}

static uint64_t lastset_hash_of(void *arg, size_t i)
{
    const struct lastset *s = arg;
    return hash_bytes(s->a[i].tsuid, s->a[i].len, 0);
}

static bool lastset_eq(void *arg, size_t i, const void *key, size_t len)
{
    const struct lastpt *e = &((const struct lastset *)arg)->a[i];
    return e->len == len && !memcmp(e->tsuid, key, len);
}

/* The entry of a series in the current part: its index in s->a, or -1 if absent (*h is then
 * its free hash slot). Grows the hash table first when needed; -2 on allocation failure. */
static long lastset_find(struct lastset *s, const uint8_t *ts, size_t len, size_t *h)
{
    struct ct_err err;
    if (hashset_reserve(&s->ht, 16, lastset_hash_of, s, &err) != CT_OK)
        return -2;
    return hashset_find(&s->ht, hash_bytes(ts, len, 0), lastset_eq, s, ts, len, h);
}

/* Appends a series absent from s (h from lastset_find); -1 on allocation failure. */
static int lastset_insert(struct lastset *s, size_t h, const uint8_t *ts, size_t len,
                          const struct dpcodec_point *p)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 16;
        struct lastpt *na = realloc(s->a, nc * sizeof(*na));
        if (!na)
            return -1;
        s->a = na;
        s->cap = nc;
    }
    if (!(s->a[s->n].tsuid = lastset_keep(s, ts, len)))
        return -1;
    s->a[s->n].len = len;
    s->a[s->n].p = *p;
    s->a[s->n].row = ROW_UNREAD;
    hashset_insert_at(&s->ht, h, s->n);
    s->n++;
    return 0;
}

/* Adds a series' point unless the series is already there; returns 1 if added, 0 if present,
 * -1 on allocation failure. */
static int lastset_add(struct lastset *s, const uint8_t *ts, size_t len,
                       const struct dpcodec_point *p)
{
    size_t h = 0;
    long i = lastset_find(s, ts, len, &h);
    if (i == -2)
        return -1;
    if (i >= 0)
        return 0;
    return lastset_insert(s, h, ts, len, p) ? -1 : 1;
}

/* The most point gets (series x hours of the window) a back-scan metric query reads through
 * the tag index instead of scanning (last_of_metric, step 0). */
#define QLAST_INDEX_GETS 128

/* A run's budget (qlast_run_bounded) and what it used so far; b NULL = unbounded. */
struct qlast_limit {
    const struct qlast_budget *b;
    uint32_t scans, rows;
    uint32_t series; /* found by the discovery scans of earlier sub-queries */
    size_t cells;
    uint64_t deadline_ns; /* clock_mono_ns() past which the run stops; 0 = none */
    bool over_time;       /* a discovery scan stopped at the deadline */
    bool over_rows;       /* a discovery scan stopped at max_rows */
    bool over_reads;      /* ... at more series than row reads left */
};

/* Counts n scans (a point read, or a discovery scanner's key ranges) against the budget:
 * CT_ELIMIT when they would pass it, or when the run is past its deadline. */
static int limit_scans(struct qlast_limit *lim, size_t n, struct ct_err *err)
{
    if (!lim->b)
        return CT_OK;
    if ((lim->scans += (uint32_t)n) > lim->b->max_scans || n > lim->b->max_scans)
        return ct_err_set(err, CT_ELIMIT, "last query: more than %u row reads",
                          (unsigned)lim->b->max_scans);
    if (lim->deadline_ns && clock_mono_ns() > lim->deadline_ns)
        return ct_err_set(err, CT_ELIMIT, "last query: more than %llu us",
                          (unsigned long long)(lim->b->max_ns / 1000));
    return CT_OK;
}

/* The newest point of a row's cells (CT_NOTFOUND if none): the point the range queries'
 * decoding of the row puts last (dpcodec_newest: the same duplicate rule and errors). */
static int row_last(int64_t base_s, const struct wc_cell *cells, size_t n,
                    struct dpcodec_point *out, struct ct_err *err)
{
    struct dpcodec_newest nw;
    dpcodec_newest_init(&nw);
    for (size_t i = 0; i < n; i++) {
        int rc = dpcodec_newest_add(&nw, base_s, &cells[i], err);
        if (rc != CT_OK)
            return rc;
    }
    return dpcodec_newest_get(&nw, out) ? CT_OK : CT_NOTFOUND;
}

static int hex_to_bytes(const char *h, uint8_t *out, size_t cap, size_t *len)
{
    size_t hl = strlen(h);
    if (hl % 2 || hl / 2 > cap || hl == 0)
        return -1;
    for (size_t i = 0; i < hl / 2; i++) {
        unsigned v;
        if (sscanf(h + 2 * i, "%2x", &v) != 1)
            return -1;
        out[i] = (uint8_t)v;
    }
    *len = hl / 2;
    return 0;
}

/* The series' newest point in its hour rows from top_h down to bottom_h, read with point gets
 * newest first (stopping at the first hour holding a point); added to set. */
static int last_by_gets(struct tsdb *t, const uint8_t *ts, size_t tl, int64_t top_h,
                        int64_t bottom_h, struct lastset *set, struct qlast_limit *lim,
                        enum qexec_status *status, struct ct_err *err)
{
    const struct rowkey_layout *l = tsdb_layout(t);
    struct wc_column col = {wc_bytes_str(TSDB_DATA_FAMILY), {NULL, 0}, false};
    struct wc_scan_options so;
    wc_scan_options_init(&so);
    so.columns = &col;
    so.ncolumns = 1;
    for (int64_t h = top_h; h >= bottom_h; h -= ROWKEY_HOUR_S) {
        uint8_t key[ROWKEY_MAX_BYTES];
        size_t kl = rowkey_encode(l, ts, tl, h, key);
        struct wc_result res;
        int rc = limit_scans(lim, 1, err);
        if (rc == CT_OK)
            rc = wc_get(tsdb_data_table(t), wc_bytes_of(key, kl), &so, &res, err);
        if (rc != CT_OK) {
            *status = QEXEC_INTERNAL;
            return rc;
        }
        /* a row's size is known only once it is read: a bounded run stops at the row that
         * takes it past max_cells (that row, one series-hour, is read once) */
        if (lim->b && (lim->cells += res.row.ncells) > lim->b->max_cells) {
            wc_result_release(&res);
            *status = QEXEC_INTERNAL;
            return ct_err_set(err, CT_ELIMIT, "last query: more than %u cells read",
                              (unsigned)lim->b->max_cells);
        }
        struct dpcodec_point p;
        rc = res.row.ncells ? row_last(h, res.row.cells, res.row.ncells, &p, err) : CT_NOTFOUND;
        wc_result_release(&res);
        if (rc == CT_OK) {
            if (lastset_add(set, ts, tl, &p) < 0)
                return ct_err_set(err, CT_ENOMEM, "out of memory");
            return CT_OK;
        }
        if (rc != CT_NOTFOUND) {
            *status = QEXEC_INTERNAL;
            return rc;
        }
    }
    return CT_OK;
}

/* A TSUID query: back_h hours back from now, or (back_h 0) from the series' newest hour in the
 * newest-hour index (schema/meta.h) down QLAST_DEFAULT_BACK_SCAN_H hours, or from now when the
 * index has no entry for it (a series last written before the index existed). */
static int last_of_tsuid(struct tsdb *t, const char *hex, int64_t now_s, int64_t back_h,
                         struct lastset *set, struct qlast_limit *lim, enum qexec_status *status,
                         struct ct_err *err)
{
    const struct rowkey_layout *l = tsdb_layout(t);
    uint8_t ts[ROWKEY_MAX_TSUID];
    size_t tl;
    size_t pair = l->tagk_width + l->tagv_width;
    if (hex_to_bytes(hex, ts, sizeof(ts), &tl) != 0 || tl < l->metric_width + pair ||
        (tl - l->metric_width) % pair) {
        *status = QEXEC_BAD_REQUEST;
        return ct_err_set(err, CT_EINVAL, "Invalid TSUID: %s", hex);
    }
    int64_t top = rowkey_base_hour_s(now_s);
    if (back_h == 0) {
        int64_t h;
        int rc = limit_scans(lim, 1, err);
        if (rc == CT_OK)
            rc = meta_hour_get(t, ts, tl, &h, err);
        if (rc == CT_OK)
            top = h;
        else if (rc != CT_NOTFOUND) {
            *status = QEXEC_INTERNAL;
            return rc;
        }
        back_h = QLAST_DEFAULT_BACK_SCAN_H;
    }
    return last_by_gets(t, ts, tl, top, top - back_h * ROWKEY_HOUR_S, set, lim, status, err);
}

/* What the discovery scan of a metric query collects: each matching series, with the newest
 * hour in which it has a row (in p.ts_ms) and what the scan made of that row. */
struct lastfind {
    const struct rowkey_layout *l;
    const struct rowkey_filter *rf;
    struct lastset found;
    bool oom;
    struct qlast_limit *lim;
    /* the row the scan is reading (lastfind_filter let it through): its entry in found (-1:
     * none), its base hour and its newest point so far, folded in by lastfind_cell */
    long cur;
    int64_t cur_base;
    struct dpcodec_newest nw;
    int rc; /* the first error of lastfind_cell (in *err) */
    struct ct_err *err;
};

/* Ends the row the scan was reading: its series gets the row's newest point (ROW_POINT), or
 * ROW_NO_POINT when none of its cells held one (then point gets read the hours before); a row
 * that showed no cell at all stays ROW_UNREAD (read again by a get, as before). */
static void lastfind_end_row(struct lastfind *f)
{
    if (f->cur < 0)
        return;
    struct lastpt *e = &f->found.a[f->cur];
    if (dpcodec_newest_get(&f->nw, &e->p)) {
        e->row = ROW_POINT;
    } else if (f->nw.ncells) {
        e->row = ROW_NO_POINT;
    }
    f->cur = -1;
}

/* The discovery scan's row filter: records the row's series and hour, and lets the scan read
 * only a series' first row (WC_ROW_INCLUDE); every other key is WC_ROW_SKIP, so none of its cells
 * is read or copied. Keys arrive in descending order, so within a salt bucket, which holds all of
 * a series' rows, a series' first key is its newest hour. */
static enum wc_row_decision lastfind_filter(void *arg, const uint8_t *row, size_t len)
{
    struct lastfind *f = arg;
    struct qlast_limit *lim = f->lim;
    lastfind_end_row(f);
    if (f->rc != CT_OK)
        return WC_ROW_STOP;
    if (lim->b && ++lim->rows > lim->b->max_rows) {
        lim->over_rows = true;
        return WC_ROW_STOP;
    }
    /* stepping from key to key costs the engine up to a row's cells (a reversed scan walks
     * back over them): the deadline bounds what the key count does not */
    if (lim->deadline_ns && clock_mono_ns() > lim->deadline_ns) {
        lim->over_time = true;
        return WC_ROW_STOP;
    }
    if (f->oom || !rowkey_filter_match(f->rf, row, len))
        return WC_ROW_SKIP;
    uint8_t ts[ROWKEY_MAX_TSUID];
    size_t tl = rowkey_tsuid_of(f->l, row, len, ts, sizeof(ts));
    if (!tl)
        return WC_ROW_SKIP;
    size_t h = 0;
    /* the key fits the layout (rowkey_filter_match checked it) */
    int64_t base = coding_get_be32(row + f->l->salt_width + f->l->metric_width);
    long i = lastset_find(&f->found, ts, tl, &h);
    if (i == -2) {
        f->oom = true;
    } else if (i < 0) {
        /* each series found takes at least one row read: a bounded run stops as soon as it
         * cannot afford them */
        if (lim->b && (lim->scans + f->found.n + 1 > lim->b->max_scans ||
                       lim->series + f->found.n + 1 > lim->b->max_series)) {
            lim->over_reads = true;
            return WC_ROW_STOP;
        }
        struct dpcodec_point p;
        memset(&p, 0, sizeof(p));
        p.ts_ms = base;
        if (lastset_insert(&f->found, h, ts, tl, &p) != 0) {
            f->oom = true;
            return WC_ROW_SKIP;
        }
        f->cur = (long)f->found.n - 1;
        f->cur_base = base;
        dpcodec_newest_init(&f->nw);
        return WC_ROW_INCLUDE; /* the series' newest hour: read it in this scan */
    }
    return WC_ROW_SKIP;
}

/* The discovery scan's cell filter: folds each cell of the row being read (the newest hour of
 * a series it found) into the row's newest point, and leaves every cell out, so that the scan
 * copies none and returns no row (the engine hands the cells in place). The row read itself is
 * the one every series found is counted for (lastfind_filter, last_of_metric); its cells are
 * counted here. */
static bool lastfind_cell(void *arg, const struct wc_cell *cell)
{
    struct lastfind *f = arg;
    struct qlast_limit *lim = f->lim;
    if (f->cur < 0 || f->rc != CT_OK)
        return false;
    if (lim->b && ++lim->cells > lim->b->max_cells) {
        f->rc = ct_err_set(f->err, CT_ELIMIT, "last query: more than %u cells read",
                           (unsigned)lim->b->max_cells);
        return false;
    }
    f->rc = dpcodec_newest_add(&f->nw, f->cur_base, cell, f->err);
    return false;
}

/* The metric's uid and a row filter of its literal tags, in *metric and *out (freed with
 * rowkey_filter_free). An unknown name is a bad request (CT_EINVAL, err names it). */
static int metric_filter(struct tsdb *t, const struct qlast_query *q, uint64_t *metric,
                         struct rowkey_filter **out, enum qexec_status *status, struct ct_err *err)
{
    struct uid *u = tsdb_uid(t);
    int rc = uid_get_id(u, UID_METRIC, q->metric, strlen(q->metric), metric, err);
    if (rc != CT_OK) {
        *status = rc == CT_NOTFOUND ? QEXEC_BAD_REQUEST : QEXEC_INTERNAL;
        return rc == CT_NOTFOUND ? CT_EINVAL : rc;
    }
    struct rowkey_filter *rf = NULL;
    if ((rc = rowkey_filter_new(tsdb_layout(t), &rf, err)) != CT_OK)
        return rc;
    rowkey_filter_set_metric(rf, *metric);
    for (size_t i = 0; i < q->ntags && rc == CT_OK; i++) {
        uint64_t k, v;
        rc = uid_get_id(u, UID_TAGK, q->tagk[i], strlen(q->tagk[i]), &k, err);
        if (rc == CT_OK)
            rc = uid_get_id(u, UID_TAGV, q->tagv[i], strlen(q->tagv[i]), &v, err);
        if (rc == CT_OK)
            rc = rowkey_filter_add(rf, k, &v, 1, false, err);
    }
    if (rc != CT_OK) {
        rowkey_filter_free(rf);
        *status = rc == CT_NOTFOUND ? QEXEC_BAD_REQUEST : QEXEC_INTERNAL;
        return rc == CT_NOTFOUND ? CT_EINVAL : rc;
    }
    *out = rf;
    return CT_OK;
}

/* Why a discovery scan (of the data rows or of the newest-hour index) stopped early, as an
 * error: out of memory, or the bound of a bounded run it met; CT_OK if it did not. */
static int scan_stop_error(const struct qlast_limit *lim, bool oom, struct ct_err *err)
{
    if (oom)
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    if (lim->over_rows)
        return ct_err_set(err, CT_ELIMIT, "last query: more than %u row keys",
                          (unsigned)lim->b->max_rows);
    if (lim->over_time)
        return ct_err_set(err, CT_ELIMIT, "last query: more than %llu us",
                          (unsigned long long)(lim->b->max_ns / 1000));
    if (lim->over_reads)
        return ct_err_set(err, CT_ELIMIT, "last query: more than %u row reads or %u series",
                          (unsigned)lim->b->max_scans, (unsigned)lim->b->max_series);
    return CT_OK;
}

/* What the newest-hour index scan of a metric query collects: the matching series with their
 * newest hour (in p.ts_ms), and how many index entries the metric has at all. */
struct lastidx {
    struct tsdb *t;
    const struct rowkey_filter *rf;
    struct lastset found;
    size_t entries;
    bool oom;
    struct qlast_limit *lim;
};

static int lastidx_entry(void *arg, const uint8_t *ts, size_t tl, int64_t base_s)
{
    struct lastidx *x = arg;
    struct qlast_limit *lim = x->lim;
    x->entries++;
    if (lim->b && ++lim->rows > lim->b->max_rows) {
        lim->over_rows = true;
        return 1;
    }
    if (lim->deadline_ns && clock_mono_ns() > lim->deadline_ns) {
        lim->over_time = true;
        return 1;
    }
    const struct rowkey_layout *l = tsdb_layout(x->t);
    size_t pair = l->tagk_width + l->tagv_width;
    if (tl > ROWKEY_MAX_TSUID || tl < l->metric_width + pair || (tl - l->metric_width) % pair)
        return 0; /* not a TSUID of this layout */
    uint8_t key[ROWKEY_MAX_BYTES];
    size_t kl = rowkey_encode(l, ts, tl, base_s, key);
    if (!rowkey_filter_match(x->rf, key, kl))
        return 0;
    if (lim->b && (lim->scans + x->found.n + 1 > lim->b->max_scans ||
                   lim->series + x->found.n + 1 > lim->b->max_series)) {
        lim->over_reads = true;
        return 1;
    }
    struct dpcodec_point p;
    memset(&p, 0, sizeof(p));
    p.ts_ms = base_s;
    if (lastset_add(&x->found, ts, tl, &p) < 0) {
        x->oom = true;
        return 1;
    }
    return 0;
}

/* A metric query without back_scan: the series come from the newest-hour index (one scan of the
 * metric's index entries, tags matched on each TSUID), and each series' point from its newest
 * hour down QLAST_DEFAULT_BACK_SCAN_H hours (rows emptied by a delete are stepped over), so a
 * series is found whatever the age of its last point. *indexed false (nothing done) when the
 * metric has no index entry at all: data written before the index existed, then read by the
 * back-scan path. */
static int last_of_metric(struct tsdb *t, const struct qlast_query *q, int64_t now_s,
                          int64_t back_h, struct lastset *set, struct qlast_limit *lim,
                          enum qexec_status *status, struct ct_err *err);

static int last_of_metric_indexed(struct tsdb *t, const struct qlast_query *q, int64_t now_s,
                                  bool *indexed, struct lastset *set, struct qlast_limit *lim,
                                  enum qexec_status *status, struct ct_err *err)
{
    uint64_t metric;
    struct rowkey_filter *rf = NULL;
    int rc = metric_filter(t, q, &metric, &rf, status, err);
    if (rc != CT_OK)
        return rc;
    struct lastidx x = {t, rf, {0}, 0, false, lim};
    rc = limit_scans(lim, 1, err);
    if (rc == CT_OK)
        rc = meta_hour_scan(t, metric, lastidx_entry, &x, err);
    if (rc == CT_OK)
        rc = scan_stop_error(lim, x.oom, err);
    *indexed = x.entries > 0;
    /* the series found count once in the budget, whichever discovery found them */
    uint32_t series0 = lim->series;
    /* the series whose newest hour is recent (the usual case) are read by the back-scan path
     * over exactly the window their hours span, which reads each one's newest row within one
     * scan per bucket; the others (and a recent one whose newest row held no point within the
     * window) by point gets from their newest hour down */
    int64_t top = rowkey_base_hour_s(now_s), lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < x.found.n; i++) {
        int64_t h = x.found.a[i].p.ts_ms;
        if (h >= top - QLAST_DEFAULT_BACK_SCAN_H * ROWKEY_HOUR_S) {
            lo = h < lo ? h : lo;
            hi = h > hi ? h : hi;
        }
    }
    if (rc == CT_OK && lo != INT64_MAX)
        rc = last_of_metric(t, q, hi, (hi - lo) / ROWKEY_HOUR_S, set, lim, status, err);
    if (lim->b && lim->series < series0 + x.found.n)
        lim->series = series0 + (uint32_t)x.found.n;
    for (size_t i = 0; i < x.found.n && rc == CT_OK; i++) {
        const struct lastpt *e = &x.found.a[i];
        size_t h;
        long at = lastset_find(set, e->tsuid, e->len, &h);
        if (at == -2)
            rc = ct_err_set(err, CT_ENOMEM, "out of memory");
        else if (at < 0)
            rc = last_by_gets(t, e->tsuid, e->len, e->p.ts_ms,
                              e->p.ts_ms - QLAST_DEFAULT_BACK_SCAN_H * ROWKEY_HOUR_S, set, lim,
                              status, err);
    }
    lastset_free(&x.found);
    rowkey_filter_free(rf);
    if (rc != CT_OK && *status == QEXEC_OK)
        *status = QEXEC_INTERNAL;
    return rc;
}

static int last_of_metric(struct tsdb *t, const struct qlast_query *q, int64_t now_s,
                          int64_t back_h, struct lastset *set, struct qlast_limit *lim,
                          enum qexec_status *status, struct ct_err *err)
{
    const struct rowkey_layout *l = tsdb_layout(t);
    uint64_t metric;
    struct rowkey_filter *rf = NULL;
    int rc = metric_filter(t, q, &metric, &rf, status, err);
    if (rc != CT_OK)
        return rc;
    /* 0. when the tag index picks the tags' series, at most QLAST_INDEX_GETS of them times the
     *    window's hours, each series' hour rows are read with point gets from the top down to
     *    the first holding a point (last_by_gets): a few reads instead of a scan of every
     *    bucket's (leading-tag) key ranges. The same answer: the index (when its marker says it
     *    is complete) lists every series of the metric with these tags, and a series without a
     *    point in the window is answered by neither */
    uint8_t **its = NULL;
    size_t *ilens = NULL, in = 0;
    rc = qindex_select(t, rf, metric, (uint64_t)back_h + 1, QLAST_INDEX_GETS, &its, &ilens, &in,
                       err);
    if (rc == CT_OK)
        rc = limit_scans(lim, 1, err); /* the index read, when the index is used */
    if (rc != CT_NOTFOUND) {
        for (size_t i = 0; i < in && rc == CT_OK; i++)
            rc = last_by_gets(t, its[i], ilens[i], rowkey_base_hour_s(now_s),
                              rowkey_base_hour_s(now_s) - back_h * ROWKEY_HOUR_S, set, lim,
                              status, err);
        for (size_t i = 0; i < in; i++)
            free(its[i]);
        free(its);
        free(ilens);
        if (lim->b)
            lim->series += (uint32_t)in;
        rowkey_filter_free(rf);
        if (rc != CT_OK)
            *status = QEXEC_INTERNAL;
        return rc;
    }
    rc = CT_OK;
    /* 1. which series have rows in the window, and their newest hour: one reversed scan of the
     *    metric's rows whose row filter lets through each series' newest row only (the newest
     *    row normally holds a point, so a series normally takes this one row read, through the
     *    scan's own cell path and not a separate get);
     * 2. per series whose newest row held no point, point gets of its hour rows from the hour
     *    before down. Same answer as keeping, per series, the newest point of the first row
     *    holding one met by a reversed scan of whole rows (test_qexec's test_qlast_metric_query_...
     *    checks the cases where they could differ). */
    unsigned nb = l->salt_width ? l->salt_buckets : 1;
    int64_t top = rowkey_base_hour_s(now_s), bottom = top - back_h * ROWKEY_HOUR_S;
    struct wc_column col = {wc_bytes_str(TSDB_DATA_FAMILY), {NULL, 0}, false};
    struct lastfind f = {l, rf, {0}, false, lim, -1, 0, {0}, CT_OK, err};
    /* when the tags pin the leading tag keys, only the key ranges of each hour that can hold
     * a matching row are read (rowkey_filter_lead), all of a bucket's in one multi-range scan
     * (wc_scan_options.ranges; reversed: newest hour first, each hour's ranges in descending
     * key order); each range counts as a scan in the budget, as when each had its own scanner */
    const uint64_t *lead_vals[ROWKEY_MAX_TAGS];
    size_t lead_n[ROWKEY_MAX_TAGS];
    size_t nlead = qexec_lead_tags(rf, (uint64_t)back_h + 1, lead_vals, lead_n);
    for (unsigned b = 0; b < nb && rc == CT_OK; b++) {
        uint8_t lo[ROWKEY_MAX_BYTES + ROWKEY_MAX_TSUID], hi[ROWKEY_MAX_BYTES + ROWKEY_MAX_TSUID];
        struct wc_scan_options so;
        wc_scan_options_init(&so);
        struct wc_row_range *rr = NULL;
        if (nlead) {
            if ((rc = rowkey_lead_ranges(l, b, metric, bottom, top, lead_vals, lead_n, nlead, &rr,
                                         &so.nranges, err)) != CT_OK)
                break;
            so.ranges = rr;
        } else {
            size_t lol = 0, hil = 0;
            rowkey_scan_window_reversed(l, b, metric, bottom, top, hi, &hil, lo, &lol);
            so.start_row = wc_bytes_of(hi, hil);
            so.stop_row = wc_bytes_of(lo, lol);
        }
        so.reversed = true;
        so.columns = &col;
        so.ncolumns = 1;
        so.row_filter = lastfind_filter;
        so.row_filter_arg = &f;
        so.cell_filter = lastfind_cell;
        so.cell_filter_arg = &f;
        struct wc_scanner *sc = NULL;
        if ((rc = limit_scans(lim, nlead ? so.nranges : 1, err)) != CT_OK ||
            (nlead && !so.nranges) ||
            (rc = wc_scanner_open(tsdb_data_table(t), &so, &sc, err)) != CT_OK) {
            free(rr);
            continue; /* rc ends the loop unless the bucket simply has no range */
        }
        struct wc_row row; /* none comes back: lastfind_cell leaves every cell out */
        while ((rc = wc_scanner_next(sc, &row, err)) == CT_OK) {
        }
        if (rc == CT_NOTFOUND)
            rc = CT_OK;
        wc_scanner_close(sc);
        lastfind_end_row(&f);
        if (rc == CT_OK && f.rc != CT_OK)
            rc = f.rc;
        free(rr);
        if (rc == CT_OK)
            rc = scan_stop_error(lim, f.oom, err);
    }
    /* the rows the scan read count as row reads; each series found whose newest row held no
     * point takes at least one more: a bounded run that cannot afford them stops before
     * reading any */
    size_t read = 0, more = 0;
    for (size_t i = 0; i < f.found.n; i++) {
        read += f.found.a[i].row != ROW_UNREAD;
        more += f.found.a[i].row != ROW_POINT;
    }
    lim->scans += (uint32_t)read;
    if (rc == CT_OK && lim->b && lim->scans + more > lim->b->max_scans)
        rc = ct_err_set(err, CT_ELIMIT, "last query: more than %u row reads or %u series",
                        (unsigned)lim->b->max_scans, (unsigned)lim->b->max_series);
    if (lim->b)
        lim->series += (uint32_t)f.found.n;
    for (size_t i = 0; i < f.found.n && rc == CT_OK; i++) {
        const struct lastpt *e = &f.found.a[i];
        if (e->row == ROW_POINT) {
            if (lastset_add(set, e->tsuid, e->len, &e->p) < 0)
                rc = ct_err_set(err, CT_ENOMEM, "out of memory");
            continue;
        }
        int64_t from = e->row == ROW_NO_POINT ? e->p.ts_ms - ROWKEY_HOUR_S : e->p.ts_ms;
        if (from >= bottom)
            rc = last_by_gets(t, e->tsuid, e->len, from, bottom, set, lim, status, err);
    }
    lastset_free(&f.found);
    rowkey_filter_free(rf);
    if (rc != CT_OK)
        *status = QEXEC_INTERNAL;
    return rc;
}

/* ---- the ingest head ------------------------------------------------------------------------
 * After a sub-query's stored part is in the set, the head's newest point of each of its series
 * (the TSUID, or the metric's series the tags accept) replaces the stored one when it is not
 * older, and a series only the head holds is added. min_ms: the back-scan window's start. */

static int head_fold(struct lastset *set, struct head *h, const uint8_t *ts, size_t tl,
                     int64_t min_ms)
{
    struct dpcodec_point p;
    if (head_last(h, ts, tl, min_ms, &p) != CT_OK)
        return CT_OK;
    size_t hs = 0;
    long i = lastset_find(set, ts, tl, &hs);
    if (i == -2)
        return CT_ENOMEM;
    if (i >= 0) {
        if (p.ts_ms >= set->a[i].p.ts_ms)
            set->a[i].p = p;
        return CT_OK;
    }
    return lastset_insert(set, hs, ts, tl, &p) ? CT_ENOMEM : CT_OK;
}

struct head_list {
    const struct rowkey_layout *l;
    const struct rowkey_filter *rf;
    struct lastset *set; /* its TSUID chunks keep the copies */
    const uint8_t **ts;
    size_t *tl;
    size_t n, cap;
};

static int head_list_add(void *arg, const uint8_t *ts, size_t tl)
{
    struct head_list *x = arg;
    size_t pair = x->l->tagk_width + x->l->tagv_width;
    if (tl > ROWKEY_MAX_TSUID || tl < x->l->metric_width || (tl - x->l->metric_width) % pair)
        return CT_OK;
    uint8_t key[ROWKEY_MAX_BYTES];
    size_t kl = rowkey_encode(x->l, ts, tl, 0, key);
    if (!rowkey_filter_match(x->rf, key, kl))
        return CT_OK;
    if (x->n == x->cap) {
        size_t nc = x->cap ? 2 * x->cap : 16;
        const uint8_t **nt = realloc(x->ts, nc * sizeof(*nt));
        if (!nt)
            return CT_ENOMEM;
        x->ts = nt;
        size_t *nl = realloc(x->tl, nc * sizeof(*nl));
        if (!nl)
            return CT_ENOMEM;
        x->tl = nl;
        x->cap = nc;
    }
    if (!(x->ts[x->n] = lastset_keep(x->set, ts, tl)))
        return CT_ENOMEM;
    x->tl[x->n++] = tl;
    return CT_OK;
}

/* The metric's head series the tags accept, folded into set. In a bounded run the listing
 * counts as one scan and every series it adds to the answer (one the stored part did not find)
 * counts against max_series, as a series the stored discovery finds does: a query whose series
 * are all in the head passes the budget as it would with them stored. */
static int head_of_metric(struct tsdb *t, struct head *h, const struct qlast_query *q,
                          int64_t min_ms, struct lastset *set, struct qlast_limit *lim,
                          enum qexec_status *status, struct ct_err *err)
{
    const struct rowkey_layout *l = tsdb_layout(t);
    uint64_t metric;
    struct rowkey_filter *rf = NULL;
    int rc = metric_filter(t, q, &metric, &rf, status, err);
    if (rc != CT_OK)
        return rc;
    uint8_t prefix[ROWKEY_MAX_UID_WIDTH];
    rowkey_put_uid(prefix, metric, l->metric_width);
    if ((rc = limit_scans(lim, 1, err)) != CT_OK) {
        rowkey_filter_free(rf);
        return rc;
    }
    struct head_list x = {l, rf, set, NULL, NULL, 0, 0};
    rc = head_each_series(h, prefix, l->metric_width, min_ms, INT64_MAX, head_list_add, &x);
    size_t before = set->n;
    for (size_t i = 0; i < x.n && rc == CT_OK; i++) {
        rc = head_fold(set, h, x.ts[i], x.tl[i], min_ms);
        if (rc == CT_OK && lim->b && lim->series + (set->n - before) > lim->b->max_series) {
            free(x.ts);
            free(x.tl);
            rowkey_filter_free(rf);
            return ct_err_set(err, CT_ELIMIT, "last query: more than %u series",
                              (unsigned)lim->b->max_series);
        }
    }
    free(x.ts);
    free(x.tl);
    rowkey_filter_free(rf);
    if (rc != CT_OK) {
        *status = QEXEC_INTERNAL;
        return ct_err_set(err, rc, "out of memory reading the head");
    }
    if (lim->b)
        lim->series += (uint32_t)(set->n - before);
    return CT_OK;
}

static int lastpt_cmp(const void *a, const void *b)
{
    const struct lastpt *x = a, *y = b;
    int c = memcmp(x->tsuid, y->tsuid, x->len < y->len ? x->len : y->len);
    return c ? c : (x->len < y->len ? -1 : x->len > y->len);
}

static int write_point(struct tsdb *t, const struct lastpt *lp, bool resolve, bool first,
                       struct qjson *j, struct ct_err *err)
{
    const struct rowkey_layout *l = tsdb_layout(t);
    struct uid *u = tsdb_uid(t);
    char name[UID_MAX_NAME + 1], name2[UID_MAX_NAME + 1];
    size_t nl;
    int rc;
    if (!first)
        qjson_raw(j, ",", 1);
    qjson_raw(j, "{", 1);
    if (resolve) {
        rc = uid_get_name(u, UID_METRIC, rowkey_get_uid(lp->tsuid, l->metric_width), name,
                          sizeof(name), &nl, err);
        if (rc != CT_OK)
            return rc;
        qjson_lit(j, "\"metric\":");
        qjson_str(j, name);
        qjson_raw(j, ",", 1);
    }
    char b[64];
    qjson_lit(j, "\"timestamp\":");
    qjson_i64(j, lp->p.ts_ms);
    qjson_lit(j, ",\"value\":");
    size_t bl =
        lp->p.type == DPCODEC_INT ? qjson_format_i64(lp->p.i, b) : qjson_format_double(lp->p.f, b);
    qjson_strn(j, b, bl);
    if (resolve) {
        qjson_lit(j, ",\"tags\":{");
        size_t pair = l->tagk_width + l->tagv_width;
        size_t nt = (lp->len - l->metric_width) / pair;
        for (size_t i = 0; i < nt; i++) {
            const uint8_t *p = lp->tsuid + l->metric_width + i * pair;
            if ((rc = uid_get_name(u, UID_TAGK, rowkey_get_uid(p, l->tagk_width), name,
                                   sizeof(name), &nl, err)) != CT_OK ||
                (rc = uid_get_name(u, UID_TAGV, rowkey_get_uid(p + l->tagk_width, l->tagv_width),
                                   name2, sizeof(name2), &nl, err)) != CT_OK)
                return rc;
            if (i)
                qjson_raw(j, ",", 1);
            qjson_str(j, name);
            qjson_raw(j, ":", 1);
            qjson_str(j, name2);
        }
        qjson_raw(j, "}", 1);
    }
    qjson_lit(j, ",\"tsuid\":\"");
    static const char hx[] = "0123456789ABCDEF";
    for (size_t i = 0; i < lp->len; i++) {
        char h[2] = {hx[lp->tsuid[i] >> 4], hx[lp->tsuid[i] & 15]};
        qjson_raw(j, h, 2);
    }
    qjson_lit(j, "\"}");
    return CT_OK;
}

/* Starts the next sub-query's part of s (its answers so far stay before it): the hash table
 * is emptied, or dropped when large (a run of many TSUIDs after a wide metric query would
 * clear it once for each). */
static void lastset_next_part(struct lastset *s)
{
    s->base = s->n;
    if (s->ht.cap > 256)
        hashset_destroy(&s->ht);
    else
        hashset_clear(&s->ht);
}

/* Ends the current part: its series sorted by TSUID (invariant (1)). */
static void lastset_end_part(struct lastset *s)
{
    if (s->n - s->base > 1)
        qsort(s->a + s->base, s->n - s->base, sizeof(*s->a), lastpt_cmp);
}

static int last_run(struct tsdb *t, const struct qlast_req *r, int64_t now_ms,
                    struct qlast_limit *lim, struct qjson *j, enum qexec_status *status,
                    struct ct_err *err)
{
    struct lastset set = {0}; /* the answer: a part per sub-query (or per TSUID) */
    /* 0: no back_scan given, the newest-hour index says where each series' newest point is */
    int64_t back = r->back_scan_h > 0 ? r->back_scan_h : 0;
    /* the head's points count from the back-scan window's bottom hour (every one without) */
    int64_t head_min_ms =
        back ? (rowkey_base_hour_s(now_ms / 1000) - back * ROWKEY_HOUR_S) * 1000 : INT64_MIN;
    int rc = CT_OK;
    *status = QEXEC_INTERNAL;
    for (size_t i = 0; i < r->nq && rc == CT_OK; i++) {
        const struct qlast_query *q = &r->q[i];
        /* (2): a sub-query's TSUIDs, each answered on its own (so one listed twice is
         * answered twice), or else its metric and tags */
        for (size_t k = 0; k < q->ntsuids && rc == CT_OK; k++) {
            lastset_next_part(&set);
            rc = last_of_tsuid(t, q->tsuids[k], now_ms / 1000, back, &set, lim, status, err);
            uint8_t ts[ROWKEY_MAX_TSUID];
            size_t tl;
            if (rc == CT_OK && r->head &&
                hex_to_bytes(q->tsuids[k], ts, sizeof(ts), &tl) == 0 &&
                (rc = head_fold(&set, r->head, ts, tl, head_min_ms)) != CT_OK)
                rc = ct_err_set(err, rc, "out of memory reading the head");
        }
        if (!q->ntsuids && q->metric && rc == CT_OK) {
            lastset_next_part(&set);
            bool indexed = false;
            if (back == 0)
                rc = last_of_metric_indexed(t, q, now_ms / 1000, &indexed, &set, lim, status, err);
            if (rc == CT_OK && !indexed)
                rc = last_of_metric(t, q, now_ms / 1000, back ? back : QLAST_DEFAULT_BACK_SCAN_H,
                                    &set, lim, status, err);
            if (rc == CT_OK && r->head)
                rc = head_of_metric(t, r->head, q, head_min_ms, &set, lim, status, err);
            lastset_end_part(&set);
        }
    }
    if (rc == CT_OK) {
        *status = QEXEC_OK;
        qjson_raw(j, "[", 1);
        for (size_t i = 0; i < set.n && rc == CT_OK; i++)
            rc = write_point(t, &set.a[i], r->resolve, i == 0, j, err);
        qjson_raw(j, "]", 1);
        if (rc != CT_OK)
            *status = QEXEC_INTERNAL;
    }
    lastset_free(&set);
    return rc;
}

int qlast_run(struct tsdb *t, const struct qlast_req *r, int64_t now_ms, struct qjson *j,
              enum qexec_status *status, struct ct_err *err)
{
    struct qlast_limit lim = {NULL, 0, 0, 0, 0, 0, false, false, false};
    return last_run(t, r, now_ms, &lim, j, status, err);
}

int qlast_run_bounded(struct tsdb *t, const struct qlast_req *r, int64_t now_ms,
                      const struct qlast_budget *b, struct qjson *j, enum qexec_status *status,
                      struct ct_err *err)
{
    struct qlast_limit lim = {b, 0, 0, 0, 0, 0, false, false, false};
    if (b->max_ns)
        lim.deadline_ns = clock_mono_ns() + b->max_ns;
    return last_run(t, r, now_ms, &lim, j, status, err);
}
