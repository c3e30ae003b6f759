/* test_qpool.c - the query executor: every piece of a job is done exactly once whether helpers
 * take part or not; helpers really run pieces (a job that needs two threads at once finishes);
 * a NULL pool runs everything on the caller's thread; the busy check is the one given; bad
 * options are refused. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "query/qpool.h"
#include "tests/lib/ctest.h"

enum {
    NPIECES = 1000
};

struct pieces {
    atomic_uint next;
    atomic_uint done[NPIECES];
    pthread_t caller;
    atomic_uint off_caller; /* pieces done by other threads */
};

static void take_pieces(void *arg)
{
    struct pieces *p = arg;
    for (;;) {
        unsigned i = atomic_fetch_add(&p->next, 1);
        if (i >= NPIECES)
            return;
        atomic_fetch_add(&p->done[i], 1);
        if (!pthread_equal(pthread_self(), p->caller))
            atomic_fetch_add(&p->off_caller, 1);
    }
}

static void run_pieces(struct qpool *pool, unsigned helpers, unsigned *off_caller)
{
    static struct pieces p;
    memset(&p, 0, sizeof(p));
    p.caller = pthread_self();
    struct qpool_job job = {.fn = take_pieces, .arg = &p};
    qpool_run(pool, &job, helpers);
    for (unsigned i = 0; i < NPIECES; i++)
        assert_int_equal(atomic_load(&p.done[i]), 1);
    assert_int_equal(job.busy, 0); /* no helper still holds it */
    *off_caller = atomic_load(&p.off_caller);
}

static void test_qpool_null_pool_runs_on_the_callers_thread(void **state)
{
    (void)state;
    unsigned off;
    run_pieces(NULL, 3, &off);
    assert_int_equal(off, 0);
    assert_int_equal(qpool_threads(NULL), 1);
    assert_false(qpool_busy(NULL));
}

static void test_qpool_every_piece_once_with_and_without_helpers(void **state)
{
    (void)state;
    struct qpool_options o;
    qpool_options_init(&o);
    o.helpers = 3;
    o.threads = 4;
    struct qpool *p = NULL;
    struct ct_err err = {0};
    assert_int_equal(qpool_new(&o, &p, &err), CT_OK);
    assert_int_equal(qpool_threads(p), 4);
    unsigned off;
    for (int r = 0; r < 50; r++)
        run_pieces(p, 3, &off);
    run_pieces(p, 0, &off); /* asked for no helpers: the caller alone */
    assert_int_equal(off, 0);
    qpool_free(p);
}

/* A job of two pieces where each waits (bounded) for the other to start: it finishes at once
 * only when a helper takes the second piece while the caller holds the first. */
struct pair {
    atomic_uint next, started;
    atomic_bool met;
};

static void pair_piece(void *arg)
{
    struct pair *p = arg;
    if (atomic_fetch_add(&p->next, 1) >= 2)
        return;
    atomic_fetch_add(&p->started, 1);
    struct timespec d = {0, 1000 * 1000};
    for (int i = 0; i < 5000 && atomic_load(&p->started) < 2; i++) /* at most ~5 s */
        nanosleep(&d, NULL);
    if (atomic_load(&p->started) == 2)
        atomic_store(&p->met, true);
}

static void test_qpool_helpers_take_pieces_alongside_the_caller(void **state)
{
    (void)state;
    struct qpool_options o;
    qpool_options_init(&o);
    o.helpers = 1;
    struct qpool *p = NULL;
    struct ct_err err = {0};
    assert_int_equal(qpool_new(&o, &p, &err), CT_OK);
    struct pair pr = {0};
    struct qpool_job job = {.fn = pair_piece, .arg = &pr};
    qpool_run(p, &job, 1);
    assert_true(atomic_load(&pr.met));
    qpool_free(p);
}

static bool answer(void *arg)
{
    return *(bool *)arg;
}

static void test_qpool_busy_is_the_check_given(void **state)
{
    (void)state;
    bool busy = true;
    struct qpool_options o;
    qpool_options_init(&o);
    o.busy = answer;
    o.busy_arg = &busy;
    struct qpool *p = NULL;
    struct ct_err err = {0};
    assert_int_equal(qpool_new(&o, &p, &err), CT_OK);
    assert_true(qpool_busy(p));
    busy = false;
    assert_false(qpool_busy(p));
    qpool_free(p);
    qpool_options_init(&o); /* no check, no loadavg: never busy */
    assert_int_equal(qpool_new(&o, &p, &err), CT_OK);
    assert_false(qpool_busy(p));
    assert_int_equal(qpool_threads(p), 1);
    qpool_free(p);
    qpool_options_system(&o);
    assert_true(o.loadavg && o.threads >= 1 && o.threads <= 4 && o.helpers == o.threads - 1);
    o.helpers = QPOOL_MAX_HELPERS + 1;
    p = NULL;
    assert_int_equal(qpool_new(&o, &p, &err), CT_EINVAL);
    assert_null(p);
    assert_non_null(strstr(err.msg, "helper threads"));
    qpool_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qpool_null_pool_runs_on_the_callers_thread),
        cmocka_unit_test(test_qpool_every_piece_once_with_and_without_helpers),
        cmocka_unit_test(test_qpool_helpers_take_pieces_alongside_the_caller),
        cmocka_unit_test(test_qpool_busy_is_the_check_given),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
