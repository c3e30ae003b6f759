/* head.c - the per-series ingest head (schema/head.h): a hash table of series, each with up to
 * HEAD_MAX_HOURS chunks, each chunk a bit stream of one base hour's points.
 *
 * Chunk bit stream (most significant bit first; format described in docs/head.md):
 *   per point, in time order:
 *     kind   point 0: 3 bits (type 2 bits: 0 int, 1 float, 2 double; ms 1 bit);
 *            later:   '0' = as the previous point, '1' + 3 bits as above
 *     time   point 0: 22 bits, ts_ms - base_ms (< 3 600 000 < 2^22)
 *            point 1: 22 bits, delta = ts_ms - previous ts_ms (> 0)
 *            later:   zig-zag of delta-of-delta z: '0' z = 0, '10' + 7 bits, '110' + 12 bits,
 *                     '1110' + 16 bits, '1111' + 24 bits (|dod| < 2^22 within an hour)
 *     value  int:     zig-zag of v - previous int of the chunk (0 at first; two's complement
 *                     wrap-around, so any int64 is exact): '0' zero, '10' + 4 bits, '110' + 12,
 *                     '1110' + 32, '1111' + 64
 *            float/double: x = bits(v) XOR bits(previous float/double of the chunk; 0 at first)
 *                     '0' x = 0; '10' + the previous window's bits of x (x fits in it: leading
 *                     and trailing zeros at least the window's); '11' + 6 bits leading zeros +
 *                     6 bits (significant length - 1) + the significant bits (a new window)
 * Invariants: (1) a chunk's points are strictly increasing in time and all inside [base_s, base_s +
 * 3600); (2) a series' chunks are sorted by base_s and distinct; a chunk opened for an hour >=
 * closed_before_s (a live chunk) stays >= it unless a hand-off failed; a chunk opened for an hour <
 * closed_before_s is a backfill chunk (only with backfill on), never of an hour < its series'
 * done_s at the time it was opened; every chunk is >= oldest_lb_s; (3) bytes == the sum of every
 * allocation the head holds; (4) a chunk always has HEAD_POINT_MAX_BITS free bits after its last
 * point before another point is written (it is grown first, so a failed allocation leaves the chunk
 * as it was), and every byte of its buffer is initialised (zeroed when added), as head_peek reads
 * whole words up to cap; (5) a series record is freed only in head_rehash (and head_free), which
 * moves gen: a head_ref {slot, gen} of the current gen names the series in that slot, so a stale
 * one (its series handed off and freed, or moved) is never followed; (6) a chunk that took a point
 * while h->replay was set (head_set_replay) stays marked replayed until it is handed off, so its
 * sink merges it with the stored row; (7) a point at a timestamp its chunk holds replaces that
 * point (head_chunk_rewrite: the chunk is encoded again), so a chunk never holds two points of one
 * timestamp and holds the latest write.
 * Locking: h->mu guards everything, gen included (refs are checked under it). */
#include <assert.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "schema/head.h"
#include "storage/coding.h"
#include "storage/hash.h"

#define HEAD_HOUR_MS        3600000LL
#define HEAD_TS_BITS        22
#define HEAD_POINT_MAX_BITS 128 /* kind 4 + time 28 + value 78, rounded up */
#define HEAD_CHUNK_MIN      32  /* bytes of a new chunk's buffer */
/* Most bytes a new chunk starts with (from its series' last hour: head_series.next_cap). */
#define HEAD_NEXT_CAP_MAX 65536
/* Chunks one sealed pass step hands to its sink between two holds of the lock. */
#define HEAD_PASS_CHUNKS 256

struct head_chunk {
    int64_t base_s;
    int64_t touched_ms; /* the head's clock (head_set_clock_ms) at the last append */
    bool backfill;      /* opened for an hour already closed (base_s < closed_before_s) */
    bool replayed;      /* took a point during a replay of the head log (head_set_replay) */
    bool sealed;        /* being handed off without the lock (struct head_seal) */
    uint8_t *buf;
    size_t cap; /* bytes of buf */
    uint64_t nbits;
    uint32_t n;
    /* encoder state: the last point */
    uint8_t last_kind;
    uint8_t tail; /* buf[nbits / 8] when nbits % 8 != 0: its used bits first, zeros after */
    uint8_t win_lead, win_len; /* XOR window; win_len 0 = none yet */
    int64_t last_ts, last_delta;
    uint64_t last_i, last_f;
};

struct head_series {
    uint64_t hash;
    /* an hour < done_s this series holds no chunk of was handed off (or skipped) in this run:
     * its points are HEAD_LATE (the series' record, and so this mark, lives while it holds a
     * chunk; it is freed at the next table rebuild after its last chunk went) */
    int64_t done_s;
    uint8_t tlen;
    uint8_t nchunks;
    bool queued;       /* in h->moved (never freed while it is) */
    uint32_t next_cap; /* the buffer size its last handed-off chunk reached (0: none) */
    struct head_chunk chunks[HEAD_MAX_HOURS];
    uint8_t tsuid[]; /* tlen bytes */
};

struct head {
    pthread_mutex_t mu;
    struct head_series **slots; /* open addressing, linear probing; NULL = empty */
    size_t nslots;              /* 0 or a power of two */
    /* keys[i]: the first 8 TSUID bytes of slots[i]'s series (zero padded), so listing a
     * metric's series (head_each_series) reads one dense array, not every series record */
    uint64_t *keys;
    size_t nseries;
    size_t nchunks;
    uint64_t npoints;
    size_t bytes;
    int64_t closed_before_s;
    int64_t newest_s; /* the newest base hour a chunk was ever opened for (INT64_MIN: none) */
    int64_t oldest_lb_s; /* <= every chunk's base hour (recomputed by each hand-off pass) */
    /* backfill (head_set_backfill): points of closed hours taken into backfill chunks */
    bool backfill;
    size_t bf_max_bytes;   /* no new backfill chunk while bytes >= it (0: no bound) */
    head_hour_fn bf_room;  /* hands off a series' oldest closed chunk to make room */
    void *bf_room_arg;
    int64_t now_ms;        /* head_set_clock_ms: stamps touched_ms */
    bool replay;           /* head_set_replay: chunks taking points are marked replayed */
    struct dpcodec_point *dec; /* decode buffer of room hand-offs and rewrites, dec_cap points */
    size_t dec_cap;
    uint64_t bf_room_fail; /* room hand-offs the sink refused */
    uint64_t seed;
    /* the table's generation: moves (never to 0) whenever the table is rebuilt (head_rehash:
     * slots move, series without chunks are freed), so a head_ref of an older one is stale */
    uint32_t gen;
    head_delete_log_fn delete_log; /* head_set_delete_log (NULL: none) */
    void *delete_log_arg;
    /* sealed passes (head_close_hours_idle, head_handoff_moved), one at a time under pass_mu:
     * seals and pdec (its decode buffer, pdec_cap points; its bytes counted under mu) belong to
     * the pass; nsealed chunks are sealed; seal_cv is broadcast whenever a pass step ends */
    pthread_mutex_t pass_mu;
    pthread_cond_t seal_cv;
    size_t nsealed;
    struct head_seal *seals; /* HEAD_PASS_CHUNKS of them */
    struct dpcodec_point *pdec;
    size_t pdec_cap;
    /* backfill series whose oldest chunk is ready to go in the background (head_moved_ready),
     * nmoved of moved_cap; moved_pub mirrors nmoved for head_moved_pending() */
    struct head_series **moved;
    size_t nmoved, moved_cap;
    _Atomic size_t moved_pub;
};

/* A chunk a pass hands to its sink without the head's lock: it stays in its series, readable
 * (head_copy, head_last) and counted, but takes no point, rewrite, deletion or other hand-off
 * until the pass drops it (handed off) or unseals it (the sink failed); an append or deletion
 * that needs it waits on seal_cv. */
struct head_seal {
    struct head_series *s; /* not freed while it holds a chunk */
    struct head_chunk c;   /* a copy: buf stays valid, as nothing grows or frees a sealed chunk */
};

/* ---- bits ------------------------------------------------------------------------------------ */

/* Writes the low `bits` bits of v (1..64) at the chunk's end, up to 56 bits per step: the
 * partly used last byte and the new bits are assembled in one 64-bit word and its first bytes
 * stored (only the bytes the bits reach, so nothing past the point's reserved room is written).
 * The partly used byte comes from c->tail, not from the buffer: with many series each append
 * goes to another chunk, whose buffer is rarely in cache, and a load from it stalls the writer
 * (a quarter of the writer's time at 10,000 series) where a store does not.
 * REQUIRES: room (invariant 4). */
static void head_put_bits(struct head_chunk *c, uint64_t v, unsigned bits)
{
    while (bits > 0) {
        unsigned take = bits > 56 ? 56 : bits;
        size_t byte = (size_t)(c->nbits >> 3);
        unsigned used = (unsigned)(c->nbits & 7);
        uint64_t part = (v >> (bits - take)) & ((1ULL << take) - 1);
        uint64_t w = (uint64_t)(used ? c->tail : 0) << 56;
        w |= part << (64 - used - take);
        uint8_t be[8];
        coding_put_be64(be, w);
        memcpy(c->buf + byte, be, (used + take + 7) / 8);
        c->tail = be[(used + take) >> 3]; /* the new partly used byte (any when none) */
        c->nbits += take;
        bits -= take;
    }
}

/* The next 64 bits from pos, the first one highest; at least the first 57 are the stream's.
 * One 8-byte load while those bytes are inside the buffer (its lim bytes, all initialised:
 * head_chunk_reserve zeroes what it adds), else byte by byte with zeros past lim. */
static inline uint64_t head_peek(const struct head_bitreader *r)
{
    size_t at = (size_t)(r->pos >> 3);
    uint64_t w = 0;
    if (at + sizeof(w) <= r->lim) {
        memcpy(&w, r->buf + at, sizeof(w));
        w = __builtin_bswap64(w);
    } else {
        for (size_t k = 0; k < sizeof(w); k++)
            w = w << 8 | (at + k < r->lim ? r->buf[at + k] : 0);
    }
    return w << (r->pos & 7);
}

/* Reads `bits` bits (1..64). The chunk was written by head_put_bits, so it never runs past end
 * unless the chunk is wrong: that is our bug, asserted. */
static inline uint64_t head_get_bits(struct head_bitreader *r, unsigned bits)
{
    assert(bits >= 1 && bits <= 64 && r->pos + bits <= r->end);
    if (bits > 57) { /* the high part, then the low 32 bits */
        uint64_t hi = head_peek(r) >> (64 - (bits - 32));
        r->pos += bits - 32;
        uint64_t lo = head_peek(r) >> 32;
        r->pos += 32;
        return hi << 32 | lo;
    }
    uint64_t v = head_peek(r) >> (64 - bits);
    r->pos += bits;
    return v;
}

/* A point's bits, gathered before they go into the chunk (at most HEAD_POINT_MAX_BITS), so a
 * point is written with two or three head_put_bits steps instead of one call per field. */
__extension__ typedef unsigned __int128 head_u128;
struct head_acc {
    head_u128 v; /* the last n bits, first one highest */
    unsigned n;
};

/* Appends the low `bits` bits of v (1..64). */
static inline void head_acc_put(struct head_acc *a, uint64_t v, unsigned bits)
{
    uint64_t mask = bits >= 64 ? ~0ULL : (1ULL << bits) - 1;
    a->v = (a->v << bits) | (v & mask);
    a->n += bits;
}

/* Writes the gathered bits to the chunk. REQUIRES: room (invariant 4). */
static void head_acc_flush(struct head_chunk *c, const struct head_acc *a)
{
    assert(a->n <= HEAD_POINT_MAX_BITS);
    if (a->n > 64) {
        head_put_bits(c, (uint64_t)(a->v >> 64), a->n - 64);
        head_put_bits(c, (uint64_t)a->v, 64);
    } else if (a->n > 0) {
        head_put_bits(c, (uint64_t)a->v, a->n);
    }
}

/* A zig-zagged number in one of four width classes after its prefix ('0' is zero). */
static void head_put_class(struct head_acc *a, uint64_t z, const unsigned widths[4])
{
    if (z == 0) {
        head_acc_put(a, 0, 1);
        return;
    }
    for (unsigned k = 0; k < 3; k++)
        if (z < (1ULL << widths[k])) {
            /* prefix: k+1 ones then a zero, and the number, in one step */
            head_acc_put(a, ((1ULL << (k + 2)) - 2) << widths[k] | z, k + 2 + widths[k]);
            return;
        }
    head_acc_put(a, 0xF, 4);
    head_acc_put(a, z, widths[3]);
}

/* A class-prefixed value: '0' is 0, '10', '110', '1110', '1111' + widths[0..3] bits. */
static inline uint64_t head_get_class(struct head_bitreader *r, const unsigned widths[4])
{
    uint64_t inv = ~head_peek(r);
    unsigned k = inv ? (unsigned)__builtin_clzll(inv) : 64; /* leading ones */
    if (k == 0) {
        assert(r->pos + 1 <= r->end);
        r->pos++;
        return 0;
    }
    if (k >= 4) {
        r->pos += 4;
        return head_get_bits(r, widths[3]);
    }
    r->pos += k + 1;
    return head_get_bits(r, widths[k - 1]);
}

static const unsigned head_dod_widths[4] = {7, 12, 16, 24};
static const unsigned head_int_widths[4] = {4, 12, 32, 64};

static uint64_t head_dbits(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

static double head_bitsd(uint64_t u)
{
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* ---- chunks ---------------------------------------------------------------------------------- */

static uint8_t head_kind(const struct dpcodec_point *p)
{
    return (uint8_t)(((unsigned)p->type << 1) | (p->ms ? 1u : 0u));
}

/* Makes room for one more point (invariant 4). */
static int head_chunk_reserve(struct head *h, struct head_chunk *c, size_t hint,
                              struct ct_err *err)
{
    if (c->cap * 8 - c->nbits >= HEAD_POINT_MAX_BITS)
        return CT_OK;
    /* by half (rounded up to 16 bytes): a live hour's chunks all grow at once, and doubling
     * left more unused (100,000 series x 1 hour: head 290 -> 257 MB; by a quarter, 249 MB
     * with 14% more writer CPU in reallocations) */
    size_t ncap = c->cap ? c->cap : HEAD_CHUNK_MIN / 2;
    do
        ncap = (ncap + ncap / 2 + 15) & ~(size_t)15;
    while (ncap * 8 - c->nbits < HEAD_POINT_MAX_BITS);
    if (ncap < hint) /* a new chunk at its series' last hour's size: no growth steps */
        ncap = hint;
    uint8_t *nb = realloc(c->buf, ncap);
    if (!nb)
        return ct_err_set(err, CT_ENOMEM, "cannot grow a head chunk to %zu bytes", ncap);
    memset(nb + c->cap, 0, ncap - c->cap); /* head_peek reads up to cap */
    h->bytes += ncap - c->cap;
    c->buf = nb;
    c->cap = ncap;
    return CT_OK;
}

/* Appends p (normalised: ms set when the time is not whole seconds) to c.
 * REQUIRES: p inside c's hour, after c's last point, room reserved. */
static void head_chunk_append(struct head_chunk *c, const struct dpcodec_point *p)
{
    uint8_t kind = head_kind(p);
    struct head_acc a = {0, 0};
    if (c->n == 0) {
        head_acc_put(&a, (uint64_t)kind << HEAD_TS_BITS | (uint64_t)(p->ts_ms - c->base_s * 1000),
                     3 + HEAD_TS_BITS);
    } else {
        if (kind == c->last_kind)
            head_acc_put(&a, 0, 1);
        else
            head_acc_put(&a, 8u | kind, 4); /* '1' then the kind */
        int64_t delta = p->ts_ms - c->last_ts;
        if (c->n == 1)
            head_acc_put(&a, (uint64_t)delta, HEAD_TS_BITS);
        else
            head_put_class(&a, coding_zigzag(delta - c->last_delta), head_dod_widths);
        c->last_delta = delta;
    }
    c->last_ts = p->ts_ms;
    c->last_kind = kind;
    if (p->type == DPCODEC_INT) {
        uint64_t u = (uint64_t)p->i;
        head_put_class(&a, coding_zigzag((int64_t)(u - c->last_i)), head_int_widths);
        c->last_i = u;
    } else {
        uint64_t u = head_dbits(p->f), x = u ^ c->last_f;
        c->last_f = u;
        if (x == 0) {
            head_acc_put(&a, 0, 1);
        } else {
            unsigned lead = (unsigned)__builtin_clzll(x), trail = (unsigned)__builtin_ctzll(x);
            unsigned wtrail = 64u - c->win_lead - c->win_len;
            if (c->win_len && lead >= c->win_lead && trail >= wtrail) {
                head_acc_put(&a, 2, 2);
                head_acc_put(&a, x >> wtrail, c->win_len);
            } else {
                unsigned len = 64 - lead - trail;
                head_acc_put(&a, 3u << 12 | lead << 6 | (len - 1), 14); /* '11', lead, len - 1 */
                head_acc_put(&a, x >> trail, len);
                c->win_lead = (uint8_t)lead;
                c->win_len = (uint8_t)len;
            }
        }
    }
    head_acc_flush(c, &a);
    c->n++;
}

/* A decoder over a chunk's bit stream (struct head_decoder, head.h): the chunk's own buffer (lim
 * = its cap) or a head_copy() of it (lim = the stream's bytes and the 8 zero bytes after). */
static void head_decoder_start(struct head_decoder *d, const uint8_t *buf, size_t lim,
                               uint64_t nbits, int64_t base_s, uint32_t n)
{
    memset(d, 0, sizeof(*d));
    d->r.buf = buf;
    d->r.lim = lim;
    d->r.end = nbits;
    d->base_s = base_s;
    d->n = n;
}

static void head_decoder_init(struct head_decoder *d, const struct head_chunk *c)
{
    head_decoder_start(d, c->buf, c->cap, c->nbits, c->base_s, c->n);
}

/* The next point, false at the end. */
static bool head_decoder_next(struct head_decoder *d, struct dpcodec_point *p)
{
    if (d->i >= d->n)
        return false;
    struct head_bitreader *r = &d->r;
    if (d->i == 0) {
        d->kind = (uint8_t)head_get_bits(r, 3);
        d->ts = d->base_s * 1000 + (int64_t)head_get_bits(r, HEAD_TS_BITS);
    } else {
        if (head_get_bits(r, 1))
            d->kind = (uint8_t)head_get_bits(r, 3);
        if (d->i == 1)
            d->delta = (int64_t)head_get_bits(r, HEAD_TS_BITS);
        else
            d->delta += coding_unzigzag(head_get_class(r, head_dod_widths));
        d->ts += d->delta;
    }
    memset(p, 0, sizeof(*p));
    p->ts_ms = d->ts;
    p->type = (enum dpcodec_type)(d->kind >> 1);
    p->ms = (d->kind & 1) != 0;
    p->cell_ts_ms = (d->base_s + 3600) * 1000;
    if (p->type == DPCODEC_INT) {
        d->vi += (uint64_t)coding_unzigzag(head_get_class(r, head_int_widths));
        p->i = (int64_t)d->vi;
    } else {
        if (head_get_bits(r, 1)) {
            uint64_t x;
            if (head_get_bits(r, 1) == 0) {
                x = head_get_bits(r, d->win_len) << (64u - d->win_lead - d->win_len);
            } else {
                unsigned lead = (unsigned)head_get_bits(r, 6);
                unsigned len = (unsigned)head_get_bits(r, 6) + 1;
                x = head_get_bits(r, len) << (64u - lead - len);
                d->win_lead = (uint8_t)lead;
                d->win_len = (uint8_t)len;
            }
            d->vf ^= x;
        }
        p->f = head_bitsd(d->vf);
    }
    d->i++;
    return true;
}

static void head_chunk_release(struct head *h, struct head_chunk *c)
{
    free(c->buf);
    h->bytes -= c->cap;
    h->npoints -= c->n;
    h->nchunks--;
    memset(c, 0, sizeof(*c));
}

/* ---- series table ---------------------------------------------------------------------------- */

static size_t head_series_size(size_t tlen)
{
    return sizeof(struct head_series) + tlen;
}

static uint64_t head_key(const uint8_t *tsuid, size_t tlen)
{
    uint8_t b[8] = {0};
    memcpy(b, tsuid, tlen < 8 ? tlen : 8);
    uint64_t k;
    memcpy(&k, b, 8);
    return k;
}

/* The series a head_ref names if the ref is of the table's current generation, else NULL.
 * REQUIRES: mu held. */
static struct head_series *head_ref_series(const struct head *h, struct head_ref r)
{
    return r.gen == h->gen && r.slot < h->nslots ? h->slots[r.slot] : NULL;
}

static struct head_series **head_find_slot(struct head *h, const uint8_t *tsuid, size_t tlen,
                                           uint64_t hash)
{
    size_t mask = h->nslots - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        struct head_series *s = h->slots[i];
        if (!s || (s->hash == hash && s->tlen == tlen && !memcmp(s->tsuid, tsuid, tlen)))
            return &h->slots[i];
    }
}

/* Rebuilds the table at nslots (a power of two > 2 * live series), freeing the series without
 * chunks (but those queued in h->moved). On allocation failure the table is left as it was. */
static int head_rehash(struct head *h, size_t nslots, struct ct_err *err)
{
    struct head_series **ns = calloc(nslots, sizeof(*ns));
    uint64_t *nk = calloc(nslots, sizeof(*nk));
    if (!ns || !nk) {
        free(ns);
        free(nk);
        return ct_err_set(err, CT_ENOMEM, "cannot allocate a head table of %zu slots", nslots);
    }
    size_t live = 0;
    for (size_t i = 0; i < h->nslots; i++) {
        struct head_series *s = h->slots[i];
        if (!s)
            continue;
        if (s->nchunks == 0 && !s->queued) {
            h->bytes -= head_series_size(s->tlen);
            free(s);
            continue;
        }
        size_t j = s->hash & (nslots - 1);
        while (ns[j])
            j = (j + 1) & (nslots - 1);
        ns[j] = s;
        nk[j] = head_key(s->tsuid, s->tlen);
        live++;
    }
    free(h->slots);
    free(h->keys);
    if (++h->gen == 0) /* every head_ref taken so far is stale (0 is never a generation) */
        h->gen = 1;
    h->bytes -= h->nslots * (sizeof(*h->slots) + sizeof(*h->keys));
    h->bytes += nslots * (sizeof(*ns) + sizeof(*nk));
    h->slots = ns;
    h->keys = nk;
    h->nslots = nslots;
    h->nseries = live;
    return CT_OK;
}

/* The series of tsuid, created if absent, and its slot in *slot; NULL with err set on
 * allocation failure. May rebuild the table (a new generation). */
static struct head_series *head_series_get(struct head *h, const uint8_t *tsuid, size_t tlen,
                                           size_t *slot_out, struct ct_err *err)
{
    uint64_t hash = hash_bytes(tsuid, tlen, h->seed);
    if (h->nslots) {
        struct head_series **at = head_find_slot(h, tsuid, tlen, hash);
        if (*at) {
            *slot_out = (size_t)(at - h->slots);
            return *at;
        }
    }
    if ((h->nseries + 1) * 2 > h->nslots &&
        head_rehash(h, h->nslots ? h->nslots * 2 : 64, err) != CT_OK)
        return NULL;
    struct head_series *s = calloc(1, head_series_size(tlen));
    if (!s) {
        ct_err_set(err, CT_ENOMEM, "cannot allocate a head series");
        return NULL;
    }
    h->bytes += head_series_size(tlen);
    s->hash = hash;
    s->tlen = (uint8_t)tlen;
    memcpy(s->tsuid, tsuid, tlen);
    struct head_series **slot = head_find_slot(h, tsuid, tlen, hash);
    *slot = s;
    *slot_out = (size_t)(slot - h->slots);
    h->keys[slot - h->slots] = head_key(tsuid, tlen);
    h->nseries++;
    return s;
}

/* The series of tsuid (NULL if absent) and, when found, its slot in *slot (NULL allowed). */
static struct head_series *head_series_find_at(struct head *h, const uint8_t *tsuid, size_t tlen,
                                               size_t *slot)
{
    if (!h->nslots)
        return NULL;
    struct head_series **at = head_find_slot(h, tsuid, tlen, hash_bytes(tsuid, tlen, h->seed));
    if (*at && slot)
        *slot = (size_t)(at - h->slots);
    return *at;
}

static struct head_series *head_series_find(struct head *h, const uint8_t *tsuid, size_t tlen)
{
    return head_series_find_at(h, tsuid, tlen, NULL);
}

#ifdef CT_DEBUG
static bool head_series_check(const struct head *h, const struct head_series *s)
{
    for (unsigned k = 0; k < s->nchunks; k++) {
        if ((!s->chunks[k].backfill && s->chunks[k].base_s < h->closed_before_s) ||
            s->chunks[k].n == 0 || s->chunks[k].base_s < h->oldest_lb_s)
            return false;
        if (k > 0 && s->chunks[k - 1].base_s >= s->chunks[k].base_s)
            return false;
    }
    return true;
}
#endif

/* ---- public ---------------------------------------------------------------------------------- */

int head_new(struct head **out, struct ct_err *err)
{
    struct head *h = calloc(1, sizeof(*h));
    if (!h)
        return ct_err_set(err, CT_ENOMEM, "cannot allocate the ingest head");
    if (!(h->seals = calloc(HEAD_PASS_CHUNKS, sizeof(*h->seals)))) {
        free(h);
        return ct_err_set(err, CT_ENOMEM, "cannot allocate the ingest head");
    }
    if (pthread_mutex_init(&h->mu, NULL) != 0) {
        free(h->seals);
        free(h);
        return ct_err_set(err, CT_ENOMEM, "cannot initialise the ingest head's mutex");
    }
    if (pthread_mutex_init(&h->pass_mu, NULL) != 0) {
        pthread_mutex_destroy(&h->mu);
        free(h->seals);
        free(h);
        return ct_err_set(err, CT_ENOMEM, "cannot initialise the ingest head's mutex");
    }
    if (pthread_cond_init(&h->seal_cv, NULL) != 0) {
        pthread_mutex_destroy(&h->pass_mu);
        pthread_mutex_destroy(&h->mu);
        free(h->seals);
        free(h);
        return ct_err_set(err, CT_ENOMEM, "cannot initialise the ingest head's condition");
    }
    h->bytes = sizeof(*h) + HEAD_PASS_CHUNKS * sizeof(*h->seals);
    h->closed_before_s = INT64_MIN;
    h->newest_s = INT64_MIN / 2;
    h->oldest_lb_s = INT64_MAX / 2;
    h->seed = (uint64_t)(uintptr_t)h * 0x9E3779B97F4A7C15ULL;
    h->gen = 1;
    *out = h;
    return CT_OK;
}

void head_free(struct head *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->nslots; i++) {
        struct head_series *s = h->slots[i];
        if (!s)
            continue;
        for (unsigned k = 0; k < s->nchunks; k++)
            free(s->chunks[k].buf);
        free(s);
    }
    free(h->slots);
    free(h->keys);
    free(h->dec);
    free(h->pdec);
    free(h->moved);
    free(h->seals);
    pthread_cond_destroy(&h->seal_cv);
    pthread_mutex_destroy(&h->pass_mu);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

static int64_t head_floor_hour_s(int64_t ts_ms)
{
    int64_t s = ts_ms / 1000 - (ts_ms % 1000 < 0 ? 1 : 0);
    return s - (((s % 3600) + 3600) % 3600);
}

/* The checks head_append() makes before taking the lock. */
static int head_check_point(const uint8_t *tsuid, size_t tlen, const struct dpcodec_point *p,
                            struct ct_err *err)
{
    (void)tsuid;
    if (tlen == 0 || tlen > HEAD_MAX_TSUID)
        return ct_err_set(err, CT_EINVAL, "bad TSUID length %zu for the head", tlen);
    if (p->type != DPCODEC_INT && p->type != DPCODEC_FLOAT && p->type != DPCODEC_DOUBLE)
        return ct_err_set(err, CT_EINVAL, "bad point type %d for the head", (int)p->type);
    if (p->ts_ms < 0)
        return ct_err_set(err, CT_EINVAL, "negative timestamp %lld for the head",
                          (long long)p->ts_ms);
    return CT_OK;
}

/* Grows the decode buffer h->dec to n points. REQUIRES: mu held. */
static int head_dec_reserve(struct head *h, size_t n, struct ct_err *err)
{
    if (n <= h->dec_cap)
        return CT_OK;
    size_t nc = h->dec_cap ? h->dec_cap : 64;
    while (nc < n)
        nc *= 2;
    struct dpcodec_point *nd = realloc(h->dec, nc * sizeof(*nd));
    if (!nd)
        return ct_err_set(err, CT_ENOMEM, "cannot decode a head hour of %zu points", n);
    h->bytes += (nc - h->dec_cap) * sizeof(*nd);
    h->dec = nd;
    h->dec_cap = nc;
    return CT_OK;
}

/* Decodes chunk c into h->dec (c->n points). REQUIRES: mu held. */
static int head_chunk_decode(struct head *h, const struct head_chunk *c, struct ct_err *err)
{
    int rc = head_dec_reserve(h, c->n, err);
    if (rc != CT_OK)
        return rc;
    struct head_decoder d;
    size_t n = 0;
    head_decoder_init(&d, c);
    while (head_decoder_next(&d, &h->dec[n]))
        n++;
    assert(n == c->n);
    return CT_OK;
}

/* A point p at or before c's last point: if c holds p's timestamp, the chunk is re-encoded with
 * p in that point's place (*found true; the latest write wins), else *found is false and c is
 * unchanged. A failed allocation leaves c as it was. REQUIRES: mu held. */
static int head_chunk_rewrite(struct head *h, struct head_chunk *c, const struct dpcodec_point *p,
                              bool *found, struct ct_err *err)
{
    *found = false;
    /* find the timestamp first, decoding without a buffer: a refusal changes nothing */
    struct head_decoder d;
    struct dpcodec_point q;
    size_t at = 0;
    head_decoder_init(&d, c);
    while (head_decoder_next(&d, &q) && q.ts_ms < p->ts_ms)
        at++;
    if (at == c->n || q.ts_ms != p->ts_ms)
        return CT_OK;
    int rc = head_chunk_decode(h, c, err);
    if (rc != CT_OK)
        return rc;
    h->dec[at] = *p;
    struct head_chunk nc = {.base_s = c->base_s, .backfill = c->backfill, .replayed = c->replayed};
    for (uint32_t i = 0; i < c->n; i++) {
        if ((rc = head_chunk_reserve(h, &nc, 0, err)) != CT_OK) {
            free(nc.buf);
            h->bytes -= nc.cap;
            return rc;
        }
        head_chunk_append(&nc, &h->dec[i]);
    }
    free(c->buf);
    h->bytes -= c->cap;
    nc.touched_ms = c->touched_ms;
    *c = nc;
    *found = true;
    return CT_OK;
}

/* Drops chunk k of s, handed off: raises the series' done_s past its hour. REQUIRES: mu held. */
static void head_drop_chunk(struct head *h, struct head_series *s, unsigned k)
{
    struct head_chunk *c = &s->chunks[k];
    if (c->base_s + 3600 > s->done_s)
        s->done_s = c->base_s + 3600;
    s->next_cap = c->cap < HEAD_NEXT_CAP_MAX ? (uint32_t)c->cap : HEAD_NEXT_CAP_MAX;
    head_chunk_release(h, c);
    s->nchunks--;
    memmove(&s->chunks[k], &s->chunks[k + 1], (s->nchunks - k) * sizeof(s->chunks[0]));
    memset(&s->chunks[s->nchunks], 0, sizeof(s->chunks[0]));
}

/* Hands chunk k of s to fn (decoded into h->dec) and, once fn returned CT_OK, drops it. On
 * failure the chunk stays. REQUIRES: mu held, chunk k not sealed. */
static int head_handoff_chunk(struct head *h, struct head_series *s, unsigned k, head_hour_fn fn,
                              void *arg, struct ct_err *err)
{
    struct head_chunk *c = &s->chunks[k];
    int rc = head_chunk_decode(h, c, err);
    if (rc != CT_OK)
        return rc;
    rc = fn(arg, s->tsuid, s->tlen, c->base_s, c->replayed, h->dec, c->n, err);
    if (rc != CT_OK)
        return rc;
    head_drop_chunk(h, s, k);
    return CT_OK;
}

/* ---- sealed passes ----------------------------------------------------------------------------
 * A pass hands chunks off in steps: under the lock it seals up to HEAD_PASS_CHUNKS of them
 * (head_seal), then decodes and gives them to the sink without the lock (head_seal_store), so
 * appends and reads go on meanwhile, then drops them under the lock (head_seal_finish). The
 * sink's write reaches the store before the chunk leaves the head, as in a locked hand-off. */

/* REQUIRES: mu held, chunk k of s not sealed. */
static void head_seal(struct head *h, struct head_series *s, unsigned k, struct head_seal *out)
{
    s->chunks[k].sealed = true;
    out->s = s;
    out->c = s->chunks[k];
    h->nsealed++;
}

/* Decodes each of seals[0..n) into h->pdec and gives it to fn, stopping at the first refusal
 * (*rc, err). Returns how many fn took. REQUIRES: pass_mu held, mu not held. */
static size_t head_seal_store(struct head *h, const struct head_seal *seals, size_t n,
                              head_hour_fn fn, void *arg, int *rc, struct ct_err *err)
{
    *rc = CT_OK;
    for (size_t i = 0; i < n; i++) {
        const struct head_chunk *c = &seals[i].c;
        if (c->n > h->pdec_cap) {
            size_t nc = h->pdec_cap ? h->pdec_cap : 512;
            while (nc < c->n)
                nc *= 2;
            struct dpcodec_point *nd = realloc(h->pdec, nc * sizeof(*nd));
            if (!nd) {
                *rc = ct_err_set(err, CT_ENOMEM, "cannot decode a head hour of %u points", c->n);
                return i;
            }
            pthread_mutex_lock(&h->mu);
            h->bytes += (nc - h->pdec_cap) * sizeof(*nd);
            pthread_mutex_unlock(&h->mu);
            h->pdec = nd;
            h->pdec_cap = nc;
        }
        struct head_decoder d;
        size_t np = 0;
        head_decoder_init(&d, c);
        while (head_decoder_next(&d, &h->pdec[np]))
            np++;
        assert(np == c->n);
        const struct head_series *s = seals[i].s; /* its TSUID never changes */
        *rc = fn(arg, s->tsuid, s->tlen, c->base_s, c->replayed, h->pdec, np, err);
        if (*rc != CT_OK)
            return i;
    }
    return n;
}

/* Drops the chunks of seals[0..ok) (handed off) and unseals those of seals[ok..n) (kept), then
 * wakes whoever waits for a sealed chunk. REQUIRES: mu held. */
static void head_seal_finish(struct head *h, const struct head_seal *seals, size_t n, size_t ok)
{
    for (size_t i = 0; i < n; i++) {
        struct head_series *s = seals[i].s;
        unsigned k = 0;
        while (k < s->nchunks && !(s->chunks[k].sealed && s->chunks[k].base_s == seals[i].c.base_s))
            k++;
        assert(k < s->nchunks);
        if (i < ok)
            head_drop_chunk(h, s, k);
        else
            s->chunks[k].sealed = false;
    }
    h->nsealed -= n;
    pthread_cond_broadcast(&h->seal_cv);
}

/* One step of a pass: h->seals[0..n) (sealed) stored without the lock, then dropped or
 * unsealed under it. Returns how many the sink took (*rc, err: its refusal). REQUIRES: pass_mu
 * and mu held (mu is released meanwhile). */
static size_t head_seal_step(struct head *h, size_t n, head_hour_fn fn, void *arg, int *rc,
                             struct ct_err *err)
{
    pthread_mutex_unlock(&h->mu);
    size_t ok = head_seal_store(h, h->seals, n, fn, arg, rc, err);
    pthread_mutex_lock(&h->mu);
    head_seal_finish(h, h->seals, n, ok);
    return ok;
}

/* Whether s has a chunk of [from_s, to_s) being handed off. REQUIRES: mu held. */
static bool head_sealed_in(const struct head_series *s, int64_t from_s, int64_t to_s)
{
    for (unsigned k = 0; s && k < s->nchunks; k++)
        if (s->chunks[k].sealed && s->chunks[k].base_s >= from_s && s->chunks[k].base_s < to_s)
            return true;
    return false;
}

/* A backfill series whose oldest chunk may go in the background (head_handoff_moved): it holds
 * HEAD_MOVED_AT chunks or more and the oldest is of a closed hour, so the series has moved on
 * to a newer hour and would need room for the next. REQUIRES: mu held. */
#define HEAD_MOVED_AT (HEAD_MAX_HOURS - 1)
static bool head_moved_ready(const struct head *h, const struct head_series *s)
{
    return s->nchunks >= HEAD_MOVED_AT && !s->chunks[0].sealed &&
           s->chunks[0].base_s < h->closed_before_s;
}

/* Queues s for head_handoff_moved if it is ready and not queued; a failed allocation only
 * leaves it to the room function. REQUIRES: mu held. */
static void head_moved_check(struct head *h, struct head_series *s)
{
    if (s->queued || !h->backfill || !h->bf_room || !head_moved_ready(h, s))
        return;
    if (h->nmoved == h->moved_cap) {
        size_t nc = h->moved_cap ? h->moved_cap * 2 : 256;
        struct head_series **nm = realloc(h->moved, nc * sizeof(*nm));
        if (!nm)
            return;
        h->bytes += (nc - h->moved_cap) * sizeof(*nm);
        h->moved = nm;
        h->moved_cap = nc;
    }
    h->moved[h->nmoved++] = s;
    s->queued = true;
    atomic_store_explicit(&h->moved_pub, h->nmoved, memory_order_relaxed);
}

/* Drops from h->moved the series no longer ready (handed off by another pass since), and the
 * queue itself once empty, so that a head no pass drains returns to its empty size.
 * REQUIRES: mu held, no moved pass running. */
static void head_moved_prune(struct head *h)
{
    size_t w = 0;
    for (size_t i = 0; i < h->nmoved; i++) {
        struct head_series *s = h->moved[i];
        if (head_moved_ready(h, s))
            h->moved[w++] = s;
        else
            s->queued = false;
    }
    h->nmoved = w;
    atomic_store_explicit(&h->moved_pub, w, memory_order_relaxed);
    if (w == 0 && h->moved) {
        h->bytes -= h->moved_cap * sizeof(*h->moved);
        free(h->moved);
        h->moved = NULL;
        h->moved_cap = 0;
    }
}

/* Offers a checked point (head_check_point). The series is found without a hash lookup when
 * *ref (NULL allowed: none) is of the table's current generation, the handle a writer kept from
 * an earlier append of this series, or when *hint (the previous point's series in this batch)
 * is this point's series; else it is looked up. Both name a slot, never a freed series: the
 * generation moves whenever the table is rebuilt, the only place series are freed. On return
 * *hint, and *ref unless the point was HEAD_LATE, name this point's series (or nothing).
 * REQUIRES: mu held. */
static int head_append_locked(struct head *h, const uint8_t *tsuid, size_t tlen,
                              const struct dpcodec_point *pin, struct head_ref *hint,
                              struct head_ref *ref, enum head_result *res, struct ct_err *err)
{
    struct dpcodec_point p = *pin;
    p.ms = p.ms || p.ts_ms % 1000 != 0; /* as dpcodec_encode() stores it */
again:;
    int64_t base_s = head_floor_hour_s(p.ts_ms);
    bool closed = base_s < h->closed_before_s;
    if (closed && !h->backfill) {
        *res = HEAD_LATE;
        return CT_OK;
    }
    struct head_series *s = ref ? head_ref_series(h, *ref) : NULL;
    size_t slot = 0;
    if (s) {
        assert(s->tlen == tlen); /* a ref names the series it was given for */
        slot = ref->slot;
    } else if ((s = head_ref_series(h, *hint)) != NULL && s->tlen == tlen &&
               memcmp(s->tsuid, tsuid, tlen) == 0) {
        slot = hint->slot;
    } else {
        s = head_series_find_at(h, tsuid, tlen, &slot);
    }
    *hint = s ? (struct head_ref){(uint32_t)slot, h->gen} : (struct head_ref){0, 0};
    if (ref)
        *ref = *hint;
    unsigned k = 0;
    if (s)
        while (k < s->nchunks && s->chunks[k].base_s < base_s)
            k++;
    if (s && k < s->nchunks && s->chunks[k].base_s == base_s) {
        struct head_chunk *c = &s->chunks[k];
        if (c->sealed) { /* being handed off: then its hour is late for this series */
            pthread_cond_wait(&h->seal_cv, &h->mu);
            goto again;
        }
        if (p.ts_ms <= c->last_ts) {
            bool found = false;
            int rc = head_chunk_rewrite(h, c, &p, &found, err);
            if (rc != CT_OK)
                return rc;
            if (found) {
                c->touched_ms = h->now_ms;
                c->replayed = c->replayed || h->replay;
            }
            *res = found ? HEAD_TAKEN : HEAD_OUT_OF_ORDER;
            return CT_OK;
        }
        int rc = head_chunk_reserve(h, c, 0, err);
        if (rc != CT_OK)
            return rc;
        head_chunk_append(c, &p);
        c->touched_ms = h->now_ms;
        c->replayed = c->replayed || h->replay;
        h->npoints++;
        *res = HEAD_TAKEN;
        return CT_OK;
    }
    /* a new chunk: not for an hour this series already handed off, and a backfill chunk only
     * while the head is under its share */
    if (closed && ((s && base_s < s->done_s) || (h->bf_max_bytes && h->bytes >= h->bf_max_bytes))) {
        *res = HEAD_LATE;
        return CT_OK;
    }
    if (s && s->nchunks >= HEAD_MAX_HOURS) {
        if (s->chunks[0].sealed) { /* going already: wait for the room it leaves */
            pthread_cond_wait(&h->seal_cv, &h->mu);
            goto again;
        }
        /* room: the oldest chunk goes to the store if its hour is closed and older than this */
        if (!h->bf_room || s->chunks[0].base_s >= h->closed_before_s ||
            s->chunks[0].base_s > base_s) {
            *res = HEAD_NO_ROOM;
            return CT_OK;
        }
        if (head_handoff_chunk(h, s, 0, h->bf_room, h->bf_room_arg, err) != CT_OK) {
            h->bf_room_fail++; /* the chunk stays; this point goes as a single cell */
            *res = HEAD_NO_ROOM;
            return CT_OK;
        }
        k--;
    }
    struct head_chunk nc = {
        .base_s = base_s, .touched_ms = h->now_ms, .backfill = closed, .replayed = h->replay};
    int rc = head_chunk_reserve(h, &nc, s ? s->next_cap : 0, err);
    if (rc != CT_OK)
        return rc;
    if (!s) {
        s = head_series_get(h, tsuid, tlen, &slot, err); /* may rebuild the table */
        if (!s) {
            free(nc.buf);
            h->bytes -= nc.cap;
            return err->code;
        }
        *hint = (struct head_ref){(uint32_t)slot, h->gen};
        if (ref)
            *ref = *hint;
        k = 0;
    }
    head_chunk_append(&nc, &p);
    memmove(&s->chunks[k + 1], &s->chunks[k], (s->nchunks - k) * sizeof(s->chunks[0]));
    s->chunks[k] = nc;
    s->nchunks++;
    if (base_s > h->newest_s)
        h->newest_s = base_s;
    if (base_s < h->oldest_lb_s)
        h->oldest_lb_s = base_s;
    h->nchunks++;
    h->npoints++;
    head_moved_check(h, s);
#ifdef CT_DEBUG
    assert(head_series_check(h, s));
#endif
    *res = HEAD_TAKEN;
    return CT_OK;
}

int head_append(struct head *h, const uint8_t *tsuid, size_t tlen, const struct dpcodec_point *p,
                enum head_result *res, struct ct_err *err)
{
    int rc = head_check_point(tsuid, tlen, p, err);
    if (rc != CT_OK)
        return rc;
    struct head_ref hint = {0, 0};
    pthread_mutex_lock(&h->mu);
    rc = head_append_locked(h, tsuid, tlen, p, &hint, NULL, res, err);
    pthread_mutex_unlock(&h->mu);
    return rc;
}

/* Loads ahead, for the batch's points i + HEAD_PREFETCH / 4 .. i + HEAD_PREFETCH by their refs,
 * what appending them reads: each series' slot (16 points ahead), then its record (8), then its
 * newest chunk's last bytes (4; at 2 more of the writer's samples sat on the chunk's stores).
 * With many series each point's series is elsewhere in memory and the three loads depend on
 * each other: started a few points early they overlap with the appends in between instead of
 * stalling each one in turn. Only hints: a stale ref or a chunk other than the newest costs
 * nothing but the load. Always inlined: GCC drops calls of a function that only prefetches (it
 * finds it without effect). REQUIRES: mu held. */
#define HEAD_PREFETCH 16
static inline __attribute__((always_inline)) void
head_prefetch(const struct head *h, const struct head_ref *refs, size_t i, size_t end)
{
    if (i + HEAD_PREFETCH < end && refs[i + HEAD_PREFETCH].gen == h->gen &&
        refs[i + HEAD_PREFETCH].slot < h->nslots)
        __builtin_prefetch(&h->slots[refs[i + HEAD_PREFETCH].slot]);
    if (i + HEAD_PREFETCH / 2 < end) {
        const struct head_series *s = head_ref_series(h, refs[i + HEAD_PREFETCH / 2]);
        for (size_t off = 0; s && off < sizeof(*s); off += 64)
            __builtin_prefetch((const char *)s + off);
    }
    if (i + HEAD_PREFETCH / 4 < end) {
        const struct head_series *s = head_ref_series(h, refs[i + HEAD_PREFETCH / 4]);
        if (s && s->nchunks) {
            const struct head_chunk *c = &s->chunks[s->nchunks - 1];
            if (c->buf)
                __builtin_prefetch(c->buf + (c->nbits >> 3), 1);
        }
    }
}

int head_append_batch(struct head *h, const struct head_point *pts, size_t n, struct head_ref *refs,
                      enum head_result *res, size_t *ndone, struct ct_err *err)
{
    if (ndone)
        *ndone = 0;
    for (size_t i = 0; i < n; i++)
        if (head_check_point(pts[i].tsuid, pts[i].tlen, &pts[i].p, err) != CT_OK)
            return ct_err_prefix(err, "point %zu of %zu", i, n);
    int rc = CT_OK;
    size_t i = 0;
    while (i < n && rc == CT_OK) {
        size_t end = n - i > HEAD_BATCH_LOCK_POINTS ? i + HEAD_BATCH_LOCK_POINTS : n;
        struct head_ref hint = {0, 0};
        pthread_mutex_lock(&h->mu);
        for (; i < end; i++) {
            if (refs)
                head_prefetch(h, refs, i, end);
            rc = head_append_locked(h, pts[i].tsuid, pts[i].tlen, &pts[i].p, &hint,
                                    refs ? &refs[i] : NULL, &res[i], err);
            if (rc != CT_OK)
                break;
        }
        pthread_mutex_unlock(&h->mu);
    }
    if (ndone)
        *ndone = i;
    return rc;
}

/* head_copy's layout, per chunk: base_s (8 bytes), n (4), nbits (8), then the stream's
 * ceil(nbits / 8) bytes and 8 zero bytes (head_peek's word loads to the end). */
#define HEAD_COPY_HDR (8 + 4 + 8)

int head_copy(struct head *h, const uint8_t *tsuid, size_t tlen, int64_t start_ms, int64_t end_ms,
              uint8_t **buf, size_t *cap, size_t *len, size_t *npoints, struct ct_err *err)
{
    int rc = CT_OK;
    size_t at = *len, np = 0;
    pthread_mutex_lock(&h->mu);
    struct head_series *s =
        (tlen && tlen <= HEAD_MAX_TSUID) ? head_series_find(h, tsuid, tlen) : NULL;
    for (unsigned k = 0; s && k < s->nchunks; k++) {
        const struct head_chunk *c = &s->chunks[k];
        if (c->n == 0 || c->base_s * 1000 > end_ms || (c->base_s + 3600) * 1000 <= start_ms)
            continue;
        size_t nb = (size_t)((c->nbits + 7) / 8), need = at + HEAD_COPY_HDR + nb + 8;
        if (need > *cap) {
            size_t nc = *cap ? *cap : 4096;
            while (nc < need)
                nc *= 2;
            uint8_t *b = realloc(*buf, nc);
            if (!b) {
                rc = ct_err_set(err, CT_ENOMEM, "out of memory copying head points");
                break;
            }
            *buf = b;
            *cap = nc;
        }
        uint8_t *o = *buf + at;
        uint32_t n32 = c->n;
        memcpy(o, &c->base_s, 8);
        memcpy(o + 8, &n32, 4);
        memcpy(o + 12, &c->nbits, 8);
        memcpy(o + HEAD_COPY_HDR, c->buf, nb);
        memset(o + HEAD_COPY_HDR + nb, 0, 8);
        /* the points inside the window: all when the chunk's span is, else counted */
        if (c->base_s * 1000 >= start_ms && c->last_ts <= end_ms) {
            np += c->n;
        } else {
            struct head_decoder d;
            struct dpcodec_point p;
            head_decoder_init(&d, c);
            while (head_decoder_next(&d, &p) && p.ts_ms <= end_ms)
                np += p.ts_ms >= start_ms;
        }
        at = need;
    }
    pthread_mutex_unlock(&h->mu);
    if (rc == CT_OK) {
        *len = np ? at : *len;
        *npoints = np;
    }
    return rc;
}

void head_iter_init(struct head_iter *it, const uint8_t *copy, size_t len, int64_t start_ms,
                    int64_t end_ms)
{
    memset(it, 0, sizeof(*it));
    it->p = copy;
    it->end = copy + len;
    it->start_ms = start_ms;
    it->end_ms = end_ms;
}

bool head_iter_next(struct head_iter *it, struct dpcodec_point *p)
{
    for (;;) {
        if (!it->open) {
            if (it->end - it->p < HEAD_COPY_HDR)
                return false;
            int64_t base_s;
            uint32_t n;
            uint64_t nbits;
            memcpy(&base_s, it->p, 8);
            memcpy(&n, it->p + 8, 4);
            memcpy(&nbits, it->p + 12, 8);
            size_t nb = (size_t)((nbits + 7) / 8);
            head_decoder_start(&it->d, it->p + HEAD_COPY_HDR, nb + 8, nbits, base_s, n);
            it->p += HEAD_COPY_HDR + nb + 8;
            it->open = true;
        }
        while (head_decoder_next(&it->d, p)) {
            if (p->ts_ms > it->end_ms) { /* the copy's later chunks are of later hours */
                it->p = it->end;
                it->open = false;
                return false;
            }
            if (p->ts_ms >= it->start_ms)
                return true;
        }
        it->open = false;
    }
}

int head_last(struct head *h, const uint8_t *tsuid, size_t tlen, int64_t min_ms,
              struct dpcodec_point *p)
{
    int rc = CT_NOTFOUND;
    pthread_mutex_lock(&h->mu);
    const struct head_series *s =
        (tlen && tlen <= HEAD_MAX_TSUID) ? head_series_find(h, tsuid, tlen) : NULL;
    if (s && s->nchunks) {
        const struct head_chunk *c = &s->chunks[s->nchunks - 1]; /* the newest hour */
        if (c->n && c->last_ts >= min_ms) {
            memset(p, 0, sizeof(*p));
            p->ts_ms = c->last_ts;
            p->type = (enum dpcodec_type)(c->last_kind >> 1);
            p->ms = (c->last_kind & 1) != 0;
            p->cell_ts_ms = (c->base_s + 3600) * 1000;
            if (p->type == DPCODEC_INT)
                p->i = (int64_t)c->last_i;
            else
                p->f = head_bitsd(c->last_f);
            rc = CT_OK;
        }
    }
    pthread_mutex_unlock(&h->mu);
    return rc;
}

int head_each_series(struct head *h, const uint8_t *prefix, size_t plen, int64_t start_ms,
                     int64_t end_ms, head_series_fn fn, void *arg)
{
    int rc = CT_OK;
    pthread_mutex_lock(&h->mu);
    /* chunks all lie in [oldest_lb_s, newest_s + 3600) (old hours' backfill chunks too) */
    if (h->nchunks == 0 || (h->newest_s + 3600) * 1000 <= start_ms ||
        (h->oldest_lb_s < INT64_MAX / 2000 && h->oldest_lb_s * 1000 > end_ms)) {
        pthread_mutex_unlock(&h->mu);
        return CT_OK;
    }
    /* the keys hold a TSUID's first 8 bytes: compare the prefix's first 8 there, then whole */
    uint64_t mask = 0;
    uint8_t mb[8] = {0};
    memset(mb, 0xFF, plen < 8 ? plen : 8);
    memcpy(&mask, mb, 8);
    uint64_t want = head_key(prefix, plen) & mask;
    for (size_t i = 0; i < h->nslots && rc == CT_OK; i++) {
        if ((h->keys[i] & mask) != want)
            continue;
        const struct head_series *s = h->slots[i];
        if (!s || s->nchunks == 0 || s->tlen < plen || memcmp(s->tsuid, prefix, plen) != 0)
            continue;
        bool in = false;
        for (unsigned k = 0; k < s->nchunks && !in; k++)
            in = s->chunks[k].base_s * 1000 <= end_ms &&
                 (s->chunks[k].base_s + 3600) * 1000 > start_ms;
        if (in)
            rc = fn(arg, s->tsuid, s->tlen);
    }
    pthread_mutex_unlock(&h->mu);
    return rc;
}

int head_close_hours_idle(struct head *h, int64_t before_s, int64_t idle_before_ms,
                          head_hour_fn fn, void *arg, size_t *nhours, struct ct_err *err)
{
    int rc = CT_OK;
    size_t handed = 0;
    pthread_mutex_lock(&h->pass_mu);
    pthread_mutex_lock(&h->mu);
    /* steps of up to HEAD_PASS_CHUNKS chunks, the walk going on from slot i; it ends when one
     * hold of the lock walked every slot from the first without finding a chunk to go (chunks
     * opened in slots already walked while the lock was free are found that way) */
    size_t i = 0;
    uint32_t gen = h->gen;
    for (;;) {
        if (h->gen != gen) { /* the table was rebuilt: walk it again */
            gen = h->gen;
            i = 0;
        }
        size_t from = i, n = 0;
        for (; i < h->nslots && n + HEAD_MAX_HOURS <= HEAD_PASS_CHUNKS; i++) {
            struct head_series *s = h->slots[i];
            for (unsigned k = 0; s && k < s->nchunks; k++) {
                const struct head_chunk *c = &s->chunks[k];
                if (!c->sealed && c->base_s < before_s &&
                    (!c->backfill || c->touched_ms < idle_before_ms))
                    head_seal(h, s, k, &h->seals[n++]);
            }
        }
        if (n == 0) {
            if (from == 0)
                break;
            i = 0;
            continue;
        }
        handed += head_seal_step(h, n, fn, arg, &rc, err);
        if (rc != CT_OK)
            break;
    }
    int64_t oldest = INT64_MAX / 2;
    for (size_t j = 0; j < h->nslots; j++) {
        const struct head_series *s = h->slots[j];
        if (s && s->nchunks && s->chunks[0].base_s < oldest)
            oldest = s->chunks[0].base_s;
    }
    h->oldest_lb_s = oldest;
    /* the decode buffers are kept between room hand-offs (appends) and steps, not past a pass */
    h->bytes -= h->dec_cap * sizeof(*h->dec) + h->pdec_cap * sizeof(*h->pdec);
    free(h->dec);
    h->dec = NULL;
    h->dec_cap = 0;
    free(h->pdec);
    h->pdec = NULL;
    h->pdec_cap = 0;
    if (rc == CT_OK && before_s > h->closed_before_s)
        h->closed_before_s = before_s;
    head_moved_prune(h);
    /* drop the series left empty; keep the table if that cannot be allocated (they are reused) */
    if (h->nslots) {
        struct ct_err e2 = {0};
        size_t live = 0;
        for (size_t j = 0; j < h->nslots; j++)
            if (h->slots[j] && (h->slots[j]->nchunks || h->slots[j]->queued))
                live++;
        size_t ns = 64;
        while (ns < live * 4)
            ns *= 2;
        if (live < h->nseries && head_rehash(h, ns, &e2) != CT_OK) {
            /* the table stays as it was: empty series are found and refilled */
        }
    }
    pthread_mutex_unlock(&h->mu);
    pthread_mutex_unlock(&h->pass_mu);
    if (nhours)
        *nhours = handed;
    return rc;
}

int head_handoff_moved(struct head *h, head_hour_fn fn, void *arg, size_t *nhours,
                       struct ct_err *err)
{
    int rc = CT_OK;
    size_t handed = 0;
    pthread_mutex_lock(&h->pass_mu);
    pthread_mutex_lock(&h->mu);
    while (rc == CT_OK && h->nmoved) {
        size_t n = 0;
        while (h->nmoved && n < HEAD_PASS_CHUNKS) {
            struct head_series *s = h->moved[--h->nmoved];
            s->queued = false;
            if (head_moved_ready(h, s))
                head_seal(h, s, 0, &h->seals[n++]);
        }
        atomic_store_explicit(&h->moved_pub, h->nmoved, memory_order_relaxed);
        if (n == 0)
            continue;
        size_t ok = head_seal_step(h, n, fn, arg, &rc, err);
        handed += ok;
        for (size_t i = 0; i < ok; i++) /* a series more than one hour behind goes on */
            head_moved_check(h, h->seals[i].s);
    }
    pthread_mutex_unlock(&h->mu);
    pthread_mutex_unlock(&h->pass_mu);
    if (nhours)
        *nhours = handed;
    return rc;
}

bool head_moved_pending(struct head *h)
{
    return atomic_load_explicit(&h->moved_pub, memory_order_relaxed) != 0;
}

int head_close_hours(struct head *h, int64_t before_s, head_hour_fn fn, void *arg, size_t *nhours,
                     struct ct_err *err)
{
    return head_close_hours_idle(h, before_s, INT64_MAX, fn, arg, nhours, err);
}

void head_set_backfill(struct head *h, bool on, size_t max_bytes, head_hour_fn room, void *arg)
{
    pthread_mutex_lock(&h->mu);
    h->backfill = on;
    h->bf_max_bytes = max_bytes;
    h->bf_room = room;
    h->bf_room_arg = arg;
    pthread_mutex_unlock(&h->mu);
}

void head_set_replay(struct head *h, bool on)
{
    pthread_mutex_lock(&h->mu);
    h->replay = on;
    pthread_mutex_unlock(&h->mu);
}

void head_set_clock_ms(struct head *h, int64_t now_ms)
{
    pthread_mutex_lock(&h->mu);
    h->now_ms = now_ms;
    pthread_mutex_unlock(&h->mu);
}

void head_set_delete_log(struct head *h, head_delete_log_fn fn, void *arg)
{
    pthread_mutex_lock(&h->mu);
    h->delete_log = fn;
    h->delete_log_arg = arg;
    pthread_mutex_unlock(&h->mu);
}

/* Chunks of s with a base hour in [from_s, to_s). REQUIRES: mu held. */
static unsigned head_chunks_in(const struct head_series *s, int64_t from_s, int64_t to_s)
{
    unsigned n = 0;
    for (unsigned k = 0; s && k < s->nchunks; k++)
        if (s->chunks[k].base_s >= from_s && s->chunks[k].base_s < to_s)
            n++;
    return n;
}

int head_delete_hours(struct head *h, const uint8_t *tsuid, size_t tlen, int64_t from_s,
                      int64_t to_s, size_t *nchunks, struct ct_err *err)
{
    if (nchunks)
        *nchunks = 0;
    if (tlen == 0 || tlen > HEAD_MAX_TSUID)
        return ct_err_set(err, CT_EINVAL, "bad TSUID length %zu", tlen);
    pthread_mutex_lock(&h->mu);
    unsigned found = head_chunks_in(head_series_find(h, tsuid, tlen), from_s, to_s);
    head_delete_log_fn fn = h->delete_log;
    void *arg = h->delete_log_arg;
    pthread_mutex_unlock(&h->mu);
    if (found == 0)
        return CT_OK;
    if (fn) { /* logged first: once the log holds it, a replay drops what follows too */
        int rc = fn(arg, tsuid, tlen, from_s, to_s, err);
        if (rc != CT_OK)
            return rc;
    }
    pthread_mutex_lock(&h->mu);
    struct head_series *s = head_series_find(h, tsuid, tlen);
    while (head_sealed_in(s, from_s, to_s)) { /* a chunk being handed off: let it reach the store */
        pthread_cond_wait(&h->seal_cv, &h->mu);
        s = head_series_find(h, tsuid, tlen);
    }
    size_t dropped = 0;
    unsigned w = 0;
    for (unsigned k = 0; s && k < s->nchunks; k++) {
        struct head_chunk *c = &s->chunks[k];
        if (c->base_s >= from_s && c->base_s < to_s) {
            head_chunk_release(h, c);
            dropped++;
        } else {
            if (w != k) {
                s->chunks[w] = *c;
                memset(c, 0, sizeof(*c));
            }
            w++;
        }
    }
    if (s)
        s->nchunks = (uint8_t)w;
    pthread_mutex_unlock(&h->mu);
    if (nchunks)
        *nchunks = dropped;
    return CT_OK;
}

void head_set_closed_before(struct head *h, int64_t before_s)
{
    pthread_mutex_lock(&h->mu);
    if (before_s > h->closed_before_s)
        h->closed_before_s = before_s;
    pthread_mutex_unlock(&h->mu);
}

int64_t head_closed_before_s(struct head *h)
{
    pthread_mutex_lock(&h->mu);
    int64_t v = h->closed_before_s;
    pthread_mutex_unlock(&h->mu);
    return v;
}

int64_t head_oldest_hour_s(struct head *h)
{
    int64_t v = INT64_MAX;
    pthread_mutex_lock(&h->mu);
    for (size_t i = 0; i < h->nslots; i++) {
        struct head_series *s = h->slots[i];
        if (s && s->nchunks && s->chunks[0].base_s < v)
            v = s->chunks[0].base_s;
    }
    pthread_mutex_unlock(&h->mu);
    return v;
}

size_t head_bytes(struct head *h)
{
    pthread_mutex_lock(&h->mu);
    size_t v = h->bytes;
    pthread_mutex_unlock(&h->mu);
    return v;
}

void head_counts(struct head *h, size_t *nseries, size_t *nchunks, uint64_t *npoints)
{
    pthread_mutex_lock(&h->mu);
    size_t live = 0;
    for (size_t i = 0; i < h->nslots; i++)
        if (h->slots[i] && h->slots[i]->nchunks)
            live++;
    *nseries = live;
    *nchunks = h->nchunks;
    *npoints = h->npoints;
    pthread_mutex_unlock(&h->mu);
}
