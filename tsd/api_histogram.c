/* api_histogram.c - POST /api/histogram and the telnet `histogram` line (api_histogram.h):
 * OpenTSDB 2.4's histogram datapoints (HistogramPojo:
 * {metric, timestamp, tags, buckets {"lo,hi": count}, underflow, overflow} or {.., id, value:
 * base64 of the codec bytes}), one object or an array, validated with OpenTSDB's messages,
 * encoded as a SimpleHistogram (schema/histogram.h) and stored as its 0x06 cell in the series'
 * hour row; answered as /api/put answers (204, or the summary / details object; a failure 400,
 * or 503 when every failed point failed because the storage backend did not answer).
 * Counted as /api/put counts (HistogramDataPointRpc shares PutDataPointRpc's counters): each
 * request in tsd.rpc.received type=http_put, each refused point in tsd.rpc.errors type=
 * unknown_metrics (a metric, tag name or value not assigned: "Unknown metric") or type=
 * illegal_arguments (its content).
 *
 * Enabled by tsd.core.histograms.config, a JSON map of codec class to id as OpenTSDB's: only
 * net.opentsdb.core.SimpleHistogramDecoder is known; unset, the endpoint answers 503 as
 * OpenTSDB does. Runs on a worker; each histogram is written (at the table's durability)
 * before the answer, so an acknowledged histogram is readable. A telnet line is parsed and
 * checked on the event loop by api_histogram_telnet() into a struct histo_batch; the batch is
 * written off the loop by api_histogram_telnet_write() (series resolved as histo_store() does,
 * every cell in one store write: one log sync per batch, not per line). */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "schema/histogram.h"
#include "schema/tsdb.h"
#include "storage/coding.h"
#include "tsd/api_histogram.h"
#include "tsd/conf.h"
#include "tsd/http.h"
#include "tsd/put.h"
#include "tsd/routes.h"
#include "tsd/tsd.h"
#include "tsd/tsd_int.h"
#include "tsd/tstats.h"

#define SIMPLE_DECODER "net.opentsdb.core.SimpleHistogramDecoder"

/* The id tsd.core.histograms.config gives SimpleHistogramDecoder, or -1 (not configured). */
int api_histogram_codec_id(const struct conf *c)
{
    const char *cfg = conf_get(c, "tsd.core.histograms.config");
    if (cfg == NULL || *cfg == '\0')
        return -1;
    cJSON *o = cJSON_Parse(cfg);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, SIMPLE_DECODER);
    int r = cJSON_IsNumber(id) && id->valuedouble >= 0 && id->valuedouble <= 255
                ? (int)id->valuedouble
                : -1;
    cJSON_Delete(o);
    return r;
}

static bool json_long(const cJSON *v, int64_t *out)
{
    if (cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble)) {
        *out = (int64_t)v->valuedouble;
        return true;
    }
    if (cJSON_IsString(v) && *v->valuestring) {
        char *end;
        long long x = strtoll(v->valuestring, &end, 10);
        if (*end == '\0') {
            *out = x;
            return true;
        }
    }
    return false;
}

/* Validates one HistogramPojo and builds its histogram; NULL with msg set (OpenTSDB's texts). */
static const char *to_histo(const cJSON *dp, int codec_id, struct histo *h, int64_t *ts_ms,
                            char *msg, size_t cap)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(dp, "metric");
    if (!cJSON_IsString(m) || !*m->valuestring)
        return "Metric name was empty";
    int64_t ts = 0;
    if (!json_long(cJSON_GetObjectItemCaseSensitive(dp, "timestamp"), &ts) || ts <= 0)
        return "Invalid timestamp";
    const cJSON *tags = cJSON_GetObjectItemCaseSensitive(dp, "tags");
    if (!cJSON_IsObject(tags) || cJSON_GetArraySize(tags) < 1)
        return "Missing tags";
    *ts_ms = ts > 9999999999LL ? ts : ts * 1000;
    const cJSON *value = cJSON_GetObjectItemCaseSensitive(dp, "value");
    struct ct_err err = {0};
    if (cJSON_IsString(value) && *value->valuestring) {
        int64_t id = 0;
        json_long(cJSON_GetObjectItemCaseSensitive(dp, "id"), &id);
        if (id < 0 || id > 255)
            return "Invalid type. Must be from 0 to 255.";
        if (id != codec_id) {
            snprintf(msg, cap, "No codec found for ID %lld", (long long)id);
            return msg;
        }
        size_t vl = strlen(value->valuestring);
        unsigned char *raw = malloc(vl + 1);
        long n = raw ? coding_base64_decode(value->valuestring, vl, raw, vl + 1) : -1;
        int rc = n < 0 ? CT_EINVAL : histo_decode(raw, (size_t)n, false, h, &err);
        free(raw);
        if (n < 0)
            return "Unable to decode the histogram value (base64)";
        if (rc != CT_OK) {
            snprintf(msg, cap, "Unable to decode the histogram value: %s", err.msg);
            return msg;
        }
        h->id = (uint8_t)codec_id;
        return NULL;
    }
    const cJSON *buckets = cJSON_GetObjectItemCaseSensitive(dp, "buckets"), *b;
    if (!cJSON_IsObject(buckets) || cJSON_GetArraySize(buckets) < 1)
        return "Histogram buckets cannot be null or empty if 'value' is empty.";
    cJSON_ArrayForEach(b, buckets)
    {
        char *end = NULL;
        float lo = strtof(b->string, &end);
        if (end == b->string || *end != ',') {
            snprintf(msg, cap, "Unable to parse bucket bounds: %s", b->string);
            return msg;
        }
        const char *hs = end + 1;
        float hi = strtof(hs, &end);
        int64_t count = 0;
        if (end == hs || *end != '\0') {
            snprintf(msg, cap, "Unable to parse bucket bounds: %s", b->string);
            return msg;
        }
        if (!json_long(b, &count) || count < 0) {
            snprintf(msg, cap, "Invalid count for bucket %s", b->string);
            return msg;
        }
        if (histo_add(h, lo, hi, (uint64_t)count, &err) != CT_OK) {
            snprintf(msg, cap, "%s", err.msg);
            return msg;
        }
    }
    int64_t u = 0, o = 0;
    const cJSON *uf = cJSON_GetObjectItemCaseSensitive(dp, "underflow");
    const cJSON *of = cJSON_GetObjectItemCaseSensitive(dp, "overflow");
    if ((uf && !json_long(uf, &u)) || (of && !json_long(of, &o)) || u < 0 || o < 0)
        return "Invalid underflow or overflow count";
    h->underflow = (uint64_t)u;
    h->overflow = (uint64_t)o;
    h->id = (uint8_t)codec_id;
    return NULL;
}

/* Stores histogram h of metric{tk=tv...} at ts_ms: resolves the series (creating names as
 * auto-create allows), encodes h with its id, writes the cell. CT_OK, or the code with err. */
static int histo_store(struct tsdb *t, const char *metric, const char *const *tk,
                       const char *const *tv, size_t nt, int64_t ts_ms, const struct histo *h,
                       struct ct_err *err)
{
    uint8_t tsuid[ROWKEY_MAX_TSUID];
    size_t tl = 0;
    uint8_t *val = NULL;
    size_t vl = 0;
    int rc = tsdb_series_resolve(t, metric, tk, tv, nt, tsuid, sizeof(tsuid), &tl, err);
    if (rc == CT_OK)
        rc = histo_encode(h, true, &val, &vl, err);
    if (rc == CT_OK)
        rc = histo_put(t, tsuid, tl, ts_ms, val, vl, err);
    free(val);
    return rc;
}

/* Stores one histogram point; NULL, or the error text for the answer's details (whole: cap is at
 * least CT_ERR_MSG_MAX) with its code in *code (CT_EINVAL for a point refused for its content). */
static const char *store_one(struct tsdb *t, const cJSON *dp, int codec_id, char *msg, size_t cap,
                             int *code)
{
    *code = CT_EINVAL;
    struct histo h;
    histo_init(&h, (uint8_t)codec_id);
    int64_t ts_ms = 0;
    const char *bad = to_histo(dp, codec_id, &h, &ts_ms, msg, cap);
    if (bad) {
        histo_clear(&h);
        return bad;
    }
    const cJSON *tags = cJSON_GetObjectItemCaseSensitive(dp, "tags"), *tg;
    size_t nt = (size_t)cJSON_GetArraySize(tags);
    const char **tk = calloc(nt, sizeof(*tk)), **tv = calloc(nt, sizeof(*tv));
    size_t i = 0;
    cJSON_ArrayForEach(tg, tags)
    {
        if (tk && tv)
            tk[i] = tg->string, tv[i] = cJSON_IsString(tg) ? tg->valuestring : "";
        i++;
    }
    struct ct_err err = {0};
    int rc = !tk || !tv
                 ? ct_err_set(&err, CT_ENOMEM, "out of memory")
                 : histo_store(t, cJSON_GetObjectItemCaseSensitive(dp, "metric")->valuestring, tk,
                               tv, nt, ts_ms, &h, &err);
    free(tk);
    free(tv);
    histo_clear(&h);
    if (rc == CT_OK)
        return NULL;
    *code = rc;
    /* PutDataPointRpc's wording for a name that is not assigned (metric, tag name or value:
     * its catch is NoSuchUniqueName's, whatever the kind) */
    if (rc == CT_NOTFOUND)
        return "Unknown metric";
    snprintf(msg, cap, "%s", err.msg);
    return msg;
}

static void histogram_work(struct http_req *r, void *arg)
{
    (void)arg;
    struct tsd *td = http_req_tsd(r);
    int codec_id = api_histogram_codec_id(tsd_conf(td));
    size_t len = 0;
    const char *body = http_req_body(r, &len);
    tstats_add(TSTATS_HTTP_PUT, 1);
    if (len == 0) {
        http_reply_error(r, 400, "Missing request content", NULL);
        return;
    }
    cJSON *doc = cJSON_ParseWithLength(body, len);
    if (!cJSON_IsObject(doc) && !cJSON_IsArray(doc)) {
        cJSON_Delete(doc);
        http_reply_error(r, 400, "Unable to parse the given JSON", NULL);
        return;
    }
    bool details = http_req_flag(r, "details"), summary = http_req_flag(r, "summary");
    cJSON *errors = details ? cJSON_CreateArray() : NULL;
    size_t success = 0, failed = 0;
    /* failures because the backend did not answer, and the first one's text: when every
     * failure is one, the answer is 503 (as /api/put's, docs/bigtable.md "Faults") */
    size_t unavail = 0;
    char unavail_msg[CT_ERR_MSG_MAX + 64] = "";
    const cJSON *dp;
    cJSON *one = cJSON_IsObject(doc) ? doc : NULL;
    size_t n = one ? 1 : (size_t)cJSON_GetArraySize(doc);
    if (n == 0) {
        cJSON_Delete(doc);
        cJSON_Delete(errors);
        http_reply_error(r, 400, "No datapoints found in content", NULL);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        dp = one ? one : cJSON_GetArrayItem(doc, (int)i);
        char msg[CT_ERR_MSG_MAX + 64];
        int code = CT_EINVAL;
        const char *bad = cJSON_IsObject(dp)
                              ? store_one(tsd_tsdb(td), dp, codec_id, msg, sizeof(msg), &code)
                              : "Unable to parse the given JSON";
        if (!bad) {
            success++;
            continue;
        }
        failed++;
        if (code == CT_NOTFOUND || code == CT_EINVAL)
            tstats_add(code == CT_NOTFOUND ? TSTATS_UNKNOWN_METRICS : TSTATS_ILLEGAL_ARGUMENTS, 1);
        if (code == CT_EUNAVAIL && unavail++ == 0)
            snprintf(unavail_msg, sizeof(unavail_msg), "%s", bad);
        if (errors) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddItemToObject(e, "datapoint", cJSON_Duplicate(dp, true));
            cJSON_AddStringToObject(e, "error", bad);
            cJSON_AddItemToArray(errors, e);
        }
    }
    cJSON_Delete(doc);
    bool unavailable = failed > 0 && unavail == failed;
    int fail_status = unavailable ? http_status_of(CT_EUNAVAIL, 400) : 400;
    if (summary || details) {
        cJSON *o = cJSON_CreateObject();
        if (errors)
            cJSON_AddItemToObject(o, "errors", errors);
        cJSON_AddNumberToObject(o, "failed", (double)failed);
        cJSON_AddNumberToObject(o, "success", (double)success);
        http_reply_cjson(r, failed == 0 ? 200 : fail_status, o);
    } else if (unavailable) {
        http_reply_error(r, fail_status,
                         "One or more data points were not written: the storage backend is "
                         "unavailable; retry the request later",
                         unavail_msg);
    } else if (failed > 0) {
        http_reply_error(r, 400, "One or more data points had errors",
                         "Please see the TSD logs or append \"details\" to the put request");
    } else {
        http_reply_status(r, 204);
    }
}

void api_histogram_handle(struct http_req *r)
{
    struct tsd *t = http_req_tsd(r);
    if (t->read_only) {
        http_reply_error(r, 404, "Endpoint not found",
                         "the TSD is in read-only mode (tsd.mode=ro)");
        return;
    }
    if (api_histogram_codec_id(tsd_conf(t)) < 0) {
        http_reply_error(r, 503,
                         "Histogram storage has not been enabled. Check the "
                         "'tsd.core.histograms.config' configuration.",
                         NULL);
        return;
    }
    struct ct_err err = {0};
    if (http_req_defer(r, histogram_work, NULL, &err) != CT_OK)
        http_reply_error(r, 503, "The TSD is overloaded; retry later", err.msg);
}

/* ---- the telnet line ----------------------------------------------------------------------- */

/* Splits s at every sep, keeping empty pieces (Java's Tags.splitString); at most max pieces. */
static size_t split_keep(char *s, char sep, char **w, size_t max)
{
    size_t n = 0;
    w[n++] = s;
    for (char *p = s; *p && n < max; p++)
        if (*p == sep) {
            *p = '\0';
            w[n++] = p + 1;
        }
    return n;
}

/* Java's Long.parseLong: an optional sign and decimal digits in range; else its message. */
static bool java_long(const char *s, int64_t *out, char *msg, size_t cap)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || isspace((unsigned char)*s) || *end || errno) {
        snprintf(msg, cap, "For input string: \"%.200s\"", s);
        return false;
    }
    *out = v;
    return true;
}

/* Java's Float.parseFloat (decimal and exponent forms, surrounding blanks allowed). */
static bool java_float(const char *s, float *out, char *msg, size_t cap)
{
    char *end = NULL;
    float v = strtof(s, &end);
    while (end && *end == ' ')
        end++;
    if (end == s || *end) {
        snprintf(msg, cap, "For input string: \"%.200s\"", s);
        return false;
    }
    *out = v;
    return true;
}

/* HistogramDataPointRpc.parseTelnet: `lo,hi=count` buckets and `u=N` / `o=N` joined by ':'. */
static bool parse_buckets(char *value, struct histo *h, char *msg, size_t cap)
{
    char *b[TELNET_MAX_LINE + 1];
    size_t nb = split_keep(value, ':', b, sizeof(b) / sizeof(b[0]));
    for (size_t i = 0; i < nb; i++) {
        char bucket[TELNET_MAX_LINE + 1];
        snprintf(bucket, sizeof(bucket), "%s", b[i]);
        char *kv[3];
        if (split_keep(b[i], '=', kv, 3) != 2) {
            snprintf(msg, cap, "Improperly formatted bucket: %.200s", bucket);
            return false;
        }
        int64_t n = 0;
        bool uo = !strcasecmp(kv[0], "u") || !strcasecmp(kv[0], "o");
        if (uo) {
            if (!java_long(kv[1], &n, msg, cap))
                return false;
            if (n < 0) {
                snprintf(msg, cap, "Invalid underflow or overflow count");
                return false;
            }
            if (tolower((unsigned char)kv[0][0]) == 'u')
                h->underflow = (uint64_t)n;
            else
                h->overflow = (uint64_t)n;
            continue;
        }
        char *bd[3];
        if (split_keep(kv[0], ',', bd, 3) != 2) {
            snprintf(msg, cap, "Improperly formatted bounds: %.200s", bucket);
            return false;
        }
        float lo = 0, hi = 0;
        if (!java_float(bd[0], &lo, msg, cap) || !java_float(bd[1], &hi, msg, cap) ||
            !java_long(kv[1], &n, msg, cap))
            return false;
        if (n < 0) {
            snprintf(msg, cap, "Invalid count for bucket %.200s", bucket);
            return false;
        }
        struct ct_err err = {0};
        if (histo_add(h, lo, hi, (uint64_t)n, &err) != CT_OK) {
            snprintf(msg, cap, "%s", err.msg);
            return false;
        }
    }
    return true;
}

/* The codec bytes of a `<id> <base64>` line, decoded as the HTTP "value" is. */
static bool decode_value(const char *value, long id, int codec_id, struct histo *h, char *msg,
                         size_t cap)
{
    if (id != codec_id) {
        snprintf(msg, cap, "No codec found for ID %ld", id);
        return false;
    }
    size_t vl = strlen(value);
    unsigned char raw[TELNET_MAX_LINE + 1];
    long n = coding_base64_decode(value, vl, raw, sizeof(raw));
    if (n < 0) {
        snprintf(msg, cap, "Unable to decode the histogram value (base64)");
        return false;
    }
    struct ct_err err = {0};
    if (histo_decode(raw, (size_t)n, false, h, &err) != CT_OK) {
        snprintf(msg, cap, "Unable to decode the histogram value: %s", err.msg);
        return false;
    }
    h->id = (uint8_t)codec_id;
    return true;
}

/* One parsed telnet histogram waiting for its write. */
struct histo_entry {
    char *names; /* "metric\0k1\0v1\0...", owned */
    size_t ntags;
    int64_t ts_ms;
    uint8_t *val; /* id byte + codec bytes, owned */
    size_t vlen;
    uint64_t owner;
    char *failure; /* after the write: NULL (stored) or the reply text, owned */
};

struct histo_batch {
    struct histo_entry *e;
    size_t n, cap;
};

struct histo_batch *histo_batch_new(void)
{
    return calloc(1, sizeof(struct histo_batch));
}

void histo_batch_reset(struct histo_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        free(b->e[i].names);
        free(b->e[i].val);
        free(b->e[i].failure);
    }
    b->n = 0;
}

void histo_batch_free(struct histo_batch *b)
{
    if (!b)
        return;
    histo_batch_reset(b);
    free(b->e);
    free(b);
}

size_t histo_batch_count(const struct histo_batch *b)
{
    return b->n;
}

const char *histo_batch_failure(const struct histo_batch *b, size_t i, uint64_t *owner)
{
    *owner = b->e[i].owner;
    return b->e[i].failure;
}

/* Appends a parsed histogram (names and value copied); false when out of memory. */
static bool histo_batch_add(struct histo_batch *b, const char *metric, const char *const *tk,
                            const char *const *tv, size_t nt, int64_t ts_ms, const uint8_t *val,
                            size_t vlen, uint64_t owner)
{
    if (b->n == b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 64;
        struct histo_entry *ne = realloc(b->e, nc * sizeof(*ne));
        if (!ne)
            return false;
        b->e = ne;
        b->cap = nc;
    }
    size_t nl = strlen(metric) + 1;
    for (size_t i = 0; i < nt; i++)
        nl += strlen(tk[i]) + strlen(tv[i]) + 2;
    struct histo_entry *e = &b->e[b->n];
    memset(e, 0, sizeof(*e));
    e->names = malloc(nl);
    e->val = malloc(vlen ? vlen : 1);
    if (!e->names || !e->val) {
        free(e->names);
        free(e->val);
        return false;
    }
    char *p = e->names;
    p = stpcpy(p, metric) + 1;
    for (size_t i = 0; i < nt; i++) {
        p = stpcpy(p, tk[i]) + 1;
        p = stpcpy(p, tv[i]) + 1;
    }
    memcpy(e->val, val, vlen);
    e->vlen = vlen;
    e->ntags = nt;
    e->ts_ms = ts_ms;
    e->owner = owner;
    b->n++;
    return true;
}

static void histo_fail(struct histo_entry *e, const char *why)
{
    size_t n = strlen(why) + 32;
    e->failure = malloc(n);
    if (e->failure)
        snprintf(e->failure, n, "histogram: HBase error: %s", why);
}

void api_histogram_telnet_write(struct tsd *td, struct histo_batch *b)
{
    struct tsdb *t = tsd_tsdb(td);
    struct histo_cell *cells = calloc(b->n ? b->n : 1, sizeof(*cells));
    uint8_t(*tsuids)[ROWKEY_MAX_TSUID] = calloc(b->n ? b->n : 1, ROWKEY_MAX_TSUID);
    size_t *idx = calloc(b->n ? b->n : 1, sizeof(*idx));
    if (!cells || !tsuids || !idx) {
        for (size_t i = 0; i < b->n; i++)
            histo_fail(&b->e[i], "out of memory writing histograms");
        goto out;
    }
    size_t nc = 0;
    for (size_t i = 0; i < b->n; i++) {
        struct histo_entry *e = &b->e[i];
        const char *tk[TELNET_MAX_LINE / 2 + 1], *tv[TELNET_MAX_LINE / 2 + 1];
        const char *p = e->names + strlen(e->names) + 1;
        for (size_t k = 0; k < e->ntags; k++) {
            tk[k] = p;
            p += strlen(p) + 1;
            tv[k] = p;
            p += strlen(p) + 1;
        }
        struct ct_err err = {0};
        size_t tl = 0;
        if (tsdb_series_resolve(t, e->names, tk, tv, e->ntags, tsuids[nc], ROWKEY_MAX_TSUID, &tl,
                                &err) != CT_OK) {
            histo_fail(e, err.msg);
            continue;
        }
        cells[nc] = (struct histo_cell){tsuids[nc], tl, e->ts_ms, e->val, e->vlen};
        idx[nc++] = i;
    }
    struct ct_err err = {0};
    if (nc && histo_put_many(t, cells, nc, &err) != CT_OK)
        for (size_t k = 0; k < nc; k++)
            histo_fail(&b->e[idx[k]], err.msg);
out:
    free(cells);
    free(tsuids);
    free(idx);
}

#define TL_FAIL(st, prefix, ...)                                                                   \
    do {                                                                                           \
        int n_ = snprintf(msg, cap, "histogram: %s", prefix);                                      \
        if (n_ >= 0 && (size_t)n_ < cap)                                                           \
            snprintf(msg + n_, cap - (size_t)n_, __VA_ARGS__);                                     \
        return st;                                                                                 \
    } while (0)

enum histo_line_status api_histogram_telnet(struct tsd *td, const char *line, size_t len,
                                            struct histo_batch *b, uint64_t owner, char *msg,
                                            size_t cap)
{
    static const char ill[] = "illegal argument: ";
    if (api_histogram_codec_id(tsd_conf(td)) < 0)
        TL_FAIL(HISTO_LINE_EARG, ill,
                "Histogram storage has not been enabled. Check the "
                "'tsd.core.histograms.config' configuration.");
    int codec_id = api_histogram_codec_id(tsd_conf(td));
    char buf[TELNET_MAX_LINE + 1];
    if (len > TELNET_MAX_LINE)
        TL_FAIL(HISTO_LINE_EARG, ill, "line too long");
    memcpy(buf, line, len);
    buf[len] = '\0';
    char *w[TELNET_MAX_LINE + 2];
    size_t nw = split_keep(buf, ' ', w, sizeof(w) / sizeof(w[0]));
    if (nw < 5)
        TL_FAIL(HISTO_LINE_EARG, ill, "not enough arguments (need least 5, got %zu)", nw - 1);
    if (!*w[1])
        TL_FAIL(HISTO_LINE_EARG, ill, "empty metric name");
    char tsbuf[TELNET_MAX_LINE + 1], num[256];
    size_t tl = 0;
    for (const char *p = w[2]; *p; p++) /* "1356998400.500" is milliseconds */
        if (*p != '.')
            tsbuf[tl++] = *p;
    tsbuf[tl] = '\0';
    int64_t ts = 0;
    if (!put_parse_long(tsbuf, tl, &ts, num, sizeof(num)))
        TL_FAIL(HISTO_LINE_ENUMBER, "invalid value: ", "%s", num);
    if (ts <= 0)
        TL_FAIL(HISTO_LINE_EARG, ill, "invalid timestamp: %lld", (long long)ts);
    /* a third word that is an int is the codec id (Integer.parseInt), the value follows */
    char *end = NULL;
    errno = 0;
    long id = strtol(w[3], &end, 10);
    bool has_id = *w[3] && !isspace((unsigned char)*w[3]) && !*end && errno == 0 && id >= INT_MIN &&
                  id <= INT_MAX;
    char *value = has_id ? w[4] : w[3];
    if (!*value)
        TL_FAIL(HISTO_LINE_EARG, ill, "empty histogram value");
    const char *tk[TELNET_MAX_LINE / 2 + 1], *tv[TELNET_MAX_LINE / 2 + 1];
    size_t nt = 0;
    for (size_t i = has_id ? 5 : 4; i < nw; i++) {
        if (!*w[i])
            continue;
        char *eq = strchr(w[i], '=');
        if (!eq || eq == w[i] || !eq[1] || strchr(eq + 1, '='))
            TL_FAIL(HISTO_LINE_EARG, ill, "invalid tag: %s", w[i]);
        *eq = '\0';
        size_t k = 0;
        while (k < nt && strcmp(tk[k], w[i]))
            k++;
        if (k < nt && !strcmp(tv[k], eq + 1))
            continue;
        if (k < nt) {
            char seen[TELNET_MAX_LINE + 1] = "";
            for (size_t j = 0; j < nt; j++)
                snprintf(seen + strlen(seen), sizeof(seen) - strlen(seen), "%s%s=%s", j ? ", " : "",
                         tk[j], tv[j]);
            TL_FAIL(HISTO_LINE_EARG, ill, "duplicate tag: %s=%s, tags={%s}", w[i], eq + 1, seen);
        }
        tk[nt] = w[i];
        tv[nt++] = eq + 1;
    }
    /* From here on OpenTSDB fails through the write's errback: "HBase error" whatever the cause */
    static const char store[] = "HBase error: ";
    struct histo h;
    histo_init(&h, (uint8_t)codec_id);
    char why[CT_ERR_MSG_MAX + 64]; /* a whole ct_err text and its prefix */
    bool ok = has_id ? decode_value(value, id, codec_id, &h, why, sizeof(why))
                     : parse_buckets(value, &h, why, sizeof(why));
    if (!ok) {
        histo_clear(&h);
        TL_FAIL(HISTO_LINE_ESTORE, store, "%s", why);
    }
    int64_t ts_ms = ts > 9999999999LL ? ts : ts * 1000;
    if (ts_ms > 9999999999999LL) {
        histo_clear(&h);
        TL_FAIL(HISTO_LINE_ESTORE, store, "Invalid timestamp");
    }
    struct ct_err err = {0};
    uint8_t *val = NULL;
    size_t vl = 0;
    int rc = histo_encode(&h, true, &val, &vl, &err);
    histo_clear(&h);
    if (rc != CT_OK)
        TL_FAIL(HISTO_LINE_ESTORE, store, "%s", err.msg);
    bool added = histo_batch_add(b, w[1], tk, tv, nt, ts_ms, val, vl, owner);
    free(val);
    if (!added)
        TL_FAIL(HISTO_LINE_ESTORE, store, "out of memory queueing a histogram");
    return HISTO_LINE_OK;
}
