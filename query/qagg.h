/* qagg.h - OpenTSDB 2.4's time-series arithmetic: the aggregators (with their interpolation
 * rule), downsampling with fill policies and calendar buckets, rate with counter options, and
 * the cross-series aggregation of a group (AggregationIterator's exact state machine, so that
 * interpolation, integer-vs-float results and the edges of series match OpenTSDB).
 *
 * Everything here is pure computation over arrays of points; no storage, no allocation per
 * point (buffers grow geometrically). Thread-safe: no shared state. */
#ifndef CT_QAGG_H
#define CT_QAGG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "query/qtime.h"
#include "storage/ct_err.h"

/* One datapoint: an integer or a double. Held by value. */
struct qagg_point {
    int64_t ts_ms;
    union {
        int64_t i;
        double d;
    } v;
    bool is_int;
};

static inline double qagg_point_double(const struct qagg_point *p)
{
    return p->is_int ? (double)p->v.i : p->v.d;
}

/* How a series that lacks a point at a timestamp is valued by the cross-series aggregation. */
enum qagg_interp {
    QAGG_LERP = 0, /* linear interpolation between its neighbours */
    QAGG_ZIM = 1,  /* zero if missing */
    QAGG_MAX = 2,  /* Long.MAX_VALUE / Double.MAX_VALUE */
    QAGG_MIN = 3,  /* Long.MIN_VALUE / Double.MIN_VALUE (the smallest positive double) */
    QAGG_PREV = 4, /* the previous value */
};

struct qagg; /* opaque: a static aggregator descriptor */

/* The aggregator called `name` (case-sensitive, as OpenTSDB), or NULL. */
const struct qagg *qagg_lookup(const char *name);
/* Every aggregator, for /api/aggregators: qagg_at(i) for i < qagg_count(). */
size_t qagg_count(void);
const struct qagg *qagg_at(size_t i);
const char *qagg_name(const struct qagg *a);
/* true for "none": every series is its own group and is not aggregated. */
bool qagg_is_none(const struct qagg *a);

/* Aggregates n >= 1 values. `scratch` must hold n values (percentiles sort there). */
int64_t qagg_run_long(const struct qagg *a, const int64_t *vals, size_t n, double *scratch);
double qagg_run_double(const struct qagg *a, const double *vals, size_t n, double *scratch);

/* Aggregators whose qagg_run_double() is a single pass without a buffer, so that a caller can
 * fold values as they come and get the same bits: the sum (NaN skipped; NaN if none), avg (the
 * same sum divided by the count), min and max (NaN skipped), count (of non-NaN values). */
enum qagg_stream {
    QAGG_STREAM_NO = 0, /* needs qagg_run_double over the whole buffer */
    QAGG_STREAM_SUM,
    QAGG_STREAM_AVG,
    QAGG_STREAM_MIN,
    QAGG_STREAM_MAX,
    QAGG_STREAM_COUNT,
};
enum qagg_stream qagg_stream_kind(const struct qagg *a);

/* ---- downsampling --------------------------------------------------------------------- */

enum qagg_fill {
    QAGG_FILL_NONE = 0,
    QAGG_FILL_NAN = 1,
    QAGG_FILL_NULL = 2, /* NaN inside, written as JSON null */
    QAGG_FILL_ZERO = 3,
    QAGG_FILL_SCALAR = 4,
};

/* A parsed downsampling specifier "<interval>[c]-<fn>[-<fill>]". Held by value. */
struct qagg_ds {
    bool enabled;
    bool all;             /* "0all-..." : one bucket over the whole query */
    bool calendar;        /* trailing 'c' or useCalendar */
    int64_t interval_ms;  /* 0 when all */
    int64_t count;        /* the number in the interval */
    enum qtime_unit unit; /* the interval's unit (calendar buckets) */
    const struct qagg *fn;
    enum qagg_fill fill;
    double scalar; /* QAGG_FILL_SCALAR's value */
    char text[64]; /* the specifier as given */
};

/* Parses a specifier with OpenTSDB's errors ("Invalid downsampling specifier ...",
 * "cannot use the NONE aggregator for downsampling", "Unrecognized fill policy: ..."). The fill part
 * may be "scalar(<number>)" (ctsdb: the scalar policy with its value; "scalar" alone fills 0, as
 * OpenTSDB's NumericFillPolicy defaults). */
CT_MUST_CHECK int qagg_ds_parse(const char *spec, struct qagg_ds *out, struct ct_err *err);
/* Parses a scalar fill value (a finite number, Java Double syntax). */
CT_MUST_CHECK int qagg_fill_scalar_parse(const char *s, double *out, struct ct_err *err);
/* The fill policy's name ("none", "nan", "null", "zero", "scalar"). */
const char *qagg_fill_name(enum qagg_fill f);
/* Parses a fill policy name (case-insensitive); CT_EINVAL with OpenTSDB's message. */
CT_MUST_CHECK int qagg_fill_parse(const char *s, enum qagg_fill *out, struct ct_err *err);

/* A growable array of points. Initialise to {0}; free with qagg_buf_free(). */
struct qagg_buf {
    struct qagg_point *p;
    size_t n, cap;
};
void qagg_buf_free(struct qagg_buf *b);

/* The time window a query's series are read and aggregated over (TsdbQuery's scan window):
 * [win_start_ms, win_end_ms], hour aligned, widened for downsampling. */
struct qagg_window {
    int64_t q_start_ms, q_end_ms;     /* the query's own bounds (inclusive) */
    int64_t win_start_ms, win_end_ms; /* the scan window */
};
/* Computes the window for a query [start_ms, end_ms] with downsampler ds (may be NULL). */
void qagg_window_compute(int64_t start_ms, int64_t end_ms, const struct qagg_ds *ds,
                         struct qagg_window *w);
/* Widens w for `padding` by one hour row, or one downsample interval when that is longer
 * (rounded up to whole hours), on each side, so that the points just outside the query's bounds
 * are read and aggregated too. The query's own bounds are unchanged. */
void qagg_window_pad(struct qagg_window *w, const struct qagg_ds *ds);

/* Downsamples one series (points ascending by time, within the window) into out (appended),
 * as Downsampler / FillingDownsampler seeked to w->win_start_ms do. Calendar buckets use tz. */
CT_MUST_CHECK int qagg_downsample(const struct qagg_point *in, size_t n, const struct qagg_ds *ds,
                                  const struct qagg_window *w, const struct qtime_tz *tz,
                                  struct qagg_buf *out, struct ct_err *err);

/* The fill policy of ds applied to a series' downsampled buckets (plain: what the plain
 * Downsampler made of it, ascending), appended to out: FillingDownsampler's every bucket of the
 * window, the missing ones given the fill value. Without a fill policy (or with `all`) plain
 * is appended as it is. qagg_downsample() is the plain buckets then this. */
CT_MUST_CHECK int qagg_ds_fill(const struct qagg_point *plain, size_t n, const struct qagg_ds *ds,
                               const struct qagg_window *w, const struct qtime_tz *tz,
                               struct qagg_buf *out, struct ct_err *err);

/* ---- rate ----------------------------------------------------------------------------- */

struct qagg_rate {
    bool counter;
    bool drop_resets;
    int64_t counter_max; /* default INT64_MAX */
    int64_t reset_value; /* default 0 */
};
void qagg_rate_init(struct qagg_rate *r); /* OpenTSDB's defaults */

/* Appends the per-second rate of a series (RateSpan): one point per input point, stamped at it,
 * always a double; the first is taken against an integer 0 at time zero, as OpenTSDB does
 * (qagg_group_run then never emits it, only carries it as the series' current value). */
CT_MUST_CHECK int qagg_rate_apply(const struct qagg_point *in, size_t n, const struct qagg_rate *r,
                                  struct qagg_buf *out, struct ct_err *err);
/* qagg_rate_apply() over p itself (the rates replace the points, same bits): returns how many
 * there are. For a series whose points are not needed afterwards: no buffer to allocate. */
size_t qagg_rate_in_place(struct qagg_point *p, size_t n, const struct qagg_rate *r);

/* ---- cross-series aggregation --------------------------------------------------------- */

struct qagg_series {
    const struct qagg_point *p; /* ascending by time */
    size_t n;
};

/* Receives each aggregated point in time order; non-zero stops the aggregation (returned). */
typedef int (*qagg_emit_fn)(void *arg, const struct qagg_point *pt);

/* Aggregates ns series point-wise over [win_start_ms, win_end_ms] with a's interpolation, as
 * AggregationIterator does (rate selects its rate rules). Returns CT_OK, an emit's non-zero
 * value, or CT_ENOMEM. When every series holds doubles at the same timestamps (what
 * downsampling usually leaves) nothing is ever interpolated and a direct pass over the columns
 * gives the same points. */
int qagg_group_run(const struct qagg *a, const struct qagg_series *s, size_t ns,
                   int64_t win_start_ms, int64_t win_end_ms, bool rate, qagg_emit_fn emit,
                   void *arg, struct ct_err *err);
/* qagg_group_run() without the aligned-series fast path (tests compare the two). */
int qagg_group_run_general(const struct qagg *a, const struct qagg_series *s, size_t ns,
                           int64_t win_start_ms, int64_t win_end_ms, bool rate, qagg_emit_fn emit,
                           void *arg, struct ct_err *err);

#endif
