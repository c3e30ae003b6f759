/* qspec.c - see qspec.h. Follows OpenTSDB 2.4's QueryRpc.parseQuery / parseMTypeSubQuery /
 * parseTsuidTypeSubQuery / parseRateOptions, Tags.parseWithMetricAndFilters, TSQuery and
 * TSSubQuery.validateAndSetQuery (messages and validation order).
 *
 * Invariants: (1) a spec that parsed returns start_ms < end_ms and nsubs >= 1, each sub with an
 * aggregator and a metric or at least one tsuid; (2) on error nothing is leaked and *out is
 * untouched. */
#include "query/qspec.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

void qspec_sub_clear(struct qspec_sub *sub)
{
    free(sub->metric);
    for (size_t i = 0; i < sub->ntsuids; i++)
        free(sub->tsuids[i]);
    free(sub->tsuids);
    for (size_t i = 0; i < sub->nfilters; i++)
        qfilter_free(sub->filters[i]);
    free(sub->filters);
    free(sub->percentiles);
    memset(sub, 0, sizeof(*sub));
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* Adds percentile p (kept ascending, as TSSubQuery sorts them); OpenTSDB's range check. */
static int add_percentile(struct qspec_sub *sub, double p, struct ct_err *err)
{
    if (!(p >= 0 && p <= 100)) { /* the parameter as Java's Float.toString writes it */
        float f = (float)p;
        if (f == truncf(f) && fabsf(f) < 1e7f)
            return ct_err_set(err, CT_EINVAL, "Invalid percentile parameters: %.1f", (double)f);
        char b[32];
        for (int prec = 1; prec <= 9; prec++) {
            snprintf(b, sizeof(b), "%.*g", prec, (double)f);
            if (strtof(b, NULL) == f)
                break;
        }
        return ct_err_set(err, CT_EINVAL, "Invalid percentile parameters: %s", b);
    }
    float *np = realloc(sub->percentiles, (sub->npercentiles + 1) * sizeof(*np));
    if (!np)
        return ct_err_set(err, CT_ENOMEM, "out of memory parsing a query");
    sub->percentiles = np;
    np[sub->npercentiles++] = (float)p;
    qsort(np, sub->npercentiles, sizeof(*np), cmp_float);
    return CT_OK;
}

/* "percentiles[50, 99.9]" (QueryRpc.parsePercentiles). */
static int parse_percentiles(const char *part, struct qspec_sub *sub, struct ct_err *err)
{
    const char *a = strchr(part, '['), *b = strchr(part, ']');
    if (!a || !b || b < a)
        return ct_err_set(err, CT_EINVAL, "Malformated percentile query paramater: %s", part);
    for (const char *p = a + 1; p < b;) {
        while (p < b && (*p == ' ' || *p == ','))
            p++;
        if (p >= b)
            break;
        char *end;
        double v = strtod(p, &end);
        if (end == p || end > b)
            return ct_err_set(err, CT_EINVAL, "Malformated percentile query paramater: %s", part);
        int rc = add_percentile(sub, v, err);
        if (rc != CT_OK)
            return rc;
        p = end;
    }
    return CT_OK;
}

void qspec_free(struct qspec *q)
{
    if (!q)
        return;
    for (size_t i = 0; i < q->nsubs; i++)
        qspec_sub_clear(&q->subs[i]);
    free(q->subs);
    free(q->start_text);
    free(q->end_text);
    free(q->timezone);
    qtime_tz_free(q->tz);
    free(q);
}

/* Adds a filter to sub (taking f, freed by the callee even on error). */
static int qspec_sub_add_filter(struct qspec_sub *sub, struct qfilter *f, struct ct_err *err)
{
    struct qfilter **nf = realloc(sub->filters, (sub->nfilters + 1) * sizeof(*nf));
    if (!nf) {
        qfilter_free(f);
        return ct_err_set(err, CT_ENOMEM, "out of memory adding a filter");
    }
    sub->filters = nf;
    sub->filters[sub->nfilters++] = f;
    return CT_OK;
}

/* Whether literal lists a and b ("x|y|z") hold the same set of values (TagVLiteralOrFilter keeps
 * its literals in a set), case-insensitively when ci. */
static bool literal_sets_equal(const char *a, const char *b, bool ci)
{
    for (int pass = 0; pass < 2; pass++) {
        const char *x = pass ? b : a, *y = pass ? a : b;
        for (const char *p = x;;) {
            const char *bar = strchr(p, '|');
            size_t l = bar ? (size_t)(bar - p) : strlen(p);
            bool found = false;
            for (const char *q = y; !found;) {
                const char *qb = strchr(q, '|');
                size_t ql = qb ? (size_t)(qb - q) : strlen(q);
                found = ql == l && (ci ? !strncasecmp(p, q, l) : !memcmp(p, q, l));
                if (!qb)
                    break;
                q = qb + 1;
            }
            if (!found)
                return false;
            if (!bar)
                break;
            p = bar + 1;
        }
    }
    return true;
}

/* TagVFilter.equals: same filter class, tag key, case sensitivity and expression (literal lists
 * as sets); group by does not count. `short_a`/`short_b`: the filter came from the m= / "tags"
 * shorthand, where "*" is a case-insensitive wildcard. */
static bool filters_equal(const struct qfilter *a, bool short_a, const struct qfilter *b,
                          bool short_b)
{
    enum qfilter_type ta = qfilter_type(a), tb = qfilter_type(b);
    if (strcmp(qfilter_tagk(a), qfilter_tagk(b)))
        return false;
    bool wa = ta == QFILTER_WILDCARD || ta == QFILTER_IWILDCARD;
    bool wb = tb == QFILTER_WILDCARD || tb == QFILTER_IWILDCARD;
    if (wa && wb) {
        bool cia = ta == QFILTER_IWILDCARD || (short_a && !strcmp(qfilter_expr(a), "*"));
        bool cib = tb == QFILTER_IWILDCARD || (short_b && !strcmp(qfilter_expr(b), "*"));
        return cia == cib && (cia ? !strcasecmp(qfilter_expr(a), qfilter_expr(b))
                                  : !strcmp(qfilter_expr(a), qfilter_expr(b)));
    }
    if (ta != tb)
        return false;
    switch (ta) {
    case QFILTER_NOT_KEY:
        return true;
    case QFILTER_LITERAL_OR:
    case QFILTER_NOT_LITERAL_OR:
        return literal_sets_equal(qfilter_expr(a), qfilter_expr(b), false);
    case QFILTER_ILITERAL_OR:
    case QFILTER_NOT_ILITERAL_OR:
        return literal_sets_equal(qfilter_expr(a), qfilter_expr(b), true);
    default:
        return !strcmp(qfilter_expr(a), qfilter_expr(b));
    }
}

/* TagVFilter.tagsToFilters's duplicate rule. sub->filters[0, ntags) came from the tags (group
 * by), the rest were given as filters (`explicit_short`: through m='s second braces). OpenTSDB
 * adds the filters first and skips a tag equal to one already listed, setting that one's group
 * by; kept here in ctsdb's order (tags first), the same set results: a tag equal to an earlier
 * tag is dropped, and a tag equal to a given filter drops the first such filter (each tag
 * absorbs one). Filters equal to each other are all kept, as OpenTSDB keeps them. */
static int dedup_tag_filters(struct qspec_sub *sub, size_t ntags, bool explicit_short,
                             struct ct_err *err)
{
    size_t n = sub->nfilters;
    if (ntags == 0)
        return CT_OK;
    bool *drop = calloc(n, sizeof(*drop));
    if (!drop)
        return ct_err_set(err, CT_ENOMEM, "out of memory parsing a query");
    for (size_t t = 0; t < ntags; t++) {
        for (size_t u = 0; u < t && !drop[t]; u++)
            if (!drop[u] && filters_equal(sub->filters[u], true, sub->filters[t], true))
                drop[t] = true;
        for (size_t e = ntags; e < n && !drop[t]; e++) {
            if (!drop[e] && filters_equal(sub->filters[t], true, sub->filters[e], explicit_short)) {
                drop[e] = true;
                break;
            }
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (drop[i])
            qfilter_free(sub->filters[i]);
        else
            sub->filters[k++] = sub->filters[i];
    }
    sub->nfilters = k;
    free(drop);
    return CT_OK;
}

static int add_tsuid(struct qspec_sub *sub, const char *s, size_t len, struct ct_err *err)
{
    char **nt = realloc(sub->tsuids, (sub->ntsuids + 1) * sizeof(*nt));
    if (!nt)
        return ct_err_set(err, CT_ENOMEM, "out of memory adding a tsuid");
    sub->tsuids = nt;
    if (!(sub->tsuids[sub->ntsuids] = strndup(s, len)))
        return ct_err_set(err, CT_ENOMEM, "out of memory adding a tsuid");
    sub->ntsuids++;
    return CT_OK;
}

/* "k=v,k2=v2" inside braces: each pair becomes a filter (group_by as given). A bad pair's error
 * names it as Tags.parseWithMetricAndFilters does ("When parsing tag 'k=v': ...", "filter" for
 * the second braces). */
static int parse_brace_filters(char *list, bool group_by, struct qspec_sub *sub, struct ct_err *err)
{
    const char *what = group_by ? "tag" : "filter";
    char *p = list;
    while (p) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = 0;
        char *eq = strchr(p, '=');
        if (!eq || eq == p || !eq[1] || strchr(eq + 1, '='))
            return ct_err_set(err, CT_EINVAL, "When parsing %s '%s': invalid tag: %s", what, p, p);
        *eq = 0;
        struct qfilter *f = NULL;
        int rc = qfilter_new_shorthand(p, eq + 1, group_by, &f, err);
        if (rc == CT_EINVAL)
            ct_err_prefix(err, "When parsing %s '%s=%s'", what, p, eq + 1);
        if (rc != CT_OK)
            return rc;
        if ((rc = qspec_sub_add_filter(sub, f, err)) != CT_OK)
            return rc;
        p = comma ? comma + 1 : NULL;
    }
    return CT_OK;
}

/* Tags.parseWithMetricAndFilters: "metric", "metric{...}", "metric{...}{...}". */
static int parse_metric_filters(const char *spec, struct qspec_sub *sub, struct ct_err *err)
{
    if (!*spec)
        return ct_err_set(err, CT_EINVAL, "Metric cannot be null or empty");
    char *s = strdup(spec);
    if (!s)
        return ct_err_set(err, CT_ENOMEM, "out of memory parsing a metric");
    int rc = CT_OK;
    char *curly = strchr(s, '{');
    if (!curly) {
        sub->metric = s;
        return CT_OK;
    }
    size_t len = strlen(s);
    if (s[len - 1] != '}') {
        rc = ct_err_set(err, CT_EINVAL, "Missing '}' at the end of: %s", spec);
        goto out;
    }
    char *close = strchr(curly, '}');
    *curly = 0;
    if (!(sub->metric = strdup(s))) {
        rc = ct_err_set(err, CT_ENOMEM, "out of memory parsing a metric");
        goto out;
    }
    *close = 0;
    if (close > curly + 1 && (rc = parse_brace_filters(curly + 1, true, sub, err)) != CT_OK)
        goto out;
    size_t ntags = sub->nfilters;
    if (close != s + len - 1) {
        char *second = close + 1;
        if (*second != '{') {
            rc = ct_err_set(err, CT_EINVAL, "Missing '{' at the start of the filters in: %s", spec);
            goto out;
        }
        s[len - 1] = 0;
        if (strchr(second + 1, '}') || strchr(second + 1, '{')) {
            rc = ct_err_set(err, CT_EINVAL, "Invalid filter braces in: %s", spec);
            goto out;
        }
        if (second[1] && (rc = parse_brace_filters(second + 1, false, sub, err)) != CT_OK)
            goto out;
    }
    rc = dedup_tag_filters(sub, ntags, true, err);
out:
    free(s);
    return rc;
}

static int parse_long(const char *s, int64_t *out)
{
    if (!*s)
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end || errno)
        return -1;
    *out = v;
    return 0;
}

/* QueryRpc.parseRateOptions: "rate{counter[,max[,reset]]}". */
static int parse_rate_options(const char *spec, struct qspec_sub *sub, struct ct_err *err)
{
    qagg_rate_init(&sub->rate_opts);
    const char *open = strchr(spec, '{');
    if (!open)
        return CT_OK;
    size_t len = strlen(spec);
    if (len < 6 || spec[len - 1] != '}')
        return ct_err_set(err, CT_EINVAL, "Invalid rate options specification: %s", spec);
    char inner[256];
    size_t il = len - 6;
    if (il >= sizeof(inner))
        return ct_err_set(err, CT_EINVAL, "Invalid rate options specification: %s", spec);
    memcpy(inner, spec + 5, il);
    inner[il] = 0;
    char *parts[4] = {0};
    int np = 0;
    char *p = inner;
    for (;;) {
        if (np < 4)
            parts[np] = p;
        np++;
        char *c = strchr(p, ',');
        if (!c)
            break;
        *c = 0;
        p = c + 1;
    }
    if (np > 3)
        return ct_err_set(err, CT_EINVAL,
                          "Incorrect number of values in rate options specification, must be "
                          "counter[,counter max value,reset value], recieved: %d parts",
                          np);
    size_t l0 = strlen(parts[0]);
    sub->rate_opts.counter = l0 >= 7 && !strcmp(parts[0] + l0 - 7, "counter");
    sub->rate_opts.drop_resets = !strcmp(parts[0], "dropcounter");
    if (np >= 2 && *parts[1] && parse_long(parts[1], &sub->rate_opts.counter_max) != 0)
        return ct_err_set(err, CT_EINVAL, "Max value of counter was not a number, received '%s'",
                          parts[1]);
    if (np >= 3 && *parts[2] && parse_long(parts[2], &sub->rate_opts.reset_value) != 0)
        return ct_err_set(err, CT_EINVAL, "Reset value of counter was not a number, received '%s'",
                          parts[2]);
    sub->rate_options_set = true;
    return CT_OK;
}

/* Splits on ':' into at most 8 parts in buf; returns the count (may exceed 8). */
static int split_colons(char *buf, char **parts)
{
    int n = 0;
    char *p = buf;
    for (;;) {
        if (n < 8)
            parts[n] = p;
        n++;
        char *c = strchr(p, ':');
        if (!c)
            break;
        *c = 0;
        p = c + 1;
    }
    return n;
}

static int parse_colon_query(const char *q, const char *param, bool tsuid_form,
                             struct qspec_sub *sub, struct ct_err *err)
{
    if (!q || !*q)
        return ct_err_set(err, CT_EINVAL, "The query string was empty");
    char *buf = strdup(q);
    if (!buf)
        return ct_err_set(err, CT_ENOMEM, "out of memory parsing a query");
    char *parts[8];
    int n = split_colons(buf, parts), rc = CT_OK;
    if (n < 2 || n > 5) {
        rc = ct_err_set(err, CT_EINVAL, "Invalid parameter %s=%s (%s :-separated parts)", param, q,
                        n < 2 ? "not enough" : "too many");
        goto out;
    }
    sub->agg = qagg_lookup(parts[0]);
    if (!sub->agg) {
        rc = ct_err_set(err, CT_EINVAL, "No such aggregation function: %s", parts[0]);
        goto out;
    }
    if (tsuid_form) {
        char *p = parts[n - 1];
        while (p && *p) {
            char *c = strchr(p, ',');
            size_t l = c ? (size_t)(c - p) : strlen(p);
            if (l && (rc = add_tsuid(sub, p, l, err)) != CT_OK)
                goto out;
            p = c ? c + 1 : NULL;
        }
    } else if ((rc = parse_metric_filters(parts[n - 1], sub, err)) != CT_OK) {
        goto out;
    }
    for (int x = 1; x < n - 1; x++) {
        char *part = parts[x];
        if (!strncasecmp(part, "rate", 4)) {
            sub->rate = true;
            if ((rc = parse_rate_options(part, sub, err)) != CT_OK)
                goto out;
        } else if (isdigit((unsigned char)part[0])) {
            if ((rc = qagg_ds_parse(part, &sub->ds, err)) != CT_OK)
                goto out;
        } else if (!strncasecmp(part, "explicit_tags", 13)) {
            sub->explicit_tags = true;
        } else if (qspec_rollup_parse(part) >= 0) {
            sub->rollup_usage = (enum qspec_rollup)qspec_rollup_parse(part);
        } else if (!strncasecmp(part, "percentiles", 11)) {
            if ((rc = parse_percentiles(part, sub, err)) != CT_OK)
                goto out;
        } else if (!strncasecmp(part, "show-histogram-buckets", 22)) {
            sub->show_histogram_buckets = true;
        }
        /* pre-agg, other rollup_* parts and unknown parts are accepted and ignored, as OpenTSDB
         * does for queries without rollups */
    }
out:
    free(buf);
    return rc;
}

int qspec_rollup_parse(const char *s)
{
    static const char *const names[] = {"rollup_fallback", "rollup_fallback_raw",
                                        "rollup_nofallback", "rollup_raw"};
    for (int i = 0; i < 4; i++)
        if (!strcasecmp(s, names[i]))
            return i;
    return -1;
}

int qspec_parse_m(const char *m, struct qspec_sub *sub, struct ct_err *err)
{
    qagg_rate_init(&sub->rate_opts);
    return parse_colon_query(m, "m", false, sub, err);
}

int qspec_parse_tsuid_param(const char *t, struct qspec_sub *sub, struct ct_err *err)
{
    qagg_rate_init(&sub->rate_opts);
    return parse_colon_query(t, "tsuid", true, sub, err);
}

static struct qspec *spec_new(void)
{
    return calloc(1, sizeof(struct qspec));
}

static int add_sub(struct qspec *q, struct qspec_sub **out, struct ct_err *err)
{
    struct qspec_sub *ns = realloc(q->subs, (q->nsubs + 1) * sizeof(*ns));
    if (!ns)
        return ct_err_set(err, CT_ENOMEM, "out of memory adding a sub query");
    q->subs = ns;
    memset(&q->subs[q->nsubs], 0, sizeof(*ns));
    qagg_rate_init(&q->subs[q->nsubs].rate_opts);
    *out = &q->subs[q->nsubs++];
    return CT_OK;
}

/* TSQuery.validateAndSetQuery: times, then sub-queries. */
static int validate(struct qspec *q, int64_t now_ms, struct ct_err *err)
{
    int rc;
    if (!q->tz && (rc = qtime_tz_load(q->timezone, &q->tz, err)) != CT_OK)
        return rc;
    if (!q->start_text || !*q->start_text)
        return ct_err_set(err, CT_EINVAL, "Missing start time");
    if ((rc = qtime_parse(q->start_text, q->tz, now_ms, &q->start_ms, err)) != CT_OK)
        return rc;
    if (q->end_text && *q->end_text) {
        if ((rc = qtime_parse(q->end_text, q->tz, now_ms, &q->end_ms, err)) != CT_OK)
            return rc;
    } else {
        q->end_ms = now_ms;
    }
    if (q->end_ms <= q->start_ms)
        return ct_err_set(err, CT_EINVAL,
                          "End time [%lld] must be greater than the start time [%lld]",
                          (long long)q->end_ms, (long long)q->start_ms);
    if (q->nsubs == 0)
        return ct_err_set(err, CT_EINVAL, "Missing queries");
    for (size_t i = 0; i < q->nsubs; i++) {
        struct qspec_sub *s = &q->subs[i];
        s->index = (int)i;
        if (!s->agg)
            return ct_err_set(err, CT_EINVAL, "Missing the aggregation function");
        if ((!s->metric || !*s->metric) && s->ntsuids == 0)
            return ct_err_set(err, CT_EINVAL, "Missing the metric or tsuids, provide at least one");
        if (s->ds.enabled && q->use_calendar)
            s->ds.calendar = !s->ds.all;
        /* TSSubQuery.checkHistogramQuery: histograms are only summed (or not aggregated) */
        if (qspec_sub_is_histogram(s) && !qagg_is_none(s->agg) &&
            strcmp(qagg_name(s->agg), "sum") != 0)
            return ct_err_set(err, CT_EINVAL,
                              "Only NONE or SUM aggregation function supported for histogram "
                              "query");
        if (qspec_sub_is_histogram(s) && s->ds.enabled && s->ds.fn &&
            strcmp(qagg_name(s->ds.fn), "sum") != 0)
            return ct_err_set(err, CT_EINVAL,
                              "Only SUM downsampling aggregation supported for histogram query");
    }
    return CT_OK;
}

/* Flags given as presence-only URL parameters. */
bool qspec_param_flag(qspec_param_fn get, void *arg, const char *name)
{
    const char *v = get(arg, name, 0);
    return v && strcasecmp(v, "false") != 0;
}

static int dup_param(qspec_param_fn get, void *arg, const char *name, char **out,
                     struct ct_err *err)
{
    const char *v = get(arg, name, 0);
    if (!v)
        return CT_OK;
    if (!(*out = strdup(v)))
        return ct_err_set(err, CT_ENOMEM, "out of memory parsing parameters");
    return CT_OK;
}

int qspec_parse_params(qspec_param_fn get, void *arg, int64_t now_ms, struct qspec **out,
                       struct ct_err *err)
{
    struct qspec *q = spec_new();
    if (!q)
        return ct_err_set(err, CT_ENOMEM, "out of memory parsing a query");
    int rc;
    const char *start = get(arg, "start", 0);
    if (!start || !*start) {
        rc = ct_err_set(err, CT_EINVAL, "Missing parameter <code>start</code>");
        goto fail;
    }
    if ((rc = dup_param(get, arg, "start", &q->start_text, err)) != CT_OK ||
        (rc = dup_param(get, arg, "end", &q->end_text, err)) != CT_OK ||
        (rc = dup_param(get, arg, "timezone", &q->timezone, err)) != CT_OK)
        goto fail;
    q->padding = qspec_param_flag(get, arg, "padding");
    q->no_annotations = qspec_param_flag(get, arg, "no_annotations");
    q->global_annotations = qspec_param_flag(get, arg, "global_annotations");
    q->show_tsuids = qspec_param_flag(get, arg, "show_tsuids");
    q->ms_resolution = qspec_param_flag(get, arg, "ms");
    q->show_query = qspec_param_flag(get, arg, "show_query");
    q->show_stats = qspec_param_flag(get, arg, "show_stats");
    q->show_summary = qspec_param_flag(get, arg, "show_summary");
    q->use_calendar = qspec_param_flag(get, arg, "use_calendar");
    q->arrays = qspec_param_flag(get, arg, "arrays");
    const char *v;
    static const char *const kinds[2] = {"tsuid", "m"};
    for (int kind = 0; kind < 2; kind++) {
        for (size_t i = 0; (v = get(arg, kinds[kind], i)) != NULL; i++) {
            /* identical sub queries are collapsed into one, as OpenTSDB does */
            bool dup = false;
            for (size_t k = 0; k < i && !dup; k++)
                dup = !strcmp(get(arg, kinds[kind], k), v);
            if (dup)
                continue;
            struct qspec_sub *s;
            if ((rc = add_sub(q, &s, err)) != CT_OK ||
                (rc = parse_colon_query(v, kinds[kind], kind == 0, s, err)) != CT_OK)
                goto fail;
        }
    }
    if (q->nsubs == 0) {
        rc = ct_err_set(err, CT_EINVAL, "Missing sub queries");
        goto fail;
    }
    if ((rc = validate(q, now_ms, err)) != CT_OK)
        goto fail;
    *out = q;
    return CT_OK;
fail:
    qspec_free(q);
    return rc;
}

/* ---- JSON ------------------------------------------------------------------------------ */

static bool json_bool(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsTrue(v))
        return true;
    return cJSON_IsString(v) && !strcasecmp(v->valuestring, "true");
}

/* A string or number field as text (Jackson coerces numbers into String fields). NULL if
 * absent or null. */
static int json_text(const cJSON *o, const char *key, char **out, struct ct_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = NULL;
    if (!v || cJSON_IsNull(v))
        return CT_OK;
    char num[64];
    const char *s;
    if (cJSON_IsString(v)) {
        s = v->valuestring;
    } else if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d == floor(d) && fabs(d) < 9e18)
            snprintf(num, sizeof(num), "%lld", (long long)d);
        else
            snprintf(num, sizeof(num), "%.17g", d);
        s = num;
    } else if (cJSON_IsBool(v)) {
        s = cJSON_IsTrue(v) ? "true" : "false";
    } else {
        return ct_err_set(err, CT_EINVAL,
                          "Unable to parse the given JSON: field '%s' must be a "
                          "string",
                          key);
    }
    if (!(*out = strdup(s)))
        return ct_err_set(err, CT_ENOMEM, "out of memory parsing JSON");
    return CT_OK;
}

static int json_long(const cJSON *o, const char *key, int64_t *out, struct ct_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v))
        return CT_OK;
    if (cJSON_IsNumber(v)) {
        if (v->valuedouble >= 9.2e18)
            *out = INT64_MAX;
        else
            *out = (int64_t)v->valuedouble;
        /* cJSON keeps doubles: recover exact big integers from the text when possible */
        return CT_OK;
    }
    if (cJSON_IsString(v) && parse_long(v->valuestring, out) == 0)
        return CT_OK;
    return ct_err_set(err, CT_EINVAL, "Unable to parse the given JSON: '%s' is not a number", key);
}

/* OpenTSDB 2.3's NumericFillPolicy {"policy":"scalar","value":1.5} with its validate() rules: a
 * missing policy is inferred from the value (0 -> zero, NaN -> nan, else scalar); none, nan and
 * null take no value but NaN (or 0); zero takes 0; scalar any number (default 0). */
static int parse_numeric_fill_policy(const cJSON *o, struct qagg_ds *ds, struct ct_err *err)
{
    if (!cJSON_IsObject(o))
        return ct_err_set(err, CT_EINVAL,
                          "Unable to parse the given JSON: 'fillPolicy' must be an object");
    const cJSON *jp = cJSON_GetObjectItemCaseSensitive(o, "policy");
    const cJSON *jv = cJSON_GetObjectItemCaseSensitive(o, "value");
    double v = 0.0;
    if (cJSON_IsNumber(jv)) {
        v = jv->valuedouble;
    } else if (cJSON_IsString(jv)) {
        if (!strcasecmp(jv->valuestring, "NaN"))
            v = NAN;
        else if (qagg_fill_scalar_parse(jv->valuestring, &v, err) != CT_OK)
            return CT_EINVAL;
    } else if (jv && !cJSON_IsNull(jv)) {
        return ct_err_set(err, CT_EINVAL,
                          "Unable to parse the given JSON: the fill policy 'value' must be a "
                          "number");
    }
    enum qagg_fill f;
    if (!jp || cJSON_IsNull(jp)) {
        f = v == 0.0 ? QAGG_FILL_ZERO : isnan(v) ? QAGG_FILL_NAN : QAGG_FILL_SCALAR;
    } else if (!cJSON_IsString(jp)) {
        return ct_err_set(err, CT_EINVAL,
                          "Unable to parse the given JSON: the fill 'policy' must be a string");
    } else if (qagg_fill_parse(jp->valuestring, &f, err) != CT_OK) {
        return CT_EINVAL;
    }
    switch (f) {
    case QAGG_FILL_NONE:
    case QAGG_FILL_NAN:
        if (v != 0.0 && !isnan(v))
            return ct_err_set(err, CT_EINVAL, "The value for NONE and NAN must be NaN");
        break;
    case QAGG_FILL_NULL:
        if (v != 0.0 && !isnan(v))
            return ct_err_set(err, CT_EINVAL, "The value for NULL must be 0");
        break;
    case QAGG_FILL_ZERO:
        if (v != 0.0)
            return ct_err_set(err, CT_EINVAL, "The value for ZERO must be 0");
        break;
    case QAGG_FILL_SCALAR:
        if (!isfinite(v))
            return ct_err_set(err, CT_EINVAL, "Invalid scalar fill value: must be a finite number");
        break;
    }
    ds->fill = f;
    ds->scalar = f == QAGG_FILL_SCALAR ? v : 0.0;
    /* the specifier text (echoed by showQuery) states the policy that applies */
    char *dash = strchr(ds->text, '-');
    dash = dash ? strchr(dash + 1, '-') : NULL;
    if (dash)
        *dash = 0;
    size_t l = strlen(ds->text);
    if (f == QAGG_FILL_SCALAR) {
        char num[32];
        for (int prec = 1; prec <= 17; prec++) { /* the shortest text that reads back as v */
            snprintf(num, sizeof(num), "%.*g", prec, v);
            if (strtod(num, NULL) == v)
                break;
        }
        snprintf(ds->text + l, sizeof(ds->text) - l, "-scalar(%s)", num);
    } else if (f != QAGG_FILL_NONE)
        snprintf(ds->text + l, sizeof(ds->text) - l, "-%s", qagg_fill_name(f));
    return CT_OK;
}

/* The downsampler object of OpenTSDB 2.3's query pojo: {"interval":"1m","aggregator":"avg",
 * "fillPolicy":{"policy":"scalar","value":0}} with Downsampler.validate()'s messages. */
static int parse_json_downsampler(const cJSON *o, struct qagg_ds *ds, struct ct_err *err)
{
    const cJSON *ji = cJSON_GetObjectItemCaseSensitive(o, "interval");
    const cJSON *ja = cJSON_GetObjectItemCaseSensitive(o, "aggregator");
    if (!cJSON_IsString(ji) || !*ji->valuestring)
        return ct_err_set(err, CT_EINVAL, "Missing or empty interval");
    if (!cJSON_IsString(ja) || !*ja->valuestring)
        return ct_err_set(err, CT_EINVAL, "Missing or empty aggregator");
    char spec[sizeof(ds->text)];
    int n = snprintf(spec, sizeof(spec), "%s-%s", ji->valuestring, ja->valuestring);
    if (n < 0 || (size_t)n >= sizeof(spec) || strchr(ji->valuestring, '-') ||
        strchr(ja->valuestring, '-'))
        return ct_err_set(err, CT_EINVAL, "Invalid downsampler: interval '%s', aggregator '%s'",
                          ji->valuestring, ja->valuestring);
    int rc = qagg_ds_parse(spec, ds, err);
    if (rc != CT_OK)
        return rc;
    const cJSON *jfp = cJSON_GetObjectItemCaseSensitive(o, "fillPolicy");
    if (jfp && !cJSON_IsNull(jfp))
        return parse_numeric_fill_policy(jfp, ds, err);
    return CT_OK;
}

static int parse_json_sub(const cJSON *jq, struct qspec_sub *s, struct ct_err *err)
{
    int rc;
    if (!cJSON_IsObject(jq))
        return ct_err_set(err, CT_EINVAL,
                          "Unable to parse the given JSON: a query must be an "
                          "object");
    char *agg = NULL;
    if ((rc = json_text(jq, "aggregator", &agg, err)) != CT_OK)
        return rc;
    if (!agg || !*agg) {
        free(agg);
        return ct_err_set(err, CT_EINVAL, "Missing the aggregation function");
    }
    s->agg = qagg_lookup(agg);
    if (!s->agg) {
        rc = ct_err_set(err, CT_EINVAL, "No such aggregation function: %s", agg);
        free(agg);
        return rc;
    }
    free(agg);
    if ((rc = json_text(jq, "metric", &s->metric, err)) != CT_OK)
        return rc;
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(jq, "tsuids");
    if (cJSON_IsArray(ts)) {
        const cJSON *t;
        cJSON_ArrayForEach(t, ts)
        {
            if (cJSON_IsString(t) && *t->valuestring &&
                (rc = add_tsuid(s, t->valuestring, strlen(t->valuestring), err)) != CT_OK)
                return rc;
        }
    }
    if ((!s->metric || !*s->metric) && s->ntsuids == 0)
        return ct_err_set(err, CT_EINVAL, "Missing the metric or tsuids, provide at least one");
    /* the legacy tags map: converted like m='s first braces (group by) */
    const cJSON *tags = cJSON_GetObjectItemCaseSensitive(jq, "tags");
    if (cJSON_IsObject(tags)) {
        const cJSON *t;
        cJSON_ArrayForEach(t, tags)
        {
            if (!cJSON_IsString(t))
                return ct_err_set(err, CT_EINVAL,
                                  "Unable to parse the given JSON: tag values "
                                  "must be strings");
            struct qfilter *f = NULL;
            if ((rc = qfilter_new_shorthand(t->string, t->valuestring, true, &f, err)) != CT_OK ||
                (rc = qspec_sub_add_filter(s, f, err)) != CT_OK)
                return rc;
        }
    }
    size_t ntags = s->nfilters;
    const cJSON *filters = cJSON_GetObjectItemCaseSensitive(jq, "filters");
    if (cJSON_IsArray(filters)) {
        const cJSON *jf;
        cJSON_ArrayForEach(jf, filters)
        {
            char *type = NULL, *tagk = NULL, *expr = NULL;
            struct qfilter *f = NULL;
            if ((rc = json_text(jf, "type", &type, err)) == CT_OK &&
                (rc = json_text(jf, "tagk", &tagk, err)) == CT_OK &&
                (rc = json_text(jf, "filter", &expr, err)) == CT_OK) {
                if (!tagk || !*tagk)
                    rc = ct_err_set(err, CT_EINVAL, "Missing tagk in filter");
                else
                    rc = qfilter_new(type, tagk, expr, json_bool(jf, "groupBy"), &f, err);
            }
            free(type);
            free(tagk);
            free(expr);
            if (rc != CT_OK || (rc = qspec_sub_add_filter(s, f, err)) != CT_OK)
                return rc;
        }
    }
    if ((rc = dedup_tag_filters(s, ntags, false, err)) != CT_OK)
        return rc;
    const cJSON *jds = cJSON_GetObjectItemCaseSensitive(jq, "downsample");
    if (cJSON_IsObject(jds)) {
        rc = parse_json_downsampler(jds, &s->ds, err);
    } else {
        char *ds = NULL;
        if ((rc = json_text(jq, "downsample", &ds, err)) != CT_OK)
            return rc;
        if (ds && *ds)
            rc = qagg_ds_parse(ds, &s->ds, err);
        free(ds);
    }
    if (rc != CT_OK)
        return rc;
    /* "fillPolicy" beside a string downsample overrides its policy (NumericFillPolicy, as the
     * metrics of OpenTSDB's /api/query/exp carry it); without a downsampler there is nothing to
     * fill and it is ignored */
    const cJSON *jfp = cJSON_GetObjectItemCaseSensitive(jq, "fillPolicy");
    if (jfp && !cJSON_IsNull(jfp) && s->ds.enabled &&
        (rc = parse_numeric_fill_policy(jfp, &s->ds, err)) != CT_OK)
        return rc;
    char *ru = NULL;
    if ((rc = json_text(jq, "rollupUsage", &ru, err)) != CT_OK)
        return rc;
    if (ru && *ru) {
        int u = qspec_rollup_parse(ru);
        if (u < 0)
            rc = ct_err_set(err, CT_EINVAL, "Unrecognized rollup usage: %s", ru);
        else
            s->rollup_usage = (enum qspec_rollup)u;
    }
    free(ru);
    if (rc != CT_OK)
        return rc;
    s->rate = json_bool(jq, "rate");
    s->explicit_tags = json_bool(jq, "explicitTags");
    s->show_histogram_buckets = json_bool(jq, "showHistogramBuckets");
    const cJSON *pcts = cJSON_GetObjectItemCaseSensitive(jq, "percentiles"), *pc;
    if (!cJSON_IsArray(pcts))
        pcts = NULL;
    cJSON_ArrayForEach(pc, pcts)
    {
        if (!cJSON_IsNumber(pc))
            return ct_err_set(err, CT_EINVAL, "Invalid percentile parameters: not a number");
        if ((rc = add_percentile(s, pc->valuedouble, err)) != CT_OK)
            return rc;
    }
    const cJSON *ro = cJSON_GetObjectItemCaseSensitive(jq, "rateOptions");
    if (cJSON_IsObject(ro)) {
        s->rate_options_set = true;
        s->rate_opts.counter = json_bool(ro, "counter");
        s->rate_opts.drop_resets = json_bool(ro, "dropResets");
        if ((rc = json_long(ro, "counterMax", &s->rate_opts.counter_max, err)) != CT_OK ||
            (rc = json_long(ro, "resetValue", &s->rate_opts.reset_value, err)) != CT_OK)
            return rc;
    }
    return CT_OK;
}

int qspec_parse_json(const char *body, size_t len, int64_t now_ms, struct qspec **out,
                     struct ct_err *err)
{
    if (!body || len == 0)
        return ct_err_set(err, CT_EINVAL, "Missing message content");
    cJSON *root = cJSON_ParseWithLength(body, len);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return ct_err_set(err, CT_EINVAL, "Unable to parse the given JSON");
    }
    struct qspec *q = spec_new();
    int rc;
    if (!q) {
        cJSON_Delete(root);
        return ct_err_set(err, CT_ENOMEM, "out of memory parsing a query");
    }
    if ((rc = json_text(root, "start", &q->start_text, err)) != CT_OK ||
        (rc = json_text(root, "end", &q->end_text, err)) != CT_OK ||
        (rc = json_text(root, "timezone", &q->timezone, err)) != CT_OK)
        goto fail;
    q->use_calendar = json_bool(root, "useCalendar");
    q->ms_resolution = json_bool(root, "msResolution");
    q->show_tsuids = json_bool(root, "showTSUIDs");
    q->show_query = json_bool(root, "showQuery");
    q->show_stats = json_bool(root, "showStats");
    q->show_summary = json_bool(root, "showSummary");
    q->no_annotations = json_bool(root, "noAnnotations");
    q->global_annotations = json_bool(root, "globalAnnotations");
    q->padding = json_bool(root, "padding");
    q->delete_data = json_bool(root, "delete");
    q->override_bytes = json_bool(root, "overrideByteLimit");
    q->override_dps = json_bool(root, "overrideDataPointLimit");
    q->arrays = json_bool(root, "arrays");
    /* times are validated before the sub queries, as TSQuery does */
    if ((rc = qtime_tz_load(q->timezone, &q->tz, err)) != CT_OK)
        goto fail;
    if (!q->start_text || !*q->start_text) {
        rc = ct_err_set(err, CT_EINVAL, "Missing start time");
        goto fail;
    }
    const cJSON *qs = cJSON_GetObjectItemCaseSensitive(root, "queries");
    if (cJSON_IsArray(qs)) {
        const cJSON *jq;
        cJSON_ArrayForEach(jq, qs)
        {
            struct qspec_sub *s;
            if ((rc = add_sub(q, &s, err)) != CT_OK)
                goto fail;
        }
        /* parse after the times validate (below) so that time errors come first */
    }
    {
        /* validate times with no subs parsed yet, then parse subs */
        size_t nsubs = q->nsubs;
        q->nsubs = nsubs ? nsubs : 0;
        int64_t s_ms, e_ms;
        if ((rc = qtime_parse(q->start_text, q->tz, now_ms, &s_ms, err)) != CT_OK)
            goto fail;
        if (q->end_text && *q->end_text) {
            if ((rc = qtime_parse(q->end_text, q->tz, now_ms, &e_ms, err)) != CT_OK)
                goto fail;
        } else {
            e_ms = now_ms;
        }
        if (e_ms <= s_ms) {
            rc = ct_err_set(err, CT_EINVAL,
                            "End time [%lld] must be greater than the start time [%lld]",
                            (long long)e_ms, (long long)s_ms);
            goto fail;
        }
        if (nsubs == 0) {
            rc = ct_err_set(err, CT_EINVAL, "Missing queries");
            goto fail;
        }
        size_t i = 0;
        const cJSON *jq;
        cJSON_ArrayForEach(jq, qs)
        {
            if ((rc = parse_json_sub(jq, &q->subs[i++], err)) != CT_OK)
                goto fail;
        }
    }
    if ((rc = validate(q, now_ms, err)) != CT_OK)
        goto fail;
    cJSON_Delete(root);
    *out = q;
    return CT_OK;
fail:
    cJSON_Delete(root);
    qspec_free(q);
    return rc;
}
