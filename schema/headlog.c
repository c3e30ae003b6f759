/* headlog.c - the head's write-ahead log (schema/headlog.h); payload format in
 * schema/headlog_format.h.
 *
 * Invariants: (1) sequence numbers are given out under mu, strictly increasing, and above every
 * number replayed or released; (2) hours[] holds, for every hour (old ones too) with a
 * point in an appended or replayed record, the first such record's number, registered under mu
 * before that record is handed to the engine log, so a release never passes a record still
 * being written that holds an open hour; (3) the mark file's seq only grows, and is on disk before
 * any segment it allows to be deleted is deleted; (4) records are encoded against the series
 * dictionary and handed to the engine log under order_mu, so the log's byte order is sequence
 * order and a record follows every record of its dictionary before it; an append that fails
 * ends the dictionary (its new entries may not be in the log); (5) a release deletes only
 * segments whose records all precede the start of the dictionary of the oldest unreleased record
 * (starts[]), so replay finds every unreleased record's dictionary (headlog_format.h); (6) a
 * version 3 dictionary's per-series state (the previous point's time, step, value, kind and
 * delta width of each id) is changed by the writer only under order_mu, record by record in
 * sequence order, as replay changes it decoding every record of the dictionary from its start
 * (released ones too); it ends with its dictionary, so no record is ever coded against the
 * points of a record that failed or was torn.
 * Locking: order_mu, then mu; each guards the fields marked so; the engine log is thread-safe on
 * its own. */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
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

/* A series' state in a version 3 dictionary (headlog_format.h): what its next point is coded
 * against. */
struct headlog_sstate {
    int64_t ts_ms, dt_ms; /* its previous point's time, and that time minus the one before */
    uint64_t v;           /* its previous value: an int, a decimal's m, or a double's bits */
    uint8_t w;            /* the bit width of its value deltas (0..62, 64) */
    uint8_t kind;         /* its previous point's kind (HEADLOG_K_*) */
};

/* A series dictionary (headlog_format.h): TSUID <-> id from the record that started it on. */
struct headlog_dict {
    uint64_t start_seq; /* the record that started it; 0: none (the next append starts one) */
    unsigned version;   /* of the record that started it (replay: versions never mix) */
    uint32_t n;         /* entries: ids 0..n-1 */
    struct headlog_sstate *ss; /* per id (version 3) */
    uint32_t *slots;      /* id + 1 by hash (open addressing, 0 empty); NULL when not indexed */
    size_t nslots;        /* a power of two, more than twice n */
    uint32_t *hash, *off; /* per id: its TSUID's hash and offset in arena */
    uint8_t *tlen;        /* per id: its TSUID's length */
    size_t idcap;
    uint8_t *arena;
    size_t alen, acap;
};

struct headlog {
    struct wal *wal;
    char *dir;
    pthread_mutex_t order_mu;
    /* guarded by order_mu */
    struct headlog_dict dict; /* the writer's */
    uint64_t *starts;         /* ascending: starts of dictionaries that unreleased records use */
    size_t nstarts, scap;
    pthread_mutex_t mu;
    /* guarded by mu */
    uint64_t next_seq;
    uint64_t released_seq;
    int64_t released_before_s;
    struct headlog_hour *hours;
    size_t nhours, hcap;
    struct headlog_stats st;
    bool replayed;
    bool read_only;  /* headlog_open_read_only: replay only */
    bool mark_found; /* the mark file existed at open */
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

static int headlog_mark_read_found(const char *dir, uint64_t *seq, bool *found, struct ct_err *err)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, HEADLOG_MARK_FILE);
    *seq = 0;
    *found = false;
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
    if (b[4] != HEADLOG_MARK_VERSION)
        return ct_err_set(err, CT_ECORRUPT,
                          "unsupported head log mark version %u in %s (this build reads %d)", b[4],
                          path, HEADLOG_MARK_VERSION);
    if (coding_get_be32(b + 13) != crc32c_value(b, 13))
        return ct_err_set(err, CT_ECORRUPT, "bad checksum in %s", path);
    *seq = coding_get_be64(b + 5);
    *found = true;
    return CT_OK;
}

int headlog_mark_read(const char *dir, uint64_t *seq, struct ct_err *err)
{
    bool found;
    return headlog_mark_read_found(dir, seq, &found, err);
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
    b[4] = HEADLOG_MARK_VERSION;
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

/* ---- series dictionaries (headlog_format.h) ------------------------------------------------ */

static void headlog_dict_free(struct headlog_dict *d)
{
    free(d->slots);
    free(d->ss);
    free(d->hash);
    free(d->off);
    free(d->tlen);
    free(d->arena);
    memset(d, 0, sizeof(*d));
}

/* Empties d (keeping its memory) as the dictionary started by record start_seq. */
static void headlog_dict_reset(struct headlog_dict *d, uint64_t start_seq)
{
    d->start_seq = start_seq;
    d->n = 0;
    d->alen = 0;
    if (d->slots)
        memset(d->slots, 0, d->nslots * sizeof(*d->slots));
}

static uint32_t headlog_hash(const uint8_t *t, size_t tl)
{
    uint64_t h = hash_bytes(t, tl, 0);
    return (uint32_t)(h ^ h >> 32);
}

/* The id of TSUID t in d (indexed), or UINT32_MAX. */
static uint32_t headlog_dict_find(const struct headlog_dict *d, const uint8_t *t, size_t tl,
                                  uint32_t hv)
{
    if (!d->nslots)
        return UINT32_MAX;
    for (size_t s = hv & (d->nslots - 1);; s = (s + 1) & (d->nslots - 1)) {
        uint32_t id = d->slots[s];
        if (!id)
            return UINT32_MAX;
        id--;
        if (d->hash[id] == hv && d->tlen[id] == tl && !memcmp(d->arena + d->off[id], t, tl))
            return id;
    }
}

/* Adds TSUID t (not in d) as the next id (*id), its state starting at time ts_ms; indexed for
 * headlog_dict_find() when index. */
static int headlog_dict_add(struct headlog_dict *d, const uint8_t *t, size_t tl, uint32_t hv,
                            int64_t ts_ms, bool index, uint32_t *id, struct ct_err *err)
{
    if (d->n == d->idcap) {
        size_t nc = d->idcap ? d->idcap * 2 : 1024;
        struct headlog_sstate *nss = realloc(d->ss, nc * sizeof(*nss));
        if (!nss)
            return ct_err_set(err, CT_ENOMEM, "cannot grow the head log's series dictionary");
        d->ss = nss;
        uint32_t *nh = realloc(d->hash, nc * sizeof(*nh));
        if (nh)
            d->hash = nh;
        uint32_t *no = nh ? realloc(d->off, nc * sizeof(*no)) : NULL;
        if (no)
            d->off = no;
        uint8_t *nt = no ? realloc(d->tlen, nc) : NULL;
        if (!nt)
            return ct_err_set(err, CT_ENOMEM, "cannot grow the head log's series dictionary");
        d->tlen = nt;
        d->idcap = nc;
    }
    if (d->alen + tl > d->acap) {
        size_t nc = d->acap ? d->acap : 16384;
        while (nc < d->alen + tl)
            nc *= 2;
        uint8_t *na = realloc(d->arena, nc);
        if (!na)
            return ct_err_set(err, CT_ENOMEM, "cannot grow the head log's series dictionary");
        d->arena = na;
        d->acap = nc;
    }
    if (index && 2 * ((size_t)d->n + 1) > d->nslots) {
        size_t ns = d->nslots ? d->nslots * 2 : 2048;
        uint32_t *sl = calloc(ns, sizeof(*sl));
        if (!sl)
            return ct_err_set(err, CT_ENOMEM, "cannot grow the head log's series dictionary");
        for (uint32_t i = 0; i < d->n; i++) {
            size_t s = d->hash[i] & (ns - 1);
            while (sl[s])
                s = (s + 1) & (ns - 1);
            sl[s] = i + 1;
        }
        free(d->slots);
        d->slots = sl;
        d->nslots = ns;
    }
    uint32_t i = d->n++;
    d->ss[i] = (struct headlog_sstate){.ts_ms = ts_ms};
    d->hash[i] = hv;
    d->off[i] = (uint32_t)d->alen;
    d->tlen[i] = (uint8_t)tl;
    memcpy(d->arena + d->alen, t, tl);
    d->alen += tl;
    if (index) {
        size_t s = hv & (d->nslots - 1);
        while (d->slots[s])
            s = (s + 1) & (d->nslots - 1);
        d->slots[s] = i + 1;
    }
    *id = i;
    return CT_OK;
}

/* Notes that a dictionary starts at record seq (release keeps its segment while a later
 * unreleased record may use it). REQUIRES: order_mu held. */
static int headlog_push_start(struct headlog *l, uint64_t seq, struct ct_err *err)
{
    if (l->nstarts == l->scap) {
        size_t nc = l->scap ? l->scap * 2 : 16;
        uint64_t *ns = realloc(l->starts, nc * sizeof(*ns));
        if (!ns)
            return ct_err_set(err, CT_ENOMEM, "cannot grow the head log's dictionary list");
        l->starts = ns;
        l->scap = nc;
    }
    l->starts[l->nstarts++] = seq;
    return CT_OK;
}

/* ---- point values (headlog_format.h, vmode) ------------------------------------------------ */

static const double headlog_pow10[HEADLOG_DEC_MAX + 1] = {1e0, 1e1, 1e2, 1e3, 1e4,
                                                          1e5, 1e6, 1e7, 1e8, 1e9};

/* Whether v == m / 10^k exactly (bit for bit) at this k, |m| < 2^53. */
static bool headlog_decimal_at(double v, unsigned k, int64_t *m)
{
    double x = v * headlog_pow10[k];
    if (!(x > -9007199254740991.0 && x < 9007199254740991.0))
        return false;
    int64_t r = (int64_t)(x < 0 ? x - 0.5 : x + 0.5);
    double back = (double)r / headlog_pow10[k];
    if (memcmp(&back, &v, 8) != 0)
        return false;
    *m = r;
    return true;
}

/* Whether v == m / 10^k exactly (bit for bit) for some k <= HEADLOG_DEC_MAX, |m| < 2^53: the
 * smallest such k. False for NaN, infinities and -0 (their bits never come back). */
static bool headlog_decimal(double v, int64_t *m, unsigned *k)
{
    for (unsigned e = 0; e <= HEADLOG_DEC_MAX; e++)
        if (headlog_decimal_at(v, e, m)) {
            *k = e;
            return true;
        }
    return false;
}

/* ---- version 3 points: a bit stream (headlog_format.h) -------------------------------------- */

/* Bits are written least significant first into bytes in order. The writer stores 8 bytes at
 * p each time (the buffer has room past the record for it) and moves p past the whole ones. */
struct headlog_bw {
    uint8_t *p;
    uint64_t acc; /* nb pending bits (< 8 between calls), the byte at p holds them too */
    unsigned nb;
};

/* Writes the low len bits of v (len <= 56; v < 2^len). */
static inline void headlog_bw_put(struct headlog_bw *w, uint64_t v, unsigned len)
{
    w->acc |= v << w->nb;
    w->nb += len;
    coding_put_le64(w->p, w->acc);
    w->p += w->nb >> 3;
    w->acc >>= w->nb & ~7u;
    w->nb &= 7;
}

/* Writes the low len bits of v (len <= 64). */
static inline void headlog_bw_put_wide(struct headlog_bw *w, uint64_t v, unsigned len)
{
    if (len > 32) {
        headlog_bw_put(w, v & 0xffffffffu, 32);
        v >>= 32;
        len -= 32;
    }
    headlog_bw_put(w, v, len);
}

static uint8_t *headlog_bw_end(struct headlog_bw *w)
{
    if (w->nb)
        *w->p++ = (uint8_t)w->acc; /* the last byte's high bits are 0 */
    return w->p;
}

/* The reader loads 8 bytes at a time while 8 remain (acc then also holds bits of bytes not yet
 * counted, in their places: loading them again ORs the same bits), else byte by byte. */
struct headlog_br {
    const uint8_t *p, *end; /* the bytes not yet counted in nb */
    uint64_t acc;           /* nb bits read and not used, lowest first */
    unsigned nb;
};

/* Reads len bits (len <= 56) into *v; false past the end. */
static inline bool headlog_br_get(struct headlog_br *r, unsigned len, uint64_t *v)
{
    if (r->nb < len && r->end - r->p >= 8) {
        r->acc |= coding_get_le64(r->p) << r->nb;
        r->p += (63 - r->nb) >> 3;
        r->nb |= 56;
    }
    while (r->nb < len) {
        if (r->p == r->end)
            return false;
        r->acc |= (uint64_t)*r->p++ << r->nb;
        r->nb += 8;
    }
    *v = len ? r->acc & (~0ULL >> (64 - len)) : 0;
    r->acc = len < 64 ? r->acc >> len : 0;
    r->nb -= len;
    return true;
}

static inline bool headlog_br_get_wide(struct headlog_br *r, unsigned len, uint64_t *v)
{
    uint64_t lo = 0, hi;
    if (len > 32) {
        if (!headlog_br_get(r, 32, &lo) || !headlog_br_get(r, len - 32, &hi))
            return false;
        *v = lo | hi << 32;
        return true;
    }
    return headlog_br_get(r, len, v);
}

/* Counts 0 bits before a 1 bit (at most max); false past the end or beyond max. */
static inline bool headlog_br_zeros(struct headlog_br *r, unsigned max, unsigned *n)
{
    uint64_t b;
    for (unsigned z = 0; z <= max; z++) {
        if (!headlog_br_get(r, 1, &b))
            return false;
        if (b) {
            *n = z;
            return true;
        }
    }
    return false;
}

static inline unsigned headlog_bits(uint64_t v)
{
    return v ? 64u - (unsigned)__builtin_clzll(v) : 0u;
}

/* A count c >= 1: Exp-Golomb of c - 1 (c's bits after its top one, b - 1 zeros first). */
static inline void headlog_put_count(struct headlog_bw *w, uint32_t c)
{
    unsigned b = headlog_bits(c);
    headlog_bw_put(w, 1ULL << (b - 1), b);
    headlog_bw_put(w, c & ((1ULL << (b - 1)) - 1), b - 1);
}

/* The time's delta of delta (zig-zag zz) by its size class. */
static inline void headlog_put_dod(struct headlog_bw *w, uint64_t zz)
{
    if (zz == 0)
        headlog_bw_put(w, 0, 1); /* 0 */
    else if (zz < 1u << 7)
        headlog_bw_put(w, 1 | zz << 2, 9); /* 10 + 7 bits */
    else if (zz < 1u << 14)
        headlog_bw_put(w, 3 | zz << 3, 17); /* 110 + 14 bits */
    else if (zz < 1u << 24)
        headlog_bw_put(w, 7 | zz << 4, 28); /* 1110 + 24 bits */
    else {
        headlog_bw_put(w, 15, 4); /* 1111 + 64 bits */
        headlog_bw_put_wide(w, zz, 64);
    }
}

/* A value delta's zig-zag zz in the series' width *wp: 0 + *wp bits while it fits and wastes
 * fewer bits than a new width would cost, else 1 + the new width (6 bits, 63 for 64) + bits. */
static inline void headlog_put_delta(struct headlog_bw *w, uint64_t zz, uint8_t *wp)
{
    unsigned nb = headlog_bits(zz), cur = *wp;
    if (nb <= cur && cur - nb <= HEADLOG_W_SLACK) {
        headlog_bw_put(w, 0, 1);
        headlog_bw_put_wide(w, zz, cur);
        return;
    }
    unsigned nw = nb <= 62 ? nb : 64;
    headlog_bw_put(w, 1 | (uint64_t)(nw == 64 ? 63 : nw) << 1, 7);
    headlog_bw_put_wide(w, zz, nw);
    *wp = (uint8_t)nw;
}

/* A double's bits x XOR the previous value's: 0 when equal, else 1 + leading zeros (6 bits) +
 * significant bits - 1 (6 bits) + the significant bits. */
static inline void headlog_put_xor(struct headlog_bw *w, uint64_t x)
{
    if (x == 0) {
        headlog_bw_put(w, 0, 1);
        return;
    }
    unsigned lead = (unsigned)__builtin_clzll(x), trail = (unsigned)__builtin_ctzll(x);
    unsigned len = 64 - lead - trail;
    headlog_bw_put(w, 1 | lead << 1 | (uint64_t)(len - 1) << 7, 13);
    headlog_bw_put_wide(w, x >> trail, len);
}

/* Whether v widens back from a float (OpenTSDB's FLOAT rule, dpcodec_point_real), without
 * converting an out-of-range double. */
static bool headlog_float_exact(double v)
{
    if (v != v)
        return false;
    if (v < -FLT_MAX || v > FLT_MAX)
        return v == 1.0 / 0.0 || v == -1.0 / 0.0;
    return (double)(float)v == v;
}

/* What a kind's previous value means: kinds of one domain (an int; a decimal of one k, float or
 * double, s or ms; a double's bits) code a value as a delta from the previous one. */
static inline unsigned headlog_kind_domain(unsigned kind)
{
    return (kind & 3) == DPCODEC_INT ? 0x100u : kind & 0xf8u;
}

/* Point q of the series whose state is st (HEADLOG_POINT3_BITS at most). */
#define HEADLOG_POINT3_BITS (1 + 4 + 64 + 1 + HEADLOG_K_BITS + 13 + 64)
static void headlog_put_point3(struct headlog_bw *w, const struct dpcodec_point *q,
                               struct headlog_sstate *st)
{
    unsigned ms = q->ms || q->ts_ms % 1000 != 0;
    int64_t dt = (int64_t)((uint64_t)q->ts_ms - (uint64_t)st->ts_ms);
    uint64_t dod = coding_zigzag((int64_t)((uint64_t)dt - (uint64_t)st->dt_ms));
    st->ts_ms = q->ts_ms;
    st->dt_ms = dt;
    unsigned type = (unsigned)q->type;
    if (type != DPCODEC_INT &&
        (type == DPCODEC_FLOAT) == headlog_float_exact(q->f)) /* the type its value implies */
        type = HEADLOG_K_REAL;
    unsigned kind = type | ms << 2;
    uint64_t v;
    int64_t m;
    unsigned k;
    if (q->type == DPCODEC_INT) {
        v = (uint64_t)q->i;
    } else if ((st->kind & 3) != DPCODEC_INT && !(st->kind & HEADLOG_K_BITS_MODE) &&
               headlog_decimal_at(q->f, st->kind >> HEADLOG_K_DEC_SHIFT, &m)) {
        kind |= st->kind & HEADLOG_K_DEC_MASK; /* the series' exponent still holds it */
        v = (uint64_t)m;
    } else if (headlog_decimal(q->f, &m, &k)) {
        kind |= k << HEADLOG_K_DEC_SHIFT;
        v = (uint64_t)m;
    } else {
        kind |= HEADLOG_K_BITS_MODE;
        memcpy(&v, &q->f, 8);
    }
    uint64_t prev = st->v;
    if (dod == 0 && kind == st->kind) {
        st->v = v;
        if (kind & HEADLOG_K_BITS_MODE) { /* 0: the same step and kind */
            headlog_bw_put(w, 0, 1);
            headlog_put_xor(w, v ^ prev);
            return;
        }
        uint64_t zz = coding_zigzag((int64_t)(v - prev));
        unsigned nb = headlog_bits(zz), cur = st->w;
        if (nb <= cur && cur - nb <= HEADLOG_W_SLACK) { /* 0: ... and the delta's width too */
            headlog_bw_put(w, 0, 1);
            headlog_bw_put_wide(w, zz, cur);
            return;
        }
    }
    headlog_bw_put(w, 1, 1); /* 1: the time, the kind and the value, each coded */
    headlog_put_dod(w, dod);
    if (kind == st->kind) {
        headlog_bw_put(w, 0, 1);
    } else {
        headlog_bw_put(w, 1 | kind << 1, 1 + HEADLOG_K_BITS);
        if (headlog_kind_domain(kind) != headlog_kind_domain(st->kind))
            prev = 0; /* another domain: the value whole */
        st->kind = (uint8_t)kind;
    }
    st->v = v;
    if (kind & HEADLOG_K_BITS_MODE)
        headlog_put_xor(w, v ^ prev);
    else
        headlog_put_delta(w, coding_zigzag((int64_t)(v - prev)), &st->w);
}

/* A headlog_put_xor() value after prev into *x. */
static bool headlog_get_xor(struct headlog_br *r, uint64_t prev, uint64_t *x, const char **why)
{
    uint64_t b, lead, len, v = 0;
    if (!headlog_br_get(r, 1, &b))
        return false;
    if (b) {
        if (!headlog_br_get(r, 12, &lead))
            return false;
        len = (lead >> 6) + 1;
        lead &= 63;
        if (lead + len > 64) {
            *why = "bad value";
            return false;
        }
        if (!headlog_br_get_wide(r, (unsigned)len, &v))
            return false;
        v <<= 64 - lead - len;
    }
    *x = prev ^ v;
    return true;
}

static bool headlog_point3_done(struct headlog_sstate *st, uint64_t dt, uint64_t t, uint64_t kind,
                                uint64_t x, struct dpcodec_point *pt, const char **why);

/* The next point of the series whose state is st into *pt; false (the reason in *why) for a
 * stream that ends early or holds what no writer writes. */
static bool headlog_get_point3(struct headlog_br *r, struct headlog_sstate *st,
                               struct dpcodec_point *pt, const char **why)
{
    static const unsigned dod_bits[5] = {0, 7, 14, 24, 64};
    uint64_t b, zz = 0, kind = st->kind, x;
    unsigned ones = 0;
    *why = "truncated points";
    if (!headlog_br_get(r, 1, &b))
        return false;
    if (!b) { /* the same step and kind, and a delta of the kept width */
        uint64_t t = (uint64_t)st->ts_ms + (uint64_t)st->dt_ms;
        if (t > (uint64_t)HEADLOG_MAX_TS_MS) {
            *why = "bad timestamp";
            return false;
        }
        if (kind & HEADLOG_K_BITS_MODE) {
            if (!headlog_get_xor(r, st->v, &x, why))
                return false;
        } else {
            if (!headlog_br_get_wide(r, st->w, &zz))
                return false;
            x = st->v + (uint64_t)coding_unzigzag(zz);
        }
        return headlog_point3_done(st, (uint64_t)st->dt_ms, t, kind, x, pt, why);
    }
    while (ones < 4) {
        if (!headlog_br_get(r, 1, &b))
            return false;
        if (!b)
            break;
        ones++;
    }
    if (ones && !headlog_br_get_wide(r, dod_bits[ones], &zz))
        return false;
    uint64_t dt = (uint64_t)st->dt_ms + (uint64_t)coding_unzigzag(zz);
    uint64_t t = (uint64_t)st->ts_ms + dt;
    if (t > (uint64_t)HEADLOG_MAX_TS_MS) {
        *why = "bad timestamp";
        return false;
    }
    if (!headlog_br_get(r, 1, &b))
        return false;
    uint64_t prev = st->v;
    if (b) {
        if (!headlog_br_get(r, HEADLOG_K_BITS, &kind))
            return false;
        unsigned type = kind & 3, k = (unsigned)kind >> HEADLOG_K_DEC_SHIFT;
        if ((type == DPCODEC_INT && (kind & ~7u)) || k > HEADLOG_DEC_MAX ||
            ((kind & HEADLOG_K_BITS_MODE) && k)) {
            *why = "bad point kind";
            return false;
        }
        if (headlog_kind_domain((unsigned)kind) != headlog_kind_domain(st->kind))
            prev = 0;
    }
    if (kind & HEADLOG_K_BITS_MODE) {
        if (!headlog_get_xor(r, prev, &x, why))
            return false;
    } else {
        unsigned wd = st->w;
        if (!headlog_br_get(r, 1, &b))
            return false;
        if (b) {
            uint64_t c;
            if (!headlog_br_get(r, 6, &c))
                return false;
            wd = c == 63 ? 64 : (unsigned)c;
            st->w = (uint8_t)wd;
        }
        if (!headlog_br_get_wide(r, wd, &zz))
            return false;
        x = prev + (uint64_t)coding_unzigzag(zz);
    }
    return headlog_point3_done(st, dt, t, kind, x, pt, why);
}

/* What headlog_get_point3() read: the point (time t, kind, value x) into *pt and st. */
static bool headlog_point3_done(struct headlog_sstate *st, uint64_t dt, uint64_t t, uint64_t kind,
                                uint64_t x, struct dpcodec_point *pt, const char **why)
{
    *pt = (struct dpcodec_point){
        .ts_ms = (int64_t)t, .type = (enum dpcodec_type)(kind & 3), .ms = (kind & 4) != 0};
    if ((kind & 3) == DPCODEC_INT) {
        pt->i = (int64_t)x;
    } else if (kind & HEADLOG_K_BITS_MODE) {
        memcpy(&pt->f, &x, 8);
    } else {
        int64_t m = (int64_t)x;
        if (m <= -(1LL << 53) || m >= 1LL << 53) {
            *why = "bad decimal value";
            return false;
        }
        pt->f = (double)m / headlog_pow10[kind >> HEADLOG_K_DEC_SHIFT];
    }
    if ((kind & 3) == HEADLOG_K_REAL)
        pt->type = headlog_float_exact(pt->f) ? DPCODEC_FLOAT : DPCODEC_DOUBLE;
    st->ts_ms = (int64_t)t;
    st->dt_ms = (int64_t)dt;
    st->v = x;
    st->kind = (uint8_t)kind;
    return true;
}

/* ---- open / close ------------------------------------------------------------------------ */

static int headlog_open_mode(const char *dir, bool read_only, const struct headlog_options *ho,
                             struct headlog **out, struct ct_err *err)
{
    struct headlog *l = calloc(1, sizeof(*l));
    if (!l || !(l->dir = strdup(dir))) {
        free(l);
        return ct_err_set(err, CT_ENOMEM, "cannot allocate the head log");
    }
    pthread_mutex_init(&l->order_mu, NULL);
    pthread_mutex_init(&l->mu, NULL);
    l->read_only = read_only;
    if (!read_only && mkdir(dir, 0700) != 0 && errno != EEXIST) {
        ct_err_set(err, CT_EIO, "cannot create %s: %s", dir, strerror(errno));
        goto fail;
    }
    struct wal_options o = {.segment_bytes = ho && ho->segment_bytes ? ho->segment_bytes
                                                                     : HEADLOG_SEGMENT_BYTES};
    if ((read_only ? wal_open_read_only(dir, &o, &l->wal, err)
                   : wal_open_mapped(dir, &o, &l->wal, err)) != CT_OK) {
        ct_err_prefix(err, "head log");
        goto fail;
    }
    /* the mark after the segments are listed: a writer deleting segments meanwhile wrote a mark
     * covering them first, so every listed record past this mark has its dictionary listed */
    if (headlog_mark_read_found(dir, &l->released_seq, &l->mark_found, err) != CT_OK)
        goto fail;
    l->next_seq = l->released_seq + 1;
    l->released_before_s = INT64_MIN;
    l->st.released_seq = l->released_seq;
    *out = l;
    return CT_OK;
fail:
    wal_close(l->wal);
    pthread_mutex_destroy(&l->mu);
    pthread_mutex_destroy(&l->order_mu);
    free(l->dir);
    free(l);
    return err->code;
}

int headlog_open(const char *dir, struct headlog **out, struct ct_err *err)
{
    return headlog_open_mode(dir, false, NULL, out, err);
}

int headlog_open_opts(const char *dir, const struct headlog_options *o, struct headlog **out,
                      struct ct_err *err)
{
    return headlog_open_mode(dir, false, o, out, err);
}

int headlog_open_read_only(const char *dir, struct headlog **out, struct ct_err *err)
{
    return headlog_open_mode(dir, true, NULL, out, err);
}

void headlog_close(struct headlog *l)
{
    if (!l)
        return;
    wal_close(l->wal);
    pthread_mutex_destroy(&l->mu);
    pthread_mutex_destroy(&l->order_mu);
    headlog_dict_free(&l->dict);
    free(l->starts);
    free(l->hours);
    free(l->dir);
    free(l);
}

/* Notes that record seq holds a point of hour base_s; *added (NULL allowed) is set when the hour
 * was not held before. REQUIRES: mu held. */
static int headlog_note_hour(struct headlog *l, int64_t base_s, uint64_t seq, bool *added,
                             struct ct_err *err)
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
    if (added)
        *added = true;
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
    uint64_t first_seq;       /* the first record replayed (0 before it) */
    struct headlog_dict dict; /* of the records being replayed */
};

/* A point replayed: into the head, or to the refused function. */
static int headlog_replay_point(struct headlog_replay_ctx *c, uint64_t seq, const uint8_t *ts,
                                size_t tl, const struct dpcodec_point *pt, struct ct_err *err)
{
    int rc = headlog_note_hour(c->l, rowkey_base_hour_s(pt->ts_ms / 1000), seq, NULL, err);
    if (rc != CT_OK)
        return rc;
    enum head_result res;
    rc = head_append(c->h, ts, tl, pt, &res, err);
    if (rc == CT_OK && res != HEAD_TAKEN)
        rc = c->fn(c->arg, ts, tl, pt, res, err);
    if (rc == CT_OK)
        c->npoints++;
    return rc;
}

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

/* A version 1 batch's body [p, end) (after the version byte). */
static int headlog_replay_v1(struct headlog_replay_ctx *c, uint64_t seq, const uint8_t *p,
                             const uint8_t *end, struct ct_err *err)
{
    uint64_t nseries, npoints, v;
    size_t k = coding_get_varint64(p, end, &nseries);
    if (!k || nseries > (size_t)(end - p))
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
        if ((rc = headlog_replay_point(c, seq, ts[id], tl[id], &pt, err)) != CT_OK)
            goto out;
    }
    if (p != end)
        rc = headlog_bad(err, seq, "bytes after the last point");
out:
    free(ts);
    free(tl);
    return rc;
}

/* One point of a version 2 points section at *pp (< end); *id is its local id. */
static int headlog_get_point(const uint8_t **pp, const uint8_t *end, uint64_t nseries,
                             int64_t *prev_id, int64_t *prev_ts, struct dpcodec_point *pt,
                             const char **why)
{
    const uint8_t *p = *pp;
    uint64_t v = 0, hdr, t;
    size_t k = coding_get_varint64(p, end, &hdr);
    if (!k || (t = (uint64_t)*prev_ts + (uint64_t)coding_unzigzag(hdr >> 6)) >
                  (uint64_t)HEADLOG_MAX_TS_MS) {
        *why = "bad timestamp";
        return CT_ECORRUPT;
    }
    p += k;
    if (!(hdr & 32u)) {
        if (!(k = coding_get_varint64(p, end, &v))) {
            *why = "bad series id";
            return CT_ECORRUPT;
        }
        p += k;
    }
    uint64_t id = (uint64_t)(*prev_id + 1) + (uint64_t)coding_unzigzag(v);
    if (id >= nseries) {
        *why = "undefined series id";
        return CT_ECORRUPT;
    }
    *prev_id = (int64_t)id;
    unsigned type = (hdr >> 1) & 3, vmode = (hdr >> 3) & 3;
    if (type > DPCODEC_DOUBLE || vmode == 3 || (type == DPCODEC_INT && vmode != 0)) {
        *why = "bad point kind";
        return CT_ECORRUPT;
    }
    *prev_ts = (int64_t)t;
    *pt = (struct dpcodec_point){
        .ts_ms = (int64_t)t, .type = (enum dpcodec_type)type, .ms = (hdr & 1) != 0};
    if (type == DPCODEC_INT || vmode == 2) {
        if (!(k = coding_get_varint64(p, end, &v))) {
            *why = "bad value";
            return CT_ECORRUPT;
        }
        p += k;
        if (type == DPCODEC_INT) {
            pt->i = coding_unzigzag(v);
        } else {
            int64_t m = coding_unzigzag(v >> 4);
            if ((v & 15) > HEADLOG_DEC_MAX || m <= -(1LL << 53) || m >= 1LL << 53) {
                *why = "bad decimal value";
                return CT_ECORRUPT;
            }
            pt->f = (double)m / headlog_pow10[v & 15];
        }
    } else if (vmode == 1) {
        if (end - p < 4) {
            *why = "truncated value";
            return CT_ECORRUPT;
        }
        uint32_t fb = coding_get_le32(p);
        float f;
        memcpy(&f, &fb, 4);
        pt->f = f;
        p += 4;
    } else {
        if (end - p < 8) {
            *why = "truncated value";
            return CT_ECORRUPT;
        }
        v = coding_get_le64(p);
        memcpy(&pt->f, &v, 8);
        p += 8;
    }
    *pp = p;
    return CT_OK;
}

/* A record's dictionary reference (back, headlog_format.h): 0 starts a new dictionary of
 * `version` at seq; else the record names the dictionary c holds, of the same version, or is
 * corrupt, unless that dictionary began in a released segment deleted since: *skip, the record
 * is passed over. */
static int headlog_dict_ref(struct headlog_replay_ctx *c, uint64_t seq, uint64_t back,
                            unsigned version, bool released, bool *skip, struct ct_err *err)
{
    struct headlog *l = c->l;
    struct headlog_dict *d = &c->dict;
    uint64_t start = seq - back;
    if (back == 0) {
        headlog_dict_reset(d, seq);
        d->version = version;
        return headlog_push_start(l, seq, err);
    }
    if (d->start_seq == start && d->version == version)
        return CT_OK;
    if (d->start_seq != start && start < c->first_seq && (released || !l->mark_found)) {
        *skip = true;
        return CT_OK;
    }
    char why[96];
    snprintf(why, sizeof(why), "its series dictionary (record %" PRIu64 ") is not in the log",
             start);
    return headlog_bad(err, seq, why);
}

/* Reads a record's series table (the codes of headlog_format.h, the same in versions 2 and 3)
 * at *p: nseries dictionary ids into ids, adding the new entries to d (their state, version 3,
 * starting at base_ms); *p is left after the table. */
static int headlog_read_table(struct headlog_dict *d, const uint8_t **pp, const uint8_t *end,
                              uint64_t nseries, int64_t base_ms, uint32_t *ids, uint64_t seq,
                              struct ct_err *err)
{
    const uint8_t *p = *pp;
    size_t k;
    int64_t prev = -1;
    for (uint64_t s = 0; s < nseries;) {
        uint64_t code, id;
        if (!(k = coding_get_varint64(p, end, &code)))
            return headlog_bad(err, seq, "truncated series table");
        p += k;
        if ((code & 3) == 2) { /* a run: (code >> 2) + 2 entries, each the one before + 1 */
            uint64_t nrun = (code >> 2) + 2;
            if (nrun > nseries - s || (uint64_t)(prev + 1) + nrun > d->n)
                return headlog_bad(err, seq, "undefined series id");
            for (uint64_t j = 0; j < nrun; j++)
                ids[s++] = (uint32_t)++prev;
            continue;
        }
        if (code & 1) {
            if (code != 1 || p >= end || p[0] == 0 || (size_t)(end - p) < 1u + p[0])
                return headlog_bad(err, seq, "truncated series");
            uint32_t nid;
            int rc = headlog_dict_add(d, p + 1, p[0], 0, base_ms, false, &nid, err);
            if (rc != CT_OK)
                return rc;
            id = nid;
            p += 1 + p[0];
        } else {
            id = (uint64_t)(prev + 1) + (uint64_t)coding_unzigzag(code >> 2);
            if (id >= d->n)
                return headlog_bad(err, seq, "undefined series id");
        }
        ids[s++] = (uint32_t)id;
        prev = (int64_t)id;
    }
    *pp = p;
    return CT_OK;
}

/* A version 2 batch's body [p, end) (after the version byte); a released record's series table
 * still feeds the dictionary. */
static int headlog_replay_v2(struct headlog_replay_ctx *c, uint64_t seq, const uint8_t *p,
                             const uint8_t *end, struct ct_err *err)
{
    struct headlog *l = c->l;
    struct headlog_dict *d = &c->dict;
    uint64_t back, npoints, plen, nseries;
    size_t k;
    if (!(k = coding_get_varint64(p, end, &back)) || back >= seq)
        return headlog_bad(err, seq, "bad dictionary reference");
    p += k;
    if (!(k = coding_get_varint64(p, end, &npoints)) || npoints > (size_t)(end - p))
        return headlog_bad(err, seq, "bad point count");
    p += k;
    if (!(k = coding_get_varint64(p, end, &plen)) || plen > (size_t)(end - p) - k)
        return headlog_bad(err, seq, "bad points length");
    p += k;
    const uint8_t *pts = p, *pend = p + plen;
    p = pend;
    bool released = seq <= l->released_seq, skip = false;
    int drc = headlog_dict_ref(c, seq, back, HEADLOG_VERSION_2, released, &skip, err);
    if (drc != CT_OK || skip)
        return drc;
    if (!(k = coding_get_varint64(p, end, &nseries)) || nseries > npoints)
        return headlog_bad(err, seq, "bad series count");
    p += k;
    uint32_t *ids = malloc((nseries ? nseries : 1) * sizeof(*ids));
    if (!ids)
        return ct_err_set(err, CT_ENOMEM, "cannot replay head log record %" PRIu64, seq);
    int rc = headlog_read_table(d, &p, end, nseries, 0, ids, seq, err);
    if (rc != CT_OK)
        goto out;
    if (p != end) {
        rc = headlog_bad(err, seq, "bytes after the series table");
        goto out;
    }
    if (released)
        goto out; /* its points are in the store */
    int64_t prev_id = -1, prev_ts = 0;
    const char *why = NULL;
    for (uint64_t i = 0; i < npoints; i++) {
        struct dpcodec_point pt;
        if (pts >= pend ||
            headlog_get_point(&pts, pend, nseries, &prev_id, &prev_ts, &pt, &why) != CT_OK) {
            rc = headlog_bad(err, seq, why ? why : "truncated points");
            goto out;
        }
        uint32_t id = ids[prev_id];
        rc = headlog_replay_point(c, seq, d->arena + d->off[id], d->tlen[id], &pt, err);
        if (rc != CT_OK)
            goto out;
    }
    if (pts != pend)
        rc = headlog_bad(err, seq, "bytes after the last point");
out:
    free(ids);
    return rc;
}

/* A version 3 batch's body [p, end) (after the version byte). A released record still feeds the
 * dictionary: its table and its points' state. */
static int headlog_replay_v3(struct headlog_replay_ctx *c, uint64_t seq, const uint8_t *p,
                             const uint8_t *end, struct ct_err *err)
{
    struct headlog *l = c->l;
    struct headlog_dict *d = &c->dict;
    uint64_t back, npoints, base, nseries;
    size_t k;
    if (!(k = coding_get_varint64(p, end, &back)) || back >= seq)
        return headlog_bad(err, seq, "bad dictionary reference");
    p += k;
    if (!(k = coding_get_varint64(p, end, &npoints)) || npoints > 8 * (size_t)(end - p))
        return headlog_bad(err, seq, "bad point count");
    p += k;
    if (!(k = coding_get_varint64(p, end, &base)) || base > (uint64_t)HEADLOG_MAX_TS_MS)
        return headlog_bad(err, seq, "bad base time");
    p += k;
    if (!(k = coding_get_varint64(p, end, &nseries)) || nseries > npoints)
        return headlog_bad(err, seq, "bad series count");
    p += k;
    bool released = seq <= l->released_seq, skip = false;
    int drc = headlog_dict_ref(c, seq, back, HEADLOG_VERSION, released, &skip, err);
    if (drc != CT_OK || skip)
        return drc;
    uint32_t *ids = malloc((nseries ? nseries : 1) * sizeof(*ids));
    if (!ids)
        return ct_err_set(err, CT_ENOMEM, "cannot replay head log record %" PRIu64, seq);
    int rc = headlog_read_table(d, &p, end, nseries, (int64_t)base, ids, seq, err);
    if (rc != CT_OK)
        goto out;
    /* the points, series by series in table order */
    struct headlog_br r = {.p = p, .end = end};
    uint64_t left = npoints;
    const char *why = "truncated points";
    for (uint64_t s = 0; s < nseries; s++) {
        unsigned z = 0;
        uint64_t lo = 0, cnt;
        if (npoints != nseries && (!headlog_br_zeros(&r, 31, &z) || !headlog_br_get(&r, z, &lo))) {
            rc = headlog_bad(err, seq, "bad point count of a series");
            goto out;
        }
        cnt = (1ULL << z) | lo;
        if (cnt > left) {
            rc = headlog_bad(err, seq, "more points than the record holds");
            goto out;
        }
        left -= cnt;
        uint32_t id = ids[s];
        struct headlog_sstate *st = &d->ss[id];
        for (uint64_t j = 0; j < cnt; j++) {
            struct dpcodec_point pt;
            if (!headlog_get_point3(&r, st, &pt, &why)) {
                rc = headlog_bad(err, seq, why);
                goto out;
            }
            if (!released && (rc = headlog_replay_point(c, seq, d->arena + d->off[id], d->tlen[id],
                                                        &pt, err)) != CT_OK)
                goto out;
        }
    }
    if (left != 0)
        rc = headlog_bad(err, seq, "fewer points than the record holds");
    else if (r.p != r.end || r.nb >= 8 || r.acc != 0)
        rc = headlog_bad(err, seq, "bytes after the last point");
out:
    free(ids);
    return rc;
}

static int headlog_replay_record(void *arg, uint64_t seq, const uint8_t *p, size_t len,
                                 struct ct_err *err)
{
    struct headlog_replay_ctx *c = arg;
    struct headlog *l = c->l;
    if (c->first_seq == 0)
        c->first_seq = seq;
    if (seq >= l->next_seq)
        l->next_seq = seq + 1;
    const uint8_t *end = p + len;
    if (len >= 1 && p[0] == HEADLOG_VERSION)
        return headlog_replay_v3(c, seq, p + 1, end, err);
    if (len >= 1 && p[0] == HEADLOG_VERSION_2)
        return headlog_replay_v2(c, seq, p + 1, end, err);
    if (seq <= l->released_seq)
        return CT_OK; /* its points are in the store */
    if (len >= 1 && p[0] == HEADLOG_DELETE)
        return headlog_replay_delete(c, seq, p + 1, end, err);
    if (len >= 1 && p[0] == HEADLOG_VERSION_1)
        return headlog_replay_v1(c, seq, p + 1, end, err);
    return len < 1 ? headlog_bad(err, seq, "empty")
                   : ct_err_set(err, CT_ECORRUPT,
                                "head log record %" PRIu64
                                ": unsupported version %u (this build reads %d to %d)",
                                seq, p[0], HEADLOG_VERSION_1, HEADLOG_VERSION);
}

int headlog_replay(struct headlog *l, struct head *h, headlog_refused_fn fn, void *arg,
                   uint64_t *npoints, struct ct_err *err)
{
    struct headlog_replay_ctx c = {.l = l, .h = h, .fn = fn, .arg = arg};
    pthread_mutex_lock(&l->order_mu);
    pthread_mutex_lock(&l->mu);
    /* the replayed chunks may hold points a hand-off before the restart already stored: their
     * hand-off merges with the stored row (head_hour_fn's replayed) */
    head_set_replay(h, true);
    int rc = wal_replay(l->wal, headlog_replay_record, &c, err);
    head_set_replay(h, false);
    l->replayed = true;
    pthread_mutex_unlock(&l->mu);
    pthread_mutex_unlock(&l->order_mu);
    headlog_dict_free(&c.dict);
    if (rc != CT_OK)
        ct_err_prefix(err, "replay head log %s", l->dir);
    if (npoints)
        *npoints = c.npoints;
    return rc;
}

static int headlog_wal_put(struct headlog *l, uint64_t seq, const uint8_t *buf, size_t len,
                           enum wal_sync sync, bool *had, struct ct_err *err);
static int headlog_wal_done(struct headlog *l, int rc, bool had, enum wal_sync sync,
                            struct ct_err *err);

#define HEADLOG_HDR_MAX (1 + 4 * CODING_VARINT64_MAX)

/* Room for the record of pts (local series first[0..nseries)). */
static size_t headlog_bound(const struct head_point *pts, size_t n, const uint32_t *first,
                            size_t nseries)
{
    size_t b = HEADLOG_HDR_MAX + n * ((HEADLOG_POINT3_BITS + 7) / 8) + 16;
    for (size_t s = 0; s < nseries; s++)
        b += CODING_VARINT64_MAX + 1 + pts[first[s]].tlen + 9; /* + its point count */
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
        if (pts[i].tlen == 0 || pts[i].tlen > HEAD_MAX_TSUID || pts[i].p.ts_ms < 0 ||
            pts[i].p.ts_ms > HEADLOG_MAX_TS_MS || (unsigned)pts[i].p.type > DPCODEC_DOUBLE)
            return ct_err_set(err, CT_EINVAL,
                              "bad point %zu for the head log (TSUID length %zu, time %lld ms)", i,
                              pts[i].tlen, (long long)pts[i].p.ts_ms);
    size_t nslots = 16;
    while (!given && nslots < 2 * n)
        nslots *= 2;
    uint32_t *slots = given ? NULL : calloc(nslots, sizeof(*slots)); /* series id + 1 */
    uint32_t *first = malloc(n * sizeof(*first)); /* point index defining series id */
    uint32_t *hs = malloc(n * sizeof(*hs));       /* per series: its TSUID's hash */
    uint32_t *ids = given ? NULL : malloc(n * sizeof(*ids));
    uint8_t *buf = NULL;
    int rc = CT_OK;
    if (!first || !hs || (!given && (!slots || !ids))) {
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
    for (uint32_t s = 0; given && s < nseries; s++)
        hs[s] = headlog_hash(pts[first[s]].tsuid, pts[first[s]].tlen);
    for (size_t i = 0; !given && i < n; i++) {
        uint32_t hv = headlog_hash(pts[i].tsuid, pts[i].tlen);
        size_t s = hv & (nslots - 1);
        for (;; s = (s + 1) & (nslots - 1)) {
            if (!slots[s]) {
                hs[nseries] = hv;
                first[nseries] = (uint32_t)i;
                slots[s] = ++nseries;
                break;
            }
            const struct head_point *o = &pts[first[slots[s] - 1]];
            if (hs[slots[s] - 1] == hv && o->tlen == pts[i].tlen &&
                !memcmp(o->tsuid, pts[i].tsuid, o->tlen))
                break;
        }
        ids[i] = slots[s] - 1;
    }
    /* the points grouped by series (stable: a series' points keep their order; with one point a
     * series, local ids are point indexes: no grouping), and room */
    bool one = n == nseries;
    uint32_t *cnt = one ? NULL : calloc((size_t)nseries + 1, sizeof(*cnt));
    uint32_t *order = one ? NULL : malloc(n * sizeof(*order));
    uint32_t *dids = malloc((nseries ? nseries : 1) * sizeof(*dids));
    size_t cap = headlog_bound(pts, n, first, nseries), tsuid_bytes = 0;
    if ((!one && (!cnt || !order)) || !dids || !(buf = malloc(cap))) {
        free(cnt);
        free(order);
        free(dids);
        rc = ct_err_set(err, CT_ENOMEM, "cannot encode a head log record of %zu points", n);
        goto out;
    }
    const uint32_t *lid = given ? given : ids;
    for (size_t i = 0; !one && i < n; i++)
        cnt[lid[i] + 1]++;
    for (uint32_t s = 0; !one && s < nseries; s++)
        cnt[s + 1] += cnt[s]; /* cnt[s]: where series s's points begin in order */
    for (size_t i = 0; !one && i < n; i++)
        order[cnt[lid[i]]++] = (uint32_t)i; /* after this, cnt[s] is where series s + 1's begin */
    for (uint32_t s = 0; s < nseries; s++)
        tsuid_bytes += pts[first[s]].tlen;

    /* the header, the series table and the points against the dictionary's state, and the
     * hand-off to the engine log, in sequence order */
    pthread_mutex_lock(&l->order_mu);
    bool new_hour = false;
    pthread_mutex_lock(&l->mu);
    uint64_t seq = l->next_seq++;
    int64_t prev_h = INT64_MIN; /* a batch's points are mostly of one hour: noted once */
    for (size_t i = 0; i < n && rc == CT_OK; i++) {
        int64_t hr = rowkey_base_hour_s(pts[i].p.ts_ms / 1000);
        if (hr != prev_h)
            rc = headlog_note_hour(l, hr, seq, &new_hour, err);
        prev_h = hr;
    }
    pthread_mutex_unlock(&l->mu);
    struct headlog_dict *d = &l->dict;
    if (rc == CT_OK &&
        (d->start_seq == 0 || new_hour || (size_t)d->n + nseries > HEADLOG_DICT_MAX_SERIES ||
         d->alen + tsuid_bytes > HEADLOG_DICT_MAX_BYTES)) {
        headlog_dict_reset(d, seq);
        rc = headlog_push_start(l, seq, err);
        if (rc != CT_OK)
            d->start_seq = 0;
    }
    int64_t base = pts[one ? 0 : order[0]].p.ts_ms; /* new entries' state starts at this time */
    uint8_t *p = buf;
    *p++ = HEADLOG_VERSION;
    p += coding_put_varint64(p, seq - d->start_seq);
    p += coding_put_varint64(p, n);
    p += coding_put_varint64(p, (uint64_t)base);
    p += coding_put_varint64(p, nseries);
    int64_t prev = -1;
    uint64_t run = 0; /* entries prev - run + 1 .. prev not written yet: each the one before + 1 */
    for (uint32_t s = 0; s <= nseries && rc == CT_OK; s++) {
        const struct head_point *o = s < nseries ? &pts[first[s]] : NULL;
        uint32_t id = o ? headlog_dict_find(d, o->tsuid, o->tlen, hs[s]) : UINT32_MAX;
        if (o && id != UINT32_MAX && (int64_t)id == prev + 1) {
            run++;
            prev = id;
            dids[s] = id;
            continue;
        }
        if (run == 1)
            *p++ = 0; /* one entry, the previous id + 1 */
        else if (run > 1)
            p += coding_put_varint64(p, (run - 2) << 2 | 2);
        run = 0;
        if (!o)
            break;
        if (id != UINT32_MAX) {
            p += coding_put_varint64(p, coding_zigzag((int64_t)id - (prev + 1)) << 2);
        } else if ((rc = headlog_dict_add(d, o->tsuid, o->tlen, hs[s], base, true, &id, err)) ==
                   CT_OK) {
            *p++ = 1;
            *p++ = (uint8_t)o->tlen;
            memcpy(p, o->tsuid, o->tlen);
            p += o->tlen;
        }
        prev = id;
        dids[s] = id;
    }
    if (rc == CT_OK) {
        struct headlog_bw w = {.p = p};
        size_t i = 0;
        for (uint32_t s = 0; one && s < nseries; s++) /* series s's point is point s */
            headlog_put_point3(&w, &pts[s].p, &d->ss[dids[s]]);
        for (uint32_t s = 0; !one && s < nseries; s++) {
            size_t e = cnt[s]; /* series s's points are order[i..e) */
            struct headlog_sstate *st = &d->ss[dids[s]];
            headlog_put_count(&w, (uint32_t)(e - i));
            for (; i < e; i++)
                headlog_put_point3(&w, &pts[order[i]].p, st);
        }
        p = headlog_bw_end(&w);
    }
    free(cnt);
    free(order);
    free(dids);
    bool had = false, put = rc == CT_OK;
    size_t len = 0;
    if (rc == CT_OK) {
        len = (size_t)(p - buf);
        rc = headlog_wal_put(l, seq, buf, len, sync, &had, err);
    }
    if (rc != CT_OK)
        d->start_seq = 0; /* what it defined may not be in the log: the next record starts anew */
    pthread_mutex_unlock(&l->order_mu);
    if (put)
        rc = headlog_wal_done(l, rc, had, sync, err);
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
    free(hs);
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
    pthread_mutex_lock(&l->order_mu);
    pthread_mutex_lock(&l->mu);
    uint64_t seq = l->next_seq++;
    pthread_mutex_unlock(&l->mu);
    bool had = false;
    int rc = headlog_wal_put(l, seq, buf, len, sync, &had, err);
    if (rc != CT_OK)
        l->dict.start_seq = 0; /* records must follow each other within a dictionary */
    pthread_mutex_unlock(&l->order_mu);
    rc = headlog_wal_done(l, rc, had, sync, err);
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

/* wal_append() under the error state, the first half (REQUIRES: order_mu held): a full disk left
 * by an earlier append is lifted first (the append tries again); the record is copied into the
 * log (an FSYNC append's sync waits for headlog_wal_done(), outside order_mu, so that concurrent
 * appends share it). *had tells whether the state was seen set. */
static int headlog_wal_put(struct headlog *l, uint64_t seq, const uint8_t *buf, size_t len,
                           enum wal_sync sync, bool *had, struct ct_err *err)
{
    *had = atomic_load_explicit(&l->has_err, memory_order_acquire);
    if (*had) {
        bool recoverable = false;
        struct ct_err e;
        if (wal_error_state(l->wal, &recoverable) != CT_OK && recoverable &&
            wal_clear_error(l->wal, &e) != CT_OK) {
            /* another append is extending the segment: the append below waits for it */
        }
    }
    return wal_append(l->wal, seq, buf, len, sync == WAL_SYNC_FSYNC ? WAL_SYNC_WRITE : sync, err);
}

/* The second half, without order_mu: the sync of an FSYNC append; a failure is recorded, a
 * success after one clears it. Returns rc or the sync's error. */
static int headlog_wal_done(struct headlog *l, int rc, bool had, enum wal_sync sync,
                            struct ct_err *err)
{
    if (rc == CT_OK && sync == WAL_SYNC_FSYNC)
        rc = wal_sync(l->wal, err);
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
    pthread_mutex_lock(&l->order_mu);
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
    bool all = rel >= l->next_seq - 1;
    pthread_mutex_unlock(&l->mu);
    /* segments go only up to the start of the dictionary of record rel + 1 (invariant 5) */
    uint64_t wal_rel = rel;
    if (all) {
        l->dict.start_seq = 0; /* every record released: the next one starts a dictionary */
        l->nstarts = 0;
    } else {
        size_t j = l->nstarts;
        while (j > 0 && l->starts[j - 1] > rel + 1)
            j--;
        if (j > 0) {
            if (l->starts[j - 1] - 1 < wal_rel)
                wal_rel = l->starts[j - 1] - 1;
            memmove(l->starts, l->starts + j - 1, (l->nstarts - (j - 1)) * sizeof(*l->starts));
            l->nstarts -= j - 1;
        }
    }
    pthread_mutex_unlock(&l->order_mu);
    if (rc == CT_OK)
        rc = wal_release_upto(l->wal, wal_rel, err);
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
