/* test_dpcodec.c - datapoint cells: byte-exact OpenTSDB qualifier/value vectors written from the
 * format description, decoding of every layout (single, compacted, append, legacy float,
 * annotations skipped), the compressed format's round trips and corruption checks, and
 * compaction in both formats (ms/s mixed, duplicates with fix_duplicates on and off), and the
 * compressed encoder's output pinned byte for byte (a hash captured before it was optimised),
 * also from several threads at once. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "schema/dpcodec.h"
#include "schema/dpcodec_format.h"
#include "storage/coding.h"
#include "tests/lib/ctest.h"

#define BASE    1356998400LL /* 2013-01-01T00:00:00Z, a base hour */
#define BASE_MS (BASE * 1000)

static void enc(const struct dpcodec_point *p, const uint8_t *wq, size_t wql, const uint8_t *wv,
                size_t wvl)
{
    uint8_t q[8], v[8];
    size_t ql, vl;
    struct ct_err err = {0};
    assert_int_equal(dpcodec_encode(BASE, p, q, &ql, v, &vl, &err), CT_OK);
    assert_int_equal(ql, wql);
    assert_memory_equal(q, wq, wql);
    assert_int_equal(vl, wvl);
    assert_memory_equal(v, wv, wvl);
}

static void test_single_cells_are_byte_exact(void **state)
{
    (void)state;
    /* 1 s, int 1 -> offset 1 << 4 | 0 */
    struct dpcodec_point p = dpcodec_point_int(BASE_MS + 1000, false, 1);
    enc(&p, (const uint8_t[]){0x00, 0x10}, 2, (const uint8_t[]){0x01}, 1);
    /* 3599 s, int 2^40 -> (3599 << 4) | 7 = 0xE0F7, 8 bytes */
    p = dpcodec_point_int(BASE_MS + 3599000, false, 1LL << 40);
    enc(&p, (const uint8_t[]){0xE0, 0xF7}, 2, (const uint8_t[]){0, 0, 0x01, 0, 0, 0, 0, 0}, 8);
    /* int 300 on 2 bytes (flags 1), int 70000 on 4 (flags 3), -1 on 1 byte */
    p = dpcodec_point_int(BASE_MS, false, 300);
    enc(&p, (const uint8_t[]){0x00, 0x01}, 2, (const uint8_t[]){0x01, 0x2C}, 2);
    p = dpcodec_point_int(BASE_MS, false, 70000);
    enc(&p, (const uint8_t[]){0x00, 0x03}, 2, (const uint8_t[]){0x00, 0x01, 0x11, 0x70}, 4);
    p = dpcodec_point_int(BASE_MS, false, -1);
    enc(&p, (const uint8_t[]){0x00, 0x00}, 2, (const uint8_t[]){0xFF}, 1);
    /* 500 ms, int 300: 0xF0000000 | 500 << 6 | 1 = F0 00 7D 01 */
    p = dpcodec_point_int(BASE_MS + 500, true, 300);
    enc(&p, (const uint8_t[]){0xF0, 0x00, 0x7D, 0x01}, 4, (const uint8_t[]){0x01, 0x2C}, 2);
    /* 10 s, float 1.5 -> flags 0xB, IEEE single 3FC00000 */
    p = dpcodec_point_real(BASE_MS + 10000, false, 1.5);
    assert_int_equal(p.type, DPCODEC_FLOAT);
    enc(&p, (const uint8_t[]){0x00, 0xAB}, 2, (const uint8_t[]){0x3F, 0xC0, 0x00, 0x00}, 4);
    /* 0.1 is not float-exact: double, flags 0xF */
    p = dpcodec_point_real(BASE_MS + 10000, false, 0.1);
    assert_int_equal(p.type, DPCODEC_DOUBLE);
    enc(&p, (const uint8_t[]){0x00, 0xAF}, 2,
        (const uint8_t[]){0x3F, 0xB9, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9A}, 8);
    /* outside the hour */
    struct ct_err err = {0};
    uint8_t q[8], v[8];
    size_t ql, vl;
    p = dpcodec_point_int(BASE_MS + 3600000, false, 1);
    assert_int_equal(dpcodec_encode(BASE, &p, q, &ql, v, &vl, &err), CT_EINVAL);
}

static size_t decode_all(const uint8_t *q, size_t ql, const uint8_t *v, size_t vl,
                         struct dpcodec_point *out, size_t cap, int *rc_out)
{
    struct dpcodec_iter it;
    dpcodec_iter_init(&it, BASE, q, ql, v, vl);
    struct ct_err err = {0};
    size_t n = 0;
    int rc;
    struct dpcodec_point p;
    while ((rc = dpcodec_iter_next(&it, &p, &err)) == CT_OK && n < cap)
        out[n++] = p;
    dpcodec_iter_end(&it);
    *rc_out = rc;
    return n;
}

static void test_decoder_reads_every_opentsdb_layout(void **state)
{
    (void)state;
    struct dpcodec_point pts[8];
    int rc;
    /* compacted: 0 s int 1, 10 s int 2 */
    const uint8_t cq[] = {0x00, 0x00, 0x00, 0xA0}, cv[] = {0x01, 0x02, 0x00};
    assert_int_equal(dpcodec_qualifier_kind(cq, 4), DPCODEC_Q_COMPACTED);
    assert_int_equal(decode_all(cq, 4, cv, 3, pts, 8, &rc), 2);
    assert_int_equal(rc, CT_NOTFOUND);
    assert_true(pts[1].ts_ms == BASE_MS + 10000 && pts[1].i == 2);
    /* compacted, mixed s and ms: meta byte 0x01 */
    const uint8_t mq[] = {0x00, 0x00, 0xF0, 0x00, 0x7D, 0x00}, mv[] = {0x01, 0x02, 0x01};
    assert_int_equal(decode_all(mq, 6, mv, 3, pts, 8, &rc), 2);
    assert_int_equal(rc, CT_NOTFOUND);
    assert_true(pts[1].ts_ms == BASE_MS + 500 && pts[1].ms && pts[1].i == 2);
    /* append: 05 00 00 with (q v) records */
    const uint8_t aq[] = {0x05, 0x00, 0x00}, av[] = {0x00, 0x10, 0x05, 0x00, 0x21, 0x00, 0x06};
    assert_int_equal(dpcodec_qualifier_kind(aq, 3), DPCODEC_Q_APPEND);
    assert_int_equal(decode_all(aq, 3, av, sizeof(av), pts, 8, &rc), 2);
    assert_int_equal(rc, CT_NOTFOUND);
    assert_true(pts[0].ts_ms == BASE_MS + 1000 && pts[0].i == 5);
    assert_true(pts[1].ts_ms == BASE_MS + 2000 && pts[1].i == 6);
    /* legacy float: 8 bytes with a 4-byte flag, the last 4 bytes hold the float */
    const uint8_t lq[] = {0x00, 0x0B}, lv[] = {0, 0, 0, 0, 0x3F, 0xC0, 0, 0};
    assert_int_equal(decode_all(lq, 2, lv, 8, pts, 8, &rc), 1);
    assert_true(pts[0].type == DPCODEC_FLOAT && pts[0].f == 1.5);
    /* annotations, histograms and unknown odd qualifiers are no datapoints */
    const uint8_t nq[] = {0x01, 0x00, 0x0A}, hq[] = {0x06, 0x00, 0x10};
    assert_int_equal(dpcodec_qualifier_kind(nq, 3), DPCODEC_Q_ANNOTATION);
    assert_int_equal(decode_all(nq, 3, (const uint8_t *)"{}", 2, pts, 8, &rc), 0);
    assert_int_equal(rc, CT_NOTFOUND);
    assert_int_equal(dpcodec_qualifier_kind(hq, 3), DPCODEC_Q_OTHER);
    assert_int_equal(decode_all(hq, 3, lv, 8, pts, 8, &rc), 0);
    /* a truncated compacted value is corrupt */
    assert_int_equal(decode_all(cq, 4, cv, 1, pts, 8, &rc), 1);
    assert_int_equal(rc, CT_ECORRUPT);
    /* offset beyond the hour: 3600 << 4 */
    const uint8_t bq[] = {0xE1, 0x00}, bv[] = {1};
    assert_int_equal(decode_all(bq, 2, bv, 1, pts, 8, &rc), 0);
    assert_int_equal(rc, CT_ECORRUPT);
}

static void test_annotation_qualifiers(void **state)
{
    (void)state;
    uint8_t q[5];
    struct ct_err err = {0};
    int64_t t;
    assert_int_equal(dpcodec_annotation_qualifier(BASE, BASE_MS + 10000, false, q), 3);
    assert_memory_equal(q, ((const uint8_t[]){0x01, 0x00, 0x0A}), 3);
    assert_int_equal(dpcodec_annotation_time(BASE, q, 3, &t, &err), CT_OK);
    assert_true(t == BASE_MS + 10000);
    assert_int_equal(dpcodec_annotation_qualifier(BASE, BASE_MS + 10500, true, q), 5);
    assert_memory_equal(q, ((const uint8_t[]){0x01, 0x00, 0x00, 0x29, 0x04}), 5);
    assert_int_equal(dpcodec_annotation_time(BASE, q, 5, &t, &err), CT_OK);
    assert_true(t == BASE_MS + 10500);
}

/* Encodes, checks the round trip and every truncation; returns the value kind chosen. */
static int roundtrip_compressed(const struct dpcodec_point *pts, size_t n, size_t *bytes)
{
    size_t cap = dpcodec_compressed_bound(n);
    uint8_t *v = malloc(cap);
    assert_non_null(v);
    size_t vl;
    struct ct_err err = {0};
    assert_int_equal(dpcodec_compressed_encode(BASE, pts, n, v, &vl, &err), CT_OK);
    assert_true(vl <= cap);
    assert_true(v[0] == DPCODEC_CVERSION || v[0] == DPCODEC_CVERSION_PATCHED);
    struct dpcodec_point *out = calloc(n + 1, sizeof(*out));
    assert_non_null(out);
    int rc;
    uint8_t cq[DPCODEC_CQ_LEN];
    dpcodec_compressed_qualifier(pts, n, cq);
    assert_int_equal(dpcodec_qualifier_kind(cq, sizeof(cq)), DPCODEC_Q_COMPRESSED);
    size_t got = decode_all(cq, sizeof(cq), v, vl, out, n + 1, &rc);
    assert_int_equal(rc, CT_NOTFOUND);
    assert_int_equal(got, n);
    for (size_t i = 0; i < n; i++) {
        assert_true(out[i].ts_ms == pts[i].ts_ms);
        assert_int_equal(out[i].type, pts[i].type);
        assert_int_equal(out[i].ms, pts[i].ms);
        assert_true(dpcodec_point_same_value(&out[i], &pts[i]));
    }
    if (bytes)
        *bytes = vl;
    /* every truncation is detected, never read past the end */
    for (size_t cut = 0; cut < vl; cut += (vl / 16) + 1) {
        decode_all(cq, sizeof(cq), v, cut, out, n + 1, &rc);
        assert_int_equal(rc, CT_ECORRUPT);
    }
    int kind = v[1] >> 2;
    free(out);
    free(v);
    return kind;
}

static void test_compressed_round_trips_every_value_kind(void **state)
{
    (void)state;
    enum {
        N = 360
    };
    struct dpcodec_point p[N];
    size_t bytes;
    /* a regular 10 s counter */
    for (int i = 0; i < N; i++)
        p[i] = dpcodec_point_int(BASE_MS + i * 10000LL, false, 1000000 + i * 37);
    assert_int_equal(roundtrip_compressed(p, N, &bytes), DPCODEC_VK_INT);
    assert_true(bytes < 40); /* a counter with constant slope and period is almost free */
    /* a gauge with two decimals */
    for (int i = 0; i < N; i++)
        p[i] = dpcodec_point_real(BASE_MS + i * 10000LL, false,
                                  (double)(5000 + (i * 7919) % 300) / 100.0);
    assert_int_equal(roundtrip_compressed(p, N, &bytes), DPCODEC_VK_DECIMAL);
    print_message("gauge with 300 random levels: %zu bytes for %d points\n", bytes, N);
    assert_true(bytes < N * 2);
    /* full-precision doubles: XOR path */
    srand(7);
    double x = 50;
    for (int i = 0; i < N; i++) {
        x += (rand() / (double)RAND_MAX - 0.5);
        p[i] = dpcodec_point_real(BASE_MS + i * 10000LL, false, x);
    }
    assert_int_equal(roundtrip_compressed(p, N, NULL), DPCODEC_VK_BITS);
    /* bell-shaped steps (sum of uniforms, ~N(0, 100)) of an integer walk: Rice-coded blocks */
    int64_t walk = 0;
    for (int i = 0; i < N; i++) {
        int64_t step = 0;
        for (int k = 0; k < 12; k++)
            step += rand() % 101 - 50;
        walk += step;
        p[i] = dpcodec_point_int(BASE_MS + i * 10000LL, false, walk);
    }
    assert_int_equal(roundtrip_compressed(p, N, &bytes), DPCODEC_VK_INT);
    print_message("bell-shaped integer walk: %zu bytes for %d points\n", bytes, N);
    /* uniform random residuals in a small range that is no power of two: radix blocks spend
     * log2(37) = 5.2 bits per value instead of 6 */
    for (int i = 0; i < N; i++)
        p[i] = dpcodec_point_int(BASE_MS + i * 10000LL, false, 1000 + rand() % 37);
    assert_int_equal(roundtrip_compressed(p, N, &bytes), DPCODEC_VK_INT);
    assert_true(bytes < (N * 6) / 8);
    /* ... but not in a wide one (2e8 values: a radix block would cost its reader 28 divisions
     * per value for 27.6 bits instead of 28): bit-packed, at a fixed cost per value (the two
     * forms differ by 2 bytes a block here, below what a size check can tell from the rest of
     * the cell: test_encoder_output_bytes_are_pinned pins the choice) */
    for (int i = 0; i < N; i++) {
        uint64_t u = ((uint64_t)rand() << 31 ^ (uint64_t)rand()) % 200000000;
        p[i] = dpcodec_point_int(BASE_MS + i * 10000LL, false, 5000000000LL + (int64_t)u);
    }
    assert_int_equal(roundtrip_compressed(p, N, NULL), DPCODEC_VK_INT);
    /* large values round trip: byte gauges near 5e9 with steps of up to 1e8, counters a step
     * below INT64_MAX wrapping to small values, 2-decimal gauges */
    int64_t by = 5000000000LL, ctr = INT64_MAX - 3000000000000LL;
    double g = 50;
    for (int i = 0; i < N; i++) {
        by += (int64_t)(((uint64_t)rand() << 31 ^ (uint64_t)rand()) % 200000001) - 100000000;
        p[i] = dpcodec_point_int(BASE_MS + i * 10000LL, false, by);
    }
    assert_int_equal(roundtrip_compressed(p, N, NULL), DPCODEC_VK_INT);
    for (int i = 0; i < N; i++) {
        int64_t step =
            1000000 + (int64_t)(((uint64_t)rand() << 31 ^ (uint64_t)rand()) % 100000000000ULL);
        ctr = ctr > INT64_MAX - step ? step - (INT64_MAX - ctr) : ctr + step;
        p[i] = dpcodec_point_int(BASE_MS + i * 10000LL, false, ctr);
    }
    assert_int_equal(roundtrip_compressed(p, N, NULL), DPCODEC_VK_INT);
    for (int i = 0; i < N; i++) {
        g += (double)(rand() % 401 - 200) / 100;
        p[i] = dpcodec_point_real(BASE_MS + i * 10000LL, false, round(g * 100) / 100);
    }
    (void)roundtrip_compressed(p, N, NULL);
    /* uniform values over a power-of-two range: bit-packed blocks of every width, with
     * counts that end a block at every byte offset (the block reader's unchecked 8-byte loads
     * stop 8 bytes before the stream's end; truncations are checked by roundtrip_compressed) */
    for (unsigned w = 1; w <= 64; w++) {
        for (int n = 1 + (int)w % 7; n <= N; n += 37 + (int)w) {
            for (int i = 0; i < n; i++) {
                uint64_t u = ((uint64_t)rand() << 42) ^ ((uint64_t)rand() << 21) ^ (uint64_t)rand();
                if (w < 64)
                    u &= (1ULL << w) - 1;
                if (i % 2 && w < 64)
                    u = i % 4 == 1 ? 0 : (1ULL << w) - 1; /* both ends of the range */
                p[i] = dpcodec_point_int(BASE_MS + i * 10000LL, false, (int64_t)u);
            }
            assert_int_equal(roundtrip_compressed(p, (size_t)n, NULL), DPCODEC_VK_INT);
        }
    }
    /* small radixes (residual ranges of 2..17 values: a random walk's steps, uniform values),
     * whose digits come three at a time from a table, for every count of digits left over */
    for (int r = 2; r <= 17; r++) {
        for (int n = 2 + r % 5; n <= N; n += 29 + r) {
            int64_t level = 1000;
            for (int i = 0; i < n; i++) {
                if (r % 2) { /* steps in [-(r / 2), r / 2] */
                    level += rand() % r - r / 2;
                    p[i] = dpcodec_point_int(BASE_MS + i * 10000LL, false, level);
                } else { /* uniform in [0, r), both ends */
                    int64_t u = i % 5 == 0 ? 0 : i % 5 == 1 ? r - 1 : rand() % r;
                    p[i] = dpcodec_point_int(BASE_MS + i * 10000LL, false, u);
                }
            }
            assert_int_equal(roundtrip_compressed(p, (size_t)n, NULL), DPCODEC_VK_INT);
        }
    }
    /* runs of 10 of one full-precision value: XOR's one-bit repeats win (a value that only
     * now and then leaves one level is smaller as BITS with the others as a patched block's
     * exceptions) */
    double run = 0;
    for (int i = 0; i < N; i++) {
        if (i % 10 == 0)
            run = (rand() + 1) * 1e-3 / 3.0;
        p[i] = dpcodec_point_real(BASE_MS + i * 10000LL, false, run);
    }
    assert_int_equal(roundtrip_compressed(p, N, NULL), DPCODEC_VK_XOR);
    for (int i = 0; i < N; i++)
        p[i] = dpcodec_point_real(BASE_MS + i * 10000LL, false,
                                  i % 50 == 0 ? rand() * 1e-3 / 3.0 : 1.0 / 3.0);
    assert_int_equal(roundtrip_compressed(p, N, NULL), DPCODEC_VK_BITS);
    /* ms timestamps with jitter, extremes, mixed types and qualifier kinds */
    for (int i = 0; i < N; i++) {
        int64_t ts = BASE_MS + i * 9973LL + (i % 3);
        if (i % 5 == 0)
            p[i] = dpcodec_point_int(ts, i % 2, i % 10 == 0 ? INT64_MIN + i : INT64_MAX - i);
        else if (i % 5 == 1)
            p[i] = dpcodec_point_real(ts, true, -0.0);
        else if (i % 5 == 2)
            p[i] = dpcodec_point_real(ts, false, 1e300 * i);
        else
            p[i] = dpcodec_point_real(ts, true, (float)i / 3.0f);
    }
    assert_int_equal(roundtrip_compressed(p, N, NULL), DPCODEC_VK_RAW);
    /* one point */
    p[0] = dpcodec_point_int(BASE_MS + 3599999, true, 42);
    roundtrip_compressed(p, 1, NULL);
    /* ints at the edges of the delta range */
    for (int i = 0; i < 8; i++)
        p[i] = dpcodec_point_int(BASE_MS + i * 1000LL, false, i % 2 ? INT64_MAX : INT64_MIN);
    roundtrip_compressed(p, 8, NULL);
}

static void test_compressed_qualifier_hashes_the_timestamps(void **state)
{
    (void)state;
    /* FNV-1a 64 over the little-endian bytes of 1356998400000 and 1356998401000, big-endian */
    struct dpcodec_point p[2] = {dpcodec_point_int(BASE_MS, false, 1),
                                 dpcodec_point_int(BASE_MS + 1000, false, 2)};
    uint8_t q[DPCODEC_CQ_LEN];
    dpcodec_compressed_qualifier(p, 2, q);
    const uint8_t want[] = {0x07, 'C', 'T', 0xc4, 0xde, 0x29, 0x6d, 0xec, 0x0d, 0x78, 0xdc};
    assert_memory_equal(q, want, sizeof(want));
    /* other timestamps, other qualifier; values do not count */
    p[1].i = 99;
    uint8_t q2[DPCODEC_CQ_LEN];
    dpcodec_compressed_qualifier(p, 2, q2);
    assert_memory_equal(q, q2, sizeof(q));
    dpcodec_compressed_qualifier(p, 1, q2);
    assert_memory_not_equal(q, q2, sizeof(q));
    /* the 3-byte prefix alone is not a compressed cell (odd-length unknown: skipped) */
    assert_int_equal(dpcodec_qualifier_kind(q, 3), DPCODEC_Q_OTHER);
}

static void test_compressed_rejects_unknown_version_and_bad_input(void **state)
{
    (void)state;
    struct dpcodec_point p[2] = {dpcodec_point_int(BASE_MS, false, 1),
                                 dpcodec_point_int(BASE_MS + 1000, false, 2)};
    uint8_t v[256];
    size_t vl;
    struct ct_err err = {0};
    assert_int_equal(dpcodec_compressed_encode(BASE, p, 2, v, &vl, &err), CT_OK);
    v[0] = 9;
    struct dpcodec_iter it;
    uint8_t cq[DPCODEC_CQ_LEN];
    dpcodec_compressed_qualifier(p, 2, cq);
    dpcodec_iter_init(&it, BASE, cq, sizeof(cq), v, vl);
    struct dpcodec_point out;
    assert_int_equal(dpcodec_iter_next(&it, &out, &err), CT_ECORRUPT);
    assert_non_null(strstr(err.msg, "unsupported compressed cell version 9"));
    dpcodec_iter_end(&it);
    /* versions 1 and 2 are read (this cell has no patched block: both mean the same), 0 and 3
     * are not */
    for (uint8_t ver = 0; ver <= 3; ver++) {
        v[0] = ver;
        dpcodec_iter_init(&it, BASE, cq, sizeof(cq), v, vl);
        assert_int_equal(dpcodec_iter_next(&it, &out, &err),
                         ver == 1 || ver == 2 ? CT_OK : CT_ECORRUPT);
        dpcodec_iter_end(&it);
    }
    /* unsorted input is refused */
    struct dpcodec_point bad[2] = {p[1], p[0]};
    assert_int_equal(dpcodec_compressed_encode(BASE, bad, 2, v, &vl, &err), CT_EINVAL);
}

static struct wc_cell cell_of(const uint8_t *q, size_t ql, const uint8_t *v, size_t vl, int64_t ts)
{
    struct wc_cell c;
    memset(&c, 0, sizeof(c));
    c.qualifier = wc_bytes_of(q, ql);
    c.value = wc_bytes_of(v, vl);
    c.ts_ms = ts;
    c.type = WC_TYPE_PUT;
    return c;
}

/* Single cells of a mixed s/ms hour, with one duplicate (same ts written twice: s and ms). */
struct hour {
    uint8_t q[64][4], v[64][8];
    struct wc_cell cells[64];
    size_t n;
};

static void hour_add(struct hour *h, struct dpcodec_point p, int64_t write_ts)
{
    size_t ql, vl;
    struct ct_err err = {0};
    assert_int_equal(dpcodec_encode(BASE, &p, h->q[h->n], &ql, h->v[h->n], &vl, &err), CT_OK);
    h->cells[h->n] = cell_of(h->q[h->n], ql, h->v[h->n], vl, write_ts);
    h->n++;
}

static void check_compacted(const struct dpcodec_compacted *c, const int64_t *ts,
                            const int64_t *vals, size_t n)
{
    struct dpcodec_point out[64];
    size_t got, dups;
    struct ct_err err = {0};
    assert_int_equal(dpcodec_row_decode(BASE, c->cells, c->ncells, out, 64, &got, &dups, &err),
                     CT_OK);
    assert_int_equal(got, n);
    assert_int_equal(dups, 0);
    for (size_t i = 0; i < n; i++) {
        assert_true(out[i].ts_ms == ts[i]);
        assert_true((out[i].type == DPCODEC_INT ? (double)out[i].i : out[i].f) == (double)vals[i]);
    }
}

static void test_compaction_round_trips_in_both_formats(void **state)
{
    (void)state;
    struct hour h = {0};
    hour_add(&h, dpcodec_point_int(BASE_MS + 20000, false, 3), 100);
    hour_add(&h, dpcodec_point_int(BASE_MS, false, 1), 100);
    hour_add(&h, dpcodec_point_int(BASE_MS + 10500, true, 2), 100);
    hour_add(&h, dpcodec_point_real(BASE_MS + 30000, false, 4.0), 100);
    uint8_t aq[3] = {0x01, 0x00, 0x05};
    h.cells[h.n++] = cell_of(aq, 3, (const uint8_t *)"{\"d\":1}", 7, 50); /* annotation */
    const int64_t ts[] = {BASE_MS, BASE_MS + 10500, BASE_MS + 20000, BASE_MS + 30000};
    const int64_t vals[] = {1, 2, 3, 4};
    for (int f = 0; f < 2; f++) {
        struct dpcodec_compacted c;
        struct ct_err err = {0};
        enum dpcodec_format fmt = f ? DPCODEC_FORMAT_OPENTSDB : DPCODEC_FORMAT_COMPRESSED;
        assert_int_equal(dpcodec_compact(BASE, h.cells, h.n, fmt, false, &c, &err), CT_OK);
        assert_int_equal(c.ncells, 2); /* the annotation is kept, the points merged */
        assert_int_equal(c.npoints, 4);
        /* cells stay in qualifier order: OpenTSDB's merged qualifier (00 00 ..) sorts before
         * the annotation (01 ..), ctsdb's (07 43 54) after it */
        size_t ai = fmt == DPCODEC_FORMAT_OPENTSDB ? 1 : 0, di = 1 - ai;
        assert_memory_equal(c.cells[ai].qualifier.data, aq, 3);
        assert_true(c.cells[di].ts_ms == 100);
        if (fmt == DPCODEC_FORMAT_OPENTSDB) {
            /* q: 00 00, F0 0A 41 00 (10500 << 6), 01 40, 01 EB; v: 01 02 03 40800000 01 */
            const uint8_t wq[] = {0x00, 0x00, 0xF0, 0x0A, 0x41, 0x00, 0x01, 0x40, 0x01, 0xEB};
            const uint8_t wv[] = {0x01, 0x02, 0x03, 0x40, 0x80, 0x00, 0x00, 0x01};
            assert_int_equal(c.cells[di].qualifier.len, sizeof(wq));
            assert_memory_equal(c.cells[di].qualifier.data, wq, sizeof(wq));
            assert_int_equal(c.cells[di].value.len, sizeof(wv));
            assert_memory_equal(c.cells[di].value.data, wv, sizeof(wv));
        } else {
            assert_int_equal(c.cells[di].qualifier.len, DPCODEC_CQ_LEN);
            assert_memory_equal(c.cells[di].qualifier.data, DPCODEC_CQ, DPCODEC_CQ_PREFIX_LEN);
        }
        check_compacted(&c, ts, vals, 4);
        /* compacting the result again gains nothing */
        struct dpcodec_compacted again;
        assert_int_equal(dpcodec_compact(BASE, c.cells, c.ncells, fmt, false, &again, &err),
                         CT_NOTFOUND);
        /* converting to the other format works from the merged cell */
        enum dpcodec_format other = f ? DPCODEC_FORMAT_COMPRESSED : DPCODEC_FORMAT_OPENTSDB;
        assert_int_equal(dpcodec_compact(BASE, c.cells, c.ncells, other, false, &again, &err),
                         CT_OK);
        check_compacted(&again, ts, vals, 4);
        dpcodec_compacted_free(&again);
        dpcodec_compacted_free(&c);
    }
}

static void test_compaction_duplicates_follow_fix_duplicates(void **state)
{
    (void)state;
    struct hour h = {0};
    hour_add(&h, dpcodec_point_int(BASE_MS + 1000, false, 7), 100); /* s qualifier */
    hour_add(&h, dpcodec_point_int(BASE_MS + 1000, true, 8), 200);  /* same ts, ms, newer */
    hour_add(&h, dpcodec_point_int(BASE_MS + 2000, false, 9), 100);
    struct dpcodec_compacted c;
    struct ct_err err = {0};
    for (int f = 0; f < 2; f++) {
        enum dpcodec_format fmt = f ? DPCODEC_FORMAT_OPENTSDB : DPCODEC_FORMAT_COMPRESSED;
        assert_int_equal(dpcodec_compact(BASE, h.cells, h.n, fmt, false, &c, &err), CT_ECONFLICT);
        assert_non_null(strstr(err.msg, "fix_duplicates"));
        assert_int_equal(dpcodec_compact(BASE, h.cells, h.n, fmt, true, &c, &err), CT_OK);
        assert_int_equal(c.duplicates, 1);
        const int64_t ts[] = {BASE_MS + 1000, BASE_MS + 2000};
        const int64_t vals[] = {8, 9}; /* the latest write wins */
        check_compacted(&c, ts, vals, 2);
        dpcodec_compacted_free(&c);
    }
    /* a lone single cell is left alone in OpenTSDB's format, merged in ctsdb's */
    struct hour one = {0};
    hour_add(&one, dpcodec_point_int(BASE_MS, false, 1), 100);
    assert_int_equal(
        dpcodec_compact(BASE, one.cells, one.n, DPCODEC_FORMAT_OPENTSDB, false, &c, &err),
        CT_NOTFOUND);
    assert_int_equal(
        dpcodec_compact(BASE, one.cells, one.n, DPCODEC_FORMAT_COMPRESSED, false, &c, &err), CT_OK);
    dpcodec_compacted_free(&c);
    /* identical duplicates merge silently even without fix_duplicates */
    struct hour g = {0};
    hour_add(&g, dpcodec_point_int(BASE_MS + 1000, false, 7), 100);
    hour_add(&g, dpcodec_point_int(BASE_MS + 1000, true, 7), 200);
    assert_int_equal(
        dpcodec_compact(BASE, g.cells, g.n, DPCODEC_FORMAT_COMPRESSED, false, &c, &err), CT_OK);
    assert_int_equal(c.npoints, 1);
    dpcodec_compacted_free(&c);
}

static void test_row_decode_sorts_dedups_and_reports_small_buffers(void **state)
{
    (void)state;
    struct hour h = {0};
    for (int i = 9; i >= 0; i--)
        hour_add(&h, dpcodec_point_int(BASE_MS + i * 1000LL, i % 2, i), 100 + i);
    hour_add(&h, dpcodec_point_int(BASE_MS + 3000, false, 33), 50); /* older duplicate */
    struct dpcodec_point out[16];
    size_t n, dups;
    struct ct_err err = {0};
    assert_int_equal(dpcodec_row_decode(BASE, h.cells, h.n, out, 16, &n, &dups, &err), CT_OK);
    assert_int_equal(n, 10);
    assert_int_equal(dups, 1);
    for (int i = 0; i < 10; i++) {
        assert_true(out[i].ts_ms == BASE_MS + i * 1000LL);
        assert_int_equal(out[i].i, i); /* the newer cell's value (103) beat the older 33 */
    }
    assert_int_equal(dpcodec_row_decode(BASE, h.cells, h.n, out, 4, &n, &dups, &err), CT_ELIMIT);
    assert_int_equal(n, 11);
}

static void test_decoder_survives_damaged_cells(void **state)
{
    (void)state;
    /* flip, truncate and extend valid cells of every layout: the decoder must answer with
     * points, the end or CT_ECORRUPT, never read out of bounds (run under ASan) */
    enum {
        N = 200
    };
    struct dpcodec_point p[N];
    srand(11);
    double x = 10;
    for (int i = 0; i < N; i++) {
        x += rand() / (double)RAND_MAX - 0.5;
        p[i] = i % 3 ? dpcodec_point_real(BASE_MS + i * 17000LL, i % 7 == 0, x)
                     : dpcodec_point_int(BASE_MS + i * 17000LL + i % 2, true, rand() % 1000);
    }
    uint8_t *v = malloc(dpcodec_compressed_bound(N)), *q = malloc(4 * N);
    uint8_t *v2 = malloc(dpcodec_compressed_bound(N) + 8 * N + 16);
    size_t vl, ql, cl;
    struct ct_err err = {0};
    uint8_t cq[DPCODEC_CQ_LEN];
    dpcodec_compressed_qualifier(p, N, cq);
    int corrupt[6] = {0}, clean[6] = {0};
    for (int layout = 0; layout < 6; layout++) {
        const uint8_t *qq;
        size_t qn;
        if (layout == 0 || layout == 2 || layout == 4 || layout == 5) {
            /* layout 2 uses only reals (decimal), layout 4 a bell-shaped walk (Rice blocks) */
            struct dpcodec_point *src = p;
            struct dpcodec_point reals[N];
            size_t n = N;
            if (layout == 2) {
                for (int i = 0; i < N; i++)
                    reals[i] = dpcodec_point_real(BASE_MS + i * 10000LL, false, (i % 40) / 8.0);
                src = reals;
            } else if (layout == 5) { /* uniform residuals: radix blocks */
                for (int i = 0; i < N; i++)
                    reals[i] = dpcodec_point_int(BASE_MS + i * 10000LL, false, rand() % 9999);
                src = reals;
            } else if (layout == 4) {
                int64_t walk = 0;
                for (int i = 0; i < N; i++) {
                    for (int k = 0; k < 12; k++)
                        walk += rand() % 101 - 50;
                    reals[i] = dpcodec_point_int(BASE_MS + i * 10000LL, false, walk);
                }
                src = reals;
            }
            assert_int_equal(dpcodec_compressed_encode(BASE, src, n, v, &vl, &err), CT_OK);
            dpcodec_compressed_qualifier(src, n, cq);
            qq = cq;
            qn = sizeof(cq);
        } else if (layout == 1) {
            struct dpcodec_point sorted[N];
            memcpy(sorted, p, sizeof(sorted));
            assert_int_equal(dpcodec_compacted_encode(BASE, sorted, N, q, &ql, v, &vl, &err),
                             CT_OK);
            qq = q;
            qn = ql;
        } else {
            /* an append cell */
            vl = 0;
            for (int i = 0; i < N; i++) {
                size_t a, b;
                assert_int_equal(dpcodec_encode(BASE, &p[i], v + vl, &a, v + vl + 4, &b, &err),
                                 CT_OK);
                memmove(v + vl + a, v + vl + 4, b);
                vl += a + b;
            }
            qq = (const uint8_t *)DPCODEC_APPEND_Q;
            qn = DPCODEC_APPEND_Q_LEN;
        }
        for (int round = 0; round < 3000; round++) {
            cl = vl;
            memcpy(v2, v, vl);
            int what = rand() % 3;
            if (what == 0) {
                for (int k = 0; k < 1 + rand() % 4; k++)
                    v2[rand() % cl] ^= (uint8_t)(1 + rand() % 255);
            } else if (what == 1) {
                cl = (size_t)rand() % vl;
            } else {
                size_t extra = 1 + (size_t)rand() % 16;
                for (size_t k = 0; k < extra; k++)
                    v2[cl + k] = (uint8_t)rand();
                cl += extra;
            }
            struct dpcodec_iter it;
            dpcodec_iter_init(&it, BASE, qq, qn, v2, cl);
            struct dpcodec_point out;
            int rc;
            size_t n = 0;
            while ((rc = dpcodec_iter_next(&it, &out, &err)) == CT_OK && n < 4 * N)
                n++;
            dpcodec_iter_end(&it);
            assert_true(rc == CT_OK || rc == CT_NOTFOUND || rc == CT_ECORRUPT);
            if (rc == CT_ECORRUPT)
                corrupt[layout]++;
            else
                clean[layout]++;
        }
        /* the damage is noticed often, and sometimes decodes to other points (flipped values) */
        assert_true(corrupt[layout] > 100);
        assert_true(clean[layout] > 10);
    }
    free(v);
    free(v2);
    free(q);
}

/* dpcodec_row_decode_cols() must answer exactly as dpcodec_row_decode(): same code, same
 * message, same points (as int or double bits). */
static void check_cols_like_row(const struct wc_cell *cells, size_t ncells,
                                struct dpcodec_cols *cols, int *fast_ok)
{
    enum {
        CAP = 4096
    };
    static struct dpcodec_point out[CAP];
    struct ct_err e1 = {0}, e2 = {0};
    size_t n = 0, d1 = 0, d2 = 0;
    int rc1 = dpcodec_row_decode(BASE, cells, ncells, out, CAP, &n, &d1, &e1);
    int rc2 = dpcodec_row_decode_cols(BASE, cells, ncells, cols, &d2, &e2);
    assert_int_equal(rc2, rc1);
    /* dpcodec_newest, cell by cell: the same code and message, the same last point */
    struct dpcodec_newest nw;
    struct ct_err e3 = {0};
    int rc3 = CT_OK;
    dpcodec_newest_init(&nw);
    for (size_t i = 0; i < ncells && rc3 == CT_OK; i++)
        rc3 = dpcodec_newest_add(&nw, BASE, &cells[i], &e3);
    assert_int_equal(rc3, rc1);
    if (rc1 != CT_OK) {
        assert_string_equal(e2.msg, e1.msg);
        assert_string_equal(e3.msg, e1.msg);
        return;
    }
    struct dpcodec_point np;
    assert_int_equal(dpcodec_newest_get(&nw, &np), n > 0);
    if (n) {
        const struct dpcodec_point *w = &out[n - 1];
        assert_true(np.ts_ms == w->ts_ms);
        assert_true(np.cell_ts_ms == w->cell_ts_ms);
        assert_int_equal(np.type, w->type);
        assert_int_equal(np.ms, w->ms);
        if (w->type == DPCODEC_INT)
            assert_true(np.i == w->i);
        else
            assert_memory_equal(&np.f, &w->f, sizeof(double));
    }
    assert_int_equal(cols->n, n);
    assert_int_equal(d2, d1);
    int kinds = 0;
    for (size_t i = 0; i < n; i++)
        kinds |= out[i].type == DPCODEC_INT ? DPCODEC_COLS_INTS : DPCODEC_COLS_REALS;
    assert_int_equal(cols->kinds, kinds);
    for (size_t i = 0; i < n; i++) {
        assert_true(cols->ts[i] == out[i].ts_ms);
        assert_int_equal(cols->is_int[i], out[i].type == DPCODEC_INT);
        if (out[i].type == DPCODEC_INT) {
            assert_true((int64_t)cols->val[i] == out[i].i);
        } else {
            uint64_t u;
            memcpy(&u, &out[i].f, 8);
            assert_true(cols->val[i] == u);
            assert_true(memcmp(&out[i].f, &cols->val[i], 8) == 0);
        }
    }
    if (n)
        (*fast_ok)++;
}

static int cell_qcmp(const void *a, const void *b)
{
    const struct wc_cell *x = a, *y = b;
    size_t n = x->qualifier.len < y->qualifier.len ? x->qualifier.len : y->qualifier.len;
    int c = memcmp(x->qualifier.data, y->qualifier.data, n);
    return c ? c : (x->qualifier.len > y->qualifier.len) - (x->qualifier.len < y->qualifier.len);
}

/* Rows of several compressed cells (an hour merged in parts), in the store's qualifier order:
 * disjoint spans (the columns' multi-cell path), spans that overlap or repeat a timestamp with
 * another value (the general path resolves them), a damaged part, an annotation beside them, a
 * late single cell, and more parts than the multi-cell path takes: every answer as
 * dpcodec_row_decode()'s. */
static void test_cols_decode_compressed_cells(void **state)
{
    (void)state;
    enum {
        N = 720,
        PARTS = 20
    };
    struct dpcodec_point p[N];
    static uint8_t v[PARTS][16384];
    static uint8_t q[PARTS][DPCODEC_CQ_LEN];
    struct wc_cell cells[PARTS + 2];
    struct dpcodec_cols cols;
    dpcodec_cols_init(&cols);
    struct ct_err err = {0};
    srand(11);
    int ok = 0;
    for (int round = 0; round < 400; round++) {
        int n = 2 + rand() % (N - 1), kind = round % 4;
        int64_t walk = rand() % 1000;
        for (int i = 0; i < n; i++) {
            int64_t ts = BASE_MS + i * 5000LL + (kind == 3 ? rand() % 7 : 0);
            if (kind == 0) {
                walk += rand() % 7 - 3;
                p[i] = dpcodec_point_int(ts, false, walk);
            } else if (kind == 1) {
                p[i] = dpcodec_point_real(ts, false, (rand() % 5000) / 100.0);
            } else if (kind == 2) {
                p[i] = i % 3 ? dpcodec_point_real(ts, i % 2, 0.5 * i) : dpcodec_point_int(ts, 1, i);
            } else {
                p[i] = dpcodec_point_int(ts, true, rand() % 9999);
            }
        }
        /* cut into parts; round % 5 == 1: each part also repeats the next part's first point
         * (an overlap), with another value when round % 10 == 1 */
        int nparts = round % 7 == 6 ? 17 + rand() % 3 : 2 + rand() % 3;
        if (nparts > n)
            nparts = n;
        int cut[PARTS + 1];
        cut[0] = 0;
        for (int k = 1; k < nparts; k++)
            cut[k] = k * n / nparts;
        cut[nparts] = n;
        size_t nc = 0;
        for (int k = 0; k < nparts; k++) {
            struct dpcodec_point part[N];
            size_t m = 0;
            for (int i = cut[k]; i < cut[k + 1]; i++)
                part[m++] = p[i];
            if (round % 5 == 1 && k + 1 < nparts) {
                part[m] = p[cut[k + 1]];
                if (round % 10 == 1)
                    part[m] = dpcodec_point_int(part[m].ts_ms, part[m].ms, -5);
                m++;
            }
            size_t vl;
            assert_true(dpcodec_compressed_bound(m) <= sizeof(v[k]));
            assert_int_equal(dpcodec_compressed_encode(BASE, part, m, v[k], &vl, &err), CT_OK);
            dpcodec_compressed_qualifier(part, m, q[k]);
            if (round % 9 == 4 && k == nparts - 1) /* a damaged part */
                v[k][rand() % vl] ^= (uint8_t)(1 + rand() % 255);
            cells[nc++] = cell_of(q[k], DPCODEC_CQ_LEN, v[k], vl, 100 + k);
        }
        uint8_t aq[3] = {0x01, 0x00, 0x05};
        if (round % 6 == 0)
            cells[nc++] = cell_of(aq, 3, (const uint8_t *)"{}", 2, 10);
        qsort(cells, nc, sizeof(cells[0]), cell_qcmp);
        check_cols_like_row(cells, nc, &cols, &ok);
        /* the same parts plus a late single point (the general path) */
        if (round % 8 == 3) {
            struct hour h = {0};
            memcpy(h.cells, cells, nc * sizeof(cells[0]));
            h.n = nc;
            hour_add(&h, dpcodec_point_int(BASE_MS + 3599000, false, 77), 200);
            check_cols_like_row(h.cells, h.n, &cols, &ok);
        }
    }
    assert_true(ok > 300);
    dpcodec_cols_free(&cols);
}

static void test_cols_decode_matches_row_decode(void **state)
{
    (void)state;
    enum {
        N = 360
    };
    struct dpcodec_point p[N];
    uint8_t *v = malloc(dpcodec_compressed_bound(N) + 64);
    uint8_t *v2 = malloc(dpcodec_compressed_bound(N) + 64);
    struct dpcodec_cols cols, lazy;
    dpcodec_cols_init(&cols);
    dpcodec_cols_init(&lazy);
    lazy.lazy_ts = true;
    int regular = 0;
    struct ct_err err = {0};
    srand(3);
    int ok = 0;
    for (int round = 0; round < 600; round++) {
        /* a compressed cell of one of several value kinds (int, decimal, XOR/BITS, mixed with
         * descriptors, ms timestamps, Rice and radix blocks, deflated payloads) */
        int kind = round % 7, n = 1 + rand() % N;
        int64_t walk = rand() % 1000;
        double x = rand() % 100;
        for (int i = 0; i < n; i++) {
            int64_t ts = BASE_MS + i * 10000LL + (kind == 5 ? rand() % 7 : 0);
            switch (kind) {
            case 0:
                walk += rand() % 7 - 3;
                p[i] = dpcodec_point_int(ts, false, walk);
                break;
            case 1:
                p[i] = dpcodec_point_real(ts, false, (rand() % 5000) / 100.0);
                break;
            case 2:
                x += rand() / (double)RAND_MAX - 0.5;
                p[i] = dpcodec_point_real(ts, false, x);
                break;
            case 3:
                p[i] = i % 3 ? dpcodec_point_real(ts, i % 2, x + i) : dpcodec_point_int(ts, 1, i);
                break;
            case 4:
                walk += 1000 + rand() % 4001;
                p[i] = dpcodec_point_int(ts, false, walk);
                break;
            case 5:
                p[i] = dpcodec_point_int(ts, true, rand() % 9999);
                break;
            default:
                p[i] = dpcodec_point_real(ts, false, i % 4 ? 0.5 : 0.25);
                break;
            }
        }
        size_t vl;
        assert_int_equal(dpcodec_compressed_encode(BASE, p, (size_t)n, v, &vl, &err), CT_OK);
        uint8_t cq[DPCODEC_CQ_LEN];
        dpcodec_compressed_qualifier(p, (size_t)n, cq);
        size_t cl = vl;
        memcpy(v2, v, vl);
        if (round % 3 == 1) { /* damage: flipped bytes or truncation */
            if (rand() % 2)
                v2[rand() % cl] ^= (uint8_t)(1 + rand() % 255);
            else
                cl = (size_t)rand() % vl;
        }
        struct hour h = {0};
        uint8_t aq[3] = {0x01, 0x00, 0x05};
        if (round % 5 == 0) /* an annotation next to it */
            h.cells[h.n++] = cell_of(aq, 3, (const uint8_t *)"{}", 2, 10);
        h.cells[h.n++] = cell_of(cq, sizeof(cq), v2, cl, 100);
        check_cols_like_row(h.cells, h.n, &cols, &ok);
        /* regular timestamps left unwritten (lazy_ts): the same row once they are filled */
        struct ct_err e1 = {0}, e2 = {0};
        int r1 = dpcodec_row_decode_cols(BASE, h.cells, h.n, &cols, NULL, &e1);
        int r2 = dpcodec_row_decode_cols(BASE, h.cells, h.n, &lazy, NULL, &e2);
        assert_int_equal(r1, r2);
        if (r1 == CT_OK) {
            regular += lazy.ts_regular;
            dpcodec_cols_fill_ts(&lazy);
            assert_false(lazy.ts_regular);
            assert_int_equal(lazy.n, cols.n);
            assert_int_equal(lazy.kinds, cols.kinds);
            assert_memory_equal(lazy.ts, cols.ts, cols.n * sizeof(int64_t));
            assert_memory_equal(lazy.val, cols.val, cols.n * sizeof(uint64_t));
            assert_memory_equal(lazy.is_int, cols.is_int, cols.n);
        }
        /* plus late single cells (the general path): a new point and a duplicate of an
         * existing timestamp from an older and from a newer write */
        if (round % 4 == 2) {
            hour_add(&h, dpcodec_point_int(BASE_MS + 3599000, false, 77), 200);
            hour_add(&h, dpcodec_point_real(p[0].ts_ms, false, 1.5), round % 8 == 2 ? 50 : 300);
            check_cols_like_row(h.cells, h.n, &cols, &ok);
        }
    }
    /* rows without a compressed cell: singles (unsorted, duplicates) and nothing at all */
    struct hour h = {0};
    for (int i = 20; i >= 0; i--)
        hour_add(&h, dpcodec_point_int(BASE_MS + i * 1000LL, i % 2, i), 100 + i);
    hour_add(&h, dpcodec_point_real(BASE_MS + 3000, false, 0.1), 50);
    check_cols_like_row(h.cells, h.n, &cols, &ok);
    /* singles in time order (a current hour), with ints, floats, doubles and an annotation */
    struct hour hs = {0};
    for (int i = 0; i < 40; i++)
        hour_add(&hs,
                 i % 3 ? dpcodec_point_int(BASE_MS + i * 10000LL, false, i * 1000 - 7)
                       : dpcodec_point_real(BASE_MS + i * 10000LL, false, i % 2 ? 0.1 * i : 0.5),
                 100);
    uint8_t aq2[3] = {0x01, 0x00, 0x07};
    hs.cells[hs.n++] = cell_of(aq2, 3, (const uint8_t *)"{}", 2, 10);
    check_cols_like_row(hs.cells, hs.n, &cols, &ok);
    /* seconds then ms qualifiers (their store order), not in time order */
    struct hour hm = {0};
    for (int i = 0; i < 10; i++)
        hour_add(&hm, dpcodec_point_int(BASE_MS + i * 2000LL, false, i), 100);
    for (int i = 0; i < 10; i++)
        hour_add(&hm, dpcodec_point_int(BASE_MS + i * 2000LL + 1500, true, -i), 100);
    check_cols_like_row(hm.cells, hm.n, &cols, &ok);
    /* a damaged single cell among sorted ones: the same error */
    hs.v[5][0] = 0xFF;
    hs.cells[5].value.len = 3; /* a float flag with a 3-byte value */
    check_cols_like_row(hs.cells, hs.n, &cols, &ok);
    /* hand-made single cells in time order, read without an iterator by the singles path:
     * integers whose value length differs from the flags (OpenTSDB reads value.length), a
     * one-point compacted value (trailing 0x00 / 0x01), a legacy float on 8 bytes, ms
     * qualifiers; then each malformed one in turn (same code and message as the iterator) */
    static const struct {
        uint8_t q[4], ql, v[9], vl;
    } sc[] = {
        {{0x00, 0x10}, 2, {0x7F}, 1},                         /* 1 s: 1 byte, 127 */
        {{0x00, 0x21}, 2, {0xFF, 0x38}, 2},                   /* 2 s: -200 */
        {{0x00, 0x33}, 2, {0x80, 0, 0, 0}, 4},                /* 3 s: INT32_MIN */
        {{0x00, 0x47}, 2, {0x80, 0, 0, 0, 0, 0, 0, 1}, 8},    /* 4 s: 8 bytes */
        {{0x00, 0x50}, 2, {0x00, 0x05}, 2},                   /* flags 1 byte, 2 */
        {{0x00, 0x60}, 2, {0x05, 0x00}, 2},                   /* one-point compacted */
        {{0x00, 0x70}, 2, {0x06, 0x01}, 2},                   /* ... mixed marker */
        {{0x00, 0x8B}, 2, {0, 0, 0, 0, 0x3F, 0xC0, 0, 0}, 8}, /* legacy float 1.5 */
        {{0x00, 0x9F}, 2, {0x3F, 0xF8, 0, 0, 0, 0, 0, 0}, 8}, /* double 1.5 */
        {{0xF0, 0x09, 0xC4, 0x00}, 4, {0x2A}, 1},             /* 10,000 ms: 42 */
        {{0xF0, 0x09, 0xC4, 0x4B}, 4, {0x3F, 0xC0, 0, 0}, 4}, /* 10,001 ms float */
    };
    static const struct {
        uint8_t q[4], ql, v[9], vl;
    } bad[] = {
        {{0xE1, 0x00}, 2, {1}, 1},       /* offset 3600: beyond the hour */
        {{0x00, 0x0B}, 2, {0, 0, 0}, 3}, /* float flags, 3 bytes */
        {{0x00, 0x00}, 2, {1, 2, 3}, 3}, /* an int of 3 bytes */
    };
    for (size_t b = 0; b <= sizeof(bad) / sizeof(bad[0]); b++) {
        struct wc_cell row[16];
        size_t nr = 0;
        for (size_t i = 0; i < sizeof(sc) / sizeof(sc[0]); i++) {
            if (b < sizeof(bad) / sizeof(bad[0]) && i == 4)
                row[nr++] = cell_of(bad[b].q, bad[b].ql, bad[b].v, bad[b].vl, 100);
            row[nr++] = cell_of(sc[i].q, sc[i].ql, sc[i].v, sc[i].vl, 100);
        }
        struct ct_err e = {0};
        int before = ok;
        check_cols_like_row(row, nr, &cols, &ok);
        if (b == sizeof(bad) / sizeof(bad[0])) { /* the clean row: every point, as written */
            assert_int_equal(ok, before + 1);
            assert_int_equal(cols.n, sizeof(sc) / sizeof(sc[0]));
            assert_true((int64_t)cols.val[0] == 127 && (int64_t)cols.val[1] == -200);
            assert_true((int64_t)cols.val[2] == INT32_MIN && (int64_t)cols.val[4] == 5);
            assert_true((int64_t)cols.val[3] == INT64_MIN + 1);
            assert_true((int64_t)cols.val[5] == 5 && (int64_t)cols.val[6] == 6);
            assert_false(cols.is_int[7]);
            assert_true(cols.ts[9] == BASE_MS + 10000 && (int64_t)cols.val[9] == 42);
        } else {
            assert_int_equal(dpcodec_row_decode_cols(BASE, row, nr, &cols, NULL, &e), CT_ECORRUPT);
            assert_non_null(strstr(e.msg, "cell 4 of the row: malformed datapoint cell"));
        }
    }
    check_cols_like_row(h.cells, 0, &cols, &ok);
    assert_int_equal(cols.n, 0);
    assert_true(ok > 400);
    assert_true(regular > 100);
    dpcodec_cols_free(&lazy);
    dpcodec_cols_free(&cols);
    free(v);
    free(v2);
}

/* ---- encoder output pinned byte for byte ---------------------------------------------------- */

static uint64_t gold_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Row `shape` of n points (n <= 3600): the series kinds the encoder meets (walks, counters,
 * decimal gauges, noisy doubles, bell-shaped and uniform residuals, repeats, mixed types, ms
 * jitter, gaps, extremes). Deterministic for a given *rng. */
static size_t gold_row(int shape, size_t n, struct dpcodec_point *p, uint64_t *rng)
{
    int64_t step = shape % 4 == 3 ? 1000 : 10000;
    double x = 50;
    int64_t w = 1000;
    for (size_t i = 0; i < n; i++) {
        int64_t ts = BASE_MS + (int64_t)i * (n > 360 ? 1000 : step);
        uint64_t r = gold_rand(rng);
        switch (shape) {
        case 0: /* bounded cpu-style walk */
            w += (int64_t)(r % 11) - 5;
            w = w < 0 ? 0 : w > 100 ? 100 : w;
            p[i] = dpcodec_point_int(ts, false, w);
            break;
        case 1: /* counter */
            w += (int64_t)(r % 20000);
            p[i] = dpcodec_point_int(ts, false, w);
            break;
        case 2: /* two-decimal gauge */
            p[i] = dpcodec_point_real(ts, false, (double)(r % 10000) / 100.0);
            break;
        case 3: /* noisy doubles */
            x += (double)(r % 1000000) / 1e6 - 0.5;
            p[i] = dpcodec_point_real(ts, false, x);
            break;
        case 4: { /* bell-shaped integer steps */
            int64_t s = 0;
            for (int k = 0; k < 12; k++)
                s += (int64_t)((r >> (k * 5)) % 31) - 15;
            w += s * 7;
            p[i] = dpcodec_point_int(ts, false, w);
            break;
        }
        case 5: /* uniform ints in a range that is not a power of two (tsd_load's counters) */
            p[i] = dpcodec_point_int(ts, false, (int64_t)(r % 10000000) + (int64_t)i * 1000);
            break;
        case 6: /* mostly one value */
            p[i] =
                dpcodec_point_real(ts, false, i % 50 == 7 ? (double)(r % 1000) / 3.0 : 1.0 / 3.0);
            break;
        case 7: /* mixed types and qualifier kinds, jittered ms timestamps */
            ts = BASE_MS + (int64_t)i * 997 + (int64_t)(r % 3);
            if (r % 5 == 0)
                p[i] = dpcodec_point_int(ts, ((r >> 8) & 1) || ts % 1000, (int64_t)(r >> 3));
            else if (r % 5 == 1)
                p[i] = dpcodec_point_real(ts, true, -0.0);
            else if (r % 5 == 2)
                p[i] = dpcodec_point_real(ts, ts % 1000 != 0, 1e300 / (double)(i + 1));
            else
                p[i] = dpcodec_point_real(ts, true, (float)(r % 1000) / 3.0f);
            break;
        case 8: /* constant */
            p[i] = dpcodec_point_int(ts, false, 42);
            break;
        case 9: /* floats exact in single precision, with OpenTSDB's typing */
            p[i] = dpcodec_point_real(ts, false, (double)(float)((r % 4096) / 16.0));
            break;
        case 10: /* ms timestamps with jitter, small ints */
            ts = BASE_MS + (int64_t)i * 997 + (int64_t)(r % 7);
            p[i] = dpcodec_point_int(ts, true, (int64_t)(r % 300));
            break;
        case 11: /* irregular gaps, wide values */
            ts = BASE_MS + (int64_t)i * 997 + (int64_t)(r % 2) * 500;
            p[i] = dpcodec_point_int(ts, ts % 1000 != 0, (int64_t)r);
            break;
        case 12: /* extremes */
            p[i] = dpcodec_point_int(
                ts, false, r & 1 ? INT64_MAX - (int64_t)(r % 9) : INT64_MIN + (int64_t)(r % 9));
            break;
        default: /* three-decimal gauge drifting, with float and double points mixed */
            x += (double)(r % 2001) / 1000.0 - 1.0;
            p[i] = dpcodec_point_real(ts, false, round(x * 1000.0) / 1000.0);
            break;
        }
    }
    return n;
}

#define GOLD_SHAPES 14
static const size_t gold_sizes[] = {1, 2, 3, 5, 33, 127, 128, 129, 130, 256, 300, 360, 1000, 3600};

/* FNV-1a 64 over every compressed value and qualifier the encoder writes for the rows above,
 * and their total length: captured from the encoder before it was optimised, so any change of
 * a single output byte (format or encoder choice) fails here. */
/* recaptured twice: radix blocks only where cheap to read (428,456 bytes); then version 2,
 * patched blocks written where smaller and evenly spaced timestamps as their two heads alone:
 * 425,428 bytes, 3,028 (0.71%) fewer (patched blocks 1,485 of them: these rows have few
 * outliers or noisy trends; on tsd_load's model the cells are 5.4% smaller, docs/schema.md) */
#define GOLD_HASH  0x98f5df8f6dace95aULL
#define GOLD_BYTES 425428

static uint64_t gold_fnv(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static void test_encoder_output_bytes_are_pinned(void **state)
{
    (void)state;
    struct dpcodec_point *p = malloc(3600 * sizeof(*p));
    uint8_t *v = malloc(dpcodec_compressed_bound(3600));
    uint8_t *q = malloc(4 * 3600), *cv = malloc(8 * 3600 + 1);
    assert_non_null(p);
    assert_non_null(v);
    assert_non_null(q);
    assert_non_null(cv);
    uint64_t h = 14695981039346656037ull;
    size_t total = 0;
    struct ct_err err = {0};
    for (int seed = 1; seed <= 2; seed++) {
        for (int s = 0; s < GOLD_SHAPES; s++) {
            for (size_t z = 0; z < sizeof(gold_sizes) / sizeof(gold_sizes[0]); z++) {
                uint64_t rng =
                    0x9E3779B97F4A7C15ull * (uint64_t)(seed * 1000 + s * 31 + (int)z) | 1;
                size_t n = gold_row(s, gold_sizes[z], p, &rng);
                size_t vlen = 0;
                assert_int_equal(dpcodec_compressed_encode(BASE, p, n, v, &vlen, &err), CT_OK);
                uint8_t lenb[4] = {(uint8_t)vlen, (uint8_t)(vlen >> 8), (uint8_t)(vlen >> 16), 0};
                h = gold_fnv(h, lenb, sizeof(lenb));
                h = gold_fnv(h, v, vlen);
                total += vlen;
                /* and through compaction: the OpenTSDB compacted cell as the input (one point
                 * would make a single cell, not a compacted one) */
                if (n < 2)
                    continue;
                size_t ql, cvl;
                assert_int_equal(dpcodec_compacted_encode(BASE, p, n, q, &ql, cv, &cvl, &err),
                                 CT_OK);
                struct wc_cell cell = {0};
                cell.qualifier = wc_bytes_of(q, ql);
                cell.value = wc_bytes_of(cv, cvl);
                cell.ts_ms = 1;
                cell.type = WC_TYPE_PUT;
                struct dpcodec_compacted out;
                int crc =
                    dpcodec_compact(BASE, &cell, 1, DPCODEC_FORMAT_COMPRESSED, false, &out, &err);
                assert_int_equal(crc, CT_OK);
                assert_int_equal(out.ncells, 1);
                assert_int_equal(out.cells[0].value.len, vlen);
                assert_memory_equal(out.cells[0].value.data, v, vlen);
                h = gold_fnv(h, out.cells[0].qualifier.data, out.cells[0].qualifier.len);
                dpcodec_compacted_free(&out);
            }
        }
    }
    print_message("encoder output: %zu bytes, hash 0x%016llx\n", total, (unsigned long long)h);
    assert_int_equal(total, GOLD_BYTES);
    assert_true(h == GOLD_HASH);
    free(p);
    free(v);
    free(q);
    free(cv);
}

/* One thread's pass over the pinned rows (seed 1): the hash of every value it encodes. */
struct gold_job {
    uint64_t hash;
    int rc;
};

static void *gold_thread(void *arg)
{
    struct gold_job *job = arg;
    struct dpcodec_point *p = malloc(3600 * sizeof(*p));
    uint8_t *v = malloc(dpcodec_compressed_bound(3600));
    struct ct_err err = {0};
    job->hash = 14695981039346656037ull;
    job->rc = p && v ? CT_OK : CT_ENOMEM;
    for (int s = 0; s < GOLD_SHAPES && job->rc == CT_OK; s++) {
        for (size_t z = 0; z < sizeof(gold_sizes) / sizeof(gold_sizes[0]); z++) {
            uint64_t rng = 0x9E3779B97F4A7C15ull * (uint64_t)(1000 + s * 31 + (int)z) | 1;
            size_t n = gold_row(s, gold_sizes[z], p, &rng), vlen = 0;
            job->rc = dpcodec_compressed_encode(BASE, p, n, v, &vlen, &err);
            if (job->rc != CT_OK)
                break;
            job->hash = gold_fnv(job->hash, v, vlen);
        }
    }
    free(p);
    free(v);
    return NULL;
}

/* The encoder keeps per-thread state (deflate stream, scratch): threads encoding at once get
 * exactly the bytes one thread gets, and the state is freed when they exit (sanitizer build). */
static void test_encoder_threads_write_the_same_bytes(void **state)
{
    (void)state;
    enum {
        T = 4
    };
    struct gold_job one, jobs[T];
    gold_thread(&one);
    assert_int_equal(one.rc, CT_OK);
    pthread_t th[T];
    for (int i = 0; i < T; i++)
        assert_int_equal(pthread_create(&th[i], NULL, gold_thread, &jobs[i]), 0);
    for (int i = 0; i < T; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(jobs[i].rc, CT_OK);
        assert_true(jobs[i].hash == one.hash);
    }
}

static void test_annotation_test_inline_matches_qualifier_kind(void **state)
{
    (void)state;
    uint8_t q[16];
    for (size_t len = 0; len <= sizeof(q); len++) {
        for (int first = 0; first < 256; first++) {
            for (int fill = 0; fill < 3; fill++) { /* the other bytes: 0, 0xFF, or the CT tag */
                for (size_t i = 0; i < len; i++)
                    q[i] = fill == 0   ? 0
                           : fill == 1 ? 0xFF
                                       : (uint8_t) "\x07"
                                                   "CT"[i % 3];
                if (len)
                    q[0] = (uint8_t)first;
                bool kind = dpcodec_qualifier_kind(q, len) == DPCODEC_Q_ANNOTATION;
                if (kind != dpcodec_is_annotation_q(q, len))
                    fail_msg("len %zu first 0x%02x fill %d", len, first, fill);
            }
        }
    }
}

/* ---- radix blocks, from cells built by hand ---------------------------------------------- */

/* The test's own big numbers (base 2^32, least significant first), independent of the decoder's
 * limbs and divisions: Horner multiply-adds, powers, bit lengths, big-endian bytes. */
enum {
    TBIG = 260
};
struct tbig {
    uint32_t w[TBIG];
    size_t n;
};

static void tbig_mul_add(struct tbig *b, uint64_t mul, uint64_t add)
{
    /* mul and add < 2^64: the product of 32-bit words by a 64-bit factor in two halves */
    unsigned __int128 carry = add;
    for (size_t i = 0; i < b->n; i++) {
        unsigned __int128 t = (unsigned __int128)b->w[i] * mul + carry;
        b->w[i] = (uint32_t)t;
        carry = t >> 32;
    }
    while (carry) {
        assert_true(b->n < TBIG);
        b->w[b->n++] = (uint32_t)carry;
        carry >>= 32;
    }
}

static size_t tbig_bits(const struct tbig *b)
{
    size_t n = b->n;
    while (n && !b->w[n - 1])
        n--;
    return n ? 32 * (n - 1) + (32 - (size_t)__builtin_clz(b->w[n - 1])) : 0;
}

/* bitlen(r^cnt - 1): the bits a block of cnt digits in radix r takes */
static size_t tbig_radix_bits(uint64_t r, size_t cnt)
{
    struct tbig p = {{1}, 1};
    for (size_t i = 0; i < cnt; i++)
        tbig_mul_add(&p, r, 0);
    for (size_t i = 0; i < p.n; i++) /* minus one */
        if (p.w[i]-- != 0)
            break;
    return tbig_bits(&p);
}

/* Appends a radix block (width byte 0x82, zigzag minimum, radix, number) of the digits d[0..cnt)
 * (least significant first) to p; with *over the number is instead r^cnt, the smallest invalid
 * one, if it fits the block's bits (else the digits are written and *over is cleared). */
static size_t put_radix_block(uint8_t *p, uint64_t r, int64_t mn, const uint64_t *d, size_t cnt,
                              bool *over)
{
    size_t o = 0;
    p[o++] = DPCODEC_RADIX_BLOCK;
    o += coding_put_varint64(p + o, coding_zigzag(mn));
    o += coding_put_varint64(p + o, r);
    struct tbig nb = {{0}, 0};
    size_t bits = tbig_radix_bits(r, cnt), bytes = (bits + 7) / 8;
    if (*over) {
        nb = (struct tbig){{1}, 1};
        for (size_t i = 0; i < cnt; i++) /* r^cnt */
            tbig_mul_add(&nb, r, 0);
        if (tbig_bits(&nb) > bits) /* a power of two: every number of the bits is valid */
            *over = false;
    }
    if (!*over) {
        memset(&nb, 0, sizeof(nb));
        for (size_t i = cnt; i-- > 0;) /* Horner from the most significant digit */
            tbig_mul_add(&nb, r, d[i]);
    }
    for (size_t i = 0; i < bytes; i++) { /* big-endian, right-aligned */
        size_t bit = 8 * (bytes - 1 - i), wi = bit / 32;
        p[o + i] = wi < nb.n ? (uint8_t)(nb.w[wi] >> (bit % 32)) : 0;
    }
    return o + bytes;
}

static uint64_t radix_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Decodes the compressed cell v (n integer points at BASE + i s) both ways (columns and the
 * iterator's row decoder) and checks the values against want; or that it is refused. */
static void check_radix_cell(const uint8_t *v, size_t vl, size_t n, const int64_t *want, bool valid,
                             struct dpcodec_cols *cols)
{
    struct dpcodec_point *pts = malloc(n * sizeof(*pts));
    for (size_t i = 0; i < n; i++)
        pts[i] = dpcodec_point_int(BASE_MS + (int64_t)i * 1000, false, 0);
    uint8_t q[DPCODEC_CQ_LEN];
    dpcodec_compressed_qualifier(pts, n, q);
    struct wc_cell c = cell_of(q, sizeof(q), v, vl, 1);
    struct ct_err e1 = {0}, e2 = {0};
    size_t got = 0;
    int rc1 = dpcodec_row_decode(BASE, &c, 1, pts, n, &got, NULL, &e1);
    int rc2 = dpcodec_row_decode_cols(BASE, &c, 1, cols, NULL, &e2);
    if (!valid) {
        assert_int_equal(rc1, CT_ECORRUPT);
        assert_int_equal(rc2, CT_ECORRUPT);
        free(pts);
        return;
    }
    if (rc1 != CT_OK || rc2 != CT_OK)
        fail_msg("%zu points: %d %s / %d %s", n, rc1, e1.msg, rc2, e2.msg);
    assert_int_equal(got, n);
    assert_int_equal(cols->n, n);
    for (size_t i = 0; i < n; i++) {
        if (pts[i].i != want[i] || (int64_t)cols->val[i] != want[i] ||
            pts[i].ts_ms != BASE_MS + (int64_t)i * 1000)
            fail_msg("point %zu of %zu: want %lld, iterator %lld, columns %lld", i, n,
                     (long long)want[i], (long long)pts[i].i, (long long)cols->val[i]);
    }
    free(pts);
}

static void test_radix_blocks_decode_every_radix_and_digit_count(void **state)
{
    (void)state;
    /* radixes of every path: the digit tables (2..16), exact multiplications per digit (up to
     * 2^32 - 1, with C = r^2m normalised or not), one digit per 32-bit half (r > 65535), and
     * the digit-by-digit reader (r >= 2^32) */
    static const uint64_t radixes[] = {2,
                                       3,
                                       4,
                                       5,
                                       6,
                                       7,
                                       8,
                                       9,
                                       10,
                                       11,
                                       13,
                                       15,
                                       16,
                                       17,
                                       100,
                                       343,
                                       1000,
                                       1625,
                                       1626,
                                       9999,
                                       65535,
                                       65536,
                                       65537,
                                       99991,
                                       1u << 31,
                                       4294967295u,
                                       4294967296ull,
                                       (1ull << 40) + 3,
                                       (1ull << 62) + 1};
    enum {
        MAXN = 3 * DPCODEC_BLOCK + 40
    };
    static uint8_t v[16 * MAXN + 256];
    static uint64_t dig[MAXN];
    static int64_t want[MAXN];
    struct dpcodec_cols cols;
    dpcodec_cols_init(&cols);
    uint64_t seed = 0x9E3779B97F4A7C15ULL;
    int checked = 0;
    for (size_t ri = 0; ri < sizeof(radixes) / sizeof(radixes[0]); ri++) {
        for (int round = 0; round < 24; round++) {
            uint64_t r = radixes[ri];
            unsigned order = (unsigned)round % 3; /* values, running sums, sums of sums */
            /* point counts ending the last block at every length (1..128) over the rounds,
             * with one, two or three full blocks before it */
            size_t n = order + 1 + (size_t)(round % 4) * DPCODEC_BLOCK +
                       (size_t)(round * 37 + (int)ri * 11) % DPCODEC_BLOCK;
            if (n > MAXN)
                n = MAXN;
            int shape = round % 6; /* random, all 0, all r - 1, then random again */
            int64_t mn =
                round % 5 == 0 ? INT64_MIN + round : (int64_t)(radix_rand(&seed) % 2001) - 1000;
            size_t o = 0;
            v[o++] = DPCODEC_CVERSION;
            v[o++] = DPCODEC_VENC(DPCODEC_VK_INT, order);
            v[o++] = DPCODEC_CF_SECONDS; /* integer points, no descriptors, not deflated */
            o += coding_put_varint64(v + o, n);
            /* timestamps: offsets 0, 1, 2, ... (heads 0 and 1, zero-width blocks) */
            v[o++] = 0;
            if (n > 1)
                v[o++] = (uint8_t)coding_zigzag(1);
            for (size_t left = n > 2 ? n - 2 : 0; left > 0;) {
                size_t c = left < DPCODEC_BLOCK ? left : DPCODEC_BLOCK;
                v[o++] = 0;
                v[o++] = 0;
                left -= c;
            }
            /* values: heads, then radix blocks; now and then a block of zero residuals first
             * (not written until a block that is not) or a bit-packed block in between (another
             * radix, too: lanes of different radixes) */
            int64_t heads[2] = {(int64_t)(radix_rand(&seed) % 100000) - 50000, 7};
            for (unsigned h = 0; h < order && h < n; h++)
                o += coding_put_varint64(v + o, coding_zigzag(heads[h]));
            size_t m = n > order ? n - order : 0;
            int64_t res[MAXN];
            bool over = false;
            for (size_t done = 0, blk = 0; done < m; blk++) {
                size_t cnt = m - done < DPCODEC_BLOCK ? m - done : DPCODEC_BLOCK;
                /* now and then blocks of other radixes (two, then three in one stream: the
                 * decoder's plans of several radixes at once) */
                uint64_t br = r;
                if (round % 4 == 3 && blk > 0 && r > 4)
                    br = blk == 1 ? r - 1 : r - 2;
                else if (round % 4 == 1 && blk > 0)
                    br = radixes[(ri + blk * 5 + (size_t)round) % 17];
                if (blk == 0 && round % 8 == 5 && cnt < m) { /* residuals 0 first */
                    v[o++] = 0;
                    v[o++] = 0;
                    for (size_t j = 0; j < cnt; j++)
                        res[done + j] = 0;
                    done += cnt;
                    continue;
                }
                if (blk == 2 && round % 7 == 6) { /* a bit-packed block of width 3 */
                    v[o++] = 3;
                    o += coding_put_varint64(v + o, coding_zigzag(mn));
                    memset(v + o, 0, (cnt * 3 + 7) / 8);
                    for (size_t j = 0; j < cnt; j++) {
                        uint64_t u = radix_rand(&seed) % 8;
                        for (unsigned b = 0; b < 3; b++)
                            if (u >> (2 - b) & 1)
                                v[o + (j * 3 + b) / 8] |= (uint8_t)(0x80 >> ((j * 3 + b) % 8));
                        res[done + j] = (int64_t)((uint64_t)mn + u);
                    }
                    o += (cnt * 3 + 7) / 8;
                    done += cnt;
                    continue;
                }
                for (size_t j = 0; j < cnt; j++) {
                    dig[j] = shape == 1 ? 0 : shape == 2 ? br - 1 : radix_rand(&seed) % br;
                    res[done + j] = (int64_t)((uint64_t)mn + dig[j]);
                }
                /* the last round of each radix: the last block's number one too large */
                bool bad = round == 23 && done + cnt == m;
                o += put_radix_block(v + o, br, mn, dig, cnt, &bad);
                over |= bad;
                done += cnt;
            }
            /* the expected values: sums in 64-bit wrap-around */
            uint64_t x = (uint64_t)heads[0], dd = (uint64_t)heads[1];
            for (size_t i = 0; i < n; i++) {
                if (order == 0)
                    want[i] = res[i];
                else if (order == 1)
                    want[i] = (int64_t)(x = i == 0 ? x : x + (uint64_t)res[i - 1]);
                else if (i == 0)
                    want[i] = (int64_t)x;
                else if (i == 1)
                    want[i] = (int64_t)(x += dd);
                else
                    want[i] = (int64_t)(x += (dd += (uint64_t)res[i - 2]));
            }
            check_radix_cell(v, o, n, want, !over, &cols);
            checked++;
        }
    }
    dpcodec_cols_free(&cols);
    assert_int_equal(checked, 24 * (int)(sizeof(radixes) / sizeof(radixes[0])));
}

/* One cell per (radix, digit count 1..128, order 0 or 1, shape): a single radix block after the
 * heads, so that every split of a block (whole remainders mod r^2m, the tail, the table entries
 * of 3 or 4 digits and the last 1..G digits of a half, the eight-at-a-time running sums and
 * their tail) meets every length; digits all 0, all r - 1 (the largest number of the block),
 * random, or r - 1 only in the last place. Checked against the values summed here. */
static void test_radix_blocks_of_every_length_match_the_reference(void **state)
{
    (void)state;
    static const uint64_t radixes[] = {2,  3,  4,  5,  6,  7,  8,   9,    10,    11,         12,
                                       13, 14, 15, 16, 17, 31, 255, 4001, 65537, 4294967295u};
    enum {
        MAXN = DPCODEC_BLOCK + 2
    };
    static uint8_t v[16 * MAXN + 256];
    uint64_t dig[MAXN];
    int64_t want[MAXN], res[MAXN];
    struct dpcodec_cols cols;
    dpcodec_cols_init(&cols);
    uint64_t seed = 0x2545F4914F6CDD1DULL;
    int checked = 0;
    for (size_t ri = 0; ri < sizeof(radixes) / sizeof(radixes[0]); ri++) {
        uint64_t r = radixes[ri];
        for (size_t cnt = 1; cnt <= DPCODEC_BLOCK; cnt++) {
            for (int variant = 0; variant < 8; variant++) {
                unsigned order = (unsigned)variant & 1;
                int shape = variant >> 1; /* 0 random, 1 zeros, 2 all r - 1, 3 top digit r - 1 */
                size_t n = order + cnt;
                int64_t mn =
                    variant == 5 ? INT64_MAX - 3 : (int64_t)(radix_rand(&seed) % 201) - 100;
                size_t o = 0;
                v[o++] = DPCODEC_CVERSION;
                v[o++] = DPCODEC_VENC(DPCODEC_VK_INT, order);
                v[o++] = DPCODEC_CF_SECONDS;
                o += coding_put_varint64(v + o, n);
                v[o++] = 0; /* timestamps 0, 1, 2, ...: heads 0 and 1, zero-width blocks */
                if (n > 1)
                    v[o++] = (uint8_t)coding_zigzag(1);
                for (size_t left = n > 2 ? n - 2 : 0; left > 0;) {
                    size_t c = left < DPCODEC_BLOCK ? left : DPCODEC_BLOCK;
                    v[o++] = 0;
                    v[o++] = 0;
                    left -= c;
                }
                int64_t head = (int64_t)(radix_rand(&seed) % 1000) - 500;
                if (order)
                    o += coding_put_varint64(v + o, coding_zigzag(head));
                for (size_t j = 0; j < cnt; j++) {
                    dig[j] = shape == 1   ? 0
                             : shape == 2 ? r - 1
                             : shape == 3 ? (j + 1 == cnt ? r - 1 : 0)
                                          : radix_rand(&seed) % r;
                    res[j] = (int64_t)((uint64_t)mn + dig[j]);
                }
                bool over = false;
                o += put_radix_block(v + o, r, mn, dig, cnt, &over);
                uint64_t x = (uint64_t)head;
                for (size_t i = 0; i < n; i++) {
                    if (order == 0)
                        want[i] = res[i];
                    else
                        want[i] = (int64_t)(x = i == 0 ? x : x + (uint64_t)res[i - 1]);
                }
                check_radix_cell(v, o, n, want, true, &cols);
                checked++;
            }
        }
    }
    dpcodec_cols_free(&cols);
    assert_int_equal(checked, 8 * DPCODEC_BLOCK * (int)(sizeof(radixes) / sizeof(radixes[0])));
}

/* The same cells through the plain value expansion, which a machine with AVX2 takes only when
 * told to (dpcodec_set_simd): the fallback of machines without it. */
static void test_radix_blocks_match_the_reference_without_simd(void **state)
{
    dpcodec_set_simd(false);
    test_radix_blocks_of_every_length_match_the_reference(state);
    dpcodec_set_simd(true);
}

/* One cell per (width 1..64, entry count, order 0 or 1, shape): a single bit-packed block after
 * the heads, at the very end of the cell (so that the readers' whole 8-byte loads stop short of
 * the end and the last entries go through the checked path), for every count 1..128 at the
 * widths the two-entries-per-load loops take (w <= 28) and their neighbours, a sample of counts
 * above; entries random, all ones (the width's largest) or 0. Checked against sums made here. */
static void test_packed_blocks_of_every_width_match_the_reference(void **state)
{
    (void)state;
    enum {
        MAXN = DPCODEC_BLOCK + 2
    };
    static uint8_t v[16 * MAXN + 256];
    uint64_t u[MAXN];
    int64_t want[MAXN];
    struct dpcodec_cols cols;
    dpcodec_cols_init(&cols);
    uint64_t seed = 0x9FB21C651E98DF25ULL;
    int checked = 0;
    for (unsigned w = 1; w <= 64; w++) {
        for (size_t cnt = 1; cnt <= DPCODEC_BLOCK; cnt++) {
            if (w > 30 && cnt % 9 != 0 && cnt != DPCODEC_BLOCK && cnt > 3)
                continue;
            for (int variant = 0; variant < 6; variant++) {
                unsigned order = (unsigned)variant & 1;
                int shape = variant >> 1; /* 0 random, 1 all ones, 2 zeros */
                size_t n = order + cnt;
                int64_t mn = (int64_t)(radix_rand(&seed) % 2001) - 1000;
                size_t o = 0;
                v[o++] = DPCODEC_CVERSION;
                v[o++] = DPCODEC_VENC(DPCODEC_VK_INT, order);
                v[o++] = DPCODEC_CF_SECONDS;
                o += coding_put_varint64(v + o, n);
                v[o++] = 0; /* timestamps 0, 1, 2, ...: heads 0 and 1, zero-width blocks */
                if (n > 1)
                    v[o++] = (uint8_t)coding_zigzag(1);
                for (size_t left = n > 2 ? n - 2 : 0; left > 0;) {
                    size_t c = left < DPCODEC_BLOCK ? left : DPCODEC_BLOCK;
                    v[o++] = 0;
                    v[o++] = 0;
                    left -= c;
                }
                int64_t head = (int64_t)(radix_rand(&seed) % 1000) - 500;
                if (order)
                    o += coding_put_varint64(v + o, coding_zigzag(head));
                uint64_t top = w == 64 ? UINT64_MAX : (1ull << w) - 1;
                v[o++] = (uint8_t)w;
                o += coding_put_varint64(v + o, coding_zigzag(mn));
                size_t bytes = (cnt * w + 7) / 8;
                memset(v + o, 0, bytes);
                for (size_t j = 0; j < cnt; j++) {
                    u[j] = shape == 1 ? top : shape == 2 ? 0 : radix_rand(&seed) & top;
                    for (unsigned b = 0; b < w; b++) /* MSB first */
                        if (u[j] >> (w - 1 - b) & 1)
                            v[o + (j * w + b) / 8] |= (uint8_t)(0x80 >> ((j * w + b) % 8));
                }
                o += bytes;
                uint64_t x = (uint64_t)head;
                for (size_t i = 0; i < n; i++) {
                    if (order == 0)
                        want[i] = (int64_t)((uint64_t)mn + u[i]);
                    else
                        want[i] = (int64_t)(x = i == 0 ? x : x + (uint64_t)mn + u[i - 1]);
                }
                check_radix_cell(v, o, n, want, true, &cols);
                checked++;
            }
        }
    }
    dpcodec_cols_free(&cols);
    assert_true(checked > 6 * DPCODEC_BLOCK * 30);
}

/* Sets nbits bits of x (MSB first) at bit *pos of the zeroed buffer b and moves *pos past them. */
static void put_bits(uint8_t *b, size_t *pos, uint64_t x, unsigned nbits)
{
    for (unsigned i = 0; i < nbits; i++, (*pos)++)
        if (x >> (nbits - 1 - i) & 1)
            b[*pos / 8] |= (uint8_t)(0x80 >> (*pos % 8));
}

/* The cell header of n integer points at BASE + i s (timestamps 0, 1, 2, ...: heads 0 and 1,
 * zero-width blocks) into v; returns its length. */
static size_t int_cell_head(uint8_t *v, unsigned order, size_t n)
{
    size_t o = 0;
    v[o++] = DPCODEC_CVERSION;
    v[o++] = DPCODEC_VENC(DPCODEC_VK_INT, order);
    v[o++] = DPCODEC_CF_SECONDS;
    o += coding_put_varint64(v + o, n);
    v[o++] = 0;
    if (n > 1)
        v[o++] = (uint8_t)coding_zigzag(1);
    for (size_t left = n > 2 ? n - 2 : 0; left > 0;) {
        size_t c = left < DPCODEC_BLOCK ? left : DPCODEC_BLOCK;
        v[o++] = 0;
        v[o++] = 0;
        left -= c;
    }
    return o;
}

/* One cell per (Rice parameter 0..63, entry count, order 0 or 1, shape): a single Rice block
 * after the heads, at the very end of the cell. The reader decodes entries from a 64-bit window
 * in a register (at most 63 valid bits, fewer at the stream's end) and takes an entry longer than
 * a window, or cut by the end, through the checked bit reader: the shapes are short codes,
 * unary parts of 56..70 ones (longer than any window), codes of 62..64 bits (about a window),
 * zeros, and codes of up to 40 ones; every parameter with the counts 1..4, 13k and 128, and
 * every count at parameters 0, 7, 14 ... Checked against sums made here; the cell cut by its
 * last byte must be refused by both decoders. */
static void test_rice_blocks_match_the_reference(void **state)
{
    (void)state;
    enum {
        MAXN = DPCODEC_BLOCK + 2
    };
    static uint8_t v[20 * MAXN + 256];
    uint64_t z[MAXN];
    int64_t want[MAXN];
    struct dpcodec_cols cols;
    dpcodec_cols_init(&cols);
    uint64_t seed = 0x5DEECE66DULL;
    int checked = 0, slow = 0;
    for (unsigned rk = 0; rk <= 63; rk++) {
        for (size_t cnt = 1; cnt <= DPCODEC_BLOCK; cnt++) {
            if (rk % 7 != 0 && cnt > 4 && cnt % 13 != 0 && cnt != DPCODEC_BLOCK)
                continue;
            for (int variant = 0; variant < 10; variant++) {
                unsigned order = (unsigned)variant & 1;
                int shape = variant >> 1;
                size_t n = order + cnt;
                int64_t mn = (int64_t)(radix_rand(&seed) % 2001) - 1000;
                size_t o = int_cell_head(v, order, n);
                int64_t head = (int64_t)(radix_rand(&seed) % 1000) - 500;
                if (order)
                    o += coding_put_varint64(v + o, coding_zigzag(head));
                v[o++] = DPCODEC_RICE_BLOCK;
                v[o++] = (uint8_t)rk;
                o += coding_put_varint64(v + o, coding_zigzag(mn));
                uint64_t lowmask = rk ? UINT64_MAX >> (64 - rk) : 0;
                uint64_t qmax = rk ? UINT64_MAX >> rk : UINT64_MAX; /* q << rk must fit */
                size_t pos = 0, room = sizeof(v) - o;
                memset(v + o, 0, room);
                for (size_t j = 0; j < cnt; j++) {
                    uint64_t q = shape == 0   ? radix_rand(&seed) % 4
                                 : shape == 1 ? (radix_rand(&seed) % 3 == 0
                                                     ? 56 + radix_rand(&seed) % 15
                                                     : radix_rand(&seed) % 3)
                                 : shape == 2 ? (61 + radix_rand(&seed) % 3 > rk
                                                     ? 61 + radix_rand(&seed) % 3 - rk
                                                     : 0)
                                 : shape == 3 ? 0
                                              : radix_rand(&seed) % 41;
                    if (q > qmax)
                        q = qmax;
                    uint64_t low = shape == 3 ? 0 : radix_rand(&seed) & lowmask;
                    slow += q + 1 + rk > 56;
                    for (uint64_t b = 0; b < q; b++)
                        put_bits(v + o, &pos, 1, 1);
                    put_bits(v + o, &pos, 0, 1);
                    put_bits(v + o, &pos, low, rk);
                    z[j] = q << rk | low;
                }
                assert_true(pos / 8 + 1 < room);
                o += (pos + 7) / 8;
                uint64_t x = (uint64_t)head;
                for (size_t i = 0; i < n; i++) {
                    uint64_t res = (uint64_t)mn + (uint64_t)coding_unzigzag(z[i - (i && order)]);
                    if (order == 0)
                        want[i] = (int64_t)res;
                    else
                        want[i] = (int64_t)(x = i == 0 ? x : x + res);
                }
                check_radix_cell(v, o, n, want, true, &cols);
                check_radix_cell(v, o - 1, n, want, false, &cols);
                checked++;
            }
        }
    }
    dpcodec_cols_free(&cols);
    assert_true(checked > 10 * 64 * 14);
    assert_true(slow > 1000);
}

/* A patched block (dpcodec_format.h) of cnt entries after the heads of an order-`order` cell:
 * entry j = base + slope * j + (high_j << w | low_j) (64-bit wrap-around), exceptions where
 * exc[j]; appended to v at o. Returns the new length; want[] gets the points' values. */
static size_t patched_cell(uint8_t *v, unsigned order, size_t cnt, unsigned w, int64_t base,
                           int64_t slope, const bool *exc, uint64_t *seed, int64_t *want)
{
    size_t n = order + cnt, o = int_cell_head(v, order, n);
    v[0] = DPCODEC_CVERSION_PATCHED;
    int64_t h0 = (int64_t)(radix_rand(seed) % 2001) - 1000, h1 = (int64_t)(radix_rand(seed) % 7);
    if (order >= 1)
        o += coding_put_varint64(v + o, coding_zigzag(h0));
    if (order == 2)
        o += coding_put_varint64(v + o, coding_zigzag(h1));
    v[o++] = DPCODEC_PATCHED_BLOCK;
    v[o++] = (uint8_t)w;
    o += coding_put_varint64(v + o, coding_zigzag(base));
    o += coding_put_varint64(v + o, coding_zigzag(slope));
    size_t ne = 0;
    for (size_t j = 0; j < cnt; j++)
        ne += exc[j];
    v[o++] = (uint8_t)ne;
    uint64_t low[DPCODEC_BLOCK];
    int64_t high[DPCODEC_BLOCK];
    size_t pos = 0, bytes = (cnt * w + 7) / 8;
    memset(v + o, 0, bytes);
    for (size_t j = 0; j < cnt; j++) {
        uint64_t x = radix_rand(seed);
        low[j] = w == 64 ? x : w ? x >> (64 - w) : 0;
        if (j % 5 == 1 && w) /* both ends of the field */
            low[j] = w == 64 ? UINT64_MAX : (1ull << w) - 1;
        if (j % 5 == 2)
            low[j] = 0;
        put_bits(v + o, &pos, low[j], w);
        /* high parts: small, large, negative; 0 at width 64 (nothing is above it) */
        int64_t hx = (int64_t)radix_rand(seed);
        high[j] = !exc[j] || w == 64 ? 0
                  : j % 3 == 0       ? (int64_t)(radix_rand(seed) % 9) - 4
                  : j % 3 == 1       ? hx >> w
                                     : -1 - (int64_t)(radix_rand(seed) % 1000);
    }
    o += bytes;
    for (size_t j = 0; j < cnt; j++)
        if (exc[j])
            v[o++] = (uint8_t)j;
    for (size_t j = 0; j < cnt; j++)
        if (exc[j])
            o += coding_put_varint64(v + o, coding_zigzag(high[j]));
    uint64_t x = (uint64_t)h0, d = (uint64_t)h1;
    for (size_t i = 0; i < n; i++) {
        if (i < order) {
            want[i] = (int64_t)(i == 0 ? x : (x += d));
            continue;
        }
        size_t j = i - order;
        uint64_t r =
            (uint64_t)base + (uint64_t)slope * j + low[j] + (w < 64 ? (uint64_t)high[j] << w : 0);
        if (order == 0)
            want[i] = (int64_t)r;
        else if (order == 1)
            want[i] = (int64_t)(x += r);
        else
            want[i] = (int64_t)(x += (d += r));
    }
    return o;
}

/* Patched blocks at every edge, decoded by both readers against values made here (in version-2
 * cells; a version-1 cell holding one is refused): widths 0,
 * 1, 7, 21, 31, 57 (the last width of the 8-byte loads), 58, 63 and 64; counts 1, 2, 3, 127 and
 * 128; orders 0, 1 and 2; minima and slopes at INT64's extremes (the sums wrap around); no
 * exception, every entry one, the first or the last alone, a few. Every cut of each cell is
 * refused, and so are an exception count above the entries, positions out of order or past
 * the block, a width of 65 and a high part at width 64. */
static void test_patched_blocks_match_the_reference(void **state)
{
    (void)state;
    static const unsigned widths[] = {0, 1, 7, 21, 31, 57, 58, 63, 64};
    static const size_t counts[] = {1, 2, 3, 127, 128};
    static const int64_t bases[] = {0, -5, INT64_MIN, INT64_MAX, 4500000000LL};
    static const int64_t slopes[] = {0, 15000000, -3, INT64_MAX, INT64_MIN};
    static uint8_t v[32 * DPCODEC_BLOCK + 256];
    int64_t want[DPCODEC_BLOCK + 2];
    bool exc[DPCODEC_BLOCK];
    struct dpcodec_cols cols;
    dpcodec_cols_init(&cols);
    uint64_t seed = 0xC0FFEE12345ULL;
    int checked = 0;
    for (size_t wi = 0; wi < sizeof(widths) / sizeof(widths[0]); wi++)
        for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++)
            for (int pattern = 0; pattern < 5; pattern++)
                for (unsigned order = 0; order <= 2; order++) {
                    size_t cnt = counts[ci];
                    for (size_t j = 0; j < cnt; j++)
                        exc[j] = pattern == 1              ? true
                                 : pattern == 2            ? j == 0
                                 : pattern == 3            ? j == cnt - 1
                                 : pattern == 4 && cnt > 3 ? radix_rand(&seed) % 30 == 0 || j == 5
                                                           : false;
                    int64_t base = bases[(wi + ci + (size_t)pattern) % 5];
                    int64_t slope = slopes[(wi + order + (size_t)pattern) % 5];
                    size_t o =
                        patched_cell(v, order, cnt, widths[wi], base, slope, exc, &seed, want);
                    check_radix_cell(v, o, order + cnt, want, true, &cols);
                    for (size_t cut = 0; cut < o; cut++)
                        check_radix_cell(v, cut, order + cnt, want, false, &cols);
                    v[0] = DPCODEC_CVERSION; /* version 1 has no patched blocks */
                    check_radix_cell(v, o, order + cnt, want, false, &cols);
                    checked++;
                }
    assert_int_equal(checked, 9 * 5 * 5 * 3);
    /* malformed blocks: 4 entries at width 7, exceptions at 1 and 2 */
    bool two[4] = {false, true, true, false};
    size_t o = patched_cell(v, 0, 4, 7, 100, 1, two, &seed, want);
    check_radix_cell(v, o, 4, want, true, &cols);
    size_t at_w = o - 1 - 1 - 2 - 4 - 1 - 1 - 1 - 1; /* width byte: before base, slope, e ... */
    while (v[at_w] != DPCODEC_PATCHED_BLOCK)
        at_w--;
    at_w++;
    size_t at_e = at_w + 1 + 2 + 1; /* base 100 and slope 1 as varints of 2 and 1 bytes */
    assert_int_equal(v[at_e], 2);
    size_t at_pos = at_e + 1 + 4; /* 28 bits packed: 4 bytes */
    assert_int_equal(v[at_pos], 1);
    assert_int_equal(v[at_pos + 1], 2);
    v[at_e] = 5; /* more exceptions than entries */
    check_radix_cell(v, o, 4, want, false, &cols);
    v[at_e] = 2;
    v[at_pos] = 2; /* positions not increasing */
    check_radix_cell(v, o, 4, want, false, &cols);
    v[at_pos] = 1;
    v[at_pos + 1] = 4; /* a position past the block */
    check_radix_cell(v, o, 4, want, false, &cols);
    v[at_pos + 1] = 2;
    check_radix_cell(v, o, 4, want, true, &cols);
    v[at_w] = 65; /* no such width */
    check_radix_cell(v, o, 4, want, false, &cols);
    /* width 64 with a non-zero high part */
    bool one[1] = {true};
    o = patched_cell(v, 0, 1, 64, 7, 0, one, &seed, want);
    check_radix_cell(v, o, 1, want, true, &cols);
    assert_int_equal(v[o - 1], 0); /* its high part, 0 */
    v[o - 1] = 2;
    check_radix_cell(v, o, 1, want, false, &cols);
    dpcodec_cols_free(&cols);
}

/* The encoder writes patched blocks where they are smaller: a byte gauge (a level that steps
 * by up to 1e9 every 30 points, noise of 2^20: its differences are 21-bit but for the steps)
 * and a noisy trend (a line plus uniform noise of 2000 values: the values less the line fit 11
 * bits, their differences need 12) round trip and come out smaller than any other block kind
 * makes them (before version 2: 1190 and 546 bytes); evenly spaced timestamps are two heads
 * (flags bit7), and a cell with neither is version 1, which version-1 readers read. */
static void test_encoder_writes_patched_blocks_where_smaller(void **state)
{
    (void)state;
    enum {
        N = 360
    };
    struct dpcodec_point p[N];
    uint8_t v[24 * N + 96];
    size_t vl, bytes;
    struct ct_err err = {0};
    uint64_t seed = 99;
    int64_t level = 0;
    for (int i = 0; i < N; i++) {
        if (i % 30 == 0)
            level = (int64_t)(radix_rand(&seed) % 1000000000);
        p[i] = dpcodec_point_int(BASE_MS + i * 10000LL, false,
                                 4500000000LL + level + (int64_t)(radix_rand(&seed) % 1048576));
    }
    assert_int_equal(roundtrip_compressed(p, N, &bytes), DPCODEC_VK_INT);
    print_message("byte gauge: %zu bytes for %d points\n", bytes, N);
    /* 21-bit differences plus 12 steps of 3 or 4 bytes: under 23 bits a point (1012 bytes) */
    assert_true(bytes * 8 < (size_t)N * 23);
    assert_int_equal(dpcodec_compressed_encode(BASE, p, N, v, &vl, &err), CT_OK);
    assert_int_equal(v[0], DPCODEC_CVERSION_PATCHED);
    for (int i = 0; i < N; i++)
        p[i] = dpcodec_point_int(BASE_MS + i * 10000LL, false,
                                 5000 + i * 7 + (int64_t)(radix_rand(&seed) % 2000));
    assert_int_equal(roundtrip_compressed(p, N, &bytes), DPCODEC_VK_INT);
    print_message("noisy trend: %zu bytes for %d points\n", bytes, N);
    assert_true(bytes < 546); /* 540 */
    /* 4-bit values with outliers just past the width (16..31: an exception's high part is 1)
     * and far past it, both signs: the exceptions must be exactly the entries outside */
    for (int i = 0; i < N; i++) {
        int64_t x = (int64_t)(radix_rand(&seed) % 16);
        if (i % 37 == 5)
            x = 16 + (int64_t)(radix_rand(&seed) % 16);
        if (i % 53 == 9)
            x = i % 2 ? -1 - (int64_t)(radix_rand(&seed) % 100) : 1000000 + i;
        p[i] = dpcodec_point_int(BASE_MS + i * 10000LL, false, x);
    }
    assert_int_equal(roundtrip_compressed(p, N, &bytes), DPCODEC_VK_INT);
    print_message("4-bit values with outliers: %zu bytes for %d points\n", bytes, N);
    /* 4 bits, 17 exceptions of 2 to 4 bytes, block headers: 266 bytes (307 before version 2;
     * 6 bits a point would be 270; 21 bits without exceptions) */
    assert_true(bytes * 8 < (size_t)N * 6);
    for (int i = 0; i < N; i++)
        p[i] = dpcodec_point_int(BASE_MS + i * 10000LL, false, 1000000 + i * 37);
    assert_int_equal(dpcodec_compressed_encode(BASE, p, N, v, &vl, &err), CT_OK);
    assert_true(vl < 20); /* header, two timestamp heads, two value heads, two zero blocks */
    assert_int_equal(v[0], DPCODEC_CVERSION_PATCHED);
    assert_true(v[2] & DPCODEC_CF_REGULAR);
    {
        /* every cut of it is refused */
        struct dpcodec_point out[N];
        uint8_t cq[DPCODEC_CQ_LEN];
        dpcodec_compressed_qualifier(p, N, cq);
        for (size_t cut = 0; cut < vl; cut++) {
            struct wc_cell cell = cell_of(cq, sizeof(cq), v, cut, 1);
            size_t got = 0;
            assert_int_equal(dpcodec_row_decode(BASE, &cell, 1, out, N, &got, NULL, &err),
                             CT_ECORRUPT);
        }
    }
    /* uneven timestamps, a small walk: no patched block, version 1; flags bit7 means nothing
     * there (the same points with it set) */
    for (int i = 0; i < 40; i++)
        p[i] = dpcodec_point_int(BASE_MS + i * 10000LL + (i % 3) * 1000, false, 5 + i % 4);
    assert_int_equal(roundtrip_compressed(p, 40, NULL), DPCODEC_VK_INT);
    assert_int_equal(dpcodec_compressed_encode(BASE, p, 40, v, &vl, &err), CT_OK);
    assert_int_equal(v[0], DPCODEC_CVERSION);
    assert_false(v[2] & DPCODEC_CF_REGULAR);
    v[2] |= DPCODEC_CF_REGULAR;
    struct dpcodec_point out[40];
    uint8_t cq[DPCODEC_CQ_LEN];
    dpcodec_compressed_qualifier(p, 40, cq);
    struct wc_cell cell = cell_of(cq, sizeof(cq), v, vl, 1);
    size_t got = 0;
    assert_int_equal(dpcodec_row_decode(BASE, &cell, 1, out, 40, &got, NULL, &err), CT_OK);
    assert_int_equal(got, 40);
    for (int i = 0; i < 40; i++) {
        assert_true(out[i].ts_ms == p[i].ts_ms);
        assert_true(out[i].i == p[i].i);
    }
}

/* Decimal cells (values m / 10^e of DOUBLE and FLOAT points) with mantissas on both sides of
 * +-2^51 (four at a time are converted exactly below it, one by one above), zero, +-1 and
 * random ones of every size, every exponent 0..15 and 1..11 points (every tail after groups of
 * four), with and without SIMD: the doubles' bits against (double)m / 10^e made here (rounded
 * to float for FLOAT), from both decoders; the columns say no value is NaN. */
static double p10(unsigned e)
{
    double d = 1; /* 10^e is exact in a double up to 10^22 */
    while (e--)
        d *= 10;
    return d;
}

static void test_decimal_cells_match_the_division(void **state)
{
    (void)state;
    static const int64_t edge[] = {
        0, 1, -1, 7, 1234, -99999, (1LL << 51) - 1, -(1LL << 51), 1LL << 51, -(1LL << 51) - 1,
        (1LL << 52) + 3, (1LL << 53) + 1, INT64_MAX, INT64_MIN + 1, 4503599627370497LL};
    uint8_t v[16 * 12 + 64];
    int64_t m[12];
    struct dpcodec_point pts[12];
    struct dpcodec_cols cols;
    dpcodec_cols_init(&cols);
    uint64_t seed = 0x123456789ULL;
    int checked = 0;
    for (int simd = 1; simd >= 0; simd--) {
        dpcodec_set_simd(simd != 0);
        for (unsigned e = 0; e <= DPCODEC_MAX_EXP10; e++)
            for (size_t n = 1; n <= 11; n++)
                for (int t = 0; t < 2; t++)
                    for (int round = 0; round < 4; round++) {
                        enum dpcodec_type ty = t ? DPCODEC_FLOAT : DPCODEC_DOUBLE;
                        for (size_t i = 0; i < n; i++) {
                            uint64_t r = radix_rand(&seed);
                            int64_t a = (int64_t)((r >> (r % 64)) >> 1);
                            m[i] = r % 3 == 0 ? edge[r / 3 % (sizeof(edge) / sizeof(edge[0]))]
                                   : r & 1    ? -a
                                              : a;
                        }
                        size_t o = 0;
                        v[o++] = DPCODEC_CVERSION;
                        v[o++] = DPCODEC_VENC(DPCODEC_VK_DECIMAL, 0);
                        v[o++] = (uint8_t)(DPCODEC_CF_SECONDS | ty << DPCODEC_CF_TYPE_SHIFT);
                        o += coding_put_varint64(v + o, n);
                        v[o++] = (uint8_t)e;
                        v[o++] = 0; /* timestamps 0, 1, 2, ... */
                        if (n > 1)
                            v[o++] = (uint8_t)coding_zigzag(1);
                        if (n > 2) {
                            v[o++] = 0;
                            v[o++] = 0;
                        }
                        v[o++] = DPCODEC_VARINT_BLOCK; /* order 0: minimum 0, m as varints */
                        v[o++] = 0;
                        for (size_t i = 0; i < n; i++)
                            o += coding_put_varint64(v + o, (uint64_t)m[i]);
                        for (size_t i = 0; i < n; i++)
                            pts[i] = dpcodec_point_int(BASE_MS + (int64_t)i * 1000, false, 0);
                        uint8_t q[DPCODEC_CQ_LEN];
                        dpcodec_compressed_qualifier(pts, n, q);
                        struct wc_cell c = cell_of(q, sizeof(q), v, o, 1);
                        struct ct_err e1 = {0}, e2 = {0};
                        size_t got = 0;
                        if (dpcodec_row_decode(BASE, &c, 1, pts, n, &got, NULL, &e1) != CT_OK ||
                            dpcodec_row_decode_cols(BASE, &c, 1, &cols, NULL, &e2) != CT_OK)
                            fail_msg("e %u n %zu: %s / %s", e, n, e1.msg, e2.msg);
                        assert_int_equal(got, n);
                        assert_int_equal(cols.n, n);
                        assert_true(cols.no_nan);
                        for (size_t i = 0; i < n; i++) {
                            double d = (double)m[i] / p10(e);
                            if (ty == DPCODEC_FLOAT)
                                d = (double)(float)d;
                            uint64_t wb, pb;
                            memcpy(&wb, &d, 8);
                            memcpy(&pb, &pts[i].f, 8);
                            if (cols.val[i] != wb || pb != wb || pts[i].type != ty ||
                                cols.is_int[i])
                                fail_msg("e %u m %lld (%s): want %016llx, columns %016llx, "
                                         "iterator %016llx",
                                         e, (long long)m[i], t ? "float" : "double",
                                         (unsigned long long)wb,
                                         (unsigned long long)cols.val[i],
                                         (unsigned long long)pb);
                        }
                        checked++;
                    }
    }
    dpcodec_set_simd(true);
    dpcodec_cols_free(&cols);
    assert_int_equal(checked, 2 * 16 * 11 * 2 * 4);
}

/* Timestamp streams of zero-width blocks, which the cell reader takes as evenly spaced times
 * without the stream reader when every block's minimum is 0 and both heads fit one byte: against
 * the times made here from the same heads and residuals, from both decoders, for 2..300 points
 * (one to three blocks) with the heads 0 and 1 (regular), the last or the first block's minimum
 * 1 (times speeding up: not regular; while they stay inside the hour), a minimum 0 written in
 * two bytes, and heads of two bytes. */
static void test_timestamp_zero_blocks_read_like_the_stream(void **state)
{
    (void)state;
    static uint8_t v[64 + 8 * DPCODEC_BLOCK];
    static struct dpcodec_point pts[300];
    static int64_t want[300];
    struct dpcodec_cols cols;
    dpcodec_cols_init(&cols);
    int checked = 0;
    for (size_t n = 2; n <= 300; n++)
        for (int shape = 0; shape < 5; shape++) {
            size_t nb = (n - 2 + DPCODEC_BLOCK - 1) / DPCODEC_BLOCK;
            if (shape >= 1 && shape <= 3 && nb == 0)
                continue;
            int64_t h0 = shape == 4 ? 100 : 0, h1 = shape == 4 ? 11 : 1;
            size_t o = 0;
            v[o++] = DPCODEC_CVERSION;
            v[o++] = DPCODEC_VENC(DPCODEC_VK_INT, 0);
            v[o++] = DPCODEC_CF_SECONDS;
            o += coding_put_varint64(v + o, n);
            o += coding_put_varint64(v + o, coding_zigzag(h0));
            o += coding_put_varint64(v + o, coding_zigzag(h1));
            int64_t x = h0, d = h1;
            want[0] = h0;
            want[1] = h0 + h1;
            x = want[1];
            for (size_t b = 0; b < nb; b++) {
                int64_t mn = (shape == 1 && b + 1 == nb) || (shape == 2 && b == 0) ? 1 : 0;
                v[o++] = 0;
                if (shape == 3) { /* 0 as an over-long varint */
                    v[o++] = 0x80;
                    v[o++] = 0;
                } else {
                    o += coding_put_varint64(v + o, coding_zigzag(mn));
                }
                size_t cnt = n - 2 - b * DPCODEC_BLOCK;
                cnt = cnt < DPCODEC_BLOCK ? cnt : DPCODEC_BLOCK;
                for (size_t j = 0; j < cnt; j++) {
                    d += mn;
                    x += d;
                    want[2 + b * DPCODEC_BLOCK + j] = x;
                }
            }
            if (want[n - 1] >= 3600)
                continue; /* times speeding up past the hour */
            for (size_t b = 0; b < (n + DPCODEC_BLOCK - 1) / DPCODEC_BLOCK; b++) {
                v[o++] = 0; /* values: zero-width blocks of minimum 5 */
                o += coding_put_varint64(v + o, coding_zigzag(5));
            }
            for (size_t i = 0; i < n; i++)
                pts[i] = dpcodec_point_int((BASE + want[i]) * 1000, false, 5);
            uint8_t q[DPCODEC_CQ_LEN];
            dpcodec_compressed_qualifier(pts, n, q);
            struct wc_cell c = cell_of(q, sizeof(q), v, o, 1);
            struct ct_err e1 = {0}, e2 = {0};
            size_t got = 0;
            if (dpcodec_row_decode(BASE, &c, 1, pts, n, &got, NULL, &e1) != CT_OK ||
                dpcodec_row_decode_cols(BASE, &c, 1, &cols, NULL, &e2) != CT_OK)
                fail_msg("n %zu shape %d: %s / %s", n, shape, e1.msg, e2.msg);
            assert_int_equal(got, n);
            assert_int_equal(cols.n, n);
            dpcodec_cols_fill_ts(&cols);
            for (size_t i = 0; i < n; i++)
                if (pts[i].ts_ms != (BASE + want[i]) * 1000 || cols.ts[i] != pts[i].ts_ms ||
                    pts[i].i != 5 || (int64_t)cols.val[i] != 5)
                    fail_msg("n %zu shape %d point %zu: want %lld, iterator %lld, columns %lld",
                             n, shape, i, (long long)want[i], (long long)pts[i].ts_ms,
                             (long long)cols.ts[i]);
            checked++;
        }
    dpcodec_cols_free(&cols);
    assert_true(checked > 299 * 3);
}

/* Rows of integer single cells with 2-byte qualifiers (a current hour: read in one pass by the
 * columnar reader), against the iterator's row decoder: every value width with both signs,
 * non-datapoint cells among them (annotations, a histogram, an unknown odd qualifier), and now
 * and then a cell the one-pass reader leaves to the general path (a duplicate timestamp of
 * another width, a float, an ms qualifier, an append cell, a value longer than its flags). */
static void test_cols_reads_rows_of_integer_cells_like_row_decode(void **state)
{
    (void)state;
    enum {
        MAXC = 48
    };
    struct dpcodec_cols cols;
    dpcodec_cols_init(&cols);
    uint64_t seed = 12345;
    int ok = 0, all_fast_shape = 0;
    for (int round = 0; round < 3000; round++) {
        uint8_t q[MAXC][4], v[MAXC][9];
        struct wc_cell row[MAXC];
        size_t nr = 0;
        int ncell = 1 + (int)(radix_rand(&seed) % 40);
        int extra = round % 10; /* 0..5: only integers and non-datapoint cells */
        uint32_t off = (uint32_t)(radix_rand(&seed) % 50);
        for (int i = 0; i < ncell && off < 3600;
             i++, off += 1 + (uint32_t)(radix_rand(&seed) % 90)) {
            static const uint8_t widths[4] = {1, 2, 4, 8};
            uint8_t w = widths[radix_rand(&seed) % 4];
            int64_t x = (int64_t)radix_rand(&seed);
            x >>= 64 - 8 * w; /* a value of w bytes, either sign */
            uint16_t qu = (uint16_t)(off << 4 | (uint32_t)(w - 1));
            coding_put_be16(q[nr], qu);
            for (unsigned b = 0; b < w; b++)
                v[nr][b] = (uint8_t)((uint64_t)x >> (8 * (w - 1 - b)));
            row[nr] = cell_of(q[nr], 2, v[nr], w, 100 + i);
            nr++;
            if (extra == 6 && i == ncell / 2) { /* the same second again, another width */
                coding_put_be16(q[nr], (uint16_t)(off << 4 | (w == 1 ? 1 : 0)));
                v[nr][0] = 0xF0;
                v[nr][1] = 0x01;
                row[nr] = cell_of(q[nr], 2, v[nr], w == 1 ? 2 : 1, 50 + 100 * (round % 2));
                nr++;
            }
        }
        if (extra == 7 && nr > 1) { /* a float */
            coding_put_be16(q[0], (uint16_t)((q[0][0] << 8 | q[0][1]) & 0xFFF0) | 0x0B);
            memcpy(v[0], "\x3F\xC0\x00\x00", 4);
            row[0].value.len = 4;
        }
        if (extra == 8 && nr > 1) /* an integer value longer than its flags say */
            row[nr / 2].value.len = row[nr / 2].value.len == 1 ? 2 : row[nr / 2].value.len;
        size_t ndp = nr;
        /* non-datapoint cells, and (extra 9) an ms qualifier and an append cell; the store
         * orders a row's cells by qualifier bytes */
        static const uint8_t ann[3] = {0x01, 0x00, 0x07}, hist[3] = {0x06, 0x00, 0x01},
                             odd[5] = {0x09, 1, 2, 3, 4}, msq[4] = {0xF0, 0x00, 0x00, 0x40},
                             app[3] = {0x05, 0x00, 0x00}, appv[3] = {0x00, 0x30, 0x07};
        if (round % 3 == 0)
            row[nr++] = cell_of(ann, 3, (const uint8_t *)"{}", 2, 10);
        if (round % 5 == 0)
            row[nr++] = cell_of(hist, 3, (const uint8_t *)"h", 1, 10);
        if (round % 7 == 0)
            row[nr++] = cell_of(odd, 5, (const uint8_t *)"u", 1, 10);
        if (extra == 9 && round % 20 == 9)
            row[nr++] = cell_of(msq, 4, (const uint8_t *)"\x05", 1, 10);
        if (extra == 9 && round % 20 == 19)
            row[nr++] = cell_of(app, 3, appv, 3, 10);
        for (size_t i = 1; i < nr; i++) { /* insertion sort by qualifier bytes */
            struct wc_cell c = row[i];
            size_t j = i;
            for (; j > 0; j--) {
                const struct wc_cell *o = &row[j - 1];
                size_t ml = o->qualifier.len < c.qualifier.len ? o->qualifier.len : c.qualifier.len;
                int cmp = memcmp(o->qualifier.data, c.qualifier.data, ml);
                if (cmp < 0 || (cmp == 0 && o->qualifier.len <= c.qualifier.len))
                    break;
                row[j] = row[j - 1];
            }
            row[j] = c;
        }
        all_fast_shape += extra <= 5 && ndp > 0;
        check_cols_like_row(row, nr, &cols, &ok);
    }
    dpcodec_cols_free(&cols);
    assert_true(all_fast_shape > 1500);
    assert_true(ok > 2500);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_cells_are_byte_exact),
        cmocka_unit_test(test_decoder_reads_every_opentsdb_layout),
        cmocka_unit_test(test_annotation_qualifiers),
        cmocka_unit_test(test_compressed_round_trips_every_value_kind),
        cmocka_unit_test(test_compressed_qualifier_hashes_the_timestamps),
        cmocka_unit_test(test_compressed_rejects_unknown_version_and_bad_input),
        cmocka_unit_test(test_compaction_round_trips_in_both_formats),
        cmocka_unit_test(test_compaction_duplicates_follow_fix_duplicates),
        cmocka_unit_test(test_row_decode_sorts_dedups_and_reports_small_buffers),
        cmocka_unit_test(test_decoder_survives_damaged_cells),
        cmocka_unit_test(test_cols_decode_matches_row_decode),
        cmocka_unit_test(test_cols_decode_compressed_cells),
        cmocka_unit_test(test_encoder_output_bytes_are_pinned),
        cmocka_unit_test(test_encoder_threads_write_the_same_bytes),
        cmocka_unit_test(test_annotation_test_inline_matches_qualifier_kind),
        cmocka_unit_test(test_radix_blocks_decode_every_radix_and_digit_count),
        cmocka_unit_test(test_radix_blocks_of_every_length_match_the_reference),
        cmocka_unit_test(test_radix_blocks_match_the_reference_without_simd),
        cmocka_unit_test(test_packed_blocks_of_every_width_match_the_reference),
        cmocka_unit_test(test_cols_reads_rows_of_integer_cells_like_row_decode),
        cmocka_unit_test(test_rice_blocks_match_the_reference),
        cmocka_unit_test(test_patched_blocks_match_the_reference),
        cmocka_unit_test(test_encoder_writes_patched_blocks_where_smaller),
        cmocka_unit_test(test_decimal_cells_match_the_division),
        cmocka_unit_test(test_timestamp_zero_blocks_read_like_the_stream),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
