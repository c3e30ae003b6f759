/* store.c - the TSD's storage side (tsd/store.h): opens the wide-column store and the OpenTSDB
 * layout on it (schema/tsdb.h) from the configuration, and is the ingest write function: each
 * group of queued batches becomes one schema batch written with one wc_mutate_batch() at the
 * configured WAL durability (tsd.storage.wal.durability, default sync: in the log before the call
 * returns). Used by the daemon and by `ctsdb import`.
 *
 * Series cache: resolving a series (metric and tags -> TSUID) costs 2n+1 UID lookups, so each
 * writer keeps a map from the point's series key ("metric\0k\0v\0...", as the client sent it) to
 * its TSUID. The key's hash comes with the point (computed by the producer), so the writer
 * thread, the pipeline's bottleneck, only probes: open addressing, each slot holding the upper
 * half of the hash and the offset of an arena entry (header, key, TSUID together), and the slot
 * and entry of points a few places ahead are prefetched, so a hit costs no cache-miss wait.
 * An entry also keeps what is a function of the series alone, computed once when it is added:
 * the salt bucket of its row keys (a hash of the whole TSUID), and the series' head ref
 * (schema/head.h), so a point of a cached series costs one hash lookup (this map's), not a
 * second in the head: the head checks the ref under its lock and looks up a stale one.
 * Invariants: (1) the map is bounded (STORE_CACHE_MAX entries, and with
 * tsd.storage.series_cache_bytes its slots and arena together within those bytes; past either it
 * is emptied), its memory allocated in blocks that are reused, so writing a point never
 * allocates once warm;
 * (2) a writer state is used by one writer thread at a time (taken from a locked free stack);
 * (3) `dropcaches` bumps drop_gen and every writer empties its map before its next batch;
 * (4) newest-hour index (schema/meta.h): an entry remembers the newest hour this writer put in the
 * index for its series, so a series costs one index cell per hour, written after the write's
 * points and before they are acknowledged; a failed write empties the map (its hours may have
 * been moved on for points that were not written);
 * (5) under tsd.storage.head.max_bytes, a write that begins with the head at or over it takes no
 * new series into the head (store_admit_series);
 * (6) an entry's head ref is written back (store_head_write) only when the cache was not emptied
 * since the write began (stage_clears), since staged points name entries by arena offset; its
 * record id (hid) counts only while hseq is the current write's seq. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "schema/meta.h"
#include "schema/tagidx.h"
#include "schema/head.h"
#include "schema/headlog.h"
#include "schema/meta.h"
#include "schema/rowkey.h"
#include "schema/tsdb.h"
#include "schema/uid.h"
#include "storage/clock.h"
#include "storage/wc.h"
#include "tsd/conf.h"
#include "tsd/ingest.h"
#include "tsd/metatrack.h"
#include "tsd/store.h"
#include "tsd/tlog.h"
#include "tsd/tstats.h"

/* Series a writer's cache holds at most with no byte bound (about 170 bytes each at 100-byte
 * series keys). A cache smaller than the series written in one interval is emptied over and over
 * and then hits nothing: every point costs its series' UID lookups, tag index and newest-hour
 * index writes again (at 262,144, a second point of 400,000 series cost as much as the first). */
#define STORE_CACHE_MAX   (1u << 21)
#define STORE_MAX_WRITERS 64

/* One cached series in the arena: this header, the key, then the TSUID, padded to 8 bytes, so a
 * hit reads one slot and one run of bytes. */
struct store_entry {
    uint64_t hash;
    uint32_t key_len;
    uint32_t hour; /* the newest base hour (s) this writer put in the newest-hour index */
    uint32_t seq;  /* the writer's write that last listed it in touch (meta tracking) ... */
    uint32_t slot; /* ... at this index */
    uint32_t salt; /* the series' salt bucket (rowkey_salt_bucket), hashed once per series */
    struct head_ref href; /* where the head holds the series (schema/head.h), {0, 0}: unknown */
    uint32_t hseq;        /* the writer's write that last staged it for the head ... */
    uint32_t hid;         /* ... as this series id of its head log record */
    uint16_t tsuid_len;
};

#define STORE_SLOT_TAG(h) ((h)&0xFFFFFFFF00000000ULL) /* the hash's upper half */

struct store_cache {
    uint64_t *slots; /* 0 = empty, else STORE_SLOT_TAG(hash) | (arena offset / 8 + 1) */
    size_t nslots;   /* a power of two, at least twice n */
    size_t n;
    uint8_t *arena;
    size_t used, arena_cap;
    uint64_t gen;
    uint64_t clears;  /* times emptied: arena offsets taken before a clear name other entries */
    size_t max_bytes; /* slots + arena at most this (tsd.storage.series_cache_bytes); 0 = any */
    _Atomic size_t held; /* slots + arena allocated (read by /api/stats) */
};

/* A series of the write being built whose indexes (written before its points) or tracked meta
 * (after them) it touches: its TSUID at off in the writer's touch_bytes. */
struct store_touch {
    size_t off, len;
    int64_t hour_s;  /* the newest-hour index entry to write, 0 = none */
    uint64_t points; /* its points in this write (counted when meta tracking is on) */
    bool fresh;      /* the series was not in the writer's cache */
};

struct store_writer {
    struct tsdb_batch *batch;
    struct store_cache cache;
    /* the series of the write being built whose indexes or meta it touches: those whose
     * newest-hour index entry moves on or that are new to the writer, and with meta tracking
     * every series written */
    struct store_touch *touch;
    size_t ntouch, touch_cap;
    uint8_t *touch_bytes;
    size_t touch_used, touch_bytes_cap;
    _Atomic size_t touch_held; /* touch + touch_bytes allocated (read by /api/stats) */
    uint32_t seq; /* the write's number, for store_entry.seq */
    struct store_writer *next;
    /* the head's points of this write (tsuid holds an offset into tsb until store_head_write),
     * with hpcap of each: hrefs, the head refs of their series (head_append_batch's refs), and
     * hent, their cache entries (arena offset / 8 + 1, 0 = none) to keep the refs it returns,
     * valid while the cache's clears is stage_clears; hid, their series ids in the head log's
     * record (headlog_append_ids), hnser of them, the first point of id i at hfirst[i] (a
     * series' TSUID is staged once per write: its points share the bytes) */
    struct head_point *hp;
    struct head_ref *hrefs;
    uint32_t *hent, *hid, *hfirst;
    uint32_t hnser;
    uint64_t stage_clears;
    size_t hpn, hpcap;
    uint8_t *tsb;
    size_t tsbn, tsbcap;
    enum head_result *hres; /* head_append_batch's results, hrescap of them */
    size_t hrescap;
};

struct tsdstore {
    struct wc_store *store;
    struct tsdb *tsdb;
    pthread_mutex_t mu;
    struct store_writer *free_writers;
    struct store_writer *all[STORE_MAX_WRITERS];
    int nall;
    _Atomic uint64_t drop_gen;
    int64_t request_ms; /* a request's deadline on a remote backend (wc_request_deadline); 0 = none */
    enum wc_durability durability;
    struct metatrack *track; /* realtime meta tracking of series, NULL when off */
    /* the ingest head (tsd.storage.head.enable; NULL when off) */
    struct head *head;
    struct headlog *hlog;
    size_t series_cache_bytes; /* each writer's series cache (tsd.storage.series_cache_bytes) */
    uint64_t mem_limit;        /* tsd.core.memory_limit_bytes (0 = none), for /api/stats */
    uint64_t head_bound; /* tsd.storage.head.max_bytes: new series refused past it (0 = none) */
    _Atomic uint64_t series_refused; /* points refused by store_admit_series */
    pthread_mutex_t handoff_mu; /* one hand-off at a time */
    /* backfill (tsd.storage.head.backfill_idle_ms > 0): the head takes points of closed hours
     * (head_set_backfill); their chunks go when idle that long, for room (store_room_hour, with
     * room_x, guarded by the head's lock that the room function runs under), under memory
     * pressure and at a clean stop */
    bool backfill;
    int64_t bf_idle_ms;
    struct store_handoff_ctx *room_x;
    _Atomic uint64_t room_unreleased; /* room hand-offs since the last release */
    /* appends to the head log + head (read side, store_head_write) against the release's
     * computation (write side, store_handoff): a release sees every logged point in the head
     * (or refused), so it keeps the records of every chunk the head holds */
    pthread_rwlock_t append_rw;
    _Atomic int64_t handoff_checked_s;
    /* the hand-off ticker (store_ticker_main): checks once a second, so that hours close and
     * the head's log is released while no write comes; tick_mu guards tick_stop */
    pthread_t ticker;
    bool ticker_started;
    bool tick_stop;
    bool tick_kick;            /* a write asked for a check now (store_ticker_kick) */
    _Atomic bool kick_pending; /* tick_kick is set or about to be: writes skip the lock */
    bool moved_off;            /* tests only (CTSDB_HEAD_MOVED=0): no background hand-off */
    pthread_mutex_t tick_mu;
    pthread_cond_t tick_cv;
    int64_t grace_s;
    /* data cells written for points (/api/stats tsd.storage.data.cells): single cells (one per
     * point not in the head) and hour cells (one per series-hour handed off) */
    _Atomic uint64_t point_cells, hour_cells;
    char info_tags[1024]; /* tsd.storage.info's tags: backend and where */
};

static void store_cache_clear(struct store_cache *c)
{
    if (c->slots)
        memset(c->slots, 0, c->nslots * sizeof(*c->slots));
    c->n = 0;
    c->used = 0;
    c->clears++;
}

static void store_cache_free(struct store_cache *c)
{
    free(c->slots);
    free(c->arena);
    c->slots = NULL;
    c->arena = NULL;
    c->nslots = c->n = c->used = c->arena_cap = 0;
    atomic_store_explicit(&c->held, 0, memory_order_relaxed);
}

static size_t store_entry_size(size_t klen, size_t tlen)
{
    return (sizeof(struct store_entry) + klen + tlen + 7) & ~(size_t)7;
}

static const struct store_entry *store_slot_entry(const struct store_cache *c, uint64_t s)
{
    return (const struct store_entry *)(const void *)(c->arena + ((s & 0xFFFFFFFFu) - 1) * 8);
}

/* Starts loading the slot of hash h (for a lookup a few points later). Both prefetch helpers are
 * always inlined: GCC drops calls of a function that only prefetches (it finds it without
 * effect). */
static inline __attribute__((always_inline)) void
store_cache_prefetch_slot(const struct store_cache *c, uint64_t h)
{
    if (c->slots)
        __builtin_prefetch(&c->slots[h & (c->nslots - 1)]);
}

/* Starts loading the entry the slot of h names, if its tag matches. */
static inline __attribute__((always_inline)) void
store_cache_prefetch_entry(const struct store_cache *c, uint64_t h)
{
    if (!c->slots)
        return;
    uint64_t s = c->slots[h & (c->nslots - 1)];
    if (s && (s & ~0xFFFFFFFFULL) == STORE_SLOT_TAG(h)) {
        const char *e = (const char *)store_slot_entry(c, s);
        __builtin_prefetch(e);
        __builtin_prefetch(e + 64);
    }
}

static struct store_entry *store_cache_get(struct store_cache *c, const char *key, size_t klen,
                                           uint64_t h)
{
    if (!c->slots)
        return NULL;
    size_t mask = c->nslots - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        uint64_t s = c->slots[i];
        if (s == 0)
            return NULL;
        if ((s & ~0xFFFFFFFFULL) != STORE_SLOT_TAG(h))
            continue;
        struct store_entry *e = (struct store_entry *)store_slot_entry(c, s);
        const uint8_t *k = (const uint8_t *)(e + 1);
        if (e->hash == h && e->key_len == klen && !memcmp(k, key, klen))
            return e;
    }
}

static void store_slot_insert(uint64_t *slots, size_t nslots, uint64_t h, size_t off)
{
    size_t j = h & (nslots - 1);
    while (slots[j])
        j = (j + 1) & (nslots - 1);
    slots[j] = STORE_SLOT_TAG(h) | (uint64_t)(off / 8 + 1);
}

/* The TSUID of an entry (its length is e->tsuid_len). */
static const uint8_t *store_entry_tsuid(const struct store_entry *e)
{
    return (const uint8_t *)(e + 1) + e->key_len;
}

/* Adds an entry and returns it; on allocation failure the cache simply does not remember it
 * (NULL). */
static struct store_entry *store_cache_put(struct store_cache *c, const char *key, size_t klen,
                                           uint64_t h, const uint8_t *tsuid, size_t tlen,
                                           uint32_t salt)
{
    size_t sz = store_entry_size(klen, tlen);
    if (c->n >= STORE_CACHE_MAX || (c->used + sz) / 8 >= 0xFFFFFFFFu)
        store_cache_clear(c);
    if (c->max_bytes) {
        /* the slots it would need and the arena it would grow to must fit: else empty it
         * (and an entry that cannot fit even alone is not kept) */
        size_t ns = c->nslots ? c->nslots : 1024;
        while ((c->n + 1) * 2 > ns)
            ns *= 2;
        size_t na = c->arena_cap ? c->arena_cap : 1u << 16;
        while (na < c->used + sz)
            na *= 2;
        if (ns * sizeof(*c->slots) + na > c->max_bytes) {
            store_cache_clear(c);
            na = c->arena_cap ? c->arena_cap : 1u << 16;
            while (na < sz)
                na *= 2;
            if ((c->nslots ? c->nslots : 1024) * sizeof(*c->slots) + na > c->max_bytes)
                return NULL;
        }
    }
    if (!c->slots) {
        c->nslots = 1024;
        c->slots = calloc(c->nslots, sizeof(*c->slots));
        if (!c->slots)
            return NULL;
        atomic_fetch_add_explicit(&c->held, c->nslots * sizeof(*c->slots), memory_order_relaxed);
    }
    if ((c->n + 1) * 2 > c->nslots) {
        size_t ns = c->nslots * 2;
        uint64_t *nsl = calloc(ns, sizeof(*nsl));
        if (!nsl)
            return NULL;
        for (size_t off = 0; off < c->used;) {
            const struct store_entry *e = (const void *)(c->arena + off);
            store_slot_insert(nsl, ns, e->hash, off);
            off += store_entry_size(e->key_len, e->tsuid_len);
        }
        free(c->slots);
        atomic_fetch_add_explicit(&c->held, (ns - c->nslots) * sizeof(*c->slots), memory_order_relaxed);
        c->slots = nsl;
        c->nslots = ns;
    }
    if (c->used + sz > c->arena_cap) {
        size_t na = c->arena_cap ? c->arena_cap * 2 : 1u << 16;
        while (na < c->used + sz)
            na *= 2;
        uint8_t *nar = realloc(c->arena, na);
        if (!nar)
            return NULL;
        atomic_fetch_add_explicit(&c->held, na - c->arena_cap, memory_order_relaxed);
        c->arena = nar;
        c->arena_cap = na;
    }
    struct store_entry *e = (struct store_entry *)(void *)(c->arena + c->used);
    e->hash = h;
    e->key_len = (uint32_t)klen;
    e->tsuid_len = (uint16_t)tlen;
    e->hour = 0;
    e->seq = 0;
    e->slot = 0;
    e->salt = salt;
    e->href = (struct head_ref){0, 0};
    e->hseq = 0;
    e->hid = 0;
    uint8_t *k = (uint8_t *)(e + 1);
    memcpy(k, key, klen);
    memcpy(k + klen, tsuid, tlen);
    store_slot_insert(c->slots, c->nslots, h, c->used);
    c->used += sz;
    c->n++;
    return e;
}

/* ---- open / close ---------------------------------------------------------------------------- */

static int store_parse_durability(const char *s, enum wc_durability *d)
{
    if (!strcmp(s, "async"))
        *d = WC_DURABILITY_ASYNC_WAL;
    else if (!strcmp(s, "sync"))
        *d = WC_DURABILITY_SYNC_WAL;
    else if (!strcmp(s, "fsync"))
        *d = WC_DURABILITY_FSYNC_WAL;
    else
        return -1;
    return 0;
}

/* The store's warnings (wc_options.log_fn) go to the TSD's log. */
static void tsdstore_log(void *arg, const char *msg)
{
    (void)arg;
    tlog_warn("storage: %s", msg);
}

/* ---- the ingest head ------------------------------------------------------------------------- */

/* The head log's error state reports (headlog_set_log) go to the TSD's log, as the store's. */
static void store_head_log(void *arg, bool error, const char *msg)
{
    (void)arg;
    if (error)
        tlog_error("storage: %s", msg);
    else
        tlog_info("storage: %s", msg);
}

static enum wal_sync store_wal_sync(enum wc_durability d)
{
    return d == WC_DURABILITY_ASYNC_WAL   ? WAL_SYNC_ASYNC
           : d == WC_DURABILITY_FSYNC_WAL ? WAL_SYNC_FSYNC
                                          : WAL_SYNC_WRITE;
}

/* A point the head refused on replay (out of order, or of an hour a room hand-off of this
 * replay already stored): merged into its row (tsdb_merge_hour), since the store may already
 * hold it in an hour cell written before the restart, where a single cell beside that cell
 * would be a duplicate timestamp. */
static int store_head_refused(void *arg, const uint8_t *tsuid, size_t tlen,
                              const struct dpcodec_point *p, enum head_result res,
                              struct ct_err *err)
{
    struct tsdstore *st = arg;
    (void)res;
    uint8_t row[ROWKEY_MAX_BYTES], q[8], v[8];
    size_t ql = 0, vl = 0;
    int64_t base_s = rowkey_base_hour_s(p->ts_ms / 1000);
    size_t rl = rowkey_encode(tsdb_layout(st->tsdb), tsuid, tlen, base_s, row);
    int rc = dpcodec_encode(base_s, p, q, &ql, v, &vl, err);
    if (rc == CT_OK)
        rc = tsdb_merge_hour(st->tsdb, row, rl, base_s, q, ql, v, vl, st->durability, NULL, err);
    if (rc == CT_OK)
        atomic_fetch_add(&st->point_cells, 1);
    return rc;
}

/* Tests only: CTSDB_HEAD_CRASH=<point> kills the process (SIGKILL) at that step of a hand-off:
 * handoff_before_store (no cell written yet), handoff_mid_store (after the first series-hour's
 * cell), handoff_before_release (every cell written, the log not yet released); room_* and
 * moved_* the same steps of room and background backfill hand-offs (store_room_hour,
 * store_handoff_moved). */
static void store_head_crash_point(const char *point)
{
    const char *cp = getenv("CTSDB_HEAD_CRASH");
    if (cp && !strcmp(cp, point)) {
        tlog_warn("CTSDB_HEAD_CRASH: killing the process at %s", point);
        raise(SIGKILL);
    }
}

struct store_handoff_ctx {
    struct tsdstore *st;
    uint8_t *buf;
    size_t cap;
    size_t rows, points;
    size_t merged; /* of rows: replayed hours merged with their stored row */
    /* the kill points (store_head_crash_point) before its first cell and after it */
    const char *crash_first, *crash_mid;
};

/* One closed series-hour -> one cell of the configured format, written before the head drops
 * it (head_hour_fn). A chunk refilled by a replay of the head log may hold points a hand-off
 * before the restart already stored, and miss others it stored (released records): it is
 * merged with the row (tsdb_merge_hour: read, merge, one atomic row mutation), so the row keeps
 * one cell and no duplicate timestamp. */
static int store_handoff_hour(void *arg, const uint8_t *tsuid, size_t tlen, int64_t base_s,
                              bool replayed, const struct dpcodec_point *pts, size_t n,
                              struct ct_err *err)
{
    struct store_handoff_ctx *x = arg;
    struct tsdstore *st = x->st;
    const struct rowkey_layout *l = tsdb_layout(st->tsdb);
    enum dpcodec_format f = tsdb_get_config(st->tsdb)->format;
    size_t vmax = f == DPCODEC_FORMAT_OPENTSDB ? 8 * n + 1 : dpcodec_compressed_bound(n);
    size_t need = 64 + tlen + 4 * n + DPCODEC_CQ_LEN + vmax;
    if (need > x->cap) {
        uint8_t *nb = realloc(x->buf, need);
        if (!nb)
            return ct_err_set(err, CT_ENOMEM, "cannot encode a head hour of %zu points", n);
        x->buf = nb;
        x->cap = need;
    }
    if (x->rows == 0)
        store_head_crash_point(x->crash_first);
    else if (x->rows == 1)
        store_head_crash_point(x->crash_mid);
    uint8_t *row = x->buf;
    size_t rl = rowkey_encode(l, tsuid, tlen, base_s, row);
    uint8_t *q = row + rl, *v = q + (4 * n > DPCODEC_CQ_LEN ? 4 * n : DPCODEC_CQ_LEN);
    size_t ql = 0, vl = 0;
    int rc;
    if (f == DPCODEC_FORMAT_OPENTSDB && n == 1) {
        rc = dpcodec_encode(base_s, &pts[0], q, &ql, v, &vl, err);
    } else if (f == DPCODEC_FORMAT_OPENTSDB) {
        rc = dpcodec_compacted_encode(base_s, pts, n, q, &ql, v, &vl, err);
    } else {
        dpcodec_compressed_qualifier(pts, n, q);
        ql = DPCODEC_CQ_LEN;
        rc = dpcodec_compressed_encode(base_s, pts, n, v, &vl, err);
    }
    if (rc != CT_OK)
        return rc;
    if (replayed) {
        rc = tsdb_merge_hour(st->tsdb, row, rl, base_s, q, ql, v, vl, st->durability, NULL, err);
        if (rc == CT_OK)
            x->merged++;
    } else {
        struct wc_mutation m = {
            WC_OP_PUT, wc_bytes_str(TSDB_DATA_FAMILY), {q, ql}, {v, vl}, WC_TS_LATEST};
        struct wc_row_mutation rm = {{row, rl}, &m, 1};
        rc = wc_mutate_batch(tsdb_data_table(st->tsdb), &rm, 1, st->durability, err);
    }
    if (rc == CT_OK) {
        atomic_fetch_add(&st->hour_cells, 1);
        x->rows++;
        x->points += n;
    }
    return rc;
}

/* A backfill chunk handed off to make room for a newer hour of its series (head_set_backfill's
 * room function: runs inside an append, with the head's lock held, which guards room_x). */
static int store_room_hour(void *arg, const uint8_t *tsuid, size_t tlen, int64_t base_s,
                           bool replayed, const struct dpcodec_point *pts, size_t n,
                           struct ct_err *err)
{
    struct tsdstore *st = arg;
    int rc = store_handoff_hour(st->room_x, tsuid, tlen, base_s, replayed, pts, n, err);
    if (rc == CT_OK)
        atomic_fetch_add(&st->room_unreleased, 1);
    else
        tlog_error("head: room hand-off of a backfilled hour failed (the point goes as a "
                   "single cell): %s", err->msg);
    return rc;
}

/* Hands off every hour closed at now_s (base + 3600 + grace <= now; every hour if now_s is
 * INT64_MAX), then releases the head log. Backfill chunks (of hours closed when they were
 * opened) go only when idle for tsd.storage.head.backfill_idle_ms, unless all_closed (a clean
 * stop) or the head is over tsd.storage.head.max_bytes. At most one check a second unless
 * force; without force it skips while another hand-off runs. */
static int store_handoff(struct tsdstore *st, int64_t now_s, bool force, bool all_closed,
                         struct ct_err *err)
{
    if (!st->head)
        return CT_OK;
    /* at most once a second of the monotonic clock (a pinned wall clock still checks: the
     * idle and room rules of backfill chunks run on the monotonic one) */
    int64_t mono_ms = (int64_t)(clock_mono_ns() / 1000000u);
    int64_t last = atomic_load(&st->handoff_checked_s), mono_s = mono_ms / 1000;
    if (!force &&
        (mono_s <= last || !atomic_compare_exchange_strong(&st->handoff_checked_s, &last, mono_s)))
        return CT_OK;
    int64_t before =
        now_s == INT64_MAX ? INT64_MAX : rowkey_base_hour_s(now_s - 3600 - st->grace_s) + 3600;
    head_set_clock_ms(st->head, mono_ms);
    /* the mark must be right before the first point, hours to hand off or not: with backfill
     * it says which new chunks are backfill ones (handed off by the rules above, not at once);
     * without, points of closed hours go to the store as single cells from the start (a fresh
     * TSD's first check finds nothing to hand off) */
    if (now_s != INT64_MAX)
        head_set_closed_before(st->head, before);
    /* nothing to hand off: still release a log holding only records of closed hours (their
     * points reached the store as single cells), after moving the head's closed mark */
    int64_t oldest = head_oldest_hour_s(st->head);
    if (oldest >= before && !headlog_releasable(st->hlog, before) &&
        atomic_load(&st->room_unreleased) == 0)
        return CT_OK;
    if (force)
        pthread_mutex_lock(&st->handoff_mu);
    else if (pthread_mutex_trylock(&st->handoff_mu) != 0)
        return CT_OK;
    bool pressure = st->head_bound && head_bytes(st->head) >= st->head_bound;
    int64_t idle_before = all_closed || pressure || now_s == INT64_MAX ? INT64_MAX
                          : st->backfill                              ? mono_ms - st->bf_idle_ms
                                                                      : INT64_MAX;
    struct store_handoff_ctx x = {
        .st = st, .crash_first = "handoff_before_store", .crash_mid = "handoff_mid_store"};
    size_t nh = 0;
    int rc = head_close_hours_idle(st->head, before, idle_before, store_handoff_hour, &x, &nh, err);
    uint64_t room = atomic_exchange(&st->room_unreleased, 0);
    if (rc == CT_OK && (nh || room))
        store_head_crash_point("handoff_before_release");
    if (rc == CT_OK) {
        /* release up to the oldest hour the head still holds (backfill chunks of old hours
         * included), with no append between the log and the head in flight: every logged
         * point is then in the head or refused, so no record a held chunk came from goes */
        pthread_rwlock_wrlock(&st->append_rw);
        int64_t keep = head_oldest_hour_s(st->head);
        rc = headlog_release(st->hlog, keep < before ? keep : before, err);
        pthread_rwlock_unlock(&st->append_rw);
    }
    pthread_mutex_unlock(&st->handoff_mu);
    free(x.buf);
    if (rc != CT_OK)
        tlog_error("head hand-off of hours before %lld failed (kept in the head and its log): %s",
                   (long long)before, err->msg);
    else if (nh)
        tlog_info("head: handed off %zu series-hours (%zu points) before %lld, %zu of them "
                  "merged with their row after a replay", x.rows, x.points, (long long)before,
                  x.merged);
    return rc;
}

/* Backfill chunks whose series moved on to a newer hour (head_handoff_moved), handed off here
 * on the ticker while the writers go on appending: the writer's room hand-off is then only the
 * fallback of a ticker that fell behind. Their log records go at the next release. */
static void store_handoff_moved(struct tsdstore *st)
{
    if (st->moved_off || !head_moved_pending(st->head))
        return;
    pthread_mutex_lock(&st->handoff_mu);
    struct store_handoff_ctx x = {
        .st = st, .crash_first = "moved_before_store", .crash_mid = "moved_mid_store"};
    size_t nh = 0;
    struct ct_err e = {0};
    int rc = head_handoff_moved(st->head, store_handoff_hour, &x, &nh, &e);
    if (nh)
        atomic_fetch_add(&st->room_unreleased, nh);
    pthread_mutex_unlock(&st->handoff_mu);
    free(x.buf);
    if (rc != CT_OK) {
        static struct tlog_limit moved_lines = TLOG_LIMIT_INIT(10000);
        tlog_limited(&moved_lines, (int64_t)(clock_mono_ns() / 1000000), TLOG_ERROR,
                     "head: background hand-off of a backfilled hour failed (kept in the head): "
                     "%s", e.msg);
    }
}

/* The hand-off ticker: checks for closed hours once a second whatever the writes do (the last
 * points before the writes stop, a backfill, a quiet hour, would otherwise stay in the head and
 * its log), and at once when a write asks (store_ticker_kick): the hand-offs run here, beside
 * the writers, not on them. */
static void *store_ticker_main(void *arg)
{
    pthread_setname_np(pthread_self(), "ct-ticker");
    struct tsdstore *st = arg;
    pthread_mutex_lock(&st->tick_mu);
    while (!st->tick_stop) {
        if (!st->tick_kick) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            pthread_cond_timedwait(&st->tick_cv, &st->tick_mu, &ts);
        }
        if (st->tick_stop)
            break;
        st->tick_kick = false;
        atomic_store(&st->kick_pending, false);
        pthread_mutex_unlock(&st->tick_mu);
        store_handoff_moved(st);
        struct ct_err e = {0};
        if (store_handoff(st, clock_now_ms() / 1000, false, false, &e) != CT_OK) {
            /* logged there; the hours stay in the head and are tried again */
        }
        pthread_mutex_lock(&st->tick_mu);
    }
    pthread_mutex_unlock(&st->tick_mu);
    return NULL;
}

/* After a write: wakes the ticker when the head has backfill chunks ready to go or the second's
 * check of closed hours is due (one atomic load otherwise). */
static void store_ticker_kick(struct tsdstore *st)
{
    int64_t mono_s = (int64_t)(clock_mono_ns() / 1000000000u);
    if (!head_moved_pending(st->head) && mono_s <= atomic_load(&st->handoff_checked_s))
        return;
    if (atomic_exchange(&st->kick_pending, true))
        return;
    pthread_mutex_lock(&st->tick_mu);
    st->tick_kick = true;
    pthread_cond_signal(&st->tick_cv);
    pthread_mutex_unlock(&st->tick_mu);
}

static int store_ticker_start(struct tsdstore *st, struct ct_err *err)
{
    int e = pthread_create(&st->ticker, NULL, store_ticker_main, st);
    if (e != 0)
        return ct_err_set(err, CT_EIO, "cannot start the head hand-off thread: %s", strerror(e));
    st->ticker_started = true;
    return CT_OK;
}

static void store_ticker_stop(struct tsdstore *st)
{
    if (!st->ticker_started)
        return;
    pthread_mutex_lock(&st->tick_mu);
    st->tick_stop = true;
    pthread_cond_signal(&st->tick_cv);
    pthread_mutex_unlock(&st->tick_mu);
    pthread_join(st->ticker, NULL);
    st->ticker_started = false;
}

/* head_delete_log_fn: a delete=true query's hours, logged at the TSD's durability. */
static int store_head_delete_log(void *arg, const uint8_t *tsuid, size_t tlen, int64_t from_s,
                                 int64_t to_s, struct ct_err *err)
{
    struct tsdstore *st = arg;
    return headlog_append_delete(st->hlog, tsuid, tlen, from_s, to_s,
                                 store_wal_sync(st->durability), err);
}

/* A read-only TSD: the open hours a writer left in <dir>/head, replayed into a head of its own
 * (nothing is written; st->hlog stays NULL). Read once, at start. */
static int store_head_open_read_only(struct tsdstore *st, const char *dir, struct ct_err *err)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof(path), "%s/head", dir) >= sizeof(path))
        return ct_err_set(err, CT_EINVAL, "storage directory too long: %s", dir);
    uint64_t np = 0;
    int rc = headlog_load_read_only(path, &st->head, &np, err);
    if (rc == CT_OK && st->head)
        tlog_info("head: read %llu points of open hours from %s (read-only)",
                  (unsigned long long)np, path);
    return rc;
}

/* Opens the head and its log in <dir>/head and replays the log into it. With drain (the head
 * is off), an existing log's points are all handed off and the head closed again: turning the
 * head off never strands acknowledged points in its log. */
static int store_head_open(struct tsdstore *st, const char *dir, bool drain, struct ct_err *err)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof(path), "%s/head", dir) >= sizeof(path))
        return ct_err_set(err, CT_EINVAL, "storage directory too long: %s", dir);
    struct stat sb;
    if (drain && stat(path, &sb) != 0)
        return CT_OK; /* never used */
    /* on Bigtable nothing else creates the directory the log lives in */
    if (!drain && mkdir(dir, 0700) != 0 && errno != EEXIST)
        return ct_err_set(err, CT_EIO, "cannot create %s: %s", dir, strerror(errno));
    int rc = head_new(&st->head, err);
    if (rc == CT_OK)
        rc = headlog_open(path, &st->hlog, err);
    if (rc != CT_OK)
        return rc;
    st->grace_s = tsdb_get_config(st->tsdb)->compaction_delay_s;
    if (st->backfill) {
        /* on before the replay (a drain's too), as before the restart: a series whose unreleased
         * records hold more than HEAD_MAX_HOURS closed hours hands its oldest off for room
         * (merged with its row: every replayed chunk is) instead of refusing the rest, each
         * refused point costing a row read (store_head_refused) */
        if (!(st->room_x = calloc(1, sizeof(*st->room_x))))
            return ct_err_set(err, CT_ENOMEM, "out of memory opening the ingest head");
        *st->room_x = (struct store_handoff_ctx){
            .st = st, .crash_first = "room_before_store", .crash_mid = "room_mid_store"};
        head_set_closed_before(st->head,
                               rowkey_base_hour_s(clock_now_ms() / 1000 - 3600 - st->grace_s) +
                                   3600);
        head_set_backfill(st->head, true, st->head_bound, store_room_hour, st);
    }
    uint64_t np = 0;
    rc = headlog_replay(st->hlog, st->head, store_head_refused, st, &np, err);
    if (rc != CT_OK)
        return rc;
    if (np)
        tlog_info("head: replayed %llu points from %s", (unsigned long long)np, path);
    rc = store_handoff(st, drain ? INT64_MAX : clock_now_ms() / 1000, true, true, err);
    if (drain) {
        headlog_close(st->hlog);
        head_free(st->head);
        st->hlog = NULL;
        st->head = NULL;
    } else {
        head_set_delete_log(st->head, store_head_delete_log, st);
        headlog_set_log(st->hlog, store_head_log, st);
    }
    return rc;
}

/* The tags of tsd.storage.info (tsdstore_stats): "backend=embedded directory=D" or
 * "backend=bigtable project=P instance=I endpoint=E", each value with blanks and '=' replaced by
 * '_' so the put-line shape stays parseable. */
static void tsdstore_info_tags(const struct wc_options *o, char *buf, size_t cap)
{
    const char *emu = getenv("BIGTABLE_EMULATOR_HOST");
    bool on_emu = emu && *emu;
    const char *k[4], *v[4];
    int n = 0;
    if (o->backend == WC_BACKEND_BIGTABLE) {
        k[n] = "backend", v[n++] = "bigtable";
        k[n] = "project", v[n++] = o->bt_project && *o->bt_project ? o->bt_project
                                   : on_emu                        ? "ctsdb"
                                                                   : "default";
        k[n] = "instance", v[n++] = o->bt_instance && *o->bt_instance ? o->bt_instance
                                    : on_emu                          ? "ctsdb"
                                                                      : "default";
        k[n] = "endpoint", v[n++] = on_emu                ? emu
                                    : o->bt_data_endpoint ? o->bt_data_endpoint
                                                          : "bigtable.googleapis.com:443";
    } else {
        k[n] = "backend", v[n++] = "embedded";
        k[n] = "directory", v[n++] = o->data_dir ? o->data_dir : "./data";
    }
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && len + 1 < cap; i++) {
        int w = snprintf(buf + len, cap - len, "%s%s=", i ? " " : "", k[i]);
        if (w < 0 || (size_t)w >= cap - len)
            break;
        len += (size_t)w;
        for (const char *c = v[i]; *c && len + 1 < cap; c++)
            buf[len++] = (*c == ' ' || *c == '\t' || *c == '=' || *c == '\n') ? '_' : *c;
        buf[len] = '\0';
    }
}

void tsdstore_wc_options(const struct conf *c, struct wc_options *o)
{
    wc_options_init(o);
    if (!strcmp(conf_get_str(c, "tsd.storage.backend"), "bigtable")) {
        o->backend = WC_BACKEND_BIGTABLE;
        o->bt_project = conf_get_str(c, "tsd.storage.bigtable.project");
        o->bt_instance = conf_get_str(c, "tsd.storage.bigtable.instance");
        /* empty strings mean "the service's default" (or BIGTABLE_EMULATOR_HOST) */
        const char *v;
        if (*(v = conf_get_str(c, "tsd.storage.bigtable.data_endpoint")))
            o->bt_data_endpoint = v;
        if (*(v = conf_get_str(c, "tsd.storage.bigtable.admin_endpoint")))
            o->bt_admin_endpoint = v;
        if (*(v = conf_get_str(c, "tsd.storage.bigtable.credentials")))
            o->bt_credentials = v;
        o->bt_deadline_ms = conf_get_int(c, "tsd.storage.bigtable.deadline_ms");
    } else {
        o->backend = WC_BACKEND_EMBEDDED;
        o->data_dir = conf_get_str(c, "tsd.storage.directory");
        o->block_cache_bytes = (size_t)conf_get_int(c, "tsd.storage.block_cache_bytes");
        o->memstore_flush_bytes = (size_t)conf_get_int(c, "tsd.storage.memstore_flush_bytes");
        o->region_split_bytes = (uint64_t)conf_get_int(c, "tsd.storage.region_split_bytes");
        o->quiet_flush_ms = conf_get_int(c, "tsd.storage.quiet_flush_ms");
        o->quarantine_damaged = conf_get_bool(c, "tsd.storage.quarantine_damaged");
        /* past it the engine flushes the largest regions and holds writes until they are
         * under it (wc.h; tsd.ingest.memstore_waits counts the writes that waited) */
        o->memstore_total_bytes = (size_t)conf_get_int(c, "tsd.storage.memstore_total_bytes");
        /* under a memory limit, block files are read through the (bounded) cache: mapped
         * pages would count in RSS and grow with the data read */
        o->pread_block_files = conf_get_int(c, "tsd.core.memory_limit_bytes") > 0;
    }
}

size_t tsdstore_describe(const struct wc_options *o, char *buf, size_t cap)
{
    int n;
    if (o->backend == WC_BACKEND_BIGTABLE) {
        const char *emu = getenv("BIGTABLE_EMULATOR_HOST");
        bool on_emu = emu && *emu; /* the emulator's project and instance default to ctsdb */
        const char *proj = o->bt_project && *o->bt_project ? o->bt_project : on_emu ? "ctsdb" : "";
        const char *inst = o->bt_instance && *o->bt_instance ? o->bt_instance
                           : on_emu                          ? "ctsdb"
                                                             : "";
        const char *ep = on_emu                ? emu
                         : o->bt_data_endpoint ? o->bt_data_endpoint
                                               : "bigtable.googleapis.com:443";
        n = snprintf(buf, cap, "Bigtable project '%s' instance '%s' %s %s", proj, inst,
                     on_emu ? "on the emulator at" : "at", ep);
    } else {
        n = snprintf(buf, cap, "%s", o->data_dir ? o->data_dir : "./data");
    }
    return n < 0 ? 0 : (size_t)n;
}

int tsdstore_open(const struct conf *c, enum tsdstore_mode mode, struct tsdstore **out,
                  struct ct_err *err)
{
    bool read_only = mode == TSDSTORE_READ_ONLY;
    struct tsdstore *st = calloc(1, sizeof(*st));
    if (!st)
        return ct_err_set(err, CT_ENOMEM, "out of memory opening the store");
    pthread_mutex_init(&st->mu, NULL);
    pthread_mutex_init(&st->handoff_mu, NULL);
    { /* writer-preferring: a release waits for the appends in flight, not for ingest to stop */
        pthread_rwlockattr_t ra;
        pthread_rwlockattr_init(&ra);
        pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
        pthread_rwlock_init(&st->append_rw, &ra);
        pthread_rwlockattr_destroy(&ra);
    }
    pthread_mutex_init(&st->tick_mu, NULL);
    pthread_cond_init(&st->tick_cv, NULL);
    st->series_cache_bytes = (size_t)conf_get_int(c, "tsd.storage.series_cache_bytes");
    st->mem_limit = (uint64_t)conf_get_int(c, "tsd.core.memory_limit_bytes");
    st->head_bound = (uint64_t)conf_get_int(c, "tsd.storage.head.max_bytes");
    st->bf_idle_ms = conf_get_int(c, "tsd.storage.head.backfill_idle_ms");
    const char *mv = getenv("CTSDB_HEAD_MOVED"); /* tests only: the room hand-off alone */
    st->moved_off = mv && !strcmp(mv, "0");
    st->backfill = st->bf_idle_ms > 0;
    if (store_parse_durability(conf_get_str(c, "tsd.storage.wal.durability"), &st->durability))
        st->durability = WC_DURABILITY_SYNC_WAL;

    struct wc_options o;
    tsdstore_wc_options(c, &o);
    const char *dir = conf_get_str(c, "tsd.storage.directory");
    tsdstore_info_tags(&o, st->info_tags, sizeof(st->info_tags));
    if (o.backend == WC_BACKEND_BIGTABLE) /* one deadline bounds a whole write or request */
        st->request_ms = o.bt_deadline_ms;
    o.log_fn = tsdstore_log;
    o.log_arg = NULL;
    o.create_if_missing = mode == TSDSTORE_CREATE;
    int rc = wc_open(&o, &st->store, err);
    if (rc != CT_OK) {
        char where[768];
        tsdstore_describe(&o, where, sizeof(where));
        ct_err_prefix(err, "cannot open the store in %s", where);
        tsdstore_close(st);
        return rc;
    }
    struct tsdb_config tc; /* the schema's keys, passed through (conf.h) */
    rc = conf_tsdb_config(c, &tc, err);
    if (rc != CT_OK) {
        tsdstore_close(st);
        return rc;
    }
    tc.read_only = read_only;
    tc.create_tables = tc.create_tables && !read_only;
    rc = tsdb_open(st->store, &tc, &st->tsdb, err);
    if (rc != CT_OK) {
        ct_err_prefix(err, "cannot open the OpenTSDB tables");
        tsdstore_close(st);
        return rc;
    }
    bool tix = false; /* a new store: the tag index is complete from the start (tagidx.h) */
    if (!read_only && (rc = tagidx_mark_if_empty(st->tsdb, &tix, err)) != CT_OK) {
        ct_err_prefix(err, "cannot check the tag index");
        tsdstore_close(st);
        return rc;
    }
    /* head off: only drains a log left by an earlier run with it on. On by default with the
     * embedded store; on Bigtable only when set: TSDs sharing one Bigtable store do not see each
     * other's heads, so each would miss the others' open hours */
    bool head_on = conf_get_bool(c, "tsd.storage.head.enable") &&
                   (o.backend != WC_BACKEND_BIGTABLE || conf_is_set(c, "tsd.storage.head.enable"));
    if (!read_only && (rc = store_head_open(st, dir, !head_on, err)) != CT_OK) {
        ct_err_prefix(err, "cannot open the ingest head");
        tsdstore_close(st);
        return rc;
    }
    if (!read_only && st->head && (rc = store_ticker_start(st, err)) != CT_OK) {
        tsdstore_close(st);
        return rc;
    }
    if (read_only && dir && *dir && (rc = store_head_open_read_only(st, dir, err)) != CT_OK) {
        ct_err_prefix(err, "cannot read the ingest head's log");
        tsdstore_close(st);
        return rc;
    }
    if ((rc = metatrack_open(c, st->tsdb, read_only, &st->track, err)) != CT_OK) {
        tsdstore_close(st);
        return rc;
    }
    *out = st;
    return CT_OK;
}

void tsdstore_close(struct tsdstore *st)
{
    if (!st)
        return;
    if (st->ticker_started) { /* a writing TSD with the head: its closed hours go to the store */
        store_ticker_stop(st);
        struct ct_err e = {0};
        if (store_handoff(st, clock_now_ms() / 1000, true, true, &e) != CT_OK) {
            /* logged there; the hours stay in the head's log and come back by replay */
        }
    }
    metatrack_close(st->track);
    /* the head's open hours stay in its log and come back by replay */
    headlog_close(st->hlog);
    head_free(st->head);
    if (st->room_x)
        free(st->room_x->buf);
    free(st->room_x);
    tsdb_close(st->tsdb);
    wc_close(st->store);
    for (int i = 0; i < st->nall; i++) {
        tsdb_batch_free(st->all[i]->batch);
        free(st->all[i]->hp);
        free(st->all[i]->hrefs);
        free(st->all[i]->hent);
        free(st->all[i]->hid);
        free(st->all[i]->hfirst);
        free(st->all[i]->tsb);
        free(st->all[i]->hres);
        store_cache_free(&st->all[i]->cache);
        free(st->all[i]->touch);
        free(st->all[i]->touch_bytes);
        free(st->all[i]);
    }
    pthread_mutex_destroy(&st->mu);
    pthread_mutex_destroy(&st->handoff_mu);
    pthread_rwlock_destroy(&st->append_rw);
    pthread_mutex_destroy(&st->tick_mu);
    pthread_cond_destroy(&st->tick_cv);
    free(st);
}

struct wc_store *tsdstore_wc(struct tsdstore *st)
{
    return st->store;
}

int tsdstore_handoff_closed(struct tsdstore *st, struct ct_err *err)
{
    if (!st->head || !st->hlog) /* none, or a read-only TSD's */
        return CT_OK;
    return store_handoff(st, clock_now_ms() / 1000, true, true, err);
}

struct tsdb *tsdstore_tsdb(struct tsdstore *st)
{
    return st->tsdb;
}

struct head *tsdstore_head(struct tsdstore *st)
{
    return st->head;
}

void tsdstore_drop_caches(struct tsdstore *st)
{
    uid_cache_drop(tsdb_uid(st->tsdb));
    atomic_fetch_add(&st->drop_gen, 1);
}

/* ---- writing ---------------------------------------------------------------------------------- */

static struct store_writer *store_writer_take(struct tsdstore *st, struct ct_err *err)
{
    pthread_mutex_lock(&st->mu);
    struct store_writer *w = st->free_writers;
    if (w) {
        st->free_writers = w->next;
        pthread_mutex_unlock(&st->mu);
        return w;
    }
    if (st->nall == STORE_MAX_WRITERS) {
        pthread_mutex_unlock(&st->mu);
        ct_err_set(err, CT_ELIMIT, "more than %d concurrent store writers", STORE_MAX_WRITERS);
        return NULL;
    }
    w = calloc(1, sizeof(*w));
    if (w && tsdb_batch_new(16384, &w->batch, err) != CT_OK) {
        free(w);
        w = NULL;
    } else if (!w) {
        ct_err_set(err, CT_ENOMEM, "out of memory for a store writer");
    }
    if (w) {
        w->cache.max_bytes = st->series_cache_bytes;
        st->all[st->nall++] = w;
    }
    pthread_mutex_unlock(&st->mu);
    return w;
}

static void store_writer_give(struct tsdstore *st, struct store_writer *w)
{
    pthread_mutex_lock(&st->mu);
    w->next = st->free_writers;
    st->free_writers = w;
    pthread_mutex_unlock(&st->mu);
}

/* Lists series ts in this write's touch (store_index_write); returns its index in *slot. */
static int store_touch_add(struct store_writer *w, const uint8_t *ts, size_t tl, bool fresh,
                           size_t *slot, struct ct_err *err)
{
    if (w->ntouch == w->touch_cap) {
        size_t nc = w->touch_cap ? w->touch_cap * 2 : 256;
        struct store_touch *nt = realloc(w->touch, nc * sizeof(*nt));
        if (!nt)
            return ct_err_set(err, CT_ENOMEM, "out of memory for a write's series meta");
        atomic_fetch_add_explicit(&w->touch_held, (nc - w->touch_cap) * sizeof(*nt),
                                  memory_order_relaxed);
        w->touch = nt;
        w->touch_cap = nc;
    }
    if (w->touch_used + tl > w->touch_bytes_cap) {
        size_t nc = w->touch_bytes_cap ? w->touch_bytes_cap * 2 : 1u << 14;
        while (nc < w->touch_used + tl)
            nc *= 2;
        uint8_t *nb = realloc(w->touch_bytes, nc);
        if (!nb)
            return ct_err_set(err, CT_ENOMEM, "out of memory for a write's series meta");
        atomic_fetch_add_explicit(&w->touch_held, nc - w->touch_bytes_cap, memory_order_relaxed);
        w->touch_bytes = nb;
        w->touch_bytes_cap = nc;
    }
    memcpy(w->touch_bytes + w->touch_used, ts, tl);
    w->touch[w->ntouch] = (struct store_touch){w->touch_used, tl, 0, 0, fresh};
    w->touch_used += tl;
    *slot = w->ntouch++;
    return CT_OK;
}

/* Notes one point of series ts (cache entry e, NULL if the cache could not keep it) in hour
 * base_s: a touch entry when its newest-hour index entry moves on, and with meta tracking one
 * per series per write counting its points. */
static int store_touch_point(struct tsdstore *st, struct store_writer *w, struct store_entry *e,
                             const uint8_t *ts, size_t tl, bool fresh, int64_t base_s,
                             struct ct_err *err)
{
    bool moved = !e || (int64_t)e->hour < base_s;
    size_t slot;
    int rc;
    if (st->track) {
        if (e && e->seq == w->seq) {
            slot = e->slot;
        } else {
            if ((rc = store_touch_add(w, ts, tl, fresh, &slot, err)) != CT_OK)
                return rc;
            if (e) {
                e->seq = w->seq;
                e->slot = (uint32_t)slot;
            }
        }
        w->touch[slot].points++;
    } else if (moved) {
        if ((rc = store_touch_add(w, ts, tl, fresh, &slot, err)) != CT_OK)
            return rc;
    } else {
        return CT_OK;
    }
    if (moved) {
        if (w->touch[slot].hour_s < base_s)
            w->touch[slot].hour_s = base_s;
        if (e)
            e->hour = (uint32_t)base_s;
    }
    return CT_OK;
}

/* Writes the indexes of this write's series, BEFORE its points (in the head or the store): the
 * newest-hour index entries that move on and the tag index entries of series new to the writer,
 * in chunks of bounded size. So a point that is durable is always indexed: a write whose index
 * fails writes no point (its refusal is clean, a retry is not a duplicate), and one whose points
 * fail after it leaves at most an entry naming an hour without points or a series without
 * points, which readers step over (query/qlast.c reads down from the named hour). */
static int store_index_write(struct tsdstore *st, struct store_writer *w, struct ct_err *err)
{
    struct meta_hour mh[256];
    for (size_t i = 0; i < w->ntouch;) {
        size_t n = 0;
        for (; n < 256 && i < w->ntouch; i++)
            if (w->touch[i].hour_s)
                mh[n++] = (struct meta_hour){w->touch_bytes + w->touch[i].off, w->touch[i].len,
                                             w->touch[i].hour_s};
        int rc = meta_hour_put(st->tsdb, mh, n, st->durability, err);
        if (rc != CT_OK)
            return ct_err_prefix(err, "writing the newest-hour index");
    }
    /* the tag index entries of series new to this writer (schema/tagidx.h) */
    struct tagidx_series tx[256];
    for (size_t i = 0; i < w->ntouch;) {
        size_t n = 0;
        for (; n < 256 && i < w->ntouch; i++)
            if (w->touch[i].fresh)
                tx[n++] = (struct tagidx_series){w->touch_bytes + w->touch[i].off, w->touch[i].len};
        int rc = n ? tagidx_put(st->tsdb, tx, n, st->durability, err) : CT_OK;
        if (rc != CT_OK)
            return rc;
    }
    return CT_OK;
}

/* What meta tracking records of this write's series (tsd/metatrack.h), once its points are
 * written. */
static void store_meta_track(struct tsdstore *st, struct store_writer *w)
{
    for (size_t i = 0; i < w->ntouch; i++) {
        const struct store_touch *t = &w->touch[i];
        metatrack_series(st->track, w->touch_bytes + t->off, t->len, t->points, t->fresh);
    }
}

struct store_counts {
    size_t n, added, failed, unknown, refused;
    /* the head was at or over tsd.storage.head.max_bytes when this write began (head_bytes
     * then), and the first ms of the hours it still takes: store_admit_series */
    bool head_full;
    size_t head_bytes;
    int64_t head_open_ms;
    /* the head's closed mark in ms when this write began (INT64_MIN: none or no head): points
     * before it are written as single cells without passing through the head's staging */
    int64_t closed_ms;
    /* the first backend error of a UID lookup in this write: once set, every later point of a
     * series not yet cached fails at once with it (a stalled backend costs one deadline per
     * write, not one per new series); code CT_OK while no lookup failed */
    struct ct_err resolve_err;
};

/* Stages a point for the head (store_head_write): the same checks as tsdb_batch_add(). e is the
 * series' cache entry (NULL: none): it notes the series' id in this write's head log record. */
static int store_head_stage(struct store_writer *w, struct store_entry *e, const uint8_t *tsuid,
                            size_t tlen, const struct dpcodec_point *p, struct ct_err *err)
{
    if (p->ts_ms < 0 || p->ts_ms > 9999999999999LL)
        return ct_err_set(err, CT_EINVAL, "timestamp %lld ms is out of range", (long long)p->ts_ms);
    if (tlen == 0 || tlen > HEAD_MAX_TSUID)
        return ct_err_set(err, CT_EINVAL, "bad TSUID length %zu", tlen);
    if (w->hpn == w->hpcap) {
        size_t nc = w->hpcap ? w->hpcap * 2 : 1024;
        struct head_point *np = realloc(w->hp, nc * sizeof(*np));
        if (!np)
            return ct_err_set(err, CT_ENOMEM, "out of memory staging head points");
        w->hp = np;
        struct head_ref *nr = realloc(w->hrefs, nc * sizeof(*nr));
        if (!nr)
            return ct_err_set(err, CT_ENOMEM, "out of memory staging head points");
        w->hrefs = nr;
        uint32_t *ne = realloc(w->hent, nc * sizeof(*ne));
        if (!ne)
            return ct_err_set(err, CT_ENOMEM, "out of memory staging head points");
        w->hent = ne;
        if (!(ne = realloc(w->hid, nc * sizeof(*ne))))
            return ct_err_set(err, CT_ENOMEM, "out of memory staging head points");
        w->hid = ne;
        if (!(ne = realloc(w->hfirst, nc * sizeof(*ne))))
            return ct_err_set(err, CT_ENOMEM, "out of memory staging head points");
        w->hfirst = ne;
        w->hpcap = nc;
    }
    if (e && e->hseq == w->seq) { /* staged already in this write: its id and bytes */
        uint32_t id = e->hid;
        w->hid[w->hpn] = id;
        w->hrefs[w->hpn] = e->href;
        w->hent[w->hpn] = (uint32_t)(((const uint8_t *)e - w->cache.arena) / 8 + 1);
        w->hp[w->hpn] = (struct head_point){w->hp[w->hfirst[id]].tsuid, tlen, *p};
        w->hpn++;
        return CT_OK;
    }
    if (w->tsbn + tlen > w->tsbcap) {
        size_t nc = w->tsbcap ? w->tsbcap * 2 : 16384;
        while (nc < w->tsbn + tlen)
            nc *= 2;
        uint8_t *nb = realloc(w->tsb, nc);
        if (!nb)
            return ct_err_set(err, CT_ENOMEM, "out of memory staging head points");
        w->tsb = nb;
        w->tsbcap = nc;
    }
    memcpy(w->tsb + w->tsbn, tsuid, tlen);
    w->hfirst[w->hnser] = (uint32_t)w->hpn;
    w->hid[w->hpn] = w->hnser;
    if (e) {
        e->hseq = w->seq;
        e->hid = w->hnser;
    }
    w->hnser++;
    w->hrefs[w->hpn] = e ? e->href : (struct head_ref){0, 0};
    w->hent[w->hpn] = e ? (uint32_t)(((const uint8_t *)e - w->cache.arena) / 8 + 1) : 0;
    w->hp[w->hpn++] = (struct head_point){(const uint8_t *)(uintptr_t)w->tsbn, tlen, *p};
    w->tsbn += tlen;
    return CT_OK;
}

/* Logs the staged points (at the TSD's durability: logged before the ack), puts them in the
 * head, and adds those it refuses (late, out of order, no room) to the schema batch as single
 * cells. */
static int store_head_write(struct tsdstore *st, struct store_writer *w, struct ct_err *err)
{
    const struct rowkey_layout *layout = tsdb_layout(st->tsdb);
    /* points of hours already handed off go straight to the batch (not logged: their record
     * would only wait for the next hand-off to be released); the rest are logged */
    int64_t closed_ms = st->backfill ? INT64_MIN : head_closed_before_s(st->head);
    closed_ms = closed_ms > INT64_MIN / 1000 ? closed_ms * 1000 : INT64_MIN;
    size_t n = 0;
    int rc = CT_OK;
    for (size_t i = 0; i < w->hpn && rc == CT_OK; i++) {
        w->hp[i].tsuid = w->tsb + (uintptr_t)w->hp[i].tsuid;
        if (w->hp[i].p.ts_ms < closed_ms) {
            rc = tsdb_batch_add(w->batch, layout, w->hp[i].tsuid, w->hp[i].tlen, &w->hp[i].p, err);
        } else {
            w->hrefs[n] = w->hrefs[i];
            w->hent[n] = w->hent[i];
            w->hp[n++] = w->hp[i];
        }
    }
    bool ids_ok = n == w->hpn; /* points taken out leave gaps in the ids: the log finds its own */
    w->hpn = n;
    if (rc == CT_OK && n > w->hrescap) {
        enum head_result *nr = realloc(w->hres, w->hpcap * sizeof(*nr));
        if (!nr) {
            rc = ct_err_set(err, CT_ENOMEM, "out of memory staging head points");
        } else {
            w->hres = nr;
            w->hrescap = w->hpcap;
        }
    }
    /* one log record for the batch, then one head append per lock hold of many points */
    if (rc == CT_OK) { /* no release is computed between the two (store_handoff) */
        pthread_rwlock_rdlock(&st->append_rw);
        rc = headlog_append_ids(st->hlog, w->hp, ids_ok ? w->hid : NULL, n,
                                store_wal_sync(st->durability), err);
        if (rc == CT_OK)
            rc = head_append_batch(st->head, w->hp, n, w->hrefs, w->hres, NULL, err);
        pthread_rwlock_unlock(&st->append_rw);
    }
    /* the series' refs back into their cache entries, unless the cache was emptied while the
     * write was built (its offsets may name other series now); a ref of a point not offered
     * (an error) is the one it had */
    if (w->cache.clears == w->stage_clears)
        for (size_t i = 0; i < n; i++)
            if (w->hent[i])
                ((struct store_entry *)(void *)(w->cache.arena + (w->hent[i] - 1) * 8))->href =
                    w->hrefs[i];
    for (size_t i = 0; i < n && rc == CT_OK; i++)
        if (w->hres[i] != HEAD_TAKEN)
            rc = tsdb_batch_add(w->batch, layout, w->hp[i].tsuid, w->hp[i].tlen, &w->hp[i].p, err);
    w->hpn = w->tsbn = 0;
    return rc;
}

/* Series admission under the memory bound (tsd/membudget.h): while the head is at or over
 * tsd.storage.head.max_bytes (checked once per write: a write may take it over by the new
 * series of one group, at most 16,384), a point that would go into the head (its hour not yet
 * handed off) of a series the head holds no points of is refused with INGEST_THROTTLED; series
 * it holds keep ingesting, points of handed-off hours go to the store as ever. Refused points
 * are counted in series_refused (tsd.memory.series_refused). */
static bool store_admit_series(struct tsdstore *st, struct ingest_batch *b, size_t i,
                               const uint8_t *ts, size_t tlen, int64_t ts_ms,
                               struct store_counts *k)
{
    struct dpcodec_point last;
    if (!k->head_full || ts_ms < k->head_open_ms ||
        head_last(st->head, ts, tlen, INT64_MIN, &last) == CT_OK)
        return true;
    char msg[200];
    snprintf(msg, sizeof(msg),
             "memory limit reached: the ingest head holds %.1f MiB of its %.1f MiB "
             "(tsd.storage.head.max_bytes); new series are refused until its hours are "
             "handed off",
             (double)k->head_bytes / 1048576.0, (double)st->head_bound / 1048576.0);
    ingest_batch_set_outcome(b, i, INGEST_THROTTLED, msg);
    k->failed++;
    k->refused++;
    return false;
}

/* Adds the points of b to w's schema batch (resolving new series), setting the outcome of
 * every point that cannot be written. Returns CT_OK or an error for the whole write. */
static int store_add_points(struct tsdstore *st, struct store_writer *w, struct ingest_batch *b,
                            struct store_counts *k, struct ct_err *err)
{
    const struct rowkey_layout *layout = tsdb_layout(st->tsdb);
    size_t n = ingest_batch_count(b);
    uint8_t tsuid[ROWKEY_MAX_TSUID];
    k->n += n;
    for (size_t i = 0; i < n; i++) {
        /* the lookups of later points start now: slot of i+8, entry of i+4 (hashes known) */
        if (i + 8 < n)
            store_cache_prefetch_slot(&w->cache, ingest_batch_series_hash(b, i + 8));
        if (i + 4 < n)
            store_cache_prefetch_entry(&w->cache, ingest_batch_series_hash(b, i + 4));
        struct ingest_point_brief pb;
        ingest_batch_point_brief(b, i, &pb);
        uint64_t h = pb.series_hash;
        size_t tlen = 0;
        struct store_entry *e = store_cache_get(&w->cache, pb.series_key, pb.series_key_len, h);
        const uint8_t *ts = NULL;
        bool fresh = !e;
        uint32_t salt = 0;
        if (e) {
            ts = store_entry_tsuid(e);
            tlen = e->tsuid_len;
            salt = e->salt;
        }
        struct ct_err perr; /* set by whatever fails (zeroing 260 bytes per point showed) */
        perr.code = CT_OK;
        perr.msg[0] = '\0';
        if (!ts && k->resolve_err.code != CT_OK) {
            ingest_batch_set_failure(b, i, INGEST_STORE_ERROR, &k->resolve_err);
            k->failed++;
            continue;
        }
        if (!ts) {
            struct ingest_point p; /* a new series: its names, for the UID lookups */
            ingest_batch_point(b, i, &p);
            int r = tsdb_series_resolve(st->tsdb, p.metric, p.tagk, p.tagv, p.ntags, tsuid,
                                        sizeof(tsuid), &tlen, &perr);
            if (r == CT_NOTFOUND) {
                ingest_batch_set_outcome(b, i, INGEST_UNKNOWN_METRIC, perr.msg);
                k->unknown++;
                k->failed++;
                continue;
            }
            if (r == CT_EINVAL || r == CT_ELIMIT) {
                ingest_batch_set_outcome(b, i, INGEST_ILLEGAL, perr.msg);
                k->failed++;
                continue;
            }
            if (r != CT_OK) {
                if (perr.code == CT_OK)
                    perr.code = r;
                ingest_batch_set_failure(b, i, INGEST_STORE_ERROR, &perr);
                k->failed++;
                k->resolve_err = perr;
                continue;
            }
            salt = rowkey_salt_bucket(layout, tsuid, tlen);
            e = store_cache_put(&w->cache, p.series_key, p.series_key_len, h, tsuid, tlen, salt);
            ts = tsuid;
        }
        if (k->head_full && !store_admit_series(st, b, i, ts, tlen, pb.ts_ms, k))
            continue;
        struct dpcodec_point dp = pb.value.kind == PUT_INT
                                      ? dpcodec_point_int(pb.ts_ms, pb.ms, pb.value.i)
                                      : dpcodec_point_real(pb.ts_ms, pb.ms, pb.value.d);
        /* a point of an hour the head has handed off goes straight to the batch, as
         * store_head_write would send it (the closed mark only rises) */
        int r = st->head && pb.ts_ms >= k->closed_ms
                    ? store_head_stage(w, e, ts, tlen, &dp, &perr)
                    : tsdb_batch_add_salted(w->batch, layout, salt, ts, tlen, &dp, &perr);
        if (r == CT_EINVAL) {
            ingest_batch_set_outcome(b, i, INGEST_ILLEGAL, perr.msg);
            k->failed++;
            continue;
        }
        if (r != CT_OK) {
            *err = perr;
            return r;
        }
        k->added++;
        if ((r = store_touch_point(st, w, e, ts, tlen, fresh, rowkey_base_hour_s(pb.ts_ms / 1000),
                                   err)) != CT_OK)
            return r;
    }
    return CT_OK;
}

int64_t tsdstore_request_ms(const struct tsdstore *st)
{
    return st->request_ms;
}

static int store_write_group(struct tsdstore *st, struct ingest_batch *const *b, size_t nb,
                             struct ct_err *err);

/* One group of batches under one request deadline on a remote backend: every UID lookup,
 * assignment, retry and write of the group together (a stalled backend fails the group's
 * points after one deadline, not one per call). */
int tsdstore_write(void *arg, struct ingest_batch *const *b, size_t nb, struct ct_err *err)
{
    struct tsdstore *st = arg;
    uint64_t prev =
        st->request_ms ? wc_request_deadline_begin(st->request_ms) : wc_request_deadline();
    int rc = store_write_group(st, b, nb, err);
    wc_request_deadline_set(prev);
    return rc;
}

static int store_write_group(struct tsdstore *st, struct ingest_batch *const *b, size_t nb,
                             struct ct_err *err)
{
    struct store_writer *w = store_writer_take(st, err);
    if (!w)
        return err->code;
    /* the uid table's generation (schema/uid.h), on its schedule: a table recreated or emptied
     * under the TSD drops the uid caches, and the series map with them (ids of a former life) */
    struct uid *u = tsdb_uid(st->tsdb);
    bool dropped = false;
    struct ct_err ge = {0};
    if (uid_generation_check(u, false, &dropped, &ge) != CT_OK) {
        static struct tlog_limit gen_lines = TLOG_LIMIT_INIT(60000);
        tlog_limited(&gen_lines, (int64_t)(clock_mono_ns() / 1000000), TLOG_WARN,
                     "cannot check the uid table's generation: %s", ge.msg);
    }
    if (dropped)
        tlog_warn("the uid table's generation changed (recreated or emptied): uid caches and the "
                  "series map dropped");
    uint64_t gen = atomic_load(&st->drop_gen) + uid_drop_count(u);
    if (w->cache.gen != gen) {
        store_cache_clear(&w->cache);
        w->cache.gen = gen;
    }
    tsdb_batch_reset(w->batch);
    w->ntouch = 0;
    w->touch_used = 0;
    if (++w->seq == 0) /* 0 is a new entry's: never a write's */
        w->seq = 1;
    w->hpn = w->tsbn = 0;
    w->hnser = 0;
    w->stage_clears = w->cache.clears;
    struct store_counts k;
    memset(&k, 0, sizeof(k));
    k.closed_ms = INT64_MIN;
    if (st->head) {
        int64_t closed = head_closed_before_s(st->head);
        k.closed_ms = closed > INT64_MIN / 1000 ? closed * 1000 : INT64_MIN;
    }
    if (st->head && st->head_bound) {
        k.head_bytes = head_bytes(st->head);
        k.head_full = k.head_bytes >= st->head_bound;
        k.head_open_ms = k.closed_ms; /* closed hours: no new backfill chunk over the bound */
    }
    if (st->backfill) /* every point is offered to the head */
        k.closed_ms = INT64_MIN;
    int rc = CT_OK;
    for (size_t i = 0; i < nb && rc == CT_OK; i++)
        rc = store_add_points(st, w, b[i], &k, err);
    if (rc == CT_OK && w->ntouch > 0) /* before the points: store_index_write */
        rc = store_index_write(st, w, err);
    if (rc == CT_OK && st->head && w->hpn > 0) {
        uint64_t t0 = clock_mono_ns();
        rc = store_head_write(st, w, err);
        tstats_add(TSTATS_WRITE_NS, clock_mono_ns() - t0);
    }
    if (rc == CT_OK && tsdb_batch_count(w->batch) > 0) {
        /* one store write for the whole group: one log record, cells in store order; under
         * tsd.storage.memstore_total_bytes the engine holds it while the memstores are over it
         * (the writers stop, the ingest pool fills and the TSD stops reading sockets) */
        uint64_t t0 = clock_mono_ns();
        rc = tsdb_batch_write(st->tsdb, w->batch, st->durability, err);
        tstats_add(TSTATS_WRITE_NS, clock_mono_ns() - t0);
        if (rc == CT_OK)
            atomic_fetch_add(&st->point_cells, tsdb_batch_count(w->batch));
        tstats_add(TSTATS_BATCHES_WRITTEN, 1);
    }
    if (rc == CT_OK && st->track)
        store_meta_track(st, w);
    if (rc != CT_OK) /* the cache's index hours were moved on for points not written */
        store_cache_clear(&w->cache);
    store_writer_give(st, w);
    if (rc == CT_OK && st->head && st->ticker_started)
        store_ticker_kick(st);
    if (k.unknown)
        tstats_add(TSTATS_UNKNOWN_METRICS, k.unknown);
    if (k.refused)
        atomic_fetch_add_explicit(&st->series_refused, k.refused, memory_order_relaxed);
    if (rc != CT_OK) {
        tstats_add(TSTATS_STORAGE_ERRORS, 1);
        tstats_add(TSTATS_POINTS_FAILED, k.n);
        static struct tlog_limit failed_lines = TLOG_LIMIT_INIT(10000);
        tlog_limited(&failed_lines, (int64_t)(clock_mono_ns() / 1000000), TLOG_ERROR,
                     "writing %zu datapoints failed: %s", k.added, err->msg);
        return rc;
    }
    tstats_add(TSTATS_POINTS_WRITTEN, k.added);
    tstats_add(TSTATS_POINTS_FAILED, k.failed);
    return CT_OK;
}

/* ---- stats ------------------------------------------------------------------------------------ */

struct store_stats_ctx {
    struct tsdstore *st;
    const char *host;
    tsdstore_stat_fn fn;
    void *arg;
    int64_t now;
};

static void store_stat(struct store_stats_ctx *x, const char *metric, uint64_t v, const char *tags)
{
    char val[32], tg[1400];
    snprintf(val, sizeof(val), "%llu", (unsigned long long)v);
    snprintf(tg, sizeof(tg), "host=%s%s%s", x->host, *tags ? " " : "", tags);
    x->fn(x->arg, metric, x->now, val, tg);
}

static int store_stats_table(void *arg, const char *name)
{
    struct store_stats_ctx *x = arg;
    struct wc_region_info *ri = NULL;
    size_t n = 0;
    struct ct_err err = {0};
    if (wc_table_regions(x->st->store, name, &ri, &n, &err) != CT_OK)
        return 0;
    char tags[400];
    for (size_t i = 0; i < n; i++) {
        snprintf(tags, sizeof(tags), "table=%s region=%llu", name, (unsigned long long)ri[i].id);
        store_stat(x, "tsd.storage.region.read_requests", ri[i].read_requests, tags);
        store_stat(x, "tsd.storage.region.write_requests", ri[i].write_requests, tags);
        store_stat(x, "tsd.storage.region.memstore_bytes", ri[i].memstore_bytes, tags);
        store_stat(x, "tsd.storage.region.store_files", ri[i].store_files, tags);
        store_stat(x, "tsd.storage.region.store_file_bytes", ri[i].store_file_bytes, tags);
    }
    wc_region_info_free(ri, n);
    return 0;
}

/* The memory bound's parts that grow with the series (docs/tsd.md, "Memory limit"), bytes
 * held now: tsd.memory.<part>_bytes, with the bound where there is one. */
static void store_memory_stats(struct store_stats_ctx *x)
{
    struct tsdstore *st = x->st;
    uint64_t series_cache = 0, meta = 0;
    pthread_mutex_lock(&st->mu); /* st->all only grows under it; writers stay until close */
    for (int i = 0; i < st->nall; i++) {
        series_cache += atomic_load_explicit(&st->all[i]->cache.held, memory_order_relaxed);
        meta += atomic_load_explicit(&st->all[i]->touch_held, memory_order_relaxed);
    }
    pthread_mutex_unlock(&st->mu);
    struct uid_stats us;
    uid_stats_get(tsdb_uid(st->tsdb), UID_METRIC, &us); /* the names' bytes: every kind */
    store_stat(x, "tsd.memory.limit_bytes", st->mem_limit, "");
    store_stat(x, "tsd.memory.head_bytes", st->head ? head_bytes(st->head) : 0, "");
    store_stat(x, "tsd.memory.head_bound_bytes", st->head ? st->head_bound : 0, "");
    store_stat(x, "tsd.memory.meta_bytes", meta, "");
    store_stat(x, "tsd.memory.uid_cache_bytes", us.cache_name_bytes, "");
    store_stat(x, "tsd.memory.series_cache_bytes", series_cache, "");
    struct wc_store_stats s;
    struct ct_err err = {0};
    if (wc_store_stats(st->store, &s, &err) == CT_OK) {
        store_stat(x, "tsd.memory.memstore_bytes", s.memstore_bytes, "");
        store_stat(x, "tsd.memory.block_cache_bytes", s.cache_bytes, "");
    }
    store_stat(x, "tsd.memory.series_refused",
               atomic_load_explicit(&st->series_refused, memory_order_relaxed), "");
}

void tsdstore_stats(struct tsdstore *st, const char *host, tsdstore_stat_fn fn, void *arg,
                    int64_t now_s)
{
    struct store_stats_ctx x = {st, host, fn, arg, now_s};
    struct ct_err err = {0};
    /* which store this TSD serves: value 1, the backend and its place in the tags */
    store_stat(&x, "tsd.storage.info", 1, st->info_tags);
    store_memory_stats(&x);
    {
        static const char *const kinds[] = {"metrics", "tagk", "tagv"};
        for (int k = 0; k < UID_NKINDS; k++) {
            struct uid_stats us;
            uid_stats_get(tsdb_uid(st->tsdb), (enum uid_kind)k, &us);
            char tags[64];
            snprintf(tags, sizeof(tags), "kind=%s", kinds[k]);
            store_stat(&x, "tsd.uid.cache-hit", us.cache_hits, tags);
            store_stat(&x, "tsd.uid.cache-miss", us.cache_misses, tags);
            store_stat(&x, "tsd.uid.cache-size", us.cache_entries, tags);
            store_stat(&x, "tsd.uid.ids-assigned", us.assigned, tags);
            if (k == UID_NKINDS - 1) /* the names' bytes are one figure for every kind */
                store_stat(&x, "tsd.uid.cache_name_bytes", us.cache_name_bytes, "");
        }
        uint64_t held = 0;
        pthread_mutex_lock(&st->mu); /* st->all only grows under it; writers stay until close */
        for (int i = 0; i < st->nall; i++)
            held += atomic_load_explicit(&st->all[i]->cache.held, memory_order_relaxed);
        pthread_mutex_unlock(&st->mu);
        store_stat(&x, "tsd.ingest.series_cache_bytes", held, "");
    }
    /* cells written to the data table for points: one per point without the head, one per
     * series-hour with it (and one per point it refused) */
    store_stat(&x, "tsd.storage.data.cells", atomic_load(&st->point_cells), "type=point");
    store_stat(&x, "tsd.storage.data.cells", atomic_load(&st->hour_cells), "type=hour");
    if (st->head) { /* the ingest head (docs/head.md) */
        size_t ns = 0, nc = 0;
        uint64_t np = 0;
        struct headlog_stats ls;
        head_counts(st->head, &ns, &nc, &np);
        memset(&ls, 0, sizeof(ls));
        if (st->hlog) /* NULL in a read-only TSD */
            headlog_get_stats(st->hlog, &ls);
        store_stat(&x, "tsd.head.bytes", head_bytes(st->head), "");
        store_stat(&x, "tsd.head.series", ns, "");
        store_stat(&x, "tsd.head.chunks", nc, "");
        store_stat(&x, "tsd.head.points", np, "");
        store_stat(&x, "tsd.head.log.bytes", ls.bytes, "");
        store_stat(&x, "tsd.head.log.open_hours", ls.open_hours, "");
    }
    struct wc_store_stats s;
    if (wc_store_stats(st->store, &s, &err) == CT_OK) {
        store_stat(&x, "tsd.storage.cache.hits", s.cache_hits, "");
        store_stat(&x, "tsd.storage.cache.misses", s.cache_misses, "");
        uint64_t tot = s.cache_hits + s.cache_misses;
        store_stat(&x, "tsd.storage.cache.hit_ratio_pct", tot ? s.cache_hits * 100 / tot : 0, "");
        store_stat(&x, "tsd.storage.cache.bytes", s.cache_bytes, "");
        store_stat(&x, "tsd.storage.cache.capacity_bytes", s.cache_capacity_bytes, "");
        store_stat(&x, "tsd.storage.flushes", s.flushes, "");
        store_stat(&x, "tsd.storage.compactions", s.minor_compactions, "type=minor");
        store_stat(&x, "tsd.storage.compactions", s.major_compactions, "type=major");
        store_stat(&x, "tsd.storage.splits", s.splits, "");
        store_stat(&x, "tsd.storage.wal.bytes", s.wal_bytes, "");
        store_stat(&x, "tsd.storage.wal.syncs", s.wal_syncs, "");
        store_stat(&x, "tsd.storage.regions", s.regions, "");
        /* writes the engine held while all memstores were over memstore_total_bytes */
        store_stat(&x, "tsd.ingest.memstore_waits", s.memstore_waits, "");
        /* the engine's error state: 1 while a background error refuses writes (transient=1:
         * retried every second, clears by itself), failures and recoveries so far, block
         * files set aside in quarantine/ */
        /* the head log's write errors are part of it (they refuse puts the same way):
         * active while either is, transient only if every active one is, the older age, the
         * sums of failures and recoveries */
        struct headlog_stats he;
        memset(&he, 0, sizeof(he));
        if (st->hlog)
            headlog_get_stats(st->hlog, &he);
        bool active = s.bg_error_active || he.error_active;
        bool transient = active && (!s.bg_error_active || s.bg_error_transient) &&
                         (!he.error_active || he.error_transient);
        store_stat(&x, "tsd.storage.error.active", active,
                   transient ? "transient=1" : "transient=0");
        store_stat(&x, "tsd.storage.error.age_ms",
                   s.bg_error_since_ms > he.error_age_ms ? s.bg_error_since_ms : he.error_age_ms,
                   "");
        store_stat(&x, "tsd.storage.error.failures", s.bg_errors + he.errors, "");
        store_stat(&x, "tsd.storage.error.recoveries", s.bg_recoveries + he.recoveries, "");
        store_stat(&x, "tsd.storage.quarantined_files", s.quarantined_files, "");
    }
    if (wc_table_list(st->store, store_stats_table, &x, &err) != CT_OK) {
        /* stats are best effort: a failing list leaves the per-region lines out */
    }
}
