/* qexpr.c - the /api/query/exp expression: a recursive-descent parser into a small tree and its
 * evaluation over joined series (see qexpr.h for the model).
 *
 * Invariants: (1) the tree is built once and never changed; variables are numbered in first-use
 * order and a node refers to its variable by number; (2) every result series of one evaluation
 * has the same timestamps, those of every operand series evaluated (OpenTSDB's time-synced
 * iteration), an operand lacking one taking its fill value; each key's operands are merged in
 * one pass per operand (cursors only move forward); (3) as OpenTSDB's union and expression
 * iterators: an operand with no series of a key (a union) counts 0 at every timestamp, whatever
 * its fill policy (UnionIterator's own zero fill), while a missing point or a NaN value of an
 * operand's series takes that operand's fill value (ExpressionIterator binds NaN to it). */
#include "query/qexpr.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define QEXPR_MAX_DEPTH 64
#define QEXPR_MAX_VARS  26
/* the most values one evaluation may produce (series x timestamps): 2^26 doubles, 512 MiB with
 * their timestamps */
#define QEXPR_MAX_CELLS ((size_t)1 << 26)

enum node_kind {
    N_NUM,
    N_VAR,
    N_NEG,
    N_ADD,
    N_SUB,
    N_MUL,
    N_DIV,
    N_MOD, /* % : fmod, the dividend's sign (Java's % on doubles) */
    N_LT,  /* the comparisons give 1 or 0 (JEXL's booleans as OpenTSDB counts them) */
    N_GT,
    N_LE,
    N_GE,
    N_EQ,
    N_NE,
    N_NOT,  /* ! and the logical operators give 1 or 0 too; an operand is true when it is */
    N_AND,  /* neither 0 nor NaN (JEXL's toBoolean of a number); && and || stop early */
    N_OR,
    N_COND, /* c ? l : r */
    N_ELVIS /* l ?: r (l when true, else r) */
};

struct node {
    enum node_kind kind;
    double num;
    size_t var;
    struct node *l, *r, *c; /* c: N_COND's condition */
};

struct qexpr {
    struct node *root;
    char *vars[QEXPR_MAX_VARS];
    size_t nvars;
};

struct parser {
    const char *src, *p;
    struct qexpr *e;
    int depth;
    struct ct_err *err;
};

static void node_free(struct node *n)
{
    if (n == NULL)
        return;
    node_free(n->l);
    node_free(n->r);
    node_free(n->c);
    free(n);
}

static struct node *node_new(struct parser *ps, enum node_kind k)
{
    struct node *n = calloc(1, sizeof(*n));
    if (n == NULL)
        ct_err_set(ps->err, CT_ENOMEM, "out of memory");
    else
        n->kind = k;
    return n;
}

static void skip_ws(struct parser *ps)
{
    while (isspace((unsigned char)*ps->p))
        ps->p++;
}

static struct node *fail(struct parser *ps, const char *what)
{
    ct_err_set(ps->err, CT_EINVAL, "expression: %s at position %zu", what,
               (size_t)(ps->p - ps->src));
    return NULL;
}

static struct node *parse_expr(struct parser *ps);

static struct node *parse_var(struct parser *ps)
{
    const char *b = ps->p;
    while (isalnum((unsigned char)*ps->p) || *ps->p == '_' || *ps->p == '.')
        ps->p++;
    size_t len = (size_t)(ps->p - b);
    size_t i;
    for (i = 0; i < ps->e->nvars; i++)
        if (strlen(ps->e->vars[i]) == len && memcmp(ps->e->vars[i], b, len) == 0)
            break;
    if (i == ps->e->nvars) {
        if (i == QEXPR_MAX_VARS)
            return fail(ps, "too many variables");
        ps->e->vars[i] = strndup(b, len);
        if (ps->e->vars[i] == NULL) {
            ct_err_set(ps->err, CT_ENOMEM, "out of memory");
            return NULL;
        }
        ps->e->nvars++;
    }
    struct node *n = node_new(ps, N_VAR);
    if (n != NULL)
        n->var = i;
    return n;
}

static struct node *parse_atom(struct parser *ps)
{
    skip_ws(ps);
    if (++ps->depth > QEXPR_MAX_DEPTH)
        return fail(ps, "nested too deeply");
    struct node *n = NULL;
    char c = *ps->p;
    if (c == '(') {
        ps->p++;
        n = parse_expr(ps);
        if (n == NULL)
            return NULL;
        skip_ws(ps);
        if (*ps->p != ')') {
            node_free(n);
            return fail(ps, "expected ')'");
        }
        ps->p++;
    } else if (c == '-' || (c == '!' && ps->p[1] != '=')) {
        ps->p++;
        struct node *child = parse_atom(ps);
        if (child == NULL)
            return NULL;
        n = node_new(ps, c == '-' ? N_NEG : N_NOT);
        if (n == NULL) {
            node_free(child);
            return NULL;
        }
        n->l = child;
    } else if (isdigit((unsigned char)c) || c == '.') {
        char *end;
        double v = strtod(ps->p, &end);
        if (end == ps->p)
            return fail(ps, "bad number");
        ps->p = end;
        n = node_new(ps, N_NUM);
        if (n != NULL)
            n->num = v;
    } else if (isalpha((unsigned char)c) || c == '_') {
        n = parse_var(ps);
    } else {
        return fail(ps, c == '\0' ? "unexpected end" : "unexpected character");
    }
    ps->depth--;
    return n;
}

/* One precedence level (left associative): ops[i] (one or two characters, the longer listed
 * first) gives kinds[i]. */
static struct node *parse_ops(struct parser *ps, struct node *(*sub)(struct parser *),
                              const char *const *ops, const enum node_kind *kinds, size_t nops)
{
    struct node *l = sub(ps);
    while (l != NULL) {
        skip_ws(ps);
        size_t i = 0;
        while (i < nops && strncmp(ps->p, ops[i], strlen(ops[i])) != 0)
            i++;
        if (i == nops)
            break;
        ps->p += strlen(ops[i]);
        struct node *r = sub(ps);
        struct node *n = r != NULL ? node_new(ps, kinds[i]) : NULL;
        if (n == NULL) {
            node_free(l);
            node_free(r);
            return NULL;
        }
        n->l = l;
        n->r = r;
        l = n;
    }
    return l;
}

static struct node *parse_product(struct parser *ps)
{
    static const char *const ops[] = {"*", "/", "%"};
    static const enum node_kind kinds[] = {N_MUL, N_DIV, N_MOD};
    return parse_ops(ps, parse_atom, ops, kinds, 3);
}

static struct node *parse_sum(struct parser *ps)
{
    static const char *const ops[] = {"+", "-"};
    static const enum node_kind kinds[] = {N_ADD, N_SUB};
    return parse_ops(ps, parse_product, ops, kinds, 2);
}

static struct node *parse_rel(struct parser *ps)
{
    static const char *const ops[] = {"<=", ">=", "<", ">"};
    static const enum node_kind kinds[] = {N_LE, N_GE, N_LT, N_GT};
    return parse_ops(ps, parse_sum, ops, kinds, 4);
}

/* Equality below the relations, below + and - (JEXL's order). */
static struct node *parse_eq(struct parser *ps)
{
    static const char *const ops[] = {"==", "!="};
    static const enum node_kind kinds[] = {N_EQ, N_NE};
    return parse_ops(ps, parse_rel, ops, kinds, 2);
}

static struct node *parse_and(struct parser *ps)
{
    static const char *const ops[] = {"&&"};
    static const enum node_kind kinds[] = {N_AND};
    return parse_ops(ps, parse_eq, ops, kinds, 1);
}

static struct node *parse_or(struct parser *ps)
{
    static const char *const ops[] = {"||"};
    static const enum node_kind kinds[] = {N_OR};
    return parse_ops(ps, parse_and, ops, kinds, 1);
}

/* The whole expression: a condition `c ? a : b` or `a ?: b` (right associative, JEXL's lowest
 * level) over ||, over &&, over equality. */
static struct node *parse_expr(struct parser *ps)
{
    struct node *cond = parse_or(ps);
    if (cond == NULL)
        return NULL;
    skip_ws(ps);
    if (*ps->p != '?')
        return cond;
    ps->p++;
    if (++ps->depth > QEXPR_MAX_DEPTH) { /* a chain of conditions nests to the right */
        node_free(cond);
        return fail(ps, "nested too deeply");
    }
    skip_ws(ps);
    bool elvis = *ps->p == ':';
    struct node *l = NULL, *r = NULL, *n = NULL;
    bool ok;
    if (elvis) { /* a ?: b */
        ps->p++;
        l = cond;
        cond = NULL;
        ok = true;
    } else { /* c ? a : b */
        ok = (l = parse_expr(ps)) != NULL;
        if (ok) {
            skip_ws(ps);
            ok = *ps->p == ':';
            if (ok)
                ps->p++;
            else
                (void)fail(ps, "expected ':'");
        }
    }
    if (ok && (r = parse_expr(ps)) != NULL)
        n = node_new(ps, elvis ? N_ELVIS : N_COND);
    if (n == NULL) {
        node_free(cond);
        node_free(l);
        node_free(r);
        return NULL;
    }
    n->c = cond;
    n->l = l;
    n->r = r;
    ps->depth--;
    return n;
}

void qexpr_free(struct qexpr *e)
{
    if (e == NULL)
        return;
    node_free(e->root);
    for (size_t i = 0; i < e->nvars; i++)
        free(e->vars[i]);
    free(e);
}

int qexpr_parse(const char *src, struct qexpr **out, struct ct_err *err)
{
    *out = NULL;
    struct qexpr *e = calloc(1, sizeof(*e));
    if (e == NULL)
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    struct parser ps = {.src = src, .p = src, .e = e, .err = err};
    e->root = parse_expr(&ps);
    if (e->root != NULL) {
        skip_ws(&ps);
        if (*ps.p != '\0')
            (void)fail(&ps, "unexpected character");
        else {
            *out = e;
            return 0;
        }
    }
    qexpr_free(e);
    return err->code;
}

size_t qexpr_nvars(const struct qexpr *e)
{
    return e->nvars;
}

const char *qexpr_var(const struct qexpr *e, size_t i)
{
    return i < e->nvars ? e->vars[i] : NULL;
}

int qexpr_fill_parse(const char *name)
{
    if (strcmp(name, "nan") == 0)
        return QEXPR_FILL_NAN;
    if (strcmp(name, "zero") == 0)
        return QEXPR_FILL_ZERO;
    if (strcmp(name, "scalar") == 0)
        return QEXPR_FILL_SCALAR;
    if (strcmp(name, "none") == 0)
        return QEXPR_FILL_NONE;
    if (strcmp(name, "null") == 0)
        return QEXPR_FILL_NULL;
    return -1;
}

/* A number as a condition: true unless 0 or NaN (JEXL's toBoolean of a number). */
static bool truth(double v)
{
    return v != 0 && !isnan(v);
}

static double eval_node(const struct node *n, const double *vals)
{
    switch (n->kind) {
    case N_NUM:
        return n->num;
    case N_VAR:
        return vals[n->var];
    case N_NEG:
        return -eval_node(n->l, vals);
    case N_ADD:
        return eval_node(n->l, vals) + eval_node(n->r, vals);
    case N_SUB:
        return eval_node(n->l, vals) - eval_node(n->r, vals);
    case N_MUL:
        return eval_node(n->l, vals) * eval_node(n->r, vals);
    /* a zero divisor gives 0, as JEXL's lenient arithmetic (OpenTSDB's engine) answers the
     * ArithmeticException it raises for / and % by zero */
    case N_DIV: {
        double d = eval_node(n->r, vals);
        return d == 0 ? 0 : eval_node(n->l, vals) / d;
    }
    case N_MOD: {
        double d = eval_node(n->r, vals);
        return d == 0 ? 0 : fmod(eval_node(n->l, vals), d);
    }
    case N_LT:
        return eval_node(n->l, vals) < eval_node(n->r, vals);
    case N_GT:
        return eval_node(n->l, vals) > eval_node(n->r, vals);
    case N_LE:
        return eval_node(n->l, vals) <= eval_node(n->r, vals);
    case N_GE:
        return eval_node(n->l, vals) >= eval_node(n->r, vals);
    case N_EQ:
        return eval_node(n->l, vals) == eval_node(n->r, vals);
    case N_NE:
        return eval_node(n->l, vals) != eval_node(n->r, vals);
    case N_NOT:
        return !truth(eval_node(n->l, vals));
    case N_AND:
        return truth(eval_node(n->l, vals)) && truth(eval_node(n->r, vals));
    case N_OR:
        return truth(eval_node(n->l, vals)) || truth(eval_node(n->r, vals));
    case N_COND:
        return truth(eval_node(n->c, vals)) ? eval_node(n->l, vals) : eval_node(n->r, vals);
    case N_ELVIS: {
        double l = eval_node(n->l, vals);
        return truth(l) ? l : eval_node(n->r, vals);
    }
    }
    return NAN;
}

void qexpr_results_free(struct qexpr_result *r, size_t n)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < n; i++) {
        free(r[i].key);
        free(r[i].agg);
        free(r[i].ts);
        free(r[i].v);
    }
    free(r);
}

static const struct qexpr_series *find_key(const struct qexpr_input *in, const char *key)
{
    for (size_t i = 0; i < in->nseries; i++)
        if (strcmp(in->series[i].key, key) == 0)
            return &in->series[i];
    return NULL;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static double fill_value(const struct qexpr_input *in)
{
    switch (in->fill) {
    case QEXPR_FILL_ZERO:
        return 0;
    case QEXPR_FILL_SCALAR:
        return in->fill_value;
    case QEXPR_FILL_NAN:
    case QEXPR_FILL_NONE:
    case QEXPR_FILL_NULL:
        break;
    }
    return NAN;
}

/* Evaluates one key at every timestamp of ts[0..nts) (2): s[v] is variable v's series (NULL =
 * filled throughout); e NULL: the value of the single variable. */
static int eval_key(const struct qexpr *e, size_t nvars, const struct qexpr_input *const *inp,
                    const struct qexpr_series *const *s, const char *key, const int64_t *ts,
                    size_t nts, struct qexpr_result *res, struct ct_err *err)
{
    res->key = strdup(key);
    res->ts = malloc((nts ? nts : 1) * sizeof(*res->ts));
    res->v = malloc((nts ? nts : 1) * sizeof(*res->v));
    if (res->key == NULL || res->ts == NULL || res->v == NULL)
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    size_t cur[QEXPR_MAX_VARS] = {0};
    double vals[QEXPR_MAX_VARS];
    for (size_t t = 0; t < nts; t++) {
        for (size_t v = 0; v < nvars; v++) {
            if (s[v] == NULL) { /* (3) */
                vals[v] = 0;
            } else if (cur[v] < s[v]->n && s[v]->ts[cur[v]] == ts[t]) {
                vals[v] = s[v]->v[cur[v]++];
                if (isnan(vals[v]) && e != NULL) /* (3) */
                    vals[v] = fill_value(inp[v]);
            } else {
                vals[v] = fill_value(inp[v]);
            }
        }
        res->ts[res->n] = ts[t];
        res->v[res->n++] = e != NULL ? eval_node(e->root, vals) : vals[0];
    }
    return 0;
}

/* The shared evaluation: nvars variables (inputs inp[]), e NULL for a single input's copy. */
static int eval_inputs(const struct qexpr *e, size_t nvars, const struct qexpr_input *const *inp,
                       enum qexpr_join join, struct qexpr_result **out, size_t *nout,
                       struct ct_err *err)
{
    size_t nkeys_max = 0;
    for (size_t v = 0; v < nvars; v++)
        nkeys_max += inp[v]->nseries;
    /* The candidate keys: every key of every variable, sorted, duplicates removed. */
    const char **keys = malloc((nkeys_max ? nkeys_max : 1) * sizeof(*keys));
    const struct qexpr_series **sel = malloc((nkeys_max ? nkeys_max : 1) * nvars * sizeof(*sel));
    if (keys == NULL || sel == NULL) {
        free(keys);
        free(sel);
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    }
    size_t nk = 0;
    for (size_t v = 0; v < nvars; v++)
        for (size_t i = 0; i < inp[v]->nseries; i++)
            keys[nk++] = inp[v]->series[i].key;
    qsort(keys, nk, sizeof(*keys), cmp_str);
    /* the keys evaluated, each with its operands' series (sel[k * nvars + v]), and how many
     * timestamps those series hold at most */
    size_t nsel = 0, npts = 0;
    for (size_t k = 0; k < nk; k++) {
        if (k > 0 && strcmp(keys[k], keys[k - 1]) == 0)
            continue;
        const struct qexpr_series **s = &sel[nsel * nvars];
        bool all = true;
        for (size_t v = 0; v < nvars; v++) {
            s[v] = find_key(inp[v], keys[k]);
            all = all && s[v] != NULL;
        }
        if (join == QEXPR_JOIN_INTERSECTION && !all)
            continue;
        for (size_t v = 0; v < nvars; v++)
            npts += s[v] != NULL ? s[v]->n : 0;
        keys[nsel++] = keys[k];
    }
    /* (2) the timestamps: those of every series evaluated, sorted, duplicates removed */
    int64_t *ts = malloc((npts ? npts : 1) * sizeof(*ts));
    struct qexpr_result *res = calloc(nsel ? nsel : 1, sizeof(*res));
    int rc = 0;
    size_t nts = 0, nres = 0;
    if (ts == NULL || res == NULL) {
        rc = ct_err_set(err, CT_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < nsel * nvars; i++)
        if (sel[i] != NULL) {
            memcpy(ts + nts, sel[i]->ts, sel[i]->n * sizeof(*ts));
            nts += sel[i]->n;
        }
    qsort(ts, nts, sizeof(*ts), cmp_i64);
    size_t u = 0;
    for (size_t i = 0; i < nts; i++)
        if (u == 0 || ts[i] != ts[u - 1])
            ts[u++] = ts[i];
    nts = u;
    if (nsel > 0 && nts > QEXPR_MAX_CELLS / nsel) {
        rc =
            ct_err_set(err, CT_ELIMIT, "expression: %zu series x %zu timestamps exceed %llu values",
                       nsel, nts, (unsigned long long)QEXPR_MAX_CELLS);
        goto done;
    }
    for (size_t k = 0; k < nsel && rc == 0; k++)
        rc = eval_key(e, nvars, inp, &sel[k * nvars], keys[k], ts, nts, &res[nres++], err);
done:
    free(keys);
    free(sel);
    free(ts);
    if (rc != 0) {
        qexpr_results_free(res, nres);
        return rc;
    }
    *out = res;
    *nout = nres;
    return 0;
}

/* inp[v] = the input named by e's variable v (the last of that id): CT_EINVAL naming a
 * variable no input has. */
static int find_inputs(const struct qexpr *e, const struct qexpr_input *in, size_t nin,
                       const struct qexpr_input **inp, struct ct_err *err)
{
    if (e->nvars == 0) /* parsed, but nothing to join or evaluate over */
        return ct_err_set(err, CT_EINVAL, "expression: names no metric");
    for (size_t v = 0; v < e->nvars; v++) {
        inp[v] = NULL;
        for (size_t i = 0; i < nin; i++)
            if (strcmp(in[i].id, e->vars[v]) == 0)
                inp[v] = &in[i];
        if (inp[v] == NULL)
            return ct_err_set(err, CT_EINVAL, "expression: no metric or expression with id '%s'",
                              e->vars[v]);
    }
    return 0;
}

int qexpr_eval(const struct qexpr *e, const struct qexpr_input *in, size_t nin,
               enum qexpr_join join, struct qexpr_result **out, size_t *nout, struct ct_err *err)
{
    *out = NULL;
    *nout = 0;
    const struct qexpr_input *inp[QEXPR_MAX_VARS];
    if (find_inputs(e, in, nin, inp, err) != 0)
        return err->code;
    return eval_inputs(e, e->nvars, inp, join, out, nout, err);
}

/* Appends the n bytes of s to out[*len..cap) (room for the NUL kept); false if they do not fit. */
static bool put_bytes(char *out, size_t cap, size_t *len, const char *s, size_t n)
{
    if (*len + n + 1 > cap)
        return false;
    memcpy(out + *len, s, n);
    *len += n;
    out[*len] = '\0';
    return true;
}

int qexpr_join_key(const char *tags, const char *agg, const char *const *qtagk, size_t nq,
                   const struct qexpr_join_opts *o, char *out, size_t cap, struct ct_err *err)
{
    size_t len = 0;
    if (cap == 0)
        return ct_err_set(err, CT_ELIMIT, "expression: no room for a join key");
    out[0] = '\0';
    if (tags == NULL || *tags == '\0')
        return 0; /* OpenTSDB: no tags, the empty key, aggregated keys or not */
    bool first = true;
    for (const char *p = tags; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', n);
        size_t kn = eq ? (size_t)(eq - p) : n;
        bool keep = !o->use_query_tags;
        for (size_t i = 0; !keep && i < nq; i++)
            keep = strlen(qtagk[i]) == kn && memcmp(qtagk[i], p, kn) == 0;
        if (keep) {
            if ((!first && !put_bytes(out, cap, &len, ",", 1)) || !put_bytes(out, cap, &len, p, n))
                goto full;
            first = false;
        }
        p += n + (end != NULL);
    }
    if (o->include_agg_tags && agg != NULL && *agg != '\0' &&
        (!put_bytes(out, cap, &len, "|", 1) || !put_bytes(out, cap, &len, agg, strlen(agg))))
        goto full;
    return 0;
full:
    return ct_err_set(err, CT_ELIMIT, "expression: the join key of {%s} exceeds %zu bytes", tags,
                      cap - 1);
}

#define QEXPR_MAX_KEY 2048

/* Adds the comma-separated names of list to set[*n..] unless present; false when out of room. */
static bool add_names(const char *list, char (*set)[256], size_t *n, size_t max)
{
    for (const char *p = list; p != NULL && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        bool have = false;
        for (size_t i = 0; i < *n && !have; i++)
            have = strlen(set[i]) == len && memcmp(set[i], p, len) == 0;
        if (!have && len > 0) {
            if (*n == max || len >= 256)
                return false;
            memcpy(set[*n], p, len);
            set[(*n)++][len] = '\0';
        }
        p += len + (end != NULL);
    }
    return true;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

int qexpr_eval_join(const struct qexpr *e, const struct qexpr_input *in, size_t nin,
                    const struct qexpr_join_opts *o, struct qexpr_result **out, size_t *nout,
                    struct ct_err *err)
{
    *out = NULL;
    *nout = 0;
    const struct qexpr_input *inp[QEXPR_MAX_VARS];
    struct qexpr_input rk[QEXPR_MAX_VARS] = {0}; /* the inputs re-keyed by join key */
    const struct qexpr_input *rkp[QEXPR_MAX_VARS];
    const struct qexpr_series **orig[QEXPR_MAX_VARS] = {0}; /* rk[v].series[i]'s own series */
    struct qexpr_result *res = NULL;
    size_t nres = 0;
    int rc = 0;
    char key[QEXPR_MAX_KEY];
    if (find_inputs(e, in, nin, inp, err) != 0)
        return err->code;
    for (size_t v = 0; v < e->nvars && rc == 0; v++) {
        const struct qexpr_input *src = inp[v];
        struct qexpr_series *ser = calloc(src->nseries ? src->nseries : 1, sizeof(*ser));
        orig[v] = calloc(src->nseries ? src->nseries : 1, sizeof(*orig[v]));
        if (ser == NULL || orig[v] == NULL) {
            free(ser);
            rc = ct_err_set(err, CT_ENOMEM, "out of memory");
            break;
        }
        rk[v] = *src;
        rk[v].series = ser;
        rk[v].nseries = 0;
        rkp[v] = &rk[v];
        for (size_t i = 0; i < src->nseries && rc == 0; i++) {
            const struct qexpr_series *s = &src->series[i];
            rc = qexpr_join_key(s->key, s->agg, src->query_tagk, src->nquery_tagk, o, key,
                                sizeof(key), err);
            if (rc != 0)
                break;
            size_t at = rk[v].nseries;
            for (size_t k = 0; k < rk[v].nseries; k++)
                if (strcmp(ser[k].key, key) == 0)
                    at = k; /* the later series of a join key replaces the earlier */
            char *dup = strdup(key);
            if (dup == NULL) {
                rc = ct_err_set(err, CT_ENOMEM, "out of memory");
                break;
            }
            if (at < rk[v].nseries)
                free((char *)ser[at].key);
            else
                rk[v].nseries++;
            ser[at] = (struct qexpr_series){dup, s->n, s->ts, s->v, NULL};
            orig[v][at] = s;
        }
    }
    if (rc == 0)
        rc = eval_inputs(e, e->nvars, rkp, o->op, &res, &nres, err);
    /* each result's tags and aggregated tag keys from its operands' own series */
    static const size_t max_agg = 64;
    char(*names)[256] = rc == 0 ? malloc(max_agg * sizeof(*names)) : NULL;
    if (rc == 0 && names == NULL)
        rc = ct_err_set(err, CT_ENOMEM, "out of memory");
    for (size_t r = 0; r < nres && rc == 0; r++) {
        const char *tags = NULL;
        size_t nn = 0;
        for (size_t v = 0; v < e->nvars; v++)
            for (size_t k = 0; k < rk[v].nseries; k++)
                if (strcmp(rk[v].series[k].key, res[r].key) == 0) {
                    if (tags == NULL)
                        tags = orig[v][k]->key;
                    if (!add_names(orig[v][k]->agg, names, &nn, max_agg))
                        rc = ct_err_set(err, CT_ELIMIT,
                                        "expression: more than %zu aggregated tag keys", max_agg);
                }
        qsort(names, nn, sizeof(*names), cmp_name);
        size_t len = 0;
        key[0] = '\0';
        for (size_t i = 0; i < nn && rc == 0; i++)
            if ((i > 0 && !put_bytes(key, sizeof(key), &len, ",", 1)) ||
                !put_bytes(key, sizeof(key), &len, names[i], strlen(names[i])))
                rc = ct_err_set(err, CT_ELIMIT, "expression: aggregated tag keys exceed %zu bytes",
                                sizeof(key) - 1);
        if (rc != 0)
            break;
        char *t = strdup(tags ? tags : "");
        char *a = strdup(key);
        if (t == NULL || a == NULL) {
            free(t);
            free(a);
            rc = ct_err_set(err, CT_ENOMEM, "out of memory");
            break;
        }
        free(res[r].key);
        res[r].key = t;
        res[r].agg = a;
    }
    free(names);
    for (size_t v = 0; v < e->nvars; v++) {
        for (size_t k = 0; k < rk[v].nseries; k++)
            free((char *)rk[v].series[k].key);
        free((void *)rk[v].series);
        free(orig[v]);
    }
    if (rc != 0) {
        qexpr_results_free(res, nres);
        return rc;
    }
    *out = res;
    *nout = nres;
    return 0;
}

int qexpr_sync(const struct qexpr_input *in, struct qexpr_result **out, size_t *nout,
               struct ct_err *err)
{
    *out = NULL;
    *nout = 0;
    const struct qexpr_input *inp[1] = {in};
    return eval_inputs(NULL, 1, inp, QEXPR_JOIN_UNION, out, nout, err);
}
