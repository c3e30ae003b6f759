/* http_conn.c - HTTP/1.x framing on a libevent bufferevent: request heads, Content-Length and
 * chunked bodies, Expect: 100-continue, keep-alive and pipelining, Content-Encoding
 * gzip/deflate, handing each complete request to routes_dispatch(), and gzip-compressed whole
 * replies (text and JSON of 1 KiB or more) for clients that send Accept-Encoding: gzip.
 *
 * (libevent's evhttp cannot be handed a socket that was already accepted and sniffed, so the
 * framing lives here; query strings and URIs are decoded with evhttp's public helpers.)
 *
 * Invariants: (1) one request per connection is in flight: while it is (state HC_BUSY) further
 * input stays in the bufferevent, bounded by its read watermark, so pipelined requests are
 * answered strictly in order; (2) a body never exceeds tsd.http.request.max_body (Content-Length,
 * and after content decoding) or tsd.http.request.max_chunk (chunked); past either the client
 * gets 413 and the connection is closed, since the rest of its stream cannot be framed; (3) the
 * connection is freed only when refs drops to 0: the loop holds 1 while it is open, a worker 1
 * while it runs the request's deferred work; (4) while more than http_out_high bytes of answers
 * are unsent, no further request is read (the write callback resumes); (5) the thread that
 * completes deferred work (its worker, or for a suspended request the thread that resumes it:
 * http_req_suspend) and wrote a whole reply finishes the request without waking the loop when
 * the loop is sure to come back to the connection anyway: it keeps reading (EV_READ enabled, keep-alive) and nothing is
 * waiting in its input, so the next request, the client's close or a timeout brings a callback,
 * and every callback (and shutdown) first finishes the parked request (http_conn_unpark). The
 * check and the parking happen under the bufferevent's lock, under which libevent also fills
 * the input, so input that arrives after the check brings its read callback after the parking
 * (the reply is written under the same hold of that lock, so the client's next request cannot be
 * read between the write and the check);
 * (6) a request's latency (tstats.h) is counted once, from http_conn_dispatch (head and body
 * framed, before decoding) to its whole answer handed to the bufferevent or socket: in
 * http_reply_write (loop or worker), or at the end of a streamed answer (http_stream_end).
 * Answers never handed over (client gone, framing errors before a request was whole) are not
 * counted; (7) framing follows RFC 9112 (http_header_split, http_body_framing): any framing
 * error is answered and closes the connection, so bytes after it are never a request;
 * (8) a client's half-close (EOF) stops reading, but every whole request already received is
 * answered in order before the connection closes (http_conn_at_eof); (9) a connection whose
 * unsent output does not move for tsd.http.response.write_timeout is closed (libevent's write
 * timeout), and what it charged to the answer pool (tsd/http.c) is given back as its output
 * drains (http_conn_answer_release) or when it is freed; a connection whose answer was cut
 * (answer_cut) is closed without sending the rest.
 * Locking: HTTP bufferevents are thread-safe with unlocked deferred callbacks, so a worker may
 * stream a reply; conn->mu guards gone, drain_gen, answer_charged and answer_cut only, and is
 * never held across a bufferevent call; where both are held, the bufferevent's lock is taken
 * first (http_conn_park, http_conn_answer_release, tsd/http.c http_stream_room_put). */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <zlib.h>

#include "storage/clock.h"
#include "storage/wc.h"
#include "tsd/conf.h"
#include "tsd/http_int.h"
#include "tsd/membudget.h"
#include "tsd/routes.h"
#include "tsd/store.h"
#include "tsd/tlog.h"
#include "tsd/tsd_int.h"
#include "tsd/tstats.h"
#include "tsd/workpool.h"

enum http_conn_state {
    HC_HEAD = 0,
    HC_BODY,
    HC_CHUNK_SIZE,
    HC_CHUNK_DATA,
    HC_CHUNK_CRLF,
    HC_TRAILER,
    HC_BUSY,
    HC_CLOSING,
};

/* Input past c->tsd->http_read_high is not read; no new request is started while more than
 * c->tsd->http_out_high is unsent (tsd/membudget.h: TSD_HTTP_*, smaller under a memory limit). */
#define HTTP_WRITE_LOW (256u << 10)

static void http_conn_process(struct http_conn *c);
static void http_conn_at_eof(struct http_conn *c);
static void http_conn_free(struct http_conn *c);
static bool http_conn_unpark(struct http_conn *c);

/* ---- small helpers ------------------------------------------------------------------------ */

static char *http_trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

static bool http_has_token(const char *list, const char *token)
{
    size_t tl = strlen(token);
    const char *p = list;
    while (p && *p) {
        while (*p == ' ' || *p == ',' || *p == '\t')
            p++;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *te = e;
        while (te > p && (te[-1] == ' ' || te[-1] == '\t'))
            te--;
        if ((size_t)(te - p) == tl && !strncasecmp(p, token, tl))
            return true;
        p = *e ? e + 1 : e;
    }
    return false;
}

/* Frees what r owns but its struct and reply buffer. */
static void http_req_release(struct http_req *r)
{
    free(r->head);
    free(r->path);
    free(r->query);
    free(r->params);
    free(r->params_buf);
    free(r->body);
    free(r->content_type);
    for (size_t i = 0; i < r->nextra; i++) {
        free(r->extra[i].name);
        free(r->extra[i].value);
    }
}

void http_req_free(struct http_req *r)
{
    if (!r)
        return;
    http_req_release(r);
    if (r->reply_body)
        evbuffer_free(r->reply_body);
    free(r);
}

/* Ends c's finished request r: its struct (2 KiB with the header arrays) and its emptied reply
 * buffer stay with the connection for its next request (a malloc and libevent's buffer
 * allocation less per request on a keep-alive connection), unless one is kept already. Loop
 * thread. */
static void http_req_recycle(struct http_conn *c, struct http_req *r)
{
    if (c->spare) {
        http_req_free(r);
        return;
    }
    http_req_release(r);
    struct evbuffer *body = r->reply_body;
    memset(r, 0, offsetof(struct http_req, headers)); /* nothing owned: free it as it is */
    r->reply_body = body;
    evbuffer_drain(body, evbuffer_get_length(body));
    c->spare = r;
}

static struct http_req *http_req_new(struct http_conn *c)
{
    struct http_req *r = c->spare;
    struct evbuffer *body = NULL;
    if (r) { /* http_req_recycle's: cleared, its reply buffer empty */
        c->spare = NULL;
        body = r->reply_body;
    } else if ((r = malloc(sizeof(*r))) == NULL) {
        return NULL;
    }
    memset(r, 0, offsetof(struct http_req, headers)); /* the arrays need none (http_int.h) */
    r->conn = c;
    r->reply_body = body ? body : evbuffer_new();
    if (!r->reply_body) {
        free(r);
        return NULL;
    }
    r->minor = 1;
    r->keep_alive = false;
    strcpy(r->method_name, "?");
    return r;
}

/* ---- replies ------------------------------------------------------------------------------- */

/* The Date header's value for now, formatted once a second per thread (strftime and gmtime_r
 * cost ~1,200 instructions, a tenth of a small request's whole path). */
static const char *http_date_now(void)
{
    static _Thread_local time_t at = -1;
    static _Thread_local char date[40];
    time_t now = time(NULL);
    if (now != at) {
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
        at = now;
    }
    return date;
}

/* Appends s to out. */
static void http_add_str(struct evbuffer *out, const char *s)
{
    evbuffer_add(out, s, strlen(s));
}

/* Appends v in decimal to out. */
static void http_add_u64(struct evbuffer *out, uint64_t v)
{
    char d[20];
    size_t n = sizeof(d);
    do
        d[--n] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    evbuffer_add(out, d + n, sizeof(d) - n);
}

/* The headers are appended piece by piece: the printf family cost ~1,700 instructions a call
 * and a few hundred lines of code to bring into the cache for every answer. */
void http_req_write_common_headers(struct http_req *r, struct evbuffer *out)
{
    bool keep = r->keep_alive && !r->conn->close_after;
    evbuffer_add(out, "Date: ", 6);
    http_add_str(out, http_date_now());
    http_add_str(out, keep ? "\r\nConnection: keep-alive\r\n" : "\r\nConnection: close\r\n");
    for (size_t i = 0; i < r->nextra; i++) {
        http_add_str(out, r->extra[i].name);
        evbuffer_add(out, ": ", 2);
        http_add_str(out, r->extra[i].value);
        evbuffer_add(out, "\r\n", 2);
    }
}

static void http_count_status(int status)
{
    if (status >= 500)
        tstats_add(TSTATS_HTTP_5XX, 1);
    else if (status >= 400)
        tstats_add(TSTATS_HTTP_4XX, 1);
}

/* Compresses body into out as gzip; false if zlib fails (the body is then sent as is). */
static bool http_gzip(struct evbuffer *body, struct evbuffer *out)
{
    size_t n = evbuffer_get_length(body);
    unsigned char *in = evbuffer_pullup(body, -1);
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return false;
    size_t cap = deflateBound(&zs, (uLong)n);
    struct evbuffer_iovec v;
    if (evbuffer_reserve_space(out, (ev_ssize_t)cap, &v, 1) != 1) {
        deflateEnd(&zs);
        return false;
    }
    zs.next_in = in;
    zs.avail_in = (uInt)n;
    zs.next_out = v.iov_base;
    zs.avail_out = (uInt)cap;
    int zrc = deflate(&zs, Z_FINISH);
    v.iov_len = cap - zs.avail_out;
    deflateEnd(&zs);
    if (zrc != Z_STREAM_END)
        return false;
    return evbuffer_commit_space(out, &v, 1) == 0;
}

/* True if the reply should be gzipped: the client accepts it, the body is worth it and is text. */
static bool http_want_gzip(const struct http_req *r, size_t blen)
{
    if (blen < 1024 || !r->content_type || r->wire_method == HTTP_HEAD)
        return false;
    const char *ae = http_req_header(r, "Accept-Encoding");
    if (!ae || !http_has_token(ae, "gzip"))
        return false;
    const char *ct = r->content_type;
    return strstr(ct, "json") || strstr(ct, "text/") || strstr(ct, "javascript") ||
           strstr(ct, "svg");
}

/* Queues out on the connection (loop thread, or the worker that has the request). When nothing else is waiting to be sent, it is
 * first written to the socket right here: a small reply then costs one writev and no
 * enabling/disabling of the write event (two epoll_ctl calls and a loop turn). What the socket
 * does not take goes to the bufferevent as usual. Holding the bufferevent lock keeps a worker
 * or the loop from writing in between (in practice neither does: one request per connection is
 * in flight, and the loop leaves it alone while a worker has it). */
static int http_conn_write(struct http_conn *c, struct evbuffer *out)
{
    int rc = 0;
    bufferevent_lock(c->bev);
    evutil_socket_t fd = bufferevent_getfd(c->bev);
    if (fd >= 0 && evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) {
        for (int i = 0; i < 4 && evbuffer_get_length(out) > 0; i++)
            if (evbuffer_write(out, fd) <= 0)
                break; /* EAGAIN, or an error the bufferevent will report */
    }
    if (evbuffer_get_length(out) > 0)
        rc = bufferevent_write_buffer(c->bev, out);
    bufferevent_unlock(c->bev);
    return rc;
}

/* Builds r's whole reply (status line, headers, body) and writes it (http_conn_write); false if
 * it could not be queued. Loop thread, or the worker of r's deferred work (the reply is then
 * sent before the loop hears the work is done: one wake-up less on the answer's path). */
static bool http_reply_write(struct http_req *r)
{
    struct evbuffer *out = evbuffer_new();
    if (!out)
        return false;
    int status = r->status;
    bool no_body = status == 204 || status == 304 || (status >= 100 && status < 200);
    size_t blen = evbuffer_get_length(r->reply_body);
    struct evbuffer *gz = NULL;
    if (!no_body && http_want_gzip(r, blen) && (gz = evbuffer_new()) != NULL &&
        !http_gzip(r->reply_body, gz)) {
        evbuffer_free(gz);
        gz = NULL;
    }
    evbuffer_add(out, "HTTP/1.1 ", 9);
    http_add_u64(out, (uint64_t)status);
    evbuffer_add(out, " ", 1);
    http_add_str(out, http_status_text(status));
    evbuffer_add(out, "\r\n", 2);
    if (!no_body) {
        evbuffer_add(out, "Content-Type: ", 14);
        http_add_str(out, r->content_type ? r->content_type : "application/json; charset=UTF-8");
        evbuffer_add(out, "\r\nContent-Length: ", 18);
        http_add_u64(out, gz ? evbuffer_get_length(gz) : blen);
        evbuffer_add(out, "\r\n", 2);
        if (gz)
            http_add_str(out, "Content-Encoding: gzip\r\nVary: Accept-Encoding\r\n");
    }
    http_req_write_common_headers(r, out);
    evbuffer_add(out, "\r\n", 2);
    if (!no_body && r->wire_method != HTTP_HEAD)
        evbuffer_add_buffer(out, gz ? gz : r->reply_body);
    if (gz)
        evbuffer_free(gz);
    bool ok = http_conn_write(r->conn, out) == 0;
    evbuffer_free(out);
    if (ok)
        http_req_answered(r);
    return ok;
}

void http_req_answered(struct http_req *r)
{
    if (r->start_ns == 0)
        return;
    tstats_http_latency_add(clock_mono_ns() - r->start_ns);
    r->start_ns = 0;
}

void http_conn_send_reply(struct http_req *r)
{
    struct http_conn *c = r->conn;
    if (!r->keep_alive)
        c->close_after = true;
    if (r->sent) { /* by the worker */
        if (r->send_failed)
            c->close_after = true;
        return;
    }
    http_count_status(r->status);
    if (!http_reply_write(r))
        c->close_after = true;
}

/* A framing-level error: reply with OpenTSDB's error object and close. */
static void http_conn_fail(struct http_conn *c, int status, const char *msg)
{
    struct http_req *r = c->req;
    if (!r) {
        r = http_req_new(c);
        if (!r) {
            c->close_after = true;
            return;
        }
        c->req = r;
    }
    r->keep_alive = false;
    c->close_after = true;
    r->replied = false;
    r->streaming = false;
    evbuffer_drain(r->reply_body, evbuffer_get_length(r->reply_body));
    http_reply_error(r, status, msg, NULL);
    http_conn_send_reply(r);
    http_req_free(r);
    c->req = NULL;
    c->state = HC_CLOSING;
}

/* ---- request head ---------------------------------------------------------------------- */

static enum http_method http_method_parse(const char *m)
{
    static const struct {
        const char *name;
        enum http_method m;
    } tab[] = {{"GET", HTTP_GET},       {"POST", HTTP_POST},       {"PUT", HTTP_PUT},
               {"DELETE", HTTP_DELETE}, {"OPTIONS", HTTP_OPTIONS}, {"HEAD", HTTP_HEAD}};
    for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
        if (!strcmp(m, tab[i].name))
            return tab[i].m;
    return (enum http_method)0;
}

/* Parses r->head (NUL-terminated); returns 0 or an HTTP status with msg set. */
static int http_parse_head(struct http_conn *c, struct http_req *r, const char **msg)
{
    char *save = NULL;
    char *line = strtok_r(r->head, "\n", &save);
    if (!line) {
        *msg = "Empty request";
        return 400;
    }
    line = http_trim(line);
    char *sp1 = strchr(line, ' ');
    char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    if (!sp1 || !sp2) {
        *msg = "Malformed request line";
        return 400;
    }
    *sp1 = '\0';
    *sp2 = '\0';
    char *target = sp1 + 1, *version = http_trim(sp2 + 1);
    size_t ml = strnlen(line, sizeof(r->method_name) - 1); /* cut as the name's buffer is */
    memcpy(r->method_name, line, ml);
    r->method_name[ml] = '\0';
    r->wire_method = http_method_parse(line);
    r->method = r->wire_method;
    if (!strcmp(version, "HTTP/1.1"))
        r->minor = 1;
    else if (!strcmp(version, "HTTP/1.0"))
        r->minor = 0;
    else {
        *msg = "Unsupported HTTP version";
        return 505;
    }
    /* absolute-form: drop scheme and authority */
    if (!strncasecmp(target, "http://", 7) || !strncasecmp(target, "https://", 8)) {
        char *slash = strchr(strstr(target, "//") + 2, '/');
        target = slash ? slash : "/";
    }
    /* origin-form only (RFC 9112 section 3.2; "*" for OPTIONS): OpenTSDB refuses an empty path */
    if (target[0] != '/' && !(r->wire_method == HTTP_OPTIONS && !strcmp(target, "*"))) {
        *msg = "Invalid request target";
        return 400;
    }
    char *q = strchr(target, '?');
    if (q)
        *q = '\0';
    r->query = strdup(q ? q + 1 : "");
    r->path = strdup(target);
    if (!r->query || !r->path) {
        *msg = "Out of memory";
        return 500;
    }
    if (!http_decode(r->path, false)) {
        *msg = "Invalid path";
        return 400;
    }
    r->early_status =
        http_normalise_path(r->path, &r->early_msg, r->early_details, sizeof(r->early_details));
    /* headers */
    while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
        size_t l = strlen(line);
        if (l > 0 && line[l - 1] == '\r')
            line[--l] = '\0';
        if (l == 0)
            break;
        if (r->nheaders == HTTP_MAX_HEADERS) {
            *msg = "Too many header lines";
            return 431;
        }
        int st = http_header_split(line, &r->headers[r->nheaders], msg);
        if (st != 0)
            return st;
        r->nheaders++;
    }
    const char *conn = http_req_header(r, "Connection");
    if (r->minor >= 1)
        r->keep_alive = !(conn && http_has_token(conn, "close"));
    else
        r->keep_alive = conn && http_has_token(conn, "keep-alive");
    if (http_parse_query(r) != 0) {
        *msg = "Out of memory";
        return 500;
    }
    const char *jp = http_req_param(r, "jsonp");
    if (jp && *jp) {
        if (!http_jsonp_ok(jp)) {
            *msg = "Invalid jsonp callback name";
            return 400;
        }
        r->jsonp = jp;
    }
    r->pretty = http_req_param(r, "pretty") != NULL;
    bool api = !strncmp(r->path, "/api", 4) && (r->path[4] == '/' || r->path[4] == '\0');
    const char *ser = http_req_param(r, "serializer");
    if (api && ser && strcmp(ser, "json") != 0 && !r->early_status) { /* /api/serializers */
        r->early_status = 400;
        r->early_msg = "Requested serializer was not found";
        snprintf(r->early_details, sizeof(r->early_details),
                 "Could not find a serializer with the name: %.64s", ser);
    }
    /* OpenTSDB overrides a GET only; an empty or unknown value is a 405 */
    const char *mo = r->wire_method == HTTP_GET ? http_req_param(r, "method_override") : NULL;
    if (mo && !r->early_status) {
        char up[16];
        size_t i = 0;
        for (; i < sizeof(up) - 1 && mo[i]; i++)
            up[i] = (char)toupper((unsigned char)mo[i]);
        up[i] = '\0';
        enum http_method m = mo[i] ? (enum http_method)0 : http_method_parse(up);
        if (m == HTTP_GET || m == HTTP_POST || m == HTTP_PUT || m == HTTP_DELETE)
            r->method = m;
        else {
            r->early_status = 405;
            r->early_msg = *mo ? "Unknown or unsupported method override value"
                               : "Missing method override value";
        }
    }
    /* body framing (RFC 9112 section 6; an error closes the connection: http_conn_fail) */
    const struct http_framing_limits lim = {c->tsd->enable_chunked, c->tsd->max_body};
    uint64_t length = 0;
    int st = http_body_framing(r, &lim, &c->chunked, &length, msg);
    if (st != 0)
        return st;
    c->body_need = (size_t)length;
    const char *ex = http_req_header(r, "Expect");
    c->expect_continue = ex && !strcasecmp(ex, "100-continue") && r->minor >= 1;
    return 0;
}

/* ---- body decoding ------------------------------------------------------------------------- */

static int http_inflate(struct http_req *r, const unsigned char *in, size_t inlen, bool gzip,
                        size_t limit, char **out, size_t *outlen, const char **msg)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        z_stream zs;
        memset(&zs, 0, sizeof(zs));
        int wbits = gzip ? 15 + 32 : (attempt == 0 ? 15 : -15);
        if (inflateInit2(&zs, wbits) != Z_OK) {
            *msg = "Cannot start decompression";
            return 500;
        }
        size_t cap = inlen * 4 + 1024, n = 0;
        if (cap > limit + 1)
            cap = limit + 1;
        char *buf = malloc(cap + 1);
        if (!buf) {
            inflateEnd(&zs);
            *msg = "Out of memory";
            return 500;
        }
        zs.next_in = (unsigned char *)in;
        zs.avail_in = (uInt)inlen;
        int zrc = Z_OK;
        while (zrc != Z_STREAM_END) {
            if (n == cap) {
                if (cap > limit) {
                    free(buf);
                    inflateEnd(&zs);
                    *msg = "Decompressed request body too large";
                    return 413;
                }
                size_t ncap = cap * 2 > limit + 1 ? limit + 1 : cap * 2;
                char *nb = realloc(buf, ncap + 1);
                if (!nb) {
                    free(buf);
                    inflateEnd(&zs);
                    *msg = "Out of memory";
                    return 500;
                }
                buf = nb;
                cap = ncap;
            }
            zs.next_out = (unsigned char *)buf + n;
            zs.avail_out = (uInt)(cap - n);
            zrc = inflate(&zs, Z_NO_FLUSH);
            n = cap - zs.avail_out;
            if (zrc == Z_STREAM_END)
                break;
            if (zrc != Z_OK && zrc != Z_BUF_ERROR)
                break;
            if (zrc == Z_BUF_ERROR && zs.avail_in == 0)
                break;
        }
        inflateEnd(&zs);
        if (zrc == Z_STREAM_END) {
            if (n > limit) {
                free(buf);
                *msg = "Decompressed request body too large";
                return 413;
            }
            buf[n] = '\0';
            *out = buf;
            *outlen = n;
            return 0;
        }
        free(buf);
        if (gzip)
            break;
    }
    (void)r;
    *msg = "Unable to decompress the request body";
    return 400;
}

static int http_finish_body(struct http_conn *c, struct http_req *r, const char **msg)
{
    size_t n = c->body ? evbuffer_get_length(c->body) : 0;
    const char *ce = http_req_header(r, "Content-Encoding");
    bool gz = ce && (http_has_token(ce, "gzip") || http_has_token(ce, "x-gzip"));
    bool df = ce && http_has_token(ce, "deflate");
    /* Prometheus remote read/write bodies are snappy blocks: handed over as they are (the
     * handlers in api_prom.c decode them); anywhere else snappy is unsupported */
    bool sn = ce && http_has_token(ce, "snappy") &&
              (!strcmp(r->path, "/api/write") || !strcmp(r->path, "/api/read"));
    if (ce && !gz && !df && !sn && !http_has_token(ce, "identity")) {
        *msg = "Unsupported Content-Encoding";
        return 415;
    }
    if (n == 0) {
        r->body = NULL;
        r->body_len = 0;
        return 0;
    }
    if (gz || df) {
        unsigned char *flat = evbuffer_pullup(c->body, -1);
        int st = http_inflate(r, flat, n, gz, c->tsd->max_body, &r->body, &r->body_len, msg);
        evbuffer_drain(c->body, n);
        return st;
    }
    r->body = malloc(n + 1);
    if (!r->body) {
        *msg = "Out of memory";
        return 500;
    }
    /* one copy straight out of the buffer's chains (no pullup into one chain first) */
    if (evbuffer_remove(c->body, r->body, n) != (int)n) {
        *msg = "cannot read the request body";
        return 500;
    }
    r->body[n] = '\0';
    r->body_len = n;
    return 0;
}

/* ---- the request cycle --------------------------------------------------------------------- */

static void http_conn_finish(struct http_conn *c)
{
    struct http_req *r = c->req;
    if (!r->replied) {
        tlog_error("http: handler for %s %s did not reply", r->method_name, r->path);
        http_reply_error(r, 500, "handler did not reply", NULL);
    }
    if (r->streaming && !r->stream_ended)
        http_stream_end(r);
    if (r->streaming && !r->stream_held) {
        http_count_status(r->status);
        if (!r->keep_alive)
            c->close_after = true;
    } else {
        http_conn_send_reply(r);
    }
    http_req_recycle(c, r);
    c->req = NULL;
    if (c->close_after) {
        c->state = HC_CLOSING;
        bufferevent_disable(c->bev, EV_READ);
        if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
            http_conn_free(c);
        return;
    }
    c->state = HC_HEAD;
}

static void http_conn_dispatch(struct http_conn *c)
{
    struct http_req *r = c->req;
    r->start_ns = clock_mono_ns(); /* whole: the latency counts from here (6) */
    const char *msg = NULL;
    int st = http_finish_body(c, r, &msg);
    c->state = HC_BUSY;
    tstats_add(TSTATS_HTTP_REQUESTS, 1);
    if (st != 0) {
        http_conn_fail(c, st, msg);
        if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
            http_conn_free(c);
        return;
    }
    routes_dispatch(r);
    if (r->deferred)
        return; /* http_conn_work_done() continues */
    http_conn_finish(c);
}

/* Returns false when the connection was freed or must wait. */
static bool http_conn_step(struct http_conn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    size_t avail = evbuffer_get_length(in);
    const char *msg = NULL;
    switch (c->state) {
    case HC_HEAD: {
        /* a pipelining client that does not read its answers is not read either (4) */
        if (evbuffer_get_length(bufferevent_get_output(c->bev)) > c->tsd->http_out_high) {
            c->out_full = true;
            bufferevent_disable(c->bev, EV_READ);
            return false;
        }
        /* skip blank lines between pipelined requests */
        while (avail > 0) {
            unsigned char *b = evbuffer_pullup(in, 1);
            if (*b != '\r' && *b != '\n')
                break;
            evbuffer_drain(in, 1);
            avail--;
        }
        if (avail == 0)
            return false;
        size_t look = avail < c->tsd->max_header + 4 ? avail : c->tsd->max_header + 4;
        const char *d = (const char *)evbuffer_pullup(in, (ssize_t)look);
        size_t end = 0;
        for (size_t i = 0; i + 1 < look; i++) {
            if (d[i] != '\n')
                continue;
            if (d[i + 1] == '\n') {
                end = i + 2;
                break;
            }
            if (d[i + 1] == '\r' && i + 2 < look && d[i + 2] == '\n') {
                end = i + 3;
                break;
            }
        }
        if (end == 0) {
            if (avail > c->tsd->max_header) {
                http_conn_fail(c, 431, "Request header too large");
                return true;
            }
            return false;
        }
        struct http_req *r = http_req_new(c);
        if (!r) {
            http_conn_fail(c, 500, "Out of memory");
            return true;
        }
        c->req = r;
        r->head = malloc(end + 1);
        if (!r->head) {
            http_conn_fail(c, 500, "Out of memory");
            return true;
        }
        memcpy(r->head, d, end);
        r->head[end] = '\0';
        evbuffer_drain(in, end);
        int st = http_parse_head(c, r, &msg);
        if (st != 0) {
            http_conn_fail(c, st, msg);
            return true;
        }
        if (c->body)
            evbuffer_drain(c->body, evbuffer_get_length(c->body));
        if (c->chunked || c->body_need > 0) {
            if (!c->body && !(c->body = evbuffer_new())) {
                http_conn_fail(c, 500, "Out of memory");
                return true;
            }
            if (c->expect_continue && evbuffer_get_length(in) == 0)
                bufferevent_write(c->bev, "HTTP/1.1 100 Continue\r\n\r\n", 25);
            c->state = c->chunked ? HC_CHUNK_SIZE : HC_BODY;
            return true;
        }
        http_conn_dispatch(c);
        return true;
    }
    case HC_BODY:
    case HC_CHUNK_DATA: {
        size_t n = avail < c->body_need ? avail : c->body_need;
        if (n > 0) {
            evbuffer_remove_buffer(in, c->body, n);
            c->body_need -= n;
        }
        if (c->body_need > 0)
            return false;
        if (c->state == HC_CHUNK_DATA) {
            c->state = HC_CHUNK_CRLF;
            return true;
        }
        http_conn_dispatch(c);
        return true;
    }
    case HC_CHUNK_SIZE: {
        size_t len;
        char *line = evbuffer_readln(in, &len, EVBUFFER_EOL_CRLF);
        if (!line) {
            if (avail > 1024)
                http_conn_fail(c, 400, "Malformed chunk size line");
            return avail > 1024;
        }
        /* 1*HEXDIG, then optional whitespace and chunk extensions (ignored); strtoull would
         * also take a sign, leading spaces and "0x" */
        uint64_t sz = 0;
        const char *end = line;
        bool bad = !isxdigit((unsigned char)*end);
        for (; !bad && isxdigit((unsigned char)*end); end++) {
            if (sz > (UINT64_MAX >> 4)) {
                bad = true;
                break;
            }
            int d = isdigit((unsigned char)*end) ? *end - '0'
                                                 : (tolower((unsigned char)*end) - 'a' + 10);
            sz = (sz << 4) | (uint64_t)d;
        }
        bad = bad || (*end && *end != ';' && *end != ' ' && *end != '\t');
        free(line);
        if (bad) {
            http_conn_fail(c, 400, "Malformed chunk size line");
            return true;
        }
        if (sz > c->tsd->max_chunk || sz + evbuffer_get_length(c->body) > c->tsd->max_chunk) {
            char m[160];
            snprintf(m, sizeof(m),
                     "Chunked request body larger than tsd.http.request.max_chunk (%zu bytes)",
                     c->tsd->max_chunk);
            http_conn_fail(c, 413, m);
            return true;
        }
        if (sz == 0) {
            c->state = HC_TRAILER;
            return true;
        }
        c->body_need = (size_t)sz;
        c->state = HC_CHUNK_DATA;
        return true;
    }
    case HC_CHUNK_CRLF: {
        size_t len;
        char *line = evbuffer_readln(in, &len, EVBUFFER_EOL_CRLF);
        if (!line) {
            if (avail > 2)
                http_conn_fail(c, 400, "Malformed chunk framing");
            return avail > 2;
        }
        free(line);
        if (len != 0) {
            http_conn_fail(c, 400, "Malformed chunk framing");
            return true;
        }
        c->state = HC_CHUNK_SIZE;
        return true;
    }
    case HC_TRAILER: {
        size_t len;
        char *line = evbuffer_readln(in, &len, EVBUFFER_EOL_CRLF);
        if (!line) {
            if (avail > c->tsd->max_header)
                http_conn_fail(c, 431, "Chunked trailer too large");
            return avail > c->tsd->max_header;
        }
        free(line);
        if (len == 0)
            http_conn_dispatch(c);
        return true;
    }
    case HC_BUSY:
    case HC_CLOSING:
    default:
        return false;
    }
}

/* The client half-closed and every whole request it sent has been started: once the last is
 * answered (not HC_BUSY) and the input holds no further whole request, close after the output
 * is flushed. Loop thread; may free c. */
static void http_conn_at_eof(struct http_conn *c)
{
    if (c->state == HC_BUSY || c->out_full || c->closed)
        return;
    if (c->state != HC_CLOSING) {
        c->close_after = true;
        c->state = HC_CLOSING;
    }
    if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
        http_conn_free(c);
}

static void http_conn_process(struct http_conn *c)
{
    for (int i = 0; i < 1000000; i++) {
        int state = c->state;
        if (state == HC_CLOSING) {
            if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
                http_conn_free(c);
            return;
        }
        /* A step may free c only through http_conn_finish/dispatch when it closes, which sets
         * HC_CLOSING first; c->closed tells us. */
        c->refs++;
        bool more = http_conn_step(c);
        bool freed = --c->refs == 0;
        if (freed) {
            http_conn_free(c);
            return;
        }
        if (c->closed)
            return;
        if (!more) {
            if (c->read_eof)
                http_conn_at_eof(c);
            return;
        }
    }
}

static void http_conn_read_cb(struct bufferevent *bev, void *arg)
{
    (void)bev;
    if (!http_conn_unpark(arg))
        return;
    http_conn_process(arg);
}

/* Loop: gives back what c charged to the answer pool (tsd/http.c, http_stream_room) beyond
 * what its output still holds over HTTP_ANSWER_FREE. Lock order: bufferevent, then c->mu. */
static void http_conn_answer_release(struct http_conn *c)
{
    bufferevent_lock(c->bev);
    size_t out = evbuffer_get_length(bufferevent_get_output(c->bev));
    uint64_t keep = out > HTTP_ANSWER_FREE ? out - HTTP_ANSWER_FREE : 0;
    pthread_mutex_lock(&c->mu);
    uint64_t give = c->answer_charged > keep ? c->answer_charged - keep : 0;
    c->answer_charged -= give;
    pthread_mutex_unlock(&c->mu);
    bufferevent_unlock(c->bev);
    if (give > 0)
        membudget_pool_give(&c->tsd->answers, give);
}

static void http_conn_write_cb(struct bufferevent *bev, void *arg)
{
    struct http_conn *c = arg;
    http_conn_answer_release(c);
    pthread_mutex_lock(&c->mu);
    c->drain_gen++;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (!http_conn_unpark(c))
        return;
    if (c->state == HC_CLOSING && !c->req &&
        evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
        http_conn_free(c);
        return;
    }
    if (c->out_full && c->state == HC_HEAD && !c->closed) {
        c->out_full = false;
        if (!c->read_eof)
            bufferevent_enable(c->bev, EV_READ);
        http_conn_process(c);
    }
}

static void http_conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct http_conn *c = arg;
    (void)bev;
    if (!http_conn_unpark(c))
        return;
    if (what & BEV_EVENT_TIMEOUT)
        tstats_add(TSTATS_CONN_TIMEOUT, 1);
    if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR) && !(what & BEV_EVENT_TIMEOUT)) {
        /* Half-closed (shutdown(SHUT_WR)): every whole request already received is still
         * answered, in order (RFC 9112 section 9.6), then the connection is closed
         * (http_conn_at_eof). */
        c->read_eof = true;
        bufferevent_disable(c->bev, EV_READ);
        if (c->state != HC_BUSY)
            http_conn_process(c);
        return;
    }
    pthread_mutex_lock(&c->mu);
    c->gone = true;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    http_conn_free(c);
}

/* Drops the loop's reference: frees now, or marks closed for the worker to finish. */
static void http_conn_free(struct http_conn *c)
{
    if (c->closed) {
        if (c->refs == 0)
            goto really;
        return;
    }
    c->closed = true;
    c->refs--;
    pthread_mutex_lock(&c->mu);
    c->gone = true;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    bufferevent_disable(c->bev, EV_READ | EV_WRITE);
    if (c->refs > 0)
        return;
really:
    if (c->answer_charged > 0) /* no worker has c now: no lock needed */
        membudget_pool_give(&c->tsd->answers, c->answer_charged);
    c->answer_charged = 0;
    if (c->prev)
        c->prev->next = c->next;
    else
        c->tsd->http_conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    bufferevent_free(c->bev);
    if (c->body)
        evbuffer_free(c->body);
    http_req_free(c->req);
    http_req_free(c->spare);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    struct tsd *t = c->tsd;
    free(c);
    tsd_conn_closed(t);
}

int http_conn_start(struct tsd *t, int fd, const char *peer, struct ct_err *err)
{
    struct http_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return ct_err_set(err, CT_ENOMEM, "out of memory for a connection from %s", peer);
    c->bev = bufferevent_socket_new(t->base, fd,
                                    BEV_OPT_CLOSE_ON_FREE | BEV_OPT_THREADSAFE |
                                        BEV_OPT_DEFER_CALLBACKS | BEV_OPT_UNLOCK_CALLBACKS);
    if (!c->bev) {
        free(c);
        return ct_err_set(err, CT_ENOMEM, "cannot create a bufferevent for %s", peer);
    }
    c->tsd = t;
    c->refs = 1;
    c->id = ++t->next_conn_id;
    snprintf(c->peer, sizeof(c->peer), "%s", peer);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->next = t->http_conns;
    if (c->next)
        c->next->prev = c;
    t->http_conns = c;
    bufferevent_setcb(c->bev, http_conn_read_cb, http_conn_write_cb, http_conn_event_cb, c);
    bufferevent_setwatermark(c->bev, EV_READ, 0, t->http_read_high);
    /* read up to 64 KiB per readiness (libevent's default is 16 KiB): a 500-point /api/put
     * body (~75 KB) then takes two reads, not five */
    if (bufferevent_set_max_single_read(c->bev, TSD_HTTP_SINGLE_READ) != 0)
        tlog_warn("cannot raise the read size for %s; keeping libevent's default", peer);
    bufferevent_setwatermark(c->bev, EV_WRITE, HTTP_WRITE_LOW, 0);
    /* read: tsd.core.socket.timeout (idle); write: tsd.http.response.write_timeout, a client
     * that takes no byte of its pending answers for that long is closed (invariant 7) */
    struct timeval rtv = {(time_t)t->socket_timeout_s, 0};
    struct timeval wtv = {(time_t)t->http_write_timeout_s, 0};
    if (t->socket_timeout_s > 0 || t->http_write_timeout_s > 0)
        bufferevent_set_timeouts(c->bev, t->socket_timeout_s > 0 ? &rtv : NULL,
                                 t->http_write_timeout_s > 0 ? &wtv : NULL);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    tstats_add(TSTATS_CONN_HTTP, 1);
    return CT_OK;
}

/* ---- deferred work --------------------------------------------------------------------------- */

/* Worker (or the thread resuming r), after writing r's whole reply, holding the bufferevent's
 * lock: parks r on its connection (invariant 5) and returns true, or returns false when the
 * loop must be woken (tsd_post_done). */
static bool http_conn_park(struct http_req *r)
{
    struct http_conn *c = r->conn;
    bool parked = false;
    bufferevent_lock(c->bev);
    if ((bufferevent_get_enabled(c->bev) & EV_READ) &&
        evbuffer_get_length(bufferevent_get_input(c->bev)) == 0) {
        pthread_mutex_lock(&c->mu);
        if (!c->gone && !c->parked) {
            c->parked = r;
            parked = true;
        }
        pthread_mutex_unlock(&c->mu);
    }
    bufferevent_unlock(c->bev);
    return parked;
}

/* Loop: finishes c's parked request, if any, as http_conn_work_done does (which may go on to
 * the next pipelined request, or close c). Returns false if c was closed meanwhile (then it
 * may be freed: do not touch it). */
static bool http_conn_unpark(struct http_conn *c)
{
    pthread_mutex_lock(&c->mu);
    struct http_req *r = c->parked;
    c->parked = NULL;
    pthread_mutex_unlock(&c->mu);
    if (!r)
        return true;
    c->refs++;
    http_conn_work_done(r);
    bool open = !c->closed;
    if (--c->refs == 0) {
        http_conn_free(c);
        return false;
    }
    return open;
}

/* Set by http_req_suspend on the worker running a request's work: the trampoline then leaves
 * the request alone once the work returns (it may be gone already: http_req_resume). */
static _Thread_local bool http_work_suspended;

/* The end of deferred work (on its worker, or the thread resuming a suspended request): a whole
 * reply (or a streamed one still held) goes out from here, then the request is parked or the
 * loop told (invariant 5). */
static void http_work_complete(struct http_req *r)
{
    struct http_conn *c = r->conn;
    bool whole = r->replied && (!r->streaming || r->stream_held);
    if (whole && r->streaming && !r->stream_ended)
        http_stream_end(r);
    /* The write and the parking under one hold of the bufferevent's (recursive) lock: else the
     * client, woken by the reply, may send its next request and the loop read it in between,
     * and the parking fails for the input waiting (seen on 63% of remote writes answered from
     * the ingest writer: a loop wake-up each) */
    bufferevent_lock(c->bev);
    if (whole) {
        pthread_mutex_lock(&c->mu);
        bool gone = c->gone;
        pthread_mutex_unlock(&c->mu);
        if (!gone) {
            http_count_status(r->status);
            r->send_failed = !http_reply_write(r);
            r->sent = true;
        }
    }
    bool parked = r->sent && !r->send_failed && r->keep_alive && http_conn_park(r);
    bufferevent_unlock(c->bev);
    if (!parked)
        tsd_post_done(c->tsd, r);
}

static void http_work_trampoline(void *arg)
{
    struct http_req *r = arg;
    r->on_worker = true;
    /* one deadline bounds the request's backend calls together (a remote backend's) */
    int64_t req_ms = tsdstore_request_ms(r->conn->tsd->tstore);
    uint64_t prev_deadline = req_ms ? wc_request_deadline_begin(req_ms) : wc_request_deadline();
    http_work_suspended = false;
    r->work(r, r->work_arg);
    wc_request_deadline_set(prev_deadline);
    if (http_work_suspended) { /* r is http_req_resume's (maybe finished and freed already) */
        http_work_suspended = false;
        return;
    }
    http_work_complete(r);
}

void http_req_suspend(struct http_req *r)
{
    (void)r;
    http_work_suspended = true;
}

void http_req_resume(struct http_req *r)
{
    http_work_complete(r);
}

static int http_req_defer_on(struct workpool *pool, struct http_req *r, http_work_fn work,
                             void *arg, struct ct_err *err)
{
    if (r->deferred || r->replied)
        return ct_err_set(err, CT_EINVAL, "request already deferred or answered");
    r->deferred = true;
    r->work = work;
    r->work_arg = arg;
    r->conn->refs++;
    int rc = workpool_submit(pool, http_work_trampoline, r, err);
    if (rc != CT_OK) {
        r->deferred = false;
        r->conn->refs--;
    }
    return rc;
}

int http_req_defer(struct http_req *r, http_work_fn work, void *arg, struct ct_err *err)
{
    return http_req_defer_on(r->conn->tsd->pool, r, work, arg, err);
}

int http_req_defer_ingest(struct http_req *r, http_work_fn work, void *arg, struct ct_err *err)
{
    return http_req_defer_on(r->conn->tsd->ingest_pool, r, work, arg, err);
}

void http_conn_work_done(struct http_req *r)
{
    struct http_conn *c = r->conn;
    r->on_worker = false;
    c->refs--; /* the worker's reference */
    if (c->closed) {
        if (c->refs == 0)
            http_conn_free(c);
        return;
    }
    pthread_mutex_lock(&c->mu);
    bool cut = c->answer_cut;
    pthread_mutex_unlock(&c->mu);
    if (cut) { /* the answer was cut short (tsd/http.c): what is unsent is dropped with c */
        http_conn_free(c);
        return;
    }
    c->refs++; /* keep c while finishing, which may close it */
    http_conn_finish(c);
    bool alive = !c->closed && c->state != HC_CLOSING;
    if (--c->refs == 0) {
        http_conn_free(c);
        return;
    }
    if (!alive)
        return;
    if (!c->read_eof)
        bufferevent_enable(c->bev, EV_READ);
    http_conn_process(c);
}

void http_conn_close_all(struct tsd *t)
{
    struct http_conn *c = t->http_conns;
    while (c) {
        struct http_conn *next = c->next;
        if (c->state == HC_HEAD && !c->req) {
            http_conn_free(c);
        } else {
            c->close_after = true;
            /* no worker parks a request from now on (invariant 5); one parked before is
             * finished here (and c closed when its reply is out) */
            bufferevent_disable(c->bev, EV_READ);
            if (!http_conn_unpark(c)) {
                c = next;
                continue;
            }
        }
        c = next;
    }
}

void http_conn_free_all(struct tsd *t)
{
    struct http_conn *c = t->http_conns;
    while (c) {
        struct http_conn *next = c->next;
        bufferevent_free(c->bev);
        if (c->body)
            evbuffer_free(c->body);
        http_req_free(c->req);
        http_req_free(c->spare);
        pthread_mutex_destroy(&c->mu);
        pthread_cond_destroy(&c->cv);
        free(c);
        c = next;
    }
    t->http_conns = NULL;
}

struct membudget_pool *http_conn_answers(struct http_conn *c)
{
    return &c->tsd->answers;
}

struct tsd *http_req_tsd(const struct http_req *r)
{
    return r->conn->tsd;
}
