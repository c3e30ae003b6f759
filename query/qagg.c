/* qagg.c - see qagg.h. Semantics follow OpenTSDB 2.4: Aggregators (with NaN skipped by the
 * double forms), Downsampler / FillingDownsampler, RateSpan, AggregationIterator and
 * TsdbQuery's scan window.
 *
 * Invariants: (1) the aggregator table is static const and never changes; (2) integer arithmetic
 * wraps as Java's long does (done in uint64_t, never signed overflow); (3) the group state machine
 * keeps, per series, a "current" slot (ts 0 = not contributing) and a "next" slot (ts QAGG_END =
 * exhausted), exactly the two halves of AggregationIterator's arrays. */
#include "query/qagg.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum agg_kind {
    K_SUM,
    K_MIN,
    K_MAX,
    K_AVG,
    K_DEV,
    K_COUNT,
    K_MEDIAN,
    K_MULT,
    K_DIFF,
    K_FIRST,
    K_LAST,
    K_SQSUM,
    K_NONE,
    K_PCT,
};

enum pct_est {
    EST_LEGACY,
    EST_R3,
    EST_R7,
};

struct qagg {
    const char *name;
    enum agg_kind kind;
    enum qagg_interp interp;
    double pct; /* percentile in (0, 100] */
    enum pct_est est;
};

static const struct qagg aggs[] = {
    {"sum", K_SUM, QAGG_LERP, 0, EST_LEGACY},    {"min", K_MIN, QAGG_LERP, 0, EST_LEGACY},
    {"max", K_MAX, QAGG_LERP, 0, EST_LEGACY},    {"avg", K_AVG, QAGG_LERP, 0, EST_LEGACY},
    {"dev", K_DEV, QAGG_LERP, 0, EST_LEGACY},    {"median", K_MEDIAN, QAGG_LERP, 0, EST_LEGACY},
    {"mult", K_MULT, QAGG_LERP, 0, EST_LEGACY},  {"diff", K_DIFF, QAGG_LERP, 0, EST_LEGACY},
    {"count", K_COUNT, QAGG_ZIM, 0, EST_LEGACY}, {"zimsum", K_SUM, QAGG_ZIM, 0, EST_LEGACY},
    {"mimmin", K_MIN, QAGG_MAX, 0, EST_LEGACY},  {"mimmax", K_MAX, QAGG_MIN, 0, EST_LEGACY},
    {"first", K_FIRST, QAGG_ZIM, 0, EST_LEGACY}, {"last", K_LAST, QAGG_ZIM, 0, EST_LEGACY},
    {"pfsum", K_SUM, QAGG_PREV, 0, EST_LEGACY},  {"squareSum", K_SQSUM, QAGG_ZIM, 0, EST_LEGACY},
    {"none", K_NONE, QAGG_ZIM, 0, EST_LEGACY},   {"p999", K_PCT, QAGG_LERP, 99.9, EST_LEGACY},
    {"p99", K_PCT, QAGG_LERP, 99, EST_LEGACY},   {"p95", K_PCT, QAGG_LERP, 95, EST_LEGACY},
    {"p90", K_PCT, QAGG_LERP, 90, EST_LEGACY},   {"p75", K_PCT, QAGG_LERP, 75, EST_LEGACY},
    {"p50", K_PCT, QAGG_LERP, 50, EST_LEGACY},   {"ep999r3", K_PCT, QAGG_LERP, 99.9, EST_R3},
    {"ep99r3", K_PCT, QAGG_LERP, 99, EST_R3},    {"ep95r3", K_PCT, QAGG_LERP, 95, EST_R3},
    {"ep90r3", K_PCT, QAGG_LERP, 90, EST_R3},    {"ep75r3", K_PCT, QAGG_LERP, 75, EST_R3},
    {"ep50r3", K_PCT, QAGG_LERP, 50, EST_R3},    {"ep999r7", K_PCT, QAGG_LERP, 99.9, EST_R7},
    {"ep99r7", K_PCT, QAGG_LERP, 99, EST_R7},    {"ep95r7", K_PCT, QAGG_LERP, 95, EST_R7},
    {"ep90r7", K_PCT, QAGG_LERP, 90, EST_R7},    {"ep75r7", K_PCT, QAGG_LERP, 75, EST_R7},
    {"ep50r7", K_PCT, QAGG_LERP, 50, EST_R7},
};
#define NAGGS (sizeof(aggs) / sizeof(aggs[0]))

const struct qagg *qagg_lookup(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < NAGGS; i++)
        if (!strcmp(aggs[i].name, name))
            return &aggs[i];
    return NULL;
}

size_t qagg_count(void)
{
    return NAGGS;
}

const struct qagg *qagg_at(size_t i)
{
    return i < NAGGS ? &aggs[i] : NULL;
}

const char *qagg_name(const struct qagg *a)
{
    return a->name;
}

bool qagg_is_none(const struct qagg *a)
{
    return a->kind == K_NONE;
}

/* ---- value aggregation -------------------------------------------------------------- */

static int64_t wadd(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

static int64_t wsub(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a - (uint64_t)b);
}

static int64_t wmul(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a * (uint64_t)b);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

/* Apache Commons Math Percentile over sorted values s[0..n) (n >= 1). */
static double percentile_sorted(const double *s, size_t n, double pct, enum pct_est est)
{
    double p = pct / 100.0, pos;
    if (n == 1)
        return s[0];
    switch (est) {
    case EST_R3:
        pos = p <= 0.5 / (double)n ? 0 : rint((double)n * p);
        break;
    case EST_R7:
        pos = p == 1.0 ? (double)n : 1 + ((double)n - 1) * p;
        break;
    default:
        pos = p == 1.0 ? (double)n : p * ((double)n + 1);
        break;
    }
    double fpos = floor(pos), dif = pos - fpos;
    if (pos < 1)
        return s[0];
    if (pos >= (double)n)
        return s[n - 1];
    size_t ip = (size_t)fpos;
    double lower = s[ip - 1], upper = s[ip];
    return lower + dif * (upper - lower);
}

int64_t qagg_run_long(const struct qagg *a, const int64_t *v, size_t n, double *scratch)
{
    int64_t r = 0;
    switch (a->kind) {
    case K_SUM:
        for (size_t i = 0; i < n; i++)
            r = wadd(r, v[i]);
        return r;
    case K_SQSUM:
        for (size_t i = 0; i < n; i++)
            r = wadd(r, wmul(v[i], v[i]));
        return r;
    case K_MIN:
        r = v[0];
        for (size_t i = 1; i < n; i++)
            if (v[i] < r)
                r = v[i];
        return r;
    case K_MAX:
        r = v[0];
        for (size_t i = 1; i < n; i++)
            if (v[i] > r)
                r = v[i];
        return r;
    case K_AVG:
        for (size_t i = 0; i < n; i++)
            r = wadd(r, v[i]);
        return r / (int64_t)n;
    case K_DEV: {
        if (n < 2)
            return 0;
        double old_mean = (double)v[0], new_mean, var = 0;
        int64_t k = 2;
        for (size_t i = 1; i < n; i++, k++) {
            double x = (double)v[i];
            new_mean = old_mean + (x - old_mean) / (double)k;
            var += (x - old_mean) * (x - new_mean);
            old_mean = new_mean;
        }
        return (int64_t)sqrt(var / (double)(k - 1));
    }
    case K_COUNT:
        return (int64_t)n;
    case K_MULT:
        r = 1;
        for (size_t i = 0; i < n; i++)
            r = wmul(r, v[i]);
        return r;
    case K_DIFF:
        return wsub(v[n - 1], v[0]);
    case K_FIRST:
    case K_NONE:
        return v[0];
    case K_LAST:
        return v[n - 1];
    case K_MEDIAN:
    case K_PCT: {
        double *d = scratch;
        for (size_t i = 0; i < n; i++)
            d[i] = (double)v[i];
        qsort(d, n, sizeof(double), cmp_double);
        if (a->kind == K_MEDIAN)
            return (int64_t)d[n / 2];
        return (int64_t)percentile_sorted(d, n, a->pct, a->est);
    }
    }
    return 0;
}

double qagg_run_double(const struct qagg *a, const double *v, size_t n, double *scratch)
{
    double r = 0;
    size_t k = 0;
    switch (a->kind) {
    case K_SUM:
    case K_SQSUM:
        for (size_t i = 0; i < n; i++) {
            if (isnan(v[i]))
                continue;
            r += a->kind == K_SUM ? v[i] : v[i] * v[i];
            k++;
        }
        return k ? r : NAN;
    case K_MIN:
    case K_MAX:
        for (size_t i = 0; i < n; i++) {
            if (isnan(v[i]))
                continue;
            if (k++ == 0 || (a->kind == K_MIN ? v[i] < r : v[i] > r))
                r = v[i];
        }
        return k ? r : NAN;
    case K_AVG:
        for (size_t i = 0; i < n; i++) {
            if (isnan(v[i]))
                continue;
            r += v[i];
            k++;
        }
        return k ? r / (double)k : NAN;
    case K_DEV: {
        double old_mean = 0, new_mean, var = 0;
        for (size_t i = 0; i < n; i++) {
            if (isnan(v[i]))
                continue;
            k++;
            if (k == 1) {
                old_mean = v[i];
                continue;
            }
            new_mean = old_mean + (v[i] - old_mean) / (double)k;
            var += (v[i] - old_mean) * (v[i] - new_mean);
            old_mean = new_mean;
        }
        if (k == 0)
            return NAN;
        return k < 2 ? 0.0 : sqrt(var / (double)k);
    }
    case K_COUNT:
        for (size_t i = 0; i < n; i++)
            if (!isnan(v[i]))
                k++;
        return k ? (double)k : NAN;
    case K_MULT:
        r = 1;
        for (size_t i = 0; i < n; i++) {
            if (isnan(v[i]))
                continue;
            r *= v[i];
            k++;
        }
        return k ? r : NAN;
    case K_DIFF:
        return v[n - 1] - v[0];
    case K_FIRST:
    case K_NONE:
        return v[0];
    case K_LAST:
        return v[n - 1];
    case K_MEDIAN:
    case K_PCT:
        for (size_t i = 0; i < n; i++)
            if (!isnan(v[i]))
                scratch[k++] = v[i];
        if (k == 0)
            return NAN;
        qsort(scratch, k, sizeof(double), cmp_double);
        if (a->kind == K_MEDIAN)
            return scratch[k / 2];
        /* OpenTSDB 2.4's PercentileAgg.runDouble ignores the estimation type */
        return percentile_sorted(scratch, k, a->pct, EST_LEGACY);
    }
    return NAN;
}

enum qagg_stream qagg_stream_kind(const struct qagg *a)
{
    switch (a->kind) {
    case K_SUM:
        return QAGG_STREAM_SUM;
    case K_AVG:
        return QAGG_STREAM_AVG;
    case K_MIN:
        return QAGG_STREAM_MIN;
    case K_MAX:
        return QAGG_STREAM_MAX;
    case K_COUNT:
        return QAGG_STREAM_COUNT;
    default:
        return QAGG_STREAM_NO;
    }
}

/* ---- buffers ------------------------------------------------------------------------ */

void qagg_buf_free(struct qagg_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

/* Makes room for `extra` more points (so callers may then fill p[n..n+extra) directly). */
static int qagg_buf_reserve(struct qagg_buf *b, size_t extra, struct ct_err *err)
{
    if (b->n + extra <= b->cap)
        return CT_OK;
    size_t nc = b->cap ? b->cap : 64;
    while (nc < b->n + extra)
        nc *= 2;
    struct qagg_point *np = realloc(b->p, nc * sizeof(*np));
    if (!np)
        return ct_err_set(err, CT_ENOMEM, "out of memory growing a series to %zu points", nc);
    b->p = np;
    b->cap = nc;
    return CT_OK;
}

static int qagg_buf_push(struct qagg_buf *b, const struct qagg_point *pt, struct ct_err *err)
{
    if (b->n == b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 64;
        struct qagg_point *np = realloc(b->p, nc * sizeof(*np));
        if (!np)
            return ct_err_set(err, CT_ENOMEM, "out of memory growing a series to %zu points", nc);
        b->p = np;
        b->cap = nc;
    }
    b->p[b->n++] = *pt;
    return CT_OK;
}

/* ---- downsampling ------------------------------------------------------------------- */

static const char *fill_names[] = {"none", "nan", "null", "zero", "scalar"};

const char *qagg_fill_name(enum qagg_fill f)
{
    return (unsigned)f < 5 ? fill_names[f] : "none";
}

int qagg_fill_parse(const char *s, enum qagg_fill *out, struct ct_err *err)
{
    for (int i = 0; i < 5; i++) {
        if (!strcasecmp(s, fill_names[i])) {
            *out = (enum qagg_fill)i;
            return CT_OK;
        }
    }
    return ct_err_set(err, CT_EINVAL, "Unrecognized fill policy: %s", s);
}

int qagg_fill_scalar_parse(const char *s, double *out, struct ct_err *err)
{
    char *end;
    errno = 0;
    double d = s && *s && !isspace((unsigned char)*s) ? strtod(s, &end) : NAN;
    if (!s || !*s || isspace((unsigned char)*s) || *end || errno == ERANGE || !isfinite(d))
        return ct_err_set(err, CT_EINVAL, "Invalid scalar fill value '%s': must be a finite number",
                          s ? s : "");
    *out = d;
    return CT_OK;
}

/* The third part of a specifier: a fill policy name, or "scalar(<number>)" (ctsdb's way to give
 * the scalar policy its value in a string specifier; plain "scalar" fills with 0, the default
 * value of OpenTSDB's NumericFillPolicy). */
static int parse_fill_part(char *part, const char *spec, struct qagg_ds *out, struct ct_err *err)
{
    char *open = strchr(part, '(');
    out->scalar = 0.0;
    if (!open)
        return qagg_fill_parse(part, &out->fill, err);
    size_t len = strlen(part);
    *open = 0;
    if (strcasecmp(part, "scalar") != 0 || part[len - 1] != ')') {
        *open = '(';
        return ct_err_set(err, CT_EINVAL,
                          "Invalid downsampling specifier '%s': only the scalar fill policy "
                          "takes a value, as scalar(<number>)",
                          spec);
    }
    part[len - 1] = 0;
    out->fill = QAGG_FILL_SCALAR;
    return qagg_fill_scalar_parse(open + 1, &out->scalar, err);
}

int qagg_ds_parse(const char *spec, struct qagg_ds *out, struct ct_err *err)
{
    memset(out, 0, sizeof(*out));
    if (!spec || !*spec)
        return ct_err_set(err, CT_EINVAL, "Downsampling specifier cannot be null or empty.");
    if (strlen(spec) >= sizeof(out->text))
        return ct_err_set(err, CT_EINVAL, "Invalid downsampling specifier '%s': too long", spec);
    snprintf(out->text, sizeof(out->text), "%s", spec);
    char buf[64], *parts[4];
    snprintf(buf, sizeof(buf), "%s", spec);
    /* split on '-' as String.split("-") does, except inside the parentheses of a scalar fill
     * value ("1m-avg-scalar(-1.5)") */
    int np = 0, depth = 0;
    parts[np++] = buf;
    for (char *p = buf; *p; p++) {
        if (*p == '(')
            depth++;
        else if (*p == ')' && depth > 0)
            depth--;
        else if (*p == '-' && depth == 0) {
            *p = 0;
            if (np < 4)
                parts[np] = p + 1;
            np++;
        }
    }
    while (np > 1 && np <= 4 && !*parts[np - 1]) /* split() drops trailing empty strings */
        np--;
    if (np < 2)
        return ct_err_set(err, CT_EINVAL,
                          "Invalid downsampling specifier '%s': must provide at least interval "
                          "and function",
                          spec);
    if (np > 3)
        return ct_err_set(err, CT_EINVAL,
                          "Invalid downsampling specifier '%s': must consist of interval, "
                          "function, and optional fill policy",
                          spec);
    char *iv = parts[0];
    size_t ivlen = strlen(iv);
    if (strstr(iv, "all")) {
        out->all = true;
    } else {
        if (ivlen > 1 && iv[ivlen - 1] == 'c') {
            out->calendar = true;
            iv[ivlen - 1] = 0;
        }
        int rc = qtime_parse_duration(iv, &out->interval_ms, &out->count, &out->unit, err);
        if (rc != CT_OK)
            return rc;
    }
    if (!strcasecmp(parts[1], "none"))
        return ct_err_set(err, CT_EINVAL, "cannot use the NONE aggregator for downsampling");
    out->fn = qagg_lookup(parts[1]);
    if (!out->fn)
        return ct_err_set(err, CT_EINVAL, "No such downsampling function: %s", parts[1]);
    out->fill = QAGG_FILL_NONE;
    if (np == 3) {
        int rc = parse_fill_part(parts[2], spec, out, err);
        if (rc != CT_OK)
            return rc;
    }
    out->enabled = true;
    return CT_OK;
}

void qagg_window_compute(int64_t start_ms, int64_t end_ms, const struct qagg_ds *ds,
                         struct qagg_window *w)
{
    int64_t iv = ds && ds->enabled && !ds->all ? ds->interval_ms : 0;
    w->q_start_ms = start_ms;
    w->q_end_ms = end_ms;
    int64_t s = start_ms / 1000;
    int64_t a = s;
    if (iv)
        a -= ((1000 * s) % iv) / 1000;
    a -= a % 3600;
    w->win_start_ms = (a > 0 ? a : 0) * 1000;
    int64_t e = end_ms / 1000 + 1; /* TsdbQuery bumps ms end times by a second */
    int64_t se;
    if (iv) {
        int64_t ia = e + (iv - (1000 * e) % iv) / 1000;
        int64_t off = ia % 3600;
        se = off == 0 ? ia : ia + (3600 - off);
    } else {
        se = e + (3600 - e % 3600);
    }
    w->win_end_ms = se * 1000;
}

void qagg_window_pad(struct qagg_window *w, const struct qagg_ds *ds)
{
    int64_t pad = 3600000;
    if (ds && ds->enabled && !ds->all && ds->interval_ms > pad)
        pad = (ds->interval_ms + 3599999) / 3600000 * 3600000;
    w->win_start_ms = w->win_start_ms > pad ? w->win_start_ms - pad : 0;
    w->win_end_ms += pad;
}

static int64_t align_ts(int64_t ts, int64_t iv)
{
    return ts - ts % iv;
}

/* Emits one bucket's value; `vals` holds the raw values as doubles. */
static int ds_emit(const struct qagg_ds *ds, int64_t ts, const double *vals, size_t nv,
                   double *scratch, struct qagg_buf *out, struct ct_err *err)
{
    struct qagg_point pt = {.ts_ms = ts, .is_int = false};
    pt.v.d = qagg_run_double(ds->fn, vals, nv, scratch);
    return qagg_buf_push(out, &pt, err);
}

/* The plain Downsampler (no fill), appending to out. */
static int ds_plain(const struct qagg_point *in, size_t n, const struct qagg_ds *ds,
                    const struct qagg_window *w, const struct qtime_tz *tz, struct qagg_buf *out,
                    double *vals, double *scratch, struct ct_err *err)
{
    size_t i = 0;
    int rc;
    if (ds->all) {
        size_t nv = 0;
        for (; i < n && in[i].ts_ms < w->win_start_ms; i++)
            ;
        for (; i < n; i++) {
            if (in[i].ts_ms < w->q_start_ms)
                continue;
            if (in[i].ts_ms >= w->q_end_ms)
                break;
            vals[nv++] = qagg_point_double(&in[i]);
        }
        if (nv == 0)
            return CT_OK;
        return ds_emit(ds, w->q_start_ms, vals, nv, scratch, out, err);
    }
    if (!ds->calendar) {
        int64_t iv = ds->interval_ms;
        int64_t seek = align_ts(w->win_start_ms + iv - 1, iv);
        for (; i < n && in[i].ts_ms < seek; i++)
            ;
        while (i < n) {
            int64_t bstart = align_ts(in[i].ts_ms, iv), bend = bstart + iv;
            size_t nv = 0;
            for (; i < n && in[i].ts_ms < bend; i++)
                vals[nv++] = qagg_point_double(&in[i]);
            if ((rc = ds_emit(ds, bstart, vals, nv, scratch, out, err)) != CT_OK)
                return rc;
        }
        return CT_OK;
    }
    /* calendar buckets */
    int64_t c = qtime_cal_previous(w->win_start_ms, ds->count, ds->unit, tz);
    if (w->win_start_ms > c)
        c = qtime_cal_add(c, ds->count, ds->unit, tz);
    for (; i < n && in[i].ts_ms < c; i++)
        ;
    if (i == n)
        return CT_OK;
    int64_t prev = qtime_cal_previous(in[i].ts_ms, ds->count, ds->unit, tz);
    int64_t next = qtime_cal_add(prev, ds->count, ds->unit, tz);
    while (i < n) {
        size_t nv = 0;
        for (; i < n && in[i].ts_ms < next; i++)
            vals[nv++] = qagg_point_double(&in[i]);
        if (nv && (rc = ds_emit(ds, prev, vals, nv, scratch, out, err)) != CT_OK)
            return rc;
        while (i < n && in[i].ts_ms >= next) {
            prev = qtime_cal_add(prev, ds->count, ds->unit, tz);
            next = qtime_cal_add(next, ds->count, ds->unit, tz);
        }
    }
    return CT_OK;
}

int qagg_downsample(const struct qagg_point *in, size_t n, const struct qagg_ds *ds,
                    const struct qagg_window *w, const struct qtime_tz *tz, struct qagg_buf *out,
                    struct ct_err *err)
{
    double *vals = malloc((n ? n : 1) * 2 * sizeof(double));
    if (!vals)
        return ct_err_set(err, CT_ENOMEM, "out of memory downsampling %zu points", n);
    int rc;
    if (ds->fill == QAGG_FILL_NONE || ds->all) {
        rc = ds_plain(in, n, ds, w, tz, out, vals, vals + (n ? n : 1), err);
        free(vals);
        return rc;
    }
    struct qagg_buf plain = {0};
    rc = ds_plain(in, n, ds, w, tz, &plain, vals, vals + (n ? n : 1), err);
    free(vals);
    if (rc == CT_OK)
        rc = qagg_ds_fill(plain.p, plain.n, ds, w, tz, out, err);
    qagg_buf_free(&plain);
    return rc;
}

int qagg_ds_fill(const struct qagg_point *plain, size_t n, const struct qagg_ds *ds,
                 const struct qagg_window *w, const struct qtime_tz *tz, struct qagg_buf *out,
                 struct ct_err *err)
{
    if (ds->fill == QAGG_FILL_NONE || ds->all) { /* no fill: the buckets as they are */
        int rc = qagg_buf_reserve(out, n, err);
        if (rc == CT_OK && n) {
            memcpy(out->p + out->n, plain, n * sizeof(*plain));
            out->n += n;
        }
        return rc;
    }
    /* FillingDownsampler: every expected bucket in [start, end) of the window */
    int64_t ts, end_ts;
    if (ds->calendar) {
        ts = qtime_cal_previous(w->win_start_ms, ds->count, ds->unit, tz);
        end_ts = qtime_cal_previous(w->win_end_ms, ds->count, ds->unit, tz);
        if (end_ts == ts)
            end_ts = qtime_cal_add(end_ts, ds->count, ds->unit, tz);
    } else {
        ts = align_ts(w->win_start_ms, ds->interval_ms);
        end_ts = align_ts(w->win_end_ms, ds->interval_ms);
    }
    double fillv = ds->fill == QAGG_FILL_ZERO     ? 0.0
                   : ds->fill == QAGG_FILL_SCALAR ? ds->scalar
                                                  : NAN;
    size_t j = 0;
    int rc = CT_OK;
    while (ts < end_ts) {
        while (j < n && plain[j].ts_ms < ts)
            j++;
        struct qagg_point pt = {.ts_ms = ts, .is_int = false};
        if (j < n && plain[j].ts_ms == ts)
            pt.v.d = plain[j++].v.d;
        else
            pt.v.d = fillv;
        if ((rc = qagg_buf_push(out, &pt, err)) != CT_OK)
            break;
        ts = ds->calendar ? qtime_cal_add(ts, ds->count, ds->unit, tz) : ts + ds->interval_ms;
    }
    return rc;
}

/* ---- rate --------------------------------------------------------------------------- */

void qagg_rate_init(struct qagg_rate *r)
{
    r->counter = false;
    r->drop_resets = false;
    r->counter_max = INT64_MAX;
    r->reset_value = 0;
}

/* The rates of in[0..n) written to o[0..), returning their count. o may be in itself (the
 * rate of in[i] goes to o[k], k <= i, after in[i] was read): the previous point is kept by
 * value, never read back from in. */
static size_t rate_run(const struct qagg_point *in, size_t n, const struct qagg_rate *r,
                       struct qagg_point *o)
{
    /* RateSpan computes its first rate against an integer 0 at time zero ("for backward
     * compatibility"); AggregationIterator then keeps that first rate as the series' current
     * value without emitting it. */
    int64_t prev_ts = 0, prev_i = 0;
    double prev_d = 0;
    bool prev_int = true;
    /* rates are written field by field (a whole struct built on the stack and copied made the
     * store forwarding stall on every point), and the seconds between points are divided only
     * when they change (downsampled series: always the interval) */
    size_t no = 0;
    int64_t last_dt = -1;
    double last_tdelta = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t ts = in[i].ts_ms;
        if (ts <= prev_ts)
            continue; /* RateSpan requires strictly increasing times */
        bool is_int = in[i].is_int;
        int64_t vi = is_int ? in[i].v.i : 0;
        double vd = is_int ? (double)vi : in[i].v.d;
        int64_t dt = ts - prev_ts;
        if (dt != last_dt) {
            last_dt = dt;
            last_tdelta = (double)dt / 1000.0;
        }
        double tdelta = last_tdelta;
        bool ints = prev_int && is_int;
        double diff = ints ? (double)wsub(vi, prev_i) : vd - prev_d;
        double v;
        if (r->counter && diff < 0) {
            if (r->drop_resets) {
                prev_ts = ts;
                prev_i = vi;
                prev_d = vd;
                prev_int = is_int;
                continue;
            }
            diff = ints ? (double)wadd(wsub(r->counter_max, prev_i), vi)
                        : (double)r->counter_max - prev_d + vd;
            double rate = diff / tdelta;
            v = (r->reset_value > 0 && rate > (double)r->reset_value) ? 0.0 : rate;
        } else {
            v = diff / tdelta;
        }
        o[no].ts_ms = ts;
        o[no].v.d = v;
        o[no].is_int = false;
        no++;
        prev_ts = ts;
        prev_i = vi;
        prev_d = vd;
        prev_int = is_int;
    }
    return no;
}

int qagg_rate_apply(const struct qagg_point *in, size_t n, const struct qagg_rate *r,
                    struct qagg_buf *out, struct ct_err *err)
{
    int rc = qagg_buf_reserve(out, n, err); /* at most one rate per point */
    if (rc != CT_OK)
        return rc;
    out->n += rate_run(in, n, r, out->p + out->n);
    return CT_OK;
}

size_t qagg_rate_in_place(struct qagg_point *p, size_t n, const struct qagg_rate *r)
{
    return rate_run(p, n, r, p);
}

/* ---- cross-series aggregation ------------------------------------------------------- */

#define QAGG_END INT64_MAX /* AggregationIterator's TIME_MASK: the series is exhausted */

struct gslot {
    int64_t ts; /* current: 0 = not contributing; next: QAGG_END = none */
    bool f;     /* FLAG_FLOAT */
    int64_t i;
    double d;
};

struct gser {
    const struct qagg_point *p;
    size_t n, pos; /* pos: the next point to read */
    bool live;     /* the iterator is still open */
    struct gslot cur, nxt;
};

static void g_end(struct gser *g)
{
    g->nxt.ts = QAGG_END; /* the value bits stay as they were, as in Java */
    g->nxt.f = false;
    g->live = false;
}

static void g_put(struct gslot *s, const struct qagg_point *p)
{
    s->ts = p->ts_ms;
    s->f = !p->is_int;
    if (p->is_int)
        s->i = p->v.i;
    else
        s->d = p->v.d;
}

static void g_move(struct gser *g)
{
    g->cur = g->nxt;
    if (g->live && g->pos < g->n)
        g_put(&g->nxt, &g->p[g->pos++]);
    else
        g_end(g);
}

static double slot_double(const struct gslot *s)
{
    return s->f ? s->d : (double)s->i;
}

/* The aligned case of qagg_group_run(): every series, from its first point at or after
 * win_start_ms, has the same timestamps. Then AggregationIterator moves all series together: at
 * each timestamp every series' current point is at that timestamp, so no value is interpolated
 * (each series gives its own value); the point is an integer when, without rate, every series'
 * current and next points are integers (the next one may lie past win_end_ms); the first point
 * is skipped with rate (it only primes the current value); iteration stops past win_end_ms.
 * *done is false (and nothing emitted) when the series are not aligned, or when a point sits at
 * time 0 (which the iterator takes for "no current point"). */
static int group_run_aligned(const struct qagg *a, const struct qagg_series *s, size_t ns,
                             int64_t win_start_ms, int64_t win_end_ms, bool rate, qagg_emit_fn emit,
                             void *arg, bool *done, struct ct_err *err)
{
    enum {
        MAXS = 256
    };
    *done = false;
    if (ns < 1 || ns > MAXS)
        return CT_OK;
    size_t from[MAXS];
    size_t len = 0;
    for (size_t i = 0; i < ns; i++) {
        size_t f = 0;
        while (f < s[i].n && s[i].p[f].ts_ms < win_start_ms)
            f++;
        from[i] = f;
        if (i == 0)
            len = s[i].n - f;
        else if (s[i].n - f != len)
            return CT_OK;
    }
    const struct qagg_point *p0 = s[0].p + from[0];
    if (len && p0[0].ts_ms <= 0)
        return CT_OK;
    size_t k0 = rate ? 1 : 0, k1 = k0;
    while (k1 < len && p0[k1].ts_ms <= win_end_ms)
        k1++;
    if (ns == 1) {
        *done = true;
        /* one series: every timestamp aggregates one value, as the loop below would do it
         * (qagg_run_long of one value is the value itself for these kinds) */
        bool ident = a->kind == K_SUM || a->kind == K_MIN || a->kind == K_MAX || a->kind == K_AVG ||
                     a->kind == K_FIRST || a->kind == K_NONE || a->kind == K_LAST;
        double scratch[2];
        for (size_t k = k0; k < k1; k++) {
            struct qagg_point out = {.ts_ms = p0[k].ts_ms};
            out.is_int = !rate && p0[k].is_int && (k + 1 == len || p0[k + 1].is_int);
            if (out.is_int) {
                out.v.i = ident ? p0[k].v.i : qagg_run_long(a, &p0[k].v.i, 1, scratch);
            } else {
                double d = qagg_point_double(&p0[k]);
                out.v.d = qagg_run_double(a, &d, 1, scratch);
            }
            int rc = emit(arg, &out);
            if (rc != 0)
                return rc;
        }
        return CT_OK;
    }
    /* with a single-pass kind and no integer point, series by series into one accumulator per
     * timestamp: each series is read in order (not one cache line of every series per
     * timestamp), and every accumulator still sees the series in the same order as
     * qagg_run_double's loop, so the bits are the same. A series is checked (its timestamps
     * are p0's, it has no integer) just before it is summed, while in cache; an integer point
     * drops the sums for the per-timestamp loop below, a timestamp apart gives up. */
    enum qagg_stream kind = qagg_stream_kind(a);
    bool stream = kind != QAGG_STREAM_NO && k1 > k0;
    size_t m = stream ? k1 - k0 : 0;
    double *acc = NULL;
    size_t *cnt = NULL;
    if (stream && (!(acc = calloc(m, sizeof(double))) || !(cnt = calloc(m, sizeof(size_t))))) {
        free(acc);
        *done = true;
        return ct_err_set(err, CT_ENOMEM, "out of memory aggregating %zu series", ns);
    }
    bool any_int = false;
    for (size_t i = 0; i < ns; i++) {
        const struct qagg_point *pa = s[i].p + from[i];
        for (size_t k = 0; k < len; k++) {
            if (pa[k].ts_ms != p0[k].ts_ms) {
                free(acc);
                free(cnt);
                return CT_OK;
            }
            any_int |= pa[k].is_int;
        }
        if (!stream || any_int)
            continue;
        const struct qagg_point *pi = pa + k0;
        /* one loop per kind (NaN skipped, as qagg_run_double) */
        switch (kind) {
        case QAGG_STREAM_SUM:
        case QAGG_STREAM_AVG:
            for (size_t k = 0; k < m; k++) {
                double v = pi[k].v.d;
                if (!isnan(v)) {
                    acc[k] += v;
                    cnt[k]++;
                }
            }
            break;
        case QAGG_STREAM_MIN:
            for (size_t k = 0; k < m; k++) {
                double v = pi[k].v.d;
                if (!isnan(v)) {
                    if (cnt[k] == 0 || v < acc[k])
                        acc[k] = v;
                    cnt[k]++;
                }
            }
            break;
        case QAGG_STREAM_MAX:
            for (size_t k = 0; k < m; k++) {
                double v = pi[k].v.d;
                if (!isnan(v)) {
                    if (cnt[k] == 0 || v > acc[k])
                        acc[k] = v;
                    cnt[k]++;
                }
            }
            break;
        default: /* QAGG_STREAM_COUNT */
            for (size_t k = 0; k < m; k++)
                cnt[k] += !isnan(pi[k].v.d);
            break;
        }
    }
    *done = true;
    if (stream && !any_int) {
        int rc = CT_OK;
        for (size_t k = k0; k < k1; k++) {
            double r = acc[k - k0];
            size_t c = cnt[k - k0];
            struct qagg_point out = {.ts_ms = p0[k].ts_ms, .is_int = false};
            out.v.d = c == 0                      ? NAN
                      : kind == QAGG_STREAM_AVG   ? r / (double)c
                      : kind == QAGG_STREAM_COUNT ? (double)c
                                                  : r;
            if ((rc = emit(arg, &out)) != 0)
                break;
        }
        free(acc);
        free(cnt);
        return rc;
    }
    free(acc);
    free(cnt);
    double *dv = malloc(ns * 2 * sizeof(double));
    int64_t *lv = malloc(ns * sizeof(int64_t));
    if (!dv || !lv) {
        free(dv);
        free(lv);
        return ct_err_set(err, CT_ENOMEM, "out of memory aggregating %zu series", ns);
    }
    int rc = CT_OK;
    for (size_t k = k0; k < k1; k++) {
        bool is_int = !rate;
        for (size_t i = 0; i < ns && is_int; i++) {
            const struct qagg_point *pi = s[i].p + from[i];
            is_int = pi[k].is_int && (k + 1 == len || pi[k + 1].is_int);
        }
        struct qagg_point out = {.ts_ms = p0[k].ts_ms, .is_int = is_int};
        if (is_int) {
            for (size_t i = 0; i < ns; i++)
                lv[i] = s[i].p[from[i] + k].v.i;
            out.v.i = qagg_run_long(a, lv, ns, dv + ns);
        } else {
            for (size_t i = 0; i < ns; i++)
                dv[i] = qagg_point_double(&s[i].p[from[i] + k]);
            out.v.d = qagg_run_double(a, dv, ns, dv + ns);
        }
        if ((rc = emit(arg, &out)) != 0)
            break;
    }
    free(dv);
    free(lv);
    return rc;
}

int qagg_group_run(const struct qagg *a, const struct qagg_series *s, size_t ns,
                   int64_t win_start_ms, int64_t win_end_ms, bool rate, qagg_emit_fn emit,
                   void *arg, struct ct_err *err)
{
    bool done;
    int rc = group_run_aligned(a, s, ns, win_start_ms, win_end_ms, rate, emit, arg, &done, err);
    if (done)
        return rc;
    return qagg_group_run_general(a, s, ns, win_start_ms, win_end_ms, rate, emit, arg, err);
}

int qagg_group_run_general(const struct qagg *a, const struct qagg_series *s, size_t ns,
                           int64_t win_start_ms, int64_t win_end_ms, bool rate, qagg_emit_fn emit,
                           void *arg, struct ct_err *err)
{
    if (ns == 0)
        return CT_OK;
    struct gser *g = calloc(ns, sizeof(*g));
    double *dv = malloc(ns * 2 * sizeof(double));
    int64_t *lv = malloc(ns * 2 * sizeof(int64_t));
    if (!g || !dv || !lv) {
        free(g);
        free(dv);
        free(lv);
        return ct_err_set(err, CT_ENOMEM, "out of memory aggregating %zu series", ns);
    }
    for (size_t i = 0; i < ns; i++) {
        g[i].p = s[i].p;
        g[i].n = s[i].n;
        g[i].live = true;
        while (g[i].pos < g[i].n && g[i].p[g[i].pos].ts_ms < win_start_ms)
            g[i].pos++; /* seek */
        if (g[i].pos == g[i].n) {
            g_end(&g[i]);
            continue;
        }
        g_put(&g[i].nxt, &g[i].p[g[i].pos++]);
        if (rate) {
            if (g[i].pos < g[i].n)
                g_move(&g[i]);
            else
                g_end(&g[i]);
        }
    }
    size_t current = 0;
    enum qagg_interp m = a->interp;
    int rc = CT_OK;
    for (;;) {
        bool any = false;
        for (size_t i = 0; i < ns && !any; i++)
            any = g[i].nxt.ts <= win_end_ms;
        if (!any)
            break;
        for (size_t i = current; i < ns; i++) {
            if (g[i].nxt.ts == QAGG_END) {
                g[i].cur.ts = 0;
                g[i].cur.f = false;
            }
        }
        int64_t min_ts = INT64_MAX;
        size_t cur = ns;
        bool multiple = false;
        for (size_t i = 0; i < ns; i++) {
            int64_t t = g[i].nxt.ts;
            if (t <= win_end_ms) {
                if (t < min_ts) {
                    min_ts = t;
                    cur = i;
                    multiple = false;
                } else if (t == min_ts) {
                    multiple = true;
                }
            }
        }
        current = cur;
        g_move(&g[cur]);
        if (multiple)
            for (size_t i = cur + 1; i < ns; i++)
                if (g[i].nxt.ts == min_ts)
                    g_move(&g[i]);
        bool is_int = !rate;
        for (size_t i = 0; i < ns && is_int; i++)
            if (g[i].cur.f || g[i].nxt.f)
                is_int = false;
        int64_t x = g[current].cur.ts;
        size_t nv = 0;
        for (size_t p = 0; p < ns; p++) {
            const struct gser *q = &g[p];
            if (q->cur.ts == 0)
                continue;
            int64_t x0 = q->cur.ts, x1 = q->nxt.ts;
            if (is_int) {
                int64_t y0 = q->cur.i, y1 = q->nxt.i, r;
                if (p == current || x == x0) {
                    r = y0;
                } else if (x == x1) {
                    r = y1;
                } else {
                    switch (m) {
                    case QAGG_LERP:
                        r = wadd(y0, wmul(wsub(x, x0), wsub(y1, y0)) / wsub(x1, x0));
                        break;
                    case QAGG_ZIM:
                        r = 0;
                        break;
                    case QAGG_MAX:
                        r = INT64_MAX;
                        break;
                    case QAGG_MIN:
                        r = INT64_MIN;
                        break;
                    default:
                        r = y0;
                        break;
                    }
                }
                lv[nv++] = r;
            } else {
                double y0 = slot_double(&q->cur), r;
                if (p == current || rate || x == x0) {
                    r = y0;
                } else {
                    double y1 = slot_double(&q->nxt);
                    if (x == x1) {
                        r = y1;
                    } else {
                        switch (m) {
                        case QAGG_LERP:
                            r = y0 + (double)(x - x0) * (y1 - y0) / (double)(x1 - x0);
                            break;
                        case QAGG_ZIM:
                            r = 0;
                            break;
                        case QAGG_MAX:
                            r = DBL_MAX;
                            break;
                        case QAGG_MIN:
                            r = DBL_TRUE_MIN; /* Java's Double.MIN_VALUE */
                            break;
                        default:
                            r = y0;
                            break;
                        }
                    }
                }
                dv[nv++] = r;
            }
        }
        struct qagg_point out = {.ts_ms = x, .is_int = is_int};
        if (nv == 0)
            continue;
        if (is_int)
            out.v.i = qagg_run_long(a, lv, nv, dv + ns);
        else
            out.v.d = qagg_run_double(a, dv, nv, dv + ns);
        if ((rc = emit(arg, &out)) != 0)
            break;
    }
    free(g);
    free(dv);
    free(lv);
    return rc;
}
