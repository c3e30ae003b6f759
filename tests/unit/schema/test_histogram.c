/* test_histogram.c - OpenTSDB's SimpleHistogram as ctsdb reads and writes it: the codec against
 * bytes written out by hand from its Kryo layout (the vectors of OpenTSDB's TestSimpleHistogram:
 * 8 buckets with an id byte, 3 and 4 buckets without), varints of every length, the percentile
 * rule (its asserted answers: p50 = 8, p99 = 15, p outside [1, 100] = -1), the SUM merge, bucket
 * order, the cell qualifier, and every malformed input refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "schema/histogram.h"
#include "tests/lib/ctest.h"

/* TestSimpleHistogram's first vector: id 42, buckets [1,2)..[8,9) with 5 5 5 0 0 0 0 0,
 * underflow 0, overflow 2. Floats are big-endian IEEE (1.0f = 3f800000). */
static const uint8_t VEC8[] = {
    42,   0x00, 0x08,                                     /* id, 8 buckets */
    0x3f, 0x80, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x05, /* 1 2 5 */
    0x40, 0x00, 0x00, 0x00, 0x40, 0x40, 0x00, 0x00, 0x05, /* 2 3 5 */
    0x40, 0x40, 0x00, 0x00, 0x40, 0x80, 0x00, 0x00, 0x05, /* 3 4 5 */
    0x40, 0x80, 0x00, 0x00, 0x40, 0xa0, 0x00, 0x00, 0x00, /* 4 5 0 */
    0x40, 0xa0, 0x00, 0x00, 0x40, 0xc0, 0x00, 0x00, 0x00, /* 5 6 0 */
    0x40, 0xc0, 0x00, 0x00, 0x40, 0xe0, 0x00, 0x00, 0x00, /* 6 7 0 */
    0x40, 0xe0, 0x00, 0x00, 0x41, 0x00, 0x00, 0x00, 0x00, /* 7 8 0 */
    0x41, 0x00, 0x00, 0x00, 0x41, 0x10, 0x00, 0x00, 0x00, /* 8 9 0 */
    0x00, 0x02,                                           /* underflow 0, overflow 2 */
};

static void test_histogram_codec_reads_and_writes_opentsdbs_bytes(void **state)
{
    (void)state;
    struct histo h;
    struct ct_err err = {0};
    histo_init(&h, 0);
    assert_int_equal(histo_decode(VEC8, sizeof(VEC8), true, &h, &err), CT_OK);
    assert_int_equal(h.id, 42);
    assert_int_equal(h.n, 8);
    assert_true(h.b[0].lo == 1.0f && h.b[0].hi == 2.0f && h.b[0].count == 5);
    assert_true(h.b[7].lo == 8.0f && h.b[7].hi == 9.0f && h.b[7].count == 0);
    assert_int_equal(h.underflow, 0);
    assert_int_equal(h.overflow, 2);
    uint8_t *out = NULL;
    size_t len = 0;
    assert_int_equal(histo_encode(&h, true, &out, &len, &err), CT_OK);
    assert_int_equal(len, sizeof(VEC8));
    assert_memory_equal(out, VEC8, len);
    free(out);
    /* without the id byte: the same bytes from the bucket count on */
    assert_int_equal(histo_encode(&h, false, &out, &len, &err), CT_OK);
    assert_int_equal(len, sizeof(VEC8) - 1);
    assert_memory_equal(out, VEC8 + 1, len);
    struct histo h2;
    histo_init(&h2, 7);
    assert_int_equal(histo_decode(out, len, false, &h2, &err), CT_OK);
    assert_int_equal(h2.id, 7);
    assert_int_equal(h2.n, 8);
    free(out);
    histo_clear(&h);
    histo_clear(&h2);
}

static void test_histogram_varints_of_every_length(void **state)
{
    (void)state;
    static const uint64_t counts[] = {0,
                                      127,
                                      128,
                                      16383,
                                      16384,
                                      (1ull << 35) + 3,
                                      (1ull << 56) - 1,
                                      1ull << 56,
                                      UINT64_MAX};
    struct ct_err err = {0};
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        struct histo h, d;
        histo_init(&h, 0);
        histo_init(&d, 0);
        assert_int_equal(histo_add(&h, 0.5f, 1.5f, counts[i], &err), CT_OK);
        h.overflow = counts[i];
        uint8_t *out;
        size_t len;
        assert_int_equal(histo_encode(&h, false, &out, &len, &err), CT_OK);
        /* 2 + 8 + two varints of the same length + a one-byte underflow */
        size_t vl = counts[i] < 128 ? 1 : counts[i] < 16384 ? 2 : counts[i] >= (1ull << 56) ? 9 : 0;
        if (vl)
            assert_int_equal(len, 2 + 8 + 2 * vl + 1);
        assert_int_equal(histo_decode(out, len, false, &d, &err), CT_OK);
        assert_true(d.b[0].count == counts[i] && d.overflow == counts[i]);
        /* every shorter prefix is refused */
        for (size_t cut = 0; cut < len; cut++)
            assert_int_equal(histo_decode(out, cut, false, &d, &err), CT_EINVAL);
        free(out);
        histo_clear(&h);
        histo_clear(&d);
    }
}

static void test_histogram_percentiles_as_opentsdb(void **state)
{
    (void)state;
    struct histo h;
    struct ct_err err = {0};
    histo_init(&h, 0);
    /* testSinglePercentile: [1,6) 5, [6,10) 10, [10,20) 1: 50% is reached in [6,10) -> 8 */
    assert_int_equal(histo_add(&h, 6, 10, 10, &err), CT_OK); /* out of order on purpose */
    assert_int_equal(histo_add(&h, 1, 6, 5, &err), CT_OK);
    assert_int_equal(histo_add(&h, 10, 20, 1, &err), CT_OK);
    assert_true(h.b[0].lo == 1 && h.b[1].lo == 6 && h.b[2].lo == 10);
    assert_true(histo_percentile(&h, 50) == 8.0);
    assert_true(histo_percentile(&h, 1000) == -1.0);
    assert_true(histo_percentile(&h, 0.5) == -1.0);
    /* testPercentileList: + [20,40) 0 -> p99 reached in [10,20) (16/16) -> 15 */
    assert_int_equal(histo_add(&h, 20, 40, 0, &err), CT_OK);
    assert_true(histo_percentile(&h, 99) == 15.0);
    /* 31.25% = 5/16 exactly: the first bucket still reaches it */
    assert_true(histo_percentile(&h, 31.25) == 3.5);
    histo_clear(&h);
    /* nothing counted: 0 */
    histo_init(&h, 0);
    assert_int_equal(histo_add(&h, 1, 2, 0, &err), CT_OK);
    assert_true(histo_percentile(&h, 50) == 0.0);
    histo_clear(&h);
}

static void test_histogram_merge_sums_buckets(void **state)
{
    (void)state;
    struct histo a, b;
    struct ct_err err = {0};
    histo_init(&a, 0);
    histo_init(&b, 0);
    assert_int_equal(histo_add(&a, 1, 6, 5, &err), CT_OK);
    assert_int_equal(histo_add(&a, 6, 10, 10, &err), CT_OK);
    a.underflow = 1;
    a.overflow = 5;
    assert_int_equal(histo_add(&b, 6, 10, 10, &err), CT_OK);
    assert_int_equal(histo_add(&b, 10, 20, 2, &err), CT_OK);
    b.underflow = 1;
    b.overflow = 5;
    assert_int_equal(histo_merge(&a, &b, &err), CT_OK);
    assert_int_equal(a.n, 3);
    assert_true(a.b[0].count == 5 && a.b[1].count == 20 && a.b[2].count == 2);
    assert_true(a.underflow == 2 && a.overflow == 10);
    histo_clear(&a);
    histo_clear(&b);
}

static void test_histogram_bad_input_is_refused(void **state)
{
    (void)state;
    struct histo h;
    struct ct_err err = {0};
    histo_init(&h, 0);
    assert_int_equal(histo_add(&h, 2, 1, 1, &err), CT_EINVAL);
    assert_int_equal(histo_add(&h, NAN, 1, 1, &err), CT_EINVAL);
    static const uint8_t short3[] = {0, 0, 0};
    assert_int_equal(histo_decode(short3, 3, false, &h, &err), CT_EINVAL);
    /* a trailing byte */
    static const uint8_t trail[] = {0, 0, 0, 0, 9};
    assert_int_equal(histo_decode(trail, sizeof(trail), false, &h, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "after the histogram"));
    /* a count past the 16-bit signed limit */
    static const uint8_t many[] = {0x80, 0x00, 0, 0};
    assert_int_equal(histo_decode(many, sizeof(many), false, &h, &err), CT_EINVAL);
    /* a bucket with lower > upper inside the bytes */
    static const uint8_t inverted[] = {0x00, 0x01, 0x40, 0, 0, 0, 0x3f, 0x80, 0, 0, 1, 0, 0};
    assert_int_equal(histo_decode(inverted, sizeof(inverted), false, &h, &err), CT_EINVAL);
    histo_clear(&h);
}

static void test_histogram_qualifiers(void **state)
{
    (void)state;
    uint8_t q[5];
    int64_t ts;
    /* seconds: 0x06 + offset 0x0501 (1281 s) */
    assert_int_equal(histo_qualifier(1388448000, 1388449281000LL, q), 3);
    assert_true(q[0] == 0x06 && q[1] == 0x05 && q[2] == 0x01);
    assert_true(histo_qualifier_time(1388448000, q, 3, &ts));
    assert_int_equal(ts, 1388449281000LL);
    /* milliseconds: 4-byte offset */
    assert_int_equal(histo_qualifier(1388448000, 1388449281250LL, q), 5);
    assert_true(histo_qualifier_time(1388448000, q, 5, &ts));
    assert_int_equal(ts, 1388449281250LL);
    /* annotation and datapoint qualifiers are not histograms */
    static const uint8_t ann[] = {0x01, 0x00, 0x10}, dp[] = {0x50, 0x10};
    assert_false(histo_qualifier_time(1388448000, ann, 3, &ts));
    assert_false(histo_qualifier_time(1388448000, dp, 2, &ts));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_histogram_codec_reads_and_writes_opentsdbs_bytes),
        cmocka_unit_test(test_histogram_varints_of_every_length),
        cmocka_unit_test(test_histogram_percentiles_as_opentsdb),
        cmocka_unit_test(test_histogram_merge_sums_buckets),
        cmocka_unit_test(test_histogram_bad_input_is_refused),
        cmocka_unit_test(test_histogram_qualifiers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
