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
    uint64_t sent;
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
        j->sent += j->len;
    }
    j->len = 0;
    return j->err;
}

uint64_t qjson_bytes(const struct qjson *j)
{
    return j->sent + j->len;
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

/* Decimal digits of v into out (room 20), returns the length. */
static size_t qjson_u64_digits(uint64_t v, char *out)
{
    char t[20];
    size_t n = 0;
    do {
        t[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = t[n - 1 - i];
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

static const double qjson_p10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,
                                   1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17};

/* Java's plain layout for 1e-3 <= |v| < 1e7 when v is exactly the double nearest to some
 * decimal m / 10^k with at most 15 significant digits (m < 10^15): then that decimal is the
 * unique 15-digit correct rounding of v (a double's half-ulp is below half a unit of the 15th
 * digit), i.e. what the general path below finds with "%.14e", so both give the same text. The
 * smallest such k is the form without trailing zeros. m / 10^k is computed exactly rounded
 * (both are exact doubles), like strtod. Returns the length, or 0 to use the general path. */
static size_t qjson_format_short(double v, char *out)
{
    double a = fabs(v);
    if (!(a >= 1e-3 && a < 1e7))
        return 0;
    for (int k = 0; k < 18; k++) {
        double s = a * qjson_p10[k];
        if (s >= 1e15)
            return 0;
        double m = nearbyint(s);
        if (m / qjson_p10[k] != a)
            continue;
        uint64_t mi = (uint64_t)m, pk = 1;
        for (int i = 0; i < k; i++)
            pk *= 10;
        size_t o = 0;
        if (v < 0)
            out[o++] = '-';
        o += qjson_u64_digits(mi / pk, out + o);
        out[o++] = '.';
        if (k == 0) {
            out[o++] = '0';
        } else {
            uint64_t f = mi % pk; /* k digits, zero-padded */
            for (int i = k - 1; i >= 0; i--) {
                out[o + (size_t)i] = (char)('0' + f % 10);
                f /= 10;
            }
            o += (size_t)k;
            while (out[o - 1] == '0' && out[o - 2] != '.') /* (k is minimal: defensive) */
                o--;
        }
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
    size_t sn = qjson_format_short(v, out);
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
    size_t o = 0;
    if (neg)
        out[o++] = '-';
    double a = fabs(v);
    if (a >= 1e-3 && a < 1e7) {
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
    } else {
        out[o++] = digits[0];
        out[o++] = '.';
        if (nd > 1)
            for (size_t i = 1; i < nd; i++)
                out[o++] = digits[i];
        else
            out[o++] = '0';
        o += (size_t)sprintf(out + o, "E%d", exp10);
    }
    out[o] = 0;
    return o;
}

void qjson_double(struct qjson *j, double v)
{
    char b[40];
    size_t n = qjson_format_double(v, b);
    if (isnan(v) || isinf(v)) {
        qjson_raw(j, "\"", 1);
        qjson_raw(j, b, n);
        qjson_raw(j, "\"", 1);
    } else {
        qjson_raw(j, b, n);
    }
}
