/* test_head.c - the per-series ingest head (schema/head.h): bit-exact round trips of every point
 * kind (integers at the int64 limits, floats and doubles at their edges, seconds and
 * milliseconds, mixed kinds in one hour), random streams, late / out-of-order / no-room
 * refusals that leave the head unchanged, hand-off of closed hours (the same points as the
 * store's compressed cell decodes), a failing hand-off keeping its chunks, compression and the
 * byte accounting; a batch append equals the same points appended one by one (results and
 * head), and a batch with one bad point changes nothing; a writer's head ref of a series freed
 * at a hand-off is never followed. */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "schema/dpcodec.h"
#include "schema/head.h"
#include "tests/lib/ctest.h"

#define BASE    1356998400LL /* 2013-01-01T00:00:00Z, a base hour */
#define BASE_MS (BASE * 1000)

static const uint8_t T1[] = {0, 0, 1, 0, 0, 1, 0, 0, 2};
static const uint8_t T2[] = {0, 0, 1, 0, 0, 1, 0, 0, 3};

static void same_point(const struct dpcodec_point *a, const struct dpcodec_point *b)
{
    assert_int_equal(a->ts_ms, b->ts_ms);
    assert_int_equal(a->type, b->type);
    assert_int_equal(a->ms, b->ms);
    assert_true(dpcodec_point_same_value(a, b));
}

static void put(struct head *h, const uint8_t *t, size_t tl, struct dpcodec_point p,
                enum head_result want)
{
    struct ct_err err = {0};
    enum head_result r = HEAD_NO_ROOM;
    assert_int_equal(head_append(h, t, tl, &p, &r, &err), CT_OK);
    assert_int_equal(r, want);
}

/* head_copy of [start_ms, end_ms] after 5 bytes already in the buffer, read back with
 * head_iter: exactly want[0..nw) (ms flags as the head keeps them, cell_ts_ms the hour's end),
 * the count head_copy reports, nothing appended for an empty window, the earlier bytes kept. */
static void copy_check(struct head *h, const uint8_t *tsuid, size_t tlen, int64_t start_ms,
                       int64_t end_ms, const struct dpcodec_point *want, size_t nw)
{
    struct ct_err err = {0};
    struct dpcodec_point p;
    size_t cap = 5, len = 5, np = 99;
    uint8_t *buf = malloc(cap);
    assert_non_null(buf);
    memset(buf, 0xAB, 5);
    assert_int_equal(head_copy(h, tsuid, tlen, start_ms, end_ms, &buf, &cap, &len, &np, &err),
                     CT_OK);
    assert_int_equal(np, nw);
    if (nw == 0)
        assert_int_equal(len, 5);
    assert_int_equal(buf[0], 0xAB);
    assert_int_equal(buf[4], 0xAB);
    struct head_iter it;
    head_iter_init(&it, buf + 5, len - 5, start_ms, end_ms);
    size_t got = 0;
    while (head_iter_next(&it, &p)) {
        assert_true(got < nw);
        struct dpcodec_point w = want[got];
        w.ms = w.ms || w.ts_ms % 1000 != 0;
        same_point(&p, &w);
        assert_int_equal(p.cell_ts_ms, (w.ts_ms / 3600000 + 1) * 3600000);
        got++;
    }
    assert_int_equal(got, nw);
    assert_false(head_iter_next(&it, &p)); /* stays at its end */
    free(buf);
}

/* The head's points of a series in [start_ms, end_ms] appended to *pts after the *n already
 * there (as a query reads them: head_copy, then head_iter). */
static int read_points(struct head *h, const uint8_t *tsuid, size_t tlen, int64_t start_ms,
                       int64_t end_ms, struct dpcodec_point **pts, size_t *cap, size_t *n,
                       struct ct_err *err)
{
    uint8_t *buf = NULL;
    size_t bcap = 0, len = 0, np = 0;
    int rc = head_copy(h, tsuid, tlen, start_ms, end_ms, &buf, &bcap, &len, &np, err);
    if (rc != CT_OK)
        return rc;
    if (*n + np > *cap) {
        *cap = *n + np;
        *pts = realloc(*pts, *cap * sizeof(**pts));
        assert_non_null(*pts);
    }
    struct head_iter it;
    head_iter_init(&it, buf, len, start_ms, end_ms);
    while (head_iter_next(&it, &(*pts)[*n]))
        (*n)++;
    free(buf);
    return CT_OK;
}

/* Appends n points to a fresh head and checks that they read back exactly, whole and through
 * windows cutting the stream. */
static void round_trip(const struct dpcodec_point *in, size_t n)
{
    struct head *h = NULL;
    struct ct_err err = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    for (size_t i = 0; i < n; i++)
        put(h, T1, sizeof(T1), in[i], HEAD_TAKEN);
    struct dpcodec_point *out = NULL;
    size_t cap = 0, got = 0;
    assert_int_equal(read_points(h, T1, sizeof(T1), 0, INT64_MAX, &out, &cap, &got, &err), CT_OK);
    assert_int_equal(got, n);
    for (size_t i = 0; i < n; i++) {
        struct dpcodec_point want = in[i];
        want.ms = want.ms || want.ts_ms % 1000 != 0;
        same_point(&out[i], &want);
    }
    if (n > 0) {
        copy_check(h, T1, sizeof(T1), in[n / 3].ts_ms, in[n - 1 - n / 3].ts_ms, in + n / 3,
                   n - 2 * (n / 3));
        copy_check(h, T1, sizeof(T1), in[n / 2].ts_ms + 1, INT64_MAX, in + n / 2 + 1,
                   n - n / 2 - 1);
        copy_check(h, T1, sizeof(T1), 0, in[0].ts_ms - 1, in, 0); /* before every point */
    }
    free(out);
    head_free(h);
}

static void test_head_round_trips_integer_limits(void **state)
{
    (void)state;
    const int64_t vals[] = {0,         1,         -1,  INT64_MAX, INT64_MIN, 0,
                            INT64_MIN, INT64_MAX, 127, -128,      1LL << 40, -(1LL << 40),
                            42,        42,        42,  INT32_MAX, INT32_MIN, 255};
    struct dpcodec_point p[sizeof(vals) / sizeof(vals[0])];
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
        p[i] = dpcodec_point_int(BASE_MS + (int64_t)i * 1000, false, vals[i]);
    round_trip(p, sizeof(vals) / sizeof(vals[0]));
}

static void test_head_round_trips_real_edges(void **state)
{
    (void)state;
    const double vals[] = {0.0,     -0.0,     1.0,      1.5,       DBL_MAX, -DBL_MAX,
                           DBL_MIN, 4.9e-324, -DBL_MIN, 0.1,       0.1,     1e300,
                           -1e-300, 3.0f,     INFINITY, 2.5,       -2.5,    FLT_MAX,
                           FLT_MIN, 1.0 / 3,  1.0 / 3,  123456.789};
    size_t n = sizeof(vals) / sizeof(vals[0]);
    struct dpcodec_point p[sizeof(vals) / sizeof(vals[0])];
    for (size_t i = 0; i < n; i++)
        p[i] = dpcodec_point_real(BASE_MS + 17 + (int64_t)i * 333, true, vals[i]);
    round_trip(p, n);
    /* a float-exact value stored as a DOUBLE keeps its type */
    p[0] = dpcodec_point_real(BASE_MS, false, 1.5);
    p[0].type = DPCODEC_DOUBLE;
    p[1] = dpcodec_point_real(BASE_MS + 1000, false, 1.5);
    round_trip(p, 2);
}

static void test_head_round_trips_mixed_kinds_and_times(void **state)
{
    (void)state;
    struct dpcodec_point p[] = {
        dpcodec_point_int(BASE_MS, false, 5),
        dpcodec_point_real(BASE_MS + 1000, false, 2.25),
        dpcodec_point_int(BASE_MS + 1001, true, 6),       /* ms point */
        dpcodec_point_int(BASE_MS + 2000, true, 7),       /* whole second, ms flag kept */
        dpcodec_point_int(BASE_MS + 3000, false, 7),      /* s flag again */
        dpcodec_point_real(BASE_MS + 3001, false, 1e100), /* ms by its time */
        dpcodec_point_int(BASE_MS + 3599999, true, -9),   /* last ms of the hour */
    };
    round_trip(p, sizeof(p) / sizeof(p[0]));
    /* the first and last instants of an hour, alone */
    struct dpcodec_point q[] = {dpcodec_point_int(BASE_MS, false, 1),
                                dpcodec_point_int(BASE_MS + 3599000, false, 2)};
    round_trip(q, 2);
}

static void test_head_round_trips_random_streams(void **state)
{
    (void)state;
    srand(7);
    enum {
        N = 20000
    };
    struct dpcodec_point *p = malloc(N * sizeof(*p));
    assert_non_null(p);
    for (int round = 0; round < 20; round++) {
        int64_t ts = BASE_MS + rand() % 1000;
        size_t n = 0;
        int64_t iv = rand();
        double dv = rand() / 7.0;
        while (n < N) {
            int gap = (round % 4 == 0) ? 1000 : (round % 4 == 1) ? 1 + rand() % 3 : rand() % 400;
            ts += gap ? gap : 1;
            if (ts >= BASE_MS + 3600000)
                break;
            int kind = rand() % 5;
            if (round % 2 == 0 || kind < 2) {
                iv =
                    (int64_t)((uint64_t)iv + (uint64_t)((rand() % 3 == 0) ? (int64_t)rand() * rand()
                                                                          : rand() % 10 - 5));
                p[n] = dpcodec_point_int(ts, rand() % 2 == 0, iv);
            } else {
                dv = (kind == 2) ? dv : (kind == 3) ? dv + 0.5 : rand() / 3.0;
                p[n] = dpcodec_point_real(ts, rand() % 2 == 0, dv);
            }
            n++;
        }
        round_trip(p, n);
    }
    free(p);
}

/* Out of order: refused, the head unchanged; a rewrite of a held timestamp: taken, replacing the
 * held point (the latest write wins, as the store's reads keep the newest cell). */
static void test_head_refuses_out_of_order_and_keeps_state(void **state)
{
    (void)state;
    struct head *h = NULL;
    struct ct_err err = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS + 10000, false, 1), HEAD_TAKEN);
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS + 20000, false, 2), HEAD_TAKEN);
    size_t b = head_bytes(h);
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS + 15000, false, 3), HEAD_OUT_OF_ORDER);
    assert_int_equal(head_bytes(h), b);
    /* rewrites: the last point, then the first one as a double, then back to an integer */
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS + 20000, false, 3), HEAD_TAKEN);
    put(h, T1, sizeof(T1), dpcodec_point_real(BASE_MS + 10000, false, 0.5), HEAD_TAKEN);
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS + 10000, false, 1), HEAD_TAKEN);
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS + 15000, false, 3), HEAD_OUT_OF_ORDER);
    size_t ns0, nc0;
    uint64_t np0;
    head_counts(h, &ns0, &nc0, &np0);
    assert_int_equal(np0, 2);
    /* another series and another hour are independent */
    put(h, T2, sizeof(T2), dpcodec_point_int(BASE_MS + 15000, false, 3), HEAD_TAKEN);
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS - 5000, false, 4), HEAD_TAKEN);
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS + 30000, false, 5), HEAD_TAKEN);
    assert_true(head_bytes(h) > b);
    struct dpcodec_point *out = NULL;
    size_t cap = 0, n = 0;
    assert_int_equal(read_points(h, T1, sizeof(T1), 0, INT64_MAX, &out, &cap, &n, &err), CT_OK);
    assert_int_equal(n, 4);
    int64_t want_ts[] = {BASE_MS - 5000, BASE_MS + 10000, BASE_MS + 20000, BASE_MS + 30000};
    int64_t want_v[] = {4, 1, 3, 5};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(out[i].ts_ms, want_ts[i]);
        assert_int_equal(out[i].i, want_v[i]);
    }
    /* range bounds are inclusive, and appending after points already in the buffer */
    n = 1;
    assert_int_equal(
        read_points(h, T1, sizeof(T1), BASE_MS + 10000, BASE_MS + 20000, &out, &cap, &n, &err),
        CT_OK);
    assert_int_equal(n, 3);
    assert_int_equal(out[0].ts_ms, BASE_MS - 5000); /* kept */
    assert_int_equal(out[1].ts_ms, BASE_MS + 10000);
    assert_int_equal(out[2].ts_ms, BASE_MS + 20000);
    /* unknown series: nothing */
    n = 0;
    assert_int_equal(read_points(h, T1, 3, 0, INT64_MAX, &out, &cap, &n, &err), CT_OK);
    assert_int_equal(n, 0);
    /* copies across the two hours (rewritten chunks included), one point of the first hour
     * alone, a window between points, the last two, an unknown series */
    struct dpcodec_point all[4];
    for (size_t i = 0; i < 4; i++)
        all[i] = dpcodec_point_int(want_ts[i], false, want_v[i]);
    copy_check(h, T1, sizeof(T1), 0, INT64_MAX, all, 4);
    copy_check(h, T1, sizeof(T1), BASE_MS - 5000, BASE_MS + 10000, all, 2);
    copy_check(h, T1, sizeof(T1), BASE_MS - 5000, BASE_MS - 5000, all, 1);
    copy_check(h, T1, sizeof(T1), BASE_MS + 10001, BASE_MS + 19999, all, 0);
    copy_check(h, T1, sizeof(T1), BASE_MS + 20000, INT64_MAX, all + 2, 2);
    copy_check(h, T1, 3, 0, INT64_MAX, all, 0);
    free(out);
    head_free(h);
}

static void test_head_refuses_a_fourth_hour(void **state)
{
    (void)state;
    struct head *h = NULL;
    struct ct_err err = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    for (int k = 0; k < HEAD_MAX_HOURS; k++)
        put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS + k * 3600000LL, false, k), HEAD_TAKEN);
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS + 3600000LL * HEAD_MAX_HOURS, false, 9),
        HEAD_NO_ROOM);
    size_t ns, nc;
    uint64_t np;
    head_counts(h, &ns, &nc, &np);
    assert_int_equal(ns, 1);
    assert_int_equal(nc, HEAD_MAX_HOURS);
    assert_int_equal(np, HEAD_MAX_HOURS);
    head_free(h);
}

static void test_head_rejects_bad_input(void **state)
{
    (void)state;
    struct head *h = NULL;
    struct ct_err err = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    uint8_t big[HEAD_MAX_TSUID + 1] = {0};
    enum head_result r;
    struct dpcodec_point p = dpcodec_point_int(BASE_MS, false, 1);
    assert_int_equal(head_append(h, big, 0, &p, &r, &err), CT_EINVAL);
    assert_int_equal(head_append(h, big, sizeof(big), &p, &r, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "TSUID"));
    p.ts_ms = -1;
    assert_int_equal(head_append(h, T1, sizeof(T1), &p, &r, &err), CT_EINVAL);
    p = dpcodec_point_int(BASE_MS, false, 1);
    p.type = (enum dpcodec_type)7;
    assert_int_equal(head_append(h, T1, sizeof(T1), &p, &r, &err), CT_EINVAL);
    size_t ns, nc;
    uint64_t np;
    head_counts(h, &ns, &nc, &np);
    assert_int_equal(np, 0);
    head_free(h);
}

/* ---- hand-off ---------------------------------------------------------------------------- */

struct sink {
    int fail_after; /* calls before failing; -1 never */
    int calls;
    size_t points;
    int64_t bases[16];
    /* the compressed cell of each hour, decoded, must equal what the head held */
    struct dpcodec_point *want;
    size_t nwant;
};

static int sink_fn(void *arg, const uint8_t *tsuid, size_t tlen, int64_t base_s,
                   bool replayed, const struct dpcodec_point *pts, size_t n, struct ct_err *err)
{
    (void)replayed;
    struct sink *s = arg;
    if (s->fail_after >= 0 && s->calls >= s->fail_after)
        return ct_err_set(err, CT_EIO, "sink refuses hour %lld", (long long)base_s);
    assert_true(tlen > 0);
    s->bases[s->calls++ % 16] = base_s;
    s->points += n;
    /* encode as the store would and decode the cell back */
    uint8_t q[DPCODEC_CQ_LEN];
    size_t vcap = dpcodec_compressed_bound(n), vlen = 0;
    uint8_t *v = malloc(vcap);
    assert_non_null(v);
    dpcodec_compressed_qualifier(pts, n, q);
    assert_int_equal(dpcodec_compressed_encode(base_s, pts, n, v, &vlen, err), CT_OK);
    struct wc_cell cell = {.qualifier = {q, sizeof(q)}, .value = {v, vlen}, .ts_ms = 1};
    struct dpcodec_point *back = calloc(n, sizeof(*back));
    size_t nb = 0;
    assert_int_equal(dpcodec_row_decode(base_s, &cell, 1, back, n, &nb, NULL, err), CT_OK);
    assert_int_equal(nb, n);
    for (size_t i = 0; i < n; i++) {
        assert_true(pts[i].ts_ms >= base_s * 1000 && pts[i].ts_ms < (base_s + 3600) * 1000);
        same_point(&back[i], &pts[i]);
    }
    if (s->want && tlen == sizeof(T1) && !memcmp(tsuid, T1, tlen)) { /* as read before */
        size_t m = 0;
        for (size_t i = 0; i < s->nwant; i++)
            if (s->want[i].ts_ms / 3600000 == base_s / 3600)
                same_point(&s->want[i], &pts[m++]);
        assert_int_equal(m, n);
    }
    free(back);
    free(v);
    return CT_OK;
}

static void test_head_hands_off_closed_hours(void **state)
{
    (void)state;
    struct head *h = NULL;
    struct ct_err err = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    size_t b0 = head_bytes(h);
    /* two hours of a series, one hour of another */
    for (int i = 0; i < 7200; i += 7)
        put(h, T1, sizeof(T1), dpcodec_point_real(BASE_MS + i * 1000LL, false, i * 0.25),
            HEAD_TAKEN);
    for (int i = 0; i < 3600; i += 10)
        put(h, T2, sizeof(T2), dpcodec_point_int(BASE_MS + i * 1000LL + 5, true, i * 3),
            HEAD_TAKEN);
    assert_int_equal(head_oldest_hour_s(h), BASE);
    struct dpcodec_point *all = NULL;
    size_t cap = 0, n = 0;
    assert_int_equal(read_points(h, T1, sizeof(T1), 0, INT64_MAX, &all, &cap, &n, &err), CT_OK);
    size_t n1 = n;

    /* a failing sink keeps everything and does not raise the mark */
    struct sink s = {.fail_after = 0};
    size_t nh = 99;
    assert_int_equal(head_close_hours(h, BASE + 3600, sink_fn, &s, &nh, &err), CT_EIO);
    assert_int_equal(nh, 0);
    assert_int_equal(head_closed_before_s(h), INT64_MIN);
    size_t ns, nc;
    uint64_t np;
    head_counts(h, &ns, &nc, &np);
    assert_int_equal(nc, 3);

    /* close the first hour: both series hand it off, the second hour of T1 stays */
    s = (struct sink){.fail_after = -1, .want = all, .nwant = n1};
    assert_int_equal(head_close_hours(h, BASE + 3600, sink_fn, &s, &nh, &err), CT_OK);
    assert_int_equal(nh, 2);
    assert_int_equal(s.calls, 2);
    assert_int_equal(s.bases[0], BASE);
    assert_int_equal(s.bases[1], BASE);
    assert_int_equal(head_closed_before_s(h), BASE + 3600);
    head_counts(h, &ns, &nc, &np);
    assert_int_equal(ns, 1);
    assert_int_equal(nc, 1);
    assert_int_equal(head_oldest_hour_s(h), BASE + 3600);
    /* a point of the closed hour is late now; the open hour still takes points */
    put(h, T2, sizeof(T2), dpcodec_point_int(BASE_MS + 3599000, false, 1), HEAD_LATE);
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS + 7199000, false, 1), HEAD_TAKEN);

    /* close the rest: the head returns to its empty size (plus its minimal table) */
    s = (struct sink){.fail_after = -1};
    assert_int_equal(head_close_hours(h, BASE + 7200, sink_fn, &s, &nh, &err), CT_OK);
    assert_int_equal(nh, 1);
    head_counts(h, &ns, &nc, &np);
    assert_int_equal(ns + nc + np, 0);
    assert_int_equal(head_oldest_hour_s(h), INT64_MAX);
    size_t b_empty = head_bytes(h);
    assert_true(b_empty >= b0 && b_empty <= b0 + 64 * (sizeof(void *) + sizeof(uint64_t)));
    /* the mark never goes down */
    head_set_closed_before(h, BASE);
    assert_int_equal(head_closed_before_s(h), BASE + 7200);
    free(all);
    head_free(h);
}

static void test_head_compresses_and_counts_bytes(void **state)
{
    (void)state;
    struct head *h = NULL;
    struct ct_err err = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    size_t b0 = head_bytes(h), prev = b0;
    /* a regular series of a slowly moving integer: a few bits a point */
    for (int i = 0; i < 3600; i++) {
        put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS + i * 1000LL, false, 1000 + i % 3),
            HEAD_TAKEN);
        size_t b = head_bytes(h);
        assert_true(b >= prev);
        prev = b;
    }
    size_t used = head_bytes(h) - b0;
    assert_true(used < 3600 * 2); /* < 2 bytes a point, all included */
    /* a thousand series of one point each: each costs its record and its first buffer */
    size_t before = head_bytes(h);
    for (int k = 0; k < 1000; k++) {
        uint8_t t[9] = {0, 0, 9, 0, 0, 1, 0, (uint8_t)(k >> 8), (uint8_t)k};
        put(h, t, sizeof(t), dpcodec_point_int(BASE_MS, false, k), HEAD_TAKEN);
    }
    size_t per = (head_bytes(h) - before) / 1000;
    assert_true(per > 32 && per < 1024);
    struct sink s = {.fail_after = -1};
    size_t nh = 0;
    assert_int_equal(head_close_hours(h, BASE + 3600, sink_fn, &s, &nh, &err), CT_OK);
    assert_int_equal(nh, 1001);
    assert_int_equal(s.points, 4600);
    assert_true(head_bytes(h) <= b0 + 64 * (sizeof(void *) + sizeof(uint64_t)));
    head_free(h);
}

/* ---- threads ------------------------------------------------------------------------------ */

struct thr {
    struct head *h;
    int id;
};

/* Each thread writes its own series in order, and all race on one shared series. */
static void *thr_main(void *arg)
{
    struct thr *t = arg;
    struct ct_err err = {0};
    uint8_t mine[9] = {0, 0, 5, 0, 0, 1, 0, 0, (uint8_t)t->id};
    for (int i = 0; i < 3000; i++) {
        enum head_result r;
        struct dpcodec_point p = dpcodec_point_int(BASE_MS + i * 1000LL, false, t->id * 100000 + i);
        if (head_append(t->h, mine, sizeof(mine), &p, &r, &err) != CT_OK || r != HEAD_TAKEN)
            return "own series refused";
        p = dpcodec_point_int(BASE_MS + i * 1000LL + t->id, true, i);
        if (head_append(t->h, T2, sizeof(T2), &p, &r, &err) != CT_OK)
            return "shared series failed";
    }
    return NULL;
}

static void test_head_takes_appends_from_many_threads(void **state)
{
    (void)state;
    struct head *h = NULL;
    struct ct_err err = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    pthread_t th[4];
    struct thr a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (struct thr){h, i + 1};
        assert_int_equal(pthread_create(&th[i], NULL, thr_main, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        void *ret = NULL;
        assert_int_equal(pthread_join(th[i], &ret), 0);
        assert_null(ret);
    }
    for (int i = 0; i < 4; i++) {
        uint8_t mine[9] = {0, 0, 5, 0, 0, 1, 0, 0, (uint8_t)(i + 1)};
        struct dpcodec_point *out = NULL;
        size_t cap = 0, n = 0;
        assert_int_equal(read_points(h, mine, sizeof(mine), 0, INT64_MAX, &out, &cap, &n, &err),
                         CT_OK);
        assert_int_equal(n, 3000);
        for (size_t k = 0; k < n; k++)
            assert_int_equal(out[k].i, (i + 1) * 100000 + (int64_t)k);
        free(out);
    }
    /* the shared series: strictly increasing, whatever interleaving won */
    struct dpcodec_point *out = NULL;
    size_t cap = 0, n = 0;
    assert_int_equal(read_points(h, T2, sizeof(T2), 0, INT64_MAX, &out, &cap, &n, &err), CT_OK);
    assert_true(n >= 3000 && n <= 12000);
    for (size_t k = 1; k < n; k++)
        assert_true(out[k].ts_ms > out[k - 1].ts_ms);
    free(out);
    head_free(h);
}

/* head_each_series lists exactly the series of a TSUID prefix holding a chunk in the range
 * (through 600 series, so the table grows and is rehashed); head_last gives each one's newest
 * point, with its type, only when it is not older than min_ms. */
struct listed {
    int n;
    bool seen[600];
};

static int list_fn(void *arg, const uint8_t *ts, size_t tl)
{
    struct listed *l = arg;
    assert_int_equal(tl, 9);
    int k = ts[5] << 8 | ts[6];
    assert_false(l->seen[k]);
    l->seen[k] = true;
    l->n++;
    return CT_OK;
}

static void test_head_lists_a_metrics_series_and_their_last_points(void **state)
{
    (void)state;
    struct head *h = NULL;
    struct ct_err err = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    struct listed l = {0};
    uint8_t m1[3] = {0, 0, 1};
    assert_int_equal(head_each_series(h, m1, 3, 0, INT64_MAX, list_fn, &l), CT_OK);
    assert_int_equal(l.n, 0);
    for (int k = 0; k < 600; k++) {
        /* metric 1 or 2 (k % 2); even k of metric 1 in hour 0, the rest in hour 1 */
        uint8_t ts[9] = {0, 0, (uint8_t)(1 + k % 2), 0, 0, (uint8_t)(k >> 8), (uint8_t)k, 0, 1};
        int64_t hour = (k % 4 == 0) ? 0 : 3600;
        for (int i = 0; i < 3; i++) {
            struct dpcodec_point p = k % 3 ? dpcodec_point_int((BASE + hour + i) * 1000, false, k + i)
                                           : dpcodec_point_real((BASE + hour + i) * 1000, false,
                                                                k + i + 0.5);
            enum head_result res;
            assert_int_equal(head_append(h, ts, 9, &p, &res, &err), CT_OK);
            assert_int_equal(res, HEAD_TAKEN);
        }
    }
    memset(&l, 0, sizeof(l));
    assert_int_equal(head_each_series(h, m1, 3, 0, INT64_MAX, list_fn, &l), CT_OK);
    assert_int_equal(l.n, 300);
    for (int k = 0; k < 600; k++)
        assert_int_equal(l.seen[k], k % 2 == 0);
    /* only hour 0: metric 1's series with k % 4 == 0 */
    memset(&l, 0, sizeof(l));
    assert_int_equal(head_each_series(h, m1, 3, BASE_MS, BASE_MS + 3599999, list_fn, &l), CT_OK);
    assert_int_equal(l.n, 150);
    for (int k = 0; k < 600; k++)
        assert_int_equal(l.seen[k], k % 4 == 0);
    /* a range after every chunk, and before */
    memset(&l, 0, sizeof(l));
    assert_int_equal(head_each_series(h, m1, 3, BASE_MS + 7200000, INT64_MAX, list_fn, &l), CT_OK);
    assert_int_equal(head_each_series(h, m1, 3, 0, BASE_MS - 1, list_fn, &l), CT_OK);
    assert_int_equal(l.n, 0);
    /* a longer prefix: metric 1 and the first tag pair's key */
    uint8_t m1k[6] = {0, 0, 1, 0, 0, 1};
    memset(&l, 0, sizeof(l));
    assert_int_equal(head_each_series(h, m1k, 6, 0, INT64_MAX, list_fn, &l), CT_OK);
    assert_int_equal(l.n, 128); /* k in 256..511, even */
    /* last points */
    for (int k = 0; k < 600; k++) {
        uint8_t ts[9] = {0, 0, (uint8_t)(1 + k % 2), 0, 0, (uint8_t)(k >> 8), (uint8_t)k, 0, 1};
        int64_t hour = (k % 4 == 0) ? 0 : 3600;
        struct dpcodec_point p;
        assert_int_equal(head_last(h, ts, 9, INT64_MIN, &p), CT_OK);
        assert_int_equal(p.ts_ms, (BASE + hour + 2) * 1000);
        if (k % 3) {
            assert_int_equal(p.type, DPCODEC_INT);
            assert_int_equal(p.i, k + 2);
        } else {
            assert_true(p.type != DPCODEC_INT);
            assert_true(p.f == k + 2.5);
        }
        assert_int_equal(head_last(h, ts, 9, (BASE + hour + 3) * 1000, &p), CT_NOTFOUND);
    }
    uint8_t none[9] = {0, 0, 9, 0, 0, 0, 0, 0, 1};
    struct dpcodec_point p;
    assert_int_equal(head_last(h, none, 9, INT64_MIN, &p), CT_NOTFOUND);
    head_free(h);
}

/* ---- backfill ------------------------------------------------------------------------------ */

#define CLOSED (BASE + 10 * 3600) /* the closed mark of the backfill tests: hours 0..9 closed */

static int count_fn(void *arg, const uint8_t *ts, size_t tl)
{
    (void)ts;
    (void)tl;
    (*(int *)arg)++;
    return CT_OK;
}

/* Two series, hours 0..4 (all closed), 60 points an hour, streamed in time order with both
 * series per timestamp, as a backfill comes: every point is taken, a series' oldest chunk goes
 * (one call of the room function, the hour's points exactly) when it needs a fourth hour,
 * points of an hour it handed off are late, out-of-order points inside a closed hour are
 * refused, reads, listing and the last point see the backfill chunks, an idle pass hands off only
 * chunks not appended to since the cut-off, and the head returns to its empty size. */
static void test_head_backfill_takes_closed_hours(void **state)
{
    (void)state;
    struct head *h = NULL;
    struct ct_err err = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    size_t b0 = head_bytes(h);
    head_set_closed_before(h, CLOSED);
    /* off (the default): a closed hour is late */
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS, false, 1), HEAD_LATE);
    struct sink room = {.fail_after = -1};
    head_set_backfill(h, true, 0, sink_fn, &room);
    for (int m = 0; m < 5 * 60; m++) {
        int64_t ts = BASE_MS + m * 60000LL;
        put(h, T1, sizeof(T1), dpcodec_point_int(ts, false, m), HEAD_TAKEN);
        put(h, T2, sizeof(T2), dpcodec_point_real(ts, false, m * 0.5), HEAD_TAKEN);
    }
    /* hours 0 and 1 of both went for room, oldest first */
    assert_int_equal(room.calls, 4);
    assert_int_equal(room.points, 4 * 60);
    assert_int_equal(room.bases[0], BASE);
    assert_int_equal(room.bases[1], BASE);
    assert_int_equal(room.bases[2], BASE + 3600);
    assert_int_equal(room.bases[3], BASE + 3600);
    size_t ns, nc;
    uint64_t np;
    head_counts(h, &ns, &nc, &np);
    assert_int_equal(ns, 2);
    assert_int_equal(nc, 6);
    assert_int_equal(np, 6 * 60);
    assert_int_equal(head_oldest_hour_s(h), BASE + 2 * 3600);
    assert_int_equal(head_closed_before_s(h), CLOSED);
    /* already handed off by this series: late; inside a held closed hour, out of order */
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS + 30 * 1000, false, 7), HEAD_LATE);
    put(h, T2, sizeof(T2), dpcodec_point_int(BASE_MS + 3600000 + 5000, false, 7), HEAD_LATE);
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS + 4 * 3600000 + 1000, false, 7),
        HEAD_OUT_OF_ORDER);
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS + 5 * 3600000 - 60000, false, 7),
        HEAD_TAKEN); /* the last point's own time: a rewrite */
    /* the points read back are hours 2..4, exactly */
    struct dpcodec_point *out = NULL;
    size_t cap = 0, n = 0;
    assert_int_equal(read_points(h, T1, sizeof(T1), 0, INT64_MAX, &out, &cap, &n, &err), CT_OK);
    assert_int_equal(n, 3 * 60);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(out[i].ts_ms, BASE_MS + (int64_t)(120 + i) * 60000);
        assert_int_equal(out[i].i, i + 1 == n ? 7 : 120 + (int64_t)i); /* the last: rewritten */
    }
    /* listing by the window's hours finds them (old hours: not cut by the closed mark) */
    int listed = 0;
    uint8_t m1[3] = {0, 0, 1};
    assert_int_equal(head_each_series(h, m1, 3, BASE_MS + 2 * 3600000, BASE_MS + 3 * 3600000 - 1,
                                      count_fn, &listed),
                     CT_OK);
    assert_int_equal(listed, 2);
    listed = 0;
    assert_int_equal(
        head_each_series(h, m1, 3, BASE_MS, BASE_MS + 2 * 3600000 - 1, count_fn, &listed), CT_OK);
    assert_int_equal(listed, 0);
    struct dpcodec_point last;
    assert_int_equal(head_last(h, T1, sizeof(T1), INT64_MIN, &last), CT_OK);
    assert_int_equal(last.ts_ms, BASE_MS + 299 * 60000LL);
    /* idle: T1's hour 4 grows at clock 1000, the rest was last appended at clock 0 */
    head_set_clock_ms(h, 1000);
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS + 5 * 3600000 - 1000, false, 9), HEAD_TAKEN);
    struct sink s = {.fail_after = -1};
    size_t nh = 0;
    /* a cut-off before every touch hands off nothing */
    assert_int_equal(head_close_hours_idle(h, CLOSED, 0, sink_fn, &s, &nh, &err), CT_OK);
    assert_int_equal(nh, 0);
    assert_int_equal(head_close_hours_idle(h, CLOSED, 500, sink_fn, &s, &nh, &err), CT_OK);
    assert_int_equal(nh, 5);
    head_counts(h, &ns, &nc, &np);
    assert_int_equal(ns, 1);
    assert_int_equal(nc, 1);
    assert_int_equal(np, 61);
    /* T1 still holds hour 4: its handed-off hours 2 and 3 are late */
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS + 3 * 3600000 + 1000, false, 7), HEAD_LATE);
    /* every closed chunk (a clean stop) */
    assert_int_equal(head_close_hours_idle(h, CLOSED, INT64_MAX, sink_fn, &s, &nh, &err), CT_OK);
    assert_int_equal(nh, 1);
    assert_int_equal(s.points, 3 * 60 + 2 * 60 + 61);
    head_counts(h, &ns, &nc, &np);
    assert_int_equal(ns + nc + np, 0);
    assert_true(head_bytes(h) >= b0 &&
                head_bytes(h) <= b0 + 64 * (sizeof(void *) + sizeof(uint64_t)));
    free(out);
    head_free(h);
}

/* A live chunk (opened while its hour was open) goes when its hour closes, idle or not; a
 * backfill chunk of the same closed hour stays until idle. A failing room function keeps the
 * oldest chunk and refuses the point (no room). */
static void test_head_backfill_live_close_and_failed_room(void **state)
{
    (void)state;
    struct head *h = NULL;
    struct ct_err err = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    head_set_closed_before(h, BASE);
    struct sink room = {.fail_after = 0}; /* refuses every call */
    head_set_backfill(h, true, 0, sink_fn, &room);
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS + 1000, false, 1), HEAD_TAKEN); /* live */
    put(h, T2, sizeof(T2), dpcodec_point_int(BASE_MS - 3600000, false, 1), HEAD_TAKEN); /* old */
    put(h, T2, sizeof(T2), dpcodec_point_int(BASE_MS - 2 * 3600000, false, 1), HEAD_TAKEN);
    put(h, T2, sizeof(T2), dpcodec_point_int(BASE_MS - 3 * 3600000, false, 1), HEAD_TAKEN);
    /* T2 is full: a newer closed hour needs room, the room function fails: kept, refused */
    put(h, T2, sizeof(T2), dpcodec_point_int(BASE_MS - 1000, false, 1), HEAD_TAKEN);
    put(h, T2, sizeof(T2), dpcodec_point_int(BASE_MS - 2000, false, 1), HEAD_OUT_OF_ORDER);
    put(h, T2, sizeof(T2), dpcodec_point_int(BASE_MS + 1000, false, 1), HEAD_NO_ROOM);
    assert_int_equal(room.calls, 0);
    /* a point older than every chunk of a full series: no room, nothing handed off */
    put(h, T2, sizeof(T2), dpcodec_point_int(BASE_MS - 4 * 3600000, false, 1), HEAD_NO_ROOM);
    size_t ns, nc;
    uint64_t np;
    head_counts(h, &ns, &nc, &np);
    assert_int_equal(nc, 4);
    /* the hour BASE closes: T1's live chunk goes, T2's backfill chunks (not idle) stay */
    struct sink s = {.fail_after = -1};
    size_t nh = 0;
    assert_int_equal(head_close_hours_idle(h, BASE + 3600, INT64_MIN, sink_fn, &s, &nh, &err),
                     CT_OK);
    assert_int_equal(nh, 1);
    assert_int_equal(s.bases[0], BASE);
    head_counts(h, &ns, &nc, &np);
    assert_int_equal(nc, 3);
    assert_int_equal(head_oldest_hour_s(h), BASE - 3 * 3600);
    head_free(h);
}

/* Under its backfill share the head opens no new backfill chunk (late), but the chunks it holds
 * keep growing and open hours are taken as ever. */
/* The background hand-off (head_handoff_moved): a backfill in time order, drained after each
 * hour, hands off each series' previous hour (oldest first, the hour's points exactly) and never
 * needs room inside an append; each series keeps its newest hour; a handed-off hour is late; a
 * failing sink keeps the chunk, which takes points again; the head returns to its empty size. */
static void test_head_moved_hands_off_older_hours(void **state)
{
    (void)state;
    struct head *h = NULL;
    struct ct_err err = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    size_t b0 = head_bytes(h);
    head_set_closed_before(h, CLOSED);
    struct sink room = {.fail_after = -1}, mv = {.fail_after = -1};
    head_set_backfill(h, true, 0, sink_fn, &room);
    size_t ns, nc, nh;
    uint64_t np;
    for (int hr = 0; hr < 5; hr++) {
        for (int m = 0; m < 60; m++) {
            int64_t ts = BASE_MS + (hr * 60 + m) * 60000LL;
            put(h, T1, sizeof(T1), dpcodec_point_int(ts, false, m), HEAD_TAKEN);
            put(h, T2, sizeof(T2), dpcodec_point_real(ts, false, m * 0.5), HEAD_TAKEN);
        }
        assert_int_equal(head_moved_pending(h), hr > 0);
        assert_int_equal(head_handoff_moved(h, sink_fn, &mv, &nh, &err), CT_OK);
        assert_int_equal(nh, hr > 0 ? 2 : 0);
        assert_false(head_moved_pending(h));
        head_counts(h, &ns, &nc, &np);
        assert_int_equal(nc, 2);
        assert_int_equal(np, 2 * 60);
        assert_int_equal(head_oldest_hour_s(h), BASE + hr * 3600);
    }
    assert_int_equal(room.calls, 0);
    assert_int_equal(mv.calls, 8);
    assert_int_equal(mv.points, 8 * 60);
    for (int i = 0; i < 8; i++)
        assert_int_equal(mv.bases[i], BASE + (i / 2) * 3600);
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS + 3 * 3600000 + 1000, false, 7), HEAD_LATE);
    /* T1 opens hour 5 and is ready again; a failing sink keeps its hour 4 */
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS + 5 * 3600000, false, 1), HEAD_TAKEN);
    assert_true(head_moved_pending(h));
    struct sink bad = {.fail_after = 0};
    assert_int_equal(head_handoff_moved(h, sink_fn, &bad, &nh, &err), CT_EIO);
    assert_int_equal(nh, 0);
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS + 5 * 3600000 - 1000, false, 2), HEAD_TAKEN);
    struct dpcodec_point *out = NULL;
    size_t cap = 0, n = 0;
    assert_int_equal(read_points(h, T1, sizeof(T1), 0, INT64_MAX, &out, &cap, &n, &err), CT_OK);
    assert_int_equal(n, 62);
    assert_int_equal(out[60].i, 2);
    free(out);
    struct sink all = {.fail_after = -1};
    assert_int_equal(head_close_hours_idle(h, CLOSED, INT64_MAX, sink_fn, &all, &nh, &err), CT_OK);
    assert_int_equal(nh, 3);
    head_counts(h, &ns, &nc, &np);
    assert_int_equal(ns + nc + np, 0);
    assert_true(head_bytes(h) >= b0 &&
                head_bytes(h) <= b0 + 64 * (sizeof(void *) + sizeof(uint64_t)));
    head_free(h);
}

/* A chunk being handed off without the lock: readable, appends of other series go on, and an
 * append to its hour waits until the hour is in the store, then is late. */
struct seal_probe {
    struct head *h;
    int calls;
    pthread_t th;
    _Atomic int appended;
    enum head_result res;
};

static void *seal_probe_append(void *arg)
{
    struct seal_probe *p = arg;
    struct ct_err err = {0};
    struct dpcodec_point pt = dpcodec_point_int(BASE_MS + 59 * 60000 + 30000, false, 5);
    assert_int_equal(head_append(p->h, T1, sizeof(T1), &pt, &p->res, &err), CT_OK);
    atomic_store(&p->appended, 1);
    return NULL;
}

static int seal_probe_fn(void *arg, const uint8_t *tsuid, size_t tlen, int64_t base_s,
                         bool replayed, const struct dpcodec_point *pts, size_t n,
                         struct ct_err *err)
{
    (void)replayed;
    (void)pts;
    struct seal_probe *p = arg;
    assert_int_equal(p->calls++, 0);
    assert_memory_equal(tsuid, T1, tlen);
    assert_int_equal(base_s, BASE);
    assert_int_equal(n, 60);
    struct dpcodec_point *out = NULL;
    size_t cap = 0, got = 0;
    assert_int_equal(read_points(p->h, T1, sizeof(T1), BASE_MS, BASE_MS + 3599999, &out, &cap,
                                 &got, err),
                     CT_OK);
    assert_int_equal(got, 60);
    free(out);
    put(p->h, T2, sizeof(T2), dpcodec_point_int(BASE_MS, false, 1), HEAD_TAKEN);
    assert_int_equal(pthread_create(&p->th, NULL, seal_probe_append, p), 0);
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
    assert_int_equal(atomic_load(&p->appended), 0); /* waits for the hand-off */
    return CT_OK;
}

static void test_head_sealed_chunk_is_read_and_waited_for(void **state)
{
    (void)state;
    struct head *h = NULL;
    struct ct_err err = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    head_set_closed_before(h, CLOSED);
    struct sink room = {.fail_after = -1};
    head_set_backfill(h, true, 0, sink_fn, &room);
    for (int m = 0; m < 120; m++)
        put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS + m * 60000LL, false, m), HEAD_TAKEN);
    struct seal_probe p = {.h = h};
    size_t nh = 0;
    assert_int_equal(head_handoff_moved(h, seal_probe_fn, &p, &nh, &err), CT_OK);
    assert_int_equal(nh, 1);
    pthread_join(p.th, NULL);
    assert_int_equal(atomic_load(&p.appended), 1);
    assert_int_equal(p.res, HEAD_LATE);
    assert_int_equal(room.calls, 0);
    head_free(h);
}

/* head_close_hours_idle in steps over more series than one step takes, while its sink opens
 * chunks of the closing hour for new series (the table grows and is rebuilt meanwhile): every
 * chunk of the hour goes, those opened during the pass included, and the head ends empty. */
struct step_probe {
    struct head *h;
    size_t calls, points, added;
};

static void step_tsuid(uint8_t t[9], unsigned x)
{
    uint8_t b[9] = {0, 0, 1, 0, 0, 1, (uint8_t)(x >> 16), (uint8_t)(x >> 8), (uint8_t)x};
    memcpy(t, b, 9);
}

static int step_probe_fn(void *arg, const uint8_t *tsuid, size_t tlen, int64_t base_s,
                         bool replayed, const struct dpcodec_point *pts, size_t n,
                         struct ct_err *err)
{
    (void)tsuid;
    (void)tlen;
    (void)replayed;
    (void)pts;
    (void)err;
    struct step_probe *p = arg;
    assert_int_equal(base_s, BASE);
    p->calls++;
    p->points += n;
    if (p->added < 60) {
        uint8_t t[9];
        step_tsuid(t, 100000 + (unsigned)p->added++);
        put(p->h, t, sizeof(t), dpcodec_point_int(BASE_MS + 1000, false, 1), HEAD_TAKEN);
    }
    return CT_OK;
}

static void close_in_steps(unsigned nseries)
{
    struct head *h = NULL;
    struct ct_err err = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    size_t b0 = head_bytes(h);
    for (unsigned x = 0; x < nseries; x++) {
        uint8_t t[9];
        step_tsuid(t, x);
        for (int m = 0; m < 3; m++)
            put(h, t, sizeof(t), dpcodec_point_int(BASE_MS + m * 60000LL, false, m), HEAD_TAKEN);
    }
    struct step_probe p = {.h = h};
    size_t nh = 0;
    assert_int_equal(head_close_hours(h, BASE + 3600, step_probe_fn, &p, &nh, &err), CT_OK);
    assert_int_equal(p.added, 60);
    assert_int_equal(nh, nseries + 60);
    assert_int_equal(p.calls, nseries + 60);
    assert_int_equal(p.points, 3 * nseries + 60);
    size_t ns, nc;
    uint64_t np;
    head_counts(h, &ns, &nc, &np);
    assert_int_equal(ns + nc + np, 0);
    assert_int_equal(head_closed_before_s(h), BASE + 3600);
    assert_true(head_bytes(h) >= b0 &&
                head_bytes(h) <= b0 + 64 * (sizeof(void *) + sizeof(uint64_t)));
    head_free(h);
}

/* 600 series: the table keeps its slots (new series land before and after the walk); 1000:
 * the 25th new series rebuilds the table in the middle of the pass */
static void test_head_close_in_steps_takes_chunks_opened_meanwhile(void **state)
{
    (void)state;
    close_in_steps(600);
    close_in_steps(1000);
}

static void test_head_backfill_share(void **state)
{
    (void)state;
    struct head *h = NULL;
    struct ct_err err = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    head_set_closed_before(h, CLOSED);
    put(h, T1, sizeof(T1), dpcodec_point_int(CLOSED * 1000, false, 1), HEAD_TAKEN);
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS, false, 1), HEAD_LATE); /* off */
    size_t b = head_bytes(h);
    head_set_backfill(h, true, b + 40, NULL, NULL);
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS, false, 1), HEAD_TAKEN); /* +32 bytes */
    assert_true(head_bytes(h) < b + 40);
    put(h, T2, sizeof(T2), dpcodec_point_int(BASE_MS, false, 1), HEAD_TAKEN); /* a new series */
    assert_true(head_bytes(h) >= b + 40);
    uint8_t t3[9] = {0, 0, 1, 0, 0, 1, 0, 0, 4};
    put(h, t3, sizeof(t3), dpcodec_point_int(BASE_MS, false, 1), HEAD_LATE);
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS - 3600000, false, 1), HEAD_LATE);
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS + 1000, false, 2), HEAD_TAKEN);
    put(h, t3, sizeof(t3), dpcodec_point_int(CLOSED * 1000, false, 1), HEAD_TAKEN);
    head_free(h);
}

/* ---- batch append -------------------------------------------------------------------------- */

/* A deterministic generator (the test must not depend on rand()'s sequence). */
static uint64_t next_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

#define BATCH_SERIES 300
#define BATCH_N      (2 * HEAD_BATCH_LOCK_POINTS + 123) /* three lock holds */

/* One batch through head_append_batch and the same points one by one through head_append give
 * the same result for every point and the same head: mixed series (runs of one series, so the
 * series hint is reused, and 300 series, so the table is rehashed mid-batch), late points of a
 * handed-off hour, out-of-order and repeated timestamps, a fourth hour (no room), integers and
 * doubles, s and ms. */
static void test_head_batch_equals_point_appends(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct head *a = NULL, *b = NULL;
    assert_int_equal(head_new(&a, &err), CT_OK);
    assert_int_equal(head_new(&b, &err), CT_OK);
    head_set_closed_before(a, BASE); /* the hour before BASE is handed off: its points are late */
    head_set_closed_before(b, BASE);
    static uint8_t ts[BATCH_SERIES][12];
    for (int s = 0; s < BATCH_SERIES; s++) {
        memcpy(ts[s], T1, sizeof(T1));
        ts[s][8] = (uint8_t)s;
        ts[s][9] = (uint8_t)(s >> 8);
    }
    struct head_point *pts = calloc(BATCH_N, sizeof(*pts));
    enum head_result *ra = calloc(BATCH_N, sizeof(*ra)), *rb = calloc(BATCH_N, sizeof(*rb));
    assert_non_null(pts);
    assert_non_null(ra);
    assert_non_null(rb);
    uint64_t x = 88172645463325252ULL;
    int64_t next_ms[BATCH_SERIES] = {0};
    size_t i = 0;
    while (i < BATCH_N) {
        int s = (int)(next_rand(&x) % BATCH_SERIES);
        size_t run = 1 + next_rand(&x) % 5; /* consecutive points of one series */
        for (size_t k = 0; k < run && i < BATCH_N; k++, i++) {
            uint64_t r = next_rand(&x);
            int64_t hour = (int64_t)(r % 100 < 5 ? -1 : r % 100 < 8 ? 3 : (int64_t)(r % 3));
            int64_t ts_ms = (BASE + hour * 3600) * 1000 +
                            (next_ms[s] += 1 + (int64_t)(r >> 40) % 1500) % 3600000;
            if (r % 100 == 50 && i > 0 && pts[i - 1].tsuid == ts[s])
                ts_ms = pts[i - 1].p.ts_ms; /* a repeated timestamp (a rewrite) */
            if (r % 100 == 51 && i > 0 && pts[i - 1].tsuid == ts[s])
                ts_ms = pts[i - 1].p.ts_ms - 1; /* out of order */
            pts[i].tsuid = ts[s];
            pts[i].tlen = s % 2 ? 12 : 10;
            pts[i].p = (r >> 20) % 2 ? dpcodec_point_int(ts_ms, (r >> 21) % 2, (int64_t)(r >> 8))
                                     : dpcodec_point_real(ts_ms, false, (double)(r % 1000) / 8);
        }
    }
    for (i = 0; i < BATCH_N; i++)
        assert_int_equal(head_append(a, pts[i].tsuid, pts[i].tlen, &pts[i].p, &ra[i], &err), CT_OK);
    size_t done = 0;
    assert_int_equal(head_append_batch(b, pts, BATCH_N, NULL, rb, &done, &err), CT_OK);
    assert_int_equal(done, BATCH_N);
    size_t seen[4] = {0};
    for (i = 0; i < BATCH_N; i++) {
        assert_int_equal(rb[i], ra[i]);
        seen[ra[i]]++;
    }
    /* every kind of result happened */
    assert_true(seen[HEAD_TAKEN] > BATCH_N / 2);
    assert_true(seen[HEAD_LATE] > 0);
    assert_true(seen[HEAD_OUT_OF_ORDER] > 0);
    assert_true(seen[HEAD_NO_ROOM] > 0);
    size_t nsa, nca, nsb, ncb;
    uint64_t npa, npb;
    head_counts(a, &nsa, &nca, &npa);
    head_counts(b, &nsb, &ncb, &npb);
    assert_int_equal(nsa, nsb);
    assert_int_equal(nca, ncb);
    assert_int_equal(npa, npb);
    assert_true(npa <= seen[HEAD_TAKEN] && npa + 60 > seen[HEAD_TAKEN]); /* rewrites add none */
    assert_int_equal(head_bytes(a), head_bytes(b));
    for (int s = 0; s < BATCH_SERIES; s++) {
        size_t tl = s % 2 ? 12 : 10;
        struct dpcodec_point *pa = NULL, *pb = NULL;
        size_t capa = 0, capb = 0, na = 0, nb = 0;
        assert_int_equal(read_points(a, ts[s], tl, 0, INT64_MAX, &pa, &capa, &na, &err), CT_OK);
        assert_int_equal(read_points(b, ts[s], tl, 0, INT64_MAX, &pb, &capb, &nb, &err), CT_OK);
        assert_int_equal(na, nb);
        for (size_t k = 0; k < na; k++)
            same_point(&pa[k], &pb[k]);
        free(pa);
        free(pb);
    }
    free(pts);
    free(ra);
    free(rb);
    head_free(a);
    head_free(b);
}

/* A batch with one bad point (bad TSUID length, type or time) is refused whole, naming the point,
 * and leaves the head as it was; the same batch without it goes in. */
static void test_head_batch_with_a_bad_point(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct head *h = NULL;
    assert_int_equal(head_new(&h, &err), CT_OK);
    struct head_point pts[10];
    enum head_result res[10];
    for (int i = 0; i < 10; i++)
        pts[i] = (struct head_point){i % 2 ? T1 : T2, sizeof(T1),
                                     dpcodec_point_int(BASE_MS + i * 1000, false, i)};
    size_t bytes0 = head_bytes(h);
    for (int bad = 0; bad < 3; bad++) {
        struct head_point keep = pts[6];
        if (bad == 0)
            pts[6].tlen = 0;
        else if (bad == 1)
            pts[6].p.type = (enum dpcodec_type)5;
        else
            pts[6].p.ts_ms = -1000;
        size_t done = 99;
        assert_int_equal(head_append_batch(h, pts, 10, NULL, res, &done, &err), CT_EINVAL);
        assert_non_null(strstr(err.msg, "point 6 of 10"));
        assert_int_equal(done, 0);
        size_t ns, nc;
        uint64_t np;
        head_counts(h, &ns, &nc, &np);
        assert_int_equal(np, 0);
        assert_int_equal(head_bytes(h), bytes0);
        pts[6] = keep;
    }
    assert_int_equal(head_append_batch(h, pts, 10, NULL, res, NULL, &err), CT_OK);
    for (int i = 0; i < 10; i++)
        assert_int_equal(res[i], HEAD_TAKEN);
    size_t ns, nc;
    uint64_t np;
    head_counts(h, &ns, &nc, &np);
    assert_int_equal(ns, 2);
    assert_int_equal(np, 10);
    /* empty: nothing */
    assert_int_equal(head_append_batch(h, pts, 0, NULL, res, NULL, &err), CT_OK);
    head_free(h);
}

static int accept_hour(void *arg, const uint8_t *tsuid, size_t tlen, int64_t base_s,
                       bool replayed, const struct dpcodec_point *pts, size_t n, struct ct_err *err)
{
    (void)replayed;
    (void)arg, (void)tsuid, (void)tlen, (void)base_s, (void)pts, (void)n, (void)err;
    return CT_OK;
}

#define REF_N 30 /* series of each group: under half of the 64-slot table, no rebuild */

static void ref_tsuid(uint8_t *t, unsigned group, unsigned i)
{
    memcpy(t, T1, sizeof(T1));
    t[5] = (uint8_t)(group + 1);
    t[8] = (uint8_t)(i + 1);
}

/* A writer keeps each series' head_ref and gives it back with the series' next points. A ref
 * stays the same while the table is not rebuilt; after a hand-off freed its series (and the
 * table was rebuilt) it is stale and never followed: 30 freed series' refs name slots that 30
 * new series now fill, and each point still goes to its own series (a followed stale ref would
 * put it into one of the new ones). */
static void test_head_ref_is_never_followed_after_its_series_is_freed(void **state)
{
    (void)state;
    struct head *h = NULL;
    struct ct_err err = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    uint8_t ta[REF_N][sizeof(T1)], tb[REF_N][sizeof(T1)];
    struct head_point pts[REF_N];
    struct head_ref refs[REF_N], kept[REF_N];
    enum head_result res[REF_N];
    memset(refs, 0, sizeof(refs));
    for (unsigned i = 0; i < REF_N; i++) {
        ref_tsuid(ta[i], 0, i);
        ref_tsuid(tb[i], 1, i);
    }
    /* group A, hour BASE: two appends, the second with the refs the first returned */
    for (int round = 0; round < 2; round++) {
        for (unsigned i = 0; i < REF_N; i++)
            pts[i] = (struct head_point){ta[i], sizeof(T1),
                                         dpcodec_point_int(BASE_MS + round * 1000, false, i)};
        assert_int_equal(head_append_batch(h, pts, REF_N, refs, res, NULL, &err), CT_OK);
        for (unsigned i = 0; i < REF_N; i++) {
            assert_int_equal(res[i], HEAD_TAKEN);
            assert_int_not_equal(refs[i].gen, 0);
            if (round == 1) { /* no rebuild in between: the same refs */
                assert_int_equal(refs[i].slot, kept[i].slot);
                assert_int_equal(refs[i].gen, kept[i].gen);
            }
        }
        memcpy(kept, refs, sizeof(refs));
    }
    /* hand-off of BASE: group A's series are freed, the table rebuilt */
    size_t nh = 0;
    assert_int_equal(head_close_hours(h, BASE + 3600, accept_hour, NULL, &nh, &err), CT_OK);
    assert_int_equal(nh, REF_N);
    size_t ns, nc;
    uint64_t np;
    head_counts(h, &ns, &nc, &np);
    assert_int_equal(ns, 0);
    /* group B fills the new table */
    for (unsigned i = 0; i < REF_N; i++)
        pts[i] = (struct head_point){tb[i], sizeof(T1),
                                     dpcodec_point_int(BASE_MS + 3600000 + 1000, false, 100 + i)};
    assert_int_equal(head_append_batch(h, pts, REF_N, NULL, res, NULL, &err), CT_OK);
    /* group A again, with its stale refs */
    for (unsigned i = 0; i < REF_N; i++)
        pts[i] = (struct head_point){ta[i], sizeof(T1),
                                     dpcodec_point_int(BASE_MS + 3600000 + 2000, false, 200 + i)};
    assert_int_equal(head_append_batch(h, pts, REF_N, refs, res, NULL, &err), CT_OK);
    for (unsigned i = 0; i < REF_N; i++) {
        assert_int_equal(res[i], HEAD_TAKEN);
        assert_int_not_equal(refs[i].gen, kept[i].gen); /* refreshed */
    }
    head_counts(h, &ns, &nc, &np);
    assert_int_equal(ns, 2 * REF_N);
    assert_int_equal(np, 2 * REF_N);
    for (unsigned i = 0; i < REF_N; i++) {
        struct dpcodec_point *out = NULL;
        size_t cap = 0, got = 0;
        assert_int_equal(read_points(h, ta[i], sizeof(T1), 0, INT64_MAX, &out, &cap, &got, &err),
                         CT_OK);
        assert_int_equal(got, 1);
        assert_int_equal(out[0].i, 200 + i);
        got = 0;
        assert_int_equal(read_points(h, tb[i], sizeof(T1), 0, INT64_MAX, &out, &cap, &got, &err),
                         CT_OK);
        assert_int_equal(got, 1);
        assert_int_equal(out[0].i, 100 + i);
        free(out);
    }
    /* a ref given with the point of an already handed-off hour is left as it was */
    struct head_ref r0 = refs[0];
    pts[0] = (struct head_point){ta[0], sizeof(T1), dpcodec_point_int(BASE_MS + 5000, false, 1)};
    assert_int_equal(head_append_batch(h, pts, 1, refs, res, NULL, &err), CT_OK);
    assert_int_equal(res[0], HEAD_LATE);
    assert_int_equal(refs[0].slot, r0.slot);
    assert_int_equal(refs[0].gen, r0.gen);
    head_free(h);
}

/* head_set_replay: a chunk that took a point while it was on is handed off as replayed (its
 * sink merges it with the stored row), one that did not is not. */
static int replayed_hour(void *arg, const uint8_t *tsuid, size_t tlen, int64_t base_s,
                         bool replayed, const struct dpcodec_point *pts, size_t n,
                         struct ct_err *err)
{
    (void)base_s, (void)pts, (void)n, (void)err;
    int *seen = arg; /* [0]: T1's flag + 1, [1]: T2's */
    seen[tlen == sizeof(T1) && memcmp(tsuid, T1, tlen) == 0 ? 0 : 1] = replayed ? 2 : 1;
    return CT_OK;
}

static void test_head_marks_replayed_chunks(void **state)
{
    (void)state;
    struct head *h = NULL;
    struct ct_err err = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    head_set_replay(h, true);
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS + 1000, false, 1), HEAD_TAKEN);
    head_set_replay(h, false);
    put(h, T1, sizeof(T1), dpcodec_point_int(BASE_MS + 2000, false, 2), HEAD_TAKEN);
    put(h, T2, sizeof(T2), dpcodec_point_int(BASE_MS + 1000, false, 1), HEAD_TAKEN);
    int seen[2] = {0, 0};
    size_t nh = 0;
    assert_int_equal(head_close_hours(h, BASE + 3600, replayed_hour, seen, &nh, &err), CT_OK);
    assert_int_equal(nh, 2);
    assert_int_equal(seen[0], 2); /* took a replayed point: stays marked after live appends */
    assert_int_equal(seen[1], 1);
    head_free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_head_round_trips_integer_limits),
        cmocka_unit_test(test_head_round_trips_real_edges),
        cmocka_unit_test(test_head_round_trips_mixed_kinds_and_times),
        cmocka_unit_test(test_head_round_trips_random_streams),
        cmocka_unit_test(test_head_refuses_out_of_order_and_keeps_state),
        cmocka_unit_test(test_head_refuses_a_fourth_hour),
        cmocka_unit_test(test_head_rejects_bad_input),
        cmocka_unit_test(test_head_batch_equals_point_appends),
        cmocka_unit_test(test_head_batch_with_a_bad_point),
        cmocka_unit_test(test_head_hands_off_closed_hours),
        cmocka_unit_test(test_head_compresses_and_counts_bytes),
        cmocka_unit_test(test_head_takes_appends_from_many_threads),
        cmocka_unit_test(test_head_lists_a_metrics_series_and_their_last_points),
        cmocka_unit_test(test_head_ref_is_never_followed_after_its_series_is_freed),
        cmocka_unit_test(test_head_backfill_takes_closed_hours),
        cmocka_unit_test(test_head_backfill_live_close_and_failed_room),
        cmocka_unit_test(test_head_backfill_share),
        cmocka_unit_test(test_head_moved_hands_off_older_hours),
        cmocka_unit_test(test_head_sealed_chunk_is_read_and_waited_for),
        cmocka_unit_test(test_head_close_in_steps_takes_chunks_opened_meanwhile),
        cmocka_unit_test(test_head_marks_replayed_chunks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
