/* engine_int.h - private structures of the embedded engine shared by its .c files (store.c,
 * write.c, scan.c, maint.c, catalog.c). Nothing outside storage/engine/ (and its tests)
 * includes this.
 *
 * Object graph: estore (the store) -> etable (one per table, refcounted) -> eregion (key range
 * [start, end), refcounted) -> efam (one per family of the table: active memstore, frozen
 * memstores waiting for flush, block files oldest first).
 *
 * Locking (outer to inner; never take an outer lock while holding an inner one):
 *   estore.row_lk     striped row locks of the write path (several stripes: ascending order)
 *   etable.maint_lock rwlock: flushes and compactions shared; split, alter, truncate, drop
 *                     exclusive (so they never change a region a job is working on)
 *   eregion.maint_mu  one flush / compaction of the region at a time
 *   estore.cat_mu     the catalog: namespaces, table list, each table's region array and
 *                     descriptor, file ids; held while the catalog file is rewritten
 *   etable.map_lock   rwlock: writers and scanner opens hold it shared; split, alter, truncate
 *                     and drop hold it exclusive (together with cat_mu) to change the region
 *                     array or the family list
 *   eregion.mu        the region's memstore and file lists (efam fields); held by the one
 *                     writer inserting into the region's memstores and by snapshotting readers
 *   estore.pub_mu     ordered publication of sequence numbers (visible_seq)
 *   estore.bg_mu      the background job queue
 * Sequence numbers: every cell gets a distinct one; visible_seq is published in order, so a
 * reader whose snapshot is visible_seq sees every mutation up to it whole and none after. */
#ifndef CT_ENGINE_INT_H
#define CT_ENGINE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "storage/engine/cell.h"
#include "storage/engine/memstore.h"
#include "storage/engine/sst.h"
#include "storage/engine/wal.h"
#include "storage/wc_backend.h"

/* ---- per (region, family) ------------------------------------------------------------ */

struct efile {
    struct sst *sst; /* one reference owned by the list */
    uint64_t id;
};

struct efam {
    struct memstore *active;  /* receives inserts */
    struct memstore **frozen; /* oldest first, waiting for flush (may be shared after a split) */
    size_t nfrozen;
    struct efile *files; /* oldest first */
    size_t nfiles;
    uint64_t flushed_upto; /* every seq <= this of this store is in files (persisted) */
};

struct eregion {
    atomic_int refs;
    uint64_t id;
    uint8_t *start; /* empty = table start */
    size_t start_len;
    uint8_t *end; /* empty = table end */
    size_t end_len;
    pthread_mutex_t maint_mu;
    pthread_mutex_t mu;
    struct efam *fams; /* table->nfams entries, same order; guarded by mu (and map_lock for the
                        * array itself) */
    size_t nfams;
    bool dead;                  /* replaced by a split, truncate or drop; guarded by mu */
    bool flush_queued;          /* guarded by mu */
    int64_t first_edit_mono_ms; /* when the active memstores got their first cell (0 = empty);
                                 * guarded by mu */
    /* The flush fence (maint.c flush_locked, write.c apply_batch). A flush must write a PREFIX
     * of the region's seqs (flushed_upto = W says every cell <= W is in a file and nothing above
     * W is, so the log replay skips exactly what the files hold). Seqs are handed out before a
     * batch takes region locks, so a later batch can be in a memstore while an earlier one has
     * not inserted yet; the flush then sets fence = max_seq and waits for visible_seq >= fence,
     * and writers whose batch starts above the fence wait on fence_cv until the freeze.
     * All three guarded by mu. */
    uint64_t max_seq; /* largest seq a writer inserted into this region's memstores */
    uint64_t fence;   /* 0 = no flush waiting */
    pthread_cond_t fence_cv;
    atomic_uint_fast64_t reads;
    atomic_uint_fast64_t writes;
    /* the log trimmer (store.c trim_wal): `writes` at its last check, how many checks in a
     * row saw no new write (an idle region) and since when (monotonic ms; 0 = not yet seen);
     * guarded by mu */
    uint64_t trim_writes_seen;
    int trim_idle_checks;
    int64_t trim_quiet_since_ms;
};

/* ---- table ---------------------------------------------------------------------------- */

struct ehook {
    wc_compact_hook_fn fn;
    void *arg;
};

struct etable {
    atomic_int refs;
    uint64_t id;
    char name[WC_MAX_TABLE_NAME];
    pthread_rwlock_t maint_lock; /* shared: flush/compaction jobs; exclusive: split, alter,
                                  * truncate, drop */
    pthread_rwlock_t map_lock;
    /* guarded by cat_mu + map_lock (write); readable under either */
    struct wc_family_desc *fams; /* sorted by name */
    struct ehook *hooks;         /* parallel to fams */
    size_t nfams;
    /* atomic: background jobs and the write path read them without cat_mu or map_lock (an
     * alter may change them at any time; each reader takes one value) */
    _Atomic uint64_t max_filesize;
    _Atomic uint64_t memstore_flushsize;
    enum wc_durability durability;
    bool readonly;
    atomic_bool compaction_enabled;
    struct eregion **regions; /* sorted by start key */
    size_t nregions;
    atomic_bool enabled;
    atomic_bool dropped;
};

/* ---- store ---------------------------------------------------------------------------- */

#define ENGINE_ROW_STRIPES 64 /* row lock stripes (a power of two, at most 64: one bit each) */

enum ejob_kind {
    EJOB_FLUSH = 0,
    EJOB_COMPACT = 1, /* minor (policy picks) or major */
    EJOB_SPLIT_CHECK = 2,
};

struct ejob {
    struct ejob *next;
    enum ejob_kind kind;
    struct etable *table;   /* reference */
    struct eregion *region; /* reference */
    bool major;
};

struct estore {
    struct wc_store base; /* first */
    char *dir;
    int lock_fd;
    uint32_t ms_bloom_bits; /* row bloom size of new memstores */
    struct wc_options opt;
    struct wal *wal;
    struct block_cache *cache;

    pthread_mutex_t cat_mu;
    /* merges (flushes, compactions) running with a family's compaction hook: counted under cat_mu
     * from mctx_init() to mctx_destroy(); wc_set_compact_hook() waits on hook_cv for 0 after it
     * removes or replaces a hook, so the old hook's arg may be freed once it returns */
    unsigned hook_users;
    pthread_cond_t hook_cv;
    char **namespaces; /* sorted by name; each an ns_blob (see engine_ns_blob_len) */
    size_t nnamespaces;
    struct etable **tables; /* sorted by name */
    size_t ntables;
    uint64_t next_file_id;
    uint64_t next_region_id;
    uint64_t next_table_id;

    atomic_uint_fast64_t next_seq; /* next sequence number to hand out */
    pthread_mutex_t pub_mu;
    pthread_cond_t pub_cv;
    atomic_uint_fast64_t visible_seq; /* every seq <= this is applied */

    /* striped row locks (write.c): plain mutations hold the stripes of their rows shared,
     * increments and check-and-mutate hold their row's stripe exclusive, so a read-modify-write
     * never interleaves with a write of the same row. Outermost of the write path (before
     * map_lock); writer-preferring. */
    pthread_rwlock_t row_lk[ENGINE_ROW_STRIPES];

    pthread_mutex_t snap_mu; /* open scanners' snapshots (read points) */
    uint64_t *snaps;
    size_t nsnaps, snaps_cap;

    pthread_mutex_t bg_mu;
    pthread_cond_t bg_cv;   /* jobs queued or stopping */
    pthread_cond_t done_cv; /* a job finished */
    struct ejob *jobs_head;
    struct ejob *jobs_tail;
    pthread_t *threads;
    int nthreads;
    bool stopping;
    int running_jobs;
    int64_t next_major_ms;      /* monotonic ms of the next scheduled major compaction */
    int64_t next_trim_check_ms; /* monotonic ms of the next log size check */
    int64_t next_mem_check_ms;  /* monotonic ms of the next opt.memstore_total_bytes check */

    pthread_mutex_t err_mu;
    struct ct_err bg_err;                      /* first background error; code CT_OK if none */
    atomic_bool has_bg_err;                    /* fast check for the write path */
    bool bg_err_transient;                     /* retried and cleared by estore_recover (err_mu) */
    int64_t bg_err_since_ms, bg_err_logged_ms; /* monotonic (err_mu) */
    uint64_t bg_err_unlogged, n_bg_errors, n_bg_recoveries; /* (err_mu) */
    int64_t next_recover_ms, next_wal_check_ms;             /* (bg_mu) */
    atomic_uint_fast64_t n_quarantined_live; /* damaged files set aside by compactions */

    /* Bytes of every memstore the regions of the store's tables list, active and frozen: the
     * sum wc_store_stats() computes region by region (a memstore that split daughters share
     * counts once per daughter listing it, as there), kept up to date where it changes: inserts
     * (write.c: added under the region's mu, once per region run of a batch; the log replay),
     * flushed memstores dropped from their region (maint.c flush_locked), splits, removed
     * families, truncated and dropped tables (estore_memstore_add / _sub). Read without a lock
     * by the store-wide memstore ceiling (write.c invariant (7), estore_global_memstore_limit). */
    atomic_uint_fast64_t memstore_total;
    atomic_uint_fast64_t n_memstore_waits; /* writes that waited for opt.memstore_total_bytes */
    atomic_bool mem_limit_busy;            /* estore_global_memstore_limit is running */

    atomic_uint_fast64_t n_flushes;
    atomic_uint_fast64_t n_minor;
    atomic_uint_fast64_t n_major;
    atomic_uint_fast64_t n_splits;
    const char *failpoint; /* tests: name of a step at which to _exit(0) (see engine_failpoint) */
    bool failpoint_kill;   /* armed from CTSDB_FAILPOINT: the step raises SIGKILL instead */
    const char *failpoint_gate; /* CTSDB_FAILPOINT_GATE: a file that must exist to fire */
    /* tests: called at named steps of the write and flush paths (see engine_test_step) */
    void (*test_step)(void *arg, const char *step);
    void *test_step_arg;
    size_t quarantined;  /* block files set aside by catalog_load (opt.quarantine_damaged) */
    size_t swept;        /* unlisted files the open moved to quarantine/ */
    int catalog_version; /* of the CATALOG read at open (0: none) */
    /* log accounting (catalog_format.h): wal_floor is the value the catalog on disk holds
     * (guarded by cat_mu; raised only by estore_release_wal, saved before segments go);
     * wal_next is the loaded value, used while no log is open (read-only) */
    uint64_t wal_floor;
    uint64_t wal_next;
    bool log_loss_accepted; /* open: missing segments accepted (opt.quarantine_damaged) */
    uint64_t cat_wal_next;  /* wal_next of the catalog on disk (cat_mu): a newer segment makes
                             * the workers save the catalog within ~1 s so it is accounted */
};

static inline struct estore *estore_of(struct wc_store *s)
{
    return (struct estore *)s;
}

/* ---- shared helpers (store.c) ---------------------------------------------------------- */

/* A new table with one reference, locks initialised, everything else zero. */
struct etable *etable_new_empty(void);
/* Whether a region of t other than `except` lists file `id` of family f. REQUIRES cat_mu. */
bool etable_file_shared(struct etable *t, struct eregion *except, size_t f, uint64_t id);
/* Tests: arms a failpoint by name (see engine_failpoint); NULL disarms. */
void engine_set_failpoint(struct wc_store *s, const char *name);
/* Tests: fn(arg, step) is called at the steps "write_before_insert" (a batch has its seqs and is
 * in the log, before any memstore insert), "write_before_publish" (its cells are in the
 * memstores) and "flush_waits_for_writers" (a flush found an unpublished seq in the region's
 * memstores and is about to wait), each with no engine mutex held (a batch holds its row stripes
 * and map_lock shared), so a test can interleave writers and flushes deterministically. NULL
 * disarms. */
void engine_set_test_step(struct wc_store *s, void (*fn)(void *arg, const char *step), void *arg);
static inline void engine_test_step(struct estore *s, const char *step)
{
    if (s->test_step)
        s->test_step(s->test_step_arg, step);
}
void etable_ref(struct etable *t);
void etable_unref(struct etable *t);
void eregion_ref(struct eregion *r);
void eregion_unref(struct eregion *r);
/* Index of the region holding row (REQUIRES map_lock held or cat_mu). */
size_t etable_region_index(const struct etable *t, const uint8_t *row, size_t len);
/* Index of family `name` in t->fams or -1. */
int etable_family_index(const struct etable *t, const uint8_t *name, size_t len);
/* Takes a snapshot (visible_seq) and registers it so flushes and compactions keep every version
 * it may read; released with estore_snapshot_release(). CT_ENOMEM if it cannot register. */
CT_MUST_CHECK int estore_snapshot_acquire(struct estore *s, uint64_t *snap, struct ct_err *err);
void estore_snapshot_release(struct estore *s, uint64_t snap);
/* The read point of a rewrite: min(visible_seq, every registered snapshot). Cells with a larger
 * seq are kept as they are and do not count toward versions or masking. */
uint64_t estore_read_point(struct estore *s);
/* Records a background error: the first is kept and returned by every write. A fatal one
 * stays until restart; a transient one (failed flush, compaction, catalog write) is retried by
 * the worker threads about every second and cleared when the retry succeeds. Rate-limited
 * reports through log_fn. */
void estore_set_bg_error(struct estore *s, const struct ct_err *err);
void estore_set_bg_error_transient(struct estore *s, const struct ct_err *err);
/* CT_OK or the sticky background error (copied into err). */
int estore_check_bg_error(struct estore *s, struct ct_err *err);
/* CT_OK when s takes writes now: CT_EINVAL when it was opened read-only, else the sticky
 * background error (estore_check_bg_error). */
int estore_check_writable(struct estore *s, struct ct_err *err);
/* Queues a background job (takes references on table and region). */
void estore_queue_job(struct estore *s, enum ejob_kind kind, struct etable *t, struct eregion *r,
                      bool major);
/* Tests: if `name` is the armed failpoint, the process exits immediately (a simulated crash):
 * _exit(0) when armed by engine_set_failpoint(), SIGKILL when armed by the CTSDB_FAILPOINT
 * environment variable read at open (the crash test lands daemon kills inside a flush,
 * compaction or split that way: tests/integration/crash_tsd.py); with CTSDB_FAILPOINT_GATE
 * set too, only once the file it names exists (so the kill lands under load, not at open). */
void engine_failpoint(struct estore *s, const char *name);
/* Path of file `id` into buf (PATH_MAX). */
void estore_file_path(const struct estore *s, uint64_t id, char *buf, size_t size);
/* Allocates a region with fresh empty memstores for nfams families. */
CT_MUST_CHECK int eregion_new(uint64_t id, const uint8_t *start, size_t start_len,
                              const uint8_t *end, size_t end_len, size_t nfams,
                              uint64_t flushed_upto, uint32_t bloom_bits, struct eregion **out,
                              struct ct_err *err);
/* Effective memstore flush threshold of a table. */
uint64_t etable_flush_bytes(const struct estore *s, const struct etable *t);
/* Computes the log position below which everything is flushed and releases log segments. */
void estore_release_wal(struct estore *s);
/* Bytes of region r's memstores, active and frozen, of every family. REQUIRES r->mu held (or r
 * out of every writer's reach). */
uint64_t eregion_memstore_bytes(const struct eregion *r);
/* Keep estore.memstore_total: a listing gained or lost `bytes` of memstore. */
static inline void estore_memstore_add(struct estore *s, uint64_t bytes)
{
    atomic_fetch_add_explicit(&s->memstore_total, bytes, memory_order_relaxed);
}
void estore_memstore_sub(struct estore *s, uint64_t bytes); /* stops at 0 */
/* Moves `path` into <dir>/quarantine/ (created 0700) under its own name, or <name>.N if that is
 * taken (an earlier quarantined file is never replaced), and syncs both directories. Writes the
 * new path into qpath. */
CT_MUST_CHECK int estore_quarantine(struct estore *s, const char *path, char *qpath, size_t cap,
                                    struct ct_err *err);
/* Reports a message through opt.log_fn (nothing without one). */
void estore_logf(const struct estore *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* While all memstores together are over the store's ceiling (opt.memstore_total_bytes, or
 * without it max(4 x flush size, 256 MiB)), queues flushes of the largest regions that have none
 * queued until the rest is under it. Takes cat_mu and each region's mu: REQUIRES neither held
 * (nor a row stripe or map_lock). Returns at once when the total is under the ceiling, or when
 * another thread is running it. */
void estore_global_memstore_limit(struct estore *s);

/* Used by snapshot.c (defined in store.c). REQUIRES cat_mu for find_table, find_ns (index or
 * -1), insert_table (sorted; CT_ENOMEM) and remove_table_at. lock_table_admin takes a table for
 * an exclusive change (maint_lock, cat_mu, map_lock, a reference), unlock_table_admin gives it
 * all back. drop_regions marks regions dead, their files obsolete, and unrefs them. */
long find_table(const struct estore *s, const char *name);
long find_ns(const struct estore *s, const char *ns);
CT_MUST_CHECK int insert_table(struct estore *s, struct etable *t, struct ct_err *err);
void remove_table_at(struct estore *s, long i);
CT_MUST_CHECK int lock_table_admin(struct estore *s, const char *name, struct etable **out,
                                   struct ct_err *err);
void unlock_table_admin(struct estore *s, struct etable *t);
void drop_regions(struct estore *s, struct eregion **regions, size_t n);

/* ---- snapshot.c (wc.h snapshots; layout in snapshot.c and docs/engine.md) ------------------ */

CT_MUST_CHECK int engine_snapshot_create(struct wc_store *ws, const char *name, const char *table,
                                         struct ct_err *err);
CT_MUST_CHECK int engine_snapshot_list(struct wc_store *ws, wc_snapshot_fn fn, void *arg,
                                       struct ct_err *err);
CT_MUST_CHECK int engine_snapshot_restore(struct wc_store *ws, const char *name,
                                          struct ct_err *err);
CT_MUST_CHECK int engine_snapshot_clone(struct wc_store *ws, const char *name, const char *table,
                                        struct ct_err *err);
CT_MUST_CHECK int engine_snapshot_delete(struct wc_store *ws, const char *name, struct ct_err *err);

/* ---- catalog.c --------------------------------------------------------------------------- */

/* Writes the whole catalog atomically. REQUIRES cat_mu held. */
CT_MUST_CHECK int catalog_save(struct estore *s, struct ct_err *err);
/* The same catalog written atomically to `path` instead of <dir>/CATALOG (a snapshot's copy:
 * the block files it lists, with their sizes and identities, are the ones open now).
 * REQUIRES cat_mu held. */
CT_MUST_CHECK int catalog_write_to(struct estore *s, const char *path, struct ct_err *err);
/* Loads the catalog into s (tables, regions, files opened). CT_NOTFOUND if there is none. */
CT_MUST_CHECK int catalog_load(struct estore *s, struct ct_err *err);

/* ---- write.c ----------------------------------------------------------------------------- */

CT_MUST_CHECK int engine_mutate_batch(struct wc_table *wt, const struct wc_row_mutation *rows,
                                      size_t n, enum wc_durability d, struct ct_err *err);
CT_MUST_CHECK int engine_increment(struct wc_table *wt, struct wc_bytes row, struct wc_bytes family,
                                   struct wc_bytes qualifier, int64_t delta, enum wc_durability d,
                                   int64_t *out, struct ct_err *err);
CT_MUST_CHECK int engine_check_and_mutate(struct wc_table *wt, struct wc_bytes row,
                                          struct wc_bytes family, struct wc_bytes qualifier,
                                          const struct wc_bytes *expected,
                                          const struct wc_row_mutation *rm, enum wc_durability d,
                                          bool *applied, struct ct_err *err);
/* Replays the log into the memstores (open). */
CT_MUST_CHECK int engine_replay(struct estore *s, struct ct_err *err);

/* ---- scan.c ------------------------------------------------------------------------------ */

/* One input of a merge: a memstore or a block file, positioned on a cell whose seq is <= snap
 * (cells of later writes are stepped over). */
struct echild {
    bool is_ms;
    bool valid;
    bool rev_ok;    /* reversed scans: positioned on the last visible cell below the bound */
    bool has_start; /* reversed scans, files: `start` is the first cell of the row read last */
    bool lazy;      /* forward scans (scan.c): not sought yet, its row bloom rules out the scan's
                * first row; `valid` is false until the seek */
    bool same_row;  /* set by echild_next (files): the step stayed on the previous cell's row
                     * (block entry flags, no compare); false says nothing unless row_known */
    bool row_known; /* set with same_row: every step stayed in one block, so same_row false
                     * says the row changed (the flags are exact within a block) */
    struct sst_pos start;
    struct memstore_iter mi;
    struct sst_iter *si;
    uint64_t snap;
    struct cell cur; /* valid while `valid`; sst bytes valid until the child moves */
};

/* Initialise over a memstore (borrowed reference) or a file (a new iterator). */
void echild_init_ms(struct echild *c, struct memstore *m, uint64_t snap);
CT_MUST_CHECK int echild_init_sst(struct echild *c, struct sst *f, uint64_t snap,
                                  struct ct_err *err);
void echild_destroy(struct echild *c);
CT_MUST_CHECK int echild_seek(struct echild *c, const struct cell *target, struct ct_err *err);
CT_MUST_CHECK int echild_next(struct echild *c, struct ct_err *err);
/* The smallest possible cell of a row (sorts before every real cell of it). */
void ecell_row_start(struct cell *c, const uint8_t *row, size_t len);

struct etable_handle {
    struct wc_table base; /* first */
    struct etable *t;     /* reference */
};

CT_MUST_CHECK int engine_scanner_open(struct wc_table *wt, const struct wc_scan_options *o,
                                      struct wc_scanner **out, struct ct_err *err);
CT_MUST_CHECK int engine_scanner_next(struct wc_scanner *sc, struct wc_row *row,
                                      struct ct_err *err);
void engine_scanner_close(struct wc_scanner *sc);
/* wc_get() of the engine (wc_backend_ops.get): one row read without a scanner, with exactly a
 * one-row scan's result. */
CT_MUST_CHECK int engine_get(struct wc_table *wt, struct wc_bytes row,
                             const struct wc_scan_options *o, struct wc_result *out,
                             struct ct_err *err);
/* Newest visible version of one column (for delete-latest, increment, check-and-mutate):
 * CT_OK with *ts and the value copied into a new buffer *val (freed by the caller) of *val_len
 * bytes, or CT_NOTFOUND. */
CT_MUST_CHECK int engine_read_latest(struct estore *s, struct etable *t, const uint8_t *row,
                                     size_t row_len, struct wc_bytes fam, const uint8_t *qual,
                                     size_t qual_len, int64_t *ts, uint8_t **val, size_t *val_len,
                                     struct ct_err *err);

/* ---- maint.c ----------------------------------------------------------------------------- */

/* The exploring compaction selection (docs/storage-contract.md, "Flush, compaction and split
 * policy"). sizes[] oldest first. Chooses a run [*start, *start + *count) or returns false if none
 * qualifies. */
struct compact_policy {
    size_t min_files;  /* 3 */
    size_t max_files;  /* 10 */
    double ratio;      /* 1.2 */
    uint64_t min_size; /* 128 MiB: runs below skip the ratio test */
    uint64_t max_size; /* UINT64_MAX: runs above are not considered */
};
void compact_policy_default(struct compact_policy *p);
bool compact_select(const uint64_t *sizes, size_t n, const struct compact_policy *p, size_t *start,
                    size_t *count);

/* Flushes every non-empty memstore of region r. */
CT_MUST_CHECK int engine_flush_region(struct estore *s, struct etable *t, struct eregion *r,
                                      struct ct_err *err);
/* Compacts one family (fam >= 0) or all of region r: major rewrites all files, otherwise the
 * policy picks (nothing if no run qualifies). */
CT_MUST_CHECK int engine_compact_region(struct estore *s, struct etable *t, struct eregion *r,
                                        int fam, bool major, struct ct_err *err);
/* Splits region r at key (key NULL: at the midpoint of its largest file). CT_NOTFOUND if it
 * cannot split (no midpoint, reference files). */
CT_MUST_CHECK int engine_split_region(struct estore *s, struct etable *t, struct eregion *r,
                                      const uint8_t *key, size_t key_len, struct ct_err *err);
/* A compaction of t failed with CT_ECORRUPT naming one of its input block files in why->msg:
 * drops that file from t's regions, saves the catalog and moves the file to quarantine/ (the
 * store goes on; its cells are no longer served). False if why names no file t lists. */
bool engine_quarantine_damaged_input(struct estore *s, struct etable *t, struct ct_err *why);
/* Runs one background job. */
void engine_run_job(struct estore *s, struct ejob *j);

/* A namespace entry is a "blob": the NUL-terminated name, then each configuration pair as
 * "key\0value\0", then one more NUL (keys are never empty). strcmp() on it compares the name.
 * Returns the blob's length including the final NUL. */
size_t engine_ns_blob_len(const char *blob);

#endif
