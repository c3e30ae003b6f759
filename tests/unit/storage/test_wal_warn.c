/* test_wal_warn.c - replay tells its owner when it cuts off a tail that held data (a damaged or
 * torn last segment), and stays quiet about a tail of zeros (preallocated, never written). */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/engine/wal.h"
#include "tests/lib/ctest.h"

struct warn_log {
    int calls;
    char last[1024];
};

static void warn_record(void *arg, const char *msg)
{
    struct warn_log *l = arg;
    l->calls++;
    snprintf(l->last, sizeof l->last, "%s", msg);
}

static int count_record(void *arg, uint64_t seq, const uint8_t *p, size_t len, struct ct_err *err)
{
    (void)seq;
    (void)p;
    (void)len;
    (void)err;
    (*(int *)arg)++;
    return CT_OK;
}

/* Writes 3 records, then appends `tail` (len bytes) to the only segment. */
static char *make_log(const uint8_t *tail, size_t len, char *seg, size_t seg_size)
{
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct wal_options o = {1 << 20, NULL, NULL};
    struct wal *w;
    assert_int_equal(wal_open(dir, &o, &w, &err), CT_OK);
    assert_int_equal(wal_replay(w, count_record, &(int){0}, &err), CT_OK);
    for (uint64_t i = 1; i <= 3; i++)
        assert_int_equal(wal_append(w, i, "payload", 7, WAL_SYNC_WRITE, &err), CT_OK);
    wal_close(w);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    seg[0] = 0;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, "wal-", 4))
            snprintf(seg, seg_size, "%s/%s", dir, e->d_name);
    closedir(d);
    assert_true(seg[0] != 0);
    int fd = open(seg, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, tail, len), (ssize_t)len);
    close(fd);
    return dir;
}

static void replay_with_warnings(const char *dir, struct warn_log *log, int *records)
{
    struct ct_err err = {0};
    struct wal_options o = {1 << 20, warn_record, log};
    struct wal *w;
    assert_int_equal(wal_open(dir, &o, &w, &err), CT_OK);
    assert_int_equal(wal_replay(w, count_record, records, &err), CT_OK);
    wal_close(w);
}

static void test_wal_replay_warns_about_a_dropped_tail_with_data(void **state)
{
    (void)state;
    char seg[4096];
    const uint8_t junk[] = {0x12, 0x34, 0x56, 0x78, 0x00, 0x00, 0x00, 0x09, 0xab};
    char *dir = make_log(junk, sizeof junk, seg, sizeof seg);
    struct warn_log log = {0};
    int records = 0;
    replay_with_warnings(dir, &log, &records);
    assert_int_equal(records, 3);
    assert_int_equal(log.calls, 1);
    assert_non_null(strstr(log.last, seg));
    assert_non_null(strstr(log.last, "cut off 9 bytes"));
    /* the tail is gone: a second replay is quiet */
    memset(&log, 0, sizeof log);
    records = 0;
    replay_with_warnings(dir, &log, &records);
    assert_int_equal(records, 3);
    assert_int_equal(log.calls, 0);
    ctest_rmdir(dir);
}

static void test_wal_replay_is_quiet_about_a_tail_of_zeros(void **state)
{
    (void)state;
    char seg[4096];
    uint8_t zeros[100] = {0};
    char *dir = make_log(zeros, sizeof zeros, seg, sizeof seg);
    struct warn_log log = {0};
    int records = 0;
    replay_with_warnings(dir, &log, &records);
    assert_int_equal(records, 3);
    assert_int_equal(log.calls, 0);
    ctest_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wal_replay_warns_about_a_dropped_tail_with_data),
        cmocka_unit_test(test_wal_replay_is_quiet_about_a_tail_of_zeros),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
