/* bloom.h - the bloom filter of block files (engine-internal): a standard bloom filter probed
 * with Kirsch-Mitzenmacher double hashing of one 64-bit hash per key. About 10 bits and 7 probes
 * per key give the 1% false-positive rate docs/storage-contract.md, "Family attributes", asks for.
 * Its on-disk layout is part of the block file format (sst_format.h); the hash function and probe
 * sequence are therefore frozen.
 *
 * Threading: pure functions over caller memory. */
#ifndef CT_ENGINE_BLOOM_H
#define CT_ENGINE_BLOOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BLOOM_BITS_PER_KEY 10
#define BLOOM_PROBES       7
#define BLOOM_SEED         0x9747b28c5bd1e995ull

/* MurmurHash64A of data[0..len) with `seed`. Chaining seeds hashes a composite key:
 * bloom_hash(qual, ql, bloom_hash(row, rl, BLOOM_SEED)). */
uint64_t bloom_hash(const void *data, size_t len, uint64_t seed);
static inline uint64_t bloom_hash_row(const uint8_t *row, size_t len)
{
    return bloom_hash(row, len, BLOOM_SEED);
}
static inline uint64_t bloom_hash_rowcol(const uint8_t *row, size_t rlen, const uint8_t *qual,
                                         size_t qlen)
{
    return bloom_hash(qual, qlen, bloom_hash(row, rlen, BLOOM_SEED) ^ 0x5bd1e9955bd1e995ull);
}
/* The number of bits for nkeys keys (a multiple of 64, at least 64). */
uint32_t bloom_bits_for(size_t nkeys);
/* Sets the probe bits of each hash in bits (nbits/8 bytes, zeroed by the caller). */
void bloom_add(uint8_t *bits, uint32_t nbits, unsigned probes, uint64_t h);
/* False means the key was certainly not added. */
bool bloom_may_contain(const uint8_t *bits, uint32_t nbits, unsigned probes, uint64_t h);

#endif
