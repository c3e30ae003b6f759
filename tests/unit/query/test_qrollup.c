/* test_qrollup.c - query/qrollup: for every downsample function rollups serve (sum, count, min,
 * max, avg) and intervals 1h, 2h, 1d and 2d, with and without a group-by, the answer read from
 * rollups only (ROLLUP_NOFALLBACK), from rollups with raw for the hours not rolled up (the
 * default) and from raw rows (ROLLUP_RAW) are the same JSON, byte for byte; the rollup answer
 * really comes from the rollup tables (a value changed in the 1h table changes it, while the raw
 * answer stays); functions rollups cannot serve (dev, p95) give the raw answer. Without rollup
 * tables, whole-hour intervals (1h, 2h, 6h, 1d, 2d: qrollup's raw-only source) give the general
 * path's answer byte for byte, for integers, doubles with NaN (an hour of NaN only), a series
 * missing hours (its rows' series order changing hour to hour) and an annotation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "query/qexec.h"
#include "query/qmeta.h"
#include "query/qspec.h"
#include "schema/rollup.h"
#include "schema/tagidx.h"
#include "storage/clock.h"
#include "tests/lib/ctest.h"
#include "tests/lib/tsdb_fixture.h"

#define DAY0 1356998400LL /* 2013-01-01T00:00:00Z */
#define NOW  ((DAY0 + 4 * 86400) * 1000)

struct st {
    struct tsdb_fixture *f;
    struct rollup *r;
};

static int setup(void **state)
{
    struct st *s = calloc(1, sizeof(*s));
    s->f = tsdb_fixture_open(4);
    *state = s;
    if (!s->f)
        return 0;
    const char *k[2] = {"host", "dc"};
    const char *hv[3] = {"a", "b", "c"}, *dv[3] = {"x", "x", "y"};
    /* three series, one point every 5 minutes over 3 days and 5 hours; c has gaps */
    for (int sr = 0; sr < 3; sr++)
        for (int64_t t = DAY0; t < DAY0 + 3 * 86400 + 5 * 3600; t += 300) {
            if (sr == 2 && (t / 3600) % 5 == 0)
                continue;
            const char *v[2] = {hv[sr], dv[sr]};
            int64_t val = (sr + 1) * 100 + (t / 300 * 37 + sr * 11) % 97 - 40;
            tsdb_fixture_put(s->f->t, "m", k, v, 2, dpcodec_point_int(t * 1000, false, val));
        }
    /* metric "f": doubles (not float-exact) every 10 minutes over 2 days, two hours (a 2h bucket) of NaN only
     * for host a and a NaN every 7th point of host b */
    for (int sr = 0; sr < 2; sr++)
        for (int64_t t = DAY0; t < DAY0 + 2 * 86400; t += 600) {
            const char *v[2] = {hv[sr], dv[sr]};
            double val = (sr + 1) * 1.1 + (double)((t / 600 * 13) % 101) / 3.0;
            if ((sr == 0 && (t - DAY0) / 7200 == 15) || (sr == 1 && (t / 600) % 7 == 0))
                val = NAN;
            tsdb_fixture_put(s->f->t, "f", k, v, 2, dpcodec_point_real(t * 1000, false, val));
        }
    struct rollup_config c = {{"r1h", "r1d"}, {0, 0}, true};
    struct ct_err err = {0};
    if (rollup_open(s->f->s, s->f->t, &c, &s->r, &err) != CT_OK)
        fail_msg("rollup_open: %s", err.msg);
    /* roll up through hour 3 of day 3 (days 0..2 whole); the last hour stays raw */
    if (rollup_job_step(s->r, DAY0 + 3 * 86400 + 4 * 3600, 0, NULL, &err) != CT_OK)
        fail_msg("rollup_job_step: %s", err.msg);
    return 0;
}

static int teardown(void **state)
{
    struct st *s = *state;
    rollup_close(s->r);
    tsdb_fixture_close(s->f);
    free(s);
    return 0;
}

/* index_ranges: qexec_options.index_ranges, or (UINT64_MAX) the default */
static char *run_oi(struct st *s, const char *body, bool with_rollups, bool general_only,
                    uint64_t index_ranges)
{
    struct qspec *q = NULL;
    struct ct_err err = {0};
    if (qspec_parse_json(body, strlen(body), NOW, &q, &err) != CT_OK)
        fail_msg("parse %s: %s", body, err.msg);
    struct qexec_options o;
    qexec_options_init(&o);
    o.rollup = with_rollups ? s->r : NULL;
    o.general_only = general_only;
    if (index_ranges != UINT64_MAX)
        o.index_ranges = index_ranges;
    enum qexec_status st;
    char *json = NULL;
    if (tsdb_fixture_run(s->f->t, q, &o, &json, &st, &err) != CT_OK)
        fail_msg("run %s: %s", body, err.msg);
    return json;
}

static char *run_o(struct st *s, const char *body, bool with_rollups, bool general_only)
{
    return run_oi(s, body, with_rollups, general_only, UINT64_MAX);
}

static char *run(struct st *s, const char *body, bool with_rollups)
{
    return run_o(s, body, with_rollups, false);
}

static char *query(struct st *s, const char *agg, const char *ds, const char *usage, bool gb,
                   int64_t start, int64_t end)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"start\":%lld,\"end\":%lld,\"queries\":[{\"metric\":\"m\",\"aggregator\":\"%s\","
             "\"downsample\":\"%s\",\"rollupUsage\":\"%s\"%s}]}",
             (long long)start, (long long)end, agg, ds, usage,
             gb ? ",\"tags\":{\"host\":\"*\"}" : "");
    return run(s, body, true);
}

static void test_qrollup_equals_raw(void **state)
{
    struct st *s = *state;
    TSDB_FIXTURE_SKIP_IF_NONE(&s->f);
    const char *fns[] = {"sum", "count", "min", "max", "avg"};
    const char *ivs[] = {"1h", "2h", "1d", "2d"};
    for (size_t fi = 0; fi < 5; fi++)
        for (size_t ii = 0; ii < 4; ii++)
            for (int gb = 0; gb < 2; gb++) {
                char ds[32];
                snprintf(ds, sizeof(ds), "%s-%s", ivs[ii], fns[fi]);
                /* a range whose buckets are all rolled up (2d buckets: days 0 and 1 only; a
                 * bucket reaching into day 3 holds hours no 1d rollup has) */
                int64_t st = DAY0, en = DAY0 + 2 * 86400 - 1;
                char *raw = query(s, "sum", ds, "ROLLUP_RAW", gb, st, en);
                char *nof = query(s, "sum", ds, "ROLLUP_NOFALLBACK", gb, st, en);
                assert_true(strlen(raw) > 20);
                if (strcmp(raw, nof))
                    fail_msg("%s gb=%d\nraw %s\nrollup %s", ds, gb, raw, nof);
                free(nof);
                free(raw);
                /* the whole range with its raw tail (and a start inside day 0) */
                st = DAY0 + 5 * 3600;
                en = DAY0 + 3 * 86400 + 5 * 3600;
                raw = query(s, "sum", ds, "ROLLUP_RAW", gb, st, en);
                char *fb = query(s, "max", ds, "ROLLUP_FALLBACK", gb, st, en);
                char *raw2 = query(s, "max", ds, "ROLLUP_RAW", gb, st, en);
                assert_string_equal(raw2, fb);
                free(fb);
                fb = query(s, "sum", ds, "ROLLUP_FALLBACK_RAW", gb, st, en);
                if (strcmp(raw, fb))
                    fail_msg("%s gb=%d\nraw %s\nfallback %s", ds, gb, raw, fb);
                free(fb);
                free(raw);
                free(raw2);
            }
}

static void test_qrollup_reads_the_rollup_table(void **state)
{
    struct st *s = *state;
    TSDB_FIXTURE_SKIP_IF_NONE(&s->f);
    const char *k[2] = {"host", "dc"}, *v[2] = {"a", "x"};
    uint8_t tsuid[ROWKEY_MAX_TSUID];
    size_t tl;
    struct ct_err err = {0};
    assert_int_equal(tsdb_series_resolve(s->f->t, "m", k, v, 2, tsuid, sizeof(tsuid), &tl, &err),
                     CT_OK);
    char *before = query(s, "sum", "1h-sum", "ROLLUP_FALLBACK", false, DAY0, DAY0 + 3599);
    char *raw2h = query(s, "sum", "2h-sum", "ROLLUP_RAW", false, DAY0, DAY0 + 7199);
    struct rollup_put p = {tsuid,      tl,   ROLLUP_1H,
                           ROLLUP_SUM, DAY0, dpcodec_point_int(0, false, 1000000)};
    /* the newest of two cells of one interval wins by write time in ms, then by qualifier order
     * (the job's cell and this one differ in value length): this write must be a later ms */
    int64_t job_ms = clock_now_ms();
    while (clock_now_ms() <= job_ms)
        usleep(200);
    assert_int_equal(rollup_write(s->r, &p, 1, &err), CT_OK);
    char *after = query(s, "sum", "1h-sum", "ROLLUP_FALLBACK", false, DAY0, DAY0 + 3599);
    char *raw = query(s, "sum", "1h-sum", "ROLLUP_RAW", false, DAY0, DAY0 + 3599);
    assert_string_equal(before, raw);
    assert_string_not_equal(after, raw);
    /* the other two series' sums plus 1000000 */
    assert_non_null(strstr(after, "\"1356998400\":100"));
    /* several hours with ROLLUP_RAW: raw rows folded (qrollup's raw source), not the table */
    char *raw2h_after = query(s, "sum", "2h-sum", "ROLLUP_RAW", false, DAY0, DAY0 + 7199);
    char *fb2h = query(s, "sum", "2h-sum", "ROLLUP_FALLBACK", false, DAY0, DAY0 + 7199);
    assert_string_equal(raw2h, raw2h_after);
    assert_string_not_equal(fb2h, raw2h);
    free(raw2h);
    free(raw2h_after);
    free(fb2h);
    /* a function rollups do not hold reads raw */
    char *dev = query(s, "sum", "1h-dev", "ROLLUP_FALLBACK", false, DAY0, DAY0 + 3599);
    char *devraw = query(s, "sum", "1h-dev", "ROLLUP_RAW", false, DAY0, DAY0 + 3599);
    assert_string_equal(dev, devraw);
    /* without rollup tables (o.rollup NULL) every usage reads raw */
    char body[512];
    snprintf(body, sizeof(body),
             "{\"start\":%lld,\"end\":%lld,\"queries\":[{\"metric\":\"m\",\"aggregator\":\"sum\","
             "\"downsample\":\"1h-sum\",\"rollupUsage\":\"ROLLUP_NOFALLBACK\"}]}",
             (long long)DAY0, (long long)DAY0 + 3599);
    char *none = run(s, body, false);
    assert_string_equal(none, raw);
    free(none);
    free(dev);
    free(devraw);
    free(before);
    free(after);
    free(raw);
}

/* A series only the rollup tables hold (written through /api/rollup, never as raw rows, so the
 * tag index does not list it): a filter picking it still reads it from the tables when the
 * index declines the ranges and names the salt buckets of its series instead (qindex_buckets
 * holds for raw rows only), and raw-only reads of the other series skip the buckets they do not
 * live in with the same answer. */
static void test_qrollup_series_only_in_the_tables(void **state)
{
    struct st *s = *state;
    TSDB_FIXTURE_SKIP_IF_NONE(&s->f);
    struct ct_err err = {0};
    uint64_t n = 0;
    assert_int_equal(tagidx_rebuild(s->f->t, &n, &err), CT_OK); /* complete: m's and f's series */
    /* the uids of host zz (a point of another metric), then a 1h rollup of m{host=zz,dc=x} */
    const char *k[2] = {"host", "dc"}, *v[2] = {"zz", "x"};
    tsdb_fixture_put(s->f->t, "other", k, v, 2, dpcodec_point_int(DAY0 * 1000, false, 1));
    uint8_t tsuid[ROWKEY_MAX_TSUID];
    size_t tl;
    assert_int_equal(tsdb_series_resolve(s->f->t, "m", k, v, 2, tsuid, sizeof(tsuid), &tl, &err),
                     CT_OK);
    struct rollup_put p[2] = {
        {tsuid, tl, ROLLUP_1H, ROLLUP_SUM, DAY0 + 3600, dpcodec_point_int(0, false, 4242)},
        {tsuid, tl, ROLLUP_1H, ROLLUP_COUNT, DAY0 + 3600, dpcodec_point_int(0, false, 2)}};
    assert_int_equal(rollup_write(s->r, p, 2, &err), CT_OK);
    const char *usages[] = {"ROLLUP_NOFALLBACK", "ROLLUP_FALLBACK"};
    for (int u = 0; u < 2; u++) {
        char body[512];
        snprintf(body, sizeof(body),
                 "{\"start\":%lld,\"end\":%lld,\"queries\":[{\"metric\":\"m\",\"aggregator\":"
                 "\"sum\",\"downsample\":\"1h-avg\",\"rollupUsage\":\"%s\",\"tags\":{\"host\":"
                 "\"zz\"}}]}",
                 (long long)DAY0, (long long)DAY0 + 3 * 86400 - 1, usages[u]);
        char *one_range = run_oi(s, body, true, false, 1); /* the index names buckets only */
        char *no_index = run_oi(s, body, true, false, 0);
        assert_non_null(strstr(no_index, "\"1357002000\":2121.0"));
        assert_string_equal(one_range, no_index);
        free(one_range);
        free(no_index);
    }
    /* raw rows only, one host over 3 days: the same with the buckets from the index */
    const char *hosts[3] = {"a", "b", "c"};
    for (int h = 0; h < 3; h++) {
        char body[512];
        snprintf(body, sizeof(body),
                 "{\"start\":%lld,\"end\":%lld,\"queries\":[{\"metric\":\"m\",\"aggregator\":"
                 "\"sum\",\"downsample\":\"2h-max\",\"tags\":{\"host\":\"%s\"}}]}",
                 (long long)DAY0, (long long)DAY0 + 3 * 86400 - 1, hosts[h]);
        char *one_range = run_oi(s, body, false, false, 1);
        char *no_index = run_oi(s, body, false, false, 0);
        assert_string_equal(one_range, no_index);
        assert_true(strlen(no_index) > 100);
        free(one_range);
        free(no_index);
    }
}

/* No rollup tables: whole-hour intervals above 1h are read from raw rows by qrollup's raw
 * source; the answer is the general path's (qexec_options.general_only), byte for byte. */
static void test_qrollup_raw_only_equals_general(void **state)
{
    struct st *s = *state;
    TSDB_FIXTURE_SKIP_IF_NONE(&s->f);
    /* an annotation on host b of "f" inside day 1 */
    struct ct_err err = {0};
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"start\":%lld,\"end\":%lld,\"showTSUIDs\":true,\"queries\":[{\"metric\":\"f\","
             "\"aggregator\":\"sum\",\"tags\":{\"host\":\"b\"}}]}",
             (long long)DAY0, (long long)DAY0 + 3600);
    char *got = run(s, body, false);
    const char *tp = strstr(got, "\"tsuids\":[\"");
    assert_non_null(tp);
    char tsuid[64];
    snprintf(tsuid, sizeof(tsuid), "%.*s", (int)strcspn(tp + 11, "\""), tp + 11);
    free(got);
    snprintf(body, sizeof(body),
             "{\"tsuid\":\"%s\",\"startTime\":%lld,\"description\":\"deploy\"}", tsuid,
             (long long)DAY0 + 86400 + 7200);
    cJSON *req = cJSON_Parse(body), *out = NULL;
    int status = 0;
    assert_int_equal(qmeta_annotation(s->f->t, QMETA_POST, req, &out, &status, &err), CT_OK);
    assert_int_equal(status, 200);
    cJSON_Delete(out);
    cJSON_Delete(req);
    const char *fns[] = {"sum", "count", "min", "max", "avg"};
    const char *ivs[] = {"1h", "2h", "6h", "1d", "2d"};
    const char *ms[] = {"m", "f"};
    for (size_t mi = 0; mi < 2; mi++)
        for (size_t fi = 0; fi < 5; fi++)
            for (size_t ii = 0; ii < 5; ii++)
                for (int gb = 0; gb < 2; gb++) {
                    snprintf(body, sizeof(body),
                             "{\"start\":%lld,\"end\":%lld,\"queries\":[{\"metric\":\"%s\","
                             "\"aggregator\":\"sum\",\"downsample\":\"%s-%s\"%s}]}",
                             (long long)DAY0 + 5 * 3600, (long long)DAY0 + 3 * 86400, ms[mi],
                             ivs[ii], fns[fi], gb ? ",\"tags\":{\"host\":\"*\"}" : "");
                    char *ref = run_o(s, body, false, true);
                    char *fast = run_o(s, body, false, false);
                    assert_true(strlen(ref) > 20);
                    if (strcmp(ref, fast))
                        fail_msg("%s\ngeneral %s\nraw-only %s", body, ref, fast);
                    if (mi == 1 && gb && !strstr(fast, "deploy"))
                        fail_msg("no annotation: %s", fast);
                    if (mi == 1 && gb && !strcmp(fns[fi], "avg") && !strcmp(ivs[ii], "2h") &&
                        !strstr(fast, "NaN"))
                        fail_msg("no NaN bucket: %s", fast);
                    free(ref);
                    free(fast);
                }
    /* fill policies (the raw-only source's buckets through the fill), over hours "m" has none
     * of (host c's gaps) and past the data's end */
    const char *fills[] = {"1h-avg-zero", "1h-sum-nan", "1h-count-null", "2h-max-zero",
                           "1d-min-nan"};
    for (size_t i = 0; i < sizeof(fills) / sizeof(fills[0]); i++)
        for (int gb = 0; gb < 2; gb++) {
            snprintf(body, sizeof(body),
                     "{\"start\":%lld,\"end\":%lld,\"queries\":[{\"metric\":\"m\","
                     "\"aggregator\":\"sum\",\"downsample\":\"%s\"%s}]}",
                     (long long)DAY0 + 3600, (long long)DAY0 + 4 * 86400, fills[i],
                     gb ? ",\"tags\":{\"host\":\"*\"}" : "");
            char *ref = run_o(s, body, false, true);
            char *fast = run_o(s, body, false, false);
            assert_true(strlen(ref) > 20);
            if (strcmp(ref, fast))
                fail_msg("%s\ngeneral %s\nraw-only %s", body, ref, fast);
            free(ref);
            free(fast);
        }
    /* a tag filter the scan applies row by row (no tag index, not a leading tag): only the
     * filtered series are folded */
    const char *filt[] = {"\"dc\":\"y\"", "\"dc\":\"x\"", "\"host\":\"c\""};
    char *all = NULL;
    for (size_t i = 0; i <= sizeof(filt) / sizeof(filt[0]); i++) {
        snprintf(body, sizeof(body),
                 "{\"start\":%lld,\"end\":%lld,\"queries\":[{\"metric\":\"m\","
                 "\"aggregator\":\"sum\",\"downsample\":\"1h-sum\",\"tags\":{%s}}]}",
                 (long long)DAY0, (long long)DAY0 + 86400,
                 i < sizeof(filt) / sizeof(filt[0]) ? filt[i] : "");
        char *ref = run_oi(s, body, false, true, 0);
        char *fast = run_oi(s, body, false, false, 0);
        if (strcmp(ref, fast))
            fail_msg("%s\ngeneral %s\nraw-only %s", body, ref, fast);
        if (i == sizeof(filt) / sizeof(filt[0])) /* no filter: every series */
            all = fast;
        else
            free(fast);
        free(ref);
    }
    for (size_t i = 0; i < sizeof(filt) / sizeof(filt[0]); i++) { /* the filters mattered */
        snprintf(body, sizeof(body),
                 "{\"start\":%lld,\"end\":%lld,\"queries\":[{\"metric\":\"m\","
                 "\"aggregator\":\"sum\",\"downsample\":\"1h-sum\",\"tags\":{%s}}]}",
                 (long long)DAY0, (long long)DAY0 + 86400, filt[i]);
        char *fast = run_oi(s, body, false, false, 0);
        if (!strcmp(strstr(fast, "\"dps\""), strstr(all, "\"dps\"")))
            fail_msg("filter %s: the unfiltered answer %s", filt[i], fast);
        free(fast);
    }
    free(all);
}

static void test_qrollup_usage_parse(void **state)
{
    (void)state;
    struct qspec *q = NULL;
    struct ct_err err = {0};
    const char *bad = "{\"start\":1,\"queries\":[{\"metric\":\"m\",\"aggregator\":\"sum\","
                      "\"rollupUsage\":\"ROLLUP_SOMETIMES\"}]}";
    assert_int_equal(qspec_parse_json(bad, strlen(bad), NOW, &q, &err), CT_EINVAL);
    assert_string_equal(err.msg, "Unrecognized rollup usage: ROLLUP_SOMETIMES");
    struct qspec_sub sub;
    memset(&sub, 0, sizeof(sub));
    assert_int_equal(qspec_parse_m("sum:1h-avg:rollup_raw:m", &sub, &err), CT_OK);
    assert_int_equal(sub.rollup_usage, QSPEC_ROLLUP_RAW);
    qspec_sub_clear(&sub);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_qrollup_equals_raw, setup, teardown),
        cmocka_unit_test_setup_teardown(test_qrollup_reads_the_rollup_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_qrollup_series_only_in_the_tables, setup, teardown),
        cmocka_unit_test_setup_teardown(test_qrollup_raw_only_equals_general, setup, teardown),
        cmocka_unit_test(test_qrollup_usage_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
