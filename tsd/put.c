/* put.c - OpenTSDB 2.4's datapoint parsing and validation (see put.h).
 *
 * Invariants: (1) nothing allocates; parsed strings point into the caller's text; (2) checks run
 * in the order of PutDataPointRpc.importDataPoint -> TSDB.addPoint -> checkTimestampAndTags ->
 * IncomingDataPoints.checkMetricAndTags, so the first error reported is OpenTSDB's first error;
 * (3) error texts are OpenTSDB's exception messages behind the "put: illegal argument: " /
 * "put: invalid value: " prefixes of the telnet reply; (4) a put_memo keeps only what is a
 * function of its text alone (a timestamp's value, a tags text's split) and never a text the
 * parser refused, so a line parsed with it gets what a fresh parse gives.
 *
 * Character.isLetter for non-ASCII names is approximated by put_letter(): any well-formed UTF-8
 * code point outside the common punctuation, symbol, mark and control ranges (documented in
 * docs/tsd.md). */
#include "tsd/put.h"
#include "storage/coding.h"

#include "storage/ct_err.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PUT_SECOND_MASK 0xFFFFFFFF00000000ULL
#define PUT_MAX_MS_TS   9999999999999LL

static void put_msg(char *msg, size_t size, const char *fmt, ...) CT_PRINTF(3, 4);
static void put_msg(char *msg, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, size, fmt, ap);
    va_end(ap);
    if (n < 0 && size > 0)
        msg[0] = '\0';
}

/* The value of 8 ASCII digits, x's bytes (the first digit, the most significant, in the lowest
 * byte), in *out, or false if one of them is not a digit: a check of all eight bytes at once,
 * then three multiply-add steps that combine neighbouring digits, pairs, then quadruples. Each
 * lane stays within its width: 9 * 10 + 9, 99 * 100 + 99 and 9999 * 10000 + 9999. */
static inline bool put_digits8(uint64_t x, uint64_t *out)
{
    /* every byte 0x30..0x39: its high nibble is 3, and adding 6 leaves it 3 (no carry crosses
     * a byte that passes the first test) */
    if (((x & 0xF0F0F0F0F0F0F0F0ULL) |
         (((x + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) >> 4)) != 0x3333333333333333ULL)
        return false;
    x -= 0x3030303030303030ULL;
    x = (x * 10 + (x >> 8)) & 0x00FF00FF00FF00FFULL;
    x = (x * 100 + (x >> 16)) & 0x0000FFFF0000FFFFULL;
    x = (x * 10000 + (x >> 32)) & 0xFFFFFFFFULL;
    *out = x;
    return true;
}

/* The usual shape of a timestamp or integer value: an optional sign and 1..16 decimal digits
 * (below 2^63: no overflow), nothing else; false for anything else, which the general parser
 * (put_parse_long) takes. The same value as put_parse_long where this succeeds. */
static inline bool put_long_fast(const char *s, size_t n, int64_t *out)
{
    size_t i = n > 1 && (s[0] == '-' || s[0] == '+');
    size_t nd = n - i;
    uint64_t v = 0;
    if (nd >= 8 && nd <= 16) {
        /* the last 8 digits, then the r before them: the 8 bytes from the first digit keep
         * those r, moved to the top, behind 8 - r '0's */
        uint64_t lo, x = coding_get_le64((const uint8_t *)s + i);
        size_t r = nd - 8;
        if (!put_digits8(coding_get_le64((const uint8_t *)s + n - 8), &lo))
            return false;
        if (r > 0 && r < 8)
            x = x << (8 * (8 - r)) | 0x3030303030303030ULL >> (8 * r);
        if (r > 0 && !put_digits8(x, &v))
            return false;
        v = v * 100000000 + lo;
    } else if (nd >= 1 && nd < 8) {
        for (; i < n; i++) {
            unsigned d = (unsigned)(unsigned char)s[i] - '0';
            if (d > 9)
                return false;
            v = v * 10 + d;
        }
    } else {
        return false;
    }
    *out = s[0] == '-' ? -(int64_t)v : (int64_t)v;
    return true;
}

bool put_parse_long(const char *s, size_t n, int64_t *out, char *msg, size_t msg_size)
{
    if (put_long_fast(s, n, out))
        return true;
    if (n == 0) {
        put_msg(msg, msg_size, "Empty string");
        return false;
    }
    size_t i = 0;
    bool neg = false;
    if (s[0] == '+' || s[0] == '-') {
        if (n == 1) {
            put_msg(msg, msg_size, "Just a sign, no value: %.*s", (int)n, s);
            return false;
        }
        if (n > 20) {
            put_msg(msg, msg_size, "Value too long: %.*s", (int)n, s);
            return false;
        }
        neg = s[0] == '-';
        i = 1;
    } else if (n > 19) {
        put_msg(msg, msg_size, "Value too long: %.*s", (int)n, s);
        return false;
    }
    /* Accumulate negatively, as Java does, so INT64_MIN parses. Up to 18 digits cannot
     * overflow: no check per digit (timestamps have 10 or 13). */
    int64_t v = 0;
    if (n - i <= 18) {
        for (; i < n; i++) {
            unsigned d = (unsigned)(unsigned char)s[i] - '0';
            if (d > 9) {
                put_msg(msg, msg_size, "Invalid character '%c' in %.*s", s[i], (int)n, s);
                return false;
            }
            v = v * 10 - (int64_t)d;
        }
    }
    for (; i < n; i++) {
        char c = s[i];
        if (c < '0' || c > '9') {
            put_msg(msg, msg_size, "Invalid character '%c' in %.*s", c, (int)n, s);
            return false;
        }
        int d = c - '0';
        if (v < (INT64_MIN + d) / 10) {
            put_msg(msg, msg_size, "Overflow in %.*s", (int)n, s);
            return false;
        }
        v = v * 10 - d;
    }
    if (!neg) {
        if (v == INT64_MIN) {
            put_msg(msg, msg_size, "Overflow in %.*s", (int)n, s);
            return false;
        }
        v = -v;
    }
    *out = v;
    return true;
}

/* Approximates Java's Character.isLetter for code points >= 0x80. */
static bool put_letter(uint32_t cp)
{
    if (cp < 0xC0)
        return cp == 0xAA || cp == 0xB5 || cp == 0xBA;
    if (cp == 0xD7 || cp == 0xF7)
        return false;
    if (cp >= 0x2B9 && cp <= 0x36F) /* modifier letters are letters; combining marks not */
        return cp <= 0x2C1 || (cp >= 0x2C6 && cp <= 0x2D1) || (cp >= 0x2E0 && cp <= 0x2E4) ||
               cp == 0x2EC || cp == 0x2EE;
    if (cp >= 0x2000 && cp <= 0x2BFF) /* punctuation, symbols, arrows, math, boxes */
        return false;
    if (cp >= 0x3000 && cp <= 0x303F) /* CJK punctuation */
        return cp == 0x3005 || cp == 0x3006;
    if (cp >= 0xE000 && cp <= 0xF8FF) /* private use */
        return false;
    if (cp >= 0xFE00 && cp <= 0xFE6F) /* variation selectors, small forms */
        return false;
    if (cp >= 0xFF00 && cp <= 0xFF20) /* fullwidth punctuation and digits */
        return false;
    if (cp >= 0x1F000)                         /* emoji, symbols */
        return cp >= 0x20000 && cp <= 0x3134F; /* CJK extension ideographs */
    return true;
}

/* The bytes' classes, one lookup per byte: PUT_TC_PLAIN for the ASCII characters every name may
 * use (letters, digits, '-', '_', '.', '/'), PUT_TC_EQ for '=', PUT_TC_SPACE for ' ', 0 for the
 * rest (put_parse_line's tag scan reads all four; put_name_char() only the first). */
enum { PUT_TC_PLAIN = 1, PUT_TC_EQ = 2, PUT_TC_SPACE = 3 };
static const unsigned char put_tag_class[256] = {
    ['-'] = 1, ['.'] = 1, ['/'] = 1, ['_'] = 1, ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1,
    ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1, ['A'] = 1, ['B'] = 1,
    ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1,
    ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1,
    ['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1,
    ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1,
    ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1,
    ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1,
    ['y'] = 1, ['z'] = 1, ['='] = 2, [' '] = 3,
};

/* Whether c is one of the ASCII characters every name may use. */
static inline bool put_name_char(unsigned char c)
{
    return put_tag_class[c] == PUT_TC_PLAIN;
}

bool put_name_valid(const char *s, size_t len, const char *special, size_t *bad_at)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        unsigned char c = u[i];
        if (put_name_char(c)) {
            i++;
            continue;
        }
        if (c < 0x80) {
            if (special && c != '\0' && strchr(special, c)) {
                i++;
                continue;
            }
            *bad_at = i;
            return false;
        }
        uint32_t cp;
        size_t l = coding_utf8_decode(u + i, len - i, &cp);
        if (l == 0) {
            *bad_at = i;
            return false;
        }
        if (!put_letter(cp)) {
            /* A listed multi-byte special character is accepted too. */
            bool listed = false;
            if (special) {
                for (const char *q = special; (q = strchr(q, (char)c)) != NULL; q++) {
                    if (!strncmp(q, s + i, l)) {
                        listed = true;
                        break;
                    }
                }
            }
            if (!listed) {
                *bad_at = i;
                return false;
            }
        }
        i += l;
    }
    return true;
}

/* Appends "{k=v, k2=v2}" (Java's Map.toString shape) to buf at *pos, truncating. */
static void put_tags_text(const struct put_point *p, char *buf, size_t size, size_t *pos)
{
    size_t n = *pos;
#define PUT_APPEND(...)                                                                            \
    do {                                                                                           \
        if (n < size) {                                                                            \
            int w_ = snprintf(buf + n, size - n, __VA_ARGS__);                                     \
            if (w_ > 0)                                                                            \
                n += (size_t)w_;                                                                   \
        }                                                                                          \
    } while (0)
    PUT_APPEND("{");
    for (size_t i = 0; i < p->ntags; i++)
        PUT_APPEND("%s%.*s=%.*s", i ? ", " : "", (int)p->tagk[i].len, p->tagk[i].p,
                   (int)p->tagv[i].len, p->tagv[i].p);
    PUT_APPEND("}");
#undef PUT_APPEND
    *pos = n < size ? n : size - 1;
}

/* The common case of a decimal value, [+-]digits[.digits] with at most 15 significant digits
 * and 22 after the point: the digits as an integer m < 2^53 and 10^frac are both exact doubles,
 * so m / 10^frac, one correctly rounded IEEE division, is exactly what strtod (and Java) give
 * (Clinger's fast path). Anything else returns false for the general parser. */
static bool put_parse_decimal_fast(const char *s, size_t n, double *out)
{
    static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    size_t i = 0;
    bool neg = false, dot = false, any = false;
    if (n > 0 && (s[0] == '-' || s[0] == '+')) {
        neg = s[0] == '-';
        i = 1;
    }
    uint64_t m = 0;
    int sig = 0, frac = 0;
    for (; i < n; i++) {
        char c = s[i];
        if (c >= '0' && c <= '9') {
            any = true;
            frac += dot;
            if (sig == 0 && c == '0')
                continue; /* a leading zero is not significant */
            if (++sig > 15)
                return false;
            m = m * 10 + (uint64_t)(c - '0');
        } else if (c == '.' && !dot) {
            dot = true;
        } else {
            return false;
        }
    }
    if (!any || frac > 22)
        return false;
    double d = (double)m / pow10[frac];
    *out = neg ? -d : d;
    return true;
}

/* Java's Double.parseDouble on the value text; false with the NumberFormatException message. */
static bool put_parse_double(const char *s, size_t n, double *out, char *msg, size_t msg_size)
{
    if (put_parse_decimal_fast(s, n, out))
        return true;
    char tmp[1100];
    size_t b = 0, e = n;
    while (b < e && (unsigned char)s[b] <= ' ')
        b++;
    while (e > b && (unsigned char)s[e - 1] <= ' ')
        e--;
    if (b == e) {
        put_msg(msg, msg_size, "empty String");
        return false;
    }
    if (e - b >= sizeof(tmp))
        goto bad;
    memcpy(tmp, s + b, e - b);
    tmp[e - b] = '\0';
    size_t m = e - b;
    /* Java accepts a trailing type suffix; strtod accepts inf/nan words Java spells
     * differently (and those never reach here without '.', 'e' or 'E' anyway). */
    if (m > 1 && strchr("fFdD", tmp[m - 1]) && !(tmp[0] == '0' && (tmp[1] == 'x' || tmp[1] == 'X')))
        tmp[--m] = '\0';
    for (size_t i = 0; i < m; i++)
        if (strchr("nNiI", tmp[i]))
            goto bad;
    char *end;
    double d = strtod(tmp, &end);
    if (end == tmp || *end != '\0')
        goto bad;
    *out = d;
    return true;
bad:
    put_msg(msg, msg_size, "For input string: \"%.*s\"", (int)(n > 900 ? 900 : n), s);
    return false;
}

/* Java's Float.toString / Double.toString for the only values that reach the NaN message. */
static const char *put_nonfinite_text(double d)
{
    if (isnan(d))
        return "NaN";
    return d > 0 ? "Infinity" : "-Infinity";
}

/* The "[b, b, ...]/flags" text of the stored value, as TSDB.checkTimestampAndTags prints it. */
static void put_value_bytes_text(const struct put_value *v, char *buf, size_t size)
{
    uint8_t b[8];
    size_t len;
    int flags;
    if (v->kind == PUT_INT) {
        int64_t x = v->i;
        len = (x >= INT8_MIN && x <= INT8_MAX)     ? 1
              : (x >= INT16_MIN && x <= INT16_MAX) ? 2
              : (x >= INT32_MIN && x <= INT32_MAX) ? 4
                                                   : 8;
        for (size_t i = 0; i < len; i++)
            b[i] = (uint8_t)((uint64_t)x >> (8 * (len - 1 - i)));
        flags = (int)len - 1;
    } else if (v->kind == PUT_FLOAT) {
        float f = (float)v->d;
        uint32_t u;
        memcpy(&u, &f, 4);
        len = 4;
        for (size_t i = 0; i < 4; i++)
            b[i] = (uint8_t)(u >> (8 * (3 - i)));
        flags = 0x8 | 3;
    } else {
        uint64_t u;
        memcpy(&u, &v->d, 8);
        len = 8;
        for (size_t i = 0; i < 8; i++)
            b[i] = (uint8_t)(u >> (8 * (7 - i)));
        flags = 0x8 | 7;
    }
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < len && n < size; i++) {
        int w = snprintf(buf + n, size - n, "%s%d", i ? ", " : "[", (int)(int8_t)b[i]);
        if (w > 0)
            n += (size_t)w;
    }
    if (n < size)
        snprintf(buf + n, size - n, "]/%d", flags);
}

/* The NaN/Infinity refusal of a double value (checkTimestampAndTags' first check); ts as given. */
static enum put_status put_check_finite(const struct put_point *p, double d, int64_t ts,
                                        char *msg, size_t msg_size)
{
    if (isfinite(d))
        return PUT_OK;
    put_msg(msg, msg_size,
            "illegal argument: value is NaN or Infinite: %s for metric=%.*s timestamp=%lld",
            put_nonfinite_text(d), (int)p->metric.len, p->metric.p, (long long)ts);
    return PUT_EARG;
}

/* The timestamp range (checkTimestampAndTags); ts as given (seconds or ms), p->value typed. */
static enum put_status put_check_ts(const struct put_point *p, int64_t ts, char *msg,
                                    size_t msg_size)
{
    if (!(ts < 0 || (((uint64_t)ts & PUT_SECOND_MASK) != 0 && ts > PUT_MAX_MS_TS)))
        return PUT_OK;
    char vb[128];
    put_value_bytes_text(&p->value, vb, sizeof(vb));
    size_t n = 0;
    int w = snprintf(msg, msg_size,
                     "illegal argument: %s timestamp=%lld when trying to add value=%s to "
                     "metric=%.*s, tags=",
                     ts < 0 ? "negative " : "bad", (long long)ts, vb, (int)p->metric.len,
                     p->metric.p);
    if (w > 0)
        n = (size_t)w < msg_size ? (size_t)w : msg_size - 1;
    put_tags_text(p, msg, msg_size, &n);
    return PUT_EARG;
}

/* What a caller knows of a point's names before the name rules run: nothing; that every byte
 * of the metric and of every tag name and value is a put_name_char (some may be empty); or
 * that, and none is empty (the telnet split's names: the rules would pass them all). */
enum put_names_known {
    PUT_NAMES_UNKNOWN = 0,
    PUT_NAMES_PLAIN = 1,
    PUT_NAMES_VALID = 2,
};

static enum put_status put_check_names_walk(const struct put_point *p,
                                            const struct put_rules *rules, int max_tags, char *msg,
                                            size_t msg_size);

/* Tag count and names (checkMetricAndTags): the usual outcome here, the rest (every error, and
 * names the rules must walk) in put_check_names_walk. */
static inline enum put_status put_check_names_of(const struct put_point *p,
                                                 const struct put_rules *rules,
                                                 enum put_names_known known, char *msg,
                                                 size_t msg_size)
{
    int max_tags = rules->max_tags > 0 ? rules->max_tags : 8;
    if (p->ntags == 0 || p->ntags > (size_t)max_tags)
        return put_check_names_walk(p, rules, max_tags, msg, msg_size);
    if (known == PUT_NAMES_VALID)
        return PUT_OK;
    if (known == PUT_NAMES_PLAIN && p->metric.len > 0) {
        size_t i = 0;
        while (i < p->ntags && p->tagk[i].len > 0 && p->tagv[i].len > 0)
            i++;
        if (i == p->ntags)
            return PUT_OK;
        /* an empty name: its message comes from the walk */
    }
    return put_check_names_walk(p, rules, max_tags, msg, msg_size);
}

/* The tag count's errors, then the name rules on every name in OpenTSDB's order (out of line:
 * its frame holds a list of every name). */
static __attribute__((noinline)) enum put_status put_check_names_walk(const struct put_point *p,
                                                                      const struct put_rules *rules,
                                                                      int max_tags, char *msg,
                                                                      size_t msg_size)
{
    if (p->ntags == 0 || p->ntags > (size_t)max_tags) {
        size_t n = 0;
        int w;
        if (p->ntags == 0)
            w = snprintf(msg, msg_size,
                         "illegal argument: Need at least one tag (metric=%.*s, tags=",
                         (int)p->metric.len, p->metric.p);
        else
            w = snprintf(msg, msg_size,
                         "illegal argument: Too many tags: %zu maximum allowed: %d, tags: ",
                         p->ntags, max_tags);
        if (w > 0)
            n = (size_t)w < msg_size ? (size_t)w : msg_size - 1;
        put_tags_text(p, msg, msg_size, &n);
        if (p->ntags == 0 && n + 1 < msg_size) {
            msg[n++] = ')';
            msg[n] = '\0';
        }
        return PUT_EARG;
    }
    const char *sc = rules->special_chars;
    size_t bad;
    struct {
        struct put_str s;
        const char *what;
        struct put_str other;
    } names[1 + 2 * PUT_MAX_TAGS];
    size_t nn = 0;
    names[nn].s = p->metric;
    names[nn].what = "metric name";
    names[nn++].other.len = 0;
    for (size_t i = 0; i < p->ntags; i++) {
        names[nn].s = p->tagk[i];
        names[nn].what = "tag name with value [";
        names[nn++].other = p->tagv[i];
        names[nn].s = p->tagv[i];
        names[nn].what = "tag value with key [";
        names[nn++].other = p->tagk[i];
    }
    for (size_t i = 0; i < nn; i++) {
        const char *what = names[i].what;
        int olen = (int)names[i].other.len;
        const char *close = i == 0 ? "" : "]";
        if (names[i].s.len == 0) {
            put_msg(msg, msg_size, "illegal argument: Invalid %s%.*s%s: empty string", what, olen,
                    names[i].other.p, close);
            return PUT_EARG;
        }
        if (!put_name_valid(names[i].s.p, names[i].s.len, sc, &bad)) {
            uint32_t cp;
            size_t cl = coding_utf8_decode((const unsigned char *)names[i].s.p + bad,
                                           names[i].s.len - bad, &cp);
            if (cl == 0)
                cl = 1;
            put_msg(msg, msg_size,
                    "illegal argument: Invalid %s%.*s%s (\"%.*s\"): illegal character: %.*s", what,
                    olen, names[i].other.p, close, (int)names[i].s.len, names[i].s.p, (int)cl,
                    names[i].s.p + bad);
            return PUT_EARG;
        }
    }
    return PUT_OK;
}

/* Stores the timestamp as milliseconds, with the flag saying it was given so. */
static void put_set_ts(struct put_point *p, int64_t ts)
{
    p->ms = ((uint64_t)ts & PUT_SECOND_MASK) != 0;
    p->ts_ms = p->ms ? ts : ts * 1000;
}

/* put_check_point with what the caller knows of the names. */
static enum put_status put_check(struct put_point *p, struct put_str value,
                                 const struct put_rules *rules, enum put_names_known known,
                                 char *msg, size_t msg_size)
{
    char num[256];
    int64_t ts = p->ts_ms; /* as given: seconds or ms; converted below */
    /* Value typing (Tags.looksLikeInteger / fitsInFloat). The usual integer, digits alone,
     * has no '.', 'e' or 'E': parsed at once. */
    bool integer = true, parsed = put_long_fast(value.p, value.len, &p->value.i);
    for (size_t i = 0; !parsed && i < value.len; i++) {
        char c = value.p[i];
        if (c == '.' || c == 'e' || c == 'E') {
            integer = false;
            break;
        }
    }
    if (integer) {
        if (!parsed && !put_parse_long(value.p, value.len, &p->value.i, num, sizeof(num))) {
            put_msg(msg, msg_size, "invalid value: %s", num);
            return PUT_ENUMBER;
        }
        p->value.kind = PUT_INT;
    } else {
        double d;
        if (!put_parse_double(value.p, value.len, &d, num, sizeof(num))) {
            put_msg(msg, msg_size, "invalid value: %s", num);
            return PUT_ENUMBER;
        }
        p->value.d = d;
        p->value.kind = ((double)(float)d == d || isnan(d)) ? PUT_FLOAT : PUT_DOUBLE;
        if (put_check_finite(p, d, ts, msg, msg_size) != PUT_OK)
            return PUT_EARG;
    }
    if (put_check_ts(p, ts, msg, msg_size) != PUT_OK ||
        put_check_names_of(p, rules, known, msg, msg_size) != PUT_OK)
        return PUT_EARG;
    put_set_ts(p, ts);
    return PUT_OK;
}

/* The high bit of each byte of x (8 bytes of a name) that is not a put_name_char, the others 0:
 * the same set as put_tag_class' PUT_TC_PLAIN (test_put checks every byte value in every
 * position), tested on 8 bytes at once. For a byte b below 0x80, b + (0x80 - lo) has its high
 * bit set iff b >= lo, and b + (0x7F - hi) iff b > hi (no sum carries into the next byte); the
 * plain bytes are '-' .. '9' (0x2D-0x39: "-./" and the digits), '_', and the letters, which
 * b | 0x20 maps to 'a' .. 'z' (and nothing else does). */
static inline uint64_t put_plain8_bad(uint64_t x)
{
    const uint64_t one = 0x0101010101010101ULL, high = one * 0x80;
#define PUT_IN_RANGE(v, lo, hi) (((v) + one * (0x80 - (lo))) & ~((v) + one * (0x7F - (hi))))
    uint64_t y = x & ~high;
    uint64_t in = PUT_IN_RANGE(y, 0x2D, 0x39) | PUT_IN_RANGE(y, 0x5F, 0x5F) |
                  PUT_IN_RANGE(y | one * 0x20, 0x61, 0x7A);
#undef PUT_IN_RANGE
    return (~in | x) & high;
}

bool put_str_plain(struct put_str s)
{
    const uint8_t *u = (const uint8_t *)s.p;
    if (s.len < 8) {
        for (size_t i = 0; i < s.len; i++)
            if (!put_name_char(u[i]))
                return false;
        return true;
    }
    /* 8 bytes at a time; the last 8 (overlapping the previous word) end it */
    uint64_t bad = 0;
    for (size_t i = 0; i + 8 < s.len; i += 8)
        bad |= put_plain8_bad(coding_get_le64(u + i));
    return (bad | put_plain8_bad(coding_get_le64(u + s.len - 8))) == 0;
}

/* True if the metric and every tag name and value use only the characters every name may use. */
static bool put_names_plain(const struct put_point *p)
{
    bool plain = p->ntags <= PUT_MAX_TAGS && put_str_plain(p->metric);
    for (size_t t = 0; plain && t < p->ntags; t++)
        plain = put_str_plain(p->tagk[t]) && put_str_plain(p->tagv[t]);
    return plain;
}

enum put_status put_check_point(struct put_point *p, struct put_str value,
                                const struct put_rules *rules, char *msg, size_t msg_size)
{
    /* names made only of the characters every name may use need no rule walk (the telnet
     * parser finds this while splitting; a JSON body's names are checked here, by
     * put_str_plain) */
    return put_check(p, value, rules, put_names_plain(p) ? PUT_NAMES_PLAIN : PUT_NAMES_UNKNOWN, msg,
                     msg_size);
}

enum put_status put_check_point_names(struct put_point *p, struct put_str value,
                                      const struct put_rules *rules, bool names_plain, char *msg,
                                      size_t msg_size)
{
    return put_check(p, value, rules, names_plain ? PUT_NAMES_PLAIN : PUT_NAMES_UNKNOWN, msg,
                     msg_size);
}

void put_check_names(const struct put_point *p, const struct put_rules *rules,
                     struct put_names *out)
{
    out->msg[0] = '\0';
    out->status =
        put_check_names_of(p, rules, put_names_plain(p) ? PUT_NAMES_PLAIN : PUT_NAMES_UNKNOWN,
                           out->msg, sizeof(out->msg));
}

enum put_status put_check_typed(struct put_point *p, struct put_value v,
                                const struct put_names *names, char *msg, size_t msg_size)
{
    int64_t ts = p->ts_ms; /* as given: seconds or ms; converted below */
    p->value = v;
    if (v.kind != PUT_INT) {
        if (put_check_finite(p, v.d, ts, msg, msg_size) != PUT_OK)
            return PUT_EARG;
    }
    if (put_check_ts(p, ts, msg, msg_size) != PUT_OK)
        return PUT_EARG;
    if (names->status != PUT_OK) {
        put_msg(msg, msg_size, "%s", names->msg);
        return names->status;
    }
    put_set_ts(p, ts);
    return PUT_OK;
}

/* The tags (Tags.parse) of the text [p, end): each non-empty space-separated token must split on
 * '=' into exactly two non-empty parts; an identical repeat is ignored, a conflicting one is an
 * error. Sets out's tags and *plain (every byte of the names and values a put_name_char); on
 * an error writes the reply ("put: illegal argument: ...") into msg. A function of the text
 * alone (and of rules only for the error past PUT_MAX_TAGS), which put_memo relies on. */
static enum put_status put_split_tags(const char *p, const char *end, const struct put_rules *rules,
                                      struct put_point *out, bool *plain_out, char *msg,
                                      size_t msg_size)
{
    out->ntags = 0;
    bool plain = true;
    for (;;) {
        /* one pass over the token: its end, its first '=', whether there is another, and
         * whether every other byte is a plain name character */
        const char *te = p, *eq = NULL;
        bool two_eq = false;
        for (; te < end; te++) {
            unsigned char k = put_tag_class[(unsigned char)*te];
            if (k == PUT_TC_PLAIN)
                continue;
            if (k == PUT_TC_SPACE)
                break;
            if (k == PUT_TC_EQ) {
                two_eq = eq != NULL;
                eq = eq ? eq : te;
            } else {
                plain = false;
            }
        }
        const char *sp = te < end ? te : NULL;
        size_t tl = (size_t)(te - p);
        if (tl > 0) {
            if (!eq || eq == p || eq == te - 1 || two_eq) {
                put_msg(msg, msg_size, "put: illegal argument: invalid tag: %.*s", (int)tl, p);
                return PUT_EARG;
            }
            struct put_str k = {p, (size_t)(eq - p)}, v = {eq + 1, (size_t)(te - eq - 1)};
            bool dup = false;
            for (size_t i = 0; i < out->ntags; i++) {
                /* k.len > 0 here: the first bytes tell most keys apart without a call */
                if (out->tagk[i].len == k.len && out->tagk[i].p[0] == k.p[0] &&
                    !memcmp(out->tagk[i].p, k.p, k.len)) {
                    if (out->tagv[i].len == v.len && !memcmp(out->tagv[i].p, v.p, v.len)) {
                        dup = true;
                        break;
                    }
                    size_t n = 0;
                    int w =
                        snprintf(msg, msg_size,
                                 "put: illegal argument: duplicate tag: %.*s, tags=", (int)tl, p);
                    if (w > 0)
                        n = (size_t)w < msg_size ? (size_t)w : msg_size - 1;
                    put_tags_text(out, msg, msg_size, &n);
                    return PUT_EARG;
                }
            }
            if (!dup) {
                if (out->ntags == PUT_MAX_TAGS) {
                    put_msg(
                        msg, msg_size,
                        "put: illegal argument: Too many tags: more than %d maximum allowed: %d",
                        PUT_MAX_TAGS, rules->max_tags);
                    return PUT_EARG;
                }
                out->tagk[out->ntags] = k;
                out->tagv[out->ntags] = v;
                out->ntags++;
            }
        }
        if (!sp)
            break;
        p = sp + 1;
    }
    *plain_out = plain;
    return PUT_OK;
}

/* The series key (put.h, put_point_key_write): the metric and its NUL ... */
static char *put_metric_key_write(char *w, struct put_str metric)
{
    coding_copy_short(w, metric.p, metric.len);
    w[metric.len] = '\0';
    return w + metric.len + 1;
}

/* ... then each tag key and value of p, each followed by a NUL; returns the end. */
static char *put_tags_key_write(char *w, const struct put_point *p)
{
    for (size_t i = 0; i < p->ntags; i++) {
        coding_copy_short(w, p->tagk[i].p, p->tagk[i].len);
        w[p->tagk[i].len] = '\0';
        w += p->tagk[i].len + 1;
        coding_copy_short(w, p->tagv[i].p, p->tagv[i].len);
        w[p->tagv[i].len] = '\0';
        w += p->tagv[i].len + 1;
    }
    return w;
}

/* The timestamp token's value (dots removed, then the strict long parse; digits alone have no
 * dot), or false with the NumberFormatException message in num. */
static bool put_parse_ts(struct put_str t, int64_t *ts, char *num, size_t num_size)
{
    if (put_long_fast(t.p, t.len, ts))
        return true;
    if (!memchr(t.p, '.', t.len))
        return put_parse_long(t.p, t.len, ts, num, num_size);
    char tmp[64];
    size_t n = 0;
    for (size_t i = 0; i < t.len; i++) {
        if (t.p[i] == '.')
            continue;
        if (n == sizeof(tmp)) {
            put_msg(num, num_size, "Value too long: %.*s", (int)t.len, t.p);
            return false;
        }
        tmp[n++] = t.p[i];
    }
    return put_parse_long(tmp, n, ts, num, num_size);
}

/* Whether the timestamp text t is the one m keeps: texts of 8 to 16 bytes are kept as their
 * first and last 8 bytes (which cover every byte), compared in two loads. */
static inline bool put_memo_ts_same(const struct put_memo *m, struct put_str t)
{
    return t.len == m->ts_len && t.len >= 8 &&
           coding_get_le64((const uint8_t *)t.p) == m->ts_head &&
           coding_get_le64((const uint8_t *)t.p + t.len - 8) == m->ts_tail;
}

/* Keeps the timestamp text t, parsed to ts, in m when it has 8 to 16 bytes. */
static void put_memo_ts_keep(struct put_memo *m, struct put_str t, int64_t ts)
{
    if (t.len < 8 || t.len > 16)
        return;
    m->ts_len = (uint8_t)t.len;
    m->ts_head = coding_get_le64((const uint8_t *)t.p);
    m->ts_tail = coding_get_le64((const uint8_t *)t.p + t.len - 8);
    m->ts = ts;
}

/* Keeps the split of the tags text [text, text + len) (out's tags, plain: put_split_tags'
 * result) in m when it fits; false (m unchanged) when it does not. */
static bool put_memo_keep(struct put_memo *m, const char *text, size_t len,
                          const struct put_point *out, bool plain)
{
    if (len > PUT_MEMO_TEXT || out->ntags > PUT_MEMO_TAGS)
        return false;
    memcpy(m->text, text, len);
    m->text_len = (uint16_t)len;
    m->ntags = (uint16_t)out->ntags;
    m->plain = plain;
    for (size_t i = 0; i < out->ntags; i++) {
        m->tag[i].k = (uint16_t)(out->tagk[i].p - text);
        m->tag[i].klen = (uint16_t)out->tagk[i].len;
        m->tag[i].vlen = (uint16_t)out->tagv[i].len;
    }
    m->key_len = (uint16_t)(put_tags_key_write(m->key, out) - m->key);
    return true;
}

enum put_status put_parse_line_memo(const char *line, size_t len, const struct put_rules *rules,
                                    struct put_memo *memo, struct put_point *out, char *msg,
                                    size_t msg_size)
{
    char num[256];
    if (memo)
        memo->last = false;
    if (len > 0 && line[len - 1] == '\r')
        len--;
    /* Split on every single space (Tags.splitString): runs of spaces give empty tokens. */
    struct put_str tok[4];
    size_t ntok = 0;
    const char *p = line, *end = line + len;
    const char *rest = NULL;                   /* start of token 4 */
    if (len > 4 && !memcmp(line, "put ", 4)) { /* the usual first token, without a search */
        tok[ntok++] = (struct put_str){line, 3};
        p = line + 4;
    }
    while (ntok < 4) {
        const char *sp = memchr(p, ' ', (size_t)(end - p));
        const char *te = sp ? sp : end;
        tok[ntok].p = p;
        tok[ntok].len = (size_t)(te - p);
        ntok++;
        if (!sp)
            break;
        p = sp + 1;
        if (ntok == 4)
            rest = p;
    }
    /* With a fifth token (rest) there are enough arguments: the count only matters without. */
    size_t total = rest ? 5 : ntok;
    if (total < 5) {
        put_msg(msg, msg_size,
                "put: illegal argument: not enough arguments (need least 4, got %zu)", total - 1);
        return PUT_EARG;
    }
    out->metric = tok[1];
    if (tok[1].len == 0) {
        put_msg(msg, msg_size, "put: illegal argument: empty metric name");
        return PUT_EARG;
    }
    /* Timestamp: the memo's when its text is the memo's, else parsed (and kept). */
    int64_t ts;
    bool ok;
    if (memo && put_memo_ts_same(memo, tok[2])) {
        ts = memo->ts;
        ok = true;
    } else {
        ok = put_parse_ts(tok[2], &ts, num, sizeof(num));
        if (ok && memo)
            put_memo_ts_keep(memo, tok[2], ts);
    }
    if (!ok) {
        put_msg(msg, msg_size, "put: invalid value: %s", num);
        return PUT_ENUMBER;
    }
    if (ts <= 0) {
        put_msg(msg, msg_size, "put: illegal argument: invalid timestamp: %lld", (long long)ts);
        return PUT_EARG;
    }
    if (tok[3].len == 0) {
        put_msg(msg, msg_size, "put: illegal argument: empty value");
        return PUT_EARG;
    }
    bool plain = put_str_plain(tok[1]);
    size_t tl = (size_t)(end - rest);
    if (memo && tl == memo->text_len && tl > 0 && !memcmp(rest, memo->text, tl)) {
        out->ntags = memo->ntags;
        for (size_t i = 0; i < memo->ntags; i++) {
            const char *k = rest + memo->tag[i].k;
            out->tagk[i] = (struct put_str){k, memo->tag[i].klen};
            out->tagv[i] = (struct put_str){k + memo->tag[i].klen + 1, memo->tag[i].vlen};
        }
        plain &= memo->plain;
    } else {
        bool tags_plain;
        enum put_status st = put_split_tags(rest, end, rules, out, &tags_plain, msg, msg_size);
        if (st != PUT_OK)
            return st;
        plain &= tags_plain;
        if (memo && !put_memo_keep(memo, rest, tl, out, tags_plain))
            memo = NULL; /* not kept: memo->last stays false */
    }
    out->ts_ms = ts;
    char m2[1024];
    /* the split's names are never empty (nor is the metric, checked above) */
    enum put_status st =
        put_check(out, tok[3], rules, plain ? PUT_NAMES_VALID : PUT_NAMES_UNKNOWN, m2, sizeof(m2));
    if (st != PUT_OK) {
        put_msg(msg, msg_size, "put: %s", m2);
        return st;
    }
    if (memo)
        memo->last = true;
    return PUT_OK;
}

enum put_status put_parse_line(const char *line, size_t len, const struct put_rules *rules,
                               struct put_point *out, char *msg, size_t msg_size)
{
    return put_parse_line_memo(line, len, rules, NULL, out, msg, msg_size);
}

size_t put_point_key_len(const struct put_point *p)
{
    size_t n = p->metric.len + 1;
    for (size_t i = 0; i < p->ntags; i++)
        n += p->tagk[i].len + p->tagv[i].len + 2;
    return n;
}

char *put_point_key_write(char *w, const struct put_point *p)
{
    return put_tags_key_write(put_metric_key_write(w, p->metric), p);
}

size_t put_memo_key_write(const struct put_memo *m, const struct put_point *p, char *w)
{
    char *e = put_metric_key_write(w, p->metric);
    memcpy(e, m->key, m->key_len);
    return (size_t)(e - w) + m->key_len;
}
