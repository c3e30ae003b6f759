/* uid.c - UID assignment and lookup on the tsdb-uid table, with a bounded striped cache.
 *
 * Invariants: (1) a forward row (name -> id) is only ever created by check-and-put against an
 * empty cell, so a name gets at most one id; (2) a reverse row (id -> name) is only ever created
 * by check-and-put against an empty cell after the id came from the atomic counter (or a random
 * draw), so an id gets at most one name; (3) the reverse row is written before the forward row,
 * so every visible forward mapping has its reverse mapping; (4) the cache holds only mappings
 * read from or written to the table; each direction of each kind is a direct-mapped table of
 * cache_entries slots, so it never grows beyond that; (5) within one uid service, assignments of
 * the same name are serialised (assign_mu stripe of the name's hash) and the forward row is read
 * again under the stripe, so threads of one process never race each other: no id is drawn for
 * a name that already has one and no reverse row is left behind; (6) across services (two TSDs
 * on one Bigtable instance) the forward check-and-put still decides; the loser deletes its own
 * reverse row (check-and-delete: only if it still names the loser's name), so only a crash
 * between the two writes leaves an orphaned reverse row, which fsck reports as benign. The
 * loser's id stays unused (the counter cannot be given back). (7) With cache_bytes set, the
 * names held by all the caches together cost at most cache_bytes (uid_name_cost(), malloc's
 * size of each copy) once every put has returned: a put past it empties slots of its own cache
 * in turn (a clock hand) until they fit; the slot tables themselves are 6 x cache_entries x 24
 * bytes, allocated at open.
 * (8) Generation: the counter row's cell id:UID_GENERATION_QUALIFIER holds 8 random bytes written
 * once per table life (check-and-put against an empty cell: by create-tables, or by the first
 * assignment of a table without one). The service remembers the value it saw (0 = none); when
 * a check (every generation_check_ms, before the lookup that finds it due, and after every
 * assignment conflict) reads another value or none, the uid table was recreated or emptied
 * under it: both cache directions are emptied and drops counts it, so mappings of a former
 * table life are never handed out again after the check. A check that fails with CT_EIO (the
 * table is missing) drops the same way; one that fails with CT_EIO or CT_EUNAVAIL is due again
 * at the next lookup, not a period later.
 * Locking: each cache table is split in UID_STRIPES stripes, each guarded by its own mutex;
 * assign_mu[k][stripe] is taken before any cache stripe and held across the store calls of one
 * assignment; gen_mu serialises generation reads and writes: taken after assign_mu, before the
 * cache stripes (a drop). */
#include "schema/uid.h"

#include <locale.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wctype.h>

#include "schema/rowkey.h"
#include "storage/clock.h"
#include "storage/coding.h"
#include "storage/hash.h"

#define UID_STRIPES      16
#define UID_ASSIGN_TRIES 16

static const char *const uid_qualifiers[UID_NKINDS] = {"metrics", "tagk", "tagv"};
static const char *const uid_names[UID_NKINDS] = {"metric", "tagk", "tagv"};

const char *uid_kind_qualifier(enum uid_kind k)
{
    return uid_qualifiers[k];
}

int uid_kind_parse(const char *s, enum uid_kind *out, struct ct_err *err)
{
    if (!strcmp(s, "metric") || !strcmp(s, "metrics"))
        *out = UID_METRIC;
    else if (!strcmp(s, "tagk"))
        *out = UID_TAGK;
    else if (!strcmp(s, "tagv"))
        *out = UID_TAGV;
    else
        return ct_err_set(err, CT_EINVAL, "unknown uid kind '%s' (metrics, tagk or tagv)", s);
    return CT_OK;
}

/* ---- name rules --------------------------------------------------------------------------- */

static pthread_once_t uid_locale_once = PTHREAD_ONCE_INIT;
static locale_t uid_utf8_locale; /* immutable after uid_locale_once */

static void uid_locale_init(void)
{
    uid_utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

static bool uid_is_letter(uint32_t cp)
{
    pthread_once(&uid_locale_once, uid_locale_init);
    if (uid_utf8_locale)
        return iswalpha_l((wint_t)cp, uid_utf8_locale) != 0;
    return false;
}

int uid_name_check(const char *what, const char *name, size_t len, const char *allow_special,
                   struct ct_err *err)
{
    if (!name)
        return ct_err_set(err, CT_EINVAL, "Invalid %s: null", what);
    if (len == 0)
        return ct_err_set(err, CT_EINVAL, "Invalid %s: empty string", what);
    if (len > UID_MAX_NAME)
        return ct_err_set(err, CT_EINVAL, "Invalid %s (\"%.40s...\"): longer than %d bytes", what,
                          name, UID_MAX_NAME);
    const unsigned char *p = (const unsigned char *)name;
    for (size_t i = 0; i < len;) {
        unsigned char c = p[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '/') {
            i++;
            continue;
        }
        uint32_t cp;
        size_t n = coding_utf8_decode(p + i, len - i, &cp);
        if (n == 0)
            return ct_err_set(err, CT_EINVAL,
                              "Invalid %s (\"%.*s\"): illegal character: byte 0x%02x is not "
                              "UTF-8",
                              what, (int)len, name, c);
        bool special = false;
        if (allow_special && *allow_special) {
            char buf[5] = {0};
            memcpy(buf, p + i, n);
            special = strstr(allow_special, buf) != NULL;
        }
        if (!special && (n == 1 || !uid_is_letter(cp)))
            return ct_err_set(err, CT_EINVAL, "Invalid %s (\"%.*s\"): illegal character: %.*s",
                              what, (int)len, name, (int)n, name + i);
        i += n;
    }
    return CT_OK;
}

/* ---- cache ------------------------------------------------------------------------------- */

struct uid_slot {
    char *name; /* NULL = empty slot */
    size_t len;
    uint64_t id;
};

struct uid_cache {
    struct uid_slot *slots; /* nslots */
    size_t nslots;
    pthread_mutex_t mu[UID_STRIPES]; /* stripe of slot i: i % UID_STRIPES */
    atomic_size_t used;              /* slots holding a name (changed under the slot's stripe) */
    /* the names' bytes of every cache of the service (uid_options.cache_bytes; (7)) */
    atomic_size_t *name_bytes;
    size_t name_cap; /* 0 = no bound in bytes */
    atomic_size_t hand; /* the next slot the byte bound empties */
};

/* What a cached name costs in malloc's heap: its copy with the terminator, malloc's 8-byte
 * header, rounded up to malloc's 16-byte chunks (at least 32). */
static size_t uid_name_cost(size_t len)
{
    size_t n = (len + 1 + 8 + 15) & ~(size_t)15;
    return n < 32 ? 32 : n;
}

struct uid_kind_state {
    struct uid_cache by_name, by_id;
    atomic_uint_fast64_t hits, misses, assigned;
};

struct uid {
    struct wc_table *t;
    struct uid_options o;
    char *allow_special;
    struct uid_kind_state k[UID_NKINDS];
    pthread_mutex_t rnd_mu; /* guards rnd */
    uint64_t rnd;
    pthread_mutex_t assign_mu[UID_NKINDS][UID_STRIPES]; /* (5): one assignment of a name */
    atomic_size_t name_bytes; /* uid_name_cost() of every cached name, all caches (7) */
    uid_name_fn assigned_fn; /* uid_set_assigned_hook (set before any assignment) */
    void *assigned_arg;
    /* (8) */
    pthread_mutex_t gen_mu;
    _Atomic uint64_t gen;        /* the generation last seen; 0 = none */
    _Atomic uint64_t gen_due_ns; /* the next scheduled check (clock_mono_ns) */
    _Atomic uint64_t drops;      /* cache drops (uid_cache_drop and generation changes) */
};

/* The cache's and the assignment stripes' hashes: storage/hash.h's, as every in-memory table's. */
static uint64_t uid_hash_name(const char *s, size_t n)
{
    return hash_bytes(s, n, 0);
}

static uint64_t uid_hash_id(uint64_t id)
{
    return hash_bytes(&id, sizeof(id), 0);
}

static int uid_cache_init(struct uid_cache *c, size_t n, atomic_size_t *name_bytes, size_t name_cap)
{
    c->nslots = n;
    atomic_init(&c->used, 0);
    c->name_bytes = name_bytes;
    c->name_cap = name_cap;
    atomic_init(&c->hand, 0);
    c->slots = n ? calloc(n, sizeof(*c->slots)) : NULL;
    if (n && !c->slots)
        return -1;
    for (int i = 0; i < UID_STRIPES; i++)
        pthread_mutex_init(&c->mu[i], NULL);
    return 0;
}

/* Empties a slot (its stripe held). */
static void uid_slot_clear(struct uid_cache *c, struct uid_slot *s)
{
    if (!s->name)
        return;
    free(s->name);
    s->name = NULL;
    atomic_fetch_sub_explicit(&c->used, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(c->name_bytes, uid_name_cost(s->len), memory_order_relaxed);
}

/* Empties every slot, each stripe's slots under one hold of its mutex. */
static void uid_cache_clear(struct uid_cache *c)
{
    for (size_t k = 0; k < UID_STRIPES && k < c->nslots; k++) {
        pthread_mutex_lock(&c->mu[k]);
        for (size_t i = k; i < c->nslots; i += UID_STRIPES)
            uid_slot_clear(c, &c->slots[i]);
        pthread_mutex_unlock(&c->mu[k]);
    }
}

static void uid_cache_destroy(struct uid_cache *c)
{
    uid_cache_clear(c);
    free(c->slots);
    for (int i = 0; i < UID_STRIPES; i++)
        pthread_mutex_destroy(&c->mu[i]);
}

/* Looks a name up; true and *id on a hit. */
static bool uid_cache_find_name(struct uid_cache *c, const char *name, size_t len, uint64_t *id)
{
    if (!c->nslots)
        return false;
    size_t i = uid_hash_name(name, len) % c->nslots;
    bool hit = false;
    pthread_mutex_lock(&c->mu[i % UID_STRIPES]);
    struct uid_slot *s = &c->slots[i];
    if (s->name && s->len == len && !memcmp(s->name, name, len)) {
        *id = s->id;
        hit = true;
    }
    pthread_mutex_unlock(&c->mu[i % UID_STRIPES]);
    return hit;
}

/* Looks an id up; copies the name into buf (cap) on a hit. Returns 1 hit, 0 miss, -1 too small. */
static int uid_cache_find_id(struct uid_cache *c, uint64_t id, char *buf, size_t cap, size_t *len)
{
    if (!c->nslots)
        return 0;
    size_t i = uid_hash_id(id) % c->nslots;
    int rc = 0;
    pthread_mutex_lock(&c->mu[i % UID_STRIPES]);
    struct uid_slot *s = &c->slots[i];
    if (s->name && s->id == id) {
        if (s->len + 1 > cap) {
            rc = -1;
        } else {
            memcpy(buf, s->name, s->len);
            buf[s->len] = 0;
            *len = s->len;
            rc = 1;
        }
    }
    pthread_mutex_unlock(&c->mu[i % UID_STRIPES]);
    return rc;
}

static void uid_cache_put(struct uid_cache *c, bool by_name, const char *name, size_t len,
                          uint64_t id)
{
    if (!c->nslots)
        return;
    size_t i = (by_name ? uid_hash_name(name, len) : uid_hash_id(id)) % c->nslots;
    char *copy = malloc(len + 1); /* per cache miss, never per datapoint */
    if (!copy)
        return; /* a cache is allowed to forget */
    memcpy(copy, name, len);
    copy[len] = 0;
    pthread_mutex_lock(&c->mu[i % UID_STRIPES]);
    struct uid_slot *s = &c->slots[i];
    uid_slot_clear(c, s);
    atomic_fetch_add_explicit(&c->used, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(c->name_bytes, uid_name_cost(len), memory_order_relaxed);
    s->name = copy;
    s->len = len;
    s->id = id;
    pthread_mutex_unlock(&c->mu[i % UID_STRIPES]);
    /* (7): past the bound, empty this cache's slots in turn (one stripe held at a time) until
     * the names fit again or every slot was visited once (the one just put included) */
    for (size_t step = 0; c->name_cap && step < c->nslots &&
                          atomic_load_explicit(c->name_bytes, memory_order_relaxed) > c->name_cap;
         step++) {
        size_t j = atomic_fetch_add_explicit(&c->hand, 1, memory_order_relaxed) % c->nslots;
        pthread_mutex_lock(&c->mu[j % UID_STRIPES]);
        uid_slot_clear(c, &c->slots[j]);
        pthread_mutex_unlock(&c->mu[j % UID_STRIPES]);
    }
}

/* Caches a name and its id both ways (the kind's by-name and by-id caches). */
static void uid_cache_pair(struct uid_kind_state *ks, const char *name, size_t len, uint64_t id)
{
    uid_cache_put(&ks->by_name, true, name, len, id);
    uid_cache_put(&ks->by_id, false, name, len, id);
}

static void uid_cache_forget(struct uid *u, enum uid_kind k, const char *name, size_t len,
                             uint64_t id)
{
    struct uid_cache *cs[2] = {&u->k[k].by_name, &u->k[k].by_id};
    for (int d = 0; d < 2; d++) {
        struct uid_cache *c = cs[d];
        if (!c->nslots)
            continue;
        size_t i = (d == 0 ? uid_hash_name(name, len) : uid_hash_id(id)) % c->nslots;
        pthread_mutex_lock(&c->mu[i % UID_STRIPES]);
        uid_slot_clear(c, &c->slots[i]);
        pthread_mutex_unlock(&c->mu[i % UID_STRIPES]);
    }
}

/* ---- handle ------------------------------------------------------------------------------- */

void uid_options_init(struct uid_options *o)
{
    memset(o, 0, sizeof(*o));
    for (int k = 0; k < UID_NKINDS; k++)
        o->width[k] = 3;
    o->cache_entries = 1u << 16;
}

int uid_open(struct wc_table *t, const struct uid_options *o, struct uid **out, struct ct_err *err)
{
    for (int k = 0; k < UID_NKINDS; k++)
        if (o->width[k] < 1 || o->width[k] > 8)
            return ct_err_set(err, CT_EINVAL, "tsd.storage.uid.width.%s must be 1..8, not %u",
                              uid_names[k], o->width[k]);
    struct uid *u = calloc(1, sizeof(*u));
    if (!u)
        return ct_err_set(err, CT_ENOMEM, "out of memory for the uid service");
    u->t = t;
    atomic_init(&u->name_bytes, 0);
    u->o = *o;
    pthread_mutex_init(&u->rnd_mu, NULL);
    pthread_mutex_init(&u->gen_mu, NULL);
    for (int k = 0; k < UID_NKINDS; k++)
        for (int i = 0; i < UID_STRIPES; i++)
            pthread_mutex_init(&u->assign_mu[k][i], NULL);
    if (o->allow_special) {
        u->allow_special = strdup(o->allow_special);
        if (!u->allow_special)
            goto nomem;
    }
    u->o.allow_special = u->allow_special;
    for (int k = 0; k < UID_NKINDS; k++)
        if (uid_cache_init(&u->k[k].by_name, o->cache_entries, &u->name_bytes, o->cache_bytes) ||
            uid_cache_init(&u->k[k].by_id, o->cache_entries, &u->name_bytes, o->cache_bytes))
            goto nomem;
    u->rnd = (uint64_t)clock_mono_ns() ^ ((uint64_t)(uintptr_t)u << 16) ^ 0x9E3779B97F4A7C15ull;
    *out = u;
    return CT_OK;
nomem:
    uid_close(u);
    return ct_err_set(err, CT_ENOMEM, "out of memory for the uid cache");
}

void uid_close(struct uid *u)
{
    if (!u)
        return;
    for (int k = 0; k < UID_NKINDS; k++) {
        uid_cache_destroy(&u->k[k].by_name);
        uid_cache_destroy(&u->k[k].by_id);
    }
    pthread_mutex_destroy(&u->rnd_mu);
    pthread_mutex_destroy(&u->gen_mu);
    for (int k = 0; k < UID_NKINDS; k++)
        for (int i = 0; i < UID_STRIPES; i++)
            pthread_mutex_destroy(&u->assign_mu[k][i]);
    free(u->allow_special);
    free(u);
}

unsigned uid_width(const struct uid *u, enum uid_kind k)
{
    return u->o.width[k];
}

void uid_format_hex(uint64_t id, unsigned width, char *out)
{
    static const char hex[] = "0123456789ABCDEF";
    for (unsigned i = 0; i < width; i++) {
        uint8_t b = (uint8_t)(id >> (8 * (width - 1 - i)));
        out[2 * i] = hex[b >> 4];
        out[2 * i + 1] = hex[b & 15];
    }
    out[2 * width] = 0;
}

int uid_parse_hex(const char *s, unsigned width, uint64_t *out, struct ct_err *err)
{
    if (strlen(s) != 2 * (size_t)width)
        return ct_err_set(err, CT_EINVAL, "uid '%s' must be %u hex digits", s, 2 * width);
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        int d = (*p >= '0' && *p <= '9')   ? *p - '0'
                : (*p >= 'a' && *p <= 'f') ? *p - 'a' + 10
                : (*p >= 'A' && *p <= 'F') ? *p - 'A' + 10
                                           : -1;
        if (d < 0)
            return ct_err_set(err, CT_EINVAL, "uid '%s' is not hexadecimal", s);
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return CT_OK;
}

static uint64_t uid_max_for(const struct uid *u, enum uid_kind k)
{
    unsigned w = u->o.width[k];
    return w >= 8 ? UINT64_MAX : (1ull << (8 * w)) - 1;
}

/* Reads one cell; CT_NOTFOUND if absent. The value is copied into buf (cap), length in *len. */
static int uid_read_ts(struct uid *u, struct wc_bytes row, const char *family, enum uid_kind k,
                       uint8_t *buf, size_t cap, size_t *len, int64_t *ts, struct ct_err *err)
{
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_column col = {wc_bytes_str(family), wc_bytes_str(uid_qualifiers[k]), true};
    o.columns = &col;
    o.ncolumns = 1;
    struct wc_result r;
    int rc = wc_get(u->t, row, &o, &r, err);
    if (rc != CT_OK)
        return rc;
    if (r.row.ncells == 0) {
        wc_result_release(&r);
        return CT_NOTFOUND;
    }
    const struct wc_cell *c = &r.row.cells[0];
    if (c->value.len > cap) {
        wc_result_release(&r);
        return ct_err_set(err, CT_ELIMIT, "uid cell of %zu bytes exceeds %zu", c->value.len, cap);
    }
    memcpy(buf, c->value.data, c->value.len);
    *len = c->value.len;
    if (ts)
        *ts = c->ts_ms;
    wc_result_release(&r);
    return CT_OK;
}

static int uid_read(struct uid *u, struct wc_bytes row, const char *family, enum uid_kind k,
                    uint8_t *buf, size_t cap, size_t *len, struct ct_err *err)
{
    return uid_read_ts(u, row, family, k, buf, cap, len, NULL, err);
}

/* Deletes the visible versions of one uid cell: a delete at the cell's own timestamp, not at
 * "now", so that a put right after it (same millisecond) is not masked (HBase semantics). */
static int uid_delete_cell(struct uid *u, struct wc_bytes row, const char *family, enum uid_kind k,
                           struct ct_err *err)
{
    uint8_t buf[UID_MAX_NAME];
    size_t len;
    int64_t ts;
    int rc = uid_read_ts(u, row, family, k, buf, sizeof(buf), &len, &ts, err);
    if (rc == CT_NOTFOUND)
        return CT_OK;
    if (rc != CT_OK)
        return rc;
    struct wc_mutation m = {
        WC_OP_DELETE_COLUMN, wc_bytes_str(family), wc_bytes_str(uid_qualifiers[k]), {0}, ts};
    struct wc_row_mutation rm = {row, &m, 1};
    return wc_mutate_row(u->t, &rm, WC_DURABILITY_USE_DEFAULT, err);
}

static int uid_lookup_store(struct uid *u, enum uid_kind k, const char *name, size_t len,
                            uint64_t *id, struct ct_err *err)
{
    uint8_t v[8];
    size_t vlen;
    int rc = uid_read(u, wc_bytes_of(name, len), UID_FAMILY_ID, k, v, sizeof(v), &vlen, err);
    if (rc != CT_OK)
        return rc;
    if (vlen != u->o.width[k])
        return ct_err_set(err, CT_ECORRUPT, "uid of %s '%.*s' has %zu bytes, expected %u",
                          uid_qualifiers[k], (int)len, name, vlen, u->o.width[k]);
    *id = rowkey_get_uid(v, u->o.width[k]);
    return CT_OK;
}

/* ---- generation (8) ------------------------------------------------------------------------ */

/* Reads the generation cell: CT_OK with its value, CT_NOTFOUND when absent. */
static int uid_generation_read(struct uid *u, uint64_t *out, struct ct_err *err)
{
    uint8_t zero = 0;
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_column col = {wc_bytes_str(UID_FAMILY_ID), wc_bytes_str(UID_GENERATION_QUALIFIER),
                            true};
    o.columns = &col;
    o.ncolumns = 1;
    struct wc_result r;
    int rc = wc_get(u->t, wc_bytes_of(&zero, 1), &o, &r, err);
    if (rc != CT_OK)
        return ct_err_prefix(err, "cannot read the uid table's generation");
    rc = CT_NOTFOUND;
    if (r.row.ncells > 0) {
        const struct wc_cell *c = &r.row.cells[0];
        if (c->value.len != 8)
            rc = ct_err_set(err, CT_ECORRUPT,
                            "the uid table's generation cell has %zu bytes, not 8", c->value.len);
        else if ((*out = coding_get_be64(c->value.data)) != 0)
            rc = CT_OK;
    }
    wc_result_release(&r);
    return rc;
}

/* Empties both directions of every kind and counts the drop. */
static void uid_cache_drop_all(struct uid *u)
{
    for (int k = 0; k < UID_NKINDS; k++) {
        uid_cache_clear(&u->k[k].by_name);
        uid_cache_clear(&u->k[k].by_id);
    }
    atomic_fetch_add(&u->drops, 1);
}

/* Compares the stored generation with the one seen: a change drops the caches (*dropped).
 * REQUIRES: gen_mu held. */
static int uid_generation_compare(struct uid *u, bool *dropped, struct ct_err *err)
{
    uint64_t g = 0;
    int rc = uid_generation_read(u, &g, err);
    if (rc != CT_OK && rc != CT_NOTFOUND)
        return rc;
    uint64_t seen = atomic_load(&u->gen);
    if (g != seen) {
        if (seen != 0 || atomic_load(&u->k[0].by_name.used) + atomic_load(&u->k[1].by_name.used) +
                                 atomic_load(&u->k[2].by_name.used) >
                             0) {
            uid_cache_drop_all(u);
            *dropped = true;
        }
        atomic_store(&u->gen, g);
    }
    return CT_OK;
}

int uid_generation_check(struct uid *u, bool force, bool *dropped, struct ct_err *err)
{
    *dropped = false;
    uint64_t now = clock_mono_ns();
    if (!force) {
        uint64_t due = atomic_load(&u->gen_due_ns);
        if (!u->o.generation_check_ms || now < due)
            return CT_OK;
        /* one thread per period does the check; the others go on with the cache */
        uint64_t next = now + (uint64_t)u->o.generation_check_ms * 1000000u;
        if (!atomic_compare_exchange_strong(&u->gen_due_ns, &due, next))
            return CT_OK;
    }
    pthread_mutex_lock(&u->gen_mu);
    int rc = uid_generation_compare(u, dropped, err);
    if (rc == CT_EIO) {
        /* (8) the cell cannot be read because the store failed (a Bigtable table missing: it
         * was dropped, or the backend restarted empty): whatever the table comes back as is a
         * new life, so the mappings seen are dropped now, not at the first check that reads
         * the new cell (writes in between would use ids of the former life) */
        if (atomic_load(&u->gen) != 0 || atomic_load(&u->k[0].by_name.used) +
                                                 atomic_load(&u->k[1].by_name.used) +
                                                 atomic_load(&u->k[2].by_name.used) >
                                             0) {
            uid_cache_drop_all(u);
            *dropped = true;
        }
        atomic_store(&u->gen, 0);
    }
    if (rc == CT_EIO || rc == CT_EUNAVAIL) /* due again at once: the next lookup checks */
        atomic_store(&u->gen_due_ns, 0);
    pthread_mutex_unlock(&u->gen_mu);
    return rc;
}

int uid_generation_init(struct uid *u, struct ct_err *err)
{
    pthread_mutex_lock(&u->gen_mu);
    uint64_t g = 0;
    int rc = uid_generation_read(u, &g, err);
    if (rc == CT_NOTFOUND) {
        uint64_t nv = 0;
        while (nv == 0) {
            pthread_mutex_lock(&u->rnd_mu);
            u->rnd ^= u->rnd << 13; /* xorshift64 */
            u->rnd ^= u->rnd >> 7;
            u->rnd ^= u->rnd << 17;
            nv = u->rnd ^ clock_now_ms();
            pthread_mutex_unlock(&u->rnd_mu);
        }
        uint8_t v[8], zero = 0;
        coding_put_be64(v, nv);
        struct wc_mutation m = {WC_OP_PUT, wc_bytes_str(UID_FAMILY_ID),
                                wc_bytes_str(UID_GENERATION_QUALIFIER), wc_bytes_of(v, 8),
                                WC_TS_LATEST};
        struct wc_row_mutation rm = {wc_bytes_of(&zero, 1), &m, 1};
        bool applied = false;
        rc = wc_check_and_mutate(u->t, rm.row, m.family, m.qualifier, NULL, &rm,
                                 WC_DURABILITY_USE_DEFAULT, &applied, err);
        if (rc != CT_OK)
            rc = ct_err_prefix(err, "cannot write the uid table's generation");
        else if (!applied) /* another service wrote it first: take its value */
            rc = uid_generation_read(u, &g, err);
        else
            g = nv;
    }
    if (rc == CT_NOTFOUND) { /* written by another service but not readable yet: checked later */
        pthread_mutex_unlock(&u->gen_mu);
        return CT_OK;
    }
    if (rc == CT_OK) {
        uint64_t seen = atomic_load(&u->gen);
        if (seen != 0 && seen != g) /* the table changed life since we looked */
            uid_cache_drop_all(u);
        atomic_store(&u->gen, g);
    }
    pthread_mutex_unlock(&u->gen_mu);
    return rc;
}

uint64_t uid_generation(struct uid *u)
{
    return atomic_load(&u->gen);
}

uint64_t uid_drop_count(struct uid *u)
{
    return atomic_load(&u->drops);
}

/* The scheduled check before a lookup; one that failed because the store did (unavailable, or
 * the table missing) is due again at the next lookup (uid_generation_check), so the first
 * lookup after the store's return reads the generation before it uses the cache. Under a
 * request deadline a stalled store costs the check's lookup that deadline, which the lookup's
 * own call would have cost too; the lookup reports the failing store. */
static void uid_generation_tick(struct uid *u)
{
    if (!u->o.generation_check_ms)
        return;
    bool dropped;
    struct ct_err e2; /* set by a failure only: zeroing its 260 bytes on every lookup cost
                       * more than the rest of a cache hit (a new series makes 2n+1 lookups) */
    e2.code = CT_OK;
    e2.msg[0] = '\0';
    if (uid_generation_check(u, false, &dropped, &e2) != CT_OK) {
        /* tried again in the next period */
    }
}

int uid_get_id(struct uid *u, enum uid_kind k, const char *name, size_t len, uint64_t *id,
               struct ct_err *err)
{
    struct uid_kind_state *ks = &u->k[k];
    uid_generation_tick(u);
    if (uid_cache_find_name(&ks->by_name, name, len, id)) {
        atomic_fetch_add(&ks->hits, 1);
        return CT_OK;
    }
    atomic_fetch_add(&ks->misses, 1);
    int rc = uid_lookup_store(u, k, name, len, id, err);
    if (rc == CT_NOTFOUND)
        return ct_err_set(err, CT_NOTFOUND, "No such name for '%s': '%.*s'", uid_qualifiers[k],
                          (int)len, name);
    if (rc != CT_OK)
        return rc;
    uid_cache_pair(ks, name, len, *id);
    return CT_OK;
}

static uint64_t uid_random(struct uid *u, uint64_t max)
{
    pthread_mutex_lock(&u->rnd_mu);
    u->rnd ^= u->rnd << 13; /* xorshift64 */
    u->rnd ^= u->rnd >> 7;
    u->rnd ^= u->rnd << 17;
    uint64_t r = u->rnd;
    pthread_mutex_unlock(&u->rnd_mu);
    return 1 + r % max;
}

/* Removes the reverse row of an id this writer claimed but lost the name's forward race with
 * (6): a delete of that column at the cell's own timestamp (so that a later put of the same id,
 * possible with random metric ids, is not masked), applied only while the cell still names
 * `name` (check-and-mutate). */
static int uid_release_reverse(struct uid *u, enum uid_kind k, const uint8_t *idb, unsigned w,
                               const char *name, size_t len, struct ct_err *err)
{
    uint8_t buf[UID_MAX_NAME];
    size_t n;
    int64_t ts;
    int rc =
        uid_read_ts(u, wc_bytes_of(idb, w), UID_FAMILY_NAME, k, buf, sizeof(buf), &n, &ts, err);
    if (rc == CT_NOTFOUND)
        return CT_OK;
    if (rc != CT_OK)
        return rc;
    struct wc_mutation dm = {WC_OP_DELETE_COLUMN,
                             wc_bytes_str(UID_FAMILY_NAME),
                             wc_bytes_str(uid_qualifiers[k]),
                             {0},
                             ts};
    struct wc_row_mutation drm = {wc_bytes_of(idb, w), &dm, 1};
    struct wc_bytes expect = wc_bytes_of(name, len);
    bool applied = false;
    return wc_check_and_mutate(u->t, drm.row, dm.family, dm.qualifier, &expect, &drm,
                               WC_DURABILITY_USE_DEFAULT, &applied, err);
}

/* Assigns a new id to name (which had none when checked). *existed tells whether another writer
 * won the forward race (then *id is the winner's). REQUIRES: the name's assign_mu stripe held. */
static int uid_allocate_locked(struct uid *u, enum uid_kind k, const char *name, size_t len,
                               uint64_t *id, bool *existed, struct ct_err *err)
{
    unsigned w = u->o.width[k];
    uint64_t max = uid_max_for(u, k);
    const char *q = uid_qualifiers[k];
    *existed = false;
    if (atomic_load(&u->gen) == 0) { /* (8): a table without a generation gets one */
        int rc = uid_generation_init(u, err);
        if (rc != CT_OK)
            return rc;
    }
    for (int attempt = 0; attempt < UID_ASSIGN_TRIES; attempt++) {
        uint64_t nid;
        if (k == UID_METRIC && u->o.random_metrics) {
            nid = uid_random(u, max);
        } else {
            int64_t v;
            uint8_t zero = 0;
            int rc = wc_increment(u->t, wc_bytes_of(&zero, 1), wc_bytes_str(UID_FAMILY_ID),
                                  wc_bytes_str(q), 1, WC_DURABILITY_USE_DEFAULT, &v, err);
            if (rc != CT_OK)
                return ct_err_prefix(err, "cannot increment the %s id counter", q);
            if (v <= 0 || (uint64_t)v > max)
                return ct_err_set(err, CT_ELIMIT,
                                  "All Unique IDs for %s on %u bytes are already assigned!", q, w);
            nid = (uint64_t)v;
        }
        uint8_t idb[8];
        rowkey_put_uid(idb, nid, w);
        /* (2): claim the id through its reverse row */
        struct wc_mutation m = {WC_OP_PUT, wc_bytes_str(UID_FAMILY_NAME), wc_bytes_str(q),
                                wc_bytes_of(name, len), WC_TS_LATEST};
        struct wc_row_mutation rm = {wc_bytes_of(idb, w), &m, 1};
        bool applied = false;
        int rc = wc_check_and_mutate(u->t, rm.row, m.family, m.qualifier, NULL, &rm,
                                     WC_DURABILITY_USE_DEFAULT, &applied, err);
        if (rc != CT_OK)
            return ct_err_prefix(err, "cannot write the reverse uid row of %s '%.*s'", q, (int)len,
                                 name);
        if (!applied) {
            /* the id is taken (random collision or a hand-made row): draw again; a conflict
             * may also mean the table changed life under the cache (8) */
            bool dropped;
            if ((rc = uid_generation_check(u, true, &dropped, err)) != CT_OK)
                return rc;
            continue;
        }
        /* (1): publish the name through its forward row */
        struct wc_mutation fm = {WC_OP_PUT, wc_bytes_str(UID_FAMILY_ID), wc_bytes_str(q),
                                 wc_bytes_of(idb, w), WC_TS_LATEST};
        struct wc_row_mutation frm = {wc_bytes_of(name, len), &fm, 1};
        rc = wc_check_and_mutate(u->t, frm.row, fm.family, fm.qualifier, NULL, &frm,
                                 WC_DURABILITY_USE_DEFAULT, &applied, err);
        if (rc != CT_OK)
            return ct_err_prefix(err, "cannot write the forward uid row of %s '%.*s'", q, (int)len,
                                 name);
        if (!applied) {
            /* another service assigned the name first (6); take its id, drop our reverse row */
            *existed = true;
            bool dropped; /* (8): a conflict, so the generation is checked */
            if ((rc = uid_generation_check(u, true, &dropped, err)) != CT_OK)
                return rc;
            rc = uid_release_reverse(u, k, idb, w, name, len, err);
            if (rc != CT_OK)
                return ct_err_prefix(err, "cannot remove the unused reverse uid row of %s '%.*s'",
                                     q, (int)len, name);
            rc = uid_lookup_store(u, k, name, len, id, err);
            if (rc == CT_NOTFOUND)
                return ct_err_set(err, CT_ECONFLICT,
                                  "forward uid row of %s '%.*s' vanished during assignment", q,
                                  (int)len, name);
            return rc;
        }
        *id = nid;
        atomic_fetch_add(&u->k[k].assigned, 1);
        return CT_OK;
    }
    return ct_err_set(err, CT_ECONFLICT, "could not find a free %s id for '%.*s' in %d tries", q,
                      (int)len, name, UID_ASSIGN_TRIES);
}

/* (5): serialises assignments of one name in this service and looks the name up again under
 * the lock, so a thread that waited for another's assignment of the same name takes its id
 * (*existed true) instead of drawing a second one. */
static int uid_allocate(struct uid *u, enum uid_kind k, const char *name, size_t len, uint64_t *id,
                        bool *existed, struct ct_err *err)
{
    pthread_mutex_t *mu = &u->assign_mu[k][uid_hash_name(name, len) % UID_STRIPES];
    pthread_mutex_lock(mu);
    int rc = uid_lookup_store(u, k, name, len, id, err);
    if (rc == CT_OK)
        *existed = true;
    else if (rc == CT_NOTFOUND)
        rc = uid_allocate_locked(u, k, name, len, id, existed, err);
    pthread_mutex_unlock(mu);
    if (rc == CT_OK && !*existed && u->assigned_fn)
        u->assigned_fn(u->assigned_arg, k, name, len, *id);
    return rc;
}

/* A new name's id: the name checked (uid_name_check), then uid_allocate (*existed as it sets
 * it). */
static int uid_check_allocate(struct uid *u, enum uid_kind k, const char *name, size_t len,
                              uint64_t *id, bool *existed, struct ct_err *err)
{
    char what[32];
    snprintf(what, sizeof(what), "%s name", uid_names[k]);
    int rc = uid_name_check(what, name, len, u->allow_special, err);
    if (rc != CT_OK)
        return rc;
    return uid_allocate(u, k, name, len, id, existed, err);
}

void uid_set_assigned_hook(struct uid *u, uid_name_fn fn, void *arg)
{
    u->assigned_fn = fn;
    u->assigned_arg = arg;
}

int uid_get_or_create_id(struct uid *u, enum uid_kind k, const char *name, size_t len, uint64_t *id,
                         struct ct_err *err)
{
    int rc = uid_get_id(u, k, name, len, id, err);
    if (rc != CT_NOTFOUND)
        return rc;
    bool existed;
    rc = uid_check_allocate(u, k, name, len, id, &existed, err);
    if (rc != CT_OK)
        return rc;
    uid_cache_pair(&u->k[k], name, len, *id);
    return CT_OK;
}

int uid_assign_id(struct uid *u, enum uid_kind k, const char *name, size_t len, uint64_t *id,
                  struct ct_err *err)
{
    char hex[17];
    int rc = uid_lookup_store(u, k, name, len, id, err);
    if (rc == CT_OK) {
        uid_format_hex(*id, u->o.width[k], hex);
        return ct_err_set(err, CT_EEXIST, "Name already exists with UID: %s", hex);
    }
    if (rc != CT_NOTFOUND)
        return rc;
    bool existed;
    rc = uid_check_allocate(u, k, name, len, id, &existed, err);
    if (rc != CT_OK)
        return rc;
    if (existed) {
        uid_format_hex(*id, u->o.width[k], hex);
        return ct_err_set(err, CT_EEXIST, "Name already exists with UID: %s", hex);
    }
    uid_cache_pair(&u->k[k], name, len, *id);
    return CT_OK;
}

int uid_get_name(struct uid *u, enum uid_kind k, uint64_t id, char *buf, size_t cap, size_t *len,
                 struct ct_err *err)
{
    struct uid_kind_state *ks = &u->k[k];
    uid_generation_tick(u);
    int hit = uid_cache_find_id(&ks->by_id, id, buf, cap, len);
    if (hit < 0)
        return ct_err_set(err, CT_ELIMIT, "name buffer of %zu bytes is too small", cap);
    if (hit) {
        atomic_fetch_add(&ks->hits, 1);
        return CT_OK;
    }
    atomic_fetch_add(&ks->misses, 1);
    unsigned w = u->o.width[k];
    char hex[17];
    uid_format_hex(id, w, hex);
    if (w < 8 && id > uid_max_for(u, k))
        return ct_err_set(err, CT_NOTFOUND, "No such unique ID for '%s': '%s'", uid_qualifiers[k],
                          hex);
    uint8_t idb[8];
    rowkey_put_uid(idb, id, w);
    uint8_t name[UID_MAX_NAME];
    size_t n;
    int rc = uid_read(u, wc_bytes_of(idb, w), UID_FAMILY_NAME, k, name, sizeof(name), &n, err);
    if (rc == CT_NOTFOUND) {
        ct_err_set(err, CT_NOTFOUND, "No such unique ID for '%s': '%s'", uid_qualifiers[k], hex);
        return CT_NOTFOUND;
    }
    if (rc != CT_OK)
        return rc;
    if (n + 1 > cap)
        return ct_err_set(err, CT_ELIMIT, "name of %zu bytes does not fit %zu", n, cap);
    memcpy(buf, name, n);
    buf[n] = 0;
    *len = n;
    uid_cache_pair(ks, buf, n, id);
    return CT_OK;
}

/* Scans forward rows of family `id` (one kind, or all if k < 0). */
static int uid_scan(struct uid *u, int k, const char *prefix, size_t max, uid_name_fn fn, void *arg,
                    struct ct_err *err)
{
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_column col = {wc_bytes_str(UID_FAMILY_ID), {0}, false};
    if (k >= 0) {
        col.qualifier = wc_bytes_str(uid_qualifiers[k]);
        col.has_qualifier = true;
    }
    o.columns = &col;
    o.ncolumns = 1;
    if (prefix && *prefix) {
        o.row_prefix = wc_bytes_str(prefix);
        o.start_row = o.row_prefix;
    }
    struct wc_scanner *sc;
    int rc = wc_scanner_open(u->t, &o, &sc, err);
    if (rc != CT_OK)
        return rc;
    size_t count = 0;
    struct wc_row row;
    while ((rc = wc_scanner_next(sc, &row, err)) == CT_OK) {
        if (row.key.len == 1 && row.key.data[0] == 0)
            continue; /* the MAXID counter row */
        bool stop = false;
        for (size_t i = 0; i < row.ncells && !stop; i++) {
            const struct wc_cell *c = &row.cells[i];
            enum uid_kind kind;
            int kk = -1;
            for (int j = 0; j < UID_NKINDS; j++)
                if (c->qualifier.len == strlen(uid_qualifiers[j]) &&
                    !memcmp(c->qualifier.data, uid_qualifiers[j], c->qualifier.len))
                    kk = j;
            if (kk < 0)
                continue;
            kind = (enum uid_kind)kk;
            uint64_t id =
                rowkey_get_uid(c->value.data, c->value.len < 8 ? (unsigned)c->value.len : 8);
            if (fn(arg, kind, (const char *)row.key.data, row.key.len, id)) {
                stop = true;
                break;
            }
            count++;
            if (max && count >= max)
                stop = true;
        }
        if (stop) {
            rc = CT_OK;
            break;
        }
    }
    wc_scanner_close(sc);
    return rc == CT_NOTFOUND ? CT_OK : rc;
}

int uid_suggest(struct uid *u, enum uid_kind k, const char *prefix, size_t max, uid_name_fn fn,
                void *arg, struct ct_err *err)
{
    return uid_scan(u, (int)k, prefix, max, fn, arg, err);
}

int uid_foreach(struct uid *u, uid_name_fn fn, void *arg, struct ct_err *err)
{
    return uid_scan(u, -1, NULL, 0, fn, arg, err);
}

int uid_rename(struct uid *u, enum uid_kind k, const char *old_name, const char *new_name,
               struct ct_err *err)
{
    size_t ol = strlen(old_name), nl = strlen(new_name);
    const char *q = uid_qualifiers[k];
    uint64_t id, other;
    int rc = uid_lookup_store(u, k, old_name, ol, &id, err);
    if (rc == CT_NOTFOUND)
        return ct_err_set(err, CT_NOTFOUND, "No such name for '%s': '%s'", q, old_name);
    if (rc != CT_OK)
        return rc;
    char what[32];
    snprintf(what, sizeof(what), "%s name", uid_names[k]);
    rc = uid_name_check(what, new_name, nl, u->allow_special, err);
    if (rc != CT_OK)
        return rc;
    rc = uid_lookup_store(u, k, new_name, nl, &other, err);
    if (rc == CT_OK)
        return ct_err_set(err, CT_EEXIST, "A UID with name '%s' for '%s' already exists", new_name,
                          q);
    if (rc != CT_NOTFOUND)
        return rc;
    unsigned w = u->o.width[k];
    uint8_t idb[8];
    rowkey_put_uid(idb, id, w);
    /* forward row of the new name first (check-and-put keeps invariant 1), then the reverse row,
     * then drop the old forward row */
    struct wc_mutation fm = {WC_OP_PUT, wc_bytes_str(UID_FAMILY_ID), wc_bytes_str(q),
                             wc_bytes_of(idb, w), WC_TS_LATEST};
    struct wc_row_mutation frm = {wc_bytes_of(new_name, nl), &fm, 1};
    bool applied;
    rc = wc_check_and_mutate(u->t, frm.row, fm.family, fm.qualifier, NULL, &frm,
                             WC_DURABILITY_USE_DEFAULT, &applied, err);
    if (rc != CT_OK)
        return rc;
    if (!applied)
        return ct_err_set(err, CT_EEXIST, "A UID with name '%s' for '%s' already exists", new_name,
                          q);
    struct wc_mutation rmm = {WC_OP_PUT, wc_bytes_str(UID_FAMILY_NAME), wc_bytes_str(q),
                              wc_bytes_of(new_name, nl), WC_TS_LATEST};
    struct wc_row_mutation rrm = {wc_bytes_of(idb, w), &rmm, 1};
    rc = wc_mutate_row(u->t, &rrm, WC_DURABILITY_USE_DEFAULT, err);
    if (rc != CT_OK)
        return rc;
    rc = uid_delete_cell(u, wc_bytes_of(old_name, ol), UID_FAMILY_ID, k, err);
    if (rc != CT_OK)
        return rc;
    uid_cache_forget(u, k, old_name, ol, id);
    uid_cache_forget(u, k, new_name, nl, id);
    return CT_OK;
}

int uid_delete(struct uid *u, enum uid_kind k, const char *name, struct ct_err *err)
{
    size_t len = strlen(name);
    const char *q = uid_qualifiers[k];
    uint64_t id;
    int rc = uid_lookup_store(u, k, name, len, &id, err);
    if (rc == CT_NOTFOUND)
        return ct_err_set(err, CT_NOTFOUND, "No such name for '%s': '%s'", q, name);
    if (rc != CT_OK)
        return rc;
    unsigned w = u->o.width[k];
    uint8_t idb[8];
    rowkey_put_uid(idb, id, w);
    rc = uid_delete_cell(u, wc_bytes_of(name, len), UID_FAMILY_ID, k, err);
    if (rc != CT_OK)
        return rc;
    rc = uid_delete_cell(u, wc_bytes_of(idb, w), UID_FAMILY_NAME, k, err);
    if (rc != CT_OK)
        return rc;
    uid_cache_forget(u, k, name, len, id);
    return CT_OK;
}

int uid_max_id(struct uid *u, enum uid_kind k, uint64_t *out, struct ct_err *err)
{
    uint8_t zero = 0, v[8];
    size_t n;
    int rc = uid_read(u, wc_bytes_of(&zero, 1), UID_FAMILY_ID, k, v, sizeof(v), &n, err);
    if (rc == CT_NOTFOUND) {
        *out = 0;
        return CT_OK;
    }
    if (rc != CT_OK)
        return rc;
    if (n != 8)
        return ct_err_set(err, CT_ECORRUPT, "%s id counter has %zu bytes, expected 8",
                          uid_qualifiers[k], n);
    *out = coding_get_be64(v);
    return CT_OK;
}

void uid_cache_drop(struct uid *u)
{
    uid_cache_drop_all(u);
}

void uid_stats_get(struct uid *u, enum uid_kind k, struct uid_stats *out)
{
    struct uid_kind_state *ks = &u->k[k];
    out->cache_hits = atomic_load(&ks->hits);
    out->cache_misses = atomic_load(&ks->misses);
    out->assigned = atomic_load(&ks->assigned);
    out->cache_entries = atomic_load_explicit(&ks->by_name.used, memory_order_relaxed);
    out->cache_name_bytes = atomic_load_explicit(&u->name_bytes, memory_order_relaxed);
}
