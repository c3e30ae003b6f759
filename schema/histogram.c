/* histogram.c - OpenTSDB's SimpleHistogram: model, codec, merge, percentile and its data cell
 * (see histogram.h for the formats and invariants). */
#include "schema/histogram.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "schema/dpcodec.h"
#include "schema/rowkey.h"
#include "schema/tagidx.h"
#include "schema/tsdb.h"
#include "storage/wc.h"

void histo_init(struct histo *h, uint8_t id)
{
    memset(h, 0, sizeof(*h));
    h->id = id;
}

void histo_clear(struct histo *h)
{
    free(h->b);
    h->b = NULL;
    h->n = h->cap = 0;
}

/* Java's Float.compare order for non-NaN bounds (-0.0 before 0.0). */
static int float_cmp(float a, float b)
{
    if (a < b)
        return -1;
    if (a > b)
        return 1;
    return signbit(a) == signbit(b) ? 0 : (signbit(a) ? -1 : 1);
}

int histo_add(struct histo *h, float lo, float hi, uint64_t count, struct ct_err *err)
{
    if (isnan(lo) || isnan(hi) || lo > hi)
        return ct_err_set(err, CT_EINVAL, "Invalid histogram bucket bounds: %g,%g", (double)lo,
                          (double)hi);
    size_t a = 0, b = h->n; /* the first bucket not before (lo, hi) */
    while (a < b) {
        size_t m = a + (b - a) / 2;
        int c = float_cmp(h->b[m].lo, lo);
        if (c == 0)
            c = float_cmp(h->b[m].hi, hi);
        if (c < 0)
            a = m + 1;
        else
            b = m;
    }
    if (a < h->n && float_cmp(h->b[a].lo, lo) == 0 && float_cmp(h->b[a].hi, hi) == 0) {
        h->b[a].count += count;
        return CT_OK;
    }
    if (h->n == HISTO_MAX_BUCKETS)
        return ct_err_set(err, CT_ELIMIT, "A histogram holds at most %d buckets",
                          HISTO_MAX_BUCKETS);
    if (h->n == h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 16;
        struct histo_bucket *nb = realloc(h->b, nc * sizeof(*nb));
        if (nb == NULL)
            return ct_err_set(err, CT_ENOMEM, "out of memory building a histogram");
        h->b = nb;
        h->cap = nc;
    }
    memmove(h->b + a + 1, h->b + a, (h->n - a) * sizeof(*h->b));
    h->b[a] = (struct histo_bucket){lo, hi, count};
    h->n++;
    return CT_OK;
}

int histo_merge(struct histo *dst, const struct histo *src, struct ct_err *err)
{
    for (size_t i = 0; i < src->n; i++) {
        int rc = histo_add(dst, src->b[i].lo, src->b[i].hi, src->b[i].count, err);
        if (rc != CT_OK)
            return rc;
    }
    dst->underflow += src->underflow;
    dst->overflow += src->overflow;
    return CT_OK;
}

double histo_percentile(const struct histo *h, double p)
{
    if (p < 1.0 || p > 100.0)
        return -1.0;
    /* SimpleHistogram sums the counts as Java ints */
    int32_t sum = 0;
    for (size_t i = 0; i < h->n; i++)
        sum = (int32_t)((uint32_t)sum + (uint32_t)(int32_t)h->b[i].count);
    int64_t running = 0;
    for (size_t i = 0; i < h->n; i++) {
        running += (int32_t)h->b[i].count;
        double area = (double)running * 100.0 / (double)sum;
        if (area >= p) /* the bounds' midpoint, in float as Java computes it */
            return (double)((h->b[i].lo + h->b[i].hi) / 2.0f);
    }
    return 0.0;
}

/* ---- codec ------------------------------------------------------------------------------- */

static size_t put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (n < 8 && v >> 7) {
        p[n++] = (uint8_t)((v & 0x7f) | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v; /* the ninth byte keeps all 8 bits */
    return n;
}

static bool get_varint(const uint8_t *p, size_t len, size_t *pos, uint64_t *v)
{
    uint64_t r = 0;
    for (unsigned i = 0; i < 9; i++) {
        if (*pos >= len)
            return false;
        uint8_t b = p[(*pos)++];
        if (i == 8) {
            r |= (uint64_t)b << 56;
            *v = r;
            return true;
        }
        r |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *v = r;
            return true;
        }
    }
    return false;
}

static void put_float(uint8_t *p, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    p[0] = (uint8_t)(u >> 24);
    p[1] = (uint8_t)(u >> 16);
    p[2] = (uint8_t)(u >> 8);
    p[3] = (uint8_t)u;
}

static float get_float(const uint8_t *p)
{
    uint32_t u = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
    float f;
    memcpy(&f, &u, 4);
    return f;
}

int histo_encode(const struct histo *h, bool with_id, uint8_t **out, size_t *len,
                 struct ct_err *err)
{
    uint8_t *p = malloc(1 + 2 + h->n * (8 + 9) + 18);
    if (p == NULL)
        return ct_err_set(err, CT_ENOMEM, "out of memory encoding a histogram");
    size_t n = 0;
    if (with_id)
        p[n++] = h->id;
    p[n++] = (uint8_t)(h->n >> 8);
    p[n++] = (uint8_t)h->n;
    for (size_t i = 0; i < h->n; i++) {
        put_float(p + n, h->b[i].lo);
        put_float(p + n + 4, h->b[i].hi);
        n += 8;
        n += put_varint(p + n, h->b[i].count);
    }
    n += put_varint(p + n, h->underflow);
    n += put_varint(p + n, h->overflow);
    *out = p;
    *len = n;
    return CT_OK;
}

int histo_decode(const uint8_t *p, size_t len, bool with_id, struct histo *h, struct ct_err *err)
{
    size_t pos = 0;
    histo_clear(h);
    if (len < (with_id ? 5u : 4u))
        return ct_err_set(err, CT_EINVAL, "A histogram needs at least %d bytes, got %zu",
                          with_id ? 5 : 4, len);
    if (with_id)
        h->id = p[pos++];
    size_t nb = (size_t)((uint16_t)(p[pos] << 8 | p[pos + 1]));
    pos += 2;
    if (nb > HISTO_MAX_BUCKETS)
        return ct_err_set(err, CT_EINVAL, "Invalid histogram bucket count %zu", nb);
    for (size_t i = 0; i < nb; i++) {
        uint64_t c;
        if (pos + 8 > len)
            return ct_err_set(err, CT_EINVAL, "Truncated histogram (bucket %zu)", i);
        float lo = get_float(p + pos), hi = get_float(p + pos + 4);
        pos += 8;
        if (!get_varint(p, len, &pos, &c))
            return ct_err_set(err, CT_EINVAL, "Truncated histogram (count of bucket %zu)", i);
        int rc = histo_add(h, lo, hi, c, err);
        if (rc != CT_OK)
            return rc;
    }
    if (!get_varint(p, len, &pos, &h->underflow) || !get_varint(p, len, &pos, &h->overflow))
        return ct_err_set(err, CT_EINVAL, "Truncated histogram (underflow or overflow)");
    if (pos != len)
        return ct_err_set(err, CT_EINVAL, "%zu bytes after the histogram", len - pos);
    return CT_OK;
}

/* ---- the cell ---------------------------------------------------------------------------- */

size_t histo_qualifier(int64_t base_s, int64_t ts_ms, uint8_t *q)
{
    q[0] = DPCODEC_HISTOGRAM_PREFIX;
    int64_t off_ms = ts_ms - base_s * 1000;
    if (ts_ms % 1000 == 0) {
        uint16_t s = (uint16_t)(off_ms / 1000);
        q[1] = (uint8_t)(s >> 8);
        q[2] = (uint8_t)s;
        return 3;
    }
    uint32_t m = (uint32_t)off_ms;
    q[1] = (uint8_t)(m >> 24);
    q[2] = (uint8_t)(m >> 16);
    q[3] = (uint8_t)(m >> 8);
    q[4] = (uint8_t)m;
    return 5;
}

bool histo_qualifier_time(int64_t base_s, const uint8_t *q, size_t qlen, int64_t *ts_ms)
{
    if (qlen == 3 && q[0] == DPCODEC_HISTOGRAM_PREFIX) {
        *ts_ms = (base_s + (int64_t)((uint16_t)(q[1] << 8 | q[2]))) * 1000;
        return true;
    }
    if (qlen == 5 && q[0] == DPCODEC_HISTOGRAM_PREFIX) {
        uint32_t m = (uint32_t)q[1] << 24 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 8 | q[4];
        *ts_ms = base_s * 1000 + m;
        return true;
    }
    return false;
}

int histo_put(struct tsdb *t, const uint8_t *tsuid, size_t tsuid_len, int64_t ts_ms,
              const uint8_t *value, size_t len, struct ct_err *err)
{
    struct histo_cell c = {tsuid, tsuid_len, ts_ms, value, len};
    return histo_put_many(t, &c, 1, err);
}

int histo_put_many(struct tsdb *t, const struct histo_cell *c, size_t n, struct ct_err *err)
{
    const struct rowkey_layout *l = tsdb_layout(t);
    for (size_t i = 0; i < n; i++) {
        if (c[i].tsuid_len == 0 || c[i].tsuid_len > ROWKEY_MAX_TSUID)
            return ct_err_set(err, CT_EINVAL, "Invalid TSUID length %zu", c[i].tsuid_len);
        if (c[i].ts_ms <= 0 || c[i].ts_ms > 9999999999999LL)
            return ct_err_set(err, CT_EINVAL, "Invalid timestamp");
    }
    if (n == 0)
        return CT_OK;
    /* per cell: its row key and qualifier bytes, one mutation, one row mutation */
    struct slot {
        uint8_t row[ROWKEY_MAX_BYTES];
        uint8_t q[5];
        struct wc_mutation m;
    } *sl = calloc(n, sizeof(*sl));
    struct wc_row_mutation *rm = calloc(n, sizeof(*rm));
    if (!sl || !rm) {
        free(sl);
        free(rm);
        return ct_err_set(err, CT_ENOMEM, "out of memory storing %zu histograms", n);
    }
    for (size_t i = 0; i < n; i++) {
        int64_t ts_s = c[i].ts_ms / 1000;
        size_t rl = rowkey_encode(l, c[i].tsuid, c[i].tsuid_len, ts_s, sl[i].row);
        size_t ql = histo_qualifier(rowkey_base_hour_s(ts_s), c[i].ts_ms, sl[i].q);
        sl[i].m = (struct wc_mutation){WC_OP_PUT, wc_bytes_str(TSDB_DATA_FAMILY),
                                       wc_bytes_of(sl[i].q, ql), wc_bytes_of(c[i].value, c[i].len),
                                       WC_TS_LATEST};
        rm[i] = (struct wc_row_mutation){wc_bytes_of(sl[i].row, rl), &sl[i].m, 1};
    }
    int rc = n == 1 ? wc_mutate_row(tsdb_data_table(t), rm, WC_DURABILITY_USE_DEFAULT, err)
                    : wc_mutate_batch(tsdb_data_table(t), rm, n, WC_DURABILITY_USE_DEFAULT, err);
    free(sl);
    free(rm);
    if (rc != CT_OK)
        return rc;
    /* the tag index's entries of the series (schema/tagidx.h invariant 1: a series with stored
     * rows has them, or queries that pin a tag would skip its histograms); once per series */
    struct tagidx_series *tx = calloc(n, sizeof(*tx));
    if (!tx)
        return ct_err_set(err, CT_ENOMEM, "out of memory storing %zu histograms", n);
    size_t nt = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < nt &&
               !(tx[k].len == c[i].tsuid_len && !memcmp(tx[k].tsuid, c[i].tsuid, tx[k].len)))
            k++;
        if (k == nt)
            tx[nt++] = (struct tagidx_series){c[i].tsuid, c[i].tsuid_len};
    }
    rc = tagidx_put(t, tx, nt, WC_DURABILITY_USE_DEFAULT, err);
    free(tx);
    return rc;
}
