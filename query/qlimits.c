/* qlimits.c - per-metric query limits (see qlimits.h for the model and the file format).
 *
 * Invariants: (1) l->items is an array of l->nitems compiled overrides in file order, replaced
 * whole by load() under l->mu, never edited in place; (2) a read of the file that fails in any
 * way (missing, unreadable, not a JSON array, an item without a regex, a regex that does not
 * compile, a negative limit) leaves l->items as it was; an empty file too (OpenTSDB skips an
 * empty file's content). Locking: l->mu guards items, nitems and loaded_ms; the compiled
 * patterns are used under it (pcre2_match on one code from several threads is safe, but an item
 * must not be freed while matched). */
#include "query/qlimits.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/clock.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

/* the largest overrides file read (OpenTSDB reads any size; this one is a configuration file) */
#define QLIMITS_MAX_FILE (1u << 20)

struct qlimits_item {
    char *regex;
    pcre2_code *re;
    uint64_t points, bytes;
};

struct qlimits {
    struct qlimits_options o; /* o.file points at file below */
    char *file;
    pthread_mutex_t mu;
    struct qlimits_item *items;
    size_t nitems;
    int64_t loaded_ms; /* when the file was last read (whatever came of it) */
};

static void items_free(struct qlimits_item *it, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(it[i].regex);
        pcre2_code_free(it[i].re);
    }
    free(it);
}

static void logf_(const struct qlimits *l, bool error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void logf_(const struct qlimits *l, bool error, const char *fmt, ...)
{
    if (l->o.log == NULL)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    l->o.log(l->o.log_arg, error, msg);
}

/* A limit field: absent 0 (OpenTSDB's default), else a non-negative integer. */
static int limit_of(const cJSON *item, const char *k, uint64_t *out, struct ct_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(item, k);
    *out = 0;
    if (v == NULL)
        return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble != floor(v->valuedouble) ||
        v->valuedouble > 9.0e18)
        return ct_err_set(err, CT_EINVAL, "%s must be a non-negative integer", k);
    *out = (uint64_t)v->valuedouble;
    return 0;
}

/* Parses the file's text into new items (2). */
static int parse(const char *text, struct qlimits_item **out, size_t *nout, struct ct_err *err)
{
    cJSON *doc = cJSON_Parse(text);
    if (!cJSON_IsArray(doc)) {
        cJSON_Delete(doc);
        return ct_err_set(err, CT_EINVAL, "not a JSON array of overrides");
    }
    size_t n = (size_t)cJSON_GetArraySize(doc);
    struct qlimits_item *it = calloc(n ? n : 1, sizeof(*it));
    if (it == NULL) {
        cJSON_Delete(doc);
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    }
    size_t k = 0;
    int rc = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, doc)
    {
        const cJSON *re = cJSON_GetObjectItemCaseSensitive(item, "regex");
        if (!cJSON_IsString(re) || re->valuestring[0] == '\0') {
            rc = ct_err_set(err, CT_EINVAL, "override %zu: missing or empty regex", k);
            break;
        }
        if ((rc = limit_of(item, "dataPointsLimit", &it[k].points, err)) != 0 ||
            (rc = limit_of(item, "byteLimit", &it[k].bytes, err)) != 0) {
            ct_err_prefix(err, "override %zu", k);
            break;
        }
        int ec;
        PCRE2_SIZE off;
        it[k].re =
            pcre2_compile((PCRE2_SPTR)re->valuestring, PCRE2_ZERO_TERMINATED, 0, &ec, &off, NULL);
        if (it[k].re == NULL) {
            PCRE2_UCHAR msg[128];
            if (pcre2_get_error_message(ec, msg, sizeof(msg)) < 0)
                snprintf((char *)msg, sizeof(msg), "error %d", ec);
            rc = ct_err_set(err, CT_EINVAL, "override %zu: bad regex %s: %s at %zu", k,
                            re->valuestring, (const char *)msg, (size_t)off);
            break;
        }
        it[k].regex = strdup(re->valuestring);
        if (it[k].regex == NULL) {
            pcre2_code_free(it[k].re);
            rc = ct_err_set(err, CT_ENOMEM, "out of memory");
            break;
        }
        k++;
    }
    cJSON_Delete(doc);
    if (rc != 0) {
        items_free(it, k);
        return rc;
    }
    *out = it;
    *nout = k;
    return 0;
}

/* Reads and applies the file. REQUIRES: l->mu held. */
static int load(struct qlimits *l, struct ct_err *err)
{
    l->loaded_ms = clock_now_ms();
    FILE *f = fopen(l->file, "rb");
    if (f == NULL)
        return ct_err_set(err, CT_EIO, "query limit overrides file %s: %s", l->file,
                          strerror(errno));
    char *text = malloc(QLIMITS_MAX_FILE + 1);
    if (text == NULL) {
        fclose(f);
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    }
    size_t n = fread(text, 1, QLIMITS_MAX_FILE + 1, f);
    bool bad = ferror(f) != 0;
    fclose(f);
    int rc = 0;
    if (bad)
        rc = ct_err_set(err, CT_EIO, "cannot read query limit overrides file %s", l->file);
    else if (n > QLIMITS_MAX_FILE)
        rc = ct_err_set(err, CT_EINVAL, "query limit overrides file %s is over %u bytes", l->file,
                        QLIMITS_MAX_FILE);
    if (rc != 0 || n == 0) { /* (2) an empty file changes nothing */
        free(text);
        return rc;
    }
    text[n] = '\0';
    struct qlimits_item *it = NULL;
    size_t nit = 0;
    rc = parse(text, &it, &nit, err);
    free(text);
    if (rc != 0)
        return ct_err_prefix(err, "query limit overrides file %s", l->file);
    items_free(l->items, l->nitems);
    l->items = it;
    l->nitems = nit;
    return 0;
}

/* load() and its log line. REQUIRES: l->mu held. */
static int load_logged(struct qlimits *l, struct ct_err *err)
{
    int rc = load(l, err);
    if (rc == 0)
        logf_(l, false, "loaded %zu query limit override(s) from %s", l->nitems, l->file);
    else
        logf_(l, true, "%s (the %zu override(s) in force are kept)", err->msg, l->nitems);
    return rc;
}

int qlimits_new(const struct qlimits_options *o, struct qlimits **out, struct ct_err *err)
{
    *out = NULL;
    struct qlimits *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    l->o = *o;
    if (o->file != NULL && o->file[0] != '\0') {
        l->file = strdup(o->file);
        if (l->file == NULL) {
            free(l);
            return ct_err_set(err, CT_ENOMEM, "out of memory");
        }
    }
    l->o.file = l->file;
    pthread_mutex_init(&l->mu, NULL);
    if (l->file != NULL) {
        struct ct_err e2 = {0};
        pthread_mutex_lock(&l->mu);
        if (load_logged(l, &e2) != 0) { /* logged; OpenTSDB starts without the overrides */
        }
        pthread_mutex_unlock(&l->mu);
    }
    *out = l;
    return 0;
}

void qlimits_free(struct qlimits *l)
{
    if (l == NULL)
        return;
    items_free(l->items, l->nitems);
    pthread_mutex_destroy(&l->mu);
    free(l->file);
    free(l);
}

static bool find(const pcre2_code *re, const char *s)
{
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    if (md == NULL)
        return false;
    int rc = pcre2_match(re, (PCRE2_SPTR)s, PCRE2_ZERO_TERMINATED, 0, 0, md, NULL);
    pcre2_match_data_free(md);
    return rc >= 0;
}

void qlimits_get(struct qlimits *l, const char *metric, uint64_t *points, uint64_t *bytes)
{
    if (l == NULL || l->file == NULL)
        return;
    pthread_mutex_lock(&l->mu);
    if (l->o.reload_s > 0 && clock_now_ms() - l->loaded_ms >= l->o.reload_s * 1000) {
        struct ct_err e2 = {0};
        if (load_logged(l, &e2) != 0) { /* logged; the overrides in force stay (2) */
        }
    }
    for (size_t i = 0; metric != NULL && metric[0] != '\0' && i < l->nitems; i++)
        if (find(l->items[i].re, metric)) {
            *points = l->items[i].points;
            *bytes = l->items[i].bytes;
            break;
        }
    pthread_mutex_unlock(&l->mu);
}

int qlimits_reload(struct qlimits *l, struct ct_err *err)
{
    if (l->file == NULL)
        return ct_err_set(err, CT_EINVAL, "no query limit overrides file configured");
    pthread_mutex_lock(&l->mu);
    int rc = load_logged(l, err);
    pthread_mutex_unlock(&l->mu);
    return rc;
}

size_t qlimits_count(struct qlimits *l)
{
    pthread_mutex_lock(&l->mu);
    size_t n = l->nitems;
    pthread_mutex_unlock(&l->mu);
    return n;
}
