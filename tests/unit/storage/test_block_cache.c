/* test_block_cache.c - the shared block cache: hits, misses and eviction counters, LRU order,
 * the in-memory and multi-access sections' priority, references that outlive eviction, a
 * disabled cache, prefetches (presence, no side effects), the hash table against a model under
 * random inserts and erases, and concurrent use. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "storage/engine/block_cache.h"
#include "tests/lib/ctest.h"

static atomic_int frees;

struct val {
    uint64_t file_id;
    uint64_t offset;
};

static void val_free(void *p)
{
    atomic_fetch_add(&frees, 1);
    free(p);
}

static void put(struct block_cache *c, uint64_t file, uint64_t off, size_t charge, bool inmem)
{
    struct val *v = malloc(sizeof(*v));
    assert_non_null(v);
    v->file_id = file;
    v->offset = off;
    struct block_cache_handle *h = block_cache_insert(c, file, off, v, charge, inmem, val_free);
    assert_non_null(h);
    block_cache_release(c, h);
}

static bool has(struct block_cache *c, uint64_t file, uint64_t off)
{
    struct block_cache_handle *h = block_cache_lookup(c, file, off);
    if (!h)
        return false;
    const struct val *v = block_cache_value(h);
    assert_true(v->file_id == file && v->offset == off);
    block_cache_release(c, h);
    return true;
}

static void test_block_cache_counts_hits_and_misses(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct block_cache *c = NULL;
    assert_int_equal(block_cache_new(100000, &c, &err), CT_OK);
    assert_false(has(c, 1, 0));
    put(c, 1, 0, 100, false);
    put(c, 2, 0, 100, false);
    assert_true(has(c, 1, 0));
    assert_true(has(c, 1, 0));
    assert_true(has(c, 2, 0));
    assert_false(has(c, 1, 4096));
    struct block_cache_stats st;
    block_cache_get_stats(c, &st);
    assert_int_equal(st.hits, 3);
    assert_int_equal(st.misses, 2);
    assert_int_equal(st.bytes, 200);
    assert_int_equal(st.capacity_bytes, 100000);
    assert_int_equal(st.evictions, 0);
    block_cache_free(c);
}

static void test_block_cache_prefetch_reports_presence_and_changes_nothing(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct block_cache *c = NULL;
    assert_int_equal(block_cache_new(100000, &c, &err), CT_OK);
    for (uint64_t i = 0; i < 300; i++)
        put(c, 1 + i % 3, i * 4096, 100, false);
    struct block_cache_stats a, b;
    block_cache_get_stats(c, &a);
    for (uint64_t i = 0; i < 300; i++) {
        assert_true(block_cache_prefetch(c, 1 + i % 3, i * 4096, true));
        assert_false(block_cache_prefetch(c, 1 + i % 3, i * 4096, false));
        assert_false(block_cache_prefetch(c, 1 + i % 3, i * 4096 + 1, true));
        assert_false(block_cache_prefetch(c, 9, i * 4096, true));
    }
    block_cache_get_stats(c, &b);
    assert_int_equal(b.hits, a.hits);
    assert_int_equal(b.misses, a.misses);
    assert_int_equal(b.bytes, a.bytes);
    assert_int_equal(b.evictions, a.evictions);
    block_cache_free(c);
}

static void test_block_cache_evicts_least_recently_used_over_capacity(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct block_cache *c = NULL;
    assert_int_equal(block_cache_new(10000, &c, &err), CT_OK);
    atomic_store(&frees, 0);
    for (uint64_t i = 0; i < 20; i++)
        put(c, 1, i * 1000, 1000, false);
    struct block_cache_stats st;
    block_cache_get_stats(c, &st);
    assert_true(st.bytes <= 10000);
    assert_int_equal(st.evictions, 10);
    assert_int_equal(atomic_load(&frees), 10);
    assert_false(has(c, 1, 0));
    assert_false(has(c, 1, 9000));
    assert_true(has(c, 1, 19000));
    assert_true(has(c, 1, 10000));
    block_cache_free(c);
    assert_int_equal(atomic_load(&frees), 20);
}

static void test_block_cache_in_memory_blocks_survive_a_flood_of_single_reads(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct block_cache *c = NULL;
    assert_int_equal(block_cache_new(10000, &c, &err), CT_OK);
    put(c, 7, 0, 1000, true);
    put(c, 7, 1, 1000, true);
    for (uint64_t i = 0; i < 100; i++)
        put(c, 1, i, 1000, false);
    assert_true(has(c, 7, 0));
    assert_true(has(c, 7, 1));
    /* and without IN_MEMORY the same blocks would be gone */
    put(c, 8, 0, 1000, false);
    for (uint64_t i = 100; i < 200; i++)
        put(c, 1, i, 1000, false);
    assert_false(has(c, 8, 0));
    block_cache_free(c);
}

static void test_block_cache_second_access_promotes_to_multi_section(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct block_cache *c = NULL;
    assert_int_equal(block_cache_new(10000, &c, &err), CT_OK);
    put(c, 3, 0, 1000, false);
    put(c, 3, 1, 1000, false);
    assert_true(has(c, 3, 0)); /* now multi-access */
    for (uint64_t i = 0; i < 50; i++)
        put(c, 1, i, 1000, false);
    assert_true(has(c, 3, 0));
    assert_false(has(c, 3, 1));
    block_cache_free(c);
}

static void test_block_cache_recent_hit_survives_eviction_of_older_blocks(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct block_cache *c = NULL;
    assert_int_equal(block_cache_new(10000, &c, &err), CT_OK);
    for (uint64_t i = 1; i <= 8; i++) { /* eight multi-access blocks, M1 the least recent */
        put(c, 4, i, 1000, false);
        assert_true(has(c, 4, i));
    }
    assert_true(has(c, 4, 1)); /* M1 hit again: now the most recently used */
    put(c, 1, 1, 1000, false);
    put(c, 1, 2, 1000, false);
    put(c, 1, 3, 1000, false); /* over capacity; the multi section is the most over its share */
    struct block_cache_stats st;
    block_cache_get_stats(c, &st);
    assert_int_equal(st.evictions, 1);
    assert_false(has(c, 4, 2)); /* the least recently used multi block went */
    assert_true(has(c, 4, 1));
    assert_true(has(c, 4, 3));
    block_cache_free(c);
}

static void test_block_cache_reference_outlives_eviction_and_clear(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct block_cache *c = NULL;
    assert_int_equal(block_cache_new(2000, &c, &err), CT_OK);
    atomic_store(&frees, 0);
    struct val *v = malloc(sizeof(*v));
    v->file_id = 5;
    v->offset = 5;
    struct block_cache_handle *h = block_cache_insert(c, 5, 5, v, 1000, false, val_free);
    assert_non_null(h);
    for (uint64_t i = 0; i < 10; i++)
        put(c, 1, i, 1000, false);
    assert_false(has(c, 5, 5)); /* evicted ... */
    const struct val *got = block_cache_value(h);
    assert_true(got->file_id == 5 && got->offset == 5); /* ... yet still valid */
    int before = atomic_load(&frees);
    block_cache_release(c, h);
    assert_int_equal(atomic_load(&frees), before + 1);

    put(c, 9, 9, 500, false);
    h = block_cache_lookup(c, 9, 9);
    assert_non_null(h);
    block_cache_clear(c);
    struct block_cache_stats st;
    block_cache_get_stats(c, &st);
    assert_int_equal(st.bytes, 0);
    got = block_cache_value(h);
    assert_true(got->file_id == 9);
    block_cache_release(c, h);
    block_cache_free(c);
}

static void test_block_cache_erase_file_drops_only_that_file(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct block_cache *c = NULL;
    assert_int_equal(block_cache_new(100000, &c, &err), CT_OK);
    for (uint64_t i = 0; i < 10; i++) {
        put(c, 1, i, 100, false);
        put(c, 2, i, 100, false);
    }
    block_cache_erase_file(c, 1);
    assert_false(has(c, 1, 3));
    assert_true(has(c, 2, 3));
    block_cache_free(c);
}

/* The open-addressed table under many inserts, replacements and removals (table growth,
 * backward shifts across runs, erase_file in the middle of runs), checked against a model: with
 * room for everything, exactly the blocks inserted and not erased are found, each with its own
 * value. */
static void test_block_cache_table_matches_a_model_under_random_inserts_and_erases(void **state)
{
    (void)state;
    enum {
        FILES = 7,
        OFFS = 900
    };
    static bool model[FILES][OFFS];
    memset(model, 0, sizeof(model));
    struct block_cache *c = NULL;
    struct ct_err err = {0};
    assert_int_equal(block_cache_new(16u << 20, &c, &err), CT_OK); /* one shard */
    unsigned seed = 42;
    for (int round = 0; round < 20000; round++) {
        unsigned r = (unsigned)rand_r(&seed);
        uint64_t f = r % FILES, off = (r / FILES) % OFFS;
        if (r % 97 == 0) {
            block_cache_erase_file(c, f);
            memset(model[f], 0, sizeof(model[f]));
        } else {
            put(c, f, off * 4096, 16, false); /* a second put replaces the block */
            model[f][off] = true;
        }
        if (round % 2000 == 1999 || round == 19999)
            for (uint64_t ff = 0; ff < FILES; ff++)
                for (uint64_t o = 0; o < OFFS; o++)
                    assert_int_equal(has(c, ff, o * 4096), model[ff][o]);
    }
    struct block_cache_stats st;
    block_cache_get_stats(c, &st);
    assert_int_equal(st.evictions, 0);
    block_cache_clear(c);
    for (uint64_t ff = 0; ff < FILES; ff++)
        for (uint64_t o = 0; o < OFFS; o++)
            assert_false(has(c, ff, o * 4096));
    block_cache_free(c);
}

static void test_block_cache_disabled_caches_nothing(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct block_cache *c = NULL;
    assert_int_equal(block_cache_new(0, &c, &err), CT_OK);
    atomic_store(&frees, 0);
    put(c, 1, 1, 100, false);
    assert_int_equal(atomic_load(&frees), 1);
    assert_false(has(c, 1, 1));
    struct block_cache_stats st;
    block_cache_get_stats(c, &st);
    assert_int_equal(st.bytes, 0);
    block_cache_free(c);
}

static void *hammer(void *arg)
{
    struct block_cache *c = arg;
    unsigned seed = (unsigned)(uintptr_t)pthread_self();
    for (int i = 0; i < 20000; i++) {
        uint64_t f = (uint64_t)(rand_r(&seed) % 8), off = (uint64_t)(rand_r(&seed) % 512);
        if (!has(c, f, off))
            put(c, f, off, 4096 + (size_t)(rand_r(&seed) % 4096), (off & 15) == 0);
    }
    return NULL;
}

static void test_block_cache_is_consistent_under_concurrent_use(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct block_cache *c = NULL;
    assert_int_equal(block_cache_new(32u << 20, &c, &err), CT_OK);
    atomic_store(&frees, 0);
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, hammer, c), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    struct block_cache_stats st;
    block_cache_get_stats(c, &st);
    assert_true(st.bytes <= st.capacity_bytes);
    assert_true(st.hits + st.misses >= 80000);
    block_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_cache_counts_hits_and_misses),
        cmocka_unit_test(test_block_cache_prefetch_reports_presence_and_changes_nothing),
        cmocka_unit_test(test_block_cache_evicts_least_recently_used_over_capacity),
        cmocka_unit_test(test_block_cache_in_memory_blocks_survive_a_flood_of_single_reads),
        cmocka_unit_test(test_block_cache_second_access_promotes_to_multi_section),
        cmocka_unit_test(test_block_cache_recent_hit_survives_eviction_of_older_blocks),
        cmocka_unit_test(test_block_cache_reference_outlives_eviction_and_clear),
        cmocka_unit_test(test_block_cache_erase_file_drops_only_that_file),
        cmocka_unit_test(test_block_cache_table_matches_a_model_under_random_inserts_and_erases),
        cmocka_unit_test(test_block_cache_disabled_caches_nothing),
        cmocka_unit_test(test_block_cache_is_consistent_under_concurrent_use),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
