/* bt_data.c - writes through Bigtable: row mutations and batches (MutateRow / MutateRows),
 * atomic increment (ReadModifyWriteRow) and check-and-mutate (CheckAndMutateRow).
 *
 * Every cell written carries an explicit timestamp (WC_TS_LATEST becomes clock_now_ms() here),
 * so a batch entry can be re-sent after a retryable failure without changing the result.
 *
 * Deletes. Bigtable has no delete markers (docs/storage-contract.md, "Where the Bigtable backend
 * differs"); a delete removes the cells it covers when it is applied. Within one row mutation the
 * backend gives the engine's answer: a put that a delete of the same mutation would mask ("Marker
 * types") is not sent, and the deletes are sent before the remaining puts. Mapping:
 *   DeleteColumn T          -> DeleteFromColumn [0, T]            (one mutation, no read)
 *   Delete T                -> DeleteFromColumn [T, T+1 ms)       (one mutation, no read)
 *   Delete latest           -> read the newest visible version L, then DeleteFromColumn
 *                              [L, L+1 ms) in a CheckAndMutateRow whose predicate fails if the
 *                              column's newest cell is another one (pin BT_PIN_LATEST)
 *   DeleteFamily T          -> DeleteFromFamily, in a CheckAndMutateRow that fails if the
 *                              family has a cell newer than T (pin BT_PIN_NEWER); after such a
 *                              failure: read the columns with cells <= T and delete [0, T] from
 *                              each, failing if another column gained a cell <= T (BT_PIN_COLUMNS)
 *   DeleteRow T             -> the same with DeleteFromRow / every family
 *   DeleteFamilyVersion T   -> read the columns with a cell at T; DeleteFromColumn [T, T+1 ms)
 *                              of each, failing if another column gained a cell at T
 *                              (BT_PIN_COLUMNS)
 * A row mutation holding any of the last four ("pinned") is sent as one CheckAndMutateRow whose
 * predicate yields a cell iff some pinned read is out of date, with every mutation of the row in
 * false_mutations: applied atomically against exactly the state that was read, or not at all.
 * A failed check is re-read and re-sent, up to BT_PIN_ATTEMPTS times, then CT_ECONFLICT. Only a
 * BT_PIN_COLUMNS predicate too large for one request (BT_MAX_PREDICATE_BYTES) is split by
 * qualifier range into several such steps (see bt_send_pinned).
 *
 * Invariants: (1) limits (BT_MAX_*) are checked before anything is sent; (2) only entries that
 * failed with a retryable status are retried; increments and check-and-mutate never are (a
 * pinned row is re-sent only after its predicate reported a conflict, which applied nothing);
 * (3) a batch reports the lowest failing row index. Thread-safe: no state outside the call. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "storage/bigtable/bt_int.h"
#include "storage/clock.h"

/* Attempts of a pinned row mutation whose predicate keeps reporting a concurrent change. */
#define BT_PIN_ATTEMPTS 12
/* Largest conflict predicate sent in one request (Bigtable refuses filters over 20 KB). */
#define BT_MAX_PREDICATE_BYTES 16384

/* A read that a delete depends on, re-checked by the predicate of the CheckAndMutateRow that
 * applies the delete. Times in ms. */
enum bt_pin_kind {
    /* no cell of family `fam` (NULL: of the row) has a timestamp >= `to` */
    BT_PIN_NEWER,
    /* no column of `fam` other than quals holds a cell in [from, to) (only qualifiers inside the
     * open bounds lo..hi are checked; unset = unbounded); the pin's own deletes remove
     * [from, to) from each of quals */
    BT_PIN_COLUMNS,
    /* found: the column quals[0] has no newest cell other than one at `from`; not found: the
     * column has no cell at or after `from` (its oldest visible time) */
    BT_PIN_LATEST,
};

struct bt_pin {
    enum bt_pin_kind kind;
    const char *fam;
    int64_t from, to;
    bool found;
    struct wc_bytes *quals; /* sorted, distinct; bytes in the context's pool */
    size_t nquals;
    struct wc_bytes lo, hi;
    bool has_lo, has_hi;
};

/* Where converted mutations live for one batch. Puts (the hot path) come from arrays sized for
 * the whole batch, so converting a cell allocates nothing; deletes use the pool. */
struct bt_conv_ctx {
    struct bt_pool pool;
    Btpb__Mutation *puts;
    Btpb__Mutation__SetCell *sets;
    size_t nputs, puts_cap;
    Btpb__Mutation **ptrs; /* every row's mutations; a row owns a contiguous slice */
    size_t nptrs, ptrs_cap;
    struct bt_pin *pins; /* every row's pins; a row owns a contiguous slice */
    size_t npins, pins_cap;
    char *fams[16]; /* interned, validated family names (in the pool) */
    size_t nfams;
    size_t last_fam; /* index into fams of the previous lookup */
};

/* A converted row: mutations ptrs[first .. first + n) of its context, its deletes first (ndel),
 * then its puts; pins pins[first_pin .. first_pin + npins). */
struct bt_conv {
    size_t first, n, ndel;
    size_t first_pin, npins;
    size_t bytes; /* rough encoded size */
};

/* How bt_convert_row may resolve deletes that depend on the row's state. */
enum bt_conv_mode {
    BT_CONV_PLAIN, /* the row has no pinned delete (see bt_row_pinned) */
    BT_CONV_FAST,  /* first attempt: family and row deletes as DeleteFromFamily/Row */
    BT_CONV_READ,  /* after a conflict: family and row deletes column by column */
};

static int bt_conv_ctx_init(struct bt_conv_ctx *cx, size_t nmutations)
{
    memset(cx, 0, sizeof(*cx));
    size_t n = nmutations ? nmutations : 1;
    cx->puts = malloc(n * sizeof(*cx->puts));
    cx->sets = malloc(n * sizeof(*cx->sets));
    cx->ptrs = malloc(n * sizeof(*cx->ptrs));
    cx->puts_cap = cx->ptrs_cap = n;
    return cx->puts && cx->sets && cx->ptrs ? 0 : -1;
}

static void bt_conv_ctx_free(struct bt_conv_ctx *cx)
{
    free(cx->puts);
    free(cx->sets);
    free(cx->ptrs);
    free(cx->pins);
    bt_pool_free(&cx->pool);
}

static Btpb__Mutation **bt_conv_muts(const struct bt_conv_ctx *cx, const struct bt_conv *c)
{
    return c->n ? cx->ptrs + c->first : NULL;
}

static int64_t bt_us(int64_t ms)
{
    return ms <= 0 ? 0 : ms >= INT64_MAX / 1000 ? INT64_MAX / 1000 * 1000 : ms * 1000;
}

/* The exclusive end of a time range in microseconds: 0 (unbounded) past what Bigtable holds. */
static int64_t bt_us_end(int64_t ms)
{
    return ms > BT_MAX_TS_MS ? 0 : bt_us(ms);
}

static Btpb__Mutation *bt_mut_new(struct bt_pool *p)
{
    Btpb__Mutation *m = bt_pool_alloc(p, sizeof(*m));
    if (m)
        btpb__mutation__init(m);
    return m;
}

static Btpb__Mutation *bt_mut_delete_column(struct bt_pool *p, const char *fam, struct wc_bytes q,
                                            int64_t from_ms, int64_t to_ms)
{
    Btpb__Mutation *m = bt_mut_new(p);
    Btpb__Mutation__DeleteFromColumn *d = bt_pool_alloc(p, sizeof(*d));
    Btpb__TimestampRange *tr = bt_pool_alloc(p, sizeof(*tr));
    if (!m || !d || !tr)
        return NULL;
    btpb__mutation__delete_from_column__init(d);
    btpb__timestamp_range__init(tr);
    d->family_name = (char *)fam;
    d->column_qualifier.data = (uint8_t *)q.data;
    d->column_qualifier.len = q.len;
    tr->start_timestamp_micros = bt_us(from_ms);
    tr->end_timestamp_micros = bt_us_end(to_ms);
    d->time_range = tr;
    m->mutation_case = BTPB__MUTATION__MUTATION_DELETE_FROM_COLUMN;
    m->delete_from_column = d;
    return m;
}

/* Appends m to row c (whose slice must be the last one of cx). */
static int bt_conv_add(struct bt_conv_ctx *cx, struct bt_conv *c, Btpb__Mutation *m, size_t bytes)
{
    if (!m || bt_grow((void **)&cx->ptrs, &cx->ptrs_cap, cx->nptrs + 1, sizeof(*cx->ptrs)))
        return -1;
    assert(c->first + c->n == cx->nptrs);
    cx->ptrs[cx->nptrs++] = m;
    c->n++;
    c->bytes += bytes + 16;
    return 0;
}

/* Appends a pin to row c (whose pin slice must be the last one of cx); NULL when out of
 * memory. */
static struct bt_pin *bt_conv_pin(struct bt_conv_ctx *cx, struct bt_conv *c, enum bt_pin_kind k,
                                  const char *fam, int64_t from, int64_t to)
{
    if (bt_grow((void **)&cx->pins, &cx->pins_cap, cx->npins + 1, sizeof(*cx->pins)))
        return NULL;
    assert(c->first_pin + c->npins == cx->npins);
    struct bt_pin *pn = &cx->pins[cx->npins++];
    memset(pn, 0, sizeof(*pn));
    pn->kind = k;
    pn->fam = fam;
    pn->from = from;
    pn->to = to;
    c->npins++;
    return pn;
}

/* The validated, NUL-terminated name of a family (interned per batch). */
static int bt_conv_family(struct bt_conv_ctx *cx, struct bt_table *t, struct wc_bytes family,
                          char **out, struct ct_err *err)
{
    for (size_t k = 0; k < cx->nfams; k++) {
        size_t i = (cx->last_fam + k) % cx->nfams;
        if (strlen(cx->fams[i]) == family.len && !memcmp(cx->fams[i], family.data, family.len)) {
            cx->last_fam = i;
            *out = cx->fams[i];
            return CT_OK;
        }
    }
    struct wc_family_desc fd;
    int rc = bt_table_family(t, family, &fd, err);
    if (rc != CT_OK)
        return rc;
    char *name = bt_pool_strndup(&cx->pool, fd.name, strlen(fd.name));
    if (!name)
        return ct_err_set(err, CT_ENOMEM, "out of memory converting a row mutation");
    if (cx->nfams < sizeof(cx->fams) / sizeof(cx->fams[0])) {
        cx->last_fam = cx->nfams;
        cx->fams[cx->nfams++] = name;
    }
    *out = name;
    return CT_OK;
}

/* Whether a row mutation holds a delete whose Bigtable form depends on the row's state. */
static bool bt_row_pinned(const struct wc_row_mutation *rm)
{
    for (size_t i = 0; i < rm->n; i++) {
        const struct wc_mutation *m = &rm->mutations[i];
        if (m->op == WC_OP_DELETE_FAMILY || m->op == WC_OP_DELETE_FAMILY_VERSION ||
            m->op == WC_OP_DELETE_ROW ||
            (m->op == WC_OP_DELETE_VERSION && m->ts_ms == WC_TS_LATEST))
            return true;
    }
    return false;
}

static int bt_qual_cmp(const void *a, const void *b)
{
    const struct wc_bytes *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = n ? memcmp(x->data, y->data, n) : 0;
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Reads the distinct columns of family `fam` of `row` holding a cell (expired ones included) in
 * [tmin, tmax) into pin pn (bytes copied to the pool). Sorted and deduplicated here, whatever
 * order the answer had: the gaps of the pin's predicate are only right over a sorted list. */
static int bt_pin_read_columns(struct bt_table *t, struct wc_bytes row, struct bt_pin *pn,
                               int64_t tmin, int64_t tmax, struct bt_pool *p, struct ct_err *err)
{
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_column col = {wc_bytes_str(pn->fam), wc_bytes_of(NULL, 0), false};
    o.columns = &col;
    o.ncolumns = 1;
    o.tmin_ms = tmin;
    o.tmax_ms = tmax;
    o.raw = true; /* expired cells are deleted too; one (the newest in range) per column */
    struct wc_result res;
    int rc = wc_get(&t->base, row, &o, &res, err);
    if (rc != CT_OK)
        return rc;
    pn->quals = res.row.ncells ? bt_pool_alloc(p, res.row.ncells * sizeof(*pn->quals)) : NULL;
    if (res.row.ncells && !pn->quals)
        rc = ct_err_set(err, CT_ENOMEM, "out of memory converting a delete");
    for (size_t i = 0; i < res.row.ncells && rc == CT_OK; i++) {
        struct wc_bytes q = res.row.cells[i].qualifier;
        if (pn->nquals && bt_qual_cmp(&pn->quals[pn->nquals - 1], &q) == 0)
            continue;
        char *copy = bt_pool_strndup(p, q.data, q.len);
        if (!copy) {
            rc = ct_err_set(err, CT_ENOMEM, "out of memory converting a delete");
            break;
        }
        pn->quals[pn->nquals++] = wc_bytes_of(copy, q.len);
    }
    wc_result_release(&res);
    if (rc == CT_OK && pn->nquals > 1) {
        qsort(pn->quals, pn->nquals, sizeof(*pn->quals), bt_qual_cmp);
        size_t k = 1;
        for (size_t i = 1; i < pn->nquals; i++)
            if (bt_qual_cmp(&pn->quals[i], &pn->quals[k - 1]) != 0)
                pn->quals[k++] = pn->quals[i];
        pn->nquals = k;
    }
    return rc;
}

/* A delete of one row mutation with its resolved timestamp, for masking that row's puts. */
struct bt_marker {
    enum wc_mutation_op op;
    const char *fam; /* NULL for a row delete */
    struct wc_bytes q;
    int64_t ts;
};

/* Whether a delete of the same row mutation masks a put (storage contract, "Marker types"). */
static bool bt_put_masked(const struct bt_marker *mk, size_t n, const char *fam, struct wc_bytes q,
                          int64_t ts)
{
    for (size_t i = 0; i < n; i++) {
        const struct bt_marker *k = &mk[i];
        if (k->op == WC_OP_DELETE_ROW) {
            if (ts <= k->ts)
                return true;
            continue;
        }
        if (strcmp(k->fam, fam) != 0)
            continue;
        bool same_col = k->q.len == q.len && !memcmp(k->q.data, q.data, q.len);
        if ((k->op == WC_OP_DELETE_FAMILY && ts <= k->ts) ||
            (k->op == WC_OP_DELETE_FAMILY_VERSION && ts == k->ts) ||
            (k->op == WC_OP_DELETE_COLUMN && same_col && ts <= k->ts) ||
            (k->op == WC_OP_DELETE_VERSION && same_col && ts == k->ts))
            return true;
    }
    return false;
}

/* Converts one delete (anything but a put) into Bigtable mutations and pins appended to cx, and
 * records its resolved timestamp in *mk. */
static int bt_convert_delete(struct bt_table *t, struct wc_bytes row, const struct wc_mutation *m,
                             char *fam, int64_t now_ms, enum bt_conv_mode mode,
                             struct bt_conv_ctx *cx, struct bt_conv *c, struct bt_marker *mk,
                             struct ct_err *err)
{
    struct bt_pool *p = &cx->pool;
    int64_t ts = m->ts_ms == WC_TS_LATEST ? now_ms : m->ts_ms;
    *mk = (struct bt_marker){m->op, fam, m->qualifier, ts};
    int rc = CT_OK;
    switch (m->op) {
    case WC_OP_PUT:
        break;
    case WC_OP_DELETE_COLUMN:
        if (bt_conv_add(cx, c, bt_mut_delete_column(p, fam, m->qualifier, 0, ts + 1),
                        m->qualifier.len))
            goto oom;
        break;
    case WC_OP_DELETE_VERSION:
        if (m->ts_ms == WC_TS_LATEST) { /* the newest visible version, pinned */
            assert(mode != BT_CONV_PLAIN);
            struct wc_family_desc fd;
            if ((rc = bt_table_family(t, m->family, &fd, err)) != CT_OK)
                return rc;
            struct wc_scan_options o;
            wc_scan_options_init(&o);
            struct wc_column col = {m->family, m->qualifier, true};
            o.columns = &col;
            o.ncolumns = 1;
            struct wc_result res;
            if ((rc = wc_get(&t->base, row, &o, &res, err)) != CT_OK)
                return rc;
            bool found = res.row.ncells > 0;
            int64_t latest = found ? res.row.cells[0].ts_ms : 0;
            wc_result_release(&res);
            int64_t oldest =
                fd.min_versions == 0 && fd.ttl_s < WC_TTL_FOREVER ? now_ms - fd.ttl_s * 1000 : 0;
            struct bt_pin *pn = bt_conv_pin(cx, c, BT_PIN_LATEST, fam, found ? latest : oldest, 0);
            struct wc_bytes *q1 = bt_pool_alloc(p, sizeof(*q1));
            char *qc = bt_pool_strndup(p, m->qualifier.data, m->qualifier.len);
            if (!pn || !q1 || !qc)
                goto oom;
            *q1 = wc_bytes_of(qc, m->qualifier.len);
            pn->quals = q1;
            pn->nquals = 1;
            pn->found = found;
            if (!found) { /* nothing visible: masks a put at now, like the engine's marker */
                mk->ts = now_ms;
                break;
            }
            mk->ts = latest;
            if (bt_conv_add(cx, c, bt_mut_delete_column(p, fam, *q1, latest, latest + 1),
                            m->qualifier.len))
                goto oom;
            break;
        }
        if (bt_conv_add(cx, c, bt_mut_delete_column(p, fam, m->qualifier, ts, ts + 1),
                        m->qualifier.len))
            goto oom;
        break;
    case WC_OP_DELETE_FAMILY:
    case WC_OP_DELETE_ROW: {
        assert(mode != BT_CONV_PLAIN);
        if (mode == BT_CONV_FAST) {
            Btpb__Mutation *bm = bt_mut_new(p);
            if (!bm || !bt_conv_pin(cx, c, BT_PIN_NEWER, fam, 0, ts + 1))
                goto oom;
            if (m->op == WC_OP_DELETE_FAMILY) {
                Btpb__Mutation__DeleteFromFamily *df = bt_pool_alloc(p, sizeof(*df));
                if (!df)
                    goto oom;
                btpb__mutation__delete_from_family__init(df);
                df->family_name = fam;
                bm->mutation_case = BTPB__MUTATION__MUTATION_DELETE_FROM_FAMILY;
                bm->delete_from_family = df;
            } else {
                Btpb__Mutation__DeleteFromRow *dr = bt_pool_alloc(p, sizeof(*dr));
                if (!dr)
                    goto oom;
                btpb__mutation__delete_from_row__init(dr);
                bm->mutation_case = BTPB__MUTATION__MUTATION_DELETE_FROM_ROW;
                bm->delete_from_row = dr;
            }
            if (bt_conv_add(cx, c, bm, m->family.len))
                goto oom;
            break;
        }
        if (m->op == WC_OP_DELETE_FAMILY) {
            struct bt_pin *pn = bt_conv_pin(cx, c, BT_PIN_COLUMNS, fam, 0, ts + 1);
            if (!pn)
                goto oom;
            rc = bt_pin_read_columns(t, row, pn, 0, ts + 1, p, err);
            break;
        }
        struct wc_family_desc *fams;
        size_t nf;
        if ((rc = bt_table_families(t, &fams, &nf, err)) != CT_OK)
            return rc;
        for (size_t k = 0; k < nf && rc == CT_OK; k++) {
            char *fn = bt_pool_strndup(p, fams[k].name, strlen(fams[k].name));
            struct bt_pin *pn = fn ? bt_conv_pin(cx, c, BT_PIN_COLUMNS, fn, 0, ts + 1) : NULL;
            rc = pn ? bt_pin_read_columns(t, row, pn, 0, ts + 1, p, err)
                    : ct_err_set(err, CT_ENOMEM, "out of memory converting a delete");
        }
        free(fams);
        break;
    }
    case WC_OP_DELETE_FAMILY_VERSION: {
        struct bt_pin *pn = bt_conv_pin(cx, c, BT_PIN_COLUMNS, fam, ts, ts + 1);
        if (!pn)
            goto oom;
        rc = bt_pin_read_columns(t, row, pn, ts, ts + 1, p, err);
        break;
    }
    }
    return rc;
oom:
    return ct_err_set(err, CT_ENOMEM, "out of memory converting a delete");
}

/* Converts one wc row mutation into Bigtable mutations (deletes first, then the puts no delete
 * of the row masks) and pins appended to cx, validating families and limits. */
static int bt_convert_row(struct bt_table *t, const struct wc_row_mutation *rm, int64_t now_ms,
                          enum bt_conv_mode mode, struct bt_conv_ctx *cx, struct bt_conv *c,
                          struct ct_err *err)
{
    memset(c, 0, sizeof(*c));
    c->first = cx->nptrs;
    c->first_pin = cx->npins;
    if (rm->row.len > BT_MAX_ROW_KEY_BYTES)
        return ct_err_set(err, CT_ELIMIT, "row key of %zu bytes exceeds Bigtable's %d-byte limit",
                          rm->row.len, BT_MAX_ROW_KEY_BYTES);
    if (rm->n > BT_MAX_MUTATIONS_PER_REQUEST)
        return ct_err_set(err, CT_ELIMIT,
                          "%zu changes to one row exceed Bigtable's limit of %d per request", rm->n,
                          BT_MAX_MUTATIONS_PER_REQUEST);
    int rc = CT_OK;
    size_t ndel = 0;
    for (size_t i = 0; i < rm->n; i++)
        ndel += rm->mutations[i].op != WC_OP_PUT;
    struct bt_marker *mk = ndel ? bt_pool_alloc(&cx->pool, ndel * sizeof(*mk)) : NULL;
    if (ndel && !mk)
        goto oom;
    size_t nmk = 0;
    /* pass 1: the deletes (only when there are any: a put-only row is converted in pass 2) */
    for (size_t i = 0; i < rm->n && ndel; i++) {
        const struct wc_mutation *m = &rm->mutations[i];
        char *fam = NULL;
        if (m->op == WC_OP_PUT)
            continue;
        if (m->op != WC_OP_DELETE_ROW &&
            (rc = bt_conv_family(cx, t, m->family, &fam, err)) != CT_OK)
            return rc;
        if ((rc = bt_convert_delete(t, rm->row, m, fam, now_ms, mode, cx, c, &mk[nmk++], err)) !=
            CT_OK)
            return rc;
    }
    c->ndel = c->n;
    /* pass 2: the puts */
    for (size_t i = 0; i < rm->n; i++) {
        const struct wc_mutation *m = &rm->mutations[i];
        if (m->op != WC_OP_PUT)
            continue;
        int64_t ts = m->ts_ms == WC_TS_LATEST ? now_ms : m->ts_ms;
        char *fam = NULL;
        if ((rc = bt_conv_family(cx, t, m->family, &fam, err)) != CT_OK)
            return rc;
        if (m->value.len > BT_MAX_CELL_BYTES)
            return ct_err_set(err, CT_EINVAL, "cell of %zu bytes exceeds the %u-byte limit",
                              m->value.len, BT_MAX_CELL_BYTES);
        if (ts > BT_MAX_TS_MS)
            return ct_err_set(err, CT_EINVAL,
                              "timestamp %lld ms is beyond Bigtable's largest (%lld ms: "
                              "microseconds in 64 bits)",
                              (long long)ts, (long long)BT_MAX_TS_MS);
        if (nmk && bt_put_masked(mk, nmk, fam, m->qualifier, ts))
            continue;
        if (cx->nputs == cx->puts_cap)
            goto oom; /* REQUIRES: cx sized for every input mutation */
        Btpb__Mutation *bm = &cx->puts[cx->nputs];
        Btpb__Mutation__SetCell *sc = &cx->sets[cx->nputs++];
        btpb__mutation__init(bm);
        btpb__mutation__set_cell__init(sc);
        sc->family_name = fam;
        sc->column_qualifier.data = (uint8_t *)m->qualifier.data;
        sc->column_qualifier.len = m->qualifier.len;
        sc->timestamp_micros = bt_us(ts);
        sc->value.data = (uint8_t *)m->value.data;
        sc->value.len = m->value.len;
        bm->mutation_case = BTPB__MUTATION__MUTATION_SET_CELL;
        bm->set_cell = sc;
        if (bt_conv_add(cx, c, bm, m->family.len + m->qualifier.len + m->value.len))
            goto oom;
    }
    if (c->bytes + rm->row.len > BT_MAX_ROW_BYTES)
        return ct_err_set(err, CT_ELIMIT,
                          "row mutation of about %zu bytes exceeds Bigtable's "
                          "%u-byte row limit",
                          c->bytes, BT_MAX_ROW_BYTES);
    if (c->n > BT_MAX_MUTATIONS_PER_REQUEST)
        return ct_err_set(err, CT_ELIMIT,
                          "%zu Bigtable mutations for one row exceed the limit "
                          "of %d per request",
                          c->n, BT_MAX_MUTATIONS_PER_REQUEST);
    return CT_OK;
oom:
    return ct_err_set(err, CT_ENOMEM, "out of memory converting a row mutation");
}

/* ---- conflict predicates of pinned rows -------------------------------------------------- */

static Btpb__RowFilter *bt_filter_ts(struct bt_pool *p, int64_t from_ms, int64_t to_ms)
{
    Btpb__RowFilter *f = bt_filter_new(p);
    Btpb__TimestampRange *tr = bt_pool_alloc(p, sizeof(*tr));
    if (!f || !tr)
        return NULL;
    btpb__timestamp_range__init(tr);
    tr->start_timestamp_micros = bt_us(from_ms);
    tr->end_timestamp_micros = to_ms ? bt_us_end(to_ms) : 0; /* 0 = unbounded */
    f->filter_case = BTPB__ROW_FILTER__FILTER_TIMESTAMP_RANGE_FILTER;
    f->timestamp_range_filter = tr;
    return f;
}

static Btpb__RowFilter *bt_filter_flag(struct bt_pool *p, bool pass)
{
    Btpb__RowFilter *f = bt_filter_new(p);
    if (!f)
        return NULL;
    if (pass) {
        f->filter_case = BTPB__ROW_FILTER__FILTER_PASS_ALL_FILTER;
        f->pass_all_filter = 1;
    } else {
        f->filter_case = BTPB__ROW_FILTER__FILTER_BLOCK_ALL_FILTER;
        f->block_all_filter = 1;
    }
    return f;
}

static Btpb__RowFilter *bt_filter_cond(struct bt_pool *p, Btpb__RowFilter *pred,
                                       Btpb__RowFilter *yes, Btpb__RowFilter *no)
{
    Btpb__RowFilter *f = bt_filter_new(p);
    Btpb__RowFilter__Condition *c = bt_pool_alloc(p, sizeof(*c));
    if (!f || !c || !pred || !yes || !no)
        return NULL;
    btpb__row_filter__condition__init(c);
    c->predicate_filter = pred;
    c->true_filter = yes;
    c->false_filter = no;
    f->filter_case = BTPB__ROW_FILTER__FILTER_CONDITION;
    f->condition = c;
    return f;
}

static bool bt_bytes_eq(struct wc_bytes a, struct wc_bytes b)
{
    return a.len == b.len && (a.len == 0 || !memcmp(a.data, b.data, a.len));
}

/* Rough encoded size of one gap of a BT_PIN_COLUMNS predicate (a column range). */
static size_t bt_gap_bytes(const struct bt_pin *pn, size_t i)
{
    return strlen(pn->fam) + 2 * pn->quals[i].len + 24;
}

static size_t bt_pin_bytes(const struct bt_pin *pn)
{
    size_t b = 48 + (pn->fam ? strlen(pn->fam) : 0);
    if (pn->kind == BT_PIN_COLUMNS)
        for (size_t i = 0; i < pn->nquals; i++)
            b += bt_gap_bytes(pn, i);
    else if (pn->kind == BT_PIN_LATEST)
        b += 2 * pn->quals[0].len + 64;
    return b;
}

/* The filter that yields a cell iff the state pin pn recorded has changed (NULL with *none set
 * when it can never change, NULL alone when out of memory). */
static Btpb__RowFilter *bt_pin_filter(struct bt_pool *p, const struct bt_pin *pn, bool *none)
{
    *none = false;
    struct wc_bytes nob = {NULL, 0};
    switch (pn->kind) {
    case BT_PIN_NEWER: {
        Btpb__RowFilter *parts[2];
        size_t np = 0;
        if (pn->fam && !(parts[np++] = bt_filter_column_range(p, pn->fam, nob, false, false, nob,
                                                              false, false)))
            return NULL;
        if (!(parts[np++] = bt_filter_ts(p, pn->to, 0)))
            return NULL;
        return bt_filter_group(p, parts, np, true);
    }
    case BT_PIN_LATEST: {
        struct wc_bytes q = pn->quals[0];
        Btpb__RowFilter *col = bt_filter_column_range(p, pn->fam, q, true, true, q, true, true);
        if (!pn->found) { /* conflict: the column has a visible cell now */
            Btpb__RowFilter *parts[2] = {col, bt_filter_ts(p, pn->from, 0)};
            return parts[0] && parts[1] ? bt_filter_group(p, parts, 2, true) : NULL;
        }
        /* conflict iff the column's newest cell is not at `from`: a newer version arrived or
         * `from` went away with older versions left (a column emptied meanwhile needs no retry:
         * the delete then removes nothing, as a delete of the latest of nothing would) */
        Btpb__RowFilter *lim = bt_filter_new(p);
        if (!lim)
            return NULL;
        lim->filter_case = BTPB__ROW_FILTER__FILTER_CELLS_PER_COLUMN_LIMIT_FILTER;
        lim->cells_per_column_limit_filter = 1;
        Btpb__RowFilter *other[2];
        size_t no = 0;
        if (pn->from > 0)
            other[no++] = bt_filter_ts(p, 0, pn->from);
        if (pn->from < BT_MAX_TS_MS)
            other[no++] = bt_filter_ts(p, pn->from + 1, 0);
        for (size_t i = 0; i < no; i++)
            if (!other[i])
                return NULL;
        if (no == 0) { /* cannot happen for a valid timestamp; keep the filter valid */
            *none = true;
            return NULL;
        }
        Btpb__RowFilter *parts[3] = {col, lim, bt_filter_group(p, other, no, false)};
        return parts[0] && parts[2] ? bt_filter_group(p, parts, 3, true) : NULL;
    }
    case BT_PIN_COLUMNS: {
        /* the open gaps (lo, q0), (q0, q1), ..., (q_n-1, hi) between the read columns */
        Btpb__RowFilter **gaps = bt_pool_alloc(p, (pn->nquals + 1) * sizeof(*gaps));
        if (!gaps)
            return NULL;
        size_t ng = 0;
        for (size_t i = 0; i <= pn->nquals; i++) {
            bool lo_set = i ? true : pn->has_lo;
            struct wc_bytes lo = i ? pn->quals[i - 1] : pn->lo;
            bool hi_set = i < pn->nquals ? true : pn->has_hi;
            struct wc_bytes hi = i < pn->nquals ? pn->quals[i] : pn->hi;
            if (hi_set && (lo_set ? bt_bytes_eq(lo, hi) : hi.len == 0))
                continue; /* an empty range */
            if (!(gaps[ng++] =
                      bt_filter_column_range(p, pn->fam, lo, lo_set, false, hi, hi_set, false)))
                return NULL;
        }
        if (ng == 0) {
            *none = true;
            return NULL;
        }
        Btpb__RowFilter *parts[2] = {bt_filter_ts(p, pn->from, pn->to),
                                     bt_filter_group(p, gaps, ng, false)};
        return parts[0] && parts[1] ? bt_filter_group(p, parts, 2, true) : NULL;
    }
    }
    return NULL;
}

/* The conflict predicate of pins[0..n): an interleave of their filters (block-all when none can
 * change). NULL when out of memory. */
static Btpb__RowFilter *bt_pins_filter(struct bt_pool *p, const struct bt_pin *pins, size_t n)
{
    Btpb__RowFilter **fs = bt_pool_alloc(p, (n ? n : 1) * sizeof(*fs));
    if (!fs)
        return NULL;
    size_t nf = 0;
    for (size_t i = 0; i < n; i++) {
        bool none;
        Btpb__RowFilter *f = bt_pin_filter(p, &pins[i], &none);
        if (!f && !none)
            return NULL;
        if (f)
            fs[nf++] = f;
    }
    return nf ? bt_filter_group(p, fs, nf, false) : bt_filter_flag(p, false);
}

/* Appends the deletes of BT_PIN_COLUMNS pins to muts (capacity checked by the caller). */
static int bt_pins_deletes(struct bt_pool *p, const struct bt_pin *pins, size_t n,
                           Btpb__Mutation **muts, size_t *nm)
{
    for (size_t i = 0; i < n; i++) {
        if (pins[i].kind != BT_PIN_COLUMNS)
            continue;
        for (size_t k = 0; k < pins[i].nquals; k++)
            if (!(muts[(*nm)++] = bt_mut_delete_column(p, pins[i].fam, pins[i].quals[k],
                                                       pins[i].from, pins[i].to)))
                return -1;
    }
    return 0;
}

static size_t bt_pins_ndeletes(const struct bt_pin *pins, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (pins[i].kind == BT_PIN_COLUMNS)
            k += pins[i].nquals;
    return k;
}

/* Sends one CheckAndMutateRow: muts go to true_mutations (on_true) or false_mutations.
 * *matched = whether the predicate yielded a cell. */
static int bt_cam_send(struct bt_table *t, struct wc_bytes row, Btpb__RowFilter *pred,
                       Btpb__Mutation **muts, size_t n, bool on_true, bool *matched,
                       struct ct_err *err)
{
    Btpb__CheckAndMutateRowRequest rq;
    btpb__check_and_mutate_row_request__init(&rq);
    rq.table_name = t->path;
    rq.row_key.data = (uint8_t *)row.data;
    rq.row_key.len = row.len;
    rq.predicate_filter = pred;
    if (on_true) {
        rq.n_true_mutations = n;
        rq.true_mutations = muts;
    } else {
        rq.n_false_mutations = n;
        rq.false_mutations = muts;
    }
    struct bt_buf body = {0}, resp = {0};
    int rc = bt_pack(&rq.base, &body, err);
    if (rc != CT_OK)
        return rc;
    struct bt_md md[1] = {{"x-goog-request-params", t->routing}};
    rc = bt_rpc_unary(t->s->rpc, BT_CHANNEL_DATA, BT_METHOD_DATA "CheckAndMutateRow", md, 1, body.p,
                      body.len, t->s->deadline_ms, &resp, NULL, err);
    bt_buf_free(&body);
    if (rc != CT_OK) {
        bt_buf_free(&resp);
        return ct_err_prefix(err, "check-and-mutate on %s", t->full);
    }
    Btpb__CheckAndMutateRowResponse *r =
        btpb__check_and_mutate_row_response__unpack(NULL, resp.len, resp.p);
    bt_buf_free(&resp);
    if (!r)
        return ct_err_set(err, CT_ECORRUPT, "cannot decode a CheckAndMutateRow answer");
    *matched = r->predicate_matched;
    btpb__check_and_mutate_row_response__free_unpacked(r, NULL);
    return CT_OK;
}

/* The row's mutations in send order: its deletes, the deletes of BT_PIN_COLUMNS pins[0..npins),
 * its puts. A new array from the pool in *out (count in *n). */
static int bt_assemble(struct bt_conv_ctx *cx, const struct bt_conv *c, const struct bt_pin *pins,
                       size_t npins, Btpb__Mutation ***out, size_t *n, struct ct_err *err)
{
    size_t total = c->n + bt_pins_ndeletes(pins, npins);
    if (total > BT_MAX_MUTATIONS_PER_REQUEST)
        return ct_err_set(err, CT_ELIMIT,
                          "a delete of %zu columns exceeds Bigtable's limit of %d mutations per "
                          "request",
                          total, BT_MAX_MUTATIONS_PER_REQUEST);
    Btpb__Mutation **m = bt_pool_alloc(&cx->pool, (total ? total : 1) * sizeof(*m));
    if (!m)
        return ct_err_set(err, CT_ENOMEM, "out of memory assembling a row mutation");
    Btpb__Mutation **own = bt_conv_muts(cx, c);
    size_t k = 0;
    for (size_t i = 0; i < c->ndel; i++)
        m[k++] = own[i];
    if (bt_pins_deletes(&cx->pool, pins, npins, m, &k))
        return ct_err_set(err, CT_ENOMEM, "out of memory assembling a row mutation");
    for (size_t i = c->ndel; i < c->n; i++)
        m[k++] = own[i];
    *out = m;
    *n = k;
    return CT_OK;
}

/* Sends a converted pinned row: *conflict tells that a predicate found the state changed (the
 * failed request applied nothing; earlier steps stay applied, see below).
 *
 * Normally one CheckAndMutateRow. When the predicate would exceed BT_MAX_PREDICATE_BYTES, each
 * oversized BT_PIN_COLUMNS pin is cut by qualifier into chunks; every chunk but the last is sent
 * first as its own CheckAndMutateRow (its columns' deletes, pinned on its qualifier range), and
 * the last chunks go with everything else. Each step is atomic; the row mutation as a whole then
 * is not. */
static int bt_send_pinned(struct bt_table *t, struct wc_bytes row, struct bt_conv_ctx *cx,
                          const struct bt_conv *c, bool *conflict, struct ct_err *err)
{
    struct bt_pool *p = &cx->pool;
    *conflict = false;
    size_t np = c->npins, est = 64;
    struct bt_pin *fin = bt_pool_alloc(p, (np ? np : 1) * sizeof(*fin));
    if (!fin)
        return ct_err_set(err, CT_ENOMEM, "out of memory sending a delete");
    memcpy(fin, cx->pins + c->first_pin, np * sizeof(*fin));
    for (size_t i = 0; i < np; i++)
        est += bt_pin_bytes(&fin[i]);
    for (size_t i = 0; i < np && est > BT_MAX_PREDICATE_BYTES; i++) {
        struct bt_pin *pn = &fin[i];
        if (pn->kind != BT_PIN_COLUMNS || pn->nquals < 2)
            continue;
        est -= bt_pin_bytes(pn);
        /* peel chunks of about half the budget off the front while the pin is oversized */
        while (bt_pin_bytes(pn) > BT_MAX_PREDICATE_BYTES / 2 && pn->nquals > 1) {
            size_t k = 0, b = 48 + strlen(pn->fam);
            while (k + 1 < pn->nquals &&
                   (k == 0 || b + bt_gap_bytes(pn, k) <= BT_MAX_PREDICATE_BYTES / 2))
                b += bt_gap_bytes(pn, k++);
            struct bt_pin chunk = *pn;
            chunk.nquals = k;
            chunk.has_hi = true;
            chunk.hi = pn->quals[k]; /* (lo, q0) ... (q_k-1, q_k) */
            bool none, matched = false;
            Btpb__RowFilter *pred = bt_pin_filter(p, &chunk, &none);
            Btpb__Mutation **m = bt_pool_alloc(p, k * sizeof(*m));
            size_t nm = 0;
            if ((!pred && !none) || !m || bt_pins_deletes(p, &chunk, 1, m, &nm))
                return ct_err_set(err, CT_ENOMEM, "out of memory sending a delete");
            if (!pred)
                pred = bt_filter_flag(p, false);
            int rc = bt_cam_send(t, row, pred, m, nm, false, &matched, err);
            if (rc != CT_OK || matched) {
                *conflict = matched;
                return rc;
            }
            pn->quals += k; /* the rest: (q_k, q_k+1) ... (q_n-1, hi) */
            pn->nquals -= k;
            pn->has_lo = true;
            pn->lo = pn->quals[0];
        }
        est += bt_pin_bytes(pn);
    }
    Btpb__Mutation **m;
    size_t nm;
    int rc = bt_assemble(cx, c, fin, np, &m, &nm, err);
    if (rc != CT_OK)
        return rc;
    if (nm == 0) /* nothing to write: the delete found nothing, as of its read */
        return CT_OK;
    Btpb__RowFilter *pred = bt_pins_filter(p, fin, np);
    if (!pred)
        return ct_err_set(err, CT_ENOMEM, "out of memory sending a delete");
    return bt_cam_send(t, row, pred, m, nm, false, conflict, err);
}

/* Waits a little before the next attempt of a pinned row that saw a concurrent change: 1 ms
 * doubling to 64 ms, with jitter so that two deleters of one row fall out of step. */
static void bt_conflict_backoff(int attempt)
{
    int64_t us = 1000;
    for (int i = 2; i < attempt && us < 64000; i++)
        us *= 2;
    us += (int64_t)(clock_mono_ns() / 1000 % (uint64_t)us);
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* Applies one pinned row mutation: read, convert, send conditioned on the read; again after a
 * conflict (the first retry without delay and with family/row deletes read column by column),
 * at most BT_PIN_ATTEMPTS times. */
static int bt_apply_pinned(struct bt_table *t, const struct wc_row_mutation *rm, int64_t now_ms,
                           struct ct_err *err)
{
    for (int attempt = 0; attempt < BT_PIN_ATTEMPTS; attempt++) {
        if (attempt >= 2)
            bt_conflict_backoff(attempt);
        struct bt_conv_ctx cx;
        struct bt_conv c;
        int rc = bt_conv_ctx_init(&cx, rm->n) != 0
                     ? ct_err_set(err, CT_ENOMEM, "out of memory converting a row mutation")
                     : bt_convert_row(t, rm, now_ms, attempt ? BT_CONV_READ : BT_CONV_FAST, &cx, &c,
                                      err);
        bool conflict = false;
        if (rc == CT_OK)
            rc = bt_send_pinned(t, rm->row, &cx, &c, &conflict, err);
        bt_conv_ctx_free(&cx);
        if (rc != CT_OK || !conflict)
            return rc;
    }
    return ct_err_set(err, CT_ECONFLICT,
                      "delete on %s: the row kept changing between read and write "
                      "(%d attempts)",
                      t->full, BT_PIN_ATTEMPTS);
}

int bt_replace_cell(struct bt_table *t, struct wc_bytes row, struct wc_bytes family,
                    struct wc_bytes qualifier, struct wc_bytes value, struct ct_err *err)
{
    char fam[WC_MAX_FAMILY_BYTES + 1];
    if (family.len > WC_MAX_FAMILY_BYTES)
        return ct_err_set(err, CT_EINVAL, "family name of %zu bytes is too long", family.len);
    memcpy(fam, family.data, family.len);
    fam[family.len] = 0;
    Btpb__Mutation del, set;
    Btpb__Mutation__DeleteFromColumn dc;
    Btpb__TimestampRange all;
    Btpb__Mutation__SetCell sc;
    btpb__mutation__init(&del);
    btpb__mutation__init(&set);
    btpb__mutation__delete_from_column__init(&dc);
    btpb__timestamp_range__init(&all); /* [0, unbounded) */
    btpb__mutation__set_cell__init(&sc);
    dc.family_name = fam;
    dc.column_qualifier.data = (uint8_t *)qualifier.data;
    dc.column_qualifier.len = qualifier.len;
    dc.time_range = &all;
    del.mutation_case = BTPB__MUTATION__MUTATION_DELETE_FROM_COLUMN;
    del.delete_from_column = &dc;
    sc.family_name = fam;
    sc.column_qualifier = dc.column_qualifier;
    sc.timestamp_micros = bt_us(clock_now_ms());
    sc.value.data = (uint8_t *)value.data;
    sc.value.len = value.len;
    set.mutation_case = BTPB__MUTATION__MUTATION_SET_CELL;
    set.set_cell = &sc;
    Btpb__Mutation *muts[2] = {&del, &set};
    Btpb__MutateRowRequest rq;
    btpb__mutate_row_request__init(&rq);
    rq.table_name = t->path;
    rq.row_key.data = (uint8_t *)row.data;
    rq.row_key.len = row.len;
    rq.n_mutations = 2;
    rq.mutations = muts;
    struct bt_buf body = {0}, resp = {0};
    int rc = bt_pack(&rq.base, &body, err);
    struct bt_md md[1] = {{"x-goog-request-params", t->routing}};
    for (int attempt = 1; rc == CT_OK; attempt++) { /* idempotent: an explicit timestamp */
        int code = BT_GRPC_OK;
        rc = bt_rpc_unary(t->s->rpc, BT_CHANNEL_DATA, BT_METHOD_DATA "MutateRow", md, 1, body.p,
                          body.len, t->s->deadline_ms, &resp, &code, err);
        if (rc == CT_OK || !bt_rpc_retryable(code, err->msg) || attempt >= BT_RETRY_ATTEMPTS)
            break;
        bt_backoff(attempt);
        rc = CT_OK;
    }
    bt_buf_free(&body);
    bt_buf_free(&resp);
    return rc == CT_OK ? CT_OK : ct_err_prefix(err, "write %s", t->full);
}

/* One MutateRows request of the batch in flight: entries [first, first + n) of the batch. */
struct bt_req {
    size_t *idx; /* batch row index of each entry */
    size_t n;
    struct bt_call *call;
    struct bt_buf body;
};

static int bt_req_start(struct bt_table *t, struct bt_req *r, const struct wc_row_mutation *rows,
                        const struct bt_conv_ctx *cx, const struct bt_conv *conv,
                        struct ct_err *err)
{
    Btpb__MutateRowsRequest rq;
    btpb__mutate_rows_request__init(&rq);
    rq.table_name = t->path;
    Btpb__MutateRowsRequest__Entry *ents = calloc(r->n, sizeof(*ents));
    Btpb__MutateRowsRequest__Entry **eptr = calloc(r->n, sizeof(*eptr));
    if (!ents || !eptr) {
        free(ents);
        free(eptr);
        return ct_err_set(err, CT_ENOMEM, "out of memory building a batch");
    }
    for (size_t i = 0; i < r->n; i++) {
        size_t k = r->idx[i];
        btpb__mutate_rows_request__entry__init(&ents[i]);
        ents[i].row_key.data = (uint8_t *)rows[k].row.data;
        ents[i].row_key.len = rows[k].row.len;
        ents[i].n_mutations = conv[k].n;
        ents[i].mutations = bt_conv_muts(cx, &conv[k]);
        eptr[i] = &ents[i];
    }
    rq.n_entries = r->n;
    rq.entries = eptr;
    int rc = bt_pack(&rq.base, &r->body, err);
    free(ents);
    free(eptr);
    if (rc != CT_OK)
        return rc;
    struct bt_md md[1] = {{"x-goog-request-params", t->routing}};
    return bt_call_start(t->s->rpc, BT_CHANNEL_DATA, BT_METHOD_DATA "MutateRows", md, 1, r->body.p,
                         r->body.len, t->s->deadline_ms, &r->call, err);
}

/* The first failure's text of a batch, kept whole: it becomes the batch's error message (no
 * longer than a struct ct_err's, which marks a cut with "..."). */
#define BT_BATCH_MSG_MAX CT_ERR_MSG_MAX

/* Collects one request's answers into status[] (gRPC code per batch row, -1 = none yet). */
static int bt_req_collect(struct bt_req *r, int *status, char (*msgs)[BT_BATCH_MSG_MAX],
                          struct ct_err *err)
{
    struct wc_bytes msg;
    int rc;
    struct bt_arena arena;
    bt_arena_init(&arena);
    while ((rc = bt_call_recv(r->call, 0, &msg, err)) == CT_OK) {
        bt_arena_reset(&arena);
        Btpb__MutateRowsResponse *resp =
            btpb__mutate_rows_response__unpack(&arena.alloc, msg.len, msg.data);
        if (!resp) {
            bt_arena_destroy(&arena);
            return ct_err_set(err, CT_ECORRUPT, "cannot decode a MutateRows answer");
        }
        for (size_t i = 0; i < resp->n_entries; i++) {
            const Btpb__MutateRowsResponse__Entry *e = resp->entries[i];
            if (e->index < 0 || (size_t)e->index >= r->n)
                continue;
            size_t k = r->idx[e->index];
            status[k] = e->status ? e->status->code : 0;
            if (e->status && e->status->code && !msgs[0][0])
                snprintf(msgs[0], sizeof(msgs[0]), "%s: %s", bt_rpc_code_name(e->status->code),
                         e->status->message ? e->status->message : "");
        }
    }
    bt_arena_destroy(&arena);
    int code = BT_GRPC_OK;
    if (rc == CT_NOTFOUND)
        rc = bt_call_finish(r->call, &code, err);
    if (rc != CT_OK) {          /* the stream failed: rows without an answer share its status */
        if (code == BT_GRPC_OK) /* no status: no answer in time, or a local failure */
            code = rc == CT_EUNAVAIL ? BT_GRPC_DEADLINE_EXCEEDED : BT_GRPC_INTERNAL;
        for (size_t i = 0; i < r->n; i++)
            if (status[r->idx[i]] < 0) {
                status[r->idx[i]] = code;
                if (!msgs[0][0])
                    snprintf(msgs[0], sizeof(msgs[0]), "%s", err->msg);
            }
    }
    for (size_t i = 0; i < r->n; i++) /* a stream that ended OK answered every entry */
        if (status[r->idx[i]] < 0)
            status[r->idx[i]] = BT_GRPC_INTERNAL;
    return CT_OK;
}

int bt_mutate_batch(struct wc_table *tbase, const struct wc_row_mutation *rows, size_t n,
                    enum wc_durability d, struct ct_err *err)
{
    (void)d; /* Bigtable acknowledges only durable writes */
    struct bt_table *t = (struct bt_table *)tbase;
    int rc0 = bt_table_check_writable(t, err);
    if (rc0 != CT_OK)
        return rc0;
    int64_t now_ms = clock_now_ms();
    struct bt_conv_ctx cx;
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += rows[i].n;
    int cx_ok = bt_conv_ctx_init(&cx, total);
    struct bt_conv *conv = calloc(n, sizeof(*conv));
    int *status = malloc(n * sizeof(*status));
    size_t *pending = malloc(n * sizeof(*pending));
    char msgs[1][BT_BATCH_MSG_MAX];
    int rc = CT_OK;
    if (cx_ok != 0 || !conv || !status || !pending) {
        rc = ct_err_set(err, CT_ENOMEM, "out of memory for a batch of %zu rows", n);
        goto done;
    }
    /* rows with pinned deletes go one by one after the others (bt_apply_pinned) */
    size_t npinned = 0;
    for (size_t i = 0; i < n; i++) {
        if (bt_row_pinned(&rows[i])) {
            conv[i].first = cx.nptrs;
            conv[i].first_pin = cx.npins;
            status[i] = -2;
            npinned++;
            continue;
        }
        status[i] = 0;
        if ((rc = bt_convert_row(t, &rows[i], now_ms, BT_CONV_PLAIN, &cx, &conv[i], err)) !=
            CT_OK) {
            ct_err_prefix(err, "row %zu of the batch", i);
            goto done;
        }
    }
    size_t npending = 0;
    for (size_t i = 0; i < n; i++)
        if (status[i] == 0 && conv[i].n) /* a delete that masked every put sends nothing */
            pending[npending++] = i;
    size_t bad_row = SIZE_MAX; /* the lowest row that failed in MutateRows */
    for (int attempt = 0; npending > 0; attempt++) {
        if (attempt > 0)
            bt_backoff(attempt);
        for (size_t i = 0; i < npending; i++)
            status[pending[i]] = -1;
        msgs[0][0] = 0;
        /* cut the pending rows into requests; run BT_BATCH_IN_FLIGHT at a time */
        size_t at = 0;
        while (at < npending) {
            struct bt_req reqs[BT_BATCH_IN_FLIGHT];
            memset(reqs, 0, sizeof(reqs));
            size_t nreq = 0;
            while (nreq < BT_BATCH_IN_FLIGHT && at < npending) {
                struct bt_req *r = &reqs[nreq++];
                size_t start = at, muts = 0, bytes = 0;
                while (at < npending) {
                    const struct bt_conv *c = &conv[pending[at]];
                    if (at > start && (muts + c->n > BT_MAX_MUTATIONS_PER_REQUEST ||
                                       bytes + c->bytes > BT_BATCH_REQUEST_BYTES))
                        break;
                    muts += c->n;
                    bytes += c->bytes + rows[pending[at]].row.len;
                    at++;
                }
                r->idx = pending + start;
                r->n = at - start;
                if ((rc = bt_req_start(t, r, rows, &cx, conv, err)) != CT_OK)
                    break;
            }
            for (size_t i = 0; i < nreq; i++) {
                if (reqs[i].call && rc == CT_OK)
                    rc = bt_req_collect(&reqs[i], status, msgs, err);
                bt_call_free(reqs[i].call);
                bt_buf_free(&reqs[i].body);
            }
            if (rc != CT_OK) {
                bad_row = 0;
                goto pinned;
            }
        }
        /* keep the retryable failures; stop at the first permanent one */
        size_t keep = 0, first_bad = SIZE_MAX;
        int bad_code = 0;
        for (size_t i = 0; i < npending; i++) {
            int code = status[pending[i]];
            if (code == BT_GRPC_OK)
                continue;
            if (bt_rpc_retryable(code, NULL) && attempt + 1 < BT_RETRY_ATTEMPTS) {
                pending[keep++] = pending[i];
            } else if (pending[i] < first_bad) {
                first_bad = pending[i];
                bad_code = code;
            }
        }
        if (first_bad != SIZE_MAX) {
            /* NOT_FOUND on a data call: the table is missing (never "no such row") */
            int bc = bt_rpc_code(bad_code);
            if (bc == CT_OK || bc == CT_NOTFOUND)
                bc = CT_EIO;
            rc = ct_err_set(err, bc, "batch row %zu of %s failed%s: %s", first_bad, t->full,
                            bad_code == BT_GRPC_NOT_FOUND && !strstr(msgs[0], "table missing")
                                ? " (table missing in Bigtable)"
                                : "",
                            msgs[0]);
            bad_row = first_bad;
            break;
        }
        npending = keep;
    }
pinned:
    /* the pinned rows below the first failure, in order; the lowest failing row is reported */
    for (size_t i = 0; i < n && npinned && i < bad_row; i++) {
        if (status[i] != -2)
            continue;
        struct ct_err e2;
        ct_err_clear(&e2);
        int r2 = bt_apply_pinned(t, &rows[i], now_ms, &e2);
        if (r2 != CT_OK) {
            *err = e2;
            rc = r2;
            if (n > 1)
                ct_err_prefix(err, "batch row %zu", i);
            break;
        }
    }
done:
    free(conv);
    free(status);
    free(pending);
    bt_conv_ctx_free(&cx);
    return rc;
}

/* The prologue of the single-row atomic operations: the table takes writes and has the family. */
static int bt_writable_family(struct bt_table *t, struct wc_bytes family, struct wc_family_desc *fd,
                              struct ct_err *err)
{
    int rc = bt_table_check_writable(t, err);
    return rc != CT_OK ? rc : bt_table_family(t, family, fd, err);
}

int bt_increment(struct wc_table *tbase, struct wc_bytes row, struct wc_bytes family,
                 struct wc_bytes qualifier, int64_t delta, enum wc_durability d, int64_t *out,
                 struct ct_err *err)
{
    (void)d;
    struct bt_table *t = (struct bt_table *)tbase;
    struct wc_family_desc fd;
    int rc = bt_writable_family(t, family, &fd, err);
    if (rc != CT_OK)
        return rc;
    if (row.len > BT_MAX_ROW_KEY_BYTES)
        return ct_err_set(err, CT_ELIMIT, "row key of %zu bytes exceeds Bigtable's %d-byte limit",
                          row.len, BT_MAX_ROW_KEY_BYTES);
    Btpb__ReadModifyWriteRowRequest rq;
    btpb__read_modify_write_row_request__init(&rq);
    Btpb__ReadModifyWriteRule rule, *rp = &rule;
    btpb__read_modify_write_rule__init(&rule);
    rule.family_name = fd.name;
    rule.column_qualifier.data = (uint8_t *)qualifier.data;
    rule.column_qualifier.len = qualifier.len;
    rule.rule_case = BTPB__READ_MODIFY_WRITE_RULE__RULE_INCREMENT_AMOUNT;
    rule.increment_amount = delta;
    rq.table_name = t->path;
    rq.row_key.data = (uint8_t *)row.data;
    rq.row_key.len = row.len;
    rq.n_rules = 1;
    rq.rules = &rp;
    struct bt_buf body = {0}, resp = {0};
    if ((rc = bt_pack(&rq.base, &body, err)) != CT_OK)
        return rc;
    struct bt_md md[1] = {{"x-goog-request-params", t->routing}};
    rc = bt_rpc_unary(t->s->rpc, BT_CHANNEL_DATA, BT_METHOD_DATA "ReadModifyWriteRow", md, 1,
                      body.p, body.len, t->s->deadline_ms, &resp, NULL, err);
    bt_buf_free(&body);
    if (rc != CT_OK) {
        bt_buf_free(&resp);
        if (rc != CT_EUNAVAIL) { /* name the usual cause: a value that is no 8-byte counter */
            struct wc_scan_options o;
            wc_scan_options_init(&o);
            struct wc_column col = {family, qualifier, true};
            o.columns = &col;
            o.ncolumns = 1;
            struct wc_result res;
            struct ct_err e2 = {0};
            if (wc_get(&t->base, row, &o, &res, &e2) == CT_OK) {
                size_t len = res.row.ncells ? res.row.cells[0].value.len : 8;
                wc_result_release(&res);
                if (len != 8)
                    return ct_err_set(err, CT_EINVAL,
                                      "cannot increment %s: the stored value is %zu bytes, not an "
                                      "8-byte counter",
                                      t->full, len);
            }
        }
        return ct_err_prefix(err, "increment %s", t->full);
    }
    Btpb__ReadModifyWriteRowResponse *r =
        btpb__read_modify_write_row_response__unpack(NULL, resp.len, resp.p);
    bt_buf_free(&resp);
    if (!r)
        return ct_err_set(err, CT_ECORRUPT, "cannot decode a ReadModifyWriteRow answer");
    rc = ct_err_set(err, CT_ECORRUPT, "ReadModifyWriteRow answer lacks the counter cell");
    for (size_t i = 0; r->row && i < r->row->n_families; i++)
        for (size_t j = 0; j < r->row->families[i]->n_columns; j++) {
            const Btpb__Column *c = r->row->families[i]->columns[j];
            if (c->n_cells && c->cells[0]->value.len == 8) {
                const uint8_t *v = c->cells[0]->value.data;
                uint64_t u = 0;
                for (int k = 0; k < 8; k++)
                    u = u << 8 | v[k];
                *out = (int64_t)u;
                ct_err_clear(err);
                rc = CT_OK;
            }
        }
    btpb__read_modify_write_row_response__free_unpacked(r, NULL);
    return rc;
}

/* Whether the check of a check-and-mutate holds now: the newest visible value of the column
 * equals *expected (expected NULL: the column has no visible value). */
static int bt_check_now(struct bt_table *t, struct wc_bytes row, struct wc_bytes family,
                        struct wc_bytes qualifier, const struct wc_bytes *expected, bool *holds,
                        struct ct_err *err)
{
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_column col = {family, qualifier, true};
    o.columns = &col;
    o.ncolumns = 1;
    struct wc_result res;
    int rc = wc_get(&t->base, row, &o, &res, err);
    if (rc != CT_OK)
        return rc;
    *holds = expected ? res.row.ncells && bt_bytes_eq(res.row.cells[0].value, *expected)
                      : res.row.ncells == 0;
    wc_result_release(&res);
    return CT_OK;
}

/* The check of a check-and-mutate as a filter that yields a cell iff the column's newest visible
 * value equals *expected (expected NULL: iff it has a visible value). */
static Btpb__RowFilter *bt_check_filter(struct bt_pool *p, const struct wc_family_desc *fd,
                                        struct wc_bytes qualifier, const struct wc_bytes *expected,
                                        int64_t now_ms)
{
    Btpb__RowFilter *parts[4];
    size_t np = 0;
    parts[np++] = bt_filter_column_range(p, fd->name, qualifier, true, true, qualifier, true, true);
    if (fd->ttl_s < WC_TTL_FOREVER && fd->min_versions == 0)
        parts[np++] = bt_filter_ts(p, now_ms - fd->ttl_s * 1000, 0);
    Btpb__RowFilter *lim = bt_filter_new(p);
    if (lim) {
        lim->filter_case = BTPB__ROW_FILTER__FILTER_CELLS_PER_COLUMN_LIMIT_FILTER;
        lim->cells_per_column_limit_filter = 1;
    }
    parts[np++] = lim;
    if (expected) {
        Btpb__RowFilter *vf = bt_filter_new(p);
        Btpb__ValueRange *vr = bt_pool_alloc(p, sizeof(*vr));
        if (!vf || !vr)
            return NULL;
        btpb__value_range__init(vr);
        vr->start_value_case = BTPB__VALUE_RANGE__START_VALUE_START_VALUE_CLOSED;
        vr->start_value_closed.data = (uint8_t *)expected->data;
        vr->start_value_closed.len = expected->len;
        vr->end_value_case = BTPB__VALUE_RANGE__END_VALUE_END_VALUE_CLOSED;
        vr->end_value_closed = vr->start_value_closed;
        vf->filter_case = BTPB__ROW_FILTER__FILTER_VALUE_RANGE_FILTER;
        vf->value_range_filter = vr;
        parts[np++] = vf;
    }
    for (size_t i = 0; i < np; i++)
        if (!parts[i])
            return NULL;
    return bt_filter_group(p, parts, np, true);
}

/* One attempt of a check-and-mutate. The row's pins (if any) join the check: with expected,
 * the predicate is "no conflict and the value matches" (mutations on true); without, "the
 * column has a value or a conflict" (mutations on false). When a pinned attempt does not apply,
 * the check is re-read: if it fails now, that is the answer (*retry false); if it holds, the
 * attempt lost to a concurrent change and *retry is set. */
static int bt_cam_attempt(struct bt_table *t, const struct wc_family_desc *fd, struct wc_bytes row,
                          struct wc_bytes qualifier, const struct wc_bytes *expected,
                          const struct wc_row_mutation *rm, int64_t now_ms, enum bt_conv_mode mode,
                          bool *applied, bool *retry, struct ct_err *err)
{
    *retry = false;
    struct bt_conv_ctx cx;
    struct bt_conv conv;
    if (bt_conv_ctx_init(&cx, rm->n) != 0) {
        bt_conv_ctx_free(&cx);
        return ct_err_set(err, CT_ENOMEM, "out of memory converting a row mutation");
    }
    int rc = bt_convert_row(t, rm, now_ms, mode, &cx, &conv, err);
    Btpb__Mutation **m = NULL;
    size_t nm = 0;
    const struct bt_pin *pins = cx.pins + conv.first_pin;
    if (rc == CT_OK)
        rc = bt_assemble(&cx, &conv, pins, conv.npins, &m, &nm, err);
    size_t est = 64;
    for (size_t i = 0; rc == CT_OK && i < conv.npins; i++)
        est += bt_pin_bytes(&pins[i]);
    if (rc == CT_OK && est > BT_MAX_PREDICATE_BYTES)
        rc = ct_err_set(err, CT_ELIMIT,
                        "check-and-mutate on %s: its deletes cover too many columns for one "
                        "atomic request",
                        t->full);
    if (rc != CT_OK || nm == 0) { /* nothing to write: answer the check as of now */
        bt_conv_ctx_free(&cx);
        return rc != CT_OK ? rc
                           : bt_check_now(t, row, wc_bytes_str(fd->name), qualifier, expected,
                                          applied, err);
    }
    struct bt_pool *p = &cx.pool;
    Btpb__RowFilter *check = bt_check_filter(p, fd, qualifier, expected, now_ms);
    Btpb__RowFilter *pred = check;
    if (check && conv.npins) {
        Btpb__RowFilter *pin = bt_pins_filter(p, pins, conv.npins);
        if (!pin) {
            pred = NULL;
        } else if (expected) {
            pred = bt_filter_cond(p, pin, bt_filter_flag(p, false), check);
        } else {
            Btpb__RowFilter *both[2] = {check, pin};
            pred = bt_filter_group(p, both, 2, false);
        }
    }
    bool matched = false;
    rc = pred ? bt_cam_send(t, row, pred, m, nm, expected != NULL, &matched, err)
              : ct_err_set(err, CT_ENOMEM, "out of memory building a check-and-mutate");
    bt_conv_ctx_free(&cx);
    if (rc != CT_OK)
        return rc;
    *applied = expected ? matched : !matched;
    if (*applied || conv.npins == 0)
        return CT_OK;
    bool holds;
    if ((rc = bt_check_now(t, row, wc_bytes_str(fd->name), qualifier, expected, &holds, err)) !=
        CT_OK)
        return rc;
    *retry = holds;
    return CT_OK;
}

int bt_check_and_mutate(struct wc_table *tbase, struct wc_bytes row, struct wc_bytes family,
                        struct wc_bytes qualifier, const struct wc_bytes *expected,
                        const struct wc_row_mutation *rm, enum wc_durability d, bool *applied,
                        struct ct_err *err)
{
    (void)d;
    struct bt_table *t = (struct bt_table *)tbase;
    struct wc_family_desc fd;
    int rc = bt_writable_family(t, family, &fd, err);
    if (rc != CT_OK)
        return rc;
    int64_t now_ms = clock_now_ms();
    bool pinned = bt_row_pinned(rm);
    for (int attempt = 0; attempt < BT_PIN_ATTEMPTS; attempt++) {
        if (attempt >= 2)
            bt_conflict_backoff(attempt);
        enum bt_conv_mode mode = !pinned ? BT_CONV_PLAIN : attempt ? BT_CONV_READ : BT_CONV_FAST;
        bool retry;
        rc = bt_cam_attempt(t, &fd, row, qualifier, expected, rm, now_ms, mode, applied, &retry,
                            err);
        if (rc != CT_OK || !retry)
            return rc;
    }
    return ct_err_set(err, CT_ECONFLICT,
                      "check-and-mutate on %s: the row kept changing between read and write "
                      "(%d attempts)",
                      t->full, BT_PIN_ATTEMPTS);
}
