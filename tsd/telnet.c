/* telnet.c - the line protocol (docs/opentsdb-compat.md, "Line protocol"): framing of
 * '\n'-terminated lines, put parsing on the event loop into the shared current batch, the other
 * commands, and the durability contract.
 *
 * Durability contract: a put is acknowledged only by the answer to a LATER line on the same
 * connection. Before any reply is written, every earlier put of the connection must be in the
 * write-ahead log: if it is not, the connection stops reading (its input stays buffered), its
 * current batch is submitted at once, and the line is processed again when its batches are
 * written (telnet_done_ev_cb). Success of a put is silent.
 *
 * Batches: each connection fills its own batch (c->cur), in its own fairness lane of the ingest
 * pipeline (ingest_batch_set_lane), so a connection's few points are not queued behind another
 * connection's flood (the writers serve lanes round robin). A batch is submitted when full, when
 * its connection needs a reply or closes, or TELNET_FLUSH_NS after it was taken (the flush timer).
 *
 * Invariants: (1) c->unlogged counts c's batches submitted and not yet written; c may reply iff
 * it is 0 and c->cur holds no point. (2) c is on the filling list (oldest first) iff c->cur is
 * set; c->cur_ns is when it was taken. (3) A connection is in at most one of: running,
 * waiting (for its puts to be logged), blocked (no free batch: backpressure), closing.
 * (4) a connection id is (generation << 32 | slot); a stale id (the slot was reused) finds
 * nothing, so a late storage error never reaches another client.
 * (5) No allocation per line: lines are read in place from the bufferevent's chunks, and a line
 * that straddles chunks is copied into the fixed per-daemon line buffer.
 * (6) Output is bounded: while more than TSD_TELNET_OUT_HIGH bytes of replies are unsent, the
 * connection is not read (its input stays in the kernel); the write callback resumes it.
 * (7) Each connection keeps the tags text of its latest put lines, split (tsd/put.h, struct
 * put_memo: a fixed ~620 bytes in the connection): a line with the same tags text byte for
 * byte is split from it, and its series key is built from the memo's key part (one copy, not
 * one per name). The answers are those of a fresh parse: only the split, a function of the
 * text, is reused; every check runs for every line.
 * All of this runs on the event-loop thread. */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "storage/clock.h"
#include "storage/wc.h"
#include "tsd/api_histogram.h"
#include "tsd/api_rollup.h"
#include "tsd/auth.h"
#include "tsd/build_info.h"
#include "tsd/conf.h"
#include "tsd/ingest.h"
#include "tsd/membudget.h"
#include "tsd/proto_graphite.h"
#include "tsd/store.h"
#include "tsd/tlog.h"
#include "tsd/tsd_int.h"
#include "tsd/tstats.h"

#define TELNET_OUT_LOW (64u << 10)
/* a connection's batch is submitted at the latest this long after it was taken */
#define TELNET_FLUSH_NS 2000000
/* failed puts answered one line each per connection and batch; the rest get one count line */
#define TELNET_ERR_LINES 100

enum telnet_state {
    TC_RUNNING = 0,
    TC_WAITING = 1, /* for its batches to be written */
    TC_BLOCKED = 2, /* for a free batch */
    TC_CLOSING = 3, /* flush output then close */
};

struct telnet_conn {
    struct tsd *tsd;
    struct bufferevent *bev;
    uint64_t id;
    enum telnet_state state;
    struct ingest_batch *cur;      /* the batch its puts go into, or NULL (invariant 2) */
    int64_t cur_ns;                /* clock_mono_ns() when cur was taken */
    struct telnet_conn *fill_prev; /* the filling list, oldest cur first */
    struct telnet_conn *fill_next;
    uint32_t unlogged;        /* its batches submitted, not yet written (invariant 1) */
    uint64_t hpending_seq;    /* the histogram batch holding c's latest histogram line (0 = none) */
    uint64_t hblock_seq;      /* a histogram line waits for this batch: the next one is full */
    bool discarding;          /* inside an over-long line */
    bool eof;                 /* the client half-closed: close once everything is answered */
    bool out_full;            /* reading paused: the client does not read its replies (5) */
    uint64_t puts_uncounted;  /* accepted puts not yet added to the stats (telnet_count_puts) */
    struct telnet_conn *next; /* waiting or blocked list */
    /* the failed puts of the batch being answered (telnet_done_ev_cb): lines written, the rest
     * counted; err_seq names that batch, err_next links the connections it failed puts of */
    uint64_t err_seq;
    uint32_t err_lines;
    uint64_t err_more;
    struct telnet_conn *err_next;
    char peer[64];
    struct auth_session auth; /* tsd/auth.h: `auth <token>` state */
    bool graphite_only;       /* accepted on tsd.graphite.port: every line is Graphite */
    struct put_memo memo;     /* the tags text of its last put lines and their split (7) */
};

static void telnet_process(struct telnet_conn *c);
static void telnet_close(struct telnet_conn *c);

/* Adds c's accepted puts to the stats: once per read round and before any reply, so the
 * counters cost two atomic adds per round, not per point, and `stats` still sees every put. */
static void telnet_count_puts(struct telnet_conn *c)
{
    if (c->puts_uncounted) {
        tstats_add(TSTATS_RPC_PUT, c->puts_uncounted);
        tstats_add(TSTATS_POINTS_ADDED, c->puts_uncounted);
        c->puts_uncounted = 0;
    }
}

/* ---- the loop-side ingest state (one per daemon) -------------------------------------------- */

static struct telnet_ingest *ti(struct tsd *t)
{
    return &t->telnet;
}

static struct telnet_conn *telnet_find(struct tsd *t, uint64_t id)
{
    uint32_t slot = (uint32_t)id;
    if (slot >= t->ntconn_slots)
        return NULL;
    struct telnet_conn *c = t->tconns[slot];
    return c && c->id == id ? c : NULL;
}

static void telnet_write(struct telnet_conn *c, const char *s, size_t n)
{
    if (c->state == TC_CLOSING && !c->bev)
        return;
    if (bufferevent_write(c->bev, s, n) != 0)
        c->state = TC_CLOSING;
}

static void telnet_printf(struct telnet_conn *c, const char *fmt, ...) CT_PRINTF(2, 3);
static void telnet_printf(struct telnet_conn *c, const char *fmt, ...)
{
    char buf[CT_ERR_MSG_MAX + 256]; /* a whole error message and its prefix */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(buf))
        n = (int)sizeof(buf) - 1;
    telnet_write(c, buf, (size_t)n);
}

static void telnet_batch_done_cb(void *arg, struct ingest_batch *b)
{
    struct tsd *t = arg;
    struct telnet_ingest *g = ti(t);
    pthread_mutex_lock(&g->mu);
    g->done[g->ndone++] = b; /* ndone <= batches in the pool < TELNET_SEQ_RING */
    pthread_mutex_unlock(&g->mu);
    event_active(g->done_ev, EV_READ, 0);
}

static void telnet_fill_unlink(struct telnet_conn *c)
{
    struct telnet_ingest *g = ti(c->tsd);
    if (c->fill_prev)
        c->fill_prev->fill_next = c->fill_next;
    else
        g->filling = c->fill_next;
    if (c->fill_next)
        c->fill_next->fill_prev = c->fill_prev;
    else
        g->filling_tail = c->fill_prev;
    c->fill_prev = c->fill_next = NULL;
}

/* Submits c's batch if it has points (else gives it back); c->cur is NULL after. */
static void telnet_submit_conn(struct telnet_conn *c)
{
    struct tsd *t = c->tsd;
    struct ingest_batch *b = c->cur;
    if (!b)
        return;
    telnet_fill_unlink(c);
    c->cur = NULL;
    if (ingest_batch_count(b) == 0) {
        ingest_batch_release(t->ingest, b);
        return;
    }
    ingest_batch_set_seq(b, c->id); /* the done callback finds c by it */
    ingest_batch_set_lane(b, c->id);
    c->unlogged++;
    ti(t)->inflight++;
    ingest_submit(t->ingest, b, telnet_batch_done_cb, t);
}

static void telnet_arm_flush(struct tsd *t, int64_t ns)
{
    struct telnet_ingest *g = ti(t);
    if (g->timer_armed)
        return;
    struct timeval tv = {0, (suseconds_t)(ns > 1000 ? ns / 1000 : 1)};
    evtimer_add(g->flush_ev, &tv);
    g->timer_armed = true;
}

/* Submits every batch taken TELNET_FLUSH_NS ago or earlier; rearms for the oldest of the rest. */
static void telnet_flush_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tsd *t = arg;
    struct telnet_ingest *g = ti(t);
    g->timer_armed = false;
    int64_t now = (int64_t)clock_mono_ns();
    while (g->filling && now - g->filling->cur_ns >= TELNET_FLUSH_NS)
        telnet_submit_conn(g->filling);
    if (g->filling)
        telnet_arm_flush(t, g->filling->cur_ns + TELNET_FLUSH_NS - now);
}

/* c's batch to add to (a full one submitted first), or NULL when none is free (backpressure). */
static struct ingest_batch *telnet_current(struct telnet_conn *c)
{
    struct tsd *t = c->tsd;
    struct telnet_ingest *g = ti(t);
    if (c->cur && ingest_batch_full(c->cur))
        telnet_submit_conn(c);
    if (!c->cur) {
        /* the last free batch is left to connections with none in the pipeline: a light
         * connection is not queued for a batch behind the floods that hold the others */
        c->cur = ingest_batch_try_get_spare(t->ingest, c->unlogged > 0 ? 1 : 0);
        if (!c->cur)
            return NULL;
        c->cur_ns = (int64_t)clock_mono_ns();
        c->fill_next = NULL;
        c->fill_prev = g->filling_tail;
        if (g->filling_tail)
            g->filling_tail->fill_next = c;
        else
            g->filling = c;
        g->filling_tail = c;
        telnet_arm_flush(t, TELNET_FLUSH_NS);
    }
    return c->cur;
}

/* ---- histogram and rollup lines: batched, written by their own thread ----------------------
 * A `histogram` or `rollup` line is parsed and checked on the loop into the current side batch
 * (its histograms: api_histogram.h, its rollups: api_rollup.h); a writer thread writes a whole
 * batch (one store write per kind) and hands it back through done_ev. As with puts, success is
 * silent and the line is acknowledged by the reply to a later line: before any reply, every
 * earlier histogram or rollup of the connection must be written (c->hpending_seq <=
 * logged_seq). One batch is written at a time; lines arriving meanwhile gather in the current
 * one, submitted when the write returns, when it is full, by the flush timer, or when a
 * connection needs a reply. A full batch while another is being written makes the line wait
 * for that write (c->hblock_seq). Refused lines of one batch are answered histograms first,
 * then rollups, each kind in line order. The writer runs when histograms or rollups are on. */
#define TELNET_HISTO_BATCH 1024

/* One side batch: the histogram and the rollup lines gathered together. */
struct side_batch {
    struct histo_batch *h;
    struct rollup_batch *r;
};

static void side_batch_free(struct side_batch *b)
{
    if (!b)
        return;
    histo_batch_free(b->h);
    rollup_batch_free(b->r);
    free(b);
}

static struct side_batch *side_batch_new(void)
{
    struct side_batch *b = calloc(1, sizeof(*b));
    if (b && (!(b->h = histo_batch_new()) || !(b->r = rollup_batch_new()))) {
        side_batch_free(b);
        return NULL;
    }
    return b;
}

static size_t side_batch_count(const struct side_batch *b)
{
    return histo_batch_count(b->h) + rollup_batch_count(b->r);
}

struct telnet_histo {
    struct tsd *tsd;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct side_batch *queued; /* [mu] handed to the writer */
    struct side_batch *done;   /* [mu] written, for the loop */
    bool stop;                 /* [mu] */
    struct side_batch *cur;    /* being filled (loop) */
    struct side_batch *spare;  /* free (loop) */
    uint64_t cur_seq, next_seq, flying_seq, logged_seq;
    bool flying;
    bool thread_started;
    struct event *done_ev, *flush_ev;
    bool timer_armed;
};

static bool telnet_conn_ready(struct telnet_conn *c)
{
    struct telnet_histo *h = ti(c->tsd)->histo;
    if (c->unlogged > 0 || (c->cur && ingest_batch_count(c->cur) > 0))
        return false;
    return !h || (c->hpending_seq <= h->logged_seq && c->hblock_seq <= h->logged_seq);
}

static void *telnet_histo_writer(void *arg)
{
    pthread_setname_np(pthread_self(), "ct-histo");
    struct telnet_histo *h = arg;
    pthread_mutex_lock(&h->mu);
    for (;;) {
        while (!h->queued && !h->stop)
            pthread_cond_wait(&h->cv, &h->mu);
        if (!h->queued)
            break;
        struct side_batch *b = h->queued;
        h->queued = NULL;
        pthread_mutex_unlock(&h->mu);
        int64_t rq = tsdstore_request_ms(h->tsd->tstore); /* as tsdstore_write: a deadline */
        uint64_t prev = rq ? wc_request_deadline_begin(rq) : wc_request_deadline();
        if (histo_batch_count(b->h))
            api_histogram_telnet_write(h->tsd, b->h);
        if (rollup_batch_count(b->r))
            api_rollup_telnet_write(h->tsd, b->r);
        wc_request_deadline_set(prev);
        pthread_mutex_lock(&h->mu);
        h->done = b;
        event_active(h->done_ev, EV_READ, 0);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* Hands the current batch to the writer when it has lines and none is being written. */
static void telnet_histo_submit(struct tsd *t)
{
    struct telnet_histo *h = ti(t)->histo;
    if (!h || h->flying || !h->cur || side_batch_count(h->cur) == 0)
        return;
    h->flying = true;
    h->flying_seq = h->cur_seq;
    pthread_mutex_lock(&h->mu);
    h->queued = h->cur;
    pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
    h->cur = h->spare;
    h->spare = NULL;
    h->cur_seq = ++h->next_seq;
    if (h->timer_armed) {
        event_del(h->flush_ev);
        h->timer_armed = false;
    }
}

static void telnet_histo_flush_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tsd *t = arg;
    ti(t)->histo->timer_armed = false;
    telnet_histo_submit(t);
}

static void telnet_wake_waiters(struct tsd *t);

/* A written batch: its failed lines answered (each by its own line, in order), its seq
 * logged, the next batch submitted, waiting connections woken. */
static void telnet_histo_done_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tsd *t = arg;
    struct telnet_histo *h = ti(t)->histo;
    pthread_mutex_lock(&h->mu);
    struct side_batch *b = h->done;
    h->done = NULL;
    pthread_mutex_unlock(&h->mu);
    if (!b)
        return;
    size_t nh = histo_batch_count(b->h), n = nh + rollup_batch_count(b->r), failed = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t owner;
        const char *why = i < nh ? histo_batch_failure(b->h, i, &owner)
                                 : rollup_batch_failure(b->r, i - nh, &owner);
        if (!why)
            continue;
        failed++;
        struct telnet_conn *c = telnet_find(t, owner);
        if (c && t->return_errors && c->state != TC_CLOSING)
            telnet_printf(c, "%s\n", why);
    }
    if (failed)
        tstats_add(TSTATS_POINTS_FAILED, failed);
    histo_batch_reset(b->h);
    rollup_batch_reset(b->r);
    h->spare = b;
    h->flying = false;
    h->logged_seq = h->flying_seq;
    telnet_histo_submit(t);
    telnet_wake_waiters(t);
    tsd_ingest_idle_check(t);
}

static int telnet_histo_init(struct tsd *t, struct ct_err *err)
{
    struct telnet_histo *h = calloc(1, sizeof(*h));
    if (!h)
        return ct_err_set(err, CT_ENOMEM, "out of memory for the histogram writer");
    h->tsd = t;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    ti(t)->histo = h;
    h->cur = side_batch_new();
    h->spare = side_batch_new();
    h->done_ev = event_new(t->base, -1, 0, telnet_histo_done_cb, t);
    h->flush_ev = evtimer_new(t->base, telnet_histo_flush_cb, t);
    if (!h->cur || !h->spare || !h->done_ev || !h->flush_ev)
        return ct_err_set(err, CT_ENOMEM, "out of memory for the histogram and rollup writer");
    h->cur_seq = h->next_seq = 1;
    int e = pthread_create(&h->thread, NULL, telnet_histo_writer, h);
    if (e != 0)
        return ct_err_set(err, CT_EIO, "cannot start the histogram writer: %s", strerror(e));
    h->thread_started = true;
    return CT_OK;
}

/* Stops the writer (after the batch it was given) and frees everything. */
static void telnet_histo_destroy(struct tsd *t)
{
    struct telnet_histo *h = ti(t)->histo;
    if (!h)
        return;
    if (h->thread_started) {
        pthread_mutex_lock(&h->mu);
        h->stop = true;
        pthread_cond_signal(&h->cv);
        pthread_mutex_unlock(&h->mu);
        pthread_join(h->thread, NULL);
    }
    if (h->done_ev)
        event_free(h->done_ev);
    if (h->flush_ev)
        event_free(h->flush_ev);
    side_batch_free(h->cur);
    side_batch_free(h->spare);
    side_batch_free(h->queued);
    side_batch_free(h->done);
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    free(h);
    ti(t)->histo = NULL;
}

static bool telnet_histo_idle(struct tsd *t)
{
    struct telnet_histo *h = ti(t)->histo;
    return !h || (!h->flying && (!h->cur || side_batch_count(h->cur) == 0));
}

static const char *telnet_outcome_prefix(enum ingest_outcome o)
{
    switch (o) {
    case INGEST_ILLEGAL:
        return "put: illegal argument: ";
    case INGEST_UNKNOWN_METRIC:
        return "put: unknown metric: ";
    case INGEST_THROTTLED: /* OpenTSDB's line for PleaseThrottleException */
        return "put: Please throttle writes: ";
    default:
        return "put: HBase error: ";
    }
}

static void telnet_wake_waiters(struct tsd *t)
{
    struct telnet_ingest *g = ti(t);
    struct telnet_conn **pp = &g->waiting;
    struct telnet_conn *ready = NULL, **rtail = &ready;
    while (*pp) {
        struct telnet_conn *c = *pp;
        if (telnet_conn_ready(c)) {
            *pp = c->next;
            c->next = NULL;
            *rtail = c;
            rtail = &c->next;
        } else {
            pp = &c->next;
        }
    }
    while (ready) {
        struct telnet_conn *c = ready;
        ready = c->next;
        c->next = NULL;
        c->state = TC_RUNNING;
        bufferevent_enable(c->bev, EV_READ);
        telnet_process(c);
    }
}

static void telnet_block_append(struct telnet_ingest *g, struct telnet_conn *c)
{
    c->next = NULL;
    if (g->blocked_tail)
        g->blocked_tail->next = c;
    else
        g->blocked = c;
    g->blocked_tail = c;
}

void telnet_resume_blocked(struct tsd *t)
{
    struct telnet_ingest *g = ti(t);
    /* Resume in arrival order; one that blocks again goes to the back. One that gets no batch
     * stays blocked, in its place, and those behind it are still tried: the last free batch is
     * kept for connections with none in the pipeline (telnet_current). The list is taken whole
     * first: only the connection being resumed appends itself again. */
    struct telnet_conn *list = g->blocked;
    g->blocked = g->blocked_tail = NULL;
    while (list) {
        struct telnet_conn *c = list;
        list = c->next;
        if (!telnet_current(c)) {
            telnet_block_append(g, c);
            continue;
        }
        c->next = NULL;
        c->state = TC_RUNNING;
        bufferevent_enable(c->bev, EV_READ);
        telnet_process(c);
    }
}

static void telnet_done_ev_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tsd *t = arg;
    struct telnet_ingest *g = ti(t);
    struct ingest_batch *done[TELNET_SEQ_RING];
    pthread_mutex_lock(&g->mu);
    size_t n = g->ndone;
    memcpy(done, g->done, n * sizeof(done[0]));
    g->ndone = 0;
    pthread_mutex_unlock(&g->mu);
    for (size_t i = 0; i < n; i++) {
        struct ingest_batch *b = done[i];
        size_t np = ingest_batch_count(b);
        uint64_t seq = ++g->done_no; /* names this batch for the error lines below */
        struct telnet_conn *owner = telnet_find(t, ingest_batch_seq(b));
        if (owner)
            owner->unlogged--;
        /* each failed put answered by its own line, in order, as OpenTSDB does; past
         * TELNET_ERR_LINES lines for one connection in one batch, one line counts the rest */
        struct telnet_conn *failed = NULL;
        for (size_t k = 0; k < np; k++) {
            const char *msg;
            enum ingest_outcome o = ingest_batch_outcome(b, k, &msg);
            if (o == INGEST_WRITTEN)
                continue;
            struct ingest_point p;
            ingest_batch_point(b, k, &p);
            struct telnet_conn *c = telnet_find(t, p.owner);
            if (!c || !t->return_errors || c->state == TC_CLOSING)
                continue;
            if (c->err_seq != seq) { /* its first failed put of this batch (done_no from 1) */
                c->err_seq = seq;
                c->err_lines = 0;
                c->err_more = 0;
                c->err_next = failed;
                failed = c;
            }
            if (c->err_lines < TELNET_ERR_LINES) {
                c->err_lines++;
                telnet_printf(c, "%s%s\n", telnet_outcome_prefix(o), msg);
            } else {
                c->err_more++;
            }
        }
        while (failed) {
            struct telnet_conn *c = failed;
            failed = c->err_next;
            c->err_next = NULL;
            if (c->err_more && c->state != TC_CLOSING)
                telnet_printf(c,
                              "put: %llu more puts failed (errors past %d are counted, not "
                              "listed)\n",
                              (unsigned long long)c->err_more, TELNET_ERR_LINES);
        }
        ingest_batch_release(t->ingest, b);
        g->inflight--;
    }
    telnet_wake_waiters(t);
    telnet_resume_blocked(t);
    tsd_ingest_idle_check(t);
}

int telnet_ingest_init(struct tsd *t, struct ct_err *err)
{
    struct telnet_ingest *g = ti(t);
    pthread_mutex_init(&g->mu, NULL);
    g->done_ev = event_new(t->base, -1, 0, telnet_done_ev_cb, t);
    g->flush_ev = evtimer_new(t->base, telnet_flush_timer_cb, t);
    if (!g->done_ev || !g->flush_ev)
        return ct_err_set(err, CT_ENOMEM, "out of memory creating telnet events");
    /* else every histogram and rollup line is refused */
    if (api_histogram_codec_id(tsd_conf(t)) >= 0 || (t->rollup && !t->read_only))
        return telnet_histo_init(t, err);
    return CT_OK;
}

void telnet_ingest_destroy(struct tsd *t)
{
    struct telnet_ingest *g = ti(t);
    if (g->done_ev)
        event_free(g->done_ev);
    if (g->flush_ev)
        event_free(g->flush_ev);
    g->done_ev = g->flush_ev = NULL;
    telnet_histo_destroy(t);
    pthread_mutex_destroy(&g->mu);
}

void telnet_flush(struct tsd *t)
{
    while (ti(t)->filling)
        telnet_submit_conn(ti(t)->filling);
    telnet_histo_submit(t);
}

bool telnet_ingest_idle(struct tsd *t)
{
    struct telnet_ingest *g = ti(t);
    return g->inflight == 0 && !g->filling && telnet_histo_idle(t);
}

/* ---- commands ------------------------------------------------------------------------------- */

enum telnet_action {
    TA_NEXT = 0,  /* line consumed */
    TA_PAUSE = 1, /* line not consumed: connection waits or is blocked */
    TA_STOP = 2,  /* line consumed, stop reading (exit) */
};

/* Ensures every earlier put of c is logged before a reply; else sets c waiting. */
static bool telnet_may_reply(struct telnet_conn *c)
{
    struct tsd *t = c->tsd;
    if (telnet_conn_ready(c))
        return true;
    telnet_submit_conn(c);
    if (ti(t)->histo && c->hpending_seq == ti(t)->histo->cur_seq)
        telnet_histo_submit(t);
    c->state = TC_WAITING;
    c->next = ti(t)->waiting;
    ti(t)->waiting = c;
    bufferevent_disable(c->bev, EV_READ);
    return false;
}

struct telnet_stats_ctx {
    struct telnet_conn *c;
};

static void telnet_stat_line(void *arg, const char *metric, int64_t ts_s, const char *value,
                             const char *tags)
{
    struct telnet_stats_ctx *x = arg;
    telnet_printf(x->c, "%s %lld %s %s\n", metric, (long long)ts_s, value, tags);
}

static const char *const telnet_commands[] = {
    "auth", "diediedie", "dropcaches", "exit",   "help",    "histogram",
    "put",  "rollup",    "stats",      "status", "version",
};

/* A Graphite plaintext line (docs/protocols.md): Graphite on, not a command, Graphite's shape. */
static bool telnet_graphite_line(const struct tsd *t, const char *line, size_t cl, size_t len)
{
    if (!t->graphite || !t->graphite_telnet)
        return false;
    for (size_t i = 0; i < sizeof(telnet_commands) / sizeof(telnet_commands[0]); i++)
        if (strlen(telnet_commands[i]) == cl && !memcmp(line, telnet_commands[i], cl))
            return false;
    return graphite_line_shape(line, len);
}

/* Graphite has no error replies: a refused line is counted and logged, rate-limited. */
static enum telnet_action telnet_graphite_reject(struct telnet_conn *c, const char *line,
                                                 size_t len, const char *why)
{
    static struct tlog_limit lim = TLOG_LIMIT_INIT(10000);
    tstats_add(TSTATS_GRAPHITE_REJECTED, 1);
    tlog_limited(&lim, (int64_t)(clock_mono_ns() / 1000000), TLOG_WARN,
                 "graphite: refused line from %s: %s: %.*s", c->peer, why,
                 (int)(len > 200 ? 200 : len), line);
    return TA_NEXT;
}

/* `histogram ...` (OpenTSDB's HistogramDataPointRpc on telnet): parsed and checked here, then
 * written with the other lines of the current histogram batch; silent on success, like a put,
 * and counted as one. An error found here is answered once the connection's earlier lines are
 * written (so it comes after theirs); a write error when the batch comes back. */
/* A `histogram` or `rollup` line: parsed into the side writer's current batch (answered by a later
 * line's reply once written), or refused here with its own reply. The two kinds' line statuses
 * share their values: 0 taken, 1 illegal argument, 2 invalid value, else a store error. */
static enum telnet_action telnet_side_line(struct telnet_conn *c, const char *line, size_t len,
                                           bool rollup)
{
    struct tsd *t = c->tsd;
    struct telnet_histo *h = ti(t)->histo;
    const char *cmd = rollup ? "rollup: " : "histogram: ";
    size_t cl = strlen(cmd);
    char msg[CT_ERR_MSG_MAX + 64];
    int st = HISTO_LINE_EARG;
    if (!auth_telnet_permit(t->auth, &c->auth, c->peer, AUTH_WRITE, msg + cl, sizeof(msg) - cl)) {
        memcpy(msg, cmd, cl);
    } else if (t->read_only) {
        snprintf(msg, sizeof(msg), "%sillegal argument: the TSD is in read-only mode", cmd);
    } else {
        if (h && side_batch_count(h->cur) >= TELNET_HISTO_BATCH) {
            telnet_histo_submit(t);
            if (side_batch_count(h->cur) >= TELNET_HISTO_BATCH) { /* the writer is busy */
                c->hblock_seq = h->flying_seq;
                telnet_may_reply(c); /* not ready: waits for that write */
                return TA_PAUSE;
            }
        }
        struct side_batch *scratch = NULL;
        struct side_batch *b = h ? h->cur : (scratch = side_batch_new());
        if (!b) /* neither histograms nor rollups on: the line is refused (by the parser) */
            snprintf(msg, sizeof(msg), "%sHBase error: out of memory", cmd);
        else if (rollup)
            st = (int)api_rollup_telnet(t, line, len, b->r, c->id, msg, sizeof(msg));
        else
            st = (int)api_histogram_telnet(t, line, len, b->h, c->id, msg, sizeof(msg));
        side_batch_free(scratch);
        if (st == HISTO_LINE_OK && h) {
            tstats_add(TSTATS_RPC_PUT, 1);
            c->hpending_seq = h->cur_seq;
            if (!h->timer_armed) {
                struct timeval tv = {0, 2000};
                evtimer_add(h->flush_ev, &tv);
                h->timer_armed = true;
            }
            return TA_NEXT;
        }
    }
    if (!telnet_may_reply(c))
        return TA_PAUSE;
    tstats_add(TSTATS_RPC_PUT, 1);
    if (st == HISTO_LINE_ENUMBER)
        tstats_add(TSTATS_INVALID_VALUES, 1);
    else if (st == HISTO_LINE_EARG)
        tstats_add(TSTATS_ILLEGAL_ARGUMENTS, 1);
    else
        tstats_add(TSTATS_POINTS_FAILED, 1);
    if (t->return_errors)
        telnet_printf(c, "%s\n", msg);
    return TA_NEXT;
}

/* Adds p to b: with its series key key[0..klen) and that key's hash when klen > 0, else the
 * batch builds both. */
static bool telnet_batch_add(struct telnet_conn *c, struct ingest_batch *b,
                             const struct put_point *p, const char *key, size_t klen,
                             uint64_t khash)
{
    if (klen)
        return ingest_batch_add_key(b, p, key, klen, khash, c->id);
    return ingest_batch_add(b, p, c->id);
}

static enum telnet_action telnet_line(struct telnet_conn *c, const char *line, size_t len)
{
    struct tsd *t = c->tsd;
    if (len > 0 && line[len - 1] == '\r')
        len--;
    const char *sp = len > 4 && !memcmp(line, "put ", 4) ? line + 3 : memchr(line, ' ', len);
    size_t cl = sp ? (size_t)(sp - line) : len;
    bool is_put = cl == 3 && !memcmp(line, "put", 3);
    bool graphite = !is_put && telnet_graphite_line(t, line, cl, len);
    if (c->graphite_only) { /* the Graphite port: no commands, no put (docs/protocols.md) */
        if (len == 0)
            return TA_NEXT;
        if (!graphite_line_shape(line, len))
            return telnet_graphite_reject(c, line, len,
                                          "not a Graphite line `path value timestamp`");
        is_put = false;
        graphite = true;
    }
    char gbuf[2048]; /* a Graphite point's names (copied by ingest_batch_add) */
    if (is_put || graphite) {
        struct put_point *p = &t->telnet.point;
        /* a whole error text (a ct_err message) and the parts of the line it may quote */
        char msg[CT_ERR_MSG_MAX + 2 * TELNET_MAX_LINE];
        if (graphite) {
            if (!auth_telnet_permit(t->auth, &c->auth, c->peer, AUTH_WRITE, msg, sizeof(msg)))
                return telnet_graphite_reject(c, line, len, msg);
            struct put_str value;
            if (!graphite_map_line(t->graphite, line, len, clock_now_ms(), gbuf, sizeof(gbuf), p,
                                   &value, msg, sizeof(msg)))
                return telnet_graphite_reject(c, line, len, msg);
            if (put_check_point(p, value, &t->rules, msg, sizeof(msg)) != PUT_OK)
                return telnet_graphite_reject(c, line, len, msg);
            if (t->read_only)
                return telnet_graphite_reject(c, line, len, "the TSD is in read-only mode");
        } else if (!auth_telnet_permit(t->auth, &c->auth, c->peer, AUTH_WRITE, msg, sizeof(msg))) {
            if (!telnet_may_reply(c))
                return TA_PAUSE;
            if (t->return_errors)
                telnet_printf(c, "put: %s\n", msg);
            tstats_add(TSTATS_RPC_PUT, 1);
            return TA_NEXT;
        }
        enum put_status st =
            graphite ? PUT_OK
                     : put_parse_line_memo(line, len, &t->rules, &c->memo, p, msg, sizeof(msg));
        if (st != PUT_OK) {
            if (!telnet_may_reply(c))
                return TA_PAUSE;
            tstats_add(st == PUT_ENUMBER ? TSTATS_INVALID_VALUES : TSTATS_ILLEGAL_ARGUMENTS, 1);
            if (t->return_errors)
                telnet_printf(c, "%s\n", msg);
            tstats_add(TSTATS_RPC_PUT, 1);
            return TA_NEXT;
        }
        if (t->read_only) {
            if (!telnet_may_reply(c))
                return TA_PAUSE;
            if (t->return_errors)
                telnet_printf(c, "put: illegal argument: the TSD is in read-only mode\n");
            return TA_NEXT;
        }
        struct ingest_batch *b = telnet_current(c);
        if (!b) {
            c->state = TC_BLOCKED;
            tstats_add(TSTATS_BACKPRESSURE, 1);
            return TA_PAUSE;
        }
        /* a put whose tags came from the memo: its series key from the memo's key part (7) */
        char key[TELNET_MAX_LINE + PUT_MEMO_TEXT + 2];
        size_t klen = 0;
        uint64_t khash = 0;
        if (!graphite && c->memo.last && p->metric.len + 1 + c->memo.key_len <= sizeof(key)) {
            klen = put_memo_key_write(&c->memo, p, key);
            khash = ingest_key_hash(t->ingest, key, klen);
        }
        if (!telnet_batch_add(c, b, p, key, klen, khash)) {
            telnet_submit_conn(c);
            b = telnet_current(c);
            if (!b) {
                c->state = TC_BLOCKED;
                tstats_add(TSTATS_BACKPRESSURE, 1);
                return TA_PAUSE;
            }
            if (!telnet_batch_add(c, b, p, key, klen, khash)) {
                if (graphite)
                    return telnet_graphite_reject(c, line, len, "datapoint too large");
                if (!telnet_may_reply(c))
                    return TA_PAUSE;
                telnet_printf(c, "put: illegal argument: datapoint too large\n");
                return TA_NEXT;
            }
        }
        if (graphite)
            tstats_add(TSTATS_GRAPHITE_LINES, 1);
        else
            c->puts_uncounted++;
        return TA_NEXT;
    }
    if (cl == 9 && !memcmp(line, "histogram", 9))
        return telnet_side_line(c, line, len, false);
    if (cl == 6 && !memcmp(line, "rollup", 6))
        return telnet_side_line(c, line, len, true);
    /* Every other line answers (or ends the connection): earlier puts first. */
    telnet_count_puts(c);
    if (!telnet_may_reply(c))
        return TA_PAUSE;
    char cmd[32];
    snprintf(cmd, sizeof(cmd), "%.*s", (int)(cl < sizeof(cmd) - 1 ? cl : sizeof(cmd) - 1), line);
    if (cl == 0 && len == 0)
        return TA_NEXT; /* blank line */
    tstats_add(TSTATS_RPC_OTHER_TELNET, 1);
    if (!strcmp(cmd, "version")) {
        telnet_printf(c, "net.opentsdb.tools ctsdb %s built at revision %s (%s)\n", CTSDB_VERSION,
                      CTSDB_GIT_REV, CTSDB_REPO_STATUS);
        char date[64];
        telnet_printf(c, "Built on %s by %s@%s\n", build_info_date(date, sizeof(date)),
                      CTSDB_BUILD_USER, tsd_hostname(t));
    } else if (!strcmp(cmd, "help")) {
        char buf[256] = "available commands: ";
        for (size_t i = 0; i < sizeof(telnet_commands) / sizeof(telnet_commands[0]); i++) {
            if (!strcmp(telnet_commands[i], "diediedie") && t->no_diediedie)
                continue;
            if (!strcmp(telnet_commands[i], "auth") && !auth_token_required(t->auth))
                continue;
            strncat(buf, telnet_commands[i], sizeof(buf) - strlen(buf) - 2);
            strncat(buf, " ", sizeof(buf) - strlen(buf) - 1);
        }
        telnet_printf(c, "%s\n", buf);
    } else if (!strcmp(cmd, "stats")) {
        struct telnet_stats_ctx x = {c};
        tsd_collect_stats(t, telnet_stat_line, &x);
    } else if (!strcmp(cmd, "auth")) {
        telnet_printf(c, "%s\n", auth_telnet_login(t->auth, &c->auth, line + cl, len - cl));
    } else if (!strcmp(cmd, "dropcaches")) {
        char why[CT_ERR_MSG_MAX];
        if (!auth_telnet_permit(t->auth, &c->auth, c->peer, AUTH_ADMIN, why, sizeof(why))) {
            telnet_printf(c, "dropcaches: %s\n", why);
            return TA_NEXT;
        }
        tsd_drop_caches(t);
        telnet_printf(c, "Caches dropped.\n");
    } else if (!strcmp(cmd, "status")) {
        telnet_printf(c, "%s\n", tsd_status(t));
    } else if (!strcmp(cmd, "exit")) {
        return TA_STOP;
    } else if (!strcmp(cmd, "diediedie") && !t->no_diediedie) {
        char why[CT_ERR_MSG_MAX];
        if (!auth_telnet_permit(t->auth, &c->auth, c->peer, AUTH_ADMIN, why, sizeof(why))) {
            telnet_printf(c, "diediedie: %s\n", why);
            return TA_NEXT;
        }
        telnet_printf(c, "Cleaning up and exiting now.\n");
        tlog_info("diediedie from %s: shutting down", c->peer);
        tsd_request_shutdown(t);
    } else {
        tstats_add(TSTATS_RPC_UNKNOWN, 1);
        telnet_printf(c, "unknown command: %s.  Try `help'.\n", cmd);
    }
    return TA_NEXT;
}

/* Reports an over-long line once; the rest of it is discarded (deliberate choice, spec end). */
static enum telnet_action telnet_too_long(struct telnet_conn *c)
{
    if (!telnet_may_reply(c))
        return TA_PAUSE;
    tstats_add(TSTATS_LINES_TOO_LONG, 1);
    telnet_printf(c, "put: illegal argument: line too long (more than %d bytes); discarded\n",
                  TELNET_MAX_LINE);
    return TA_NEXT;
}

static void telnet_process(struct telnet_conn *c)
{
    struct tsd *t = c->tsd;
    struct evbuffer *in = bufferevent_get_input(c->bev);
    char *scratch = t->telnet.line;
    for (int round = 0; round < 64 && c->state == TC_RUNNING; round++) {
        if (evbuffer_get_length(bufferevent_get_output(c->bev)) > TSD_TELNET_OUT_HIGH) {
            c->out_full = true;
            bufferevent_disable(c->bev, EV_READ);
            return;
        }
        struct evbuffer_iovec vec[32];
        int nv = evbuffer_peek(in, -1, NULL, vec, 32);
        if (nv <= 0)
            break;
        if (nv > 32)
            nv = 32;
        size_t consumed = 0, carry = 0;
        bool stop = false, progressed = false;
        for (int v = 0; v < nv && !stop; v++) {
            const char *p = vec[v].iov_base, *end = p + vec[v].iov_len;
            while (p < end) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                if (c->discarding) {
                    if (!nl) {
                        consumed += (size_t)(end - p);
                        p = end;
                        break;
                    }
                    consumed += (size_t)(nl + 1 - p);
                    p = nl + 1;
                    c->discarding = false;
                    progressed = true;
                    continue;
                }
                if (!nl) {
                    size_t n = (size_t)(end - p);
                    if (carry + n > TELNET_MAX_LINE) {
                        enum telnet_action a = telnet_too_long(c);
                        if (a == TA_PAUSE) {
                            stop = true;
                            break;
                        }
                        consumed += carry + n;
                        carry = 0;
                        c->discarding = true;
                        progressed = true;
                    } else {
                        memcpy(scratch + carry, p, n);
                        carry += n;
                    }
                    p = end;
                    break;
                }
                size_t n = (size_t)(nl - p);
                const char *line = p;
                size_t len = n;
                if (carry) {
                    if (carry + n > TELNET_MAX_LINE) {
                        line = NULL;
                    } else {
                        memcpy(scratch + carry, p, n);
                        line = scratch;
                        len = carry + n;
                    }
                } else if (n > TELNET_MAX_LINE) {
                    line = NULL;
                }
                enum telnet_action a = line ? telnet_line(c, line, len) : telnet_too_long(c);
                if (a == TA_PAUSE) {
                    stop = true;
                    break;
                }
                consumed += carry + n + 1;
                carry = 0;
                p = nl + 1;
                progressed = true;
                if (a == TA_STOP) {
                    c->state = TC_CLOSING;
                    stop = true;
                    break;
                }
                if (c->state != TC_RUNNING) {
                    stop = true;
                    break;
                }
            }
        }
        evbuffer_drain(in, consumed);
        telnet_count_puts(c);
        if (c->state == TC_BLOCKED) {
            bufferevent_disable(c->bev, EV_READ);
            telnet_block_append(&t->telnet, c);
            return;
        }
        if (stop || !progressed || nv < 32)
            break;
    }
    if (c->state == TC_CLOSING || (c->eof && c->state == TC_RUNNING)) {
        if (c->eof && c->state == TC_RUNNING) {
            /* answered everything that had a newline; an unterminated last line counts too */
            size_t rest = evbuffer_get_length(in);
            if (rest > 0 && rest <= TELNET_MAX_LINE && !c->discarding) {
                evbuffer_copyout(in, scratch, rest);
                enum telnet_action a = telnet_line(c, scratch, rest);
                if (a == TA_PAUSE)
                    return;
                evbuffer_drain(in, rest);
            }
            /* its puts' errors are answered before the close: wait until they are written */
            telnet_count_puts(c);
            if (!telnet_may_reply(c))
                return;
        }
        c->state = TC_CLOSING;
        bufferevent_disable(c->bev, EV_READ);
        if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
            telnet_close(c);
    }
}

static void telnet_read_cb(struct bufferevent *bev, void *arg)
{
    (void)bev;
    struct telnet_conn *c = arg;
    if (c->state == TC_RUNNING)
        telnet_process(c);
}

static void telnet_write_cb(struct bufferevent *bev, void *arg)
{
    struct telnet_conn *c = arg;
    if (c->state == TC_CLOSING && evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
        telnet_close(c);
        return;
    }
    if (c->out_full && c->state == TC_RUNNING) {
        c->out_full = false;
        bufferevent_enable(c->bev, EV_READ);
        telnet_process(c);
    }
}

static void telnet_event_cb(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    struct telnet_conn *c = arg;
    if (what & BEV_EVENT_TIMEOUT)
        tstats_add(TSTATS_CONN_TIMEOUT, 1);
    if ((what & BEV_EVENT_EOF) && !(what & (BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))) {
        c->eof = true;
        if (c->state == TC_RUNNING)
            telnet_process(c);
        return; /* waiting/blocked connections finish when they resume */
    }
    telnet_close(c);
}

/* Unlinks c from the waiting or blocked list. */
static void telnet_unlink(struct tsd *t, struct telnet_conn *c)
{
    struct telnet_conn **pp = &t->telnet.waiting;
    while (*pp && *pp != c)
        pp = &(*pp)->next;
    if (*pp) {
        *pp = c->next;
        return;
    }
    struct telnet_conn *prev = NULL;
    for (struct telnet_conn *x = t->telnet.blocked; x; prev = x, x = x->next) {
        if (x != c)
            continue;
        if (prev)
            prev->next = x->next;
        else
            t->telnet.blocked = x->next;
        if (t->telnet.blocked_tail == x)
            t->telnet.blocked_tail = prev;
        return;
    }
}

static void telnet_close(struct telnet_conn *c)
{
    struct tsd *t = c->tsd;
    telnet_count_puts(c);
    if (c->state == TC_WAITING || c->state == TC_BLOCKED)
        telnet_unlink(t, c);
    telnet_submit_conn(c); /* its accepted puts are written; their errors reach no one */
    uint32_t slot = (uint32_t)c->id;
    t->tconns[slot] = NULL;
    t->tconn_free[t->ntconn_free++] = slot;
    bufferevent_free(c->bev);
    free(c);
    tsd_conn_closed(t);
}

int telnet_conn_start(struct tsd *t, int fd, const char *peer, bool graphite_only,
                      struct ct_err *err)
{
    if (t->ntconn_free == 0) {
        size_t ns = t->ntconn_slots ? t->ntconn_slots * 2 : 256;
        struct telnet_conn **nc = realloc(t->tconns, ns * sizeof(*nc));
        if (!nc)
            return ct_err_set(err, CT_ENOMEM, "out of memory for a connection from %s", peer);
        t->tconns = nc;
        uint32_t *nf = realloc(t->tconn_free, ns * sizeof(*nf));
        if (!nf)
            return ct_err_set(err, CT_ENOMEM, "out of memory for a connection from %s", peer);
        t->tconn_free = nf;
        for (size_t i = ns; i > t->ntconn_slots; i--) {
            t->tconns[i - 1] = NULL;
            t->tconn_free[t->ntconn_free++] = (uint32_t)(i - 1);
        }
        t->ntconn_slots = ns;
    }
    struct telnet_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return ct_err_set(err, CT_ENOMEM, "out of memory for a connection from %s", peer);
    c->bev = bufferevent_socket_new(t->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (!c->bev) {
        free(c);
        return ct_err_set(err, CT_ENOMEM, "cannot create a bufferevent for %s", peer);
    }
    uint32_t slot = t->tconn_free[--t->ntconn_free];
    c->id = (++t->next_conn_id << 32) | slot;
    t->tconns[slot] = c;
    c->tsd = t;
    c->graphite_only = graphite_only;
    snprintf(c->peer, sizeof(c->peer), "%s", peer);
    bufferevent_setcb(c->bev, telnet_read_cb, telnet_write_cb, telnet_event_cb, c);
    bufferevent_setwatermark(c->bev, EV_READ, 0, TSD_TELNET_READ_HIGH);
    /* read up to 64 KiB per readiness (libevent's default is 16 KiB): a busy client's stream
     * then costs a quarter of the read, ioctl and epoll calls */
    if (bufferevent_set_max_single_read(c->bev, TSD_TELNET_SINGLE_READ) != 0)
        tlog_warn("cannot raise the read size for %s; keeping libevent's default", peer);
    bufferevent_setwatermark(c->bev, EV_WRITE, TELNET_OUT_LOW, 0);
    if (t->socket_timeout_s > 0) {
        struct timeval tv = {(time_t)t->socket_timeout_s, 0};
        bufferevent_set_timeouts(c->bev, &tv, NULL);
    }
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    tstats_add(TSTATS_CONN_TELNET, 1);
    return CT_OK;
}

void telnet_close_all(struct tsd *t)
{
    for (size_t i = 0; i < t->ntconn_slots; i++) {
        struct telnet_conn *c = t->tconns[i];
        if (!c)
            continue;
        if (c->state == TC_RUNNING) {
            /* answer what is already buffered, then close */
            c->eof = true;
            telnet_process(c);
        } else {
            c->eof = true;
        }
    }
}

void telnet_free_all(struct tsd *t)
{
    for (size_t i = 0; i < t->ntconn_slots; i++) {
        struct telnet_conn *c = t->tconns[i];
        if (!c)
            continue;
        bufferevent_free(c->bev);
        free(c);
        t->tconns[i] = NULL;
    }
}
