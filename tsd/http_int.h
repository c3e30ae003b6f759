/* http_int.h - private to the HTTP server files (http.c, http_conn.c, routes.c, static.c):
 * the request and connection structs behind http.h.
 *
 * Ownership: a connection owns its current request. A request being worked on by a worker
 * holds a reference on its connection (conn->refs), so the connection outlives the work even if
 * the client goes away; the loop frees both once the work is finished (http_conn_work_done).
 * Threads: every field is touched by the loop thread only, except those marked [w] (written by
 * the worker running the request's deferred work, while the loop leaves the request alone) and
 * [mu] (guarded by conn->mu). */
#ifndef CT_TSD_HTTP_INT_H
#define CT_TSD_HTTP_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tsd/http.h"

struct bufferevent;
struct evbuffer;
struct tsd;

#define HTTP_MAX_HEADERS       100
#define HTTP_MAX_EXTRA_HEADERS 16
/* Unsent answer bytes a connection holds without charging the TSD's answer pool (t->answers):
 * a streamed answer past this is charged byte for byte, and its worker waits only when the pool
 * is full (tsd/http.c, http_stream_room). */
#define HTTP_ANSWER_FREE (1u << 20)
/* With the pool full, a worker waits for its client to read; a client that takes less than
 * HTTP_STALL_BYTES in HTTP_STALL_MS gets its answer cut (the connection closed, the worker
 * released). */
#define HTTP_STALL_MS    1000
#define HTTP_STALL_BYTES (64u << 10)

struct http_kv {
    char *name;
    char *value;
};

struct http_req {
    struct http_conn *conn;
    enum http_method method;      /* after method_override */
    enum http_method wire_method; /* as sent; 0 for an unknown verb */
    char method_name[16];
    int minor; /* HTTP/1.minor */
    bool keep_alive;
    char *head;      /* the request head, NUL-separated in place; header strings point here */
    char *path;      /* owned, decoded and normalised */
    char *query;     /* owned, as sent */
    size_t nheaders; /* in headers[], at the end */
    struct http_kv *params; /* owned array; strings in params_buf */
    size_t nparams;
    char *params_buf;
    char *body; /* owned, NUL-terminated */
    size_t body_len;
    bool pretty;
    const char *jsonp; /* param value or NULL */
    /* an error of the request's head that OpenTSDB answers without closing the connection
     * (API version, serializer, method_override): routes_dispatch() replies it */
    int early_status; /* 0: none */
    const char *early_msg;
    char early_details[128];

    /* reply [w] */
    bool replied; /* a whole reply is ready, or a stream began */
    bool streaming;
    bool stream_held; /* streamed bytes so far are in reply_body, nothing sent: a reply that
                         ends while held is sent whole (Content-Length) by the loop */
    bool stream_ended;
    bool stream_jsonp;
    int status;
    char *content_type;          /* owned */
    struct evbuffer *reply_body; /* whole replies */
    size_t nextra;               /* in extra[], at the end */
    /* monotonic ns when the request was whole (http_conn_dispatch); 0 for one never framed,
     * and once its latency is counted (http_req_answered) */
    uint64_t start_ns;
    bool sent;        /* the whole reply was written by the worker (http_work_trampoline) */
    bool send_failed; /* ... and could not be queued: close the connection */
    bool on_worker;   /* deferred work is running on a worker */
    bool deferred;
    http_work_fn work;
    void *work_arg;
    struct http_req *done_next; /* completion queue link (tsd's done list) */
    /* the arrays last: http_req_new zeroes only what is before them (~1.9 KiB less to write
     * per request); entries past nheaders / nextra are garbage */
    struct http_kv headers[HTTP_MAX_HEADERS];
    struct http_kv extra[HTTP_MAX_EXTRA_HEADERS];
};

struct http_conn {
    struct tsd *tsd;
    struct bufferevent *bev;
    char peer[64];
    int state;
    struct http_req *req; /* the request being read or answered */
    size_t body_need;     /* bytes of body (Content-Length) or of the current chunk */
    struct evbuffer *body;
    bool chunked;
    bool expect_continue;
    bool close_after; /* close once the output is flushed */
    bool out_full;    /* reading paused until the client reads its answers */
    bool closed;      /* the socket is gone or being closed */
    bool read_eof;    /* the client half-closed: what it sent is answered, then c closes */
    int refs;         /* 1 for the loop while open + 1 while a worker has the request */
    uint64_t id;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t drain_gen;            /* [mu] bumped each time the output drains below the low mark */
    uint64_t answer_charged;       /* [mu] bytes charged to t->answers for this connection's
                                      output (taken and given back under the bufferevent lock
                                      too, which is taken first) */
    bool answer_cut;               /* [mu] a streamed answer was cut: close, dropping output */
    bool gone;                     /* [mu] client closed or errored */
    struct http_req *spare;        /* [loop] the last finished request, kept for the next one (its
                               struct and reply buffer: http_req_recycle) */
    struct http_req *parked;       /* [mu] finished by its worker, which wrote the whole reply and
                                      left the rest to the loop's next callback for this
                                      connection instead of waking the loop (http_conn_park) */
    struct http_conn *next, *prev; /* the tsd's list of open HTTP connections */
};

/* Starts serving HTTP on an accepted socket whose first byte says HTTP. Takes fd. */
int http_conn_start(struct tsd *t, int fd, const char *peer, struct ct_err *err);
/* Runs on the loop when a worker finished r's deferred work: sends the reply or ends the
 * stream, then moves the connection on (next pipelined request, close, or free). */
void http_conn_work_done(struct http_req *r);
/* r's whole answer has been handed to the connection: counts its latency (tstats.h) once. Called
 * by whichever thread has r (the loop, or the worker running its deferred work). */
void http_req_answered(struct http_req *r);
/* Sends r's whole reply (status line, headers, body) on the loop thread. */
void http_conn_send_reply(struct http_req *r);
/* The TSD's pool of held answer bytes (tsd.http.query.answer_buffer_bytes) c charges. */
struct membudget_pool *http_conn_answers(struct http_conn *c);
/* Closes every idle HTTP connection and marks busy ones to close when done (shutdown). */
void http_conn_close_all(struct tsd *t);
/* Frees every HTTP connection at once (after the loop and the workers ended). */
void http_conn_free_all(struct tsd *t);

/* http.c helpers used by http_conn.c (and tested directly) */
/* Percent-decodes s in place ('+' -> ' ' when plus); false if it decodes to a NUL. */
bool http_decode(char *s, bool plus);
/* Splits r->query into decoded parameters (r->params); -1 when out of memory. */
int http_parse_query(struct http_req *r);
/* True if s is a safe jsonp callback name (letters, digits, '_', '.', '$'; <= 128 bytes). */
bool http_jsonp_ok(const char *s);
/* Normalises a decoded path in place as OpenTSDB routes it: one trailing slash removed; under
 * /api (any case) the version segment vN dropped and "/api" and the endpoint's name after it
 * lower-cased (/API/V1/Put/x -> /api/put/x). Returns 0, or the status OpenTSDB answers for a
 * version it refuses, with msg and details (a buffer of details_size bytes) set: 400 for one
 * that is not a number (/api/v1a/put), 501 for one above 1 (/api/v2/put). */
int http_normalise_path(char *p, const char **msg, char *details, size_t details_size);
/* Splits a header line (no CR/LF) in place into kv (name and value, the value without
 * surrounding whitespace). Returns 0, or 400 with msg set for a folded line (obs-fold), no
 * colon, an empty or invalid name, whitespace before the colon (RFC 9112 section 5.1) or a CR
 * in the value. */
int http_header_split(char *line, struct http_kv *kv, const char **msg);
struct http_framing_limits {
    bool enable_chunked; /* tsd.http.request.enable_chunked */
    uint64_t max_body;   /* tsd.http.request.max_body */
};
/* How r's body is framed (RFC 9112 section 6): chunked, or *length bytes (0: none). Returns 0,
 * or a status with msg set: 400 for an invalid or conflicting Content-Length (repeated
 * identical values, also as a comma list, are one), Content-Length with Transfer-Encoding,
 * Transfer-Encoding in HTTP/1.0, chunked not the final coding or applied twice, chunked
 * requests disabled; 501 for another transfer coding before chunked; 413 for a length over
 * lim->max_body. Every error must close the connection: the body's end is unknown. */
int http_body_framing(const struct http_req *r, const struct http_framing_limits *lim,
                      bool *chunked, uint64_t *length, const char **msg);
void http_req_free(struct http_req *r);
/* Appends the headers common to every reply (Connection, CORS, extras) to out. */
void http_req_write_common_headers(struct http_req *r, struct evbuffer *out);

#endif
