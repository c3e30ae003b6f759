/* bt_int.h - what the files of the Bigtable backend share: the store, table and scanner structs,
 * table-id mapping, request helpers and the metadata table. Internal to storage/bigtable/.
 *
 * Files: bigtable.c (store, administration, namespaces, metadata), bt_data.c (writes, increment,
 * check-and-mutate), bt_scan.c (ReadRows scanners and filters), bt_rpc.c (gRPC calls),
 * bt_merge.c (chunk assembly), bt_gc.c (GC rules). */
#ifndef CT_BT_INT_H
#define CT_BT_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "storage/bigtable/bigtable.pb-c.h"
#include "storage/bigtable/bt_buf.h"
#include "storage/bigtable/bt_rpc.h"
#include "storage/wc_backend.h"

/* Bigtable's own limits, enforced before anything is sent (the emulator does not). */
#define BT_MAX_ROW_KEY_BYTES         4096
#define BT_MAX_MUTATIONS_PER_REQUEST 100000
#define BT_MAX_ROW_BYTES             (256u << 20)
/* The wide-column cell limit (docs/storage-contract.md, "Data model"; the engine's too), below
 * Bigtable's own 100 MiB. */
#define BT_MAX_CELL_BYTES (10u << 20)
/* The largest timestamp Bigtable can hold: timestamp_micros = ms * 1000 in an int64. */
#define BT_MAX_TS_MS    (INT64_MAX / 1000)
#define BT_MAX_TABLE_ID 50
/* A MutateRows request is closed at this many encoded bytes; several are sent at once. */
#define BT_BATCH_REQUEST_BYTES (8u << 20)
#define BT_BATCH_IN_FLIGHT     4
/* Retries of idempotent calls (reads, batches with explicit timestamps). */
#define BT_RETRY_ATTEMPTS 8
#define BT_RETRY_FIRST_MS 20
#define BT_RETRY_MAX_MS   2000

#define BT_METHOD_DATA  "/google.bigtable.v2.Bigtable/"
#define BT_METHOD_ADMIN "/google.bigtable.admin.v2.BigtableTableAdmin/"

struct bt_table;

struct bt_store {
    struct wc_store base;
    struct bt_rpc *rpc;
    char instance[300]; /* projects/P/instances/I */
    int64_t deadline_ms;
    struct bt_table *meta; /* the metadata table (bt_meta_format.h) */
    /* bumped by every enable/disable/alter/truncate/drop made through this store, so its table
     * handles re-check the enabled flag at once; other processes' changes are seen within
     * BT_STATE_RECHECK_MS */
    atomic_uint_fast64_t admin_epoch;
};

/* How long a table handle trusts its cached enabled flag (monotonic clock). */
#define BT_STATE_RECHECK_MS 10000

struct bt_table {
    struct wc_table base;
    struct bt_store *s;
    char full[WC_MAX_TABLE_NAME]; /* "ns:qual" */
    char path[512];               /* projects/P/instances/I/tables/ID */
    char routing[1600];           /* table_name=<url-encoded path> */
    pthread_mutex_t mu;           /* guards fams/nfams (replaced on refresh) and the state below */
    struct wc_family_desc *fams;  /* sorted by name */
    size_t nfams;
    bool is_meta;              /* the metadata table itself: never disabled */
    bool enabled;              /* cached enabled flag */
    bool readonly;             /* cached READONLY table attribute */
    uint64_t state_epoch;      /* admin_epoch when `enabled` was read */
    uint64_t state_checked_ns; /* clock_mono_ns() when `enabled` was read */
};

/* ---- helpers shared by the files ---- */

/* Maps "ns:qual" to a Bigtable table id: "qual" in the default namespace when it has no '.',
 * else "ns.qual" (so ids with a '.' always split at the first one). CT_ELIMIT over 50 bytes. */
CT_MUST_CHECK int bt_table_id(const char *full, char *id, size_t size, struct ct_err *err);
/* The inverse; false for ids that are no ctsdb table name. */
bool bt_table_full_name(const char *id, char *full, size_t size);
/* Sleeps before retry `attempt` (1-based) with exponential backoff. */
void bt_backoff(int attempt);
/* Escapes a family name for an RE2 family_name_regex_filter anchored at both ends. */
void bt_family_regex(const char *family, char *out, size_t size);
/* The family's descriptor in the handle's cache, refreshing the cache once from the service
 * when it is missing; copies it to *out. CT_EINVAL naming the valid families if absent. */
CT_MUST_CHECK int bt_table_family(struct bt_table *t, struct wc_bytes family,
                                  struct wc_family_desc *out, struct ct_err *err);
/* Reloads the family cache from the service. */
CT_MUST_CHECK int bt_table_refresh(struct bt_table *t, struct ct_err *err);
/* Returns a copy of the family cache (freed by the caller) in *out, its count in *n. */
CT_MUST_CHECK int bt_table_families(struct bt_table *t, struct wc_family_desc **out, size_t *n,
                                    struct ct_err *err);
/* CT_OK if the table is enabled (cached, see BT_STATE_RECHECK_MS), CT_EBUSY if disabled. */
CT_MUST_CHECK int bt_table_check_enabled(struct bt_table *t, struct ct_err *err);
/* As bt_table_check_enabled, and CT_EINVAL if the table is READONLY: for every write. */
CT_MUST_CHECK int bt_table_check_writable(struct bt_table *t, struct ct_err *err);
/* Opens a handle on a Bigtable table id without checking the enabled flag. */
CT_MUST_CHECK int bt_table_open_id(struct bt_store *s, const char *full, struct bt_table **out,
                                   struct ct_err *err);

/* Small allocation pool for the nested protobuf-c structures of one request. */
struct bt_pool {
    void **ptrs;
    size_t n, cap;
};
void *bt_pool_alloc(struct bt_pool *p, size_t size);
char *bt_pool_strndup(struct bt_pool *p, const void *s, size_t n);
void bt_pool_free(struct bt_pool *p);

/* A bump allocator for protobuf-c decoding: one answer's sub-messages and fields come from one
 * reused block, so decoding a stream allocates nothing per cell once the block has grown.
 * Everything decoded with it dies at bt_arena_reset(). */
struct bt_arena {
    ProtobufCAllocator alloc; /* pass &arena->alloc to *_unpack(); never call free_unpacked */
    uint8_t *buf;
    size_t used, cap;
    void **extra; /* overflow blocks of the current round */
    size_t nextra, extra_cap, extra_bytes;
    bool failed;
};
void bt_arena_init(struct bt_arena *a);
void bt_arena_reset(struct bt_arena *a);
void bt_arena_destroy(struct bt_arena *a);

/* Row filters built in a pool (bt_scan.c); NULL when out of memory. */
Btpb__RowFilter *bt_filter_new(struct bt_pool *p);
/* A column_range_filter of `family` (copied) from lo to hi; an unset bound is open-ended (an
 * unset lo includes the empty qualifier). The bounds' bytes are borrowed. */
Btpb__RowFilter *bt_filter_column_range(struct bt_pool *p, const char *family, struct wc_bytes lo,
                                        bool lo_set, bool lo_closed, struct wc_bytes hi,
                                        bool hi_set, bool hi_closed);
/* A chain (or interleave) of n >= 1 filters; the filter itself when n == 1. */
Btpb__RowFilter *bt_filter_group(struct bt_pool *p, Btpb__RowFilter **fs, size_t n, bool chain);

/* Packs a message into b (replacing its contents); CT_ENOMEM. */
CT_MUST_CHECK int bt_pack(const ProtobufCMessage *m, struct bt_buf *b, struct ct_err *err);

/* ---- entry points of bt_data.c and bt_scan.c, used through the ops table ---- */
int bt_mutate_batch(struct wc_table *t, const struct wc_row_mutation *rows, size_t n,
                    enum wc_durability d, struct ct_err *err);
/* Replaces every version of one cell with `value` at clock_now_ms(), atomically: DeleteFromColumn
 * of all time, then SetCell, in one MutateRow (retried when retryable; the timestamp is
 * explicit). For the metadata table, whose cells must be replaced whole even under a pinned
 * clock; a wc row mutation cannot say this, because its deletes mask its own puts. */
CT_MUST_CHECK int bt_replace_cell(struct bt_table *t, struct wc_bytes row, struct wc_bytes family,
                                  struct wc_bytes qualifier, struct wc_bytes value,
                                  struct ct_err *err);
int bt_increment(struct wc_table *t, struct wc_bytes row, struct wc_bytes family,
                 struct wc_bytes qualifier, int64_t delta, enum wc_durability d, int64_t *out,
                 struct ct_err *err);
int bt_check_and_mutate(struct wc_table *t, struct wc_bytes row, struct wc_bytes family,
                        struct wc_bytes qualifier, const struct wc_bytes *expected,
                        const struct wc_row_mutation *rm, enum wc_durability d, bool *applied,
                        struct ct_err *err);
int bt_scanner_open(struct wc_table *t, const struct wc_scan_options *o, struct wc_scanner **out,
                    struct ct_err *err);
int bt_scanner_next(struct wc_scanner *sc, struct wc_row *row, struct ct_err *err);
void bt_scanner_close(struct wc_scanner *sc);

#endif
