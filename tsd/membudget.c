/* membudget.c - splitting tsd.core.memory_limit_bytes (see membudget.h).
 *
 * Invariant: a split returned CT_OK has fixed + ingest_pool + conns + queries + answers + head +
 * block_cache + memstores <= limit, every part the operator set equal to what they set, and at least
 * MEMBUDGET_MIN_CONNS connections and MEMBUDGET_MIN_MEMSTORES of memstores (embedded store).
 * Pure arithmetic except membudget_apply, which reads and writes the configuration. */
#include "tsd/membudget.h"

#include <assert.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tsd/conf.h"
#include "tsd/ingest.h"

#define MIB_F(x) ((double)(x) / (double)(1u << 20))

uint64_t membudget_per_conn(uint64_t max_body, bool chunked, uint64_t max_chunk,
                            uint64_t max_header)
{
    uint64_t telnet = TSD_TELNET_READ_HIGH + TSD_TELNET_SINGLE_READ + TSD_TELNET_OUT_HIGH;
    uint64_t body = max_body;
    if (chunked && max_chunk > body)
        body = max_chunk;
    uint64_t http = TSD_HTTP_READ_HIGH_LIMITED + TSD_HTTP_OUT_HIGH_LIMITED + max_header + 2 * body;
    return http > telnet ? http : telnet;
}

/* "fixed 48.0 + ingest 6.3 + 23 conns x 7.0 + ..." (short: it goes into a struct ct_err). */
static void describe_parts(const struct membudget *b, char *buf, size_t size)
{
    char head[48] = ""; /* the ingest head's part, only with the head on */
    if (b->head)
        snprintf(head, sizeof(head), " + head %.1f", MIB_F(b->head));
    snprintf(buf, size,
             "fixed %.1f + ingest %.1f + %" PRId64 " conns x %.1f + queries %.1f (%" PRIu64
             " dps) + answers %.1f%s + cache %.1f + memstores %.1f MiB",
             MIB_F(b->fixed), MIB_F(b->ingest_pool), b->connections, MIB_F(b->per_conn),
             MIB_F(b->queries), b->query_dps, MIB_F(b->answers), head, MIB_F(b->block_cache),
             MIB_F(b->memstores));
}

static int too_small(const struct membudget_in *in, const struct membudget *b, const char *why,
                     struct ct_err *err)
{
    char parts[512];
    describe_parts(b, parts, sizeof(parts));
    return ct_err_set(err, CT_EINVAL, "tsd.core.memory_limit_bytes (%.1f MiB) is too small: %s: %s",
                      MIB_F(in->limit), why, parts);
}

int membudget_split(const struct membudget_in *in, struct membudget *out, struct ct_err *err)
{
    struct membudget b;
    memset(&b, 0, sizeof(b));
    b.limit = in->limit;
    uint64_t writers = (uint64_t)(in->writers > 0 ? in->writers : 1);
    b.uid_cache = in->uid_cache_set ? in->uid_cache : MEMBUDGET_UID_NAME_BYTES;
    b.series_cache = in->series_cache_set ? in->series_cache : MEMBUDGET_SERIES_CACHE_BYTES;
    if (!in->series_cache_set && in->limit / MEMBUDGET_SERIES_CACHE_SHARE > b.series_cache)
        b.series_cache = in->limit / MEMBUDGET_SERIES_CACHE_SHARE < MEMBUDGET_SERIES_CACHE_MAX
                             ? in->limit / MEMBUDGET_SERIES_CACHE_SHARE
                             : MEMBUDGET_SERIES_CACHE_MAX;
    if (in->limit && ((in->uid_cache_set && in->uid_cache == 0) ||
                      (in->series_cache_set && in->series_cache == 0)))
        return ct_err_set(err, CT_EINVAL,
                          "tsd.storage.ctsdb.uid_cache_bytes and tsd.storage.series_cache_bytes "
                          "cannot be 0 (unbounded) under tsd.core.memory_limit_bytes: set a size "
                          "or leave them unset");
    if (b.uid_cache > (1ull << 40) || b.series_cache > (1ull << 40))
        return ct_err_set(err, CT_EINVAL, "cache sizes past 1 TiB");
    b.fixed = MEMBUDGET_FIXED_BYTES - MEMBUDGET_UID_NAME_BYTES + b.uid_cache +
              writers * (MEMBUDGET_PER_WRITER_BYTES - MEMBUDGET_SERIES_CACHE_BYTES + b.series_cache);
    b.ingest_pool = in->ingest_pool;
    b.max_body = in->max_body_set ? in->max_body : MEMBUDGET_DERIVED_MAX_BODY;
    b.per_conn = membudget_per_conn(b.max_body, in->chunked, in->max_chunk, in->max_header);
    b.block_cache = in->embedded && in->block_cache_set ? in->block_cache : 0;
    b.memstores = in->embedded && in->memstores_set ? in->memstores : 0;
    b.connections = in->connections_set ? in->connections : 0;
    b.query_dps = in->query_dps_set ? in->query_dps : 0;
    uint64_t per_query_dp =
        (uint64_t)(in->query_threads > 0 ? in->query_threads : 1) * MEMBUDGET_QUERY_POINT_BYTES;
    if (in->limit == 0)
        return ct_err_set(err, CT_EINVAL, "membudget_split needs a limit");
    if (in->connections_set && in->connections == 0)
        return ct_err_set(err, CT_EINVAL,
                          "tsd.core.connections.limit=0 (no limit) cannot be bounded by "
                          "tsd.core.memory_limit_bytes: set a number of connections or leave it "
                          "unset");
    if (in->query_dps_set && in->query_dps == 0)
        return ct_err_set(err, CT_EINVAL,
                          "tsd.query.limits.data_points.default=0 (no limit) cannot be bounded "
                          "by tsd.core.memory_limit_bytes: set a number of datapoints or leave it "
                          "unset");
    if (in->query_dps_set && in->query_dps > UINT64_MAX / 2 / per_query_dp) {
        b.queries = UINT64_MAX;
        return too_small(in, &b, "queries of tsd.query.limits.data_points.default do not fit", err);
    }
    uint64_t base = b.fixed + b.ingest_pool;
    if (base >= in->limit)
        return too_small(in, &b, "the fixed part and the ingest pool alone do not fit", err);
    uint64_t left = in->limit - base;
    uint64_t left0 = left;
    if (!in->connections_set) {
        uint64_t n = left / 2 / b.per_conn;
        if (n < MEMBUDGET_MIN_CONNS) {
            b.connections = MEMBUDGET_MIN_CONNS;
            b.conns = MEMBUDGET_MIN_CONNS * b.per_conn;
            return too_small(in, &b, "fewer than 4 connections would fit", err);
        }
        b.connections = (int64_t)n;
    }
    b.conns = (uint64_t)b.connections * b.per_conn;
    if (b.conns > left)
        return too_small(in, &b, "tsd.core.connections.limit connections do not fit", err);
    left -= b.conns;
    if (!in->query_dps_set) {
        b.query_dps = left0 / 5 / per_query_dp;
        if (b.query_dps < MEMBUDGET_MIN_QUERY_DPS) {
            b.query_dps = MEMBUDGET_MIN_QUERY_DPS;
            b.queries = b.query_dps * per_query_dp;
            return too_small(in, &b, "queries of fewer than 100000 datapoints would fit", err);
        }
    }
    b.queries = b.query_dps * per_query_dp;
    if (b.queries > left)
        return too_small(in, &b, "queries of tsd.query.limits.data_points.default do not fit", err);
    left -= b.queries;
    b.answers = in->answers_set ? in->answers : left0 / 20;
    if (b.answers > left)
        return too_small(in, &b, "tsd.http.query.answer_buffer_bytes does not fit", err);
    left -= b.answers;
    if (in->head_on) {
        if (in->head_bytes_set && in->head_bytes == 0)
            return ct_err_set(err, CT_EINVAL,
                              "tsd.storage.head.max_bytes=0 (no bound) cannot be bounded by "
                              "tsd.core.memory_limit_bytes: set a size or leave it unset");
        b.head = in->head_bytes_set ? in->head_bytes : left / 10 * MEMBUDGET_HEAD_TENTHS;
        if (b.head > left)
            return too_small(in, &b, "tsd.storage.head.max_bytes does not fit", err);
        if (b.head < MEMBUDGET_MIN_HEAD)
            return too_small(in, &b, "less than 4 MiB would be left for the ingest head", err);
        left -= b.head;
    }
    if (in->embedded) {
        if (in->block_cache_set && in->memstores_set) {
            if (b.block_cache + b.memstores > left)
                return too_small(in, &b, "the block cache and the memstores do not fit", err);
        } else if (in->block_cache_set) {
            if (b.block_cache > left)
                return too_small(in, &b, "tsd.storage.block_cache_bytes does not fit", err);
            b.memstores = left - b.block_cache;
        } else if (in->memstores_set) {
            if (b.memstores > left)
                return too_small(in, &b, "tsd.storage.memstore_total_bytes does not fit", err);
            b.block_cache = left - b.memstores;
        } else {
            b.block_cache = left * 3 / 10;
            b.memstores = left - b.block_cache;
        }
        if (b.memstores < MEMBUDGET_MIN_MEMSTORES)
            return too_small(in, &b, "less than 4 MiB would be left for the memstores", err);
        if (in->flush_bytes_set) {
            b.flush_bytes = in->flush_bytes;
        } else {
            b.flush_bytes = b.memstores / 8;
            if (b.flush_bytes < (64u << 10))
                b.flush_bytes = 64u << 10;
            if (b.flush_bytes > (16u << 20))
                b.flush_bytes = 16u << 20;
        }
    } else {
        b.flush_bytes = in->flush_bytes;
    }
    *out = b;
    return CT_OK;
}

static int set_u64(struct conf *c, const char *key, uint64_t v, struct ct_err *err)
{
    char s[32];
    snprintf(s, sizeof(s), "%" PRIu64, v);
    return conf_set(c, key, s, NULL, err);
}

int membudget_apply(struct conf *c, struct membudget *out, struct ct_err *err)
{
    memset(out, 0, sizeof(*out));
    struct membudget_in in;
    memset(&in, 0, sizeof(in));
    in.limit = (uint64_t)conf_get_int(c, "tsd.core.memory_limit_bytes");
    if (in.limit == 0)
        return CT_OK;
    in.writers = (int)conf_get_int(c, "tsd.storage.write_threads");
    in.uid_cache = (uint64_t)conf_get_int(c, "tsd.storage.ctsdb.uid_cache_bytes");
    in.uid_cache_set = conf_is_set(c, "tsd.storage.ctsdb.uid_cache_bytes");
    in.series_cache = (uint64_t)conf_get_int(c, "tsd.storage.series_cache_bytes");
    in.series_cache_set = conf_is_set(c, "tsd.storage.series_cache_bytes");
    in.embedded = !strcmp(conf_get_str(c, "tsd.storage.backend"), "embedded");
    struct ingest_options io;
    ingest_options_init(&io);
    io.batches = INGEST_BATCHES_BOUNDED; /* as tsd.c sets it under a limit */
    in.ingest_pool = ingest_pool_bytes(&io);
    in.block_cache = (uint64_t)conf_get_int(c, "tsd.storage.block_cache_bytes");
    in.block_cache_set = conf_is_set(c, "tsd.storage.block_cache_bytes");
    in.memstores = (uint64_t)conf_get_int(c, "tsd.storage.memstore_total_bytes");
    in.memstores_set = conf_is_set(c, "tsd.storage.memstore_total_bytes");
    in.flush_bytes = (uint64_t)conf_get_int(c, "tsd.storage.memstore_flush_bytes");
    in.flush_bytes_set = conf_is_set(c, "tsd.storage.memstore_flush_bytes");
    in.connections = conf_get_int(c, "tsd.core.connections.limit");
    in.connections_set = conf_is_set(c, "tsd.core.connections.limit");
    in.max_body = (uint64_t)conf_get_int(c, "tsd.http.request.max_body");
    in.max_body_set = conf_is_set(c, "tsd.http.request.max_body");
    in.max_chunk = (uint64_t)conf_get_int(c, "tsd.http.request.max_chunk");
    in.chunked = conf_get_bool(c, "tsd.http.request.enable_chunked");
    in.max_header = (uint64_t)conf_get_int(c, "tsd.http.request.max_header");
    in.query_threads = (int)conf_get_int(c, "tsd.query.threads");
    if (in.query_threads <= 0) { /* as workpool_new resolves it */
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        in.query_threads = n > 0 ? (int)n : 2;
    }
    in.query_dps = (uint64_t)conf_get_int(c, "tsd.query.limits.data_points.default");
    in.query_dps_set = conf_is_set(c, "tsd.query.limits.data_points.default");
    in.answers = (uint64_t)conf_get_int(c, "tsd.http.query.answer_buffer_bytes");
    in.answers_set = conf_is_set(c, "tsd.http.query.answer_buffer_bytes");
    in.head_on = conf_get_bool(c, "tsd.storage.head.enable");
    in.head_bytes = (uint64_t)conf_get_int(c, "tsd.storage.head.max_bytes");
    in.head_bytes_set = conf_is_set(c, "tsd.storage.head.max_bytes");
    if (in.memstores_set && in.memstores == 0)
        return ct_err_set(err, CT_EINVAL,
                          "tsd.storage.memstore_total_bytes=0 (the engine's own ceiling) cannot "
                          "be bounded by tsd.core.memory_limit_bytes: set a size or leave it "
                          "unset");
    struct membudget b;
    int rc = membudget_split(&in, &b, err);
    if (rc != CT_OK)
        return rc;
    if ((rc = set_u64(c, "tsd.core.connections.limit", (uint64_t)b.connections, err)) ||
        (rc = set_u64(c, "tsd.http.request.max_body", b.max_body, err)) ||
        (rc = set_u64(c, "tsd.query.limits.data_points.default", b.query_dps, err)) ||
        (rc = set_u64(c, "tsd.http.query.answer_buffer_bytes", b.answers, err)) ||
        (rc = set_u64(c, "tsd.storage.ctsdb.uid_cache_bytes", b.uid_cache, err)) ||
        (rc = set_u64(c, "tsd.storage.series_cache_bytes", b.series_cache, err)))
        return rc;
    if (in.head_on && (rc = set_u64(c, "tsd.storage.head.max_bytes", b.head, err)))
        return rc;
    if (in.embedded && ((rc = set_u64(c, "tsd.storage.block_cache_bytes", b.block_cache, err)) ||
                        (rc = set_u64(c, "tsd.storage.memstore_total_bytes", b.memstores, err)) ||
                        (rc = set_u64(c, "tsd.storage.memstore_flush_bytes", b.flush_bytes, err))))
        return rc;
    *out = b;
    return CT_OK;
}

void membudget_tune_allocator(const struct membudget *b)
{
    if (b->limit > 0)
        (void)mallopt(M_ARENA_MAX, MEMBUDGET_MALLOC_ARENAS); /* 0 = refused: keep the default */
}

void membudget_describe(const struct membudget *b, char *buf, size_t size)
{
    char parts[512];
    describe_parts(b, parts, sizeof(parts));
    snprintf(buf, size,
             "limit %.1f MiB = %s (+ %.1f MiB unassigned); flush size %.1f MiB, largest "
             "HTTP body %.1f MiB",
             MIB_F(b->limit), parts,
             MIB_F(b->limit - b->fixed - b->ingest_pool - b->conns - b->queries - b->answers -
                   b->head - b->block_cache - b->memstores),
             MIB_F(b->flush_bytes), MIB_F(b->max_body));
}

void membudget_pool_init(struct membudget_pool *p, uint64_t limit)
{
    atomic_init(&p->used, 0);
    p->limit = limit;
}

bool membudget_pool_take(struct membudget_pool *p, uint64_t n)
{
    uint64_t cur = atomic_load_explicit(&p->used, memory_order_relaxed);
    do {
        if (n > p->limit || cur > p->limit - n)
            return false;
    } while (!atomic_compare_exchange_weak_explicit(&p->used, &cur, cur + n, memory_order_relaxed,
                                                    memory_order_relaxed));
    return true;
}

void membudget_pool_give(struct membudget_pool *p, uint64_t n)
{
    uint64_t prev = atomic_fetch_sub_explicit(&p->used, n, memory_order_relaxed);
    (void)prev;
    assert(prev >= n); /* given back more than was taken: our bug */
}

uint64_t membudget_pool_used(struct membudget_pool *p)
{
    return atomic_load_explicit(&p->used, memory_order_relaxed);
}
