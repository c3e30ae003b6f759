/* catalog.c - writes and reads the catalog file (format: catalog_format.h).
 *
 * Invariants: (0) every block file is recorded with its size and identity checksum (sst_meta
 * .identity), and catalog_load() opens a file only if both match: a file replaced by another
 * valid block file is refused like a damaged one; a version-1 catalog (no identities) is read
 * and the store rewrites it as version 2 at open; (1) catalog_save() runs with cat_mu held and writes the in-memory state as it is
 * (region file lists read under each region's mutex); (2) catalog_load() runs at open before
 * any other thread exists, opens every listed block file and fails (CT_ECORRUPT) if one is
 * missing or damaged rather than silently losing data, unless opt.quarantine_damaged asks to
 * set such a file aside in quarantine/ (reported through log_fn; the open then saves the
 * catalog without it). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/coding.h"
#include "storage/crc32c.h"
#include "storage/engine/catalog_format.h"
#include "storage/engine/eio.h"
#include "storage/engine/engine_int.h"

struct cbuf {
    uint8_t *p;
    size_t len, cap;
    bool oom;
};

static void cb_reserve(struct cbuf *b, size_t n)
{
    if (b->oom || b->len + n <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n)
        cap *= 2;
    uint8_t *np = realloc(b->p, cap);
    if (!np) {
        b->oom = true;
        return;
    }
    b->p = np;
    b->cap = cap;
}

static void cb_u8(struct cbuf *b, uint8_t v)
{
    cb_reserve(b, 1);
    if (!b->oom)
        b->p[b->len++] = v;
}

static void cb_var(struct cbuf *b, uint64_t v)
{
    cb_reserve(b, CODING_VARINT64_MAX);
    if (!b->oom)
        b->len += coding_put_varint64(b->p + b->len, v);
}

static void cb_str(struct cbuf *b, const void *s, size_t n)
{
    cb_var(b, n);
    cb_reserve(b, n);
    if (!b->oom && n) {
        memcpy(b->p + b->len, s, n);
        b->len += n;
    }
}

int catalog_save(struct estore *s, struct ct_err *err)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", s->dir, CATALOG_FILE);
    uint64_t next = s->wal ? wal_next_num(s->wal) : s->wal_next; /* <= what is written */
    int rc = catalog_write_to(s, path, err);
    if (rc == CT_OK)
        s->cat_wal_next = next;
    return rc;
}

int catalog_write_to(struct estore *s, const char *path, struct ct_err *err)
{
    struct cbuf b = {0};
    cb_reserve(&b, CATALOG_HEADER_BYTES);
    if (!b.oom) {
        memcpy(b.p, CATALOG_MAGIC, 8);
        b.p[8] = CATALOG_FORMAT_VERSION;
        b.len = CATALOG_HEADER_BYTES;
    }
    cb_var(&b, s->next_file_id);
    cb_var(&b, s->next_region_id);
    cb_var(&b, s->next_table_id);
    cb_var(&b, atomic_load(&s->visible_seq));
    cb_var(&b, s->wal_floor);
    cb_var(&b, s->wal ? wal_next_num(s->wal) : s->wal_next);
    cb_var(&b, s->nnamespaces);
    for (size_t i = 0; i < s->nnamespaces; i++)
        cb_str(&b, s->namespaces[i], engine_ns_blob_len(s->namespaces[i]));
    cb_var(&b, s->ntables);
    for (size_t i = 0; i < s->ntables; i++) {
        struct etable *t = s->tables[i];
        cb_var(&b, t->id);
        cb_str(&b, t->name, strlen(t->name));
        cb_u8(&b, atomic_load(&t->enabled));
        cb_var(&b, t->max_filesize);
        cb_var(&b, t->memstore_flushsize);
        cb_u8(&b, (uint8_t)t->durability);
        cb_u8(&b, t->readonly);
        cb_u8(&b, t->compaction_enabled);
        cb_var(&b, t->nfams);
        for (size_t f = 0; f < t->nfams; f++) {
            const struct wc_family_desc *d = &t->fams[f];
            cb_str(&b, d->name, strlen(d->name));
            cb_var(&b, d->versions);
            cb_var(&b, d->min_versions);
            cb_var(&b, (uint64_t)d->ttl_s);
            cb_u8(&b, (uint8_t)d->keep_deleted);
            cb_u8(&b, (uint8_t)d->bloom);
            cb_var(&b, d->blocksize);
            cb_u8(&b, d->blockcache);
            cb_u8(&b, d->in_memory);
            cb_u8(&b, (uint8_t)d->compression);
            cb_u8(&b, (uint8_t)d->encoding);
        }
        cb_var(&b, t->nregions);
        for (size_t r = 0; r < t->nregions; r++) {
            struct eregion *rg = t->regions[r];
            cb_var(&b, rg->id);
            cb_str(&b, rg->start, rg->start_len);
            cb_str(&b, rg->end, rg->end_len);
            pthread_mutex_lock(&rg->mu);
            for (size_t f = 0; f < t->nfams; f++) {
                struct efam *ef = &rg->fams[f];
                cb_var(&b, ef->flushed_upto);
                cb_var(&b, ef->nfiles);
                for (size_t k = 0; k < ef->nfiles; k++) {
                    const struct sst_meta *m = sst_get_meta(ef->files[k].sst);
                    cb_var(&b, ef->files[k].id);
                    cb_var(&b, m->file_bytes);
                    cb_var(&b, m->identity);
                }
            }
            pthread_mutex_unlock(&rg->mu);
        }
    }
    cb_reserve(&b, 4);
    if (b.oom) {
        free(b.p);
        return ct_err_set(err, CT_ENOMEM, "out of memory writing the catalog");
    }
    size_t plen = b.len - CATALOG_HEADER_BYTES;
    coding_put_be64(b.p + 9, plen);
    coding_put_be32(b.p + b.len, crc32c_mask(crc32c_value(b.p + CATALOG_HEADER_BYTES, plen)));
    b.len += 4;
    int rc = eio_write_file_atomic(path, b.p, b.len, err);
    free(b.p);
    return rc;
}

/* ---- load ------------------------------------------------------------------------------ */

struct crd {
    const uint8_t *p, *end;
    bool bad;
};

static uint64_t cr_var(struct crd *r)
{
    uint64_t v = 0;
    size_t k = r->bad ? 0 : coding_get_varint64(r->p, r->end, &v);
    if (!k) {
        r->bad = true;
        return 0;
    }
    r->p += k;
    return v;
}

static uint8_t cr_u8(struct crd *r)
{
    if (r->bad || r->p >= r->end) {
        r->bad = true;
        return 0;
    }
    return *r->p++;
}

static const uint8_t *cr_str(struct crd *r, size_t *len)
{
    uint64_t n = cr_var(r);
    if (r->bad || n > (uint64_t)(r->end - r->p)) {
        r->bad = true;
        *len = 0;
        return (const uint8_t *)"";
    }
    const uint8_t *s = r->p;
    r->p += n;
    *len = (size_t)n;
    return s;
}

static int open_file(struct estore *s, const struct wc_family_desc *d, uint64_t id,
                     struct efile *out, struct ct_err *err)
{
    char path[4096];
    estore_file_path(s, id, path, sizeof(path));
    struct sst_read_options ro = {d->blockcache, d->in_memory};
    out->id = id;
    return sst_open(path, id, s->cache, &ro, &out->sst, err);
}

/* opt.quarantine_damaged: block file `id` could not be opened (`why`). If it is damaged or
 * foreign, it is moved to <dir>/quarantine/; if it is missing (set aside by `ctsdb fsck`, or
 * lost), there is nothing left to read. Either way the caller drops it from the catalog (CT_OK)
 * and the loss is logged. Anything else (an I/O error) returns `why` unchanged. */
static int quarantine_file(struct estore *s, uint64_t id, int why_rc, struct ct_err *why)
{
    char path[4096], qpath[4600];
    estore_file_path(s, id, path, sizeof(path));
    bool here = access(path, F_OK) == 0;
    if (here && why_rc != CT_ECORRUPT)
        return why_rc;
    if (here && estore_quarantine(s, path, qpath, sizeof(qpath), why) != CT_OK)
        return why->code;
    s->quarantined++;
    if (here)
        estore_logf(
            s, "quarantined damaged block file %s (now %s): %s; its cells are no longer served",
            path, qpath, why->msg);
    else
        estore_logf(s,
                    "dropped missing block file %s from the catalog; its cells are no longer "
                    "served",
                    path);
    return CT_OK;
}

int catalog_load(struct estore *s, struct ct_err *err)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", s->dir, CATALOG_FILE);
    uint8_t *data;
    size_t len;
    int rc = eio_read_file(path, &data, &len, err);
    if (rc != CT_OK)
        return rc;
    if (len < CATALOG_HEADER_BYTES + 4 || memcmp(data, CATALOG_MAGIC, 8) != 0) {
        free(data);
        return ct_err_set(err, CT_ECORRUPT, "%s is not a ctsdb catalog (bad magic or size)", path);
    }
    if (data[8] < 1 || data[8] > CATALOG_FORMAT_VERSION) {
        int v = data[8];
        free(data);
        return ct_err_set(err, CT_ECORRUPT,
                          "unsupported catalog version %d in %s (this build reads %d)", v, path,
                          CATALOG_FORMAT_VERSION);
    }
    size_t nbad = 0; /* listed block files missing, foreign or damaged */
    struct ct_err first_bad = {0};
    uint64_t plen = coding_get_be64(data + 9);
    if (plen != len - CATALOG_HEADER_BYTES - 4 ||
        crc32c_unmask(coding_get_be32(data + len - 4)) !=
            crc32c_value(data + CATALOG_HEADER_BYTES, plen)) {
        free(data);
        return ct_err_set(err, CT_ECORRUPT, "%s: checksum mismatch (length %zu)", path, len);
    }
    struct crd r = {data + CATALOG_HEADER_BYTES, data + len - 4, false};
    s->next_file_id = cr_var(&r);
    s->next_region_id = cr_var(&r);
    s->next_table_id = cr_var(&r);
    uint64_t last_seq = cr_var(&r);
    int version = data[8];
    s->catalog_version = version;
    if (version >= 2) {
        s->wal_floor = cr_var(&r);
        s->wal_next = cr_var(&r);
        s->cat_wal_next = s->wal_next;
    }
    atomic_store(&s->next_seq, last_seq + 1);
    atomic_store(&s->visible_seq, last_seq);
    uint64_t nns = cr_var(&r);
    for (uint64_t i = 0; i < nns && !r.bad; i++) {
        size_t n;
        const uint8_t *p = cr_str(&r, &n);
        char *name = malloc(n + 2); /* a name alone (no pairs) gets its two NULs here */
        char **nv = realloc(s->namespaces, (s->nnamespaces + 1) * sizeof(char *));
        if (!name || !nv) {
            free(name);
            if (nv)
                s->namespaces = nv;
            rc = ct_err_set(err, CT_ENOMEM, "out of memory loading the catalog");
            goto out;
        }
        s->namespaces = nv;
        memcpy(name, p, n);
        name[n] = 0;
        name[n + 1] = 0;
        if (n && p[n - 1] != 0 && memchr(p, 0, n)) {
            /* a blob must end with its terminating NUL */
            free(name);
            rc = ct_err_set(err, CT_ECORRUPT, "%s: malformed namespace entry", path);
            goto out;
        }
        s->namespaces[s->nnamespaces++] = name;
    }
    uint64_t ntables = cr_var(&r);
    for (uint64_t i = 0; i < ntables && !r.bad; i++) {
        struct etable *t = etable_new_empty();
        struct etable **tv = realloc(s->tables, (s->ntables + 1) * sizeof(*tv));
        if (!t || !tv) {
            etable_unref(t);
            if (tv)
                s->tables = tv;
            rc = ct_err_set(err, CT_ENOMEM, "out of memory loading the catalog");
            goto out;
        }
        s->tables = tv;
        s->tables[s->ntables++] = t;
        t->id = cr_var(&r);
        size_t n;
        const uint8_t *p = cr_str(&r, &n);
        if (n >= sizeof(t->name))
            r.bad = true;
        else
            memcpy(t->name, p, n);
        atomic_init(&t->enabled, cr_u8(&r) != 0);
        t->max_filesize = cr_var(&r);
        t->memstore_flushsize = cr_var(&r);
        t->durability = (enum wc_durability)cr_u8(&r);
        t->readonly = cr_u8(&r);
        t->compaction_enabled = cr_u8(&r);
        uint64_t nf = cr_var(&r);
        if (r.bad || nf == 0 || nf > 100000) {
            r.bad = true;
            break;
        }
        t->fams = calloc(nf, sizeof(*t->fams));
        t->hooks = calloc(nf, sizeof(*t->hooks));
        if (!t->fams || !t->hooks) {
            rc = ct_err_set(err, CT_ENOMEM, "out of memory loading the catalog");
            goto out;
        }
        t->nfams = nf;
        for (uint64_t f = 0; f < nf; f++) {
            struct wc_family_desc *d = &t->fams[f];
            p = cr_str(&r, &n);
            if (n > WC_MAX_FAMILY_BYTES)
                r.bad = true;
            else
                memcpy(d->name, p, n);
            d->versions = (uint32_t)cr_var(&r);
            d->min_versions = (uint32_t)cr_var(&r);
            d->ttl_s = (int64_t)cr_var(&r);
            d->keep_deleted = (enum wc_keep_deleted)cr_u8(&r);
            d->bloom = (enum wc_bloom)cr_u8(&r);
            d->blocksize = (uint32_t)cr_var(&r);
            d->blockcache = cr_u8(&r);
            d->in_memory = cr_u8(&r);
            d->compression = (enum wc_compression)cr_u8(&r);
            d->encoding = (enum wc_block_encoding)cr_u8(&r);
        }
        uint64_t nr = cr_var(&r);
        if (r.bad || nr == 0 || nr > 10000000) {
            r.bad = true;
            break;
        }
        t->regions = calloc(nr, sizeof(*t->regions));
        if (!t->regions) {
            rc = ct_err_set(err, CT_ENOMEM, "out of memory loading the catalog");
            goto out;
        }
        for (uint64_t k = 0; k < nr && !r.bad; k++) {
            uint64_t id = cr_var(&r);
            size_t sl, el;
            const uint8_t *sp = cr_str(&r, &sl);
            const uint8_t *ep = cr_str(&r, &el);
            if (r.bad)
                break;
            struct eregion *rg;
            if ((rc = eregion_new(id, sp, sl, ep, el, nf, 0, s->ms_bloom_bits, &rg, err)) != CT_OK)
                goto out;
            t->regions[t->nregions++] = rg;
            for (uint64_t f = 0; f < nf && !r.bad; f++) {
                struct efam *ef = &rg->fams[f];
                ef->flushed_upto = cr_var(&r);
                uint64_t nfl = cr_var(&r);
                if (r.bad || nfl > 1000000) {
                    r.bad = true;
                    break;
                }
                ef->files = calloc(nfl ? nfl : 1, sizeof(*ef->files));
                if (!ef->files) {
                    rc = ct_err_set(err, CT_ENOMEM, "out of memory loading the catalog");
                    goto out;
                }
                for (uint64_t q = 0; q < nfl && !r.bad; q++) {
                    uint64_t fid = cr_var(&r);
                    uint64_t want_bytes = version >= 2 ? cr_var(&r) : 0;
                    uint64_t want_id = version >= 2 ? cr_var(&r) : 0;
                    if (r.bad)
                        break;
                    /* a file shared by split daughters is opened once */
                    struct efile shared = {NULL, 0};
                    for (size_t pr = 0; pr < t->nregions - 1 && !shared.sst; pr++)
                        for (size_t z = 0; z < t->regions[pr]->fams[f].nfiles; z++)
                            if (t->regions[pr]->fams[f].files[z].id == fid)
                                shared = t->regions[pr]->fams[f].files[z];
                    if (shared.sst) {
                        sst_ref(shared.sst);
                        ef->files[ef->nfiles++] = shared;
                        continue;
                    }
                    rc = open_file(s, &t->fams[f], fid, &ef->files[ef->nfiles], err);
                    if (rc == CT_OK && version >= 2) {
                        const struct sst_meta *m = sst_get_meta(ef->files[ef->nfiles].sst);
                        if (m->file_bytes != want_bytes || m->identity != want_id) {
                            char fp[4096];
                            estore_file_path(s, fid, fp, sizeof(fp));
                            rc = ct_err_set(err, CT_ECORRUPT,
                                            "block file %s is not the file the catalog lists "
                                            "(%llu bytes, identity %08x; found %llu, %08x)",
                                            fp, (unsigned long long)want_bytes, (unsigned)want_id,
                                            (unsigned long long)m->file_bytes,
                                            (unsigned)m->identity);
                            sst_unref(ef->files[ef->nfiles].sst);
                            ef->files[ef->nfiles].sst = NULL;
                        }
                    }
                    if (rc != CT_OK && s->opt.quarantine_damaged && !s->opt.read_only) {
                        rc = quarantine_file(s, fid, rc, err);
                        if (rc == CT_OK)
                            continue; /* dropped: catalog_save() after the load persists it */
                    }
                    if (rc == CT_NOTFOUND) {
                        char fp[4096];
                        estore_file_path(s, fid, fp, sizeof(fp));
                        rc = ct_err_set(err, CT_ECORRUPT,
                                        "block file %s (table %s) listed by the catalog is "
                                        "missing; not opened, nothing changed: restore it or "
                                        "see ctsdb fsck (--fix drops it, keeps the rest)",
                                        fp, t->name);
                    }
                    if (rc == CT_ECORRUPT) {
                        /* every missing, foreign or damaged file is named (log_fn), not just
                         * the first; the open fails with the first once the catalog is read */
                        estore_logf(s, "%s", err->msg);
                        if (nbad++ == 0)
                            first_bad = *err;
                        rc = CT_OK;
                        continue;
                    }
                    if (rc != CT_OK) {
                        ct_err_prefix(err, "table %s", t->name);
                        goto out;
                    }
                    ef->nfiles++;
                }
            }
        }
    }
    if (r.bad || r.p != r.end)
        rc = ct_err_set(err, CT_ECORRUPT, "%s: malformed catalog payload", path);
    else if (nbad) {
        *err = first_bad;
        if (nbad > 1) {
            size_t l = strlen(err->msg);
            snprintf(err->msg + l, sizeof(err->msg) - l, " (%zu block files in all)", nbad);
        }
        rc = CT_ECORRUPT;
    }
out:
    free(data);
    return rc;
}
