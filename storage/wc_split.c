/* wc_split.c - the backend-neutral split-key algorithms of docs/storage-contract.md, "Split-key
 * algorithms" (HBase's RegionSplitter): HexStringSplit and UniformSplit, for n regions over a key
 * range and for the midpoint of one region.
 *
 * Keys are computed with unsigned big-endian integers of any width (byte arrays), exactly like
 * HBase's BigInteger arithmetic, so the general form works for bounds of any length.
 * Invariants: (1) every number is held in a buffer one byte wider than the key width, so
 * last - first + 1 never overflows; (2) a key first + i * step never exceeds last, so it fits in
 * the key width and the extra byte is zero when it is written out; (3) returned keys are sorted
 * ascending and unique (step >= 1 because range >= n). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/coding.h"
#include "storage/wc.h"

/* ---- unsigned big-endian numbers of width w --------------------------------------------- */

static int split_num_cmp(const uint8_t *a, const uint8_t *b, size_t w)
{
    return memcmp(a, b, w);
}

/* out = a - b; requires a >= b. out may alias a. */
static void split_num_sub(const uint8_t *a, const uint8_t *b, uint8_t *out, size_t w)
{
    int borrow = 0;
    for (size_t i = w; i-- > 0;) {
        int d = (int)a[i] - (int)b[i] - borrow;
        borrow = d < 0;
        out[i] = (uint8_t)(d + (borrow ? 256 : 0));
    }
}

/* out = a + b; returns the carry out of the top byte. out may alias a or b. */
static unsigned split_num_add(const uint8_t *a, const uint8_t *b, uint8_t *out, size_t w)
{
    unsigned carry = 0;
    for (size_t i = w; i-- > 0;) {
        unsigned s = (unsigned)a[i] + b[i] + carry;
        out[i] = (uint8_t)s;
        carry = s >> 8;
    }
    return carry;
}

static unsigned split_num_add_small(uint8_t *a, unsigned v, size_t w)
{
    unsigned long long carry = v;
    for (size_t i = w; i-- > 0 && carry;) {
        unsigned long long s = a[i] + carry;
        a[i] = (uint8_t)s;
        carry = s >> 8;
    }
    return (unsigned)carry;
}

/* out = a * m; returns non-zero on overflow. out may alias a. */
static int split_num_mul_small(const uint8_t *a, unsigned m, uint8_t *out, size_t w)
{
    unsigned long long carry = 0;
    for (size_t i = w; i-- > 0;) {
        unsigned long long p = (unsigned long long)a[i] * m + carry;
        out[i] = (uint8_t)p;
        carry = p >> 8;
    }
    return carry != 0;
}

/* out = a / d (d > 0); out may alias a. */
static void split_num_div_small(const uint8_t *a, unsigned d, uint8_t *out, size_t w)
{
    unsigned long long rem = 0;
    for (size_t i = 0; i < w; i++) {
        unsigned long long cur = rem << 8 | a[i];
        out[i] = (uint8_t)(cur / d);
        rem = cur % d;
    }
}

/* Whether a < v. */
static int split_num_lt_small(const uint8_t *a, size_t w, unsigned long long v)
{
    for (size_t i = 0; i + 8 < w; i++)
        if (a[i])
            return 0;
    unsigned long long low = 0;
    for (size_t i = w > 8 ? w - 8 : 0; i < w; i++)
        low = low << 8 | a[i];
    return low < v;
}

/* ---- key arrays ------------------------------------------------------------------------- */

static int split_alloc_keys(unsigned n, struct wc_bytes **out, struct ct_err *err)
{
    if (n < 2)
        return ct_err_set(err, CT_EINVAL, "number of regions must be at least 2 (got %u)", n);
    *out = calloc((size_t)n - 1, sizeof(**out));
    if (!*out)
        return ct_err_set(err, CT_ENOMEM, "out of memory for %u split keys", n - 1);
    return CT_OK;
}

static const uint8_t split_ff8[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

/* ---- HexStringSplit --------------------------------------------------------------------- */

/* Parses hex text into a big-endian number of width w (which must hold it). */
static int split_hex_parse(struct wc_bytes hex, uint8_t *num, size_t w, const char *what,
                           struct ct_err *err)
{
    memset(num, 0, w);
    for (size_t i = 0; i < hex.len; i++) {
        int d = coding_hex_digit(hex.data[i]);
        if (d < 0)
            return ct_err_set(err, CT_EINVAL,
                              "HexStringSplit %s row must be hexadecimal text (byte %zu is 0x%02X)",
                              what, i, hex.data[i]);
        /* num = num * 16 + d */
        if (split_num_mul_small(num, 16, num, w) || split_num_add_small(num, (unsigned)d, w))
            return ct_err_set(err, CT_EINVAL, "HexStringSplit %s row too long", what);
    }
    return CT_OK;
}

/* Writes num as `digits` lowercase hex characters into a new buffer. */
static int split_hex_format(const uint8_t *num, size_t w, size_t digits, struct wc_bytes *out,
                            struct ct_err *err)
{
    static const char hexd[] = "0123456789abcdef";
    char *s = malloc(digits ? digits : 1);
    if (!s)
        return ct_err_set(err, CT_ENOMEM, "out of memory for a split key");
    for (size_t k = 0; k < digits; k++) {
        /* digit k from the right */
        size_t byte = w - 1 - k / 2;
        unsigned v = k / 2 < w ? (k % 2 ? num[byte] >> 4 : num[byte] & 0xf) : 0;
        s[digits - 1 - k] = hexd[v];
    }
    *out = wc_bytes_of(s, digits);
    return CT_OK;
}

static void split_hex_bounds(struct wc_bytes *first, struct wc_bytes *last)
{
    if (first->len == 0)
        *first = wc_bytes_str("00000000");
    if (last->len == 0)
        *last = wc_bytes_str("ffffffff");
}

static int split_hex_range(struct wc_bytes first, struct wc_bytes last, unsigned n,
                           struct wc_bytes **out, struct ct_err *err)
{
    split_hex_bounds(&first, &last);
    size_t digits = first.len > last.len ? first.len : last.len;
    size_t w = digits / 2 + 2; /* (1): one spare byte */
    uint8_t *buf = calloc(5, w);
    if (!buf)
        return ct_err_set(err, CT_ENOMEM, "out of memory computing split keys");
    uint8_t *a = buf, *b = buf + w, *range = buf + 2 * w, *step = buf + 3 * w, *key = buf + 4 * w;
    struct wc_bytes *keys = NULL;
    int rc = split_hex_parse(first, a, w, "first", err);
    if (rc == CT_OK)
        rc = split_hex_parse(last, b, w, "last", err);
    if (rc != CT_OK)
        goto done;
    if (split_num_cmp(a, b, w) >= 0) {
        rc = ct_err_set(err, CT_EINVAL, "HexStringSplit first row must be below the last row");
        goto done;
    }
    split_num_sub(b, a, range, w);
    split_num_add_small(range, 1, w);
    if (split_num_lt_small(range, w, n)) {
        rc = ct_err_set(err, CT_EINVAL,
                        "HexStringSplit key range is smaller than the %u regions asked for", n);
        goto done;
    }
    if ((rc = split_alloc_keys(n, &keys, err)) != CT_OK)
        goto done;
    split_num_div_small(range, n, step, w);
    for (unsigned i = 1; i < n; i++) {
        split_num_mul_small(step, i, key, w); /* <= range, cannot overflow */
        split_num_add(key, a, key, w);
        if ((rc = split_hex_format(key, w, digits, &keys[i - 1], err)) != CT_OK)
            goto done;
    }
done:
    free(buf);
    if (rc != CT_OK) {
        wc_split_keys_free(keys, keys ? n - 1 : 0);
        return rc;
    }
    *out = keys;
    return CT_OK;
}

/* ---- UniformSplit ----------------------------------------------------------------------- */

/* Copies b into a number of width w+1: a zero byte, b, then zero padding on the right. */
static void split_raw_load(struct wc_bytes b, uint8_t *num, size_t w)
{
    memset(num, 0, w + 1);
    if (b.len)
        memcpy(num + 1, b.data, b.len);
}

static int split_raw_key(const uint8_t *num, size_t w, struct wc_bytes *out, struct ct_err *err)
{
    uint8_t *k = malloc(w);
    if (!k)
        return ct_err_set(err, CT_ENOMEM, "out of memory for a split key");
    memcpy(k, num + 1, w); /* (2): num[0] is zero */
    *out = wc_bytes_of(k, w);
    return CT_OK;
}

static int split_uniform_range(struct wc_bytes first, struct wc_bytes last, unsigned n,
                               struct wc_bytes **out, struct ct_err *err)
{
    static const uint8_t zero8[8] = {0};
    if (first.len == 0)
        first = wc_bytes_of(zero8, 8);
    if (last.len == 0)
        last = wc_bytes_of(split_ff8, 8);
    size_t w = first.len > last.len ? first.len : last.len;
    /* Each extra byte multiplies the range by 256 while it is >= 1; 8 suffice for n < 2^32. */
    size_t wmax = w + 8;
    uint8_t *buf = calloc(5, wmax + 1);
    if (!buf)
        return ct_err_set(err, CT_ENOMEM, "out of memory computing split keys");
    uint8_t *a = buf, *b = a + wmax + 1, *range = b + wmax + 1, *step = range + wmax + 1,
            *key = step + wmax + 1;
    struct wc_bytes *keys = NULL;
    int rc = CT_OK;
    split_raw_load(first, a, w);
    split_raw_load(last, b, w);
    if (split_num_cmp(a, b, w + 1) >= 0) {
        rc = ct_err_set(err, CT_EINVAL, "UniformSplit first row must be below the last row");
        goto done;
    }
    for (;;) {
        split_num_sub(b, a, range, w + 1);
        split_num_add_small(range, 1, w + 1);
        if (!split_num_lt_small(range, w + 1, n))
            break;
        if (w == wmax) {
            rc = ct_err_set(err, CT_EINVAL,
                            "UniformSplit key range is smaller than the %u regions asked for", n);
            goto done;
        }
        w++; /* append one zero byte to both bounds (the buffers are already zeroed) */
    }
    if ((rc = split_alloc_keys(n, &keys, err)) != CT_OK)
        goto done;
    split_num_div_small(range, n, step, w + 1);
    for (unsigned i = 1; i < n; i++) {
        split_num_mul_small(step, i, key, w + 1);
        split_num_add(key, a, key, w + 1);
        if ((rc = split_raw_key(key, w, &keys[i - 1], err)) != CT_OK)
            goto done;
    }
done:
    free(buf);
    if (rc != CT_OK) {
        wc_split_keys_free(keys, keys ? n - 1 : 0);
        return rc;
    }
    *out = keys;
    return CT_OK;
}

/* ---- public ----------------------------------------------------------------------------- */

int wc_split_keys_range(enum wc_split_algo algo, struct wc_bytes first, struct wc_bytes last,
                        unsigned n, struct wc_bytes **out, struct ct_err *err)
{
    if (n < 2)
        return ct_err_set(err, CT_EINVAL, "number of regions must be at least 2 (got %u)", n);
    switch (algo) {
    case WC_SPLIT_HEXSTRING:
        return split_hex_range(first, last, n, out, err);
    case WC_SPLIT_UNIFORM:
        return split_uniform_range(first, last, n, out, err);
    }
    return ct_err_set(err, CT_EINVAL, "unknown split algorithm %d", (int)algo);
}

int wc_split_keys(enum wc_split_algo algo, unsigned n, struct wc_bytes **out, struct ct_err *err)
{
    return wc_split_keys_range(algo, wc_bytes_of(NULL, 0), wc_bytes_of(NULL, 0), n, out, err);
}

static int split_hex_midpoint(struct wc_bytes start, struct wc_bytes end, struct wc_bytes *out,
                              struct ct_err *err)
{
    split_hex_bounds(&start, &end);
    size_t digits = start.len > end.len ? start.len : end.len;
    size_t w = digits / 2 + 2;
    uint8_t *buf = calloc(3, w);
    if (!buf)
        return ct_err_set(err, CT_ENOMEM, "out of memory computing a midpoint");
    uint8_t *a = buf, *b = buf + w, *mid = buf + 2 * w;
    int rc = split_hex_parse(start, a, w, "start", err);
    if (rc == CT_OK)
        rc = split_hex_parse(end, b, w, "end", err);
    if (rc == CT_OK) {
        split_num_add(a, b, mid, w);
        split_num_div_small(mid, 2, mid, w);
        if (split_num_cmp(mid, a, w) <= 0)
            rc = ct_err_set(err, CT_EINVAL, "region is too small to split at its midpoint");
        else
            rc = split_hex_format(mid, w, digits, out, err);
    }
    free(buf);
    return rc;
}

static int split_uniform_midpoint(struct wc_bytes start, struct wc_bytes end, struct wc_bytes *out,
                                  struct ct_err *err)
{
    if (end.len == 0)
        end = wc_bytes_of(split_ff8, 8);
    size_t w = start.len > end.len ? start.len : end.len;
    size_t wmax = w + 2; /* the difference is >= 1, so one extra byte already gives >= 256 */
    uint8_t *buf = calloc(3, wmax + 1);
    if (!buf)
        return ct_err_set(err, CT_ENOMEM, "out of memory computing a midpoint");
    uint8_t *a = buf, *b = a + wmax + 1, *mid = b + wmax + 1;
    int rc = CT_OK;
    split_raw_load(start, a, w);
    split_raw_load(end, b, w);
    if (split_num_cmp(a, b, w + 1) >= 0) {
        rc = ct_err_set(err, CT_EINVAL, "region start must be below its end");
        goto done;
    }
    for (;;) {
        split_num_sub(b, a, mid, w + 1);
        if (!split_num_lt_small(mid, w + 1, 2) || w == wmax)
            break;
        w++;
    }
    split_num_div_small(mid, 2, mid, w + 1);
    split_num_add(mid, a, mid, w + 1);
    rc = split_raw_key(mid, w, out, err);
done:
    free(buf);
    return rc;
}

int wc_split_midpoint(enum wc_split_algo algo, struct wc_bytes start, struct wc_bytes end,
                      struct wc_bytes *out, struct ct_err *err)
{
    switch (algo) {
    case WC_SPLIT_HEXSTRING:
        return split_hex_midpoint(start, end, out, err);
    case WC_SPLIT_UNIFORM:
        return split_uniform_midpoint(start, end, out, err);
    }
    return ct_err_set(err, CT_EINVAL, "unknown split algorithm %d", (int)algo);
}
