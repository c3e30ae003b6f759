/* api_exp.c - /api/query/exp (POST): OpenTSDB 2.4's expression query. The body's metrics are
 * run as /api/query sub-queries (one spec per metric: time.start/end, the metric's or time's
 * aggregator, time.downsampler, the filter set its "filter" names), their groups become the
 * expression variables keyed by tag set, query/qexpr.h evaluates each expression and the answer
 * lists the outputs (or every expression when "outputs" is absent) as OpenTSDB's shape:
 * {"outputs":[{"id","alias","dps":[[ts,v1,v2..]],"dpsMeta":{..},"meta":[..]}],"query":body}.
 *
 * Invariants: the body is validated on the loop (a 400 needs no worker); sub-queries run on a
 * worker; an error before the answer is OpenTSDB's error object (400 bad body or unknown name).
 * Not supported (answered 400): expressions over other expressions, join options other than
 * operator intersection/union (none given: union, as OpenTSDB). NaN values are written as
 * "NaN", as OpenTSDB's JSON writer quotes them. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/qexec.h"
#include "query/qexpr.h"
#include "query/qspec.h"
#include "storage/clock.h"
#include "storage/ct_err.h"
#include "tsd/conf.h"
#include "tsd/http.h"
#include "tsd/routes.h"
#include "tsd/tsd.h"
#include "tsd/tsd_int.h"

#define EXP_MAX_SERIES 4096

struct grow_series {
    char *key;
    size_t n, cap;
    int64_t *ts;
    double *v;
};

struct var_data {
    struct grow_series s[EXP_MAX_SERIES];
    size_t n;
    bool overflow;
};

static int collect(void *arg, const char *metric, const char *tags, const struct qagg_point *pt)
{
    (void)metric;
    struct var_data *d = arg;
    char key[1024];
    snprintf(key, sizeof(key), "%s", tags);
    for (char *c = key; *c; c++)
        if (*c == ' ')
            *c = ',';
    struct grow_series *g = NULL;
    for (size_t i = d->n; i-- > 0;)
        if (strcmp(d->s[i].key, key) == 0) {
            g = &d->s[i];
            break;
        }
    if (g == NULL) {
        if (d->n == EXP_MAX_SERIES) {
            d->overflow = true;
            return CT_ELIMIT;
        }
        g = &d->s[d->n];
        g->key = strdup(key);
        if (g->key == NULL)
            return CT_ENOMEM;
        d->n++;
    }
    if (g->n == g->cap) {
        size_t nc = g->cap ? g->cap * 2 : 64;
        int64_t *nt = realloc(g->ts, nc * sizeof(*nt));
        if (nt == NULL)
            return CT_ENOMEM;
        g->ts = nt;
        double *nv = realloc(g->v, nc * sizeof(*nv));
        if (nv == NULL)
            return CT_ENOMEM;
        g->v = nv;
        g->cap = nc;
    }
    g->ts[g->n] = pt->ts_ms;
    g->v[g->n++] = pt->is_int ? (double)pt->v.i : pt->v.d;
    return 0;
}

static void var_data_free(struct var_data *d)
{
    if (d == NULL)
        return;
    for (size_t i = 0; i < d->n; i++) {
        free(d->s[i].key);
        free(d->s[i].ts);
        free(d->s[i].v);
    }
    free(d);
}

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const cJSON *filter_tags(const cJSON *body, const char *id)
{
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(body, "filters"))
    {
        const char *fid = jstr(f, "id");
        if (fid && strcmp(fid, id) == 0)
            return cJSON_GetObjectItemCaseSensitive(f, "tags");
    }
    return NULL;
}

/* The /api/query body of metric m. */
static char *sub_query_json(const cJSON *body, const cJSON *m, struct ct_err *err)
{
    const cJSON *time = cJSON_GetObjectItemCaseSensitive(body, "time");
    cJSON *q = cJSON_CreateObject();
    cJSON *sub = cJSON_CreateObject();
    cJSON *qs = cJSON_AddArrayToObject(q, "queries");
    if (q == NULL || sub == NULL || qs == NULL) {
        cJSON_Delete(q);
        cJSON_Delete(sub);
        ct_err_set(err, CT_ENOMEM, "out of memory");
        return NULL;
    }
    cJSON_AddItemToArray(qs, sub);
    cJSON_AddItemToObject(q, "start",
                          cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(time, "start"), 1));
    const cJSON *end = cJSON_GetObjectItemCaseSensitive(time, "end");
    if (end)
        cJSON_AddItemToObject(q, "end", cJSON_Duplicate(end, 1));
    const char *agg = jstr(m, "aggregator");
    if (agg == NULL)
        agg = jstr(time, "aggregator");
    cJSON_AddStringToObject(sub, "aggregator", agg ? agg : "sum");
    cJSON_AddStringToObject(sub, "metric", jstr(m, "metric") ? jstr(m, "metric") : "");
    const cJSON *ds = cJSON_GetObjectItemCaseSensitive(time, "downsampler");
    if (ds) {
        char spec[128];
        const char *iv = jstr(ds, "interval"), *da = jstr(ds, "aggregator");
        const char *fp = jstr(cJSON_GetObjectItemCaseSensitive(ds, "fillPolicy"), "policy");
        snprintf(spec, sizeof(spec), "%s-%s%s%s", iv ? iv : "", da ? da : "", fp ? "-" : "",
                 fp ? fp : "");
        cJSON_AddStringToObject(sub, "downsample", spec);
    }
    const char *fid = jstr(m, "filter");
    if (fid) {
        const cJSON *tags = filter_tags(body, fid);
        if (tags == NULL) {
            cJSON_Delete(q);
            ct_err_set(err, CT_EINVAL, "No such filter id: %s", fid);
            return NULL;
        }
        cJSON_AddItemToObject(sub, "filters", cJSON_Duplicate(tags, 1));
    }
    char *s = cJSON_PrintUnformatted(q);
    cJSON_Delete(q);
    if (s == NULL)
        ct_err_set(err, CT_ENOMEM, "out of memory");
    return s;
}

/* Validation on the loop: OpenTSDB's required fields. */
static int validate(const cJSON *body, struct ct_err *err)
{
    if (!cJSON_IsObject(body))
        return ct_err_set(err, CT_EINVAL, "Unable to parse the request body");
    const cJSON *time = cJSON_GetObjectItemCaseSensitive(body, "time");
    if (!cJSON_IsObject(time))
        return ct_err_set(err, CT_EINVAL, "missing time");
    if (cJSON_GetObjectItemCaseSensitive(time, "start") == NULL)
        return ct_err_set(err, CT_EINVAL, "missing start time");
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(body, "metrics");
    if (!cJSON_IsArray(ms) || cJSON_GetArraySize(ms) == 0)
        return ct_err_set(err, CT_EINVAL, "missing or empty metrics");
    const cJSON *m;
    cJSON_ArrayForEach(m, ms)
    {
        if (jstr(m, "id") == NULL)
            return ct_err_set(err, CT_EINVAL, "missing or empty id");
        if (jstr(m, "metric") == NULL)
            return ct_err_set(err, CT_EINVAL, "missing or empty metric");
    }
    const cJSON *es = cJSON_GetObjectItemCaseSensitive(body, "expressions");
    if (!cJSON_IsArray(es) || cJSON_GetArraySize(es) == 0)
        return ct_err_set(err, CT_EINVAL, "missing or empty expressions");
    const cJSON *e;
    cJSON_ArrayForEach(e, es)
    {
        if (jstr(e, "id") == NULL)
            return ct_err_set(err, CT_EINVAL, "missing or empty id");
        if (jstr(e, "expr") == NULL)
            return ct_err_set(err, CT_EINVAL, "missing or empty expr");
        /* OpenTSDB 2.4 (Expression.validate, Join.validate): no join is a union; a join
         * without an operator is refused */
        const cJSON *jn = cJSON_GetObjectItemCaseSensitive(e, "join");
        const char *op = jstr(jn, "operator");
        if (jn && !op)
            return ct_err_set(err, CT_EINVAL, "Missing join operator");
        if (op && strcmp(op, "intersection") != 0 && strcmp(op, "union") != 0)
            return ct_err_set(err, CT_EINVAL, "Unsupported join operator: %s", op);
    }
    return 0;
}

static cJSON *output_of(const char *id, const char *alias, const struct qexpr_result *r, size_t nr)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", id);
    if (alias)
        cJSON_AddStringToObject(o, "alias", alias);
    /* rows: the union of the result series' timestamps, one value column per series */
    size_t *cur = calloc(nr ? nr : 1, sizeof(*cur));
    cJSON *dps = cJSON_AddArrayToObject(o, "dps");
    int64_t first = 0, last = 0;
    size_t rows = 0;
    for (; cur != NULL;) {
        bool any = false;
        int64_t ts = 0;
        for (size_t i = 0; i < nr; i++)
            if (cur[i] < r[i].n && (!any || r[i].ts[cur[i]] < ts)) {
                ts = r[i].ts[cur[i]];
                any = true;
            }
        if (!any)
            break;
        cJSON *row = cJSON_CreateArray();
        cJSON_AddItemToArray(row, cJSON_CreateNumber((double)ts));
        for (size_t i = 0; i < nr; i++) {
            double v = NAN;
            if (cur[i] < r[i].n && r[i].ts[cur[i]] == ts)
                v = r[i].v[cur[i]++];
            /* NaN as OpenTSDB's JSON writer quotes it, as /api/query's fill policy nan */
            cJSON_AddItemToArray(row, isnan(v) ? cJSON_CreateString("NaN") : cJSON_CreateNumber(v));
        }
        cJSON_AddItemToArray(dps, row);
        if (rows++ == 0)
            first = ts;
        last = ts;
    }
    free(cur);
    cJSON *meta = cJSON_AddObjectToObject(o, "dpsMeta");
    cJSON_AddNumberToObject(meta, "firstTimestamp", (double)first);
    cJSON_AddNumberToObject(meta, "lastTimestamp", (double)last);
    cJSON_AddNumberToObject(meta, "setCount", (double)rows);
    cJSON_AddNumberToObject(meta, "series", (double)nr);
    cJSON *ma = cJSON_AddArrayToObject(o, "meta");
    cJSON *m0 = cJSON_CreateObject();
    cJSON_AddNumberToObject(m0, "index", 0);
    cJSON *mm = cJSON_AddArrayToObject(m0, "metrics");
    cJSON_AddItemToArray(mm, cJSON_CreateString("timestamp"));
    cJSON_AddItemToArray(ma, m0);
    for (size_t i = 0; i < nr; i++) {
        cJSON *mi = cJSON_CreateObject();
        cJSON_AddNumberToObject(mi, "index", (double)(i + 1));
        cJSON *ml = cJSON_AddArrayToObject(mi, "metrics");
        cJSON_AddItemToArray(ml, cJSON_CreateString(id));
        cJSON *ct = cJSON_AddObjectToObject(mi, "commonTags");
        char buf[1024];
        snprintf(buf, sizeof(buf), "%s", r[i].key);
        for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv;
             kv = strtok_r(NULL, ",", &save)) {
            char *eq = strchr(kv, '=');
            if (eq) {
                *eq = '\0';
                cJSON_AddStringToObject(ct, kv, eq + 1);
            }
        }
        cJSON_AddArrayToObject(mi, "aggregatedTags");
        cJSON_AddItemToArray(ma, mi);
    }
    return o;
}

static void exp_work(struct http_req *r, void *arg)
{
    cJSON *body = arg;
    struct tsdb *t = tsd_tsdb(http_req_tsd(r));
    struct qexec_options o;
    api_query_options(r, &o); /* the data point limit holds per sub-query, as /api/query's */
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(body, "metrics");
    size_t nm = (size_t)cJSON_GetArraySize(ms);
    struct var_data **vd = calloc(nm, sizeof(*vd));
    struct qexpr_input *in = calloc(nm, sizeof(*in));
    struct qexpr_series **ser = calloc(nm, sizeof(*ser));
    struct ct_err err = {0};
    int status = 500;
    cJSON *ans = NULL;
    if (vd == NULL || in == NULL || ser == NULL) {
        ct_err_set(&err, CT_ENOMEM, "out of memory");
        goto done;
    }
    size_t i = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, ms)
    {
        char *qs = sub_query_json(body, m, &err);
        if (qs == NULL) {
            status = err.code == CT_EINVAL ? 400 : 500;
            goto done;
        }
        struct qspec *q = NULL;
        int rc = qspec_parse_json(qs, strlen(qs), clock_now_ms(), &q, &err);
        free(qs);
        if (rc != CT_OK) {
            status = rc == CT_EINVAL ? 400 : 500;
            goto done;
        }
        vd[i] = calloc(1, sizeof(*vd[i]));
        if (vd[i] == NULL) {
            qspec_free(q);
            ct_err_set(&err, CT_ENOMEM, "out of memory");
            goto done;
        }
        enum qexec_status st = QEXEC_INTERNAL;
        rc = qexec_run_points(t, q, &o, collect, vd[i], &st, &err);
        qspec_free(q);
        if (rc != CT_OK) {
            status = vd[i]->overflow ? 413 : (int)st;
            if (vd[i]->overflow)
                ct_err_set(&err, CT_ELIMIT, "more than %d series in metric %s", EXP_MAX_SERIES,
                           jstr(m, "id"));
            goto done;
        }
        ser[i] = calloc(vd[i]->n ? vd[i]->n : 1, sizeof(*ser[i]));
        if (ser[i] == NULL) {
            ct_err_set(&err, CT_ENOMEM, "out of memory");
            goto done;
        }
        for (size_t k = 0; k < vd[i]->n; k++)
            ser[i][k] = (struct qexpr_series){vd[i]->s[k].key, vd[i]->s[k].n, vd[i]->s[k].ts,
                                              vd[i]->s[k].v};
        in[i].id = jstr(m, "id");
        in[i].series = ser[i];
        in[i].nseries = vd[i]->n;
        in[i].fill = QEXPR_FILL_NAN;
        const cJSON *fp = cJSON_GetObjectItemCaseSensitive(m, "fillPolicy");
        const char *pol = jstr(fp, "policy");
        if (pol) {
            int f = qexpr_fill_parse(pol);
            if (f < 0) {
                ct_err_set(&err, CT_EINVAL, "Unrecognized fill policy: %s", pol);
                status = 400;
                goto done;
            }
            in[i].fill = (enum qexpr_fill)f;
            const cJSON *fv = cJSON_GetObjectItemCaseSensitive(fp, "value");
            in[i].fill_value = cJSON_IsNumber(fv) ? fv->valuedouble : 0;
        }
        i++;
    }
    ans = cJSON_CreateObject();
    cJSON *outs = cJSON_AddArrayToObject(ans, "outputs");
    const cJSON *es = cJSON_GetObjectItemCaseSensitive(body, "expressions");
    const cJSON *wanted = cJSON_GetObjectItemCaseSensitive(body, "outputs");
    const cJSON *e;
    cJSON_ArrayForEach(e, es)
    {
        const char *id = jstr(e, "id"), *alias = NULL;
        if (cJSON_IsArray(wanted) && cJSON_GetArraySize(wanted) > 0) {
            const cJSON *w;
            bool found = false;
            cJSON_ArrayForEach(w, wanted)
            {
                if (jstr(w, "id") && strcmp(jstr(w, "id"), id) == 0) {
                    found = true;
                    alias = jstr(w, "alias");
                }
            }
            if (!found)
                continue;
        }
        const char *op = jstr(cJSON_GetObjectItemCaseSensitive(e, "join"), "operator");
        enum qexpr_join join =
            op && strcmp(op, "intersection") == 0 ? QEXPR_JOIN_INTERSECTION : QEXPR_JOIN_UNION;
        struct qexpr *x = NULL;
        struct qexpr_result *res = NULL;
        size_t nres = 0;
        if (qexpr_parse(jstr(e, "expr"), &x, &err) != CT_OK ||
            qexpr_eval(x, in, nm, join, &res, &nres, &err) != CT_OK) {
            qexpr_free(x);
            status = err.code == CT_EINVAL ? 400 : 500;
            cJSON_Delete(ans);
            ans = NULL;
            goto done;
        }
        qexpr_free(x);
        cJSON_AddItemToArray(outs, output_of(id, alias, res, nres));
        qexpr_results_free(res, nres);
    }
    cJSON_AddItemToObject(ans, "query", cJSON_Duplicate(body, 1));
done:
    if (ans)
        http_reply_cjson(r, 200, ans);
    else
        http_reply_error(r, http_status_of(err.code, status), err.msg, NULL);
    for (size_t k = 0; k < nm && vd; k++) {
        var_data_free(vd[k]);
        if (ser)
            free(ser[k]);
    }
    free(vd);
    free(ser);
    free(in);
    cJSON_Delete(body);
}

void api_query_exp_handle(struct http_req *r)
{
    size_t len = 0;
    const char *b = http_req_body(r, &len);
    cJSON *body = cJSON_ParseWithLength(b, len);
    struct ct_err err = {0};
    if (validate(body, &err) != CT_OK) {
        cJSON_Delete(body);
        http_reply_error(r, 400, err.msg, NULL);
        return;
    }
    if (http_req_defer(r, exp_work, body, &err) != CT_OK) {
        cJSON_Delete(body);
        http_reply_error(r, 503, "The TSD is overloaded; retry later", err.msg);
    }
}
