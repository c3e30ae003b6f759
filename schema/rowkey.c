/* rowkey.c - row keys of the data table, OpenTSDB's salt, and the tag-uid row filter.
 *
 * Invariants: (1) a TSUID is metric uid + ntags (tagk, tagv) pairs, ntags >= 1, pairs sorted by
 * tagk bytes; (2) a row key is [salt][metric][base hour BE32][pairs]; (3) the salt of a row is a
 * pure function of its TSUID (rowkey_salt_bucket), so one series lives in one bucket; the global
 * annotation row (all-zero metric) keeps salt 0, as OpenTSDB's prefixKeyWithSalt() does.
 * Format: docs/schema.md "Row keys". */
#include "schema/rowkey.h"

#include <assert.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "storage/coding.h"

void rowkey_layout_init(struct rowkey_layout *l)
{
    l->salt_width = 0;
    l->salt_buckets = 20;
    l->metric_width = 3;
    l->tagk_width = 3;
    l->tagv_width = 3;
}

int rowkey_layout_check(const struct rowkey_layout *l, struct ct_err *err)
{
    if (l->salt_width > ROWKEY_MAX_SALT_WIDTH)
        return ct_err_set(err, CT_EINVAL, "tsd.storage.salt.width must be 0..%d, not %u",
                          ROWKEY_MAX_SALT_WIDTH, l->salt_width);
    if (l->salt_buckets < 1 || l->salt_buckets > (1u << 31) - 1)
        return ct_err_set(err, CT_EINVAL, "tsd.storage.salt.buckets must be >= 1, not %u",
                          l->salt_buckets);
    if (l->salt_width > 0 && l->salt_width < 4 && l->salt_buckets > (1u << (8 * l->salt_width)))
        return ct_err_set(err, CT_EINVAL,
                          "tsd.storage.salt.buckets %u do not fit in a salt of %u byte(s)",
                          l->salt_buckets, l->salt_width);
    const unsigned w[3] = {l->metric_width, l->tagk_width, l->tagv_width};
    const char *names[3] = {"metric", "tagk", "tagv"};
    for (int i = 0; i < 3; i++)
        if (w[i] < 1 || w[i] > ROWKEY_MAX_UID_WIDTH)
            return ct_err_set(err, CT_EINVAL, "tsd.storage.uid.width.%s must be 1..%d, not %u",
                              names[i], ROWKEY_MAX_UID_WIDTH, w[i]);
    return CT_OK;
}

size_t rowkey_tsuid_len(const struct rowkey_layout *l, size_t ntags)
{
    return l->metric_width + ntags * (l->tagk_width + l->tagv_width);
}

size_t rowkey_len(const struct rowkey_layout *l, size_t ntags)
{
    return l->salt_width + ROWKEY_TIMESTAMP_BYTES + rowkey_tsuid_len(l, ntags);
}

void rowkey_put_uid(uint8_t *out, uint64_t id, unsigned width)
{
    for (unsigned i = 0; i < width; i++)
        out[width - 1 - i] = (uint8_t)(id >> (8 * i));
}

uint64_t rowkey_get_uid(const uint8_t *p, unsigned width)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < width; i++)
        v = v << 8 | p[i];
    return v;
}

static bool rowkey_fits(uint64_t id, unsigned width)
{
    return width >= 8 || id < (1ull << (8 * width));
}

int rowkey_tsuid_build(const struct rowkey_layout *l, uint64_t metric,
                       const struct rowkey_tag *tags, size_t ntags, uint8_t *out, size_t cap,
                       size_t *len, struct ct_err *err)
{
    if (ntags == 0)
        return ct_err_set(err, CT_EINVAL, "a series needs at least one tag");
    if (ntags > ROWKEY_MAX_TAGS)
        return ct_err_set(err, CT_EINVAL, "too many tags: %zu (at most %d)", ntags,
                          ROWKEY_MAX_TAGS);
    size_t need = rowkey_tsuid_len(l, ntags);
    if (need > cap)
        return ct_err_set(err, CT_ELIMIT, "tsuid needs %zu bytes, buffer has %zu", need, cap);
    if (metric == 0 || !rowkey_fits(metric, l->metric_width))
        return ct_err_set(err, CT_EINVAL, "metric uid %llu does not fit %u byte(s)",
                          (unsigned long long)metric, l->metric_width);
    /* insertion sort of indexes by tagk (ntags is small) */
    uint8_t order[ROWKEY_MAX_TAGS];
    for (size_t i = 0; i < ntags; i++) {
        if (tags[i].tagk == 0 || !rowkey_fits(tags[i].tagk, l->tagk_width) || tags[i].tagv == 0 ||
            !rowkey_fits(tags[i].tagv, l->tagv_width))
            return ct_err_set(err, CT_EINVAL, "tag uid pair %llu=%llu does not fit the widths",
                              (unsigned long long)tags[i].tagk, (unsigned long long)tags[i].tagv);
        size_t j = i;
        while (j > 0 && tags[order[j - 1]].tagk > tags[i].tagk) {
            order[j] = order[j - 1];
            j--;
        }
        if (j > 0 && tags[order[j - 1]].tagk == tags[i].tagk)
            return ct_err_set(err, CT_EINVAL, "duplicate tag key uid %llu",
                              (unsigned long long)tags[i].tagk);
        order[j] = (uint8_t)i;
    }
    uint8_t *p = out;
    rowkey_put_uid(p, metric, l->metric_width);
    p += l->metric_width;
    for (size_t i = 0; i < ntags; i++) {
        rowkey_put_uid(p, tags[order[i]].tagk, l->tagk_width);
        p += l->tagk_width;
        rowkey_put_uid(p, tags[order[i]].tagv, l->tagv_width);
        p += l->tagv_width;
    }
    *len = need;
    return CT_OK;
}

int32_t rowkey_java_hash(const uint8_t *p, size_t n)
{
    /* h = 31 h + b per byte (b sign-extended, as Java's byte), four bytes a step with the
     * powers of 31 so the multiplications do not wait on each other: the salt of every point
     * written is this hash of its TSUID. Unsigned arithmetic: Java's int wraps, C's signed
     * overflow is undefined. */
    uint32_t h = 1;
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        h = 923521u * h + 29791u * (uint32_t)(int32_t)(int8_t)p[i] +
            961u * (uint32_t)(int32_t)(int8_t)p[i + 1] + 31u * (uint32_t)(int32_t)(int8_t)p[i + 2] +
            (uint32_t)(int32_t)(int8_t)p[i + 3];
    for (; i < n; i++)
        h = 31u * h + (uint32_t)(int32_t)(int8_t)p[i];
    return (int32_t)h;
}

uint32_t rowkey_salt_bucket(const struct rowkey_layout *l, const uint8_t *tsuid, size_t len)
{
    if (l->salt_width == 0 || len < l->metric_width)
        return 0;
    bool zero = true;
    for (unsigned i = 0; i < l->metric_width; i++)
        zero = zero && tsuid[i] == 0;
    if (zero)
        return 0;
    int32_t h = rowkey_java_hash(tsuid, len);
    int32_t m = h % (int32_t)l->salt_buckets; /* C99 truncates like Java */
    if (m < 0)
        m = -m;
    return (uint32_t)m;
}

void rowkey_salt_bytes(const struct rowkey_layout *l, uint32_t bucket, uint8_t *out)
{
    unsigned shift = 0;
    for (unsigned i = 1; i <= l->salt_width; i++) {
        out[l->salt_width - i] = (uint8_t)(bucket >> (shift & 31)); /* Java masks int shifts */
        shift += 8;
    }
}

size_t rowkey_encode(const struct rowkey_layout *l, const uint8_t *tsuid, size_t tsuid_len,
                     int64_t ts_s, uint8_t *out)
{
    return rowkey_encode_salted(l, rowkey_salt_bucket(l, tsuid, tsuid_len), tsuid, tsuid_len, ts_s,
                                out);
}

size_t rowkey_encode_salted(const struct rowkey_layout *l, uint32_t bucket, const uint8_t *tsuid,
                            size_t tsuid_len, int64_t ts_s, uint8_t *out)
{
    assert(tsuid_len >= l->metric_width);
    uint8_t *p = out;
    rowkey_salt_bytes(l, bucket, p);
    p += l->salt_width;
    memcpy(p, tsuid, l->metric_width);
    p += l->metric_width;
    coding_put_be32(p, (uint32_t)rowkey_base_hour_s(ts_s));
    p += ROWKEY_TIMESTAMP_BYTES;
    memcpy(p, tsuid + l->metric_width, tsuid_len - l->metric_width);
    p += tsuid_len - l->metric_width;
    return (size_t)(p - out);
}

int rowkey_decode(const struct rowkey_layout *l, const uint8_t *row, size_t len,
                  struct rowkey_parts *out, struct ct_err *err)
{
    size_t head = l->salt_width + l->metric_width + ROWKEY_TIMESTAMP_BYTES;
    size_t pair = l->tagk_width + l->tagv_width;
    if (len < head || (len - head) % pair != 0)
        return ct_err_set(err, CT_ECORRUPT,
                          "row key of %zu bytes does not fit the layout (salt %u, uid widths "
                          "%u/%u/%u)",
                          len, l->salt_width, l->metric_width, l->tagk_width, l->tagv_width);
    uint32_t salt = 0;
    for (unsigned i = 0; i < l->salt_width && i < 4; i++)
        salt = salt << 8 | row[l->salt_width - (l->salt_width < 4 ? l->salt_width : 4) + i];
    out->salt = salt;
    out->metric = rowkey_get_uid(row + l->salt_width, l->metric_width);
    out->base_s = coding_get_be32(row + l->salt_width + l->metric_width);
    out->ntags = (len - head) / pair;
    out->tags = row + head;
    return CT_OK;
}

struct rowkey_tag rowkey_parts_tag(const struct rowkey_layout *l, const struct rowkey_parts *p,
                                   size_t i)
{
    const uint8_t *t = p->tags + i * (l->tagk_width + l->tagv_width);
    struct rowkey_tag tag = {rowkey_get_uid(t, l->tagk_width),
                             rowkey_get_uid(t + l->tagk_width, l->tagv_width)};
    return tag;
}

size_t rowkey_tsuid_of(const struct rowkey_layout *l, const uint8_t *row, size_t len, uint8_t *out,
                       size_t cap)
{
    size_t head = l->salt_width + l->metric_width + ROWKEY_TIMESTAMP_BYTES;
    if (len < head)
        return 0;
    size_t n = len - l->salt_width - ROWKEY_TIMESTAMP_BYTES;
    if (n > cap)
        return 0;
    memcpy(out, row + l->salt_width, l->metric_width);
    memcpy(out + l->metric_width, row + head, len - head);
    return n;
}

bool rowkey_salt_ok(const struct rowkey_layout *l, const uint8_t *row, size_t len)
{
    if (l->salt_width == 0)
        return true;
    uint8_t tsuid[ROWKEY_MAX_TSUID];
    size_t n = rowkey_tsuid_of(l, row, len, tsuid, sizeof(tsuid));
    if (n == 0)
        return false;
    uint8_t salt[ROWKEY_MAX_SALT_WIDTH];
    rowkey_salt_bytes(l, rowkey_salt_bucket(l, tsuid, n), salt);
    return memcmp(salt, row, l->salt_width) == 0;
}

static size_t rowkey_scan_key(const struct rowkey_layout *l, uint32_t bucket, uint64_t metric,
                              int64_t base_s, uint8_t *out)
{
    rowkey_salt_bytes(l, bucket, out);
    rowkey_put_uid(out + l->salt_width, metric, l->metric_width);
    if (base_s < 0)
        base_s = 0;
    if (base_s > UINT32_MAX)
        base_s = UINT32_MAX;
    coding_put_be32(out + l->salt_width + l->metric_width, (uint32_t)base_s);
    return l->salt_width + l->metric_width + ROWKEY_TIMESTAMP_BYTES;
}

size_t rowkey_scan_start(const struct rowkey_layout *l, uint32_t bucket, uint64_t metric,
                         int64_t start_s, uint8_t *out)
{
    return rowkey_scan_key(l, bucket, metric, rowkey_base_hour_s(start_s), out);
}

size_t rowkey_scan_stop(const struct rowkey_layout *l, uint32_t bucket, uint64_t metric,
                        int64_t end_s, uint8_t *out)
{
    return rowkey_scan_key(l, bucket, metric, rowkey_base_hour_s(end_s) + ROWKEY_HOUR_S, out);
}

void rowkey_scan_window_reversed(const struct rowkey_layout *l, uint32_t bucket, uint64_t metric,
                                 int64_t bottom_s, int64_t top_s, uint8_t *upper, size_t *upper_len,
                                 uint8_t *lower, size_t *lower_len)
{
    *lower_len = rowkey_scan_start(l, bucket, metric, bottom_s, lower);
    size_t len = rowkey_scan_start(l, bucket, metric, top_s, upper);
    memset(upper + len, 0xFF, ROWKEY_MAX_TSUID);
    *upper_len = len + ROWKEY_MAX_TSUID;
}

/* ---- row filter ------------------------------------------------------------------------ */

struct rowkey_clause {
    uint64_t tagk;
    bool exclude;
    size_t n;
    uint64_t *tagvs; /* sorted, for binary search; &one for a single value */
    uint64_t one;
};

/* A filter of a few clauses of one value each (a query's literal tags) takes one allocation:
 * the first ROWKEY_FILTER_INLINE clauses live in the filter, a clause's single value in the
 * clause (the per-clause realloc and malloc were a twentieth of a last query's instructions). */
#define ROWKEY_FILTER_INLINE 8

struct rowkey_filter {
    struct rowkey_layout l;
    bool has_metric;
    uint64_t metric;
    struct rowkey_clause *clauses; /* inl, or the heap past ROWKEY_FILTER_INLINE */
    size_t nclauses, cap;
    struct rowkey_clause inl[ROWKEY_FILTER_INLINE];
};

int rowkey_filter_new(const struct rowkey_layout *l, struct rowkey_filter **out, struct ct_err *err)
{
    struct rowkey_filter *f = malloc(sizeof(*f));
    if (!f)
        return ct_err_set(err, CT_ENOMEM, "out of memory for a row filter");
    memset(f, 0, offsetof(struct rowkey_filter, inl));
    f->l = *l;
    f->clauses = f->inl;
    f->cap = ROWKEY_FILTER_INLINE;
    *out = f;
    return CT_OK;
}

void rowkey_filter_free(struct rowkey_filter *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->nclauses; i++)
        if (f->clauses[i].tagvs != &f->clauses[i].one)
            free(f->clauses[i].tagvs);
    if (f->clauses != f->inl)
        free(f->clauses);
    free(f);
}

void rowkey_filter_set_metric(struct rowkey_filter *f, uint64_t metric)
{
    f->has_metric = true;
    f->metric = metric;
}

static int rowkey_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int rowkey_filter_add(struct rowkey_filter *f, uint64_t tagk, const uint64_t *tagvs, size_t n,
                      bool exclude, struct ct_err *err)
{
    if (f->nclauses == f->cap) { /* doubled; single values move with their clauses */
        size_t nc = f->cap * 2;
        struct rowkey_clause *na = malloc(nc * sizeof(*na));
        if (!na)
            return ct_err_set(err, CT_ENOMEM, "out of memory for a row filter clause");
        memcpy(na, f->clauses, f->nclauses * sizeof(*na));
        for (size_t i = 0; i < f->nclauses; i++)
            if (f->clauses[i].tagvs == &f->clauses[i].one)
                na[i].tagvs = &na[i].one;
        if (f->clauses != f->inl)
            free(f->clauses);
        f->clauses = na;
        f->cap = nc;
    }
    struct rowkey_clause *c = &f->clauses[f->nclauses];
    c->tagk = tagk;
    c->exclude = exclude;
    c->n = n;
    c->tagvs = NULL;
    if (n == 1) {
        c->one = tagvs[0];
        c->tagvs = &c->one;
    } else if (n) {
        c->tagvs = malloc(n * sizeof(uint64_t));
        if (!c->tagvs)
            return ct_err_set(err, CT_ENOMEM, "out of memory for %zu tag values", n);
        memcpy(c->tagvs, tagvs, n * sizeof(uint64_t));
        qsort(c->tagvs, n, sizeof(uint64_t), rowkey_u64_cmp);
        size_t w = 1; /* a value listed twice (host=a|a): once, so key ranges never repeat */
        for (size_t i = 1; i < n; i++)
            if (c->tagvs[i] != c->tagvs[w - 1])
                c->tagvs[w++] = c->tagvs[i];
        c->n = w;
    }
    f->nclauses++;
    return CT_OK;
}

size_t rowkey_filter_lead(const struct rowkey_filter *f, size_t max_ranges, const uint64_t **vals,
                          size_t *nvals)
{
    size_t j = 0, ranges = 1;
    while (j < ROWKEY_MAX_TAGS) {
        const struct rowkey_clause *c = NULL;
        for (size_t i = 0; i < f->nclauses && !c; i++)
            if (f->clauses[i].tagk == j + 1 && !f->clauses[i].exclude && f->clauses[i].n)
                c = &f->clauses[i]; /* the first one: a superset of them all */
        if (!c || ranges * c->n > max_ranges)
            break;
        ranges *= c->n;
        vals[j] = c->tagvs;
        nvals[j] = c->n;
        j++;
    }
    return j;
}

bool rowkey_filter_pinned(const struct rowkey_filter *f, size_t i, uint64_t *tagk,
                          const uint64_t **vals, size_t *nvals)
{
    for (size_t c = 0; c < f->nclauses; c++) {
        if (f->clauses[c].exclude || !f->clauses[c].n)
            continue;
        if (i-- == 0) {
            *tagk = f->clauses[c].tagk;
            *vals = f->clauses[c].tagvs;
            *nvals = f->clauses[c].n;
            return true;
        }
    }
    return false;
}

size_t rowkey_lead_range(const struct rowkey_layout *l, uint32_t bucket, uint64_t metric,
                         int64_t hour_s, const uint64_t *v, size_t n, uint8_t *start, uint8_t *stop,
                         size_t *stop_len)
{
    size_t len = rowkey_scan_key(l, bucket, metric, rowkey_base_hour_s(hour_s), start);
    for (size_t i = 0; i < n; i++) {
        rowkey_put_uid(start + len, i + 1, l->tagk_width);
        len += l->tagk_width;
        rowkey_put_uid(start + len, v[i], l->tagv_width);
        len += l->tagv_width;
    }
    /* the first key after every key with this prefix */
    size_t sl = len;
    memcpy(stop, start, len);
    while (sl && stop[sl - 1] == 0xFF)
        sl--;
    if (sl)
        stop[sl - 1]++;
    *stop_len = sl;
    return len;
}

int rowkey_lead_ranges(const struct rowkey_layout *l, uint32_t bucket, uint64_t metric,
                       int64_t first_hour_s, int64_t last_hour_s, const uint64_t *const *vals,
                       const size_t *nvals, size_t nlead, struct wc_row_range **out, size_t *n,
                       struct ct_err *err)
{
    *out = NULL;
    *n = 0;
    int64_t h0 = rowkey_base_hour_s(first_hour_s), h1 = rowkey_base_hour_s(last_hour_s);
    if (h1 < h0)
        return CT_OK;
    uint64_t nr = (uint64_t)(h1 - h0) / ROWKEY_HOUR_S + 1;
    for (size_t i = 0; i < nlead && nr; i++) {
        nr *= nvals[i];
        if (nr > (1u << 20))
            return ct_err_set(err, CT_EINVAL, "more than %u leading-tag key ranges", 1u << 20);
    }
    if (!nr)
        return CT_OK;
    /* every key is the prefix [salt][metric][hour][tag pairs] (a stop is at most as long) */
    size_t klen = l->salt_width + l->metric_width + ROWKEY_TIMESTAMP_BYTES +
                  nlead * (l->tagk_width + l->tagv_width);
    struct wc_row_range *r = malloc(nr * (sizeof(*r) + 2 * klen));
    if (!r)
        return ct_err_set(err, CT_ENOMEM, "out of memory for %llu key ranges",
                          (unsigned long long)nr);
    uint8_t *k = (uint8_t *)(r + nr);
    size_t i = 0;
    for (int64_t h = h0; h <= h1; h += ROWKEY_HOUR_S) {
        size_t pos[ROWKEY_MAX_TAGS] = {0}; /* the combination of lead values, an odometer */
        for (;;) {
            uint64_t v[ROWKEY_MAX_TAGS];
            for (size_t j = 0; j < nlead; j++)
                v[j] = vals[j][pos[j]];
            size_t stop_len = 0;
            size_t len = rowkey_lead_range(l, bucket, metric, h, v, nlead, k, k + klen, &stop_len);
            assert(len == klen && stop_len <= klen && i < nr);
            r[i].start = wc_bytes_of(k, len);
            r[i].stop = wc_bytes_of(k + klen, stop_len);
            i++;
            k += 2 * klen;
            size_t j = nlead;
            while (j > 0 && pos[j - 1] + 1 == nvals[j - 1]) {
                pos[j - 1] = 0;
                j--;
            }
            if (j == 0)
                break;
            pos[j - 1]++;
        }
    }
    assert(i == nr);
    *out = r;
    *n = i;
    return CT_OK;
}

/* A uid of width bytes; the usual width (3) without the byte loop. */
static inline uint64_t rowkey_uid_at(const uint8_t *p, unsigned width)
{
    if (width == 3)
        return (uint64_t)p[0] << 16 | (uint64_t)p[1] << 8 | p[2];
    return rowkey_get_uid(p, width);
}

/* Whether v is among a clause's n >= 1 sorted values: a few compared in turn, more by binary
 * search (no callback: this runs once per row a query reads). */
static inline bool rowkey_clause_has(const struct rowkey_clause *cl, uint64_t v)
{
    const uint64_t *a = cl->tagvs;
    size_t n = cl->n;
    if (n <= 8) {
        for (size_t i = 0; i < n; i++)
            if (a[i] == v)
                return true;
        return false;
    }
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] == v)
            return true;
        if (a[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* Runs once per row a filtered scan meets, so the key's tag keys are decoded once into a local
 * array (each clause then compares integers; the pairs are sorted by tagk, invariant 1, so a
 * clause stops at the first larger key), values only when a clause needs them. */
bool rowkey_filter_match(const struct rowkey_filter *f, const uint8_t *row, size_t len)
{
    const struct rowkey_layout *l = &f->l;
    size_t head = l->salt_width + l->metric_width + ROWKEY_TIMESTAMP_BYTES;
    size_t pair = l->tagk_width + l->tagv_width;
    if (len < head || (len - head) % pair != 0)
        return false;
    if (f->has_metric && rowkey_uid_at(row + l->salt_width, l->metric_width) != f->metric)
        return false;
    size_t ntags = (len - head) / pair;
    const uint8_t *tags = row + head;
    uint64_t ks[ROWKEY_MAX_TAGS];
    size_t nk = ntags < ROWKEY_MAX_TAGS ? ntags : ROWKEY_MAX_TAGS;
    if (f->nclauses)
        for (size_t i = 0; i < nk; i++)
            ks[i] = rowkey_uid_at(tags + i * pair, l->tagk_width);
    for (size_t c = 0; c < f->nclauses; c++) {
        const struct rowkey_clause *cl = &f->clauses[c];
        size_t at = ntags; /* the pair holding cl->tagk, ntags if none */
        for (size_t i = 0; i < ntags; i++) {
            uint64_t k = i < nk ? ks[i] : rowkey_uid_at(tags + i * pair, l->tagk_width);
            if (k >= cl->tagk) {
                if (k == cl->tagk)
                    at = i;
                break; /* pairs are sorted by tagk (invariant 1) */
            }
        }
        bool found = at < ntags;
        if (cl->n == 0) {
            if (found == cl->exclude)
                return false;
            continue;
        }
        if (!found)
            return false;
        uint64_t v = rowkey_uid_at(tags + at * pair + l->tagk_width, l->tagv_width);
        if (rowkey_clause_has(cl, v) == cl->exclude)
            return false;
    }
    return true;
}

enum wc_row_decision rowkey_filter_fn(void *arg, const uint8_t *row, size_t len)
{
    return rowkey_filter_match(arg, row, len) ? WC_ROW_INCLUDE : WC_ROW_SKIP;
}
