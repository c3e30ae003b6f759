/* metatrack.h - OpenTSDB's realtime meta tracking, done by the TSD as its writes happen
 * (docs/query.md, "Realtime meta"). The four keys and what they make the TSD write:
 *   tsd.core.meta.enable_realtime_uid: a UIDMeta (created = now) for each id the TSD assigns;
 *   tsd.core.meta.enable_tsuid_tracking: for each series written, in tsdb-meta:
 *     - alone: the counter cell ts_ctr set to 1, stamped with the write's time (so lastReceived
 *       is the series' last write);
 *     - with enable_realtime_ts: a TSMeta (created = now) when the series has none;
 *     - with enable_realtime_ts and enable_tsuid_incrementing: the counter raised by the
 *       series' points, and a TSMeta created when the counter was 0 (its first points).
 *   enable_realtime_ts or enable_tsuid_incrementing without enable_tsuid_tracking do nothing,
 *   as in OpenTSDB 2.4 (TSDB.addPointInternal writes meta only under tracking).
 * ctsdb writes once per series per batch (the points of one store write) where OpenTSDB writes
 * once per point: the counter is raised by the batch's count, the 1 is put once; the stored
 * answers are the same. Meta is written after the batch's points, before they are acknowledged;
 * a failed meta write is logged (rate-limited) and counted, never fails the points, as OpenTSDB's
 * meta writes do not.
 * Threading: metatrack_series may be called by many writer threads at once. */
#ifndef CT_TSD_METATRACK_H
#define CT_TSD_METATRACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "schema/tsdb.h"
#include "storage/ct_err.h"
#include "tsd/conf.h"

struct metatrack;

/* Reads the four keys. *out NULL (CT_OK) when they ask for no series tracking; the UID hook is
 * installed on t's UID service when enable_realtime_uid is on (whatever *out is), and removed by
 * metatrack_close (or by tsdb_close). read_only: nothing is tracked. */
CT_MUST_CHECK int metatrack_open(const struct conf *c, struct tsdb *t, bool read_only,
                                 struct metatrack **out, struct ct_err *err);
void metatrack_close(struct metatrack *m); /* accepts NULL */

/* Records that series ts got `points` points in a batch just written; fresh: the writer did not
 * know the series before (a TSMeta may be missing only then, in the storeIfNecessary mode). */
void metatrack_series(struct metatrack *m, const uint8_t *ts, size_t tl, uint64_t points,
                      bool fresh);

/* Meta writes that failed so far (all modes). */
uint64_t metatrack_failures(void);

#endif
