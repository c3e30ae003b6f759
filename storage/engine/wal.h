/* wal.h - the write-ahead log of one store: every mutation batch is appended here before it
 * reaches a memstore. The format is described in wal_format.h beside the writer.
 *
 * A log is a directory of numbered segments (wal-<20-digit number>.log). Records carry a CRC32C,
 * a length and the batch's first sequence number; payloads are opaque to the log (the engine
 * encodes its batches). Segments rotate past a size; a segment is removed once the engine says
 * every edit in it is flushed (wal_release_upto()), the active one included.
 *
 * Group commit: concurrent wal_append() callers are gathered by a leader that performs one
 * write(2) (and for FSYNC one fdatasync) for all of them; each caller returns once the write (or
 * sync) covering its record has finished. ASYNC records are written and synced by a background
 * thread within about a second.
 *
 * Threading: all functions are thread-safe. */
#ifndef CT_ENGINE_WAL_H
#define CT_ENGINE_WAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/ct_err.h"

enum wal_sync {
    WAL_SYNC_ASYNC = 0, /* buffered; written and synced by the background thread */
    WAL_SYNC_WRITE = 1, /* write(2) returned before wal_append returns (survives kill -9) */
    WAL_SYNC_FSYNC = 2, /* write(2) and fdatasync returned (survives power loss) */
};

struct wal;

struct wal_options {
    size_t segment_bytes; /* rotate past this size */
    /* Told (may be NULL) when replay cuts off a tail that is not just zeros, naming the segment,
     * the offset and the bytes dropped. */
    void (*warn_fn)(void *arg, const char *msg);
    void *warn_arg;
};

/* Opens the log in `dir` (created if absent) for appending after replay. Returns a new log,
 * closed with wal_close(). */
CT_MUST_CHECK int wal_open(const char *dir, const struct wal_options *o, struct wal **out,
                           struct ct_err *err);
/* Like wal_open(), but appends by copying each record into a MAP_SHARED mapping of the active
 * segment instead of calling write(2); the file grows by fallocate in 1 MiB steps. A record
 * copied into the mapping is in the kernel's page cache when wal_append() returns, so
 * WAL_SYNC_WRITE keeps its guarantee (survives kill -9, not power loss) without a system call
 * per append; WAL_SYNC_FSYNC still shares one fdatasync per group; ASYNC behaves like WRITE and
 * is synced within ~1 s. Running out of space shows up when the file is extended (CT_EIO,
 * sticky). Same format: either mode replays the other's segments. The engine uses this one. */
CT_MUST_CHECK int wal_open_mapped(const char *dir, const struct wal_options *o, struct wal **out,
                                  struct ct_err *err);
/* Opens the log in `dir` for wal_replay() only (no directory is created, no tail is cut, no
 * copy is kept, no thread is started; wal_append() fails): what a read-only store uses to see
 * the records not yet in block files without changing anything. A missing `dir` is an empty
 * log. */
CT_MUST_CHECK int wal_open_read_only(const char *dir, const struct wal_options *o, struct wal **out,
                                     struct ct_err *err);
/* Flushes and syncs buffered records, stops the background thread, frees; accepts NULL. */
void wal_close(struct wal *w);
/* Where replay keeps a copy of a newest segment whose damage has valid records behind it
 * before cutting it (created 0700 when needed; without this call no copy is kept). Call
 * before wal_replay(). The store passes <data>/quarantine. */
void wal_set_quarantine_dir(struct wal *w, const char *dir);

/* Replays every complete record of every segment in order, calling fn(arg, seq, payload, len).
 * Stops at a torn or corrupt tail of the LAST segment without failing (the tail is truncated
 * away); an all-zero tail ends any segment's records (a mapped segment's preallocated end);
 * other corruption in an earlier segment is CT_ECORRUPT naming segment and offset. Must be
 * called before the first wal_append(). fn returning non-OK stops replay with that code. */
typedef int (*wal_replay_fn)(void *arg, uint64_t seq, const uint8_t *payload, size_t len,
                             struct ct_err *err);
CT_MUST_CHECK int wal_replay(struct wal *w, wal_replay_fn fn, void *arg, struct ct_err *err);

/* Appends one record (copied before return) stamped with `seq`; returns when the sync level is
 * met. A failed write is sticky: later appends fail with the same error. */
CT_MUST_CHECK int wal_append(struct wal *w, uint64_t seq, const void *payload, size_t len,
                             enum wal_sync sync, struct ct_err *err);
/* Writes and syncs everything buffered so far. */
CT_MUST_CHECK int wal_sync(struct wal *w, struct ct_err *err);
/* Tells the log that every record with seq <= seq is durable elsewhere (flushed to files):
 * segments holding only such records are deleted, the active one included when nothing is
 * pending (the next append opens a new segment). */
CT_MUST_CHECK int wal_release_upto(struct wal *w, uint64_t seq, struct ct_err *err);

/* Like wal_release_upto(), but deletes only segments numbered below `below_num` (the engine
 * first records in its catalog which segments it still needs, then releases the rest). */
CT_MUST_CHECK int wal_release_before(struct wal *w, uint64_t seq, uint64_t below_num,
                                     struct ct_err *err);
/* The number of the oldest segment wal_release_upto(seq) would keep (one holding a record with
 * a seq above `seq`, or one it cannot read), or the number the next new segment gets if it
 * would keep none. */
uint64_t wal_oldest_needed(struct wal *w, uint64_t seq);
/* Lifts a sticky error that left nothing inconsistent (a mapped segment that could not be
 * created or extended, e.g. a full disk; no record was copied): CT_OK, and the next append
 * tries again. Any other sticky error (a failed write or sync) stays and is returned. */
CT_MUST_CHECK int wal_clear_error(struct wal *w, struct ct_err *err);
/* The sticky error's code (CT_OK if none); *recoverable tells whether wal_clear_error() may
 * lift it. */
int wal_error_state(struct wal *w, bool *recoverable);
/* Segment numbers: new segments are numbered from at least `num` on (the engine keeps numbers
 * growing over the store's life, so a deleted segment leaves a gap it can see). No effect once
 * a segment is being appended to. */
void wal_set_next_num(struct wal *w, uint64_t num);
/* The number the next new segment gets. */
uint64_t wal_next_num(struct wal *w);

struct wal_stats {
    uint64_t bytes_written;
    uint64_t writes; /* write(2) calls: fewer than appends under group commit */
    uint64_t syncs;
    uint64_t appends;
    uint64_t segments;
};
void wal_get_stats(struct wal *w, struct wal_stats *out);

#endif
