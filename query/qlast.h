/* qlast.h - /api/query/last: the newest datapoint of series named by metric and tags or by
 * TSUID, found by reading hour rows newest first and stopping at the first point (OpenTSDB 2.4
 * LastPointQuery with back_scan; ctsdb has no TSUID meta counters, so a back_scan of 0 means the
 * default window, QLAST_DEFAULT_BACK_SCAN_H hours).
 *
 * Threading: qlast_run blocks on the store; call it from a worker. */
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

struct qlast_query {
    char *metric; /* NULL for a tsuid query */
    char **tagk, **tagv;
    size_t ntags;
    char **tsuids;
    size_t ntsuids;
};

struct qlast_req {
    struct qlast_query *q;
    size_t nq;
    bool resolve;
    int64_t back_scan_h;
};

/* Parses the GET form: timeseries=<metric{k=v,...}> (repeatable), tsuids=<hex,hex> (repeatable),
 * resolve, back_scan=<hours> (bad -> "Unable to parse back_scan parameter"). Returns a new
 * request in *out, freed with qlast_req_free(). CT_EINVAL with the message on bad input. */
CT_MUST_CHECK int qlast_parse_params(qspec_param_fn get, void *arg, struct qlast_req **out,
                                     struct ct_err *err);
/* Parses {"queries":[{"metric":..,"tags":{..}},{"tsuids":[..]}],"resolveNames":..,
 * "backScan":..}. */
CT_MUST_CHECK int qlast_parse_json(const char *body, size_t len, struct qlast_req **out,
                                   struct ct_err *err);
void qlast_req_free(struct qlast_req *r);

/* Writes the JSON array of last points (sorted by TSUID) to j. *status tells 400 (unknown name,
 * bad TSUID) or 500 on error; nothing is written then. */
CT_MUST_CHECK int qlast_run(struct tsdb *t, const struct qlast_req *r, int64_t now_ms,
                            struct qjson *j, enum qexec_status *status, struct ct_err *err);

#endif
