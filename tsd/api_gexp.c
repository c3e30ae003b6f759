/* api_gexp.c - /api/query/gexp (GET): OpenTSDB 2.4's Graphite-style expressions. Each exp=
 * parameter is parsed by query/qgexp.h; the metric queries the expressions name become the
 * sub-queries of one /api/query (the URL's start, end, ms, arrays, timezone... apply to all;
 * identical queries run once), the query runs on a worker, each expression is evaluated over its
 * queries' groups, and the answer is /api/query's array of {metric, tags, aggregateTags, dps}:
 * the series of every expression, in exp= order.
 *
 * Invariants: parsing happens on the network loop, so a bad expression or query is a 400 before
 * any work (OpenTSDB answers these 500: an unchecked exception); the run's errors take
 * /api/query's statuses (400 unknown name, 408 timeout, 413 datapoint limit). m= and tsuid=
 * parameters are ignored, as OpenTSDB answers gexp with the expressions' results only. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "query/qexec.h"
#include "query/qgexp.h"
#include "query/qjson.h"
#include "query/qspec.h"
#include "storage/clock.h"
#include "storage/ct_err.h"
#include "tsd/conf.h"
#include "tsd/http.h"
#include "tsd/routes.h"
#include "tsd/tsd.h"
#include "tsd/tsd_int.h"

#define GEXP_MAX_EXPRESSIONS 32

struct gexp_req {
    struct qgexp *e[GEXP_MAX_EXPRESSIONS];
    size_t ne;
    const char **uq; /* the distinct metric queries (borrowed from the trees) */
    size_t nuq;
    size_t maxq; /* the most queries one expression names */
    size_t *map[GEXP_MAX_EXPRESSIONS]; /* expression i's query j is uq[map[i][j]] */
    struct qspec *q;
};

static void req_free(struct gexp_req *g)
{
    for (size_t i = 0; i < g->ne; i++) {
        qgexp_free(g->e[i]);
        free(g->map[i]);
    }
    free(g->uq);
    qspec_free(g->q);
    free(g);
}

/* The URL's parameters, with m= replaced by the expressions' queries and tsuid= hidden. */
static const char *param_at(void *arg, const char *name, size_t idx)
{
    const struct http_req *r = ((void **)arg)[0];
    const struct gexp_req *g = ((void **)arg)[1];
    if (strcmp(name, "m") == 0)
        return idx < g->nuq ? g->uq[idx] : NULL;
    if (strcmp(name, "tsuid") == 0)
        return NULL;
    return http_req_param_at(r, name, idx);
}

static int parse(struct http_req *r, struct gexp_req *g, struct ct_err *err)
{
    const char *src;
    for (size_t i = 0; (src = http_req_param_at(r, "exp", i)) != NULL; i++) {
        if (g->ne == GEXP_MAX_EXPRESSIONS)
            return ct_err_set(err, CT_EINVAL, "Too many expressions (at most %d)",
                              GEXP_MAX_EXPRESSIONS);
        int rc = qgexp_parse(src, &g->e[g->ne], err);
        if (rc != CT_OK)
            return rc;
        struct qgexp *e = g->e[g->ne];
        size_t nq = qgexp_nqueries(e);
        g->map[g->ne++] = calloc(nq > 0 ? nq : 1, sizeof(size_t));
        const char **nu = realloc(g->uq, (g->nuq + nq) * sizeof(*nu));
        if (nu != NULL)
            g->uq = nu;
        if (g->map[g->ne - 1] == NULL || nu == NULL)
            return ct_err_set(err, CT_ENOMEM, "out of memory");
        if (nq > g->maxq)
            g->maxq = nq;
        for (size_t j = 0; j < nq; j++) {
            const char *mq = qgexp_query(e, j);
            size_t k = 0;
            while (k < g->nuq && strcmp(g->uq[k], mq) != 0)
                k++;
            if (k == g->nuq)
                g->uq[g->nuq++] = mq;
            g->map[g->ne - 1][j] = k;
        }
    }
    /* OpenTSDB: no metric query in any exp= (none given, or only functions of arguments such
     * as scale(sys.cpu)) leaves the query without sub-queries */
    if (g->nuq == 0)
        return ct_err_set(err, CT_EINVAL, "Missing sub queries");
    void *pa[2] = {r, g};
    return qspec_parse_params(param_at, pa, clock_now_ms(), &g->q, err);
}

/* ---- the run ----------------------------------------------------------------------------- */

struct collect {
    struct qgexp_set *sets; /* one per distinct query */
    size_t cur_set, cur_series;
};

static int on_group(void *arg, const struct qexec_group *grp)
{
    struct collect *c = arg;
    struct qgexp_set *set = &c->sets[grp->sub];
    if (qgexp_set_add(set, grp->metric, grp->tagk, grp->tagv, grp->ntags, grp->agg, grp->nagg) ==
        NULL)
        return CT_ENOMEM;
    c->cur_set = grp->sub;
    c->cur_series = set->n - 1;
    return 0;
}

static int on_point(void *arg, const char *metric, const char *tags, const struct qagg_point *pt)
{
    (void)metric;
    (void)tags;
    struct collect *c = arg;
    return qgexp_series_push(&c->sets[c->cur_set].s[c->cur_series], pt);
}

static void write_value(struct qjson *j, const struct qagg_point *pt)
{
    char b[40];
    size_t n;
    if (pt->is_int) {
        n = qjson_format_i64(pt->v.i, b);
    } else if (isnan(pt->v.d) || isinf(pt->v.d)) { /* quoted, as /api/query writes them */
        b[0] = '"';
        n = 1 + qjson_format_double(pt->v.d, b + 1);
        b[n++] = '"';
    } else {
        n = qjson_format_double(pt->v.d, b);
    }
    qjson_raw(j, b, n);
}

static void write_series(struct qjson *j, const struct qspec *q, const struct qgexp_series *s,
                         bool first)
{
    qjson_lit(j, first ? "{\"metric\":" : ",{\"metric\":");
    qjson_str(j, s->metric);
    qjson_lit(j, ",\"tags\":{");
    for (size_t i = 0; i < s->ntags; i++) {
        if (i)
            qjson_raw(j, ",", 1);
        qjson_str(j, s->tagk[i]);
        qjson_raw(j, ":", 1);
        qjson_str(j, s->tagv[i]);
    }
    qjson_lit(j, "},\"aggregateTags\":[");
    for (size_t i = 0; i < s->nagg; i++) {
        if (i)
            qjson_raw(j, ",", 1);
        qjson_str(j, s->agg[i]);
    }
    qjson_lit(j, q->arrays ? "],\"dps\":[" : "],\"dps\":{");
    for (size_t i = 0; i < s->n; i++) {
        int64_t ts = q->ms_resolution ? s->p[i].ts_ms : s->p[i].ts_ms / 1000;
        if (i)
            qjson_raw(j, ",", 1);
        if (q->arrays) {
            qjson_raw(j, "[", 1);
            qjson_i64(j, ts);
            qjson_raw(j, ",", 1);
        } else {
            qjson_raw(j, "\"", 1);
            qjson_i64(j, ts);
            qjson_raw(j, "\":", 2);
        }
        write_value(j, &s->p[i]);
        if (q->arrays)
            qjson_raw(j, "]", 1);
    }
    qjson_lit(j, q->arrays ? "]}" : "}}");
}


static void gexp_work(struct http_req *r, void *arg)
{
    struct gexp_req *g = arg;
    struct qexec_options o;
    api_query_options(r, &o);
    struct ct_err err = {0};
    enum qexec_status status = QEXEC_INTERNAL;
    struct collect c = {.sets = calloc(g->nuq, sizeof(*c.sets))};
    struct qgexp_set *view = calloc(g->maxq, sizeof(*view));
    struct qgexp_set out[GEXP_MAX_EXPRESSIONS] = {0};
    int rc = c.sets && view ? CT_OK : ct_err_set(&err, CT_ENOMEM, "out of memory");
    if (rc == CT_OK)
        rc = qexec_run_groups(tsd_tsdb(http_req_tsd(r)), g->q, &o, on_group, on_point, &c,
                              &status, &err);
    if (rc == CT_ENOMEM && err.msg[0] == '\0')
        ct_err_set(&err, CT_ENOMEM, "out of memory collecting series");
    for (size_t i = 0; i < g->ne && rc == CT_OK; i++) {
        for (size_t k = 0; k < qgexp_nqueries(g->e[i]); k++)
            view[k] = c.sets[g->map[i][k]]; /* shallow: read only */
        rc = qgexp_eval(g->e[i], view, g->q->start_ms, g->q->end_ms, &out[i], &err);
        status = rc == CT_EINVAL ? QEXEC_BAD_REQUEST : QEXEC_INTERNAL;
    }
    if (rc == CT_OK) {
        struct http_stream_sink s = {r, false};
        struct qjson *j = qjson_new(http_stream_sink_write, &s, 0);
        if (j == NULL) {
            http_reply_error(r, 500, "out of memory", NULL);
        } else {
            bool first = true;
            qjson_raw(j, "[", 1);
            for (size_t i = 0; i < g->ne; i++)
                for (size_t k = 0; k < out[i].n; k++) {
                    write_series(j, g->q, &out[i].s[k], first);
                    first = false;
                }
            qjson_raw(j, "]", 1);
            rc = qjson_flush(j);
            if (rc == CT_OK || s.begun)
                http_stream_end(r);
            else
                http_reply_error(r, 500, "could not write the answer", NULL);
            qjson_free(j);
        }
    } else {
        http_reply_error(r, http_status_of(rc, (int)status), err.msg,
                         status == QEXEC_BAD_REQUEST ? err.msg : NULL);
    }
    for (size_t i = 0; i < g->ne; i++)
        qgexp_set_clear(&out[i]);
    for (size_t k = 0; c.sets && k < g->nuq; k++)
        qgexp_set_clear(&c.sets[k]);
    free(c.sets);
    free(view);
    req_free(g);
}

void api_query_gexp_handle(struct http_req *r)
{
    struct ct_err err = {0};
    struct gexp_req *g = calloc(1, sizeof(*g));
    if (g == NULL) {
        http_reply_error(r, 500, "out of memory", NULL);
        return;
    }
    int rc = parse(r, g, &err);
    if (rc != CT_OK) {
        req_free(g);
        http_reply_error(r, rc == CT_ENOMEM ? 500 : 400, err.msg, NULL);
        return;
    }
    if (http_req_defer(r, gexp_work, g, &err) != CT_OK) {
        req_free(g);
        http_reply_error(r, 503, "The TSD is overloaded; retry later", err.msg);
    }
}
