/* api_put.c - POST /api/put (docs/opentsdb-compat.md, "`/api/put`"): one datapoint object or an
 * array, validated per point with OpenTSDB's messages, written through the ingest pipeline,
 * answered only once every accepted point is in the write-ahead log (204, or the summary / details
 * object). A failure answers 400, or 503 (http_status_of) when every failed point failed because
 * the storage backend did not answer (CT_EUNAVAIL): then the request may be sent again as is.
 *
 * Runs on a worker (http_req_defer): the body is read with jsonput in one pass (syntax checked
 * while the points are read, no allocation per point) and points go into ingest batches
 * (waiting for a free batch is the backpressure). Without sync_timeout the worker does not wait
 * for the batches: it suspends the request (http_req_suspend) and drops its reference, and
 * whoever drops the last one (the writer, in the done callback of the last batch; the worker if
 * they were all written already) builds the answer and sends it (http_req_resume), so the
 * answer leaves from the writer without waking the worker. With sync_timeout the worker waits
 * for the batches' completion, at most that many ms.
 * Invariants: (1) a body with a JSON syntax error writes nothing and counts nothing in the
 * TSD's stats: batches are submitted once the whole body is read, and a batch that fills up
 * before that is submitted only after jsonput_check passed on the whole body (bodies of more
 * than a batch: the syntax is then read twice); the per-point stats are added once the body
 * is known well-formed;
 * (2) job->refs = 1 for the worker + 1 per submitted batch not yet done; the last one frees the
 * job (answering a suspended request first), so a worker that timed out may reply and leave
 * while writes are still running; (3) once the worker suspended the request and dropped its
 * reference it touches neither again: the request, and the body the answer's details echo, are
 * the last reference's.
 * Locking: job->mu guards counts, errors and refs. */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tsd/http.h"
#include "tsd/ingest.h"
#include "tsd/jsonput.h"
#include "tsd/routes.h"
#include "tsd/tsd_int.h"
#include "tsd/tstats.h"

struct api_put_err {
    size_t index;
    char *msg;
};

struct api_put_job {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;
    size_t submitted_ok; /* points handed to the store */
    size_t done_points;  /* of those, points whose outcome is known */
    size_t success, failed;
    size_t unavail;    /* of the failed, points the backend did not answer (CT_EUNAVAIL) */
    char *unavail_msg; /* the first such failure's text (whole), or NULL */
    struct api_put_err *errs;
    size_t nerrs, caperrs;
    struct ingest *ingest;
    /* set by the worker before it drops its reference on a suspended request: the request and
     * what its answer needs (the details' source spans, owned by the job from then on) */
    struct http_req *suspended;
    bool details, summary;
    const char *body;
    size_t (*src)[2];
    size_t nsrc;
};

struct api_put_ctx {
    struct http_req *r;
    struct tsd *t;
    struct api_put_job *job;
    struct ingest_batch *batch;
    bool details;
    size_t (*src)[2]; /* per point (offset, length) in the body, with details */
    size_t nsrc, capsrc;
    const char *body;
    size_t len;
    bool checked;                             /* jsonput_check passed on the whole body */
    bool malformed;                           /* it failed: msg says why */
    char msg[256];                            /* jsonput_check's message */
    size_t invalid_values, illegal_arguments; /* stats, added once the body is read */
    /* whether the previous point's tag names and values were all put_str_plain (tags_known:
     * found for it; reused for a point whose tags repeat them, jsonput_point.tags_repeat) */
    bool tags_known, tags_plain;
    struct put_point point;
};

static void api_put_answer(struct api_put_job *job, struct http_req *r, bool with_timeouts);

static void api_put_job_unref(struct api_put_job *job)
{
    pthread_mutex_lock(&job->mu);
    bool last = --job->refs == 0;
    pthread_cond_broadcast(&job->cv); /* the worker waits for refs to drop to 1 */
    pthread_mutex_unlock(&job->mu);
    if (!last)
        return;
    if (job->suspended) { /* every point is written or failed: the answer, from this thread */
        pthread_mutex_lock(&job->mu);
        api_put_answer(job, job->suspended, false);
        pthread_mutex_unlock(&job->mu);
        http_req_resume(job->suspended);
    }
    for (size_t i = 0; i < job->nerrs; i++)
        free(job->errs[i].msg);
    free(job->errs);
    free(job->unavail_msg);
    free(job->src);
    pthread_mutex_destroy(&job->mu);
    pthread_cond_destroy(&job->cv);
    free(job);
}

/* REQUIRES: job->mu held. */
static void api_put_add_err(struct api_put_job *job, size_t index, const char *msg)
{
    job->failed++;
    if (job->nerrs == job->caperrs) {
        size_t nc = job->caperrs ? job->caperrs * 2 : 16;
        struct api_put_err *ne = realloc(job->errs, nc * sizeof(*ne));
        if (!ne)
            return; /* counted, not detailed */
        job->errs = ne;
        job->caperrs = nc;
    }
    char *m = strdup(msg);
    if (!m)
        return;
    job->errs[job->nerrs].index = index;
    job->errs[job->nerrs].msg = m;
    job->nerrs++;
}

static void api_put_batch_done(void *arg, struct ingest_batch *b)
{
    struct api_put_job *job = arg;
    size_t n = ingest_batch_count(b);
    pthread_mutex_lock(&job->mu);
    job->done_points += n;
    for (size_t i = 0; i < n; i++) {
        const char *msg;
        enum ingest_outcome o = ingest_batch_outcome(b, i, &msg);
        if (o == INGEST_WRITTEN) {
            job->success++;
            continue;
        }
        struct ingest_point p;
        ingest_batch_point(b, i, &p);
        const char *text = o == INGEST_UNKNOWN_METRIC ? "Unknown metric"
                           : o == INGEST_ILLEGAL      ? msg
                                                      : "Unexpected exception";
        if (o == INGEST_STORE_ERROR || o == INGEST_THROTTLED)
            text = msg && *msg ? msg : "Unexpected exception";
        if (o == INGEST_STORE_ERROR && ingest_batch_outcome_code(b, i) == CT_EUNAVAIL) {
            job->unavail++;
            if (!job->unavail_msg)
                job->unavail_msg = strdup(text); /* NULL if out of memory: no details then */
        }
        api_put_add_err(job, (size_t)p.owner, text);
    }
    pthread_mutex_unlock(&job->mu);
    /* back in the pool before the waiting worker can reply */
    ingest_batch_release(job->ingest, b);
    api_put_job_unref(job);
}

static void api_put_submit(struct api_put_ctx *x)
{
    if (!x->batch)
        return;
    if (ingest_batch_count(x->batch) == 0) {
        ingest_batch_release(x->t->ingest, x->batch);
        x->batch = NULL;
        return;
    }
    pthread_mutex_lock(&x->job->mu);
    x->job->refs++;
    x->job->submitted_ok += ingest_batch_count(x->batch);
    pthread_mutex_unlock(&x->job->mu);
    tstats_add(TSTATS_POINTS_ADDED, ingest_batch_count(x->batch));
    ingest_submit(x->t->ingest, x->batch, api_put_batch_done, x->job);
    x->batch = NULL;
}

static void api_put_reject(struct api_put_ctx *x, size_t index, const char *msg)
{
    pthread_mutex_lock(&x->job->mu);
    api_put_add_err(x->job, index, msg);
    pthread_mutex_unlock(&x->job->mu);
}

/* Parses a JSON timestamp as Jackson coerces it into a long. */
static bool api_put_timestamp(const struct jsonput_point *jp, int64_t *ts)
{
    if (!jp->timestamp.p) {
        *ts = 0;
        return true;
    }
    char msg[128];
    const struct put_str *s = &jp->timestamp;
    /* a text put_parse_long takes has no '.', 'e' or 'E': try it first */
    if (put_parse_long(s->p, s->len, ts, msg, sizeof(msg)))
        return true;
    bool frac = memchr(s->p, '.', s->len) || memchr(s->p, 'e', s->len) || memchr(s->p, 'E', s->len);
    if (!frac || jp->timestamp_is_string)
        return false;
    char tmp[64];
    if (s->len >= sizeof(tmp))
        return false;
    memcpy(tmp, s->p, s->len);
    tmp[s->len] = '\0';
    double d = strtod(tmp, NULL);
    if (!(d > -9.3e18 && d < 9.3e18))
        return false;
    *ts = (int64_t)d;
    return true;
}

static int api_put_point(void *arg, size_t index, struct jsonput_point *jp)
{
    struct api_put_ctx *x = arg;
    bool tags_known = x->tags_known; /* of the previous point */
    x->tags_known = false;
    if (x->details) {
        if (x->nsrc == x->capsrc) {
            size_t nc = x->capsrc ? x->capsrc * 2 : 64;
            size_t(*ns)[2] = realloc(x->src, nc * sizeof(*ns));
            if (ns) {
                x->src = ns;
                x->capsrc = nc;
            }
        }
        if (x->nsrc < x->capsrc) {
            x->src[x->nsrc][0] = (size_t)(jp->src - x->body);
            x->src[x->nsrc][1] = jp->src_len;
            x->nsrc++;
        }
    }
    if (jp->not_object) {
        api_put_reject(x, index, "Unable to parse the datapoint: not a JSON object");
        return 0;
    }
    int64_t ts = 0;
    if (!jp->metric.p || jp->metric.len == 0) {
        api_put_reject(x, index, "Metric name was empty");
        return 0;
    }
    if (!api_put_timestamp(jp, &ts) || ts <= 0) {
        api_put_reject(x, index, "Invalid timestamp");
        return 0;
    }
    if (!jp->value.p || jp->value.len == 0) {
        api_put_reject(x, index, "Empty value");
        return 0;
    }
    if (!jp->tags_present || jp->ntags == 0) {
        api_put_reject(x, index, "Missing tags");
        return 0;
    }
    struct put_point *p = &x->point;
    p->metric = jp->metric;
    p->ts_ms = ts;
    p->ntags = jp->ntags;
    for (size_t i = 0; i < jp->ntags; i++) {
        p->tagk[i] = jp->tagk[i];
        p->tagv[i] = jp->tagv[i].p ? jp->tagv[i] : (struct put_str){"", 0};
    }
    /* the names' characters: the tags' found once for a run of points with the same tags */
    bool tags_plain = true;
    if (jp->tags_repeat && tags_known) {
        tags_plain = x->tags_plain;
    } else {
        for (size_t i = 0; tags_plain && i < p->ntags; i++)
            tags_plain = put_str_plain(p->tagk[i]) && put_str_plain(p->tagv[i]);
    }
    x->tags_known = true;
    x->tags_plain = tags_plain;
    char msg[CT_ERR_MSG_MAX]; /* a whole error text */
    enum put_status st = put_check_point_names(
        p, jp->value, &x->t->rules, tags_plain && put_str_plain(p->metric), msg, sizeof(msg));
    if (st == PUT_ENUMBER) {
        x->invalid_values++;
        api_put_reject(x, index, "Unable to parse value to a number");
        return 0;
    }
    if (st != PUT_OK) {
        x->illegal_arguments++;
        const char *m = msg;
        if (!strncmp(m, "illegal argument: ", 18))
            m += 18;
        api_put_reject(x, index, m);
        return 0;
    }
    if (jp->too_many_tags) {
        api_put_reject(x, index, "Too many tags");
        return 0;
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!x->batch)
            x->batch = ingest_batch_get(x->t->ingest);
        if (ingest_batch_add(x->batch, p, index))
            return 0;
        if (ingest_batch_count(x->batch) == 0)
            break;
        /* a full batch before the end of the body: only a well-formed body writes anything */
        if (!x->checked) {
            if (jsonput_check(x->body, x->len, x->msg, sizeof(x->msg)) != 0) {
                x->malformed = true;
                return 1; /* stops the walk */
            }
            x->checked = true;
        }
        api_put_submit(x);
    }
    api_put_reject(x, index, "Datapoint too large");
    return 0;
}

/* Reads the body x->body[0..len) into x's batches and submits them: 0 and *npoints, or -1 with
 * msg for a malformed body (nothing of it submitted, nothing counted). scratch and jp as
 * jsonput_read takes them. */
static int api_put_body(struct api_put_ctx *x, size_t len, char *scratch, struct jsonput_point *jp,
                        size_t *npoints, char *msg, size_t msg_size)
{
    x->len = len;
    int rc = jsonput_read(x->body, len, scratch, jp, api_put_point, x, npoints, msg, msg_size);
    if (rc != 0 && x->malformed) {
        snprintf(msg, msg_size, "%s", x->msg);
        rc = -1;
    }
    if (rc != 0) {
        /* the points read before the error stay unwritten (none was submitted: x->checked is
         * false, or the walk could not have failed) */
        if (x->batch)
            ingest_batch_release(x->t->ingest, x->batch);
        x->batch = NULL;
        return rc;
    }
    api_put_submit(x);
    if (x->invalid_values)
        tstats_add(TSTATS_INVALID_VALUES, x->invalid_values);
    if (x->illegal_arguments)
        tstats_add(TSTATS_ILLEGAL_ARGUMENTS, x->illegal_arguments);
    return 0;
}

static int api_put_err_cmp(const void *a, const void *b)
{
    const struct api_put_err *x = a, *y = b;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Sets r's answer from the job's outcome: 204, or the summary / details object, or the error
 * OpenTSDB gives; with_timeouts (a sync_timeout was given) counts the points not done yet as
 * timed out and the summary shows them. REQUIRES: job->mu held. */
static void api_put_answer(struct api_put_job *job, struct http_req *r, bool with_timeouts)
{
    size_t success = job->success, failed = job->failed;
    size_t timeouts = job->submitted_ok - job->done_points;
    /* 503 when every failure is the backend's unavailability (docs/bigtable.md, "Faults"):
     * nothing the client sent was wrong, and sending the same body again is safe (every point
     * carries its timestamp); 400 when any point failed for another reason (details say which) */
    bool unavailable = failed > 0 && job->unavail == failed && timeouts == 0;
    int fail_status = unavailable ? http_status_of(CT_EUNAVAIL, 400) : 400;
    if (job->nerrs > 1)
        qsort(job->errs, job->nerrs, sizeof(job->errs[0]), api_put_err_cmp);
    if (job->summary || job->details) {
        cJSON *o = cJSON_CreateObject();
        cJSON *errors = job->details ? cJSON_CreateArray() : NULL;
        for (size_t i = 0; errors && i < job->nerrs; i++) {
            cJSON *e = cJSON_CreateObject();
            size_t idx = job->errs[i].index;
            cJSON *dp = NULL;
            if (idx < job->nsrc)
                dp = cJSON_ParseWithLength(job->body + job->src[idx][0], job->src[idx][1]);
            if (!dp)
                dp = cJSON_CreateObject();
            cJSON_AddItemToObject(e, "datapoint", dp);
            cJSON_AddStringToObject(e, "error", job->errs[i].msg);
            cJSON_AddItemToArray(errors, e);
        }
        if (errors)
            cJSON_AddItemToObject(o, "errors", errors);
        cJSON_AddNumberToObject(o, "failed", (double)failed);
        cJSON_AddNumberToObject(o, "success", (double)success);
        if (with_timeouts)
            cJSON_AddNumberToObject(o, "timeouts", (double)timeouts);
        http_reply_cjson(r, failed == 0 && timeouts == 0 ? 200 : fail_status, o);
    } else if (timeouts > 0) {
        char m[256];
        snprintf(m, sizeof(m),
                 "The put call has timedout with %zu successful writes, %zu failed writes and "
                 "%zu timed out writes.",
                 success, failed, timeouts);
        http_reply_error(r, 400, m, NULL);
    } else if (unavailable) {
        http_reply_error(r, fail_status,
                         "One or more data points were not written: the storage backend is "
                         "unavailable; retry the request later",
                         job->unavail_msg);
    } else if (failed > 0) {
        http_reply_error(r, 400, "One or more data points had errors",
                         "Please see the TSD logs or append \"details\" to the put request");
    } else {
        http_reply_status(r, 204);
    }
}

/* A zeroed ctx x and job for reading body into t's ingest pipeline: the job holds the
 * worker's reference. */
static void api_put_start(struct api_put_ctx *x, struct api_put_job *job, struct tsd *t,
                          const char *body)
{
    pthread_mutex_init(&job->mu, NULL);
    pthread_cond_init(&job->cv, NULL);
    job->refs = 1;
    job->ingest = t->ingest;
    x->t = t;
    x->job = job;
    x->body = body;
}

static void api_put_work(struct http_req *r, void *arg)
{
    (void)arg;
    struct tsd *t = http_req_tsd(r);
    size_t len;
    const char *body = http_req_body(r, &len);
    tstats_add(TSTATS_HTTP_PUT, 1);
    if (len == 0) {
        http_reply_error(r, 400, "Missing request content", NULL);
        return;
    }
    struct api_put_ctx *x = calloc(1, sizeof(*x));
    char *scratch = malloc(len + 1);
    struct jsonput_point *jp = malloc(sizeof(*jp));
    struct api_put_job *job = calloc(1, sizeof(*job));
    if (!x || !scratch || !jp || !job) {
        free(x);
        free(scratch);
        free(jp);
        free(job);
        http_reply_error(r, 500, "out of memory", NULL);
        return;
    }
    api_put_start(x, job, t, body);
    x->r = r;
    x->details = http_req_flag(r, "details");
    bool summary = http_req_flag(r, "summary");
    int64_t sync_timeout = 0;
    const char *st = http_req_param(r, "sync_timeout");
    if (st && *st) {
        char m[64];
        if (!put_parse_long(st, strlen(st), &sync_timeout, m, sizeof(m)) || sync_timeout < 0) {
            http_reply_error(r, 400, "Unable to parse sync_timeout as an integer", st);
            goto out;
        }
    }
    size_t npoints = 0;
    char msg[256];
    int rc = api_put_body(x, len, scratch, jp, &npoints, msg, sizeof(msg));
    if (rc < 0) {
        http_reply_error(r, 400, "Unable to parse the given JSON", msg);
        goto out;
    }
    if (npoints == 0) {
        http_reply_error(r, 400, "No datapoints found in content", NULL);
        goto out;
    }
    job->details = x->details;
    job->summary = summary;
    job->body = body;
    job->src = x->src; /* the job's from here */
    job->nsrc = x->nsrc;
    x->src = NULL;
    if (sync_timeout == 0) { /* answered by the last reference (invariant 3) */
        job->suspended = r;
        http_req_suspend(r);
        goto out;
    }
    /* wait until every submitted point is in the log or sync_timeout passed */
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += (time_t)(sync_timeout / 1000);
    deadline.tv_nsec += (long)(sync_timeout % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&job->mu);
    while (job->refs > 1)
        if (pthread_cond_timedwait(&job->cv, &job->mu, &deadline) != 0)
            break;
    api_put_answer(job, r, true);
    pthread_mutex_unlock(&job->mu);
out:
    api_put_job_unref(job);
    free(x->src);
    free(x);
    free(scratch);
    free(jp);
}

void api_put_handle(struct http_req *r)
{
    struct tsd *t = http_req_tsd(r);
    if (t->read_only) {
        http_reply_error(r, 404, "Endpoint not found",
                         "the TSD is in read-only mode (tsd.mode=ro)");
        return;
    }
    struct ct_err err = {0};
    if (http_req_defer_ingest(r, api_put_work, NULL, &err) != CT_OK)
        http_reply_error(r, 503, "The TSD is overloaded; retry later", err.msg);
}
