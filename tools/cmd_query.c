/* cmd_query.c - `ctsdb query`: runs one OpenTSDB query and prints it like OpenTSDB's
 * `tsdb query` (CliQuery): one line per datapoint, `metric timestamp_ms value {tagk=tagv, ...}`,
 * integers as integers and doubles with six decimals (Java's "%f").
 *
 *   ctsdb query [--host HOST:PORT | --data DIR] [--config FILE] [--KEY=VALUE...] START [END]
 *               AGG[:DOWNSAMPLE][:rate[{counter,max,reset}]] METRIC [TAGK=TAGV ...]
 *
 * With a data directory (--data, or tsd.storage.directory set in --config or as --KEY=VALUE)
 * and no --host the store is opened read-only in-process (query/qexec.h), with the open hours of
 * the ingest head's log in DIR/head (schema/headlog.h, read-only); otherwise the query
 * goes to a running TSD's /api/query over HTTP (default 127.0.0.1:4242). Options:
 * tools/tool_opts.h. START/END take every
 * OpenTSDB time format (1h-ago, 2013/01/01-00:00:00, unix seconds or ms). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "query/qexec.h"
#include "query/qspec.h"
#include "schema/head.h"
#include "schema/headlog.h"
#include "schema/tsdb.h"
#include "storage/clock.h"
#include "storage/wc.h"
#include "tools/tool.h"
#include "tools/tool_opts.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ctsdb query [--host HOST:PORT | --data DIR] [--config FILE] [--KEY=VALUE...]\n"
            "                   START [END] AGG[:DOWNSAMPLE][:rate] METRIC [TAGK=TAGV ...]\n\n"
            "Runs one query and prints `metric timestamp value {tags}` per datapoint, as\n"
            "OpenTSDB's `tsdb query`. With a data directory (--data DIR, or the key\n"
            "tsd.storage.directory) or --tsd.storage.backend=bigtable it reads the store\n"
            "itself; otherwise it asks the TSD at\n"
            "HOST:PORT (default 127.0.0.1:4242). --KEY=VALUE sets any configuration key\n"
            "(docs/tsd.md); --set KEY=VALUE is the same.\n");
}

/* The query as URL parameters. */
struct qargs {
    const char *start, *end;
    char m[4096];
};

static const char *arg_param(void *arg, const char *name, size_t idx)
{
    const struct qargs *a = arg;
    if (idx)
        return NULL;
    if (!strcmp(name, "start"))
        return a->start;
    if (!strcmp(name, "end"))
        return a->end;
    if (!strcmp(name, "m"))
        return a->m;
    return NULL;
}

static void print_value_line(const char *metric, int64_t ts, bool is_int, int64_t i, double d,
                             const char *tags)
{
    if (is_int)
        printf("%s %lld %lld {%s}\n", metric, (long long)ts, (long long)i, tags);
    else
        printf("%s %lld %f {%s}\n", metric, (long long)ts, d, tags);
}

static int print_point(void *arg, const char *metric, const char *tags, const struct qagg_point *pt)
{
    (void)arg;
    /* tags arrive as "k=v k2=v2"; OpenTSDB prints a Java map: "k=v, k2=v2" */
    char buf[4096];
    size_t o = 0;
    for (const char *p = tags; *p && o + 3 < sizeof(buf); p++) {
        if (*p == ' ') {
            buf[o++] = ',';
            buf[o++] = ' ';
        } else {
            buf[o++] = *p;
        }
    }
    buf[o] = 0;
    print_value_line(metric, pt->ts_ms, pt->is_int, pt->is_int ? pt->v.i : 0,
                     pt->is_int ? 0 : pt->v.d, buf);
    return 0;
}

static int run_local(struct tool_opts *to, const struct qargs *a)
{
    struct ct_err err = {0};
    struct qspec *q = NULL;
    struct wc_store *s = NULL;
    struct tsdb *t = NULL;
    struct qpool *pool = NULL;
    struct head *head = NULL;
    int ret = 1;
    if (qspec_parse_params(arg_param, (void *)a, clock_now_ms(), &q, &err) != CT_OK) {
        fprintf(stderr, "ctsdb query: %s\n", err.msg);
        ret = 2;
        goto done;
    }
    to->config.read_only = true;
    if (tool_opts_open(to, &s, &t) != 0)
        goto done;
    struct qpool_options po;
    qpool_options_system(&po);
    if (qpool_new(&po, &pool, &err) != CT_OK) {
        fprintf(stderr, "ctsdb query: %s\n", err.msg);
        goto done;
    }
    /* the open hours a TSD with the ingest head keeps in <data>/head (read, never changed) */
    if (to->data && *to->data) {
        char hp[PATH_MAX];
        if ((size_t)snprintf(hp, sizeof(hp), "%s/head", to->data) >= sizeof(hp) ||
            headlog_load_read_only(hp, &head, NULL, &err) != CT_OK) {
            fprintf(stderr, "ctsdb query: cannot read the ingest head's log in %s/head: %s\n",
                    to->data, err.msg);
            goto done;
        }
    }
    struct qexec_options qo;
    qexec_options_init(&qo);
    qo.pool = pool;
    qo.head = head;
    enum qexec_status st = QEXEC_INTERNAL;
    if (qexec_run_points(t, q, &qo, print_point, NULL, &st, &err) != CT_OK) {
        /* the exit status a TSD's answer would give (run_remote): a 4xx (unknown name, bad
         * TSUID, datapoint limit, timeout) is the query's fault, 2; anything else 1 */
        fprintf(stderr, "ctsdb query: %s\n", err.msg);
        ret = st >= 400 && st < 500 ? 2 : 1;
        goto done;
    }
    ret = 0;
done:
    qpool_free(pool);
    head_free(head);
    tsdb_close(t);
    wc_close(s);
    qspec_free(q);
    return ret;
}

/* Appends s percent-encoded to out. */
static size_t url_encode(const char *s, char *out, size_t cap)
{
    static const char hx[] = "0123456789ABCDEF";
    size_t o = 0;
    for (; *s && o + 4 < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            strchr("-_.~", ch)) {
            out[o++] = (char)ch;
        } else {
            out[o++] = '%';
            out[o++] = hx[ch >> 4];
            out[o++] = hx[ch & 15];
        }
    }
    out[o] = 0;
    return o;
}

static int run_remote(const char *hostport, const struct qargs *a)
{
    char host[256] = "127.0.0.1", port[16] = "4242";
    if (hostport) {
        const char *colon = strrchr(hostport, ':');
        if (colon) {
            snprintf(host, sizeof(host), "%.*s", (int)(colon - hostport), hostport);
            snprintf(port, sizeof(port), "%s", colon + 1);
        } else {
            snprintf(host, sizeof(host), "%s", hostport);
        }
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    if (getaddrinfo(host, port, &hints, &ai) != 0 || !ai) {
        fprintf(stderr, "ctsdb query: cannot resolve %s:%s\n", host, port);
        return 1;
    }
    int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        fprintf(stderr, "ctsdb query: cannot connect to %s:%s: %s\n", host, port, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return 1;
    }
    freeaddrinfo(ai);
    char es[512], ee[512], em[8192], req[10000];
    url_encode(a->start, es, sizeof(es));
    url_encode(a->end ? a->end : "", ee, sizeof(ee));
    url_encode(a->m, em, sizeof(em));
    int n =
        snprintf(req, sizeof(req), "GET /api/query?start=%s%s%s&m=%s HTTP/1.0\r\nHost: %s\r\n\r\n",
                 es, a->end ? "&end=" : "", a->end ? ee : "", em, host);
    if (write(fd, req, (size_t)n) != n) {
        fprintf(stderr, "ctsdb query: cannot send the request: %s\n", strerror(errno));
        close(fd);
        return 1;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    ssize_t r;
    while (buf && (r = read(fd, buf + len, cap - len - 1)) > 0) {
        len += (size_t)r;
        if (len + 1 == cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    close(fd);
    if (!buf) {
        fprintf(stderr, "ctsdb query: out of memory reading the answer\n");
        return 1;
    }
    buf[len] = 0;
    int status = 0;
    sscanf(buf, "HTTP/%*s %d", &status);
    char *body = strstr(buf, "\r\n\r\n");
    body = body ? body + 4 : buf + len;
    /* the answer may be chunked: strip the chunk framing */
    if (strcasestr(buf, "Transfer-Encoding: chunked")) {
        char *in = body, *o = body;
        for (;;) {
            unsigned long sz = strtoul(in, &in, 16);
            in = strstr(in, "\r\n");
            if (!in || sz == 0)
                break;
            in += 2;
            memmove(o, in, sz);
            o += sz;
            in += sz + 2;
        }
        *o = 0;
    }
    cJSON *doc = cJSON_Parse(body);
    int ret = 0;
    if (status != 200 || !cJSON_IsArray(doc)) {
        cJSON *msg = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(doc, "error"), "message");
        fprintf(stderr, "ctsdb query: HTTP %d: %s\n", status,
                cJSON_IsString(msg) ? msg->valuestring : body);
        ret = status >= 400 && status < 500 ? 2 : 1;
    } else {
        /* cJSON keeps no number text, and 40.0 must print as a double: read each group's dps
         * object from the raw text (the i-th "dps":{ belongs to the i-th group) */
        const char *cur = body;
        const cJSON *g;
        cJSON_ArrayForEach(g, doc)
        {
            const cJSON *metric = cJSON_GetObjectItemCaseSensitive(g, "metric");
            const cJSON *tags = cJSON_GetObjectItemCaseSensitive(g, "tags"), *tg;
            const char *dps = cur ? strstr(cur, "\"dps\":{") : NULL;
            if (!cJSON_IsString(metric) || !dps)
                continue;
            char tz[4096];
            size_t o = 0;
            tz[0] = 0;
            cJSON_ArrayForEach(tg, tags)
            {
                if (cJSON_IsString(tg) && o < sizeof(tz))
                    o += (size_t)snprintf(tz + o, sizeof(tz) - o, "%s%s=%s", o ? ", " : "",
                                          tg->string, tg->valuestring);
            }
            const char *p = dps + 7;
            while (*p == '"') {
                long long ts = strtoll(p + 1, (char **)&p, 10) * 1000;
                p += 2; /* the closing quote and the colon */
                const char *v = p;
                while (*p && *p != ',' && *p != '}')
                    p++;
                char val[64];
                snprintf(val, sizeof(val), "%.*s", (int)(p - v), v);
                if (val[0] == '"' || val[0] == 'n')
                    printf("%s %lld %s {%s}\n", metric->valuestring, ts,
                           val[0] == 'n' ? "null" : "NaN", tz);
                else if (strpbrk(val, ".eE"))
                    print_value_line(metric->valuestring, ts, false, 0, strtod(val, NULL), tz);
                else
                    print_value_line(metric->valuestring, ts, true, strtoll(val, NULL, 10), 0, tz);
                if (*p == ',')
                    p++;
            }
            cur = p;
        }
    }
    cJSON_Delete(doc);
    free(buf);
    return ret;
}

static int query_run(int argc, char **argv)
{
    const char *host = NULL;
    struct tool_opts to;
    int st = tool_opts_init(&to, "query", usage, &argc, argv);
    if (st >= 0)
        return st;
    /* options may come anywhere; the rest are positional */
    char **pos = calloc((size_t)argc + 1, sizeof(char *));
    int npos = 0;
    if (!pos)
        return 1;
    for (int k = 1; k < argc; k++) {
        if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
            usage(stdout);
            free(pos);
            return 0;
        } else if (!strcmp(argv[k], "--host") && k + 1 < argc) {
            host = argv[++k];
        } else if (!strncmp(argv[k], "--", 2)) {
            fprintf(stderr, "ctsdb query: unknown option '%s'\n", argv[k]);
            free(pos);
            return 2;
        } else {
            pos[npos++] = argv[k];
        }
    }
    int i = 0;
    argc = npos;
    argv = pos;
    if (argc - i < 3) {
        usage(stderr);
        free(pos);
        return 2;
    }
    struct qargs a = {.start = argv[i++], .end = NULL};
    /* END is present when the argument after it still leaves AGG and METRIC, and it does not
     * name an aggregator */
    char first[64];
    snprintf(first, sizeof(first), "%s", argv[i]);
    char *colon = strchr(first, ':');
    if (colon)
        *colon = 0;
    if (!qagg_lookup(first) && argc - i >= 3)
        a.end = argv[i++];
    const char *agg = argv[i++];
    const char *metric = argv[i++];
    size_t o = (size_t)snprintf(a.m, sizeof(a.m), "%s:%s", agg, metric);
    for (int k = i; k < argc && o < sizeof(a.m); k++)
        o += (size_t)snprintf(a.m + o, sizeof(a.m) - o, "%s%s", k == i ? "{" : ",", argv[k]);
    if (i < argc && o < sizeof(a.m))
        snprintf(a.m + o, sizeof(a.m) - o, "}");
    /* the store itself when one is named: a data directory, or Bigtable */
    int ret = (to.data_set || to.bigtable) && !host ? run_local(&to, &a) : run_remote(host, &a);
    free(pos);
    return ret;
}

const struct tool_command tool_cmd_query = {"query", "run one query and print its datapoints",
                                            query_run};
