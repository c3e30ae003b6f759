/* scan.c - the read path: merge inputs (memstores and block files) of each region and family,
 * walk rows forward or backward, and decide per cell what a read returns (docs/storage-contract.md,
 * "What a read returns", "Deletes", "Gets and scans").
 *
 * Invariants: (1) a scanner holds references on every memstore and file it may read, taken
 * under each region's mutex at open, so flushes and compactions never pull data from under it;
 * (2) its snapshot is the store's visible_seq read before those references were taken: cells
 * with a larger seq are stepped over by every input; the snapshot is registered with the store
 * so flushes and compactions keep every version it may still read (estore_read_point); (3) a
 * reversed scan finds the previous row with seek_for_prev on every input, then reads that row
 * forward, so cells inside a row are in forward order in both directions; (4) rows are bounded by
 * [lo, hi) of the scan intersected with the region's range (a multi-range scan has one such piece
 * per range and region, in key order), so inputs shared by split daughters never leak rows; (5) a
 * forward scan may defer the seek of an input whose row bloom rules out the region's first row
 * (`lazy`: not valid until sought); it is sought before any row other than that first one is chosen
 * (scanner_find_row_lazy), so no row of it is ever passed over.
 *
 * (6) a returned cell of a block file points into that block only when the input's iterator
 * still holds the block when the row is returned (its row ended inside the block:
 * child_row_ends_in_block), and the block stays held until the scanner's next call.
 *
 * Cells returned point into memstore arenas (stable while referenced) or, for block-file cells,
 * into the block the input holds (6), or else into the scanner's row arena (reset per row), except
 * the values of uncompressed blocks of mapped files, which point into the file's mapping (stable
 * while the scanner holds the file). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/clock.h"
#include "storage/coding.h"
#include "storage/engine/bloom.h"
#include "storage/engine/engine_int.h"

/* ---- children --------------------------------------------------------------------------- */

void ecell_row_start(struct cell *c, const uint8_t *row, size_t len)
{
    memset(c, 0, sizeof(*c));
    c->row = row;
    c->row_len = (uint32_t)len;
    c->qual = (const uint8_t *)"";
    c->value = (const uint8_t *)"";
    c->ts_ms = INT64_MAX;
    c->type = 255;
    c->seq = UINT64_MAX;
}

static void echild_load(struct echild *c)
{
    if (c->is_ms) {
        c->valid = memstore_iter_valid(&c->mi);
        if (c->valid)
            c->cur = *memstore_iter_cell(&c->mi);
    } else {
        c->valid = sst_iter_valid(c->si);
        if (c->valid)
            sst_iter_cell(c->si, &c->cur);
    }
}

static int echild_raw_next(struct echild *c, struct ct_err *err)
{
    if (c->is_ms) {
        memstore_iter_next(&c->mi);
    } else {
        int rc = sst_iter_next(c->si, err);
        if (rc != CT_OK)
            return rc;
    }
    echild_load(c);
    return CT_OK;
}

static int echild_raw_prev(struct echild *c, struct ct_err *err)
{
    if (c->is_ms) {
        memstore_iter_prev(&c->mi);
    } else {
        int rc = sst_iter_prev(c->si, err);
        if (rc != CT_OK)
            return rc;
    }
    echild_load(c);
    return CT_OK;
}

static int echild_skip_fwd(struct echild *c, struct ct_err *err)
{
    echild_load(c);
    while (c->valid && c->cur.seq > c->snap) {
        int rc = echild_raw_next(c, err);
        if (rc != CT_OK)
            return rc;
    }
    return CT_OK;
}

static int echild_skip_back(struct echild *c, struct ct_err *err)
{
    echild_load(c);
    while (c->valid && c->cur.seq > c->snap) {
        int rc = echild_raw_prev(c, err);
        if (rc != CT_OK)
            return rc;
    }
    return CT_OK;
}

void echild_init_ms(struct echild *c, struct memstore *m, uint64_t snap)
{
    memset(c, 0, sizeof(*c));
    c->is_ms = true;
    c->snap = snap;
    memstore_iter_init(&c->mi, m);
}

int echild_init_sst(struct echild *c, struct sst *f, uint64_t snap, struct ct_err *err)
{
    memset(c, 0, sizeof(*c));
    c->snap = snap;
    return sst_iter_new(f, &c->si, err);
}

void echild_destroy(struct echild *c)
{
    if (!c->is_ms)
        sst_iter_free(c->si);
    c->si = NULL;
    c->valid = false;
}

int echild_seek(struct echild *c, const struct cell *target, struct ct_err *err)
{
    if (c->is_ms) {
        memstore_iter_seek(&c->mi, target);
    } else {
        int rc = sst_iter_seek(c->si, target, err);
        if (rc != CT_OK)
            return rc;
    }
    return echild_skip_fwd(c, err);
}

static int echild_seek_last(struct echild *c, struct ct_err *err)
{
    if (c->is_ms) {
        memstore_iter_seek_last(&c->mi);
    } else {
        int rc = sst_iter_seek_last(c->si, err);
        if (rc != CT_OK)
            return rc;
    }
    return echild_skip_back(c, err);
}

/* Last cell <= target. */
static int echild_seek_for_prev(struct echild *c, const struct cell *target, struct ct_err *err)
{
    if (c->is_ms) {
        memstore_iter_seek_for_prev(&c->mi, target);
    } else {
        int rc = sst_iter_seek_for_prev(c->si, target, err);
        if (rc != CT_OK)
            return rc;
    }
    return echild_skip_back(c, err);
}

/* echild_next, inlined into the scan's per-cell steps (child_advance); exported below for
 * compactions. */
static inline __attribute__((always_inline)) int echild_next_inl(struct echild *c,
                                                                 struct ct_err *err)
{
    if (!c->is_ms) { /* one call per cell: move and fetch */
        int rc;
        bool same = true, step;
        int64_t bi0 = c->si->bi;
        do {
            if ((rc = sst_iter_next_cell_inl(c->si, &c->cur, &c->valid, &step, err)) != CT_OK)
                return rc;
            same &= step; /* every step on the same row: still the starting cell's row */
        } while (c->valid && c->cur.seq > c->snap);
        c->same_row = same;
        c->row_known = c->si->bi == bi0;
        return CT_OK;
    }
    c->same_row = false;
    c->row_known = false;
    int rc = echild_raw_next(c, err);
    if (rc != CT_OK)
        return rc;
    while (c->valid && c->cur.seq > c->snap)
        if ((rc = echild_raw_next(c, err)) != CT_OK)
            return rc;
    return CT_OK;
}

int echild_next(struct echild *c, struct ct_err *err)
{
    return echild_next_inl(c, err);
}

/* Reversed scans. echild_rewind_row: moves a child positioned on some cell of a row to that
 * row's first visible cell (= echild_seek to the row's start; files remember where it is).
 * echild_prev_row: moves a child that was rewound and then read forward to the last visible
 * cell before that row start (= echild_seek_for_prev of the row's start). */
static int echild_rewind_row(struct echild *c, struct ct_err *err)
{
    if (c->is_ms && c->valid) { /* no back links: search, from the path of the step back */
        struct cell start;
        ecell_row_start(&start, c->cur.row, c->cur.row_len);
        c->has_start = false;
        memstore_iter_seek_near(&c->mi, &start);
        return echild_skip_fwd(c, err);
    }
    if (!c->valid) {
        struct cell start;
        ecell_row_start(&start, c->cur.row, c->cur.row_len);
        c->has_start = false;
        return echild_seek(c, &start, err);
    }
    struct sst_pos was;
    sst_iter_tell(c->si, &was);
    int rc = sst_iter_row_start(c->si, err);
    /* still on the cell it held (the row's first: a row of one cell): that cell is c->cur and
     * visible (every move leaves a valid input on a visible cell), so nothing to reload */
    if (rc == CT_OK && (c->si->i != was.i || c->si->bi != was.bi || !c->si->valid))
        rc = echild_skip_fwd(c, err);
    /* cells stepped over by skip_fwd are invisible: stepping back from here finds the same
     * cell as from the row's first cell */
    c->has_start = rc == CT_OK && c->valid;
    if (c->has_start)
        sst_iter_tell(c->si, &c->start);
    return rc;
}

static int echild_prev_row(struct echild *c, struct ct_err *err)
{
    c->has_start = false;
    int rc = sst_iter_prev_of(c->si, &c->start, err);
    if (rc != CT_OK)
        return rc;
    return echild_skip_back(c, err);
}

/* ---- the matcher ("What a read returns" rules 1-7, "Tracking deletes") ------------------ */

enum {
    M_SKIP = 0,
    M_EMIT = 1
};

struct i64set {
    int64_t *v;
    size_t n, cap;
};

static int i64set_add(struct i64set *s, int64_t x)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        int64_t *nv = realloc(s->v, cap * sizeof(*nv));
        if (!nv)
            return CT_ENOMEM;
        s->v = nv;
        s->cap = cap;
    }
    s->v[s->n++] = x;
    return CT_OK;
}

static bool i64set_has(const struct i64set *s, int64_t x)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i] == x)
            return true;
    return false;
}

/* What one family of a read selects. */
struct sfam {
    int idx; /* in the table's family list at open */
    struct wc_family_desc d;
    size_t name_len; /* strlen(d.name) */
    bool whole;
    struct wc_bytes *quals; /* explicit qualifiers, sorted; when !whole */
    size_t nquals;
    int64_t oldest; /* now - TTL, INT64_MIN for FOREVER */
};

struct matcher {
    /* request */
    int64_t tmin, tmax;
    uint32_t req_versions;
    bool raw;
    const struct wc_scan_options *o;
    /* family */
    const struct sfam *f;
    bool qfilter; /* a column list, qualifier prefix or range applies: qual_selected() needed */
    uint32_t maxv, minv;
    bool kdc;
    int64_t F;
    struct i64set fv;
    /* column */
    uint8_t *qual; /* qual_inline or the heap */
    size_t qual_len, qual_cap;
    bool have_col;
    int64_t C;
    struct i64set dts;
    uint32_t n;
    bool col_done;
    bool have_last;
    int64_t last_ts;
    uint8_t last_type;
    uint8_t qual_inline[64];
};

static void matcher_init(struct matcher *m)
{
    memset(m, 0, offsetof(struct matcher, qual_inline));
    m->qual = m->qual_inline;
    m->qual_cap = sizeof(m->qual_inline);
}

/* Starts a family's cells (every row starts its families again). What depends only on the
 * family and the request is computed when the family changes: the request fields (tmin, tmax,
 * req_versions, raw, o) are set before the first start and never change. */
static inline void matcher_start_family(struct matcher *m, const struct sfam *f)
{
    if (m->f != f) {
        m->f = f;
        m->maxv = m->raw ? m->req_versions
                         : (m->req_versions < f->d.versions ? m->req_versions : f->d.versions);
        m->minv = f->d.min_versions;
        m->qfilter = !f->whole || m->o->qualifier_prefix.len || m->o->has_qualifier_range;
        m->kdc = f->d.keep_deleted != WC_KEEP_DELETED_FALSE;
    }
    m->F = INT64_MIN;
    m->fv.n = 0;
    m->have_col = false;
}

static int bytes_cmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
    return cell_bytes_cmp(a, al, b, bl);
}

static bool qual_selected(const struct matcher *m, const uint8_t *q, size_t ql)
{
    const struct sfam *f = m->f;
    if (!f->whole) {
        size_t lo = 0, hi = f->nquals;
        bool found = false;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            int c = bytes_cmp(f->quals[mid].data, f->quals[mid].len, q, ql);
            if (c == 0) {
                found = true;
                break;
            }
            if (c < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (!found)
            return false;
    }
    const struct wc_scan_options *o = m->o;
    if (o->qualifier_prefix.len &&
        (ql < o->qualifier_prefix.len ||
         memcmp(q, o->qualifier_prefix.data, o->qualifier_prefix.len) != 0))
        return false;
    if (o->has_qualifier_range) {
        if (o->qualifier_min.len) {
            int c = bytes_cmp(q, ql, o->qualifier_min.data, o->qualifier_min.len);
            if (c < 0 || (c == 0 && !o->qualifier_min_inclusive))
                return false;
        }
        if (o->qualifier_max.len) {
            int c = bytes_cmp(q, ql, o->qualifier_max.data, o->qualifier_max.len);
            if (c > 0 || (c == 0 && !o->qualifier_max_inclusive))
                return false;
        }
    }
    return true;
}

/* The rules for one cell; inlined into the scan's per-cell loops (the single-input walk and
 * the merge of a row several inputs hold), called through matcher_cell() by Gets. */
static inline __attribute__((always_inline)) int
matcher_cell_inl(struct matcher *m, const struct cell *c, struct ct_err *err)
{
    if (!m->have_col || !cell_bytes_eq(m->qual, m->qual_len, c->qual, c->qual_len)) {
        if (c->qual_len > m->qual_cap) {
            size_t cap = c->qual_len * 2 + 16;
            uint8_t *nq = malloc(cap);
            if (!nq)
                return ct_err_set(err, CT_ENOMEM, "out of memory in a scan");
            if (m->qual != m->qual_inline)
                free(m->qual);
            m->qual = nq;
            m->qual_cap = cap;
        }
        coding_copy_short(m->qual, c->qual, c->qual_len);
        m->qual_len = c->qual_len;
        m->have_col = true;
        m->C = INT64_MIN;
        m->dts.n = 0;
        m->col_done = false;
        if (!m->raw && c->type == WC_TYPE_PUT) {
            /* A put opening its column (every cell of a row of single-point cells): the rules
             * below with the column's fresh state (no column markers, no version counted, no
             * previous cell) folded in. */
            int64_t ts = c->ts_ms;
            m->n = 1;
            m->have_last = true;
            m->last_ts = ts;
            m->last_type = c->type;
            if (m->minv == 0 && ts < m->f->oldest) { /* rule 1 */
                m->n = 0;
                m->have_last = false;
                return M_SKIP;
            }
            if (ts <= m->F || ts == INT64_MIN || i64set_has(&m->fv, ts) || ts >= m->tmax) {
                m->n = 0; /* rules 3 and 4 */
                m->have_last = false;
                return M_SKIP;
            }
            if (ts < m->tmin || (m->qfilter && !qual_selected(m, c->qual, c->qual_len))) {
                m->n = 0; /* rules 4 and 5 */
                m->have_last = false;
                m->col_done = true;
                return M_SKIP;
            }
            if (m->maxv >= 1 && (m->minv >= 1 || ts >= m->f->oldest)) /* rule 7 */
                return M_EMIT;
            m->col_done = true;
            return M_SKIP;
        }
        m->n = 0;
        m->have_last = false;
    }
    int64_t ts = c->ts_ms;
    if (m->raw) {
        if (ts >= m->tmax || ts < m->tmin ||
            (m->qfilter && !qual_selected(m, c->qual, c->qual_len)))
            return M_SKIP;
        if (c->type != WC_TYPE_PUT)
            return M_EMIT;
        if (++m->n > m->maxv)
            return M_SKIP;
        return M_EMIT;
    }
    /* rule 1 */
    if (m->minv == 0 && ts < m->f->oldest)
        return M_SKIP;
    /* rule 2 */
    if (c->type != WC_TYPE_PUT) {
        /* KEEP_DELETED_CELLS TTL: like TRUE until the marker expires, then like FALSE */
        bool kdc = m->kdc && !(m->f->d.keep_deleted == WC_KEEP_DELETED_TTL && ts < m->f->oldest);
        bool apply = kdc ? (ts >= m->tmin && ts < m->tmax) : ts >= m->tmin;
        if (!apply)
            return M_SKIP;
        int rc = CT_OK;
        switch (c->type) {
        case WC_TYPE_DELETE_FAMILY:
            if (ts > m->F)
                m->F = ts;
            break;
        case WC_TYPE_DELETE_FAMILY_VERSION:
            rc = i64set_add(&m->fv, ts);
            break;
        case WC_TYPE_DELETE_COLUMN:
            if (ts > m->C)
                m->C = ts;
            break;
        case WC_TYPE_DELETE:
            rc = i64set_add(&m->dts, ts);
            break;
        default:
            break;
        }
        if (rc != CT_OK)
            return ct_err_set(err, CT_ENOMEM, "out of memory tracking delete markers");
        return M_SKIP;
    }
    if (m->col_done)
        return M_SKIP;
    /* rule 3 */
    if (ts <= m->F || ts <= m->C || i64set_has(&m->fv, ts) || i64set_has(&m->dts, ts))
        return M_SKIP;
    /* rule 4 */
    if (ts >= m->tmax)
        return M_SKIP;
    if (ts < m->tmin) {
        m->col_done = true;
        return M_SKIP;
    }
    /* rule 5 */
    if (m->qfilter && !qual_selected(m, c->qual, c->qual_len)) {
        m->col_done = true;
        return M_SKIP;
    }
    /* rule 6 */
    if (m->have_last && m->last_ts == ts && m->last_type == c->type)
        return M_SKIP;
    m->have_last = true;
    m->last_ts = ts;
    m->last_type = c->type;
    /* rule 7 */
    m->n++;
    if (m->n > m->maxv) {
        m->col_done = true;
        return M_SKIP;
    }
    if (m->n <= m->minv || ts >= m->f->oldest)
        return M_EMIT;
    m->col_done = true;
    return M_SKIP;
}

static __attribute__((noinline)) int matcher_cell(struct matcher *m, const struct cell *c,
                                                  struct ct_err *err)
{
    return matcher_cell_inl(m, c, err);
}

static void matcher_destroy(struct matcher *m)
{
    free(m->fv.v);
    free(m->dts.v);
    if (m->qual != m->qual_inline)
        free(m->qual);
}

/* ---- scanner --------------------------------------------------------------------------- */

/* Inputs of one family in one region, captured at open. */
struct sinputs {
    struct memstore **ms;
    size_t nms;
    struct sst **files;
    size_t nfiles;
};

struct sregion {
    struct eregion *er; /* reference (statistics) */
    uint8_t *lo;        /* effective bounds: [lo, hi), hi_inf = no upper bound */
    size_t lo_len;
    uint8_t *hi;
    size_t hi_len;
    bool hi_inf;
    uint64_t row_hash;  /* one-row reads: bloom_hash_row(lo), computed once for every input */
    struct sinputs *in; /* nsf entries */
    /* multi-range scans: this piece is in the same region as the piece before it (in key
     * order) and shares its inputs `in` (captured once for both, released with the first):
     * a forward scan moves on to it by seeking the open inputs forward instead of closing
     * them and opening new iterators (scanner_continue_region) */
    bool cont;
};

struct sarena_chunk {
    struct sarena_chunk *next;
    size_t cap, used;
    _Alignas(16) uint8_t data[];
};

struct escanner {
    struct wc_scanner base; /* first */
    struct estore *s;
    struct etable *t; /* reference */
    struct wc_scan_options o;
    struct sfam *fams;
    size_t nsf;
    struct sregion *regs;
    size_t nregs;
    size_t ri; /* regions visited so far (in scan direction) */
    bool region_open;
    struct echild *kids;
    size_t nkids;
    size_t *on_row;    /* scanner_read_row's merge: indexes of the inputs on the row (nkids room,
                     * allocated at the region's first merge) */
    size_t *kid_start; /* nsf + 1 */
    uint64_t snap;
    bool snap_registered;
    struct matcher m;
    /* reversed: the exclusive upper bound of the next row (inf until the first row) */
    bool bound_inf;
    /* Forward fast path (scanner_find_row): after a full search, `lead` is the input holding
     * the smallest row and `runner` (-1: none) the input holding the smallest row among the
     * others. While only the lead moves, a row of the lead below the runner's row is the next
     * row, held by the lead alone: found with one comparison, read without merging. Valid
     * while fast_ok; anything that moves another input clears it. */
    bool fast_ok;
    bool row_single; /* the current row is held by kids[lead] alone */
    /* Lazy seeks (scanner_open_region, forward): nlazy inputs are not sought yet because their
     * row blooms rule out the region's first row lo; lazy_first while that row has not been
     * looked for. */
    size_t nlazy;
    bool lazy_first;
    /* rows returned from region reads_er (the open region's, set at its open) not yet added to
     * its `reads` statistic (added when the scan opens another region and at close: one atomic
     * add per region, not per row) */
    struct eregion *reads_er;
    uint64_t reads_pending;
    size_t lead;
    ptrdiff_t runner;
    size_t key_len;
    /* output */
    struct sarena_chunk *arena;
    struct sarena_chunk *arena_cur;
    struct wc_cell *cells;
    size_t ncells, cells_cap;
    size_t chunk_off;
    bool have_row;
    uint64_t rows;
    bool done;
    bool single_row;
    /* borrowed option bytes copied here */
    uint8_t *owned;
    /* the current row key and a scratch key; inline until a longer row needs the heap */
    uint8_t *key;
    size_t key_cap;
    uint8_t *tmp;
    size_t tmp_cap;
    /* small allocations of the scanner's lifetime (families, regions, inputs, children): a bump
     * pool, inline first, so a Get makes few malloc calls; freed at close */
    struct spool_block *pool_heap;
    size_t pool_used;
    /* from here on nothing is zeroed at open (scanner_open_internal) */
    struct wc_cell cells_inline[8];
    _Alignas(16) uint8_t arena_inline[sizeof(struct sarena_chunk) + 1024];
    uint8_t key_inline[128];
    uint8_t tmp_inline[128];
    _Alignas(16) uint8_t pool_inline[2048];
    /* row buffers a closed scanner leaves to the next scanner of its thread (scanner_keep):
     * a cells array and one arena chunk, each at most SCAN_KEEP_BYTES; never zeroed at open */
    struct wc_cell *kept_cells;
    size_t kept_cells_cap;
    struct sarena_chunk *kept_chunk;
};

struct spool_block {
    struct spool_block *next;
    size_t cap, used;
    _Alignas(16) uint8_t data[];
};

/* One closed scanner kept per thread for the next open: a scanner is ~4 KiB, and allocating
 * that much per seek made malloc consolidate its free lists every time (callgrind: ~1,000
 * instructions per seekrandom op). Freed at thread exit through spare_key's destructor.
 * It keeps its row buffers too (kept_cells, kept_chunk): a row of more than 8 cells grew the
 * cells array by doubling (malloc, then a realloc and copy per doubling) and took an arena chunk
 * from malloc in every scanner that read one, all freed at close (callgrind, a TSD last query
 * reading a 185-cell row: 15.5 K of its 118 K instructions and ~170 cache lines written were
 * that regrowth). Bounded: a buffer above SCAN_KEEP_BYTES is freed as before. */
#define SCAN_KEEP_BYTES (64u << 10)

static _Thread_local struct escanner *spare_sc;
static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;

static void scanner_free_kept(struct escanner *sc)
{
    free(sc->kept_cells);
    free(sc->kept_chunk);
    sc->kept_cells = NULL;
    sc->kept_cells_cap = 0;
    sc->kept_chunk = NULL;
}

static void spare_free(void *unused)
{
    (void)unused;
    if (spare_sc)
        scanner_free_kept(spare_sc);
    free(spare_sc);
    spare_sc = NULL;
}

static void spare_key_init(void)
{
    if (pthread_key_create(&spare_key, spare_free) != 0)
        spare_key = (pthread_key_t)-1;
}

static struct escanner *scanner_alloc(void)
{
    struct escanner *sc = spare_sc;
    if (sc) {
        spare_sc = NULL;
        return sc;
    }
    if ((sc = malloc(sizeof(*sc))) != NULL) {
        sc->kept_cells = NULL;
        sc->kept_cells_cap = 0;
        sc->kept_chunk = NULL;
    }
    return sc;
}

static void scanner_free(struct escanner *sc)
{
    if (spare_sc) {
        scanner_free_kept(sc);
        free(sc);
        return;
    }
    pthread_once(&spare_once, spare_key_init);
    /* without the key a thread's spare would outlive it: free instead */
    if (spare_key == (pthread_key_t)-1 || pthread_setspecific(spare_key, (void *)1) != 0) {
        scanner_free_kept(sc);
        free(sc);
        return;
    }
    spare_sc = sc;
}

/* Zeroed memory valid until the scanner closes; NULL when out of memory. */
static void *sc_zalloc(struct escanner *sc, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (!n)
        n = 16;
    void *p;
    if (sc->pool_used + n <= sizeof(sc->pool_inline)) {
        p = sc->pool_inline + sc->pool_used;
        sc->pool_used += n;
    } else {
        struct spool_block *b = sc->pool_heap;
        if (!b || b->cap - b->used < n) {
            size_t cap = n > 8192 ? n : 8192;
            b = malloc(sizeof(*b) + cap);
            if (!b)
                return NULL;
            b->cap = cap;
            b->used = 0;
            b->next = sc->pool_heap;
            sc->pool_heap = b;
        }
        p = b->data + b->used;
        b->used += n;
    }
    memset(p, 0, n);
    return p;
}

static uint8_t *sc_dup(struct escanner *sc, const uint8_t *p, size_t n)
{
    uint8_t *d = sc_zalloc(sc, n ? n : 1);
    if (d && n)
        memcpy(d, p, n);
    return d;
}

/* Makes *buf (inline storage `inl` or the heap) hold at least `need` bytes, keeping its
 * content. */
static int sc_reserve(uint8_t **buf, size_t *cap, uint8_t *inl, size_t need, struct ct_err *err)
{
    if (need <= *cap)
        return CT_OK;
    size_t nc = need < 1024 ? 1024 : need;
    uint8_t *nb = *buf == inl ? malloc(nc) : realloc(*buf, nc);
    if (!nb)
        return ct_err_set(err, CT_ENOMEM, "out of memory for a %zu-byte row key", need);
    if (*buf == inl)
        memcpy(nb, inl, *cap);
    *buf = nb;
    *cap = nc;
    return CT_OK;
}

#define KEY_RESERVE(sc, need)                                                                      \
    ((need) <= (sc)->key_cap                                                                       \
         ? CT_OK                                                                                   \
         : sc_reserve(&(sc)->key, &(sc)->key_cap, (sc)->key_inline, (need), err))
#define TMP_RESERVE(sc, need)                                                                      \
    ((need) <= (sc)->tmp_cap                                                                       \
         ? CT_OK                                                                                   \
         : sc_reserve(&(sc)->tmp, &(sc)->tmp_cap, (sc)->tmp_inline, (need), err))

static __attribute__((noinline)) void *sarena_alloc_slow(struct escanner *sc, size_t n)
{
    struct sarena_chunk *c = sc->arena_cur;
    while (c && c->cap - c->used < n)
        c = c->next;
    if (!c) {
        size_t cap = sc->arena->next ? 65536 : 4096; /* after the inline chunk: 4 KiB */
        if (cap < n)
            cap = n;
        c = malloc(sizeof(*c) + cap);
        if (!c)
            return NULL;
        c->cap = cap;
        c->used = 0;
        c->next = sc->arena;
        sc->arena = c;
    }
    sc->arena_cur = c;
    void *p = c->data + c->used;
    c->used += n;
    return p;
}

/* n bytes (8-aligned) valid until the next sarena_reset; NULL when out of memory. */
static inline void *sarena_alloc(struct escanner *sc, size_t n)
{
    n = (n + 7) & ~(size_t)7;
    struct sarena_chunk *c = sc->arena_cur;
    if (__builtin_expect(c->cap - c->used >= n, 1)) {
        void *p = c->data + c->used;
        c->used += n;
        return p;
    }
    return sarena_alloc_slow(sc, n);
}

static void sarena_reset(struct escanner *sc)
{
    if (!sc->arena->next) { /* only the inline chunk (rows up to ~1 KiB of copies) */
        sc->arena->used = 0;
        return;
    }
    for (struct sarena_chunk *c = sc->arena; c; c = c->next)
        c->used = 0;
    sc->arena_cur = sc->arena;
}

static int bytes_le_key(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
    return bytes_cmp(a, al, b, bl);
}

static void scanner_flush_reads(struct escanner *sc)
{
    if (sc->reads_er && sc->reads_pending)
        atomic_fetch_add_explicit(&sc->reads_er->reads, sc->reads_pending, memory_order_relaxed);
    sc->reads_pending = 0;
}

static void scanner_close_region(struct escanner *sc)
{
    sc->fast_ok = false;
    for (size_t i = 0; i < sc->nkids; i++)
        echild_destroy(&sc->kids[i]);
    sc->kids = NULL; /* pool memory */
    sc->on_row = NULL;
    sc->nkids = 0;
    sc->region_open = false;
}

static struct sregion *scanner_region(struct escanner *sc)
{
    size_t i = sc->o.reversed ? sc->nregs - 1 - sc->ri : sc->ri;
    return &sc->regs[i];
}

static int scanner_open_region(struct escanner *sc, struct ct_err *err)
{
    struct sregion *r = scanner_region(sc);
    if (r->er != sc->reads_er) { /* rows counted so far were the previous region's */
        scanner_flush_reads(sc);
        sc->reads_er = r->er;
    }
    size_t n = 0;
    for (size_t f = 0; f < sc->nsf; f++)
        n += r->in[f].nms + r->in[f].nfiles;
    sc->kids = sc_zalloc(sc, (n ? n : 1) * sizeof(*sc->kids));
    if (!sc->kids)
        return ct_err_set(err, CT_ENOMEM, "out of memory opening a scan");
    /* Lazy seeks (HBase's lazy seek with row blooms): a forward scan starting at row lo need
     * not seek an input whose row bloom rules lo out, as long as another input holds lo: that
     * input's cells at or after lo are all of later rows, so it has nothing for row lo. It is
     * sought when the scan looks past lo (scanner_find_row). A seek that hits an existing row
     * (the common case of a scan opened at a known row, e.g. a one-row read) then searches only
     * the inputs that may hold it. Not for one-row scans (their inputs passed the bloom
     * already) nor an empty lo (no row is empty: every input would be sought anyway). */
    bool lazy = !sc->o.reversed && !sc->single_row && r->lo_len > 0 && n > 1;
    uint64_t lo_hash = lazy ? bloom_hash_row(r->lo, r->lo_len) : 0;
    sc->nlazy = 0;
    sc->lazy_first = lazy;
    size_t k = 0;
    for (size_t f = 0; f < sc->nsf; f++) {
        sc->kid_start[f] = k;
        for (size_t i = 0; i < r->in[f].nms; i++) {
            echild_init_ms(&sc->kids[k], r->in[f].ms[i], sc->snap);
            if (lazy && !memstore_may_contain_row_hash(r->in[f].ms[i], lo_hash)) {
                sc->kids[k].lazy = true;
                sc->nlazy++;
            }
            k++;
        }
        for (size_t i = 0; i < r->in[f].nfiles; i++) {
            int rc = echild_init_sst(&sc->kids[k], r->in[f].files[i], sc->snap, err);
            if (rc != CT_OK) {
                sc->nkids = k;
                scanner_close_region(sc);
                return rc;
            }
            if (lazy && !sst_may_contain_row_hash(r->in[f].files[i], lo_hash)) {
                sc->kids[k].lazy = true;
                sc->nlazy++;
            }
            k++;
        }
    }
    sc->kid_start[sc->nsf] = k;
    sc->nkids = k;
    sc->region_open = true;
    if (!sc->o.reversed) {
        struct cell target;
        ecell_row_start(&target, r->lo, r->lo_len);
        for (size_t i = 0; i < k; i++) {
            if (sc->kids[i].lazy)
                continue; /* valid stays false: every merge step passes over it */
            int rc = echild_seek(&sc->kids[i], &target, err);
            if (rc != CT_OK)
                return rc;
        }
    } else {
        sc->bound_inf = true;
    }
    return CT_OK;
}

/* Multi-range scans: moves the open inputs on to the piece sc->ri, which shares them
 * (sregion.cont) and starts at or after the previous piece's end. An input already at or past
 * the piece's first row lo stays where it is (its cells before lo were passed); one behind lo is
 * deferred like at an open when its row bloom rules lo out (scanner_open_region's lazy seeks),
 * else sought to lo: a seek near its current place, in the block it holds, when the ranges are
 * close (sst_iter_seek's near search), with no iterator built and no index searched again.
 * Reversed scans go from a piece to the one below it, the same way (see inside). */
static int scanner_continue_region(struct escanner *sc, struct ct_err *err)
{
    const struct sregion *r = scanner_region(sc);
    sc->fast_ok = false;
    if (sc->o.reversed) {
        /* the piece below: an input still on its last cell below the previous bound keeps it
         * if that cell lies below this piece's end (no cell lies between); the others look
         * again for their last cell below the end (scanner_find_row: a seek near where they
         * are, no new iterator) */
        sc->bound_inf = true;
        for (size_t i = 0; i < sc->nkids; i++) {
            struct echild *c = &sc->kids[i];
            if (c->rev_ok && (!c->valid || r->hi_inf ||
                              bytes_cmp(c->cur.row, c->cur.row_len, r->hi, r->hi_len) < 0))
                continue;
            c->rev_ok = false;
            c->has_start = false;
        }
        return CT_OK;
    }
    bool lazy = r->lo_len > 0 && sc->nkids > 1;
    uint64_t lo_hash = lazy ? bloom_hash_row(r->lo, r->lo_len) : 0;
    struct cell target;
    ecell_row_start(&target, r->lo, r->lo_len);
    size_t k = 0;
    for (size_t f = 0; f < sc->nsf; f++) {
        const struct sinputs *in = &r->in[f];
        for (size_t i = 0; i < in->nms + in->nfiles; i++, k++) {
            struct echild *c = &sc->kids[k];
            if (c->lazy || !c->valid ||
                bytes_cmp(c->cur.row, c->cur.row_len, r->lo, r->lo_len) >= 0)
                continue; /* deferred (sought to this piece's lo when needed), done, or past lo */
            bool no_lo = lazy && (i < in->nms ? !memstore_may_contain_row_hash(in->ms[i], lo_hash)
                                              : !sst_may_contain_row_hash(in->files[i - in->nms],
                                                                          lo_hash));
            if (no_lo) {
                c->lazy = true;
                c->valid = false;
                continue;
            }
            int rc = echild_seek(c, &target, err);
            if (rc != CT_OK)
                return rc;
        }
    }
    sc->nlazy = 0;
    for (size_t i = 0; i < sc->nkids; i++)
        sc->nlazy += sc->kids[i].lazy;
    sc->lazy_first = sc->nlazy != 0;
    return CT_OK;
}

static bool row_below_hi(const struct sregion *r, const uint8_t *row, size_t len)
{
    return r->hi_inf || bytes_cmp(row, len, r->hi, r->hi_len) < 0;
}

static bool child_on_row(const struct echild *c, const uint8_t *row, size_t len)
{
    return c->valid && cell_bytes_eq(c->cur.row, c->cur.row_len, row, len);
}

/* child_on_row() right after child_advance() moved c from a cell of row `row`: a step the block
 * says stayed on the row needs no compare (rows of many small cells: one compare per cell
 * before), nor one it says left the row inside the block (rows of one cell: one compare per
 * row before); only a step into another block compares. */
static inline __attribute__((always_inline)) bool child_still_on_row(const struct echild *c,
                                                                     const uint8_t *row, size_t len)
{
    return c->valid && (c->same_row ||
                        (!c->row_known && cell_bytes_eq(c->cur.row, c->cur.row_len, row, len)));
}

/* Seeks the inputs whose seek scanner_open_region deferred (to row lo: they hold none of its
 * cells, so this is where they would be after any row up to lo). */
static int scanner_seek_lazy(struct escanner *sc, const struct sregion *r, struct ct_err *err)
{
    struct cell target;
    ecell_row_start(&target, r->lo, r->lo_len);
    for (size_t i = 0; i < sc->nkids; i++) {
        struct echild *c = &sc->kids[i];
        if (!c->lazy)
            continue;
        c->lazy = false;
        int rc = echild_seek(c, &target, err);
        if (rc != CT_OK)
            return rc;
    }
    sc->nlazy = 0;
    sc->fast_ok = false; /* lead and runner were chosen without these inputs */
    return CT_OK;
}

static int scanner_find_row_lazy(struct escanner *sc, const struct sregion *r, bool *found,
                                 struct ct_err *err);

/* Forward: the next candidate row into sc->key. With lazy, a full search while some inputs'
 * seeks are deferred goes to scanner_find_row_lazy (the fast path is off while they are: see
 * there); without, the search covers the inputs already sought. */
static inline __attribute__((always_inline)) int scanner_find_fwd(struct escanner *sc,
                                                                  const struct sregion *r,
                                                                  bool lazy, bool *found,
                                                                  struct ct_err *err)
{
    *found = false;
    const struct cell *best = NULL;
    sc->row_single = false;
    if (sc->fast_ok) {
        const struct echild *c = &sc->kids[sc->lead];
        const struct cell *rc = sc->runner >= 0 ? &sc->kids[sc->runner].cur : NULL;
        if (c->valid && row_below_hi(r, c->cur.row, c->cur.row_len) &&
            (!rc || bytes_cmp(c->cur.row, c->cur.row_len, rc->row, rc->row_len) < 0)) {
            best = &c->cur;
            sc->row_single = true;
        }
    }
    if (!best) { /* full search: the smallest row, and the smallest among the others */
        if (lazy && __builtin_expect(sc->nlazy != 0, 0))
            return scanner_find_row_lazy(sc, r, found, err);
        ptrdiff_t bi = -1, ru = -1;
        for (size_t i = 0; i < sc->nkids; i++) {
            struct echild *c = &sc->kids[i];
            if (!c->valid || !row_below_hi(r, c->cur.row, c->cur.row_len))
                continue;
            if (!best) {
                best = &c->cur;
                bi = (ptrdiff_t)i;
                continue;
            }
            if (bytes_cmp(c->cur.row, c->cur.row_len, best->row, best->row_len) < 0) {
                ru = bi;
                best = &c->cur;
                bi = (ptrdiff_t)i;
            } else if (ru < 0 || bytes_cmp(c->cur.row, c->cur.row_len, sc->kids[ru].cur.row,
                                           sc->kids[ru].cur.row_len) < 0) {
                ru = (ptrdiff_t)i;
            }
        }
        if (best) {
            sc->fast_ok = true;
            sc->lead = (size_t)bi;
            sc->runner = ru;
            const struct cell *rc = ru >= 0 ? &sc->kids[ru].cur : NULL;
            sc->row_single = !rc || bytes_cmp(best->row, best->row_len, rc->row, rc->row_len) < 0;
        }
    }
    if (best) {
        int rc = KEY_RESERVE(sc, best->row_len + 1);
        if (rc != CT_OK)
            return rc;
        coding_copy_short(sc->key, best->row, best->row_len);
        sc->key_len = best->row_len;
        *found = true;
    }
    return CT_OK;
}

/* scanner_find_row while some inputs' seeks are deferred: the first time, the region's first
 * row lo is taken from the other inputs if one of them holds it (the deferred ones hold nothing
 * of it and nothing before it); otherwise, and on every later call, the deferred inputs are
 * sought first. */
static __attribute__((noinline)) int
scanner_find_row_lazy(struct escanner *sc, const struct sregion *r, bool *found, struct ct_err *err)
{
    if (sc->lazy_first) {
        sc->lazy_first = false;
        int rc = scanner_find_fwd(sc, r, false, found, err);
        if (rc != CT_OK || (*found && cell_bytes_eq(sc->key, sc->key_len, r->lo, r->lo_len))) {
            /* lead and runner leave the deferred inputs out: the next search is a full one,
             * which comes back here and seeks them first */
            sc->fast_ok = false;
            return rc;
        }
    }
    int rc = scanner_seek_lazy(sc, r, err);
    if (rc != CT_OK)
        return rc;
    return scanner_find_fwd(sc, r, false, found, err);
}

/* Finds the next candidate row of the open region into sc->key; false if none. */
static int scanner_find_row(struct escanner *sc, bool *found, struct ct_err *err)
{
    struct sregion *r = scanner_region(sc);
    *found = false;
    if (!sc->o.reversed) {
        return scanner_find_fwd(sc, r, true, found, err);
    }
    /* reversed: previous row below the bound (key holds the last row returned) */
    struct cell target;
    bool have_target = false; /* made when an input needs a seek (not for a step back) */
    int rc0;
    bool use_last = sc->bound_inf && r->hi_inf;
    const struct cell *best = NULL;
    sc->row_single = false;
    for (size_t i = 0; i < sc->nkids; i++) {
        struct echild *c = &sc->kids[i];
        /* an input that held no cell of the last row still sits on its last cell below it */
        if (!c->rev_ok) {
            if (!use_last && !c->has_start && !have_target) {
                rc0 = TMP_RESERVE(sc, (sc->bound_inf ? r->hi_len : sc->key_len) + 2);
                if (rc0 != CT_OK)
                    return rc0;
                if (!sc->bound_inf) {
                    memcpy(sc->tmp, sc->key, sc->key_len);
                    ecell_row_start(&target, sc->tmp, sc->key_len);
                } else {
                    memcpy(sc->tmp, r->hi, r->hi_len);
                    ecell_row_start(&target, sc->tmp, r->hi_len);
                }
                have_target = true;
            }
            int rc = use_last       ? echild_seek_last(c, err)
                     : c->has_start ? echild_prev_row(c, err)
                                    : echild_seek_for_prev(c, &target, err);
            if (rc != CT_OK)
                return rc;
            c->rev_ok = true;
        }
        if (!c->valid || bytes_cmp(c->cur.row, c->cur.row_len, r->lo, r->lo_len) < 0)
            continue;
        if (!best || bytes_cmp(c->cur.row, c->cur.row_len, best->row, best->row_len) > 0)
            best = &c->cur;
    }
    if (!best)
        return CT_OK;
    if ((rc0 = KEY_RESERVE(sc, best->row_len + 1)) != CT_OK)
        return rc0;
    memcpy(sc->key, best->row, best->row_len);
    sc->key_len = best->row_len;
    sc->bound_inf = false;
    size_t non = 0, lead = 0;
    for (size_t i = 0; i < sc->nkids; i++) {
        struct echild *c = &sc->kids[i];
        if (&c->cur != best && !child_on_row(c, sc->key, sc->key_len))
            continue;
        int rc = echild_rewind_row(c, err);
        if (rc != CT_OK)
            return rc;
        c->rev_ok = false;
        non++;
        lead = i;
    }
    /* one input holds the row: scanner_read_row walks it without the merge's set-up (the
     * reversed twin of the forward single-input path; the rewound input is on the row's first
     * visible cell, as a merge would start it) */
    sc->row_single = non == 1;
    sc->lead = lead;
    *found = true;
    return CT_OK;
}

/* Moves every input past row sc->key (forward direction). */
static int scanner_skip_row(struct escanner *sc, struct ct_err *err)
{
    sc->fast_ok = false;
    int rc0 = TMP_RESERVE(sc, sc->key_len + 2);
    if (rc0 != CT_OK)
        return rc0;
    memcpy(sc->tmp, sc->key, sc->key_len);
    sc->tmp[sc->key_len] = 0;
    struct cell target;
    ecell_row_start(&target, sc->tmp, sc->key_len + 1);
    for (size_t i = 0; i < sc->nkids; i++) {
        if (!child_on_row(&sc->kids[i], sc->key, sc->key_len))
            continue;
        int rc = echild_seek(&sc->kids[i], &target, err);
        if (rc != CT_OK)
            return rc;
    }
    return CT_OK;
}

/* How far past a file input's cell scanner_push_cell looks for the end of its row. */
#define SCAN_PIN_LOOK 4

/* Whether file input c's current row ends inside the block it is on, within SCAN_PIN_LOOK
 * entries: the entry after the row's last one is in the block, starts another row (the flags are
 * exact) and is visible. Then every step the read makes through the rest of the row, and the one
 * that leaves it, stays in this block (the invisible entries stepped over lie before that entry),
 * so the iterator holds the block until the scanner's next call: the row's cells may point into
 * it (scan.c invariant (6)). A seek past a column (forward reads) lands in the block too: its
 * target sorts below that entry and above the current cell. */
static inline __attribute__((always_inline)) bool child_row_ends_in_block(const struct echild *c)
{
    const struct sst_block *b = c->si->blk;
    int64_t j = c->si->i + 1, lim = j + SCAN_PIN_LOOK;
    for (; j < (int64_t)b->n && j < lim; j++)
        if (!b->e[j].same_row)
            return b->e[j].seq <= c->snap;
    return false;
}

static inline __attribute__((always_inline)) int scanner_push_cell(struct escanner *sc,
                                                                   const struct sfam *f,
                                                                   const struct echild *c,
                                                                   struct ct_err *err)
{
    if (__builtin_expect(sc->o.cell_filter != NULL, 0)) { /* the cell as it would be returned */
        struct wc_cell tc = {wc_bytes_of(sc->key, sc->key_len),
                             wc_bytes_of(f->d.name, f->name_len),
                             wc_bytes_of(c->cur.qual, c->cur.qual_len),
                             wc_bytes_of(c->cur.value, c->cur.value_len),
                             c->cur.ts_ms,
                             (enum wc_cell_type)c->cur.type};
        if (!sc->o.cell_filter(sc->o.cell_filter_arg, &tc))
            return CT_OK;
    }
    if (sc->ncells == sc->cells_cap) {
        size_t cap = sc->cells_cap * 2;
        struct wc_cell *nc = sc->cells == sc->cells_inline ? malloc(cap * sizeof(*nc))
                                                           : realloc(sc->cells, cap * sizeof(*nc));
        if (!nc)
            return ct_err_set(err, CT_ENOMEM, "out of memory reading a row");
        if (sc->cells == sc->cells_inline)
            memcpy(nc, sc->cells_inline, sizeof(sc->cells_inline));
        sc->cells = nc;
        sc->cells_cap = cap;
    }
    struct wc_cell *o = &sc->cells[sc->ncells++];
    o->row = wc_bytes_of(sc->key, sc->key_len);
    o->family = wc_bytes_of(f->d.name, f->name_len);
    o->ts_ms = c->cur.ts_ms;
    o->type = (enum wc_cell_type)c->cur.type;
    if (c->is_ms || child_row_ends_in_block(c)) { /* in place: nothing copied */
        o->qualifier = wc_bytes_of(c->cur.qual, c->cur.qual_len);
        o->value = wc_bytes_of(c->cur.value, c->cur.value_len);
    } else if (c->si->blk->mapped) { /* sst_iter_value_pinned(), inline */
        /* the value stays in the file's mapping while the scanner holds the file: only the
         * qualifier (in the decoded block, released when the iterator moves on) is copied */
        uint8_t *p = sarena_alloc(sc, c->cur.qual_len + 1);
        if (!p)
            return ct_err_set(err, CT_ENOMEM, "out of memory reading a row");
        coding_copy_short(p, c->cur.qual, c->cur.qual_len);
        o->qualifier = wc_bytes_of(p, c->cur.qual_len);
        o->value = wc_bytes_of(c->cur.value, c->cur.value_len);
    } else {
        uint8_t *p = sarena_alloc(sc, c->cur.qual_len + c->cur.value_len + 1);
        if (!p)
            return ct_err_set(err, CT_ENOMEM, "out of memory reading a row");
        /* inline word moves for the small qualifiers and values of single-point cells (two
         * libc calls per cell before), memcpy for large values (coding_copy_short) */
        coding_copy_short(p, c->cur.qual, c->cur.qual_len);
        coding_copy_short(p + c->cur.qual_len, c->cur.value, c->cur.value_len);
        o->qualifier = wc_bytes_of(p, c->cur.qual_len);
        o->value = wc_bytes_of(p + c->cur.qual_len, c->cur.value_len);
    }
    return CT_OK;
}

/* After this many cells skipped in a row of a column the matcher is done with (versions beyond
 * the wanted ones, older than the time range or TTL), the input seeks past the column instead of
 * stepping: a counter incremented N times holds N versions in the memstore until a flush, and
 * reading it (wc_increment's read of the latest value, a Get) would otherwise walk them all. */
#define SCAN_SKIPS_BEFORE_SEEK 8

/* Moves input c past the cell the matcher just judged: one step, or a seek past the rest of the
 * matcher's column when it is done with it and has skipped many of its cells in a row. The seek
 * target sorts after every cell of (row, column): timestamps run newest first and none is below
 * INT64_MIN. Only for forward reads (may_seek): a reversed scan's inputs keep their place in the
 * row to step back from. Skipping is safe because what follows in a done column are older
 * versions and older markers of that column only; the empty-qualifier column is never skipped,
 * because the family-wide markers live there, among its puts, and apply to every column. */
static __attribute__((noinline)) int child_seek_past_column(struct echild *c,
                                                            const struct matcher *m,
                                                            const uint8_t *row, size_t row_len,
                                                            struct ct_err *err)
{
    struct cell past = {0};
    past.row = row;
    past.row_len = (uint32_t)row_len;
    past.qual = m->qual;
    past.qual_len = (uint32_t)m->qual_len;
    past.ts_ms = INT64_MIN;
    c->same_row = false;
    c->row_known = false;
    return echild_seek(c, &past, err);
}

static inline __attribute__((always_inline)) int
child_advance(struct echild *c, const struct matcher *m, const uint8_t *row, size_t row_len,
              bool may_seek, unsigned *skips, struct ct_err *err)
{
    if (!may_seek || !m->col_done || m->raw || m->qual_len == 0) {
        *skips = 0;
    } else if (++*skips >= SCAN_SKIPS_BEFORE_SEEK) {
        *skips = 0;
        return child_seek_past_column(c, m, row, row_len, err);
    }
    return echild_next_inl(c, err);
}

/* Walks input c through the rest of row sc->key (the only input on it, so no merge), each cell
 * through the matcher, emitted cells pushed. */
/* The run of puts after a file input's current cell (which the matcher has just judged) that
 * the matcher would each emit as the only version of a new column: pushed straight from the
 * block's entries, without a cell to fill, a matcher step or a row compare per cell (a row of
 * single-point cells is such a run from its second cell on: ~200 instructions per cell before).
 * A run stops before the first entry that is not one: another row or block, a marker, an entry
 * of the snapshot's future, a second version of a column, a time outside the read's range, the
 * family's delete markers or TTL, a read-ahead step of the iterator, a full cell array, a long
 * qualifier. The generic step takes that entry. Afterwards the input and the matcher are where
 * the generic steps would have left them on the run's last cell. REQUIRES: c a file input on
 * its current cell, the matcher past it, and the read not raw and without a qualifier filter
 * (scanner_walk_input checks); a row with family delete-version markers (or a family marker at
 * INT64_MAX) takes the generic step. */
static __attribute__((noinline)) int scanner_walk_puts(struct escanner *sc, const struct sfam *f,
                                                       struct echild *c, unsigned *skips,
                                                       struct ct_err *err)
{
    struct sst_iter *it = c->si;
    const struct sst_block *b = it->blk;
    struct matcher *m = &sc->m;
    if (m->fv.n != 0 || m->F == INT64_MAX) /* family delete-version markers: the generic step */
        return CT_OK;
    int64_t i = it->i, i0 = i;
    uint32_t run = it->run;
    int64_t lo = m->tmin > m->F ? m->tmin : m->F + 1; /* ts >= tmin and ts > F (< INT64_MAX) */
    if (m->minv == 0 && m->f->oldest > lo)
        lo = m->f->oldest; /* rules 1 and 7: the TTL */
    if (lo == INT64_MIN)
        lo = INT64_MIN + 1; /* a fresh column's C is INT64_MIN: ts > C */
    int64_t hi = m->tmax;
    bool pinned = b->mapped;
    wc_cell_filter_fn filter = sc->o.cell_filter;
    struct wc_bytes fam = wc_bytes_of(f->d.name, f->name_len),
                    key = wc_bytes_of(sc->key, sc->key_len);
    struct wc_cell tc = {key, fam, {NULL, 0}, {NULL, 0}, 0, WC_TYPE_PUT}; /* the filter's */
    /* the last entry the run may reach: the block's last, and before the iterator's next
     * read-ahead step (sst_iter_next_cell takes that one); a full cell array ends it too (checked
     * per cell: a cell filter may leave cells out) */
    int64_t end = (int64_t)b->n - 1;
    if (run < SST_AHEAD_LAST && end > i + (SST_AHEAD_STEP - 1) - (int64_t)(run % SST_AHEAD_STEP))
        end = i + (SST_AHEAD_STEP - 1) - (int64_t)(run % SST_AHEAD_STEP);
    while (i < end && sc->ncells < sc->cells_cap) {
        const struct sst_dentry *d = &b->e[i + 1], *p = &b->e[i];
        if (!d->same_row || d->type != WC_TYPE_PUT || d->seq > c->snap || d->ts < lo ||
            d->ts >= hi || d->key_len - d->row_len > m->qual_cap)
            break;
        uint32_t ql = d->key_len - d->row_len;
        const uint8_t *q = b->keys + d->key_off + d->row_len;
        if (ql == p->key_len - p->row_len &&
            cell_bytes_eq(q, ql, b->keys + p->key_off + p->row_len, ql))
            break;    /* another version of the same column */
        if (filter) { /* the cell in place (the block is held), left out or kept */
            tc.qualifier = wc_bytes_of(q, ql);
            tc.value = wc_bytes_of(b->raw + d->val_off, d->val_len);
            tc.ts_ms = d->ts;
            if (!filter(sc->o.cell_filter_arg, &tc)) {
                i++;
                continue;
            }
        }
        uint8_t *a = sarena_alloc(sc, ql + (pinned ? 0 : d->val_len) + 1);
        if (!a)
            return ct_err_set(err, CT_ENOMEM, "out of memory reading a row");
        struct wc_cell *o = &sc->cells[sc->ncells++];
        o->row = key;
        o->family = fam;
        o->ts_ms = d->ts;
        o->type = WC_TYPE_PUT;
        coding_copy_short(a, q, ql);
        o->qualifier = wc_bytes_of(a, ql);
        if (pinned) {
            o->value = wc_bytes_of(b->raw + d->val_off, d->val_len);
        } else {
            coding_copy_short(a + ql, b->raw + d->val_off, d->val_len);
            o->value = wc_bytes_of(a + ql, d->val_len);
        }
        i++;
    }
    if (i == i0)
        return CT_OK;
    run += (uint32_t)(i - i0);
    /* the input on the run's last cell, the matcher as after judging it (a put that opened its
     * column, emitted: matcher_cell_inl's folded path) */
    it->i = i;
    it->run = run;
    sst_iter_cell(it, &c->cur);
    coding_copy_short(m->qual, c->cur.qual, c->cur.qual_len);
    m->qual_len = c->cur.qual_len;
    m->have_col = true;
    m->C = INT64_MIN;
    m->dts.n = 0;
    m->col_done = false;
    m->n = 1;
    m->have_last = true;
    m->last_ts = c->cur.ts_ms;
    m->last_type = c->cur.type;
    *skips = 0;
    return CT_OK;
}

/* Whether the entry after file iterator it's current one (in the same block) is a put of the
 * same row and another column: a run for scanner_walk_puts may start there. Checked inline so
 * that rows of one cell, or of versions of one column (db_bench's rows), do not pay the call. */
static inline __attribute__((always_inline)) bool sst_next_opens_column(const struct sst_iter *it)
{
    const struct sst_block *b = it->blk;
    if (it->i + 1 >= (int64_t)b->n)
        return false;
    const struct sst_dentry *d = &b->e[it->i + 1], *p = &b->e[it->i];
    return d->same_row && d->type == WC_TYPE_PUT &&
           !cell_bytes_eq(b->keys + d->key_off + d->row_len, d->key_len - d->row_len,
                          b->keys + p->key_off + p->row_len, p->key_len - p->row_len);
}

static inline __attribute__((always_inline)) int
scanner_walk_input(struct escanner *sc, const struct sfam *f, struct echild *c, unsigned *skips,
                   struct ct_err *err)
{
    do {
        int rc = matcher_cell_inl(&sc->m, &c->cur, err);
        if (rc < 0)
            return rc;
        if (rc == M_EMIT && (rc = scanner_push_cell(sc, f, c, err)) != CT_OK)
            return rc;
        /* runs of single-version puts go through scanner_walk_puts when the read allows it,
         * from a row's second cell on (same_row: the step onto this cell stayed on the row, so
         * rows of one cell pay one test) */
        if (c->same_row && !c->is_ms && sst_next_opens_column(c->si) && !sc->m.raw &&
            !sc->m.qfilter && sc->m.maxv >= 1 &&
            (rc = scanner_walk_puts(sc, f, c, skips, err)) != CT_OK)
            return rc;
        if ((rc = child_advance(c, &sc->m, sc->key, sc->key_len, !sc->o.reversed, skips, err)) !=
            CT_OK)
            return rc;
    } while (child_still_on_row(c, sc->key, sc->key_len));
    return CT_OK;
}

/* Reads row sc->key from every family's inputs through the matcher. */
static int scanner_read_row(struct escanner *sc, struct ct_err *err)
{
    sc->ncells = 0;
    sarena_reset(sc);
    if (sc->row_single) { /* one input holds the row (fast path): walk it, nothing to merge */
        struct echild *best = &sc->kids[sc->lead];
        size_t f = 0;
        while (sc->lead >= sc->kid_start[f + 1])
            f++;
        matcher_start_family(&sc->m, &sc->fams[f]);
        unsigned skips = 0;
        return scanner_walk_input(sc, &sc->fams[f], best, &skips, err);
    }
    sc->fast_ok = false; /* several inputs may move */
    if (!sc->on_row && !(sc->on_row = sc_zalloc(sc, sc->nkids * sizeof(*sc->on_row))))
        return ct_err_set(err, CT_ENOMEM, "out of memory reading a row");
    for (size_t f = 0; f < sc->nsf; f++) {
        matcher_start_family(&sc->m, &sc->fams[f]);
        /* The family's inputs on the row, in input order, found once: the merge compares only
         * their cells, and after the row (cell_compare_same_row); an input leaves the list when
         * it moves past the row and never comes back (inputs only move forward), and no other
         * input can join. Ties between equal cells go to the first input, as before. */
        size_t non = 0;
        for (size_t i = sc->kid_start[f]; i < sc->kid_start[f + 1]; i++)
            if (child_on_row(&sc->kids[i], sc->key, sc->key_len))
                sc->on_row[non++] = i;
        unsigned skips = 0;
        while (non > 1) {
            size_t bj = 0;
            for (size_t j = 1; j < non; j++)
                if (cell_compare_same_row(&sc->kids[sc->on_row[j]].cur,
                                          &sc->kids[sc->on_row[bj]].cur) < 0)
                    bj = j;
            struct echild *best = &sc->kids[sc->on_row[bj]];
            int rc = matcher_cell_inl(&sc->m, &best->cur, err);
            if (rc < 0)
                return rc;
            if (rc == M_EMIT && (rc = scanner_push_cell(sc, &sc->fams[f], best, err)) != CT_OK)
                return rc;
            if ((rc = child_advance(best, &sc->m, sc->key, sc->key_len, !sc->o.reversed, &skips,
                                    err)) != CT_OK)
                return rc;
            if (!child_still_on_row(best, sc->key, sc->key_len)) { /* a few: no memmove call */
                for (size_t j = bj; j + 1 < non; j++)
                    sc->on_row[j] = sc->on_row[j + 1];
                non--;
            }
        }
        if (non == 1) { /* the only input left on this row: walk it without merging */
            int rc = scanner_walk_input(sc, &sc->fams[f], &sc->kids[sc->on_row[0]], &skips, err);
            if (rc != CT_OK)
                return rc;
        }
    }
    return CT_OK;
}

int engine_scanner_next(struct wc_scanner *wsc, struct wc_row *row, struct ct_err *err)
{
    struct escanner *sc = (struct escanner *)wsc;
    if (sc->have_row && sc->o.batch_cells && sc->chunk_off < sc->ncells) {
        size_t n = sc->ncells - sc->chunk_off;
        if (n > sc->o.batch_cells)
            n = sc->o.batch_cells;
        row->key = wc_bytes_of(sc->key, sc->key_len);
        row->cells = sc->cells + sc->chunk_off;
        row->ncells = n;
        sc->chunk_off += n;
        return CT_OK;
    }
    sc->have_row = false;
    while (!sc->done) {
        if (sc->o.limit_rows && sc->rows >= sc->o.limit_rows) {
            sc->done = true;
            break;
        }
        if (sc->ri >= sc->nregs) {
            sc->done = true;
            break;
        }
        int rc;
        if (!sc->region_open && (rc = scanner_open_region(sc, err)) != CT_OK)
            return rc;
        bool found;
        if ((rc = scanner_find_row(sc, &found, err)) != CT_OK)
            return rc;
        if (!found) {
            if (sc->ri + 1 < sc->nregs &&
                (sc->o.reversed ? sc->regs[sc->nregs - 1 - sc->ri].cont
                                : sc->regs[sc->ri + 1].cont)) {
                sc->ri++; /* the next piece's inputs are the open ones: move them on */
                if ((rc = scanner_continue_region(sc, err)) != CT_OK)
                    return rc;
                continue;
            }
            scanner_close_region(sc);
            sc->ri++;
            continue;
        }
        if (sc->o.row_filter) {
            enum wc_row_decision d = sc->o.row_filter(sc->o.row_filter_arg, sc->key, sc->key_len);
            if (d == WC_ROW_STOP) {
                sc->done = true;
                break;
            }
            if (d == WC_ROW_SKIP) {
                if (!sc->o.reversed && (rc = scanner_skip_row(sc, err)) != CT_OK)
                    return rc;
                continue;
            }
        }
        if ((rc = scanner_read_row(sc, err)) != CT_OK)
            return rc;
        if (sc->ncells == 0)
            continue;
        sc->rows++;
        sc->reads_pending++; /* for reads_er, the open region */
        sc->have_row = true;
        size_t n = sc->ncells;
        if (sc->o.batch_cells && n > sc->o.batch_cells)
            n = sc->o.batch_cells;
        sc->chunk_off = n;
        row->key = wc_bytes_of(sc->key, sc->key_len);
        row->cells = sc->cells;
        row->ncells = n;
        return CT_OK;
    }
    return CT_NOTFOUND;
}

static void sinputs_release(struct sinputs *in)
{
    for (size_t i = 0; i < in->nms; i++)
        memstore_unref(in->ms[i]);
    for (size_t i = 0; i < in->nfiles; i++)
        sst_unref(in->files[i]);
}

void engine_scanner_close(struct wc_scanner *wsc)
{
    struct escanner *sc = (struct escanner *)wsc;
    if (!sc)
        return;
    scanner_close_region(sc);
    scanner_flush_reads(sc);
    for (size_t r = 0; r < sc->nregs; r++) {
        if (sc->regs[r].in && !sc->regs[r].cont) /* shared inputs: released with the first */
            for (size_t f = 0; f < sc->nsf; f++)
                sinputs_release(&sc->regs[r].in[f]);
        if (sc->regs[r].er)
            eregion_unref(sc->regs[r].er);
    }
    matcher_destroy(&sc->m);
    /* the row buffers: one heap chunk and the cells array stay with the scanner for its
     * thread's next scanner when small enough (scanner_alloc's note) */
    struct sarena_chunk *c = sc->arena;
    while (c) {
        struct sarena_chunk *n = c->next;
        if (c != (struct sarena_chunk *)(void *)sc->arena_inline) {
            if (!sc->kept_chunk && c->cap <= SCAN_KEEP_BYTES)
                sc->kept_chunk = c;
            else
                free(c);
        }
        c = n;
    }
    if (sc->cells != sc->cells_inline) {
        if (!sc->kept_cells && sc->cells_cap * sizeof(*sc->cells) <= SCAN_KEEP_BYTES) {
            sc->kept_cells = sc->cells;
            sc->kept_cells_cap = sc->cells_cap;
        } else {
            free(sc->cells);
        }
    }
    struct spool_block *pb = sc->pool_heap;
    while (pb) {
        struct spool_block *nb = pb->next;
        free(pb);
        pb = nb;
    }
    if (sc->key != sc->key_inline)
        free(sc->key);
    if (sc->tmp != sc->tmp_inline)
        free(sc->tmp);
    if (sc->snap_registered)
        estore_snapshot_release(sc->s, sc->snap);
    if (sc->t)
        etable_unref(sc->t);
    scanner_free(sc);
}

/* ---- open ------------------------------------------------------------------------------ */

static int wc_bytes_cmp_q(const void *a, const void *b)
{
    const struct wc_bytes *x = a, *y = b;
    return bytes_cmp(x->data, x->len, y->data, y->len);
}

/* next(p) of "Gets and scans": drops trailing 0xFF bytes and increments the last; false if none. */
static bool prefix_next(const uint8_t *p, size_t len, uint8_t *out, size_t *out_len)
{
    while (len && p[len - 1] == 0xFF)
        len--;
    if (!len)
        return false;
    memcpy(out, p, len);
    out[len - 1]++;
    *out_len = len;
    return true;
}

static bool file_may_hold(const struct sst *f, const struct sregion *r, const struct sfam *sf,
                          const struct wc_scan_options *o, bool single_row)
{
    const struct sst_meta *m = sst_get_meta(f);
    if (m->cells == 0)
        return false;
    /* key range */
    if (bytes_cmp(m->last_row, m->last_row_len, r->lo, r->lo_len) < 0)
        return false;
    if (!r->hi_inf && bytes_cmp(m->first_row, m->first_row_len, r->hi, r->hi_len) >= 0)
        return false;
    /* time range: puts below tmin are never returned, markers there only mask them */
    if (!o->raw && m->max_ts_ms < o->tmin_ms)
        return false;
    if (o->raw && (m->max_ts_ms < o->tmin_ms || m->min_ts_ms >= o->tmax_ms))
        return false;
    if (!o->raw && m->delete_markers == 0 && m->min_ts_ms >= o->tmax_ms)
        return false;
    /* TTL: everything expired */
    if (!o->raw && sf->d.min_versions == 0 && m->max_ts_ms < sf->oldest)
        return false;
    if (single_row && !sst_may_contain_row_hash(f, r->row_hash))
        return false;
    /* a family-wide marker sits at the empty qualifier: check it too */
    if (single_row && !sf->whole && sf->nquals == 1 &&
        !sst_may_contain_rowcol(f, r->lo, r->lo_len, sf->quals[0].data, sf->quals[0].len) &&
        (m->delete_markers == 0 ||
         !sst_may_contain_rowcol(f, r->lo, r->lo_len, (const uint8_t *)"", 0)))
        return false;
    return true;
}

/* Adds the sregion of region er's part of the row range [lo, hi) (hi_inf: no upper bound) to
 * the scanner's list, capturing its inputs (REQUIRES: t->map_lock held, er meets the range). */
static int scanner_capture_inputs(struct escanner *sc, struct eregion *er, struct sregion *sr,
                                  const struct wc_scan_options *o, struct ct_err *err);

static int scanner_add_region(struct escanner *sc, struct eregion *er, const uint8_t *lo,
                              size_t lo_len, const uint8_t *hi, size_t hi_len, bool hi_inf,
                              const struct wc_scan_options *o, struct ct_err *err)
{
    struct sregion *sr = &sc->regs[sc->nregs++];
    eregion_ref(er);
    sr->er = er;
    bool lo_from_region = bytes_cmp(er->start, er->start_len, lo, lo_len) > 0;
    sr->lo_len = lo_from_region ? er->start_len : lo_len;
    sr->lo = sc_dup(sc, lo_from_region ? er->start : lo, sr->lo_len);
    if (er->end_len && (hi_inf || bytes_cmp(er->end, er->end_len, hi, hi_len) < 0)) {
        sr->hi = sc_dup(sc, er->end, er->end_len);
        sr->hi_len = er->end_len;
        sr->hi_inf = false;
    } else {
        sr->hi = sc_dup(sc, hi, hi_inf ? 0 : hi_len);
        sr->hi_len = hi_inf ? 0 : hi_len;
        sr->hi_inf = hi_inf;
    }
    if (sc->single_row)
        sr->row_hash = bloom_hash_row(lo, lo_len);
    if (!sr->lo || !sr->hi)
        return ct_err_set(err, CT_ENOMEM, "out of memory opening a scanner");
    return scanner_capture_inputs(sc, er, sr, o, err);
}

/* Captures (references) the inputs of region er that may hold rows of sr's bounds into sr->in.
 * REQUIRES: t->map_lock held. */
static int scanner_capture_inputs(struct escanner *sc, struct eregion *er, struct sregion *sr,
                                  const struct wc_scan_options *o, struct ct_err *err)
{
    int rc = CT_OK;
    sr->in = sc_zalloc(sc, (sc->nsf ? sc->nsf : 1) * sizeof(*sr->in));
    if (!sr->in)
        return ct_err_set(err, CT_ENOMEM, "out of memory opening a scanner");
    pthread_mutex_lock(&er->mu);
    for (size_t f = 0; f < sc->nsf && rc == CT_OK; f++) {
        struct efam *ef = &er->fams[sc->fams[f].idx];
        struct sinputs *in = &sr->in[f];
        in->ms = sc_zalloc(sc, (ef->nfrozen + 1) * sizeof(*in->ms));
        in->files = sc_zalloc(sc, (ef->nfiles + 1) * sizeof(*in->files));
        if (!in->ms || !in->files) {
            rc = ct_err_set(err, CT_ENOMEM, "out of memory opening a scanner");
            break;
        }
        if (memstore_count(ef->active) &&
            (!sc->single_row || memstore_may_contain_row_hash(ef->active, sr->row_hash))) {
            memstore_ref(ef->active);
            in->ms[in->nms++] = ef->active;
        }
        for (size_t k = 0; k < ef->nfrozen; k++) {
            if (sc->single_row && !memstore_may_contain_row_hash(ef->frozen[k], sr->row_hash))
                continue;
            memstore_ref(ef->frozen[k]);
            in->ms[in->nms++] = ef->frozen[k];
        }
        for (size_t k = 0; k < ef->nfiles; k++) {
            struct sst *fl = ef->files[k].sst;
            if (!file_may_hold(fl, sr, &sc->fams[f], o, sc->single_row))
                continue;
            sst_ref(fl);
            in->files[in->nfiles++] = fl;
        }
    }
    pthread_mutex_unlock(&er->mu);
    return rc;
}

/* Adds the piece of range r in region er to the scanner's list (REQUIRES: t->map_lock held, er
 * meets r). A piece in the same region as the piece before it shares its inputs (cont); the first
 * piece of a region captures the inputs for every later range in it too: its files are chosen
 * for the bounds from its start to the region's end or the last range's stop (last), a superset
 * of each later piece's (an input holding no row of a piece only costs its seek). */
static int scanner_add_piece(struct escanner *sc, struct eregion *er, const struct wc_row_range *r,
                             const struct wc_row_range *last, const struct wc_scan_options *o,
                             struct ct_err *err)
{
    struct sregion *prev = sc->nregs ? &sc->regs[sc->nregs - 1] : NULL;
    struct sregion *sr = &sc->regs[sc->nregs++];
    eregion_ref(er);
    sr->er = er;
    bool hi_inf = r->stop.len == 0;
    bool lo_from_region = bytes_cmp(er->start, er->start_len, r->start.data, r->start.len) > 0;
    sr->lo_len = lo_from_region ? er->start_len : r->start.len;
    sr->lo = sc_dup(sc, lo_from_region ? er->start : r->start.data, sr->lo_len);
    if (er->end_len && (hi_inf || bytes_cmp(er->end, er->end_len, r->stop.data, r->stop.len) < 0)) {
        sr->hi = sc_dup(sc, er->end, er->end_len);
        sr->hi_len = er->end_len;
        sr->hi_inf = false;
    } else {
        sr->hi = sc_dup(sc, r->stop.data, hi_inf ? 0 : r->stop.len);
        sr->hi_len = hi_inf ? 0 : r->stop.len;
        sr->hi_inf = hi_inf;
    }
    if (!sr->lo || !sr->hi)
        return ct_err_set(err, CT_ENOMEM, "out of memory opening a scanner");
    if (prev && prev->er == er) {
        sr->in = prev->in;
        sr->cont = true;
        return CT_OK;
    }
    struct sregion cap = *sr; /* the bounds the inputs are chosen for */
    bool last_inf = last->stop.len == 0;
    if (er->end_len &&
        (last_inf || bytes_cmp(er->end, er->end_len, last->stop.data, last->stop.len) < 0)) {
        cap.hi = er->end;
        cap.hi_len = er->end_len;
        cap.hi_inf = false;
    } else {
        cap.hi = (uint8_t *)last->stop.data;
        cap.hi_len = last->stop.len;
        cap.hi_inf = last_inf;
    }
    int rc = scanner_capture_inputs(sc, er, &cap, o, err);
    sr->in = cap.in;
    return rc;
}

/* The pieces of a multi-range scan (o->ranges, ascending and disjoint: wc.c checked them):
 * every non-empty range intersected with every region it meets, in key order, counted in *n.
 * With sc NULL only counts them; else adds them to sc's list (the caller made room for the
 * count). REQUIRES: t->map_lock held. */
static int scanner_range_regions(struct etable *t, const struct wc_scan_options *o,
                                 struct escanner *sc, size_t *np, struct ct_err *err)
{
    size_t n = 0, j = 0;
    int rc;
    for (size_t i = 0; i < o->nranges; i++) {
        const struct wc_row_range *r = &o->ranges[i];
        bool hi_inf = r->stop.len == 0;
        if (!hi_inf && bytes_cmp(r->start.data, r->start.len, r->stop.data, r->stop.len) >= 0)
            continue; /* empty */
        /* regions ending at or before the range's start hold none of it, nor of later ranges */
        while (j + 1 < t->nregions && t->regions[j]->end_len &&
               bytes_cmp(t->regions[j]->end, t->regions[j]->end_len, r->start.data, r->start.len) <=
                   0)
            j++;
        for (size_t k = j; k < t->nregions; k++) {
            struct eregion *er = t->regions[k];
            if (!hi_inf && bytes_cmp(er->start, er->start_len, r->stop.data, r->stop.len) >= 0)
                break;
            n++;
            if (sc && (rc = scanner_add_piece(sc, er, r, &o->ranges[o->nranges - 1], o, err)) !=
                          CT_OK)
                return rc;
        }
    }
    *np = n;
    return CT_OK;
}

static uint8_t *dup_bytes(const uint8_t *p, size_t n)
{
    uint8_t *d = malloc(n ? n : 1);
    if (d && n)
        memcpy(d, p, n);
    return d;
}

static int scanner_open_internal(struct estore *s, struct etable *t,
                                 const struct wc_scan_options *o, struct escanner **out,
                                 struct ct_err *err)
{
    struct escanner *sc = scanner_alloc();
    if (!sc)
        return ct_err_set(err, CT_ENOMEM, "out of memory opening a scanner");
    memset(sc, 0, offsetof(struct escanner, cells_inline)); /* the inline buffers need none */
    sc->cells = sc->cells_inline;
    sc->cells_cap = sizeof(sc->cells_inline) / sizeof(sc->cells_inline[0]);
    if (sc->kept_cells) { /* the last scanner's array (scanner_alloc's note) */
        sc->cells = sc->kept_cells;
        sc->cells_cap = sc->kept_cells_cap;
        sc->kept_cells = NULL;
        sc->kept_cells_cap = 0;
    }
    sc->arena = sc->arena_cur = (struct sarena_chunk *)(void *)sc->arena_inline;
    sc->arena->next = NULL;
    sc->arena->used = 0;
    sc->arena->cap = sizeof(sc->arena_inline) - sizeof(struct sarena_chunk);
    if (sc->kept_chunk) { /* the last scanner's chunk, filled first */
        struct sarena_chunk *kc = sc->kept_chunk;
        sc->kept_chunk = NULL;
        kc->used = 0;
        kc->next = sc->arena;
        sc->arena = sc->arena_cur = kc;
    }
    matcher_init(&sc->m);
    sc->key = sc->key_inline;
    sc->key_cap = sizeof(sc->key_inline);
    sc->tmp = sc->tmp_inline;
    sc->tmp_cap = sizeof(sc->tmp_inline);
    sc->base.ops = s->base.ops;
    sc->s = s;
    sc->o = *o;
    etable_ref(t);
    sc->t = t;
    int rc = CT_OK;

    /* Copy borrowed option bytes the scanner keeps using. */
    size_t ob = o->qualifier_prefix.len + o->qualifier_min.len + o->qualifier_max.len;
    for (size_t i = 0; i < o->ncolumns; i++) /* a column's qualifier counts only if it has one */
        ob += o->columns[i].has_qualifier ? o->columns[i].qualifier.len : 0;
    sc->owned = sc_zalloc(sc, ob + 1);
    if (!sc->owned) {
        rc = ct_err_set(err, CT_ENOMEM, "out of memory opening a scanner");
        goto fail;
    }
    uint8_t *op = sc->owned;
#define KEEP(field)                                                                                \
    do {                                                                                           \
        if (sc->o.field.len)                                                                       \
            memcpy(op, sc->o.field.data, sc->o.field.len);                                         \
        sc->o.field.data = op;                                                                     \
        op += sc->o.field.len;                                                                     \
    } while (0)
    KEEP(qualifier_prefix);
    KEEP(qualifier_min);
    KEEP(qualifier_max);
#undef KEEP
    sc->o.columns = NULL;
    sc->o.start_row = sc->o.stop_row = sc->o.row_prefix = wc_bytes_of(NULL, 0);
    sc->o.ranges = NULL; /* copied into the sregions below */
    sc->o.nranges = 0;

    /* Row bounds as [lo, hi). */
    uint8_t lo[WC_MAX_ROW_BYTES + 1], hi[WC_MAX_ROW_BYTES + 1], pn[WC_MAX_ROW_BYTES];
    size_t lo_len = 0, hi_len = 0, pn_len = 0;
    bool hi_inf = true;
    if (!o->reversed) {
        if (o->start_row.len)
            memcpy(lo, o->start_row.data, o->start_row.len);
        lo_len = o->start_row.len;
        if (o->stop_row.len) {
            memcpy(hi, o->stop_row.data, o->stop_row.len);
            hi_len = o->stop_row.len;
            hi_inf = false;
        }
    } else {
        if (o->start_row.len) {
            memcpy(hi, o->start_row.data, o->start_row.len);
            hi[o->start_row.len] = 0;
            hi_len = o->start_row.len + 1;
            hi_inf = false;
        }
        if (o->stop_row.len) {
            memcpy(lo, o->stop_row.data, o->stop_row.len);
            lo[o->stop_row.len] = 0;
            lo_len = o->stop_row.len + 1;
        }
    }
    if (o->row_prefix.len) {
        if (bytes_cmp(lo, lo_len, o->row_prefix.data, o->row_prefix.len) < 0) {
            memcpy(lo, o->row_prefix.data, o->row_prefix.len);
            lo_len = o->row_prefix.len;
        }
        if (prefix_next(o->row_prefix.data, o->row_prefix.len, pn, &pn_len) &&
            (hi_inf || bytes_cmp(pn, pn_len, hi, hi_len) < 0)) {
            memcpy(hi, pn, pn_len);
            hi_len = pn_len;
            hi_inf = false;
        }
    }
    sc->single_row =
        !hi_inf && hi_len == lo_len + 1 && hi[lo_len] == 0 && memcmp(hi, lo, lo_len) == 0;
    bool empty = !hi_inf && bytes_cmp(lo, lo_len, hi, hi_len) >= 0;

    rc = pthread_rwlock_rdlock(&t->map_lock);
    if (rc != 0) {
        rc = ct_err_set(err, CT_EIO, "cannot lock table %s", t->name);
        goto fail;
    }
    if (atomic_load(&t->dropped)) {
        rc = ct_err_set(err, CT_NOTFOUND, "Table %s does not exist.", t->name);
        goto fail_unlock;
    }
    if (!atomic_load(&t->enabled)) {
        rc = ct_err_set(err, CT_EBUSY, "Table %s is disabled.", t->name);
        goto fail_unlock;
    }

    /* Families. */
    sc->fams = sc_zalloc(sc, t->nfams * sizeof(*sc->fams));
    sc->kid_start = sc_zalloc(sc, (t->nfams + 1) * sizeof(size_t));
    if (!sc->fams || !sc->kid_start) {
        rc = ct_err_set(err, CT_ENOMEM, "out of memory opening a scanner");
        goto fail_unlock;
    }
    int64_t now = clock_now_ms();
    {
        bool *whole = sc_zalloc(sc, t->nfams * sizeof(bool));
        size_t *nq = sc_zalloc(sc, t->nfams * sizeof(size_t));
        if (!whole || !nq) {
            rc = ct_err_set(err, CT_ENOMEM, "out of memory opening a scanner");
            goto fail_unlock;
        }
        for (size_t i = 0; i < o->ncolumns; i++) {
            const struct wc_column *c = &o->columns[i];
            int fi = etable_family_index(t, c->family.data, c->family.len);
            if (fi < 0) {
                char fams[128] = "";
                size_t fl = 0;
                for (size_t k = 0; k < t->nfams && fl + 8 < sizeof(fams); k++)
                    fl += (size_t)snprintf(fams + fl, sizeof(fams) - fl, "%s%s:*", k ? ", " : "",
                                           t->fams[k].name);
                rc =
                    ct_err_set(err, CT_EINVAL, "Unknown column family %.*s! Valid column names: %s",
                               (int)(c->family.len > 64 ? 64 : c->family.len),
                               (const char *)c->family.data, fams);
                goto fail_unlock;
            }
            if (c->has_qualifier)
                nq[fi]++;
            else
                whole[fi] = true;
        }
        for (size_t fi = 0; fi < t->nfams; fi++) {
            if (o->ncolumns && !whole[fi] && !nq[fi])
                continue;
            struct sfam *sf = &sc->fams[sc->nsf++];
            sf->idx = (int)fi;
            sf->d = t->fams[fi];
            sf->name_len = strlen(sf->d.name);
            sf->whole = !o->ncolumns || whole[fi];
            sf->oldest = sf->d.ttl_s >= WC_TTL_FOREVER ? INT64_MIN : now - sf->d.ttl_s * 1000;
            if (!sf->whole) {
                sf->quals = sc_zalloc(sc, nq[fi] * sizeof(*sf->quals));
                if (!sf->quals) {
                    rc = ct_err_set(err, CT_ENOMEM, "out of memory opening a scanner");
                    goto fail_unlock;
                }
                for (size_t i = 0; i < o->ncolumns; i++) {
                    const struct wc_column *c = &o->columns[i];
                    if (!c->has_qualifier ||
                        etable_family_index(t, c->family.data, c->family.len) != (int)fi)
                        continue;
                    uint8_t *q = op;
                    if (c->qualifier.len)
                        memcpy(q, c->qualifier.data, c->qualifier.len);
                    op += c->qualifier.len;
                    sf->quals[sf->nquals++] = wc_bytes_of(q, c->qualifier.len);
                }
                qsort(sf->quals, sf->nquals, sizeof(*sf->quals), wc_bytes_cmp_q);
            }
        }
    }

    sc->m.tmin = o->tmin_ms;
    sc->m.tmax = o->tmax_ms;
    sc->m.req_versions = o->max_versions ? o->max_versions : 1;
    sc->m.raw = o->raw;
    sc->m.o = &sc->o;

    if ((rc = estore_snapshot_acquire(s, &sc->snap, err)) != CT_OK)
        goto fail_unlock;
    sc->snap_registered = true;
    if (o->nranges) {
        /* several ranges: each range's pieces in each region it meets, in key order (a reversed
         * scan walks the list from its end, so the ranges come last to first) */
        size_t n = 0;
        if ((rc = scanner_range_regions(t, o, NULL, &n, err)) != CT_OK)
            goto fail_unlock;
        if (n && !(sc->regs = sc_zalloc(sc, n * sizeof(*sc->regs)))) {
            rc = ct_err_set(err, CT_ENOMEM, "out of memory opening a scanner");
            goto fail_unlock;
        }
        if (n && (rc = scanner_range_regions(t, o, sc, &n, err)) != CT_OK)
            goto fail_unlock;
    } else if (!empty) {
        sc->regs = sc_zalloc(sc, t->nregions * sizeof(*sc->regs));
        if (!sc->regs) {
            rc = ct_err_set(err, CT_ENOMEM, "out of memory opening a scanner");
            goto fail_unlock;
        }
        for (size_t i = 0; i < t->nregions; i++) {
            struct eregion *er = t->regions[i];
            if (er->end_len && bytes_cmp(lo, lo_len, er->end, er->end_len) >= 0)
                continue;
            if (!hi_inf && bytes_cmp(er->start, er->start_len, hi, hi_len) >= 0)
                continue;
            if ((rc = scanner_add_region(sc, er, lo, lo_len, hi, hi_len, hi_inf, o, err)) != CT_OK)
                goto fail_unlock;
        }
    }
    pthread_rwlock_unlock(&t->map_lock);
    *out = sc;
    return CT_OK;

fail_unlock:
    pthread_rwlock_unlock(&t->map_lock);
fail:
    engine_scanner_close(&sc->base);
    return rc;
}

int engine_scanner_open(struct wc_table *wt, const struct wc_scan_options *o,
                        struct wc_scanner **out, struct ct_err *err)
{
    struct etable_handle *h = (struct etable_handle *)wt;
    struct estore *s = estore_of(wt->store);
    struct escanner *sc;
    int rc = scanner_open_internal(s, h->t, o, &sc, err);
    if (rc != CT_OK)
        return rc;
    *out = &sc->base;
    return CT_OK;
}

int engine_read_latest(struct estore *s, struct etable *t, const uint8_t *row, size_t row_len,
                       struct wc_bytes fam, const uint8_t *qual, size_t qual_len, int64_t *ts,
                       uint8_t **val, size_t *val_len, struct ct_err *err)
{
    uint8_t stop[WC_MAX_ROW_BYTES + 1];
    memcpy(stop, row, row_len);
    stop[row_len] = 0;
    struct wc_column col = {fam, wc_bytes_of(qual, qual_len), true};
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.start_row = wc_bytes_of(row, row_len);
    o.stop_row = wc_bytes_of(stop, row_len + 1);
    o.columns = &col;
    o.ncolumns = 1;
    struct escanner *sc;
    int rc = scanner_open_internal(s, t, &o, &sc, err);
    if (rc != CT_OK)
        return rc;
    struct wc_row r;
    rc = engine_scanner_next(&sc->base, &r, err);
    if (rc == CT_OK) {
        if (r.ncells == 0) {
            rc = CT_NOTFOUND;
        } else {
            *ts = r.cells[0].ts_ms;
            if (val) {
                *val = dup_bytes(r.cells[0].value.data, r.cells[0].value.len);
                *val_len = r.cells[0].value.len;
                if (!*val)
                    rc = ct_err_set(err, CT_ENOMEM, "out of memory reading a cell");
            }
        }
    }
    engine_scanner_close(&sc->base);
    (void)bytes_le_key;
    return rc;
}

/* ---- point reads ------------------------------------------------------------------------- */

/* A Get (wc_get) without a scanner. The inputs of the row's region are captured under the
 * region's mutex - memstores whose row bloom may hold the row, files that pass file_may_hold()
 * (key range, time range, TTL, bloom) - and the snapshot is visible_seq read while that mutex is
 * held: every flush or compaction whose output is among the captured files computed its read
 * point before, so it is <= the snapshot and no version the snapshot needs was dropped; the
 * snapshot therefore need not be registered. Per selected family the inputs are sought to the
 * row and merged (a single input is walked without comparisons) through the same matcher as a
 * scan, so the result is exactly what a one-row scan returns. Emitted cells are gathered in a
 * stack buffer and copied once into the result. */

#define GET_INLINE_KIDS  8
#define GET_INLINE_FAMS  4
#define GET_INLINE_CELLS 16
#define GET_INLINE_BYTES 2048

struct gcell {
    uint32_t fam; /* index into the selected families */
    uint8_t type;
    int64_t ts;
    size_t qoff, qlen, voff, vlen; /* into the gathered bytes */
};

struct gout {
    struct gcell *cells;
    size_t n, cap;
    uint8_t *bytes;
    size_t len, bcap;
    struct gcell cells_inline[GET_INLINE_CELLS];
    uint8_t bytes_inline[GET_INLINE_BYTES];
};

/* Makes room in g for one more cell of `need` bytes (out of line: rows of many cells grow the
 * arrays a few times, then every push fits). */
static __attribute__((noinline)) int gout_grow(struct gout *g, size_t need, struct ct_err *err)
{
    if (g->n == g->cap) {
        size_t cap = g->cap * 2;
        struct gcell *nc = malloc(cap * sizeof(*nc));
        if (!nc)
            return ct_err_set(err, CT_ENOMEM, "out of memory reading a row");
        memcpy(nc, g->cells, g->n * sizeof(*nc));
        if (g->cells != g->cells_inline)
            free(g->cells);
        g->cells = nc;
        g->cap = cap;
    }
    if (g->len + need > g->bcap) {
        size_t cap = g->bcap * 2;
        while (cap < g->len + need)
            cap *= 2;
        uint8_t *nb = malloc(cap);
        if (!nb)
            return ct_err_set(err, CT_ENOMEM, "out of memory reading a row");
        memcpy(nb, g->bytes, g->len);
        if (g->bytes != g->bytes_inline)
            free(g->bytes);
        g->bytes = nb;
        g->bcap = cap;
    }
    return CT_OK;
}

/* Appends cell c (its qualifier and value copied) to g: inline, with word moves for the small
 * qualifiers and values of single-point cells (a Get of a row of many cells pushes each). */
static inline __attribute__((always_inline)) int gout_push(struct gout *g, uint32_t fam,
                                                           const struct cell *c, struct ct_err *err)
{
    size_t need = (size_t)c->qual_len + c->value_len;
    if (__builtin_expect(g->n == g->cap || g->len + need > g->bcap, 0)) {
        int rc = gout_grow(g, need, err);
        if (rc != CT_OK)
            return rc;
    }
    struct gcell *o = &g->cells[g->n++];
    o->fam = fam;
    o->type = c->type;
    o->ts = c->ts_ms;
    o->qoff = g->len;
    o->qlen = c->qual_len;
    coding_copy_short(g->bytes + g->len, c->qual, c->qual_len);
    g->len += c->qual_len;
    o->voff = g->len;
    o->vlen = c->value_len;
    coding_copy_short(g->bytes + g->len, c->value, c->value_len);
    g->len += c->value_len;
    return CT_OK;
}

/* Reads row `key` of one family from its children (already sought to the row) through m. */
static int get_family(struct echild *kids, size_t nk, const uint8_t *key, size_t key_len,
                      struct matcher *m, uint32_t fam, struct gout *g, struct ct_err *err)
{
    int rc;
    unsigned skips = 0;
    for (;;) {
        struct echild *best = NULL;
        for (size_t i = 0; i < nk; i++) {
            struct echild *c = &kids[i];
            if (!child_on_row(c, key, key_len))
                continue;
            if (!best || cell_compare(&c->cur, &best->cur) < 0)
                best = c;
        }
        if (!best)
            return CT_OK;
        if (nk == 1) { /* one input: its cells are already in order */
            do {       /* the matcher inline: a Get of a row of many cells runs it per cell */
                if ((rc = matcher_cell_inl(m, &best->cur, err)) < 0)
                    return rc;
                if (rc == M_EMIT && (rc = gout_push(g, fam, &best->cur, err)) != CT_OK)
                    return rc;
                if ((rc = child_advance(best, m, key, key_len, true, &skips, err)) != CT_OK)
                    return rc;
            } while (child_still_on_row(best, key, key_len));
            return CT_OK;
        }
        if ((rc = matcher_cell(m, &best->cur, err)) < 0)
            return rc;
        if (rc == M_EMIT && (rc = gout_push(g, fam, &best->cur, err)) != CT_OK)
            return rc;
        if ((rc = child_advance(best, m, key, key_len, true, &skips, err)) != CT_OK)
            return rc;
    }
}

/* The families a read selects ("Gets and scans", COLUMNS), in table order, into sf[] (room for
 * t->nfams); qualifier arrays point into `quals` (room for o->ncolumns) and borrow o's bytes. */
static int get_families(const struct etable *t, const struct wc_scan_options *o, int64_t now,
                        struct sfam *sf, size_t *nsf, struct wc_bytes *quals, struct ct_err *err)
{
    *nsf = 0;
    size_t qn = 0;
    for (size_t i = 0; i < o->ncolumns; i++) {
        const struct wc_column *c = &o->columns[i];
        if (etable_family_index(t, c->family.data, c->family.len) < 0) {
            char fams[128] = "";
            size_t fl = 0;
            for (size_t k = 0; k < t->nfams && fl + 8 < sizeof(fams); k++)
                fl += (size_t)snprintf(fams + fl, sizeof(fams) - fl, "%s%s:*", k ? ", " : "",
                                       t->fams[k].name);
            return ct_err_set(err, CT_EINVAL, "Unknown column family %.*s! Valid column names: %s",
                              (int)(c->family.len > 64 ? 64 : c->family.len),
                              (const char *)c->family.data, fams);
        }
    }
    for (size_t fi = 0; fi < t->nfams; fi++) {
        bool whole = !o->ncolumns;
        size_t q0 = qn;
        for (size_t i = 0; i < o->ncolumns; i++) {
            const struct wc_column *c = &o->columns[i];
            if (etable_family_index(t, c->family.data, c->family.len) != (int)fi)
                continue;
            if (c->has_qualifier)
                quals[qn++] = c->qualifier;
            else
                whole = true;
        }
        if (!whole && qn == q0)
            continue;
        struct sfam *f = &sf[(*nsf)++];
        memset(f, 0, sizeof(*f));
        f->idx = (int)fi;
        f->d = t->fams[fi];
        f->name_len = strlen(f->d.name);
        f->whole = whole;
        f->oldest = f->d.ttl_s >= WC_TTL_FOREVER ? INT64_MIN : now - f->d.ttl_s * 1000;
        if (!whole) {
            f->quals = quals + q0;
            f->nquals = qn - q0;
            qsort(f->quals, f->nquals, sizeof(*f->quals), wc_bytes_cmp_q);
        }
    }
    return CT_OK;
}

/* Copies the gathered cells into one allocation owned by *out (wc_result_release frees it). */
static int get_result(const struct gout *g, const struct sfam *sf, size_t nsf, const uint8_t *row,
                      size_t row_len, struct wc_result *out, struct ct_err *err)
{
    size_t bytes = g->n * sizeof(struct wc_cell) + row_len + g->len;
    for (size_t f = 0; f < nsf; f++)
        bytes += strlen(sf[f].d.name);
    uint8_t *mem = malloc(bytes);
    if (!mem)
        return ct_err_set(err, CT_ENOMEM, "out of memory copying a row of %zu cells", g->n);
    struct wc_cell *cells = (struct wc_cell *)mem;
    uint8_t *p = mem + g->n * sizeof(struct wc_cell);
    struct wc_bytes key = wc_bytes_of(p, row_len);
    memcpy(p, row, row_len);
    p += row_len;
    const uint8_t *body = p;
    if (g->len)
        memcpy(p, g->bytes, g->len);
    p += g->len;
    for (size_t i = 0; i < g->n; i++) {
        const struct gcell *c = &g->cells[i];
        cells[i] = (struct wc_cell){.row = key,
                                    .qualifier = wc_bytes_of(body + c->qoff, c->qlen),
                                    .value = wc_bytes_of(body + c->voff, c->vlen),
                                    .ts_ms = c->ts,
                                    .type = (enum wc_cell_type)c->type};
    }
    /* each family's name once; cells of a family come together, in family order */
    for (size_t f = 0, i = 0; f < nsf; f++) {
        size_t l = strlen(sf[f].d.name);
        memcpy(p, sf[f].d.name, l);
        for (; i < g->n && g->cells[i].fam == f; i++)
            cells[i].family = wc_bytes_of(p, l);
        p += l;
    }
    out->row.key = key;
    out->row.cells = cells;
    out->row.ncells = g->n;
    out->mem = mem;
    return CT_OK;
}

int engine_get(struct wc_table *wt, struct wc_bytes row, const struct wc_scan_options *o,
               struct wc_result *out, struct ct_err *err)
{
    struct etable *t = ((struct etable_handle *)wt)->t;
    struct estore *s = estore_of(wt->store);
    memset(out, 0, sizeof(*out));
    uint8_t hi[WC_MAX_ROW_BYTES + 1];
    memcpy(hi, row.data, row.len);
    hi[row.len] = 0;
    struct sregion sr = {.lo = (uint8_t *)row.data,
                         .lo_len = row.len,
                         .hi = hi,
                         .hi_len = row.len + 1,
                         .row_hash = bloom_hash_row(row.data, row.len)};

    struct sfam sf_inline[GET_INLINE_FAMS], *sf = sf_inline;
    struct wc_bytes q_inline[8], *quals = q_inline;
    struct sinputs in_inline[GET_INLINE_FAMS], *in = in_inline;
    struct memstore *ms_inline[GET_INLINE_KIDS];
    struct sst *fl_inline[GET_INLINE_KIDS];
    struct memstore **msv = ms_inline;
    struct sst **flv = fl_inline;
    struct eregion *er = NULL;
    size_t nsf = 0, nms = 0, nfl = 0;
    uint64_t snap = 0;
    int rc = pthread_rwlock_rdlock(&t->map_lock);
    if (rc != 0)
        return ct_err_set(err, CT_EIO, "cannot lock table %s", t->name);
    if (atomic_load(&t->dropped)) {
        rc = ct_err_set(err, CT_NOTFOUND, "Table %s does not exist.", t->name);
        goto unlock;
    }
    if (!atomic_load(&t->enabled)) {
        rc = ct_err_set(err, CT_EBUSY, "Table %s is disabled.", t->name);
        goto unlock;
    }
    if (t->nfams > GET_INLINE_FAMS) {
        sf = malloc(t->nfams * sizeof(*sf));
        in = malloc(t->nfams * sizeof(*in));
    }
    if (o->ncolumns > sizeof(q_inline) / sizeof(q_inline[0]))
        quals = malloc(o->ncolumns * sizeof(*quals));
    if (!sf || !in || !quals) {
        rc = ct_err_set(err, CT_ENOMEM, "out of memory reading a row");
        goto unlock;
    }
    if ((rc = get_families(t, o, clock_now_ms(), sf, &nsf, quals, err)) != CT_OK)
        goto unlock;
    er = t->regions[etable_region_index(t, row.data, row.len)];
    eregion_ref(er);
    pthread_mutex_lock(&er->mu);
    /* count the inputs first so that the capture never allocates under the mutex twice */
    size_t cap = 0;
    for (size_t f = 0; f < nsf; f++) {
        const struct efam *ef = &er->fams[sf[f].idx];
        cap += 1 + ef->nfrozen + ef->nfiles;
    }
    if (cap > GET_INLINE_KIDS) {
        msv = malloc(cap * sizeof(*msv));
        flv = malloc(cap * sizeof(*flv));
        if (!msv || !flv) {
            pthread_mutex_unlock(&er->mu);
            rc = ct_err_set(err, CT_ENOMEM, "out of memory reading a row");
            goto unlock;
        }
    }
    for (size_t f = 0; f < nsf; f++) {
        const struct efam *ef = &er->fams[sf[f].idx];
        in[f].ms = msv + nms;
        in[f].files = flv + nfl;
        in[f].nms = in[f].nfiles = 0;
        if (memstore_count(ef->active) && memstore_may_contain_row_hash(ef->active, sr.row_hash)) {
            memstore_ref(ef->active);
            in[f].ms[in[f].nms++] = ef->active;
        }
        for (size_t k = 0; k < ef->nfrozen; k++) {
            if (!memstore_may_contain_row_hash(ef->frozen[k], sr.row_hash))
                continue;
            memstore_ref(ef->frozen[k]);
            in[f].ms[in[f].nms++] = ef->frozen[k];
        }
        for (size_t k = 0; k < ef->nfiles; k++) {
            struct sst *fp = ef->files[k].sst;
            if (!file_may_hold(fp, &sr, &sf[f], o, true))
                continue;
            sst_ref(fp);
            in[f].files[in[f].nfiles++] = fp;
        }
        nms += in[f].nms;
        nfl += in[f].nfiles;
    }
    snap = atomic_load(&s->visible_seq);
    pthread_mutex_unlock(&er->mu);
    pthread_rwlock_unlock(&t->map_lock);

    /* read each family's inputs at the row */
    struct gout g;
    g.cells = g.cells_inline;
    g.cap = GET_INLINE_CELLS;
    g.n = 0;
    g.bytes = g.bytes_inline;
    g.bcap = sizeof(g.bytes_inline);
    g.len = 0;
    struct matcher m;
    matcher_init(&m);
    m.tmin = o->tmin_ms;
    m.tmax = o->tmax_ms;
    m.req_versions = o->max_versions ? o->max_versions : 1;
    m.raw = o->raw;
    m.o = o;
    struct echild kids_inline[GET_INLINE_KIDS], *kids = kids_inline;
    size_t kcap = 0;
    for (size_t f = 0; f < nsf; f++)
        if (in[f].nms + in[f].nfiles > kcap)
            kcap = in[f].nms + in[f].nfiles;
    if (kcap > GET_INLINE_KIDS && !(kids = malloc(kcap * sizeof(*kids))))
        rc = ct_err_set(err, CT_ENOMEM, "out of memory reading a row");
    struct cell start;
    ecell_row_start(&start, row.data, row.len);
    for (size_t f = 0; f < nsf && rc == CT_OK; f++) {
        size_t nk = 0;
        for (size_t i = 0; i < in[f].nms; i++)
            echild_init_ms(&kids[nk++], in[f].ms[i], snap);
        for (size_t i = 0; i < in[f].nfiles && rc == CT_OK; i++)
            if ((rc = echild_init_sst(&kids[nk], in[f].files[i], snap, err)) == CT_OK)
                nk++;
        for (size_t i = 0; i < nk && rc == CT_OK; i++)
            rc = echild_seek(&kids[i], &start, err);
        if (rc == CT_OK) {
            matcher_start_family(&m, &sf[f]);
            rc = get_family(kids, nk, row.data, row.len, &m, (uint32_t)f, &g, err);
        }
        for (size_t i = 0; i < nk; i++)
            echild_destroy(&kids[i]);
    }
    if (rc == CT_OK && g.n) {
        rc = get_result(&g, sf, nsf, row.data, row.len, out, err);
        if (rc == CT_OK)
            atomic_fetch_add_explicit(&er->reads, 1, memory_order_relaxed);
    }
    matcher_destroy(&m);
    if (kids != kids_inline)
        free(kids);
    if (g.cells != g.cells_inline)
        free(g.cells);
    if (g.bytes != g.bytes_inline)
        free(g.bytes);
    goto release;

unlock:
    pthread_rwlock_unlock(&t->map_lock);
release:
    for (size_t i = 0; i < nms; i++)
        memstore_unref(msv[i]);
    for (size_t i = 0; i < nfl; i++)
        sst_unref(flv[i]);
    if (er)
        eregion_unref(er);
    if (msv != ms_inline)
        free(msv);
    if (flv != fl_inline)
        free(flv);
    if (sf != sf_inline)
        free(sf);
    if (in != in_inline)
        free(in);
    if (quals != q_inline)
        free(quals);
    return rc;
}
