/* ingest.c - batches, the batch pool and the writer threads (see ingest.h).
 *
 * Invariants: (1) a batch's arena and record array are allocated once, at fixed capacity, so
 * adding a point never allocates and pointers into the arena stay valid; a point's strings are
 * stored together, "metric\0k1\0v1\0...", which is also its series key, hashed (hash_bytes)
 * when the point is added; (2) every batch is in exactly one place: the free list, a producer,
 * the write queue, a writer (alone or in a group of queued batches written together), or a done
 * callback; in_use counts those outside the free list; (3) fairness between lanes
 * (ingest_batch_set_lane), start-time fair queuing by points: a batch queued gets a virtual start
 * vstart = the larger of the pipeline's virtual time (the vstart of the latest batch taken) and
 * the virtual finish (vstart + points) of every batch of its lane queued or being written;
 * writers take the lowest vstart first, ties in queue order. vstart rises along a lane, so a
 * lane's batches are taken in the order queued; a lane with nothing queued or being written
 * starts at the virtual time, ahead of every batch queued behind the batches being written.
 * (4) serving lists the batches taken and not yet written back. A group's done callbacks run in
 * the order taken.
 * Locking: mu guards free list, queue, in_use and stopping; free_cv signals a released batch,
 * queue_cv a queued batch or stopping. */
#include "tsd/ingest.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "storage/coding.h"
#include "storage/hash.h"

#define INGEST_MAX_MSGS 16 /* distinct messages per batch */
#define INGEST_MSG_LEN  CT_ERR_MSG_MAX /* a whole ct_err message */
#define INGEST_SLACK    (64u << 10) /* arena room beyond batch_bytes: one point always fits */

struct ingest_rec {
    uint64_t hash;    /* hash_bytes() of the series key, with the pipeline's seed */
    uint32_t key_off; /* metric, then k\0v\0 pairs */
    uint32_t key_len;
    uint16_t ntags;
    uint8_t kind;
    uint8_t outcome;
    uint8_t ms;
    int8_t code; /* the failure's ct_err code (CT_OK = not known); in the padding */
    int16_t msg; /* index into msgs, -1 = none */
    int64_t ts_ms;
    int64_t i;
    double d;
    uint64_t owner;
};

struct ingest_batch {
    char *arena;
    size_t used, cap, soft_cap;
    struct ingest_rec *recs;
    size_t n, cap_recs;
    char msgs[INGEST_MAX_MSGS][INGEST_MSG_LEN];
    int nmsgs;
    int result;
    char result_msg[INGEST_MSG_LEN];
    uint64_t seq;
    uint64_t lane;   /* the producer's fairness lane (ingest_batch_set_lane); 0 unless set */
    uint64_t vstart; /* set when queued (invariant 3) */
    struct ingest_batch *snext; /* the serving list (invariant 4) */
    uint64_t seed;              /* the pipeline's hash seed */
    ingest_done_fn done;
    void *done_arg;
    struct ingest_batch *next;
};

struct ingest {
    pthread_mutex_t mu;
    pthread_cond_t free_cv, queue_cv;
    struct ingest_batch *free_list;
    struct ingest_batch *q_head, *q_tail;
    size_t in_use;
    bool stopping;
    struct ingest_batch **all;
    size_t nall;
    uint64_t vtime;               /* [mu] the highest vstart of a batch taken so far */
    struct ingest_batch *serving; /* [mu] batches being written (invariant 4) */
    size_t batch_points;
    pthread_t *writers;
    int nwriters;
    size_t group_points;
    ingest_write_fn fn;
    void *arg;
    uint64_t seed; /* every batch's seed (the series-key hash) */
};

/* The series-key hash (storage/hash.h) is computed by the producer while it copies the point,
 * so the writer thread (the pipeline's bottleneck) finds a known series with one probe; the seed
 * is random per pipeline, so clients cannot aim for collisions in the writers' series caches. */

void ingest_options_init(struct ingest_options *o)
{
    o->writers = 1;
    o->batches = 32;
    o->batch_points = 4096;
    o->batch_bytes = 512u << 10;
    o->group_points = 16384;
}

size_t ingest_pool_bytes(const struct ingest_options *o)
{
    /* what ingest_batch_create allocates, per batch */
    return o->batches * (sizeof(struct ingest_batch) + o->batch_bytes + INGEST_SLACK +
                         o->batch_points * sizeof(struct ingest_rec));
}

static void ingest_batch_destroy(struct ingest_batch *b)
{
    if (!b)
        return;
    free(b->arena);
    free(b->recs);
    free(b);
}

static struct ingest_batch *ingest_batch_create(const struct ingest_options *o)
{
    struct ingest_batch *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    b->soft_cap = o->batch_bytes;
    b->cap = o->batch_bytes + INGEST_SLACK;
    b->cap_recs = o->batch_points;
    b->arena = malloc(b->cap);
    b->recs = malloc(b->cap_recs * sizeof(*b->recs));
    if (!b->arena || !b->recs) {
        ingest_batch_destroy(b);
        return NULL;
    }
    return b;
}

static void ingest_batch_reset(struct ingest_batch *b)
{
    b->used = 0;
    b->n = 0;
    b->nmsgs = 0;
    b->result = CT_OK;
    b->result_msg[0] = '\0';
    b->seq = 0;
    b->lane = 0;
    b->done = NULL;
    b->done_arg = NULL;
    b->next = NULL;
}

/* Fills b's next record for p, whose key[0..len) is at b->arena + b->used, with hash. */
static void batch_rec_add(struct ingest_batch *b, const struct put_point *p, size_t len,
                          uint64_t hash, uint64_t owner)
{
    struct ingest_rec *r = &b->recs[b->n];
    r->key_off = (uint32_t)b->used;
    r->key_len = (uint32_t)len;
    r->ntags = (uint16_t)p->ntags;
    r->kind = (uint8_t)p->value.kind;
    r->outcome = INGEST_PENDING;
    r->code = CT_OK;
    r->ms = p->ms;
    r->msg = -1;
    r->ts_ms = p->ts_ms;
    r->i = p->value.i;
    r->d = p->value.d;
    r->owner = owner;
    r->hash = hash;
    b->used += len;
    b->n++;
}

bool ingest_batch_add(struct ingest_batch *b, const struct put_point *p, uint64_t owner)
{
    if (b->n == b->cap_recs || b->used >= b->soft_cap || p->ntags > INGEST_MAX_TAGS)
        return false;
    size_t need = put_point_key_len(p);
    if (b->used + need > b->cap || need > UINT32_MAX)
        return false;
    char *key = b->arena + b->used;
    put_point_key_write(key, p);
    batch_rec_add(b, p, need, hash_bytes(key, need, b->seed), owner);
    return true;
}

uint64_t ingest_key_hash(const struct ingest *g, const char *key, size_t len)
{
    return hash_bytes(key, len, g->seed);
}

bool ingest_batch_add_key(struct ingest_batch *b, const struct put_point *p, const char *key,
                          size_t len, uint64_t hash, uint64_t owner)
{
    if (b->n == b->cap_recs || b->used >= b->soft_cap || p->ntags > INGEST_MAX_TAGS ||
        b->used + len > b->cap || len > UINT32_MAX)
        return false;
    memcpy(b->arena + b->used, key, len);
    batch_rec_add(b, p, len, hash, owner);
    return true;
}

size_t ingest_batch_count(const struct ingest_batch *b)
{
    return b->n;
}

bool ingest_batch_full(const struct ingest_batch *b)
{
    return b->n == b->cap_recs || b->used >= b->soft_cap;
}

void ingest_batch_point(const struct ingest_batch *b, size_t i, struct ingest_point *p)
{
    const struct ingest_rec *r = &b->recs[i];
    p->metric = b->arena + r->key_off;
    p->ts_ms = r->ts_ms;
    p->ms = r->ms;
    p->value.kind = (enum put_kind)r->kind;
    p->value.i = r->i;
    p->value.d = r->d;
    p->ntags = r->ntags;
    const char *s = p->metric + strlen(p->metric) + 1; /* k\0v\0 pairs follow the metric */
    for (size_t t = 0; t < r->ntags; t++) {
        p->tagk[t] = s;
        s += strlen(s) + 1;
        p->tagv[t] = s;
        s += strlen(s) + 1;
    }
    p->owner = r->owner;
    p->series_key = b->arena + r->key_off;
    p->series_key_len = r->key_len;
    p->series_hash = r->hash;
}

uint64_t ingest_batch_series_hash(const struct ingest_batch *b, size_t i)
{
    return b->recs[i].hash;
}

void ingest_batch_point_brief(const struct ingest_batch *b, size_t i, struct ingest_point_brief *p)
{
    const struct ingest_rec *r = &b->recs[i];
    p->series_key = b->arena + r->key_off;
    p->series_key_len = r->key_len;
    p->series_hash = r->hash;
    p->ts_ms = r->ts_ms;
    p->ms = r->ms;
    p->value.kind = (enum put_kind)r->kind;
    p->value.i = r->i;
    p->value.d = r->d;
}

void ingest_batch_set_outcome(struct ingest_batch *b, size_t i, enum ingest_outcome o,
                              const char *msg)
{
    struct ingest_rec *r = &b->recs[i];
    r->outcome = (uint8_t)o;
    r->code = CT_OK;
    r->msg = -1;
    if (!msg || !*msg)
        return;
    for (int m = b->nmsgs - 1; m >= 0; m--) {
        if (!strncmp(b->msgs[m], msg, INGEST_MSG_LEN - 1)) {
            r->msg = (int16_t)m;
            return;
        }
    }
    int m = b->nmsgs < INGEST_MAX_MSGS ? b->nmsgs++ : INGEST_MAX_MSGS - 1;
    snprintf(b->msgs[m], INGEST_MSG_LEN, "%s", msg);
    r->msg = (int16_t)m;
}

void ingest_batch_set_failure(struct ingest_batch *b, size_t i, enum ingest_outcome o,
                              const struct ct_err *e)
{
    ingest_batch_set_outcome(b, i, o, e->msg);
    /* the codes are small negative numbers (storage/ct_err.h): they fit the byte */
    b->recs[i].code = (int8_t)(e->code >= INT8_MIN && e->code <= INT8_MAX ? e->code : CT_EIO);
}

int ingest_batch_outcome_code(const struct ingest_batch *b, size_t i)
{
    return b->recs[i].code;
}

enum ingest_outcome ingest_batch_outcome(const struct ingest_batch *b, size_t i, const char **msg)
{
    const struct ingest_rec *r = &b->recs[i];
    if (msg)
        *msg = r->msg >= 0 ? b->msgs[r->msg] : "";
    return (enum ingest_outcome)r->outcome;
}

int ingest_batch_result(const struct ingest_batch *b, const char **msg)
{
    if (msg)
        *msg = b->result_msg;
    return b->result;
}

void ingest_batch_set_seq(struct ingest_batch *b, uint64_t seq)
{
    b->seq = seq;
}

uint64_t ingest_batch_seq(const struct ingest_batch *b)
{
    return b->seq;
}

void ingest_batch_set_lane(struct ingest_batch *b, uint64_t lane)
{
    b->lane = lane;
}

/* Takes the next group off the queue (g->mu held, queue not empty) into group[] (invariant 3):
 * repeatedly the queued batch of the lowest vstart, the oldest of those, up to group_points (the
 * first always) and INGEST_MAX_GROUP. While batches of two or more lanes are queued, a group is
 * one batch's worth of points (batch_points): it is written and acknowledged as a whole, so a
 * light lane's batch, taken next, waits for one group, not for another lane's backlog. The queue
 * holds at most the pool's batches, so the scans stay short. Returns the number taken; *points
 * their points. */
static size_t ingest_take_group(struct ingest *g, struct ingest_batch **group, size_t *points)
{
    bool contended = false;
    for (struct ingest_batch *b = g->q_head; b && !contended; b = b->next)
        contended = b->lane != g->q_head->lane;
    size_t limit =
        contended && g->batch_points < g->group_points ? g->batch_points : g->group_points;
    size_t nb = 0, pts = 0;
    while (g->q_head && nb < INGEST_MAX_GROUP) {
        struct ingest_batch *best = NULL, *best_prev = NULL, *prev = NULL;
        for (struct ingest_batch *b = g->q_head; b; prev = b, b = b->next) {
            if (!best || b->vstart < best->vstart) {
                best = b;
                best_prev = prev;
            }
        }
        if (nb > 0 && pts + best->n > limit)
            break;
        if (best_prev)
            best_prev->next = best->next;
        else
            g->q_head = best->next;
        if (g->q_tail == best)
            g->q_tail = best_prev;
        best->next = NULL;
        if (best->vstart > g->vtime)
            g->vtime = best->vstart;
        best->snext = g->serving;
        g->serving = best;
        pts += best->n;
        group[nb++] = best;
    }
    *points = pts;
    return nb;
}

/* Drops the group's batches from the serving list (g->mu held). */
static void ingest_served(struct ingest *g, struct ingest_batch *const *group, size_t nb)
{
    for (size_t k = 0; k < nb; k++) {
        struct ingest_batch **pp = &g->serving;
        while (*pp && *pp != group[k])
            pp = &(*pp)->snext;
        if (*pp)
            *pp = group[k]->snext;
        group[k]->snext = NULL;
    }
}

static void *ingest_writer_main(void *arg)
{
    pthread_setname_np(pthread_self(), "ct-writer");
    struct ingest *g = arg;
    struct ingest_batch *group[INGEST_MAX_GROUP];
    for (;;) {
        pthread_mutex_lock(&g->mu);
        while (!g->q_head && !g->stopping)
            pthread_cond_wait(&g->queue_cv, &g->mu);
        if (!g->q_head) {
            pthread_mutex_unlock(&g->mu);
            break;
        }
        /* Take the queued batches up to group_points together (never waiting for more): a
         * writer that has fallen behind writes bigger sorted groups, one store write each. */
        size_t points = 0;
        size_t nb = ingest_take_group(g, group, &points);
        pthread_mutex_unlock(&g->mu);

        struct ct_err err = {0};
        int rc = points > 0 ? g->fn(g->arg, group, nb, &err) : CT_OK;
        pthread_mutex_lock(&g->mu);
        ingest_served(g, group, nb);
        pthread_mutex_unlock(&g->mu);
        for (size_t k = 0; k < nb; k++) {
            struct ingest_batch *b = group[k];
            b->result = rc;
            if (rc != CT_OK)
                snprintf(b->result_msg, sizeof(b->result_msg), "%s", err.msg);
            for (size_t i = 0; i < b->n; i++) {
                if (b->recs[i].outcome != INGEST_PENDING)
                    continue;
                if (rc == CT_OK) {
                    b->recs[i].outcome = INGEST_WRITTEN;
                } else {
                    if (err.code == CT_OK)
                        err.code = rc;
                    ingest_batch_set_failure(b, i, INGEST_STORE_ERROR, &err);
                }
            }
        }
        for (size_t k = 0; k < nb; k++) { /* in the order taken */
            struct ingest_batch *b = group[k];
            if (b->done)
                b->done(b->done_arg, b);
            else
                ingest_batch_release(g, b);
        }
    }
    return NULL;
}

int ingest_new(const struct ingest_options *o, ingest_write_fn fn, void *arg, struct ingest **out,
               struct ct_err *err)
{
    struct ingest_options d;
    ingest_options_init(&d);
    if (!o)
        o = &d;
    struct ingest *g = calloc(1, sizeof(*g));
    if (!g)
        return ct_err_set(err, CT_ENOMEM, "out of memory creating the ingest pipeline");
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->free_cv, NULL);
    pthread_cond_init(&g->queue_cv, NULL);
    g->fn = fn;
    g->arg = arg;
    g->group_points = o->group_points;
    g->batch_points = o->batch_points > 0 ? o->batch_points : 1;
    struct ingest_options oo = *o;
    if (oo.batches < 2)
        oo.batches = 2;
    if (oo.batch_points < 1)
        oo.batch_points = 1;
    if (oo.batch_bytes < 4096)
        oo.batch_bytes = 4096;
    if (oo.writers < 1)
        oo.writers = 1;
    uint64_t seed;
    if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != (ssize_t)sizeof(seed)) {
        struct timespec ts; /* no entropy yet (early boot): the clock still varies per run */
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ULL ^ (uint64_t)ts.tv_sec ^
               (uint64_t)(uintptr_t)g;
    }
    g->seed = seed;
    g->all = calloc(oo.batches, sizeof(*g->all));
    g->writers = calloc((size_t)oo.writers, sizeof(*g->writers));
    if (!g->all || !g->writers)
        goto oom;
    for (size_t i = 0; i < oo.batches; i++) {
        struct ingest_batch *b = ingest_batch_create(&oo);
        if (!b)
            goto oom;
        ingest_batch_reset(b);
        b->seed = seed;
        g->all[g->nall++] = b;
        b->next = g->free_list;
        g->free_list = b;
    }
    for (int i = 0; i < oo.writers; i++) {
        int rc = pthread_create(&g->writers[i], NULL, ingest_writer_main, g);
        if (rc != 0) {
            ingest_free(g);
            return ct_err_errno(err, CT_EIO, rc, "cannot start ingest writer thread %d", i);
        }
        g->nwriters++;
    }
    *out = g;
    return CT_OK;
oom:
    ingest_free(g);
    return ct_err_set(err, CT_ENOMEM, "out of memory creating the ingest pipeline");
}

void ingest_free(struct ingest *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    g->stopping = true;
    pthread_cond_broadcast(&g->queue_cv);
    pthread_mutex_unlock(&g->mu);
    for (int i = 0; i < g->nwriters; i++)
        pthread_join(g->writers[i], NULL);
    for (size_t i = 0; i < g->nall; i++)
        ingest_batch_destroy(g->all[i]);
    free(g->all);
    free(g->writers);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->free_cv);
    pthread_cond_destroy(&g->queue_cv);
    free(g);
}

struct ingest_batch *ingest_batch_try_get(struct ingest *g)
{
    return ingest_batch_try_get_spare(g, 0);
}

struct ingest_batch *ingest_batch_try_get_spare(struct ingest *g, size_t keep)
{
    pthread_mutex_lock(&g->mu);
    struct ingest_batch *b = g->nall - g->in_use > keep ? g->free_list : NULL;
    if (b) {
        g->free_list = b->next;
        b->next = NULL;
        g->in_use++;
    }
    pthread_mutex_unlock(&g->mu);
    return b;
}

struct ingest_batch *ingest_batch_get(struct ingest *g)
{
    pthread_mutex_lock(&g->mu);
    while (!g->free_list)
        pthread_cond_wait(&g->free_cv, &g->mu);
    struct ingest_batch *b = g->free_list;
    g->free_list = b->next;
    b->next = NULL;
    g->in_use++;
    pthread_mutex_unlock(&g->mu);
    return b;
}

void ingest_submit(struct ingest *g, struct ingest_batch *b, ingest_done_fn done, void *arg)
{
    b->done = done;
    b->done_arg = arg;
    b->next = NULL;
    pthread_mutex_lock(&g->mu);
    b->vstart = g->vtime;
    for (struct ingest_batch *q = g->q_head; q; q = q->next)
        if (q->lane == b->lane && q->vstart + q->n > b->vstart)
            b->vstart = q->vstart + q->n;
    for (struct ingest_batch *q = g->serving; q; q = q->snext)
        if (q->lane == b->lane && q->vstart + q->n > b->vstart)
            b->vstart = q->vstart + q->n;
    if (g->q_tail)
        g->q_tail->next = b;
    else
        g->q_head = b;
    g->q_tail = b;
    pthread_cond_signal(&g->queue_cv);
    pthread_mutex_unlock(&g->mu);
}

void ingest_batch_release(struct ingest *g, struct ingest_batch *b)
{
    ingest_batch_reset(b);
    pthread_mutex_lock(&g->mu);
    b->next = g->free_list;
    g->free_list = b;
    g->in_use--;
    pthread_cond_signal(&g->free_cv);
    pthread_mutex_unlock(&g->mu);
}

size_t ingest_in_use(struct ingest *g)
{
    pthread_mutex_lock(&g->mu);
    size_t n = g->in_use;
    pthread_mutex_unlock(&g->mu);
    return n;
}
