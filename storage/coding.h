/* coding.h - explicit byte-order encoding helpers for on-disk and on-wire integers, and
 * LEB128-style varints, a copy of short byte strings, a hex digit's value, a UTF-8 decoder and a
 * base64 decoder. Never write a struct to disk: encode each field with these.
 * All functions are inline and allocation-free. */
#ifndef CT_CODING_H
#define CT_CODING_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The value (0..15) of the hex digit c, either case, or -1 when c is not one. */
static inline int coding_hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes the UTF-8 sequence at p[0..n) (n >= 1): its length (1..4) with the code point in *cp,
 * or 0 when it is not valid UTF-8 (RFC 3629: overlong forms, surrogates, code points past
 * U+10FFFF and truncated sequences are not). */
static inline size_t coding_utf8_decode(const unsigned char *p, size_t n, uint32_t *cp)
{
    if (p[0] < 0x80) {
        *cp = p[0];
        return 1;
    }
    size_t len = p[0] >= 0xF0 ? 4 : p[0] >= 0xE0 ? 3 : p[0] >= 0xC2 ? 2 : 0;
    if (!len || len > n || p[0] > 0xF4)
        return 0;
    uint32_t c = p[0] & (0x7Fu >> len);
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        c = c << 6 | (p[i] & 0x3Fu);
    }
    if ((len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10FFFF)) ||
        (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return len;
}

/* memcpy(d, s, n) for short byte strings (keys, qualifiers, names) without a call into libc:
 * up to 16 bytes by two overlapping loads and stores that stay inside [s, s + n) and
 * [d, d + n), longer ones by memcpy. The ranges must not overlap. */
static inline void coding_copy_short(void *dst, const void *src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
    if (n < 4) {
        if (n >= 2) {
            uint16_t x, y;
            memcpy(&x, s, 2);
            memcpy(&y, s + n - 2, 2);
            memcpy(d, &x, 2);
            memcpy(d + n - 2, &y, 2);
        } else if (n == 1) {
            d[0] = s[0];
        }
    } else if (n <= 8) {
        uint32_t x, y;
        memcpy(&x, s, 4);
        memcpy(&y, s + n - 4, 4);
        memcpy(d, &x, 4);
        memcpy(d + n - 4, &y, 4);
    } else if (n <= 16) {
        uint64_t x, y;
        memcpy(&x, s, 8);
        memcpy(&y, s + n - 8, 8);
        memcpy(d, &x, 8);
        memcpy(d + n - 8, &y, 8);
    } else {
        memcpy(d, s, n);
    }
}

static inline void coding_put_be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}
static inline void coding_put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
static inline void coding_put_be64(uint8_t *p, uint64_t v)
{
    coding_put_be32(p, (uint32_t)(v >> 32));
    coding_put_be32(p + 4, (uint32_t)v);
}
static inline uint16_t coding_get_be16(const uint8_t *p)
{
    return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}
static inline uint32_t coding_get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t coding_get_be64(const uint8_t *p)
{
    return (uint64_t)coding_get_be32(p) << 32 | coding_get_be32(p + 4);
}
static inline void coding_put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}
static inline uint32_t coding_get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline void coding_put_le64(uint8_t *p, uint64_t v)
{
    coding_put_le32(p, (uint32_t)v);
    coding_put_le32(p + 4, (uint32_t)(v >> 32));
}
static inline uint64_t coding_get_le64(const uint8_t *p)
{
    return (uint64_t)coding_get_le32(p) | (uint64_t)coding_get_le32(p + 4) << 32;
}

/* Maximum bytes a varint64 takes. */
#define CODING_VARINT64_MAX 10

/* Writes v as a varint at p (room for CODING_VARINT64_MAX bytes); returns bytes written. */
static inline size_t coding_put_varint64(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/* Reads a varint from [p, end); returns bytes consumed, or 0 if truncated or over-long. */
static inline size_t coding_get_varint64(const uint8_t *p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (size_t i = 0; i < CODING_VARINT64_MAX && p + i < end; i++) {
        uint64_t b = p[i];
        v |= (b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = v;
            return i + 1;
        }
    }
    return 0;
}

/* Zig-zag mapping of signed to unsigned so small magnitudes make short varints. */
static inline uint64_t coding_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (0 - ((uint64_t)v >> 63)); /* all ones when v < 0 */
}
static inline int64_t coding_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* The value of base64 digit c (standard or URL-safe alphabet), or -1. */
static inline int coding_base64_value(int c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

/* Decodes standard or URL-safe base64 (padding optional) into out; -1 on bad input or when
 * out (cap bytes) is too small. */
static inline long coding_base64_decode(const char *in, size_t len, unsigned char *out, size_t cap)
{
    while (len > 0 && in[len - 1] == '=')
        len--;
    if (len % 4 == 1)
        return -1;
    size_t n = 0;
    uint32_t acc = 0;
    int have = 0;
    for (size_t i = 0; i < len; i++) {
        int v = coding_base64_value((unsigned char)in[i]);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (uint32_t)v;
        have += 6;
        if (have >= 8) {
            have -= 8;
            if (n >= cap)
                return -1;
            out[n++] = (unsigned char)(acc >> have);
        }
    }
    return (long)n;
}

#endif
