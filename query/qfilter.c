/* qfilter.c - see qfilter.h. Follows OpenTSDB 2.4's TagVLiteralOrFilter, TagVWildcardFilter,
 * TagVRegexFilter and TagVNotKeyFilter. Regular expressions are PCRE2 (Perl syntax, the nearest
 * C library to java.util.regex: \d \w \s, lazy and possessive quantifiers, lookaround,
 * (?i) flags, \Q..\E), compiled in UTF mode and matched with TagVRegexFilter's
 * Pattern.matcher(tagv).find() semantics: the pattern may match anywhere in the value (use ^ and
 * $ to anchor).
 *
 * Invariants: (1) case-insensitive filters store their literals / wildcard lower-cased; (2) a
 * filter never changes after qfilter_new returns (a compiled pcre2_code is shared read-only by
 * threads; each match uses its own match data). */
#include "query/qfilter.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

struct qfilter {
    enum qfilter_type type;
    bool group_by;
    char *tagk;
    char *expr;
    char *buf;   /* literal storage / lower-cased wildcard */
    char **lits; /* literal values (pointing into buf) */
    size_t nlits;
    pcre2_code *re; /* regexp only */
    /* the m= shorthand "a*b": OpenTSDB builds a case-insensitive TagVWildcardFilter, whose type
     * name is "wildcard" (not "iwildcard"); it matches as iwildcard and echoes as wildcard */
    bool named_wildcard;
};

static const char *const type_names[] = {
    "literal_or", "iliteral_or", "not_literal_or", "not_iliteral_or",
    "wildcard",   "iwildcard",   "regexp",         "not_key",
};

static const struct qfilter_info infos[] = {
    {"literal_or",
     "Accepts one or more exact values and matches if the series contains any of them. Multiple "
     "values can be included and must be separated by the | (pipe) character. The filter is case "
     "sensitive and will not allow characters that TSDB does not allow at write time.",
     "host=literal_or(web01), host=literal_or(web01|web02|web03) "
     "{\"type\":\"literal_or\",\"tagk\":\"host\",\"filter\":\"web01|web02|web03\",\"groupBy\":"
     "false}"},
    {"iliteral_or",
     "Accepts one or more exact values and matches if the series contains any of them. Multiple "
     "values can be included and must be separated by the | (pipe) character. The filter is case "
     "insensitive and will not allow characters that TSDB does not allow at write time.",
     "host=iliteral_or(web01), host=iliteral_or(web01|web02|web03) "
     "{\"type\":\"iliteral_or\",\"tagk\":\"host\",\"filter\":\"web01|web02|web03\",\"groupBy\":"
     "false}"},
    {"not_literal_or",
     "Accepts one or more exact values and matches if the series does NOT contain any of them. "
     "Multiple values can be included and must be separated by the | (pipe) character. The "
     "filter is case sensitive and will not allow characters that TSDB does not allow at write "
     "time.",
     "host=not_literal_or(web01), host=not_literal_or(web01|web02|web03) "
     "{\"type\":\"not_literal_or\",\"tagk\":\"host\",\"filter\":\"web01|web02|web03\","
     "\"groupBy\":false}"},
    {"not_iliteral_or",
     "Accepts one or more exact values and matches if the series does NOT contain any of them. "
     "Multiple values can be included and must be separated by the | (pipe) character. The "
     "filter is case insensitive and will not allow characters that TSDB does not allow at write "
     "time.",
     "host=not_iliteral_or(web01), host=not_iliteral_or(web01|web02|web03) "
     "{\"type\":\"not_iliteral_or\",\"tagk\":\"host\",\"filter\":\"web01|web02|web03\","
     "\"groupBy\":false}"},
    {"wildcard",
     "Performs pre, post and in-fix glob matching of values. The globs are case sensitive and "
     "multiple wildcards can be used. The wildcard character is the * (asterisk). At least one "
     "wildcard must be present in the filter value. A wildcard by itself can be used as well to "
     "match on any value for the tag key.",
     "host=wildcard(web*), host=wildcard(web*.tsdb.net) "
     "{\"type\":\"wildcard\",\"tagk\":\"host\",\"filter\":\"web*.tsdb.net\",\"groupBy\":false}"},
    {"iwildcard",
     "Performs pre, post and in-fix glob matching of values. The globs are case insensitive and "
     "multiple wildcards can be used. The wildcard character is the * (asterisk). Case "
     "insensitivity is achieved by dropping all values to lower case. At least one wildcard must "
     "be present in the filter value. A wildcard by itself can be used as well to match on any "
     "value for the tag key.",
     "host=iwildcard(web*), host=iwildcard(web*.tsdb.net) "
     "{\"type\":\"iwildcard\",\"tagk\":\"host\",\"filter\":\"web*.tsdb.net\",\"groupBy\":false}"},
    {"regexp",
     "Provides full, POSIX compliant regular expression using the built in Java Pattern class. "
     "Note that an expression containing curly braces {} will not parse properly in URLs. If the "
     "pattern is not a valid regular expression then an exception will be raised.",
     "host=regexp(.*) {\"type\":\"regexp\",\"tagk\":\"host\",\"filter\":\".*\",\"groupBy\":"
     "false}"},
    {"not_key",
     "Skips any time series with the given tag key, regardless of the value. This can be useful "
     "for situations where a metric has inconsistent tag sets. NOTE: The filter value must be "
     "null or an empty string.",
     "host=not_key() {\"type\":\"not_key\",\"tagk\":\"host\",\"filter\":\"\",\"groupBy\":false}"},
};

const struct qfilter_info *qfilter_infos(size_t *n)
{
    *n = sizeof(infos) / sizeof(infos[0]);
    return infos;
}

void qfilter_free(struct qfilter *f)
{
    if (!f)
        return;
    pcre2_code_free(f->re);
    free(f->tagk);
    free(f->expr);
    free(f->buf);
    free(f->lits);
    free(f);
}

static void lower(char *s)
{
    for (; *s; s++)
        *s = (char)tolower((unsigned char)*s);
}

int qfilter_new(const char *type, const char *tagk, const char *expr, bool group_by,
                struct qfilter **out, struct ct_err *err)
{
    int t = -1;
    for (int i = 0; type && i < 8; i++)
        if (!strcasecmp(type, type_names[i]))
            t = i;
    if (t < 0)
        return ct_err_set(err, CT_EINVAL, "Could not find a filter for type: %s",
                          type ? type : "null");
    if (!tagk || !*tagk)
        return ct_err_set(err, CT_EINVAL, "Filter must have a tagk");
    if (!expr)
        expr = "";
    if (t == QFILTER_NOT_KEY) {
        if (*expr)
            return ct_err_set(err, CT_EINVAL, "The filter must be empty for the not_key filter");
    } else if (!*expr) {
        return ct_err_set(err, CT_EINVAL, "Filter cannot be null or empty");
    }
    struct qfilter *f = calloc(1, sizeof(*f));
    if (!f)
        return ct_err_set(err, CT_ENOMEM, "out of memory creating a filter");
    f->type = (enum qfilter_type)t;
    f->group_by = group_by;
    f->tagk = strdup(tagk);
    f->expr = strdup(expr);
    f->buf = strdup(expr);
    if (!f->tagk || !f->expr || !f->buf)
        goto nomem;
    bool ci = t == QFILTER_ILITERAL_OR || t == QFILTER_NOT_ILITERAL_OR || t == QFILTER_IWILDCARD;
    if (ci)
        lower(f->buf);
    switch (f->type) {
    case QFILTER_LITERAL_OR:
    case QFILTER_ILITERAL_OR:
    case QFILTER_NOT_LITERAL_OR:
    case QFILTER_NOT_ILITERAL_OR: {
        if (!strcmp(expr, "|")) {
            qfilter_free(f);
            return ct_err_set(err, CT_EINVAL, "Filter must contain more than just a pipe");
        }
        size_t cap = 1;
        for (const char *c = f->buf; *c; c++)
            cap += *c == '|';
        f->lits = calloc(cap, sizeof(char *));
        if (!f->lits)
            goto nomem;
        char *p = f->buf;
        for (;;) {
            char *bar = strchr(p, '|');
            if (bar)
                *bar = 0;
            f->lits[f->nlits++] = p;
            if (!bar)
                break;
            p = bar + 1;
        }
        break;
    }
    case QFILTER_WILDCARD:
    case QFILTER_IWILDCARD:
        if (!strchr(expr, '*')) {
            qfilter_free(f);
            return ct_err_set(err, CT_EINVAL, "Filter must contain an asterisk");
        }
        break;
    case QFILTER_REGEXP: {
        /* Pattern.compile(filter): a syntax error is a 400 whose text, like Java's
         * PatternSyntaxException, names the problem, the index and the pattern */
        int ec;
        PCRE2_SIZE off;
        f->re = pcre2_compile((PCRE2_SPTR)expr, PCRE2_ZERO_TERMINATED,
                              PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &ec, &off, NULL);
        if (!f->re) {
            PCRE2_UCHAR msg[160];
            if (pcre2_get_error_message(ec, msg, sizeof(msg)) < 0)
                snprintf((char *)msg, sizeof(msg), "error %d", ec);
            int rc = ct_err_set(err, CT_EINVAL, "%s near index %zu\n%s", (const char *)msg,
                                (size_t)off, expr);
            qfilter_free(f);
            return rc;
        }
        /* JIT is an optimisation only: without it (unsupported CPU, no executable memory)
         * pcre2_match interprets the same pattern */
        (void)pcre2_jit_compile(f->re, PCRE2_JIT_COMPLETE);
        break;
    }
    case QFILTER_NOT_KEY:
        break;
    }
    *out = f;
    return CT_OK;
nomem:
    qfilter_free(f);
    return ct_err_set(err, CT_ENOMEM, "out of memory creating a filter");
}

int qfilter_new_shorthand(const char *tagk, const char *value, bool group_by, struct qfilter **out,
                          struct ct_err *err)
{
    if (!value || !*value)
        return ct_err_set(err, CT_EINVAL, "Filter cannot be null or empty");
    if (!strcmp(value, "*"))
        return qfilter_new("wildcard", tagk, "*", group_by, out, err);
    const char *paren = strchr(value, '(');
    size_t len = strlen(value);
    /* TagVFilter.getFilter: any '(' names a filter type, which must end with ')' */
    if (paren && value[len - 1] != ')')
        return ct_err_set(err, CT_EINVAL, "Filter must end with a ')': %s", value);
    if (paren) {
        char type[64], *inner = NULL;
        size_t tl = (size_t)(paren - value);
        if (tl >= sizeof(type))
            return ct_err_set(err, CT_EINVAL, "Could not find a filter for type: %.*s", (int)tl,
                              value);
        memcpy(type, value, tl);
        type[tl] = 0;
        inner = strndup(paren + 1, len - tl - 2);
        if (!inner)
            return ct_err_set(err, CT_ENOMEM, "out of memory parsing a filter");
        int rc = qfilter_new(type, tagk, inner, group_by, out, err);
        free(inner);
        return rc;
    }
    if (strchr(value, '*')) {
        int rc = qfilter_new("iwildcard", tagk, value, group_by, out, err);
        if (rc == CT_OK)
            (*out)->named_wildcard = true;
        return rc;
    }
    return qfilter_new("literal_or", tagk, value, group_by, out, err);
}

enum qfilter_type qfilter_type(const struct qfilter *f)
{
    return f->type;
}

const char *qfilter_type_name(const struct qfilter *f)
{
    return f->named_wildcard ? "wildcard" : type_names[f->type];
}

const char *qfilter_tagk(const struct qfilter *f)
{
    return f->tagk;
}

const char *qfilter_expr(const struct qfilter *f)
{
    return f->expr;
}

bool qfilter_group_by(const struct qfilter *f)
{
    return f->group_by;
}

const char *const *qfilter_literals(const struct qfilter *f, size_t *n)
{
    if (f->type == QFILTER_LITERAL_OR || f->type == QFILTER_NOT_LITERAL_OR) {
        *n = f->nlits;
        return (const char *const *)f->lits;
    }
    *n = 0;
    return NULL;
}

/* Glob match with '*' only; pat and s already case-folded as needed. */
static bool glob(const char *pat, const char *s)
{
    const char *star = NULL, *back = NULL;
    while (*s) {
        if (*pat == '*') {
            star = pat++;
            back = s;
        } else if (*pat && *pat == *s) {
            pat++;
            s++;
        } else if (star) {
            pat = star + 1;
            s = ++back;
        } else {
            return false;
        }
    }
    while (*pat == '*')
        pat++;
    return *pat == 0;
}

static bool in_lits(const struct qfilter *f, const char *v, bool ci)
{
    for (size_t i = 0; i < f->nlits; i++)
        if (ci ? !strcasecmp(f->lits[i], v) : !strcmp(f->lits[i], v))
            return true;
    return false;
}

/* Matcher.find(): true if the pattern matches anywhere in s. Called once per series (not per
 * datapoint), so the small match-data allocation per call is not on a hot path. */
static bool regex_find(const pcre2_code *re, const char *s)
{
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    if (!md)
        return false;
    int rc = pcre2_match(re, (PCRE2_SPTR)s, PCRE2_ZERO_TERMINATED, 0, 0, md, NULL);
    pcre2_match_data_free(md);
    return rc >= 0;
}

bool qfilter_match(const struct qfilter *f, const char *tagv)
{
    switch (f->type) {
    case QFILTER_NOT_KEY:
        return tagv == NULL;
    case QFILTER_NOT_LITERAL_OR:
        return !tagv || !in_lits(f, tagv, false);
    case QFILTER_NOT_ILITERAL_OR:
        return !tagv || !in_lits(f, tagv, true);
    default:
        break;
    }
    if (!tagv)
        return false;
    switch (f->type) {
    case QFILTER_LITERAL_OR:
        return in_lits(f, tagv, false);
    case QFILTER_ILITERAL_OR:
        return in_lits(f, tagv, true);
    case QFILTER_WILDCARD:
        return glob(f->buf, tagv);
    case QFILTER_IWILDCARD: {
        char tmp[512];
        size_t l = strlen(tagv);
        if (l >= sizeof(tmp)) {
            char *d = strdup(tagv);
            if (!d)
                return false;
            lower(d);
            bool r = glob(f->buf, d);
            free(d);
            return r;
        }
        memcpy(tmp, tagv, l + 1);
        lower(tmp);
        return glob(f->buf, tmp);
    }
    case QFILTER_REGEXP:
        return regex_find(f->re, tagv);
    default:
        return false;
    }
}
