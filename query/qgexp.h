/* qgexp.h - the Graphite-style functions of /api/query/gexp (OpenTSDB 2.4): an expression such
 * as `scale(sum:sys.cpu{host=*},2)` or `sumSeries(sum:a{dc=*},sum:b{dc=*})` parsed into a tree
 * whose leaves are metric queries in /api/query's m= syntax, and its evaluation over the series
 * those queries answered.
 *
 * Grammar (OpenTSDB's): expr := NAME '(' param (',' param)* ')'; param := expr | query | NAME;
 * query := NAME ':' [NAME ':' [NAME ':']] NAME ['{' NAME '=' NAME (',' NAME '=' NAME)* '}'];
 * NAME is a run of letters, digits and `* - _ # / $ @ | . ' [ ]`; blanks between tokens are
 * skipped. A NAME parameter is a function argument (a factor, a window, an alias).
 *
 * Functions: alias, scale, absolute, movingAverage, highestCurrent, highestMax, shift/timeShift,
 * sumSeries/sum, diffSeries/difference, multiplySeries/multiply, divideSeries/divide; each one's
 * semantics in docs/query.md ("Graphite-style expressions").
 *
 * Invariants: a parsed tree is immutable; evaluation never changes its inputs (every output
 * series is a new copy); output points are ascending by time. The module knows nothing of the
 * store: the caller runs the queries (qgexp_query) and hands their series in. */
#ifndef CT_QGEXP_H
#define CT_QGEXP_H

#include <stddef.h>
#include <stdint.h>

#include "query/qagg.h"
#include "storage/ct_err.h"

struct qgexp;

/* Parses src (the exp= parameter). CT_EINVAL with the reason and position in err. */
CT_MUST_CHECK int qgexp_parse(const char *src, struct qgexp **out, struct ct_err *err);
void qgexp_free(struct qgexp *e); /* accepts NULL */

/* The metric queries e names, in the order they appear (m= syntax, as written). */
size_t qgexp_nqueries(const struct qgexp *e);
const char *qgexp_query(const struct qgexp *e, size_t i);

/* One series: a query's group or a function's result. Strings and arrays are owned. */
struct qgexp_series {
    char *metric;
    char **tagk, **tagv; /* ntags pairs, sorted by key */
    size_t ntags;
    char **agg; /* aggregated tag keys, sorted */
    size_t nagg;
    struct qagg_point *p; /* ascending by time */
    size_t n, cap;
};

struct qgexp_set {
    struct qgexp_series *s;
    size_t n, cap;
};

/* Appends a series to set (its strings copied), returning it, or NULL when out of memory. */
struct qgexp_series *qgexp_set_add(struct qgexp_set *set, const char *metric,
                                   const char *const *tagk, const char *const *tagv, size_t ntags,
                                   const char *const *agg, size_t nagg);
/* Appends a point to series s; CT_ENOMEM when it cannot. */
CT_MUST_CHECK int qgexp_series_push(struct qgexp_series *s, const struct qagg_point *pt);
void qgexp_set_clear(struct qgexp_set *set);

/* Evaluates e: in[i] holds the series of query i (qgexp_query(e, i)); [start_ms, end_ms] is the
 * query's range. The result goes to *out (which the caller zeroes first and clears with
 * qgexp_set_clear). CT_EINVAL for a bad function argument, naming it. */
CT_MUST_CHECK int qgexp_eval(const struct qgexp *e, const struct qgexp_set *in, int64_t start_ms,
                             int64_t end_ms, struct qgexp_set *out, struct ct_err *err);

#endif
