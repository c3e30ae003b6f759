/* qmeta.h - the metadata endpoints' logic, independent of HTTP: /api/suggest,
 * /api/search/lookup, /api/uid/assign, /api/uid/uidmeta, /api/uid/tsmeta, /api/annotation(s)
 * (single and bulk), /api/uid/rename, /api/aggregators and /api/config/filters, with OpenTSDB 2.4's request
 * fields, reply shapes and error messages. Each function takes the request as a cJSON object
 * (the tsd handler builds it from the query string or parses the body), and returns the reply
 * document plus the HTTP status; on a 4xx/5xx the reply is OpenTSDB's error text in err.
 *
 * Threading: functions that touch the store block; call them from a worker. */
#ifndef CT_QMETA_H
#define CT_QMETA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "schema/tsdb.h"
#include "storage/ct_err.h"

struct cJSON;
struct head;

/* Request methods (the same bits as tsd/http.h, restated so query/ does not include tsd/). */
enum qmeta_method {
    QMETA_GET = 1,
    QMETA_POST = 2,
    QMETA_PUT = 4,
    QMETA_DELETE = 8,
};

/* Every call: on success returns CT_OK with *out a new document (cJSON_Delete) or NULL for an
 * empty reply, and *status the HTTP status (200, 204). On failure returns an error code, *status
 * 400/404/500/501 and err holds the message; *out is then NULL, or a cJSON string holding the
 * error's details (OpenTSDB's "details" field). */

/* {"type":"metrics|tagk|tagv","q":"prefix","max":25} -> sorted array of names. */
CT_MUST_CHECK int qmeta_suggest(struct tsdb *t, const struct cJSON *req, struct cJSON **out,
                                int *status, struct ct_err *err);
/* {"metric":"m or *","tags":[{"key":"host","value":"*"}],"limit":25,"useMeta":false}, or
 * {"m":"metric{k=v}","limit":..} from the GET form -> the LOOKUP reply. Without useMeta the
 * series are those of the data rows and of head (the ingest head, schema/head.h; NULL: none),
 * whose series may have no stored row yet. */
CT_MUST_CHECK int qmeta_lookup(struct tsdb *t, struct head *head, const struct cJSON *req,
                               int64_t now_ms, struct cJSON **out, int *status,
                               struct ct_err *err);
/* {"metric":["a"],"tagk":[..],"tagv":[..]} -> {"metric":{"a":"000001"},"metric_errors":{..}}. */
CT_MUST_CHECK int qmeta_uid_assign(struct tsdb *t, const struct cJSON *req, struct cJSON **out,
                                   int *status, struct ct_err *err);
/* /api/uid/rename: {"metric"|"tagk"|"tagv":"old","name":"new"} -> {"result":"true"}; a bad or
 * unknown name -> status 400 with {"result":"false","error":"..."} (OpenTSDB's reply, returned
 * as a document with CT_OK); no type or no new name -> 400 `Missing necessary values to rename
 * UID` (error). Renames through schema/uid.h's uid_rename(), as `ctsdb uid rename` does. */
CT_MUST_CHECK int qmeta_uid_rename(struct tsdb *t, const struct cJSON *req, struct cJSON **out,
                                   int *status, struct ct_err *err);
/* uidmeta: GET {"uid":"hex","type":"metric"}; POST/PUT with description, displayName, notes,
 * custom; DELETE. */
CT_MUST_CHECK int qmeta_uidmeta(struct tsdb *t, enum qmeta_method m, const struct cJSON *req,
                                int64_t now_ms, struct cJSON **out, int *status,
                                struct ct_err *err);
/* tsmeta: GET {"tsuid":"hex"} or {"m":"metric{k=v}"}. */
CT_MUST_CHECK int qmeta_tsmeta(struct tsdb *t, enum qmeta_method m, const struct cJSON *req,
                               struct cJSON **out, int *status, struct ct_err *err);
/* Realtime meta (tsd/metatrack.c, OpenTSDB's tsd.core.meta.* keys): stores a new UIDMeta of
 * (k, id, name) created at now_s, replacing any (UIDMeta.storeNew on assignment). */
CT_MUST_CHECK int qmeta_uidmeta_store_new(struct tsdb *t, enum uid_kind k, uint64_t id,
                                          const char *name, size_t len, int64_t now_s,
                                          struct ct_err *err);
/* Stores a blank TSMeta of ts created at now_s unless one exists (a check-and-put against
 * absence, TSMeta.storeNew); *created tells whether this call stored it. */
CT_MUST_CHECK int qmeta_tsmeta_store_new(struct tsdb *t, const uint8_t *ts, size_t tl,
                                         int64_t now_s, bool *created, struct ct_err *err);
/* /api/annotation: GET {"tsuid":..,"start_time"|"startTime":..}; POST (merge) / PUT (replace)
 * the annotation object; DELETE. */
CT_MUST_CHECK int qmeta_annotation(struct tsdb *t, enum qmeta_method m, const struct cJSON *req,
                                   struct cJSON **out, int *status, struct ct_err *err);
/* /api/annotation/bulk: POST/PUT an array of annotations; DELETE {"tsuids":[..],"startTime":..,
 * "endTime":..,"global":false}. */
CT_MUST_CHECK int qmeta_annotation_bulk(struct tsdb *t, enum qmeta_method m,
                                        const struct cJSON *req, int64_t now_ms, struct cJSON **out,
                                        int *status, struct ct_err *err);

/* {"literal_or":{"examples":..,"description":..},...} */
struct cJSON *qmeta_filters_doc(void);

/* A stored annotation (its canonical JSON) as an HTTP answer writes it (Annotation's JSON with
 * every non-null field, as OpenTSDB serialises it): a new string (free()), or NULL when the
 * stored text is not an annotation or memory is short. */
char *qmeta_annotation_api_json(const char *stored, size_t len);

#endif
