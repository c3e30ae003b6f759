/* api_meta.c - the metadata endpoints: /api/suggest, /api/search/lookup (the other search types
 * answer 400 "Searching is not enabled", as OpenTSDB without a search plugin), /api/uid/assign,
 * /api/uid/rename, /api/uid/uidmeta, /api/uid/tsmeta (other /api/uid/ paths: 501), /api/annotation(s) with /bulk,
 * and /api/config/filters.
 * Each handler turns the query string (GET) or the body (POST/PUT/DELETE with a body) into one
 * request object, runs query/qmeta.h on a worker and replies with its document or OpenTSDB's
 * error object. Invariant: the request object is owned by the job and freed by the worker. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "query/qmeta.h"
#include "storage/clock.h"
#include "tsd/conf.h"
#include "tsd/http.h"
#include "tsd/routes.h"
#include "tsd/tsd.h"

enum meta_kind {
    META_SUGGEST,
    META_LOOKUP,
    META_ASSIGN,
    META_RENAME,
    META_UIDMETA,
    META_TSMETA,
    META_ANNOTATION,
    META_BULK,
};

struct meta_job {
    enum meta_kind kind;
    enum qmeta_method m;
    cJSON *req;
};

static enum qmeta_method method_of(struct http_req *r)
{
    switch (http_req_method(r)) {
    case HTTP_POST:
        return QMETA_POST;
    case HTTP_PUT:
        return QMETA_PUT;
    case HTTP_DELETE:
        return QMETA_DELETE;
    default:
        return QMETA_GET;
    }
}

static void meta_work(struct http_req *r, void *arg)
{
    struct meta_job *job = arg;
    struct tsdb *t = tsd_tsdb(http_req_tsd(r));
    struct ct_err err = {0};
    cJSON *out = NULL;
    int status = 500, rc = CT_EINVAL;
    int64_t now = clock_now_ms();
    switch (job->kind) {
    case META_SUGGEST:
        rc = qmeta_suggest(t, job->req, &out, &status, &err);
        break;
    case META_LOOKUP:
        rc = qmeta_lookup(t, tsd_head(http_req_tsd(r)), job->req, now, &out, &status, &err);
        break;
    case META_ASSIGN:
        rc = qmeta_uid_assign(t, job->req, &out, &status, &err);
        break;
    case META_RENAME:
        rc = qmeta_uid_rename(t, job->req, &out, &status, &err);
        /* the ingest writers cache series by name: drop them, so that a put under the old name
         * resolves it again (a new UID, as in OpenTSDB) instead of reaching the renamed UID */
        if (rc == CT_OK && status == 200)
            tsd_drop_caches(http_req_tsd(r));
        break;
    case META_UIDMETA:
        rc = qmeta_uidmeta(t, job->m, job->req, now, &out, &status, &err);
        break;
    case META_TSMETA:
        rc = qmeta_tsmeta(t, job->m, job->req, &out, &status, &err);
        break;
    case META_ANNOTATION:
        rc = qmeta_annotation(t, job->m, job->req, &out, &status, &err);
        break;
    case META_BULK:
        rc = qmeta_annotation_bulk(t, job->m, job->req, now, &out, &status, &err);
        break;
    }
    if (rc != CT_OK)
        http_reply_error(r, http_status_of(rc, status), err.msg,
                         cJSON_IsString(out) ? out->valuestring : NULL);
    else if (out)
        http_reply_cjson(r, status, out);
    else
        http_reply_status(r, status);
    if (rc != CT_OK)
        cJSON_Delete(out);
    cJSON_Delete(job->req);
    free(job);
}

/* Builds the request from the body when there is one (and the method takes one), else from the
 * named query parameters (as strings; `list` names are split on ',' into arrays). */
static cJSON *build_request(struct http_req *r, const char *const *names, const char *const *list,
                            bool *bad_json)
{
    size_t len = 0;
    const char *body = http_req_body(r, &len);
    *bad_json = false;
    if (http_req_method(r) != HTTP_GET && len > 0) {
        cJSON *doc = cJSON_ParseWithLength(body, len);
        if (!doc)
            *bad_json = true;
        return doc;
    }
    cJSON *o = cJSON_CreateObject();
    for (size_t i = 0; o && names && names[i]; i++) {
        const char *v = http_req_param(r, names[i]);
        if (v)
            cJSON_AddStringToObject(o, names[i], v);
    }
    for (size_t i = 0; o && list && list[i]; i++) {
        const char *v = http_req_param(r, list[i]);
        if (!v)
            continue;
        cJSON *a = cJSON_AddArrayToObject(o, list[i]);
        const char *p = v;
        while (a && p && *p) {
            const char *c = strchr(p, ',');
            size_t l = c ? (size_t)(c - p) : strlen(p);
            char *s = strndup(p, l);
            if (s && l)
                cJSON_AddItemToArray(a, cJSON_CreateString(s));
            free(s);
            p = c ? c + 1 : NULL;
        }
    }
    return o;
}

static void run(struct http_req *r, enum meta_kind kind, const char *const *names,
                const char *const *list)
{
    /* tsd.mode=ro: no UID assignment, no annotation or meta writes (as the put endpoint) */
    bool writes = kind == META_ASSIGN || kind == META_RENAME || kind == META_BULK ||
                  ((kind == META_ANNOTATION || kind == META_UIDMETA || kind == META_TSMETA) &&
                   method_of(r) != QMETA_GET);
    if (writes && !strcmp(conf_get_str(tsd_conf(http_req_tsd(r)), "tsd.mode"), "ro")) {
        http_reply_error(r, 404, "Endpoint not found",
                         "the TSD is in read-only mode (tsd.mode=ro)");
        return;
    }
    bool bad = false;
    cJSON *req = build_request(r, names, list, &bad);
    if (!req) {
        if (bad)
            http_reply_error(r, 400, "Unable to parse the given JSON", NULL);
        else
            http_reply_error(r, 500, "out of memory", NULL);
        return;
    }
    if (kind == META_TSMETA && cJSON_IsObject(req)) {
        /* a TSMeta body still takes m= and create= from the query string (UniqueIdRpc) */
        static const char *const url_only[] = {"m", "create"};
        for (size_t i = 0; i < 2; i++) {
            const char *v = http_req_param(r, url_only[i]);
            cJSON_DeleteItemFromObjectCaseSensitive(req, url_only[i]);
            if (v && !cJSON_AddStringToObject(req, url_only[i], v)) {
                cJSON_Delete(req);
                http_reply_error(r, 500, "out of memory", NULL);
                return;
            }
        }
    }
    struct meta_job *job = malloc(sizeof(*job));
    if (!job) {
        cJSON_Delete(req);
        http_reply_error(r, 500, "out of memory", NULL);
        return;
    }
    job->kind = kind;
    job->m = method_of(r);
    job->req = req;
    struct ct_err err = {0};
    if (http_req_defer(r, meta_work, job, &err) != CT_OK) {
        cJSON_Delete(req);
        free(job);
        http_reply_error(r, 503, "The TSD is overloaded; retry later", err.msg);
    }
}

/* A POST with no body and none of names in the URL: HttpJsonSerializer's parse*V1 400 (the
 * URL form of a POST is ctsdb's addition, so it only answers when the URL names nothing). */
static bool post_without_content(struct http_req *r, const char *const *names)
{
    size_t len = 0;
    http_req_body(r, &len);
    if (http_req_method(r) != HTTP_POST || len > 0)
        return false;
    for (size_t i = 0; names[i]; i++)
        if (http_req_param(r, names[i]))
            return false;
    http_reply_error(r, 400, "Missing message content",
                     "Supply valid JSON formatted data in the body of your request");
    return true;
}

void api_suggest_handle(struct http_req *r)
{
    static const char *const names[] = {"type", "q", "max", NULL};
    if (post_without_content(r, names))
        return;
    size_t len = 0;
    http_req_body(r, &len);
    const char *type = http_req_param(r, "type");
    if ((http_req_method(r) == HTTP_GET || len == 0) && (!type || !*type)) {
        /* the URL form reads type with getRequiredQueryStringParam (SuggestRpc) */
        http_reply_error(r, 400, "Missing parameter <code>type</code>", NULL);
        return;
    }
    run(r, META_SUGGEST, names, NULL);
}

void api_search_lookup_handle(struct http_req *r)
{
    static const char *const names[] = {"m", "limit", "use_meta", NULL};
    enum http_method m = http_req_method(r);
    if (m != HTTP_GET && m != HTTP_POST) { /* SearchRpc's wording, before anything else */
        http_reply_error(r, 400, m == HTTP_PUT ? "Unsupported method: PUT" : "Unsupported method: DELETE",
                         NULL);
        return;
    }
    size_t len = 0;
    http_req_body(r, &len);
    /* SearchRpc reads the URL when there is no body, and m is required there */
    if (len == 0 && http_req_param(r, "m") == NULL) {
        http_reply_error(r, 400, "Missing parameter <code>m</code>", NULL);
        return;
    }
    run(r, META_LOOKUP, names, NULL);
}

/* The search types other than lookup need a search plugin, which ctsdb does not have: the
 * request is checked as SearchRpc checks it (method, type, query, limit, start_index) and then
 * answered as OpenTSDB without a plugin answers it (400 "Searching is not enabled"). */
void api_search_other_handle(struct http_req *r)
{
    enum http_method m = http_req_method(r);
    if (m != HTTP_GET && m != HTTP_POST) {
        http_reply_error(r, 400, m == HTTP_PUT ? "Unsupported method: PUT" : "Unsupported method: DELETE",
                         NULL);
        return;
    }
    const char *path = http_req_path(r);
    const char *type = strncmp(path, "/api/search/", 12) == 0 ? path + 12 : "";
    if (strcasecmp(type, "lookup") == 0) { /* SearchQuery.parseSearchType ignores case */
        api_search_lookup_handle(r);
        return;
    }
    static const char *const types[] = {"tsmeta", "tsmeta_summary", "tsuids", "uidmeta",
                                        "annotation"};
    bool known = false;
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        known |= strcasecmp(type, types[i]) == 0;
    if (!known) {
        char details[160];
        if (*type)
            snprintf(details, sizeof(details), "Unknown type: %.120s", type);
        else
            snprintf(details, sizeof(details), "Type provided was null or empty");
        http_reply_error(r, 400, "Invalid search query type supplied", details);
        return;
    }
    size_t len = 0;
    http_req_body(r, &len);
    if (len == 0) {
        if (http_req_param(r, "query") == NULL) {
            http_reply_error(r, 400, "Missing parameter <code>query</code>", NULL);
            return;
        }
        static const char *const nums[] = {"limit", "start_index"};
        for (size_t i = 0; i < 2; i++) {
            const char *v = http_req_param(r, nums[i]);
            char *end = NULL;
            if (v && (strtol(v, &end, 10), *v == '\0' || *end != '\0')) {
                char msg[80];
                snprintf(msg, sizeof(msg), "Unable to convert '%s' to a valid number", nums[i]);
                http_reply_error(r, 400, msg, NULL);
                return;
            }
        }
    }
    http_reply_error(r, 400, "Searching is not enabled", "Searching has not been enabled on this TSD");
}

void api_uid_assign_handle(struct http_req *r)
{
    static const char *const list[] = {"metric", "tagk", "tagv", NULL};
    run(r, META_ASSIGN, NULL, list);
}

void api_uid_rename_handle(struct http_req *r)
{
    static const char *const names[] = {"metric", "tagk", "tagv", "name", NULL};
    if (post_without_content(r, names))
        return;
    run(r, META_RENAME, names, NULL);
}

/* /api/uid and any other /api/uid/<x>: UniqueIdRpc dispatches on the path's first part after
 * "uid", in any case, whatever follows it (/api/uid/ASSIGN, /api/uid/assign/more are assign);
 * anything else is 501. */
void api_uid_other_handle(struct http_req *r)
{
    static const struct {
        const char *name;
        bool any_method; /* uidmeta, tsmeta: GET POST PUT DELETE; assign, rename: GET POST */
        void (*fn)(struct http_req *r);
    } parts[] = {
        {"assign", false, api_uid_assign_handle},
        {"rename", false, api_uid_rename_handle},
        {"uidmeta", true, api_uid_uidmeta_handle},
        {"tsmeta", true, api_uid_tsmeta_handle},
    };
    const char *path = http_req_path(r);
    const char *seg = strncmp(path, "/api/uid/", 9) == 0 ? path + 9 : "";
    size_t len = strcspn(seg, "/");
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        if (len != strlen(parts[i].name) || strncasecmp(seg, parts[i].name, len) != 0)
            continue;
        enum http_method m = http_req_method(r);
        if (!parts[i].any_method && m != HTTP_GET && m != HTTP_POST) {
            char details[96];
            snprintf(details, sizeof(details),
                     "The HTTP method [%s] is not permitted for this endpoint",
                     m == HTTP_PUT ? "PUT" : "DELETE");
            http_reply_error(r, 405, "Method not allowed", details);
            return;
        }
        parts[i].fn(r);
        return;
    }
    http_reply_error(r, 501, "Other UID endpoints have not been implemented yet", NULL);
}

void api_uid_uidmeta_handle(struct http_req *r)
{
    static const char *const names[] = {"uid",   "type",         "description", "displayName",
                                        "notes", "display_name", NULL};
    run(r, META_UIDMETA, names, NULL);
}

void api_uid_tsmeta_handle(struct http_req *r)
{
    static const char *const names[] = {"tsuid",       "m",     "create", "display_name",
                                        "description", "notes", "units",  "data_type",
                                        "retention",   "max",   "min",    NULL};
    run(r, META_TSMETA, names, NULL);
}

void api_annotation_handle(struct http_req *r)
{
    static const char *const names[] = {"tsuid",   "start_time",  "startTime", "end_time",
                                        "endTime", "description", "notes",     NULL};
    run(r, META_ANNOTATION, names, NULL);
}

void api_annotation_bulk_handle(struct http_req *r)
{
    /* a bulk delete may come in the query string (AnnotationRpc.parseBulkDeleteQS) */
    static const char *const names[] = {"start_time", "end_time", "global", NULL};
    static const char *const list[] = {"tsuids", NULL};
    run(r, META_BULK, names, list);
}

void api_config_filters_handle(struct http_req *r)
{
    http_reply_cjson(r, 200, qmeta_filters_doc());
}
