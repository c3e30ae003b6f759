/* memstore.c - skiplist over an arena (see memstore.h).
 *
 * Invariants: (1) level-0 links list every node in cell_compare() order; (2) a node, its cell
 * and the bytes the cell points at never change after the release-store that links the node at
 * level 0, so readers that load links with acquire semantics see complete nodes without a lock;
 * (3) the arenas only grow; everything is freed with the memstore; (4) bytes == sum of the sizes
 * of inserted nodes and cells (0 when empty); (5) the writer's finger: `last` is the last
 * inserted node and finger[i] (i < height) is a node of level i (or the head) not after `last`:
 * `last` itself below its height, its predecessors found by that insert above. Nodes are never
 * removed, so a finger stays valid; an insert after `last` searches from it. (6) The writer's
 * row hints: a hint (h, node) means `node` holds the greatest cell of its row in the memstore
 * and h is that row's hash. A cell that goes after the greatest cell of a row it hints, with
 * height 1, is linked right after that node with no search (the node's level-0 successor is of
 * a later row, so it is greater); this is how time series grow (each row gets its next
 * timestamp), and a sorted batch spread over many rows would otherwise search through each
 * row's cells. The hints are a direct-mapped cache: an entry is replaced only by a node known
 * to be its row's greatest (it hinted that row and the new cell is greater, or its level-0
 * successor is of another row), so every entry satisfies (6); a row without an entry just
 * takes the search. Such inserts leave `last` and the finger as they were: they add level-0
 * links only, so (5) still holds. An entry may also name the row's greatest node of height
 * >= 2 (`tall`, NULL when not known): a height-2 cell after the row's greatest and after
 * `last` links below it at level 1 without a search (its level-1 successor is of a later row;
 * being after `last`, the new level-1 node does not come between a finger and `last`).
 *
 * Layout (profiled: a random insert into a 64 MiB memstore was ~40% cache misses in the
 * search): search nodes are small and packed together in their own arena chunks (the first 16
 * row bytes as two integers, the cell pointer, the links: 32-40 bytes for most nodes), and the
 * cell with its row, qualifier and value lives in a separate data arena. A search compares the
 * integer prefix and only reads the cell on a tie, so the nodes a search walks are ~6x denser
 * in the cache than node+value records. While walking right at one level the search prefetches
 * the candidate of the level below.
 *
 * Locking: one writer at a time (caller's mutex); readers lock-free. Statistics are relaxed
 * atomics. */
#include "storage/engine/memstore.h"

#include "storage/engine/bloom.h"
#include "storage/hash.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MS_MAX_HEIGHT  12
#define MS_CHUNK_BYTES (256u << 10)
#define MS_HINT_MIN    256u       /* row hint slots at first (a power of two) */
#define MS_HINT_MAX    (1u << 15) /* most row hint slots: 768 KiB per memstore */

/* k0/k1 hold the first 16 bytes of the row (big-endian, zero-padded) so most comparisons in a
 * search are two integer compares on the node itself. */
struct ms_node {
    uint64_t k0, k1;
    const struct cell *cell;          /* in the data arena; NULL for the head */
    _Atomic(struct ms_node *) next[]; /* the node's height of links */
};

static inline struct cell *ms_cell(const struct ms_node *n)
{
    return (struct cell *)(uintptr_t)n->cell;
}

static inline void ms_row_prefix(const uint8_t *row, uint32_t len, uint64_t *k0, uint64_t *k1)
{
    if (len >= 16) {
        *k0 = cell_load_be64(row);
        *k1 = cell_load_be64(row + 8);
        return;
    }
    uint8_t b[16] = {0};
    memcpy(b, row, len < 16 ? len : 16);
    *k0 = cell_load_be64(b); /* big-endian: integer order is byte order */
    *k1 = cell_load_be64(b + 8);
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

/* An arena: a list of chunks, bump-allocated. */
struct ms_chunk {
    struct ms_chunk *prev;
    size_t used;
    size_t cap;
    _Alignas(16) uint8_t data[];
};

struct memstore {
    atomic_int refs;
    struct ms_chunk *nodes; /* search nodes */
    struct ms_chunk *data;  /* cells and their bytes */
    struct ms_node *head;   /* sentinel with MS_MAX_HEIGHT links */
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
    /* the writer's finger (invariant (5)) */
    struct ms_node *last;
    struct ms_node *finger[MS_MAX_HEIGHT];
    /* the writer's row hints (invariant (6)); NULL until the first insert or if out of memory */
    struct ms_hint *hints;
    uint32_t nhints;      /* slots, a power of two */
    uint32_t hint_misses; /* inserts whose row had no entry, since the last growth */
};

struct ms_hint {
    uint64_t hash; /* ms_row_hash() of the node's row */
    struct ms_node *node;
    struct ms_node *tall; /* NULL or the row's greatest node of height >= 2 */
};

#define MS_BLOOM_PROBES 4

static void ms_bloom_probe(uint64_t h, uint32_t nbits, uint32_t *bit, int i)
{
    uint64_t h2 = (h >> 33) | (h << 31);
    *bit = (uint32_t)((h + (uint64_t)i * h2) % nbits);
}

bool memstore_may_contain_row(const struct memstore *m, const uint8_t *row, size_t len)
{
    return !m->bloom || memstore_may_contain_row_hash(m, bloom_hash_row(row, len));
}

bool memstore_may_contain_row_hash(const struct memstore *m, uint64_t h)
{
    if (!m->bloom)
        return true;
    for (int i = 0; i < MS_BLOOM_PROBES; i++) {
        uint32_t b;
        ms_bloom_probe(h, m->bloom_bits, &b, i);
        if (!(atomic_load_explicit(&m->bloom[b / 64], memory_order_relaxed) & (1ull << (b % 64))))
            return false;
    }
    return true;
}

/* Bump allocation of n bytes (8-aligned) from arena *a; a big request gets a chunk of its own
 * kept behind the current one. NULL when out of memory. */
static void *ms_alloc(struct ms_chunk **a, size_t n)
{
    n = (n + 7) & ~(size_t)7;
    struct ms_chunk *c = *a;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > MS_CHUNK_BYTES / 4 ? n : MS_CHUNK_BYTES;
        struct ms_chunk *nc = malloc(sizeof(*nc) + cap);
        if (!nc)
            return NULL;
        nc->used = 0;
        nc->cap = cap;
        if (cap == n && c) {
            nc->prev = c->prev;
            c->prev = nc;
        } else {
            nc->prev = c;
            *a = nc;
        }
        c = nc;
    }
    void *p = c->data + c->used;
    c->used += n;
    return p;
}

static void ms_free_chunks(struct ms_chunk *c)
{
    while (c) {
        struct ms_chunk *p = c->prev;
        free(c);
        c = p;
    }
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
    size_t hsize = sizeof(struct ms_node) + MS_MAX_HEIGHT * sizeof(void *);
    m->head = ms_alloc(&m->nodes, hsize);
    if (!m->head) {
        free(m->bloom);
        free(m);
        return ct_err_set(err, CT_ENOMEM, "out of memory creating a memstore");
    }
    memset(m->head, 0, hsize);
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
    ms_free_chunks(m->nodes);
    ms_free_chunks(m->data);
    free(m->bloom);
    free(m->hints);
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
        /* the candidate one level down (if the search stops here) is read from x's links, which
         * are in the cache: start fetching it while nx is compared */
        if (level > 0)
            __builtin_prefetch(ms_next(x, level - 1));
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

_Static_assert(MEMSTORE_PATH_MAX == MS_MAX_HEIGHT, "an iterator's path holds every level");

/* Last node < target (head if none), searched from the iterator's path as a finger (invariant of
 * struct memstore_iter: path[i] is a node of height > i, or the head), and the new path stored.
 * The search starts at the lowest level i whose path node is still a predecessor of the target
 * at level i (path[i] < target and its level-i successor is not), so a target next to the last
 * one costs a few comparisons; with no such level it starts from the head. Starting from any
 * node below the target at a level it has is a correct skiplist search; nodes linked since the
 * path was stored are found by walking right like any others. Entries above the starting level
 * keep older nodes: they stay nodes of their height, checked again before any use. */
static struct ms_node *ms_find_lt_path(const struct memstore *m, const struct cell *target,
                                       struct memstore_iter *it)
{
    uint64_t k0, k1;
    ms_row_prefix(target->row, target->row_len, &k0, &k1);
    struct ms_node *x = m->head;
    int level = atomic_load_explicit(&((struct memstore *)m)->height, memory_order_relaxed) - 1;
    int top = level;
    for (int i = 0; i < it->path_h && i <= top; i++) {
        struct ms_node *p = (struct ms_node *)(uintptr_t)it->path[i];
        if (p != m->head && ms_cmp(p, k0, k1, target) >= 0)
            continue; /* past the target: a level up is further left */
        struct ms_node *nx = ms_next(p, i);
        if (nx && ms_cmp(nx, k0, k1, target) < 0)
            continue; /* the target is further right: a level up goes there faster */
        x = p;
        level = i;
        break;
    }
    if (level == top)
        it->path_h = top + 1;
    const struct ms_node *known_ge = NULL;
    for (;;) {
        struct ms_node *nx = ms_next(x, level);
        if (level > 0)
            __builtin_prefetch(ms_next(x, level - 1));
        if (nx && nx != known_ge && ms_cmp(nx, k0, k1, target) < 0) {
            x = nx;
            continue;
        }
        known_ge = nx;
        it->path[level] = x;
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

/* Walks right at one level from x (< target) to the last node < target. */
static inline struct ms_node *ms_walk(struct ms_node *x, int level, uint64_t k0, uint64_t k1,
                                      const struct cell *target)
{
    struct ms_node *nx;
    while ((nx = ms_next(x, level)) && ms_cmp(nx, k0, k1, target) < 0)
        x = nx;
    return x;
}

/* Predecessors of target at every level below cur into prev, searched from the finger: REQUIRES
 * the last inserted node < target, so every finger[i] is < target (invariant (5)). Climbs while
 * the finger's successor is still before the target, then searches down from there. Above the
 * level where the climb stopped the finger already is the predecessor: a node X of such a level
 * with finger < X < target would be after `last` (the finger precedes `last` there) and, being
 * on every lower level too, would be the stopping level's successor of its finger, before the
 * target, so the climb would have gone on. A target next to the previous insert costs a few
 * comparisons instead of a search from the head. */
static void ms_find_from_finger(struct memstore *m, uint64_t k0, uint64_t k1,
                                const struct cell *target, int cur, struct ms_node **prev)
{
    int top = 0;
    while (top + 1 < cur) {
        struct ms_node *nx = ms_next(m->finger[top], top);
        if (!nx || ms_cmp(nx, k0, k1, target) >= 0)
            break;
        top++;
    }
    struct ms_node *x = m->finger[top];
    for (int level = top;; level--) {
        struct ms_node *from = x;
        x = ms_walk(x, level, k0, k1, target);
        prev[level] = x;
        if (level == 0)
            break;
        /* x did not move: the finger one level down is at least as far right */
        if (x == from && from == m->finger[level])
            x = m->finger[level - 1];
    }
    for (int level = top + 1; level < cur; level++)
        prev[level] = m->finger[level];
}

/* Whether node n's cell is of row (row, len), whose 16-byte prefix is k0, k1. */
static inline bool ms_same_row(const struct ms_node *n, uint64_t k0, uint64_t k1,
                               const uint8_t *row, uint32_t len)
{
    const struct cell *nc = n->cell;
    return n->k0 == k0 && n->k1 == k1 && nc->row_len == len &&
           (len <= 16 || !memcmp(nc->row + 16, row + 16, len - 16));
}

/* The hint table's hash of a row whose 16-byte prefix is k0, k1: storage/hash.h's mixing step,
 * started from the prefix the caller has already loaded (hash_bytes would load it again). */
static uint64_t ms_row_hash(const uint8_t *row, uint32_t len, uint64_t k0, uint64_t k1)
{
    uint64_t h = hash_mix(k0 ^ 0xA0761D6478BD642FULL, k1 ^ 0xE7037ED1A0B428DBULL ^ len);
    uint32_t i = 16;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, row + i, 8);
        h = hash_mix(h ^ w, 0x8EBC6AF09C88C6E3ULL);
    }
    if (i < len) {
        uint64_t w = 0;
        memcpy(&w, row + i, len - i);
        h = hash_mix(h ^ w ^ 0x589965CC75374CC3ULL, 0x1D8E4E27C47D124FULL);
    }
    return h;
}

/* Grows the hint table (a cache: entries that collide after rehashing are dropped). */
static void ms_hints_grow(struct memstore *m)
{
    uint32_t n = m->nhints ? m->nhints * 2 : MS_HINT_MIN;
    struct ms_hint *nh = calloc(n, sizeof(*nh));
    if (!nh)
        return; /* keep the old table (or none): hints only save time */
    for (uint32_t i = 0; i < m->nhints; i++)
        if (m->hints[i].node)
            nh[m->hints[i].hash & (n - 1)] = m->hints[i];
    free(m->hints);
    m->hints = nh;
    m->nhints = n;
    m->hint_misses = 0;
}

int memstore_add(struct memstore *m, const struct cell *c, struct ct_err *err)
{
    struct ms_node *prev[MS_MAX_HEIGHT];
    int cur = atomic_load_explicit(&m->height, memory_order_relaxed);
    uint64_t k0, k1;
    ms_row_prefix(c->row, c->row_len, &k0, &k1);
    if (!m->hints || (m->hint_misses > m->nhints / 2 && m->nhints < MS_HINT_MAX))
        ms_hints_grow(m);
    uint64_t rh = ms_row_hash(c->row, c->row_len, k0, k1);
    struct ms_hint *hs = m->hints ? &m->hints[rh & (m->nhints - 1)] : NULL;
    /* the greatest cell of c's row, if the hints know it (invariant (6)) */
    bool row_known =
        hs && hs->node && hs->hash == rh && ms_same_row(hs->node, k0, k1, c->row, c->row_len);
    bool after_hint = row_known && cell_compare_same_row(ms_cell(hs->node), c) < 0;
    int h = ms_random_height(m);
    bool searched = true;
    bool after_last = m->last && ms_cmp(m->last, k0, k1, c) < 0;
    if (after_hint && h == 1) {
        prev[0] = hs->node; /* its successor is of a later row: no search */
        searched = false;
    } else if (after_hint && h == 2 && hs->tall && h <= cur && after_last) {
        /* level 1: the row's greatest node of height >= 2 precedes c and its level-1
         * successor is of a later row; after `last`, so the finger stays right (6) */
        prev[0] = hs->node;
        prev[1] = hs->tall;
        searched = false;
    } else if (after_last) {
        /* an insert after the previous one (appends, sorted batches) searches from the finger */
        ms_find_from_finger(m, k0, k1, c, cur, prev);
    } else {
        ms_find_ge(m, c, prev);
    }
    size_t nsize = sizeof(struct ms_node) + (size_t)h * sizeof(void *);
    size_t dsize = sizeof(struct cell) + c->row_len + c->qual_len + c->value_len;
    struct ms_node *n = ms_alloc(&m->nodes, nsize);
    struct cell *nc = n ? ms_alloc(&m->data, dsize) : NULL;
    if (!nc)
        return ct_err_set(err, CT_ENOMEM, "out of memory adding a %zu-byte cell to a memstore",
                          nsize + dsize);
    uint8_t *p = (uint8_t *)(nc + 1);
    n->k0 = k0;
    n->k1 = k1;
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
    n->cell = nc;
    /* a row the hints know is in the filter already */
    if (m->bloom && !row_known &&
        (!m->last_row || m->last_row_len != c->row_len ||
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
    if (searched) { /* the finger: the new node below its height, its predecessors above */
        int top = h > cur ? h : cur;
        for (int i = 0; i < top; i++)
            m->finger[i] = i < h ? n : prev[i];
        m->last = n;
    }
    if (hs) { /* keep (6): only a row's greatest cell goes into its entry */
        if (row_known) {
            if (after_hint) {
                hs->node = n;
                if (h >= 2)
                    hs->tall = n;
            } else if (h >= 2) {
                hs->tall = NULL; /* a tall node below the greatest: not known which is last */
            }
        } else {
            struct ms_node *nx = ms_next(n, 0);
            if (!nx || !ms_same_row(nx, k0, k1, c->row, c->row_len)) {
                hs->hash = rh;
                hs->node = n;
                hs->tall = h >= 2 ? n : NULL;
            }
            m->hint_misses++;
        }
    }
    atomic_fetch_add_explicit(&m->bytes, nsize + dsize, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->count, 1, memory_order_relaxed);
    if (c->seq < atomic_load_explicit(&m->min_seq, memory_order_relaxed))
        atomic_store_explicit(&m->min_seq, c->seq, memory_order_relaxed);
    if (c->seq > atomic_load_explicit(&m->max_seq, memory_order_relaxed))
        atomic_store_explicit(&m->max_seq, c->seq, memory_order_relaxed);
    return CT_OK;
}

bool memstore_links_ordered(const struct memstore *m)
{
    int height = atomic_load_explicit(&((struct memstore *)m)->height, memory_order_relaxed);
    for (int level = 0; level < height; level++) {
        const struct ms_node *x = ms_next(m->head, level), *nx;
        for (; x && (nx = ms_next(x, level)); x = nx)
            if (cell_compare(ms_cell(x), ms_cell(nx)) >= 0)
                return false;
    }
    return true;
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

/* Prefetches for an in-order walk: the node after n (read now: it was prefetched one step
 * earlier) has its cell (struct and first row bytes) and its successor fetched, so a walk takes
 * about one cache miss per step's worth of work instead of two in a row (node, then cell).
 * Profiled: readseq over a 64 MiB memstore was dominated by those two misses per cell. */
static inline void ms_walk_prefetch(const struct ms_node *n)
{
    const struct ms_node *nx = ms_next(n, 0);
    if (!nx)
        return;
    const uint8_t *c = (const uint8_t *)nx->cell;
    __builtin_prefetch(c);
    __builtin_prefetch(c + 64);
    __builtin_prefetch(ms_next(nx, 0));
}

void memstore_iter_init(struct memstore_iter *it, struct memstore *m)
{
    it->m = m;
    it->node = NULL;
    it->path_h = 0;
}

void memstore_iter_seek_first(struct memstore_iter *it)
{
    it->node = ms_next(it->m->head, 0);
    if (it->node)
        ms_walk_prefetch(it->node);
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

void memstore_iter_seek_near(struct memstore_iter *it, const struct cell *target)
{
    it->node = ms_next(ms_find_lt_path(it->m, target, it), 0);
}

void memstore_iter_seek_for_prev(struct memstore_iter *it, const struct cell *target)
{
    struct ms_node *lt = ms_find_lt_path(it->m, target, it);
    struct ms_node *nx = ms_next(lt, 0);
    if (nx && cell_compare(ms_cell(nx), target) == 0) {
        it->node = nx;
        return;
    }
    it->node = lt == it->m->head ? NULL : lt;
}

void memstore_iter_next(struct memstore_iter *it)
{
    struct ms_node *n = ms_next(it->node, 0);
    it->node = n;
    if (n)
        ms_walk_prefetch(n);
}

void memstore_iter_prev(struct memstore_iter *it)
{
    const struct ms_node *cur = it->node;
    struct ms_node *lt = ms_find_lt_path(it->m, ms_cell(cur), it);
    it->node = lt == it->m->head ? NULL : lt;
}

const struct cell *memstore_iter_cell(const struct memstore_iter *it)
{
    return ms_cell(it->node);
}
