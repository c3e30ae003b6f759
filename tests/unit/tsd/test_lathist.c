/* test_lathist.c - the latency histograms of tsd/lathist.h and the TSD's HTTP latency pair in
 * tsd/tstats.h: OpenTSDB 2.4's millisecond bucket layout (Histogram(16000, 2, 100)) and ctsdb's
 * microsecond log-linear one, bucket for bucket; OpenTSDB's percentile rule on inputs worked out
 * by hand; the empty histogram; exact counts under concurrent adds; and tstats' truncation of
 * nanoseconds into whole ms and us. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/ctest.h"
#include "tsd/lathist.h"
#include "tsd/tstats.h"

static const int pcts[] = {50, 75, 90, 95};

static void pct4(const struct lathist *h, uint64_t out[4])
{
    lathist_percentiles(h, pcts, out, 4);
}

static void test_otsdb_layout_is_opentsdbs(void **state)
{
    (void)state;
    const enum lathist_layout L = LATHIST_OTSDB_MS;
    assert_int_equal(lathist_nbuckets(L), 64);
    /* 2 ms linear buckets below 100 ms */
    assert_int_equal(lathist_bucket_of(L, 0), 0);
    assert_int_equal(lathist_bucket_of(L, 1), 0);
    assert_int_equal(lathist_bucket_of(L, 2), 1);
    assert_int_equal(lathist_bucket_of(L, 99), 49);
    assert_int_equal(lathist_bucket_high(L, 0), 2);
    assert_int_equal(lathist_bucket_high(L, 49), 100);
    /* then [100, 104), [104, 108), [108, 116), ... */
    assert_int_equal(lathist_bucket_of(L, 100), 50);
    assert_int_equal(lathist_bucket_of(L, 103), 50);
    assert_int_equal(lathist_bucket_of(L, 104), 51);
    assert_int_equal(lathist_bucket_of(L, 107), 51);
    assert_int_equal(lathist_bucket_of(L, 108), 52);
    assert_int_equal(lathist_bucket_of(L, 115), 52);
    assert_int_equal(lathist_bucket_of(L, 116), 53);
    assert_int_equal(lathist_bucket_high(L, 50), 104);
    assert_int_equal(lathist_bucket_high(L, 51), 108);
    assert_int_equal(lathist_bucket_high(L, 52), 116);
    /* ... up to [8292, 16484), then the overflow bucket reading as Integer.MAX_VALUE */
    assert_int_equal(lathist_bucket_of(L, 8292), 62);
    assert_int_equal(lathist_bucket_of(L, 16483), 62);
    assert_int_equal(lathist_bucket_high(L, 62), 16484);
    assert_int_equal(lathist_bucket_of(L, 16484), 63);
    assert_int_equal(lathist_bucket_of(L, UINT64_MAX), 63);
    assert_int_equal(lathist_bucket_high(L, 63), 2147483647);
}

static void test_fine_layout_is_log_linear_in_us(void **state)
{
    (void)state;
    const enum lathist_layout L = LATHIST_FINE_US;
    assert_int_equal(lathist_nbuckets(L), 592);
    for (uint64_t v = 0; v < 16; v++) { /* exact */
        assert_int_equal(lathist_bucket_of(L, v), v);
        assert_int_equal(lathist_bucket_high(L, v), v + 1);
    }
    assert_int_equal(lathist_bucket_of(L, 16), 16);
    assert_int_equal(lathist_bucket_of(L, 31), 31);
    assert_int_equal(lathist_bucket_of(L, 32), 32); /* [32, 34) */
    assert_int_equal(lathist_bucket_of(L, 33), 32);
    assert_int_equal(lathist_bucket_of(L, 34), 33);
    assert_int_equal(lathist_bucket_high(L, 32), 34);
    /* sub-millisecond answers are told apart: 100, 200, 500 and 999 us */
    assert_int_equal(lathist_bucket_of(L, 100), 57); /* [100, 104) */
    assert_int_equal(lathist_bucket_high(L, 57), 104);
    assert_int_equal(lathist_bucket_of(L, 200), 73);  /* [200, 208) */
    assert_int_equal(lathist_bucket_of(L, 500), 95);  /* [496, 512) */
    assert_int_equal(lathist_bucket_of(L, 999), 111); /* [992, 1024) */
    assert_int_equal(lathist_bucket_of(L, 1024), 112);
    assert_int_equal(lathist_bucket_high(L, 111), 1024);
    /* the top bucket ends at 2^40 us and takes everything beyond */
    assert_int_equal(lathist_bucket_of(L, LATHIST_FINE_MAX_US), 591);
    assert_int_equal(lathist_bucket_of(L, LATHIST_FINE_MAX_US + 1), 591);
    assert_int_equal(lathist_bucket_of(L, UINT64_MAX), 591);
    assert_int_equal(lathist_bucket_high(L, 591), UINT64_C(1) << 40);
}

/* Invariant (2) of lathist.c, for every bucket of both layouts: contiguous, ascending, and each
 * bucket holds exactly the values up to its upper bound. A fine bucket is at most 1/16 of its
 * lower bound wide. */
static void test_buckets_tile_the_line(void **state)
{
    (void)state;
    const enum lathist_layout ls[] = {LATHIST_OTSDB_MS, LATHIST_FINE_US};
    for (size_t k = 0; k < 2; k++) {
        enum lathist_layout L = ls[k];
        uint64_t low = 0;
        for (size_t i = 0; i < lathist_nbuckets(L); i++) {
            uint64_t high = lathist_bucket_high(L, i);
            assert_true(high > low);
            assert_int_equal(lathist_bucket_of(L, low), i);
            if (i + 1 < lathist_nbuckets(L)) {
                assert_int_equal(lathist_bucket_of(L, high - 1), i);
                assert_int_equal(lathist_bucket_of(L, high), i + 1);
            }
            if (L == LATHIST_FINE_US && low >= 16)
                assert_true((high - low) * 16 <= low);
            low = high;
        }
    }
}

static void test_empty_histogram_answers_zero(void **state)
{
    (void)state;
    struct lathist h;
    lathist_init(&h, LATHIST_OTSDB_MS);
    uint64_t p[4] = {9, 9, 9, 9};
    pct4(&h, p);
    for (int i = 0; i < 4; i++)
        assert_int_equal(p[i], 0);
    assert_int_equal(lathist_count(&h), 0);
    lathist_init(&h, LATHIST_FINE_US);
    pct4(&h, p);
    for (int i = 0; i < 4; i++)
        assert_int_equal(p[i], 0);
}

/* Sub-millisecond requests all fall in [0, 2) ms: OpenTSDB reports them as 2. */
static void test_otsdb_sub_ms_requests_read_as_2(void **state)
{
    (void)state;
    struct lathist h = LATHIST_INITIALIZER(LATHIST_OTSDB_MS);
    for (int i = 0; i < 10; i++)
        lathist_add(&h, 0);
    uint64_t p[4];
    pct4(&h, p);
    for (int i = 0; i < 4; i++)
        assert_int_equal(p[i], 2);
}

/* {1, 3, 150, 20000} ms, n = 4. p25: rank 1; from the top, 20000 leaves 3, 150 leaves 2, 3
 * leaves 1 <= 1: bucket [2, 4) -> 4. p50: rank 2; 150's bucket [132, 164) leaves 2 -> 164.
 * p75, p90, p95: rank 3; the overflow bucket already leaves 3 -> 2147483647. */
static void test_otsdb_percentiles_by_hand(void **state)
{
    (void)state;
    struct lathist h = LATHIST_INITIALIZER(LATHIST_OTSDB_MS);
    const uint64_t v[] = {20000, 1, 150, 3};
    for (size_t i = 0; i < 4; i++)
        lathist_add(&h, v[i]);
    const int ps[] = {25, 50, 75, 90, 95, 100};
    uint64_t p[6];
    lathist_percentiles(&h, ps, p, 6);
    assert_int_equal(p[0], 4);
    assert_int_equal(p[1], 164);
    assert_int_equal(p[2], 2147483647);
    assert_int_equal(p[3], 2147483647);
    assert_int_equal(p[4], 2147483647);
    assert_int_equal(p[5], 2147483647);
    assert_int_equal(lathist_count(&h), 4);
}

/* 0..99 ms once each: two values per 2 ms bucket, so at most r values lie below bucket i when
 * 2i <= r: p50 -> bucket 25 -> 52, p75 -> 37 -> 76, p90 -> 45 -> 92, p95 -> 47 -> 96. */
static void test_otsdb_percentiles_of_a_ramp(void **state)
{
    (void)state;
    struct lathist h = LATHIST_INITIALIZER(LATHIST_OTSDB_MS);
    for (uint64_t v = 0; v < 100; v++)
        lathist_add(&h, v);
    uint64_t p[4];
    pct4(&h, p);
    assert_int_equal(p[0], 52);
    assert_int_equal(p[1], 76);
    assert_int_equal(p[2], 92);
    assert_int_equal(p[3], 96);
}

/* 50 x 100 us, 25 x 200 us, 15 x 500 us, 10 x 5000 us (n = 100). From the top: [4864, 5120)
 * leaves 90, [496, 512) leaves 75, [200, 208) leaves 50, [100, 104) leaves 0. p50 (rank 50) ->
 * 208, p75 -> 512, p90 and p95 -> 5120, p1 (rank 1) -> 104. */
static void test_fine_percentiles_by_hand(void **state)
{
    (void)state;
    struct lathist h = LATHIST_INITIALIZER(LATHIST_FINE_US);
    for (int i = 0; i < 50; i++)
        lathist_add(&h, 100);
    for (int i = 0; i < 25; i++)
        lathist_add(&h, 200);
    for (int i = 0; i < 15; i++)
        lathist_add(&h, 500);
    for (int i = 0; i < 10; i++)
        lathist_add(&h, 5000);
    assert_int_equal(lathist_bucket_high(LATHIST_FINE_US, lathist_bucket_of(LATHIST_FINE_US, 5000)),
                     5120);
    uint64_t p[4];
    pct4(&h, p);
    assert_int_equal(p[0], 208);
    assert_int_equal(p[1], 512);
    assert_int_equal(p[2], 5120);
    assert_int_equal(p[3], 5120);
    const int one = 1;
    uint64_t p1;
    lathist_percentiles(&h, &one, &p1, 1);
    assert_int_equal(p1, 104);
}

#define NTHREADS   8
#define PER_THREAD 200000

static struct lathist shared = LATHIST_INITIALIZER(LATHIST_FINE_US);

static void *adder(void *arg)
{
    uintptr_t t = (uintptr_t)arg;
    for (int i = 0; i < PER_THREAD; i++)
        lathist_add(&shared, i % 2 ? 7 : 1000 + t); /* half in bucket 7, half in [992, 1024) */
    return NULL;
}

static void test_concurrent_adds_are_all_counted(void **state)
{
    (void)state;
    pthread_t th[NTHREADS];
    for (uintptr_t t = 0; t < NTHREADS; t++)
        assert_int_equal(pthread_create(&th[t], NULL, adder, (void *)t), 0);
    for (int t = 0; t < NTHREADS; t++)
        assert_int_equal(pthread_join(th[t], NULL), 0);
    assert_int_equal(lathist_count(&shared), (uint64_t)NTHREADS * PER_THREAD);
    assert_int_equal(lathist_bucket_count(&shared, 7), (uint64_t)NTHREADS * PER_THREAD / 2);
    assert_int_equal(lathist_bucket_count(&shared, 111), (uint64_t)NTHREADS * PER_THREAD / 2);
    uint64_t p[4];
    pct4(&shared, p);
    assert_int_equal(p[0], 1024); /* rank n/2 leaves the 1000 us half above */
    assert_int_equal(p[3], 1024);
}

/* tstats_http_latency_add truncates to whole ms for OpenTSDB's histogram (1.999999 ms is 1 ms,
 * bucket [0, 2)) and to whole us for ctsdb's; both count every request. */
static void test_tstats_http_latency_feeds_both(void **state)
{
    (void)state;
    assert_int_equal(lathist_count(&tstats_http_latency_ms), 0);
    tstats_http_latency_add(1999999);
    tstats_http_latency_add(2000000);
    tstats_http_latency_add(37400);
    assert_int_equal(lathist_count(&tstats_http_latency_ms), 3);
    assert_int_equal(lathist_count(&tstats_http_latency_us), 3);
    assert_int_equal(lathist_bucket_count(&tstats_http_latency_ms, 0), 2);
    assert_int_equal(lathist_bucket_count(&tstats_http_latency_ms, 1), 1);
    assert_int_equal(
        lathist_bucket_count(&tstats_http_latency_us, lathist_bucket_of(LATHIST_FINE_US, 37)), 1);
    assert_int_equal(
        lathist_bucket_count(&tstats_http_latency_us, lathist_bucket_of(LATHIST_FINE_US, 1999)),
        2); /* 1999 and 2000 us: [1984, 2048) */
    uint64_t p[4];
    pct4(&tstats_http_latency_ms, p);
    assert_int_equal(p[0], 2); /* rank 1: [2, 4) leaves 2 > 1, [0, 2) leaves 0 */
    assert_int_equal(p[1], 4); /* rank 2: [2, 4) leaves 2 */
    pct4(&tstats_http_latency_us, p);
    assert_int_equal(p[0], 2048); /* rank 1: [1984, 2048) leaves 1 (the 37 us one) */
    assert_int_equal(p[3], 2048);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_otsdb_layout_is_opentsdbs),
        cmocka_unit_test(test_fine_layout_is_log_linear_in_us),
        cmocka_unit_test(test_buckets_tile_the_line),
        cmocka_unit_test(test_empty_histogram_answers_zero),
        cmocka_unit_test(test_otsdb_sub_ms_requests_read_as_2),
        cmocka_unit_test(test_otsdb_percentiles_by_hand),
        cmocka_unit_test(test_otsdb_percentiles_of_a_ramp),
        cmocka_unit_test(test_fine_percentiles_by_hand),
        cmocka_unit_test(test_concurrent_adds_are_all_counted),
        cmocka_unit_test(test_tstats_http_latency_feeds_both),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
