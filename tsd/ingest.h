/* ingest.h - the datapoint pipeline from the parsers to the store: reusable batches of points,
 * a fixed pool of them (the memory bound), and writer threads that hand full batches to a
 * write function (the schema layer's batch write, tsd/store glue) and report back.
 *
 * Flow: a producer (the event loop for telnet, a worker for HTTP /api/put, the importer) takes
 * a free batch (ingest_batch_try_get / ingest_batch_get), appends points (copied into the
 * batch's arena: no allocation per point once the batch reached its working size), and submits
 * it. A writer thread calls the write function, which fills each point's outcome, then calls
 * the submitter's done callback on the writer thread; the submitter reads outcomes and gives
 * the batch back with ingest_batch_release(). Writers share themselves fairly between lanes
 * (ingest_batch_set_lane). When every batch is in use, producers wait
 * (or, on the event loop, stop reading sockets): that is the backpressure.
 *
 * Threading: a batch belongs to one thread at a time (producer, then writer, then the done
 * callback's thread). The pool and queue are thread-safe. */
#ifndef CT_TSD_INGEST_H
#define CT_TSD_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/ct_err.h"
#include "tsd/put.h"

struct ingest;       /* opaque */
struct ingest_batch; /* opaque */

/* Outcome of one point, set by the write function (default INGEST_PENDING until written). */
enum ingest_outcome {
    INGEST_PENDING = 0,
    INGEST_WRITTEN = 1,        /* in the write-ahead log */
    INGEST_ILLEGAL = 2,        /* rejected: illegal argument (message says why) */
    INGEST_UNKNOWN_METRIC = 3, /* auto_create_metrics is off and the metric is new */
    INGEST_STORE_ERROR = 4,    /* the store failed the write */
    INGEST_THROTTLED = 5,      /* refused for memory: a new series past the memory bound
                                  (tsd/membudget.h; message says which part is full) */
};

/* The write function: writes every point of the nb batches b[0..nb) (ingest_batch_point gives
 * them; nb >= 1: batches that were queued when the writer took them, in the order taken (fairly
 * by lane, ingest_batch_set_lane), up to group_points in all), setting each point's outcome with
 * ingest_batch_set_outcome(). Returns CT_OK, or an error for the group as a whole (then points
 * still PENDING count as INGEST_STORE_ERROR with err's message). Called from writer threads; arg
 * is the one given to ingest_new(). */
typedef int (*ingest_write_fn)(void *arg, struct ingest_batch *const *b, size_t nb,
                               struct ct_err *err);
/* Called on the writer thread once b is written (or failed). The callee owns b and must give
 * it back with ingest_batch_release() (on any thread). */
typedef void (*ingest_done_fn)(void *arg, struct ingest_batch *b);

struct ingest_options {
    int writers;         /* writer threads; default 1 */
    size_t batches;      /* batches in the pool (the memory bound); default 32 */
    size_t batch_points; /* points per batch before it counts as full; default 4096 */
    size_t batch_bytes;  /* arena bytes per batch before it counts as full; default 512 KiB */
    size_t group_points; /* a writer takes queued batches together up to this many points
                            (the first batch always); default 16384 */
};
/* The pool's batches under a memory limit (tsd.core.memory_limit_bytes): 32 by default smooth
 * the writer's bursts (an hour's hand-off of every series), 8 keep the bound's share small. */
#define INGEST_BATCHES_BOUNDED 8
/* Most batches one write function call gets. */
#define INGEST_MAX_GROUP 16
void ingest_options_init(struct ingest_options *o);
/* The most memory a pipeline with options o holds in its batches (arenas, point records and
 * the batches themselves): what the pool adds to the TSD's memory budget (tsd/membudget.h). */
size_t ingest_pool_bytes(const struct ingest_options *o);

/* Starts the writer threads. Returns a new pipeline in *out, freed with ingest_free(). */
CT_MUST_CHECK int ingest_new(const struct ingest_options *o, ingest_write_fn fn, void *arg,
                             struct ingest **out, struct ct_err *err);
/* Writes every submitted batch, stops the writers and frees everything; accepts NULL. Every
 * batch must have been released or submitted. */
void ingest_free(struct ingest *g);

/* A free, empty batch, or NULL if all are in use. */
struct ingest_batch *ingest_batch_try_get(struct ingest *g);
/* A free, empty batch while more than keep are free, else NULL: a producer that already has
 * batches in the pipeline leaves the last free ones to producers that have none (telnet keeps
 * one for connections without a batch queued or being written). */
struct ingest_batch *ingest_batch_try_get_spare(struct ingest *g, size_t keep);
/* A free, empty batch, waiting until one is released. */
struct ingest_batch *ingest_batch_get(struct ingest *g);
/* Appends a point (strings copied; owner is the producer's tag, e.g. a connection id). Returns
 * false, adding nothing, when the batch is full: submit it and take another. A point that does
 * not fit even an empty batch (more than INGEST_MAX_TAGS tags, or names longer than 64 KiB)
 * is refused by an empty batch too: the producer reports it as too large. */
bool ingest_batch_add(struct ingest_batch *b, const struct put_point *p, uint64_t owner);
/* The series key ingest_batch_add builds of p (the metric, then each tag key and value, in p's
 * order, each followed by a NUL) has this hash in g's batches (random seed per pipeline). */
uint64_t ingest_key_hash(const struct ingest *g, const char *key, size_t len);
/* ingest_batch_add for a producer that keeps series keys: key[0..len) is the key
 * ingest_batch_add would build of p's names (not read here) and hash its ingest_key_hash (the
 * caller's duty: a wrong hash files the point under another series in the writer's caches).
 * One copy, no hashing; p's timestamp, value and ntags are read. */
bool ingest_batch_add_key(struct ingest_batch *b, const struct put_point *p, const char *key,
                          size_t len, uint64_t hash, uint64_t owner);
size_t ingest_batch_count(const struct ingest_batch *b);
bool ingest_batch_full(const struct ingest_batch *b);
/* Queues b for writing; done(arg, b) runs on a writer thread when it is written. */
void ingest_submit(struct ingest *g, struct ingest_batch *b, ingest_done_fn done, void *arg);
/* Empties b and returns it to the pool. */
void ingest_batch_release(struct ingest *g, struct ingest_batch *b);
/* Batches not in the pool (being filled, queued or written). */
size_t ingest_in_use(struct ingest *g);

/* Most tags a point in a batch may have (tsd.storage.max_tags is at most this). */
#define INGEST_MAX_TAGS 64

/* A point of a batch as the write function sees it: NUL-terminated names in the batch's arena,
 * valid until the batch is released. Held by value (the tag arrays are in the struct). */
struct ingest_point {
    const char *metric;
    int64_t ts_ms;
    bool ms; /* given in milliseconds */
    struct put_value value;
    size_t ntags;
    const char *tagk[INGEST_MAX_TAGS];
    const char *tagv[INGEST_MAX_TAGS];
    uint64_t owner;
    const char *series_key; /* "metric\0k1\0v1\0..." as added: the cache key of the series */
    size_t series_key_len;
    uint64_t series_hash; /* hash_bytes() of series_key with the pipeline's seed */
};
/* Fills *p with point i (0 <= i < count). */
void ingest_batch_point(const struct ingest_batch *b, size_t i, struct ingest_point *p);

/* The part of a point a writer needs for a series it already knows: no walk over the tags.
 * Strings valid until the batch is released. Held by value. */
struct ingest_point_brief {
    const char *series_key;
    size_t series_key_len;
    uint64_t series_hash;
    int64_t ts_ms;
    bool ms;
    struct put_value value;
};
/* Fills *p with the brief form of point i (0 <= i < count). */
void ingest_batch_point_brief(const struct ingest_batch *b, size_t i, struct ingest_point_brief *p);

/* Point i's series_hash alone (to prefetch a cache slot ahead of use). */
uint64_t ingest_batch_series_hash(const struct ingest_batch *b, size_t i);

/* Sets point i's outcome; msg (copied, may be NULL) is the reason for a failure. */
void ingest_batch_set_outcome(struct ingest_batch *b, size_t i, enum ingest_outcome o,
                              const char *msg);
/* Like ingest_batch_set_outcome with e's message as the reason, also recording e->code, so a
 * producer can tell a backend that did not answer (CT_EUNAVAIL: the HTTP status 503) from other
 * failures. */
void ingest_batch_set_failure(struct ingest_batch *b, size_t i, enum ingest_outcome o,
                              const struct ct_err *e);
/* The ct_err code of point i's failure: the one given to ingest_batch_set_failure, the write
 * function's error for the points it left pending; CT_OK when not known (or not failed). */
int ingest_batch_outcome_code(const struct ingest_batch *b, size_t i);
/* Point i's outcome and its reason ("" if none). */
enum ingest_outcome ingest_batch_outcome(const struct ingest_batch *b, size_t i, const char **msg);
/* The batch-level result: CT_OK or the write function's error. */
int ingest_batch_result(const struct ingest_batch *b, const char **msg);
/* The batch's fairness lane (0 unless set; reset when released). Writers share themselves
 * between lanes by points (start-time fair queuing, ingest.c): a lane with nothing queued or
 * being written goes before the backlog of the others, and while two or more lanes are queued a
 * group is one batch's worth of points; so a light lane's batch waits for the groups being
 * written, not for another lane's backlog. Batches of one lane are taken in the order queued.
 * The telnet side gives each connection its own lane; batches whose producer sets none share
 * lane 0. */
void ingest_batch_set_lane(struct ingest_batch *b, uint64_t lane);
/* A producer's sequence number for the batch (set freely by the producer). */
void ingest_batch_set_seq(struct ingest_batch *b, uint64_t seq);
uint64_t ingest_batch_seq(const struct ingest_batch *b);

#endif
