/* rollup.h - rollup tables in OpenTSDB 2.4's layout: per series, per interval (1h and 1d), the
 * sum, count, min and max of the raw points, stored next to the data table so that a query with
 * a coarse downsample reads one cell per interval instead of every raw point.
 *
 * Layout (docs/schema.md, "Rollups"):
 *   table     one per interval (tsd.rollups.ctsdb.table_1h / table_1d), family `t`, its own TTL;
 *   row key   the data table's ([salt] metric base tags) with the base time snapped to the row
 *             span: a UTC day for the 1h table, a UTC month for the 1d table;
 *   qualifier the aggregator's lower-case name, ':', then 2 bytes big-endian
 *             (index of the interval inside the row span << 4 | flags), the flags being a data
 *             cell's (value length - 1, 0x08 for a float); a 3-byte form, one id byte
 *             (sum 0, count 1, min 2, max 3) then the same 2 bytes, is read too;
 *   value     a data cell's value (1/2/4/8-byte big-endian integer, 4/8-byte IEEE float).
 * Writes put cells (never increment), so writing the same rollup twice leaves one value: the
 * TSD's job may redo an interval after a restart without counting it twice.
 *
 * Progress of the TSD's job lives in the meta table, row "\0ctsdb.rollup", family `name`,
 * qualifiers "1h" and "1d": 8-byte big-endian start of the first interval not yet rolled up.
 *
 * Threading: a handle may be shared by threads once opened. */
#ifndef CT_SCHEMA_ROLLUP_H
#define CT_SCHEMA_ROLLUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "schema/dpcodec.h"
#include "schema/tsdb.h"
#include "storage/ct_err.h"
#include "storage/wc.h"

enum rollup_agg {
    ROLLUP_SUM = 0,
    ROLLUP_COUNT = 1,
    ROLLUP_MIN = 2,
    ROLLUP_MAX = 3
};
#define ROLLUP_NAGG 4

enum rollup_iv {
    ROLLUP_1H = 0,
    ROLLUP_1D = 1
};
#define ROLLUP_NIV 2

/* "sum", "count", "min", "max". */
const char *rollup_agg_name(enum rollup_agg a);
/* The aggregator named s (any case); -1 if s is none of the four. */
int rollup_agg_parse(const char *s);
/* "1h", "1d"; the interval in seconds (3600, 86400). */
const char *rollup_iv_name(enum rollup_iv iv);
int64_t rollup_iv_seconds(enum rollup_iv iv);
/* The interval named s ("1h", "60m", "3600s", "1d", "24h" ...: exactly one hour or one day);
 * -1 otherwise. */
int rollup_iv_parse(const char *s);

/* Start of the row (UTC day for 1h, UTC month for 1d) holding ts_s (>= 0), and the start of
 * the next row. */
int64_t rollup_row_base(enum rollup_iv iv, int64_t ts_s);
int64_t rollup_row_next(enum rollup_iv iv, int64_t base_s);

/* Encodes the cell of aggregator a for the interval starting at ts_s (a multiple of the
 * interval) in the row based at base_s: qualifier into q (room 8), value into v (room 8).
 * CT_EINVAL if ts_s is not aligned or outside the row. */
CT_MUST_CHECK int rollup_cell_encode(enum rollup_iv iv, enum rollup_agg a, int64_t base_s,
                                     int64_t ts_s, const struct dpcodec_point *val, uint8_t *q,
                                     size_t *qlen, uint8_t *v, size_t *vlen, struct ct_err *err);
/* Decodes a rollup cell of a row based at base_s: its aggregator, interval start (seconds)
 * and value. CT_NOTFOUND for a qualifier of another aggregator name (skipped by readers);
 * CT_ECORRUPT for a malformed cell. */
CT_MUST_CHECK int rollup_cell_decode(enum rollup_iv iv, int64_t base_s, const uint8_t *q,
                                     size_t qlen, const uint8_t *v, size_t vlen, enum rollup_agg *a,
                                     int64_t *ts_s, struct dpcodec_point *val, struct ct_err *err);

/* Settings (keys tsd.rollups.* in tsd/conf.c). Strings borrowed for rollup_open(). */
struct rollup_config {
    const char *table[ROLLUP_NIV]; /* table names */
    int64_t ttl_s[ROLLUP_NIV];     /* 0 = forever */
    bool create_tables;
};

struct rollup;
/* Opens (creating when c->create_tables and missing, each with its TTL) the rollup tables on
 * s for the data layout of t (both borrowed until rollup_close()). */
CT_MUST_CHECK int rollup_open(struct wc_store *s, struct tsdb *t, const struct rollup_config *c,
                              struct rollup **out, struct ct_err *err);
void rollup_close(struct rollup *r); /* accepts NULL */
struct wc_table *rollup_table(const struct rollup *r, enum rollup_iv iv);
struct tsdb *rollup_tsdb(const struct rollup *r);

/* One rollup value to write. */
struct rollup_put {
    const uint8_t *tsuid;
    size_t tsuid_len;
    enum rollup_iv iv;
    enum rollup_agg agg;
    int64_t ts_s; /* interval start (aligned) */
    struct dpcodec_point val;
};
/* Writes n values (each a put of one cell, timestamp = now). */
CT_MUST_CHECK int rollup_write(struct rollup *r, const struct rollup_put *p, size_t n,
                               struct ct_err *err);

/* The job's progress for iv (0 when none was recorded). */
CT_MUST_CHECK int rollup_progress_get(struct rollup *r, enum rollup_iv iv, int64_t *out,
                                      struct ct_err *err);
CT_MUST_CHECK int rollup_progress_set(struct rollup *r, enum rollup_iv iv, int64_t v,
                                      struct ct_err *err);

/* Computes and writes the 1h rollups of every series for the hours [from_s, to_s) (hour
 * aligned) from the data table: sum, count, min, max of the non-NaN points of each row.
 * *rows (NULL allowed) gets the number of data rows rolled up. */
CT_MUST_CHECK int rollup_compute_hours(struct rollup *r, int64_t from_s, int64_t to_s,
                                       uint64_t *rows, struct ct_err *err);
/* Computes and writes the 1d rollups for the days [from_s, to_s) (day aligned) from the 1h
 * table: the sum of the sums and counts, the min of the mins, the max of the maxes. */
CT_MUST_CHECK int rollup_compute_days(struct rollup *r, int64_t from_s, int64_t to_s,
                                      uint64_t *rows, struct ct_err *err);

/* One pass of the TSD's job at time now_s: rolls up every hour closed by now_s - grace_s
 * (an hour [h, h+3600) is closed when h + 3600 + grace_s <= now_s) after the recorded
 * progress; rolls up again the rolled-up hours that got cells since the previous pass began
 * (and their days); then every day whose 24 hours are rolled up; records progress after each
 * part (docs/schema.md, "The rollup job"). */
CT_MUST_CHECK int rollup_job_step(struct rollup *r, int64_t now_s, int64_t grace_s, uint64_t *rows,
                                  struct ct_err *err);

#endif
