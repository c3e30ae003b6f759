/* test_api_put.c - /api/put's body step (tsd/api_put.c, api_put_body) on a real ingest pipeline
 * with small batches: a well-formed body writes every accepted point; a malformed one writes
 * nothing and counts nothing, wherever its error is (within the first batch, or after several
 * batches' worth of points), and answers jsonput_parse's message; repeated tags are checked as
 * any. This file includes api_put.c
 * (its functions are static) with a TSD reduced to the rules and the pipeline. */
#include "tsd/api_put.c"

#include <stdatomic.h>

#include "tests/lib/ctest.h"

static _Atomic size_t written; /* points the write function saw */

static int write_all(void *arg, struct ingest_batch *const *b, size_t nb, struct ct_err *err)
{
    (void)arg;
    (void)err;
    for (size_t i = 0; i < nb; i++) {
        for (size_t k = 0; k < ingest_batch_count(b[i]); k++)
            ingest_batch_set_outcome(b[i], k, INGEST_WRITTEN, NULL);
        atomic_fetch_add(&written, ingest_batch_count(b[i]));
    }
    return CT_OK;
}

struct outcome {
    int rc;
    size_t npoints, success, failed;
    char msg[256];
    char errors[2048]; /* "index:message\n" per failed point, by index */
};

/* One body through api_put_body as api_put_work runs it, batches of 4 points; waits for the
 * writes. */
static void put_body(const char *body, struct outcome *o)
{
    static struct tsd t;
    t.rules.max_tags = 8;
    struct ingest_options opt;
    ingest_options_init(&opt);
    opt.batch_points = 4;
    opt.batches = 4;
    struct ct_err err = {0};
    assert_int_equal(ingest_new(&opt, write_all, NULL, &t.ingest, &err), CT_OK);
    size_t len = strlen(body);
    char *scratch = malloc(len + 1);
    struct jsonput_point *jp = malloc(sizeof(*jp));
    struct api_put_ctx *x = calloc(1, sizeof(*x));
    struct api_put_job *job = calloc(1, sizeof(*job));
    assert_true(scratch && jp && x && job);
    api_put_start(x, job, &t, body);
    memset(o, 0, sizeof(*o));
    o->rc = api_put_body(x, len, scratch, jp, &o->npoints, o->msg, sizeof(o->msg));
    pthread_mutex_lock(&job->mu);
    while (job->refs > 1)
        pthread_cond_wait(&job->cv, &job->mu);
    o->success = job->success;
    o->failed = job->failed;
    if (job->nerrs > 1)
        qsort(job->errs, job->nerrs, sizeof(job->errs[0]), api_put_err_cmp);
    size_t w = 0;
    for (size_t i = 0; i < job->nerrs && w < sizeof(o->errors); i++)
        w += (size_t)snprintf(o->errors + w, sizeof(o->errors) - w, "%zu:%s\n", job->errs[i].index,
                              job->errs[i].msg);
    pthread_mutex_unlock(&job->mu);
    assert_int_equal(ingest_in_use(t.ingest), 0); /* every batch back in the pool */
    api_put_job_unref(job);
    free(x->src);
    free(x);
    free(scratch);
    free(jp);
    ingest_free(t.ingest);
}

/* "[", n points, every bad_every-th (1-based, 0: none) with an unparseable value, then tail. */
static char *body_of(int n, int bad_every, const char *tail)
{
    size_t cap = (size_t)n * 160 + strlen(tail) + 8;
    char *b = malloc(cap);
    assert_non_null(b);
    size_t w = 1;
    b[0] = '[';
    for (int i = 0; i < n; i++)
        w += (size_t)snprintf(b + w, cap - w,
                              "%s{\"metric\":\"sys.cpu.user\",\"timestamp\":%d,\"value\":%s,"
                              "\"tags\":{\"host\":\"host_%d\",\"dc\":\"dc_0\"}}",
                              i ? "," : "", 1356998400 + i,
                              bad_every && (i + 1) % bad_every == 0 ? "\"x\"" : "42.5", i % 7);
    snprintf(b + w, cap - w, "%s", tail);
    return b;
}

static uint64_t stats_sum(void)
{
    return tstats_get(TSTATS_POINTS_ADDED) + tstats_get(TSTATS_INVALID_VALUES) +
           tstats_get(TSTATS_ILLEGAL_ARGUMENTS);
}

static void test_api_put_well_formed_bodies_write_every_good_point(void **state)
{
    (void)state;
    struct outcome o;
    for (int n = 1; n <= 13; n += 3) {
        char *b = body_of(n, 5, "]");
        size_t before = atomic_load(&written);
        uint64_t invalid = tstats_get(TSTATS_INVALID_VALUES);
        put_body(b, &o);
        assert_int_equal(o.rc, 0);
        assert_int_equal(o.npoints, (size_t)n);
        assert_int_equal(o.failed, (size_t)(n / 5));
        assert_int_equal(o.success, (size_t)(n - n / 5));
        assert_int_equal(atomic_load(&written) - before, (size_t)(n - n / 5));
        assert_int_equal(tstats_get(TSTATS_INVALID_VALUES) - invalid, (uint64_t)(n / 5));
        free(b);
    }
    put_body("{\"metric\":\"m\",\"timestamp\":1356998400,\"value\":1,\"tags\":{\"a\":\"b\"}}", &o);
    assert_int_equal(o.rc, 0);
    assert_int_equal(o.success, 1);
    /* escapes (the quick check gives up: the full one passes the body before the first batch
     * is submitted) and whitespace (the general reader) */
    char b[4096];
    size_t w = 0;
    for (int i = 0; i < 10; i++)
        w += (size_t)snprintf(b + w, sizeof(b) - w,
                              "%s{ \"metric\" : \"sys.cpu\\u002euser\", \"timestamp\": %d, "
                              "\"value\": 1, \"tags\": {\"host\": \"web\\u0030\"}}",
                              i ? ", " : "[", 1356998400 + i);
    snprintf(b + w, sizeof(b) - w, "]");
    size_t before = atomic_load(&written);
    put_body(b, &o);
    assert_int_equal(o.rc, 0);
    assert_int_equal(o.success, 10);
    assert_int_equal(atomic_load(&written) - before, 10);
}

/* Malformed after 0, 3 (inside the first batch) and 4, 9, 17 points (after one or more batches
 * filled up): nothing written, nothing counted, jsonput_parse's message. */
static void test_api_put_malformed_bodies_write_nothing_wherever_the_error_is(void **state)
{
    (void)state;
    static const char *const tails[] = {
        ",{\"metric\":\"m\",}]", /* a syntax error in the last point */
        "",                      /* the array never ends */
        "] x",                   /* trailing characters */
        ",{\"metric\":\"\\q\"}]" /* a bad escape */
    };
    static const int counts[] = {0, 3, 4, 9, 17};
    for (size_t t = 0; t < sizeof tails / sizeof tails[0]; t++) {
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            char *b = body_of(counts[c], 2, tails[t]);
            char want[256] = "";
            {
                size_t n = strlen(b), np = 0;
                char *scratch = malloc(n + 1);
                struct jsonput_point *jp = malloc(sizeof(*jp));
                assert_int_equal(jsonput_check(b, n, want, sizeof want), -1);
                char m2[256];
                assert_int_equal(jsonput_parse(b, n, scratch, jp, NULL, NULL, &np, m2, sizeof m2),
                                 -1);
                assert_string_equal(want, m2);
                free(scratch);
                free(jp);
            }
            size_t before = atomic_load(&written);
            uint64_t stats = stats_sum();
            struct outcome o;
            put_body(b, &o);
            if (o.rc != -1 || strcmp(o.msg, want) != 0)
                fail_msg("body [%s]: rc %d [%s], want -1 [%s]", b, o.rc, o.msg, want);
            assert_int_equal(atomic_load(&written), before);
            assert_int_equal(o.success, 0);
            assert_int_equal(stats_sum(), stats);
            free(b);
        }
    }
}

/* The tags' characters are found once for a run of points with the same tags: never taken from
 * a point whose checks stopped before the names (an empty metric) for the next point with its
 * tags, nor from other tags. */
static void test_api_put_repeated_tags_are_checked_like_any(void **state)
{
    (void)state;
#define P(m, tags) "{\"metric\":\"" m "\",\"timestamp\":1356998400,\"value\":1,\"tags\":{" tags "}}"
#define GOOD       "\"host\":\"a\",\"dc\":\"b\""
#define BAD        "\"host\":\"a!\",\"dc\":\"b\""
    const char *body = "[" P("m", GOOD) "," /* 0: written */
        P("", BAD) ","                      /* 1: stops before the names */
        P("m", BAD) ","                     /* 2: its tags repeat 1's */
        P("m", BAD) ","                     /* 3: and 2's */
        P("m!", GOOD) ","                   /* 4: a bad metric, good tags */
        P("m", GOOD) ","                    /* 5: written */
        P("m", BAD) "]";                    /* 6: other tags than 5's */
#undef P
#undef GOOD
#undef BAD
    struct outcome o;
    put_body(body, &o);
    assert_int_equal(o.rc, 0);
    assert_int_equal(o.npoints, 7);
    assert_int_equal(o.success, 2);
    assert_int_equal(o.failed, 5);
    assert_string_equal(o.errors,
                        "1:Metric name was empty\n"
                        "2:Invalid tag value with key [host] (\"a!\"): illegal character: !\n"
                        "3:Invalid tag value with key [host] (\"a!\"): illegal character: !\n"
                        "4:Invalid metric name (\"m!\"): illegal character: !\n"
                        "6:Invalid tag value with key [host] (\"a!\"): illegal character: !\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_put_well_formed_bodies_write_every_good_point),
        cmocka_unit_test(test_api_put_malformed_bodies_write_nothing_wherever_the_error_is),
        cmocka_unit_test(test_api_put_repeated_tags_are_checked_like_any),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
