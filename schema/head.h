/* head.h - the per-series ingest head: the points of each series' open hour(s) held in memory,
 * compressed, until the hour closes and is handed off to the store as one cell per series.
 *
 * Model (docs/head.md): a series is named by its TSUID; it holds at most HEAD_MAX_HOURS open
 * hours (chunks), each a bit stream of strictly increasing points of one base hour:
 * delta-of-delta timestamps at millisecond resolution, XOR-encoded doubles and zig-zag delta
 * integers, with every point's OpenTSDB identity kept (INT / FLOAT / DOUBLE and the ms flag of
 * schema/dpcodec.h), so a chunk decodes to exactly the dpcodec points that went in.
 * A point the head does not take (its hour was already handed off, it is not after the last
 * point of its hour, or the series has no free chunk) is refused with a reason and the caller
 * writes it as a single cell, as OpenTSDB does; the store's compaction merges it later.
 *
 * Backfill (head_set_backfill): points of hours already closed (< the closed mark) are taken
 * too, into backfill chunks, unless their series already handed that hour off in this run or
 * the head is over its backfill share; a backfill chunk is handed off when its series needs
 * room for a newer hour (its oldest closed chunk goes, through the room function, during the
 * append), when it has not grown for a while (head_close_hours_idle), or when every chunk of a
 * closed hour is asked for (head_close_hours).
 *
 * Memory: head_bytes() is the exact sum of the sizes the head has allocated and not freed
 * (series records, TSUIDs, chunk buffers, the hash table), for a memory bound to count.
 * Threading: every function takes the head's own mutex. The hour callbacks must not call back
 * into the head: the room function runs with the lock held, inside an append; the callbacks of
 * head_close_hours() and head_handoff_moved() run without it (the chunk handed stays readable
 * and takes nothing until dropped), one such pass at a time. */
#ifndef CT_SCHEMA_HEAD_H
#define CT_SCHEMA_HEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "schema/dpcodec.h"
#include "storage/ct_err.h"

struct head; /* opaque: defined in head.c */

/* Open hours one series may hold at once (the current hour and late points of earlier ones
 * within the grace period). */
#define HEAD_MAX_HOURS 3
/* Longest TSUID the head accepts (metric + 8 tag pairs of 4-byte UIDs, with room). */
#define HEAD_MAX_TSUID 255

/* What head_append() did with a point. */
enum head_result {
    HEAD_TAKEN = 0,        /* in the head */
    HEAD_LATE = 1,         /* its hour was handed off (head_closed_before_s, or with backfill
                            * on: by this series, or the head is over its backfill share) */
    HEAD_OUT_OF_ORDER = 2, /* not after the last point of its hour in this series, and not at
                            * a timestamp the chunk holds (a rewrite of a held point is taken:
                            * it replaces the held value, the latest write wins) */
    HEAD_NO_ROOM = 3,      /* the series already holds HEAD_MAX_HOURS other hours */
};

/* One point of a batch (head_append_batch, and the head log's record, schema/headlog.h): its
 * series (borrowed for the call) and the point. */
struct head_point {
    const uint8_t *tsuid;
    size_t tlen; /* 1..HEAD_MAX_TSUID */
    struct dpcodec_point p;
};

/* Points head_append_batch() offers under one hold of the head's lock (readers and the hand-off
 * wait at most that many appends). */
#define HEAD_BATCH_LOCK_POINTS 4096

/* Returns a new empty head in *out, freed with head_free(). CT_ENOMEM if memory cannot be had. */
CT_MUST_CHECK int head_new(struct head **out, struct ct_err *err);
void head_free(struct head *h); /* accepts NULL */

/* Offers point p of the series tsuid (tlen bytes, 1..HEAD_MAX_TSUID). On CT_OK *res says
 * whether the head took it; anything but HEAD_TAKEN leaves the head unchanged. A point at a
 * timestamp its chunk already holds replaces that point (type, ms flag and value: the latest
 * write wins, as the store's reads and compaction keep the newest cell) and is HEAD_TAKEN. CT_EINVAL for a
 * bad TSUID length or a point outside any hour; CT_ENOMEM if a chunk cannot grow (the head is
 * unchanged). tsuid and p are copied. */
CT_MUST_CHECK int head_append(struct head *h, const uint8_t *tsuid, size_t tlen,
                              const struct dpcodec_point *p, enum head_result *res,
                              struct ct_err *err);

/* A series' place in the head, kept by a writer beside its series so that an append finds it
 * without hashing the TSUID (head_append_batch's refs). Held by value; {0, 0} names nothing.
 * It stays usable while the series stays in the head's table: the head checks it under its
 * lock against the table's generation, which moves whenever the table is rebuilt (growth, or
 * series freed after a hand-off), and looks a stale one up again. A ref is only ever given
 * back with the TSUID it was returned for. */
struct head_ref {
    uint32_t slot;
    uint32_t gen;
};

/* Offers pts[0..n) in order, exactly as n head_append() calls would (res[i] is point i's
 * result), taking the head's lock once per HEAD_BATCH_LOCK_POINTS points, not once per point.
 * refs (NULL allowed) is in/out, one per point: on entry the ref kept for point i's series
 * ({0, 0} or stale: looked up), on return its current ref (unchanged if HEAD_LATE before the
 * closed mark with backfill off).
 * Every point is checked first: CT_EINVAL names the first bad one (TSUID length, type, negative
 * time) and the head is unchanged. CT_ENOMEM stops at point *ndone (NULL allowed; n on CT_OK):
 * points before it are in the head as res[] says, it and later ones were not offered. */
CT_MUST_CHECK int head_append_batch(struct head *h, const struct head_point *pts, size_t n,
                                    struct head_ref *refs, enum head_result *res, size_t *ndone,
                                    struct ct_err *err);

/* Calls fn(arg, tsuid, tlen) for every series whose TSUID begins with prefix[0..plen) and that
 * holds a chunk overlapping [start_ms, end_ms], in no particular order, with the head's mutex held
 * (fn must not call into the head; it copies what it keeps). A non-OK return of fn stops the walk
 * and is returned. Cost: nothing past the lock when the head holds no chunk or every chunk lies
 * after end_ms / before start_ms (the head's hour span is kept); else one pass over the table. */
/* Copies for readers that hold many series' points at once (a query over the head): the
 * chunks of series tsuid that overlap [start_ms, end_ms] appended to *buf (grown with realloc;
 * *cap its size; *len in/out, the bytes used) as their bit streams, a few bytes a point, to be
 * decoded after the head's lock is released by head_iter. *npoints is set to the number of the
 * copy's points inside the window; nothing is appended when the head holds none there (then 0).
 * CT_ENOMEM leaves *buf and *len as they were. */
CT_MUST_CHECK int head_copy(struct head *h, const uint8_t *tsuid, size_t tlen, int64_t start_ms,
                            int64_t end_ms, uint8_t **buf, size_t *cap, size_t *len,
                            size_t *npoints, struct ct_err *err);

/* A chunk decoder (the fields are head.c's). */
struct head_bitreader {
    const uint8_t *buf;
    size_t lim;        /* bytes of buf that may be read (initialised) */
    uint64_t pos, end; /* bits */
};
struct head_decoder {
    struct head_bitreader r;
    int64_t base_s;
    uint32_t i, n;
    uint8_t kind, win_lead, win_len;
    int64_t ts, delta;
    uint64_t vi, vf;
};
/* Reads the points of one series' head_copy() (copy[0..len)) inside [start_ms, end_ms], in
 * time order; cell_ts_ms of each is its base hour's end (so a point of the head is newer than any
 * stored cell of that hour when both hold one timestamp). The copy must stay unchanged while it
 * is read. */
struct head_iter {
    const uint8_t *p, *end; /* the copy's chunks not yet started */
    int64_t start_ms, end_ms;
    bool open; /* d is decoding a chunk */
    struct head_decoder d;
};
void head_iter_init(struct head_iter *it, const uint8_t *copy, size_t len, int64_t start_ms,
                    int64_t end_ms);
/* The next point into *p, false at the end. */
bool head_iter_next(struct head_iter *it, struct dpcodec_point *p);

/* The newest point the head holds of series tsuid if its timestamp is >= min_ms: CT_OK and *p
 * (cell_ts_ms as head_iter sets it), else CT_NOTFOUND. Costs no decoding (the chunk keeps it). */
CT_MUST_CHECK int head_last(struct head *h, const uint8_t *tsuid, size_t tlen, int64_t min_ms,
                            struct dpcodec_point *p);

typedef int (*head_series_fn)(void *arg, const uint8_t *tsuid, size_t tlen);
CT_MUST_CHECK int head_each_series(struct head *h, const uint8_t *prefix, size_t plen,
                                   int64_t start_ms, int64_t end_ms, head_series_fn fn, void *arg);

/* One closing hour of one series: pts[0..n) ascending with unique timestamps, all inside
 * [base_s, base_s + 3600). Borrowed for the call. replayed: the chunk took points while the head
 * was being refilled from its log (head_set_replay), so the store may already hold some of them
 * (or other points of the hour) in cells written before a restart: the sink must merge the
 * hour with the stored row, not add a second hour cell. Return CT_OK to let the head drop the
 * chunk; anything else stops head_close_hours(), which returns it and keeps this chunk and the
 * rest. */
typedef int (*head_hour_fn)(void *arg, const uint8_t *tsuid, size_t tlen, int64_t base_s,
                            bool replayed, const struct dpcodec_point *pts, size_t n,
                            struct ct_err *err);
/* Logs a deletion before the head forgets the points (head_set_delete_log): return CT_OK once
 * it is durable, so a replay of the head's log drops the points again. */
typedef int (*head_delete_log_fn)(void *arg, const uint8_t *tsuid, size_t tlen, int64_t from_s,
                                  int64_t to_s, struct ct_err *err);
/* Sets the function head_delete_hours() calls before it drops anything (NULL: none, as during a
 * replay). Set once, before the head is shared. */
void head_set_delete_log(struct head *h, head_delete_log_fn fn, void *arg);
/* Drops series tsuid's chunks whose base hour lies in [from_s, to_s) (delete=true queries delete
 * the same whole hours from the store). When there is one, the delete log function (if set) is
 * called first, without the head's lock, and a failure of it drops nothing and is returned.
 * *nchunks (NULL allowed) counts the chunks dropped. Points appended to those hours after the
 * call are kept. */
CT_MUST_CHECK int head_delete_hours(struct head *h, const uint8_t *tsuid, size_t tlen,
                                    int64_t from_s, int64_t to_s, size_t *nchunks,
                                    struct ct_err *err);

/* Hands off every chunk whose base hour is < before_s (a multiple of 3600): calls fn for each
 * (without the head's lock, in steps of a few hundred chunks: appends and reads go on, and see
 * a chunk until its hour is in the store), drops it once fn returned CT_OK, and raises the closed mark to before_s (points of those hours
 * are HEAD_LATE from then on, unless backfill is on). Series left without chunks are freed. On
 * failure the mark is not raised and chunks not yet handed off stay. *nhours (NULL allowed)
 * counts the chunks handed. */
CT_MUST_CHECK int head_close_hours(struct head *h, int64_t before_s, head_hour_fn fn, void *arg,
                                   size_t *nhours, struct ct_err *err);
/* head_close_hours(), but a backfill chunk (opened for an hour already closed) goes only when
 * it was last appended to before idle_before_ms on the head's clock (head_set_clock_ms);
 * INT64_MAX: all of them, INT64_MIN: none. A handed-off chunk's hour is HEAD_LATE for its series
 * from then on (while the series holds another chunk: see head_set_backfill). */
CT_MUST_CHECK int head_close_hours_idle(struct head *h, int64_t before_s, int64_t idle_before_ms,
                                        head_hour_fn fn, void *arg, size_t *nhours,
                                        struct ct_err *err);
/* Hands off, in steps that leave the head's lock free while fn runs (appends and reads go on;
 * one needing a chunk being handed off waits for it), the oldest chunk of each backfill series
 * that moved on: a series that opened a chunk while holding HEAD_MAX_HOURS - 1 or more, the
 * oldest of a closed hour, is queued by the append (only with backfill on and a room function
 * set), so a backfill in time order keeps about two hours a series and rarely needs room
 * inside an append. A series still ready after its hand-off is handed off again. fn as for
 * head_close_hours (its failure stops the pass, keeps the chunk and is returned); *nhours (NULL
 * allowed) counts the chunks handed. One pass at a time with head_close_hours_idle. */
CT_MUST_CHECK int head_handoff_moved(struct head *h, head_hour_fn fn, void *arg, size_t *nhours,
                                     struct ct_err *err);
/* Whether series are queued for head_handoff_moved (one relaxed atomic load: no lock). */
bool head_moved_pending(struct head *h);
/* Turns backfill on or off (default off). With it on, a point of an hour < the closed mark is
 * taken (a new backfill chunk, or its series' chunk of that hour) unless the series handed that
 * hour off in this run (a series forgets that once it holds no chunk), or it would open a chunk
 * while head_bytes() >= max_bytes (0: no bound): those are HEAD_LATE. A series with
 * HEAD_MAX_HOURS chunks that needs one for a newer hour hands its oldest chunk to room (NULL:
 * none, HEAD_NO_ROOM) if that chunk's hour is closed and older than the point's: room is called
 * with the head's lock held, from inside head_append()/head_append_batch(), and a failure of it
 * keeps the chunk and refuses the point (HEAD_NO_ROOM). Set before the head is shared. */
void head_set_backfill(struct head *h, bool on, size_t max_bytes, head_hour_fn room, void *arg);
/* Marks (on) or stops marking every chunk that takes a point as replayed (head_hour_fn): the
 * head log's replay sets it for its duration. */
void head_set_replay(struct head *h, bool on);
/* The head's clock (ms, any monotonic origin; 0 at start): appends stamp their chunk with it,
 * head_close_hours_idle compares with it. Set by the caller's periodic check. */
void head_set_clock_ms(struct head *h, int64_t now_ms);
/* Raises the closed mark without handing anything off (after a restart, the hours the store
 * already holds); never lowers it. */
void head_set_closed_before(struct head *h, int64_t before_s);
int64_t head_closed_before_s(struct head *h);
/* The oldest open base hour in the head, or INT64_MAX when it holds nothing. */
int64_t head_oldest_hour_s(struct head *h);

/* Exact bytes allocated by the head (see the top of this file). */
size_t head_bytes(struct head *h);
/* Series, chunks and points currently held. */
void head_counts(struct head *h, size_t *nseries, size_t *nchunks, uint64_t *npoints);

#endif
