/* test_qexec.c - queries end to end on a real embedded store in a temporary directory (salted, 4
 * buckets scanned in parallel): write points through schema/tsdb.h, run /api/query and
 * /api/query/last logic, compare the JSON with answers worked out by hand from OpenTSDB's rules
 * (AggregationIterator interpolation and integer/float typing, SpanGroup tags, downsampling and
 * fill, RateSpan, group-by, explicitTags, filters, annotations, delete). Skipped when this build
 * has no embedded engine. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "query/qexec.h"
#include "query/qexec_int.h"
#include "query/qlast.h"
#include "query/qmeta.h"
#include "query/qspec.h"
#include "schema/meta.h"
#include "schema/rowkey.h"
#include "schema/tsdb.h"
#include "storage/coding.h"
#include "storage/wc.h"
#include "tests/lib/ctest.h"
#include "tests/lib/tsdb_fixture.h"

static const int64_t NOW = 1356998500000LL;

static void put(struct tsdb *t, const char *host, const char *dc, int64_t ts_s, bool is_int,
                int64_t iv, double dv)
{
    const char *k[2] = {"host", "dc"}, *v[2] = {host, dc};
    tsdb_fixture_put(t, "sys.cpu", k, v, 2,
                     is_int ? dpcodec_point_int(ts_s * 1000, false, iv)
                            : dpcodec_point_real(ts_s * 1000, false, dv));
}

static int setup(void **state)
{
    struct tsdb_fixture *f = tsdb_fixture_open(4);
    if (!f) {
        *state = NULL;
        return 0;
    }
    put(f->t, "a", "x", 1356998400, true, 10, 0);
    put(f->t, "a", "x", 1356998430, true, 30, 0);
    put(f->t, "b", "x", 1356998415, true, 20, 0);
    put(f->t, "b", "y", 1356998445, false, 0, 25.5);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    tsdb_fixture_close(*state);
    return 0;
}

/* Runs a query given as URL parameters "start&end&m" and returns the JSON (or the error message
 * prefixed by the status, e.g. "400 No such ..."). */
struct kv {
    const char *const *p;
};

static const char *get_param(void *arg, const char *name, size_t idx)
{
    const struct kv *kv = arg;
    size_t nl = strlen(name), seen = 0;
    for (size_t i = 0; kv->p[i]; i++) {
        if (strncmp(kv->p[i], name, nl) || (kv->p[i][nl] != '=' && kv->p[i][nl]))
            continue;
        if (seen++ == idx)
            return kv->p[i][nl] == '=' ? kv->p[i] + nl + 1 : "";
    }
    return NULL;
}

static unsigned scan_threads; /* 0 = default */
/* the executor every query here runs on: 3 helpers, 4 threads a query, busy when pool_busy */
static struct qpool *test_pool;
static bool pool_busy;

static bool pool_busy_check(void *arg)
{
    return *(bool *)arg;
}

static int pool_setup(void **state)
{
    (void)state;
    struct qpool_options o;
    qpool_options_init(&o);
    o.helpers = 3;
    o.threads = 4;
    o.busy = pool_busy_check;
    o.busy_arg = &pool_busy;
    struct ct_err err = {0};
    return qpool_new(&o, &test_pool, &err) == CT_OK ? 0 : -1;
}

static int pool_teardown(void **state)
{
    (void)state;
    qpool_free(test_pool);
    return 0;
}
static bool general_only; /* qexec_options.general_only */
static size_t held_max;   /* qexec_options.held_max_bytes */

static char *run_query(struct tsdb_fixture *f, const char *const *params, bool allow_delete)
{
    struct kv kv = {params};
    struct qspec *q = NULL;
    struct ct_err err = {0};
    char *out = malloc(512);
    if (qspec_parse_params(get_param, &kv, NOW, &q, &err) != CT_OK) {
        snprintf(out, 512, "400 %s", err.msg);
        return out;
    }
    struct qexec_options o;
    qexec_options_init(&o);
    o.allow_delete = allow_delete;
    o.scan_threads = scan_threads;
    o.pool = test_pool;
    o.general_only = general_only;
    o.held_max_bytes = held_max;
    enum qexec_status st;
    char *json;
    if (tsdb_fixture_run(f->t, q, &o, &json, &st, &err) != CT_OK) {
        snprintf(out, 512, "%d %s", (int)st, err.msg);
        return out;
    }
    free(out);
    return json;
}

static void test_qexec_answers_match_opentsdb(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    static const struct {
        const char *p[8];
        const char *want;
    } cases[] = {
        /* one group: A is interpolated at 415 (10 + 15*20/30 = 20); C's float makes every
         * point a double while it is a current or next value */
        {{"start=1356998400", "end=1356998500", "m=sum:sys.cpu"},
         "[{\"metric\":\"sys.cpu\",\"tags\":{},\"aggregateTags\":[\"dc\",\"host\"],\"dps\":{"
         "\"1356998400\":10.0,\"1356998415\":40.0,\"1356998430\":30.0,\"1356998445\":25.5}}]"},
        {{"start=1356998400", "end=1356998500", "m=sum:sys.cpu{host=*}"},
         "[{\"metric\":\"sys.cpu\",\"tags\":{\"dc\":\"x\",\"host\":\"a\"},\"aggregateTags\":[],"
         "\"dps\":{\"1356998400\":10,\"1356998430\":30}},{\"metric\":\"sys.cpu\",\"tags\":{"
         "\"host\":\"b\"},\"aggregateTags\":[\"dc\"],\"dps\":{\"1356998415\":20.0,"
         "\"1356998445\":25.5}}]"},
        {{"start=1356998400", "end=1356998500", "m=sum:sys.cpu{host=c}"},
         "400 No such name for 'tagv': 'c'"},
        {{"start=1356998400", "end=1356998500", "m=sum:nope"},
         "400 No such name for 'metrics': 'nope'"},
        {{"start=1356998400", "end=1356998500", "m=sum:1m-avg:sys.cpu{dc=x}"},
         "[{\"metric\":\"sys.cpu\",\"tags\":{\"dc\":\"x\"},\"aggregateTags\":[\"host\"],\"dps\":{"
         "\"1356998400\":40.0}}]"},
        /* RateSpan's first rate (against 0 at time zero) is never emitted */
        {{"start=1356998400", "end=1356998500", "m=sum:rate:sys.cpu{host=a}"},
         "[{\"metric\":\"sys.cpu\",\"tags\":{\"dc\":\"x\",\"host\":\"a\"},\"aggregateTags\":[],"
         "\"dps\":{\"1356998430\":0.6666666666666666}}]"},
        {{"start=1356998400", "end=1356998500", "arrays", "ms", "m=none:sys.cpu{dc=x}"},
         "[{\"metric\":\"sys.cpu\",\"tags\":{\"dc\":\"x\",\"host\":\"a\"},\"aggregateTags\":[],"
         "\"dps\":[[1356998400000,10],[1356998430000,30]]},{\"metric\":\"sys.cpu\",\"tags\":{"
         "\"dc\":\"x\",\"host\":\"b\"},\"aggregateTags\":[],\"dps\":[[1356998415000,20]]}]"},
        {{"start=1356998400", "end=1356998500", "m=sum:explicit_tags:sys.cpu{host=a}"}, "[]"},
        {{"start=1356998400", "end=1356998500", "m=sum:sys.cpu{}{dc=not_key()}"}, "[]"},
        {{"start=1356998400", "end=1356998500", "m=sum:sys.cpu{}{host=regexp(^b$)}"},
         "[{\"metric\":\"sys.cpu\",\"tags\":{\"host\":\"b\"},\"aggregateTags\":[\"dc\"],\"dps\":{"
         "\"1356998415\":20.0,\"1356998445\":25.5}}]"},
        {{"start=1356998400", "end=1356998580", "m=sum:1m-sum-null:sys.cpu{host=a}"},
         "[{\"metric\":\"sys.cpu\",\"tags\":{\"dc\":\"x\",\"host\":\"a\"},\"aggregateTags\":[],"
         "\"dps\":{\"1356998400\":40.0,\"1356998460\":null,\"1356998520\":null,"
         "\"1356998580\":null}}]"},
        {{"start=1356998401", "end=1356998429", "m=sum:sys.cpu{host=a}"},
         "[{\"metric\":\"sys.cpu\",\"tags\":{\"dc\":\"x\",\"host\":\"a\"},\"aggregateTags\":[],"
         "\"dps\":{}}]"},
        {{"start=1356998400", "end=1356998500", "m=max:sys.cpu{host=a|b}{dc=x}"},
         "[{\"metric\":\"sys.cpu\",\"tags\":{\"dc\":\"x\",\"host\":\"a\"},\"aggregateTags\":[],"
         "\"dps\":{\"1356998400\":10,\"1356998430\":30}},{\"metric\":\"sys.cpu\",\"tags\":{"
         "\"dc\":\"x\",\"host\":\"b\"},\"aggregateTags\":[],\"dps\":{\"1356998415\":20}}]"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *got = run_query(f, cases[i].p, false);
        if (strcmp(got, cases[i].want))
            fail_msg("case %zu:\n got  %s\n want %s", i, got, cases[i].want);
        free(got);
    }
}

static void test_qexec_annotations_and_tsuids_in_results(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    const char *p0[] = {"start=1356998400", "end=1356998500", "show_tsuids",
                        "m=sum:sys.cpu{host=a}", NULL};
    char *got = run_query(f, p0, false);
    cJSON *doc = cJSON_Parse(got);
    free(got);
    const cJSON *ts = cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(doc, 0), "tsuids"), 0);
    assert_true(cJSON_IsString(ts));
    char tsuid[64];
    snprintf(tsuid, sizeof(tsuid), "%s", ts->valuestring);
    cJSON_Delete(doc);
    /* a series annotation and a global one */
    char body[256];
    snprintf(body, sizeof(body),
             "{\"tsuid\":\"%s\",\"startTime\":1356998410,\"description\":\"deploy\"}", tsuid);
    cJSON *req = cJSON_Parse(body), *out = NULL;
    int status = 0;
    struct ct_err err = {0};
    assert_int_equal(qmeta_annotation(f->t, QMETA_POST, req, &out, &status, &err), CT_OK);
    assert_int_equal(status, 200);
    cJSON_Delete(out);
    cJSON_Delete(req);
    req = cJSON_Parse("{\"startTime\":1356998420,\"notes\":\"global\"}");
    assert_int_equal(qmeta_annotation(f->t, QMETA_POST, req, &out, &status, &err), CT_OK);
    cJSON_Delete(out);
    cJSON_Delete(req);
    const char *p1[] = {"start=1356998400", "end=1356998500", "global_annotations",
                        "m=sum:sys.cpu{host=a}", NULL};
    got = run_query(f, p1, false);
    char want[768];
    snprintf(want, sizeof(want),
             "\"annotations\":[{\"tsuid\":\"%s\",\"description\":\"deploy\",\"notes\":\"\","
             "\"endTime\":0,\"startTime\":1356998410}],\"globalAnnotations\":[{\"tsuid\":\"\","
             "\"description\":\"\",\"notes\":\"global\",\"endTime\":0,\"startTime\":"
             "1356998420}],\"dps\":{\"1356998400\":10,\"1356998430\":30}",
             tsuid);
    if (!strstr(got, want))
        fail_msg("got %s\nwant ...%s...", got, want);
    free(got);
    /* GET the annotation back, then 404 after DELETE */
    snprintf(body, sizeof(body), "{\"tsuid\":\"%s\",\"start_time\":\"1356998410\"}", tsuid);
    req = cJSON_Parse(body);
    assert_int_equal(qmeta_annotation(f->t, QMETA_GET, req, &out, &status, &err), CT_OK);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(out, "description")->valuestring,
                        "deploy");
    cJSON_Delete(out);
    assert_int_equal(qmeta_annotation(f->t, QMETA_DELETE, req, &out, &status, &err), CT_OK);
    assert_int_equal(status, 204);
    assert_int_not_equal(qmeta_annotation(f->t, QMETA_GET, req, &out, &status, &err), CT_OK);
    assert_int_equal(status, 404);
    assert_string_equal(err.msg, "Unable to locate annotation in storage");
    cJSON_Delete(req);
}

static void test_qlast_finds_the_newest_point(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    const char *body = "{\"queries\":[{\"metric\":\"sys.cpu\",\"tags\":{\"host\":\"b\"}}],"
                       "\"resolveNames\":true,\"backScan\":2}";
    struct qlast_req *r = NULL;
    struct ct_err err = {0};
    assert_int_equal(qlast_parse_json(body, strlen(body), &r, &err), CT_OK);
    struct tsdb_fixture_buf b = {0};
    struct qjson *j = qjson_new(tsdb_fixture_sink, &b, 0);
    enum qexec_status st;
    assert_int_equal(qlast_run(f->t, r, NOW, j, &st, &err), CT_OK);
    assert_int_equal(qjson_flush(j), CT_OK);
    /* two series have host=b: each gives its newest point, value as a string */
    assert_non_null(strstr(b.data, "\"metric\":\"sys.cpu\",\"timestamp\":1356998415000,"
                                   "\"value\":\"20\",\"tags\":{"));
    assert_non_null(strstr(b.data, "\"timestamp\":1356998445000,\"value\":\"25.5\""));
    qjson_free(j);
    free(b.data);
    qlast_req_free(r);
}

/* Runs a /api/query/last JSON body at NOW; returns the JSON answer (free it). */
static char *run_last(struct tsdb_fixture *f, const char *body)
{
    struct qlast_req *r = NULL;
    struct ct_err err = {0};
    assert_int_equal(qlast_parse_json(body, strlen(body), &r, &err), CT_OK);
    struct tsdb_fixture_buf b = {0};
    struct qjson *j = qjson_new(tsdb_fixture_sink, &b, 0);
    enum qexec_status st;
    if (qlast_run(f->t, r, NOW, j, &st, &err) != CT_OK)
        fail_msg("qlast_run: %s", err.msg);
    assert_int_equal(qjson_flush(j), CT_OK);
    qjson_free(j);
    qlast_req_free(r);
    return b.data;
}

/* Writes a point of sys.old{host,dc} and records its hour in the newest-hour index (as the TSD's
 * writer does); index_s (when not 0) records that hour instead. */
static void put_indexed(struct tsdb_fixture *f, const char *host, const char *dc, int64_t ts_s,
                        int64_t v, int64_t index_s)
{
    const char *k[2] = {"host", "dc"}, *vv[2] = {host, dc};
    tsdb_fixture_put(f->t, "sys.old", k, vv, 2, dpcodec_point_int(ts_s * 1000, false, v));
    uint8_t ts[ROWKEY_MAX_TSUID];
    size_t tl;
    struct ct_err err = {0};
    assert_int_equal(tsdb_series_resolve(f->t, "sys.old", k, vv, 2, ts, sizeof(ts), &tl, &err),
                     CT_OK);
    struct meta_hour mh = {ts, tl, rowkey_base_hour_s(index_s ? index_s : ts_s)};
    assert_int_equal(meta_hour_put(f->t, &mh, 1, WC_DURABILITY_USE_DEFAULT, &err), CT_OK);
}

/* The newest point of a series with no point in the last 24 hours, found without backScan through
 * the newest-hour index (a series that stopped reporting days ago still has a last point), and
 * not with a backScan that does not reach it; a metric without index entries (written before the
 * index) is still read by the back scan. */
static void test_qlast_index_finds_the_newest_point_of_any_age(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    const int64_t H = NOW / 1000 - NOW / 1000 % 3600, D = 86400;
    put_indexed(f, "o1", "q", H - 5 * D + 100, 7, 0);
    put_indexed(f, "o1", "q", H - 5 * D + 50, 6, 0);
    put_indexed(f, "o1", "q", H - 6 * D, 5, 0); /* an older hour: the index keeps the newest */
    /* o2's indexed hour holds no point (deleted): the hours below it are read */
    put_indexed(f, "o2", "q", H - 3 * D + 10, 8, H - 2 * D);
    put_indexed(f, "o3", "other", H - 4 * D, 9, 0);
    /* recent series, read by the back scan over the hours their index entries span: o5 has its
     * point in its indexed hour; o4's indexed hour (the newest) holds none, its point is 2 h
     * below, under the scanned window */
    put_indexed(f, "o5", "q", H - 3600 + 7, 12, 0);
    put_indexed(f, "o4", "q", H - 2 * 3600 + 5, 11, H);
    char *got = run_last(f, "{\"queries\":[{\"metric\":\"sys.old\",\"tags\":{\"dc\":\"q\"}}],"
                            "\"resolveNames\":true}");
    cJSON *doc = cJSON_Parse(got);
    assert_non_null(doc);
    if (cJSON_GetArraySize(doc) != 4)
        fail_msg("want o1, o2, o4 and o5, got %s", got);
    for (int i = 0; i < 4; i++) {
        const cJSON *it = cJSON_GetArrayItem(doc, i);
        const char *host = cJSON_GetObjectItemCaseSensitive(
                               cJSON_GetObjectItemCaseSensitive(it, "tags"), "host")
                               ->valuestring;
        double ts = cJSON_GetObjectItemCaseSensitive(it, "timestamp")->valuedouble;
        const char *v = cJSON_GetObjectItemCaseSensitive(it, "value")->valuestring;
        if (!strcmp(host, "o1")) {
            assert_true(ts == (double)(H - 5 * D + 100) * 1000);
            assert_string_equal(v, "7");
        } else if (!strcmp(host, "o4")) {
            assert_true(ts == (double)(H - 2 * 3600 + 5) * 1000);
            assert_string_equal(v, "11");
        } else if (!strcmp(host, "o5")) {
            assert_true(ts == (double)(H - 3600 + 7) * 1000);
            assert_string_equal(v, "12");
        } else {
            assert_string_equal(host, "o2");
            assert_true(ts == (double)(H - 3 * D + 10) * 1000);
            assert_string_equal(v, "8");
        }
    }
    /* the TSUID form, through the index too */
    const char *tp = strstr(got, "\"tsuid\":\"");
    assert_non_null(tp);
    char body[256];
    snprintf(body, sizeof(body), "{\"queries\":[{\"tsuids\":[\"%.*s\"]}]}",
             (int)strcspn(tp + 9, "\""), tp + 9);
    cJSON_Delete(doc);
    free(got);
    got = run_last(f, body);
    assert_non_null(strstr(got, "\"timestamp\":"));
    free(got);
    /* a backScan of 24 hours reads only those hours, as OpenTSDB's back scan: the recent two */
    got = run_last(f, "{\"queries\":[{\"metric\":\"sys.old\"}],\"backScan\":24}");
    cJSON *bs = cJSON_Parse(got);
    assert_int_equal(cJSON_GetArraySize(bs), 2);
    cJSON_Delete(bs);
    assert_non_null(strstr(got, "\"value\":\"12\""));
    assert_non_null(strstr(got, "\"value\":\"11\""));
    free(got);
    /* sys.cpu has no index entry (written without the TSD's writer): the back scan finds it */
    got = run_last(f, "{\"queries\":[{\"metric\":\"sys.cpu\",\"tags\":{\"host\":\"b\"}}]}");
    assert_non_null(strstr(got, "\"timestamp\":1356998415000,\"value\":\"20\""));
    assert_non_null(strstr(got, "\"timestamp\":1356998445000,\"value\":\"25.5\""));
    free(got);
}

static void test_qlast_metric_query_takes_each_series_newest_row_with_a_point(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    /* NOW lies in hour H; backScan 3 covers hours H-3h .. H. Per series (dc=q unless said):
     *   l0: points in H-3h .. H          -> its point in H
     *   l1: points in H-3h, H-2h         -> its newest in H-2h
     *   l2: points in H-1h, and in H only an annotation (a row without points) -> its newest
 *       in H-1h
     *   l3: a point in H-5h only (outside the window) -> absent
     *   l4: dc=other                     -> filtered out */
    const int64_t H = NOW / 1000 - NOW / 1000 % 3600;
    const char *k[2] = {"host", "dc"};
    for (int h = 3; h >= 0; h--) {
        const char *v0[2] = {"l0", "q"};
        tsdb_fixture_put(f->t, "sys.lat", k, v0, 2,
                         dpcodec_point_int((H - h * 3600 + 10 + h) * 1000, false, 100 + h));
        tsdb_fixture_put(f->t, "sys.lat", k, v0, 2,
                         dpcodec_point_int((H - h * 3600 + 5) * 1000, false, 200 + h));
    }
    const char *v1[2] = {"l1", "q"}, *v2[2] = {"l2", "q"}, *v3[2] = {"l3", "q"};
    const char *v4[2] = {"l4", "other"};
    tsdb_fixture_put(f->t, "sys.lat", k, v1, 2,
                     dpcodec_point_int((H - 3 * 3600) * 1000, false, 13));
    tsdb_fixture_put(f->t, "sys.lat", k, v1, 2, dpcodec_point_real((H - 7000) * 1000, false, 1.5));
    tsdb_fixture_put(f->t, "sys.lat", k, v1, 2, dpcodec_point_int((H - 7100) * 1000, false, 12));
    tsdb_fixture_put(f->t, "sys.lat", k, v2, 2, dpcodec_point_int((H - 60) * 1000, false, 22));
    tsdb_fixture_put(f->t, "sys.lat", k, v2, 2, dpcodec_point_int((H - 3000) * 1000, false, 21));
    tsdb_fixture_put(f->t, "sys.lat", k, v3, 2, dpcodec_point_int((H - 5 * 3600) * 1000, false, 3));
    tsdb_fixture_put(f->t, "sys.lat", k, v4, 2, dpcodec_point_int((H - 10) * 1000, false, 4));
    /* l2's annotation in hour H: its TSUID from a tsuid-resolving query */
    char *got = run_last(f, "{\"queries\":[{\"metric\":\"sys.lat\",\"tags\":{\"host\":\"l2\"}}],"
                            "\"backScan\":3}");
    const char *tp = strstr(got, "\"tsuid\":\"");
    assert_non_null(tp);
    char tsuid[64];
    snprintf(tsuid, sizeof(tsuid), "%.*s", (int)strcspn(tp + 9, "\""), tp + 9);
    free(got);
    char body[256];
    snprintf(body, sizeof(body), "{\"tsuid\":\"%s\",\"startTime\":%lld,\"description\":\"x\"}",
             tsuid, (long long)(H + 30));
    cJSON *req = cJSON_Parse(body), *out = NULL;
    int status = 0;
    struct ct_err err = {0};
    assert_int_equal(qmeta_annotation(f->t, QMETA_POST, req, &out, &status, &err), CT_OK);
    cJSON_Delete(out);
    cJSON_Delete(req);
    for (int pass = 0; pass < 2; pass++) {
        /* pass 1: rows in files and in the memstore at once (the same answer) */
        got = run_last(f, "{\"queries\":[{\"metric\":\"sys.lat\",\"tags\":{\"dc\":\"q\"}}],"
                          "\"resolveNames\":true,\"backScan\":3}");
        cJSON *doc = cJSON_Parse(got);
        assert_non_null(doc);
        assert_int_equal(cJSON_GetArraySize(doc), 3);
        long long want_ts[3] = {H + 10, H - 7000, H - 60};
        const char *want_v[3] = {"100", "1.5", "22"};
        const char *want_h[3] = {"l0", "l1", "l2"};
        for (int i = 0; i < 3; i++) {
            bool found = false;
            for (int e = 0; e < 3; e++) {
                const cJSON *it = cJSON_GetArrayItem(doc, e);
                const cJSON *tags = cJSON_GetObjectItemCaseSensitive(it, "tags");
                const cJSON *host = cJSON_GetObjectItemCaseSensitive(tags, "host");
                if (!host || strcmp(host->valuestring, want_h[i]))
                    continue;
                found = true;
                assert_true(cJSON_GetObjectItemCaseSensitive(it, "timestamp")->valuedouble ==
                            (double)want_ts[i] * 1000);
                assert_string_equal(cJSON_GetObjectItemCaseSensitive(it, "value")->valuestring,
                                    want_v[i]);
            }
            if (!found)
                fail_msg("pass %d: no %s in %s", pass, want_h[i], got);
        }
        cJSON_Delete(doc);
        free(got);
        /* a TSUID query first, then a metric query naming the same series: l2 is answered
         * by each (as OpenTSDB's list of results keeps both), the same point both times */
        snprintf(body, sizeof(body),
                 "{\"queries\":[{\"tsuids\":[\"%s\"]},{\"metric\":\"sys.lat\",\"tags\":{\"host\":"
                 "\"l2\"}}],\"backScan\":3}",
                 tsuid);
        got = run_last(f, body);
        char one[240], two[512];
        snprintf(one, sizeof(one), "{\"timestamp\":%lld000,\"value\":\"22\",\"tsuid\":\"%s\"}",
                 (long long)(H - 60), tsuid);
        snprintf(two, sizeof(two), "[%s,%s]", one, one);
        assert_string_equal(got, two);
        free(got);
        /* backScan 1: l1 (newest in H-2h) is outside */
        got = run_last(f, "{\"queries\":[{\"metric\":\"sys.lat\",\"tags\":{\"host\":\"l1\"}}],"
                          "\"backScan\":1}");
        assert_string_equal(got, "[]");
        free(got);
        if (pass == 0) {
            assert_int_equal(wc_table_flush(f->s, "tsdb", &err), CT_OK);
            tsdb_fixture_put(f->t, "sys.lat", k, v1, 2,
                             dpcodec_point_int((H - 3 * 3600 + 1) * 1000, false, 14));
        }
    }
}

/* SuggestRpc: a max that is not above 0 (or none) means UniqueId's default of 25 names; only a
 * max that is not an integer is an error. */
static void test_qmeta_suggest_max_below_one_is_the_default_25(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    struct ct_err err = {0};
    int status = 0;
    cJSON *out = NULL, *req = cJSON_Parse("{\"metric\":[]}");
    cJSON *names = cJSON_GetObjectItemCaseSensitive(req, "metric");
    for (int i = 0; i < 30; i++) {
        char n[16];
        snprintf(n, sizeof(n), "zz.m%02d", i);
        cJSON_AddItemToArray(names, cJSON_CreateString(n));
    }
    assert_int_equal(qmeta_uid_assign(f->t, req, &out, &status, &err), CT_OK);
    assert_int_equal(status, 200);
    cJSON_Delete(out);
    cJSON_Delete(req);
    static const struct {
        const char *req;
        int n; /* names answered, or -1: a 400 */
    } cases[] = {
        {"{\"type\":\"metrics\",\"q\":\"zz.\"}", 25},
        {"{\"type\":\"metrics\",\"q\":\"zz.\",\"max\":\"0\"}", 25},
        {"{\"type\":\"metrics\",\"q\":\"zz.\",\"max\":\"-3\"}", 25},
        {"{\"type\":\"metrics\",\"q\":\"zz.\",\"max\":\"\"}", 25},
        {"{\"type\":\"metrics\",\"q\":\"zz.\",\"max\":\"5\"}", 5},
        {"{\"type\":\"metrics\",\"q\":\"zz.\",\"max\":\"30\"}", 30},
        {"{\"type\":\"metrics\",\"q\":\"zz.\",\"max\":\"x\"}", -1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        req = cJSON_Parse(cases[i].req);
        out = NULL;
        int rc = qmeta_suggest(f->t, req, &out, &status, &err);
        if (cases[i].n < 0) {
            assert_int_equal(rc, CT_EINVAL);
            assert_int_equal(status, 400);
            assert_string_equal(err.msg, "Unable to parse 'max' as a number");
        } else {
            assert_int_equal(rc, CT_OK);
            assert_int_equal(cJSON_GetArraySize(out), cases[i].n);
            assert_string_equal(cJSON_GetArrayItem(out, 0)->valuestring, "zz.m00");
        }
        cJSON_Delete(out);
        cJSON_Delete(req);
    }
}

static void test_qmeta_suggest_lookup_assign(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    struct ct_err err = {0};
    cJSON *out = NULL, *req = cJSON_Parse("{\"type\":\"tagv\",\"q\":\"\",\"max\":\"10\"}");
    int status = 0;
    assert_int_equal(qmeta_suggest(f->t, req, &out, &status, &err), CT_OK);
    char *s = cJSON_PrintUnformatted(out);
    assert_string_equal(s, "[\"a\",\"b\",\"x\",\"y\"]");
    free(s);
    cJSON_Delete(out);
    cJSON_Delete(req);
    req = cJSON_Parse("{\"type\":\"nope\"}");
    assert_int_equal(qmeta_suggest(f->t, req, &out, &status, &err), CT_EINVAL);
    assert_int_equal(status, 400);
    assert_string_equal(err.msg, "Invalid 'type' parameter:nope");
    cJSON_Delete(req);
    req = cJSON_Parse("{\"m\":\"sys.cpu{host=b}\",\"limit\":\"1\"}");
    assert_int_equal(qmeta_lookup(f->t, NULL, req, NOW, &out, &status, &err), CT_OK);
    /* SearchRpc: totalResults is the count TimeSeriesLookup found, which stops at the limit */
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(out, "totalResults")->valueint, 1);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(out, "results")), 1);
    cJSON_Delete(out);
    cJSON_Delete(req);
    req = cJSON_Parse("{\"metric\":[\"new.metric\",\"sys.cpu\"]}");
    assert_int_equal(qmeta_uid_assign(f->t, req, &out, &status, &err), CT_OK);
    assert_int_equal(status, 400); /* sys.cpu exists */
    assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(out, "metric"), "new.metric")));
    assert_non_null(strstr(cJSON_GetObjectItemCaseSensitive(
                               cJSON_GetObjectItemCaseSensitive(out, "metric_errors"), "sys.cpu")
                               ->valuestring,
                           "Name already exists with UID"));
    cJSON_Delete(out);
    cJSON_Delete(req);
}

static void test_qexec_delete_removes_the_rows_read(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    const char *p[] = {"start=1356998400", "end=1356998500", "m=sum:sys.cpu{host=b}", NULL};
    struct kv kv = {p};
    struct qspec *q = NULL;
    struct ct_err err = {0};
    assert_int_equal(qspec_parse_params(get_param, &kv, NOW, &q, &err), CT_OK);
    q->delete_data = true;
    struct tsdb_fixture_buf b = {0};
    struct qjson *j = qjson_new(tsdb_fixture_sink, &b, 0);
    struct qexec_options o;
    qexec_options_init(&o);
    o.allow_delete = true;
    enum qexec_status st;
    assert_int_equal(qexec_run(f->t, q, &o, j, &st, NULL, &err), CT_OK);
    assert_int_equal(qjson_flush(j), CT_OK);
    assert_non_null(strstr(b.data, "\"1356998415\":20.0")); /* answered from what was read */
    qjson_free(j);
    free(b.data);
    qspec_free(q);
    char *got = run_query(f, p, false);
    assert_string_equal(got, "[]");
    free(got);
    const char *pa[] = {"start=1356998400", "end=1356998500", "m=sum:sys.cpu{host=a}", NULL};
    got = run_query(f, pa, false);
    assert_non_null(strstr(got, "\"1356998430\":30"));
    free(got);
}

static void test_qexec_time_slices_keep_points_in_order(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    /* six hours of one series: with 16 threads over 4 buckets each bucket's hours are split
     * into slices scanned in parallel, then stitched back in time order */
    for (int k = 0; k < 6; k++)
        put(f->t, "c", "z", 1356998400 + k * 3600 + 5, true, k + 1, 0);
    const char *p[] = {"start=1356998400", "end=1357020000", "m=sum:sys.cpu{host=c}", NULL};
    const char *want = "[{\"metric\":\"sys.cpu\",\"tags\":{\"dc\":\"z\",\"host\":\"c\"},"
                       "\"aggregateTags\":[],\"dps\":{\"1356998405\":1,\"1357002005\":2,"
                       "\"1357005605\":3,\"1357009205\":4,\"1357012805\":5,\"1357016405\":6}}]";
    for (unsigned th = 1; th <= 16; th *= 4) {
        scan_threads = th;
        char *got = run_query(f, p, false);
        if (strcmp(got, want))
            fail_msg("threads %u: got %s", th, got);
        free(got);
    }
    scan_threads = 0;
}

static void test_qexec_many_series_each_keep_their_points(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    /* 1,000 series over two hours (about 250 per salt bucket: each scan's series table grows
     * past its first size and rehashes while the newer hour is read, and the older hour's rows
     * must then find their series), each with its own values: every series must come out
     * once, with its own two points */
    enum {
        NS = 1000
    };
    for (int h = 0; h < NS; h++) {
        char host[16];
        snprintf(host, sizeof(host), "s%d", h);
        put(f->t, host, "w", 1356998410, true, h, 0);
        put(f->t, host, "w", 1357002020, true, 2 * h + 1, 0);
    }
    const char *p[] = {"start=1356998400", "end=1357003000", "m=none:sys.cpu{dc=w}", NULL};
    for (unsigned th = 1; th <= 4; th *= 4) {
        scan_threads = th;
        char *got = run_query(f, p, false);
        cJSON *a = cJSON_Parse(got);
        assert_non_null(a);
        assert_int_equal(cJSON_GetArraySize(a), NS);
        static bool seen[NS];
        memset(seen, 0, sizeof(seen));
        for (cJSON *g = a->child; g; g = g->next) {
            const char *host =
                cJSON_GetObjectItem(cJSON_GetObjectItem(g, "tags"), "host")->valuestring;
            int h = atoi(host + 1);
            assert_true(h >= 0 && h < NS && !seen[h]);
            seen[h] = true;
            cJSON *dps = cJSON_GetObjectItem(g, "dps");
            assert_int_equal(cJSON_GetArraySize(dps), 2);
            assert_int_equal(cJSON_GetObjectItem(dps, "1356998410")->valueint, h);
            assert_int_equal(cJSON_GetObjectItem(dps, "1357002020")->valueint, 2 * h + 1);
        }
        cJSON_Delete(a);
        free(got);
    }
    scan_threads = 0;
}

/* The salted layout (8 buckets, read bucket by bucket) and the unsalted one (one bucket, read in
 * time slices on 4 threads, whole on 1) answer byte for byte the same, on realistic values:
 * 2-decimal gauges, byte gauges near 5e9 with large steps, counters close to INT64_MAX that wrap
 * to small values. 200 series x 2 hours at 10 s: each scan cuts many series buffers from several
 * point slabs, and the raw answer is checked point by point against what was written (a buffer
 * cut twice, or a slab handed back while in use, shows up there and under ASan). */
static int64_t gen_next(uint64_t *st)
{
    *st = *st * 6364136223846793005ULL + 1442695040888963407ULL;
    return (int64_t)(*st >> 33);
}

static void put_realistic(struct tsdb *t, int nser, int64_t t0_s, int npts)
{
    const char *k[2] = {"host", "dc"};
    for (int h = 0; h < nser; h++) {
        char host[16], dc[8];
        snprintf(host, sizeof(host), "s%d", h);
        snprintf(dc, sizeof(dc), "d%d", h % 4);
        const char *v[2] = {host, dc};
        uint64_t st = (uint64_t)h + 1;
        int64_t bytes = 5000000000LL + gen_next(&st) % 100000000;
        int64_t ctr = INT64_MAX - 1000000000000LL + gen_next(&st) % 1000000000;
        for (int i = 0; i < npts; i++) {
            int64_t ts = (t0_s + 10 * i) * 1000;
            double g2 = (double)(gen_next(&st) % 10000) / 100;
            if (h % 50 == 3 && i % 97 == 5)
                g2 = NAN; /* a few NaN values: skipped by the downsampling functions */
            tsdb_fixture_put(t, "r.g2", k, v, 2, dpcodec_point_real(ts, false, g2));
            bytes += gen_next(&st) % 200000001 - 100000000;
            tsdb_fixture_put(t, "r.bytes", k, v, 2, dpcodec_point_int(ts, false, bytes));
            int64_t step = 1000000000 + gen_next(&st) % 9000000000LL;
            ctr = ctr > INT64_MAX - step ? step - (INT64_MAX - ctr) : ctr + step; /* wraps */
            tsdb_fixture_put(t, "r.ctr", k, v, 2, dpcodec_point_int(ts, false, ctr));
        }
    }
}

static void test_qexec_salted_and_unsalted_answer_alike(void **state)
{
    (void)state;
    struct tsdb_fixture *fs = tsdb_fixture_open(8), *fu = tsdb_fixture_open(0);
    if (!fs || !fu) {
        tsdb_fixture_close(fs);
        tsdb_fixture_close(fu);
        skip();
    }
    enum {
        NS = 200,
        NP = 720
    };
    const int64_t t0 = 1356998400;
    put_realistic(fs->t, NS, t0, NP);
    put_realistic(fu->t, NS, t0, NP);
    static const char *const ms[] = {
        "m=sum:1m-avg:r.g2",
        "m=max:5m-max:r.bytes{host=*,dc=d1}",
        "m=sum:1m-avg:rate{counter}:r.ctr{dc=*}",
        "m=sum:rate{counter}:r.ctr",
        "m=sum:r.bytes",
        "m=avg:10m-max:r.g2{dc=*}",
        "m=sum:1m-min:r.g2{dc=*}",
        "m=sum:30s-count:r.g2",
        "m=max:rate:r.bytes{dc=*}",
        "m=none:r.ctr",
        "m=none:r.bytes",
    };
    for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++) {
        const char *p[] = {"start=1356998400", "end=1357005600", ms[i], NULL};
        char *ref = NULL;
        for (unsigned th = 1; th <= 8; th *= 2) {
            /* 1 and 4 threads, then 8: the general path (no in-scan downsampling) on 4 */
            scan_threads = th == 8 ? 4 : th;
            general_only = th == 8;
            if (th == 2)
                continue;
            char *a = run_query(fs, p, false), *b = run_query(fu, p, false);
            assert_true(a[0] == '[' && strlen(a) > 1000);
            assert_string_equal(a, b);
            if (ref)
                assert_string_equal(ref, a);
            free(b);
            if (ref)
                free(a);
            else
                ref = a;
        }
        general_only = false;
        if (!strcmp(ms[i], "m=none:r.bytes")) { /* every point as written (exact in a double) */
            cJSON *arr = cJSON_Parse(ref);
            assert_non_null(arr);
            assert_int_equal(cJSON_GetArraySize(arr), NS);
            for (cJSON *g = arr->child; g; g = g->next) {
                int h = atoi(
                    cJSON_GetObjectItem(cJSON_GetObjectItem(g, "tags"), "host")->valuestring + 1);
                uint64_t st = (uint64_t)h + 1;
                int64_t bytes = 5000000000LL + gen_next(&st) % 100000000;
                (void)gen_next(&st);
                cJSON *d = cJSON_GetObjectItem(g, "dps")->child;
                for (int k = 0; k < NP; k++, d = d->next) {
                    (void)gen_next(&st);
                    bytes += gen_next(&st) % 200000001 - 100000000;
                    (void)gen_next(&st);
                    assert_non_null(d);
                    assert_int_equal(atoll(d->string), t0 + 10 * k);
                    assert_true(d->valuedouble == (double)bytes);
                }
                assert_null(d);
            }
            cJSON_Delete(arr);
        }
        free(ref);
    }
    scan_threads = 0;
    tsdb_fixture_close(fs);
    tsdb_fixture_close(fu);
}

/* A query of several sub-queries answers the same bytes as its sub-queries asked one by one,
 * their answers joined: each sub-query but the last is written into memory as soon as its scan
 * is done (its series then freed), the last one straight out, on one thread and on four (the
 * groups of a mid-size sub-query rendered in parallel), global annotations in every series;
 * and with at most 1 byte held (the first sub-query's answer held, the others keeping their
 * series to the end). A sub-query that fails after others were written answers its error and
 * nothing else. */
static void test_qexec_sub_queries_answer_as_their_own_queries_joined(void **state)
{
    (void)state;
    struct tsdb_fixture *f = tsdb_fixture_open(4);
    if (!f)
        skip();
    put_realistic(f->t, 60, 1356998400, 720);
    cJSON *req = cJSON_Parse("{\"startTime\":1356998420,\"notes\":\"global\"}"), *out = NULL;
    int status = 0;
    struct ct_err err = {0};
    assert_int_equal(qmeta_annotation(f->t, QMETA_POST, req, &out, &status, &err), CT_OK);
    cJSON_Delete(out);
    cJSON_Delete(req);
    static const char *const ms[] = {
        "m=none:r.bytes{host=s1|s2}",  /* 2 series */
        "m=sum:r.g2{dc=*}",            /* 4 groups of 43,200 points in all: in parallel */
        "m=sum:r.ctr{host=s3}{dc=d0}", /* no series: nothing in the answer */
        "m=max:1m-max:r.ctr{dc=*}",    /* 4 groups downsampled in the scan */
        "m=sum:r.bytes{dc=*}",         /* the last, straight out: in parallel too */
    };
    enum { NM = sizeof(ms) / sizeof(ms[0]) };
    for (unsigned run = 0; run < 3; run++) {
        scan_threads = run == 0 ? 1 : 4;
        held_max = run == 2 ? 1 : 0;
        char *joined = calloc(1, 1);
        size_t jl = 0;
        for (size_t i = 0; i < NM; i++) {
            const char *p[] = {"start=1356998400", "end=1357005600", "global_annotations", ms[i],
                               NULL};
            char *a = run_query(f, p, false);
            size_t al = strlen(a);
            assert_true(al >= 2 && a[0] == '[' && a[al - 1] == ']');
            if (al > 2) {
                joined = realloc(joined, jl + al);
                if (jl)
                    joined[jl++] = ',';
                memcpy(joined + jl, a + 1, al - 2);
                jl += al - 2;
                joined[jl] = 0;
            }
            free(a);
        }
        const char *p[NM + 4] = {"start=1356998400", "end=1357005600", "global_annotations"};
        for (size_t i = 0; i < NM; i++)
            p[3 + i] = ms[i];
        char *all = run_query(f, p, false);
        assert_true(strlen(all) == jl + 2 && all[0] == '[' && all[jl + 1] == ']');
        assert_true(strncmp(all + 1, joined, jl) == 0);
        assert_non_null(strstr(all, "\"notes\":\"global\""));
        free(all);
        free(joined);
        /* the third sub-query fails after two were written into memory: its error alone
         * (run_query's fixture checks that nothing was written) */
        const char *pe[] = {"start=1356998400", "end=1357005600", ms[0], ms[1],
                            "m=sum:r.ctr{host=zz}", ms[3], NULL};
        char *e = run_query(f, pe, false);
        assert_string_equal(e, "400 No such name for 'tagv': 'zz'");
        free(e);
    }
    scan_threads = 0;
    held_max = 0;
    tsdb_fixture_close(f);
}

/* tsd.query.timeout: a query still scanning when its time is up ends with 408 and OpenTSDB's
 * kind of message, before any output; without a timeout (or with a generous one) the same
 * query answers. 40,000 rows (200 series over 200 hours) take far longer than 1 ms to read. */
static void test_qexec_timeout_ends_a_query_with_408(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    for (int h = 0; h < 200; h++)
        for (int s = 0; s < 200; s++) {
            char host[16];
            snprintf(host, sizeof(host), "t%d", s);
            put(f->t, host, "slow", 1356998410 - 3600 * h, true, s, 0);
        }
    const char *p[] = {"start=1356260000", "end=1356998500", "m=sum:sys.cpu{dc=slow}", NULL};
    static const struct {
        int64_t timeout_ms;
        int rc;
    } cases[] = {{1, CT_ETIMEOUT}, {0, CT_OK}, {600000, CT_OK}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct kv kv = {p};
        struct qspec *q = NULL;
        struct ct_err err = {0};
        assert_int_equal(qspec_parse_params(get_param, &kv, NOW, &q, &err), CT_OK);
        struct qexec_options o;
        qexec_options_init(&o);
        o.timeout_ms = cases[i].timeout_ms;
        enum qexec_status st = QEXEC_OK;
        char *json = NULL;
        assert_int_equal(tsdb_fixture_run(f->t, q, &o, &json, &st, &err), cases[i].rc);
        if (cases[i].rc == CT_OK) {
            assert_non_null(strstr(json, "\"dps\":{\"1356282010\":19900,"));
            free(json);
        } else {
            assert_int_equal(st, QEXEC_TIMEOUT);
            assert_string_equal(err.msg, "Query timeout exceeded");
        }
    }
}

/* The points of series host=g in the answer's first group, as (seconds, value) pairs; -1 if the
 * answer is not one group. */
static int answer_points(const char *json, int64_t *ts, double *val, int max)
{
    cJSON *a = cJSON_Parse(json);
    int n = -1;
    if (a && cJSON_GetArraySize(a) == 1) {
        cJSON *dps = cJSON_GetObjectItem(cJSON_GetArrayItem(a, 0), "dps");
        n = 0;
        for (cJSON *c = dps ? dps->child : NULL; c && n < max; c = c->next, n++) {
            ts[n] = strtoll(c->string, NULL, 10);
            val[n] = c->valuedouble;
        }
    }
    cJSON_Delete(a);
    return n;
}

static void test_qexec_rows_of_any_size_come_out_in_time_order(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    /* twelve hours of one series, rows of 0 to 40 points at irregular offsets, the newest row
     * the smallest (so the room its first row makes is outgrown) and some minutes empty (a
     * downsampled row then fills fewer buckets than it spans); expected: the points as written,
     * and their 1-minute sums, in time order */
    enum {
        HOURS = 12,
        MAXP = HOURS * 41
    };
    const int64_t base = 1357002000;
    static int64_t pts[MAXP], sums_ts[MAXP], got_ts[MAXP];
    static double pv[MAXP], sums[MAXP], got_v[MAXP];
    int np = 0, nsum = 0;
    for (int h = 0; h < HOURS; h++) {
        int cnt = h == HOURS - 1 ? 1 : h == 3 ? 0 : (h * 17 + 5) % 41;
        for (int j = 0; j < cnt; j++) {
            int64_t ts = base + h * 3600 + (int64_t)j * 3600 / cnt + (h + j) % 7;
            int64_t v = h * 1000 + j;
            put(f->t, "g", "q", ts, true, v, 0);
            pts[np] = ts;
            pv[np++] = (double)v;
            if (nsum && sums_ts[nsum - 1] == ts - ts % 60) {
                sums[nsum - 1] += (double)v;
            } else {
                sums_ts[nsum] = ts - ts % 60;
                sums[nsum++] = (double)v;
            }
        }
    }
    const char *raw[] = {"start=1357002000", "end=1357045200", "m=sum:sys.cpu{host=g}", NULL};
    const char *ds[] = {"start=1357002000", "end=1357045200", "m=sum:1m-sum:sys.cpu{host=g}", NULL};
    for (unsigned th = 1; th <= 16; th *= 4) {
        scan_threads = th;
        char *got = run_query(f, raw, false);
        int n = answer_points(got, got_ts, got_v, MAXP);
        if (n != np)
            fail_msg("threads %u: %d points, want %d: %.300s", th, n, np, got);
        for (int i = 0; i < n; i++)
            if (got_ts[i] != pts[i] || got_v[i] != pv[i])
                fail_msg("threads %u: point %d is %lld %g, want %lld %g", th, i,
                         (long long)got_ts[i], got_v[i], (long long)pts[i], pv[i]);
        free(got);
        got = run_query(f, ds, false);
        n = answer_points(got, got_ts, got_v, MAXP);
        if (n != nsum)
            fail_msg("threads %u: %d buckets, want %d: %.300s", th, n, nsum, got);
        for (int i = 0; i < n; i++)
            if (got_ts[i] != sums_ts[i] || got_v[i] != sums[i])
                fail_msg("threads %u: bucket %d is %lld %g, want %lld %g", th, i,
                         (long long)got_ts[i], got_v[i], (long long)sums_ts[i], sums[i]);
        free(got);
    }
    scan_threads = 0;
}

/* Writes n points of a series; is_int selects integer or double values (a random walk). */
static void put_series(struct tsdb *t, const char *host, const char *dc, int64_t from_s,
                       int64_t step_s, int n, int kind, bool gaps, unsigned *seed)
{
    double x = 50;
    int64_t c = 1000;
    for (int i = 0; i < n; i++) {
        int64_t ts = from_s + i * step_s;
        if (gaps && rand_r(seed) % 13 == 0)
            continue;
        x += (rand_r(seed) % 2001 - 1000) / 1000.0;
        c += rand_r(seed) % 50;
        if (rand_r(seed) % 40 == 0)
            c = rand_r(seed) % 100; /* counter resets */
        if (kind == 0)
            put(t, host, dc, ts, true, c, 0);
        else if (kind == 1)
            put(t, host, dc, ts, false, 0, x);
        else
            put(t, host, dc, ts, i % 3 == 0, c, x); /* ints and floats mixed in one series */
    }
}

static void test_qexec_fast_paths_answer_like_the_general_path(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    struct ct_err err = {0};
    unsigned seed = 7;
    const int64_t base = 1356998400;
    /* six series over five hours, merged into compressed hour cells ... */
    const char *hosts[] = {"h0", "h1", "h2", "h3", "h4", "h5"};
    for (int h = 0; h < 6; h++)
        put_series(f->t, hosts[h], h % 2 ? "d1" : "d0", base + h, 7 + h % 3, 5 * 3600 / 8, h % 3,
                   true, &seed);
    /* and four series at the same timestamps (aligned: the group fast path) */
    const char *ahosts[] = {"a0", "a1", "a2", "a3"};
    for (int h = 0; h < 4; h++)
        put_series(f->t, ahosts[h], "d9", base, 10, 5 * 360, h < 2 ? 1 : 0, false, &seed);
    assert_int_equal(wc_table_flush(f->s, "tsdb", &err), CT_OK);
    assert_int_equal(wc_table_compact(f->s, "tsdb", NULL, true, &err), CT_OK);
    /* ... then late points and a conflicting duplicate in merged hours: rows of a compressed
     * cell plus single cells, read through the general row decoder */
    put(f->t, "h1", "d1", base + 3600 + 1, true, 5, 0);
    put(f->t, "h1", "d1", base + 7200 + 3, false, 0, 1.25);
    put(f->t, "h3", "d1", base + 7, true, 99, 0);
    assert_int_equal(wc_table_flush(f->s, "tsdb", &err), CT_OK);
    const char *ms[] = {
        "m=sum:1m-avg:sys.cpu",
        "m=max:5m-max:sys.cpu{host=*}",
        "m=sum:1m-avg:rate{counter}:sys.cpu{dc=*}",
        "m=avg:10s-sum:sys.cpu",
        "m=p95:15m-p50:sys.cpu{dc=d0}",
        "m=none:30m-count:sys.cpu",
        "m=sum:7m-avg:sys.cpu",
        "m=dev:1h-dev:sys.cpu{host=h1|h2}",
        "m=zimsum:2m-last:sys.cpu{host=*}",
        "m=mimmin:1m-min:rate:sys.cpu",
        "m=sum:sys.cpu{host=h2}",
        "m=count:1m-first:sys.cpu{dc=*}",
        "m=sum:500ms-avg:sys.cpu{host=h0}",
        "m=sum:1m-avg:sys.cpu{dc=d9}",
        "m=max:5m-avg:rate{counter}:sys.cpu{dc=d9}",
        "m=avg:sys.cpu{host=a0|a1}",
        "m=sum:rate:sys.cpu{host=a0|a1}",
        "m=p90:10m-p75:sys.cpu{dc=d9}",
        "m=min:1m-max:sys.cpu{dc=d9}",
        "m=count:1m-sum:sys.cpu{dc=d9}",
        "m=mimmax:30s-min:sys.cpu{dc=d9}",
        /* whole buckets of regular integer rows summed two points per step (k = 2, 3, 4, 6) */
        "m=sum:20s-avg:sys.cpu{dc=d9}",
        "m=sum:30s-sum:sys.cpu{dc=d9}",
        "m=max:40s-avg:sys.cpu{host=*,dc=d9}",
        "m=sum:1m-sum:sys.cpu{host=a0|a1}",
        /* first and last of regular rows picked per bucket (integers and doubles) */
        "m=sum:1m-last:rate{counter}:sys.cpu{dc=d9}",
        "m=max:30s-first:sys.cpu{host=*,dc=d9}",
        "m=sum:40s-last:sys.cpu{host=*,dc=d9}",
        /* groups of one series (none, or a group-by that leaves one series per group) */
        "m=none:sys.cpu",
        "m=none:sys.cpu{host=h2}",
        "m=dev:sys.cpu{host=*}",
        "m=p50:sys.cpu{host=a2}",
        "m=diff:rate:sys.cpu{host=a3}",
        "m=mult:sys.cpu{host=h5}",
        "m=max:5m-max:sys.cpu{host=*,dc=d9}",
        "m=count:sys.cpu{host=h3}",
        /* the leading tag (host, uid 1) pinned: each hour read as key ranges */
        "m=sum:sys.cpu{host=a0|a1,dc=d9}",
        "m=sum:1m-avg:sys.cpu{host=h1|h3|a2}",
        "m=max:sys.cpu{host=h4,dc=*}",
    };
    const char *starts[] = {"start=1356998400", "start=1357000123"};
    const char *ends[] = {"end=1357016400", "end=1357009999"};
    int nonempty = 0;
    for (size_t m = 0; m < sizeof(ms) / sizeof(ms[0]); m++) {
        for (int r = 0; r < 3; r++) {
            const char *p[] = {starts[r % 2], ends[r % 2], ms[m],
                               r == 2 ? "padding"
                               : r    ? "ms=true"
                                      : "arrays=false",
                               NULL};
            general_only = true;
            char *want = run_query(f, p, false);
            general_only = false;
            char *got = run_query(f, p, false);
            if (strcmp(got, want))
                fail_msg("%s %s %s:\n fast    %.300s\n general %.300s", p[0], p[1], p[2], got,
                         want);
            /* four threads: time slices, and groups written in parallel into memory */
            scan_threads = 4;
            char *par = run_query(f, p, false);
            scan_threads = 0;
            if (strcmp(par, want))
                fail_msg("%s %s %s:\n 4 threads %.300s\n general   %.300s", p[0], p[1], p[2], par,
                         want);
            free(par);
            nonempty += strstr(want, "\"dps\":{\"") != NULL;
            free(want);
            free(got);
        }
    }
    assert_int_equal(nonempty, 3 * (int)(sizeof(ms) / sizeof(ms[0])));
}

/* Runs m= over [1356998400, 1357016400) on `threads` threads with stats: the answer (a new
 * string) and the stats in *st. */
static char *run_with_stats(struct tsdb_fixture *f, const char *m, unsigned threads, bool general,
                            struct qexec_stats *st)
{
    const char *p[] = {"start=1356998400", "end=1357016399", m, NULL};
    struct kv kv = {p};
    struct qspec *q = NULL;
    struct ct_err err = {0};
    assert_int_equal(qspec_parse_params(get_param, &kv, NOW, &q, &err), CT_OK);
    struct qexec_options o;
    qexec_options_init(&o);
    o.pool = test_pool;
    o.scan_threads = threads;
    o.general_only = general;
    struct tsdb_fixture_buf b = {0};
    struct qjson *j = qjson_new(tsdb_fixture_sink, &b, 64);
    assert_non_null(j);
    enum qexec_status status;
    memset(st, 0, sizeof(*st));
    if (qexec_run(f->t, q, &o, j, &status, st, &err) != CT_OK)
        fail_msg("%s: %s", m, err.msg);
    assert_int_equal(qjson_flush(j), CT_OK);
    qjson_free(j);
    qspec_free(q);
    return b.data ? b.data : strdup("");
}

/* A filter that pins the leading tag (host, uid 1) reads each piece of work (salt bucket, time
 * slice) with one scanner over all its key ranges (hours x pinned values): a range left out, or
 * visited out of order (a series' hours must come newest first), changes the raw answer, which
 * must equal the general path's (whole hours, no ranges) point for point. */
static void test_qexec_lead_ranges_are_one_scanner_per_piece(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    /* nine hosts, a point every 20 minutes over five hours, each value naming host and time */
    for (int h = 0; h < 9; h++) {
        char host[16];
        snprintf(host, sizeof(host), "l%d", h);
        for (int i = 0; i < 15; i++)
            put(f->t, host, h % 2 ? "d1" : "d0", 1356998400 + i * 1200 + h, true, h * 100 + i, 0);
    }
    static const struct {
        const char *m;
        unsigned nvals;
    } qs[] = {
        {"m=none:sys.cpu{host=l1|l3|l4|l8}", 4},
        {"m=none:sys.cpu{host=l5,dc=d1}", 1},
        {"m=sum:sys.cpu{host=l0|l7}", 2},
        {"m=none:sys.cpu{host=l6|l2|l0}", 3}, /* values listed out of uid order */
    };
    for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
        struct qexec_stats gst, st;
        char *want = run_with_stats(f, qs[i].m, 1, true, &gst);
        assert_non_null(strstr(want, "\"dps\":{\""));
        assert_int_equal(gst.key_ranges, gst.scanners); /* whole hours: one range a scanner */
        for (unsigned threads = 1; threads <= 4; threads += 3) {
            char *got = run_with_stats(f, qs[i].m, threads, false, &st);
            if (strcmp(got, want))
                fail_msg("%s (%u threads):\n ranges  %.400s\n general %.400s", qs[i].m, threads,
                         got, want);
            /* 4 buckets x the 6 hours of the scan window x the pinned values, in as many
             * scanners as pieces: one per bucket on one thread (time slices on four) */
            assert_int_equal(st.key_ranges, 4 * 6 * qs[i].nvals);
            if (threads == 1)
                assert_int_equal(st.scanners, 4);
            else
                assert_true(st.scanners > 4 && st.scanners < st.key_ranges);
            assert_int_equal(st.rows, gst.rows);
            free(got);
        }
        free(want);
    }
}

/* Queries run at once from several threads share the helper scan threads (a pool: each query
 * queues its scan, takes pieces itself and waits for the helpers on it): every answer is the one
 * a query gets alone on one thread. */
struct conc_arg {
    struct tsdb_fixture *f;
    const char *const (*ps)[4];
    size_t nps;
    char **want;
    int bad;
};

static void *conc_main(void *arg)
{
    struct conc_arg *a = arg;
    for (int rep = 0; rep < 12; rep++) {
        for (size_t i = 0; i < a->nps; i++) {
            char *got = run_query(a->f, a->ps[(i + (size_t)rep) % a->nps], false);
            if (strcmp(got, a->want[(i + (size_t)rep) % a->nps]))
                a->bad++;
            free(got);
        }
    }
    return NULL;
}

static void test_qexec_concurrent_queries_share_the_scan_helpers(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    unsigned seed = 11;
    const char *hosts[] = {"p0", "p1", "p2", "p3", "p4"};
    for (int h = 0; h < 5; h++)
        put_series(f->t, hosts[h], h % 2 ? "e1" : "e0", 1356998400 + h, 30, 6 * 120, h % 3, h == 3,
                   &seed);
    static const char *const ps[][4] = {
        {"start=1356998400", "end=1357020000", "m=sum:1m-avg:sys.cpu{dc=e0|e1}", NULL},
        {"start=1356998400", "end=1357020000", "m=max:5m-max:sys.cpu{host=*,dc=e0}", NULL},
        {"start=1356998400", "end=1357020000", "m=none:sys.cpu{host=p2}", NULL},
        {"start=1356999999", "end=1357012345", "m=sum:rate:sys.cpu{dc=*}", NULL},
    };
    size_t nps = sizeof(ps) / sizeof(ps[0]);
    char *want[sizeof(ps) / sizeof(ps[0])];
    scan_threads = 1;
    for (size_t i = 0; i < nps; i++) {
        want[i] = run_query(f, ps[i], false);
        assert_non_null(strstr(want[i], "\"dps\":{\""));
    }
    scan_threads = 4;
    enum {
        NT = 4
    };
    pthread_t th[NT];
    struct conc_arg args[NT];
    for (int t = 0; t < NT; t++) {
        args[t] = (struct conc_arg){f, ps, nps, want, 0};
        assert_int_equal(pthread_create(&th[t], NULL, conc_main, &args[t]), 0);
    }
    int bad = 0;
    for (int t = 0; t < NT; t++) {
        pthread_join(th[t], NULL);
        bad += args[t].bad;
    }
    scan_threads = 0;
    for (size_t i = 0; i < nps; i++)
        free(want[i]);
    assert_int_equal(bad, 0);
}

/* The executor decides a query's threads when the query does not: its thread count, or one when
 * its busy check says every CPU is busy; without an executor, the caller's thread alone. The
 * answer is the same every way. */
static char *run_on_pool(struct tsdb_fixture *f, const char *const *params, struct qpool *pool,
                         struct qexec_stats *stats)
{
    struct kv kv = {params};
    struct qspec *q = NULL;
    struct ct_err err = {0};
    assert_int_equal(qspec_parse_params(get_param, &kv, NOW, &q, &err), CT_OK);
    struct tsdb_fixture_buf b = {0};
    struct qjson *j = qjson_new(tsdb_fixture_sink, &b, 0);
    struct qexec_options o;
    qexec_options_init(&o);
    o.pool = pool;
    enum qexec_status st;
    memset(stats, 0, sizeof(*stats));
    assert_int_equal(qexec_run(f->t, q, &o, j, &st, stats, &err), CT_OK);
    assert_int_equal(qjson_flush(j), CT_OK);
    qjson_free(j);
    qspec_free(q);
    return b.data;
}

static void test_qexec_threads_come_from_the_executor(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    unsigned seed = 5;
    for (int h = 0; h < 8; h++) {
        char host[16];
        snprintf(host, sizeof(host), "q%d", h);
        put_series(f->t, host, "e2", 1356998400 + h, 30, 6 * 120, h % 3, false, &seed);
    }
    const char *p[] = {"start=1356998400", "end=1357020000", "m=sum:1m-avg:sys.cpu{dc=e2}", NULL};
    struct qexec_stats st;
    pool_busy = false;
    char *par = run_on_pool(f, p, test_pool, &st);
    assert_true(st.scan_threads > 1);
    assert_false(st.busy_one_thread);
    pool_busy = true;
    char *alone = run_on_pool(f, p, test_pool, &st);
    pool_busy = false;
    assert_int_equal(st.scan_threads, 1);
    assert_true(st.busy_one_thread);
    char *none = run_on_pool(f, p, NULL, &st);
    assert_int_equal(st.scan_threads, 1);
    assert_false(st.busy_one_thread);
    assert_non_null(strstr(par, "\"dps\":{\""));
    assert_string_equal(par, alone);
    assert_string_equal(par, none);
    free(par);
    free(alone);
    free(none);
}

/* Leading tags become key ranges only while they make at most 8 an hour and 2,048 in all. */
static void test_qexec_lead_tags_caps(void **state)
{
    (void)state;
    struct rowkey_layout l;
    rowkey_layout_init(&l);
    struct ct_err err = {0};
    struct rowkey_filter *f = NULL;
    assert_int_equal(rowkey_filter_new(&l, &f, &err), CT_OK);
    rowkey_filter_set_metric(f, 7);
    uint64_t k1[] = {1, 2, 3}, k2[] = {4, 5, 6};
    assert_int_equal(rowkey_filter_add(f, 1, k1, 3, false, &err), CT_OK);
    assert_int_equal(rowkey_filter_add(f, 2, k2, 3, false, &err), CT_OK);
    const uint64_t *vals[ROWKEY_MAX_TAGS];
    size_t nvals[ROWKEY_MAX_TAGS];
    /* 3 x 3 = 9 an hour is over 8: only uid 1's 3 values */
    assert_int_equal(qexec_lead_tags(f, 1, vals, nvals), 1);
    assert_int_equal(nvals[0], 3);
    assert_int_equal(qexec_lead_tags(f, 682, vals, nvals), 1); /* 2,046 ranges */
    assert_int_equal(qexec_lead_tags(f, 683, vals, nvals), 0); /* 2,049 */
    rowkey_filter_free(f);
}

/* The row-filter memo (qexec_rf_memo_filter) answers every key as its filter does (a filter of
 * the key's metric and tags): series judged once then remembered; keys of one set that differ
 * only in their tags, only in their metric, or in length (one series' tags a prefix of
 * another's); more series than ways (the memo gives up); keys too long to hold. */
struct memo_ref {
    size_t calls;
    size_t mstart, mlen, tstart;
};

static enum wc_row_decision memo_ref_decide(void *arg, const uint8_t *row, size_t len)
{
    struct memo_ref *r = arg;
    r->calls++;
    /* a decision of the metric and tag bytes only (FNV-1a), as the scan filters decide */
    uint64_t h = 1469598103934665603ull ^ len;
    for (size_t i = 0; i < r->mlen; i++)
        h = (h ^ row[r->mstart + i]) * 1099511628211ull;
    for (size_t i = r->tstart; i < len; i++)
        h = (h ^ row[i]) * 1099511628211ull;
    return (h >> 17) & 1 ? WC_ROW_INCLUDE : WC_ROW_SKIP;
}

static enum wc_row_decision memo_want(struct memo_ref *ref, const uint8_t *row, size_t len)
{
    size_t before = ref->calls;
    enum wc_row_decision d = memo_ref_decide(ref, row, len);
    ref->calls = before;
    return d;
}

/* Runs nser >= 16 series through a fresh memo for 30 hours; returns the filter's calls, *total
 * the rows. Series 0 and 1: the same set, metric and length, other tags and decisions; series
 * 2: the tags of series 0 under another metric, another decision (the same set: the set is of
 * the tags); series 4: the tags of series 3 and one pair more, the same set, another decision
 * (series 3 a prefix of series 4); the others 1..12 random tags of 6 bytes (11 and 12 tags: 69
 * and 75 bytes of metric and tags, past the memo's 64: judged every time), two metrics. */
static size_t memo_run(const struct rowkey_layout *l, size_t nser, size_t *total)
{
    size_t head = l->salt_width + l->metric_width + ROWKEY_TIMESTAMP_BYTES;
    struct memo_ref ref = {0, l->salt_width, l->metric_width, head};
    struct qexec_rf_memo memo;
    qexec_rf_memo_init(&memo, l, memo_ref_decide, &ref);
    uint8_t(*key)[ROWKEY_MAX_BYTES] = calloc(nser, ROWKEY_MAX_BYTES);
    size_t *klen = calloc(nser, sizeof(size_t));
    assert_non_null(key);
    assert_non_null(klen);
    srand(7);
    for (size_t s = 0; s < nser; s++) {
        size_t nt = s <= 3 ? 5 : s == 4 ? 6 : 1 + (size_t)rand() % 12;
        klen[s] = head + nt * 6;
        for (size_t i = 0; i < klen[s]; i++)
            key[s][i] = (uint8_t)rand();
        key[s][l->salt_width] = key[s][l->salt_width + 1] = 0;
        key[s][l->salt_width + 2] = (uint8_t)(s % 2); /* metric 0 or 1 */
    }
    size_t set0 = qexec_rf_memo_set_of(&memo, key[0], klen[0]);
    key[1][l->salt_width + 2] = key[0][l->salt_width + 2];
    for (int tries = 0; qexec_rf_memo_set_of(&memo, key[1], klen[1]) != set0 ||
                        memo_want(&ref, key[1], klen[1]) == memo_want(&ref, key[0], klen[0]);
         tries++) {
        assert_true(tries < 100000);
        for (size_t i = head + 6; i < klen[1]; i++)
            key[1][i] = (uint8_t)rand();
    }
    memcpy(key[2], key[0], klen[0]);
    for (int mv = 2; memo_want(&ref, key[2], klen[2]) == memo_want(&ref, key[0], klen[0]); mv++) {
        assert_true(mv < 256);
        key[2][l->salt_width + 2] = (uint8_t)mv;
    }
    memcpy(key[4], key[3], klen[3]);
    size_t set3 = qexec_rf_memo_set_of(&memo, key[3], klen[3]);
    for (int tries = 0; qexec_rf_memo_set_of(&memo, key[4], klen[4]) != set3 ||
                        memo_want(&ref, key[4], klen[4]) == memo_want(&ref, key[3], klen[3]);
         tries++) {
        assert_true(tries < 100000);
        for (size_t i = klen[3]; i < klen[4]; i++)
            key[4][i] = (uint8_t)rand();
    }
    *total = 0;
    for (int hour = 0; hour < 30; hour++) {
        for (size_t j = 0; j < nser; j++) {
            /* series 0, 1, 2, 4, 3 first (each met after the one it could be taken for), the
             * others in another order every hour */
            size_t s = j == 3   ? 4
                       : j == 4 ? 3
                       : j < 5  ? j
                                : 5 + ((j - 5) * 37 + (size_t)hour * 11) % (nser - 5);
            uint8_t row[ROWKEY_MAX_BYTES];
            memcpy(row, key[s], klen[s]);
            row[0] = (uint8_t)(hour % 8); /* any salt, any hour */
            coding_put_be32(row + l->salt_width + l->metric_width, (uint32_t)(3600 * hour));
            enum wc_row_decision want = memo_want(&ref, row, klen[s]);
            assert_int_equal(qexec_rf_memo_filter(&memo, row, klen[s]), want);
            (*total)++;
        }
    }
    free(key);
    free(klen);
    return ref.calls;
}

static void test_qexec_rf_memo_decides_as_its_filter(void **state)
{
    (void)state;
    struct rowkey_layout l;
    rowkey_layout_init(&l);
    l.salt_width = 1;
    l.salt_buckets = 8;
    size_t total = 0;
    /* 40 series, 2 x 128 ways: most judged once (a hit costs no call) */
    size_t calls = memo_run(&l, 40, &total);
    assert_true(calls < total / 3);
    assert_true(calls >= 40);
    /* 500 series: the memo misses, gives up after its trial, still answers as the filter */
    calls = memo_run(&l, 500, &total);
    assert_true(calls > total - QEXEC_RF_MEMO_TRIAL);
}

/* qexec_max_no_nan / qexec_min_no_nan give the bits of the strict-comparison loop (the first
 * of equal values kept): random values of every length 1..70, some only zeros of both signs,
 * some with a repeated extreme. */
static void test_qexec_min_max_no_nan_as_the_loop(void **state)
{
    (void)state;
    srand(5);
    double v[70];
    size_t zeros_max = 0;
    for (int round = 0; round < 4000; round++) {
        size_t n = 1 + (size_t)rand() % 70;
        int kind = rand() % 4;
        for (size_t i = 0; i < n; i++) {
            if (kind == 0) /* zeros of both signs, and negatives: the max is a zero */
                v[i] = rand() % 3 == 0 ? -1.0 * (rand() % 5 + 1) : rand() % 2 ? 0.0 : -0.0;
            else if (kind == 1) /* zeros and positives: the min is a zero */
                v[i] = rand() % 3 == 0 ? 1.0 * (rand() % 5 + 1) : rand() % 2 ? 0.0 : -0.0;
            else
                v[i] = (double)(rand() % 2001 - 1000) / (kind == 2 ? 100.0 : 7.0);
        }
        double hi = v[0], lo = v[0];
        for (size_t j = 1; j < n; j++) {
            hi = v[j] > hi ? v[j] : hi;
            lo = v[j] < lo ? v[j] : lo;
        }
        double gh = qexec_max_no_nan(v, n), gl = qexec_min_no_nan(v, n);
        if (memcmp(&gh, &hi, sizeof(double)) || memcmp(&gl, &lo, sizeof(double)))
            fail_msg("round %d n %zu: max %g/%g min %g/%g (signbits %d %d %d %d)", round, n, gh, hi,
                     gl, lo, signbit(gh) != 0, signbit(hi) != 0, signbit(gl) != 0,
                     signbit(lo) != 0);
        zeros_max += kind == 0 && hi == 0 && n >= 8;
    }
    assert_true(zeros_max > 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qexec_lead_tags_caps),
        cmocka_unit_test(test_qexec_rf_memo_decides_as_its_filter),
        cmocka_unit_test(test_qexec_min_max_no_nan_as_the_loop),
        cmocka_unit_test_setup_teardown(test_qexec_answers_match_opentsdb, setup, teardown),
        cmocka_unit_test_setup_teardown(test_qexec_annotations_and_tsuids_in_results, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_qlast_finds_the_newest_point, setup, teardown),
        cmocka_unit_test_setup_teardown(test_qlast_index_finds_the_newest_point_of_any_age, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_qlast_metric_query_takes_each_series_newest_row_with_a_point, setup, teardown),
        cmocka_unit_test_setup_teardown(test_qmeta_suggest_lookup_assign, setup, teardown),
        cmocka_unit_test_setup_teardown(test_qexec_timeout_ends_a_query_with_408, setup, teardown),
        cmocka_unit_test_setup_teardown(test_qmeta_suggest_max_below_one_is_the_default_25, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_qexec_delete_removes_the_rows_read, setup, teardown),
        cmocka_unit_test(test_qexec_salted_and_unsalted_answer_alike),
        cmocka_unit_test(test_qexec_sub_queries_answer_as_their_own_queries_joined),
        cmocka_unit_test_setup_teardown(test_qexec_many_series_each_keep_their_points, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_qexec_time_slices_keep_points_in_order, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_qexec_rows_of_any_size_come_out_in_time_order, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_qexec_concurrent_queries_share_the_scan_helpers, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_qexec_lead_ranges_are_one_scanner_per_piece, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_qexec_fast_paths_answer_like_the_general_path, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_qexec_threads_come_from_the_executor, setup, teardown),
    };
    return cmocka_run_group_tests(tests, pool_setup, pool_teardown);
}
