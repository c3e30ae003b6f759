/* http.h - the HTTP side of the TSD as route handlers see it: one request, its decoded parts,
 * and the ways to answer it (whole JSON replies, OpenTSDB error objects, empty replies, streamed
 * chunked replies), plus running slow work off the event loop.
 *
 * Lifecycle: the server parses a request (HTTP/1.0 and 1.1, keep-alive, pipelining: requests of
 * one connection are answered strictly in order), decodes the body (chunked framing,
 * Content-Encoding gzip/deflate), normalises the path and calls the route's handler on the
 * event-loop thread (routes.h). The handler must do exactly one of:
 *   - reply now: http_reply_json / _cjson / _error / _status / _raw, or
 *     http_stream_begin ... http_stream_end;
 *   - call http_req_defer(): the work function runs on a worker thread and replies there
 *     (same functions); the server finishes the request when it returns, or, if the work
 *     suspended it (http_req_suspend), when another thread replies and calls http_req_resume.
 * A handler that returns without replying or deferring gets a 500 "handler did not reply".
 * The request, its strings and its body are valid until the reply is complete (the handler or
 * work function returned and the reply was handed to the connection); never keep pointers
 * after that.
 *
 * Reply functions may be called from the loop thread (inside the handler) or from the worker
 * thread running the deferred work of that request, or for a suspended request
 * (http_req_suspend) from the thread that resumes it, never from anywhere else. Whole replies
 * (json, error, status, raw) are buffered and sent after the handler/work returns. Streamed
 * replies go to the socket as they are written; a worker's http_stream_write() does not wait for
 * a slow client while the TSD's answer pool (tsd.http.query.answer_buffer_bytes) has room, waits
 * only for a client that reads when it is full, and returns CT_ECLOSED once the client has gone
 * or its answer was cut (a stalled client with the pool full), so the work can stop early.
 *
 * JSON replies honour `?pretty` (reformatted) and `?jsonp=fn` (wrapped as `fn(...)`), and
 * carry `Content-Type: application/json; charset=UTF-8`. CORS headers are added by the server
 * per tsd.http.request.cors_domains. */
#ifndef CT_TSD_HTTP_H
#define CT_TSD_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "storage/ct_err.h"

struct cJSON;

struct http_req; /* opaque: defined in http_int.h */

/* Request methods, usable as a bit mask (routes.h). */
enum http_method {
    HTTP_GET = 1,
    HTTP_POST = 2,
    HTTP_PUT = 4,
    HTTP_DELETE = 8,
    HTTP_OPTIONS = 16,
    HTTP_HEAD = 32,
};

/* The method after `method_override=get|post|put|delete` is applied (OpenTSDB lets a GET
 * emulate other verbs). */
enum http_method http_req_method(const struct http_req *r);
/* "GET", "POST", ... of the method as sent on the wire. */
const char *http_req_method_name(const struct http_req *r);
/* The percent-decoded path without the query string, normalised: `/api/v1/x` -> `/api/x`, one
 * trailing slash removed (except for "/"). E.g. "/api/query/last". */
const char *http_req_path(const struct http_req *r);

/* Query parameters, decoded ('+' is a space, %XX escapes). A parameter given without '=' (a
 * presence-only flag such as `?details`) has the value "". Returns the first value, or NULL if
 * the parameter is absent. */
const char *http_req_param(const struct http_req *r, const char *name);
/* How many times the parameter occurs, and its i-th value (0-based; NULL past the end), for
 * repeated parameters such as `m=` or `tsuid=`. */
size_t http_req_param_count(const struct http_req *r, const char *name);
const char *http_req_param_at(const struct http_req *r, const char *name, size_t i);
/* True if the flag is present and not "false"/"0"/"no" (`?details`, `?details=true`). */
bool http_req_flag(const struct http_req *r, const char *name);
/* A request header (case-insensitive name), or NULL. */
const char *http_req_header(const struct http_req *r, const char *name);
/* The body after transfer and content decoding, NUL-terminated (the NUL is not counted in
 * *len); "" with *len 0 when there is none. len may be NULL. */
const char *http_req_body(const struct http_req *r, size_t *len);
/* The peer as "ip:port" (for logs). */
const char *http_req_peer(const struct http_req *r);

/* ---- whole replies ---------------------------------------------------------------------- */

/* Sends `json` (len bytes; copied) with the status. Honours pretty and jsonp. */
void http_reply_json(struct http_req *r, int status, const char *json, size_t len);
/* Serialises doc (compact, or formatted with ?pretty) and sends it; takes doc (frees it, also
 * when NULL is passed, which replies 500 "out of memory"). */
void http_reply_cjson(struct http_req *r, int status, struct cJSON *doc);
/* Sends OpenTSDB's error object {"error":{"code":status,"message":..,"details":..}} with the
 * status; details NULL or "" is left out, except after a message OpenTSDB always details the
 * same way ("Missing message content" gets "Supply valid JSON formatted data in the body of your
 * request", as every HttpJsonSerializer.parse*V1). No "trace": OpenTSDB's is a Java stack trace
 * (tsd.http.show_stack_trace, not supported). Strings are copied. */
void http_reply_error(struct http_req *r, int status, const char *message, const char *details);
/* The one mapping of a failure's ct code to an HTTP status, for every endpoint: CT_EUNAVAIL (a
 * remote backend unavailable or past the request's deadline) -> 503; else `status`, the
 * endpoint's own choice (a missing table is CT_EIO with "table ... missing": 500). */
int http_status_of(int rc, int status);
/* An empty reply with the status (e.g. 204, or 200 for an OPTIONS preflight). */
void http_reply_status(struct http_req *r, int status);
/* Any body with its content type; body copied. */
void http_reply_raw(struct http_req *r, int status, const char *content_type, const void *body,
                    size_t len);
/* Adds a response header to the reply being built (before the reply function is called, or
 * before http_stream_begin). Copied. At most 16 extra headers. */
void http_reply_header(struct http_req *r, const char *name, const char *value);

/* ---- streamed replies (chunked transfer encoding; close-delimited for HTTP/1.0; a reply
 *      of at most 256 KiB is sent whole with Content-Length instead) ---------------------- */

/* Starts a streamed reply with the status and content type (NULL = JSON). When jsonp is asked
 * for and the type is JSON, the `fn(` prefix is written here and the `)` by http_stream_end;
 * pretty is not applied to streamed replies. */
void http_stream_begin(struct http_req *r, int status, const char *content_type);
/* Appends bytes (copied). Returns CT_OK, or CT_ECLOSED if the client went away (stop writing;
 * still call http_stream_end). From a worker it waits only when the answer pool is full and the
 * client is reading (docs/tsd.md, "Slow readers"). */
CT_MUST_CHECK int http_stream_write(struct http_req *r, const void *data, size_t len);
CT_MUST_CHECK int http_stream_printf(struct http_req *r, const char *fmt, ...) CT_PRINTF(2, 3);
/* Ends the streamed reply. */
void http_stream_end(struct http_req *r);
/* A streamed reply is held by the server until it passes 256 KiB (one that ends before is sent
 * whole, with Content-Length). While nothing was sent, this drops it and lets the request be
 * answered again (e.g. with an error status) and returns true; false once bytes went out. */
bool http_stream_retract(struct http_req *r);
/* A streamed 200 begun at its first write: a sink for query/qjson.h's writer (its arg is a
 * struct http_stream_sink), so that an answer that fails before any byte can still get an
 * error status. */
struct http_stream_sink {
    struct http_req *r;
    bool begun;
};
int http_stream_sink_write(void *arg, const char *data, size_t len);

/* ---- work off the event loop ------------------------------------------------------------ */

/* Runs work(r, arg) on the TSD's worker pool (tsd.query.threads threads; 0 = number of CPUs)
 * and completes the request when it returns. work must reply (above). Call from the handler,
 * at most once, and then return without replying. Returns CT_OK, or an error if the pool
 * cannot take it (the handler should then reply 503 itself). `arg` is borrowed until work
 * returns; free it inside work. */
typedef void (*http_work_fn)(struct http_req *r, void *arg);
/* As http_req_defer, on the ingest workers: for writes whose work waits until their points are
 * in the write-ahead log (more of these threads than CPUs, so that waiting requests do not keep
 * others from the writer). */
CT_MUST_CHECK int http_req_defer_ingest(struct http_req *r, http_work_fn work, void *arg,
                                        struct ct_err *err);
CT_MUST_CHECK int http_req_defer(struct http_req *r, http_work_fn work, void *arg,
                                 struct ct_err *err);
/* Called by deferred work on its worker: the work returns without a reply, and the request is
 * answered later by whichever thread holds it then (e.g. the ingest writer that wrote its last
 * points, in its done callback): that thread sets the reply (the reply functions above, whole
 * replies only) and calls http_req_resume(r), which sends it and completes the request as the
 * worker would have: no wake-up of a waiting worker on the answer's path. Between the two, r
 * belongs to the code that suspended it, which hands it on with a happens-before (a mutex);
 * exactly one http_req_resume follows, possibly on the worker itself before the work returns.
 * After it, r is gone. */
void http_req_suspend(struct http_req *r);
void http_req_resume(struct http_req *r);

/* The reason phrase for a status ("Not Found"). */
const char *http_status_text(int status);

#endif
