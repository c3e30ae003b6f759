/* bt_merge.h - assembles Bigtable ReadRows cell chunks into committed rows.
 *
 * The service streams a row as chunks: the row key, family and qualifier are sent only when they
 * change, a value may be split over several chunks (value_size announces the total), reset_row
 * drops the row in progress and commit_row releases it. Keys of committed rows strictly increase
 * (decrease for a reversed read). A stream that breaks these rules is CT_ECORRUPT. Independent of
 * gRPC and protobuf so the public conformance vectors can drive it directly.
 *
 * Internal to storage/bigtable/. */
#ifndef CT_BT_MERGE_H
#define CT_BT_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/ct_err.h"
#include "storage/wc.h"

/* One CellChunk, borrowed for the duration of bt_merge_feed(). */
struct bt_chunk {
    struct wc_bytes row_key; /* len 0 = not set */
    bool has_family;
    struct wc_bytes family;
    bool has_qualifier;
    struct wc_bytes qualifier;
    int64_t ts_us;
    size_t nlabels;
    struct wc_bytes label; /* the first label, if any */
    struct wc_bytes value;
    int32_t value_size;
    bool reset_row;
    bool commit_row;
};

/* One cell of a committed row; bytes valid until the next bt_merge_pop() or bt_merge_feed(). */
struct bt_cell {
    struct wc_bytes family;
    struct wc_bytes qualifier;
    struct wc_bytes value;
    struct wc_bytes label;
    int64_t ts_us;
};

struct bt_merge; /* opaque */

/* Returns a new merger in *out, freed with bt_merge_free(). */
CT_MUST_CHECK int bt_merge_new(bool reversed, struct bt_merge **out, struct ct_err *err);
void bt_merge_free(struct bt_merge *m);

/* Feeds one chunk. Committed rows queue up for bt_merge_pop(). CT_ECORRUPT if the chunk breaks
 * the stream rules (the merger then refuses further chunks), CT_ENOMEM. Rows popped earlier are
 * invalidated once every queued row has been popped. */
CT_MUST_CHECK int bt_merge_feed(struct bt_merge *m, const struct bt_chunk *c, struct ct_err *err);
/* The stream ended normally: CT_ECORRUPT if a row was left uncommitted. */
CT_MUST_CHECK int bt_merge_finish(struct bt_merge *m, struct ct_err *err);
/* The stream broke and will be re-issued after bt_merge_last_key(): drops the row in progress,
 * keeps queued rows and the key order check. */
void bt_merge_restart(struct bt_merge *m);

/* Pops the oldest committed row: CT_OK and *key, *cells (n in *ncells) valid until the next pop
 * or feed; CT_NOTFOUND when none is queued. */
int bt_merge_pop(struct bt_merge *m, struct wc_bytes *key, const struct bt_cell **cells,
                 size_t *ncells);
/* Whether no row is in progress (between rows). */
bool bt_merge_idle(const struct bt_merge *m);
/* Queued committed rows not popped yet. */
size_t bt_merge_pending(const struct bt_merge *m);
/* The key of the last committed row (len 0 if none) and how many rows were committed. */
struct wc_bytes bt_merge_last_key(const struct bt_merge *m);
uint64_t bt_merge_committed(const struct bt_merge *m);

#endif
