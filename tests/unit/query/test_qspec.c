/* test_qspec.c - /api/query request parsing: the GET form (m=, tsuid=, flags) and the JSON body,
 * with OpenTSDB's validation messages, table-driven. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/qspec.h"
#include "tests/lib/ctest.h"

static const int64_t NOW = 1357000000000LL;

/* URL parameters as "name=value" strings ("name" alone for a flag). */
struct params {
    const char *const *kv;
    size_t n;
};

static const char *get_param(void *arg, const char *name, size_t idx)
{
    const struct params *p = arg;
    size_t nl = strlen(name), seen = 0;
    for (size_t i = 0; i < p->n; i++) {
        const char *kv = p->kv[i];
        if (strncmp(kv, name, nl) || (kv[nl] != '=' && kv[nl] != 0))
            continue;
        if (seen++ == idx)
            return kv[nl] == '=' ? kv + nl + 1 : "";
    }
    return NULL;
}

static int parse_get(const char *const *kv, size_t n, struct qspec **q, struct ct_err *err)
{
    struct params p = {kv, n};
    return qspec_parse_params(get_param, &p, NOW, q, err);
}

static void test_qspec_get_form_parses_m_with_filters_and_options(void **state)
{
    (void)state;
    const char *kv[] = {"start=1h-ago",
                        "end=1357000000",
                        "ms",
                        "show_tsuids",
                        "arrays",
                        "m=sum:1m-avg-nan:rate{counter,100,5}:sys.cpu.user{host=web01|web02,"
                        "dc=*}{rack=regexp(r[12])}",
                        "m=avg:explicit_tags:sys.mem"};
    struct qspec *q = NULL;
    struct ct_err err = {0};
    assert_int_equal(parse_get(kv, 7, &q, &err), CT_OK);
    assert_true(q->start_ms == NOW - 3600000 && q->end_ms == 1357000000000LL);
    assert_true(q->ms_resolution && q->show_tsuids && q->arrays && !q->show_query);
    assert_int_equal(q->nsubs, 2);
    struct qspec_sub *s = &q->subs[0];
    assert_string_equal(qagg_name(s->agg), "sum");
    assert_string_equal(s->metric, "sys.cpu.user");
    assert_true(s->ds.enabled && s->ds.interval_ms == 60000 && s->ds.fill == QAGG_FILL_NAN);
    assert_true(s->rate && s->rate_opts.counter && s->rate_opts.counter_max == 100 &&
                s->rate_opts.reset_value == 5 && !s->rate_opts.drop_resets);
    assert_int_equal(s->nfilters, 3);
    assert_int_equal(qfilter_type(s->filters[0]), QFILTER_LITERAL_OR);
    assert_true(qfilter_group_by(s->filters[0]));
    assert_int_equal(qfilter_type(s->filters[1]), QFILTER_WILDCARD);
    assert_int_equal(qfilter_type(s->filters[2]), QFILTER_REGEXP);
    assert_false(qfilter_group_by(s->filters[2]));
    assert_true(q->subs[1].explicit_tags);
    assert_int_equal(q->subs[1].index, 1);
    qspec_free(q);
}

static void test_qspec_get_form_errors(void **state)
{
    (void)state;
    static const struct {
        const char *kv[3];
        size_t n;
        const char *msg;
    } bad[] = {
        {{"m=sum:m"}, 1, "Missing parameter <code>start</code>"},
        {{"start=1h-ago"}, 1, "Missing sub queries"},
        {{"start=1h-ago", "m=sum"}, 2, "Invalid parameter m=sum (not enough :-separated parts)"},
        {{"start=1h-ago", "m=a:b:c:d:e:f"},
         2,
         "Invalid parameter m=a:b:c:d:e:f (too many :-separated parts)"},
        {{"start=1h-ago", "m=foo:m"}, 2, "No such aggregation function: foo"},
        {{"start=1h-ago", "m=sum:1x-avg:m"}, 2, "Invalid duration (suffix): 1x"},
        {{"start=1h-ago", "m=sum:1m-none:m"}, 2, "cannot use the NONE aggregator for downsampling"},
        {{"start=1h-ago", "m=sum:rate{counter,abc}:m"},
         2,
         "Max value of counter was not a number, received 'abc'"},
        {{"start=1h-ago", "m=sum:rate{counter,1,x}:m"},
         2,
         "Reset value of counter was not a number, received 'x'"},
        {{"start=1h-ago", "m=sum:m{host=a"}, 2, "Missing '}' at the end of: m{host=a"},
        {{"start=1h-ago", "m=sum:m{host}"}, 2, "When parsing tag 'host': invalid tag: host"},
        {{"start=1h-ago", "m=sum:m{}{dc=}"}, 2, "When parsing filter 'dc=': invalid tag: dc="},
        {{"start=1h-ago", "end=2h-ago", "m=sum:m"},
         3,
         "End time [1356992800000] must be greater than the start time [1356996400000]"},
        {{"start=1h-ago", "timezone=Mars/Base", "m=sum:m"},
         3,
         "The timezone specification could not be found"},
        {{"start=1h-ago", "m=sum:m{host=foo(x)}"},
         2,
         "When parsing tag 'host=foo(x)': Could not find a filter for type: foo"},
        {{"start=1h-ago", "m=sum:m{}{host=literal_or()}"},
         2,
         "When parsing filter 'host=literal_or()': Filter cannot be null or empty"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct qspec *q = NULL;
        struct ct_err err = {0};
        assert_int_equal(parse_get(bad[i].kv, bad[i].n, &q, &err), CT_EINVAL);
        assert_null(q);
        if (strcmp(err.msg, bad[i].msg))
            fail_msg("case %zu: got [%s] want [%s]", i, err.msg, bad[i].msg);
    }
}

static void test_qspec_tsuid_and_dropcounter_forms(void **state)
{
    (void)state;
    const char *kv[] = {"start=1356998400", "tsuid=sum:rate{dropcounter,,}:000001000001000001,"
                                            "000001000001000002"};
    struct qspec *q = NULL;
    struct ct_err err = {0};
    assert_int_equal(parse_get(kv, 2, &q, &err), CT_OK);
    assert_int_equal(q->subs[0].ntsuids, 2);
    assert_null(q->subs[0].metric);
    assert_string_equal(q->subs[0].tsuids[1], "000001000001000002");
    assert_true(q->subs[0].rate_opts.counter && q->subs[0].rate_opts.drop_resets);
    assert_true(q->subs[0].rate_opts.counter_max == INT64_MAX);
    assert_true(q->end_ms == NOW); /* end defaults to now */
    qspec_free(q);
    /* identical sub queries collapse into one */
    const char *dup[] = {"start=1h-ago", "m=sum:a{h=*}", "m=max:a", "m=sum:a{h=*}"};
    assert_int_equal(parse_get(dup, 4, &q, &err), CT_OK);
    assert_int_equal(q->nsubs, 2);
    assert_string_equal(qagg_name(q->subs[1].agg), "max");
    qspec_free(q);
}

static void test_qspec_json_body_every_field(void **state)
{
    (void)state;
    const char *body =
        "{\"start\":1356998400,\"end\":\"1357000000000\",\"timezone\":\"America/New_York\","
        "\"useCalendar\":true,\"msResolution\":true,\"showTSUIDs\":true,\"showQuery\":true,"
        "\"showSummary\":true,\"noAnnotations\":true,\"globalAnnotations\":true,\"unknown\":1,"
        "\"queries\":[{\"aggregator\":\"max\",\"metric\":\"sys.cpu\",\"downsample\":\"1d-sum\","
        "\"rate\":true,\"rateOptions\":{\"counter\":true,\"counterMax\":1000,\"resetValue\":9,"
        "\"dropResets\":true},\"tags\":{\"host\":\"web*\"},\"filters\":[{\"type\":\"regexp\","
        "\"tagk\":\"dc\",\"filter\":\"l.*\",\"groupBy\":true}],\"explicitTags\":true},"
        "{\"aggregator\":\"none\",\"tsuids\":[\"000001000001000001\"]}]}";
    struct qspec *q = NULL;
    struct ct_err err = {0};
    assert_int_equal(qspec_parse_json(body, strlen(body), NOW, &q, &err), CT_OK);
    assert_true(q->start_ms == 1356998400000LL && q->end_ms == 1357000000000LL);
    assert_true(q->use_calendar && q->ms_resolution && q->show_tsuids && q->show_query &&
                q->show_summary && q->no_annotations && q->global_annotations);
    assert_int_equal(qtime_tz_offset_s(q->tz, 1356998400), -18000); /* America/New_York */
    struct qspec_sub *s = &q->subs[0];
    assert_true(s->ds.calendar && s->rate && s->rate_opts.counter && s->rate_opts.drop_resets);
    assert_true(s->rate_opts.counter_max == 1000 && s->rate_opts.reset_value == 9);
    assert_int_equal(s->nfilters, 2);
    assert_int_equal(qfilter_type(s->filters[0]), QFILTER_IWILDCARD); /* from tags */
    assert_true(qfilter_group_by(s->filters[0]));
    assert_int_equal(qfilter_type(s->filters[1]), QFILTER_REGEXP);
    assert_true(s->explicit_tags);
    assert_true(qagg_is_none(q->subs[1].agg));
    qspec_free(q);
}

/* The scalar fill value in a JSON sub query: in the downsample string, as OpenTSDB 2.3's
 * downsampler object, or as a "fillPolicy" (NumericFillPolicy) beside a string downsample. */
static void test_qspec_json_scalar_fill_forms(void **state)
{
    (void)state;
    static const struct {
        const char *sub;
        enum qagg_fill fill;
        double value;
    } ok[] = {
        {"\"downsample\":\"1m-avg-scalar(7.5)\"", QAGG_FILL_SCALAR, 7.5},
        {"\"downsample\":{\"interval\":\"1m\",\"aggregator\":\"avg\",\"fillPolicy\":"
         "{\"policy\":\"scalar\",\"value\":-3}}",
         QAGG_FILL_SCALAR, -3.0},
        {"\"downsample\":{\"interval\":\"1m\",\"aggregator\":\"avg\"}", QAGG_FILL_NONE, 0},
        {"\"downsample\":\"1m-avg\",\"fillPolicy\":{\"policy\":\"scalar\",\"value\":2}",
         QAGG_FILL_SCALAR, 2.0},
        {"\"downsample\":\"1m-avg-nan\",\"fillPolicy\":{\"value\":9}", QAGG_FILL_SCALAR, 9.0},
        {"\"downsample\":\"1m-avg\",\"fillPolicy\":{\"value\":0}", QAGG_FILL_ZERO, 0},
        {"\"downsample\":\"1m-avg\",\"fillPolicy\":{\"policy\":\"null\"}", QAGG_FILL_NULL, 0},
        {"\"downsample\":\"1m-avg\",\"fillPolicy\":{\"policy\":\"scalar\"}", QAGG_FILL_SCALAR, 0},
        {"\"fillPolicy\":{\"policy\":\"scalar\",\"value\":1}", QAGG_FILL_NONE, 0},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        char body[512];
        snprintf(body, sizeof(body),
                 "{\"start\":1356998400,\"queries\":[{\"aggregator\":\"sum\",\"metric\":"
                 "\"m\",%s}]}",
                 ok[i].sub);
        struct qspec *q = NULL;
        struct ct_err err = {0};
        if (qspec_parse_json(body, strlen(body), NOW, &q, &err) != CT_OK)
            fail_msg("case %zu: %s", i, err.msg);
        assert_int_equal(q->subs[0].ds.fill, ok[i].fill);
        assert_true(q->subs[0].ds.scalar == ok[i].value);
        if (i == 1) {
            assert_int_equal(q->subs[0].ds.interval_ms, 60000);
            assert_string_equal(q->subs[0].ds.text, "1m-avg-scalar(-3)");
        }
        if (i == 4)
            assert_string_equal(q->subs[0].ds.text, "1m-avg-scalar(9)");
        qspec_free(q);
    }
    static const struct {
        const char *sub, *msg;
    } bad[] = {
        {"\"downsample\":{\"aggregator\":\"avg\"}", "Missing or empty interval"},
        {"\"downsample\":{\"interval\":\"1m\"}", "Missing or empty aggregator"},
        {"\"downsample\":\"1m-avg\",\"fillPolicy\":{\"policy\":\"zero\",\"value\":1}",
         "The value for ZERO must be 0"},
        {"\"downsample\":\"1m-avg\",\"fillPolicy\":{\"policy\":\"nan\",\"value\":1}",
         "The value for NONE and NAN must be NaN"},
        {"\"downsample\":\"1m-avg\",\"fillPolicy\":{\"policy\":\"null\",\"value\":1}",
         "The value for NULL must be 0"},
        {"\"downsample\":\"1m-avg\",\"fillPolicy\":{\"policy\":\"bad\"}",
         "Unrecognized fill policy: bad"},
        {"\"downsample\":\"1m-avg\",\"fillPolicy\":{\"policy\":\"scalar\",\"value\":\"x\"}",
         "Invalid scalar fill value 'x': must be a finite number"},
        {"\"downsample\":\"1m-avg\",\"fillPolicy\":3",
         "Unable to parse the given JSON: 'fillPolicy' must be an object"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char body[512];
        snprintf(body, sizeof(body),
                 "{\"start\":1356998400,\"queries\":[{\"aggregator\":\"sum\",\"metric\":"
                 "\"m\",%s}]}",
                 bad[i].sub);
        struct qspec *q = NULL;
        struct ct_err err = {0};
        assert_int_equal(qspec_parse_json(body, strlen(body), NOW, &q, &err), CT_EINVAL);
        if (strcmp(err.msg, bad[i].msg))
            fail_msg("case %zu: got [%s] want [%s]", i, err.msg, bad[i].msg);
    }
}

static void test_qspec_json_errors(void **state)
{
    (void)state;
    static const struct {
        const char *body, *msg;
    } bad[] = {
        {"", "Missing message content"},
        {"{nope", "Unable to parse the given JSON"},
        {"{\"queries\":[{\"aggregator\":\"sum\",\"metric\":\"m\"}]}", "Missing start time"},
        {"{\"start\":\"1h-ago\"}", "Missing queries"},
        {"{\"start\":\"1h-ago\",\"queries\":[]}", "Missing queries"},
        {"{\"start\":\"1h-ago\",\"queries\":[{\"metric\":\"m\"}]}",
         "Missing the aggregation function"},
        {"{\"start\":\"1h-ago\",\"queries\":[{\"aggregator\":\"x\",\"metric\":\"m\"}]}",
         "No such aggregation function: x"},
        {"{\"start\":\"1h-ago\",\"queries\":[{\"aggregator\":\"sum\"}]}",
         "Missing the metric or tsuids, provide at least one"},
        {"{\"start\":\"1h-ago\",\"queries\":[{\"aggregator\":\"sum\",\"metric\":\"m\","
         "\"filters\":[{\"type\":\"nope\",\"tagk\":\"h\",\"filter\":\"x\"}]}]}",
         "Could not find a filter for type: nope"},
        {"{\"start\":\"1h-ago\",\"queries\":[{\"aggregator\":\"sum\",\"metric\":\"m\","
         "\"downsample\":\"1m-avg-bad\"}]}",
         "Unrecognized fill policy: bad"},
        {"{\"start\":\"1h-ago\",\"timezone\":\"Nowhere/X\",\"queries\":[{\"aggregator\":\"sum\","
         "\"metric\":\"m\"}]}",
         "The timezone specification could not be found"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct qspec *q = NULL;
        struct ct_err err = {0};
        assert_int_equal(qspec_parse_json(bad[i].body, strlen(bad[i].body), NOW, &q, &err),
                         CT_EINVAL);
        if (strcmp(err.msg, bad[i].msg))
            fail_msg("case %zu: got [%s] want [%s]", i, err.msg, bad[i].msg);
    }
}

/* TagVFilter.tagsToFilters: a tag equal to a given filter (TagVFilter.equals: class, tag key,
 * case sensitivity, expression with literals as a set; group by ignored) is listed once, as a
 * group by; a tag that differs (value, case sensitivity, key) stays beside the filter. */
static void test_qspec_tags_equal_to_filters_dedup(void **state)
{
    (void)state;
    struct {
        const char *body;
        size_t nfilters;
        size_t ngroup_by;
    } cases[] = {
        /* literal equal to the filter: one, group by */
        {"{\"tags\":{\"host\":\"a\"},\"filters\":[{\"type\":\"literal_or\",\"tagk\":"
         "\"host\",\"filter\":\"a\"}]}",
         1, 1},
        /* literal lists as sets */
        {"{\"tags\":{\"host\":\"a|b\"},\"filters\":[{\"type\":\"literal_or\",\"tagk\":"
         "\"host\",\"filter\":\"b|a\",\"groupBy\":true}]}",
         1, 1},
        /* another value: both */
        {"{\"tags\":{\"host\":\"a\"},\"filters\":[{\"type\":\"literal_or\",\"tagk\":"
         "\"host\",\"filter\":\"b\"}]}",
         2, 1},
        /* iliteral_or is another class than the tag's literal_or */
        {"{\"tags\":{\"host\":\"a\"},\"filters\":[{\"type\":\"iliteral_or\",\"tagk\":"
         "\"host\",\"filter\":\"a\"}]}",
         2, 1},
        /* the tag "web*" is a case-insensitive wildcard: equal to iwildcard, not to wildcard */
        {"{\"tags\":{\"host\":\"web*\"},\"filters\":[{\"type\":\"iwildcard\",\"tagk\":"
         "\"host\",\"filter\":\"WEB*\"}]}",
         1, 1},
        {"{\"tags\":{\"host\":\"web*\"},\"filters\":[{\"type\":\"wildcard\",\"tagk\":"
         "\"host\",\"filter\":\"web*\"}]}",
         2, 1},
        /* another key */
        {"{\"tags\":{\"dc\":\"a\"},\"filters\":[{\"type\":\"literal_or\",\"tagk\":"
         "\"host\",\"filter\":\"a\"}]}",
         2, 1},
        /* two equal filters and the tag: the tag absorbs one */
        {"{\"tags\":{\"host\":\"a\"},\"filters\":[{\"type\":\"literal_or\",\"tagk\":"
         "\"host\",\"filter\":\"a\"},{\"type\":\"literal_or\",\"tagk\":\"host\","
         "\"filter\":\"a\"}]}",
         2, 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char body[512];
        snprintf(body, sizeof(body),
                 "{\"start\":1356998400,\"queries\":[{\"aggregator\":\"sum\",\"metric\":"
                 "\"m\",%.*s}]}",
                 (int)strlen(cases[i].body) - 2, cases[i].body + 1); /* without its braces */
        struct qspec *q = NULL;
        struct ct_err err = {0};
        if (qspec_parse_json(body, strlen(body), NOW, &q, &err) != CT_OK)
            fail_msg("case %zu: %s (%s)", i, err.msg, body);
        const struct qspec_sub *s = &q->subs[0];
        size_t gb = 0;
        for (size_t f = 0; f < s->nfilters; f++)
            gb += qfilter_group_by(s->filters[f]);
        if (s->nfilters != cases[i].nfilters || gb != cases[i].ngroup_by)
            fail_msg("case %zu: %zu filters (%zu group by), want %zu (%zu)", i, s->nfilters, gb,
                     cases[i].nfilters, cases[i].ngroup_by);
        qspec_free(q);
    }
    /* m=: second braces equal to the first, and a tag repeated in the first braces */
    const char *kv[] = {"start=1h-ago", "m=sum:m{host=a,host=a,dc=*}{host=a,dc=iwildcard(*)}"};
    struct qspec *q = NULL;
    struct ct_err err = {0};
    assert_int_equal(parse_get(kv, 2, &q, &err), CT_OK);
    const struct qspec_sub *s = &q->subs[0];
    assert_int_equal(s->nfilters, 2);
    assert_string_equal(qfilter_tagk(s->filters[0]), "host");
    assert_string_equal(qfilter_tagk(s->filters[1]), "dc");
    assert_true(qfilter_group_by(s->filters[0]) && qfilter_group_by(s->filters[1]));
    qspec_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qspec_get_form_parses_m_with_filters_and_options),
        cmocka_unit_test(test_qspec_get_form_errors),
        cmocka_unit_test(test_qspec_tsuid_and_dropcounter_forms),
        cmocka_unit_test(test_qspec_json_body_every_field),
        cmocka_unit_test(test_qspec_json_scalar_fill_forms),
        cmocka_unit_test(test_qspec_json_errors),
        cmocka_unit_test(test_qspec_tags_equal_to_filters_dedup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
