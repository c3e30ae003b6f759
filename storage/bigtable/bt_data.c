/* bt_data.c - writes through Bigtable: row mutations and batches (MutateRow / MutateRows),
 * atomic increment (ReadModifyWriteRow) and check-and-mutate (CheckAndMutateRow).
 *
 * Every cell written carries an explicit timestamp (WC_TS_LATEST becomes clock_now_ms() here),
 * so a batch entry can be re-sent after a retryable failure without changing the result. Deletes
 * map to Bigtable's ranged deletes: DeleteColumn T -> cells of the column in [0, T]; Delete T ->
 * [T, T]; DeleteFamily / DeleteRow without a timestamp -> DeleteFromFamily / DeleteFromRow; with
 * a timestamp, and DeleteFamilyVersion, the columns are read first and deleted one by one (not
 * atomic with the read; spec §13: Bigtable has no delete markers). Delete of the latest version
 * reads the newest visible version first.
 *
 * Invariants: (1) limits (BT_MAX_*) are checked before anything is sent; (2) only entries that
 * failed with a retryable status are retried; increments and check-and-mutate never are;
 * (3) a batch reports the lowest failing row index. Thread-safe: no state outside the call. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/bigtable/bt_int.h"
#include "storage/clock.h"

/* Where converted mutations live for one batch. Puts (the hot path) come from arrays sized for
 * the whole batch, so converting a cell allocates nothing; deletes use the pool. */
struct bt_conv_ctx {
    struct bt_pool pool;
    Btpb__Mutation *puts;
    Btpb__Mutation__SetCell *sets;
    size_t nputs, puts_cap;
    Btpb__Mutation **ptrs; /* every row's mutations; a row owns a contiguous slice */
    size_t nptrs, ptrs_cap;
    char *fams[16]; /* interned, validated family names (in the pool) */
    size_t nfams;
    size_t last_fam; /* index into fams of the previous lookup */
};

/* A converted row: mutations ptrs[first .. first + n) of its context. */
struct bt_conv {
    size_t first, n;
    size_t bytes; /* rough encoded size */
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
    bt_pool_free(&cx->pool);
}

static Btpb__Mutation **bt_conv_muts(const struct bt_conv_ctx *cx, const struct bt_conv *c)
{
    return c->n ? cx->ptrs + c->first : NULL;
}

static int64_t bt_us(int64_t ms)
{
    return ms >= INT64_MAX / 1000 ? INT64_MAX / 1000 * 1000 : ms * 1000;
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
    tr->end_timestamp_micros = bt_us(to_ms);
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

/* Reads, for family `fam` of `row`, the newest cell of each column in [tmin, tmax) and adds a
 * ranged delete [from, to) for each column found. */
static int bt_delete_read_columns(struct bt_table *t, struct wc_bytes row, const char *fam,
                                  int64_t tmin, int64_t tmax, int64_t from, int64_t to,
                                  struct bt_conv_ctx *cx, struct bt_conv *c, struct ct_err *err)
{
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_column col = {wc_bytes_str(fam), wc_bytes_of(NULL, 0), false};
    o.columns = &col;
    o.ncolumns = 1;
    o.tmin_ms = tmin;
    o.tmax_ms = tmax;
    o.raw = true; /* expired cells are deleted too */
    struct wc_result res;
    int rc = wc_get(&t->base, row, &o, &res, err);
    if (rc != CT_OK)
        return rc;
    for (size_t i = 0; i < res.row.ncells && rc == CT_OK; i++) {
        const struct wc_cell *cell = &res.row.cells[i];
        if (i && cell->qualifier.len == res.row.cells[i - 1].qualifier.len &&
            !memcmp(cell->qualifier.data, res.row.cells[i - 1].qualifier.data, cell->qualifier.len))
            continue;
        char *q = bt_pool_strndup(&cx->pool, cell->qualifier.data, cell->qualifier.len);
        if (!q || bt_conv_add(cx, c,
                              bt_mut_delete_column(&cx->pool, fam,
                                                   wc_bytes_of(q, cell->qualifier.len), from, to),
                              cell->qualifier.len))
            rc = ct_err_set(err, CT_ENOMEM, "out of memory converting a delete");
    }
    wc_result_release(&res);
    return rc;
}

/* Converts one wc row mutation into Bigtable mutations appended to cx (validating families and
 * limits). */
static int bt_convert_row(struct bt_table *t, const struct wc_row_mutation *rm, int64_t now_ms,
                          struct bt_conv_ctx *cx, struct bt_conv *c, struct ct_err *err)
{
    memset(c, 0, sizeof(*c));
    c->first = cx->nptrs;
    struct bt_pool *p = &cx->pool;
    if (rm->row.len > BT_MAX_ROW_KEY_BYTES)
        return ct_err_set(err, CT_ELIMIT, "row key of %zu bytes exceeds Bigtable's %d-byte limit",
                          rm->row.len, BT_MAX_ROW_KEY_BYTES);
    if (rm->n > BT_MAX_MUTATIONS_PER_REQUEST)
        return ct_err_set(err, CT_ELIMIT,
                          "%zu changes to one row exceed Bigtable's limit of %d per request", rm->n,
                          BT_MAX_MUTATIONS_PER_REQUEST);
    int rc = CT_OK;
    for (size_t i = 0; i < rm->n && rc == CT_OK; i++) {
        const struct wc_mutation *m = &rm->mutations[i];
        int64_t ts = m->ts_ms == WC_TS_LATEST ? now_ms : m->ts_ms;
        char *fam = NULL;
        if (m->op != WC_OP_DELETE_ROW &&
            (rc = bt_conv_family(cx, t, m->family, &fam, err)) != CT_OK)
            return rc;
        switch (m->op) {
        case WC_OP_PUT: {
            if (m->value.len > BT_MAX_VALUE_BYTES)
                return ct_err_set(err, CT_ELIMIT,
                                  "value of %zu bytes exceeds Bigtable's %u-byte cell limit",
                                  m->value.len, BT_MAX_VALUE_BYTES);
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
            break;
        }
        case WC_OP_DELETE_COLUMN:
            if (bt_conv_add(cx, c, bt_mut_delete_column(p, fam, m->qualifier, 0, ts + 1),
                            m->qualifier.len))
                goto oom;
            break;
        case WC_OP_DELETE_VERSION: {
            if (m->ts_ms == WC_TS_LATEST) { /* the newest visible version */
                struct wc_scan_options o;
                wc_scan_options_init(&o);
                struct wc_column col = {m->family, m->qualifier, true};
                o.columns = &col;
                o.ncolumns = 1;
                struct wc_result res;
                if ((rc = wc_get(&t->base, rm->row, &o, &res, err)) != CT_OK)
                    return rc;
                if (res.row.ncells)
                    ts = res.row.cells[0].ts_ms;
                wc_result_release(&res);
            }
            if (bt_conv_add(cx, c, bt_mut_delete_column(p, fam, m->qualifier, ts, ts + 1),
                            m->qualifier.len))
                goto oom;
            break;
        }
        case WC_OP_DELETE_FAMILY:
            if (m->ts_ms == WC_TS_LATEST) {
                Btpb__Mutation *bm = bt_mut_new(p);
                Btpb__Mutation__DeleteFromFamily *df = bt_pool_alloc(p, sizeof(*df));
                if (!bm || !df)
                    goto oom;
                btpb__mutation__delete_from_family__init(df);
                df->family_name = fam;
                bm->mutation_case = BTPB__MUTATION__MUTATION_DELETE_FROM_FAMILY;
                bm->delete_from_family = df;
                if (bt_conv_add(cx, c, bm, m->family.len))
                    goto oom;
            } else {
                rc = bt_delete_read_columns(t, rm->row, fam, 0, ts + 1, 0, ts + 1, cx, c, err);
            }
            break;
        case WC_OP_DELETE_FAMILY_VERSION:
            rc = bt_delete_read_columns(t, rm->row, fam, ts, ts + 1, ts, ts + 1, cx, c, err);
            break;
        case WC_OP_DELETE_ROW:
            if (m->ts_ms == WC_TS_LATEST) {
                Btpb__Mutation *bm = bt_mut_new(p);
                Btpb__Mutation__DeleteFromRow *dr = bt_pool_alloc(p, sizeof(*dr));
                if (!bm || !dr)
                    goto oom;
                btpb__mutation__delete_from_row__init(dr);
                bm->mutation_case = BTPB__MUTATION__MUTATION_DELETE_FROM_ROW;
                bm->delete_from_row = dr;
                if (bt_conv_add(cx, c, bm, 0))
                    goto oom;
            } else {
                struct wc_family_desc *fams;
                size_t nf;
                if ((rc = bt_table_families(t, &fams, &nf, err)) != CT_OK)
                    return rc;
                for (size_t k = 0; k < nf && rc == CT_OK; k++) {
                    char *fn = bt_pool_strndup(p, fams[k].name, strlen(fams[k].name));
                    rc = fn ? bt_delete_read_columns(t, rm->row, fn, 0, ts + 1, 0, ts + 1, cx, c,
                                                     err)
                            : ct_err_set(err, CT_ENOMEM, "out of memory converting a delete");
                }
                free(fams);
            }
            break;
        }
    }
    if (rc == CT_OK && c->bytes + rm->row.len > BT_MAX_ROW_BYTES)
        return ct_err_set(err, CT_ELIMIT,
                          "row mutation of about %zu bytes exceeds Bigtable's "
                          "%u-byte row limit",
                          c->bytes, BT_MAX_ROW_BYTES);
    if (rc == CT_OK && c->n > BT_MAX_MUTATIONS_PER_REQUEST)
        return ct_err_set(err, CT_ELIMIT,
                          "%zu Bigtable mutations for one row exceed the limit "
                          "of %d per request",
                          c->n, BT_MAX_MUTATIONS_PER_REQUEST);
    return rc;
oom:
    return ct_err_set(err, CT_ENOMEM, "out of memory converting a row mutation");
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

/* Collects one request's answers into status[] (gRPC code per batch row, -1 = none yet). */
static int bt_req_collect(struct bt_req *r, int *status, char (*msgs)[160], struct ct_err *err)
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
                snprintf(msgs[0], 160, "%s: %s", bt_rpc_code_name(e->status->code),
                         e->status->message ? e->status->message : "");
        }
    }
    bt_arena_destroy(&arena);
    int code = BT_GRPC_OK;
    if (rc == CT_NOTFOUND)
        rc = bt_call_finish(r->call, &code, err);
    if (rc != CT_OK) { /* the stream failed: rows without an answer share its status */
        if (code == BT_GRPC_OK)
            code = BT_GRPC_INTERNAL;
        for (size_t i = 0; i < r->n; i++)
            if (status[r->idx[i]] < 0) {
                status[r->idx[i]] = code;
                if (!msgs[0][0])
                    snprintf(msgs[0], 160, "%.150s", err->msg);
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
    int rc0 = bt_table_check_enabled(t, err);
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
    char msgs[1][160];
    int rc = CT_OK;
    if (cx_ok != 0 || !conv || !status || !pending) {
        rc = ct_err_set(err, CT_ENOMEM, "out of memory for a batch of %zu rows", n);
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        if ((rc = bt_convert_row(t, &rows[i], now_ms, &cx, &conv[i], err)) != CT_OK) {
            ct_err_prefix(err, "row %zu of the batch", i);
            goto done;
        }
    }
    size_t npending = 0;
    for (size_t i = 0; i < n; i++)
        if (conv[i].n) /* a delete that found nothing sends nothing */
            pending[npending++] = i;
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
            if (rc != CT_OK)
                goto done;
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
            rc = ct_err_set(err, bt_rpc_code(bad_code) == CT_OK ? CT_EIO : bt_rpc_code(bad_code),
                            "batch row %zu of %s failed: %s", first_bad, t->full, msgs[0]);
            goto done;
        }
        npending = keep;
    }
done:
    free(conv);
    free(status);
    free(pending);
    bt_conv_ctx_free(&cx);
    return rc;
}

int bt_increment(struct wc_table *tbase, struct wc_bytes row, struct wc_bytes family,
                 struct wc_bytes qualifier, int64_t delta, enum wc_durability d, int64_t *out,
                 struct ct_err *err)
{
    (void)d;
    struct bt_table *t = (struct bt_table *)tbase;
    struct wc_family_desc fd;
    int rc = bt_table_check_enabled(t, err);
    if (rc == CT_OK)
        rc = bt_table_family(t, family, &fd, err);
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
        if (rc != CT_ETIMEOUT) { /* name the usual cause: a value that is no 8-byte counter */
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

int bt_check_and_mutate(struct wc_table *tbase, struct wc_bytes row, struct wc_bytes family,
                        struct wc_bytes qualifier, const struct wc_bytes *expected,
                        const struct wc_row_mutation *rm, enum wc_durability d, bool *applied,
                        struct ct_err *err)
{
    (void)d;
    struct bt_table *t = (struct bt_table *)tbase;
    struct wc_family_desc fd;
    int rc = bt_table_check_enabled(t, err);
    if (rc == CT_OK)
        rc = bt_table_family(t, family, &fd, err);
    if (rc != CT_OK)
        return rc;
    struct bt_conv_ctx cx;
    struct bt_conv conv;
    int64_t now_ms = clock_now_ms();
    if (bt_conv_ctx_init(&cx, rm->n) != 0) {
        bt_conv_ctx_free(&cx);
        return ct_err_set(err, CT_ENOMEM, "out of memory converting a row mutation");
    }
    if ((rc = bt_convert_row(t, rm, now_ms, &cx, &conv, err)) != CT_OK) {
        bt_conv_ctx_free(&cx);
        return rc;
    }
    /* predicate: the newest visible cell of the column [and its value equals expected] */
    Btpb__RowFilter parts[5], *pp[5];
    size_t np = 0;
    char re[2 * WC_MAX_FAMILY_BYTES + 8];
    bt_family_regex(fd.name, re, sizeof(re));
    Btpb__ColumnRange cr;
    btpb__column_range__init(&cr);
    cr.family_name = fd.name;
    cr.start_qualifier_case = BTPB__COLUMN_RANGE__START_QUALIFIER_START_QUALIFIER_CLOSED;
    cr.start_qualifier_closed.data = (uint8_t *)qualifier.data;
    cr.start_qualifier_closed.len = qualifier.len;
    cr.end_qualifier_case = BTPB__COLUMN_RANGE__END_QUALIFIER_END_QUALIFIER_CLOSED;
    cr.end_qualifier_closed = cr.start_qualifier_closed;
    Btpb__TimestampRange tr;
    btpb__timestamp_range__init(&tr);
    Btpb__ValueRange vr;
    btpb__value_range__init(&vr);
    for (int i = 0; i < 5; i++) {
        btpb__row_filter__init(&parts[i]);
        pp[i] = &parts[i];
    }
    parts[np].filter_case = BTPB__ROW_FILTER__FILTER_FAMILY_NAME_REGEX_FILTER;
    parts[np++].family_name_regex_filter = re;
    parts[np].filter_case = BTPB__ROW_FILTER__FILTER_COLUMN_RANGE_FILTER;
    parts[np++].column_range_filter = &cr;
    if (fd.ttl_s < WC_TTL_FOREVER && fd.min_versions == 0) {
        tr.start_timestamp_micros = bt_us(now_ms - fd.ttl_s * 1000);
        parts[np].filter_case = BTPB__ROW_FILTER__FILTER_TIMESTAMP_RANGE_FILTER;
        parts[np++].timestamp_range_filter = &tr;
    }
    parts[np].filter_case = BTPB__ROW_FILTER__FILTER_CELLS_PER_COLUMN_LIMIT_FILTER;
    parts[np++].cells_per_column_limit_filter = 1;
    if (expected) {
        vr.start_value_case = BTPB__VALUE_RANGE__START_VALUE_START_VALUE_CLOSED;
        vr.start_value_closed.data = (uint8_t *)expected->data;
        vr.start_value_closed.len = expected->len;
        vr.end_value_case = BTPB__VALUE_RANGE__END_VALUE_END_VALUE_CLOSED;
        vr.end_value_closed = vr.start_value_closed;
        parts[np].filter_case = BTPB__ROW_FILTER__FILTER_VALUE_RANGE_FILTER;
        parts[np++].value_range_filter = &vr;
    }
    Btpb__RowFilter__Chain chain;
    btpb__row_filter__chain__init(&chain);
    chain.n_filters = np;
    chain.filters = pp;
    Btpb__RowFilter pred;
    btpb__row_filter__init(&pred);
    pred.filter_case = BTPB__ROW_FILTER__FILTER_CHAIN;
    pred.chain = &chain;

    Btpb__CheckAndMutateRowRequest rq;
    btpb__check_and_mutate_row_request__init(&rq);
    rq.table_name = t->path;
    rq.row_key.data = (uint8_t *)row.data;
    rq.row_key.len = row.len;
    rq.predicate_filter = &pred;
    if (expected) {
        rq.n_true_mutations = conv.n;
        rq.true_mutations = bt_conv_muts(&cx, &conv);
    } else {
        rq.n_false_mutations = conv.n;
        rq.false_mutations = bt_conv_muts(&cx, &conv);
    }
    struct bt_buf body = {0}, resp = {0};
    rc = bt_pack(&rq.base, &body, err);
    bt_conv_ctx_free(&cx); /* packed: the mutations are no longer needed */
    if (rc != CT_OK)
        return rc;
    if (conv.n == 0) { /* nothing to apply (a delete that found nothing): still answer */
        bt_buf_free(&body);
        struct wc_scan_options o;
        wc_scan_options_init(&o);
        struct wc_column col = {family, qualifier, true};
        o.columns = &col;
        o.ncolumns = 1;
        struct wc_result res;
        if ((rc = wc_get(&t->base, row, &o, &res, err)) != CT_OK)
            return rc;
        bool match = expected
                         ? res.row.ncells && res.row.cells[0].value.len == expected->len &&
                               !memcmp(res.row.cells[0].value.data, expected->data, expected->len)
                         : res.row.ncells == 0;
        wc_result_release(&res);
        *applied = match;
        return CT_OK;
    }
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
    *applied = expected ? r->predicate_matched : !r->predicate_matched;
    btpb__check_and_mutate_row_response__free_unpacked(r, NULL);
    return CT_OK;
}
