/* block_cache.h - the engine-internal side of the block cache whose lifecycle and statistics
 * are declared in sst.h: lookup, insert and release of refcounted entries keyed by
 * (file id, block offset). Used by the block file reader (sst_read.c).
 *
 * An entry handed out by lookup or insert holds a reference: its value stays valid until
 * block_cache_release(), even if the cache evicts or clears it meanwhile (the value is freed
 * with its free function when the last reference goes).
 *
 * Threading: all functions are thread-safe. */
#ifndef CT_ENGINE_BLOCK_CACHE_H
#define CT_ENGINE_BLOCK_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/engine/sst.h"

struct block_cache_handle;
typedef void (*block_cache_free_fn)(void *value);

/* Returns a referenced handle for (file_id, offset), or NULL on a miss. Counts the hit or miss;
 * a second hit on a single-access block promotes it to the multi-access section. */
struct block_cache_handle *block_cache_lookup(struct block_cache *c, uint64_t file_id,
                                              uint64_t offset);
/* Inserts value (takes it: free_fn(value) is called once nobody references it) with the given
 * charge in bytes, in the in-memory section if `in_memory`, replacing any entry with the same
 * key. Returns a referenced handle. If the cache is disabled or the charge exceeds a shard's
 * capacity the handle is not cached but still valid until released. NULL only if out of memory
 * (then free_fn(value) has already been called). */
struct block_cache_handle *block_cache_insert(struct block_cache *c, uint64_t file_id,
                                              uint64_t offset, void *value, size_t charge,
                                              bool in_memory, block_cache_free_fn free_fn);
/* Brings the cache's own memory for (file_id, offset) towards the CPU cache without looking the
 * block up: the hash slot, or with `entry` the matching entry the slot points to (no reference,
 * no statistics, no change of recency). Read-ahead of sequential scans (sst_read.c): the later
 * lookup then finds both in the CPU cache instead of stalling on them. With `entry`, returns
 * whether the block is cached now (so that a read-ahead looks up only blocks that are there and
 * never counts a miss the real read will count again); without, false. */
bool block_cache_prefetch(struct block_cache *c, uint64_t file_id, uint64_t offset, bool entry);
void *block_cache_value(const struct block_cache_handle *h);
/* Drops the reference taken by lookup or insert; accepts NULL. */
void block_cache_release(struct block_cache *c, struct block_cache_handle *h);
/* Drops every cached block of one file (when the file is deleted). */
void block_cache_erase_file(struct block_cache *c, uint64_t file_id);

#endif
