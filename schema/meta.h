/* meta.h - the stored UID meta and TSMeta records, in OpenTSDB's layouts:
 *   UID meta: table tsdb-uid, row = the UID's bytes, family "name", qualifier "<kind>_meta"
 *     ("metric_meta", "tagk_meta", "tagv_meta"), value = the UIDMeta JSON;
 *   TSMeta: table tsdb-meta, row = the TSUID's bytes, family "name"; qualifier "ts_meta" holds
 *     the TSMeta storage JSON (TSMeta.getStorageJSON's fields and order: tsuid, displayName,
 *     description, notes, created, custom, units, dataType, retention, max, min; NaN written as
 *     "NaN"), qualifier "ts_ctr" an 8-byte big-endian count of datapoints whose cell timestamp
 *     is the last time it was written (reported as totalDatapoints and lastReceived);
 *   the newest-hour index (ctsdb's own, not OpenTSDB's): in the TSMeta row, qualifier
 *     "ctsdb_hour", a 4-byte big-endian base hour (s) of an hour in which the series has a row,
 *     written with the cell timestamp base hour * 1000, so the newest visible version (the
 *     family keeps one) is the newest hour ever written, whatever order the writes came in.
 *     The TSD writes it when a series gets a point in an hour newer than the one it knows
 *     (tsd/store.c); /api/query/last reads it to find each series' newest point at any age.
 * This module reads and writes the records as bytes; what the JSON holds and how requests change
 * it is the query layer's (query/qmeta.c).
 * Threading: as the tsdb handle (any thread). */
#ifndef CT_META_H
#define CT_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "schema/tsdb.h"
#include "schema/uid.h"
#include "storage/ct_err.h"
#include "storage/wc.h"

#define META_TS_QUALIFIER "ts_meta"
#define META_TS_COUNTER   "ts_ctr"
#define META_TS_HOUR      "ctsdb_hour"

/* The UID meta qualifier of kind k ("metric_meta", as OpenTSDB writes it for metrics). */
const char *meta_uid_qualifier(enum uid_kind k);
/* The stored UIDMeta JSON of (k, id): CT_OK with *json a new NUL-terminated string of *len bytes
 * (freed with free()), CT_NOTFOUND when none is stored (*json NULL). */
CT_MUST_CHECK int meta_uid_get(struct tsdb *t, enum uid_kind k, uint64_t id, char **json,
                               size_t *len, struct ct_err *err);
/* Stores json as (k, id)'s UIDMeta; json NULL deletes it. */
CT_MUST_CHECK int meta_uid_put(struct tsdb *t, enum uid_kind k, uint64_t id, const char *json,
                               struct ct_err *err);

/* One TSUID's stored TSMeta. Caller's storage; meta_ts_clear() frees what meta_ts_get filled. */
struct meta_ts {
    char *json; /* the ts_meta bytes as stored (NUL-terminated), NULL if absent */
    size_t json_len;
    bool has_ctr;
    int64_t ctr, ctr_ts_ms; /* the counter and its cell's timestamp */
};
/* Reads ts's TSMeta and counter into *m (zeroed first). CT_ECORRUPT for a counter that is not
 * 8 bytes; on error *m holds nothing. */
CT_MUST_CHECK int meta_ts_get(struct tsdb *t, const uint8_t *ts, size_t tl, struct meta_ts *m,
                              struct ct_err *err);
void meta_ts_clear(struct meta_ts *m);
/* Writes json as ts's TSMeta with a check-and-put against expected (the bytes read; NULL: there
 * must be none), as TSMeta.syncToStorage / storeNew do. *applied false: storage changed in
 * between and nothing was written. */
CT_MUST_CHECK int meta_ts_put(struct tsdb *t, const uint8_t *ts, size_t tl, const char *json,
                              const struct wc_bytes *expected, bool *applied, struct ct_err *err);
/* Deletes ts's TSMeta (the counter stays, as TSMeta.delete). */
CT_MUST_CHECK int meta_ts_delete(struct tsdb *t, const uint8_t *ts, size_t tl, struct ct_err *err);
/* Puts a zero counter for ts unless one exists (storeNew). */
CT_MUST_CHECK int meta_ts_counter_init(struct tsdb *t, const uint8_t *ts, size_t tl,
                                       struct ct_err *err);

/* Puts value as ts's counter (8 bytes, big-endian), stamped now: OpenTSDB's TSUID tracking
 * without realtime TSMeta writes 1 on every write. */
CT_MUST_CHECK int meta_ts_counter_set(struct tsdb *t, const uint8_t *ts, size_t tl, int64_t value,
                                      struct ct_err *err);
/* Adds delta to ts's counter atomically (absent = 0); the new value in *out. */
CT_MUST_CHECK int meta_ts_counter_add(struct tsdb *t, const uint8_t *ts, size_t tl, int64_t delta,
                                      int64_t *out, struct ct_err *err);

/* ---- the newest-hour index -------------------------------------------------------------- */

struct meta_hour {
    const uint8_t *tsuid;
    size_t len;
    int64_t base_s; /* a whole hour */
};
/* Records that each series h[i].tsuid has a row in hour h[i].base_s (one wc_mutate_batch, at
 * durability d). An hour older than the one recorded changes nothing visible. */
CT_MUST_CHECK int meta_hour_put(struct tsdb *t, const struct meta_hour *h, size_t n,
                                enum wc_durability d, struct ct_err *err);
/* The newest hour recorded for ts in *base_s; CT_NOTFOUND if none; CT_ECORRUPT for a value
 * that is not 4 bytes. */
CT_MUST_CHECK int meta_hour_get(struct tsdb *t, const uint8_t *ts, size_t tl, int64_t *base_s,
                                struct ct_err *err);
/* Calls fn for every series of metric (a uid) with a recorded hour, in TSUID order; fn returning
 * non-zero stops the scan (CT_OK). The TSUID is borrowed for the call. */
typedef int (*meta_hour_fn)(void *arg, const uint8_t *ts, size_t tl, int64_t base_s);
CT_MUST_CHECK int meta_hour_scan(struct tsdb *t, uint64_t metric, meta_hour_fn fn, void *arg,
                                 struct ct_err *err);

#endif
