/* shell_exec.c - the shell's commands (docs/shell.md, "Commands") mapped onto storage/wc.h, and
 * their output ("Output").
 *
 * Invariants: (1) a command checks every argument (shape, names, attribute values, families)
 * before its first call that changes the store, and changes the store with a single wc.h call
 * (create, alter, one row mutation, ...), so a failed command changes nothing; (2) all output of
 * a command goes to sh->o.out, and only after the checks of (1) passed (errors are returned in
 * err, printed by shell_run.c); (3) keys, qualifiers and values are always printed in the
 * binary-string form, through reused buffers (no allocation per cell). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "tools/shell.h"

/* A growable text buffer, reused across lines. */
struct shell_sbuf {
    char *p;
    size_t len, cap;
};

struct shell {
    struct shell_options o;
    struct wc_store *store;  /* opened on first use */
    struct shell_meta *meta; /* the hbase:meta view of the running command, or NULL */
    bool exit_requested;
    volatile sig_atomic_t *interrupted; /* set by SIGINT (interactive only); NULL = none */
    struct shell_sbuf b1, b2, b3;       /* formatting scratch */
};

typedef int (*shell_cmd_fn)(struct shell *sh, const struct shell_cmd *c, struct ct_err *err);

/* ---- buffers and output ----------------------------------------------------------------- */

static int sbuf_reserve(struct shell_sbuf *b, size_t more)
{
    if (b->len + more + 1 <= b->cap)
        return CT_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + more + 1)
        cap *= 2;
    char *np = realloc(b->p, cap);
    if (!np)
        return CT_ENOMEM;
    b->p = np;
    b->cap = cap;
    return CT_OK;
}

/* Resets b and writes bytes in binary-string form; returns the NUL-terminated text ("" if out
 * of memory, which only shortens output). */
static const char *sbuf_binary(struct shell_sbuf *b, const uint8_t *p, size_t n)
{
    static const char hexd[] = "0123456789ABCDEF";
    b->len = 0;
    if (sbuf_reserve(b, 4 * n) != CT_OK)
        return "";
    for (size_t i = 0; i < n; i++) {
        uint8_t c = p[i];
        if (c >= 0x20 && c <= 0x7e && c != '\\') {
            b->p[b->len++] = (char)c;
        } else {
            b->p[b->len++] = '\\';
            b->p[b->len++] = 'x';
            b->p[b->len++] = hexd[c >> 4];
            b->p[b->len++] = hexd[c & 15];
        }
    }
    b->p[b->len] = 0;
    return b->p;
}

/* Width of the first table column: 0 when not on a terminal (no padding). */
static int shell_col_width(const struct shell *sh)
{
    if (!sh->o.tty)
        return 0;
    int w = sh->o.width > 0 ? sh->o.width / 4 : 20;
    return w < 10 ? 10 : w;
}

static void shell_header(struct shell *sh, const char *a, const char *b)
{
    int w = shell_col_width(sh);
    if (w)
        fprintf(sh->o.out, " %-*s %s\n", w, a, b);
    else
        fprintf(sh->o.out, "%s  %s\n", a, b);
}

/* ---- argument helpers ------------------------------------------------------------------- */

static int arg_error(struct ct_err *err, const struct shell_cmd *c, const char *usage)
{
    return ct_err_set(err, CT_EINVAL, "wrong arguments for '%s'. Usage: %s", c->name, usage);
}

/* An error about value v (an argument, an option's key or value): the message, then where v is,
 * "(line L, column C)", so a long script's error points at its place. */
static int __attribute__((format(printf, 3, 4)))
val_fail(struct ct_err *err, const struct shell_val *v, const char *fmt, ...)
{
    char msg[sizeof(err->msg)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return ct_err_set(err, CT_EINVAL, "%s (line %d, column %d)", msg, v->line, v->col);
}

/* The string of a value that must be a string (INT is accepted and shown in decimal, as Ruby's
 * to_s does). `tmp` holds the decimal text (>= 24 bytes). */
static int val_bytes(const struct shell_val *v, const char *what, char *tmp, struct wc_bytes *out,
                     struct ct_err *err)
{
    if (v->kind == SHELL_VAL_STR || v->kind == SHELL_VAL_CONST) {
        *out = wc_bytes_of(v->str, v->len);
        return CT_OK;
    }
    if (v->kind == SHELL_VAL_INT) {
        int n = snprintf(tmp, 24, "%" PRId64, v->num);
        *out = wc_bytes_of(tmp, (size_t)n);
        return CT_OK;
    }
    return ct_err_set(err, CT_EINVAL, "%s must be a string, not %s (line %d, column %d)", what,
                      shell_val_kind_name(v->kind), v->line, v->col);
}

/* A string value as a C string (no NUL inside). */
static int val_cstr(const struct shell_val *v, const char *what, const char **out,
                    struct ct_err *err)
{
    if (v->kind != SHELL_VAL_STR && v->kind != SHELL_VAL_CONST)
        return ct_err_set(err, CT_EINVAL, "%s must be a string, not %s (line %d, column %d)", what,
                          shell_val_kind_name(v->kind), v->line, v->col);
    if (strlen(v->str) != v->len)
        return ct_err_set(err, CT_EINVAL, "%s must not contain NUL bytes", what);
    *out = v->str;
    return CT_OK;
}

/* An integer, also from a decimal string ('18000'). */
static int val_int(const struct shell_val *v, const char *what, int64_t *out, struct ct_err *err)
{
    if (v->kind == SHELL_VAL_INT) {
        *out = v->num;
        return CT_OK;
    }
    if (v->kind == SHELL_VAL_STR && v->len > 0 && strlen(v->str) == v->len) {
        errno = 0;
        char *end;
        long long x = strtoll(v->str, &end, 10);
        if (!errno && *end == 0) {
            *out = x;
            return CT_OK;
        }
    }
    if (v->kind == SHELL_VAL_STR)
        return ct_err_set(err, CT_EINVAL, "%s must be an integer (got '%s') (line %d, column %d)",
                          what, v->str, v->line, v->col);
    return ct_err_set(err, CT_EINVAL, "%s must be an integer, not %s (line %d, column %d)", what,
                      shell_val_kind_name(v->kind), v->line, v->col);
}

static int val_int_range(const struct shell_val *v, const char *what, int64_t lo, int64_t hi,
                         int64_t *out, struct ct_err *err)
{
    int rc = val_int(v, what, out, err);
    if (rc != CT_OK)
        return rc;
    if (*out < lo || *out > hi) {
        if (hi == INT64_MAX)
            return ct_err_set(err, CT_EINVAL,
                              "%s must be >= %" PRId64 " (got %" PRId64 ") (line %d, column %d)",
                              what, lo, *out, v->line, v->col);
        return ct_err_set(err, CT_EINVAL,
                          "%s must be between %" PRId64 " and %" PRId64 " (got %" PRId64
                          ") (line %d, column %d)",
                          what, lo, hi, *out, v->line, v->col);
    }
    return CT_OK;
}

static int val_bool(const struct shell_val *v, const char *what, bool *out, struct ct_err *err)
{
    if (v->kind == SHELL_VAL_BOOL) {
        *out = v->num != 0;
        return CT_OK;
    }
    if (v->kind == SHELL_VAL_STR && !strcasecmp(v->str, "true")) {
        *out = true;
        return CT_OK;
    }
    if (v->kind == SHELL_VAL_STR && !strcasecmp(v->str, "false")) {
        *out = false;
        return CT_OK;
    }
    return ct_err_set(err, CT_EINVAL, "%s must be true or false (line %d, column %d)", what,
                      v->line, v->col);
}

/* A timestamp a user may give: 0 <= ts < 2^63-1 (docs/storage-contract.md, "Data model"). */
static int val_ts(const struct shell_val *v, const char *what, int64_t *out, struct ct_err *err)
{
    int rc = val_int(v, what, out, err);
    if (rc != CT_OK)
        return rc;
    if (*out < 0 || *out == INT64_MAX)
        return ct_err_set(err, CT_EINVAL,
                          "%s must be >= 0 and < 9223372036854775807 (got %" PRId64
                          ") (line %d, column %d)",
                          what, *out, v->line, v->col);
    return CT_OK;
}

/* A dictionary key's name (keys are STR or CONST by construction of the parser). */
static const char *dict_key(const struct shell_val *d, size_t i)
{
    return d->items[2 * i].str;
}

static const struct shell_val *dict_val(const struct shell_val *d, size_t i)
{
    return &d->items[2 * i + 1];
}

static const struct shell_val *dict_find(const struct shell_val *d, const char *key)
{
    for (size_t i = 0; i < d->n; i++)
        if (!strcmp(dict_key(d, i), key))
            return dict_val(d, i);
    return NULL;
}

/* Matches an enumeration value case-insensitively; error names the allowed set. */
static int val_enum(const struct shell_val *v, const char *what, const char *const *names, size_t n,
                    int *out, struct ct_err *err)
{
    const char *s;
    int rc = val_cstr(v, what, &s, err);
    if (rc != CT_OK)
        return rc;
    for (size_t i = 0; i < n; i++)
        if (names[i] && !strcasecmp(s, names[i])) {
            *out = (int)i;
            return CT_OK;
        }
    char allowed[160] = "";
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (!names[i])
            continue;
        int k = snprintf(allowed + at, sizeof(allowed) - at, "%s%s", at ? ", " : "", names[i]);
        if (k < 0 || (size_t)k >= sizeof(allowed) - at)
            break;
        at += (size_t)k;
    }
    return ct_err_set(err, CT_EINVAL, "%s must be one of %s (got '%s') (line %d, column %d)", what,
                      allowed, s, v->line, v->col);
}

/* ---- store, tables, families ------------------------------------------------------------ */

static int shell_store(struct shell *sh, struct ct_err *err)
{
    if (sh->store)
        return CT_OK;
    struct wc_options o;
    if (sh->o.store)
        o = *sh->o.store;
    else
        wc_options_init(&o);
    o.backend = sh->o.backend;
    if (sh->o.data_dir)
        o.data_dir = sh->o.data_dir;
    /* The store's background threads inherit this thread's signal mask: with SIGINT blocked
     * while they are created, an interactive Ctrl-C always reaches this (the reading) thread. */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    int rc = wc_open(&o, &sh->store, err);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != CT_OK) {
        sh->store = NULL;
        return ct_err_prefix(err, "cannot open the store");
    }
    return CT_OK;
}

/* Whether Ctrl-C was pressed while the command ran. */
static bool shell_interrupted(const struct shell *sh)
{
    return sh->interrupted && *sh->interrupted;
}

/* The name describe and list show: the full name without "default:". */
static const char *shell_display_name(const char *full)
{
    return strncmp(full, "default:", 8) ? full : full + 8;
}

static bool shell_is_meta(const char *name)
{
    return !strcmp(name, SHELL_META_TABLE);
}

/* The store that holds table `name` and its name there: the user's store, or for hbase:meta
 * the view built (once per command) from it. REQUIRES shell_store() done. */
static int shell_store_of(struct shell *sh, const char *name, struct wc_store **st,
                          const char **there, struct ct_err *err)
{
    *st = sh->store;
    *there = name;
    if (!shell_is_meta(name))
        return CT_OK;
    int rc = CT_OK;
    if (!sh->meta)
        rc = shell_meta_build(sh->store,
                              sh->o.backend == WC_BACKEND_BIGTABLE ? "bigtable" : "embedded",
                              &sh->meta, err);
    if (rc == CT_OK) {
        *st = shell_meta_store(sh->meta);
        *there = SHELL_META_SCRATCH;
    }
    return rc;
}

/* Describes a table that must exist: "Table t does not exist." otherwise. */
static int shell_describe(struct shell *sh, const char *name, struct wc_table_desc **out,
                          struct ct_err *err)
{
    struct wc_store *st;
    const char *there;
    int rc = shell_store_of(sh, name, &st, &there, err);
    if (rc == CT_OK)
        rc = wc_table_describe(st, there, out, err);
    if (rc == CT_NOTFOUND)
        return ct_err_set(err, CT_NOTFOUND, "Table %s does not exist.", name);
    if (rc == CT_OK && there != name)
        snprintf((*out)->name, sizeof((*out)->name), "%s", name);
    return rc;
}

static int shell_table_arg(const struct shell_cmd *c, size_t i, const char **name,
                           struct ct_err *err)
{
    if (c->nargs <= i)
        return ct_err_set(err, CT_EINVAL, "'%s' needs a table name", c->name);
    return val_cstr(&c->args[i], "table name", name, err);
}

static int shell_require_enabled(const struct wc_table_desc *d, const char *name,
                                 struct ct_err *err)
{
    if (!d->enabled)
        return ct_err_set(err, CT_EBUSY, "Table %s is disabled.", name);
    return CT_OK;
}

static int shell_family_known(const struct wc_table_desc *d, struct wc_bytes fam,
                              struct ct_err *err)
{
    for (size_t i = 0; i < d->nfamilies; i++)
        if (strlen(d->families[i].name) == fam.len &&
            !memcmp(d->families[i].name, fam.data, fam.len))
            return CT_OK;
    char list[200] = "";
    size_t at = 0;
    for (size_t i = 0; i < d->nfamilies; i++) {
        int k =
            snprintf(list + at, sizeof(list) - at, "%s%s:*", i ? ", " : "", d->families[i].name);
        if (k < 0 || (size_t)k >= sizeof(list) - at)
            break;
        at += (size_t)k;
    }
    return ct_err_set(err, CT_EINVAL, "Unknown column family! Valid column names: %s", list);
}

/* Splits "f:q" at the first ':'; "f" is a whole family (has_qualifier false). */
static void shell_split_column(struct wc_bytes s, struct wc_column *col)
{
    const uint8_t *colon = s.len ? memchr(s.data, ':', s.len) : NULL;
    memset(col, 0, sizeof(*col));
    if (!colon) {
        col->family = s;
        return;
    }
    col->family = wc_bytes_of(s.data, (size_t)(colon - s.data));
    col->qualifier = wc_bytes_of(colon + 1, s.len - (size_t)(colon - s.data) - 1);
    col->has_qualifier = true;
}

/* ---- family and table attributes -------------------------------------------------------- */

static const char *const shell_bloom_names[] = {"NONE", "ROW", "ROWCOL"};
static const char *const shell_compression_names[] = {"NONE", "SNAPPY", "GZ"};
static const char *const shell_encoding_names[] = {"NONE", "PREFIX", "DIFF", "FAST_DIFF",
                                                   "ROW_INDEX_V1"};
static const char *const shell_keep_names[] = {"FALSE", "TRUE", "TTL"};
static const char *const shell_durability_names[] = {"USE_DEFAULT", "SKIP_WAL", "ASYNC_WAL",
                                                     "SYNC_WAL", "FSYNC_WAL"};
#define SHELL_NELEM(a) (sizeof(a) / sizeof((a)[0]))

static int shell_family_name(const struct shell_val *v, char *out, struct ct_err *err)
{
    const char *s;
    int rc = val_cstr(v, "column family name", &s, err);
    if (rc != CT_OK)
        return rc;
    if (strlen(s) > WC_MAX_FAMILY_BYTES)
        return ct_err_set(err, CT_EINVAL, "column family name longer than %d bytes: '%.40s...'",
                          WC_MAX_FAMILY_BYTES, s);
    strcpy(out, s);
    return CT_OK;
}

/* Applies the attributes of a family dictionary to fd (NAME and, when allowed, METHOD are
 * skipped: the caller reads them). */
static int shell_family_apply(struct wc_family_desc *fd, const struct shell_val *d,
                              bool allow_method, struct ct_err *err)
{
    for (size_t i = 0; i < d->n; i++) {
        const char *k = dict_key(d, i);
        const struct shell_val *v = dict_val(d, i);
        int64_t x;
        int e, rc = CT_OK;
        if (!strcmp(k, "NAME") || (allow_method && !strcmp(k, "METHOD"))) {
            continue;
        } else if (!strcmp(k, "VERSIONS")) {
            if ((rc = val_int_range(v, "VERSIONS", 1, INT32_MAX, &x, err)) == CT_OK)
                fd->versions = (uint32_t)x;
        } else if (!strcmp(k, "MIN_VERSIONS")) {
            if ((rc = val_int_range(v, "MIN_VERSIONS", 0, INT32_MAX, &x, err)) == CT_OK)
                fd->min_versions = (uint32_t)x;
        } else if (!strcmp(k, "TTL")) {
            if (v->kind == SHELL_VAL_STR && !strcasecmp(v->str, "FOREVER")) {
                fd->ttl_s = WC_TTL_FOREVER;
            } else {
                rc = val_int(v, "TTL", &x, err);
                if (rc == CT_OK && (x <= 0 || x > WC_TTL_FOREVER))
                    rc = val_fail(err, v,
                                  "TTL must be > 0 and <= 2147483647 seconds (got %" PRId64 ")", x);
                if (rc == CT_OK)
                    fd->ttl_s = x;
            }
        } else if (!strcmp(k, "KEEP_DELETED_CELLS")) {
            if (v->kind == SHELL_VAL_BOOL) {
                fd->keep_deleted = v->num ? WC_KEEP_DELETED_TRUE : WC_KEEP_DELETED_FALSE;
            } else if ((rc = val_enum(v, "KEEP_DELETED_CELLS", shell_keep_names,
                                      SHELL_NELEM(shell_keep_names), &e, err)) == CT_OK) {
                fd->keep_deleted = (enum wc_keep_deleted)e;
            }
        } else if (!strcmp(k, "BLOOMFILTER")) {
            if ((rc = val_enum(v, "BLOOMFILTER", shell_bloom_names, SHELL_NELEM(shell_bloom_names),
                               &e, err)) == CT_OK)
                fd->bloom = (enum wc_bloom)e;
        } else if (!strcmp(k, "BLOCKSIZE")) {
            if ((rc = val_int(v, "BLOCKSIZE", &x, err)) == CT_OK) {
                if (x < 1024 || x > 16777216)
                    rc = val_fail(
                        err, v,
                        "BLOCKSIZE must be between 1024 and 16777216 bytes (got %" PRId64 ")", x);
                else
                    fd->blocksize = (uint32_t)x;
            }
        } else if (!strcmp(k, "BLOCKCACHE")) {
            rc = val_bool(v, "BLOCKCACHE", &fd->blockcache, err);
        } else if (!strcmp(k, "IN_MEMORY")) {
            rc = val_bool(v, "IN_MEMORY", &fd->in_memory, err);
        } else if (!strcmp(k, "COMPRESSION")) {
            if ((rc = val_enum(v, "COMPRESSION", shell_compression_names,
                               SHELL_NELEM(shell_compression_names), &e, err)) == CT_OK)
                fd->compression = (enum wc_compression)e;
        } else if (!strcmp(k, "DATA_BLOCK_ENCODING")) {
            if ((rc = val_enum(v, "DATA_BLOCK_ENCODING", shell_encoding_names,
                               SHELL_NELEM(shell_encoding_names), &e, err)) == CT_OK)
                fd->encoding = (enum wc_block_encoding)e;
        } else if (!strcmp(k, "REPLICATION_SCOPE")) {
            if ((rc = val_int(v, "REPLICATION_SCOPE", &x, err)) == CT_OK && x != 0)
                rc = val_fail(err, v, "REPLICATION_SCOPE must be 0 (got %" PRId64 ")", x);
        } else {
            rc = val_fail(err, &d->items[2 * i],
                          "unknown column family attribute %s (known: NAME, VERSIONS, "
                          "MIN_VERSIONS, TTL, KEEP_DELETED_CELLS, BLOOMFILTER, BLOCKSIZE, "
                          "BLOCKCACHE, IN_MEMORY, COMPRESSION, DATA_BLOCK_ENCODING, "
                          "REPLICATION_SCOPE)",
                          k);
        }
        if (rc != CT_OK)
            return rc;
    }
    return wc_family_desc_check(fd, err);
}

static bool shell_is_table_attr(const char *k)
{
    return !strcmp(k, "MAX_FILESIZE") || !strcmp(k, "MEMSTORE_FLUSHSIZE") ||
           !strcmp(k, "DURABILITY") || !strcmp(k, "READONLY") || !strcmp(k, "COMPACTION_ENABLED");
}

static int shell_table_attr_apply(struct wc_table_desc *td, const char *k,
                                  const struct shell_val *v, struct ct_err *err)
{
    int64_t x;
    int e, rc;
    if (!strcmp(k, "MAX_FILESIZE") || !strcmp(k, "MEMSTORE_FLUSHSIZE")) {
        if ((rc = val_int_range(v, k, 1, INT64_MAX, &x, err)) != CT_OK)
            return rc;
        if (k[1] == 'A')
            td->max_filesize = (uint64_t)x;
        else
            td->memstore_flushsize = (uint64_t)x;
        return CT_OK;
    }
    if (!strcmp(k, "DURABILITY")) {
        if ((rc = val_enum(v, "DURABILITY", shell_durability_names,
                           SHELL_NELEM(shell_durability_names), &e, err)) != CT_OK)
            return rc;
        td->durability = (enum wc_durability)e;
        return CT_OK;
    }
    if (!strcmp(k, "READONLY"))
        return val_bool(v, "READONLY", &td->readonly, err);
    return val_bool(v, "COMPACTION_ENABLED", &td->compaction_enabled, err);
}

/* ---- create ----------------------------------------------------------------------------- */

struct shell_families {
    struct wc_family_desc *v;
    size_t n, cap;
};

/* Adds or replaces (same name) a family. */
static int shell_families_put(struct shell_families *fs, const struct wc_family_desc *fd,
                              struct ct_err *err)
{
    for (size_t i = 0; i < fs->n; i++)
        if (!strcmp(fs->v[i].name, fd->name)) {
            fs->v[i] = *fd;
            return CT_OK;
        }
    if (fs->n == fs->cap) {
        size_t nc = fs->cap ? fs->cap * 2 : 4;
        struct wc_family_desc *nv = realloc(fs->v, nc * sizeof(*nv));
        if (!nv)
            return ct_err_set(err, CT_ENOMEM, "out of memory");
        fs->v = nv;
        fs->cap = nc;
    }
    fs->v[fs->n++] = *fd;
    return CT_OK;
}

static void shell_families_remove(struct shell_families *fs, size_t i)
{
    memmove(&fs->v[i], &fs->v[i + 1], (fs->n - i - 1) * sizeof(fs->v[0]));
    fs->n--;
}

static int shell_bytes_cmp(const void *a, const void *b)
{
    const struct wc_bytes *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = n ? memcmp(x->data, y->data, n) : 0;
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* The split keys of create: SPLITS (binary-decoded) or NUMREGIONS + SPLITALGO. *keys_mem owns
 * decoded bytes; *computed owns keys from wc_split_keys. */
struct shell_splits {
    struct wc_bytes *keys;
    size_t n;
    uint8_t *mem;
    bool computed;
};

static void shell_splits_free(struct shell_splits *s)
{
    if (s->computed)
        wc_split_keys_free(s->keys, s->n);
    else
        free(s->keys);
    free(s->mem);
    memset(s, 0, sizeof(*s));
}

static int shell_splits_build(const struct shell_val *splits, const struct shell_val *numregions,
                              const struct shell_val *algo, struct shell_splits *out,
                              struct ct_err *err)
{
    memset(out, 0, sizeof(*out));
    if (splits) {
        if (splits->kind != SHELL_VAL_ARRAY)
            return val_fail(err, splits, "SPLITS must be an array of keys");
        size_t total = 0;
        for (size_t i = 0; i < splits->n; i++) {
            if (splits->items[i].kind != SHELL_VAL_STR)
                return val_fail(err, &splits->items[i], "SPLITS must be an array of strings");
            total += splits->items[i].len;
        }
        out->keys = calloc(splits->n ? splits->n : 1, sizeof(*out->keys));
        out->mem = malloc(total ? total : 1);
        if (!out->keys || !out->mem) {
            shell_splits_free(out);
            return ct_err_set(err, CT_ENOMEM, "out of memory for split keys");
        }
        uint8_t *p = out->mem;
        for (size_t i = 0; i < splits->n; i++) {
            size_t n = shell_binary_decode(splits->items[i].str, splits->items[i].len, p);
            out->keys[i] = wc_bytes_of(p, n);
            p += n;
        }
        out->n = splits->n;
        /* check before the store sees them, to name the bad key */
        struct wc_bytes *sorted = malloc((out->n ? out->n : 1) * sizeof(*sorted));
        if (!sorted) {
            shell_splits_free(out);
            return ct_err_set(err, CT_ENOMEM, "out of memory for split keys");
        }
        memcpy(sorted, out->keys, out->n * sizeof(*sorted));
        qsort(sorted, out->n, sizeof(*sorted), shell_bytes_cmp);
        int rc = CT_OK;
        for (size_t i = 0; i < out->n && rc == CT_OK; i++) {
            if (sorted[i].len == 0)
                rc = ct_err_set(err, CT_EINVAL, "split keys must not be empty");
            else if (i && !shell_bytes_cmp(&sorted[i - 1], &sorted[i])) {
                struct shell_sbuf b = {0};
                rc = ct_err_set(err, CT_EINVAL, "split key '%s' is given twice",
                                sbuf_binary(&b, sorted[i].data, sorted[i].len));
                free(b.p);
            }
        }
        free(sorted);
        if (rc != CT_OK)
            shell_splits_free(out);
        return rc;
    }
    if (!numregions && !algo)
        return CT_OK;
    if (!algo)
        return ct_err_set(err, CT_EINVAL,
                          "NUMREGIONS needs SPLITALGO ('HexStringSplit' or "
                          "'UniformSplit')");
    if (!numregions)
        return ct_err_set(err, CT_EINVAL, "SPLITALGO needs NUMREGIONS");
    int64_t n;
    int rc = val_int(numregions, "NUMREGIONS", &n, err);
    if (rc != CT_OK)
        return rc;
    if (n < 2)
        return val_fail(err, numregions, "NUMREGIONS must be at least 2 (got %" PRId64 ")", n);
    if (n > 65536)
        return val_fail(err, numregions, "NUMREGIONS must be at most 65536 (got %" PRId64 ")", n);
    const char *a;
    if ((rc = val_cstr(algo, "SPLITALGO", &a, err)) != CT_OK)
        return rc;
    /* also the class names org.apache.hadoop.hbase.util.RegionSplitter(.|$)X */
    const char *base = a;
    for (const char *p = a; *p; p++)
        if (*p == '.' || *p == '$')
            base = p + 1;
    enum wc_split_algo al;
    if (!strcmp(base, "HexStringSplit"))
        al = WC_SPLIT_HEXSTRING;
    else if (!strcmp(base, "UniformSplit"))
        al = WC_SPLIT_UNIFORM;
    else
        return val_fail(err, algo, "SPLITALGO must be HexStringSplit or UniformSplit (got '%s')",
                        a);
    if ((rc = wc_split_keys(al, (unsigned)n, &out->keys, err)) != CT_OK)
        return rc;
    out->n = (size_t)n - 1;
    out->computed = true;
    return CT_OK;
}

/* Reads SPLITS_FILE: one key per line (binary-decoded later, like SPLITS). Fills *keys with an
 * ARRAY whose strings point into *text (both freed by the caller with free()). */
static int shell_splits_file(const struct shell_val *v, struct shell_val *keys, char **text,
                             struct ct_err *err)
{
    const char *path;
    int rc = val_cstr(v, "SPLITS_FILE", &path, err);
    if (rc != CT_OK)
        return rc;
    FILE *f = fopen(path, "r");
    if (!f)
        return ct_err_errno(err, CT_EIO, errno, "cannot open SPLITS_FILE %s", path);
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    int c;
    while (mem && (c = getc(f)) != EOF)
        putc(c, mem);
    bool bad = !mem || ferror(f);
    fclose(f);
    if (mem)
        fclose(mem);
    if (bad || !buf) {
        free(buf);
        return ct_err_set(err, CT_EIO, "cannot read SPLITS_FILE %s", path);
    }
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += buf[i] == '\n';
    n += len && buf[len - 1] != '\n';
    memset(keys, 0, sizeof(*keys));
    keys->kind = SHELL_VAL_ARRAY;
    keys->items = calloc(n ? n : 1, sizeof(*keys->items));
    if (!keys->items) {
        free(buf);
        return ct_err_set(err, CT_ENOMEM, "out of memory reading SPLITS_FILE");
    }
    char *p = buf, *end = buf + len;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *e = nl ? nl : end;
        *e = 0; /* buf has a NUL after len from open_memstream */
        struct shell_val *k = &keys->items[keys->n++];
        k->kind = SHELL_VAL_STR;
        k->str = p;
        k->len = (size_t)(e - p);
        p = e + 1;
    }
    *text = buf;
    return CT_OK;
}

static const char *const shell_table_attr_usage =
    "create 'ns:t', 'f1', {NAME => 'f2', VERSIONS => 5}, {SPLITS => ['a', 'b']}";

static int cmd_create(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    const char *name;
    int rc = shell_table_arg(c, 0, &name, err);
    if (rc != CT_OK)
        return rc;
    struct wc_table_desc td;
    wc_table_desc_init(&td, name);
    struct shell_families fs = {0};
    struct shell_splits sp = {0};
    const struct shell_val *splits = NULL, *numregions = NULL, *algo = NULL, *splits_file = NULL;
    struct shell_val file_keys = {0};
    char *file_text = NULL;
    for (size_t i = 1; i < c->nargs && rc == CT_OK; i++) {
        const struct shell_val *a = &c->args[i];
        struct wc_family_desc fd;
        char fname[WC_MAX_FAMILY_BYTES + 1];
        if (a->kind == SHELL_VAL_STR) {
            if ((rc = shell_family_name(a, fname, err)) != CT_OK)
                break;
            wc_family_desc_init(&fd, fname);
            if ((rc = wc_family_desc_check(&fd, err)) == CT_OK)
                rc = shell_families_put(&fs, &fd, err);
        } else if (a->kind == SHELL_VAL_DICT && dict_find(a, "NAME")) {
            if ((rc = shell_family_name(dict_find(a, "NAME"), fname, err)) != CT_OK)
                break;
            wc_family_desc_init(&fd, fname);
            if ((rc = shell_family_apply(&fd, a, false, err)) == CT_OK)
                rc = shell_families_put(&fs, &fd, err);
        } else if (a->kind == SHELL_VAL_DICT) {
            for (size_t k = 0; k < a->n && rc == CT_OK; k++) {
                const char *key = dict_key(a, k);
                if (!strcmp(key, "SPLITS"))
                    splits = dict_val(a, k);
                else if (!strcmp(key, "SPLITS_FILE"))
                    splits_file = dict_val(a, k);
                else if (!strcmp(key, "NUMREGIONS"))
                    numregions = dict_val(a, k);
                else if (!strcmp(key, "SPLITALGO"))
                    algo = dict_val(a, k);
                else if (shell_is_table_attr(key))
                    rc = shell_table_attr_apply(&td, key, dict_val(a, k), err);
                else
                    rc = val_fail(
                        err, &a->items[2 * k],
                        "unknown table attribute %s (known: SPLITS, SPLITS_FILE, "
                        "NUMREGIONS, SPLITALGO, MAX_FILESIZE, MEMSTORE_FLUSHSIZE, DURABILITY, "
                        "READONLY, COMPACTION_ENABLED; a family needs NAME)",
                        key);
            }
        } else {
            rc = arg_error(err, c, shell_table_attr_usage);
        }
    }
    if (rc == CT_OK && fs.n == 0)
        rc = ct_err_set(err, CT_EINVAL, "Table must have at least one column family");
    if (rc == CT_OK && splits_file && !splits &&
        (rc = shell_splits_file(splits_file, &file_keys, &file_text, err)) == CT_OK)
        splits = &file_keys;
    if (rc == CT_OK)
        rc = shell_splits_build(splits, numregions, algo, &sp, err);
    char ns[WC_MAX_TABLE_NAME], qual[WC_MAX_TABLE_NAME];
    if (rc == CT_OK)
        rc = wc_table_name_parse(name, ns, sizeof(ns), qual, sizeof(qual), err);
    if (rc == CT_OK)
        rc = shell_store(sh, err);
    if (rc == CT_OK) {
        int ex = wc_namespace_exists(sh->store, ns, err);
        if (ex == CT_NOTFOUND)
            rc = ct_err_set(err, CT_NOTFOUND, "Unknown namespace %s!", ns);
        else
            rc = ex;
    }
    if (rc == CT_OK) {
        int ex = wc_table_exists(sh->store, name, err);
        if (ex == CT_OK)
            rc = ct_err_set(err, CT_EEXIST, "Table already exists: %s!", name);
        else if (ex != CT_NOTFOUND)
            rc = ex;
    }
    if (rc == CT_OK) {
        td.families = fs.v;
        td.nfamilies = fs.n;
        rc = wc_table_create(sh->store, &td, sp.keys, sp.n, err);
        if (rc == CT_EEXIST)
            ct_err_set(err, CT_EEXIST, "Table already exists: %s!", name);
    }
    if (rc == CT_OK)
        fprintf(sh->o.out, "Created table %s\n", name);
    shell_splits_free(&sp);
    free(fs.v);
    free(file_keys.items);
    free(file_text);
    return rc;
}

/* ---- alter ------------------------------------------------------------------------------ */

static int shell_families_find(const struct shell_families *fs, const char *name)
{
    for (size_t i = 0; i < fs->n; i++)
        if (!strcmp(fs->v[i].name, name))
            return (int)i;
    return -1;
}

static int shell_alter_delete(struct shell_families *fs, const char *name, struct ct_err *err)
{
    int i = shell_families_find(fs, name);
    if (i < 0)
        return ct_err_set(err, CT_EINVAL, "column family %s does not exist", name);
    if (fs->n == 1)
        return ct_err_set(err, CT_EINVAL,
                          "cannot delete the last column family %s: a table needs at least one",
                          name);
    shell_families_remove(fs, (size_t)i);
    return CT_OK;
}

static int cmd_alter(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    const char *name;
    int rc = shell_table_arg(c, 0, &name, err);
    if (rc != CT_OK)
        return rc;
    if (c->nargs < 2)
        return arg_error(err, c, "alter 't', {NAME => 'f', VERSIONS => 3} | 'delete' => 'f'");
    if ((rc = shell_store(sh, err)) != CT_OK)
        return rc;
    struct wc_table_desc *cur = NULL;
    if ((rc = shell_describe(sh, name, &cur, err)) != CT_OK)
        return rc;
    struct wc_table_desc td = *cur;
    struct shell_families fs = {0};
    for (size_t i = 0; i < cur->nfamilies && rc == CT_OK; i++)
        rc = shell_families_put(&fs, &cur->families[i], err);
    size_t changes = 0;
    for (size_t i = 1; i < c->nargs && rc == CT_OK; i++) {
        const struct shell_val *a = &c->args[i];
        char fname[WC_MAX_FAMILY_BYTES + 1];
        struct wc_family_desc fd;
        changes++;
        if (a->kind == SHELL_VAL_STR) {
            if ((rc = shell_family_name(a, fname, err)) != CT_OK)
                break;
            if (shell_families_find(&fs, fname) < 0) {
                wc_family_desc_init(&fd, fname);
                if ((rc = wc_family_desc_check(&fd, err)) == CT_OK)
                    rc = shell_families_put(&fs, &fd, err);
            }
            continue;
        }
        if (a->kind != SHELL_VAL_DICT) {
            rc = arg_error(err, c, "alter 't', {NAME => 'f', VERSIONS => 3} | 'delete' => 'f'");
            break;
        }
        const struct shell_val *del = dict_find(a, "delete");
        const struct shell_val *nm = dict_find(a, "NAME");
        const struct shell_val *method = dict_find(a, "METHOD");
        const char *m = NULL;
        if (method && (rc = val_cstr(method, "METHOD", &m, err)) != CT_OK)
            break;
        if (del) {
            if (a->n != 1) {
                rc = ct_err_set(err, CT_EINVAL, "'delete' => 'f' takes nothing else");
            } else if ((rc = shell_family_name(del, fname, err)) == CT_OK) {
                rc = shell_alter_delete(&fs, fname, err);
            }
        } else if (m && !strcmp(m, "table_att_unset")) {
            const char *attr;
            if (!nm)
                rc = ct_err_set(err, CT_EINVAL, "table_att_unset needs NAME => 'ATTRIBUTE'");
            else if ((rc = val_cstr(nm, "NAME", &attr, err)) == CT_OK) {
                if (!strcmp(attr, "MAX_FILESIZE"))
                    td.max_filesize = 0;
                else if (!strcmp(attr, "MEMSTORE_FLUSHSIZE"))
                    td.memstore_flushsize = 0;
                else if (!strcmp(attr, "DURABILITY"))
                    td.durability = WC_DURABILITY_USE_DEFAULT;
                else if (!strcmp(attr, "READONLY"))
                    td.readonly = false;
                else if (!strcmp(attr, "COMPACTION_ENABLED"))
                    td.compaction_enabled = true;
                else
                    rc = ct_err_set(err, CT_EINVAL, "unknown table attribute %s", attr);
            }
        } else if (nm && !(m && !strcmp(m, "table_att"))) {
            if ((rc = shell_family_name(nm, fname, err)) != CT_OK)
                break;
            if (m && strcmp(m, "delete")) {
                rc = ct_err_set(err, CT_EINVAL,
                                "unknown METHOD '%s' (delete, table_att, table_att_unset)", m);
            } else if (m) {
                if (a->n != 2)
                    rc = ct_err_set(err, CT_EINVAL,
                                    "METHOD => 'delete' takes only NAME => 'family'");
                else
                    rc = shell_alter_delete(&fs, fname, err);
            } else {
                int at = shell_families_find(&fs, fname);
                if (at >= 0)
                    fd = fs.v[at];
                else
                    wc_family_desc_init(&fd, fname);
                if ((rc = shell_family_apply(&fd, a, true, err)) == CT_OK)
                    rc = shell_families_put(&fs, &fd, err);
            }
        } else {
            if (m && strcmp(m, "table_att"))
                rc = ct_err_set(err, CT_EINVAL,
                                "unknown METHOD '%s' (delete, table_att, table_att_unset)", m);
            for (size_t k = 0; k < a->n && rc == CT_OK; k++) {
                const char *key = dict_key(a, k);
                if (!strcmp(key, "METHOD"))
                    continue;
                if (shell_is_table_attr(key))
                    rc = shell_table_attr_apply(&td, key, dict_val(a, k), err);
                else
                    rc = val_fail(err, &a->items[2 * k],
                                  "unknown table attribute %s (known: MAX_FILESIZE, "
                                  "MEMSTORE_FLUSHSIZE, DURABILITY, READONLY, "
                                  "COMPACTION_ENABLED; a family needs NAME)",
                                  key);
            }
        }
    }
    size_t nregions = 0;
    struct wc_region_info *regions = NULL;
    if (rc == CT_OK && (rc = wc_table_regions(sh->store, name, &regions, &nregions, err)) == CT_OK)
        wc_region_info_free(regions, nregions);
    if (rc == CT_OK) {
        td.families = fs.v;
        td.nfamilies = fs.n;
        rc = wc_table_alter(sh->store, &td, err);
    }
    if (rc == CT_OK)
        for (size_t i = 0; i < changes; i++)
            fprintf(sh->o.out,
                    "Updating all regions with the new schema...\n%zu/%zu regions updated.\n"
                    "Done.\n",
                    nregions, nregions);
    free(fs.v);
    wc_table_desc_free(cur);
    return rc;
}

/* ---- describe, list, exists, enable/disable, drop, truncate ----------------------------- */

static int shell_family_cmp(const void *a, const void *b)
{
    return strcmp(((const struct wc_family_desc *)a)->name,
                  ((const struct wc_family_desc *)b)->name);
}

static int cmd_describe(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    const char *name;
    int rc = shell_table_arg(c, 0, &name, err);
    if (rc != CT_OK)
        return rc;
    if (c->nargs != 1)
        return arg_error(err, c, "describe 't'");
    struct wc_table_desc *d = NULL;
    if ((rc = shell_store(sh, err)) != CT_OK || (rc = shell_describe(sh, name, &d, err)) != CT_OK)
        return rc;
    if (d->nfamilies)
        qsort(d->families, d->nfamilies, sizeof(d->families[0]), shell_family_cmp);
    const char *disp = shell_display_name(d->name);
    FILE *f = sh->o.out;
    fprintf(f, "Table %s is %s\n%s", disp, d->enabled ? "ENABLED" : "DISABLED", disp);
    shell_fput_table_attributes(f, d);
    fputs("\nCOLUMN FAMILIES DESCRIPTION\n", f);
    for (size_t i = 0; i < d->nfamilies; i++) {
        shell_fput_family(f, &d->families[i]);
        putc('\n', f);
    }
    fprintf(f, "%zu row(s)\n", d->nfamilies);
    wc_table_desc_free(d);
    return CT_OK;
}

/* Collected names (tables or namespaces). */
struct shell_names {
    char **v;
    size_t n, cap;
    int rc;
};

static int shell_names_add(void *arg, const char *name)
{
    struct shell_names *ns = arg;
    if (ns->n == ns->cap) {
        size_t nc = ns->cap ? ns->cap * 2 : 16;
        char **nv = realloc(ns->v, nc * sizeof(*nv));
        if (!nv) {
            ns->rc = CT_ENOMEM;
            return 1;
        }
        ns->v = nv;
        ns->cap = nc;
    }
    if (!(ns->v[ns->n] = strdup(name))) {
        ns->rc = CT_ENOMEM;
        return 1;
    }
    ns->n++;
    return 0;
}

static void shell_names_free(struct shell_names *ns)
{
    for (size_t i = 0; i < ns->n; i++)
        free(ns->v[i]);
    free(ns->v);
    memset(ns, 0, sizeof(*ns));
}

static int shell_str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts names bytewise (strcmp compares as unsigned char); v may be NULL when n is 0. */
static void shell_names_sort(char **v, size_t n)
{
    if (n)
        qsort(v, n, sizeof(v[0]), shell_str_cmp);
}

static int shell_list_tables(struct shell *sh, struct shell_names *out, struct ct_err *err)
{
    memset(out, 0, sizeof(*out));
    int rc = wc_table_list(sh->store, shell_names_add, out, err);
    if (rc == CT_OK && out->rc != CT_OK)
        rc = ct_err_set(err, out->rc, "out of memory listing tables");
    if (rc != CT_OK)
        shell_names_free(out);
    return rc;
}

/* Compiles an optional regex argument, anchored at both ends (Java's matches()). */
static int shell_regex(const struct shell_cmd *c, size_t i, regex_t *re, bool *have,
                       struct ct_err *err)
{
    *have = false;
    if (c->nargs <= i)
        return CT_OK;
    const char *pat;
    int rc = val_cstr(&c->args[i], "regular expression", &pat, err);
    if (rc != CT_OK)
        return rc;
    size_t n = strlen(pat);
    char *anch = malloc(n + 5);
    if (!anch)
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    snprintf(anch, n + 5, "^(%s)$", pat);
    int e = regcomp(re, anch, REG_EXTENDED | REG_NOSUB);
    free(anch);
    if (e) {
        char msg[128];
        regerror(e, NULL, msg, sizeof(msg));
        return ct_err_set(err, CT_EINVAL, "bad regular expression '%s': %s", pat, msg);
    }
    *have = true;
    return CT_OK;
}

static int cmd_list(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    if (c->nargs > 1)
        return arg_error(err, c, "list ['regex']");
    regex_t re;
    bool have;
    int rc = shell_regex(c, 0, &re, &have, err);
    if (rc != CT_OK)
        return rc;
    struct shell_names ns;
    if ((rc = shell_store(sh, err)) != CT_OK || (rc = shell_list_tables(sh, &ns, err)) != CT_OK) {
        if (have)
            regfree(&re);
        return rc;
    }
    size_t shown = 0;
    for (size_t i = 0; i < ns.n; i++) {
        if (!strncmp(ns.v[i], "hbase:", 6))
            continue;
        const char *d = shell_display_name(ns.v[i]);
        if (have && regexec(&re, d, 0, NULL, 0) != 0)
            continue;
        memmove(ns.v[i], d, strlen(d) + 1);
        char *tmp = ns.v[shown];
        ns.v[shown++] = ns.v[i];
        ns.v[i] = tmp;
    }
    shell_names_sort(ns.v, shown);
    fputs("TABLE\n", sh->o.out);
    for (size_t i = 0; i < shown; i++)
        fprintf(sh->o.out, "%s\n", ns.v[i]);
    fprintf(sh->o.out, "%zu row(s)\n", shown);
    shell_names_free(&ns);
    if (have)
        regfree(&re);
    return CT_OK;
}

static int cmd_exists(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    const char *name;
    int rc = shell_table_arg(c, 0, &name, err);
    if (rc != CT_OK)
        return rc;
    if (c->nargs != 1)
        return arg_error(err, c, "exists 't'");
    if ((rc = shell_store(sh, err)) != CT_OK)
        return rc;
    rc = shell_is_meta(name) ? CT_OK : wc_table_exists(sh->store, name, err);
    if (rc != CT_OK && rc != CT_NOTFOUND)
        return rc;
    fprintf(sh->o.out, "Table %s %s\n", name, rc == CT_OK ? "does exist" : "does not exist");
    return CT_OK;
}

/* Describes the table named by the only argument. */
static int shell_one_table(struct shell *sh, const struct shell_cmd *c, const char *usage,
                           const char **name, struct wc_table_desc **d, struct ct_err *err)
{
    int rc = shell_table_arg(c, 0, name, err);
    if (rc != CT_OK)
        return rc;
    if (c->nargs != 1)
        return arg_error(err, c, usage);
    if ((rc = shell_store(sh, err)) != CT_OK)
        return rc;
    return shell_describe(sh, *name, d, err);
}

static int cmd_is_enabled(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    const char *name;
    struct wc_table_desc *d;
    int rc = shell_one_table(sh, c, "is_enabled 't'", &name, &d, err);
    if (rc != CT_OK)
        return rc;
    bool want = !strcmp(c->name, "is_enabled");
    fprintf(sh->o.out, "%s\n", d->enabled == want ? "true" : "false");
    wc_table_desc_free(d);
    return CT_OK;
}

static int cmd_enable(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    const char *name;
    struct wc_table_desc *d;
    int rc = shell_one_table(sh, c, "enable 't'", &name, &d, err);
    if (rc != CT_OK)
        return rc;
    bool enable = !strcmp(c->name, "enable");
    if (d->enabled != enable)
        rc =
            enable ? wc_table_enable(sh->store, name, err) : wc_table_disable(sh->store, name, err);
    wc_table_desc_free(d);
    return rc;
}

static int cmd_drop(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    const char *name;
    struct wc_table_desc *d;
    int rc = shell_one_table(sh, c, "drop 't'", &name, &d, err);
    if (rc != CT_OK)
        return rc;
    if (d->enabled)
        rc = ct_err_set(err, CT_EBUSY, "Table %s is enabled. Disable it first.", name);
    else
        rc = wc_table_drop(sh->store, name, err);
    wc_table_desc_free(d);
    return rc;
}

static int cmd_truncate(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    const char *name;
    struct wc_table_desc *d;
    int rc = shell_one_table(sh, c, "truncate 't'", &name, &d, err);
    if (rc != CT_OK)
        return rc;
    bool was_enabled = d->enabled;
    wc_table_desc_free(d);
    rc = wc_table_truncate(sh->store, name, !strcmp(c->name, "truncate_preserve"), err);
    if (rc != CT_OK)
        return rc;
    fprintf(sh->o.out, "Truncating '%s' table (it may take a while):\n", name);
    if (was_enabled)
        fputs("Disabling table...\n", sh->o.out);
    fputs("Truncating table...\n", sh->o.out);
    return CT_OK;
}

/* ---- namespaces ------------------------------------------------------------------------- */

static int shell_ns_arg(struct shell *sh, const struct shell_cmd *c, const char *usage,
                        size_t maxargs, const char **ns, bool must_exist, struct ct_err *err)
{
    if (c->nargs < 1 || c->nargs > maxargs)
        return arg_error(err, c, usage);
    int rc = val_cstr(&c->args[0], "namespace name", ns, err);
    if (rc != CT_OK || (rc = shell_store(sh, err)) != CT_OK)
        return rc;
    if (!must_exist)
        return CT_OK;
    rc = wc_namespace_exists(sh->store, *ns, err);
    if (rc == CT_NOTFOUND)
        return ct_err_set(err, CT_NOTFOUND, "Unknown namespace %s!", *ns);
    return rc;
}

static int cmd_create_namespace(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    const char *ns;
    int rc = shell_ns_arg(sh, c, "create_namespace 'ns'", 2, &ns, false, err);
    if (rc != CT_OK)
        return rc;
    /* the configuration pairs, values as text: {'k' => 'v', 'n' => 5} */
    const struct shell_val *cfg = c->nargs == 2 ? &c->args[1] : NULL;
    if (cfg && cfg->kind != SHELL_VAL_DICT)
        return arg_error(err, c, "create_namespace 'ns'[, {'key' => 'value', ...}]");
    size_t npairs = cfg ? cfg->n : 0;
    const char **kv = calloc(2 * npairs + 1, sizeof(char *));
    char(*nums)[24] = calloc(npairs + 1, sizeof(*nums));
    if (!kv || !nums) {
        free(kv);
        free(nums);
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < npairs && rc == CT_OK; i++) {
        const struct shell_val *v = dict_val(cfg, i);
        kv[2 * i] = dict_key(cfg, i);
        if (v->kind == SHELL_VAL_INT) {
            snprintf(nums[i], sizeof nums[i], "%lld", (long long)v->num);
            kv[2 * i + 1] = nums[i];
        } else {
            rc = val_cstr(v, "a namespace configuration value", &kv[2 * i + 1], err);
        }
    }
    if (rc == CT_OK) {
        rc = wc_namespace_exists(sh->store, ns, err);
        if (rc == CT_OK)
            rc = ct_err_set(err, CT_EEXIST, "Namespace %s already exists!", ns);
        else if (rc == CT_NOTFOUND)
            rc = wc_namespace_create_config(sh->store, ns, kv, npairs, err);
    }
    free(kv);
    free(nums);
    return rc;
}

static int cmd_drop_namespace(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    const char *ns;
    int rc = shell_ns_arg(sh, c, "drop_namespace 'ns'", 1, &ns, true, err);
    if (rc != CT_OK)
        return rc;
    if (!strcmp(ns, "default") || !strcmp(ns, "hbase"))
        return ct_err_set(err, CT_EINVAL, "Reserved namespace %s cannot be removed.", ns);
    struct shell_names tl;
    if ((rc = shell_list_tables(sh, &tl, err)) != CT_OK)
        return rc;
    size_t nlen = strlen(ns), count = 0;
    for (size_t i = 0; i < tl.n; i++)
        if (!strncmp(tl.v[i], ns, nlen) && tl.v[i][nlen] == ':')
            count++;
    shell_names_free(&tl);
    if (count)
        return ct_err_set(err, CT_EBUSY,
                          "Only empty namespaces can be removed. Namespace %s has %zu table(s)", ns,
                          count);
    return wc_namespace_drop(sh->store, ns, err);
}

static int cmd_list_namespace(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    if (c->nargs > 1)
        return arg_error(err, c, "list_namespace ['regex']");
    regex_t re;
    bool have;
    int rc = shell_regex(c, 0, &re, &have, err);
    if (rc != CT_OK)
        return rc;
    struct shell_names ns = {0};
    if ((rc = shell_store(sh, err)) == CT_OK) {
        rc = wc_namespace_list(sh->store, shell_names_add, &ns, err);
        if (rc == CT_OK && ns.rc != CT_OK)
            rc = ct_err_set(err, ns.rc, "out of memory listing namespaces");
    }
    if (rc == CT_OK) {
        shell_names_sort(ns.v, ns.n);
        size_t shown = 0;
        fputs("NAMESPACE\n", sh->o.out);
        for (size_t i = 0; i < ns.n; i++) {
            if (have && regexec(&re, ns.v[i], 0, NULL, 0) != 0)
                continue;
            fprintf(sh->o.out, "%s\n", ns.v[i]);
            shown++;
        }
        fprintf(sh->o.out, "%zu row(s)\n", shown);
    }
    shell_names_free(&ns);
    if (have)
        regfree(&re);
    return rc;
}

static int cmd_describe_namespace(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    const char *ns;
    int rc = shell_ns_arg(sh, c, "describe_namespace 'ns'", 1, &ns, true, err);
    if (rc != CT_OK)
        return rc;
    char **kv = NULL;
    size_t n = 0;
    if ((rc = wc_namespace_get_config(sh->store, ns, &kv, &n, err)) != CT_OK)
        return rc == CT_NOTFOUND ? ct_err_set(err, CT_NOTFOUND, "Unknown namespace %s!", ns) : rc;
    fprintf(sh->o.out, "DESCRIPTION\n{NAME => '%s'", ns);
    for (size_t i = 0; i < n; i++) /* HBase shows configuration keys bare, values quoted */
        fprintf(sh->o.out, ", %s => '%s'", kv[2 * i], kv[2 * i + 1]);
    fprintf(sh->o.out, "}\n1 row(s)\n");
    wc_namespace_config_free(kv, n);
    return CT_OK;
}

static int cmd_list_namespace_tables(struct shell *sh, const struct shell_cmd *c,
                                     struct ct_err *err)
{
    const char *ns;
    int rc = shell_ns_arg(sh, c, "list_namespace_tables 'ns'", 1, &ns, true, err);
    if (rc != CT_OK)
        return rc;
    struct shell_names tl;
    if ((rc = shell_list_tables(sh, &tl, err)) != CT_OK)
        return rc;
    shell_names_sort(tl.v, tl.n);
    size_t nlen = strlen(ns), shown = 0;
    fputs("TABLE\n", sh->o.out);
    if (!strcmp(ns, "hbase")) { /* the catalog's view; user tables are never there */
        fprintf(sh->o.out, "%s\n", &SHELL_META_TABLE[sizeof("hbase:") - 1]);
        shown++;
    }
    for (size_t i = 0; i < tl.n; i++)
        if (!strncmp(tl.v[i], ns, nlen) && tl.v[i][nlen] == ':') {
            fprintf(sh->o.out, "%s\n", tl.v[i] + nlen + 1);
            shown++;
        }
    fprintf(sh->o.out, "%zu row(s)\n", shown);
    shell_names_free(&tl);
    return CT_OK;
}

/* ---- writes ----------------------------------------------------------------------------- */

/* Opens the table of argument 0 for data: it must exist and be enabled. *d and *t are closed by
 * shell_data_close. */
static int shell_data_open(struct shell *sh, const struct shell_cmd *c, const char **name,
                           struct wc_table_desc **d, struct wc_table **t, struct ct_err *err)
{
    *d = NULL;
    *t = NULL;
    int rc = shell_table_arg(c, 0, name, err);
    if (rc != CT_OK || (rc = shell_store(sh, err)) != CT_OK ||
        (rc = shell_describe(sh, *name, d, err)) != CT_OK)
        return rc;
    struct wc_store *st;
    const char *there;
    if ((rc = shell_require_enabled(*d, *name, err)) == CT_OK &&
        (rc = shell_store_of(sh, *name, &st, &there, err)) == CT_OK)
        rc = wc_table_open(st, there, t, err);
    if (rc == CT_NOTFOUND)
        rc = ct_err_set(err, CT_NOTFOUND, "Table %s does not exist.", *name);
    if (rc != CT_OK) {
        wc_table_desc_free(*d);
        *d = NULL;
        *t = NULL;
    }
    return rc;
}

static void shell_data_close(struct wc_table_desc *d, struct wc_table *t)
{
    wc_table_close(t);
    wc_table_desc_free(d);
}

static int cmd_put(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    static const char usage[] = "put 't', 'r', 'f:q', 'value'[, ts]";
    if (c->nargs < 4 || c->nargs > 5)
        return arg_error(err, c, usage);
    char t1[24], t2[24], t3[24];
    struct wc_bytes row, col, val;
    struct wc_mutation m = {.op = WC_OP_PUT, .ts_ms = WC_TS_LATEST};
    int rc;
    if ((rc = val_bytes(&c->args[1], "row key", t1, &row, err)) != CT_OK ||
        (rc = val_bytes(&c->args[2], "column", t2, &col, err)) != CT_OK ||
        (rc = val_bytes(&c->args[3], "value", t3, &val, err)) != CT_OK)
        return rc;
    if (c->nargs == 5 && (rc = val_ts(&c->args[4], "timestamp", &m.ts_ms, err)) != CT_OK)
        return rc;
    struct wc_column wcol;
    shell_split_column(col, &wcol);
    m.family = wcol.family;
    m.qualifier = wcol.qualifier;
    m.value = val;
    const char *name;
    struct wc_table_desc *d;
    struct wc_table *t;
    if ((rc = shell_data_open(sh, c, &name, &d, &t, err)) != CT_OK)
        return rc;
    if ((rc = shell_family_known(d, m.family, err)) == CT_OK) {
        struct wc_row_mutation rm = {row, &m, 1};
        rc = wc_mutate_row(t, &rm, WC_DURABILITY_USE_DEFAULT, err);
    }
    shell_data_close(d, t);
    return rc;
}

/* delete 't','r','f:q'[, ts] | delete 't','r','f'[, ts]; deleteall 't','r'[, 'f:q' | 'f' | ''
 * [, ts]]. */
static int cmd_delete(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    bool all = !strcmp(c->name, "deleteall");
    const char *usage =
        all ? "deleteall 't', 'r'[, 'f:q' | 'f' | ''[, ts]]" : "delete 't', 'r', 'f:q' | 'f'[, ts]";
    if (c->nargs < (all ? 2u : 3u) || c->nargs > 4)
        return arg_error(err, c, usage);
    char t1[24], t2[24];
    struct wc_bytes row, col = {0};
    struct wc_mutation m = {.ts_ms = WC_TS_LATEST};
    int rc = val_bytes(&c->args[1], "row key", t1, &row, err);
    if (rc != CT_OK)
        return rc;
    if (c->nargs >= 3 && c->args[2].kind != SHELL_VAL_NIL &&
        (rc = val_bytes(&c->args[2], "column", t2, &col, err)) != CT_OK)
        return rc;
    if (c->nargs == 4 && (rc = val_ts(&c->args[3], "timestamp", &m.ts_ms, err)) != CT_OK)
        return rc;
    struct wc_column wcol;
    shell_split_column(col, &wcol);
    if (col.len == 0) {
        if (!all)
            return ct_err_set(err, CT_EINVAL, "delete needs a column; use deleteall for a row");
        m.op = WC_OP_DELETE_ROW;
    } else if (wcol.has_qualifier) {
        m.op = all ? WC_OP_DELETE_COLUMN : WC_OP_DELETE_VERSION;
    } else {
        m.op = all ? WC_OP_DELETE_FAMILY : WC_OP_DELETE_FAMILY_VERSION;
    }
    m.family = wcol.family;
    m.qualifier = wcol.qualifier;
    const char *name;
    struct wc_table_desc *d;
    struct wc_table *t;
    if ((rc = shell_data_open(sh, c, &name, &d, &t, err)) != CT_OK)
        return rc;
    if (m.op == WC_OP_DELETE_ROW || (rc = shell_family_known(d, m.family, err)) == CT_OK) {
        struct wc_row_mutation rm = {row, &m, 1};
        rc = wc_mutate_row(t, &rm, WC_DURABILITY_USE_DEFAULT, err);
    }
    shell_data_close(d, t);
    return rc;
}

/* Reads incr/get_counter's 'f:q' (a qualifier is required). */
static int shell_counter_column(const struct shell_cmd *c, char *tmp, struct wc_column *col,
                                struct ct_err *err)
{
    struct wc_bytes s;
    int rc = val_bytes(&c->args[2], "column", tmp, &s, err);
    if (rc != CT_OK)
        return rc;
    shell_split_column(s, col);
    if (!col->has_qualifier)
        return ct_err_set(err, CT_EINVAL, "%s needs a column 'family:qualifier'", c->name);
    return CT_OK;
}

static int cmd_incr(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    if (c->nargs < 3 || c->nargs > 4)
        return arg_error(err, c, "incr 't', 'r', 'f:q'[, n]");
    char t1[24], t2[24];
    struct wc_bytes row;
    struct wc_column col;
    int64_t delta = 1, value = 0;
    int rc;
    if ((rc = val_bytes(&c->args[1], "row key", t1, &row, err)) != CT_OK ||
        (rc = shell_counter_column(c, t2, &col, err)) != CT_OK)
        return rc;
    if (c->nargs == 4 && (rc = val_int(&c->args[3], "increment", &delta, err)) != CT_OK)
        return rc;
    const char *name;
    struct wc_table_desc *d;
    struct wc_table *t;
    if ((rc = shell_data_open(sh, c, &name, &d, &t, err)) != CT_OK)
        return rc;
    if ((rc = shell_family_known(d, col.family, err)) == CT_OK)
        rc = wc_increment(t, row, col.family, col.qualifier, delta, WC_DURABILITY_USE_DEFAULT,
                          &value, err);
    shell_data_close(d, t);
    if (rc == CT_OK)
        fprintf(sh->o.out, "COUNTER VALUE = %" PRId64 "\n", value);
    return rc;
}

static int cmd_get_counter(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    if (c->nargs != 3)
        return arg_error(err, c, "get_counter 't', 'r', 'f:q'");
    char t1[24], t2[24];
    struct wc_bytes row;
    struct wc_column col;
    int rc;
    if ((rc = val_bytes(&c->args[1], "row key", t1, &row, err)) != CT_OK ||
        (rc = shell_counter_column(c, t2, &col, err)) != CT_OK)
        return rc;
    const char *name;
    struct wc_table_desc *d;
    struct wc_table *t;
    if ((rc = shell_data_open(sh, c, &name, &d, &t, err)) != CT_OK)
        return rc;
    struct wc_result res = {0};
    if ((rc = shell_family_known(d, col.family, err)) == CT_OK) {
        struct wc_scan_options o;
        wc_scan_options_init(&o);
        o.columns = &col;
        o.ncolumns = 1;
        rc = wc_get(t, row, &o, &res, err);
    }
    if (rc == CT_OK) {
        if (res.row.ncells == 0) {
            fputs("No counter found at specified coordinates\n", sh->o.out);
        } else if (res.row.cells[0].value.len != 8) {
            rc = ct_err_set(err, CT_EINVAL,
                            "the value at this column is %zu bytes long, not an 8-byte counter",
                            res.row.cells[0].value.len);
        } else {
            const uint8_t *p = res.row.cells[0].value.data;
            uint64_t u = 0;
            for (int i = 0; i < 8; i++)
                u = u << 8 | p[i];
            fprintf(sh->o.out, "COUNTER VALUE = %" PRId64 "\n", (int64_t)u);
        }
    }
    wc_result_release(&res);
    shell_data_close(d, t);
    return rc;
}

/* ---- reads: options and FILTER strings -------------------------------------------------- */

/* The options of get, scan and count, with storage for what the wc options borrow. */
struct shell_read {
    struct wc_scan_options o;
    struct wc_column *cols;
    size_t ncols;
    char *filter_mem;              /* decoded FILTER string arguments */
    struct wc_bytes filter_prefix; /* PrefixFilter */
    bool have_filter_prefix;
    uint64_t interval; /* count */
};

static void shell_read_free(struct shell_read *r)
{
    free(r->cols);
    free(r->filter_mem);
    memset(r, 0, sizeof(*r));
}

static int shell_read_add_column(struct shell_read *r, const struct shell_val *v,
                                 struct ct_err *err)
{
    char tmp[24];
    struct wc_bytes s;
    int rc = val_bytes(v, "column", tmp, &s, err);
    if (rc != CT_OK)
        return rc;
    if (v->kind == SHELL_VAL_INT)
        return val_fail(err, v, "a column must be a string 'family:qualifier'");
    struct wc_column *nc = realloc(r->cols, (r->ncols + 1) * sizeof(*nc));
    if (!nc)
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    r->cols = nc;
    shell_split_column(s, &r->cols[r->ncols++]);
    return CT_OK;
}

static int shell_read_columns(struct shell_read *r, const struct shell_val *v, struct ct_err *err)
{
    if (v->kind == SHELL_VAL_ARRAY) {
        for (size_t i = 0; i < v->n; i++) {
            int rc = shell_read_add_column(r, &v->items[i], err);
            if (rc != CT_OK)
                return rc;
        }
        return CT_OK;
    }
    return shell_read_add_column(r, v, err);
}

/* A tiny lexer over HBase's filter language: Name ( 'arg', true, 3 ) [AND ...]. */
struct shell_flex {
    const char *p;
    const char *start;
    char *out; /* where decoded string arguments are written (never longer than the input) */
};

static void flex_blank(struct shell_flex *fx)
{
    while (*fx->p == ' ' || *fx->p == '\t')
        fx->p++;
}

static int flex_fail(struct shell_flex *fx, const char *what, struct ct_err *err)
{
    return ct_err_set(err, CT_EINVAL, "bad FILTER string at character %d: %s",
                      (int)(fx->p - fx->start) + 1, what);
}

/* Reads a quoted argument ('' is a quote inside it) into fx->out; returns its bytes. */
static int flex_string(struct shell_flex *fx, struct wc_bytes *out, struct ct_err *err)
{
    flex_blank(fx);
    if (*fx->p != '\'')
        return flex_fail(fx, "expected a quoted argument", err);
    fx->p++;
    char *o = fx->out;
    for (;;) {
        if (!*fx->p)
            return flex_fail(fx, "unterminated quoted argument", err);
        if (*fx->p == '\'') {
            if (fx->p[1] == '\'') {
                *o++ = '\'';
                fx->p += 2;
                continue;
            }
            fx->p++;
            break;
        }
        *o++ = *fx->p++;
    }
    *out = wc_bytes_of(fx->out, (size_t)(o - fx->out));
    fx->out = o;
    return CT_OK;
}

static int flex_bool(struct shell_flex *fx, bool *out, struct ct_err *err)
{
    flex_blank(fx);
    if (!strncasecmp(fx->p, "true", 4)) {
        fx->p += 4;
        *out = true;
        return CT_OK;
    }
    if (!strncasecmp(fx->p, "false", 5)) {
        fx->p += 5;
        *out = false;
        return CT_OK;
    }
    return flex_fail(fx, "expected true or false", err);
}

static int flex_punct(struct shell_flex *fx, char ch, struct ct_err *err)
{
    flex_blank(fx);
    if (*fx->p != ch) {
        char m[32];
        snprintf(m, sizeof(m), "expected '%c'", ch);
        return flex_fail(fx, m, err);
    }
    fx->p++;
    return CT_OK;
}

static int shell_filter_parse(struct shell_read *r, const struct shell_val *v, struct ct_err *err)
{
    const char *s;
    int rc = val_cstr(v, "FILTER", &s, err);
    if (rc != CT_OK)
        return rc;
    free(r->filter_mem);
    r->filter_mem = malloc(strlen(s) + 1);
    if (!r->filter_mem)
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    struct shell_flex fx = {s, s, r->filter_mem};
    bool seen_cp = false, seen_cr = false, seen_p = false;
    for (;;) {
        flex_blank(&fx);
        int parens = 0; /* "(PrefixFilter ('r')) AND (...)" */
        while (*fx.p == '(') {
            parens++;
            fx.p++;
            flex_blank(&fx);
        }
        const char *nm = fx.p;
        while ((*fx.p >= 'A' && *fx.p <= 'Z') || (*fx.p >= 'a' && *fx.p <= 'z'))
            fx.p++;
        size_t nlen = (size_t)(fx.p - nm);
        if (nlen == 0)
            return flex_fail(&fx, "expected a filter name", err);
        if ((rc = flex_punct(&fx, '(', err)) != CT_OK)
            return rc;
        if (nlen == 18 && !strncmp(nm, "ColumnPrefixFilter", nlen) && !seen_cp) {
            seen_cp = true;
            if ((rc = flex_string(&fx, &r->o.qualifier_prefix, err)) != CT_OK)
                return rc;
        } else if (nlen == 17 && !strncmp(nm, "ColumnRangeFilter", nlen) && !seen_cr) {
            seen_cr = true;
            r->o.has_qualifier_range = true;
            if ((rc = flex_string(&fx, &r->o.qualifier_min, err)) != CT_OK ||
                (rc = flex_punct(&fx, ',', err)) != CT_OK ||
                (rc = flex_bool(&fx, &r->o.qualifier_min_inclusive, err)) != CT_OK ||
                (rc = flex_punct(&fx, ',', err)) != CT_OK ||
                (rc = flex_string(&fx, &r->o.qualifier_max, err)) != CT_OK ||
                (rc = flex_punct(&fx, ',', err)) != CT_OK ||
                (rc = flex_bool(&fx, &r->o.qualifier_max_inclusive, err)) != CT_OK)
                return rc;
        } else if (nlen == 12 && !strncmp(nm, "PrefixFilter", nlen) && !seen_p) {
            seen_p = true;
            r->have_filter_prefix = true;
            if ((rc = flex_string(&fx, &r->filter_prefix, err)) != CT_OK)
                return rc;
        } else if ((nlen == 18 && !strncmp(nm, "ColumnPrefixFilter", nlen)) ||
                   (nlen == 17 && !strncmp(nm, "ColumnRangeFilter", nlen)) ||
                   (nlen == 12 && !strncmp(nm, "PrefixFilter", nlen))) {
            return ct_err_set(err, CT_EINVAL, "FILTER may use %.*s only once", (int)nlen, nm);
        } else {
            return ct_err_set(err, CT_EINVAL,
                              "unsupported filter %.*s (supported: ColumnPrefixFilter, "
                              "ColumnRangeFilter, PrefixFilter, joined with AND)",
                              (int)nlen, nm);
        }
        if ((rc = flex_punct(&fx, ')', err)) != CT_OK)
            return rc;
        for (; parens > 0; parens--)
            if ((rc = flex_punct(&fx, ')', err)) != CT_OK)
                return rc;
        flex_blank(&fx);
        if (!*fx.p)
            return CT_OK;
        if (!strncmp(fx.p, "AND", 3) && (fx.p[3] == ' ' || fx.p[3] == '\t')) {
            fx.p += 3;
            continue;
        }
        if (!strncmp(fx.p, "OR", 2))
            return flex_fail(&fx, "OR is not supported (only AND)", err);
        return flex_fail(&fx, "expected AND or the end of the filter", err);
    }
}

enum shell_read_kind {
    SHELL_READ_GET,
    SHELL_READ_SCAN,
    SHELL_READ_COUNT,
};

/* Applies an options dictionary of get, scan or count. */
static int shell_read_options(struct shell_read *r, const struct shell_val *d,
                              enum shell_read_kind kind, struct ct_err *err)
{
    bool have_ts = false, have_tr = false;
    for (size_t i = 0; i < d->n; i++) {
        const char *k = dict_key(d, i);
        const struct shell_val *v = dict_val(d, i);
        int64_t x;
        int rc = CT_OK;
        bool scan = kind != SHELL_READ_GET;
        if (!strcmp(k, "COLUMNS") || !strcmp(k, "COLUMN")) {
            rc = shell_read_columns(r, v, err);
        } else if (!strcmp(k, "VERSIONS") && kind != SHELL_READ_COUNT) {
            if ((rc = val_int_range(v, "VERSIONS", 1, INT32_MAX, &x, err)) == CT_OK)
                r->o.max_versions = (uint32_t)x;
        } else if (!strcmp(k, "TIMERANGE") && kind != SHELL_READ_COUNT) {
            int64_t a, b;
            if (v->kind != SHELL_VAL_ARRAY || v->n != 2)
                rc = val_fail(err, v, "TIMERANGE must be [min, max]");
            else if ((rc = val_int_range(&v->items[0], "TIMERANGE min", 0, INT64_MAX, &a, err)) ==
                         CT_OK &&
                     (rc = val_int_range(&v->items[1], "TIMERANGE max", 0, INT64_MAX, &b, err)) ==
                         CT_OK) {
                if (a > b)
                    rc = ct_err_set(err, CT_EINVAL,
                                    "TIMERANGE min %" PRId64 " is above max %" PRId64, a, b);
                r->o.tmin_ms = a;
                r->o.tmax_ms = b;
                have_tr = true;
            }
        } else if (!strcmp(k, "TIMESTAMP") && kind != SHELL_READ_COUNT) {
            if ((rc = val_ts(v, "TIMESTAMP", &x, err)) == CT_OK) {
                r->o.tmin_ms = x;
                r->o.tmax_ms = x + 1;
                have_ts = true;
            }
        } else if (!strcmp(k, "FILTER")) {
            rc = shell_filter_parse(r, v, err);
        } else if (scan && !strcmp(k, "STARTROW")) {
            char tmp[24];
            if ((rc = val_bytes(v, "STARTROW", tmp, &r->o.start_row, err)) == CT_OK &&
                v->kind != SHELL_VAL_STR)
                rc = val_fail(err, v, "STARTROW must be a string");
        } else if (scan && (!strcmp(k, "STOPROW") || !strcmp(k, "ENDROW"))) {
            char tmp[24];
            if ((rc = val_bytes(v, k, tmp, &r->o.stop_row, err)) == CT_OK &&
                v->kind != SHELL_VAL_STR)
                rc = val_fail(err, v, "%s must be a string", k);
        } else if (scan && !strcmp(k, "ROWPREFIXFILTER")) {
            char tmp[24];
            if ((rc = val_bytes(v, k, tmp, &r->o.row_prefix, err)) == CT_OK &&
                v->kind != SHELL_VAL_STR)
                rc = ct_err_set(err, CT_EINVAL, "ROWPREFIXFILTER must be a string");
        } else if (kind == SHELL_READ_SCAN && !strcmp(k, "LIMIT")) {
            if ((rc = val_int_range(v, "LIMIT", 0, INT64_MAX, &x, err)) == CT_OK)
                r->o.limit_rows = (uint64_t)x;
        } else if (kind == SHELL_READ_SCAN && !strcmp(k, "REVERSED")) {
            rc = val_bool(v, "REVERSED", &r->o.reversed, err);
        } else if (kind == SHELL_READ_SCAN && !strcmp(k, "RAW")) {
            rc = val_bool(v, "RAW", &r->o.raw, err);
        } else if (kind == SHELL_READ_SCAN && !strcmp(k, "BATCH")) {
            if ((rc = val_int_range(v, "BATCH", 1, INT32_MAX, &x, err)) == CT_OK)
                r->o.batch_cells = (uint32_t)x;
        } else if (scan && !strcmp(k, "CACHE")) {
            rc = val_int_range(v, "CACHE", 1, INT32_MAX, &x, err); /* transport only */
        } else if (kind == SHELL_READ_SCAN && !strcmp(k, "CACHE_BLOCKS")) {
            bool ignored;
            rc = val_bool(v, "CACHE_BLOCKS", &ignored, err);
        } else if (kind == SHELL_READ_COUNT && !strcmp(k, "INTERVAL")) {
            if ((rc = val_int_range(v, "INTERVAL", 1, INT64_MAX, &x, err)) == CT_OK)
                r->interval = (uint64_t)x;
        } else {
            static const char *const known[] = {
                "COLUMN(S), VERSIONS, TIMERANGE, TIMESTAMP, FILTER",
                ("STARTROW, STOPROW, ROWPREFIXFILTER, COLUMNS, VERSIONS, TIMERANGE, TIMESTAMP, "
                 "LIMIT, REVERSED, CACHE, BATCH, FILTER, RAW"),
                "INTERVAL, CACHE, STARTROW, STOPROW, ROWPREFIXFILTER, COLUMNS, FILTER"};
            rc = val_fail(err, &d->items[2 * i], "unknown option %s (known: %s)", k, known[kind]);
        }
        if (rc != CT_OK)
            return rc;
    }
    if (have_ts && have_tr)
        return ct_err_set(err, CT_EINVAL, "give TIMESTAMP or TIMERANGE, not both");
    return CT_OK;
}

/* Checks the families of the selected columns. */
static int shell_read_check(struct shell_read *r, const struct wc_table_desc *d, struct ct_err *err)
{
    for (size_t i = 0; i < r->ncols; i++) {
        int rc = shell_family_known(d, r->cols[i].family, err);
        if (rc != CT_OK)
            return rc;
    }
    r->o.columns = r->cols;
    r->o.ncolumns = r->ncols;
    return CT_OK;
}

static bool shell_has_prefix(struct wc_bytes s, struct wc_bytes p)
{
    return s.len >= p.len && (p.len == 0 || !memcmp(s.data, p.data, p.len));
}

static const char *shell_type_name(enum wc_cell_type t)
{
    switch (t) {
    case WC_TYPE_PUT:
        return "Put";
    case WC_TYPE_DELETE:
        return "Delete";
    case WC_TYPE_DELETE_FAMILY_VERSION:
        return "DeleteFamilyVersion";
    case WC_TYPE_DELETE_COLUMN:
        return "DeleteColumn";
    case WC_TYPE_DELETE_FAMILY:
        return "DeleteFamily";
    }
    return "?";
}

static void shell_print_cell(struct shell *sh, const struct wc_cell *cell, bool scan)
{
    /* column name "f:q" */
    struct shell_sbuf *col = &sh->b3, *first = &sh->b1, *tmp = &sh->b2;
    sbuf_binary(col, cell->family.data, cell->family.len);
    sbuf_binary(tmp, cell->qualifier.data, cell->qualifier.len);
    if (sbuf_reserve(col, tmp->len + 1) == CT_OK) {
        col->p[col->len++] = ':';
        memcpy(col->p + col->len, tmp->p, tmp->len + 1);
        col->len += tmp->len;
    }
    bool marker = cell->type != WC_TYPE_PUT;
    const char *val =
        marker ? shell_type_name(cell->type) : sbuf_binary(tmp, cell->value.data, cell->value.len);
    FILE *f = sh->o.out;
    int w = shell_col_width(sh);
    if (scan) {
        sbuf_binary(first, cell->row.data, cell->row.len);
        if (w)
            fprintf(f, " %-*s column=%s, timestamp=%" PRId64 ", %s=%s\n", w, first->p, col->p,
                    cell->ts_ms, marker ? "type" : "value", val);
        else
            fprintf(f, " %s column=%s, timestamp=%" PRId64 ", %s=%s\n", first->p, col->p,
                    cell->ts_ms, marker ? "type" : "value", val);
    } else {
        if (w)
            fprintf(f, " %-*s timestamp=%" PRId64 ", %s=%s\n", w, col->p, cell->ts_ms,
                    marker ? "type" : "value", val);
        else
            fprintf(f, " %s timestamp=%" PRId64 ", %s=%s\n", col->p, cell->ts_ms,
                    marker ? "type" : "value", val);
    }
}

static int cmd_get(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    if (c->nargs < 2)
        return arg_error(err, c, "get 't', 'r'[, 'f:q', ... | ['f:q', 'g'] | {COLUMN => ...}]");
    char t1[24];
    struct wc_bytes row;
    struct shell_read r = {0};
    wc_scan_options_init(&r.o);
    int rc = val_bytes(&c->args[1], "row key", t1, &row, err);
    for (size_t i = 2; i < c->nargs && rc == CT_OK; i++) {
        const struct shell_val *a = &c->args[i];
        if (a->kind == SHELL_VAL_DICT) {
            if (i != c->nargs - 1)
                rc = arg_error(err, c, "get 't', 'r', {COLUMN => ...} (options come last)");
            else
                rc = shell_read_options(&r, a, SHELL_READ_GET, err);
        } else {
            rc = shell_read_columns(&r, a, err);
        }
    }
    const char *name;
    struct wc_table_desc *d = NULL;
    struct wc_table *t = NULL;
    if (rc == CT_OK)
        rc = shell_data_open(sh, c, &name, &d, &t, err);
    struct wc_result res = {0};
    if (rc == CT_OK && (rc = shell_read_check(&r, d, err)) == CT_OK &&
        !(r.have_filter_prefix && !shell_has_prefix(row, r.filter_prefix)))
        rc = wc_get(t, row, &r.o, &res, err);
    if (rc == CT_OK) {
        shell_header(sh, "COLUMN", "CELL");
        for (size_t i = 0; i < res.row.ncells; i++)
            shell_print_cell(sh, &res.row.cells[i], false);
        fprintf(sh->o.out, "%d row(s)\n", res.row.ncells ? 1 : 0);
    }
    wc_result_release(&res);
    shell_data_close(d, t);
    shell_read_free(&r);
    return rc;
}

/* Combines PrefixFilter with ROWPREFIXFILTER: the longer one if one extends the other; false
 * if they exclude each other (no row can match). */
static bool shell_read_merge_prefix(struct shell_read *r)
{
    if (!r->have_filter_prefix)
        return true;
    struct wc_bytes a = r->o.row_prefix, b = r->filter_prefix;
    if (shell_has_prefix(a, b))
        return true;
    if (shell_has_prefix(b, a)) {
        r->o.row_prefix = b;
        return true;
    }
    return false;
}

static int shell_scan_setup(struct shell *sh, const struct shell_cmd *c, enum shell_read_kind kind,
                            const char *usage, struct shell_read *r, struct wc_table_desc **d,
                            struct wc_table **t, struct ct_err *err)
{
    memset(r, 0, sizeof(*r));
    wc_scan_options_init(&r->o);
    r->interval = 1000;
    *d = NULL;
    *t = NULL;
    if (c->nargs < 1 || c->nargs > 2)
        return arg_error(err, c, usage);
    int rc = CT_OK;
    if (c->nargs == 2) {
        if (c->args[1].kind != SHELL_VAL_DICT)
            return arg_error(err, c, usage);
        rc = shell_read_options(r, &c->args[1], kind, err);
    }
    const char *name;
    if (rc == CT_OK)
        rc = shell_data_open(sh, c, &name, d, t, err);
    if (rc == CT_OK)
        rc = shell_read_check(r, *d, err);
    return rc;
}

/* What scan or count does with each row read; adds to *rows what it counts. */
typedef void (*shell_row_fn)(struct shell *sh, const struct shell_read *r, const struct wc_row *row,
                             uint64_t *rows);

/* Runs a scan or a count: reads the table's rows with the command's options, hands each to
 * row_fn until the end, an error or an interrupt (rows already printed stay printed), then
 * prints "N row(s)" when all went well. */
static int shell_read_rows(struct shell *sh, const struct shell_cmd *c, enum shell_read_kind kind,
                           const char *usage, shell_row_fn row_fn, struct ct_err *err)
{
    struct shell_read r;
    struct wc_table_desc *d;
    struct wc_table *t;
    int rc = shell_scan_setup(sh, c, kind, usage, &r, &d, &t, err);
    struct wc_scanner *sc = NULL;
    bool any = shell_read_merge_prefix(&r);
    if (rc == CT_OK && any)
        rc = wc_scanner_open(t, &r.o, &sc, err);
    uint64_t rows = 0;
    if (rc == CT_OK) {
        if (kind == SHELL_READ_SCAN)
            shell_header(sh, "ROW", "COLUMN+CELL");
        struct wc_row row;
        while (sc && (rc = wc_scanner_next(sc, &row, err)) == CT_OK) {
            if (shell_interrupted(sh)) {
                rc = ct_err_set(err, CT_ECLOSED, "interrupted");
                break;
            }
            row_fn(sh, &r, &row, &rows);
        }
        if (rc == CT_NOTFOUND || !sc)
            rc = CT_OK;
        if (rc == CT_OK)
            fprintf(sh->o.out, "%" PRIu64 " row(s)\n", rows);
    }
    wc_scanner_close(sc);
    shell_data_close(d, t);
    shell_read_free(&r);
    return rc;
}

static void shell_scan_row(struct shell *sh, const struct shell_read *r, const struct wc_row *row,
                           uint64_t *rows)
{
    (void)r;
    for (size_t i = 0; i < row->ncells; i++)
        shell_print_cell(sh, &row->cells[i], true);
    (*rows)++;
}

static int cmd_scan(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    return shell_read_rows(sh, c, SHELL_READ_SCAN, "scan 't'[, {STARTROW => 'r', ...}]",
                           shell_scan_row, err);
}

/* Counts rows with cells, printing every r->interval-th. */
static void shell_count_row(struct shell *sh, const struct shell_read *r, const struct wc_row *row,
                            uint64_t *rows)
{
    if (row->ncells == 0)
        return;
    (*rows)++;
    if (*rows % r->interval == 0)
        fprintf(sh->o.out, "Current count: %" PRIu64 ", row: %s\n", *rows,
                sbuf_binary(&sh->b1, row->key.data, row->key.len));
}

static int cmd_count(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    return shell_read_rows(sh, c, SHELL_READ_COUNT, "count 't'[, INTERVAL => n, CACHE => n]",
                           shell_count_row, err);
}

/* ---- maintenance and regions ------------------------------------------------------------ */

static int cmd_flush(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    const char *name;
    struct wc_table_desc *d;
    int rc = shell_one_table(sh, c, "flush 't'", &name, &d, err);
    if (rc != CT_OK)
        return rc;
    rc = wc_table_flush(sh->store, name, err);
    wc_table_desc_free(d);
    return rc;
}

static int cmd_compact(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    bool major = !strcmp(c->name, "major_compact");
    const char *name, *fam = NULL;
    int rc = shell_table_arg(c, 0, &name, err);
    if (rc != CT_OK)
        return rc;
    if (c->nargs > 2)
        return arg_error(err, c, major ? "major_compact 't'[, 'f']" : "compact 't'[, 'f']");
    if (c->nargs == 2 && (rc = val_cstr(&c->args[1], "column family", &fam, err)) != CT_OK)
        return rc;
    struct wc_table_desc *d;
    if ((rc = shell_store(sh, err)) != CT_OK || (rc = shell_describe(sh, name, &d, err)) != CT_OK)
        return rc;
    if (fam)
        rc = shell_family_known(d, wc_bytes_str(fam), err);
    if (rc == CT_OK)
        rc = wc_table_compact(sh->store, name, fam, major, err);
    wc_table_desc_free(d);
    return rc;
}

static int cmd_split(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    const char *name;
    int rc = shell_table_arg(c, 0, &name, err);
    if (rc != CT_OK)
        return rc;
    if (c->nargs > 2)
        return arg_error(err, c, "split 't'[, 'key']");
    char tmp[24];
    struct wc_bytes key = {0};
    if (c->nargs == 2 && (rc = val_bytes(&c->args[1], "split key", tmp, &key, err)) != CT_OK)
        return rc;
    if (c->nargs == 2 && key.len == 0)
        return ct_err_set(err, CT_EINVAL, "split key must not be empty");
    struct wc_table_desc *d;
    if ((rc = shell_store(sh, err)) != CT_OK || (rc = shell_describe(sh, name, &d, err)) != CT_OK)
        return rc;
    wc_table_desc_free(d);
    return wc_table_split(sh->store, name, c->nargs == 2 ? &key : NULL, err);
}

static int cmd_get_splits(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    const char *name;
    struct wc_table_desc *d;
    int rc = shell_one_table(sh, c, "get_splits 't'", &name, &d, err);
    if (rc != CT_OK)
        return rc;
    wc_table_desc_free(d);
    struct wc_region_info *regions;
    size_t n;
    struct wc_store *st;
    const char *there;
    if ((rc = shell_store_of(sh, name, &st, &there, err)) != CT_OK ||
        (rc = wc_table_regions(st, there, &regions, &n, err)) != CT_OK)
        return rc;
    fprintf(sh->o.out, "Total number of splits = %zu\n", n);
    for (size_t i = 1; i < n; i++)
        fprintf(sh->o.out, "%s\n",
                sbuf_binary(&sh->b1, regions[i].start_key, regions[i].start_len));
    wc_region_info_free(regions, n);
    return CT_OK;
}

/* Per-table regions for status. */
struct shell_status_table {
    char *name;
    struct wc_region_info *regions;
    size_t n;
};

static int cmd_status(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    const char *mode = "summary";
    int rc = CT_OK;
    if (c->nargs > 1)
        return arg_error(err, c, "status ['summary' | 'simple' | 'detailed']");
    if (c->nargs == 1 && (rc = val_cstr(&c->args[0], "status format", &mode, err)) != CT_OK)
        return rc;
    if (strcmp(mode, "summary") && strcmp(mode, "simple") && strcmp(mode, "detailed"))
        return ct_err_set(err, CT_EINVAL,
                          "status format must be 'summary', 'simple' or 'detailed' (got '%s')",
                          mode);
    struct shell_names tl;
    if ((rc = shell_store(sh, err)) != CT_OK || (rc = shell_list_tables(sh, &tl, err)) != CT_OK)
        return rc;
    shell_names_sort(tl.v, tl.n);
    struct shell_status_table *st = calloc(tl.n ? tl.n : 1, sizeof(*st));
    if (!st) {
        shell_names_free(&tl);
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    }
    uint64_t regions = 0, rd = 0, wr = 0, mem = 0, files = 0, fbytes = 0;
    for (size_t i = 0; i < tl.n && rc == CT_OK; i++) {
        st[i].name = tl.v[i];
        rc = wc_table_regions(sh->store, tl.v[i], &st[i].regions, &st[i].n, err);
        if (rc == CT_NOTFOUND) { /* dropped meanwhile */
            rc = CT_OK;
            st[i].n = 0;
            continue;
        }
        for (size_t k = 0; rc == CT_OK && k < st[i].n; k++) {
            const struct wc_region_info *ri = &st[i].regions[k];
            regions++;
            rd += ri->read_requests;
            wr += ri->write_requests;
            mem += ri->memstore_bytes;
            files += ri->store_files;
            fbytes += ri->store_file_bytes;
        }
    }
    struct wc_store_stats ss;
    if (rc == CT_OK)
        rc = wc_store_stats(sh->store, &ss, err);
    FILE *f = sh->o.out;
    if (rc == CT_OK && !strcmp(mode, "summary")) {
        fprintf(f, "1 active master, 0 backup masters, 1 servers, 0 dead, %.4f average load\n",
                (double)regions);
    } else if (rc == CT_OK && !strcmp(mode, "simple")) {
        fprintf(f,
                "active master:  embedded\n0 backup masters\n1 live servers\n"
                "    embedded numberOfOnlineRegions=%" PRIu64 ", readRequestsCount=%" PRIu64
                ", writeRequestsCount=%" PRIu64 ", memstoreSizeBytes=%" PRIu64
                ", storefiles=%" PRIu64 ", storefileSizeBytes=%" PRIu64 "\n"
                "0 dead servers\nAggregate load: 0, regions: %" PRIu64 "\n",
                regions, rd, wr, mem, files, fbytes, regions);
    } else if (rc == CT_OK) {
        fprintf(f,
                "version %s\n0 regionsInTransition\nactive master:  embedded\n0 backup masters\n"
                "1 live servers\n    embedded blockCacheHits=%" PRIu64 ", blockCacheMisses=%" PRIu64
                ", blockCacheBytes=%" PRIu64 ", flushes=%" PRIu64 ", minorCompactions=%" PRIu64
                ", majorCompactions=%" PRIu64 ", splits=%" PRIu64 ", walBytes=%" PRIu64
                ", walSyncs=%" PRIu64 "\n",
                CTSDB_VERSION, ss.cache_hits, ss.cache_misses, ss.cache_bytes, ss.flushes,
                ss.minor_compactions, ss.major_compactions, ss.splits, ss.wal_bytes, ss.wal_syncs);
        for (size_t i = 0; i < tl.n; i++)
            for (size_t k = 0; k < st[i].n; k++) {
                const struct wc_region_info *ri = &st[i].regions[k];
                fprintf(f,
                        "        \"%s,%s,%" PRIu64 "\" readRequestsCount=%" PRIu64
                        ", writeRequestsCount=%" PRIu64 ", memstoreSizeBytes=%" PRIu64
                        ", storefiles=%" PRIu64 ", storefileSizeBytes=%" PRIu64 "\n",
                        shell_display_name(st[i].name),
                        sbuf_binary(&sh->b1, ri->start_key, ri->start_len), ri->id,
                        ri->read_requests, ri->write_requests, ri->memstore_bytes, ri->store_files,
                        ri->store_file_bytes);
            }
        fputs("0 dead servers\n", f);
    }
    for (size_t i = 0; i < tl.n; i++)
        wc_region_info_free(st[i].regions, st[i].n);
    free(st);
    shell_names_free(&tl);
    return rc;
}

/* ---- misc ------------------------------------------------------------------------------- */

static int cmd_exit(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    (void)c;
    (void)err;
    sh->exit_requested = true;
    return CT_OK;
}

static int cmd_version(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    if (c->nargs)
        return arg_error(err, c, "version");
    fprintf(sh->o.out, "ctsdb %s (revision %s), HBase shell compatible\n", CTSDB_VERSION,
            CTSDB_GIT_REV);
    return CT_OK;
}

static int cmd_alter_status(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    const char *name;
    struct wc_table_desc *d;
    int rc = shell_one_table(sh, c, "alter_status 't'", &name, &d, err);
    if (rc != CT_OK)
        return rc;
    wc_table_desc_free(d);
    struct wc_region_info *regions;
    size_t n;
    if ((rc = wc_table_regions(sh->store, name, &regions, &n, err)) != CT_OK)
        return rc;
    wc_region_info_free(regions, n);
    /* alter is synchronous: every region already has the current schema */
    fprintf(sh->o.out, "%zu/%zu regions updated.\nDone.\n", n, n);
    return CT_OK;
}

/* ---- snapshots (HBase's snapshot commands over wc_snapshot_*) ------------------------------ */

static int cmd_snapshot(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    const char *table, *name;
    if (c->nargs != 2)
        return arg_error(err, c, "snapshot 't', 'snapshot_name'");
    int rc = shell_table_arg(c, 0, &table, err);
    if (rc == CT_OK)
        rc = val_cstr(&c->args[1], "snapshot name", &name, err);
    if (rc == CT_OK)
        rc = wc_snapshot_name_check(name, err);
    if (rc == CT_OK)
        rc = shell_store(sh, err);
    return rc != CT_OK ? rc : wc_snapshot_create(sh->store, name, table, err);
}

/* One snapshot name argument (restore_snapshot, delete_snapshot). */
static int shell_snapshot_arg(const struct shell_cmd *c, const char *usage, const char **name,
                              struct ct_err *err)
{
    if (c->nargs != 1)
        return arg_error(err, c, usage);
    int rc = val_cstr(&c->args[0], "snapshot name", name, err);
    return rc != CT_OK ? rc : wc_snapshot_name_check(*name, err);
}

static int cmd_restore_snapshot(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    const char *name;
    int rc = shell_snapshot_arg(c, "restore_snapshot 'snapshot_name'", &name, err);
    if (rc == CT_OK)
        rc = shell_store(sh, err);
    return rc != CT_OK ? rc : wc_snapshot_restore(sh->store, name, err);
}

static int cmd_delete_snapshot(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    const char *name;
    int rc = shell_snapshot_arg(c, "delete_snapshot 'snapshot_name'", &name, err);
    if (rc == CT_OK)
        rc = shell_store(sh, err);
    return rc != CT_OK ? rc : wc_snapshot_delete(sh->store, name, err);
}

static int cmd_clone_snapshot(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    const char *name, *table;
    if (c->nargs != 2)
        return arg_error(err, c, "clone_snapshot 'snapshot_name', 't'");
    int rc = val_cstr(&c->args[0], "snapshot name", &name, err);
    if (rc == CT_OK)
        rc = wc_snapshot_name_check(name, err);
    if (rc == CT_OK)
        rc = shell_table_arg(c, 1, &table, err);
    if (rc == CT_OK)
        rc = shell_store(sh, err);
    return rc != CT_OK ? rc : wc_snapshot_clone(sh->store, name, table, err);
}

struct shell_snap_list {
    struct shell *sh;
    regex_t *re; /* NULL = every snapshot */
    size_t shown;
};

static int shell_snap_row(void *arg, const struct wc_snapshot_info *info)
{
    struct shell_snap_list *l = arg;
    if (l->re && regexec(l->re, info->name, 0, NULL, 0) != 0)
        return 0;
    time_t secs = (time_t)(info->created_ms / 1000);
    struct tm tm;
    char when[40] = "?";
    if (gmtime_r(&secs, &tm))
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S +0000", &tm);
    char table[WC_MAX_TABLE_NAME + 32];
    if (info->table[0])
        snprintf(table, sizeof(table), "%s", shell_display_name(info->table));
    else
        snprintf(table, sizeof(table), "(all %zu tables)", info->ntables);
    char what[WC_MAX_TABLE_NAME + 80];
    snprintf(what, sizeof(what), "%s (%s)", table, when);
    shell_header(l->sh, info->name, what);
    l->shown++;
    return 0;
}

static int shell_snap_none(void *arg, const struct wc_snapshot_info *info)
{
    (void)arg;
    (void)info;
    return 1;
}

static int cmd_list_snapshots(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    if (c->nargs > 1)
        return arg_error(err, c, "list_snapshots ['regex']");
    regex_t re;
    bool have;
    int rc = shell_regex(c, 0, &re, &have, err);
    if (rc != CT_OK)
        return rc;
    struct shell_snap_list l = {sh, have ? &re : NULL, 0};
    if ((rc = shell_store(sh, err)) == CT_OK)
        rc = wc_snapshot_list(sh->store, shell_snap_none, NULL, err); /* (2): fail before output */
    if (rc == CT_OK) {
        shell_header(sh, "SNAPSHOT", "TABLE + CREATION TIME");
        rc = wc_snapshot_list(sh->store, shell_snap_row, &l, err);
    }
    if (rc == CT_OK)
        fprintf(sh->o.out, "%zu row(s)\n", l.shown);
    if (have)
        regfree(&re);
    return rc;
}

static int cmd_show_filters(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    if (c->nargs)
        return arg_error(err, c, "show_filters");
    fputs("ColumnPrefixFilter\nColumnRangeFilter\nPrefixFilter\n", sh->o.out);
    return CT_OK;
}

static int cmd_help(struct shell *sh, const struct shell_cmd *c, struct ct_err *err);

struct shell_command_def {
    const char *name;
    shell_cmd_fn fn;
    const char *usage;
};

static const struct shell_command_def shell_commands[] = {
    {"alter_status", cmd_alter_status, "alter_status 't'"},
    {"clone_snapshot", cmd_clone_snapshot, "clone_snapshot 'snapshot_name', 't'"},
    {"alter", cmd_alter,
     "alter 't', {NAME => 'f', VERSIONS => 3} | 'delete' => 'f' | {MAX_FILESIZE => n}"},
    {"count", cmd_count, "count 't'[, INTERVAL => n, CACHE => n]"},
    {"create", cmd_create,
     "create 't', 'f1', {NAME => 'f2', VERSIONS => 5}, {SPLITS => [...]} | {NUMREGIONS => n, "
     "SPLITALGO => 'HexStringSplit'}"},
    {"create_namespace", cmd_create_namespace, "create_namespace 'ns'[, {'key' => 'value'}]"},
    {"delete", cmd_delete, "delete 't', 'r', 'f:q' | 'f'[, ts]"},
    {"deleteall", cmd_delete, "deleteall 't', 'r'[, 'f:q' | 'f' | ''[, ts]]"},
    {"delete_snapshot", cmd_delete_snapshot, "delete_snapshot 'snapshot_name'"},
    {"desc", cmd_describe, "desc 't'"},
    {"describe", cmd_describe, "describe 't'"},
    {"describe_namespace", cmd_describe_namespace, "describe_namespace 'ns'"},
    {"disable", cmd_enable, "disable 't'"},
    {"drop", cmd_drop, "drop 't'"},
    {"drop_namespace", cmd_drop_namespace, "drop_namespace 'ns'"},
    {"enable", cmd_enable, "enable 't'"},
    {"exists", cmd_exists, "exists 't'"},
    {"exit", cmd_exit, "exit"},
    {"flush", cmd_flush, "flush 't'"},
    {"get", cmd_get,
     "get 't', 'r'[, 'f:q', ... | {COLUMN => ..., VERSIONS => n, TIMERANGE => [a, b], TIMESTAMP => "
     "t, FILTER => \"...\"}]"},
    {"get_counter", cmd_get_counter, "get_counter 't', 'r', 'f:q'"},
    {"get_splits", cmd_get_splits, "get_splits 't'"},
    {"help", cmd_help, "help"},
    {"incr", cmd_incr, "incr 't', 'r', 'f:q'[, n]"},
    {"is_disabled", cmd_is_enabled, "is_disabled 't'"},
    {"is_enabled", cmd_is_enabled, "is_enabled 't'"},
    {"list", cmd_list, "list ['regex']"},
    {"list_namespace", cmd_list_namespace, "list_namespace ['regex']"},
    {"list_namespace_tables", cmd_list_namespace_tables, "list_namespace_tables 'ns'"},
    {"list_snapshots", cmd_list_snapshots, "list_snapshots ['regex']"},
    {"major_compact", cmd_compact, "major_compact 't'[, 'f']"},
    {"compact", cmd_compact, "compact 't'[, 'f']"},
    {"put", cmd_put, "put 't', 'r', 'f:q', 'value'[, ts]"},
    {"quit", cmd_exit, "quit"},
    {"scan", cmd_scan,
     "scan 't'[, {STARTROW, STOPROW, ROWPREFIXFILTER, COLUMNS, VERSIONS, TIMERANGE, TIMESTAMP, "
     "LIMIT, REVERSED, CACHE, BATCH, FILTER, RAW}]"},
    {"restore_snapshot", cmd_restore_snapshot, "restore_snapshot 'snapshot_name'"},
    {"show_filters", cmd_show_filters, "show_filters"},
    {"snapshot", cmd_snapshot, "snapshot 't', 'snapshot_name'"},
    {"split", cmd_split, "split 't'[, 'key']"},
    {"status", cmd_status, "status ['summary' | 'simple' | 'detailed']"},
    {"truncate", cmd_truncate, "truncate 't'"},
    {"truncate_preserve", cmd_truncate, "truncate_preserve 't'"},
    {"version", cmd_version, "version"},
};

static int cmd_help(struct shell *sh, const struct shell_cmd *c, struct ct_err *err)
{
    (void)c;
    (void)err;
    fputs("ctsdb shell: HBase shell commands over the ctsdb store. Commands:\n", sh->o.out);
    for (size_t i = 0; i < SHELL_NELEM(shell_commands); i++)
        fprintf(sh->o.out, "  %s\n", shell_commands[i].usage);
    return CT_OK;
}

/* ---- entry points ----------------------------------------------------------------------- */

int shell_new(const struct shell_options *o, struct shell **out, struct ct_err *err)
{
    struct shell *sh = calloc(1, sizeof(*sh));
    if (!sh)
        return ct_err_set(err, CT_ENOMEM, "out of memory creating the shell");
    sh->o = *o;
    *out = sh;
    return CT_OK;
}

void shell_free(struct shell *sh)
{
    if (!sh)
        return;
    shell_meta_free(sh->meta);
    wc_close(sh->store);
    free(sh->b1.p);
    free(sh->b2.p);
    free(sh->b3.p);
    free(sh);
}

const struct shell_options *shell_options_of(const struct shell *sh)
{
    return &sh->o;
}

void shell_set_interrupt_flag(struct shell *sh, volatile sig_atomic_t *flag)
{
    sh->interrupted = flag;
}

bool shell_exit_requested(const struct shell *sh)
{
    return sh->exit_requested;
}

/* The commands that may name hbase:meta: it is a read-only view of the catalog. */
static bool shell_meta_allowed(const char *cmd)
{
    static const char *const ok[] = {"count",      "desc",        "describe",   "exists",
                                     "get",        "get_counter", "get_splits", "is_disabled",
                                     "is_enabled", "scan"};
    for (size_t i = 0; i < SHELL_NELEM(ok); i++)
        if (!strcmp(cmd, ok[i]))
            return true;
    return false;
}

int shell_exec(struct shell *sh, const struct shell_cmd *cmd, struct ct_err *err)
{
    ct_err_clear(err);
    if (cmd->nargs >= 1 && cmd->args[0].kind == SHELL_VAL_STR && shell_is_meta(cmd->args[0].str) &&
        !shell_meta_allowed(cmd->name))
        return ct_err_set(err, CT_EINVAL,
                          "%s is a read-only view of the catalog: '%s' cannot be used on it",
                          SHELL_META_TABLE, cmd->name);
    for (size_t i = 0; i < SHELL_NELEM(shell_commands); i++)
        if (!strcmp(cmd->name, shell_commands[i].name)) {
            int rc = shell_commands[i].fn(sh, cmd, err);
            shell_meta_free(sh->meta); /* built for this command only */
            sh->meta = NULL;
            if (rc == CT_NOTFOUND && !err->msg[0])
                ct_err_set(err, CT_NOTFOUND, "not found");
            if (rc != CT_OK && !err->msg[0])
                ct_err_set(err, rc, "%s failed: %s", cmd->name, ct_err_name(rc));
            return rc;
        }
    return ct_err_set(err, CT_EINVAL, "unknown command '%s' (line %d, column %d); try 'help'",
                      cmd->name, cmd->line, cmd->col);
}
