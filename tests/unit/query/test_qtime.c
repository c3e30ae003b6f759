/* test_qtime.c - OpenTSDB time handling: durations, start/end strings, time zones from the tz
 * database and Java Calendar interval arithmetic, table-driven. */
#include <stdlib.h>
#include <string.h>

#include "query/qtime.h"
#include "tests/lib/ctest.h"

static const int64_t NOW = 1356998400000LL; /* 2013-01-01T00:00:00Z */

static void test_qtime_durations_follow_parse_duration(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        int64_t ms;
        enum qtime_unit unit;
    } ok[] = {
        {"1h", 3600000, QTIME_H},      {"30s", 30000, QTIME_S},
        {"100ms", 100, QTIME_MS},      {"2w", 1209600000LL, QTIME_W},
        {"1n", 2592000000LL, QTIME_N}, {"1y", 31536000000LL, QTIME_Y},
        {"1d", 86400000, QTIME_D},     {"1M", 60000, QTIME_M},
        {"15m", 900000, QTIME_M},      {"1H", 3600000, QTIME_H},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        struct ct_err err = {0};
        int64_t ms = 0;
        enum qtime_unit u;
        assert_int_equal(qtime_parse_duration(ok[i].in, &ms, NULL, &u, &err), CT_OK);
        assert_true(ms == ok[i].ms);
        assert_int_equal(u, ok[i].unit);
    }
    static const struct {
        const char *in, *msg;
    } bad[] = {
        {"h", "Invalid duration (number): h"},   {"", "Invalid duration (number): "},
        {"0s", "Zero or negative duration: 0s"}, {"5x", "Invalid duration (suffix): 5x"},
        {"5", "Invalid duration (suffix): 5"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct ct_err err = {0};
        int64_t ms;
        assert_int_equal(qtime_parse_duration(bad[i].in, &ms, NULL, NULL, &err), CT_EINVAL);
        assert_string_equal(err.msg, bad[i].msg);
    }
}

static void test_qtime_parse_accepts_every_opentsdb_format(void **state)
{
    (void)state;
    struct qtime_tz *ny = NULL;
    struct ct_err err = {0};
    assert_int_equal(qtime_tz_load("America/New_York", &ny, &err), CT_OK);
    static const struct {
        const char *in;
        int ny;
        int64_t ms;
    } ok[] = {
        {"now", 0, NOW},
        {"1h-ago", 0, NOW - 3600000},
        {"2d-ago", 0, NOW - 2 * 86400000LL},
        {"1356998400", 0, 1356998400000LL},
        {"1356998400000", 0, 1356998400000LL},
        {"1356998400.5", 0, 13569984005LL}, /* dot removed, then > 10 digits: ms (as 2.4) */
        {"1356998400.123", 0, 1356998400123LL},
        {"2013/01/01", 0, 1356998400000LL},
        {"2013/01/01-01:02:03", 0, 1356998400000LL + 3723000},
        {"2013/01/01 01:02", 0, 1356998400000LL + 3720000},
        {"2013/01/01-01:02", 0, 1356998400000LL + 3720000},
        {"2013/01/01", 1, 1357016400000LL},          /* midnight in New York = 05:00Z */
        {"2013/07/01-12:00:00", 1, 1372694400000LL}, /* EDT: 16:00Z */
        {"1500ms", 0, 1500},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        int64_t ms = 0;
        assert_int_equal(qtime_parse(ok[i].in, ok[i].ny ? ny : NULL, NOW, &ms, &err), CT_OK);
        assert_true(ms == ok[i].ms);
    }
    static const char *bad[] = {"abc", "-5", "1356998400.1234", "2013/1/1", "2013/01/01-xx:00",
                                "",    "12x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t ms;
        assert_int_equal(qtime_parse(bad[i], NULL, NOW, &ms, &err), CT_EINVAL);
    }
    assert_int_equal(qtime_parse("-5", NULL, NOW, &(int64_t){0}, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "Negative timestamps are not supported"));
    assert_int_equal(qtime_parse("2013/1/1", NULL, NOW, &(int64_t){0}, &err), CT_EINVAL);
    assert_string_equal(err.msg, "Invalid absolute date: 2013/1/1");
    qtime_tz_free(ny);
}

static void test_qtime_tz_offsets_follow_the_tz_database(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct qtime_tz *ny = NULL, *ber = NULL, *utc = NULL, *bad = NULL;
    assert_int_equal(qtime_tz_load("America/New_York", &ny, &err), CT_OK);
    assert_int_equal(qtime_tz_load("Europe/Berlin", &ber, &err), CT_OK);
    assert_int_equal(qtime_tz_load(NULL, &utc, &err), CT_OK);
    assert_int_equal(qtime_tz_offset_s(ny, 1356998400), -18000);
    assert_int_equal(qtime_tz_offset_s(ny, 1372636800), -14400);
    assert_int_equal(qtime_tz_offset_s(ber, 1356998400), 3600);
    assert_int_equal(qtime_tz_offset_s(utc, 1372636800), 0);
    assert_int_equal(qtime_tz_load("Not/AZone", &bad, &err), CT_EINVAL);
    assert_string_equal(err.msg, "The timezone specification could not be found");
    assert_int_equal(qtime_tz_load("../../etc/passwd", &bad, &err), CT_EINVAL);
    assert_null(bad);
    qtime_tz_free(ny);
    qtime_tz_free(ber);
    qtime_tz_free(utc);
}

static void test_qtime_calendar_intervals_match_previous_interval(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct qtime_tz *ny = NULL;
    assert_int_equal(qtime_tz_load("America/New_York", &ny, &err), CT_OK);
    const int64_t ts = 1357104600000LL; /* 2013-01-02T05:30:00Z, a Wednesday */
    static const struct {
        int64_t interval;
        enum qtime_unit unit;
        int ny;
        int64_t want;
    } cases[] = {
        {1, QTIME_D, 0, 1357084800000LL}, /* Jan 2 00:00Z */
        {1, QTIME_D, 1, 1357102800000LL}, /* Jan 2 00:00 New York = 05:00Z */
        {1, QTIME_W, 0, 1356825600000LL}, /* Sunday Dec 30 2012 */
        {1, QTIME_N, 0, 1356998400000LL}, /* Jan 1 */
        {1, QTIME_Y, 0, 1356998400000LL},
        {15, QTIME_M, 0, 1357104600000LL}, /* already on a boundary */
        {7, QTIME_M, 0, 1357104540000LL},  /* from the top of the day: 05:29 */
        {1, QTIME_H, 0, 1357102800000LL},
        {2, QTIME_H, 0, 1357099200000LL}, /* 04:00 */
        {30, QTIME_S, 0, 1357104600000LL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_true(qtime_cal_previous(ts, cases[i].interval, cases[i].unit,
                                       cases[i].ny ? ny : NULL) == cases[i].want);
    /* Calendar.add: months pin the day, days keep the wall clock across DST */
    assert_true(qtime_cal_add(1359590400000LL, 1, QTIME_N, NULL) == 1362009600000LL);
    assert_true(qtime_cal_add(1362891600000LL, 1, QTIME_D, ny) == 1362974400000LL);
    assert_true(qtime_cal_add(1000, 2, QTIME_H, ny) == 1000 + 7200000);
    assert_true(qtime_cal_add(1356825600000LL, 1, QTIME_W, NULL) == 1357430400000LL);
    qtime_tz_free(ny);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qtime_durations_follow_parse_duration),
        cmocka_unit_test(test_qtime_parse_accepts_every_opentsdb_format),
        cmocka_unit_test(test_qtime_tz_offsets_follow_the_tz_database),
        cmocka_unit_test(test_qtime_calendar_intervals_match_previous_interval),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
