/* jsonput_micro.c - the HTTP /api/put body path in-process, for instruction counts: reads a
 * realistic body (tsd_load's --mode http stream: 5 tags, about 150 bytes a point, one
 * connection's share of HOSTS x 20 series) ROUNDS times through api_put.c's own code (this file
 * includes tsd/api_put.c: jsonput_parse, the per-point callback with its checks, series keys and
 * ingest batches), with an ingest pipeline whose write function only marks points written.
 * Run under callgrind with --toggle-collect=bench_body, the counts are the ct-ingest worker's
 * parse + callback instructions without HTTP, the write-ahead log or the store
 * (tools/bench/jsonput_callgrind.sh).
 *
 * Usage: jsonput_micro [--points N] [--rounds R] [--hosts H] [--conns C] [--malformed] [--spaces]
 *   (defaults 500 200 100 4: 500-point bodies, connection 0 of 4 over 2,000 series);
 *   --malformed breaks the last point of each body: nothing may be written; --spaces writes
 *   the bodies as Python's json.dumps does (", " and ": ").
 * Prints points, points written and points failed; exits 1 if they are not as expected.
 * Never linked into bin/ctsdb. */
#include "tsd/api_put.c"

#include <math.h>

static int write_all(void *arg, struct ingest_batch *const *b, size_t nb, struct ct_err *err)
{
    (void)arg;
    (void)err;
    for (size_t i = 0; i < nb; i++)
        for (size_t k = 0; k < ingest_batch_count(b[i]); k++)
            ingest_batch_set_outcome(b[i], k, INGEST_WRITTEN, NULL);
    return CT_OK;
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static const char *const metric_names[] = {
    "cpu.user",     "cpu.system",   "cpu.idle",        "cpu.iowait",       "mem.used",
    "mem.free",     "mem.cached",   "disk.read_bytes", "disk.write_bytes", "disk.used_pct",
    "net.rx_bytes", "net.tx_bytes", "net.rx_errors",   "net.tx_errors",    "load.1m",
    "load.5m",      "load.15m",     "procs.running",   "procs.blocked",    "tcp.established"};

/* tsd_load's value model, in short: integers for counters and byte gauges, 2 decimals else. */
static void value_of(int h, int m, int k, char *out, size_t n)
{
    uint64_t series = mix((uint64_t)h * 1000003u + (uint64_t)m);
    uint64_t noise = mix(series ^ ((uint64_t)k * 0x9e3779b97f4a7c15ULL));
    if (m == 7 || m == 8 || m == 10 || m == 11)
        snprintf(out, n, "%llu",
                 (unsigned long long)(series % 1000000000000ULL + (uint64_t)k * 15000000u +
                                      noise % 5000000u));
    else if (m >= 4 && m <= 6)
        snprintf(out, n, "%llu", (unsigned long long)(4500000000ULL + noise % 1000000000u));
    else if (m == 12 || m == 13 || m >= 17)
        snprintf(out, n, "%llu", (unsigned long long)(noise % 500));
    else
        snprintf(out, n, "%.2f",
                 50.0 + 30.0 * sin((double)k / 360.0) + (double)(noise % 2000) / 100.0);
}

/* Body r: points s = c0, c0 + C, ... of connection 0 over H x 20 series, interval by interval. */
static size_t make_body(char *buf, size_t cap, int points, int hosts, int conns, long *pos,
                        bool malformed, bool spaces)
{
    size_t n = 0;
    long nseries = (long)hosts * 20;
    for (int i = 0; i < points; i++) {
        long s = *pos % nseries, k = *pos / nseries;
        int h = (int)(s / 20), m = (int)(s % 20);
        char val[64];
        value_of(h, m, (int)k, val, sizeof(val));
        if (spaces) /* Python's json.dumps: ", " and ": " */
            n += (size_t)snprintf(buf + n, cap - n,
                                  "%s{\"metric\": \"sys.%s\", \"timestamp\": %lld, \"value\": %s, "
                                  "\"tags\": {\"host\": \"host_%d\", \"dc\": \"dc_%d\", \"rack\": "
                                  "\"rack_%d\", \"service\": \"svc_%d\", \"os\": \"os_%d\"}}",
                                  i == 0 ? "[" : ", ", metric_names[m], 1356998400LL + k * 10, val,
                                  h, h % 3, h % 40, h % 10, h % 2);
        else
            n += (size_t)snprintf(buf + n, cap - n,
                                  "%s{\"metric\":\"sys.%s\",\"timestamp\":%lld,\"value\":%s,"
                                  "\"tags\":{\"host\":\"host_%d\",\"dc\":\"dc_%d\",\"rack\":"
                                  "\"rack_%d\",\"service\":\"svc_%d\",\"os\":\"os_%d\"}}",
                                  i == 0 ? "[" : ",", metric_names[m], 1356998400LL + k * 10, val,
                                  h, h % 3, h % 40, h % 10, h % 2);
        *pos += conns;
    }
    if (malformed && n > 2)
        buf[n - 2] = ','; /* the last tags object: "...\"os_1\",}" */
    buf[n++] = ']';
    return n;
}

/* One body through api_put.c's reader, as api_put_work runs it; waits for the writes. */
static __attribute__((noinline)) int bench_body(struct api_put_ctx *x, size_t len, char *scratch,
                                                struct jsonput_point *jp, size_t *npoints,
                                                char *msg, size_t msg_size)
{
    return api_put_body(x, len, scratch, jp, npoints, msg, msg_size);
}

int main(int argc, char **argv)
{
    int points = 500, rounds = 200, hosts = 100, conns = 4;
    bool malformed = false, spaces = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--points") && i + 1 < argc)
            points = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--hosts") && i + 1 < argc)
            hosts = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--conns") && i + 1 < argc)
            conns = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--malformed"))
            malformed = true;
        else if (!strcmp(argv[i], "--spaces"))
            spaces = true;
        else {
            fprintf(stderr, "usage: jsonput_micro [--points N] [--rounds R] [--hosts H] "
                            "[--conns C] [--malformed] [--spaces]\n");
            return 2;
        }
    }
    if (points < 1 || rounds < 1 || hosts < 1 || conns < 1)
        return 2;
    static struct tsd t;
    t.rules.max_tags = 8;
    struct ingest_options o;
    ingest_options_init(&o);
    struct ct_err err = {0};
    if (ingest_new(&o, write_all, NULL, &t.ingest, &err) != CT_OK) {
        fprintf(stderr, "jsonput_micro: ingest_new: %s\n", err.msg);
        return 2;
    }
    size_t cap = (size_t)points * 512 + 16;
    char *body = malloc(cap), *scratch = malloc(cap + 1);
    struct jsonput_point *jp = malloc(sizeof(*jp));
    if (!body || !scratch || !jp)
        return 2;
    long pos = 0;
    size_t total = 0, written = 0, failed = 0, rejected = 0;
    for (int r = 0; r < rounds; r++) {
        size_t len = make_body(body, cap, points, hosts, conns, &pos, malformed, spaces);
        struct api_put_ctx *x = calloc(1, sizeof(*x));
        struct api_put_job *job = calloc(1, sizeof(*job));
        if (!x || !job)
            return 2;
        api_put_start(x, job, &t, body);
        size_t np = 0;
        char msg[256];
        int rc = bench_body(x, len, scratch, jp, &np, msg, sizeof(msg));
        if (rc < 0)
            rejected++;
        pthread_mutex_lock(&job->mu);
        while (job->refs > 1)
            pthread_cond_wait(&job->cv, &job->mu);
        written += job->success;
        failed += job->failed;
        pthread_mutex_unlock(&job->mu);
        total += np;
        api_put_job_unref(job);
        free(x->src);
        free(x);
    }
    ingest_free(t.ingest);
    printf("points %zu written %zu failed %zu bodies rejected %zu\n", total, written, failed,
           rejected);
    free(body);
    free(scratch);
    free(jp);
    if (malformed)
        return written == 0 && rejected == (size_t)rounds ? 0 : 1;
    return written == (size_t)points * (size_t)rounds && failed == 0 ? 0 : 1;
}
