/* qfilter.h - OpenTSDB 2.4 tag value filters (TagVFilter): literal_or, iliteral_or,
 * not_literal_or, not_iliteral_or, wildcard, iwildcard, regexp, not_key; parsing from
 * (type, tagk, filter, groupBy) and from the m= shorthand ("*", "type(expr)", "a|b"), matching a
 * series' tag value, and the descriptions served by /api/config/filters.
 *
 * A filter is immutable after creation and may be shared by threads. */
#ifndef CT_QFILTER_H
#define CT_QFILTER_H

#include <stdbool.h>
#include <stddef.h>

#include "storage/ct_err.h"

enum qfilter_type {
    QFILTER_LITERAL_OR = 0,
    QFILTER_ILITERAL_OR,
    QFILTER_NOT_LITERAL_OR,
    QFILTER_NOT_ILITERAL_OR,
    QFILTER_WILDCARD,
    QFILTER_IWILDCARD,
    QFILTER_REGEXP,
    QFILTER_NOT_KEY,
};

struct qfilter; /* opaque */

/* Creates a filter of type `type` (name, case-insensitive) on tagk with expression `expr`.
 * Errors (CT_EINVAL) use OpenTSDB's texts: "Could not find a filter for type: x",
 * "Filter cannot be null or empty", "Filter must contain more than just a pipe", ...
 * Returns a new filter freed with qfilter_free(). */
CT_MUST_CHECK int qfilter_new(const char *type, const char *tagk, const char *expr, bool group_by,
                              struct qfilter **out, struct ct_err *err);
/* The m= / legacy "tags" shorthand: "*" -> wildcard, "type(expr)" -> that type, containing '*'
 * -> iwildcard (named "wildcard" by qfilter_type_name, as OpenTSDB's case-insensitive
 * TagVWildcardFilter is), else literal_or. */
CT_MUST_CHECK int qfilter_new_shorthand(const char *tagk, const char *value, bool group_by,
                                        struct qfilter **out, struct ct_err *err);
void qfilter_free(struct qfilter *f); /* accepts NULL */

enum qfilter_type qfilter_type(const struct qfilter *f);
const char *qfilter_type_name(const struct qfilter *f); /* "literal_or", ... */
const char *qfilter_tagk(const struct qfilter *f);
const char *qfilter_expr(const struct qfilter *f);
bool qfilter_group_by(const struct qfilter *f);
/* For literal_or / not_literal_or (case-sensitive): the literal values; *n their count. The
 * array is valid while f lives. Other types: NULL, 0. */
const char *const *qfilter_literals(const struct qfilter *f, size_t *n);

/* Whether a series whose value for the filter's tagk is `tagv` (NULL when the series has no
 * such tag) passes the filter. */
bool qfilter_match(const struct qfilter *f, const char *tagv);

/* The filter types with their descriptions and examples for /api/config/filters. */
struct qfilter_info {
    const char *name;
    const char *description;
    const char *examples;
};
const struct qfilter_info *qfilter_infos(size_t *n);

#endif
