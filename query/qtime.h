/* qtime.h - OpenTSDB 2.4 time handling for queries: durations ("1h", "30s", "2w"), start/end
 * strings ("1h-ago", "now", "2013/01/02-03:04:05", unix seconds or milliseconds), time zones
 * read from the system tz database (/usr/share/zoneinfo, no global TZ mutation) and calendar
 * interval arithmetic with Java Calendar's rules (DateTime.previousInterval, Calendar.add).
 *
 * Every time is epoch milliseconds. Thread-safe: a qtime_tz is immutable after loading. */
#ifndef CT_QTIME_H
#define CT_QTIME_H

#include <stdbool.h>
#include <stdint.h>

#include "storage/ct_err.h"

/* Calendar units of a duration suffix. Order is not written anywhere. */
enum qtime_unit {
    QTIME_MS = 0,
    QTIME_S,
    QTIME_M,
    QTIME_H,
    QTIME_D,
    QTIME_W,
    QTIME_N, /* month: 30 days as a plain duration */
    QTIME_Y, /* year: 365 days as a plain duration */
};

/* Parses "<int><unit>" (unit ms s m h d w n y, case-insensitive) into milliseconds, with
 * OpenTSDB's messages: "Invalid duration (number): X", "Invalid duration (suffix): X",
 * "Zero or negative duration: X". On success *ms, and (if non-NULL) *count and *unit. */
CT_MUST_CHECK int qtime_parse_duration(const char *s, int64_t *ms, int64_t *count,
                                       enum qtime_unit *unit, struct ct_err *err);

struct qtime_tz; /* opaque: a loaded time zone */

/* Loads the zone `name` (NULL, "" -> UTC; "UTC", "GMT", "Z" and tz database names such as
 * "America/New_York"). Returns CT_OK and a new zone freed with qtime_tz_free(), or CT_EINVAL
 * with "The timezone specification could not be found" (OpenTSDB's text). */
CT_MUST_CHECK int qtime_tz_load(const char *name, struct qtime_tz **out, struct ct_err *err);
void qtime_tz_free(struct qtime_tz *tz); /* accepts NULL */
/* Offset from UTC in seconds at the UTC instant t_s. tz NULL = UTC. */
int32_t qtime_tz_offset_s(const struct qtime_tz *tz, int64_t t_s);

/* Parses a start/end string as OpenTSDB's DateTime.parseDateTimeString does, relative to now_ms,
 * absolute dates in tz (NULL = UTC). CT_EINVAL with a message on bad input. */
CT_MUST_CHECK int qtime_parse(const char *s, const struct qtime_tz *tz, int64_t now_ms,
                              int64_t *out_ms, struct ct_err *err);

/* The start of the calendar interval holding ts_ms, as DateTime.previousInterval(ts, interval,
 * unit, tz) computes it (interval >= 1, ts_ms >= 0). */
int64_t qtime_cal_previous(int64_t ts_ms, int64_t interval, enum qtime_unit unit,
                           const struct qtime_tz *tz);
/* ts_ms plus n units as Calendar.add does: ms/s/m/h are absolute, d/n/y keep the wall-clock
 * time in tz, w is 7 days. */
int64_t qtime_cal_add(int64_t ts_ms, int64_t n, enum qtime_unit unit, const struct qtime_tz *tz);

#endif
