/* hash.h - the one hash function of in-memory tables and the one hash-set built on it, shared by
 * every layer (on-disk hashes - the bloom filter's, the compressed cell's qualifier - are part of
 * their formats and stay with them).
 *
 * hash_bytes(): 16 bytes per step through a 64x64->128-bit multiply (the wyhash construction),
 * every input byte reaching the low bits a table masks. A random seed per table owner keeps
 * clients from aiming for collisions where keys come from the network.
 *
 * struct hashset: an open-addressing index (linear probing, power-of-two capacity, load <= 1/2)
 * of entries the caller stores itself, in an array of its own: a slot holds an entry's index + 1,
 * 0 is empty. The set never sees keys; the caller hashes them and compares them (hashset_find
 * takes an equality callback, inlined where the callback is a visible static function, so hot
 * lookups cost no indirect call). No deletion: a set is emptied whole (hashset_clear).
 * Invariants: (1) cap is 0 or a power of two; (2) n <= cap / 2 after hashset_reserve;
 * (3) every nonzero slot names a distinct entry.
 * Threading: none; the owner serialises. */
#ifndef CT_HASH_H
#define CT_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "storage/ct_err.h"

static inline uint64_t hash_mix(uint64_t a, uint64_t b)
{
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t hash_load64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* The hash of data[0..n) under seed (any value; 0 where keys are not chosen by clients). */
static inline uint64_t hash_bytes(const void *data, size_t n, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t h = seed ^ ((uint64_t)n * 0x9E3779B97F4A7C15ULL);
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        h = hash_mix(hash_load64(p + i) ^ 0xA0761D6478BD642FULL ^ h,
                     hash_load64(p + i + 8) ^ 0xE7037ED1A0B428DBULL);
    uint64_t a = 0, b = 0;
    size_t r = n - i;
    if (r >= 8) {
        a = hash_load64(p + i);
        b = hash_load64(p + n - 8);
    } else if (r > 0) {
        unsigned char t[8] = {0};
        memcpy(t, p + i, r);
        a = hash_load64(t);
    }
    return hash_mix(h ^ a ^ 0x8EBC6AF09C88C6E3ULL, b ^ 0x589965CC75374CC3ULL ^ (uint64_t)n);
}

/* Caller's storage: initialise to {0}; end with hashset_destroy(). Fields are read-only to
 * callers (shown so that the set can live by value inside the caller's struct). */
struct hashset {
    size_t *slot; /* cap slots: 0 empty, else entry index + 1 */
    size_t cap;   /* 0 or a power of two */
    size_t n;     /* entries indexed */
};

/* The hash of the caller's entry `index` (what it was inserted under), for rehashing. */
typedef uint64_t (*hashset_hash_fn)(void *arg, size_t index);
/* True if the caller's entry `index` has the key being looked up. */
typedef bool (*hashset_eq_fn)(void *arg, size_t index, const void *key, size_t len);

/* Makes room for one more entry (hashset_grow is its slow path): when it would pass load 1/2, the table doubles (first_cap slots,
 * a power of two, for the first) and every entry is rehashed with hash_of. CT_ENOMEM leaves the
 * set as it was. */
CT_MUST_CHECK int hashset_grow(struct hashset *s, size_t first_cap, hashset_hash_fn hash_of,
                               void *arg, struct ct_err *err);
CT_MUST_CHECK static inline int hashset_reserve(struct hashset *s, size_t first_cap,
                                                hashset_hash_fn hash_of, void *arg,
                                                struct ct_err *err)
{
    if ((s->n + 1) * 2 <= s->cap)
        return CT_OK;
    return hashset_grow(s, first_cap, hash_of, arg, err);
}

/* Looks up the key hashed to h: the index of the entry eq accepts, or -1 when there is none
 * (*free_slot then holds where hashset_insert_at puts it). REQUIRES: cap > 0 (reserve first). */
static inline long hashset_find(const struct hashset *s, uint64_t h, hashset_eq_fn eq, void *arg,
                                const void *key, size_t len, size_t *free_slot)
{
    size_t mask = s->cap - 1, k = (size_t)h & mask;
    while (s->slot[k]) {
        if (eq(arg, s->slot[k] - 1, key, len))
            return (long)(s->slot[k] - 1);
        k = (k + 1) & mask;
    }
    *free_slot = k;
    return -1;
}

/* Indexes entry `index` at free_slot (from a hashset_find that returned -1, with no insert or
 * reserve since). */
static inline void hashset_insert_at(struct hashset *s, size_t free_slot, size_t index)
{
    s->slot[free_slot] = index + 1;
    s->n++;
}

/* Forgets every entry, keeping the table's memory. */
void hashset_clear(struct hashset *s);
/* Frees the table; the set is {0} again. Accepts a zeroed set. */
void hashset_destroy(struct hashset *s);

#endif
