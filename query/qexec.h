/* qexec.h - runs a parsed /api/query (struct qspec) against the store and writes OpenTSDB's JSON
 * answer: resolve names to UIDs (errors before any output), plan one reversed scan per salt bucket
 * over the hour rows of the scan window with tag filtering inside the scan (the rowkey row-filter
 * hook), run the buckets in parallel threads, decode every cell layout into series, apply the
 * remaining filters by name, group, downsample, rate, aggregate and stream the JSON.
 *
 * Threading: qexec_run may be called from many threads at once (it blocks; call it from a worker,
 * never from the network loop). */
#ifndef CT_QEXEC_H
#define CT_QEXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "query/qjson.h"
#include "query/qpool.h"
#include "query/qspec.h"
#include "schema/tsdb.h"
#include "storage/ct_err.h"

struct rollup;
struct head;
/* tsd.query.tag_index's default (query/qindex.h; measured in docs/query.md) */
#define QEXEC_INDEX_RANGES 128
/* A sub-query the tag index answers with at most this many exact key ranges (series x hours)
 * runs on the calling thread alone when qexec_options.scan_threads is 0 (qexec_stats.scan_threads
 * is then 1): a helper's wake-up and the wait for it cost more than such a scan. */
#define QEXEC_ONE_THREAD_RANGES 16
/* The work a bounded run may do (the TSD's network loop runs small queries so): every sub-query's
 * plan must be the tag index's exact key ranges, at most max_ranges of them (series x hours), not
 * answered from rollup tables; at most max_dps datapoints read in all (a fill policy's buckets
 * per series too); and the run must reach each check before deadline_ns (CLOCK_MONOTONIC, 0 =
 * none): after each sub-query's planning (names, the head's series of the metric, the index),
 * before each row of the scans and after the global annotations. The bound is set with
 * scan_threads 1 and pool NULL (the run never waits for another thread). A run that would pass a
 * bound ends with CT_ELIMIT and status QEXEC_OVER_BOUND before its first output byte (nothing
 * written to j: run it again unbounded elsewhere); so does a timeout or a datapoint limit met in
 * a bounded run, which the unbounded run meets again and answers. Time between two checks: one
 * sub-query's planning, one row read and decoded, or the global annotation scan. */
struct qexec_bound {
    uint64_t max_ranges;
    uint64_t max_dps;
    uint64_t deadline_ns;
};
struct qexec_options {
    int64_t timeout_ms;      /* tsd.query.timeout; 0 = none */
    uint64_t max_datapoints; /* raw datapoints read per query; 0 = no limit */
    uint64_t max_bytes;      /* bytes read per sub-query, at QEXEC_POINT_BYTES a raw datapoint;
                                0 = no limit */
    struct qlimits *limits;  /* per-metric overrides of the two limits (query/qlimits.h,
                                borrowed); NULL = none */
    /* tsd.query.limits.{bytes,data_points}.allow_override: a query's overrideByteLimit /
     * overrideDataPointLimit lifts that limit for it, per-metric overrides included (OpenTSDB's
     * TsdbQuery); a bounded run's own bound still holds */
    bool allow_bytes_override, allow_dps_override;
    unsigned scan_threads;   /* parallel scans (buckets, or time slices of a bucket);
                                0 = qpool_threads(pool), or 1 when qpool_busy(pool) */
    struct qpool *pool;      /* the executor of parallel parts (borrowed for the run); NULL =
                                every part on the caller's thread */
    bool allow_delete;       /* tsd.http.query.allow_delete */
    struct rollup *rollup;   /* rollup tables (query/qrollup.h); NULL = raw rows only */
    struct head *head;       /* the ingest head (schema/head.h, borrowed); NULL = stored rows
                                only. Its points are read with the rows as one (docs/head.md) */
    uint64_t index_ranges;   /* tsd.query.tag_index: the tag index is used when the series it
                                picks times the window's hours are at most this (0 = never) */
    bool general_only;       /* tests: run every query through the general path (no fast path); the
                          answers must be byte-identical either way */
    const struct qexec_bound *bound; /* a bounded run (above); NULL = unbounded */
    size_t held_max_bytes; /* finished sub-queries' answers held in memory until the last scan
                              is done, at most (0: 8 MiB); past it later sub-queries keep their
                              series until the end (qexec_run) */

    /* tsd.query.skip_unresolved_tagvs: a literal tag value with no UID is left out of its filter
     * (a filter left with none matches nothing) instead of failing the query with a 400 */
    bool skip_unresolved_tagvs;
};
void qexec_options_init(struct qexec_options *o);
/* What one raw datapoint read counts toward qexec_options.max_bytes: its timestamp and value as
 * a query holds them (OpenTSDB counts the HBase cells it fetched, which ctsdb's store, its head
 * and its rollups do not share; docs/query.md "Query limits"). */
#define QEXEC_POINT_BYTES 16

/* The outcome class of a failed query, for the HTTP status. */
enum qexec_status {
    QEXEC_OK = 200,
    QEXEC_BAD_REQUEST = 400, /* unknown names, bad tsuids */
    QEXEC_TOO_LARGE = 413,   /* datapoint limit */
    QEXEC_TIMEOUT = 408,     /* tsd.query.timeout */
    QEXEC_INTERNAL = 500,
    QEXEC_OVER_BOUND = 1, /* not an HTTP status: a bounded run stopped (qexec_bound) */
};

/* Counters of one run (for showSummary/showStats and the bench). */
struct qexec_stats {
    uint64_t rows, raw_dps, emitted_dps, series, groups;
    uint64_t scan_ns, agg_ns, total_ns;
    uint64_t ser_ns;       /* writing the groups' JSON (the aggregation included) */
    uint64_t scanners;     /* scanners opened: one per salt bucket and time slice */
    uint64_t key_ranges;   /* row ranges they read (leading-tag key ranges, else 1 each) */
    unsigned scan_threads; /* the most threads any sub-query's scans used */
    uint64_t held_points;  /* points the kept series held after the scans: raw points, or one a
                              bucket when the scan (or qrollup) downsampled as it read */
    bool busy_one_thread;  /* a sub-query ran on one thread because every CPU was busy */
};

/* Runs q and writes the whole JSON array to j (not flushed). On error nothing has been written
 * to j when *status is 400/408/413 (every scan completes before the first byte); err says why.
 * stats may be NULL. */
CT_MUST_CHECK int qexec_run(struct tsdb *t, const struct qspec *q, const struct qexec_options *o,
                            struct qjson *j, enum qexec_status *status, struct qexec_stats *stats,
                            struct ct_err *err);

/* The leading tags a scan of `hours` base hours reads as key ranges (rowkey_filter_lead), for
 * range and last queries alike: their number (vals/nvals as rowkey_filter_lead fills them), or
 * 0 - read the hours whole - when they would make more than 8 ranges an hour or 2,048 in all. */
struct rowkey_filter;
size_t qexec_lead_tags(const struct rowkey_filter *rf, uint64_t hours, const uint64_t **vals,
                       size_t *nvals);

/* One datapoint of a finished series for callers that print rather than emit JSON (ctsdb query):
 * fn is called for each output point of each group with the group's metric and tags
 * ("k=v k2=v2"). */
typedef int (*qexec_point_fn)(void *arg, const char *metric, const char *tags,
                              const struct qagg_point *pt);
CT_MUST_CHECK int qexec_run_points(struct tsdb *t, const struct qspec *q,
                                   const struct qexec_options *o, qexec_point_fn fn, void *arg,
                                   enum qexec_status *status, struct ct_err *err);

/* One output group, announced before its points (qexec_run_groups): the sub-query it answers
 * (its index in q->subs), its metric, its tags (sorted by key) and its aggregated tag keys
 * (sorted), as /api/query writes them. Borrowed for the call. */
struct qexec_group {
    size_t sub;
    const char *metric;
    const char *const *tagk;
    const char *const *tagv;
    size_t ntags;
    const char *const *agg;
    size_t nagg;
};
typedef int (*qexec_group_start_fn)(void *arg, const struct qexec_group *g);
/* As qexec_run_points, with gfn called once per group before that group's points (which may
 * be none); a non-zero return of either callback stops the run and is returned. */
CT_MUST_CHECK int qexec_run_groups(struct tsdb *t, const struct qspec *q,
                                   const struct qexec_options *o, qexec_group_start_fn gfn,
                                   qexec_point_fn pfn, void *arg, enum qexec_status *status,
                                   struct ct_err *err);

#endif
