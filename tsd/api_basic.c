/* api_basic.c - the small HTTP endpoints (docs/opentsdb-compat.md, "Small endpoints"):
 * /api/version, /api/stats (+ sub-paths), /api/config, /api/dropcaches, /api/serializers,
 * /api/aggregators (query/qagg.h's table), /api/status, and ctsdb's /api/storage (tables, families
 * and regions with their figures; docs/tsd.md). Handlers that read the store run on a worker
 * (http_req_defer). */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "query/qagg.h"
#include "storage/clock.h"
#include "storage/wc.h"
#include "tsd/auth.h"
#include "tsd/build_info.h"
#include "tsd/conf.h"
#include "tsd/http.h"
#include "tsd/routes.h"
#include "tsd/tsd_int.h"
#include "tsd/workpool.h"

void api_aggregators_handle(struct http_req *r)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < qagg_count(); i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(qagg_name(qagg_at(i))));
    http_reply_cjson(r, 200, a);
}

void api_version_handle(struct http_req *r)
{
    struct tsd *t = http_req_tsd(r);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "version", CTSDB_VERSION);
    cJSON_AddStringToObject(o, "short_revision", CTSDB_GIT_REV);
    cJSON_AddStringToObject(o, "full_revision", CTSDB_GIT_FULL);
    char ts[24]; /* OpenTSDB's: the build time in seconds, as a string */
    snprintf(ts, sizeof(ts), "%lld", (long long)build_info_time_s());
    cJSON_AddStringToObject(o, "timestamp", ts);
    cJSON_AddStringToObject(o, "repo_status", CTSDB_REPO_STATUS);
    cJSON_AddStringToObject(o, "user", CTSDB_BUILD_USER);
    cJSON_AddStringToObject(o, "host", tsd_hostname(t));
    cJSON_AddStringToObject(o, "repo", "ctsdb");
    cJSON_AddStringToObject(o, "branch", CTSDB_GIT_BRANCH);
    http_reply_cjson(r, 200, o);
}

void api_status_handle(struct http_req *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status", tsd_status(http_req_tsd(r)));
    http_reply_cjson(r, 200, o);
}

static int api_config_add(void *arg, const char *key, const char *value)
{
    if (auth_conf_key_secret(key) && *value)
        value = "********"; /* never show the token (tsd/auth.h) */
    cJSON_AddStringToObject(arg, key, value);
    return 0;
}

void api_config_handle(struct http_req *r)
{
    cJSON *o = cJSON_CreateObject();
    if (o)
        conf_each(tsd_conf(http_req_tsd(r)), api_config_add, o);
    http_reply_cjson(r, 200, o);
}

void api_dropcaches_handle(struct http_req *r)
{
    tsd_drop_caches(http_req_tsd(r));
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "message", "Caches dropped");
    cJSON_AddStringToObject(o, "status", "200");
    http_reply_cjson(r, 200, o);
}

void api_serializers_handle(struct http_req *r)
{
    static const char *const formatters[] = {
        "formatPutV1",           "formatSuggestV1",        "formatSerializersV1",
        "formatAggregatorsV1",   "formatVersionV1",        "formatDropCachesV1",
        "formatQueryV1",         "formatLastPointQueryV1", "formatUidAssignV1",
        "formatTSMetaV1",        "formatUidMetaV1",        "formatAnnotationV1",
        "formatStatsV1",         "formatConfigV1",         "formatFilterConfigV1",
        "formatSearchResultsV1", "formatAnnotationsV1",    "formatErrorV1",
        "formatNotFoundV1",
    };
    static const char *const parsers[] = {
        "parsePutV1",        "parseSuggestV1",        "parseUidAssignV1",   "parseUidRenameV1",
        "parseQueryV1",      "parseLastPointQueryV1", "parseTSMetaV1",      "parseUidMetaV1",
        "parseAnnotationV1", "parseAnnotationsV1",    "parseSearchQueryV1",
    };
    cJSON *a = cJSON_CreateArray();
    cJSON *o = cJSON_CreateObject();
    cJSON *f = cJSON_CreateArray();
    cJSON *p = cJSON_CreateArray();
    for (size_t i = 0; f && i < sizeof(formatters) / sizeof(formatters[0]); i++)
        cJSON_AddItemToArray(f, cJSON_CreateString(formatters[i]));
    for (size_t i = 0; p && i < sizeof(parsers) / sizeof(parsers[0]); i++)
        cJSON_AddItemToArray(p, cJSON_CreateString(parsers[i]));
    cJSON_AddStringToObject(o, "serializer", "json");
    cJSON_AddItemToObject(o, "formatters", f);
    cJSON_AddItemToObject(o, "parsers", p);
    cJSON_AddStringToObject(o, "class", "net.opentsdb.tsd.HttpJsonSerializer");
    cJSON_AddStringToObject(o, "version", "2.4.1");
    cJSON_AddStringToObject(o, "request_content_type", "application/json");
    cJSON_AddStringToObject(o, "response_content_type", "application/json; charset=UTF-8");
    cJSON_AddItemToArray(a, o);
    http_reply_cjson(r, 200, a);
}

/* ---- stats ---------------------------------------------------------------------------------- */

static void api_stats_add(void *arg, const char *metric, int64_t ts_s, const char *value,
                          const char *tags)
{
    cJSON *a = arg;
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return;
    cJSON_AddStringToObject(o, "metric", metric);
    cJSON_AddNumberToObject(o, "timestamp", (double)ts_s);
    cJSON_AddStringToObject(o, "value", value);
    cJSON *tg = cJSON_AddObjectToObject(o, "tags");
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", tags);
    char *save = NULL;
    for (char *tok = strtok_r(buf, " ", &save); tok && tg; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            continue;
        *eq = '\0';
        cJSON_AddStringToObject(tg, tok, eq + 1);
    }
    cJSON_AddItemToArray(a, o);
}

static void api_stats_work(struct http_req *r, void *arg)
{
    (void)arg;
    cJSON *a = cJSON_CreateArray();
    if (a)
        tsd_collect_stats(http_req_tsd(r), api_stats_add, a);
    http_reply_cjson(r, 200, a);
}

void api_stats_handle(struct http_req *r)
{
    struct ct_err err = {0};
    if (http_req_defer(r, api_stats_work, NULL, &err) != CT_OK)
        http_reply_error(r, 503, "The TSD is overloaded; retry later", err.msg);
}

/* /api/stats/threads as StatsRpc.printThreadStats shapes it: one object per thread of the
 * process (/proc/self/task): threadID (the kernel's tid), name, state (Java's names for the
 * kernel's letter: R RUNNABLE, D BLOCKED, S and others WAITING, Z/X TERMINATED), interrupted,
 * priority (Java's NORM_PRIORITY 5: native threads have none) and stack (empty: no Java
 * frames). */
static cJSON *api_threads(void)
{
    cJSON *a = cJSON_CreateArray();
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (a && d && (e = readdir(d)) != NULL) {
        char *end;
        long tid = strtol(e->d_name, &end, 10);
        if (*end || tid <= 0)
            continue;
        char path[64], buf[512] = "", name[64] = "";
        snprintf(path, sizeof(path), "/proc/self/task/%ld/stat", tid);
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
        if (f)
            fclose(f);
        buf[n] = '\0';
        /* "tid (comm) S ...": comm may hold spaces and parentheses: the last ')' ends it */
        char *lp = strchr(buf, '('), *rp = strrchr(buf, ')');
        if (!lp || !rp || rp < lp || !rp[1] || !rp[2])
            continue;
        snprintf(name, sizeof(name), "%.*s", (int)(rp - lp - 1), lp + 1);
        char st = rp[2];
        const char *state = st == 'R'                ? "RUNNABLE"
                            : st == 'D'              ? "BLOCKED"
                            : st == 'Z' || st == 'X' ? "TERMINATED"
                                                     : "WAITING";
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "threadID", (double)tid);
        cJSON_AddStringToObject(o, "name", name);
        cJSON_AddStringToObject(o, "state", state);
        cJSON_AddBoolToObject(o, "interrupted", 0);
        cJSON_AddNumberToObject(o, "priority", 5);
        cJSON_AddItemToObject(o, "stack", cJSON_CreateArray());
        cJSON_AddItemToArray(a, o);
    }
    if (d)
        closedir(d);
    return a;
}

/* /api/stats/jvm: StatsRpc.printJVMStats' five sections with what a native process has:
 * runtime (startTime and uptime in ms, the program for vmName/vmVendor/vmVersion), memory (the
 * resident and virtual sizes from /proc/self/statm under heapMemoryUsage's field names), os
 * (systemLoadAverage), gc and pools empty (no collector), plus ctsdb's own figures. */
static cJSON *api_jvm(struct tsd *t)
{
    cJSON *o = cJSON_CreateObject();
    int64_t now = clock_now_ms(), start = tsd_start_ms(t);
    cJSON *rt = cJSON_AddObjectToObject(o, "runtime");
    cJSON_AddNumberToObject(rt, "startTime", (double)start);
    cJSON_AddNumberToObject(rt, "uptime", (double)(now - start));
    cJSON_AddStringToObject(rt, "vmName", "ctsdb");
    cJSON_AddStringToObject(rt, "vmVendor", "ctsdb");
    cJSON_AddStringToObject(rt, "vmVersion", CTSDB_VERSION);
    unsigned long long vsz = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%llu %llu", &vsz, &rss) != 2)
            vsz = rss = 0;
        fclose(f);
    }
    long page = sysconf(_SC_PAGESIZE);
    cJSON *mem = cJSON_AddObjectToObject(o, "memory");
    cJSON *heap = cJSON_AddObjectToObject(mem, "heapMemoryUsage");
    cJSON_AddNumberToObject(heap, "used", (double)rss * (double)page);
    cJSON_AddNumberToObject(heap, "committed", (double)rss * (double)page);
    cJSON_AddNumberToObject(heap, "max", (double)vsz * (double)page);
    cJSON_AddItemToObject(o, "gc", cJSON_CreateObject());
    cJSON_AddItemToObject(o, "pools", cJSON_CreateObject());
    double load[1] = {-1};
    if (getloadavg(load, 1) != 1)
        load[0] = -1; /* Java's answer when the average is unavailable */
    cJSON *os = cJSON_AddObjectToObject(o, "os");
    cJSON_AddNumberToObject(os, "systemLoadAverage", load[0]);
    cJSON_AddNumberToObject(o, "uptime_ms", (double)(now - start));
    cJSON_AddNumberToObject(o, "worker_threads", workpool_threads(t->pool));
    cJSON_AddNumberToObject(o, "connections", (double)t->nconns);
    return o;
}

void api_stats_sub_handle(struct http_req *r)
{
    const char *sub = http_req_path(r) + strlen("/api/stats/");
    struct tsd *t = http_req_tsd(r);
    cJSON *o = NULL;
    if (!strcmp(sub, "jvm")) {
        o = api_jvm(t);
    } else if (!strcmp(sub, "threads")) {
        o = api_threads();
    } else if (!strcmp(sub, "query")) {
        o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "running", cJSON_CreateArray());
        cJSON_AddItemToObject(o, "completed", cJSON_CreateArray());
    } else if (!strcmp(sub, "region_clients")) {
        o = cJSON_CreateArray();
    } else {
        http_reply_error(r, 404, "Endpoint not found", NULL);
        return;
    }
    http_reply_cjson(r, 200, o);
}

/* ---- storage -------------------------------------------------------------------------------- */

static void api_hex(cJSON *o, const char *name, const uint8_t *p, size_t n)
{
    char *s = malloc(n * 2 + 1);
    if (!s)
        return;
    for (size_t i = 0; i < n; i++)
        snprintf(s + 2 * i, 3, "%02X", p[i]);
    s[2 * n] = '\0';
    cJSON_AddStringToObject(o, name, s);
    free(s);
}

static int api_storage_table(void *arg, const char *name)
{
    void **ctx = arg;
    struct wc_store *s = ctx[0];
    cJSON *tables = ctx[1];
    cJSON *t = cJSON_CreateObject();
    if (!t)
        return 0;
    cJSON_AddStringToObject(t, "name", name);
    struct ct_err err = {0};
    struct wc_table_desc *d = NULL;
    if (wc_table_describe(s, name, &d, &err) == CT_OK) {
        static const char *const bloom[] = {"NONE", "ROW", "ROWCOL"};
        static const char *const comp[] = {"NONE", "SNAPPY", "GZ"};
        cJSON_AddBoolToObject(t, "enabled", d->enabled);
        cJSON *fams = cJSON_AddArrayToObject(t, "families");
        for (size_t i = 0; fams && i < d->nfamilies; i++) {
            const struct wc_family_desc *f = &d->families[i];
            cJSON *fo = cJSON_CreateObject();
            cJSON_AddStringToObject(fo, "name", f->name);
            cJSON_AddNumberToObject(fo, "versions", f->versions);
            cJSON_AddNumberToObject(fo, "min_versions", f->min_versions);
            cJSON_AddNumberToObject(fo, "ttl_s", (double)f->ttl_s);
            cJSON_AddStringToObject(fo, "bloom", f->bloom <= 2 ? bloom[f->bloom] : "?");
            cJSON_AddStringToObject(fo, "compression",
                                    f->compression <= 2 ? comp[f->compression] : "?");
            cJSON_AddNumberToObject(fo, "blocksize", f->blocksize);
            cJSON_AddBoolToObject(fo, "blockcache", f->blockcache);
            cJSON_AddItemToArray(fams, fo);
        }
        wc_table_desc_free(d);
    }
    struct wc_region_info *ri = NULL;
    size_t n = 0;
    if (wc_table_regions(s, name, &ri, &n, &err) == CT_OK) {
        cJSON *regs = cJSON_AddArrayToObject(t, "regions");
        for (size_t i = 0; regs && i < n; i++) {
            cJSON *ro = cJSON_CreateObject();
            cJSON_AddNumberToObject(ro, "id", (double)ri[i].id);
            api_hex(ro, "start_key", ri[i].start_key, ri[i].start_len);
            api_hex(ro, "end_key", ri[i].end_key, ri[i].end_len);
            cJSON_AddNumberToObject(ro, "read_requests", (double)ri[i].read_requests);
            cJSON_AddNumberToObject(ro, "write_requests", (double)ri[i].write_requests);
            cJSON_AddNumberToObject(ro, "memstore_bytes", (double)ri[i].memstore_bytes);
            cJSON_AddNumberToObject(ro, "store_files", (double)ri[i].store_files);
            cJSON_AddNumberToObject(ro, "store_file_bytes", (double)ri[i].store_file_bytes);
            cJSON_AddItemToArray(regs, ro);
        }
        wc_region_info_free(ri, n);
    } else {
        cJSON_AddStringToObject(t, "regions_error", err.msg);
    }
    cJSON_AddItemToArray(tables, t);
    return 0;
}

static void api_storage_work(struct http_req *r, void *arg)
{
    (void)arg;
    struct wc_store *s = tsd_store(http_req_tsd(r));
    cJSON *o = cJSON_CreateObject();
    struct ct_err err = {0};
    struct wc_store_stats st;
    if (wc_store_stats(s, &st, &err) == CT_OK) {
        cJSON *so = cJSON_AddObjectToObject(o, "store");
        cJSON_AddNumberToObject(so, "cache_hits", (double)st.cache_hits);
        cJSON_AddNumberToObject(so, "cache_misses", (double)st.cache_misses);
        uint64_t tot = st.cache_hits + st.cache_misses;
        cJSON_AddNumberToObject(so, "cache_hit_ratio",
                                tot ? (double)st.cache_hits / (double)tot : 0);
        cJSON_AddNumberToObject(so, "cache_bytes", (double)st.cache_bytes);
        cJSON_AddNumberToObject(so, "cache_capacity_bytes", (double)st.cache_capacity_bytes);
        cJSON_AddNumberToObject(so, "flushes", (double)st.flushes);
        cJSON_AddNumberToObject(so, "minor_compactions", (double)st.minor_compactions);
        cJSON_AddNumberToObject(so, "major_compactions", (double)st.major_compactions);
        cJSON_AddNumberToObject(so, "splits", (double)st.splits);
        cJSON_AddNumberToObject(so, "wal_bytes", (double)st.wal_bytes);
        cJSON_AddNumberToObject(so, "wal_syncs", (double)st.wal_syncs);
        cJSON_AddNumberToObject(so, "regions", (double)st.regions);
    } else {
        cJSON_AddStringToObject(o, "store_error", err.msg);
    }
    cJSON *tables = cJSON_AddArrayToObject(o, "tables");
    void *ctx[2] = {s, tables};
    if (tables && wc_table_list(s, api_storage_table, ctx, &err) != CT_OK)
        cJSON_AddStringToObject(o, "tables_error", err.msg);
    http_reply_cjson(r, 200, o);
}

void api_storage_handle(struct http_req *r)
{
    struct ct_err err = {0};
    if (http_req_defer(r, api_storage_work, NULL, &err) != CT_OK)
        http_reply_error(r, 503, "The TSD is overloaded; retry later", err.msg);
}
