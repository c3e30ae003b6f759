/* snapshot.c - table and store snapshots of the embedded engine (wc.h: wc_snapshot_*): HBase's
 * snapshot, list_snapshots, restore_snapshot, clone_snapshot and delete_snapshot, without copying
 * data.
 *
 * Layout: <data_dir>/snapshots/<name>/
 *   SNAPSHOT   text, written atomically: "ctsdb-snapshot 1\n" (magic and format version; readers
 *              reject other versions), "created_ms <ms>\n", "scope table\n" (a snapshot of one
 *              table) or "scope store\n" (of every table), then "table <ns:qual>\n" per table
 *   CATALOG    a catalog (catalog_format.h, written by catalog.c's own catalog_save) listing only
 *              the snapshot's tables: descriptors, regions, each region's block file ids
 *   sst/<id>.sst  hard links to those block files (same ids as in that CATALOG)
 * A snapshot is built in snapshots/.tmp-<name>-<n> and renamed into place, so a crash leaves
 * either no snapshot or a whole one (and a .tmp- directory that list ignores and the next
 * create of any snapshot removes).
 *
 * Invariants: (1) a snapshot holds every write acknowledged before it started and none that
 * started after: it takes every row stripe exclusive (writers wait, none is in flight, so
 * visible_seq covers every acknowledged write), flushes the tables' memstores, then links the
 * files listed by the catalog under cat_mu (the lists cannot change while it links); (2) the
 * snapshot's files are hard links, so a compaction that replaces a live file and unlinks its own
 * path (sst_mark_obsolete) leaves the snapshot's link, and deleting a snapshot unlinks only its
 * own links; (3) restore and clone never share a block file between tables or with the
 * snapshot's ids: every snapshot file is linked into sst/ under a NEW file id (a file shared by
 * split daughters gets one new id), so the engine's rule "a file is deleted when no region of
 * its table lists it" stays true; (4) restored and cloned regions start with
 * flushed_upto = visible_seq, so the log replay never applies older log records (writes made
 * after the snapshot) to them; (5) a restore or clone is one catalog_save: before it the links
 * in sst/ are orphans (removed at the next open), after it they are the table's files.
 * Locking: create takes the row stripes (all, ascending), then each table's flush locks, then
 * cat_mu; restore takes each table's admin locks (lock_table_admin), clone cat_mu. */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/clock.h"
#include "storage/engine/eio.h"
#include "storage/engine/engine_int.h"

#define SNAP_DIR     "snapshots"
#define SNAP_INFO    "SNAPSHOT"
#define SNAP_MAGIC   "ctsdb-snapshot"
#define SNAP_VERSION 1
#define SNAP_PATH    4096

/* snprintf for paths: a path that does not fit becomes "" (never a cut, shorter path that
 * could name another file), so the call using it fails with ENOENT. */
static void snap_pathf(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void snap_pathf(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, size, fmt, ap);
    if (n < 0 || (size_t)n >= size)
        buf[0] = 0;
    va_end(ap);
}

static void snap_dir(const struct estore *s, char *buf, size_t size)
{
    snap_pathf(buf, size, "%s/" SNAP_DIR, s->dir);
}

static void snap_path(const struct estore *s, const char *name, char *buf, size_t size)
{
    snap_pathf(buf, size, "%s/" SNAP_DIR "/%s", s->dir, name);
}

static int snap_mkdir(const char *path, struct ct_err *err)
{
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return ct_err_errno(err, CT_EIO, errno, "cannot create directory %s", path);
    return CT_OK;
}

static int snap_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path) != 0 && errno != ENOENT ? -1 : 0;
}

/* Removes a directory tree (a snapshot's own links and files only). */
static int snap_rmtree(const char *path, struct ct_err *err)
{
    if (nftw(path, snap_rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
        return ct_err_errno(err, CT_EIO, errno, "cannot remove %s", path);
    return CT_OK;
}

/* ---- a scratch store: catalog.c reads and writes the snapshot's CATALOG through it ---------- */

/* A store struct that is never opened: dir = the snapshot directory, the live store's cache and
 * options, no tables. catalog_save() and catalog_load() need nothing else. */
static struct estore *snap_scratch_new(const struct estore *live, const char *dir)
{
    struct estore *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->dir = strdup(dir);
    if (!f->dir) {
        free(f);
        return NULL;
    }
    f->base.ops = live->base.ops;
    f->opt = live->opt;
    f->opt.quarantine_damaged = false;
    f->opt.read_only = true;
    f->cache = live->cache;
    f->ms_bloom_bits = live->ms_bloom_bits;
    f->lock_fd = -1;
    atomic_init(&f->next_seq, 1);
    atomic_init(&f->visible_seq, 0);
    return f;
}

/* Frees a scratch store; with `owned` its tables and namespaces are its own (catalog_load). */
static void snap_scratch_free(struct estore *f, bool owned)
{
    if (!f)
        return;
    if (owned) {
        for (size_t i = 0; i < f->ntables; i++)
            etable_unref(f->tables[i]);
        for (size_t i = 0; i < f->nnamespaces; i++)
            free(f->namespaces[i]);
        free(f->tables);
        free(f->namespaces);
    }
    free(f->dir);
    free(f);
}

/* Loads snapshot `name`: its tables (files open, read from the snapshot's links) in a new
 * scratch store freed with snap_scratch_free(*out, true). CT_NOTFOUND if there is none. */
static int snap_load(struct estore *s, const char *name, struct estore **out, struct ct_err *err)
{
    char path[SNAP_PATH], info[SNAP_PATH + 16];
    snap_path(s, name, path, sizeof(path));
    snap_pathf(info, sizeof(info), "%s/" SNAP_INFO, path);
    if (access(info, F_OK) != 0)
        return ct_err_set(err, CT_NOTFOUND, "Snapshot '%s' doesn't exist", name);
    struct estore *f = snap_scratch_new(s, path);
    if (!f)
        return ct_err_set(err, CT_ENOMEM, "out of memory loading snapshot %s", name);
    int rc = catalog_load(f, err);
    if (rc != CT_OK) {
        snap_scratch_free(f, true);
        if (rc == CT_NOTFOUND)
            return ct_err_set(err, CT_ECORRUPT, "snapshot %s has no catalog (%s)", name, path);
        return ct_err_prefix(err, "snapshot %s", name);
    }
    *out = f;
    return CT_OK;
}

/* ---- info file -------------------------------------------------------------------------- */

static int snap_info_write(const char *dir, struct etable **tables, size_t n, bool whole,
                           int64_t created_ms, struct ct_err *err)
{
    size_t cap = 64 + n * (WC_MAX_TABLE_NAME + 8);
    char *buf = malloc(cap);
    if (!buf)
        return ct_err_set(err, CT_ENOMEM, "out of memory writing a snapshot");
    size_t len = (size_t)snprintf(buf, cap, SNAP_MAGIC " %d\ncreated_ms %lld\nscope %s\n",
                                  SNAP_VERSION, (long long)created_ms, whole ? "store" : "table");
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(buf + len, cap - len, "table %s\n", tables[i]->name);
    char path[SNAP_PATH + 16];
    snap_pathf(path, sizeof(path), "%s/" SNAP_INFO, dir);
    int rc = eio_write_file_atomic(path, buf, len, err);
    free(buf);
    return rc;
}

/* Reads <dir>/SNAPSHOT into *info (name set by the caller). */
static int snap_info_read(const char *dir, struct wc_snapshot_info *info, struct ct_err *err)
{
    char path[SNAP_PATH + 16];
    snap_pathf(path, sizeof(path), "%s/" SNAP_INFO, dir);
    uint8_t *data;
    size_t len;
    int rc = eio_read_file(path, &data, &len, err);
    if (rc != CT_OK)
        return rc;
    char *text = malloc(len + 1);
    if (!text) {
        free(data);
        return ct_err_set(err, CT_ENOMEM, "out of memory reading %s", path);
    }
    memcpy(text, data, len);
    text[len] = 0;
    free(data);
    int version = 0;
    long long created = 0;
    bool whole = false;
    info->table[0] = 0;
    info->ntables = 0;
    char *save = NULL;
    char *line = strtok_r(text, "\n", &save);
    if (!line || sscanf(line, SNAP_MAGIC " %d", &version) != 1) {
        free(text);
        return ct_err_set(err, CT_ECORRUPT, "%s is not a ctsdb snapshot description", path);
    }
    if (version != SNAP_VERSION) {
        free(text);
        return ct_err_set(err, CT_ECORRUPT,
                          "unsupported snapshot version %d in %s (this build reads %d)", version,
                          path, SNAP_VERSION);
    }
    while ((line = strtok_r(NULL, "\n", &save))) {
        if (sscanf(line, "created_ms %lld", &created) == 1)
            continue;
        if (!strcmp(line, "scope store"))
            whole = true;
        if (!strncmp(line, "table ", 6)) {
            if (info->ntables == 0)
                snprintf(info->table, sizeof(info->table), "%s", line + 6);
            info->ntables++;
        }
    }
    free(text);
    if (whole || info->ntables != 1)
        info->table[0] = 0;
    info->created_ms = created;
    return CT_OK;
}

/* ---- create ----------------------------------------------------------------------------- */

/* Links every block file of the tables into <tmp>/sst/. REQUIRES cat_mu (file lists fixed). */
static int snap_link_files(struct estore *s, struct etable **tables, size_t n, const char *tmp,
                           struct ct_err *err)
{
    char from[SNAP_PATH], to[SNAP_PATH + 64];
    for (size_t i = 0; i < n; i++) {
        struct etable *t = tables[i];
        for (size_t r = 0; r < t->nregions; r++) {
            struct eregion *rg = t->regions[r];
            pthread_mutex_lock(&rg->mu);
            for (size_t f = 0; f < rg->nfams; f++)
                for (size_t k = 0; k < rg->fams[f].nfiles; k++) {
                    uint64_t id = rg->fams[f].files[k].id;
                    estore_file_path(s, id, from, sizeof(from));
                    snap_pathf(to, sizeof(to), "%s/sst/%016llx.sst", tmp, (unsigned long long)id);
                    if (link(from, to) != 0 && errno != EEXIST) { /* EEXIST: split daughters */
                        int e = errno;
                        pthread_mutex_unlock(&rg->mu);
                        return ct_err_errno(err, CT_EIO, e, "cannot link %s to %s", from, to);
                    }
                }
            pthread_mutex_unlock(&rg->mu);
        }
    }
    snap_pathf(to, sizeof(to), "%s/sst", tmp);
    return eio_fsync_dir(to, err);
}

/* Removes leftovers of interrupted creates and deletes (snapshots/.tmp-*, .del-*). */
static void snap_remove_leftovers(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    char path[SNAP_PATH + 512];
    struct ct_err ignored = {0};
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, ".tmp-", 5) && strncmp(de->d_name, ".del-", 5))
            continue;
        snap_pathf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (snap_rmtree(path, &ignored) != CT_OK) { /* retried by the next create */
        }
    }
    closedir(d);
}

int engine_snapshot_create(struct wc_store *ws, const char *name, const char *table,
                           struct ct_err *err)
{
    struct estore *s = estore_of(ws);
    int rc = estore_check_writable(s, err);
    if (rc != CT_OK)
        return rc;
    char dir[SNAP_PATH], final[SNAP_PATH + 256], tmp[SNAP_PATH + 512], sub[SNAP_PATH + 600];
    snap_dir(s, dir, sizeof(dir));
    snap_path(s, name, final, sizeof(final));
    if ((rc = snap_mkdir(dir, err)) != CT_OK)
        return rc;
    /* (1): no write in flight from here until the files are linked; this also keeps snapshot
     * creates apart (their .tmp- directories) */
    for (int i = 0; i < ENGINE_ROW_STRIPES; i++)
        pthread_rwlock_wrlock(&s->row_lk[i]);
    snap_remove_leftovers(dir);
    snap_pathf(tmp, sizeof(tmp), "%s/.tmp-%s-%llu", dir, name, (unsigned long long)clock_mono_ns());
    snap_pathf(sub, sizeof(sub), "%s/sst", tmp);
    struct etable **tables = NULL;
    size_t n = 0;
    if (access(final, F_OK) == 0)
        rc = ct_err_set(err, CT_EEXIST, "Snapshot '%s' already exists", name);
    else if ((rc = snap_mkdir(tmp, err)) == CT_OK)
        rc = snap_mkdir(sub, err);
    if (rc == CT_OK) {
        pthread_mutex_lock(&s->cat_mu);
        if (table) {
            long i = find_table(s, table);
            if (i < 0)
                rc = ct_err_set(err, CT_NOTFOUND, "Table %s does not exist.", table);
            else if ((tables = malloc(sizeof(*tables))))
                tables[n++] = s->tables[i];
        } else if ((tables = calloc(s->ntables ? s->ntables : 1, sizeof(*tables)))) {
            for (size_t i = 0; i < s->ntables; i++)
                tables[n++] = s->tables[i];
        }
        if (rc == CT_OK && !tables)
            rc = ct_err_set(err, CT_ENOMEM, "out of memory taking snapshot %s", name);
        if (rc != CT_OK)
            n = 0;
        for (size_t i = 0; i < n; i++)
            etable_ref(tables[i]);
        pthread_mutex_unlock(&s->cat_mu);
    }
    for (size_t i = 0; rc == CT_OK && i < n; i++)
        if ((rc = s->base.ops->table_flush(ws, tables[i]->name, err)) != CT_OK)
            ct_err_prefix(err, "snapshot %s: flushing %s", name, tables[i]->name);
    if (rc == CT_OK) {
        pthread_mutex_lock(&s->cat_mu);
        for (size_t i = 0; rc == CT_OK && i < n; i++)
            if (atomic_load(&tables[i]->dropped))
                rc = ct_err_set(err, CT_NOTFOUND, "Table %s does not exist.", tables[i]->name);
        if (rc == CT_OK)
            rc = snap_link_files(s, tables, n, tmp, err);
        if (rc == CT_OK)
            rc = snap_info_write(tmp, tables, n, table == NULL, clock_now_ms(), err);
        if (rc == CT_OK) {
            /* the frozen catalog: catalog.c's own writer, over a store listing only these */
            struct estore *f = snap_scratch_new(s, tmp);
            if (!f) {
                rc = ct_err_set(err, CT_ENOMEM, "out of memory taking snapshot %s", name);
            } else {
                f->tables = tables;
                f->ntables = n;
                f->namespaces = s->namespaces;
                f->nnamespaces = s->nnamespaces;
                f->next_file_id = s->next_file_id;
                f->next_region_id = s->next_region_id;
                f->next_table_id = s->next_table_id;
                atomic_store(&f->visible_seq, atomic_load(&s->visible_seq));
                rc = catalog_save(f, err);
                snap_scratch_free(f, false);
            }
        }
        pthread_mutex_unlock(&s->cat_mu);
    }
    for (size_t i = 0; i < n; i++)
        etable_unref(tables[i]);
    free(tables);
    if (rc == CT_OK && rename(tmp, final) != 0)
        rc = ct_err_errno(err, CT_EIO, errno, "cannot rename %s to %s", tmp, final);
    if (rc == CT_OK)
        rc = eio_fsync_dir(dir, err);
    if (rc != CT_OK && access(tmp, F_OK) == 0) {
        struct ct_err ignored = {0};
        if (snap_rmtree(tmp, &ignored) != CT_OK) { /* removed by the next create */
        }
    }
    for (int i = ENGINE_ROW_STRIPES - 1; i >= 0; i--)
        pthread_rwlock_unlock(&s->row_lk[i]);
    return rc;
}

/* ---- list ------------------------------------------------------------------------------- */

static int snap_info_cmp(const void *a, const void *b)
{
    return strcmp(((const struct wc_snapshot_info *)a)->name,
                  ((const struct wc_snapshot_info *)b)->name);
}

int engine_snapshot_list(struct wc_store *ws, wc_snapshot_fn fn, void *arg, struct ct_err *err)
{
    struct estore *s = estore_of(ws);
    char dir[SNAP_PATH], path[SNAP_PATH + 512];
    snap_dir(s, dir, sizeof(dir));
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT)
            return CT_OK; /* no snapshot yet */
        return ct_err_errno(err, CT_EIO, errno, "cannot list %s", dir);
    }
    struct wc_snapshot_info *v = NULL;
    size_t n = 0, cap = 0;
    int rc = CT_OK;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' || strlen(de->d_name) > WC_MAX_SNAPSHOT_NAME)
            continue; /* ".", "..", unfinished creates and deletes */
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 16;
            struct wc_snapshot_info *nv = realloc(v, nc * sizeof(*nv));
            if (!nv) {
                rc = ct_err_set(err, CT_ENOMEM, "out of memory listing snapshots");
                break;
            }
            v = nv;
            cap = nc;
        }
        snap_pathf(path, sizeof(path), "%s/%s", dir, de->d_name);
        struct ct_err e2 = {0};
        memset(&v[n], 0, sizeof(v[n]));
        memcpy(v[n].name, de->d_name, strlen(de->d_name) + 1); /* length checked above */
        if (snap_info_read(path, &v[n], &e2) != CT_OK) {
            estore_logf(s, "ignoring %s: %s", path, e2.msg);
            continue;
        }
        n++;
    }
    closedir(d);
    if (rc == CT_OK) {
        if (n)
            qsort(v, n, sizeof(*v), snap_info_cmp);
        for (size_t i = 0; i < n; i++)
            if (fn(arg, &v[i]))
                break;
    }
    free(v);
    return rc;
}

/* ---- restore and clone ------------------------------------------------------------------ */

/* New file ids given to a snapshot's files by one restore or clone (3). */
struct snap_idmap {
    uint64_t *from;
    struct efile *to; /* the opened new file; the map holds no reference of its own */
    size_t n, cap;
};

/* Builds regions for table `st` of snapshot directory `sdir` with the store's next region and
 * file ids: each snapshot file linked into sst/ under a new id and opened. Returns a new array
 * of st->nregions regions in *out. On error every link made is removed. REQUIRES cat_mu. */
static int snap_build_regions(struct estore *s, const struct etable *st, const char *sdir,
                              struct eregion ***out, struct ct_err *err)
{
    struct eregion **rv = calloc(st->nregions ? st->nregions : 1, sizeof(*rv));
    struct snap_idmap m = {0};
    if (!rv)
        return ct_err_set(err, CT_ENOMEM, "out of memory restoring %s", st->name);
    uint64_t flushed = atomic_load(&s->visible_seq); /* (4) */
    char from[SNAP_PATH + 64], to[SNAP_PATH];
    int rc = CT_OK;
    size_t nr = 0;
    for (; nr < st->nregions && rc == CT_OK; nr++) {
        const struct eregion *sr = st->regions[nr];
        rc = eregion_new(s->next_region_id++, sr->start, sr->start_len, sr->end, sr->end_len,
                         st->nfams, flushed, s->ms_bloom_bits, &rv[nr], err);
        if (rc != CT_OK)
            break;
        for (size_t f = 0; f < st->nfams && rc == CT_OK; f++) {
            const struct efam *sf = &sr->fams[f];
            struct efam *nf = &rv[nr]->fams[f];
            nf->files = calloc(sf->nfiles ? sf->nfiles : 1, sizeof(*nf->files));
            if (!nf->files) {
                rc = ct_err_set(err, CT_ENOMEM, "out of memory restoring %s", st->name);
                break;
            }
            for (size_t k = 0; k < sf->nfiles && rc == CT_OK; k++) {
                uint64_t old = sf->files[k].id;
                size_t j = 0;
                while (j < m.n && m.from[j] != old)
                    j++;
                if (j < m.n) { /* shared by split daughters: one new file, shared again */
                    sst_ref(m.to[j].sst);
                    nf->files[nf->nfiles++] = m.to[j];
                    continue;
                }
                if (m.n == m.cap) {
                    size_t nc = m.cap ? 2 * m.cap : 16;
                    uint64_t *a = realloc(m.from, nc * sizeof(*a));
                    if (a)
                        m.from = a;
                    struct efile *b = a ? realloc(m.to, nc * sizeof(*b)) : NULL;
                    if (b)
                        m.to = b;
                    if (!a || !b) {
                        rc = ct_err_set(err, CT_ENOMEM, "out of memory restoring %s", st->name);
                        break;
                    }
                    m.cap = nc;
                }
                uint64_t id = s->next_file_id++;
                snap_pathf(from, sizeof(from), "%s/sst/%016llx.sst", sdir, (unsigned long long)old);
                estore_file_path(s, id, to, sizeof(to));
                if (link(from, to) != 0) {
                    rc = ct_err_errno(err, CT_EIO, errno, "cannot link %s to %s", from, to);
                    break;
                }
                struct sst_read_options ro = {st->fams[f].blockcache, st->fams[f].in_memory};
                struct efile ef = {NULL, id};
                rc = sst_open(to, id, s->cache, &ro, &ef.sst, err);
                if (rc != CT_OK) {
                    if (eio_unlink(to) != 0) { /* an orphan: removed at the next open */
                    }
                    break;
                }
                m.from[m.n] = old;
                m.to[m.n++] = ef;
                nf->files[nf->nfiles++] = ef;
            }
        }
    }
    if (rc == CT_OK) {
        snap_pathf(to, sizeof(to), "%s/sst", s->dir);
        rc = eio_fsync_dir(to, err);
    }
    if (rc != CT_OK) {
        /* every new file goes away with its last reference (the regions' lists) */
        for (size_t j = 0; j < m.n; j++)
            sst_mark_obsolete(m.to[j].sst);
        for (size_t r = 0; r < nr; r++)
            eregion_unref(rv[r]);
        free(rv);
    } else {
        *out = rv;
    }
    free(m.from);
    free(m.to);
    return rc;
}

/* Copies the snapshot table's families into new arrays (hooks carried over by family name from
 * `keep`, which may be NULL). */
static int snap_copy_fams(const struct etable *st, const struct etable *keep,
                          struct wc_family_desc **fams, struct ehook **hooks, struct ct_err *err)
{
    *fams = calloc(st->nfams, sizeof(**fams));
    *hooks = calloc(st->nfams, sizeof(**hooks));
    if (!*fams || !*hooks) {
        free(*fams);
        free(*hooks);
        *fams = NULL;
        *hooks = NULL;
        return ct_err_set(err, CT_ENOMEM, "out of memory restoring %s", st->name);
    }
    memcpy(*fams, st->fams, st->nfams * sizeof(**fams));
    for (size_t f = 0; keep && f < st->nfams; f++)
        for (size_t g = 0; g < keep->nfams; g++)
            if (!strcmp(keep->fams[g].name, st->fams[f].name))
                (*hooks)[f] = keep->hooks[g];
    return CT_OK;
}

static void snap_set_attrs(struct etable *t, const struct etable *st)
{
    t->max_filesize = atomic_load(&st->max_filesize);
    t->memstore_flushsize = atomic_load(&st->memstore_flushsize);
    t->durability = st->durability;
    t->readonly = st->readonly;
    atomic_store(&t->compaction_enabled, atomic_load(&st->compaction_enabled));
}

/* Creates table `name` from snapshot table st (enabled or not). REQUIRES cat_mu. */
static int snap_create_table(struct estore *s, const struct etable *st, const char *sdir,
                             const char *name, bool enabled, struct ct_err *err)
{
    char ns[WC_MAX_TABLE_NAME];
    const char *colon = strchr(name, ':');
    snprintf(ns, sizeof(ns), "%.*s", colon ? (int)(colon - name) : 0, name);
    if (find_ns(s, ns) < 0)
        return ct_err_set(err, CT_NOTFOUND, "namespace %s does not exist", ns);
    if (find_table(s, name) >= 0)
        return ct_err_set(err, CT_EEXIST, "Table already exists: %s!", name);
    struct etable *t = etable_new_empty();
    if (!t)
        return ct_err_set(err, CT_ENOMEM, "out of memory creating table %s", name);
    int rc = snap_copy_fams(st, NULL, &t->fams, &t->hooks, err);
    if (rc != CT_OK) {
        etable_unref(t);
        return rc;
    }
    t->nfams = st->nfams;
    snprintf(t->name, sizeof(t->name), "%s", name);
    snap_set_attrs(t, st);
    atomic_init(&t->enabled, enabled);
    if ((rc = snap_build_regions(s, st, sdir, &t->regions, err)) != CT_OK) {
        etable_unref(t);
        return rc;
    }
    t->nregions = st->nregions;
    t->id = s->next_table_id++;
    if ((rc = insert_table(s, t, err)) != CT_OK) {
        drop_regions(s, t->regions, t->nregions);
        t->nregions = 0;
        etable_unref(t);
        return rc;
    }
    if ((rc = catalog_save(s, err)) != CT_OK) {
        remove_table_at(s, find_table(s, name));
        drop_regions(s, t->regions, t->nregions); /* (5): the links go with the regions */
        t->nregions = 0;
        etable_unref(t);
        return rc;
    }
    return CT_OK; /* the store holds t's reference */
}

/* Replaces the regions, families and attributes of disabled table st->name with the
 * snapshot's. */
static int snap_restore_table(struct estore *s, const struct etable *st, const char *sdir,
                              struct ct_err *err)
{
    struct etable *t;
    int rc = lock_table_admin(s, st->name, &t, err);
    if (rc == CT_NOTFOUND) {
        pthread_mutex_lock(&s->cat_mu);
        rc = snap_create_table(s, st, sdir, st->name, false, err);
        pthread_mutex_unlock(&s->cat_mu);
        return rc;
    }
    if (rc != CT_OK)
        return rc;
    struct eregion **nr = NULL;
    struct wc_family_desc *fams = NULL;
    struct ehook *hooks = NULL;
    if (atomic_load(&t->enabled)) {
        rc = ct_err_set(err, CT_EBUSY, "Table %s is enabled. Disable it first.", t->name);
        goto out;
    }
    if ((rc = snap_copy_fams(st, t, &fams, &hooks, err)) != CT_OK)
        goto out;
    if ((rc = snap_build_regions(s, st, sdir, &nr, err)) != CT_OK)
        goto out;
    struct etable saved = {0};
    saved.fams = t->fams;
    saved.hooks = t->hooks;
    saved.nfams = t->nfams;
    saved.regions = t->regions;
    saved.nregions = t->nregions;
    saved.max_filesize = atomic_load(&t->max_filesize);
    saved.memstore_flushsize = atomic_load(&t->memstore_flushsize);
    saved.durability = t->durability;
    saved.readonly = t->readonly;
    atomic_init(&saved.compaction_enabled, atomic_load(&t->compaction_enabled));
    t->fams = fams;
    t->hooks = hooks;
    t->nfams = st->nfams;
    t->regions = nr;
    t->nregions = st->nregions;
    snap_set_attrs(t, st);
    if ((rc = catalog_save(s, err)) != CT_OK) {
        t->fams = saved.fams;
        t->hooks = saved.hooks;
        t->nfams = saved.nfams;
        t->regions = saved.regions;
        t->nregions = saved.nregions;
        snap_set_attrs(t, &saved);
        drop_regions(s, nr, st->nregions); /* (5) */
        free(nr);
        goto out;
    }
    fams = saved.fams;
    hooks = saved.hooks;
    drop_regions(s, saved.regions, saved.nregions);
    free(saved.regions);
out:
    free(fams);
    free(hooks);
    unlock_table_admin(s, t);
    if (rc == CT_OK)
        estore_release_wal(s);
    return rc;
}

int engine_snapshot_restore(struct wc_store *ws, const char *name, struct ct_err *err)
{
    struct estore *s = estore_of(ws);
    if (s->opt.read_only)
        return ct_err_set(err, CT_EINVAL, "the store was opened read-only");
    struct estore *f;
    int rc = snap_load(s, name, &f, err);
    if (rc != CT_OK)
        return rc;
    /* every table that exists must be disabled before any is changed */
    pthread_mutex_lock(&s->cat_mu);
    for (size_t i = 0; i < f->ntables && rc == CT_OK; i++) {
        long k = find_table(s, f->tables[i]->name);
        if (k >= 0 && atomic_load(&s->tables[k]->enabled))
            rc = ct_err_set(err, CT_EBUSY, "Table %s is enabled. Disable it first.",
                            f->tables[i]->name);
    }
    pthread_mutex_unlock(&s->cat_mu);
    for (size_t i = 0; i < f->ntables && rc == CT_OK; i++)
        if ((rc = snap_restore_table(s, f->tables[i], f->dir, err)) != CT_OK)
            ct_err_prefix(err, "restoring snapshot %s", name);
    snap_scratch_free(f, true);
    return rc;
}

int engine_snapshot_clone(struct wc_store *ws, const char *name, const char *table,
                          struct ct_err *err)
{
    struct estore *s = estore_of(ws);
    if (s->opt.read_only)
        return ct_err_set(err, CT_EINVAL, "the store was opened read-only");
    struct estore *f;
    int rc = snap_load(s, name, &f, err);
    if (rc != CT_OK)
        return rc;
    struct wc_snapshot_info info;
    if ((rc = snap_info_read(f->dir, &info, err)) != CT_OK) {
        ct_err_prefix(err, "snapshot %s", name);
    } else if (!info.table[0]) {
        rc = ct_err_set(err, CT_EINVAL,
                        "snapshot %s is of the whole store (%zu tables); only a snapshot of one "
                        "table can be cloned",
                        name, f->ntables);
    } else {
        pthread_mutex_lock(&s->cat_mu);
        rc = snap_create_table(s, f->tables[0], f->dir, table, true, err);
        pthread_mutex_unlock(&s->cat_mu);
    }
    snap_scratch_free(f, true);
    return rc;
}

/* ---- delete ----------------------------------------------------------------------------- */

int engine_snapshot_delete(struct wc_store *ws, const char *name, struct ct_err *err)
{
    struct estore *s = estore_of(ws);
    if (s->opt.read_only)
        return ct_err_set(err, CT_EINVAL, "the store was opened read-only");
    char dir[SNAP_PATH], path[SNAP_PATH + 256], gone[SNAP_PATH + 512];
    snap_dir(s, dir, sizeof(dir));
    snap_path(s, name, path, sizeof(path));
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return ct_err_set(err, CT_NOTFOUND, "Snapshot '%s' doesn't exist", name);
    /* out of the name space first (one rename), then the links (2) */
    snap_pathf(gone, sizeof(gone), "%s/.del-%s-%llu", dir, name,
               (unsigned long long)clock_mono_ns());
    if (rename(path, gone) != 0)
        return ct_err_errno(err, CT_EIO, errno, "cannot remove snapshot %s", path);
    int rc = eio_fsync_dir(dir, err);
    if (rc != CT_OK)
        return rc;
    return snap_rmtree(gone, err);
}
