/* api_influx.c - the InfluxDB 1.x HTTP write door (docs/protocols.md, "InfluxDB line
 * protocol"): POST /write?db=..&precision=.. with line-protocol lines, and /ping (GET, HEAD:
 * 204 with the X-Influxdb-Version header InfluxDB clients read).
 *
 * Every field of every line becomes one datapoint (tsd/proto_influx.h: metric = measurement +
 * tsd.influx.metric_separator + field key, the line's tags, or tsd.influx.default_tag when it
 * has none) and goes through the same path as /api/put: put_check_point's checks, the ingest
 * pipeline (waiting for a free batch is the backpressure), and the reply only once every
 * accepted point is in the write-ahead log. Auth is the router's (/write is a write route).
 *
 * Replies, as InfluxDB 1.x: 204 when every line was written; 400 {"error":"unable to parse
 * '<line>': <reason>"} when lines were malformed (the other lines are still written, as
 * InfluxDB does); 400 {"error":"partial write: <reason> dropped=N"} when points parsed but the
 * store's checks refused N of them; 400 for a missing db or an unknown precision; 500 for a
 * store failure, 503 when every store failure was a backend that did not answer; 503 when the
 * TSD cannot take the request. The errors others give on these
 * routes (auth's 401/403, the router's 405, the HTTP layer's 413) take the same shape in
 * http_reply_error (tsd/http.c).
 * The worker does not wait for its batches: it suspends the request (http_req_suspend) before the
 * first is submitted, and the last reference of the job answers it (http_req_resume): the writer
 * thread in the done callback of the last batch, or the worker when none was still being written.
 * Invariants: (1) job->refs = 1 for the worker until it has submitted every batch + 1 per
 * submitted batch not yet done; the last one answers the request and frees the job; (2) the body
 * is parsed in a private copy (the parser unescapes in place); (3) after http_req_suspend the
 * worker does not touch the request.
 * Locking: job->mu guards counts, the first error and refs. */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tsd/build_info.h"
#include "tsd/conf.h"
#include "tsd/http.h"
#include "tsd/ingest.h"
#include "tsd/proto_influx.h"
#include "tsd/routes.h"
#include "tsd/tsd_int.h"
#include "tsd/tstats.h"

/* The version /ping and every /write reply announce (InfluxDB clients print it). */
#define API_INFLUX_VERSION "1.8.10-ctsdb"

struct api_influx_job {
    pthread_mutex_t mu;
    int refs;
    size_t dropped;    /* points the store or the checks refused */
    char *first;       /* the first refusal's reason, whole (NULL: none or out of memory) */
    bool store_failed; /* a store error (500, or 503: see unavailable), not a refusal */
    bool store_other;  /* a store error other than an unavailable backend (CT_EUNAVAIL) */
    struct ingest *ingest;
    /* set by the worker before it drops its reference: the request (suspended) and the lines
     * that did not parse */
    struct http_req *r;
    size_t bad_lines;
    char *parse_err; /* InfluxDB's parse error text (NULL: out of memory) */
};

static void api_influx_reply(struct http_req *r, int status, const char *error);

/* Answers the request of a job whose every point is written or failed (refs 0), on the thread
 * that dropped the last reference (the writer after the last batch, or the worker), and sends
 * the reply (http_req_resume). */
static void api_influx_job_reply(struct api_influx_job *job)
{
    struct http_req *r = job->r;
    const char *first = job->first ? job->first : "";
    char *m = NULL;
    if (job->bad_lines > 0) {
        api_influx_reply(r, 400, job->parse_err ? job->parse_err : "unable to parse");
    } else if (job->store_failed) {
        /* 503 when every store failure was a backend that did not answer: the body may be
         * sent again as it is (as /api/put answers, tsd/api_put.c) */
        if (asprintf(&m, "write failed: %s", first) < 0)
            m = NULL;
        api_influx_reply(r, job->store_other ? 500 : 503, m ? m : "write failed");
    } else if (job->dropped > 0) {
        if (asprintf(&m, "partial write: %s dropped=%zu", first, job->dropped) < 0)
            m = NULL;
        api_influx_reply(r, 400, m ? m : "partial write");
    } else {
        api_influx_reply(r, 204, NULL);
    }
    free(m);
    http_req_resume(r);
}

/* Drops a reference (invariant 1); the last one answers the request and frees the job. */
static void api_influx_job_unref(struct api_influx_job *job)
{
    pthread_mutex_lock(&job->mu);
    bool last = --job->refs == 0;
    pthread_mutex_unlock(&job->mu);
    if (!last)
        return;
    /* every other reference was dropped under mu: what they wrote is visible here */
    api_influx_job_reply(job);
    pthread_mutex_destroy(&job->mu);
    free(job->first);
    free(job->parse_err);
    free(job);
}

/* REQUIRES: job->mu held. */
static void api_influx_drop(struct api_influx_job *job, const char *why)
{
    if (job->dropped++ == 0)
        job->first = strdup(why);
}

static void api_influx_batch_done(void *arg, struct ingest_batch *b)
{
    struct api_influx_job *job = arg;
    size_t n = ingest_batch_count(b);
    pthread_mutex_lock(&job->mu);
    for (size_t i = 0; i < n; i++) {
        const char *msg;
        enum ingest_outcome o = ingest_batch_outcome(b, i, &msg);
        if (o == INGEST_WRITTEN)
            continue;
        if (o == INGEST_STORE_ERROR) {
            job->store_failed = true;
            if (ingest_batch_outcome_code(b, i) != CT_EUNAVAIL)
                job->store_other = true;
        }
        api_influx_drop(job, o == INGEST_UNKNOWN_METRIC ? "Unknown metric"
                             : msg && *msg              ? msg
                                                        : "Unexpected exception");
    }
    pthread_mutex_unlock(&job->mu);
    ingest_batch_release(job->ingest, b);
    api_influx_job_unref(job);
}

static void api_influx_submit(struct tsd *t, struct api_influx_job *job, struct ingest_batch **b)
{
    if (!*b)
        return;
    if (ingest_batch_count(*b) == 0) {
        ingest_batch_release(t->ingest, *b);
        *b = NULL;
        return;
    }
    pthread_mutex_lock(&job->mu);
    job->refs++;
    pthread_mutex_unlock(&job->mu);
    tstats_add(TSTATS_POINTS_ADDED, ingest_batch_count(*b));
    ingest_submit(t->ingest, *b, api_influx_batch_done, job);
    *b = NULL;
}

static void api_influx_reply(struct http_req *r, int status, const char *error)
{
    http_reply_header(r, "X-Influxdb-Version", API_INFLUX_VERSION);
    http_reply_header(r, "X-Influxdb-Build", "OSS");
    if (!error) {
        http_reply_status(r, status);
        return;
    }
    http_reply_header(r, "X-Influxdb-Error", error); /* as InfluxDB (never a 401 here) */
    cJSON *o = cJSON_CreateObject();
    if (o)
        cJSON_AddStringToObject(o, "error", error);
    http_reply_cjson(r, status, o);
}

/* Splits "k=v" (tsd.influx.default_tag); false if it is not one tag. */
static bool api_influx_default_tag(const char *s, struct put_str *k, struct put_str *v)
{
    const char *eq = s ? strchr(s, '=') : NULL;
    if (!eq || eq == s || eq[1] == '\0')
        return false;
    *k = (struct put_str){s, (size_t)(eq - s)};
    *v = (struct put_str){eq + 1, strlen(eq + 1)};
    return true;
}

/* State of one /write request on its worker. */
struct api_influx_ctx {
    struct tsd *t;
    struct api_influx_job *job;
    struct ingest_batch *batch;
    const char *sep;
    struct put_str dk, dv;
    enum influx_precision prec;
    int64_t now_ms;
    char parse_err[1024]; /* InfluxDB's parse error text, lines joined with '\n' */
    size_t parse_len;
    size_t bad_lines;
    struct influx_line line;
    struct put_point point;
    char metric[1024];
};

static void api_influx_parse_error(struct api_influx_ctx *x, const char *src, size_t len,
                                   const char *why)
{
    x->bad_lines++;
    tstats_add(TSTATS_ILLEGAL_ARGUMENTS, 1);
    if (!strncmp(why, "unable to parse: ", 17)) /* the parser's prefix: said once below */
        why += 17;
    if (x->parse_len >= sizeof(x->parse_err) - 1)
        return;
    int n = snprintf(x->parse_err + x->parse_len, sizeof(x->parse_err) - x->parse_len,
                     "%sunable to parse '%.*s': %s", x->parse_len ? "\n" : "",
                     (int)(len > 200 ? 200 : len), src, why);
    if (n > 0)
        x->parse_len += (size_t)n;
    if (x->parse_len >= sizeof(x->parse_err))
        x->parse_len = sizeof(x->parse_err) - 1;
}

static void api_influx_refuse(struct api_influx_ctx *x, const char *why)
{
    pthread_mutex_lock(&x->job->mu);
    api_influx_drop(x->job, why);
    pthread_mutex_unlock(&x->job->mu);
}

/* One line of the body (copy in `line`, original text in `src` for the error). */
static void api_influx_line(struct api_influx_ctx *x, char *line, size_t len, const char *src)
{
    char msg[512];
    struct influx_line *l = &x->line;
    if (!influx_parse_line(line, len, l, msg, sizeof(msg))) {
        api_influx_parse_error(x, src, len, msg);
        return;
    }
    if (l->ntags == 0) {
        l->ntags = 1;
        l->tagk[0] = x->dk;
        l->tagv[0] = x->dv;
    }
    for (size_t fi = 0; fi < l->nfields; fi++) {
        struct put_point *p = &x->point;
        struct put_str value;
        if (!influx_field_point(l, fi, x->sep, x->prec, x->now_ms, x->metric, sizeof(x->metric), p,
                                &value, msg, sizeof(msg))) {
            api_influx_refuse(x, msg);
            continue;
        }
        enum put_status st = put_check_point(p, value, &x->t->rules, msg, sizeof(msg));
        if (st != PUT_OK) {
            tstats_add(st == PUT_ENUMBER ? TSTATS_INVALID_VALUES : TSTATS_ILLEGAL_ARGUMENTS, 1);
            api_influx_refuse(x, msg);
            continue;
        }
        bool added = false;
        for (int attempt = 0; attempt < 2 && !added; attempt++) {
            if (!x->batch)
                x->batch = ingest_batch_get(x->t->ingest);
            if (ingest_batch_add(x->batch, p, 0))
                added = true;
            else if (ingest_batch_count(x->batch) == 0)
                break;
            else
                api_influx_submit(x->t, x->job, &x->batch);
        }
        if (!added)
            api_influx_refuse(x, "Datapoint too large");
    }
}

static void api_influx_write_work(struct http_req *r, void *arg)
{
    (void)arg;
    struct tsd *t = http_req_tsd(r);
    size_t len;
    const char *body = http_req_body(r, &len);
    tstats_add(TSTATS_HTTP_PUT, 1);
    const char *db = http_req_param(r, "db");
    if (!db || !*db) {
        api_influx_reply(r, 400, "database is required");
        return;
    }
    enum influx_precision prec;
    if (!influx_precision_parse(http_req_param(r, "precision"), &prec)) {
        api_influx_reply(r, 400, "invalid precision");
        return;
    }
    struct api_influx_ctx *x = calloc(1, sizeof(*x));
    char *copy = malloc(len + 1);
    struct api_influx_job *job = calloc(1, sizeof(*job));
    if (!x || !copy || !job) {
        free(x);
        free(copy);
        free(job);
        api_influx_reply(r, 500, "out of memory");
        return;
    }
    pthread_mutex_init(&job->mu, NULL);
    job->refs = 1;
    job->ingest = t->ingest;
    job->r = r;
    x->t = t;
    x->job = job;
    x->prec = prec;
    x->sep = conf_get_str(t->conf, "tsd.influx.metric_separator");
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    x->now_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    if (!api_influx_default_tag(conf_get_str(t->conf, "tsd.influx.default_tag"), &x->dk, &x->dv)) {
        x->dk = (struct put_str){"", 0}; /* "Need at least one tag" from the checks */
        x->dv = x->dk;
    }
    memcpy(copy, body, len);
    copy[len] = '\0';
    /* from here the last reference answers (invariant 1): the writer's done callback for the
     * last batch, or this worker when it drops the last reference itself */
    http_req_suspend(r);
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(body + i, '\n', len - i);
        size_t e = nl ? (size_t)(nl - body) : len;
        size_t ll = e;
        while (ll > i && (body[ll - 1] == '\r' || body[ll - 1] == ' ' || body[ll - 1] == '\t'))
            ll--;
        size_t s = i;
        while (s < ll && (body[s] == ' ' || body[s] == '\t'))
            s++;
        if (s < ll && body[s] != '#') {
            api_influx_line(x, copy + s, ll - s, body + s);
        }
        i = e + 1;
    }
    api_influx_submit(t, job, &x->batch);
    pthread_mutex_lock(&job->mu);
    job->bad_lines = x->bad_lines;
    job->parse_err = x->bad_lines > 0 ? strdup(x->parse_err) : NULL;
    pthread_mutex_unlock(&job->mu);
    free(x);
    free(copy); /* the points were copied into the batches */
    api_influx_job_unref(job); /* r is the last reference's from here: not touched again */
}

void api_influx_write_handle(struct http_req *r)
{
    struct tsd *t = http_req_tsd(r);
    if (t->read_only) {
        api_influx_reply(r, 403, "the TSD is in read-only mode (tsd.mode=ro)");
        return;
    }
    struct ct_err err = {0};
    if (http_req_defer_ingest(r, api_influx_write_work, NULL, &err) != CT_OK) {
        http_reply_header(r, "Retry-After", "1");
        api_influx_reply(r, 503, "The TSD is overloaded; retry later");
    }
}

void api_influx_ping_handle(struct http_req *r)
{
    api_influx_reply(r, 204, NULL);
}
