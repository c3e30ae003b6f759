/* qexpr.h - the arithmetic of /api/query/exp: an expression over metric ids and numbers
 * (`+ - * / %`, the comparisons `< > <= >= == !=` and `! && ||` as 1 or 0, unary minus,
 * parentheses, `c ? a : b` and `a ?: b`) parsed into a tree, and its evaluation over the series
 * each id names, joined by tag set (intersection or union) with a fill policy per id for the
 * timestamps an operand lacks.
 *
 * Invariants: a parsed tree is immutable (evaluate it from many threads at once); every result
 * series is sorted by timestamp with no duplicate timestamps; results are sorted by join key;
 * a zero divisor (`/`, `%`) gives 0, as OpenTSDB's JEXL engine answers. The module knows
 * nothing of the store: the
 * caller runs the sub-queries and hands their series in. */
#ifndef CT_QEXPR_H
#define CT_QEXPR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/ct_err.h"

struct qexpr;

/* Parses src; on error returns CT_EINVAL with the offending position in err. An expression
 * naming no variable (`1 + 1`) parses (qexpr_nvars 0, as JEXL parses it); evaluating it is
 * CT_EINVAL ("names no metric"). */
CT_MUST_CHECK int qexpr_parse(const char *src, struct qexpr **out, struct ct_err *err);
void qexpr_free(struct qexpr *e);
/* The distinct variable names of e in first-use order (valid while e lives). */
size_t qexpr_nvars(const struct qexpr *e);
const char *qexpr_var(const struct qexpr *e, size_t i);

/* What an operand contributes at a timestamp where its series has no point: a value, as
 * OpenTSDB's NumericFillPolicy.getValue() (none and null are NaN there too; no timestamp is
 * ever left out). */
enum qexpr_fill {
    QEXPR_FILL_NAN,    /* "nan" */
    QEXPR_FILL_ZERO,   /* "zero" */
    QEXPR_FILL_SCALAR, /* "scalar": fill_value */
    QEXPR_FILL_NONE,   /* "none": NaN */
    QEXPR_FILL_NULL,   /* "null": NaN */
};
/* Maps OpenTSDB's policy names ("nan", "zero", "scalar", "none", "null"); -1 if unknown. */
int qexpr_fill_parse(const char *name);

enum qexpr_join {
    QEXPR_JOIN_INTERSECTION,
    QEXPR_JOIN_UNION
};

struct qexpr_series {
    const char *key; /* the tag set as "k1=v1,k2=v2" sorted by tag key ("" for none): the join
                        key of qexpr_eval */
    size_t n;
    const int64_t *ts; /* ascending, no duplicates */
    const double *v;
    const char *agg; /* qexpr_eval_join: the aggregated tag keys "k1,k2" sorted (NULL: none) */
};

struct qexpr_input {
    const char *id; /* the variable name */
    const struct qexpr_series *series;
    size_t nseries; /* qexpr_eval: distinct keys */
    enum qexpr_fill fill;
    double fill_value; /* QEXPR_FILL_SCALAR */
    /* qexpr_eval_join: the tag keys the variable's filters name (OpenTSDB's query tag keys;
     * none for an expression's output) */
    const char *const *query_tagk;
    size_t nquery_tagk;
};

struct qexpr_result {
    char *key; /* qexpr_eval: the join key; qexpr_eval_join: the series' tags (see there) */
    size_t n;
    int64_t *ts;
    double *v;
    char *agg; /* qexpr_eval_join: the aggregated tag keys "k1,k2" sorted ("" none); else NULL */
};

/* Evaluates e: every variable must be one of in[] (else CT_EINVAL naming it). The join keys are
 * those of every variable (intersection) or of any (union; a variable without a series for a key
 * counts 0 at every timestamp, whatever its fill, as OpenTSDB's UnionIterator). Every result
 * series has the same timestamps: those of all the operand series evaluated (an operand without
 * a point there, or with a NaN value, takes its fill value). More than
 * 2^26 values in all: CT_ELIMIT. On success *out holds *nout results sorted by key, freed with
 * qexpr_results_free(); on error *out is NULL. */
CT_MUST_CHECK int qexpr_eval(const struct qexpr *e, const struct qexpr_input *in, size_t nin,
                             enum qexpr_join join, struct qexpr_result **out, size_t *nout,
                             struct ct_err *err);
/* OpenTSDB 2.4's Join of an expression: the set operator and what series are matched on. */
struct qexpr_join_opts {
    enum qexpr_join op;
    bool use_query_tags;   /* "useQueryTags" (default false): only the query tag keys */
    bool include_agg_tags; /* "includeAggTags" (default true): the aggregated tag keys too */
};

/* The join key of a series under o, as OpenTSDB 2.4's flattenTags builds it: its tags ("k=v,.."
 * sorted) - under use_query_tags only those whose key is one of qtagk[0..nq) (none: no tag) -
 * then, under include_agg_tags, "|" and its aggregated tag keys agg ("k,.." sorted; NULL or ""
 * adds nothing). A series without tags has the key "" whatever its aggregated keys. Written
 * NUL-terminated to out; CT_ELIMIT if it needs more than cap bytes. */
CT_MUST_CHECK int qexpr_join_key(const char *tags, const char *agg, const char *const *qtagk,
                                 size_t nq, const struct qexpr_join_opts *o, char *out, size_t cap,
                                 struct ct_err *err);

/* qexpr_eval with OpenTSDB 2.4's join options: each variable's series are matched on their
 * qexpr_join_key (under use_query_tags with the input's query_tagk); two series of one variable
 * with the same join key are one, the later in in->series (OpenTSDB keeps the last). Each result
 * is one join key (results sorted by it) and carries as key the tags of the first variable, in
 * the expression's order, with a series of that join key, and as agg the union of the
 * aggregated tag keys of every operand series of that join key (OpenTSDB's ExpressionDataPoint).
 * Results and errors as qexpr_eval's. */
CT_MUST_CHECK int qexpr_eval_join(const struct qexpr *e, const struct qexpr_input *in, size_t nin,
                                  const struct qexpr_join_opts *o, struct qexpr_result **out,
                                  size_t *nout, struct ct_err *err);

/* The series of one input time-synced as an evaluation's are (every series at every timestamp of
 * any, filled): how a metric is answered as an output of its own. Results as qexpr_eval's. */
CT_MUST_CHECK int qexpr_sync(const struct qexpr_input *in, struct qexpr_result **out, size_t *nout,
                             struct ct_err *err);
void qexpr_results_free(struct qexpr_result *r, size_t n);

#endif
