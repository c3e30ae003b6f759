/* qlimits.h - the per-metric query limits of OpenTSDB 2.4's QueryLimitOverride: overrides of
 * the datapoint and byte limits (tsd.query.limits.data_points.default, .bytes.default) read
 * from a JSON file
 * (tsd.query.limits.overrides.config: [{"regex":"...","dataPointsLimit":n,"byteLimit":n}, ...])
 * that replace both defaults for the metrics their regex finds (PCRE2, anywhere in the name,
 * as Java's Matcher.find(); the first override of the file that matches wins; a limit of 0 is
 * no limit). With a reload interval the file is read again when a sub-query asks for its limits
 * at least that many seconds after the last read: a file that is missing, empty, not JSON, or
 * holds a bad override changes nothing (the overrides last read stay), as OpenTSDB's loader.
 *
 * Invariants: the overrides are replaced whole under the mutex (a reader sees the old set or
 * the new one); qlimits_get() is safe from any thread. */
#ifndef CT_QLIMITS_H
#define CT_QLIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/ct_err.h"

struct qlimits;

struct qlimits_options {
    const char *file; /* tsd.query.limits.overrides.config; NULL or "" = no overrides */
    int64_t reload_s; /* tsd.query.limits.overrides.interval; 0 = read once */
    /* called with a line for the log after each read of the file (what was loaded, or why
     * nothing changed); error is true for a failure. May be NULL. */
    void (*log)(void *arg, bool error, const char *msg);
    void *log_arg;
};

/* Returns a new qlimits in *out (freed with qlimits_free()), the file read once (a failure to
 * read it is logged, not returned: OpenTSDB starts without overrides then). CT_ENOMEM only.
 * Copies what it keeps of o. */
CT_MUST_CHECK int qlimits_new(const struct qlimits_options *o, struct qlimits **out,
                              struct ct_err *err);
void qlimits_free(struct qlimits *l); /* accepts NULL */

/* The limits of a sub-query of `metric`: *points and *bytes hold the defaults on entry and are
 * replaced by the first override whose regex finds the metric (NULL or "": none does). Reads the
 * file again first when the reload interval has passed. l NULL: nothing changes. */
void qlimits_get(struct qlimits *l, const char *metric, uint64_t *points, uint64_t *bytes);

/* Reads the file now (tests; what the reload timer does). Returns CT_OK when it was read and
 * applied, else CT_EINVAL/CT_EIO with why (the overrides then unchanged). */
CT_MUST_CHECK int qlimits_reload(struct qlimits *l, struct ct_err *err);
/* The number of overrides in force. */
size_t qlimits_count(struct qlimits *l);

#endif
