/* http.c - the request accessors and reply builders of http.h.
 *
 * Invariants: (1) a request is answered once: the first reply function wins and later calls are
 * ignored with a warning in the log (a handler bug must not corrupt the stream); (2) whole
 * replies only fill r->status / content_type / reply_body, and the connection code sends them
 * (http_conn_send_reply) on the loop thread; (3) streamed replies write to the connection's
 * bufferevent directly, which is thread-safe for HTTP connections; a worker never waits for a
 * slow client while the TSD's answer pool has room: unsent bytes past HTTP_ANSWER_FREE are
 * charged to it (and given back by the loop as they drain, or when the connection closes), a
 * full pool makes the worker wait while the client reads and cuts the answer of one that
 * stalls (http_stream_room_put), so memory stays bounded and no worker stays held;
 * (4) a streamed reply is held in reply_body until it passes HTTP_STREAM_HOLD bytes (256 KiB): one that
 * ends before is sent as a whole reply (Content-Length, one write on the loop thread, no
 * chunk framing and no write from the worker), and until then it can still be retracted;
 * (5) a streamed answer counts its request's latency when its last bytes are handed over
 * (http_stream_end, or the head of a HEAD request): http_conn.c (6).
 * See http_int.h for which thread touches what. */
#include "tsd/http.h"
#include "storage/coding.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "tsd/http_int.h"
#include "tsd/membudget.h"
#include "tsd/tlog.h"

#define HTTP_STREAM_HOLD (256u << 10) /* a streamed reply up to this size is sent whole */

static const char http_json_type[] = "application/json; charset=UTF-8";

/* ---- request parsing helpers (http_int.h) --------------------------------------------------- */

/* Percent-decodes s in place ('+' -> ' ' when plus); false if it decodes to a NUL. */
bool http_decode(char *s, bool plus)
{
    char *w = s;
    for (char *p = s; *p; p++) {
        if (*p == '%' && coding_hex_digit((unsigned char)p[1]) >= 0 &&
            coding_hex_digit((unsigned char)p[2]) >= 0) {
            int v =
                coding_hex_digit((unsigned char)p[1]) * 16 + coding_hex_digit((unsigned char)p[2]);
            if (v == 0)
                return false;
            *w++ = (char)v;
            p += 2;
        } else if (plus && *p == '+') {
            *w++ = ' ';
        } else {
            *w++ = *p;
        }
    }
    *w = '\0';
    return true;
}

/* Splits the query string into decoded parameters. */
int http_parse_query(struct http_req *r)
{
    if (!r->query || !*r->query)
        return 0;
    r->params_buf = strdup(r->query);
    if (!r->params_buf)
        return -1;
    size_t n = 1;
    for (const char *p = r->params_buf; *p; p++)
        if (*p == '&')
            n++;
    r->params = calloc(n, sizeof(*r->params));
    if (!r->params)
        return -1;
    char *save = NULL;
    for (char *tok = strtok_r(r->params_buf, "&", &save); tok; tok = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(tok, '=');
        char *value = tok + strlen(tok); /* presence-only: the empty string at the end */
        if (eq) {
            *eq = '\0';
            value = eq + 1;
        }
        if (!http_decode(tok, true) || !http_decode(value, true) || !*tok)
            continue;
        r->params[r->nparams].name = tok;
        r->params[r->nparams].value = value;
        r->nparams++;
    }
    return 0;
}

bool http_jsonp_ok(const char *s)
{
    if (!*s || strlen(s) > 128)
        return false;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.' && *p != '$')
            return false;
    return true;
}

/* The highest API version OpenTSDB 2.4 (and ctsdb) implements: /api/v1/... */
#define HTTP_API_MAX_VERSION 1

int http_normalise_path(char *p, const char **msg, char *details, size_t details_size)
{
    size_t n = strlen(p);
    if (n > 1 && p[n - 1] == '/')
        p[--n] = '\0';
    if (strncasecmp(p, "/api", 4) != 0 || (p[4] != '/' && p[4] != '\0'))
        return 0;
    memcpy(p, "/api", 4); /* OpenTSDB routes /API/V1/PUT as api/put */
    char *seg = p[4] ? p + 5 : p + 4;
    if ((seg[0] == 'v' || seg[0] == 'V') && isdigit((unsigned char)seg[1])) {
        size_t len = strcspn(seg + 1, "/");
        size_t digits = strspn(seg + 1, "0123456789");
        /* as Java's Integer.parseInt: digits only, at most 2^31 - 1 (ten digits cover it) */
        unsigned long long v = digits <= 10 ? strtoull(seg + 1, NULL, 10) : ~0ull;
        if (digits != len || v > 2147483647ull) {
            *msg = "Invalid API version format supplied";
            snprintf(details, details_size, "API version [%.*s] cannot be parsed to an integer",
                     (int)(len > 64 ? 64 : len), seg + 1);
            return 400;
        }
        if (v > HTTP_API_MAX_VERSION) {
            *msg = "Requested API version is greater than the max implemented";
            snprintf(details, details_size, "API version [%llu] is greater than the max [%d]", v,
                     HTTP_API_MAX_VERSION);
            return 501;
        }
        char *rest = seg + 1 + len;               /* "" or "/..." */
        memmove(seg - 1, rest, strlen(rest) + 1); /* seg is p + 5 here */
        seg = p[4] ? p + 5 : p + 4;
    }
    for (; *seg && *seg != '/'; seg++) /* the endpoint's name, as OpenTSDB lower-cases it */
        *seg = (char)tolower((unsigned char)*seg);
    return 0;
}

enum http_method http_req_method(const struct http_req *r)
{
    return r->method;
}
const char *http_req_method_name(const struct http_req *r)
{
    return r->method_name;
}
const char *http_req_path(const struct http_req *r)
{
    return r->path;
}
const char *http_req_peer(const struct http_req *r)
{
    return r->conn ? r->conn->peer : "";
}

const char *http_req_param(const struct http_req *r, const char *name)
{
    return http_req_param_at(r, name, 0);
}

size_t http_req_param_count(const struct http_req *r, const char *name)
{
    size_t n = 0;
    for (size_t i = 0; i < r->nparams; i++)
        if (!strcmp(r->params[i].name, name))
            n++;
    return n;
}

const char *http_req_param_at(const struct http_req *r, const char *name, size_t idx)
{
    for (size_t i = 0; i < r->nparams; i++)
        if (!strcmp(r->params[i].name, name) && idx-- == 0)
            return r->params[i].value;
    return NULL;
}

bool http_req_flag(const struct http_req *r, const char *name)
{
    const char *v = http_req_param(r, name);
    if (!v)
        return false;
    return strcasecmp(v, "false") != 0 && strcmp(v, "0") != 0 && strcasecmp(v, "no") != 0;
}

const char *http_req_header(const struct http_req *r, const char *name)
{
    for (size_t i = 0; i < r->nheaders; i++)
        if (!strcasecmp(r->headers[i].name, name))
            return r->headers[i].value;
    return NULL;
}

/* ---- message framing (RFC 9112 sections 5 and 6) ------------------------------------------- */

/* True for a tchar of RFC 9110 section 5.6.2 (a header name's characters). */
static bool http_tchar(unsigned char ch)
{
    return isalnum(ch) || (ch && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

int http_header_split(char *line, struct http_kv *kv, const char **msg)
{
    if (line[0] == ' ' || line[0] == '\t') {
        *msg = "Folded header lines (obs-fold) are not supported";
        return 400;
    }
    char *colon = strchr(line, ':');
    if (!colon) {
        *msg = "Malformed header line";
        return 400;
    }
    if (colon == line) {
        *msg = "Empty header name";
        return 400;
    }
    for (char *p = line; p < colon; p++) {
        if (*p == ' ' || *p == '\t') {
            *msg = "Whitespace between a header name and its colon";
            return 400;
        }
        if (!http_tchar((unsigned char)*p)) {
            *msg = "Invalid character in a header name";
            return 400;
        }
    }
    char *v = colon + 1;
    while (*v == ' ' || *v == '\t')
        v++;
    size_t n = strlen(v);
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    v[n] = '\0';
    if (strchr(v, '\r')) {
        *msg = "Invalid character in a header value";
        return 400;
    }
    *colon = '\0';
    kv->name = line;
    kv->value = v;
    return 0;
}

/* Parses one Content-Length header value (a comma list of identical decimal numbers is
 * accepted, RFC 9112 section 6.3) into *out; false if it is not one. */
static bool http_content_length(const char *s, uint64_t *out)
{
    bool have = false;
    uint64_t first = 0;
    const char *p = s;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!isdigit((unsigned char)*p))
            return false;
        uint64_t v = 0;
        for (; isdigit((unsigned char)*p); p++) {
            if (v > (UINT64_MAX - 9) / 10)
                return false;
            v = v * 10 + (uint64_t)(*p - '0');
        }
        while (*p == ' ' || *p == '\t')
            p++;
        if (have && v != first)
            return false;
        first = v;
        have = true;
        if (*p == '\0')
            break;
        if (*p++ != ',')
            return false;
    }
    *out = first;
    return true;
}

int http_body_framing(const struct http_req *r, const struct http_framing_limits *lim,
                      bool *chunked, uint64_t *length, const char **msg)
{
    bool have_cl = false, have_te = false, te_chunked = false, te_other = false;
    uint64_t cl = 0;
    *chunked = false;
    *length = 0;
    for (size_t i = 0; i < r->nheaders; i++) {
        const struct http_kv *h = &r->headers[i];
        if (!strcasecmp(h->name, "Content-Length")) {
            uint64_t v;
            if (!http_content_length(h->value, &v)) {
                *msg = "Invalid Content-Length";
                return 400;
            }
            if (have_cl && v != cl) {
                *msg = "Conflicting Content-Length headers";
                return 400;
            }
            cl = v;
            have_cl = true;
        } else if (!strcasecmp(h->name, "Transfer-Encoding")) {
            /* the codings of every Transfer-Encoding line, in order: chunked must be the
             * last, and come once */
            const char *p = h->value;
            have_te = true;
            for (;;) {
                while (*p == ' ' || *p == '\t' || *p == ',')
                    p++;
                if (!*p)
                    break;
                const char *e = p;
                while (*e && *e != ',')
                    e++;
                const char *te = e;
                while (te > p && (te[-1] == ' ' || te[-1] == '\t'))
                    te--;
                if (te_chunked) {
                    *msg = "Transfer-Encoding: chunked must be the final coding, applied once";
                    return 400;
                }
                if ((size_t)(te - p) == 7 && !strncasecmp(p, "chunked", 7))
                    te_chunked = true;
                else
                    te_other = true;
                p = e;
            }
        }
    }
    if (have_te) {
        if (r->minor == 0) {
            *msg = "Transfer-Encoding in an HTTP/1.0 request";
            return 400;
        }
        if (have_cl) {
            *msg = "Both Content-Length and Transfer-Encoding";
            return 400;
        }
        if (!te_chunked) {
            *msg = "Transfer-Encoding must end with chunked";
            return 400;
        }
        if (te_other) {
            *msg = "Unsupported Transfer-Encoding";
            return 501;
        }
        if (!lim->enable_chunked) {
            *msg = "Chunked request not supported.";
            return 400;
        }
        *chunked = true;
        return 0;
    }
    if (have_cl && cl > lim->max_body) {
        *msg = "Request body too large";
        return 413;
    }
    *length = cl;
    return 0;
}

const char *http_req_body(const struct http_req *r, size_t *len)
{
    if (len)
        *len = r->body ? r->body_len : 0;
    return r->body ? r->body : "";
}

const char *http_status_text(int status)
{
    switch (status) {
    case 100:
        return "Continue";
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 204:
        return "No Content";
    case 301:
        return "Moved Permanently";
    case 304:
        return "Not Modified";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 406:
        return "Not Acceptable";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 411:
        return "Length Required";
    case 413:
        return "Request Entity Too Large";
    case 414:
        return "Request-URI Too Long";
    case 415:
        return "Unsupported Media Type";
    case 417:
        return "Expectation Failed";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 503:
        return "Service Unavailable";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return status < 300 ? "OK" : status < 500 ? "Bad Request" : "Internal Server Error";
    }
}

static bool http_reply_claim(struct http_req *r)
{
    if (r->replied) {
        tlog_warn("http: second reply to %s %s ignored (handler bug)", r->method_name, r->path);
        return false;
    }
    r->replied = true;
    return true;
}

static void http_set_type(struct http_req *r, const char *type)
{
    free(r->content_type);
    r->content_type = strdup(type ? type : http_json_type);
}

void http_reply_header(struct http_req *r, const char *name, const char *value)
{
    if (r->nextra == HTTP_MAX_EXTRA_HEADERS) {
        tlog_warn("http: too many reply headers for %s; %s dropped", r->path, name);
        return;
    }
    char *n = strdup(name), *v = strdup(value);
    if (!n || !v) {
        free(n);
        free(v);
        return;
    }
    r->extra[r->nextra].name = n;
    r->extra[r->nextra].value = v;
    r->nextra++;
}

void http_reply_raw(struct http_req *r, int status, const char *content_type, const void *body,
                    size_t len)
{
    if (!http_reply_claim(r))
        return;
    r->status = status;
    http_set_type(r, content_type);
    if (len > 0 && evbuffer_add(r->reply_body, body, len) != 0) {
        evbuffer_drain(r->reply_body, evbuffer_get_length(r->reply_body));
        r->status = 500;
    }
}

void http_reply_status(struct http_req *r, int status)
{
    if (!http_reply_claim(r))
        return;
    r->status = status;
    http_set_type(r, http_json_type);
}

/* Adds JSON text to the reply body with jsonp wrapping. */
static void http_add_json(struct http_req *r, const char *json, size_t len)
{
    int rc = 0;
    if (r->jsonp)
        rc |= evbuffer_add_printf(r->reply_body, "%s(", r->jsonp) < 0;
    rc |= evbuffer_add(r->reply_body, json, len);
    if (r->jsonp)
        rc |= evbuffer_add(r->reply_body, ")", 1);
    if (rc) {
        evbuffer_drain(r->reply_body, evbuffer_get_length(r->reply_body));
        r->status = 500;
    }
}

void http_reply_json(struct http_req *r, int status, const char *json, size_t len)
{
    if (r->pretty) {
        cJSON *doc = cJSON_ParseWithLength(json, len);
        if (doc) {
            http_reply_cjson(r, status, doc);
            return;
        }
    }
    if (!http_reply_claim(r))
        return;
    r->status = status;
    http_set_type(r, http_json_type);
    http_add_json(r, json, len);
}

/* JSON is UTF-8 (RFC 8259), but cJSON copies string bytes as they are, so a name or message
 * echoing a client's invalid bytes would make the whole reply unparseable. Returns NULL when
 * s[0..n) is valid UTF-8, else a new string (length in *out_n) with each invalid byte written
 * as the escape \ufffd (invalid bytes can only be inside JSON strings). */
static char *http_utf8_fix(const char *s, size_t n, size_t *out_n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, bad = 0;
    while (i < n) {
        uint32_t cp;
        size_t l = coding_utf8_decode(p + i, n - i, &cp);
        bad += l == 0;
        i += l ? l : 1;
    }
    if (!bad)
        return NULL;
    char *o = malloc(n + bad * 5 + 1);
    if (!o)
        return NULL;
    size_t k = 0;
    for (i = 0; i < n;) {
        uint32_t cp;
        size_t l = coding_utf8_decode(p + i, n - i, &cp);
        if (l) {
            memcpy(o + k, s + i, l);
            k += l;
            i += l;
        } else {
            memcpy(o + k, "\\ufffd", 6);
            k += 6;
            i++;
        }
    }
    o[k] = 0;
    *out_n = k;
    return o;
}

void http_reply_cjson(struct http_req *r, int status, cJSON *doc)
{
    if (!doc) {
        if (!http_reply_claim(r))
            return;
        r->status = 500;
        http_set_type(r, http_json_type);
        static const char oom[] = "{\"error\":{\"code\":500,\"message\":\"out of memory\"}}";
        http_add_json(r, oom, sizeof(oom) - 1);
        return;
    }
    char *s = r->pretty ? cJSON_Print(doc) : cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    if (!http_reply_claim(r)) {
        free(s);
        return;
    }
    http_set_type(r, http_json_type);
    if (!s) {
        r->status = 500;
        static const char oom[] = "{\"error\":{\"code\":500,\"message\":\"out of memory\"}}";
        http_add_json(r, oom, sizeof(oom) - 1);
        return;
    }
    r->status = status;
    size_t n = strlen(s), fixed_n = 0;
    char *fixed = http_utf8_fix(s, n, &fixed_n);
    if (fixed)
        http_add_json(r, fixed, fixed_n);
    else
        http_add_json(r, s, n);
    free(fixed);
    free(s);
}

/* OpenTSDB's messages whose exception always carries the same details: every
 * HttpJsonSerializer.parse*V1 throws "Missing message content" with this suggestion. */
static const char *http_fixed_details(const char *message)
{
    if (message && !strcmp(message, "Missing message content"))
        return "Supply valid JSON formatted data in the body of your request";
    return NULL;
}

int http_status_of(int rc, int status)
{
    return rc == CT_EUNAVAIL ? 503 : status;
}

/* InfluxDB 1.x's routes (tsd/api_influx.c) answer every error in InfluxDB's shape, whoever
 * replies (auth, the router, the body limit): {"error":"<message>[: <details>]"}, repeated in
 * X-Influxdb-Error except on a 401, as InfluxDB does (its clients print that text). */
static bool http_influx_route(const struct http_req *r)
{
    return r->path && (!strcmp(r->path, "/write") || !strcmp(r->path, "/ping"));
}

void http_reply_error(struct http_req *r, int status, const char *message, const char *details)
{
    if (http_influx_route(r)) {
        /* sized to the texts: an error's text arrives whole, however long */
        const char *m = message ? message : http_status_text(status);
        const char *d = details && *details ? details : "";
        size_t n = strlen(m) + strlen(d) + 3;
        char small[512];
        char *text = n <= sizeof(small) ? small : malloc(n);
        if (!text) {
            text = small; /* out of memory: the text is cut, the status still right */
            n = sizeof(small);
        }
        snprintf(text, n, "%s%s%s", m, *d ? ": " : "", d);
        if (status != 401)
            http_reply_header(r, "X-Influxdb-Error", text);
        cJSON *o = cJSON_CreateObject();
        if (o && !cJSON_AddStringToObject(o, "error", text)) {
            cJSON_Delete(o);
            o = NULL;
        }
        if (text != small)
            free(text);
        http_reply_cjson(r, status, o);
        return;
    }
    if (!details || !*details)
        details = http_fixed_details(message);
    cJSON *doc = cJSON_CreateObject();
    cJSON *e = cJSON_AddObjectToObject(doc, "error");
    if (!e || !cJSON_AddNumberToObject(e, "code", status) ||
        !cJSON_AddStringToObject(e, "message", message ? message : "") ||
        (details && *details && !cJSON_AddStringToObject(e, "details", details))) {
        cJSON_Delete(doc);
        doc = NULL;
    }
    http_reply_cjson(r, status, doc);
}

/* ---- streaming ---------------------------------------------------------------------------- */

/* Monotonic milliseconds. */
static uint64_t http_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Worker: makes room for n more bytes on r's connection and queues b there (invariant 3).
 * Up to HTTP_ANSWER_FREE unsent bytes cost nothing; past that, each byte is charged to the
 * TSD's answer pool (released by the loop as the client reads, or when the connection closes),
 * so a client that does not read costs its own buffer, within the pool, and no worker. Only
 * when the pool is full does the worker wait for the client to read; one that takes less than
 * HTTP_STALL_BYTES in HTTP_STALL_MS has its answer cut: CT_ECLOSED, and the loop closes the
 * connection without sending the rest (http_conn_work_done). Lock order: the bufferevent,
 * then c->mu (as http_conn_park). */
static int http_stream_room_put(struct http_req *r, struct evbuffer *b)
{
    struct http_conn *c = r->conn;
    struct membudget_pool *pool = http_conn_answers(c);
    size_t n = evbuffer_get_length(b);
    size_t ref = SIZE_MAX;
    uint64_t deadline = 0;
    for (int rounds = 0;; rounds++) {
        bufferevent_lock(c->bev);
        size_t out = evbuffer_get_length(bufferevent_get_output(c->bev));
        uint64_t need = out + n > HTTP_ANSWER_FREE ? out + n - HTTP_ANSWER_FREE : 0;
        pthread_mutex_lock(&c->mu);
        bool gone = c->gone;
        uint64_t gen = c->drain_gen;
        bool room = !gone && (need <= c->answer_charged ||
                              membudget_pool_take(pool, need - c->answer_charged));
        if (room && need > c->answer_charged)
            c->answer_charged = need;
        pthread_mutex_unlock(&c->mu);
        int rc = CT_OK;
        if (room && bufferevent_write_buffer(c->bev, b) != 0)
            rc = CT_ECLOSED;
        bufferevent_unlock(c->bev);
        if (gone)
            return CT_ECLOSED;
        if (room)
            return rc;
        /* the pool is full: wait while the client reads at least HTTP_STALL_BYTES a period */
        uint64_t now = http_now_ms();
        if (out + HTTP_STALL_BYTES <= ref || rounds == 0) {
            ref = out;
            deadline = now + HTTP_STALL_MS;
        } else if (now >= deadline) {
            pthread_mutex_lock(&c->mu);
            c->answer_cut = true;
            pthread_mutex_unlock(&c->mu);
            tlog_warn("http: answer to %s cut: the client read less than %u bytes in %u ms with "
                      "%zu bytes unsent and tsd.http.query.answer_buffer_bytes in use",
                      c->peer, HTTP_STALL_BYTES, HTTP_STALL_MS, out);
            return CT_ECLOSED;
        }
        pthread_mutex_lock(&c->mu);
        if (c->drain_gen == gen && !c->gone) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 50 * 1000 * 1000;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&c->cv, &c->mu, &ts);
        }
        pthread_mutex_unlock(&c->mu);
    }
}

static int http_stream_put(struct http_req *r, struct evbuffer *b)
{
    struct http_conn *c = r->conn;
    pthread_mutex_lock(&c->mu);
    bool gone = c->gone;
    pthread_mutex_unlock(&c->mu);
    if (gone) {
        evbuffer_drain(b, evbuffer_get_length(b));
        return CT_ECLOSED;
    }
    if (r->on_worker)
        return http_stream_room_put(r, b);
    /* the loop (a last query answered there: bounded by its budget) never waits */
    if (bufferevent_write_buffer(c->bev, b) != 0)
        return CT_ECLOSED;
    return CT_OK;
}

/* Sends the status line, the headers and what was held, and streams from now on. */
static int http_stream_release(struct http_req *r)
{
    r->stream_held = false;
    struct evbuffer *b = evbuffer_new();
    if (!b) {
        r->stream_ended = true;
        return CT_ENOMEM;
    }
    bool chunked = r->minor >= 1;
    if (!chunked)
        r->keep_alive = false;
    int rc =
        evbuffer_add_printf(b, "HTTP/1.%d %d %s\r\nContent-Type: %s\r\n", r->minor >= 1 ? 1 : 0,
                            r->status, http_status_text(r->status), r->content_type) < 0;
    if (chunked)
        rc |= evbuffer_add_printf(b, "Transfer-Encoding: chunked\r\n") < 0;
    http_req_write_common_headers(r, b);
    rc |= evbuffer_add(b, "\r\n", 2);
    size_t held = evbuffer_get_length(r->reply_body);
    if (r->wire_method == HTTP_HEAD) {
        r->stream_ended = true; /* no body: the rest is dropped */
        evbuffer_drain(r->reply_body, held);
    } else if (held > 0) {
        if (chunked)
            rc |= evbuffer_add_printf(b, "%zx\r\n", held) < 0;
        rc |= evbuffer_add_buffer(b, r->reply_body);
        if (chunked)
            rc |= evbuffer_add(b, "\r\n", 2);
    }
    int out = rc ? CT_ENOMEM : http_stream_put(r, b);
    evbuffer_free(b);
    if (out != CT_OK)
        r->stream_ended = true;
    else if (r->wire_method == HTTP_HEAD)
        http_req_answered(r); /* the head is the whole answer */
    return out;
}

void http_stream_begin(struct http_req *r, int status, const char *content_type)
{
    if (!http_reply_claim(r))
        return;
    r->streaming = true;
    r->stream_held = true;
    r->status = status;
    http_set_type(r, content_type);
    if (r->jsonp && strstr(r->content_type, "json")) {
        r->stream_jsonp = true;
        if (evbuffer_add_printf(r->reply_body, "%s(", r->jsonp) < 0)
            r->status = 500;
    }
}

bool http_stream_retract(struct http_req *r)
{
    if (!r->streaming || !r->stream_held)
        return false;
    evbuffer_drain(r->reply_body, evbuffer_get_length(r->reply_body));
    r->streaming = false;
    r->stream_held = false;
    r->stream_ended = false;
    r->stream_jsonp = false;
    r->replied = false;
    return true;
}

int http_stream_sink_write(void *arg, const char *data, size_t len)
{
    struct http_stream_sink *s = arg;
    if (!s->begun) {
        http_stream_begin(s->r, 200, NULL);
        s->begun = true;
    }
    return http_stream_write(s->r, data, len);
}

int http_stream_write(struct http_req *r, const void *data, size_t len)
{
    if (!r->streaming)
        return CT_EINVAL;
    if (r->stream_ended)
        return r->wire_method == HTTP_HEAD ? CT_OK : CT_ECLOSED;
    if (len == 0)
        return CT_OK;
    if (r->stream_held) {
        if (evbuffer_add(r->reply_body, data, len) != 0)
            return CT_ENOMEM;
        if (evbuffer_get_length(r->reply_body) <= HTTP_STREAM_HOLD)
            return CT_OK;
        return http_stream_release(r);
    }
    struct evbuffer *b = evbuffer_new();
    if (!b)
        return CT_ENOMEM;
    int rc = 0;
    if (r->minor >= 1)
        rc |= evbuffer_add_printf(b, "%zx\r\n", len) < 0;
    rc |= evbuffer_add(b, data, len);
    if (r->minor >= 1)
        rc |= evbuffer_add(b, "\r\n", 2);
    int out = rc ? CT_ENOMEM : http_stream_put(r, b);
    evbuffer_free(b);
    if (out == CT_ECLOSED)
        r->stream_ended = true;
    return out;
}

int http_stream_printf(struct http_req *r, const char *fmt, ...)
{
    char small[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return CT_EINVAL;
    if ((size_t)n < sizeof(small))
        return http_stream_write(r, small, (size_t)n);
    char *big = malloc((size_t)n + 1);
    if (!big)
        return CT_ENOMEM;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    int rc = http_stream_write(r, big, (size_t)n);
    free(big);
    return rc;
}

void http_stream_end(struct http_req *r)
{
    if (!r->streaming || r->stream_ended) {
        r->stream_ended = true;
        return;
    }
    if (r->stream_held) { /* the loop sends it whole (http_conn_finish) */
        if (r->stream_jsonp && evbuffer_add(r->reply_body, ")", 1) != 0)
            r->status = 500;
        r->stream_ended = true;
        return;
    }
    if (r->stream_jsonp && http_stream_write(r, ")", 1) != CT_OK) {
        r->stream_ended = true;
        return;
    }
    bool out = true;
    if (r->minor >= 1) {
        struct evbuffer *b = evbuffer_new();
        out = b && evbuffer_add(b, "0\r\n\r\n", 5) == 0 && http_stream_put(r, b) == CT_OK;
        if (b)
            evbuffer_free(b);
    }
    r->stream_ended = true;
    if (out) /* else the client went away: nothing left to tell it */
        http_req_answered(r);
}
