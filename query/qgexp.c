/* qgexp.c - /api/query/gexp's Graphite-style functions: a recursive-descent parser of OpenTSDB
 * 2.4's grammar into a small tree, and the functions over series sets (see qgexp.h).
 *
 * Invariants: the tree is built once and never changed; a query leaf refers to its query by
 * number (first-appearance order, as the caller runs them); evaluation reads its inputs only and
 * builds every output series anew; the series functions (sumSeries and its kin) are evaluated by
 * query/qexpr.h with a union join on the tag set and zero for a missing operand, as OpenTSDB's
 * expression iterator does for them. */
#include "query/qgexp.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/qexpr.h"

#define GEXP_MAX_DEPTH  32
#define GEXP_MAX_PARAMS 64
#define GEXP_MAX_SETS   26 /* operands of a series function: a..z */

enum fn_kind {
    F_ALIAS,
    F_SCALE,
    F_ABSOLUTE,
    F_MOVING_AVERAGE,
    F_HIGHEST_CURRENT,
    F_HIGHEST_MAX,
    F_SHIFT,
    F_SUM,
    F_DIFF,
    F_MULTIPLY,
    F_DIVIDE,
};

static const struct {
    const char *name;
    enum fn_kind kind;
} FUNCTIONS[] = {
    {"alias", F_ALIAS},
    {"scale", F_SCALE},
    {"absolute", F_ABSOLUTE},
    {"movingAverage", F_MOVING_AVERAGE},
    {"highestCurrent", F_HIGHEST_CURRENT},
    {"highestMax", F_HIGHEST_MAX},
    {"shift", F_SHIFT},
    {"timeShift", F_SHIFT},
    {"sumSeries", F_SUM},
    {"sum", F_SUM},
    {"diffSeries", F_DIFF},
    {"difference", F_DIFF},
    {"multiplySeries", F_MULTIPLY},
    {"multiply", F_MULTIPLY},
    {"divideSeries", F_DIVIDE},
    {"divide", F_DIVIDE},
};

enum param_kind {
    P_EXPR,  /* a nested function */
    P_QUERY, /* a metric query: its series */
    P_ARG,   /* a bare name: a function argument */
};

struct node;
struct param {
    enum param_kind kind;
    struct node *sub;
    size_t query;
    char *arg;
};

struct node {
    enum fn_kind fn;
    struct param p[GEXP_MAX_PARAMS];
    size_t np;
};

struct qgexp {
    struct node *root;
    char **q;
    size_t nq;
};

/* ---- parsing ----------------------------------------------------------------------------- */

struct parser {
    const char *s;
    size_t pos;
    struct qgexp *e;
    struct ct_err *err;
    int depth;
};

static bool name_char(char c)
{
    return isalnum((unsigned char)c) || (c != '\0' && strchr("*-_#/$@|.'[]", c) != NULL);
}

static void skip_blanks(struct parser *p)
{
    while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' ||
           p->s[p->pos] == '\r')
        p->pos++;
}

static int syntax(struct parser *p, const char *what)
{
    /* the reason first: a long expression may not fit in the message */
    return ct_err_set(p->err, CT_EINVAL, "Failed to parse the expression: %s at position %zu of %s",
                      what, p->pos, p->s);
}

/* A NAME at the current position: its start and length (> 0), the position moved past it. */
static int read_name(struct parser *p, const char **name, size_t *len)
{
    skip_blanks(p);
    size_t b = p->pos;
    while (name_char(p->s[p->pos]))
        p->pos++;
    if (p->pos == b)
        return syntax(p, "expected a name");
    *name = p->s + b;
    *len = p->pos - b;
    return CT_OK;
}

/* Appends len bytes of s to the growing string *buf (size *n). */
static int append(char **buf, size_t *n, const char *s, size_t len)
{
    char *nb = realloc(*buf, *n + len + 1);
    if (nb == NULL)
        return CT_ENOMEM;
    memcpy(nb + *n, s, len);
    *n += len;
    nb[*n] = '\0';
    *buf = nb;
    return CT_OK;
}

static void node_free(struct node *n)
{
    if (n == NULL)
        return;
    for (size_t i = 0; i < n->np; i++) {
        node_free(n->p[i].sub);
        free(n->p[i].arg);
    }
    free(n);
}

static int parse_expr(struct parser *p, struct node **out);

/* The rest of a metric query whose aggregator (agg, alen) and ':' were read. */
static int parse_query(struct parser *p, const char *agg, size_t alen, size_t *index)
{
    char *q = NULL;
    size_t n = 0;
    int rc = append(&q, &n, agg, alen);
    const char *name;
    size_t len;
    /* up to three more colon-separated parts: [interval:][rate:]metric */
    for (int part = 0; rc == CT_OK; part++) {
        if (rc == CT_OK)
            rc = append(&q, &n, ":", 1);
        if (rc == CT_OK && (rc = read_name(p, &name, &len)) == CT_OK)
            rc = append(&q, &n, name, len);
        skip_blanks(p);
        if (rc != CT_OK || p->s[p->pos] != ':')
            break;
        if (part == 2) {
            rc = syntax(p, "too many ':' in a metric query");
            break;
        }
        p->pos++;
    }
    if (rc == CT_OK && p->s[p->pos] == '{') {
        p->pos++;
        rc = append(&q, &n, "{", 1);
        for (bool first = true; rc == CT_OK; first = false) {
            if (!first && (rc = append(&q, &n, ",", 1)) != CT_OK)
                break;
            if ((rc = read_name(p, &name, &len)) != CT_OK ||
                (rc = append(&q, &n, name, len)) != CT_OK)
                break;
            skip_blanks(p);
            if (p->s[p->pos] != '=') {
                rc = syntax(p, "expected '=' in a tag filter");
                break;
            }
            p->pos++;
            if ((rc = append(&q, &n, "=", 1)) != CT_OK ||
                (rc = read_name(p, &name, &len)) != CT_OK ||
                (rc = append(&q, &n, name, len)) != CT_OK)
                break;
            skip_blanks(p);
            if (p->s[p->pos] == '}') {
                p->pos++;
                rc = append(&q, &n, "}", 1);
                break;
            }
            if (p->s[p->pos] != ',') {
                rc = syntax(p, "expected ',' or '}' in the tag filters");
                break;
            }
            p->pos++;
        }
    }
    if (rc == CT_OK) {
        char **nq = realloc(p->e->q, (p->e->nq + 1) * sizeof(*nq));
        if (nq == NULL) {
            rc = CT_ENOMEM;
        } else {
            p->e->q = nq;
            nq[p->e->nq] = q;
            *index = p->e->nq++;
            return CT_OK;
        }
    }
    free(q);
    if (rc == CT_ENOMEM)
        return ct_err_set(p->err, CT_ENOMEM, "out of memory parsing an expression");
    return rc;
}

static int parse_param(struct parser *p, struct param *out)
{
    skip_blanks(p);
    size_t at = p->pos;
    const char *name;
    size_t len;
    int rc = read_name(p, &name, &len);
    if (rc != CT_OK)
        return rc;
    skip_blanks(p);
    if (p->s[p->pos] == '(') {
        p->pos = at;
        out->kind = P_EXPR;
        return parse_expr(p, &out->sub);
    }
    if (p->s[p->pos] == ':') {
        p->pos++;
        out->kind = P_QUERY;
        return parse_query(p, name, len, &out->query);
    }
    out->kind = P_ARG;
    out->arg = strndup(name, len);
    if (out->arg == NULL)
        return ct_err_set(p->err, CT_ENOMEM, "out of memory parsing an expression");
    return CT_OK;
}

static int parse_expr(struct parser *p, struct node **out)
{
    if (++p->depth > GEXP_MAX_DEPTH)
        return syntax(p, "functions nested too deep");
    const char *name;
    size_t len;
    int rc = read_name(p, &name, &len);
    if (rc != CT_OK)
        return rc;
    /* the name is looked up before the '(' is read, as OpenTSDB's parser builds the function's
     * tree on the NAME token: "scalesys.cpu)" is an unknown function, not a missing '(' */
    bool known = false;
    enum fn_kind kind = F_ALIAS;
    for (size_t i = 0; i < sizeof(FUNCTIONS) / sizeof(FUNCTIONS[0]); i++)
        if (strlen(FUNCTIONS[i].name) == len && memcmp(FUNCTIONS[i].name, name, len) == 0) {
            kind = FUNCTIONS[i].kind;
            known = true;
        }
    if (!known) /* OpenTSDB's ExpressionFactory wording */
        return ct_err_set(p->err, CT_EINVAL, "Function %.*s has not been implemented", (int)len,
                          name);
    skip_blanks(p);
    if (p->s[p->pos] != '(')
        return syntax(p, "expected '('");
    p->pos++;
    struct node *n = calloc(1, sizeof(*n));
    if (n == NULL)
        return ct_err_set(p->err, CT_ENOMEM, "out of memory parsing an expression");
    n->fn = kind;
    for (;;) {
        if (n->np == GEXP_MAX_PARAMS) {
            rc = syntax(p, "too many parameters");
            break;
        }
        if ((rc = parse_param(p, &n->p[n->np])) != CT_OK) {
            n->np++; /* freed with the node */
            break;
        }
        n->np++;
        skip_blanks(p);
        if (p->s[p->pos] == ')') {
            p->pos++;
            break;
        }
        if (p->s[p->pos] != ',') {
            rc = syntax(p, "expected ',' or ')'");
            break;
        }
        p->pos++;
    }
    p->depth--;
    if (rc != CT_OK) {
        node_free(n);
        return rc;
    }
    *out = n;
    return CT_OK;
}

int qgexp_parse(const char *src, struct qgexp **out, struct ct_err *err)
{
    *out = NULL;
    if (src == NULL || src[0] == '\0')
        /* OpenTSDB's parser fails on the empty text like on any other: "Failed to parse " */
        return ct_err_set(err, CT_EINVAL, "Failed to parse the expression: it is empty");
    struct qgexp *e = calloc(1, sizeof(*e));
    if (e == NULL)
        return ct_err_set(err, CT_ENOMEM, "out of memory parsing an expression");
    struct parser p = {.s = src, .e = e, .err = err};
    int rc = parse_expr(&p, &e->root);
    if (rc == CT_OK) {
        skip_blanks(&p);
        if (src[p.pos] != '\0')
            rc = syntax(&p, "unexpected text after the expression");
    }
    if (rc != CT_OK) {
        qgexp_free(e);
        return rc;
    }
    *out = e;
    return CT_OK;
}

void qgexp_free(struct qgexp *e)
{
    if (e == NULL)
        return;
    node_free(e->root);
    for (size_t i = 0; i < e->nq; i++)
        free(e->q[i]);
    free(e->q);
    free(e);
}

size_t qgexp_nqueries(const struct qgexp *e)
{
    return e->nq;
}

const char *qgexp_query(const struct qgexp *e, size_t i)
{
    return i < e->nq ? e->q[i] : NULL;
}

/* ---- series sets ------------------------------------------------------------------------- */

static void series_clear(struct qgexp_series *s)
{
    free(s->metric);
    for (size_t i = 0; i < s->ntags; i++) {
        free(s->tagk[i]);
        free(s->tagv[i]);
    }
    free(s->tagk);
    free(s->tagv);
    for (size_t i = 0; i < s->nagg; i++)
        free(s->agg[i]);
    free(s->agg);
    free(s->p);
}

void qgexp_set_clear(struct qgexp_set *set)
{
    for (size_t i = 0; i < set->n; i++)
        series_clear(&set->s[i]);
    free(set->s);
    *set = (struct qgexp_set){0};
}

static char **dup_strings(const char *const *a, size_t n, bool *ok)
{
    if (n == 0)
        return NULL;
    char **d = calloc(n, sizeof(*d));
    if (d == NULL) {
        *ok = false;
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if ((d[i] = strdup(a[i])) == NULL)
            *ok = false;
    return d;
}

struct qgexp_series *qgexp_set_add(struct qgexp_set *set, const char *metric,
                                   const char *const *tagk, const char *const *tagv, size_t ntags,
                                   const char *const *agg, size_t nagg)
{
    if (set->n == set->cap) {
        size_t nc = set->cap ? set->cap * 2 : 8;
        struct qgexp_series *ns = realloc(set->s, nc * sizeof(*ns));
        if (ns == NULL)
            return NULL;
        set->s = ns;
        set->cap = nc;
    }
    struct qgexp_series *s = &set->s[set->n];
    *s = (struct qgexp_series){0};
    bool ok = true;
    s->metric = strdup(metric ? metric : "");
    s->tagk = dup_strings(tagk, ntags, &ok);
    s->tagv = dup_strings(tagv, ntags, &ok);
    s->ntags = ntags;
    s->agg = dup_strings(agg, nagg, &ok);
    s->nagg = nagg;
    if (!ok || s->metric == NULL) {
        series_clear(s);
        return NULL;
    }
    set->n++;
    return s;
}

int qgexp_series_push(struct qgexp_series *s, const struct qagg_point *pt)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 64;
        struct qagg_point *np = realloc(s->p, nc * sizeof(*np));
        if (np == NULL)
            return CT_ENOMEM;
        s->p = np;
        s->cap = nc;
    }
    s->p[s->n++] = *pt;
    return CT_OK;
}

/* A copy of src's names (not its points) appended to out. */
static struct qgexp_series *add_like(struct qgexp_set *out, const struct qgexp_series *src)
{
    return qgexp_set_add(out, src->metric, (const char *const *)src->tagk,
                         (const char *const *)src->tagv, src->ntags,
                         (const char *const *)src->agg, src->nagg);
}

/* ---- functions --------------------------------------------------------------------------- */

struct args {
    const struct qgexp_set *sets[GEXP_MAX_PARAMS]; /* the series parameters, in order */
    size_t nsets;
    const char *arg[GEXP_MAX_PARAMS]; /* the bare-name parameters, in order */
    size_t narg;
    int64_t start_ms, end_ms;
};

static int oom(struct ct_err *err)
{
    return ct_err_set(err, CT_ENOMEM, "out of memory evaluating an expression");
}

static bool all_of(const char *s, const char *chars)
{
    if (*s == '\0')
        return false;
    for (; *s; s++)
        if (strchr(chars, *s) == NULL)
            return false;
    return true;
}

/* Copies every series of every series parameter to out, each point through fn. */
static int map_points(const struct args *a, void (*fn)(struct qagg_point *pt, const void *arg),
                      const void *arg, struct qgexp_set *out, struct ct_err *err)
{
    for (size_t k = 0; k < a->nsets; k++)
        for (size_t i = 0; i < a->sets[k]->n; i++) {
            const struct qgexp_series *src = &a->sets[k]->s[i];
            struct qgexp_series *s = add_like(out, src);
            if (s == NULL)
                return oom(err);
            for (size_t j = 0; j < src->n; j++) {
                struct qagg_point pt = src->p[j];
                fn(&pt, arg);
                if (qgexp_series_push(s, &pt) != CT_OK)
                    return oom(err);
            }
        }
    return CT_OK;
}

struct scale_arg {
    double f;
    bool f_int; /* a whole factor: integer points stay integers */
};

static void scale_point(struct qagg_point *pt, const void *arg)
{
    const struct scale_arg *sa = arg;
    if (pt->is_int && sa->f_int) /* a long times a long, wrapping as Java's does */
        pt->v.i = (int64_t)((uint64_t)(int64_t)sa->f * (uint64_t)pt->v.i);
    else
        *pt = (struct qagg_point){.ts_ms = pt->ts_ms, .v.d = sa->f * qagg_point_double(pt)};
}

static int fn_scale(const struct args *a, struct qgexp_set *out, struct ct_err *err)
{
    if (a->narg == 0)
        return ct_err_set(err, CT_EINVAL, "Missing scaling factor");
    char *end = NULL;
    double f = strtod(a->arg[0], &end);
    if (!all_of(a->arg[0], "-0123456789.") || end == a->arg[0] || *end != '\0')
        return ct_err_set(err, CT_EINVAL, "Unparseable scale factor value: %s", a->arg[0]);
    struct scale_arg sa = {f, f == floor(f) && !isinf(f) && fabs(f) < 9.2e18};
    return map_points(a, scale_point, &sa, out, err);
}

static void absolute_point(struct qagg_point *pt, const void *arg)
{
    (void)arg;
    if (pt->is_int)
        pt->v.i = pt->v.i == INT64_MIN ? pt->v.i : (pt->v.i < 0 ? -pt->v.i : pt->v.i);
    else
        pt->v.d = fabs(pt->v.d);
}

static int fn_absolute(const struct args *a, struct qgexp_set *out, struct ct_err *err)
{
    return map_points(a, absolute_point, NULL, out, err);
}

/* The alias template with each "@tagk" replaced by the series' value of that tag (the longest
 * tag key that matches at each '@'; an '@' matching none stays). */
static char *alias_name(const char *tmpl, const struct qgexp_series *s)
{
    char *out = NULL;
    size_t n = 0;
    if (append(&out, &n, "", 0) != CT_OK)
        return NULL;
    for (const char *c = tmpl; *c;) {
        size_t best = 0, bi = 0;
        if (*c == '@')
            for (size_t i = 0; i < s->ntags; i++) {
                size_t kl = strlen(s->tagk[i]);
                if (kl > best && strncmp(c + 1, s->tagk[i], kl) == 0) {
                    best = kl;
                    bi = i;
                }
            }
        int rc = best ? append(&out, &n, s->tagv[bi], strlen(s->tagv[bi])) : append(&out, &n, c, 1);
        if (rc != CT_OK) {
            free(out);
            return NULL;
        }
        c += best ? best + 1 : 1;
    }
    return out;
}

static int fn_alias(const struct args *a, struct qgexp_set *out, struct ct_err *err)
{
    if (a->narg == 0)
        return ct_err_set(err, CT_EINVAL, "Missing the alias");
    char *tmpl = NULL; /* the arguments joined by ',' */
    size_t tn = 0;
    for (size_t i = 0; i < a->narg; i++)
        if ((i && append(&tmpl, &tn, ",", 1) != CT_OK) ||
            append(&tmpl, &tn, a->arg[i], strlen(a->arg[i])) != CT_OK) {
            free(tmpl);
            return oom(err);
        }
    int rc = CT_OK;
    for (size_t k = 0; k < a->nsets && rc == CT_OK; k++)
        for (size_t i = 0; i < a->sets[k]->n && rc == CT_OK; i++) {
            const struct qgexp_series *src = &a->sets[k]->s[i];
            char *name = alias_name(tmpl, src);
            struct qgexp_series *s = name ? qgexp_set_add(out, name, NULL, NULL, 0, NULL, 0) : NULL;
            free(name);
            if (s == NULL) {
                rc = oom(err);
                break;
            }
            for (size_t j = 0; j < src->n && rc == CT_OK; j++)
                if (qgexp_series_push(s, &src->p[j]) != CT_OK)
                    rc = oom(err);
        }
    free(tmpl);
    return rc;
}

/* A quoted duration 'N<unit>' in milliseconds, the units given as (name, ms) pairs; -1 with err
 * set when it is not one. */
struct unit {
    const char *name;
    int64_t ms;
};

static int64_t quoted_duration(const char *s, const struct unit *units, size_t nunits,
                               const char *what, struct ct_err *err)
{
    size_t len = strlen(s);
    if (len < 3 || s[0] != '\'' || s[len - 1] != '\'') {
        ct_err_set(err, CT_EINVAL, "Invalid %s parameter, eg '10min': %s", what, s);
        return -1;
    }
    size_t d = 1;
    int64_t v = 0;
    while (isdigit((unsigned char)s[d]) && v < INT64_MAX / 10000000000LL)
        v = v * 10 + (s[d++] - '0');
    if (d == 1 || isdigit((unsigned char)s[d])) {
        ct_err_set(err, CT_EINVAL, "Invalid %s parameter: %s", what, s);
        return -1;
    }
    size_t ul = len - 1 - d;
    for (size_t i = 0; i < nunits; i++)
        if (strlen(units[i].name) == ul && strncmp(s + d, units[i].name, ul) == 0)
            return v * units[i].ms;
    ct_err_set(err, CT_EINVAL, "Unknown time unit=%.*s in %s=%s", (int)ul, s + d, what, s);
    return -1;
}

static const struct unit WINDOW_UNITS[] = {
    {"day", 86400000}, {"d", 86400000}, {"hr", 3600000}, {"hour", 3600000}, {"h", 3600000},
    {"min", 60000},    {"m", 60000},    {"sec", 1000},   {"s", 1000},
};
static const struct unit SHIFT_UNITS[] = {
    {"sec", 1000},        {"min", 60000},       {"hr", 3600000},       {"day", 86400000},
    {"days", 86400000},   {"week", 604800000},  {"weeks", 604800000},
};

/* movingAverage over one series: at each point, the average of the non-NaN values of the last
 * `count` points (count window) or of the points less than `window_ms` before it (time window;
 * 0 until a point that far back exists), or 0 while the window is not yet full. */
static int moving_average(const struct qgexp_series *src, int64_t count, int64_t window_ms,
                          int64_t start_ms, int64_t end_ms, struct qgexp_series *s)
{
    size_t first = 0, last = src->n;
    while (first < last && src->p[first].ts_ms < start_ms)
        first++;
    while (last > first && src->p[last - 1].ts_ms > end_ms)
        last--;
    for (size_t i = first; i < last; i++) {
        double sum = 0;
        int64_t n = 0;
        bool full = false;
        for (size_t j = i + 1; j-- > first;) {
            if (window_ms > 0 && src->p[i].ts_ms - src->p[j].ts_ms >= window_ms) {
                full = true;
                break;
            }
            double v = qagg_point_double(&src->p[j]);
            if (!isnan(v)) {
                sum += v;
                n++;
            }
            if (window_ms == 0 && n >= count) {
                full = true;
                break;
            }
        }
        struct qagg_point pt = {.ts_ms = src->p[i].ts_ms, .v.d = full && n ? sum / (double)n : 0};
        if (qgexp_series_push(s, &pt) != CT_OK)
            return CT_ENOMEM;
    }
    return CT_OK;
}

static int fn_moving_average(const struct args *a, struct qgexp_set *out, struct ct_err *err)
{
    if (a->narg == 0 || a->arg[0][0] == '\0')
        return ct_err_set(err, CT_EINVAL, "Missing moving average window size");
    const char *w = a->arg[0];
    int64_t count = 0, window_ms = 0;
    if (all_of(w, "0123456789")) {
        count = strlen(w) > 9 ? -1 : strtoll(w, NULL, 10);
    } else if (w[0] == '\'') {
        window_ms = quoted_duration(w, WINDOW_UNITS, sizeof(WINDOW_UNITS) / sizeof(WINDOW_UNITS[0]),
                                    "window", err);
        if (window_ms < 0)
            return CT_EINVAL;
    } else {
        return ct_err_set(err, CT_EINVAL, "Unparseable window size: %s", w);
    }
    if (count <= 0 && window_ms <= 0)
        return ct_err_set(err, CT_EINVAL,
                          "Moving average window must be an integer greater than zero");
    for (size_t k = 0; k < a->nsets; k++)
        for (size_t i = 0; i < a->sets[k]->n; i++) {
            struct qgexp_series *s = add_like(out, &a->sets[k]->s[i]);
            if (s == NULL || moving_average(&a->sets[k]->s[i], count, window_ms, a->start_ms,
                                            a->end_ms, s) != CT_OK)
                return oom(err);
        }
    return CT_OK;
}

struct ranked {
    const struct qgexp_series *s;
    double key;
    size_t pos;
};

static int cmp_ranked(const void *x, const void *y)
{
    const struct ranked *a = x, *b = y;
    if (a->key != b->key)
        return a->key > b->key ? -1 : 1;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* highestCurrent / highestMax: the n series with the greatest last value / maximum within the
 * range (NaN values ignored; a series with none ranks last; highestCurrent leaves out series
 * without points, as OpenTSDB does), greatest first, ties in input order. */
static int fn_highest(const struct args *a, bool current, struct qgexp_set *out,
                      struct ct_err *err)
{
    if (a->narg == 0 || a->arg[0][0] == '\0')
        return ct_err_set(err, CT_EINVAL, "Missing top n value (number of series to return)");
    if (!all_of(a->arg[0], "0123456789") || strlen(a->arg[0]) > 9)
        return ct_err_set(err, CT_EINVAL, "Unparseable top n value: %s", a->arg[0]);
    size_t topn = (size_t)strtoul(a->arg[0], NULL, 10);
    if (topn < 1)
        return ct_err_set(err, CT_EINVAL, "Top n value must be greater than zero: %zu", topn);
    size_t total = 0;
    for (size_t k = 0; k < a->nsets; k++)
        total += a->sets[k]->n;
    struct ranked *r = calloc(total ? total : 1, sizeof(*r));
    if (r == NULL)
        return oom(err);
    size_t nr = 0;
    for (size_t k = 0; k < a->nsets; k++)
        for (size_t i = 0; i < a->sets[k]->n; i++) {
            const struct qgexp_series *s = &a->sets[k]->s[i];
            if (current && s->n == 0)
                continue;
            double key = -INFINITY;
            bool seen = false;
            for (size_t j = 0; j < s->n; j++) {
                double v = qagg_point_double(&s->p[j]);
                if (s->p[j].ts_ms < a->start_ms || s->p[j].ts_ms > a->end_ms || isnan(v))
                    continue;
                if (current || !seen || v > key)
                    key = v;
                seen = true;
            }
            r[nr] = (struct ranked){s, key, nr};
            nr++;
        }
    qsort(r, nr, sizeof(*r), cmp_ranked);
    int rc = CT_OK;
    for (size_t i = 0; i < nr && i < topn && rc == CT_OK; i++) {
        struct qgexp_series *s = add_like(out, r[i].s);
        if (s == NULL)
            rc = oom(err);
        for (size_t j = 0; s && j < r[i].s->n && rc == CT_OK; j++)
            if (qgexp_series_push(s, &r[i].s->p[j]) != CT_OK)
                rc = oom(err);
    }
    free(r);
    return rc;
}

/* shift / timeShift: the first series parameter's points moved later by the duration. */
static int fn_shift(const struct args *a, struct qgexp_set *out, struct ct_err *err)
{
    if (a->narg == 0 || a->arg[0][0] == '\0')
        return ct_err_set(err, CT_EINVAL, "Need amount of timeshift to perform timeshift");
    int64_t shift = quoted_duration(a->arg[0], SHIFT_UNITS,
                                    sizeof(SHIFT_UNITS) / sizeof(SHIFT_UNITS[0]), "timeshift", err);
    if (shift < 0)
        return CT_EINVAL;
    if (shift == 0)
        return ct_err_set(err, CT_EINVAL, "timeshift <= 0");
    if (a->nsets == 0)
        return CT_OK;
    for (size_t i = 0; i < a->sets[0]->n; i++) {
        const struct qgexp_series *src = &a->sets[0]->s[i];
        struct qgexp_series *s = add_like(out, src);
        if (s == NULL)
            return oom(err);
        for (size_t j = 0; j < src->n; j++) {
            struct qagg_point pt = src->p[j];
            pt.ts_ms += shift;
            if (qgexp_series_push(s, &pt) != CT_OK)
                return oom(err);
        }
    }
    return CT_OK;
}

/* The tag set of s as a join key: "k1=v1,k2=v2" (tags are sorted by key). */
static char *join_key(const struct qgexp_series *s)
{
    char *k = NULL;
    size_t n = 0;
    if (append(&k, &n, "", 0) != CT_OK)
        return NULL;
    for (size_t i = 0; i < s->ntags; i++)
        if ((i && append(&k, &n, ",", 1) != CT_OK) ||
            append(&k, &n, s->tagk[i], strlen(s->tagk[i])) != CT_OK ||
            append(&k, &n, "=", 1) != CT_OK ||
            append(&k, &n, s->tagv[i], strlen(s->tagv[i])) != CT_OK) {
            free(k);
            return NULL;
        }
    return k;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The series of one result key: named after the first operand series with that key (its metric
 * and tags), with the aggregated tag keys of every operand series with that key. */
static int series_result(const struct args *a, char *const *const *keys,
                         const struct qexpr_result *res, struct qgexp_set *out)
{
    const struct qgexp_series *first = NULL;
    const char *agg[256];
    size_t nagg = 0;
    for (size_t k = 0; k < a->nsets; k++)
        for (size_t i = 0; i < a->sets[k]->n; i++) {
            if (keys[k][i] == NULL || strcmp(keys[k][i], res->key) != 0)
                continue;
            const struct qgexp_series *s = &a->sets[k]->s[i];
            if (first == NULL)
                first = s;
            for (size_t g = 0; g < s->nagg && nagg < 256; g++) {
                bool dup = false;
                for (size_t h = 0; h < nagg && !dup; h++)
                    dup = strcmp(agg[h], s->agg[g]) == 0;
                if (!dup)
                    agg[nagg++] = s->agg[g];
            }
            break; /* one series per key and operand */
        }
    if (first == NULL)
        return CT_OK;
    qsort(agg, nagg, sizeof(agg[0]), cmp_str);
    struct qgexp_series *s =
        qgexp_set_add(out, first->metric, (const char *const *)first->tagk,
                      (const char *const *)first->tagv, first->ntags, agg, nagg);
    if (s == NULL)
        return CT_ENOMEM;
    for (size_t j = 0; j < res->n; j++) {
        struct qagg_point pt = {.ts_ms = res->ts[j], .v.d = res->v[j]};
        if (qgexp_series_push(s, &pt) != CT_OK)
            return CT_ENOMEM;
    }
    return CT_OK;
}

/* sumSeries, diffSeries, multiplySeries, divideSeries: the series parameters a, b, c... joined
 * by tag set (a union; an operand without a series of that tag set, or without a point at a
 * timestamp, counts 0) and combined point-wise with op. */
static int fn_series(const struct args *a, char op, struct qgexp_set *out, struct ct_err *err)
{
    if (a->nsets < 2 || a->nsets > GEXP_MAX_SETS)
        return ct_err_set(err, CT_EINVAL, "Must have 2 to 26 series, got %zu instead", a->nsets);
    char src[4 * GEXP_MAX_SETS + 1];
    char ids[GEXP_MAX_SETS][2];
    size_t n = 0;
    for (size_t k = 0; k < a->nsets; k++) {
        if (k) {
            src[n++] = ' ';
            src[n++] = op;
            src[n++] = ' ';
        }
        src[n++] = (char)('a' + k);
        ids[k][0] = (char)('a' + k);
        ids[k][1] = '\0';
    }
    src[n] = '\0';
    struct qexpr *x = NULL;
    struct qexpr_input in[GEXP_MAX_SETS] = {0};
    char **keys[GEXP_MAX_SETS] = {0};
    struct qexpr_series *ser[GEXP_MAX_SETS] = {0};
    double *vals[GEXP_MAX_SETS] = {0};
    int64_t *tss[GEXP_MAX_SETS] = {0};
    struct qexpr_result *res = NULL;
    size_t nres = 0;
    int rc = qexpr_parse(src, &x, err);
    for (size_t k = 0; k < a->nsets && rc == CT_OK; k++) {
        const struct qgexp_set *set = a->sets[k];
        size_t npts = 0;
        for (size_t i = 0; i < set->n; i++)
            npts += set->s[i].n;
        keys[k] = calloc(set->n ? set->n : 1, sizeof(*keys[k]));
        ser[k] = calloc(set->n ? set->n : 1, sizeof(*ser[k]));
        vals[k] = calloc(npts ? npts : 1, sizeof(*vals[k]));
        tss[k] = calloc(npts ? npts : 1, sizeof(*tss[k]));
        if (!keys[k] || !ser[k] || !vals[k] || !tss[k]) {
            rc = oom(err);
            break;
        }
        size_t used = 0, ns = 0;
        for (size_t i = 0; i < set->n && rc == CT_OK; i++) {
            const struct qgexp_series *s = &set->s[i];
            if ((keys[k][i] = join_key(s)) == NULL) {
                rc = oom(err);
                break;
            }
            bool dup = false; /* a tag set twice in one operand: the first one counts */
            for (size_t j = 0; j < ns && !dup; j++)
                dup = strcmp(ser[k][j].key, keys[k][i]) == 0;
            if (dup) { /* matches no result key */
                free(keys[k][i]);
                keys[k][i] = NULL;
                continue;
            }
            size_t m = 0;
            for (size_t j = 0; j < s->n; j++) {
                if (m && s->p[j].ts_ms <= tss[k][used + m - 1])
                    continue; /* ascending, no duplicates */
                tss[k][used + m] = s->p[j].ts_ms;
                vals[k][used + m] = qagg_point_double(&s->p[j]);
                m++;
            }
            ser[k][ns++] =
                (struct qexpr_series){keys[k][i], m, tss[k] + used, vals[k] + used, NULL};
            used += m;
        }
        in[k] = (struct qexpr_input){.id = ids[k], .series = ser[k], .nseries = ns,
                                     .fill = QEXPR_FILL_ZERO};
    }
    if (rc == CT_OK)
        rc = qexpr_eval(x, in, a->nsets, QEXPR_JOIN_UNION, &res, &nres, err);
    for (size_t r = 0; r < nres && rc == CT_OK; r++)
        if (series_result(a, (char *const *const *)keys, &res[r], out) != CT_OK)
            rc = oom(err);
    qexpr_results_free(res, nres);
    qexpr_free(x);
    for (size_t k = 0; k < a->nsets; k++) {
        for (size_t i = 0; keys[k] && i < a->sets[k]->n; i++)
            free(keys[k][i]);
        free(keys[k]);
        free(ser[k]);
        free(vals[k]);
        free(tss[k]);
    }
    return rc;
}

/* ---- evaluation -------------------------------------------------------------------------- */

static int eval_node(const struct qgexp *e, const struct node *n, const struct qgexp_set *in,
                     int64_t start_ms, int64_t end_ms, struct qgexp_set *out, struct ct_err *err)
{
    struct args a = {.start_ms = start_ms, .end_ms = end_ms};
    struct qgexp_set subs[GEXP_MAX_PARAMS] = {0};
    size_t nsubs = 0;
    int rc = CT_OK;
    for (size_t i = 0; i < n->np && rc == CT_OK; i++) {
        const struct param *p = &n->p[i];
        if (p->kind == P_ARG) {
            a.arg[a.narg++] = p->arg;
        } else if (p->kind == P_QUERY) {
            a.sets[a.nsets++] = &in[p->query];
        } else {
            rc = eval_node(e, p->sub, in, start_ms, end_ms, &subs[nsubs], err);
            a.sets[a.nsets++] = &subs[nsubs++];
        }
    }
    /* no series parameter (no metric query, no function): no series, whatever the arguments,
     * as every OpenTSDB function answers empty results before it reads its arguments */
    if (rc == CT_OK && a.nsets > 0) {
        switch (n->fn) {
        case F_ALIAS:
            rc = fn_alias(&a, out, err);
            break;
        case F_SCALE:
            rc = fn_scale(&a, out, err);
            break;
        case F_ABSOLUTE:
            rc = fn_absolute(&a, out, err);
            break;
        case F_MOVING_AVERAGE:
            rc = fn_moving_average(&a, out, err);
            break;
        case F_HIGHEST_CURRENT:
            rc = fn_highest(&a, true, out, err);
            break;
        case F_HIGHEST_MAX:
            rc = fn_highest(&a, false, out, err);
            break;
        case F_SHIFT:
            rc = fn_shift(&a, out, err);
            break;
        case F_SUM:
            rc = fn_series(&a, '+', out, err);
            break;
        case F_DIFF:
            rc = fn_series(&a, '-', out, err);
            break;
        case F_MULTIPLY:
            rc = fn_series(&a, '*', out, err);
            break;
        case F_DIVIDE:
            rc = fn_series(&a, '/', out, err);
            break;
        }
    }
    for (size_t i = 0; i < nsubs; i++)
        qgexp_set_clear(&subs[i]);
    return rc;
}

int qgexp_eval(const struct qgexp *e, const struct qgexp_set *in, int64_t start_ms,
               int64_t end_ms, struct qgexp_set *out, struct ct_err *err)
{
    int rc = eval_node(e, e->root, in, start_ms, end_ms, out, err);
    if (rc != CT_OK)
        qgexp_set_clear(out);
    return rc;
}
