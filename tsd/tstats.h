/* tstats.h - the TSD's counters and latency histograms (with the log level, the daemon's only
 * process-wide state), behind the list of stats OpenTSDB-style tools read (telnet
 * `stats`, /api/stats).
 *
 * Counters are C11 relaxed atomics bumped from any thread; readers get a consistent-enough
 * snapshot (each counter exact, the set not atomic). Per-datapoint paths bump one counter per
 * batch of points, not one per point. */
#ifndef CT_TSD_TSTATS_H
#define CT_TSD_TSTATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "tsd/lathist.h"

enum tstats_counter {
    TSTATS_CONN_TELNET,      /* telnet connections accepted */
    TSTATS_CONN_HTTP,        /* HTTP connections accepted */
    TSTATS_CONN_OPEN,        /* currently open connections (gauge) */
    TSTATS_CONN_REJECTED,    /* refused: tsd.core.connections.limit */
    TSTATS_CONN_TIMEOUT,     /* closed idle: tsd.core.socket.timeout */
    TSTATS_RPC_PUT,          /* telnet put lines */
    TSTATS_RPC_OTHER_TELNET, /* other telnet commands */
    TSTATS_RPC_UNKNOWN,      /* unknown telnet commands */
    TSTATS_HTTP_REQUESTS,    /* HTTP requests */
    TSTATS_HTTP_PUT,         /* /api/put requests */
    TSTATS_HTTP_4XX,
    TSTATS_HTTP_5XX,
    TSTATS_POINTS_ADDED,      /* datapoints accepted into a batch */
    TSTATS_POINTS_WRITTEN,    /* datapoints in the write-ahead log */
    TSTATS_POINTS_FAILED,     /* rejected by storage (unknown metric, store error) */
    TSTATS_ILLEGAL_ARGUMENTS, /* put: illegal argument */
    TSTATS_INVALID_VALUES,    /* put: invalid value */
    TSTATS_UNKNOWN_METRICS,
    TSTATS_STORAGE_ERRORS, /* failed batch writes */
    TSTATS_BATCHES_WRITTEN,
    TSTATS_WRITE_NS,     /* total nanoseconds inside batch writes */
    TSTATS_BACKPRESSURE, /* times reading was paused because the store fell behind */
    TSTATS_LINES_TOO_LONG,
    TSTATS_LAST_LOOP,       /* /api/query/last answered on the network loop */
    TSTATS_LAST_LOOP_OVER,  /* ... tried there, past the budget, sent to a worker */
    TSTATS_LAST_LOOP_WAITS, /* ... runs that waited there: the loop path stopped for 10 s */
    TSTATS_QUERY_LOOP,      /* /api/query answered on the network loop (api_query.c (5)) */
    TSTATS_QUERY_LOOP_OVER, /* ... tried there, past its bound, sent to a worker */
    TSTATS_QUERY_PARALLEL,  /* /api/query runs whose scans used several threads */
    TSTATS_QUERY_BUSY_ONE,  /* ... that used one because every CPU was busy (qexec) */
    /* /api/query requests (not /last) that passed parsing and validation, by how they ended
     * (OpenTSDB's QueryRpc counters; api_query.c says which outcome goes where): */
    TSTATS_QUERY_SUCCESS,    /* answered with the data */
    TSTATS_QUERY_INVALID,    /* the run found a name the store does not know (400) */
    TSTATS_QUERY_EXCEPTIONS, /* any other failure: 408, 413, 500, 503 */
    TSTATS_GRAPHITE_LINES,    /* Graphite plaintext lines (telnet side) */
    TSTATS_GRAPHITE_REJECTED, /* ... refused (no reply: Graphite has none) */
    TSTATS_NCOUNTERS
};

extern _Atomic uint64_t tstats_counters[TSTATS_NCOUNTERS];

static inline void tstats_add(enum tstats_counter c, uint64_t n)
{
    atomic_fetch_add_explicit(&tstats_counters[c], n, memory_order_relaxed);
}
static inline void tstats_sub(enum tstats_counter c, uint64_t n)
{
    atomic_fetch_sub_explicit(&tstats_counters[c], n, memory_order_relaxed);
}
static inline uint64_t tstats_get(enum tstats_counter c)
{
    return atomic_load_explicit(&tstats_counters[c], memory_order_relaxed);
}

/* HTTP request latency, from the request being whole (head and body framed) to its whole answer
 * handed to the connection: OpenTSDB's histogram in ms (tsd.http.latency_<p>pct) and ctsdb's
 * in us (tsd.http.latency_us_<p>pct). Read them with lathist_percentiles(). */
extern struct lathist tstats_http_latency_ms;
extern struct lathist tstats_http_latency_us;

/* Counts one HTTP request that took elapsed_ns: truncated to whole ms (as OpenTSDB's
 * processingTimeMillis) into the first histogram, to whole us into the second. Any thread. */
void tstats_http_latency_add(uint64_t elapsed_ns);

#endif
