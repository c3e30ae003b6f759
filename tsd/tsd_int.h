/* tsd_int.h - private to tsd/: the daemon struct shared by the listener (tsd.c), the HTTP
 * connection code (http_conn.c), telnet (telnet.c), ingest glue and the built-in handlers.
 *
 * Threads: the event-loop thread owns everything here except the fields marked [mu] (guarded
 * by done_mu, touched by workers posting completions) and the objects that are themselves
 * thread-safe (pool, ingest, store, tsdb). */
#ifndef CT_TSD_TSD_INT_H
#define CT_TSD_TSD_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tsd/membudget.h"
#include "tsd/put.h"
#include "tsd/tsd.h"

struct auth;
struct http_req;
struct qexec_options;

/* The query options every endpoint that runs queries uses (tsd/api_query.c): the tsd.query.*
 * limits and threads, the executor, rollups, the ingest head and the tag index. */
void api_query_options(struct http_req *r, struct qexec_options *o);
/* The query limits (tsd/api_limits.c): api_limits_open() reads the per-metric overrides file at
 * start (t->qlimits; NULL without one), api_limits_close() frees them after the workers stop;
 * api_query_limits() sets o's byte limit and overrides (called by api_query_options). */
CT_MUST_CHECK int api_limits_open(struct tsd *t, struct ct_err *err);
void api_limits_close(struct tsd *t);
void api_query_limits(struct http_req *r, struct qexec_options *o);
struct graphite_map;
struct event;
struct event_base;
struct evconnlistener;
struct http_conn;
struct http_req;
struct ingest;
struct prom_series_cache;
struct ingest_batch;
struct telnet_conn;
struct workpool;

#define TELNET_MAX_LINE 1024
#define TELNET_SEQ_RING 1024 /* > batches in the ingest pool */
#define TSD_INGEST_WORKERS_PER_CPU 4 /* t->ingest_pool's threads without a memory limit */

/* The loop's side of telnet ingest (telnet.c). Loop thread only, except [mu]. */
struct telnet_ingest {
    pthread_mutex_t mu;
    struct ingest_batch *done[TELNET_SEQ_RING]; /* [mu] written batches for the loop */
    size_t ndone;                               /* [mu] */
    struct event *done_ev;
    struct event *flush_ev;
    bool timer_armed;
    struct telnet_conn *filling, *filling_tail; /* connections holding a batch, oldest first */
    uint64_t done_no;                           /* batches come back so far */
    size_t inflight;
    struct telnet_conn *waiting;
    struct telnet_conn *blocked, *blocked_tail;
    struct put_point point;
    char line[TELNET_MAX_LINE + 1];
    struct telnet_histo *histo; /* histogram lines' batches and writer (telnet.c); NULL: off */
};

enum tsd_state {
    TSD_STARTUP = 0,
    TSD_OK = 1,
    TSD_SHUTTING_DOWN = 2,
};

struct tsd {
    const struct conf *conf;
    struct event_base *base;
    struct evconnlistener *listener;
    struct evconnlistener *graphite_listener; /* tsd.graphite.port, or NULL */
    struct event *sig_term, *sig_int;
    struct event *done_ev;     /* worker completions -> loop */
    struct event *shutdown_ev; /* diediedie and signals -> orderly shutdown */
    struct event *drain_ev;    /* shutdown: poll until connections are gone */
    struct workpool *pool;
    struct workpool *ingest_pool; /* writes that wait for the log (http_req_defer_ingest) */
    struct qpool *qpool; /* the query executor (qexec_options.pool) */
    struct qlimits *qlimits; /* per-metric query limits (api_limits.c), or NULL */
    struct wc_store *store;
    struct tsdb *tsdb;
    struct tsdstore *tstore; /* owns store and tsdb */
    struct ingest *ingest;
    struct prom_series_cache *prom_cache; /* remote write's series cache, or NULL (api_prom.c) */
    struct prom_scratch_pool *prom_scratch; /* remote write's reusable buffers (api_prom.c) */
    struct rollup *rollup;             /* tsd.rollups.enable: the tables (api_rollup.c) */
    struct tsd_rollup_job *rollup_job; /* the rollup job thread, or NULL */
    enum tsd_state state;
    int64_t start_ms;
    int64_t shutdown_started_ms;
    bool grace_warned;        /* the "still open after the grace period" line was logged */
    bool backend_interrupted; /* wc_interrupt was called (TSD_BACKEND_GRACE_MS into shutdown) */
    char hostname[256];
    char listen_addr[128];
    char graphite_addr[128]; /* tsd.graphite.port's address, when it listens */

    pthread_mutex_t done_mu;
    struct http_req *done_head, *done_tail; /* [mu] finished deferred requests */

    struct http_conn *http_conns; /* open HTTP connections */
    size_t nconns;                /* open connections of both kinds */
    uint64_t next_conn_id;

    /* telnet connections by slot (ids encode the slot; see telnet.c) */
    struct telnet_conn **tconns;
    size_t ntconn_slots;
    uint32_t *tconn_free; /* free slot stack */
    size_t ntconn_free;
    struct telnet_ingest telnet;

    /* settings read once from conf */
    struct put_rules rules;
    struct graphite_map *graphite; /* tsd.graphite.*: NULL when off (tsd/proto_graphite.h) */
    bool graphite_telnet;          /* tsd.graphite.enable: Graphite lines on the telnet side */
    char special_chars[256];
    bool enable_chunked;
    size_t max_chunk, max_body, max_header;
    size_t http_read_high, http_out_high; /* per-connection HTTP buffers (tsd/membudget.h) */
    bool cors_enabled, cors_any;
    char cors_domains[1024]; /* comma list, lower case, spaces removed */
    const char *cors_headers;
    const char *static_root;
    bool return_errors;
    bool no_diediedie;
    bool read_only;
    bool enable_api, enable_ui; /* tsd.core.enable_api / enable_ui */
    int64_t socket_timeout_s;
    int64_t http_write_timeout_s;  /* tsd.http.response.write_timeout (0 = none) */
    struct membudget_pool answers; /* tsd.http.query.answer_buffer_bytes (tsd/http.c) */
    int64_t connections_limit;
    struct auth *auth; /* tsd/auth.h: write/admin protection; read-only after start */

    /* /api/query/last on the network loop (tsd.query.last.on_loop, embedded store only;
     * api_query.c): loop thread only */
    bool last_on_loop;
    uint64_t last_loop_ns;          /* tsd.query.last.loop_us: a loop run's time budget */
    int64_t last_loop_off_until_ms; /* after an overrun the loop leaves last queries alone,
                                       and small /api/query ones too */
    /* small /api/query range queries on the network loop (tsd.query.on_loop, embedded store
     * only; api_query.c (5)): loop thread only */
    bool query_on_loop;
    uint64_t query_loop_ns; /* tsd.query.loop_us: a loop run's time budget */
};

/* telnet.c */
/* Remote write's state (api_prom.c): the series cache of tsd.prometheus.series_cache_bytes.
 * open: CT_OK or CT_ENOMEM; close: after the workers, accepts a TSD it was not opened on. */
CT_MUST_CHECK int api_prom_open(struct tsd *t, struct ct_err *err);
void api_prom_close(struct tsd *t);
CT_MUST_CHECK int telnet_ingest_init(struct tsd *t, struct ct_err *err);
void telnet_ingest_destroy(struct tsd *t);
/* Submits the current batch now. */
void telnet_flush(struct tsd *t);
/* True when no telnet batch is being filled or written. */
bool telnet_ingest_idle(struct tsd *t);
/* Serves fd as a telnet connection; graphite_only (a connection of tsd.graphite.port): every
 * line is a Graphite line, commands and put are refused as such. */
int telnet_conn_start(struct tsd *t, int fd, const char *peer, bool graphite_only,
                      struct ct_err *err);
void telnet_close_all(struct tsd *t);
/* Frees every telnet connection at once (after the loop ended). */
void telnet_free_all(struct tsd *t);
/* A free batch became available: resume connections paused by backpressure. */
void telnet_resume_blocked(struct tsd *t);

/* One stat in put-line shape: tags is "k=v k2=v2". */
typedef void (*tsd_stat_fn)(void *arg, const char *metric, int64_t ts_s, const char *value,
                            const char *tags);

/* tsd.c */
void tsd_request_shutdown(struct tsd *t);
void tsd_conn_closed(struct tsd *t);
/* During shutdown: checks whether everything is written and closed, and ends the loop. */
void tsd_ingest_idle_check(struct tsd *t);
/* Posts a finished deferred request to the loop (any thread). */
void tsd_post_done(struct tsd *t, struct http_req *r);
/* The lines of `stats` (telnet) and /api/stats: calls fn per stat. */
void tsd_collect_stats(struct tsd *t, tsd_stat_fn fn, void *arg);

/* Rollups (api_rollup.c): opens the tables and starts the job when tsd.rollups.enable is set
 * (after the store is open); stops the job and closes them (before the store closes). */
CT_MUST_CHECK int tsd_rollup_start(struct tsd *t, struct ct_err *err);
void tsd_rollup_stop(struct tsd *t);

#endif
