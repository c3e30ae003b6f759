/* rowkey.h - OpenTSDB row keys of the data table: [salt][metric uid][base hour][tagk tagv]...
 *
 * A series is named by its TSUID: the metric uid followed by (tagk uid, tagv uid) pairs sorted by
 * tagk uid bytes (unsigned), exactly OpenTSDB's TSUID. A row key inserts the salt before it and
 * the 4-byte big-endian base hour (ts_s - ts_s % 3600) after the metric uid. The salt bucket is
 * OpenTSDB's: abs(Arrays.hashCode(metric uid || tag pairs) % buckets) with Java's signed-byte,
 * 32-bit wrapping hash; the global annotation row (metric uid all zero) is never salted.
 * Byte layouts are described in docs/schema.md. Everything here is allocation-free except the
 * row filter (one allocation at build time). */
#ifndef CT_SCHEMA_ROWKEY_H
#define CT_SCHEMA_ROWKEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/ct_err.h"
#include "storage/wc.h"

#define ROWKEY_TIMESTAMP_BYTES 4
#define ROWKEY_MAX_SALT_WIDTH  8
#define ROWKEY_MAX_UID_WIDTH   8
#define ROWKEY_MAX_TAGS        64 /* hard upper bound of tsd.storage.max_tags */
#define ROWKEY_HOUR_S          3600
/* Longest possible TSUID and row key. */
#define ROWKEY_MAX_TSUID (ROWKEY_MAX_UID_WIDTH * (1 + 2 * ROWKEY_MAX_TAGS))
#define ROWKEY_MAX_BYTES (ROWKEY_MAX_SALT_WIDTH + ROWKEY_TIMESTAMP_BYTES + ROWKEY_MAX_TSUID)

/* The widths that shape keys. Held by value; initialise with rowkey_layout_init(). */
struct rowkey_layout {
    unsigned salt_width;   /* tsd.storage.salt.width, 0 (off) ..= 8 */
    unsigned salt_buckets; /* tsd.storage.salt.buckets, >= 1 (default 20) */
    unsigned metric_width; /* tsd.storage.uid.width.metric, 1 ..= 8 (default 3) */
    unsigned tagk_width;   /* tsd.storage.uid.width.tagk */
    unsigned tagv_width;   /* tsd.storage.uid.width.tagv */
};

/* OpenTSDB's defaults: no salt, 20 buckets, 3-byte uids. */
void rowkey_layout_init(struct rowkey_layout *l);
/* CT_EINVAL naming the setting if a width or bucket count is out of range. */
CT_MUST_CHECK int rowkey_layout_check(const struct rowkey_layout *l, struct ct_err *err);

/* One tag of a series as uids. */
struct rowkey_tag {
    uint64_t tagk;
    uint64_t tagv;
};

/* Bytes of a TSUID with ntags tags, and of its row key. */
size_t rowkey_tsuid_len(const struct rowkey_layout *l, size_t ntags);
size_t rowkey_len(const struct rowkey_layout *l, size_t ntags);

/* Builds the TSUID of (metric, tags) into out (cap bytes): tags sorted by tagk uid. CT_EINVAL if
 * there is no tag, more than ROWKEY_MAX_TAGS, a duplicate tagk, a uid of 0 or one too wide for
 * its width; CT_ELIMIT if cap is too small. *len gets the length. */
CT_MUST_CHECK int rowkey_tsuid_build(const struct rowkey_layout *l, uint64_t metric,
                                     const struct rowkey_tag *tags, size_t ntags, uint8_t *out,
                                     size_t cap, size_t *len, struct ct_err *err);

/* Java's Arrays.hashCode(byte[]): h = 31*h + (signed byte), from h = 1, 32-bit wrap. */
int32_t rowkey_java_hash(const uint8_t *p, size_t n);
/* The salt bucket of a TSUID (0 when salting is off or the metric uid is all zero). */
uint32_t rowkey_salt_bucket(const struct rowkey_layout *l, const uint8_t *tsuid, size_t len);
/* Writes the salt bytes of `bucket` as OpenTSDB's RowKey.getSaltBytes() does (big-endian, with
 * Java's shift-count masking for widths over 4) into out[0 .. salt_width). */
void rowkey_salt_bytes(const struct rowkey_layout *l, uint32_t bucket, uint8_t *out);

/* Base hour of a timestamp in seconds. */
static inline int64_t rowkey_base_hour_s(int64_t ts_s)
{
    return ts_s - ((ts_s % ROWKEY_HOUR_S) + ROWKEY_HOUR_S) % ROWKEY_HOUR_S;
}

/* Writes the row key of the series `tsuid` for the hour holding ts_s into out (room for
 * salt_width + 4 + tsuid_len bytes); returns the key length. Never fails: tsuid_len must be a
 * valid TSUID length (asserted). */
size_t rowkey_encode(const struct rowkey_layout *l, const uint8_t *tsuid, size_t tsuid_len,
                     int64_t ts_s, uint8_t *out);
/* rowkey_encode() with the series' salt bucket given (rowkey_salt_bucket(l, tsuid, tsuid_len),
 * which a writer computes once per series, not once per point). */
size_t rowkey_encode_salted(const struct rowkey_layout *l, uint32_t bucket, const uint8_t *tsuid,
                            size_t tsuid_len, int64_t ts_s, uint8_t *out);

/* A decoded row key; pointers borrow the key. */
struct rowkey_parts {
    uint32_t salt;   /* the salt bucket stored in the key */
    uint64_t metric; /* metric uid */
    int64_t base_s;  /* base hour, seconds */
    size_t ntags;
    const uint8_t *tags; /* ntags * (tagk_width + tagv_width) bytes */
};
/* Decodes a row key. CT_ECORRUPT if its length does not fit the layout. */
CT_MUST_CHECK int rowkey_decode(const struct rowkey_layout *l, const uint8_t *row, size_t len,
                                struct rowkey_parts *out, struct ct_err *err);
/* The i-th tag of decoded parts. */
struct rowkey_tag rowkey_parts_tag(const struct rowkey_layout *l, const struct rowkey_parts *p,
                                   size_t i);
/* Copies the TSUID of a row key into out (cap bytes); returns its length, 0 if the key is too
 * short or cap too small. */
size_t rowkey_tsuid_of(const struct rowkey_layout *l, const uint8_t *row, size_t len, uint8_t *out,
                       size_t cap);
/* True if the key's salt is the one its series should have (fsck). */
bool rowkey_salt_ok(const struct rowkey_layout *l, const uint8_t *row, size_t len);

/* Scan bounds of a metric's rows in one salt bucket over [start_s, end_s] (hours holding them):
 * start = [salt][metric][base(start)], stop = [salt][metric][base(end)+3600] (exclusive). Both
 * buffers need salt_width + metric_width + 4 bytes; returns that length. */
size_t rowkey_scan_start(const struct rowkey_layout *l, uint32_t bucket, uint64_t metric,
                         int64_t start_s, uint8_t *out);
size_t rowkey_scan_stop(const struct rowkey_layout *l, uint32_t bucket, uint64_t metric,
                        int64_t end_s, uint8_t *out);

/* The same window [bottom_s, top_s] as reversed-scan bounds: upper (inclusive: the key of
 * top_s's hour then ROWKEY_MAX_TSUID 0xFF bytes, above every row of that hour) and lower
 * (exclusive: the key of bottom_s's hour, below every row of it). upper needs
 * ROWKEY_MAX_BYTES + ROWKEY_MAX_TSUID bytes, lower ROWKEY_MAX_BYTES. */
void rowkey_scan_window_reversed(const struct rowkey_layout *l, uint32_t bucket, uint64_t metric,
                                 int64_t bottom_s, int64_t top_s, uint8_t *upper, size_t *upper_len,
                                 uint8_t *lower, size_t *lower_len);

/* Uids as big-endian width-byte strings. */
void rowkey_put_uid(uint8_t *out, uint64_t id, unsigned width);
uint64_t rowkey_get_uid(const uint8_t *p, unsigned width);

/* ---- row filter on tag uids ------------------------------------------------------------ */

/* A conjunction of clauses on a row's tags, evaluated on the key alone (no cell is read).
 * Optionally also requires one metric uid. Built once per query, then read-only (thread-safe). */
struct rowkey_filter;

/* Returns a new empty filter (accepts every row of any metric) in *out, freed with
 * rowkey_filter_free(). Borrows nothing. */
CT_MUST_CHECK int rowkey_filter_new(const struct rowkey_layout *l, struct rowkey_filter **out,
                                    struct ct_err *err);
void rowkey_filter_free(struct rowkey_filter *f);
/* Requires the row's metric uid to be `metric`. */
void rowkey_filter_set_metric(struct rowkey_filter *f, uint64_t metric);
/* Adds a clause on tagk:
 *   n == 0, exclude false: the row must have tagk (any value);
 *   n > 0,  exclude false: the row must have tagk with a value in tagvs[0..n);
 *   n > 0,  exclude true:  the row must have tagk with a value NOT in tagvs[0..n);
 *   n == 0, exclude true:  the row must NOT have tagk.
 * tagvs is copied. CT_ENOMEM possible. */
CT_MUST_CHECK int rowkey_filter_add(struct rowkey_filter *f, uint64_t tagk, const uint64_t *tagvs,
                                    size_t n, bool exclude, struct ct_err *err);
/* The leading tags every row key the filter accepts begins with: when the filter pins tagk uid
 * 1 to listed values (an including clause), and uid 2, and so on up to uid j, vals[i] / nvals[i]
 * get the sorted values of uid i + 1 (borrowed from the filter). Tags are sorted by tagk uid in
 * a key and uids start at 1 (rowkey_tsuid_build refuses 0), so an accepted row of an hour lies
 * in one of the prod(nvals) ranges rowkey_lead_range() gives. Stops before the product would
 * pass max_ranges. Returns j (0: the filter does not pin uid 1). */
size_t rowkey_filter_lead(const struct rowkey_filter *f, size_t max_ranges, const uint64_t **vals,
                          size_t *nvals);
/* The i-th clause of the filter that pins a tag key to listed values (an including clause with
 * values): true with its tagk uid and sorted values (borrowed from the filter); false past the
 * last such clause. Every row the filter accepts carries one of each such clause's values. */
bool rowkey_filter_pinned(const struct rowkey_filter *f, size_t i, uint64_t *tagk,
                          const uint64_t **vals, size_t *nvals);
/* The key range [start, stop) of the rows of bucket, metric and the hour of hour_s whose first
 * tags are (1, v[0]), ..., (n, v[n-1]). Both buffers need ROWKEY_MAX_BYTES; returns the length
 * of start, and the length of stop in *stop_len. */
size_t rowkey_lead_range(const struct rowkey_layout *l, uint32_t bucket, uint64_t metric,
                         int64_t hour_s, const uint64_t *v, size_t n, uint8_t *start, uint8_t *stop,
                         size_t *stop_len);
/* The rowkey_lead_range() ranges of bucket and metric for every base hour from first_hour_s's to
 * last_hour_s's and every combination of lead values (vals[i][0..nvals[i]) for tagk uid i + 1,
 * sorted as rowkey_filter_lead gives them), as one multi-range scan's wc_scan_options.ranges:
 * ascending key order (hour by hour, each hour's combinations with the last tag changing
 * fastest), disjoint. Returns a new array in *out (count in *n; its keys live in the same
 * allocation), freed with free(); *out is NULL when there are none. CT_EINVAL past 2^20
 * ranges, CT_ENOMEM. */
CT_MUST_CHECK int rowkey_lead_ranges(const struct rowkey_layout *l, uint32_t bucket,
                                     uint64_t metric, int64_t first_hour_s, int64_t last_hour_s,
                                     const uint64_t *const *vals, const size_t *nvals, size_t nlead,
                                     struct wc_row_range **out, size_t *n, struct ct_err *err);
/* Evaluates the filter on a row key (no allocation). */
bool rowkey_filter_match(const struct rowkey_filter *f, const uint8_t *row, size_t len);
/* The filter as a wc_row_filter_fn: pass rowkey_filter_fn with the filter as arg. Rows that do
 * not match are WC_ROW_SKIP. */
enum wc_row_decision rowkey_filter_fn(void *arg, const uint8_t *row, size_t len);

#endif
