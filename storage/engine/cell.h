/* cell.h - the engine's internal cell: the unit the memstore, block files, the log and the
 * merging iterators exchange. Within the engine a store holds one (region, family), so the family
 * is implied by where a cell lives and is not part of the key.
 *
 * Order (docs/storage-contract.md, "Cell order", plus the sequence number): row asc, qualifier asc,
 * ts desc, type desc, seq desc (newest write first). Byte strings are borrowed: who owns them is
 * stated by whoever hands the cell out (an iterator's cell is valid until the iterator moves). */
#ifndef CT_ENGINE_CELL_H
#define CT_ENGINE_CELL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct cell {
    const uint8_t *row;
    const uint8_t *qual;
    const uint8_t *value;
    uint32_t row_len;
    uint32_t qual_len;
    uint32_t value_len;
    uint8_t type; /* enum wc_cell_type code */
    int64_t ts_ms;
    uint64_t seq; /* order of application; larger = newer */
};

/* Big-endian reading of 8 bytes, so that integer order is byte order. */
static inline uint64_t cell_load_be64(const uint8_t *p)
{
    uint64_t x;
    memcpy(&x, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    x = __builtin_bswap64(x);
#endif
    return x;
}

/* Unsigned bytewise order, shorter first on a common prefix. Keys of up to 64 bytes (row keys
 * of time series, qualifiers, the benchmark's 16-byte keys) are compared inline: a word at a
 * time, then the last 8 bytes as one word overlapping what is already known equal (or byte by
 * byte below 8 bytes); longer keys go to memcmp after their first 64 bytes. */
static inline int cell_bytes_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    size_t lim = n < 64 ? n : 64;
    size_t i = 0;
    for (; i + 8 <= lim; i += 8) {
        uint64_t x = cell_load_be64(a + i), y = cell_load_be64(b + i);
        if (x != y)
            return x < y ? -1 : 1;
    }
    if (i < n) {
        if (n > 64) {
            int c = memcmp(a + i, b + i, n - i);
            if (c)
                return c;
        } else if (n >= 8) {
            uint64_t x = cell_load_be64(a + n - 8), y = cell_load_be64(b + n - 8);
            if (x != y)
                return x < y ? -1 : 1;
        } else {
            for (; i < n; i++)
                if (a[i] != b[i])
                    return a[i] < b[i] ? -1 : 1;
        }
    }
    return alen < blen ? -1 : alen > blen;
}

/* Whether two byte strings are equal: lengths first, then 8 bytes at a time (no byte swaps, no
 * order), for the "is this input still on the row" checks made for every cell of a scan. */
static inline int cell_bytes_eq(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    if (alen != blen)
        return 0;
    size_t i = 0;
    for (; i + 8 <= alen; i += 8) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y)
            return 0;
    }
    if (i < alen && alen >= 8) { /* the last 8 bytes, overlapping what is known equal */
        uint64_t x, y;
        memcpy(&x, a + alen - 8, 8);
        memcpy(&y, b + alen - 8, 8);
        return x == y;
    }
    for (; i < alen; i++)
        if (a[i] != b[i])
            return 0;
    return 1;
}

/* cell_compare() of two cells known to have the same row: qualifier, then newest first. */
static inline int cell_compare_same_row(const struct cell *a, const struct cell *b)
{
    int c = cell_bytes_cmp(a->qual, a->qual_len, b->qual, b->qual_len);
    if (c)
        return c;
    if (a->ts_ms != b->ts_ms)
        return a->ts_ms > b->ts_ms ? -1 : 1;
    if (a->type != b->type)
        return a->type > b->type ? -1 : 1;
    if (a->seq != b->seq)
        return a->seq > b->seq ? -1 : 1;
    return 0;
}

/* Total order of cells (see top of file). */
static inline int cell_compare(const struct cell *a, const struct cell *b)
{
    int c = cell_bytes_cmp(a->row, a->row_len, b->row, b->row_len);
    return c ? c : cell_compare_same_row(a, b);
}

#endif
