/* dpcodec_int.h - what the reading (dpcodec.c) and writing (dpcodec_write.c) halves of the
 * datapoint codec share; not part of the public surface (dpcodec.h is). */
#ifndef CT_DPCODEC_INT_H
#define CT_DPCODEC_INT_H

#include <stdint.h>
#include <string.h>

#include "schema/dpcodec.h"
#include "schema/dpcodec_format.h"

#define DPCODEC_HOUR_MS 3600000LL

static const double dpcodec_p10[DPCODEC_MAX_EXP10 + 1] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};

static inline uint64_t dpcodec_dbits(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

static inline int64_t dpcodec_sub(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a - (uint64_t)b);
}

/* m / 10^e as the point type's value (rounded to float for FLOAT). */
static inline double dpcodec_decimal(int64_t m, unsigned e, enum dpcodec_type t)
{
    double d = (double)m / dpcodec_p10[e];
    return t == DPCODEC_FLOAT ? (double)(float)d : d;
}

/* A little-endian bignum for radix blocks: at most DPCODEC_BLOCK digits below 2^63. */
#define DPCODEC_BIG_LIMBS (DPCODEC_BLOCK + 2)
struct dpcodec_big {
    uint64_t l[DPCODEC_BIG_LIMBS];
    size_t n; /* limbs in use; no leading zero limb */
};
/* b = b * mul + add (the top limb dropped past DPCODEC_BIG_LIMBS). */
void dpcodec_big_mul_add(struct dpcodec_big *b, uint64_t mul, uint64_t add);

/* bitlen(r^cnt - 1): the bits of a radix block of cnt digits base r, for the encoder (exact). */
size_t dpcodec_radix_bits_fast(uint64_t r, size_t cnt);

/* Value bytes (room DPCODEC_MAX_VALUE) and flags of a point; returns the length. */
size_t dpcodec_value(const struct dpcodec_point *p, uint8_t *v, uint8_t *flags);

/* Collects the points of a row's cells into out[0..cap) (*n of them), sorts and de-duplicates
 * them as dpcodec_row_decode() does. conflicts/first_conflict may be NULL. */
int dpcodec_collect(int64_t base_s, const struct wc_cell *cells, size_t ncells,
                    struct dpcodec_point *out, size_t cap, size_t *n, size_t *dups,
                    size_t *conflicts, int64_t *first_conflict, struct ct_err *err);

#endif
