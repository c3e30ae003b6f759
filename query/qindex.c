/* qindex.c - the tag index in query planning (rule and contract in qindex.h).
 * Invariants: (1) a series is selected only if it carries one of the chosen clause's values (it
 * is in that value's index row) and the row filter accepts its key, so the selection holds every
 * stored series the filter accepts when the index is complete (tagidx.h (1)); (2) ranges are
 * ascending and disjoint as wc_scan_options.ranges requires: a row key is [salt][metric][hour]
 * [tags], so within one bucket and hour the series' keys sort as their TSUIDs, and the stop
 * key + "\0" is below the next series' key (a longer TSUID with the same prefix sorts after
 * it, and a range stops before it). */
#include "query/qindex.h"

#include <stdlib.h>
#include <string.h>

#include "schema/tagidx.h"

struct pick {
    const struct rowkey_layout *l;
    const struct rowkey_filter *rf;
    uint64_t max; /* series allowed */
    uint8_t **ts;
    size_t *lens;
    size_t n, cap;
    bool over; /* more series than max: the index is not used */
    bool oom;
};

/* Whether the series ts[0..tl) passes the whole filter rf: judged on its key of any hour (the
 * hour plays no part in it). */
static bool series_passes(const struct rowkey_layout *l, const struct rowkey_filter *rf,
                          const uint8_t *ts, size_t tl)
{
    uint8_t key[ROWKEY_MAX_BYTES];
    if (tl > ROWKEY_MAX_TSUID)
        return false;
    size_t kl = rowkey_encode(l, ts, tl, 0, key);
    return rowkey_filter_match(rf, key, kl);
}

/* The pinned clause of rf with the fewest values (its tag key and values), when it has at most
 * max of them and the tag index is complete: CT_OK; CT_NOTFOUND when the index cannot be used. */
static int best_clause(struct tsdb *t, const struct rowkey_filter *rf, size_t max, uint64_t *k,
                       const uint64_t **v, size_t *n, struct ct_err *err)
{
    uint64_t tagk = 0;
    const uint64_t *vals = NULL;
    size_t nv = 0;
    *v = NULL;
    *n = 0;
    for (size_t i = 0; rowkey_filter_pinned(rf, i, &tagk, &vals, &nv); i++)
        if (!*v || nv < *n) {
            *k = tagk;
            *v = vals;
            *n = nv;
        }
    if (!*v || *n > max)
        return CT_NOTFOUND;
    bool complete = false;
    int rc = tagidx_complete(t, &complete, err);
    if (rc != CT_OK)
        return rc;
    return complete ? CT_OK : CT_NOTFOUND;
}

static int pick_one(void *arg, const uint8_t *ts, size_t tl)
{
    struct pick *p = arg;
    if (!series_passes(p->l, p->rf, ts, tl))
        return 0;
    if (p->n >= p->max) {
        p->over = true;
        return 1;
    }
    if (p->n == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 64;
        uint8_t **nt = realloc(p->ts, nc * sizeof(*nt));
        if (!nt) {
            p->oom = true;
            return 1;
        }
        p->ts = nt;
        size_t *nl = realloc(p->lens, nc * sizeof(*nl));
        if (!nl) {
            p->oom = true;
            return 1;
        }
        p->lens = nl;
        p->cap = nc;
    }
    uint8_t *c = malloc(tl);
    if (!c) {
        p->oom = true;
        return 1;
    }
    memcpy(c, ts, tl);
    p->ts[p->n] = c;
    p->lens[p->n++] = tl;
    return 0;
}

static void pick_free(struct pick *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->ts[i]);
    free(p->ts);
    free(p->lens);
}

static int tsuid_cmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    if (c)
        return c;
    return al < bl ? -1 : al > bl ? 1 : 0;
}

/* Sorts the picked series by TSUID and drops
 * repeats (a series can be listed under two values only if the index is stale). */
static void pick_sort(struct pick *p)
{
    /* a shell sort on the parallel arrays */
    for (size_t gap = p->n / 2; gap > 0; gap /= 2)
        for (size_t i = gap; i < p->n; i++) {
            uint8_t *t = p->ts[i];
            size_t tl = p->lens[i], j = i;
            for (; j >= gap && tsuid_cmp(p->ts[j - gap], p->lens[j - gap], t, tl) > 0; j -= gap) {
                p->ts[j] = p->ts[j - gap];
                p->lens[j] = p->lens[j - gap];
            }
            p->ts[j] = t;
            p->lens[j] = tl;
        }
    size_t w = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (w && !tsuid_cmp(p->ts[w - 1], p->lens[w - 1], p->ts[i], p->lens[i])) {
            free(p->ts[i]);
            continue;
        }
        p->ts[w] = p->ts[i];
        p->lens[w++] = p->lens[i];
    }
    p->n = w;
}

int qindex_select(struct tsdb *t, const struct rowkey_filter *rf, uint64_t metric,
                  uint64_t hours, uint64_t max_ranges, uint8_t ***tsuids, size_t **lens,
                  size_t *n, struct ct_err *err)
{
    *tsuids = NULL;
    *lens = NULL;
    *n = 0;
    if (!max_ranges || !hours)
        return CT_NOTFOUND;
    /* the clause with the fewest values */
    uint64_t best_k = 0;
    const uint64_t *best_v;
    size_t best_n;
    int rc = best_clause(t, rf, max_ranges / hours, &best_k, &best_v, &best_n, err);
    if (rc != CT_OK)
        return rc;
    struct pick p;
    memset(&p, 0, sizeof(p));
    p.l = tsdb_layout(t);
    p.rf = rf;
    p.max = max_ranges / hours;
    for (size_t i = 0; i < best_n && rc == CT_OK && !p.over && !p.oom; i++)
        rc = tagidx_read(t, metric, best_k, best_v[i], pick_one, &p, err);
    if (rc == CT_OK && p.oom)
        rc = ct_err_set(err, CT_ENOMEM, "out of memory reading the tag index");
    if (rc == CT_OK && p.over)
        rc = CT_NOTFOUND;
    if (rc != CT_OK) {
        pick_free(&p);
        return rc;
    }
    pick_sort(&p);
    *tsuids = p.ts;
    *lens = p.lens;
    *n = p.n;
    return CT_OK;
}

struct bpick {
    const struct rowkey_layout *l;
    const struct rowkey_filter *rf;
    uint64_t mask, all;
};

static int bucket_one(void *arg, const uint8_t *ts, size_t tl)
{
    struct bpick *p = arg;
    if (!series_passes(p->l, p->rf, ts, tl))
        return 0;
    uint32_t b = rowkey_salt_bucket(p->l, ts, tl);
    p->mask |= b < p->l->salt_buckets ? 1ull << b : p->all;
    return p->mask == p->all; /* every bucket marked: no need to read on */
}

int qindex_buckets(struct tsdb *t, const struct rowkey_filter *rf, uint64_t metric, uint64_t *mask,
                   struct ct_err *err)
{
    const struct rowkey_layout *l = tsdb_layout(t);
    if (!l->salt_width || l->salt_buckets > 64)
        return CT_NOTFOUND;
    uint64_t best_k = 0;
    const uint64_t *best_v;
    size_t best_n;
    int rc = best_clause(t, rf, QINDEX_BUCKET_VALUES, &best_k, &best_v, &best_n, err);
    if (rc != CT_OK)
        return rc;
    struct bpick p = {l, rf, 0, l->salt_buckets == 64 ? UINT64_MAX : (1ull << l->salt_buckets) - 1};
    for (size_t i = 0; i < best_n && rc == CT_OK && p.mask != p.all; i++)
        rc = tagidx_read(t, metric, best_k, best_v[i], bucket_one, &p, err);
    if (rc != CT_OK)
        return rc;
    *mask = p.mask;
    return CT_OK;
}

int qindex_ranges(const struct rowkey_layout *l, uint32_t bucket, int64_t first_hour_s,
                  int64_t last_hour_s, uint8_t *const *tsuids, const size_t *lens, size_t n,
                  struct wc_row_range **out, size_t *nr, struct ct_err *err)
{
    *out = NULL;
    *nr = 0;
    int64_t h0 = rowkey_base_hour_s(first_hour_s), h1 = rowkey_base_hour_s(last_hour_s);
    if (h1 < h0 || !n)
        return CT_OK;
    /* this bucket's series (their salt computed once, not per hour) and key bytes per hour */
    size_t mine = 0, bytes = 0, *idx = malloc(n * sizeof(*idx));
    if (!idx)
        return ct_err_set(err, CT_ENOMEM, "out of memory for %zu series", n);
    for (size_t i = 0; i < n; i++)
        if (rowkey_salt_bucket(l, tsuids[i], lens[i]) == bucket) {
            idx[mine++] = i;
            bytes += 2 * (l->salt_width + ROWKEY_TIMESTAMP_BYTES + lens[i]) + 1;
        }
    uint64_t hours = (uint64_t)(h1 - h0) / ROWKEY_HOUR_S + 1;
    if (!mine) {
        free(idx);
        return CT_OK;
    }
    if (hours * mine > (1u << 22)) {
        free(idx);
        return ct_err_set(err, CT_EINVAL, "more than %u exact key ranges", 1u << 22);
    }
    size_t cnt = (size_t)(hours * mine);
    struct wc_row_range *r = malloc(cnt * sizeof(*r) + hours * bytes);
    if (!r) {
        free(idx);
        return ct_err_set(err, CT_ENOMEM, "out of memory for %zu key ranges", cnt);
    }
    uint8_t *k = (uint8_t *)(r + cnt);
    size_t j = 0;
    for (int64_t h = h0; h <= h1; h += ROWKEY_HOUR_S)
        for (size_t m = 0; m < mine; m++) {
            size_t i = idx[m];
            size_t kl = rowkey_encode(l, tsuids[i], lens[i], h, k);
            memcpy(k + kl, k, kl);
            k[2 * kl] = 0;
            r[j].start = wc_bytes_of(k, kl);
            r[j].stop = wc_bytes_of(k + kl, kl + 1);
            k += 2 * kl + 1;
            j++;
        }
    free(idx);
    *out = r;
    *nr = j;
    return CT_OK;
}
