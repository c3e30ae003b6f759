/* qpool.h - the query executor: helper threads that take pieces of a query's parallel work
 * (its scan's buckets and time slices, its groups to render), and the check that keeps a query
 * on one thread when every CPU is already busy. The owner (the TSD, a tool, a test) creates it
 * and passes it in qexec_options.pool; the query layer keeps no threads or load state of its
 * own, so a test that passes no pool, or one with a deterministic busy check, runs the same way
 * every time.
 *
 * Threading: qpool_run and qpool_busy may be called from many threads at once; qpool_free only
 * when no qpool_run is in progress. */
#ifndef CT_QPOOL_H
#define CT_QPOOL_H

#include <stdbool.h>
#include <stdint.h>

#include "storage/ct_err.h"

struct qpool; /* opaque: defined in qpool.c */

/* True when every CPU is busy, so that a query should run alone on its caller's thread. */
typedef bool (*qpool_busy_fn)(void *arg);

struct qpool_options {
    unsigned helpers;   /* helper threads (at most QPOOL_MAX_HELPERS); 0 = none */
    unsigned threads;   /* threads a query uses when it does not say (qpool_threads); 0 = 1 */
    bool loadavg;       /* the busy check reads Linux /proc/loadavg (qpool.c says how) */
    qpool_busy_fn busy; /* else this check (tests); NULL = never busy */
    void *busy_arg;
};
#define QPOOL_MAX_HELPERS 63

/* No helpers, one thread, never busy: every query on its caller's thread. */
void qpool_options_init(struct qpool_options *o);
/* The daemon's executor: a query uses min(online CPUs, 4) threads (so 3 helpers at most), alone
 * when /proc/loadavg says every CPU is busy. */
void qpool_options_system(struct qpool_options *o);

/* Starts the helpers. Returns CT_OK and a new pool in *out, freed with qpool_free(); on error
 * (a thread that cannot start) *out is unchanged and err says why. Copies o. */
CT_MUST_CHECK int qpool_new(const struct qpool_options *o, struct qpool **out, struct ct_err *err);
/* Stops and joins the helpers and frees p; accepts NULL. */
void qpool_free(struct qpool *p);

/* Threads a query uses when it does not say (qpool_options.threads; 1 for a NULL pool). */
unsigned qpool_threads(const struct qpool *p);
/* The busy check (false for a NULL pool). */
bool qpool_busy(struct qpool *p);

/* Work shared by the caller and helpers: fn(arg) takes pieces of it until none are left (so a
 * job done by the caller alone is done whole). Caller's storage; the pool's lock guards next,
 * busy and want. */
struct qpool_job {
    void (*fn)(void *arg);
    void *arg;
    struct qpool_job *next; /* the queue of jobs open to helpers */
    unsigned busy;          /* helpers working on this job */
    unsigned want;          /* helpers this job may still take */
    uint64_t deadline_ns;   /* the caller's request deadline (storage/wc.h), set by qpool_run */
};
/* Runs x on this thread and up to `helpers` helper threads of p (none when p is NULL); returns
 * when every piece is done and no helper holds x. */
void qpool_run(struct qpool *p, struct qpool_job *x, unsigned helpers);

#endif
