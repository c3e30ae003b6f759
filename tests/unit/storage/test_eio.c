/* test_eio.c - the engine's I/O indirection: plain calls work, injected failures (EIO, ENOSPC,
 * short writes) hit exactly the chosen call and path, and the ct_err helpers name the file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/engine/eio.h"
#include "tests/lib/ctest.h"

static void test_eio_write_file_atomic_round_trips(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    char path[512];
    snprintf(path, sizeof path, "%s/catalog", dir);
    struct ct_err err = {0};
    assert_int_equal(eio_write_file_atomic(path, "hello", 5, &err), CT_OK);
    assert_int_equal(eio_write_file_atomic(path, "world!", 6, &err), CT_OK);
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(eio_read_file(path, &buf, &len, &err), CT_OK);
    assert_int_equal(len, 6);
    assert_string_equal((char *)buf, "world!");
    free(buf);
    char missing[600];
    snprintf(missing, sizeof missing, "%s/none", dir);
    assert_int_equal(eio_read_file(missing, &buf, &len, &err), CT_NOTFOUND);
    ctest_rmdir(dir);
}

static void test_eio_nth_write_fails_with_enospc_naming_the_path(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    char path[512];
    snprintf(path, sizeof path, "%s/f.log", dir);
    struct ct_err err = {0};
    int fd = eio_open(path, O_WRONLY | O_CREAT, 0600);
    assert_true(fd >= 0);
    struct eio_fault f = {.op = EIO_OP_WRITE, .nth = 3, .errnum = ENOSPC};
    eio_fault_set(&f);
    assert_int_equal(eio_write_all(fd, "a", 1, path, &err), CT_OK);
    assert_int_equal(eio_write_all(fd, "b", 1, path, &err), CT_OK);
    assert_int_equal(eio_write_all(fd, "c", 1, path, &err), CT_EIO);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "No space left on device"));
    assert_int_equal(eio_write_all(fd, "d", 1, path, &err), CT_OK); /* only the 3rd */
    assert_int_equal(eio_fault_injected(), 1);
    eio_fault_clear();
    eio_close(fd);
    ctest_rmdir(dir);
}

static void test_eio_repeat_fault_is_sticky_and_path_filtered(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/wal-1.log", dir);
    snprintf(b, sizeof b, "%s/other", dir);
    struct ct_err err = {0};
    struct eio_fault f = {
        .op = EIO_OP_SYNC, .nth = 1, .errnum = EIO, .repeat = true, .path_substr = "wal-"};
    eio_fault_set(&f);
    int fa = eio_open(a, O_WRONLY | O_CREAT, 0600);
    int fb = eio_open(b, O_WRONLY | O_CREAT, 0600);
    assert_true(fa >= 0 && fb >= 0);
    assert_int_equal(eio_sync(fb, true, b, &err), CT_OK);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(eio_sync(fa, true, a, &err), CT_EIO);
        assert_non_null(strstr(err.msg, "cannot fsync"));
        assert_non_null(strstr(err.msg, "Input/output error"));
    }
    assert_int_equal(eio_fault_injected(), 3);
    eio_fault_clear();
    assert_int_equal(eio_sync(fa, true, a, &err), CT_OK);
    eio_close(fa);
    eio_close(fb);
    ctest_rmdir(dir);
}

static void test_eio_short_write_is_completed_by_write_all(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    char path[512];
    snprintf(path, sizeof path, "%s/f", dir);
    struct ct_err err = {0};
    int fd = eio_open(path, O_RDWR | O_CREAT, 0600);
    assert_true(fd >= 0);
    struct eio_fault f = {.op = EIO_OP_WRITE, .nth = 1, .short_write = true};
    eio_fault_set(&f);
    assert_true(eio_write(fd, "0123456789", 10) == 5); /* the raw call is short */
    assert_int_equal(eio_write_all(fd, "abcdefgh", 8, path, &err), CT_OK);
    eio_fault_clear();
    char buf[32] = {0};
    assert_int_equal(eio_pread_all(fd, buf, 13, 0, path, &err), CT_OK);
    assert_string_equal(buf, "01234abcdefgh");
    assert_int_equal(eio_pread_all(fd, buf, 20, 0, path, &err), CT_ECORRUPT);
    assert_non_null(strstr(err.msg, "unexpected end of file"));
    eio_close(fd);
    ctest_rmdir(dir);
}

static void test_eio_failed_rename_leaves_old_file(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    char path[512];
    snprintf(path, sizeof path, "%s/catalog", dir);
    struct ct_err err = {0};
    assert_int_equal(eio_write_file_atomic(path, "v1", 2, &err), CT_OK);
    struct eio_fault f = {.op = EIO_OP_RENAME, .nth = 1, .errnum = EIO};
    eio_fault_set(&f);
    assert_int_equal(eio_write_file_atomic(path, "v2", 2, &err), CT_EIO);
    assert_non_null(strstr(err.msg, "cannot rename"));
    eio_fault_clear();
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(eio_read_file(path, &buf, &len, &err), CT_OK);
    assert_string_equal((char *)buf, "v1");
    free(buf);
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    assert_int_equal(access(tmp, F_OK), -1);
    ctest_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eio_write_file_atomic_round_trips),
        cmocka_unit_test(test_eio_nth_write_fails_with_enospc_naming_the_path),
        cmocka_unit_test(test_eio_repeat_fault_is_sticky_and_path_filtered),
        cmocka_unit_test(test_eio_short_write_is_completed_by_write_all),
        cmocka_unit_test(test_eio_failed_rename_leaves_old_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
