/* bigtable.c - the Cloud Bigtable backend of storage/wc.h: store open/close, table
 * administration, namespaces, and the metadata table (bt_meta_format.h). Data operations are in
 * bt_data.c and bt_scan.c.
 *
 * Names: a ctsdb table "ns:qual" is the Bigtable table id "qual" (default namespace, no '.' in
 * qual), else "ns.qual" (bt_table_id()). Namespaces, enabled flags, attributes Bigtable lacks
 * and split keys live in the metadata table, so several processes sharing one instance agree.
 * Endpoints: BIGTABLE_EMULATOR_HOST (plaintext, project/instance default "ctsdb") or the options'
 * endpoints (default bigtable.googleapis.com:443 and bigtableadmin.googleapis.com:443, TLS with a
 * service-account key or Application Default Credentials).
 *
 * Invariants: (1) every table created here has MILLIS timestamp granularity and one GC rule per
 * family from bt_gc.h; (2) the metadata row of a table is written after the table exists and
 * removed after it is deleted; (3) a table handle's family cache is replaced, never edited, under
 * its mutex. Thread-safe: the store has no mutable state besides gRPC's. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "storage/bigtable/bt_gc.h"
#include "storage/bigtable/bt_int.h"
#include "storage/bigtable/bt_meta_format.h"
#include "storage/clock.h"

static const struct wc_backend_ops bt_ops;

/* ---- small helpers ------------------------------------------------------------------------ */

void *bt_pool_alloc(struct bt_pool *p, size_t size)
{
    if (bt_grow((void **)&p->ptrs, &p->cap, p->n + 1, sizeof(*p->ptrs)))
        return NULL;
    void *m = calloc(1, size ? size : 1);
    if (m)
        p->ptrs[p->n++] = m;
    return m;
}

char *bt_pool_strndup(struct bt_pool *p, const void *s, size_t n)
{
    char *c = bt_pool_alloc(p, n + 1);
    if (c && n)
        memcpy(c, s, n);
    return c;
}

void bt_pool_free(struct bt_pool *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->ptrs[i]);
    free(p->ptrs);
    memset(p, 0, sizeof(*p));
}

static void *bt_arena_alloc(void *data, size_t size)
{
    struct bt_arena *a = data;
    size = (size + 15) & ~(size_t)15;
    if (a->cap - a->used >= size) {
        void *p = a->buf + a->used;
        a->used += size;
        return p;
    }
    void *p = malloc(size ? size : 1);
    if (!p || bt_grow((void **)&a->extra, &a->extra_cap, a->nextra + 1, sizeof(*a->extra))) {
        free(p);
        a->failed = true;
        return NULL;
    }
    a->extra[a->nextra++] = p;
    a->extra_bytes += size;
    return p;
}

static void bt_arena_free_one(void *data, void *p)
{
    (void)data;
    (void)p; /* released together by bt_arena_reset() */
}

void bt_arena_init(struct bt_arena *a)
{
    memset(a, 0, sizeof(*a));
    a->alloc.alloc = bt_arena_alloc;
    a->alloc.free = bt_arena_free_one;
    a->alloc.allocator_data = a;
}

void bt_arena_reset(struct bt_arena *a)
{
    for (size_t i = 0; i < a->nextra; i++)
        free(a->extra[i]);
    a->nextra = 0;
    if (a->extra_bytes) { /* next round fits in one block */
        size_t cap = a->cap + a->extra_bytes;
        uint8_t *nb = realloc(a->buf, cap);
        if (nb) {
            a->buf = nb;
            a->cap = cap;
        }
        a->extra_bytes = 0;
    }
    a->used = 0;
    a->failed = false;
}

void bt_arena_destroy(struct bt_arena *a)
{
    bt_arena_reset(a);
    free(a->extra);
    free(a->buf);
    memset(a, 0, sizeof(*a));
}

int bt_pack(const ProtobufCMessage *m, struct bt_buf *b, struct ct_err *err)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    b->len = 0;
    if (bt_buf_reserve(b, n ? n : 1) != 0)
        return ct_err_set(err, CT_ENOMEM, "out of memory encoding a %zu-byte request", n);
    b->len = protobuf_c_message_pack(m, b->p);
    return CT_OK;
}

void bt_backoff(int attempt)
{
    int64_t ms = BT_RETRY_FIRST_MS;
    for (int i = 1; i < attempt && ms < BT_RETRY_MAX_MS; i++)
        ms *= 2;
    if (ms > BT_RETRY_MAX_MS)
        ms = BT_RETRY_MAX_MS;
    int64_t left = bt_request_ms(ms); /* never past the request's deadline */
    if (left < ms)
        ms = left > 0 ? left : 0;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

void bt_family_regex(const char *family, char *out, size_t size)
{
    size_t o = 0;
    if (size < 3)
        return;
    out[o++] = '^';
    for (const char *p = family; *p && o + 4 < size; p++) {
        if (!isalnum((unsigned char)*p) && *p != '_')
            out[o++] = '\\';
        out[o++] = *p;
    }
    out[o++] = '$';
    out[o] = 0;
}

int bt_table_id(const char *full, char *id, size_t size, struct ct_err *err)
{
    const char *colon = strchr(full, ':');
    const char *qual = colon ? colon + 1 : full;
    size_t nslen = colon ? (size_t)(colon - full) : 7;
    const char *ns = colon ? full : "default";
    int n;
    if (nslen == 7 && !memcmp(ns, "default", 7) && !strchr(qual, '.'))
        n = snprintf(id, size, "%s", qual);
    else
        n = snprintf(id, size, "%.*s.%s", (int)nslen, ns, qual);
    if (n < 0 || (size_t)n >= size || n > BT_MAX_TABLE_ID)
        return ct_err_set(err, CT_ELIMIT,
                          "table %s maps to a Bigtable table id longer than %d characters", full,
                          BT_MAX_TABLE_ID);
    if (!isalnum((unsigned char)id[0]) && id[0] != '_')
        return ct_err_set(err, CT_EINVAL, "table %s cannot be a Bigtable table id", full);
    return CT_OK;
}

bool bt_table_full_name(const char *id, char *full, size_t size)
{
    const char *dot = strchr(id, '.');
    int n;
    if (!dot)
        n = snprintf(full, size, "default:%s", id);
    else
        n = snprintf(full, size, "%.*s:%s", (int)(dot - id), id, dot + 1);
    if (n < 0 || (size_t)n >= size)
        return false;
    char ns[WC_MAX_TABLE_NAME], qual[WC_MAX_TABLE_NAME];
    struct ct_err e = {0};
    return wc_table_name_parse(full, ns, sizeof(ns), qual, sizeof(qual), &e) == CT_OK;
}

static void bt_url_encode(const char *in, char *out, size_t size)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const char *p = in; *p && o + 4 < size; p++) {
        unsigned char c = (unsigned char)*p;
        if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = 0;
}

static int bt_fam_cmp(const void *a, const void *b)
{
    return strcmp(((const struct wc_family_desc *)a)->name,
                  ((const struct wc_family_desc *)b)->name);
}

static char *bt_hex(const uint8_t *p, size_t n)
{
    char *s = malloc(2 * n + 1);
    if (!s)
        return NULL;
    for (size_t i = 0; i < n; i++)
        sprintf(s + 2 * i, "%02x", p[i]);
    s[2 * n] = 0;
    return s;
}

/* ---- admin calls ------------------------------------------------------------------------- */

/* Calls admin method `method` with request `req`, routed by `param_key`=`param_val`. The reply
 * goes into *resp (the caller frees it with bt_buf_free, also on error), or is dropped when
 * resp is NULL. */
static int bt_admin(struct bt_store *s, const char *method, const char *param_key,
                    const char *param_val, const ProtobufCMessage *req, struct bt_buf *resp,
                    struct ct_err *err)
{
    char enc[1550], hdr[1600];
    bt_url_encode(param_val, enc, sizeof(enc));
    snprintf(hdr, sizeof(hdr), "%s=%s", param_key, enc);
    struct bt_md md[1] = {{"x-goog-request-params", hdr}};
    struct bt_buf body = {0};
    int rc = bt_pack(req, &body, err);
    if (rc != CT_OK)
        return rc;
    char full_method[160];
    snprintf(full_method, sizeof(full_method), BT_METHOD_ADMIN "%s", method);
    struct bt_buf dropped = {0};
    rc = bt_rpc_unary(s->rpc, BT_CHANNEL_ADMIN, full_method, md, 1, body.p, body.len,
                      s->deadline_ms, resp ? resp : &dropped, NULL, err);
    bt_buf_free(&dropped);
    bt_buf_free(&body);
    return rc;
}

static void bt_table_path(const struct bt_store *s, const char *id, char *out, size_t size)
{
    snprintf(out, size, "%s/tables/%s", s->instance, id);
}

/* The admin path of table `full` (namespace:qualifier): bt_table_id, then bt_table_path. */
static int bt_table_path_of(const struct bt_store *s, const char *full, char *out, size_t size,
                            struct ct_err *err)
{
    char id[128];
    int rc = bt_table_id(full, id, sizeof(id), err);
    if (rc == CT_OK)
        bt_table_path(s, id, out, size);
    return rc;
}

/* GetTable: CT_OK and a new table in *out (free with btpb__table__free_unpacked), CT_NOTFOUND. */
static int bt_get_table(struct bt_store *s, const char *full, Btpb__Table__View view,
                        Btpb__Table **out, struct ct_err *err)
{
    char path[512];
    int rc = bt_table_path_of(s, full, path, sizeof(path), err);
    if (rc != CT_OK)
        return rc;
    Btpb__GetTableRequest rq;
    btpb__get_table_request__init(&rq);
    rq.name = path;
    rq.view = view;
    struct bt_buf resp = {0};
    rc = bt_admin(s, "GetTable", "name", path, &rq.base, &resp, err);
    if (rc == CT_NOTFOUND) {
        bt_buf_free(&resp);
        return ct_err_set(err, CT_NOTFOUND, "Table %s does not exist.", full);
    }
    if (rc != CT_OK) {
        bt_buf_free(&resp);
        return rc;
    }
    *out = btpb__table__unpack(NULL, resp.len, resp.p);
    bt_buf_free(&resp);
    if (!*out)
        return ct_err_set(err, CT_ECORRUPT, "cannot decode the description of table %s", full);
    return CT_OK;
}

/* ---- metadata ---------------------------------------------------------------------------- */

/* Reads a metadata cell's JSON: CT_OK with a new cJSON in *out, CT_NOTFOUND if absent. */
static int bt_meta_get(struct bt_store *s, const char *rowkey, const char *col, cJSON **out,
                       struct ct_err *err)
{
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_column c = {wc_bytes_str(BT_META_FAMILY), wc_bytes_str(col), true};
    o.columns = &c;
    o.ncolumns = 1;
    struct wc_result res;
    int rc = wc_get(&s->meta->base, wc_bytes_str(rowkey), &o, &res, err);
    if (rc != CT_OK)
        return ct_err_prefix(err, "read metadata %s", rowkey);
    if (!res.row.ncells) {
        wc_result_release(&res);
        return CT_NOTFOUND;
    }
    *out = cJSON_ParseWithLength((const char *)res.row.cells[0].value.data,
                                 res.row.cells[0].value.len);
    wc_result_release(&res);
    if (!*out || !cJSON_IsObject(*out)) {
        cJSON_Delete(*out);
        return ct_err_set(err, CT_ECORRUPT, "metadata %s is not a JSON object", rowkey);
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(*out, "v");
    if (cJSON_IsNumber(v) && v->valueint > BT_META_VERSION) {
        cJSON_Delete(*out);
        return ct_err_set(err, CT_ECORRUPT,
                          "unsupported metadata version %d in %s (this build reads <= %d)",
                          v->valueint, rowkey, BT_META_VERSION);
    }
    return CT_OK;
}

static int bt_meta_put(struct bt_store *s, const char *rowkey, const char *col, const cJSON *j,
                       struct ct_err *err)
{
    char *text = cJSON_PrintUnformatted(j);
    if (!text)
        return ct_err_set(err, CT_ENOMEM, "out of memory encoding metadata %s", rowkey);
    /* replace every version at once: with a pinned clock (CTSDB_NOW_MS) a new cell may be
     * older than the one it replaces */
    int rc = bt_replace_cell(s->meta, wc_bytes_str(rowkey), wc_bytes_str(BT_META_FAMILY),
                             wc_bytes_str(col), wc_bytes_str(text), err);
    free(text);
    atomic_fetch_add(&s->admin_epoch, 1);
    return rc;
}

static int bt_meta_delete(struct bt_store *s, const char *rowkey, struct ct_err *err)
{
    atomic_fetch_add(&s->admin_epoch, 1);
    /* every cell, whatever clock wrote it (a delete at "now" would spare newer cells) */
    struct wc_mutation m = {WC_OP_DELETE_ROW, wc_bytes_of(NULL, 0), wc_bytes_of(NULL, 0),
                            wc_bytes_of(NULL, 0), WC_TS_LATEST - 1};
    struct wc_row_mutation rm = {wc_bytes_str(rowkey), &m, 1};
    return wc_mutate_row(&s->meta->base, &rm, WC_DURABILITY_USE_DEFAULT, err);
}

static cJSON *bt_desc_to_json(const struct wc_table_desc *d, const struct wc_bytes *splits,
                              size_t nsplits, bool enabled)
{
    cJSON *j = cJSON_CreateObject();
    cJSON *fams = cJSON_AddArrayToObject(j, "families");
    cJSON *sp = cJSON_AddArrayToObject(j, "splits");
    if (!j || !fams || !sp)
        goto fail;
    cJSON_AddNumberToObject(j, "v", BT_META_VERSION);
    cJSON_AddBoolToObject(j, "enabled", enabled);
    cJSON_AddNumberToObject(j, "durability", d->durability);
    cJSON_AddBoolToObject(j, "readonly", d->readonly);
    cJSON_AddBoolToObject(j, "compaction", d->compaction_enabled);
    cJSON_AddNumberToObject(j, "max_filesize", (double)d->max_filesize);
    cJSON_AddNumberToObject(j, "memstore_flushsize", (double)d->memstore_flushsize);
    for (size_t i = 0; i < d->nfamilies; i++) {
        const struct wc_family_desc *f = &d->families[i];
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(fams, o))
            goto fail;
        cJSON_AddStringToObject(o, "name", f->name);
        cJSON_AddNumberToObject(o, "versions", f->versions);
        cJSON_AddNumberToObject(o, "min_versions", f->min_versions);
        cJSON_AddNumberToObject(o, "ttl", (double)f->ttl_s);
        cJSON_AddNumberToObject(o, "keep_deleted", f->keep_deleted);
        cJSON_AddNumberToObject(o, "bloom", f->bloom);
        cJSON_AddNumberToObject(o, "blocksize", f->blocksize);
        cJSON_AddBoolToObject(o, "blockcache", f->blockcache);
        cJSON_AddBoolToObject(o, "in_memory", f->in_memory);
        cJSON_AddNumberToObject(o, "compression", f->compression);
        cJSON_AddNumberToObject(o, "encoding", f->encoding);
    }
    for (size_t i = 0; i < nsplits; i++) {
        char *h = bt_hex(splits[i].data, splits[i].len);
        if (!h || !cJSON_AddItemToArray(sp, cJSON_CreateString(h))) {
            free(h);
            goto fail;
        }
        free(h);
    }
    return j;
fail:
    cJSON_Delete(j);
    return NULL;
}

static double bt_jnum(const cJSON *o, const char *k, double def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : def;
}

static bool bt_jbool(const cJSON *o, const char *k, bool def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : def;
}

/* Overlays the metadata attributes of family f (if the JSON lists it). */
static void bt_json_family(const cJSON *j, struct wc_family_desc *f)
{
    const cJSON *fams = cJSON_GetObjectItemCaseSensitive(j, "families");
    const cJSON *o;
    cJSON_ArrayForEach(o, fams)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
        if (!cJSON_IsString(name) || strcmp(name->valuestring, f->name))
            continue;
        f->versions = (uint32_t)bt_jnum(o, "versions", f->versions);
        f->min_versions = (uint32_t)bt_jnum(o, "min_versions", f->min_versions);
        f->ttl_s = (int64_t)bt_jnum(o, "ttl", (double)f->ttl_s);
        f->keep_deleted = (enum wc_keep_deleted)bt_jnum(o, "keep_deleted", f->keep_deleted);
        f->bloom = (enum wc_bloom)bt_jnum(o, "bloom", f->bloom);
        f->blocksize = (uint32_t)bt_jnum(o, "blocksize", f->blocksize);
        f->blockcache = bt_jbool(o, "blockcache", f->blockcache);
        f->in_memory = bt_jbool(o, "in_memory", f->in_memory);
        f->compression = (enum wc_compression)bt_jnum(o, "compression", f->compression);
        f->encoding = (enum wc_block_encoding)bt_jnum(o, "encoding", f->encoding);
        if (f->min_versions > f->versions)
            f->min_versions = f->versions;
    }
}

/* The split keys recorded in the metadata JSON, as a new array of n keys (bytes owned). */
static int bt_json_splits(const cJSON *j, struct wc_bytes **out, size_t *n, struct ct_err *err)
{
    const cJSON *sp = j ? cJSON_GetObjectItemCaseSensitive(j, "splits") : NULL;
    size_t count = (size_t)cJSON_GetArraySize(sp);
    *out = NULL;
    *n = 0;
    if (!count)
        return CT_OK;
    struct wc_bytes *keys = calloc(count, sizeof(*keys));
    if (!keys)
        return ct_err_set(err, CT_ENOMEM, "out of memory reading split keys");
    const cJSON *h;
    size_t k = 0;
    cJSON_ArrayForEach(h, sp)
    {
        if (!cJSON_IsString(h))
            continue;
        size_t len = strlen(h->valuestring) / 2;
        uint8_t *b = malloc(len ? len : 1);
        if (!b) {
            wc_split_keys_free(keys, k);
            return ct_err_set(err, CT_ENOMEM, "out of memory reading split keys");
        }
        for (size_t i = 0; i < len; i++) {
            unsigned v = 0;
            sscanf(h->valuestring + 2 * i, "%2x", &v);
            b[i] = (uint8_t)v;
        }
        keys[k++] = wc_bytes_of(b, len);
    }
    *out = keys;
    *n = k;
    return CT_OK;
}

/* Describes a table: families from Bigtable (GC rules), attributes from the metadata. When
 * splits is not NULL, *splits and *nsplits receive the split keys recorded in the metadata (see
 * bt_json_splits; freed by the caller with wc_split_keys_free), also on success only. */
static int bt_describe(struct bt_store *s, const char *full, struct wc_table_desc **out,
                       struct wc_bytes **splits, size_t *nsplits, struct ct_err *err)
{
    Btpb__Table *tb = NULL;
    cJSON *j = NULL;
    struct wc_table_desc *d = NULL;
    int rc = bt_get_table(s, full, BTPB__TABLE__VIEW__SCHEMA_VIEW, &tb, err);
    if (rc != CT_OK)
        return rc;
    if (strcmp(full, BT_META_TABLE) != 0) {
        char key[WC_MAX_TABLE_NAME + 8];
        snprintf(key, sizeof(key), BT_META_TABLE_PREFIX "%s", full);
        rc = bt_meta_get(s, key, BT_META_DESC_COLUMN, &j, err);
        if (rc == CT_NOTFOUND)
            j = NULL;
        else if (rc != CT_OK)
            goto fail;
    }
    d = calloc(1, sizeof(*d));
    if (!d) {
        rc = ct_err_set(err, CT_ENOMEM, "out of memory describing %s", full);
        goto fail;
    }
    wc_table_desc_init(d, full);
    d->families = calloc(tb->n_column_families ? tb->n_column_families : 1, sizeof(*d->families));
    if (!d->families) {
        rc = ct_err_set(err, CT_ENOMEM, "out of memory describing %s", full);
        goto fail;
    }
    for (size_t i = 0; i < tb->n_column_families; i++) {
        const Btpb__Table__ColumnFamiliesEntry *e = tb->column_families[i];
        struct wc_family_desc *f = &d->families[d->nfamilies++];
        wc_family_desc_init(f, e->key);
        rc = bt_gc_rule_parse(e->value ? e->value->gc_rule : NULL, f, err);
        if (rc != CT_OK) {
            ct_err_prefix(err, "family %s of %s", e->key, full);
            goto fail;
        }
        if (j)
            bt_json_family(j, f);
    }
    if (d->nfamilies > 1) /* a table without families has no array */
        qsort(d->families, d->nfamilies, sizeof(*d->families), bt_fam_cmp);
    if (j) {
        d->enabled = bt_jbool(j, "enabled", true);
        d->durability = (enum wc_durability)bt_jnum(j, "durability", d->durability);
        d->readonly = bt_jbool(j, "readonly", false);
        d->compaction_enabled = bt_jbool(j, "compaction", true);
        d->max_filesize = (uint64_t)bt_jnum(j, "max_filesize", 0);
        d->memstore_flushsize = (uint64_t)bt_jnum(j, "memstore_flushsize", 0);
    }
    if (splits && (rc = bt_json_splits(j, splits, nsplits, err)) != CT_OK)
        goto fail;
    btpb__table__free_unpacked(tb, NULL);
    cJSON_Delete(j);
    *out = d;
    return CT_OK;
fail:
    btpb__table__free_unpacked(tb, NULL);
    wc_table_desc_free(d);
    cJSON_Delete(j);
    return rc;
}

/* ---- table handles and the family cache ---------------------------------------------- */

static int bt_load_families(struct bt_table *t, struct ct_err *err)
{
    struct wc_family_desc *fams;
    size_t n;
    bool enabled = true, readonly = false;
    uint64_t epoch = atomic_load(&t->s->admin_epoch);
    if (!strcmp(t->full, BT_META_TABLE)) {
        fams = calloc(1, sizeof(*fams));
        if (!fams)
            return ct_err_set(err, CT_ENOMEM, "out of memory opening %s", t->full);
        wc_family_desc_init(fams, BT_META_FAMILY);
        n = 1;
    } else {
        struct wc_table_desc *d;
        int rc = bt_describe(t->s, t->full, &d, NULL, NULL, err);
        if (rc != CT_OK)
            return rc;
        fams = d->families;
        n = d->nfamilies;
        enabled = d->enabled;
        readonly = d->readonly;
        d->families = NULL;
        wc_table_desc_free(d);
    }
    pthread_mutex_lock(&t->mu);
    struct wc_family_desc *old = t->fams;
    t->fams = fams;
    t->nfams = n;
    t->enabled = enabled;
    t->readonly = readonly;
    t->state_epoch = epoch;
    t->state_checked_ns = clock_mono_ns();
    pthread_mutex_unlock(&t->mu);
    free(old);
    return CT_OK;
}

/* Re-reads an open handle's families and flags. The table was there when the handle was opened,
 * so GetTable's NOT_FOUND now means it was dropped (or the backend restarted empty): a failure
 * of the store (CT_EIO, "table missing"), never CT_NOTFOUND, which callers of a get or scan
 * would take for an absent row (the uid layer answered "No such name" for a cached name after
 * the emulator restarted without its tables). */
static int bt_reload_families(struct bt_table *t, struct ct_err *err)
{
    int rc = bt_load_families(t, err);
    if (rc == CT_NOTFOUND) {
        err->code = CT_EIO;
        rc = ct_err_prefix(err, "table missing in Bigtable");
    }
    return rc;
}

int bt_table_refresh(struct bt_table *t, struct ct_err *err)
{
    return bt_reload_families(t, err);
}

int bt_table_families(struct bt_table *t, struct wc_family_desc **out, size_t *n,
                      struct ct_err *err)
{
    pthread_mutex_lock(&t->mu);
    struct wc_family_desc *copy = malloc((t->nfams ? t->nfams : 1) * sizeof(*copy));
    if (copy) {
        memcpy(copy, t->fams, t->nfams * sizeof(*copy));
        *n = t->nfams;
    }
    pthread_mutex_unlock(&t->mu);
    if (!copy)
        return ct_err_set(err, CT_ENOMEM, "out of memory copying families of %s", t->full);
    *out = copy;
    return CT_OK;
}

static bool bt_find_family(struct bt_table *t, struct wc_bytes family, struct wc_family_desc *out)
{
    bool found = false;
    pthread_mutex_lock(&t->mu);
    for (size_t i = 0; i < t->nfams && !found; i++)
        if (strlen(t->fams[i].name) == family.len &&
            !memcmp(t->fams[i].name, family.data, family.len)) {
            *out = t->fams[i];
            found = true;
        }
    pthread_mutex_unlock(&t->mu);
    return found;
}

int bt_table_family(struct bt_table *t, struct wc_bytes family, struct wc_family_desc *out,
                    struct ct_err *err)
{
    if (bt_find_family(t, family, out))
        return CT_OK;
    int rc = bt_table_refresh(t, err);
    if (rc != CT_OK)
        return rc;
    if (bt_find_family(t, family, out))
        return CT_OK;
    /* as long as the whole message can be: a list cut here makes the message overflow the
     * struct ct_err, which marks the cut ("...") */
    char valid[CT_ERR_MSG_MAX];
    size_t o = 0;
    valid[0] = 0;
    pthread_mutex_lock(&t->mu);
    for (size_t i = 0; i < t->nfams && o + 1 < sizeof(valid); i++) {
        int w = snprintf(valid + o, sizeof(valid) - o, "%s%s:*", i ? ", " : "", t->fams[i].name);
        o += w > 0 ? (size_t)w : 0;
    }
    pthread_mutex_unlock(&t->mu);
    return ct_err_set(err, CT_EINVAL,
                      "Unknown column family %.*s in table %s! Valid column names: %s",
                      (int)family.len, (const char *)family.data, t->full, valid);
}

int bt_table_open_id(struct bt_store *s, const char *full, struct bt_table **out,
                     struct ct_err *err)
{
    char id[128];
    int rc = bt_table_id(full, id, sizeof(id), err);
    if (rc != CT_OK)
        return rc;
    struct bt_table *t = calloc(1, sizeof(*t));
    if (!t)
        return ct_err_set(err, CT_ENOMEM, "out of memory opening %s", full);
    t->base.ops = &bt_ops;
    t->base.store = &s->base;
    t->s = s;
    pthread_mutex_init(&t->mu, NULL);
    snprintf(t->full, sizeof(t->full), "%s", full);
    t->is_meta = !strcmp(full, BT_META_TABLE);
    bt_table_path(s, id, t->path, sizeof(t->path));
    char enc[1550];
    bt_url_encode(t->path, enc, sizeof(enc));
    snprintf(t->routing, sizeof(t->routing), "table_name=%s", enc);
    if ((rc = bt_load_families(t, err)) != CT_OK) {
        pthread_mutex_destroy(&t->mu);
        free(t);
        return rc;
    }
    *out = t;
    return CT_OK;
}

static void bt_table_close(struct wc_table *base)
{
    struct bt_table *t = (struct bt_table *)base;
    if (!t)
        return;
    pthread_mutex_destroy(&t->mu);
    free(t->fams);
    free(t);
}

int bt_table_check_enabled(struct bt_table *t, struct ct_err *err)
{
    if (t->is_meta)
        return CT_OK;
    uint64_t epoch = atomic_load(&t->s->admin_epoch);
    pthread_mutex_lock(&t->mu);
    bool fresh = t->state_epoch == epoch &&
                 clock_mono_ns() - t->state_checked_ns < (uint64_t)BT_STATE_RECHECK_MS * 1000000u;
    pthread_mutex_unlock(&t->mu);
    if (!fresh) { /* re-read families and the enabled flag */
        int rc = bt_reload_families(t, err);
        if (rc != CT_OK)
            return rc;
    }
    pthread_mutex_lock(&t->mu);
    bool enabled = t->enabled;
    pthread_mutex_unlock(&t->mu);
    return enabled ? CT_OK : ct_err_set(err, CT_EBUSY, "Table %s is disabled!", t->full);
}

int bt_table_check_writable(struct bt_table *t, struct ct_err *err)
{
    int rc = bt_table_check_enabled(t, err);
    if (rc != CT_OK)
        return rc;
    pthread_mutex_lock(&t->mu);
    bool ro = t->readonly;
    pthread_mutex_unlock(&t->mu);
    return ro ? ct_err_set(err, CT_EINVAL, "Table %s is read-only.", t->full) : CT_OK;
}

static int bt_table_open(struct wc_store *sbase, const char *name, struct wc_table **out,
                         struct ct_err *err)
{
    struct bt_store *s = (struct bt_store *)sbase;
    struct bt_table *t;
    int rc = bt_table_open_id(s, name, &t, err);
    if (rc != CT_OK)
        return rc;
    *out = &t->base;
    return CT_OK;
}

/* ---- namespaces -------------------------------------------------------------------------- */

static bool bt_ns_builtin(const char *ns)
{
    return !strcmp(ns, "default") || !strcmp(ns, "hbase");
}

static int bt_namespace_exists(struct wc_store *sbase, const char *ns, struct ct_err *err)
{
    struct bt_store *s = (struct bt_store *)sbase;
    if (bt_ns_builtin(ns))
        return CT_OK;
    char key[WC_MAX_TABLE_NAME + 8];
    snprintf(key, sizeof(key), BT_META_NS_PREFIX "%s", ns);
    cJSON *j = NULL;
    int rc = bt_meta_get(s, key, BT_META_NS_COLUMN, &j, err);
    cJSON_Delete(j);
    return rc;
}

static int bt_namespace_create_config(struct wc_store *sbase, const char *ns, const char *const *kv,
                                      size_t npairs, struct ct_err *err)
{
    struct bt_store *s = (struct bt_store *)sbase;
    if (bt_ns_builtin(ns))
        return ct_err_set(err, CT_EEXIST, "namespace %s already exists", ns);
    char key[WC_MAX_TABLE_NAME + 8];
    snprintf(key, sizeof(key), BT_META_NS_PREFIX "%s", ns);
    cJSON *j = cJSON_CreateObject();
    cJSON *conf = npairs ? cJSON_CreateArray() : NULL;
    bool ok = j && cJSON_AddNumberToObject(j, "v", BT_META_VERSION) &&
              (!npairs || (conf && cJSON_AddItemToObject(j, "config", conf)));
    if (npairs && !ok)
        cJSON_Delete(conf);
    for (size_t i = 0; ok && i < npairs; i++) {
        cJSON *pair = cJSON_CreateStringArray(kv + 2 * i, 2);
        ok = pair && cJSON_AddItemToArray(conf, pair);
        if (!ok)
            cJSON_Delete(pair);
    }
    char *value = ok ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (!value)
        return ct_err_set(err, CT_ENOMEM, "out of memory encoding namespace %s", ns);
    struct wc_mutation m = {WC_OP_PUT, wc_bytes_str(BT_META_FAMILY),
                            wc_bytes_str(BT_META_NS_COLUMN), wc_bytes_str(value), WC_TS_LATEST};
    struct wc_row_mutation rm = {wc_bytes_str(key), &m, 1};
    bool applied = false;
    int rc = wc_check_and_mutate(&s->meta->base, rm.row, m.family, m.qualifier, NULL, &rm,
                                 WC_DURABILITY_USE_DEFAULT, &applied, err);
    free(value);
    if (rc != CT_OK)
        return rc;
    return applied ? CT_OK : ct_err_set(err, CT_EEXIST, "namespace %s already exists", ns);
}

static int bt_namespace_create(struct wc_store *sbase, const char *ns, struct ct_err *err)
{
    return bt_namespace_create_config(sbase, ns, NULL, 0, err);
}

static int bt_namespace_get_config(struct wc_store *sbase, const char *ns, char ***out,
                                   size_t *npairs, struct ct_err *err)
{
    struct bt_store *s = (struct bt_store *)sbase;
    if (bt_ns_builtin(ns))
        return CT_OK;
    char key[WC_MAX_TABLE_NAME + 8];
    snprintf(key, sizeof(key), BT_META_NS_PREFIX "%s", ns);
    cJSON *j = NULL;
    int rc = bt_meta_get(s, key, BT_META_NS_COLUMN, &j, err);
    if (rc != CT_OK)
        return rc;
    const cJSON *conf = cJSON_GetObjectItemCaseSensitive(j, "config");
    size_t n = cJSON_IsArray(conf) ? (size_t)cJSON_GetArraySize(conf) : 0;
    char **kv = n ? calloc(2 * n, sizeof(char *)) : NULL;
    if (n && !kv)
        rc = ct_err_set(err, CT_ENOMEM, "out of memory reading namespace %s", ns);
    size_t i = 0;
    const cJSON *pair;
    cJSON_ArrayForEach(pair, conf)
    {
        if (rc != CT_OK || i >= n)
            break;
        const cJSON *k = cJSON_GetArrayItem(pair, 0), *v = cJSON_GetArrayItem(pair, 1);
        if (!cJSON_IsString(k) || !cJSON_IsString(v)) {
            rc = ct_err_set(err, CT_ECORRUPT,
                            "metadata %s: a configuration entry is not a "
                            "pair of strings",
                            key);
            break;
        }
        kv[2 * i] = strdup(k->valuestring);
        kv[2 * i + 1] = strdup(v->valuestring);
        if (!kv[2 * i] || !kv[2 * i + 1])
            rc = ct_err_set(err, CT_ENOMEM, "out of memory reading namespace %s", ns);
        i++;
    }
    cJSON_Delete(j);
    if (rc != CT_OK) {
        wc_namespace_config_free(kv, n);
        return rc;
    }
    *out = kv;
    *npairs = n;
    return CT_OK;
}

/* Calls fn(arg, id) for each Bigtable table id of the instance. */
static int bt_list_ids(struct bt_store *s, int (*fn)(void *, const char *), void *arg,
                       struct ct_err *err)
{
    char token[512] = "";
    struct bt_buf resp = {0};
    int rc;
    for (int page = 0; page < 10000; page++) {
        Btpb__ListTablesRequest rq;
        btpb__list_tables_request__init(&rq);
        rq.parent = s->instance;
        rq.view = BTPB__TABLE__VIEW__NAME_ONLY;
        rq.page_token = token;
        if ((rc = bt_admin(s, "ListTables", "parent", s->instance, &rq.base, &resp, err)) != CT_OK)
            break;
        Btpb__ListTablesResponse *r = btpb__list_tables_response__unpack(NULL, resp.len, resp.p);
        if (!r) {
            rc = ct_err_set(err, CT_ECORRUPT, "cannot decode a ListTables answer");
            break;
        }
        int stop = 0;
        for (size_t i = 0; i < r->n_tables && !stop; i++) {
            const char *slash = strrchr(r->tables[i]->name, '/');
            stop = fn(arg, slash ? slash + 1 : r->tables[i]->name);
        }
        snprintf(token, sizeof(token), "%s", r->next_page_token ? r->next_page_token : "");
        btpb__list_tables_response__free_unpacked(r, NULL);
        if (stop || !token[0])
            break;
    }
    bt_buf_free(&resp);
    return rc;
}

struct bt_names {
    char **v;
    size_t n, cap;
    const char *ns_filter; /* only tables of this namespace */
    bool oom;
};

static int bt_names_add(struct bt_names *l, const char *name)
{
    char *c = strdup(name);
    if (!c || bt_grow((void **)&l->v, &l->cap, l->n + 1, sizeof(*l->v))) {
        free(c);
        l->oom = true;
        return 1;
    }
    l->v[l->n++] = c;
    return 0;
}

static int bt_collect_table(void *arg, const char *id)
{
    struct bt_names *l = arg;
    char full[WC_MAX_TABLE_NAME];
    if (!bt_table_full_name(id, full, sizeof(full)) || !strncmp(full, "hbase:", 6))
        return 0;
    if (l->ns_filter) {
        size_t n = strlen(l->ns_filter);
        if (strncmp(full, l->ns_filter, n) || full[n] != ':')
            return 0;
    }
    return bt_names_add(l, full);
}

static int bt_str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void bt_names_free(struct bt_names *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

static int bt_names_emit(struct bt_names *l, wc_name_fn fn, void *arg, struct ct_err *err)
{
    if (l->oom) {
        bt_names_free(l);
        return ct_err_set(err, CT_ENOMEM, "out of memory listing names");
    }
    if (l->n > 1) /* an empty list has no array (qsort's pointer must not be NULL) */
        qsort(l->v, l->n, sizeof(*l->v), bt_str_cmp);
    for (size_t i = 0; i < l->n; i++)
        if ((i == 0 || strcmp(l->v[i], l->v[i - 1])) && fn(arg, l->v[i]))
            break;
    bt_names_free(l);
    return CT_OK;
}

static int bt_namespace_drop(struct wc_store *sbase, const char *ns, struct ct_err *err)
{
    struct bt_store *s = (struct bt_store *)sbase;
    int rc = bt_namespace_exists(sbase, ns, err);
    if (rc == CT_NOTFOUND)
        return ct_err_set(err, CT_NOTFOUND, "namespace %s does not exist", ns);
    if (rc != CT_OK)
        return rc;
    struct bt_names l = {0};
    l.ns_filter = ns;
    if ((rc = bt_list_ids(s, bt_collect_table, &l, err)) != CT_OK) {
        bt_names_free(&l);
        return rc;
    }
    size_t ntables = l.n;
    bt_names_free(&l);
    if (ntables)
        return ct_err_set(err, CT_EBUSY, "namespace %s is not empty (%zu tables)", ns, ntables);
    char key[WC_MAX_TABLE_NAME + 8];
    snprintf(key, sizeof(key), BT_META_NS_PREFIX "%s", ns);
    return bt_meta_delete(s, key, err);
}

static int bt_namespace_list(struct wc_store *sbase, wc_name_fn fn, void *arg, struct ct_err *err)
{
    struct bt_store *s = (struct bt_store *)sbase;
    struct bt_names l = {0};
    bt_names_add(&l, "default");
    bt_names_add(&l, "hbase");
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.row_prefix = wc_bytes_str(BT_META_NS_PREFIX);
    struct wc_scanner *sc;
    int rc = wc_scanner_open(&s->meta->base, &o, &sc, err);
    if (rc != CT_OK) {
        bt_names_free(&l);
        return rc;
    }
    struct wc_row r;
    while ((rc = wc_scanner_next(sc, &r, err)) == CT_OK) {
        char name[WC_MAX_TABLE_NAME];
        size_t plen = strlen(BT_META_NS_PREFIX);
        snprintf(name, sizeof(name), "%.*s", (int)(r.key.len - plen),
                 (const char *)r.key.data + plen);
        bt_names_add(&l, name);
    }
    wc_scanner_close(sc);
    if (rc != CT_NOTFOUND) {
        bt_names_free(&l);
        return rc;
    }
    return bt_names_emit(&l, fn, arg, err);
}

/* ---- table administration -------------------------------------------------------------- */

static int bt_check_namespace(struct bt_store *s, const char *full, struct ct_err *err)
{
    char ns[WC_MAX_TABLE_NAME], qual[WC_MAX_TABLE_NAME];
    int rc = wc_table_name_parse(full, ns, sizeof(ns), qual, sizeof(qual), err);
    if (rc != CT_OK)
        return rc;
    rc = bt_namespace_exists(&s->base, ns, err);
    if (rc == CT_NOTFOUND)
        return ct_err_set(err, CT_NOTFOUND, "namespace %s does not exist", ns);
    return rc;
}

/* CreateTable with d's families and the given split keys. */
static int bt_create(struct bt_store *s, const struct wc_table_desc *d,
                     const struct wc_bytes *splits, size_t nsplits, struct ct_err *err)
{
    char id[128];
    int rc = bt_table_id(d->name, id, sizeof(id), err);
    if (rc != CT_OK)
        return rc;
    size_t nf = d->nfamilies;
    struct bt_gc_mem *gc = calloc(nf ? nf : 1, sizeof(*gc));
    Btpb__ColumnFamily *cfs = calloc(nf ? nf : 1, sizeof(*cfs));
    Btpb__Table__ColumnFamiliesEntry *ents = calloc(nf ? nf : 1, sizeof(*ents));
    Btpb__Table__ColumnFamiliesEntry **eptr = calloc(nf ? nf : 1, sizeof(*eptr));
    Btpb__CreateTableRequest__Split *sp = calloc(nsplits ? nsplits : 1, sizeof(*sp));
    Btpb__CreateTableRequest__Split **spp = calloc(nsplits ? nsplits : 1, sizeof(*spp));
    if (!gc || !cfs || !ents || !eptr || !sp || !spp) {
        rc = ct_err_set(err, CT_ENOMEM, "out of memory creating %s", d->name);
        goto done;
    }
    Btpb__Table tb;
    btpb__table__init(&tb);
    tb.granularity = BTPB__TABLE__TIMESTAMP_GRANULARITY__MILLIS;
    for (size_t i = 0; i < nf; i++) {
        btpb__column_family__init(&cfs[i]);
        cfs[i].gc_rule = bt_gc_rule_build(&d->families[i], &gc[i]);
        btpb__table__column_families_entry__init(&ents[i]);
        ents[i].key = (char *)d->families[i].name;
        ents[i].value = &cfs[i];
        eptr[i] = &ents[i];
    }
    tb.n_column_families = nf;
    tb.column_families = eptr;
    for (size_t i = 0; i < nsplits; i++) {
        btpb__create_table_request__split__init(&sp[i]);
        sp[i].key.data = (uint8_t *)splits[i].data;
        sp[i].key.len = splits[i].len;
        spp[i] = &sp[i];
    }
    Btpb__CreateTableRequest rq;
    btpb__create_table_request__init(&rq);
    rq.parent = s->instance;
    rq.table_id = id;
    rq.table = &tb;
    rq.n_initial_splits = nsplits;
    rq.initial_splits = spp;
    rc = bt_admin(s, "CreateTable", "parent", s->instance, &rq.base, NULL, err);
    if (rc == CT_EEXIST)
        rc = ct_err_set(err, CT_EEXIST, "Table %s already exists", d->name);
done:
    free(gc);
    free(cfs);
    free(ents);
    free(eptr);
    free(sp);
    free(spp);
    return rc;
}

static int bt_write_meta(struct bt_store *s, const struct wc_table_desc *d,
                         const struct wc_bytes *splits, size_t nsplits, bool enabled,
                         struct ct_err *err)
{
    cJSON *j = bt_desc_to_json(d, splits, nsplits, enabled);
    if (!j)
        return ct_err_set(err, CT_ENOMEM, "out of memory encoding the metadata of %s", d->name);
    char key[WC_MAX_TABLE_NAME + 8];
    snprintf(key, sizeof(key), BT_META_TABLE_PREFIX "%s", d->name);
    int rc = bt_meta_put(s, key, BT_META_DESC_COLUMN, j, err);
    cJSON_Delete(j);
    return rc;
}

/* Refuses family attributes whose meaning Bigtable cannot give: KEEP_DELETED_CELLS needs delete
 * markers, and Bigtable deletes cells at once. */
static int bt_check_families(const struct wc_table_desc *d, struct ct_err *err)
{
    for (size_t i = 0; i < d->nfamilies; i++)
        if (d->families[i].keep_deleted != WC_KEEP_DELETED_FALSE)
            return ct_err_set(err, CT_EUNSUPPORTED,
                              "family %s of %s: KEEP_DELETED_CELLS needs delete markers, which "
                              "Bigtable does not have (it deletes cells at once)",
                              d->families[i].name, d->name);
    return CT_OK;
}

static int bt_table_create(struct wc_store *sbase, const struct wc_table_desc *d,
                           const struct wc_bytes *splits, size_t nsplits, struct ct_err *err)
{
    struct bt_store *s = (struct bt_store *)sbase;
    int rc = bt_check_families(d, err);
    if (rc == CT_OK)
        rc = bt_check_namespace(s, d->name, err);
    if (rc != CT_OK)
        return rc;
    for (size_t i = 0; i < nsplits; i++)
        if (splits[i].len > BT_MAX_ROW_KEY_BYTES)
            return ct_err_set(err, CT_ELIMIT,
                              "split key of %zu bytes exceeds Bigtable's %d-byte "
                              "row key limit",
                              splits[i].len, BT_MAX_ROW_KEY_BYTES);
    if ((rc = bt_create(s, d, splits, nsplits, err)) != CT_OK)
        return rc;
    return bt_write_meta(s, d, splits, nsplits, true, err);
}

static int bt_table_describe(struct wc_store *sbase, const char *name, struct wc_table_desc **out,
                             struct ct_err *err)
{
    return bt_describe((struct bt_store *)sbase, name, out, NULL, NULL, err);
}

static int bt_table_alter(struct wc_store *sbase, const struct wc_table_desc *d, struct ct_err *err)
{
    struct bt_store *s = (struct bt_store *)sbase;
    struct wc_table_desc *cur;
    struct wc_bytes *splits = NULL;
    size_t nsplits = 0;
    int rc = bt_check_families(d, err);
    if (rc != CT_OK)
        return rc;
    if ((rc = bt_describe(s, d->name, &cur, &splits, &nsplits, err)) != CT_OK)
        return rc;
    size_t nmax = d->nfamilies + cur->nfamilies;
    struct bt_gc_mem *gc = calloc(nmax, sizeof(*gc));
    Btpb__ColumnFamily *cfs = calloc(nmax, sizeof(*cfs));
    Btpb__ModifyColumnFamiliesRequest__Modification *mods = calloc(nmax, sizeof(*mods));
    Btpb__ModifyColumnFamiliesRequest__Modification **mp = calloc(nmax, sizeof(*mp));
    size_t nm = 0;
    if (!gc || !cfs || !mods || !mp) {
        rc = ct_err_set(err, CT_ENOMEM, "out of memory altering %s", d->name);
        goto done;
    }
    for (size_t i = 0; i < d->nfamilies; i++) {
        const struct wc_family_desc *f = &d->families[i];
        bool exists = false;
        for (size_t k = 0; k < cur->nfamilies; k++)
            exists |= !strcmp(cur->families[k].name, f->name);
        btpb__modify_column_families_request__modification__init(&mods[nm]);
        btpb__column_family__init(&cfs[nm]);
        cfs[nm].gc_rule = bt_gc_rule_build(f, &gc[nm]);
        mods[nm].id = (char *)f->name;
        if (exists) {
            mods[nm].mod_case = BTPB__MODIFY_COLUMN_FAMILIES_REQUEST__MODIFICATION__MOD_UPDATE;
            mods[nm].update = &cfs[nm];
        } else {
            mods[nm].mod_case = BTPB__MODIFY_COLUMN_FAMILIES_REQUEST__MODIFICATION__MOD_CREATE;
            mods[nm].create = &cfs[nm];
        }
        mp[nm] = &mods[nm];
        nm++;
    }
    for (size_t k = 0; k < cur->nfamilies; k++) {
        bool kept = false;
        for (size_t i = 0; i < d->nfamilies; i++)
            kept |= !strcmp(cur->families[k].name, d->families[i].name);
        if (kept)
            continue;
        btpb__modify_column_families_request__modification__init(&mods[nm]);
        mods[nm].id = cur->families[k].name;
        mods[nm].mod_case = BTPB__MODIFY_COLUMN_FAMILIES_REQUEST__MODIFICATION__MOD_DROP;
        mods[nm].drop = 1;
        mp[nm] = &mods[nm];
        nm++;
    }
    char path[512];
    if ((rc = bt_table_path_of(s, d->name, path, sizeof(path), err)) != CT_OK)
        goto done;
    Btpb__ModifyColumnFamiliesRequest rq;
    btpb__modify_column_families_request__init(&rq);
    rq.name = path;
    rq.n_modifications = nm;
    rq.modifications = mp;
    rc = bt_admin(s, "ModifyColumnFamilies", "name", path, &rq.base, NULL, err);
    if (rc != CT_OK)
        goto done;
    rc = bt_write_meta(s, d, splits, nsplits, cur->enabled, err);
done:
    free(gc);
    free(cfs);
    free(mods);
    free(mp);
    wc_split_keys_free(splits, nsplits);
    wc_table_desc_free(cur);
    return rc;
}

static int bt_table_exists(struct wc_store *sbase, const char *name, struct ct_err *err)
{
    Btpb__Table *tb;
    int rc = bt_get_table((struct bt_store *)sbase, name, BTPB__TABLE__VIEW__NAME_ONLY, &tb, err);
    if (rc == CT_OK)
        btpb__table__free_unpacked(tb, NULL);
    return rc;
}

static int bt_table_list(struct wc_store *sbase, wc_name_fn fn, void *arg, struct ct_err *err)
{
    struct bt_names l = {0};
    int rc = bt_list_ids((struct bt_store *)sbase, bt_collect_table, &l, err);
    if (rc != CT_OK) {
        bt_names_free(&l);
        return rc;
    }
    return bt_names_emit(&l, fn, arg, err);
}

static int bt_set_enabled(struct wc_store *sbase, const char *name, bool enabled,
                          struct ct_err *err)
{
    struct bt_store *s = (struct bt_store *)sbase;
    struct wc_table_desc *d;
    struct wc_bytes *splits;
    size_t nsplits;
    int rc = bt_describe(s, name, &d, &splits, &nsplits, err);
    if (rc != CT_OK)
        return rc;
    rc = bt_write_meta(s, d, splits, nsplits, enabled, err);
    wc_split_keys_free(splits, nsplits);
    wc_table_desc_free(d);
    return rc;
}

static int bt_table_enable(struct wc_store *s, const char *name, struct ct_err *err)
{
    return bt_set_enabled(s, name, true, err);
}

static int bt_table_disable(struct wc_store *s, const char *name, struct ct_err *err)
{
    return bt_set_enabled(s, name, false, err);
}

static int bt_delete_table(struct bt_store *s, const char *name, struct ct_err *err)
{
    char path[512];
    int rc = bt_table_path_of(s, name, path, sizeof(path), err);
    if (rc != CT_OK)
        return rc;
    Btpb__DeleteTableRequest rq;
    btpb__delete_table_request__init(&rq);
    rq.name = path;
    rc = bt_admin(s, "DeleteTable", "name", path, &rq.base, NULL, err);
    if (rc == CT_NOTFOUND)
        return ct_err_set(err, CT_NOTFOUND, "Table %s does not exist.", name);
    return rc;
}

static int bt_table_drop(struct wc_store *sbase, const char *name, struct ct_err *err)
{
    struct bt_store *s = (struct bt_store *)sbase;
    struct wc_table_desc *d;
    int rc = bt_describe(s, name, &d, NULL, NULL, err);
    if (rc != CT_OK)
        return rc;
    bool enabled = d->enabled;
    wc_table_desc_free(d);
    if (enabled)
        return ct_err_set(err, CT_EBUSY, "Table %s is enabled. Disable it first.", name);
    if ((rc = bt_delete_table(s, name, err)) != CT_OK)
        return rc;
    char key[WC_MAX_TABLE_NAME + 8];
    snprintf(key, sizeof(key), BT_META_TABLE_PREFIX "%s", name);
    return bt_meta_delete(s, key, err);
}

static int bt_table_truncate(struct wc_store *sbase, const char *name, bool preserve_splits,
                             struct ct_err *err)
{
    struct bt_store *s = (struct bt_store *)sbase;
    struct wc_table_desc *d;
    struct wc_bytes *splits = NULL;
    size_t nsplits = 0;
    int rc = bt_describe(s, name, &d, preserve_splits ? &splits : NULL, &nsplits, err);
    if (rc != CT_OK)
        return rc;
    if (preserve_splits) {
        /* Bigtable keeps the table's tablets: drop every row in place */
        char path[512];
        if ((rc = bt_table_path_of(s, name, path, sizeof(path), err)) != CT_OK)
            goto done;
        Btpb__DropRowRangeRequest rq;
        btpb__drop_row_range_request__init(&rq);
        rq.name = path;
        rq.target_case = BTPB__DROP_ROW_RANGE_REQUEST__TARGET_DELETE_ALL_DATA_FROM_TABLE;
        rq.delete_all_data_from_table = 1;
        rc = bt_admin(s, "DropRowRange", "name", path, &rq.base, NULL, err);
        if (rc == CT_OK)
            rc = bt_write_meta(s, d, splits, nsplits, true, err);
    } else {
        /* HBase 2.x truncate: recreate the table without its split keys */
        if ((rc = bt_delete_table(s, name, err)) == CT_OK &&
            (rc = bt_create(s, d, NULL, 0, err)) == CT_OK)
            rc = bt_write_meta(s, d, NULL, 0, true, err);
    }
done:
    wc_split_keys_free(splits, nsplits);
    wc_table_desc_free(d);
    return rc;
}

static int bt_table_flush(struct wc_store *s, const char *name, struct ct_err *err)
{
    /* Bigtable has no memstore to flush: only check the table exists */
    return bt_table_exists(s, name, err);
}

static int bt_table_compact(struct wc_store *s, const char *name, const char *family, bool major,
                            struct ct_err *err)
{
    (void)family;
    (void)major; /* Bigtable compacts (and collects garbage) on its own schedule */
    return bt_table_exists(s, name, err);
}

static int bt_table_split(struct wc_store *s, const char *name, const struct wc_bytes *key,
                          struct ct_err *err)
{
    (void)s;
    (void)key;
    return ct_err_set(err, CT_EUNSUPPORTED,
                      "cannot split %s: Bigtable splits tablets itself (pre-split at create)",
                      name);
}

static int bt_table_regions(struct wc_store *sbase, const char *name, struct wc_region_info **out,
                            size_t *n, struct ct_err *err)
{
    struct bt_store *s = (struct bt_store *)sbase;
    struct wc_table_desc *d;
    struct wc_bytes *splits;
    size_t nsplits;
    int rc = bt_describe(s, name, &d, &splits, &nsplits, err);
    if (rc != CT_OK)
        return rc;
    wc_table_desc_free(d);
    struct wc_region_info *r = calloc(nsplits + 1, sizeof(*r));
    if (!r) {
        wc_split_keys_free(splits, nsplits);
        return ct_err_set(err, CT_ENOMEM, "out of memory listing regions of %s", name);
    }
    for (size_t i = 0; i <= nsplits; i++) {
        r[i].id = i + 1;
        if (i > 0) {
            r[i].start_key = malloc(splits[i - 1].len);
            if (r[i].start_key)
                memcpy(r[i].start_key, splits[i - 1].data, splits[i - 1].len);
            r[i].start_len = splits[i - 1].len;
        }
        if (i < nsplits) {
            r[i].end_key = malloc(splits[i].len);
            if (r[i].end_key)
                memcpy(r[i].end_key, splits[i].data, splits[i].len);
            r[i].end_len = splits[i].len;
        }
        if ((i > 0 && !r[i].start_key) || (i < nsplits && !r[i].end_key)) {
            wc_region_info_free(r, nsplits + 1);
            wc_split_keys_free(splits, nsplits);
            return ct_err_set(err, CT_ENOMEM, "out of memory listing regions of %s", name);
        }
    }
    wc_split_keys_free(splits, nsplits);
    *out = r;
    *n = nsplits + 1;
    return CT_OK;
}

static int bt_store_stats(struct wc_store *s, struct wc_store_stats *out, struct ct_err *err)
{
    (void)s;
    (void)err;
    memset(out, 0, sizeof(*out)); /* the service keeps no client-visible cache or files */
    return CT_OK;
}

static int bt_background_error(struct wc_store *s, struct ct_err *err)
{
    (void)s;
    ct_err_clear(err);
    return CT_OK;
}

static void bt_interrupt(struct wc_store *sbase)
{
    bt_rpc_interrupt(((struct bt_store *)sbase)->rpc);
}

/* ---- store ------------------------------------------------------------------------------ */

static void bt_close(struct wc_store *sbase)
{
    struct bt_store *s = (struct bt_store *)sbase;
    if (!s)
        return;
    if (s->meta)
        bt_table_close(&s->meta->base);
    bt_rpc_close(s->rpc);
    free(s);
}

/* Makes sure the metadata table exists (created by whichever process comes first). */
static int bt_ensure_meta(struct bt_store *s, struct ct_err *err)
{
    int rc = bt_table_exists(&s->base, BT_META_TABLE, err);
    if (rc != CT_NOTFOUND)
        return rc;
    struct wc_family_desc f;
    wc_family_desc_init(&f, BT_META_FAMILY);
    struct wc_table_desc d;
    wc_table_desc_init(&d, BT_META_TABLE);
    d.families = &f;
    d.nfamilies = 1;
    rc = bt_create(s, &d, NULL, 0, err);
    return rc == CT_EEXIST ? CT_OK : rc;
}

int bigtable_store_open(const struct wc_options *o, struct wc_store **out, struct ct_err *err)
{
    const char *emu = getenv("BIGTABLE_EMULATOR_HOST");
    bool emulator = emu && *emu;
    const char *project = o->bt_project && *o->bt_project ? o->bt_project : NULL;
    const char *instance = o->bt_instance && *o->bt_instance ? o->bt_instance : NULL;
    if (emulator) {
        project = project ? project : "ctsdb";
        instance = instance ? instance : "ctsdb";
    }
    if (!project || !instance)
        return ct_err_set(err, CT_EINVAL,
                          "the bigtable backend needs a project and an instance "
                          "(or BIGTABLE_EMULATOR_HOST for the emulator)");
    struct bt_store *s = calloc(1, sizeof(*s));
    if (!s)
        return ct_err_set(err, CT_ENOMEM, "out of memory opening a bigtable store");
    s->base.ops = &bt_ops;
    s->deadline_ms = o->bt_deadline_ms > 0 ? o->bt_deadline_ms : 30000;
    snprintf(s->instance, sizeof(s->instance), "projects/%s/instances/%s", project, instance);
    struct bt_rpc_options ro;
    memset(&ro, 0, sizeof(ro));
    ro.insecure = emulator;
    ro.data_target = emulator                                      ? emu
                     : o->bt_data_endpoint && *o->bt_data_endpoint ? o->bt_data_endpoint
                                                                   : "bigtable.googleapis.com:443";
    ro.admin_target = emulator ? emu
                      : o->bt_admin_endpoint && *o->bt_admin_endpoint
                          ? o->bt_admin_endpoint
                          : "bigtableadmin.googleapis.com:443";
    ro.sa_key_path = o->bt_credentials;
    int rc = bt_rpc_open(&ro, &s->rpc, err);
    if (rc != CT_OK) {
        free(s);
        return rc;
    }
    if ((rc = bt_ensure_meta(s, err)) != CT_OK ||
        (rc = bt_table_open_id(s, BT_META_TABLE, &s->meta, err)) != CT_OK) {
        ct_err_prefix(err, "cannot use Bigtable instance %s at %s", s->instance, ro.data_target);
        bt_close(&s->base);
        return rc;
    }
    *out = &s->base;
    return CT_OK;
}

static const struct wc_backend_ops bt_ops = {
    .name = "bigtable",
    .close = bt_close,
    .background_error = bt_background_error,
    .interrupt = bt_interrupt,
    .namespace_create = bt_namespace_create,
    .namespace_drop = bt_namespace_drop,
    .namespace_exists = bt_namespace_exists,
    .namespace_list = bt_namespace_list,
    .namespace_create_config = bt_namespace_create_config,
    .namespace_get_config = bt_namespace_get_config,
    .table_create = bt_table_create,
    .table_alter = bt_table_alter,
    .table_describe = bt_table_describe,
    .table_exists = bt_table_exists,
    .table_list = bt_table_list,
    .table_enable = bt_table_enable,
    .table_disable = bt_table_disable,
    .table_drop = bt_table_drop,
    .table_truncate = bt_table_truncate,
    .table_flush = bt_table_flush,
    .table_compact = bt_table_compact,
    .table_split = bt_table_split,
    .table_regions = bt_table_regions,
    .store_stats = bt_store_stats,
    .table_open = bt_table_open,
    .table_close = bt_table_close,
    .mutate_batch = bt_mutate_batch,
    .increment = bt_increment,
    .check_and_mutate = bt_check_and_mutate,
    .scanner_open = bt_scanner_open,
    .scanner_next = bt_scanner_next,
    .scanner_close = bt_scanner_close,
    .set_compact_hook = NULL,
    .snapshot_alternative = "use Bigtable backups",
};
