/* lathist.c - the latency histograms of lathist.h: bucket arithmetic for the two layouts, a
 * relaxed add, and OpenTSDB's percentile rule over a snapshot.
 *
 * Invariants: (1) lathist_bucket_of(l, v) < lathist_nbuckets(l) for every v; (2) buckets are
 * contiguous and ascending: bucket i covers [high(i - 1), high(i)) with high(-1) = 0, so
 * lathist_bucket_high is strictly increasing; (3) only buckets[0, nbuckets(layout)) are ever
 * written. Locking: none; every bucket is an atomic read and written with relaxed order (the
 * counts order nothing else). */
#include "tsd/lathist.h"

#include <assert.h>

/* OpenTSDB layout: linear 2 ms buckets below 100 ms, then doubling ones (see lathist.h). */
#define OTSDB_INTERVAL_MS 2
#define OTSDB_CUTOFF_MS   100
#define OTSDB_NLINEAR     (OTSDB_CUTOFF_MS / OTSDB_INTERVAL_MS)
/* Fine layout: 2^FINE_SUB_BITS buckets per power of two, exact below 2^FINE_SUB_BITS. */
#define FINE_SUB_BITS 4
#define FINE_SUB      (1u << FINE_SUB_BITS)

static unsigned lathist_log2(uint64_t v) /* floor(log2(v)) for v >= 1 */
{
    return 63u - (unsigned)__builtin_clzll(v);
}

void lathist_init(struct lathist *h, enum lathist_layout layout)
{
    h->layout = layout;
    for (size_t i = 0; i < LATHIST_FINE_NBUCKETS; i++)
        atomic_init(&h->buckets[i], 0);
}

size_t lathist_nbuckets(enum lathist_layout layout)
{
    return layout == LATHIST_OTSDB_MS ? LATHIST_OTSDB_NBUCKETS : LATHIST_FINE_NBUCKETS;
}

size_t lathist_bucket_of(enum lathist_layout layout, uint64_t value)
{
    if (layout == LATHIST_OTSDB_MS) {
        if (value < OTSDB_CUTOFF_MS)
            return (size_t)(value / OTSDB_INTERVAL_MS);
        /* past the cutoff, in intervals u above it: bucket k counts u in [2^k, 2^(k+1)), the
         * first one (k = 0) also u = 0 */
        uint64_t units = (value - OTSDB_CUTOFF_MS) / OTSDB_INTERVAL_MS;
        size_t i = OTSDB_NLINEAR + (units > 1 ? lathist_log2(units) : 0);
        return i < LATHIST_OTSDB_NBUCKETS ? i : LATHIST_OTSDB_NBUCKETS - 1;
    }
    if (value > LATHIST_FINE_MAX_US)
        value = LATHIST_FINE_MAX_US;
    if (value < FINE_SUB)
        return (size_t)value;
    unsigned e = lathist_log2(value); /* >= FINE_SUB_BITS */
    unsigned shift = e - FINE_SUB_BITS;
    size_t sub = (size_t)(value >> shift) - FINE_SUB; /* 0 .. FINE_SUB - 1 */
    return FINE_SUB + (size_t)shift * FINE_SUB + sub;
}

uint64_t lathist_bucket_high(enum lathist_layout layout, size_t i)
{
    assert(i < lathist_nbuckets(layout));
    if (layout == LATHIST_OTSDB_MS) {
        if (i < OTSDB_NLINEAR)
            return (uint64_t)(i + 1) * OTSDB_INTERVAL_MS;
        if (i == LATHIST_OTSDB_NBUCKETS - 1)
            return LATHIST_OTSDB_INF;
        /* exponential bucket k = i - NLINEAR ends at cutoff + 2^(k+1) intervals */
        return OTSDB_CUTOFF_MS + ((uint64_t)OTSDB_INTERVAL_MS << (i - OTSDB_NLINEAR + 1));
    }
    if (i < FINE_SUB)
        return (uint64_t)i + 1;
    size_t shift = (i - FINE_SUB) / FINE_SUB, sub = (i - FINE_SUB) % FINE_SUB;
    return (uint64_t)(FINE_SUB + sub + 1) << shift;
}

void lathist_add(struct lathist *h, uint64_t value)
{
    atomic_fetch_add_explicit(&h->buckets[lathist_bucket_of(h->layout, value)], 1,
                              memory_order_relaxed);
}

uint64_t lathist_bucket_count(const struct lathist *h, size_t i)
{
    assert(i < lathist_nbuckets(h->layout));
    return atomic_load_explicit(&h->buckets[i], memory_order_relaxed);
}

uint64_t lathist_count(const struct lathist *h)
{
    uint64_t n = 0;
    for (size_t i = 0; i < lathist_nbuckets(h->layout); i++)
        n += lathist_bucket_count(h, i);
    return n;
}

void lathist_percentiles(const struct lathist *h, const int *ps, uint64_t *out, size_t n)
{
    uint64_t snap[LATHIST_FINE_NBUCKETS];
    size_t nb = lathist_nbuckets(h->layout);
    uint64_t total = 0;
    for (size_t i = 0; i < nb; i++) {
        snap[i] = lathist_bucket_count(h, i);
        total += snap[i];
    }
    for (size_t k = 0; k < n; k++) {
        assert(ps[k] >= 1 && ps[k] <= 100);
        out[k] = 0;
        if (total == 0)
            continue;
        uint64_t rank = total * (uint64_t)ps[k] / 100, left = total;
        for (size_t i = nb; i-- > 0;) {
            left -= snap[i];
            if (left <= rank) {
                out[k] = lathist_bucket_high(h->layout, i);
                break;
            }
        }
    }
}
