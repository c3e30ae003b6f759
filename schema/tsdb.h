/* tsdb.h - the OpenTSDB data layout as one handle: table creation (tsdb, tsdb-uid, tsdb-meta),
 * UIDs, series resolution, batched datapoint writes, the hourly compaction hook, annotations.
 *
 * Write path: the caller resolves a series to its TSUID once (tsdb_series_resolve(), cached UIDs),
 * adds points to a caller-owned struct tsdb_batch (no allocation per point once the batch has
 * grown to its working size) and writes the batch with one wc_mutate_batch(). Every point is one
 * OpenTSDB single cell (2- or 4-byte qualifier); the compaction hook later merges each complete
 * hour into one cell (ctsdb's compressed format by default, or OpenTSDB's compacted cell).
 *
 * Threading: a tsdb handle may be shared by threads; a batch belongs to one thread at a time. */
#ifndef CT_SCHEMA_TSDB_H
#define CT_SCHEMA_TSDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "schema/dpcodec.h"
#include "schema/rowkey.h"
#include "schema/uid.h"
#include "storage/ct_cfg.h"
#include "storage/ct_err.h"
#include "storage/wc.h"

#define TSDB_DATA_FAMILY "t"
#define TSDB_META_FAMILY "name"

/* The salt bucket count of a new store when nothing is set: 8. Salting is on by default
 * (width 1) so that the series of a metric spread over regions instead of all landing at the end
 * of one key range, one hot region. The count is chosen for a single machine: each bucket costs
 * every query one scan (a query reads every bucket), and each region has its own memstore, so
 * more regions flush smaller files under the same memory; fewer regions leave threads without a
 * region of their own. 8 is twice the query's default scan threads (min(CPUs, 4); with 8 buckets
 * each thread gets 4 pieces of work, each bucket's hours cut in 2 time slices, query/qexec.c)
 * and four times the engine's background (flush and compaction) threads, so every thread has
 * regions to itself. OpenTSDB's 20 is made for clusters with many region servers. Not measured
 * against other counts. */
#define TSDB_DEFAULT_SALT_BUCKETS "8"

/* Settings, each set by one configuration key (tsdb_config_keys(), also in docs/schema.md).
 * Initialise with tsdb_config_init() (every key's default), change with tsdb_config_set().
 * Strings are borrowed for tsdb_open()/tsdb_create_tables() only (copied as needed). */
struct tsdb_config {
    const char *data_table;      /* tsd.storage.hbase.data_table */
    const char *uid_table;       /* tsd.storage.hbase.uid_table */
    const char *meta_table;      /* tsd.storage.hbase.meta_table */
    struct rowkey_layout layout; /* tsd.storage.salt.*, tsd.storage.uid.width.* */
    bool layout_given;           /* a layout key was set (tsdb_config_set): see tsdb_open() */
    unsigned max_tags;           /* tsd.storage.max_tags (<= ROWKEY_MAX_TAGS) */
    bool auto_create_metrics;    /* tsd.core.auto_create_metrics (ctsdb's default true) */
    bool auto_create_tagks;      /* tsd.core.auto_create_tagks */
    bool auto_create_tagvs;      /* tsd.core.auto_create_tagvs */
    bool random_metrics;         /* tsd.core.uid.random_metrics */
    const char *allow_special;   /* tsd.core.tag.allow_specialchars */
    size_t uid_cache_entries;    /* tsd.storage.ctsdb.uid_cache_size, per kind and direction */
    uint64_t uid_cache_bytes;    /* tsd.storage.ctsdb.uid_cache_bytes, names of all kinds */
    unsigned uid_generation_check_ms; /* tsd.storage.ctsdb.uid_generation_check_ms (uid.h) */
    /* table creation (create-tables, first start) */
    bool create_tables;              /* tsd.storage.ctsdb.create_tables: in tsdb_open() */
    int64_t ttl_s;                   /* tsd.storage.ctsdb.ttl (0 there = WC_TTL_FOREVER here) */
    uint32_t min_versions;           /* tsd.storage.ctsdb.min_versions */
    enum wc_compression compression; /* tsd.storage.ctsdb.compression, every family */
    enum wc_bloom bloom;             /* tsd.storage.ctsdb.bloom, every family */
    enum wc_block_encoding encoding; /* data family DATA_BLOCK_ENCODING; PREFIX (no key) */
    unsigned regions_per_bucket;     /* tsd.storage.ctsdb.regions_per_bucket */
    /* cells */
    bool enable_compaction;     /* tsd.storage.enable_compaction */
    bool fix_duplicates;        /* tsd.storage.fix_duplicates */
    enum dpcodec_format format; /* tsd.storage.ctsdb.compact_format */
    int64_t compaction_delay_s; /* tsd.storage.ctsdb.compaction_delay */
    bool read_only;             /* never write (tools): no hook, no table creation (no key) */
};
/* Every field at its key's default; layout_given false. */
void tsdb_config_init(struct tsdb_config *c);
CT_MUST_CHECK int tsdb_config_check(const struct tsdb_config *c, struct ct_err *err);

/* The schema's configuration keys (name, type, default, range, meaning, owner), sorted by key;
 * *n gets the count. The table is static. The TSD's configuration (tsd/conf.h) serves these
 * keys and passes them through to tsdb_config_set(). */
const struct ct_cfg_key *tsdb_config_keys(size_t *n);
/* Applies one key of tsdb_config_keys() to c after checking the value against the table
 * (ct_cfg_check: the message names key and value). Setting a layout key sets c->layout_given.
 * String values (table names, allow_specialchars) are borrowed: value must outlive c's use.
 * CT_NOTFOUND (err untouched) if the key is not a schema key; CT_EINVAL for a bad value. */
CT_MUST_CHECK int tsdb_config_set(struct tsdb_config *c, const char *key, const char *value,
                                  struct ct_err *err);
/* Writes the value of schema key `key` in c into buf (cap bytes) in the key's syntax (so that
 * tsdb_config_set(key, buf) gives the same setting); CT_NOTFOUND if it is not a schema key. */
CT_MUST_CHECK int tsdb_config_get(const struct tsdb_config *c, const char *key, char *buf,
                                  size_t cap);

/* Creates whichever of the three tables is missing, with OpenTSDB's families and c's settings;
 * the data table is pre-split at every salt bucket (times regions_per_bucket). *created (NULL
 * allowed) gets how many were created. */
CT_MUST_CHECK int tsdb_create_tables(struct wc_store *s, const struct tsdb_config *c, int *created,
                                     struct ct_err *err);

/* The key layout the tables were created with, as tsdb_create_tables() records it in the meta
 * table (row "\0ctsdb.layout", family name, qualifier "layout"). CT_NOTFOUND if the meta table or
 * the record is absent (tables made by an older build or by hand). Tools use it so that they read
 * a store with the layout it was written with. */
CT_MUST_CHECK int tsdb_layout_stored(struct wc_store *s, const char *meta_table,
                                     struct rowkey_layout *out, struct ct_err *err);

struct tsdb;

/* Opens the layout on store s (borrowed until tsdb_close()): decides the key layout, creates
 * missing tables when c->create_tables (and not read_only), opens them, starts the UID service
 * and installs the compaction hook (skipped on backends without compactions). Returns a new
 * handle in *out, freed with tsdb_close() (before wc_close()).
 * The key layout: a store keeps the one it was created with (recorded in the meta table, see
 * tsdb_layout_stored), whatever the defaults are now. Without c->layout_given the recorded one
 * is used; with it, a layout that differs from the record is CT_EINVAL naming both. Tables
 * without a record (made before records existed, or by OpenTSDB) hold OpenTSDB's unsalted layout
 * unless c->layout_given says otherwise; a writable open records the layout it decided. Only a
 * store without a data table gets c's layout (by default salted, TSDB_DEFAULT_SALT_BUCKETS).
 * CT_NOTFOUND naming the table if one is missing and create_tables is off. */
CT_MUST_CHECK int tsdb_open(struct wc_store *s, const struct tsdb_config *c, struct tsdb **out,
                            struct ct_err *err);
/* For tools: opens the embedded store at data_dir (never creating it; read-only when
 * c->read_only) and the layout on it with c (create_tables forced off), the key layout decided
 * as tsdb_open() does. Returns the store in *s and the handle in *t; close with tsdb_close()
 * then wc_close(). */
CT_MUST_CHECK int tsdb_open_dir(const char *data_dir, struct tsdb_config *c, struct wc_store **s,
                                struct tsdb **t, struct ct_err *err);
/* Removes the hook, closes the tables; accepts NULL. */
void tsdb_close(struct tsdb *t);

const struct tsdb_config *tsdb_get_config(const struct tsdb *t); /* strings: tsdb's copies */
const struct rowkey_layout *tsdb_layout(const struct tsdb *t);
struct uid *tsdb_uid(struct tsdb *t);
struct wc_table *tsdb_data_table(struct tsdb *t);
struct wc_table *tsdb_uid_table(struct tsdb *t);
struct wc_table *tsdb_meta_table(struct tsdb *t);

/* Resolves a series to its TSUID (metric uid + tag pairs sorted by tagk uid) into tsuid (cap
 * bytes, ROWKEY_MAX_TSUID always enough); *len its length. Checks every name (uid_name_check, with
 * OpenTSDB's messages), the tag count (0 -> `Need at least one tag ...`; > max_tags -> `Too many
 * tags: N maximum allowed: 8, ...`) and assigns ids where auto-create allows. An unknown metric
 * without auto-create is CT_NOTFOUND: `No such name for 'metrics': 'm'`. Duplicate tag keys are
 * CT_EINVAL. */
CT_MUST_CHECK int tsdb_series_resolve(struct tsdb *t, const char *metric, const char *const *tagk,
                                      const char *const *tagv, size_t ntags, uint8_t *tsuid,
                                      size_t cap, size_t *len, struct ct_err *err);

/* ---- batched writes --------------------------------------------------------------------- */

/* A reusable batch of points; grows by doubling and keeps its memory across resets. */
struct tsdb_batch;
/* Returns a new empty batch with room for hint points in *out, freed with tsdb_batch_free(). */
CT_MUST_CHECK int tsdb_batch_new(size_t hint, struct tsdb_batch **out, struct ct_err *err);
void tsdb_batch_free(struct tsdb_batch *b);
void tsdb_batch_reset(struct tsdb_batch *b); /* empties it, keeps the memory */
size_t tsdb_batch_count(const struct tsdb_batch *b);
/* Adds one point of the series tsuid (copied) in layout l. CT_EINVAL for a bad tsuid length or a
 * timestamp outside [0, 9999999999999] ms; CT_ENOMEM only when the batch must grow. */
CT_MUST_CHECK int tsdb_batch_add(struct tsdb_batch *b, const struct rowkey_layout *l,
                                 const uint8_t *tsuid, size_t tsuid_len,
                                 const struct dpcodec_point *p, struct ct_err *err);
/* tsdb_batch_add() with the series' salt bucket given: rowkey_salt_bucket(l, tsuid, tsuid_len),
 * computed once per series by a writer that keeps it (the salt hashes the whole TSUID). */
CT_MUST_CHECK int tsdb_batch_add_salted(struct tsdb_batch *b, const struct rowkey_layout *l,
                                        uint32_t bucket, const uint8_t *tsuid, size_t tsuid_len,
                                        const struct dpcodec_point *p, struct ct_err *err);
/* Writes every point of the batch with one wc_mutate_batch() at durability d; the batch is left
 * as it was (reset it to reuse). On error some rows may be written (see wc_mutate_batch). */
CT_MUST_CHECK int tsdb_batch_write(struct tsdb *t, struct tsdb_batch *b, enum wc_durability d,
                                   struct ct_err *err);

/* ---- compaction ------------------------------------------------------------------------- */

/* The hook tsdb_open() installs (exposed for tools and tests): with arg = the tsdb handle, merges
 * the datapoint cells of a complete hour (base + 3600 + compaction_delay_s <= now) into one cell
 * of the configured format; CT_NOTFOUND keeps the row unchanged (incomplete hour, compaction
 * disabled, conflicting duplicates with fix_duplicates off, nothing to merge). */
int tsdb_compact_hook(void *arg, const struct wc_cell *cells, size_t n, bool major,
                      struct wc_cell_sink *sink, struct ct_err *err);

/* The one atomic row mutation that replaces a row's datapoint cells with their merge: merged is
 * dpcodec_compact()'s result over (at least) cells[0..n), the row's cells as read. Fills *ms (a
 * new array, freed with free(), borrowing the bytes of cells and merged) with *nm mutations: a
 * WC_OP_DELETE_COLUMN of each datapoint cell of cells at its version (all versions <= it: a
 * cell written after the read survives), then a WC_OP_PUT of merged's datapoint cell, at a
 * version after every deleted one (now, or the newest deleted + 1 ms when that is not older).
 * Other cells (annotations) are left alone. Shared by `ctsdb fsck --fix` and
 * tsdb_merge_hour(). */
CT_MUST_CHECK int tsdb_merge_mutations(const struct wc_cell *cells, size_t n,
                                       const struct dpcodec_compacted *merged,
                                       struct wc_mutation **ms, size_t *nm, struct ct_err *err);
/* Writes one series-hour cell (qualifier q[0..ql), value v[0..vl), a cell of the configured
 * format holding the hour's points, base hour base_s) into row[0..rl) merged with the datapoint
 * cells the row already holds: the row is read, merged with the cell (at equal timestamps the
 * cell's points win: they are the newer writes) and written back as one cell in place of the
 * row's datapoint cells, with one atomic row mutation (tsdb_merge_mutations) at durability d.
 * A row holding no datapoint cell (or only an identical one) gets the cell as it is; a row whose
 * cells do not decode gets the cell beside them (fsck reports them). *dups (NULL allowed): the
 * duplicate timestamps the merge resolved. Costs one row read more than a put. */
CT_MUST_CHECK int tsdb_merge_hour(struct tsdb *t, const uint8_t *row, size_t rl, int64_t base_s,
                                  const uint8_t *q, size_t ql, const uint8_t *v, size_t vl,
                                  enum wc_durability d, size_t *dups, struct ct_err *err);

/* ---- annotations (stored as OpenTSDB does: in the series' hour row, qualifier 0x01+offset) -- */

/* Stores (replaces) the annotation JSON of series tsuid (NULL/0 = global annotation) starting at
 * start_ms; a start that is a whole second gets a seconds qualifier, else milliseconds. */
CT_MUST_CHECK int tsdb_annotation_put(struct tsdb *t, const uint8_t *tsuid, size_t tsuid_len,
                                      int64_t start_ms, const char *json, size_t json_len,
                                      struct ct_err *err);
/* Reads one annotation: returns a new NUL-terminated string in *json (free()), CT_NOTFOUND if
 * absent. */
CT_MUST_CHECK int tsdb_annotation_get(struct tsdb *t, const uint8_t *tsuid, size_t tsuid_len,
                                      int64_t start_ms, char **json, size_t *json_len,
                                      struct ct_err *err);
/* Deletes one annotation; CT_NOTFOUND if absent. The delete is stamped with the stored cell's
 * time, so only a re-put within that same millisecond stays masked (HBase delete semantics) until
 * the next major compaction. */
CT_MUST_CHECK int tsdb_annotation_delete(struct tsdb *t, const uint8_t *tsuid, size_t tsuid_len,
                                         int64_t start_ms, struct ct_err *err);
/* Calls fn for each annotation of the series (or the global ones) with start in
 * [start_ms, end_ms], in time order; fn returning non-zero stops. The JSON is borrowed for the
 * call. */
typedef int (*tsdb_annotation_fn)(void *arg, const uint8_t *tsuid, size_t tsuid_len,
                                  int64_t start_ms, const char *json, size_t json_len);
CT_MUST_CHECK int tsdb_annotation_scan(struct tsdb *t, const uint8_t *tsuid, size_t tsuid_len,
                                       int64_t start_ms, int64_t end_ms, tsdb_annotation_fn fn,
                                       void *arg, struct ct_err *err);

#endif
