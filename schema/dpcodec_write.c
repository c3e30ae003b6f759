/* dpcodec_write.c - writing hours and compaction (see dpcodec.h): the cells a sorted hour of
 * points is stored as, in OpenTSDB's compacted form or ctsdb's compressed cell, and the merge of
 * a row's cells into them. The reading side (single cells, iterators, row decoders) is in
 * dpcodec.c; what both use is in dpcodec_int.h.
 *
 * Invariants: (1) the compressed encoder only picks a value encoding after checking that it
 * reproduces every value bit for bit (so it is lossless by construction); (2) every search
 * (order, value kind, block kind, Rice parameter, deflate) keeps the choices of the plain
 * exhaustive search, with exact shortcuts (convexity, closed forms, lower bounds that rule a
 * candidate out), except a patched block's parameters (line, width), which come from an
 * estimate; a block is written patched only when its exact size is smaller than every other
 * kind's; test_dpcodec pins the output bytes. Allocation: the compressed encoder keeps
 * per-thread state (a deflate stream and a scratch buffer, see dpcodec_enc).
 * Layouts: schema/dpcodec_format.h. */
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

/* ---- the bit writer ------------------------------------------------------------------------ */

struct dpcodec_bitw {
    uint8_t *p;
    size_t bits;
};

/* Appends the low n bits of v (n <= 64), MSB first; a byte is zeroed when first written, so
 * the padding bits of the last byte are 0. Whole bytes at a time, not one bit at a time. */
static void dpcodec_bitw_put(struct dpcodec_bitw *w, uint64_t v, unsigned n)
{
    while (n > 0) {
        size_t byte = w->bits >> 3;
        unsigned off = (unsigned)(w->bits & 7), take = 8 - off < n ? 8 - off : n;
        if (off == 0)
            w->p[byte] = 0;
        unsigned chunk = (unsigned)(v >> (n - take)) & ((1u << take) - 1);
        w->p[byte] |= (uint8_t)(chunk << (8 - off - take));
        w->bits += take;
        n -= take;
    }
}

/* Appends q one-bits. */
static void dpcodec_bitw_ones(struct dpcodec_bitw *w, uint64_t q)
{
    for (; q >= 56; q -= 56)
        dpcodec_bitw_put(w, (1ull << 56) - 1, 56);
    if (q)
        dpcodec_bitw_put(w, (1ull << q) - 1, (unsigned)q);
}

/* ---- writing hours ------------------------------------------------------------------------ */

static int dpcodec_check_points(int64_t base_s, const struct dpcodec_point *pts, size_t n,
                                struct ct_err *err)
{
    if (n == 0)
        return ct_err_set(err, CT_EINVAL, "no points to encode");
    for (size_t i = 0; i < n; i++) {
        int64_t off = pts[i].ts_ms - base_s * 1000;
        if (off < 0 || off >= DPCODEC_HOUR_MS)
            return ct_err_set(err, CT_EINVAL, "timestamp %lld ms is outside the hour %lld",
                              (long long)pts[i].ts_ms, (long long)base_s);
        if (i && pts[i].ts_ms <= pts[i - 1].ts_ms)
            return ct_err_set(err, CT_EINVAL, "points not strictly increasing at %lld ms",
                              (long long)pts[i].ts_ms);
        if (pts[i].type > DPCODEC_DOUBLE)
            return ct_err_set(err, CT_EINVAL, "bad point type %d", (int)pts[i].type);
    }
    return CT_OK;
}

int dpcodec_compacted_encode(int64_t base_s, const struct dpcodec_point *pts, size_t n, uint8_t *q,
                             size_t *qlen, uint8_t *v, size_t *vlen, struct ct_err *err)
{
    int rc = dpcodec_check_points(base_s, pts, n, err);
    if (rc != CT_OK)
        return rc;
    size_t qo = 0, vo = 0;
    bool has_s = false, has_ms = false;
    for (size_t i = 0; i < n; i++) {
        size_t ql, vl;
        rc = dpcodec_encode(base_s, &pts[i], q + qo, &ql, v + vo, &vl, err);
        if (rc != CT_OK)
            return rc;
        if (ql == 4)
            has_ms = true;
        else
            has_s = true;
        qo += ql;
        vo += vl;
    }
    v[vo++] = (has_s && has_ms) ? DPCODEC_MS_MIXED_COMPACT : 0;
    *qlen = qo;
    *vlen = vo;
    return CT_OK;
}

void dpcodec_compressed_qualifier(const struct dpcodec_point *pts, size_t n, uint8_t *q)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++) {
        uint64_t t = (uint64_t)pts[i].ts_ms;
        for (int b = 0; b < 8; b++)
            h = (h ^ ((t >> (8 * b)) & 0xff)) * 1099511628211ull;
    }
    memcpy(q, DPCODEC_CQ, DPCODEC_CQ_PREFIX_LEN);
    coding_put_be64(q + DPCODEC_CQ_PREFIX_LEN, h);
}

size_t dpcodec_compressed_bound(size_t n)
{
    return 21 * n + 96;
}

static size_t dpcodec_varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* The residuals of order k (dpcodec_format.h) of x into res; returns the head count. */
static size_t dpcodec_residuals(const int64_t *x, size_t n, unsigned k, int64_t *heads,
                                int64_t *res)
{
    size_t h = k < n ? k : n;
    if (h > 0)
        heads[0] = x[0];
    if (h > 1)
        heads[1] = dpcodec_sub(x[1], x[0]);
    for (size_t i = h; i < n; i++) {
        if (k == 0)
            res[i - h] = x[i];
        else if (k == 1)
            res[i - h] = dpcodec_sub(x[i], x[i - 1]);
        else
            res[i - h] = dpcodec_sub(dpcodec_sub(x[i], x[i - 1]), dpcodec_sub(x[i - 1], x[i - 2]));
    }
    return h;
}

static void dpcodec_block_range(const int64_t *r, size_t cnt, int64_t *mn, unsigned *w)
{
    int64_t lo = r[0], hi = r[0];
    for (size_t j = 1; j < cnt; j++) {
        if (r[j] < lo)
            lo = r[j];
        if (r[j] > hi)
            hi = r[j];
    }
    uint64_t range = (uint64_t)hi - (uint64_t)lo;
    *mn = lo;
    *w = range ? 64u - (unsigned)__builtin_clzll(range) : 0;
}

/* How one block of residuals is written: bit-packed from its minimum, or Rice-coded around its
 * median (residuals of smooth series are bell-shaped: Rice codes beat a fixed width there). */
struct dpcodec_block {
    bool rice, radix, patched;
    int64_t base;     /* minimum (packed, radix, patched) or median (Rice) */
    unsigned width;   /* bits per value (packed, patched) or Rice parameter k */
    uint64_t radix_r; /* radix blocks: range + 1 */
    int64_t slope;    /* patched blocks: the line subtracted (entry j less slope * j) */
    size_t bytes;     /* encoded size including the header */
};

/* Bits of cnt values u Rice-coded with parameter k (no u >> k above 2^20, so no overflow). */
static uint64_t dpcodec_rice_bits(const uint64_t *u, size_t cnt, unsigned k)
{
    uint64_t bits = cnt * (uint64_t)(k + 1);
    for (size_t j = 0; j < cnt; j++)
        bits += u[j] >> k;
    return bits;
}

/* The k-th smallest of a[0..n) (k < n), a reordered: Hoare quickselect with a median-of-three
 * pivot (the value sorting would put at a[k], without sorting). */
static int64_t dpcodec_select(int64_t *a, size_t n, size_t k)
{
    ptrdiff_t lo = 0, hi = (ptrdiff_t)n - 1, kk = (ptrdiff_t)k;
    while (lo < hi) {
        int64_t x = a[lo], y = a[lo + (hi - lo) / 2], z = a[hi];
        int64_t pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
        ptrdiff_t i = lo, j = hi;
        while (i <= j) {
            while (a[i] < pivot)
                i++;
            while (a[j] > pivot)
                j--;
            if (i <= j) {
                int64_t t = a[i];
                a[i++] = a[j];
                a[j--] = t;
            }
        }
        /* a[lo..j] <= pivot <= a[i..hi], and a[j+1..i-1] == pivot */
        if (kk <= j)
            hi = j;
        else if (kk >= i)
            lo = i;
        else
            return a[kk];
    }
    return a[kk];
}

/* A radix block is written only when its reader divides at most once per value: the reader
 * takes one pass over the block's number (its bits / 64 limbs) per 2m digits, where r^m is the
 * largest power of the radix r within 32 bits, so it costs limbs / 2m divisions per value -
 * about (log2 r) / m, growing with the width (0.3 at r = 7, 3 at r = 401, 28 at r = 2e8: a
 * byte gauge's steps, whose series then decoded 16x slower than bit-packed). Within the bound
 * (r up to about 40) the radix form saves the most (log2 r instead of a whole bit width); past
 * it the saving is a few percent and the bit-packed or Rice form, read at a fixed cost per
 * value, is written instead. Readers accept any radix. */
static bool dpcodec_radix_cheap(uint64_t r, size_t bits)
{
    size_t m = 0;
    for (uint64_t p = r; p <= UINT32_MAX; p *= r)
        m++;
    return (bits + 63) / 64 <= 2 * m;
}

/* Patched blocks (dpcodec_format.h): entry j is d_j = r_j - slope * j (64-bit wrap-around); the
 * d_j in [base, base + 2^w) are bit-packed as d_j - base, the others ("exceptions") keep the low
 * w bits there and list their position and the rest, (d_j - base) >> w, apart. A series whose
 * residuals are narrow but for a few jumps (a byte gauge whose level steps every 30 points)
 * is then packed at the narrow width, not at the jumps'; with a slope, a noisy trend (a counter,
 * a slow wave) is packed at its noise's width. */

/* Whether d - base lies outside [0, 2^w): an exception. */
static inline bool dpcodec_patch_out(int64_t d, int64_t base, unsigned w)
{
    return w < 64 && ((uint64_t)d - (uint64_t)base) >> w != 0;
}

/* The exception's high part, (d - base) >> w as a signed number (w < 64). */
static inline int64_t dpcodec_patch_high(int64_t d, int64_t base, unsigned w)
{
    int64_t x = dpcodec_sub(d, base);
    return x < 0 ? ~(int64_t)(~(uint64_t)x >> w) : (int64_t)((uint64_t)x >> w);
}

/* Bytes of the patched block of d[0..cnt) (already less the slope) at (base, w). */
static size_t dpcodec_patch_bytes(const int64_t *d, size_t cnt, int64_t base, unsigned w,
                                  int64_t slope)
{
    size_t bytes = 2 + dpcodec_varint_len(coding_zigzag(base)) +
                   dpcodec_varint_len(coding_zigzag(slope)) + 1 + (cnt * w + 7) / 8;
    for (size_t j = 0; j < cnt; j++)
        if (dpcodec_patch_out(d[j], base, w))
            bytes += 1 + dpcodec_varint_len(coding_zigzag(dpcodec_patch_high(d[j], base, w)));
    return bytes;
}

/* The cheapest patched block of d[0..cnt) (r less slope * j) around its median med, u[j] =
 * zigzag(d[j] - med): the entries whose u has at most B bits lie within 2^(B-1) of the median,
 * a range of fewer than 2^B values; B is chosen on a per-bit-length histogram (the exceptions'
 * high parts estimated from their bit lengths), then the block at that B is costed exactly.
 * Replaces *b when smaller. */
static void dpcodec_patch_try(const int64_t *d, const uint64_t *u, size_t cnt, int64_t med,
                              int64_t slope, struct dpcodec_block *b)
{
    unsigned hist[65] = {0}, lmax = 0;
    for (size_t j = 0; j < cnt; j++) {
        unsigned l = u[j] ? 64u - (unsigned)__builtin_clzll(u[j]) : 0;
        hist[l]++;
        lmax = l > lmax ? l : lmax;
    }
    size_t fixed =
        3 + dpcodec_varint_len(coding_zigzag(med)) + dpcodec_varint_len(coding_zigzag(slope)) + 1;
    /* bits(B) ~ cnt B + per exception (bit length l > B) a position byte and a high part of
     * about l - B + 1 bits at 8 bits a 7-bit varint group: from the exceptions' count E and
     * bit-length sum S above B, both running sums (x7 to stay in integers) */
    int64_t e = (int64_t)cnt, sl = 0;
    for (unsigned l = 0; l <= lmax; l++)
        sl += (int64_t)l * hist[l];
    int64_t best7 = INT64_MAX;
    unsigned best_b = 0;
    for (unsigned bb = 0; bb <= lmax && bb < 64; bb++) {
        e -= hist[bb];
        sl -= (int64_t)bb * hist[bb];
        if (e == (int64_t)cnt)
            continue; /* no entry would be packed */
        int64_t c7 = 7 * (int64_t)cnt * bb + 56 * e + 8 * (sl - ((int64_t)bb - 1) * e);
        if (c7 < best7) {
            best7 = c7;
            best_b = bb;
        }
    }
    size_t best_bits = best7 == INT64_MAX ? SIZE_MAX : (size_t)(best7 / 7);
    if (best_bits == SIZE_MAX || fixed + best_bits / 8 >= b->bytes)
        return; /* every entry is an exception, or no B can win */
    /* the inliers' offsets from med - 2^(B-1), in [0, 2^B): their least and greatest */
    uint64_t half = best_b ? 1ull << (best_b - 1) : 0, lo = UINT64_MAX, hi = 0;
    for (size_t j = 0; j < cnt; j++) {
        if (u[j] >> best_b)
            continue;
        uint64_t o = (uint64_t)d[j] - (uint64_t)med + half;
        lo = o < lo ? o : lo;
        hi = o > hi ? o : hi;
    }
    int64_t base = (int64_t)((uint64_t)med - half + lo);
    unsigned w = hi > lo ? 64u - (unsigned)__builtin_clzll(hi - lo) : 0;
    size_t bytes = dpcodec_patch_bytes(d, cnt, base, w, slope);
    if (bytes < b->bytes) {
        b->rice = b->radix = false;
        b->patched = true;
        b->base = base;
        b->width = w;
        b->slope = slope;
        b->bytes = bytes;
    }
}

/* The least-squares slope of r[0..cnt) against j, rounded (0 when it is not a usable int64). */
static int64_t dpcodec_ls_slope(const int64_t *r, size_t cnt)
{
    if (cnt < 3)
        return 0;
    double jm = (double)(cnt - 1) / 2, sxy = 0, sxx = 0, r0 = (double)r[0];
    for (size_t j = 0; j < cnt; j++) {
        double dj = (double)j - jm;
        sxy += dj * ((double)r[j] - r0);
        sxx += dj * dj;
    }
    double s = sxy / sxx;
    if (!(fabs(s) < 4e18))
        return 0;
    return llround(s);
}

/* The patched candidates of r[0..cnt): no slope (u: zigzag(r - med) already), and with trend
 * (a stream of order 0: values, not differences) the least-squares line. */
static void dpcodec_patch_choose(const int64_t *r, const uint64_t *u, size_t cnt, int64_t med,
                                 bool trend, struct dpcodec_block *b)
{
    dpcodec_patch_try(r, u, cnt, med, 0, b);
    if (!trend)
        return;
    int64_t slope = dpcodec_ls_slope(r, cnt);
    if (slope == 0)
        return;
    int64_t d[DPCODEC_BLOCK], tmp[DPCODEC_BLOCK];
    uint64_t du[DPCODEC_BLOCK];
    for (size_t j = 0; j < cnt; j++)
        d[j] = tmp[j] = (int64_t)((uint64_t)r[j] - (uint64_t)slope * j);
    int64_t dmed = dpcodec_select(tmp, cnt, cnt / 2);
    for (size_t j = 0; j < cnt; j++)
        du[j] = coding_zigzag(dpcodec_sub(d[j], dmed));
    dpcodec_patch_try(d, du, cnt, dmed, slope, b);
}

static void dpcodec_block_choose(const int64_t *r, size_t cnt, bool trend, struct dpcodec_block *b)
{
    int64_t mn;
    unsigned w;
    dpcodec_block_range(r, cnt, &mn, &w);
    b->rice = false;
    b->radix = false;
    b->patched = false;
    b->slope = 0;
    b->base = mn;
    b->width = w;
    b->bytes = 1 + dpcodec_varint_len(coding_zigzag(mn)) + (cnt * w + 7) / 8;
    /* radix: uniform residuals cost log2(range + 1) bits each, not a whole bit width */
    uint64_t range = 0;
    for (size_t j = 0; j < cnt; j++) {
        uint64_t d = (uint64_t)r[j] - (uint64_t)mn;
        if (d > range)
            range = d;
    }
    if (w >= 2 && range < UINT32_MAX && ((range + 1) & range) != 0) {
        uint64_t rr = range + 1;
        size_t bits = dpcodec_radix_bits_fast(rr, cnt);
        size_t bytes =
            1 + dpcodec_varint_len(coding_zigzag(mn)) + dpcodec_varint_len(rr) + (bits + 7) / 8;
        if (bytes < b->bytes && dpcodec_radix_cheap(rr, bits)) {
            b->radix = true;
            b->radix_r = rr;
            b->bytes = bytes;
        }
    }
    if (w == 0)
        return;
    int64_t sorted[DPCODEC_BLOCK];
    memcpy(sorted, r, cnt * sizeof(*r));
    int64_t med = dpcodec_select(sorted, cnt, cnt / 2);
    /* Rice parameter k costs bits(k) = cnt (k + 1) + sum of (u_j >> k) bits, for every k where
     * no u_j >> k exceeds 2^20 (a unary run that long is never the cheapest); the writer takes
     * the first k of fewest bytes when that beats the form above. bits(k) is convex in k (its
     * step bits(k + 1) - bits(k) = cnt - sum of ceil((u_j >> k) / 2) never decreases), so the
     * first k of fewest bits is found by walking from a guess near log2(mean u), and the first
     * k of fewest bytes lies at or just below it. */
    uint64_t u[DPCODEC_BLOCK], umax = 0, usum = 0;
    for (size_t j = 0; j < cnt; j++) {
        u[j] = coding_zigzag(dpcodec_sub(r[j], med));
        if (u[j] > umax)
            umax = u[j];
        usum += u[j] >> 8; /* a guess only: no overflow for any u */
    }
    if (w < 4) { /* Rice: nothing to gain on narrow blocks; a patched block: a lone step */
        dpcodec_patch_choose(r, u, cnt, med, trend, b);
        return;
    }
    unsigned kmin = 0;
    while ((umax >> kmin) > (1u << 20))
        kmin++;
    uint64_t mean = (usum / cnt) << 8;
    unsigned k = mean ? 63u - (unsigned)__builtin_clzll(mean) : 0;
    k = k < kmin ? kmin : k;
    uint64_t bk = dpcodec_rice_bits(u, cnt, k);
    if (k < 63) {
        uint64_t up = dpcodec_rice_bits(u, cnt, k + 1);
        if (up < bk) {
            k++;
            bk = up;
            while (k < 63 && (up = dpcodec_rice_bits(u, cnt, k + 1)) < bk) {
                k++;
                bk = up;
            }
            goto found;
        }
    }
    while (k > kmin) {
        uint64_t down = dpcodec_rice_bits(u, cnt, k - 1);
        if (down > bk)
            break;
        k--;
        bk = down;
    }
found:;
    size_t hdr = 2 + dpcodec_varint_len(coding_zigzag(med));
    size_t bytes = hdr + (size_t)((bk + 7) / 8);
    /* bits fall strictly towards k: earlier k of the same byte count come first */
    while (k > kmin && hdr + (size_t)((dpcodec_rice_bits(u, cnt, k - 1) + 7) / 8) == bytes)
        k--;
    if (bytes < b->bytes) {
        b->rice = true;
        b->radix = false;
        b->base = med;
        b->width = k;
        b->bytes = bytes;
    }
    dpcodec_patch_choose(r, u, cnt, med, trend, b);
}

/* Bytes of the integer stream of order k over x (res: scratch of n entries). */
static size_t dpcodec_stream_cost(const int64_t *x, size_t n, unsigned k, int64_t *res)
{
    int64_t heads[2] = {0, 0};
    size_t h = dpcodec_residuals(x, n, k, heads, res);
    size_t c = 0;
    for (size_t i = 0; i < h; i++)
        c += dpcodec_varint_len(coding_zigzag(heads[i]));
    for (size_t done = 0; done < n - h; done += DPCODEC_BLOCK) {
        size_t cnt = n - h - done < DPCODEC_BLOCK ? n - h - done : DPCODEC_BLOCK;
        struct dpcodec_block b;
        dpcodec_block_choose(res + done, cnt, k == 0, &b);
        c += b.bytes;
    }
    return c;
}

static size_t dpcodec_stream_write(const int64_t *x, size_t n, unsigned k, int64_t *res,
                                   bool varint_blocks, uint8_t *p, bool *patched)
{
    int64_t heads[2] = {0, 0};
    size_t h = dpcodec_residuals(x, n, k, heads, res);
    size_t o = 0;
    for (size_t i = 0; i < h; i++)
        o += coding_put_varint64(p + o, coding_zigzag(heads[i]));
    for (size_t done = 0; done < n - h; done += DPCODEC_BLOCK) {
        size_t cnt = n - h - done < DPCODEC_BLOCK ? n - h - done : DPCODEC_BLOCK;
        int64_t mn;
        unsigned w;
        dpcodec_block_range(res + done, cnt, &mn, &w);
        if (varint_blocks && w > 0) {
            /* byte-aligned residuals: larger raw, but DEFLATE's Huffman codes then approach
             * the residuals' entropy */
            p[o++] = DPCODEC_VARINT_BLOCK;
            o += coding_put_varint64(p + o, coding_zigzag(mn));
            for (size_t j = 0; j < cnt; j++)
                o += coding_put_varint64(p + o, (uint64_t)res[done + j] - (uint64_t)mn);
            continue;
        }
        struct dpcodec_block b;
        dpcodec_block_choose(res + done, cnt, k == 0, &b);
        if (b.radix) {
            p[o++] = DPCODEC_RADIX_BLOCK;
            o += coding_put_varint64(p + o, coding_zigzag(b.base));
            o += coding_put_varint64(p + o, b.radix_r);
            struct dpcodec_big big = {{0}, 0};
            for (size_t j = cnt; j-- > 0;) /* Horner: digit 0 ends least significant */
                dpcodec_big_mul_add(&big, b.radix_r, (uint64_t)res[done + j] - (uint64_t)b.base);
            /* the number big-endian, right-aligned in ceil(bits / 8) bytes (zero padding
             * first) */
            size_t bytes = (dpcodec_radix_bits_fast(b.radix_r, cnt) + 7) / 8;
            for (size_t i = 0; i < bytes; i++)
                p[o + bytes - 1 - i] = i / 8 < big.n ? (uint8_t)(big.l[i / 8] >> (8 * (i % 8))) : 0;
            o += bytes;
            continue;
        }
        if (b.patched) {
            const int64_t *r = res + done;
            int64_t d[DPCODEC_BLOCK];
            for (size_t j = 0; j < cnt; j++)
                d[j] = (int64_t)((uint64_t)r[j] - (uint64_t)b.slope * j);
            *patched = true;
            p[o++] = DPCODEC_PATCHED_BLOCK;
            p[o++] = (uint8_t)b.width;
            o += coding_put_varint64(p + o, coding_zigzag(b.base));
            o += coding_put_varint64(p + o, coding_zigzag(b.slope));
            size_t at_e = o++, e = 0;
            struct dpcodec_bitw bw = {p + o, 0};
            uint64_t mask = b.width < 64 ? (1ull << b.width) - 1 : UINT64_MAX;
            if (b.width)
                for (size_t j = 0; j < cnt; j++)
                    dpcodec_bitw_put(&bw, ((uint64_t)d[j] - (uint64_t)b.base) & mask, b.width);
            o += (bw.bits + 7) / 8;
            for (size_t j = 0; j < cnt; j++)
                if (dpcodec_patch_out(d[j], b.base, b.width)) {
                    p[o++] = (uint8_t)j;
                    e++;
                }
            for (size_t j = 0; j < cnt; j++)
                if (dpcodec_patch_out(d[j], b.base, b.width))
                    o += coding_put_varint64(
                        p + o, coding_zigzag(dpcodec_patch_high(d[j], b.base, b.width)));
            p[at_e] = (uint8_t)e;
            continue;
        }
        if (b.rice) {
            p[o++] = DPCODEC_RICE_BLOCK;
            p[o++] = (uint8_t)b.width;
            o += coding_put_varint64(p + o, coding_zigzag(b.base));
            struct dpcodec_bitw bw = {p + o, 0};
            for (size_t j = 0; j < cnt; j++) {
                uint64_t u = coding_zigzag(dpcodec_sub(res[done + j], b.base));
                dpcodec_bitw_ones(&bw, u >> b.width);
                dpcodec_bitw_put(&bw, 0, 1);
                if (b.width)
                    dpcodec_bitw_put(&bw, u & ((b.width < 64 ? (1ull << b.width) : 0) - 1),
                                     b.width);
            }
            o += (bw.bits + 7) / 8;
            continue;
        }
        p[o++] = (uint8_t)w;
        o += coding_put_varint64(p + o, coding_zigzag(mn));
        struct dpcodec_bitw bw = {p + o, 0};
        if (w)
            for (size_t j = 0; j < cnt; j++)
                dpcodec_bitw_put(&bw, (uint64_t)res[done + j] - (uint64_t)mn, w);
        o += (bw.bits + 7) / 8;
    }
    return o;
}

/* The cheapest order for x; its cost in *cost. */
static unsigned dpcodec_best_order(const int64_t *x, size_t n, int64_t *res, size_t *cost)
{
    unsigned best = 0;
    *cost = SIZE_MAX;
    for (unsigned k = 0; k <= 2; k++) {
        size_t c = dpcodec_stream_cost(x, n, k, res);
        if (c < *cost) {
            *cost = c;
            best = k;
        }
    }
    return best;
}

/* Gorilla XOR of double bits; returns bytes used (or only counts them when p is NULL). */
static size_t dpcodec_xor_write(const struct dpcodec_point *pts, size_t n, uint8_t *p)
{
    struct dpcodec_bitw w = {p, 0};
    size_t bits = 64;
    uint64_t prev = dpcodec_dbits(pts[0].f);
    if (p)
        dpcodec_bitw_put(&w, prev, 64);
    unsigned plead = 0, plen = 0;
    for (size_t i = 1; i < n; i++) {
        uint64_t cur = dpcodec_dbits(pts[i].f);
        uint64_t x = cur ^ prev;
        prev = cur;
        if (!x) {
            bits += 1;
            if (p)
                dpcodec_bitw_put(&w, 0, 1);
            continue;
        }
        unsigned lead = (unsigned)__builtin_clzll(x), trail = (unsigned)__builtin_ctzll(x);
        if (lead > 31)
            lead = 31;
        unsigned len = 64 - lead - trail;
        if (plen && lead >= plead && 64 - trail <= plead + plen) {
            bits += 2 + plen;
            if (p) {
                dpcodec_bitw_put(&w, 2, 2); /* '10' */
                dpcodec_bitw_put(&w, x >> (64 - plead - plen), plen);
            }
        } else {
            bits += 13 + len;
            if (p) {
                dpcodec_bitw_put(&w, 3, 2); /* '11' */
                dpcodec_bitw_put(&w, lead, 5);
                dpcodec_bitw_put(&w, len - 1, 6);
                dpcodec_bitw_put(&w, x >> trail, len);
            }
            plead = lead;
            plen = len;
        }
    }
    return (bits + 7) / 8;
}

/* Finds the decimal exponent that represents every float point exactly, filling m[]. */
static bool dpcodec_decimal_fit(const struct dpcodec_point *pts, size_t n, bool as_double,
                                int64_t *m, unsigned *exp_out)
{
    unsigned e = 0;
    for (size_t i = 0; i < n; i++) {
        double v = pts[i].f;
        if (!isfinite(v) || fabs(v) >= 9e15)
            return false;
        unsigned k = e;
        for (; k <= DPCODEC_MAX_EXP10; k++) {
            double s = v * dpcodec_p10[k];
            if (fabs(s) >= 9007199254740992.0)
                return false;
            int64_t mm = llround(s);
            enum dpcodec_type t = as_double ? DPCODEC_DOUBLE : pts[i].type;
            if (dpcodec_dbits(dpcodec_decimal(mm, k, t)) == dpcodec_dbits(v))
                break;
        }
        if (k > DPCODEC_MAX_EXP10)
            return false;
        e = k;
    }
    for (size_t i = 0; i < n; i++) {
        double s = pts[i].f * dpcodec_p10[e];
        if (fabs(s) >= 9007199254740992.0)
            return false;
        m[i] = llround(s);
        enum dpcodec_type t = as_double ? DPCODEC_DOUBLE : pts[i].type;
        if (dpcodec_dbits(dpcodec_decimal(m[i], e, t)) != dpcodec_dbits(pts[i].f))
            return false;
    }
    *exp_out = e;
    return true;
}

static void xs_desc(int64_t *d, size_t i, const struct dpcodec_point *pts)
{
    d[i] = pts[i].type | (pts[i].ms ? 4 : 0);
}

struct dpcodec_plan {
    const struct dpcodec_point *pts;
    size_t n;
    int64_t base_ms;
    bool uniform, seconds;
    bool regular; /* evenly spaced timestamps, n >= 3: their stream is the two heads alone */
    unsigned kind, order, e10;
    const int64_t *xs; /* values (INT, DECIMAL) */
    int64_t *res, *ts; /* scratch, n entries each */
};

/* Writes the payload of dpcodec_format.h into raw; returns its length; *patched tells whether
 * a patched block was written (then the cell is version DPCODEC_CVERSION_PATCHED). */
static size_t dpcodec_payload(const struct dpcodec_plan *pl, bool varint_blocks, uint8_t *raw,
                              bool *patched)
{
    *patched = false;
    const struct dpcodec_point *pts = pl->pts;
    size_t n = pl->n, o = 0;
    if (!pl->uniform) {
        for (size_t i = 0; i < n; i++)
            xs_desc(pl->res, i, pts);
        o += dpcodec_stream_write(pl->res, n, 0, pl->ts, varint_blocks, raw + o, patched);
    }
    if (pl->kind == DPCODEC_VK_DECIMAL)
        raw[o++] = (uint8_t)pl->e10;
    int64_t unit = pl->seconds ? 1000 : 1;
    for (size_t i = 0; i < n; i++)
        pl->ts[i] = (pts[i].ts_ms - pl->base_ms) / unit;
    if (pl->regular) { /* DPCODEC_CF_REGULAR */
        o += coding_put_varint64(raw + o, coding_zigzag(pl->ts[0]));
        o += coding_put_varint64(raw + o, coding_zigzag(pl->ts[1] - pl->ts[0]));
    } else {
        o += dpcodec_stream_write(pl->ts, n, 2, pl->res, varint_blocks, raw + o, patched);
    }
    switch (pl->kind) {
    case DPCODEC_VK_INT:
    case DPCODEC_VK_DECIMAL:
    case DPCODEC_VK_BITS:
        o += dpcodec_stream_write(pl->xs, n, pl->order, pl->res, varint_blocks, raw + o, patched);
        break;
    case DPCODEC_VK_XOR:
        o += dpcodec_xor_write(pts, n, raw + o);
        break;
    case DPCODEC_VK_RAW:
        for (size_t i = 0; i < n; i++) {
            if (pts[i].type == DPCODEC_INT) {
                o += coding_put_varint64(raw + o, coding_zigzag(pts[i].i));
            } else {
                uint8_t f;
                o += dpcodec_value(&pts[i], raw + o, &f);
            }
        }
        break;
    }
    return o;
}

/* Per-thread encoder state, kept between rows (flush threads compact row after row): one raw
 * deflate stream, reset between payloads instead of set up and torn down twice per row, and
 * one scratch buffer that grows to the largest row up to DPCODEC_SCRATCH_MAX bytes (a larger
 * row takes a temporary buffer). Freed by the thread-exit destructor of a pthread key. */
#define DPCODEC_SCRATCH_MAX (4u << 20)
#define DPCODEC_DEFLATE_MARGIN 32 /* dpcodec_deflate_below(): deflate must be able to save 1/32 */
#define DPCODEC_TRI_SLOTS   8192 /* dpcodec_deflate_loses(): open-addressed 3-byte strings */
#define DPCODEC_TRI_MAX     4095 /* longest input it bounds (load < 1/2, one deflate block) */
struct dpcodec_enc {
    z_stream zs;
    bool zok;
    uint8_t *buf;
    size_t cap;
    uint32_t tri[DPCODEC_TRI_SLOTS]; /* gen << 24 | string; other generations are empty */
    uint32_t gen;                    /* 1..255 */
};
static pthread_key_t dpcodec_enc_key;
static pthread_once_t dpcodec_enc_once = PTHREAD_ONCE_INIT;
static bool dpcodec_enc_keyed;

static void dpcodec_enc_free(void *arg)
{
    struct dpcodec_enc *e = arg;
    if (e->zok)
        deflateEnd(&e->zs);
    free(e->buf);
    free(e);
}

static void dpcodec_enc_init_key(void)
{
    dpcodec_enc_keyed = pthread_key_create(&dpcodec_enc_key, dpcodec_enc_free) == 0;
}

/* This thread's encoder state, or NULL (then every row sets up its own). */
static struct dpcodec_enc *dpcodec_enc_get(void)
{
    pthread_once(&dpcodec_enc_once, dpcodec_enc_init_key);
    if (!dpcodec_enc_keyed)
        return NULL;
    struct dpcodec_enc *e = pthread_getspecific(dpcodec_enc_key);
    if (e)
        return e;
    e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    if (pthread_setspecific(dpcodec_enc_key, e) != 0) {
        free(e);
        return NULL;
    }
    return e;
}

/* One stable counting-sort pass of n values by their 6 bits at shift, src into dst. */
static void dpcodec_sort_pass(const uint32_t *src, uint32_t *dst, size_t n, unsigned shift)
{
    size_t pos[65] = {0};
    for (size_t i = 0; i < n; i++)
        pos[((src[i] >> shift) & 63) + 1]++;
    for (unsigned d = 1; d <= 64; d++)
        pos[d] += pos[d - 1];
    for (size_t i = 0; i < n; i++)
        dst[pos[(src[i] >> shift) & 63]++] = src[i];
}

/* Huffman cost (bits) of nl weights, sorted ascending in leaf: the sum of the merged weights,
 * from the sorted leaves and a queue of merged nodes (node: room nl). */
static uint64_t dpcodec_huffman_cost(const uint32_t *leaf, size_t nl, uint32_t *node)
{
    size_t li = 0, nh = 0, nt = 0;
    uint64_t cost = 0;
    for (size_t left = nl; left > 1; left--) {
        uint32_t w[2];
        for (int j = 0; j < 2; j++)
            w[j] = li < nl && (nh == nt || leaf[li] <= node[nh]) ? leaf[li++] : node[nh++];
        node[nt++] = w[0] + w[1];
        cost += (uint64_t)w[0] + w[1];
    }
    return cost;
}

/* A floor (bits) under a dynamic block's code-length sequence for literal/length entries 0..256
 * where the entries in `must` are non-zero (used literals, end of block), those in `may` may be
 * (bytes a match may hide), the rest are 0. Each code-length symbol costs >= 1 bit; a run of z
 * zero entries takes >= min(z, 3) bits (zeros at 1 bit, or a 16/17/18 with >= 2 extra bits), a
 * run of m non-zero entries >= min(m, 4) (its first length, then lengths or a 16); a dynamic
 * program takes the cheapest choice of the `may` entries. */
static unsigned dpcodec_lengths_floor(const uint8_t *must, const uint8_t *may, bool any_may)
{
    if (!any_may) { /* no choice: the runs are known */
        unsigned bits = 0, run = 0;
        bool prev = false;
        for (unsigned i = 0; i <= 256; i++) {
            bool nz = i == 256 || must[i];
            run = i > 0 && nz == prev ? run + 1 : 1;
            prev = nz;
            bits += run <= (nz ? 4u : 3u);
        }
        return bits;
    }
    enum {
        INF = 1u << 20
    };
    unsigned z[4] = {INF, INF, INF, INF}, m[5] = {INF, INF, INF, INF, INF}; /* [run, capped] */
    unsigned start = 0;
    for (unsigned i = 0; i <= 256; i++) {
        bool nz_ok = i == 256 || must[i] || may[i], z_ok = i < 256 && !must[i];
        unsigned bz = start, bm = start; /* cheapest way to end the other kind's run here */
        for (int c = 1; c <= 3; c++)
            bm = z[c] < bm ? z[c] : bm;
        for (int c = 1; c <= 4; c++)
            bz = m[c] < bz ? m[c] : bz;
        unsigned nzz[4] = {INF, INF, INF, INF}, nm[5] = {INF, INF, INF, INF, INF};
        if (z_ok) {
            nzz[1] = bz + 1;
            nzz[2] = z[1] + 1;
            nzz[3] = (z[2] + 1 < z[3] ? z[2] + 1 : z[3]);
        }
        if (nz_ok) {
            nm[1] = bm + 1;
            nm[2] = m[1] + 1;
            nm[3] = m[2] + 1;
            nm[4] = (m[3] + 1 < m[4] ? m[3] + 1 : m[4]);
        }
        memcpy(z, nzz, sizeof(z));
        memcpy(m, nm, sizeof(m));
        start = INF;
    }
    unsigned best = INF;
    for (int c = 1; c <= 4; c++)
        best = m[c] < best ? m[c] : best; /* entry 256 is non-zero */
    return best;
}

/* Whether the raw DEFLATE of in (n bytes, n <= DPCODEC_TRI_MAX) provably takes limit bytes or
 * more: a floor under its size reaches limit (cheapest bounds first, stopping once one falls
 * short).
 * Such an input is one block (zlib splits blocks every 16383 symbols). A match copies only
 * bytes whose 3-byte string occurred before, so the bytes covered by no repeated 3-byte string
 * are literals, and the block is one of:
 *   stored: 3 header bits padded to a byte, LEN, NLEN, the n bytes: n + 5 bytes;
 *   fixed Huffman: 3 bits, those literals at 8 (bytes < 144) or 9 bits, end of block 7 bits;
 *   dynamic Huffman: 3 bits, HLIT/HDIST/HCLEN 14 bits, >= 4 code-length lengths 12 bits, the
 *     code-length sequence (dpcodec_lengths_floor, plus >= 1 bit of distance lengths), and the
 *     literals and the end of block under a prefix code: >= the Huffman cost of their counts.
 * The smallest of the three is a floor. On random-looking payloads it is within a few percent
 * of what deflate writes, enough to prove that deflating cannot beat the raw payload. */
static bool dpcodec_deflate_loses(struct dpcodec_enc *e, const uint8_t *in, size_t n, size_t limit)
{
    if (n + 5 < limit)
        return false; /* a stored block could be smaller */
    uint8_t covered[DPCODEC_TRI_MAX];
    memset(covered, 0, n);
    if (++e->gen > 255) {
        memset(e->tri, 0, sizeof(e->tri));
        e->gen = 1;
    }
    for (size_t p = 0; p + 3 <= n; p++) {
        uint32_t t = (uint32_t)in[p] << 16 | (uint32_t)in[p + 1] << 8 | in[p + 2];
        uint32_t want = e->gen << 24 | t;
        size_t h = (size_t)((t * 2654435761u) >> 19) & (DPCODEC_TRI_SLOTS - 1);
        for (;; h = (h + 1) & (DPCODEC_TRI_SLOTS - 1)) {
            if (e->tri[h] >> 24 != e->gen) { /* empty: first time this string occurs */
                e->tri[h] = want;
                break;
            }
            if (e->tri[h] == want) { /* a repeat: these bytes may be inside a match */
                covered[p] = covered[p + 1] = covered[p + 2] = 1;
                break;
            }
        }
    }
    uint32_t cnt[256] = {0};
    uint8_t must[256] = {0}, may[256] = {0};
    uint64_t fixed = 3 + 7;
    bool any_may = false;
    for (size_t p = 0; p < n; p++) {
        if (covered[p]) {
            may[in[p]] = 1;
            any_may = true;
        } else {
            cnt[in[p]]++;
            must[in[p]] = 1;
            fixed += in[p] < 144 ? 8 : 9;
        }
    }
    if ((fixed + 7) / 8 < limit)
        return false;
    uint32_t leaf[257], node[257], tmp[257];
    size_t nl = 0;
    tmp[nl++] = 1; /* end of block */
    for (unsigned c = 0; c < 256; c++)
        if (cnt[c])
            tmp[nl++] = cnt[c];
    /* counts are <= DPCODEC_TRI_MAX < 2^12: two stable 6-bit counting-sort passes */
    dpcodec_sort_pass(tmp, node, nl, 0);
    dpcodec_sort_pass(node, leaf, nl, 6);
    uint64_t dynamic = 3 + 14 + 12 + 1 + dpcodec_huffman_cost(leaf, nl, node);
    if ((dynamic + 7) / 8 >= limit)
        return true;
    dynamic += dpcodec_lengths_floor(must, may, any_may);
    return (dynamic + 7) / 8 >= limit;
}

/* Raw DEFLATE (level 6, window 15, memLevel 8: the parameters are part of the output bytes) of
 * in into out (cap); 0 if it fails or does not fit. Uses e's stream when e is non-NULL. */
static size_t dpcodec_deflate(struct dpcodec_enc *e, const uint8_t *in, size_t n, uint8_t *out,
                              size_t cap)
{
    if (n <= 32)
        return 0;
    z_stream tmp, *zs = &tmp;
    if (e && e->zok) {
        zs = &e->zs;
        if (deflateReset(zs) != Z_OK)
            return 0;
    } else {
        if (e)
            zs = &e->zs;
        memset(zs, 0, sizeof(*zs));
        if (deflateInit2(zs, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
            return 0;
        if (e)
            e->zok = true;
    }
    zs->next_in = (Bytef *)(uintptr_t)in;
    zs->avail_in = (uInt)n;
    zs->next_out = out;
    zs->avail_out = (uInt)cap;
    size_t got = deflate(zs, Z_FINISH) == Z_STREAM_END ? cap - zs->avail_out : 0;
    if (zs == &tmp)
        deflateEnd(&tmp);
    return got;
}

/* dpcodec_deflate(), or 0 without running it when the deflated payload (with its length
 * varint) provably takes more than best less 1/32 of it, i.e. could save at most that. */
static size_t dpcodec_deflate_below(struct dpcodec_enc *e, const uint8_t *in, size_t n,
                                    uint8_t *out, size_t cap, size_t best)
{
    if (n <= 32)
        return 0; /* never deflated */
    /* the margin: on realistic host data deflate ran on most payloads, won almost never
     * (0.03% of the stored bytes) and took a third of the ingest writer's CPU (docs/schema.md) */
    size_t vl = dpcodec_varint_len(n);
    if (e && n <= DPCODEC_TRI_MAX && vl < best) {
        size_t limit = best - vl;
        if (dpcodec_deflate_loses(e, in, n, limit - limit / DPCODEC_DEFLATE_MARGIN))
            return 0;
    }
    return dpcodec_deflate(e, in, n, out, cap);
}

int dpcodec_compressed_encode(int64_t base_s, const struct dpcodec_point *pts, size_t n, uint8_t *v,
                              size_t *vlen, struct ct_err *err)
{
    int rc = dpcodec_check_points(base_s, pts, n, err);
    if (rc != CT_OK)
        return rc;
    int64_t base_ms = base_s * 1000;
    bool uniform = true, seconds = true, all_int = true, no_int = true, rule = true;
    for (size_t i = 0; i < n; i++) {
        if (pts[i].type != pts[0].type || pts[i].ms != pts[0].ms)
            uniform = false;
        /* rule: every real point is typed by OpenTSDB's rule and ms flags agree, so neither
         * needs descriptors (gauges mix floats and doubles all the time) */
        if (pts[i].ms != pts[0].ms || pts[i].type == DPCODEC_INT ||
            pts[i].type != dpcodec_point_real(0, false, pts[i].f).type)
            rule = false;
        if ((pts[i].ts_ms - base_ms) % 1000 != 0)
            seconds = false;
        if (pts[i].type == DPCODEC_INT)
            no_int = false;
        else
            all_int = false;
    }
    /* scratch: xs, res, ts (n each), then the two raw payloads and the two deflated ones */
    size_t rawcap = dpcodec_compressed_bound(n), zcap = rawcap + 64;
    size_t need = 3 * n * sizeof(int64_t) + 2 * rawcap + 2 * zcap;
    struct dpcodec_enc *enc = dpcodec_enc_get();
    uint8_t *mem = NULL, *own = NULL;
    if (enc && need <= DPCODEC_SCRATCH_MAX) {
        if (enc->cap < need) {
            uint8_t *nb = malloc(need);
            if (nb) {
                free(enc->buf);
                enc->buf = nb;
                enc->cap = need;
            }
        }
        if (enc->cap >= need)
            mem = enc->buf;
    }
    if (!mem)
        mem = own = malloc(need);
    if (!mem)
        return ct_err_set(err, CT_ENOMEM, "out of memory compressing %zu points", n);
    int64_t *xs = (int64_t *)mem, *res = xs + n, *ts = res + n;
    uint8_t *raw = (uint8_t *)(ts + n), *rawb = raw + rawcap, *z1 = rawb + rawcap, *z2 = z1 + zcap;
    memset(ts, 0, n * sizeof(*ts));
    if (!no_int)
        rule = false;
    /* choose the value encoding (invariant 3: decimal only when exact) */
    unsigned kind = DPCODEC_VK_RAW, order = 0, e10 = 0;
    size_t cost;
    if (all_int) {
        for (size_t i = 0; i < n; i++)
            xs[i] = pts[i].i;
        kind = DPCODEC_VK_INT;
        order = dpcodec_best_order(xs, n, res, &cost);
    } else if (no_int) { /* floats and doubles may mix: OpenTSDB types each value on its own */
        size_t best = dpcodec_xor_write(pts, n, NULL), bc;
        kind = DPCODEC_VK_XOR;
        if (uniform)
            rule = false;
        /* the IEEE bits as integers: close values of one binade have close bit patterns */
        for (size_t i = 0; i < n; i++)
            ts[i] = (int64_t)dpcodec_dbits(pts[i].f);
        unsigned bo = dpcodec_best_order(ts, n, res, &bc);
        if (bc < best) {
            best = bc;
            kind = DPCODEC_VK_BITS;
            order = bo;
        }
        if (dpcodec_decimal_fit(pts, n, rule, xs, &e10)) {
            unsigned o = dpcodec_best_order(xs, n, res, &cost);
            if (cost + 1 <= best) {
                kind = DPCODEC_VK_DECIMAL;
                order = o;
            }
        }
        if (kind == DPCODEC_VK_BITS)
            memcpy(xs, ts, n * sizeof(*xs));
    }
    uint8_t flags = 0;
    if (seconds)
        flags |= DPCODEC_CF_SECONDS;
    if (rule) {
        flags |= DPCODEC_CF_RULE_TYPES;
        if (pts[0].ms)
            flags |= DPCODEC_CF_ALL_MS;
        uniform = true; /* no descriptors */
    } else if (!uniform) {
        flags |= DPCODEC_CF_DESCRIPTORS;
    } else {
        flags |= (uint8_t)(pts[0].type << DPCODEC_CF_TYPE_SHIFT);
        if (pts[0].ms)
            flags |= DPCODEC_CF_ALL_MS;
    }
    /* evenly spaced timestamps (as most hours are): a version-2 cell keeps their first two */
    bool regular = n >= 3;
    for (size_t i = 2; regular && i < n; i++)
        regular = pts[i].ts_ms - pts[i - 1].ts_ms == pts[1].ts_ms - pts[0].ts_ms;
    if (regular)
        flags |= DPCODEC_CF_REGULAR;
    struct dpcodec_plan plan = {pts,  n,     base_ms, uniform, seconds, regular,
                                kind, order, e10,     xs,      res,     ts};
    /* two payloads: bit-packed blocks (smallest raw) and varint blocks (often smallest once
     * deflated); each raw or deflated; the smallest of the four wins */
    bool patched, patched_b;
    size_t o = dpcodec_payload(&plan, false, raw, &patched);
    size_t zlen = 0, best = o;
    const uint8_t *payload = raw;
    bool deflated = false;
    zlen = dpcodec_deflate_below(enc, raw, o, z1, zcap, best);
    if (zlen && zlen + dpcodec_varint_len(o) < best) {
        best = zlen + dpcodec_varint_len(o);
        payload = z1;
        deflated = true;
    }
    size_t ob = dpcodec_payload(&plan, true, rawb, &patched_b);
    size_t zb = dpcodec_deflate_below(enc, rawb, ob, z2, zcap, best);
    if (zb && zb + dpcodec_varint_len(ob) < best) {
        best = zb + dpcodec_varint_len(ob);
        payload = z2;
        deflated = true;
        zlen = zb;
        o = ob;
        patched = patched_b;
    }
    size_t h = 0;
    v[h++] = patched || regular ? DPCODEC_CVERSION_PATCHED : DPCODEC_CVERSION;
    v[h++] = DPCODEC_VENC(kind, order);
    size_t flags_at = h++;
    h += coding_put_varint64(v + h, n);
    if (deflated) {
        flags |= DPCODEC_CF_DEFLATED;
        h += coding_put_varint64(v + h, o);
        memcpy(v + h, payload, zlen);
        h += zlen;
    } else {
        memcpy(v + h, raw, o);
        h += o;
    }
    v[flags_at] = flags;
    *vlen = h;
    free(own);
    return CT_OK;
}

/* ---- compaction --------------------------------------------------------------------------- */

void dpcodec_compacted_free(struct dpcodec_compacted *c)
{
    if (!c)
        return;
    free(c->mem);
    memset(c, 0, sizeof(*c));
}

static int dpcodec_qcmp(const void *a, const void *b)
{
    const struct wc_cell *x = a, *y = b;
    size_t n = x->qualifier.len < y->qualifier.len ? x->qualifier.len : y->qualifier.len;
    int c = n ? memcmp(x->qualifier.data, y->qualifier.data, n) : 0;
    if (c)
        return c;
    if (x->qualifier.len != y->qualifier.len)
        return x->qualifier.len < y->qualifier.len ? -1 : 1;
    return x->ts_ms > y->ts_ms ? -1 : x->ts_ms < y->ts_ms;
}

int dpcodec_compact(int64_t base_s, const struct wc_cell *cells, size_t ncells,
                    enum dpcodec_format format, bool fix_duplicates, struct dpcodec_compacted *out,
                    struct ct_err *err)
{
    memset(out, 0, sizeof(*out));
    size_t ndata = 0, nkeep = 0;
    int64_t newest = 0;
    const struct wc_cell *only = NULL;
    for (size_t i = 0; i < ncells; i++) {
        enum dpcodec_qkind k =
            dpcodec_qualifier_kind(cells[i].qualifier.data, cells[i].qualifier.len);
        if (k == DPCODEC_Q_ANNOTATION || k == DPCODEC_Q_OTHER) {
            nkeep++;
            continue;
        }
        ndata++;
        only = &cells[i];
        if (cells[i].ts_ms > newest)
            newest = cells[i].ts_ms;
    }
    if (ndata == 0)
        return CT_NOTFOUND;
    if (ndata == 1) {
        enum dpcodec_qkind k = dpcodec_qualifier_kind(only->qualifier.data, only->qualifier.len);
        /* already merged; and OpenTSDB never compacts a lone single cell either */
        if ((format == DPCODEC_FORMAT_COMPRESSED && k == DPCODEC_Q_COMPRESSED) ||
            (format == DPCODEC_FORMAT_OPENTSDB &&
             (k == DPCODEC_Q_COMPACTED || k == DPCODEC_Q_POINT)))
            return CT_NOTFOUND;
    }
    /* count the points, then decode into one buffer */
    size_t npts = 0;
    int rc = dpcodec_collect(base_s, cells, ncells, NULL, 0, &npts, NULL, NULL, NULL, err);
    if (rc != CT_OK && rc != CT_ELIMIT)
        return rc;
    ct_err_clear(err);
    if (npts == 0)
        return CT_NOTFOUND;
    size_t vcap =
        format == DPCODEC_FORMAT_COMPRESSED ? dpcodec_compressed_bound(npts) : 8 * npts + 1;
    size_t qcap = format == DPCODEC_FORMAT_COMPRESSED ? DPCODEC_CQ_LEN : 4 * npts;
    size_t total =
        npts * sizeof(struct dpcodec_point) + (nkeep + 1) * sizeof(struct wc_cell) + vcap + qcap;
    char *mem = malloc(total);
    if (!mem)
        return ct_err_set(err, CT_ENOMEM, "out of memory compacting %zu points", npts);
    struct dpcodec_point *pts = (struct dpcodec_point *)mem;
    struct wc_cell *oc = (struct wc_cell *)(mem + npts * sizeof(*pts));
    uint8_t *vbuf = (uint8_t *)(oc + nkeep + 1);
    uint8_t *qbuf = vbuf + vcap;
    size_t n = 0, dups = 0, conflicts = 0;
    int64_t first_conflict = 0;
    rc = dpcodec_collect(base_s, cells, ncells, pts, npts, &n, &dups, &conflicts, &first_conflict,
                         err);
    if (rc != CT_OK)
        goto fail;
    if (conflicts && !fix_duplicates) {
        rc = ct_err_set(err, CT_ECONFLICT,
                        "duplicate timestamp %lld ms with different values (%zu conflicts); set "
                        "tsd.storage.fix_duplicates=true to keep the latest write",
                        (long long)first_conflict, conflicts);
        goto fail;
    }
    size_t qlen, vlen;
    if (format == DPCODEC_FORMAT_COMPRESSED) {
        dpcodec_compressed_qualifier(pts, n, qbuf);
        qlen = DPCODEC_CQ_LEN;
        rc = dpcodec_compressed_encode(base_s, pts, n, vbuf, &vlen, err);
    } else {
        rc = dpcodec_compacted_encode(base_s, pts, n, qbuf, &qlen, vbuf, &vlen, err);
    }
    if (rc != CT_OK)
        goto fail;
    size_t k = 0;
    for (size_t i = 0; i < ncells; i++) {
        enum dpcodec_qkind kd =
            dpcodec_qualifier_kind(cells[i].qualifier.data, cells[i].qualifier.len);
        if (kd == DPCODEC_Q_ANNOTATION || kd == DPCODEC_Q_OTHER)
            oc[k++] = cells[i];
    }
    memset(&oc[k], 0, sizeof(oc[k]));
    oc[k].qualifier = wc_bytes_of(qbuf, qlen);
    oc[k].value = wc_bytes_of(vbuf, vlen);
    oc[k].ts_ms = newest;
    oc[k].type = WC_TYPE_PUT;
    k++;
    qsort(oc, k, sizeof(*oc), dpcodec_qcmp);
    out->cells = oc;
    out->ncells = k;
    out->npoints = n;
    out->duplicates = dups;
    out->mem = mem;
    return CT_OK;
fail:
    free(mem);
    return rc;
}
