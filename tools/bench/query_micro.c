/* query_micro.c - runs one /api/query JSON body in-process against a data directory (read-only)
 * RUNS times and prints the median, min and max wall time of qexec_run (JSON written to a
 * counting sink), the process CPU time per query (less sensitive to a loaded machine than wall
 * time), the statsSummary counters, the points the series held after the scan (qexec_stats.
 * held_points) and the process's peak RSS. No HTTP: it isolates the query layer and the
 * store's read path for profiling (perf record -g -- query_micro ...).
 *
 * Usage: query_micro DATA_DIR RUNS 'JSON BODY' [threads [dump-file]]
 * (a body "LAST:{...}" runs an /api/query/last request)
 * Environment: QM_THRASH_MB=N writes an N MiB buffer between runs (not timed, and its CPU time
 * left out of the per-query CPU figure), so that each query starts with the caches holding
 * other data, as when another server answers between two queries (query_bench.py alternates
 * ctsdb and VictoriaMetrics run by run). QM_INDEX_RANGES=N sets qexec_options.index_ranges (the
 * tag index is used for up to N exact key ranges; 0 = never), to measure multi-range scans.
 * QM_ROLLUPS=1 opens the rollup tables (the TSD's default names, read-only) and answers from
 * them as a TSD with tsd.rollups.enable does (qexec_options.rollup).
 * Build: make build/release/tools/bench/query_micro (bench.mk). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "query/qexec.h"
#include "query/qjson.h"
#include "query/qlast.h"
#include "query/qspec.h"
#include "schema/rollup.h"
#include "schema/tsdb.h"
#include "storage/clock.h"

struct sink {
    size_t bytes;
    FILE *dump;
};

static int sink_fn(void *arg, const char *data, size_t len)
{
    struct sink *s = arg;
    s->bytes += len;
    if (s->dump)
        fwrite(data, 1, len, s->dump);
    return CT_OK;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: query_micro DATA_DIR RUNS 'JSON BODY' [threads] [dump-file]\n");
        return 2;
    }
    int runs = atoi(argv[2]);
    if (runs < 1 || runs > 100000)
        runs = 1;
    struct ct_err err = {0};
    struct tsdb_config c;
    tsdb_config_init(&c);
    c.read_only = true;
    struct wc_store *s = NULL;
    struct tsdb *t = NULL;
    if (tsdb_open_dir(argv[1], &c, &s, &t, &err) != CT_OK) {
        fprintf(stderr, "query_micro: %s\n", err.msg);
        return 1;
    }
    struct qspec *q = NULL;
    struct qlast_req *lq = NULL;
    if (!strncmp(argv[3], "LAST:", 5)) { /* an /api/query/last body */
        if (qlast_parse_json(argv[3] + 5, strlen(argv[3] + 5), &lq, &err) != CT_OK) {
            fprintf(stderr, "query_micro: %s\n", err.msg);
            return 1;
        }
    } else if (qspec_parse_json(argv[3], strlen(argv[3]), clock_now_ms(), &q, &err) != CT_OK) {
        fprintf(stderr, "query_micro: %s\n", err.msg);
        return 1;
    }
    struct qpool_options po;
    qpool_options_system(&po); /* as the TSD's */
    struct qpool *pool = NULL;
    if (qpool_new(&po, &pool, &err) != CT_OK) {
        fprintf(stderr, "query_micro: %s\n", err.msg);
        return 1;
    }
    struct qexec_options o;
    qexec_options_init(&o);
    o.pool = pool;
    if (argc > 4)
        o.scan_threads = (unsigned)atoi(argv[4]);
    if (getenv("QM_INDEX_RANGES")) /* tsd.query.tag_index's bound (0: the index is not used) */
        o.index_ranges = strtoull(getenv("QM_INDEX_RANGES"), NULL, 10);
    struct rollup *roll = NULL;
    if (getenv("QM_ROLLUPS") && atoi(getenv("QM_ROLLUPS"))) {
        struct rollup_config rcfg;
        memset(&rcfg, 0, sizeof(rcfg));
        rcfg.table[ROLLUP_1H] = "tsdb-rollup-1h";
        rcfg.table[ROLLUP_1D] = "tsdb-rollup-1d";
        rcfg.create_tables = false;
        if (rollup_open(s, t, &rcfg, &roll, &err) != CT_OK) {
            fprintf(stderr, "query_micro: %s\n", err.msg);
            return 1;
        }
        o.rollup = roll;
    }
    uint64_t *ns = calloc((size_t)runs, sizeof(uint64_t));
    struct qexec_stats st = {0};
    size_t bytes = 0;
    struct rusage ru0, ru1;
    const char *thrash_env = getenv("QM_THRASH_MB");
    size_t thrash_len = thrash_env ? (size_t)atoi(thrash_env) << 20 : 0;
    unsigned char *thrash = thrash_len ? malloc(thrash_len) : NULL;
    uint64_t thrash_ns = 0;
    getrusage(RUSAGE_SELF, &ru0);
    for (int r = 0; r < runs; r++) {
        if (thrash) { /* its CPU time (not wall time: a loaded machine preempts it) */
            struct timespec c0, c1;
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
            memset(thrash, r, thrash_len);
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
            thrash_ns += (uint64_t)((c1.tv_sec - c0.tv_sec) * 1000000000LL +
                                    (c1.tv_nsec - c0.tv_nsec));
        }
        struct sink sk = {0, NULL};
        if (r == 0 && argc > 5)
            sk.dump = fopen(argv[5], "w");
        struct qjson *j = qjson_new(sink_fn, &sk, 0);
        enum qexec_status status;
        memset(&st, 0, sizeof(st));
        uint64_t t0 = clock_mono_ns();
        int rc = lq ? qlast_run(t, lq, clock_now_ms(), j, &status, &err)
                    : qexec_run(t, q, &o, j, &status, &st, &err);
        if (rc == CT_OK)
            rc = qjson_flush(j);
        ns[r] = clock_mono_ns() - t0;
        qjson_free(j);
        if (sk.dump)
            fclose(sk.dump);
        if (rc != CT_OK) {
            fprintf(stderr, "query_micro: %d %s\n", status, err.msg);
            return 1;
        }
        bytes = sk.bytes;
    }
    getrusage(RUSAGE_SELF, &ru1);
    double cpu_ms = ((ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) * 1e3 +
                     (ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) / 1e3 +
                     (ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) * 1e3 +
                     (ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e3) /
                        runs -
                    thrash_ns / 1e6 / runs; /* the thrashing was one thread's CPU time */
    free(thrash);
    qsort(ns, (size_t)runs, sizeof(uint64_t), cmp_u64);
    printf("cpu %.3f ms/query | median %.3f ms  min %.3f  max %.3f  | rows %llu raw %llu series "
           "%llu emitted %llu "
           "bytes %zu scanners %llu key_ranges %llu held %llu | scan %.3f agg %.3f ms (last run) | "
           "peak RSS %.1f MB\n",
           cpu_ms, ns[runs / 2] / 1e6, ns[0] / 1e6, ns[runs - 1] / 1e6, (unsigned long long)st.rows,
           (unsigned long long)st.raw_dps, (unsigned long long)st.series,
           (unsigned long long)st.emitted_dps, bytes, (unsigned long long)st.scanners,
           (unsigned long long)st.key_ranges, (unsigned long long)st.held_points, st.scan_ns / 1e6,
           st.agg_ns / 1e6, ru1.ru_maxrss / 1024.0);
    free(ns);
    qpool_free(pool);
    qspec_free(q);
    qlast_req_free(lq);
    rollup_close(roll);
    tsdb_close(t);
    wc_close(s);
    return 0;
}
