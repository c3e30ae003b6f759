/* tsd.h - the daemon: one event loop serving telnet and HTTP on one port, the ingest pipeline
 * into the store, the worker pool for slow requests, and a clean shutdown.
 *
 * tsd_run() opens the store (tsd.storage.directory) and the OpenTSDB layout on it, binds
 * tsd.network.bind:tsd.network.port, logs "listening on ADDR:PORT", and serves until SIGTERM or
 * SIGINT (or telnet `diediedie`): then it stops accepting, finishes in-flight requests, writes
 * every buffered datapoint, closes connections and the store, and returns CT_OK.
 *
 * Route handlers reach the daemon's shared objects through the accessors below; the objects
 * live for the whole tsd_run() and are safe to use from worker threads. */
#ifndef CT_TSD_TSD_H
#define CT_TSD_TSD_H

#include <stdbool.h>
#include <stdint.h>

#include "storage/ct_err.h"

struct conf;
struct http_req;
struct tsdb;
struct wc_store;
struct tsd; /* opaque */
struct rollup;
struct head;

/* Runs the daemon with configuration c (borrowed; must stay valid and unchanged until return).
 * Returns CT_OK after a clean shutdown, or an error (bad configuration, cannot bind, store fails
 * to open) with err saying why. */
CT_MUST_CHECK int tsd_run(const struct conf *c, struct ct_err *err);

/* The daemon serving request r. */
struct tsd *http_req_tsd(const struct http_req *r);
const struct conf *tsd_conf(const struct tsd *t);
struct wc_store *tsd_store(struct tsd *t);
/* The OpenTSDB layout handle (UIDs, batches, annotations: schema/tsdb.h). */
struct tsdb *tsd_tsdb(struct tsd *t);
/* The rollup tables (schema/rollup.h), NULL unless tsd.rollups.enable. */
struct rollup *tsd_rollup(struct tsd *t);
/* The ingest head queries must read (schema/head.h), NULL unless tsd.storage.head.enable. */
struct head *tsd_head(struct tsd *t);
/* The executor of queries' parallel parts (valid while the TSD runs). */
struct qpool *tsd_qpool(struct tsd *t);
/* Drops the UID caches (telnet dropcaches, /api/dropcaches). */
void tsd_drop_caches(struct tsd *t);
/* "startup", "ok", "shutting-down" (telnet status, /api/status). */
const char *tsd_status(const struct tsd *t);
/* The host name used in the `host` tag of stats. */
const char *tsd_hostname(const struct tsd *t);
/* Start time in ms since the epoch. */
int64_t tsd_start_ms(const struct tsd *t);
/* /api/query/last's bounded run on the network loop (api_query.c; loop thread only): true if
 * it may be tried now (tsd.query.last.on_loop, an embedded store, and no overrun in the last
 * 10 s); tsd_last_loop_overrun() reports a run that went over its budget or its time, which
 * sends every last query to the workers for the next 10 s. */
bool tsd_last_on_loop(const struct tsd *t, int64_t now_ms);
void tsd_last_loop_overrun(struct tsd *t, int64_t now_ms);
/* The wall time a run on the loop may take (tsd.query.last.loop_us, default 200 us). */
uint64_t tsd_last_loop_ns(const struct tsd *t);

#endif
