/* membudget.h - the TSD's one memory bound, tsd.core.memory_limit_bytes, split into the parts
 * that hold memory: a fixed part for the program itself, the ingest batch pool, connection
 * buffers (connections x the most one connection holds), queries (worker threads x the raw
 * datapoints one query may read x MEMBUDGET_QUERY_POINT_BYTES), the store's block cache and all
 * of its memstores together. Settings the operator gave explicitly are kept and checked; the others
 * are derived from what is left (docs/tsd.md, "Memory limit"). A limit the explicit settings do
 * not fit in is refused with the figures, so the TSD never starts over its bound.
 *
 * With the ingest head on (tsd.storage.head.enable), the head is one more part: its bytes
 * (schema/head.h head_bytes(), exact) are bounded by tsd.storage.head.max_bytes, derived under
 * a limit. The head is the one part that grows with the number of series and frees only at
 * hand-off, so it is where new series are refused: past its bound, a point of a series the
 * head does not hold is refused (INGEST_THROTTLED, "put: Please throttle writes: ..."), while
 * the series it holds keep ingesting (tsd/store.c, store_admit_series).
 *
 * The per-connection buffer caps live here so that telnet.c and http_conn.c enforce the same
 * numbers this file counts. */
#ifndef CT_TSD_MEMBUDGET_H
#define CT_TSD_MEMBUDGET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/ct_err.h"

struct conf;

/* Per-connection buffers. Telnet: input stops being read past READ_HIGH (libevent reads at
 * most SINGLE_READ more at a time), replies stop the reading past OUT_HIGH unsent. HTTP: input
 * past READ_HIGH (read SINGLE_READ at a time), no new request past OUT_HIGH unsent, plus the
 * request body being read and its contiguous (or decompressed) copy: twice the largest body.
 * Under a memory limit HTTP uses the _LIMITED caps (a body moves out of the input as it
 * arrives, so a smaller read watermark only means more, smaller reads; unsent answers past 1 MiB
 * stop the next pipelined request). */
#define TSD_TELNET_READ_HIGH       (256u << 10)
#define TSD_TELNET_SINGLE_READ     (64u << 10)
#define TSD_TELNET_OUT_HIGH        (1u << 20)
#define TSD_HTTP_READ_HIGH         (1u << 20)
#define TSD_HTTP_SINGLE_READ       (64u << 10)
#define TSD_HTTP_OUT_HIGH          (4u << 20)
#define TSD_HTTP_READ_HIGH_LIMITED (256u << 10)
#define TSD_HTTP_OUT_HIGH_LIMITED  (1u << 20)

/* The fixed part: the program and its libraries, thread stacks, allocator slack, UID caches,
 * flush and compaction buffers, plus per writer thread its schema batch and series cache at
 * typical series names. An estimate: an idle TSD holds 6.5 MiB; under overload_tsd.py at a
 * 256 MiB limit the anonymous peak was 85-108 MiB against 158 MiB for every part but the
 * connections (which that test hardly uses). */
#define MEMBUDGET_FIXED_BYTES      (40ull << 20)
#define MEMBUDGET_PER_WRITER_BYTES (8ull << 20)
/* Of those, the caches bounded in bytes (derived when their keys are unset; a set value replaces
 * its share in the fixed part): the UID caches' names, all kinds
 * (tsd.storage.ctsdb.uid_cache_bytes; their slot tables, 6 x uid_cache_size x 24 bytes = 9 MiB
 * at the default size, are in the rest of the fixed part), and each writer's series cache
 * (tsd.storage.series_cache_bytes: the larger of 6 MiB and 1/MEMBUDGET_SERIES_CACHE_SHARE of the
 * limit, at most MEMBUDGET_SERIES_CACHE_MAX; 6 MiB holds ~23,000 series at 100-byte series names, ~12,000 at 200-byte tag values, and
 * a writer whose series do not fit empties its cache and looks every series up again, rewriting
 * its index entries: a cache that grows with the limit keeps a large TSD's series cached). */
#define MEMBUDGET_UID_NAME_BYTES     (8ull << 20)
#define MEMBUDGET_SERIES_CACHE_BYTES (6ull << 20)
#define MEMBUDGET_SERIES_CACHE_SHARE 32
#define MEMBUDGET_SERIES_CACHE_MAX   (1ull << 30)
/* What a query holds per raw datapoint it reads: the decoded point (24 bytes) in growing
 * arrays, its copy in time order, rate and aggregation buffers (query/qexec.c), rounded up. */
#define MEMBUDGET_QUERY_POINT_BYTES 128
/* Smallest derived parts: a limit that leaves less is refused. */
#define MEMBUDGET_MIN_MEMSTORES (4ull << 20)
#define MEMBUDGET_MIN_HEAD      (4ull << 20)
/* The head's share, in tenths, of what is left after the connections, queries and answers
 * (the block cache and memstores share the rest as without the head). */
#define MEMBUDGET_HEAD_TENTHS 4
#define MEMBUDGET_MIN_CONNS     4
#define MEMBUDGET_MIN_QUERY_DPS 100000
/* tsd.http.request.max_body when a limit is set and the key is not: 1 MiB (~7,000 points). */
#define MEMBUDGET_DERIVED_MAX_BODY (1ull << 20)

/* The inputs of the split, each with whether the operator set it (else it is derived). */
struct membudget_in {
    uint64_t limit;       /* tsd.core.memory_limit_bytes; 0 = no limit (nothing derived) */
    int writers;          /* tsd.storage.write_threads */
    uint64_t uid_cache;   /* tsd.storage.ctsdb.uid_cache_bytes */
    bool uid_cache_set;
    uint64_t series_cache; /* tsd.storage.series_cache_bytes, per writer */
    bool series_cache_set;
    bool embedded;        /* tsd.storage.backend=embedded: block cache and memstores are local */
    uint64_t ingest_pool; /* ingest_pool_bytes() of the pipeline's options */
    uint64_t block_cache;
    bool block_cache_set;
    uint64_t memstores; /* tsd.storage.memstore_total_bytes */
    bool memstores_set;
    uint64_t flush_bytes; /* tsd.storage.memstore_flush_bytes */
    bool flush_bytes_set;
    int64_t connections; /* tsd.core.connections.limit (0 = unlimited) */
    bool connections_set;
    uint64_t max_body; /* tsd.http.request.max_body */
    bool max_body_set;
    uint64_t max_chunk; /* tsd.http.request.max_chunk, counted when chunked bodies are on */
    bool chunked;
    uint64_t max_header; /* tsd.http.request.max_header */
    int query_threads;   /* worker threads (tsd.query.threads, 0 resolved to the CPUs) */
    uint64_t query_dps;  /* tsd.query.limits.data_points.default (0 = unlimited) */
    bool query_dps_set;
    uint64_t answers; /* tsd.http.query.answer_buffer_bytes */
    bool answers_set;
    bool head_on;        /* tsd.storage.head.enable */
    uint64_t head_bytes; /* tsd.storage.head.max_bytes */
    bool head_bytes_set;
};

/* The split: the parts add up to at most limit. */
struct membudget {
    uint64_t limit;
    uint64_t fixed;       /* MEMBUDGET_FIXED_BYTES + writers x MEMBUDGET_PER_WRITER_BYTES, the
                           * caches' shares replaced by their set values */
    uint64_t uid_cache;    /* tsd.storage.ctsdb.uid_cache_bytes (part of fixed) */
    uint64_t series_cache; /* tsd.storage.series_cache_bytes per writer (part of fixed) */
    uint64_t ingest_pool; /* the ingest batches */
    uint64_t per_conn;    /* the most one connection holds (telnet or HTTP) */
    int64_t connections;  /* tsd.core.connections.limit */
    uint64_t conns;       /* connections x per_conn */
    uint64_t query_dps;   /* tsd.query.limits.data_points.default */
    uint64_t queries;     /* query_threads x query_dps x MEMBUDGET_QUERY_POINT_BYTES */
    uint64_t answers;     /* query answers held for slow readers (struct membudget_pool) */
    uint64_t head;        /* tsd.storage.head.max_bytes (0 with the head off) */
    uint64_t block_cache; /* tsd.storage.block_cache_bytes (0 with Bigtable) */
    uint64_t memstores;   /* tsd.storage.memstore_total_bytes (0 with Bigtable) */
    uint64_t flush_bytes; /* tsd.storage.memstore_flush_bytes */
    uint64_t max_body;    /* tsd.http.request.max_body */
};

/* The most one connection holds under a memory limit with these HTTP body and header limits. */
uint64_t membudget_per_conn(uint64_t max_body, bool chunked, uint64_t max_chunk,
                            uint64_t max_header);

/* Splits in->limit (which must be > 0). Unset parts, of what is left after the fixed part and
 * the ingest pool: connections half (at least MEMBUDGET_MIN_CONNS of them), queries a fifth (at
 * least MEMBUDGET_MIN_QUERY_DPS datapoints each), held query answers a twentieth, then with the
 * head on MEMBUDGET_HEAD_TENTHS of the rest for the head (at least MEMBUDGET_MIN_HEAD), then the
 * block cache 30% and the memstores
 * 70% of the rest (the memstores at least MEMBUDGET_MIN_MEMSTORES),
 * the flush size an eighth of the memstores (64 KiB .. 16 MiB), the largest body
 * MEMBUDGET_DERIVED_MAX_BODY. Set parts are taken as given. CT_EINVAL, with every figure in the
 * message, when they do not fit. */
CT_MUST_CHECK int membudget_split(const struct membudget_in *in, struct membudget *out,
                                  struct ct_err *err);

/* Reads the inputs from c, splits when tsd.core.memory_limit_bytes > 0 and writes the derived
 * values back into c (so the store, the listener and /api/config see them). With no limit c is
 * unchanged and out->limit is 0. */
CT_MUST_CHECK int membudget_apply(struct conf *c, struct membudget *out, struct ct_err *err);

/* glibc malloc arenas under a limit. By default glibc gives threads up to 8 arenas per CPU,
 * each keeping what its threads freed: in a 60 s overload with its verification queries (2
 * CPUs) the anonymous peak was 167 MiB with them and 127 MiB with 2, at the same throughput. */
#define MEMBUDGET_MALLOC_ARENAS 2
/* With a limit (b->limit > 0), caps malloc's arenas at MEMBUDGET_MALLOC_ARENAS. Call before any
 * thread starts. */
void membudget_tune_allocator(const struct membudget *b);

/* A byte pool shared by threads, charged before memory is held and given back after: the query
 * answers held in connection buffers for clients that read slower than the answer is written
 * (tsd.http.query.answer_buffer_bytes; tsd/http.c). Held by value in the TSD (so the layout is
 * shown); `used` never exceeds `limit`. */
struct membudget_pool {
    _Atomic uint64_t used;
    uint64_t limit;
};
void membudget_pool_init(struct membudget_pool *p, uint64_t limit);
/* Charges n bytes; false (nothing charged) when that would pass the limit. Any thread. */
bool membudget_pool_take(struct membudget_pool *p, uint64_t n);
/* Gives back n bytes charged before. Any thread. */
void membudget_pool_give(struct membudget_pool *p, uint64_t n);
uint64_t membudget_pool_used(struct membudget_pool *p);

/* One line describing the split, for the log. */
void membudget_describe(const struct membudget *b, char *buf, size_t size);

#endif
