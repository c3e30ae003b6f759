/* jsonput.c - the /api/put body reader (see jsonput.h).
 * Invariants: (1) no allocation: spans point into the body or the scratch buffer (a check
 * without one, j.scratch NULL, unescapes nothing); (2) the scratch
 * write position only grows within one point and is reset per point, and unescaping never
 * lengthens a string, so len + 1 bytes of scratch always suffice; (3) nesting deeper than
 * JSONPUT_MAX_DEPTH is a syntax error (bounded recursion); (4) one grammar, two walkers: the
 * point reader (jp_point, jsonput_read) takes the same decisions as jp_value, so a malformed
 * body gets the same first error at the same offset from either. */
#include "tsd/jsonput.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSONPUT_MAX_DEPTH 64

/* Most tags jp_point_fast keeps of a point for the next one with the same tags text. */
#define JP_TAGS_KEPT 16

struct jp {
    const char *s, *end, *p;
    char *scratch;
    size_t sp; /* scratch position */
    char *msg;
    size_t msg_size;
    bool failed;
    /* jp_point_fast's tags of the previous point: their text (after `"tags":{"`, through the
     * closing "}}") and spans; tags_text NULL when the previous point was not read by it */
    const char *tags_text;
    size_t tags_len, tags_n;
    struct put_str tagk[JP_TAGS_KEPT], tagv[JP_TAGS_KEPT];
};

static void jp_fail(struct jp *j, const char *what)
{
    if (!j->failed)
        snprintf(j->msg, j->msg_size, "%s at offset %zu", what, (size_t)(j->p - j->s));
    j->failed = true;
}

static inline void jp_ws(struct jp *j)
{
    /* JSON whitespace is all below '!': one compare for the common case of none */
    while (j->p < j->end && (unsigned char)*j->p <= ' ' &&
           (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static int jp_hex4(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= c - '0';
        else if (c >= 'a' && c <= 'f')
            v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v |= c - 'A' + 10;
        else
            return -1;
    }
    return v;
}

/* Bytes that end the plain run of a string: the quote, a backslash, control characters. */
static const bool jp_str_stop[256] = {
    [0x00] = 1, [0x01] = 1, [0x02] = 1, [0x03] = 1, [0x04] = 1, [0x05] = 1, [0x06] = 1,
    [0x07] = 1, [0x08] = 1, [0x09] = 1, [0x0A] = 1, [0x0B] = 1, [0x0C] = 1, [0x0D] = 1,
    [0x0E] = 1, [0x0F] = 1, [0x10] = 1, [0x11] = 1, [0x12] = 1, [0x13] = 1, [0x14] = 1,
    [0x15] = 1, [0x16] = 1, [0x17] = 1, [0x18] = 1, [0x19] = 1, [0x1A] = 1, [0x1B] = 1,
    [0x1C] = 1, [0x1D] = 1, [0x1E] = 1, [0x1F] = 1, ['"'] = 1,  ['\\'] = 1,
};

/* The first stop byte (jp_str_stop) in q..end, or end: eight bytes a step where the word holds
 * none (SWAR: a byte equal to '"' or '\\', or below 0x20, sets its high bit in m; the lowest
 * flagged byte is always a real one, since a false flag needs a borrow from a real one below
 * it), then byte by byte for the last few bytes of the body. */
static inline const char *jp_plain_end(const char *q, const char *end)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    while (end - q >= 8) {
        uint64_t x;
        memcpy(&x, q, 8);
        uint64_t qt = x ^ (ones * '"'), bs = x ^ (ones * '\\');
        uint64_t m = (((qt - ones) & ~qt) | ((bs - ones) & ~bs) | ((x - ones * 0x20) & ~x)) & highs;
        if (m)
            return q + (__builtin_ctzll(m) >> 3);
        q += 8;
    }
#endif
    while (q < end && !jp_str_stop[(unsigned char)*q])
        q++;
    return q;
}

/* The rest of jp_string from q, the first stop byte of the string starting at start: escapes
 * unescaped into scratch (only checked when j->scratch is NULL), a control character or the end
 * of the body refused. Out of line, so that the plain strings' path (nearly all) does not pay
 * for its registers. */
static __attribute__((noinline)) bool jp_string_escaped(struct jp *j, struct put_str *out,
                                                        const char *start, const char *q)
{
    char *w0 = j->scratch ? j->scratch + j->sp : NULL;
    size_t n = 0; /* bytes of the unescaped string */
#define JP_PUT(c)                                                                                  \
    do {                                                                                           \
        if (w0)                                                                                    \
            w0[n] = (char)(c);                                                                     \
        n++;                                                                                       \
    } while (0)
    if (w0)
        memcpy(w0, start, (size_t)(q - start));
    n = (size_t)(q - start);
    j->p = q;
    while (j->p < j->end) {
        unsigned char c = (unsigned char)*j->p;
        if (c == '"') {
            j->p++;
            if (out) {
                out->p = w0 ? w0 : start;
                out->len = w0 ? n : (size_t)(j->p - 1 - start);
            }
            if (w0)
                j->sp += n;
            return true;
        }
        if (c < 0x20) {
            jp_fail(j, "control character in string");
            return false;
        }
        if (c != '\\') {
            JP_PUT(c);
            j->p++;
            continue;
        }
        if (j->p + 1 >= j->end) {
            jp_fail(j, "unterminated string");
            return false;
        }
        char e = j->p[1];
        j->p += 2;
        switch (e) {
        case '"':
            JP_PUT('"');
            break;
        case '\\':
            JP_PUT('\\');
            break;
        case '/':
            JP_PUT('/');
            break;
        case 'b':
            JP_PUT('\b');
            break;
        case 'f':
            JP_PUT('\f');
            break;
        case 'n':
            JP_PUT('\n');
            break;
        case 'r':
            JP_PUT('\r');
            break;
        case 't':
            JP_PUT('\t');
            break;
        case 'u': {
            if (j->end - j->p < 4 || jp_hex4(j->p) < 0) {
                jp_fail(j, "bad \\u escape");
                return false;
            }
            unsigned cp = (unsigned)jp_hex4(j->p);
            j->p += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (j->end - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u' ||
                    jp_hex4(j->p + 2) < 0xDC00 || jp_hex4(j->p + 2) > 0xDFFF) {
                    jp_fail(j, "bad surrogate pair");
                    return false;
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + ((unsigned)jp_hex4(j->p + 2) - 0xDC00);
                j->p += 6;
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                jp_fail(j, "bad surrogate pair");
                return false;
            }
            /* UTF-8 of cp is never longer than its escape (6 or 12 bytes) */
            if (cp < 0x80) {
                JP_PUT(cp);
            } else if (cp < 0x800) {
                JP_PUT(0xC0 | (cp >> 6));
                JP_PUT(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                JP_PUT(0xE0 | (cp >> 12));
                JP_PUT(0x80 | ((cp >> 6) & 0x3F));
                JP_PUT(0x80 | (cp & 0x3F));
            } else {
                JP_PUT(0xF0 | (cp >> 18));
                JP_PUT(0x80 | ((cp >> 12) & 0x3F));
                JP_PUT(0x80 | ((cp >> 6) & 0x3F));
                JP_PUT(0x80 | (cp & 0x3F));
            }
            break;
        }
        default:
            jp_fail(j, "bad escape in string");
            return false;
        }
    }
#undef JP_PUT
    jp_fail(j, "unterminated string");
    return false;
}

/* Reads a string at j->p ('"'); out (may be NULL) gets its unescaped bytes. */
static inline __attribute__((always_inline)) bool jp_string(struct jp *j, struct put_str *out)
{
    j->p++; /* opening quote */
    const char *start = j->p;
    const char *q = jp_plain_end(start, j->end);
    if (q < j->end && *q == '"') {
        if (out) {
            out->p = start;
            out->len = (size_t)(q - start);
        }
        j->p = q + 1;
        return true;
    }
    return jp_string_escaped(j, out, start, q);
}

/* Whether p..end starts with a JSON number (RFC 8259); *out: its end. */
static bool jp_number_end(const char *p, const char *end, const char **out)
{
    if (p < end && *p == '-')
        p++;
    if (p >= end || *p < '0' || *p > '9')
        return false;
    if (*p == '0')
        p++;
    else
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    if (p < end && *p == '.') {
        p++;
        if (p >= end || *p < '0' || *p > '9')
            return false;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p >= end || *p < '0' || *p > '9')
            return false;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    *out = p;
    return true;
}

static bool jp_number(struct jp *j, struct put_str *out)
{
    const char *e;
    if (!jp_number_end(j->p, j->end, &e)) {
        jp_fail(j, "bad number");
        return false;
    }
    if (out) {
        out->p = j->p;
        out->len = (size_t)(e - j->p);
    }
    j->p = e;
    return true;
}

static bool jp_word(struct jp *j, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n) != 0) {
        jp_fail(j, "unexpected character");
        return false;
    }
    j->p += n;
    return true;
}

/* Skips any value. kind: 's' string, 'n' number, 'l' literal, 'o' object, 'a' array. */
static bool jp_value(struct jp *j, int depth, struct put_str *text, char *kind)
{
    jp_ws(j);
    if (j->p >= j->end) {
        jp_fail(j, "unexpected end of input");
        return false;
    }
    if (depth > JSONPUT_MAX_DEPTH) {
        jp_fail(j, "nesting too deep");
        return false;
    }
    char c = *j->p;
    const char *b = j->p;
    if (kind)
        *kind = c == '"'                               ? 's'
                : c == '{'                             ? 'o'
                : c == '['                             ? 'a'
                : (c == '-' || (c >= '0' && c <= '9')) ? 'n'
                                                       : 'l';
    if (c == '"')
        return jp_string(j, text);
    if (c == '-' || (c >= '0' && c <= '9'))
        return jp_number(j, text);
    if (c == 't' || c == 'f' || c == 'n') {
        bool ok = jp_word(j, c == 't' ? "true" : c == 'f' ? "false" : "null");
        if (ok && text) {
            text->p = b;
            text->len = (size_t)(j->p - b);
        }
        return ok;
    }
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        j->p++;
        jp_ws(j);
        if (j->p < j->end && *j->p == close) {
            j->p++;
            return true;
        }
        for (;;) {
            if (c == '{') {
                jp_ws(j);
                if (j->p >= j->end || *j->p != '"') {
                    jp_fail(j, "expected a field name");
                    return false;
                }
                if (!jp_string(j, NULL))
                    return false;
                jp_ws(j);
                if (j->p >= j->end || *j->p != ':') {
                    jp_fail(j, "expected ':'");
                    return false;
                }
                j->p++;
            }
            if (!jp_value(j, depth + 1, NULL, NULL))
                return false;
            jp_ws(j);
            if (j->p < j->end && *j->p == ',') {
                j->p++;
                continue;
            }
            if (j->p < j->end && *j->p == close) {
                j->p++;
                return true;
            }
            jp_fail(j, c == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
            return false;
        }
    }
    jp_fail(j, "unexpected character");
    return false;
}

static bool jp_key_is(const struct put_str *k, const char *name)
{
    size_t n = strlen(name);
    return k->len == n && !memcmp(k->p, name, n);
}

/* jp_value for a datapoint's field or tag value: a string (nearly every tag value and metric)
 * goes straight to jp_string, the rest through jp_value. */
static inline bool jp_field_value(struct jp *j, int depth, struct put_str *text, char *kind)
{
    jp_ws(j);
    if (j->p < j->end && *j->p == '"') {
        *kind = 's';
        return jp_string(j, text);
    }
    return jp_value(j, depth, text, kind);
}

/* Expects c at j->p (after whitespace), else fails with what. */
static inline bool jp_expect(struct jp *j, char c, const char *what)
{
    if (j->p < j->end && *j->p == c) {
        j->p++;
        return true;
    }
    jp_fail(j, what);
    return false;
}

/* A field name at j->p (after whitespace) and its ':' with the whitespace around it, as
 * jp_value() reads an object's member, the same errors at the same offsets. */
static inline bool jp_member_name(struct jp *j, struct put_str *name)
{
    if (j->p >= j->end || *j->p != '"') {
        jp_fail(j, "expected a field name");
        return false;
    }
    if (!jp_string(j, name))
        return false;
    jp_ws(j);
    return jp_expect(j, ':', "expected ':'");
}

/* After an object's member: ',' (true, *more) or '}' (true, !*more), whitespace first. */
static inline bool jp_member_end(struct jp *j, bool *more)
{
    jp_ws(j);
    if (j->p < j->end && *j->p == ',') {
        j->p++;
        *more = true;
        return true;
    }
    *more = false;
    return jp_expect(j, '}', "expected ',' or '}'");
}

/* Whether a and b hold the same bytes (the first byte tells most tag keys apart without a
 * call). */
static inline bool jp_same(const struct put_str *a, const struct put_str *b)
{
    return a->len == b->len && (a->len == 0 || (a->p[0] == b->p[0] && !memcmp(a->p, b->p, a->len)));
}

/* Adds tag tk=tv to pt, or sets the value of a key it holds (a JSON map keeps the last value);
 * false when it is a new key and pt holds PUT_MAX_TAGS already (nothing added). */
static bool jp_tag_add(struct jsonput_point *pt, struct put_str tk, struct put_str tv)
{
    for (size_t i = 0; i < pt->ntags; i++) {
        if (jp_same(&pt->tagk[i], &tk)) {
            pt->tagv[i] = tv;
            return true;
        }
    }
    if (pt->ntags == PUT_MAX_TAGS)
        return false;
    pt->tagk[pt->ntags] = tk;
    pt->tagv[pt->ntags] = tv;
    pt->ntags++;
    return true;
}

/* Reads a "tags" object at j->p ('{') at nesting depth into *pt, checking it as jp_value(depth)
 * would. */
static bool jp_tags(struct jp *j, struct jsonput_point *pt, int depth)
{
    pt->tags_present = true;
    j->p++;
    jp_ws(j);
    if (j->p < j->end && *j->p == '}') {
        j->p++;
        return true;
    }
    for (bool more = true; more;) {
        jp_ws(j);
        struct put_str tk, tv = {NULL, 0};
        char vk;
        if (!jp_member_name(j, &tk) || !jp_field_value(j, depth + 1, &tv, &vk))
            return false;
        if (vk == 'o' || vk == 'a' || (vk == 'l' && tv.len == 4 && !memcmp(tv.p, "null", 4)))
            tv.p = NULL, tv.len = 0;
        if (!jp_tag_add(pt, tk, tv))
            pt->too_many_tags = true;
        if (!jp_member_end(j, &more))
            return false;
    }
    return true;
}

/* Whether p..end starts with the bytes of the literal lit; *p past them if so. */
#define JP_LIT(p, end, lit)                                                                        \
    ((end) - (p) >= (ptrdiff_t)sizeof(lit) - 1 && !memcmp((p), (lit), sizeof(lit) - 1)             \
         ? ((p) += sizeof(lit) - 1, true)                                                          \
         : false)

/* The plain string (no escape, no control character) whose text starts at p, after its opening
 * quote: *s its text, p past its closing quote; NULL if it is not plain or does not end. */
static inline const char *jp_plain_string(const char *p, const char *end, struct put_str *s)
{
    const char *q = jp_plain_end(p, end);
    if (q >= end || *q != '"')
        return NULL;
    s->p = p;
    s->len = (size_t)(q - p);
    return q + 1;
}

static bool jp_fast = true; /* jsonput_set_fast_path */

void jsonput_set_fast_path(bool on)
{
    jp_fast = on;
}

/* JP_LIT of the compact literal a, or of b (the same with json.dumps' ", " and ": ") if spaced. */
#define JP_LIT2(p, end, spaced, a, b) ((spaced) ? JP_LIT(p, end, b) : JP_LIT(p, end, a))

/* The shape nearly every client sends, {"metric":"m","timestamp":N,"value":N,"tags":{"k":"v",
 * ...}} with plain strings, without whitespace or (spaced) with Python's json.dumps separators
 * (", " and ": ", nothing else), read by matching its bytes: true with *pt filled (it was
 * reset) and j->p past the object; false, j->p unchanged, where the body leaves the shape (then
 * jp_point reads the point from its start). What it accepts is valid JSON that jp_point's
 * general path reads into the same fields. spaced is a constant where it is called: one copy
 * of the code per shape. */
static inline __attribute__((always_inline)) bool
jp_point_shape(struct jp *j, struct jsonput_point *pt, bool spaced)
{
    const char *p = j->p, *end = j->end;
    if (!JP_LIT2(p, end, spaced, "{\"metric\":\"", "{\"metric\": \"") ||
        !(p = jp_plain_string(p, end, &pt->metric)) ||
        !JP_LIT2(p, end, spaced, ",\"timestamp\":", ", \"timestamp\": "))
        return false;
    const char *q;
    if (!jp_number_end(p, end, &q))
        return false;
    pt->timestamp.p = p;
    pt->timestamp.len = (size_t)(q - p);
    p = q;
    if (!JP_LIT2(p, end, spaced, ",\"value\":", ", \"value\": ") || !jp_number_end(p, end, &q))
        return false;
    pt->value.p = p;
    pt->value.len = (size_t)(q - p);
    p = q;
    if (!JP_LIT2(p, end, spaced, ",\"tags\":{\"", ", \"tags\": {\""))
        return false;
    pt->tags_present = true;
    const char *tags = p;
    if (j->tags_text && (size_t)(end - p) >= j->tags_len && !memcmp(p, j->tags_text, j->tags_len)) {
        /* the same bytes as the previous point's tags: the same tags (read as the loop below
         * read them then) */
        memcpy(pt->tagk, j->tagk, j->tags_n * sizeof(pt->tagk[0]));
        memcpy(pt->tagv, j->tagv, j->tags_n * sizeof(pt->tagv[0]));
        pt->ntags = j->tags_n;
        pt->tags_repeat = true;
        j->p = p + j->tags_len;
        return true;
    }
    for (;;) {
        struct put_str tk, tv;
        if (!(p = jp_plain_string(p, end, &tk)) || !JP_LIT2(p, end, spaced, ":\"", ": \"") ||
            !(p = jp_plain_string(p, end, &tv)))
            return false;
        if (!jp_tag_add(pt, tk, tv))
            return false; /* too many: the general path says so */
        if (JP_LIT2(p, end, spaced, ",\"", ", \""))
            continue;
        if (!JP_LIT(p, end, "}}"))
            return false;
        break;
    }
    j->p = p;
    j->tags_text = NULL;
    if (pt->ntags <= JP_TAGS_KEPT) {
        j->tags_text = tags;
        j->tags_len = (size_t)(p - tags);
        j->tags_n = pt->ntags;
        memcpy(j->tagk, pt->tagk, pt->ntags * sizeof(pt->tagk[0]));
        memcpy(j->tagv, pt->tagv, pt->ntags * sizeof(pt->tagv[0]));
    }
    return true;
}

/* jp_point_shape without whitespace, then with json.dumps' separators. */
static bool jp_point_fast(struct jp *j, struct jsonput_point *pt)
{
    if (jp_point_shape(j, pt, false))
        return true;
    /* the compact shape may have failed anywhere: start again from a reset point */
    memset(pt, 0, offsetof(struct jsonput_point, tagk));
    pt->ntags = 0;
    return jp_point_shape(j, pt, true);
}

/* Reads one array element or top-level value at j->p (after whitespace, not at the end) at
 * nesting depth into *pt: a datapoint object, or any other value (pt->not_object), checking its
 * syntax as jp_value(depth) would, with the same errors at the same offsets. */
static bool jp_point(struct jp *j, struct jsonput_point *pt, int depth)
{
    memset(pt, 0, offsetof(struct jsonput_point, tagk)); /* not the large tag arrays */
    pt->ntags = 0;
    pt->too_many_tags = false;
    pt->src = NULL;
    pt->src_len = 0;
    j->sp = 0;
    const char *b = j->p;
    if (jp_fast && jp_point_fast(j, pt)) {
        pt->src = b;
        pt->src_len = (size_t)(j->p - b);
        return true;
    }
    /* the general path, from a reset point */
    memset(pt, 0, offsetof(struct jsonput_point, tagk));
    pt->ntags = 0;
    j->tags_text = NULL; /* the next point's tags are read whole */
    if (*j->p != '{') {
        pt->not_object = true;
        bool ok = jp_value(j, depth, NULL, NULL);
        pt->src = b;
        pt->src_len = (size_t)(j->p - b);
        return ok;
    }
    j->p++;
    jp_ws(j);
    if (j->p < j->end && *j->p == '}') {
        j->p++;
    } else {
        for (bool more = true; more;) {
            jp_ws(j);
            struct put_str key; /* kept: a later unescape does not overwrite it */
            if (!jp_member_name(j, &key))
                return false;
            jp_ws(j);
            if (j->p < j->end && *j->p == '{' && jp_key_is(&key, "tags")) {
                if (!jp_tags(j, pt, depth + 1))
                    return false;
            } else {
                char kind;
                struct put_str text = {NULL, 0};
                if (!jp_field_value(j, depth + 1, &text, &kind))
                    return false;
                bool null = kind == 'l' && text.len == 4 && !memcmp(text.p, "null", 4);
                if (jp_key_is(&key, "metric")) {
                    if (kind == 's')
                        pt->metric = text;
                } else if (jp_key_is(&key, "timestamp")) {
                    if (kind == 's' || kind == 'n') {
                        pt->timestamp = text;
                        pt->timestamp_is_string = kind == 's';
                    }
                } else if (jp_key_is(&key, "value")) {
                    if (!null && kind != 'o' && kind != 'a')
                        pt->value = text;
                }
            }
            if (!jp_member_end(j, &more))
                return false;
        }
    }
    pt->src = b;
    pt->src_len = (size_t)(j->p - b);
    return true;
}

#define JP_QUICK_DEPTH 32

/* A plain string at p ('"'): no escape, no control character; *out: past its closing quote. */
static bool jp_quick_string(const char *p, const char *end, const char **out)
{
    p = jp_plain_end(p + 1, end);
    if (p >= end || *p != '"')
        return false;
    *out = p + 1;
    return true;
}

/* The quick syntax check (jsonput.h): the grammar of jp_value() walked with an explicit stack
 * instead of recursion, giving up (false) on anything it does not handle itself. Every token it
 * accepts is one jp_value() accepts the same way, so true implies the full check passes. */
bool jsonput_syntax_quick(const char *body, size_t len)
{
    const char *p = body, *end = body + len;
    char stack[JP_QUICK_DEPTH];
    int depth = 0;
#define JP_QWS()                                                                                   \
    while (p < end && (unsigned char)*p <= ' ' &&                                                  \
           (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))                                  \
    p++
    JP_QWS();
value:
    if (p >= end)
        return false;
    switch (*p) {
    case '"':
        if (!jp_quick_string(p, end, &p))
            return false;
        break;
    case '{':
    case '[':
        if (depth == JP_QUICK_DEPTH)
            return false;
        stack[depth++] = *p == '{' ? '}' : ']';
        p++;
        JP_QWS();
        if (p < end && *p == stack[depth - 1]) {
            p++;
            depth--;
            break;
        }
        if (stack[depth - 1] == '}')
            goto key;
        goto value;
    case 't':
        if (end - p < 4 || memcmp(p, "true", 4) != 0)
            return false;
        p += 4;
        break;
    case 'f':
        if (end - p < 5 || memcmp(p, "false", 5) != 0)
            return false;
        p += 5;
        break;
    case 'n':
        if (end - p < 4 || memcmp(p, "null", 4) != 0)
            return false;
        p += 4;
        break;
    default:
        if (!jp_number_end(p, end, &p))
            return false;
        break;
    }
    /* after a value */
    for (;;) {
        JP_QWS();
        if (depth == 0)
            return p == end;
        if (p >= end)
            return false;
        if (*p == ',') {
            p++;
            JP_QWS();
            if (stack[depth - 1] == '}')
                goto key;
            goto value;
        }
        if (*p != stack[depth - 1])
            return false;
        p++;
        depth--;
    }
key:
    if (p >= end || *p != '"' || !jp_quick_string(p, end, &p))
        return false;
    JP_QWS();
    if (p >= end || *p != ':')
        return false;
    p++;
    JP_QWS();
    goto value;
#undef JP_QWS
}

bool jsonput_syntax_full(const char *body, size_t len)
{
    char msg[8];
    struct jp j = {.s = body, .end = body + len, .p = body, .msg = msg, .msg_size = sizeof msg};
    bool ok = jp_value(&j, 0, NULL, NULL);
    jp_ws(&j);
    return ok && j.p == j.end;
}

int jsonput_check(const char *body, size_t len, char *msg, size_t msg_size)
{
    /* the quick check first; the full one decides and words any error */
    struct jp j = {.s = body, .end = body + len, .p = body, .msg = msg, .msg_size = msg_size};
    jp_ws(&j);
    char kind = j.p >= j.end ? 'l' : *j.p == '{' ? 'o' : *j.p == '[' ? 'a' : 'l';
    j.p = body;
    if (!jsonput_syntax_quick(body, len)) {
        if (!jp_value(&j, 0, NULL, &kind))
            return -1;
        jp_ws(&j);
        if (j.p != j.end) {
            jp_fail(&j, "trailing characters after the JSON value");
            return -1;
        }
    }
    if (kind != 'o' && kind != 'a') {
        snprintf(msg, msg_size, "expected a datapoint object or an array of them");
        return -1;
    }
    return 0;
}

/* The one pass (jsonput_read): jp_value(0)'s walk of a top-level object or array, each point
 * read by jp_point and handed to fn as soon as it is read; then the trailing whitespace. */
int jsonput_read(const char *body, size_t len, char *scratch, struct jsonput_point *point,
                 jsonput_fn fn, void *arg, size_t *npoints, char *msg, size_t msg_size)
{
    struct jp j = {.s = body,
                   .end = body + len,
                   .p = body,
                   .scratch = scratch,
                   .msg = msg,
                   .msg_size = msg_size};
    jp_ws(&j);
    if (j.p >= j.end || (*j.p != '{' && *j.p != '[')) {
        /* a malformed body, or a valid one of the wrong kind: jsonput_check words either */
        if (jsonput_check(body, len, msg, msg_size) == 0)
            snprintf(msg, msg_size, "expected a datapoint object or an array of them");
        return -1;
    }
    size_t n = 0;
    if (*j.p == '{') {
        if (!jp_point(&j, point, 0))
            return -1;
        int rc = fn(arg, n++, point);
        if (rc != 0)
            return rc;
    } else {
        j.p++; /* '[' */
        jp_ws(&j);
        if (j.p < j.end && *j.p == ']') {
            j.p++;
        } else {
            for (;;) {
                jp_ws(&j);
                if (j.p >= j.end) {
                    jp_fail(&j, "unexpected end of input");
                    return -1;
                }
                if (!jp_point(&j, point, 1))
                    return -1;
                int rc = fn(arg, n++, point);
                if (rc != 0)
                    return rc;
                jp_ws(&j);
                if (j.p < j.end && *j.p == ',') {
                    j.p++;
                    continue;
                }
                if (!jp_expect(&j, ']', "expected ',' or ']'"))
                    return -1;
                break;
            }
        }
    }
    jp_ws(&j);
    if (j.p != j.end) {
        jp_fail(&j, "trailing characters after the JSON value");
        return -1;
    }
    *npoints = n;
    return 0;
}

int jsonput_parse(const char *body, size_t len, char *scratch, struct jsonput_point *point,
                  jsonput_fn fn, void *arg, size_t *npoints, char *msg, size_t msg_size)
{
    if (jsonput_check(body, len, msg, msg_size) != 0)
        return -1;
    return jsonput_read(body, len, scratch, point, fn, arg, npoints, msg, msg_size);
}
