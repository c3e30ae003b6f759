/* test_membudget.c - tsd.core.memory_limit_bytes (tsd/membudget.h): with no limit nothing
 * changes; a limit alone is split into connections, block cache, memstores and flush size that
 * add up to at most the limit and are written back into the configuration; settings the
 * operator gave are kept and checked; a limit they do not fit in is refused with the figures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/ctest.h"
#include "tsd/conf.h"
#include "tsd/ingest.h"
#include "tsd/membudget.h"

#define MIB (1ull << 20)

static struct conf *conf_with(const char *const *kv, size_t n)
{
    struct ct_err err = {0};
    struct conf *c = NULL;
    assert_int_equal(conf_new(&c, &err), CT_OK);
    /* the split without the ingest head, whatever its default (test_head_is_a_part turns it
     * on): a key given in kv is set after this */
    assert_int_equal(conf_set(c, "tsd.storage.head.enable", "false", NULL, &err), CT_OK);
    for (size_t i = 0; i + 1 < n; i += 2)
        if (conf_set(c, kv[i], kv[i + 1], NULL, &err) != CT_OK)
            fail_msg("set %s: %s", kv[i], err.msg);
    return c;
}

static uint64_t geti(const struct conf *c, const char *key)
{
    return (uint64_t)conf_get_int(c, key);
}

static uint64_t parts_sum(const struct membudget *b)
{
    return b->fixed + b->ingest_pool + b->conns + b->queries + b->answers + b->head +
           b->block_cache + b->memstores;
}

static void test_no_limit_changes_nothing(void **state)
{
    (void)state;
    struct conf *c = conf_with(NULL, 0);
    struct membudget b;
    struct ct_err err = {0};
    assert_int_equal(membudget_apply(c, &b, &err), CT_OK);
    assert_int_equal(b.limit, 0);
    assert_int_equal(geti(c, "tsd.storage.block_cache_bytes"), 64 * MIB);
    /* the memstores' ceiling without a limit: 64 MiB (writes wait past it) */
    assert_int_equal(geti(c, "tsd.storage.memstore_total_bytes"), 64 * MIB);
    assert_int_equal(geti(c, "tsd.storage.memstore_flush_bytes"), 16 * MIB);
    assert_int_equal(geti(c, "tsd.storage.head.max_bytes"), 0);
    assert_int_equal(b.head, 0);
    assert_int_equal(geti(c, "tsd.core.connections.limit"), 0);
    assert_int_equal(geti(c, "tsd.http.request.max_body"), 64 * MIB);
    assert_false(conf_is_set(c, "tsd.storage.block_cache_bytes"));
    conf_free(c);
}

/* 512 MiB alone: fixed 48 MiB (one writer) with the series cache's share grown from 6 MiB to 1/32
 * of the limit (16 MiB), the ingest pool, of the rest half for connections of
 * 3.3 MiB (1 MiB bodies) and a fifth for queries (one per worker thread, 128 bytes a datapoint),
 * then 30% block cache / 70% memstores, flush size an eighth (<= 16 MiB). */
static void test_limit_alone_is_split_and_written_back(void **state)
{
    (void)state;
    struct conf *c =
        conf_with((const char *const[]){"tsd.core.memory_limit_bytes", "536870912"}, 2);
    struct membudget b;
    struct ct_err err = {0};
    assert_int_equal(membudget_apply(c, &b, &err), CT_OK);
    struct ingest_options io;
    ingest_options_init(&io);
    io.batches = INGEST_BATCHES_BOUNDED; /* the pool under a limit */
    assert_int_equal(b.limit, 512 * MIB);
    assert_int_equal(b.fixed, MEMBUDGET_FIXED_BYTES + MEMBUDGET_PER_WRITER_BYTES -
                                  MEMBUDGET_SERIES_CACHE_BYTES + 16 * MIB);
    assert_int_equal(b.ingest_pool, ingest_pool_bytes(&io));
    assert_int_equal(b.max_body, MEMBUDGET_DERIVED_MAX_BODY);
    /* HTTP under a limit: 256 KiB input + 1 MiB unsent + the head + 2 x the 1 MiB body */
    assert_int_equal(b.per_conn, (256 << 10) + (1 + 2) * MIB + 16384);
    uint64_t left = 512 * MIB - b.fixed - b.ingest_pool;
    assert_int_equal(b.connections, (int64_t)(left / 2 / b.per_conn));
    assert_int_equal(b.conns, (uint64_t)b.connections * b.per_conn);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    uint64_t per_dp = (uint64_t)(cpus > 0 ? cpus : 2) * MEMBUDGET_QUERY_POINT_BYTES;
    assert_int_equal(b.query_dps, left / 5 / per_dp);
    assert_int_equal(b.queries, b.query_dps * per_dp);
    assert_int_equal(b.answers, left / 20); /* held query answers: a twentieth */
    left -= b.conns + b.queries + b.answers + b.head; /* the head: 0 unless it is on */
    assert_int_equal(b.block_cache, left * 3 / 10);
    assert_int_equal(b.memstores, left - b.block_cache);
    assert_int_equal(parts_sum(&b), 512 * MIB);
    assert_int_equal(b.flush_bytes, b.memstores / 8 < 16 * MIB ? b.memstores / 8 : 16 * MIB);
    /* the derived values are the configuration now */
    assert_int_equal(geti(c, "tsd.core.connections.limit"), (uint64_t)b.connections);
    assert_int_equal(geti(c, "tsd.storage.block_cache_bytes"), b.block_cache);
    assert_int_equal(geti(c, "tsd.storage.memstore_total_bytes"), b.memstores);
    assert_int_equal(geti(c, "tsd.storage.memstore_flush_bytes"), b.flush_bytes);
    assert_int_equal(geti(c, "tsd.http.request.max_body"), MEMBUDGET_DERIVED_MAX_BODY);
    assert_int_equal(geti(c, "tsd.query.limits.data_points.default"), b.query_dps);
    assert_int_equal(geti(c, "tsd.http.query.answer_buffer_bytes"), b.answers);
    /* the caches bounded in bytes get their shares of the fixed part */
    assert_int_equal(geti(c, "tsd.storage.ctsdb.uid_cache_bytes"), MEMBUDGET_UID_NAME_BYTES);
    /* the series cache: 1/32 of a 512 MiB limit (more than its 6 MiB floor) */
    assert_int_equal(geti(c, "tsd.storage.series_cache_bytes"), 512 * MIB / MEMBUDGET_SERIES_CACHE_SHARE);
    char line[768];
    membudget_describe(&b, line, sizeof(line));
    assert_non_null(strstr(line, "limit 512.0 MiB"));
    conf_free(c);
}

/* Set cache sizes replace their shares in the fixed part (per writer for the series cache);
 * 0 (unbounded) is refused under a limit. */
static void test_cache_sizes_set_replace_their_shares(void **state)
{
    (void)state;
    struct conf *c = conf_with(
        (const char *const[]){"tsd.core.memory_limit_bytes", "536870912",
                              "tsd.storage.ctsdb.uid_cache_bytes", "33554432",
                              "tsd.storage.series_cache_bytes", "16777216",
                              "tsd.storage.write_threads", "2"},
        8);
    struct membudget b;
    struct ct_err err = {0};
    assert_int_equal(membudget_apply(c, &b, &err), CT_OK);
    assert_int_equal(b.uid_cache, 32 * MIB);
    assert_int_equal(b.series_cache, 16 * MIB);
    assert_int_equal(b.fixed, MEMBUDGET_FIXED_BYTES + 24 * MIB +
                                  2 * (MEMBUDGET_PER_WRITER_BYTES + 10 * MIB));
    assert_int_equal(parts_sum(&b), 512 * MIB);
    conf_free(c);
    c = conf_with((const char *const[]){"tsd.core.memory_limit_bytes", "536870912",
                                        "tsd.storage.series_cache_bytes", "0"},
                  4);
    assert_int_equal(membudget_apply(c, &b, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "cannot be 0 (unbounded)"));
    conf_free(c);
}

static void test_pool_counts_every_batch_with_its_records(void **state)
{
    (void)state;
    struct ingest_options io;
    ingest_options_init(&io);
    size_t one = ingest_pool_bytes(&io) / io.batches;
    assert_true(one > io.batch_bytes + io.batch_points * 16);
    io.batches *= 2;
    assert_int_equal(ingest_pool_bytes(&io), 2 * one * (io.batches / 2));
}

/* Explicit settings are kept; what is derived takes the rest. */
static void test_explicit_settings_are_kept_and_the_rest_derived(void **state)
{
    (void)state;
    struct conf *c = conf_with((const char *const[]){"tsd.core.memory_limit_bytes", "268435456",
                                                     "tsd.storage.block_cache_bytes", "16777216",
                                                     "tsd.core.connections.limit", "10",
                                                     "tsd.http.request.max_body", "65536",
                                                     "tsd.storage.memstore_flush_bytes", "4194304"},
                               10);
    struct membudget b;
    struct ct_err err = {0};
    assert_int_equal(membudget_apply(c, &b, &err), CT_OK);
    assert_int_equal(b.block_cache, 16 * MIB);
    assert_int_equal(b.connections, 10);
    assert_int_equal(b.max_body, 65536);
    assert_int_equal(b.per_conn, (256 << 10) + MIB + 16384 + 2 * 65536);
    assert_int_equal(b.flush_bytes, 4 * MIB);
    assert_int_equal(b.memstores, 256 * MIB - b.fixed - b.ingest_pool - b.conns - b.queries -
                                      b.answers - b.head - 16 * MIB);
    assert_int_equal(parts_sum(&b), 256 * MIB);
    assert_int_equal(geti(c, "tsd.storage.block_cache_bytes"), 16 * MIB);
    assert_int_equal(geti(c, "tsd.storage.memstore_total_bytes"), b.memstores);
    assert_int_equal(geti(c, "tsd.storage.memstore_flush_bytes"), 4 * MIB);
    conf_free(c);

    /* the memstores given, the block cache takes the rest */
    c = conf_with((const char *const[]){"tsd.core.memory_limit_bytes", "268435456",
                                        "tsd.storage.memstore_total_bytes", "33554432"},
                  4);
    assert_int_equal(membudget_apply(c, &b, &err), CT_OK);
    assert_int_equal(b.memstores, 32 * MIB);
    assert_int_equal(parts_sum(&b), 256 * MIB);
    assert_int_equal(b.flush_bytes, 4 * MIB);
    conf_free(c);

    /* the answer pool given: kept, and the block cache and memstores share what is left */
    c = conf_with((const char *const[]){"tsd.core.memory_limit_bytes", "268435456",
                                        "tsd.http.query.answer_buffer_bytes", "2097152"},
                  4);
    assert_int_equal(membudget_apply(c, &b, &err), CT_OK);
    assert_int_equal(b.answers, 2 * MIB);
    assert_int_equal(parts_sum(&b), 256 * MIB);
    assert_int_equal(geti(c, "tsd.http.query.answer_buffer_bytes"), 2 * MIB);
    conf_free(c);
}

/* A setting given even at its default counts as given. */
static void test_a_key_set_to_its_default_counts_as_set(void **state)
{
    (void)state;
    struct conf *c = conf_with((const char *const[]){"tsd.core.memory_limit_bytes", "1073741824",
                                                     "tsd.storage.block_cache_bytes", "67108864"},
                               4);
    assert_true(conf_is_set(c, "tsd.storage.block_cache_bytes"));
    assert_false(conf_is_set(c, "tsd.storage.memstore_total_bytes"));
    struct membudget b;
    struct ct_err err = {0};
    assert_int_equal(membudget_apply(c, &b, &err), CT_OK);
    assert_int_equal(b.block_cache, 64 * MIB);
    conf_free(c);
}

static void expect_refused(const char *const *kv, size_t n, const char *why)
{
    struct conf *c = conf_with(kv, n);
    struct membudget b;
    struct ct_err err = {0};
    assert_int_equal(membudget_apply(c, &b, &err), CT_EINVAL);
    print_message("refused: %s\n", err.msg);
    if (!strstr(err.msg, why))
        fail_msg("message '%s' does not say '%s'", err.msg, why);
    /* nothing was derived */
    assert_int_equal(b.limit, 0);
    conf_free(c);
}

static void test_settings_that_do_not_fit_are_refused_with_the_figures(void **state)
{
    (void)state;
    /* 256 MiB with a 128 MiB block cache and 128 MiB of memstores: over by far */
    static const char *const over[] = {"tsd.core.memory_limit_bytes",      "268435456",
                                       "tsd.storage.block_cache_bytes",    "134217728",
                                       "tsd.storage.memstore_total_bytes", "134217728"};
    expect_refused(over, 6, "the block cache and the memstores do not fit");
    expect_refused(over, 6, "tsd.core.memory_limit_bytes (256.0 MiB) is too small");
    expect_refused(over, 6, "cache 128.0 + memstores 128.0 MiB");
    /* smaller than the fixed part */
    expect_refused((const char *const[]){"tsd.core.memory_limit_bytes", "33554432"}, 2,
                   "the fixed part and the ingest pool alone do not fit");
    /* too small for 4 connections of 3.3 MiB */
    expect_refused((const char *const[]){"tsd.core.memory_limit_bytes", "75497472"}, 2,
                   "fewer than 4 connections would fit");
    /* too small for queries of 100,000 datapoints */
    expect_refused((const char *const[]){"tsd.core.memory_limit_bytes", "100663296"}, 2,
                   "queries of fewer than 100000 datapoints would fit");
    /* many connections with the default 64 MiB bodies */
    expect_refused((const char *const[]){"tsd.core.memory_limit_bytes", "536870912",
                                         "tsd.http.request.max_body", "67108864",
                                         "tsd.core.connections.limit", "100"},
                   6, "tsd.core.connections.limit connections do not fit");
    /* unlimited connections cannot be bounded */
    expect_refused((const char *const[]){"tsd.core.memory_limit_bytes", "536870912",
                                         "tsd.core.connections.limit", "0"},
                   4, "tsd.core.connections.limit=0");
    /* a block cache that leaves too little for the memstores */
    expect_refused((const char *const[]){"tsd.core.memory_limit_bytes", "268435456",
                                         "tsd.storage.block_cache_bytes", "52428800"},
                   4, "less than 4 MiB would be left for the memstores");
    /* an answer pool larger than what is left */
    expect_refused((const char *const[]){"tsd.core.memory_limit_bytes", "268435456",
                                         "tsd.http.query.answer_buffer_bytes", "134217728"},
                   4, "tsd.http.query.answer_buffer_bytes does not fit");
    /* unlimited queries cannot be bounded; neither can too many datapoints */
    expect_refused((const char *const[]){"tsd.core.memory_limit_bytes", "536870912",
                                         "tsd.query.limits.data_points.default", "0"},
                   4, "tsd.query.limits.data_points.default=0");
    expect_refused((const char *const[]){"tsd.core.memory_limit_bytes", "536870912",
                                         "tsd.query.limits.data_points.default", "50000000"},
                   4, "queries of tsd.query.limits.data_points.default do not fit");
    /* the largest datapoint limit on the most worker threads does not wrap around */
    expect_refused((const char *const[]){"tsd.core.memory_limit_bytes", "1125899906842624",
                                         "tsd.query.threads", "1024",
                                         "tsd.query.limits.data_points.default",
                                         "1125899906842624"},
                   6, "queries of tsd.query.limits.data_points.default do not fit");
    /* the engine's own ceiling cannot be bounded */
    struct conf *c = conf_with((const char *const[]){"tsd.core.memory_limit_bytes", "268435456",
                                                     "tsd.storage.memstore_total_bytes", "0"},
                               4);
    struct membudget b;
    struct ct_err err = {0};
    assert_int_equal(membudget_apply(c, &b, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "tsd.storage.memstore_total_bytes=0"));
    conf_free(c);
}

/* With Bigtable there is no local cache or memstore: the connections get their half, the rest
 * is left unassigned, and the store's keys are not touched. */
static void test_bigtable_backend_budgets_no_local_store(void **state)
{
    (void)state;
    struct conf *c = conf_with((const char *const[]){"tsd.core.memory_limit_bytes", "268435456",
                                                     "tsd.storage.backend", "bigtable"},
                               4);
    struct membudget b;
    struct ct_err err = {0};
    assert_int_equal(membudget_apply(c, &b, &err), CT_OK);
    assert_int_equal(b.block_cache, 0);
    assert_int_equal(b.memstores, 0);
    assert_true(b.connections >= MEMBUDGET_MIN_CONNS);
    assert_true(parts_sum(&b) <= 256 * MIB);
    assert_false(conf_is_set(c, "tsd.storage.memstore_total_bytes"));
    assert_false(conf_is_set(c, "tsd.storage.block_cache_bytes"));
    conf_free(c);
}

/* membudget_split directly: every successful split of a grid of limits and explicit settings
 * stays within its limit and keeps what was given. */
/* The answer pool never passes its limit, and gives back what was taken. */
static void test_answer_pool_is_bounded(void **state)
{
    (void)state;
    struct membudget_pool p;
    membudget_pool_init(&p, 3 * MIB);
    assert_true(membudget_pool_take(&p, 2 * MIB));
    assert_false(membudget_pool_take(&p, MIB + 1)); /* would pass the limit: nothing taken */
    assert_int_equal(membudget_pool_used(&p), 2 * MIB);
    assert_true(membudget_pool_take(&p, MIB)); /* exactly up to it */
    assert_false(membudget_pool_take(&p, 1));
    membudget_pool_give(&p, 2 * MIB);
    assert_int_equal(membudget_pool_used(&p), MIB);
    assert_false(membudget_pool_take(&p, UINT64_MAX)); /* no wrap-around */
    assert_true(membudget_pool_take(&p, 2 * MIB));
    membudget_pool_give(&p, 3 * MIB);
    assert_int_equal(membudget_pool_used(&p), 0);
    membudget_pool_init(&p, 0); /* a zero pool takes nothing */
    assert_false(membudget_pool_take(&p, 1));
    assert_true(membudget_pool_take(&p, 0));
}

/* With the head on, it takes MEMBUDGET_HEAD_TENTHS of what the connections, queries and answers
 * leave, before the block cache and memstores share the rest; the bound is written back (the
 * store refuses new series past it); set, it is kept; 0 or too large is refused. */
static void test_head_is_a_part(void **state)
{
    (void)state;
    struct conf *off =
        conf_with((const char *const[]){"tsd.core.memory_limit_bytes", "536870912"}, 2);
    struct conf *on = conf_with((const char *const[]){"tsd.core.memory_limit_bytes", "536870912",
                                                      "tsd.storage.head.enable", "true"},
                                4);
    struct membudget b0, b;
    struct ct_err err = {0};
    assert_int_equal(membudget_apply(off, &b0, &err), CT_OK);
    assert_int_equal(membudget_apply(on, &b, &err), CT_OK);
    assert_int_equal(b0.head, 0);
    assert_int_equal(geti(off, "tsd.storage.head.max_bytes"), 0);
    uint64_t left = 512 * MIB - b.fixed - b.ingest_pool - b.conns - b.queries - b.answers;
    assert_int_equal(b.head, left / 10 * MEMBUDGET_HEAD_TENTHS);
    assert_int_equal(geti(on, "tsd.storage.head.max_bytes"), b.head);
    left -= b.head;
    assert_int_equal(b.block_cache, left * 3 / 10);
    assert_int_equal(b.memstores, left - b.block_cache);
    assert_int_equal(parts_sum(&b), 512 * MIB);
    assert_true(b.memstores < b0.memstores);
    char line[768];
    membudget_describe(&b, line, sizeof(line));
    char want[64];
    snprintf(want, sizeof(want), "head %.1f", (double)b.head / (double)MIB);
    assert_non_null(strstr(line, want));
    conf_free(off);
    conf_free(on);
    /* set: kept, the rest derived around it */
    struct conf *set = conf_with((const char *const[]){"tsd.core.memory_limit_bytes", "536870912",
                                                       "tsd.storage.head.enable", "true",
                                                       "tsd.storage.head.max_bytes", "33554432"},
                                 6);
    assert_int_equal(membudget_apply(set, &b, &err), CT_OK);
    assert_int_equal(b.head, 32 * MIB);
    assert_int_equal(parts_sum(&b), 512 * MIB);
    conf_free(set);
    expect_refused((const char *const[]){"tsd.core.memory_limit_bytes", "536870912",
                                         "tsd.storage.head.enable", "true",
                                         "tsd.storage.head.max_bytes", "0"},
                   6, "tsd.storage.head.max_bytes=0 (no bound)");
    expect_refused((const char *const[]){"tsd.core.memory_limit_bytes", "536870912",
                                         "tsd.storage.head.enable", "true",
                                         "tsd.storage.head.max_bytes", "536870912"},
                   6, "tsd.storage.head.max_bytes does not fit");
}

static void test_every_split_fits_its_limit(void **state)
{
    (void)state;
    int ok = 0, refused = 0;
    for (uint64_t lim = 64; lim <= 4096; lim *= 2) {
        for (int mask = 0; mask < 128; mask++) {
            struct membudget_in in;
            memset(&in, 0, sizeof(in));
            in.limit = lim * MIB;
            in.writers = 1 + mask % 3;
            in.embedded = true;
            in.ingest_pool = 5 * MIB;
            in.max_header = 16384;
            in.block_cache = lim * MIB / 4;
            in.block_cache_set = mask & 1;
            in.memstores = lim * MIB / 3;
            in.memstores_set = mask & 2;
            in.connections = 8;
            in.connections_set = mask & 4;
            in.max_body = 256 << 10;
            in.max_body_set = mask & 8;
            in.query_threads = 2;
            in.query_dps = 200000;
            in.query_dps_set = mask & 16;
            in.head_on = mask & 32;
            in.head_bytes = lim * MIB / 8;
            in.head_bytes_set = mask & 64;
            struct membudget b;
            struct ct_err err = {0};
            if (membudget_split(&in, &b, &err) != CT_OK) {
                refused++;
                continue;
            }
            ok++;
            assert_true(parts_sum(&b) <= in.limit);
            if (in.block_cache_set)
                assert_int_equal(b.block_cache, in.block_cache);
            if (in.memstores_set)
                assert_int_equal(b.memstores, in.memstores);
            if (in.connections_set)
                assert_int_equal(b.connections, 8);
            if (in.query_dps_set)
                assert_int_equal(b.query_dps, 200000);
            assert_true(b.query_dps >= MEMBUDGET_MIN_QUERY_DPS);
            assert_int_equal(b.queries, b.query_dps * 2 * MEMBUDGET_QUERY_POINT_BYTES);
            assert_true(b.memstores >= MEMBUDGET_MIN_MEMSTORES);
            assert_true(b.connections >= (in.connections_set ? 8 : MEMBUDGET_MIN_CONNS));
            assert_true(b.flush_bytes >= 65536 && b.flush_bytes <= 16 * MIB);
            if (in.head_on)
                assert_true(in.head_bytes_set ? b.head == in.head_bytes
                                              : b.head >= MEMBUDGET_MIN_HEAD);
            else
                assert_int_equal(b.head, 0);
        }
    }
    print_message("%d splits fit, %d refused\n", ok, refused);
    assert_true(ok > 100 && refused > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_limit_changes_nothing),
        cmocka_unit_test(test_cache_sizes_set_replace_their_shares),
        cmocka_unit_test(test_limit_alone_is_split_and_written_back),
        cmocka_unit_test(test_pool_counts_every_batch_with_its_records),
        cmocka_unit_test(test_explicit_settings_are_kept_and_the_rest_derived),
        cmocka_unit_test(test_a_key_set_to_its_default_counts_as_set),
        cmocka_unit_test(test_settings_that_do_not_fit_are_refused_with_the_figures),
        cmocka_unit_test(test_bigtable_backend_budgets_no_local_store),
        cmocka_unit_test(test_every_split_fits_its_limit),
        cmocka_unit_test(test_head_is_a_part),
        cmocka_unit_test(test_answer_pool_is_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
