/* histogram.h - OpenTSDB 2.4's histogram datapoints: the SimpleHistogram model (regular buckets
 * [lo, hi) with counts, plus underflow and overflow counts), its byte codec, the SUM merge and
 * the percentile rule, and the cell that holds one histogram point in the data table.
 *
 * Codec (SimpleHistogram, as Kryo 2.21 writes it): [codec id byte, when with_id] then a
 * big-endian 16-bit bucket count, per bucket the lower and upper bound as big-endian IEEE
 * floats and the count as a varint (7 bits a byte, least significant group first, high bit =
 * more; a ninth byte carries 8 bits), then the underflow and overflow counts as varints.
 * Cell: the series' hour row, qualifier 0x06 + 2-byte seconds offset (or 4-byte milliseconds
 * offset), value = codec id byte + codec bytes; readers of datapoints skip these cells
 * (schema/dpcodec.h).
 *
 * Invariants: buckets are kept sorted by (lower, upper) bound as Java's TreeMap of
 * HistogramBucket orders them, and a (lower, upper) pair occurs once (adding to it sums). */
#ifndef CT_SCHEMA_HISTOGRAM_H
#define CT_SCHEMA_HISTOGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/ct_err.h"

struct tsdb;

/* The id OpenTSDB's examples give SimpleHistogramDecoder in tsd.core.histograms.config. */
#define HISTO_SIMPLE_ID 0
/* The most buckets one histogram holds (the codec's count is a signed 16-bit number). */
#define HISTO_MAX_BUCKETS 32767

struct histo_bucket {
    float lo, hi;
    uint64_t count;
};

struct histo {
    uint8_t id;
    struct histo_bucket *b;
    size_t n, cap;
    uint64_t underflow, overflow;
};

void histo_init(struct histo *h, uint8_t id);
void histo_clear(struct histo *h); /* frees the buckets; h can be reused after histo_init */

/* Adds count to bucket [lo, hi), creating it in order. CT_EINVAL for lo > hi or a NaN bound,
 * CT_ELIMIT past HISTO_MAX_BUCKETS, CT_ENOMEM. */
CT_MUST_CHECK int histo_add(struct histo *h, float lo, float hi, uint64_t count,
                            struct ct_err *err);
/* dst += src bucket by bucket, underflow and overflow too (OpenTSDB's SUM aggregation). */
CT_MUST_CHECK int histo_merge(struct histo *dst, const struct histo *src, struct ct_err *err);
/* The p-th percentile as SimpleHistogram.percentile computes it: the midpoint of the first
 * bucket whose cumulative count reaches p percent of all bucket counts (under- and overflow
 * not counted); -1 when p is outside [1, 100]; 0 when the buckets hold nothing. */
double histo_percentile(const struct histo *h, double p);

/* Encodes h into a new buffer *out (free()) of *len bytes. */
CT_MUST_CHECK int histo_encode(const struct histo *h, bool with_id, uint8_t **out, size_t *len,
                               struct ct_err *err);
/* Decodes len bytes into h (initialised by the caller; its buckets replaced). CT_EINVAL for
 * bytes that are not a whole SimpleHistogram (short, truncated varint, trailing bytes). */
CT_MUST_CHECK int histo_decode(const uint8_t *p, size_t len, bool with_id, struct histo *h,
                               struct ct_err *err);

/* The qualifier of a histogram point at ts_ms in the hour starting at base_s (3 bytes when ts_ms
 * is a whole second, else 5); returns its length. */
size_t histo_qualifier(int64_t base_s, int64_t ts_ms, uint8_t *q);
/* Whether q is a histogram qualifier, and the time (ms) it names in the hour base_s. */
bool histo_qualifier_time(int64_t base_s, const uint8_t *q, size_t qlen, int64_t *ts_ms);

/* Stores the histogram cell (value = id byte + codec bytes, as histo_encode with_id gives) of
 * series tsuid at ts_ms, at the table's default durability. */
CT_MUST_CHECK int histo_put(struct tsdb *t, const uint8_t *tsuid, size_t tsuid_len, int64_t ts_ms,
                            const uint8_t *value, size_t len, struct ct_err *err);
/* One histogram cell to store: series tsuid, time, value (id byte + codec bytes). */
struct histo_cell {
    const uint8_t *tsuid;
    size_t tsuid_len;
    int64_t ts_ms;
    const uint8_t *value;
    size_t len;
};
/* Stores n cells in one store write (one log record and sync), at the table's default
 * durability: each cell's row atomic, the whole not (a failure names the first failing row;
 * cells before it may be stored); then the series' tag index entries (schema/tagidx.h), one
 * write. CT_EINVAL, storing nothing, when a cell's tsuid length or time (0 < ts_ms <=
 * 9999999999999) is invalid. histo_put is histo_put_many of one cell. */
CT_MUST_CHECK int histo_put_many(struct tsdb *t, const struct histo_cell *c, size_t n,
                                 struct ct_err *err);

#endif
