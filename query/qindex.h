/* qindex.h - the query's use of the tag index (schema/tagidx.h): picks a sub-query's series
 * from the index when its filters pin a tag to a few values, and turns them into exact key
 * ranges (one per series and hour) for the scan, so that the rows of other series are never
 * walked.
 * Planning rule: the index is used when (1) its marker says it is complete, (2) the row filter
 * has an including clause with listed values (literal_or, exact tags), and (3) the series it
 * yields, times the hours of the window, are at most max_ranges key ranges; the clause read is
 * the one with the fewest values. Otherwise the sub-query scans the metric's key range (or its
 * leading-tag ranges) as before, in the salt buckets the index's series live in only
 * (qindex_buckets). The series found are still checked by the row filter on every row read, so
 * an index entry of a deleted or expired series costs a few seeks (or a bucket's walk), never
 * an answer.
 * Threading: qindex_select on the query's thread; qindex_ranges from any scan thread. */
#ifndef CT_QINDEX_H
#define CT_QINDEX_H

#include <stddef.h>
#include <stdint.h>

#include "schema/rowkey.h"
#include "schema/tsdb.h"
#include "storage/ct_err.h"
#include "storage/wc.h"

/* The series of metric that rf accepts, from the index, for a window of `hours` hours:
 * CT_OK with *tsuids / *lens / *n (sorted, new arrays and TSUIDs freed by the caller with
 * free(); n may be 0: no series matches); CT_NOTFOUND when the rule above says not to use it
 * (nothing allocated). */
CT_MUST_CHECK int qindex_select(struct tsdb *t, const struct rowkey_filter *rf, uint64_t metric,
                                uint64_t hours, uint64_t max_ranges, uint8_t ***tsuids,
                                size_t **lens, size_t *n, struct ct_err *err);
/* The salt buckets that may hold a series rf accepts, from the index (bit b of *mask: bucket b),
 * for a sub-query that walks the metric's key range because qindex_select() declined (more
 * series x hours than its key ranges): the buckets none of those series lives in are not
 * walked. CT_OK with *mask; CT_NOTFOUND when the index cannot say (not complete, no including
 * clause with listed values or more than QINDEX_BUCKET_VALUES of them, the layout unsalted or
 * of more than 64 buckets). Reading stops once every bucket is marked. A series with an entry
 * but no row (deleted, expired) only costs its bucket's walk. */
#define QINDEX_BUCKET_VALUES 16
CT_MUST_CHECK int qindex_buckets(struct tsdb *t, const struct rowkey_filter *rf, uint64_t metric,
                                 uint64_t *mask, struct ct_err *err);
/* The exact key ranges of the series tsuids[0..n) (sorted) that lie in salt bucket `bucket`, for
 * every base hour from first_hour_s's to last_hour_s's: one [row key, row key + "\0") per series
 * and hour, ascending (hour by hour, series in TSUID order), for wc_scan_options.ranges. A new
 * array in *out (keys in the same allocation; free()), NULL with *nr 0 when there are none. */
CT_MUST_CHECK int qindex_ranges(const struct rowkey_layout *l, uint32_t bucket,
                                int64_t first_hour_s, int64_t last_hour_s,
                                uint8_t *const *tsuids, const size_t *lens, size_t n,
                                struct wc_row_range **out, size_t *nr, struct ct_err *err);

#endif
