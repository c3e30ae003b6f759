/* headlog.h - the head's write-ahead log: packed batches of points appended (at the caller's
 * sync level) before the head takes them, replayed into the head when the TSD starts, and
 * released once every hour they hold has been handed off to the store.
 *
 * Built on the storage engine's log (storage/engine/wal.h: segments, CRC framing, group commit,
 * torn-tail cut) in its own directory, so that the head's records never mix with the store's and
 * can be released on the head's own schedule (hours closing), not on memstore flushes. The
 * payload format is in schema/headlog_format.h.
 *
 * Release: the log remembers, for every hour with points in unreleased records, the first
 * record (sequence number) holding one. headlog_release(before_s) forgets hours < before_s and
 * releases every record older than the first record of the oldest hour still open; the mark is
 * kept in a small file, so a restart replays only records that may hold points not yet in the
 * store.
 *
 * Replay may meet points the head refuses (an out-of-order point logged by two writers racing,
 * or one that was written as a single cell at the time): they go to the caller's refused
 * function, which writes them to the store as the ingest path does for refused points. Writing a
 * point twice is harmless: the same value at the same time is merged by compaction.
 *
 * Errors: a failed append (points or a delete; a write or sync of the engine log) refuses what
 * it carried and becomes the log's error state: counted, kept (the first message) with its age,
 * reported through the log function (headlog_set_log: the first failure, then at most one line
 * per HEADLOG_ERR_LOG_MS with the count since), until an append succeeds again, which clears it
 * (a recovery, reported once). A full disk leaves nothing half written (the engine log could not
 * extend or create a segment), so it is lifted before the next append, which tries again: the
 * state clears by itself once space returns (transient). Any other write or sync failure stays
 * sticky until a restart. A failed release (its mark file) refuses nothing: it is returned to the
 * caller, not part of the state, and the next release writes the mark again.
 *
 * Records name their series through a series dictionary shared by consecutive records
 * (headlog_format.h): a series' TSUID is written once per dictionary, each point is coded against
 * the series' previous point in the dictionary, and release never deletes a dictionary an
 * unreleased record uses.
 *
 * Threading: every function is thread-safe. Appends find their series and group their points by
 * series concurrently, then take turns (one lock) to name their series against the dictionary,
 * code each point against its series' previous point (the dictionary's state) and copy the record
 * into the engine log; FSYNC appends then share one fdatasync. */
#ifndef CT_SCHEMA_HEADLOG_H
#define CT_SCHEMA_HEADLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "schema/dpcodec.h"
#include "schema/head.h"
#include "storage/ct_err.h"
#include "storage/engine/wal.h"

struct headlog; /* opaque: defined in headlog.c */

/* Opens (creating) the log in dir. Returns a new log in *out, closed with headlog_close().
 * Call headlog_replay() once before the first append. */
CT_MUST_CHECK int headlog_open(const char *dir, struct headlog **out, struct ct_err *err);
/* What headlog_open_opts() may change; zero fields take the default. */
struct headlog_options {
    size_t segment_bytes; /* the engine log's segments roll past this (HEADLOG_SEGMENT_BYTES) */
};
/* headlog_open() with options o (NULL: the defaults); o is read during the call only. */
CT_MUST_CHECK int headlog_open_opts(const char *dir, const struct headlog_options *o,
                                    struct headlog **out, struct ct_err *err);
void headlog_close(struct headlog *l); /* syncs and frees; accepts NULL */
/* Reads the released mark of the log in dir (schema/headlog_format.h) into *seq: 0 when there is
 * none. CT_ECORRUPT names the file when it is not a whole, checksummed mark of this version
 * (what `ctsdb fsck` reports; a log without its mark replays from its first record, which only
 * re-merges points the store already holds). */
CT_MUST_CHECK int headlog_mark_read(const char *dir, uint64_t *seq, struct ct_err *err);
/* Opens the log in dir for headlog_replay() only (nothing is created, cut or written; a missing
 * dir is an empty log): what a read-only TSD and `ctsdb query --data` use to see the open hours
 * of a TSD that wrote with the head on. headlog_append() and headlog_release() then fail. */
CT_MUST_CHECK int headlog_open_read_only(const char *dir, struct headlog **out, struct ct_err *err);
/* A head filled read-only from the log in dir (headlog_open_read_only + headlog_replay, points
 * the head refuses are skipped: the writer put them in the store). *out is NULL when the log
 * holds no point. *npoints (NULL allowed) counts the points read. */
CT_MUST_CHECK int headlog_load_read_only(const char *dir, struct head **out, uint64_t *npoints,
                                         struct ct_err *err);

/* A point replay could not put in the head (res says why). Return CT_OK once it is durably
 * elsewhere; anything else stops the replay with that code. */
typedef int (*headlog_refused_fn)(void *arg, const uint8_t *tsuid, size_t tlen,
                                  const struct dpcodec_point *p, enum head_result res,
                                  struct ct_err *err);
/* Replays every unreleased record into h; *npoints (NULL allowed) counts the points read.
 * CT_ECORRUPT names the record that fails to parse (a torn tail of the last segment is cut by
 * the engine's log and is not an error). */
CT_MUST_CHECK int headlog_replay(struct headlog *l, struct head *h, headlog_refused_fn fn,
                                 void *arg, uint64_t *npoints, struct ct_err *err);

/* Appends pts[0..n) as one record; returns once the sync level is met. Sticky on a write error
 * (the engine log's rule). CT_EINVAL for a bad TSUID length (nothing is appended). */
CT_MUST_CHECK int headlog_append(struct headlog *l, const struct head_point *pts, size_t n,
                                 enum wal_sync sync, struct ct_err *err);
/* headlog_append() with the record's series ids given by a caller that knows its series (a
 * writer's series cache): ids[i] is point i's series, numbered from 0 in the order of their first
 * point (each id is at most one more than the greatest before it), and points of one id have
 * the same TSUID (the record lists the first one's). CT_EINVAL (nothing appended) for an id out
 * of that order or a TSUID length that differs within an id. Saves hashing every point's TSUID
 * to find its series. */
CT_MUST_CHECK int headlog_append_ids(struct headlog *l, const struct head_point *pts,
                                     const uint32_t *ids, size_t n, enum wal_sync sync,
                                     struct ct_err *err);

/* Appends a delete record: series tsuid's hours in [from_s, to_s) are dropped on replay (see
 * headlog_format.h); returns once the sync level is met. A head_delete_log_fn's body. */
CT_MUST_CHECK int headlog_append_delete(struct headlog *l, const uint8_t *tsuid, size_t tlen,
                                        int64_t from_s, int64_t to_s, enum wal_sync sync,
                                        struct ct_err *err);
/* Every hour < before_s is in the store: releases the records that hold only such hours (and
 * whatever older records a segment shares with them), after writing the mark. */
CT_MUST_CHECK int headlog_release(struct headlog *l, int64_t before_s, struct ct_err *err);
/* Whether headlog_release(before_s) would release something: a record past the mark holding
 * no hour >= before_s (e.g. one whose points all reached the store as single cells, when the
 * head holds no hour to hand off), or a segment left after the whole log was released (a
 * release that found an append in flight). Changes nothing. */
bool headlog_releasable(struct headlog *l, int64_t before_s);

/* Reports of the error state (see the top): error true for a failure, false for the line saying
 * it cleared. Called without the log's locks; must not call into the log. */
typedef void (*headlog_log_fn)(void *arg, bool error, const char *msg);
/* Sets the report function (NULL: none). Set once, before the log is shared. */
void headlog_set_log(struct headlog *l, headlog_log_fn fn, void *arg);
/* At most one failure line per this many ms after the first (the rest are counted in it). */
#define HEADLOG_ERR_LOG_MS 10000

struct headlog_stats {
    uint64_t records, points, bytes; /* appended since open */
    uint64_t released_seq;           /* the mark */
    size_t open_hours;               /* hours with points in unreleased records */
    /* the error state: appends fail (error_transient: a full disk, tried again at each append) */
    bool error_active, error_transient;
    uint64_t error_age_ms;       /* since the first failure of the current state (0 if none) */
    uint64_t errors, recoveries; /* failed appends; states cleared by a later append */
};
void headlog_get_stats(struct headlog *l, struct headlog_stats *out);
/* The error state's message (the first failure's, naming the head log and the cause) in *out and
 * its code; CT_OK with an empty message when appends succeed. */
int headlog_error(struct headlog *l, struct ct_err *out);

#endif
