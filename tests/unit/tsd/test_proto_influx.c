/* test_proto_influx.c - the InfluxDB line protocol parser (tsd/proto_influx.h): accepted forms,
 * escapes, field types, precisions, and each refusal. */
#include <stdio.h>
#include <string.h>

#include "tests/lib/ctest.h"
#include "tsd/proto_influx.h"

static struct influx_line ln;
static char buf[1024];
static char msg[256];

static bool parse(const char *s)
{
    snprintf(buf, sizeof(buf), "%s", s);
    msg[0] = '\0';
    return influx_parse_line(buf, strlen(buf), &ln, msg, sizeof(msg));
}

static void test_influx_full_line(void **state)
{
    (void)state;
    assert_true(parse("cpu,host=web01,dc=a usage=1.5,count=7i,up=true 1700000000123456789"));
    assert_int_equal(ln.measurement.len, 3);
    assert_int_equal(ln.ntags, 2);
    assert_memory_equal(ln.tagv[1].p, "a", 1);
    assert_int_equal(ln.nfields, 3);
    assert_int_equal(ln.field[1].type, INFLUX_INT);
    assert_memory_equal(ln.field[1].text.p, "7", ln.field[1].text.len);
    assert_int_equal(ln.field[2].type, INFLUX_BOOL);
    assert_memory_equal(ln.field[2].text.p, "1", 1);
    assert_true(ln.has_ts);
    struct put_point p;
    struct put_str v;
    char m[128];
    assert_true(
        influx_field_point(&ln, 0, ".", INFLUX_NS, 0, m, sizeof(m), &p, &v, msg, sizeof(msg)));
    assert_string_equal(m, "cpu.usage");
    assert_int_equal(p.ts_ms, 1700000000123LL);
    assert_true(p.ms);
    assert_int_equal(p.ntags, 2);
    assert_true(influx_field_point(&ln, 0, "_", INFLUX_S, 0, m, sizeof(m), &p, &v, msg,
                                   sizeof(msg)) == false);
}

static void test_influx_escapes_precision_and_no_ts(void **state)
{
    (void)state;
    assert_true(parse("my\\ m,k\\=x=v\\,1 f=2"));
    assert_int_equal(ln.measurement.len, 4);
    assert_memory_equal(ln.measurement.p, "my m", 4);
    assert_memory_equal(ln.tagk[0].p, "k=x", 3);
    assert_memory_equal(ln.tagv[0].p, "v,1", 3);
    assert_false(ln.has_ts);
    struct put_point p;
    struct put_str v;
    char m[64];
    assert_true(
        influx_field_point(&ln, 0, ".", INFLUX_NS, 42, m, sizeof(m), &p, &v, msg, sizeof(msg)));
    assert_int_equal(p.ts_ms, 42);
    assert_true(parse("m f=-3 1700000000"));
    assert_true(
        influx_field_point(&ln, 0, ".", INFLUX_S, 0, m, sizeof(m), &p, &v, msg, sizeof(msg)));
    assert_int_equal(p.ts_ms, 1700000000000LL);
    assert_false(p.ms);
    enum influx_precision pr;
    assert_true(influx_precision_parse("ms", &pr));
    assert_int_equal(pr, INFLUX_MS);
    assert_true(influx_precision_parse(NULL, &pr));
    assert_int_equal(pr, INFLUX_NS);
    assert_false(influx_precision_parse("x", &pr));
}

static void test_influx_refusals(void **state)
{
    (void)state;
    const char *bad[] = {"",        ",a=b f=1",  "m",         "m,a f=1", "m,a= f=1",
                         "m f",     "m f=",      "m f=\"s\"", "m f=1x",  "m f=ai",
                         "m f=-1u", "m f=1 12a", "m f=1 ",    "m =1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (parse(bad[i]))
            fail_msg("accepted [%s]", bad[i]);
        assert_true(strncmp(msg, "unable to parse: ", 17) == 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_influx_full_line),
        cmocka_unit_test(test_influx_escapes_precision_and_no_ts),
        cmocka_unit_test(test_influx_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
