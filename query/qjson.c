/* qjson.c - see qjson.h.
 * Invariants: (1) 0 <= len <= cap; (2) once err != CT_OK nothing more reaches the sink.
 * Double formatting: the shortest decimal that reads back to the same double (tried with
 * increasing precision), laid out as java.lang.Double.toString does: plain notation with at
 * least one fractional digit for 1e-3 <= |v| < 1e7, else d.dddE[-]n. */
#include "query/qjson.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct qjson {
    qjson_sink_fn sink;
    void *arg;
    char *buf;
    size_t len, cap;
    int err;
};

struct qjson *qjson_new(qjson_sink_fn sink, void *arg, size_t buf_bytes)
{
    struct qjson *j = calloc(1, sizeof(*j));
    if (!j)
        return NULL;
    j->cap = buf_bytes ? buf_bytes : 16384;
    j->buf = malloc(j->cap);
    if (!j->buf) {
        free(j);
        return NULL;
    }
    j->sink = sink;
    j->arg = arg;
    return j;
}

void qjson_free(struct qjson *j)
{
    if (!j)
        return;
    free(j->buf);
    free(j);
}

int qjson_flush(struct qjson *j)
{
    if (j->err == CT_OK && j->len) {
        j->err = j->sink(j->arg, j->buf, j->len);
    }
    j->len = 0;
    return j->err;
}

void qjson_raw(struct qjson *j, const char *s, size_t n)
{
    if (j->err != CT_OK)
        return;
    while (n) {
        if (j->len == j->cap && qjson_flush(j) != CT_OK)
            return;
        size_t take = j->cap - j->len < n ? j->cap - j->len : n;
        memcpy(j->buf + j->len, s, take);
        j->len += take;
        s += take;
        n -= take;
    }
}

char *qjson_reserve(struct qjson *j, size_t n)
{
    if (j->err != CT_OK || n > j->cap)
        return NULL;
    if (j->cap - j->len < n && qjson_flush(j) != CT_OK)
        return NULL;
    return j->buf + j->len;
}

void qjson_commit(struct qjson *j, size_t used)
{
    j->len += used;
}

void qjson_lit(struct qjson *j, const char *s)
{
    qjson_raw(j, s, strlen(s));
}

void qjson_strn(struct qjson *j, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    qjson_raw(j, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        qjson_raw(j, s + run, i - run);
        run = i + 1;
        char esc[6] = {'\\', 0, 0, 0, 0, 0};
        size_t el = 2;
        switch (c) {
        case '"':
            esc[1] = '"';
            break;
        case '\\':
            esc[1] = '\\';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        case '\b':
            esc[1] = 'b';
            break;
        case '\f':
            esc[1] = 'f';
            break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            el = 6;
        }
        qjson_raw(j, esc, el);
    }
    qjson_raw(j, s + run, n - run);
    qjson_raw(j, "\"", 1);
}

void qjson_str(struct qjson *j, const char *s)
{
    qjson_strn(j, s, strlen(s));
}

/* 10^0 .. 10^19: every power of ten a uint64_t holds. */
static const uint64_t qjson_pow10[20] = {1ULL,
                                         10ULL,
                                         100ULL,
                                         1000ULL,
                                         10000ULL,
                                         100000ULL,
                                         1000000ULL,
                                         10000000ULL,
                                         100000000ULL,
                                         1000000000ULL,
                                         10000000000ULL,
                                         100000000000ULL,
                                         1000000000000ULL,
                                         10000000000000ULL,
                                         100000000000000ULL,
                                         1000000000000000ULL,
                                         10000000000000000ULL,
                                         100000000000000000ULL,
                                         1000000000000000000ULL,
                                         10000000000000000000ULL};

/* The number of decimal digits of v (1 for 0). */
static size_t qjson_ndigits(uint64_t v)
{
    /* floor(log10(v)) is floor(bitlen(v) * log10(2)) (~1233 / 4096) or one more; v | 1 makes 0
     * count as 1 (10^t is even for t >= 1, so it changes no other answer) */
    unsigned t = (unsigned)(64 - __builtin_clzll(v | 1)) * 1233 >> 12;
    return t + ((v | 1) >= qjson_pow10[t]);
}

/* Writes v's digits at out (no NUL), two at a time from the end; returns their number. */
static size_t qjson_u64_digits(uint64_t v, char *out)
{
    static const char pairs[] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    size_t n = qjson_ndigits(v);
    char *p = out + n;
    while (v >= 100) {
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        p -= 2;
        memcpy(p, pairs + 2 * r, 2);
    }
    if (v >= 10) {
        p -= 2;
        memcpy(p, pairs + 2 * v, 2);
    } else {
        *--p = (char)('0' + v);
    }
    return n;
}

size_t qjson_format_i64(int64_t v, char *out)
{
    if (v < 0) {
        out[0] = '-';
        return 1 + qjson_u64_digits(0 - (uint64_t)v, out + 1);
    }
    return qjson_u64_digits((uint64_t)v, out);
}

void qjson_i64(struct qjson *j, int64_t v)
{
    if (j->err == CT_OK && j->cap - j->len >= 21) {
        j->len += qjson_format_i64(v, j->buf + j->len);
        return;
    }
    char b[24];
    qjson_raw(j, b, qjson_format_i64(v, b));
}

/* Writes digits (nd of them, trailing zeros already cut) of a value d.ddd x 10^exp10 with
 * 1e-3 <= |value| < 1e7 in Java's plain layout; returns the length. */
static size_t qjson_plain_layout(bool neg, const char *digits, size_t nd, int exp10, char *out)
{
    size_t o = 0;
    if (neg)
        out[o++] = '-';
    if (exp10 >= 0) {
        for (int i = 0; i <= exp10; i++)
            out[o++] = (size_t)i < nd ? digits[i] : '0';
        out[o++] = '.';
        if ((size_t)exp10 + 1 < nd)
            for (size_t i = (size_t)exp10 + 1; i < nd; i++)
                out[o++] = digits[i];
        else
            out[o++] = '0';
    } else {
        out[o++] = '0';
        out[o++] = '.';
        for (int i = -1; i > exp10; i--)
            out[o++] = '0';
        for (size_t i = 0; i < nd; i++)
            out[o++] = digits[i];
    }
    out[o] = 0;
    return o;
}

/* Writes v < 10^8 as exactly 8 digits (leading zeros) at out. */
static void qjson_digits8(uint32_t v, char *out)
{
    static const char pairs[] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    uint32_t a = v / 10000, b = v % 10000;
    memcpy(out, pairs + 2 * (a / 100), 2);
    memcpy(out + 2, pairs + 2 * (a % 100), 2);
    memcpy(out + 4, pairs + 2 * (b / 100), 2);
    memcpy(out + 6, pairs + 2 * (b % 100), 2);
}

/* qjson_plain_layout() for digits followed by at least 24 readable '0' bytes: copies fixed-size
 * blocks instead of character loops (writes at most 30 bytes of out, NUL included). */
static size_t qjson_plain_layout_padded(bool neg, const char *digits, size_t nd, int exp10,
                                        char *out)
{
    size_t o = neg ? 1 : 0;
    out[0] = '-';
    if (exp10 >= 0) { /* 1 <= integer digits <= 7 */
        size_t ip = (size_t)exp10 + 1;
        memcpy(out + o, digits, 8);
        out[o + ip] = '.';
        memcpy(out + o + ip + 1, digits + ip, 16); /* nd <= 17: at most 16 after the point */
        o += ip + 1 + (nd > ip ? nd - ip : 1);     /* "x.0" when nothing follows */
    } else { /* 0.00ddd: -exp10 - 1 <= 2 zeros after the point */
        size_t z = (size_t)(-exp10 - 1);
        memcpy(out + o, "0.00", 4);
        memcpy(out + o + 2 + z, digits, 24);
        o += 2 + z + nd;
    }
    out[o] = 0;
    return o;
}

typedef unsigned __int128 u128;

/* 10^k for k <= 38. */
static u128 qjson_p10u(int k)
{
    u128 p;
    if (k < 20)
        return qjson_pow10[k];
    p = qjson_pow10[19];
    for (int i = 19; i < k; i++)
        p *= 10;
    return p;
}

/* 1e-3 .. 1e15 (index exp10 + 3) */
static const double qjson_p10d[] = {1e-3, 1e-2, 1e-1, 1e0,  1e1,  1e2,  1e3,  1e4,  1e5, 1e6,
                                    1e7,  1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15};

/* What the general path below prints for 1e-3 <= |v| < 1e15, computed exactly with 128-bit
 * integers instead of printf and strtod: for n = 15, 16, 17 significant digits the correctly
 * rounded (ties to even, as printf) n-digit decimal q x 10^-k of |v| = M x 2^-s, taken at the
 * first n whose decimal reads back as v (|q 2^s - M 10^k| under half a gap of v, scaled by
 * 10^k 2^s; an exact tie reads back iff M is even, as strtod rounds); n = 17 always. Here s is
 * 3..62 and k = n - 1 - exp10 is 0..19, so M 10^k < 2^117 and q 2^s < 2^120. From 1e7 up (sums
 * and rates of byte counters) the layout is the E form, as the general path's. Returns 0 when v
 * is outside that range. */
static size_t qjson_format_exact(double v, char *out)
{
    double a = fabs(v);
    if (!(a >= 1e-3 && a < 1e15))
        return 0;
    uint64_t bits;
    memcpy(&bits, &a, sizeof(bits)); /* a normal double: m = 1.fraction, 53 bits */
    uint64_t m = (bits & ((1ULL << 52) - 1)) | (1ULL << 52);
    int s = 1075 - (int)(bits >> 52); /* a = m 2^-s */
    if (s <= 0 || s > 100)
        return 0;
    /* exp10 with 10^exp10 <= a < 10^(exp10 + 1): powers of ten from 1e-3 to 1e7 are compared
     * as doubles (1e-3 is not exact, but a < 1e-3 was excluded with the same constant) */
    int exp10 = -3;
    while (exp10 < 14 && a >= qjson_p10d[exp10 + 4])
        exp10++;
    for (int n = 15; n <= 17; n++) {
        int k = n - 1 - exp10;
        if (k < 0 || k > 19)
            return 0;
        u128 p10 = qjson_p10u(k);
        u128 am = (u128)m * p10; /* |v| 10^k 2^s */
        u128 q = am >> s, r = am & (((u128)1 << s) - 1), half = (u128)1 << (s - 1);
        if (r > half || (r == half && (q & 1)))
            q++;
        u128 lo = qjson_p10u(n - 1);
        int ex = exp10;
        if (q >= lo * 10) { /* rounded up to 10^n: 1.000e(exp10 + 1) */
            q /= 10;
            ex++;
        }
        if (q < lo)
            return 0; /* exp10 was off: leave it to printf */
        bool reads_back = n == 17;
        if (!reads_back) {
            u128 qs = q << s, diff = qs > am ? qs - am : am - qs;
            /* the gap below a power of two is half the gap above it */
            bool below_pow2 = qs < am && m == (1ULL << 52);
            u128 lhs = diff * (below_pow2 ? 4 : 2);
            reads_back = lhs < p10 || (lhs == p10 && !(m & 1));
        }
        if (!reads_back)
            continue;
        /* q < 10^17 as 17 digits with leading zeros, then '0' padding (so that the layout can
         * copy fixed-size blocks) */
        char d[48];
        memset(d, '0', sizeof(d));
        uint64_t hi = (uint64_t)q / 100000000u;
        qjson_digits8((uint32_t)((uint64_t)q % 100000000u), d + 9);
        qjson_digits8((uint32_t)(hi % 100000000u), d + 1);
        d[0] = (char)('0' + hi / 100000000u);
        size_t nd = qjson_ndigits((uint64_t)q);
        const char *dig = d + 17 - nd;
        while (nd > 1 && dig[nd - 1] == '0')
            nd--;
        if (a < 1e7)
            return qjson_plain_layout_padded(v < 0, dig, nd, ex, out);
        /* d.dddEx (7 <= ex <= 15) */
        size_t o = 0;
        if (v < 0)
            out[o++] = '-';
        out[o++] = dig[0];
        out[o++] = '.';
        if (nd > 1) {
            memcpy(out + o, dig + 1, nd - 1);
            o += nd - 1;
        } else {
            out[o++] = '0';
        }
        out[o++] = 'E';
        if (ex >= 10)
            out[o++] = (char)('0' + ex / 10);
        out[o++] = (char)('0' + ex % 10);
        out[o] = 0;
        return o;
    }
    return 0;
}

/* 10^1 .. 10^6 as doubles (exact) */
static const double qjson_p10s[7] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6};

/* What the general paths print, for 1e-3 <= |v| < 1e7 (not a whole number) whose value reads
 * back from a decimal with at most 6 fractional digits (2-decimal gauges, their averages over
 * one point, most sums of them): q x 10^-k for the first k in 1..6 where the rounded q = |v| 10^k
 * gives q / 10^k == |v| (both exact doubles: q < 2^53, 10^k, so the IEEE division is strtod's
 * correctly rounded reading of the decimal). Why that is the general paths' answer: |v| < 1e7 so
 * q has at most 13 significant digits, and the doubles that read back to v span one gap of v
 * (relative 1.1e-16 .. 2.2e-16), narrower than the spacing of 15-digit decimals (relative
 * >= 1e-15), so q is the only 15-digit decimal that reads back to v; the general paths print the
 * correctly rounded 15-digit decimal of v, the closest one, which then is q too (it reads back:
 * the interval is symmetric about v). A mantissa of 1.0 (v a power of two) has a half-size gap
 * below and is left to the general paths. Returns 0 when no k fits. */
static size_t qjson_format_short(double v, char *out)
{
    double a = fabs(v);
    uint64_t bits;
    memcpy(&bits, &a, sizeof(bits));
    if (!(a >= 1e-3 && a < 1e7) || !(bits & ((1ULL << 52) - 1)))
        return 0;
    for (int k = 1; k <= 6; k++) {
        int64_t q = (int64_t)(a * qjson_p10s[k] + 0.5); /* < 1e13 */
        if ((double)q / qjson_p10s[k] != a)
            continue;
        /* the integer part is a's (a is within half a gap of q / 10^k, which is at least 10^-6
         * from a whole number: a whole q / 10^k would make a whole, printed before this path) */
        int64_t ip = (int64_t)a;
        int64_t frac = q - ip * (int64_t)qjson_pow10[k]; /* 1 .. 10^k - 1 */
        size_t o = 0;
        if (v < 0)
            out[o++] = '-';
        o += qjson_u64_digits((uint64_t)ip, out + o);
        out[o++] = '.';
        /* k digits, leading zeros kept, then the trailing zeros cut (one digit at least) */
        char *f = out + o;
        for (int i = k - 1; i >= 0; i--) {
            f[i] = (char)('0' + frac % 10);
            frac /= 10;
        }
        size_t fd = (size_t)k;
        while (fd > 1 && f[fd - 1] == '0')
            fd--;
        o += fd;
        out[o] = 0;
        return o;
    }
    return 0;
}

size_t qjson_format_double(double v, char *out)
{
    if (isnan(v))
        return (size_t)sprintf(out, "NaN");
    if (isinf(v))
        return (size_t)sprintf(out, v > 0 ? "Infinity" : "-Infinity");
    if (v == 0)
        return (size_t)sprintf(out, signbit(v) ? "-0.0" : "0.0");
    char e[40];
    double a = fabs(v);
    if (a >= 1 && a < 1e7 && v == (double)(int64_t)v) { /* whole numbers: "40.0" */
        size_t n = qjson_format_i64((int64_t)v, out);
        memcpy(out + n, ".0", 3);
        return n + 2;
    }
    size_t sn = qjson_format_short(v, out);
    if (sn)
        return sn;
    sn = qjson_format_exact(v, out);
    if (sn)
        return sn;
    /* 15 significant digits read back exactly for almost every double (and then, with the
     * trailing zeros cut, are the shortest form); else 16, else 17 */
    int prec;
    for (prec = 14; prec < 17; prec++) {
        snprintf(e, sizeof(e), "%.*e", prec, v);
        if (prec == 16 || strtod(e, NULL) == v)
            break;
    }
    /* e = [-]d[.ddd]e[+-]xx : collect the digits and the exponent */
    char digits[24] = {0};
    size_t nd = 0;
    const char *p = e;
    bool neg = *p == '-';
    if (neg)
        p++;
    for (; *p && *p != 'e'; p++)
        if (*p != '.')
            digits[nd++] = *p;
    int exp10 = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    if (a >= 1e-3 && a < 1e7)
        return qjson_plain_layout(neg, digits, nd, exp10, out);
    size_t o = 0;
    if (neg)
        out[o++] = '-';
    out[o++] = digits[0];
    out[o++] = '.';
    if (nd > 1)
        for (size_t i = 1; i < nd; i++)
            out[o++] = digits[i];
    else
        out[o++] = '0';
    o += (size_t)sprintf(out + o, "E%d", exp10);
    out[o] = 0;
    return o;
}
