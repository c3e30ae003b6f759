/* meta.c - the stored UID meta and TSMeta records (layouts in meta.h).
 * Invariants: (1) every write goes through wc_mutate_row / wc_check_and_mutate on the one row
 * of its UID or TSUID, so a record is replaced whole; (2) a TSMeta write never touches the
 * counter, and the counter is created only where there is none (check-and-put against
 * absence); (3) the newest-hour index cell's timestamp is its hour (meta.h), so concurrent and
 * late writers need no read-modify-write. */
#include "schema/meta.h"

#include <stdlib.h>
#include <string.h>

#include "schema/rowkey.h"
#include "storage/coding.h"

const char *meta_uid_qualifier(enum uid_kind k)
{
    return k == UID_METRIC ? "metric_meta" : k == UID_TAGK ? "tagk_meta" : "tagv_meta";
}

int meta_uid_get(struct tsdb *t, enum uid_kind k, uint64_t id, char **json, size_t *len,
                 struct ct_err *err)
{
    *json = NULL;
    *len = 0;
    unsigned w = uid_width(tsdb_uid(t), k);
    uint8_t row[8];
    rowkey_put_uid(row, id, w);
    struct wc_column col = {wc_bytes_str(UID_FAMILY_NAME), wc_bytes_str(meta_uid_qualifier(k)),
                            true};
    struct wc_scan_options so;
    wc_scan_options_init(&so);
    so.columns = &col;
    so.ncolumns = 1;
    struct wc_result res;
    int rc = wc_get(tsdb_uid_table(t), wc_bytes_of(row, w), &so, &res, err);
    if (rc != CT_OK)
        return rc;
    if (!res.row.ncells) {
        wc_result_release(&res);
        return CT_NOTFOUND;
    }
    const struct wc_bytes *v = &res.row.cells[0].value;
    char *s = malloc(v->len + 1);
    if (!s) {
        wc_result_release(&res);
        return ct_err_set(err, CT_ENOMEM, "out of memory reading a UID meta");
    }
    memcpy(s, v->data, v->len);
    s[v->len] = 0;
    *json = s;
    *len = v->len;
    wc_result_release(&res);
    return CT_OK;
}

int meta_uid_put(struct tsdb *t, enum uid_kind k, uint64_t id, const char *json, struct ct_err *err)
{
    unsigned w = uid_width(tsdb_uid(t), k);
    uint8_t row[8];
    rowkey_put_uid(row, id, w);
    struct wc_mutation mu = {.family = wc_bytes_str(UID_FAMILY_NAME),
                             .qualifier = wc_bytes_str(meta_uid_qualifier(k)),
                             .ts_ms = WC_TS_LATEST};
    if (json) {
        mu.op = WC_OP_PUT;
        mu.value = wc_bytes_str(json);
    } else {
        mu.op = WC_OP_DELETE_COLUMN;
    }
    struct wc_row_mutation rm = {wc_bytes_of(row, w), &mu, 1};
    return wc_mutate_row(tsdb_uid_table(t), &rm, WC_DURABILITY_USE_DEFAULT, err);
}

static bool qual_is(struct wc_bytes q, const char *name)
{
    size_t n = strlen(name);
    return q.len == n && memcmp(q.data, name, n) == 0;
}

void meta_ts_clear(struct meta_ts *m)
{
    free(m->json);
    memset(m, 0, sizeof(*m));
}

int meta_ts_get(struct tsdb *t, const uint8_t *ts, size_t tl, struct meta_ts *m, struct ct_err *err)
{
    memset(m, 0, sizeof(*m));
    struct wc_column cols[2] = {
        {wc_bytes_str(TSDB_META_FAMILY), wc_bytes_str(META_TS_QUALIFIER), true},
        {wc_bytes_str(TSDB_META_FAMILY), wc_bytes_str(META_TS_COUNTER), true},
    };
    struct wc_scan_options so;
    wc_scan_options_init(&so);
    so.columns = cols;
    so.ncolumns = 2;
    struct wc_result res;
    int rc = wc_get(tsdb_meta_table(t), wc_bytes_of(ts, tl), &so, &res, err);
    if (rc != CT_OK)
        return rc;
    for (size_t i = 0; i < res.row.ncells && rc == CT_OK; i++) {
        const struct wc_cell *c = &res.row.cells[i];
        if (qual_is(c->qualifier, META_TS_COUNTER)) {
            if (c->value.len != 8) {
                rc = ct_err_set(err, CT_ECORRUPT, "bad TSMeta counter (%zu bytes) in %s",
                                c->value.len, tsdb_get_config(t)->meta_table);
                break;
            }
            m->has_ctr = true;
            m->ctr = (int64_t)rowkey_get_uid(c->value.data, 8);
            m->ctr_ts_ms = c->ts_ms;
        } else if (qual_is(c->qualifier, META_TS_QUALIFIER)) {
            if (!(m->json = malloc(c->value.len + 1))) {
                rc = ct_err_set(err, CT_ENOMEM, "out of memory");
            } else {
                memcpy(m->json, c->value.data, c->value.len);
                m->json[c->value.len] = 0;
                m->json_len = c->value.len;
            }
        }
    }
    wc_result_release(&res);
    if (rc != CT_OK)
        meta_ts_clear(m);
    return rc;
}

int meta_ts_put(struct tsdb *t, const uint8_t *ts, size_t tl, const char *json,
                const struct wc_bytes *expected, bool *applied, struct ct_err *err)
{
    struct wc_mutation mu = {WC_OP_PUT, wc_bytes_str(TSDB_META_FAMILY),
                             wc_bytes_str(META_TS_QUALIFIER), wc_bytes_str(json), WC_TS_LATEST};
    struct wc_row_mutation rm = {wc_bytes_of(ts, tl), &mu, 1};
    return wc_check_and_mutate(tsdb_meta_table(t), rm.row, mu.family, mu.qualifier, expected, &rm,
                               WC_DURABILITY_USE_DEFAULT, applied, err);
}

int meta_ts_delete(struct tsdb *t, const uint8_t *ts, size_t tl, struct ct_err *err)
{
    struct wc_mutation mu = {WC_OP_DELETE_COLUMN,
                             wc_bytes_str(TSDB_META_FAMILY),
                             wc_bytes_str(META_TS_QUALIFIER),
                             {NULL, 0},
                             WC_TS_LATEST};
    struct wc_row_mutation rm = {wc_bytes_of(ts, tl), &mu, 1};
    return wc_mutate_row(tsdb_meta_table(t), &rm, WC_DURABILITY_USE_DEFAULT, err);
}

int meta_ts_counter_init(struct tsdb *t, const uint8_t *ts, size_t tl, struct ct_err *err)
{
    uint8_t zero[8] = {0};
    struct wc_mutation cm = {WC_OP_PUT, wc_bytes_str(TSDB_META_FAMILY),
                             wc_bytes_str(META_TS_COUNTER), wc_bytes_of(zero, 8), WC_TS_LATEST};
    struct wc_row_mutation crm = {wc_bytes_of(ts, tl), &cm, 1};
    bool put;
    return wc_check_and_mutate(tsdb_meta_table(t), crm.row, cm.family, cm.qualifier, NULL, &crm,
                               WC_DURABILITY_USE_DEFAULT, &put, err);
}

int meta_ts_counter_set(struct tsdb *t, const uint8_t *ts, size_t tl, int64_t value,
                        struct ct_err *err)
{
    uint8_t v[8];
    coding_put_be64(v, (uint64_t)value);
    struct wc_mutation cm = {WC_OP_PUT, wc_bytes_str(TSDB_META_FAMILY),
                             wc_bytes_str(META_TS_COUNTER), wc_bytes_of(v, 8), WC_TS_LATEST};
    struct wc_row_mutation crm = {wc_bytes_of(ts, tl), &cm, 1};
    return wc_mutate_row(tsdb_meta_table(t), &crm, WC_DURABILITY_USE_DEFAULT, err);
}

int meta_ts_counter_add(struct tsdb *t, const uint8_t *ts, size_t tl, int64_t delta, int64_t *out,
                        struct ct_err *err)
{
    return wc_increment(tsdb_meta_table(t), wc_bytes_of(ts, tl), wc_bytes_str(TSDB_META_FAMILY),
                        wc_bytes_str(META_TS_COUNTER), delta, WC_DURABILITY_USE_DEFAULT, out, err);
}

/* ---- the newest-hour index -------------------------------------------------------------- */

int meta_hour_put(struct tsdb *t, const struct meta_hour *h, size_t n, enum wc_durability d,
                  struct ct_err *err)
{
    if (n == 0)
        return CT_OK;
    /* one allocation: the mutations, the row mutations, then the 4-byte values */
    size_t sz = n * (sizeof(struct wc_mutation) + sizeof(struct wc_row_mutation) + 4);
    uint8_t *mem = malloc(sz);
    if (!mem)
        return ct_err_set(err, CT_ENOMEM, "out of memory writing the newest-hour index");
    struct wc_mutation *mu = (struct wc_mutation *)(void *)mem;
    struct wc_row_mutation *rm = (struct wc_row_mutation *)(void *)(mu + n);
    uint8_t *vals = (uint8_t *)(rm + n);
    for (size_t i = 0; i < n; i++) {
        coding_put_be32(vals + 4 * i, (uint32_t)h[i].base_s);
        mu[i] = (struct wc_mutation){WC_OP_PUT, wc_bytes_str(TSDB_META_FAMILY),
                                     wc_bytes_str(META_TS_HOUR), wc_bytes_of(vals + 4 * i, 4),
                                     h[i].base_s * 1000};
        rm[i] = (struct wc_row_mutation){wc_bytes_of(h[i].tsuid, h[i].len), &mu[i], 1};
    }
    int rc = wc_mutate_batch(tsdb_meta_table(t), rm, n, d, err);
    free(mem);
    return rc;
}

static int meta_hour_value(struct tsdb *t, const struct wc_cell *c, int64_t *base_s,
                           struct ct_err *err)
{
    if (c->value.len != 4)
        return ct_err_set(err, CT_ECORRUPT, "bad newest-hour index cell (%zu bytes) in %s",
                          c->value.len, tsdb_get_config(t)->meta_table);
    *base_s = (int64_t)coding_get_be32(c->value.data);
    return CT_OK;
}

int meta_hour_get(struct tsdb *t, const uint8_t *ts, size_t tl, int64_t *base_s,
                  struct ct_err *err)
{
    struct wc_column col = {wc_bytes_str(TSDB_META_FAMILY), wc_bytes_str(META_TS_HOUR), true};
    struct wc_scan_options so;
    wc_scan_options_init(&so);
    so.columns = &col;
    so.ncolumns = 1;
    struct wc_result res;
    int rc = wc_get(tsdb_meta_table(t), wc_bytes_of(ts, tl), &so, &res, err);
    if (rc != CT_OK)
        return rc;
    rc = res.row.ncells ? meta_hour_value(t, &res.row.cells[0], base_s, err) : CT_NOTFOUND;
    wc_result_release(&res);
    return rc;
}

int meta_hour_scan(struct tsdb *t, uint64_t metric, meta_hour_fn fn, void *arg,
                   struct ct_err *err)
{
    unsigned w = tsdb_layout(t)->metric_width;
    uint8_t lo[8], hi[9];
    rowkey_put_uid(lo, metric, w);
    /* the metric's rows: [uid, uid + 1) (the next uid; past the last one, no stop row) */
    size_t hil = w;
    memcpy(hi, lo, w);
    while (hil > 0 && hi[hil - 1] == 0xFF)
        hil--;
    if (hil > 0)
        hi[hil - 1]++;
    struct wc_column col = {wc_bytes_str(TSDB_META_FAMILY), wc_bytes_str(META_TS_HOUR), true};
    struct wc_scan_options so;
    wc_scan_options_init(&so);
    so.start_row = wc_bytes_of(lo, w);
    if (hil > 0)
        so.stop_row = wc_bytes_of(hi, hil);
    so.columns = &col;
    so.ncolumns = 1;
    struct wc_scanner *sc = NULL;
    int rc = wc_scanner_open(tsdb_meta_table(t), &so, &sc, err);
    if (rc != CT_OK)
        return rc;
    struct wc_row row;
    while ((rc = wc_scanner_next(sc, &row, err)) == CT_OK) {
        if (!row.ncells)
            continue;
        int64_t base;
        if ((rc = meta_hour_value(t, &row.cells[0], &base, err)) != CT_OK)
            break;
        if (fn(arg, row.key.data, row.key.len, base))
            break;
    }
    if (rc == CT_NOTFOUND)
        rc = CT_OK;
    wc_scanner_close(sc);
    return rc;
}
