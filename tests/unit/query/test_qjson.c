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

/* The short-decimal path (at most 6 fractional digits, |v| in [1e-3, 1e7)) against the
 * reference: every decimal of 1..6 fractional digits at every magnitude of the range, their
 * neighbouring doubles (which must not be taken for the decimal), powers of two and their
 * neighbours (the half-size gap below), and the range's edges. QJSON_RANDOM_N raises the count
 * of random values (default 200,000; a check run used 20,000,000). */
static void test_qjson_short_decimals_print_like_the_general_form(void **state)
{
    (void)state;
    long n = 200000;
    const char *env = getenv("QJSON_RANDOM_N");
    if (env && atol(env) > 0)
        n = atol(env);
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    char a[48], b[48];
    long checked = 0;
    for (long i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int k = 1 + (int)(x % 6);
        double p10 = pow(10, k);
        /* an integer of 1 .. 13 digits scaled to k decimals: 0.001 .. 9999999.999999 */
        uint64_t digits = 1 + (uint64_t)(x >> 20) % (uint64_t)pow(10, 1 + (double)((x >> 8) % 13));
        double v = (double)digits / p10;
        if (x & 0x10000)
            v = -v;
        const double vs[] = {v, nextafter(v, 0), nextafter(v, 2 * v), v * 3, v / 7};
        for (size_t m = 0; m < sizeof(vs) / sizeof(vs[0]); m++) {
            qjson_format_double(vs[m], a);
            ref_format(vs[m], b);
            if (strcmp(a, b))
                fail_msg("%.17g: got %s want %s", vs[m], a, b);
            checked++;
        }
    }
    /* powers of two from 2^-10 to 2^23 and their neighbours; the range's edges */
    for (int e = -10; e <= 23; e++) {
        double p = ldexp(1, e);
        const double vs[] = {p,
                             nextafter(p, 0),
                             nextafter(p, 1e300),
                             p * 1.5,
                             1e-3,
                             nextafter(1e-3, 0),
                             nextafter(1e-3, 1),
                             1e7,
                             nextafter(1e7, 0),
                             9999999.999999,
                             0.001001,
                             0.1,
                             0.2,
                             0.3,
                             0.7,
                             1.1,
                             2.675};
        for (size_t m = 0; m < sizeof(vs) / sizeof(vs[0]); m++) {
            for (int sign = 0; sign < 2; sign++) {
                double w = sign ? -vs[m] : vs[m];
                qjson_format_double(w, a);
                ref_format(w, b);
                if (strcmp(a, b))
                    fail_msg("%.17g: got %s want %s", w, a, b);
            }
        }
    }
    assert_true(checked >= 5 * n);
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
        cmocka_unit_test(test_qjson_short_decimals_print_like_the_general_form),
        cmocka_unit_test(test_qjson_streams_through_a_small_buffer),
        cmocka_unit_test(test_qjson_sink_error_is_sticky),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
