/* wc.c - dispatch of storage/wc.h to a backend, and the backend-neutral parts of the interface:
 * defaults, descriptor and name checks, split-key checks, the cell comparator, and wc_get() built
 * on a one-row scan.
 *
 * Invariants: (1) every call that reaches a backend has passed the neutral checks here (non-NULL
 * arguments, valid names and descriptors, sorted and unique split keys); (2) table names reach
 * backends in the full "ns:qual" form. */
#include "storage/wc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/clock.h"
#include "storage/wc_backend.h"

struct wc_bytes wc_bytes_str(const char *s)
{
    return wc_bytes_of(s, strlen(s));
}

void wc_options_init(struct wc_options *o)
{
    memset(o, 0, sizeof(*o));
    o->backend = WC_BACKEND_EMBEDDED;
    o->data_dir = "data";
    o->create_if_missing = true;
    o->block_cache_bytes = 64u << 20;
    o->memstore_flush_bytes = 16u << 20;
    o->wal_segment_bytes = 64u << 20;
    o->region_split_bytes = 1ull << 30;
    o->background_threads = 2;
    o->major_compaction_period_ms = 7LL * 24 * 3600 * 1000;
    o->bt_deadline_ms = 30000;
}

int wc_open(const struct wc_options *o, struct wc_store **out, struct ct_err *err)
{
    switch (o->backend) {
    case WC_BACKEND_EMBEDDED:
        return engine_store_open(o, out, err);
    case WC_BACKEND_BIGTABLE:
#ifdef CTSDB_WITH_BIGTABLE
        return bigtable_store_open(o, out, err);
#else
        return ct_err_set(err, CT_EUNSUPPORTED,
                          "this build has no bigtable backend (rebuild with BIGTABLE=1)");
#endif
    }
    return ct_err_set(err, CT_EINVAL, "unknown storage backend %d", (int)o->backend);
}

void wc_close(struct wc_store *s)
{
    if (s)
        s->ops->close(s);
}

int wc_background_error(struct wc_store *s, struct ct_err *err)
{
    return s->ops->background_error(s, err);
}

void wc_interrupt(struct wc_store *s)
{
    if (s && s->ops->interrupt)
        s->ops->interrupt(s);
}

/* ---- names ---------------------------------------------------------------------------- */

static int wc_check_ns_name(const char *ns, struct ct_err *err)
{
    if (!*ns)
        return ct_err_set(err, CT_EINVAL, "empty namespace name");
    for (const char *p = ns; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_')
            return ct_err_set(err, CT_EINVAL,
                              "illegal character '%c' in namespace name '%s': only letters, "
                              "digits and '_' are allowed",
                              *p, ns);
    return CT_OK;
}

int wc_table_name_parse(const char *name, char *ns, size_t ns_size, char *qual, size_t qual_size,
                        struct ct_err *err)
{
    const char *colon = strchr(name, ':');
    const char *q = colon ? colon + 1 : name;
    size_t nslen = colon ? (size_t)(colon - name) : strlen("default");
    const char *nsp = colon ? name : "default";
    if (nslen + 1 > ns_size || strlen(q) + 1 > qual_size || strlen(name) + 1 > WC_MAX_TABLE_NAME)
        return ct_err_set(err, CT_EINVAL, "table name too long: '%s'", name);
    memcpy(ns, nsp, nslen);
    ns[nslen] = '\0';
    strcpy(qual, q);
    if (wc_check_ns_name(ns, err) != CT_OK)
        return ct_err_prefix(err, "bad table name '%s'", name);
    if (!*qual)
        return ct_err_set(err, CT_EINVAL, "bad table name '%s': empty table qualifier", name);
    if (qual[0] == '.' || qual[0] == '-')
        return ct_err_set(err, CT_EINVAL,
                          "bad table name '%s': a table qualifier must not start with '%c'", name,
                          qual[0]);
    for (const char *p = qual; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != '.')
            return ct_err_set(err, CT_EINVAL,
                              "illegal character '%c' in table name '%s': only letters, digits, "
                              "'_', '-' and '.' are allowed",
                              *p, name);
    return CT_OK;
}

/* Normalises a table name to "ns:qual" in full (WC_MAX_TABLE_NAME bytes). */
static int wc_full_name(const char *name, char *full, struct ct_err *err)
{
    char ns[WC_MAX_TABLE_NAME], qual[WC_MAX_TABLE_NAME];
    if (!name)
        return ct_err_set(err, CT_EINVAL, "missing table name");
    int rc = wc_table_name_parse(name, ns, sizeof(ns), qual, sizeof(qual), err);
    if (rc != CT_OK)
        return rc;
    int n = snprintf(full, WC_MAX_TABLE_NAME, "%s:%s", ns, qual);
    if (n < 0 || n >= WC_MAX_TABLE_NAME)
        return ct_err_set(err, CT_EINVAL, "table name too long: '%s'", name);
    return CT_OK;
}

/* ---- namespaces ----------------------------------------------------------------------- */

int wc_namespace_create(struct wc_store *s, const char *ns, struct ct_err *err)
{
    int rc = wc_check_ns_name(ns, err);
    if (rc != CT_OK)
        return rc;
    return s->ops->namespace_create(s, ns, err);
}

int wc_namespace_drop(struct wc_store *s, const char *ns, struct ct_err *err)
{
    if (!strcmp(ns, "default") || !strcmp(ns, "hbase"))
        return ct_err_set(err, CT_EINVAL, "reserved namespace %s cannot be removed", ns);
    return s->ops->namespace_drop(s, ns, err);
}

int wc_namespace_exists(struct wc_store *s, const char *ns, struct ct_err *err)
{
    return s->ops->namespace_exists(s, ns, err);
}

int wc_namespace_list(struct wc_store *s, wc_name_fn fn, void *arg, struct ct_err *err)
{
    return s->ops->namespace_list(s, fn, arg, err);
}

int wc_namespace_create_config(struct wc_store *s, const char *ns, const char *const *kv,
                               size_t npairs, struct ct_err *err)
{
    if (npairs == 0)
        return wc_namespace_create(s, ns, err);
    int rc = wc_check_ns_name(ns, err);
    if (rc != CT_OK)
        return rc;
    for (size_t i = 0; i < npairs; i++) {
        if (!kv[2 * i] || !*kv[2 * i] || !kv[2 * i + 1])
            return ct_err_set(err, CT_EINVAL, "namespace %s: configuration keys must not be empty",
                              ns);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(kv[2 * i], kv[2 * j]))
                return ct_err_set(err, CT_EINVAL, "namespace %s: configuration key %s given twice",
                                  ns, kv[2 * i]);
    }
    if (!s->ops->namespace_create_config)
        return ct_err_set(err, CT_EUNSUPPORTED, "the %s backend keeps no namespace configuration",
                          s->ops->name);
    return s->ops->namespace_create_config(s, ns, kv, npairs, err);
}

int wc_namespace_get_config(struct wc_store *s, const char *ns, char ***kv, size_t *npairs,
                            struct ct_err *err)
{
    *kv = NULL;
    *npairs = 0;
    if (!s->ops->namespace_get_config)
        return s->ops->namespace_exists(s, ns, err);
    return s->ops->namespace_get_config(s, ns, kv, npairs, err);
}

void wc_namespace_config_free(char **kv, size_t npairs)
{
    if (!kv)
        return;
    for (size_t i = 0; i < 2 * npairs; i++)
        free(kv[i]);
    free(kv);
}

/* ---- descriptors ---------------------------------------------------------------------- */

void wc_family_desc_init(struct wc_family_desc *f, const char *name)
{
    memset(f, 0, sizeof(*f));
    snprintf(f->name, sizeof(f->name), "%s", name);
    f->versions = 1;
    f->min_versions = 0;
    f->ttl_s = WC_TTL_FOREVER;
    f->keep_deleted = WC_KEEP_DELETED_FALSE;
    f->bloom = WC_BLOOM_ROW;
    f->blocksize = 65536;
    f->blockcache = true;
    f->in_memory = false;
    f->compression = WC_COMPRESSION_NONE;
    f->encoding = WC_ENCODING_NONE;
}

int wc_family_desc_check(const struct wc_family_desc *f, struct ct_err *err)
{
    size_t len = strlen(f->name);
    if (len == 0)
        return ct_err_set(err, CT_EINVAL, "column family name must not be empty");
    if (f->name[0] == '.')
        return ct_err_set(err, CT_EINVAL, "column family name '%s' must not start with '.'",
                          f->name);
    for (const char *p = f->name; *p; p++)
        if (*p == ':' || *p == '\\' || *p == '/' || !isprint((unsigned char)*p))
            return ct_err_set(err, CT_EINVAL,
                              "illegal character in column family name '%s': no ':', '\\', '/' "
                              "or non-printable characters",
                              f->name);
    if (f->versions < 1)
        return ct_err_set(err, CT_EINVAL, "family %s: VERSIONS must be >= 1", f->name);
    if (f->min_versions > f->versions)
        return ct_err_set(err, CT_EINVAL, "family %s: MIN_VERSIONS (%u) must be <= VERSIONS (%u)",
                          f->name, f->min_versions, f->versions);
    if (f->ttl_s <= 0 || f->ttl_s > WC_TTL_FOREVER)
        return ct_err_set(err, CT_EINVAL, "family %s: TTL must be > 0 seconds", f->name);
    if (f->blocksize < 1024 || f->blocksize > 16777216)
        return ct_err_set(err, CT_EINVAL,
                          "family %s: BLOCKSIZE %u out of range (1024 to 16777216 bytes)", f->name,
                          f->blocksize);
    if ((unsigned)f->bloom > WC_BLOOM_ROWCOL || (unsigned)f->compression > WC_COMPRESSION_GZ ||
        (unsigned)f->encoding > WC_ENCODING_ROW_INDEX_V1 ||
        (unsigned)f->keep_deleted > WC_KEEP_DELETED_TTL)
        return ct_err_set(err, CT_EINVAL, "family %s: bad enumeration value", f->name);
    return CT_OK;
}

void wc_table_desc_init(struct wc_table_desc *d, const char *name)
{
    memset(d, 0, sizeof(*d));
    snprintf(d->name, sizeof(d->name), "%s", name);
    d->durability = WC_DURABILITY_USE_DEFAULT;
    d->compaction_enabled = true;
    d->enabled = true;
}

void wc_table_desc_free(struct wc_table_desc *d)
{
    if (!d)
        return;
    free(d->families);
    free(d);
}

static int wc_check_desc(const struct wc_table_desc *d, struct wc_table_desc *norm,
                         struct ct_err *err)
{
    *norm = *d;
    int rc = wc_full_name(d->name, norm->name, err);
    if (rc != CT_OK)
        return rc;
    if (d->nfamilies == 0)
        return ct_err_set(err, CT_EINVAL, "table %s must have at least one column family",
                          norm->name);
    for (size_t i = 0; i < d->nfamilies; i++) {
        if ((rc = wc_family_desc_check(&d->families[i], err)) != CT_OK)
            return rc;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(d->families[i].name, d->families[j].name))
                return ct_err_set(err, CT_EINVAL, "column family %s given twice",
                                  d->families[i].name);
    }
    if ((unsigned)d->durability > WC_DURABILITY_FSYNC_WAL)
        return ct_err_set(err, CT_EINVAL, "bad DURABILITY value");
    return CT_OK;
}

static int wc_bytes_cmp(const void *a, const void *b)
{
    const struct wc_bytes *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = n ? memcmp(x->data, y->data, n) : 0;
    if (c)
        return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

/* ---- table administration ------------------------------------------------------------- */

int wc_table_create(struct wc_store *s, const struct wc_table_desc *d,
                    const struct wc_bytes *splits, size_t nsplits, struct ct_err *err)
{
    struct wc_table_desc norm;
    int rc = wc_check_desc(d, &norm, err);
    if (rc != CT_OK)
        return rc;
    if (!strncmp(norm.name, "hbase:", 6))
        return ct_err_set(err, CT_EINVAL, "cannot create table %s in the system namespace",
                          norm.name);
    struct wc_bytes *sorted = NULL;
    if (nsplits) {
        sorted = malloc(nsplits * sizeof(*sorted));
        if (!sorted)
            return ct_err_set(err, CT_ENOMEM, "out of memory sorting split keys");
        memcpy(sorted, splits, nsplits * sizeof(*sorted));
        qsort(sorted, nsplits, sizeof(*sorted), wc_bytes_cmp);
        for (size_t i = 0; i < nsplits; i++) {
            if (sorted[i].len == 0) {
                free(sorted);
                return ct_err_set(err, CT_EINVAL, "split keys must not be empty");
            }
            if (i && !wc_bytes_cmp(&sorted[i - 1], &sorted[i])) {
                free(sorted);
                return ct_err_set(err, CT_EINVAL, "split keys must be unique");
            }
        }
    }
    rc = s->ops->table_create(s, &norm, sorted, nsplits, err);
    free(sorted);
    return rc;
}

int wc_table_alter(struct wc_store *s, const struct wc_table_desc *d, struct ct_err *err)
{
    struct wc_table_desc norm;
    int rc = wc_check_desc(d, &norm, err);
    if (rc != CT_OK)
        return rc;
    if (!strncmp(norm.name, "hbase:", 6))
        return ct_err_set(err, CT_EINVAL, "cannot alter system table %s", norm.name);
    return s->ops->table_alter(s, &norm, err);
}

/* Expands to a function that normalises the name and calls the backend's op. */
#define WC_NAMED_OP(fn, op)                                                                        \
    int fn(struct wc_store *s, const char *name, struct ct_err *err)                               \
    {                                                                                              \
        char full[WC_MAX_TABLE_NAME];                                                              \
        int rc = wc_full_name(name, full, err);                                                    \
        return rc != CT_OK ? rc : s->ops->op(s, full, err);                                        \
    }

WC_NAMED_OP(wc_table_exists, table_exists)
WC_NAMED_OP(wc_table_enable, table_enable)
WC_NAMED_OP(wc_table_disable, table_disable)
WC_NAMED_OP(wc_table_flush, table_flush)

int wc_table_drop(struct wc_store *s, const char *name, struct ct_err *err)
{
    char full[WC_MAX_TABLE_NAME];
    int rc = wc_full_name(name, full, err);
    if (rc != CT_OK)
        return rc;
    if (!strncmp(full, "hbase:", 6))
        return ct_err_set(err, CT_EINVAL, "cannot drop system table %s", full);
    return s->ops->table_drop(s, full, err);
}

int wc_table_describe(struct wc_store *s, const char *name, struct wc_table_desc **out,
                      struct ct_err *err)
{
    char full[WC_MAX_TABLE_NAME];
    int rc = wc_full_name(name, full, err);
    return rc != CT_OK ? rc : s->ops->table_describe(s, full, out, err);
}

int wc_table_list(struct wc_store *s, wc_name_fn fn, void *arg, struct ct_err *err)
{
    return s->ops->table_list(s, fn, arg, err);
}

int wc_table_truncate(struct wc_store *s, const char *name, bool preserve_splits,
                      struct ct_err *err)
{
    char full[WC_MAX_TABLE_NAME];
    int rc = wc_full_name(name, full, err);
    return rc != CT_OK ? rc : s->ops->table_truncate(s, full, preserve_splits, err);
}

int wc_table_compact(struct wc_store *s, const char *name, const char *family, bool major,
                     struct ct_err *err)
{
    char full[WC_MAX_TABLE_NAME];
    int rc = wc_full_name(name, full, err);
    return rc != CT_OK ? rc : s->ops->table_compact(s, full, family, major, err);
}

int wc_table_split(struct wc_store *s, const char *name, const struct wc_bytes *key,
                   struct ct_err *err)
{
    char full[WC_MAX_TABLE_NAME];
    int rc = wc_full_name(name, full, err);
    if (rc != CT_OK)
        return rc;
    if (key && key->len == 0)
        return ct_err_set(err, CT_EINVAL, "split key must not be empty");
    return s->ops->table_split(s, full, key, err);
}

int wc_table_regions(struct wc_store *s, const char *name, struct wc_region_info **out, size_t *n,
                     struct ct_err *err)
{
    char full[WC_MAX_TABLE_NAME];
    int rc = wc_full_name(name, full, err);
    return rc != CT_OK ? rc : s->ops->table_regions(s, full, out, n, err);
}

void wc_region_info_free(struct wc_region_info *r, size_t n)
{
    if (!r)
        return;
    for (size_t i = 0; i < n; i++) {
        free(r[i].start_key);
        free(r[i].end_key);
    }
    free(r);
}

int wc_store_stats(struct wc_store *s, struct wc_store_stats *out, struct ct_err *err)
{
    memset(out, 0, sizeof(*out));
    return s->ops->store_stats(s, out, err);
}

void wc_split_keys_free(struct wc_bytes *keys, size_t n)
{
    if (!keys)
        return;
    for (size_t i = 0; i < n; i++)
        free((void *)keys[i].data);
    free(keys);
}

/* ---- data ----------------------------------------------------------------------------- */

int wc_table_open(struct wc_store *s, const char *name, struct wc_table **out, struct ct_err *err)
{
    char full[WC_MAX_TABLE_NAME];
    int rc = wc_full_name(name, full, err);
    return rc != CT_OK ? rc : s->ops->table_open(s, full, out, err);
}

void wc_table_close(struct wc_table *t)
{
    if (t)
        t->ops->table_close(t);
}

static int wc_check_row_mutation(const struct wc_row_mutation *rm, struct ct_err *err)
{
    if (rm->row.len == 0 || rm->row.len > WC_MAX_ROW_BYTES)
        return ct_err_set(err, CT_EINVAL, "row key length %zu out of range (1 to %d bytes)",
                          rm->row.len, WC_MAX_ROW_BYTES);
    if (rm->n == 0)
        return ct_err_set(err, CT_EINVAL, "row mutation without changes");
    for (size_t i = 0; i < rm->n; i++) {
        const struct wc_mutation *m = &rm->mutations[i];
        if ((unsigned)m->op > WC_OP_DELETE_ROW)
            return ct_err_set(err, CT_EINVAL, "bad mutation op %d", (int)m->op);
        if (m->op != WC_OP_DELETE_ROW && m->family.len == 0)
            return ct_err_set(err, CT_EINVAL, "mutation without a column family");
        if (m->ts_ms < 0)
            return ct_err_set(err, CT_EINVAL, "negative timestamp %lld", (long long)m->ts_ms);
    }
    return CT_OK;
}

int wc_mutate_row(struct wc_table *t, const struct wc_row_mutation *rm, enum wc_durability d,
                  struct ct_err *err)
{
    return wc_mutate_batch(t, rm, 1, d, err);
}

int wc_mutate_batch(struct wc_table *t, const struct wc_row_mutation *rows, size_t n,
                    enum wc_durability d, struct ct_err *err)
{
    for (size_t i = 0; i < n; i++) {
        int rc = wc_check_row_mutation(&rows[i], err);
        if (rc != CT_OK)
            return rc;
    }
    return n ? t->ops->mutate_batch(t, rows, n, d, err) : CT_OK;
}

int wc_increment(struct wc_table *t, struct wc_bytes row, struct wc_bytes family,
                 struct wc_bytes qualifier, int64_t delta, enum wc_durability d, int64_t *out,
                 struct ct_err *err)
{
    if (row.len == 0 || row.len > WC_MAX_ROW_BYTES || family.len == 0)
        return ct_err_set(err, CT_EINVAL, "increment needs a row and a family");
    return t->ops->increment(t, row, family, qualifier, delta, d, out, err);
}

int wc_check_and_mutate(struct wc_table *t, struct wc_bytes row, struct wc_bytes family,
                        struct wc_bytes qualifier, const struct wc_bytes *expected,
                        const struct wc_row_mutation *rm, enum wc_durability d, bool *applied,
                        struct ct_err *err)
{
    int rc = wc_check_row_mutation(rm, err);
    if (rc != CT_OK)
        return rc;
    if (wc_bytes_cmp(&row, &rm->row) != 0)
        return ct_err_set(err, CT_EINVAL, "check-and-mutate must change the checked row");
    return t->ops->check_and_mutate(t, row, family, qualifier, expected, rm, d, applied, err);
}

void wc_scan_options_init(struct wc_scan_options *o)
{
    memset(o, 0, sizeof(*o));
    o->tmin_ms = 0;
    o->tmax_ms = WC_TS_LATEST;
    o->max_versions = 1;
    o->qualifier_min_inclusive = true;
    o->qualifier_max_inclusive = true;
}

static int wc_check_scan_options(const struct wc_scan_options *o, struct ct_err *err)
{
    if (o->tmin_ms < 0 || o->tmax_ms < o->tmin_ms)
        return ct_err_set(err, CT_EINVAL, "bad time range [%lld, %lld)", (long long)o->tmin_ms,
                          (long long)o->tmax_ms);
    if (o->max_versions == 0)
        return ct_err_set(err, CT_EINVAL, "max versions must be >= 1");
    return CT_OK;
}

/* The multi-range rules of wc_scan_options.ranges (see wc.h). */
static int wc_check_scan_ranges(const struct wc_scan_options *o, struct ct_err *err)
{
    if (!o->nranges)
        return CT_OK;
    if (!o->ranges)
        return ct_err_set(err, CT_EINVAL, "%zu row ranges given without an array", o->nranges);
    if (o->start_row.len || o->stop_row.len || o->row_prefix.len)
        return ct_err_set(err, CT_EINVAL,
                          "row ranges cannot be combined with a start row, stop row or row prefix");
    for (size_t i = 0; i < o->nranges; i++) {
        const struct wc_row_range *r = &o->ranges[i];
        if (r->start.len > WC_MAX_ROW_BYTES + 1 || r->stop.len > WC_MAX_ROW_BYTES + 1)
            return ct_err_set(err, CT_EINVAL, "row range %zu: key longer than %d bytes", i,
                              WC_MAX_ROW_BYTES + 1);
        if (r->stop.len && wc_bytes_cmp(&r->start, &r->stop) > 0)
            return ct_err_set(err, CT_EINVAL, "row range %zu: start above stop", i);
        if (i + 1 == o->nranges)
            break;
        if (!r->stop.len)
            return ct_err_set(err, CT_EINVAL,
                              "row range %zu: only the last range may run to the end of the table",
                              i);
        if (wc_bytes_cmp(&r->stop, &o->ranges[i + 1].start) > 0)
            return ct_err_set(err, CT_EINVAL,
                              "row ranges %zu and %zu overlap or are out of ascending order", i,
                              i + 1);
    }
    return CT_OK;
}

int wc_scanner_open(struct wc_table *t, const struct wc_scan_options *o, struct wc_scanner **out,
                    struct ct_err *err)
{
    int rc = wc_check_scan_options(o, err);
    if (rc == CT_OK)
        rc = wc_check_scan_ranges(o, err);
    return rc != CT_OK ? rc : t->ops->scanner_open(t, o, out, err);
}

int wc_scanner_next(struct wc_scanner *sc, struct wc_row *row, struct ct_err *err)
{
    return sc->ops->scanner_next(sc, row, err);
}

void wc_scanner_close(struct wc_scanner *sc)
{
    if (sc)
        sc->ops->scanner_close(sc);
}

int wc_get(struct wc_table *t, struct wc_bytes row, const struct wc_scan_options *o,
           struct wc_result *out, struct ct_err *err)
{
    memset(out, 0, sizeof(*out));
    if (row.len == 0 || row.len > WC_MAX_ROW_BYTES)
        return ct_err_set(err, CT_EINVAL, "row key length %zu out of range", row.len);
    /* the backend's point read if it has one (a row or cell filter needs the scanner's
     * protocol) */
    if (t->ops->get && !o->row_filter && !o->cell_filter) {
        int rc = wc_check_scan_options(o, err);
        return rc != CT_OK ? rc : t->ops->get(t, row, o, out, err);
    }
    uint8_t stop[WC_MAX_ROW_BYTES + 1];
    memcpy(stop, row.data, row.len);
    stop[row.len] = 0; /* the smallest key after `row` */
    struct wc_scan_options so = *o;
    so.start_row = row;
    so.stop_row = wc_bytes_of(stop, row.len + 1);
    so.row_prefix = wc_bytes_of(NULL, 0);
    so.ranges = NULL;
    so.nranges = 0;
    so.reversed = false;
    so.limit_rows = 0;
    so.batch_cells = 0;
    struct wc_scanner *sc;
    int rc = wc_scanner_open(t, &so, &sc, err);
    if (rc != CT_OK)
        return rc;
    struct wc_row r;
    rc = wc_scanner_next(sc, &r, err);
    if (rc == CT_NOTFOUND) {
        wc_scanner_close(sc);
        return CT_OK;
    }
    if (rc != CT_OK) {
        wc_scanner_close(sc);
        return rc;
    }
    /* One block: the cell array, then the row key, then each cell's bytes. */
    size_t bytes = r.ncells * sizeof(struct wc_cell) + r.key.len;
    for (size_t i = 0; i < r.ncells; i++)
        bytes += r.cells[i].family.len + r.cells[i].qualifier.len + r.cells[i].value.len;
    uint8_t *mem = malloc(bytes ? bytes : 1);
    if (!mem) {
        wc_scanner_close(sc);
        return ct_err_set(err, CT_ENOMEM, "out of memory copying a row of %zu cells", r.ncells);
    }
    struct wc_cell *cells = (struct wc_cell *)mem;
    uint8_t *p = mem + r.ncells * sizeof(struct wc_cell);
    memcpy(p, r.key.data, r.key.len);
    struct wc_bytes key = wc_bytes_of(p, r.key.len);
    p += r.key.len;
    for (size_t i = 0; i < r.ncells; i++) {
        const struct wc_cell *c = &r.cells[i];
        cells[i] = *c;
        cells[i].row = key;
        const struct wc_bytes *src[3] = {&c->family, &c->qualifier, &c->value};
        struct wc_bytes *dst[3] = {&cells[i].family, &cells[i].qualifier, &cells[i].value};
        for (int k = 0; k < 3; k++) {
            if (src[k]->len)
                memcpy(p, src[k]->data, src[k]->len);
            *dst[k] = wc_bytes_of(p, src[k]->len);
            p += src[k]->len;
        }
    }
    wc_scanner_close(sc);
    out->row.key = key;
    out->row.cells = cells;
    out->row.ncells = r.ncells;
    out->mem = mem;
    return CT_OK;
}

void wc_result_release(struct wc_result *r)
{
    if (!r)
        return;
    free(r->mem);
    memset(r, 0, sizeof(*r));
}

int wc_cell_sink_emit(struct wc_cell_sink *sink, const struct wc_cell *c, struct ct_err *err)
{
    return sink->emit(sink, c, err);
}

int wc_set_compact_hook(struct wc_store *s, const char *table, const char *family,
                        wc_compact_hook_fn fn, void *arg, struct ct_err *err)
{
    char full[WC_MAX_TABLE_NAME];
    int rc = wc_full_name(table, full, err);
    if (rc != CT_OK)
        return rc;
    if (!s->ops->set_compact_hook)
        return ct_err_set(err, CT_EUNSUPPORTED, "the %s backend has no compaction hooks",
                          s->ops->name);
    return s->ops->set_compact_hook(s, full, family, fn, arg, err);
}

/* ---- request deadline ------------------------------------------------------------------ */

static _Thread_local uint64_t wc_deadline_ns;

uint64_t wc_request_deadline_set(uint64_t abs_mono_ns)
{
    uint64_t prev = wc_deadline_ns;
    wc_deadline_ns = abs_mono_ns;
    return prev;
}

uint64_t wc_request_deadline_begin(int64_t ms)
{
    uint64_t prev = wc_deadline_ns;
    uint64_t d = clock_mono_ns() + (uint64_t)(ms > 0 ? ms : 1) * 1000000u;
    if (!prev || d < prev)
        wc_deadline_ns = d;
    return prev;
}

uint64_t wc_request_deadline(void)
{
    return wc_deadline_ns;
}

int wc_cell_compare(const struct wc_cell *a, const struct wc_cell *b)
{
    int c = wc_bytes_cmp(&a->row, &b->row);
    if (c)
        return c;
    if ((c = wc_bytes_cmp(&a->family, &b->family)))
        return c;
    if ((c = wc_bytes_cmp(&a->qualifier, &b->qualifier)))
        return c;
    if (a->ts_ms != b->ts_ms)
        return a->ts_ms > b->ts_ms ? -1 : 1;
    if (a->type != b->type)
        return a->type > b->type ? -1 : 1;
    return 0;
}

/* ---- snapshots ---------------------------------------------------------------------------- */

int wc_snapshot_name_check(const char *name, struct ct_err *err)
{
    if (!name || !*name)
        return ct_err_set(err, CT_EINVAL, "snapshot name must not be empty");
    size_t n = strlen(name);
    if (n > WC_MAX_SNAPSHOT_NAME)
        return ct_err_set(err, CT_EINVAL, "snapshot name '%.40s...' is longer than %d characters",
                          name, WC_MAX_SNAPSHOT_NAME);
    if (name[0] == '.' || name[0] == '-')
        return ct_err_set(err, CT_EINVAL, "snapshot name '%s' must not start with '%c'", name,
                          name[0]);
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return ct_err_set(err, CT_EINVAL,
                              "illegal character in snapshot name '%s' at %zu (allowed: letters, "
                              "digits, '_', '-', '.')",
                              name, i);
    }
    return CT_OK;
}

static int wc_snapshot_unsupported(const struct wc_store *s, struct ct_err *err)
{
    const char *alt = s->ops->snapshot_alternative;
    return ct_err_set(err, CT_EUNSUPPORTED, "snapshots are not supported on the %s backend%s%s%s",
                      s->ops->name, alt ? " (" : "", alt ? alt : "", alt ? ")" : "");
}

int wc_snapshot_create(struct wc_store *s, const char *name, const char *table, struct ct_err *err)
{
    char full[WC_MAX_TABLE_NAME];
    int rc = wc_snapshot_name_check(name, err);
    if (rc == CT_OK && table)
        rc = wc_full_name(table, full, err);
    if (rc != CT_OK)
        return rc;
    if (!s->ops->snapshot_create)
        return wc_snapshot_unsupported(s, err);
    return s->ops->snapshot_create(s, name, table ? full : NULL, err);
}

int wc_snapshot_list(struct wc_store *s, wc_snapshot_fn fn, void *arg, struct ct_err *err)
{
    if (!s->ops->snapshot_list)
        return wc_snapshot_unsupported(s, err);
    return s->ops->snapshot_list(s, fn, arg, err);
}

int wc_snapshot_restore(struct wc_store *s, const char *name, struct ct_err *err)
{
    int rc = wc_snapshot_name_check(name, err);
    if (rc != CT_OK)
        return rc;
    if (!s->ops->snapshot_restore)
        return wc_snapshot_unsupported(s, err);
    return s->ops->snapshot_restore(s, name, err);
}

int wc_snapshot_clone(struct wc_store *s, const char *name, const char *table, struct ct_err *err)
{
    char full[WC_MAX_TABLE_NAME];
    int rc = wc_snapshot_name_check(name, err);
    if (rc == CT_OK)
        rc = wc_full_name(table, full, err);
    if (rc != CT_OK)
        return rc;
    if (!strncmp(full, "hbase:", 6))
        return ct_err_set(err, CT_EINVAL, "cannot clone into the hbase namespace: %s", full);
    if (!s->ops->snapshot_clone)
        return wc_snapshot_unsupported(s, err);
    return s->ops->snapshot_clone(s, name, full, err);
}

int wc_snapshot_delete(struct wc_store *s, const char *name, struct ct_err *err)
{
    int rc = wc_snapshot_name_check(name, err);
    if (rc != CT_OK)
        return rc;
    if (!s->ops->snapshot_delete)
        return wc_snapshot_unsupported(s, err);
    return s->ops->snapshot_delete(s, name, err);
}
