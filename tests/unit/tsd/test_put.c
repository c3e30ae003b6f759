/* test_put.c - the telnet put-line parser and the shared datapoint checks (tsd/put.h): every
 * error text of docs/opentsdb-compat.md, "`put` and its checks", in OpenTSDB's order, and the
 * accepted forms. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/ctest.h"
#include "tsd/put.h"

static struct put_point pt;
static char msg[1024];
static const struct put_rules rules8 = {8, ""};

static enum put_status parse(const char *line)
{
    msg[0] = '\0';
    return put_parse_line(line, strlen(line), &rules8, &pt, msg, sizeof(msg));
}

static void expect_err(const char *line, enum put_status st, const char *text)
{
    enum put_status got = parse(line);
    if (got != st || strcmp(msg, text) != 0)
        fail_msg("line [%s]: expected %d [%s], got %d [%s]", line, st, text, got, msg);
}

static void test_put_accepts_a_plain_line(void **state)
{
    (void)state;
    assert_int_equal(parse("put sys.cpu.user 1356998400 42 host=web01 cpu=0"), PUT_OK);
    assert_int_equal(pt.metric.len, 12);
    assert_memory_equal(pt.metric.p, "sys.cpu.user", 12);
    assert_int_equal(pt.ts_ms, 1356998400000LL);
    assert_false(pt.ms);
    assert_int_equal(pt.value.kind, PUT_INT);
    assert_int_equal(pt.value.i, 42);
    assert_int_equal(pt.ntags, 2);
    assert_memory_equal(pt.tagk[1].p, "cpu", 3);
    assert_memory_equal(pt.tagv[1].p, "0", 1);
}

static void test_put_milliseconds_and_dotted_timestamps(void **state)
{
    (void)state;
    assert_int_equal(parse("put m 1356998400123 1 a=b"), PUT_OK);
    assert_int_equal(pt.ts_ms, 1356998400123LL);
    assert_true(pt.ms);
    assert_int_equal(parse("put m 1500000000.123 1 a=b"), PUT_OK);
    assert_int_equal(pt.ts_ms, 1500000000123LL);
    assert_true(pt.ms);
    /* a 32-bit value is seconds even when large */
    assert_int_equal(parse("put m 4294967295 1 a=b"), PUT_OK);
    assert_int_equal(pt.ts_ms, 4294967295000LL);
}

static void test_put_value_typing_follows_opentsdb(void **state)
{
    (void)state;
    assert_int_equal(parse("put m 1 -9223372036854775808 a=b"), PUT_OK);
    assert_int_equal(pt.value.kind, PUT_INT);
    assert_true(pt.value.i == INT64_MIN);
    assert_int_equal(parse("put m 1 1.5 a=b"), PUT_OK);
    assert_int_equal(pt.value.kind, PUT_FLOAT);
    assert_true(pt.value.d == 1.5);
    assert_int_equal(parse("put m 1 0.1 a=b"), PUT_OK);
    assert_int_equal(pt.value.kind, PUT_DOUBLE);
    assert_int_equal(parse("put m 1 1e3 a=b"), PUT_OK);
    assert_int_equal(pt.value.kind, PUT_FLOAT);
    assert_true(pt.value.d == 1000.0);
    assert_int_equal(parse("put m 1 2.5f a=b"), PUT_OK);
    assert_true(pt.value.d == 2.5);
}

static void test_put_runs_of_spaces_in_tag_positions_and_cr(void **state)
{
    (void)state;
    /* collectd's write_tsdb ends lines with "fqdn=host  \r\n" when it has no extra tags */
    assert_int_equal(parse("put m 1 2 fqdn=h  \r"), PUT_OK);
    assert_int_equal(pt.ntags, 1);
    assert_int_equal(parse("put m 1 2  a=b   c=d"), PUT_OK);
    assert_int_equal(pt.ntags, 2);
    /* an identical repeated tag is ignored */
    assert_int_equal(parse("put m 1 2 a=b a=b"), PUT_OK);
    assert_int_equal(pt.ntags, 1);
}

static void test_put_error_1_not_enough_arguments(void **state)
{
    (void)state;
    expect_err("put", PUT_EARG,
               "put: illegal argument: not enough arguments (need least 4, got 0)");
    expect_err("put m 1 2", PUT_EARG,
               "put: illegal argument: not enough arguments (need least 4, got 3)");
}

static void test_put_error_2_empty_metric(void **state)
{
    (void)state;
    expect_err("put  1 2 a=b", PUT_EARG, "put: illegal argument: empty metric name");
}

static void test_put_error_3_timestamps(void **state)
{
    (void)state;
    expect_err("put m 12x 1 a=b", PUT_ENUMBER, "put: invalid value: Invalid character 'x' in 12x");
    expect_err("put m  1 a=b", PUT_ENUMBER, "put: invalid value: Empty string");
    expect_err("put m + 1 a=b", PUT_ENUMBER, "put: invalid value: Just a sign, no value: +");
    expect_err("put m 12345678901234567890 1 a=b", PUT_ENUMBER,
               "put: invalid value: Value too long: 12345678901234567890");
    expect_err("put m 9999999999999999999 1 a=b", PUT_ENUMBER,
               "put: invalid value: Overflow in 9999999999999999999");
    expect_err("put m 0 1 a=b", PUT_EARG, "put: illegal argument: invalid timestamp: 0");
    expect_err("put m -5 1 a=b", PUT_EARG, "put: illegal argument: invalid timestamp: -5");
}

static void test_put_error_4_empty_value(void **state)
{
    (void)state;
    expect_err("put m 1  a=b", PUT_EARG, "put: illegal argument: empty value");
}

static void test_put_error_5_tags(void **state)
{
    (void)state;
    expect_err("put m 1 1 a=b=c", PUT_EARG, "put: illegal argument: invalid tag: a=b=c");
    expect_err("put m 1 1 a=", PUT_EARG, "put: illegal argument: invalid tag: a=");
    expect_err("put m 1 1 =b", PUT_EARG, "put: illegal argument: invalid tag: =b");
    expect_err("put m 1 1 ab", PUT_EARG, "put: illegal argument: invalid tag: ab");
    expect_err("put m 1 1 host=a host=b", PUT_EARG,
               "put: illegal argument: duplicate tag: host=b, tags={host=a}");
}

static void test_put_error_6_values(void **state)
{
    (void)state;
    expect_err("put m 1 x a=b", PUT_ENUMBER, "put: invalid value: Invalid character 'x' in x");
    expect_err("put m 1 1.2.3 a=b", PUT_ENUMBER, "put: invalid value: For input string: \"1.2.3\"");
    expect_err("put m 1 1e999 a=b", PUT_EARG,
               "put: illegal argument: value is NaN or Infinite: Infinity for metric=m "
               "timestamp=1");
    expect_err("put m 1 -1e999 a=b", PUT_EARG,
               "put: illegal argument: value is NaN or Infinite: -Infinity for metric=m "
               "timestamp=1");
}

static void test_put_error_7_timestamp_range(void **state)
{
    (void)state;
    expect_err("put m 10000000000000 1 a=b", PUT_EARG,
               "put: illegal argument: bad timestamp=10000000000000 when trying to add "
               "value=[1]/0 to metric=m, tags={a=b}");
    expect_err("put m 10000000000000 300 a=b", PUT_EARG,
               "put: illegal argument: bad timestamp=10000000000000 when trying to add "
               "value=[1, 44]/1 to metric=m, tags={a=b}");
}

static void test_put_error_8_tag_count(void **state)
{
    (void)state;
    expect_err("put m 1 1 ", PUT_EARG,
               "put: illegal argument: Need at least one tag (metric=m, tags={})");
    expect_err("put m 1 1 a=1 b=2 c=3 d=4 e=5 f=6 g=7 h=8 i=9", PUT_EARG,
               "put: illegal argument: Too many tags: 9 maximum allowed: 8, tags: {a=1, b=2, "
               "c=3, d=4, e=5, f=6, g=7, h=8, i=9}");
    struct put_rules r2 = {2, ""};
    assert_int_equal(put_parse_line("put m 1 1 a=1 b=2 c=3", 21, &r2, &pt, msg, sizeof(msg)),
                     PUT_EARG);
    assert_non_null(strstr(msg, "Too many tags: 3 maximum allowed: 2"));
}

static void test_put_error_9_names(void **state)
{
    (void)state;
    expect_err("put m!x 1 1 a=b", PUT_EARG,
               "put: illegal argument: Invalid metric name (\"m!x\"): illegal character: !");
    expect_err("put m 1 1 a@=b", PUT_EARG,
               "put: illegal argument: Invalid tag name with value [b] (\"a@\"): illegal "
               "character: @");
    expect_err("put m 1 1 a=b#", PUT_EARG,
               "put: illegal argument: Invalid tag value with key [a] (\"b#\"): illegal "
               "character: #");
    /* Unicode letters are legal, symbols are not */
    assert_int_equal(parse("put caf\xc3\xa9 1 1 h\xc3\xb4te=\xe6\x9d\xb1\xe4\xba\xac"), PUT_OK);
    expect_err("put m\xe2\x82\xac 1 1 a=b", PUT_EARG,
               "put: illegal argument: Invalid metric name (\"m\xe2\x82\xac\"): illegal "
               "character: \xe2\x82\xac");
    struct put_rules special = {8, "!@"};
    assert_int_equal(put_parse_line("put m!x 1 1 a@=b", 16, &special, &pt, msg, sizeof(msg)),
                     PUT_OK);
}

static void test_put_errors_come_in_opentsdb_order(void **state)
{
    (void)state;
    /* timestamp before value and tags */
    expect_err("put m 12x y a=b=c", PUT_ENUMBER,
               "put: invalid value: Invalid character 'x' in 12x");
    /* tags are split before the value is typed */
    expect_err("put m 1 y a=b=c", PUT_EARG, "put: illegal argument: invalid tag: a=b=c");
    /* the value before the tag count */
    expect_err("put m 1 y ", PUT_ENUMBER, "put: invalid value: Invalid character 'y' in y");
    /* the timestamp range before the tag count */
    expect_err("put m 10000000000000 1 ", PUT_EARG,
               "put: illegal argument: bad timestamp=10000000000000 when trying to add "
               "value=[1]/0 to metric=m, tags={}");
    /* the tag count before the characters */
    expect_err("put m! 1 1 ", PUT_EARG,
               "put: illegal argument: Need at least one tag (metric=m!, tags={})");
    /* the metric before the tags' characters */
    expect_err("put m! 1 1 a!=b", PUT_EARG,
               "put: illegal argument: Invalid metric name (\"m!\"): illegal character: !");
}

static void test_put_check_point_used_by_http(void **state)
{
    (void)state;
    struct put_point p;
    memset(&p, 0, sizeof(p));
    p.metric = (struct put_str){"m", 1};
    p.ts_ms = 1356998400;
    p.ntags = 1;
    p.tagk[0] = (struct put_str){"a", 1};
    p.tagv[0] = (struct put_str){"", 0};
    assert_int_equal(put_check_point(&p, (struct put_str){"5", 1}, &rules8, msg, sizeof(msg)),
                     PUT_EARG);
    assert_string_equal(msg, "illegal argument: Invalid tag value with key [a]: empty string");
    p.tagv[0] = (struct put_str){"b", 1};
    assert_int_equal(put_check_point(&p, (struct put_str){"5", 1}, &rules8, msg, sizeof(msg)),
                     PUT_OK);
    assert_int_equal(p.ts_ms, 1356998400000LL);
}

static void test_put_parse_long_edges(void **state)
{
    (void)state;
    int64_t v;
    assert_true(put_parse_long("9223372036854775807", 19, &v, msg, sizeof(msg)));
    assert_true(v == INT64_MAX);
    assert_false(put_parse_long("9223372036854775808", 19, &v, msg, sizeof(msg)));
    assert_string_equal(msg, "Overflow in 9223372036854775808");
    assert_true(put_parse_long("+12", 3, &v, msg, sizeof(msg)));
    assert_int_equal(v, 12);
    assert_false(put_parse_long("-", 1, &v, msg, sizeof(msg)));
    assert_string_equal(msg, "Just a sign, no value: -");
    assert_true(put_parse_long("-9223372036854775808", 20, &v, msg, sizeof(msg)));
    assert_true(v == INT64_MIN);
    /* every length up to 19 digits (18 and fewer take the path without overflow checks), with
     * and without a sign, equals strtoll; a bad character at any position gives its message */
    char num[32], want[96];
    for (int len = 1; len <= 19; len++) {
        for (int sign = 0; sign < 3; sign++) {
            int n = 0;
            if (sign)
                num[n++] = sign == 1 ? '+' : '-';
            for (int i = 0; i < len; i++)
                num[n++] = (char)('0' + (i == 0 ? (len == 19 ? 8 : 9) : (i * 7 + len) % 10));
            num[n] = '\0';
            assert_true(put_parse_long(num, (size_t)n, &v, msg, sizeof(msg)));
            assert_true(v == strtoll(num, NULL, 10));
            for (int at = sign ? 1 : 0; at < n; at++) {
                char bad[32];
                memcpy(bad, num, (size_t)n + 1);
                bad[at] = at % 2 ? 'x' : '/';
                assert_false(put_parse_long(bad, (size_t)n, &v, msg, sizeof(msg)));
                snprintf(want, sizeof want, "Invalid character '%c' in %s", bad[at], bad);
                assert_string_equal(msg, want);
            }
        }
    }
}

static void test_put_decimal_values_equal_strtod_bit_for_bit(void **state)
{
    /* the decimal fast path must give exactly the double the general parser gives */
    (void)state;
    static const char *const fixed[] = {
        "0.1",
        "-0.0",
        "+2.5",
        "1.",
        ".5",
        "-.75",
        "123456789012345.6",
        "0.000000000000000000001",
        "99999999999999.9",
        "1234567890.12345",
        "0.30000000000000004",
        "00012.500",
        "9007199254740993.0",
        "1.7976931348623157",
        "4.9406564584124654",
        "100000000000000000.5",
    };
    unsigned x = 12345;
    char line[128], v[64];
    for (int i = 0; i < 20000 + (int)(sizeof(fixed) / sizeof(fixed[0])); i++) {
        if (i < (int)(sizeof(fixed) / sizeof(fixed[0]))) {
            snprintf(v, sizeof(v), "%s", fixed[i]);
        } else {
            size_t n = 0;
            x = x * 1103515245u + 12345u;
            if (x >> 31)
                v[n++] = '-';
            int intd = (int)((x >> 8) % 12), fracd = 1 + (int)((x >> 16) % 12);
            for (int d = 0; d < intd; d++) {
                x = x * 1103515245u + 12345u;
                v[n++] = (char)('0' + (x >> 16) % 10);
            }
            v[n++] = '.';
            for (int d = 0; d < fracd; d++) {
                x = x * 1103515245u + 12345u;
                v[n++] = (char)('0' + (x >> 16) % 10);
            }
            v[n] = '\0';
        }
        snprintf(line, sizeof(line), "put m 1 %s a=b", v);
        if (parse(line) != PUT_OK)
            fail_msg("value %s: %s", v, msg);
        double want = strtod(v, NULL);
        if (memcmp(&pt.value.d, &want, sizeof(want)) != 0)
            fail_msg("value %s: got %.17g, strtod %.17g", v, pt.value.d, want);
        enum put_kind k = (double)(float)want == want ? PUT_FLOAT : PUT_DOUBLE;
        assert_int_equal(pt.value.kind, k);
    }
}

/* put_check_typed with put_check_names equals put_check_point on the value's text: status,
 * message, stored value, timestamp - over good and bad timestamps, names and tag counts. */
static void test_put_check_typed_equals_the_text_path(void **state)
{
    (void)state;
    static struct put_point a, b;
    const struct put_rules rules = {3, ""};
    struct {
        const char *text;
        struct put_value v;
    } vals[] = {
        {"42", {PUT_INT, 42, 0}},
        {"-7", {PUT_INT, -7, 0}},
        {"0.5", {PUT_FLOAT, 0, 0.5}},
        {"0.1", {PUT_DOUBLE, 0, 0.1}},
        {"1e300", {PUT_DOUBLE, 0, 1e300}},
    };
    const int64_t tss[] = {1700000000, 1700000000123, -5, 99999999999999, 4294967296LL * 2};
    const char *names[][4] = {
        {"m", "a", "b", NULL},        {"m", "a", "b", "x"}, /* x: a fourth tag, too many */
        {"m!", "a", "b", NULL},       {"m", "a", "b c", NULL},
        {"m", "", "b", NULL},         {"", "a", "b", NULL},
    };
    for (size_t n = 0; n < sizeof(names) / sizeof(names[0]); n++) {
        for (size_t t = 0; t < sizeof(tss) / sizeof(tss[0]); t++) {
            for (size_t v = 0; v < sizeof(vals) / sizeof(vals[0]); v++) {
                memset(&a, 0, sizeof(a));
                a.metric = (struct put_str){names[n][0], strlen(names[n][0])};
                a.ntags = 1;
                a.tagk[0] = (struct put_str){names[n][1], strlen(names[n][1])};
                a.tagv[0] = (struct put_str){names[n][2], strlen(names[n][2])};
                if (names[n][3]) {
                    static const char *k[] = {"x", "y", "z"};
                    for (size_t i = 0; i < 3; i++) {
                        a.tagk[a.ntags] = (struct put_str){k[i], 1};
                        a.tagv[a.ntags++] = (struct put_str){"1", 1};
                    }
                }
                a.ts_ms = tss[t];
                b = a;
                char m1[1024] = "", m2[1024] = "";
                enum put_status s1 = put_check_point(
                    &a, (struct put_str){vals[v].text, strlen(vals[v].text)}, &rules, m1,
                    sizeof(m1));
                struct put_names pn;
                put_check_names(&b, &rules, &pn);
                enum put_status s2 = put_check_typed(&b, vals[v].v, &pn, m2, sizeof(m2));
                assert_int_equal(s1, s2);
                assert_string_equal(m1, m2);
                if (s1 == PUT_OK) {
                    assert_int_equal(a.ts_ms, b.ts_ms);
                    assert_int_equal(a.ms, b.ms);
                    assert_int_equal(a.value.kind, b.value.kind);
                    assert_int_equal(a.value.i, b.value.i);
                    assert_true(a.value.kind == PUT_INT || a.value.d == b.value.d);
                }
            }
        }
    }
    /* a non-finite double: the text path's message */
    memset(&a, 0, sizeof(a));
    a.metric = (struct put_str){"m", 1};
    a.ntags = 1;
    a.tagk[0] = (struct put_str){"a", 1};
    a.tagv[0] = (struct put_str){"b", 1};
    a.ts_ms = 1700000000;
    struct put_names pn;
    put_check_names(&a, &rules, &pn);
    assert_int_equal(pn.status, PUT_OK);
    char m[256];
    assert_int_equal(put_check_typed(&a, (struct put_value){PUT_DOUBLE, 0, INFINITY}, &pn, m,
                                     sizeof(m)),
                     PUT_EARG);
    assert_string_equal(
        m, "illegal argument: value is NaN or Infinite: Infinity for metric=m timestamp=1700000000");
}

/* put_str_plain says which names the rules need not walk, and put_check_point_names with that
 * answer gives put_check_point's status and message, for plain and other names alike. */
static void test_put_check_point_names_equals_put_check_point(void **state)
{
    (void)state;
    assert_true(put_str_plain((struct put_str){"sys.cpu-user_1/a", 16}));
    assert_true(put_str_plain((struct put_str){"", 0}));
    static const char *const notplain[] = {"a b", "a!", "caf\xc3\xa9", "a=b", "\x01", "a:b", "~"};
    for (size_t i = 0; i < sizeof(notplain) / sizeof(notplain[0]); i++)
        assert_false(put_str_plain((struct put_str){notplain[i], strlen(notplain[i])}));
    for (int c = 0; c < 256; c++) {
        char b = (char)c;
        bool want = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.' || c == '/';
        assert_int_equal(put_str_plain((struct put_str){&b, 1}), want);
    }
    const struct put_rules rules = {8, "!"};
    static const char *const names[][3] = {
        {"m", "a", "b"},           {"m!", "a", "b"},  {"m", "a@", "b"},
        {"m", "a", "b#"},          {"m", "", "b"},    {"", "a", "b"},
        {"caf\xc3\xa9", "a", "b"}, {"m", "a", "b c"}, {"m", "a", ""},
    };
    for (size_t n = 0; n < sizeof(names) / sizeof(names[0]); n++) {
        static struct put_point a, b;
        memset(&a, 0, sizeof(a));
        a.metric = (struct put_str){names[n][0], strlen(names[n][0])};
        a.ntags = 1;
        a.tagk[0] = (struct put_str){names[n][1], strlen(names[n][1])};
        a.tagv[0] = (struct put_str){names[n][2], strlen(names[n][2])};
        a.ts_ms = 1356998400;
        b = a;
        bool plain =
            put_str_plain(a.metric) && put_str_plain(a.tagk[0]) && put_str_plain(a.tagv[0]);
        char m1[1024] = "", m2[1024] = "";
        enum put_status s1 =
            put_check_point(&a, (struct put_str){"1.5", 3}, &rules, m1, sizeof(m1));
        enum put_status s2 =
            put_check_point_names(&b, (struct put_str){"1.5", 3}, &rules, plain, m2, sizeof(m2));
        assert_int_equal(s1, s2);
        assert_string_equal(m1, m2);
        assert_int_equal(a.ts_ms, b.ts_ms);
    }
}

/* Every byte value that is not a digit, at every position of every length up to 19 digits, makes
 * the number invalid (the 8-digit groups are checked in one step; '/' and ':' border the digits,
 * bytes from 0x80 have the high bit set), and digits alone parse as strtoll does. */
static void test_put_parse_long_refuses_every_other_byte_anywhere(void **state)
{
    (void)state;
    int64_t v;
    char num[32];
    for (int len = 1; len <= 19; len++) {
        for (int i = 0; i < len; i++)
            num[i] = (char)('1' + (i * 5 + len) % 9);
        num[len] = '\0';
        assert_true(put_parse_long(num, (size_t)len, &v, msg, sizeof(msg)));
        assert_true(v == strtoll(num, NULL, 10));
        for (int at = 0; at < len; at++) {
            for (int c = 0; c < 256; c++) {
                if (c >= '0' && c <= '9')
                    continue;
                if (at == 0 && (c == '+' || c == '-') && len > 1)
                    continue; /* a sign */
                char bad[32];
                memcpy(bad, num, (size_t)len);
                bad[at] = (char)c;
                if (put_parse_long(bad, (size_t)len, &v, msg, sizeof(msg)))
                    fail_msg("len %d: byte 0x%02x at %d accepted", len, c, at);
            }
        }
    }
}

/* put_str_plain (8 bytes at a time from 8 bytes on) says what put_name_char says of each byte,
 * for every byte value at every position of names up to 24 bytes. */
static void test_put_str_plain_every_byte_in_every_position(void **state)
{
    (void)state;
    char s[24];
    for (size_t len = 1; len <= sizeof(s); len++) {
        for (size_t at = 0; at < len; at++) {
            for (int c = 0; c < 256; c++) {
                memset(s, 'q', sizeof(s));
                s[at] = (char)c;
                bool want = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '/';
                if (put_str_plain((struct put_str){s, len}) != want)
                    fail_msg("len %zu: byte 0x%02x at %zu", len, c, at);
            }
        }
    }
}

/* Parses line through memo and without one: the same status, message and point, the tags still
 * pointing into the line, and, when the memo's tags were used, the series key
 * put_point_key_write writes. Returns the status. */
static enum put_status memo_parse(struct put_memo *memo, const struct put_rules *r,
                                  const char *line)
{
    static struct put_point fresh;
    static char fmsg[1024];
    size_t len = strlen(line);
    msg[0] = fmsg[0] = '\0';
    enum put_status want = put_parse_line(line, len, r, &fresh, fmsg, sizeof(fmsg));
    enum put_status got = put_parse_line_memo(line, len, r, memo, &pt, msg, sizeof(msg));
    if (got != want || strcmp(msg, fmsg) != 0)
        fail_msg("line [%s]: memo %d [%s], fresh %d [%s]", line, got, msg, want, fmsg);
    assert_int_equal(memo->last, got == PUT_OK && memo->last);
    if (got != PUT_OK) {
        assert_false(memo->last);
        return got;
    }
    assert_true(pt.metric.len == fresh.metric.len &&
                !memcmp(pt.metric.p, fresh.metric.p, pt.metric.len));
    assert_true(pt.ts_ms == fresh.ts_ms);
    assert_int_equal(pt.ms, fresh.ms);
    assert_int_equal(pt.value.kind, fresh.value.kind);
    if (pt.value.kind == PUT_INT)
        assert_true(pt.value.i == fresh.value.i);
    else
        assert_memory_equal(&pt.value.d, &fresh.value.d, sizeof(double));
    assert_int_equal(pt.ntags, fresh.ntags);
    for (size_t i = 0; i < pt.ntags; i++) {
        assert_true(pt.tagk[i].p == fresh.tagk[i].p && pt.tagk[i].len == fresh.tagk[i].len);
        assert_true(pt.tagv[i].p == fresh.tagv[i].p && pt.tagv[i].len == fresh.tagv[i].len);
    }
    if (memo->last) {
        char k1[2048], k2[2048];
        size_t n = put_memo_key_write(memo, &pt, k1);
        assert_int_equal(n, put_point_key_len(&pt));
        assert_true(put_point_key_write(k2, &pt) == k2 + n);
        assert_memory_equal(k1, k2, n);
    }
    return got;
}

/* A line whose tags text is the memo's takes the memo's split (shown by a split planted in the
 * memo), one byte more or less does not, and every line answers as a fresh parse does. */
static void test_put_memo_reuses_the_same_tags_text_only(void **state)
{
    (void)state;
    static struct put_memo memo;
    memset(&memo, 0, sizeof(memo));
    assert_int_equal(memo_parse(&memo, &rules8, "put sys.cpu.user 1356998400 42 host=web01 dc=eu"),
                     PUT_OK);
    assert_true(memo.last);
    assert_int_equal(memo.text_len, 16);
    assert_memory_equal(memo.text, "host=web01 dc=eu", 16);
    assert_int_equal(memo.ntags, 2);
    assert_true(memo.plain);
    /* a host's next metrics: the same tags text */
    assert_int_equal(
        memo_parse(&memo, &rules8, "put sys.mem.used 1356998400 4556547126 host=web01 dc=eu"),
        PUT_OK);
    assert_true(memo.last);
    assert_int_equal(memo_parse(&memo, &rules8, "put sys.load 1356998410 0.5 host=web01 dc=eu\r"),
                     PUT_OK);
    /* changed by one byte, longer, shorter, reordered: split afresh (and kept) */
    static const char *const other[] = {
        "put m 1356998400 1 host=web01 dc=eU",  "put m 1356998400 1 host=web01 dc=eu ",
        "put m 1356998400 1 host=web01 dc=e",   "put m 1356998400 1 dc=eu host=web01",
        "put m 1356998400 1 host=web01  dc=eu", "put m 1356998400 1 host=web01 dc=eu dc=eu",
    };
    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
        assert_int_equal(memo_parse(&memo, &rules8, "put m 1356998400 1 host=web01 dc=eu"), PUT_OK);
        assert_int_equal(memo_parse(&memo, &rules8, other[i]), PUT_OK);
        assert_true(memo.last);
        assert_int_equal(memo.text_len, strlen(other[i] + 19));
        assert_memory_equal(memo.text, other[i] + 19, memo.text_len);
    }
    /* the split planted: taken for the same text only (mutation check of the reuse) */
    assert_int_equal(memo_parse(&memo, &rules8, "put m 1356998400 1 host=web01 dc=eu"), PUT_OK);
    memo.ntags = 1;
    assert_int_equal(put_parse_line_memo("put n 1356998400 2 host=web01 dc=eu", 35, &rules8, &memo,
                                         &pt, msg, sizeof(msg)),
                     PUT_OK);
    assert_int_equal(pt.ntags, 1);
    assert_int_equal(put_parse_line_memo("put n 1356998400 2 host=web01 dc=ev", 35, &rules8, &memo,
                                         &pt, msg, sizeof(msg)),
                     PUT_OK);
    assert_int_equal(pt.ntags, 2);
    /* the timestamp likewise: a planted value for the same text only */
    memo.ts = 7;
    assert_int_equal(put_parse_line_memo("put n 1356998400 2 host=web01 dc=ev", 35, &rules8, &memo,
                                         &pt, msg, sizeof(msg)),
                     PUT_OK);
    assert_true(pt.ts_ms == 7000);
    assert_int_equal(put_parse_line_memo("put n 1356998401 2 host=web01 dc=ev", 35, &rules8, &memo,
                                         &pt, msg, sizeof(msg)),
                     PUT_OK);
    assert_true(pt.ts_ms == 1356998401000LL);
}

/* Tags the split refuses are never kept: the same error for every repeat, and the memo keeps
 * the last good split. Tags the split takes but the name rules refuse are kept (the split is
 * good) and refused on every line by the checks, as a fresh parse refuses them; errors before
 * and after the tags leave the memo's tags unused for that line. */
static void test_put_memo_invalid_tags_repeated(void **state)
{
    (void)state;
    static struct put_memo memo;
    memset(&memo, 0, sizeof(memo));
    assert_int_equal(memo_parse(&memo, &rules8, "put m 1356998400 1 host=a"), PUT_OK);
    static const char *const bad_split[] = {
        "put m 1356998400 1 host",  "put m 1356998400 1 host=a=b",      "put m 1356998400 1 =a",
        "put m 1356998400 1 host=", "put m 1356998400 1 host=a host=b",
    };
    for (size_t i = 0; i < sizeof(bad_split) / sizeof(bad_split[0]); i++) {
        for (int rep = 0; rep < 3; rep++)
            assert_int_equal(memo_parse(&memo, &rules8, bad_split[i]), PUT_EARG);
        assert_int_equal(memo.text_len, 6); /* still "host=a" */
        assert_memory_equal(memo.text, "host=a", 6);
    }
    /* names the rules refuse (and accept under allow_specialchars) */
    const struct put_rules special = {8, "@"};
    for (int rep = 0; rep < 3; rep++) {
        assert_int_equal(memo_parse(&memo, &rules8, "put m 1356998400 1 h@st=a"), PUT_EARG);
        assert_string_equal(msg, "put: illegal argument: Invalid tag name with value [a] "
                                 "(\"h@st\"): illegal character: @");
        assert_int_equal(memo_parse(&memo, &special, "put m 1356998400 1 h@st=a"), PUT_OK);
        assert_int_equal(memo_parse(&memo, &rules8, "put m 1356998400 1 host=caf\xc3\xa9"), PUT_OK);
        assert_int_equal(memo_parse(&memo, &rules8, "put m 1356998400 1 host=caf\xe2\x82\xac"),
                         PUT_EARG);
    }
    /* errors around a repeated good tags text */
    assert_int_equal(memo_parse(&memo, &rules8, "put m 1356998400 1 host=a"), PUT_OK);
    assert_int_equal(memo_parse(&memo, &rules8, "put m 1356998400x 1 host=a"), PUT_ENUMBER);
    assert_int_equal(memo_parse(&memo, &rules8, "put m 1356998400 1x host=a"), PUT_ENUMBER);
    assert_int_equal(memo_parse(&memo, &rules8, "put m!x 1356998400 1 host=a"), PUT_EARG);
    assert_int_equal(memo_parse(&memo, &rules8, "put m 1356998400 NaN host=a"), PUT_ENUMBER);
    assert_int_equal(memo_parse(&memo, &rules8, "put m 1356998400 1e999 host=a"), PUT_EARG);
    assert_int_equal(memo_parse(&memo, &rules8, "put m 99999999999999 1 host=a"), PUT_EARG);
    assert_int_equal(memo_parse(&memo, &rules8, "put m -1356998400 1 host=a"), PUT_EARG);
    const struct put_rules one = {1, ""};
    assert_int_equal(memo_parse(&memo, &rules8, "put m 1356998400 1 host=a dc=b"), PUT_OK);
    assert_int_equal(memo_parse(&memo, &one, "put m 1356998400 1 host=a dc=b"), PUT_EARG);
    assert_non_null(strstr(msg, "Too many tags: 2 maximum allowed: 1"));
    /* timestamps the parser refuses are not kept either */
    for (int rep = 0; rep < 2; rep++) {
        assert_int_equal(memo_parse(&memo, &rules8, "put m 13569984x0 1 host=a"), PUT_ENUMBER);
        assert_int_equal(memo_parse(&memo, &rules8, "put m 1356998400.5.1 1 host=a"), PUT_OK);
        assert_int_equal(memo_parse(&memo, &rules8, "put m 1234567 1 host=a"), PUT_OK);
        assert_int_equal(memo_parse(&memo, &rules8, "put m 1356998400123 1 host=a"), PUT_OK);
    }
}

/* Tags texts longer than the memo holds, or with more tags, are split afresh every time (and
 * never replace what it holds); one just within both limits is kept. */
static void test_put_memo_tags_longer_than_it_holds(void **state)
{
    (void)state;
    static struct put_memo memo;
    memset(&memo, 0, sizeof(memo));
    const struct put_rules r64 = {64, ""};
    char line[1100], tags[1024];
    /* PUT_MEMO_TEXT bytes exactly, then one more */
    for (size_t extra = 0; extra < 2; extra++) {
        size_t n = PUT_MEMO_TEXT + extra;
        memset(tags, 'v', n);
        memcpy(tags, "k=", 2);
        tags[n] = '\0';
        snprintf(line, sizeof(line), "put m 1356998400 1 %s", tags);
        assert_int_equal(memo_parse(&memo, &r64, "put m 1356998400 1 a=b"), PUT_OK);
        for (int rep = 0; rep < 3; rep++) {
            assert_int_equal(memo_parse(&memo, &r64, line), PUT_OK);
            assert_int_equal(memo.last, extra == 0);
            assert_int_equal(memo.text_len, extra == 0 ? PUT_MEMO_TEXT : 3);
        }
    }
    /* PUT_MEMO_TAGS tags, then one more */
    for (size_t extra = 0; extra < 2; extra++) {
        size_t n = 0;
        for (size_t i = 0; i < PUT_MEMO_TAGS + extra; i++)
            n += (size_t)snprintf(tags + n, sizeof(tags) - n, "%st%zu=%zu", i ? " " : "", i, i);
        snprintf(line, sizeof(line), "put m 1356998400 1 %s", tags);
        assert_int_equal(memo_parse(&memo, &r64, "put m 1356998400 1 a=b"), PUT_OK);
        for (int rep = 0; rep < 3; rep++) {
            assert_int_equal(memo_parse(&memo, &r64, line), PUT_OK);
            assert_int_equal(memo.last, extra == 0);
            assert_int_equal(pt.ntags, PUT_MEMO_TAGS + extra);
        }
        /* and under the default limit of 8 tags: the count error, memo or not */
        assert_int_equal(memo_parse(&memo, &rules8, line), PUT_EARG);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_accepts_a_plain_line),
        cmocka_unit_test(test_put_milliseconds_and_dotted_timestamps),
        cmocka_unit_test(test_put_value_typing_follows_opentsdb),
        cmocka_unit_test(test_put_runs_of_spaces_in_tag_positions_and_cr),
        cmocka_unit_test(test_put_error_1_not_enough_arguments),
        cmocka_unit_test(test_put_error_2_empty_metric),
        cmocka_unit_test(test_put_error_3_timestamps),
        cmocka_unit_test(test_put_error_4_empty_value),
        cmocka_unit_test(test_put_error_5_tags),
        cmocka_unit_test(test_put_error_6_values),
        cmocka_unit_test(test_put_error_7_timestamp_range),
        cmocka_unit_test(test_put_error_8_tag_count),
        cmocka_unit_test(test_put_error_9_names),
        cmocka_unit_test(test_put_errors_come_in_opentsdb_order),
        cmocka_unit_test(test_put_check_point_used_by_http),
        cmocka_unit_test(test_put_parse_long_edges),
        cmocka_unit_test(test_put_decimal_values_equal_strtod_bit_for_bit),
        cmocka_unit_test(test_put_check_typed_equals_the_text_path),
        cmocka_unit_test(test_put_check_point_names_equals_put_check_point),
        cmocka_unit_test(test_put_parse_long_refuses_every_other_byte_anywhere),
        cmocka_unit_test(test_put_str_plain_every_byte_in_every_position),
        cmocka_unit_test(test_put_memo_reuses_the_same_tags_text_only),
        cmocka_unit_test(test_put_memo_invalid_tags_repeated),
        cmocka_unit_test(test_put_memo_tags_longer_than_it_holds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
