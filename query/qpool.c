/* qpool.c - the query executor of qpool.h.
 * Helpers are started by qpool_new and kept until qpool_free (a query used to create and join a
 * thread each time: tens of microseconds, and a new thread's first run on a busy machine comes
 * late). A query puts its job in the queue, wakes as many helpers as it wants, takes pieces
 * itself, then takes its job off the queue and waits for the helpers still on a piece of it. A
 * helper takes pieces of the first queued job that still wants one.
 * Invariants: (1) a job is on the queue only inside its qpool_run; (2) busy counts the helpers
 * inside x->fn, so qpool_run returns only when none is; (3) stopping is set only by qpool_free,
 * when the queue is empty.
 * Locking: mu guards head, stopping and every queued job's next/busy/want; the load average
 * state has its own atomics (a stale read only delays the verdict by one check). */
#include "query/qpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/clock.h"
#include "storage/wc.h"

struct qpool {
    struct qpool_options o;
    long ncpu; /* online CPUs when created (the load check's measure) */
    pthread_mutex_t mu;
    pthread_cond_t work; /* a job was queued, or stopping */
    pthread_cond_t idle; /* a helper left a job */
    struct qpool_job *head;
    bool stopping;
    pthread_t *th;
    unsigned nthreads;
    /* the /proc/loadavg check (qpool_loadavg_busy) */
    _Atomic uint64_t checked_ns;
    _Atomic double others; /* the average of runnable threads besides the caller */
    atomic_bool busy;
};

static long online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

void qpool_options_init(struct qpool_options *o)
{
    memset(o, 0, sizeof(*o));
    o->threads = 1;
}

void qpool_options_system(struct qpool_options *o)
{
    qpool_options_init(o);
    long ncpu = online_cpus();
    o->threads = ncpu < 4 ? (unsigned)ncpu : 4;
    o->helpers = o->threads - 1;
    o->loadavg = true;
}

static void *helper_main(void *arg)
{
    pthread_setname_np(pthread_self(), "ct-scan");
    struct qpool *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->stopping) {
        struct qpool_job *x = p->head;
        while (x && x->want == 0)
            x = x->next;
        if (!x) {
            pthread_cond_wait(&p->work, &p->mu);
            continue;
        }
        x->want--;
        x->busy++;
        pthread_mutex_unlock(&p->mu);
        /* the piece runs under its query's request deadline, as on the query's thread */
        uint64_t prev = wc_request_deadline_set(x->deadline_ns);
        x->fn(x->arg);
        wc_request_deadline_set(prev);
        pthread_mutex_lock(&p->mu);
        if (--x->busy == 0)
            pthread_cond_broadcast(&p->idle);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int qpool_new(const struct qpool_options *o, struct qpool **out, struct ct_err *err)
{
    if (o->helpers > QPOOL_MAX_HELPERS)
        return ct_err_set(err, CT_EINVAL, "query pool: %u helper threads (at most %d)", o->helpers,
                          QPOOL_MAX_HELPERS);
    struct qpool *p = calloc(1, sizeof(*p));
    if (!p || (o->helpers && !(p->th = calloc(o->helpers, sizeof(*p->th))))) {
        free(p);
        return ct_err_set(err, CT_ENOMEM, "out of memory creating the query pool");
    }
    p->o = *o;
    if (!p->o.threads)
        p->o.threads = 1;
    p->ncpu = online_cpus();
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->idle, NULL);
    for (unsigned i = 0; i < o->helpers; i++) {
        int e = pthread_create(&p->th[i], NULL, helper_main, p);
        if (e != 0) {
            qpool_free(p);
            return ct_err_set(err, CT_EIO, "cannot start query pool thread %u of %u: %s", i + 1,
                              o->helpers, strerror(e));
        }
        p->nthreads++;
    }
    *out = p;
    return CT_OK;
}

void qpool_free(struct qpool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->nthreads; i++)
        pthread_join(p->th[i], NULL);
    pthread_cond_destroy(&p->idle);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->mu);
    free(p->th);
    free(p);
}

unsigned qpool_threads(const struct qpool *p)
{
    return p ? p->o.threads : 1;
}

/* True when every CPU already has a runnable thread (Linux /proc/loadavg), so that a helper scan
 * thread would mostly wait for a CPU and the query, which needs every piece, would wait for it
 * (measured: 2-3x slower medians at load 7 on 2 CPUs than one thread doing everything); then the
 * query runs alone. The measure is the threads runnable besides this one, averaged over the
 * checks of about the last second (an exponential average of samples at least 100 ms apart,
 * started from the 1-minute load average after a pause of over 2 s), or a 1-minute load average
 * of twice the CPUs. One sample alone misjudged: another process' threads runnable for a moment
 * (a Go server's spinning threads after an answer, a client) made queries run on one thread
 * for the next 100 ms on an otherwise idle machine; the 1-minute average alone would count a
 * burst that just ended, such as an ingest. */
static bool qpool_loadavg_busy(struct qpool *p)
{
    uint64_t now = clock_mono_ns(),
             then = atomic_load_explicit(&p->checked_ns, memory_order_relaxed);
    if (then && now - then < 100 * 1000 * 1000ULL)
        return atomic_load_explicit(&p->busy, memory_order_relaxed);
    atomic_store_explicit(&p->checked_ns, now, memory_order_relaxed);
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f)
        return false;
    double la1 = 0;
    long running = 0, total = 0;
    int got = fscanf(f, "%lf %*f %*f %ld/%ld", &la1, &running, &total);
    fclose(f);
    if (got != 3)
        return false;
    double avg = atomic_load_explicit(&p->others, memory_order_relaxed);
    if (!then || now - then > 2000 * 1000 * 1000ULL)
        avg = la1;
    avg = 0.75 * avg + 0.25 * (double)(running - 1);
    atomic_store_explicit(&p->others, avg, memory_order_relaxed);
    bool b = la1 >= 2.0 * (double)p->ncpu || avg >= (double)p->ncpu;
    atomic_store_explicit(&p->busy, b, memory_order_relaxed);
    return b;
}

bool qpool_busy(struct qpool *p)
{
    if (!p)
        return false;
    if (p->o.busy)
        return p->o.busy(p->o.busy_arg);
    return p->o.loadavg && qpool_loadavg_busy(p);
}

void qpool_run(struct qpool *p, struct qpool_job *x, unsigned helpers)
{
    if (!p || helpers > p->nthreads)
        helpers = p ? p->nthreads : 0;
    if (!helpers) {
        x->fn(x->arg);
        return;
    }
    pthread_mutex_lock(&p->mu);
    x->deadline_ns = wc_request_deadline();
    x->want = helpers;
    x->busy = 0;
    x->next = p->head;
    p->head = x;
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < helpers; i++)
        pthread_cond_signal(&p->work);
    x->fn(x->arg); /* this thread takes pieces too */
    pthread_mutex_lock(&p->mu);
    struct qpool_job **pp = &p->head;
    while (*pp != x)
        pp = &(*pp)->next;
    *pp = x->next;
    x->want = 0;
    while (x->busy)
        pthread_cond_wait(&p->idle, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
