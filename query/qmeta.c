/* qmeta.c - see qmeta.h. Reply shapes follow OpenTSDB 2.4's SuggestRpc, SearchRpc (LOOKUP),
 * UniqueIdRpc, AnnotationRpc and the UIDMeta / TSMeta / Annotation JSON serialisations.
 * Storage: annotations through schema/tsdb.h (OpenTSDB's layout: the series' hour row, qualifier
 * 0x01 + offset, value = the annotation JSON); UID meta and TSMeta through schema/meta.h.
 * Invariants: (1) a stored annotation is the canonical JSON written by ann_to_json(), so query
 * results can copy it verbatim; (2) every reply document is complete before it is returned. */
#include "query/qmeta.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "query/qagg.h"
#include "query/qfilter.h"
#include "query/qjson.h"
#include "schema/head.h"
#include "schema/meta.h"
#include "schema/rowkey.h"
#include "schema/tagidx.h"
#include "schema/uid.h"
#include "storage/hash.h"

static int fail(int *status, int code, int rc, struct ct_err *err)
{
    (void)err;
    *status = code;
    return rc;
}

static const char *str_field(const cJSON *req, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A number given as JSON number or numeric string; returns false if absent; *bad if malformed. */
static bool num_field(const cJSON *req, const char *key, int64_t *out, bool *bad)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, key);
    *bad = false;
    if (!v || cJSON_IsNull(v))
        return false;
    if (cJSON_IsNumber(v)) {
        *out = (int64_t)v->valuedouble;
        return true;
    }
    if (cJSON_IsString(v)) {
        char *end;
        long long x = strtoll(v->valuestring, &end, 10);
        if (*v->valuestring && !*end) {
            *out = x;
            return true;
        }
    }
    *bad = true;
    return false;
}

static int hex_to_bytes(const char *h, uint8_t *out, size_t cap, size_t *len)
{
    size_t hl = strlen(h);
    if (hl % 2 || hl / 2 > cap)
        return -1;
    for (size_t i = 0; i < hl / 2; i++) {
        unsigned v;
        if (sscanf(h + 2 * i, "%2x", &v) != 1)
            return -1;
        out[i] = (uint8_t)v;
    }
    *len = hl / 2;
    return 0;
}

static void bytes_to_hex(const uint8_t *b, size_t n, char *out)
{
    static const char hx[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hx[b[i] >> 4];
        out[2 * i + 1] = hx[b[i] & 15];
    }
    out[2 * n] = 0;
}

static bool tsuid_valid(const struct rowkey_layout *l, size_t len)
{
    size_t pair = l->tagk_width + l->tagv_width;
    return len >= l->metric_width + pair && (len - l->metric_width) % pair == 0;
}

/* ---- static documents ------------------------------------------------------------------ */

cJSON *qmeta_filters_doc(void)
{
    size_t n;
    const struct qfilter_info *info = qfilter_infos(&n);
    cJSON *o = cJSON_CreateObject();
    for (size_t i = 0; o && i < n; i++) {
        cJSON *f = cJSON_AddObjectToObject(o, info[i].name);
        if (!f || !cJSON_AddStringToObject(f, "examples", info[i].examples) ||
            !cJSON_AddStringToObject(f, "description", info[i].description)) {
            cJSON_Delete(o);
            return NULL;
        }
    }
    return o;
}

/* ---- suggest --------------------------------------------------------------------------- */

static int suggest_cb(void *arg, enum uid_kind k, const char *name, size_t len, uint64_t id)
{
    (void)k;
    (void)id;
    cJSON *a = arg;
    char buf[UID_MAX_NAME + 1];
    if (len > UID_MAX_NAME)
        len = UID_MAX_NAME;
    memcpy(buf, name, len);
    buf[len] = 0;
    cJSON *s = cJSON_CreateString(buf);
    return s && cJSON_AddItemToArray(a, s) ? 0 : CT_ENOMEM;
}

int qmeta_suggest(struct tsdb *t, const cJSON *req, cJSON **out, int *status, struct ct_err *err)
{
    const char *type = str_field(req, "type");
    if (!type || !*type)
        return fail(status, 400, ct_err_set(err, CT_EINVAL, "Missing 'type' parameter"), err);
    enum uid_kind k;
    if (!strcmp(type, "metrics"))
        k = UID_METRIC;
    else if (!strcmp(type, "tagk"))
        k = UID_TAGK;
    else if (!strcmp(type, "tagv"))
        k = UID_TAGV;
    else
        return fail(status, 400, ct_err_set(err, CT_EINVAL, "Invalid 'type' parameter:%s", type),
                    err);
    const char *q = str_field(req, "q");
    /* SuggestRpc: an empty max is no max; a max that is an int but not above 0 also means
     * UniqueId's default of 25 names */
    int64_t max = 25;
    bool bad = false;
    const char *ms = str_field(req, "max");
    if (!ms || *ms) {
        if (num_field(req, "max", &max, &bad) && max <= 0)
            max = 25;
        if (bad)
            return fail(status, 400,
                        ct_err_set(err, CT_EINVAL, "Unable to parse 'max' as a number"), err);
    }
    cJSON *a = cJSON_CreateArray();
    if (!a)
        return fail(status, 500, ct_err_set(err, CT_ENOMEM, "out of memory"), err);
    int rc = uid_suggest(tsdb_uid(t), k, q ? q : "", (size_t)max, suggest_cb, a, err);
    if (rc != CT_OK) {
        cJSON_Delete(a);
        return fail(status, 500, rc, err);
    }
    *out = a;
    *status = 200;
    return CT_OK;
}

/* ---- lookup ---------------------------------------------------------------------------- */

struct tsset {
    uint8_t **k;
    size_t *len;
    size_t n, cap;
    struct hashset ht; /* of k[], by bytes */
};

static uint64_t tsset_hash_of(void *arg, size_t i)
{
    const struct tsset *s = arg;
    return hash_bytes(s->k[i], s->len[i], 0);
}

static bool tsset_eq(void *arg, size_t i, const void *key, size_t len)
{
    const struct tsset *s = arg;
    return s->len[i] == len && !memcmp(s->k[i], key, len);
}

/* 1 added, 0 present, -1 out of memory */
static int tsset_add(struct tsset *s, const uint8_t *ts, size_t len)
{
    struct ct_err err;
    size_t h = 0;
    if (hashset_reserve(&s->ht, 64, tsset_hash_of, s, &err) != CT_OK)
        return -1;
    if (hashset_find(&s->ht, hash_bytes(ts, len, 0), tsset_eq, s, ts, len, &h) >= 0)
        return 0;
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 64;
        uint8_t **nk = realloc(s->k, nc * sizeof(*nk));
        if (!nk)
            return -1;
        s->k = nk;
        size_t *nl = realloc(s->len, nc * sizeof(*nl));
        if (!nl)
            return -1;
        s->len = nl;
        s->cap = nc;
    }
    if (!(s->k[s->n] = malloc(len)))
        return -1;
    memcpy(s->k[s->n], ts, len);
    s->len[s->n] = len;
    hashset_insert_at(&s->ht, h, s->n);
    s->n++;
    return 1;
}

static void tsset_free(struct tsset *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->k[i]);
    free(s->k);
    free(s->len);
    hashset_destroy(&s->ht);
}

/* Adds {"tsuid":..,"metric":..,"tags":{..}} for a TSUID. */
static int lookup_result(struct tsdb *t, const uint8_t *ts, size_t len, cJSON *results,
                         struct ct_err *err)
{
    const struct rowkey_layout *l = tsdb_layout(t);
    struct uid *u = tsdb_uid(t);
    char hex[2 * ROWKEY_MAX_TSUID + 1], name[UID_MAX_NAME + 1], val[UID_MAX_NAME + 1];
    size_t nl;
    bytes_to_hex(ts, len, hex);
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddItemToArray(results, o)) {
        cJSON_Delete(o);
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    }
    int rc = uid_get_name(u, UID_METRIC, rowkey_get_uid(ts, l->metric_width), name, sizeof(name),
                          &nl, err);
    if (rc != CT_OK)
        return rc;
    cJSON *tags;
    if (!cJSON_AddStringToObject(o, "tsuid", hex) || !cJSON_AddStringToObject(o, "metric", name) ||
        !(tags = cJSON_AddObjectToObject(o, "tags")))
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    size_t pair = l->tagk_width + l->tagv_width;
    for (size_t i = 0; i < (len - l->metric_width) / pair; i++) {
        const uint8_t *p = ts + l->metric_width + i * pair;
        if ((rc = uid_get_name(u, UID_TAGK, rowkey_get_uid(p, l->tagk_width), name, sizeof(name),
                               &nl, err)) != CT_OK ||
            (rc = uid_get_name(u, UID_TAGV, rowkey_get_uid(p + l->tagk_width, l->tagv_width), val,
                               sizeof(val), &nl, err)) != CT_OK)
            return rc;
        if (!cJSON_AddStringToObject(tags, name, val))
            return ct_err_set(err, CT_ENOMEM, "out of memory");
    }
    return CT_OK;
}

/* Parses "metric{k=v,...}" into a lookup request object (metric + tags array). */
static cJSON *lookup_req_from_m(const char *m, struct ct_err *err)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *tags = o ? cJSON_AddArrayToObject(o, "tags") : NULL;
    if (!tags) {
        cJSON_Delete(o);
        ct_err_set(err, CT_ENOMEM, "out of memory");
        return NULL;
    }
    const char *brace = strchr(m, '{');
    size_t ml = brace ? (size_t)(brace - m) : strlen(m);
    char metric[UID_MAX_NAME + 1];
    snprintf(metric, sizeof(metric), "%.*s", (int)ml, m);
    cJSON_AddStringToObject(o, "metric", metric);
    if (brace) {
        size_t len = strlen(m);
        if (m[len - 1] != '}') {
            cJSON_Delete(o);
            ct_err_set(err, CT_EINVAL, "Missing '}' at the end of: %s", m);
            return NULL;
        }
        const char *p = brace + 1, *end = m + len - 1;
        while (p < end) {
            const char *comma = memchr(p, ',', (size_t)(end - p));
            const char *e = comma ? comma : end;
            const char *eq = memchr(p, '=', (size_t)(e - p));
            if (!eq) {
                cJSON_Delete(o);
                ct_err_set(err, CT_EINVAL, "invalid tag: %.*s", (int)(e - p), p);
                return NULL;
            }
            char k[UID_MAX_NAME + 1], v[UID_MAX_NAME + 1];
            snprintf(k, sizeof(k), "%.*s", (int)(eq - p), p);
            snprintf(v, sizeof(v), "%.*s", (int)(e - eq - 1), eq + 1);
            cJSON *pr = cJSON_CreateObject();
            cJSON_AddStringToObject(pr, "key", k);
            cJSON_AddStringToObject(pr, "value", v);
            cJSON_AddItemToArray(tags, pr);
            p = comma ? comma + 1 : end;
        }
    }
    return o;
}

/* The TSUIDs of the data table's rows that pass rf (metric 0: every metric), into set. */
static int lookup_scan_data(struct tsdb *t, uint64_t mid, struct rowkey_filter *rf,
                            struct tsset *set, struct ct_err *err)
{
    const struct rowkey_layout *l = tsdb_layout(t);
    int rc = CT_OK;
    unsigned nb = l->salt_width ? l->salt_buckets : 1;
    for (unsigned b = 0; b < nb && rc == CT_OK; b++) {
        uint8_t prefix[ROWKEY_MAX_SALT_WIDTH + ROWKEY_MAX_UID_WIDTH];
        rowkey_salt_bytes(l, b, prefix);
        size_t pl = l->salt_width;
        if (mid) {
            rowkey_put_uid(prefix + pl, mid, l->metric_width);
            pl += l->metric_width;
        }
        struct wc_column col = {wc_bytes_str(TSDB_DATA_FAMILY), {NULL, 0}, false};
        struct wc_scan_options so;
        wc_scan_options_init(&so);
        so.row_prefix = wc_bytes_of(prefix, pl);
        so.columns = &col;
        so.ncolumns = 1;
        so.row_filter = rowkey_filter_fn;
        so.row_filter_arg = rf;
        so.batch_cells = 1; /* only the key matters */
        struct wc_scanner *sc = NULL;
        if ((rc = wc_scanner_open(tsdb_data_table(t), &so, &sc, err)) != CT_OK)
            break;
        struct wc_row row;
        while ((rc = wc_scanner_next(sc, &row, err)) == CT_OK) {
            uint8_t ts[ROWKEY_MAX_TSUID];
            size_t tl = rowkey_tsuid_of(l, row.key.data, row.key.len, ts, sizeof(ts));
            if (!tl || rowkey_get_uid(ts, l->metric_width) == 0)
                continue; /* global annotations */
            if (tsset_add(set, ts, tl) < 0) {
                rc = ct_err_set(err, CT_ENOMEM, "out of memory");
                break;
            }
        }
        if (rc == CT_NOTFOUND)
            rc = CT_OK;
        wc_scanner_close(sc);
    }
    return rc;
}

struct lookup_head_ctx {
    const struct rowkey_layout *l;
    struct rowkey_filter *rf;
    struct tsset *set;
};

/* The TSUID ts of tl bytes (a series of the head or of tsdb-meta) joins set when the data row
 * key it would have passes rf; a TSUID too long or of metric 0 (a global annotation's) does
 * not. Returns CT_OK (joined or not) or CT_ENOMEM. */
static int tsset_add_passing(const struct rowkey_layout *l, struct rowkey_filter *rf,
                             struct tsset *set, const uint8_t *ts, size_t tl)
{
    if (tl > ROWKEY_MAX_TSUID || rowkey_get_uid(ts, l->metric_width) == 0)
        return CT_OK;
    uint8_t key[ROWKEY_MAX_SALT_WIDTH + ROWKEY_MAX_TSUID + 4];
    size_t kl = rowkey_encode(l, ts, tl, 0, key);
    if (kl == 0 || !rowkey_filter_match(rf, key, kl))
        return CT_OK;
    return tsset_add(set, ts, tl) < 0 ? CT_ENOMEM : CT_OK;
}

/* The TSUID prefix of metric mid's series into prefix (ROWKEY_MAX_UID_WIDTH bytes); returns its
 * length, 0 for mid 0 (every metric). */
static size_t metric_prefix(const struct rowkey_layout *l, uint64_t mid, uint8_t *prefix)
{
    if (!mid)
        return 0;
    rowkey_put_uid(prefix, mid, l->metric_width);
    return l->metric_width;
}

/* head_series_fn: a head series whose data row key would pass rf joins the set. */
static int lookup_head_series(void *arg, const uint8_t *ts, size_t tl)
{
    struct lookup_head_ctx *c = arg;
    return tsset_add_passing(c->l, c->rf, c->set, ts, tl);
}

/* The TSUIDs of the head's series (metric mid, 0: every metric) that pass rf, into set: series
 * whose points are all in the head's open hours have no data row yet. */
static int lookup_scan_head(struct tsdb *t, struct head *h, uint64_t mid, struct rowkey_filter *rf,
                            struct tsset *set, struct ct_err *err)
{
    const struct rowkey_layout *l = tsdb_layout(t);
    uint8_t prefix[ROWKEY_MAX_UID_WIDTH];
    size_t pl = metric_prefix(l, mid, prefix);
    struct lookup_head_ctx c = {l, rf, set};
    int rc = head_each_series(h, prefix, pl, INT64_MIN, INT64_MAX, lookup_head_series, &c);
    if (rc != CT_OK)
        return ct_err_set(err, rc, "out of memory listing the head's series");
    return CT_OK;
}

/* useMeta: the TSUIDs of tsdb-meta's series rows (one per series: a TSMeta, a counter or the
 * newest-hour index the TSD writes for every series) that pass rf, into set - one row per
 * series instead of one per series and hour. A row counts when its key has a TSUID's shape and
 * it holds one of those cells; rf is matched on the data row key the TSUID would have. */
static int lookup_scan_meta(struct tsdb *t, uint64_t mid, struct rowkey_filter *rf,
                            struct tsset *set, struct ct_err *err)
{
    const struct rowkey_layout *l = tsdb_layout(t);
    uint8_t prefix[ROWKEY_MAX_UID_WIDTH];
    size_t pl = metric_prefix(l, mid, prefix);
    static const char *const quals[] = {META_TS_QUALIFIER, META_TS_COUNTER, META_TS_HOUR};
    struct wc_column cols[3];
    for (size_t i = 0; i < 3; i++)
        cols[i] = (struct wc_column){wc_bytes_str(TSDB_META_FAMILY), wc_bytes_str(quals[i]), true};
    struct wc_scan_options so;
    wc_scan_options_init(&so);
    so.row_prefix = wc_bytes_of(prefix, pl);
    so.columns = cols;
    so.ncolumns = 3;
    so.batch_cells = 1;
    struct wc_scanner *sc = NULL;
    int rc = wc_scanner_open(tsdb_meta_table(t), &so, &sc, err);
    if (rc != CT_OK)
        return rc;
    size_t pair = (size_t)l->tagk_width + l->tagv_width;
    struct wc_row row;
    while ((rc = wc_scanner_next(sc, &row, err)) == CT_OK) {
        size_t len = row.key.len;
        if (row.ncells == 0 || len <= l->metric_width || (len - l->metric_width) % pair != 0)
            continue;
        if (tsset_add_passing(l, rf, set, row.key.data, len) != CT_OK) {
            rc = ct_err_set(err, CT_ENOMEM, "out of memory");
            break;
        }
    }
    if (rc == CT_NOTFOUND)
        rc = CT_OK;
    wc_scanner_close(sc);
    return rc;
}

/* True when the TSUID ts has each of the n tag value UIDs vals under some tag key (TimeSeriesLookup's
 * value-only pairs). */
static bool lookup_has_values(const struct rowkey_layout *l, const uint8_t *ts, size_t len,
                              const uint64_t *vals, size_t n)
{
    size_t pair = l->tagk_width + l->tagv_width, pairs = (len - l->metric_width) / pair;
    for (size_t v = 0; v < n; v++) {
        bool found = false;
        for (size_t i = 0; i < pairs && !found; i++)
            found = rowkey_get_uid(ts + l->metric_width + i * pair + l->tagk_width,
                                   l->tagv_width) == vals[v];
        if (!found)
            return false;
    }
    return true;
}

int qmeta_lookup(struct tsdb *t, struct head *head, const cJSON *req_in, int64_t now_ms,
                 cJSON **out, int *status, struct ct_err *err)
{
    (void)now_ms;
    const struct rowkey_layout *l = tsdb_layout(t);
    struct uid *u = tsdb_uid(t);
    cJSON *own = NULL;
    const cJSON *req = req_in;
    const char *m = str_field(req_in, "m");
    if (m) {
        if (!(own = lookup_req_from_m(m, err))) {
            if (err->code == CT_ENOMEM)
                return fail(status, 500, CT_ENOMEM, err);
            /* SearchRpc: "Unable to parse query", the parser's reason as details */
            *out = cJSON_CreateString(err->msg);
            return fail(status, 400, ct_err_set(err, CT_EINVAL, "Unable to parse query"), err);
        }
        req = own;
    }
    int64_t limit = 25;
    bool bad;
    num_field(req_in, "limit", &limit, &bad);
    if (bad) {
        cJSON_Delete(own);
        return fail(status, 400,
                    ct_err_set(err, CT_EINVAL, "Unable to convert 'limit' to a valid number"), err);
    }
    /* useMeta (JSON) or use_meta (URL), as SearchRpc reads them */
    const cJSON *um = cJSON_GetObjectItemCaseSensitive(req_in, "useMeta");
    const char *ums = str_field(req_in, "use_meta");
    bool use_meta = cJSON_IsTrue(um) ||
                    (cJSON_IsString(um) && !strcasecmp(um->valuestring, "true")) ||
                    (ums && !strcasecmp(ums, "true"));
    const char *metric = str_field(req, "metric");
    bool any_metric = !metric || !*metric || !strcmp(metric, "*");
    if (!metric && cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(req, "tags")) == 0) {
        cJSON_Delete(own);
        return fail(status, 400,
                    ct_err_set(err, CT_EINVAL,
                               "Missing metric and tags. Please supply at least one value."),
                    err);
    }
    uint64_t mid = 0, *vals = NULL;
    int rc = CT_OK;
    struct rowkey_filter *rf = NULL;
    struct tsset set = {0};
    cJSON *doc = NULL;
    if (!any_metric && (rc = uid_get_id(u, UID_METRIC, metric, strlen(metric), &mid, err)) != CT_OK)
        goto unresolved;
    if ((rc = rowkey_filter_new(l, &rf, err)) != CT_OK) {
        *status = 500;
        goto out;
    }
    if (!any_metric)
        rowkey_filter_set_metric(rf, mid);
    const cJSON *tags = cJSON_GetObjectItemCaseSensitive(req, "tags"), *tg;
    /* a value without a key (null or "*"): a series matches when any of its tags has it */
    size_t nvals = 0;
    int ntags = cJSON_GetArraySize(tags);
    if (ntags > 0 && !(vals = calloc((size_t)ntags, sizeof(*vals)))) {
        rc = ct_err_set(err, CT_ENOMEM, "out of memory");
        *status = 500;
        goto out;
    }
    cJSON_ArrayForEach(tg, tags)
    {
        const char *k = str_field(tg, "key"), *v = str_field(tg, "value");
        if (!k || !*k || !strcmp(k, "*")) {
            if (!v || !*v || !strcmp(v, "*"))
                continue;
            if ((rc = uid_get_id(u, UID_TAGV, v, strlen(v), &vals[nvals], err)) != CT_OK)
                goto unresolved;
            nvals++;
            continue;
        }
        uint64_t kid, vid;
        if ((rc = uid_get_id(u, UID_TAGK, k, strlen(k), &kid, err)) == CT_OK) {
            if (!v || !*v || !strcmp(v, "*"))
                rc = rowkey_filter_add(rf, kid, NULL, 0, false, err);
            else if ((rc = uid_get_id(u, UID_TAGV, v, strlen(v), &vid, err)) == CT_OK)
                rc = rowkey_filter_add(rf, kid, &vid, 1, false, err);
        }
        if (rc != CT_OK)
            goto unresolved;
    }
    rc = use_meta ? lookup_scan_meta(t, any_metric ? 0 : mid, rf, &set, err)
                  : lookup_scan_data(t, any_metric ? 0 : mid, rf, &set, err);
    if (rc == CT_OK && !use_meta && head)
        rc = lookup_scan_head(t, head, any_metric ? 0 : mid, rf, &set, err);
    if (rc != CT_OK) {
        *status = 500;
        goto out;
    }
    doc = cJSON_CreateObject();
    cJSON *results = NULL;
    if (!doc || !cJSON_AddStringToObject(doc, "type", "LOOKUP") ||
        !cJSON_AddStringToObject(doc, "metric", any_metric ? "*" : metric) ||
        !cJSON_AddItemToObject(doc, "tags",
                               tags ? cJSON_Duplicate(tags, true) : cJSON_CreateArray()) ||
        !cJSON_AddNumberToObject(doc, "limit", (double)limit) ||
        !cJSON_AddNumberToObject(doc, "time", 0) ||
        !(results = cJSON_AddArrayToObject(doc, "results"))) {
        rc = ct_err_set(err, CT_ENOMEM, "out of memory");
        *status = 500;
        goto out;
    }
    /* sorted by TSUID for a stable answer */
    for (size_t i = 1; i < set.n; i++)
        for (size_t k = i; k > 0; k--) {
            size_t a = set.len[k - 1], bl = set.len[k];
            int c = memcmp(set.k[k - 1], set.k[k], a < bl ? a : bl);
            if (c < 0 || (c == 0 && a <= bl))
                break;
            uint8_t *tk = set.k[k];
            set.k[k] = set.k[k - 1];
            set.k[k - 1] = tk;
            set.len[k] = a;
            set.len[k - 1] = bl;
        }
    size_t n = 0; /* answered: SearchRpc's totalResults is the count the limit let through */
    for (size_t i = 0; i < set.n && (limit <= 0 || (int64_t)n < limit); i++) {
        if (!lookup_has_values(l, set.k[i], set.len[i], vals, nvals))
            continue;
        if ((rc = lookup_result(t, set.k[i], set.len[i], results, err)) != CT_OK) {
            *status = 500;
            goto out;
        }
        n++;
    }
    cJSON_AddNumberToObject(doc, "startIndex", 0);
    cJSON_AddNumberToObject(doc, "totalResults", (double)n);
    *out = doc;
    doc = NULL;
    *status = 200;
    goto out;
unresolved:
    /* SearchRpc's ErrCB: an unknown name is 404 "Unable to resolve one or more UIDs", the
     * NoSuchUniqueName message as details */
    if (rc == CT_NOTFOUND) {
        *out = cJSON_CreateString(err->msg);
        ct_err_set(err, CT_EINVAL, "Unable to resolve one or more UIDs");
        rc = CT_EINVAL;
        *status = 404;
    } else {
        *status = 500;
    }
out:
    free(vals);
    cJSON_Delete(doc);
    cJSON_Delete(own);
    rowkey_filter_free(rf);
    tsset_free(&set);
    return rc;
}

/* ---- uid assign ------------------------------------------------------------------------ */

int qmeta_uid_assign(struct tsdb *t, const cJSON *req, cJSON **out, int *status, struct ct_err *err)
{
    static const char *keys[3] = {"metric", "tagk", "tagv"};
    static const enum uid_kind kinds[3] = {UID_METRIC, UID_TAGK, UID_TAGV};
    struct uid *u = tsdb_uid(t);
    bool any = false;
    for (int i = 0; i < 3; i++)
        any |= cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(req, keys[i])) > 0;
    if (!any)
        return fail(status, 400, ct_err_set(err, CT_EINVAL, "Missing values to assign UIDs"), err);
    cJSON *doc = cJSON_CreateObject();
    if (!doc)
        return fail(status, 500, ct_err_set(err, CT_ENOMEM, "out of memory"), err);
    bool errors = false;
    for (int i = 0; i < 3; i++) {
        const cJSON *names = cJSON_GetObjectItemCaseSensitive(req, keys[i]), *n;
        if (cJSON_GetArraySize(names) == 0)
            continue;
        cJSON *ok = cJSON_AddObjectToObject(doc, keys[i]);
        char ekey[32];
        snprintf(ekey, sizeof(ekey), "%s_errors", keys[i]);
        cJSON *bad = NULL;
        cJSON_ArrayForEach(n, names)
        {
            if (!cJSON_IsString(n))
                continue;
            uint64_t id;
            struct ct_err e = {0};
            int rc = uid_assign_id(u, kinds[i], n->valuestring, strlen(n->valuestring), &id, &e);
            if (rc == CT_OK) {
                char hex[17];
                uid_format_hex(id, uid_width(u, kinds[i]), hex);
                cJSON_AddStringToObject(ok, n->valuestring, hex);
            } else {
                if (!bad)
                    bad = cJSON_AddObjectToObject(doc, ekey);
                cJSON_AddStringToObject(bad, n->valuestring, e.msg);
                errors = true;
            }
        }
    }
    *out = doc;
    *status = errors ? 400 : 200;
    return CT_OK;
}

/* ---- uid rename ------------------------------------------------------------------------ */

/* The reply of a rename that failed on its names: 400 with {"result":"false","error":msg}. */
static int rename_failed(const char *msg, cJSON **out, int *status, struct ct_err *err)
{
    cJSON *doc = cJSON_CreateObject();
    if (!doc || !cJSON_AddStringToObject(doc, "result", "false") ||
        !cJSON_AddStringToObject(doc, "error", msg)) {
        cJSON_Delete(doc);
        return fail(status, 500, ct_err_set(err, CT_ENOMEM, "out of memory"), err);
    }
    *out = doc;
    *status = 400;
    return CT_OK;
}

int qmeta_uid_rename(struct tsdb *t, const cJSON *req, cJSON **out, int *status, struct ct_err *err)
{
    /* UniqueIdRpc.handleRename: one of metric|tagk|tagv = old name, and name = new name (when
     * several types are given the last of metric, tagk, tagv wins, as OpenTSDB's HashMap walk
     * of a JSON body does); any other key of a body is taken as the type */
    const char *type = NULL, *old_name = NULL, *new_name = NULL;
    const cJSON *it;
    static const char *const order[3] = {"metric", "tagk", "tagv"};
    for (int i = 0; i < 3; i++) {
        const char *v = str_field(req, order[i]);
        if (v && *v) {
            type = order[i];
            old_name = v;
        }
    }
    cJSON_ArrayForEach(it, req)
    {
        if (!it->string || !cJSON_IsString(it) || !*it->valuestring)
            continue;
        if (!strcmp(it->string, "name"))
            new_name = it->valuestring;
        else if (!type && strcasecmp(it->string, "metric") && strcasecmp(it->string, "tagk") &&
                 strcasecmp(it->string, "tagv")) {
            type = it->string;
            old_name = it->valuestring;
        }
    }
    if (!type || !old_name || !new_name)
        return fail(status, 400,
                    ct_err_set(err, CT_EINVAL, "Missing necessary values to rename UID"), err);
    /* TSDB.renameUid: both names are validated as the type's names first */
    const char *allow = tsdb_get_config(t)->allow_special;
    struct ct_err e = {0};
    if (uid_name_check(type, old_name, strlen(old_name), allow, &e) != CT_OK ||
        uid_name_check(type, new_name, strlen(new_name), allow, &e) != CT_OK)
        return rename_failed(e.msg, out, status, err);
    enum uid_kind k;
    if (!strcasecmp(type, "metric"))
        k = UID_METRIC;
    else if (!strcasecmp(type, "tagk"))
        k = UID_TAGK;
    else if (!strcasecmp(type, "tagv"))
        k = UID_TAGV;
    else
        return rename_failed("Unknown type name", out, status, err);
    struct uid *u = tsdb_uid(t);
    uint64_t id;
    int rc = uid_get_id(u, k, old_name, strlen(old_name), &id, &e);
    if (rc == CT_NOTFOUND) {
        char msg[UID_MAX_NAME + 64];
        snprintf(msg, sizeof(msg), "Name(\"%s\") does not exist", old_name);
        return rename_failed(msg, out, status, err);
    }
    if (rc != CT_OK)
        return fail(status, 500, rc, (*err = e, err));
    /* the same rename `ctsdb uid rename` does (schema/uid.h) */
    rc = uid_rename(u, k, old_name, new_name, &e);
    if (rc == CT_EEXIST) {
        /* UniqueId.rename's message names the table, kind, width and the taken id's bytes */
        uint64_t taken = 0;
        if (uid_get_id(u, k, new_name, strlen(new_name), &taken, &e) != CT_OK)
            taken = 0; /* raced with a delete: the message still says it was assigned */
        unsigned w = uid_width(u, k);
        char bytes[8 * 6 + 3], msg[2 * UID_MAX_NAME + 256];
        size_t bl = 0;
        bytes[bl++] = '[';
        for (unsigned i = 0; i < w; i++) {
            int8_t b = (int8_t)(uint8_t)(taken >> (8 * (w - 1 - i)));
            bl += (size_t)snprintf(bytes + bl, sizeof(bytes) - bl, "%s%d", i ? ", " : "", b);
        }
        snprintf(bytes + bl, sizeof(bytes) - bl, "]");
        snprintf(msg, sizeof(msg),
                 "When trying rename(\"%s\", \"%s\") on UniqueId(%s, %s, %u): new name already "
                 "assigned ID=%s",
                 old_name, new_name, tsdb_get_config(t)->uid_table, uid_kind_qualifier(k), w,
                 bytes);
        return rename_failed(msg, out, status, err);
    }
    if (rc == CT_NOTFOUND) {
        char msg[UID_MAX_NAME + 64];
        snprintf(msg, sizeof(msg), "Name(\"%s\") does not exist", old_name);
        return rename_failed(msg, out, status, err);
    }
    if (rc != CT_OK) {
        *err = e;
        return fail(status, 500, rc, err);
    }
    cJSON *doc = cJSON_CreateObject();
    if (!doc || !cJSON_AddStringToObject(doc, "result", "true")) {
        cJSON_Delete(doc);
        return fail(status, 500, ct_err_set(err, CT_ENOMEM, "out of memory"), err);
    }
    *out = doc;
    *status = 200;
    return CT_OK;
}

/* ---- UID meta -------------------------------------------------------------------------- */

static const char *kind_upper(enum uid_kind k)
{
    return k == UID_METRIC ? "METRIC" : k == UID_TAGK ? "TAGK" : "TAGV";
}

/* Builds the UIDMeta object of (kind, id), merging what is stored. */
static int uidmeta_build(struct tsdb *t, enum uid_kind k, uint64_t id, cJSON **out,
                         struct ct_err *err)
{
    struct uid *u = tsdb_uid(t);
    char name[UID_MAX_NAME + 1], hex[17];
    size_t nl;
    int rc = uid_get_name(u, k, id, name, sizeof(name), &nl, err);
    if (rc != CT_OK)
        return rc;
    uid_format_hex(id, uid_width(u, k), hex);
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    cJSON_AddStringToObject(o, "uid", hex);
    cJSON_AddStringToObject(o, "type", kind_upper(k));
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddStringToObject(o, "description", "");
    cJSON_AddStringToObject(o, "notes", "");
    cJSON_AddNumberToObject(o, "created", 0);
    cJSON_AddNullToObject(o, "custom");
    cJSON_AddStringToObject(o, "displayName", "");
    char *json = NULL;
    size_t len = 0;
    rc = meta_uid_get(t, k, id, &json, &len, err);
    if (rc != CT_OK && rc != CT_NOTFOUND) {
        cJSON_Delete(o);
        return rc;
    }
    if (json) {
        cJSON *stored = cJSON_ParseWithLength(json, len);
        static const char *fields[] = {"description", "notes", "created", "custom", "displayName"};
        for (size_t i = 0; stored && i < 5; i++) {
            cJSON *v = cJSON_GetObjectItemCaseSensitive(stored, fields[i]);
            if (v)
                cJSON_ReplaceItemInObjectCaseSensitive(o, fields[i], cJSON_Duplicate(v, true));
        }
        cJSON_Delete(stored);
        free(json);
    }
    *out = o;
    return CT_OK;
}

int qmeta_uidmeta_store_new(struct tsdb *t, enum uid_kind k, uint64_t id, const char *name,
                            size_t len, int64_t now_s, struct ct_err *err)
{
    char hex[17];
    uid_format_hex(id, uid_width(tsdb_uid(t), k), hex);
    char *nm = strndup(name, len);
    cJSON *o = cJSON_CreateObject();
    bool ok = nm && o && cJSON_AddStringToObject(o, "uid", hex) &&
              cJSON_AddStringToObject(o, "type", kind_upper(k)) &&
              cJSON_AddStringToObject(o, "name", nm) &&
              cJSON_AddStringToObject(o, "description", "") &&
              cJSON_AddStringToObject(o, "notes", "") &&
              cJSON_AddNumberToObject(o, "created", (double)now_s) &&
              cJSON_AddNullToObject(o, "custom") && cJSON_AddStringToObject(o, "displayName", "");
    char *json = ok ? cJSON_PrintUnformatted(o) : NULL;
    free(nm);
    cJSON_Delete(o);
    if (!json)
        return ct_err_set(err, CT_ENOMEM, "out of memory writing a UIDMeta");
    int rc = meta_uid_put(t, k, id, json, err);
    free(json);
    return rc;
}

int qmeta_uidmeta(struct tsdb *t, enum qmeta_method m, const cJSON *req, int64_t now_ms,
                  cJSON **out, int *status, struct ct_err *err)
{
    struct uid *u = tsdb_uid(t);
    const char *hex = str_field(req, "uid"), *type = str_field(req, "type");
    /* UniqueIdRpc: a GET (query string) names the missing parameter; a body is UIDMeta's
     * "Missing UID" / "Missing type" */
    if (!hex || !*hex)
        return fail(
            status, 400,
            ct_err_set(err, CT_EINVAL, "%s",
                       m == QMETA_GET ? "Missing parameter <code>uid</code>" : "Missing UID"),
            err);
    if (!type || !*type)
        return fail(
            status, 400,
            ct_err_set(err, CT_EINVAL, "%s",
                       m == QMETA_GET ? "Missing parameter <code>type</code>" : "Missing type"),
            err);
    enum uid_kind k;
    if (!strcasecmp(type, "metric") || !strcasecmp(type, "metrics"))
        k = UID_METRIC;
    else if (!strcasecmp(type, "tagk"))
        k = UID_TAGK;
    else if (!strcasecmp(type, "tagv"))
        k = UID_TAGV;
    else
        return fail(status, 400, ct_err_set(err, CT_EINVAL, "Invalid type requested: %s", type),
                    err);
    uint64_t id;
    if (uid_parse_hex(hex, uid_width(u, k), &id, err) != CT_OK)
        return fail(status, 400, CT_EINVAL, err);
    cJSON *o = NULL;
    int rc = uidmeta_build(t, k, id, &o, err);
    if (rc == CT_NOTFOUND)
        ct_err_set(err, CT_NOTFOUND, "Could not find the requested UID");
    if (rc != CT_OK)
        return fail(status, rc == CT_NOTFOUND ? 404 : 500, rc, err);
    if (m == QMETA_GET) {
        *out = o;
        *status = 200;
        return CT_OK;
    }
    char *json = NULL; /* NULL: delete */
    if (m != QMETA_DELETE) {
        static const char *fields[] = {"description", "notes", "custom", "displayName"};
        bool changed = false;
        for (size_t i = 0; i < 4; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, fields[i]);
            if (!v && i == 3) /* the query-string form's name (parseUIDMetaQS) */
                v = cJSON_GetObjectItemCaseSensitive(req, "display_name");
            cJSON *nv = NULL;
            if (v)
                nv = cJSON_Duplicate(v, true);
            else if (m == QMETA_PUT) /* PUT replaces: absent fields reset */
                nv = i == 2 ? cJSON_CreateNull() : cJSON_CreateString("");
            if (nv)
                cJSON_ReplaceItemInObjectCaseSensitive(o, fields[i], nv);
            changed |= v != NULL;
        }
        if (!changed) { /* UIDMeta.syncToStorage: nothing to write -> 304 Not Modified */
            cJSON_Delete(o);
            *out = NULL;
            *status = 304;
            return CT_OK;
        }
        cJSON_ReplaceItemInObjectCaseSensitive(o, "created",
                                               cJSON_CreateNumber((double)(now_ms / 1000)));
        json = cJSON_PrintUnformatted(o);
        if (!json) {
            cJSON_Delete(o);
            return fail(status, 500, ct_err_set(err, CT_ENOMEM, "out of memory"), err);
        }
    }
    rc = meta_uid_put(t, k, id, json, err);
    free(json);
    if (rc != CT_OK) {
        cJSON_Delete(o);
        return fail(status, 500, rc, err);
    }
    if (m == QMETA_DELETE) {
        cJSON_Delete(o);
        *out = NULL;
        *status = 204;
    } else {
        *out = o;
        *status = 200;
    }
    return CT_OK;
}

/* ---- TSMeta ---------------------------------------------------------------------------- */

/* Storage: schema/meta.h (the ts_meta JSON is written by tsm_storage_json()). */

/* The user-editable fields: JSON name, query-string name (NULL: JSON only) and kind. */
enum tsm_kind {
    TSM_STR,
    TSM_CUSTOM,
    TSM_INT,
    TSM_DOUBLE
};
static const struct {
    const char *json, *qs;
    enum tsm_kind kind;
} tsm_fields[] = {
    {"displayName", "display_name", TSM_STR},
    {"description", "description", TSM_STR},
    {"notes", "notes", TSM_STR},
    {"custom", NULL, TSM_CUSTOM},
    {"units", "units", TSM_STR},
    {"dataType", "data_type", TSM_STR},
    {"retention", "retention", TSM_INT},
    {"max", "max", TSM_DOUBLE},
    {"min", "min", TSM_DOUBLE},
};
#define TSM_NFIELDS (sizeof(tsm_fields) / sizeof(tsm_fields[0]))

/* The stored state of one TSUID's meta. */
struct tsm_stored {
    cJSON *meta;       /* parsed ts_meta, NULL if absent */
    struct meta_ts rs; /* as stored: the bytes (the check-and-put's expected value), counter */
};

static void tsm_stored_clear(struct tsm_stored *st)
{
    cJSON_Delete(st->meta);
    meta_ts_clear(&st->rs);
    memset(st, 0, sizeof(*st));
}

static int tsm_load(struct tsdb *t, const uint8_t *ts, size_t tl, struct tsm_stored *st,
                    struct ct_err *err)
{
    memset(st, 0, sizeof(*st));
    int rc = meta_ts_get(t, ts, tl, &st->rs, err);
    if (rc != CT_OK)
        return rc;
    if (st->rs.json) {
        st->meta = cJSON_ParseWithLength(st->rs.json, st->rs.json_len);
        if (!st->meta || !cJSON_IsObject(st->meta)) {
            rc = ct_err_set(err, CT_ECORRUPT, "bad TSMeta JSON in %s",
                            tsdb_get_config(t)->meta_table);
            tsm_stored_clear(st);
        }
    }
    return rc;
}

/* A double as Jackson writes it: Java's Double.toString, NaN quoted. Returns a raw cJSON item. */
static cJSON *java_double_item(double v)
{
    char b[40];
    if (isnan(v))
        return cJSON_CreateRaw("\"NaN\"");
    if (isinf(v))
        return cJSON_CreateRaw(v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    qjson_format_double(v, b);
    return cJSON_CreateRaw(b);
}

/* The value of a double field as stored (number or "NaN"); NaN when absent or unreadable. */
static double stored_double(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsNumber(v))
        return v->valuedouble;
    if (cJSON_IsString(v)) {
        char *end;
        double d = strtod(v->valuestring, &end);
        if (*v->valuestring && !*end)
            return d;
    }
    return NAN;
}

static int64_t stored_long(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

static const char *stored_str(const cJSON *o, const char *key)
{
    const char *v = str_field(o, key);
    return v ? v : "";
}

/* Builds the canonical meta (every field, storage order) from src (NULL: defaults). */
static cJSON *tsm_canonical(const char *tsuid_hex, const cJSON *src)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    bool ok = cJSON_AddStringToObject(o, "tsuid", tsuid_hex) &&
              cJSON_AddStringToObject(o, "displayName", stored_str(src, "displayName")) &&
              cJSON_AddStringToObject(o, "description", stored_str(src, "description")) &&
              cJSON_AddStringToObject(o, "notes", stored_str(src, "notes")) &&
              cJSON_AddNumberToObject(o, "created", (double)stored_long(src, "created"));
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(src, "custom");
    ok = ok && cJSON_AddItemToObject(
                   o, "custom", cJSON_IsObject(c) ? cJSON_Duplicate(c, true) : cJSON_CreateNull());
    ok = ok && cJSON_AddStringToObject(o, "units", stored_str(src, "units")) &&
         cJSON_AddStringToObject(o, "dataType", stored_str(src, "dataType")) &&
         cJSON_AddNumberToObject(o, "retention", (double)stored_long(src, "retention")) &&
         cJSON_AddItemToObject(o, "max", java_double_item(src ? stored_double(src, "max") : NAN)) &&
         cJSON_AddItemToObject(o, "min", java_double_item(src ? stored_double(src, "min") : NAN));
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* Applies the request's fields to meta (a canonical object). *changed: whether any was given.
 * PUT (overwrite) first resets every user field to its default, as TSMeta.syncMeta does. */
static int tsm_apply(cJSON *meta, const cJSON *req, bool overwrite, bool *changed,
                     struct ct_err *err)
{
    *changed = false;
    if (overwrite) {
        cJSON *def = tsm_canonical(stored_str(meta, "tsuid"), NULL);
        if (!def)
            return ct_err_set(err, CT_ENOMEM, "out of memory");
        for (size_t i = 0; i < TSM_NFIELDS; i++)
            cJSON_ReplaceItemInObjectCaseSensitive(
                meta, tsm_fields[i].json,
                cJSON_DetachItemFromObjectCaseSensitive(def, tsm_fields[i].json));
        cJSON_Delete(def);
    }
    for (size_t i = 0; i < TSM_NFIELDS; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, tsm_fields[i].json);
        const char *name = tsm_fields[i].json;
        if (!v && tsm_fields[i].qs) {
            v = cJSON_GetObjectItemCaseSensitive(req, tsm_fields[i].qs);
            name = tsm_fields[i].qs;
        }
        if (!v)
            continue;
        cJSON *nv = NULL;
        switch (tsm_fields[i].kind) {
        case TSM_STR:
            if (cJSON_IsNull(v))
                nv = cJSON_CreateString("");
            else if (cJSON_IsString(v))
                nv = cJSON_CreateString(v->valuestring);
            else
                return ct_err_set(err, CT_EINVAL,
                                  "Unable to parse the given JSON: '%s' must be a string", name);
            break;
        case TSM_CUSTOM: {
            const cJSON *e;
            if (cJSON_IsNull(v)) {
                nv = cJSON_CreateNull();
                break;
            }
            if (!cJSON_IsObject(v))
                return ct_err_set(err, CT_EINVAL,
                                  "Unable to parse the given JSON: 'custom' must be an object of "
                                  "strings");
            cJSON_ArrayForEach(e, v)
            {
                if (!cJSON_IsString(e))
                    return ct_err_set(err, CT_EINVAL,
                                      "Unable to parse the given JSON: 'custom' must be an object "
                                      "of strings");
            }
            nv = cJSON_Duplicate(v, true);
            break;
        }
        case TSM_INT: {
            int64_t x;
            bool bad;
            if (!num_field(req, name, &x, &bad) || x < INT32_MIN || x > INT32_MAX)
                return ct_err_set(err, CT_EINVAL, "Unable to parse '%s' value", tsm_fields[i].qs);
            nv = cJSON_CreateNumber((double)x);
            break;
        }
        case TSM_DOUBLE: {
            double d;
            if (cJSON_IsNumber(v)) {
                d = v->valuedouble;
            } else if (cJSON_IsString(v) && !strcmp(v->valuestring, "NaN")) {
                d = NAN;
            } else if (!cJSON_IsString(v) ||
                       qagg_fill_scalar_parse(v->valuestring, &d, err) != CT_OK) {
                return ct_err_set(err, CT_EINVAL, "Unable to parse '%s' value", tsm_fields[i].qs);
            }
            nv = java_double_item(d);
            break;
        }
        }
        if (!nv)
            return ct_err_set(err, CT_ENOMEM, "out of memory");
        cJSON_ReplaceItemInObjectCaseSensitive(meta, tsm_fields[i].json, nv);
        *changed = true;
    }
    return CT_OK;
}

/* The reply object of a stored TSMeta: its fields with the UIDMeta of the metric and of every
 * tag key and value merged in, and the counter's totalDatapoints / lastReceived. */
static int tsm_reply(struct tsdb *t, const uint8_t *ts, size_t tl, const struct tsm_stored *st,
                     cJSON **out, struct ct_err *err)
{
    const struct rowkey_layout *l = tsdb_layout(t);
    char hex[2 * ROWKEY_MAX_TSUID + 1];
    bytes_to_hex(ts, tl, hex);
    cJSON *canon = tsm_canonical(hex, st->meta);
    cJSON *o = cJSON_CreateObject(), *mo = NULL, *tags = NULL;
    if (!o || !canon) {
        cJSON_Delete(o);
        cJSON_Delete(canon);
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    }
    cJSON_AddStringToObject(o, "tsuid", hex);
    int rc = uidmeta_build(t, UID_METRIC, rowkey_get_uid(ts, l->metric_width), &mo, err);
    if (rc == CT_OK) {
        cJSON_AddItemToObject(o, "metric", mo);
        tags = cJSON_AddArrayToObject(o, "tags");
        size_t pair = l->tagk_width + l->tagv_width;
        for (size_t i = 0; rc == CT_OK && i < (tl - l->metric_width) / pair; i++) {
            const uint8_t *p = ts + l->metric_width + i * pair;
            cJSON *km = NULL, *vm = NULL;
            rc = uidmeta_build(t, UID_TAGK, rowkey_get_uid(p, l->tagk_width), &km, err);
            if (rc == CT_OK) {
                cJSON_AddItemToArray(tags, km);
                rc = uidmeta_build(t, UID_TAGV, rowkey_get_uid(p + l->tagk_width, l->tagv_width),
                                   &vm, err);
                if (rc == CT_OK)
                    cJSON_AddItemToArray(tags, vm);
            }
        }
    }
    static const char *const order[] = {"description", "displayName", "notes",    "created",
                                        "custom",      "units",       "dataType", "retention",
                                        "max",         "min"};
    for (size_t i = 0; rc == CT_OK && i < sizeof(order) / sizeof(order[0]); i++)
        cJSON_AddItemToObject(o, order[i],
                              cJSON_DetachItemFromObjectCaseSensitive(canon, order[i]));
    cJSON_Delete(canon);
    if (rc == CT_OK) {
        cJSON_AddNumberToObject(o, "lastReceived",
                                (double)(st->rs.has_ctr ? st->rs.ctr_ts_ms / 1000 : 0));
        cJSON_AddNumberToObject(o, "totalDatapoints", (double)(st->rs.has_ctr ? st->rs.ctr : 0));
        *out = o;
        return CT_OK;
    }
    cJSON_Delete(o);
    return rc;
}

/* The ts_meta bytes of a canonical object (storage order, compact). Returns a new string. */
static char *tsm_storage_json(const cJSON *canon)
{
    return cJSON_PrintUnformatted(canon);
}

/* Writes the meta with a check-and-put against what was loaded (expected NULL: must not exist),
 * as TSMeta.syncToStorage / storeNew do. *applied false: storage changed in between. */
static int tsm_store(struct tsdb *t, const uint8_t *ts, size_t tl, const cJSON *canon,
                     const struct tsm_stored *st, bool *applied, struct ct_err *err)
{
    char *json = tsm_storage_json(canon);
    if (!json)
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    struct wc_bytes expected = wc_bytes_of(st->rs.json, st->rs.json_len);
    int rc = meta_ts_put(t, ts, tl, json, st->meta ? &expected : NULL, applied, err);
    free(json);
    return rc;
}

int qmeta_tsmeta_store_new(struct tsdb *t, const uint8_t *ts, size_t tl, int64_t now_s,
                           bool *created, struct ct_err *err)
{
    char thex[2 * ROWKEY_MAX_TSUID + 1];
    *created = false;
    if (tl > ROWKEY_MAX_TSUID)
        return ct_err_set(err, CT_EINVAL, "TSUID of %zu bytes", tl);
    bytes_to_hex(ts, tl, thex);
    cJSON *canon = tsm_canonical(thex, NULL);
    if (canon)
        cJSON_ReplaceItemInObjectCaseSensitive(canon, "created", cJSON_CreateNumber((double)now_s));
    char *json = canon ? tsm_storage_json(canon) : NULL;
    cJSON_Delete(canon);
    if (!json)
        return ct_err_set(err, CT_ENOMEM, "out of memory writing a TSMeta");
    int rc = meta_ts_put(t, ts, tl, json, NULL, created, err);
    free(json);
    return rc;
}

/* Resolves "metric{k=v,...}" to the TSUID of exactly that series (UniqueIdRpc.getTSUIDForMetric).
 * CT_NOTFOUND when a name has no UID. */
static int tsuid_of_m(struct tsdb *t, const char *m, uint8_t *ts, size_t cap, size_t *tl,
                      struct ct_err *err)
{
    const struct rowkey_layout *l = tsdb_layout(t);
    struct uid *u = tsdb_uid(t);
    cJSON *lr = lookup_req_from_m(m, err);
    if (!lr)
        return err->code;
    const char *metric = str_field(lr, "metric");
    const cJSON *tg, *tags = cJSON_GetObjectItemCaseSensitive(lr, "tags");
    struct rowkey_tag rt[ROWKEY_MAX_TAGS];
    size_t n = 0;
    uint64_t mid;
    int rc = uid_get_id(u, UID_METRIC, metric, strlen(metric), &mid, err);
    cJSON_ArrayForEach(tg, tags)
    {
        if (rc != CT_OK)
            break;
        const char *k = str_field(tg, "key"), *v = str_field(tg, "value");
        if (n == ROWKEY_MAX_TAGS) {
            rc = ct_err_set(err, CT_EINVAL, "Too many tags in: %s", m);
            break;
        }
        if ((rc = uid_get_id(u, UID_TAGK, k, strlen(k), &rt[n].tagk, err)) == CT_OK &&
            (rc = uid_get_id(u, UID_TAGV, v, strlen(v), &rt[n].tagv, err)) == CT_OK)
            n++;
    }
    if (rc == CT_OK)
        rc = rowkey_tsuid_build(l, mid, rt, n, ts, cap, tl, err);
    cJSON_Delete(lr);
    return rc;
}

/* GET by m: every stored TSMeta of the metric whose series has all the given tag pairs (a value
 * of "*" only needs the key), as TSUIDQuery.getTSMetas, in TSUID order. */
static int tsmeta_list(struct tsdb *t, const char *m, cJSON **out, int *status, struct ct_err *err)
{
    const struct rowkey_layout *l = tsdb_layout(t);
    struct uid *u = tsdb_uid(t);
    cJSON *lr = lookup_req_from_m(m, err);
    if (!lr)
        return fail(status, err->code == CT_ENOMEM ? 500 : 400, err->code, err);
    const char *metric = str_field(lr, "metric");
    const cJSON *tg, *tags = cJSON_GetObjectItemCaseSensitive(lr, "tags");
    uint64_t mid, want_k[ROWKEY_MAX_TAGS], want_v[ROWKEY_MAX_TAGS];
    bool any_v[ROWKEY_MAX_TAGS];
    size_t nw = 0;
    int rc = uid_get_id(u, UID_METRIC, metric, strlen(metric), &mid, err);
    cJSON_ArrayForEach(tg, tags)
    {
        if (rc != CT_OK)
            break;
        if (nw == ROWKEY_MAX_TAGS) {
            rc = ct_err_set(err, CT_EINVAL, "Too many tags in: %s", m);
            break;
        }
        const char *k = str_field(tg, "key"), *v = str_field(tg, "value");
        any_v[nw] = !strcmp(v, "*");
        want_v[nw] = 0;
        if ((rc = uid_get_id(u, UID_TAGK, k, strlen(k), &want_k[nw], err)) == CT_OK && !any_v[nw])
            rc = uid_get_id(u, UID_TAGV, v, strlen(v), &want_v[nw], err);
        nw++;
    }
    cJSON_Delete(lr);
    if (rc == CT_NOTFOUND) /* UniqueIdRpc's text for a NoSuchUniqueName here */
        ct_err_set(err, CT_NOTFOUND, "Unable to find one of the UIDs");
    if (rc != CT_OK)
        return fail(status, rc == CT_NOTFOUND ? 404 : rc == CT_EINVAL ? 400 : 500, rc, err);
    cJSON *list = cJSON_CreateArray();
    if (!list)
        return fail(status, 500, ct_err_set(err, CT_ENOMEM, "out of memory"), err);
    uint8_t prefix[ROWKEY_MAX_UID_WIDTH];
    rowkey_put_uid(prefix, mid, l->metric_width);
    struct wc_column col = {wc_bytes_str(TSDB_META_FAMILY), wc_bytes_str(META_TS_QUALIFIER), true};
    struct wc_scan_options so;
    wc_scan_options_init(&so);
    so.row_prefix = wc_bytes_of(prefix, l->metric_width);
    so.columns = &col;
    so.ncolumns = 1;
    struct wc_scanner *sc = NULL;
    if ((rc = wc_scanner_open(tsdb_meta_table(t), &so, &sc, err)) != CT_OK) {
        cJSON_Delete(list);
        return fail(status, 500, rc, err);
    }
    struct wc_row row;
    size_t pair = l->tagk_width + l->tagv_width;
    while ((rc = wc_scanner_next(sc, &row, err)) == CT_OK) {
        const uint8_t *ts = row.key.data;
        size_t tl = row.key.len;
        if (!tsuid_valid(l, tl) || tl > ROWKEY_MAX_TSUID || !row.ncells)
            continue; /* not a TSUID row (ctsdb's layout record) */
        bool match = true;
        for (size_t w = 0; w < nw && match; w++) {
            bool found = false;
            for (size_t i = 0; i < (tl - l->metric_width) / pair && !found; i++) {
                const uint8_t *p = ts + l->metric_width + i * pair;
                found = rowkey_get_uid(p, l->tagk_width) == want_k[w] &&
                        (any_v[w] || rowkey_get_uid(p + l->tagk_width, l->tagv_width) == want_v[w]);
            }
            match = found;
        }
        if (!match)
            continue;
        struct tsm_stored st;
        cJSON *one = NULL;
        int lrc = tsm_load(t, ts, tl, &st, err);
        if (lrc == CT_OK && st.meta)
            lrc = tsm_reply(t, ts, tl, &st, &one, err);
        tsm_stored_clear(&st);
        if (lrc != CT_OK) {
            /* a UID of a stored TSMeta no longer resolves: OpenTSDB fails the whole request */
            wc_scanner_close(sc);
            cJSON_Delete(list);
            if (lrc == CT_NOTFOUND)
                ct_err_set(err, CT_NOTFOUND, "Unable to find one of the UIDs");
            return fail(status, lrc == CT_NOTFOUND ? 404 : 500, lrc, err);
        }
        if (one)
            cJSON_AddItemToArray(list, one);
    }
    wc_scanner_close(sc);
    if (rc != CT_NOTFOUND) { /* the scan failed */
        cJSON_Delete(list);
        return fail(status, 500, rc, err);
    }
    *out = list;
    *status = 200;
    return CT_OK;
}

/* The TSUID named by the request's "tsuid" (hex) into ts. */
static int tsuid_of_req(struct tsdb *t, const char *hex, uint8_t *ts, size_t *tl,
                        struct ct_err *err)
{
    if (hex_to_bytes(hex, ts, ROWKEY_MAX_TSUID, tl) != 0 || !tsuid_valid(tsdb_layout(t), *tl))
        return ct_err_set(err, CT_EINVAL, "Invalid TSUID: %s", hex);
    return CT_OK;
}

int qmeta_tsmeta(struct tsdb *t, enum qmeta_method m, const cJSON *req, cJSON **out, int *status,
                 struct ct_err *err)
{
    const char *hex = str_field(req, "tsuid");
    uint8_t ts[ROWKEY_MAX_TSUID];
    size_t tl = 0;
    struct tsm_stored st = {0};
    cJSON *canon = NULL;
    int rc;
    if (!cJSON_IsObject(req))
        return fail(status, 400, ct_err_set(err, CT_EINVAL, "Unable to parse the given JSON"), err);
    if (hex && !*hex)
        hex = NULL;
    if (m == QMETA_GET) {
        if (!hex) {
            const char *mm = str_field(req, "m");
            if (!mm || !*mm)
                return fail(status, 400,
                            ct_err_set(err, CT_EINVAL, "Missing parameter <code>m</code>"), err);
            return tsmeta_list(t, mm, out, status, err);
        }
        if ((rc = tsuid_of_req(t, hex, ts, &tl, err)) != CT_OK)
            return fail(status, 400, rc, err);
        if ((rc = tsm_load(t, ts, tl, &st, err)) != CT_OK)
            return fail(status, 500, rc, err);
        if (!st.meta) {
            tsm_stored_clear(&st);
            return fail(status, 404,
                        ct_err_set(err, CT_NOTFOUND, "Could not find Timeseries meta data"), err);
        }
        rc = tsm_reply(t, ts, tl, &st, out, err);
        tsm_stored_clear(&st);
        if (rc == CT_NOTFOUND) /* a UID was deleted but its TSMeta left behind */
            ct_err_set(err, CT_NOTFOUND, "Unable to find one of the UIDs");
        if (rc != CT_OK)
            return fail(status, rc == CT_NOTFOUND ? 404 : 500, rc, err);
        *status = 200;
        return CT_OK;
    }
    if (m == QMETA_DELETE) {
        /* TSMeta.delete: the ts_meta column only (the counter stays) */
        if (!hex)
            return fail(status, 400,
                        ct_err_set(err, CT_EINVAL, "Unable to delete TSMeta information"), err);
        if ((rc = tsuid_of_req(t, hex, ts, &tl, err)) != CT_OK)
            return fail(status, 400, rc, err);
        if ((rc = meta_ts_delete(t, ts, tl, err)) != CT_OK)
            return fail(status, 500, rc, err);
        *out = NULL;
        *status = 204;
        return CT_OK;
    }
    /* POST merges the given fields into the stored meta, PUT replaces every user field */
    bool overwrite = m == QMETA_PUT, create = false, changed = false, applied = false;
    if (hex) {
        if ((rc = tsuid_of_req(t, hex, ts, &tl, err)) != CT_OK)
            return fail(status, 400, rc, err);
    } else {
        const char *mm = str_field(req, "m"), *cr = str_field(req, "create");
        if (!mm || !*mm)
            return fail(status, 400, ct_err_set(err, CT_EINVAL, "Missing parameter <code>m</code>"),
                        err);
        create = cr && !strcmp(cr, "true");
        if ((rc = tsuid_of_m(t, mm, ts, sizeof(ts), &tl, err)) != CT_OK) {
            if (rc == CT_NOTFOUND)
                ct_err_set(err, CT_NOTFOUND, "Unable to find one or more UIDs");
            return fail(status, rc == CT_NOTFOUND ? 404 : rc == CT_EINVAL ? 400 : 500, rc, err);
        }
    }
    char thex[2 * ROWKEY_MAX_TSUID + 1];
    bytes_to_hex(ts, tl, thex);
    if ((rc = tsm_load(t, ts, tl, &st, err)) != CT_OK)
        return fail(status, 500, rc, err);
    if (!st.meta && create) {
        /* storeNew: a blank meta with the given fields, and a zero counter if there is none */
        if (!(canon = tsm_canonical(thex, NULL))) {
            rc = ct_err_set(err, CT_ENOMEM, "out of memory");
            *status = 500;
            goto out;
        }
        if ((rc = tsm_apply(canon, req, false, &changed, err)) != CT_OK) {
            *status = rc == CT_EINVAL ? 400 : 500;
            goto out;
        }
        if (!st.rs.has_ctr) {
            if ((rc = meta_ts_counter_init(t, ts, tl, err)) != CT_OK) {
                *status = 500;
                goto out;
            }
        }
    } else if (st.meta) {
        /* syncToStorage: only with changes (else 304), every UID must still exist */
        if (!(canon = tsm_canonical(thex, st.meta))) {
            rc = ct_err_set(err, CT_ENOMEM, "out of memory");
            *status = 500;
            goto out;
        }
        if ((rc = tsm_apply(canon, req, overwrite, &changed, err)) != CT_OK) {
            *status = rc == CT_EINVAL ? 400 : 500;
            goto out;
        }
        if (!changed) {
            *out = NULL;
            *status = 304;
            rc = CT_OK;
            goto out;
        }
    } else if (hex) {
        bool given = false;
        cJSON *probe = tsm_canonical(thex, NULL);
        rc = probe ? tsm_apply(probe, req, false, &given, err)
                   : ct_err_set(err, CT_ENOMEM, "out of memory");
        cJSON_Delete(probe);
        if (rc != CT_OK) { /* a malformed field is reported first, as the body's parse is */
            *status = rc == CT_EINVAL ? 400 : 500;
            goto out;
        }
        if (!given) {
            *out = NULL;
            *status = 304; /* no changes is checked before storage */
            goto out;
        }
        rc = ct_err_set(err, CT_EINVAL, "Requested TSMeta did not exist");
        *status = 400;
        goto out;
    } else {
        rc = ct_err_set(err, CT_EINVAL,
                        "Could not find TSMeta, specify \"create=true\" to create a new one.");
        *status = 400;
        goto out;
    }
    /* the metric and tag UIDs must resolve (the reply merges their UIDMeta) */
    cJSON *probe_reply = NULL;
    if ((rc = tsm_reply(t, ts, tl, &st, &probe_reply, err)) != CT_OK) {
        if (rc == CT_NOTFOUND)
            ct_err_set(err, CT_NOTFOUND, "Unable to find one or more UIDs");
        *status = rc == CT_NOTFOUND ? 404 : 500;
        goto out;
    }
    cJSON_Delete(probe_reply);
    if ((rc = tsm_store(t, ts, tl, canon, &st, &applied, err)) != CT_OK) {
        *status = 500;
        goto out;
    }
    if (!applied) {
        rc = ct_err_set(err, CT_EIO,
                        "Failed to save the TSMeta to storage: this may be caused by another "
                        "process modifying storage data");
        *status = 500;
        goto out;
    }
    /* answer what is now stored */
    tsm_stored_clear(&st);
    if ((rc = tsm_load(t, ts, tl, &st, err)) != CT_OK ||
        (rc = tsm_reply(t, ts, tl, &st, out, err)) != CT_OK) {
        *status = 500;
        goto out;
    }
    *status = 200;
out:
    cJSON_Delete(canon);
    tsm_stored_clear(&st);
    return rc;
}

/* ---- annotations ----------------------------------------------------------------------- */

struct ann {
    char tsuid[2 * ROWKEY_MAX_TSUID + 1];
    int64_t start, end; /* as given (seconds, or ms when > 10 digits) */
    char *description, *notes;
    cJSON *custom; /* owned or NULL */
};

static void ann_clear(struct ann *a)
{
    free(a->description);
    free(a->notes);
    cJSON_Delete(a->custom);
    memset(a, 0, sizeof(*a));
}

static int64_t to_ms(int64_t t)
{
    return t > 9999999999LL ? t : t * 1000;
}

/* Reads an annotation object's fields into a (merging over what a holds). */
static int ann_from_json(const cJSON *o, struct ann *a, struct ct_err *err)
{
    const char *ts = str_field(o, "tsuid");
    if (ts)
        snprintf(a->tsuid, sizeof(a->tsuid), "%s", ts);
    bool bad;
    int64_t v;
    if (num_field(o, "startTime", &v, &bad) || num_field(o, "start_time", &v, &bad))
        a->start = v;
    if (bad)
        return ct_err_set(err, CT_EINVAL, "Unable to parse the start time");
    if (num_field(o, "endTime", &v, &bad) || num_field(o, "end_time", &v, &bad))
        a->end = v;
    static const char *sf[2] = {"description", "notes"};
    char **dst[2] = {&a->description, &a->notes};
    for (int i = 0; i < 2; i++) {
        const char *s = str_field(o, sf[i]);
        if (s) {
            free(*dst[i]);
            if (!(*dst[i] = strdup(s)))
                return ct_err_set(err, CT_ENOMEM, "out of memory");
        }
    }
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "custom");
    if (c) {
        cJSON_Delete(a->custom);
        a->custom = cJSON_IsNull(c) ? NULL : cJSON_Duplicate(c, true);
    }
    return CT_OK;
}

/* The canonical object: tsuid, description, notes, custom, endTime, startTime; empty and zero
 * fields left out. */
static cJSON *ann_to_json(const struct ann *a)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    if (a->tsuid[0])
        cJSON_AddStringToObject(o, "tsuid", a->tsuid);
    if (a->description && *a->description)
        cJSON_AddStringToObject(o, "description", a->description);
    if (a->notes && *a->notes)
        cJSON_AddStringToObject(o, "notes", a->notes);
    if (a->custom)
        cJSON_AddItemToObject(o, "custom", cJSON_Duplicate(a->custom, true));
    if (a->end)
        cJSON_AddNumberToObject(o, "endTime", (double)a->end);
    cJSON_AddNumberToObject(o, "startTime", (double)a->start);
    return o;
}

/* The object an HTTP answer carries: Annotation's JSON as OpenTSDB writes it (non-null fields:
 * tsuid - "" for a global one -, description, notes, custom when set, endTime, startTime). */
static cJSON *ann_to_api_json(const struct ann *a)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "tsuid", a->tsuid);
    cJSON_AddStringToObject(o, "description", a->description ? a->description : "");
    cJSON_AddStringToObject(o, "notes", a->notes ? a->notes : "");
    if (a->custom)
        cJSON_AddItemToObject(o, "custom", cJSON_Duplicate(a->custom, true));
    cJSON_AddNumberToObject(o, "endTime", (double)a->end);
    cJSON_AddNumberToObject(o, "startTime", (double)a->start);
    return o;
}

char *qmeta_annotation_api_json(const char *stored, size_t len)
{
    cJSON *o = cJSON_ParseWithLength(stored, len);
    struct ann a;
    memset(&a, 0, sizeof(a));
    struct ct_err e = {0};
    char *out = NULL;
    if (o && ann_from_json(o, &a, &e) == CT_OK) {
        cJSON *api = ann_to_api_json(&a);
        out = api ? cJSON_PrintUnformatted(api) : NULL;
        cJSON_Delete(api);
    }
    ann_clear(&a);
    cJSON_Delete(o);
    return out;
}

/* Whether an annotation request changes anything (Annotation's setters mark a field changed
 * when it differs from its default): without a description, notes, end time or custom map,
 * OpenTSDB answers 304 before it reads storage. */
static bool ann_request_changes(const struct ann *a)
{
    return (a->description && *a->description) || (a->notes && *a->notes) || a->end != 0 ||
           a->custom != NULL;
}

static int ann_tsuid_bytes(struct tsdb *t, const struct ann *a, uint8_t *ts, size_t *tl,
                           struct ct_err *err)
{
    *tl = 0;
    if (!a->tsuid[0])
        return CT_OK;
    if (hex_to_bytes(a->tsuid, ts, ROWKEY_MAX_TSUID, tl) != 0 || !tsuid_valid(tsdb_layout(t), *tl))
        return ct_err_set(err, CT_EINVAL, "Invalid TSUID: %s", a->tsuid);
    return CT_OK;
}

static int ann_load(struct tsdb *t, const uint8_t *ts, size_t tl, int64_t start_ms, struct ann *a,
                    struct ct_err *err)
{
    char *json = NULL;
    size_t jl = 0;
    int rc = tsdb_annotation_get(t, tl ? ts : NULL, tl, start_ms, &json, &jl, err);
    if (rc != CT_OK)
        return rc;
    cJSON *o = cJSON_ParseWithLength(json, jl);
    free(json);
    if (!o)
        return ct_err_set(err, CT_ECORRUPT, "stored annotation is not JSON");
    rc = ann_from_json(o, a, err);
    cJSON_Delete(o);
    return rc;
}

static int ann_store(struct tsdb *t, const struct ann *a, cJSON **out, struct ct_err *err)
{
    uint8_t ts[ROWKEY_MAX_TSUID];
    size_t tl;
    int rc = ann_tsuid_bytes(t, a, ts, &tl, err);
    if (rc != CT_OK)
        return rc;
    cJSON *o = ann_to_json(a);
    char *json = o ? cJSON_PrintUnformatted(o) : NULL;
    if (!json) {
        cJSON_Delete(o);
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    }
    /* a series with only annotations is a series of the tag index too (its entries first, so
     * the index never lacks a stored row's series) */
    struct tagidx_series tx = {ts, tl};
    if (!tl || (rc = tagidx_put(t, &tx, 1, WC_DURABILITY_USE_DEFAULT, err)) == CT_OK)
        rc = tsdb_annotation_put(t, tl ? ts : NULL, tl, to_ms(a->start), json, strlen(json), err);
    free(json);
    cJSON_Delete(o);
    if (rc != CT_OK)
        return rc;
    if (!(*out = ann_to_api_json(a)))
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    return CT_OK;
}

static int ann_write(struct tsdb *t, bool overwrite, const cJSON *req, struct ann *a, cJSON **out,
                     int *status, struct ct_err *err);

int qmeta_annotation(struct tsdb *t, enum qmeta_method m, const cJSON *req, cJSON **out,
                     int *status, struct ct_err *err)
{
    struct ann a;
    memset(&a, 0, sizeof(a));
    int rc = ann_from_json(req, &a, err);
    if (rc != CT_OK)
        return fail(status, 400, rc, err);
    if (a.start <= 0) {
        ann_clear(&a);
        return fail(status, 400, ct_err_set(err, CT_EINVAL, "Missing start time"), err);
    }
    uint8_t ts[ROWKEY_MAX_TSUID];
    size_t tl;
    if ((rc = ann_tsuid_bytes(t, &a, ts, &tl, err)) != CT_OK) {
        ann_clear(&a);
        return fail(status, 400, rc, err);
    }
    if (m == QMETA_GET || m == QMETA_DELETE) {
        struct ann st;
        memset(&st, 0, sizeof(st));
        rc = ann_load(t, ts, tl, to_ms(a.start), &st, err);
        if (rc == CT_NOTFOUND) {
            ann_clear(&a);
            ann_clear(&st);
            return fail(status, 404,
                        ct_err_set(err, CT_NOTFOUND, "Unable to locate annotation in storage"),
                        err);
        }
        if (rc == CT_OK && m == QMETA_DELETE)
            rc = tsdb_annotation_delete(t, tl ? ts : NULL, tl, to_ms(a.start), err);
        if (rc == CT_OK) {
            if (m == QMETA_GET) {
                *out = ann_to_api_json(&st);
                *status = *out ? 200 : 500;
            } else {
                *out = NULL;
                *status = 204;
            }
        } else {
            *status = 500;
        }
        ann_clear(&a);
        ann_clear(&st);
        return rc;
    }
    return ann_write(t, m == QMETA_PUT, req, &a, out, status, err);
}

/* POST (merge over the stored annotation) or PUT (replace) of the request object req, parsed
 * into *a (consumed). Without a change: *status 304, nothing stored, *out NULL. */
static int ann_write(struct tsdb *t, bool overwrite, const cJSON *req, struct ann *a, cJSON **out,
                     int *status, struct ct_err *err)
{
    *out = NULL;
    if (!ann_request_changes(a)) {
        ann_clear(a);
        *status = 304;
        return CT_OK;
    }
    uint8_t ts[ROWKEY_MAX_TSUID];
    size_t tl;
    int rc = ann_tsuid_bytes(t, a, ts, &tl, err);
    if (rc != CT_OK) {
        ann_clear(a);
        return fail(status, 400, rc, err);
    }
    if (!overwrite) {
        struct ann st;
        memset(&st, 0, sizeof(st));
        rc = ann_load(t, ts, tl, to_ms(a->start), &st, err);
        if (rc == CT_OK) {
            rc = ann_from_json(req, &st, err);
            ann_clear(a);
            *a = st;
        } else {
            ann_clear(&st);
        }
        if (rc != CT_OK && rc != CT_NOTFOUND) {
            ann_clear(a);
            return fail(status, 500, rc, err);
        }
    }
    rc = ann_store(t, a, out, err);
    ann_clear(a);
    if (rc != CT_OK)
        return fail(status, rc == CT_EINVAL ? 400 : 500, rc, err);
    *status = 200;
    return CT_OK;
}

struct delctx {
    struct tsdb *t;
    int64_t n;
    int rc;
    struct ct_err *err;
    struct {
        uint8_t ts[ROWKEY_MAX_TSUID];
        size_t tl;
        int64_t start;
    } * items;
    size_t nitems, cap;
};

static int collect_del(void *arg, const uint8_t *tsuid, size_t tl, int64_t start_ms,
                       const char *json, size_t jl)
{
    (void)json;
    (void)jl;
    struct delctx *d = arg;
    if (d->nitems == d->cap) {
        size_t nc = d->cap ? d->cap * 2 : 16;
        void *ni = realloc(d->items, nc * sizeof(*d->items));
        if (!ni)
            return CT_ENOMEM;
        d->items = ni;
        d->cap = nc;
    }
    if (tl)
        memcpy(d->items[d->nitems].ts, tsuid, tl);
    d->items[d->nitems].tl = tl;
    d->items[d->nitems++].start = start_ms;
    return 0;
}

int qmeta_annotation_bulk(struct tsdb *t, enum qmeta_method m, const cJSON *req, int64_t now_ms,
                          cJSON **out, int *status, struct ct_err *err)
{
    int rc;
    if (m == QMETA_POST || m == QMETA_PUT) {
        if (!cJSON_IsArray(req))
            return fail(status, 400,
                        ct_err_set(err, CT_EINVAL,
                                   "Unable to parse the given JSON: expected an "
                                   "array of annotations"),
                        err);
        cJSON *arr = cJSON_CreateArray();
        const cJSON *o;
        cJSON_ArrayForEach(o, req)
        {
            struct ann a;
            memset(&a, 0, sizeof(a));
            rc = ann_from_json(o, &a, err);
            if (rc == CT_OK && a.start <= 0) {
                /* Annotation.syncToStorage's IllegalArgumentException, as AnnotationRpc
                 * wraps it */
                rc = ct_err_set(err, CT_EINVAL, "The start timestamp has not been set");
                if (!*out)
                    *out = cJSON_CreateString("Annotation error: the start time is missing");
            }
            cJSON *stored = NULL;
            int st = 200;
            if (rc == CT_OK)
                rc = ann_write(t, m == QMETA_PUT, o, &a, &stored, &st, err);
            else
                ann_clear(&a);
            if (rc != CT_OK) {
                cJSON_Delete(arr);
                return fail(status, rc == CT_EINVAL ? 400 : 500, rc, err);
            }
            if (stored) /* an annotation without changes is left out, as OpenTSDB does */
                cJSON_AddItemToArray(arr, stored);
        }
        *out = arr;
        *status = 200;
        return CT_OK;
    }
    if (m != QMETA_DELETE)
        return fail(status, 405, ct_err_set(err, CT_EINVAL, "Method not allowed"), err);
    bool bad = false;
    int64_t start = 0, end = now_ms / 1000;
    /* the body's startTime / endTime, or the query string's start_time / end_time */
    if (!num_field(req, "startTime", &start, &bad) && !bad)
        num_field(req, "start_time", &start, &bad);
    if (bad || start <= 0)
        return fail(status, 400, ct_err_set(err, CT_EINVAL, "Missing the start time value"), err);
    if (!num_field(req, "endTime", &end, &bad) && !bad)
        num_field(req, "end_time", &end, &bad);
    const cJSON *gl = cJSON_GetObjectItemCaseSensitive(req, "global");
    bool global = cJSON_IsTrue(gl) || (cJSON_IsString(gl) && !strcasecmp(gl->valuestring, "true"));
    const cJSON *tsuids = cJSON_GetObjectItemCaseSensitive(req, "tsuids"), *h;
    if (!global && cJSON_GetArraySize(tsuids) == 0)
        return fail(status, 400,
                    ct_err_set(err, CT_EINVAL, "Missing the TSUIDs or global annotations flag"),
                    err);
    struct delctx d = {.t = t, .err = err};
    rc = CT_OK;
    if (global)
        rc = tsdb_annotation_scan(t, NULL, 0, to_ms(start), to_ms(end), collect_del, &d, err);
    cJSON_ArrayForEach(h, tsuids)
    {
        uint8_t ts[ROWKEY_MAX_TSUID];
        size_t tl;
        if (rc != CT_OK)
            break;
        if (!cJSON_IsString(h) || hex_to_bytes(h->valuestring, ts, sizeof(ts), &tl) != 0 ||
            !tsuid_valid(tsdb_layout(t), tl)) {
            rc = ct_err_set(err, CT_EINVAL, "Invalid TSUID");
            break;
        }
        rc = tsdb_annotation_scan(t, ts, tl, to_ms(start), to_ms(end), collect_del, &d, err);
    }
    for (size_t i = 0; rc == CT_OK && i < d.nitems; i++)
        rc = tsdb_annotation_delete(t, d.items[i].tl ? d.items[i].ts : NULL, d.items[i].tl,
                                    d.items[i].start, err);
    if (rc != CT_OK) {
        free(d.items);
        return fail(status, rc == CT_EINVAL ? 400 : 500, rc, err);
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "tsuids",
                          tsuids ? cJSON_Duplicate(tsuids, true) : cJSON_CreateArray());
    cJSON_AddBoolToObject(o, "global", global);
    cJSON_AddNumberToObject(o, "startTime", (double)start);
    cJSON_AddNumberToObject(o, "endTime", (double)end);
    cJSON_AddNumberToObject(o, "totalDeleted", (double)d.nitems);
    free(d.items);
    *out = o;
    *status = 200;
    return CT_OK;
}
