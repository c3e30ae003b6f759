/* test_wal.c - the write-ahead log: round trips across segments, torn tails, corruption,
 * group commit, sticky I/O errors, ASYNC flushing, release of flushed segments. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "storage/engine/eio.h"
#include "storage/engine/wal.h"
#include "storage/engine/wal_format.h"
#include "tests/lib/ctest.h"

/* Every test runs twice: with wal_open() (write(2) per group) and wal_open_mapped(). */
static bool g_mapped;

static int set_plain(void **state)
{
    (void)state;
    g_mapped = false;
    return 0;
}

static int set_mapped(void **state)
{
    (void)state;
    g_mapped = true;
    return 0;
}

static int open_wal(const char *dir, const struct wal_options *o, struct wal **w,
                    struct ct_err *err)
{
    return g_mapped ? wal_open_mapped(dir, o, w, err) : wal_open(dir, o, w, err);
}

struct collected {
    uint64_t seqs[4096];
    size_t lens[4096];
    uint8_t first[4096];
    size_t n;
};

static int collect_fn(void *arg, uint64_t seq, const uint8_t *p, size_t len, struct ct_err *err)
{
    (void)err;
    struct collected *c = arg;
    if (c->n < 4096) {
        c->seqs[c->n] = seq;
        c->lens[c->n] = len;
        c->first[c->n] = len ? p[0] : 0;
        for (size_t i = 0; i < len; i++)
            assert_int_equal(p[i], (uint8_t)(seq + i));
    }
    c->n++;
    return CT_OK;
}

static void payload_for(uint64_t seq, uint8_t *buf, size_t len)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(seq + i);
}

static void seg_path(const char *dir, uint64_t num, char *out, size_t cap)
{
    snprintf(out, cap, "%s/wal-%020llu.log", dir, (unsigned long long)num);
}

static void append_n(struct wal *w, uint64_t first_seq, size_t n, size_t len, enum wal_sync sync)
{
    struct ct_err err = {0};
    uint8_t buf[2048];
    for (size_t i = 0; i < n; i++) {
        uint64_t seq = first_seq + i;
        payload_for(seq, buf, len);
        assert_int_equal(wal_append(w, seq, buf, len, sync, &err), CT_OK);
    }
}

/* Writes a log in dir (options o, may be NULL) of records 1..n with len-byte payloads, each
 * synced to the file (WAL_SYNC_WRITE), and closes it. */
static void write_log(const char *dir, const struct wal_options *o, size_t n, size_t len)
{
    struct ct_err err = {0};
    struct wal *w = NULL;
    assert_int_equal(open_wal(dir, o, &w, &err), CT_OK);
    append_n(w, 1, n, len, WAL_SYNC_WRITE);
    wal_close(w);
}

static void test_wal_round_trips_records_across_segments(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct wal *w = NULL;
    struct wal_options o = {.segment_bytes = 4096};
    assert_int_equal(open_wal(dir, &o, &w, &err), CT_OK);
    append_n(w, 1, 300, 100, WAL_SYNC_WRITE);
    append_n(w, 301, 1, 0, WAL_SYNC_WRITE); /* empty payload */
    struct wal_stats st;
    wal_get_stats(w, &st);
    assert_int_equal(st.appends, 301);
    assert_true(st.segments > 5);
    wal_close(w);

    assert_int_equal(open_wal(dir, &o, &w, &err), CT_OK);
    struct collected *c = calloc(1, sizeof(*c));
    assert_int_equal(wal_replay(w, collect_fn, c, &err), CT_OK);
    assert_int_equal(c->n, 301);
    for (size_t i = 0; i < 300; i++) {
        assert_int_equal(c->seqs[i], i + 1);
        assert_int_equal(c->lens[i], 100);
    }
    assert_int_equal(c->lens[300], 0);
    wal_close(w);
    free(c);
    ctest_rmdir(dir);
}

static void test_wal_replay_drops_torn_tail(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct wal *w = NULL;
    write_log(dir, NULL, 10, 50);
    char p[600];
    seg_path(dir, 1, p, sizeof p);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(truncate(p, sb.st_size - 7), 0); /* tear the last record */

    assert_int_equal(open_wal(dir, NULL, &w, &err), CT_OK);
    struct collected *c = calloc(1, sizeof(*c));
    assert_int_equal(wal_replay(w, collect_fn, c, &err), CT_OK);
    assert_int_equal(c->n, 9);
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(sb.st_size, WAL_SEGMENT_HEADER_BYTES + 9 * (WAL_RECORD_HEADER_BYTES + 50));
    append_n(w, 100, 2, 50, WAL_SYNC_WRITE);
    wal_close(w);

    /* after the cut, the log is clean: old complete records plus the new ones */
    assert_int_equal(open_wal(dir, NULL, &w, &err), CT_OK);
    memset(c, 0, sizeof(*c));
    assert_int_equal(wal_replay(w, collect_fn, c, &err), CT_OK);
    assert_int_equal(c->n, 11);
    assert_int_equal(c->seqs[9], 100);
    wal_close(w);
    free(c);
    ctest_rmdir(dir);
}

static void test_wal_replay_drops_garbage_tail(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct wal *w = NULL;
    write_log(dir, NULL, 5, 20);
    char p[600];
    seg_path(dir, 1, p, sizeof p);
    int fd = open(p, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    uint8_t zeros[100] = {0};
    assert_int_equal(write(fd, zeros, sizeof zeros), (ssize_t)sizeof zeros);
    close(fd);
    assert_int_equal(open_wal(dir, NULL, &w, &err), CT_OK);
    struct collected *c = calloc(1, sizeof(*c));
    assert_int_equal(wal_replay(w, collect_fn, c, &err), CT_OK);
    assert_int_equal(c->n, 5);
    wal_close(w);
    free(c);
    ctest_rmdir(dir);
}

static void test_wal_corruption_in_earlier_segment_names_segment_and_offset(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct wal *w = NULL;
    struct wal_options o = {.segment_bytes = 1024};
    write_log(dir, &o, 50, 100);
    char p[600];
    seg_path(dir, 1, p, sizeof p);
    int fd = open(p, O_RDWR);
    assert_true(fd >= 0);
    off_t off = WAL_SEGMENT_HEADER_BYTES + (WAL_RECORD_HEADER_BYTES + 100) + 40;
    uint8_t b;
    assert_int_equal(pread(fd, &b, 1, off), 1);
    b ^= 0x55;
    assert_int_equal(pwrite(fd, &b, 1, off), 1);
    close(fd);
    assert_int_equal(open_wal(dir, &o, &w, &err), CT_OK);
    struct collected *c = calloc(1, sizeof(*c));
    assert_int_equal(wal_replay(w, collect_fn, c, &err), CT_ECORRUPT);
    assert_int_equal(c->n, 1);
    assert_non_null(strstr(err.msg, p));
    char offs[64];
    snprintf(offs, sizeof offs, "offset %d",
             WAL_SEGMENT_HEADER_BYTES + WAL_RECORD_HEADER_BYTES + 100);
    assert_non_null(strstr(err.msg, offs));
    wal_close(w);
    free(c);
    ctest_rmdir(dir);
}

static void test_wal_rejects_unknown_version(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct wal *w = NULL;
    write_log(dir, NULL, 3, 10);
    char p[600];
    seg_path(dir, 1, p, sizeof p);
    int fd = open(p, O_RDWR);
    uint8_t v = 9;
    assert_int_equal(pwrite(fd, &v, 1, 4), 1);
    close(fd);
    assert_int_equal(open_wal(dir, NULL, &w, &err), CT_OK);
    struct collected *c = calloc(1, sizeof(*c));
    assert_int_equal(wal_replay(w, collect_fn, c, &err), CT_ECORRUPT);
    assert_non_null(strstr(err.msg, "unsupported wal version 9"));
    assert_non_null(strstr(err.msg, p));
    wal_close(w);
    free(c);
    ctest_rmdir(dir);
}

struct appender {
    struct wal *w;
    uint64_t base;
    size_t n;
    enum wal_sync sync;
};

static void *appender_main(void *arg)
{
    struct appender *a = arg;
    struct ct_err err = {0};
    uint8_t buf[64];
    for (size_t i = 0; i < a->n; i++) {
        uint64_t seq = a->base + i;
        payload_for(seq, buf, sizeof buf);
        if (wal_append(a->w, seq, buf, sizeof buf, a->sync, &err) != CT_OK)
            return (void *)1;
    }
    return NULL;
}

static void run_appenders(struct wal *w, size_t per_thread, enum wal_sync sync)
{
    pthread_t th[4];
    struct appender a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (struct appender){w, 1 + (uint64_t)i * 100000, per_thread, sync};
        assert_int_equal(pthread_create(&th[i], NULL, appender_main, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        void *r = NULL;
        pthread_join(th[i], &r);
        assert_null(r);
    }
}

static void test_wal_group_commit_shares_writes_and_syncs(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct wal *w = NULL;
    assert_int_equal(open_wal(dir, NULL, &w, &err), CT_OK);
    /* a slow disk: each fdatasync takes 2 ms, so appenders pile up behind the leader */
    struct eio_fault f = {.op = EIO_OP_SYNC, .nth = 0, .delay_us = 2000};
    eio_fault_set(&f);
    run_appenders(w, 100, WAL_SYNC_FSYNC);
    eio_fault_clear();
    struct wal_stats st;
    wal_get_stats(w, &st);
    assert_int_equal(st.appends, 400);
    assert_true(st.writes < st.appends);
    assert_true(st.syncs < st.appends);
    print_message("%s: %llu appends, %llu writes, %llu syncs\n", g_mapped ? "mapped" : "write(2)",
                  (unsigned long long)st.appends, (unsigned long long)st.writes,
                  (unsigned long long)st.syncs);
    assert_true(st.bytes_written >= 400 * (WAL_RECORD_HEADER_BYTES + 64));
    wal_close(w);
    assert_int_equal(open_wal(dir, NULL, &w, &err), CT_OK);
    struct collected *c = calloc(1, sizeof(*c));
    assert_int_equal(wal_replay(w, collect_fn, c, &err), CT_OK);
    assert_int_equal(c->n, 400);
    wal_close(w);
    free(c);
    ctest_rmdir(dir);
}

static void test_wal_write_error_is_reported_and_sticky(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct wal *w = NULL;
    assert_int_equal(open_wal(dir, NULL, &w, &err), CT_OK);
    append_n(w, 1, 3, 10, WAL_SYNC_WRITE);
    struct eio_fault f = {.op = EIO_OP_WRITE, .nth = 1, .errnum = ENOSPC, .path_substr = "wal-"};
    eio_fault_set(&f);
    /* the fault applies to descriptors opened from now on: force a new segment */
    wal_close(w);
    assert_int_equal(open_wal(dir, NULL, &w, &err), CT_OK);
    uint8_t buf[10] = {0};
    assert_int_equal(wal_append(w, 10, buf, sizeof buf, WAL_SYNC_WRITE, &err), CT_EIO);
    assert_non_null(strstr(err.msg, "No space left on device"));
    assert_non_null(strstr(err.msg, "wal-"));
    eio_fault_clear();
    struct ct_err err2 = {0};
    assert_int_equal(wal_append(w, 11, buf, sizeof buf, WAL_SYNC_WRITE, &err2), CT_EIO);
    assert_string_equal(err2.msg, err.msg);
    assert_int_equal(wal_sync(w, &err2), CT_EIO);
    wal_close(w);
    ctest_rmdir(dir);
}

static void test_wal_fsync_error_is_reported_and_sticky(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct wal *w = NULL;
    assert_int_equal(open_wal(dir, NULL, &w, &err), CT_OK);
    append_n(w, 1, 3, 10, WAL_SYNC_FSYNC);
    struct eio_fault f = {.op = EIO_OP_SYNC, .nth = 1, .errnum = EIO};
    eio_fault_set(&f);
    uint8_t buf[10] = {0};
    assert_int_equal(wal_append(w, 10, buf, sizeof buf, WAL_SYNC_FSYNC, &err), CT_EIO);
    assert_non_null(strstr(err.msg, "cannot fsync"));
    eio_fault_clear();
    assert_int_equal(wal_append(w, 11, buf, sizeof buf, WAL_SYNC_WRITE, &err), CT_EIO);
    assert_int_equal(wal_append(w, 12, buf, sizeof buf, WAL_SYNC_ASYNC, &err), CT_EIO);
    wal_close(w);
    ctest_rmdir(dir);
}

static void test_wal_async_records_are_written_by_sync_and_close(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct wal *w = NULL;
    assert_int_equal(open_wal(dir, NULL, &w, &err), CT_OK);
    append_n(w, 1, 20, 30, WAL_SYNC_ASYNC);
    struct wal_stats st;
    assert_int_equal(wal_sync(w, &err), CT_OK);
    wal_get_stats(w, &st);
    if (g_mapped)
        assert_int_equal(st.writes, 0); /* records were copied into the mapping */
    else
        assert_true(st.writes >= 1 && st.writes <= 2);
    assert_true(st.syncs >= 1);
    append_n(w, 21, 5, 30, WAL_SYNC_ASYNC);
    wal_close(w); /* flushes the rest */
    assert_int_equal(open_wal(dir, NULL, &w, &err), CT_OK);
    struct collected *c = calloc(1, sizeof(*c));
    assert_int_equal(wal_replay(w, collect_fn, c, &err), CT_OK);
    assert_int_equal(c->n, 25);
    wal_close(w);
    free(c);
    ctest_rmdir(dir);
}

static void test_wal_async_records_are_synced_by_background_thread(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct wal *w = NULL;
    assert_int_equal(open_wal(dir, NULL, &w, &err), CT_OK);
    append_n(w, 1, 3, 30, WAL_SYNC_ASYNC);
    struct wal_stats st;
    /* bounded wait: the syncer runs about every second */
    for (int i = 0; i < 100; i++) {
        wal_get_stats(w, &st);
        if (st.syncs > 0)
            break;
        usleep(50 * 1000);
    }
    assert_true(st.syncs > 0);
    assert_true(g_mapped ? st.writes == 0 : st.writes > 0);
    wal_close(w);
    ctest_rmdir(dir);
}

static void test_wal_release_deletes_flushed_segments(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct wal *w = NULL;
    struct wal_options o = {.segment_bytes = 1024};
    assert_int_equal(open_wal(dir, &o, &w, &err), CT_OK);
    append_n(w, 1, 100, 100, WAL_SYNC_WRITE);
    struct wal_stats before, after;
    wal_get_stats(w, &before);
    assert_int_equal(wal_release_upto(w, 50, &err), CT_OK);
    wal_get_stats(w, &after);
    assert_true(after.segments < before.segments);
    assert_true(after.segments > 1);
    assert_int_equal(wal_release_upto(w, 99, &err), CT_OK);
    wal_get_stats(w, &after);
    assert_int_equal(after.segments, 1); /* the active segment holds seq 100: it stays */
    append_n(w, 101, 1, 100, WAL_SYNC_WRITE);
    wal_close(w);

    assert_int_equal(open_wal(dir, &o, &w, &err), CT_OK);
    struct collected *c = calloc(1, sizeof(*c));
    assert_int_equal(wal_replay(w, collect_fn, c, &err), CT_OK);
    assert_true(c->n < 100);
    assert_int_equal(c->seqs[c->n - 1], 101);
    assert_int_equal(wal_release_upto(w, 101, &err), CT_OK); /* replayed segments go too */
    wal_get_stats(w, &after);
    assert_int_equal(after.segments, 0);
    wal_close(w);
    free(c);
    ctest_rmdir(dir);
}

static int stop_fn(void *arg, uint64_t seq, const uint8_t *p, size_t len, struct ct_err *err)
{
    (void)p;
    (void)len;
    (void)arg;
    if (seq == 3)
        return ct_err_set(err, CT_EINVAL, "stop at %llu", (unsigned long long)seq);
    return CT_OK;
}

static void test_wal_replay_callback_error_stops_replay(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct wal *w = NULL;
    write_log(dir, NULL, 5, 10);
    assert_int_equal(open_wal(dir, NULL, &w, &err), CT_OK);
    assert_int_equal(wal_replay(w, stop_fn, NULL, &err), CT_EINVAL);
    assert_string_equal(err.msg, "stop at 3");
    wal_close(w);
    ctest_rmdir(dir);
}

/* Forks a child that opens a log in `dir` (mapped or not, with options `o`), appends records
 * 1..n of 100 bytes with WAL_SYNC_WRITE and dies without wal_close (like kill -9 after the last
 * append returned); waits for it and checks that every append succeeded. */
static void append_then_die(const char *dir, bool mapped, const struct wal_options *o, uint64_t n)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct ct_err err = {0};
        struct wal *w = NULL;
        if ((mapped ? wal_open_mapped(dir, o, &w, &err) : wal_open(dir, o, &w, &err)) != CT_OK)
            _exit(2);
        uint8_t buf[100];
        for (uint64_t seq = 1; seq <= n; seq++) {
            payload_for(seq, buf, sizeof buf);
            if (wal_append(w, seq, buf, sizeof buf, WAL_SYNC_WRITE, &err) != CT_OK)
                _exit(3);
        }
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_wal_sync_write_records_survive_process_death(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct wal_options o = {.segment_bytes = 8192};
    append_then_die(dir, g_mapped, &o, 200);
    struct wal *w = NULL;
    assert_int_equal(open_wal(dir, NULL, &w, &err), CT_OK);
    struct collected *c = calloc(1, sizeof(*c));
    assert_int_equal(wal_replay(w, collect_fn, c, &err), CT_OK);
    assert_int_equal(c->n, 200);
    for (size_t i = 0; i < 200; i++)
        assert_int_equal(c->seqs[i], i + 1);
    wal_close(w);
    free(c);
    ctest_rmdir(dir);
}

/* A random byte flipped anywhere: replay returns an intact prefix of the records (the flip was
 * in the last segment, whose tail is cut) or CT_ECORRUPT naming a segment; never bad data. */
static void test_wal_random_damage_gives_prefix_or_corruption(void **state)
{
    (void)state;
    unsigned seed = 3;
    for (int round = 0; round < 40; round++) {
        char *dir = ctest_mkdtemp();
        struct ct_err err = {0};
        struct wal *w = NULL;
        struct wal_options o = {.segment_bytes = 2048};
        write_log(dir, &o, 60, 40);
        uint64_t nseg = 1 + (unsigned)rand_r(&seed) % 2;
        char p[600];
        seg_path(dir, nseg, p, sizeof p);
        struct stat sb;
        assert_int_equal(stat(p, &sb), 0);
        int fd = open(p, O_RDWR);
        assert_true(fd >= 0);
        off_t off = (off_t)((unsigned)rand_r(&seed) % (unsigned)sb.st_size);
        uint8_t b;
        assert_int_equal(pread(fd, &b, 1, off), 1);
        b ^= (uint8_t)(1u << (rand_r(&seed) % 8));
        assert_int_equal(pwrite(fd, &b, 1, off), 1);
        close(fd);
        assert_int_equal(open_wal(dir, &o, &w, &err), CT_OK);
        struct collected *c = calloc(1, sizeof(*c));
        int rc = wal_replay(w, collect_fn, c, &err); /* collect_fn checks every payload */
        if (rc != CT_OK) {
            assert_int_equal(rc, CT_ECORRUPT);
            assert_non_null(strstr(err.msg, "wal-"));
        }
        for (size_t i = 0; i < c->n; i++)
            assert_int_equal(c->seqs[i], i + 1);
        /* only the segment header's reserved and number bytes are not checksummed */
        assert_true(c->n < 60 || (off >= 5 && off < WAL_SEGMENT_HEADER_BYTES));
        wal_close(w);
        free(c);
        ctest_rmdir(dir);
    }
}

static int count_segments(const char *dir)
{
    int n = 0;
    for (uint64_t num = 1; num < 64; num++) {
        char p[600];
        seg_path(dir, num, p, sizeof p);
        struct stat sb;
        if (stat(p, &sb) == 0)
            n++;
    }
    return n;
}

struct warned {
    int n;
    char last[1024];
};

static void warn_collect(void *arg, const char *msg)
{
    struct warned *wn = arg;
    wn->n++;
    snprintf(wn->last, sizeof wn->last, "%s", msg);
}

/* A process killed after its appends returned leaves the mapped segment with its preallocated
 * zero tail: replay reads every record, treats the zeros as the end (no warning), cuts the
 * file to its records, and appends go on. */
static void test_wal_mapped_crash_zero_tail_is_end_of_log(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    append_then_die(dir, true, NULL, 50);
    char p[600];
    seg_path(dir, 1, p, sizeof p);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    off_t used = WAL_SEGMENT_HEADER_BYTES + 50 * (WAL_RECORD_HEADER_BYTES + 100);
    assert_true(sb.st_size > used);       /* a zero tail was preallocated ... */
    assert_true(sb.st_size <= (2 << 20)); /* ... but modestly, not the 64 MiB segment */
    struct warned wn = {0};
    struct wal_options o = {.warn_fn = warn_collect, .warn_arg = &wn};
    struct wal *w = NULL;
    assert_int_equal(open_wal(dir, &o, &w, &err), CT_OK);
    struct collected *c = calloc(1, sizeof(*c));
    assert_int_equal(wal_replay(w, collect_fn, c, &err), CT_OK);
    assert_int_equal(c->n, 50);
    assert_int_equal(wn.n, 0); /* zeros are no news */
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(sb.st_size, used);
    append_n(w, 51, 3, 100, WAL_SYNC_WRITE);
    wal_close(w);
    assert_int_equal(open_wal(dir, NULL, &w, &err), CT_OK);
    memset(c, 0, sizeof(*c));
    assert_int_equal(wal_replay(w, collect_fn, c, &err), CT_OK);
    assert_int_equal(c->n, 53);
    wal_close(w);
    free(c);
    ctest_rmdir(dir);
}

/* What a kill in the middle of copying a record into the mapping leaves: its header stored, half
 * its payload, the checksum not yet (zero), then the zero tail. Replay keeps the records before
 * it, cuts the torn one (and says so: it is not all zeros), and the next open is clean. */
static void test_wal_mapped_torn_record_is_cut(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    append_then_die(dir, true, NULL, 20);
    char p[600];
    seg_path(dir, 1, p, sizeof p);
    int fd = open(p, O_RDWR);
    assert_true(fd >= 0);
    off_t last = WAL_SEGMENT_HEADER_BYTES + 19 * (WAL_RECORD_HEADER_BYTES + 100);
    uint8_t zeros[4 + 50] = {0};
    assert_int_equal(pwrite(fd, zeros, 4, last), 4); /* checksum not stored yet */
    assert_int_equal(pwrite(fd, zeros + 4, 50, last + WAL_RECORD_HEADER_BYTES + 50), 50);
    close(fd);
    struct warned wn = {0};
    struct wal_options o = {.warn_fn = warn_collect, .warn_arg = &wn};
    struct wal *w = NULL;
    assert_int_equal(open_wal(dir, &o, &w, &err), CT_OK);
    struct collected *c = calloc(1, sizeof(*c));
    assert_int_equal(wal_replay(w, collect_fn, c, &err), CT_OK);
    assert_int_equal(c->n, 19);
    assert_int_equal(wn.n, 1);
    assert_non_null(strstr(wn.last, "checksum mismatch"));
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(sb.st_size, last);
    wal_close(w);
    wn.n = 0;
    assert_int_equal(open_wal(dir, &o, &w, &err), CT_OK);
    memset(c, 0, sizeof(*c));
    assert_int_equal(wal_replay(w, collect_fn, c, &err), CT_OK);
    assert_int_equal(c->n, 19);
    assert_int_equal(wn.n, 0);
    wal_close(w);
    free(c);
    ctest_rmdir(dir);
}

/* A zero tail is the end of a segment's records wherever it is, never corruption; a segment
 * that is all zeros (created and extended, header never stored) replays as empty. */
static void test_wal_zero_tail_in_any_segment_is_not_corruption(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct wal *w = NULL;
    struct wal_options o = {.segment_bytes = 1024};
    write_log(dir, &o, 30, 100);
    assert_true(count_segments(dir) >= 3);
    char p[600];
    seg_path(dir, 1, p, sizeof p);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(truncate(p, sb.st_size + 8192), 0); /* zero tail in the FIRST segment */
    uint64_t next = (uint64_t)count_segments(dir) + 1;
    seg_path(dir, next, p, sizeof p);
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 4096), 0); /* an all-zero last segment */
    close(fd);
    assert_int_equal(open_wal(dir, &o, &w, &err), CT_OK);
    struct collected *c = calloc(1, sizeof(*c));
    assert_int_equal(wal_replay(w, collect_fn, c, &err), CT_OK);
    assert_int_equal(c->n, 30);
    for (size_t i = 0; i < 30; i++)
        assert_int_equal(c->seqs[i], i + 1);
    append_n(w, 31, 1, 100, WAL_SYNC_WRITE);
    wal_close(w);
    assert_int_equal(open_wal(dir, &o, &w, &err), CT_OK);
    memset(c, 0, sizeof(*c));
    assert_int_equal(wal_replay(w, collect_fn, c, &err), CT_OK);
    assert_int_equal(c->n, 31);
    wal_close(w);
    free(c);
    ctest_rmdir(dir);
}

/* Once every record is released the active segment goes too: no log bytes are left, and the
 * next append opens a new segment. */
static void test_wal_release_of_everything_removes_the_active_segment(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct wal *w = NULL;
    assert_int_equal(open_wal(dir, NULL, &w, &err), CT_OK);
    append_n(w, 1, 10, 100, WAL_SYNC_WRITE);
    assert_int_equal(count_segments(dir), 1);
    assert_int_equal(wal_release_upto(w, 9, &err), CT_OK);
    assert_int_equal(count_segments(dir), 1);
    assert_int_equal(wal_release_upto(w, 10, &err), CT_OK);
    assert_int_equal(count_segments(dir), 0);
    struct wal_stats st;
    wal_get_stats(w, &st);
    assert_int_equal(st.segments, 0);
    assert_int_equal(wal_sync(w, &err), CT_OK);
    append_n(w, 11, 2, 100, WAL_SYNC_FSYNC);
    assert_int_equal(count_segments(dir), 1);
    char p[600];
    seg_path(dir, 2, p, sizeof p);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    wal_close(w);
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(sb.st_size, WAL_SEGMENT_HEADER_BYTES + 2 * (WAL_RECORD_HEADER_BYTES + 100));
    assert_int_equal(open_wal(dir, NULL, &w, &err), CT_OK);
    struct collected *c = calloc(1, sizeof(*c));
    assert_int_equal(wal_replay(w, collect_fn, c, &err), CT_OK);
    assert_int_equal(c->n, 2);
    assert_int_equal(c->seqs[0], 11);
    wal_close(w);
    free(c);
    ctest_rmdir(dir);
}

/* Mapped segments grow in modest steps while in use and are cut to their records at close. */
static void test_wal_mapped_segment_grows_in_steps_and_is_cut_at_close(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct wal *w = NULL;
    assert_int_equal(wal_open_mapped(dir, NULL, &w, &err), CT_OK); /* 64 MiB segments */
    append_n(w, 1, 3, 100, WAL_SYNC_WRITE);
    char p[600];
    seg_path(dir, 1, p, sizeof p);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    assert_true(sb.st_size <= (1 << 20));
    append_n(w, 4, 20000, 100, WAL_SYNC_WRITE); /* ~2.3 MB: past two steps */
    assert_int_equal(stat(p, &sb), 0);
    off_t used = WAL_SEGMENT_HEADER_BYTES + 20003 * (off_t)(WAL_RECORD_HEADER_BYTES + 100);
    /* at most a step and a half ahead (the background thread extends before the end) */
    assert_true(sb.st_size >= used && sb.st_size <= used + (3 << 19) + 4096);
    wal_close(w);
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(sb.st_size, used);
    ctest_rmdir(dir);
}

/* RssFile of this process in KiB (0 if unknown). */
static long rss_file_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return 0;
    char line[256];
    long kib = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "RssFile: %ld", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

struct seq_check {
    uint64_t next; /* the seq expected next */
    bool bad;
};

static int seq_check_fn(void *arg, uint64_t seq, const uint8_t *p, size_t len, struct ct_err *err)
{
    (void)err;
    struct seq_check *c = arg;
    if (seq != c->next || len != 300)
        c->bad = true;
    for (size_t i = 0; i < len && !c->bad; i++)
        if (p[i] != (uint8_t)(seq + i))
            c->bad = true;
    c->next++;
    return CT_OK;
}

/* The mapped log unmaps the pages it has written (wal.c invariant (6)): a child appends ~31 MB
 * through one 64 MiB segment and its file-backed RSS grows by a few MiB, not by the log's
 * size; it then dies without closing (kill -9 after the last acknowledged append), and every
 * record replays, in order and intact: the unmapped pages were kept by the page cache. */
static void test_wal_mapped_written_pages_leave_rss_and_survive_death(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    enum {
        N = 100000
    };
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct ct_err err = {0};
        struct wal *w = NULL;
        if (wal_open_mapped(dir, NULL, &w, &err) != CT_OK)
            _exit(2);
        uint8_t buf[300];
        payload_for(1, buf, sizeof buf);
        if (wal_append(w, 1, buf, sizeof buf, WAL_SYNC_WRITE, &err) != CT_OK)
            _exit(3);
        long before = rss_file_kib();
        for (uint64_t seq = 2; seq <= N; seq++) {
            payload_for(seq, buf, sizeof buf);
            if (wal_append(w, seq, buf, sizeof buf, WAL_SYNC_WRITE, &err) != CT_OK)
                _exit(3);
        }
        long after = rss_file_kib();
        if (before <= 0 || after - before > 12 * 1024) /* the log alone is ~30,000 KiB */
            _exit(4);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    struct ct_err err = {0};
    struct wal *w = NULL;
    assert_int_equal(wal_open_mapped(dir, NULL, &w, &err), CT_OK);
    struct seq_check c = {1, false};
    assert_int_equal(wal_replay(w, seq_check_fn, &c, &err), CT_OK);
    assert_false(c.bad);
    assert_int_equal(c.next, (uint64_t)N + 1);
    wal_close(w);
    ctest_rmdir(dir);
}

struct stress_arg {
    struct wal *w;
    uint64_t first;
    int n;
    atomic_int *bad;
};

static void *stress_appender(void *arg)
{
    struct stress_arg *a = arg;
    uint8_t buf[300];
    for (int i = 0; i < a->n; i++) {
        uint64_t seq = a->first + (uint64_t)i;
        payload_for(seq, buf, sizeof buf);
        struct ct_err err;
        if (wal_append(a->w, seq, buf, sizeof buf, i % 50 ? WAL_SYNC_WRITE : WAL_SYNC_FSYNC,
                       &err) != CT_OK)
            atomic_fetch_add(a->bad, 1);
    }
    return NULL;
}

static int stress_collect(void *arg, uint64_t seq, const uint8_t *p, size_t len, struct ct_err *err)
{
    (void)err;
    uint8_t *seen = arg;
    if (len != 300 || seq == 0 || seq > 4 * 4000)
        return ct_err_set(err, CT_ECORRUPT, "unexpected record %llu", (unsigned long long)seq);
    for (size_t i = 0; i < len; i++)
        if (p[i] != (uint8_t)(seq + i))
            return ct_err_set(err, CT_ECORRUPT, "bad payload %llu", (unsigned long long)seq);
    seen[seq]++;
    return CT_OK;
}

/* Four appenders write ~5 MB through mapped segments of 2 MiB: the background thread extends
 * each segment ahead of them while they rotate; every record comes back exactly once. */
static void test_wal_mapped_appenders_across_growth_and_rotation(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct wal *w = NULL;
    struct wal_options o = {.segment_bytes = 2 << 20};
    assert_int_equal(wal_open_mapped(dir, &o, &w, &err), CT_OK);
    atomic_int bad = 0;
    pthread_t th[4];
    struct stress_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (struct stress_arg){w, 1 + (uint64_t)i * 4000, 4000, &bad};
        assert_int_equal(pthread_create(&th[i], NULL, stress_appender, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&bad), 0);
    struct wal_stats st;
    wal_get_stats(w, &st);
    assert_true(st.segments >= 3);
    wal_close(w);
    assert_int_equal(wal_open_mapped(dir, &o, &w, &err), CT_OK);
    uint8_t *seen = calloc(4 * 4000 + 1, 1);
    assert_int_equal(wal_replay(w, stress_collect, seen, &err), CT_OK);
    for (int i = 1; i <= 4 * 4000; i++)
        assert_int_equal(seen[i], 1);
    wal_close(w);
    free(seen);
    ctest_rmdir(dir);
}

#define BOTH(t) cmocka_unit_test_setup(t, set_plain), cmocka_unit_test_setup(t, set_mapped)

int main(void)
{
    const struct CMUnitTest tests[] = {
        BOTH(test_wal_round_trips_records_across_segments),
        BOTH(test_wal_replay_drops_torn_tail),
        BOTH(test_wal_replay_drops_garbage_tail),
        BOTH(test_wal_corruption_in_earlier_segment_names_segment_and_offset),
        BOTH(test_wal_rejects_unknown_version),
        BOTH(test_wal_group_commit_shares_writes_and_syncs),
        BOTH(test_wal_write_error_is_reported_and_sticky),
        BOTH(test_wal_fsync_error_is_reported_and_sticky),
        BOTH(test_wal_async_records_are_written_by_sync_and_close),
        BOTH(test_wal_async_records_are_synced_by_background_thread),
        BOTH(test_wal_release_deletes_flushed_segments),
        BOTH(test_wal_replay_callback_error_stops_replay),
        BOTH(test_wal_sync_write_records_survive_process_death),
        BOTH(test_wal_random_damage_gives_prefix_or_corruption),
        BOTH(test_wal_zero_tail_in_any_segment_is_not_corruption),
        BOTH(test_wal_release_of_everything_removes_the_active_segment),
        cmocka_unit_test(test_wal_mapped_crash_zero_tail_is_end_of_log),
        cmocka_unit_test(test_wal_mapped_torn_record_is_cut),
        cmocka_unit_test(test_wal_mapped_segment_grows_in_steps_and_is_cut_at_close),
        cmocka_unit_test(test_wal_mapped_appenders_across_growth_and_rotation),
        cmocka_unit_test(test_wal_mapped_written_pages_leave_rss_and_survive_death),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
