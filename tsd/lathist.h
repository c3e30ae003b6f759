/* lathist.h - lock-free latency histograms for the TSD's stats: OpenTSDB 2.4's millisecond
 * layout (the one behind tsd.http.latency_<p>pct), and ctsdb's finer microsecond layout.
 *
 * Adding a value is one relaxed atomic add on one bucket, from any thread. Reading (count,
 * percentiles) takes a snapshot of the buckets with relaxed loads: each bucket exact, the set
 * not atomic, so a reader racing adds sees some of them and not others, never a torn count.
 * Histograms only grow; nothing resets them (OpenTSDB's never reset either).
 *
 * Percentiles follow OpenTSDB's net.opentsdb.stats.Histogram#percentile: for p in [1, 100] and
 * n values, rank = n * p / 100 (integer division); walking down from the top bucket, each
 * bucket's count is taken off n, and the first bucket after which at most `rank` values remain
 * gives the answer: its exclusive upper bound. So the answer is an upper bound of the p-th
 * percentile, to the bucket's width. An empty histogram answers 0. (OpenTSDB counts in a Java
 * int, so its n * p overflows past ~21 million values; here counts are 64-bit.) */
#ifndef CT_TSD_LATHIST_H
#define CT_TSD_LATHIST_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

enum lathist_layout {
    /* OpenTSDB 2.4's `new Histogram(16000, (short) 2, 100)`, values in milliseconds:
     * 50 linear buckets of 2 ms covering [0, 100), then 13 doubling buckets
     * [100, 104), [104, 108), [108, 116), ..., [8292, 16484), then one overflow bucket
     * [16484, inf) whose upper bound reads as 2147483647 (Java's Integer.MAX_VALUE). */
    LATHIST_OTSDB_MS = 0,
    /* ctsdb's own, values in microseconds: exact buckets 0..15, then 16 equal buckets per
     * power of two up to 2^40 us (about 12.7 days), so a bucket's width is at most 1/16 of
     * its lower bound; values of 2^40 us or more are counted in the top bucket. */
    LATHIST_FINE_US = 1,
};

#define LATHIST_OTSDB_NBUCKETS 64
#define LATHIST_FINE_NBUCKETS  592
#define LATHIST_FINE_MAX_US    ((UINT64_C(1) << 40) - 1)
#define LATHIST_OTSDB_INF      UINT64_C(2147483647)

/* Shown because the TSD keeps its histograms as static globals (tsd/tstats.c) and tests keep
 * them on the stack: callers hold it by value but touch it only through the functions below.
 * A zeroed struct (static storage, or lathist_init) is an empty histogram. */
struct lathist {
    enum lathist_layout layout;
    _Atomic uint64_t buckets[LATHIST_FINE_NBUCKETS]; /* the first nbuckets(layout) are used */
};

/* A static initializer for an empty histogram of the given layout. */
#define LATHIST_INITIALIZER(lay)                                                                   \
    {                                                                                              \
        .layout = (lay)                                                                            \
    }

/* Makes h an empty histogram of the given layout (for storage that is not static). */
void lathist_init(struct lathist *h, enum lathist_layout layout);
/* Number of buckets of a layout. */
size_t lathist_nbuckets(enum lathist_layout layout);
/* Index of the bucket a value falls in. */
size_t lathist_bucket_of(enum lathist_layout layout, uint64_t value);
/* Exclusive upper bound of bucket i (< lathist_nbuckets), what percentiles report. */
uint64_t lathist_bucket_high(enum lathist_layout layout, size_t i);
/* Counts one value (ms or us, per the layout). Thread-safe, lock-free: one relaxed add. */
void lathist_add(struct lathist *h, uint64_t value);
/* Values counted in bucket i, and in all. Thread-safe. */
uint64_t lathist_bucket_count(const struct lathist *h, size_t i);
uint64_t lathist_count(const struct lathist *h);
/* Writes the percentiles ps[0..n) (each in [1, 100]) of one snapshot of h into out[0..n), so
 * percentiles asked in ascending order come out non-decreasing even while others add.
 * Thread-safe. */
void lathist_percentiles(const struct lathist *h, const int *ps, uint64_t *out, size_t n);

#endif
