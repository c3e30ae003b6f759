/* qspec.h - a parsed OpenTSDB 2.4 /api/query request (TSQuery with its TSSubQuery list): from
 * the URL form (start, end, m=, tsuid=, flags) or the JSON body, validated with OpenTSDB's
 * messages. Every parse error is a 400 in OpenTSDB; they return CT_EINVAL here.
 *
 * The structs are shown because handlers, the executor and the command line read many fields;
 * they are built only by the qspec_parse_* functions and freed by qspec_free(). Immutable after
 * parsing, so worker threads may read one spec at once. */
#ifndef CT_QSPEC_H
#define CT_QSPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "query/qagg.h"
#include "query/qfilter.h"
#include "query/qtime.h"
#include "storage/ct_err.h"

/* Which tables a sub-query may read (OpenTSDB 2.4's rollupUsage): FALLBACK (the default, no
 * usage given) and FALLBACK_RAW read the rollup tables where they are computed and raw rows for
 * the rest; NOFALLBACK reads only rollups; RAW only raw rows (query/qrollup.h). */
enum qspec_rollup {
    QSPEC_ROLLUP_FALLBACK = 0,
    QSPEC_ROLLUP_FALLBACK_RAW = 1,
    QSPEC_ROLLUP_NOFALLBACK = 2,
    QSPEC_ROLLUP_RAW = 3,
};
/* The usage named s (any case: "ROLLUP_RAW", ...); -1 if none. */
int qspec_rollup_parse(const char *s);

struct qspec_sub {
    const struct qagg *agg;
    enum qspec_rollup rollup_usage;
    char *metric;  /* NULL for a tsuids query */
    char **tsuids; /* hex strings */
    size_t ntsuids;
    struct qagg_ds ds; /* ds.enabled false: no downsampling */
    bool rate;
    bool rate_options_set; /* rateOptions given (echoed by showQuery) */
    struct qagg_rate rate_opts;
    struct qfilter **filters;
    size_t nfilters;
    bool explicit_tags;
    /* a histogram query (OpenTSDB 2.4): the percentiles asked for, ascending (JSON
     * "percentiles", m= "percentiles[50,99]"), and whether each bucket's counts are answered
     * too ("showHistogramBuckets", m= "show-histogram-buckets") */
    float *percentiles;
    size_t npercentiles;
    bool show_histogram_buckets;
    int index; /* position in the request */
};

/* Whether sub reads histogram points instead of datapoints. */
static inline bool qspec_sub_is_histogram(const struct qspec_sub *sub)
{
    return sub->npercentiles > 0 || sub->show_histogram_buckets;
}

struct qspec {
    int64_t start_ms, end_ms;
    char *start_text, *end_text; /* as given (end_text NULL if defaulted to now) */
    struct qtime_tz *tz;         /* owned; UTC when no timezone was given */
    char *timezone;              /* as given, or NULL */
    bool use_calendar;
    bool ms_resolution, show_tsuids, show_query, show_stats, show_summary;
    bool no_annotations, global_annotations, padding, delete_data, arrays;
    /* the body's overrideByteLimit / overrideDataPointLimit (OpenTSDB's TSQuery): lift the limit
     * where qexec_options allows it */
    bool override_bytes, override_dps;
    struct qspec_sub *subs;
    size_t nsubs;
};

/* Returns the values of URL parameter `name`: the idx-th occurrence (NULL past the last).
 * A flag given without "=value" has the value "". */
typedef const char *(*qspec_param_fn)(void *arg, const char *name, size_t idx);

/* Whether URL flag `name` is on: present, and not "false" (any case), as OpenTSDB reads them. */
bool qspec_param_flag(qspec_param_fn get, void *arg, const char *name);

/* Parses the GET form. now_ms is "now" for relative times and a missing end. Returns a new spec
 * in *out, freed with qspec_free(). */
CT_MUST_CHECK int qspec_parse_params(qspec_param_fn get, void *arg, int64_t now_ms,
                                     struct qspec **out, struct ct_err *err);
/* Parses the JSON body. */
CT_MUST_CHECK int qspec_parse_json(const char *body, size_t len, int64_t now_ms, struct qspec **out,
                                   struct ct_err *err);
void qspec_free(struct qspec *q); /* accepts NULL */

/* Parses one m= expression ("sum:1m-avg:rate{counter,,1000}:sys.cpu{host=*}{dc=lga}") into sub
 * (which the caller zeroes first and frees with qspec_sub_clear()). */
CT_MUST_CHECK int qspec_parse_m(const char *m, struct qspec_sub *sub, struct ct_err *err);
/* Parses a tsuid= expression ("sum:rate:000001000001000001,000001000001000002"). */
CT_MUST_CHECK int qspec_parse_tsuid_param(const char *t, struct qspec_sub *sub, struct ct_err *err);
void qspec_sub_clear(struct qspec_sub *sub);

#endif
