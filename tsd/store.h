/* store.h - the TSD's handle on storage: the wide-column store and the OpenTSDB layout opened
 * from the configuration (tsd.storage.*, tsd.core.auto_create_*, ...), and the ingest write
 * function that turns batches of parsed points into schema batches (series cached per writer,
 * one wc_mutate_batch per group of queued batches at tsd.storage.wal.durability). Shared by the daemon and
 * `ctsdb import`.
 * Threading: tsdstore_write may run on several threads at once (each takes its own writer
 * state); the rest is called from one thread. */
#ifndef CT_TSD_STORE_H
#define CT_TSD_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "storage/ct_err.h"

struct conf;
struct ingest_batch;
struct tsdb;
struct wc_options;
struct wc_store;
struct tsdstore; /* opaque */
struct head;

/* Fills o (wc_options_init first) with the store options the configuration c names: the
 * backend (tsd.storage.backend), its place (directory, or Bigtable project, instance,
 * endpoints, credentials, deadline) and the embedded engine's sizes. Strings point into c.
 * Shared by tsdstore_open and the tools that open a store themselves (tools/tool_opts.h). */
void tsdstore_wc_options(const struct conf *c, struct wc_options *o);
/* Writes where o's store is into buf (cap bytes, NUL-terminated, cut to fit): the directory,
 * or "Bigtable project 'P' instance 'I' at HOST:PORT" (or "on the emulator at HOST:PORT" under
 * BIGTABLE_EMULATOR_HOST). For log lines and error messages; returns the untruncated length. */
size_t tsdstore_describe(const struct wc_options *o, char *buf, size_t cap);

/* How tsdstore_open treats the store: CREATE makes an embedded store's directory when it is
 * missing and the tables the layout lacks (the TSD, `ctsdb import`); EXISTING opens for writing
 * a directory that must exist (the snapshot tools: a mistyped --data is an error, not a new
 * empty store); READ_ONLY creates nothing (the TSD's read-only mode). */
enum tsdstore_mode {
    TSDSTORE_CREATE,
    TSDSTORE_EXISTING,
    TSDSTORE_READ_ONLY
};

/* Opens the store and the layout as mode says. Returns a new handle in *out, closed with
 * tsdstore_close(). c is borrowed for the call. */
CT_MUST_CHECK int tsdstore_open(const struct conf *c, enum tsdstore_mode mode,
                                struct tsdstore **out, struct ct_err *err);
/* Closes the layout and the store; every write must have returned. Accepts NULL. */
void tsdstore_close(struct tsdstore *st);
struct wc_store *tsdstore_wc(struct tsdstore *st);
struct tsdb *tsdstore_tsdb(struct tsdstore *st);
/* The ingest head (schema/head.h) queries read with the stored rows; NULL when it is off. */
struct head *tsdstore_head(struct tsdstore *st);

/* The ingest write function (tsd/ingest.h) with arg = the tsdstore: sets each point's outcome
 * (unknown metric, illegal name, store error) and writes the rest of the nb batches with one
 * schema batch write. */
int tsdstore_write(void *arg, struct ingest_batch *const *b, size_t nb, struct ct_err *err);
/* The deadline of one request on a remote backend (tsd.storage.bigtable.deadline_ms: every
 * backend call of a write group, or of an HTTP request's work, retries included, ends by it;
 * see wc_request_deadline_begin); 0 on the embedded store. */
int64_t tsdstore_request_ms(const struct tsdstore *st);
/* Drops the UID caches and every writer's series cache. */
void tsdstore_drop_caches(struct tsdstore *st);
/* Hands off every chunk of a closed hour the ingest head holds (backfill chunks too, idle or
 * not) and releases its log, as a clean stop does, so a store snapshot taken next holds every
 * point acknowledged before the call but those of open hours. CT_OK with no head. */
CT_MUST_CHECK int tsdstore_handoff_closed(struct tsdstore *st, struct ct_err *err);

/* Storage and UID figures in put-line shape: tags "host=<host> k=v ...". */
typedef void (*tsdstore_stat_fn)(void *arg, const char *metric, int64_t ts_s, const char *value,
                                 const char *tags);
void tsdstore_stats(struct tsdstore *st, const char *host, tsdstore_stat_fn fn, void *arg,
                    int64_t now_s);

#endif
