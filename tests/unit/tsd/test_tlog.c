/* test_tlog.c - the TSD's log lines (tsd/tlog.h): the line format, levels, and the rate limiter
 * for lines that can repeat thousands of times a minute (a failed batch each): one line per
 * interval, the left-out lines counted in the next one, exactly one winner per interval among
 * racing threads. stderr is redirected to a temporary file to read what was written. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/ctest.h"
#include "tsd/tlog.h"

/* Runs with stderr on a fresh temporary file; returns what was written there. */
struct capture {
    int saved;
    FILE *f;
};

static void capture_start(struct capture *c)
{
    fflush(stderr);
    c->f = tmpfile();
    assert_non_null(c->f);
    c->saved = dup(STDERR_FILENO);
    assert_true(c->saved >= 0);
    assert_true(dup2(fileno(c->f), STDERR_FILENO) >= 0);
}

static char *capture_end(struct capture *c)
{
    fflush(stderr);
    assert_true(dup2(c->saved, STDERR_FILENO) >= 0);
    close(c->saved);
    long n = ftell(c->f);
    assert_true(n >= 0);
    char *s = calloc(1, (size_t)n + 1);
    assert_non_null(s);
    rewind(c->f);
    assert_int_equal(fread(s, 1, (size_t)n, c->f), (size_t)n);
    fclose(c->f);
    return s;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void test_line_format_and_levels(void **state)
{
    (void)state;
    struct capture c;
    tlog_set_level(TLOG_WARN);
    capture_start(&c);
    tlog_error("disk %s", "full");
    tlog_info("not written at warn");
    char *out = capture_end(&c);
    tlog_set_level(TLOG_INFO);
    assert_int_equal(count_lines(out), 1);
    /* 2026-01-01T00:00:00.000Z error disk full */
    assert_int_equal(strlen(out), 24 + 1 + 5 + 1 + strlen("disk full") + 1);
    assert_true(out[10] == 'T' && out[23] == 'Z');
    assert_non_null(strstr(out, "Z error disk full\n"));
    free(out);
}

static void test_limited_writes_one_line_per_interval_and_counts_the_rest(void **state)
{
    (void)state;
    struct tlog_limit lim = TLOG_LIMIT_INIT(10000);
    struct capture c;
    capture_start(&c);
    int64_t t = 5000000;
    assert_true(tlog_limited(&lim, t, TLOG_ERROR, "batch %d failed", 1));
    for (int i = 2; i <= 8000; i++) /* 8,000 failures within the interval */
        assert_false(tlog_limited(&lim, t + i, TLOG_ERROR, "batch %d failed", i));
    assert_false(tlog_limited(&lim, t + 9999, TLOG_ERROR, "batch last failed"));
    assert_true(tlog_limited(&lim, t + 10000, TLOG_ERROR, "batch %d failed", 9));
    assert_true(tlog_limited(&lim, t + 25000, TLOG_ERROR, "batch %d failed", 10));
    char *out = capture_end(&c);
    assert_int_equal(count_lines(out), 3);
    assert_non_null(strstr(out, "error batch 1 failed\n"));
    assert_non_null(strstr(out, "error batch 9 failed (and 8000 more like it in the last 10 s)\n"));
    assert_non_null(strstr(out, "error batch 10 failed\n")); /* nothing left out before it */
    free(out);
}

static void test_limited_below_the_level_still_counts(void **state)
{
    (void)state;
    struct tlog_limit lim = TLOG_LIMIT_INIT(1000);
    struct capture c;
    tlog_set_level(TLOG_ERROR);
    capture_start(&c);
    assert_true(tlog_limited(&lim, 1000, TLOG_WARN, "hidden"));
    assert_false(tlog_limited(&lim, 1500, TLOG_WARN, "hidden"));
    char *out = capture_end(&c);
    tlog_set_level(TLOG_INFO);
    assert_string_equal(out, "");
    free(out);
}

#define RACERS    4
#define PER_RACER 20000

struct racer {
    struct tlog_limit *lim;
    int won;
};

static void *race(void *arg)
{
    struct racer *r = arg;
    for (int i = 0; i < PER_RACER; i++)
        r->won += tlog_limited(r->lim, 777, TLOG_DEBUG, "race");
    return NULL;
}

static void test_limited_has_one_winner_among_threads(void **state)
{
    (void)state;
    struct tlog_limit lim = TLOG_LIMIT_INIT(60000);
    struct racer r[RACERS];
    pthread_t th[RACERS];
    for (int i = 0; i < RACERS; i++) {
        r[i] = (struct racer){&lim, 0};
        assert_int_equal(pthread_create(&th[i], NULL, race, &r[i]), 0);
    }
    int won = 0;
    for (int i = 0; i < RACERS; i++) {
        pthread_join(th[i], NULL);
        won += r[i].won;
    }
    assert_int_equal(won, 1);
    assert_int_equal(atomic_load(&lim.suppressed), RACERS * PER_RACER - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_format_and_levels),
        cmocka_unit_test(test_limited_writes_one_line_per_interval_and_counts_the_rest),
        cmocka_unit_test(test_limited_below_the_level_still_counts),
        cmocka_unit_test(test_limited_has_one_winner_among_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
