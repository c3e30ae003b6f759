/* write.c - the write path: row mutations and batches (log, memstore, ordered publication),
 * atomic increment, check-and-mutate, and replay of the log at open. Payload format:
 * batch_format.h.
 *
 * Invariants: (1) a batch is checked and fully resolved (families, timestamps) before anything
 * is written, so a bad mutation writes nothing; (2) each cell gets a distinct seq; a batch's
 * seqs are consecutive; (3) a batch becomes visible (visible_seq advanced past its last seq)
 * only after all its cells are in memstores, and publication happens in seq order, so readers
 * never see part of a row mutation; (4) a writer holds its table's map_lock shared from seq
 * assignment to publication, so splits, alters and truncates see no write in flight.
 *
 * (5) Row locks (estore.row_lk, striped by table and row): a plain mutation or batch holds the
 * stripes of all its rows SHARED (taken in ascending stripe order, each once) until it is
 * published, EXCLUSIVE when it deletes a latest version (read, then write: two concurrent
 * delete-latests never pick the same version); increment and check-and-mutate hold their row's
 * stripe EXCLUSIVE around read, compute and write. So a put never lands between an increment's
 * read and its write (no lost update), while plain writers of one stripe do not wait for each
 * other. Nobody waits for memstore room while holding a stripe.
 *
 * (6) Flush fence: a batch whose first seq is above a region's fence waits (region mutex
 * released) until the flush waiting for that fence has frozen the memstore, so a flush writes a
 * prefix of the seqs (eregion.fence in engine_int.h). No deadlock: a flush waits only for batches
 * starting at or below its fence, which no fence at or above it holds back, and those hold every
 * row stripe and the map lock they need before they get their seqs.
 *
 * (7) Store-wide memstore ceiling (opt.memstore_total_bytes, when non-zero): a write (plain,
 * batch, increment, check-and-mutate) that finds all memstores together (estore.memstore_total,
 * one atomic load) at or over the ceiling waits in wait_for_total_room() FIRST, before it takes a
 * row stripe, the map lock or a seq, after making sure flushes of the largest regions are queued
 * (estore_global_memstore_limit); woken by done_cv when a background job ends, or every 100 ms,
 * it goes on once the total is under the ceiling, when the store has a background error (which
 * the write then returns) or is closing, or when no flush has finished for 60 s (the safety
 * valve: reported through opt.log_fn, and the write goes on). No deadlock: the waiter holds no
 * engine lock and has no seq, so no flush waits for it - the fence (6) waits only for batches
 * that already have seqs, which passed this wait before taking anything, and the per-region
 * wait comes after publication with everything released - while the flush it waits for needs
 * only locks that flushes, splits and other writers release without waiting for the waiter
 * (cat_mu and a region's mu are taken by estore_global_memstore_limit with nothing else held).
 * Neither wait is entered while holding anything, so they cannot wait for each other either.
 * With opt.memstore_total_bytes 0 nothing of this runs (the check is `!limit`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "storage/clock.h"
#include "storage/coding.h"
#include "storage/engine/batch_format.h"
#include "storage/engine/engine_int.h"

#define WC_MAX_CELL_BYTES (10u << 20)

/* One resolved cell of a batch. */
struct rcell {
    uint8_t type;
    int fam;
    const uint8_t *qual;
    size_t qual_len;
    const uint8_t *value;
    size_t value_len;
    int64_t ts;
};

static int durability_of(const struct etable *t, enum wc_durability d)
{
    if (d == WC_DURABILITY_USE_DEFAULT)
        d = t->durability;
    if (d == WC_DURABILITY_USE_DEFAULT)
        d = WC_DURABILITY_SYNC_WAL;
    return d;
}

static void publish(struct estore *s, uint64_t first, uint64_t last)
{
    pthread_mutex_lock(&s->pub_mu);
    while (atomic_load(&s->visible_seq) != first - 1)
        pthread_cond_wait(&s->pub_cv, &s->pub_mu);
    atomic_store(&s->visible_seq, last);
    pthread_cond_broadcast(&s->pub_cv);
    pthread_mutex_unlock(&s->pub_mu);
}

static uint8_t type_of(enum wc_mutation_op op)
{
    switch (op) {
    case WC_OP_PUT:
        return WC_TYPE_PUT;
    case WC_OP_DELETE_VERSION:
        return WC_TYPE_DELETE;
    case WC_OP_DELETE_COLUMN:
        return WC_TYPE_DELETE_COLUMN;
    case WC_OP_DELETE_FAMILY:
    case WC_OP_DELETE_ROW:
        return WC_TYPE_DELETE_FAMILY;
    case WC_OP_DELETE_FAMILY_VERSION:
        return WC_TYPE_DELETE_FAMILY_VERSION;
    }
    return WC_TYPE_PUT;
}

static int unknown_family(const struct etable *t, struct wc_bytes f, struct ct_err *err)
{
    char fams[160] = "";
    size_t fl = 0;
    for (size_t k = 0; k < t->nfams && fl + 8 < sizeof(fams); k++)
        fl += (size_t)snprintf(fams + fl, sizeof(fams) - fl, "%s%s:*", k ? ", " : "",
                               t->fams[k].name);
    return ct_err_set(err, CT_EINVAL, "Unknown column family %.*s! Valid column names: %s",
                      (int)(f.len > 64 ? 64 : f.len), (const char *)f.data, fams);
}

static int check_table_writable(const struct etable *t, struct ct_err *err)
{
    if (atomic_load(&t->dropped))
        return ct_err_set(err, CT_NOTFOUND, "Table %s does not exist.", t->name);
    if (!atomic_load(&t->enabled))
        return ct_err_set(err, CT_EBUSY, "Table %s is disabled.", t->name);
    if (t->readonly)
        return ct_err_set(err, CT_EINVAL, "Table %s is read-only.", t->name);
    return CT_OK;
}

/* Writes wait while a store holds this many files (HBase 2.x: 16), for a compaction. */
#define ENGINE_BLOCKING_FILES 16

/* Waits (outside every lock), at most ~90 s, while the region holding `row` has more than 4x the
 * flush size in memstores or a store with ENGINE_BLOCKING_FILES files (tables with compactions
 * enabled): writes wait, they are not refused (docs/storage-contract.md, "Flush, compaction and
 * split policy"). Called after a write found its region over a limit. */
static void wait_for_memstore_room(struct estore *s, struct etable *t, struct wc_bytes row)
{
    uint64_t limit = 4 * etable_flush_bytes(s, t);
    for (int spins = 0; spins < 900; spins++) { /* at most ~90 s */
        if (pthread_rwlock_rdlock(&t->map_lock) != 0)
            return;
        struct eregion *r = t->regions[etable_region_index(t, row.data, row.len)];
        eregion_ref(r);
        pthread_rwlock_unlock(&t->map_lock);
        uint64_t bytes = 0;
        size_t files = 0;
        pthread_mutex_lock(&r->mu);
        for (size_t f = 0; f < r->nfams; f++) {
            bytes += memstore_bytes(r->fams[f].active);
            for (size_t k = 0; k < r->fams[f].nfrozen; k++)
                bytes += memstore_bytes(r->fams[f].frozen[k]);
            if (r->fams[f].nfiles > files)
                files = r->fams[f].nfiles;
        }
        bool queued = r->flush_queued;
        if (bytes >= limit && !queued)
            r->flush_queued = true;
        pthread_mutex_unlock(&r->mu);
        bool too_many_files = t->compaction_enabled && files >= ENGINE_BLOCKING_FILES;
        if (bytes < limit && !too_many_files) {
            eregion_unref(r);
            return;
        }
        if (bytes >= limit && !queued)
            estore_queue_job(s, EJOB_FLUSH, t, r, false);
        if (too_many_files && spins == 0)
            estore_queue_job(s, EJOB_COMPACT, t, r, false);
        eregion_unref(r);
        struct ct_err e;
        if (estore_check_bg_error(s, &e) != CT_OK)
            return;
        /* woken when a background job (the flush) finishes */
        struct timespec ts = clock_realtime_in(100);
        pthread_mutex_lock(&s->bg_mu);
        pthread_cond_timedwait(&s->done_cv, &s->bg_mu, &ts);
        pthread_mutex_unlock(&s->bg_mu);
    }
}

/* After this long without a finished flush, a write waiting for the store-wide ceiling goes on
 * (the TSD's old rule: the memstores stay bounded while flushes make progress, and a wedged flush
 * does not stop every write for good). */
#define ENGINE_TOTAL_STALL_MS 60000

/* Invariant (7): waits, holding nothing, while all memstores together are at or over
 * opt.memstore_total_bytes. */
static void wait_for_total_room(struct estore *s)
{
    uint64_t limit = s->opt.memstore_total_bytes;
    if (!limit || atomic_load_explicit(&s->memstore_total, memory_order_relaxed) < limit)
        return;
    atomic_fetch_add_explicit(&s->n_memstore_waits, 1, memory_order_relaxed);
    uint64_t flushes = atomic_load(&s->n_flushes);
    uint64_t progress_ns = clock_mono_ns();
    for (;;) {
        estore_global_memstore_limit(s); /* the largest regions have their flushes queued */
        struct ct_err e;
        if (estore_check_bg_error(s, &e) != CT_OK)
            return; /* the write returns it */
        struct timespec ts = clock_realtime_in(100);
        /* memstore_total drops (a flush releasing its memstores) before the job ends and
         * broadcasts done_cv under bg_mu: checked under bg_mu, no wakeup is missed */
        pthread_mutex_lock(&s->bg_mu);
        bool over = atomic_load(&s->memstore_total) >= limit;
        if (over && !s->stopping) {
            pthread_cond_timedwait(&s->done_cv, &s->bg_mu, &ts);
            over = atomic_load(&s->memstore_total) >= limit;
        }
        bool stopping = s->stopping;
        pthread_mutex_unlock(&s->bg_mu);
        if (!over || stopping)
            return;
        uint64_t f = atomic_load(&s->n_flushes), now = clock_mono_ns();
        if (f != flushes) {
            flushes = f;
            progress_ns = now;
        } else if (now - progress_ns >= (uint64_t)ENGINE_TOTAL_STALL_MS * 1000000) {
            estore_logf(s,
                        "memstores (%llu bytes) over memstore_total_bytes=%llu and no flush "
                        "finished for %d s: writing anyway",
                        (unsigned long long)atomic_load(&s->memstore_total),
                        (unsigned long long)limit, ENGINE_TOTAL_STALL_MS / 1000);
            return;
        }
    }
}

/* The index of the region holding row (etable_region_index), trying region `hint` first: the
 * rows of a batch come in key order (tsdb's batches sort them), so a row is mostly in the
 * previous row's region, which holds it when its start <= row < the next region's start: one
 * or two comparisons instead of a binary search. REQUIRES map_lock shared. */
static size_t write_region_index(const struct etable *t, const uint8_t *row, size_t len,
                                 size_t hint)
{
    if (hint < t->nregions &&
        cell_bytes_cmp(t->regions[hint]->start, t->regions[hint]->start_len, row, len) <= 0 &&
        (hint + 1 == t->nregions || cell_bytes_cmp(t->regions[hint + 1]->start,
                                                   t->regions[hint + 1]->start_len, row, len) > 0))
        return hint;
    return etable_region_index(t, row, len);
}

/* Applies resolved, encoded cells: log, memstores, publication. REQUIRES map_lock shared. */
static int apply_batch(struct estore *s, struct etable *t, const struct wc_row_mutation *rows,
                       size_t n, const struct rcell *cells, const size_t *row_cells, size_t ncells,
                       int dur, bool *blocked, struct ct_err *err)
{
    /* encode (family name lengths once per batch, not per cell) */
    size_t fam_len_stack[8], *fam_len = fam_len_stack;
    if (t->nfams > 8 && !(fam_len = malloc(t->nfams * sizeof(*fam_len))))
        return ct_err_set(err, CT_ENOMEM, "out of memory encoding a batch");
    for (size_t f = 0; f < t->nfams; f++)
        fam_len[f] = strlen(t->fams[f].name);
    size_t size = 1 + 2 * CODING_VARINT64_MAX;
    for (size_t i = 0; i < n; i++)
        size += 2 * CODING_VARINT64_MAX + rows[i].row.len;
    for (size_t j = 0; j < ncells; j++)
        size += 1 + 4 * CODING_VARINT64_MAX + fam_len[cells[j].fam] + cells[j].qual_len +
                cells[j].value_len;
    uint8_t stackbuf[4096];
    uint8_t *buf = NULL;
    if (dur != WC_DURABILITY_SKIP_WAL) {
        buf = size <= sizeof(stackbuf) ? stackbuf : malloc(size);
        if (!buf) {
            if (fam_len != fam_len_stack)
                free(fam_len);
            return ct_err_set(err, CT_ENOMEM, "out of memory encoding a %zu-byte batch", size);
        }
    }
    size_t len = 0;
    if (buf) {
        buf[len++] = BATCH_FORMAT_VERSION;
        len += coding_put_varint64(buf + len, t->id);
        len += coding_put_varint64(buf + len, n);
        size_t j = 0;
        for (size_t i = 0; i < n; i++) {
            len += coding_put_varint64(buf + len, rows[i].row.len);
            memcpy(buf + len, rows[i].row.data, rows[i].row.len);
            len += rows[i].row.len;
            len += coding_put_varint64(buf + len, row_cells[i]);
            for (size_t k = 0; k < row_cells[i]; k++, j++) {
                const struct rcell *c = &cells[j];
                const char *fn = t->fams[c->fam].name;
                size_t fl = fam_len[c->fam];
                buf[len++] = c->type;
                len += coding_put_varint64(buf + len, fl);
                memcpy(buf + len, fn, fl);
                len += fl;
                len += coding_put_varint64(buf + len, c->qual_len);
                if (c->qual_len)
                    memcpy(buf + len, c->qual, c->qual_len);
                len += c->qual_len;
                len += coding_put_varint64(buf + len, (uint64_t)c->ts);
                len += coding_put_varint64(buf + len, c->value_len);
                if (c->value_len)
                    memcpy(buf + len, c->value, c->value_len);
                len += c->value_len;
            }
        }
    }
    uint64_t first = atomic_fetch_add(&s->next_seq, ncells);
    uint64_t last = first + ncells - 1;
    int rc = CT_OK;
    if (buf) {
        enum wal_sync ws = dur == WC_DURABILITY_ASYNC_WAL   ? WAL_SYNC_ASYNC
                           : dur == WC_DURABILITY_FSYNC_WAL ? WAL_SYNC_FSYNC
                                                            : WAL_SYNC_WRITE;
        rc = wal_append(s->wal, first, buf, len, ws, err);
        if (buf != stackbuf)
            free(buf);
    }
    if (fam_len != fam_len_stack)
        free(fam_len);
    if (rc == CT_OK) {
        engine_test_step(s, "write_before_insert");
        size_t j = 0;
        uint64_t flush_bytes = etable_flush_bytes(s, t);
        struct eregion *locked = NULL;
        uint64_t held_bytes = 0; /* `locked`'s memstore bytes when its mu was taken */
        /* each row's region is looked up once: as the next row of the previous iteration,
         * from the previous row's region (write_region_index) */
        size_t next_ix = n ? etable_region_index(t, rows[0].row.data, rows[0].row.len) : 0;
        struct eregion *next_r = n ? t->regions[next_ix] : NULL;
        for (size_t i = 0; i < n && rc == CT_OK; i++) {
            struct eregion *r = next_r;
            if (i + 1 < n) {
                next_ix = write_region_index(t, rows[i + 1].row.data, rows[i + 1].row.len, next_ix);
                next_r = t->regions[next_ix];
            } else {
                next_r = NULL;
            }
            if (r != locked) {
                if (locked) {
                    /* what this run inserted, counted before the mu goes (estore.memstore_total;
                     * a flush releasing them subtracts after) */
                    estore_memstore_add(s, eregion_memstore_bytes(locked) - held_bytes);
                    pthread_mutex_unlock(&locked->mu);
                }
                pthread_mutex_lock(&r->mu);
                locked = r;
                /* a flush waits for every seq up to its fence to be published: a batch that
                 * starts above it must not reach the memstore the flush is about to freeze
                 * (engine_int.h, eregion.fence); one that starts at or below it goes on */
                while (r->fence && first > r->fence)
                    pthread_cond_wait(&r->fence_cv, &r->mu);
                /* after the wait (the mu was released in it, and a flush may have dropped
                 * memstores): nothing but this run changes them until the mu goes */
                held_bytes = eregion_memstore_bytes(r);
                if (!r->first_edit_mono_ms)
                    r->first_edit_mono_ms = (int64_t)(clock_mono_ns() / 1000000) | 1;
            }
            for (size_t k = 0; k < row_cells[i] && rc == CT_OK; k++, j++) {
                const struct rcell *rc_ = &cells[j];
                struct cell c = {
                    .row = rows[i].row.data,
                    .row_len = (uint32_t)rows[i].row.len,
                    .qual = rc_->qual ? rc_->qual : (const uint8_t *)"",
                    .qual_len = (uint32_t)rc_->qual_len,
                    .value = rc_->value ? rc_->value : (const uint8_t *)"",
                    .value_len = (uint32_t)rc_->value_len,
                    .type = rc_->type,
                    .ts_ms = rc_->ts,
                    .seq = first + j,
                };
                rc = memstore_add(r->fams[rc_->fam].active, &c, err);
            }
            if (first + j - 1 > r->max_seq) /* seq of the batch's last cell added so far */
                r->max_seq = first + j - 1;
            atomic_fetch_add_explicit(&r->writes, 1, memory_order_relaxed);
            /* flush trigger: checked once per region run */
            if (next_r != r) {
                uint64_t bytes = 0;
                for (size_t f = 0; f < r->nfams; f++)
                    bytes += memstore_bytes(r->fams[f].active);
                if (bytes >= flush_bytes && !r->flush_queued) {
                    r->flush_queued = true;
                    estore_queue_job(s, EJOB_FLUSH, t, r, false);
                }
                if (bytes >= 4 * flush_bytes)
                    *blocked = true;
                for (size_t f = 0; f < r->nfams && t->compaction_enabled; f++)
                    if (r->fams[f].nfiles >= ENGINE_BLOCKING_FILES)
                        *blocked = true;
            }
        }
        if (locked) {
            estore_memstore_add(s, eregion_memstore_bytes(locked) - held_bytes);
            pthread_mutex_unlock(&locked->mu);
        }
        if (rc != CT_OK) /* a row may be half inserted: the store must not go on */
            estore_set_bg_error(s, err);
    }
    engine_test_step(s, "write_before_publish");
    publish(s, first, last);
    return rc;
}

/* Stripe of the row lock covering (table, row). */
static unsigned row_stripe(const struct etable *t, const uint8_t *row, size_t len)
{
    /* 8 bytes per step (a batch of 16,384 time-series rows hashed a byte at a time cost ~4 % of
     * the TSD's writer thread); stripes are in memory only, so the function may change */
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)t->id ^ ((uint64_t)len << 32);
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, row + i, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
        h ^= h >> 29;
    }
    if (i < len) {
        uint64_t w = 0;
        memcpy(&w, row + i, len - i);
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
    }
    h ^= h >> 32;
    h *= 0xC4CEB9FE1A85EC53ULL;
    h ^= h >> 29;
    return (unsigned)(h & (ENGINE_ROW_STRIPES - 1));
}

/* True when a mutation of the batch deletes "the latest version", which it must read first. */
static bool batch_reads_latest(const struct wc_row_mutation *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < rows[i].n; k++)
            if (rows[i].mutations[k].op == WC_OP_DELETE_VERSION &&
                rows[i].mutations[k].ts_ms == WC_TS_LATEST)
                return true;
    return false;
}

/* Takes the stripes of every row, in ascending order: shared, or exclusive when the batch reads
 * before it writes (delete-latest: two such deletes must not both pick the same version);
 * returns the set to unlock. */
static uint64_t rows_lock(struct estore *s, const struct etable *t,
                          const struct wc_row_mutation *rows, size_t n, bool exclusive)
{
    uint64_t mask = 0;
    for (size_t i = 0; i < n && mask != UINT64_MAX; i++)
        mask |= 1ull << row_stripe(t, rows[i].row.data, rows[i].row.len);
    for (uint64_t m = mask; m; m &= m - 1) { /* set bits, lowest first */
        if (exclusive)
            pthread_rwlock_wrlock(&s->row_lk[__builtin_ctzll(m)]);
        else
            pthread_rwlock_rdlock(&s->row_lk[__builtin_ctzll(m)]);
    }
    return mask;
}

static void rows_unlock(struct estore *s, uint64_t mask)
{
    for (uint64_t m = mask; m; m &= m - 1)
        pthread_rwlock_unlock(&s->row_lk[__builtin_ctzll(m)]);
}

/* The mutation itself; REQUIRES the row locks of every row held (shared or exclusive). Sets
 * *blocked when the caller must wait for memstore room (after letting go of the row locks). */
static int mutate_batch_locked(struct wc_table *wt, const struct wc_row_mutation *rows, size_t n,
                               enum wc_durability d, bool *blocked, struct ct_err *err)
{
    struct etable_handle *h = (struct etable_handle *)wt;
    struct etable *t = h->t;
    struct estore *s = estore_of(wt->store);
    int rc = estore_check_bg_error(s, err);
    if (rc != CT_OK)
        return rc;
    if (s->opt.read_only)
        return ct_err_set(err, CT_EINVAL, "the store was opened read-only");
    if ((rc = check_table_writable(t, err)) != CT_OK)
        return rc;
    int64_t now = clock_now_ms();

    /* Delete-latest needs a read first (outside the map lock). */
    size_t nmut = 0;
    for (size_t i = 0; i < n; i++)
        nmut += rows[i].n;
    int64_t *latest = NULL;
    for (size_t i = 0, m = 0; i < n; i++) {
        for (size_t k = 0; k < rows[i].n; k++, m++) {
            const struct wc_mutation *mu = &rows[i].mutations[k];
            if (mu->op != WC_OP_DELETE_VERSION || mu->ts_ms != WC_TS_LATEST)
                continue;
            if (!latest && !(latest = calloc(nmut, sizeof(*latest))))
                return ct_err_set(err, CT_ENOMEM, "out of memory resolving deletes");
            int64_t ts;
            rc = engine_read_latest(s, t, rows[i].row.data, rows[i].row.len, mu->family,
                                    mu->qualifier.data, mu->qualifier.len, &ts, NULL, NULL, err);
            if (rc < 0) {
                free(latest);
                return rc;
            }
            latest[m] = rc == CT_OK ? ts : now;
        }
    }

    if (pthread_rwlock_rdlock(&t->map_lock) != 0) {
        free(latest);
        return ct_err_set(err, CT_EIO, "cannot lock table %s", t->name);
    }
    struct rcell stack_cells[64];
    size_t stack_rows[64];
    struct rcell *cells = stack_cells;
    size_t *row_cells = stack_rows;
    size_t ncells = 0, cap = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < rows[i].n; k++)
            cap += rows[i].mutations[k].op == WC_OP_DELETE_ROW ? t->nfams : 1;
    if (cap > 64 && !(cells = malloc(cap * sizeof(*cells)))) {
        rc = ct_err_set(err, CT_ENOMEM, "out of memory for a batch of %zu cells", cap);
        goto out;
    }
    if (n > 64 && !(row_cells = malloc(n * sizeof(*row_cells)))) {
        rc = ct_err_set(err, CT_ENOMEM, "out of memory for a batch of %zu rows", n);
        goto out;
    }
    if ((rc = check_table_writable(t, err)) != CT_OK)
        goto out;
    int last_fi = -1; /* the family of the previous mutation (most batches have one) */
    struct wc_bytes last_fam = {NULL, 0};
    for (size_t i = 0, m = 0; i < n; i++) {
        row_cells[i] = 0;
        for (size_t k = 0; k < rows[i].n; k++, m++) {
            const struct wc_mutation *mu = &rows[i].mutations[k];
            int64_t ts = mu->ts_ms == WC_TS_LATEST ? now : mu->ts_ms;
            if (latest && mu->op == WC_OP_DELETE_VERSION && mu->ts_ms == WC_TS_LATEST)
                ts = latest[m];
            if (mu->op == WC_OP_DELETE_ROW) {
                for (size_t f = 0; f < t->nfams; f++) {
                    cells[ncells++] =
                        (struct rcell){WC_TYPE_DELETE_FAMILY, (int)f, NULL, 0, NULL, 0, ts};
                    row_cells[i]++;
                }
                continue;
            }
            int fi = last_fi;
            if (fi < 0 || mu->family.len != last_fam.len ||
                (mu->family.data != last_fam.data &&
                 memcmp(mu->family.data, last_fam.data, last_fam.len) != 0))
                fi = etable_family_index(t, mu->family.data, mu->family.len);
            last_fi = fi;
            last_fam = mu->family;
            if (fi < 0) {
                rc = unknown_family(t, mu->family, err);
                goto out;
            }
            if (mu->op == WC_OP_PUT && mu->value.len > WC_MAX_CELL_BYTES) {
                rc = ct_err_set(err, CT_EINVAL, "cell of %zu bytes exceeds the %u-byte limit",
                                mu->value.len, WC_MAX_CELL_BYTES);
                goto out;
            }
            bool fam_wide = mu->op == WC_OP_DELETE_FAMILY || mu->op == WC_OP_DELETE_FAMILY_VERSION;
            struct rcell *c = &cells[ncells++];
            c->type = type_of(mu->op);
            c->fam = fi;
            c->qual = fam_wide ? NULL : mu->qualifier.data;
            c->qual_len = fam_wide ? 0 : mu->qualifier.len;
            c->value = mu->op == WC_OP_PUT ? mu->value.data : NULL;
            c->value_len = mu->op == WC_OP_PUT ? mu->value.len : 0;
            c->ts = ts;
            row_cells[i]++;
        }
    }
    if (ncells)
        rc =
            apply_batch(s, t, rows, n, cells, row_cells, ncells, durability_of(t, d), blocked, err);
out:
    pthread_rwlock_unlock(&t->map_lock);
    if (cells != stack_cells)
        free(cells);
    if (row_cells != stack_rows)
        free(row_cells);
    free(latest);
    return rc;
}

int engine_mutate_batch(struct wc_table *wt, const struct wc_row_mutation *rows, size_t n,
                        enum wc_durability d, struct ct_err *err)
{
    struct etable *t = ((struct etable_handle *)wt)->t;
    struct estore *s = estore_of(wt->store);
    bool blocked = false;
    wait_for_total_room(s); /* (7): before any lock */
    uint64_t mask = rows_lock(s, t, rows, n, batch_reads_latest(rows, n));
    int rc = mutate_batch_locked(wt, rows, n, d, &blocked, err);
    rows_unlock(s, mask);
    if (rc == CT_OK && blocked && n > 0)
        wait_for_memstore_room(s, t, rows[n - 1].row);
    return rc;
}

/* Takes the row's stripe exclusive (read-modify-write); returns it for row_unlock_excl(). */
static pthread_rwlock_t *row_lock_excl(struct estore *s, const struct etable *t,
                                       struct wc_bytes row)
{
    pthread_rwlock_t *l = &s->row_lk[row_stripe(t, row.data, row.len)];
    pthread_rwlock_wrlock(l);
    return l;
}

int engine_increment(struct wc_table *wt, struct wc_bytes row, struct wc_bytes family,
                     struct wc_bytes qualifier, int64_t delta, enum wc_durability d, int64_t *out,
                     struct ct_err *err)
{
    struct etable_handle *h = (struct etable_handle *)wt;
    struct estore *s = estore_of(wt->store);
    wait_for_total_room(s); /* (7): before any lock */
    pthread_rwlock_t *lk = row_lock_excl(s, h->t, row);
    bool blocked = false;
    int64_t ts = 0, now = clock_now_ms();
    uint8_t *val = NULL;
    size_t vlen = 0;
    int rc = engine_read_latest(s, h->t, row.data, row.len, family, qualifier.data, qualifier.len,
                                &ts, &val, &vlen, err);
    int64_t cur = 0;
    if (rc == CT_OK) {
        if (vlen != 8) {
            rc = ct_err_set(err, CT_EINVAL,
                            "cannot increment a value of %zu bytes (counters are 8 bytes)", vlen);
            goto out;
        }
        cur = (int64_t)coding_get_be64(val);
    } else if (rc != CT_NOTFOUND) {
        goto out;
    } else {
        ts = now;
    }
    cur = (int64_t)((uint64_t)cur + (uint64_t)delta);
    uint8_t buf[8];
    coding_put_be64(buf, (uint64_t)cur);
    struct wc_mutation m = {WC_OP_PUT, family, qualifier, wc_bytes_of(buf, 8), ts > now ? ts : now};
    struct wc_row_mutation rm = {row, &m, 1};
    rc = mutate_batch_locked(wt, &rm, 1, d, &blocked, err);
    if (rc == CT_OK)
        *out = cur;
out:
    pthread_rwlock_unlock(lk);
    free(val);
    if (rc == CT_OK && blocked)
        wait_for_memstore_room(s, h->t, row);
    return rc;
}

int engine_check_and_mutate(struct wc_table *wt, struct wc_bytes row, struct wc_bytes family,
                            struct wc_bytes qualifier, const struct wc_bytes *expected,
                            const struct wc_row_mutation *rm, enum wc_durability d, bool *applied,
                            struct ct_err *err)
{
    struct etable_handle *h = (struct etable_handle *)wt;
    struct estore *s = estore_of(wt->store);
    wait_for_total_room(s); /* (7): before any lock */
    pthread_rwlock_t *lk = row_lock_excl(s, h->t, row);
    bool blocked = false;
    int64_t ts;
    uint8_t *val = NULL;
    size_t vlen = 0;
    *applied = false;
    int rc = engine_read_latest(s, h->t, row.data, row.len, family, qualifier.data, qualifier.len,
                                &ts, &val, &vlen, err);
    if (rc < 0)
        goto out;
    bool match = expected ? (rc == CT_OK && vlen == expected->len &&
                             (vlen == 0 || memcmp(val, expected->data, vlen) == 0))
                          : rc == CT_NOTFOUND;
    rc = CT_OK;
    if (match) {
        rc = mutate_batch_locked(wt, rm, 1, d, &blocked, err);
        *applied = rc == CT_OK;
    }
out:
    pthread_rwlock_unlock(lk);
    free(val);
    if (rc == CT_OK && blocked)
        wait_for_memstore_room(s, h->t, row);
    return rc;
}

/* ---- replay ------------------------------------------------------------------------------ */

struct replay_ctx {
    struct estore *s;
    uint64_t max_seq;
    uint64_t records;
};

static int replay_bad(struct ct_err *err, uint64_t seq)
{
    return ct_err_set(err, CT_ECORRUPT, "malformed batch in log record seq %llu",
                      (unsigned long long)seq);
}

static int replay_record(void *arg, uint64_t seq, const uint8_t *p, size_t len, struct ct_err *err)
{
    struct replay_ctx *x = arg;
    struct estore *s = x->s;
    const uint8_t *end = p + len;
    uint64_t v, tid, nrows;
    size_t k;
    if (len < 1 || p[0] != BATCH_FORMAT_VERSION)
        return ct_err_set(err, CT_ECORRUPT,
                          "unsupported batch format version %d in log record seq %llu (this "
                          "build reads %d)",
                          len ? p[0] : -1, (unsigned long long)seq, BATCH_FORMAT_VERSION);
    p++;
    if (!(k = coding_get_varint64(p, end, &tid)))
        return replay_bad(err, seq);
    p += k;
    if (!(k = coding_get_varint64(p, end, &nrows)))
        return replay_bad(err, seq);
    p += k;
    struct etable *t = NULL;
    for (size_t i = 0; i < s->ntables; i++)
        if (s->tables[i]->id == tid)
            t = s->tables[i];
    uint64_t cseq = seq;
    x->records++;
    for (uint64_t r = 0; r < nrows; r++) {
        uint64_t rlen, nc;
        if (!(k = coding_get_varint64(p, end, &rlen)) || rlen > (uint64_t)(end - p - k))
            return replay_bad(err, seq);
        p += k;
        const uint8_t *row = p;
        p += rlen;
        if (!(k = coding_get_varint64(p, end, &nc)))
            return replay_bad(err, seq);
        p += k;
        struct eregion *reg = t ? t->regions[etable_region_index(t, row, rlen)] : NULL;
        for (uint64_t c = 0; c < nc; c++, cseq++) {
            if (p >= end)
                return replay_bad(err, seq);
            uint8_t type = *p++;
            uint64_t fl, ql, ts, vl;
            if (!(k = coding_get_varint64(p, end, &fl)) || fl > (uint64_t)(end - p - k))
                return replay_bad(err, seq);
            p += k;
            const uint8_t *fam = p;
            p += fl;
            if (!(k = coding_get_varint64(p, end, &ql)) || ql > (uint64_t)(end - p - k))
                return replay_bad(err, seq);
            p += k;
            const uint8_t *qual = p;
            p += ql;
            if (!(k = coding_get_varint64(p, end, &ts)))
                return replay_bad(err, seq);
            p += k;
            if (!(k = coding_get_varint64(p, end, &vl)) || vl > (uint64_t)(end - p - k))
                return replay_bad(err, seq);
            p += k;
            const uint8_t *val = p;
            p += vl;
            if (cseq > x->max_seq)
                x->max_seq = cseq;
            if (!reg)
                continue;
            int fi = etable_family_index(t, fam, fl);
            if (fi < 0 || cseq <= reg->fams[fi].flushed_upto)
                continue;
            struct cell ce = {row,  qual,        val, (uint32_t)rlen, (uint32_t)ql, (uint32_t)vl,
                              type, (int64_t)ts, cseq};
            struct memstore *m = reg->fams[fi].active;
            size_t before = memstore_bytes(m);
            int rc = memstore_add(m, &ce, err);
            if (rc != CT_OK)
                return rc;
            estore_memstore_add(s, memstore_bytes(m) - before);
        }
    }
    (void)v;
    return CT_OK;
}

int engine_replay(struct estore *s, struct ct_err *err)
{
    struct replay_ctx x = {s, 0, 0};
    int rc = wal_replay(s->wal, replay_record, &x, err);
    if (rc != CT_OK)
        return ct_err_prefix(err, "replaying the log in %s/wal", s->dir);
    if (x.max_seq + 1 > atomic_load(&s->next_seq))
        atomic_store(&s->next_seq, x.max_seq + 1);
    atomic_store(&s->visible_seq, atomic_load(&s->next_seq) - 1);
    return CT_OK;
}
