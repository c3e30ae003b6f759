/* maint.c - flushes, compactions and splits of regions, the exploring compaction policy, and
 * the background job runner.
 *
 * Invariants: (1) a new block file is written under a temporary name, finished (fsynced),
 * renamed and its directory fsynced before the catalog lists it; the catalog is rewritten
 * atomically; replaced files are deleted only after the catalog stops listing them and no
 * reader holds them (sst_mark_obsolete); (2) flush and compaction apply the same retention
 * filter (docs/storage-contract.md, "Flush and compaction retention"): expired cells dropped,
 * masked puts dropped, markers kept except by a major compaction, VERSIONS / MIN_VERSIONS counted
 * per column, duplicates reduced to the newest write; then the family's compaction hook may replace
 * a row's surviving puts; (3) a region's inputs may hold rows outside its range (files and
 * memstores shared by split daughters): every merge is bounded to [start, end); (4) a split only
 * rewrites the catalog: the daughters share the parent's files and memstores until their own
 * flushes and compactions rewrite them, so it is atomic (the catalog lists the parent or the
 * daughters) and loses nothing after a crash (the log replays into whichever regions the catalog
 * lists); (5) a flush writes a prefix of the region's seqs and records it as flushed_upto (the
 * flush fence, engine_int.h), so the replay after a crash adds back exactly the cells no file
 * holds.
 *
 * Locking: etable.maint_lock shared + eregion.maint_mu around flushes and compactions;
 * maint_lock exclusive + cat_mu + map_lock exclusive around a split (engine_int.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "storage/clock.h"
#include "storage/engine/eio.h"
#include "storage/engine/engine_int.h"

/* ---- exploring policy ("Flush, compaction and split policy") ---------------------------- */

void compact_policy_default(struct compact_policy *p)
{
    p->min_files = 3;
    p->max_files = 10;
    p->ratio = 1.2;
    p->min_size = 128ull << 20;
    p->max_size = UINT64_MAX;
}

bool compact_select(const uint64_t *sizes, size_t n, const struct compact_policy *p, size_t *start,
                    size_t *count)
{
    bool found = false;
    size_t best_n = 0;
    uint64_t best_size = 0;
    for (size_t s = 0; s < n; s++) {
        for (size_t e = s + p->min_files - 1; e < n; e++) {
            size_t len = e - s + 1;
            if (len < p->min_files || len > p->max_files)
                continue;
            uint64_t total = 0;
            for (size_t i = s; i <= e; i++)
                total += sizes[i];
            if (total > p->max_size)
                continue;
            if (total >= p->min_size) {
                bool in_ratio = true;
                for (size_t i = s; i <= e && in_ratio; i++)
                    if ((double)sizes[i] > (double)(total - sizes[i]) * p->ratio)
                        in_ratio = false;
                if (!in_ratio)
                    continue;
            }
            if (!found || len > best_n || (len == best_n && total < best_size)) {
                found = true;
                best_n = len;
                best_size = total;
                *start = s;
                *count = len;
            }
        }
    }
    return found;
}

/* ---- retention and output ---------------------------------------------------------------- */

struct marena {
    uint8_t **chunks;
    size_t nchunks;
    size_t used; /* in the last chunk */
    size_t cap;  /* of the last chunk */
};

static void *marena_alloc(struct marena *a, size_t n)
{
    if (!a->nchunks || a->cap - a->used < n) {
        size_t cap = n > (1u << 20) ? n : (1u << 20);
        uint8_t **nc = realloc(a->chunks, (a->nchunks + 1) * sizeof(*nc));
        if (!nc)
            return NULL;
        a->chunks = nc;
        if (!(a->chunks[a->nchunks] = malloc(cap)))
            return NULL;
        a->nchunks++;
        a->used = 0;
        a->cap = cap;
    }
    void *p = a->chunks[a->nchunks - 1] + a->used;
    a->used += n;
    return p;
}

static void marena_reset(struct marena *a)
{
    /* keep the first chunk */
    for (size_t i = 1; i < a->nchunks; i++)
        free(a->chunks[i]);
    if (a->nchunks > 1) {
        a->nchunks = 1;
        a->cap = 1u << 20;
    }
    a->used = 0;
    if (a->nchunks == 1 && a->cap < (1u << 20))
        a->cap = 1u << 20;
}

static void marena_free(struct marena *a)
{
    for (size_t i = 0; i < a->nchunks; i++)
        free(a->chunks[i]);
    free(a->chunks);
    memset(a, 0, sizeof(*a));
}

struct cvec {
    struct cell *v;
    size_t n, cap;
};

static int cvec_push(struct cvec *c, const struct cell *x)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 256;
        struct cell *nv = realloc(c->v, cap * sizeof(*nv));
        if (!nv)
            return CT_ENOMEM;
        c->v = nv;
        c->cap = cap;
    }
    c->v[c->n++] = *x;
    return CT_OK;
}

/* One output file being written by a flush or compaction. */
struct mctx {
    struct estore *s;
    struct etable *t;
    struct eregion *r;
    struct wc_family_desc d;
    struct ehook hook;
    bool major;
    int64_t oldest;
    uint64_t read_point; /* cells above it are kept untouched (an open snapshot may need more) */
    uint64_t expected_cells;
    /* current row */
    struct marena rowmem;
    struct cvec row;
    struct cvec keep;
    struct cvec emitted;
    struct wc_cell *wcells;
    size_t wcells_cap;
    struct marena hookmem;
    /* output */
    struct sst_writer *w;
    uint64_t file_id;
    char tmp[4300];
    char path[4200];
    uint64_t written;
    struct cell last_out;
    bool have_last_out;
};

struct msink {
    struct wc_cell_sink base;
    struct mctx *m;
    uint64_t seq;
    const struct cell *rowref;
};

static int msink_emit(struct wc_cell_sink *sk, const struct wc_cell *c, struct ct_err *err)
{
    struct msink *s = (struct msink *)sk;
    struct mctx *m = s->m;
    if (cell_bytes_cmp(c->row.data, c->row.len, s->rowref->row, s->rowref->row_len) != 0)
        return ct_err_set(err, CT_EINVAL, "a compaction hook emitted a cell of another row");
    uint8_t *p = marena_alloc(&m->hookmem, c->qualifier.len + c->value.len + 1);
    if (!p)
        return ct_err_set(err, CT_ENOMEM, "out of memory in a compaction hook");
    if (c->qualifier.len)
        memcpy(p, c->qualifier.data, c->qualifier.len);
    if (c->value.len)
        memcpy(p + c->qualifier.len, c->value.data, c->value.len);
    struct cell x = {s->rowref->row,
                     p,
                     p + c->qualifier.len,
                     s->rowref->row_len,
                     (uint32_t)c->qualifier.len,
                     (uint32_t)c->value.len,
                     (uint8_t)c->type,
                     c->ts_ms,
                     s->seq};
    if (m->emitted.n && cell_compare(&m->emitted.v[m->emitted.n - 1], &x) >= 0)
        return ct_err_set(err, CT_EINVAL, "a compaction hook emitted cells out of order or twice");
    if (cvec_push(&m->emitted, &x) != CT_OK)
        return ct_err_set(err, CT_ENOMEM, "out of memory in a compaction hook");
    return CT_OK;
}

static int mctx_out(struct mctx *m, const struct cell *c, struct ct_err *err)
{
    if (m->have_last_out && cell_compare(&m->last_out, c) >= 0)
        return CT_OK; /* an exact duplicate (a replayed cell that was already flushed) */
    if (!m->w) {
        pthread_mutex_lock(&m->s->cat_mu);
        m->file_id = m->s->next_file_id++;
        pthread_mutex_unlock(&m->s->cat_mu);
        estore_file_path(m->s, m->file_id, m->path, sizeof(m->path));
        snprintf(m->tmp, sizeof(m->tmp), "%s.tmp", m->path);
        struct sst_writer_options wo = {m->d.blocksize, m->d.compression, m->d.bloom, m->d.encoding,
                                        m->expected_cells};
        int rc = sst_writer_open(m->tmp, &wo, &m->w, err);
        if (rc != CT_OK)
            return rc;
    }
    int rc = sst_writer_add(m->w, c, err);
    if (rc != CT_OK)
        return rc;
    m->last_out = *c;
    m->have_last_out = true;
    m->written++;
    return CT_OK;
}

static bool in_set(const int64_t *v, size_t n, int64_t x)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == x)
            return true;
    return false;
}

/* With KEEP_DELETED_CELLS a major compaction drops a kept marker only when nothing it could
 * mask remains (docs/storage-contract.md, "KEEP_DELETED_CELLS"): no put of its column (family
 * markers: of the family) at or below its timestamp (exactly at it for the version markers). */
static void kdc_drop_useless_markers(struct mctx *m)
{
    size_t out = 0;
    for (size_t i = 0; i < m->keep.n; i++) {
        const struct cell *k = &m->keep.v[i];
        bool keep = true;
        if (k->type != WC_TYPE_PUT && k->seq <= m->read_point) {
            bool fam = k->type == WC_TYPE_DELETE_FAMILY || k->type == WC_TYPE_DELETE_FAMILY_VERSION;
            bool exact = k->type == WC_TYPE_DELETE || k->type == WC_TYPE_DELETE_FAMILY_VERSION;
            keep = false;
            for (size_t j = 0; j < m->keep.n && !keep; j++) {
                const struct cell *p = &m->keep.v[j];
                if (p->type != WC_TYPE_PUT)
                    continue;
                if (!fam && cell_bytes_cmp(p->qual, p->qual_len, k->qual, k->qual_len) != 0)
                    continue;
                keep = exact ? p->ts_ms == k->ts_ms : p->ts_ms <= k->ts_ms;
            }
        }
        if (keep)
            m->keep.v[out++] = *k;
    }
    m->keep.n = out;
}

/* Applies the retention filter and the hook to the buffered row and writes the survivors. */
static int mctx_row(struct mctx *m, struct ct_err *err)
{
    const struct wc_family_desc *d = &m->d;
    bool kdc = d->keep_deleted != WC_KEEP_DELETED_FALSE;
    int64_t F = INT64_MIN, C = INT64_MIN;
    int64_t fv[64], dts[64];
    size_t nfv = 0, ndts = 0;
    bool fv_over = false, dts_over = false;
    const struct cell *col = NULL;
    uint32_t n = 0;
    bool have_last = false;
    int64_t last_ts = 0;
    uint8_t last_type = 0;
    m->keep.n = 0;
    m->have_last_out = false; /* last_out points into the previous row's (reused) memory */
    size_t nputs = 0;
    uint64_t min_seq = UINT64_MAX;
    for (size_t i = 0; i < m->row.n; i++) {
        const struct cell *c = &m->row.v[i];
        if (c->seq > m->read_point) {
            /* newer than a snapshot still open: kept as is, counts for nothing yet */
            if (cvec_push(&m->keep, c) != CT_OK)
                return ct_err_set(err, CT_ENOMEM, "out of memory compacting");
            continue;
        }
        if (!col || cell_bytes_cmp(col->qual, col->qual_len, c->qual, c->qual_len) != 0) {
            col = c;
            C = INT64_MIN;
            ndts = 0;
            dts_over = false;
            n = 0;
            have_last = false;
        }
        if (have_last && last_ts == c->ts_ms && last_type == c->type)
            continue;
        have_last = true;
        last_ts = c->ts_ms;
        last_type = c->type;
        if (d->min_versions == 0 && c->ts_ms < m->oldest)
            continue;
        if (c->type != WC_TYPE_PUT) {
            /* KEEP_DELETED_CELLS TTL: an expired marker behaves as with FALSE */
            bool applies = !kdc || (d->keep_deleted == WC_KEEP_DELETED_TTL && c->ts_ms < m->oldest);
            if (applies) {
                switch (c->type) {
                case WC_TYPE_DELETE_FAMILY:
                    if (c->ts_ms > F)
                        F = c->ts_ms;
                    break;
                case WC_TYPE_DELETE_FAMILY_VERSION:
                    if (nfv < 64)
                        fv[nfv++] = c->ts_ms;
                    else
                        fv_over = true;
                    break;
                case WC_TYPE_DELETE_COLUMN:
                    if (c->ts_ms > C)
                        C = c->ts_ms;
                    break;
                case WC_TYPE_DELETE:
                    if (ndts < 64)
                        dts[ndts++] = c->ts_ms;
                    else
                        dts_over = true;
                    break;
                }
                /* a marker set too large to track is kept even by a major compaction so the
                 * puts it masks stay masked at read */
                if (m->major && !fv_over && !dts_over)
                    continue;
            }
            if (cvec_push(&m->keep, c) != CT_OK)
                return ct_err_set(err, CT_ENOMEM, "out of memory compacting");
            continue;
        }
        /* only applied markers are in F, C and the sets (none with KEEP_DELETED_CELLS TRUE) */
        if (c->ts_ms <= F || c->ts_ms <= C || in_set(fv, nfv, c->ts_ms) ||
            in_set(dts, ndts, c->ts_ms))
            continue;
        n++;
        if (n > d->versions)
            continue;
        if (n > d->min_versions && c->ts_ms < m->oldest)
            continue;
        if (cvec_push(&m->keep, c) != CT_OK)
            return ct_err_set(err, CT_ENOMEM, "out of memory compacting");
        nputs++;
        if (c->seq < min_seq)
            min_seq = c->seq;
    }
    if (kdc && m->major && m->keep.n <= 4096)
        kdc_drop_useless_markers(m);
    const struct cell *puts_src = NULL;
    size_t puts_n = 0;
    bool replaced = false;
    if (m->hook.fn && nputs) {
        if (m->wcells_cap < nputs) {
            struct wc_cell *nw = realloc(m->wcells, nputs * sizeof(*nw));
            if (!nw)
                return ct_err_set(err, CT_ENOMEM, "out of memory compacting");
            m->wcells = nw;
            m->wcells_cap = nputs;
        }
        size_t k = 0;
        const struct cell *rowref = NULL;
        for (size_t i = 0; i < m->keep.n; i++) {
            const struct cell *c = &m->keep.v[i];
            if (c->type != WC_TYPE_PUT || c->seq > m->read_point)
                continue;
            rowref = c;
            m->wcells[k++] = (struct wc_cell){wc_bytes_of(c->row, c->row_len),
                                              wc_bytes_of(d->name, strlen(d->name)),
                                              wc_bytes_of(c->qual, c->qual_len),
                                              wc_bytes_of(c->value, c->value_len),
                                              c->ts_ms,
                                              WC_TYPE_PUT};
        }
        m->emitted.n = 0;
        marena_reset(&m->hookmem);
        struct msink sk = {{msink_emit}, m, min_seq, rowref};
        int rc = m->hook.fn(m->hook.arg, m->wcells, k, m->major, &sk.base, err);
        if (rc == CT_OK) {
            replaced = true;
            puts_src = m->emitted.v;
            puts_n = m->emitted.n;
        } else if (rc != CT_NOTFOUND) {
            return ct_err_prefix(err, "compaction hook of %s:%s", m->t->name, d->name);
        }
    }
    if (!replaced) {
        for (size_t i = 0; i < m->keep.n; i++) {
            int rc = mctx_out(m, &m->keep.v[i], err);
            if (rc != CT_OK)
                return rc;
        }
        return CT_OK;
    }
    /* merge kept markers (and cells above the read point) with the hook's puts */
    size_t i = 0, j = 0;
    for (;;) {
        while (i < m->keep.n && m->keep.v[i].type == WC_TYPE_PUT &&
               m->keep.v[i].seq <= m->read_point)
            i++;
        const struct cell *a = i < m->keep.n ? &m->keep.v[i] : NULL;
        const struct cell *b = j < puts_n ? &puts_src[j] : NULL;
        if (!a && !b)
            break;
        const struct cell *c;
        if (a && (!b || cell_compare(a, b) < 0)) {
            c = a;
            i++;
        } else {
            c = b;
            j++;
        }
        int rc = mctx_out(m, c, err);
        if (rc != CT_OK)
            return rc;
    }
    return CT_OK;
}

static void mctx_destroy(struct mctx *m)
{
    if (m->hook.fn) { /* no more calls of the hook from this merge */
        pthread_mutex_lock(&m->s->cat_mu);
        if (--m->s->hook_users == 0)
            pthread_cond_broadcast(&m->s->hook_cv);
        pthread_mutex_unlock(&m->s->cat_mu);
        m->hook.fn = NULL;
    }
    if (m->w)
        sst_writer_abort(m->w);
    m->w = NULL;
    marena_free(&m->rowmem);
    marena_free(&m->hookmem);
    free(m->row.v);
    free(m->keep.v);
    free(m->emitted.v);
    free(m->wcells);
}

/* Merges the children (bounded to the region) through the filter into a new file. On success
 * *out holds the new file (or sst NULL when nothing survived). */
static int merge_to_file(struct mctx *m, struct echild *kids, size_t nk, struct efile *out,
                         struct ct_err *err)
{
    struct eregion *r = m->r;
    out->sst = NULL;
    out->id = 0;
    struct cell start;
    ecell_row_start(&start, r->start, r->start_len);
    int rc;
    for (size_t i = 0; i < nk; i++)
        if ((rc = echild_seek(&kids[i], &start, err)) != CT_OK)
            return rc;
    m->row.n = 0;
    marena_reset(&m->rowmem);
    for (;;) {
        struct echild *best = NULL;
        for (size_t i = 0; i < nk; i++) {
            struct echild *c = &kids[i];
            if (!c->valid)
                continue;
            if (r->end_len && cell_bytes_cmp(c->cur.row, c->cur.row_len, r->end, r->end_len) >= 0)
                continue;
            if (!best || cell_compare(&c->cur, &best->cur) < 0)
                best = c;
        }
        if (best && m->row.n &&
            cell_bytes_cmp(m->row.v[0].row, m->row.v[0].row_len, best->cur.row,
                           best->cur.row_len) != 0) {
            if ((rc = mctx_row(m, err)) != CT_OK)
                return rc;
            m->row.n = 0;
            marena_reset(&m->rowmem);
        }
        if (!best)
            break;
        const struct cell *c = &best->cur;
        struct cell x = *c;
        if (best->is_ms) {
            /* memstore bytes stay put while the flush holds its reference: no copy */
            if (m->row.n)
                x.row = m->row.v[0].row;
            if (cvec_push(&m->row, &x) != CT_OK)
                return ct_err_set(err, CT_ENOMEM, "out of memory flushing");
            if ((rc = echild_next(best, err)) != CT_OK)
                return rc;
            continue;
        }
        size_t need = (m->row.n ? 0 : c->row_len) + c->qual_len + c->value_len + 1;
        uint8_t *p = marena_alloc(&m->rowmem, need);
        if (!p)
            return ct_err_set(err, CT_ENOMEM, "out of memory compacting");
        if (!m->row.n) {
            memcpy(p, c->row, c->row_len);
            x.row = p;
            p += c->row_len;
        } else {
            x.row = m->row.v[0].row;
        }
        if (c->qual_len)
            memcpy(p, c->qual, c->qual_len);
        x.qual = p;
        p += c->qual_len;
        if (c->value_len)
            memcpy(p, c->value, c->value_len);
        x.value = p;
        if (cvec_push(&m->row, &x) != CT_OK)
            return ct_err_set(err, CT_ENOMEM, "out of memory compacting");
        if ((rc = echild_next(best, err)) != CT_OK)
            return rc;
    }
    if (m->row.n && (rc = mctx_row(m, err)) != CT_OK)
        return rc;
    if (!m->w)
        return CT_OK;
    struct sst_writer *w = m->w;
    m->w = NULL;
    if ((rc = sst_writer_finish(w, NULL, err)) != CT_OK) {
        if (eio_unlink(m->tmp) != 0) { /* best effort: the orphan goes at the next open */
        }
        return rc;
    }
    if (eio_rename(m->tmp, m->path) != 0) {
        rc = ct_err_errno(err, CT_EIO, errno, "cannot rename %s to %s", m->tmp, m->path);
        if (eio_unlink(m->tmp) != 0) { /* the orphan goes at the next open */
        }
        return rc;
    }
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s/sst", m->s->dir);
    if ((rc = eio_fsync_dir(dir, err)) != CT_OK)
        return rc;
    struct sst_read_options ro = {m->d.blockcache, m->d.in_memory};
    if ((rc = sst_open(m->path, m->file_id, m->s->cache, &ro, &out->sst, err)) != CT_OK)
        return rc;
    out->id = m->file_id;
    return CT_OK;
}

static void mctx_init(struct mctx *m, struct estore *s, struct etable *t, struct eregion *r, int f,
                      bool major)
{
    memset(m, 0, sizeof(*m));
    m->s = s;
    m->t = t;
    m->r = r;
    m->major = major;
    pthread_mutex_lock(&s->cat_mu);
    m->d = t->fams[f];
    m->hook = t->hooks[f];
    if (m->hook.fn)
        s->hook_users++; /* until mctx_destroy (estore.hook_users) */
    pthread_mutex_unlock(&s->cat_mu);
    int64_t now = clock_now_ms();
    m->oldest = m->d.ttl_s >= WC_TTL_FOREVER ? INT64_MIN : now - m->d.ttl_s * 1000;
    m->read_point = estore_read_point(s);
}

/* ---- flush -------------------------------------------------------------------------------- */

static void queue_followups(struct estore *s, struct etable *t, struct eregion *r)
{
    bool compact = false;
    pthread_mutex_lock(&r->mu);
    for (size_t f = 0; f < r->nfams; f++)
        if (r->fams[f].nfiles >= 3)
            compact = true;
    pthread_mutex_unlock(&r->mu);
    if (compact && t->compaction_enabled)
        estore_queue_job(s, EJOB_COMPACT, t, r, false);
    estore_queue_job(s, EJOB_SPLIT_CHECK, t, r, false);
}

static int flush_locked(struct estore *s, struct etable *t, struct eregion *r, struct ct_err *err)
{
    size_t nf = r->nfams;
    struct memstore ***fz = calloc(nf, sizeof(*fz));
    size_t *nfz = calloc(nf, sizeof(*nfz));
    struct efile *nfile = calloc(nf, sizeof(*nfile));
    int rc = CT_OK;
    if (!fz || !nfz || !nfile) {
        free(fz);
        free(nfz);
        free(nfile);
        return ct_err_set(err, CT_ENOMEM, "out of memory flushing");
    }
    bool any = false;
    pthread_mutex_lock(&r->mu);
    if (r->dead) {
        pthread_mutex_unlock(&r->mu);
        goto out;
    }
    /* Write a prefix of the seqs: while a batch that holds a lower seq than one already in the
     * memstores has not published, fence off later batches and wait for it (engine_int.h,
     * eregion.fence). Afterwards every cell in the memstores has seq <= visible_seq and every
     * cell with seq <= visible_seq is in them, so the watermark below is exact. */
    uint64_t fence = r->max_seq;
    if (atomic_load(&s->visible_seq) < fence) {
        r->fence = fence;
        pthread_mutex_unlock(&r->mu);
        engine_test_step(s, "flush_waits_for_writers");
        pthread_mutex_lock(&s->pub_mu);
        while (atomic_load(&s->visible_seq) < fence)
            pthread_cond_wait(&s->pub_cv, &s->pub_mu);
        pthread_mutex_unlock(&s->pub_mu);
        pthread_mutex_lock(&r->mu);
        if (r->dead) {
            r->fence = 0;
            pthread_cond_broadcast(&r->fence_cv);
            pthread_mutex_unlock(&r->mu);
            goto out;
        }
    }
    r->flush_queued = false;
    r->first_edit_mono_ms = 0;
    for (size_t f = 0; f < nf && rc == CT_OK; f++) {
        struct efam *ef = &r->fams[f];
        if (memstore_count(ef->active)) {
            struct memstore *fresh;
            struct memstore **nv = realloc(ef->frozen, (ef->nfrozen + 1) * sizeof(*nv));
            if (!nv) {
                rc = ct_err_set(err, CT_ENOMEM, "out of memory flushing");
                break;
            }
            ef->frozen = nv;
            if ((rc = memstore_new(&fresh, s->ms_bloom_bits, err)) != CT_OK)
                break;
            ef->frozen[ef->nfrozen++] = ef->active;
            ef->active = fresh;
        }
    }
    uint64_t watermark = atomic_load(&s->visible_seq);
    if (r->fence) { /* frozen: the fenced-off batches go to the fresh memstores */
        r->fence = 0;
        pthread_cond_broadcast(&r->fence_cv);
    }
    for (size_t f = 0; f < nf && rc == CT_OK; f++) {
        struct efam *ef = &r->fams[f];
        if (!ef->nfrozen)
            continue;
        fz[f] = calloc(ef->nfrozen, sizeof(**fz));
        if (!fz[f]) {
            rc = ct_err_set(err, CT_ENOMEM, "out of memory flushing");
            break;
        }
        for (size_t k = 0; k < ef->nfrozen; k++) {
            memstore_ref(ef->frozen[k]);
            fz[f][k] = ef->frozen[k];
        }
        nfz[f] = ef->nfrozen;
        any = true;
    }
    pthread_mutex_unlock(&r->mu);
    if (rc != CT_OK || !any)
        goto out;

    for (size_t f = 0; f < nf && rc == CT_OK; f++) {
        if (!nfz[f])
            continue;
        struct mctx m;
        mctx_init(&m, s, t, r, (int)f, false);
        struct echild *kids = calloc(nfz[f], sizeof(*kids));
        if (!kids) {
            rc = ct_err_set(err, CT_ENOMEM, "out of memory flushing");
            mctx_destroy(&m);
            break;
        }
        for (size_t k = 0; k < nfz[f]; k++) {
            echild_init_ms(&kids[k], fz[f][k], UINT64_MAX);
            m.expected_cells += memstore_count(fz[f][k]);
        }
        rc = merge_to_file(&m, kids, nfz[f], &nfile[f], err);
        free(kids);
        mctx_destroy(&m);
        if (rc != CT_OK)
            ct_err_prefix(err, "flush of %s:%s", t->name, t->fams[f].name);
    }
    if (rc != CT_OK)
        goto out;

    pthread_mutex_lock(&s->cat_mu);
    pthread_mutex_lock(&r->mu);
    for (size_t f = 0; f < nf; f++) {
        struct efam *ef = &r->fams[f];
        if (nfz[f]) {
            uint64_t released = 0;
            for (size_t k = 0; k < nfz[f]; k++) {
                released += memstore_bytes(ef->frozen[k]);
                memstore_unref(ef->frozen[k]);
            }
            estore_memstore_sub(s, released); /* the region lists them no more */
            memmove(ef->frozen, ef->frozen + nfz[f], (ef->nfrozen - nfz[f]) * sizeof(void *));
            ef->nfrozen -= nfz[f];
        }
        if (nfile[f].sst) {
            struct efile *nv = realloc(ef->files, (ef->nfiles + 1) * sizeof(*nv));
            if (!nv) {
                /* keep the data readable through a file reference dropped by nobody */
                rc = ct_err_set(err, CT_ENOMEM, "out of memory flushing");
                sst_unref(nfile[f].sst);
                nfile[f].sst = NULL;
                continue;
            }
            ef->files = nv;
            ef->files[ef->nfiles++] = nfile[f];
            nfile[f].sst = NULL;
        }
        if (!ef->nfrozen && ef->flushed_upto < watermark)
            ef->flushed_upto = watermark;
    }
    pthread_mutex_unlock(&r->mu);
    engine_failpoint(s, "flush_before_catalog");
    if (rc == CT_OK)
        rc = catalog_save(s, err);
    pthread_mutex_unlock(&s->cat_mu);
    if (rc != CT_OK) {
        ct_err_prefix(err, "flush of %s", t->name);
        estore_set_bg_error_transient(s, err);
        goto out;
    }
    atomic_fetch_add(&s->n_flushes, 1);
    engine_failpoint(s, "flush_after_catalog"); /* the log still holds what was flushed */
    estore_release_wal(s);
    queue_followups(s, t, r);
out:
    for (size_t f = 0; f < nf; f++) {
        for (size_t k = 0; fz[f] && k < nfz[f]; k++)
            memstore_unref(fz[f][k]);
        free(fz[f]);
        if (nfile[f].sst) {
            sst_mark_obsolete(nfile[f].sst);
            sst_unref(nfile[f].sst);
        }
    }
    free(fz);
    free(nfz);
    free(nfile);
    return rc;
}

int engine_flush_region(struct estore *s, struct etable *t, struct eregion *r, struct ct_err *err)
{
    pthread_rwlock_rdlock(&t->maint_lock);
    pthread_mutex_lock(&r->maint_mu);
    int rc = flush_locked(s, t, r, err);
    pthread_mutex_unlock(&r->maint_mu);
    pthread_rwlock_unlock(&t->maint_lock);
    return rc;
}

/* ---- compaction --------------------------------------------------------------------------- */

static int compact_store(struct estore *s, struct etable *t, struct eregion *r, size_t f,
                         bool major, struct ct_err *err)
{
    pthread_mutex_lock(&r->mu);
    if (r->dead) {
        pthread_mutex_unlock(&r->mu);
        return CT_OK;
    }
    struct efam *ef = &r->fams[f];
    size_t n = ef->nfiles, start = 0, count = 0;
    if (major) {
        count = n;
    } else if (n >= 3) {
        uint64_t *sizes = malloc(n * sizeof(*sizes));
        if (!sizes) {
            pthread_mutex_unlock(&r->mu);
            return ct_err_set(err, CT_ENOMEM, "out of memory compacting");
        }
        for (size_t i = 0; i < n; i++)
            sizes[i] = sst_get_meta(ef->files[i].sst)->file_bytes;
        struct compact_policy p;
        compact_policy_default(&p);
        if (!compact_select(sizes, n, &p, &start, &count)) {
            count = 0;
            /* stuck (writes block at 16 files): the cheapest run of min_files, as HBase does */
            if (n >= 16) {
                uint64_t best = UINT64_MAX;
                for (size_t st = 0; st + p.min_files <= n; st++) {
                    uint64_t tot = 0;
                    for (size_t i = st; i < st + p.min_files; i++)
                        tot += sizes[i];
                    if (tot < best) {
                        best = tot;
                        start = st;
                        count = p.min_files;
                    }
                }
            }
        }
        free(sizes);
        if (count == n)
            major = true;
    }
    if (count == 0) {
        pthread_mutex_unlock(&r->mu);
        return CT_OK;
    }
    struct efile *in = calloc(count, sizeof(*in));
    if (!in) {
        pthread_mutex_unlock(&r->mu);
        return ct_err_set(err, CT_ENOMEM, "out of memory compacting");
    }
    for (size_t i = 0; i < count; i++) {
        in[i] = ef->files[start + i];
        sst_ref(in[i].sst);
    }
    pthread_mutex_unlock(&r->mu);

    struct mctx m;
    mctx_init(&m, s, t, r, (int)f, major);
    struct echild *kids = calloc(count, sizeof(*kids));
    struct efile out = {NULL, 0};
    int rc = kids ? CT_OK : ct_err_set(err, CT_ENOMEM, "out of memory compacting");
    size_t nk = 0;
    for (size_t i = 0; i < count && rc == CT_OK; i++) {
        m.expected_cells += sst_get_meta(in[i].sst)->cells;
        if ((rc = echild_init_sst(&kids[i], in[i].sst, UINT64_MAX, err)) == CT_OK) {
            sst_iter_set_fill_cache(kids[i].si, false); /* read once: keep readers' blocks */
            nk++;
        }
    }
    if (rc == CT_OK)
        rc = merge_to_file(&m, kids, nk, &out, err);
    for (size_t i = 0; i < nk; i++)
        echild_destroy(&kids[i]);
    free(kids);
    mctx_destroy(&m);
    if (rc != CT_OK) {
        ct_err_prefix(err, "compaction of %s:%s", t->name, t->fams[f].name);
        goto out;
    }

    pthread_mutex_lock(&s->cat_mu);
    pthread_mutex_lock(&r->mu);
    ef = &r->fams[f];
    /* the run is still where it was: only this thread changes the list (maint_mu) */
    size_t keep_new = out.sst ? 1 : 0;
    memmove(&ef->files[start + keep_new], &ef->files[start + count],
            (ef->nfiles - start - count) * sizeof(*ef->files));
    if (out.sst)
        ef->files[start] = out;
    ef->nfiles = ef->nfiles - count + keep_new;
    pthread_mutex_unlock(&r->mu);
    engine_failpoint(s, "compact_before_catalog");
    rc = catalog_save(s, err);
    if (rc == CT_OK) {
        engine_failpoint(s, "compact_after_catalog");
        for (size_t i = 0; i < count; i++) {
            if (!etable_file_shared(t, r, f, in[i].id))
                sst_mark_obsolete(in[i].sst);
            sst_unref(in[i].sst); /* the list's reference */
        }
    } else {
        ct_err_prefix(err, "compaction of %s", t->name);
        estore_set_bg_error_transient(s, err);
        for (size_t i = 0; i < count; i++)
            sst_unref(in[i].sst);
    }
    pthread_mutex_unlock(&s->cat_mu);
    out.sst = NULL;
    atomic_fetch_add(major ? &s->n_major : &s->n_minor, 1);
out:
    if (out.sst) {
        sst_mark_obsolete(out.sst);
        sst_unref(out.sst);
    }
    for (size_t i = 0; i < count; i++)
        sst_unref(in[i].sst);
    free(in);
    return rc;
}

int engine_compact_region(struct estore *s, struct etable *t, struct eregion *r, int fam,
                          bool major, struct ct_err *err)
{
    pthread_rwlock_rdlock(&t->maint_lock);
    pthread_mutex_lock(&r->maint_mu);
    int rc = CT_OK;
    size_t nf = r->nfams;
    for (size_t f = 0; f < nf && rc == CT_OK; f++)
        if (fam < 0 || (size_t)fam == f)
            rc = compact_store(s, t, r, f, major, err);
    pthread_mutex_unlock(&r->maint_mu);
    pthread_rwlock_unlock(&t->maint_lock);
    if (rc == CT_OK)
        estore_queue_job(s, EJOB_SPLIT_CHECK, t, r, false);
    return rc;
}

/* ---- split -------------------------------------------------------------------------------- */

/* Whether a file of r holds rows outside r (a reference shared with a split sibling).
 * REQUIRES r->mu. */
static bool region_has_references(const struct eregion *r)
{
    for (size_t f = 0; f < r->nfams; f++)
        for (size_t k = 0; k < r->fams[f].nfiles; k++) {
            const struct sst_meta *m = sst_get_meta(r->fams[f].files[k].sst);
            if (!m->cells)
                continue;
            if (cell_bytes_cmp(m->first_row, m->first_row_len, r->start, r->start_len) < 0)
                return true;
            if (r->end_len && cell_bytes_cmp(m->last_row, m->last_row_len, r->end, r->end_len) >= 0)
                return true;
        }
    return false;
}

/* Whether region r should split under the stepping policy. */
static bool engine_region_wants_split(struct estore *s, struct etable *t, struct eregion *r)
{
    pthread_rwlock_rdlock(&t->map_lock);
    uint64_t threshold = t->nregions == 1
                             ? 2 * etable_flush_bytes(s, t)
                             : (t->max_filesize ? t->max_filesize : s->opt.region_split_bytes);
    pthread_rwlock_unlock(&t->map_lock);
    uint64_t biggest = 0;
    pthread_mutex_lock(&r->mu);
    bool ok = !r->dead && !region_has_references(r);
    for (size_t f = 0; ok && f < r->nfams; f++) {
        uint64_t sum = 0;
        for (size_t k = 0; k < r->fams[f].nfiles; k++)
            sum += sst_get_meta(r->fams[f].files[k].sst)->file_bytes;
        if (sum > biggest)
            biggest = sum;
    }
    pthread_mutex_unlock(&r->mu);
    return ok && biggest > threshold;
}

static int split_locked(struct estore *s, struct etable *t, struct eregion *r, const uint8_t *key,
                        size_t key_len, struct ct_err *err)
{
    size_t idx = t->nregions;
    for (size_t i = 0; i < t->nregions; i++)
        if (t->regions[i] == r)
            idx = i;
    if (idx == t->nregions || r->dead)
        return CT_NOTFOUND;
    uint8_t mid[WC_MAX_ROW_BYTES];
    bool explicit_key = key != NULL;
    pthread_mutex_lock(&r->mu);
    if (!key) {
        if (region_has_references(r)) {
            pthread_mutex_unlock(&r->mu);
            return CT_NOTFOUND;
        }
        struct sst *best = NULL;
        const uint8_t *first = NULL;
        size_t first_len = 0;
        for (size_t f = 0; f < r->nfams; f++)
            for (size_t k = 0; k < r->fams[f].nfiles; k++) {
                struct sst *fl = r->fams[f].files[k].sst;
                const struct sst_meta *m = sst_get_meta(fl);
                if (!m->cells)
                    continue;
                if (!best || m->file_bytes > sst_get_meta(best)->file_bytes)
                    best = fl;
                if (!first ||
                    cell_bytes_cmp(m->first_row, m->first_row_len, first, first_len) < 0) {
                    first = m->first_row;
                    first_len = m->first_row_len;
                }
            }
        key_len = best ? sst_middle_row(best, mid) : 0;
        key = mid;
        if (!key_len || cell_bytes_cmp(key, key_len, first, first_len) <= 0) {
            pthread_mutex_unlock(&r->mu);
            return CT_NOTFOUND;
        }
    }
    pthread_mutex_unlock(&r->mu);
    if (cell_bytes_cmp(key, key_len, r->start, r->start_len) <= 0 ||
        (r->end_len && cell_bytes_cmp(key, key_len, r->end, r->end_len) >= 0))
        return explicit_key ? ct_err_set(err, CT_EINVAL, "split key outside its region")
                            : CT_NOTFOUND;

    struct eregion *d[2] = {NULL, NULL};
    struct eregion **nv = calloc(t->nregions + 1, sizeof(*nv));
    int rc = nv ? CT_OK : ct_err_set(err, CT_ENOMEM, "out of memory splitting");
    if (rc == CT_OK)
        rc = eregion_new(s->next_region_id++, r->start, r->start_len, key, key_len, r->nfams, 0,
                         s->ms_bloom_bits, &d[0], err);
    if (rc == CT_OK)
        rc = eregion_new(s->next_region_id++, key, key_len, r->end, r->end_len, r->nfams, 0,
                         s->ms_bloom_bits, &d[1], err);
    pthread_mutex_lock(&r->mu);
    for (int k = 0; k < 2 && rc == CT_OK; k++) {
        for (size_t f = 0; f < r->nfams && rc == CT_OK; f++) {
            struct efam *pf = &r->fams[f], *df = &d[k]->fams[f];
            bool act = memstore_count(pf->active) > 0;
            df->frozen = calloc(pf->nfrozen + 1, sizeof(void *));
            df->files = calloc(pf->nfiles + 1, sizeof(struct efile));
            if (!df->frozen || !df->files) {
                rc = ct_err_set(err, CT_ENOMEM, "out of memory splitting");
                break;
            }
            for (size_t q = 0; q < pf->nfrozen; q++) {
                memstore_ref(pf->frozen[q]);
                df->frozen[df->nfrozen++] = pf->frozen[q];
            }
            if (act) {
                memstore_ref(pf->active);
                df->frozen[df->nfrozen++] = pf->active;
            }
            for (size_t q = 0; q < pf->nfiles; q++) {
                sst_ref(pf->files[q].sst);
                df->files[df->nfiles++] = pf->files[q];
            }
            df->flushed_upto = pf->flushed_upto;
        }
    }
    if (rc == CT_OK)
        r->dead = true;
    pthread_mutex_unlock(&r->mu);
    if (rc != CT_OK)
        goto fail;
    memcpy(nv, t->regions, idx * sizeof(*nv));
    nv[idx] = d[0];
    nv[idx + 1] = d[1];
    memcpy(nv + idx + 2, t->regions + idx + 1, (t->nregions - idx - 1) * sizeof(*nv));
    struct eregion **old = t->regions;
    t->regions = nv;
    t->nregions++;
    engine_failpoint(s, "split_before_catalog");
    if ((rc = catalog_save(s, err)) != CT_OK) {
        t->regions = old;
        t->nregions--;
        pthread_mutex_lock(&r->mu);
        r->dead = false;
        pthread_mutex_unlock(&r->mu);
        goto fail;
    }
    engine_failpoint(s, "split_after_catalog");
    /* the daughters list the parent's memstores (each of them, estore.memstore_total), the
     * parent no longer does; no writer reaches any of them (map_lock exclusive) */
    pthread_mutex_lock(&r->mu);
    uint64_t parent_bytes = eregion_memstore_bytes(r);
    pthread_mutex_unlock(&r->mu);
    for (int k = 0; k < 2; k++) {
        pthread_mutex_lock(&d[k]->mu);
        estore_memstore_add(s, eregion_memstore_bytes(d[k]));
        pthread_mutex_unlock(&d[k]->mu);
    }
    estore_memstore_sub(s, parent_bytes);
    free(old);
    eregion_unref(r); /* the array's reference */
    atomic_fetch_add(&s->n_splits, 1);
    for (int k = 0; k < 2; k++) {
        bool has_files = false, has_frozen = false;
        pthread_mutex_lock(&d[k]->mu);
        for (size_t f = 0; f < d[k]->nfams; f++) {
            has_files |= d[k]->fams[f].nfiles > 0;
            has_frozen |= d[k]->fams[f].nfrozen > 0;
        }
        if (has_frozen)
            d[k]->flush_queued = true;
        pthread_mutex_unlock(&d[k]->mu);
        if (has_frozen)
            estore_queue_job(s, EJOB_FLUSH, t, d[k], false);
        if (has_files && t->compaction_enabled)
            estore_queue_job(s, EJOB_COMPACT, t, d[k], true);
    }
    return CT_OK;
fail:
    free(nv);
    eregion_unref(d[0]);
    eregion_unref(d[1]);
    return rc;
}

int engine_split_region(struct estore *s, struct etable *t, struct eregion *r, const uint8_t *key,
                        size_t key_len, struct ct_err *err)
{
    pthread_rwlock_wrlock(&t->maint_lock);
    pthread_mutex_lock(&s->cat_mu);
    pthread_rwlock_wrlock(&t->map_lock);
    int rc = atomic_load(&t->dropped) ? CT_NOTFOUND : split_locked(s, t, r, key, key_len, err);
    pthread_rwlock_unlock(&t->map_lock);
    pthread_mutex_unlock(&s->cat_mu);
    pthread_rwlock_unlock(&t->maint_lock);
    return rc;
}

/* ---- jobs ---------------------------------------------------------------------------------- */

/* Background jobs run at a lower CPU priority than the threads that write (RocksDB lowers its
 * compaction pool's priority the same way): on a saturated machine the writers, whose callers
 * wait for them, go first, and flushes and compactions use the CPU the writers leave. They are
 * never starved for good: a writer that reaches the memstore bound (4x the flush size) or the
 * file bound waits for them (wait_for_memstore_room), which frees its CPU. Set once per worker
 * thread (Linux applies setpriority(PRIO_PROCESS, tid) to one thread); failures are ignored.
 * +5 (about a quarter of a writer's CPU share when both want the same core), not more: the
 * lower it is, the longer memstores wait for their flush, and the higher the peak memory (TSD
 * ingest benchmark, peak RSS over four runs: 56-64 MB at 0, 66-76 MB at +5, 64-104 MB at +10;
 * its telnet rate was about the same at +5 and +10, ~1.2x that at 0). */
#define ENGINE_BG_NICE 5

static void lower_bg_priority(void)
{
    static _Thread_local bool lowered;
    if (lowered)
        return;
    lowered = true;
    id_t tid = (id_t)gettid();
    errno = 0;
    int cur = getpriority(PRIO_PROCESS, tid);
    if (cur == -1 && errno != 0)
        return;
    int want = cur + ENGINE_BG_NICE > 19 ? 19 : cur + ENGINE_BG_NICE;
    (void)setpriority(PRIO_PROCESS, tid, want);
}

/* A compaction met a damaged block in one of its input files (`why` names it: ".../sst/<id>.sst").
 * The file is dropped from every region of t listing it, the catalog saved, and the file moved to
 * quarantine/ (never deleted); its cells are no longer served, and writes and later compactions
 * go on. Returns false (the caller records the error) if `why` names no listed file or the
 * catalog cannot be written. */
bool engine_quarantine_damaged_input(struct estore *s, struct etable *t, struct ct_err *why)
{
    const char *p = strstr(why->msg, "/sst/");
    unsigned long long id;
    int end = 0;
    if (!p || sscanf(p, "/sst/%16llx.sst%n", &id, &end) != 1 || end == 0)
        return false;
    pthread_rwlock_wrlock(&t->maint_lock); /* no flush or compaction of t meanwhile */
    pthread_mutex_lock(&s->cat_mu);
    struct sst *keep = NULL;
    size_t dropped = 0;
    for (size_t r = 0; r < t->nregions; r++) {
        struct eregion *rg = t->regions[r];
        pthread_mutex_lock(&rg->mu);
        for (size_t f = 0; f < rg->nfams; f++) {
            struct efam *ef = &rg->fams[f];
            for (size_t k = 0; k < ef->nfiles;) {
                if (ef->files[k].id != id) {
                    k++;
                    continue;
                }
                if (!keep) {
                    keep = ef->files[k].sst;
                    sst_ref(keep);
                }
                sst_unref(ef->files[k].sst);
                memmove(&ef->files[k], &ef->files[k + 1],
                        (ef->nfiles - k - 1) * sizeof(*ef->files));
                ef->nfiles--;
                dropped++;
            }
        }
        pthread_mutex_unlock(&rg->mu);
    }
    struct ct_err e;
    int rc = dropped ? catalog_save(s, &e) : CT_NOTFOUND;
    pthread_mutex_unlock(&s->cat_mu);
    pthread_rwlock_unlock(&t->maint_lock);
    if (rc == CT_NOTFOUND)
        return false;
    char path[4096], qpath[4600];
    estore_file_path(s, id, path, sizeof(path));
    if (rc != CT_OK) {
        /* memory no longer lists it; the next successful catalog write persists that, and the
         * file stays in sst/ (moved to quarantine/ at the next open) */
        ct_err_prefix(&e, "setting aside %s", path);
        estore_set_bg_error_transient(s, &e);
        sst_unref(keep);
        return true;
    }
    if (estore_quarantine(s, path, qpath, sizeof(qpath), &e) != CT_OK)
        estore_logf(s, "cannot move damaged block file %s (no longer listed) to quarantine/: %s",
                    path, e.msg);
    else
        estore_logf(s,
                    "compaction of %s met a damaged block file, moved to %s (its cells are no "
                    "longer served; writes go on): %s",
                    t->name, qpath, why->msg);
    atomic_fetch_add(&s->n_quarantined_live, 1);
    sst_unref(keep); /* readers holding it finish from the mapping; nothing unlinks it */
    return true;
}

void engine_run_job(struct estore *s, struct ejob *j)
{
    struct ct_err err;
    ct_err_clear(&err);
    lower_bg_priority();
    if (atomic_load(&j->table->dropped))
        return;
    int rc = CT_OK;
    switch (j->kind) {
    case EJOB_FLUSH:
        rc = engine_flush_region(s, j->table, j->region, &err);
        break;
    case EJOB_COMPACT:
        if (j->table->compaction_enabled)
            rc = engine_compact_region(s, j->table, j->region, -1, j->major, &err);
        break;
    case EJOB_SPLIT_CHECK:
        if (engine_region_wants_split(s, j->table, j->region)) {
            rc = engine_split_region(s, j->table, j->region, NULL, 0, &err);
            if (rc == CT_NOTFOUND)
                rc = CT_OK;
        }
        break;
    }
    if (rc == CT_ECORRUPT && j->kind == EJOB_COMPACT &&
        engine_quarantine_damaged_input(s, j->table, &err))
        return; /* set aside; the next compaction goes on without it */
    if (rc < 0)
        estore_set_bg_error_transient(s, &err);
}
