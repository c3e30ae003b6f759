/* conf.c - the TSD's key = value configuration (see conf.h).
 *
 * Invariants: (1) conf_keys[] is sorted by key (checked by conf_new in debug builds through
 * conf_table_sorted()); (2) c->values[i] is the current value of conf_keys[i], never NULL, and
 * always valid for its type; (3) extra keys (unknown ones that were set) are kept sorted in
 * c->extra so conf_each() walks both lists in one merge.
 * Locking: none; a conf is built by one thread and read-only once published (conf.h). */
#include "tsd/conf.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum conf_type {
    CONF_STR = 0,
    CONF_INT = 1,
    CONF_BOOL = 2,
    CONF_ENUM = 3, /* one of a '|'-separated list held in `choices` */
};

struct conf_key {
    const char *key;
    enum conf_type type;
    const char *def;
    int64_t min, max;    /* CONF_INT only */
    const char *choices; /* CONF_ENUM only */
};

/* Every key this build knows, sorted (1). OpenTSDB 2.4's names; ctsdb's own keys are marked in
 * docs/tsd.md. Keys OpenTSDB has but ctsdb ignores are listed too (conf_unsupported). */
static const struct conf_key conf_keys[] = {
    {"tsd.core.auth.allow", CONF_STR, "", 0, 0, NULL},      /* tsd/auth.h */
    {"tsd.core.auth.token", CONF_STR, "", 0, 0, NULL},      /* tsd/auth.h */
    {"tsd.core.auth.token_file", CONF_STR, "", 0, 0, NULL}, /* tsd/auth.h */
    {"tsd.core.auto_create_metrics", CONF_BOOL, "true", 0, 0, NULL},
    {"tsd.core.auto_create_tagks", CONF_BOOL, "true", 0, 0, NULL},
    {"tsd.core.auto_create_tagvs", CONF_BOOL, "true", 0, 0, NULL},
    {"tsd.core.connections.limit", CONF_INT, "0", 0, 10000000, NULL},
    {"tsd.core.enable_admin", CONF_ENUM, "false", 0, 0, "false|loopback|true"}, /* auth.h */
    {"tsd.core.enable_api", CONF_BOOL, "true", 0, 0, NULL},
    {"tsd.core.enable_ui", CONF_BOOL, "true", 0, 0, NULL},
    {"tsd.core.memory_limit_bytes", CONF_INT, "0", 0, (int64_t)1 << 50, NULL}, /* membudget.h */
    {"tsd.core.meta.enable_realtime_ts", CONF_BOOL, "false", 0, 0, NULL},
    {"tsd.core.meta.enable_realtime_uid", CONF_BOOL, "false", 0, 0, NULL},
    {"tsd.core.meta.enable_tsuid_incrementing", CONF_BOOL, "false", 0, 0, NULL},
    {"tsd.core.meta.enable_tsuid_tracking", CONF_BOOL, "false", 0, 0, NULL},
    {"tsd.core.plugin_path", CONF_STR, "", 0, 0, NULL},
    {"tsd.core.preload_uid_cache", CONF_BOOL, "false", 0, 0, NULL},
    {"tsd.core.socket.timeout", CONF_INT, "0", 0, 86400 * 365, NULL},
    {"tsd.core.tag.allow_specialchars", CONF_STR, "", 0, 0, NULL},
    {"tsd.core.timezone", CONF_STR, "UTC", 0, 0, NULL},
    {"tsd.core.uid.random_metrics", CONF_BOOL, "false", 0, 0, NULL},
    {"tsd.http.cachedir", CONF_STR, "", 0, 0, NULL},
    {"tsd.http.query.allow_delete", CONF_BOOL, "false", 0, 0, NULL},
    {"tsd.http.query.answer_buffer_bytes", CONF_INT, "268435456", 0, (int64_t)1 << 50,
     NULL}, /* membudget.h */
    {"tsd.http.request.cors_domains", CONF_STR, "", 0, 0, NULL},
    {"tsd.http.request.cors_headers", CONF_STR,
     "Authorization, Content-Type, Accept, Origin, User-Agent, DNT, Cache-Control, "
     "X-Mx-ReqToken, Keep-Alive, X-Requested-With, If-Modified-Since",
     0, 0, NULL},
    {"tsd.http.request.enable_chunked", CONF_BOOL, "false", 0, 0, NULL},
    {"tsd.http.request.max_body", CONF_INT, "67108864", 1024, (int64_t)1 << 32, NULL},
    {"tsd.http.request.max_chunk", CONF_INT, "4096", 1, (int64_t)1 << 32, NULL},
    {"tsd.http.request.max_header", CONF_INT, "16384", 1024, 1048576, NULL},
    {"tsd.http.response.write_timeout", CONF_INT, "30", 0, 86400, NULL}, /* http_conn.c */
    {"tsd.http.show_stack_trace", CONF_BOOL, "false", 0, 0, NULL},
    {"tsd.http.staticroot", CONF_STR, "web", 0, 0, NULL},
    {"tsd.logging.level", CONF_ENUM, "info", 0, 0, "error|warn|info|debug"},
    {"tsd.mode", CONF_ENUM, "rw", 0, 0, "rw|ro|wo"},
    {"tsd.network.async_io", CONF_BOOL, "true", 0, 0, NULL},
    {"tsd.network.backlog", CONF_INT, "3072", 1, 1000000, NULL},
    {"tsd.network.bind", CONF_STR, "0.0.0.0", 0, 0, NULL},
    {"tsd.network.keep_alive", CONF_BOOL, "true", 0, 0, NULL},
    {"tsd.network.port", CONF_INT, "4242", 0, 65535, NULL},
    {"tsd.network.reuse_address", CONF_BOOL, "true", 0, 0, NULL},
    {"tsd.network.tcp_no_delay", CONF_BOOL, "true", 0, 0, NULL},
    {"tsd.network.worker_threads", CONF_INT, "0", 0, 1024, NULL},
    {"tsd.no_diediedie", CONF_BOOL, "false", 0, 0, NULL},
    {"tsd.query.allow_simultaneous_duplicates", CONF_BOOL, "true", 0, 0, NULL},
    {"tsd.query.enable_fuzzy_filter", CONF_BOOL, "true", 0, 0, NULL},
    {"tsd.query.filter.expansion_limit", CONF_INT, "4096", 1, 1000000000, NULL},
    {"tsd.query.last.loop_us", CONF_INT, "200", 1, 1000000, NULL},
    {"tsd.query.last.on_loop", CONF_BOOL, "true", 0, 0, NULL},
    {"tsd.query.limits.data_points.default", CONF_INT, "50000000", 0, (int64_t)1 << 50, NULL},
    {"tsd.query.scan_threads", CONF_INT, "0", 0, 64, NULL},
    {"tsd.query.skip_unresolved_tagvs", CONF_BOOL, "false", 0, 0, NULL},
    {"tsd.query.threads", CONF_INT, "0", 0, 1024, NULL},
    {"tsd.query.timeout", CONF_INT, "0", 0, (int64_t)1 << 40, NULL},
    {"tsd.rpc.telnet.return_errors", CONF_BOOL, "true", 0, 0, NULL},
    {"tsd.stats.canonical", CONF_BOOL, "false", 0, 0, NULL},
    {"tsd.storage.backend", CONF_ENUM, "embedded", 0, 0, "embedded|bigtable"},
    {"tsd.storage.bigtable.admin_endpoint", CONF_STR, "", 0, 0, NULL},
    {"tsd.storage.bigtable.credentials", CONF_STR, "", 0, 0, NULL},
    {"tsd.storage.bigtable.data_endpoint", CONF_STR, "", 0, 0, NULL},
    {"tsd.storage.bigtable.deadline_ms", CONF_INT, "30000", 1, 86400000, NULL},
    {"tsd.storage.bigtable.instance", CONF_STR, "", 0, 0, NULL},
    {"tsd.storage.bigtable.project", CONF_STR, "", 0, 0, NULL},
    {"tsd.storage.block_cache_bytes", CONF_INT, "67108864", 0, (int64_t)1 << 40, NULL},
    {"tsd.storage.directory", CONF_STR, "./data", 0, 0, NULL},
    {"tsd.storage.enable_appends", CONF_BOOL, "false", 0, 0, NULL},
    {"tsd.storage.enable_compaction", CONF_BOOL, "true", 0, 0, NULL},
    {"tsd.storage.fix_duplicates", CONF_BOOL, "false", 0, 0, NULL},
    {"tsd.storage.flush_interval", CONF_INT, "1000", 0, 3600000, NULL},
    {"tsd.storage.hbase.data_table", CONF_STR, "tsdb", 0, 0, NULL},
    {"tsd.storage.hbase.meta_table", CONF_STR, "tsdb-meta", 0, 0, NULL},
    {"tsd.storage.hbase.tree_table", CONF_STR, "tsdb-tree", 0, 0, NULL},
    {"tsd.storage.hbase.uid_table", CONF_STR, "tsdb-uid", 0, 0, NULL},
    {"tsd.storage.hbase.zk_basedir", CONF_STR, "/hbase", 0, 0, NULL},
    {"tsd.storage.hbase.zk_quorum", CONF_STR, "localhost", 0, 0, NULL},
    {"tsd.storage.max_tags", CONF_INT, "8", 1, 64, NULL},
    {"tsd.storage.memstore_flush_bytes", CONF_INT, "16777216", 65536, (int64_t)1 << 40, NULL},
    {"tsd.storage.memstore_total_bytes", CONF_INT, "0", 0, (int64_t)1 << 50, NULL},
    {"tsd.storage.quarantine_damaged", CONF_BOOL, "false", 0, 0, NULL}, /* wc_options */
    {"tsd.storage.region_split_bytes", CONF_INT, "1073741824", 65536, (int64_t)1 << 50, NULL},
    {"tsd.storage.salt.buckets", CONF_INT, "20", 1, 65536, NULL},
    {"tsd.storage.salt.width", CONF_INT, "0", 0, 8, NULL},
    {"tsd.storage.uid.width.metric", CONF_INT, "3", 1, 8, NULL},
    {"tsd.storage.uid.width.tagk", CONF_INT, "3", 1, 8, NULL},
    {"tsd.storage.uid.width.tagv", CONF_INT, "3", 1, 8, NULL},
    {"tsd.storage.wal.durability", CONF_ENUM, "sync", 0, 0, "async|sync|fsync"},
    {"tsd.storage.write_threads", CONF_INT, "1", 1, 64, NULL},
};
#define CONF_NKEYS (sizeof(conf_keys) / sizeof(conf_keys[0]))

struct conf_extra {
    char *key;
    char *value;
};

struct conf {
    char *values[CONF_NKEYS]; /* (2) */
    bool set[CONF_NKEYS];     /* given to conf_set (file, command line or code) */
    struct conf_extra *extra; /* (3) */
    size_t nextra, capextra;
};

static const struct conf *conf_the_global;

static int conf_key_index(const char *key)
{
    size_t lo = 0, hi = CONF_NKEYS;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(key, conf_keys[mid].key);
        if (c == 0)
            return (int)mid;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return -1;
}

static bool conf_table_sorted(void)
{
    for (size_t i = 1; i < CONF_NKEYS; i++)
        if (strcmp(conf_keys[i - 1].key, conf_keys[i].key) >= 0)
            return false;
    return true;
}

static int conf_parse_bool(const char *v, bool *out)
{
    static const char *const yes[] = {"true", "yes", "1", "on"};
    static const char *const no[] = {"false", "no", "0", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (!strcasecmp(v, yes[i])) {
            *out = true;
            return 0;
        }
        if (!strcasecmp(v, no[i])) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

static int conf_parse_int(const char *v, int64_t *out)
{
    char *end;
    errno = 0;
    if (*v == '\0')
        return -1;
    long long x = strtoll(v, &end, 10);
    if (errno != 0 || *end != '\0')
        return -1;
    *out = x;
    return 0;
}

static bool conf_enum_has(const char *choices, const char *v)
{
    size_t n = strlen(v);
    const char *p = choices;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !strncmp(p, v, n))
            return true;
        if (!bar)
            break;
        p = bar + 1;
    }
    return false;
}

static int conf_check(const struct conf_key *k, const char *v, struct ct_err *err)
{
    switch (k->type) {
    case CONF_STR:
        return CT_OK;
    case CONF_BOOL: {
        bool b;
        if (conf_parse_bool(v, &b) != 0)
            return ct_err_set(err, CT_EINVAL, "bad value '%s' for %s: expected true or false", v,
                              k->key);
        return CT_OK;
    }
    case CONF_INT: {
        int64_t x;
        if (conf_parse_int(v, &x) != 0)
            return ct_err_set(err, CT_EINVAL, "bad value '%s' for %s: expected an integer", v,
                              k->key);
        if (x < k->min || x > k->max)
            return ct_err_set(err, CT_EINVAL,
                              "bad value '%s' for %s: expected an integer from %lld to %lld", v,
                              k->key, (long long)k->min, (long long)k->max);
        return CT_OK;
    }
    case CONF_ENUM:
        if (!conf_enum_has(k->choices, v))
            return ct_err_set(err, CT_EINVAL, "bad value '%s' for %s: expected one of %s", v,
                              k->key, k->choices);
        return CT_OK;
    }
    return ct_err_set(err, CT_EINVAL, "bad type for %s", k->key);
}

int conf_new(struct conf **out, struct ct_err *err)
{
    assert(conf_table_sorted());
    struct conf *c = calloc(1, sizeof(*c));
    if (!c)
        return ct_err_set(err, CT_ENOMEM, "out of memory allocating the configuration");
    for (size_t i = 0; i < CONF_NKEYS; i++) {
        c->values[i] = strdup(conf_keys[i].def);
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
    for (size_t i = 0; i < CONF_NKEYS; i++)
        free(c->values[i]);
    for (size_t i = 0; i < c->nextra; i++) {
        free(c->extra[i].key);
        free(c->extra[i].value);
    }
    free(c->extra);
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
    int i = conf_key_index(key);
    if (i < 0) {
        if (unknown)
            *unknown = true;
        return conf_set_extra(c, key, value, err);
    }
    int rc = conf_check(&conf_keys[i], value, err);
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
    int i = conf_key_index(key);
    assert(i >= 0);
    return c->set[i];
}

const char *conf_get(const struct conf *c, const char *key)
{
    int i = conf_key_index(key);
    if (i >= 0)
        return c->values[i];
    for (size_t j = 0; j < c->nextra; j++)
        if (!strcmp(c->extra[j].key, key))
            return c->extra[j].value;
    return NULL;
}

int64_t conf_get_int(const struct conf *c, const char *key)
{
    int i = conf_key_index(key);
    assert(i >= 0 && conf_keys[i].type == CONF_INT);
    int64_t x = 0;
    if (conf_parse_int(c->values[i], &x) != 0)
        assert(!"validated integer does not parse");
    return x;
}

bool conf_get_bool(const struct conf *c, const char *key)
{
    int i = conf_key_index(key);
    assert(i >= 0 && conf_keys[i].type == CONF_BOOL);
    bool b = false;
    if (conf_parse_bool(c->values[i], &b) != 0)
        assert(!"validated boolean does not parse");
    return b;
}

const char *conf_get_str(const struct conf *c, const char *key)
{
    int i = conf_key_index(key);
    assert(i >= 0 && (conf_keys[i].type == CONF_STR || conf_keys[i].type == CONF_ENUM));
    return c->values[i];
}

/* OpenTSDB's keys that ctsdb accepts but does not act on: its automatic meta data, the HBase
 * client and JVM settings, the features ctsdb does not have (trees, plugins, appends, the
 * gnuplot cache, stack traces) and query options it does not implement. Setting one away from
 * its default warns at start (conf_report_unsupported), so a migrated opentsdb.conf still
 * loads but nobody believes a setting took effect. */
static const char *const conf_unsupported[] = {
    "tsd.core.meta.enable_realtime_ts",
    "tsd.core.meta.enable_realtime_uid",
    "tsd.core.meta.enable_tsuid_incrementing",
    "tsd.core.meta.enable_tsuid_tracking",
    "tsd.core.plugin_path",
    "tsd.core.preload_uid_cache",
    "tsd.core.timezone",
    "tsd.http.cachedir",
    "tsd.http.show_stack_trace",
    "tsd.network.async_io",
    "tsd.network.worker_threads",
    "tsd.query.allow_simultaneous_duplicates",
    "tsd.query.enable_fuzzy_filter",
    "tsd.query.filter.expansion_limit",
    "tsd.query.skip_unresolved_tagvs",
    "tsd.stats.canonical",
    "tsd.storage.enable_appends",
    "tsd.storage.flush_interval",
    "tsd.storage.hbase.tree_table",
    "tsd.storage.hbase.zk_basedir",
    "tsd.storage.hbase.zk_quorum",
};

void conf_report_unsupported(const struct conf *c, conf_warn_fn warn, void *arg)
{
    for (size_t u = 0; u < sizeof(conf_unsupported) / sizeof(conf_unsupported[0]); u++) {
        int i = conf_key_index(conf_unsupported[u]);
        assert(i >= 0);
        bool changed = conf_keys[i].type == CONF_BOOL
                           ? conf_get_bool(c, conf_keys[i].key) != !strcmp(conf_keys[i].def, "true")
                           : strcmp(c->values[i], conf_keys[i].def) != 0;
        if (!changed)
            continue;
        char msg[512];
        snprintf(msg, sizeof(msg), "%s=%s is not supported by ctsdb (accepted, no effect)",
                 conf_keys[i].key, c->values[i]);
        warn(arg, msg);
    }
}

int conf_each(const struct conf *c, conf_each_fn fn, void *arg)
{
    size_t i = 0, j = 0;
    while (i < CONF_NKEYS || j < c->nextra) {
        int rc;
        if (j >= c->nextra || (i < CONF_NKEYS && strcmp(conf_keys[i].key, c->extra[j].key) < 0)) {
            rc = fn(arg, conf_keys[i].key, c->values[i]);
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

void conf_set_global(const struct conf *c)
{
    conf_the_global = c;
}

const struct conf *conf_global(void)
{
    return conf_the_global;
}

int conf_apply_argv(struct conf *c, int argc, char **argv, int *operands, int max_operands,
                    int *noperands, bool *help, conf_warn_fn warn, void *warn_arg,
                    struct ct_err *err)
{
    *noperands = 0;
    *help = false;
    for (int i = 1; i < argc; i++) {
        const char *file = NULL;
        if (!strcmp(argv[i], "--config")) {
            if (i + 1 >= argc)
                return ct_err_set(err, CT_EINVAL, "--config needs a file name");
            file = argv[++i];
        } else if (!strncmp(argv[i], "--config=", 9)) {
            file = argv[i] + 9;
        }
        if (file) {
            int rc = conf_load_file(c, file, warn, warn_arg, err);
            if (rc != CT_OK)
                return rc;
        }
    }
    static const struct {
        const char *opt, *key;
    } aliases[] = {{"--port", "tsd.network.port"},
                   {"--bind", "tsd.network.bind"},
                   {"--data", "tsd.storage.directory"},
                   {"--staticroot", "tsd.http.staticroot"},
                   {"--log-level", "tsd.logging.level"}};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            *help = true;
            return CT_OK;
        }
        if (!strcmp(a, "--config")) {
            i++;
            continue;
        }
        if (!strncmp(a, "--config=", 9))
            continue;
        if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
            if (*noperands >= max_operands)
                return ct_err_set(err, CT_EINVAL, "unexpected argument '%s'", a);
            operands[(*noperands)++] = i;
            continue;
        }
        const char *key = NULL, *value = NULL;
        char keybuf[256];
        for (size_t k = 0; k < sizeof(aliases) / sizeof(aliases[0]) && !key; k++) {
            size_t l = strlen(aliases[k].opt);
            if (!strcmp(a, aliases[k].opt)) {
                if (i + 1 >= argc)
                    return ct_err_set(err, CT_EINVAL, "%s needs a value", a);
                key = aliases[k].key;
                value = argv[++i];
            } else if (!strncmp(a, aliases[k].opt, l) && a[l] == '=') {
                key = aliases[k].key;
                value = a + l + 1;
            }
        }
        if (!key) {
            const char *eq = strchr(a, '=');
            size_t kl = eq ? (size_t)(eq - (a + 2)) : 0;
            if (!eq || kl == 0 || kl >= sizeof(keybuf))
                return ct_err_set(err, CT_EINVAL, "unknown option '%s'", a);
            memcpy(keybuf, a + 2, kl);
            keybuf[kl] = '\0';
            key = keybuf;
            value = eq + 1;
        }
        bool unknown = false;
        int rc = conf_set(c, key, value, &unknown, err);
        if (rc != CT_OK)
            return rc;
        if (unknown && warn) {
            char msg[512];
            snprintf(msg, sizeof(msg), "unknown configuration key %s (kept, unused)", key);
            warn(warn_arg, msg);
        }
    }
    return CT_OK;
}
