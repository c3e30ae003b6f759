/* memstore.c - skiplist over an arena (see memstore.h).
 *
 * Invariants: (1) level-0 links list every node in cell_compare() order; (2) a node and the
 * bytes it points at never change after the release-store that links it at level 0, so readers
 * that load links with acquire semantics see complete nodes without a lock; (3) the arena only
 * grows; everything is freed with the memstore; (4) bytes == sum of the sizes of inserted nodes
 * (0 when empty).
 *
 * Locking: one writer at a time (caller's mutex); readers lock-free. Statistics are relaxed
 * atomics. */
#include "storage/engine/memstore.h"

#include "storage/engine/bloom.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MS_MAX_HEIGHT  12
#define MS_CHUNK_BYTES (256u << 10)

/* k0/k1 hold the first 16 bytes of the row (big-endian, zero-padded) so most comparisons in a
 * search are two integer compares on the node's first cache line. */
struct ms_node {
    uint64_t k0, k1;
    uint64_t height;
    _Atomic(struct ms_node *) next[]; /* height entries, then the struct cell, then its bytes */
};

/* Nodes start on a cache line: k0, k1 and the first links of most nodes share one line. */
#define MS_NODE_ALIGN 64

static inline struct cell *ms_cell(const struct ms_node *n)
{
    return (struct cell *)(uintptr_t)&n->next[n->height];
}

static inline void ms_row_prefix(const uint8_t *row, uint32_t len, uint64_t *k0, uint64_t *k1)
{
    uint8_t b[16] = {0};
    memcpy(b, row, len < 16 ? len : 16);
    uint64_t a = 0, c = 0;
    for (int i = 0; i < 8; i++) {
        a = a << 8 | b[i];
        c = c << 8 | b[8 + i];
    }
    *k0 = a;
    *k1 = c;
}

/* cell_compare(&n->c, target) with the target's prefix precomputed. */
static inline int ms_cmp(const struct ms_node *n, uint64_t k0, uint64_t k1,
                         const struct cell *target)
{
    if (n->k0 != k0)
        return n->k0 < k0 ? -1 : 1;
    if (n->k1 != k1)
        return n->k1 < k1 ? -1 : 1;
    return cell_compare(ms_cell(n), target);
}

struct ms_chunk {
    struct ms_chunk *prev;
    size_t used;
    size_t cap;
    _Alignas(MS_NODE_ALIGN) uint8_t data[];
};

struct memstore {
    atomic_int refs;
    struct ms_chunk *chunk;
    struct ms_node *head; /* sentinel with MS_MAX_HEIGHT links */
    atomic_int height;
    uint32_t rnd;
    atomic_size_t bytes;
    atomic_uint_fast64_t count;
    atomic_uint_fast64_t min_seq;
    atomic_uint_fast64_t max_seq;
    /* row bloom filter: set by the writer before a cell is linked (relaxed stores; readers
     * reach it through the publication of the cell's seq) */
    _Atomic uint64_t *bloom;
    uint32_t bloom_bits;
    const uint8_t *last_row; /* the last row added to the bloom (writer only) */
    uint32_t last_row_len;
};

#define MS_BLOOM_PROBES 4

static void ms_bloom_probe(uint64_t h, uint32_t nbits, uint32_t *bit, int i)
{
    uint64_t h2 = (h >> 33) | (h << 31);
    *bit = (uint32_t)((h + (uint64_t)i * h2) % nbits);
}

bool memstore_may_contain_row(const struct memstore *m, const uint8_t *row, size_t len)
{
    if (!m->bloom)
        return true;
    uint64_t h = bloom_hash_row(row, len);
    for (int i = 0; i < MS_BLOOM_PROBES; i++) {
        uint32_t b;
        ms_bloom_probe(h, m->bloom_bits, &b, i);
        if (!(atomic_load_explicit(&m->bloom[b / 64], memory_order_relaxed) & (1ull << (b % 64))))
            return false;
    }
    return true;
}

static void *ms_alloc(struct memstore *m, size_t n)
{
    n = (n + MS_NODE_ALIGN - 1) & ~(size_t)(MS_NODE_ALIGN - 1);
    struct ms_chunk *c = m->chunk;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > MS_CHUNK_BYTES / 4 ? n : MS_CHUNK_BYTES;
        struct ms_chunk *nc = aligned_alloc(MS_NODE_ALIGN, sizeof(*nc) + cap);
        if (!nc)
            return NULL;
        nc->used = 0;
        nc->cap = cap;
        if (cap == n && c) {
            /* a big cell gets its own chunk, kept behind the current one */
            nc->prev = c->prev;
            c->prev = nc;
        } else {
            nc->prev = c;
            m->chunk = nc;
        }
        c = nc;
    }
    void *p = c->data + c->used;
    c->used += n;
    return p;
}

int memstore_new(struct memstore **out, uint32_t bloom_bits, struct ct_err *err)
{
    struct memstore *m = calloc(1, sizeof(*m));
    if (!m)
        return ct_err_set(err, CT_ENOMEM, "out of memory creating a memstore");
    if (bloom_bits) {
        m->bloom_bits = (bloom_bits + 63) & ~63u;
        m->bloom = calloc(m->bloom_bits / 64, sizeof(uint64_t));
        if (!m->bloom) {
            free(m);
            return ct_err_set(err, CT_ENOMEM, "out of memory creating a memstore");
        }
    }
    atomic_init(&m->refs, 1);
    atomic_init(&m->height, 1);
    atomic_init(&m->min_seq, UINT64_MAX);
    m->rnd = 0x9e3779b9u ^ (uint32_t)(uintptr_t)m;
    m->head =
        ms_alloc(m, sizeof(struct ms_node) + MS_MAX_HEIGHT * sizeof(void *) + sizeof(struct cell));
    if (!m->head) {
        free(m->bloom);
        free(m);
        return ct_err_set(err, CT_ENOMEM, "out of memory creating a memstore");
    }
    memset(m->head, 0,
           sizeof(struct ms_node) + MS_MAX_HEIGHT * sizeof(void *) + sizeof(struct cell));
    m->head->height = MS_MAX_HEIGHT;
    *out = m;
    return CT_OK;
}

void memstore_ref(struct memstore *m)
{
    atomic_fetch_add(&m->refs, 1);
}

void memstore_unref(struct memstore *m)
{
    if (!m || atomic_fetch_sub(&m->refs, 1) != 1)
        return;
    struct ms_chunk *c = m->chunk;
    while (c) {
        struct ms_chunk *p = c->prev;
        free(c);
        c = p;
    }
    free(m->bloom);
    free(m);
}

static int ms_random_height(struct memstore *m)
{
    int h = 1;
    for (;;) {
        m->rnd ^= m->rnd << 13;
        m->rnd ^= m->rnd >> 17;
        m->rnd ^= m->rnd << 5;
        if (h >= MS_MAX_HEIGHT || (m->rnd & 3) != 0)
            break;
        h++;
    }
    return h;
}

static inline struct ms_node *ms_next(const struct ms_node *n, int level)
{
    return atomic_load_explicit(&((struct ms_node *)n)->next[level], memory_order_acquire);
}

/* Last node < target at each level into prev (if non-NULL); returns the node after the level-0
 * predecessor (first node >= target, or NULL). */
static struct ms_node *ms_find_ge(const struct memstore *m, const struct cell *target,
                                  struct ms_node **prev)
{
    struct ms_node *x = m->head;
    int level = atomic_load_explicit(&((struct memstore *)m)->height, memory_order_relaxed) - 1;
    uint64_t k0, k1;
    ms_row_prefix(target->row, target->row_len, &k0, &k1);
    const struct ms_node *known_ge = NULL; /* compared >= target already */
    for (;;) {
        struct ms_node *nx = ms_next(x, level);
        if (nx && nx != known_ge && ms_cmp(nx, k0, k1, target) < 0) {
            x = nx;
            continue;
        }
        known_ge = nx;
        if (prev)
            prev[level] = x;
        if (level == 0)
            return nx;
        level--;
    }
}

/* Last node < target (head if none). */
static struct ms_node *ms_find_lt(const struct memstore *m, const struct cell *target)
{
    struct ms_node *x = m->head;
    int level = atomic_load_explicit(&((struct memstore *)m)->height, memory_order_relaxed) - 1;
    uint64_t k0, k1;
    ms_row_prefix(target->row, target->row_len, &k0, &k1);
    const struct ms_node *known_ge = NULL;
    for (;;) {
        struct ms_node *nx = ms_next(x, level);
        if (nx && nx != known_ge && ms_cmp(nx, k0, k1, target) < 0) {
            x = nx;
            continue;
        }
        known_ge = nx;
        if (level == 0)
            return x;
        level--;
    }
}

static struct ms_node *ms_find_last(const struct memstore *m)
{
    struct ms_node *x = m->head;
    int level = atomic_load_explicit(&((struct memstore *)m)->height, memory_order_relaxed) - 1;
    for (;;) {
        struct ms_node *nx = ms_next(x, level);
        if (nx) {
            x = nx;
            continue;
        }
        if (level == 0)
            return x;
        level--;
    }
}

int memstore_add(struct memstore *m, const struct cell *c, struct ct_err *err)
{
    struct ms_node *prev[MS_MAX_HEIGHT];
    ms_find_ge(m, c, prev);
    int h = ms_random_height(m);
    int cur = atomic_load_explicit(&m->height, memory_order_relaxed);
    size_t need = sizeof(struct ms_node) + (size_t)h * sizeof(void *) + sizeof(struct cell) +
                  c->row_len + c->qual_len + c->value_len;
    struct ms_node *n = ms_alloc(m, need);
    if (!n)
        return ct_err_set(err, CT_ENOMEM, "out of memory adding a %zu-byte cell to a memstore",
                          need);
    n->height = (uint64_t)h;
    struct cell *nc = ms_cell(n);
    uint8_t *p = (uint8_t *)(nc + 1);
    ms_row_prefix(c->row, c->row_len, &n->k0, &n->k1);
    *nc = *c;
    if (c->row_len)
        memcpy(p, c->row, c->row_len);
    nc->row = p;
    p += c->row_len;
    if (c->qual_len)
        memcpy(p, c->qual, c->qual_len);
    nc->qual = p;
    p += c->qual_len;
    if (c->value_len)
        memcpy(p, c->value, c->value_len);
    nc->value = p;
    if (m->bloom && (!m->last_row || m->last_row_len != c->row_len ||
                     memcmp(m->last_row, c->row, c->row_len) != 0)) {
        uint64_t bh = bloom_hash_row(c->row, c->row_len);
        for (int i = 0; i < MS_BLOOM_PROBES; i++) {
            uint32_t b;
            ms_bloom_probe(bh, m->bloom_bits, &b, i);
            uint64_t w = atomic_load_explicit(&m->bloom[b / 64], memory_order_relaxed);
            atomic_store_explicit(&m->bloom[b / 64], w | (1ull << (b % 64)), memory_order_relaxed);
        }
        m->last_row = nc->row;
        m->last_row_len = c->row_len;
    }
    if (h > cur) {
        for (int i = cur; i < h; i++)
            prev[i] = m->head;
        /* readers seeing the new height before the links only find NULL there: fine */
        atomic_store_explicit(&m->height, h, memory_order_relaxed);
    }
    for (int i = 0; i < h; i++) {
        atomic_store_explicit(&n->next[i], ms_next(prev[i], i), memory_order_relaxed);
        atomic_store_explicit(&prev[i]->next[i], n, memory_order_release);
    }
    atomic_fetch_add_explicit(&m->bytes, need, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->count, 1, memory_order_relaxed);
    if (c->seq < atomic_load_explicit(&m->min_seq, memory_order_relaxed))
        atomic_store_explicit(&m->min_seq, c->seq, memory_order_relaxed);
    if (c->seq > atomic_load_explicit(&m->max_seq, memory_order_relaxed))
        atomic_store_explicit(&m->max_seq, c->seq, memory_order_relaxed);
    return CT_OK;
}

size_t memstore_bytes(const struct memstore *m)
{
    return atomic_load_explicit(&((struct memstore *)m)->bytes, memory_order_relaxed);
}

uint64_t memstore_count(const struct memstore *m)
{
    return atomic_load_explicit(&((struct memstore *)m)->count, memory_order_relaxed);
}

uint64_t memstore_min_seq(const struct memstore *m)
{
    return atomic_load_explicit(&((struct memstore *)m)->min_seq, memory_order_relaxed);
}

uint64_t memstore_max_seq(const struct memstore *m)
{
    return atomic_load_explicit(&((struct memstore *)m)->max_seq, memory_order_relaxed);
}

void memstore_iter_init(struct memstore_iter *it, struct memstore *m)
{
    it->m = m;
    it->node = NULL;
}

void memstore_iter_seek_first(struct memstore_iter *it)
{
    it->node = ms_next(it->m->head, 0);
}

void memstore_iter_seek_last(struct memstore_iter *it)
{
    struct ms_node *n = ms_find_last(it->m);
    it->node = n == it->m->head ? NULL : n;
}

void memstore_iter_seek(struct memstore_iter *it, const struct cell *target)
{
    it->node = ms_find_ge(it->m, target, NULL);
}

void memstore_iter_seek_for_prev(struct memstore_iter *it, const struct cell *target)
{
    struct ms_node *lt = ms_find_lt(it->m, target);
    struct ms_node *nx = ms_next(lt, 0);
    if (nx && cell_compare(ms_cell(nx), target) == 0) {
        it->node = nx;
        return;
    }
    it->node = lt == it->m->head ? NULL : lt;
}

void memstore_iter_next(struct memstore_iter *it)
{
    it->node = ms_next(it->node, 0);
}

void memstore_iter_prev(struct memstore_iter *it)
{
    const struct ms_node *cur = it->node;
    struct ms_node *lt = ms_find_lt(it->m, ms_cell(cur));
    it->node = lt == it->m->head ? NULL : lt;
}

const struct cell *memstore_iter_cell(const struct memstore_iter *it)
{
    return ms_cell(it->node);
}
