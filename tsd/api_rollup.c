/* api_rollup.c - rollups in the TSD (docs/schema.md "Rollups", docs/opentsdb-compat.md):
 * opening the rollup tables when tsd.rollups.enable is set, the background job that rolls up
 * closed hours and days (schema/rollup.h: rollup_job_step every tsd.rollups.ctsdb.period
 * seconds), and POST /api/rollup and the telnet `rollup` command (api_rollup.h), which store
 * externally computed rollups as OpenTSDB 2.4 does.
 *
 * /api/rollup body: one object or an array of /api/put's datapoint objects, each with "interval"
 * (a rollup table's: 1h or 1d) and "aggregator" (sum, count, min or max); "groupByAggregator"
 * (OpenTSDB's pre-aggregated table) is refused per point. The timestamp is snapped to the start
 * of its interval. The answer is /api/put's: 204, or with ?summary / ?details the object with
 * "success", "failed" (and "errors": [{"datapoint", "error"}]), 400 when a point failed, 503
 * (http_status_of) when a point failed because the storage backend did not answer.
 * Writes are synchronous (the reply comes after the cells are in the store's log).
 * Counted as /api/put counts (OpenTSDB's RollupDataPointRpc shares PutDataPointRpc's counters):
 * each request in tsd.rpc.received type=http_put, each refused point in tsd.rpc.errors by its
 * class (unknown_metrics: a name not assigned; invalid_values: a value that is no number;
 * illegal_arguments: every other check, but an unknown interval, which OpenTSDB counts as an
 * unexpected exception and /api/stats does not show).
 * Invariants: the job thread is the only writer of the job's progress; it is stopped and joined
 * before the tables are closed (tsd_rollup_stop), which happens before the store closes. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "schema/head.h"
#include "schema/rollup.h"
#include "storage/clock.h"
#include "tsd/api_rollup.h"
#include "tsd/conf.h"
#include "tsd/http.h"
#include "tsd/proto_prom.h"
#include "tsd/put.h"
#include "tsd/routes.h"
#include "tsd/tlog.h"
#include "tsd/tsd.h"
#include "tsd/tsd_int.h"
#include "tsd/tstats.h"

struct tsd_rollup_job {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    struct rollup *r;
    struct head *head; /* the ingest head (NULL: off): its open hours are not rolled up */
    int64_t period_s, grace_s;
};

static void *job_main(void *arg)
{
    pthread_setname_np(pthread_self(), "ct-rollup-job");
    struct tsd_rollup_job *j = arg;
    pthread_mutex_lock(&j->mu);
    while (!j->stop) {
        pthread_mutex_unlock(&j->mu);
        struct ct_err err = {0};
        uint64_t rows = 0;
        uint64_t t0 = (uint64_t)clock_now_ms();
        /* an hour the head still holds is not in the store yet: the job sees time stop just
         * before that hour closes (rollup_job_step rolls the hours before the oldest) */
        int64_t now_s = clock_now_ms() / 1000;
        int64_t oldest = j->head ? head_oldest_hour_s(j->head) : INT64_MAX;
        if (oldest != INT64_MAX && oldest + 3600 + j->grace_s - 1 < now_s)
            now_s = oldest + 3600 + j->grace_s - 1;
        int rc = rollup_job_step(j->r, now_s, j->grace_s, &rows, &err);
        if (rc != CT_OK)
            tlog_warn("rollup job: %s", err.msg);
        else if (rows)
            tlog_info("rollup job: %" PRIu64 " rows rolled up in %" PRIu64 " ms", rows,
                      (uint64_t)clock_now_ms() - t0);
        pthread_mutex_lock(&j->mu);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += (time_t)j->period_s;
        while (!j->stop && pthread_cond_timedwait(&j->cv, &j->mu, &until) == 0) {
        }
    }
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

int tsd_rollup_start(struct tsd *t, struct ct_err *err)
{
    const struct conf *c = t->conf;
    if (!conf_get_bool(c, "tsd.rollups.enable"))
        return CT_OK;
    struct rollup_config rc_;
    rc_.table[ROLLUP_1H] = conf_get_str(c, "tsd.rollups.ctsdb.table_1h");
    rc_.table[ROLLUP_1D] = conf_get_str(c, "tsd.rollups.ctsdb.table_1d");
    rc_.ttl_s[ROLLUP_1H] = conf_get_int(c, "tsd.rollups.ctsdb.ttl_1h");
    rc_.ttl_s[ROLLUP_1D] = conf_get_int(c, "tsd.rollups.ctsdb.ttl_1d");
    rc_.create_tables = !t->read_only;
    int rc = rollup_open(t->store, t->tsdb, &rc_, &t->rollup, err);
    if (rc != CT_OK)
        return ct_err_prefix(err, "cannot open the rollup tables");
    if (t->read_only || !conf_get_bool(c, "tsd.rollups.ctsdb.compute"))
        return CT_OK;
    struct tsd_rollup_job *j = calloc(1, sizeof(*j));
    if (!j)
        return ct_err_set(err, CT_ENOMEM, "out of memory starting the rollup job");
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    j->r = t->rollup;
    j->head = tsd_head(t);
    j->period_s = conf_get_int(c, "tsd.rollups.ctsdb.period");
    j->grace_s = conf_get_int(c, "tsd.rollups.ctsdb.grace");
    if (pthread_create(&j->th, NULL, job_main, j) != 0) {
        pthread_mutex_destroy(&j->mu);
        pthread_cond_destroy(&j->cv);
        free(j);
        return ct_err_set(err, CT_EIO, "cannot start the rollup job thread");
    }
    t->rollup_job = j;
    return CT_OK;
}

void tsd_rollup_stop(struct tsd *t)
{
    struct tsd_rollup_job *j = t->rollup_job;
    if (j) {
        pthread_mutex_lock(&j->mu);
        j->stop = true;
        pthread_cond_broadcast(&j->cv);
        pthread_mutex_unlock(&j->mu);
        pthread_join(j->th, NULL);
        pthread_mutex_destroy(&j->mu);
        pthread_cond_destroy(&j->cv);
        free(j);
        t->rollup_job = NULL;
    }
    rollup_close(t->rollup);
    t->rollup = NULL;
}

struct rollup *tsd_rollup(struct tsd *t)
{
    return t->rollup;
}

/* ---- POST /api/rollup ---------------------------------------------------------------------- */

static bool json_str(const cJSON *o, const char *k, struct put_str *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsString(v) || !v->valuestring[0])
        return false;
    *out = (struct put_str){v->valuestring, strlen(v->valuestring)};
    return true;
}

/* Checks and resolves one point into *p; NULL or the error message (in msg). *code is the
 * store's error code when resolving its names failed (CT_EUNAVAIL: the backend did not answer),
 * else left alone. *stat is the tstats counter of the refusal (TSTATS_NCOUNTERS: none). */
static const char *one_point(struct tsd *t, const cJSON *o, struct rollup_put *p, uint8_t *tsuid,
                             char *msg, size_t cap, int *code, enum tstats_counter *stat)
{
    *stat = TSTATS_ILLEGAL_ARGUMENTS;
    if (!cJSON_IsObject(o))
        return "Unable to parse the datapoint: not a JSON object";
    struct put_point pp;
    memset(&pp, 0, sizeof(pp));
    if (!json_str(o, "metric", &pp.metric))
        return "Metric name was empty";
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(o, "timestamp");
    double tsd = cJSON_IsNumber(ts)   ? ts->valuedouble
                 : cJSON_IsString(ts) ? strtod(ts->valuestring, NULL)
                                      : 0;
    if (!(tsd > 0) || tsd != floor(tsd) || tsd > 9.2e15)
        return "Invalid timestamp";
    int64_t tsv = (int64_t)tsd;
    pp.ms = tsv > 9999999999LL;
    pp.ts_ms = pp.ms ? tsv : tsv * 1000;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "value");
    bool text = cJSON_IsString(v) && v->valuestring[0];
    if (!text && !cJSON_IsNumber(v))
        return "Empty value";
    const cJSON *tags = cJSON_GetObjectItemCaseSensitive(o, "tags");
    if (!cJSON_IsObject(tags) || !tags->child)
        return "Missing tags";
    const cJSON *tg;
    cJSON_ArrayForEach(tg, tags)
    {
        if (pp.ntags == PUT_MAX_TAGS)
            break;
        pp.tagk[pp.ntags] = (struct put_str){tg->string, strlen(tg->string)};
        pp.tagv[pp.ntags] = cJSON_IsString(tg)
                                ? (struct put_str){tg->valuestring, strlen(tg->valuestring)}
                                : (struct put_str){"", 0};
        pp.ntags++;
    }
    if (cJSON_GetObjectItemCaseSensitive(o, "groupByAggregator"))
        return "Pre-aggregated rollups (groupByAggregator) are not supported";
    struct put_str iv, ag;
    if (!json_str(o, "interval", &iv))
        return "Missing interval";
    if (!json_str(o, "aggregator", &ag))
        return "Missing aggregator";
    int ivx = rollup_iv_parse(iv.p);
    if (ivx < 0) {
        *stat = TSTATS_NCOUNTERS;
        snprintf(msg, cap, "No rollup interval '%s': the rollup tables are 1h and 1d", iv.p);
        return msg;
    }
    int agx = rollup_agg_parse(ag.p);
    if (agx < 0) {
        snprintf(msg, cap, "No rollup aggregator '%s': rollups hold sum, count, min and max", ag.p);
        return msg;
    }
    /* a string is typed as put types its text; a JSON number as put would type its decimal
     * text (integral below 1e17: an integer, else a float or a double; prom_value_put), and
     * checked as put checks it (put_check_typed), without making that text */
    enum put_status st;
    if (text) {
        st = put_check_point(&pp, (struct put_str){v->valuestring, strlen(v->valuestring)},
                             &t->rules, msg, cap);
    } else if (!isfinite(v->valuedouble)) { /* 1e999: cJSON reads an infinity; no number */
        st = PUT_ENUMBER;
    } else {
        struct put_names names;
        put_check_names(&pp, &t->rules, &names);
        st = put_check_typed(&pp, prom_value_put(v->valuedouble), &names, msg, cap);
    }
    if (st == PUT_ENUMBER) { /* as /api/put answers */
        *stat = TSTATS_INVALID_VALUES;
        return "Unable to parse value to a number";
    }
    if (st != PUT_OK)
        return strncmp(msg, "illegal argument: ", 18) ? msg : msg + 18;
    /* names are NUL-terminated in the cJSON tree */
    const char *tk[PUT_MAX_TAGS], *tv[PUT_MAX_TAGS];
    for (size_t i = 0; i < pp.ntags; i++) {
        tk[i] = pp.tagk[i].p;
        tv[i] = pp.tagv[i].p;
    }
    struct ct_err err = {0};
    size_t tl;
    int rc = tsdb_series_resolve(t->tsdb, pp.metric.p, tk, tv, pp.ntags, tsuid, ROWKEY_MAX_TSUID,
                                 &tl, &err);
    if (rc != CT_OK) {
        *code = rc;
        /* PutDataPointRpc's wording for a metric, tag name or value that is not assigned */
        if (rc == CT_NOTFOUND) {
            *stat = TSTATS_UNKNOWN_METRICS;
            return "Unknown metric";
        }
        if (rc != CT_EINVAL) /* the store failed, not the point (OpenTSDB: hbase_errors) */
            *stat = TSTATS_NCOUNTERS;
        snprintf(msg, cap, "%s", err.msg);
        return msg;
    }
    int64_t step = rollup_iv_seconds((enum rollup_iv)ivx), s = pp.ts_ms / 1000;
    p->tsuid = tsuid;
    p->tsuid_len = tl;
    p->iv = (enum rollup_iv)ivx;
    p->agg = (enum rollup_agg)agx;
    p->ts_s = s - s % step;
    p->val = pp.value.kind == PUT_INT ? dpcodec_point_int(0, false, pp.value.i)
                                      : dpcodec_point_real(0, false, pp.value.d);
    return NULL;
}

static void api_rollup_work(struct http_req *r, void *arg)
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
    cJSON *root = cJSON_ParseWithLength(body, len);
    if (!root) {
        http_reply_error(r, 400, "Unable to parse the given JSON", NULL);
        return;
    }
    bool details = http_req_flag(r, "details"), summary = http_req_flag(r, "summary");
    size_t n = cJSON_IsArray(root) ? (size_t)cJSON_GetArraySize(root) : 1;
    if (n == 0) {
        cJSON_Delete(root);
        http_reply_error(r, 400, "No datapoints found in content", NULL);
        return;
    }
    struct rollup_put *ps = calloc(n, sizeof(*ps));
    uint8_t *tsuids = malloc(n * ROWKEY_MAX_TSUID);
    cJSON *errors = cJSON_CreateArray();
    if (!ps || !tsuids || !errors) {
        free(ps);
        free(tsuids);
        cJSON_Delete(errors);
        cJSON_Delete(root);
        http_reply_error(r, 500, "out of memory", NULL);
        return;
    }
    size_t ok = 0, failed = 0, i = 0;
    /* the first failure because the backend did not answer: the answer is then 503 (one
     * mapping for every endpoint, http_status_of), the client should retry the request */
    char unavail[CT_ERR_MSG_MAX] = "";
    const cJSON *o = cJSON_IsArray(root) ? root->child : root;
    for (; o && i < n; o = cJSON_IsArray(root) ? o->next : NULL, i++) {
        char msg[CT_ERR_MSG_MAX];
        int code = CT_OK;
        enum tstats_counter stat;
        const char *e = one_point(t, o, &ps[ok], tsuids + ok * ROWKEY_MAX_TSUID, msg, sizeof(msg),
                                  &code, &stat);
        if (!e) {
            ok++;
            continue;
        }
        failed++;
        if (stat != TSTATS_NCOUNTERS)
            tstats_add(stat, 1);
        if (code == CT_EUNAVAIL && !unavail[0])
            snprintf(unavail, sizeof(unavail), "%s", e);
        if (details) {
            cJSON *eo = cJSON_CreateObject();
            cJSON_AddItemToObject(eo, "datapoint", cJSON_Duplicate(o, true));
            cJSON_AddStringToObject(eo, "error", e);
            cJSON_AddItemToArray(errors, eo);
        }
    }
    struct ct_err err = {0};
    int rc = ok ? rollup_write(t->rollup, ps, ok, &err) : CT_OK;
    if (rc != CT_OK) { /* nothing is known written: every point failed */
        tlog_warn("/api/rollup: %s", err.msg);
        failed += ok;
        ok = 0;
        if (rc == CT_EUNAVAIL && !unavail[0])
            snprintf(unavail, sizeof(unavail), "%s", err.msg);
    }
    int fail_status = unavail[0] ? http_status_of(CT_EUNAVAIL, 400) : 400;
    if (summary || details) {
        cJSON *out = cJSON_CreateObject();
        if (details)
            cJSON_AddItemToObject(out, "errors", errors);
        else
            cJSON_Delete(errors);
        cJSON_AddNumberToObject(out, "failed", (double)failed);
        cJSON_AddNumberToObject(out, "success", (double)ok);
        http_reply_cjson(r, failed ? fail_status : 200, out);
    } else {
        cJSON_Delete(errors);
        if (rc != CT_OK)
            http_reply_error(r, http_status_of(rc, 500), "Unable to write the rollups", err.msg);
        else if (unavail[0])
            http_reply_error(r, fail_status, "Unable to write the rollups", unavail);
        else if (failed)
            http_reply_error(r, 400, "One or more data points had errors",
                             "Please see the TSD logs or append \"details\" to the put request");
        else
            http_reply_status(r, 204);
    }
    free(ps);
    free(tsuids);
    cJSON_Delete(root);
}

void api_rollup_handle(struct http_req *r)
{
    struct tsd *t = http_req_tsd(r);
    if (!t->rollup || t->read_only) {
        http_reply_error(r, 404, "Endpoint not found",
                         t->read_only ? "the TSD is in read-only mode (tsd.mode=ro)"
                                      : "rollups are not enabled (tsd.rollups.enable)");
        return;
    }
    struct ct_err err = {0};
    if (http_req_defer(r, api_rollup_work, NULL, &err) != CT_OK)
        http_reply_error(r, 503, "The TSD is overloaded; retry later", err.msg);
}

/* ---- the telnet `rollup` command (api_rollup.h) ----------------------------------------------- */

/* One parsed telnet rollup line waiting for its write. */
struct rollup_entry {
    char *names; /* "metric\0k1\0v1\0...", owned */
    size_t ntags;
    enum rollup_iv iv;
    enum rollup_agg agg;
    int64_t ts_s; /* the interval's start */
    struct dpcodec_point val;
    uint64_t owner;
    char *failure; /* after the write: NULL (stored) or the reply text, owned */
};

struct rollup_batch {
    struct rollup_entry *e;
    size_t n, cap;
};

struct rollup_batch *rollup_batch_new(void)
{
    return calloc(1, sizeof(struct rollup_batch));
}

void rollup_batch_reset(struct rollup_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        free(b->e[i].names);
        free(b->e[i].failure);
    }
    b->n = 0;
}

void rollup_batch_free(struct rollup_batch *b)
{
    if (!b)
        return;
    rollup_batch_reset(b);
    free(b->e);
    free(b);
}

size_t rollup_batch_count(const struct rollup_batch *b)
{
    return b->n;
}

const char *rollup_batch_failure(const struct rollup_batch *b, size_t i, uint64_t *owner)
{
    *owner = b->e[i].owner;
    return b->e[i].failure;
}

/* Formats "rollup: <prefix><fmt...>" into msg and returns st. */
#define RL_FAIL(st, prefix, ...)                                                                   \
    do {                                                                                           \
        int n_ = snprintf(msg, cap, "rollup: %s", prefix);                                         \
        if (n_ >= 0 && (size_t)n_ < cap)                                                           \
            snprintf(msg + n_, cap - (size_t)n_, __VA_ARGS__);                                     \
        return st;                                                                                 \
    } while (0)

enum rollup_line_status api_rollup_telnet(struct tsd *t, const char *line, size_t len,
                                          struct rollup_batch *b, uint64_t owner, char *msg,
                                          size_t cap)
{
    static const char ill[] = "illegal argument: ";
    if (t->read_only)
        RL_FAIL(ROLLUP_LINE_EARG, ill, "the TSD is in read-only mode (tsd.mode=ro)");
    if (!t->rollup)
        RL_FAIL(ROLLUP_LINE_EARG, ill, "rollups are not enabled (tsd.rollups.enable)");
    if (len > TELNET_MAX_LINE)
        RL_FAIL(ROLLUP_LINE_EARG, ill, "line too long");
    /* words as OpenTSDB splits them (one per space, empty ones kept): the command, the
     * interval and aggregator, the metric, the timestamp, the value, at least one tag */
    size_t nw = 1;
    for (size_t i = 0; i < len; i++)
        nw += line[i] == ' ';
    if (nw < 6)
        RL_FAIL(ROLLUP_LINE_EARG, ill, "not enough arguments (need least 7, got %zu)", nw - 1);
    const char *ia = memchr(line, ' ', len) + 1; /* nw >= 6: there is a space */
    const char *ia_end = memchr(ia, ' ', len - (size_t)(ia - line));
    size_t ial = (size_t)(ia_end - ia);
    if (ial == 0)
        RL_FAIL(ROLLUP_LINE_EARG, ill, "Missing interval or aggregator");
    /* "<interval>-<agg>[:<groupby agg>]" or "<groupby agg>": the group-by (pre-aggregated)
     * form has no table here */
    const char *colon = memchr(ia, ':', ial);
    size_t first = colon ? (size_t)(colon - ia) : ial;
    const char *dash = memchr(ia, '-', first);
    if (!dash || colon)
        RL_FAIL(ROLLUP_LINE_EARG, ill,
                "Pre-aggregated rollups (groupByAggregator) are not supported");
    char iv[16], ag[16];
    snprintf(iv, sizeof(iv), "%.*s", (int)(dash - ia), ia);
    snprintf(ag, sizeof(ag), "%.*s", (int)(ia + first - dash - 1), dash + 1);
    /* the rest is a put line's: parsed and checked as put does, in its order */
    char buf[TELNET_MAX_LINE + 8];
    size_t rest = len - (size_t)(ia_end - line);
    memcpy(buf, "put", 3);
    memcpy(buf + 3, ia_end, rest);
    struct put_point p;
    char pmsg[CT_ERR_MSG_MAX];
    enum put_status st = put_parse_line(buf, 3 + rest, &t->rules, &p, pmsg, sizeof(pmsg));
    if (st != PUT_OK) {
        const char *m = strncmp(pmsg, "put: ", 5) ? pmsg : pmsg + 5;
        RL_FAIL(st == PUT_ENUMBER ? ROLLUP_LINE_ENUMBER : ROLLUP_LINE_EARG, "", "%s", m);
    }
    int ivx = rollup_iv_parse(iv);
    if (ivx < 0)
        RL_FAIL(ROLLUP_LINE_EARG, ill, "No rollup interval '%s': the rollup tables are 1h and 1d",
                iv);
    int agx = rollup_agg_parse(ag);
    if (agx < 0)
        RL_FAIL(ROLLUP_LINE_EARG, ill,
                "No rollup aggregator '%s': rollups hold sum, count, min and max", ag);
    /* keep the names (they point into buf) */
    size_t nl = p.metric.len + 1;
    for (size_t i = 0; i < p.ntags; i++)
        nl += p.tagk[i].len + p.tagv[i].len + 2;
    if (b->n == b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 64;
        struct rollup_entry *ne = realloc(b->e, nc * sizeof(*ne));
        if (!ne)
            RL_FAIL(ROLLUP_LINE_EARG, "HBase error: ", "out of memory");
        b->e = ne;
        b->cap = nc;
    }
    struct rollup_entry *e = &b->e[b->n];
    memset(e, 0, sizeof(*e));
    if (!(e->names = malloc(nl)))
        RL_FAIL(ROLLUP_LINE_EARG, "HBase error: ", "out of memory");
    char *w = e->names;
    memcpy(w, p.metric.p, p.metric.len);
    w += p.metric.len;
    *w++ = '\0';
    for (size_t i = 0; i < p.ntags; i++) {
        memcpy(w, p.tagk[i].p, p.tagk[i].len);
        w += p.tagk[i].len;
        *w++ = '\0';
        memcpy(w, p.tagv[i].p, p.tagv[i].len);
        w += p.tagv[i].len;
        *w++ = '\0';
    }
    int64_t step = rollup_iv_seconds((enum rollup_iv)ivx), s = p.ts_ms / 1000;
    e->ntags = p.ntags;
    e->iv = (enum rollup_iv)ivx;
    e->agg = (enum rollup_agg)agx;
    e->ts_s = s - s % step;
    e->val = p.value.kind == PUT_INT ? dpcodec_point_int(0, false, p.value.i)
                                     : dpcodec_point_real(0, false, p.value.d);
    e->owner = owner;
    b->n++;
    return ROLLUP_LINE_OK;
}

/* Sets entry e's reply "rollup: <what><why>". */
static void rollup_fail(struct rollup_entry *e, const char *what, const char *why)
{
    size_t n = strlen(what) + strlen(why) + 16;
    free(e->failure);
    e->failure = malloc(n);
    if (e->failure)
        snprintf(e->failure, n, "rollup: %s%s", what, why);
}

void api_rollup_telnet_write(struct tsd *t, struct rollup_batch *b)
{
    struct rollup_put *ps = calloc(b->n ? b->n : 1, sizeof(*ps));
    uint8_t(*tsuids)[ROWKEY_MAX_TSUID] = calloc(b->n ? b->n : 1, ROWKEY_MAX_TSUID);
    size_t *idx = calloc(b->n ? b->n : 1, sizeof(*idx));
    if (!ps || !tsuids || !idx) {
        for (size_t i = 0; i < b->n; i++)
            rollup_fail(&b->e[i], "HBase error: ", "out of memory writing rollups");
        goto out;
    }
    size_t np = 0;
    for (size_t i = 0; i < b->n; i++) {
        struct rollup_entry *e = &b->e[i];
        const char *tk[PUT_MAX_TAGS], *tv[PUT_MAX_TAGS];
        const char *q = e->names + strlen(e->names) + 1;
        for (size_t k = 0; k < e->ntags && k < PUT_MAX_TAGS; k++) {
            tk[k] = q;
            q += strlen(q) + 1;
            tv[k] = q;
            q += strlen(q) + 1;
        }
        struct ct_err err = {0};
        size_t tl = 0;
        int rc = tsdb_series_resolve(t->tsdb, e->names, tk, tv, e->ntags, tsuids[np],
                                     ROWKEY_MAX_TSUID, &tl, &err);
        if (rc != CT_OK) {
            /* PutDataPointRpc's classes: a name not assigned, a bad name, the store failing */
            if (rc == CT_NOTFOUND) {
                tstats_add(TSTATS_UNKNOWN_METRICS, 1);
                rollup_fail(e, "unknown metric: ", err.msg);
            } else if (rc == CT_EINVAL) {
                tstats_add(TSTATS_ILLEGAL_ARGUMENTS, 1);
                rollup_fail(e, "illegal argument: ", err.msg);
            } else {
                rollup_fail(e, "HBase error: ", err.msg);
            }
            continue;
        }
        ps[np] = (struct rollup_put){tsuids[np], tl, e->iv, e->agg, e->ts_s, e->val};
        idx[np++] = i;
    }
    struct ct_err err = {0};
    if (np && rollup_write(t->rollup, ps, np, &err) != CT_OK) {
        tlog_warn("telnet rollup: %s", err.msg);
        for (size_t k = 0; k < np; k++)
            rollup_fail(&b->e[idx[k]], "HBase error: ", err.msg);
    }
out:
    free(ps);
    free(tsuids);
    free(idx);
}
