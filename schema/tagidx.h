/* tagidx.h - the tag index (ctsdb's own, not OpenTSDB's): for a metric and one tag value, the
 * series that carry it, so that a query whose filters pin a tag to a few values reads those
 * series' rows only. Kept in the meta table (tsdb-meta), family "name":
 *   entry row  = TAGIDX_PREFIX (8 zero bytes, "ctsdb.tix") [metric uid][tagk uid][tagv uid]
 *                (the layout's widths); one cell per series carrying the tag: qualifier = the
 *                series' TSUID, value empty;
 *   marker row = TAGIDX_PREFIX alone, qualifier "complete" (8-byte big-endian time, ms, it was
 *                set): present when every series of the data table has its entries.
 * The prefix begins with 8 zero bytes, the key of no TSUID (metric uids start at 1, widths are
 * at most 8), so TSMeta scans of a metric never see these rows.
 * Invariants: (1) the TSD's writer puts a series' entries (one per tag) after its first points
 * of the process are stored and before they are acknowledged (tsd/store.c), so with the marker
 * set every series with stored rows has its entries; (2) entries are never removed: an entry
 * whose rows were deleted or expired costs a few reads, never a wrong answer (the query still
 * applies its filters to every row read); (3) uids never change (a UID rename changes names
 * only), so an entry stays right under renames; (4) the marker is set only on an empty data
 * table (tagidx_mark_if_empty) or by tagidx_rebuild after it has written every series' entries.
 * Threading: as the tsdb handle (any thread). */
#ifndef CT_TAGIDX_H
#define CT_TAGIDX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "schema/tsdb.h"
#include "storage/ct_err.h"
#include "storage/wc.h"

#define TAGIDX_PREFIX     "\0\0\0\0\0\0\0\0ctsdb.tix"
#define TAGIDX_PREFIX_LEN 17
#define TAGIDX_MARKER     "complete"

/* One series whose entries tagidx_put writes. */
struct tagidx_series {
    const uint8_t *tsuid;
    size_t len;
};
/* Puts the entries of series s[0..n) (one per tag of each; one wc_mutate_batch per chunk, at
 * durability d). A TSUID whose length does not fit the layout is CT_EINVAL. */
CT_MUST_CHECK int tagidx_put(struct tsdb *t, const struct tagidx_series *s, size_t n,
                             enum wc_durability d, struct ct_err *err);
/* Calls fn for each series recorded under (metric, tagk, tagv), in TSUID order; fn returning
 * non-zero stops the read (CT_OK). The TSUID is borrowed for the call. */
typedef int (*tagidx_fn)(void *arg, const uint8_t *ts, size_t tl);
CT_MUST_CHECK int tagidx_read(struct tsdb *t, uint64_t metric, uint64_t tagk, uint64_t tagv,
                              tagidx_fn fn, void *arg, struct ct_err *err);
/* *complete: the marker is set (the index holds every stored series). */
CT_MUST_CHECK int tagidx_complete(struct tsdb *t, bool *complete, struct ct_err *err);
/* Sets the marker when the data table holds no row at all (a new store: every series it will
 * get is written by a writer that keeps the index); *set says whether it is set now. */
CT_MUST_CHECK int tagidx_mark_if_empty(struct tsdb *t, bool *set, struct ct_err *err);
/* The one-shot build for series written before the index existed (or by writers that do not
 * keep it): scans every row key of the data table, puts the entries of each series found, then
 * sets the marker. *series gets the number of series. Idempotent; safe beside a running TSD. */
CT_MUST_CHECK int tagidx_rebuild(struct tsdb *t, uint64_t *series, struct ct_err *err);
/* Deletes the marker (the index is no longer used until rebuilt). */
CT_MUST_CHECK int tagidx_unmark(struct tsdb *t, struct ct_err *err);

#endif
