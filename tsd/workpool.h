/* workpool.h - a fixed pool of worker threads running queued jobs (query execution, JSON
 * parsing of large bodies) off the event loop.
 *
 * Jobs run in submission order, each on one thread. The queue is bounded: submit refuses work
 * beyond the bound rather than grow memory. workpool_free() runs every queued job, then joins. */
#ifndef CT_TSD_WORKPOOL_H
#define CT_TSD_WORKPOOL_H

#include <stddef.h>

#include "storage/ct_err.h"

struct workpool; /* opaque */

typedef void (*workpool_fn)(void *arg);

/* Starts nthreads threads (0 = the number of online CPUs) named name (at most 15 bytes, as
 * /proc/<pid>/task/<tid>/comm shows it) with a queue of at most max_queued waiting jobs.
 * Returns a new pool in *out, freed with workpool_free(). */
CT_MUST_CHECK int workpool_new(int nthreads, size_t max_queued, const char *name,
                               struct workpool **out, struct ct_err *err);
/* Queues fn(arg). CT_ELIMIT if the queue is full, CT_ECLOSED after shutdown began. arg is
 * borrowed until fn runs. */
CT_MUST_CHECK int workpool_submit(struct workpool *p, workpool_fn fn, void *arg,
                                  struct ct_err *err);
/* Runs what is queued, stops the threads and frees the pool; accepts NULL. No submit may run
 * concurrently (submit signals the workers after releasing the queue's lock). */
void workpool_free(struct workpool *p);
/* Number of threads. */
int workpool_threads(const struct workpool *p);

#endif
