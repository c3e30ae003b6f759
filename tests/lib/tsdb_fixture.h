/* tsdb_fixture.h - a real embedded store holding the OpenTSDB tables in a temporary directory,
 * shared by the query unit tests: open and close it, write single points by name, collect
 * output through a sink and run a query to its whole JSON answer. Helpers fail the running cmocka test on any error, so a test body holds
 * only what it is about. */
#ifndef CT_TSDB_FIXTURE_H
#define CT_TSDB_FIXTURE_H

#include <stddef.h>

#include "query/qexec.h"
#include "query/qspec.h"
#include "schema/dpcodec.h"
#include "schema/tsdb.h"
#include "storage/wc.h"

struct tsdb_fixture {
    char *dir;
    struct wc_store *s;
    struct tsdb *t;
};

/* Opens a store in a fresh temporary directory and the tsdb tables on it, with 1-byte salts over
 * salt_buckets buckets (0: OpenTSDB's unsalted layout). Returns NULL when this build has no
 * embedded engine (the caller skips its tests). */
struct tsdb_fixture *tsdb_fixture_open(unsigned salt_buckets);

/* Closes the tables and the store and removes the directory; accepts NULL. */
void tsdb_fixture_close(struct tsdb_fixture *f);

/* Writes point p of metric{k[0]=v[0],...} (n tags), assigning UIDs as needed, without the log. */
void tsdb_fixture_put(struct tsdb *t, const char *metric, const char *const *k,
                      const char *const *v, size_t n, struct dpcodec_point p);

/* An output sink (qjson_new's) appending to a NUL-terminated heap buffer; free(data) after. */
struct tsdb_fixture_buf {
    char *data;
    size_t len, cap;
};
int tsdb_fixture_sink(void *arg, const char *d, size_t n);

/* Runs q (freed here) on t with options o. CT_OK: *json is the whole answer (free it). Otherwise
 * the error is in err and *st, and the test fails if any output came before it. */
int tsdb_fixture_run(struct tsdb *t, struct qspec *q, const struct qexec_options *o, char **json,
                     enum qexec_status *st, struct ct_err *err);

/* Skips a test whose setup found no embedded engine (tsdb_fixture_open returned NULL). */
#define TSDB_FIXTURE_SKIP_IF_NONE(state)                                                           \
    do {                                                                                           \
        if (!*(state))                                                                             \
            skip();                                                                                \
    } while (0)

#endif
