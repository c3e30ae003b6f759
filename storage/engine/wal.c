/* wal.c - the write-ahead log: segments, group commit, background syncer, replay, release.
 * Format: wal_format.h. Contract: wal.h.
 *
 * Invariants:
 * (1) Bytes are counted in "lsn" units: appended_lsn counts every record byte ever encoded into
 *     the pending buffer; written_lsn <= appended_lsn counts bytes handed to write(2);
 *     synced_lsn <= written_lsn counts bytes known to be on stable storage. A record appended at
 *     lsn L (its end) is written once written_lsn >= L and durable once synced_lsn >= L.
 * (2) At most one leader at a time (w->leader). The leader takes the whole pending buffer,
 *     drops the lock, performs one write(2) (and at most one fdatasync) for all of it, retakes
 *     the lock, advances the lsns and wakes every waiter. Waiters that are still not covered
 *     elect the next leader among themselves: while one leader writes, everything appended in
 *     the meantime gathers in the buffer and is written by the next leader in one call.
 * (3) Records never span segments: rotation happens only between leader writes. Rotation
 *     fdatasyncs the old segment before closing it, so "synced up to lsn" holds across segments.
 * (4) The first failed write, sync or rotation is sticky (w->err_code, w->sticky): every later
 *     append, sync and the waiters of the failed batch return it.
 * (5) segs[] lists the segment files in number order; once has_active is set the last entry is
 *     the segment being appended to (set under mu when a segment is created, before the leader
 *     starts writing to it), and is never deleted by wal_release_upto().
 * (6) mmap_tail mode: appenders copy records into the active segment's MAP_SHARED mapping
 *     under mu (written_lsn == appended_lsn at all times: the bytes are in the page cache);
 *     the pending buffer stays empty and a leader only runs fdatasync. The mapping spans
 *     map_cap bytes (the segment size) but the file is only extended (fallocate) in steps of
 *     WAL_MAP_CHUNK as records need room: map_used <= map_alloc <= map_cap, and nothing at or
 *     past map_alloc is ever touched (it is past the end of the file). The background thread
 *     extends the file (fallocate) and pre-faults the new pages (MADV_POPULATE_WRITE) before
 *     appenders need them (`growing`, outside mu; nobody else grows or unmaps the segment
 *     meanwhile), so appends neither fault nor call into the kernel; in the same step it
 *     unmaps the whole pages already written ([map_dropped, map_used) rounded down: nobody
 *     touches them again through the mapping), whose contents stay in the page cache. Rotation and close cut
 *     the segment to map_used (so only the last segment of a crashed process ends in zeros;
 *     replay reads an all-zero tail as the end of a segment) and wait until no leader is
 *     syncing the descriptor they close. Appends stay under mu so that no acknowledged record
 *     can follow a torn one: a process killed mid-copy leaves at most one torn record, last.
 * (7) The active segment itself is released (closed, deleted, has_active cleared) by
 *     wal_release_upto() once every record in it is released and no write is pending or in
 *     flight; the next append opens a new segment. So a store whose edits are all flushed keeps
 *     no log bytes at all.
 * Locking: mu guards every field except those marked "leader only" (touched only by the thread
 * that holds the leader role, outside mu). cv is broadcast when a leader finishes; bg_cv wakes
 * the background syncer. */
#include "storage/engine/wal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "storage/coding.h"
#include "storage/crc32c.h"
#include "storage/engine/eio.h"
#include "storage/engine/wal_format.h"

#define WAL_ASYNC_INTERVAL_MS 1000
#define WAL_ASYNC_MAX_BUFFER  (4u << 20) /* an ASYNC appender writes itself past this */
#define WAL_DEFAULT_SEGMENT   (64u << 20)
#define WAL_MAP_CHUNK         (1u << 20) /* mmap_tail: the file grows by this much at a time */
#define WAL_MAP_AHEAD         (WAL_MAP_CHUNK / 2) /* ... in the background, when less is left */
#define WAL_PAGE              4096u
#ifndef MADV_POPULATE_WRITE /* Linux 5.14; older headers: the madvise fails, pages fault later */
#define MADV_POPULATE_WRITE 23
#endif

struct wal_segment {
    uint64_t num;
    uint64_t max_seq;
    bool max_known; /* max_seq is valid (scanned, replayed or written by us) */
};

struct wal {
    char dir[PATH_MAX];
    size_t segment_bytes;
    void (*warn_fn)(void *arg, const char *msg); /* wal_options.warn_fn; read-only */
    void *warn_arg;
    char quarantine_dir[PATH_MAX]; /* wal_set_quarantine_dir() ("" = keep no copies) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_cond_t bg_cv;
    pthread_t bg;
    bool bg_started;
    bool closing;

    struct wal_segment *segs;
    size_t nsegs;
    size_t segs_cap;
    uint64_t next_num;
    bool has_active;       /* segs[nsegs - 1] is (or is about to be) appended to */
    int active_fd;         /* leader only; -1 = no segment open for appends yet */
    uint64_t active_bytes; /* leader only */
    char active_path[PATH_MAX + 64];
    /* mmap_tail mode (invariant (6)): guarded by mu */
    bool mmap_tail;
    bool read_only; /* wal_open_read_only(): replay only; nothing under dir is changed */
    uint8_t *map;   /* MAP_SHARED mapping of the active segment, map_cap bytes */
    size_t map_cap;
    size_t map_alloc;   /* the file's length: bytes [0, map_alloc) of the mapping are backed */
    size_t map_used;    /* bytes of the segment in use (header + records) */
    size_t map_dropped; /* [0, map_dropped) is written and unmapped from this process (its
                         * pages stay in the page cache): the log does not count in the RSS */
    bool want_grow;     /* appenders ask the background thread to extend the file ahead */
    bool growing;       /* the background thread extends [map_alloc, ...) outside mu: the
                       * segment is neither grown by others nor unmapped meanwhile */

    uint8_t *buf; /* pending records */
    size_t buf_len;
    size_t buf_cap;
    uint64_t buf_max_seq;
    uint8_t *spare; /* the leader's buffer, swapped with buf */
    size_t spare_cap;

    uint64_t appended_lsn;
    uint64_t written_lsn;
    uint64_t synced_lsn;
    uint64_t sync_req_lsn; /* highest lsn an FSYNC caller or wal_sync() wants durable */
    bool leader;

    int err_code;
    struct ct_err sticky;
    /* the sticky error is a failure to create or extend a mapped segment: no record was
     * copied, nothing on disk is inconsistent, so wal_clear_error() may lift it */
    bool err_space;
    struct wal_stats stats;
};

static void wal_segment_path(const struct wal *w, uint64_t num, char *out, size_t cap)
{
    snprintf(out, cap, "%s/" WAL_SEGMENT_PREFIX "%020" PRIu64 WAL_SEGMENT_SUFFIX, w->dir, num);
}

static int wal_mkdirs(const char *dir, struct ct_err *err)
{
    char tmp[PATH_MAX];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s", dir) >= sizeof tmp)
        return ct_err_set(err, CT_EINVAL, "path too long: %s", dir);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
            return ct_err_errno(err, CT_EIO, errno, "cannot create directory %s", tmp);
        *p = '/';
    }
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
        return ct_err_errno(err, CT_EIO, errno, "cannot create directory %s", tmp);
    return CT_OK;
}

static int wal_seg_cmp(const void *a, const void *b)
{
    const struct wal_segment *x = a, *y = b;
    return x->num < y->num ? -1 : x->num > y->num;
}

static int wal_segs_push(struct wal *w, uint64_t num, struct ct_err *err)
{
    if (w->nsegs == w->segs_cap) {
        size_t cap = w->segs_cap ? w->segs_cap * 2 : 16;
        struct wal_segment *n = realloc(w->segs, cap * sizeof(*n));
        if (!n)
            return ct_err_set(err, CT_ENOMEM, "out of memory listing wal segments in %s", w->dir);
        w->segs = n;
        w->segs_cap = cap;
    }
    w->segs[w->nsegs++] = (struct wal_segment){.num = num};
    return CT_OK;
}

static int wal_list_segments(struct wal *w, struct ct_err *err)
{
    DIR *d = opendir(w->dir);
    if (!d)
        return ct_err_errno(err, CT_EIO, errno, "cannot open directory %s", w->dir);
    struct dirent *de;
    int rc = CT_OK;
    size_t plen = strlen(WAL_SEGMENT_PREFIX), slen = strlen(WAL_SEGMENT_SUFFIX);
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n != plen + 20 + slen || strncmp(de->d_name, WAL_SEGMENT_PREFIX, plen) != 0 ||
            strcmp(de->d_name + plen + 20, WAL_SEGMENT_SUFFIX) != 0)
            continue;
        uint64_t num = 0;
        bool ok = true;
        for (size_t i = plen; i < plen + 20; i++) {
            if (de->d_name[i] < '0' || de->d_name[i] > '9') {
                ok = false;
                break;
            }
            num = num * 10 + (uint64_t)(de->d_name[i] - '0');
        }
        if (!ok)
            continue;
        if ((rc = wal_segs_push(w, num, err)) != CT_OK)
            break;
    }
    closedir(d);
    if (rc != CT_OK)
        return rc;
    if (w->nsegs > 1)
        qsort(w->segs, w->nsegs, sizeof(w->segs[0]), wal_seg_cmp);
    w->next_num = w->nsegs ? w->segs[w->nsegs - 1].num + 1 : 1;
    return CT_OK;
}

static void *wal_bg_main(void *arg);

static int wal_open_mode(const char *dir, const struct wal_options *o, bool mmap_tail,
                         bool read_only, struct wal **out, struct ct_err *err)
{
    struct wal *w = calloc(1, sizeof(*w));
    if (!w)
        return ct_err_set(err, CT_ENOMEM, "out of memory opening wal %s", dir);
    if ((size_t)snprintf(w->dir, sizeof w->dir, "%s", dir) >= sizeof w->dir) {
        free(w);
        return ct_err_set(err, CT_EINVAL, "wal directory path too long: %s", dir);
    }
    w->segment_bytes = o && o->segment_bytes ? o->segment_bytes : WAL_DEFAULT_SEGMENT;
    w->warn_fn = o ? o->warn_fn : NULL;
    w->warn_arg = o ? o->warn_arg : NULL;
    w->mmap_tail = mmap_tail;
    w->active_fd = -1;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->bg_cv, &ca);
    pthread_condattr_destroy(&ca);
    w->read_only = read_only;
    struct stat dst;
    int rc = CT_OK;
    if (!read_only)
        rc = wal_mkdirs(dir, err);
    if (rc == CT_OK && (!read_only || stat(dir, &dst) == 0))
        rc = wal_list_segments(w, err);
    if (rc == CT_OK && !read_only) {
        if (pthread_create(&w->bg, NULL, wal_bg_main, w) != 0)
            rc = ct_err_set(err, CT_ENOMEM, "cannot start the wal syncer thread for %s", dir);
        else
            w->bg_started = true;
    }
    if (rc != CT_OK) {
        wal_close(w);
        return rc;
    }
    w->stats.segments = w->nsegs;
    *out = w;
    return CT_OK;
}

int wal_open(const char *dir, const struct wal_options *o, struct wal **out, struct ct_err *err)
{
    return wal_open_mode(dir, o, false, false, out, err);
}

int wal_open_read_only(const char *dir, const struct wal_options *o, struct wal **out,
                       struct ct_err *err)
{
    return wal_open_mode(dir, o, false, true, out, err);
}

int wal_open_mapped(const char *dir, const struct wal_options *o, struct wal **out,
                    struct ct_err *err)
{
    return wal_open_mode(dir, o, true, false, out, err);
}

/* ---- writing ------------------------------------------------------------------------------ */

/* Opens a new segment for appends (leader only). The old one is synced and closed first. */
static int wal_rotate(struct wal *w, struct ct_err *err)
{
    if (w->active_fd >= 0) {
        int rc = eio_sync(w->active_fd, true, w->active_path, err);
        if (rc != CT_OK)
            return rc;
        eio_close(w->active_fd);
        w->active_fd = -1;
        pthread_mutex_lock(&w->mu);
        w->stats.syncs++;
        pthread_mutex_unlock(&w->mu);
    }
    pthread_mutex_lock(&w->mu);
    uint64_t num = w->next_num++;
    pthread_mutex_unlock(&w->mu);
    char path[sizeof w->active_path];
    wal_segment_path(w, num, path, sizeof path);
    int fd = eio_open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND, 0600);
    if (fd < 0)
        return ct_err_errno(err, CT_EIO, errno, "cannot create wal segment %s", path);
    uint8_t hdr[WAL_SEGMENT_HEADER_BYTES] = {0};
    coding_put_be32(hdr, WAL_MAGIC);
    hdr[4] = WAL_VERSION;
    coding_put_be64(hdr + 8, num);
    int rc = eio_write_all(fd, hdr, sizeof hdr, path, err);
    if (rc == CT_OK)
        rc = eio_fsync_dir(w->dir, err);
    if (rc != CT_OK) {
        eio_close(fd);
        return rc;
    }
    pthread_mutex_lock(&w->mu);
    rc = wal_segs_push(w, num, err);
    if (rc == CT_OK) {
        w->has_active = true;
        w->segs[w->nsegs - 1].max_known = true;
        w->stats.segments = w->nsegs;
        w->stats.bytes_written += sizeof hdr;
    }
    pthread_mutex_unlock(&w->mu);
    if (rc != CT_OK) {
        eio_close(fd);
        return rc;
    }
    w->active_fd = fd;
    w->active_bytes = sizeof hdr;
    memcpy(w->active_path, path, sizeof path);
    return CT_OK;
}

/* Takes the leader role: writes the whole pending buffer with one write(2) and, if anyone
 * asked for it (or `want_sync`), one fdatasync. REQUIRES: w->mu held, !w->leader, no sticky
 * error. Returns with w->mu held; waiters are woken. */
static void wal_lead(struct wal *w, bool want_sync)
{
    w->leader = true;
    uint8_t *data = w->buf;
    size_t len = w->buf_len;
    size_t cap = w->buf_cap;
    uint64_t max_seq = w->buf_max_seq;
    w->buf = w->spare;
    w->buf_cap = w->spare_cap;
    w->buf_len = 0;
    w->buf_max_seq = 0;
    w->spare = NULL;
    w->spare_cap = 0;
    uint64_t end_lsn = w->appended_lsn;
    bool do_sync = want_sync || w->sync_req_lsn > w->synced_lsn;
    pthread_mutex_unlock(&w->mu);

    struct ct_err err = {0};
    int rc = CT_OK;
    bool wrote = false, synced = false;
    if (len > 0) {
        if (w->active_fd < 0 || w->active_bytes >= w->segment_bytes)
            rc = wal_rotate(w, &err);
        if (rc == CT_OK) {
            rc = eio_write_all(w->active_fd, data, len, w->active_path, &err);
            wrote = true;
        }
        if (rc == CT_OK)
            w->active_bytes += len;
    }
    if (rc == CT_OK && do_sync && w->active_fd >= 0) {
        rc = eio_sync(w->active_fd, true, w->active_path, &err);
        synced = true;
    }

    pthread_mutex_lock(&w->mu);
    if (wrote)
        w->stats.writes++;
    if (synced)
        w->stats.syncs++;
    if (rc == CT_OK) {
        if (len > 0) {
            w->stats.bytes_written += len;
            struct wal_segment *s = &w->segs[w->nsegs - 1];
            if (max_seq > s->max_seq)
                s->max_seq = max_seq;
        }
        /* max(): in mmap_tail mode appenders advance written_lsn while the leader syncs */
        if (end_lsn > w->written_lsn)
            w->written_lsn = end_lsn;
        if (do_sync && end_lsn > w->synced_lsn)
            w->synced_lsn = end_lsn;
    } else if (w->err_code == CT_OK) {
        w->err_code = rc;
        w->sticky = err;
    }
    /* give the (now empty) buffer back as the spare */
    if (w->spare == NULL) {
        w->spare = data;
        w->spare_cap = cap;
    } else {
        free(data);
    }
    w->leader = false;
    pthread_cond_broadcast(&w->cv);
}

static int wal_sticky(struct wal *w, struct ct_err *err)
{
    *err = w->sticky;
    err->code = w->err_code;
    return w->err_code;
}

/* Waits until lsn is written (and synced if `sync`), leading when nobody else does.
 * REQUIRES: w->mu held. */
static int wal_wait_lsn(struct wal *w, uint64_t lsn, bool sync, struct ct_err *err)
{
    if (sync && w->sync_req_lsn < lsn)
        w->sync_req_lsn = lsn;
    for (;;) {
        if (w->err_code != CT_OK)
            return wal_sticky(w, err);
        if (w->written_lsn >= lsn && (!sync || w->synced_lsn >= lsn))
            return CT_OK;
        if (!w->leader)
            wal_lead(w, sync);
        else
            pthread_cond_wait(&w->cv, &w->mu);
    }
}

/* mmap_tail: cuts the active segment to its used length, syncs, unmaps and closes it.
 * REQUIRES: w->mu held, no leader. */
static int wal_unmap_active(struct wal *w, struct ct_err *err)
{
    while (w->growing)
        pthread_cond_wait(&w->cv, &w->mu);
    if (w->active_fd < 0)
        return CT_OK;
    int rc = CT_OK;
    if (eio_ftruncate(w->active_fd, (off_t)w->map_used) != 0)
        rc = ct_err_errno(err, CT_EIO, errno, "cannot truncate wal segment %s to %zu bytes",
                          w->active_path, w->map_used);
    if (rc == CT_OK && (rc = eio_sync(w->active_fd, true, w->active_path, err)) == CT_OK) {
        w->stats.syncs++;
        w->synced_lsn = w->written_lsn;
    }
    munmap(w->map, w->map_cap);
    w->map = NULL;
    w->map_cap = w->map_alloc = w->map_used = w->map_dropped = 0;
    eio_close(w->active_fd);
    w->active_fd = -1;
    return rc;
}

/* mmap_tail: extends the active segment's file so that [0, upto) is backed, by at least
 * WAL_MAP_CHUNK (never past map_cap). Out of space shows up here. REQUIRES: w->mu held. */
static int wal_map_grow(struct wal *w, size_t upto, struct ct_err *err)
{
    size_t want = w->map_alloc + WAL_MAP_CHUNK;
    if (want < upto)
        want = upto;
    want = (want + WAL_PAGE - 1) / WAL_PAGE * WAL_PAGE;
    if (want > w->map_cap)
        want = w->map_cap;
    if (eio_fallocate(w->active_fd, (off_t)w->map_alloc, (off_t)(want - w->map_alloc)) != 0)
        return ct_err_errno(err, CT_EIO, errno, "cannot preallocate %zu bytes for wal segment %s",
                            want - w->map_alloc, w->active_path);
    /* one call instead of a page fault per page (an old kernel without it: faults later) */
    (void)madvise(w->map + w->map_alloc, want - w->map_alloc, MADV_POPULATE_WRITE);
    w->map_alloc = want;
    return CT_OK;
}

/* mmap_tail, background thread: extends the active segment by WAL_MAP_CHUNK ahead of the
 * appenders, outside mu (invariant (6)). A failure is left for the appender that needs the
 * room (it grows inline and reports it). REQUIRES: w->mu held; returns with it held. */
static void wal_bg_grow(struct wal *w)
{
    w->want_grow = false;
    if (!w->map || w->growing || w->err_code != CT_OK || w->map_alloc >= w->map_cap ||
        w->map_alloc - w->map_used >= WAL_MAP_AHEAD) /* an appender grew it meanwhile */
        return;
    size_t from = w->map_alloc;
    size_t to = from + WAL_MAP_CHUNK > w->map_cap ? w->map_cap : from + WAL_MAP_CHUNK;
    int fd = w->active_fd;
    uint8_t *map = w->map;
    /* whole pages behind the appenders: written, never touched again through this mapping */
    size_t drop_from = w->map_dropped, drop_to = w->map_used / WAL_PAGE * WAL_PAGE;
    w->growing = true;
    pthread_mutex_unlock(&w->mu);
    bool ok = eio_fallocate(fd, (off_t)from, (off_t)(to - from)) == 0;
    if (ok)
        (void)madvise(map + from, to - from, MADV_POPULATE_WRITE);
    /* Unmapping written pages of a MAP_SHARED file mapping keeps their contents in the page
     * cache (dirty pages stay dirty and are written back as before; kill -9 loses nothing), so
     * the log costs page cache, as with write(2), instead of ~60 bytes of RSS per datapoint
     * until its segment is released. A failure only leaves the pages mapped. */
    bool dropped =
        drop_to > drop_from && madvise(map + drop_from, drop_to - drop_from, MADV_DONTNEED) == 0;
    pthread_mutex_lock(&w->mu);
    w->growing = false;
    if (ok && w->map == map && w->map_alloc == from)
        w->map_alloc = to;
    if (dropped && w->map == map && w->map_dropped == drop_from)
        w->map_dropped = drop_to;
    pthread_cond_broadcast(&w->cv);
}

/* mmap_tail: opens a new mapped segment with room for `need` more bytes: the mapping spans the
 * whole segment, the file is extended in WAL_MAP_CHUNK steps (wal_map_grow).
 * REQUIRES: w->mu held, no leader. */
static int wal_map_new(struct wal *w, size_t need, struct ct_err *err)
{
    int rc = wal_unmap_active(w, err);
    if (rc != CT_OK)
        return rc;
    uint64_t num = w->next_num++;
    char path[sizeof w->active_path];
    wal_segment_path(w, num, path, sizeof path);
    size_t cap = w->segment_bytes;
    if (cap < WAL_SEGMENT_HEADER_BYTES + need)
        cap = WAL_SEGMENT_HEADER_BYTES + need;
    cap = (cap + WAL_PAGE - 1) / WAL_PAGE * WAL_PAGE;
    int fd = eio_open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        return ct_err_errno(err, CT_EIO, errno, "cannot create wal segment %s", path);
    /* a mapping may extend past the end of the file; only backed pages are touched */
    uint8_t *map = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        rc = ct_err_errno(err, CT_EIO, errno, "cannot map wal segment %s", path);
    } else {
        w->active_fd = fd;
        memcpy(w->active_path, path, sizeof path);
        w->map = map;
        w->map_cap = cap;
        w->map_alloc = 0;
        w->map_used = 0;
        w->map_dropped = 0;
        rc = wal_map_grow(w, WAL_SEGMENT_HEADER_BYTES + need, err);
    }
    if (rc == CT_OK) {
        coding_put_be32(map, WAL_MAGIC);
        map[4] = WAL_VERSION;
        map[5] = map[6] = map[7] = 0;
        coding_put_be64(map + 8, num);
        rc = eio_fsync_dir(w->dir, err);
    }
    if (rc == CT_OK)
        rc = wal_segs_push(w, num, err);
    if (rc != CT_OK) {
        if (map != MAP_FAILED)
            munmap(map, cap);
        eio_close(fd);
        w->active_fd = -1;
        w->map = NULL;
        w->map_cap = w->map_alloc = w->map_used = w->map_dropped = 0;
        if (eio_unlink(path) != 0) { /* best effort: an empty segment replays as nothing */
        }
        if (w->next_num == num + 1)
            w->next_num = num; /* reused by the next try: no gap in the numbers */
        return rc;
    }
    w->has_active = true;
    w->segs[w->nsegs - 1].max_known = true;
    w->stats.segments = w->nsegs;
    w->stats.bytes_written += WAL_SEGMENT_HEADER_BYTES;
    w->map_used = WAL_SEGMENT_HEADER_BYTES;
    w->active_bytes = WAL_SEGMENT_HEADER_BYTES;
    return CT_OK;
}

static int wal_append_mapped(struct wal *w, uint64_t seq, const void *payload, size_t len,
                             enum wal_sync sync, struct ct_err *err)
{
    size_t need = WAL_RECORD_HEADER_BYTES + len;
    pthread_mutex_lock(&w->mu);
    int rc = CT_OK;
    if (w->err_code != CT_OK)
        goto sticky;
    for (;;) {
        if (w->err_code != CT_OK)
            goto sticky;
        bool rotate =
            w->active_fd < 0 || w->map_used + need > w->map_cap || w->map_used >= w->segment_bytes;
        bool grow = !rotate && w->map_used + need > w->map_alloc;
        if ((rotate && w->leader) || ((rotate || grow) && w->growing)) {
            pthread_cond_wait(&w->cv, &w->mu); /* a sync or a background extension */
            continue;
        }
        if (rotate) {
            if ((rc = wal_map_new(w, need, &w->sticky)) != CT_OK) {
                w->err_code = rc;
                w->err_space = true;
                goto sticky;
            }
            continue;
        }
        if (grow && (rc = wal_map_grow(w, w->map_used + need, &w->sticky)) != CT_OK) {
            w->err_code = rc;
            w->err_space = true;
            goto sticky;
        }
        break;
    }
    uint8_t *p = w->map + w->map_used;
    coding_put_be32(p + 4, (uint32_t)len);
    coding_put_be64(p + 8, seq);
    if (len)
        memcpy(p + WAL_RECORD_HEADER_BYTES, payload, len);
    coding_put_be32(p, crc32c_mask(crc32c_value(p + 4, need - 4)));
    w->map_used += need;
    w->active_bytes = w->map_used;
    struct wal_segment *s = &w->segs[w->nsegs - 1];
    if (seq > s->max_seq)
        s->max_seq = seq;
    w->appended_lsn += need;
    w->written_lsn = w->appended_lsn;
    w->stats.appends++;
    w->stats.bytes_written += need;
    if (w->map_alloc - w->map_used < WAL_MAP_AHEAD && w->map_alloc < w->map_cap && !w->growing &&
        !w->want_grow) {
        w->want_grow = true;
        pthread_cond_signal(&w->bg_cv);
    }
    if (sync == WAL_SYNC_FSYNC)
        rc = wal_wait_lsn(w, w->appended_lsn, true, err);
    pthread_mutex_unlock(&w->mu);
    return rc;
sticky:
    rc = wal_sticky(w, err);
    pthread_mutex_unlock(&w->mu);
    return rc;
}

int wal_append(struct wal *w, uint64_t seq, const void *payload, size_t len, enum wal_sync sync,
               struct ct_err *err)
{
    if (len > WAL_MAX_RECORD_BYTES)
        return ct_err_set(err, CT_ELIMIT, "wal record of %zu bytes exceeds the limit of %u", len,
                          WAL_MAX_RECORD_BYTES);
    if (w->read_only)
        return ct_err_set(err, CT_EUNSUPPORTED, "wal %s is open read-only", w->dir);
    if (w->mmap_tail)
        return wal_append_mapped(w, seq, payload, len, sync, err);
    size_t need = WAL_RECORD_HEADER_BYTES + len;
    pthread_mutex_lock(&w->mu);
    if (w->err_code != CT_OK) {
        int rc = wal_sticky(w, err);
        pthread_mutex_unlock(&w->mu);
        return rc;
    }
    if (w->buf_len + need > w->buf_cap) {
        size_t cap = w->buf_cap ? w->buf_cap : 64 * 1024;
        while (cap < w->buf_len + need)
            cap *= 2;
        uint8_t *nb = realloc(w->buf, cap);
        if (!nb) {
            pthread_mutex_unlock(&w->mu);
            return ct_err_set(err, CT_ENOMEM, "out of memory buffering a wal record in %s", w->dir);
        }
        w->buf = nb;
        w->buf_cap = cap;
    }
    uint8_t *p = w->buf + w->buf_len;
    coding_put_be32(p + 4, (uint32_t)len);
    coding_put_be64(p + 8, seq);
    if (len)
        memcpy(p + WAL_RECORD_HEADER_BYTES, payload, len);
    coding_put_be32(p, crc32c_mask(crc32c_value(p + 4, need - 4)));
    w->buf_len += need;
    if (seq > w->buf_max_seq)
        w->buf_max_seq = seq;
    w->appended_lsn += need;
    w->stats.appends++;
    uint64_t my_lsn = w->appended_lsn;
    int rc = CT_OK;
    if (sync == WAL_SYNC_ASYNC) {
        if (w->buf_len >= WAL_ASYNC_MAX_BUFFER && !w->leader) {
            wal_lead(w, false);
            if (w->err_code != CT_OK)
                rc = wal_sticky(w, err);
        }
    } else {
        rc = wal_wait_lsn(w, my_lsn, sync == WAL_SYNC_FSYNC, err);
    }
    pthread_mutex_unlock(&w->mu);
    return rc;
}

int wal_sync(struct wal *w, struct ct_err *err)
{
    pthread_mutex_lock(&w->mu);
    int rc = wal_wait_lsn(w, w->appended_lsn, true, err);
    pthread_mutex_unlock(&w->mu);
    return rc;
}

static void *wal_bg_main(void *arg)
{
    pthread_setname_np(pthread_self(), "ct-wal-sync");
    struct wal *w = arg;
    pthread_mutex_lock(&w->mu);
    struct timespec next_sync;
    clock_gettime(CLOCK_MONOTONIC, &next_sync);
    next_sync.tv_sec += WAL_ASYNC_INTERVAL_MS / 1000;
    while (!w->closing) {
        if (!w->want_grow)
            pthread_cond_timedwait(&w->bg_cv, &w->mu, &next_sync);
        if (w->closing)
            break;
        if (w->want_grow)
            wal_bg_grow(w);
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec < next_sync.tv_sec ||
            (now.tv_sec == next_sync.tv_sec && now.tv_nsec < next_sync.tv_nsec))
            continue; /* woken to grow the segment: the sync is not due yet */
        next_sync = now;
        next_sync.tv_sec += WAL_ASYNC_INTERVAL_MS / 1000;
        if (w->err_code == CT_OK && !w->leader &&
            (w->buf_len > 0 || w->synced_lsn < w->written_lsn))
            wal_lead(w, true);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

void wal_close(struct wal *w)
{
    if (!w)
        return;
    if (w->bg_started) {
        pthread_mutex_lock(&w->mu);
        w->closing = true;
        pthread_cond_signal(&w->bg_cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->bg, NULL);
        struct ct_err err = {0};
        pthread_mutex_lock(&w->mu);
        if (w->err_code == CT_OK &&
            wal_wait_lsn(w, w->appended_lsn, w->appended_lsn > 0, &err) != CT_OK) {
            /* sticky error: the buffered tail is lost; the caller saw or will see it */
        }
        if (w->mmap_tail && wal_unmap_active(w, &err) != CT_OK) {
            /* the segment keeps its preallocated zero tail: replay cuts it */
        }
        pthread_mutex_unlock(&w->mu);
    }
    if (w->map)
        munmap(w->map, w->map_cap);
    if (w->active_fd >= 0)
        eio_close(w->active_fd);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    pthread_cond_destroy(&w->bg_cv);
    free(w->buf);
    free(w->spare);
    free(w->segs);
    free(w);
}

void wal_get_stats(struct wal *w, struct wal_stats *out)
{
    pthread_mutex_lock(&w->mu);
    *out = w->stats;
    pthread_mutex_unlock(&w->mu);
}

/* ---- reading ------------------------------------------------------------------------------ */

/* Whether bytes [off, size) of the file are all zeros (a preallocated, never-written tail of a
 * mapped segment). A read error counts as "not zeros". */
static bool wal_tail_is_zero(int fd, uint64_t off, uint64_t size)
{
    uint8_t buf[4096];
    for (uint64_t at = off; at < size;) {
        size_t n = size - at < sizeof buf ? (size_t)(size - at) : sizeof buf;
        ssize_t got = pread(fd, buf, n, (off_t)at);
        if (got <= 0)
            return false;
        for (ssize_t i = 0; i < got; i++)
            if (buf[i])
                return false;
        at += (uint64_t)got;
    }
    return true;
}

/* Whether a whole record with a valid checksum starts anywhere after `off` in the segment: then
 * the bad record at `off` is not a torn tail (a killed process leaves at most one torn record,
 * last: invariant (6)) but damage with records behind it. Reads [off, size) (a damaged path
 * only, at most one segment). A read or allocation failure counts as "none follow". */
static bool wal_records_follow(int fd, uint64_t off, uint64_t size)
{
    size_t n = (size_t)(size - off);
    uint8_t *b = n > WAL_RECORD_HEADER_BYTES ? malloc(n) : NULL;
    if (!b || pread(fd, b, n, (off_t)off) != (ssize_t)n) {
        free(b);
        return false;
    }
    bool found = false;
    for (size_t p = 1; p + WAL_RECORD_HEADER_BYTES <= n && !found; p++) {
        uint32_t len = coding_get_be32(b + p + 4);
        if (len > n - p - WAL_RECORD_HEADER_BYTES || coding_get_be64(b + p + 8) == 0)
            continue;
        uint32_t crc = crc32c_extend(crc32c_value(b + p + 4, WAL_RECORD_HEADER_BYTES - 4),
                                     b + p + WAL_RECORD_HEADER_BYTES, len);
        found = crc32c_mask(crc) == coding_get_be32(b + p);
    }
    free(b);
    return found;
}

void wal_set_quarantine_dir(struct wal *w, const char *dir)
{
    snprintf(w->quarantine_dir, sizeof w->quarantine_dir, "%s", dir ? dir : "");
}

/* Copies the segment as it is to wal_set_quarantine_dir()'s folder (the store: <data>/quarantine)
 * before its damaged tail is cut, so that records behind the damage are not destroyed unseen.
 * Writes the copy's path into qpath (empty on failure or without a quarantine folder). */
static void wal_keep_damaged(struct wal *w, const char *path, int fd, uint64_t size, char *qpath,
                             size_t cap)
{
    qpath[0] = 0;
    const char *qdir = w->quarantine_dir;
    if (!qdir[0] || (mkdir(qdir, 0700) != 0 && errno != EEXIST))
        return;
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    snprintf(qpath, cap, "%s/%s", qdir, base);
    int out = eio_open(qpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    bool ok = out >= 0;
    uint8_t buf[65536];
    for (uint64_t at = 0; ok && at < size;) {
        size_t k = size - at < sizeof buf ? (size_t)(size - at) : sizeof buf;
        ok = pread(fd, buf, k, (off_t)at) == (ssize_t)k && eio_write(out, buf, k) == (ssize_t)k;
        at += k;
    }
    if (ok)
        ok = eio_fsync(out) == 0;
    if (out >= 0)
        eio_close(out);
    if (!ok)
        qpath[0] = 0;
}

/* Tells the owner (wal_options.warn_fn) that [off, size) of the last segment is cut off (the
 * caller has checked those bytes are not all zeros). A tail that held data may have held
 * acknowledged records if the file was damaged, so it must be visible; `kept` names the copy
 * wal_keep_damaged() made when records followed the damage. */
static void wal_warn_dropped_tail(struct wal *w, const char *path, uint64_t off, uint64_t size,
                                  const char *why, const char *kept)
{
    if (!w->warn_fn || off >= size)
        return;
    char msg[3 * PATH_MAX + 512];
    snprintf(msg, sizeof msg,
             "wal segment %s: cut off %llu bytes after the last complete record at offset %llu "
             "(%s)%s%s%s",
             path, (unsigned long long)(size - off), (unsigned long long)off, why,
             kept ? "; records with valid checksums follow the damage: the segment as it was is "
                    "kept in "
                  : "",
             kept ? kept : "", kept ? " (see ctsdb fsck)" : "");
    w->warn_fn(w->warn_arg, msg);
}

/* Reads segment segs[idx] record by record, calling fn (NULL: only computes max_seq). When
 * `is_last`, a torn or corrupt tail is truncated away; otherwise it is CT_ECORRUPT. */
static int wal_scan_segment(struct wal *w, size_t idx, bool is_last, wal_replay_fn fn, void *arg,
                            struct ct_err *err)
{
    char path[PATH_MAX + 64];
    wal_segment_path(w, w->segs[idx].num, path, sizeof path);
    int fd = eio_open(path, is_last && !w->read_only ? O_RDWR : O_RDONLY, 0);
    if (fd < 0)
        return ct_err_errno(err, CT_EIO, errno, "cannot open wal segment %s", path);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        eio_close(fd);
        return ct_err_errno(err, CT_EIO, e, "cannot stat wal segment %s", path);
    }
    uint64_t size = (uint64_t)st.st_size;
    uint8_t *buf = NULL;
    size_t cap = 0;
    int rc = CT_OK;
    uint64_t off = 0, max_seq = 0;
    const char *why = NULL;
    uint8_t hdr[WAL_SEGMENT_HEADER_BYTES];
    if (size < WAL_SEGMENT_HEADER_BYTES) {
        why = "truncated segment header";
        goto bad;
    }
    if ((rc = eio_pread_all(fd, hdr, sizeof hdr, 0, path, err)) != CT_OK)
        goto out;
    if (coding_get_be32(hdr) != WAL_MAGIC) {
        if (wal_tail_is_zero(fd, 0, size)) { /* created and extended, header never stored */
            why = "empty segment";
            goto bad;
        }
        rc = ct_err_set(err, CT_ECORRUPT, "%s is not a wal segment (bad magic)", path);
        goto out;
    }
    if (hdr[4] != WAL_VERSION) {
        rc = ct_err_set(err, CT_ECORRUPT, "unsupported wal version %u in %s (this build reads %u)",
                        hdr[4], path, WAL_VERSION);
        goto out;
    }
    off = WAL_SEGMENT_HEADER_BYTES;
    while (off < size) {
        uint8_t rh[WAL_RECORD_HEADER_BYTES];
        if (size - off < WAL_RECORD_HEADER_BYTES) {
            why = "truncated record header";
            goto bad;
        }
        if ((rc = eio_pread_all(fd, rh, sizeof rh, off, path, err)) != CT_OK)
            goto out;
        uint32_t len = coding_get_be32(rh + 4);
        if (len > WAL_MAX_RECORD_BYTES || len > size - off - WAL_RECORD_HEADER_BYTES) {
            why = "truncated record or bad length";
            goto bad;
        }
        if (len > cap) {
            size_t ncap = cap ? cap : 65536;
            while (ncap < len)
                ncap *= 2;
            uint8_t *nb = realloc(buf, ncap);
            if (!nb) {
                rc = ct_err_set(err, CT_ENOMEM, "out of memory replaying %s", path);
                goto out;
            }
            buf = nb;
            cap = ncap;
        }
        if (len &&
            (rc = eio_pread_all(fd, buf, len, off + WAL_RECORD_HEADER_BYTES, path, err)) != CT_OK)
            goto out;
        uint32_t crc = crc32c_extend(crc32c_value(rh + 4, WAL_RECORD_HEADER_BYTES - 4), buf, len);
        if (crc32c_mask(crc) != coding_get_be32(rh)) {
            why = "checksum mismatch";
            goto bad;
        }
        uint64_t seq = coding_get_be64(rh + 8);
        if (seq > max_seq)
            max_seq = seq;
        if (fn && (rc = fn(arg, seq, buf, len, err)) != CT_OK)
            goto out;
        off += WAL_RECORD_HEADER_BYTES + len;
    }
    goto done;
bad:
    if (wal_tail_is_zero(fd, off, size)) {
        /* the zero-filled preallocated tail of a mapped segment: the end of its records, in
         * any segment (only the last one can have it, but a zero tail is never corruption) */
        if (!is_last || off == size)
            goto done;
        why = NULL;
    } else if (!is_last) {
        rc = ct_err_set(err, CT_ECORRUPT, "corrupt wal segment %s at offset %llu: %s", path,
                        (unsigned long long)off, why);
        goto out;
    }
    /* a torn (or zero) tail of the last segment: what a crash mid-write leaves; cut it off
     * (damage with records behind it too, as RocksDB's point-in-time recovery does, after
     * keeping a copy of the segment) */
    if (w->read_only)
        goto done; /* the records before the tail are replayed; the file stays as it is */
    if (why) {
        char kept[2 * PATH_MAX + 128];
        kept[0] = 0;
        if (wal_records_follow(fd, off, size))
            wal_keep_damaged(w, path, fd, size, kept, sizeof kept);
        wal_warn_dropped_tail(w, path, off, size, why, kept[0] ? kept : NULL);
    }
    if (eio_ftruncate(fd, (off_t)off) != 0) {
        rc = ct_err_errno(err, CT_EIO, errno, "cannot truncate the torn tail of %s at %llu", path,
                          (unsigned long long)off);
        goto out;
    }
    if ((rc = eio_sync(fd, true, path, err)) != CT_OK)
        goto out;
done:
    w->segs[idx].max_seq = max_seq;
    w->segs[idx].max_known = true;
out:
    free(buf);
    eio_close(fd);
    return rc;
}

int wal_replay(struct wal *w, wal_replay_fn fn, void *arg, struct ct_err *err)
{
    pthread_mutex_lock(&w->mu);
    size_t n = w->nsegs;
    bool fresh = !w->has_active && w->appended_lsn == 0;
    pthread_mutex_unlock(&w->mu);
    if (!fresh)
        return ct_err_set(err, CT_EINVAL, "wal_replay on %s after the first append", w->dir);
    for (size_t i = 0; i < n; i++) {
        int rc = wal_scan_segment(w, i, i + 1 == n, fn, arg, err);
        if (rc != CT_OK)
            return rc;
    }
    return CT_OK;
}

int wal_clear_error(struct wal *w, struct ct_err *err)
{
    pthread_mutex_lock(&w->mu);
    int rc = CT_OK;
    if (w->err_code != CT_OK) {
        if (w->err_space && !w->leader && !w->growing) {
            w->err_code = CT_OK;
            w->err_space = false;
            ct_err_clear(&w->sticky);
        } else {
            rc = wal_sticky(w, err);
        }
    }
    pthread_mutex_unlock(&w->mu);
    return rc;
}

int wal_error_state(struct wal *w, bool *recoverable)
{
    pthread_mutex_lock(&w->mu);
    int rc = w->err_code;
    *recoverable = rc != CT_OK && w->err_space;
    pthread_mutex_unlock(&w->mu);
    return rc;
}

void wal_set_next_num(struct wal *w, uint64_t num)
{
    pthread_mutex_lock(&w->mu);
    if (!w->has_active && num > w->next_num)
        w->next_num = num;
    pthread_mutex_unlock(&w->mu);
}

uint64_t wal_next_num(struct wal *w)
{
    pthread_mutex_lock(&w->mu);
    uint64_t n = w->next_num;
    pthread_mutex_unlock(&w->mu);
    return n;
}

uint64_t wal_oldest_needed(struct wal *w, uint64_t seq)
{
    pthread_mutex_lock(&w->mu);
    uint64_t num = w->next_num;
    for (size_t i = 0; i < w->nsegs; i++) {
        struct wal_segment *s = &w->segs[i];
        bool active = w->has_active && i + 1 == w->nsegs;
        if (!s->max_known && !active) {
            struct ct_err e;
            if (wal_scan_segment(w, i, i + 1 == w->nsegs, NULL, NULL, &e) != CT_OK) {
                num = s->num; /* unreadable: counted as needed */
                break;
            }
        }
        if (!s->max_known || s->max_seq > seq) {
            num = s->num;
            break;
        }
    }
    pthread_mutex_unlock(&w->mu);
    return num;
}

int wal_release_upto(struct wal *w, uint64_t seq, struct ct_err *err)
{
    return wal_release_before(w, seq, UINT64_MAX, err);
}

int wal_release_before(struct wal *w, uint64_t seq, uint64_t below_num, struct ct_err *err)
{
    pthread_mutex_lock(&w->mu);
    size_t limit = w->has_active ? w->nsegs - 1 : w->nsegs;
    for (size_t j = 0; j < limit; j++)
        if (w->segs[j].num >= below_num) {
            limit = j;
            break;
        }
    size_t keep = 0;
    int rc = CT_OK;
    size_t i;
    for (i = 0; i < limit; i++) {
        struct wal_segment *s = &w->segs[i];
        if (!s->max_known) {
            /* never replayed: learn its newest seq (a torn last segment counts as complete) */
            rc = wal_scan_segment(w, i, i + 1 == limit && !w->has_active, NULL, NULL, err);
            if (rc != CT_OK)
                break;
        }
        if (s->max_seq > seq)
            break; /* segments are deleted oldest first, never leaving a gap */
        char path[PATH_MAX + 64];
        wal_segment_path(w, s->num, path, sizeof path);
        if (eio_unlink(path) != 0 && errno != ENOENT) {
            rc = ct_err_errno(err, CT_EIO, errno, "cannot remove wal segment %s", path);
            break;
        }
    }
    /* invariant (7): the active segment goes too once all of it is released and nothing is
     * pending (write(2) mode: no leader writing, nothing buffered; mmap_tail: appends happen
     * under mu). Without a leader, mu protects the fields a leader would use. */
    if (rc == CT_OK && i == limit && w->has_active && i < w->nsegs && w->segs[i].num < below_num &&
        !w->leader && !w->growing && w->buf_len == 0 && w->err_code == CT_OK &&
        w->segs[i].max_seq <= seq) {
        if (w->map) {
            munmap(w->map, w->map_cap);
            w->map = NULL;
            w->map_cap = w->map_alloc = w->map_used = w->map_dropped = 0;
        }
        if (w->active_fd >= 0)
            eio_close(w->active_fd);
        w->active_fd = -1;
        w->active_bytes = 0;
        w->has_active = false;
        if (w->synced_lsn < w->written_lsn) /* its records are released: nothing to sync */
            w->synced_lsn = w->written_lsn;
        char path[PATH_MAX + 64];
        wal_segment_path(w, w->segs[i].num, path, sizeof path);
        if (eio_unlink(path) != 0 && errno != ENOENT) /* stays listed: retried next time */
            rc = ct_err_errno(err, CT_EIO, errno, "cannot remove wal segment %s", path);
        else
            i++;
    }
    keep = w->nsegs - i;
    if (i > 0 && keep > 0)
        memmove(w->segs, w->segs + i, keep * sizeof(w->segs[0]));
    w->nsegs = keep;
    w->stats.segments = keep;
    pthread_mutex_unlock(&w->mu);
    return rc;
}
