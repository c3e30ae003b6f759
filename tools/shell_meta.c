/* shell_meta.c - the shell's read-only `hbase:meta`: HBase keeps its catalog as the system table
 * hbase:meta, one row per region ("<table>,<start key>,<region id>" with info:regioninfo,
 * info:server and info:state) and one per table ("<table>" with table:state), and users read it
 * with scan, get and count. ctsdb's catalog is the engine's CATALOG file (or the Bigtable
 * backend's metadata); this builds the same rows, from what wc.h tells of the store (tables,
 * descriptors, regions), into a scratch embedded store in a temporary directory, so that every
 * scan and get option behaves on it exactly as on a real table. Rows sort bytewise, as in any
 * table (HBase's meta comparator orders a table's regions by start key instead, which differs
 * only for start keys with bytes below ',').
 *
 * Invariants: (1) a view is built for one command and removed after it, so it is never stale;
 * (2) nothing is written to the user's store; (3) the scratch directory is removed by
 * shell_meta_free() whatever happened before. */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/shell.h"

struct shell_meta {
    struct wc_store *store;
    struct wc_table *table;
    char *dir;
};

static int meta_rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    if (remove(path) != 0) { /* best effort: a leftover is only a temporary directory */
    }
    return 0;
}

void shell_meta_free(struct shell_meta *m)
{
    if (!m)
        return;
    wc_table_close(m->table);
    wc_close(m->store);
    if (m->dir) {
        if (nftw(m->dir, meta_rm, 16, FTW_DEPTH | FTW_PHYS) != 0) {
            /* best effort, see meta_rm */
        }
        free(m->dir);
    }
    free(m);
}

struct wc_store *shell_meta_store(const struct shell_meta *m)
{
    return m->store;
}

/* A string in memory (open_memstream) holding what the writer wrote. */
struct meta_text {
    char *p;
    size_t n;
    FILE *f;
};

static int meta_text_open(struct meta_text *t, struct ct_err *err)
{
    t->p = NULL;
    t->n = 0;
    t->f = open_memstream(&t->p, &t->n);
    return t->f ? CT_OK : ct_err_set(err, CT_ENOMEM, "out of memory building hbase:meta");
}

static int meta_text_close(struct meta_text *t, struct ct_err *err)
{
    if (fclose(t->f) != 0 || !t->p)
        return ct_err_set(err, CT_ENOMEM, "out of memory building hbase:meta");
    return CT_OK;
}

static int meta_put(struct wc_table *t, struct wc_bytes row, const char *fam, const char *qual,
                    struct wc_bytes value, struct ct_err *err)
{
    struct wc_mutation m = {WC_OP_PUT, wc_bytes_str(fam), wc_bytes_str(qual), value, WC_TS_LATEST};
    struct wc_row_mutation rm = {row, &m, 1};
    return wc_mutate_row(t, &rm, WC_DURABILITY_SKIP_WAL, err);
}

static int meta_name_add(void *arg, const char *name)
{
    struct meta_text *names = arg;
    fputs(name, names->f);
    fputc('\n', names->f);
    return 0;
}

/* The rows of one table: its state, and each region's info. */
static int meta_add_table(struct wc_store *src, struct wc_table *out, const char *full,
                          const char *server, struct ct_err *err)
{
    struct wc_table_desc *d;
    int rc = wc_table_describe(src, full, &d, err);
    if (rc == CT_NOTFOUND)
        return CT_OK; /* dropped meanwhile */
    if (rc != CT_OK)
        return rc;
    bool enabled = d->enabled;
    wc_table_desc_free(d);
    struct wc_region_info *ri;
    size_t n;
    if ((rc = wc_table_regions(src, full, &ri, &n, err)) == CT_NOTFOUND)
        return CT_OK;
    if (rc != CT_OK)
        return rc;
    const char *shown = strncmp(full, "default:", 8) ? full : full + 8;
    const char *state = enabled ? "ENABLED" : "DISABLED";
    rc = meta_put(out, wc_bytes_str(shown), "table", "state", wc_bytes_str(state), err);
    for (size_t i = 0; i < n && rc == CT_OK; i++) {
        struct meta_text row, info;
        if ((rc = meta_text_open(&row, err)) != CT_OK)
            break;
        fprintf(row.f, "%s,", shown);
        fwrite(ri[i].start_key, 1, ri[i].start_len, row.f);
        fprintf(row.f, ",%" PRIu64, ri[i].id);
        if ((rc = meta_text_close(&row, err)) != CT_OK) {
            free(row.p);
            break;
        }
        if ((rc = meta_text_open(&info, err)) == CT_OK) {
            /* raw bytes: the shell prints values in binary-string form, so this shows as
             * HBase's HRegionInfo text does (STARTKEY => '\x00z') */
            fprintf(info.f, "{ENCODED => %" PRIu64 ", NAME => '", ri[i].id);
            fwrite(row.p, 1, row.n, info.f);
            fputs("', STARTKEY => '", info.f);
            fwrite(ri[i].start_key, 1, ri[i].start_len, info.f);
            fputs("', ENDKEY => '", info.f);
            fwrite(ri[i].end_key, 1, ri[i].end_len, info.f);
            fputs("'}", info.f);
            rc = meta_text_close(&info, err);
        }
        struct wc_bytes key = wc_bytes_of(row.p, row.n);
        if (rc == CT_OK)
            rc = meta_put(out, key, "info", "regioninfo", wc_bytes_of(info.p, info.n), err);
        if (rc == CT_OK)
            rc = meta_put(out, key, "info", "server", wc_bytes_str(server), err);
        if (rc == CT_OK)
            rc =
                meta_put(out, key, "info", "state", wc_bytes_str(enabled ? "OPEN" : "CLOSED"), err);
        free(row.p);
        free(info.p);
    }
    wc_region_info_free(ri, n);
    return rc;
}

static int meta_fill(struct wc_store *src, struct wc_table *out, const char *server,
                     struct ct_err *err)
{
    struct meta_text names;
    int rc = meta_text_open(&names, err);
    if (rc != CT_OK)
        return rc;
    rc = wc_table_list(src, meta_name_add, &names, err);
    int rc2 = meta_text_close(&names, err);
    if (rc == CT_OK)
        rc = rc2;
    for (char *p = names.p, *nl; rc == CT_OK && p && (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
        *nl = '\0';
        rc = meta_add_table(src, out, p, server, err);
    }
    free(names.p);
    return rc;
}

int shell_meta_build(struct wc_store *src, const char *server, struct shell_meta **out,
                     struct ct_err *err)
{
    *out = NULL;
    struct shell_meta *m = calloc(1, sizeof(*m));
    const char *tmp = getenv("TMPDIR");
    size_t len = strlen(tmp && *tmp ? tmp : "/tmp") + 32;
    if (!m || !(m->dir = malloc(len))) {
        free(m);
        return ct_err_set(err, CT_ENOMEM, "out of memory building hbase:meta");
    }
    snprintf(m->dir, len, "%s/ctsdb-meta-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(m->dir)) {
        int rc =
            ct_err_errno(err, CT_EIO, errno, "cannot make a directory for hbase:meta (%s)", m->dir);
        free(m->dir);
        free(m);
        return rc;
    }
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = m->dir;
    o.block_cache_bytes = 1 << 20;
    o.background_threads = 1;
    o.major_compaction_period_ms = 0;
    /* background threads inherit the mask: Ctrl-C must keep reaching the reading thread */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    int rc = wc_open(&o, &m->store, err);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    struct wc_family_desc fd[2];
    wc_family_desc_init(&fd[0], "info");
    wc_family_desc_init(&fd[1], "table");
    struct wc_table_desc d;
    wc_table_desc_init(&d, SHELL_META_SCRATCH);
    d.families = fd;
    d.nfamilies = 2;
    if (rc == CT_OK)
        rc = wc_table_create(m->store, &d, NULL, 0, err);
    if (rc == CT_OK)
        rc = wc_table_open(m->store, SHELL_META_SCRATCH, &m->table, err);
    if (rc == CT_OK)
        rc = meta_fill(src, m->table, server, err);
    if (rc != CT_OK) {
        shell_meta_free(m);
        return ct_err_prefix(err, "cannot build hbase:meta");
    }
    *out = m;
    return CT_OK;
}
