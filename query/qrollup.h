/* qrollup.h - sub-queries answered from the rollup tables (schema/rollup.h) instead of raw rows.
 *
 * A sub-query is served from rollups when the executor has rollup tables
 * (qexec_options.rollup), its rollupUsage is not ROLLUP_RAW (which reads raw rows through the
 * raw source below, or the scan for a 1h interval), it downsamples (not "all", not
 * calendar, no fill policy) with an interval that is a whole number of hours and a function
 * rollups hold: sum, count, min, max, or avg (= sum / count); it names a metric (not tsuids); the
 * query is neither a delete nor padded. Other functions (percentiles, dev, first, last, zimsum,
 * mimmin, mimmax, median ...) always read raw rows.
 * Without rollup tables (qexec_options.rollup NULL) the same holds for intervals of several whole
 * hours (2h, 1d, 7d ...; rollupUsage then does not matter): the sub-query reads raw rows only,
 * through the raw source below, folding each hour row into its bucket's accumulators instead of
 * keeping every raw point of every series until a downsampling pass (what the scan does for
 * intervals above an hour: tens of MB of points, page faults, for a 30-day 1d-avg). A 1h
 * interval is left to the scan's own downsampling (which does whole hours).
 *
 * What it reads, per series and downsample bucket (every bucket lies inside the scan window,
 * whole): days before the 1d job's progress from the 1d table (when the interval is whole days),
 * then hours before the 1h job's progress from the 1h table, then raw rows for the rest (usage
 * ROLLUP_FALLBACK, the default, and ROLLUP_FALLBACK_RAW); ROLLUP_NOFALLBACK reads only the rollup
 * tables over the whole window (what /api/rollup wrote, or the job). The buckets are final: the
 * series go to the executor already downsampled (xsub.ds_done), as the in-scan downsampling does.
 * Answers equal the raw ones when the rolled-up sums are exact (integer values below 2^53);
 * otherwise sums and averages may differ in the last bits (a different order of additions).
 * Annotations of the raw rows read are returned; none for the part served from rollup tables. A
 * bucket whose raw points are all NaN gives NaN, as the raw path does, when read from raw rows;
 * from the rollup tables it has no rollup and so no point. The ingest head's points of the raw
 * source's hours are folded too (merged with the raw rows of their hours, the head's point
 * winning a shared timestamp, as the scan's merge); head points of hours the tables already
 * cover are late points, missed until the job rolls them up, as stored late points are.
 *
 * Span buckets (raw rows only): `0all` (one bucket, the points in [start, end), stamped at the
 * start) and fixed intervals that are not whole hours and do not divide an hour (7m, 90m, 25h
 * ...; one that divides an hour is the scan's own downsampling), same functions. A bucket may
 * then span rows or lie inside one: each row's points are cut at the bucket ends and folded
 * into their buckets. The raw scan is forward (oldest hour first) and a series lives in one
 * salt bucket, so a bucket's points are added in time order, as the general path adds them:
 * the same bits. Memory: one point a series and bucket holding data, whatever the points (every
 * source visits a series' buckets in time order, so one accumulator a series); the datapoint
 * limit counts raw points read, as the scan's. Every series read is answered (with no point
 * when none lies in a bucket), as the general path answers it. A fill policy (not with rollup
 * tables) is applied to the buckets afterwards (qagg_ds_fill), as for the scan's. */
#ifndef CT_QROLLUP_H
#define CT_QROLLUP_H

#include <stdbool.h>

#include "query/qexec_int.h"
#include "query/qspec.h"
#include "schema/rollup.h"

/* Whether sub of q can be served from rollups with options o (see above); *iv the coarsest
 * rollup interval that divides its downsample interval. head: the ingest head holds points of
 * the sub-query's window, so the scan cannot downsample as it reads: intervals that divide an
 * hour (1m, 1h ...) are folded here too (span buckets) instead of keeping every point. */
bool qrollup_eligible(const struct qspec *q, const struct qspec_sub *sub,
                      const struct qexec_options *o, bool head, enum rollup_iv *iv);
/* The time slices each salt bucket's raw rows are cut into for qrollup_scan() on nth threads
 * (x->nslices): 1 unless the sub-query reads raw rows only (no rollup table), in buckets of
 * whole hours (not span buckets), with no head points, on several threads; then enough slices
 * for at least QROLLUP_PIECES pieces of work a thread, at most one a bucket of the downsample
 * interval, so that a thread that starts late, or a salt bucket holding more series than
 * another, leaves the rest of the work to the other threads (10 series in 8 salt buckets sit
 * in 5 of them, 1 to 3 each: whole buckets on 2 threads took 6/5 of the even share). A slice
 * is whole downsample buckets, so each bucket is folded by one piece, in time order. */
#define QROLLUP_PIECES 8
unsigned qrollup_slices(const struct xscan *x, const struct qspec_sub *sub,
                        const struct qexec_options *o, unsigned nth);
/* Reads the series of x (metric, row filter, window x->win_start_s .. x->win_end_s; w the
 * sub-query's window, whose query bounds a 0all bucket takes) from the
 * rollup tables and raw rows, one downsampled point per bucket, each salt bucket b into
 * x->sets[b * x->nslices] with its outcome in x->rcs / x->errs there (as the raw scan), and with
 * x->nslices > 1 (qrollup_slices) the time slice s of bucket b, newest first, into
 * x->sets[b * x->nslices + s] (run_sub chains them as the raw scan's slices), on up to
 * `threads` threads of pool. Returns an error only if the job's progress cannot be read. */
CT_MUST_CHECK int qrollup_scan(struct xscan *x, const struct qspec_sub *sub,
                               const struct qagg_window *w, struct rollup *r, enum rollup_iv iv,
                               struct qpool *pool, unsigned threads, struct ct_err *err);

#endif
