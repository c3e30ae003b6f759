/* test_qfeatures.c - /api/query features end to end on a real embedded store in a temporary
 * directory: `padding` (the point just before the start and just after the end, read from the
 * neighbouring hour rows), the scalar fill policy's value in the JSON answer, and regexp filters
 * with java.util.regex syntax selecting series. Answers are compared with JSON worked out by
 * hand. Skipped when this build has no embedded engine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/qexec.h"
#include "query/qjson.h"
#include "query/qspec.h"
#include "schema/tsdb.h"
#include "storage/wc.h"
#include "tests/lib/ctest.h"
#include "tests/lib/tsdb_fixture.h"

static const int64_t NOW = 1357100000000LL;
static const int64_t H = 1356998400; /* an hour boundary */

static void put(struct tsdb *t, const char *host, int64_t ts_s, int64_t v)
{
    const char *k[1] = {"host"}, *vals[1] = {host};
    tsdb_fixture_put(t, "m", k, vals, 1, dpcodec_point_int(ts_s * 1000, false, v));
}

static int setup(void **state)
{
    struct tsdb_fixture *f = tsdb_fixture_open(3);
    if (!f) {
        *state = NULL;
        return 0;
    }
    /* web01: one point half an hour back, four in hour H, one an hour later, one two hours later */
    put(f->t, "web01", H - 1800, 1);
    put(f->t, "web01", H, 2);
    put(f->t, "web01", H + 10, 3);
    put(f->t, "web01", H + 20, 4);
    put(f->t, "web01", H + 30, 5);
    put(f->t, "web01", H + 3700, 6);
    put(f->t, "web01", H + 7300, 7);
    put(f->t, "web02", H + 20, 100);
    put(f->t, "db1", H + 20, 1000);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    tsdb_fixture_close(*state);
    return 0;
}

/* Runs a JSON query; returns the answer or "ERR <message>". */
static char *run_json(struct tsdb_fixture *f, const char *body)
{
    struct qspec *q = NULL;
    struct ct_err err = {0};
    char *out = malloc(512);
    if (qspec_parse_json(body, strlen(body), NOW, &q, &err) != CT_OK) {
        snprintf(out, 512, "ERR %s", err.msg);
        return out;
    }
    struct qexec_options o;
    qexec_options_init(&o);
    enum qexec_status st;
    char *json;
    if (tsdb_fixture_run(f->t, q, &o, &json, &st, &err) != CT_OK) {
        snprintf(out, 512, "ERR %s", err.msg);
        return out;
    }
    free(out);
    return json;
}

static void check(struct tsdb_fixture *f, const char *body, const char *want)
{
    char *got = run_json(f, body);
    if (strcmp(got, want))
        fail_msg("%s\n got: %s\nwant: %s", body, got, want);
    free(got);
}

static void test_qfeatures_padding_adds_the_neighbouring_points(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    /* [H+5, H+25]: padding adds H (same hour) and H+30 */
    check(f,
          "{\"start\":1356998405,\"end\":1356998425,\"queries\":[{\"aggregator\":\"sum\","
          "\"metric\":\"m\",\"tags\":{\"host\":\"web01\"}}]}",
          "[{\"metric\":\"m\",\"tags\":{\"host\":\"web01\"},\"aggregateTags\":[],\"dps\":{"
          "\"1356998410\":3,\"1356998420\":4}}]");
    check(f,
          "{\"start\":1356998405,\"end\":1356998425,\"padding\":true,\"queries\":[{\"aggregator\":"
          "\"sum\",\"metric\":\"m\",\"tags\":{\"host\":\"web01\"}}]}",
          "[{\"metric\":\"m\",\"tags\":{\"host\":\"web01\"},\"aggregateTags\":[],\"dps\":{"
          "\"1356998400\":2,\"1356998410\":3,\"1356998420\":4,\"1356998430\":5}}]");
    /* [H, H+30]: the neighbours are in the hour rows before and after, read only with padding */
    check(f,
          "{\"start\":1356998400,\"end\":1356998430,\"padding\":true,\"queries\":[{\"aggregator\":"
          "\"sum\",\"metric\":\"m\",\"tags\":{\"host\":\"web01\"}}]}",
          "[{\"metric\":\"m\",\"tags\":{\"host\":\"web01\"},\"aggregateTags\":[],\"dps\":{"
          "\"1356996600\":1,\"1356998400\":2,\"1356998410\":3,\"1356998420\":4,\"1356998430\":5,"
          "\"1357002100\":6}}]");
    /* a range with no point inside: just the two neighbours */
    check(f,
          "{\"start\":1356998440,\"end\":1356998500,\"padding\":true,\"queries\":[{\"aggregator\":"
          "\"sum\",\"metric\":\"m\",\"tags\":{\"host\":\"web01\"}}]}",
          "[{\"metric\":\"m\",\"tags\":{\"host\":\"web01\"},\"aggregateTags\":[],\"dps\":{"
          "\"1356998430\":5,\"1357002100\":6}}]");
    /* downsampled: the neighbouring buckets */
    check(f,
          "{\"start\":1356998400,\"end\":1356998459,\"padding\":true,\"queries\":[{\"aggregator\":"
          "\"sum\",\"metric\":\"m\",\"downsample\":\"1m-sum\",\"tags\":{\"host\":\"web01\"}}]}",
          "[{\"metric\":\"m\",\"tags\":{\"host\":\"web01\"},\"aggregateTags\":[],\"dps\":{"
          "\"1356996600\":1.0,\"1356998400\":14.0,\"1357002060\":6.0}}]");
}

static void test_qfeatures_scalar_fill_in_answers(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    const char *want = "[{\"metric\":\"m\",\"tags\":{\"host\":\"web02\"},\"aggregateTags\":[],"
                       "\"dps\":{\"1356998400\":100.0,\"1356998460\":-1.5,\"1356998520\":-1.5}}]";
    check(f,
          "{\"start\":1356998400,\"end\":1356998520,\"queries\":[{\"aggregator\":\"sum\","
          "\"metric\":\"m\",\"downsample\":\"1m-sum-scalar(-1.5)\",\"tags\":{\"host\":"
          "\"web02\"}}]}",
          want);
    check(f,
          "{\"start\":1356998400,\"end\":1356998520,\"queries\":[{\"aggregator\":\"sum\","
          "\"metric\":\"m\",\"downsample\":{\"interval\":\"1m\",\"aggregator\":\"sum\","
          "\"fillPolicy\":{\"policy\":\"scalar\",\"value\":-1.5}},\"tags\":{\"host\":\"web02\"}}]}",
          want);
    /* the fill value takes part in the cross-series sum like any value */
    check(f,
          "{\"start\":1356998400,\"end\":1356998460,\"queries\":[{\"aggregator\":\"sum\","
          "\"metric\":\"m\",\"downsample\":\"1m-sum-scalar(10)\",\"filters\":[{\"type\":"
          "\"regexp\",\"tagk\":\"host\",\"filter\":\"^web\\\\d+$\"}]}]}",
          "[{\"metric\":\"m\",\"tags\":{},\"aggregateTags\":[\"host\"],\"dps\":{\"1356998400\":"
          "114.0,\"1356998460\":20.0}}]");
}

static void test_qfeatures_regexp_filters_use_java_syntax(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    /* \d and find(): "b1" ends "db1"; web01's "b0" is not at the end */
    check(f,
          "{\"start\":1356998415,\"end\":1356998425,\"queries\":[{\"aggregator\":\"sum\","
          "\"metric\":\"m\",\"filters\":[{\"type\":\"regexp\",\"tagk\":\"host\",\"filter\":"
          "\"b\\\\d$\",\"groupBy\":true}]}]}",
          "[{\"metric\":\"m\",\"tags\":{\"host\":\"db1\"},\"aggregateTags\":[],\"dps\":{"
          "\"1356998420\":1000}}]");
    check(f,
          "{\"start\":1356998415,\"end\":1356998425,\"queries\":[{\"aggregator\":\"sum\","
          "\"metric\":\"m\",\"filters\":[{\"type\":\"regexp\",\"tagk\":\"host\",\"filter\":"
          "\"(?i)^WEB0(?!1)\",\"groupBy\":true}]}]}",
          "[{\"metric\":\"m\",\"tags\":{\"host\":\"web02\"},\"aggregateTags\":[],\"dps\":{"
          "\"1356998420\":100}}]");
    char *got = run_json(f, "{\"start\":1356998415,\"queries\":[{\"aggregator\":\"sum\","
                            "\"metric\":\"m\",\"filters\":[{\"type\":\"regexp\",\"tagk\":"
                            "\"host\",\"filter\":\"web(\"}]}]}");
    assert_non_null(strstr(got, "ERR "));
    assert_non_null(strstr(got, "near index 4\nweb("));
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_qfeatures_padding_adds_the_neighbouring_points, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_qfeatures_scalar_fill_in_answers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_qfeatures_regexp_filters_use_java_syntax, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
