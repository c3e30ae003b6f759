/* test_headlog.c - the head's write-ahead log (schema/headlog.h): what is appended comes back by
 * replay into a fresh head bit for bit; release after a hand-off keeps only the open hours'
 * records across a restart (the mark file); points the head refuses on replay reach the refused
 * function; a torn tail loses only the unfinished record; a corrupt record or mark file is
 * CT_ECORRUPT naming it; a delete record drops the same hours again on replay; a read-only load
 * gives the writer's head and changes nothing; a failing append is the log's error state (counted,
 * named, reported once per interval) that a later successful append clears after a full disk, and
 * that stays after a failed sync. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "schema/head.h"
#include "schema/headlog.h"
#include "schema/headlog_format.h"
#include "storage/coding.h"
#include "storage/crc32c.h"
#include "storage/engine/eio.h"
#include "storage/engine/wal.h"
#include "tests/lib/ctest.h"

#define BASE    1356998400LL
#define BASE_MS (BASE * 1000)

static const uint8_t T1[] = {0, 0, 1, 0, 0, 1, 0, 0, 2};
static const uint8_t T2[] = {0, 0, 1, 0, 0, 1, 0, 0, 3, 0, 0, 4};

struct refused {
    size_t n;
    struct dpcodec_point last;
    enum head_result res;
};

static int refused_fn(void *arg, const uint8_t *tsuid, size_t tlen, const struct dpcodec_point *p,
                      enum head_result res, struct ct_err *err)
{
    struct refused *r = arg;
    (void)tsuid;
    (void)tlen;
    (void)err;
    r->n++;
    r->last = *p;
    r->res = res;
    return CT_OK;
}

static struct headlog *open_log(const char *dir)
{
    struct headlog *l = NULL;
    struct ct_err err = {0};
    assert_int_equal(headlog_open(dir, &l, &err), CT_OK);
    return l;
}

/* Opens dir, replays into a new head; returns the head (the log in *lo). */
static struct head *reopen(const char *dir, struct headlog **lo, struct refused *r,
                           uint64_t *npoints)
{
    struct ct_err err = {0};
    struct head *h = NULL;
    assert_int_equal(head_new(&h, &err), CT_OK);
    *lo = open_log(dir);
    int rrc = headlog_replay(*lo, h, refused_fn, r, npoints, &err);
    if (rrc != CT_OK)
        print_message("replay: %s\n", err.msg);
    assert_int_equal(rrc, CT_OK);
    return h;
}

static void append_points(struct headlog *l, struct head *h, const struct head_point *pts, size_t n)
{
    struct ct_err err = {0};
    assert_int_equal(headlog_append(l, pts, n, WAL_SYNC_WRITE, &err), CT_OK);
    for (size_t i = 0; i < n; i++) {
        enum head_result r;
        assert_int_equal(head_append(h, pts[i].tsuid, pts[i].tlen, &pts[i].p, &r, &err), CT_OK);
    }
}

static void append_points_head_only(struct head *h, const struct head_point *pts, size_t n)
{
    struct ct_err err = {0};
    for (size_t i = 0; i < n; i++) {
        enum head_result r;
        assert_int_equal(head_append(h, pts[i].tsuid, pts[i].tlen, &pts[i].p, &r, &err), CT_OK);
        assert_int_equal(r, HEAD_TAKEN);
    }
}

static size_t read_all(struct head *h, const uint8_t *t, size_t tl, struct dpcodec_point **out)
{
    struct ct_err err = {0};
    uint8_t *buf = NULL;
    size_t cap = 0, len = 0, np = 0, n = 0;
    assert_int_equal(head_copy(h, t, tl, 0, INT64_MAX, &buf, &cap, &len, &np, &err), CT_OK);
    *out = malloc((np ? np : 1) * sizeof(**out));
    assert_non_null(*out);
    struct head_iter it;
    head_iter_init(&it, buf, len, 0, INT64_MAX);
    while (n < np && head_iter_next(&it, &(*out)[n]))
        n++;
    free(buf);
    return n;
}

static void same_series(struct head *a, struct head *b, const uint8_t *t, size_t tl, size_t want_n)
{
    struct dpcodec_point *pa, *pb;
    size_t na = read_all(a, t, tl, &pa), nb = read_all(b, t, tl, &pb);
    assert_int_equal(na, want_n);
    assert_int_equal(nb, want_n);
    for (size_t i = 0; i < na; i++) {
        assert_int_equal(pa[i].ts_ms, pb[i].ts_ms);
        assert_int_equal(pa[i].type, pb[i].type);
        assert_int_equal(pa[i].ms, pb[i].ms);
        assert_true(dpcodec_point_same_value(&pa[i], &pb[i]));
    }
    free(pa);
    free(pb);
}

/* 2 hours of T1 (doubles and ints, s and ms), 1 hour of T2, in batches of 50. */
static void fill(struct headlog *l, struct head *h)
{
    struct head_point b[50];
    size_t nb = 0;
    for (int i = 0; i < 1000; i++) {
        int64_t ts = BASE_MS + (int64_t)i * 7001;
        b[nb++] = (struct head_point){T1, sizeof(T1),
                                      i % 3 ? dpcodec_point_real(ts, false, i * 1.1)
                                            : dpcodec_point_int(ts, false, INT64_MAX - i)};
        if (i < 500)
            b[nb++] = (struct head_point){T2, sizeof(T2),
                                          dpcodec_point_int(BASE_MS + i * 1000, true, -i)};
        if (nb >= 48) {
            append_points(l, h, b, nb);
            nb = 0;
        }
    }
    append_points(l, h, b, nb);
}

static int sink_ok(void *arg, const uint8_t *tsuid, size_t tlen, int64_t base_s, bool replayed,
                   const struct dpcodec_point *pts, size_t n, struct ct_err *err)
{
    (void)replayed;
    (void)tsuid, (void)tlen, (void)base_s, (void)pts, (void)err;
    *(size_t *)arg += n;
    return CT_OK;
}

static void test_headlog_replays_what_was_appended(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct head *h = NULL, *h2;
    assert_int_equal(head_new(&h, &err), CT_OK);
    struct headlog *l = open_log(dir);
    struct refused r = {0};
    assert_int_equal(headlog_replay(l, h, refused_fn, &r, NULL, &err), CT_OK);
    fill(l, h);
    headlog_close(l);
    uint64_t np = 0;
    h2 = reopen(dir, &l, &r, &np);
    assert_int_equal(np, 1500);
    assert_int_equal(r.n, 0);
    same_series(h, h2, T1, sizeof(T1), 1000);
    same_series(h, h2, T2, sizeof(T2), 500);
    /* appends after a replay continue the sequence: reopening again gives both */
    struct head_point p = {T2, sizeof(T2), dpcodec_point_int(BASE_MS + 600000, false, 9)};
    append_points(l, h, &p, 1);
    headlog_close(l);
    head_free(h2);
    h2 = reopen(dir, &l, &r, &np);
    assert_int_equal(np, 1501);
    same_series(h, h2, T2, sizeof(T2), 501);
    headlog_close(l);
    head_free(h2);
    head_free(h);
    ctest_rmdir(dir);
}

/* A record whose series ids the writer gave (headlog_append_ids: three series interleaved, ids
 * in the order of their first points) replays to the same points as the log's own numbering;
 * ids out of order or naming another TSUID length are refused and nothing is appended. */
static void test_headlog_given_series_ids_replay_as_the_logs_own(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct head *h = NULL, *h2;
    struct refused r = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    struct headlog *l = open_log(dir);
    assert_int_equal(headlog_replay(l, h, refused_fn, &r, NULL, &err), CT_OK);
    static const uint8_t T3[] = {0, 0, 2, 0, 0, 1, 0, 0, 7};
    const uint8_t *ts[3] = {T2, T1, T3};
    const size_t tl[3] = {sizeof(T2), sizeof(T1), sizeof(T3)};
    struct head_point pts[30];
    uint32_t ids[30];
    for (int i = 0; i < 30; i++) {
        int s = i % 3; /* T2, T1, T3, T2, ...: ids 0, 1, 2 in order of first points */
        pts[i] = (struct head_point){ts[s], tl[s],
                                     dpcodec_point_int(BASE_MS + (i / 3) * 1000, false, i)};
        ids[i] = (uint32_t)s;
    }
    assert_int_equal(headlog_append_ids(l, pts, ids, 30, WAL_SYNC_WRITE, &err), CT_OK);
    for (int i = 0; i < 30; i++) {
        enum head_result res;
        assert_int_equal(head_append(h, pts[i].tsuid, pts[i].tlen, &pts[i].p, &res, &err), CT_OK);
    }
    uint32_t skip[2] = {1, 0}, mixed[2] = {0, 0};
    struct head_point two[2] = {pts[0], pts[1]}; /* T2 then T1: lengths differ */
    assert_int_equal(headlog_append_ids(l, two, skip, 2, WAL_SYNC_WRITE, &err), CT_EINVAL);
    assert_int_equal(headlog_append_ids(l, two, mixed, 2, WAL_SYNC_WRITE, &err), CT_EINVAL);
    headlog_close(l);
    uint64_t np = 0;
    h2 = reopen(dir, &l, &r, &np);
    assert_int_equal(np, 30);
    for (int s = 0; s < 3; s++)
        same_series(h, h2, ts[s], tl[s], 10);
    headlog_close(l);
    head_free(h2);
    head_free(h);
    ctest_rmdir(dir);
}

static void test_headlog_release_keeps_open_hours_only(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct head *h = NULL, *h2;
    struct refused r = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    struct headlog *l = open_log(dir);
    assert_int_equal(headlog_replay(l, h, refused_fn, &r, NULL, &err), CT_OK);
    fill(l, h);
    /* records mixing hours: the release can only pass the records before hour 2's first one */
    size_t handed = 0, nh = 0;
    assert_int_equal(head_close_hours(h, BASE + 3600, sink_ok, &handed, &nh, &err), CT_OK);
    assert_int_equal(headlog_release(l, BASE + 3600, &err), CT_OK);
    struct headlog_stats st;
    headlog_get_stats(l, &st);
    assert_int_equal(st.open_hours, 1);
    assert_true(st.released_seq > 0);
    headlog_close(l);
    uint64_t np = 0;
    h2 = reopen(dir, &l, &r, &np);
    /* what comes back: every point of the open hour, and fewer than all points */
    assert_true(np < 1500);
    /* h2 holds every point h still holds (the open hour) and, from records shared with the
     * closed hour, some of that hour's points again (re-handed off later: same values) */
    struct dpcodec_point *pa, *pb;
    size_t na = read_all(h, T1, sizeof(T1), &pa), nb = read_all(h2, T1, sizeof(T1), &pb);
    assert_int_equal(na, 1000 - (3600000 + 7000) / 7001);
    assert_true(nb >= na && nb < 1000);
    for (size_t i = 0; i < na; i++) {
        assert_int_equal(pa[i].ts_ms, pb[nb - na + i].ts_ms);
        assert_true(dpcodec_point_same_value(&pa[i], &pb[nb - na + i]));
    }
    free(pa);
    free(pb);
    head_free(h2);
    /* close the last hour: nothing left to replay */
    handed = 0;
    assert_int_equal(head_close_hours(h, BASE + 7200, sink_ok, &handed, &nh, &err), CT_OK);
    assert_int_equal(headlog_release(l, BASE + 7200, &err), CT_OK);
    headlog_close(l);
    h2 = reopen(dir, &l, &r, &np);
    assert_int_equal(np, 0);
    headlog_close(l);
    head_free(h2);
    head_free(h);
    ctest_rmdir(dir);
}

/* Segment files (wal-*.log) in dir. */
static size_t log_segments(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (!strncmp(de->d_name, "wal-", 4) && strstr(de->d_name, ".log"))
            n++;
    closedir(d);
    return n;
}

/* headlog_releasable: true while a release would drop something, false once it did; a record
 * holding only hours handed off before (its points went to the store as single cells) makes the
 * log releasable though the head holds nothing to hand off, and the release leaves no segment. */
static void test_headlog_releasable_only_what_a_release_would_drop(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct head *h = NULL;
    struct refused r = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    struct headlog *l = open_log(dir);
    assert_int_equal(headlog_replay(l, h, refused_fn, &r, NULL, &err), CT_OK);
    assert_false(headlog_releasable(l, BASE + 3600)); /* empty */
    struct head_point a = {T1, sizeof(T1), dpcodec_point_int(BASE_MS + 1000, false, 1)};
    append_points(l, h, &a, 1);
    assert_false(headlog_releasable(l, BASE));       /* its hour is still open */
    assert_true(headlog_releasable(l, BASE + 3600)); /* closed: a release would drop it */
    size_t handed = 0, nh = 0;
    assert_int_equal(head_close_hours(h, BASE + 3600, sink_ok, &handed, &nh, &err), CT_OK);
    assert_int_equal(headlog_release(l, BASE + 3600, &err), CT_OK);
    assert_false(headlog_releasable(l, BASE + 3600));
    assert_int_equal(log_segments(dir), 0);
    /* a late point of the handed-off hour: logged, not registered, refused by the head */
    struct head_point late = {T1, sizeof(T1), dpcodec_point_int(BASE_MS + 2000, false, 2)};
    assert_int_equal(headlog_append(l, &late, 1, WAL_SYNC_WRITE, &err), CT_OK);
    assert_int_equal(log_segments(dir), 1);
    assert_true(headlog_releasable(l, BASE + 3600));
    assert_int_equal(headlog_release(l, BASE + 3600, &err), CT_OK);
    assert_false(headlog_releasable(l, BASE + 3600));
    assert_int_equal(log_segments(dir), 0);
    /* a late record, then one of an open hour: the late one can go, the open one stays */
    late.p.ts_ms += 1000;
    assert_int_equal(headlog_append(l, &late, 1, WAL_SYNC_WRITE, &err), CT_OK);
    struct head_point open_pt = {T1, sizeof(T1), dpcodec_point_int(BASE_MS + 7200000, false, 3)};
    append_points(l, h, &open_pt, 1);
    assert_true(headlog_releasable(l, BASE + 3600));
    assert_int_equal(headlog_release(l, BASE + 3600, &err), CT_OK);
    assert_false(headlog_releasable(l, BASE + 3600));
    struct headlog_stats st;
    headlog_get_stats(l, &st);
    assert_int_equal(st.open_hours, 1);
    assert_int_equal(log_segments(dir), 1);
    headlog_close(l);
    head_free(h);
    ctest_rmdir(dir);
}

static void test_headlog_replay_hands_refused_points_back(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct head *h = NULL;
    struct refused r = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    struct headlog *l = open_log(dir);
    assert_int_equal(headlog_replay(l, h, refused_fn, &r, NULL, &err), CT_OK);
    /* two racing writers: the later record holds the earlier point */
    struct head_point a = {T1, sizeof(T1), dpcodec_point_int(BASE_MS + 2000, false, 2)};
    struct head_point b = {T1, sizeof(T1), dpcodec_point_int(BASE_MS + 1000, false, 1)};
    assert_int_equal(headlog_append(l, &a, 1, WAL_SYNC_WRITE, &err), CT_OK);
    assert_int_equal(headlog_append(l, &b, 1, WAL_SYNC_WRITE, &err), CT_OK);
    headlog_close(l);
    head_free(h);
    uint64_t np;
    h = reopen(dir, &l, &r, &np);
    assert_int_equal(np, 2);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.res, HEAD_OUT_OF_ORDER);
    assert_int_equal(r.last.ts_ms, BASE_MS + 1000);
    assert_int_equal(r.last.i, 1);
    headlog_close(l);
    head_free(h);
    ctest_rmdir(dir);
}

static void test_headlog_torn_tail_loses_only_the_last_record(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct head *h = NULL;
    struct refused r = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    struct headlog *l = open_log(dir);
    assert_int_equal(headlog_replay(l, h, refused_fn, &r, NULL, &err), CT_OK);
    for (int i = 0; i < 10; i++) {
        struct head_point p = {T1, sizeof(T1), dpcodec_point_int(BASE_MS + i * 1000, false, i)};
        append_points(l, h, &p, 1);
    }
    headlog_close(l);
    head_free(h);
    /* cut 3 bytes off the segment (its last record) */
    char cmd[4300];
    snprintf(cmd, sizeof(cmd),
             "f=$(ls %s/wal-*.log | tail -1) && truncate -s $(( $(stat -c %%s $f) - 3 )) $f", dir);
    assert_int_equal(system(cmd), 0);
    uint64_t np;
    h = reopen(dir, &l, &r, &np);
    assert_int_equal(np, 9);
    headlog_close(l);
    head_free(h);
    ctest_rmdir(dir);
}

static void test_headlog_corrupt_record_and_mark_are_named(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct head *h = NULL;
    struct refused r = {0};
    /* a record the engine log frames correctly but whose payload is not a batch */
    struct wal *w = NULL;
    struct wal_options o = {.segment_bytes = 1 << 20};
    assert_int_equal(wal_open_mapped(dir, &o, &w, &err), CT_OK);
    uint8_t bad[] = {1, 1, 9, 0, 0, 1}; /* one series of 9 bytes, truncated */
    assert_int_equal(wal_append(w, 5, bad, sizeof(bad), WAL_SYNC_WRITE, &err), CT_OK);
    wal_close(w);
    assert_int_equal(head_new(&h, &err), CT_OK);
    struct headlog *l = open_log(dir);
    assert_int_equal(headlog_replay(l, h, refused_fn, &r, NULL, &err), CT_ECORRUPT);
    assert_non_null(strstr(err.msg, "head log record 5"));
    headlog_close(l);
    head_free(h);
    ctest_rmdir(dir);

    /* a damaged mark file */
    dir = ctest_mkdtemp();
    char path[4200];
    snprintf(path, sizeof(path), "%s/released", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("CTHL garbage.....", f);
    fclose(f);
    l = NULL;
    assert_int_equal(headlog_open(dir, &l, &err), CT_ECORRUPT);
    assert_null(l);
    assert_non_null(strstr(err.msg, "released"));
    ctest_rmdir(dir);
}

static void test_headlog_rejects_bad_points(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct headlog *l = open_log(dir);
    struct head *h = NULL;
    struct refused r = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    assert_int_equal(headlog_replay(l, h, refused_fn, &r, NULL, &err), CT_OK);
    struct head_point p = {T1, 0, dpcodec_point_int(BASE_MS, false, 1)};
    assert_int_equal(headlog_append(l, &p, 1, WAL_SYNC_WRITE, &err), CT_EINVAL);
    struct headlog_stats st;
    headlog_get_stats(l, &st);
    assert_int_equal(st.records, 0);
    headlog_close(l);
    head_free(h);
    ctest_rmdir(dir);
}

static int log_delete(void *arg, const uint8_t *tsuid, size_t tlen, int64_t from_s, int64_t to_s,
                      struct ct_err *err)
{
    return headlog_append_delete(arg, tsuid, tlen, from_s, to_s, WAL_SYNC_WRITE, err);
}

static int fail_delete(void *arg, const uint8_t *tsuid, size_t tlen, int64_t from_s, int64_t to_s,
                       struct ct_err *err)
{
    (void)arg, (void)tsuid, (void)tlen, (void)from_s, (void)to_s;
    return ct_err_set(err, CT_EIO, "log down");
}

/* A delete (head_delete_hours with the log's delete record) drops the same points again on
 * replay, while a point appended after it stays; a read-only load gives the writer's head and
 * changes nothing; a failing delete log drops nothing. */
static void test_headlog_delete_records_and_read_only_load(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct head *h = NULL, *h2 = NULL;
    struct refused r = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    struct headlog *l = open_log(dir);
    assert_int_equal(headlog_replay(l, h, refused_fn, &r, NULL, &err), CT_OK);
    fill(l, h);
    head_set_delete_log(h, fail_delete, NULL);
    size_t nd = 9;
    assert_int_equal(head_delete_hours(h, T1, sizeof(T1), BASE, BASE + 3600, &nd, &err), CT_EIO);
    assert_int_equal(nd, 0);
    struct dpcodec_point *pts;
    size_t n = read_all(h, T1, sizeof(T1), &pts);
    free(pts);
    assert_int_equal(n, 1000);
    head_set_delete_log(h, log_delete, l);
    /* T1's first hour: points i * 7001 ms < 3600 s, i < 515 */
    assert_int_equal(head_delete_hours(h, T1, sizeof(T1), BASE, BASE + 3600, &nd, &err), CT_OK);
    assert_int_equal(nd, 1);
    assert_int_equal(head_delete_hours(h, T1, sizeof(T1), BASE, BASE + 3600, &nd, &err), CT_OK);
    assert_int_equal(nd, 0); /* nothing left there: nothing logged either */
    struct head_point p = {T1, sizeof(T1), dpcodec_point_int(BASE_MS + 5000, false, 77)};
    append_points(l, h, &p, 1);
    headlog_close(l);
    uint64_t np = 0;
    assert_int_equal(headlog_load_read_only(dir, &h2, &np, &err), CT_OK);
    assert_non_null(h2);
    assert_int_equal(np, 1501);
    same_series(h, h2, T1, sizeof(T1), 486);
    same_series(h, h2, T2, sizeof(T2), 500);
    head_free(h2);
    /* read-only: appends refused, the log unchanged (a writer replays the same) */
    assert_int_equal(headlog_open_read_only(dir, &l, &err), CT_OK);
    assert_int_equal(headlog_append(l, &p, 1, WAL_SYNC_WRITE, &err), CT_EINVAL);
    assert_int_equal(headlog_release(l, BASE + 7200, &err), CT_EINVAL);
    headlog_close(l);
    h2 = reopen(dir, &l, &r, &np);
    same_series(h, h2, T1, sizeof(T1), 486);
    headlog_close(l);
    head_free(h2);
    head_free(h);
    /* a directory without a head log: no head */
    char missing[4200];
    snprintf(missing, sizeof(missing), "%s/none", dir);
    h2 = (struct head *)1;
    assert_int_equal(headlog_load_read_only(missing, &h2, NULL, &err), CT_OK);
    assert_null(h2);
    ctest_rmdir(dir);
}

/* ---- the error state ------------------------------------------------------------------------ */

struct log_lines {
    int errors, clears;
    char last[CT_ERR_MSG_MAX + 200];
};

static void log_fn(void *arg, bool error, const char *msg)
{
    struct log_lines *g = arg;
    if (error)
        g->errors++;
    else
        g->clears++;
    snprintf(g->last, sizeof(g->last), "%s", msg);
}

static void check_state(struct headlog *l, bool active, bool transient, uint64_t errors,
                        uint64_t recoveries)
{
    struct headlog_stats st;
    headlog_get_stats(l, &st);
    assert_int_equal(st.error_active, active);
    assert_int_equal(st.error_transient, transient);
    assert_int_equal(st.errors, errors);
    assert_int_equal(st.recoveries, recoveries);
    struct ct_err e;
    assert_int_equal(headlog_error(l, &e) != CT_OK, active);
    if (!active)
        assert_int_equal(st.error_age_ms, 0);
}

/* A full disk (the segment cannot be preallocated: ENOSPC injected on the log's writes): appends
 * fail naming the head log and the cause, every failure counted, one report line; once space is
 * back the next append succeeds and clears the state (one recovery, one line); a replay holds
 * exactly the appends that succeeded. */
static void test_headlog_full_disk_is_an_error_state_that_clears(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct refused r = {0};
    struct head *h = NULL;
    assert_int_equal(head_new(&h, &err), CT_OK);
    struct headlog *l = open_log(dir);
    assert_int_equal(headlog_replay(l, h, refused_fn, &r, NULL, &err), CT_OK);
    struct log_lines g = {0};
    headlog_set_log(l, log_fn, &g);
    struct eio_fault f = {
        .op = EIO_OP_WRITE, .nth = 1, .errnum = ENOSPC, .repeat = true, .path_substr = dir};
    eio_fault_set(&f);
    struct head_point lost[2] = {{T1, sizeof(T1), dpcodec_point_int(BASE_MS, false, 1)},
                                 {T2, sizeof(T2), dpcodec_point_int(BASE_MS + 5, true, 2)}};
    assert_int_equal(headlog_append(l, lost, 2, WAL_SYNC_WRITE, &err), CT_EIO);
    assert_non_null(strstr(err.msg, "head log "));
    assert_non_null(strstr(err.msg, dir));
    assert_non_null(strstr(err.msg, "No space left on device"));
    check_state(l, true, true, 1, 0);
    struct ct_err e;
    assert_int_equal(headlog_error(l, &e), CT_EIO);
    assert_string_equal(e.msg, err.msg);
    assert_int_equal(g.errors, 1);
    assert_non_null(strstr(g.last, "head log write error"));
    assert_non_null(strstr(g.last, "No space left on device"));
    /* still full: each append tries again, fails and is counted; no second line within 10 s */
    assert_int_equal(headlog_append(l, lost, 2, WAL_SYNC_WRITE, &err), CT_EIO);
    assert_int_equal(
        headlog_append_delete(l, T1, sizeof(T1), BASE, BASE + 3600, WAL_SYNC_WRITE, &err), CT_EIO);
    check_state(l, true, true, 3, 0);
    assert_int_equal(g.errors, 1);
    /* bad input is not an error of the log */
    struct head_point bad = {T1, 0, dpcodec_point_int(BASE_MS, false, 1)};
    assert_int_equal(headlog_append(l, &bad, 1, WAL_SYNC_WRITE, &err), CT_EINVAL);
    check_state(l, true, true, 3, 0);
    assert_true(eio_fault_injected() >= 3);
    /* space is back: the next append goes through and clears the state */
    eio_fault_clear();
    struct head_point kept = {T1, sizeof(T1), dpcodec_point_int(BASE_MS + 7000, false, 3)};
    assert_int_equal(headlog_append(l, &kept, 1, WAL_SYNC_WRITE, &err), CT_OK);
    check_state(l, false, false, 3, 1);
    assert_int_equal(g.clears, 1);
    assert_non_null(strstr(g.last, "head log error cleared"));
    assert_non_null(strstr(g.last, "No space left on device"));
    assert_int_equal(headlog_append(l, &kept, 0, WAL_SYNC_WRITE, &err), CT_OK);
    check_state(l, false, false, 3, 1);
    headlog_close(l);
    head_free(h);
    uint64_t np = 0;
    h = reopen(dir, &l, &r, &np);
    assert_int_equal(np, 1); /* only what was acknowledged */
    struct dpcodec_point *pts;
    assert_int_equal(read_all(h, T1, sizeof(T1), &pts), 1);
    assert_int_equal(pts[0].ts_ms, BASE_MS + 7000);
    free(pts);
    assert_int_equal(read_all(h, T2, sizeof(T2), &pts), 0);
    free(pts);
    headlog_close(l);
    head_free(h);
    ctest_rmdir(dir);
}

/* A failed sync (EIO) may have left anything on disk: the state is not transient and stays, every
 * later append failing with it, until the log is reopened (a restart). */
static void test_headlog_failed_sync_stays(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct refused r = {0};
    struct head *h = NULL;
    assert_int_equal(head_new(&h, &err), CT_OK);
    struct headlog *l = open_log(dir);
    assert_int_equal(headlog_replay(l, h, refused_fn, &r, NULL, &err), CT_OK);
    /* the segment exists first (a failure while creating one is a full disk's kind), then its
     * fdatasync fails (every file: the fault applies to the descriptor opened before it) */
    struct head_point p = {T1, sizeof(T1), dpcodec_point_int(BASE_MS, false, 1)};
    assert_int_equal(headlog_append(l, &p, 1, WAL_SYNC_FSYNC, &err), CT_OK);
    struct eio_fault f = {.op = EIO_OP_SYNC, .nth = 1, .errnum = EIO};
    eio_fault_set(&f);
    p.p.ts_ms += 1000;
    assert_int_equal(headlog_append(l, &p, 1, WAL_SYNC_FSYNC, &err), CT_EIO);
    assert_non_null(strstr(err.msg, "head log "));
    assert_non_null(strstr(err.msg, "Input/output error"));
    check_state(l, true, false, 1, 0);
    eio_fault_clear();
    assert_int_equal(headlog_append(l, &p, 1, WAL_SYNC_FSYNC, &err), CT_EIO);
    check_state(l, true, false, 2, 0);
    headlog_close(l);
    head_free(h);
    h = reopen(dir, &l, &r, NULL);
    p.p.ts_ms += 1000;
    assert_int_equal(headlog_append(l, &p, 1, WAL_SYNC_FSYNC, &err), CT_OK);
    check_state(l, false, false, 0, 0);
    headlog_close(l);
    head_free(h);
    ctest_rmdir(dir);
}

/* ---- version 2 records: series dictionaries, value encodings -------------------------------- */

/* Segments roll after one record: every record gets a segment of its own. */
static struct headlog *open_small(const char *dir)
{
    struct headlog *l = NULL;
    struct ct_err err = {0};
    struct headlog_options o = {.segment_bytes = 17}; /* the header (16) and one record */
    assert_int_equal(headlog_open_opts(dir, &o, &l, &err), CT_OK);
    return l;
}

/* Series s's TSUID: metric 1, one tag (1 = s + 1), 3-byte UIDs. */
static void tsuid_of(uint32_t s, uint8_t t[9])
{
    static const uint8_t pre[6] = {0, 0, 1, 0, 0, 1};
    memcpy(t, pre, 6);
    t[6] = (uint8_t)((s + 1) >> 16);
    t[7] = (uint8_t)((s + 1) >> 8);
    t[8] = (uint8_t)(s + 1);
}

#define NSER 40
static uint8_t tsuids[NSER][9];

static void init_tsuids(void)
{
    for (uint32_t s = 0; s < NSER; s++)
        tsuid_of(s, tsuids[s]);
}

/* Series s's point of interval k: every value encoding in turn (integers, decimals, float32,
 * doubles that need 8 bytes), s and ms times. */
static struct dpcodec_point point_of(uint32_t s, int k)
{
    int64_t ts = BASE_MS + (int64_t)k * 10000 + (s % 7 == 0 ? (int64_t)s * 13 : 0);
    bool ms = s % 5 == 0;
    switch ((s + (uint32_t)k) % 5) {
    case 0:
        return dpcodec_point_int(ts, ms, (int64_t)s * 1000 - k);
    case 1:
        return dpcodec_point_real(ts, ms, (double)(5000 + (int)s * 7 + k) / 100.0); /* %.2f */
    case 2:
        return dpcodec_point_real(ts, ms, 0.25 * k); /* float-exact: FLOAT */
    case 3:
        return dpcodec_point_real(ts, ms, 1.0 / 3.0 + k); /* 8 bytes */
    default:
        return dpcodec_point_int(ts, ms, k % 2 ? INT64_MIN + k : INT64_MAX - s);
    }
}

/* Every series of h and h2 equal, n points each. */
static void same_all(struct head *a, struct head *b, size_t n)
{
    for (uint32_t s = 0; s < NSER; s++)
        same_series(a, b, tsuids[s], 9, n);
}

/* Records of many sizes and series orders (the log's numbering, the writer's ids), over many
 * segment rolls: a reopen replays every point bit for bit, and so does a read-only load; a
 * dictionary spans the segments (records after the first define no series). */
static void test_headlog_dictionary_round_trips_across_segment_rolls(void **state)
{
    (void)state;
    init_tsuids();
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct head *h = NULL, *h2;
    struct refused r = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    struct headlog *l = open_small(dir);
    assert_int_equal(headlog_replay(l, h, refused_fn, &r, NULL, &err), CT_OK);
    uint64_t bytes_first = 0;
    for (int k = 0; k < 30; k++) {
        struct head_point pts[NSER];
        uint32_t ids[NSER];
        for (uint32_t j = 0; j < NSER; j++) {
            uint32_t s = (j * 7 + (uint32_t)k) % NSER; /* another order each record */
            pts[j] = (struct head_point){tsuids[s], 9, point_of(s, k)};
            ids[j] = j;
        }
        if (k % 2) {
            assert_int_equal(headlog_append_ids(l, pts, ids, NSER, WAL_SYNC_WRITE, &err), CT_OK);
            for (uint32_t j = 0; j < NSER; j++) {
                enum head_result res;
                assert_int_equal(head_append(h, pts[j].tsuid, 9, &pts[j].p, &res, &err), CT_OK);
                assert_int_equal(res, HEAD_TAKEN);
            }
        } else {
            append_points(l, h, pts, NSER);
        }
        struct headlog_stats st;
        headlog_get_stats(l, &st);
        if (k == 0)
            bytes_first = st.bytes;
        /* the second record names its 40 series by id, no TSUID (11 bytes each in the first),
         * though each of its points costs more: every series changes its kind each record, so
         * its value is written whole, and its time step is new */
        if (k == 1)
            assert_true(st.bytes - bytes_first + 5 * NSER <= bytes_first);
    }
    assert_true(log_segments(dir) >= 10);
    headlog_close(l);
    uint64_t np = 0;
    h2 = reopen(dir, &l, &r, &np);
    assert_int_equal(np, 30 * NSER);
    assert_int_equal(r.n, 0);
    same_all(h, h2, 30);
    headlog_close(l);
    head_free(h2);
    /* read-only: the same points, the log unchanged */
    size_t nseg = log_segments(dir);
    assert_int_equal(headlog_load_read_only(dir, &h2, &np, &err), CT_OK);
    assert_non_null(h2);
    assert_int_equal(np, 30 * NSER);
    same_all(h, h2, 30);
    assert_int_equal(log_segments(dir), nseg);
    head_free(h2);
    head_free(h);
    ctest_rmdir(dir);
}

/* Edge values and times come back bit for bit: signed zeros, subnormals, infinities, NaN,
 * decimals that need every exponent, float-exact values, integer limits, times going back
 * within a record (another series); decimals take fewer bytes than 8-byte doubles. */
static void test_headlog_value_encodings_are_exact(void **state)
{
    (void)state;
    static const double vals[] = {0.0,
                                  -0.0,
                                  1.5,
                                  0.1,
                                  23.7,
                                  -123.456,
                                  1e300,
                                  5e-324,
                                  -1e-300,
                                  1.0 / 0.0,
                                  -1.0 / 0.0,
                                  12345678.9,
                                  9007199254740992.0,
                                  0.123456789,
                                  1.0 / 3.0,
                                  99999999.99,
                                  -0.001,
                                  3.4028234663852886e38,
                                  1e15 + 0.5,
                                  0.30000000000000004};
    size_t nv = sizeof(vals) / sizeof(vals[0]);
    uint64_t nan_bits = 0x7ff8000000000123ull;
    double nan;
    memcpy(&nan, &nan_bits, 8);
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct head *h = NULL, *h2;
    struct refused r = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    struct headlog *l = open_log(dir);
    assert_int_equal(headlog_replay(l, h, refused_fn, &r, NULL, &err), CT_OK);
    uint8_t ts[32][9];
    struct head_point pts[32];
    size_t n = 0;
    for (size_t i = 0; i < nv; i++) {
        tsuid_of((uint32_t)n, ts[n]);
        /* times going down, then up: negative and positive deltas, s and ms */
        int64_t t = BASE_MS + 3000000 - (int64_t)i * 99001 + (i % 3 ? 0 : 7);
        pts[n] = (struct head_point){ts[n], 9, dpcodec_point_real(t, i % 3 == 0, vals[i])};
        n++;
    }
    tsuid_of((uint32_t)n, ts[n]);
    pts[n] = (struct head_point){ts[n], 9, dpcodec_point_real(BASE_MS, false, nan)};
    n++;
    const int64_t ints[] = {0, -1, INT64_MIN, INT64_MAX, 1234567890123};
    for (size_t i = 0; i < 5; i++, n++) {
        tsuid_of((uint32_t)n, ts[n]);
        pts[n] = (struct head_point){ts[n], 9,
                                     dpcodec_point_int(BASE_MS + 999 * (int64_t)i, true, ints[i])};
    }
    append_points(l, h, pts, n);
    headlog_close(l);
    uint64_t np;
    h2 = reopen(dir, &l, &r, &np);
    assert_int_equal(np, n);
    for (size_t i = 0; i < n; i++)
        same_series(h, h2, ts[i], 9, 1);
    headlog_close(l);
    head_free(h2);
    head_free(h);
    ctest_rmdir(dir);

    /* 100 decimals (%.2f) stepping by 0.01 against 100 doubles that need their 52 bits: the
     * decimals take under a byte a point (a delta of 1 in a kept width), the doubles over 5 */
    uint64_t b[2];
    for (int pass = 0; pass < 2; pass++) {
        dir = ctest_mkdtemp();
        l = open_log(dir);
        assert_int_equal(head_new(&h, &err), CT_OK);
        assert_int_equal(headlog_replay(l, h, refused_fn, &r, NULL, &err), CT_OK);
        struct head_point q[100];
        for (int i = 0; i < 100; i++)
            q[i] = (struct head_point){
                T1, sizeof(T1),
                dpcodec_point_real(BASE_MS + i * 1000, false,
                                   pass ? 1.0 / 3.0 * (i + 1) * 1.01 : 50.0 + i / 100.0)};
        append_points(l, h, q, 100);
        struct headlog_stats st;
        headlog_get_stats(l, &st);
        b[pass] = st.bytes;
        headlog_close(l);
        head_free(h);
        ctest_rmdir(dir);
    }
    assert_true(b[0] < 100 + 16);
    assert_true(b[1] > 500);
}

/* Late points of hours already released: each such hour is noted again by the record that
 * brings it back (the head may hold it as a backfill chunk), and that record starts a
 * dictionary, so a release that passes the first late hour's records may delete their segment:
 * the records after it never lean on its dictionary. The replay after it still names every
 * series. (A release can thus never pass a dictionary's start while a record using it stays:
 * the mark stops before the first record of the oldest hour still held, and that record started
 * a dictionary; the segment guard in headlog_release is kept for logs of other writers.) */
static void test_headlog_late_hours_start_dictionaries_a_release_may_drop(void **state)
{
    (void)state;
    init_tsuids();
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct head *h = NULL;
    struct refused r = {0};
    int64_t h0 = BASE_MS, h1 = BASE_MS + 3600000;
    assert_int_equal(head_new(&h, &err), CT_OK);
    struct headlog *l = open_small(dir);
    assert_int_equal(headlog_replay(l, h, refused_fn, &r, NULL, &err), CT_OK);
    struct head_point p[5];
    for (uint32_t s = 0; s < 5; s++) /* record 1: hour 0 */
        p[s] = (struct head_point){tsuids[s], 9, dpcodec_point_int(h0 + s, true, s)};
    assert_int_equal(headlog_append(l, p, 5, WAL_SYNC_WRITE, &err), CT_OK);
    for (uint32_t s = 0; s < 5; s++) /* record 2: hour 1 */
        p[s] = (struct head_point){tsuids[s], 9, dpcodec_point_int(h1 + s, true, s)};
    assert_int_equal(headlog_append(l, p, 5, WAL_SYNC_WRITE, &err), CT_OK);
    assert_int_equal(headlog_release(l, BASE + 7200, &err), CT_OK); /* both hours handed off */
    assert_int_equal(log_segments(dir), 0);
    /* records 3-5: late points of hours 0 and 1: records 3 and 4 each start a dictionary */
    for (uint32_t s = 0; s < 5; s++)
        p[s] = (struct head_point){tsuids[s], 9, dpcodec_point_int(h0 + 100 + s, true, 10 + s)};
    assert_int_equal(headlog_append(l, p, 5, WAL_SYNC_WRITE, &err), CT_OK);
    for (int k = 0; k < 2; k++) {
        for (uint32_t s = 0; s < 5; s++)
            p[s] = (struct head_point){tsuids[s], 9,
                                       dpcodec_point_int(h1 + 100 + k * 10 + s, true, 20 + s)};
        assert_int_equal(headlog_append(l, p, 5, WAL_SYNC_WRITE, &err), CT_OK);
    }
    size_t nseg = log_segments(dir);
    assert_true(nseg >= 2);
    headlog_close(l);
    head_free(h);
    /* session 2 holds hours 0 and 1 again (hour 0 noted at record 3, hour 1 at 4); hour 0
     * closes: the mark passes record 3, and its segment goes (records 4 and 5 use record 4's
     * dictionary) */
    uint64_t np;
    h = reopen(dir, &l, &r, &np);
    assert_int_equal(np, 15);
    assert_int_equal(headlog_release(l, BASE + 3600, &err), CT_OK);
    struct headlog_stats st;
    headlog_get_stats(l, &st);
    assert_int_equal(st.released_seq, 3);
    assert_int_equal(log_segments(dir), nseg - 1);
    headlog_close(l);
    head_free(h);
    /* session 3: records 4 and 5 replay */
    h = reopen(dir, &l, &r, &np);
    assert_int_equal(np, 10);
    struct dpcodec_point *pa;
    assert_int_equal(read_all(h, tsuids[4], 9, &pa), 2);
    assert_int_equal(pa[0].ts_ms, h1 + 104);
    assert_int_equal(pa[1].i, 24);
    free(pa);
    /* hour 1 closes too: everything goes, and the next record starts a dictionary again */
    assert_int_equal(headlog_release(l, BASE + 7200, &err), CT_OK);
    assert_int_equal(log_segments(dir), 0);
    p[0] = (struct head_point){tsuids[4], 9, dpcodec_point_int(h1 + 3000, true, 99)};
    assert_int_equal(headlog_append(l, p, 1, WAL_SYNC_WRITE, &err), CT_OK);
    headlog_close(l);
    head_free(h);
    h = reopen(dir, &l, &r, &np);
    assert_int_equal(np, 1);
    headlog_close(l);
    head_free(h);
    ctest_rmdir(dir);
}

/* A torn record that defined series: replay keeps the records before it, and the next session's
 * first record defines what it names again (the torn definitions are never referred to). */
static void test_headlog_torn_dictionary_record(void **state)
{
    (void)state;
    init_tsuids();
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct head *h = NULL;
    struct refused r = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    struct headlog *l = open_log(dir);
    assert_int_equal(headlog_replay(l, h, refused_fn, &r, NULL, &err), CT_OK);
    struct head_point p[6];
    for (uint32_t s = 0; s < 3; s++) /* record 1 defines series 0-2 */
        p[s] = (struct head_point){tsuids[s], 9, dpcodec_point_int(BASE_MS + 1000, false, s)};
    append_points(l, h, p, 3);
    for (uint32_t s = 0; s < 6; s++) /* record 2 names 0-2 by id and defines 3-5 */
        p[s] = (struct head_point){tsuids[s], 9, dpcodec_point_int(BASE_MS + 2000, false, s)};
    assert_int_equal(headlog_append(l, p, 6, WAL_SYNC_WRITE, &err), CT_OK);
    headlog_close(l);
    head_free(h);
    char cmd[4300];
    snprintf(cmd, sizeof(cmd),
             "f=$(ls %s/wal-*.log | tail -1) && truncate -s $(( $(stat -c %%s $f) - 3 )) $f", dir);
    assert_int_equal(system(cmd), 0);
    uint64_t np;
    h = reopen(dir, &l, &r, &np);
    assert_int_equal(np, 3);
    for (uint32_t s = 3; s < 6; s++) /* series 3-5 again, after the cut */
        p[s - 3] = (struct head_point){tsuids[s], 9, dpcodec_point_int(BASE_MS + 3000, false, s)};
    append_points(l, h, p, 3);
    headlog_close(l);
    head_free(h);
    h = reopen(dir, &l, &r, &np);
    assert_int_equal(np, 6);
    struct dpcodec_point *pa;
    assert_int_equal(read_all(h, tsuids[5], 9, &pa), 1);
    assert_int_equal(pa[0].ts_ms, BASE_MS + 3000);
    assert_int_equal(pa[0].i, 5);
    free(pa);
    headlog_close(l);
    head_free(h);
    ctest_rmdir(dir);
}

/* Hand-made records through the engine log (seq, payload). */
static void write_records(const char *dir, const uint64_t *seqs, const uint8_t *const *recs,
                          const size_t *lens, size_t n)
{
    struct ct_err err = {0};
    struct wal *w = NULL;
    struct wal_options o = {.segment_bytes = 1 << 20};
    assert_int_equal(wal_open_mapped(dir, &o, &w, &err), CT_OK);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(wal_append(w, seqs[i], recs[i], lens[i], WAL_SYNC_WRITE, &err), CT_OK);
    wal_close(w);
}

/* Replays dir into a new head; returns the code, the message in err. */
static int replay_dir(const char *dir, uint64_t *np, struct ct_err *err)
{
    struct head *h = NULL;
    struct refused r = {0};
    assert_int_equal(head_new(&h, err), CT_OK);
    struct headlog *l = open_log(dir);
    int rc = headlog_replay(l, h, refused_fn, &r, np, err);
    headlog_close(l);
    head_free(h);
    return rc;
}

/* Version 2 records that name what no dictionary defines are CT_ECORRUPT naming the record: an
 * id past the dictionary, a point's id past the record's table, a dictionary that is not the
 * current one, a dictionary missing from a log whose mark says the record is not released. A
 * record whose dictionary began before the log's first record is skipped when its mark is
 * gone (fsck --quarantine): it was released. */
static void test_headlog_undefined_ids_are_corrupt(void **state)
{
    (void)state;
    struct ct_err err = {0};
    uint64_t np;
    /* version, back, npoints 1, plen 2, point (hdr: ts 0, next id, int; value 0), table */
    static const uint8_t def[] = {2, 0, 1, 2, 32, 0, 1, 1, 3, 0, 0, 7};     /* defines id 0 */
    static const uint8_t ref0[] = {2, 0, 1, 2, 32, 0, 1, 0};                /* id 0, empty */
    static const uint8_t badpt[] = {2, 0, 1, 3, 0, 2, 0, 1, 1, 3, 0, 0, 7}; /* point id 1 */
    static const uint8_t back1[] = {2, 1, 1, 2, 32, 0, 1, 0};               /* id 0 of seq-1 */
    static const uint8_t back2[] = {2, 2, 1, 2, 32, 0, 1, 0};               /* id 0 of seq-2 */
    static const uint8_t run2[] = {2, 1, 2, 4, 32, 0, 32, 0, 2, 2};         /* a run: ids 0, 1 */
    struct {
        const uint8_t *r[3];
        size_t len[3];
        uint64_t seq[3];
        size_t n;
        const char *want; /* NULL: replays */
    } cases[] = {
        {{ref0}, {sizeof(ref0)}, {5}, 1, "head log record 5: undefined series id"},
        {{badpt}, {sizeof(badpt)}, {5}, 1, "head log record 5: undefined series id"},
        {{def, def, back2},
         {sizeof(def), sizeof(def), sizeof(back2)},
         {5, 6, 7},
         3,
         "head log record 7: its series dictionary (record 5) is not in the log"},
        {{def, run2},
         {sizeof(def), sizeof(run2)},
         {5, 6},
         2,
         "head log record 6: undefined series id"},
        {{def, back1}, {sizeof(def), sizeof(back1)}, {5, 6}, 2, NULL},
        {{back1, def, back1}, {sizeof(back1), sizeof(def), sizeof(back1)}, {5, 6, 7}, 3, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *dir = ctest_mkdtemp();
        write_records(dir, cases[i].seq, cases[i].r, cases[i].len, cases[i].n);
        int rc = replay_dir(dir, &np, &err);
        if (cases[i].want) {
            assert_int_equal(rc, CT_ECORRUPT);
            assert_non_null(strstr(err.msg, cases[i].want));
        } else {
            assert_int_equal(rc, CT_OK);
            assert_int_equal(np, cases[i].n - (i == 5)); /* the first one skipped */
        }
        ctest_rmdir(dir);
    }
    /* the same skipped record with a mark that does not cover it: corrupt */
    char *dir = ctest_mkdtemp();
    const uint8_t *rs[3] = {back1, def, back1};
    size_t ls[3] = {sizeof(back1), sizeof(def), sizeof(back1)};
    uint64_t ss[3] = {5, 6, 7};
    write_records(dir, ss, rs, ls, 3);
    struct headlog *l = open_log(dir); /* a release of nothing writes no mark: make one */
    headlog_close(l);
    char path[4200];
    snprintf(path, sizeof(path), "%s/released", dir);
    uint8_t mark[17] = {'C', 'T', 'H', 'L', 1, 0, 0, 0, 0, 0, 0, 0, 4};
    coding_put_be32(mark + 13, crc32c_value(mark, 13));
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(mark, 1, 17, f), 17);
    fclose(f);
    assert_int_equal(replay_dir(dir, &np, &err), CT_ECORRUPT);
    assert_non_null(
        strstr(err.msg, "record 5: its series dictionary (record 4) is not in the log"));
    /* with the mark at 5, record 5 is released: skipped */
    mark[12] = 5;
    coding_put_be32(mark + 13, crc32c_value(mark, 13));
    f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(mark, 1, 17, f), 17);
    fclose(f);
    assert_int_equal(replay_dir(dir, &np, &err), CT_OK);
    assert_int_equal(np, 2);
    ctest_rmdir(dir);
}

/* A log written in version 1 (self-contained records) replays, then takes version 2 records
 * after it, and a reopen replays both. */
static void test_headlog_version_1_log_replays(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    /* record 1: series T1 (id 0) and T2 (id 1); points: T1 int 5 at BASE, T2 double 2.5 at
     * BASE + 1 ms (ms flag), T1 int -3 at BASE + 1 s */
    uint8_t r1[128], *p = r1;
    *p++ = 1;
    *p++ = 2;
    *p++ = sizeof(T1);
    memcpy(p, T1, sizeof(T1));
    p += sizeof(T1);
    *p++ = sizeof(T2);
    memcpy(p, T2, sizeof(T2));
    p += sizeof(T2);
    *p++ = 3;
    p += coding_put_varint64(p, 0);
    p += coding_put_varint64(p, (uint64_t)BASE_MS);
    *p++ = 0;
    p += coding_put_varint64(p, coding_zigzag(5));
    p += coding_put_varint64(p, 1);
    p += coding_put_varint64(p, (uint64_t)BASE_MS + 1);
    *p++ = 2 << 1 | 1;
    double d = 2.5;
    uint64_t db;
    memcpy(&db, &d, 8);
    coding_put_le64(p, db);
    p += 8;
    p += coding_put_varint64(p, 0);
    p += coding_put_varint64(p, (uint64_t)BASE_MS + 1000);
    *p++ = 0;
    p += coding_put_varint64(p, coding_zigzag(-3));
    const uint8_t *rs[1] = {r1};
    size_t ls[1] = {(size_t)(p - r1)};
    uint64_t ss[1] = {1};
    write_records(dir, ss, rs, ls, 1);
    uint64_t np;
    struct refused r = {0};
    struct headlog *l;
    struct head *h = reopen(dir, &l, &r, &np);
    assert_int_equal(np, 3);
    struct dpcodec_point *pa;
    assert_int_equal(read_all(h, T2, sizeof(T2), &pa), 1);
    assert_int_equal(pa[0].ts_ms, BASE_MS + 1);
    assert_true(pa[0].ms);
    assert_int_equal(pa[0].type, DPCODEC_DOUBLE);
    assert_true(pa[0].f == 2.5);
    free(pa);
    assert_int_equal(read_all(h, T1, sizeof(T1), &pa), 2);
    assert_int_equal(pa[1].i, -3);
    free(pa);
    struct head_point q = {T1, sizeof(T1), dpcodec_point_int(BASE_MS + 2000, false, 7)};
    append_points(l, h, &q, 1);
    headlog_close(l);
    struct head *h2 = reopen(dir, &l, &r, &np);
    assert_int_equal(np, 4);
    same_series(h, h2, T1, sizeof(T1), 3);
    same_series(h, h2, T2, sizeof(T2), 1);
    headlog_close(l);
    head_free(h2);
    head_free(h);
    ctest_rmdir(dir);
}

/* A live-like stream (2,000 series, one point each every 10 s, half %.2f decimals and half
 * small integers, records of 4,096 points): under 3 bytes a point in the log's records (each
 * point coded against its series' previous one). */
static void test_headlog_bytes_per_point(void **state)
{
    (void)state;
    enum {
        NS = 2000,
        NK = 12,
        NB = 4096
    };
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct head *h = NULL;
    struct refused r = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    struct headlog *l = open_log(dir);
    assert_int_equal(headlog_replay(l, h, refused_fn, &r, NULL, &err), CT_OK);
    static uint8_t ts[NS][12];
    for (uint32_t s = 0; s < NS; s++) {
        static const uint8_t pre[9] = {0, 0, 1, 0, 0, 1, 0, 0, 2};
        memcpy(ts[s], pre, 9);
        ts[s][9] = 0;
        ts[s][10] = (uint8_t)(s >> 8);
        ts[s][11] = (uint8_t)s;
    }
    struct head_point *b = malloc(NB * sizeof(*b));
    assert_non_null(b);
    size_t nb = 0;
    for (int k = 0; k < NK; k++)
        for (uint32_t s = 0; s < NS; s++) {
            int64_t t = BASE_MS + (int64_t)k * 10000;
            char txt[32]; /* as a TSD parses it: the double nearest the text */
            snprintf(txt, sizeof(txt), "%.2f", 40.0 + (double)((s * 31 + k * 7) % 2000) / 100);
            b[nb++] = (struct head_point){
                ts[s], 12,
                s % 2 ? dpcodec_point_real(t, false, strtod(txt, NULL))
                      : dpcodec_point_int(t, false, (int64_t)((s * 17 + k) % 300))};
            if (nb == NB || (k == NK - 1 && s == NS - 1)) {
                assert_int_equal(headlog_append(l, b, nb, WAL_SYNC_WRITE, &err), CT_OK);
                nb = 0;
            }
        }
    struct headlog_stats st;
    headlog_get_stats(l, &st);
    assert_int_equal(st.points, NS * NK);
    double bpp = (double)st.bytes / (double)st.points;
    print_message("head log: %.2f bytes a point\n", bpp);
    assert_true(bpp < 3.0);
    free(b);
    headlog_close(l);
    head_free(h);
    ctest_rmdir(dir);
}

/* The hand-off's release drops the segments of the closed hour's records: an hour's first record
 * starts a dictionary, so the records of the hour still open never need the closed hour's. */
static void test_headlog_release_drops_closed_hours_segments(void **state)
{
    (void)state;
    init_tsuids();
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct head *h = NULL;
    struct refused r = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    struct headlog *l = open_small(dir);
    assert_int_equal(headlog_replay(l, h, refused_fn, &r, NULL, &err), CT_OK);
    for (int hour = 0; hour < 2; hour++)
        for (int k = 0; k < 5; k++) {
            struct head_point p[5];
            for (uint32_t s = 0; s < 5; s++)
                p[s] = (struct head_point){
                    tsuids[s], 9, dpcodec_point_int(BASE_MS + hour * 3600000 + k * 1000, false, s)};
            append_points(l, h, p, 5);
        }
    assert_int_equal(log_segments(dir), 10);
    size_t handed = 0, nh = 0;
    assert_int_equal(head_close_hours(h, BASE + 3600, sink_ok, &handed, &nh, &err), CT_OK);
    assert_int_equal(headlog_release(l, BASE + 3600, &err), CT_OK);
    assert_int_equal(log_segments(dir), 5);
    headlog_close(l);
    head_free(h);
    uint64_t np;
    h = reopen(dir, &l, &r, &np);
    assert_int_equal(np, 25);
    headlog_close(l);
    head_free(h);
    ctest_rmdir(dir);
}

struct appender {
    struct headlog *l;
    int t;
};

static void *append_thread(void *arg)
{
    struct appender *a = arg;
    struct ct_err err = {0};
    for (int k = 0; k < 100; k++) {
        struct head_point p[25];
        for (uint32_t j = 0; j < 25; j++) { /* shared series, another subset and order each time */
            uint32_t s = (j * 3 + (uint32_t)(k + a->t * 7)) % NSER;
            p[j] = (struct head_point){
                tsuids[s], 9,
                dpcodec_point_int(BASE_MS + (int64_t)k * 100 + a->t * 10 + j % 10, true, k)};
        }
        if (headlog_append(a->l, p, 25, a->t == 0 ? WAL_SYNC_FSYNC : WAL_SYNC_WRITE, &err) != CT_OK)
            return (void *)1;
    }
    return NULL;
}

/* Four threads appending records that share one dictionary (and a delete now and then) over
 * many segment rolls: the log replays whole, every point read. */
static void test_headlog_concurrent_appends_share_the_dictionary(void **state)
{
    (void)state;
    init_tsuids();
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct head *h = NULL;
    struct refused r = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    struct headlog *l = open_small(dir);
    assert_int_equal(headlog_replay(l, h, refused_fn, &r, NULL, &err), CT_OK);
    pthread_t th[4];
    struct appender a[4];
    for (int t = 0; t < 4; t++) {
        a[t] = (struct appender){l, t};
        assert_int_equal(pthread_create(&th[t], NULL, append_thread, &a[t]), 0);
    }
    for (int t = 0; t < 4; t++) {
        void *ret;
        assert_int_equal(pthread_join(th[t], &ret), 0);
        assert_null(ret);
    }
    headlog_close(l);
    head_free(h);
    uint64_t np;
    h = reopen(dir, &l, &r, &np);
    assert_int_equal(np, 4 * 100 * 25);
    headlog_close(l);
    head_free(h);
    ctest_rmdir(dir);
}

/* A record that could not be written (a full disk) defined a series: the next record defines it
 * again (a failed append ends the dictionary), so the log never names what it does not hold. */
static void test_headlog_failed_append_ends_the_dictionary(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct head *h = NULL;
    struct refused r = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    struct headlog *l = open_small(dir); /* every record needs a new segment: ENOSPC fails it */
    assert_int_equal(headlog_replay(l, h, refused_fn, &r, NULL, &err), CT_OK);
    struct head_point a = {T1, sizeof(T1), dpcodec_point_int(BASE_MS, false, 1)};
    assert_int_equal(headlog_append(l, &a, 1, WAL_SYNC_WRITE, &err), CT_OK);
    struct eio_fault f = {
        .op = EIO_OP_WRITE, .nth = 1, .errnum = ENOSPC, .repeat = true, .path_substr = dir};
    eio_fault_set(&f);
    struct head_point two[2] = {{T1, sizeof(T1), dpcodec_point_int(BASE_MS + 1000, false, 2)},
                                {T2, sizeof(T2), dpcodec_point_int(BASE_MS + 1000, false, 3)}};
    assert_int_equal(headlog_append(l, two, 2, WAL_SYNC_WRITE, &err), CT_EIO);
    eio_fault_clear();
    struct head_point b = {T2, sizeof(T2), dpcodec_point_int(BASE_MS + 2000, false, 4)};
    assert_int_equal(headlog_append(l, &b, 1, WAL_SYNC_WRITE, &err), CT_OK);
    headlog_close(l);
    head_free(h);
    uint64_t np;
    h = reopen(dir, &l, &r, &np);
    assert_int_equal(np, 2);
    struct dpcodec_point *pts;
    assert_int_equal(read_all(h, T2, sizeof(T2), &pts), 1);
    assert_int_equal(pts[0].i, 4);
    free(pts);
    headlog_close(l);
    head_free(h);
    ctest_rmdir(dir);
}

/* ---- version 3 records: per-series state ---------------------------------------------------- */

/* Point i of series 0 (every value kind and edge in turn: integer limits, decimals whose exponent
 * goes up and back, -0, NaN with payload, infinities, a subnormal, float-exact, doubles), series
 * 1 (a counter with a reset) and series 2 (%.2f text, now and then a float-exact value as a FLOAT
 * and one given as a DOUBLE); ms flags and irregular steps. */
static struct dpcodec_point state_point(uint32_t s, int i, int64_t t)
{
    bool ms = i % 4 == 0;
    if (s == 1)
        return dpcodec_point_int(
            t, ms, i == 30 ? -5 : 1000000000000LL + i * 15000000LL + (i * 7919) % 5000000);
    if (s == 2 && i % 7 == 5)
        return dpcodec_point_real(t, ms, 40.25); /* float-exact: FLOAT */
    if (s == 2 && i % 7 == 6) { /* float-exact but given as a DOUBLE: the type is kept */
        struct dpcodec_point p = dpcodec_point_real(t, ms, 40.5);
        p.type = DPCODEC_DOUBLE;
        return p;
    }
    if (s == 2) {
        char txt[32];
        snprintf(txt, sizeof(txt), i % 10 == 9 ? "%.3f" : "%.2f",
                 40.0 + (double)((i * 37) % 2000) / 100);
        return dpcodec_point_real(t, ms, strtod(txt, NULL));
    }
    uint64_t nan_bits = 0x7ff8000000000123ull;
    double nan, sub = 5e-324;
    memcpy(&nan, &nan_bits, 8);
    switch (i % 16) {
    case 0:
        return dpcodec_point_int(t, ms, INT64_MAX);
    case 1:
        return dpcodec_point_int(t, ms, INT64_MIN);
    case 2:
        return dpcodec_point_int(t, ms, 0);
    case 3:
        return dpcodec_point_int(t, ms, -1);
    case 4:
        return dpcodec_point_real(t, ms, 23.7);
    case 5:
        return dpcodec_point_real(t, ms, 23.71);
    case 6:
        return dpcodec_point_real(t, ms, 23.7);
    case 7:
        return dpcodec_point_real(t, ms, -0.0);
    case 8:
        return dpcodec_point_real(t, ms, nan);
    case 9:
        return dpcodec_point_real(t, ms, i % 32 < 16 ? 1.0 / 0.0 : -1.0 / 0.0);
    case 10:
        return dpcodec_point_real(t, ms, sub);
    case 11:
        return dpcodec_point_real(t, ms, (double)0.1f);
    case 12:
        return dpcodec_point_real(t, ms, 1.0 / 3.0);
    case 13:
        return dpcodec_point_real(t, ms, 99999999.99);
    case 14:
        return dpcodec_point_real(t, ms, 9007199254740.991);
    default:
        return dpcodec_point_real(t, ms, -0.000000001);
    }
}

/* The time of round i: irregular steps (1 ms to 20 s), the second half an hour later. */
static int64_t state_time(int i)
{
    int64_t t = BASE_MS;
    for (int j = 1; j <= i; j++)
        t += j % 7 == 3 ? 1 + j : j % 5 == 0 ? 20013 : 10000;
    return t + (i >= 40 ? 3600000 : 0);
}

/* Appends rounds [from, to) of the three series: a record a round (one point a series), every
 * fifth round two rounds in one record (two points a series), through both append calls. */
static void state_rounds(struct headlog *l, struct head *h, uint8_t ts[3][9], int from, int to)
{
    struct ct_err err = {0};
    for (int i = from; i < to;) {
        int nr = i % 5 == 0 && i + 1 < to ? 2 : 1;
        struct head_point pts[6];
        uint32_t ids[6];
        size_t n = 0;
        for (uint32_t s = 0; s < 3; s++) /* a series' points together, as a sorted batch has them */
            for (int k = 0; k < nr; k++) {
                ids[n] = s;
                pts[n++] = (struct head_point){ts[s], 9, state_point(s, i + k, state_time(i + k))};
            }
        if (i % 3)
            assert_int_equal(headlog_append_ids(l, pts, ids, n, WAL_SYNC_WRITE, &err), CT_OK);
        else
            assert_int_equal(headlog_append(l, pts, n, WAL_SYNC_WRITE, &err), CT_OK);
        for (size_t j = 0; j < n; j++) {
            enum head_result res;
            assert_int_equal(head_append(h, pts[j].tsuid, 9, &pts[j].p, &res, &err), CT_OK);
            assert_int_equal(res, HEAD_TAKEN);
        }
        i += nr;
    }
}

/* Each series' points are coded against its previous point in the dictionary (time step, kind,
 * value): every value kind and edge, kinds changing and coming back, counts of one and two
 * points a record, a new hour (a new dictionary: the state starts again) and a reopen (another)
 * all replay bit for bit, twice. */
static void test_headlog_series_state_round_trips_across_records(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct head *h = NULL, *h2;
    struct refused r = {0};
    uint8_t ts[3][9];
    for (uint32_t s = 0; s < 3; s++)
        tsuid_of(500 + s, ts[s]);
    assert_int_equal(head_new(&h, &err), CT_OK);
    struct headlog *l = open_log(dir);
    assert_int_equal(headlog_replay(l, h, refused_fn, &r, NULL, &err), CT_OK);
    state_rounds(l, h, ts, 0, 60);
    headlog_close(l);
    uint64_t np = 0;
    h2 = reopen(dir, &l, &r, &np);
    assert_int_equal(np, 3 * 60);
    assert_int_equal(r.n, 0);
    for (uint32_t s = 0; s < 3; s++)
        same_series(h, h2, ts[s], 9, 60);
    head_free(h2);
    state_rounds(l, h, ts, 60, 80); /* a dictionary of its own (the log was opened) */
    headlog_close(l);
    h2 = reopen(dir, &l, &r, &np);
    assert_int_equal(np, 3 * 80);
    assert_int_equal(r.n, 0);
    for (uint32_t s = 0; s < 3; s++)
        same_series(h, h2, ts[s], 9, 80);
    headlog_close(l);
    head_free(h2);
    head_free(h);
    ctest_rmdir(dir);
}

/* Writes dir's mark file: every record <= seq released. */
static void write_mark(const char *dir, uint64_t seq)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/released", dir);
    uint8_t mark[17] = {'C', 'T', 'H', 'L', 1};
    coding_put_be64(mark + 5, seq);
    coding_put_be32(mark + 13, crc32c_value(mark, 13));
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(mark, 1, 17, f), 17);
    fclose(f);
}

/* A released record of a dictionary that an unreleased record uses is still decoded on replay
 * (not put in the head): the unreleased records' points are coded against its points. */
static void test_headlog_released_records_rebuild_the_state(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct head *h = NULL, *want = NULL, *h2;
    struct refused r = {0};
    uint8_t ts[3][9];
    for (uint32_t s = 0; s < 3; s++)
        tsuid_of(700 + s, ts[s]);
    assert_int_equal(head_new(&h, &err), CT_OK);
    assert_int_equal(head_new(&want, &err), CT_OK);
    struct headlog *l = open_log(dir);
    assert_int_equal(headlog_replay(l, h, refused_fn, &r, NULL, &err), CT_OK);
    for (int i = 0; i < 10; i++) { /* records 1..10, one hour: one dictionary */
        struct head_point pts[3];
        for (uint32_t s = 0; s < 3; s++)
            pts[s] = (struct head_point){ts[s], 9, state_point(s, i, BASE_MS + i * 10000)};
        append_points(l, h, pts, 3);
        if (i >= 6)
            append_points_head_only(want, pts, 3);
    }
    headlog_close(l);
    write_mark(dir, 6); /* records 1..6 released, the dictionary's start among them */
    uint64_t np = 0;
    h2 = reopen(dir, &l, &r, &np);
    assert_int_equal(np, 3 * 4);
    assert_int_equal(r.n, 0);
    for (uint32_t s = 0; s < 3; s++)
        same_series(want, h2, ts[s], 9, 4);
    headlog_close(l);
    head_free(h2);
    assert_int_equal(headlog_load_read_only(dir, &h2, &np, &err), CT_OK);
    assert_int_equal(np, 3 * 4);
    for (uint32_t s = 0; s < 3; s++)
        same_series(want, h2, ts[s], 9, 4);
    head_free(h2);
    head_free(want);
    head_free(h);
    ctest_rmdir(dir);
}

static int grab_record(void *arg, uint64_t seq, const uint8_t *p, size_t len, struct ct_err *err)
{
    (void)seq, (void)err;
    uint8_t *out = arg;
    assert_true(len < 256);
    out[0] = (uint8_t)len;
    memcpy(out + 1, p, len);
    return CT_OK;
}

/* A version 3 record's bytes, pinned: two integer points of one series 10 s apart; one byte
 * more or less, or a pad bit set, is CT_ECORRUPT. */
static void test_headlog_version_3_bytes(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct ct_err err = {0};
    struct head *h = NULL;
    struct refused r = {0};
    assert_int_equal(head_new(&h, &err), CT_OK);
    struct headlog *l = open_log(dir);
    assert_int_equal(headlog_replay(l, h, refused_fn, &r, NULL, &err), CT_OK);
    struct head_point pts[2] = {{T1, sizeof(T1), dpcodec_point_int(BASE_MS, false, 5)},
                                {T1, sizeof(T1), dpcodec_point_int(BASE_MS + 10000, false, 7)}};
    append_points(l, h, pts, 2);
    headlog_close(l);
    uint8_t want[64], *p = want, got[256] = {0};
    *p++ = 3;                                       /* version */
    *p++ = 0;                                       /* back: a new dictionary */
    *p++ = 2;                                       /* npoints */
    p += coding_put_varint64(p, (uint64_t)BASE_MS); /* base time */
    *p++ = 1;                                       /* nseries */
    *p++ = 1;                                       /* a new entry */
    *p++ = sizeof(T1);
    memcpy(p, T1, sizeof(T1));
    p += sizeof(T1);
    /* bits, first first: count 2 (010); point 1: coded (1), step 0 (0), same kind (0), width 4
     * (1 000100... low bit first: 1 001000), zz(5) = 10 (0101); point 2: coded (1), step of
     * zz(10000) = 20000 (1110 + 24 bits), same kind (0), zz(2) = 4 in width 4 (0 0010) */
    static const uint8_t bits[] = {0x4a, 0x42, 0x1f, 0x88, 0x13, 0x00, 0x04};
    memcpy(p, bits, sizeof(bits));
    p += sizeof(bits);
    struct wal *w = NULL;
    struct wal_options o = {.segment_bytes = HEADLOG_SEGMENT_BYTES};
    assert_int_equal(wal_open_read_only(dir, &o, &w, &err), CT_OK);
    assert_int_equal(wal_replay(w, grab_record, got, &err), CT_OK);
    wal_close(w);
    assert_int_equal(got[0], (size_t)(p - want));
    assert_memory_equal(got + 1, want, (size_t)(p - want));
    head_free(h);
    ctest_rmdir(dir);
    /* the same record with a byte more (even 0) or a byte less, or a pad bit set: corrupt */
    size_t len = (size_t)(p - want);
    want[len] = 0;
    uint64_t seq1[1] = {1}, np;
    struct {
        size_t len;
        int flip; /* xor into the last byte */
        const char *why;
    } bad[] = {{len + 1, 0, "bytes after the last point"},
               {len - 1, 0, "truncated points"},
               {len, 0x80, "bytes after the last point"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint8_t rec[64];
        memcpy(rec, want, bad[i].len);
        rec[len - 1] ^= (uint8_t)bad[i].flip;
        const uint8_t *rs[1] = {rec};
        size_t ls[1] = {bad[i].len};
        dir = ctest_mkdtemp();
        write_records(dir, seq1, rs, ls, 1);
        assert_int_equal(replay_dir(dir, &np, &err), CT_ECORRUPT);
        assert_non_null(strstr(err.msg, bad[i].why));
        ctest_rmdir(dir);
    }
}

/* A log written in version 2 (pinned bytes: a dictionary's first record with every value
 * encoding, a second naming its series by a delta and a run) replays, takes version 3 records
 * after it (a dictionary of their own), and a reopen replays both. */
static void test_headlog_version_2_log_replays(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    static const uint8_t T3[] = {0, 0, 1, 0, 0, 1, 0, 0, 9};
    uint8_t r1[256], r2[64], pts[128], *p, *q;
    double dec = 23.7, dbl = 1.0 / 3.0;
    float fl = 0.1f;
    uint64_t db;
    uint32_t fb;
    /* record 1 points: T1 int 5 at BASE (id 0, next); T2 23.7 at BASE + 1 ms (id 1, next, ms,
     * decimal m 237 k 1); T1 0.1f at BASE + 1 s (id 0: not next, zz(-2) = 3; float: 4 bytes);
     * T2 1/3 at BASE + 2 s (id 1, next; 8 bytes) */
    q = pts;
    q += coding_put_varint64(q, coding_zigzag(BASE_MS) << 6 | 32u | 0u);
    q += coding_put_varint64(q, coding_zigzag(5));
    q += coding_put_varint64(q, coding_zigzag(1) << 6 | 32u | 2u << 3 | 2u << 1 | 1u);
    q += coding_put_varint64(q, coding_zigzag(237) << 4 | 1u);
    q += coding_put_varint64(q, coding_zigzag(999) << 6 | 1u << 3 | 1u << 1);
    q += coding_put_varint64(q, 3);
    memcpy(&fb, &fl, 4);
    coding_put_le32(q, fb);
    q += 4;
    q += coding_put_varint64(q, coding_zigzag(1000) << 6 | 32u | 0u << 3 | 2u << 1);
    memcpy(&db, &dbl, 8);
    coding_put_le64(q, db);
    q += 8;
    p = r1;
    *p++ = 2;
    *p++ = 0; /* back */
    *p++ = 4; /* npoints */
    *p++ = (uint8_t)(q - pts);
    memcpy(p, pts, (size_t)(q - pts));
    p += q - pts;
    *p++ = 2; /* nseries: two new entries */
    *p++ = 1;
    *p++ = sizeof(T1);
    memcpy(p, T1, sizeof(T1));
    p += sizeof(T1);
    *p++ = 1;
    *p++ = sizeof(T2);
    memcpy(p, T2, sizeof(T2));
    p += sizeof(T2);
    size_t l1 = (size_t)(p - r1);
    /* record 2 (back 1): T3 new (id 2) int -7 at BASE + 3 s, then T1, T2 by a delta and a run:
     * table: new T3, zz(0 - 3) << 2 = 20 (id 0), one entry after it (0: id 1) */
    q = pts;
    q += coding_put_varint64(q, coding_zigzag(BASE_MS + 3000) << 6 | 32u);
    q += coding_put_varint64(q, coding_zigzag(-7));
    q += coding_put_varint64(q, coding_zigzag(1000) << 6 | 32u);
    q += coding_put_varint64(q, coding_zigzag(8));
    q += coding_put_varint64(q, 0u << 6 | 32u | 2u << 3 | 2u << 1);
    q += coding_put_varint64(q, coding_zigzag(2371) << 4 | 2u);
    p = r2;
    *p++ = 2;
    *p++ = 1;
    *p++ = 3;
    *p++ = (uint8_t)(q - pts);
    memcpy(p, pts, (size_t)(q - pts));
    p += q - pts;
    *p++ = 3;
    *p++ = 1;
    *p++ = sizeof(T3);
    memcpy(p, T3, sizeof(T3));
    p += sizeof(T3);
    *p++ = 20;
    *p++ = 0;
    size_t l2 = (size_t)(p - r2);
    const uint8_t *rs[2] = {r1, r2};
    size_t ls[2] = {l1, l2};
    uint64_t ss[2] = {1, 2};
    write_records(dir, ss, rs, ls, 2);
    uint64_t np;
    struct refused r = {0};
    struct headlog *l;
    struct head *h = reopen(dir, &l, &r, &np);
    assert_int_equal(np, 7);
    assert_int_equal(r.n, 0);
    struct dpcodec_point *pa;
    assert_int_equal(read_all(h, T1, sizeof(T1), &pa), 3);
    assert_int_equal(pa[0].type, DPCODEC_INT);
    assert_int_equal(pa[0].i, 5);
    assert_int_equal(pa[1].ts_ms, BASE_MS + 1000);
    assert_int_equal(pa[1].type, DPCODEC_FLOAT);
    assert_true(pa[1].f == (double)0.1f);
    assert_int_equal(pa[2].ts_ms, BASE_MS + 4000);
    assert_int_equal(pa[2].i, 8);
    free(pa);
    assert_int_equal(read_all(h, T2, sizeof(T2), &pa), 3);
    assert_int_equal(pa[0].ts_ms, BASE_MS + 1);
    assert_true(pa[0].ms);
    assert_int_equal(pa[0].type, DPCODEC_DOUBLE);
    assert_memory_equal(&pa[0].f, &dec, 8);
    assert_int_equal(pa[1].ts_ms, BASE_MS + 2000);
    assert_memory_equal(&pa[1].f, &dbl, 8);
    assert_int_equal(pa[2].ts_ms, BASE_MS + 4000);
    assert_true(pa[2].f == 23.71);
    free(pa);
    assert_int_equal(read_all(h, T3, sizeof(T3), &pa), 1);
    assert_int_equal(pa[0].ts_ms, BASE_MS + 3000);
    assert_int_equal(pa[0].i, -7);
    free(pa);
    /* version 3 records after them, then both versions replay */
    struct head_point more[2] = {{T1, sizeof(T1), dpcodec_point_int(BASE_MS + 5000, false, 9)},
                                 {T3, sizeof(T3), dpcodec_point_real(BASE_MS + 5000, false, 2.5)}};
    append_points(l, h, more, 2);
    headlog_close(l);
    struct head *h2 = reopen(dir, &l, &r, &np);
    assert_int_equal(np, 9);
    same_series(h, h2, T1, sizeof(T1), 4);
    same_series(h, h2, T2, sizeof(T2), 3);
    same_series(h, h2, T3, sizeof(T3), 2);
    headlog_close(l);
    head_free(h2);
    head_free(h);
    ctest_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_headlog_replays_what_was_appended),
        cmocka_unit_test(test_headlog_given_series_ids_replay_as_the_logs_own),
        cmocka_unit_test(test_headlog_release_keeps_open_hours_only),
        cmocka_unit_test(test_headlog_releasable_only_what_a_release_would_drop),
        cmocka_unit_test(test_headlog_replay_hands_refused_points_back),
        cmocka_unit_test(test_headlog_torn_tail_loses_only_the_last_record),
        cmocka_unit_test(test_headlog_corrupt_record_and_mark_are_named),
        cmocka_unit_test(test_headlog_rejects_bad_points),
        cmocka_unit_test(test_headlog_delete_records_and_read_only_load),
        cmocka_unit_test(test_headlog_full_disk_is_an_error_state_that_clears),
        cmocka_unit_test(test_headlog_failed_sync_stays),
        cmocka_unit_test(test_headlog_dictionary_round_trips_across_segment_rolls),
        cmocka_unit_test(test_headlog_value_encodings_are_exact),
        cmocka_unit_test(test_headlog_late_hours_start_dictionaries_a_release_may_drop),
        cmocka_unit_test(test_headlog_torn_dictionary_record),
        cmocka_unit_test(test_headlog_undefined_ids_are_corrupt),
        cmocka_unit_test(test_headlog_version_1_log_replays),
        cmocka_unit_test(test_headlog_bytes_per_point),
        cmocka_unit_test(test_headlog_release_drops_closed_hours_segments),
        cmocka_unit_test(test_headlog_concurrent_appends_share_the_dictionary),
        cmocka_unit_test(test_headlog_failed_append_ends_the_dictionary),
        cmocka_unit_test(test_headlog_series_state_round_trips_across_records),
        cmocka_unit_test(test_headlog_released_records_rebuild_the_state),
        cmocka_unit_test(test_headlog_version_3_bytes),
        cmocka_unit_test(test_headlog_version_2_log_replays),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
