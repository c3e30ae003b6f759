/* test_qstream.c - streamed downsampling of `0all` and of fixed intervals that do not divide an
 * hour (1d, 7m, 90m, 25h: qrollup's raw source, folding points into per-bucket accumulators as
 * rows are read) and fill policies after in-scan downsampling: every answer equals the general
 * path's (qexec_options.general_only) byte for byte, on generated data - many series in several
 * salt buckets, gaps, integers, doubles that are not float-exact (so the order of additions
 * shows in the bits), NaN, a counter with resets read through rate and counter rate, millisecond
 * timestamps, query bounds off the hour. And the streamed path's memory: what the series hold
 * after the scan (qexec_stats.held_points) is one point per series and bucket, the same with four
 * times the points, where the general path holds every raw point. Literal filters read exact key
 * ranges (the tag index's series, or the pinned leading tags), forward. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/qexec.h"
#include "query/qjson.h"
#include "query/qpool.h"
#include "query/qspec.h"
#include "schema/tagidx.h"
#include "tests/lib/ctest.h"
#include "tests/lib/tsdb_fixture.h"

#define DAY0 1356998400LL /* 2013-01-01T00:00:00Z */
#define NOW  ((DAY0 + 4 * 86400) * 1000)
#define NSER 12

static int setup(void **state)
{
    struct tsdb_fixture *f = tsdb_fixture_open(4);
    *state = f;
    if (!f)
        return 0;
    const char *k[2] = {"host", "dc"};
    char hv[NSER][8];
    for (int sr = 0; sr < NSER; sr++) {
        snprintf(hv[sr], sizeof(hv[sr]), "h%02d", sr);
        const char *v[2] = {hv[sr], sr % 3 ? "x" : "y"};
        /* "g": integers every 5 minutes over 2 days and 5 hours; every third series has gaps */
        for (int64_t t = DAY0; t < DAY0 + 2 * 86400 + 5 * 3600; t += 300) {
            if (sr % 3 == 2 && (t / 3600) % 5 == 0)
                continue;
            int64_t val = (sr + 1) * 100 + (t / 300 * 37 + sr * 11) % 97 - 40;
            tsdb_fixture_put(f->t, "g", k, v, 2, dpcodec_point_int(t * 1000, false, val));
        }
        /* "d": doubles that are not float-exact every 10 minutes, a NaN every 7th point of some
         * series, two hours of NaN only for h01; h02 in milliseconds (odd offsets) */
        for (int64_t t = DAY0; t < DAY0 + 2 * 86400; t += 600) {
            double val = (sr + 1) * 1.1 + (double)((t / 600 * 13 + sr) % 101) / 3.0;
            if ((sr == 1 && (t - DAY0) / 7200 == 15) || (sr % 4 == 3 && (t / 600) % 7 == 0))
                val = NAN;
            bool ms = sr == 2;
            int64_t ts = t * 1000 + (ms ? (t / 600) % 997 : 0);
            tsdb_fixture_put(f->t, "d", k, v, 2, dpcodec_point_real(ts, ms, val));
        }
        /* "c": a counter every minute for 30 hours, reset every 7 hours for odd series */
        int64_t cv = sr * 1000;
        for (int64_t t = DAY0; t < DAY0 + 30 * 3600; t += 60) {
            cv += 17 + (t / 60 + sr) % 13;
            if (sr % 2 && (t - DAY0) % (7 * 3600) == 0)
                cv = 5;
            tsdb_fixture_put(f->t, "c", k, v, 2, dpcodec_point_int(t * 1000, false, cv));
        }
    }
    return 0;
}

static int teardown(void **state)
{
    tsdb_fixture_close(*state);
    return 0;
}

static char *run(struct tsdb_fixture *f, const char *body, bool general, struct qexec_stats *stp)
{
    struct qspec *q = NULL;
    struct ct_err err = {0};
    if (qspec_parse_json(body, strlen(body), NOW, &q, &err) != CT_OK)
        fail_msg("parse %s: %s", body, err.msg);
    struct qexec_options o;
    qexec_options_init(&o);
    o.general_only = general;
    struct tsdb_fixture_buf b = {0};
    struct qjson *j = qjson_new(tsdb_fixture_sink, &b, 64);
    assert_non_null(j);
    struct qexec_stats st;
    memset(&st, 0, sizeof(st));
    enum qexec_status status;
    int rc = qexec_run(f->t, q, &o, j, &status, &st, &err);
    if (rc != CT_OK)
        fail_msg("run %s: %s", body, err.msg);
    assert_int_equal(qjson_flush(j), CT_OK);
    qjson_free(j);
    qspec_free(q);
    if (stp)
        *stp = st;
    return b.data ? b.data : strdup("");
}

/* The streamed answer and the general path's, byte for byte; returns the answer's length. */
static size_t same(struct tsdb_fixture *f, const char *body)
{
    char *ref = run(f, body, true, NULL);
    char *fast = run(f, body, false, NULL);
    if (strcmp(ref, fast))
        fail_msg("%s\ngeneral  %s\nstreamed %s", body, ref, fast);
    size_t n = strlen(ref);
    free(ref);
    free(fast);
    return n;
}

static void test_qstream_equals_general(void **state)
{
    struct tsdb_fixture *f = *state;
    TSDB_FIXTURE_SKIP_IF_NONE(&f);
    const char *fns[] = {"sum", "avg", "min", "max", "count"};
    const char *ivs[] = {"0all", "1d", "7m", "90m", "25h", "13m", "1h", "15m"};
    const char *fills[] = {"", "-nan", "-null", "-zero", "-scalar(2.5)"};
    const char *ms[] = {"g", "d", "c"};
    /* bounds: whole days; off the hour (and off the second: milliseconds) */
    const long long starts[] = {DAY0 * 1000, DAY0 * 1000 + 5 * 3600 * 1000 + 123457};
    const long long ends[] = {(DAY0 + 2 * 86400) * 1000, (DAY0 + 86400 + 7777) * 1000 + 31};
    size_t checked = 0, with_nan = 0;
    for (size_t mi = 0; mi < 3; mi++)
        for (size_t fi = 0; fi < 5; fi++)
            for (size_t ii = 0; ii < 8; ii++)
                for (size_t li = 0; li < 5; li++)
                    for (int var = 0; var < 4; var++) {
                        /* not every combination: each fill and bound with each interval and
                         * function at least once, keeping the test short */
                        if ((fi + ii + li + (size_t)var + mi) % 3 && li)
                            continue;
                        char body[1024];
                        const char *agg = var == 1 ? "zimsum" : var == 2 ? "max" : "sum";
                        const char *rate = var == 3 ? ",\"rate\":true,\"rateOptions\":{"
                                                      "\"counter\":true,\"resetValue\":1000}"
                                           : mi == 2 && var == 2 ? ",\"rate\":true"
                                                                 : "";
                        snprintf(body, sizeof(body),
                                 "{\"start\":%lld,\"end\":%lld,\"msResolution\":true,"
                                 "\"queries\":[{\"metric\":\"%s\",\"aggregator\":\"%s\","
                                 "\"downsample\":\"%s-%s%s\"%s%s}]}",
                                 starts[var % 2], ends[(var / 2) % 2], ms[mi], agg, ivs[ii],
                                 fns[fi], fills[li], rate,
                                 var % 2    ? ",\"tags\":{\"host\":\"*\"}"
                                 : var == 2 ? ",\"tags\":{\"dc\":\"*\"}"
                                            : "");
                        size_t n = same(f, body);
                        assert_true(n > 20);
                        checked++;
                        char *a = run(f, body, false, NULL);
                        with_nan += strstr(a, "NaN") != NULL || strstr(a, "null") != NULL;
                        free(a);
                    }
    assert_true(checked > 300);
    assert_true(with_nan > 0); /* the NaN buckets and fills were exercised */
}

/* A run on `threads` scan threads of pool (NULL: every piece on the calling thread). */
static char *run_threads(struct tsdb_fixture *f, const char *body, unsigned threads,
                         struct qpool *pool, struct qexec_stats *st)
{
    struct qspec *q = NULL;
    struct ct_err err = {0};
    if (qspec_parse_json(body, strlen(body), NOW, &q, &err) != CT_OK)
        fail_msg("parse %s: %s", body, err.msg);
    struct qexec_options o;
    qexec_options_init(&o);
    o.scan_threads = threads;
    o.pool = pool;
    struct tsdb_fixture_buf b = {0};
    struct qjson *j = qjson_new(tsdb_fixture_sink, &b, 64);
    assert_non_null(j);
    memset(st, 0, sizeof(*st));
    enum qexec_status status;
    if (qexec_run(f->t, q, &o, j, &status, st, &err) != CT_OK)
        fail_msg("run %s: %s", body, err.msg);
    assert_int_equal(qjson_flush(j), CT_OK);
    qjson_free(j);
    qspec_free(q);
    return b.data ? b.data : strdup("");
}

/* Raw rows folded into whole-hour buckets on several threads are cut into time slices of whole
 * buckets (qrollup_slices), read as separate pieces and chained back: the answer is the one
 * thread's (whole salt buckets) and the general path's, byte for byte, for every function,
 * interval (1h, 2h, 5h, 6h, 1d), fill, grouping, rate and bounds that cut buckets, on 2, 3 and 4
 * threads with the pieces run on the calling thread and on a pool's helpers. */
static void test_qstream_slices_equal_whole_buckets(void **state)
{
    struct tsdb_fixture *f = *state;
    TSDB_FIXTURE_SKIP_IF_NONE(&f);
    struct qpool_options po;
    qpool_options_init(&po);
    po.helpers = 3;
    po.threads = 4;
    struct qpool *pool = NULL;
    struct ct_err err = {0};
    assert_int_equal(qpool_new(&po, &pool, &err), CT_OK);
    const char *fns[] = {"sum", "avg", "min", "max", "count"};
    const char *ivs[] = {"1h", "2h", "5h", "6h", "1d"};
    const char *fills[] = {"", "-zero", "-nan"};
    const char *ms[] = {"g", "d", "c"};
    const long long starts[] = {DAY0 * 1000, (DAY0 + 5 * 3600 + 17) * 1000};
    const long long ends[] = {(DAY0 + 2 * 86400 + 5 * 3600) * 1000, (DAY0 + 86400 + 7777) * 1000};
    size_t checked = 0, sliced = 0;
    for (size_t mi = 0; mi < 3; mi++)
        for (size_t fi = 0; fi < 5; fi++)
            for (size_t ii = 0; ii < 5; ii++)
                for (int var = 0; var < 4; var++) {
                    char body[1024];
                    const char *agg = var == 1 ? "none" : var == 2 ? "max" : "sum";
                    const char *rate = mi == 2 && var == 3 ? ",\"rate\":true" : "";
                    snprintf(body, sizeof(body),
                             "{\"start\":%lld,\"end\":%lld,\"queries\":[{\"metric\":\"%s\","
                             "\"aggregator\":\"%s\",\"downsample\":\"%s-%s%s\"%s%s}]}",
                             starts[var % 2], ends[(var / 2) % 2], ms[mi], agg, ivs[ii], fns[fi],
                             fills[(fi + ii + mi) % 3], rate,
                             var == 2 ? ",\"tags\":{\"dc\":\"*\"}" : "");
                    struct qexec_stats st1, st;
                    char *ref = run(f, body, true, NULL);
                    char *one = run_threads(f, body, 1, NULL, &st1);
                    if (strcmp(ref, one))
                        fail_msg("%s\ngeneral    %s\none thread %s", body, ref, one);
                    for (unsigned th = 2; th <= 4; th++) {
                        for (int use_pool = 0; use_pool < 2; use_pool++) {
                            char *a = run_threads(f, body, th, use_pool ? pool : NULL, &st);
                            if (strcmp(ref, a))
                                fail_msg("%s on %u threads%s\ngeneral %s\nsliced  %s", body, th,
                                         use_pool ? " (pool)" : "", ref, a);
                            sliced += st.scanners > st1.scanners;
                            free(a);
                        }
                    }
                    free(ref);
                    free(one);
                    checked++;
                }
    assert_int_equal(checked, 300);
    assert_true(sliced > 600); /* most runs on several threads read time slices */
    qpool_free(pool);
}

/* Series read whose points all lie outside the 0all range are answered with no point, as the
 * general path answers them; the datapoint limit counts raw points on both paths. */
static void test_qstream_edges(void **state)
{
    struct tsdb_fixture *f = *state;
    TSDB_FIXTURE_SKIP_IF_NONE(&f);
    char body[512];
    /* [00:30:00, 00:30:00.5): inside the first hour row, between two points */
    snprintf(body, sizeof(body),
             "{\"start\":%lld,\"end\":%lld,\"msResolution\":true,\"queries\":[{\"metric\":\"c\","
             "\"aggregator\":\"none\",\"downsample\":\"0all-sum\"}]}",
             (DAY0 + 1800) * 1000 + 100, (DAY0 + 1800) * 1000 + 500);
    char *a = run(f, body, false, NULL);
    assert_non_null(strstr(a, "\"dps\":{}"));
    free(a);
    same(f, body);
    /* a 1 ms range holding one point */
    snprintf(body, sizeof(body),
             "{\"start\":%lld,\"end\":%lld,\"queries\":[{\"metric\":\"g\",\"aggregator\":\"sum\","
             "\"downsample\":\"0all-avg\",\"tags\":{\"host\":\"*\"}}]}",
             (DAY0 + 3600) * 1000, (DAY0 + 3600) * 1000 + 1);
    same(f, body);
}

static void test_qstream_limit(void **state)
{
    struct tsdb_fixture *f = *state;
    TSDB_FIXTURE_SKIP_IF_NONE(&f);
    const char *body = "{\"start\":1356998400000,\"end\":1357084800000,\"queries\":[{\"metric\":"
                       "\"c\",\"aggregator\":\"sum\",\"downsample\":\"0all-count\"}]}";
    for (int general = 0; general < 2; general++) {
        struct qspec *q = NULL;
        struct ct_err err = {0};
        assert_int_equal(qspec_parse_json(body, strlen(body), NOW, &q, &err), CT_OK);
        struct qexec_options o;
        qexec_options_init(&o);
        o.general_only = general;
        o.max_datapoints = 5000; /* 12 series x 1,441 points */
        enum qexec_status st;
        char *json = NULL;
        assert_int_equal(tsdb_fixture_run(f->t, q, &o, &json, &st, &err), CT_ELIMIT);
        assert_int_equal(st, QEXEC_TOO_LARGE);
        assert_non_null(strstr(err.msg, "limit of 5000 data points"));
    }
    /* the streamed path counts its points in batches: the limit still holds to the point (the
     * raw points read: a limit one below fails, one at them passes) */
    struct qexec_stats st;
    free(run(f, body, false, &st));
    assert_true(st.raw_dps > 10000);
    for (uint64_t lim = st.raw_dps - 1; lim <= st.raw_dps; lim++) {
        struct qspec *q = NULL;
        struct ct_err err = {0};
        assert_int_equal(qspec_parse_json(body, strlen(body), NOW, &q, &err), CT_OK);
        struct qexec_options o;
        qexec_options_init(&o);
        o.max_datapoints = lim;
        enum qexec_status status;
        char *json = NULL;
        int rc = tsdb_fixture_run(f->t, q, &o, &json, &status, &err);
        assert_int_equal(rc, lim < st.raw_dps ? CT_ELIMIT : CT_OK);
        free(json);
    }
}

/* What the series hold after the scan: for 0all one point per series, for 7m one per series and
 * bucket, the same over four times the points (a day of "c" vs four, no new bucket); the general
 * path holds every raw point. */
static void test_qstream_memory_bounded(void **state)
{
    struct tsdb_fixture *f = *state;
    TSDB_FIXTURE_SKIP_IF_NONE(&f);
    char body[512];
    struct qexec_stats st;
    /* "c" over [00:00, 06:00) then the same buckets over 4x the points: 1 point a minute vs a
     * 15-second copy written below */
    const char *k[2] = {"host", "dc"};
    for (int sr = 0; sr < 3; sr++) {
        char hv[8];
        snprintf(hv, sizeof(hv), "q%02d", sr);
        const char *v[2] = {hv, "z"};
        for (int64_t t = DAY0; t < DAY0 + 6 * 3600; t += 60)
            tsdb_fixture_put(f->t, "sparse", k, v, 2, dpcodec_point_int(t * 1000, false, t % 7));
        for (int64_t t = DAY0; t < DAY0 + 6 * 3600; t += 15)
            tsdb_fixture_put(f->t, "dense", k, v, 2, dpcodec_point_int(t * 1000, false, t % 7));
    }
    const char *ds[] = {"0all-count", "7m-avg", "90m-max"};
    const uint64_t buckets[] = {1, 6 * 60 / 7 + 1, 4};
    for (size_t di = 0; di < 3; di++) {
        uint64_t held[2];
        for (int m = 0; m < 2; m++) {
            snprintf(body, sizeof(body),
                     "{\"start\":%lld,\"end\":%lld,\"queries\":[{\"metric\":\"%s\","
                     "\"aggregator\":\"sum\",\"downsample\":\"%s\"}]}",
                     DAY0 * 1000, (DAY0 + 6 * 3600) * 1000 - 1, m ? "dense" : "sparse", ds[di]);
            free(run(f, body, false, &st));
            assert_int_equal(st.series, 3);
            held[m] = st.held_points;
            assert_true(held[m] <= 3 * buckets[di]);
            assert_true(held[m] >= 3 * (buckets[di] - 1));
            free(run(f, body, true, &st));
            assert_int_equal(st.held_points, m ? 3 * 6 * 3600 / 15 : 3 * 6 * 60);
        }
        assert_int_equal(held[0], held[1]); /* 4x the points, the same memory */
    }
}

/* Literal filters: the streamed path reads the exact key ranges of the series the tag index
 * picks (or of the leading tags the filter pins), forward, and answers as the general path. */
static void test_qstream_key_ranges(void **state)
{
    struct tsdb_fixture *f = *state;
    TSDB_FIXTURE_SKIP_IF_NONE(&f);
    struct ct_err err = {0};
    uint64_t n = 0;
    assert_int_equal(tagidx_rebuild(f->t, &n, &err), CT_OK);
    const char *qs[] = {
        "\"metric\":\"d\",\"aggregator\":\"sum\",\"downsample\":\"0all-sum\","
        "\"tags\":{\"host\":\"h01|h02|h07\"}",
        "\"metric\":\"g\",\"aggregator\":\"max\",\"downsample\":\"7m-avg-nan\","
        "\"tags\":{\"host\":\"h05\"}",
        "\"metric\":\"c\",\"aggregator\":\"sum\",\"downsample\":\"90m-max\","
        "\"rate\":true,\"tags\":{\"host\":\"h03|h04\",\"dc\":\"x\"}",
        "\"metric\":\"d\",\"aggregator\":\"avg\",\"downsample\":\"1d-avg\","
        "\"tags\":{\"host\":\"h02|h03\"}",
    };
    for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
        char body[512];
        snprintf(body, sizeof(body),
                 "{\"start\":%lld,\"end\":%lld,\"msResolution\":true,\"queries\":[{%s}]}",
                 DAY0 * 1000 + 3600 * 1000 + 5, (DAY0 + 5 * 3600) * 1000, qs[i]);
        struct qexec_stats st;
        char *fast = run(f, body, false, &st);
        char *ref = run(f, body, true, NULL);
        if (strcmp(ref, fast))
            fail_msg("%s\ngeneral  %s\nstreamed %s", body, ref, fast);
        assert_true(strlen(fast) > 40);
        assert_true(st.key_ranges > 4); /* exact ranges, not one range a salt bucket */
        free(ref);
        free(fast);
    }
}

/* Rows of regular timestamps (hours merged into one compressed cell by a compaction, so the
 * decoder leaves their times unwritten) through the streamed path's fast path (a row wholly in
 * one bucket of the grid folded whole) and its fallback (rows cut at bucket ends or the range's
 * bounds): every answer equals the general path's, byte for byte. Series at 10 s and 60 s
 * (integers, doubles not float-exact with NaN, a counter with resets, a mix of both kinds), one
 * at 250 ms steps (millisecond timestamps), one with gaps (irregular rows), one with missing
 * hours, and late single points on top of merged hours (rows the general decoder reads). */
static void test_qstream_regular_rows(void **state)
{
    (void)state;
    struct tsdb_fixture *f = tsdb_fixture_open(3);
    if (!f)
        skip();
    struct ct_err err = {0};
    const char *k[2] = {"host", "dc"};
    const int64_t t0 = DAY0, hours = 7;
    for (int sr = 0; sr < 7; sr++) {
        char host[8];
        snprintf(host, sizeof(host), "r%d", sr);
        const char *v[2] = {host, sr % 2 ? "x" : "y"};
        int64_t step_ms = sr == 5 ? 250 : sr % 3 == 1 ? 60000 : 10000;
        int64_t cv = 1000 + sr;
        for (int64_t t = t0 * 1000; t < (t0 + hours * 3600) * 1000; t += step_ms) {
            int64_t i = (t - t0 * 1000) / step_ms;
            if (sr == 6 && ((t / 1000) % 3600 == 1230 || (t / 3600000) % 4 == 1))
                continue; /* a gap inside some hours (irregular), two hours missing */
            if (sr == 5 && (t / 3600000) % 2 == 0)
                continue; /* the millisecond series every other hour (rows stay small) */
            struct dpcodec_point p;
            if (sr == 0 || sr == 3) { /* a counter, reset every 5 hours for r3 */
                cv += 3 + i % 7;
                if (sr == 3 && i && (t / 1000 - t0) % (5 * 3600) == 0)
                    cv = 2;
                p = dpcodec_point_int(t, step_ms % 1000 != 0, cv);
            } else if (sr == 4 && i % 3 == 0) {
                p = dpcodec_point_int(t, false, i % 50); /* integers and doubles in one series */
            } else {
                double val = (sr + 1) * 1.1 + (double)((i * 13 + sr) % 101) / 3.0;
                if (sr == 2 && i % 11 == 0)
                    val = NAN;
                p = dpcodec_point_real(t, step_ms % 1000 != 0, val);
            }
            tsdb_fixture_put(f->t, "rg", k, v, 2, p);
        }
    }
    assert_int_equal(wc_table_flush(f->s, "tsdb", &err), CT_OK);
    assert_int_equal(wc_table_compact(f->s, "tsdb", NULL, true, &err), CT_OK);
    /* late points on merged hours: a compressed cell plus single cells */
    const char *v1[2] = {"r1", "x"}, *v2[2] = {"r2", "y"};
    tsdb_fixture_put(f->t, "rg", k, v1, 2, dpcodec_point_real((t0 + 3600 + 7) * 1000, false, 2.5));
    tsdb_fixture_put(f->t, "rg", k, v2, 2, dpcodec_point_int((t0 + 2 * 3600 + 3) * 1000, false, 9));
    assert_int_equal(wc_table_flush(f->s, "tsdb", &err), CT_OK);
    const char *fns[] = {"sum", "avg", "count", "min", "max"};
    const char *ivs[] = {"0all", "0all", "7m", "90m", "25h", "1d", "13m"};
    const char *fills[] = {"", "-nan", "-zero"};
    /* bounds: whole hours (every row inside), off the hour and off the second (rows cut) */
    const long long starts[] = {t0 * 1000, t0 * 1000 + 1800 * 1000 + 123, (t0 + 3600) * 1000};
    const long long ends[] = {(t0 + hours * 3600) * 1000, (t0 + 5 * 3600) * 1000 + 4567,
                              (t0 + 6 * 3600) * 1000 - 1};
    size_t checked = 0;
    for (size_t fi = 0; fi < 5; fi++)
        for (size_t ii = 0; ii < 7; ii++)
            for (size_t bi = 0; bi < 3; bi++)
                for (int var = 0; var < 3; var++) {
                    const char *agg = var == 1 ? "zimsum" : "sum";
                    const char *rate =
                        var == 2 ? ",\"rate\":true,\"rateOptions\":{\"counter\":true}" : "";
                    const char *tags = var ? ",\"tags\":{\"host\":\"*\"}" : "";
                    char body[1024];
                    snprintf(body, sizeof(body),
                             "{\"start\":%lld,\"end\":%lld,\"msResolution\":true,"
                             "\"queries\":[{\"metric\":\"rg\",\"aggregator\":\"%s\","
                             "\"downsample\":\"%s-%s%s\"%s%s}]}",
                             starts[bi], ends[(bi + (size_t)var) % 3], agg, ivs[ii], fns[fi],
                             fills[(fi + ii + bi) % 3], rate, tags);
                    char *ref = run(f, body, true, NULL);
                    char *fast = run(f, body, false, NULL);
                    if (strcmp(ref, fast))
                        fail_msg("%s\ngeneral  %s\nstreamed %s", body, ref, fast);
                    assert_true(strlen(ref) > 40);
                    checked++;
                    free(ref);
                    free(fast);
                }
    assert_true(checked == 5 * 7 * 3 * 3);
    tsdb_fixture_close(f);
}

/* Rows of decimals (2-decimal gauges merged into compressed cells of decimal values: the
 * decoder says no value is NaN, dpcodec_cols.no_nan, and the scan's in-scan downsampling and the
 * raw source's folds add them without testing for NaN) against the general path, byte for
 * byte: random walks at 60 s and 10 s whose sums are not float-exact, a series with a NaN in
 * some hours (those rows are not decimal cells: the tested loops), one with partial hours (its
 * first and last points inside hours), late single points on merged hours; intervals the scan
 * downsamples (1m, 5m) and the raw source folds (1h, 2h, 1d, 0all, 7m: sums, minima and maxima
 * of decimal rows without NaN tests), every single-pass function, fill policies, group by
 * host or not, bounds off the hour, and a counter rate with a counterMax (the walk's drops read
 * as wraps). */
static void test_qstream_decimal_rows(void **state)
{
    (void)state;
    struct tsdb_fixture *f = tsdb_fixture_open(3);
    if (!f)
        skip();
    struct ct_err err = {0};
    const char *k[2] = {"host", "dc"};
    const int64_t t0 = DAY0, hours = 26;
    for (int sr = 0; sr < 5; sr++) {
        char host[8];
        snprintf(host, sizeof(host), "d%d", sr);
        const char *v[2] = {host, sr % 2 ? "x" : "y"};
        int64_t step = sr == 1 ? 10 : 60, cents = 1234 + 977 * sr;
        uint64_t seed = 0x9E3779B97F4A7C15ULL * (uint64_t)(sr + 1);
        for (int64_t t = t0; t < t0 + hours * 3600; t += step) {
            if (sr == 3 && (t < t0 + 1234 || t >= t0 + hours * 3600 - 2222))
                continue; /* partial first and last hours */
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            cents += (int64_t)(seed % 2001) - 1000; /* a walk of 2-decimal values */
            double val = (double)cents / 100.0;
            if (sr == 2 && (t - t0) / 3600 % 5 == 1 && (t / step) % 17 == 0)
                val = NAN; /* every fifth hour holds a NaN: not a decimal cell */
            tsdb_fixture_put(f->t, "dm", k, v, 2, dpcodec_point_real(t * 1000, false, val));
        }
    }
    assert_int_equal(wc_table_flush(f->s, "tsdb", &err), CT_OK);
    assert_int_equal(wc_table_compact(f->s, "tsdb", NULL, true, &err), CT_OK);
    const char *v0[2] = {"d0", "y"};
    tsdb_fixture_put(f->t, "dm", k, v0, 2, dpcodec_point_real((t0 + 3600 + 7) * 1000, false, 2.5));
    assert_int_equal(wc_table_flush(f->s, "tsdb", &err), CT_OK);
    const char *fns[] = {"sum", "avg", "count", "min", "max"};
    const char *ivs[] = {"1m", "5m", "1h", "2h", "1d", "0all", "7m"};
    const char *fills[] = {"", "-nan", "-zero"};
    const long long starts[] = {t0 * 1000, (t0 + 1800) * 1000 + 123, (t0 + 3600) * 1000};
    const long long ends[] = {(t0 + hours * 3600) * 1000, (t0 + 20 * 3600) * 1000 + 4567,
                              (t0 + 25 * 3600) * 1000 - 1};
    size_t checked = 0;
    for (size_t fi = 0; fi < 5; fi++)
        for (size_t ii = 0; ii < 7; ii++)
            for (size_t bi = 0; bi < 3; bi++)
                for (int var = 0; var < 3; var++) {
                    const char *rate = var == 2 ? ",\"rate\":true,\"rateOptions\":{\"counter\":"
                                                  "true,\"counterMax\":100000}"
                                                : "";
                    const char *tags = var ? ",\"tags\":{\"host\":\"*\"}" : "";
                    char body[1024];
                    snprintf(body, sizeof(body),
                             "{\"start\":%lld,\"end\":%lld,\"msResolution\":true,"
                             "\"queries\":[{\"metric\":\"dm\",\"aggregator\":\"sum\","
                             "\"downsample\":\"%s-%s%s\"%s%s}]}",
                             starts[bi], ends[(bi + (size_t)var) % 3], ivs[ii], fns[fi],
                             fills[(fi + ii + bi) % 3], rate, tags);
                    char *ref = run(f, body, true, NULL);
                    char *fast = run(f, body, false, NULL);
                    if (strcmp(ref, fast))
                        fail_msg("%s\ngeneral  %s\nfast     %s", body, ref, fast);
                    assert_true(strlen(ref) > 40);
                    checked++;
                    free(ref);
                    free(fast);
                }
    assert_true(checked == 5 * 7 * 3 * 3);
    tsdb_fixture_close(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_qstream_equals_general, setup, teardown),
        cmocka_unit_test_setup_teardown(test_qstream_edges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_qstream_slices_equal_whole_buckets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_qstream_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_qstream_memory_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_qstream_key_ranges, setup, teardown),
        cmocka_unit_test(test_qstream_regular_rows),
        cmocka_unit_test(test_qstream_decimal_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
