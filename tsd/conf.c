/* conf.c - the TSD's key = value configuration (see conf.h).
 *
 * The keys: conf_keys[] below holds the TSD's own; the schema's come from tsdb_config_keys()
 * (schema/tsdb.h), so a schema key's type, default and range are written once, in schema/tsdb.c,
 * and reach the schema through conf_tsdb_config() untouched.
 * Invariants: (1) conf_keys[] is sorted by key (asserted in conf_new) and c->keys is it merged
 * with the schema's table, sorted, without a key twice (asserted); (2) c->values[i] is the
 * current value of c->keys[i], never NULL, and always valid for its type; (3) extra keys (unknown
 * ones that were set) are kept sorted in c->extra so conf_each() walks both lists in one merge.
 * Locking: none; a conf is built by one thread and read-only once published (conf.h). */
#include "tsd/conf.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONF_CORS_HEADERS                                                                          \
    "Authorization, Content-Type, Accept, Origin, User-Agent, DNT, Cache-Control, "                \
    "X-Mx-ReqToken, Keep-Alive, X-Requested-With, If-Modified-Since"

/* The TSD's own keys, sorted (1); the schema's keys (tsdb_config_keys()) join them in conf_new.
 * OpenTSDB 2.4's names where OpenTSDB has the key. A key with owner NULL is one OpenTSDB has and
 * ctsdb accepts with no effect: set away from its default it warns at start
 * (conf_report_unsupported), so a migrated opentsdb.conf still loads but nobody believes a
 * setting took effect. */
static const struct ct_cfg_key conf_keys[] = {
    {"tsd.core.auth.allow", CT_CFG_STR, "", 0, 0, NULL, "tsd/auth.c",
     "addresses and CIDRs (comma list) allowed to write and administer; empty = any (tsd/auth.h)"},
    {"tsd.core.auth.token", CT_CFG_STR, "", 0, 0, NULL, "tsd/auth.c",
     "token writes and admin requests must carry; empty = none (tsd/auth.h)"},
    {"tsd.core.auth.token_file", CT_CFG_STR, "", 0, 0, NULL, "tsd/auth.c",
     "file holding that token (tsd/auth.h)"},
    {"tsd.core.connections.limit", CT_CFG_INT, "0", 0, 10000000, NULL, "tsd/tsd.c",
     "refuse connections beyond this many (0 = no limit)"},
    {"tsd.core.enable_admin", CT_CFG_ENUM, "false", 0, 0, "false|loopback|true", "tsd/auth.c",
     "admin actions: off, from loopback only, or on (tsd/auth.h)"},
    {"tsd.core.enable_api", CT_CFG_BOOL, "true", 0, 0, NULL, "tsd/tsd.c",
     "false: every /api path answers 404"},
    {"tsd.core.enable_ui", CT_CFG_BOOL, "true", 0, 0, NULL, "tsd/tsd.c",
     "false: every path but /api answers 404 (the page)"},
    {"tsd.core.histograms.config", CT_CFG_STR, "", 0, 0, NULL, "tsd/api_histogram.c",
     "histogram codecs as OpenTSDB's JSON map of class to id; only "
     "{\"net.opentsdb.core.SimpleHistogramDecoder\": ID} is known; empty = histograms off (503)"},
    {"tsd.core.memory_limit_bytes", CT_CFG_INT, "0", 0, (int64_t)1 << 50, NULL, "tsd/membudget.c",
     "the TSD's one memory bound (0 = none); the memory settings are derived from it (docs/tsd.md, "
     "Memory limit)"},
    {"tsd.core.meta.enable_realtime_ts", CT_CFG_BOOL, "false", 0, 0, NULL, "tsd/metatrack.c",
     "with enable_tsuid_tracking: a TSMeta for each new series (docs/query.md, Realtime meta)"},
    {"tsd.core.meta.enable_realtime_uid", CT_CFG_BOOL, "false", 0, 0, NULL, "tsd/metatrack.c",
     "a UIDMeta (created now) for each id the TSD assigns"},
    {"tsd.core.meta.enable_tsuid_incrementing", CT_CFG_BOOL, "false", 0, 0, NULL,
     "tsd/metatrack.c",
     "with enable_tsuid_tracking and enable_realtime_ts: each series' counter counts its points"},
    {"tsd.core.meta.enable_tsuid_tracking", CT_CFG_BOOL, "false", 0, 0, NULL, "tsd/metatrack.c",
     "records each written series in tsdb-meta (its counter cell; see the two keys above)"},
    {"tsd.core.plugin_path", CT_CFG_STR, "", 0, 0, NULL, NULL, "(OpenTSDB) no plugins"},
    {"tsd.core.preload_uid_cache", CT_CFG_BOOL, "false", 0, 0, NULL, NULL,
     "(OpenTSDB) the uid cache fills on use"},
    {"tsd.core.socket.timeout", CT_CFG_INT, "0", 0, 86400 * 365, NULL, "tsd/tsd.c",
     "idle seconds before a connection is closed (0 = never)"},
    {"tsd.core.timezone", CT_CFG_STR, "UTC", 0, 0, NULL, NULL, "(OpenTSDB) times are UTC"},
    {"tsd.graphite.default_tag", CT_CFG_STR, "source=graphite", 0, 0, NULL, "tsd/tsd.c",
     "the tag k=v of a Graphite path whose template gives no tag (docs/protocols.md)"},
    {"tsd.graphite.enable", CT_CFG_BOOL, "true", 0, 0, NULL, "tsd/tsd.c",
     "telnet lines `path value timestamp` are Graphite plaintext (docs/protocols.md)"},
    {"tsd.graphite.port", CT_CFG_INT, "-1", -1, 65535, NULL, "tsd/tsd.c",
     "a port taking only Graphite plaintext lines; -1 = none, 0 = any free port "
     "(docs/protocols.md)"},
    {"tsd.graphite.templates", CT_CFG_STR, "", 0, 0, NULL, "tsd/tsd.c",
     "Graphite templates, ';'-separated `[filter ]template[ k=v,...]`; empty = the path is the "
     "metric (docs/protocols.md)"},
    {"tsd.http.cachedir", CT_CFG_STR, "", 0, 0, NULL, NULL, "(OpenTSDB) no gnuplot cache"},
    {"tsd.http.query.allow_delete", CT_CFG_BOOL, "false", 0, 0, NULL, "tsd/api_query.c",
     "allow delete=true in queries"},
    {"tsd.http.query.answer_buffer_bytes", CT_CFG_INT, "268435456", 0, (int64_t)1 << 50, NULL,
     "tsd/membudget.c",
     "bytes of query answers waiting for slow readers, all connections together (derived from "
     "tsd.core.memory_limit_bytes when that is set)"},
    {"tsd.http.request.cors_domains", CT_CFG_STR, "", 0, 0, NULL, "tsd/tsd.c",
     "CORS: comma list of domains (case-insensitive) or * (not both)"},
    {"tsd.http.request.cors_headers", CT_CFG_STR, CONF_CORS_HEADERS, 0, 0, NULL, "tsd/tsd.c",
     "CORS: headers allowed (OpenTSDB's list)"},
    {"tsd.http.request.enable_chunked", CT_CFG_BOOL, "false", 0, 0, NULL, "tsd/tsd.c",
     "accept chunked request bodies"},
    {"tsd.http.request.max_body", CT_CFG_INT, "67108864", 1024, (int64_t)1 << 32, NULL, "tsd/tsd.c",
     "largest request body in bytes, also after gzip decoding (413 beyond)"},
    {"tsd.http.request.max_chunk", CT_CFG_INT, "4096", 1, (int64_t)1 << 32, NULL, "tsd/tsd.c",
     "largest chunked body in bytes (413 beyond)"},
    {"tsd.http.request.max_header", CT_CFG_INT, "16384", 1024, 1048576, NULL, "tsd/tsd.c",
     "largest request head in bytes (431 beyond)"},
    {"tsd.http.response.write_timeout", CT_CFG_INT, "30", 0, 86400, NULL, "tsd/tsd.c",
     "seconds a connection's unsent answer may stay unread before it is closed (0 = never)"},
    {"tsd.http.show_stack_trace", CT_CFG_BOOL, "false", 0, 0, NULL, NULL,
     "(OpenTSDB) errors carry no stack trace"},
    {"tsd.http.staticroot", CT_CFG_STR, "web", 0, 0, NULL, "tsd/tsd.c",
     "the dashboard files served at / (--staticroot)"},
    {"tsd.influx.default_tag", CT_CFG_STR, "source=influx", 0, 0, NULL, "tsd/api_influx.c",
     "the tag k=v of an InfluxDB line without tags (docs/protocols.md)"},
    {"tsd.influx.metric_separator", CT_CFG_STR, ".", 0, 0, NULL, "tsd/api_influx.c",
     "InfluxDB metric = measurement + this + field key (docs/protocols.md)"},
    {"tsd.logging.level", CT_CFG_ENUM, "info", 0, 0, "error|warn|info|debug", "tools/cmd_tsd.c",
     "log level (--log-level)"},
    {"tsd.mode", CT_CFG_ENUM, "rw", 0, 0, "rw|ro|wo", "tsd/tsd.c",
     "ro: telnet put answers an error, /api/put is 404"},
    {"tsd.network.async_io", CT_CFG_BOOL, "true", 0, 0, NULL, NULL,
     "(OpenTSDB) always event-driven"},
    {"tsd.network.backlog", CT_CFG_INT, "3072", 1, 1000000, NULL, "tsd/tsd.c", "listen backlog"},
    {"tsd.network.bind", CT_CFG_STR, "0.0.0.0", 0, 0, NULL, "tsd/tsd.c",
     "address to listen on (--bind)"},
    {"tsd.network.keep_alive", CT_CFG_BOOL, "true", 0, 0, NULL, "tsd/tsd.c",
     "TCP keep-alive on connections"},
    {"tsd.network.port", CT_CFG_INT, "4242", 0, 65535, NULL, "tsd/tsd.c",
     "port for telnet and HTTP, 0 = any free port (--port)"},
    {"tsd.network.reuse_address", CT_CFG_BOOL, "true", 0, 0, NULL, "tsd/tsd.c",
     "SO_REUSEADDR on the listener"},
    {"tsd.network.tcp_no_delay", CT_CFG_BOOL, "true", 0, 0, NULL, "tsd/tsd.c",
     "TCP_NODELAY on connections"},
    {"tsd.network.worker_threads", CT_CFG_INT, "0", 0, 1024, NULL, NULL,
     "(OpenTSDB) one network thread"},
    {"tsd.no_diediedie", CT_CFG_BOOL, "false", 0, 0, NULL, "tsd/tsd.c",
     "refuse the diediedie command"},
    {"tsd.prometheus.default_tag", CT_CFG_STR, "__prom=none", 0, 0, NULL, "tsd/api_prom.c",
     "tag (key=value) of a Prometheus series with no label but __name__; dropped on remote read"},
    {"tsd.prometheus.max_decoded_bytes", CT_CFG_INT, "33554432", 1024, (int64_t)1 << 32, NULL,
     "tsd/api_prom.c", "largest decoded remote write/read body in bytes (413 beyond)"},
    {"tsd.prometheus.read_max_metrics", CT_CFG_INT, "10000", 1, 10000000, NULL, "tsd/api_prom.c",
     "most metrics a remote read query without a __name__ equality matcher may select (400 "
     "beyond)"},
    {"tsd.prometheus.series_cache_bytes", CT_CFG_INT, "4194304", 0, (int64_t)1 << 32, NULL,
     "tsd/api_prom.c",
     "bytes of the remote write series cache (encoded labels -> checked names; 0 = none)"},
    {"tsd.query.allow_simultaneous_duplicates", CT_CFG_BOOL, "true", 0, 0, NULL, NULL,
     "(OpenTSDB) not checked"},
    {"tsd.query.enable_fuzzy_filter", CT_CFG_BOOL, "true", 0, 0, NULL, NULL,
     "(OpenTSDB) ctsdb filters rows on tag ids always"},
    {"tsd.query.filter.expansion_limit", CT_CFG_INT, "4096", 1, 1000000000, NULL, NULL,
     "(OpenTSDB) not limited"},
    {"tsd.query.last.loop_us", CT_CFG_INT, "200", 1, 1000000, NULL, "tsd/tsd.c",
     "wall time (us) a last query may take on the network loop before a worker takes it"},
    {"tsd.query.last.on_loop", CT_CFG_BOOL, "true", 0, 0, NULL, "tsd/tsd.c",
     "try /api/query/last on the network loop first (off with Bigtable)"},
    {"tsd.query.limits.bytes.allow_override", CT_CFG_BOOL, "false", 0, 0, NULL, "tsd/api_limits.c",
     "a query's overrideByteLimit lifts the byte limit for it (OpenTSDB)"},
    {"tsd.query.limits.bytes.default", CT_CFG_INT, "0", 0, (int64_t)1 << 50, NULL,
     "tsd/api_limits.c",
     "most bytes one sub-query may read, at 16 a raw datapoint (0 = no limit; docs/query.md)"},
    {"tsd.query.limits.data_points.allow_override", CT_CFG_BOOL, "false", 0, 0, NULL,
     "tsd/api_limits.c",
     "a query's overrideDataPointLimit lifts the datapoint limit for it (OpenTSDB)"},
    {"tsd.query.limits.data_points.default", CT_CFG_INT, "50000000", 0, (int64_t)1 << 50, NULL,
     "tsd/api_query.c", "most datapoints one query may read (0 = no limit)"},
    {"tsd.query.limits.overrides.config", CT_CFG_STR, "", 0, 0, NULL, "tsd/api_limits.c",
     "JSON file of per-metric limit overrides ([{\"regex\",\"dataPointsLimit\",\"byteLimit\"}]; "
     "docs/query.md)"},
    {"tsd.query.limits.overrides.interval", CT_CFG_INT, "0", 0, 86400 * 365, NULL,
     "tsd/api_limits.c", "seconds between reads of the overrides file (0 = read once at start)"},
    {"tsd.query.loop_us", CT_CFG_INT, "300", 1, 1000000, NULL, "tsd/tsd.c",
     "wall time (us) a small /api/query may take on the network loop before a worker takes it"},
    {"tsd.query.on_loop", CT_CFG_BOOL, "true", 0, 0, NULL, "tsd/tsd.c",
     "try small /api/query range queries on the network loop first (off with Bigtable)"},
    {"tsd.query.scan_threads", CT_CFG_INT, "0", 0, 64, NULL, "tsd/api_query.c",
     "threads one /api/query scans with (0 = min(CPUs, 4); docs/query.md)"},
    {"tsd.query.skip_unresolved_tagvs", CT_CFG_BOOL, "false", 0, 0, NULL, "tsd/api_query.c",
     "a literal tag value with no UID is left out of its filter instead of failing the query"},
    {"tsd.query.tag_index", CT_CFG_INT, "128", 0, 1 << 22, NULL, "tsd/api_query.c",
     "use the tag index when the series it picks x hours are at most this (0 = never; "
     "docs/query.md)"},
    {"tsd.query.threads", CT_CFG_INT, "0", 0, 1024, NULL, "tsd/tsd.c",
     "worker threads for slow requests (0 = CPUs)"},
    {"tsd.query.timeout", CT_CFG_INT, "0", 0, (int64_t)1 << 40, NULL, "tsd/api_query.c",
     "query time limit in ms (0 = none)"},
    {"tsd.rollups.config", CT_CFG_STR, "", 0, 0, NULL, NULL,
     "(OpenTSDB) rollup intervals file: ctsdb's intervals are fixed (1h and 1d tables)"},
    {"tsd.rollups.ctsdb.compute", CT_CFG_BOOL, "true", 0, 0, NULL, "tsd/api_rollup.c",
     "with rollups enabled, the TSD computes the 1h and 1d rollups of closed hours itself"},
    {"tsd.rollups.ctsdb.grace", CT_CFG_INT, "600", 0, 604800, NULL, "tsd/api_rollup.c",
     "seconds after an hour's end before it is rolled up (later points miss the rollup)"},
    {"tsd.rollups.ctsdb.period", CT_CFG_INT, "60", 1, 86400, NULL, "tsd/api_rollup.c",
     "seconds between two runs of the rollup job"},
    {"tsd.rollups.ctsdb.table_1d", CT_CFG_STR, "tsdb-rollup-1d", 0, 0, NULL, "tsd/api_rollup.c",
     "the daily rollup table (rows span a UTC month)"},
    {"tsd.rollups.ctsdb.table_1h", CT_CFG_STR, "tsdb-rollup-1h", 0, 0, NULL, "tsd/api_rollup.c",
     "the hourly rollup table (rows span a UTC day)"},
    {"tsd.rollups.ctsdb.ttl_1d", CT_CFG_INT, "0", 0, (int64_t)1 << 40, NULL, "tsd/api_rollup.c",
     "TTL in seconds of the daily rollup table when created (0 = forever)"},
    {"tsd.rollups.ctsdb.ttl_1h", CT_CFG_INT, "0", 0, (int64_t)1 << 40, NULL, "tsd/api_rollup.c",
     "TTL in seconds of the hourly rollup table when created (0 = forever)"},
    {"tsd.rollups.enable", CT_CFG_BOOL, "false", 0, 0, NULL, "tsd/api_rollup.c",
     "rollup tables: /api/rollup, the rollup job, queries reading rollups"},
    {"tsd.rpc.telnet.return_errors", CT_CFG_BOOL, "true", 0, 0, NULL, "tsd/tsd.c",
     "send telnet error lines"},
    {"tsd.stats.canonical", CT_CFG_BOOL, "false", 0, 0, NULL, NULL,
     "(OpenTSDB) host tag is the short name"},
    {"tsd.storage.backend", CT_CFG_ENUM, "embedded", 0, 0, "embedded|bigtable", "tsd/store.c",
     "the store: the embedded engine or Bigtable"},
    {"tsd.storage.bigtable.admin_endpoint", CT_CFG_STR, "", 0, 0, NULL, "tsd/store.c",
     "Bigtable admin endpoint (empty: the service's)"},
    {"tsd.storage.bigtable.credentials", CT_CFG_STR, "", 0, 0, NULL, "tsd/store.c",
     "Bigtable credentials file (empty: the default)"},
    {"tsd.storage.bigtable.data_endpoint", CT_CFG_STR, "", 0, 0, NULL, "tsd/store.c",
     "Bigtable data endpoint (empty: the service's or BIGTABLE_EMULATOR_HOST)"},
    {"tsd.storage.bigtable.deadline_ms", CT_CFG_INT, "30000", 1, 86400000, NULL, "tsd/store.c",
     "deadline of one Bigtable call"},
    {"tsd.storage.bigtable.instance", CT_CFG_STR, "", 0, 0, NULL, "tsd/store.c",
     "Bigtable instance"},
    {"tsd.storage.bigtable.project", CT_CFG_STR, "", 0, 0, NULL, "tsd/store.c", "Bigtable project"},
    {"tsd.storage.block_cache_bytes", CT_CFG_INT, "67108864", 0, (int64_t)1 << 40, NULL,
     "tsd/store.c", "the engine's block cache"},
    {"tsd.storage.directory", CT_CFG_STR, "./data", 0, 0, NULL, "tsd/store.c",
     "the embedded store's directory (--data)"},
    {"tsd.storage.enable_appends", CT_CFG_BOOL, "false", 0, 0, NULL, NULL,
     "(OpenTSDB) appends are read, never written"},
    {"tsd.storage.flush_interval", CT_CFG_INT, "1000", 0, 3600000, NULL, NULL,
     "(OpenTSDB) the store flushes by size"},
    {"tsd.storage.hbase.tree_table", CT_CFG_STR, "tsdb-tree", 0, 0, NULL, NULL,
     "(OpenTSDB) no trees"},
    {"tsd.storage.hbase.zk_basedir", CT_CFG_STR, "/hbase", 0, 0, NULL, NULL,
     "(OpenTSDB) no ZooKeeper"},
    {"tsd.storage.hbase.zk_quorum", CT_CFG_STR, "localhost", 0, 0, NULL, NULL,
     "(OpenTSDB) no ZooKeeper"},
    {"tsd.storage.head.backfill_idle_ms", CT_CFG_INT, "5000", 0, 86400000, NULL, "tsd/store.c",
     "the head takes backfilled points of closed hours too and hands each such series-hour off "
     "as one cell when its series needs room for a newer hour, when it has not grown for this "
     "many ms, under memory pressure or at a clean stop (0 = off: they go as single cells; "
     "docs/head.md)"},
    {"tsd.storage.head.enable", CT_CFG_BOOL, "true", 0, 0, NULL, "tsd/store.c",
     "keep each series' open hours in the in-memory head (log in <directory>/head), read with "
     "the stored rows, and write one cell per series-hour at hand-off (docs/head.md); on "
     "Bigtable only when set (TSDs sharing a store do not see each other's heads)"},
    {"tsd.storage.head.max_bytes", CT_CFG_INT, "0", 0, (int64_t)1 << 50, NULL, "tsd/membudget.c",
     "bytes the ingest head may hold: past them points of series it does not hold are refused "
     "(0 = no bound; derived from tsd.core.memory_limit_bytes when that is set)"},
    {"tsd.storage.memstore_flush_bytes", CT_CFG_INT, "16777216", 65536, (int64_t)1 << 40, NULL,
     "tsd/store.c", "a region's memstores are flushed at this size; writes to it wait at 4x"},
    {"tsd.storage.memstore_total_bytes", CT_CFG_INT, "67108864", 0, (int64_t)1 << 50, NULL,
     "tsd/store.c",
     "all memstores together: past it the largest are flushed and writes wait (0 = max(4 x flush "
     "size, 256 MiB), flush only; derived from tsd.core.memory_limit_bytes when that is set)"},
    {"tsd.storage.quarantine_damaged", CT_CFG_BOOL, "false", 0, 0, NULL, "tsd/store.c",
     "open a store with damaged files by setting them aside (wc_options)"},
    {"tsd.storage.quiet_flush_ms", CT_CFG_INT, "30000", 0, (int64_t)1 << 40, NULL, "tsd/store.c",
     "a region without a write for this long is flushed, so the write-ahead log is released "
     "while the TSD runs (0 = only by size, log length and hourly; wc_options.quiet_flush_ms)"},
    {"tsd.storage.region_split_bytes", CT_CFG_INT, "1073741824", 65536, (int64_t)1 << 50, NULL,
     "tsd/store.c", "a region splits at this size"},
    {"tsd.storage.series_cache_bytes", CT_CFG_INT, "0", 0, (int64_t)1 << 40, NULL, "tsd/store.c",
     "each write thread's series cache (series -> TSUID), slots and entries (0 = 2097152 series)"},
    {"tsd.storage.wal.durability", CT_CFG_ENUM, "sync", 0, 0, "async|sync|fsync", "tsd/store.c",
     "async; sync: in the log before the ack; fsync: on disk before the ack"},
    {"tsd.storage.write_threads", CT_CFG_INT, "1", 1, 64, NULL, "tsd/tsd.c",
     "threads writing batches to the store"},
};
#define CONF_NKEYS (sizeof(conf_keys) / sizeof(conf_keys[0]))

struct conf_extra {
    char *key;
    char *value;
};

struct conf {
    const struct ct_cfg_key **keys; /* conf_keys[] and the schema's, merged by key (1) */
    size_t nkeys;
    char **values;            /* (2) */
    bool *set;                /* given to conf_set (file, command line or code) */
    struct conf_extra *extra; /* (3) */
    size_t nextra, capextra;
};

static int conf_key_index(const struct conf *c, const char *key)
{
    size_t lo = 0, hi = c->nkeys;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int r = strcmp(key, c->keys[mid]->key);
        if (r == 0)
            return (int)mid;
        if (r < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return -1;
}

/* Merges the two sorted tables into c->keys; false if a key is in both (a schema key that
 * conf_keys[] declares again: the bug this layout exists to rule out). */
static bool conf_merge_keys(struct conf *c)
{
    size_t ns = 0;
    const struct ct_cfg_key *sk = tsdb_config_keys(&ns);
    size_t i = 0, j = 0;
    c->nkeys = 0;
    while (i < CONF_NKEYS || j < ns) {
        if (i < CONF_NKEYS && j < ns && !strcmp(conf_keys[i].key, sk[j].key))
            return false;
        if (j >= ns || (i < CONF_NKEYS && strcmp(conf_keys[i].key, sk[j].key) < 0))
            c->keys[c->nkeys++] = &conf_keys[i++];
        else
            c->keys[c->nkeys++] = &sk[j++];
    }
    return true;
}

int conf_new(struct conf **out, struct ct_err *err)
{
    assert(ct_cfg_sorted(conf_keys, CONF_NKEYS));
    size_t ns = 0;
    (void)tsdb_config_keys(&ns);
    size_t n = CONF_NKEYS + ns;
    struct conf *c = calloc(1, sizeof(*c));
    if (!c)
        return ct_err_set(err, CT_ENOMEM, "out of memory allocating the configuration");
    c->keys = calloc(n, sizeof(*c->keys));
    c->values = calloc(n, sizeof(*c->values));
    c->set = calloc(n, sizeof(*c->set));
    if (!c->keys || !c->values || !c->set) {
        conf_free(c);
        return ct_err_set(err, CT_ENOMEM, "out of memory allocating the configuration");
    }
    bool merged = conf_merge_keys(c);
    assert(merged);
    (void)merged;
    for (size_t i = 0; i < c->nkeys; i++) {
        c->values[i] = strdup(c->keys[i]->def);
        if (!c->values[i]) {
            conf_free(c);
            return ct_err_set(err, CT_ENOMEM, "out of memory allocating the configuration");
        }
    }
    *out = c;
    return CT_OK;
}

void conf_free(struct conf *c)
{
    if (!c)
        return;
    for (size_t i = 0; c->values && i < c->nkeys; i++)
        free(c->values[i]);
    for (size_t i = 0; i < c->nextra; i++) {
        free(c->extra[i].key);
        free(c->extra[i].value);
    }
    free(c->extra);
    free(c->keys);
    free(c->values);
    free(c->set);
    free(c);
}

static int conf_set_extra(struct conf *c, const char *key, const char *value, struct ct_err *err)
{
    size_t i = 0;
    while (i < c->nextra && strcmp(c->extra[i].key, key) < 0)
        i++;
    char *v = strdup(value);
    if (!v)
        return ct_err_set(err, CT_ENOMEM, "out of memory setting %s", key);
    if (i < c->nextra && !strcmp(c->extra[i].key, key)) {
        free(c->extra[i].value);
        c->extra[i].value = v;
        return CT_OK;
    }
    if (c->nextra == c->capextra) {
        size_t ncap = c->capextra ? c->capextra * 2 : 8;
        struct conf_extra *n = realloc(c->extra, ncap * sizeof(*n));
        if (!n) {
            free(v);
            return ct_err_set(err, CT_ENOMEM, "out of memory setting %s", key);
        }
        c->extra = n;
        c->capextra = ncap;
    }
    char *k = strdup(key);
    if (!k) {
        free(v);
        return ct_err_set(err, CT_ENOMEM, "out of memory setting %s", key);
    }
    memmove(&c->extra[i + 1], &c->extra[i], (c->nextra - i) * sizeof(c->extra[0]));
    c->extra[i].key = k;
    c->extra[i].value = v;
    c->nextra++;
    return CT_OK;
}

int conf_set(struct conf *c, const char *key, const char *value, bool *unknown, struct ct_err *err)
{
    if (unknown)
        *unknown = false;
    if (*key == '\0')
        return ct_err_set(err, CT_EINVAL, "empty configuration key");
    int i = conf_key_index(c, key);
    if (i < 0) {
        if (unknown)
            *unknown = true;
        return conf_set_extra(c, key, value, err);
    }
    int rc = ct_cfg_check(c->keys[i], value, err);
    if (rc != CT_OK)
        return rc;
    char *v = strdup(value);
    if (!v)
        return ct_err_set(err, CT_ENOMEM, "out of memory setting %s", key);
    free(c->values[i]);
    c->values[i] = v;
    c->set[i] = true;
    return CT_OK;
}

bool conf_is_set(const struct conf *c, const char *key)
{
    int i = conf_key_index(c, key);
    assert(i >= 0);
    return c->set[i];
}

const char *conf_get(const struct conf *c, const char *key)
{
    int i = conf_key_index(c, key);
    if (i >= 0)
        return c->values[i];
    for (size_t j = 0; j < c->nextra; j++)
        if (!strcmp(c->extra[j].key, key))
            return c->extra[j].value;
    return NULL;
}

int64_t conf_get_int(const struct conf *c, const char *key)
{
    int i = conf_key_index(c, key);
    assert(i >= 0 && c->keys[i]->type == CT_CFG_INT);
    int64_t x = 0;
    if (ct_cfg_parse_int(c->values[i], &x) != 0)
        assert(!"validated integer does not parse");
    return x;
}

bool conf_get_bool(const struct conf *c, const char *key)
{
    int i = conf_key_index(c, key);
    assert(i >= 0 && c->keys[i]->type == CT_CFG_BOOL);
    bool b = false;
    if (ct_cfg_parse_bool(c->values[i], &b) != 0)
        assert(!"validated boolean does not parse");
    return b;
}

const char *conf_get_str(const struct conf *c, const char *key)
{
    int i = conf_key_index(c, key);
    assert(i >= 0 && (c->keys[i]->type == CT_CFG_STR || c->keys[i]->type == CT_CFG_ENUM));
    return c->values[i];
}

void conf_report_unsupported(const struct conf *c, conf_warn_fn warn, void *arg)
{
    for (size_t i = 0; i < c->nkeys; i++) {
        const struct ct_cfg_key *k = c->keys[i];
        if (k->owner)
            continue;
        bool changed = k->type == CT_CFG_BOOL ? conf_get_bool(c, k->key) != !strcmp(k->def, "true")
                                              : strcmp(c->values[i], k->def) != 0;
        if (!changed)
            continue;
        char msg[512];
        snprintf(msg, sizeof(msg), "%s=%s is not supported by ctsdb (accepted, no effect)", k->key,
                 c->values[i]);
        warn(arg, msg);
    }
}

int conf_each_key(const struct conf *c, conf_key_fn fn, void *arg)
{
    for (size_t i = 0; i < c->nkeys; i++) {
        int rc = fn(arg, c->keys[i]);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int conf_tsdb_config(const struct conf *c, struct tsdb_config *tc, struct ct_err *err)
{
    tsdb_config_init(tc);
    size_t ns = 0;
    const struct ct_cfg_key *sk = tsdb_config_keys(&ns);
    for (size_t j = 0; j < ns; j++) {
        int i = conf_key_index(c, sk[j].key);
        assert(i >= 0);
        /* keys left at their default stay unset, so that tsdb_open() can tell a layout the
         * config asks for from the default (a store keeps the layout it was created with) */
        if (!c->set[i])
            continue;
        int rc = tsdb_config_set(tc, sk[j].key, c->values[i], err);
        if (rc != CT_OK)
            return rc == CT_NOTFOUND
                       ? ct_err_set(err, CT_EINVAL, "%s is not a schema key", sk[j].key)
                       : rc;
    }
    return CT_OK;
}

int conf_each(const struct conf *c, conf_each_fn fn, void *arg)
{
    size_t i = 0, j = 0;
    while (i < c->nkeys || j < c->nextra) {
        int rc;
        if (j >= c->nextra || (i < c->nkeys && strcmp(c->keys[i]->key, c->extra[j].key) < 0)) {
            rc = fn(arg, c->keys[i]->key, c->values[i]);
            i++;
        } else {
            rc = fn(arg, c->extra[j].key, c->extra[j].value);
            j++;
        }
        if (rc != 0)
            return rc;
    }
    return 0;
}

static char *conf_trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

int conf_load_file(struct conf *c, const char *path, conf_warn_fn warn, void *arg,
                   struct ct_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return ct_err_errno(err, CT_EIO, errno, "cannot open config file %s", path);
    char line[4096];
    int lineno = 0;
    int rc = CT_OK;
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        size_t n = strlen(line);
        if (n == sizeof(line) - 1 && line[n - 1] != '\n') {
            rc = ct_err_set(err, CT_EINVAL, "%s:%d: line longer than %zu bytes", path, lineno,
                            sizeof(line) - 2);
            break;
        }
        char *s = conf_trim(line);
        if (*s == '\0' || *s == '#' || *s == '!')
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            rc = ct_err_set(err, CT_EINVAL, "%s:%d: expected key = value, got '%s'", path, lineno,
                            s);
            break;
        }
        *eq = '\0';
        char *key = conf_trim(s);
        char *value = conf_trim(eq + 1);
        bool unknown = false;
        rc = conf_set(c, key, value, &unknown, err);
        if (rc != CT_OK) {
            ct_err_prefix(err, "%s:%d", path, lineno);
            break;
        }
        if (unknown && warn) {
            char msg[512];
            snprintf(msg, sizeof(msg), "%s:%d: unknown configuration key %s (kept, unused)", path,
                     lineno, key);
            warn(arg, msg);
        }
    }
    if (rc == CT_OK && ferror(f))
        rc = ct_err_errno(err, CT_EIO, errno, "cannot read config file %s", path);
    fclose(f);
    return rc;
}

/* The key a `--KEY=VALUE` argument names (copied into buf), or NULL if a is not one: KEY must
 * hold a '.', which no subcommand's own option does. */
static const char *conf_arg_key(const char *a, char *buf, size_t cap, const char **value)
{
    if (strncmp(a, "--", 2) != 0)
        return NULL;
    const char *eq = strchr(a + 2, '=');
    if (!eq)
        return NULL;
    size_t kl = (size_t)(eq - (a + 2));
    if (kl == 0 || kl >= cap || !memchr(a + 2, '.', kl))
        return NULL;
    memcpy(buf, a + 2, kl);
    buf[kl] = '\0';
    *value = eq + 1;
    return buf;
}

/* conf_set() and the unknown-key warning of a command-line setting. */
static int conf_set_arg(struct conf *c, const char *key, const char *value, conf_warn_fn warn,
                        void *warn_arg, struct ct_err *err)
{
    bool unknown = false;
    int rc = conf_set(c, key, value, &unknown, err);
    if (rc != CT_OK)
        return rc;
    if (unknown && warn) {
        char msg[512];
        snprintf(msg, sizeof(msg), "unknown configuration key %s (kept, unused)", key);
        warn(warn_arg, msg);
    }
    return CT_OK;
}

/* If argv[*i] is `--name VALUE` or `--name=VALUE`, returns the value (moving *i past it), else
 * NULL; *missing is set when the value is absent. */
static const char *conf_arg_value(int argc, char **argv, int *i, const char *name, bool *missing)
{
    const char *a = argv[*i];
    size_t l = strlen(name);
    if (strncmp(a, name, l) != 0)
        return NULL;
    if (a[l] == '=')
        return a + l + 1;
    if (a[l] != '\0')
        return NULL;
    if (*i + 1 >= argc) {
        *missing = true;
        return NULL;
    }
    return argv[++*i];
}

/* The TSD's shorthands for keys (conf_apply_argv only). */
static const struct {
    const char *opt, *key;
} conf_aliases[] = {{"--port", "tsd.network.port"},
                    {"--bind", "tsd.network.bind"},
                    {"--staticroot", "tsd.http.staticroot"},
                    {"--log-level", "tsd.logging.level"}};

/* conf_take_argv(), also taking the TSD's shorthands when `aliases`, all in one pass so that
 * the later of two settings of a key wins whatever their spelling. */
static int conf_take(struct conf *c, int *argc, char **argv, bool aliases, conf_warn_fn warn,
                     void *warn_arg, struct ct_err *err)
{
    int n = *argc, rc;
    bool missing = false;
    for (int i = 1; i < n && strcmp(argv[i], "--") != 0; i++) {
        const char *file = conf_arg_value(n, argv, &i, "--config", &missing);
        if (missing)
            return ct_err_set(err, CT_EINVAL, "--config needs a file name");
        if (file && (rc = conf_load_file(c, file, warn, warn_arg, err)) != CT_OK)
            return rc;
    }
    int out = 1, i = 1;
    for (; i < n && strcmp(argv[i], "--") != 0; i++) {
        const char *a = argv[i], *v;
        char keybuf[256];
        const char *key;
        if (conf_arg_value(n, argv, &i, "--config", &missing))
            continue;
        if ((v = conf_arg_value(n, argv, &i, "--data", &missing)) != NULL) {
            if ((rc = conf_set_arg(c, "tsd.storage.directory", v, warn, warn_arg, err)) != CT_OK)
                return rc;
            continue;
        }
        key = NULL;
        for (size_t k = 0; aliases && k < sizeof(conf_aliases) / sizeof(conf_aliases[0]) && !key;
             k++)
            if ((v = conf_arg_value(n, argv, &i, conf_aliases[k].opt, &missing)) != NULL)
                key = conf_aliases[k].key;
        if (key) {
            if ((rc = conf_set_arg(c, key, v, warn, warn_arg, err)) != CT_OK)
                return rc;
            continue;
        }
        if ((v = conf_arg_value(n, argv, &i, "--set", &missing)) != NULL) {
            const char *eq = strchr(v, '=');
            size_t kl = eq ? (size_t)(eq - v) : 0;
            if (kl == 0 || kl >= sizeof(keybuf))
                return ct_err_set(err, CT_EINVAL, "--set needs KEY=VALUE, got '%s'", v);
            memcpy(keybuf, v, kl);
            keybuf[kl] = '\0';
            if ((rc = conf_set_arg(c, keybuf, eq + 1, warn, warn_arg, err)) != CT_OK)
                return rc;
            continue;
        }
        if (missing)
            return ct_err_set(err, CT_EINVAL, "%s needs a value", a);
        if ((key = conf_arg_key(a, keybuf, sizeof(keybuf), &v)) != NULL) {
            if ((rc = conf_set_arg(c, key, v, warn, warn_arg, err)) != CT_OK)
                return rc;
            continue;
        }
        argv[out++] = argv[i];
    }
    for (; i < n; i++)
        argv[out++] = argv[i];
    argv[out] = NULL;
    *argc = out;
    return CT_OK;
}

int conf_take_argv(struct conf *c, int *argc, char **argv, conf_warn_fn warn, void *warn_arg,
                   struct ct_err *err)
{
    return conf_take(c, argc, argv, false, warn, warn_arg, err);
}

int conf_apply_argv(struct conf *c, int argc, char **argv, int *operands, int max_operands,
                    int *noperands, bool *help, conf_warn_fn warn, void *warn_arg,
                    struct ct_err *err)
{
    *noperands = 0;
    *help = false;
    char **rest = calloc((size_t)argc + 1, sizeof(*rest));
    if (!rest)
        return ct_err_set(err, CT_ENOMEM, "out of memory parsing the command line");
    memcpy(rest, argv, (size_t)argc * sizeof(*rest));
    int nrest = argc, rc = conf_take(c, &nrest, rest, true, warn, warn_arg, err);
    int orig = 1; /* rest[] keeps argv's order: its operands' indexes are found walking argv */
    bool ended = false;
    for (int i = 1; rc == CT_OK && i < nrest; i++) {
        const char *a = rest[i];
        if (!ended && !strcmp(a, "--")) {
            ended = true;
            continue;
        }
        if (!ended && (!strcmp(a, "--help") || !strcmp(a, "-h"))) {
            *help = true;
            break;
        }
        if (ended || strncmp(a, "--", 2) != 0 || a[2] == '\0') {
            while (argv[orig] != a)
                orig++;
            if (*noperands >= max_operands) {
                rc = ct_err_set(err, CT_EINVAL, "unexpected argument '%s'", a);
                break;
            }
            operands[(*noperands)++] = orig;
            continue;
        }
        /* --name=value without a dot: an unknown key, kept (OpenTSDB's tools) */
        char keybuf[256];
        const char *eq = strchr(a, '=');
        size_t kl = eq ? (size_t)(eq - (a + 2)) : 0;
        if (!eq || kl == 0 || kl >= sizeof(keybuf)) {
            rc = ct_err_set(err, CT_EINVAL, "unknown option '%s'", a);
            break;
        }
        memcpy(keybuf, a + 2, kl);
        keybuf[kl] = '\0';
        rc = conf_set_arg(c, keybuf, eq + 1, warn, warn_arg, err);
    }
    free(rest);
    return rc;
}
