/* api_exp.c - /api/query/exp (POST): OpenTSDB 2.4's expression query. The body's metrics are
 * run as /api/query sub-queries (one spec per metric: time.start/end, the metric's or time's
 * aggregator, time.downsampler, the filter set its "filter" names), their groups become the
 * expression variables keyed by tag set, query/qexpr.h evaluates each expression (an expression
 * may name other expressions: they are evaluated first) and the answer lists the outputs (a
 * metric id or an expression id each; absent: every expression) as OpenTSDB's shape:
 * {"outputs":[{"id","alias","dps":[[ts,v1,v2..]],"dpsMeta":{..},"meta":[..]}],"query":body}.
 *
 * Invariants: (1) the body is validated on the loop in the order of OpenTSDB's Query.validate(),
 * with its messages (a nested object's failure is OpenTSDB's outer message, e.g. "Invalid metric
 * at index 0", with the cause as the error's details), so a 400 needs no worker; (2) the
 * references between expressions are checked before any sub-query runs: an expression naming
 * itself or closing a cycle is refused (OpenTSDB's "Self referencing expression found: x",
 * "Circular reference found: x", the expression whose reference, in request order, closes the
 * cycle); (3) every expression is evaluated once, after the expressions it names, whether or not
 * it is output; (4) a metric missing a point takes its fillPolicy (default zero, as OpenTSDB's
 * TimeSyncedIterator), an expression used as a variable its own fillPolicy (default NaN, as
 * ExpressionIterator). NaN values are written as "NaN", as OpenTSDB's JSON writer quotes them. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/qagg.h"
#include "query/qexec.h"
#include "query/qexpr.h"
#include "query/qspec.h"
#include "query/qtime.h"
#include "storage/clock.h"
#include "storage/ct_err.h"
#include "tsd/conf.h"
#include "tsd/http.h"
#include "tsd/routes.h"
#include "tsd/tsd.h"
#include "tsd/tsd_int.h"

#define EXP_MAX_SERIES      4096
#define EXP_MAX_EXPRESSIONS 1024
#define EXP_MAX_QTAGK       64 /* the query tag keys of one metric kept for useQueryTags */

struct grow_series {
    char *key; /* the group's tags, "k=v,k2=v2" sorted by key */
    char *agg; /* its aggregated tag keys, "k,k2" sorted ("" none) */
    size_t n, cap;
    int64_t *ts;
    double *v;
};

struct var_data {
    struct grow_series s[EXP_MAX_SERIES];
    size_t n;
    bool overflow;
    char key[1024]; /* the current group's (on_group) */
    char agg[512];
};

/* Joins n strings a[i] (with b[i] after '=' when b is not NULL) by ',' into out. */
static void join_names(char *out, size_t cap, const char *const *a, const char *const *b, size_t n)
{
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && len < cap; i++) {
        int w = snprintf(out + len, cap - len, "%s%s%s%s", i ? "," : "", a[i], b ? "=" : "",
                         b ? b[i] : "");
        len += w > 0 ? (size_t)w : 0;
    }
}

static int on_group(void *arg, const struct qexec_group *g)
{
    struct var_data *d = arg;
    join_names(d->key, sizeof(d->key), g->tagk, g->tagv, g->ntags);
    join_names(d->agg, sizeof(d->agg), g->agg, NULL, g->nagg);
    return 0;
}

static int collect(void *arg, const char *metric, const char *tags, const struct qagg_point *pt)
{
    (void)metric;
    (void)tags; /* the group's, as on_group recorded them */
    struct var_data *d = arg;
    const char *key = d->key;
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
        g->agg = strdup(d->agg);
        if (g->key == NULL || g->agg == NULL) {
            free(g->key);
            free(g->agg);
            return CT_ENOMEM;
        }
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
        free(d->s[i].agg);
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
    char low[64] = "sum";
    for (size_t k = 0; agg != NULL && k + 1 < sizeof(low); k++)
        if ((low[k] = (char)tolower((unsigned char)agg[k])) == '\0')
            break;
    cJSON_AddStringToObject(sub, "aggregator", low);
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
    /* OpenTSDB 2.4 (QueryExecutor): every sub-query takes time.rate, with default rate options
     * (Timespan has no rateOptions: a "rateOptions" there is ignored, as unknown fields are) */
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(time, "rate")))
        cJSON_AddTrueToObject(sub, "rate");
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

/* ---- validation (1) ---------------------------------------------------------------------- */

/* A refusal: err's message is outer (NULL: the cause itself), details the cause. */
struct exp_refusal {
    struct ct_err err;
    char details[256];
};

static int refuse(struct exp_refusal *x, const char *outer, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int refuse(struct exp_refusal *x, const char *outer, const char *fmt, ...)
{
    char cause[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cause, sizeof(cause), fmt, ap);
    va_end(ap);
    if (outer == NULL)
        return ct_err_set(&x->err, CT_EINVAL, "%s", cause);
    snprintf(x->details, sizeof(x->details), "%s", cause);
    return ct_err_set(&x->err, CT_EINVAL, "%s", outer);
}

/* A time given as a string or a number (Jackson reads either into a String); NULL if absent. */
static const char *jtime(const cJSON *o, const char *k, char *buf, size_t len)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (cJSON_IsString(v))
        return v->valuestring;
    if (cJSON_IsNumber(v)) {
        snprintf(buf, len, "%.0f", v->valuedouble);
        return buf;
    }
    return NULL;
}

/* OpenTSDB's Query.validateId: letters and digits only, not a lone digit. */
static int check_id(struct exp_refusal *x, const char *outer, const char *id)
{
    if (id == NULL || *id == '\0')
        return refuse(x, outer, "The ID cannot be null or empty");
    for (const char *c = id; *c; c++)
        if (!isalnum((unsigned char)*c))
            return refuse(x, outer, "Invalid id (\"%s\"): illegal character: %c", id, *c);
    if (id[1] == '\0' && isdigit((unsigned char)id[0]))
        return refuse(x, outer, "The ID cannot be an integer");
    return 0;
}

static int check_aggregator(struct exp_refusal *x, const char *outer, const char *name)
{
    char low[64];
    size_t i = 0;
    for (; name[i] && i + 1 < sizeof(low); i++)
        low[i] = (char)tolower((unsigned char)name[i]);
    low[i] = '\0';
    if (name[i] != '\0' || qagg_lookup(low) == NULL)
        return refuse(x, outer, "Invalid aggregator");
    return 0;
}

/* A NumericFillPolicy ({"policy","value"}): the policy, or inferred from the value when absent
 * (0 zero, NaN nan, else scalar); the value must suit the policy. */
static int parse_fill(struct exp_refusal *x, const char *outer, const cJSON *fp,
                      enum qexpr_fill *fill, double *value)
{
    const cJSON *jv = cJSON_GetObjectItemCaseSensitive(fp, "value");
    double v = 0;
    if (cJSON_IsNumber(jv))
        v = jv->valuedouble;
    else if (cJSON_IsString(jv) && strcmp(jv->valuestring, "NaN") == 0)
        v = NAN;
    const char *pol = jstr(fp, "policy");
    if (pol == NULL) {
        *fill = v == 0 ? QEXPR_FILL_ZERO : isnan(v) ? QEXPR_FILL_NAN : QEXPR_FILL_SCALAR;
        *value = v;
        return 0;
    }
    int f = qexpr_fill_parse(pol);
    if (f < 0)
        return refuse(x, NULL, "Unrecognized fill policy: %s", pol);
    if ((f == QEXPR_FILL_NONE || f == QEXPR_FILL_NAN) && v != 0 && !isnan(v))
        return refuse(x, outer, "The value for NONE and NAN must be NaN");
    if (f == QEXPR_FILL_ZERO && v != 0)
        return refuse(x, outer, "The value for ZERO must be 0");
    if (f == QEXPR_FILL_NULL && v != 0 && !isnan(v))
        return refuse(x, outer, "The value for NULL must be 0");
    *fill = (enum qexpr_fill)f;
    *value = f == QEXPR_FILL_SCALAR ? v : f == QEXPR_FILL_ZERO ? 0 : NAN;
    return 0;
}

static int check_time(struct exp_refusal *x, const cJSON *time)
{
    const char *outer = "Invalid time";
    char buf[32];
    int64_t ms;
    const char *start = jtime(time, "start", buf, sizeof(buf));
    if (start == NULL || *start == '\0')
        return refuse(x, outer, "missing or empty start");
    if (qtime_parse(start, NULL, clock_now_ms(), &ms, &x->err) != CT_OK)
        return refuse(x, outer, "%s", x->err.msg);
    const char *end = jtime(time, "end", buf, sizeof(buf));
    if (end != NULL && *end != '\0' && qtime_parse(end, NULL, clock_now_ms(), &ms, &x->err) != 0)
        return refuse(x, outer, "%s", x->err.msg);
    const cJSON *ds = cJSON_GetObjectItemCaseSensitive(time, "downsampler");
    if (ds != NULL && !cJSON_IsNull(ds)) {
        const char *iv = jstr(ds, "interval"), *da = jstr(ds, "aggregator");
        if (iv == NULL || *iv == '\0')
            return refuse(x, outer, "Missing or empty interval");
        if (qtime_parse_duration(iv, &ms, NULL, NULL, &x->err) != CT_OK)
            return refuse(x, outer, "%s", x->err.msg);
        if (da == NULL || *da == '\0')
            return refuse(x, outer, "Missing or empty aggregator");
        if (check_aggregator(x, outer, da) != 0)
            return x->err.code;
        const cJSON *fp = cJSON_GetObjectItemCaseSensitive(ds, "fillPolicy");
        enum qexpr_fill f;
        double v;
        if (fp != NULL && parse_fill(x, outer, fp, &f, &v) != 0)
            return x->err.code;
    }
    const char *agg = jstr(time, "aggregator");
    if (agg == NULL || *agg == '\0')
        return refuse(x, outer, "Missing or empty aggregator");
    return check_aggregator(x, outer, agg);
}

/* Is id one of the ids of arr (objects with "id") before index `before` (-1: all)? */
static bool has_id(const cJSON *arr, const char *id, int before)
{
    const cJSON *o;
    int i = 0;
    cJSON_ArrayForEach(o, arr)
    {
        if (before >= 0 && i++ >= before)
            break;
        const char *oid = jstr(o, "id");
        if (id != NULL && oid != NULL && strcmp(oid, id) == 0)
            return true;
    }
    return false;
}

/* Validation on the loop (1): Query.validate()'s checks in its order. */
static int validate(const cJSON *body, struct exp_refusal *x)
{
    if (!cJSON_IsObject(body))
        return refuse(x, NULL, "Unable to parse the request body");
    const cJSON *time = cJSON_GetObjectItemCaseSensitive(body, "time");
    if (!cJSON_IsObject(time))
        return refuse(x, NULL, "missing time");
    if (check_time(x, time) != 0)
        return x->err.code;
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(body, "metrics");
    if (!cJSON_IsArray(ms) || cJSON_GetArraySize(ms) == 0)
        return refuse(x, NULL, "missing or empty metrics");
    const cJSON *fs = cJSON_GetObjectItemCaseSensitive(body, "filters");
    const cJSON *es = cJSON_GetObjectItemCaseSensitive(body, "expressions");
    const cJSON *m, *f, *e;
    int i = 0;
    cJSON_ArrayForEach(m, ms)
    {
        if (has_id(ms, jstr(m, "id"), i++))
            return refuse(x, NULL, "duplicated metric id: %s", jstr(m, "id"));
    }
    i = 0;
    cJSON_ArrayForEach(f, fs)
    {
        if (has_id(fs, jstr(f, "id"), i++))
            return refuse(x, NULL, "duplicated filter id: %s", jstr(f, "id"));
    }
    i = 0;
    cJSON_ArrayForEach(e, es)
    {
        const char *id = jstr(e, "id");
        if (has_id(ms, id, -1) || has_id(es, id, i))
            return refuse(x, NULL, "Duplicated variable or expression id: %s", id);
        i++;
    }
    char outer[64];
    i = 0;
    cJSON_ArrayForEach(m, ms)
    {
        snprintf(outer, sizeof(outer), "Invalid metric at index %d", i++);
        const char *name = jstr(m, "metric"), *agg = jstr(m, "aggregator");
        if (name == NULL || *name == '\0')
            return refuse(x, outer, "missing or empty metric");
        if (jstr(m, "id") == NULL || *jstr(m, "id") == '\0')
            return refuse(x, outer, "missing or empty id");
        if (check_id(x, outer, jstr(m, "id")) != 0)
            return x->err.code;
        /* OpenTSDB 2.4 parses timeOffset as a time (Metric.validate) and applies it nowhere */
        char obuf[32];
        int64_t off_ms;
        const char *off = jtime(m, "timeOffset", obuf, sizeof(obuf));
        if (off != NULL && *off != '\0' &&
            qtime_parse(off, NULL, clock_now_ms(), &off_ms, &x->err) != CT_OK)
            return refuse(x, outer, "%s", x->err.msg);
        if (agg != NULL && *agg != '\0' && check_aggregator(x, outer, agg) != 0)
            return x->err.code;
        const cJSON *fp = cJSON_GetObjectItemCaseSensitive(m, "fillPolicy");
        enum qexpr_fill fl;
        double v;
        if (fp != NULL && parse_fill(x, outer, fp, &fl, &v) != 0)
            return x->err.code;
    }
    i = 0;
    cJSON_ArrayForEach(f, fs)
    {
        snprintf(outer, sizeof(outer), "Invalid filter at index %d", i++);
        if (jstr(f, "id") == NULL || *jstr(f, "id") == '\0')
            return refuse(x, outer, "Missing or empty id");
        if (check_id(x, outer, jstr(f, "id")) != 0)
            return x->err.code;
    }
    /* ctsdb refuses a query without expressions (OpenTSDB fails on it with no message) */
    if (!cJSON_IsArray(es) || cJSON_GetArraySize(es) == 0)
        return refuse(x, NULL, "missing or empty expressions");
    if (cJSON_GetArraySize(es) > EXP_MAX_EXPRESSIONS)
        return refuse(x, NULL, "too many expressions (at most %d)", EXP_MAX_EXPRESSIONS);
    i = 0;
    cJSON_ArrayForEach(e, es)
    {
        snprintf(outer, sizeof(outer), "Invalid expression at index %d", i++);
        const char *id = jstr(e, "id"), *src = jstr(e, "expr");
        if (id == NULL || *id == '\0')
            return refuse(x, outer, "missing or empty id");
        if (check_id(x, outer, id) != 0)
            return x->err.code;
        if (src == NULL || *src == '\0')
            return refuse(x, outer, "missing or empty expr");
        struct qexpr *q = NULL;
        if (qexpr_parse(src, &q, &x->err) != CT_OK)
            return refuse(x, outer, "%s", x->err.msg);
        qexpr_free(q);
        const cJSON *fp = cJSON_GetObjectItemCaseSensitive(e, "fillPolicy");
        enum qexpr_fill fl;
        double v;
        if (fp != NULL && parse_fill(x, outer, fp, &fl, &v) != 0)
            return x->err.code;
        /* OpenTSDB 2.4 (Expression.validate, Join.validate): no join is a union; a join
         * without an operator is refused */
        const cJSON *jn = cJSON_GetObjectItemCaseSensitive(e, "join");
        const char *op = jstr(jn, "operator");
        if (jn && !op)
            return refuse(x, NULL, "Missing join operator");
        if (op && strcmp(op, "intersection") != 0 && strcmp(op, "union") != 0)
            return refuse(x, NULL, "Unsupported join operator: %s", op);
    }
    cJSON_ArrayForEach(m, ms)
    {
        const char *fid = jstr(m, "filter");
        if (fid != NULL && *fid != '\0' && !has_id(fs, fid, -1))
            return refuse(x, NULL, "unrecognized filter id %s in metric %s", fid, jstr(m, "id"));
    }
    cJSON_ArrayForEach(e, es)
    {
        struct qexpr *q = NULL;
        if (qexpr_parse(jstr(e, "expr"), &q, &x->err) != CT_OK)
            return x->err.code;
        for (size_t v = 0; v < qexpr_nvars(q); v++)
            if (!has_id(ms, qexpr_var(q, v), -1) && !has_id(es, qexpr_var(q, v), -1)) {
                refuse(x, NULL, "Expression [%s] was missing input %s", jstr(e, "expr"),
                       qexpr_var(q, v));
                qexpr_free(q);
                return x->err.code;
            }
        qexpr_free(q);
    }
    /* after every validate() check, as OpenTSDB's QueryExecutor builds each expression's
     * iterator once the query validated: an expression without a variable is refused there */
    cJSON_ArrayForEach(e, es)
    {
        struct qexpr *q = NULL;
        if (qexpr_parse(jstr(e, "expr"), &q, &x->err) != CT_OK)
            return x->err.code;
        size_t nv = qexpr_nvars(q);
        qexpr_free(q);
        if (nv == 0)
            return refuse(x, NULL, "The expression didn't appear to have any variables");
    }
    return 0;
}

/* ---- answering ----------------------------------------------------------------------------- */

/* One output: r[0..nr) (every series on the same timestamps), metrics the names for "meta". */
static cJSON *output_of(const char *id, const char *alias, const struct qexpr_result *r, size_t nr,
                        const char *const *metrics, size_t nmetrics)
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
        for (size_t k = 0; k < nmetrics; k++)
            cJSON_AddItemToArray(ml, cJSON_CreateString(metrics[k]));
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
        cJSON *at = cJSON_AddArrayToObject(mi, "aggregatedTags");
        snprintf(buf, sizeof(buf), "%s", r[i].agg ? r[i].agg : "");
        for (char *save = NULL, *k = strtok_r(buf, ",", &save); k; k = strtok_r(NULL, ",", &save))
            cJSON_AddItemToArray(at, cJSON_CreateString(k));
        cJSON_AddItemToArray(ma, mi);
    }
    return o;
}

/* The state of one expression query's run on the worker. */
struct exp_run {
    const cJSON *body;
    size_t nm, ne;
    const cJSON **mj, **ej;    /* the metric and expression objects */
    struct var_data **vd;      /* metric i's series */
    struct qexpr_series **ser; /* variable i's series (metrics, then expressions) */
    struct qexpr_input *in;    /* nm + ne: metrics, then expressions */
    struct qexpr **ex;         /* expression j parsed */
    struct qexpr_result **res; /* expression j's results, once evaluated */
    size_t *nres;
    unsigned char *state; /* expression j: 0 not evaluated, 1 evaluating, 2 done */
    bool *uses;           /* uses[j * nm + i]: expression j reads metric i (directly or
                                      through other expressions) */
    bool *edge;           /* edge[j * ne + k]: expression j names expression k */
    const char **qtagk;   /* qtagk[i * EXP_MAX_QTAGK ..]: metric i's filter tag keys */
};

static long find_var(const struct exp_run *x, const char *id, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        if (strcmp(x->in[i].id, id) == 0)
            return (long)i;
    return -1;
}

/* Does expression a reach expression b over the references recorded so far? */
static bool reaches(const struct exp_run *x, size_t a, size_t b, unsigned char *seen)
{
    if (a == b)
        return true;
    if (seen[a])
        return false;
    seen[a] = 1;
    for (size_t k = 0; k < x->ne; k++)
        if (x->edge[a * x->ne + k] && reaches(x, k, b, seen))
            return true;
    return false;
}

/* (2): the references between expressions, in request order, as OpenTSDB adds them to its
 * graph: a self reference, or one that closes a cycle, is refused. */
static int check_references(struct exp_run *x, struct ct_err *err)
{
    unsigned char *seen = malloc(x->ne);
    if (seen == NULL)
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    for (size_t j = 0; j < x->ne; j++)
        for (size_t v = 0; v < qexpr_nvars(x->ex[j]); v++) {
            long k = find_var(x, qexpr_var(x->ex[j], v), x->nm, x->nm + x->ne);
            if (k < 0)
                continue;
            size_t kk = (size_t)k - x->nm;
            if (kk == j) {
                free(seen);
                return ct_err_set(err, CT_EINVAL, "Self referencing expression found: %s",
                                  x->in[x->nm + j].id);
            }
            memset(seen, 0, x->ne);
            if (reaches(x, kk, j, seen)) {
                free(seen);
                return ct_err_set(err, CT_EINVAL, "Circular reference found: %s",
                                  x->in[x->nm + j].id);
            }
            x->edge[j * x->ne + kk] = true;
        }
    free(seen);
    return 0;
}

/* (3): evaluates expression j after the expressions it names; the graph is acyclic. */
static int eval_expression(struct exp_run *x, size_t j, struct ct_err *err)
{
    if (x->state[j] == 2)
        return 0;
    x->state[j] = 1;
    bool any_series = false;
    for (size_t v = 0; v < qexpr_nvars(x->ex[j]); v++) {
        long i = find_var(x, qexpr_var(x->ex[j], v), 0, x->nm + x->ne);
        if (i < 0) /* validate() checked every name */
            return ct_err_set(err, CT_EINVAL, "expression: no metric or expression with id '%s'",
                              qexpr_var(x->ex[j], v));
        if ((size_t)i >= x->nm) {
            size_t k = (size_t)i - x->nm;
            int rc = eval_expression(x, k, err);
            if (rc != 0)
                return rc;
            for (size_t m = 0; m < x->nm; m++)
                x->uses[j * x->nm + m] |= x->uses[k * x->nm + m];
        } else {
            x->uses[j * x->nm + (size_t)i] = true;
        }
        any_series |= x->in[i].nseries > 0;
    }
    const cJSON *e = x->ej[j];
    const cJSON *jn = cJSON_GetObjectItemCaseSensitive(e, "join");
    const char *op = jstr(jn, "operator");
    /* OpenTSDB 2.4's defaults (QueryExecutor): a union, useQueryTags false, includeAggTags true */
    struct qexpr_join_opts jo = {
        .op = op && strcmp(op, "intersection") == 0 ? QEXPR_JOIN_INTERSECTION : QEXPR_JOIN_UNION,
        .use_query_tags = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(jn, "useQueryTags")),
        .include_agg_tags = !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(jn, "includeAggTags")),
    };
    int rc = qexpr_eval_join(x->ex[j], x->in, x->nm + x->ne, &jo, &x->res[j], &x->nres[j], err);
    if (rc != 0)
        return rc;
    /* OpenTSDB's IntersectionIterator refuses an empty intersection of series that exist */
    if (jo.op == QEXPR_JOIN_INTERSECTION && x->nres[j] == 0 && any_series)
        return ct_err_set(err, CT_EINVAL, "No intersections found: expression %s (%s)",
                          jstr(e, "id"), jstr(e, "expr"));
    struct qexpr_series *ser = calloc(x->nres[j] ? x->nres[j] : 1, sizeof(*ser));
    if (ser == NULL)
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    for (size_t k = 0; k < x->nres[j]; k++)
        ser[k] = (struct qexpr_series){x->res[j][k].key, x->res[j][k].n, x->res[j][k].ts,
                                       x->res[j][k].v, x->res[j][k].agg};
    x->ser[x->nm + j] = ser;
    x->in[x->nm + j].series = ser;
    x->in[x->nm + j].nseries = x->nres[j];
    x->state[j] = 2;
    return 0;
}

/* Runs metric i's sub-query into x->vd[i] and its input; *status set on failure. */
static int run_metric(struct exp_run *x, size_t i, struct tsdb *t, const struct qexec_options *o,
                      int *status, struct ct_err *err)
{
    const cJSON *m = x->mj[i];
    char *qs = sub_query_json(x->body, m, err);
    if (qs == NULL) {
        *status = err->code == CT_EINVAL ? 400 : 500;
        return err->code;
    }
    struct qspec *q = NULL;
    int rc = qspec_parse_json(qs, strlen(qs), clock_now_ms(), &q, err);
    free(qs);
    if (rc != CT_OK) {
        *status = rc == CT_EINVAL ? 400 : 500;
        return rc;
    }
    x->vd[i] = calloc(1, sizeof(*x->vd[i]));
    if (x->vd[i] == NULL) {
        qspec_free(q);
        *status = 500;
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    }
    enum qexec_status st = QEXEC_INTERNAL;
    rc = qexec_run_groups(t, q, o, on_group, collect, x->vd[i], &st, err);
    qspec_free(q);
    if (rc != CT_OK) {
        *status = x->vd[i]->overflow ? 413 : (int)st;
        if (x->vd[i]->overflow)
            ct_err_set(err, CT_ELIMIT, "more than %d series in metric %s", EXP_MAX_SERIES,
                       jstr(m, "id"));
        return rc;
    }
    struct var_data *d = x->vd[i];
    x->ser[i] = calloc(d->n ? d->n : 1, sizeof(*x->ser[i]));
    if (x->ser[i] == NULL) {
        *status = 500;
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    }
    for (size_t k = 0; k < d->n; k++)
        x->ser[i][k] =
            (struct qexpr_series){d->s[k].key, d->s[k].n, d->s[k].ts, d->s[k].v, d->s[k].agg};
    x->in[i].series = x->ser[i];
    x->in[i].nseries = d->n;
    /* the query tag keys (OpenTSDB's TSSubQuery.getFilterTagKs): every filter's tag key */
    const char **qk = &x->qtagk[i * EXP_MAX_QTAGK];
    const cJSON *f;
    const char *fid = jstr(m, "filter");
    const cJSON *ftags = fid ? filter_tags(x->body, fid) : NULL;
    cJSON_ArrayForEach(f, ftags)
    {
        const char *k = jstr(f, "tagk");
        bool dup = false;
        for (size_t n = 0; k != NULL && n < x->in[i].nquery_tagk; n++)
            dup |= strcmp(qk[n], k) == 0;
        if (k != NULL && !dup && x->in[i].nquery_tagk < EXP_MAX_QTAGK)
            qk[x->in[i].nquery_tagk++] = k;
    }
    x->in[i].query_tagk = qk;
    return 0;
}

static void exp_run_free(struct exp_run *x)
{
    for (size_t i = 0; i < x->nm && x->vd; i++)
        var_data_free(x->vd[i]);
    for (size_t i = 0; i < x->nm + x->ne && x->ser; i++)
        free(x->ser[i]);
    for (size_t j = 0; j < x->ne; j++) {
        if (x->ex)
            qexpr_free(x->ex[j]);
        if (x->res)
            qexpr_results_free(x->res[j], x->nres[j]);
    }
    free(x->mj);
    free(x->ej);
    free(x->vd);
    free(x->ser);
    free(x->in);
    free(x->ex);
    free(x->res);
    free(x->nres);
    free(x->state);
    free(x->uses);
    free(x->edge);
    free(x->qtagk);
}

/* The output named id (an expression's, else a metric's; NULL if neither), appended to outs. */
static int add_output(struct exp_run *x, cJSON *outs, const char *id, const char *alias,
                      struct ct_err *err)
{
    const char **names = calloc(x->nm ? x->nm : 1, sizeof(*names));
    if (names == NULL)
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    size_t nn = 0;
    long v = id ? find_var(x, id, 0, x->nm + x->ne) : -1;
    int rc = 0;
    if (v >= (long)x->nm) {
        size_t j = (size_t)v - x->nm;
        for (size_t i = 0; i < x->nm; i++) {
            bool dup = false;
            for (size_t k = 0; k < nn; k++)
                dup |= strcmp(names[k], jstr(x->mj[i], "metric")) == 0;
            if (x->uses[j * x->nm + i] && !dup)
                names[nn++] = jstr(x->mj[i], "metric");
        }
        cJSON_AddItemToArray(outs, output_of(id, alias, x->res[j], x->nres[j], names, nn));
    } else if (v >= 0) {
        /* a metric as an output: its series time-synced and filled (OpenTSDB's
         * SerializeSubIterator) */
        struct qexpr_result *r = NULL;
        size_t nr = 0;
        rc = qexpr_sync(&x->in[v], &r, &nr, err);
        for (size_t k = 0; rc == 0 && k < nr; k++) /* each series' aggregated tag keys */
            for (size_t s = 0; s < x->in[v].nseries && r[k].agg == NULL; s++)
                if (strcmp(x->in[v].series[s].key, r[k].key) == 0 &&
                    (r[k].agg = strdup(x->in[v].series[s].agg ? x->in[v].series[s].agg : "")) ==
                        NULL)
                    rc = ct_err_set(err, CT_ENOMEM, "out of memory");
        if (rc == 0) {
            names[nn++] = jstr(x->mj[v], "metric");
            cJSON_AddItemToArray(outs, output_of(id, alias, r, nr, names, nn));
        }
        qexpr_results_free(r, nr);
    }
    /* an id naming nothing is left out, as OpenTSDB does (it logs a warning) */
    free(names);
    return rc;
}

static void exp_work(struct http_req *r, void *arg)
{
    cJSON *body = arg;
    struct tsdb *t = tsd_tsdb(http_req_tsd(r));
    struct qexec_options o;
    api_query_options(r, &o); /* the data point limit holds per sub-query, as /api/query's */
    struct exp_run x = {.body = body};
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(body, "metrics");
    const cJSON *es = cJSON_GetObjectItemCaseSensitive(body, "expressions");
    x.nm = (size_t)cJSON_GetArraySize(ms);
    x.ne = (size_t)cJSON_GetArraySize(es);
    size_t nv = x.nm + x.ne;
    struct ct_err err = {0};
    int status = 500;
    cJSON *ans = NULL;
    x.mj = calloc(x.nm, sizeof(*x.mj));
    x.ej = calloc(x.ne, sizeof(*x.ej));
    x.vd = calloc(x.nm, sizeof(*x.vd));
    x.ser = calloc(nv, sizeof(*x.ser));
    x.in = calloc(nv, sizeof(*x.in));
    x.ex = calloc(x.ne, sizeof(*x.ex));
    x.res = calloc(x.ne, sizeof(*x.res));
    x.nres = calloc(x.ne, sizeof(*x.nres));
    x.state = calloc(x.ne, 1);
    x.uses = calloc(x.ne * x.nm, sizeof(*x.uses));
    x.edge = calloc(x.ne * x.ne, sizeof(*x.edge));
    x.qtagk = calloc(x.nm * EXP_MAX_QTAGK, sizeof(*x.qtagk));
    if (!x.mj || !x.ej || !x.vd || !x.ser || !x.in || !x.ex || !x.res || !x.nres || !x.state ||
        !x.uses || !x.edge || !x.qtagk) {
        ct_err_set(&err, CT_ENOMEM, "out of memory");
        goto done;
    }
    struct exp_refusal ref = {0};
    size_t i = 0;
    const cJSON *m, *e;
    cJSON_ArrayForEach(m, ms)
    {
        x.mj[i] = m;
        x.in[i].id = jstr(m, "id");
        x.in[i].fill = QEXPR_FILL_ZERO; /* (4) */
        const cJSON *fp = cJSON_GetObjectItemCaseSensitive(m, "fillPolicy");
        if (fp != NULL && parse_fill(&ref, "", fp, &x.in[i].fill, &x.in[i].fill_value) != 0) {
            err = ref.err; /* validate() accepted it: not reached */
            status = 400;
            goto done;
        }
        i++;
    }
    size_t j = 0;
    cJSON_ArrayForEach(e, es)
    {
        x.ej[j] = e;
        x.in[x.nm + j].id = jstr(e, "id");
        x.in[x.nm + j].fill = QEXPR_FILL_NAN; /* (4) */
        const cJSON *fp = cJSON_GetObjectItemCaseSensitive(e, "fillPolicy");
        if (fp != NULL &&
            parse_fill(&ref, "", fp, &x.in[x.nm + j].fill, &x.in[x.nm + j].fill_value) != 0) {
            err = ref.err;
            status = 400;
            goto done;
        }
        if (qexpr_parse(jstr(e, "expr"), &x.ex[j], &err) != CT_OK) {
            status = err.code == CT_EINVAL ? 400 : 500;
            goto done;
        }
        j++;
    }
    if (check_references(&x, &err) != 0) {
        status = err.code == CT_EINVAL ? 400 : 500;
        goto done;
    }
    for (i = 0; i < x.nm; i++)
        if (run_metric(&x, i, t, &o, &status, &err) != 0)
            goto done;
    for (j = 0; j < x.ne; j++)
        if (eval_expression(&x, j, &err) != 0) {
            status = err.code == CT_EINVAL ? 400 : err.code == CT_ELIMIT ? 413 : 500;
            goto done;
        }
    ans = cJSON_CreateObject();
    cJSON *outs = cJSON_AddArrayToObject(ans, "outputs");
    const cJSON *wanted = cJSON_GetObjectItemCaseSensitive(body, "outputs");
    int rc = 0;
    if (cJSON_IsArray(wanted) && cJSON_GetArraySize(wanted) > 0) {
        const cJSON *w;
        cJSON_ArrayForEach(w, wanted)
        {
            if (rc == 0)
                rc = add_output(&x, outs, jstr(w, "id"), jstr(w, "alias"), &err);
        }
    } else {
        for (j = 0; j < x.ne && rc == 0; j++)
            rc = add_output(&x, outs, x.in[x.nm + j].id, NULL, &err);
    }
    if (rc != 0) {
        status = err.code == CT_ELIMIT ? 413 : 500;
        cJSON_Delete(ans);
        ans = NULL;
        goto done;
    }
    cJSON_AddItemToObject(ans, "query", cJSON_Duplicate(body, 1));
done:
    if (ans)
        http_reply_cjson(r, 200, ans);
    else
        http_reply_error(r, http_status_of(err.code, status), err.msg, NULL);
    exp_run_free(&x);
    cJSON_Delete(body);
}

void api_query_exp_handle(struct http_req *r)
{
    size_t len = 0;
    const char *b = http_req_body(r, &len);
    cJSON *body = cJSON_ParseWithLength(b, len);
    struct exp_refusal x = {0};
    if (validate(body, &x) != CT_OK) {
        cJSON_Delete(body);
        http_reply_error(r, 400, x.err.msg, x.details[0] ? x.details : NULL);
        return;
    }
    struct ct_err err = {0};
    if (http_req_defer(r, exp_work, body, &err) != CT_OK) {
        cJSON_Delete(body);
        http_reply_error(r, 503, "The TSD is overloaded; retry later", err.msg);
    }
}
