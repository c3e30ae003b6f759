/* dpcodec.c - datapoint cell codecs, the reading half: OpenTSDB's single, compacted and append
 * cells, annotation qualifiers, and ctsdb's compressed hour cell; the row decoders. Writing hours
 * and the compaction merge are in dpcodec_write.c; what both share is in dpcodec_int.h.
 *
 * Invariants: (1) encoding then decoding any point gives back its timestamp, type, ms flag and
 * value bits; (2) dpcodec_row_decode() output is sorted by timestamp with one point per
 * timestamp, the one of the newest cell; (3) the compressed encoder only picks a value encoding
 * after checking that it reproduces every value bit for bit (so it is lossless by construction);
 * (4) dpcodec_row_decode_cols() gives exactly the points (and errors) of dpcodec_row_decode().
 * Layouts: schema/dpcodec_format.h. Allocation: none on the single-cell paths; the compressed
 * encoder keeps per-thread state (a deflate stream and a scratch buffer, see dpcodec_enc), the
 * iterator over a compressed cell one scratch buffer, the columnar reader its reused columns.
 * Reading is sized for speed: bits come in 64-bit windows (two narrow bit-packed entries per
 * load; Rice entries decoded from a window held in a register, so that an entry's position
 * waits for a clz and a shift, not a load: even with two or three long entries to a window,
 * reading each entry from its own load instead has fewer instructions but more time, each
 * entry's position then waiting for a load), radix blocks are split with few hardware divisions
 * (small radixes' digits as bytes from tables, made values eight at a time, with AVX2 when the
 * CPU has it: dpcodec_rexpand), decimals divided four at a time (AVX2: dpcodec_decimals, the
 * same bits as one by one), regular timestamps in closed form; a small per-thread memo of radix
 * bit lengths is kept between calls; patched blocks are unpacked as bit-packed ones, then their
 * few exceptions added. Encoding is sized for speed without changing a byte of what it writes:
 * every search (order, value kind, block kind, Rice parameter, deflate) keeps the choices of the
 * plain exhaustive search, with exact shortcuts (convexity, closed forms, lower bounds that rule
 * a candidate out), except a patched block's parameters, chosen by a cheap estimate and written
 * only when exactly smaller; test_dpcodec pins the output bytes. */
#include "schema/dpcodec.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "schema/dpcodec_format.h"
#include "schema/dpcodec_int.h"
#include "storage/coding.h"

/* The hot decoding functions start on a cache line, so that their loops keep one alignment
 * whatever code comes before them in the program (unrelated changes elsewhere moved them and
 * swung an aggregating query's time by 5-6 %), and are built twice, for x86-64-v3 (BMI2's
 * shifts by any register and flag-free multiplications, AVX2) and for the baseline, the loader
 * picking one (GCC's target_clones, an ifunc): rate_by_dc -9 % CPU on an AVX2 machine, the
 * bit-packed reader's variable shifts no longer going through CL. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DPCODEC_HOT __attribute__((aligned(64), target_clones("arch=x86-64-v3", "default")))
#else
#define DPCODEC_HOT __attribute__((aligned(64)))
#endif

struct dpcodec_point dpcodec_point_int(int64_t ts_ms, bool ms, int64_t v)
{
    struct dpcodec_point p = {.ts_ms = ts_ms, .type = DPCODEC_INT, .ms = ms, .i = v};
    return p;
}

struct dpcodec_point dpcodec_point_real(int64_t ts_ms, bool ms, double v)
{
    struct dpcodec_point p = {.ts_ms = ts_ms, .ms = ms, .f = v};
    p.type = ((double)(float)v == v) ? DPCODEC_FLOAT : DPCODEC_DOUBLE;
    return p;
}

static double dpcodec_bitsd(uint64_t u);

static double dpcodec_bitsd(uint64_t u)
{
    double d;
    memcpy(&d, &u, 8);
    return d;
}

bool dpcodec_point_same_value(const struct dpcodec_point *a, const struct dpcodec_point *b)
{
    if (a->type != b->type)
        return false;
    if (a->type == DPCODEC_INT)
        return a->i == b->i;
    return dpcodec_dbits(a->f) == dpcodec_dbits(b->f);
}

/* ---- single cells ----------------------------------------------------------------------- */

/* Qualifier bytes of a point at offset (seconds or ms) with flags. */
static size_t dpcodec_qualifier(bool ms, uint32_t offset, uint8_t flags, uint8_t *q)
{
    if (ms) {
        coding_put_be32(q, 0xF0000000u | offset << 6 | (flags & DPCODEC_FLAGS_MASK));
        return 4;
    }
    coding_put_be16(q, (uint16_t)(offset << 4 | (flags & DPCODEC_FLAGS_MASK)));
    return 2;
}

/* Value bytes and flags of a point. */
size_t dpcodec_value(const struct dpcodec_point *p, uint8_t *v, uint8_t *flags)
{
    switch (p->type) {
    case DPCODEC_FLOAT: {
        float f = (float)p->f;
        uint32_t u;
        memcpy(&u, &f, 4);
        coding_put_be32(v, u);
        *flags = DPCODEC_FLAG_FLOAT | 3;
        return 4;
    }
    case DPCODEC_DOUBLE:
        coding_put_be64(v, dpcodec_dbits(p->f));
        *flags = DPCODEC_FLAG_FLOAT | 7;
        return 8;
    case DPCODEC_INT:
        break;
    }
    int64_t x = p->i;
    if (x == (int8_t)x) {
        v[0] = (uint8_t)x;
        *flags = 0;
        return 1;
    }
    if (x == (int16_t)x) {
        coding_put_be16(v, (uint16_t)x);
        *flags = 1;
        return 2;
    }
    if (x == (int32_t)x) {
        coding_put_be32(v, (uint32_t)x);
        *flags = 3;
        return 4;
    }
    coding_put_be64(v, (uint64_t)x);
    *flags = 7;
    return 8;
}

int dpcodec_encode(int64_t base_s, const struct dpcodec_point *p, uint8_t *q, size_t *qlen,
                   uint8_t *v, size_t *vlen, struct ct_err *err)
{
    int64_t off_ms = p->ts_ms - base_s * 1000;
    if (off_ms < 0 || off_ms >= DPCODEC_HOUR_MS)
        return ct_err_set(err, CT_EINVAL, "timestamp %lld ms is outside the hour starting at %lld",
                          (long long)p->ts_ms, (long long)base_s);
    uint8_t flags;
    *vlen = dpcodec_value(p, v, &flags);
    /* a timestamp that is not a whole second always gets a ms qualifier (never lose precision) */
    bool ms = p->ms || off_ms % 1000 != 0;
    *qlen = dpcodec_qualifier(ms, (uint32_t)(ms ? off_ms : off_ms / 1000), flags, q);
    return CT_OK;
}

enum dpcodec_qkind dpcodec_qualifier_kind(const uint8_t *q, size_t qlen)
{
    if (qlen == 0)
        return DPCODEC_Q_OTHER;
    if (qlen & 1) {
        if (qlen == DPCODEC_APPEND_Q_LEN && !memcmp(q, DPCODEC_APPEND_Q, qlen))
            return DPCODEC_Q_APPEND;
        if (qlen == DPCODEC_CQ_LEN && !memcmp(q, DPCODEC_CQ, DPCODEC_CQ_PREFIX_LEN))
            return DPCODEC_Q_COMPRESSED;
        if (q[0] == DPCODEC_ANNOTATION_PREFIX && (qlen == 3 || qlen == 5))
            return DPCODEC_Q_ANNOTATION;
        return DPCODEC_Q_OTHER;
    }
    if (qlen == 2 || (qlen == 4 && (q[0] & DPCODEC_MS_PREFIX) == DPCODEC_MS_PREFIX))
        return DPCODEC_Q_POINT;
    return DPCODEC_Q_COMPACTED;
}

/* ---- decoding ----------------------------------------------------------------------------- */

void dpcodec_iter_init(struct dpcodec_iter *it, int64_t base_s, const uint8_t *q, size_t qlen,
                       const uint8_t *v, size_t vlen)
{
    memset(it, 0, sizeof(*it));
    it->base_ms = base_s * 1000;
    it->q = q;
    it->qend = q + qlen;
    it->v = v;
    it->vend = v + vlen;
    it->kind = (int)dpcodec_qualifier_kind(q, qlen);
}

void dpcodec_iter_end(struct dpcodec_iter *it)
{
    free(it->scratch); /* a compressed cell's points and descriptors */
    it->scratch = NULL;
    it->desc = NULL;
}

static int dpcodec_corrupt(struct dpcodec_iter *it, struct ct_err *err, const char *what)
{
    it->failed = true;
    return ct_err_set(err, CT_ECORRUPT,
                      "malformed datapoint cell (qualifier of %zu bytes, value "
                      "of %zu bytes): %s",
                      (size_t)(it->qend - it->q), (size_t)(it->vend - it->v), what);
}

/* Reads one qualifier unit at *q: 2 bytes (seconds) or 4 (ms). */
static int dpcodec_unit(const uint8_t **q, const uint8_t *qend, int64_t base_ms, int64_t *ts,
                        bool *ms, uint8_t *flags)
{
    const uint8_t *p = *q;
    if (qend - p < 2)
        return -1;
    if ((p[0] & DPCODEC_MS_PREFIX) == DPCODEC_MS_PREFIX) {
        if (qend - p < 4)
            return -1;
        uint32_t u = coding_get_be32(p);
        uint32_t off = (u & 0x0FFFFFC0u) >> 6;
        if (off >= DPCODEC_HOUR_MS)
            return -2;
        *ts = base_ms + off;
        *ms = true;
        *flags = (uint8_t)(u & DPCODEC_FLAGS_MASK);
        *q = p + 4;
        return 0;
    }
    uint16_t u = coding_get_be16(p);
    uint32_t off = u >> 4;
    if (off >= 3600)
        return -2;
    *ts = base_ms + (int64_t)off * 1000;
    *ms = false;
    *flags = (uint8_t)(u & DPCODEC_FLAGS_MASK);
    *q = p + 2;
    return 0;
}

/* Decodes a value of len bytes with flags into p. */
static int dpcodec_read_value(const uint8_t *v, size_t len, uint8_t flags, struct dpcodec_point *p)
{
    if (flags & DPCODEC_FLAG_FLOAT) {
        if (len == 4) {
            uint32_t u = coding_get_be32(v);
            float f;
            memcpy(&f, &u, 4);
            p->type = DPCODEC_FLOAT;
            p->f = f;
            return 0;
        }
        if (len == 8) {
            p->type = DPCODEC_DOUBLE;
            p->f = dpcodec_bitsd(coding_get_be64(v));
            return 0;
        }
        return -1;
    }
    p->type = DPCODEC_INT;
    switch (len) {
    case 1:
        p->i = (int8_t)v[0];
        return 0;
    case 2:
        p->i = (int16_t)coding_get_be16(v);
        return 0;
    case 4:
        p->i = (int32_t)coding_get_be32(v);
        return 0;
    case 8:
        p->i = (int64_t)coding_get_be64(v);
        return 0;
    }
    return -1;
}

/* Decodes a single-point cell (qualifier q..qend, value v..vend) into p: 0, or -1 with *why. */
static int dpcodec_point_cell(int64_t base_ms, const uint8_t *q, const uint8_t *qend,
                              const uint8_t *v, const uint8_t *vend, struct dpcodec_point *p,
                              const char **why)
{
    uint8_t flags;
    int rc = dpcodec_unit(&q, qend, base_ms, &p->ts_ms, &p->ms, &flags);
    if (rc) {
        *why = rc == -2 ? "offset beyond the hour" : "short qualifier";
        return -1;
    }
    size_t flen = dpcodec_flags_value_len(flags);
    size_t vlen = (size_t)(vend - v);
    if (vlen == flen + 1 && (v[flen] == 0 || v[flen] == DPCODEC_MS_MIXED_COMPACT))
        vlen = flen; /* a one-point compacted cell */
    else if ((flags & DPCODEC_FLAG_FLOAT) && flen == 4 && vlen == 8)
        v += 4, vlen = 4; /* legacy: a float on 8 bytes with a 4-byte flag */
    else if (!(flags & DPCODEC_FLAG_FLOAT))
        ; /* integers: the value's own length rules (OpenTSDB reads value.length) */
    else if (vlen != flen) {
        *why = "value length does not match the qualifier flags";
        return -1;
    }
    if (dpcodec_read_value(v, vlen, flags, p)) {
        *why = "bad value length";
        return -1;
    }
    return 0;
}

static int dpcodec_next_point(struct dpcodec_iter *it, struct dpcodec_point *p, struct ct_err *err)
{
    if (it->started)
        return CT_NOTFOUND;
    it->started = true;
    const char *why = NULL;
    if (dpcodec_point_cell(it->base_ms, it->q, it->qend, it->v, it->vend, p, &why))
        return dpcodec_corrupt(it, err, why);
    return CT_OK;
}

static int dpcodec_next_compacted(struct dpcodec_iter *it, struct dpcodec_point *p,
                                  struct ct_err *err)
{
    if (it->q == it->qend) {
        size_t rest = (size_t)(it->vend - it->v);
        if (rest > 1 || (rest == 1 && it->v[0] > DPCODEC_MS_MIXED_COMPACT))
            return dpcodec_corrupt(it, err, "trailing bytes after the last value");
        return CT_NOTFOUND;
    }
    uint8_t flags;
    int rc = dpcodec_unit(&it->q, it->qend, it->base_ms, &p->ts_ms, &p->ms, &flags);
    if (rc)
        return dpcodec_corrupt(it, err, rc == -2 ? "offset beyond the hour" : "short qualifier");
    size_t flen = dpcodec_flags_value_len(flags);
    if ((size_t)(it->vend - it->v) < flen)
        return dpcodec_corrupt(it, err, "value shorter than its qualifiers announce");
    if (dpcodec_read_value(it->v, flen, flags, p))
        return dpcodec_corrupt(it, err, "bad value length in flags");
    it->v += flen;
    return CT_OK;
}

static int dpcodec_next_append(struct dpcodec_iter *it, struct dpcodec_point *p, struct ct_err *err)
{
    if (it->v == it->vend)
        return CT_NOTFOUND;
    uint8_t flags;
    int rc = dpcodec_unit(&it->v, it->vend, it->base_ms, &p->ts_ms, &p->ms, &flags);
    if (rc)
        return dpcodec_corrupt(it, err, rc == -2 ? "offset beyond the hour" : "short record");
    size_t flen = dpcodec_flags_value_len(flags);
    if ((size_t)(it->vend - it->v) < flen)
        return dpcodec_corrupt(it, err, "append record value truncated");
    if (dpcodec_read_value(it->v, flen, flags, p))
        return dpcodec_corrupt(it, err, "bad value length in flags");
    it->v += flen;
    return CT_OK;
}

/* ---- compressed cells --------------------------------------------------------------------- */

/* MSB-first bit reader over nbits bits (a whole number of bytes) at p. Reads take whole
 * big-endian 64-bit windows (never a byte beyond p + nbits / 8), not one bit at a time. */
struct dpcodec_bitr {
    const uint8_t *p;
    size_t nbits, pos;
};

/* The 8 bytes at p[byte..] big-endian, bytes at or past nbytes read as zero. */
static inline uint64_t dpcodec_be64_at(const uint8_t *p, size_t nbytes, size_t byte)
{
    if (byte + 8 <= nbytes)
        return coding_get_be64(p + byte);
    if (nbytes >= 8 && byte < nbytes) /* the last 8 bytes, moved up past those before byte */
        return coding_get_be64(p + nbytes - 8) << (8 * (byte + 8 - nbytes));
    uint64_t v = 0;
    for (size_t i = 0; i < 8; i++)
        v = v << 8 | (byte + i < nbytes ? p[byte + i] : 0);
    return v;
}

/* The next n bits (0..64) at the reader's position, without checking or moving. */
static inline uint64_t dpcodec_bitr_peek(const struct dpcodec_bitr *r, unsigned n)
{
    if (n == 0)
        return 0;
    size_t nbytes = r->nbits >> 3, byte = r->pos >> 3;
    unsigned sh = (unsigned)(r->pos & 7);
    uint64_t v = (dpcodec_be64_at(r->p, nbytes, byte) << sh) >> (64 - n);
    if (sh + n > 64) { /* the last 1..7 bits are in a ninth byte */
        unsigned extra = sh + n - 64;
        uint64_t b9 = byte + 8 < nbytes ? r->p[byte + 8] : 0;
        v |= b9 >> (8 - extra);
    }
    return v;
}

static inline int dpcodec_bitr_get(struct dpcodec_bitr *r, unsigned n, uint64_t *out)
{
    if (r->pos + n > r->nbits)
        return -1;
    *out = dpcodec_bitr_peek(r, n);
    r->pos += n;
    return 0;
}

/* Counts the one-bits before the next zero-bit and moves past that zero-bit (a Rice code's
 * unary part). -1 if the bits end first. */
static inline int dpcodec_bitr_unary(struct dpcodec_bitr *r, uint64_t *count)
{
    uint64_t q = 0;
    size_t nbytes = r->nbits >> 3;
    for (;;) {
        if (r->pos >= r->nbits)
            return -1;
        /* at least 57 valid bits at the top of the window */
        uint64_t x = dpcodec_be64_at(r->p, nbytes, r->pos >> 3) << (r->pos & 7);
        unsigned ones = ~x ? (unsigned)__builtin_clzll(~x) : 64;
        if (ones < 57) {
            if (r->pos + ones + 1 > r->nbits)
                return -1;
            r->pos += ones + 1;
            *count = q + ones;
            return 0;
        }
        q += 56;
        r->pos += 56;
        if (r->pos > r->nbits)
            return -1;
    }
}

static inline int dpcodec_svarint(const uint8_t **p, const uint8_t *end, int64_t *out)
{
    if (*p < end && **p < 0x80) { /* one byte: most heads and block minima */
        *out = coding_unzigzag(**p);
        (*p)++;
        return 0;
    }
    uint64_t u;
    size_t n = coding_get_varint64(*p, end, &u);
    if (!n)
        return -1;
    *p += n;
    *out = coding_unzigzag(u);
    return 0;
}

static int64_t dpcodec_add(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

void dpcodec_big_mul_add(struct dpcodec_big *b, uint64_t mul, uint64_t add)
{
    unsigned __int128 carry = add;
    for (size_t i = 0; i < b->n; i++) {
        unsigned __int128 t = (unsigned __int128)b->l[i] * mul + carry;
        b->l[i] = (uint64_t)t;
        carry = t >> 64;
    }
    if (carry && b->n < DPCODEC_BIG_LIMBS)
        b->l[b->n++] = (uint64_t)carry;
}

/* (hi:lo) / d and its remainder, for hi < d (so the quotient fits 64 bits): one hardware
 * division on x86-64 instead of the generic 128-bit library routine. */
static inline uint64_t dpcodec_div128(uint64_t hi, uint64_t lo, uint64_t d, uint64_t *rem)
{
#if defined(__x86_64__) && defined(__GNUC__)
    uint64_t q, r;
    __asm__("divq %[d]" : "=a"(q), "=d"(r) : [d] "rm"(d), "a"(lo), "d"(hi));
    *rem = r;
    return q;
#else
    unsigned __int128 t = (unsigned __int128)hi << 64 | lo;
    *rem = (uint64_t)(t % d);
    return (uint64_t)(t / d);
#endif
}

static uint64_t dpcodec_big_divmod(struct dpcodec_big *b, uint64_t div)
{
    uint64_t rem = 0;
    for (size_t i = b->n; i-- > 0;)
        b->l[i] = dpcodec_div128(rem, b->l[i], div, &rem);
    while (b->n && !b->l[b->n - 1])
        b->n--;
    return rem;
}

/* The largest power r^m that fits 64 bits (r >= 2), with m in *m. */
static uint64_t dpcodec_radix_chunk(uint64_t r, unsigned *m)
{
    uint64_t p = r;
    unsigned k = 1;
    while (p <= UINT64_MAX / r) {
        p *= r;
        k++;
    }
    *m = k;
    return p;
}

static uint64_t dpcodec_pow(uint64_t r, unsigned k)
{
    uint64_t p = 1;
    while (k--)
        p *= r;
    return p;
}

/* Bits needed to write any of the r^cnt values of cnt digits in base r. */
static size_t dpcodec_radix_bits(uint64_t r, size_t cnt)
{
    struct dpcodec_big p = {{1}, 1};
    unsigned m;
    uint64_t chunk = dpcodec_radix_chunk(r, &m);
    for (size_t i = 0; i + m <= cnt; i += m) /* r^cnt = chunk^(cnt / m) * r^(cnt % m) */
        dpcodec_big_mul_add(&p, chunk, 0);
    if (cnt % m)
        dpcodec_big_mul_add(&p, dpcodec_pow(r, (unsigned)(cnt % m)), 0);
    /* p - 1 */
    for (size_t i = 0; i < p.n; i++)
        if (p.l[i]-- != 0)
            break;
    while (p.n && !p.l[p.n - 1])
        p.n--;
    if (!p.n)
        return 0;
    return 64 * (p.n - 1) + (64 - (size_t)__builtin_clzll(p.l[p.n - 1]));
}

/* dpcodec_radix_bits() for the encoder: bitlen(r^cnt - 1) is floor(cnt log2 r) + 1 when r is no
 * power of two (r^cnt is then no power of two either); the double logarithm decides unless
 * cnt log2 r lies within 1e-6 of an integer (its error is below 1e-11 for cnt <= 128 and
 * r < 2^63), else the exact bignum does. */
size_t dpcodec_radix_bits_fast(uint64_t r, size_t cnt)
{
    if (cnt == 0 || cnt > DPCODEC_BLOCK || (r & (r - 1)) == 0)
        return dpcodec_radix_bits(r, cnt);
    double l = (double)cnt * log2((double)r), f = floor(l);
    if (l - f > 1e-6 && f + 1 - l > 1e-6)
        return (size_t)f + 1;
    return dpcodec_radix_bits(r, cnt);
}

/* dpcodec_radix_bits() through a small per-thread memo: a stream's blocks repeat the same few
 * radixes, and the bignum power costs more than decoding the block. */
static size_t dpcodec_radix_bits_memo(uint64_t r, size_t cnt)
{
    static _Thread_local struct {
        uint64_t r;
        uint32_t cnt, bits;
    } memo[64]; /* r = 0: empty (a radix is >= 2) */
    size_t h = (size_t)(((r * 0x9E3779B97F4A7C15ULL) >> 58) ^ (cnt & 63));
    if (memo[h].r == r && memo[h].cnt == cnt)
        return memo[h].bits;
    size_t bits = dpcodec_radix_bits(r, cnt);
    memo[h].r = r;
    memo[h].cnt = (uint32_t)cnt;
    memo[h].bits = (uint32_t)bits;
    return bits;
}

/* Digit tables for small radixes: for r in 2..DPCODEC_TAB_RMAX, G = dpcodec_tab_g(r) digits per
 * entry (4 while r^4 <= 4096, else 3: at most 4096 entries, 16 KiB) and x < r^G, tab[r][x]
 * holds x's G base-r digits, least significant first, one per byte in memory order (its bytes
 * past G are 0), so that one 4-byte copy writes G digit bytes. Built once per process,
 * read-only after. */
#define DPCODEC_TAB_RMAX 16
static uint32_t *dpcodec_digit_tab[DPCODEC_TAB_RMAX + 1];
static pthread_once_t dpcodec_digit_once = PTHREAD_ONCE_INIT;

static unsigned dpcodec_tab_g(unsigned r)
{
    return r * r * r * r <= 4096 ? 4 : 3;
}

static void dpcodec_digit_tab_build(void)
{
    size_t total = 0;
    for (unsigned r = 2; r <= DPCODEC_TAB_RMAX; r++)
        total += (size_t)dpcodec_pow(r, dpcodec_tab_g(r));
    uint32_t *all = malloc(total * sizeof(uint32_t)); /* kept for the process's life */
    if (!all)
        return; /* tables stay NULL: the digit-by-digit path is used */
    for (unsigned r = 2; r <= DPCODEC_TAB_RMAX; r++) {
        unsigned g = dpcodec_tab_g(r);
        uint32_t size = (uint32_t)dpcodec_pow(r, g);
        for (uint32_t x = 0; x < size; x++) {
            uint8_t b[4] = {0, 0, 0, 0};
            for (unsigned j = 0, y = x; j < g; j++, y /= r)
                b[j] = (uint8_t)(y % r);
            memcpy(&all[x], b, 4);
        }
        dpcodec_digit_tab[r] = all;
        all += size;
    }
}

/* How radix-r blocks (r < 2^32) are split: the number N is divided by C = r^(2m) (the largest
 * such power below 2^64, m digits per 32-bit half) once per 2m digits, with Moeller and
 * Granlund's division by an invariant divisor (two multiplications instead of a hardware
 * division: the divisions of up to three blocks then overlap), and each remainder's digits
 * come by exact multiplications (r > 16), or for r <= 16 three or four at a time from a table
 * as bytes (dpcodec_rdigit_bytes) then made values in a second pass (dpcodec_rexpand). */
struct dpcodec_rplan {
    uint64_t r;             /* 0: unused memo slot */
    unsigned m;             /* r^m < 2^32 <= r^(m+1), or r^(m+1) >= 2^32 */
    uint64_t chunk, chunk2; /* r^m, C = r^(2m) */
    uint64_t cinv, inv;     /* floor((2^64 - 1) / r^m), ceil(2^64 / r) */
    uint64_t d, v;          /* C << s (top bit set) and floor((2^128 - 1) / d) - 2^64 */
    unsigned s;             /* leading zero bits of C */
    const uint32_t *tab;    /* the digit table (r <= DPCODEC_TAB_RMAX), or NULL */
    unsigned g, ng;         /* with the table: G digits per entry, (m - 1) / G entries whole */
    uint64_t rg, invg;      /* r^G, ceil(2^64 / r^G) */
    uint64_t pw[64];        /* r^c for c < 2m */
};

/* The memo slot of radix r's plan (per thread). A slot holds one radix: getting another radix
 * of the same slot rewrites it, so a caller holding a plan checks the slot first. */
static _Thread_local struct dpcodec_rplan dpcodec_rmemo[4];
static struct dpcodec_rplan *dpcodec_rplan_slot(uint64_t r)
{
    return &dpcodec_rmemo[(r * 0x9E3779B97F4A7C15ULL) >> 62];
}

/* The plan of radix r (2 <= r <= UINT32_MAX) from the memo. */
static const struct dpcodec_rplan *dpcodec_rplan_get(uint64_t r)
{
    struct dpcodec_rplan *pl = dpcodec_rplan_slot(r);
    if (pl->r == r)
        return pl;
    memset(pl, 0, sizeof(*pl));
    pl->m = 1;
    pl->chunk = r;
    while (pl->chunk * r <= UINT32_MAX) {
        pl->chunk *= r;
        pl->m++;
    }
    pl->chunk2 = pl->chunk * pl->chunk;
    pl->cinv = UINT64_MAX / pl->chunk;
    pl->inv = UINT64_MAX / r + 1;
    pl->s = (unsigned)__builtin_clzll(pl->chunk2);
    pl->d = pl->chunk2 << pl->s;
    pl->v = (uint64_t)(~(unsigned __int128)0 / pl->d); /* the quotient minus 2^64 */
    pl->pw[0] = 1;
    for (unsigned c = 1; c < 2 * pl->m; c++)
        pl->pw[c] = pl->pw[c - 1] * r;
    if (r <= DPCODEC_TAB_RMAX && pl->m >= 3) {
        pthread_once(&dpcodec_digit_once, dpcodec_digit_tab_build);
        pl->tab = dpcodec_digit_tab[r];
        pl->g = dpcodec_tab_g((unsigned)r);
        pl->ng = (pl->m - 1) / pl->g;
        pl->rg = dpcodec_pow(r, pl->g);
        pl->invg = UINT64_MAX / pl->rg + 1;
    }
    pl->r = r;
    return pl;
}

/* (u1:u0) / d and its remainder for u1 < d, d with its top bit set and v its reciprocal
 * (Moeller and Granlund, "Improved division by invariant integers", algorithm 4). */
static inline uint64_t dpcodec_div_inv(uint64_t u1, uint64_t u0, uint64_t d, uint64_t v,
                                       uint64_t *rem)
{
    /* (q1:q0) = v u1 + ((u1 + 1):u0), in 64-bit halves (an __int128 sum went through the
     * stack) */
    unsigned __int128 p = (unsigned __int128)v * u1;
    uint64_t q0 = (uint64_t)p + u0;
    uint64_t q1 = (uint64_t)(p >> 64) + u1 + 1 + (q0 < u0);
    uint64_t r = u0 - q1 * d;
    uint64_t fix = -(uint64_t)(r > q0); /* branch-free: taken about half the time */
    q1 += fix;
    r += fix & d;
    if (__builtin_expect(r >= d, 0)) {
        q1++;
        r -= d;
    }
    *rem = r;
    return q1;
}

/* One radix block being read: its number as limbs, and where its digits go. */
struct dpcodec_rblock {
    const struct dpcodec_rplan *pl;
    uint64_t l[DPCODEC_BIG_LIMBS]; /* the number, then its quotients; little-endian */
    size_t n;                      /* limbs in use */
    uint64_t cnt;                  /* digits */
    int64_t mn;
    int64_t *out;
    uint64_t rem[DPCODEC_BLOCK / 2 + 1]; /* remainders mod C, least significant first */
};

/* One pass over up to three numbers of n limbs (zero-padded) with the same divisor C = d >> s:
 * each is replaced by its quotient and its remainder returned in rem[]. The lanes are written
 * out (not a loop over lanes) so that their states stay in registers: the three chains of
 * dependent divisions then overlap. A lane pointer may repeat lane 0's number (nb < 3). */
#define DPCODEC_LANE_STEP(L, R)                                                                    \
    do {                                                                                           \
        uint64_t u0_ = L[i] << s | (i ? (L[i - 1] >> t) >> 1 : 0);                                 \
        L[i] = dpcodec_div_inv(R, u0_, d, v, &R);                                                  \
    } while (0)
DPCODEC_HOT static void dpcodec_rpass(uint64_t *l0, uint64_t *l1, uint64_t *l2, unsigned nb,
                                      size_t n, const struct dpcodec_rplan *pl, uint64_t *rem)
{
    const uint64_t d = pl->d, v = pl->v;
    const unsigned s = pl->s, t = 63 - s;
    uint64_t r0 = (l0[n - 1] >> t) >> 1; /* the bits shifted out on top */
    if (nb == 1) {
        for (size_t i = n; i-- > 0;)
            DPCODEC_LANE_STEP(l0, r0);
    } else if (nb == 2) {
        uint64_t r1 = (l1[n - 1] >> t) >> 1;
        for (size_t i = n; i-- > 0;) {
            DPCODEC_LANE_STEP(l0, r0);
            DPCODEC_LANE_STEP(l1, r1);
        }
        rem[1] = r1 >> s;
    } else {
        uint64_t r1 = (l1[n - 1] >> t) >> 1, r2 = (l2[n - 1] >> t) >> 1;
        for (size_t i = n; i-- > 0;) {
            DPCODEC_LANE_STEP(l0, r0);
            DPCODEC_LANE_STEP(l1, r1);
            DPCODEC_LANE_STEP(l2, r2);
        }
        rem[1] = r1 >> s;
        rem[2] = r2 >> s;
    }
    rem[0] = r0 >> s;
}
#undef DPCODEC_LANE_STEP

/* Writes cnt (<= m) base-r digits of x (x < r^cnt), least significant first, each plus mn into
 * out; with acc, the running sum *acc + (mn + d0) + (mn + d1) + ... instead (and *acc moves). */
static inline void dpcodec_rdigits(const struct dpcodec_rplan *pl, uint64_t x, unsigned cnt,
                                   int64_t mn, int64_t *out, uint64_t *acc)
{
    uint64_t umn = (uint64_t)mn;
    for (unsigned k = 0; k < cnt; k++) { /* x < 2^32: ceil(2^64 / r) divides exactly */
        uint64_t q = (uint64_t)(((unsigned __int128)pl->inv * x) >> 64);
        uint64_t d = umn + (x - q * pl->r);
        out[k] = (int64_t)(acc ? (*acc += d) : d);
        x = q;
    }
}

/* Writes the digits of x < r^cnt (cnt < 2m): its two halves mod r^m. */
static inline void dpcodec_rdigits64(const struct dpcodec_rplan *pl, uint64_t x, unsigned cnt,
                                     int64_t mn, int64_t *out, uint64_t *acc)
{
    if (cnt <= pl->m) {
        dpcodec_rdigits(pl, x, cnt, mn, out, acc);
        return;
    }
    /* floor(x floor((2^64 - 1) / R) / 2^64) is the quotient or one less */
    uint64_t hi = (uint64_t)(((unsigned __int128)pl->cinv * x) >> 64);
    uint64_t lo = x - hi * pl->chunk;
    uint64_t fix = lo >= pl->chunk;
    hi += fix;
    lo -= fix * pl->chunk;
    dpcodec_rdigits(pl, lo, pl->m, mn, out, acc);
    dpcodec_rdigits(pl, hi, cnt - pl->m, mn, out + pl->m, acc);
}

/* The m digits of a 32-bit half x < r^m (r <= DPCODEC_TAB_RMAX), least significant first, one
 * per byte into d[0..m): ng table entries of G digits (x mod r^G by an exact multiplication:
 * x < 2^32 and r^G <= 4096, so ceil(2^64 / r^G) divides exactly), then the last 1..G digits
 * (x < r^G by then) from one more entry. Each entry is a 4-byte copy: bytes up to d[m + 3] may
 * be written with zeros, which a later half (written after this one) overwrites. */
static inline __attribute__((always_inline)) void
dpcodec_rhalf_bytes(const struct dpcodec_rplan *pl, uint64_t x, uint8_t *d)
{
    const uint32_t *tab = pl->tab;
    for (unsigned i = 0; i < pl->ng; i++, d += pl->g) {
        uint64_t q = (uint64_t)(((unsigned __int128)pl->invg * x) >> 64);
        memcpy(d, &tab[x - q * pl->rg], 4);
        x = q;
    }
    memcpy(d, &tab[x], 4);
}

/* Bytes dpcodec_rdigit_bytes() may write past a block's last digit. */
#define DPCODEC_RDIGIT_SPARE (2 * 31 + 4)

/* The digits of a radix block (r <= DPCODEC_TAB_RMAX) as bytes: the 2m digits of each of the n
 * remainders rem[] mod C (block order), then those of last (< r^tail, tail < 2m: its digits past
 * tail are zeros), each remainder split into its 32-bit halves mod r^m. d gets n * 2m + 2m
 * digit bytes and may get zero bytes up to 4 past them: room DPCODEC_BLOCK +
 * DPCODEC_RDIGIT_SPARE. The halves' multiplication chains are independent: they overlap. */
static DPCODEC_HOT void dpcodec_rdigit_bytes(const struct dpcodec_rplan *pl, const uint64_t *rem,
                                             uint64_t n, uint64_t last, uint8_t *d)
{
    const unsigned m = pl->m;
    const uint64_t chunk = pl->chunk, cinv = pl->cinv;
    for (uint64_t k = 0; k <= n; k++, d += 2 * m) {
        uint64_t x = k < n ? rem[k] : last;
        /* floor(x floor((2^64 - 1) / r^m) / 2^64) is the quotient or one less */
        uint64_t hi = (uint64_t)(((unsigned __int128)cinv * x) >> 64);
        uint64_t lo = x - hi * chunk;
        uint64_t fix = lo >= chunk;
        hi += fix;
        lo -= fix * chunk;
        dpcodec_rhalf_bytes(pl, lo, d);
        dpcodec_rhalf_bytes(pl, hi, d + m); /* after lo: overwrites its spare bytes */
    }
}

/* Turns cnt digit bytes d[] (each < 16; 8 bytes readable from any k < cnt) into the block's
 * values: out[k] = mn + d[k], or with acc the running sums *acc + (mn + d[0]) + ... + (mn + d[k])
 * (64-bit wrap-around; *acc moves to the last). The AVX2 version (chosen once by CPUID) does
 * eight at a time: the running sums of eight digits come from one multiplication by
 * 0x0101010101010101 (byte j of the product is d[0] + ... + d[j] <= 8 * 15 < 256, so no byte
 * carries into the next), widened to two vectors of four 64-bit lanes and added to
 * a + (j + 1) mn. */
static void dpcodec_rexpand_plain(const uint8_t *d, uint64_t cnt, int64_t mn, int64_t *out,
                                  uint64_t *acc)
{
    const uint64_t umn = (uint64_t)mn;
    if (acc) {
        uint64_t a = *acc;
        for (uint64_t k = 0; k < cnt; k++)
            out[k] = (int64_t)(a += umn + d[k]);
        *acc = a;
        return;
    }
    for (uint64_t k = 0; k < cnt; k++)
        out[k] = (int64_t)(umn + d[k]);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define DPCODEC_AVX2 1
__attribute__((target("avx2"))) static void
dpcodec_rexpand_avx2(const uint8_t *d, uint64_t cnt, int64_t mn, int64_t *out, uint64_t *acc)
{
    const uint64_t umn = (uint64_t)mn;
    uint64_t k = 0;
    if (acc) {
        uint64_t a = *acc;
        const __m256i s0 = _mm256_set_epi64x((long long)(4 * umn), (long long)(3 * umn),
                                             (long long)(2 * umn), (long long)umn);
        const __m256i s1 = _mm256_add_epi64(s0, _mm256_set1_epi64x((long long)(4 * umn)));
        for (; k + 8 <= cnt; k += 8) {
            uint64_t w;
            memcpy(&w, d + k, 8);
            uint64_t p = w * 0x0101010101010101ULL; /* byte j: d[k] + ... + d[k + j] */
            __m128i pv = _mm_cvtsi64_si128((long long)p);
            __m256i av = _mm256_set1_epi64x((long long)a);
            __m256i v0 = _mm256_cvtepu8_epi64(pv);
            __m256i v1 = _mm256_cvtepu8_epi64(_mm_srli_epi64(pv, 32));
            v0 = _mm256_add_epi64(v0, _mm256_add_epi64(av, s0));
            v1 = _mm256_add_epi64(v1, _mm256_add_epi64(av, s1));
            _mm256_storeu_si256((__m256i *)(void *)(out + k), v0);
            _mm256_storeu_si256((__m256i *)(void *)(out + k + 4), v1);
            a += 8 * umn + (p >> 56);
        }
        for (; k < cnt; k++)
            out[k] = (int64_t)(a += umn + d[k]);
        *acc = a;
    } else {
        const __m256i mv = _mm256_set1_epi64x((long long)umn);
        for (; k + 4 <= cnt; k += 4) {
            int32_t w;
            memcpy(&w, d + k, 4);
            __m256i v = _mm256_add_epi64(_mm256_cvtepu8_epi64(_mm_cvtsi32_si128(w)), mv);
            _mm256_storeu_si256((__m256i *)(void *)(out + k), v);
        }
        for (; k < cnt; k++)
            out[k] = (int64_t)(umn + d[k]);
    }
    /* the callers are SSE code: clear the upper halves (GCC left it out before a tail call) */
    _mm256_zeroupper();
}
#endif

/* AVX2 use: -1 until asked (threads asking at once all store the same answer), 0 or 1; 0 also
 * after dpcodec_set_simd(false). */
static _Atomic int dpcodec_avx2 = -1;

void dpcodec_set_simd(bool allowed)
{
    atomic_store_explicit(&dpcodec_avx2, allowed ? -1 : 0, memory_order_relaxed);
}

#ifdef DPCODEC_AVX2
/* Whether the AVX2 versions run: the CPU has it and dpcodec_set_simd did not turn it off. */
static bool dpcodec_use_avx2(void)
{
    int have = atomic_load_explicit(&dpcodec_avx2, memory_order_relaxed);
    if (__builtin_expect(have < 0, 0)) {
        have = __builtin_cpu_supports("avx2") ? 1 : 0;
        atomic_store_explicit(&dpcodec_avx2, have, memory_order_relaxed);
    }
    return have;
}
#endif

static void dpcodec_rexpand(const uint8_t *d, uint64_t cnt, int64_t mn, int64_t *out, uint64_t *acc)
{
#ifdef DPCODEC_AVX2
    if (dpcodec_use_avx2()) {
        dpcodec_rexpand_avx2(d, cnt, mn, out, acc);
        return;
    }
#endif
    dpcodec_rexpand_plain(d, cnt, mn, out, acc);
}

/* v[0..n) (decimal mantissas, in place) become m / 10^e as doubles' bits, the division of
 * dpcodec_decimal() for DPCODEC_DOUBLE. With AVX2 four at a time: a mantissa of magnitude below
 * 2^51 is made a double exactly by the bias trick (its bits added to those of 2^52 + 2^51, then
 * that number subtracted), as (double)m makes it, vdivpd rounds as divsd does and vcvtpd2ps as
 * cvtsd2ss (FLOAT): the same bits; four with a larger one are converted one by one. */
#ifdef DPCODEC_AVX2
__attribute__((target("avx2"))) static void dpcodec_decimals_avx2(uint64_t *v, uint64_t n, double div,
                                                                  bool fl)
{
    const __m256i bias = _mm256_set1_epi64x(0x4338000000000000LL); /* the bits of 2^52 + 2^51 */
    const __m256d magic = _mm256_set1_pd(6755399441055744.0);      /* 2^52 + 2^51 */
    const __m256i half = _mm256_set1_epi64x(1LL << 51);
    const __m256i top = _mm256_set1_epi64x((long long)0xFFF0000000000000ULL);
    const __m256d dv = _mm256_set1_pd(div);
    uint64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256i m = _mm256_loadu_si256((const __m256i *)(const void *)(v + i));
        if (!_mm256_testz_si256(_mm256_add_epi64(m, half), top)) { /* m + 2^51 >= 2^52 */
            for (uint64_t k = i; k < i + 4; k++) {
                double d = (double)(int64_t)v[k] / div;
                v[k] = dpcodec_dbits(fl ? (double)(float)d : d);
            }
            continue;
        }
        __m256d d = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_add_epi64(m, bias)), magic);
        d = _mm256_div_pd(d, dv);
        if (fl) /* rounded to float and back, as (double)(float)d */
            d = _mm256_cvtps_pd(_mm256_cvtpd_ps(d));
        _mm256_storeu_si256((__m256i *)(void *)(v + i), _mm256_castpd_si256(d));
    }
    for (; i < n; i++) {
        double d = (double)(int64_t)v[i] / div;
        v[i] = dpcodec_dbits(fl ? (double)(float)d : d);
    }
    _mm256_zeroupper();
}
#endif

static void dpcodec_decimals(uint64_t *v, uint64_t n, unsigned e10, enum dpcodec_type t)
{
#ifdef DPCODEC_AVX2
    if (dpcodec_use_avx2()) {
        dpcodec_decimals_avx2(v, n, dpcodec_p10[e10], t == DPCODEC_FLOAT);
        return;
    }
#endif
    for (uint64_t i = 0; i < n; i++)
        v[i] = dpcodec_dbits(dpcodec_decimal((int64_t)v[i], e10, t));
}

/* Reads the numbers of nb (1..3) radix blocks (r < 2^32), whose limbs are loaded, and writes
 * their digits in block order (with acc: as one running sum across the blocks). -1 if a block's
 * number is r^cnt or more (never written so). */
DPCODEC_HOT static int dpcodec_rblocks_read(struct dpcodec_rblock *blk, unsigned nb, uint64_t *acc)
{
    struct dpcodec_rblock *b[3];
    size_t n = 0, left = nb;
    uint64_t passes[3] = {0, 0, 0};
    for (unsigned q = 0; q < nb; q++) {
        b[q] = &blk[q];
        passes[q] = blk[q].cnt / (2 * blk[q].pl->m);
        n = blk[q].n > n ? blk[q].n : n;
    }
    if (n == 0)
        n = 1;
    for (unsigned q = 0; q < nb; q++) /* one length for the lock step */
        for (size_t i = blk[q].n; i < n; i++)
            blk[q].l[i] = 0;
    /* lanes of one radix divide together; blocks of different radixes one by one */
    bool same = true;
    for (unsigned q = 1; q < nb; q++)
        same &= blk[q].pl == blk[0].pl;
    for (size_t k = 0; left > 0; k++) {
        unsigned w = 0;
        for (unsigned q = 0; q < left; q++) /* the lanes still dividing: b[0..left) */
            if (k < passes[b[q] - blk])
                b[w++] = b[q];
        left = w;
        while (n > 1) { /* shrink the common length while every lane's top limb is 0 */
            bool zero = true;
            for (unsigned q = 0; q < left; q++)
                zero &= b[q]->l[n - 1] == 0;
            if (!zero)
                break;
            n--;
        }
        uint64_t r[3];
        if (same && left > 1) {
            dpcodec_rpass(b[0]->l, b[1]->l, b[left - 1]->l, left, n, b[0]->pl, r);
            for (unsigned q = 0; q < left; q++)
                b[q]->rem[k] = r[q];
        } else {
            for (unsigned q = 0; q < left; q++) {
                dpcodec_rpass(b[q]->l, NULL, NULL, 1, n, b[q]->pl, r);
                b[q]->rem[k] = r[0];
            }
        }
    }
    for (unsigned q = 0; q < nb; q++) {
        struct dpcodec_rblock *x = &blk[q];
        const struct dpcodec_rplan *pl = x->pl;
        unsigned m2 = 2 * pl->m, tail = (unsigned)(x->cnt - passes[q] * m2);
        /* what is left of the number after the passes holds the last `tail` digits */
        size_t top = x->n;
        while (top > 1 && x->l[top - 1] == 0)
            top--;
        uint64_t last = x->l[0];
        if (top > 1 || last >= pl->pw[tail])
            return -1;
        if (pl->tab) {
            uint8_t dg[DPCODEC_BLOCK + DPCODEC_RDIGIT_SPARE];
            dpcodec_rdigit_bytes(pl, x->rem, passes[q], last, dg);
            dpcodec_rexpand(dg, x->cnt, x->mn, x->out, acc);
            continue;
        }
        for (uint64_t k = 0; k < passes[q]; k++)
            dpcodec_rdigits64(pl, x->rem[k], m2, x->mn, x->out + k * m2, acc);
        if (tail)
            dpcodec_rdigits64(pl, last, tail, x->mn, x->out + passes[q] * m2, acc);
    }
    return 0;
}

/* Loads a radix block's number (bits bits right-aligned in `bytes` big-endian bytes; the
 * padding bits before it are ignored) as little-endian limbs. -1 if it cannot fit. */
static int dpcodec_radix_load(const uint8_t *p, size_t bytes, size_t bits, uint64_t *l, size_t *n)
{
    if ((bytes + 7) / 8 > DPCODEC_BIG_LIMBS)
        return -1;
    size_t b = 0;                  /* bytes from the least significant end */
    for (; b + 8 <= bytes; b += 8) /* whole limbs */
        l[b / 8] = coding_get_be64(p + bytes - b - 8);
    if (b < bytes && bytes >= 8) { /* the top limb's 1..7 bytes: the first 8, shifted */
        l[b / 8] = coding_get_be64(p) >> (8 * (8 - (bytes - b)));
    } else if (b < bytes) {
        l[0] = 0;
        for (; b < bytes; b++)
            l[b / 8] |= (uint64_t)p[bytes - 1 - b] << (8 * (b % 8));
    }
    if (bytes * 8 > bits) /* clear the padding bits before the number */
        l[(bytes - 1) / 8] &= ~(~(uint64_t)0 << (bits - ((bytes - 1) / 8) * 64));
    *n = (bytes + 7) / 8;
    while (*n && !l[*n - 1])
        (*n)--;
    return 0;
}

/* A radix block of any radix (r >= 2^32 included), digit by digit: its cnt base-r digits, least
 * significant first, each plus mn, into res. -1 if the number is r^cnt or more. */
static int dpcodec_radix_read(const uint8_t *p, size_t bytes, size_t bits, uint64_t r, uint64_t cnt,
                              int64_t mn, int64_t *res)
{
    struct dpcodec_big big;
    if (dpcodec_radix_load(p, bytes, bits, big.l, &big.n))
        return -1;
    /* m digits at a time: N mod r^m holds the next m digits */
    unsigned m;
    uint64_t chunk = dpcodec_radix_chunk(r, &m);
    for (uint64_t j = 0; j < cnt;) {
        unsigned c = cnt - j < m ? (unsigned)(cnt - j) : m;
        uint64_t rem = dpcodec_big_divmod(&big, c == m ? chunk : dpcodec_pow(r, c));
        for (unsigned k = 0; k < c; k++, j++) {
            res[j] = (int64_t)((uint64_t)mn + rem % r);
            rem /= r;
        }
    }
    return big.n ? -1 : 0;
}

/* What dpcodec_stream_read() found when every residual is 0: x_i = h0 + i * h1 (64-bit
 * wrap-around; h1 = 0 below order 2, h0 = 0 at order 0). */
struct dpcodec_prog {
    bool is;
    int64_t h0, h1;
};

/* A patched block's packed entries (dpcodec_format.h): out[j] = mn + slope * j + the j-th w-bit
 * field of p (64-bit wrap-around). The cnt * w bits lie within avail bytes; 8-byte loads are
 * taken while they stay inside avail (as in the bit-packed reader), the rest bit by bit. */
static void dpcodec_unpack_line(const uint8_t *p, size_t avail, unsigned w, uint64_t cnt,
                                int64_t mn, int64_t slope, int64_t *out)
{
    uint64_t j = 0, pos = 0, t = (uint64_t)mn;
    const uint64_t sl = (uint64_t)slope;
    if (w == 0) {
        for (; j < cnt; j++, t += sl)
            out[j] = (int64_t)t;
        return;
    }
    if (w <= 57 && avail >= 8) {
        uint64_t fast = (uint64_t)((avail - 8) * 8 + 7) / w + 1;
        if (fast > cnt)
            fast = cnt;
        const unsigned down = 64 - w;
        for (; j < fast; j++, pos += w, t += sl)
            out[j] = (int64_t)(t + ((coding_get_be64(p + (pos >> 3)) << (pos & 7)) >> down));
    }
    struct dpcodec_bitr r = {p, avail * 8, (size_t)pos};
    for (; j < cnt; j++, t += sl) {
        out[j] = (int64_t)(t + dpcodec_bitr_peek(&r, w));
        r.pos += w;
    }
}

/* With run: the cnt entries of x become their running sum continuing *acc (64-bit wrap-around),
 * four per step (the loop's own overhead was as large as the additions). */
static inline void dpcodec_run_sum(int64_t *x, uint64_t cnt, bool run, uint64_t *acc)
{
    if (!run)
        return;
    uint64_t a = *acc, i = 0;
    for (; i + 4 <= cnt; i += 4) {
        x[i] = (int64_t)(a += (uint64_t)x[i]);
        x[i + 1] = (int64_t)(a += (uint64_t)x[i + 1]);
        x[i + 2] = (int64_t)(a += (uint64_t)x[i + 2]);
        x[i + 3] = (int64_t)(a += (uint64_t)x[i + 3]);
    }
    for (; i < cnt; i++)
        x[i] = (int64_t)(a += (uint64_t)x[i]);
    *acc = a;
}

/* Reads an integer stream of order k with n entries into xs. With prog non-NULL, a stream
 * whose residuals are all 0 is reported there instead and xs is not written. */
DPCODEC_HOT static int dpcodec_stream_read_prog(const uint8_t **pp, const uint8_t *end, unsigned k,
                                                uint64_t n, int64_t *xs, struct dpcodec_prog *prog,
                                                bool patched_ok)
{
    const uint8_t *p = *pp;
    uint64_t heads = k < n ? k : n;
    int64_t h[2] = {0, 0};
    for (uint64_t i = 0; i < heads; i++)
        if (dpcodec_svarint(&p, end, &h[i]))
            return -1;
    uint64_t m = n - heads, done = 0;
    int64_t *res = xs + heads;
    /* order 1: each block's entries become the running sum as the block is read (the values
     * x_i = x_0 + r_1 + ... + r_i), while the block is in cache (radix blocks as their digits
     * are written) */
    bool run = k == 1;
    uint64_t acc = (uint64_t)h[0];
    /* while every residual so far is 0 (zero-width blocks of minimum 0: a regular series) they
     * are not written; the first other block writes them */
    bool zeros = true;
    while (done < m) {
        if (p == end)
            return -1;
        unsigned w = *p++;
        int64_t mn;
        unsigned rk = 0;
        if (w == DPCODEC_RICE_BLOCK || w == DPCODEC_PATCHED_BLOCK) {
            /* the Rice parameter (0..63), or the patched block's width (0..64) */
            if (p == end || *p > (w == DPCODEC_RICE_BLOCK ? 63 : 64))
                return -1;
            rk = *p++;
        }
        if ((w > 64 && w != DPCODEC_VARINT_BLOCK && w != DPCODEC_RICE_BLOCK &&
             w != DPCODEC_RADIX_BLOCK && (w != DPCODEC_PATCHED_BLOCK || !patched_ok)) ||
            dpcodec_svarint(&p, end, &mn))
            return -1;
        uint64_t cnt = m - done < DPCODEC_BLOCK ? m - done : DPCODEC_BLOCK;
        if (zeros) {
            if (w == 0 && mn == 0) {
                done += cnt;
                continue;
            }
            for (uint64_t j = 0; j < done; j++) /* residuals 0: the values stay x_0 */
                res[j] = run ? h[0] : 0;
            zeros = false;
        }
        if (w == DPCODEC_RADIX_BLOCK) {
            /* this radix block and up to two more right after it (their divisions overlap) */
            struct dpcodec_rblock blk[3];
            unsigned nb = 0;
            for (;;) {
                uint64_t r;
                size_t k2 = coding_get_varint64(p, end, &r);
                if (!k2 || r < 2 || r >= (1ull << 63))
                    return -1;
                p += k2;
                size_t bits = dpcodec_radix_bits_memo(r, (size_t)cnt), bytes = (bits + 7) / 8;
                if ((size_t)(end - p) < bytes)
                    return -1;
                if (r > UINT32_MAX) { /* alone, digit by digit */
                    if (nb && dpcodec_rblocks_read(blk, nb, run ? &acc : NULL))
                        return -1;
                    nb = 0;
                    if (dpcodec_radix_read(p, bytes, bits, r, cnt, mn, res + done))
                        return -1;
                    for (uint64_t j = 0; run && j < cnt; j++)
                        res[done + j] = (int64_t)(acc += (uint64_t)res[done + j]);
                } else {
                    /* a pending block's plan in the slot this radix would rewrite: read the
                     * pending ones first */
                    const struct dpcodec_rplan *slot = dpcodec_rplan_slot(r);
                    bool clash = false;
                    for (unsigned j = 0; j < nb; j++)
                        clash |= blk[j].pl == slot && slot->r != r;
                    if (clash) {
                        if (dpcodec_rblocks_read(blk, nb, run ? &acc : NULL))
                            return -1;
                        nb = 0;
                    }
                    struct dpcodec_rblock *x = &blk[nb++];
                    if (dpcodec_radix_load(p, bytes, bits, x->l, &x->n))
                        return -1;
                    x->pl = dpcodec_rplan_get(r);
                    x->cnt = cnt;
                    x->mn = mn;
                    x->out = res + done;
                }
                p += bytes;
                done += cnt;
                /* another radix block next? */
                if (nb == 3 || done >= m || p == end || *p != DPCODEC_RADIX_BLOCK)
                    break;
                const uint8_t *q = p + 1;
                if (dpcodec_svarint(&q, end, &mn))
                    return -1;
                p = q;
                cnt = m - done < DPCODEC_BLOCK ? m - done : DPCODEC_BLOCK;
            }
            if (nb && dpcodec_rblocks_read(blk, nb, run ? &acc : NULL))
                return -1;
            continue;
        }
        if (w == DPCODEC_PATCHED_BLOCK) {
            int64_t slope;
            if (dpcodec_svarint(&p, end, &slope) || p == end)
                return -1;
            uint64_t ne = *p++;
            size_t bytes = (size_t)((cnt * rk + 7) / 8);
            if (ne > cnt || (size_t)(end - p) < bytes)
                return -1;
            dpcodec_unpack_line(p, (size_t)(end - p), rk, cnt, mn, slope, res + done);
            p += bytes;
            if ((uint64_t)(end - p) < ne)
                return -1;
            const uint8_t *at = p;
            p += ne;
            for (uint64_t e = 0; e < ne; e++) {
                int64_t high;
                if (at[e] >= cnt || (e && at[e] <= at[e - 1]) || dpcodec_svarint(&p, end, &high))
                    return -1;
                if (rk == 64 && high != 0)
                    return -1; /* a 64-bit width leaves nothing above it */
                if (rk < 64)
                    res[done + at[e]] =
                        (int64_t)((uint64_t)res[done + at[e]] + ((uint64_t)high << rk));
            }
            dpcodec_run_sum(res + done, cnt, run, &acc);
            done += cnt;
            continue;
        }
        if (w == DPCODEC_RICE_BLOCK) {
            struct dpcodec_bitr r = {p, (size_t)(end - p) * 8, 0};
            size_t nbytes = (size_t)(end - p);
            const uint64_t umn = (uint64_t)mn, rk1 = (uint64_t)rk + 1, rsh = 63 - (uint64_t)rk;
            int64_t *o = res + done;
            uint64_t j = 0;
            while (j < cnt) {
                /* a window of the next bits in a register (a whole 8-byte load inside the
                 * stream, zeros past its end: avail counts the valid bits, at most 63 so that
                 * every shift below is by less than 64); its entries are decoded from the
                 * register, each one's length only a clz and a shift after the previous one's
                 * (an entry's position no longer waits for a load) */
                size_t byte = r.pos >> 3;
                unsigned sh = (unsigned)(r.pos & 7);
                /* the window's bits inverted: a unary part's ones are the leading zeros of y
                 * (the zeros shifted in below read as ones of the window, past avail) */
                uint64_t y = ~(dpcodec_be64_at(p, nbytes, byte) << sh);
                size_t left = r.nbits - r.pos;
                uint64_t avail = left < 63 - sh ? left : 63 - sh, av = avail;
                uint64_t j0 = j;
                /* 64-bit counts throughout (no widening in the loop); the position is advanced
                 * once, by the bits the window gave */
                for (; j < cnt; j++) {
                    /* | 1: y == 0 (63 or 64 ones) counts 63, too long for any window */
                    uint64_t ones = (uint64_t)__builtin_clzll(y | 1);
                    uint64_t len = ones + rk1;
                    if (len > av)
                        break;
                    /* y << ones has the code's zero (a one in y) on top and the rk low bits,
                     * inverted, after it: inverted back and shifted down, the top bit leaves
                     * 0 and the rk bits (0 for rk 0) */
                    uint64_t low = ~(y << ones) >> rsh;
                    o[j] = (int64_t)(umn + (uint64_t)coding_unzigzag(ones << rk | low));
                    y <<= len;
                    av -= len;
                }
                r.pos += (size_t)(avail - av);
                if (j > j0 || j == cnt)
                    continue;
                /* an entry longer than a window (or cut by the stream's end): checked */
                uint64_t q = 0, low = 0;
                if (dpcodec_bitr_unary(&r, &q))
                    return -1;
                if (rk && dpcodec_bitr_get(&r, rk, &low))
                    return -1;
                if (rk >= 64 ? q != 0 : q > (UINT64_MAX >> rk))
                    return -1;
                uint64_t high = rk >= 64 ? 0 : q << rk; /* a shift by 64 is undefined */
                o[j++] = (int64_t)(umn + (uint64_t)coding_unzigzag(high | low));
            }
            p += (r.pos + 7) / 8;
            dpcodec_run_sum(res + done, cnt, run, &acc);
            done += cnt;
            continue;
        }
        if (w == DPCODEC_VARINT_BLOCK) {
            for (uint64_t j = 0; j < cnt; j++) {
                uint64_t u;
                size_t k2 = coding_get_varint64(p, end, &u);
                if (!k2)
                    return -1;
                p += k2;
                res[done + j] = (int64_t)((uint64_t)mn + u);
            }
            dpcodec_run_sum(res + done, cnt, run, &acc);
            done += cnt;
            continue;
        }
        size_t bytes = (size_t)((cnt * w + 7) / 8);
        if ((size_t)(end - p) < bytes)
            return -1;
        uint64_t summed = 0; /* the block's first entries already made running sums */
        if (w == 0) {
            for (uint64_t j = 0; j < cnt; j++)
                res[done + j] = mn;
        } else {
            /* cnt * w bits fit in the block: unchecked window reads (the reader spans the rest
             * of the stream so that whole 8-byte loads are possible near the block's end) */
            struct dpcodec_bitr r = {p, (size_t)(end - p) * 8, 0};
            uint64_t j = 0;
            size_t avail = (size_t)(end - p);
            if (w <= 57 && avail >= 8) {
                /* dpcodec_bitr_peek() without its tests while a whole 8-byte load at the
                 * entry's byte stays inside the stream (entries j with floor(j w / 8) + 8 <=
                 * avail), and sh + w <= 64 never needs a ninth byte */
                uint64_t fast = (uint64_t)((avail - 8) * 8 + 7) / w + 1;
                if (fast > cnt)
                    fast = cnt;
                const unsigned down = 64 - w;
                uint64_t pos = 0;
                int64_t *o = res + done;
                const uint64_t umn = (uint64_t)mn, w2 = 2 * (uint64_t)w, w3 = 3 * (uint64_t)w;
                if (run && w <= 28) {
                    /* order 1, two entries per 8-byte load: entry j starts at bit pos & 7 <= 7
                     * of the load and j + 1 ends by bit 7 + 2w <= 63 of it */
                    uint64_t a = acc;
                    for (; j + 4 <= fast; j += 4, pos += 4 * (uint64_t)w) {
                        uint64_t p2 = pos + w2;
                        uint64_t x0 = coding_get_be64(p + (pos >> 3)) << (pos & 7);
                        uint64_t x1 = coding_get_be64(p + (p2 >> 3)) << (p2 & 7);
                        o[j] = (int64_t)(a += umn + (x0 >> down));
                        o[j + 1] = (int64_t)(a += umn + ((x0 << w) >> down));
                        o[j + 2] = (int64_t)(a += umn + (x1 >> down));
                        o[j + 3] = (int64_t)(a += umn + ((x1 << w) >> down));
                    }
                    acc = a;
                    summed = j;
                } else if (run) { /* order 1: running sums straight away (no second pass) */
                    uint64_t a = acc;
                    for (; j + 4 <= fast; j += 4, pos += 4 * (uint64_t)w) {
                        uint64_t p1 = pos + w, p2 = pos + w2, p3 = pos + w3;
                        uint64_t u0 = (coding_get_be64(p + (pos >> 3)) << (pos & 7)) >> down;
                        uint64_t u1 = (coding_get_be64(p + (p1 >> 3)) << (p1 & 7)) >> down;
                        uint64_t u2 = (coding_get_be64(p + (p2 >> 3)) << (p2 & 7)) >> down;
                        uint64_t u3 = (coding_get_be64(p + (p3 >> 3)) << (p3 & 7)) >> down;
                        o[j] = (int64_t)(a += umn + u0);
                        o[j + 1] = (int64_t)(a += umn + u1);
                        o[j + 2] = (int64_t)(a += umn + u2);
                        o[j + 3] = (int64_t)(a += umn + u3);
                    }
                    acc = a;
                    summed = j;
                }
                for (; w <= 28 && j + 4 <= fast; j += 4, pos += 4 * (uint64_t)w) {
                    uint64_t p2 = pos + w2; /* two entries per load, as above */
                    uint64_t x0 = coding_get_be64(p + (pos >> 3)) << (pos & 7);
                    uint64_t x1 = coding_get_be64(p + (p2 >> 3)) << (p2 & 7);
                    o[j] = (int64_t)(umn + (x0 >> down));
                    o[j + 1] = (int64_t)(umn + ((x0 << w) >> down));
                    o[j + 2] = (int64_t)(umn + (x1 >> down));
                    o[j + 3] = (int64_t)(umn + ((x1 << w) >> down));
                }
                for (; j + 4 <= fast; j += 4, pos += 4 * (uint64_t)w) { /* four per step */
                    uint64_t p1 = pos + w, p2 = pos + w2, p3 = pos + w3;
                    o[j] =
                        (int64_t)(umn + ((coding_get_be64(p + (pos >> 3)) << (pos & 7)) >> down));
                    o[j + 1] =
                        (int64_t)(umn + ((coding_get_be64(p + (p1 >> 3)) << (p1 & 7)) >> down));
                    o[j + 2] =
                        (int64_t)(umn + ((coding_get_be64(p + (p2 >> 3)) << (p2 & 7)) >> down));
                    o[j + 3] =
                        (int64_t)(umn + ((coding_get_be64(p + (p3 >> 3)) << (p3 & 7)) >> down));
                }
                for (; j < fast; j++, pos += w) {
                    uint64_t u = (coding_get_be64(p + (pos >> 3)) << (pos & 7)) >> down;
                    o[j] = (int64_t)((uint64_t)mn + u);
                }
                r.pos = (size_t)pos;
            }
            for (; j < cnt; j++) {
                uint64_t u = dpcodec_bitr_peek(&r, w);
                r.pos += w;
                res[done + j] = (int64_t)((uint64_t)mn + u);
            }
        }
        p += bytes;
        dpcodec_run_sum(res + done + summed, cnt - summed, run, &acc);
        done += cnt;
    }
    if (zeros) { /* the closed forms of the sums */
        int64_t x = k == 0 ? 0 : h[0], d = k == 2 ? h[1] : 0;
        if (prog) {
            prog->is = true;
            prog->h0 = x;
            prog->h1 = d;
        } else {
            for (uint64_t i = 0; i < n; i++) {
                xs[i] = x;
                x = dpcodec_add(x, d);
            }
        }
    } else if (k == 1 && n > 0) {
        xs[0] = h[0]; /* the rest was summed block by block */
    } else if (k == 2 && n > 0) {
        xs[0] = h[0];
        if (n > 1)
            xs[1] = dpcodec_add(h[0], h[1]);
        int64_t d = h[1];
        for (uint64_t i = 2; i < n; i++) {
            d = dpcodec_add(d, xs[i]);
            xs[i] = dpcodec_add(xs[i - 1], d);
        }
    }
    if (prog && !zeros)
        prog->is = false;
    *pp = p;
    return 0;
}

static int dpcodec_stream_read(const uint8_t **pp, const uint8_t *end, unsigned k, uint64_t n,
                               int64_t *xs, bool patched_ok)
{
    return dpcodec_stream_read_prog(pp, end, k, n, xs, NULL, patched_ok);
}

static int dpcodec_xor_read(const uint8_t *p, const uint8_t *end, uint64_t n, uint64_t *out)
{
    struct dpcodec_bitr r = {p, (size_t)(end - p) * 8, 0};
    uint64_t prev, c;
    unsigned lead = 0, len = 0;
    if (dpcodec_bitr_get(&r, 64, &prev))
        return -1;
    out[0] = prev;
    for (uint64_t i = 1; i < n; i++) {
        if (dpcodec_bitr_get(&r, 1, &c))
            return -1;
        if (c) {
            if (dpcodec_bitr_get(&r, 1, &c))
                return -1;
            if (c) {
                uint64_t l, ln;
                if (dpcodec_bitr_get(&r, 5, &l) || dpcodec_bitr_get(&r, 6, &ln))
                    return -1;
                lead = (unsigned)l;
                len = (unsigned)ln + 1;
                if (lead + len > 64)
                    return -1;
            }
            uint64_t x;
            if (len == 0 || dpcodec_bitr_get(&r, len, &x))
                return -1;
            prev ^= x << (64 - lead - len);
        }
        out[i] = prev;
    }
    return 0;
}

static int dpcodec_cerr(size_t qlen, size_t vlen, struct ct_err *err, const char *what)
{
    return ct_err_set(err, CT_ECORRUPT,
                      "malformed datapoint cell (qualifier of %zu bytes, value "
                      "of %zu bytes): %s",
                      qlen, vlen, what);
}

/* A compressed cell's header. */
struct dpcodec_chdr {
    unsigned version; /* 1, or 2: patched blocks and flag bit7 (DPCODEC_CF_REGULAR) allowed */
    unsigned order, kind;
    uint8_t cflags;
    uint64_t n, raw;        /* points; raw payload bytes when deflated (else 0) */
    const uint8_t *p, *end; /* the payload */
    size_t qlen, vlen;      /* for error messages */
};

static int dpcodec_chead(const uint8_t *v, size_t vlen, size_t qlen, struct dpcodec_chdr *h,
                         struct ct_err *err)
{
    const uint8_t *p = v, *end = v + vlen;
    h->qlen = qlen;
    h->vlen = vlen;
    if (end - p < 4)
        return dpcodec_cerr(qlen, vlen, err, "compressed cell shorter than its header");
    if (p[0] < DPCODEC_CVERSION || p[0] > DPCODEC_CVERSION_PATCHED)
        return ct_err_set(err, CT_ECORRUPT,
                          "unsupported compressed cell version %u (this build reads %d..%d)", p[0],
                          DPCODEC_CVERSION, DPCODEC_CVERSION_PATCHED);
    h->version = p[0];
    h->order = p[1] & 3;
    h->kind = p[1] >> 2;
    h->cflags = p[2];
    if (h->order > 2 || h->kind > DPCODEC_VK_BITS)
        return dpcodec_cerr(qlen, vlen, err, "unknown value encoding");
    p += 3;
    size_t k = coding_get_varint64(p, end, &h->n);
    if (!k || h->n == 0 || h->n > (uint64_t)DPCODEC_HOUR_MS)
        return dpcodec_cerr(qlen, vlen, err, "bad point count");
    p += k;
    h->raw = 0;
    if (h->cflags & DPCODEC_CF_DEFLATED) {
        k = coding_get_varint64(p, end, &h->raw);
        if (!k || h->raw > h->n * 24 + 64)
            return dpcodec_cerr(qlen, vlen, err, "bad raw payload length");
        p += k;
    }
    h->p = p;
    h->end = end;
    return CT_OK;
}

/* Decodes a compressed cell's payload (header h) into cts (ms) and cval (int64 or double bits),
 * n each, and, when the cell has descriptors, desc (n bytes; *has_desc set). *ascending (may be
 * NULL) tells whether the timestamps are strictly ascending. zbuf holds h->raw bytes; zs is a
 * reusable raw-inflate state, or NULL for a temporary one. */
/* Regular timestamps a caller lets dpcodec_cbody() leave unwritten (NULL: always written). */
struct dpcodec_tsreg {
    bool on; /* set: cts was not written; t_i = first + i * step */
    int64_t first, step;
};

DPCODEC_HOT static int dpcodec_cbody(const struct dpcodec_chdr *h, int64_t base_ms, int64_t *cts,
                                     uint64_t *cval, uint8_t *desc, bool *has_desc, bool *ascending,
                                     struct dpcodec_tsreg *reg, uint8_t *zbuf, z_stream *zs,
                                     struct ct_err *err)
{
    const uint8_t *p = h->p, *end = h->end;
    uint64_t n = h->n;
    unsigned kind = h->kind;
    uint8_t cflags = h->cflags;
    size_t ql = h->qlen, vl = h->vlen;
    *has_desc = false;
    if (h->raw) {
        z_stream tmpzs;
        z_stream *z = zs;
        if (!z) {
            memset(&tmpzs, 0, sizeof(tmpzs));
            if (inflateInit2(&tmpzs, -15) != Z_OK)
                return ct_err_set(err, CT_ENOMEM, "cannot start inflate");
            z = &tmpzs;
        } else if (inflateReset(z) != Z_OK) {
            return ct_err_set(err, CT_ENOMEM, "cannot start inflate");
        }
        z->next_in = (Bytef *)(uintptr_t)p;
        z->avail_in = (uInt)(end - p);
        z->next_out = zbuf;
        z->avail_out = (uInt)h->raw;
        int zrc = inflate(z, Z_FINISH);
        size_t got = (size_t)h->raw - z->avail_out;
        if (!zs)
            inflateEnd(&tmpzs);
        if (zrc != Z_STREAM_END || got != h->raw)
            return dpcodec_cerr(ql, vl, err, "deflated payload does not inflate");
        p = zbuf;
        end = zbuf + h->raw;
    }
    if (cflags & DPCODEC_CF_DESCRIPTORS) {
        /* an order-0 integer stream, decoded into the value array then narrowed to bytes
         * (cval is filled later) */
        int64_t *tmp = (int64_t *)cval;
        if (dpcodec_stream_read(&p, end, 0, n, tmp, h->version >= DPCODEC_CVERSION_PATCHED))
            return dpcodec_cerr(ql, vl, err, "descriptors truncated");
        for (uint64_t i = 0; i < n; i++) {
            if (tmp[i] < 0 || tmp[i] > 7 || (tmp[i] & 3) > DPCODEC_DOUBLE)
                return dpcodec_cerr(ql, vl, err, "bad point descriptor");
            desc[i] = (uint8_t)tmp[i];
        }
        *has_desc = true;
    } else if (((cflags >> DPCODEC_CF_TYPE_SHIFT) & 3) > DPCODEC_DOUBLE) {
        return dpcodec_cerr(ql, vl, err, "bad point type");
    }
    const uint8_t *dsc = *has_desc ? desc : NULL;
    unsigned e10 = 0;
    if (kind == DPCODEC_VK_DECIMAL) {
        if (p == end || *p > DPCODEC_MAX_EXP10)
            return dpcodec_cerr(ql, vl, err, "bad decimal exponent");
        e10 = *p++;
    }
    struct dpcodec_prog prog;
    /* evenly spaced timestamps, as most hours are written: heads h0 and h1 of one byte each,
     * then a zero block (width 0, minimum 0) per DPCODEC_BLOCK residuals - what the stream
     * reader makes of those bytes, read here without it */
    size_t zb = n > 2 ? 2 * (size_t)((n - 2 + DPCODEC_BLOCK - 1) / DPCODEC_BLOCK) : 0;
    bool reg_ts = n >= 2 && end - p >= 2 && (size_t)(end - p) - 2 >= zb && p[0] < 0x80 &&
                  p[1] < 0x80;
    for (size_t i = 0; reg_ts && i < zb; i++)
        reg_ts = p[2 + i] == 0;
    if (h->version >= DPCODEC_CVERSION_PATCHED && (cflags & DPCODEC_CF_REGULAR)) {
        /* version 2: the heads alone, o_i = h0 + i h1 (no residual blocks) */
        if (n < 2 || dpcodec_svarint(&p, end, &prog.h0) || dpcodec_svarint(&p, end, &prog.h1))
            return dpcodec_cerr(ql, vl, err, "timestamp stream truncated");
        prog.is = true;
    } else if (reg_ts) {
        prog.is = true;
        prog.h0 = coding_unzigzag(p[0]);
        prog.h1 = coding_unzigzag(p[1]);
        p += 2 + zb;
    } else if (dpcodec_stream_read_prog(&p, end, 2, n, cts, &prog,
                                        h->version >= DPCODEC_CVERSION_PATCHED)) {
        return dpcodec_cerr(ql, vl, err, "timestamp stream truncated");
    }
    int64_t unit = (cflags & DPCODEC_CF_SECONDS) ? 1000 : 1, limit = DPCODEC_HOUR_MS / unit;
    if (prog.is) {
        /* regular timestamps o_i = h0 + i h1: ascending when h1 > 0 (or one point) and the
         * last one does not wrap around; then the first and the last bound the range */
        __int128 last = (__int128)prog.h0 + (__int128)prog.h1 * (__int128)(n - 1);
        if ((n == 1 || prog.h1 > 0) && last <= INT64_MAX) {
            if (prog.h0 < 0 || last >= limit)
                return dpcodec_cerr(ql, vl, err, "timestamp beyond the hour");
            int64_t t = base_ms + prog.h0 * unit, step = prog.h1 * unit;
            if (reg) {
                reg->on = true;
                reg->first = t;
                reg->step = step;
            } else {
                for (uint64_t i = 0; i < n; i++, t += step)
                    cts[i] = t;
            }
            if (ascending)
                *ascending = true;
            goto values;
        }
        int64_t x = prog.h0; /* not ascending: write the offsets and check them one by one */
        for (uint64_t i = 0; i < n; i++) {
            cts[i] = x;
            x = dpcodec_add(x, prog.h1);
        }
    }
    /* every offset in [0, limit): for ascending offsets the first and the last tell */
    bool asc = true;
    for (uint64_t i = 1; i < n && asc; i++)
        asc = cts[i] > cts[i - 1];
    if (asc ? cts[0] < 0 || cts[n - 1] >= limit : false)
        return dpcodec_cerr(ql, vl, err, "timestamp beyond the hour");
    for (uint64_t i = 0; i < n && !asc; i++)
        if (cts[i] < 0 || cts[i] >= limit)
            return dpcodec_cerr(ql, vl, err, "timestamp beyond the hour");
    for (uint64_t i = 0; i < n; i++)
        cts[i] = base_ms + cts[i] * unit;
    if (ascending)
        *ascending = asc;
values:;
    int64_t *iv = (int64_t *)cval;
    switch (kind) {
    case DPCODEC_VK_INT:
    case DPCODEC_VK_DECIMAL:
    case DPCODEC_VK_BITS:
        if (dpcodec_stream_read(&p, end, h->order, n, iv, h->version >= DPCODEC_CVERSION_PATCHED))
            return dpcodec_cerr(ql, vl, err, "value stream truncated");
        break;
    case DPCODEC_VK_XOR:
        if (dpcodec_xor_read(p, end, n, cval))
            return dpcodec_cerr(ql, vl, err, "xor stream truncated");
        break;
    case DPCODEC_VK_RAW:
        for (uint64_t i = 0; i < n; i++) {
            enum dpcodec_type t =
                dsc ? (enum dpcodec_type)(dsc[i] & 3) : (enum dpcodec_type)((cflags >> 4) & 3);
            if (t == DPCODEC_INT) {
                if (dpcodec_svarint(&p, end, &iv[i]))
                    return dpcodec_cerr(ql, vl, err, "value stream truncated");
                continue;
            }
            size_t len = t == DPCODEC_FLOAT ? 4 : 8;
            if ((size_t)(end - p) < len)
                return dpcodec_cerr(ql, vl, err, "value stream truncated");
            struct dpcodec_point tmp;
            if (dpcodec_read_value(p, len, DPCODEC_FLAG_FLOAT, &tmp))
                return dpcodec_cerr(ql, vl, err, "bad raw value");
            cval[i] = dpcodec_dbits(tmp.f);
            p += len;
        }
        break;
    }
    bool rule = (cflags & DPCODEC_CF_RULE_TYPES) != 0;
    if (rule &&
        (dsc || (kind != DPCODEC_VK_DECIMAL && kind != DPCODEC_VK_XOR && kind != DPCODEC_VK_BITS)))
        return dpcodec_cerr(ql, vl, err, "rule-typed cell with descriptors or integers");
    if (!dsc && kind != DPCODEC_VK_RAW) {
        /* one type for every point: checked once */
        enum dpcodec_type t = rule ? DPCODEC_DOUBLE : (enum dpcodec_type)((cflags >> 4) & 3);
        if ((kind == DPCODEC_VK_INT) != (t == DPCODEC_INT))
            return dpcodec_cerr(ql, vl, err, "value kind does not match the point types");
        if (kind == DPCODEC_VK_DECIMAL)
            dpcodec_decimals(cval, n, e10, t);
        return CT_OK;
    }
    for (uint64_t i = 0; i < n; i++) {
        enum dpcodec_type t = dsc    ? (enum dpcodec_type)(dsc[i] & 3)
                              : rule ? DPCODEC_DOUBLE /* decoded as a double, typed after */
                                     : (enum dpcodec_type)((cflags >> 4) & 3);
        if ((kind == DPCODEC_VK_INT) != (t == DPCODEC_INT) && kind != DPCODEC_VK_RAW)
            return dpcodec_cerr(ql, vl, err, "value kind does not match the point types");
        if (kind == DPCODEC_VK_DECIMAL)
            cval[i] = dpcodec_dbits(dpcodec_decimal(iv[i], e10, t));
    }
    return CT_OK;
}

static int dpcodec_compressed_start(struct dpcodec_iter *it, struct ct_err *err)
{
    struct dpcodec_chdr h;
    int rc = dpcodec_chead(it->v, (size_t)(it->vend - it->v), (size_t)(it->qend - it->q), &h, err);
    if (rc != CT_OK) {
        it->failed = true;
        return rc;
    }
    it->cflags = h.cflags;
    it->n = h.n;
    /* timestamps, values, the inflated payload, descriptors */
    it->scratch = malloc((size_t)(h.n * 17 + h.raw + 1));
    if (!it->scratch) {
        it->failed = true;
        return ct_err_set(err, CT_ENOMEM, "out of memory decoding %llu points",
                          (unsigned long long)h.n);
    }
    it->cts = (int64_t *)it->scratch;
    it->cval = (uint64_t *)(it->scratch + h.n * 8);
    uint8_t *zbuf = it->scratch + h.n * 16, *desc = zbuf + h.raw;
    bool has_desc;
    rc = dpcodec_cbody(&h, it->base_ms, it->cts, it->cval, desc, &has_desc, NULL, NULL, zbuf, NULL,
                       err);
    if (rc != CT_OK) {
        it->failed = true;
        return rc;
    }
    it->desc = has_desc ? desc : NULL;
    return CT_OK;
}

static int dpcodec_next_compressed(struct dpcodec_iter *it, struct dpcodec_point *p,
                                   struct ct_err *err)
{
    if (!it->started) {
        it->started = true;
        int rc = dpcodec_compressed_start(it, err);
        if (rc != CT_OK)
            return rc;
    }
    if (it->i >= it->n)
        return CT_NOTFOUND;
    uint64_t i = it->i++;
    p->ts_ms = it->cts[i];
    if (it->desc) {
        p->type = (enum dpcodec_type)(it->desc[i] & 3);
        p->ms = (it->desc[i] >> 2) & 1;
    } else if (it->cflags & DPCODEC_CF_RULE_TYPES) {
        p->type = dpcodec_point_real(0, false, dpcodec_bitsd(it->cval[i])).type;
        p->ms = (it->cflags & DPCODEC_CF_ALL_MS) != 0;
    } else {
        p->type = (enum dpcodec_type)((it->cflags >> DPCODEC_CF_TYPE_SHIFT) & 3);
        p->ms = (it->cflags & DPCODEC_CF_ALL_MS) != 0;
    }
    if (p->type == DPCODEC_INT)
        p->i = (int64_t)it->cval[i];
    else
        p->f = dpcodec_bitsd(it->cval[i]);
    return CT_OK;
}

int dpcodec_iter_next(struct dpcodec_iter *it, struct dpcodec_point *p, struct ct_err *err)
{
    if (it->failed)
        return ct_err_set(err, CT_ECORRUPT, "iterating a cell that already failed");
    p->cell_ts_ms = 0;
    p->i = 0;
    p->f = 0;
    switch ((enum dpcodec_qkind)it->kind) {
    case DPCODEC_Q_POINT:
        return dpcodec_next_point(it, p, err);
    case DPCODEC_Q_COMPACTED:
        return dpcodec_next_compacted(it, p, err);
    case DPCODEC_Q_APPEND:
        return dpcodec_next_append(it, p, err);
    case DPCODEC_Q_COMPRESSED:
        return dpcodec_next_compressed(it, p, err);
    case DPCODEC_Q_ANNOTATION:
    case DPCODEC_Q_OTHER:
        break;
    }
    return CT_NOTFOUND;
}

/* ---- row decoding ------------------------------------------------------------------------- */

/* Orders points by (ts, cell ts); equal keys keep arrival order (stable insertion). */
static bool dpcodec_before(const struct dpcodec_point *a, const struct dpcodec_point *b)
{
    return a->ts_ms < b->ts_ms || (a->ts_ms == b->ts_ms && a->cell_ts_ms < b->cell_ts_ms);
}

/* Collects, sorts and de-duplicates. conflicts/first_conflict may be NULL. */
int dpcodec_collect(int64_t base_s, const struct wc_cell *cells, size_t ncells,
                    struct dpcodec_point *out, size_t cap, size_t *n, size_t *dups,
                    size_t *conflicts, int64_t *first_conflict, struct ct_err *err)
{
    size_t count = 0;
    for (size_t c = 0; c < ncells; c++) {
        struct dpcodec_iter it;
        dpcodec_iter_init(&it, base_s, cells[c].qualifier.data, cells[c].qualifier.len,
                          cells[c].value.data, cells[c].value.len);
        struct dpcodec_point p;
        int rc;
        while ((rc = dpcodec_iter_next(&it, &p, err)) == CT_OK) {
            p.cell_ts_ms = cells[c].ts_ms;
            if (out && count < cap) {
                /* binary search for the upper bound, then shift: near-linear on sorted input */
                size_t lo = 0, hi = count;
                if (count == 0 || !dpcodec_before(&p, &out[count - 1])) {
                    lo = count;
                } else {
                    while (lo < hi) {
                        size_t mid = (lo + hi) / 2;
                        if (dpcodec_before(&p, &out[mid]))
                            hi = mid;
                        else
                            lo = mid + 1;
                    }
                    memmove(&out[lo + 1], &out[lo], (count - lo) * sizeof(*out));
                }
                out[lo] = p;
            }
            count++;
        }
        dpcodec_iter_end(&it);
        if (rc != CT_NOTFOUND)
            return ct_err_prefix(err, "cell %zu of the row", c);
    }
    if (count > cap) {
        *n = count;
        return ct_err_set(err, CT_ELIMIT, "row has %zu points, buffer holds %zu", count, cap);
    }
    size_t w = 0, ndup = 0, nconf = 0;
    for (size_t r = 0; r < count; r++) {
        if (w > 0 && out[w - 1].ts_ms == out[r].ts_ms) {
            ndup++;
            if (!dpcodec_point_same_value(&out[w - 1], &out[r])) {
                if (nconf++ == 0 && first_conflict)
                    *first_conflict = out[r].ts_ms;
            }
            out[w - 1] = out[r]; /* the later one is the newer cell */
            continue;
        }
        out[w++] = out[r];
    }
    *n = w;
    if (dups)
        *dups = ndup;
    if (conflicts)
        *conflicts = nconf;
    return CT_OK;
}

int dpcodec_row_decode(int64_t base_s, const struct wc_cell *cells, size_t ncells,
                       struct dpcodec_point *out, size_t cap, size_t *n, size_t *dups,
                       struct ct_err *err)
{
    return dpcodec_collect(base_s, cells, ncells, out, cap, n, dups, NULL, NULL, err);
}

/* ---- the newest point of a row ------------------------------------------------------------ */

void dpcodec_newest_init(struct dpcodec_newest *n)
{
    memset(n, 0, sizeof(*n));
}

static inline void dpcodec_newest_take(struct dpcodec_newest *n, const struct dpcodec_point *p)
{
    if (dpcodec_newest_wins(n, p->ts_ms, p->cell_ts_ms)) {
        n->p = *p;
        n->have = true;
        n->pending = false;
    }
}

bool dpcodec_newest_get(struct dpcodec_newest *n, struct dpcodec_point *out)
{
    if (n->pending) { /* checked by dpcodec_newest_add: decodes */
        const char *why = NULL;
        int64_t cell_ts = n->p.cell_ts_ms;
        if (dpcodec_point_cell(n->base_ms, n->pq, n->pq + 2, n->pv, n->pv + n->pvl, &n->p, &why))
            return false; /* cannot happen */
        n->p.cell_ts_ms = cell_ts;
        n->pending = false;
    }
    if (n->have)
        *out = n->p;
    return n->have;
}

int dpcodec_newest_add_cell(struct dpcodec_newest *n, int64_t base_s, const struct wc_cell *cell,
                            struct ct_err *err)
{
    size_t c = n->ncells++;
    const uint8_t *q = cell->qualifier.data, *v = cell->value.data;
    size_t ql = cell->qualifier.len, vl = cell->value.len;
    enum dpcodec_qkind k = dpcodec_qualifier_kind(q, ql);
    if (k == DPCODEC_Q_POINT) { /* dpcodec_next_point() without an iterator */
        struct dpcodec_point p = {0};
        const char *why = NULL;
        if (dpcodec_point_cell(base_s * 1000, q, q + ql, v, v + vl, &p, &why))
            return ct_err_set(err, CT_ECORRUPT,
                              "cell %zu of the row: malformed datapoint cell (qualifier of %zu "
                              "bytes, value of %zu bytes): %s",
                              c, ql, vl, why);
        p.cell_ts_ms = cell->ts_ms;
        dpcodec_newest_take(n, &p);
        return CT_OK;
    }
    if (k != DPCODEC_Q_COMPACTED && k != DPCODEC_Q_APPEND && k != DPCODEC_Q_COMPRESSED)
        return CT_OK; /* annotations and the like hold no datapoint */
    struct dpcodec_iter it;
    dpcodec_iter_init(&it, base_s, q, ql, v, vl);
    struct dpcodec_point p;
    int rc;
    while ((rc = dpcodec_iter_next(&it, &p, err)) == CT_OK) {
        p.cell_ts_ms = cell->ts_ms;
        dpcodec_newest_take(n, &p);
    }
    dpcodec_iter_end(&it);
    return rc == CT_NOTFOUND ? CT_OK : ct_err_prefix(err, "cell %zu of the row", c);
}

/* ---- columnar row decoding ---------------------------------------------------------------- */

void dpcodec_cols_init(struct dpcodec_cols *c)
{
    memset(c, 0, sizeof(*c));
}

void dpcodec_cols_fill_ts(struct dpcodec_cols *c)
{
    if (!c->ts_regular)
        return;
    int64_t t = c->ts_first;
    for (size_t i = 0; i < c->n; i++, t += c->ts_step)
        c->ts[i] = t;
    c->ts_regular = false;
}

void dpcodec_cols_free(struct dpcodec_cols *c)
{
    free(c->ts);
    free(c->val);
    free(c->is_int);
    free(c->pts);
    free(c->zbuf);
    if (c->zs) {
        inflateEnd(c->zs);
        free(c->zs);
    }
    memset(c, 0, sizeof(*c));
}

/* Room for n points in the columns. */
static int dpcodec_cols_reserve(struct dpcodec_cols *c, size_t n, struct ct_err *err)
{
    if (n <= c->cap)
        return CT_OK;
    size_t nc = c->cap ? c->cap : 512;
    while (nc < n)
        nc *= 2;
    int64_t *ts = realloc(c->ts, nc * sizeof(*ts));
    if (ts)
        c->ts = ts;
    uint64_t *val = realloc(c->val, nc * sizeof(*val));
    if (val)
        c->val = val;
    uint8_t *ii = realloc(c->is_int, nc);
    if (ii)
        c->is_int = ii;
    if (!ts || !val || !ii)
        return ct_err_set(err, CT_ENOMEM, "out of memory decoding %zu points", n);
    c->cap = nc;
    return CT_OK;
}

#define DPCODEC_UNSORTED 1 /* dpcodec_cols_compressed(): fall back to the general path */

/* The single compressed cell of a row straight into the columns. DPCODEC_UNSORTED (nothing
 * decoded) when its timestamps are not strictly ascending: the general path then sorts them. */
static int dpcodec_cols_compressed(int64_t base_s, const struct wc_cell *cell,
                                   struct dpcodec_cols *c, struct ct_err *err)
{
    struct dpcodec_chdr h;
    int rc = dpcodec_chead(cell->value.data, cell->value.len, cell->qualifier.len, &h, err);
    if (rc != CT_OK)
        return rc;
    if ((rc = dpcodec_cols_reserve(c, (size_t)h.n, err)) != CT_OK)
        return rc;
    if (h.raw > c->zcap) {
        uint8_t *z = realloc(c->zbuf, (size_t)h.raw);
        if (!z)
            return ct_err_set(err, CT_ENOMEM, "out of memory inflating a cell");
        c->zbuf = z;
        c->zcap = (size_t)h.raw;
    }
    if (h.raw && !c->zs) {
        z_stream *zs = calloc(1, sizeof(*zs));
        if (!zs || inflateInit2(zs, -15) != Z_OK) {
            free(zs);
            return ct_err_set(err, CT_ENOMEM, "cannot start inflate");
        }
        c->zs = zs;
    }
    bool has_desc, ascending;
    struct dpcodec_tsreg reg = {false, 0, 0};
    rc = dpcodec_cbody(&h, base_s * 1000, c->ts, c->val, c->is_int, &has_desc, &ascending,
                       c->lazy_ts ? &reg : NULL, c->zbuf, c->zs, err);
    if (rc != CT_OK)
        return rc;
    c->ts_regular = reg.on;
    c->ts_first = reg.first;
    c->ts_step = reg.step;
    if (!ascending)
        return DPCODEC_UNSORTED;
    c->no_nan = h.kind == DPCODEC_VK_DECIMAL; /* a decimal is never NaN */
    size_t n = (size_t)h.n;
    if (has_desc) { /* descriptors were written over is_int */
        int kinds = 0;
        for (size_t i = 0; i < n; i++) {
            c->is_int[i] = (c->is_int[i] & 3) == DPCODEC_INT;
            kinds |= c->is_int[i] ? DPCODEC_COLS_INTS : DPCODEC_COLS_REALS;
        }
        c->kinds = kinds;
    } else {
        bool ints = !(h.cflags & DPCODEC_CF_RULE_TYPES) &&
                    ((h.cflags >> DPCODEC_CF_TYPE_SHIFT) & 3) == DPCODEC_INT;
        memset(c->is_int, ints, n);
        c->kinds = ints ? DPCODEC_COLS_INTS : DPCODEC_COLS_REALS;
    }
    c->n = n;
    return CT_OK;
}

/* The most compressed cells a row may hold for dpcodec_cols_compressed_cells(). */
#define DPCODEC_COLS_MAX_CELLS 16

/* A row whose datapoint cells are 2..DPCODEC_COLS_MAX_CELLS compressed cells over disjoint
 * time spans (an hour the store's compaction merged in parts: each part one compressed cell,
 * their qualifiers a hash, so in no time order) straight into the columns: each cell is decoded
 * into the upper half of the columns, then the parts are copied down in time order. Nothing is
 * kept (DPCODEC_UNSORTED) when a cell fails to decode, is not strictly ascending, or two cells'
 * spans overlap (duplicates to resolve): the general path then answers, with its errors. With
 * disjoint spans there is no duplicate, so the points are the general path's. */
static int dpcodec_cols_compressed_cells(int64_t base_s, const struct wc_cell *cells, size_t ncells,
                                         struct dpcodec_cols *c)
{
    struct part {
        size_t cell, off, n;
        int64_t first, last;
    } parts[DPCODEC_COLS_MAX_CELLS];
    struct dpcodec_chdr hs[DPCODEC_COLS_MAX_CELLS];
    struct ct_err err = {0};
    size_t np = 0, total = 0, raw = 0;
    for (size_t i = 0; i < ncells; i++) {
        enum dpcodec_qkind k =
            dpcodec_qualifier_kind(cells[i].qualifier.data, cells[i].qualifier.len);
        if (k == DPCODEC_Q_ANNOTATION || k == DPCODEC_Q_OTHER)
            continue;
        if (k != DPCODEC_Q_COMPRESSED || np == DPCODEC_COLS_MAX_CELLS ||
            dpcodec_chead(cells[i].value.data, cells[i].value.len, cells[i].qualifier.len, &hs[np],
                          &err) != CT_OK)
            return DPCODEC_UNSORTED;
        parts[np].cell = i;
        parts[np].n = (size_t)hs[np].n;
        total += parts[np].n;
        if (hs[np].raw > raw)
            raw = (size_t)hs[np].raw;
        np++;
    }
    if (np < 2 || dpcodec_cols_reserve(c, 2 * total, &err) != CT_OK)
        return DPCODEC_UNSORTED;
    if (raw > c->zcap) {
        uint8_t *z = realloc(c->zbuf, raw);
        if (!z)
            return DPCODEC_UNSORTED;
        c->zbuf = z;
        c->zcap = raw;
    }
    if (raw && !c->zs) {
        z_stream *zs = calloc(1, sizeof(*zs));
        if (!zs || inflateInit2(zs, -15) != Z_OK) {
            free(zs);
            return DPCODEC_UNSORTED;
        }
        c->zs = zs;
    }
    int kinds = 0;
    size_t off = total;
    for (size_t k = 0; k < np; k++) {
        const struct dpcodec_chdr *h = &hs[k];
        size_t n = parts[k].n;
        bool has_desc, ascending;
        if (dpcodec_cbody(h, base_s * 1000, c->ts + off, c->val + off, c->is_int + off, &has_desc,
                          &ascending, NULL, c->zbuf, c->zs, &err) != CT_OK ||
            !ascending || !n)
            return DPCODEC_UNSORTED;
        uint8_t *ii = c->is_int + off;
        if (has_desc) { /* descriptors were written over is_int */
            for (size_t i = 0; i < n; i++) {
                ii[i] = (ii[i] & 3) == DPCODEC_INT;
                kinds |= ii[i] ? DPCODEC_COLS_INTS : DPCODEC_COLS_REALS;
            }
        } else {
            bool ints = !(h->cflags & DPCODEC_CF_RULE_TYPES) &&
                        ((h->cflags >> DPCODEC_CF_TYPE_SHIFT) & 3) == DPCODEC_INT;
            memset(ii, ints, n);
            kinds |= ints ? DPCODEC_COLS_INTS : DPCODEC_COLS_REALS;
        }
        parts[k].off = off;
        parts[k].first = c->ts[off];
        parts[k].last = c->ts[off + n - 1];
        off += n;
    }
    for (size_t i = 1; i < np; i++) /* by first timestamp */
        for (size_t j = i; j > 0 && parts[j - 1].first > parts[j].first; j--) {
            struct part tmp = parts[j];
            parts[j] = parts[j - 1];
            parts[j - 1] = tmp;
        }
    for (size_t k = 1; k < np; k++)
        if (parts[k - 1].last >= parts[k].first)
            return DPCODEC_UNSORTED;
    size_t o = 0;
    for (size_t k = 0; k < np; k++) {
        size_t n = parts[k].n, from = parts[k].off;
        memcpy(c->ts + o, c->ts + from, n * sizeof(*c->ts));
        memcpy(c->val + o, c->val + from, n * sizeof(*c->val));
        memcpy(c->is_int + o, c->is_int + from, n);
        o += n;
    }
    c->n = total;
    c->kinds = kinds;
    return CT_OK;
}

/* A row of single cells with 2-byte (seconds) qualifiers and integer values of the flags'
 * length, in time order (an hour not merged yet), straight into the columns in one pass: what
 * dpcodec_point_cell() gives for such cells. false (nothing kept) at the first cell that is
 * anything else but a cell that holds no datapoint (annotations, histograms: skipped as the
 * general path skips them); the general path then reads the row. */
static bool dpcodec_cols_int_cells(int64_t base_s, const struct wc_cell *cells, size_t ncells,
                                   struct dpcodec_cols *c)
{
    int64_t base_ms = base_s * 1000, prev = INT64_MIN;
    size_t n = 0;
    for (size_t i = 0; i < ncells; i++) {
        const uint8_t *q = cells[i].qualifier.data, *v = cells[i].value.data;
        size_t ql = cells[i].qualifier.len, vl = cells[i].value.len;
        if (ql != 2) {
            enum dpcodec_qkind k = dpcodec_qualifier_kind(q, ql);
            if (k == DPCODEC_Q_ANNOTATION || k == DPCODEC_Q_OTHER)
                continue;
            return false;
        }
        uint16_t u = coding_get_be16(q);
        uint32_t off = u >> 4;
        unsigned flags = u & DPCODEC_FLAGS_MASK;
        /* (an ms prefix 0xF. on 2 bytes is an offset of 3840 or more: refused here too) */
        if (off >= 3600 || (flags & DPCODEC_FLAG_FLOAT) ||
            vl != dpcodec_flags_value_len((uint8_t)flags))
            return false;
        int64_t ts = base_ms + (int64_t)off * 1000, x;
        switch (vl) {
        case 1:
            x = (int8_t)v[0];
            break;
        case 2:
            x = (int16_t)coding_get_be16(v);
            break;
        case 4:
            x = (int32_t)coding_get_be32(v);
            break;
        case 8:
            x = (int64_t)coding_get_be64(v);
            break;
        default:
            return false;
        }
        if (ts <= prev)
            return false;
        prev = ts;
        c->ts[n] = ts;
        c->val[n++] = (uint64_t)x;
    }
    if (n == 0)
        return false; /* nothing but other cells: the general path decides */
    memset(c->is_int, 1, n);
    c->n = n;
    c->kinds = DPCODEC_COLS_INTS;
    return true;
}

int dpcodec_row_decode_cols(int64_t base_s, const struct wc_cell *cells, size_t ncells,
                            struct dpcodec_cols *c, size_t *dups, struct ct_err *err)
{
    c->n = 0;
    c->kinds = 0;
    c->ts_regular = false;
    c->no_nan = false;
    if (dups)
        *dups = 0;
    if (ncells > 1 && cells[0].qualifier.len == 2) {
        int rc = dpcodec_cols_reserve(c, ncells, err);
        if (rc != CT_OK)
            return rc;
        if (dpcodec_cols_int_cells(base_s, cells, ncells, c))
            return CT_OK;
        c->n = 0;
    }
    size_t ndp = 0, npoint = 0, last = 0;
    for (size_t i = 0; i < ncells; i++) {
        enum dpcodec_qkind k =
            dpcodec_qualifier_kind(cells[i].qualifier.data, cells[i].qualifier.len);
        if (k == DPCODEC_Q_POINT || k == DPCODEC_Q_COMPACTED || k == DPCODEC_Q_APPEND ||
            k == DPCODEC_Q_COMPRESSED) {
            ndp++;
            npoint += k == DPCODEC_Q_POINT;
            last = i;
        }
    }
    if (ndp == 0)
        return CT_OK;
    if (ndp == 1 && dpcodec_qualifier_kind(cells[last].qualifier.data, cells[last].qualifier.len) ==
                        DPCODEC_Q_COMPRESSED) {
        int rc = dpcodec_cols_compressed(base_s, &cells[last], c, err);
        if (rc != DPCODEC_UNSORTED)
            return rc == CT_OK ? CT_OK : ct_err_prefix(err, "cell %zu of the row", last);
    }
    if (npoint == 0 && ndp > 1 && ndp <= DPCODEC_COLS_MAX_CELLS &&
        dpcodec_cols_compressed_cells(base_s, cells, ncells, c) == CT_OK)
        return CT_OK;
    if (npoint == ndp) {
        /* only single-point cells (an hour not merged yet): in time order unless seconds and
         * ms qualifiers mix (then the general path sorts) */
        int rc = dpcodec_cols_reserve(c, npoint, err);
        if (rc != CT_OK)
            return rc;
        size_t n = 0;
        bool sorted = true;
        int kinds = 0;
        for (size_t i = 0; i < ncells && sorted; i++) {
            const struct wc_cell *cell = &cells[i];
            if (dpcodec_qualifier_kind(cell->qualifier.data, cell->qualifier.len) !=
                DPCODEC_Q_POINT)
                continue;
            /* what dpcodec_iter_next() does for the cell, without an iterator */
            struct dpcodec_point p = {0};
            const char *why = NULL;
            const uint8_t *q = cell->qualifier.data, *v = cell->value.data;
            if (dpcodec_point_cell(base_s * 1000, q, q + cell->qualifier.len, v,
                                   v + cell->value.len, &p, &why))
                return ct_err_set(err, CT_ECORRUPT,
                                  "cell %zu of the row: malformed datapoint cell (qualifier of "
                                  "%zu bytes, value of %zu bytes): %s",
                                  i, cell->qualifier.len, cell->value.len, why);
            sorted = n == 0 || p.ts_ms > c->ts[n - 1];
            c->ts[n] = p.ts_ms;
            c->is_int[n] = p.type == DPCODEC_INT;
            c->val[n++] = p.type == DPCODEC_INT ? (uint64_t)p.i : dpcodec_dbits(p.f);
            kinds |= p.type == DPCODEC_INT ? DPCODEC_COLS_INTS : DPCODEC_COLS_REALS;
        }
        if (sorted) {
            c->n = n;
            c->kinds = kinds;
            return CT_OK;
        }
    }
    /* the general path: every layout, sorted and de-duplicated as dpcodec_row_decode() */
    size_t n = 0;
    int rc;
    for (;;) {
        rc = dpcodec_row_decode(base_s, cells, ncells, c->pts, c->pcap, &n, dups, err);
        if (rc != CT_ELIMIT)
            break;
        size_t nc = c->pcap ? c->pcap : 512;
        while (nc < n)
            nc *= 2;
        struct dpcodec_point *np = realloc(c->pts, nc * sizeof(*np));
        if (!np)
            return ct_err_set(err, CT_ENOMEM, "out of memory decoding %zu points", n);
        c->pts = np;
        c->pcap = nc;
    }
    if (rc != CT_OK)
        return rc;
    if ((rc = dpcodec_cols_reserve(c, n, err)) != CT_OK)
        return rc;
    int kinds = 0;
    for (size_t i = 0; i < n; i++) {
        const struct dpcodec_point *p = &c->pts[i];
        c->ts[i] = p->ts_ms;
        c->is_int[i] = p->type == DPCODEC_INT;
        c->val[i] = p->type == DPCODEC_INT ? (uint64_t)p->i : dpcodec_dbits(p->f);
        kinds |= p->type == DPCODEC_INT ? DPCODEC_COLS_INTS : DPCODEC_COLS_REALS;
    }
    c->n = n;
    c->kinds = kinds;
    return CT_OK;
}

/* ---- annotations -------------------------------------------------------------------------- */

size_t dpcodec_annotation_qualifier(int64_t base_s, int64_t start_ms, bool ms, uint8_t *q)
{
    q[0] = DPCODEC_ANNOTATION_PREFIX;
    if (ms) {
        coding_put_be32(q + 1, (uint32_t)(start_ms - base_s * 1000));
        return 5;
    }
    coding_put_be16(q + 1, (uint16_t)(start_ms / 1000 - base_s));
    return 3;
}

int dpcodec_annotation_time(int64_t base_s, const uint8_t *q, size_t qlen, int64_t *start_ms,
                            struct ct_err *err)
{
    if (qlen == 3 && q[0] == DPCODEC_ANNOTATION_PREFIX) {
        *start_ms = (base_s + coding_get_be16(q + 1)) * 1000;
        return CT_OK;
    }
    if (qlen == 5 && q[0] == DPCODEC_ANNOTATION_PREFIX) {
        *start_ms = base_s * 1000 + coding_get_be32(q + 1);
        return CT_OK;
    }
    return ct_err_set(err, CT_EINVAL, "qualifier of %zu bytes is not an annotation", qlen);
}
