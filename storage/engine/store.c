/* store.c - the embedded engine's store: open (catalog, orphan cleanup, log replay), close
 * (flush everything), namespaces, table administration, region statistics, table handles, the
 * background job queue and its worker threads. Implements every op of struct wc_backend_ops
 * (the data ops live in write.c and scan.c, maintenance in maint.c).
 *
 * Files in the data directory: LOCK (flock'ed while open: exclusively by a writer, shared by a
 * read-only open), CATALOG (catalog_format.h), wal/
 * (wal_format.h segments), sst/<id>.sst (sst_format.h block files).
 *
 * Invariants: (1) every catalog change is persisted (catalog_save) before the call returns, and
 * memory and disk agree after a failed save only if the change is undone; (2) a table or
 * region that was dropped, truncated or split away is marked (dropped / dead) and freed by its
 * last reference, so background jobs and open handles never touch freed memory; (3) the store
 * deletes only what it proves is garbage: block files it replaced itself (after the catalog that
 * stops listing them is durable), its own temporary files, released log segments. Block files
 * the catalog does not list are moved to quarantine/ at open; a file the catalog lists that is
 * missing or not the file it recorded, or a CATALOG missing beside block files or log segments,
 * stops the open with a message naming it (docs/engine-files.md, "Safety"). Locking:
 * engine_int.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/clock.h"
#include "storage/engine/catalog_format.h"
#include "storage/engine/eio.h"
#include "storage/engine/engine_int.h"

/* ---- small helpers ----------------------------------------------------------------------- */

static int bcmp_(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
    return cell_bytes_cmp(a, al, b, bl);
}

void estore_file_path(const struct estore *s, uint64_t id, char *buf, size_t size)
{
    snprintf(buf, size, "%s/sst/%016llx.sst", s->dir, (unsigned long long)id);
}

void engine_failpoint(struct estore *s, const char *name)
{
    if (s->failpoint && !strcmp(s->failpoint, name)) {
        if (s->failpoint_gate && access(s->failpoint_gate, F_OK) != 0)
            return; /* not opened yet */
        if (s->failpoint_kill)
            raise(SIGKILL);
        _exit(0);
    }
}

static int64_t mono_ms(void)
{
    return (int64_t)(clock_mono_ns() / 1000000);
}

/* Background errors (docs/engine.md, "Errors that clear"): the first one is kept and every
 * write returns it; a transient one (a failed flush, compaction, catalog write or log release:
 * disk full, I/O error) is retried by estore_recover() about every second and cleared when the
 * retry succeeds; a fatal one (a batch half inserted into the memstores) stays until restart.
 * Reports go through log_fn rate-limited: the first, then at most one line per
 * ENGINE_ERR_LOG_MS with the count of failures since. REQUIRES err_mu for the fields. */
#define ENGINE_ERR_LOG_MS 10000

static void record_bg_error(struct estore *s, const struct ct_err *err, bool transient)
{
    pthread_mutex_lock(&s->err_mu);
    s->n_bg_errors++;
    s->bg_err_unlogged++;
    bool first = s->bg_err.code == CT_OK;
    if (first) {
        s->bg_err = *err;
        if (s->bg_err.code == CT_OK)
            s->bg_err.code = CT_EIO;
        s->bg_err_transient = transient;
        s->bg_err_since_ms = mono_ms();
        atomic_store(&s->has_bg_err, true);
    } else if (!transient) {
        s->bg_err_transient = false;
    }
    bool log = first || mono_ms() - s->bg_err_logged_ms >= ENGINE_ERR_LOG_MS;
    uint64_t n = s->bg_err_unlogged;
    if (log) {
        s->bg_err_logged_ms = mono_ms();
        s->bg_err_unlogged = 0;
    }
    bool tr = s->bg_err_transient;
    pthread_mutex_unlock(&s->err_mu);
    if (log)
        estore_logf(s, "background error (%s%llu failure%s since the last report): %s",
                    tr ? "retried every second, writes refused until it clears; " : "fatal; ",
                    (unsigned long long)n, n == 1 ? "" : "s", err->msg);
}

void estore_set_bg_error(struct estore *s, const struct ct_err *err)
{
    record_bg_error(s, err, false);
}

void estore_set_bg_error_transient(struct estore *s, const struct ct_err *err)
{
    record_bg_error(s, err, true);
}

/* Worker threads, about every second: lifts a log error that left nothing inconsistent (a full
 * disk while extending a segment) and retries what a transient background error stopped: the
 * catalog write and a flush of every region. Success clears the error. */
static void estore_recover(struct estore *s)
{
    struct ct_err e;
    if (s->wal) {
        int had = wal_clear_error(s->wal, &e);
        (void)had; /* CT_OK also when there was nothing to lift */
    }
    if (!atomic_load(&s->has_bg_err))
        return;
    pthread_mutex_lock(&s->err_mu);
    bool tr = s->bg_err_transient;
    int64_t since = s->bg_err_since_ms;
    pthread_mutex_unlock(&s->err_mu);
    if (!tr)
        return;
    pthread_mutex_lock(&s->cat_mu);
    int rc = catalog_save(s, &e);
    pthread_mutex_unlock(&s->cat_mu);
    pthread_mutex_lock(&s->cat_mu);
    size_t nt = s->ntables;
    struct etable **tv = calloc(nt ? nt : 1, sizeof(*tv));
    for (size_t i = 0; tv && i < nt; i++) {
        tv[i] = s->tables[i];
        etable_ref(tv[i]);
    }
    pthread_mutex_unlock(&s->cat_mu);
    if (!tv)
        rc = ct_err_set(&e, CT_ENOMEM, "out of memory retrying a background error");
    for (size_t i = 0; tv && i < nt; i++) {
        pthread_rwlock_rdlock(&tv[i]->map_lock);
        size_t nr = tv[i]->nregions;
        struct eregion **rv = calloc(nr ? nr : 1, sizeof(*rv));
        for (size_t r = 0; rv && r < nr; r++) {
            rv[r] = tv[i]->regions[r];
            eregion_ref(rv[r]);
        }
        pthread_rwlock_unlock(&tv[i]->map_lock);
        for (size_t r = 0; rv && r < nr; r++) {
            if (rc == CT_OK && !atomic_load(&tv[i]->dropped))
                rc = engine_flush_region(s, tv[i], rv[r], &e);
            eregion_unref(rv[r]);
        }
        if (!rv)
            rc = ct_err_set(&e, CT_ENOMEM, "out of memory retrying a background error");
        free(rv);
        etable_unref(tv[i]);
    }
    free(tv);
    if (rc != CT_OK) {
        estore_set_bg_error_transient(s, &e); /* counted, rate-limited */
        return;
    }
    pthread_mutex_lock(&s->err_mu);
    struct ct_err old = s->bg_err;
    bool clear = s->bg_err_transient;
    if (clear) {
        ct_err_clear(&s->bg_err);
        atomic_store(&s->has_bg_err, false);
        s->n_bg_recoveries++;
        s->bg_err_unlogged = 0;
    }
    pthread_mutex_unlock(&s->err_mu);
    if (clear) {
        estore_logf(s, "background error cleared after %lld ms, writes accepted again: %s",
                    (long long)(mono_ms() - since), old.msg);
        estore_release_wal(s);
    }
}

int estore_check_writable(struct estore *s, struct ct_err *err)
{
    if (s->opt.read_only)
        return ct_err_set(err, CT_EINVAL, "the store was opened read-only");
    return estore_check_bg_error(s, err);
}

int estore_check_bg_error(struct estore *s, struct ct_err *err)
{
    if (!atomic_load_explicit(&s->has_bg_err, memory_order_acquire))
        return CT_OK;
    pthread_mutex_lock(&s->err_mu);
    int rc = s->bg_err.code;
    if (rc != CT_OK) {
        *err = s->bg_err;
        ct_err_prefix(err, "background error");
    }
    pthread_mutex_unlock(&s->err_mu);
    return rc;
}

int estore_snapshot_acquire(struct estore *s, uint64_t *snap, struct ct_err *err)
{
    pthread_mutex_lock(&s->snap_mu);
    if (s->nsnaps == s->snaps_cap) {
        size_t cap = s->snaps_cap ? s->snaps_cap * 2 : 16;
        uint64_t *nv = realloc(s->snaps, cap * sizeof(*nv));
        if (!nv) {
            pthread_mutex_unlock(&s->snap_mu);
            return ct_err_set(err, CT_ENOMEM, "out of memory registering a snapshot");
        }
        s->snaps = nv;
        s->snaps_cap = cap;
    }
    *snap = atomic_load(&s->visible_seq);
    s->snaps[s->nsnaps++] = *snap;
    pthread_mutex_unlock(&s->snap_mu);
    return CT_OK;
}

void estore_snapshot_release(struct estore *s, uint64_t snap)
{
    pthread_mutex_lock(&s->snap_mu);
    for (size_t i = 0; i < s->nsnaps; i++)
        if (s->snaps[i] == snap) {
            s->snaps[i] = s->snaps[--s->nsnaps];
            break;
        }
    pthread_mutex_unlock(&s->snap_mu);
}

uint64_t estore_read_point(struct estore *s)
{
    pthread_mutex_lock(&s->snap_mu);
    uint64_t rp = atomic_load(&s->visible_seq);
    for (size_t i = 0; i < s->nsnaps; i++)
        if (s->snaps[i] < rp)
            rp = s->snaps[i];
    pthread_mutex_unlock(&s->snap_mu);
    return rp;
}

uint64_t etable_flush_bytes(const struct estore *s, const struct etable *t)
{
    uint64_t b = atomic_load_explicit(&t->memstore_flushsize, memory_order_relaxed);
    return b ? b : s->opt.memstore_flush_bytes;
}

size_t etable_region_index(const struct etable *t, const uint8_t *row, size_t len)
{
    /* last region whose start <= row */
    size_t lo = 0, hi = t->nregions;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (bcmp_(t->regions[mid]->start, t->regions[mid]->start_len, row, len) <= 0)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

int etable_family_index(const struct etable *t, const uint8_t *name, size_t len)
{
    for (size_t i = 0; i < t->nfams; i++)
        if (strlen(t->fams[i].name) == len && memcmp(t->fams[i].name, name, len) == 0)
            return (int)i;
    return -1;
}

/* ---- regions and tables ------------------------------------------------------------------ */

static uint64_t efam_memstore_bytes(const struct efam *f)
{
    uint64_t b = f->active ? memstore_bytes(f->active) : 0;
    for (size_t k = 0; k < f->nfrozen; k++)
        b += memstore_bytes(f->frozen[k]);
    return b;
}

uint64_t eregion_memstore_bytes(const struct eregion *r)
{
    uint64_t b = 0;
    for (size_t f = 0; f < r->nfams; f++)
        b += efam_memstore_bytes(&r->fams[f]);
    return b;
}

void estore_logf(const struct estore *s, const char *fmt, ...)
{
    if (!s->opt.log_fn)
        return;
    char msg[14000]; /* room for two paths and a reason */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    s->opt.log_fn(s->opt.log_arg, msg);
}

void estore_memstore_sub(struct estore *s, uint64_t bytes)
{
    /* every byte taken off was added when it was inserted or listed (test_engine_memtotal checks
     * the total against the regions' sum); were that ever wrong, the total stops at 0 rather than
     * wrapping to a huge figure that would hold every write */
    uint64_t was = atomic_load_explicit(&s->memstore_total, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&s->memstore_total, &was,
                                                  was >= bytes ? was - bytes : 0,
                                                  memory_order_relaxed, memory_order_relaxed)) {
    }
}

static void efam_release(struct efam *f, bool obsolete_files)
{
    memstore_unref(f->active);
    for (size_t i = 0; i < f->nfrozen; i++)
        memstore_unref(f->frozen[i]);
    free(f->frozen);
    for (size_t i = 0; i < f->nfiles; i++) {
        if (obsolete_files)
            sst_mark_obsolete(f->files[i].sst);
        sst_unref(f->files[i].sst);
    }
    free(f->files);
    memset(f, 0, sizeof(*f));
}

int eregion_new(uint64_t id, const uint8_t *start, size_t start_len, const uint8_t *end,
                size_t end_len, size_t nfams, uint64_t flushed_upto, uint32_t bloom_bits,
                struct eregion **out, struct ct_err *err)
{
    struct eregion *r = calloc(1, sizeof(*r));
    if (!r)
        return ct_err_set(err, CT_ENOMEM, "out of memory creating a region");
    atomic_init(&r->refs, 1);
    r->id = id;
    r->start = malloc(start_len + 1);
    r->end = malloc(end_len + 1);
    r->fams = calloc(nfams ? nfams : 1, sizeof(*r->fams));
    r->nfams = nfams;
    pthread_mutex_init(&r->mu, NULL);
    pthread_mutex_init(&r->maint_mu, NULL);
    pthread_cond_init(&r->fence_cv, NULL);
    if (!r->start || !r->end || !r->fams) {
        eregion_unref(r);
        return ct_err_set(err, CT_ENOMEM, "out of memory creating a region");
    }
    if (start_len)
        memcpy(r->start, start, start_len);
    r->start_len = start_len;
    if (end_len)
        memcpy(r->end, end, end_len);
    r->end_len = end_len;
    for (size_t f = 0; f < nfams; f++) {
        r->fams[f].flushed_upto = flushed_upto;
        int rc = memstore_new(&r->fams[f].active, bloom_bits, err);
        if (rc != CT_OK) {
            eregion_unref(r);
            return rc;
        }
    }
    *out = r;
    return CT_OK;
}

void eregion_ref(struct eregion *r)
{
    atomic_fetch_add(&r->refs, 1);
}

void eregion_unref(struct eregion *r)
{
    if (!r || atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    if (r->fams)
        for (size_t f = 0; f < r->nfams; f++)
            efam_release(&r->fams[f], false);
    free(r->fams);
    free(r->start);
    free(r->end);
    pthread_mutex_destroy(&r->mu);
    pthread_mutex_destroy(&r->maint_mu);
    pthread_cond_destroy(&r->fence_cv);
    free(r);
}

void etable_ref(struct etable *t)
{
    atomic_fetch_add(&t->refs, 1);
}

void etable_unref(struct etable *t)
{
    if (!t || atomic_fetch_sub(&t->refs, 1) != 1)
        return;
    for (size_t i = 0; i < t->nregions; i++)
        eregion_unref(t->regions[i]);
    free(t->regions);
    free(t->fams);
    free(t->hooks);
    pthread_rwlock_destroy(&t->map_lock);
    pthread_rwlock_destroy(&t->maint_lock);
    free(t);
}

static struct etable *etable_alloc(void)
{
    struct etable *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    atomic_init(&t->refs, 1);
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&t->map_lock, &ra);
    pthread_rwlock_init(&t->maint_lock, &ra);
    pthread_rwlockattr_destroy(&ra);
    return t;
}

struct etable *etable_new_empty(void)
{
    return etable_alloc();
}

/* Index of table `name` in s->tables or -1. REQUIRES cat_mu. */
long find_table(const struct estore *s, const char *name)
{
    for (size_t i = 0; i < s->ntables; i++)
        if (!strcmp(s->tables[i]->name, name))
            return (long)i;
    return -1;
}

/* Looks a table up and returns a reference. */
static int get_table(struct estore *s, const char *name, struct etable **out, struct ct_err *err)
{
    pthread_mutex_lock(&s->cat_mu);
    long i = find_table(s, name);
    if (i >= 0) {
        etable_ref(s->tables[i]);
        *out = s->tables[i];
    }
    pthread_mutex_unlock(&s->cat_mu);
    if (i < 0)
        return ct_err_set(err, CT_NOTFOUND, "Table %s does not exist.", name);
    return CT_OK;
}

/* ---- background jobs ---------------------------------------------------------------------- */

void estore_queue_job(struct estore *s, enum ejob_kind kind, struct etable *t, struct eregion *r,
                      bool major)
{
    struct ejob *j = calloc(1, sizeof(*j));
    if (!j)
        return; /* the work is retried at the next trigger */
    j->kind = kind;
    j->table = t;
    j->region = r;
    j->major = major;
    etable_ref(t);
    if (r)
        eregion_ref(r);
    pthread_mutex_lock(&s->bg_mu);
    if (s->stopping || s->nthreads == 0) {
        pthread_mutex_unlock(&s->bg_mu);
        /* stopping: close flushes everything itself (callers may hold r->mu: not touched) */
        eregion_unref(r);
        etable_unref(t);
        free(j);
        return;
    }
    /* the same pending job (kind, region, major) is not queued twice */
    for (struct ejob *q = s->jobs_head; q; q = q->next)
        if (q->kind == kind && q->region == r && q->table == t && q->major == major) {
            pthread_mutex_unlock(&s->bg_mu);
            eregion_unref(r);
            etable_unref(t);
            free(j);
            return;
        }
    if (s->jobs_tail)
        s->jobs_tail->next = j;
    else
        s->jobs_head = j;
    s->jobs_tail = j;
    pthread_cond_signal(&s->bg_cv);
    pthread_mutex_unlock(&s->bg_mu);
}

static void free_job(struct ejob *j)
{
    eregion_unref(j->region);
    etable_unref(j->table);
    free(j);
}

static void schedule_major(struct estore *s)
{
    int64_t p = s->opt.major_compaction_period_ms;
    /* +-50% jitter */
    double f = 0.5 + (double)(clock_mono_ns() % 1000) / 1000.0;
    s->next_major_ms = mono_ms() + (int64_t)((double)p * f);
}

static void queue_major_all(struct estore *s)
{
    pthread_mutex_lock(&s->cat_mu);
    for (size_t i = 0; i < s->ntables; i++) {
        struct etable *t = s->tables[i];
        if (!t->compaction_enabled || !atomic_load(&t->enabled))
            continue;
        for (size_t r = 0; r < t->nregions; r++)
            estore_queue_job(s, EJOB_COMPACT, t, t->regions[r], true);
    }
    pthread_mutex_unlock(&s->cat_mu);
}

/* When the log holds many segments, flushes the region whose memstore holds its oldest edit
 * so the log can be trimmed (docs/storage-contract.md, "Flush, compaction and split policy": "flush
 * ... when the WAL must be trimmed"; HBase's maxlogs); sooner when that region is idle: an idle
 * table's small memstore would otherwise pin every segment written since its last edit
 * (WAL_PINNED_IDLE_SEGMENTS closed segments, the region without a write for ENGINE_IDLE_CHECKS
 * checks ~1 s apart). Flushes memstores whose first edit is an hour old, and those of a region
 * without a write for opt.quiet_flush_ms. Once everything is flushed the log keeps no segment at
 * all (the active one is released too, wal.c). */
#define WAL_MAX_SEGMENTS         8
#define WAL_PINNED_IDLE_SEGMENTS 2
#define ENGINE_IDLE_CHECKS       2
#define ENGINE_IDLE_FLUSH_MS     (3600 * 1000)
#define ENGINE_MEM_CHECK_MS      100 /* period of the configured memstore ceiling's check */

/* All memstores of the store together: past opt.memstore_total_bytes, or when that is 0
 * max(4 x flush size, 256 MiB), the largest regions are flushed (HBase bounds memstores
 * globally too, at 40% of the heap). */
static uint64_t global_memstore_ceiling(const struct estore *s)
{
    if (s->opt.memstore_total_bytes)
        return s->opt.memstore_total_bytes;
    uint64_t limit = 4 * (uint64_t)s->opt.memstore_flush_bytes;
    return limit < (256ull << 20) ? 256ull << 20 : limit;
}

void estore_global_memstore_limit(struct estore *s)
{
    uint64_t limit = global_memstore_ceiling(s);
    /* the sum below leaves out regions with a flush queued, so it is at most this one: under
     * the ceiling here, nothing would be queued (the periodic check costs one load) */
    if (atomic_load_explicit(&s->memstore_total, memory_order_relaxed) <= limit)
        return;
    /* one caller at a time: writers waiting for room (write.c) all call it; a concurrent call
     * would queue the same flushes */
    if (atomic_exchange(&s->mem_limit_busy, true))
        return;
    uint64_t total = 0;
    pthread_mutex_lock(&s->cat_mu);
    for (int round = 0; round < 64; round++) {
        struct etable *bt = NULL;
        struct eregion *br = NULL;
        uint64_t biggest = 0;
        total = 0;
        for (size_t i = 0; i < s->ntables; i++) {
            struct etable *t = s->tables[i];
            for (size_t r = 0; r < t->nregions; r++) {
                struct eregion *rg = t->regions[r];
                pthread_mutex_lock(&rg->mu);
                uint64_t b = eregion_memstore_bytes(rg);
                if (!rg->flush_queued && b > biggest) {
                    biggest = b;
                    bt = t;
                    br = rg;
                }
                if (rg->flush_queued)
                    b = 0; /* about to go */
                pthread_mutex_unlock(&rg->mu);
                total += b;
            }
        }
        if (total <= limit || !br)
            break;
        pthread_mutex_lock(&br->mu);
        br->flush_queued = true;
        pthread_mutex_unlock(&br->mu);
        estore_queue_job(s, EJOB_FLUSH, bt, br, false);
    }
    pthread_mutex_unlock(&s->cat_mu);
    atomic_store(&s->mem_limit_busy, false);
}

static void trim_wal(struct estore *s)
{
    if (!s->wal)
        return;
    struct wal_stats ws;
    wal_get_stats(s->wal, &ws);
    struct etable *bt = NULL;
    struct eregion *br = NULL;
    uint64_t best = UINT64_MAX;
    int best_idle = 0;
    bool too_long = ws.segments > WAL_MAX_SEGMENTS;
    bool pinned = ws.segments > WAL_PINNED_IDLE_SEGMENTS; /* closed segments + the active one */
    int64_t now = mono_ms();
    pthread_mutex_lock(&s->cat_mu);
    for (size_t i = 0; i < s->ntables; i++) {
        struct etable *t = s->tables[i];
        for (size_t r = 0; r < t->nregions; r++) {
            struct eregion *rg = t->regions[r];
            pthread_mutex_lock(&rg->mu);
            uint64_t w = atomic_load_explicit(&rg->writes, memory_order_relaxed);
            if (w != rg->trim_writes_seen || !rg->trim_quiet_since_ms) {
                rg->trim_writes_seen = w;
                rg->trim_idle_checks = 0;
                rg->trim_quiet_since_ms = now | 1;
            } else if (rg->trim_idle_checks < ENGINE_IDLE_CHECKS) {
                rg->trim_idle_checks++;
            }
            /* periodic flush of memstores holding edits for an hour (HBase's default), and of
             * a quiet region's (no write for opt.quiet_flush_ms): its block files then hold
             * all its cells and the log segments they pinned can go */
            if (rg->first_edit_mono_ms && !rg->flush_queued &&
                (now - rg->first_edit_mono_ms > ENGINE_IDLE_FLUSH_MS ||
                 (s->opt.quiet_flush_ms > 0 &&
                  now - rg->trim_quiet_since_ms >= s->opt.quiet_flush_ms))) {
                rg->flush_queued = true;
                estore_queue_job(s, EJOB_FLUSH, t, rg, false);
            }
            if (!too_long && !pinned) {
                pthread_mutex_unlock(&rg->mu);
                continue;
            }
            for (size_t f = 0; f < rg->nfams; f++) {
                uint64_t m = memstore_min_seq(rg->fams[f].active);
                for (size_t k = 0; k < rg->fams[f].nfrozen; k++)
                    if (memstore_min_seq(rg->fams[f].frozen[k]) < m)
                        m = memstore_min_seq(rg->fams[f].frozen[k]);
                if (m < best && !rg->flush_queued) {
                    best = m;
                    best_idle = rg->trim_idle_checks;
                    bt = t;
                    br = rg;
                }
            }
            pthread_mutex_unlock(&rg->mu);
        }
    }
    if (br && (too_long || best_idle >= ENGINE_IDLE_CHECKS)) {
        pthread_mutex_lock(&br->mu);
        br->flush_queued = true;
        pthread_mutex_unlock(&br->mu);
        estore_queue_job(s, EJOB_FLUSH, bt, br, false);
    }
    pthread_mutex_unlock(&s->cat_mu);
    if (!s->opt.memstore_total_bytes) /* else worker_main checks it more often */
        estore_global_memstore_limit(s);
}

static void *worker_main(void *arg)
{
    pthread_setname_np(pthread_self(), "ct-flush");
    struct estore *s = arg;
    pthread_mutex_lock(&s->bg_mu);
    while (!s->stopping) {
        struct ejob *j = s->jobs_head;
        if (j) {
            s->jobs_head = j->next;
            if (!s->jobs_head)
                s->jobs_tail = NULL;
            s->running_jobs++;
            pthread_mutex_unlock(&s->bg_mu);
            engine_run_job(s, j);
            free_job(j);
            pthread_mutex_lock(&s->bg_mu);
            s->running_jobs--;
            pthread_cond_broadcast(&s->done_cv);
            continue;
        }
        if (atomic_load(&s->has_bg_err) && mono_ms() >= s->next_recover_ms) {
            s->next_recover_ms = mono_ms() + 1000;
            pthread_mutex_unlock(&s->bg_mu);
            estore_recover(s);
            pthread_mutex_lock(&s->bg_mu);
            continue;
        }
        if (s->wal && mono_ms() >= s->next_wal_check_ms) { /* a log that ran out of space */
            s->next_wal_check_ms = mono_ms() + 1000;
            pthread_mutex_unlock(&s->bg_mu);
            struct ct_err e;
            if (wal_clear_error(s->wal, &e) != CT_OK) {
                /* a failed write or sync: stays (the writes report it) */
            }
            /* log accounting: a segment created since the last catalog write gets recorded
             * (catalog_format.h wal_next), so deleting it later is caught at open */
            pthread_mutex_lock(&s->cat_mu);
            if (wal_next_num(s->wal) > s->cat_wal_next && catalog_save(s, &e) != CT_OK) {
                pthread_mutex_unlock(&s->cat_mu);
                ct_err_prefix(&e, "recording a new log segment");
                estore_set_bg_error_transient(s, &e);
            } else {
                pthread_mutex_unlock(&s->cat_mu);
            }
            pthread_mutex_lock(&s->bg_mu);
            continue;
        }
        if (mono_ms() >= s->next_trim_check_ms) {
            s->next_trim_check_ms = mono_ms() + 1000;
            pthread_mutex_unlock(&s->bg_mu);
            trim_wal(s);
            pthread_mutex_lock(&s->bg_mu);
            continue;
        }
        /* a configured ceiling is a memory bound: checked every ENGINE_MEM_CHECK_MS */
        if (s->opt.memstore_total_bytes && mono_ms() >= s->next_mem_check_ms) {
            s->next_mem_check_ms = mono_ms() + ENGINE_MEM_CHECK_MS;
            pthread_mutex_unlock(&s->bg_mu);
            estore_global_memstore_limit(s);
            pthread_mutex_lock(&s->bg_mu);
            continue;
        }
        if (s->opt.major_compaction_period_ms > 0 && mono_ms() >= s->next_major_ms) {
            schedule_major(s);
            pthread_mutex_unlock(&s->bg_mu);
            queue_major_all(s);
            pthread_mutex_lock(&s->bg_mu);
            continue;
        }
        struct timespec ts =
            clock_realtime_in(s->opt.memstore_total_bytes ? ENGINE_MEM_CHECK_MS : 1000);
        pthread_cond_timedwait(&s->bg_cv, &s->bg_mu, &ts);
    }
    pthread_mutex_unlock(&s->bg_mu);
    return NULL;
}

/* ---- log release -------------------------------------------------------------------------- */

void estore_release_wal(struct estore *s)
{
    uint64_t upto = atomic_load(&s->visible_seq);
    pthread_mutex_lock(&s->cat_mu);
    for (size_t i = 0; i < s->ntables; i++) {
        struct etable *t = s->tables[i];
        for (size_t r = 0; r < t->nregions; r++) {
            struct eregion *rg = t->regions[r];
            pthread_mutex_lock(&rg->mu);
            for (size_t f = 0; f < rg->nfams; f++) {
                struct efam *ef = &rg->fams[f];
                uint64_t m = memstore_min_seq(ef->active);
                for (size_t k = 0; k < ef->nfrozen; k++)
                    if (memstore_min_seq(ef->frozen[k]) < m)
                        m = memstore_min_seq(ef->frozen[k]);
                if (m != UINT64_MAX && m - 1 < upto)
                    upto = m - 1;
            }
            pthread_mutex_unlock(&rg->mu);
        }
    }
    struct ct_err e;
    if (!s->wal) {
        pthread_mutex_unlock(&s->cat_mu);
        return;
    }
    /* log accounting (catalog_format.h): the catalog names the oldest segment still needed
     * before any segment at or above the old floor goes */
    uint64_t floor = wal_oldest_needed(s->wal, upto);
    if (floor > s->wal_floor) {
        uint64_t old = s->wal_floor;
        s->wal_floor = floor;
        if (catalog_save(s, &e) != CT_OK) {
            s->wal_floor = old;
            pthread_mutex_unlock(&s->cat_mu);
            ct_err_prefix(&e, "releasing log segments");
            estore_set_bg_error_transient(s, &e);
            return;
        }
    }
    uint64_t below = s->wal_floor;
    pthread_mutex_unlock(&s->cat_mu);
    if (wal_release_before(s->wal, upto, below, &e) != CT_OK)
        estore_set_bg_error_transient(s, &e);
}

/* ---- namespaces --------------------------------------------------------------------------- */

long find_ns(const struct estore *s, const char *ns)
{
    for (size_t i = 0; i < s->nnamespaces; i++)
        if (!strcmp(s->namespaces[i], ns))
            return (long)i;
    return -1;
}

size_t engine_ns_blob_len(const char *blob)
{
    size_t n = strlen(blob) + 1;
    while (blob[n]) {              /* a key ... */
        n += strlen(blob + n) + 1; /* ... and its value */
        n += strlen(blob + n) + 1;
    }
    return n + 1;
}

/* Builds a namespace blob from a name and npairs key/value strings. */
static char *ns_blob_new(const char *ns, const char *const *kv, size_t npairs)
{
    size_t n = strlen(ns) + 2;
    for (size_t i = 0; i < 2 * npairs; i++)
        n += strlen(kv[i]) + 1;
    char *b = malloc(n);
    if (!b)
        return NULL;
    size_t at = 0;
    memcpy(b, ns, strlen(ns) + 1);
    at += strlen(ns) + 1;
    for (size_t i = 0; i < 2 * npairs; i++) {
        memcpy(b + at, kv[i], strlen(kv[i]) + 1);
        at += strlen(kv[i]) + 1;
    }
    b[at] = '\0';
    return b;
}

static int add_ns_config(struct estore *s, const char *ns, const char *const *kv, size_t npairs,
                         struct ct_err *err)
{
    char *d = ns_blob_new(ns, kv, npairs);
    char **nv = realloc(s->namespaces, (s->nnamespaces + 1) * sizeof(char *));
    if (!d || !nv) {
        free(d);
        if (nv)
            s->namespaces = nv;
        return ct_err_set(err, CT_ENOMEM, "out of memory adding namespace %s", ns);
    }
    s->namespaces = nv;
    size_t i = s->nnamespaces;
    while (i > 0 && strcmp(s->namespaces[i - 1], ns) > 0) {
        s->namespaces[i] = s->namespaces[i - 1];
        i--;
    }
    s->namespaces[i] = d;
    s->nnamespaces++;
    return CT_OK;
}

static int add_ns(struct estore *s, const char *ns, struct ct_err *err)
{
    return add_ns_config(s, ns, NULL, 0, err);
}

static void remove_ns(struct estore *s, long i)
{
    free(s->namespaces[i]);
    memmove(&s->namespaces[i], &s->namespaces[i + 1],
            (s->nnamespaces - (size_t)i - 1) * sizeof(char *));
    s->nnamespaces--;
}

static int op_namespace_create_config(struct wc_store *ws, const char *ns, const char *const *kv,
                                      size_t npairs, struct ct_err *err)
{
    struct estore *s = estore_of(ws);
    if (s->opt.read_only)
        return ct_err_set(err, CT_EINVAL, "the store was opened read-only");
    pthread_mutex_lock(&s->cat_mu);
    int rc;
    if (find_ns(s, ns) >= 0) {
        rc = ct_err_set(err, CT_EEXIST, "namespace %s already exists", ns);
    } else if ((rc = add_ns_config(s, ns, kv, npairs, err)) == CT_OK &&
               (rc = catalog_save(s, err)) != CT_OK) {
        remove_ns(s, find_ns(s, ns));
    }
    pthread_mutex_unlock(&s->cat_mu);
    return rc;
}

static int op_namespace_create(struct wc_store *ws, const char *ns, struct ct_err *err)
{
    return op_namespace_create_config(ws, ns, NULL, 0, err);
}

static int op_namespace_get_config(struct wc_store *ws, const char *ns, char ***out, size_t *npairs,
                                   struct ct_err *err)
{
    struct estore *s = estore_of(ws);
    pthread_mutex_lock(&s->cat_mu);
    long i = find_ns(s, ns);
    int rc = CT_OK;
    if (i < 0) {
        rc = CT_NOTFOUND;
        goto out;
    }
    const char *b = s->namespaces[i];
    size_t at = strlen(b) + 1, n = 0;
    for (size_t k = at; b[k]; n++) {
        k += strlen(b + k) + 1;
        k += strlen(b + k) + 1;
    }
    if (n == 0)
        goto out;
    char **kv = calloc(2 * n, sizeof(char *));
    for (size_t j = 0; kv && j < 2 * n; j++) {
        if (!(kv[j] = strdup(b + at))) {
            wc_namespace_config_free(kv, n);
            kv = NULL;
            break;
        }
        at += strlen(b + at) + 1;
    }
    if (!kv) {
        rc = ct_err_set(err, CT_ENOMEM, "out of memory reading namespace %s", ns);
        goto out;
    }
    *out = kv;
    *npairs = n;
out:
    pthread_mutex_unlock(&s->cat_mu);
    return rc;
}

static int op_namespace_drop(struct wc_store *ws, const char *ns, struct ct_err *err)
{
    struct estore *s = estore_of(ws);
    if (s->opt.read_only)
        return ct_err_set(err, CT_EINVAL, "the store was opened read-only");
    pthread_mutex_lock(&s->cat_mu);
    int rc = CT_OK;
    long i = find_ns(s, ns);
    size_t nl = strlen(ns);
    if (i < 0) {
        rc = ct_err_set(err, CT_NOTFOUND, "namespace %s does not exist", ns);
        goto out;
    }
    for (size_t k = 0; k < s->ntables; k++)
        if (!strncmp(s->tables[k]->name, ns, nl) && s->tables[k]->name[nl] == ':') {
            rc = ct_err_set(err, CT_EBUSY,
                            "Only empty namespaces can be removed. Namespace %s "
                            "has tables",
                            ns);
            goto out;
        }
    /* keep the entry (with its configuration) to put back if the save fails */
    char *saved = s->namespaces[i];
    memmove(&s->namespaces[i], &s->namespaces[i + 1],
            (s->nnamespaces - (size_t)i - 1) * sizeof(char *));
    s->nnamespaces--;
    if ((rc = catalog_save(s, err)) != CT_OK) {
        memmove(&s->namespaces[i + 1], &s->namespaces[i],
                (s->nnamespaces - (size_t)i) * sizeof(char *));
        s->namespaces[i] = saved; /* the array still has room: it never shrinks */
        s->nnamespaces++;
    } else {
        free(saved);
    }
out:
    pthread_mutex_unlock(&s->cat_mu);
    return rc;
}

static int op_namespace_exists(struct wc_store *ws, const char *ns, struct ct_err *err)
{
    (void)err;
    struct estore *s = estore_of(ws);
    pthread_mutex_lock(&s->cat_mu);
    long i = find_ns(s, ns);
    pthread_mutex_unlock(&s->cat_mu);
    return i >= 0 ? CT_OK : CT_NOTFOUND;
}

/* Copies a sorted list of names (under cat_mu) and calls fn outside the lock. */
static int call_names(char **names, size_t n, wc_name_fn fn, void *arg)
{
    int stop = 0;
    for (size_t i = 0; i < n; i++) {
        if (!stop)
            stop = fn(arg, names[i]);
        free(names[i]);
    }
    free(names);
    return CT_OK;
}

static int op_namespace_list(struct wc_store *ws, wc_name_fn fn, void *arg, struct ct_err *err)
{
    struct estore *s = estore_of(ws);
    pthread_mutex_lock(&s->cat_mu);
    size_t n = s->nnamespaces;
    char **names = calloc(n ? n : 1, sizeof(char *));
    bool oom = !names;
    for (size_t i = 0; i < n && !oom; i++)
        oom = !(names[i] = strdup(s->namespaces[i]));
    pthread_mutex_unlock(&s->cat_mu);
    if (oom) {
        for (size_t i = 0; names && i < n; i++)
            free(names[i]);
        free(names);
        return ct_err_set(err, CT_ENOMEM, "out of memory listing namespaces");
    }
    return call_names(names, n, fn, arg);
}

/* ---- table administration ----------------------------------------------------------------- */

static int fam_cmp(const void *a, const void *b)
{
    return strcmp(((const struct wc_family_desc *)a)->name,
                  ((const struct wc_family_desc *)b)->name);
}

int insert_table(struct estore *s, struct etable *t, struct ct_err *err)
{
    struct etable **nv = realloc(s->tables, (s->ntables + 1) * sizeof(*nv));
    if (!nv)
        return ct_err_set(err, CT_ENOMEM, "out of memory adding table %s", t->name);
    s->tables = nv;
    size_t i = s->ntables;
    while (i > 0 && strcmp(s->tables[i - 1]->name, t->name) > 0) {
        s->tables[i] = s->tables[i - 1];
        i--;
    }
    s->tables[i] = t;
    s->ntables++;
    return CT_OK;
}

void remove_table_at(struct estore *s, long i)
{
    memmove(&s->tables[i], &s->tables[i + 1], (s->ntables - (size_t)i - 1) * sizeof(*s->tables));
    s->ntables--;
}

/* Builds the region array [start, splits..., end) with fresh ids. REQUIRES cat_mu. */
static int build_regions(struct estore *s, struct etable *t, const struct wc_bytes *splits,
                         size_t nsplits, struct eregion ***out, struct ct_err *err)
{
    struct eregion **rv = calloc(nsplits + 1, sizeof(*rv));
    if (!rv)
        return ct_err_set(err, CT_ENOMEM, "out of memory creating regions");
    uint64_t flushed = atomic_load(&s->visible_seq);
    for (size_t i = 0; i <= nsplits; i++) {
        const struct wc_bytes *a = i ? &splits[i - 1] : NULL;
        const struct wc_bytes *b = i < nsplits ? &splits[i] : NULL;
        int rc =
            eregion_new(s->next_region_id++, a ? a->data : NULL, a ? a->len : 0, b ? b->data : NULL,
                        b ? b->len : 0, t->nfams, flushed, s->ms_bloom_bits, &rv[i], err);
        if (rc != CT_OK) {
            for (size_t k = 0; k < i; k++)
                eregion_unref(rv[k]);
            free(rv);
            return rc;
        }
    }
    *out = rv;
    return CT_OK;
}

static void set_table_attrs(struct estore *s, struct etable *t, const struct wc_table_desc *d)
{
    (void)s;
    t->max_filesize = d->max_filesize;
    t->memstore_flushsize = d->memstore_flushsize;
    t->durability = d->durability;
    t->readonly = d->readonly;
    t->compaction_enabled = d->compaction_enabled;
}

static int op_table_create(struct wc_store *ws, const struct wc_table_desc *d,
                           const struct wc_bytes *splits, size_t nsplits, struct ct_err *err)
{
    struct estore *s = estore_of(ws);
    if (s->opt.read_only)
        return ct_err_set(err, CT_EINVAL, "the store was opened read-only");
    char ns[WC_MAX_TABLE_NAME];
    const char *colon = strchr(d->name, ':');
    snprintf(ns, sizeof(ns), "%.*s", (int)(colon - d->name), d->name);
    pthread_mutex_lock(&s->cat_mu);
    int rc = CT_OK;
    struct etable *t = NULL;
    if (find_ns(s, ns) < 0) {
        rc = ct_err_set(err, CT_NOTFOUND, "namespace %s does not exist", ns);
        goto out;
    }
    if (find_table(s, d->name) >= 0) {
        rc = ct_err_set(err, CT_EEXIST, "Table already exists: %s!", d->name);
        goto out;
    }
    t = etable_alloc();
    if (!t || !(t->fams = calloc(d->nfamilies, sizeof(*t->fams))) ||
        !(t->hooks = calloc(d->nfamilies, sizeof(*t->hooks)))) {
        rc = ct_err_set(err, CT_ENOMEM, "out of memory creating table %s", d->name);
        goto out;
    }
    snprintf(t->name, sizeof(t->name), "%s", d->name);
    memcpy(t->fams, d->families, d->nfamilies * sizeof(*t->fams));
    t->nfams = d->nfamilies;
    qsort(t->fams, t->nfams, sizeof(*t->fams), fam_cmp);
    set_table_attrs(s, t, d);
    atomic_init(&t->enabled, true);
    if ((rc = build_regions(s, t, splits, nsplits, &t->regions, err)) != CT_OK)
        goto out;
    t->nregions = nsplits + 1;
    t->id = s->next_table_id++;
    if ((rc = insert_table(s, t, err)) != CT_OK)
        goto out;
    if ((rc = catalog_save(s, err)) != CT_OK) {
        remove_table_at(s, find_table(s, t->name));
        goto out;
    }
    t = NULL;
out:
    pthread_mutex_unlock(&s->cat_mu);
    etable_unref(t);
    return rc;
}

/* Takes a table for an exclusive administrative change: the maintenance lock (no flush or
 * compaction runs), the catalog mutex and the map lock. Refused in a read-only store. */
int lock_table_admin(struct estore *s, const char *name, struct etable **out, struct ct_err *err)
{
    if (s->opt.read_only)
        return ct_err_set(err, CT_EINVAL, "the store was opened read-only");
    struct etable *t;
    int rc = get_table(s, name, &t, err);
    if (rc != CT_OK)
        return rc;
    pthread_rwlock_wrlock(&t->maint_lock);
    pthread_mutex_lock(&s->cat_mu);
    pthread_rwlock_wrlock(&t->map_lock);
    if (atomic_load(&t->dropped)) {
        pthread_rwlock_unlock(&t->map_lock);
        pthread_mutex_unlock(&s->cat_mu);
        pthread_rwlock_unlock(&t->maint_lock);
        etable_unref(t);
        return ct_err_set(err, CT_NOTFOUND, "Table %s does not exist.", name);
    }
    *out = t;
    return CT_OK;
}

void unlock_table_admin(struct estore *s, struct etable *t)
{
    pthread_rwlock_unlock(&t->map_lock);
    pthread_mutex_unlock(&s->cat_mu);
    pthread_rwlock_unlock(&t->maint_lock);
    etable_unref(t);
}

/* Whether any region of t other than `except` lists file id in family f. REQUIRES cat_mu. */
bool etable_file_shared(struct etable *t, struct eregion *except, size_t f, uint64_t id)
{
    for (size_t r = 0; r < t->nregions; r++) {
        struct eregion *rg = t->regions[r];
        if (rg == except)
            continue;
        pthread_mutex_lock(&rg->mu);
        bool found = false;
        for (size_t k = 0; k < rg->fams[f].nfiles && !found; k++)
            found = rg->fams[f].files[k].id == id;
        pthread_mutex_unlock(&rg->mu);
        if (found)
            return true;
    }
    return false;
}

/* After an alter: BLOCKCACHE and IN_MEMORY apply to the open files of a kept family at once (HBase
 * reopens the regions, which rereads them), while the other storage settings wait for files to
 * be rewritten. t->fams is the new family array, map[i] the old index of new family i (or -1).
 * REQUIRES the table's admin locks (lock_table_admin). */
static void alter_cache_options(struct etable *t, const struct wc_family_desc *old_fams,
                                const long *map)
{
    for (size_t i = 0; i < t->nfams; i++) {
        const struct wc_family_desc *nf = &t->fams[i];
        if (map[i] < 0 || (old_fams[map[i]].blockcache == nf->blockcache &&
                           old_fams[map[i]].in_memory == nf->in_memory))
            continue;
        struct sst_read_options ro = {nf->blockcache, nf->in_memory};
        for (size_t r = 0; r < t->nregions; r++) {
            struct eregion *rg = t->regions[r];
            pthread_mutex_lock(&rg->mu);
            for (size_t k = 0; k < rg->fams[i].nfiles; k++)
                sst_set_read_options(rg->fams[i].files[k].sst, &ro);
            pthread_mutex_unlock(&rg->mu);
        }
    }
}

static int op_table_alter(struct wc_store *ws, const struct wc_table_desc *d, struct ct_err *err)
{
    struct estore *s = estore_of(ws);
    struct etable *t;
    int rc = lock_table_admin(s, d->name, &t, err);
    if (rc != CT_OK)
        return rc;
    size_t nf = d->nfamilies;
    struct wc_family_desc *fams = calloc(nf, sizeof(*fams));
    struct ehook *hooks = calloc(nf, sizeof(*hooks));
    struct efam **nfa = calloc(t->nregions, sizeof(*nfa));
    long *map = calloc(nf, sizeof(*map)); /* new index -> old index or -1 */
    if (!fams || !hooks || !nfa || !map) {
        rc = ct_err_set(err, CT_ENOMEM, "out of memory altering %s", t->name);
        goto out;
    }
    memcpy(fams, d->families, nf * sizeof(*fams));
    qsort(fams, nf, sizeof(*fams), fam_cmp);
    for (size_t i = 0; i < nf; i++) {
        map[i] = etable_family_index(t, (const uint8_t *)fams[i].name, strlen(fams[i].name));
        if (map[i] >= 0)
            hooks[i] = t->hooks[map[i]];
    }
    uint64_t flushed = atomic_load(&s->visible_seq);
    for (size_t r = 0; r < t->nregions; r++) {
        nfa[r] = calloc(nf, sizeof(struct efam));
        if (!nfa[r]) {
            rc = ct_err_set(err, CT_ENOMEM, "out of memory altering %s", t->name);
            goto out;
        }
        for (size_t i = 0; i < nf; i++) {
            if (map[i] >= 0)
                continue;
            nfa[r][i].flushed_upto = flushed;
            if ((rc = memstore_new(&nfa[r][i].active, s->ms_bloom_bits, err)) != CT_OK)
                goto out;
        }
    }
    /* Commit in memory, then persist. */
    struct wc_family_desc *old_fams = t->fams;
    struct ehook *old_hooks = t->hooks;
    size_t old_nf = t->nfams;
    struct efam **old_fa = calloc(t->nregions, sizeof(*old_fa));
    if (!old_fa) {
        rc = ct_err_set(err, CT_ENOMEM, "out of memory altering %s", t->name);
        goto out;
    }
    for (size_t r = 0; r < t->nregions; r++) {
        struct eregion *rg = t->regions[r];
        pthread_mutex_lock(&rg->mu);
        for (size_t i = 0; i < nf; i++)
            if (map[i] >= 0) {
                nfa[r][i] = rg->fams[map[i]];
                memset(&rg->fams[map[i]], 0, sizeof(struct efam));
            }
        old_fa[r] = rg->fams;
        rg->fams = nfa[r];
        rg->nfams = nf;
        nfa[r] = NULL;
        pthread_mutex_unlock(&rg->mu);
    }
    struct wc_table_desc old_attrs;
    wc_table_desc_init(&old_attrs, t->name);
    old_attrs.max_filesize = t->max_filesize;
    old_attrs.memstore_flushsize = t->memstore_flushsize;
    old_attrs.durability = t->durability;
    old_attrs.readonly = t->readonly;
    old_attrs.compaction_enabled = t->compaction_enabled;
    t->fams = fams;
    t->hooks = hooks;
    t->nfams = nf;
    fams = NULL;
    hooks = NULL;
    set_table_attrs(s, t, d);
    rc = catalog_save(s, err);
    if (rc == CT_OK)
        alter_cache_options(t, old_fams, map);
    if (rc != CT_OK) {
        /* a failed alter changes nothing: move the stores back */
        for (size_t r = 0; r < t->nregions; r++) {
            struct eregion *rg = t->regions[r];
            pthread_mutex_lock(&rg->mu);
            for (size_t i = 0; i < nf; i++) {
                if (map[i] >= 0)
                    old_fa[r][map[i]] = rg->fams[i];
                else
                    efam_release(&rg->fams[i], false);
            }
            free(rg->fams);
            rg->fams = old_fa[r];
            rg->nfams = old_nf;
            old_fa[r] = NULL;
            pthread_mutex_unlock(&rg->mu);
        }
        fams = t->fams;
        hooks = t->hooks;
        t->fams = old_fams;
        t->hooks = old_hooks;
        t->nfams = old_nf;
        old_fams = NULL;
        old_hooks = NULL;
        set_table_attrs(s, t, &old_attrs);
    }
    /* Data of removed families goes (their files were listed only by this table). */
    for (size_t r = 0; r < t->nregions; r++) {
        for (size_t i = 0; old_fa[r] && i < old_nf; i++)
            if (old_fa[r][i].active || old_fa[r][i].nfiles || old_fa[r][i].nfrozen) {
                estore_memstore_sub(s, efam_memstore_bytes(&old_fa[r][i]));
                efam_release(&old_fa[r][i], true);
            }
        free(old_fa[r]);
    }
    free(old_fa);
    free(old_fams);
    free(old_hooks);
out:
    if (nfa)
        for (size_t r = 0; r < t->nregions; r++) {
            if (!nfa[r])
                continue;
            for (size_t i = 0; i < nf; i++)
                memstore_unref(nfa[r][i].active);
            free(nfa[r]);
        }
    free(nfa);
    free(map);
    free(fams);
    free(hooks);
    unlock_table_admin(s, t);
    return rc;
}

static int op_table_describe(struct wc_store *ws, const char *name, struct wc_table_desc **out,
                             struct ct_err *err)
{
    struct estore *s = estore_of(ws);
    struct etable *t;
    int rc = get_table(s, name, &t, err);
    if (rc != CT_OK)
        return rc;
    struct wc_table_desc *d = calloc(1, sizeof(*d));
    pthread_rwlock_rdlock(&t->map_lock);
    if (d)
        d->families = calloc(t->nfams, sizeof(*d->families));
    if (!d || !d->families) {
        pthread_rwlock_unlock(&t->map_lock);
        etable_unref(t);
        if (d)
            free(d);
        return ct_err_set(err, CT_ENOMEM, "out of memory describing %s", name);
    }
    snprintf(d->name, sizeof(d->name), "%s", t->name);
    memcpy(d->families, t->fams, t->nfams * sizeof(*t->fams));
    d->nfamilies = t->nfams;
    d->max_filesize = t->max_filesize;
    d->memstore_flushsize = t->memstore_flushsize;
    d->durability = t->durability;
    d->readonly = t->readonly;
    d->compaction_enabled = t->compaction_enabled;
    d->enabled = atomic_load(&t->enabled);
    pthread_rwlock_unlock(&t->map_lock);
    etable_unref(t);
    *out = d;
    return CT_OK;
}

static int op_table_exists(struct wc_store *ws, const char *name, struct ct_err *err)
{
    (void)err;
    struct estore *s = estore_of(ws);
    pthread_mutex_lock(&s->cat_mu);
    long i = find_table(s, name);
    pthread_mutex_unlock(&s->cat_mu);
    return i >= 0 ? CT_OK : CT_NOTFOUND;
}

static int op_table_list(struct wc_store *ws, wc_name_fn fn, void *arg, struct ct_err *err)
{
    struct estore *s = estore_of(ws);
    pthread_mutex_lock(&s->cat_mu);
    size_t n = 0;
    char **names = calloc(s->ntables + 1, sizeof(char *));
    bool oom = !names;
    for (size_t i = 0; i < s->ntables && !oom; i++) {
        if (!strncmp(s->tables[i]->name, "hbase:", 6))
            continue;
        oom = !(names[n++] = strdup(s->tables[i]->name));
    }
    pthread_mutex_unlock(&s->cat_mu);
    if (oom) {
        for (size_t i = 0; names && i < n; i++)
            free(names[i]);
        free(names);
        return ct_err_set(err, CT_ENOMEM, "out of memory listing tables");
    }
    return call_names(names, n, fn, arg);
}

static int set_enabled(struct wc_store *ws, const char *name, bool on, struct ct_err *err)
{
    struct estore *s = estore_of(ws);
    if (s->opt.read_only)
        return ct_err_set(err, CT_EINVAL, "the store was opened read-only");
    pthread_mutex_lock(&s->cat_mu);
    long i = find_table(s, name);
    int rc = CT_OK;
    if (i < 0) {
        rc = ct_err_set(err, CT_NOTFOUND, "Table %s does not exist.", name);
    } else if (atomic_load(&s->tables[i]->enabled) == on) {
        rc =
            ct_err_set(err, CT_EBUSY, "Table %s is already %s.", name, on ? "enabled" : "disabled");
    } else {
        atomic_store(&s->tables[i]->enabled, on);
        if ((rc = catalog_save(s, err)) != CT_OK)
            atomic_store(&s->tables[i]->enabled, !on);
    }
    pthread_mutex_unlock(&s->cat_mu);
    return rc;
}

static int op_table_enable(struct wc_store *ws, const char *name, struct ct_err *err)
{
    return set_enabled(ws, name, true, err);
}

static int op_table_disable(struct wc_store *ws, const char *name, struct ct_err *err)
{
    return set_enabled(ws, name, false, err);
}

/* Marks every region of t dead and releases their data (files deleted; their memstores leave
 * estore.memstore_total). REQUIRES the admin locks; the catalog no longer lists them. */
void drop_regions(struct estore *s, struct eregion **regions, size_t n)
{
    for (size_t r = 0; r < n; r++) {
        struct eregion *rg = regions[r];
        pthread_mutex_lock(&rg->mu);
        rg->dead = true;
        estore_memstore_sub(s, eregion_memstore_bytes(rg));
        for (size_t f = 0; f < rg->nfams; f++)
            for (size_t k = 0; k < rg->fams[f].nfiles; k++)
                sst_mark_obsolete(rg->fams[f].files[k].sst);
        pthread_mutex_unlock(&rg->mu);
        eregion_unref(rg);
    }
}

static int op_table_drop(struct wc_store *ws, const char *name, struct ct_err *err)
{
    struct estore *s = estore_of(ws);
    struct etable *t;
    int rc = lock_table_admin(s, name, &t, err);
    if (rc != CT_OK)
        return rc;
    if (atomic_load(&t->enabled)) {
        rc = ct_err_set(err, CT_EBUSY, "Table %s is enabled. Disable it first.", name);
        goto out;
    }
    long i = find_table(s, name);
    remove_table_at(s, i);
    if ((rc = catalog_save(s, err)) != CT_OK) {
        if (insert_table(s, t, err) != CT_OK) { /* keeps the first error */
        }
        goto out;
    }
    atomic_store(&t->dropped, true);
    drop_regions(s, t->regions, t->nregions);
    free(t->regions);
    t->regions = NULL;
    t->nregions = 0;
    etable_unref(t); /* the store's reference */
out:
    unlock_table_admin(s, t);
    if (rc == CT_OK)
        estore_release_wal(s);
    return rc;
}

static int op_table_truncate(struct wc_store *ws, const char *name, bool preserve_splits,
                             struct ct_err *err)
{
    struct estore *s = estore_of(ws);
    struct etable *t;
    int rc = lock_table_admin(s, name, &t, err);
    if (rc != CT_OK)
        return rc;
    size_t ns = preserve_splits ? t->nregions - 1 : 0;
    struct wc_bytes *splits = calloc(ns + 1, sizeof(*splits));
    struct eregion **nr = NULL;
    if (!splits) {
        rc = ct_err_set(err, CT_ENOMEM, "out of memory truncating %s", name);
        goto out;
    }
    for (size_t i = 0; i < ns; i++)
        splits[i] = wc_bytes_of(t->regions[i + 1]->start, t->regions[i + 1]->start_len);
    if ((rc = build_regions(s, t, splits, ns, &nr, err)) != CT_OK)
        goto out;
    struct eregion **old = t->regions;
    size_t nold = t->nregions;
    bool was_enabled = atomic_load(&t->enabled);
    t->regions = nr;
    t->nregions = ns + 1;
    atomic_store(&t->enabled, true);
    if ((rc = catalog_save(s, err)) != CT_OK) {
        t->regions = old;
        t->nregions = nold;
        atomic_store(&t->enabled, was_enabled);
        for (size_t i = 0; i <= ns; i++)
            eregion_unref(nr[i]);
        free(nr);
        goto out;
    }
    drop_regions(s, old, nold);
    free(old);
out:
    free(splits);
    unlock_table_admin(s, t);
    if (rc == CT_OK)
        estore_release_wal(s);
    return rc;
}

/* Calls fn on every region of table `name` (references taken under cat_mu). */
static int for_each_region(struct estore *s, const char *name,
                           int (*fn)(struct estore *, struct etable *, struct eregion *, void *,
                                     struct ct_err *),
                           void *arg, struct ct_err *err)
{
    struct etable *t;
    int rc = get_table(s, name, &t, err);
    if (rc != CT_OK)
        return rc;
    pthread_mutex_lock(&s->cat_mu);
    size_t n = t->nregions;
    struct eregion **rv = calloc(n ? n : 1, sizeof(*rv));
    for (size_t i = 0; rv && i < n; i++) {
        rv[i] = t->regions[i];
        eregion_ref(rv[i]);
    }
    pthread_mutex_unlock(&s->cat_mu);
    if (!rv) {
        etable_unref(t);
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        if (rc == CT_OK)
            rc = fn(s, t, rv[i], arg, err);
        eregion_unref(rv[i]);
    }
    free(rv);
    etable_unref(t);
    return rc;
}

static int flush_one(struct estore *s, struct etable *t, struct eregion *r, void *arg,
                     struct ct_err *err)
{
    (void)arg;
    return engine_flush_region(s, t, r, err);
}

static int op_table_flush(struct wc_store *ws, const char *name, struct ct_err *err)
{
    struct estore *s = estore_of(ws);
    if (s->opt.read_only)
        return CT_OK;
    int rc = estore_check_bg_error(s, err);
    return rc != CT_OK ? rc : for_each_region(s, name, flush_one, NULL, err);
}

struct compact_arg {
    const char *family;
    bool major;
};

static int compact_one(struct estore *s, struct etable *t, struct eregion *r, void *arg,
                       struct ct_err *err)
{
    struct compact_arg *a = arg;
    int fam = -1;
    if (a->family) {
        pthread_rwlock_rdlock(&t->map_lock);
        fam = etable_family_index(t, (const uint8_t *)a->family, strlen(a->family));
        pthread_rwlock_unlock(&t->map_lock);
        if (fam < 0)
            return ct_err_set(err, CT_EINVAL, "Unknown column family %s in table %s", a->family,
                              t->name);
    }
    int rc = engine_compact_region(s, t, r, fam, a->major, err);
    if (rc == CT_ECORRUPT && engine_quarantine_damaged_input(s, t, err))
        ct_err_prefix(err, "set aside in quarantine/ (writes go on)");
    return rc;
}

static int op_table_compact(struct wc_store *ws, const char *name, const char *family, bool major,
                            struct ct_err *err)
{
    struct estore *s = estore_of(ws);
    struct compact_arg a = {family, major};
    int rc = estore_check_writable(s, err);
    return rc != CT_OK ? rc : for_each_region(s, name, compact_one, &a, err);
}

static int split_mid(struct estore *s, struct etable *t, struct eregion *r, void *arg,
                     struct ct_err *err)
{
    (void)arg;
    int rc = engine_split_region(s, t, r, NULL, 0, err);
    return rc == CT_NOTFOUND ? CT_OK : rc;
}

static int op_table_split(struct wc_store *ws, const char *name, const struct wc_bytes *key,
                          struct ct_err *err)
{
    struct estore *s = estore_of(ws);
    int rc = estore_check_writable(s, err);
    if (rc != CT_OK)
        return rc;
    if (!key)
        return for_each_region(s, name, split_mid, NULL, err);
    struct etable *t;
    if ((rc = get_table(s, name, &t, err)) != CT_OK)
        return rc;
    pthread_rwlock_rdlock(&t->map_lock);
    struct eregion *r = t->regions[etable_region_index(t, key->data, key->len)];
    bool starts = bcmp_(r->start, r->start_len, key->data, key->len) == 0;
    eregion_ref(r);
    pthread_rwlock_unlock(&t->map_lock);
    if (starts)
        rc = ct_err_set(err, CT_EINVAL, "split key already starts a region of %s", name);
    else
        rc = engine_split_region(s, t, r, key->data, key->len, err);
    if (rc == CT_NOTFOUND) /* the region changed under us: retry once with the new map */
        rc = ct_err_set(err, CT_EBUSY, "region of %s changed during the split; retry", name);
    eregion_unref(r);
    etable_unref(t);
    return rc;
}

static int op_table_regions(struct wc_store *ws, const char *name, struct wc_region_info **out,
                            size_t *n, struct ct_err *err)
{
    struct estore *s = estore_of(ws);
    struct etable *t;
    int rc = get_table(s, name, &t, err);
    if (rc != CT_OK)
        return rc;
    pthread_mutex_lock(&s->cat_mu);
    size_t nr = t->nregions;
    struct wc_region_info *ri = calloc(nr ? nr : 1, sizeof(*ri));
    for (size_t i = 0; ri && i < nr; i++) {
        struct eregion *rg = t->regions[i];
        struct wc_region_info *o = &ri[i];
        o->start_key = malloc(rg->start_len + 1);
        o->end_key = malloc(rg->end_len + 1);
        if (!o->start_key || !o->end_key) {
            wc_region_info_free(ri, nr);
            ri = NULL;
            break;
        }
        memcpy(o->start_key, rg->start, rg->start_len);
        o->start_len = rg->start_len;
        memcpy(o->end_key, rg->end, rg->end_len);
        o->end_len = rg->end_len;
        o->id = rg->id;
        o->read_requests = atomic_load(&rg->reads);
        o->write_requests = atomic_load(&rg->writes);
        pthread_mutex_lock(&rg->mu);
        for (size_t f = 0; f < rg->nfams; f++) {
            struct efam *ef = &rg->fams[f];
            o->memstore_bytes += memstore_count(ef->active) ? memstore_bytes(ef->active) : 0;
            for (size_t k = 0; k < ef->nfrozen; k++)
                o->memstore_bytes += memstore_bytes(ef->frozen[k]);
            o->store_files += ef->nfiles;
            for (size_t k = 0; k < ef->nfiles; k++)
                o->store_file_bytes += sst_get_meta(ef->files[k].sst)->file_bytes;
        }
        pthread_mutex_unlock(&rg->mu);
    }
    pthread_mutex_unlock(&s->cat_mu);
    etable_unref(t);
    if (!ri)
        return ct_err_set(err, CT_ENOMEM, "out of memory listing regions");
    *out = ri;
    *n = nr;
    return CT_OK;
}

static int op_store_stats(struct wc_store *ws, struct wc_store_stats *out, struct ct_err *err)
{
    (void)err;
    struct estore *s = estore_of(ws);
    struct block_cache_stats cs = {0};
    if (s->cache)
        block_cache_get_stats(s->cache, &cs);
    out->cache_hits = cs.hits;
    out->cache_misses = cs.misses;
    out->cache_bytes = cs.bytes;
    out->cache_capacity_bytes = cs.capacity_bytes;
    out->flushes = atomic_load(&s->n_flushes);
    pthread_mutex_lock(&s->err_mu);
    out->bg_error_active = s->bg_err.code != CT_OK;
    out->bg_error_transient = out->bg_error_active && s->bg_err_transient;
    out->bg_errors = s->n_bg_errors;
    out->bg_recoveries = s->n_bg_recoveries;
    out->bg_error_since_ms = out->bg_error_active ? mono_ms() - s->bg_err_since_ms : 0;
    pthread_mutex_unlock(&s->err_mu);
    bool wal_recoverable = false;
    if (s->wal && !s->opt.read_only && wal_error_state(s->wal, &wal_recoverable) != CT_OK &&
        !out->bg_error_active) {
        out->bg_error_active = true; /* the log's own sticky error refuses writes too */
        out->bg_error_transient = wal_recoverable;
    }
    out->quarantined_files = s->quarantined + s->swept + atomic_load(&s->n_quarantined_live);
    out->minor_compactions = atomic_load(&s->n_minor);
    out->major_compactions = atomic_load(&s->n_major);
    out->splits = atomic_load(&s->n_splits);
    out->memstore_waits = atomic_load(&s->n_memstore_waits);
    struct wal_stats ws_ = {0};
    if (s->wal)
        wal_get_stats(s->wal, &ws_);
    out->wal_bytes = ws_.bytes_written;
    out->wal_syncs = ws_.syncs;
    pthread_mutex_lock(&s->cat_mu);
    for (size_t i = 0; i < s->ntables; i++) {
        struct etable *t = s->tables[i];
        out->regions += t->nregions;
        for (size_t r = 0; r < t->nregions; r++) {
            struct eregion *rg = t->regions[r];
            pthread_mutex_lock(&rg->mu);
            out->memstore_bytes += eregion_memstore_bytes(rg);
            pthread_mutex_unlock(&rg->mu);
        }
    }
    pthread_mutex_unlock(&s->cat_mu);
    return CT_OK;
}

/* ---- handles and hooks ------------------------------------------------------------------- */

static int op_table_open(struct wc_store *ws, const char *name, struct wc_table **out,
                         struct ct_err *err)
{
    struct estore *s = estore_of(ws);
    struct etable *t;
    int rc = get_table(s, name, &t, err);
    if (rc != CT_OK)
        return rc;
    struct etable_handle *h = calloc(1, sizeof(*h));
    if (!h) {
        etable_unref(t);
        return ct_err_set(err, CT_ENOMEM, "out of memory opening table %s", name);
    }
    h->base.ops = ws->ops;
    h->base.store = ws;
    h->t = t;
    *out = &h->base;
    return CT_OK;
}

static void op_table_close(struct wc_table *wt)
{
    struct etable_handle *h = (struct etable_handle *)wt;
    etable_unref(h->t);
    free(h);
}

static int op_set_compact_hook(struct wc_store *ws, const char *table, const char *family,
                               wc_compact_hook_fn fn, void *arg, struct ct_err *err)
{
    struct estore *s = estore_of(ws);
    pthread_mutex_lock(&s->cat_mu);
    long i = find_table(s, table);
    int rc = CT_OK;
    if (i < 0) {
        rc = ct_err_set(err, CT_NOTFOUND, "Table %s does not exist.", table);
    } else {
        struct etable *t = s->tables[i];
        int f = family ? etable_family_index(t, (const uint8_t *)family, strlen(family)) : -1;
        if (f < 0) {
            rc = ct_err_set(err, CT_EINVAL, "Unknown column family %s in table %s",
                            family ? family : "(null)", table);
        } else {
            struct ehook old = t->hooks[f];
            t->hooks[f].fn = fn;
            t->hooks[f].arg = fn ? arg : NULL;
            /* a merge that took the old hook may still call it: the caller may free its arg
             * once this returns (tsdb_close does), so wait until no merge holds a hook */
            if (old.fn && (old.fn != fn || old.arg != arg))
                while (s->hook_users)
                    pthread_cond_wait(&s->hook_cv, &s->cat_mu);
        }
    }
    pthread_mutex_unlock(&s->cat_mu);
    return rc;
}

static int op_background_error(struct wc_store *ws, struct ct_err *err)
{
    return estore_check_bg_error(estore_of(ws), err);
}

/* ---- open / close ------------------------------------------------------------------------- */

static void store_free(struct estore *s)
{
    for (size_t i = 0; i < s->ntables; i++)
        etable_unref(s->tables[i]);
    free(s->tables);
    for (size_t i = 0; i < s->nnamespaces; i++)
        free(s->namespaces[i]);
    free(s->namespaces);
    wal_close(s->wal);
    block_cache_free(s->cache);
    if (s->lock_fd >= 0)
        close(s->lock_fd);
    pthread_mutex_destroy(&s->cat_mu);
    pthread_mutex_destroy(&s->pub_mu);
    pthread_cond_destroy(&s->pub_cv);
    pthread_mutex_destroy(&s->bg_mu);
    pthread_cond_destroy(&s->bg_cv);
    pthread_cond_destroy(&s->done_cv);
    pthread_cond_destroy(&s->hook_cv);
    pthread_mutex_destroy(&s->err_mu);
    pthread_mutex_destroy(&s->snap_mu);
    free(s->snaps);
    for (int i = 0; i < ENGINE_ROW_STRIPES; i++)
        pthread_rwlock_destroy(&s->row_lk[i]);
    free(s->dir);
    free(s);
}

static void stop_threads(struct estore *s)
{
    pthread_mutex_lock(&s->bg_mu);
    s->stopping = true;
    pthread_cond_broadcast(&s->bg_cv);
    pthread_mutex_unlock(&s->bg_mu);
    for (int i = 0; i < s->nthreads; i++)
        pthread_join(s->threads[i], NULL);
    free(s->threads);
    s->threads = NULL;
    s->nthreads = 0;
    struct ejob *j = s->jobs_head;
    while (j) {
        struct ejob *n = j->next;
        free_job(j);
        j = n;
    }
    s->jobs_head = s->jobs_tail = NULL;
}

static void op_close(struct wc_store *ws)
{
    struct estore *s = estore_of(ws);
    stop_threads(s);
    if (!s->opt.read_only) {
        struct ct_err err;
        bool ok = estore_check_bg_error(s, &err) == CT_OK;
        pthread_mutex_lock(&s->cat_mu);
        size_t nt = s->ntables;
        struct etable **tv = calloc(nt ? nt : 1, sizeof(*tv));
        for (size_t i = 0; tv && i < nt; i++) {
            tv[i] = s->tables[i];
            etable_ref(tv[i]);
        }
        pthread_mutex_unlock(&s->cat_mu);
        for (size_t i = 0; tv && i < nt; i++) {
            for (size_t r = 0; ok && r < tv[i]->nregions; r++)
                if (engine_flush_region(s, tv[i], tv[i]->regions[r], &err) != CT_OK) {
                    ok = false;
                    fprintf(stderr, "ctsdb: flush at close failed: %s\n", err.msg);
                }
            etable_unref(tv[i]);
        }
        free(tv);
        if (ok)
            estore_release_wal(s);
    }
    store_free(s);
}

static const struct wc_backend_ops engine_ops = {
    .name = "embedded",
    .close = op_close,
    .background_error = op_background_error,
    .namespace_create = op_namespace_create,
    .namespace_drop = op_namespace_drop,
    .namespace_exists = op_namespace_exists,
    .namespace_list = op_namespace_list,
    .namespace_create_config = op_namespace_create_config,
    .namespace_get_config = op_namespace_get_config,
    .table_create = op_table_create,
    .table_alter = op_table_alter,
    .table_describe = op_table_describe,
    .table_exists = op_table_exists,
    .table_list = op_table_list,
    .table_enable = op_table_enable,
    .table_disable = op_table_disable,
    .table_drop = op_table_drop,
    .table_truncate = op_table_truncate,
    .table_flush = op_table_flush,
    .table_compact = op_table_compact,
    .table_split = op_table_split,
    .table_regions = op_table_regions,
    .store_stats = op_store_stats,
    .table_open = op_table_open,
    .table_close = op_table_close,
    .mutate_batch = engine_mutate_batch,
    .increment = engine_increment,
    .check_and_mutate = engine_check_and_mutate,
    .scanner_open = engine_scanner_open,
    .scanner_next = engine_scanner_next,
    .scanner_close = engine_scanner_close,
    .get = engine_get,
    .set_compact_hook = op_set_compact_hook,
    .snapshot_create = engine_snapshot_create,
    .snapshot_list = engine_snapshot_list,
    .snapshot_restore = engine_snapshot_restore,
    .snapshot_clone = engine_snapshot_clone,
    .snapshot_delete = engine_snapshot_delete,
};

static int make_dir(const char *path, struct ct_err *err)
{
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return ct_err_errno(err, CT_EIO, errno, "cannot create directory %s", path);
    return CT_OK;
}

int estore_quarantine(struct estore *s, const char *path, char *qpath, size_t cap,
                      struct ct_err *err)
{
    char qdir[4200];
    snprintf(qdir, sizeof(qdir), "%s/quarantine", s->dir);
    if (mkdir(qdir, 0700) != 0 && errno != EEXIST)
        return ct_err_errno(err, CT_EIO, errno, "cannot create %s to quarantine %s", qdir, path);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    /* never replace an earlier quarantined file of the same name: the first free of
     * <base>, <base>.1, <base>.2, ... (we hold the store's lock, nobody else renames here) */
    for (unsigned k = 0;; k++) {
        int n = k ? snprintf(qpath, cap, "%s/%s.%u", qdir, base, k)
                  : snprintf(qpath, cap, "%s/%s", qdir, base);
        if (n < 0 || (size_t)n >= cap)
            return ct_err_set(err, CT_EINVAL, "path too long quarantining %s", path);
        struct stat st;
        if (lstat(qpath, &st) != 0 && errno == ENOENT)
            break;
        if (k >= 100000)
            return ct_err_set(err, CT_EIO, "cannot find a free name in %s for %s", qdir, path);
    }
    if (eio_rename(path, qpath) != 0)
        return ct_err_errno(err, CT_EIO, errno, "cannot move %s to %s", path, qpath);
    char pdir[4200];
    snprintf(pdir, sizeof(pdir), "%.*s", (int)(base - path - (base > path)), path);
    int rc = eio_fsync_dir(qdir, err);
    if (rc == CT_OK && base > path)
        rc = eio_fsync_dir(pdir, err);
    return rc;
}

/* The orphan sweep at open: block files the catalog does not list (leftovers of flushes,
 * compactions and splits a crash interrupted, or files copied in from elsewhere) and temporary
 * files are MOVED to quarantine/, never deleted: nothing proves that a file this process did
 * not write is garbage. Each move is logged. */
static int remove_orphans(struct estore *s, struct ct_err *err)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/sst", s->dir);
    DIR *d = opendir(path);
    if (!d)
        return ct_err_errno(err, CT_EIO, errno, "cannot list %s", path);
    struct dirent *de;
    int rc = CT_OK;
    while ((de = readdir(d))) {
        const char *n = de->d_name;
        if (n[0] == '.')
            continue;
        bool keep = false;
        unsigned long long id;
        char tail[16];
        if (sscanf(n, "%16llx.%15s", &id, tail) == 2 && !strcmp(tail, "sst")) {
            for (size_t i = 0; i < s->ntables && !keep; i++) {
                struct etable *t = s->tables[i];
                for (size_t r = 0; r < t->nregions && !keep; r++)
                    for (size_t f = 0; f < t->nfams && !keep; f++)
                        for (size_t k = 0; k < t->regions[r]->fams[f].nfiles && !keep; k++)
                            keep = t->regions[r]->fams[f].files[k].id == id;
            }
        }
        if (keep)
            continue;
        char fp[4096 + 256], qp[4600];
        snprintf(fp, sizeof(fp), "%s/%s", path, n);
        if ((rc = estore_quarantine(s, fp, qp, sizeof(qp), err)) != CT_OK)
            break;
        s->swept++;
        estore_logf(s, "moved %s, which the catalog does not list, to %s", fp, qp);
    }
    closedir(d);
    return rc;
}

/* The first entry (not . or ..) of <dir>/<sub> into name; false if none or no such folder. */
static bool first_entry(const char *dir, const char *sub, char *name, size_t cap)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, sub);
    DIR *d = opendir(path);
    if (!d)
        return false;
    struct dirent *de;
    bool found = false;
    while (!found && (de = readdir(d)))
        if (de->d_name[0] != '.') {
            snprintf(name, cap, "%s/%s", path, de->d_name);
            found = true;
        }
    closedir(d);
    return found;
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Numbers of the log segments in <dir>/wal (sorted) into a new array *out (freed by the
 * caller) of *n entries; no folder is no segments. */
static int list_segments(const struct estore *s, uint64_t **out, size_t *n, struct ct_err *err)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/wal", s->dir);
    *out = NULL;
    *n = 0;
    DIR *d = opendir(path);
    if (!d)
        return errno == ENOENT ? CT_OK : ct_err_errno(err, CT_EIO, errno, "cannot list %s", path);
    struct dirent *de;
    size_t cap = 0;
    while ((de = readdir(d))) {
        unsigned long long num;
        int end = 0;
        if (strlen(de->d_name) != 28 || sscanf(de->d_name, "wal-%20llu.log%n", &num, &end) != 1 ||
            end != 28)
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            uint64_t *nv = realloc(*out, cap * sizeof(*nv));
            if (!nv) {
                closedir(d);
                free(*out);
                *out = NULL;
                return ct_err_set(err, CT_ENOMEM, "out of memory listing %s", path);
            }
            *out = nv;
        }
        (*out)[(*n)++] = num;
    }
    closedir(d);
    if (*n > 1)
        qsort(*out, *n, sizeof(**out), u64_cmp);
    return CT_OK;
}

/* Log accounting at open (catalog_format.h, wal_floor): every segment numbered wal_floor ..
 * wal_next-1 must exist, and no number may be missing between wal_floor and the newest
 * segment. A missing one stops the open naming it, unless opt.quarantine_damaged accepts the
 * loss (`ctsdb fsck --fix`; logged). Version-1 catalogs carry no accounting: only the gaps. */
static int check_log_segments(struct estore *s, struct ct_err *err)
{
    uint64_t *segs;
    size_t n;
    int rc = list_segments(s, &segs, &n, err);
    if (rc != CT_OK)
        return rc;
    uint64_t floor = s->catalog_version >= 2 ? s->wal_floor : (n ? segs[0] : 0);
    uint64_t next = s->catalog_version >= 2 ? s->wal_next : 0;
    uint64_t missing = 0;
    size_t i = 0;
    while (i < n && segs[i] < floor)
        i++;
    uint64_t want = floor, last_missing = 0;
    for (; i < n; i++) {
        if (segs[i] != want) {
            if (!missing)
                missing = want;
            last_missing = segs[i] - 1;
        }
        want = segs[i] + 1;
    }
    if (want < next) {
        if (!missing)
            missing = want;
        last_missing = next - 1;
    }
    free(segs);
    if (!missing)
        return CT_OK;
    char path[4200];
    snprintf(path, sizeof(path), "%s/wal/wal-%020llu.log", s->dir, (unsigned long long)missing);
    if (s->opt.quarantine_damaged && !s->opt.read_only) {
        estore_logf(s,
                    "log segment %s is missing (through number %llu); its records not yet in "
                    "block files are lost (accepted: quarantine_damaged)",
                    path, (unsigned long long)last_missing);
        s->wal_floor = last_missing + 1; /* saved once the log is open */
        s->log_loss_accepted = true;
        return CT_OK;
    }
    return ct_err_set(err, CT_ECORRUPT,
                      "log segment %s is missing (%s): not opened, nothing changed; restore it or "
                      "see ctsdb fsck (--fix accepts the loss)",
                      path, n ? "a gap in the log" : "wal/ is empty but the catalog needs it");
}

/* The first log segment number present, or `dflt` if none. */
static uint64_t first_segment(const struct estore *s, uint64_t dflt)
{
    uint64_t *segs;
    size_t n;
    struct ct_err e;
    if (list_segments(s, &segs, &n, &e) != CT_OK)
        return dflt;
    uint64_t v = n ? segs[0] : dflt;
    free(segs);
    return v;
}

void engine_set_failpoint(struct wc_store *ws, const char *name)
{
    estore_of(ws)->failpoint = name;
}

void engine_set_test_step(struct wc_store *ws, void (*fn)(void *arg, const char *step), void *arg)
{
    estore_of(ws)->test_step_arg = arg;
    estore_of(ws)->test_step = fn;
}

int engine_store_open(const struct wc_options *o, struct wc_store **out, struct ct_err *err)
{
    if (!o->data_dir || !*o->data_dir)
        return ct_err_set(err, CT_EINVAL, "the embedded engine needs a data directory");
    struct estore *s = calloc(1, sizeof(*s));
    if (!s)
        return ct_err_set(err, CT_ENOMEM, "out of memory opening a store");
    s->base.ops = &engine_ops;
    s->opt = *o;
    s->lock_fd = -1;
    if (!s->opt.memstore_flush_bytes)
        s->opt.memstore_flush_bytes = 64u << 20;
    if (!s->opt.region_split_bytes)
        s->opt.region_split_bytes = 1ull << 30;
    if (!s->opt.wal_segment_bytes)
        s->opt.wal_segment_bytes = 64u << 20;
    /* memstore row blooms: ~1 bit per 16 bytes of flush size, 8 Kibit .. 8 Mibit */
    uint64_t bb = s->opt.memstore_flush_bytes / 16;
    s->ms_bloom_bits = (uint32_t)(bb < 8192 ? 8192 : bb > (8u << 20) ? (8u << 20) : bb);
    s->opt.data_dir = NULL;
    s->opt.bt_project = s->opt.bt_instance = s->opt.bt_data_endpoint = NULL;
    s->opt.bt_admin_endpoint = s->opt.bt_credentials = NULL;
    const char *fp = getenv("CTSDB_FAILPOINT"); /* tests only: see engine_failpoint() */
    if (fp && *fp) {
        s->failpoint = fp;
        s->failpoint_kill = true;
        const char *gate = getenv("CTSDB_FAILPOINT_GATE");
        s->failpoint_gate = gate && *gate ? gate : NULL;
    }
    pthread_mutex_init(&s->cat_mu, NULL);
    pthread_mutex_init(&s->pub_mu, NULL);
    pthread_cond_init(&s->pub_cv, NULL);
    pthread_mutex_init(&s->bg_mu, NULL);
    pthread_cond_init(&s->bg_cv, NULL);
    pthread_cond_init(&s->done_cv, NULL);
    pthread_cond_init(&s->hook_cv, NULL);
    pthread_mutex_init(&s->err_mu, NULL);
    pthread_mutex_init(&s->snap_mu, NULL);
    pthread_rwlockattr_t rwa;
    pthread_rwlockattr_init(&rwa);
    /* increments must not starve behind a stream of puts */
    pthread_rwlockattr_setkind_np(&rwa, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    for (int i = 0; i < ENGINE_ROW_STRIPES; i++)
        pthread_rwlock_init(&s->row_lk[i], &rwa);
    pthread_rwlockattr_destroy(&rwa);
    atomic_init(&s->next_seq, 1);
    atomic_init(&s->visible_seq, 0);
    s->dir = strdup(o->data_dir);
    int rc = CT_OK;
    char path[4096];
    if (!s->dir) {
        rc = ct_err_set(err, CT_ENOMEM, "out of memory opening a store");
        goto fail;
    }
    struct stat st;
    if (stat(s->dir, &st) != 0) {
        if (!o->create_if_missing || o->read_only) {
            rc = ct_err_set(err, CT_NOTFOUND, "data directory %s does not exist", s->dir);
            goto fail;
        }
        if ((rc = make_dir(s->dir, err)) != CT_OK)
            goto fail;
    } else if (!o->read_only && S_ISDIR(st.st_mode) && (st.st_mode & 077)) {
        /* Created 0700 when the store makes it; one made by someone else is theirs to change,
         * so it is reported, not tightened. */
        estore_logf(s,
                    "data directory %s is mode %04o: other users may read it (ctsdb creates it "
                    "0700; chmod 700 %s to restrict it)",
                    s->dir, (unsigned)(st.st_mode & 07777), s->dir);
    }
    /* The lock: a writer holds LOCK exclusively, a read-only open (the tools: scan, query,
     * fsck) shared, so a directory a running TSD holds is refused with the same error by every
     * tool instead of being read without the log (and so looking empty), and a TSD does not
     * start under a tool reading the files. */
    if (!o->read_only) {
        snprintf(path, sizeof(path), "%s/sst", s->dir);
        if ((rc = make_dir(path, err)) != CT_OK)
            goto fail;
    }
    snprintf(path, sizeof(path), "%s/LOCK", s->dir);
    s->lock_fd =
        open(path, o->read_only ? O_RDONLY | O_CLOEXEC : O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (s->lock_fd < 0 && !(o->read_only && errno == ENOENT)) {
        rc = ct_err_errno(err, CT_EIO, errno, "cannot open %s", path);
        goto fail;
    }
    if (s->lock_fd >= 0 && flock(s->lock_fd, (o->read_only ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
        rc = ct_err_errno(err, CT_EBUSY, errno,
                          "data directory %s is in use by another process (%s)", s->dir, path);
        goto fail;
    }
    if ((rc = block_cache_new(o->block_cache_bytes, &s->cache, err)) != CT_OK)
        goto fail;
    block_cache_set_pread(s->cache, o->pread_block_files);
    rc = catalog_load(s, err);
    char any[4600];
    if (rc == CT_NOTFOUND && (first_entry(s->dir, "sst", any, sizeof(any)) ||
                              first_entry(s->dir, "wal", any, sizeof(any)))) {
        /* never a new store on top of an old one's files: they would be swept and the log
         * replayed into nothing */
        rc = ct_err_set(err, CT_ECORRUPT,
                        "%s/%s is missing but %s exists: not opened as a new store, "
                        "nothing changed; restore the catalog or see ctsdb fsck",
                        s->dir, CATALOG_FILE, any);
        goto fail;
    }
    if (rc == CT_NOTFOUND) {
        if (o->read_only) {
            rc = ct_err_set(err, CT_NOTFOUND, "no catalog in %s", s->dir);
            goto fail;
        }
        s->next_file_id = s->next_region_id = s->next_table_id = 1;
        s->wal_floor = s->wal_next = 1;
        s->catalog_version = CATALOG_FORMAT_VERSION;
        if ((rc = add_ns(s, "default", err)) != CT_OK || (rc = add_ns(s, "hbase", err)) != CT_OK)
            goto fail;
        if ((rc = catalog_save(s, err)) != CT_OK)
            goto fail;
    } else if (rc != CT_OK) {
        goto fail;
    } else if (s->quarantined && (rc = catalog_save(s, err)) != CT_OK) {
        goto fail; /* the catalog stops listing the quarantined files */
    }
    if ((rc = check_log_segments(s, err)) != CT_OK)
        goto fail;
    if (!o->read_only && (rc = remove_orphans(s, err)) != CT_OK)
        goto fail;
    /* A read-only open replays the log into memory too (wal_open_read_only: nothing on disk
     * changes), so the tools see what a TSD stopped without closing left in it; the shared
     * lock keeps a writer from appending meanwhile. */
    if (o->read_only) {
        snprintf(path, sizeof(path), "%s/wal", s->dir);
        struct wal_options wo = {s->opt.wal_segment_bytes, s->opt.log_fn, s->opt.log_arg};
        if ((rc = wal_open_read_only(path, &wo, &s->wal, err)) != CT_OK ||
            (rc = engine_replay(s, err)) != CT_OK)
            goto fail;
    } else {
        snprintf(path, sizeof(path), "%s/wal", s->dir);
        struct wal_options wo = {s->opt.wal_segment_bytes, s->opt.log_fn, s->opt.log_arg};
        if ((rc = wal_open_mapped(path, &wo, &s->wal, err)) != CT_OK)
            goto fail;
        snprintf(path, sizeof(path), "%s/quarantine", s->dir);
        wal_set_quarantine_dir(s->wal, path); /* damaged segments are kept there before a cut */
        wal_set_next_num(s->wal, s->wal_next);
        if (s->catalog_version < 2 || s->log_loss_accepted) {
            /* upgrade a version-1 catalog (log accounting starts at the oldest segment), or
             * record a loss accepted by check_log_segments */
            if (s->catalog_version < 2)
                s->wal_floor = first_segment(s, wal_next_num(s->wal));
            pthread_mutex_lock(&s->cat_mu);
            rc = catalog_save(s, err);
            pthread_mutex_unlock(&s->cat_mu);
            if (rc != CT_OK)
                goto fail;
            if (s->catalog_version < 2)
                estore_logf(s, "upgraded %s/%s from format version %d to %d", s->dir, CATALOG_FILE,
                            s->catalog_version, CATALOG_FORMAT_VERSION);
        }
        if ((rc = engine_replay(s, err)) != CT_OK)
            goto fail;
    }
    int nt = o->read_only ? 0 : (o->background_threads > 0 ? o->background_threads : 1);
    s->threads = calloc((size_t)nt + 1, sizeof(pthread_t));
    if (!s->threads) {
        rc = ct_err_set(err, CT_ENOMEM, "out of memory starting threads");
        goto fail;
    }
    schedule_major(s);
    for (int i = 0; i < nt; i++) {
        if (pthread_create(&s->threads[i], NULL, worker_main, s) != 0) {
            rc = ct_err_set(err, CT_EIO, "cannot start a background thread");
            stop_threads(s);
            goto fail;
        }
        s->nthreads++;
    }
    /* memstores filled by replay may already be over their threshold */
    pthread_mutex_lock(&s->cat_mu);
    for (size_t i = 0; i < s->ntables; i++) {
        struct etable *t = s->tables[i];
        for (size_t r = 0; r < t->nregions; r++) {
            struct eregion *rg = t->regions[r];
            uint64_t bytes = 0;
            for (size_t f = 0; f < rg->nfams; f++)
                bytes += memstore_bytes(rg->fams[f].active);
            if (bytes >= etable_flush_bytes(s, t)) {
                rg->flush_queued = true;
                estore_queue_job(s, EJOB_FLUSH, t, rg, false);
            }
        }
    }
    pthread_mutex_unlock(&s->cat_mu);
    *out = &s->base;
    return CT_OK;
fail:
    free(s->threads);
    s->threads = NULL;
    store_free(s);
    return rc;
}
