/* rollup.c - see rollup.h: the rollup cell codec, the rollup tables, their writes and the job
 * that computes 1h rollups from the data table and 1d rollups from the 1h table.
 * Invariants: a rollup cell is written with a put (the same qualifier again replaces it), so
 * recomputing an interval never adds to what is stored; progress is recorded only after every
 * cell of the pass was written. */
#include "schema/rollup.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "storage/clock.h"
#include "storage/coding.h"

#define ROLLUP_FAMILY       "t"
#define ROLLUP_PROGRESS_ROW "\0ctsdb.rollup"
#define ROLLUP_PROGRESS_LEN 13
#define ROLLUP_BATCH        256

static const char *const agg_names[ROLLUP_NAGG] = {"sum", "count", "min", "max"};

const char *rollup_agg_name(enum rollup_agg a)
{
    return (unsigned)a < ROLLUP_NAGG ? agg_names[a] : "?";
}

int rollup_agg_parse(const char *s)
{
    for (int i = 0; i < ROLLUP_NAGG; i++)
        if (!strcasecmp(s, agg_names[i]))
            return i;
    return -1;
}

const char *rollup_iv_name(enum rollup_iv iv)
{
    return iv == ROLLUP_1H ? "1h" : "1d";
}

int64_t rollup_iv_seconds(enum rollup_iv iv)
{
    return iv == ROLLUP_1H ? 3600 : 86400;
}

int rollup_iv_parse(const char *s)
{
    char *end;
    long long n = strtoll(s, &end, 10);
    if (end == s || n <= 0 || n > 1000000 || end[0] == '\0' || end[1] != '\0')
        return -1;
    long long mul;
    switch (end[0]) {
    case 's':
        mul = 1;
        break;
    case 'm':
        mul = 60;
        break;
    case 'h':
        mul = 3600;
        break;
    case 'd':
        mul = 86400;
        break;
    default:
        return -1;
    }
    if (n * mul == 3600)
        return ROLLUP_1H;
    if (n * mul == 86400)
        return ROLLUP_1D;
    return -1;
}

int64_t rollup_row_base(enum rollup_iv iv, int64_t ts_s)
{
    int64_t day = ts_s - ((ts_s % 86400) + 86400) % 86400;
    if (iv == ROLLUP_1H)
        return day;
    time_t t = (time_t)day;
    struct tm tm;
    gmtime_r(&t, &tm);
    tm.tm_mday = 1;
    tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
    return (int64_t)timegm(&tm);
}

int64_t rollup_row_next(enum rollup_iv iv, int64_t base_s)
{
    if (iv == ROLLUP_1H)
        return base_s + 86400;
    time_t t = (time_t)base_s;
    struct tm tm;
    gmtime_r(&t, &tm);
    tm.tm_mon += 1;
    tm.tm_mday = 1;
    tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
    return (int64_t)timegm(&tm);
}

int rollup_cell_encode(enum rollup_iv iv, enum rollup_agg a, int64_t base_s, int64_t ts_s,
                       const struct dpcodec_point *val, uint8_t *q, size_t *qlen, uint8_t *v,
                       size_t *vlen, struct ct_err *err)
{
    int64_t step = rollup_iv_seconds(iv);
    if ((unsigned)a >= ROLLUP_NAGG)
        return ct_err_set(err, CT_EINVAL, "unknown rollup aggregator %d", (int)a);
    if (ts_s < base_s || ts_s >= rollup_row_next(iv, base_s) || (ts_s - base_s) % step)
        return ct_err_set(err, CT_EINVAL,
                          "timestamp %lld is not a %s interval start in the row based at %lld",
                          (long long)ts_s, rollup_iv_name(iv), (long long)base_s);
    /* the value bytes and flags of a data cell (encoded at offset 0 of an hour row) */
    struct dpcodec_point p = *val;
    p.ts_ms = base_s * 1000;
    p.ms = false;
    uint8_t dq[DPCODEC_MAX_QUALIFIER];
    size_t dql;
    int rc = dpcodec_encode(base_s, &p, dq, &dql, v, vlen, err);
    if (rc != CT_OK)
        return rc;
    size_t nl = strlen(agg_names[a]);
    memcpy(q, agg_names[a], nl);
    q[nl] = ':';
    unsigned off = (unsigned)((ts_s - base_s) / step) << 4 | (dq[1] & DPCODEC_FLAGS_MASK);
    q[nl + 1] = (uint8_t)(off >> 8);
    q[nl + 2] = (uint8_t)off;
    *qlen = nl + 3;
    return CT_OK;
}

int rollup_cell_decode(enum rollup_iv iv, int64_t base_s, const uint8_t *q, size_t qlen,
                       const uint8_t *v, size_t vlen, enum rollup_agg *a, int64_t *ts_s,
                       struct dpcodec_point *val, struct ct_err *err)
{
    int agg = -1;
    if (qlen == 3) { /* id form */
        if (q[0] >= ROLLUP_NAGG)
            return CT_NOTFOUND;
        agg = q[0];
    } else if (qlen > 3 && qlen <= 12 && q[qlen - 3] == ':') {
        char name[16];
        for (size_t i = 0; i < qlen - 3; i++)
            name[i] = (char)tolower(q[i]);
        name[qlen - 3] = '\0';
        agg = rollup_agg_parse(name);
        if (agg < 0)
            return CT_NOTFOUND;
    } else {
        return CT_NOTFOUND;
    }
    unsigned off = (unsigned)q[qlen - 2] << 8 | q[qlen - 1];
    if ((q[qlen - 2] & DPCODEC_MS_PREFIX) == DPCODEC_MS_PREFIX)
        return ct_err_set(err, CT_ECORRUPT, "rollup qualifier with a millisecond offset");
    int64_t t = base_s + (int64_t)(off >> 4) * rollup_iv_seconds(iv);
    if (t >= rollup_row_next(iv, base_s))
        return ct_err_set(err, CT_ECORRUPT, "rollup offset %u beyond its row", off >> 4);
    if (vlen != dpcodec_flags_value_len((uint8_t)off))
        return ct_err_set(err, CT_ECORRUPT, "rollup value of %zu bytes, its flags say %zu", vlen,
                          dpcodec_flags_value_len((uint8_t)off));
    /* the value as a data cell's: big-endian integer of 1..8 bytes, or a 4/8-byte IEEE float */
    uint64_t u = 0;
    for (size_t i = 0; i < vlen; i++)
        u = u << 8 | v[i];
    memset(val, 0, sizeof(*val));
    if (off & DPCODEC_FLAG_FLOAT) {
        if (vlen == 4) {
            uint32_t u32 = (uint32_t)u;
            float f;
            memcpy(&f, &u32, 4);
            val->type = DPCODEC_FLOAT;
            val->f = f;
        } else if (vlen == 8) {
            memcpy(&val->f, &u, 8);
            val->type = DPCODEC_DOUBLE;
        } else {
            return ct_err_set(err, CT_ECORRUPT, "rollup float value of %zu bytes", vlen);
        }
    } else {
        if (vlen != 1 && vlen != 2 && vlen != 4 && vlen != 8)
            return ct_err_set(err, CT_ECORRUPT, "rollup integer value of %zu bytes", vlen);
        unsigned sh = (unsigned)(64 - 8 * vlen); /* sign-extend */
        val->type = DPCODEC_INT;
        val->i = sh ? (int64_t)(u << sh) >> sh : (int64_t)u;
    }
    val->ts_ms = t * 1000;
    *a = (enum rollup_agg)agg;
    *ts_s = t;
    return CT_OK;
}

/* ---- tables ------------------------------------------------------------------------------ */

struct rollup {
    struct wc_store *s;
    struct tsdb *t;
    struct wc_table *tab[ROLLUP_NIV];
};

int rollup_open(struct wc_store *s, struct tsdb *t, const struct rollup_config *c,
                struct rollup **out, struct ct_err *err)
{
    struct rollup *r = calloc(1, sizeof(*r));
    if (!r)
        return ct_err_set(err, CT_ENOMEM, "out of memory opening rollups");
    r->s = s;
    r->t = t;
    int rc = CT_OK;
    for (int iv = 0; iv < ROLLUP_NIV && rc == CT_OK; iv++) {
        const char *name = c->table[iv];
        rc = wc_table_exists(s, name, err);
        if (rc == CT_NOTFOUND && c->create_tables) {
            struct wc_family_desc f;
            wc_family_desc_init(&f, ROLLUP_FAMILY);
            f.ttl_s = c->ttl_s[iv] > 0 ? c->ttl_s[iv] : WC_TTL_FOREVER;
            f.compression = tsdb_get_config(t)->compression;
            struct wc_table_desc d;
            wc_table_desc_init(&d, name);
            d.families = &f;
            d.nfamilies = 1;
            rc = wc_table_create(s, &d, NULL, 0, err);
            if (rc == CT_EEXIST)
                rc = CT_OK;
            if (rc != CT_OK)
                ct_err_prefix(err, "cannot create rollup table %s", name);
        } else if (rc == CT_NOTFOUND) {
            rc = ct_err_set(err, CT_NOTFOUND, "rollup table %s does not exist", name);
        }
        if (rc == CT_OK)
            rc = wc_table_open(s, name, &r->tab[iv], err);
    }
    if (rc != CT_OK) {
        rollup_close(r);
        return rc;
    }
    *out = r;
    return CT_OK;
}

void rollup_close(struct rollup *r)
{
    if (!r)
        return;
    for (int iv = 0; iv < ROLLUP_NIV; iv++)
        if (r->tab[iv])
            wc_table_close(r->tab[iv]);
    free(r);
}

struct wc_table *rollup_table(const struct rollup *r, enum rollup_iv iv)
{
    return r->tab[iv];
}

struct tsdb *rollup_tsdb(const struct rollup *r)
{
    return r->t;
}

/* ---- writes ------------------------------------------------------------------------------ */

/* One pending row mutation with up to ROLLUP_NAGG cells, its bytes owned. */
struct pend {
    uint8_t key[ROWKEY_MAX_BYTES];
    size_t klen;
    uint8_t q[ROLLUP_NAGG][16], v[ROLLUP_NAGG][8];
    struct wc_mutation m[ROLLUP_NAGG];
    size_t n;
};

struct wbatch {
    struct rollup *r;
    enum rollup_iv iv;
    struct pend *p;
    struct wc_row_mutation *rm;
    size_t n;
};

static int wbatch_init(struct wbatch *b, struct rollup *r, enum rollup_iv iv, struct ct_err *err)
{
    b->r = r;
    b->iv = iv;
    b->n = 0;
    b->p = malloc(ROLLUP_BATCH * sizeof(*b->p));
    b->rm = malloc(ROLLUP_BATCH * sizeof(*b->rm));
    if (!b->p || !b->rm) {
        free(b->p);
        free(b->rm);
        return ct_err_set(err, CT_ENOMEM, "out of memory for a rollup batch");
    }
    return CT_OK;
}

static int wbatch_flush(struct wbatch *b, struct ct_err *err)
{
    if (!b->n)
        return CT_OK;
    for (size_t i = 0; i < b->n; i++) {
        b->rm[i].row = wc_bytes_of(b->p[i].key, b->p[i].klen);
        b->rm[i].mutations = b->p[i].m;
        b->rm[i].n = b->p[i].n;
    }
    int rc = wc_mutate_batch(b->r->tab[b->iv], b->rm, b->n, WC_DURABILITY_USE_DEFAULT, err);
    b->n = 0;
    return rc;
}

static void wbatch_free(struct wbatch *b)
{
    free(b->p);
    free(b->rm);
}

/* Adds a row of cells (vals[a] for each agg with has[a]) for interval ts_s of a series. */
static int wbatch_add(struct wbatch *b, const uint8_t *tsuid, size_t tl, int64_t ts_s,
                      const enum rollup_agg *aggs, const struct dpcodec_point *vals, size_t nv,
                      struct ct_err *err)
{
    if (b->n == ROLLUP_BATCH) {
        int rc = wbatch_flush(b, err);
        if (rc != CT_OK)
            return rc;
    }
    struct pend *p = &b->p[b->n];
    int64_t base = rollup_row_base(b->iv, ts_s);
    p->klen = rowkey_encode(tsdb_layout(b->r->t), tsuid, tl, base, p->key);
    p->n = 0;
    for (size_t i = 0; i < nv; i++) {
        size_t ql, vl;
        int rc = rollup_cell_encode(b->iv, aggs[i], base, ts_s, &vals[i], p->q[i], &ql, p->v[i],
                                    &vl, err);
        if (rc != CT_OK)
            return rc;
        struct wc_mutation *m = &p->m[p->n++];
        m->op = WC_OP_PUT;
        m->family = wc_bytes_of(ROLLUP_FAMILY, 1);
        m->qualifier = wc_bytes_of(p->q[i], ql);
        m->value = wc_bytes_of(p->v[i], vl);
        m->ts_ms = WC_TS_LATEST;
    }
    b->n++;
    return CT_OK;
}

int rollup_write(struct rollup *r, const struct rollup_put *p, size_t n, struct ct_err *err)
{
    struct wbatch b[ROLLUP_NIV];
    int rc = wbatch_init(&b[0], r, ROLLUP_1H, err);
    if (rc != CT_OK)
        return rc;
    if ((rc = wbatch_init(&b[1], r, ROLLUP_1D, err)) != CT_OK) {
        wbatch_free(&b[0]);
        return rc;
    }
    for (size_t i = 0; i < n && rc == CT_OK; i++) {
        if (p[i].ts_s < 0 || p[i].tsuid_len > ROWKEY_MAX_TSUID) {
            rc = ct_err_set(err, CT_EINVAL, "bad rollup point");
            break;
        }
        rc = wbatch_add(&b[p[i].iv], p[i].tsuid, p[i].tsuid_len, p[i].ts_s, &p[i].agg, &p[i].val, 1,
                        err);
    }
    for (int iv = 0; iv < ROLLUP_NIV; iv++) {
        if (rc == CT_OK)
            rc = wbatch_flush(&b[iv], err);
        wbatch_free(&b[iv]);
    }
    return rc;
}

/* ---- progress ----------------------------------------------------------------------------- */

static int progress_get_q(struct rollup *r, const char *q, int64_t *out, struct ct_err *err)
{
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_result res;
    int rc = wc_get(tsdb_meta_table(r->t), wc_bytes_of(ROLLUP_PROGRESS_ROW, ROLLUP_PROGRESS_LEN),
                    &o, &res, err);
    if (rc != CT_OK)
        return rc;
    *out = 0;
    size_t ql = strlen(q);
    for (size_t i = 0; i < res.row.ncells; i++) {
        const struct wc_cell *c = &res.row.cells[i];
        if (c->qualifier.len == ql && !memcmp(c->qualifier.data, q, ql) && c->value.len == 8)
            *out = (int64_t)coding_get_be64(c->value.data);
    }
    wc_result_release(&res);
    return CT_OK;
}

static int progress_set_q(struct rollup *r, const char *q, int64_t v, struct ct_err *err)
{
    uint8_t b[8];
    coding_put_be64(b, (uint64_t)v);
    struct wc_mutation m = {WC_OP_PUT, wc_bytes_of(TSDB_META_FAMILY, 4), wc_bytes_of(q, strlen(q)),
                            wc_bytes_of(b, 8), WC_TS_LATEST};
    struct wc_row_mutation rm = {wc_bytes_of(ROLLUP_PROGRESS_ROW, ROLLUP_PROGRESS_LEN), &m, 1};
    return wc_mutate_row(tsdb_meta_table(r->t), &rm, WC_DURABILITY_SYNC_WAL, err);
}

int rollup_progress_get(struct rollup *r, enum rollup_iv iv, int64_t *out, struct ct_err *err)
{
    return progress_get_q(r, rollup_iv_name(iv), out, err);
}

int rollup_progress_set(struct rollup *r, enum rollup_iv iv, int64_t v, struct ct_err *err)
{
    return progress_set_q(r, rollup_iv_name(iv), v, err);
}

/* ---- computing ---------------------------------------------------------------------------- */

struct base_range {
    const struct rowkey_layout *l;
    int64_t from, to;
};

static int64_t key_base(const struct rowkey_layout *l, const uint8_t *row, size_t len)
{
    size_t at = l->salt_width + l->metric_width;
    if (len < at + 4)
        return -1;
    return (int64_t)coding_get_be32(row + at);
}

static enum wc_row_decision base_filter(void *arg, const uint8_t *row, size_t len)
{
    const struct base_range *br = arg;
    int64_t b = key_base(br->l, row, len);
    return b >= br->from && b < br->to ? WC_ROW_INCLUDE : WC_ROW_SKIP;
}

/* The four values of one interval, folded. */
struct fold {
    double sum, min, max;
    int64_t count;
};

static void fold_init(struct fold *f)
{
    f->sum = 0;
    f->count = 0;
    f->min = INFINITY;
    f->max = -INFINITY;
}

static int fold_write(struct wbatch *b, const uint8_t *tsuid, size_t tl, int64_t ts_s,
                      const struct fold *f, struct ct_err *err)
{
    if (f->count == 0)
        return CT_OK;
    static const enum rollup_agg aggs[ROLLUP_NAGG] = {ROLLUP_SUM, ROLLUP_COUNT, ROLLUP_MIN,
                                                      ROLLUP_MAX};
    struct dpcodec_point v[ROLLUP_NAGG] = {
        dpcodec_point_real(0, false, f->sum), dpcodec_point_int(0, false, f->count),
        dpcodec_point_real(0, false, f->min), dpcodec_point_real(0, false, f->max)};
    return wbatch_add(b, tsuid, tl, ts_s, aggs, v, ROLLUP_NAGG, err);
}

static double point_double(const struct dpcodec_point *p)
{
    return p->type == DPCODEC_INT ? (double)p->i : p->f;
}

/* A row's series: its TSUID into tsuid (length returned), 0 for a row that is not a series'
 * (the global annotation row, metric uid all zero, or a short key). */
static size_t row_tsuid(const struct rowkey_layout *l, const struct wc_bytes *key, uint8_t *tsuid)
{
    size_t tl = rowkey_tsuid_of(l, key->data, key->len, tsuid, ROWKEY_MAX_TSUID);
    bool global = true;
    for (unsigned i = 0; i < l->metric_width && tl; i++)
        global = global && tsuid[i] == 0;
    return global ? 0 : tl;
}

/* Decoding buffer of the hour pass, grown to the largest row. */
struct ptbuf {
    struct dpcodec_point *p;
    size_t cap;
};

/* Rolls up one data row (every cell of it) into b. */
static int hour_row(struct wbatch *b, struct ptbuf *pb, const uint8_t *tsuid, size_t tl,
                    int64_t base, const struct wc_cell *cells, size_t ncells, struct ct_err *err)
{
    size_t n = 0;
    int rc = dpcodec_row_decode(base, cells, ncells, pb->p, pb->cap, &n, NULL, err);
    if (rc == CT_ELIMIT) {
        struct dpcodec_point *np = realloc(pb->p, n * sizeof(*np));
        if (!np)
            return ct_err_set(err, CT_ENOMEM, "out of memory rolling up %zu points", n);
        pb->p = np;
        pb->cap = n;
        rc = dpcodec_row_decode(base, cells, ncells, pb->p, pb->cap, &n, NULL, err);
    }
    if (rc != CT_OK)
        return rc;
    struct fold f;
    fold_init(&f);
    for (size_t i = 0; i < n; i++) {
        double v = point_double(&pb->p[i]);
        if (isnan(v))
            continue;
        f.sum += v;
        f.count++;
        f.min = v < f.min ? v : f.min;
        f.max = v > f.max ? v : f.max;
    }
    return fold_write(b, tsuid, tl, base, &f, err);
}

/* Folds the cells of a 1h-table row (a day) into f. */
static int day_row_fold(int64_t base, const struct wc_cell *cells, size_t ncells, struct fold *f,
                        struct ct_err *err)
{
    fold_init(f);
    for (size_t i = 0; i < ncells; i++) {
        const struct wc_cell *c = &cells[i];
        enum rollup_agg a;
        int64_t ts;
        struct dpcodec_point p;
        int rc = rollup_cell_decode(ROLLUP_1H, base, c->qualifier.data, c->qualifier.len,
                                    c->value.data, c->value.len, &a, &ts, &p, err);
        if (rc == CT_NOTFOUND)
            continue;
        if (rc != CT_OK)
            return rc;
        double v = point_double(&p);
        if (a == ROLLUP_SUM)
            f->sum += v;
        else if (a == ROLLUP_COUNT)
            f->count += p.type == DPCODEC_INT ? p.i : (int64_t)v;
        else if (a == ROLLUP_MIN)
            f->min = v < f->min ? v : f->min;
        else
            f->max = v > f->max ? v : f->max;
    }
    return CT_OK;
}

/* Series-days whose 1d rollup must be redone (late points in an hour already rolled up). */
struct touched {
    struct {
        uint8_t tsuid[ROWKEY_MAX_TSUID];
        size_t tl;
        int64_t day;
    } * e;
    size_t n, cap;
};

static int touched_add(struct touched *t, const uint8_t *tsuid, size_t tl, int64_t day,
                       struct ct_err *err)
{
    for (size_t i = t->n; i-- > 0 && i + 64 >= t->n;) /* rows of one series come close */
        if (t->e[i].day == day && t->e[i].tl == tl && !memcmp(t->e[i].tsuid, tsuid, tl))
            return CT_OK;
    if (t->n == t->cap) {
        size_t nc = t->cap ? 2 * t->cap : 64;
        void *ne = realloc(t->e, nc * sizeof(*t->e));
        if (!ne)
            return ct_err_set(err, CT_ENOMEM, "out of memory noting late rollups");
        t->e = ne;
        t->cap = nc;
    }
    memcpy(t->e[t->n].tsuid, tsuid, tl);
    t->e[t->n].tl = tl;
    t->e[t->n].day = day;
    t->n++;
    return CT_OK;
}

/* The hour pass: rows whose base hour is in [from_s, to_s) are rolled up whole; with since_ms
 * > 0, rows of hours before from_s holding a cell written at or after since_ms (points that
 * came after their hour was rolled up) are read again whole and rolled up again, and their
 * series-day noted in late (NULL: no late pass). */
static int hours_pass(struct rollup *r, int64_t from_s, int64_t to_s, int64_t since_ms,
                      struct touched *late, uint64_t *rows, struct ct_err *err)
{
    const struct rowkey_layout *l = tsdb_layout(r->t);
    struct wbatch b;
    int rc = wbatch_init(&b, r, ROLLUP_1H, err);
    if (rc != CT_OK)
        return rc;
    struct ptbuf pb = {malloc(4096 * sizeof(struct dpcodec_point)), 4096};
    uint64_t nrows = 0;
    if (!pb.p) {
        wbatch_free(&b);
        return ct_err_set(err, CT_ENOMEM, "out of memory rolling up");
    }
    for (int pass = 0; pass < 2 && rc == CT_OK; pass++) {
        if (pass == 1 && (!late || since_ms <= 0 || from_s <= 0))
            break;
        struct base_range br = {l, pass == 0 ? from_s : 0, pass == 0 ? to_s : from_s};
        struct wc_scan_options so;
        wc_scan_options_init(&so);
        so.row_filter = base_filter;
        so.row_filter_arg = &br;
        if (pass == 1)
            so.tmin_ms = since_ms;
        struct wc_scanner *sc = NULL;
        if ((rc = wc_scanner_open(tsdb_data_table(r->t), &so, &sc, err)) != CT_OK)
            break;
        struct wc_row row;
        while ((rc = wc_scanner_next(sc, &row, err)) == CT_OK) {
            int64_t base = key_base(l, row.key.data, row.key.len);
            uint8_t tsuid[ROWKEY_MAX_TSUID];
            size_t tl = row_tsuid(l, &row.key, tsuid);
            if (base < 0 || !tl)
                continue;
            if (pass == 0) {
                rc = hour_row(&b, &pb, tsuid, tl, base, row.cells, row.ncells, err);
            } else { /* only the new cells came: read the whole row */
                struct wc_scan_options go;
                wc_scan_options_init(&go);
                struct wc_result res;
                rc = wc_get(tsdb_data_table(r->t), row.key, &go, &res, err);
                if (rc != CT_OK)
                    break;
                rc = hour_row(&b, &pb, tsuid, tl, base, res.row.cells, res.row.ncells, err);
                wc_result_release(&res);
                if (rc == CT_OK)
                    rc = touched_add(late, tsuid, tl, rollup_row_base(ROLLUP_1H, base), err);
            }
            if (rc != CT_OK)
                break;
            nrows++;
        }
        if (rc == CT_NOTFOUND)
            rc = wbatch_flush(&b, err);
        wc_scanner_close(sc);
    }
    wbatch_free(&b);
    free(pb.p);
    if (rows)
        *rows = nrows;
    return rc;
}

int rollup_compute_hours(struct rollup *r, int64_t from_s, int64_t to_s, uint64_t *rows,
                         struct ct_err *err)
{
    return hours_pass(r, from_s, to_s, 0, NULL, rows, err);
}

int rollup_compute_days(struct rollup *r, int64_t from_s, int64_t to_s, uint64_t *rows,
                        struct ct_err *err)
{
    const struct rowkey_layout *l = tsdb_layout(r->t);
    struct base_range br = {l, from_s, to_s};
    struct wc_scan_options so;
    wc_scan_options_init(&so);
    so.row_filter = base_filter;
    so.row_filter_arg = &br;
    struct wbatch b;
    int rc = wbatch_init(&b, r, ROLLUP_1D, err);
    if (rc != CT_OK)
        return rc;
    struct wc_scanner *sc = NULL;
    uint64_t nrows = 0;
    if ((rc = wc_scanner_open(r->tab[ROLLUP_1H], &so, &sc, err)) != CT_OK)
        goto out;
    struct wc_row row;
    while ((rc = wc_scanner_next(sc, &row, err)) == CT_OK) {
        int64_t base = key_base(l, row.key.data, row.key.len);
        uint8_t tsuid[ROWKEY_MAX_TSUID];
        size_t tl = row_tsuid(l, &row.key, tsuid);
        if (base < 0 || !tl)
            continue;
        struct fold f;
        if ((rc = day_row_fold(base, row.cells, row.ncells, &f, err)) != CT_OK ||
            (rc = fold_write(&b, tsuid, tl, base, &f, err)) != CT_OK)
            break;
        nrows++;
    }
    if (rc == CT_NOTFOUND)
        rc = wbatch_flush(&b, err);
out:
    wc_scanner_close(sc);
    wbatch_free(&b);
    if (rows)
        *rows = nrows;
    return rc;
}

/* Redoes the 1d rollup of each noted series-day before dp from its 1h row. */
static int redo_days(struct rollup *r, const struct touched *t, int64_t dp, struct ct_err *err)
{
    struct wbatch b;
    int rc = wbatch_init(&b, r, ROLLUP_1D, err);
    if (rc != CT_OK)
        return rc;
    const struct rowkey_layout *l = tsdb_layout(r->t);
    for (size_t i = 0; i < t->n && rc == CT_OK; i++) {
        if (t->e[i].day >= dp)
            continue; /* the day pass computes it */
        uint8_t key[ROWKEY_MAX_BYTES];
        size_t kl = rowkey_encode(l, t->e[i].tsuid, t->e[i].tl, t->e[i].day, key);
        struct wc_scan_options go;
        wc_scan_options_init(&go);
        struct wc_result res;
        if ((rc = wc_get(r->tab[ROLLUP_1H], wc_bytes_of(key, kl), &go, &res, err)) != CT_OK)
            break;
        struct fold f;
        rc = day_row_fold(t->e[i].day, res.row.cells, res.row.ncells, &f, err);
        wc_result_release(&res);
        if (rc == CT_OK)
            rc = fold_write(&b, t->e[i].tsuid, t->e[i].tl, t->e[i].day, &f, err);
    }
    if (rc == CT_OK)
        rc = wbatch_flush(&b, err);
    wbatch_free(&b);
    return rc;
}

#define ROLLUP_SINCE_Q "1h_since"

int rollup_job_step(struct rollup *r, int64_t now_s, int64_t grace_s, uint64_t *rows,
                    struct ct_err *err)
{
    uint64_t n1 = 0, n2 = 0;
    int64_t hp, dp, since;
    /* cells written from here on are looked at by the next step's late pass */
    int64_t step_ms = clock_now_ms();
    int rc = rollup_progress_get(r, ROLLUP_1H, &hp, err);
    if (rc == CT_OK)
        rc = rollup_progress_get(r, ROLLUP_1D, &dp, err);
    if (rc == CT_OK)
        rc = progress_get_q(r, ROLLUP_SINCE_Q, &since, err);
    if (rc != CT_OK)
        return rc;
    int64_t closed = now_s - grace_s - 3600; /* the last hour start that is closed */
    int64_t to = closed < 0 ? 0 : rowkey_base_hour_s(closed) + 3600;
    if (to < hp)
        to = hp;
    struct touched late = {0};
    rc = hours_pass(r, hp, to, since, &late, &n1, err);
    if (rc == CT_OK && late.n)
        rc = redo_days(r, &late, dp, err);
    free(late.e);
    if (rc == CT_OK && to > hp)
        rc = rollup_progress_set(r, ROLLUP_1H, to, err);
    if (rc == CT_OK)
        rc = progress_set_q(r, ROLLUP_SINCE_Q, step_ms, err);
    if (rc != CT_OK)
        return rc;
    int64_t dto = rollup_row_base(ROLLUP_1H, to); /* days whose 24 hours are all rolled up */
    if (dto > dp) {
        if ((rc = rollup_compute_days(r, dp, dto, &n2, err)) != CT_OK)
            return rc;
        if ((rc = rollup_progress_set(r, ROLLUP_1D, dto, err)) != CT_OK)
            return rc;
    }
    if (rows)
        *rows = n1 + n2;
    return CT_OK;
}
