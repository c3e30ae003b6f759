/* headlog.c - the head's write-ahead log (schema/headlog.h); payload format in
 * schema/headlog_format.h.
 *
 * Invariants: (1) sequence numbers are given out under mu, strictly increasing, and above every
 * number replayed or released; (2) hours[] holds, for every hour (old ones too) with a
 * point in an appended or replayed record, the first such record's number, registered under mu
 * before that record is handed to the engine log, so a release never passes a record still
 * being written that holds an open hour; (3) the mark file's seq only grows, and is on disk before
 * any segment it allows to be deleted is deleted.
 * Locking: mu guards the fields marked so; the engine log is thread-safe on its own. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "schema/headlog.h"
#include "schema/headlog_format.h"
#include "schema/rowkey.h"
#include "storage/clock.h"
#include "storage/coding.h"
#include "storage/crc32c.h"
#include "storage/hash.h"

struct headlog_hour {
    int64_t base_s;
    uint64_t first_seq;
};

struct headlog {
    struct wal *wal;
    char *dir;
    pthread_mutex_t mu;
    /* guarded by mu */
    uint64_t next_seq;
    uint64_t released_seq;
    int64_t released_before_s;
    struct headlog_hour *hours;
    size_t nhours, hcap;
    struct headlog_stats st;
    bool replayed;
    bool read_only; /* headlog_open_read_only: replay only */
    /* the error state (headlog.h), guarded by mu; has_err mirrors err.code != CT_OK so that an
     * append checks it without the lock */
    struct ct_err err;
    bool err_transient;
    uint64_t err_since_ns, err_logged_ns, err_unlogged;
    atomic_bool has_err;
    headlog_log_fn log_fn; /* set before the log is shared */
    void *log_arg;
};

/* ---- the mark file ----------------------------------------------------------------------- */

int headlog_mark_read(const char *dir, uint64_t *seq, struct ct_err *err)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, HEADLOG_MARK_FILE);
    *seq = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return CT_OK;
        return ct_err_set(err, CT_EIO, "cannot open %s: %s", path, strerror(errno));
    }
    uint8_t b[HEADLOG_MARK_LEN + 1];
    ssize_t n = read(fd, b, sizeof(b));
    int e = errno;
    close(fd);
    if (n < 0)
        return ct_err_set(err, CT_EIO, "cannot read %s: %s", path, strerror(e));
    if (n != HEADLOG_MARK_LEN || memcmp(b, HEADLOG_MARK_MAGIC, 4) != 0)
        return ct_err_set(err, CT_ECORRUPT, "%s is not a head log mark (%zd bytes)", path, n);
    if (b[4] != HEADLOG_VERSION)
        return ct_err_set(err, CT_ECORRUPT,
                          "unsupported head log mark version %u in %s (this build reads %d)", b[4],
                          path, HEADLOG_VERSION);
    if (coding_get_be32(b + 13) != crc32c_value(b, 13))
        return ct_err_set(err, CT_ECORRUPT, "bad checksum in %s", path);
    *seq = coding_get_be64(b + 5);
    return CT_OK;
}

static int headlog_fsync_path(const char *path, int flags, struct ct_err *err)
{
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0)
        return ct_err_set(err, CT_EIO, "cannot open %s: %s", path, strerror(errno));
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc != 0)
        return ct_err_set(err, CT_EIO, "cannot fsync %s: %s", path, strerror(e));
    return CT_OK;
}

static int headlog_mark_write(const char *dir, uint64_t seq, struct ct_err *err)
{
    char path[4096], tmp[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, HEADLOG_MARK_FILE);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    uint8_t b[HEADLOG_MARK_LEN];
    memcpy(b, HEADLOG_MARK_MAGIC, 4);
    b[4] = HEADLOG_VERSION;
    coding_put_be64(b + 5, seq);
    coding_put_be32(b + 13, crc32c_value(b, 13));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return ct_err_set(err, CT_EIO, "cannot create %s: %s", tmp, strerror(errno));
    ssize_t n = write(fd, b, sizeof(b));
    int e = errno;
    if (n != (ssize_t)sizeof(b) || fsync(fd) != 0) {
        if (n == (ssize_t)sizeof(b))
            e = errno;
        close(fd);
        unlink(tmp);
        return ct_err_set(err, CT_EIO, "cannot write %s: %s", tmp,
                          n >= 0 && n != (ssize_t)sizeof(b) ? "short write" : strerror(e));
    }
    close(fd);
    if (rename(tmp, path) != 0) {
        e = errno;
        unlink(tmp);
        return ct_err_set(err, CT_EIO, "cannot rename %s: %s", tmp, strerror(e));
    }
    return headlog_fsync_path(dir, O_RDONLY | O_DIRECTORY, err);
}

/* ---- open / close ------------------------------------------------------------------------ */

static int headlog_open_mode(const char *dir, bool read_only, struct headlog **out,
                             struct ct_err *err)
{
    struct headlog *l = calloc(1, sizeof(*l));
    if (!l || !(l->dir = strdup(dir))) {
        free(l);
        return ct_err_set(err, CT_ENOMEM, "cannot allocate the head log");
    }
    pthread_mutex_init(&l->mu, NULL);
    l->read_only = read_only;
    if (!read_only && mkdir(dir, 0700) != 0 && errno != EEXIST) {
        ct_err_set(err, CT_EIO, "cannot create %s: %s", dir, strerror(errno));
        goto fail;
    }
    if (headlog_mark_read(dir, &l->released_seq, err) != CT_OK)
        goto fail;
    struct wal_options o = {.segment_bytes = HEADLOG_SEGMENT_BYTES};
    if ((read_only ? wal_open_read_only(dir, &o, &l->wal, err)
                   : wal_open_mapped(dir, &o, &l->wal, err)) != CT_OK) {
        ct_err_prefix(err, "head log");
        goto fail;
    }
    l->next_seq = l->released_seq + 1;
    l->released_before_s = INT64_MIN;
    l->st.released_seq = l->released_seq;
    *out = l;
    return CT_OK;
fail:
    pthread_mutex_destroy(&l->mu);
    free(l->dir);
    free(l);
    return err->code;
}

int headlog_open(const char *dir, struct headlog **out, struct ct_err *err)
{
    return headlog_open_mode(dir, false, out, err);
}

int headlog_open_read_only(const char *dir, struct headlog **out, struct ct_err *err)
{
    return headlog_open_mode(dir, true, out, err);
}

void headlog_close(struct headlog *l)
{
    if (!l)
        return;
    wal_close(l->wal);
    pthread_mutex_destroy(&l->mu);
    free(l->hours);
    free(l->dir);
    free(l);
}

/* Notes that record seq holds a point of hour base_s. REQUIRES: mu held. */
static int headlog_note_hour(struct headlog *l, int64_t base_s, uint64_t seq, struct ct_err *err)
{
    /* every hour is noted, those below the release mark too: a head taking backfilled points of
     * closed hours (head_set_backfill) holds them until their own hand-off; a late point's hour
     * is forgotten by the next release past it */
    for (size_t i = 0; i < l->nhours; i++)
        if (l->hours[i].base_s == base_s) {
            if (seq < l->hours[i].first_seq)
                l->hours[i].first_seq = seq;
            return CT_OK;
        }
    if (l->nhours == l->hcap) {
        size_t nc = l->hcap ? l->hcap * 2 : 8;
        struct headlog_hour *nh = realloc(l->hours, nc * sizeof(*nh));
        if (!nh)
            return ct_err_set(err, CT_ENOMEM, "cannot grow the head log's hour list");
        l->hours = nh;
        l->hcap = nc;
    }
    l->hours[l->nhours++] = (struct headlog_hour){base_s, seq};
    l->st.open_hours = l->nhours;
    return CT_OK;
}

/* ---- records ----------------------------------------------------------------------------- */

static int headlog_bad(struct ct_err *err, uint64_t seq, const char *what)
{
    return ct_err_set(err, CT_ECORRUPT, "head log record %" PRIu64 ": %s", seq, what);
}

struct headlog_replay_ctx {
    struct headlog *l;
    struct head *h;
    headlog_refused_fn fn;
    void *arg;
    uint64_t npoints;
};

/* A delete record's body [p, end): drops the hours from the head being filled. */
static int headlog_replay_delete(struct headlog_replay_ctx *c, uint64_t seq, const uint8_t *p,
                                 const uint8_t *end, struct ct_err *err)
{
    if (p >= end || p[0] == 0 || (size_t)(end - p) < 1u + p[0])
        return headlog_bad(err, seq, "truncated delete record");
    size_t tl = p[0];
    const uint8_t *ts = p + 1;
    p += 1 + tl;
    uint64_t a, b;
    size_t k = coding_get_varint64(p, end, &a);
    if (!k)
        return headlog_bad(err, seq, "bad delete range");
    p += k;
    if (!(k = coding_get_varint64(p, end, &b)) || p + k != end)
        return headlog_bad(err, seq, "bad delete range");
    return head_delete_hours(c->h, ts, tl, coding_unzigzag(a), coding_unzigzag(b), NULL, err);
}

static int headlog_replay_record(void *arg, uint64_t seq, const uint8_t *p, size_t len,
                                 struct ct_err *err)
{
    struct headlog_replay_ctx *c = arg;
    struct headlog *l = c->l;
    if (seq <= l->released_seq)
        return CT_OK; /* its points are in the store */
    if (seq >= l->next_seq)
        l->next_seq = seq + 1;
    const uint8_t *end = p + len;
    if (len >= 1 && p[0] == HEADLOG_DELETE)
        return headlog_replay_delete(c, seq, p + 1, end, err);
    if (len < 1 || p[0] != HEADLOG_VERSION)
        return len < 1 ? headlog_bad(err, seq, "empty")
                       : ct_err_set(err, CT_ECORRUPT,
                                    "head log record %" PRIu64
                                    ": unsupported version %u (this build reads %d)",
                                    seq, p[0], HEADLOG_VERSION);
    p++;
    uint64_t nseries, npoints, v;
    size_t k = coding_get_varint64(p, end, &nseries);
    if (!k || nseries > len)
        return headlog_bad(err, seq, "bad series count");
    p += k;
    const uint8_t **ts = malloc((nseries ? nseries : 1) * sizeof(*ts));
    uint8_t *tl = malloc(nseries ? nseries : 1);
    int rc = CT_OK;
    if (!ts || !tl) {
        rc = ct_err_set(err, CT_ENOMEM, "cannot replay head log record %" PRIu64, seq);
        goto out;
    }
    for (uint64_t i = 0; i < nseries; i++) {
        if (p >= end || p[0] == 0 || (size_t)(end - p) < 1u + p[0]) {
            rc = headlog_bad(err, seq, "truncated series");
            goto out;
        }
        tl[i] = p[0];
        ts[i] = p + 1;
        p += 1 + p[0];
    }
    k = coding_get_varint64(p, end, &npoints);
    if (!k) {
        rc = headlog_bad(err, seq, "bad point count");
        goto out;
    }
    p += k;
    for (uint64_t i = 0; i < npoints; i++) {
        uint64_t id, t;
        struct dpcodec_point pt = {0};
        if (!(k = coding_get_varint64(p, end, &id)) || id >= nseries) {
            rc = headlog_bad(err, seq, "bad series id");
            goto out;
        }
        p += k;
        if (!(k = coding_get_varint64(p, end, &t)) || t > (uint64_t)INT64_MAX || p + k >= end) {
            rc = headlog_bad(err, seq, "bad timestamp");
            goto out;
        }
        p += k;
        uint8_t kind = *p++;
        if ((kind >> 1) > DPCODEC_DOUBLE) {
            rc = headlog_bad(err, seq, "bad point kind");
            goto out;
        }
        pt.ts_ms = (int64_t)t;
        pt.type = (enum dpcodec_type)(kind >> 1);
        pt.ms = (kind & 1) != 0;
        if (pt.type == DPCODEC_INT) {
            if (!(k = coding_get_varint64(p, end, &v))) {
                rc = headlog_bad(err, seq, "bad integer");
                goto out;
            }
            p += k;
            pt.i = coding_unzigzag(v);
        } else {
            if (end - p < 8) {
                rc = headlog_bad(err, seq, "truncated value");
                goto out;
            }
            v = coding_get_le64(p);
            memcpy(&pt.f, &v, 8);
            p += 8;
        }
        rc = headlog_note_hour(l, rowkey_base_hour_s(pt.ts_ms / 1000), seq, err);
        if (rc != CT_OK)
            goto out;
        enum head_result res;
        rc = head_append(c->h, ts[id], tl[id], &pt, &res, err);
        if (rc == CT_OK && res != HEAD_TAKEN)
            rc = c->fn(c->arg, ts[id], tl[id], &pt, res, err);
        if (rc != CT_OK)
            goto out;
        c->npoints++;
    }
    if (p != end)
        rc = headlog_bad(err, seq, "bytes after the last point");
out:
    free(ts);
    free(tl);
    return rc;
}

int headlog_replay(struct headlog *l, struct head *h, headlog_refused_fn fn, void *arg,
                   uint64_t *npoints, struct ct_err *err)
{
    struct headlog_replay_ctx c = {.l = l, .h = h, .fn = fn, .arg = arg};
    pthread_mutex_lock(&l->mu);
    int rc = wal_replay(l->wal, headlog_replay_record, &c, err);
    l->replayed = true;
    pthread_mutex_unlock(&l->mu);
    if (rc != CT_OK)
        ct_err_prefix(err, "replay head log %s", l->dir);
    if (npoints)
        *npoints = c.npoints;
    return rc;
}

static int headlog_wal_append(struct headlog *l, uint64_t seq, const uint8_t *buf, size_t len,
                              enum wal_sync sync, struct ct_err *err);

/* The record of pts into buf (room headlog_bound()); series ids by a small probe table. */
static size_t headlog_bound(const struct head_point *pts, size_t n)
{
    size_t b = 1 + 2 * CODING_VARINT64_MAX;
    for (size_t i = 0; i < n; i++)
        b += 1 + pts[i].tlen + 3 * CODING_VARINT64_MAX + 1 + 8;
    return b;
}

int headlog_append(struct headlog *l, const struct head_point *pts, size_t n, enum wal_sync sync,
                   struct ct_err *err)
{
    return headlog_append_ids(l, pts, NULL, n, sync, err);
}

int headlog_append_ids(struct headlog *l, const struct head_point *pts, const uint32_t *given,
                       size_t n, enum wal_sync sync, struct ct_err *err)
{
    if (n == 0)
        return CT_OK;
    if (l->read_only)
        return ct_err_set(err, CT_EINVAL, "the head log %s is open read-only", l->dir);
    for (size_t i = 0; i < n; i++)
        if (pts[i].tlen == 0 || pts[i].tlen > HEAD_MAX_TSUID || pts[i].p.ts_ms < 0)
            return ct_err_set(err, CT_EINVAL, "bad point %zu for the head log (TSUID length %zu)",
                              i, pts[i].tlen);
    size_t cap = headlog_bound(pts, n), nslots = 16;
    while (!given && nslots < 2 * n)
        nslots *= 2;
    uint8_t *buf = malloc(cap);
    uint32_t *slots = given ? NULL : calloc(nslots, sizeof(*slots)); /* series id + 1 */
    uint32_t *first = malloc(n * sizeof(*first)); /* point index defining series id */
    uint32_t *ids = given ? NULL : malloc(n * sizeof(*ids));
    int rc = CT_OK;
    if (!buf || !first || (!given && (!slots || !ids))) {
        rc = ct_err_set(err, CT_ENOMEM, "cannot encode a head log record of %zu points", n);
        goto out;
    }
    uint32_t nseries = 0;
    for (size_t i = 0; given && i < n; i++) { /* the caller's ids: only their order is checked */
        if (given[i] == nseries) {
            first[nseries++] = (uint32_t)i;
        } else if (given[i] > nseries || pts[first[given[i]]].tlen != pts[i].tlen) {
            rc = ct_err_set(err, CT_EINVAL,
                            "series id %u of point %zu of a head log record is out of order "
                            "or names another TSUID length",
                            given[i], i);
            goto out;
        }
    }
    for (size_t i = 0; !given && i < n; i++) {
        size_t s = hash_bytes(pts[i].tsuid, pts[i].tlen, 0) & (nslots - 1);
        for (;; s = (s + 1) & (nslots - 1)) {
            if (!slots[s]) {
                first[nseries] = (uint32_t)i;
                slots[s] = ++nseries;
                break;
            }
            const struct head_point *o = &pts[first[slots[s] - 1]];
            if (o->tlen == pts[i].tlen && !memcmp(o->tsuid, pts[i].tsuid, o->tlen))
                break;
        }
        ids[i] = slots[s] - 1;
    }
    uint8_t *p = buf;
    *p++ = HEADLOG_VERSION;
    p += coding_put_varint64(p, nseries);
    for (uint32_t s = 0; s < nseries; s++) {
        const struct head_point *o = &pts[first[s]];
        *p++ = (uint8_t)o->tlen;
        memcpy(p, o->tsuid, o->tlen);
        p += o->tlen;
    }
    p += coding_put_varint64(p, n);
    for (size_t i = 0; i < n; i++) {
        const struct dpcodec_point *q = &pts[i].p;
        bool ms = q->ms || q->ts_ms % 1000 != 0;
        p += coding_put_varint64(p, given ? given[i] : ids[i]);
        p += coding_put_varint64(p, (uint64_t)q->ts_ms);
        *p++ = (uint8_t)((unsigned)q->type << 1 | (ms ? 1u : 0u));
        if (q->type == DPCODEC_INT) {
            p += coding_put_varint64(p, coding_zigzag(q->i));
        } else {
            uint64_t v;
            memcpy(&v, &q->f, 8);
            coding_put_le64(p, v);
            p += 8;
        }
    }
    size_t len = (size_t)(p - buf);
    pthread_mutex_lock(&l->mu);
    uint64_t seq = l->next_seq++;
    int64_t prev_h = INT64_MIN; /* a batch's points are mostly of one hour: noted once */
    for (size_t i = 0; i < n && rc == CT_OK; i++) {
        int64_t hr = rowkey_base_hour_s(pts[i].p.ts_ms / 1000);
        if (hr != prev_h)
            rc = headlog_note_hour(l, hr, seq, err);
        prev_h = hr;
    }
    pthread_mutex_unlock(&l->mu);
    if (rc == CT_OK)
        rc = headlog_wal_append(l, seq, buf, len, sync, err);
    if (rc == CT_OK) {
        pthread_mutex_lock(&l->mu);
        l->st.records++;
        l->st.points += n;
        l->st.bytes += len;
        pthread_mutex_unlock(&l->mu);
    }
out:
    free(buf);
    free(slots);
    free(first);
    free(ids);
    return rc;
}

int headlog_append_delete(struct headlog *l, const uint8_t *tsuid, size_t tlen, int64_t from_s,
                          int64_t to_s, enum wal_sync sync, struct ct_err *err)
{
    if (l->read_only)
        return ct_err_set(err, CT_EINVAL, "the head log %s is open read-only", l->dir);
    if (tlen == 0 || tlen > HEAD_MAX_TSUID)
        return ct_err_set(err, CT_EINVAL, "bad TSUID length %zu for the head log", tlen);
    uint8_t buf[2 + HEAD_MAX_TSUID + 2 * CODING_VARINT64_MAX];
    uint8_t *p = buf;
    *p++ = HEADLOG_DELETE;
    *p++ = (uint8_t)tlen;
    memcpy(p, tsuid, tlen);
    p += tlen;
    p += coding_put_varint64(p, coding_zigzag(from_s));
    p += coding_put_varint64(p, coding_zigzag(to_s));
    size_t len = (size_t)(p - buf);
    pthread_mutex_lock(&l->mu);
    uint64_t seq = l->next_seq++;
    pthread_mutex_unlock(&l->mu);
    int rc = headlog_wal_append(l, seq, buf, len, sync, err);
    if (rc == CT_OK) {
        pthread_mutex_lock(&l->mu);
        l->st.records++;
        l->st.bytes += len;
        pthread_mutex_unlock(&l->mu);
    }
    return rc;
}

/* ---- the error state (headlog.h) ----------------------------------------------------------- */

void headlog_set_log(struct headlog *l, headlog_log_fn fn, void *arg)
{
    l->log_fn = fn;
    l->log_arg = arg;
}

/* An append failed with err: counted, kept if first, reported (rate-limited). */
static void headlog_fail(struct headlog *l, const struct ct_err *err)
{
    bool recoverable = false;
    if (wal_error_state(l->wal, &recoverable) == CT_OK)
        recoverable = false; /* not the log's sticky error (e.g. out of memory): nothing lifts it */
    uint64_t now = clock_mono_ns();
    pthread_mutex_lock(&l->mu);
    l->st.errors++;
    l->err_unlogged++;
    bool first = l->err.code == CT_OK;
    if (first) {
        l->err = *err;
        if (l->err.code == CT_OK)
            l->err.code = CT_EIO;
        l->err_transient = recoverable;
        l->err_since_ns = now;
        atomic_store_explicit(&l->has_err, true, memory_order_release);
    } else if (!recoverable) {
        l->err_transient = false;
    }
    bool log = first || now - l->err_logged_ns >= (uint64_t)HEADLOG_ERR_LOG_MS * 1000000u;
    uint64_t n = l->err_unlogged;
    bool tr = l->err_transient;
    if (log) {
        l->err_logged_ns = now;
        l->err_unlogged = 0;
    }
    pthread_mutex_unlock(&l->mu);
    if (log && l->log_fn) {
        char msg[CT_ERR_MSG_MAX + 160];
        snprintf(msg, sizeof(msg),
                 "head log write error (%s%llu failure%s since the last report): %s",
                 tr ? "puts refused until an append succeeds, tried again at each put; "
                    : "puts refused until a restart; ",
                 (unsigned long long)n, n == 1 ? "" : "s", err->msg);
        l->log_fn(l->log_arg, true, msg);
    }
}

/* An append succeeded after the state was seen set: clears it (a recovery). */
static void headlog_recovered(struct headlog *l)
{
    struct ct_err old;
    pthread_mutex_lock(&l->mu);
    bool clear = l->err.code != CT_OK;
    uint64_t since = l->err_since_ns;
    if (clear) {
        old = l->err;
        ct_err_clear(&l->err);
        l->err_unlogged = 0;
        l->st.recoveries++;
        atomic_store_explicit(&l->has_err, false, memory_order_release);
    }
    pthread_mutex_unlock(&l->mu);
    if (clear && l->log_fn) {
        char msg[CT_ERR_MSG_MAX + 80];
        snprintf(msg, sizeof(msg), "head log error cleared after %llu ms, puts accepted again: %s",
                 (unsigned long long)((clock_mono_ns() - since) / 1000000u), old.msg);
        l->log_fn(l->log_arg, false, msg);
    }
}

/* wal_append() under the error state: a full disk left by an earlier append is lifted first (the
 * append tries again), a failure is recorded, a success after one clears it. */
static int headlog_wal_append(struct headlog *l, uint64_t seq, const uint8_t *buf, size_t len,
                              enum wal_sync sync, struct ct_err *err)
{
    bool had = atomic_load_explicit(&l->has_err, memory_order_acquire);
    if (had) {
        bool recoverable = false;
        struct ct_err e;
        if (wal_error_state(l->wal, &recoverable) != CT_OK && recoverable &&
            wal_clear_error(l->wal, &e) != CT_OK) {
            /* another append is extending the segment: the append below waits for it */
        }
    }
    int rc = wal_append(l->wal, seq, buf, len, sync, err);
    if (rc != CT_OK) {
        ct_err_prefix(err, "head log %s", l->dir);
        headlog_fail(l, err);
    } else if (had) {
        headlog_recovered(l);
    }
    return rc;
}

int headlog_error(struct headlog *l, struct ct_err *out)
{
    pthread_mutex_lock(&l->mu);
    *out = l->err;
    pthread_mutex_unlock(&l->mu);
    return out->code;
}

/* Replay into a read-only head: a refused point was put in the store by the writer. */
static int headlog_skip_refused(void *arg, const uint8_t *tsuid, size_t tlen,
                                const struct dpcodec_point *p, enum head_result res,
                                struct ct_err *err)
{
    (void)arg, (void)tsuid, (void)tlen, (void)p, (void)res, (void)err;
    return CT_OK;
}

int headlog_load_read_only(const char *dir, struct head **out, uint64_t *npoints,
                           struct ct_err *err)
{
    *out = NULL;
    struct headlog *l = NULL;
    struct head *h = NULL;
    uint64_t np = 0;
    int rc = headlog_open_read_only(dir, &l, err);
    if (rc == CT_OK)
        rc = head_new(&h, err);
    if (rc == CT_OK)
        rc = headlog_replay(l, h, headlog_skip_refused, NULL, &np, err);
    headlog_close(l);
    size_t ns = 0, nc = 0;
    uint64_t held = 0;
    if (rc == CT_OK)
        head_counts(h, &ns, &nc, &held);
    if (rc != CT_OK || held == 0) {
        head_free(h);
        h = NULL;
    }
    *out = h;
    if (npoints)
        *npoints = np;
    return rc;
}

int headlog_release(struct headlog *l, int64_t before_s, struct ct_err *err)
{
    if (l->read_only)
        return ct_err_set(err, CT_EINVAL, "the head log %s is open read-only", l->dir);
    pthread_mutex_lock(&l->mu);
    if (before_s > l->released_before_s)
        l->released_before_s = before_s;
    size_t w = 0;
    uint64_t upto = l->next_seq - 1;
    for (size_t i = 0; i < l->nhours; i++) {
        if (l->hours[i].base_s < before_s)
            continue;
        if (l->hours[i].first_seq - 1 < upto)
            upto = l->hours[i].first_seq - 1;
        l->hours[w++] = l->hours[i];
    }
    l->nhours = w;
    l->st.open_hours = w;
    int rc = CT_OK;
    if (upto > l->released_seq) {
        rc = headlog_mark_write(l->dir, upto, err);
        if (rc == CT_OK) {
            l->released_seq = upto;
            l->st.released_seq = upto;
        }
    }
    uint64_t rel = l->released_seq;
    pthread_mutex_unlock(&l->mu);
    if (rc == CT_OK)
        rc = wal_release_upto(l->wal, rel, err);
    return rc;
}

bool headlog_releasable(struct headlog *l, int64_t before_s)
{
    if (l->read_only)
        return false;
    pthread_mutex_lock(&l->mu);
    uint64_t last = l->next_seq - 1, upto = last;
    for (size_t i = 0; i < l->nhours; i++)
        if (l->hours[i].base_s >= before_s && l->hours[i].first_seq - 1 < upto)
            upto = l->hours[i].first_seq - 1;
    bool more = upto > l->released_seq;
    pthread_mutex_unlock(&l->mu);
    if (!more && upto == last) {
        struct wal_stats ws;
        wal_get_stats(l->wal, &ws);
        more = ws.segments > 0;
    }
    return more;
}

void headlog_get_stats(struct headlog *l, struct headlog_stats *out)
{
    uint64_t now = clock_mono_ns();
    pthread_mutex_lock(&l->mu);
    *out = l->st;
    out->error_active = l->err.code != CT_OK;
    out->error_transient = out->error_active && l->err_transient;
    out->error_age_ms = out->error_active ? (now - l->err_since_ns) / 1000000u : 0;
    pthread_mutex_unlock(&l->mu);
}
