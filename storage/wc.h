/* wc.h - the wide-column store interface: the one storage API the rest of ctsdb uses.
 *
 * Backend-neutral and byte-oriented. Rows, families, qualifiers and values are byte strings;
 * timestamps are int64 milliseconds. Semantics follow HBase as restated in
 * docs/storage-contract.md (cell order, VERSIONS / MIN_VERSIONS / TTL, delete markers, scans
 * in both directions). Two backends implement it: the embedded engine (storage/engine/) and Cloud
 * Bigtable (storage/bigtable/, built with BIGTABLE=1). wc.c dispatches through the backend's
 * operation table (storage/wc_backend.h, seen only by backends).
 *
 * Threading: a store and its table handles may be used from many threads at once. A scanner is
 * used by one thread at a time.
 *
 * Names: tables are "ns:qualifier"; a bare "qualifier" means "default:qualifier". */
#ifndef CT_WC_H
#define CT_WC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/ct_err.h"

/* A borrowed byte string, passed and returned by value. Who owns `data` is stated by the
 * function that hands it out. */
struct wc_bytes {
    const uint8_t *data;
    size_t len;
};

static inline struct wc_bytes wc_bytes_of(const void *p, size_t len)
{
    struct wc_bytes b = {(const uint8_t *)p, len};
    return b;
}
/* The bytes of a NUL-terminated string, without the NUL. */
struct wc_bytes wc_bytes_str(const char *s);

/* Timestamps. WC_TS_LATEST (2^63-1) means "not set": the store uses clock_now_ms() at apply. */
#define WC_TS_LATEST        INT64_MAX
#define WC_TTL_FOREVER      2147483647LL
#define WC_MAX_ROW_BYTES    32767
#define WC_MAX_FAMILY_BYTES 127
#define WC_MAX_TABLE_NAME   256

/* Cell types and their codes ("Data model"; the codes decide the "Cell order" and are written to
 * disk: never renumber). */
enum wc_cell_type {
    WC_TYPE_PUT = 4,
    WC_TYPE_DELETE = 8,                 /* one version of a column, exactly ts */
    WC_TYPE_DELETE_FAMILY_VERSION = 10, /* every column of the family, exactly ts */
    WC_TYPE_DELETE_COLUMN = 12,         /* every version of a column, <= ts */
    WC_TYPE_DELETE_FAMILY = 14,         /* every column of the family, <= ts */
};

/* ---- store ---------------------------------------------------------------------------- */

enum wc_backend_kind {
    WC_BACKEND_EMBEDDED = 0,
    WC_BACKEND_BIGTABLE = 1,
};

enum wc_durability {
    WC_DURABILITY_USE_DEFAULT = 0, /* the table's DURABILITY, itself defaulting to SYNC_WAL */
    WC_DURABILITY_SKIP_WAL = 1,
    WC_DURABILITY_ASYNC_WAL = 2,
    WC_DURABILITY_SYNC_WAL = 3,
    WC_DURABILITY_FSYNC_WAL = 4,
};

/* Options for wc_open(). Initialise with wc_options_init(), then set what differs. Strings are
 * borrowed for the duration of wc_open() only. */
struct wc_options {
    enum wc_backend_kind backend;
    /* embedded engine */
    const char *data_dir;        /* created (mode 0700) if absent */
    bool create_if_missing;      /* default true */
    size_t block_cache_bytes;    /* shared LRU block cache; default 64 MiB */
    size_t memstore_flush_bytes; /* per region memstore flush threshold; default 16 MiB */
    /* All memstores of the store together (active and being flushed): past this the largest
     * regions are flushed (checked every 100 ms), and a write that finds them at or over it
     * waits inside the engine (before it takes any lock) until flushes bring them under it;
     * it writes anyway after 60 s in which no flush finished (reported through log_fn), or
     * when the store has a background error (which it then returns). Counted in
     * wc_store_stats().memstore_waits. 0 (default) = writes never wait for it: the largest
     * regions are flushed past max(4 x memstore_flush_bytes, 256 MiB), checked every second. */
    size_t memstore_total_bytes;
    /* Read block files with pread through the block cache instead of mapping them. Mapped
     * pages count in the process's RSS and grow with the data read; with pread only what the
     * block cache keeps stays resident (the TSD sets it under tsd.core.memory_limit_bytes).
     * Default false (mapped). */
    bool pread_block_files;
    size_t wal_segment_bytes; /* log segment rotation size; default 64 MiB */
    /* A region whose memstores hold cells and that has had no write for this long is flushed,
     * so that the log segments its cells pinned are released while the store runs (and the
     * active segment too once every memstore is flushed): an idle store keeps its cells in
     * block files only. Checked about once a second. Default 0 = no flush for quiet regions
     * (the TSD sets 30000: tsd.storage.quiet_flush_ms). HBase flushes on the age of the oldest
     * edit instead (hbase.regionserver.optionalcacheflushinterval, 1 hour); that rule applies
     * here too, whatever this is. */
    int64_t quiet_flush_ms;
    uint64_t region_split_bytes; /* automatic split threshold (MAX_FILESIZE default); 1 GiB */
    int background_threads;      /* flush and compaction workers; default 2 */
    int64_t major_compaction_period_ms; /* 0 = none; default 7 days (with +-50% jitter) */
    /* open without writing (tools such as fsck, scan): holds the directory's lock shared (a
     * writer holds it exclusively: either one is refused with CT_EBUSY while the other is
     * open) and replays the log into memory without changing a file */
    bool read_only;
    /* Open even when files are damaged or missing: a listed block file that fails its checks
     * at open (footer, index, metadata CRCs, size and identity) is moved to
     * <data_dir>/quarantine/ and dropped from the catalog, a missing one is dropped, missing log
     * segments are accepted; cells are no longer served from them and each one is reported
     * through log_fn. Nothing is deleted. Default false: each fails the open, naming it.
     * Ignored with read_only. */
    bool quarantine_damaged;
    /* Bigtable backend */
    const char *bt_project;
    const char *bt_instance;
    const char *bt_data_endpoint; /* host:port; BIGTABLE_EMULATOR_HOST overrides both */
    const char *bt_admin_endpoint;
    const char *bt_credentials; /* path of a service-account JSON key; NULL = ADC */
    int64_t bt_deadline_ms;     /* per call; default 30000 */
    /* Where the store reports what is worth knowing but is not an error of the call at hand
     * (e.g. a torn log tail cut off at open). NULL = silent. May be called from any thread. */
    void (*log_fn)(void *arg, const char *msg);
    void *log_arg;
};

void wc_options_init(struct wc_options *o);

struct wc_store; /* opaque */

/* Opens (creating if allowed) a store. Returns CT_OK and a new store in *out, closed with
 * wc_close(). On error *out is unchanged and err says why. */
CT_MUST_CHECK int wc_open(const struct wc_options *o, struct wc_store **out, struct ct_err *err);
/* Flushes what must be flushed, stops background work and frees the store; accepts NULL.
 * Every table handle and scanner must already be closed. */
void wc_close(struct wc_store *s);
/* The first background error (failed flush or compaction), sticky; CT_OK if none. */
int wc_background_error(struct wc_store *s, struct ct_err *err);
/* Shutdown of a process whose backend may not answer: a remote backend (Bigtable) cancels every
 * call in flight and fails every later one with CT_ECLOSED, so that no thread waits on it any
 * longer (what those calls were writing is failed, never acknowledged); the store must still be
 * closed with wc_close. The embedded store, which has no remote calls, ignores it. Any thread;
 * idempotent. */
void wc_interrupt(struct wc_store *s);

/* ---- namespaces ----------------------------------------------------------------------- */

CT_MUST_CHECK int wc_namespace_create(struct wc_store *s, const char *ns, struct ct_err *err);
/* Only an empty namespace may be dropped; `default` and `hbase` never. */
CT_MUST_CHECK int wc_namespace_drop(struct wc_store *s, const char *ns, struct ct_err *err);
/* CT_OK if it exists, CT_NOTFOUND if not. */
CT_MUST_CHECK int wc_namespace_exists(struct wc_store *s, const char *ns, struct ct_err *err);
/* Calls fn for each namespace in byte order; fn returning non-zero stops the walk. */
typedef int (*wc_name_fn)(void *arg, const char *name);
CT_MUST_CHECK int wc_namespace_list(struct wc_store *s, wc_name_fn fn, void *arg,
                                    struct ct_err *err);
/* Creates a namespace with a configuration (HBase's create_namespace 'ns', {'k' => 'v'}):
 * kv holds npairs key/value strings, key first; keys are non-empty and unique. Borrows kv.
 * CT_EUNSUPPORTED (nothing created) on a backend that keeps no namespace configuration when
 * npairs > 0. */
CT_MUST_CHECK int wc_namespace_create_config(struct wc_store *s, const char *ns,
                                             const char *const *kv, size_t npairs,
                                             struct ct_err *err);
/* Returns a namespace's configuration as a new array of 2 * *npairs strings (key, value, ...)
 * in creation order, freed with wc_namespace_config_free(); *kv is NULL when there is none.
 * CT_NOTFOUND if the namespace does not exist. */
CT_MUST_CHECK int wc_namespace_get_config(struct wc_store *s, const char *ns, char ***kv,
                                          size_t *npairs, struct ct_err *err);
void wc_namespace_config_free(char **kv, size_t npairs); /* accepts NULL */

/* ---- table descriptors ---------------------------------------------------------------- */

enum wc_bloom {
    WC_BLOOM_NONE = 0,
    WC_BLOOM_ROW = 1,
    WC_BLOOM_ROWCOL = 2,
};
enum wc_compression {
    WC_COMPRESSION_NONE = 0,
    WC_COMPRESSION_SNAPPY = 1,
    WC_COMPRESSION_GZ = 2,
};
enum wc_block_encoding {
    WC_ENCODING_NONE = 0,
    WC_ENCODING_PREFIX = 1,
    WC_ENCODING_DIFF = 2,
    WC_ENCODING_FAST_DIFF = 3,
    WC_ENCODING_ROW_INDEX_V1 = 4,
};
enum wc_keep_deleted {
    WC_KEEP_DELETED_FALSE = 0,
    WC_KEEP_DELETED_TRUE = 1,
    WC_KEEP_DELETED_TTL = 2,
};

/* A column family's attributes ("Family attributes"). Held by value. */
struct wc_family_desc {
    char name[WC_MAX_FAMILY_BYTES + 1];
    uint32_t versions;     /* >= 1, default 1 */
    uint32_t min_versions; /* <= versions, default 0 */
    int64_t ttl_s;         /* > 0, default WC_TTL_FOREVER */
    enum wc_keep_deleted keep_deleted;
    enum wc_bloom bloom;             /* default ROW */
    uint32_t blocksize;              /* 1024 ..= 16777216, default 65536 */
    bool blockcache;                 /* default true */
    bool in_memory;                  /* default false */
    enum wc_compression compression; /* default NONE */
    enum wc_block_encoding encoding; /* default NONE */
};

/* Fills f with the defaults of "Family attributes" and the given name (truncated to fit). */
void wc_family_desc_init(struct wc_family_desc *f, const char *name);
/* Checks the attribute ranges of "Family attributes"; CT_EINVAL naming the attribute if one is
 * wrong. */
CT_MUST_CHECK int wc_family_desc_check(const struct wc_family_desc *f, struct ct_err *err);

/* A table's descriptor. Built by callers for create/alter (families points at the caller's
 * array); returned by wc_table_describe() in memory the store allocates. */
struct wc_table_desc {
    char name[WC_MAX_TABLE_NAME];    /* "ns:qual" (describe always gives the full form) */
    struct wc_family_desc *families; /* sorted by name in describe output */
    size_t nfamilies;
    uint64_t max_filesize;         /* split threshold; 0 = store default */
    uint64_t memstore_flushsize;   /* 0 = store default */
    enum wc_durability durability; /* USE_DEFAULT = SYNC_WAL */
    bool readonly;
    bool compaction_enabled; /* default true */
    bool enabled;            /* describe only; ignored by create/alter */
};

/* Fills d with table defaults, the given name and no families. */
void wc_table_desc_init(struct wc_table_desc *d, const char *name);
/* Frees a descriptor returned by wc_table_describe(); accepts NULL. */
void wc_table_desc_free(struct wc_table_desc *d);

/* ---- table administration ------------------------------------------------------------- */

/* Creates a table with its families, pre-split at `splits` (nsplits keys, any order; duplicates
 * and empty keys are CT_EINVAL). CT_EEXIST if it exists; CT_EINVAL for bad names/attributes or
 * the `hbase` namespace. */
CT_MUST_CHECK int wc_table_create(struct wc_store *s, const struct wc_table_desc *d,
                                  const struct wc_bytes *splits, size_t nsplits,
                                  struct ct_err *err);
/* Replaces the table's families and table attributes with d's (add, modify and remove families
 * by listing the wanted set). Storage settings take effect as files are rewritten. Data of a
 * removed family is deleted. Allowed on enabled tables. */
CT_MUST_CHECK int wc_table_alter(struct wc_store *s, const struct wc_table_desc *d,
                                 struct ct_err *err);
/* Returns a new descriptor in *out, freed with wc_table_desc_free(); CT_NOTFOUND if absent. */
CT_MUST_CHECK int wc_table_describe(struct wc_store *s, const char *name,
                                    struct wc_table_desc **out, struct ct_err *err);
/* CT_OK if the table exists, CT_NOTFOUND if not. */
CT_MUST_CHECK int wc_table_exists(struct wc_store *s, const char *name, struct ct_err *err);
/* Calls fn with the full name ("ns:qual") of each user table, in byte order. */
CT_MUST_CHECK int wc_table_list(struct wc_store *s, wc_name_fn fn, void *arg, struct ct_err *err);
CT_MUST_CHECK int wc_table_enable(struct wc_store *s, const char *name, struct ct_err *err);
CT_MUST_CHECK int wc_table_disable(struct wc_store *s, const char *name, struct ct_err *err);
/* Drops a disabled table (CT_EBUSY if enabled) and deletes its data. */
CT_MUST_CHECK int wc_table_drop(struct wc_store *s, const char *name, struct ct_err *err);
/* Deletes all rows; keeps families; keeps split keys only if preserve_splits. Leaves the table
 * enabled. */
CT_MUST_CHECK int wc_table_truncate(struct wc_store *s, const char *name, bool preserve_splits,
                                    struct ct_err *err);

/* Synchronous maintenance (they complete before returning). family NULL = every family. */
CT_MUST_CHECK int wc_table_flush(struct wc_store *s, const char *name, struct ct_err *err);
CT_MUST_CHECK int wc_table_compact(struct wc_store *s, const char *name, const char *family,
                                   bool major, struct ct_err *err);
/* Splits the region holding `key` at `key` (CT_EINVAL if key already starts a region), or, with
 * key NULL, every region at its midpoint. */
CT_MUST_CHECK int wc_table_split(struct wc_store *s, const char *name, const struct wc_bytes *key,
                                 struct ct_err *err);

/* One region of a table and its statistics (spec: status 'detailed'). */
struct wc_region_info {
    uint8_t *start_key; /* owned by the array; empty = table start */
    size_t start_len;
    uint8_t *end_key; /* empty = table end */
    size_t end_len;
    uint64_t id;
    uint64_t read_requests;
    uint64_t write_requests;
    uint64_t memstore_bytes;
    uint64_t store_files;
    uint64_t store_file_bytes;
};
/* Returns a new array of the table's regions in key order in *out (count in *n), freed with
 * wc_region_info_free(). */
CT_MUST_CHECK int wc_table_regions(struct wc_store *s, const char *name,
                                   struct wc_region_info **out, size_t *n, struct ct_err *err);
void wc_region_info_free(struct wc_region_info *r, size_t n);

/* Store-wide figures for /api/stats and `status`. */
struct wc_store_stats {
    uint64_t cache_hits;
    uint64_t cache_misses;
    uint64_t cache_bytes;
    uint64_t cache_capacity_bytes;
    uint64_t flushes;
    uint64_t minor_compactions;
    uint64_t major_compactions;
    uint64_t splits;
    uint64_t wal_bytes;
    uint64_t wal_syncs;
    uint64_t regions;
    uint64_t memstore_bytes; /* all memstores now, active and being flushed (0: Bigtable) */
    uint64_t memstore_waits; /* writes that waited for memstore_total_bytes (0: Bigtable) */
    /* the embedded engine's error state: whether a background error refuses writes now, if it
     * is retried (clears by itself when its cause does), since when (ms), how many background
     * failures and recoveries there were, and block files set aside in quarantine/ */
    bool bg_error_active;
    bool bg_error_transient;
    uint64_t bg_error_since_ms;
    uint64_t bg_errors;
    uint64_t bg_recoveries;
    uint64_t quarantined_files;
};
CT_MUST_CHECK int wc_store_stats(struct wc_store *s, struct wc_store_stats *out,
                                 struct ct_err *err);

/* ---- split-key algorithms ("Split-key algorithms"), backend-neutral --------------------- */

enum wc_split_algo {
    WC_SPLIT_HEXSTRING = 0,
    WC_SPLIT_UNIFORM = 1,
};
/* Computes the n-1 split keys for n regions (n >= 2). Returns a new array of n-1 keys in *out,
 * each key's bytes owned by the array, freed with wc_split_keys_free(). */
CT_MUST_CHECK int wc_split_keys(enum wc_split_algo algo, unsigned n, struct wc_bytes **out,
                                struct ct_err *err);
void wc_split_keys_free(struct wc_bytes *keys, size_t n);
/* The general form of "Split-key algorithms": the n-1 split keys for n regions between `first` and
 * `last` (inclusive). HexStringSplit takes both bounds as hex text (empty = 00000000 / ffffffff)
 * and returns lowercase hex keys as wide as the longer bound; UniformSplit takes raw bytes (empty
 * first = 8 zero bytes, empty last = 8 x 0xFF), pads the shorter bound with zero bytes on the
 * right, and widens both by one zero byte while the range is smaller than n. CT_EINVAL if
 * first >= last, n < 2 or (hex) a bound is not hex or the range is smaller than n. Ownership as
 * wc_split_keys(). */
CT_MUST_CHECK int wc_split_keys_range(enum wc_split_algo algo, struct wc_bytes first,
                                      struct wc_bytes last, unsigned n, struct wc_bytes **out,
                                      struct ct_err *err);
/* The key that splits the region [start, end) in two by the algorithm's midpoint rule ("Split-key
 * algorithms"): HexStringSplit (start + end) / 2 over hex text, an empty start read as 00000000 and
 * an empty end as ffffffff; UniformSplit the midpoint of the byte range, an empty end read as 8 x
 * 0xFF. Returns a new key in *out, freed with free((void *)out->data); CT_EINVAL if the region is
 * too small to split (the midpoint would equal start). */
CT_MUST_CHECK int wc_split_midpoint(enum wc_split_algo algo, struct wc_bytes start,
                                    struct wc_bytes end, struct wc_bytes *out, struct ct_err *err);

/* ---- table handles and writes --------------------------------------------------------- */

struct wc_table; /* opaque */

/* Opens a handle for data operations. CT_NOTFOUND if absent. Returns a new handle, closed with
 * wc_table_close(), which must happen before wc_close(). */
CT_MUST_CHECK int wc_table_open(struct wc_store *s, const char *name, struct wc_table **out,
                                struct ct_err *err);
void wc_table_close(struct wc_table *t);

/* The mutations; what each delete marks is in "How markers are produced". */
enum wc_mutation_op {
    WC_OP_PUT = 0,
    WC_OP_DELETE_VERSION = 1,        /* ts WC_TS_LATEST = newest visible version */
    WC_OP_DELETE_COLUMN = 2,         /* all versions <= ts */
    WC_OP_DELETE_FAMILY = 3,         /* all columns of the family <= ts */
    WC_OP_DELETE_FAMILY_VERSION = 4, /* all columns of the family at exactly ts */
    WC_OP_DELETE_ROW = 5,            /* DeleteFamily for every family; family ignored */
};

/* One change to a row. All byte strings are borrowed for the duration of the call. */
struct wc_mutation {
    enum wc_mutation_op op;
    struct wc_bytes family;
    struct wc_bytes qualifier;
    struct wc_bytes value;
    int64_t ts_ms; /* WC_TS_LATEST = now at apply */
};

/* The mutations of one row; applied atomically (all or nothing, visible together). */
struct wc_row_mutation {
    struct wc_bytes row;
    const struct wc_mutation *mutations;
    size_t n;
};

/* Applies one row's mutations atomically. Returns after the durability level is met. */
CT_MUST_CHECK int wc_mutate_row(struct wc_table *t, const struct wc_row_mutation *rm,
                                enum wc_durability d, struct ct_err *err);
/* Applies many rows. Each row is atomic; the batch as a whole is not (a failure reports the
 * first failing row in err, and rows before it may be applied). Shares one log write. */
CT_MUST_CHECK int wc_mutate_batch(struct wc_table *t, const struct wc_row_mutation *rows, size_t n,
                                  enum wc_durability d, struct ct_err *err);

/* Adds delta to the 8-byte big-endian signed value at (row, family, qualifier) (absent = 0;
 * another width is CT_EINVAL) atomically; the new value in *out. */
CT_MUST_CHECK int wc_increment(struct wc_table *t, struct wc_bytes row, struct wc_bytes family,
                               struct wc_bytes qualifier, int64_t delta, enum wc_durability d,
                               int64_t *out, struct ct_err *err);
/* Applies rm atomically iff the newest visible value of (row, family, qualifier) equals
 * *expected (expected NULL: iff the column has no visible value). rm->row must equal row.
 * *applied tells which; a lost race is not an error. */
CT_MUST_CHECK int wc_check_and_mutate(struct wc_table *t, struct wc_bytes row,
                                      struct wc_bytes family, struct wc_bytes qualifier,
                                      const struct wc_bytes *expected,
                                      const struct wc_row_mutation *rm, enum wc_durability d,
                                      bool *applied, struct ct_err *err);

/* ---- reads ---------------------------------------------------------------------------- */

/* A returned cell. Its byte strings are owned by whatever returned it (see there). */
struct wc_cell {
    struct wc_bytes row;
    struct wc_bytes family;
    struct wc_bytes qualifier;
    struct wc_bytes value;
    int64_t ts_ms;
    enum wc_cell_type type; /* WC_TYPE_PUT except in raw scans */
};

/* A column selector: a whole family (has_qualifier false) or one column. */
struct wc_column {
    struct wc_bytes family;
    struct wc_bytes qualifier;
    bool has_qualifier;
};

/* What a row filter decides about a row key. */
enum wc_row_decision {
    WC_ROW_INCLUDE = 0,
    WC_ROW_SKIP = 1, /* leave this row out and go on */
    WC_ROW_STOP = 2, /* end the scan before this row */
};
/* Called with each candidate row key (before its cells are materialised), from the scanning
 * thread. Must not call back into the store. */
typedef enum wc_row_decision (*wc_row_filter_fn)(void *arg, const uint8_t *row, size_t len);

/* A cell filter (HBase's Filter.filterCell answering INCLUDE or SKIP): called with each cell a
 * read would return, after every other option has judged it (versions, time range, TTL,
 * columns and qualifier filters), in the row's cell order, from the scanning thread; true keeps
 * the cell in the row, false leaves it out. The cell and its bytes are valid only during the
 * call, so a filter may also read cells it leaves out without the read copying them (a
 * reader that only folds cells into a result of its own leaves every cell out). A row whose
 * cells are all left out is not returned (and not counted by limit_rows). Must not call back
 * into the store. */
typedef bool (*wc_cell_filter_fn)(void *arg, const struct wc_cell *cell);

/* One row range of a multi-range scan: [start, stop), start inclusive (len 0 = from the first
 * row), stop exclusive (len 0 = to the end of the table), in either scan direction. Held by
 * value in the caller's array; its bytes are borrowed as the scan options' are. */
struct wc_row_range {
    struct wc_bytes start;
    struct wc_bytes stop;
};

/* Scan and get options. Initialise with wc_scan_options_init(). Byte strings and arrays are
 * borrowed until the scanner is closed (or the get returns). */
struct wc_scan_options {
    struct wc_bytes start_row;  /* forward: inclusive lower bound; reversed: inclusive upper */
    struct wc_bytes stop_row;   /* forward: exclusive upper bound; reversed: exclusive lower */
    struct wc_bytes row_prefix; /* only rows starting with it (len 0 = no filter) */
    bool reversed;
    const struct wc_column *columns; /* NULL/0 = every family */
    size_t ncolumns;
    int64_t tmin_ms; /* time range [tmin, tmax); default [0, WC_TS_LATEST) */
    int64_t tmax_ms;
    uint32_t max_versions;            /* default 1; capped by each family's VERSIONS unless raw */
    struct wc_bytes qualifier_prefix; /* ColumnPrefixFilter (len 0 = none) */
    bool has_qualifier_range;         /* ColumnRangeFilter */
    struct wc_bytes qualifier_min;    /* len 0 with has_qualifier_range = unbounded */
    bool qualifier_min_inclusive;
    struct wc_bytes qualifier_max;
    bool qualifier_max_inclusive;
    wc_row_filter_fn row_filter; /* NULL = none */
    void *row_filter_arg;
    wc_cell_filter_fn cell_filter; /* NULL = none; scans and gets alike */
    void *cell_filter_arg;
    uint64_t limit_rows;  /* 0 = unlimited; counts rows returned */
    uint32_t batch_cells; /* 0 = whole rows; else at most this many cells per chunk */
    bool raw;             /* return markers and masked cells (embedded only) */
    /* Several row ranges read by one scan (Bigtable's RowSet of row_ranges in one ReadRows,
     * HBase's MultiRowRangeFilter); nranges 0 = unused (the scan's rows are start_row, stop_row
     * and row_prefix's). ranges[0..nranges) are given in ascending key order and disjoint:
     * each stop is non-empty and <= the next range's start (adjacent ranges are fine), so only
     * the first may have an empty start and only the last an empty stop; start == stop is an
     * empty range (allowed, reads nothing). A forward scan visits the ranges first to last, a
     * reversed one last to first with rows descending inside each: the rows are those of one
     * scan per range, concatenated in the scan's direction. Every other option applies across
     * the whole scan: limit_rows counts rows over all ranges, batch_cells chunks rows as usual,
     * the row filter sees every candidate row and its WC_ROW_STOP ends the whole scan.
     * wc_scanner_open() returns CT_EINVAL when nranges > 0 and start_row, stop_row or
     * row_prefix is set, or when ranges is NULL, a start is above its stop, or the ranges are
     * out of order or overlap. wc_get() ignores them. */
    const struct wc_row_range *ranges;
    size_t nranges;
};

void wc_scan_options_init(struct wc_scan_options *o);

/* A row (or a chunk of one, with batch_cells) returned by a scanner. Valid until the next
 * wc_scanner_next() or wc_scanner_close(). Cells are in "Cell order". */
struct wc_row {
    struct wc_bytes key;
    const struct wc_cell *cells;
    size_t ncells;
};

struct wc_scanner; /* opaque */

/* Opens a scanner over a snapshot taken now. Returns a new scanner, closed with
 * wc_scanner_close() (before the table handle is closed). */
CT_MUST_CHECK int wc_scanner_open(struct wc_table *t, const struct wc_scan_options *o,
                                  struct wc_scanner **out, struct ct_err *err);
/* Fills *row with the next row: CT_OK, or CT_NOTFOUND at the end, or an error. */
CT_MUST_CHECK int wc_scanner_next(struct wc_scanner *sc, struct wc_row *row, struct ct_err *err);
void wc_scanner_close(struct wc_scanner *sc);

/* The cells of one row, owned by the result. */
struct wc_result {
    struct wc_row row;
    /* private to wc.c */
    void *mem;
};

/* Reads one row with o's column, time-range, version and qualifier options (row bounds, prefix
 * and limit are ignored). Fills *out (row.ncells 0 if the row has nothing visible: a missing
 * row is not an error); release with wc_result_release(). */
CT_MUST_CHECK int wc_get(struct wc_table *t, struct wc_bytes row, const struct wc_scan_options *o,
                         struct wc_result *out, struct ct_err *err);
void wc_result_release(struct wc_result *r);

/* ---- compaction hook (embedded engine) ------------------------------------------------ */

/* Receives cells from a compaction hook. */
struct wc_cell_sink;
/* Appends one cell to the rewritten row; bytes are copied. Cells must be emitted in "Cell
 * order. */
CT_MUST_CHECK int wc_cell_sink_emit(struct wc_cell_sink *sink, const struct wc_cell *c,
                                    struct ct_err *err);

/* Called by compactions (and flushes) with the surviving put cells of one row and family, in
 * order", after versions, TTL and deletes are applied. It either emits a replacement set of
 * cells through `sink` and returns CT_OK, or returns CT_NOTFOUND to keep the cells unchanged.
 * `major` tells whether the compaction sees every file. Runs on a background thread; must be
 * thread-safe and must not call into the store. */
typedef int (*wc_compact_hook_fn)(void *arg, const struct wc_cell *cells, size_t n, bool major,
                                  struct wc_cell_sink *sink, struct ct_err *err);

/* Installs (fn non-NULL) or removes the hook for a table's family in this open store (not
 * persisted; install it after every open). When it returns after removing or replacing a hook, no
 * call of the old one is running or will start (it waits for running flushes and compactions
 * that took it), so the old arg may be freed; call it holding nothing a flush needs.
 * CT_EUNSUPPORTED on backends without compactions. */
CT_MUST_CHECK int wc_set_compact_hook(struct wc_store *s, const char *table, const char *family,
                                      wc_compact_hook_fn fn, void *arg, struct ct_err *err);

/* ---- snapshots (embedded engine) ----------------------------------------------------- */

/* HBase's snapshot, list_snapshots, restore_snapshot, clone_snapshot, delete_snapshot. A
 * snapshot is a point-in-time copy of one table, or of every table, that costs no copying: the
 * engine flushes, then hard-links the block files and freezes a copy of the catalog entries
 * under <data_dir>/snapshots/<name>/ (docs/engine.md). Taking one is allowed while other
 * threads write: writes are held back for the flush (they wait, they do not fail), and the
 * snapshot holds every write acknowledged before it and none after. On the Bigtable backend
 * every call returns CT_EUNSUPPORTED (use Bigtable backups). */
#define WC_MAX_SNAPSHOT_NAME 128

struct wc_snapshot_info {
    char name[WC_MAX_SNAPSHOT_NAME + 1];
    char table[WC_MAX_TABLE_NAME]; /* the table ("ns:qual"), or "" for a whole-store snapshot */
    size_t ntables;                /* tables it holds */
    int64_t created_ms;            /* wall clock when it was taken */
};

/* Checks a snapshot name: 1..WC_MAX_SNAPSHOT_NAME characters of [A-Za-z0-9_.-], not starting with
 * '.' or '-'. CT_EINVAL naming the name otherwise. */
CT_MUST_CHECK int wc_snapshot_name_check(const char *name, struct ct_err *err);
/* Takes snapshot `name` of `table` (NULL = every table of the store). CT_EEXIST if the name is
 * taken, CT_NOTFOUND if the table does not exist, CT_EINVAL for a bad name or a read-only
 * store. */
CT_MUST_CHECK int wc_snapshot_create(struct wc_store *s, const char *name, const char *table,
                                     struct ct_err *err);
/* Calls fn for each snapshot in name order; fn returning non-zero stops the walk. The info is
 * valid during the call. */
typedef int (*wc_snapshot_fn)(void *arg, const struct wc_snapshot_info *info);
CT_MUST_CHECK int wc_snapshot_list(struct wc_store *s, wc_snapshot_fn fn, void *arg,
                                   struct ct_err *err);
/* Puts every table of the snapshot back as it was when it was taken: cells, families, table
 * attributes and region boundaries. Each table that exists must be disabled (CT_EBUSY
 * otherwise; nothing is changed then); one that no longer exists is created. Restored tables
 * are left disabled (enable them after), as HBase does. CT_NOTFOUND if there is no such
 * snapshot. */
CT_MUST_CHECK int wc_snapshot_restore(struct wc_store *s, const char *name, struct ct_err *err);
/* Creates the new, enabled table `table` holding the snapshot's cells, families and attributes
 * (a snapshot of one table; CT_EINVAL for a whole-store snapshot). CT_EEXIST if the table exists. */
CT_MUST_CHECK int wc_snapshot_clone(struct wc_store *s, const char *name, const char *table,
                                    struct ct_err *err);
/* Deletes a snapshot (its links; the live tables are not touched). CT_NOTFOUND if absent. */
CT_MUST_CHECK int wc_snapshot_delete(struct wc_store *s, const char *name, struct ct_err *err);

/* ---- request deadline ------------------------------------------------------------------ */

/* A request's deadline for the calling thread: a remote backend (Bigtable) bounds every call this
 * thread makes, retries included, by it, and fails a call at once (CT_ETIMEOUT) once it has
 * passed; the embedded store ignores it. abs_mono_ns is a clock_mono_ns() instant; 0 = none.
 * Returns the previous value, to be put back with wc_request_deadline_set when the request ends. */
uint64_t wc_request_deadline_set(uint64_t abs_mono_ns);
/* Starts a request of ms milliseconds (> 0) on the calling thread: its deadline is now + ms, or
 * the one already set when that is sooner (an inner request never extends an outer one). Returns
 * the previous value, as wc_request_deadline_set. */
uint64_t wc_request_deadline_begin(int64_t ms);
/* The calling thread's request deadline (0 = none). */
uint64_t wc_request_deadline(void);

/* ---- helpers -------------------------------------------------------------------------- */

/* Compares two cells in the total order of "Cell order" (row, family, qualifier asc; ts desc; type
 * desc). */
int wc_cell_compare(const struct wc_cell *a, const struct wc_cell *b);
/* Splits "ns:qual" into namespace and qualifier ("default" when there is no colon) and checks
 * both against the character rules of "Data model". */
CT_MUST_CHECK int wc_table_name_parse(const char *name, char *ns, size_t ns_size, char *qual,
                                      size_t qual_size, struct ct_err *err);

#endif
