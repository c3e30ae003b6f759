/* schema_bytes.c - bytes per datapoint of the two compacted-cell formats (ctsdb's compressed cell
 * and OpenTSDB's compacted cell) on a devops-like dataset. Standalone: not built by the Makefile,
 * see docs/schema.md "Measuring bytes per point" for the one-line build.
 *
 * The dataset: H hosts x 10 metrics at a 10 s period for a number of hours: cpu-style integer
 * percentages (bounded random walks), monotonically growing counters (bytes, packets) and
 * two-decimal float gauges (load, memory percent), each series with 3 tags.
 *
 * Two measurements per format:
 *   cells: the bytes of the final cells alone (row key + qualifier + value of every compacted
 *          hour), computed with the codec and no store;
 *   disk:  every file of a fresh data directory after writing the points through tsdb batches,
 *          flushing every table (so the log can be released) and a major compaction (needs the embedded engine; skipped with a note if
 *          the store cannot be opened). */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "schema/tsdb.h"
#include "storage/clock.h"
#include "storage/hash.h"

#define BENCH_METRICS  10
#define BENCH_PERIOD_S 10
#define BENCH_BASE     1700000000LL /* a base hour in the past: hours are complete */

static uint64_t bench_rng = 88172645463325252ull;
static uint64_t bench_rand(void)
{
    bench_rng ^= bench_rng << 13;
    bench_rng ^= bench_rng >> 7;
    bench_rng ^= bench_rng << 17;
    return bench_rng;
}

static const char *const bench_metric_names[BENCH_METRICS] = {
    "cpu.usage_user",   "cpu.usage_system", "cpu.usage_idle", "net.bytes_recv",
    "net.bytes_sent",   "net.packets_recv", "disk.writes",    "system.load1",
    "mem.used_percent", "disk.used_percent"};

/* The value of metric m for one series at step i, given its state. */
static struct dpcodec_point bench_point(int m, int64_t ts_ms, double *state)
{
    if (m < 3) { /* percentages: bounded integer random walk */
        double v = *state + (double)((int)(bench_rand() % 11) - 5);
        if (v < 0)
            v = 0;
        if (v > 100)
            v = 100;
        *state = v;
        return dpcodec_point_int(ts_ms, false, (int64_t)v);
    }
    if (m < 7) { /* counters */
        *state += (double)(bench_rand() % 20000);
        return dpcodec_point_int(ts_ms, false, (int64_t)*state);
    }
    /* two-decimal gauges */
    double v = *state + (double)((int)(bench_rand() % 21) - 10) / 100.0;
    if (v < 0)
        v = 0;
    *state = v;
    return dpcodec_point_real(ts_ms, false, (double)llround(v * 100) / 100.0);
}

static uint64_t bench_du(const char *dir)
{
    uint64_t total = 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char p[4096];
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st))
            continue;
        if (S_ISDIR(st.st_mode))
            total += bench_du(p);
        else
            total += (uint64_t)st.st_size;
    }
    closedir(d);
    return total;
}

struct bench_series {
    uint8_t tsuid[ROWKEY_MAX_TSUID];
    size_t len;
    int metric;
    double state;
};

/* cells: row key + qualifier + value of each compacted hour, no store */
static double bench_cells(enum dpcodec_format fmt, int hosts, int hours)
{
    struct tsdb_config dc;
    tsdb_config_init(&dc);
    struct rowkey_layout l = dc.layout; /* the default key layout (salted) */
    enum {
        N = 3600 / BENCH_PERIOD_S
    };
    struct dpcodec_point pts[N];
    uint8_t *q = malloc(4 * N), *v = malloc(dpcodec_compressed_bound(N) + 8 * N + 1);
    uint64_t bytes = 0, points = 0;
    bench_rng = 88172645463325252ull;
    for (int h = 0; h < hosts; h++) {
        for (int m = 0; m < BENCH_METRICS; m++) {
            double state = m < 3 ? 50 : m < 7 ? 1e6 : 1.5;
            for (int hr = 0; hr < hours; hr++) {
                int64_t base = BENCH_BASE - BENCH_BASE % 3600 + hr * 3600LL;
                for (int i = 0; i < N; i++)
                    pts[i] = bench_point(m, (base + i * BENCH_PERIOD_S) * 1000, &state);
                size_t ql = DPCODEC_CQ_LEN, vl;
                struct ct_err err = {0};
                int rc = fmt == DPCODEC_FORMAT_COMPRESSED
                             ? dpcodec_compressed_encode(base, pts, N, v, &vl, &err)
                             : dpcodec_compacted_encode(base, pts, N, q, &ql, v, &vl, &err);
                if (rc != CT_OK) {
                    fprintf(stderr, "encode: %s\n", err.msg);
                    exit(1);
                }
                bytes += rowkey_len(&l, 3) + ql + vl;
                points += N;
            }
        }
    }
    free(q);
    free(v);
    return (double)bytes / (double)points;
}

static int bench_disk(enum dpcodec_format fmt, int hosts, int hours, double *bpp, double *bpp_files,
                      double *secs)
{
    char dir[] = "/tmp/ctsdb-schema-bytes-XXXXXX";
    if (!mkdtemp(dir))
        return -1;
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = dir;
    /* log segments are released once flushed; small segments keep the live log small */
    o.wal_segment_bytes = 1u << 20;
    struct wc_store *s = NULL;
    struct ct_err err = {0};
    int ret = -1;
    if (wc_open(&o, &s, &err) != CT_OK) {
        printf("  (disk measurement skipped: %s)", err.msg);
        goto out;
    }
    struct tsdb_config c;
    tsdb_config_init(&c); /* the default key layout (salted) */
    c.format = fmt;
    struct tsdb *t = NULL;
    if (tsdb_open(s, &c, &t, &err) != CT_OK) {
        fprintf(stderr, "tsdb_open: %s\n", err.msg);
        goto out;
    }
    int nseries = hosts * BENCH_METRICS;
    struct bench_series *ser = calloc((size_t)nseries, sizeof(*ser));
    struct tsdb_batch *b = NULL;
    if (!ser || tsdb_batch_new(8192, &b, &err) != CT_OK)
        goto close;
    for (int h = 0; h < hosts; h++) {
        for (int m = 0; m < BENCH_METRICS; m++) {
            struct bench_series *x = &ser[h * BENCH_METRICS + m];
            char host[32], rack[32];
            snprintf(host, sizeof(host), "host_%d", h);
            snprintf(rack, sizeof(rack), "rack_%d", h % 50);
            const char *tk[3] = {"host", "rack", "dc"}, *tv[3] = {host, rack, "eu-west-1"};
            if (tsdb_series_resolve(t, bench_metric_names[m], tk, tv, 3, x->tsuid, sizeof(x->tsuid),
                                    &x->len, &err) != CT_OK) {
                fprintf(stderr, "resolve: %s\n", err.msg);
                goto close;
            }
            x->metric = m;
            x->state = m < 3 ? 50 : m < 7 ? 1e6 : 1.5;
        }
    }
    bench_rng = 88172645463325252ull;
    uint64_t points = 0, t0 = clock_mono_ns();
    int64_t start = BENCH_BASE - BENCH_BASE % 3600;
    for (int64_t ts = start; ts < start + hours * 3600LL; ts += BENCH_PERIOD_S) {
        for (int i = 0; i < nseries; i++) {
            struct dpcodec_point p = bench_point(ser[i].metric, ts * 1000, &ser[i].state);
            if (tsdb_batch_add(b, tsdb_layout(t), ser[i].tsuid, ser[i].len, &p, &err) != CT_OK)
                goto close;
            points++;
        }
        if (tsdb_batch_count(b) >= 8192) {
            if (tsdb_batch_write(t, b, WC_DURABILITY_ASYNC_WAL, &err) != CT_OK)
                goto close;
            tsdb_batch_reset(b);
        }
    }
    if (tsdb_batch_write(t, b, WC_DURABILITY_ASYNC_WAL, &err) != CT_OK ||
        wc_table_flush(s, c.data_table, &err) != CT_OK ||
        wc_table_flush(s, c.uid_table, &err) != CT_OK ||
        wc_table_flush(s, c.meta_table, &err) != CT_OK ||
        wc_table_compact(s, c.data_table, NULL, true, &err) != CT_OK)
        goto close;
    tsdb_close(t);
    t = NULL;
    wc_close(s);
    s = NULL;
    *bpp = (double)bench_du(dir) / (double)points;
    char sub[4096];
    snprintf(sub, sizeof(sub), "%s/sst", dir);
    *bpp_files = (double)bench_du(sub) / (double)points;
    *secs = (double)(clock_mono_ns() - t0) / 1e9;
    ret = 0;
close:
    if (ret)
        fprintf(stderr, "disk measurement failed: %s\n", err.msg);
    tsdb_batch_free(b);
    free(ser);
    tsdb_close(t);
out:
    wc_close(s);
    char cmd[128];
    if (getenv("SCHEMA_BYTES_KEEP")) {
        printf("  (kept %s)", dir);
        return ret;
    }
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return ret;
}

/* Writes the same dataset as Prometheus text exposition lines with ms timestamps (for
 * VictoriaMetrics' /api/v1/import/prometheus), series in the same order and seed. */
static void bench_emit_prom(int hosts, int hours)
{
    int nseries = hosts * BENCH_METRICS;
    double *state = calloc((size_t)nseries, sizeof(double));
    if (!state)
        exit(1);
    for (int i = 0; i < nseries; i++) {
        int m = i % BENCH_METRICS;
        state[i] = m < 3 ? 50 : m < 7 ? 1e6 : 1.5;
    }
    bench_rng = 88172645463325252ull;
    int64_t start = BENCH_BASE - BENCH_BASE % 3600;
    for (int64_t ts = start; ts < start + hours * 3600LL; ts += BENCH_PERIOD_S) {
        for (int i = 0; i < nseries; i++) {
            int m = i % BENCH_METRICS, h = i / BENCH_METRICS;
            struct dpcodec_point p = bench_point(m, ts * 1000, &state[i]);
            char name[64];
            snprintf(name, sizeof(name), "%s", bench_metric_names[m]);
            for (char *c = name; *c; c++)
                if (*c == '.')
                    *c = '_';
            if (p.type == DPCODEC_INT)
                printf("%s{host=\"host_%d\",rack=\"rack_%d\",dc=\"eu-west-1\"} %lld %lld\n", name,
                       h, h % 50, (long long)p.i, (long long)p.ts_ms);
            else
                printf("%s{host=\"host_%d\",rack=\"rack_%d\",dc=\"eu-west-1\"} %.2f %lld\n", name,
                       h, h % 50, p.f, (long long)p.ts_ms);
        }
    }
    free(state);
}

/* ---- a dataset from a file ------------------------------------------------------------------ */

struct bench_file_series {
    char *key; /* metric + tags text as it appears in the file */
    uint8_t tsuid[ROWKEY_MAX_TSUID];
    size_t len;
};

struct bench_map {
    struct bench_file_series *v;
    size_t cap, n;
};

/* Parses one line: `put metric ts value k=v ...` (OpenTSDB) or `metric{k="v",...} value ts_ms`
 * (Prometheus text). Fills metric, tags (pointers into line, NUL-terminated in place), the series
 * key span and the point. Returns 0 or -1. */
static int bench_parse(char *line, char **metric, char **tk, char **tv, size_t *ntags, char **key,
                       size_t *keylen, struct dpcodec_point *p)
{
    char *val, *ts;
    *ntags = 0;
    if (!strncmp(line, "put ", 4)) {
        char *save, *tok[4 + ROWKEY_MAX_TAGS];
        size_t n = 0;
        for (char *t = strtok_r(line + 4, " \n", &save); t && n < 4 + ROWKEY_MAX_TAGS;
             t = strtok_r(NULL, " \n", &save))
            tok[n++] = t;
        if (n < 4)
            return -1;
        *metric = tok[0];
        ts = tok[1];
        val = tok[2];
        for (size_t i = 3; i < n; i++) {
            char *eq = strchr(tok[i], '=');
            if (!eq)
                return -1;
            *eq = 0;
            tk[*ntags] = tok[i];
            tv[(*ntags)++] = eq + 1;
        }
        *key = tok[0];
        *keylen = strlen(tok[0]);
    } else {
        char *brace = strchr(line, '{'), *close = brace ? strchr(brace, '}') : NULL;
        if (!brace || !close)
            return -1;
        *key = line;
        *keylen = (size_t)(close - line);
        *brace = 0;
        *metric = line;
        for (char *c = line; *c; c++)
            if (*c == '_')
                *c = '.';
        char *q = brace + 1;
        while (q < close && *ntags < ROWKEY_MAX_TAGS) {
            char *eq = strchr(q, '=');
            if (!eq || eq > close || eq[1] != '"')
                return -1;
            char *end = strchr(eq + 2, '"');
            if (!end)
                return -1;
            *eq = 0;
            *end = 0;
            tk[*ntags] = q;
            tv[(*ntags)++] = eq + 2;
            q = end + 1;
            if (*q == ',')
                q++;
        }
        char *save;
        val = strtok_r(close + 1, " \n", &save);
        ts = val ? strtok_r(NULL, " \n", &save) : NULL;
        if (!val || !ts)
            return -1;
    }
    long long t = strtoll(ts, NULL, 10);
    bool ms = strlen(ts) > 10;
    int64_t ts_ms = ms ? t : t * 1000;
    if (strpbrk(val, ".eE"))
        *p = dpcodec_point_real(ts_ms, ms, strtod(val, NULL));
    else
        *p = dpcodec_point_int(ts_ms, ms, strtoll(val, NULL, 10));
    return 0;
}

static int bench_file(const char *path, enum dpcodec_format fmt, double *bpp, double *bpp_files,
                      uint64_t *npoints)
{
    FILE *in = fopen(path, "r");
    if (!in) {
        perror(path);
        return -1;
    }
    char dir[] = "/tmp/ctsdb-schema-bytes-XXXXXX";
    if (!mkdtemp(dir)) {
        fclose(in);
        return -1;
    }
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = dir;
    o.wal_segment_bytes = 1u << 20;
    struct wc_store *s = NULL;
    struct tsdb *t = NULL;
    struct tsdb_batch *b = NULL;
    struct bench_map map = {calloc(1u << 20, sizeof(struct bench_file_series)), 1u << 20, 0};
    struct ct_err err = {0};
    int ret = -1;
    struct tsdb_config c;
    tsdb_config_init(&c); /* the default key layout (salted) */
    c.format = fmt;
    if (!map.v || wc_open(&o, &s, &err) != CT_OK || tsdb_open(s, &c, &t, &err) != CT_OK ||
        tsdb_batch_new(8192, &b, &err) != CT_OK)
        goto out;
    char line[4096], keycopy[4096];
    uint64_t points = 0;
    while (fgets(line, sizeof(line), in)) {
        char *metric, *tk[ROWKEY_MAX_TAGS], *tv[ROWKEY_MAX_TAGS], *key;
        size_t ntags, keylen;
        struct dpcodec_point p;
        memcpy(keycopy, line, sizeof(line));
        if (bench_parse(line, &metric, tk, tv, &ntags, &key, &keylen, &p))
            continue;
        /* the series key: the metric and tag text from the untouched copy */
        const char *k = keycopy + (key - line);
        if (!strncmp(keycopy, "put ", 4)) {
            /* metric + everything after the value */
            k = keycopy;
            keylen = strlen(keycopy);
            char *sp = keycopy + 4;
            for (int f = 0; f < 3 && sp; f++)
                sp = strchr(sp + 1, ' ');
            /* key = metric text + tags text */
            char *m_end = strchr(keycopy + 4, ' ');
            if (!m_end || !sp)
                continue;
            memmove(m_end, sp, strlen(sp) + 1);
            k = keycopy + 4;
            keylen = strlen(k);
        }
        uint64_t h = hash_bytes(k, keylen, 0);
        size_t i = h & (map.cap - 1);
        while (map.v[i].key && (strlen(map.v[i].key) != keylen || memcmp(map.v[i].key, k, keylen)))
            i = (i + 1) & (map.cap - 1);
        struct bench_file_series *x = &map.v[i];
        if (!x->key) {
            if (map.n * 2 >= map.cap) {
                fprintf(stderr, "too many series\n");
                goto out;
            }
            x->key = strndup(k, keylen);
            map.n++;
            if (tsdb_series_resolve(t, metric, (const char *const *)tk, (const char *const *)tv,
                                    ntags, x->tsuid, sizeof(x->tsuid), &x->len, &err) != CT_OK)
                goto out;
        }
        if (tsdb_batch_add(b, tsdb_layout(t), x->tsuid, x->len, &p, &err) != CT_OK)
            goto out;
        points++;
        if (tsdb_batch_count(b) >= 8192) {
            if (tsdb_batch_write(t, b, WC_DURABILITY_ASYNC_WAL, &err) != CT_OK)
                goto out;
            tsdb_batch_reset(b);
        }
    }
    if (tsdb_batch_write(t, b, WC_DURABILITY_ASYNC_WAL, &err) != CT_OK ||
        wc_table_flush(s, c.data_table, &err) != CT_OK ||
        wc_table_flush(s, c.uid_table, &err) != CT_OK ||
        wc_table_flush(s, c.meta_table, &err) != CT_OK ||
        wc_table_compact(s, c.data_table, NULL, true, &err) != CT_OK)
        goto out;
    tsdb_batch_free(b);
    b = NULL;
    tsdb_close(t);
    t = NULL;
    wc_close(s);
    s = NULL;
    *npoints = points;
    *bpp = (double)bench_du(dir) / (double)points;
    char sub[4096];
    snprintf(sub, sizeof(sub), "%s/sst", dir);
    *bpp_files = (double)bench_du(sub) / (double)points;
    ret = 0;
out:
    if (ret)
        fprintf(stderr, "file measurement failed: %s\n", err.msg);
    tsdb_batch_free(b);
    tsdb_close(t);
    wc_close(s);
    fclose(in);
    if (map.v)
        for (size_t i = 0; i < map.cap; i++)
            free(map.v[i].key);
    free(map.v);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return ret;
}

int main(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[1], "--file")) {
        const char *names[2] = {"compressed", "opentsdb"};
        for (int f = 0; f < 2; f++) {
            double disk, sst;
            uint64_t n;
            if (bench_file(argv[2], (enum dpcodec_format)f, &disk, &sst, &n) != 0)
                return 1;
            printf("%-10s %llu points | data directory %.3f B/point (block files %.3f, log "
                   "%.3f)\n",
                   names[f], (unsigned long long)n, disk, sst, disk - sst);
            fflush(stdout);
        }
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "--emit-prom")) {
        int h = argc > 2 ? atoi(argv[2]) : 100, hr = argc > 3 ? atoi(argv[3]) : 6;
        if (h < 1 || hr < 1)
            return 2;
        bench_emit_prom(h, hr);
        return 0;
    }
    int hosts = argc > 1 ? atoi(argv[1]) : 100, hours = argc > 2 ? atoi(argv[2]) : 6;
    if (hosts < 1 || hours < 1) {
        fprintf(stderr, "usage: schema_bytes [HOSTS [HOURS]] | --emit-prom HOSTS HOURS | --file "
                        "FILE\n");
        return 2;
    }
    printf("dataset: %d hosts x %d metrics x %d h at %d s = %lld points\n", hosts, BENCH_METRICS,
           hours, BENCH_PERIOD_S,
           (long long)hosts * BENCH_METRICS * hours * (3600 / BENCH_PERIOD_S));
    const char *names[2] = {"compressed", "opentsdb"};
    for (int f = 0; f < 2; f++) {
        double cells = bench_cells((enum dpcodec_format)f, hosts, hours), disk = 0, sst = 0,
               secs = 0;
        printf("%-10s cells %.3f B/point", names[f], cells);
        if (bench_disk((enum dpcodec_format)f, hosts, hours, &disk, &sst, &secs) == 0)
            printf(" | data directory %.3f B/point (block files %.3f, log %.3f) | %.1f s", disk,
                   sst, disk - sst, secs);
        printf("\n");
        fflush(stdout);
    }
    return 0;
}
