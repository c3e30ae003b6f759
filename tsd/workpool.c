/* workpool.c - fixed worker threads over a bounded FIFO of jobs (see workpool.h).
 * Invariants: (1) jobs[head .. head+count) (mod cap) are queued, in order; (2) after closing
 * is set no job is accepted, and workers exit only once the queue is empty.
 * Locking: mu guards jobs, head, count and closing; cv signals both "job queued" and "closing". */
#include "tsd/workpool.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct workpool_job {
    workpool_fn fn;
    void *arg;
};

struct workpool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct workpool_job *jobs;
    size_t cap, head, count;
    bool closing;
    pthread_t *threads;
    int nthreads;
    char name[16];
};

static void *workpool_main(void *arg)
{
    struct workpool *p = arg;
    pthread_setname_np(pthread_self(), p->name);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->count == 0 && !p->closing)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->count == 0 && p->closing)
            break;
        struct workpool_job j = p->jobs[p->head];
        p->head = (p->head + 1) % p->cap;
        p->count--;
        pthread_mutex_unlock(&p->mu);
        j.fn(j.arg);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int workpool_new(int nthreads, size_t max_queued, const char *name, struct workpool **out,
                 struct ct_err *err)
{
    if (nthreads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        nthreads = n > 0 ? (int)n : 2;
    }
    if (max_queued == 0)
        max_queued = 1;
    struct workpool *p = calloc(1, sizeof(*p));
    if (!p)
        return ct_err_set(err, CT_ENOMEM, "out of memory creating the worker pool");
    p->jobs = calloc(max_queued, sizeof(*p->jobs));
    p->threads = calloc((size_t)nthreads, sizeof(*p->threads));
    if (!p->jobs || !p->threads) {
        free(p->jobs);
        free(p->threads);
        free(p);
        return ct_err_set(err, CT_ENOMEM, "out of memory creating the worker pool");
    }
    p->cap = max_queued;
    snprintf(p->name, sizeof(p->name), "%s", name);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    for (int i = 0; i < nthreads; i++) {
        int rc = pthread_create(&p->threads[i], NULL, workpool_main, p);
        if (rc != 0) {
            p->nthreads = i;
            workpool_free(p);
            return ct_err_errno(err, CT_EIO, rc, "cannot start worker thread %d", i);
        }
    }
    p->nthreads = nthreads;
    *out = p;
    return CT_OK;
}

int workpool_submit(struct workpool *p, workpool_fn fn, void *arg, struct ct_err *err)
{
    pthread_mutex_lock(&p->mu);
    int rc = CT_OK;
    if (p->closing) {
        rc = ct_err_set(err, CT_ECLOSED, "the worker pool is shutting down");
    } else if (p->count == p->cap) {
        rc = ct_err_set(err, CT_ELIMIT, "the worker pool queue is full (%zu jobs waiting)", p->cap);
    } else {
        p->jobs[(p->head + p->count) % p->cap] = (struct workpool_job){fn, arg};
        p->count++;
    }
    pthread_mutex_unlock(&p->mu);
    /* Signalled after unlocking, so that the woken worker does not at once block on mu while the
     * submitter still holds it (a second futex sleep and wake-up per job: seen in perf). A
     * worker that is not yet waiting sees count > 0 before it waits. */
    if (rc == CT_OK)
        pthread_cond_signal(&p->cv);
    return rc;
}

int workpool_threads(const struct workpool *p)
{
    return p->nthreads;
}

void workpool_free(struct workpool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->closing = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->jobs);
    free(p->threads);
    free(p);
}
