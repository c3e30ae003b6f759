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
 * The hash table is open-addressed (linear probing, backward-shift deletion) over slots that
 * hold each entry's hash next to its pointer, so a probe reads one slot array line and only the
 * matching entry (profiled: walking chained entries was most of block_cache_lookup's time in
 * seekrandom, one cache miss per entry on the chain).
 *
 * Invariants: (1) an entry is in its shard's hash table and exactly one section list iff
 * e->in_cache; (1b) the table is at most half full, and every in-cache entry is reachable from
 * its home slot (hash & (nslots - 1)) by probing forward without crossing an empty slot; (2) e->refs counts the cache's own reference (while in_cache) plus one per
 * handle given out; the entry and its value are freed when refs reaches 0 (a release takes no
 * lock: see block_cache_release); (3) shard->bytes is
 * the sum of charges of in_cache entries, sec_bytes[s] the sum per section.
 * Locking: one mutex per shard guards everything in the shard but reference drops (atomic, so
 * a release takes no lock); counters are per shard and
 * summed by block_cache_get_stats(). Small caches use one shard so that LRU order is exact. */
#include "storage/engine/block_cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "storage/hash.h"

enum {
    BC_SINGLE = 0,
    BC_MULTI = 1,
    BC_INMEM = 2,
    BC_NSECTIONS = 3,
};

static const unsigned bc_share_pct[BC_NSECTIONS] = {25, 50, 25};

struct block_cache_handle {
    struct block_cache_handle *prev; /* section LRU list (head = most recent) */
    struct block_cache_handle *next;
    struct bc_shard *shard;
    uint64_t file_id;
    uint64_t offset;
    uint64_t hash;
    void *value;
    block_cache_free_fn free_fn;
    size_t charge;
    atomic_uint refs; /* changed under the shard mutex, except by block_cache_release */
    uint8_t section;
    bool in_cache;
    bool referenced; /* hit since it was last put at the front of its list (second chance) */
};

struct bc_slot {
    uint64_t hash;
    struct block_cache_handle *e;
};

struct bc_shard {
    pthread_mutex_t mu;
    struct bc_slot *slots; /* open addressing; e == NULL: empty */
    size_t nslots;         /* power of two */
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
    bool pread; /* files read through the cache, not mapped (set before any file opens) */
};

void block_cache_set_pread(struct block_cache *c, bool on)
{
    c->pread = on;
}

bool block_cache_pread(const struct block_cache *c)
{
    return c->pread;
}

static uint64_t bc_hash(uint64_t file_id, uint64_t offset)
{
    const uint64_t key[2] = {file_id, offset};
    return hash_bytes(key, sizeof(key), 0);
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
        s->nslots = 512;
        s->slots = calloc(s->nslots, sizeof(*s->slots));
        if (!s->slots) {
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
    if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1) {
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

/* The slot of the in-cache entry for (h, file_id, offset), or of the empty slot ending its probe
 * run. REQUIRES: s->mu held. */
static size_t bc_find(const struct bc_shard *s, uint64_t h, uint64_t file_id, uint64_t offset)
{
    size_t mask = s->nslots - 1, i = h & mask;
    for (;; i = (i + 1) & mask) {
        const struct bc_slot *sl = &s->slots[i];
        if (!sl->e || (sl->hash == h && sl->e->file_id == file_id && sl->e->offset == offset))
            return i;
    }
}

/* Empties slot i and moves later entries of the run back so that every entry stays reachable
 * from its home slot (backward-shift deletion). REQUIRES: s->mu held. */
static void bc_slot_clear(struct bc_shard *s, size_t i)
{
    size_t mask = s->nslots - 1, j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!s->slots[j].e)
            break;
        size_t home = s->slots[j].hash & mask;
        /* the entry at j may move to i if its home is not in the cyclic range (i, j] */
        bool in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!in_range) {
            s->slots[i] = s->slots[j];
            i = j;
        }
    }
    s->slots[i].e = NULL;
    s->slots[i].hash = 0;
}

/* Unlinks e from table and list and drops the cache's reference. REQUIRES: s->mu held. */
static void bc_remove(struct bc_shard *s, struct block_cache_handle *e)
{
    size_t mask = s->nslots - 1, i = e->hash & mask;
    while (s->slots[i].e != e)
        i = (i + 1) & mask;
    bc_slot_clear(s, i);
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

/* Doubles the table. False when out of memory (the caller then must not insert). */
static bool bc_grow(struct bc_shard *s)
{
    size_t n = s->nslots * 2, mask = n - 1;
    struct bc_slot *b = calloc(n, sizeof(*b));
    if (!b)
        return false;
    for (size_t i = 0; i < s->nslots; i++) {
        if (!s->slots[i].e)
            continue;
        size_t j = s->slots[i].hash & mask;
        while (b[j].e)
            j = (j + 1) & mask;
        b[j] = s->slots[i];
    }
    free(s->slots);
    s->slots = b;
    s->nslots = n;
    return true;
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
    struct block_cache_handle *e = s->slots[bc_find(s, h, file_id, offset)].e;
    if (!e) {
        s->misses++;
        pthread_mutex_unlock(&s->mu);
        return NULL;
    }
    s->hits++;
    atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
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

bool block_cache_prefetch(struct block_cache *c, uint64_t file_id, uint64_t offset, bool entry)
{
    uint64_t h = bc_hash(file_id, offset);
    struct bc_shard *s = bc_shard_of(c, h);
    bool found = false;
    pthread_mutex_lock(&s->mu);
    size_t mask = s->nslots - 1, i = h & mask;
    if (!entry) {
        __builtin_prefetch(&s->slots[i]);
    } else {
        /* a full 64-bit hash match is taken as the block without reading the entry (that read
         * is the miss being prefetched); a rare false match only costs a counted miss later */
        for (; s->slots[i].e; i = (i + 1) & mask) {
            if (s->slots[i].hash == h) {
                __builtin_prefetch(s->slots[i].e);
                found = true;
                break;
            }
        }
    }
    pthread_mutex_unlock(&s->mu);
    return found;
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
    atomic_init(&e->refs, 1);
    e->section = in_memory ? BC_INMEM : BC_SINGLE;
    if (charge > s->capacity)
        return e; /* uncached: lives until released */
    pthread_mutex_lock(&s->mu);
    size_t i = bc_find(s, h, file_id, offset);
    if (s->slots[i].e) {
        bc_remove(s, s->slots[i].e);
        i = bc_find(s, h, file_id, offset);
    }
    if ((s->count + 1) * 2 > s->nslots) {
        if (!bc_grow(s)) { /* uncached: lives until released */
            pthread_mutex_unlock(&s->mu);
            return e;
        }
        i = bc_find(s, h, file_id, offset);
    }
    atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    e->in_cache = true;
    s->slots[i].hash = h;
    s->slots[i].e = e;
    bc_list_push(s, e);
    s->count++;
    s->bytes += charge;
    s->sec_bytes[e->section] += charge;
    bc_evict(s);
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
    /* no lock: while the entry is in the cache the cache's own reference keeps refs above 0, so
     * only a handle of an entry already removed can drop the last reference, and nothing can
     * find that entry any more */
    bc_unref(h);
}

static void bc_clear_shard(struct bc_shard *s, bool all, uint64_t file_id)
{
    pthread_mutex_lock(&s->mu);
    /* every in-cache entry is on exactly one section list; removal keeps `next` valid */
    for (int k = 0; k < BC_NSECTIONS; k++) {
        struct block_cache_handle *head = &s->lru[k], *e = head->next;
        while (e != head) {
            struct block_cache_handle *nx = e->next;
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
        out->in_memory_bytes += s->sec_bytes[BC_INMEM];
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
        free(c->shards[i].slots);
    }
    free(c->shards);
    free(c);
}
