/* api_histogram.c - POST /api/histogram: OpenTSDB 2.4's histogram datapoints (HistogramPojo:
 * {metric, timestamp, tags, buckets {"lo,hi": count}, underflow, overflow} or {.., id, value:
 * base64 of the codec bytes}), one object or an array, validated with OpenTSDB's messages,
 * encoded as a SimpleHistogram (schema/histogram.h) and stored as its 0x06 cell in the series'
 * hour row; answered as /api/put answers (204, or the summary / details object).
 *
 * Enabled by tsd.core.histograms.config, a JSON map of codec class to id as OpenTSDB's: only
 * net.opentsdb.core.SimpleHistogramDecoder is known; unset, the endpoint answers 503 as
 * OpenTSDB does. Runs on a worker; each histogram is written (at the table's durability)
 * before the answer, so an acknowledged histogram is readable. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/histogram.h"
#include "schema/tsdb.h"
#include "storage/coding.h"
#include "tsd/conf.h"
#include "tsd/http.h"
#include "tsd/routes.h"
#include "tsd/tsd.h"
#include "tsd/tsd_int.h"

#define SIMPLE_DECODER "net.opentsdb.core.SimpleHistogramDecoder"

/* The id tsd.core.histograms.config gives SimpleHistogramDecoder, or -1 (not configured). */
static int simple_codec_id(const struct conf *c)
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
            snprintf(msg, cap, "Unable to decode the histogram value: %.200s", err.msg);
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
            snprintf(msg, cap, "%.300s", err.msg);
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

/* Stores one histogram point; NULL, or the error text for the answer's details. */
static const char *store_one(struct tsdb *t, const cJSON *dp, int codec_id, char *msg, size_t cap)
{
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
    uint8_t tsuid[ROWKEY_MAX_TSUID];
    size_t tl = 0;
    uint8_t *val = NULL;
    size_t vl = 0;
    int rc = !tk || !tv ? ct_err_set(&err, CT_ENOMEM, "out of memory")
                        : tsdb_series_resolve(t, cJSON_GetObjectItemCaseSensitive(dp, "metric")->valuestring,
                                              tk, tv, nt, tsuid, sizeof(tsuid), &tl, &err);
    if (rc == CT_OK)
        rc = histo_encode(&h, true, &val, &vl, &err);
    if (rc == CT_OK)
        rc = histo_put(t, tsuid, tl, ts_ms, val, vl, &err);
    free(val);
    free(tk);
    free(tv);
    histo_clear(&h);
    if (rc == CT_OK)
        return NULL;
    /* PutDataPointRpc's wording for a name that is not assigned */
    if (rc == CT_NOTFOUND && strstr(err.msg, "'metrics'"))
        return "Unknown metric";
    snprintf(msg, cap, "%.300s", err.msg);
    return msg;
}

static void histogram_work(struct http_req *r, void *arg)
{
    (void)arg;
    struct tsd *td = http_req_tsd(r);
    int codec_id = simple_codec_id(tsd_conf(td));
    size_t len = 0;
    const char *body = http_req_body(r, &len);
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
        char msg[320];
        const char *bad = cJSON_IsObject(dp) ? store_one(tsd_tsdb(td), dp, codec_id, msg, sizeof(msg))
                                             : "Unable to parse the given JSON";
        if (!bad) {
            success++;
            continue;
        }
        failed++;
        if (errors) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddItemToObject(e, "datapoint", cJSON_Duplicate(dp, true));
            cJSON_AddStringToObject(e, "error", bad);
            cJSON_AddItemToArray(errors, e);
        }
    }
    cJSON_Delete(doc);
    if (summary || details) {
        cJSON *o = cJSON_CreateObject();
        if (errors)
            cJSON_AddItemToObject(o, "errors", errors);
        cJSON_AddNumberToObject(o, "failed", (double)failed);
        cJSON_AddNumberToObject(o, "success", (double)success);
        http_reply_cjson(r, failed == 0 ? 200 : 400, o);
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
    if (simple_codec_id(tsd_conf(t)) < 0) {
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
