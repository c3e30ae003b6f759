/* test_ingest.c - the ingest pipeline (tsd/ingest.h): points copied into batches with their
 * fields intact, full batches, the bounded pool (the backpressure), outcomes set by the write
 * function, batch-level failures, and done callbacks. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "tests/lib/ctest.h"
#include "tsd/ingest.h"

struct sink {
    pthread_mutex_t gate_mu; /* with gate_closed: the first write waits until the test opens it */
    pthread_cond_t gate_cv;
    bool gate_closed, in_write;
    atomic_int calls;
    atomic_int batches;
    atomic_int points;
    bool fail;
    bool reject_odd;
    bool unavail_odd; /* odd owners fail as a backend that did not answer, with its code */
    char metric0[64];
    char tag1[64];
};

static int sink_write_one(struct sink *s, struct ingest_batch *b)
{
    size_t n = ingest_batch_count(b);
    for (size_t i = 0; i < n; i++) {
        struct ingest_point p;
        ingest_batch_point(b, i, &p);
        if (i == 0)
            snprintf(s->metric0, sizeof(s->metric0), "%s", p.metric);
        if (i == 0 && p.ntags > 1)
            snprintf(s->tag1, sizeof(s->tag1), "%s=%s", p.tagk[1], p.tagv[1]);
        if (s->reject_odd && p.owner % 2 == 1)
            ingest_batch_set_outcome(b, i, INGEST_UNKNOWN_METRIC,
                                     "No such name for 'metrics': 'x'");
        if (s->unavail_odd && p.owner % 2 == 1) {
            struct ct_err e;
            ct_err_set(&e, CT_EUNAVAIL, "backend unavailable: no answer");
            ingest_batch_set_failure(b, i, INGEST_STORE_ERROR, &e);
        }
    }
    atomic_fetch_add(&s->batches, 1);
    atomic_fetch_add(&s->points, (int)n);
    return CT_OK;
}

static int sink_write(void *arg, struct ingest_batch *const *b, size_t nb, struct ct_err *err)
{
    struct sink *s = arg;
    if (s->gate_closed) {
        pthread_mutex_lock(&s->gate_mu);
        s->in_write = true;
        pthread_cond_broadcast(&s->gate_cv);
        while (s->gate_closed)
            pthread_cond_wait(&s->gate_cv, &s->gate_mu);
        pthread_mutex_unlock(&s->gate_mu);
    }
    atomic_fetch_add(&s->calls, 1);
    for (size_t i = 0; i < nb; i++)
        sink_write_one(s, b[i]);
    if (s->fail)
        return ct_err_set(err, CT_EIO, "disk on fire");
    return CT_OK;
}

struct done {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n;
    int written, failed;
    char msg[256];
    struct ingest *g;
    int codes[8]; /* ingest_batch_outcome_code of the points with owner < 8, last batch */
};

static void on_done(void *arg, struct ingest_batch *b)
{
    struct done *d = arg;
    pthread_mutex_lock(&d->mu);
    for (size_t i = 0; i < ingest_batch_count(b); i++) {
        const char *m;
        struct ingest_point p;
        ingest_batch_point(b, i, &p);
        if (p.owner < 8)
            d->codes[p.owner] = ingest_batch_outcome_code(b, i);
        if (ingest_batch_outcome(b, i, &m) == INGEST_WRITTEN) {
            d->written++;
        } else {
            d->failed++;
            snprintf(d->msg, sizeof(d->msg), "%s", m);
        }
    }
    pthread_mutex_unlock(&d->mu);
    ingest_batch_release(d->g, b); /* before counting it done: the test then checks the pool */
    pthread_mutex_lock(&d->mu);
    d->n++;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

static void wait_done(struct done *d, int n)
{
    pthread_mutex_lock(&d->mu);
    while (d->n < n)
        pthread_cond_wait(&d->cv, &d->mu);
    pthread_mutex_unlock(&d->mu);
}

static struct put_point point(const char *metric, int64_t ts)
{
    struct put_point p;
    memset(&p, 0, sizeof(p));
    p.metric = (struct put_str){metric, strlen(metric)};
    p.ts_ms = ts;
    p.value.kind = PUT_INT;
    p.value.i = 7;
    p.ntags = 2;
    p.tagk[0] = (struct put_str){"host", 4};
    p.tagv[0] = (struct put_str){"web01", 5};
    p.tagk[1] = (struct put_str){"dc", 2};
    p.tagv[1] = (struct put_str){"eu", 2};
    return p;
}

static void test_ingest_points_round_trip_and_are_written(void **state)
{
    (void)state;
    struct sink s = {0};
    struct done d = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, {0}, NULL, {0}};
    struct ct_err err = {0};
    struct ingest *g = NULL;
    assert_int_equal(ingest_new(NULL, sink_write, &s, &g, &err), CT_OK);
    d.g = g;
    struct ingest_batch *b = ingest_batch_get(g);
    struct put_point p = point("sys.cpu", 1000);
    assert_true(ingest_batch_add(b, &p, 42));
    struct ingest_point ip;
    ingest_batch_point(b, 0, &ip);
    assert_string_equal(ip.metric, "sys.cpu");
    assert_int_equal(ip.ts_ms, 1000);
    assert_int_equal(ip.owner, 42);
    assert_int_equal(ip.ntags, 2);
    assert_string_equal(ip.tagv[0], "web01");
    assert_int_equal(ip.series_key_len, strlen("sys.cpu host web01 dc eu "));
    ingest_submit(g, b, on_done, &d);
    wait_done(&d, 1);
    assert_int_equal(d.written, 1);
    assert_string_equal(s.metric0, "sys.cpu");
    assert_string_equal(s.tag1, "dc=eu");
    assert_int_equal(ingest_in_use(g), 0);
    ingest_free(g);
}

static void test_ingest_series_hash_and_brief_form_match_the_full_point(void **state)
{
    (void)state;
    struct sink s = {0};
    struct ct_err err = {0};
    struct ingest *g = NULL;
    assert_int_equal(ingest_new(NULL, sink_write, &s, &g, &err), CT_OK);
    struct ingest_batch *b = ingest_batch_get(g);
    struct put_point p = point("sys.cpu", 1000), q = point("sys.cpu", 2000);
    q.tagv[1] = (struct put_str){"us", 2}; /* another series */
    p.value.kind = PUT_DOUBLE;
    p.value.d = 0.25;
    assert_true(ingest_batch_add(b, &p, 1));
    assert_true(ingest_batch_add(b, &q, 2));
    p.ts_ms = 3000;
    assert_true(ingest_batch_add(b, &p, 3));
    struct ingest_point full[3];
    struct ingest_point_brief brief[3];
    for (size_t i = 0; i < 3; i++) {
        ingest_batch_point(b, i, &full[i]);
        ingest_batch_point_brief(b, i, &brief[i]);
        assert_ptr_equal(brief[i].series_key, full[i].series_key);
        assert_int_equal(brief[i].series_key_len, full[i].series_key_len);
        assert_true(brief[i].series_hash == full[i].series_hash);
        assert_true(brief[i].ts_ms == full[i].ts_ms);
        assert_int_equal(brief[i].value.kind, full[i].value.kind);
        assert_true(brief[i].value.i == full[i].value.i && brief[i].value.d == full[i].value.d);
    }
    assert_true(brief[0].value.kind == PUT_DOUBLE && brief[0].value.d == 0.25);
    /* the same series hashes alike, another series (almost surely) not */
    assert_true(brief[0].series_hash == brief[2].series_hash);
    assert_true(brief[0].series_hash != brief[1].series_hash);
    ingest_batch_release(g, b);
    ingest_free(g);
}

/* A point added by its kept key (ingest_batch_add_key with ingest_key_hash) is the point
 * ingest_batch_add makes of its names: same key bytes, same hash, same fields. */
static void test_ingest_add_key_is_add(void **state)
{
    (void)state;
    struct sink s = {0};
    struct ct_err err = {0};
    struct ingest *g = NULL;
    assert_int_equal(ingest_new(NULL, sink_write, &s, &g, &err), CT_OK);
    struct ingest_batch *b = ingest_batch_get(g);
    struct put_point p = point("sys.cpu", 1000);
    p.value.kind = PUT_DOUBLE;
    p.value.d = 0.5;
    p.ms = true;
    assert_true(ingest_batch_add(b, &p, 4));
    static const char key[] = "sys.cpu\0host\0web01\0dc\0eu";
    struct put_point bare = p; /* the names are not read */
    bare.metric = (struct put_str){"x", 1};
    memset(bare.tagk, 0, sizeof(bare.tagk));
    memset(bare.tagv, 0, sizeof(bare.tagv));
    uint64_t h = ingest_key_hash(g, key, sizeof(key));
    assert_true(ingest_batch_add_key(b, &bare, key, sizeof(key), h, 4));
    struct ingest_point a, k;
    ingest_batch_point(b, 0, &a);
    ingest_batch_point(b, 1, &k);
    assert_int_equal(k.series_key_len, a.series_key_len);
    assert_memory_equal(k.series_key, a.series_key, a.series_key_len);
    assert_true(k.series_hash == a.series_hash);
    assert_true(ingest_batch_series_hash(b, 1) == ingest_batch_series_hash(b, 0));
    assert_string_equal(k.metric, "sys.cpu");
    assert_int_equal(k.ntags, 2);
    assert_string_equal(k.tagk[1], "dc");
    assert_string_equal(k.tagv[1], "eu");
    assert_true(k.ts_ms == 1000 && k.ms && k.owner == 4);
    assert_true(k.value.kind == PUT_DOUBLE && k.value.d == 0.5);
    ingest_batch_release(g, b);
    ingest_free(g);
}

static void test_ingest_pool_is_bounded_and_batches_fill(void **state)
{
    (void)state;
    struct sink s = {0};
    struct ct_err err = {0};
    struct ingest_options o;
    ingest_options_init(&o);
    o.batches = 2;
    o.batch_points = 3;
    struct ingest *g = NULL;
    assert_int_equal(ingest_new(&o, sink_write, &s, &g, &err), CT_OK);
    struct ingest_batch *a = ingest_batch_try_get(g);
    struct ingest_batch *b = ingest_batch_try_get(g);
    assert_non_null(a);
    assert_non_null(b);
    assert_null(ingest_batch_try_get(g)); /* backpressure: every batch in use */
    struct put_point p = point("m", 1);
    for (int i = 0; i < 3; i++)
        assert_true(ingest_batch_add(a, &p, (uint64_t)i));
    assert_true(ingest_batch_full(a));
    assert_false(ingest_batch_add(a, &p, 9));
    assert_int_equal(ingest_batch_count(a), 3);
    ingest_batch_release(g, b);
    ingest_batch_release(g, a);
    assert_int_equal(ingest_in_use(g), 0);
    a = ingest_batch_try_get(g);
    assert_int_equal(ingest_batch_count(a), 0); /* released batches come back empty */
    ingest_batch_release(g, a);
    ingest_free(g);
}

static void test_ingest_outcomes_and_batch_failure(void **state)
{
    (void)state;
    struct sink s = {0};
    s.reject_odd = true;
    struct done d = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, {0}, NULL, {0}};
    struct ct_err err = {0};
    struct ingest *g = NULL;
    assert_int_equal(ingest_new(NULL, sink_write, &s, &g, &err), CT_OK);
    d.g = g;
    struct ingest_batch *b = ingest_batch_get(g);
    struct put_point p = point("m", 1);
    for (uint64_t i = 0; i < 4; i++)
        assert_true(ingest_batch_add(b, &p, i));
    ingest_submit(g, b, on_done, &d);
    wait_done(&d, 1);
    assert_int_equal(d.written, 2);
    assert_int_equal(d.failed, 2);
    assert_string_equal(d.msg, "No such name for 'metrics': 'x'");
    /* a failing write marks every point not already decided */
    s.reject_odd = false;
    s.fail = true;
    b = ingest_batch_get(g);
    assert_true(ingest_batch_add(b, &p, 0));
    ingest_submit(g, b, on_done, &d);
    wait_done(&d, 2);
    assert_int_equal(d.failed, 3);
    assert_string_equal(d.msg, "disk on fire");
    assert_int_equal(d.codes[0], CT_EIO); /* the write's code for the points it left pending */
    /* a failure's code travels with the point (/api/put's 503 needs it); others stay CT_OK */
    s.fail = false;
    s.unavail_odd = true;
    b = ingest_batch_get(g);
    for (uint64_t i = 0; i < 4; i++)
        assert_true(ingest_batch_add(b, &p, i));
    ingest_submit(g, b, on_done, &d);
    wait_done(&d, 3);
    assert_int_equal(d.failed, 5);
    assert_string_equal(d.msg, "backend unavailable: no answer");
    assert_int_equal(d.codes[0], CT_OK);
    assert_int_equal(d.codes[1], CT_EUNAVAIL);
    assert_int_equal(d.codes[2], CT_OK);
    assert_int_equal(d.codes[3], CT_EUNAVAIL);
    ingest_free(g);
}

struct order {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct ingest *g;
    uint64_t seqs[8];
    int n;
};

static void on_done_order(void *arg, struct ingest_batch *b)
{
    struct order *o = arg;
    uint64_t seq = ingest_batch_seq(b);
    ingest_batch_release(o->g, b);
    pthread_mutex_lock(&o->mu);
    o->seqs[o->n++] = seq;
    pthread_cond_broadcast(&o->cv);
    pthread_mutex_unlock(&o->mu);
}

static void test_ingest_a_busy_writer_takes_queued_batches_together_in_order(void **state)
{
    (void)state;
    struct sink s = {0};
    pthread_mutex_init(&s.gate_mu, NULL);
    pthread_cond_init(&s.gate_cv, NULL);
    s.gate_closed = true;
    struct order o = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, {0}, 0};
    struct ingest_options opt;
    ingest_options_init(&opt);
    opt.batch_points = 10;
    opt.group_points = 25; /* two full batches and a part of a third fit, not three */
    struct ct_err err = {0};
    struct ingest *g = NULL;
    assert_int_equal(ingest_new(&opt, sink_write, &s, &g, &err), CT_OK);
    o.g = g;
    struct put_point p = point("m", 1);
    for (uint64_t k = 1; k <= 5; k++) {
        struct ingest_batch *b = ingest_batch_get(g);
        for (int i = 0; i < (k == 4 ? 5 : 10); i++)
            assert_true(ingest_batch_add(b, &p, k));
        ingest_batch_set_seq(b, k);
        ingest_submit(g, b, on_done_order, &o);
        if (k == 1) { /* the writer holds batch 1 before the others are queued */
            pthread_mutex_lock(&s.gate_mu);
            while (!s.in_write)
                pthread_cond_wait(&s.gate_cv, &s.gate_mu);
            pthread_mutex_unlock(&s.gate_mu);
        }
    }
    pthread_mutex_lock(&s.gate_mu);
    s.gate_closed = false;
    pthread_cond_broadcast(&s.gate_cv);
    pthread_mutex_unlock(&s.gate_mu);
    pthread_mutex_lock(&o.mu);
    while (o.n < 5)
        pthread_cond_wait(&o.cv, &o.mu);
    pthread_mutex_unlock(&o.mu);
    for (int i = 0; i < 5; i++)
        assert_int_equal(o.seqs[i], (uint64_t)i + 1); /* done in queue order */
    assert_int_equal(atomic_load(&s.batches), 5);
    assert_int_equal(atomic_load(&s.points), 45);
    assert_int_equal(atomic_load(&s.calls), 3); /* {1}, {2, 3, 4} = 25 points, {5} */
    assert_int_equal(ingest_in_use(g), 0);
    ingest_free(g);
}

/* Queues batches of 10 points with seq = lane * 10 + its number in the lane, lane = seq / 10,
 * the first held by the writer until every other is queued; checks the order they come back in
 * and the number of write calls (groups). */
static void run_lanes(size_t group_points, const uint64_t *seqs, const uint64_t *want, int n,
                      int want_calls)
{
    struct sink s = {0};
    pthread_mutex_init(&s.gate_mu, NULL);
    pthread_cond_init(&s.gate_cv, NULL);
    s.gate_closed = true;
    struct order o = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, {0}, 0};
    struct ingest_options opt;
    ingest_options_init(&opt);
    opt.batch_points = 10;
    opt.group_points = group_points;
    struct ct_err err = {0};
    struct ingest *g = NULL;
    assert_int_equal(ingest_new(&opt, sink_write, &s, &g, &err), CT_OK);
    o.g = g;
    struct put_point p = point("m", 1);
    for (int k = 0; k < n; k++) {
        struct ingest_batch *b = ingest_batch_get(g);
        for (int i = 0; i < 10; i++)
            assert_true(ingest_batch_add(b, &p, seqs[k] / 10));
        ingest_batch_set_seq(b, seqs[k]);
        ingest_batch_set_lane(b, seqs[k] / 10);
        ingest_submit(g, b, on_done_order, &o);
        if (k == 0) { /* the writer holds the first batch before the others are queued */
            pthread_mutex_lock(&s.gate_mu);
            while (!s.in_write)
                pthread_cond_wait(&s.gate_cv, &s.gate_mu);
            pthread_mutex_unlock(&s.gate_mu);
        }
    }
    pthread_mutex_lock(&s.gate_mu);
    s.gate_closed = false;
    pthread_cond_broadcast(&s.gate_cv);
    pthread_mutex_unlock(&s.gate_mu);
    pthread_mutex_lock(&o.mu);
    while (o.n < n)
        pthread_cond_wait(&o.cv, &o.mu);
    pthread_mutex_unlock(&o.mu);
    for (int i = 0; i < n; i++)
        assert_int_equal(o.seqs[i], want[i]);
    assert_int_equal(atomic_load(&s.calls), want_calls);
    assert_int_equal(ingest_in_use(g), 0);
    ingest_free(g);
}

/* Fairness: while the writer holds lane 1's first batch, lane 1 queues three more, then lanes 2
 * and 3 one each. Lanes 2 and 3, with nothing written before, go first, then lane 1 in its order;
 * first in first out would write them last. One batch per group (group_points = a batch), so the
 * order of the writes is the order of taking. */
static void test_ingest_lanes_are_served_round_robin(void **state)
{
    (void)state;
    static const uint64_t seqs[] = {11, 12, 13, 14, 21, 31};
    static const uint64_t want[] = {11, 21, 31, 12, 13, 14};
    run_lanes(10, seqs, want, 6, 6);
}

/* A group (one write, acknowledged together) while two lanes are queued is one batch's worth of
 * points, so lane 2's batch is not acknowledged with lane 1's backlog: {11}, {21}, then lane 1
 * alone, its batches together up to group_points: {12, 13, 14}. Without the rule: {11},
 * {21, 12, 13, 14}. */
static void test_ingest_a_contended_group_is_one_batch(void **state)
{
    (void)state;
    static const uint64_t seqs[] = {11, 12, 13, 14, 21};
    static const uint64_t want[] = {11, 21, 12, 13, 14};
    run_lanes(100, seqs, want, 5, 3);
}

/* Names of every length 0..40 (the copy into the batch takes 4- and 8-byte words for short
 * names) come back byte for byte, each NUL-terminated, with the series key their concatenation;
 * the source bytes around each name are never part of it. */
static void test_ingest_names_of_every_length_are_copied_exactly(void **state)
{
    (void)state;
    struct sink s = {0};
    struct ct_err err = {0};
    struct ingest *g = NULL;
    assert_int_equal(ingest_new(NULL, sink_write, &s, &g, &err), CT_OK);
    char src[3][64];
    for (size_t len = 0; len <= 40; len++) {
        for (int k = 0; k < 3; k++) /* '#' around each name: must not be copied */
            for (size_t i = 0; i < sizeof src[k]; i++)
                src[k][i] = i >= 8 && i < 8 + len ? (char)('a' + (i * 7 + (size_t)k) % 26) : '#';
        struct put_point p = point("m", 1);
        p.metric = (struct put_str){src[0] + 8, len};
        p.ntags = 1;
        p.tagk[0] = (struct put_str){src[1] + 8, len};
        p.tagv[0] = (struct put_str){src[2] + 8, len};
        struct ingest_batch *b = ingest_batch_get(g);
        assert_true(ingest_batch_add(b, &p, 1));
        struct ingest_point ip;
        ingest_batch_point(b, 0, &ip);
        assert_int_equal(strlen(ip.metric), len);
        assert_memory_equal(ip.metric, src[0] + 8, len);
        assert_int_equal(strlen(ip.tagk[0]), len);
        assert_memory_equal(ip.tagk[0], src[1] + 8, len);
        assert_int_equal(strlen(ip.tagv[0]), len);
        assert_memory_equal(ip.tagv[0], src[2] + 8, len);
        assert_int_equal(ip.series_key_len, 3 * (len + 1));
        ingest_batch_release(g, b);
    }
    ingest_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ingest_points_round_trip_and_are_written),
        cmocka_unit_test(test_ingest_series_hash_and_brief_form_match_the_full_point),
        cmocka_unit_test(test_ingest_add_key_is_add),
        cmocka_unit_test(test_ingest_a_busy_writer_takes_queued_batches_together_in_order),
        cmocka_unit_test(test_ingest_lanes_are_served_round_robin),
        cmocka_unit_test(test_ingest_a_contended_group_is_one_batch),
        cmocka_unit_test(test_ingest_pool_is_bounded_and_batches_fill),
        cmocka_unit_test(test_ingest_outcomes_and_batch_failure),
        cmocka_unit_test(test_ingest_names_of_every_length_are_copied_exactly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
