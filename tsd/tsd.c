/* tsd.c - the daemon's lifecycle: configuration into settings, the store, the listener that
 * sniffs each connection's first byte (docs/opentsdb-compat.md, "One port, two protocols": 'A'..'Z'
 * -> HTTP, anything else -> telnet), the worker pool, signals, and the orderly shutdown.
 *
 * Shutdown (SIGTERM, SIGINT, diediedie): (1) stop accepting; (2) let every connection answer
 * what it already received, then close it (busy HTTP requests finish first); (3) submit the
 * partly filled telnet batch and wait until every batch is written; (4) leave the loop, stop the
 * worker pool and the writers, close the layout and the store. A second signal, or 30 s without
 * progress, forces the remaining connections closed.
 * Everything here runs on the loop thread except tsd_post_done (any thread). */
#include "tsd/tsd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "query/qpool.h"
#include "storage/clock.h"
#include "storage/wc.h"
#include "tsd/auth.h"
#include "tsd/conf.h"
#include "tsd/http_int.h"
#include "tsd/ingest.h"
#include "tsd/membudget.h"
#include "tsd/proto_graphite.h"
#include "tsd/store.h"
#include "tsd/tlog.h"
#include "tsd/tsd_int.h"
#include "tsd/tstats.h"
#include "tsd/workpool.h"

#define TSD_SNIFF_TIMEOUT_S   60
#define TSD_SHUTDOWN_GRACE_MS 30000
/* After this long in shutdown, backend calls still in flight are cancelled (wc_interrupt): a
 * stalled remote backend never holds the TSD, and what it was writing is failed, not acked. */
#define TSD_BACKEND_GRACE_MS 2000
#define TSD_LAST_LOOP_OFF_MS 10000 /* see tsd_last_loop_overrun */

const struct conf *tsd_conf(const struct tsd *t)
{
    return t->conf;
}
struct wc_store *tsd_store(struct tsd *t)
{
    return t->store;
}
struct tsdb *tsd_tsdb(struct tsd *t)
{
    return t->tsdb;
}
struct head *tsd_head(struct tsd *t)
{
    return t->tstore ? tsdstore_head(t->tstore) : NULL;
}
struct qpool *tsd_qpool(struct tsd *t)
{
    return t->qpool;
}
const char *tsd_hostname(const struct tsd *t)
{
    return t->hostname;
}
int64_t tsd_start_ms(const struct tsd *t)
{
    return t->start_ms;
}
const char *tsd_status(const struct tsd *t)
{
    switch (t->state) {
    case TSD_STARTUP:
        return "startup";
    case TSD_OK:
        return "ok";
    default:
        return "shutting-down";
    }
}
bool tsd_last_on_loop(const struct tsd *t, int64_t now_ms)
{
    return t->last_on_loop && now_ms >= t->last_loop_off_until_ms;
}
uint64_t tsd_last_loop_ns(const struct tsd *t)
{
    return t->last_loop_ns;
}
void tsd_last_loop_overrun(struct tsd *t, int64_t now_ms)
{
    t->last_loop_off_until_ms = now_ms + TSD_LAST_LOOP_OFF_MS;
}
void tsd_drop_caches(struct tsd *t)
{
    tsdstore_drop_caches(t->tstore);
}

/* ---- connections ----------------------------------------------------------------------------- */

struct tsd_sniff {
    struct tsd *t;
    struct event *ev;
    int fd;
    char peer[64];
};

void tsd_conn_closed(struct tsd *t)
{
    t->nconns--;
    tstats_sub(TSTATS_CONN_OPEN, 1);
    if (t->state == TSD_SHUTTING_DOWN)
        tsd_ingest_idle_check(t);
}

/* How long a connection may stay silent before its first byte: TSD_SNIFF_TIMEOUT_S, or
 * tsd.core.socket.timeout when that is shorter (a client that never speaks is idle too). */
static struct timeval tsd_sniff_timeout(const struct tsd *t)
{
    struct timeval tv = {TSD_SNIFF_TIMEOUT_S, 0};
    if (t->socket_timeout_s > 0 && t->socket_timeout_s < TSD_SNIFF_TIMEOUT_S)
        tv.tv_sec = (time_t)t->socket_timeout_s;
    return tv;
}

static void tsd_sniff_cb(evutil_socket_t fd, short what, void *arg)
{
    struct tsd_sniff *s = arg;
    struct tsd *t = s->t;
    unsigned char b;
    ssize_t n = (what & EV_TIMEOUT) ? 0 : recv(fd, &b, 1, MSG_PEEK);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        struct timeval tv = tsd_sniff_timeout(t);
        event_add(s->ev, &tv);
        return;
    }
    event_free(s->ev);
    if (n <= 0 || t->state == TSD_SHUTTING_DOWN) {
        close(fd);
        free(s);
        tsd_conn_closed(t);
        return;
    }
    struct ct_err err = {0};
    int rc = (b >= 'A' && b <= 'Z') ? http_conn_start(t, fd, s->peer, &err)
                                    : telnet_conn_start(t, fd, s->peer, false, &err);
    if (rc != CT_OK) {
        tlog_warn("closing connection from %s: %s", s->peer, err.msg);
        close(fd);
        tsd_conn_closed(t);
    }
    free(s);
}

static void tsd_accept(struct tsd *t, evutil_socket_t fd, struct sockaddr *sa, bool graphite)
{
    if (t->connections_limit > 0 && (int64_t)t->nconns >= t->connections_limit) {
        tstats_add(TSTATS_CONN_REJECTED, 1);
        close(fd);
        return;
    }
    struct tsd_sniff *s = calloc(1, sizeof(*s));
    if (!s) {
        close(fd);
        return;
    }
    s->t = t;
    s->fd = fd;
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa->sa_family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        port = ntohs(in->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        port = ntohs(in6->sin6_port);
    }
    snprintf(s->peer, sizeof(s->peer), "%s:%d", host, port);
    int one = 1;
    if (conf_get_bool(t->conf, "tsd.network.tcp_no_delay"))
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (conf_get_bool(t->conf, "tsd.network.keep_alive"))
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    if (graphite) { /* nothing to sniff: a telnet connection taking Graphite lines only */
        t->nconns++;
        tstats_add(TSTATS_CONN_OPEN, 1);
        struct ct_err err = {0};
        if (telnet_conn_start(t, fd, s->peer, true, &err) != CT_OK) {
            tlog_warn("closing connection from %s: %s", s->peer, err.msg);
            close(fd);
            tsd_conn_closed(t);
        }
        free(s);
        return;
    }
    s->ev = event_new(t->base, fd, EV_READ, tsd_sniff_cb, s);
    if (!s->ev) {
        close(fd);
        free(s);
        return;
    }
    t->nconns++;
    tstats_add(TSTATS_CONN_OPEN, 1);
    struct timeval tv = tsd_sniff_timeout(t);
    event_add(s->ev, &tv);
}

static void tsd_accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                          int salen, void *arg)
{
    (void)l;
    (void)salen;
    tsd_accept(arg, fd, sa, false);
}

/* tsd.graphite.port: the same connections (limits, timeouts, backpressure), Graphite only. */
static void tsd_accept_graphite_cb(struct evconnlistener *l, evutil_socket_t fd,
                                   struct sockaddr *sa, int salen, void *arg)
{
    (void)l;
    (void)salen;
    tsd_accept(arg, fd, sa, true);
}

static void tsd_accept_error_cb(struct evconnlistener *l, void *arg)
{
    (void)l;
    (void)arg;
    int e = EVUTIL_SOCKET_ERROR();
    tlog_warn("accept failed: %s", evutil_socket_error_to_string(e));
}

/* ---- deferred work completions --------------------------------------------------------------- */

void tsd_post_done(struct tsd *t, struct http_req *r)
{
    pthread_mutex_lock(&t->done_mu);
    r->done_next = NULL;
    if (t->done_tail)
        t->done_tail->done_next = r;
    else
        t->done_head = r;
    t->done_tail = r;
    pthread_mutex_unlock(&t->done_mu);
    event_active(t->done_ev, EV_READ, 0);
}

static void tsd_done_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tsd *t = arg;
    pthread_mutex_lock(&t->done_mu);
    struct http_req *r = t->done_head;
    t->done_head = t->done_tail = NULL;
    pthread_mutex_unlock(&t->done_mu);
    while (r) {
        struct http_req *next = r->done_next;
        http_conn_work_done(r);
        r = next;
    }
}

/* ---- shutdown ------------------------------------------------------------------------------- */

void tsd_ingest_idle_check(struct tsd *t)
{
    if (t->state != TSD_SHUTTING_DOWN)
        return;
    if (t->nconns > 0)
        return;
    telnet_flush(t);
    if (!telnet_ingest_idle(t))
        return;
    event_base_loopbreak(t->base);
}

static void tsd_drain_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tsd *t = arg;
    telnet_flush(t);
    if (!t->backend_interrupted && clock_now_ms() - t->shutdown_started_ms > TSD_BACKEND_GRACE_MS &&
        tsdstore_request_ms(t->tstore) > 0) {
        tlog_warn("shutdown: still busy after %d ms; cancelling the storage backend's calls in "
                  "flight (their writes fail)",
                  TSD_BACKEND_GRACE_MS);
        t->backend_interrupted = true;
        wc_interrupt(t->store);
    }
    if (clock_now_ms() - t->shutdown_started_ms > TSD_SHUTDOWN_GRACE_MS) {
        if (!t->grace_warned) /* one line per shutdown, not one per 50 ms tick */
            tlog_warn("shutdown: %zu connections still open after %d s; leaving them", t->nconns,
                      TSD_SHUTDOWN_GRACE_MS / 1000);
        t->grace_warned = true;
        if (telnet_ingest_idle(t)) {
            event_base_loopbreak(t->base);
            return;
        }
    }
    tsd_ingest_idle_check(t);
}

static void tsd_begin_shutdown(struct tsd *t)
{
    if (t->state == TSD_SHUTTING_DOWN)
        return;
    tlog_info("shutting down: no new connections; answering, writing and closing");
    t->state = TSD_SHUTTING_DOWN;
    t->shutdown_started_ms = clock_now_ms();
    if (t->listener)
        evconnlistener_disable(t->listener);
    if (t->graphite_listener)
        evconnlistener_disable(t->graphite_listener);
    telnet_close_all(t);
    http_conn_close_all(t);
    telnet_flush(t);
    struct timeval tv = {0, 50 * 1000};
    event_add(t->drain_ev, &tv);
    tsd_ingest_idle_check(t);
}

static void tsd_shutdown_ev_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    tsd_begin_shutdown(arg);
}

void tsd_request_shutdown(struct tsd *t)
{
    event_active(t->shutdown_ev, EV_READ, 0);
}

static void tsd_signal_cb(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    struct tsd *t = arg;
    if (t->state == TSD_SHUTTING_DOWN) {
        tlog_warn("second signal %d: stopping now", (int)sig);
        telnet_flush(t);
        if (telnet_ingest_idle(t))
            event_base_loopbreak(t->base);
        else
            t->shutdown_started_ms = 0; /* the drain timer ends the loop once written */
        return;
    }
    tlog_info("received signal %d", (int)sig);
    tsd_begin_shutdown(t);
}

/* ---- stats ---------------------------------------------------------------------------------- */

void tsd_collect_stats(struct tsd *t, tsd_stat_fn fn, void *arg)
{
    int64_t now = clock_now_ms() / 1000;
    char host[300], tags[400], v[32];
    snprintf(host, sizeof(host), "host=%s", t->hostname);
#define TSD_STAT(metric, value, extra)                                                             \
    do {                                                                                           \
        snprintf(v, sizeof(v), "%llu", (unsigned long long)(value));                               \
        snprintf(tags, sizeof(tags), "%s%s%s", host, *(extra) ? " " : "", extra);                  \
        fn(arg, metric, now, v, tags);                                                             \
    } while (0)
    TSD_STAT("tsd.uptime", (uint64_t)(clock_now_ms() - t->start_ms) / 1000, "");
    TSD_STAT("tsd.connectionmgr.connections", tstats_get(TSTATS_CONN_OPEN), "type=open");
    TSD_STAT("tsd.connectionmgr.connections",
             tstats_get(TSTATS_CONN_TELNET) + tstats_get(TSTATS_CONN_HTTP), "type=total");
    TSD_STAT("tsd.connectionmgr.connections", tstats_get(TSTATS_CONN_TELNET), "type=telnet");
    TSD_STAT("tsd.connectionmgr.connections", tstats_get(TSTATS_CONN_HTTP), "type=http");
    TSD_STAT("tsd.connectionmgr.exceptions", tstats_get(TSTATS_CONN_REJECTED), "type=rejected");
    TSD_STAT("tsd.connectionmgr.exceptions", tstats_get(TSTATS_CONN_TIMEOUT), "type=timeout");
    /* ctsdb: query answer bytes held for slow readers (tsd/http.c, the answer pool) */
    TSD_STAT("tsd.http.query.answer_buffer_bytes", membudget_pool_used(&t->answers), "");
    TSD_STAT("tsd.rpc.received", tstats_get(TSTATS_RPC_PUT), "type=put");
    TSD_STAT("tsd.rpc.received", tstats_get(TSTATS_RPC_OTHER_TELNET), "type=telnet");
    TSD_STAT("tsd.rpc.received", tstats_get(TSTATS_HTTP_REQUESTS), "type=http");
    TSD_STAT("tsd.rpc.received", tstats_get(TSTATS_HTTP_PUT), "type=http_put");
    /* RpcHandler.createQueryInstance counts a request under /plugin/ as http_plugin whether
     * or not a plugin serves it; ctsdb has no HTTP RPC plugins and counts such a request
     * (a 404) under type=http, so this is OpenTSDB's figure with nothing plugged in, 0 */
    TSD_STAT("tsd.rpc.received", 0, "type=http_plugin");
    /* RpcHandler counts exceptions escaping a handler (messageReceived, handleHttpQuery's
     * catch-all; never a BadRequestException): ctsdb's handlers answer each failure
     * themselves (5xx ones are in tsd.http.errors type=5xx), so nothing escapes: 0 */
    TSD_STAT("tsd.rpc.exceptions", 0, "");
    TSD_STAT("tsd.rpc.errors", tstats_get(TSTATS_RPC_UNKNOWN), "type=unknown_commands");
    TSD_STAT("tsd.rpc.errors", tstats_get(TSTATS_ILLEGAL_ARGUMENTS), "type=illegal_arguments");
    TSD_STAT("tsd.rpc.errors", tstats_get(TSTATS_INVALID_VALUES), "type=invalid_values");
    TSD_STAT("tsd.rpc.errors", tstats_get(TSTATS_UNKNOWN_METRICS), "type=unknown_metrics");
    TSD_STAT("tsd.rpc.errors", tstats_get(TSTATS_LINES_TOO_LONG), "type=lines_too_long");
    TSD_STAT("tsd.graphite.lines", tstats_get(TSTATS_GRAPHITE_LINES), "type=all");
    TSD_STAT("tsd.graphite.lines", tstats_get(TSTATS_GRAPHITE_REJECTED), "type=rejected");
    TSD_STAT("tsd.http.errors", tstats_get(TSTATS_HTTP_4XX), "type=4xx");
    TSD_STAT("tsd.http.errors", tstats_get(TSTATS_HTTP_5XX), "type=5xx");
    /* OpenTSDB's HTTP latency percentiles (ms, its Histogram's bucket bounds), then ctsdb's
     * finer ones in us under a name of its own */
    static const int pcts[] = {50, 75, 90, 95};
    uint64_t ms[4], us[4];
    lathist_percentiles(&tstats_http_latency_ms, pcts, ms, 4);
    lathist_percentiles(&tstats_http_latency_us, pcts, us, 4);
    char name[64];
    for (size_t i = 0; i < 4; i++) {
        snprintf(name, sizeof(name), "tsd.http.latency_%dpct", pcts[i]);
        TSD_STAT(name, ms[i], "type=all");
    }
    for (size_t i = 0; i < 4; i++) {
        snprintf(name, sizeof(name), "tsd.http.latency_us_%dpct", pcts[i]);
        TSD_STAT(name, us[i], "type=all");
    }
    /* QueryRpc.collectStats: /api/query outcomes (api_query.c (4) says which is which) */
    TSD_STAT("tsd.http.query.invalid_requests", tstats_get(TSTATS_QUERY_INVALID), "");
    TSD_STAT("tsd.http.query.exceptions", tstats_get(TSTATS_QUERY_EXCEPTIONS), "");
    TSD_STAT("tsd.http.query.success", tstats_get(TSTATS_QUERY_SUCCESS), "");
    TSD_STAT("tsd.datapoints.added", tstats_get(TSTATS_POINTS_ADDED), "type=all");
    TSD_STAT("tsd.datapoints.written", tstats_get(TSTATS_POINTS_WRITTEN), "");
    TSD_STAT("tsd.datapoints.failed", tstats_get(TSTATS_POINTS_FAILED), "");
    TSD_STAT("tsd.storage.errors", tstats_get(TSTATS_STORAGE_ERRORS), "");
    TSD_STAT("tsd.ingest.batches", tstats_get(TSTATS_BATCHES_WRITTEN), "");
    TSD_STAT("tsd.ingest.write_ms", tstats_get(TSTATS_WRITE_NS) / 1000000, "");
    TSD_STAT("tsd.ingest.backpressure", tstats_get(TSTATS_BACKPRESSURE), "");
    TSD_STAT("tsd.query.last", tstats_get(TSTATS_LAST_LOOP), "type=loop");
    TSD_STAT("tsd.query.last", tstats_get(TSTATS_LAST_LOOP_OVER), "type=over_loop_budget");
    TSD_STAT("tsd.query.last", tstats_get(TSTATS_LAST_LOOP_WAITS), "type=loop_waits");
    TSD_STAT("tsd.query.on_loop", tstats_get(TSTATS_QUERY_LOOP), "type=answered");
    TSD_STAT("tsd.query.on_loop", tstats_get(TSTATS_QUERY_LOOP_OVER), "type=over_loop_budget");
    TSD_STAT("tsd.query.scans", tstats_get(TSTATS_QUERY_PARALLEL), "type=parallel");
    TSD_STAT("tsd.query.scans", tstats_get(TSTATS_QUERY_BUSY_ONE), "type=one_thread_cpus_busy");
#undef TSD_STAT
    tsdstore_stats(t->tstore, t->hostname, fn, arg, now);
}

/* ---- settings -------------------------------------------------------------------------------- */

static void tsd_warn_config(void *arg, const char *msg)
{
    (void)arg;
    tlog_warn("%s", msg);
}

/* OpenTSDB's check of tsd.http.request.cors_headers: header names of letters, digits, '_', '.'
 * and '-', separated by commas each followed by optional whitespace. */
static bool tsd_cors_headers_ok(const char *s)
{
    for (;;) {
        size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-");
        if (n == 0)
            return false;
        s += n;
        if (*s == '\0')
            return true;
        if (*s++ != ',')
            return false;
        s += strspn(s, " \t\r\n\f\v");
    }
}

static int tsd_settings(struct tsd *t, struct ct_err *err)
{
    const struct conf *c = t->conf;
    snprintf(t->special_chars, sizeof(t->special_chars), "%s",
             conf_get_str(c, "tsd.core.tag.allow_specialchars"));
    t->rules.max_tags = (int)conf_get_int(c, "tsd.storage.max_tags");
    t->rules.special_chars = t->special_chars;
    t->enable_chunked = conf_get_bool(c, "tsd.http.request.enable_chunked");
    t->max_chunk = (size_t)conf_get_int(c, "tsd.http.request.max_chunk");
    t->max_body = (size_t)conf_get_int(c, "tsd.http.request.max_body");
    t->max_header = (size_t)conf_get_int(c, "tsd.http.request.max_header");
    bool limited = conf_get_int(c, "tsd.core.memory_limit_bytes") > 0;
    t->http_read_high = limited ? TSD_HTTP_READ_HIGH_LIMITED : TSD_HTTP_READ_HIGH;
    t->http_out_high = limited ? TSD_HTTP_OUT_HIGH_LIMITED : TSD_HTTP_OUT_HIGH;
    t->cors_headers = conf_get_str(c, "tsd.http.request.cors_headers");
    t->static_root = conf_get_str(c, "tsd.http.staticroot");
    t->return_errors = conf_get_bool(c, "tsd.rpc.telnet.return_errors");
    t->no_diediedie = conf_get_bool(c, "tsd.no_diediedie");
    t->read_only = !strcmp(conf_get_str(c, "tsd.mode"), "ro");
    t->enable_api = conf_get_bool(c, "tsd.core.enable_api");
    t->enable_ui = conf_get_bool(c, "tsd.core.enable_ui");
    t->socket_timeout_s = conf_get_int(c, "tsd.core.socket.timeout");
    t->http_write_timeout_s = conf_get_int(c, "tsd.http.response.write_timeout");
    membudget_pool_init(&t->answers,
                        (uint64_t)conf_get_int(c, "tsd.http.query.answer_buffer_bytes"));
    t->connections_limit = conf_get_int(c, "tsd.core.connections.limit");
    t->last_on_loop = conf_get_bool(c, "tsd.query.last.on_loop") &&
                      strcmp(conf_get_str(c, "tsd.storage.backend"), "bigtable") != 0;
    t->last_loop_ns = (uint64_t)conf_get_int(c, "tsd.query.last.loop_us") * 1000;
    t->query_on_loop = conf_get_bool(c, "tsd.query.on_loop") &&
                       strcmp(conf_get_str(c, "tsd.storage.backend"), "bigtable") != 0;
    t->query_loop_ns = (uint64_t)conf_get_int(c, "tsd.query.loop_us") * 1000;
    conf_report_unsupported(c, tsd_warn_config, NULL);
    /* CORS list: comma-separated, case-insensitive, or "*" alone */
    const char *cd = conf_get_str(c, "tsd.http.request.cors_domains");
    size_t n = 0;
    bool star = false, other = false;
    for (const char *p = cd; *p; p++) {
        if (*p == ' ' || *p == '\t')
            continue;
        if (n + 1 >= sizeof(t->cors_domains))
            return ct_err_set(err, CT_EINVAL, "tsd.http.request.cors_domains is too long");
        t->cors_domains[n++] = *p;
    }
    t->cors_domains[n] = '\0';
    for (char *tok = t->cors_domains; *tok;) {
        char *comma = strchr(tok, ',');
        size_t l = comma ? (size_t)(comma - tok) : strlen(tok);
        if (l == 1 && tok[0] == '*')
            star = true;
        else if (l > 0)
            other = true;
        if (!comma)
            break;
        tok = comma + 1;
    }
    if (star && other)
        return ct_err_set(err, CT_EINVAL,
                          "tsd.http.request.cors_domains: '*' cannot be mixed with domain names");
    t->cors_enabled = star || other;
    t->cors_any = star;
    if (!tsd_cors_headers_ok(t->cors_headers)) /* it is sent as a header's value */
        return ct_err_set(err, CT_EINVAL,
                          "tsd.http.request.cors_headers must be a list of validly-formed "
                          "HTTP header names (letters, digits, '_', '.', '-', comma-separated)");
    return CT_OK;
}

/* ---- run ------------------------------------------------------------------------------------ */

/* Listens on tsd.network.bind:port with cb; *out the listener, addr its address as text. */
static int tsd_listen(struct tsd *t, int64_t port, evconnlistener_cb cb,
                      struct evconnlistener **out, char *addr, size_t addr_size, struct ct_err *err)
{
    const char *bind = conf_get_str(t->conf, "tsd.network.bind");
    char portstr[16];
    snprintf(portstr, sizeof(portstr), "%lld", (long long)port);
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int gai = getaddrinfo(*bind ? bind : NULL, portstr, &hints, &ai);
    if (gai != 0)
        return ct_err_set(err, CT_EINVAL, "cannot resolve tsd.network.bind '%s': %s", bind,
                          gai_strerror(gai));
    unsigned flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC;
    if (conf_get_bool(t->conf, "tsd.network.reuse_address"))
        flags |= LEV_OPT_REUSEABLE;
    *out = evconnlistener_new_bind(t->base, cb, t, flags,
                                   (int)conf_get_int(t->conf, "tsd.network.backlog"), ai->ai_addr,
                                   (int)ai->ai_addrlen);
    int e = errno;
    freeaddrinfo(ai);
    if (!*out)
        return ct_err_errno(err, CT_EIO, e, "cannot listen on %s:%lld", bind, (long long)port);
    evconnlistener_set_error_cb(*out, tsd_accept_error_cb);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    int fd = evconnlistener_get_fd(*out);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
        return ct_err_errno(err, CT_EIO, errno, "getsockname on the listening socket");
    char host[INET6_ADDRSTRLEN] = "?";
    int p = 0;
    if (ss.ss_family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        p = ntohs(in->sin_port);
        snprintf(addr, addr_size, "%s:%d", host, p);
    } else {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        p = ntohs(in6->sin6_port);
        snprintf(addr, addr_size, "[%s]:%d", host, p);
    }
    return CT_OK;
}

int tsd_run(const struct conf *c, struct ct_err *err)
{
    struct tsd *t = calloc(1, sizeof(*t));
    if (!t)
        return ct_err_set(err, CT_ENOMEM, "out of memory starting the TSD");
    int rc = CT_OK;
    bool telnet_init = false;
    t->conf = c;
    t->start_ms = clock_now_ms();
    pthread_mutex_init(&t->done_mu, NULL);
    if (gethostname(t->hostname, sizeof(t->hostname) - 1) != 0)
        snprintf(t->hostname, sizeof(t->hostname), "localhost");
    rc = tsd_settings(t, err);
    if (rc != CT_OK)
        goto out;
    rc = auth_new(c, &t->auth, err);
    if (rc != CT_OK)
        goto out;
    /* Graphite lines on telnet and/or on their own port (docs/protocols.md) */
    t->graphite_telnet = conf_get_bool(c, "tsd.graphite.enable");
    if (t->graphite_telnet || conf_get_int(c, "tsd.graphite.port") >= 0) {
        char gmsg[256];
        t->graphite = graphite_map_new(conf_get_str(c, "tsd.graphite.templates"),
                                       conf_get_str(c, "tsd.graphite.default_tag"), gmsg,
                                       sizeof(gmsg));
        if (!t->graphite) {
            rc = ct_err_set(err, CT_EINVAL, "tsd.graphite.templates: %s", gmsg);
            goto out;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    /* thousands of connections: raise the descriptor limit to what the system allows */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            tlog_warn("cannot raise the open-file limit: %s", strerror(errno));
    }
    if (evthread_use_pthreads() != 0) {
        rc = ct_err_set(err, CT_EIO, "libevent: cannot enable threading");
        goto out;
    }
    t->base = event_base_new();
    if (!t->base) {
        rc = ct_err_set(err, CT_EIO, "libevent: cannot create the event base");
        goto out;
    }
    rc = tsdstore_open(c, t->read_only ? TSDSTORE_READ_ONLY : TSDSTORE_CREATE, &t->tstore,
                       err);
    if (rc != CT_OK)
        goto out;
    t->store = tsdstore_wc(t->tstore);
    t->tsdb = tsdstore_tsdb(t->tstore);
    rc = workpool_new((int)conf_get_int(c, "tsd.query.threads"), 4096, "ct-worker", &t->pool,
                      err);
    if (rc != CT_OK)
        goto out;
    /* HTTP writes (/api/put, remote write, InfluxDB) wait on their worker until their points
     * are in the log: on the query workers (one per CPU) two requests at a time reached the
     * writer on a 2-CPU machine, and queries waited behind puts. 4 per CPU; one per CPU under
     * a memory limit, as before, since each keeps a request's buffers (remote write's scratch)
     * that the budget does not count per worker */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int ingest_workers = conf_get_int(c, "tsd.core.memory_limit_bytes") > 0
                             ? 0
                             : TSD_INGEST_WORKERS_PER_CPU * (int)(ncpu > 0 ? ncpu : 2);
    rc = workpool_new(ingest_workers, 4096, "ct-ingest", &t->ingest_pool, err);
    if (rc != CT_OK)
        goto out;
    struct qpool_options qo;
    qpool_options_system(&qo);
    rc = qpool_new(&qo, &t->qpool, err);
    if (rc != CT_OK)
        goto out;
    rc = api_limits_open(t, err);
    if (rc != CT_OK)
        goto out;
    struct ingest_options io;
    ingest_options_init(&io);
    io.writers = (int)conf_get_int(c, "tsd.storage.write_threads");
    if (conf_get_int(c, "tsd.core.memory_limit_bytes") > 0)
        io.batches = INGEST_BATCHES_BOUNDED;
    rc = ingest_new(&io, tsdstore_write, t->tstore, &t->ingest, err);
    if (rc != CT_OK)
        goto out;
    rc = api_prom_open(t, err);
    if (rc != CT_OK)
        goto out;
    rc = tsd_rollup_start(t, err);
    if (rc != CT_OK)
        goto out;
    rc = telnet_ingest_init(t, err);
    if (rc != CT_OK)
        goto out;
    telnet_init = true;
    t->done_ev = event_new(t->base, -1, 0, tsd_done_cb, t);
    t->shutdown_ev = event_new(t->base, -1, 0, tsd_shutdown_ev_cb, t);
    t->drain_ev = event_new(t->base, -1, EV_PERSIST, tsd_drain_cb, t);
    t->sig_term = evsignal_new(t->base, SIGTERM, tsd_signal_cb, t);
    t->sig_int = evsignal_new(t->base, SIGINT, tsd_signal_cb, t);
    if (!t->done_ev || !t->shutdown_ev || !t->drain_ev || !t->sig_term || !t->sig_int ||
        event_add(t->sig_term, NULL) != 0 || event_add(t->sig_int, NULL) != 0) {
        rc = ct_err_set(err, CT_ENOMEM, "libevent: cannot create the daemon's events");
        goto out;
    }
    rc = tsd_listen(t, conf_get_int(c, "tsd.network.port"), tsd_accept_cb, &t->listener,
                    t->listen_addr, sizeof(t->listen_addr), err);
    if (rc != CT_OK)
        goto out;
    if (conf_get_int(c, "tsd.graphite.port") >= 0) {
        rc = tsd_listen(t, conf_get_int(c, "tsd.graphite.port"), tsd_accept_graphite_cb,
                        &t->graphite_listener, t->graphite_addr, sizeof(t->graphite_addr), err);
        if (rc != CT_OK) {
            ct_err_prefix(err, "tsd.graphite.port");
            goto out;
        }
    }
    t->state = TSD_OK;
    char auth_line[256];
    auth_describe(t->auth, auth_line, sizeof(auth_line));
    tlog_info("security: %s", auth_line);
    {
        struct wc_options wo;
        char where[768];
        tsdstore_wc_options(c, &wo);
        tsdstore_describe(&wo, where, sizeof(where));
        tlog_info("ctsdb %s TSD listening on %s (telnet and HTTP), data in %s", CTSDB_VERSION,
                  t->listen_addr, where);
        if (t->graphite_listener)
            tlog_info("Graphite plaintext port on %s (tsd.graphite.port)", t->graphite_addr);
    }
    if (event_base_dispatch(t->base) < 0)
        rc = ct_err_set(err, CT_EIO, "libevent: the event loop failed");
    t->state = TSD_SHUTTING_DOWN;
out:
    if (t->listener)
        evconnlistener_free(t->listener);
    if (t->graphite_listener)
        evconnlistener_free(t->graphite_listener);
    /* Workers first (an /api/put in flight waits for the writers), then the writers, which
     * write everything submitted; the loop is gone, so their completions go unread. */
    workpool_free(t->pool);
    workpool_free(t->ingest_pool);
    qpool_free(t->qpool); /* after the workers: no query runs */
    api_limits_close(t);
    ingest_free(t->ingest);
    api_prom_close(t); /* after the workers */
    tsd_rollup_stop(t); /* after the workers (no /api/rollup or query runs) */
    if (telnet_init)
        telnet_ingest_destroy(t);
    tsdstore_close(t->tstore);
    if (t->done_ev)
        event_free(t->done_ev);
    if (t->shutdown_ev)
        event_free(t->shutdown_ev);
    if (t->drain_ev)
        event_free(t->drain_ev);
    if (t->sig_term)
        event_free(t->sig_term);
    if (t->sig_int)
        event_free(t->sig_int);
    /* Connections still open after the grace period are closed with the base. */
    http_conn_free_all(t);
    telnet_free_all(t);
    if (t->base)
        event_base_free(t->base);
    free(t->tconns);
    free(t->tconn_free);
    pthread_mutex_destroy(&t->done_mu);
    auth_free(t->auth);
    graphite_map_free(t->graphite);
    if (rc == CT_OK)
        tlog_info("shutdown complete");
    free(t);
    return rc;
}
