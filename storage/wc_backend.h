/* wc_backend.h - what a wide-column backend provides to wc.c. Seen only by wc.c and the backends
 * (storage/engine/, storage/bigtable/); everything else uses storage/wc.h.
 *
 * A backend allocates its own store, table and scanner structs with the matching wc.h struct as
 * FIRST member (so a `struct wc_store *` can be cast to the backend's type) and sets `ops`.
 * wc.c checks arguments that are backend-neutral (NULLs, name syntax, descriptor ranges,
 * split-key rules) before calling through, so backends may assume them. */
#ifndef CT_WC_BACKEND_H
#define CT_WC_BACKEND_H

#include "storage/wc.h"

struct wc_backend_ops;

struct wc_store {
    const struct wc_backend_ops *ops;
};
struct wc_table {
    const struct wc_backend_ops *ops;
    struct wc_store *store;
};
struct wc_scanner {
    const struct wc_backend_ops *ops;
};
struct wc_cell_sink {
    int (*emit)(struct wc_cell_sink *sink, const struct wc_cell *c, struct ct_err *err);
};

struct wc_backend_ops {
    const char *name; /* "embedded", "bigtable" */
    void (*close)(struct wc_store *s);
    int (*background_error)(struct wc_store *s, struct ct_err *err);
    void (*interrupt)(struct wc_store *s); /* NULL: nothing to interrupt */

    int (*namespace_create)(struct wc_store *s, const char *ns, struct ct_err *err);
    int (*namespace_drop)(struct wc_store *s, const char *ns, struct ct_err *err);
    int (*namespace_exists)(struct wc_store *s, const char *ns, struct ct_err *err);
    int (*namespace_list)(struct wc_store *s, wc_name_fn fn, void *arg, struct ct_err *err);
    /* Optional (NULL = the backend keeps no namespace configuration). kv is checked by wc.c. */
    int (*namespace_create_config)(struct wc_store *s, const char *ns, const char *const *kv,
                                   size_t npairs, struct ct_err *err);
    int (*namespace_get_config)(struct wc_store *s, const char *ns, char ***kv, size_t *npairs,
                                struct ct_err *err);

    /* Names passed to table operations are already normalised to "ns:qual". */
    int (*table_create)(struct wc_store *s, const struct wc_table_desc *d,
                        const struct wc_bytes *sorted_splits, size_t nsplits, struct ct_err *err);
    int (*table_alter)(struct wc_store *s, const struct wc_table_desc *d, struct ct_err *err);
    int (*table_describe)(struct wc_store *s, const char *name, struct wc_table_desc **out,
                          struct ct_err *err);
    int (*table_exists)(struct wc_store *s, const char *name, struct ct_err *err);
    int (*table_list)(struct wc_store *s, wc_name_fn fn, void *arg, struct ct_err *err);
    int (*table_enable)(struct wc_store *s, const char *name, struct ct_err *err);
    int (*table_disable)(struct wc_store *s, const char *name, struct ct_err *err);
    int (*table_drop)(struct wc_store *s, const char *name, struct ct_err *err);
    int (*table_truncate)(struct wc_store *s, const char *name, bool preserve_splits,
                          struct ct_err *err);
    int (*table_flush)(struct wc_store *s, const char *name, struct ct_err *err);
    int (*table_compact)(struct wc_store *s, const char *name, const char *family, bool major,
                         struct ct_err *err);
    int (*table_split)(struct wc_store *s, const char *name, const struct wc_bytes *key,
                       struct ct_err *err);
    int (*table_regions)(struct wc_store *s, const char *name, struct wc_region_info **out,
                         size_t *n, struct ct_err *err);
    int (*store_stats)(struct wc_store *s, struct wc_store_stats *out, struct ct_err *err);

    int (*table_open)(struct wc_store *s, const char *name, struct wc_table **out,
                      struct ct_err *err);
    void (*table_close)(struct wc_table *t);
    int (*mutate_batch)(struct wc_table *t, const struct wc_row_mutation *rows, size_t n,
                        enum wc_durability d, struct ct_err *err);
    int (*increment)(struct wc_table *t, struct wc_bytes row, struct wc_bytes family,
                     struct wc_bytes qualifier, int64_t delta, enum wc_durability d, int64_t *out,
                     struct ct_err *err);
    int (*check_and_mutate)(struct wc_table *t, struct wc_bytes row, struct wc_bytes family,
                            struct wc_bytes qualifier, const struct wc_bytes *expected,
                            const struct wc_row_mutation *rm, enum wc_durability d, bool *applied,
                            struct ct_err *err);
    int (*scanner_open)(struct wc_table *t, const struct wc_scan_options *o,
                        struct wc_scanner **out, struct ct_err *err);
    int (*scanner_next)(struct wc_scanner *sc, struct wc_row *row, struct ct_err *err);
    void (*scanner_close)(struct wc_scanner *sc);
    /* Optional (NULL: wc_get() opens a one-row scanner). A point read with wc_get()'s contract
     * and result: out->mem is one malloc'd block holding everything out->row points at (freed
     * by wc_result_release), or zero when the row has no visible cell. Options are already
     * checked; never called with a row filter. */
    int (*get)(struct wc_table *t, struct wc_bytes row, const struct wc_scan_options *o,
               struct wc_result *out, struct ct_err *err);
    /* Optional (NULL = not supported). */
    int (*set_compact_hook)(struct wc_store *s, const char *table, const char *family,
                            wc_compact_hook_fn fn, void *arg, struct ct_err *err);
    /* Optional (NULL = snapshots are not supported). Names are checked by wc.c (snapshot names
     * with wc_snapshot_name_check, tables normalised to "ns:qual"); table NULL = every table. */
    int (*snapshot_create)(struct wc_store *s, const char *name, const char *table,
                           struct ct_err *err);
    int (*snapshot_list)(struct wc_store *s, wc_snapshot_fn fn, void *arg, struct ct_err *err);
    int (*snapshot_restore)(struct wc_store *s, const char *name, struct ct_err *err);
    int (*snapshot_clone)(struct wc_store *s, const char *name, const char *table,
                          struct ct_err *err);
    int (*snapshot_delete)(struct wc_store *s, const char *name, struct ct_err *err);
    /* With the snapshot ops NULL: what to use instead, added to the CT_EUNSUPPORTED message
     * (NULL = nothing). */
    const char *snapshot_alternative;
};

/* Backend entry points, called by wc_open(). Each returns a new store whose first member is a
 * struct wc_store with ops set. */
int engine_store_open(const struct wc_options *o, struct wc_store **out, struct ct_err *err);
#ifdef CTSDB_WITH_BIGTABLE
int bigtable_store_open(const struct wc_options *o, struct wc_store **out, struct ct_err *err);
#endif

#endif
