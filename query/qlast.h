/* qlast.h - /api/query/last: the newest datapoint of series named by metric and tags or by
 * TSUID, found by reading hour rows newest first and stopping at the first point (OpenTSDB 2.4
 * LastPointQuery). With a back_scan, the rows of that many hours back from now; without one
 * (0), where OpenTSDB reads its TSMeta counters, the series and their newest hour come from the
 * newest-hour index (schema/meta.h), so a point of any age is found, and rows are read from
 * that hour down QLAST_DEFAULT_BACK_SCAN_H hours; a metric without index entries is read as
 * with a back_scan of QLAST_DEFAULT_BACK_SCAN_H.
 *
 * Threading: qlast_run blocks on the store; call it from a worker. qlast_run_bounded does a
 * bounded amount of store work (below) and may be run where a long run would hurt (the TSD's
 * network loop), giving up with CT_ELIMIT when the bound would be passed. */
#ifndef CT_QLAST_H
#define CT_QLAST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "query/qexec.h"
#include "query/qjson.h"
#include "query/qspec.h"
#include "schema/tsdb.h"
#include "storage/ct_err.h"

#define QLAST_DEFAULT_BACK_SCAN_H 24

/* The strings (metric, tag names and values, TSUIDs) live in their request's string chunks. */
struct qlast_query {
    char *metric; /* NULL for a tsuid query */
    char **tagk, **tagv;
    size_t ntags, tags_cap;
    char **tsuids;
    size_t ntsuids, tsuids_cap;
};

struct qlast_strs; /* private */
struct head;

struct qlast_req {
    struct qlast_query *q;
    size_t nq;
    bool resolve;
    int64_t back_scan_h;
    struct qlast_strs *strs; /* private: the queries' strings, freed with the request */
    /* the ingest head (schema/head.h) to read with the stored rows, set by the caller before
     * running (borrowed; NULL = stored rows only): a series' last point is the newer of its
     * stored one and the head's, the head's on equal timestamps */
    struct head *head;
};

/* Parses the GET form: timeseries=<metric{k=v,...}> (repeatable), tsuids=<hex,hex> (repeatable),
 * resolve (on when present), back_scan=<hours> (a 32-bit int, not above 0 = the index; else
 * "Unable to parse back_scan parameter"). Returns a new request in *out, freed with
 * qlast_req_free(). CT_EINVAL with the message on bad input. */
CT_MUST_CHECK int qlast_parse_params(qspec_param_fn get, void *arg, struct qlast_req **out,
                                     struct ct_err *err);
/* Parses {"queries":[{"metric":..,"tags":{..}},{"tsuids":[..]}],"resolveNames":..,
 * "backScan":..}. */
CT_MUST_CHECK int qlast_parse_json(const char *body, size_t len, struct qlast_req **out,
                                   struct ct_err *err);
void qlast_req_free(struct qlast_req *r);

/* Writes the JSON array of last points to j: each sub-query's points in request order (a metric
 * query's series sorted by TSUID; a series named by two sub-queries, or a TSUID listed twice, is
 * in the answer each time, as OpenTSDB answers it; a sub-query with TSUIDs ignores its metric).
 * *status tells 400 (unknown name, bad TSUID) or 500 on error; nothing is written then. */
CT_MUST_CHECK int qlast_run(struct tsdb *t, const struct qlast_req *r, int64_t now_ms,
                            struct qjson *j, enum qexec_status *status, struct ct_err *err);

/* The work a bounded run may do: max_scans scans and point reads (a metric query's discovery
 * ranges: salt buckets x hours x leading-tag combinations, read by one multi-range scanner per
 * bucket but counted per range, all of a bucket's before its scanner opens; one read per
 * series-hour row), max_rows row keys looked at by the discovery scans, max_cells cells in the
 * rows read, max_series series found by metric queries, and max_ns nanoseconds of wall time
 * (0 = no limit) checked before each bucket's scanner, point read and key. Scans, keys and
 * series are counted before the work is done (a discovery scan stops at the first series too
 * many, or that could not get its row read); a row's cells only once it is read, so the row
 * that passes max_cells (one series' hour) is the last one read, and the time between two
 * checks is at most the seeks of one scanner's ranges up to its next key, one row read or one
 * step between keys (the engine may walk a row's cells to step back over it). A run that would
 * pass a bound ends with CT_ELIMIT. */
struct qlast_budget {
    uint32_t max_scans;
    uint32_t max_rows;
    uint32_t max_cells;
    uint32_t max_series;
    uint64_t max_ns;
};

/* qlast_run within the budget b: the same answer, or CT_ELIMIT (err says which bound) having
 * written nothing to j once the run would pass a bound (run it again unbounded elsewhere). */
CT_MUST_CHECK int qlast_run_bounded(struct tsdb *t, const struct qlast_req *r, int64_t now_ms,
                                    const struct qlast_budget *b, struct qjson *j,
                                    enum qexec_status *status, struct ct_err *err);

#endif
