/* api_snapshot.c - /api/admin/snapshot: whole-store snapshots of a running TSD (the store is
 * locked by the daemon, so `ctsdb snapshot` cannot open it while the TSD runs).
 *   POST /api/admin/snapshot?name=N   hands the ingest head's closed hours off to the store
 *                                     (tsdstore_handoff_closed), then takes snapshot N of every
 *                                     table (wc_snapshot_create with no table): consistent while
 *                                     writes go on (writes wait for the flush, see
 *                                     storage/wc.h); 200 with its description
 *   GET  /api/admin/snapshot          lists the snapshots (name, table or "" for the whole
 *                                     store, tables, created in ms)
 * An admin action (tsd/auth.h: tsd.core.enable_admin, token, allow-list) for every method.
 * Errors: 400 bad or missing name, 409 name taken, 501 backend without snapshots (Bigtable),
 * 503 worker pool full, 500 otherwise. The work runs on a worker thread (http_req_defer), not
 * on the event loop. Restoring is offline only (`ctsdb restore` with the TSD stopped). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "storage/wc.h"
#include "tsd/http.h"
#include "tsd/routes.h"
#include "tsd/store.h"
#include "tsd/tsd_int.h"

static cJSON *api_snapshot_json(const struct wc_snapshot_info *info)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "name", info->name);
    cJSON_AddStringToObject(o, "table", info->table);
    cJSON_AddNumberToObject(o, "tables", (double)info->ntables);
    cJSON_AddNumberToObject(o, "created", (double)info->created_ms);
    return o;
}

struct api_snapshot_find {
    const char *name;
    cJSON *out; /* the listing array, or the one found */
};

static int api_snapshot_add(void *arg, const struct wc_snapshot_info *info)
{
    struct api_snapshot_find *f = arg;
    if (f->name) {
        if (strcmp(f->name, info->name) != 0)
            return 0;
        f->out = api_snapshot_json(info);
        return 1;
    }
    cJSON *o = api_snapshot_json(info);
    if (o)
        cJSON_AddItemToArray(f->out, o);
    return 0;
}

static int api_snapshot_status(int rc)
{
    switch (rc) {
    case CT_EINVAL:
        return 400;
    case CT_EEXIST:
        return 409;
    case CT_EUNSUPPORTED:
        return 501;
    default:
        return 500;
    }
}

/* Runs on a worker (http_req_defer): a snapshot flushes, so it must not hold the event loop. */
static void api_snapshot_work(struct http_req *r, void *arg)
{
    (void)arg;
    struct wc_store *s = http_req_tsd(r)->store;
    struct ct_err err = {0};
    if (http_req_method(r) == HTTP_GET) {
        struct api_snapshot_find f = {NULL, cJSON_CreateArray()};
        int rc = wc_snapshot_list(s, api_snapshot_add, &f, &err);
        if (rc != CT_OK) {
            cJSON_Delete(f.out);
            http_reply_error(r, api_snapshot_status(rc), "Unable to list snapshots", err.msg);
            return;
        }
        http_reply_cjson(r, 200, f.out);
        return;
    }
    const char *name = http_req_param(r, "name");
    if (!name || !*name) {
        http_reply_error(r, 400, "Missing parameter <code>name</code>", NULL);
        return;
    }
    /* the head's closed hours (a backfill's) go to the store first: a store snapshot holds the
     * tables, not the head or its log */
    int rc = tsdstore_handoff_closed(http_req_tsd(r)->tstore, &err);
    if (rc != CT_OK) {
        http_reply_error(r, 500, "Unable to hand the head's closed hours off", err.msg);
        return;
    }
    rc = wc_snapshot_create(s, name, NULL, &err);
    if (rc != CT_OK) {
        http_reply_error(r, api_snapshot_status(rc), "Unable to take the snapshot", err.msg);
        return;
    }
    struct api_snapshot_find f = {name, NULL};
    rc = wc_snapshot_list(s, api_snapshot_add, &f, &err);
    if (rc != CT_OK || !f.out) {
        cJSON_Delete(f.out);
        http_reply_error(r, 500, "Snapshot taken but not listed", err.msg);
        return;
    }
    http_reply_cjson(r, 200, f.out);
}

void api_admin_snapshot_handle(struct http_req *r)
{
    struct ct_err err = {0};
    if (http_req_defer(r, api_snapshot_work, NULL, &err) != CT_OK)
        http_reply_error(r, 503, "Unable to take the request", err.msg);
}
