/* bt_buf.h - a growable byte buffer and array growth, shared by the storage/bigtable/ files.
 * Buffers are reused (len reset to 0) rather than freed, so steady-state reads and writes do not
 * allocate per cell. Internal to storage/bigtable/. */
#ifndef CT_BT_BUF_H
#define CT_BT_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct bt_buf {
    uint8_t *p;
    size_t len;
    size_t cap;
};

/* Ensures room for `more` bytes after len; 0 or -1 (out of memory, buffer unchanged). */
static inline int bt_buf_reserve(struct bt_buf *b, size_t more)
{
    if (b->cap - b->len >= more)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < more)
        cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

/* Appends n bytes; returns the offset they start at, or SIZE_MAX when out of memory. */
static inline size_t bt_buf_append(struct bt_buf *b, const void *data, size_t n)
{
    if (bt_buf_reserve(b, n) != 0)
        return SIZE_MAX;
    size_t off = b->len;
    if (n)
        memcpy(b->p + off, data, n);
    b->len += n;
    return off;
}

static inline void bt_buf_free(struct bt_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* Grows *arr (elements of `size` bytes, capacity *cap) to hold at least `need`; 0 or -1. */
static inline int bt_grow(void **arr, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *p = realloc(*arr, c * size);
    if (!p)
        return -1;
    *arr = p;
    *cap = c;
    return 0;
}

#endif
