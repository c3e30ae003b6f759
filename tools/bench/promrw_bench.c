/* promrw_bench.c - Prometheus remote write load for ctsdb and VictoriaMetrics (docs/prometheus.md):
 * the tsd_load workload (--hosts x --metrics series tagged host, dc, rack, service, os; one sample
 * per series every --step-ms (10,000) for --intervals intervals from --start; values a fixed
 * function of (host, metric, interval), the same model as tsd_load.c) sent as snappy-compressed
 * protobuf WriteRequests of --batch samples (one sample per TimeSeries, as Prometheus' queue
 * sends them) to POST /api/v1/write over --conns keep-alive connections; each request waits for
 * its reply (ctsdb answers 204 once the samples are in the write-ahead log).
 * Every request body is generated before the clock starts; the run is bounded by the workload.
 * Output (stdout): `points N seconds S rate R start_ns T cpu_ticks A B`; exit 1 if any reply was
 * not 2xx. T is the wall clock (CLOCK_REALTIME, ns) when the clock started, so that a caller can
 * extend the timing past the last reply (e.g. until every sample is queryable); A and B are the
 * utime + stime clock ticks of process --cpu-pid (/proc/PID/stat) at the clock's start and at the
 * last reply (0 0 without --cpu-pid).
 * Usage: promrw_bench --port P [--host H] [--hosts N] [--metrics M] [--intervals K]
 *                     [--conns C] [--batch B] [--start EPOCH_S | --start-ms EPOCH_MS]
 *                     [--step-ms MS] [--cpu-pid PID]
 *        promrw_bench --list-metrics: the metric names (`__name__`), one a line */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tsd/proto_prom.h"

static const char *host = "127.0.0.1";
static int port = 0, conns = 4, hosts = 500, metrics = 20, intervals = 30, batch = 500;
static long long start_ms = 1356998400000LL, step_ms = 10000;
static int cpu_pid = 0;

static const char *const metric_names[] = {
    "cpu_user",     "cpu_system",   "cpu_idle",        "cpu_iowait",       "mem_used",
    "mem_free",     "mem_cached",   "disk_read_bytes", "disk_write_bytes", "disk_used_pct",
    "net_rx_bytes", "net_tx_bytes", "net_rx_errors",   "net_tx_errors",    "load_1m",
    "load_5m",      "load_15m",     "procs_running",   "procs_blocked",    "tcp_established"};

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* tsd_load.c's value model (counters, byte gauges, error counters, small gauges, waves). */
static double value_of(int h, int m, int k)
{
    uint64_t series = mix((uint64_t)h * 1000003u + (uint64_t)m);
    uint64_t noise = mix(series ^ ((uint64_t)k * 0x9e3779b97f4a7c15ULL));
    int mm = m % 20;
    if (mm == 7 || mm == 8 || mm == 10 || mm == 11)
        return (double)(series % 1000000000000ULL + (uint64_t)k * 15000000u + noise % 5000000u);
    if (mm >= 4 && mm <= 6)
        return (double)(4500000000ULL + mix(series ^ (uint64_t)(k / 30)) % 1000000000u +
                        noise % 1048576u);
    if (mm == 12 || mm == 13)
        return (double)(series % 1000 + (uint64_t)k / 97);
    if (mm >= 17)
        return (double)(noise % 500);
    double phase = (double)(series % 6283) / 1000.0;
    double v = 50.0 + 30.0 * __builtin_sin((double)k / 360.0 + phase) +
               (double)(noise % 2000) / 100.0 - 10.0;
    v = v < 0 ? 0 : v > 100 ? 100 : v;
    return (double)(long long)(v * 100.0 + 0.5) / 100.0;
}

struct req {
    char *data; /* the whole HTTP request */
    size_t len;
};
struct conn_work {
    struct req *reqs;
    size_t nreqs, cap;
    long points;
    int failed;
};

static void die(const char *what)
{
    perror(what);
    exit(2);
}

/* utime + stime of process pid in clock ticks (fields 14 and 15 of /proc/PID/stat), 0 if none */
static long long cpu_ticks(int pid)
{
    char path[64], buf[1024];
    if (pid <= 0)
        return 0;
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    if (!p)
        return 0;
    unsigned long long ut = 0, st = 0;
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return 0;
    return (long long)(ut + st);
}

/* Packs one WriteRequest of n samples (series[i] at interval k[i]) into an HTTP request. */
static void add_request(struct conn_work *w, const int *hs, const int *ms, const int *ks, size_t n)
{
    Prometheus__TimeSeries *ts = calloc(n, sizeof(*ts));
    Prometheus__TimeSeries **tsp = calloc(n, sizeof(*tsp));
    Prometheus__Sample *sm = calloc(n, sizeof(*sm));
    Prometheus__Sample **smp = calloc(n, sizeof(*smp));
    Prometheus__Label *lab = calloc(n * 6, sizeof(*lab));
    Prometheus__Label **labp = calloc(n * 6, sizeof(*labp));
    char *txt = calloc(n, 6 * 24);
    if (!ts || !tsp || !sm || !smp || !lab || !labp || !txt)
        die("calloc");
    for (size_t i = 0; i < n; i++) {
        int h = hs[i], m = ms[i];
        char *t = txt + i * 6 * 24;
        const char *names[6] = {"__name__", "dc", "host", "os", "rack", "service"};
        snprintf(t, 24, "%s", metric_names[m % 20]);
        snprintf(t + 24, 24, "dc_%d", h % 3);
        snprintf(t + 48, 24, "host_%d", h);
        snprintf(t + 72, 24, "os_%d", h % 2);
        snprintf(t + 96, 24, "rack_%d", h % 40);
        snprintf(t + 120, 24, "svc_%d", h % 10);
        for (int j = 0; j < 6; j++) {
            Prometheus__Label *l = &lab[i * 6 + (size_t)j];
            prometheus__label__init(l);
            l->name = (char *)names[j];
            l->value = t + 24 * j;
            labp[i * 6 + (size_t)j] = l;
        }
        prometheus__time_series__init(&ts[i]);
        ts[i].n_labels = 6;
        ts[i].labels = &labp[i * 6];
        prometheus__sample__init(&sm[i]);
        sm[i].value = value_of(h, m, ks[i]);
        sm[i].timestamp = start_ms + (long long)ks[i] * step_ms;
        smp[i] = &sm[i];
        ts[i].n_samples = 1;
        ts[i].samples = &smp[i];
        tsp[i] = &ts[i];
    }
    Prometheus__WriteRequest wr;
    prometheus__write_request__init(&wr);
    wr.n_timeseries = n;
    wr.timeseries = tsp;
    size_t rl = prometheus__write_request__get_packed_size(&wr);
    uint8_t *raw = malloc(rl);
    char *body;
    size_t bl;
    if (!raw)
        die("malloc");
    prometheus__write_request__pack(&wr, raw);
    if (!prom_snappy_encode(raw, rl, &body, &bl))
        die("snappy");
    char head[512];
    int hl = snprintf(head, sizeof(head),
                      "POST /api/v1/write HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: "
                      "application/x-protobuf\r\nContent-Encoding: snappy\r\n"
                      "X-Prometheus-Remote-Write-Version: 0.1.0\r\nContent-Length: %zu\r\n\r\n",
                      host, port, bl);
    if (w->nreqs == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 64;
        w->reqs = realloc(w->reqs, w->cap * sizeof(*w->reqs));
        if (!w->reqs)
            die("realloc");
    }
    struct req *r = &w->reqs[w->nreqs++];
    r->len = (size_t)hl + bl;
    r->data = malloc(r->len);
    if (!r->data)
        die("malloc");
    memcpy(r->data, head, (size_t)hl);
    memcpy(r->data + hl, body, bl);
    w->points += (long)n;
    free(body);
    free(raw);
    free(ts);
    free(tsp);
    free(sm);
    free(smp);
    free(lab);
    free(labp);
    free(txt);
}

/* Reads one HTTP reply (status line, headers, Content-Length body); returns the status. */
static int read_reply(int fd, char *rb, size_t cap, size_t *have)
{
    for (;;) {
        char *end = memmem(rb, *have, "\r\n\r\n", 4);
        if (end) {
            size_t hlen = (size_t)(end - rb) + 4, clen = 0;
            int status = atoi(rb + 9);
            for (char *p = rb; p < end; p++)
                if (!strncasecmp(p, "\ncontent-length:", 16))
                    clen = strtoul(p + 16, NULL, 10);
            while (*have < hlen + clen) {
                ssize_t r = recv(fd, rb + *have, cap - *have, 0);
                if (r <= 0)
                    return -1;
                *have += (size_t)r;
            }
            memmove(rb, rb + hlen + clen, *have - hlen - clen);
            *have -= hlen + clen;
            return status;
        }
        if (*have == cap)
            return -1;
        ssize_t r = recv(fd, rb + *have, cap - *have, 0);
        if (r <= 0)
            return -1;
        *have += (size_t)r;
    }
}

static void *run_conn(void *arg)
{
    struct conn_work *w = arg;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &a.sin_addr);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        fprintf(stderr, "promrw_bench: connect %s:%d: %s\n", host, port, strerror(errno));
        w->failed = 1;
        return NULL;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    static __thread char rb[65536];
    size_t have = 0;
    for (size_t i = 0; i < w->nreqs; i++) {
        for (size_t off = 0; off < w->reqs[i].len;) {
            ssize_t s = send(fd, w->reqs[i].data + off, w->reqs[i].len - off, MSG_NOSIGNAL);
            if (s <= 0) {
                w->failed = 1;
                close(fd);
                return NULL;
            }
            off += (size_t)s;
        }
        int st = read_reply(fd, rb, sizeof(rb), &have);
        if (st < 200 || st > 299) {
            fprintf(stderr, "promrw_bench: reply %d: %.*s\n", st, (int)(have < 200 ? have : 200),
                    rb);
            w->failed = 1;
            break;
        }
    }
    close(fd);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--list-metrics")) {
        for (size_t m = 0; m < sizeof(metric_names) / sizeof(metric_names[0]); m++)
            printf("%s\n", metric_names[m]);
        return 0;
    }
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--host"))
            host = v;
        else if (!strcmp(k, "--port"))
            port = atoi(v);
        else if (!strcmp(k, "--hosts"))
            hosts = atoi(v);
        else if (!strcmp(k, "--metrics"))
            metrics = atoi(v);
        else if (!strcmp(k, "--intervals"))
            intervals = atoi(v);
        else if (!strcmp(k, "--conns"))
            conns = atoi(v);
        else if (!strcmp(k, "--batch"))
            batch = atoi(v);
        else if (!strcmp(k, "--start"))
            start_ms = atoll(v) * 1000;
        else if (!strcmp(k, "--start-ms"))
            start_ms = atoll(v);
        else if (!strcmp(k, "--step-ms"))
            step_ms = atoll(v);
        else if (!strcmp(k, "--cpu-pid"))
            cpu_pid = atoi(v);
        else {
            fprintf(stderr, "promrw_bench: unknown option %s\n", k);
            return 2;
        }
    }
    if (port <= 0 || conns < 1 || conns > 64 || batch < 1 || hosts < 1 || metrics < 1 ||
        metrics > 20 || intervals < 1 || step_ms < 1 || step_ms > 86400000 ||
        (long long)hosts * metrics * intervals > 50000000LL) {
        fprintf(stderr, "promrw_bench: bad options (need --port; at most 5e7 points)\n");
        return 2;
    }
    struct conn_work *w = calloc((size_t)conns, sizeof(*w));
    int *hs = malloc((size_t)batch * sizeof(int)), *ms = malloc((size_t)batch * sizeof(int));
    int *ks = malloc((size_t)batch * sizeof(int));
    if (!w || !hs || !ms || !ks)
        die("malloc");
    /* series s = h * metrics + m always goes over connection s % conns, in time order */
    for (int c = 0; c < conns; c++) {
        size_t n = 0;
        for (int k = 0; k < intervals; k++)
            for (int s = c; s < hosts * metrics; s += conns) {
                hs[n] = s / metrics;
                ms[n] = s % metrics;
                ks[n] = k;
                if (++n == (size_t)batch) {
                    add_request(&w[c], hs, ms, ks, n);
                    n = 0;
                }
            }
        if (n)
            add_request(&w[c], hs, ms, ks, n);
    }
    pthread_t *th = calloc((size_t)conns, sizeof(*th));
    struct timespec t0, t1, wall0;
    long long ticks0 = cpu_ticks(cpu_pid);
    clock_gettime(CLOCK_REALTIME, &wall0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int c = 0; c < conns; c++)
        pthread_create(&th[c], NULL, run_conn, &w[c]);
    long total = 0;
    int failed = 0;
    for (int c = 0; c < conns; c++) {
        pthread_join(th[c], NULL);
        total += w[c].points;
        failed |= w[c].failed;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long long ticks1 = cpu_ticks(cpu_pid);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("points %ld seconds %.3f rate %.0f start_ns %lld cpu_ticks %lld %lld\n", total, s,
           (double)total / s, (long long)wall0.tv_sec * 1000000000LL + wall0.tv_nsec, ticks0,
           ticks1);
    for (int c = 0; c < conns; c++) {
        for (size_t i = 0; i < w[c].nreqs; i++)
            free(w[c].reqs[i].data);
        free(w[c].reqs);
    }
    free(w);
    free(th);
    free(hs);
    free(ms);
    free(ks);
    return failed ? 1 : 0;
}
