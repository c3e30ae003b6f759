/* bloom.c - bloom filter hashing and probing (see bloom.h). The probe sequence is
 * g_i = h1 + i * h2 (32-bit wrap), mapped onto [0, nbits) by multiply-shift; h1 and h2 are the
 * low and high halves of the key's 64-bit hash. Frozen: files on disk depend on it. */
#include "storage/engine/bloom.h"

#include "storage/coding.h"

uint64_t bloom_hash(const void *data, size_t len, uint64_t seed)
{
    const uint64_t m = 0xc6a4a7935bd1e995ull;
    const int r = 47;
    const uint8_t *p = data;
    uint64_t h = seed ^ (len * m);
    size_t nblocks = len / 8;
    for (size_t i = 0; i < nblocks; i++) {
        uint64_t k = coding_get_le64(p + i * 8); /* the same hash on every host */
        k *= m;
        k ^= k >> r;
        k *= m;
        h ^= k;
        h *= m;
    }
    const uint8_t *t = p + nblocks * 8;
    switch (len & 7) {
    case 7:
        h ^= (uint64_t)t[6] << 48;
        /* fall through */
    case 6:
        h ^= (uint64_t)t[5] << 40;
        /* fall through */
    case 5:
        h ^= (uint64_t)t[4] << 32;
        /* fall through */
    case 4:
        h ^= (uint64_t)t[3] << 24;
        /* fall through */
    case 3:
        h ^= (uint64_t)t[2] << 16;
        /* fall through */
    case 2:
        h ^= (uint64_t)t[1] << 8;
        /* fall through */
    case 1:
        h ^= (uint64_t)t[0];
        h *= m;
    }
    h ^= h >> r;
    h *= m;
    h ^= h >> r;
    return h;
}

uint32_t bloom_bits_for(size_t nkeys)
{
    uint64_t bits = (uint64_t)nkeys * BLOOM_BITS_PER_KEY;
    if (bits < 64)
        bits = 64;
    if (bits > (1ull << 32) - 64)
        bits = (1ull << 32) - 64;
    return (uint32_t)((bits + 63) / 64 * 64);
}

static inline uint32_t bloom_map(uint32_t x, uint32_t nbits)
{
    return (uint32_t)(((uint64_t)x * nbits) >> 32);
}

void bloom_add(uint8_t *bits, uint32_t nbits, unsigned probes, uint64_t h)
{
    uint32_t h1 = (uint32_t)h, h2 = (uint32_t)(h >> 32);
    for (unsigned i = 0; i < probes; i++) {
        uint32_t b = bloom_map(h1 + i * h2, nbits);
        bits[b >> 3] |= (uint8_t)(1u << (b & 7));
    }
}

bool bloom_may_contain(const uint8_t *bits, uint32_t nbits, unsigned probes, uint64_t h)
{
    uint32_t h1 = (uint32_t)h, h2 = (uint32_t)(h >> 32);
    for (unsigned i = 0; i < probes; i++) {
        uint32_t b = bloom_map(h1 + i * h2, nbits);
        if (!(bits[b >> 3] & (1u << (b & 7))))
            return false;
    }
    return true;
}
