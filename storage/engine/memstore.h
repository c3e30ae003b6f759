/* memstore.h - the sorted in-memory write buffer of one (region, family) store: a skiplist of
 * cells (cell.h order) whose nodes and bytes live in an arena owned by the memstore.
 *
 * One writer at a time inserts (the caller serialises writers, e.g. under the region's mutex);
 * any number of readers iterate at the same time without a lock. A cell never changes or moves
 * once inserted, so the bytes a reader gets stay valid as long as it holds a reference. The
 * memstore is reference-counted: the region holds one, every scanner or flush holds another.
 * Nothing is ever removed: a memstore is frozen (no more inserts) and flushed whole. */
#ifndef CT_ENGINE_MEMSTORE_H
#define CT_ENGINE_MEMSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/ct_err.h"
#include "storage/engine/cell.h"

struct memstore;

/* Returns a new empty memstore with one reference in *out, dropped with memstore_unref().
 * bloom_bits > 0 gives it a row bloom filter of that many bits (rounded up to 64) for
 * memstore_may_contain_row(). */
CT_MUST_CHECK int memstore_new(struct memstore **out, uint32_t bloom_bits, struct ct_err *err);
/* False means no cell of that row was inserted before the caller's snapshot was published
 * (always true without a bloom filter). */
bool memstore_may_contain_row(const struct memstore *m, const uint8_t *row, size_t len);
/* The same with the row's bloom_hash_row() computed by the caller (once for many inputs). */
bool memstore_may_contain_row_hash(const struct memstore *m, uint64_t row_hash);
void memstore_ref(struct memstore *m);
void memstore_unref(struct memstore *m); /* accepts NULL; the last reference frees */

/* Copies c (row, qualifier, value) into the arena and links it in. REQUIRES: no other writer.
 * Readers may run concurrently. */
CT_MUST_CHECK int memstore_add(struct memstore *m, const struct cell *c, struct ct_err *err);

size_t memstore_bytes(const struct memstore *m); /* bytes of inserted cells and nodes */
uint64_t memstore_count(const struct memstore *m);
/* Checks the skiplist itself (for tests): every level's links in strictly increasing order.
 * Readers only need level 0 to be right; the levels above decide how fast searches are. */
bool memstore_links_ordered(const struct memstore *m);
uint64_t memstore_min_seq(const struct memstore *m); /* UINT64_MAX when empty */
uint64_t memstore_max_seq(const struct memstore *m); /* 0 when empty */

/* An iterator; held by value (its layout is public so callers can embed it). It borrows a
 * reference the caller holds on the memstore. Cells returned by memstore_iter_cell() stay valid
 * while that reference is held. */
#define MEMSTORE_PATH_MAX 12 /* the skiplist's greatest height */

struct memstore_iter {
    struct memstore *m;
    const void *node; /* NULL = not valid */
    /* the search path of the iterator's last backward search (seek_for_prev, prev, seek_near):
     * path[i] (i < path_h) is a node of height > i (or the head); used as a finger by the next
     * one, which checks each entry before starting from it (memstore.c) */
    int path_h;
    const void *path[MEMSTORE_PATH_MAX];
};

void memstore_iter_init(struct memstore_iter *it, struct memstore *m);
static inline bool memstore_iter_valid(const struct memstore_iter *it)
{
    return it->node != NULL;
}
void memstore_iter_seek_first(struct memstore_iter *it);
void memstore_iter_seek_last(struct memstore_iter *it);
void memstore_iter_seek(struct memstore_iter *it, const struct cell *target); /* first >= */
void memstore_iter_seek_for_prev(struct memstore_iter *it, const struct cell *target); /* last <= */
/* memstore_iter_seek() for a target close to (at or before) the iterator's last backward search:
 * searched from that search's path instead of from the head, so a reversed scan's step back
 * to a row's first cell costs a few comparisons. Any target is correct, only slower. */
void memstore_iter_seek_near(struct memstore_iter *it, const struct cell *target);
void memstore_iter_next(struct memstore_iter *it);
void memstore_iter_prev(struct memstore_iter *it);
/* The current cell (REQUIRES valid). */
const struct cell *memstore_iter_cell(const struct memstore_iter *it);

#endif
