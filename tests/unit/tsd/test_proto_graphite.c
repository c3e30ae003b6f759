/* test_proto_graphite.c - Graphite plaintext lines and template mapping (tsd/proto_graphite.h):
 * the line shape, the default mapping, measurement/field/tag parts, greedy parts, filters, an
 * entry's own tags, and each refusal (bad lines, bad templates). */
#include <stdio.h>
#include <string.h>

#include "tests/lib/ctest.h"
#include "tsd/proto_graphite.h"

static char buf[512];
static char msg[256];
static struct put_point pt;
static struct put_str val;

static bool map(const struct graphite_map *m, const char *line)
{
    msg[0] = '\0';
    return graphite_map_line(m, line, strlen(line), 42000, buf, sizeof(buf), &pt, &val, msg,
                             sizeof(msg));
}

static void assert_span(struct put_str s, const char *want)
{
    char t[256];
    snprintf(t, sizeof(t), "%.*s", (int)s.len, s.p);
    assert_string_equal(t, want);
}

/* tag i is k=v */
static void assert_tag(size_t i, const char *k, const char *v)
{
    assert_true(i < pt.ntags);
    assert_span(pt.tagk[i], k);
    assert_span(pt.tagv[i], v);
}

static void test_graphite_shape(void **state)
{
    (void)state;
    const char *ok[] = {"a.b 1 1700000000", "a.b 1.5e3 1700000000\r", "x -2 -1", "a 0.25 17.5"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        assert_true(graphite_line_shape(ok[i], strlen(ok[i])));
    const char *bad[] = {
        "a.b 1", "a.b 1 2 3", "a.b x 1700000000", "a.b 1 17000x", "put a.b 1 2 k=v", "", "   "};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(graphite_line_shape(bad[i], strlen(bad[i])));
}

static void test_graphite_default_mapping(void **state)
{
    (void)state;
    struct graphite_map *m = graphite_map_new("", "source=graphite", msg, sizeof(msg));
    assert_non_null(m);
    assert_true(map(m, "servers.web01.cpu.load 0.5 1700000000"));
    assert_span(pt.metric, "servers.web01.cpu.load");
    assert_int_equal(pt.ntags, 1);
    assert_tag(0, "source", "graphite");
    assert_span(val, "0.5");
    assert_int_equal(pt.ts_ms, 1700000000000LL);
    assert_false(pt.ms);
    assert_true(map(m, "a 1 -1")); /* -1 = now */
    assert_int_equal(pt.ts_ms, 42000);
    assert_true(map(m, "a 1 1700000000.75")); /* fraction dropped */
    assert_int_equal(pt.ts_ms, 1700000000000LL);
    graphite_map_free(m);
}

static void test_graphite_templates(void **state)
{
    (void)state;
    struct graphite_map *m = graphite_map_new("servers.* .host.measurement.field* dc=a;"
                                              "stats.* .region.region.measurement;"
                                              "collectd.* .host.measurement* type=cd,host=never;"
                                              "measurement.measurement",
                                              "source=graphite", msg, sizeof(msg));
    assert_non_null(m);
    /* filter 1: host tag, measurement, greedy field, the entry's tag */
    assert_true(map(m, "servers.web01.cpu.load.avg1 2 1700000000"));
    assert_span(pt.metric, "cpu.load.avg1");
    assert_int_equal(pt.ntags, 2);
    assert_tag(0, "host", "web01");
    assert_tag(1, "dc", "a");
    /* filter 2: two region parts join with '.' */
    assert_true(map(m, "stats.eu.west.hits 3 1700000000"));
    assert_span(pt.metric, "hits");
    assert_int_equal(pt.ntags, 1);
    assert_tag(0, "region", "eu.west");
    assert_true(map(m, "stats.eu.west.hits.x 3 1700000000")); /* parts past the template dropped */
    assert_span(pt.metric, "hits");
    /* filter 3: the path's host wins over the entry's host=never */
    assert_true(map(m, "collectd.box1.cpu-0.cpu-idle 99 1700000000"));
    assert_span(pt.metric, "cpu-0.cpu-idle");
    assert_int_equal(pt.ntags, 2);
    assert_tag(0, "host", "box1");
    assert_tag(1, "type", "cd");
    /* no filter: matches the rest; two measurement parts join with '.'; no tag: the default
     * tag */
    assert_true(map(m, "other.thing.more 1 1700000000"));
    assert_span(pt.metric, "other.thing");
    assert_tag(0, "source", "graphite");
    /* a filter longer than the path does not match; the catch-all does */
    assert_true(map(m, "servers 1 1700000000"));
    assert_span(pt.metric, "servers");
    graphite_map_free(m);

    /* a template without measurement: the whole path is the metric, tags still taken */
    m = graphite_map_new("host.", "s=g", msg, sizeof(msg));
    assert_non_null(m);
    assert_true(map(m, "h1.x.y 1 1700000000"));
    assert_span(pt.metric, "h1.x.y");
    assert_tag(0, "host", "h1");
    graphite_map_free(m);
}

static void test_graphite_refusals(void **state)
{
    (void)state;
    const char *bad_templates[] = {
        "measurement*.host", /* '*' before the last part */
        "a b c d",           /* too many words */
        "x.* measurement k", /* tags not k=v */
        "k=v",               /* tags without a template */
        "me*as.host",        /* '*' inside a tag name */
    };
    for (size_t i = 0; i < sizeof(bad_templates) / sizeof(bad_templates[0]); i++) {
        msg[0] = '\0';
        assert_null(graphite_map_new(bad_templates[i], "a=b", msg, sizeof(msg)));
        assert_true(msg[0] != '\0');
    }
    assert_null(graphite_map_new("", "novalue", msg, sizeof(msg)));
    assert_null(graphite_map_new("", "=v", msg, sizeof(msg)));

    struct graphite_map *m = graphite_map_new(NULL, "a=b", msg, sizeof(msg));
    assert_non_null(m);
    assert_false(map(m, "a..b 1 1700000000"));
    assert_non_null(strstr(msg, "empty part"));
    assert_false(map(m, "a.b x 1700000000"));
    assert_false(map(m, "a.b 1"));
    assert_false(map(m, "a.b 1 1e300"));
    assert_non_null(strstr(msg, "out of range"));
    /* output that does not fit the buffer fails instead of overflowing */
    char line[600];
    memset(line, 'x', 550);
    snprintf(line + 550, sizeof(line) - 550, " 1 1700000000");
    assert_false(map(m, line));
    assert_non_null(strstr(msg, "too long"));
    graphite_map_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graphite_shape),
        cmocka_unit_test(test_graphite_default_mapping),
        cmocka_unit_test(test_graphite_templates),
        cmocka_unit_test(test_graphite_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
