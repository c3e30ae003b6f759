/* api_prom.c - Prometheus remote write (POST /api/v1/write) and remote read (POST /api/v1/read)
 * (docs/prometheus.md). The protocol work is tsd/proto_prom.c; this file is the glue.
 *
 * Write runs on a worker (http_req_defer) like /api/put: the snappy body is decoded through the
 * lazy view (WriteRequestLazy: labels kept encoded); a series in the series cache (t->prom_cache,
 * keyed by its encoded labels) takes the names cached for it, any other has its labels decoded,
 * mapped and its names checked once (then cached when they pass); each sample is put through
 * put_check_typed (the limits of put, on the binary value: no number text) into ingest batches
 * (waiting for a free batch is the backpressure), and the reply goes out only once every
 * accepted sample is in the write-ahead log: 204; 400 when some data could never be written
 * (Prometheus drops the request: a retry would fail the same way); 5xx when a retry can succeed
 * (store error, overload, out of memory) - the samples already written are written again then,
 * which overwrites them with the same values.
 * A cached series' samples enter the batches by the ingest key and hash the cache keeps
 * (ingest_batch_add_key). Each write takes a scratch (decode buffer, arena, name buffers) from
 * t->prom_scratch and gives it back, reset, once its batches are submitted. The worker does not
 * wait for its batches: it suspends the request (http_req_suspend) before submitting the first,
 * and whoever drops the job's last reference - the writer thread in the done callback of the
 * last batch written, or the worker itself when every batch was already written - builds the
 * reply and sends it (http_req_resume): the answer leaves from the writer thread without a
 * wake-up of the worker in between.
 * Invariants: (1) a body that does not decode writes nothing: every label of every series not
 * in the cache is decoded in a first pass, before the first sample is written; (2) job->refs = 1
 * for the worker until it has submitted every batch + 1 per submitted batch not yet done; the
 * last one answers the request and frees the job, so the reply goes out only once every batch
 * is written; (3) nothing of a scratch is used after prom_scratch_give (the batches hold copies
 * of the points); (4) after http_req_suspend the worker does not touch the request: only the
 * last reference does.
 *
 * Read runs on a worker too: each query of the ReadRequest becomes an /api/query sub-query with
 * the "none" aggregator (every series on its own, raw points) run by qexec_run_points (the query
 * layer); equality matchers on labels narrow the scan (literal_or filters) and every matcher is
 * checked again on the unescaped labels of each series. A query without a __name__ equality
 * matcher reads every metric of the UID table whose unescaped name passes the query's __name__
 * matchers (none: every metric), one sub-query each, at most tsd.prometheus.read_max_metrics of
 * them (400 beyond, before anything is read); the query's time and datapoint limits then hold
 * for all of its sub-queries together. */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "query/qexec.h"
#include "query/qspec.h"
#include "schema/tsdb.h"
#include "schema/uid.h"
#include "tsd/conf.h"
#include "tsd/http.h"
#include "tsd/ingest.h"
#include "tsd/proto_prom.h"
#include "tsd/routes.h"
#include "tsd/tsd.h"
#include "tsd/tsd_int.h"
#include "tsd/tstats.h"

/* ---- shared ------------------------------------------------------------------------------ */

static void prom_reply_text(struct http_req *r, int status, const char *msg)
{
    char line[1200];
    int n = snprintf(line, sizeof(line), "%s\n", msg);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof(line))
        n = (int)sizeof(line) - 1;
    http_reply_raw(r, status, "text/plain; charset=utf-8", line, (size_t)n);
}

/* Decodes the snappy body into *raw (*cap bytes, replaced when too small: prom_snappy_decode_into;
 * NULL and 0 for a new buffer); replies and returns false on failure. */
static bool prom_body(struct http_req *r, char **raw, size_t *cap, size_t *raw_len)
{
    const struct conf *c = tsd_conf(http_req_tsd(r));
    size_t len;
    const char *body = http_req_body(r, &len);
    if (len == 0) {
        prom_reply_text(r, 400, "empty body: expected a snappy-compressed protobuf message");
        return false;
    }
    char msg[256];
    size_t max = (size_t)conf_get_int(c, "tsd.prometheus.max_decoded_bytes");
    int st = prom_snappy_decode_into(body, len, max, raw, cap, raw_len, msg, sizeof(msg));
    if (st != 0) {
        prom_reply_text(r, st, msg);
        return false;
    }
    return true;
}

/* ---- remote write ------------------------------------------------------------------------ */

/* The buffers of one write request, kept between requests (t->prom_scratch: a free list, one
 * scratch per request running at once, so at most one per worker): the decoded body's buffer,
 * the arena (its first 256 KiB block kept by prom_arena_reset), the mapped names and the
 * series key buffers and the point. A body larger than PROM_SCRATCH_KEEP is decoded into a
 * buffer freed after its request: what the pool holds stays bounded. */
#define PROM_SCRATCH_KEEP ((size_t)4 << 20)
struct prom_scratch {
    struct prom_scratch *next;
    struct prom_arena arena;
    char *raw, *names, *kbuf;
    size_t raw_cap, names_cap, kcap;
    struct put_point p;
};
struct prom_scratch_pool {
    pthread_mutex_t mu;
    struct prom_scratch *free; /* [mu] */
};

static void prom_scratch_free(struct prom_scratch *s)
{
    prom_arena_clear(&s->arena);
    free(s->raw);
    free(s->names);
    free(s->kbuf);
    free(s);
}

/* A scratch from the pool, or a new one; NULL when out of memory. */
static struct prom_scratch *prom_scratch_take(struct prom_scratch_pool *pool)
{
    pthread_mutex_lock(&pool->mu);
    struct prom_scratch *s = pool->free;
    if (s)
        pool->free = s->next;
    pthread_mutex_unlock(&pool->mu);
    if (!s && (s = calloc(1, sizeof(*s))) != NULL)
        prom_arena_init(&s->arena);
    return s;
}

/* Empties s (arena reset, an oversized body buffer freed) and returns it to the pool. */
static void prom_scratch_give(struct prom_scratch_pool *pool, struct prom_scratch *s)
{
    prom_arena_reset(&s->arena);
    if (s->raw_cap > PROM_SCRATCH_KEEP) {
        free(s->raw);
        s->raw = NULL;
        s->raw_cap = 0;
    }
    pthread_mutex_lock(&pool->mu);
    s->next = pool->free;
    pool->free = s;
    pthread_mutex_unlock(&pool->mu);
}

struct prom_job {
    pthread_mutex_t mu;
    int refs;
    size_t written, illegal, unknown_metric, store_error;
    size_t unavailable; /* of store_error: the backend did not answer (CT_EUNAVAIL) */
    char *first_err;    /* the first per-sample failure, whole, for the reply (NULL: none) */
    struct ingest *ingest;
    /* set by the worker before it drops its reference: the request (suspended) and what the
     * worker counted itself */
    struct http_req *r;
    int status; /* 500: a series could not be mapped for want of memory */
    size_t samples, rejected, skipped_nan;
};

/* Builds the reply of a job whose every sample is written or failed (refs 0) and sends it
 * (http_req_resume), on the thread that dropped the last reference: the writer after the last
 * batch, or the worker when no batch was still being written. */
static void prom_job_reply(struct prom_job *job)
{
    struct http_req *r = job->r;
    size_t written = job->written, unknown = job->unknown_metric, stored = job->store_error,
           illegal = job->illegal, unavailable = job->unavailable, samples = job->samples,
           rejected = job->rejected, skipped_nan = job->skipped_nan;
    const char *first = job->first_err ? job->first_err : "";
    char *reply = NULL;
    if (job->status == 500 || stored > 0) {
        /* 503 when every sample not written failed because the backend did not answer (the
         * request may be sent again as it is), 500 for other store failures: both retried by
         * Prometheus */
        int code = job->status != 500 && unavailable == stored ? 503 : 500;
        if (asprintf(&reply, "%zu of %zu samples not written (retry): %s",
                     samples - written - rejected - illegal - unknown - skipped_nan, samples,
                     first) < 0)
            reply = NULL;
        prom_reply_text(r, code, reply ? reply : "samples not written (retry)");
    } else if (rejected + illegal + unknown > 0) {
        if (asprintf(&reply, "%zu of %zu samples rejected, %zu written: %s",
                     rejected + illegal + unknown, samples, written, first) < 0)
            reply = NULL;
        prom_reply_text(r, 400, reply ? reply : "samples rejected");
    } else {
        http_reply_status(r, 204);
    }
    free(reply);
    http_req_resume(r);
}

/* Drops a reference (invariant 2); the last one answers the request and frees the job. */
static void prom_job_unref(struct prom_job *job)
{
    pthread_mutex_lock(&job->mu);
    bool last = --job->refs == 0;
    pthread_mutex_unlock(&job->mu);
    if (!last)
        return;
    /* every other reference was dropped under mu: what they wrote is visible here */
    prom_job_reply(job);
    pthread_mutex_destroy(&job->mu);
    free(job->first_err);
    free(job);
}

/* REQUIRES: job->mu held. */
static void prom_job_note(struct prom_job *job, const char *msg)
{
    if (!job->first_err)
        job->first_err = strdup(msg); /* NULL when out of memory: the reply names no sample */
}

static void prom_batch_done(void *arg, struct ingest_batch *b)
{
    struct prom_job *job = arg;
    size_t n = ingest_batch_count(b);
    pthread_mutex_lock(&job->mu);
    for (size_t i = 0; i < n; i++) {
        const char *msg;
        switch (ingest_batch_outcome(b, i, &msg)) {
        case INGEST_WRITTEN:
            job->written++;
            break;
        case INGEST_ILLEGAL:
            job->illegal++;
            prom_job_note(job, msg && *msg ? msg : "illegal sample");
            break;
        case INGEST_UNKNOWN_METRIC: {
            struct ingest_point p;
            ingest_batch_point(b, i, &p);
            char m[300];
            snprintf(m, sizeof(m), "unknown metric '%s' (tsd.core.auto_create_metrics is off)",
                     p.metric);
            job->unknown_metric++;
            prom_job_note(job, m);
            break;
        }
        default:
            job->store_error++;
            if (ingest_batch_outcome_code(b, i) == CT_EUNAVAIL)
                job->unavailable++;
            prom_job_note(job, msg && *msg ? msg : "store error");
            break;
        }
    }
    pthread_mutex_unlock(&job->mu);
    ingest_batch_release(job->ingest, b);
    prom_job_unref(job);
}

struct prom_write {
    struct tsd *t;
    struct prom_job *job;
    struct ingest_batch *batch;
    size_t submitted;
};

static void prom_submit(struct prom_write *w)
{
    if (!w->batch)
        return;
    size_t n = ingest_batch_count(w->batch);
    if (n == 0) {
        ingest_batch_release(w->t->ingest, w->batch);
        w->batch = NULL;
        return;
    }
    pthread_mutex_lock(&w->job->mu);
    w->job->refs++;
    pthread_mutex_unlock(&w->job->mu);
    w->submitted += n;
    tstats_add(TSTATS_POINTS_ADDED, n);
    ingest_submit(w->t->ingest, w->batch, prom_batch_done, w->job);
    w->batch = NULL;
}

/* Adds p to the current batch; false if it does not fit even an empty one. */
static bool prom_add(struct prom_write *w, const struct put_point *p)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!w->batch)
            w->batch = ingest_batch_get(w->t->ingest);
        if (ingest_batch_add(w->batch, p, 0))
            return true;
        if (ingest_batch_count(w->batch) == 0)
            break;
        prom_submit(w);
    }
    return false;
}

/* As prom_add, for a point of a cached series: its ingest key and that key's hash, as the
 * series cache keeps them (one copy into the batch, no hashing). */
static bool prom_add_key(struct prom_write *w, const struct put_point *p, const char *key,
                         size_t len, uint64_t hash)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!w->batch)
            w->batch = ingest_batch_get(w->t->ingest);
        if (ingest_batch_add_key(w->batch, p, key, len, hash, 0))
            return true;
        if (ingest_batch_count(w->batch) == 0)
            break;
        prom_submit(w);
    }
    return false;
}

/* The ingest hash of p's series key (ingest_key_hash: the metric, then each tag key and value,
 * each followed by a NUL), built in *buf (grown with realloc). false when out of memory. */
static bool prom_point_hash(struct ingest *g, const struct put_point *p, char **buf, size_t *cap,
                            uint64_t *hash)
{
    size_t need = put_point_key_len(p);
    if (need > *cap) {
        char *nb = realloc(*buf, need);
        if (!nb)
            return false;
        *buf = nb;
        *cap = need;
    }
    put_point_key_write(*buf, p);
    *hash = ingest_key_hash(g, *buf, need);
    return true;
}

static void prom_write_work(struct http_req *r, void *arg)
{
    (void)arg;
    struct tsd *t = http_req_tsd(r);
    const struct conf *c = tsd_conf(t);
    tstats_add(TSTATS_HTTP_PUT, 1);
    char dkey[128], dval[128], msg[CT_ERR_MSG_MAX + 128]; /* an error's text arrives whole */
    if (!prom_default_tag_parse(conf_get_str(c, "tsd.prometheus.default_tag"), dkey, sizeof(dkey),
                                dval, sizeof(dval), msg, sizeof(msg))) {
        prom_reply_text(r, 500, msg);
        return;
    }
    struct prom_scratch *sc = prom_scratch_take(t->prom_scratch);
    if (!sc) {
        prom_reply_text(r, 500, "out of memory");
        return;
    }
    size_t raw_len;
    if (!prom_body(r, &sc->raw, &sc->raw_cap, &raw_len)) {
        prom_scratch_give(t->prom_scratch, sc);
        return;
    }
    struct prom_arena *arena = &sc->arena;
    /* the arena and the body's buffer are this request's until prom_scratch_give: what the
     * decode allocates (also of a body that fails to decode) goes with the arena's reset */
    struct prom_series_in *series = NULL;
    size_t nts = 0;
    int decode = prom_write_decode(arena, (const uint8_t *)sc->raw, raw_len, &series, &nts);
    struct put_point *p = &sc->p;
    struct put_names pnames;
    struct prom_job *job = calloc(1, sizeof(*job));
    struct prom_series_cache *cache = t->prom_cache;
    /* per series: its decoded labels (NULL: found in the cache) */
    Prometheus__TimeSeries **decoded = prom_arena_get(arena, (nts ? nts : 1) * sizeof(*decoded));
    /* per series found in the cache: its names, copied into the arena (else NULL) */
    const char **cached = prom_arena_get(arena, (nts ? nts : 1) * sizeof(*cached));
    uint64_t *hashes = prom_arena_get(arena, (nts ? nts : 1) * sizeof(*hashes));
    if (!job || !decoded || !cached || !hashes)
        decode = 500;
    /* first pass, before anything is written: every label of a series not in the cache must
     * decode, else the body is refused whole (invariant 1) */
    for (size_t s = 0; s < nts && decode == 0; s++) {
        decoded[s] = NULL;
        cached[s] = NULL;
        if (cache) {
            hashes[s] = prom_series_cache_hash(cache, series[s].key, series[s].key_len);
            cached[s] = prom_series_cache_get(cache, series[s].key, series[s].key_len,
                                              hashes[s], arena);
            if (cached[s])
                continue;
        }
        decode = prom_series_labels(arena, &series[s], &decoded[s]);
    }
    if (decode != 0) {
        free(job);
        prom_scratch_give(t->prom_scratch, sc);
        if (decode == 500)
            prom_reply_text(r, 500, "out of memory");
        else
            prom_reply_text(r, 400, "body is not a protobuf prometheus.WriteRequest");
        return;
    }
    pthread_mutex_init(&job->mu, NULL);
    job->refs = 1;
    job->ingest = t->ingest;
    job->r = r;
    /* from here the last reference answers (invariant 2): the writer's done callback for the
     * last batch, or this worker when it drops the last reference itself */
    http_req_suspend(r);
    struct prom_write w = {.t = t, .job = job};
    const struct prom_map map = {t->rules.special_chars, dkey, dval};
    size_t rejected = 0, skipped_nan = 0, samples = 0;
    int status = 0;
    for (size_t s = 0; s < nts && status != 500; s++) {
        const struct prom_series_in *ts = &series[s];
        samples += ts->n_samples;
        int st = 0;
        const char *ikey = NULL; /* a cached series' ingest key, its length and hash */
        size_t ikey_len = 0;
        uint64_t ihash = 0;
        if (cached[s]) {
            ihash = prom_series_names_key(cached[s], &ikey, &ikey_len);
            prom_series_names_load(cached[s], p);
            pnames.status = PUT_OK; /* only series that passed put_check_names are cached */
            pnames.msg[0] = '\0';
        } else {
            st = prom_map_series(&map, decoded[s], &sc->names, &sc->names_cap, p, msg, sizeof(msg));
            if (st == 0) {
                put_check_names(p, &t->rules, &pnames); /* once per series */
                uint64_t h;
                if (pnames.status == PUT_OK && cache &&
                    prom_point_hash(t->ingest, p, &sc->kbuf, &sc->kcap, &h))
                    prom_series_cache_put(cache, ts->key, ts->key_len, hashes[s], p, h);
            }
        }
        if (st != 0) {
            status = st == 500 ? 500 : status;
            rejected += ts->n_samples;
            tstats_add(TSTATS_ILLEGAL_ARGUMENTS, ts->n_samples);
            pthread_mutex_lock(&job->mu);
            prom_job_note(job, msg);
            pthread_mutex_unlock(&job->mu);
            continue;
        }
        for (size_t i = 0; i < ts->n_samples; i++) {
            const struct prom_sample_in *sm = &ts->samples[i];
            enum prom_value_class vc = prom_value_class(sm->value);
            if (vc != PROM_VALUE_OK) {
                skipped_nan++; /* stale markers, NaN, +-Inf: not stored (docs) */
                continue;
            }
            /* put reads a number of at most 32 bits as seconds: Prometheus' are always
             * milliseconds, so one before 1970-02-20 cannot be told apart and is refused */
            p->ts_ms = sm->timestamp;
            char m2[CT_ERR_MSG_MAX];
            enum put_status ps = PUT_EARG;
            if (sm->timestamp < ((int64_t)1 << 32))
                snprintf(m2, sizeof(m2), "timestamp %lld ms is before 1970-02-20",
                         (long long)sm->timestamp);
            else
                ps = put_check_typed(p, prom_value_put(sm->value), &pnames, m2, sizeof(m2));
            if (ps != PUT_OK ||
                !(ikey ? prom_add_key(&w, p, ikey, ikey_len, ihash) : prom_add(&w, p))) {
                rejected++;
                tstats_add(TSTATS_ILLEGAL_ARGUMENTS, 1);
                const char *m = ps != PUT_OK ? m2 : "sample too large for a batch";
                if (!strncmp(m, "illegal argument: ", 18))
                    m += 18;
                pthread_mutex_lock(&job->mu);
                if (!job->first_err &&
                    asprintf(&job->first_err, "sample of '%.*s' at %lld: %s",
                             (int)p->metric.len, p->metric.p, (long long)sm->timestamp, m) < 0)
                    job->first_err = NULL; /* out of memory: the reply names no sample */
                pthread_mutex_unlock(&job->mu);
            }
        }
    }
    prom_submit(&w);
    prom_scratch_give(t->prom_scratch, sc); /* p and the names were copied into the batches */
    tstats_add(TSTATS_INVALID_VALUES, skipped_nan);
    pthread_mutex_lock(&job->mu);
    job->status = status;
    job->samples = samples;
    job->rejected = rejected;
    job->skipped_nan = skipped_nan;
    pthread_mutex_unlock(&job->mu);
    prom_job_unref(job); /* r is the last reference's from here: not touched again */
}

int api_prom_open(struct tsd *t, struct ct_err *err)
{
    int64_t bytes = conf_get_int(tsd_conf(t), "tsd.prometheus.series_cache_bytes");
    t->prom_cache = NULL;
    if (!(t->prom_scratch = calloc(1, sizeof(*t->prom_scratch))))
        return ct_err_set(err, CT_ENOMEM, "out of memory");
    pthread_mutex_init(&t->prom_scratch->mu, NULL);
    if (bytes > 0 && !(t->prom_cache = prom_series_cache_new((size_t)bytes)))
        return ct_err_set(err, CT_ENOMEM,
                          "cannot allocate the remote write series cache (%lld bytes)",
                          (long long)bytes);
    return CT_OK;
}

void api_prom_close(struct tsd *t)
{
    prom_series_cache_free(t->prom_cache);
    t->prom_cache = NULL;
    if (t->prom_scratch) {
        while (t->prom_scratch->free) {
            struct prom_scratch *s = t->prom_scratch->free;
            t->prom_scratch->free = s->next;
            prom_scratch_free(s);
        }
        pthread_mutex_destroy(&t->prom_scratch->mu);
        free(t->prom_scratch);
        t->prom_scratch = NULL;
    }
}

void api_prom_write_handle(struct http_req *r)
{
    struct tsd *t = http_req_tsd(r);
    if (t->read_only) {
        prom_reply_text(r, 404, "the TSD is in read-only mode (tsd.mode=ro)");
        return;
    }
    const char *ct = http_req_header(r, "Content-Type");
    if (ct && strstr(ct, "proto=io.prometheus.write.v2")) {
        prom_reply_text(r, 415, "remote write 2.0 is not supported: send prometheus.WriteRequest");
        return;
    }
    struct ct_err err = {0};
    if (http_req_defer_ingest(r, prom_write_work, NULL, &err) != CT_OK)
        prom_reply_text(r, 503, "the TSD is overloaded; retry later");
}

/* ---- remote read ------------------------------------------------------------------------- */

static int64_t prom_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct prom_read {
    struct prom_read_builder *rb;
    const struct prom_matchers *m;
    const char *default_key, *default_value;
    size_t qi;
    char *last_metric, *last_tags; /* the series being filled (copies), NULL before the first */
    bool keep;                     /* it matched */
    uint64_t points;               /* samples added to the response */
    bool oom;
};

/* Splits "k=v k2=v2" (escaped names) and unescapes; name/value point into buf. */
static size_t prom_split_tags(const char *tags, char *buf, const char **name, const char **value,
                              size_t max)
{
    size_t n = 0;
    const char *p = tags;
    char *w = buf;
    while (*p && n < max) {
        const char *sp = strchr(p, ' ');
        size_t len = sp ? (size_t)(sp - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (eq) {
            name[n] = w;
            w += prom_unescape(p, (size_t)(eq - p), w) + 1;
            value[n] = w;
            w += prom_unescape(eq + 1, len - (size_t)(eq - p) - 1, w) + 1;
            n++;
        }
        p += len + (sp ? 1 : 0);
    }
    return n;
}

static int prom_read_point(void *arg, const char *metric, const char *tags,
                           const struct qagg_point *pt)
{
    struct prom_read *x = arg;
    if (!x->last_metric || strcmp(x->last_metric, metric) || strcmp(x->last_tags, tags)) {
        free(x->last_metric);
        free(x->last_tags);
        x->last_metric = strdup(metric);
        x->last_tags = strdup(tags);
        size_t tl = strlen(tags), ml = strlen(metric);
        char *buf = malloc(tl + ml + 16);
        const char **name = malloc((INGEST_MAX_TAGS + 2) * sizeof(*name));
        const char **value = malloc((INGEST_MAX_TAGS + 2) * sizeof(*value));
        if (!x->last_metric || !x->last_tags || !buf || !name || !value) {
            free(buf);
            free(name);
            free(value);
            x->oom = true;
            return CT_ENOMEM;
        }
        name[0] = "__name__";
        value[0] = buf;
        char *rest = buf + prom_unescape(metric, ml, buf) + 1;
        size_t n = 1 + prom_split_tags(tags, rest, name + 1, value + 1, INGEST_MAX_TAGS + 1);
        if (n == 2 && !strcmp(name[1], x->default_key) && !strcmp(value[1], x->default_value))
            n = 1; /* the default tag of a series without labels */
        x->keep = prom_matchers_match(x->m, name, value, n);
        bool ok = !x->keep || prom_rb_series(x->rb, x->qi, name, value, n);
        free(buf);
        free(name);
        free(value);
        if (!ok) {
            x->oom = true;
            return CT_ENOMEM;
        }
    }
    if (x->keep && !prom_rb_sample(x->rb, pt->ts_ms, qagg_point_double(pt))) {
        x->oom = true;
        return CT_ENOMEM;
    }
    x->points += x->keep;
    return CT_OK;
}

/* The sub-query of one remote read query: metric and literal_or filters of its EQ matchers,
 * as the JSON /api/query body (times are set on the parsed spec). metric is a label value
 * (escaped here) when escape_metric, else a stored metric name taken as it is. */
static char *prom_query_json(const Prometheus__Query *q, const char *metric, bool escape_metric,
                             const char *special)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *qs = cJSON_AddArrayToObject(o, "queries");
    cJSON *sub = cJSON_CreateObject();
    cJSON_AddItemToArray(qs, sub);
    cJSON_AddStringToObject(o, "start", "1000");
    cJSON_AddStringToObject(o, "end", "2000");
    cJSON_AddBoolToObject(o, "msResolution", true);
    cJSON_AddStringToObject(sub, "aggregator", "none");
    size_t ml = strlen(metric);
    char *em = malloc(3 * ml + 1);
    if (!em) {
        cJSON_Delete(o);
        return NULL;
    }
    if (escape_metric)
        prom_escape(metric, ml, special, em, 3 * ml + 1);
    else
        memcpy(em, metric, ml + 1);
    cJSON_AddStringToObject(sub, "metric", em);
    free(em);
    cJSON *filters = cJSON_AddArrayToObject(sub, "filters");
    for (size_t i = 0; i < q->n_matchers; i++) {
        const Prometheus__LabelMatcher *lm = q->matchers[i];
        if (lm->type != PROMETHEUS__LABEL_MATCHER__TYPE__EQ || !strcmp(lm->name, "__name__") ||
            !lm->value || !*lm->value)
            continue;
        size_t kl = strlen(lm->name), vl = strlen(lm->value);
        char *ek = malloc(3 * kl + 1), *ev = malloc(3 * vl + 1);
        if (!ek || !ev) {
            free(ek);
            free(ev);
            cJSON_Delete(o);
            return NULL;
        }
        prom_escape(lm->name, kl, special, ek, 3 * kl + 1);
        prom_escape(lm->value, vl, special, ev, 3 * vl + 1);
        cJSON *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "type", "literal_or");
        cJSON_AddStringToObject(f, "tagk", ek);
        cJSON_AddStringToObject(f, "filter", ev);
        cJSON_AddBoolToObject(f, "groupBy", false);
        cJSON_AddItemToArray(filters, f);
        free(ek);
        free(ev);
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* The metrics one remote read query reads when it has no __name__ equality matcher: the stored
 * (escaped) names whose unescaped form passes the query's __name__ matchers, in byte order. */
struct prom_metrics {
    const struct prom_matchers *by_name; /* the query's __name__ matchers alone */
    char **v;
    size_t n, cap, max;
    bool over, oom;
};

static int prom_metric_cb(void *arg, enum uid_kind k, const char *name, size_t len, uint64_t id)
{
    (void)k;
    (void)id;
    struct prom_metrics *x = arg;
    char buf[UID_MAX_NAME + 1];
    if (len > UID_MAX_NAME)
        return 0; /* the UID service never stores such a name */
    prom_unescape(name, len, buf);
    const char *nm = "__name__", *val = buf;
    if (!prom_matchers_match(x->by_name, &nm, &val, 1))
        return 0;
    if (x->n == x->max) {
        x->over = true;
        return 1;
    }
    if (x->n == x->cap) {
        size_t nc = x->cap ? 2 * x->cap : 64;
        char **nv = realloc(x->v, nc * sizeof(*nv));
        if (!nv) {
            x->oom = true;
            return 1;
        }
        x->v = nv;
        x->cap = nc;
    }
    if (!(x->v[x->n] = strndup(name, len))) {
        x->oom = true;
        return 1;
    }
    x->n++;
    return 0;
}

static void prom_metrics_clear(struct prom_metrics *x)
{
    for (size_t i = 0; i < x->n; i++)
        free(x->v[i]);
    free(x->v);
    x->v = NULL;
    x->n = x->cap = 0;
}

/* Fills x with the metrics query pq reads (it has no __name__ equality matcher). Returns 0, or
 * the HTTP status with msg: 400 past `max` metrics, 500 on a store error or out of memory. */
static int prom_metrics_list(struct tsd *t, const Prometheus__Query *pq, size_t max,
                             struct prom_metrics *x, char *msg, size_t msg_size)
{
    Prometheus__LabelMatcher **only = calloc(pq->n_matchers ? pq->n_matchers : 1, sizeof(*only));
    if (!only) {
        snprintf(msg, msg_size, "out of memory");
        return 500;
    }
    Prometheus__Query nq = PROMETHEUS__QUERY__INIT;
    nq.matchers = only;
    for (size_t i = 0; i < pq->n_matchers; i++)
        if (pq->matchers[i]->name && !strcmp(pq->matchers[i]->name, "__name__"))
            only[nq.n_matchers++] = pq->matchers[i];
    struct prom_matchers *by_name = prom_matchers_new(&nq, msg, msg_size);
    free(only);
    if (!by_name)
        return 400;
    *x = (struct prom_metrics){.by_name = by_name, .max = max};
    struct ct_err err = {0};
    int rc = uid_suggest(tsdb_uid(tsd_tsdb(t)), UID_METRIC, "", 0, prom_metric_cb, x, &err);
    prom_matchers_free(by_name);
    x->by_name = NULL;
    if (rc != CT_OK || x->oom) {
        snprintf(msg, msg_size, "remote read: listing the metrics: %s",
                 x->oom ? "out of memory" : err.msg);
        prom_metrics_clear(x);
        return x->oom ? 500 : http_status_of(rc, 500);
    }
    if (x->over) {
        snprintf(msg, msg_size,
                 "remote read: the query selects more than %zu metrics "
                 "(tsd.prometheus.read_max_metrics); add a __name__ matcher that selects fewer",
                 max);
        prom_metrics_clear(x);
        return 400;
    }
    return 0;
}

static void prom_read_work(struct http_req *r, void *arg)
{
    (void)arg;
    struct tsd *t = http_req_tsd(r);
    const struct conf *c = tsd_conf(t);
    char dkey[128], dval[128], msg[CT_ERR_MSG_MAX + 128]; /* an error's text arrives whole */
    if (!prom_default_tag_parse(conf_get_str(c, "tsd.prometheus.default_tag"), dkey, sizeof(dkey),
                                dval, sizeof(dval), msg, sizeof(msg))) {
        prom_reply_text(r, 500, msg);
        return;
    }
    char *raw = NULL;
    size_t raw_cap = 0, raw_len;
    if (!prom_body(r, &raw, &raw_cap, &raw_len)) {
        free(raw);
        return;
    }
    Prometheus__ReadRequest *rq =
        prometheus__read_request__unpack(NULL, raw_len, (const uint8_t *)raw);
    free(raw);
    if (!rq) {
        prom_reply_text(r, 400, "body is not a protobuf prometheus.ReadRequest");
        return;
    }
    struct prom_read_builder *rb = prom_rb_new(rq->n_queries);
    int status = 0;
    if (!rb) {
        status = 500;
        snprintf(msg, sizeof(msg), "out of memory");
    }
    struct qexec_options o;
    api_query_options(r, &o);
    o.rollup = NULL; /* raw points only */
    size_t max_metrics = (size_t)conf_get_int(c, "tsd.prometheus.read_max_metrics");
    for (size_t qi = 0; status == 0 && qi < rq->n_queries; qi++) {
        const Prometheus__Query *pq = rq->queries[qi];
        struct prom_matchers *m = prom_matchers_new(pq, msg, sizeof(msg));
        if (!m) {
            status = 400;
            break;
        }
        if (pq->end_timestamp_ms < pq->start_timestamp_ms || pq->end_timestamp_ms < 0) {
            prom_matchers_free(m);
            continue; /* an empty range: no series */
        }
        /* the metrics to read: the __name__ equality matcher's, or every matching one */
        struct prom_metrics names = {0};
        const char *metric = prom_matchers_metric(m);
        char *one = metric ? strdup(metric) : NULL;
        if (metric && !one) {
            status = 500;
            snprintf(msg, sizeof(msg), "out of memory");
            prom_matchers_free(m);
            break;
        }
        if (one) {
            names.v = &one;
            names.n = 1;
        } else {
            status = prom_metrics_list(t, pq, max_metrics, &names, msg, sizeof(msg));
            if (status != 0) {
                prom_matchers_free(m);
                break;
            }
        }
        struct qexec_options qo = o; /* the limits left for the rest of this query */
        int64_t t0 = prom_now_ms();
        struct prom_read x = {
            .rb = rb, .m = m, .default_key = dkey, .default_value = dval, .qi = qi};
        for (size_t mi = 0; status == 0 && mi < names.n; mi++) {
            if (mi > 0 && o.timeout_ms > 0) {
                int64_t left = o.timeout_ms - (prom_now_ms() - t0);
                if (left <= 0) {
                    status = 503;
                    snprintf(msg, sizeof(msg),
                             "remote read: query timed out after %lld ms (tsd.query.timeout) "
                             "reading %zu of %zu metrics",
                             (long long)o.timeout_ms, mi, names.n);
                    break;
                }
                qo.timeout_ms = left;
            }
            if (mi > 0 && o.max_datapoints > 0)
                qo.max_datapoints = x.points < o.max_datapoints ? o.max_datapoints - x.points : 1;
            char *js = prom_query_json(pq, names.v[mi], one != NULL, t->rules.special_chars);
            struct qspec *q = NULL;
            struct ct_err err = {0};
            if (!js || qspec_parse_json(js, strlen(js), 0, &q, &err) != CT_OK) {
                snprintf(msg, sizeof(msg), "remote read: %s", js ? err.msg : "out of memory");
                status = js ? 400 : 500;
                free(js);
                break;
            }
            free(js);
            q->start_ms = pq->start_timestamp_ms > 0 ? pq->start_timestamp_ms : 0;
            q->end_ms = pq->end_timestamp_ms;
            enum qexec_status qst = QEXEC_OK;
            int rc = qexec_run_points(tsd_tsdb(t), q, &qo, prom_read_point, &x, &qst, &err);
            qspec_free(q);
            if (rc != CT_OK) {
                if (x.oom) {
                    status = 500;
                    snprintf(msg, sizeof(msg), "out of memory");
                } else if (qst == QEXEC_BAD_REQUEST) {
                    /* a name the store does not know (metric, tag key or value of an equality
                     * matcher): no series can match; nothing was emitted (qexec.h) */
                    continue;
                } else {
                    status = qst == QEXEC_TOO_LARGE ? 413
                             : qst == QEXEC_TIMEOUT ? 503
                                                    : http_status_of(rc, 500);
                    snprintf(msg, sizeof(msg), "remote read: %s", err.msg);
                }
            }
        }
        free(x.last_metric);
        free(x.last_tags);
        if (one)
            free(one);
        else
            prom_metrics_clear(&names);
        prom_matchers_free(m);
    }
    prometheus__read_request__free_unpacked(rq, NULL);
    char *out = NULL;
    size_t out_len = 0;
    if (status == 0 && !prom_rb_finish(rb, &out, &out_len)) {
        status = 500;
        snprintf(msg, sizeof(msg), "out of memory");
    }
    prom_rb_free(rb);
    if (status != 0) {
        prom_reply_text(r, status, msg);
        return;
    }
    tstats_add(TSTATS_QUERY_SUCCESS, 1);
    http_reply_header(r, "Content-Encoding", "snappy");
    http_reply_raw(r, 200, "application/x-protobuf", out, out_len);
    free(out);
}

void api_prom_read_handle(struct http_req *r)
{
    struct ct_err err = {0};
    if (http_req_defer(r, prom_read_work, NULL, &err) != CT_OK)
        prom_reply_text(r, 503, "the TSD is overloaded; retry later");
}
