/* block_cache.c - the LRU block cache shared by all block files of a store (sst.h,
 * block_cache.h), HBase-style: three sections with their own LRU lists and target shares of the
 * capacity - single-access 25%, multi-access 50%, in-memory 25%. A block enters "single" (or
 * "in-memory" for IN_MEMORY families) and moves to "multi" on its second access. When a shard is
 * over capacity, the section most over its share loses its least recently used block; a section
 * under its share keeps its blocks, so in-memory blocks survive a flood of single-access reads.
 * Recency within the multi and in-memory lists is kept CLOCK-style: a hit only sets the block's
 * reference bit, and the evictor moves a referenced tail block to the front (clearing the bit)
 * instead of evicting it, so a hit costs no list surgery.
 *
 * Invariants: (1) an entry is in its shard's hash table and exactly one section list iff
 * e->in_cache; (2) e->refs counts the cache's own reference (while in_cache) plus one per
 * handle given out; the entry and its value are freed when refs reaches 0; (3) shard->bytes is
 * the sum of charges of in_cache entries, sec_bytes[s] the sum per section.
 * Locking: one mutex per shard guards everything in the shard; counters are per shard and
 * summed by block_cache_get_stats(). Small caches use one shard so that LRU order is exact. */
#include "storage/engine/block_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum {
    BC_SINGLE = 0,
    BC_MULTI = 1,
    BC_INMEM = 2,
    BC_NSECTIONS = 3,
};

static const unsigned bc_share_pct[BC_NSECTIONS] = {25, 50, 25};

struct block_cache_handle {
    struct block_cache_handle *hnext; /* hash chain */
    struct block_cache_handle *prev;  /* section LRU list (head = most recent) */
    struct block_cache_handle *next;
    struct bc_shard *shard;
    uint64_t file_id;
    uint64_t offset;
    uint64_t hash;
    void *value;
    block_cache_free_fn free_fn;
    size_t charge;
    uint32_t refs;
    uint8_t section;
    bool in_cache;
    bool referenced; /* hit since it was last put at the front of its list (second chance) */
};

struct bc_shard {
    pthread_mutex_t mu;
    struct block_cache_handle **buckets;
    size_t nbuckets; /* power of two */
    size_t count;
    struct block_cache_handle lru[BC_NSECTIONS]; /* circular list heads */
    size_t capacity;
    size_t bytes;
    size_t sec_bytes[BC_NSECTIONS];
    uint64_t hits;
    uint64_t misses;
    uint64_t evictions;
};

struct block_cache {
    size_t capacity;
    size_t nshards;
    struct bc_shard *shards;
};

static uint64_t bc_hash(uint64_t file_id, uint64_t offset)
{
    uint64_t h = file_id * 0x9e3779b97f4a7c15ull ^ offset;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

int block_cache_new(size_t capacity_bytes, struct block_cache **out, struct ct_err *err)
{
    struct block_cache *c = calloc(1, sizeof(*c));
    if (!c)
        return ct_err_set(err, CT_ENOMEM, "out of memory creating the block cache");
    c->capacity = capacity_bytes;
    c->nshards = capacity_bytes >= (32u << 20) ? 16 : 1;
    c->shards = calloc(c->nshards, sizeof(*c->shards));
    if (!c->shards) {
        free(c);
        return ct_err_set(err, CT_ENOMEM, "out of memory creating the block cache");
    }
    for (size_t i = 0; i < c->nshards; i++) {
        struct bc_shard *s = &c->shards[i];
        pthread_mutex_init(&s->mu, NULL);
        s->capacity = capacity_bytes / c->nshards;
        for (int k = 0; k < BC_NSECTIONS; k++)
            s->lru[k].prev = s->lru[k].next = &s->lru[k];
        s->nbuckets = 256;
        s->buckets = calloc(s->nbuckets, sizeof(*s->buckets));
        if (!s->buckets) {
            c->nshards = i + 1;
            block_cache_free(c);
            return ct_err_set(err, CT_ENOMEM, "out of memory creating the block cache");
        }
    }
    *out = c;
    return CT_OK;
}

static void bc_unref(struct block_cache_handle *e)
{
    if (--e->refs == 0) {
        e->free_fn(e->value);
        free(e);
    }
}

static void bc_list_remove(struct block_cache_handle *e)
{
    e->prev->next = e->next;
    e->next->prev = e->prev;
    e->prev = e->next = NULL;
}

static void bc_list_push(struct bc_shard *s, struct block_cache_handle *e)
{
    struct block_cache_handle *head = &s->lru[e->section];
    e->next = head->next;
    e->prev = head;
    head->next->prev = e;
    head->next = e;
}

/* Unlinks e from table and list and drops the cache's reference. REQUIRES: s->mu held. */
static void bc_remove(struct bc_shard *s, struct block_cache_handle *e)
{
    struct block_cache_handle **pp = &s->buckets[e->hash & (s->nbuckets - 1)];
    while (*pp != e)
        pp = &(*pp)->hnext;
    *pp = e->hnext;
    bc_list_remove(e);
    s->count--;
    s->bytes -= e->charge;
    s->sec_bytes[e->section] -= e->charge;
    e->in_cache = false;
    bc_unref(e);
}

static void bc_evict(struct bc_shard *s)
{
    while (s->bytes > s->capacity) {
        int victim = -1;
        size_t worst = 0;
        for (int k = 0; k < BC_NSECTIONS; k++) {
            size_t share = s->capacity / 100 * bc_share_pct[k];
            if (s->sec_bytes[k] > share && s->sec_bytes[k] - share > worst) {
                worst = s->sec_bytes[k] - share;
                victim = k;
            }
        }
        for (int k = 0; victim < 0 && k < BC_NSECTIONS; k++)
            if (s->lru[k].prev != &s->lru[k])
                victim = k;
        if (victim < 0)
            return;
        struct block_cache_handle *e = s->lru[victim].prev;
        if (e == &s->lru[victim])
            return;
        if (e->referenced) { /* hit since it was last moved: second chance */
            e->referenced = false;
            bc_list_remove(e);
            bc_list_push(s, e);
            continue;
        }
        bc_remove(s, e);
        s->evictions++;
    }
}

static void bc_grow(struct bc_shard *s)
{
    size_t n = s->nbuckets * 2;
    struct block_cache_handle **b = calloc(n, sizeof(*b));
    if (!b)
        return; /* longer chains, still correct */
    for (size_t i = 0; i < s->nbuckets; i++) {
        struct block_cache_handle *e = s->buckets[i];
        while (e) {
            struct block_cache_handle *nx = e->hnext;
            e->hnext = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
            e = nx;
        }
    }
    free(s->buckets);
    s->buckets = b;
    s->nbuckets = n;
}

static struct bc_shard *bc_shard_of(struct block_cache *c, uint64_t h)
{
    return &c->shards[(h >> 56) % c->nshards];
}

struct block_cache_handle *block_cache_lookup(struct block_cache *c, uint64_t file_id,
                                              uint64_t offset)
{
    uint64_t h = bc_hash(file_id, offset);
    struct bc_shard *s = bc_shard_of(c, h);
    pthread_mutex_lock(&s->mu);
    struct block_cache_handle *e = s->buckets[h & (s->nbuckets - 1)];
    while (e && !(e->hash == h && e->file_id == file_id && e->offset == offset))
        e = e->hnext;
    if (!e) {
        s->misses++;
        pthread_mutex_unlock(&s->mu);
        return NULL;
    }
    s->hits++;
    e->refs++;
    if (e->section == BC_SINGLE) { /* second access: to the front of the multi-access list */
        bc_list_remove(e);
        s->sec_bytes[BC_SINGLE] -= e->charge;
        e->section = BC_MULTI;
        s->sec_bytes[BC_MULTI] += e->charge;
        bc_list_push(s, e);
    } else {
        /* no list surgery per hit (it touches two neighbours' cache lines): the evictor moves
         * a referenced block to the front instead of evicting it */
        e->referenced = true;
    }
    pthread_mutex_unlock(&s->mu);
    return e;
}

struct block_cache_handle *block_cache_insert(struct block_cache *c, uint64_t file_id,
                                              uint64_t offset, void *value, size_t charge,
                                              bool in_memory, block_cache_free_fn free_fn)
{
    struct block_cache_handle *e = calloc(1, sizeof(*e));
    if (!e) {
        free_fn(value);
        return NULL;
    }
    uint64_t h = bc_hash(file_id, offset);
    struct bc_shard *s = bc_shard_of(c, h);
    e->shard = s;
    e->file_id = file_id;
    e->offset = offset;
    e->hash = h;
    e->value = value;
    e->free_fn = free_fn;
    e->charge = charge;
    e->refs = 1;
    e->section = in_memory ? BC_INMEM : BC_SINGLE;
    if (charge > s->capacity)
        return e; /* uncached: lives until released */
    pthread_mutex_lock(&s->mu);
    struct block_cache_handle **pp = &s->buckets[h & (s->nbuckets - 1)];
    while (*pp && !((*pp)->hash == h && (*pp)->file_id == file_id && (*pp)->offset == offset))
        pp = &(*pp)->hnext;
    if (*pp)
        bc_remove(s, *pp);
    e->refs++;
    e->in_cache = true;
    e->hnext = s->buckets[h & (s->nbuckets - 1)];
    s->buckets[h & (s->nbuckets - 1)] = e;
    bc_list_push(s, e);
    s->count++;
    s->bytes += charge;
    s->sec_bytes[e->section] += charge;
    bc_evict(s);
    if (s->count > s->nbuckets)
        bc_grow(s);
    pthread_mutex_unlock(&s->mu);
    return e;
}

void *block_cache_value(const struct block_cache_handle *h)
{
    return h->value;
}

void block_cache_release(struct block_cache *c, struct block_cache_handle *h)
{
    (void)c;
    if (!h)
        return;
    struct bc_shard *s = h->shard;
    pthread_mutex_lock(&s->mu);
    bc_unref(h);
    pthread_mutex_unlock(&s->mu);
}

static void bc_clear_shard(struct bc_shard *s, bool all, uint64_t file_id)
{
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->nbuckets; i++) {
        struct block_cache_handle *e = s->buckets[i];
        while (e) {
            struct block_cache_handle *nx = e->hnext;
            if (all || e->file_id == file_id)
                bc_remove(s, e);
            e = nx;
        }
    }
    pthread_mutex_unlock(&s->mu);
}

void block_cache_erase_file(struct block_cache *c, uint64_t file_id)
{
    for (size_t i = 0; i < c->nshards; i++)
        bc_clear_shard(&c->shards[i], false, file_id);
}

void block_cache_clear(struct block_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nshards; i++)
        bc_clear_shard(&c->shards[i], true, 0);
}

void block_cache_get_stats(struct block_cache *c, struct block_cache_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (!c)
        return;
    out->capacity_bytes = c->capacity;
    for (size_t i = 0; i < c->nshards; i++) {
        struct bc_shard *s = &c->shards[i];
        pthread_mutex_lock(&s->mu);
        out->hits += s->hits;
        out->misses += s->misses;
        out->bytes += s->bytes;
        out->evictions += s->evictions;
        pthread_mutex_unlock(&s->mu);
    }
}

void block_cache_free(struct block_cache *c)
{
    if (!c)
        return;
    block_cache_clear(c);
    for (size_t i = 0; i < c->nshards; i++) {
        pthread_mutex_destroy(&c->shards[i].mu);
        free(c->shards[i].buckets);
    }
    free(c->shards);
    free(c);
}
