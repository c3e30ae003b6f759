/* api_limits.c - the query limits of the daemon (OpenTSDB 2.4's QueryLimitOverride): opens the
 * per-metric overrides (query/qlimits.h) from tsd.query.limits.overrides.config and .interval
 * at start, logs each read of the file, and puts the byte limit, the overrides and whether a
 * query may lift the limits (tsd.query.limits.*.allow_override) in the query options of every
 * endpoint that runs queries (api_query_options calls api_query_limits).
 *
 * Invariants: t->qlimits is set before the loop starts and freed after the workers stop (no
 * query runs); with no file configured it is NULL and the defaults hold for every metric. */
#include "query/qexec.h"
#include "query/qlimits.h"
#include "tsd/conf.h"
#include "tsd/http.h"
#include "tsd/tlog.h"
#include "tsd/tsd_int.h"

static void limits_log(void *arg, bool error, const char *msg)
{
    (void)arg;
    if (error)
        tlog_error("%s", msg);
    else
        tlog_info("%s", msg);
}

int api_limits_open(struct tsd *t, struct ct_err *err)
{
    const char *file = conf_get(t->conf, "tsd.query.limits.overrides.config");
    t->qlimits = NULL;
    if (file == NULL || file[0] == '\0')
        return CT_OK;
    struct qlimits_options o = {
        .file = file,
        .reload_s = conf_get_int(t->conf, "tsd.query.limits.overrides.interval"),
        .log = limits_log,
    };
    return qlimits_new(&o, &t->qlimits, err);
}

void api_limits_close(struct tsd *t)
{
    qlimits_free(t->qlimits);
    t->qlimits = NULL;
}

void api_query_limits(struct http_req *r, struct qexec_options *o)
{
    struct tsd *t = http_req_tsd(r);
    o->max_bytes = (uint64_t)conf_get_int(t->conf, "tsd.query.limits.bytes.default");
    o->limits = t->qlimits;
    o->allow_bytes_override = conf_get_bool(t->conf, "tsd.query.limits.bytes.allow_override");
    o->allow_dps_override = conf_get_bool(t->conf, "tsd.query.limits.data_points.allow_override");
}
