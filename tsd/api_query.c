/* api_query.c - /api/query (GET, POST; DELETE when tsd.http.query.allow_delete) and
 * /api/query/last (GET, POST): parse on the event loop (cheap, and a 400 needs no worker), run
 * on a worker (query/qexec.h, query/qlast.h) and stream the JSON answer in chunks as it is
 * written (http.h holds up to 256 KiB, so a small answer goes out whole, in one write on the
 * loop thread). What a slow client has not read yet waits in its connection's buffer, charged
 * past 1 MiB to the TSD's answer pool (tsd.http.query.answer_buffer_bytes), so the worker runs
 * on and is released when the answer is written (tsd/http.c, http_stream_room_put).
 *
 * Invariants: (1) an error found before the first byte of the answer gets OpenTSDB's error object
 * with its status (400 bad query or unknown name, 408 tsd.query.timeout, 413 datapoint limit,
 * 500 otherwise); a 400 found by the run (unknown name, bad TSUID) carries its message as
 * "details" too, as OpenTSDB's wrapped exceptions do, a 400 found by parsing does not
 * (OpenTSDB's /api/query validation errors carry its TSQuery's toString() dump as details, which
 * ctsdb leaves out);
 * (2) the stream is begun lazily at the first flush, and an answer that fails
 * while its bytes are still held (http_stream_retract) gets its error status too, so only an
 * answer that failed after 256 KiB went out is a truncated 200; (3) /api/query/last is first
 * tried on the network loop within a fixed budget of store work (qlast_run_bounded: a few
 * scanners, keys and cells; an answer of at most a few series), and handed to a worker as any
 * query when it would pass the budget (nothing was sent then); a loop run during which the
 * loop thread had to wait (a voluntary context switch: a disk read, a lock held by a writer)
 * for more than LOOP_WAIT_NS in all makes the loop leave last queries (and small ones, (5)) to
 * the workers for 10 s (tsd_last_loop_overrun), so the loop waits that long at most once per 10 s. The loop
 * saves the two thread hand-offs (a worker's wake-up and the loop's wake-up for the
 * completion), which cost more than a small last query;
 * (4) OpenTSDB's QueryRpc counters (tsd.http.query.*) count /api/query only, never
 * /api/query/last (its handleLastDataPointQuery counts nothing), and only a query that passed
 * parsing and validation: those failures (a bad aggregator, a missing start, DELETE not
 * enabled) are thrown out of handleQuery before the counting starts, and RpcHandler counts no
 * BadRequestException. Every query handed to a worker (or refused one) ends in exactly one
 * counter (query_count): success when the answer went out (as SendIt; a client that left
 * counts too, OpenTSDB writes its serialized reply to the closed channel all the same),
 * invalid_requests for a 400 the run found (an unknown name: OpenTSDB's ErrorCB counts
 * NoSuchUniqueName so; a malformed TSUID, which OpenTSDB fails elsewhere, is counted here
 * too), exceptions for anything else (ErrorCB's timeouts, storage failures and
 * QueryExceptions such as the 413 datapoint limit; ctsdb's 503 when no worker takes the
 * query, which OpenTSDB has no counterpart for); an /api/query answered on the loop (5) is
 * counted the same way;
 * (5) an /api/query whose parsed form may be small (query_small: a few hours, tag filters on
 * every sub-query) is first run on the network loop, bounded (query/qexec.h, qexec_bound:
 * QUERY_LOOP_MAX_RANGES exact key ranges of the tag index per sub-query, QUERY_LOOP_MAX_DPS
 * datapoints, tsd.query.loop_us of time, no other thread), and handed to a worker as any query
 * when the run stops at its bound, which it does before writing anything; the same answer either
 * way (the bound only decides where the query runs). The loop is held at most tsd.query.loop_us
 * plus one sub-query's planning or one row's read, then the writing of at most
 * QUERY_LOOP_MAX_DPS points; tsd.query.on_loop=false (and a Bigtable store) turns it off, a loop
 * run that waited turns it off for 10 s as in (3). */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "query/qexec.h"
#include "query/qjson.h"
#include "query/qlast.h"
#include "query/qspec.h"
#include "storage/clock.h"
#include "storage/ct_err.h"
#include "tsd/auth.h"
#include "tsd/conf.h"
#include "tsd/http.h"
#include "tsd/routes.h"
#include "tsd/tlog.h"
#include "tsd/tsd.h"
#include "tsd/tsd_int.h"
#include "tsd/tstats.h"

static const char *param_at(void *arg, const char *name, size_t idx)
{
    return http_req_param_at(arg, name, idx);
}


void api_query_options(struct http_req *r, struct qexec_options *o)
{
    const struct conf *c = tsd_conf(http_req_tsd(r));
    qexec_options_init(o);
    o->timeout_ms = conf_get_int(c, "tsd.query.timeout");
    o->allow_delete = conf_get_bool(c, "tsd.http.query.allow_delete");
    o->skip_unresolved_tagvs = conf_get_bool(c, "tsd.query.skip_unresolved_tagvs");
    o->scan_threads = (unsigned)conf_get_int(c, "tsd.query.scan_threads");
    o->index_ranges = (uint64_t)conf_get_int(c, "tsd.query.tag_index");
    o->pool = tsd_qpool(http_req_tsd(r));
    o->rollup = tsd_rollup(http_req_tsd(r));
    o->head = tsd_head(http_req_tsd(r));
    const char *lim = conf_get(c, "tsd.query.limits.data_points.default");
    if (lim)
        o->max_datapoints = strtoull(lim, NULL, 10);
    api_query_limits(r, o); /* the byte limit and per-metric overrides (tsd/api_limits.c) */
}

static void reply_failure(struct http_req *r, struct http_stream_sink *s, int status,
                          const struct ct_err *err)
{
    if (s->begun && !http_stream_retract(r)) {
        http_stream_end(r); /* too late for a status: the answer is cut short */
        return;
    }
    /* a 400 found while running is a name or TSUID the store does not know: OpenTSDB wraps
     * that exception (BadRequestException(Throwable)), whose message is also its details */
    http_reply_error(r, status, err->msg, status == 400 ? err->msg : NULL);
}

/* Ends an answer whose run returned rc: the rest of j flushed and the stream ended, or the
 * failure replied (reply_failure); j is freed either way. Returns the answer's final rc
 * (rc, or the flush's failure). */
static int answer_finish(struct http_req *r, struct http_stream_sink *s, struct qjson *j, int rc,
                         enum qexec_status status, const struct ct_err *err)
{
    if (rc == CT_OK)
        rc = qjson_flush(j);
    if (rc == CT_OK || (s->begun && rc == CT_ECLOSED))
        http_stream_end(r);
    else
        reply_failure(r, s, http_status_of(rc, (int)status), err);
    qjson_free(j);
    return rc;
}

/* Counts how an /api/query answer ended (see (4)); rc as answer_finish returned it, status
 * the run's. Any thread (relaxed atomics). */
static void query_count(int rc, enum qexec_status status)
{
    if (rc == CT_OK || rc == CT_ECLOSED)
        tstats_add(TSTATS_QUERY_SUCCESS, 1);
    else if (status == QEXEC_BAD_REQUEST)
        tstats_add(TSTATS_QUERY_INVALID, 1);
    else
        tstats_add(TSTATS_QUERY_EXCEPTIONS, 1);
}

static void query_work(struct http_req *r, void *arg)
{
    struct qspec *q = arg;
    struct qexec_options o;
    api_query_options(r, &o);
    struct http_stream_sink s = {r, false};
    struct qjson *j = qjson_new(http_stream_sink_write, &s, 0);
    struct ct_err err = {0};
    enum qexec_status status = QEXEC_INTERNAL;
    if (!j) {
        http_reply_error(r, 500, "out of memory", NULL);
        tstats_add(TSTATS_QUERY_EXCEPTIONS, 1);
        qspec_free(q);
        return;
    }
    struct qexec_stats st = {0};
    int rc = qexec_run(tsd_tsdb(http_req_tsd(r)), q, &o, j, &status, &st, &err);
    if (st.scan_threads > 1)
        tstats_add(TSTATS_QUERY_PARALLEL, 1);
    if (st.busy_one_thread)
        tstats_add(TSTATS_QUERY_BUSY_ONE, 1);
    query_count(answer_finish(r, &s, j, rc, status, &err), status);
    qspec_free(q);
}

/* ---- small queries on the network loop (see (3) and (5)) ----------------------------------- */

/* A loop run that had to wait (see loop_waits) and took longer than this stops the loop paths
 * for 10 s; a shorter wait (a lock held for a moment by another reader or a writer) does not. */
#define LOOP_WAIT_NS 50000

/* The loop thread's voluntary context switches: it makes one only when it waits (a disk read,
 * a lock held elsewhere), never when it is merely preempted. -1 if unknown. */
static long loop_waits(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nvcsw : -1;
}

/* After a loop run that began with `waits` (loop_waits) and took `took` ns: a run that waited
 * longer than LOOP_WAIT_NS leaves last and small queries to the workers for 10 s. */
static void loop_run_done(struct tsd *t, const char *what, long waits, uint64_t took,
                          int64_t now_ms)
{
    /* a run within LOOP_WAIT_NS counts whether it waited or not: only a longer one needs the
     * second count (one syscall less on the usual path) */
    long waited = took > LOOP_WAIT_NS && waits >= 0 ? loop_waits() - waits : 0;
    if (waits >= 0 && (waited == 0 || took <= LOOP_WAIT_NS))
        return;
    tstats_add(TSTATS_LAST_LOOP_WAITS, 1);
    tsd_last_loop_overrun(t, now_ms);
    tlog_warn("%s waited on the network loop for %.3f ms (a disk read or a lock): last and "
              "small queries go to the workers for 10 s",
              what, (double)took / 1e6);
}

/* The bound of an /api/query run on the network loop (see (5)). A query is tried there only
 * when its parsed form says it may be small (query_small: no store work), and the run
 * (qexec_bound) stops, before any output, at the first sub-query planned otherwise than as at
 * most QUERY_LOOP_MAX_RANGES exact key ranges of the tag index (a fully tagged series over a
 * few hours), past QUERY_LOOP_MAX_DPS datapoints read, or past tsd.query.loop_us (default
 * 300 us) checked after each planning and before each row; the answer of at most that many
 * points (~100 KiB of JSON, under http.h's 256 KiB held) is then written in one go. The bench's
 * last point asked as Grafana asks it (one series, one hour) takes ~40 us there. */
#define QUERY_LOOP_MAX_HOURS  8
#define QUERY_LOOP_MAX_RANGES 16
#define QUERY_LOOP_MAX_DPS    4096

/* Whether q may be small enough for the loop, from its parsed form alone: a window of at most
 * QUERY_LOOP_MAX_HOURS hours and every sub-query a metric with tag filters (the tag index can
 * pick its series), no TSUIDs, not a delete. */
static bool query_small(const struct qspec *q)
{
    if (q->delete_data || q->nsubs == 0 ||
        q->end_ms - q->start_ms > (int64_t)QUERY_LOOP_MAX_HOURS * 3600 * 1000)
        return false;
    for (size_t i = 0; i < q->nsubs; i++)
        if (!q->subs[i].metric || q->subs[i].ntsuids || !q->subs[i].nfilters)
            return false;
    return true;
}

/* Runs q on the loop within its bound; true if r was answered (then q is freed), false if the
 * query is not small or its run passed the bound (nothing was sent; q is kept for a worker). */
static bool query_on_loop(struct http_req *r, struct qspec *q)
{
    struct tsd *t = http_req_tsd(r);
    int64_t now = clock_now_ms();
    if (!t->query_on_loop || now < t->last_loop_off_until_ms || !query_small(q))
        return false;
    struct qexec_options o;
    api_query_options(r, &o);
    struct qexec_bound b = {QUERY_LOOP_MAX_RANGES, QUERY_LOOP_MAX_DPS, 0};
    o.bound = &b;
    o.pool = NULL;
    /* the index's pick stops at the first series past the bound's ranges (the plan is then the
     * worker's, which the bound refuses anyway) */
    if (o.index_ranges > QUERY_LOOP_MAX_RANGES)
        o.index_ranges = QUERY_LOOP_MAX_RANGES;
    struct http_stream_sink s = {r, false};
    struct qjson *j = qjson_new(http_stream_sink_write, &s, 0);
    if (!j)
        return false;
    struct ct_err err = {0};
    enum qexec_status status = QEXEC_INTERNAL;
    long waits = loop_waits();
    uint64_t t0 = clock_mono_ns();
    b.deadline_ns = t0 + t->query_loop_ns;
    int rc = qexec_run(tsd_tsdb(t), q, &o, j, &status, NULL, &err);
    uint64_t took = clock_mono_ns() - t0;
    bool over = rc == CT_ELIMIT && status == QEXEC_OVER_BOUND;
    if (over)
        qjson_free(j); /* nothing was written: a bounded run stops before its first byte */
    else
        query_count(answer_finish(r, &s, j, rc, status, &err), status);
    loop_run_done(t, "a query", waits, took, now);
    if (over) {
        tstats_add(TSTATS_QUERY_LOOP_OVER, 1);
        return false;
    }
    tstats_add(TSTATS_QUERY_LOOP, 1);
    qspec_free(q);
    return true;
}

void api_query_handle(struct http_req *r)
{
    struct ct_err err = {0};
    struct qspec *q = NULL;
    enum http_method m = http_req_method(r);
    int64_t now = clock_now_ms();
    int rc;
    if (m == HTTP_POST || (m == HTTP_DELETE && http_req_body(r, NULL)[0])) {
        size_t len = 0;
        const char *body = http_req_body(r, &len);
        rc = qspec_parse_json(body, len, now, &q, &err);
        /* HttpJsonSerializer reads "arrays" from the URL whatever the method */
        if (rc == CT_OK && qspec_param_flag(param_at, r, "arrays"))
            q->arrays = true;
    } else {
        rc = qspec_parse_params(param_at, r, now, &q, &err);
    }
    if (rc != CT_OK) {
        http_reply_error(r, rc == CT_ENOMEM ? 500 : 400, err.msg, NULL);
        return;
    }
    if (m == HTTP_DELETE || q->delete_data) {
        const struct conf *c = tsd_conf(http_req_tsd(r));
        if (!conf_get_bool(c, "tsd.http.query.allow_delete")) {
            qspec_free(q);
            http_reply_error(r, 400, "Bad request",
                             "Deleting data is not enabled (tsd.http.query.allow_delete=false)");
            return;
        }
        if (!auth_http_permit_as(r, AUTH_WRITE)) { /* tsd/auth.h; it has replied */
            qspec_free(q);
            return;
        }
        q->delete_data = true;
    }
    if (query_on_loop(r, q))
        return;
    if (http_req_defer(r, query_work, q, &err) != CT_OK) {
        qspec_free(q);
        http_reply_error(r, 503, "The TSD is overloaded; retry later", err.msg);
        tstats_add(TSTATS_QUERY_EXCEPTIONS, 1);
    }
}

static void last_work(struct http_req *r, void *arg)
{
    struct qlast_req *q = arg;
    struct http_stream_sink s = {r, false};
    struct qjson *j = qjson_new(http_stream_sink_write, &s, 0);
    struct ct_err err = {0};
    enum qexec_status status = QEXEC_INTERNAL;
    if (!j) {
        http_reply_error(r, 500, "out of memory", NULL);
        qlast_req_free(q);
        return;
    }
    int rc = qlast_run(tsd_tsdb(http_req_tsd(r)), q, clock_now_ms(), j, &status, &err);
    answer_finish(r, &s, j, rc, status, &err); /* not in tsd.http.query.* (see (4)) */
    qlast_req_free(q);
}

/* The budget of a last query on the network loop (see (3)): the default back_scan of a
 * fully tagged series is 25 discovery scans and one row read, a series at 1 s resolution has
 * 3,600 cells in an hour row; the bench's last_point takes ~10 us. The wall-time bound
 * (tsd.query.last.loop_us, default 200 us) caps what the counts do not (stepping over a long
 * row in a reversed scan): at most that plus one such step or row read, then a worker runs the
 * query. */
#define LAST_LOOP_MAX_SCANS  32
#define LAST_LOOP_MAX_ROWS   128
#define LAST_LOOP_MAX_CELLS  4096
#define LAST_LOOP_MAX_SERIES 8 /* a query for more goes to a worker after at most 8 keys */
/* Runs q on the loop within the budget; true if r was answered (then q is freed), false if the
 * budget would be passed (nothing was sent; q is kept for a worker). */
static bool last_on_loop(struct http_req *r, struct qlast_req *q)
{
    struct tsd *t = http_req_tsd(r);
    const struct qlast_budget budget = {LAST_LOOP_MAX_SCANS, LAST_LOOP_MAX_ROWS,
                                        LAST_LOOP_MAX_CELLS, LAST_LOOP_MAX_SERIES,
                                        tsd_last_loop_ns(t)};
    int64_t now = clock_now_ms();
    if (!tsd_last_on_loop(t, now))
        return false;
    struct http_stream_sink s = {r, false};
    struct qjson *j = qjson_new(http_stream_sink_write, &s, 0);
    if (!j)
        return false;
    struct ct_err err = {0};
    enum qexec_status status = QEXEC_INTERNAL;
    long waits = loop_waits();
    uint64_t t0 = clock_mono_ns();
    int rc = qlast_run_bounded(tsd_tsdb(t), q, now, &budget, j, &status, &err);
    uint64_t took = clock_mono_ns() - t0;
    if (rc == CT_ELIMIT)
        qjson_free(j); /* nothing was written: the answer is written only at the end */
    else
        answer_finish(r, &s, j, rc, status, &err); /* not in tsd.http.query.* (see (4)) */
    loop_run_done(t, "a last query", waits, took, now);
    if (rc == CT_ELIMIT) {
        tstats_add(TSTATS_LAST_LOOP_OVER, 1);
        return false;
    }
    tstats_add(TSTATS_LAST_LOOP, 1);
    qlast_req_free(q);
    return true;
}

void api_query_last_handle(struct http_req *r)
{
    struct ct_err err = {0};
    struct qlast_req *q = NULL;
    int rc;
    if (http_req_method(r) == HTTP_POST) {
        size_t len = 0;
        const char *body = http_req_body(r, &len);
        rc = qlast_parse_json(body, len, &q, &err);
    } else {
        rc = qlast_parse_params(param_at, r, &q, &err);
    }
    if (rc != CT_OK) {
        http_reply_error(r, rc == CT_ENOMEM ? 500 : 400, err.msg, NULL);
        return;
    }
    q->head = tsd_head(http_req_tsd(r));
    if (last_on_loop(r, q))
        return;
    if (http_req_defer(r, last_work, q, &err) != CT_OK) {
        qlast_req_free(q);
        http_reply_error(r, 503, "The TSD is overloaded; retry later", err.msg);
    }
}
