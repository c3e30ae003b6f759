/* tagidx.c - the tag index in tsdb-meta (layout and invariants in tagidx.h).
 * Invariants: (1) an entry row's key is TAGIDX_PREFIX and three uids of the layout's widths;
 * its cells' qualifiers are whole TSUIDs of that metric carrying that tag; (2) writes are plain
 * puts (idempotent: writing a series' entries twice changes nothing visible). */
#include "schema/tagidx.h"

#include <stdlib.h>
#include <string.h>

#include "schema/rowkey.h"
#include "storage/clock.h"
#include "storage/coding.h"
#include "storage/hash.h"

#define TAGIDX_CHUNK 1024 /* rows per wc_mutate_batch */

static size_t tagidx_row(const struct rowkey_layout *l, uint64_t metric, uint64_t tagk,
                         uint64_t tagv, uint8_t *out)
{
    memcpy(out, TAGIDX_PREFIX, TAGIDX_PREFIX_LEN);
    size_t n = TAGIDX_PREFIX_LEN;
    rowkey_put_uid(out + n, metric, l->metric_width);
    n += l->metric_width;
    rowkey_put_uid(out + n, tagk, l->tagk_width);
    n += l->tagk_width;
    rowkey_put_uid(out + n, tagv, l->tagv_width);
    return n + l->tagv_width;
}

#define TAGIDX_ROW_MAX (TAGIDX_PREFIX_LEN + 3 * ROWKEY_MAX_UID_WIDTH)

static size_t tsuid_ntags(const struct rowkey_layout *l, size_t len)
{
    size_t pair = l->tagk_width + l->tagv_width;
    if (len <= l->metric_width || (len - l->metric_width) % pair)
        return 0;
    return (len - l->metric_width) / pair;
}

int tagidx_put(struct tsdb *t, const struct tagidx_series *s, size_t n, enum wc_durability d,
               struct ct_err *err)
{
    const struct rowkey_layout *l = tsdb_layout(t);
    size_t pair = l->tagk_width + l->tagv_width;
    /* one allocation per chunk: mutations, row mutations, row keys */
    size_t sz = TAGIDX_CHUNK * (sizeof(struct wc_mutation) + sizeof(struct wc_row_mutation) +
                                TAGIDX_ROW_MAX);
    uint8_t *mem = malloc(sz);
    if (!mem)
        return ct_err_set(err, CT_ENOMEM, "out of memory writing the tag index");
    struct wc_mutation *mu = (struct wc_mutation *)(void *)mem;
    struct wc_row_mutation *rm = (struct wc_row_mutation *)(void *)(mu + TAGIDX_CHUNK);
    uint8_t *keys = (uint8_t *)(rm + TAGIDX_CHUNK);
    size_t k = 0;
    int rc = CT_OK;
    for (size_t i = 0; i < n && rc == CT_OK; i++) {
        size_t nt = tsuid_ntags(l, s[i].len);
        if (!nt) {
            rc = ct_err_set(err, CT_EINVAL, "bad TSUID length %zu for the tag index", s[i].len);
            break;
        }
        uint64_t metric = rowkey_get_uid(s[i].tsuid, l->metric_width);
        for (size_t j = 0; j < nt; j++) {
            const uint8_t *p = s[i].tsuid + l->metric_width + j * pair;
            uint8_t *key = keys + k * TAGIDX_ROW_MAX;
            size_t kl = tagidx_row(l, metric, rowkey_get_uid(p, l->tagk_width),
                                   rowkey_get_uid(p + l->tagk_width, l->tagv_width), key);
            mu[k] = (struct wc_mutation){WC_OP_PUT, wc_bytes_str(TSDB_META_FAMILY),
                                         wc_bytes_of(s[i].tsuid, s[i].len), wc_bytes_of(NULL, 0),
                                         WC_TS_LATEST};
            rm[k] = (struct wc_row_mutation){wc_bytes_of(key, kl), &mu[k], 1};
            if (++k == TAGIDX_CHUNK) {
                rc = wc_mutate_batch(tsdb_meta_table(t), rm, k, d, err);
                k = 0;
                if (rc != CT_OK)
                    break;
            }
        }
    }
    if (rc == CT_OK && k)
        rc = wc_mutate_batch(tsdb_meta_table(t), rm, k, d, err);
    free(mem);
    if (rc != CT_OK)
        return ct_err_prefix(err, "writing the tag index");
    return CT_OK;
}

int tagidx_read(struct tsdb *t, uint64_t metric, uint64_t tagk, uint64_t tagv, tagidx_fn fn,
                void *arg, struct ct_err *err)
{
    const struct rowkey_layout *l = tsdb_layout(t);
    uint8_t key[TAGIDX_ROW_MAX + 1];
    size_t kl = tagidx_row(l, metric, tagk, tagv, key);
    key[kl] = 0; /* stop: the first key after this row */
    struct wc_column col = {wc_bytes_str(TSDB_META_FAMILY), {NULL, 0}, false};
    struct wc_scan_options so;
    wc_scan_options_init(&so);
    so.start_row = wc_bytes_of(key, kl);
    so.stop_row = wc_bytes_of(key, kl + 1);
    so.columns = &col;
    so.ncolumns = 1;
    so.batch_cells = 4096; /* a tag of many series: bounded chunks */
    struct wc_scanner *sc = NULL;
    int rc = wc_scanner_open(tsdb_meta_table(t), &so, &sc, err);
    if (rc != CT_OK)
        return rc;
    struct wc_row row;
    bool stop = false;
    while (!stop && (rc = wc_scanner_next(sc, &row, err)) == CT_OK) {
        for (size_t i = 0; i < row.ncells && !stop; i++) {
            const struct wc_bytes *q = &row.cells[i].qualifier;
            /* an entry of another metric's key or a bad length names no series: skipped */
            if (tsuid_ntags(l, q->len) == 0 ||
                rowkey_get_uid(q->data, l->metric_width) != metric)
                continue;
            stop = fn(arg, q->data, q->len) != 0;
        }
    }
    if (rc == CT_NOTFOUND || stop)
        rc = CT_OK;
    wc_scanner_close(sc);
    return rc;
}

int tagidx_complete(struct tsdb *t, bool *complete, struct ct_err *err)
{
    *complete = false;
    struct wc_column col = {wc_bytes_str(TSDB_META_FAMILY), wc_bytes_str(TAGIDX_MARKER), true};
    struct wc_scan_options so;
    wc_scan_options_init(&so);
    so.columns = &col;
    so.ncolumns = 1;
    struct wc_result res;
    int rc = wc_get(tsdb_meta_table(t), wc_bytes_of(TAGIDX_PREFIX, TAGIDX_PREFIX_LEN), &so, &res,
                    err);
    if (rc != CT_OK)
        return rc;
    *complete = res.row.ncells > 0;
    wc_result_release(&res);
    return CT_OK;
}

static int tagidx_mark(struct tsdb *t, bool on, struct ct_err *err)
{
    uint8_t v[8];
    coding_put_be64(v, (uint64_t)clock_now_ms());
    struct wc_mutation mu = {on ? WC_OP_PUT : WC_OP_DELETE_COLUMN, wc_bytes_str(TSDB_META_FAMILY),
                             wc_bytes_str(TAGIDX_MARKER), on ? wc_bytes_of(v, 8) : wc_bytes_of(NULL, 0),
                             WC_TS_LATEST};
    struct wc_row_mutation rm = {wc_bytes_of(TAGIDX_PREFIX, TAGIDX_PREFIX_LEN), &mu, 1};
    int rc = wc_mutate_row(tsdb_meta_table(t), &rm, WC_DURABILITY_USE_DEFAULT, err);
    if (rc != CT_OK)
        return ct_err_prefix(err, "%s the tag index marker", on ? "setting" : "deleting");
    return CT_OK;
}

int tagidx_unmark(struct tsdb *t, struct ct_err *err)
{
    return tagidx_mark(t, false, err);
}

static enum wc_row_decision first_row(void *arg, const uint8_t *row, size_t len)
{
    (void)row;
    (void)len;
    *(bool *)arg = true;
    return WC_ROW_STOP;
}

int tagidx_mark_if_empty(struct tsdb *t, bool *set, struct ct_err *err)
{
    int rc = tagidx_complete(t, set, err);
    if (rc != CT_OK || *set)
        return rc;
    bool any = false;
    struct wc_scan_options so;
    wc_scan_options_init(&so);
    so.row_filter = first_row; /* a row key is enough: no cell is read */
    so.row_filter_arg = &any;
    so.raw = false;
    struct wc_scanner *sc = NULL;
    if ((rc = wc_scanner_open(tsdb_data_table(t), &so, &sc, err)) != CT_OK)
        return rc;
    struct wc_row row;
    rc = wc_scanner_next(sc, &row, err);
    wc_scanner_close(sc);
    if (rc == CT_OK)
        any = true;
    else if (rc != CT_NOTFOUND)
        return rc;
    if (any)
        return CT_OK;
    if ((rc = tagidx_mark(t, true, err)) != CT_OK)
        return rc;
    *set = true;
    return CT_OK;
}

/* ---- the rebuild ------------------------------------------------------------------------ */

struct rebuild {
    const struct rowkey_layout *l;
    struct hashset seen;
    uint8_t *bytes; /* every distinct TSUID, back to back */
    size_t used, cap;
    size_t *off; /* entry i: bytes[off[i] .. off[i+1]) (off[n] = used) */
    size_t n, ncap;
    bool oom;
};

static uint64_t rebuild_hash_of(void *arg, size_t i)
{
    const struct rebuild *r = arg;
    size_t end = i + 1 < r->n ? r->off[i + 1] : r->used;
    return hash_bytes(r->bytes + r->off[i], end - r->off[i], 0);
}

static bool rebuild_eq(void *arg, size_t i, const void *key, size_t len)
{
    const struct rebuild *r = arg;
    size_t end = i + 1 < r->n ? r->off[i + 1] : r->used;
    return end - r->off[i] == len && !memcmp(r->bytes + r->off[i], key, len);
}

/* The row filter of the rebuild's scan: notes each row's series and skips the row, so that no
 * cell is ever read. */
static enum wc_row_decision rebuild_row(void *arg, const uint8_t *row, size_t len)
{
    struct rebuild *r = arg;
    uint8_t ts[ROWKEY_MAX_TSUID];
    size_t tl = rowkey_tsuid_of(r->l, row, len, ts, sizeof(ts));
    if (!tl || r->oom || tsuid_ntags(r->l, tl) == 0 ||
        rowkey_get_uid(ts, r->l->metric_width) == 0) /* annotations of no series */
        return WC_ROW_SKIP;
    struct ct_err e;
    if (hashset_reserve(&r->seen, 4096, rebuild_hash_of, r, &e) != CT_OK) {
        r->oom = true;
        return WC_ROW_STOP;
    }
    size_t slot = 0;
    if (hashset_find(&r->seen, hash_bytes(ts, tl, 0), rebuild_eq, r, ts, tl, &slot) >= 0)
        return WC_ROW_SKIP;
    if (r->used + tl > r->cap) {
        size_t nc = r->cap ? r->cap * 2 : 1u << 16;
        while (nc < r->used + tl)
            nc *= 2;
        uint8_t *nb = realloc(r->bytes, nc);
        if (!nb) {
            r->oom = true;
            return WC_ROW_STOP;
        }
        r->bytes = nb;
        r->cap = nc;
    }
    if (r->n == r->ncap) {
        size_t nc = r->ncap ? r->ncap * 2 : 4096;
        size_t *no = realloc(r->off, nc * sizeof(*no));
        if (!no) {
            r->oom = true;
            return WC_ROW_STOP;
        }
        r->off = no;
        r->ncap = nc;
    }
    r->off[r->n] = r->used;
    memcpy(r->bytes + r->used, ts, tl);
    r->used += tl;
    hashset_insert_at(&r->seen, slot, r->n);
    r->n++;
    return WC_ROW_SKIP;
}

int tagidx_rebuild(struct tsdb *t, uint64_t *series, struct ct_err *err)
{
    *series = 0;
    struct rebuild r;
    memset(&r, 0, sizeof(r));
    r.l = tsdb_layout(t);
    struct wc_scan_options so;
    wc_scan_options_init(&so);
    so.row_filter = rebuild_row;
    so.row_filter_arg = &r;
    struct wc_scanner *sc = NULL;
    struct tagidx_series *s = NULL;
    int rc = wc_scanner_open(tsdb_data_table(t), &so, &sc, err);
    if (rc == CT_OK) {
        struct wc_row row;
        while ((rc = wc_scanner_next(sc, &row, err)) == CT_OK) {
        }
        if (rc == CT_NOTFOUND)
            rc = CT_OK;
        wc_scanner_close(sc);
    }
    if (rc == CT_OK && r.oom)
        rc = ct_err_set(err, CT_ENOMEM, "out of memory listing the series of the data table");
    if (rc == CT_OK && r.n && !(s = malloc(r.n * sizeof(*s))))
        rc = ct_err_set(err, CT_ENOMEM, "out of memory listing %zu series", r.n);
    if (rc == CT_OK) {
        for (size_t i = 0; i < r.n; i++) {
            size_t end = i + 1 < r.n ? r.off[i + 1] : r.used;
            s[i] = (struct tagidx_series){r.bytes + r.off[i], end - r.off[i]};
        }
        rc = tagidx_put(t, s, r.n, WC_DURABILITY_USE_DEFAULT, err);
    }
    if (rc == CT_OK)
        rc = tagidx_mark(t, true, err);
    if (rc == CT_OK)
        *series = r.n;
    free(s);
    hashset_destroy(&r.seen);
    free(r.bytes);
    free(r.off);
    return rc;
}
