/* test_qjson.c - the streaming JSON writer: Java Double.toString formatting, quoting of NaN,
 * string escaping, and flushing through a small buffer to the sink. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
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

/* The reference: the shortest of 15, 16 or 17 significant digits (printf + strtod) that reads
 * back to v, laid out as Double.toString. qjson_format_double's short path for decimals of at
 * most 15 digits must print exactly what this prints. */
static size_t ref_format(double v, char *out)
{
    char e[40], digits[24] = {0};
    int prec;
    for (prec = 14; prec < 17; prec++) {
        snprintf(e, sizeof(e), "%.*e", prec, v);
        if (prec == 16 || strtod(e, NULL) == v)
            break;
    }
    size_t nd = 0, o = 0;
    const char *p = e;
    if (*p == '-') {
        out[o++] = '-';
        p++;
    }
    for (; *p && *p != 'e'; p++)
        if (*p != '.')
            digits[nd++] = *p;
    int exp10 = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    double a = fabs(v);
    if (a >= 1e-3 && a < 1e7) {
        if (exp10 >= 0) {
            for (int i = 0; i <= exp10; i++)
                out[o++] = (size_t)i < nd ? digits[i] : '0';
            out[o++] = '.';
            if ((size_t)exp10 + 1 < nd)
                for (size_t i = (size_t)exp10 + 1; i < nd; i++)
                    out[o++] = digits[i];
            else
                out[o++] = '0';
        } else {
            out[o++] = '0';
            out[o++] = '.';
            for (int i = -1; i > exp10; i--)
                out[o++] = '0';
            for (size_t i = 0; i < nd; i++)
                out[o++] = digits[i];
        }
    } else {
        out[o++] = digits[0];
        out[o++] = '.';
        for (size_t i = 1; i < nd; i++)
            out[o++] = digits[i];
        if (nd == 1)
            out[o++] = '0';
        o += (size_t)sprintf(out + o, "E%d", exp10);
    }
    out[o] = 0;
    return o;
}

static void test_qjson_fast_number_forms_print_like_the_general_form(void **state)
{
    (void)state;
    uint64_t x = 88172645463325252ULL;
    char a[48], b[48];
    for (long i = 0; i < 400000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double v;
        switch (i % 6) {
        case 0: /* any bit pattern */
            memcpy(&v, &x, 8);
            if (isnan(v) || isinf(v) || v == 0)
                continue;
            break;
        case 1: /* averages and sums of integers (what downsampling makes) */
            v = (double)(int64_t)(x % 2000000001) / (double)(1 + (x >> 40) % 1000);
            break;
        case 2: /* short decimals at every scale */
            v = (double)(int64_t)(x % 100000000) / pow(10, (double)((x >> 50) % 12));
            break;
        case 3: /* full-precision values around the plain range's edges */
            v = ((double)(x >> 11) / 9007199254740992.0) * pow(10, (double)((x >> 3) % 14) - 5);
            break;
        case 4: /* rates */
            v = (double)(x % 10000) / 60.0 + (double)((x >> 20) % 1000) / 6.0;
            break;
        default: /* sums and rates of byte counters (1e6 .. 1e16, the E form from 1e7) */
            v = (double)(x >> 11) / (double)(1 + (x % 997)) * pow(10, (double)((x >> 5) % 10) - 9);
            break;
        }
        if (x & 1)
            v = -v;
        qjson_format_double(v, a);
        ref_format(v, b);
        if (strcmp(a, b))
            fail_msg("%.17g: got %s want %s", v, a, b);
        /* integers as printf writes them */
        int64_t iv = i % 3 == 0 ? (int64_t)x : (int64_t)(x % 100000) - 50000;
        if (i == 1)
            iv = INT64_MIN;
        else if (i == 2)
            iv = INT64_MAX;
        a[qjson_format_i64(iv, a)] = 0;
        snprintf(b, sizeof(b), "%lld", (long long)iv);
        assert_string_equal(a, b);
    }
    /* every digit count's edges: 0, 10^k - 1, 10^k, 10^k + 1 and their negatives */
    for (int k = 0; k <= 18; k++) {
        int64_t p = 1;
        for (int e = 0; e < k; e++)
            p *= 10;
        const int64_t vs[] = {p - 1, p, p + 1, -(p - 1), -p, -(p + 1)};
        for (size_t m = 0; m < sizeof(vs) / sizeof(vs[0]); m++) {
            a[qjson_format_i64(vs[m], a)] = 0;
            snprintf(b, sizeof(b), "%lld", (long long)vs[m]);
            assert_string_equal(a, b);
        }
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
    char d[32];
    qjson_lit(j, "\"");
    qjson_raw(j, d, qjson_format_double(NAN, d));
    qjson_lit(j, "\",");
    qjson_raw(j, d, qjson_format_double(2.5, d));
    qjson_lit(j, "]}");
    assert_int_equal(qjson_flush(j), CT_OK);
    assert_string_equal(b.data, "{\"a\\\"b\\\\c\\n\\u0001\":[-42,\"NaN\",2.5]}");
    assert_true(b.calls > 2); /* it did stream */
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
        cmocka_unit_test(test_qjson_fast_number_forms_print_like_the_general_form),
        cmocka_unit_test(test_qjson_streams_through_a_small_buffer),
        cmocka_unit_test(test_qjson_sink_error_is_sticky),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
