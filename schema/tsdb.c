/* tsdb.c - the OpenTSDB layout on a wc store: tables, series resolution, batched writes, the
 * compaction hook and annotations.
 *
 * Invariants: (1) every datapoint is written as one OpenTSDB single cell in the hour row of its
 * series, with the store's write time as cell timestamp (so "latest write" is well defined);
 * (2) the compaction hook only rewrites rows whose hour is complete (base + 3600 +
 * compaction_delay_s <= now) and never drops a point: conflicting duplicates without
 * fix_duplicates leave the row untouched; (3) a batch never allocates once it has grown to its
 * working size: rows, qualifiers and values live in one byte arena addressed by offsets, turned
 * into wc mutations only in tsdb_batch_write(), which hands them to the store sorted in its key
 * order (stable: of two writes of one cell only the later is written).
 * Threading: the handle is read-only after tsdb_open() except through uid (thread-safe) and the
 * store (thread-safe). */
#include "schema/tsdb.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "storage/clock.h"

#define TSDB_OWNER "schema/tsdb.c"

struct tsdb {
    struct wc_store *s;
    struct tsdb_config c;
    char data_name[WC_MAX_TABLE_NAME], uid_name[WC_MAX_TABLE_NAME], meta_name[WC_MAX_TABLE_NAME];
    char *allow_special;
    struct wc_table *data, *uidt, *meta;
    struct uid *uid;
    bool hooked;
};

/* The schema's configuration keys, sorted by key (checked in tsdb_config_init), each declared
 * once: X(how it is stored, key, field of struct tsdb_config, default, min, max, choices,
 * meaning). The same list makes the table tsdb_config_keys() returns and the code of
 * tsdb_config_set() and tsdb_config_get(), so a key cannot be declared without its field or
 * twice; tsd/conf.c serves these keys with its own and never declares one of them again.
 * How a value is stored: BOOL, STR (borrowed), UINT, TTL (0 = WC_TTL_FOREVER), LAYOUT (an
 * unsigned field of the key layout; setting it sets layout_given), ENUM (tsdb_enum_set/get). */
#define TSDB_KEYS(X)                                                                               \
    X(BOOL, "tsd.core.auto_create_metrics", auto_create_metrics, "true", 0, 0, NULL,               \
      "assign a uid to an unknown metric on write (ctsdb's choice; OpenTSDB: false)")              \
    X(BOOL, "tsd.core.auto_create_tagks", auto_create_tagks, "true", 0, 0, NULL,                   \
      "assign a uid to an unknown tag key on write")                                               \
    X(BOOL, "tsd.core.auto_create_tagvs", auto_create_tagvs, "true", 0, 0, NULL,                   \
      "assign a uid to an unknown tag value on write")                                             \
    X(STR, "tsd.core.tag.allow_specialchars", allow_special, "", 0, 0, NULL,                       \
      "extra characters allowed in metric and tag names")                                          \
    X(BOOL, "tsd.core.uid.random_metrics", random_metrics, "false", 0, 0, NULL,                    \
      "random metric uids (check-and-put, retried on collision)")                                  \
    X(ENUM, "tsd.storage.ctsdb.bloom", bloom, "ROW", 0, 0, "NONE|ROW|ROWCOL",                      \
      "bloom filter of every family, at table creation")                                           \
    X(ENUM, "tsd.storage.ctsdb.compact_format", format, "compressed", 0, 0, "compressed|opentsdb", \
      "cell a complete hour is merged into: ctsdb's compressed cell or OpenTSDB's")                \
    X(UINT, "tsd.storage.ctsdb.compaction_delay", compaction_delay_s, "0", 0, 86400 * 365, NULL,   \
      "seconds after an hour ends before its row is merged")                                       \
    X(ENUM, "tsd.storage.ctsdb.compression", compression, "SNAPPY", 0, 0, "NONE|SNAPPY|GZ",        \
      "block compression of every family, at table creation")                                      \
    X(BOOL, "tsd.storage.ctsdb.create_tables", create_tables, "true", 0, 0, NULL,                  \
      "create missing tables on open (false: a missing table stops the start)")                    \
    X(UINT, "tsd.storage.ctsdb.min_versions", min_versions, "0", 0, 1, NULL,                       \
      "MIN_VERSIONS of the data family (it keeps 1 version), at table creation")                   \
    X(UINT, "tsd.storage.ctsdb.regions_per_bucket", regions_per_bucket, "1", 1, 256, NULL,         \
                                                                                                   \
      "pre-split regions per salt bucket (split on the first metric uid byte), at table creation") \
    X(TTL, "tsd.storage.ctsdb.ttl", ttl_s, "0", 0, WC_TTL_FOREVER, NULL,                           \
      "TTL of the data family in seconds (0 = forever), at table creation")                        \
    X(UINT, "tsd.storage.ctsdb.uid_cache_bytes", uid_cache_bytes, "0", 0, UINT32_MAX, NULL,      \
      "bytes the uid caches' names may hold, all kinds (0 = bounded by entries only)")             \
    X(UINT, "tsd.storage.ctsdb.uid_cache_size", uid_cache_entries, "65536", 0, 1 << 30, NULL,      \
      "uid cache entries per kind and direction")                                                  \
    X(UINT, "tsd.storage.ctsdb.uid_generation_check_ms", uid_generation_check_ms, "5000", 0,        \
      86400000, NULL,                                                                              \
      "how often the uid table's generation is checked (0 = never; a change drops the uid caches)") \
    X(BOOL, "tsd.storage.enable_compaction", enable_compaction, "true", 0, 0, NULL,                \
      "merge the cells of each complete hour into one")                                            \
    X(BOOL, "tsd.storage.fix_duplicates", fix_duplicates, "false", 0, 0, NULL,                     \
      "on merge, resolve duplicate timestamps (the latest write wins)")                            \
    X(STR, "tsd.storage.hbase.data_table", data_table, "tsdb", 0, 0, NULL, "the data table")       \
    X(STR, "tsd.storage.hbase.meta_table", meta_table, "tsdb-meta", 0, 0, NULL,                    \
      "the meta table (also holds the key layout record)")                                         \
    X(STR, "tsd.storage.hbase.uid_table", uid_table, "tsdb-uid", 0, 0, NULL, "the uid table")      \
    X(UINT, "tsd.storage.max_tags", max_tags, "8", 1, ROWKEY_MAX_TAGS, NULL, "tags per series")    \
    X(LAYOUT, "tsd.storage.salt.buckets", layout.salt_buckets, TSDB_DEFAULT_SALT_BUCKETS, 1,       \
      65536, NULL,                                                                                 \
      "salt buckets, one pre-split region each (key layout: see docs/schema.md for the default)")  \
    X(LAYOUT, "tsd.storage.salt.width", layout.salt_width, "1", 0, ROWKEY_MAX_SALT_WIDTH, NULL,    \
      "salt bytes before the metric uid, 0 = OpenTSDB's unsalted keys (key layout)")               \
    X(LAYOUT, "tsd.storage.uid.width.metric", layout.metric_width, "3", 1, ROWKEY_MAX_UID_WIDTH,   \
      NULL, "metric uid bytes (key layout)")                                                       \
    X(LAYOUT, "tsd.storage.uid.width.tagk", layout.tagk_width, "3", 1, ROWKEY_MAX_UID_WIDTH, NULL, \
      "tag key uid bytes (key layout)")                                                            \
    X(LAYOUT, "tsd.storage.uid.width.tagv", layout.tagv_width, "3", 1, ROWKEY_MAX_UID_WIDTH, NULL, \
      "tag value uid bytes (key layout)")

#define TSDB_TYPE_BOOL   CT_CFG_BOOL
#define TSDB_TYPE_STR    CT_CFG_STR
#define TSDB_TYPE_UINT   CT_CFG_INT
#define TSDB_TYPE_TTL    CT_CFG_INT
#define TSDB_TYPE_LAYOUT CT_CFG_INT
#define TSDB_TYPE_ENUM   CT_CFG_ENUM
#define TSDB_KEY_DESC(kind, key, field, def, min, max, choices, meaning)                           \
    {key, TSDB_TYPE_##kind, def, min, max, choices, TSDB_OWNER, meaning},
static const struct ct_cfg_key tsdb_keys[] = {TSDB_KEYS(TSDB_KEY_DESC)};
#undef TSDB_KEY_DESC
#define TSDB_NKEYS (sizeof(tsdb_keys) / sizeof(tsdb_keys[0]))

const struct ct_cfg_key *tsdb_config_keys(size_t *n)
{
    *n = TSDB_NKEYS;
    return tsdb_keys;
}

static const struct ct_cfg_key *tsdb_key_find(const char *key)
{
    size_t lo = 0, hi = TSDB_NKEYS;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(key, tsdb_keys[mid].key);
        if (c == 0)
            return &tsdb_keys[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

void tsdb_config_init(struct tsdb_config *c)
{
    assert(ct_cfg_sorted(tsdb_keys, TSDB_NKEYS));
    memset(c, 0, sizeof(*c));
    for (size_t i = 0; i < TSDB_NKEYS; i++) {
        struct ct_err err = {0};
        if (tsdb_config_set(c, tsdb_keys[i].key, tsdb_keys[i].def, &err) != CT_OK)
            assert(!"a default in tsdb_keys[] does not apply");
    }
    c->layout_given = false; /* defaults are not a choice of layout (tsdb_open) */
    c->encoding = WC_ENCODING_PREFIX;
    c->read_only = false;
}

int tsdb_config_check(const struct tsdb_config *c, struct ct_err *err)
{
    int rc = rowkey_layout_check(&c->layout, err);
    if (rc != CT_OK)
        return rc;
    if (c->max_tags < 1 || c->max_tags > ROWKEY_MAX_TAGS)
        return ct_err_set(err, CT_EINVAL, "tsd.storage.max_tags must be 1..%d, not %u",
                          ROWKEY_MAX_TAGS, c->max_tags);
    if (c->ttl_s <= 0)
        return ct_err_set(err, CT_EINVAL, "TTL must be > 0 seconds, not %lld", (long long)c->ttl_s);
    if (c->regions_per_bucket < 1 || c->regions_per_bucket > 256)
        return ct_err_set(err, CT_EINVAL, "regions per salt bucket must be 1..256, not %u",
                          c->regions_per_bucket);
    if (c->layout.salt_width > 0 &&
        (uint64_t)c->layout.salt_buckets * c->regions_per_bucket > 65536)
        return ct_err_set(err, CT_EINVAL, "%u buckets x %u regions is more than 65536 regions",
                          c->layout.salt_buckets, c->regions_per_bucket);
    if (!c->data_table || !*c->data_table || !c->uid_table || !*c->uid_table || !c->meta_table ||
        !*c->meta_table)
        return ct_err_set(err, CT_EINVAL, "table names must not be empty");
    if (c->format != DPCODEC_FORMAT_COMPRESSED && c->format != DPCODEC_FORMAT_OPENTSDB)
        return ct_err_set(err, CT_EINVAL, "unknown compacted-cell format %d", (int)c->format);
    return CT_OK;
}

/* The enumerations' values, in the order of their `choices`, named tsdb_enum_<field>. */
static const enum wc_compression tsdb_enum_compression[] = {
    WC_COMPRESSION_NONE, WC_COMPRESSION_SNAPPY, WC_COMPRESSION_GZ};
static const enum wc_bloom tsdb_enum_bloom[] = {WC_BLOOM_NONE, WC_BLOOM_ROW, WC_BLOOM_ROWCOL};
static const enum dpcodec_format tsdb_enum_format[] = {DPCODEC_FORMAT_COMPRESSED,
                                                       DPCODEC_FORMAT_OPENTSDB};

/* The index of v (already checked) among k's choices. */
static unsigned tsdb_enum_index(const struct ct_cfg_key *k, const char *v)
{
    unsigned i = 0;
    size_t n = strlen(v);
    for (const char *p = k->choices;; i++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !strncasecmp(p, v, n))
            return i;
        assert(bar);
        p = bar + 1;
    }
}

/* Writes choice i of k into buf. */
static void tsdb_enum_name(const struct ct_cfg_key *k, unsigned i, char *buf, size_t cap)
{
    const char *p = k->choices;
    for (; i > 0; i--)
        p = strchr(p, '|') + 1;
    const char *bar = strchr(p, '|');
    snprintf(buf, cap, "%.*s", (int)(bar ? (size_t)(bar - p) : strlen(p)), p);
}

int tsdb_config_set(struct tsdb_config *c, const char *key, const char *v, struct ct_err *err)
{
    const struct ct_cfg_key *k = tsdb_key_find(key);
    if (!k)
        return CT_NOTFOUND;
    int rc = ct_cfg_check(k, v, err);
    if (rc != CT_OK)
        return rc;
    int64_t x = 0;
    bool b = false;
    if (k->type == CT_CFG_INT && ct_cfg_parse_int(v, &x) != 0)
        assert(!"checked integer does not parse");
    if (k->type == CT_CFG_BOOL && ct_cfg_parse_bool(v, &b) != 0)
        assert(!"checked boolean does not parse");
    unsigned e = k->type == CT_CFG_ENUM ? tsdb_enum_index(k, v) : 0;
#define TSDB_SET_BOOL(field) c->field = b
#define TSDB_SET_STR(field)  c->field = v
#define TSDB_SET_UINT(field) c->field = (unsigned)x
#define TSDB_SET_TTL(field)  c->field = x == 0 ? WC_TTL_FOREVER : x
#define TSDB_SET_LAYOUT(field)                                                                     \
    do {                                                                                           \
        c->field = (unsigned)x;                                                                    \
        c->layout_given = true;                                                                    \
    } while (0)
#define TSDB_SET_ENUM(field) c->field = tsdb_enum_##field[e]
#define TSDB_SET(kind, name, field, def, min, max, choices, meaning)                               \
    if (!strcmp(key, name)) {                                                                      \
        TSDB_SET_##kind(field);                                                                    \
        return CT_OK;                                                                              \
    }
    TSDB_KEYS(TSDB_SET)
#undef TSDB_SET
#undef TSDB_SET_BOOL
#undef TSDB_SET_STR
#undef TSDB_SET_UINT
#undef TSDB_SET_TTL
#undef TSDB_SET_LAYOUT
#undef TSDB_SET_ENUM
    assert(!"a key of tsdb_keys[] has no field");
    return CT_NOTFOUND;
}

/* Index of the enum value x in vals (n entries). */
#define TSDB_INDEX_OF(vals, x, out)                                                                \
    do {                                                                                           \
        for (out = 0; out + 1 < sizeof(vals) / sizeof(vals[0]) && vals[out] != (x); out++) {       \
        }                                                                                          \
    } while (0)

int tsdb_config_get(const struct tsdb_config *c, const char *key, char *buf, size_t cap)
{
    const struct ct_cfg_key *k = tsdb_key_find(key);
    if (!k)
        return CT_NOTFOUND;
    unsigned e = 0;
#define TSDB_GET_BOOL(field)   snprintf(buf, cap, "%s", c->field ? "true" : "false")
#define TSDB_GET_STR(field)    snprintf(buf, cap, "%s", c->field ? c->field : "")
#define TSDB_GET_UINT(field)   snprintf(buf, cap, "%llu", (unsigned long long)c->field)
#define TSDB_GET_LAYOUT(field) TSDB_GET_UINT(field)
#define TSDB_GET_TTL(field)                                                                        \
    snprintf(buf, cap, "%lld", c->field == WC_TTL_FOREVER ? 0LL : (long long)c->field)
#define TSDB_GET_ENUM(field)                                                                       \
    do {                                                                                           \
        TSDB_INDEX_OF(tsdb_enum_##field, c->field, e);                                             \
        tsdb_enum_name(k, e, buf, cap);                                                            \
    } while (0)
#define TSDB_GET(kind, name, field, def, min, max, choices, meaning)                               \
    if (!strcmp(key, name)) {                                                                      \
        TSDB_GET_##kind(field);                                                                    \
        return CT_OK;                                                                              \
    }
    TSDB_KEYS(TSDB_GET)
#undef TSDB_GET
#undef TSDB_GET_BOOL
#undef TSDB_GET_STR
#undef TSDB_GET_UINT
#undef TSDB_GET_LAYOUT
#undef TSDB_GET_TTL
#undef TSDB_GET_ENUM
    assert(!"a key of tsdb_keys[] has no field");
    return CT_NOTFOUND;
}

/* ---- tables ------------------------------------------------------------------------------- */

static void tsdb_family(struct wc_family_desc *f, const char *name, const struct tsdb_config *c)
{
    wc_family_desc_init(f, name);
    f->compression = c->compression;
    f->bloom = c->bloom;
}

/* Split keys of the data table: a region per salt bucket, regions_per_bucket sub-regions on the
 * first metric uid byte. Returns a new array (count in *n), freed by the caller with free(). */
static int tsdb_splits(const struct tsdb_config *c, uint8_t **buf, struct wc_bytes **keys,
                       size_t *n, struct ct_err *err)
{
    const struct rowkey_layout *l = &c->layout;
    unsigned buckets = l->salt_width ? l->salt_buckets : 1;
    unsigned per = c->regions_per_bucket;
    size_t total = (size_t)buckets * per - 1;
    *n = 0;
    *buf = NULL;
    *keys = NULL;
    if (total == 0)
        return CT_OK;
    size_t klen = l->salt_width + 1;
    *buf = malloc(total * klen);
    *keys = malloc(total * sizeof(**keys));
    if (!*buf || !*keys) {
        free(*buf);
        free(*keys);
        return ct_err_set(err, CT_ENOMEM, "out of memory for %zu split keys", total);
    }
    size_t k = 0;
    for (unsigned b = 0; b < buckets; b++) {
        for (unsigned j = 0; j < per; j++) {
            if (b == 0 && j == 0)
                continue; /* the first region starts at the table start */
            uint8_t *p = *buf + k * klen;
            rowkey_salt_bytes(l, b, p);
            size_t len = l->salt_width;
            if (j > 0)
                p[len++] = (uint8_t)((256u * j) / per);
            (*keys)[k++] = wc_bytes_of(p, len);
        }
    }
    *n = k;
    return CT_OK;
}

static int tsdb_create_one(struct wc_store *s, const char *name, struct wc_family_desc *fams,
                           size_t nfams, const struct wc_bytes *splits, size_t nsplits,
                           int *created, struct ct_err *err)
{
    int rc = wc_table_exists(s, name, err);
    if (rc == CT_OK)
        return CT_OK;
    if (rc != CT_NOTFOUND)
        return rc;
    struct wc_table_desc d;
    wc_table_desc_init(&d, name);
    d.families = fams;
    d.nfamilies = nfams;
    rc = wc_table_create(s, &d, splits, nsplits, err);
    if (rc == CT_EEXIST) /* created concurrently: fine */
        return CT_OK;
    if (rc != CT_OK)
        return ct_err_prefix(err, "cannot create table %s", name);
    (*created)++;
    return CT_OK;
}

#define TSDB_LAYOUT_ROW     "\0ctsdb.layout"
#define TSDB_LAYOUT_ROW_LEN 13
#define TSDB_LAYOUT_Q       "layout"

static int tsdb_layout_format(const struct rowkey_layout *l, char *buf, size_t cap)
{
    return snprintf(buf, cap,
                    "salt_width=%u salt_buckets=%u metric_width=%u tagk_width=%u "
                    "tagv_width=%u",
                    l->salt_width, l->salt_buckets, l->metric_width, l->tagk_width, l->tagv_width);
}

/* Records c's layout in the meta table unless a record exists (check-and-put). */
static int tsdb_layout_record(struct wc_store *s, const struct tsdb_config *c, struct ct_err *err)
{
    struct wc_table *t;
    int rc = wc_table_open(s, c->meta_table, &t, err);
    if (rc != CT_OK)
        return ct_err_prefix(err, "cannot open %s", c->meta_table);
    char v[160];
    int n = tsdb_layout_format(&c->layout, v, sizeof(v));
    struct wc_mutation m = {WC_OP_PUT, wc_bytes_str(TSDB_META_FAMILY), wc_bytes_str(TSDB_LAYOUT_Q),
                            wc_bytes_of(v, (size_t)n), WC_TS_LATEST};
    struct wc_row_mutation rm = {wc_bytes_of(TSDB_LAYOUT_ROW, TSDB_LAYOUT_ROW_LEN), &m, 1};
    bool applied;
    rc = wc_check_and_mutate(t, rm.row, m.family, m.qualifier, NULL, &rm, WC_DURABILITY_USE_DEFAULT,
                             &applied, err);
    wc_table_close(t);
    return rc;
}

int tsdb_layout_stored(struct wc_store *s, const char *meta_table, struct rowkey_layout *out,
                       struct ct_err *err)
{
    struct wc_table *t;
    int rc = wc_table_open(s, meta_table, &t, err);
    if (rc != CT_OK)
        return rc;
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_column col = {wc_bytes_str(TSDB_META_FAMILY), wc_bytes_str(TSDB_LAYOUT_Q), true};
    o.columns = &col;
    o.ncolumns = 1;
    struct wc_result r;
    rc = wc_get(t, wc_bytes_of(TSDB_LAYOUT_ROW, TSDB_LAYOUT_ROW_LEN), &o, &r, err);
    if (rc != CT_OK) {
        wc_table_close(t);
        return rc;
    }
    rc = CT_NOTFOUND;
    if (r.row.ncells) {
        char v[160];
        size_t n =
            r.row.cells[0].value.len < sizeof(v) - 1 ? r.row.cells[0].value.len : sizeof(v) - 1;
        memcpy(v, r.row.cells[0].value.data, n);
        v[n] = 0;
        struct rowkey_layout l;
        if (sscanf(v, "salt_width=%u salt_buckets=%u metric_width=%u tagk_width=%u tagv_width=%u",
                   &l.salt_width, &l.salt_buckets, &l.metric_width, &l.tagk_width,
                   &l.tagv_width) == 5 &&
            rowkey_layout_check(&l, err) == CT_OK) {
            *out = l;
            rc = CT_OK;
        } else {
            rc = ct_err_set(err, CT_ECORRUPT, "bad layout record in %s: '%s'", meta_table, v);
        }
    }
    wc_result_release(&r);
    wc_table_close(t);
    return rc;
}

/* Decides the key layout to use on store s with config c (tsdb.h, tsdb_open): the recorded one,
 * c's when given (it must then equal the record), OpenTSDB's unsalted one for a data table
 * without a record, c's for a new store. */
static int tsdb_layout_resolve(struct wc_store *s, const struct tsdb_config *c,
                               struct rowkey_layout *out, struct ct_err *err)
{
    struct rowkey_layout stored;
    int rc = tsdb_layout_stored(s, c->meta_table, &stored, err);
    if (rc == CT_OK) {
        if (c->layout_given && memcmp(&stored, &c->layout, sizeof(stored)) != 0) {
            const struct rowkey_layout *l[2] = {&stored, &c->layout};
            char d[2][80]; /* short, so that the message survives callers' prefixes */
            for (int i = 0; i < 2; i++)
                snprintf(d[i], sizeof(d[i]), "salt_width=%u salt_buckets=%u uid widths %u/%u/%u",
                         l[i]->salt_width, l[i]->salt_buckets, l[i]->metric_width, l[i]->tagk_width,
                         l[i]->tagv_width);
            return ct_err_set(err, CT_EINVAL,
                              "the tables were created with %s, the config says %s (a store "
                              "keeps its key layout)",
                              d[0], d[1]);
        }
        *out = stored;
        return CT_OK;
    }
    if (rc != CT_NOTFOUND)
        return rc;
    ct_err_clear(err);
    rc = wc_table_exists(s, c->data_table, err);
    if (rc == CT_NOTFOUND) { /* a new store */
        ct_err_clear(err);
        *out = c->layout;
        return CT_OK;
    }
    if (rc != CT_OK)
        return rc;
    if (c->layout_given) {
        *out = c->layout;
    } else {
        /* no record: written by a build that recorded nothing, whose default was OpenTSDB's
         * unsalted layout, or by OpenTSDB itself */
        rowkey_layout_init(out);
    }
    return CT_OK;
}

/* Writes the uid table's generation when it has none (schema/uid.h): a table created (or
 * recreated) here starts a new life that running services notice. */
static int tsdb_uid_generation_init(struct wc_store *s, const struct tsdb_config *c,
                                    struct ct_err *err)
{
    struct wc_table *t;
    int rc = wc_table_open(s, c->uid_table, &t, err);
    if (rc != CT_OK)
        return ct_err_prefix(err, "cannot open table %s", c->uid_table);
    struct uid_options uo;
    uid_options_init(&uo);
    uo.cache_entries = 0;
    struct uid *u;
    rc = uid_open(t, &uo, &u, err);
    if (rc == CT_OK) {
        rc = uid_generation_init(u, err);
        uid_close(u);
    }
    wc_table_close(t);
    return rc;
}

/* tsdb_create_tables() with the key layout already decided. */
static int tsdb_create_tables_in(struct wc_store *s, const struct tsdb_config *c0,
                                 const struct rowkey_layout *l, int *created, struct ct_err *err)
{
    struct tsdb_config cc = *c0;
    const struct tsdb_config *c = &cc;
    cc.layout = *l;
    *created = 0;
    int rc = tsdb_config_check(c, err);
    if (rc != CT_OK)
        return rc;
    struct wc_family_desc t;
    tsdb_family(&t, TSDB_DATA_FAMILY, c);
    t.versions = 1;
    t.ttl_s = c->ttl_s;
    t.min_versions = c->min_versions;
    t.encoding = c->encoding;
    uint8_t *buf;
    struct wc_bytes *keys;
    size_t nkeys;
    rc = tsdb_splits(c, &buf, &keys, &nkeys, err);
    if (rc != CT_OK)
        return rc;
    rc = tsdb_create_one(s, c->data_table, &t, 1, keys, nkeys, created, err);
    free(buf);
    free(keys);
    if (rc != CT_OK)
        return rc;
    struct wc_family_desc u[2];
    tsdb_family(&u[0], UID_FAMILY_ID, c);
    tsdb_family(&u[1], UID_FAMILY_NAME, c);
    rc = tsdb_create_one(s, c->uid_table, u, 2, NULL, 0, created, err);
    if (rc != CT_OK)
        return rc;
    if ((rc = tsdb_uid_generation_init(s, c, err)) != CT_OK)
        return rc;
    struct wc_family_desc m;
    tsdb_family(&m, TSDB_META_FAMILY, c);
    rc = tsdb_create_one(s, c->meta_table, &m, 1, NULL, 0, created, err);
    if (rc != CT_OK)
        return rc;
    return tsdb_layout_record(s, c, err);
}

int tsdb_create_tables(struct wc_store *s, const struct tsdb_config *c, int *created,
                       struct ct_err *err)
{
    int dummy = 0;
    if (!created)
        created = &dummy;
    *created = 0;
    struct rowkey_layout l;
    int rc = tsdb_layout_resolve(s, c, &l, err);
    if (rc != CT_OK)
        return rc;
    return tsdb_create_tables_in(s, c, &l, created, err);
}

/* ---- handle ------------------------------------------------------------------------------- */

static int tsdb_copy_name(char *dst, const char *src, struct ct_err *err)
{
    if (strlen(src) >= WC_MAX_TABLE_NAME)
        return ct_err_set(err, CT_EINVAL, "table name '%s' is too long", src);
    strcpy(dst, src);
    return CT_OK;
}

static int tsdb_open_table(struct tsdb *t, const char *name, struct wc_table **out,
                           struct ct_err *err)
{
    int rc = wc_table_open(t->s, name, out, err);
    if (rc == CT_NOTFOUND)
        return ct_err_set(err, CT_NOTFOUND,
                          "table %s does not exist (create it with `ctsdb create-tables`)", name);
    if (rc != CT_OK)
        return ct_err_prefix(err, "cannot open table %s", name);
    return CT_OK;
}

int tsdb_open(struct wc_store *s, const struct tsdb_config *c, struct tsdb **out,
              struct ct_err *err)
{
    int rc = tsdb_config_check(c, err);
    if (rc != CT_OK)
        return rc;
    struct tsdb *t = calloc(1, sizeof(*t));
    if (!t)
        return ct_err_set(err, CT_ENOMEM, "out of memory for the tsdb handle");
    t->s = s;
    t->c = *c;
    if ((rc = tsdb_copy_name(t->data_name, c->data_table, err)) != CT_OK ||
        (rc = tsdb_copy_name(t->uid_name, c->uid_table, err)) != CT_OK ||
        (rc = tsdb_copy_name(t->meta_name, c->meta_table, err)) != CT_OK)
        goto fail;
    t->c.data_table = t->data_name;
    t->c.uid_table = t->uid_name;
    t->c.meta_table = t->meta_name;
    if (c->allow_special) {
        t->allow_special = strdup(c->allow_special);
        if (!t->allow_special) {
            rc = ct_err_set(err, CT_ENOMEM, "out of memory");
            goto fail;
        }
    }
    t->c.allow_special = t->allow_special;
    rc = tsdb_layout_resolve(s, c, &t->c.layout, err);
    if (rc != CT_OK)
        goto fail;
    if (c->create_tables && !c->read_only) {
        int created = 0;
        rc = tsdb_create_tables_in(s, c, &t->c.layout, &created, err);
        if (rc != CT_OK)
            goto fail;
    }
    c = &t->c; /* from here on: the decided layout */
    if ((rc = tsdb_open_table(t, t->data_name, &t->data, err)) != CT_OK ||
        (rc = tsdb_open_table(t, t->uid_name, &t->uidt, err)) != CT_OK ||
        (rc = tsdb_open_table(t, t->meta_name, &t->meta, err)) != CT_OK)
        goto fail;
    struct uid_options uo;
    uid_options_init(&uo);
    uo.width[UID_METRIC] = c->layout.metric_width;
    uo.width[UID_TAGK] = c->layout.tagk_width;
    uo.width[UID_TAGV] = c->layout.tagv_width;
    uo.random_metrics = c->random_metrics;
    uo.cache_entries = c->uid_cache_entries;
    uo.cache_bytes = (size_t)c->uid_cache_bytes;
    uo.generation_check_ms = c->uid_generation_check_ms;
    uo.allow_special = c->allow_special;
    rc = uid_open(t->uidt, &uo, &t->uid, err);
    if (rc != CT_OK)
        goto fail;
    if (!c->read_only) {
        rc = wc_set_compact_hook(s, t->data_name, TSDB_DATA_FAMILY, tsdb_compact_hook, t, err);
        if (rc == CT_OK)
            t->hooked = true;
        else if (rc == CT_EUNSUPPORTED)
            ct_err_clear(err); /* a backend without compactions (Bigtable): cells stay single */
        else
            goto fail;
    }
    *out = t;
    return CT_OK;
fail:
    tsdb_close(t);
    return rc;
}

int tsdb_open_dir(const char *data_dir, struct tsdb_config *c, struct wc_store **s, struct tsdb **t,
                  struct ct_err *err)
{
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = data_dir;
    o.create_if_missing = false;
    o.read_only = c->read_only;
    struct wc_store *st = NULL;
    int rc = wc_open(&o, &st, err);
    if (rc != CT_OK)
        return ct_err_prefix(err, "cannot open data directory %s", data_dir);
    c->create_tables = false;
    rc = tsdb_open(st, c, t, err);
    if (rc != CT_OK) {
        wc_close(st);
        return rc;
    }
    *s = st;
    return CT_OK;
}

void tsdb_close(struct tsdb *t)
{
    if (!t)
        return;
    if (t->hooked) {
        struct ct_err e = {0};
        /* Flush while the hook is still installed, so that the hours complete by now leave as
         * compacted cells rather than one cell per point (the store's own flush at close runs
         * after the hook is gone). */
        if (wc_table_flush(t->s, t->data_name, &e) != CT_OK) {
            /* not fatal: the data is in the log and the next flush or compaction compacts it */
        }
        if (wc_set_compact_hook(t->s, t->data_name, TSDB_DATA_FAMILY, NULL, NULL, &e) != CT_OK) {
            /* the store is closing anyway; a stale hook is never called after wc_close() */
        }
    }
    uid_close(t->uid);
    wc_table_close(t->data);
    wc_table_close(t->uidt);
    wc_table_close(t->meta);
    free(t->allow_special);
    free(t);
}

const struct tsdb_config *tsdb_get_config(const struct tsdb *t)
{
    return &t->c;
}
const struct rowkey_layout *tsdb_layout(const struct tsdb *t)
{
    return &t->c.layout;
}
struct uid *tsdb_uid(struct tsdb *t)
{
    return t->uid;
}
struct wc_table *tsdb_data_table(struct tsdb *t)
{
    return t->data;
}
struct wc_table *tsdb_uid_table(struct tsdb *t)
{
    return t->uidt;
}
struct wc_table *tsdb_meta_table(struct tsdb *t)
{
    return t->meta;
}

/* ---- series ------------------------------------------------------------------------------- */

static int tsdb_tags_text(const char *const *tagk, const char *const *tagv, size_t n, char *buf,
                          size_t cap)
{
    size_t o = 0;
    o += (size_t)snprintf(buf + o, cap - o, "{");
    for (size_t i = 0; i < n && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%s=%s", i ? ", " : "", tagk[i], tagv[i]);
    if (o < cap)
        snprintf(buf + o, cap - o, "}");
    return 0;
}

/* Resolves one name. Its description for an error message is what_pre, then what_arg and "]"
 * when what_arg is given (e.g. "tag name with value [" "web01" "]"); it is only formatted when
 * the name is refused, so resolving a valid series formats nothing. */
static int tsdb_resolve_one(struct tsdb *t, enum uid_kind k, bool create, const char *what_pre,
                            const char *what_arg, const char *name, uint64_t *id,
                            struct ct_err *err)
{
    size_t len = strlen(name);
    int rc = uid_name_check(what_pre, name, len, t->c.allow_special, err);
    if (rc != CT_OK && what_arg) {
        char what[UID_MAX_NAME + 40];
        snprintf(what, sizeof(what), "%s%s]", what_pre, what_arg);
        ct_err_clear(err);
        rc = uid_name_check(what, name, len, t->c.allow_special, err);
    }
    if (rc != CT_OK)
        return rc;
    return create ? uid_get_or_create_id(t->uid, k, name, len, id, err)
                  : uid_get_id(t->uid, k, name, len, id, err);
}

int tsdb_series_resolve(struct tsdb *t, const char *metric, const char *const *tagk,
                        const char *const *tagv, size_t ntags, uint8_t *tsuid, size_t cap,
                        size_t *len, struct ct_err *err)
{
    char tags[200];
    if (ntags == 0)
        return ct_err_set(err, CT_EINVAL, "Need at least one tag (metric=%s, tags={})", metric);
    if (ntags > t->c.max_tags) {
        tsdb_tags_text(tagk, tagv, ntags, tags, sizeof(tags));
        return ct_err_set(err, CT_EINVAL, "Too many tags: %zu maximum allowed: %u, tags: %s", ntags,
                          t->c.max_tags, tags);
    }
    uint64_t mid;
    int rc = tsdb_resolve_one(t, UID_METRIC, t->c.auto_create_metrics, "metric name", NULL, metric,
                              &mid, err);
    if (rc != CT_OK)
        return rc;
    struct rowkey_tag rt[ROWKEY_MAX_TAGS];
    for (size_t i = 0; i < ntags; i++) {
        rc = tsdb_resolve_one(t, UID_TAGK, t->c.auto_create_tagks, "tag name with value [", tagv[i],
                              tagk[i], &rt[i].tagk, err);
        if (rc != CT_OK)
            return rc;
        rc = tsdb_resolve_one(t, UID_TAGV, t->c.auto_create_tagvs, "tag value with key [", tagk[i],
                              tagv[i], &rt[i].tagv, err);
        if (rc != CT_OK)
            return rc;
    }
    rc = rowkey_tsuid_build(&t->c.layout, mid, rt, ntags, tsuid, cap, len, err);
    if (rc == CT_EINVAL && strstr(err->msg, "duplicate")) {
        tsdb_tags_text(tagk, tagv, ntags, tags, sizeof(tags));
        return ct_err_set(err, CT_EINVAL, "duplicate tag key in %s", tags);
    }
    return rc;
}

/* ---- batches ------------------------------------------------------------------------------ */

struct tsdb_entry {
    uint32_t row_off, q_off, v_off;
    uint16_t row_len;
    uint8_t q_len, v_len;
};

/* A point's place in the write order: its row's first 16 bytes as two big-endian integers
 * (most comparisons end there), then the whole row, qualifier and the point's index. */
struct tsdb_order {
    uint64_t k0, k1;
    uint32_t idx;
};

struct tsdb_batch {
    uint8_t *arena;
    size_t arena_len, arena_cap;
    struct tsdb_entry *e;
    size_t n, cap;
    struct wc_mutation *muts; /* cap entries, filled at write */
    struct wc_row_mutation *rows;
    struct tsdb_order *ord; /* cap entries, filled at write */
};

static int tsdb_batch_grow(struct tsdb_batch *b, size_t want_points, size_t want_bytes,
                           struct ct_err *err)
{
    if (want_points > b->cap) {
        size_t nc = b->cap ? b->cap : 64;
        while (nc < want_points)
            nc *= 2;
        struct tsdb_entry *e = realloc(b->e, nc * sizeof(*e));
        if (!e)
            return ct_err_set(err, CT_ENOMEM, "out of memory for a batch of %zu points", nc);
        b->e = e;
        struct wc_mutation *m = realloc(b->muts, nc * sizeof(*m));
        if (!m)
            return ct_err_set(err, CT_ENOMEM, "out of memory for a batch of %zu points", nc);
        b->muts = m;
        struct wc_row_mutation *r = realloc(b->rows, nc * sizeof(*r));
        if (!r)
            return ct_err_set(err, CT_ENOMEM, "out of memory for a batch of %zu points", nc);
        b->rows = r;
        struct tsdb_order *o = realloc(b->ord, nc * sizeof(*o));
        if (!o)
            return ct_err_set(err, CT_ENOMEM, "out of memory for a batch of %zu points", nc);
        b->ord = o;
        b->cap = nc;
    }
    if (want_bytes > b->arena_cap) {
        size_t nc = b->arena_cap ? b->arena_cap : 4096;
        while (nc < want_bytes)
            nc *= 2;
        if (nc > UINT32_MAX)
            return ct_err_set(err, CT_ELIMIT, "batch larger than 4 GiB");
        uint8_t *a = realloc(b->arena, nc);
        if (!a)
            return ct_err_set(err, CT_ENOMEM, "out of memory for a batch arena of %zu bytes", nc);
        b->arena = a;
        b->arena_cap = nc;
    }
    return CT_OK;
}

int tsdb_batch_new(size_t hint, struct tsdb_batch **out, struct ct_err *err)
{
    struct tsdb_batch *b = calloc(1, sizeof(*b));
    if (!b)
        return ct_err_set(err, CT_ENOMEM, "out of memory for a batch");
    int rc = tsdb_batch_grow(b, hint ? hint : 64, (hint ? hint : 64) * 40, err);
    if (rc != CT_OK) {
        tsdb_batch_free(b);
        return rc;
    }
    *out = b;
    return CT_OK;
}

void tsdb_batch_free(struct tsdb_batch *b)
{
    if (!b)
        return;
    free(b->arena);
    free(b->e);
    free(b->muts);
    free(b->rows);
    free(b->ord);
    free(b);
}

void tsdb_batch_reset(struct tsdb_batch *b)
{
    b->n = 0;
    b->arena_len = 0;
}

size_t tsdb_batch_count(const struct tsdb_batch *b)
{
    return b->n;
}

int tsdb_batch_add(struct tsdb_batch *b, const struct rowkey_layout *l, const uint8_t *tsuid,
                   size_t tsuid_len, const struct dpcodec_point *p, struct ct_err *err)
{
    return tsdb_batch_add_salted(b, l, rowkey_salt_bucket(l, tsuid, tsuid_len), tsuid, tsuid_len, p,
                                 err);
}

int tsdb_batch_add_salted(struct tsdb_batch *b, const struct rowkey_layout *l, uint32_t bucket,
                          const uint8_t *tsuid, size_t tsuid_len, const struct dpcodec_point *p,
                          struct ct_err *err)
{
    size_t pair = l->tagk_width + l->tagv_width;
    if (tsuid_len <= l->metric_width || (tsuid_len - l->metric_width) % pair != 0 ||
        tsuid_len > ROWKEY_MAX_TSUID)
        return ct_err_set(err, CT_EINVAL, "tsuid of %zu bytes does not fit the uid widths",
                          tsuid_len);
    if (p->ts_ms < 0 || p->ts_ms > 9999999999999LL)
        return ct_err_set(err, CT_EINVAL, "timestamp %lld ms is out of range", (long long)p->ts_ms);
    size_t rlen = l->salt_width + ROWKEY_TIMESTAMP_BYTES + tsuid_len;
    size_t need = rlen + DPCODEC_MAX_QUALIFIER + DPCODEC_MAX_VALUE;
    int rc = tsdb_batch_grow(b, b->n + 1, b->arena_len + need, err);
    if (rc != CT_OK)
        return rc;
    int64_t ts_s = p->ts_ms / 1000;
    struct tsdb_entry *e = &b->e[b->n];
    uint8_t *row = b->arena + b->arena_len;
    size_t got = rowkey_encode_salted(l, bucket, tsuid, tsuid_len, ts_s, row);
    /* a point of the same row as the previous one shares its key bytes */
    if (b->n > 0) {
        const struct tsdb_entry *prev = &b->e[b->n - 1];
        if (prev->row_len == got && !memcmp(b->arena + prev->row_off, row, got)) {
            e->row_off = prev->row_off;
            got = 0;
        }
    }
    if (got) {
        e->row_off = (uint32_t)b->arena_len;
        b->arena_len += got;
    }
    e->row_len = (uint16_t)rlen;
    uint8_t *q = b->arena + b->arena_len;
    size_t qlen, vlen;
    rc = dpcodec_encode(rowkey_base_hour_s(ts_s), p, q, &qlen, q + DPCODEC_MAX_QUALIFIER, &vlen,
                        err);
    if (rc != CT_OK) {
        b->arena_len -= got;
        return rc;
    }
    memmove(q + qlen, q + DPCODEC_MAX_QUALIFIER, vlen);
    e->q_off = (uint32_t)b->arena_len;
    e->q_len = (uint8_t)qlen;
    e->v_off = (uint32_t)(b->arena_len + qlen);
    e->v_len = (uint8_t)vlen;
    b->arena_len += qlen + vlen;
    b->n++;
    return CT_OK;
}

static uint64_t tsdb_be64_prefix(const uint8_t *p, size_t len)
{
    uint8_t b[8] = {0};
    memcpy(b, p, len < 8 ? len : 8); /* one load and a byte swap, not 8 shifts */
    uint64_t v;
    memcpy(&v, b, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* Memstore order (row bytes, then qualifier bytes), then arrival order: the sort is stable, so
 * two writes of one cell in a batch keep their order and the later one still wins. */
static int tsdb_order_cmp(const struct tsdb_order *x, const struct tsdb_order *y,
                          const struct tsdb_batch *b)
{
    if (x->k0 != y->k0)
        return x->k0 < y->k0 ? -1 : 1;
    if (x->k1 != y->k1)
        return x->k1 < y->k1 ? -1 : 1;
    const struct tsdb_entry *a = &b->e[x->idx], *c = &b->e[y->idx];
    if (a->row_off != c->row_off) {
        size_t n = a->row_len < c->row_len ? a->row_len : c->row_len;
        int r = n > 16 ? memcmp(b->arena + a->row_off + 16, b->arena + c->row_off + 16, n - 16) : 0;
        if (r)
            return r;
        if (a->row_len != c->row_len)
            return a->row_len < c->row_len ? -1 : 1;
    }
    size_t n = a->q_len < c->q_len ? a->q_len : c->q_len;
    int r = memcmp(b->arena + a->q_off, b->arena + c->q_off, n);
    if (r)
        return r;
    if (a->q_len != c->q_len)
        return a->q_len < c->q_len ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* True if entries a and c are the same cell (row and qualifier). */
static bool tsdb_same_cell(const struct tsdb_batch *b, const struct tsdb_order *x,
                           const struct tsdb_order *y)
{
    const struct tsdb_entry *a = &b->e[x->idx], *c = &b->e[y->idx];
    return x->k0 == y->k0 && x->k1 == y->k1 && a->q_len == c->q_len && a->row_len == c->row_len &&
           !memcmp(b->arena + a->q_off, b->arena + c->q_off, a->q_len) &&
           (a->row_off == c->row_off ||
            !memcmp(b->arena + a->row_off, b->arena + c->row_off, a->row_len));
}

/* Sorts b->ord[0..n): insertion sort for short runs, merge sort (through the muts array as
 * scratch, which is rewritten afterwards) above that. No allocation. */
static void tsdb_order_sort(struct tsdb_batch *b, struct tsdb_order *o, size_t n,
                            struct tsdb_order *tmp)
{
    if (n <= 16) {
        for (size_t i = 1; i < n; i++) {
            struct tsdb_order v = o[i];
            size_t j = i;
            while (j > 0 && tsdb_order_cmp(&v, &o[j - 1], b) < 0) {
                o[j] = o[j - 1];
                j--;
            }
            o[j] = v;
        }
        return;
    }
    size_t h = n / 2;
    tsdb_order_sort(b, o, h, tmp);
    tsdb_order_sort(b, o + h, n - h, tmp);
    if (tsdb_order_cmp(&o[h - 1], &o[h], b) <= 0)
        return; /* already in order (the common case for sorted input) */
    memcpy(tmp, o, h * sizeof(*o));
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        o[k++] = tsdb_order_cmp(&o[j], &tmp[i], b) < 0 ? o[j++] : tmp[i++];
    while (i < h)
        o[k++] = tmp[i++];
}

int tsdb_batch_write(struct tsdb *t, struct tsdb_batch *b, enum wc_durability d, struct ct_err *err)
{
    if (b->n == 0)
        return CT_OK;
    /* Cells go to the store in its own key order: each memstore insert then lands next to the
     * previous one, so the skiplist nodes it passes are still in the CPU cache, and the points
     * of one row become one row mutation. A cell given twice in the batch is written once,
     * with its last value: the value a read would have returned anyway. */
    for (size_t i = 0; i < b->n; i++) {
        const struct tsdb_entry *e = &b->e[i];
        const uint8_t *row = b->arena + e->row_off;
        b->ord[i].k0 = tsdb_be64_prefix(row, e->row_len);
        b->ord[i].k1 = e->row_len > 8 ? tsdb_be64_prefix(row + 8, e->row_len - 8u) : 0;
        b->ord[i].idx = (uint32_t)i;
    }
    /* the merge scratch: half the order entries fit in the muts array, filled only below */
    _Static_assert(sizeof(struct wc_mutation) >= sizeof(struct tsdb_order),
                   "merge scratch must fit in the mutation array");
    tsdb_order_sort(b, b->ord, b->n, (struct tsdb_order *)(void *)b->muts);
    size_t nrows = 0, nm = 0;
    const struct wc_bytes fam = wc_bytes_str(TSDB_DATA_FAMILY);
    const struct tsdb_entry *prev = NULL;
    for (size_t i = 0; i < b->n; i++) {
        const struct tsdb_entry *e = &b->e[b->ord[i].idx];
        if (i + 1 < b->n && tsdb_same_cell(b, &b->ord[i], &b->ord[i + 1]))
            continue; /* the same cell again later in the batch: the later write wins */
        struct wc_mutation *m = &b->muts[nm++];
        m->op = WC_OP_PUT;
        m->family = fam;
        m->qualifier = wc_bytes_of(b->arena + e->q_off, e->q_len);
        m->value = wc_bytes_of(b->arena + e->v_off, e->v_len);
        m->ts_ms = WC_TS_LATEST;
        /* the points of one row become one row mutation */
        if (prev && (e->row_off == prev->row_off ||
                     (e->row_len == prev->row_len &&
                      !memcmp(b->arena + e->row_off, b->arena + prev->row_off, e->row_len)))) {
            b->rows[nrows - 1].n++;
            continue;
        }
        b->rows[nrows].row = wc_bytes_of(b->arena + e->row_off, e->row_len);
        b->rows[nrows].mutations = m;
        b->rows[nrows].n = 1;
        nrows++;
        prev = e;
    }
    return wc_mutate_batch(t->data, b->rows, nrows, d, err);
}

/* ---- compaction --------------------------------------------------------------------------- */

int tsdb_compact_hook(void *arg, const struct wc_cell *cells, size_t n, bool major,
                      struct wc_cell_sink *sink, struct ct_err *err)
{
    (void)major;
    struct tsdb *t = arg;
    if (!t->c.enable_compaction || n == 0)
        return CT_NOTFOUND;
    struct rowkey_parts parts;
    if (rowkey_decode(&t->c.layout, cells[0].row.data, cells[0].row.len, &parts, err) != CT_OK) {
        ct_err_clear(err);
        return CT_NOTFOUND; /* not a datapoint row (fsck reports it) */
    }
    int64_t now_s = clock_now_ms() / 1000;
    if (parts.base_s + ROWKEY_HOUR_S + t->c.compaction_delay_s > now_s)
        return CT_NOTFOUND; /* (2): the hour may still get points */
    struct dpcodec_compacted out;
    int rc = dpcodec_compact(parts.base_s, cells, n, t->c.format, t->c.fix_duplicates, &out, err);
    if (rc == CT_NOTFOUND)
        return CT_NOTFOUND;
    if (rc == CT_ECONFLICT || rc == CT_ECORRUPT) {
        /* (2): keep the row as it is; fsck reports and repairs it */
        ct_err_clear(err);
        return CT_NOTFOUND;
    }
    if (rc != CT_OK)
        return rc;
    for (size_t i = 0; i < out.ncells && rc == CT_OK; i++) {
        struct wc_cell c = out.cells[i];
        c.row = cells[0].row;
        c.family = cells[0].family;
        c.type = WC_TYPE_PUT;
        rc = wc_cell_sink_emit(sink, &c, err);
    }
    dpcodec_compacted_free(&out);
    return rc;
}

static bool tsdb_is_datapoint(const struct wc_cell *c)
{
    enum dpcodec_qkind k = dpcodec_qualifier_kind(c->qualifier.data, c->qualifier.len);
    return k != DPCODEC_Q_ANNOTATION && k != DPCODEC_Q_OTHER;
}

int tsdb_merge_mutations(const struct wc_cell *cells, size_t n,
                         const struct dpcodec_compacted *merged, struct wc_mutation **ms,
                         size_t *nm, struct ct_err *err)
{
    *ms = NULL;
    *nm = 0;
    struct wc_mutation *m = calloc(n + merged->ncells + 1, sizeof(*m));
    if (!m)
        return ct_err_set(err, CT_ENOMEM, "out of memory merging a row of %zu cells", n);
    size_t k = 0;
    int64_t newest = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        if (!tsdb_is_datapoint(&cells[i]))
            continue;
        m[k].op = WC_OP_DELETE_COLUMN;
        m[k].family = cells[i].family;
        m[k].qualifier = cells[i].qualifier;
        m[k].ts_ms = cells[i].ts_ms;
        if (cells[i].ts_ms > newest)
            newest = cells[i].ts_ms;
        k++;
    }
    /* after every version deleted, or a delete of the same column would mask it (a cell written
     * in this very millisecond, or under a pinned clock) */
    int64_t now = clock_now_ms();
    for (size_t j = 0; j < merged->ncells; j++) {
        if (!tsdb_is_datapoint(&merged->cells[j]))
            continue;
        m[k].op = WC_OP_PUT;
        m[k].family = wc_bytes_str(TSDB_DATA_FAMILY);
        m[k].qualifier = merged->cells[j].qualifier;
        m[k].value = merged->cells[j].value;
        m[k].ts_ms = newest >= now ? newest + 1 : WC_TS_LATEST;
        k++;
    }
    *ms = m;
    *nm = k;
    return CT_OK;
}

int tsdb_merge_hour(struct tsdb *t, const uint8_t *row, size_t rl, int64_t base_s,
                    const uint8_t *q, size_t ql, const uint8_t *v, size_t vl,
                    enum wc_durability d, size_t *dups, struct ct_err *err)
{
    if (dups)
        *dups = 0;
    struct wc_mutation put = {WC_OP_PUT, wc_bytes_str(TSDB_DATA_FAMILY), wc_bytes_of(q, ql),
                              wc_bytes_of(v, vl), WC_TS_LATEST};
    struct wc_row_mutation rm = {wc_bytes_of(row, rl), &put, 1};
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_column col = {wc_bytes_str(TSDB_DATA_FAMILY), {0}, false};
    o.columns = &col;
    o.ncolumns = 1;
    struct wc_result r;
    int rc = wc_get(t->data, rm.row, &o, &r, err);
    if (rc != CT_OK)
        return ct_err_prefix(err, "read the row to merge a head hour into");
    struct wc_cell *cells = calloc(r.row.ncells + 1, sizeof(*cells));
    if (!cells) {
        wc_result_release(&r);
        return ct_err_set(err, CT_ENOMEM, "out of memory merging a row of %zu cells",
                          r.row.ncells);
    }
    size_t n = 0;
    for (size_t i = 0; i < r.row.ncells; i++)
        cells[n++] = r.row.cells[i];
    /* the hour's cell, newer than every stored cell: its points win at equal timestamps */
    cells[n] = (struct wc_cell){rm.row, put.family, put.qualifier, put.value, INT64_MAX,
                                WC_TYPE_PUT};
    struct dpcodec_compacted out;
    struct wc_mutation *ms = NULL;
    size_t nm = 0;
    rc = dpcodec_compact(base_s, cells, n + 1, t->c.format, true, &out, err);
    if (rc == CT_OK) {
        if (dups)
            *dups = out.duplicates;
        rc = tsdb_merge_mutations(cells, n, &out, &ms, &nm, err);
        if (rc == CT_OK) {
            struct wc_row_mutation mm = {rm.row, ms, nm};
            rc = wc_mutate_row(t->data, &mm, d, err);
        }
        free(ms);
        dpcodec_compacted_free(&out);
    } else if (rc == CT_NOTFOUND || rc == CT_ECORRUPT) {
        /* nothing to merge with (or nothing decodable to merge: left for fsck) */
        ct_err_clear(err);
        rc = wc_mutate_row(t->data, &rm, d, err);
    }
    free(cells);
    wc_result_release(&r);
    return rc;
}

/* ---- annotations -------------------------------------------------------------------------- */

/* Row key of an annotation: the series' hour row, or the global row [0..][0 metric][base]. */
static size_t tsdb_annotation_row(struct tsdb *t, const uint8_t *tsuid, size_t tsuid_len,
                                  int64_t start_ms, uint8_t *row, struct ct_err *err)
{
    const struct rowkey_layout *l = &t->c.layout;
    int64_t ts_s = start_ms / 1000;
    if (tsuid && tsuid_len) {
        size_t pair = l->tagk_width + l->tagv_width;
        if (tsuid_len <= l->metric_width || (tsuid_len - l->metric_width) % pair ||
            tsuid_len > ROWKEY_MAX_TSUID) {
            ct_err_set(err, CT_EINVAL, "tsuid of %zu bytes does not fit the uid widths", tsuid_len);
            return 0;
        }
        return rowkey_encode(l, tsuid, tsuid_len, ts_s, row);
    }
    uint8_t zero[ROWKEY_MAX_UID_WIDTH] = {0};
    return rowkey_encode(l, zero, l->metric_width, ts_s, row);
}

int tsdb_annotation_put(struct tsdb *t, const uint8_t *tsuid, size_t tsuid_len, int64_t start_ms,
                        const char *json, size_t json_len, struct ct_err *err)
{
    if (start_ms <= 0)
        return ct_err_set(err, CT_EINVAL, "Missing start time");
    uint8_t row[ROWKEY_MAX_BYTES], q[5];
    size_t rl = tsdb_annotation_row(t, tsuid, tsuid_len, start_ms, row, err);
    if (!rl)
        return err->code;
    int64_t base = rowkey_base_hour_s(start_ms / 1000);
    size_t ql = dpcodec_annotation_qualifier(base, start_ms, start_ms % 1000 != 0, q);
    struct wc_mutation m = {WC_OP_PUT, wc_bytes_str(TSDB_DATA_FAMILY), wc_bytes_of(q, ql),
                            wc_bytes_of(json, json_len), WC_TS_LATEST};
    struct wc_row_mutation rm = {wc_bytes_of(row, rl), &m, 1};
    return wc_mutate_row(t->data, &rm, WC_DURABILITY_USE_DEFAULT, err);
}

/* Reads the annotation cell of a series (or the global row) starting at start_ms: fills the row
 * key and qualifier (row: ROWKEY_MAX_BYTES, q: 5 bytes) and *r holding exactly that cell, which
 * the caller releases. CT_NOTFOUND (with OpenTSDB's message) when there is none. */
static int tsdb_annotation_find(struct tsdb *t, const uint8_t *tsuid, size_t tsuid_len,
                                int64_t start_ms, uint8_t *row, size_t *rl, uint8_t *q, size_t *ql,
                                struct wc_result *r, struct ct_err *err)
{
    *rl = tsdb_annotation_row(t, tsuid, tsuid_len, start_ms, row, err);
    if (!*rl)
        return err->code;
    int64_t base = rowkey_base_hour_s(start_ms / 1000);
    *ql = dpcodec_annotation_qualifier(base, start_ms, start_ms % 1000 != 0, q);
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_column col = {wc_bytes_str(TSDB_DATA_FAMILY), wc_bytes_of(q, *ql), true};
    o.columns = &col;
    o.ncolumns = 1;
    int rc = wc_get(t->data, wc_bytes_of(row, *rl), &o, r, err);
    if (rc != CT_OK)
        return rc;
    if (r->row.ncells == 0) {
        wc_result_release(r);
        return ct_err_set(err, CT_NOTFOUND, "Unable to locate annotation in storage");
    }
    return CT_OK;
}

int tsdb_annotation_get(struct tsdb *t, const uint8_t *tsuid, size_t tsuid_len, int64_t start_ms,
                        char **json, size_t *json_len, struct ct_err *err)
{
    uint8_t row[ROWKEY_MAX_BYTES], q[5];
    size_t rl, ql;
    struct wc_result r;
    int rc = tsdb_annotation_find(t, tsuid, tsuid_len, start_ms, row, &rl, q, &ql, &r, err);
    if (rc != CT_OK)
        return rc;
    const struct wc_bytes *v = &r.row.cells[0].value;
    char *s = malloc(v->len + 1);
    if (!s) {
        wc_result_release(&r);
        return ct_err_set(err, CT_ENOMEM, "out of memory for an annotation");
    }
    memcpy(s, v->data, v->len);
    s[v->len] = 0;
    *json = s;
    *json_len = v->len;
    wc_result_release(&r);
    return CT_OK;
}

int tsdb_annotation_delete(struct tsdb *t, const uint8_t *tsuid, size_t tsuid_len, int64_t start_ms,
                           struct ct_err *err)
{
    uint8_t row[ROWKEY_MAX_BYTES], q[5];
    size_t rl, ql;
    struct wc_result r;
    int rc = tsdb_annotation_find(t, tsuid, tsuid_len, start_ms, row, &rl, q, &ql, &r, err);
    if (rc != CT_OK)
        return rc;
    /* delete at the stored cell's timestamp, not "now": a put right after the delete (same
     * millisecond) must not be masked (HBase semantics) */
    int64_t ts = r.row.cells[0].ts_ms;
    wc_result_release(&r);
    struct wc_mutation m = {
        WC_OP_DELETE_COLUMN, wc_bytes_str(TSDB_DATA_FAMILY), wc_bytes_of(q, ql), {0}, ts};
    struct wc_row_mutation rm = {wc_bytes_of(row, rl), &m, 1};
    return wc_mutate_row(t->data, &rm, WC_DURABILITY_USE_DEFAULT, err);
}

struct tsdb_ann_filter {
    const uint8_t *tags; /* the series' tag bytes (after the metric) */
    size_t tags_len;
    size_t head; /* salt + metric + timestamp */
};

static enum wc_row_decision tsdb_ann_row(void *arg, const uint8_t *row, size_t len)
{
    const struct tsdb_ann_filter *f = arg;
    if (len != f->head + f->tags_len ||
        (f->tags_len && memcmp(row + f->head, f->tags, f->tags_len)))
        return WC_ROW_SKIP;
    return WC_ROW_INCLUDE;
}

int tsdb_annotation_scan(struct tsdb *t, const uint8_t *tsuid, size_t tsuid_len, int64_t start_ms,
                         int64_t end_ms, tsdb_annotation_fn fn, void *arg, struct ct_err *err)
{
    const struct rowkey_layout *l = &t->c.layout;
    uint8_t first[ROWKEY_MAX_BYTES], last[ROWKEY_MAX_BYTES];
    size_t fl = tsdb_annotation_row(t, tsuid, tsuid_len, start_ms, first, err);
    if (!fl)
        return err->code;
    size_t ll = tsdb_annotation_row(t, tsuid, tsuid_len, end_ms, last, err);
    if (!ll)
        return err->code;
    size_t head = l->salt_width + l->metric_width + ROWKEY_TIMESTAMP_BYTES;
    struct tsdb_ann_filter f = {first + head, fl - head, head};
    /* stop row: the start key of the hour after end's */
    uint8_t stop[ROWKEY_MAX_BYTES];
    memcpy(stop, last, head);
    int64_t next = rowkey_base_hour_s(end_ms / 1000) + ROWKEY_HOUR_S;
    for (int i = 0; i < 4; i++)
        stop[head - 1 - i] = (uint8_t)(next >> (8 * i));
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.start_row = wc_bytes_of(first, head);
    o.stop_row = wc_bytes_of(stop, head);
    struct wc_column col = {wc_bytes_str(TSDB_DATA_FAMILY), {0}, false};
    o.columns = &col;
    o.ncolumns = 1;
    uint8_t pfx = DPCODEC_ANNOTATION_PREFIX;
    o.qualifier_prefix = wc_bytes_of(&pfx, 1);
    o.row_filter = tsdb_ann_row;
    o.row_filter_arg = &f;
    struct wc_scanner *sc;
    int rc = wc_scanner_open(t->data, &o, &sc, err);
    if (rc != CT_OK)
        return rc;
    struct wc_row row;
    bool stopped = false;
    while (!stopped && (rc = wc_scanner_next(sc, &row, err)) == CT_OK) {
        struct rowkey_parts p;
        if (rowkey_decode(l, row.key.data, row.key.len, &p, err) != CT_OK) {
            ct_err_clear(err);
            continue;
        }
        for (size_t i = 0; i < row.ncells; i++) {
            const struct wc_cell *c = &row.cells[i];
            int64_t s_ms;
            if (dpcodec_qualifier_kind(c->qualifier.data, c->qualifier.len) !=
                    DPCODEC_Q_ANNOTATION ||
                dpcodec_annotation_time(p.base_s, c->qualifier.data, c->qualifier.len, &s_ms,
                                        err) != CT_OK) {
                ct_err_clear(err);
                continue;
            }
            if (s_ms < start_ms || s_ms > end_ms)
                continue;
            if (fn(arg, tsuid, tsuid_len, s_ms, (const char *)c->value.data, c->value.len)) {
                stopped = true;
                break;
            }
        }
    }
    wc_scanner_close(sc);
    return (rc == CT_NOTFOUND || stopped) ? CT_OK : rc;
}
