/* test_qjson.c - the streaming JSON writer: Java Double.toString formatting, quoting of NaN,
 * string escaping, and flushing through a small buffer to the sink. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "query/qjson.h"
#include "tests/lib/ctest.h"

struct sinkbuf {
    char data[4096];
    size_t len;
    int calls;
};

static int sink(void *arg, const char *d, size_t n)
{
    struct sinkbuf *b = arg;
    if (b->len + n >= sizeof(b->data))
        return CT_ELIMIT;
    memcpy(b->data + b->len, d, n);
    b->len += n;
    b->data[b->len] = 0;
    b->calls++;
    return CT_OK;
}

static void test_qjson_doubles_print_like_java(void **state)
{
    (void)state;
    static const struct {
        double v;
        const char *want;
    } cases[] = {
        {5.0, "5.0"},
        {1.5, "1.5"},
        {-2.25, "-2.25"},
        {100.0, "100.0"},
        {1234567.0, "1234567.0"},
        {1e7, "1.0E7"},
        {12345678.9, "1.23456789E7"},
        {0.001, "0.001"},
        {0.0001, "1.0E-4"},
        {3.0e-5, "3.0E-5"},
        {0.1 + 0.2, "0.30000000000000004"},
        {0.0, "0.0"},
        {-0.0, "-0.0"},
        {1e21, "1.0E21"},
        {42.42, "42.42"},
        {NAN, "NaN"},
        {INFINITY, "Infinity"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char b[40];
        qjson_format_double(cases[i].v, b);
        if (strcmp(b, cases[i].want))
            fail_msg("case %zu: got %s want %s", i, b, cases[i].want);
    }
}

static void test_qjson_streams_through_a_small_buffer(void **state)
{
    (void)state;
    struct sinkbuf b = {.len = 0};
    struct qjson *j = qjson_new(sink, &b, 8);
    assert_non_null(j);
    qjson_lit(j, "{");
    qjson_str(j, "a\"b\\c\n\x01");
    qjson_lit(j, ":[");
    qjson_i64(j, -42);
    qjson_lit(j, ",");
    qjson_double(j, NAN);
    qjson_lit(j, ",");
    qjson_double(j, 2.5);
    qjson_lit(j, "]}");
    assert_int_equal(qjson_flush(j), CT_OK);
    assert_string_equal(b.data, "{\"a\\\"b\\\\c\\n\\u0001\":[-42,\"NaN\",2.5]}");
    assert_true(b.calls > 2); /* it did stream */
    assert_true(qjson_bytes(j) == b.len);
    qjson_free(j);
}

static void test_qjson_sink_error_is_sticky(void **state)
{
    (void)state;
    struct sinkbuf b = {.len = sizeof(b.data) - 4};
    struct qjson *j = qjson_new(sink, &b, 4);
    qjson_lit(j, "0123456789");
    qjson_lit(j, "x");
    assert_int_equal(qjson_flush(j), CT_ELIMIT);
    qjson_free(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qjson_doubles_print_like_java),
        cmocka_unit_test(test_qjson_streams_through_a_small_buffer),
        cmocka_unit_test(test_qjson_sink_error_is_sticky),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
