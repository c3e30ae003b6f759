/* test_hash.c - storage/hash.h: hash_bytes is deterministic per seed and sensitive to every byte,
 * the length and the seed; the hash-set finds every entry inserted (through growth, with
 * colliding hashes, after clear) and never one that was not. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/hash.h"
#include "tests/lib/ctest.h"

static void test_hash_bytes_is_deterministic_and_sensitive(void **state)
{
    (void)state;
    char buf[200];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (char)(i * 7);
    for (size_t n = 0; n <= sizeof(buf); n++) {
        uint64_t h = hash_bytes(buf, n, 42);
        assert_true(h == hash_bytes(buf, n, 42));
        assert_true(h != hash_bytes(buf, n, 43));
        for (size_t b = 0; b < n; b++) { /* every byte position counts */
            buf[b] ^= 1;
            assert_true(h != hash_bytes(buf, n, 42));
            buf[b] ^= 1;
        }
        if (n > 0)
            assert_true(h != hash_bytes(buf, n - 1, 42));
    }
    /* the low bits a small table masks vary: 4096 keys of a 9-byte TSUID shape fill most of
     * 4096 buckets (a constant low byte would fill few) */
    static unsigned char seen[4096];
    size_t distinct = 0;
    for (uint32_t i = 0; i < 4096; i++) {
        unsigned char k[9] = {0, 0, 1, 0, 0, 1, 0, (unsigned char)(i >> 8), (unsigned char)i};
        size_t b = (size_t)hash_bytes(k, sizeof(k), 0) & 4095;
        distinct += !seen[b];
        seen[b] = 1;
    }
    assert_true(distinct > 2000);
}

/* the caller's entries: strings in an array, indexed by a set */
struct strs {
    char key[4096][24];
    size_t n;
    bool collide; /* hash every key alike */
};

static uint64_t strs_hash(const struct strs *t, const char *k)
{
    return t->collide ? 7 : hash_bytes(k, strlen(k), 0);
}

static uint64_t strs_hash_of(void *arg, size_t i)
{
    struct strs *t = arg;
    return strs_hash(t, t->key[i]);
}

static bool strs_eq(void *arg, size_t i, const void *key, size_t len)
{
    const struct strs *t = arg;
    return strlen(t->key[i]) == len && !memcmp(t->key[i], key, len);
}

/* 1 added, 0 present */
static int strs_add(struct strs *t, struct hashset *s, const char *k)
{
    struct ct_err err = {0};
    assert_int_equal(hashset_reserve(s, 4, strs_hash_of, t, &err), CT_OK);
    assert_true((s->n + 1) * 2 <= s->cap);
    size_t slot = 0;
    long i = hashset_find(s, strs_hash(t, k), strs_eq, t, k, strlen(k), &slot);
    if (i >= 0) {
        assert_string_equal(t->key[i], k);
        return 0;
    }
    snprintf(t->key[t->n], sizeof(t->key[0]), "%s", k);
    hashset_insert_at(s, slot, t->n++);
    return 1;
}

static long strs_find(struct strs *t, struct hashset *s, const char *k)
{
    size_t slot = 0;
    return hashset_find(s, strs_hash(t, k), strs_eq, t, k, strlen(k), &slot);
}

static void check_set(bool collide, size_t nkeys)
{
    struct strs *t = calloc(1, sizeof(*t));
    assert_non_null(t);
    t->collide = collide;
    struct hashset s = {0};
    char k[24];
    for (size_t i = 0; i < nkeys; i++) {
        snprintf(k, sizeof(k), "k%zu", i);
        assert_int_equal(strs_add(t, &s, k), 1);
    }
    assert_int_equal(s.n, nkeys);
    assert_true((s.cap & (s.cap - 1)) == 0 && s.n * 2 <= s.cap);
    for (size_t i = 0; i < nkeys; i++) { /* all found, at their own index, none added twice */
        snprintf(k, sizeof(k), "k%zu", i);
        assert_int_equal(strs_find(t, &s, k), (long)i);
        assert_int_equal(strs_add(t, &s, k), 0);
    }
    assert_int_equal(strs_find(t, &s, "absent"), -1);
    assert_int_equal(strs_find(t, &s, "k"), -1);
    size_t cap = s.cap;
    hashset_clear(&s); /* forgets the entries, keeps the table */
    assert_int_equal(s.n, 0);
    assert_int_equal(s.cap, cap);
    assert_int_equal(strs_find(t, &s, "k0"), -1);
    t->n = 0;
    assert_int_equal(strs_add(t, &s, "k1"), 1);
    assert_int_equal(strs_find(t, &s, "k1"), 0);
    hashset_destroy(&s);
    assert_null(s.slot);
    assert_int_equal(s.cap, 0);
    hashset_destroy(&s); /* a zeroed set too */
    free(t);
}

static void test_hashset_finds_what_was_added_through_growth(void **state)
{
    (void)state;
    check_set(false, 4000);
}

static void test_hashset_survives_total_collision(void **state)
{
    (void)state;
    check_set(true, 300);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_bytes_is_deterministic_and_sensitive),
        cmocka_unit_test(test_hashset_finds_what_was_added_through_growth),
        cmocka_unit_test(test_hashset_survives_total_collision),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
