/* tsd_load.c - deterministic TSD load generator for tools/bench/tsd_compare.sh and
 * tools/bench/query_bench.py.
 *
 * A devops-like workload: --hosts H machines x --metrics M metrics, each series tagged
 * host, dc, rack, service, os; one point per series every --step seconds (10 unless told; 60
 * for --size Nx30d) for --intervals K intervals starting at --start (epoch seconds).
 * Values are a fixed function of (host, metric, interval),
 * so every run and every target gets the same bytes. Each series always goes over the same
 * connection (series h*M+m -> connection (h*M+m) % C), in time order.
 *
 * The whole stream is generated before the clock starts. Modes:
 *   telnet: C TCP connections send `put` lines; with --ack each then sends `version` and waits
 *           for its first reply line (for ctsdb: every earlier put of that connection is in the
 *           write-ahead log);
 *   http:   C keep-alive connections POST /api/put JSON arrays of --batch points and read each
 *           reply (ctsdb answers 204 once the points are in the log).
 * Output (stdout): `points N seconds S rate R` (send start to last ack); --count prints the
 * stream's point count alone, without generating it.
 * Build: cc -O2 -pthread -o tsd_load tools/bench/tsd_load.c */
#define _GNU_SOURCE
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

struct buf {
    char *p;
    size_t n, cap;
};

static void buf_add(struct buf *b, const char *s, size_t n)
{
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 1 << 20;
        while (nc < b->n + n)
            nc *= 2;
        b->p = realloc(b->p, nc);
        if (!b->p) {
            perror("realloc");
            exit(2);
        }
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

static const char *host = "127.0.0.1";
static int port = 4242, conns = 4, hosts = 500, metrics = 20, intervals = 30, batch = 500;
static int step = 10; /* seconds between two points of a series */
static long long start = 1356998400;
static int http_mode = 0, ack = 0;

static const char *const metric_names[] = {
    "cpu.user",     "cpu.system",   "cpu.idle",        "cpu.iowait",       "mem.used",
    "mem.free",     "mem.cached",   "disk.read_bytes", "disk.write_bytes", "disk.used_pct",
    "net.rx_bytes", "net.tx_bytes", "net.rx_errors",   "net.tx_errors",    "load.1m",
    "load.5m",      "load.15m",     "procs.running",   "procs.blocked",    "tcp.established"};

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* The value model: what real host collectors send, a fixed function of (host, metric,
 * interval). Per metric kind:
 *   counters (disk/net bytes): grow ~1.5e7 a point (1.0e7 .. 2.0e7, so always increasing),
 *     from a per-series base; integers;
 *   byte gauges (mem.*): near 5e9, a level that jumps by up to +-5e8 every 30 points (large
 *     steps) plus up to 1 MiB of noise; integers;
 *   error counters: grow by 0 or 1 now and then; integers;
 *   small integer gauges (procs, tcp): 0 .. 500;
 *   2-decimal gauges (cpu, load, disk.used_pct): a slow wave per series plus noise, 0 .. 100. */
static void value_of(int h, int m, int k, char *out, size_t n)
{
    uint64_t series = mix((uint64_t)h * 1000003u + (uint64_t)m);
    uint64_t noise = mix(series ^ ((uint64_t)k * 0x9e3779b97f4a7c15ULL));
    int mm = m % 20;
    if (mm == 7 || mm == 8 || mm == 10 || mm == 11) {
        /* sum of k steps of 1e7 + (per-step part): closed form with a bounded jitter that
         * keeps it monotonic: step k adds 1.5e7 on average */
        uint64_t base = series % 1000000000000ULL;
        uint64_t v = base + (uint64_t)k * 15000000u + noise % 5000000u;
        snprintf(out, n, "%llu", (unsigned long long)v);
    } else if (mm >= 4 && mm <= 6) {
        uint64_t level = mix(series ^ (uint64_t)(k / 30)) % 1000000000u;
        uint64_t v = 4500000000ULL + level + noise % 1048576u;
        snprintf(out, n, "%llu", (unsigned long long)v);
    } else if (mm == 12 || mm == 13) {
        snprintf(out, n, "%llu", (unsigned long long)(series % 1000 + (uint64_t)k / 97));
    } else if (mm >= 17) {
        snprintf(out, n, "%llu", (unsigned long long)(noise % 500));
    } else {
        double phase = (double)(series % 6283) / 1000.0;
        double v = 50.0 + 30.0 * __builtin_sin((double)k / 360.0 + phase) +
                   (double)(noise % 2000) / 100.0 - 10.0;
        if (v < 0)
            v = 0;
        if (v > 100)
            v = 100;
        snprintf(out, n, "%.2f", v);
    }
}

static void tags_of(int h, char *out, size_t n)
{
    snprintf(out, n, "host=host_%d dc=dc_%d rack=rack_%d service=svc_%d os=os_%d", h, h % 3, h % 40,
             h % 10, h % 2);
}

static int connect_to(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, host, &a.sin_addr);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        fprintf(stderr, "tsd_load: connect %s:%d: %s\n", host, port, strerror(errno));
        exit(2);
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static void send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            fprintf(stderr, "tsd_load: send: %s\n", strerror(errno));
            exit(2);
        }
        p += w;
        n -= (size_t)w;
    }
}

/* Reads one HTTP response head + body (Content-Length) and returns the status. */
static int read_response(int fd, char *rb, size_t cap, size_t *have)
{
    for (;;) {
        char *end = memmem(rb, *have, "\r\n\r\n", 4);
        if (end) {
            size_t head = (size_t)(end - rb) + 4;
            int status = atoi(rb + 9);
            size_t clen = 0;
            char *cl = memmem(rb, head, "Content-Length:", 15);
            if (cl)
                clen = (size_t)atol(cl + 15);
            while (*have < head + clen) {
                ssize_t r = recv(fd, rb + *have, cap - *have, 0);
                if (r <= 0)
                    return -1;
                *have += (size_t)r;
            }
            memmove(rb, rb + head + clen, *have - head - clen);
            *have -= head + clen;
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

struct worker {
    int id;
    struct buf stream; /* telnet: all lines; http: concatenated request bodies */
    size_t *bodies;    /* http: body boundaries */
    size_t nbodies;
    long points;
    pthread_t th;
    int failed;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    int fd = connect_to();
    if (!http_mode) {
        send_all(fd, w->stream.p, w->stream.n);
        if (ack) {
            send_all(fd, "version\n", 8);
            char c;
            ssize_t r;
            while ((r = recv(fd, &c, 1, 0)) == 1 && c != '\n') {
            }
            if (r != 1)
                w->failed = 1;
        }
    } else {
        static __thread char rb[65536];
        size_t have = 0, off = 0;
        for (size_t i = 0; i < w->nbodies; i++) {
            size_t len = w->bodies[i] - off;
            char head[256];
            int hn = snprintf(head, sizeof(head),
                              "POST /api/put HTTP/1.1\r\nHost: %s\r\nContent-Type: "
                              "application/json\r\nContent-Length: %zu\r\n\r\n",
                              host, len);
            send_all(fd, head, (size_t)hn);
            send_all(fd, w->stream.p + off, len);
            off = w->bodies[i];
            int st = read_response(fd, rb, sizeof(rb), &have);
            if (st < 200 || st >= 300) {
                fprintf(stderr, "tsd_load: HTTP status %d\n", st);
                w->failed = 1;
                break;
            }
        }
    }
    close(fd);
    return NULL;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--host") && v)
            host = argv[++i];
        else if (!strcmp(a, "--port") && v)
            port = atoi(argv[++i]);
        else if (!strcmp(a, "--conns") && v)
            conns = atoi(argv[++i]);
        else if (!strcmp(a, "--hosts") && v)
            hosts = atoi(argv[++i]);
        else if (!strcmp(a, "--metrics") && v)
            metrics = atoi(argv[++i]);
        else if (!strcmp(a, "--intervals") && v)
            intervals = atoi(argv[++i]);
        else if (!strcmp(a, "--size") && v) {
            /* SERIESxDURATION: 20 metrics a host, one point per 10 s (per 60 s for 30d) */
            char *x = NULL;
            long series = strtol(argv[++i], &x, 10);
            int dur = 0;
            if (x && !strcmp(x, "x1d"))
                dur = 8640;
            else if (x && !strcmp(x, "x1h"))
                dur = 360;
            else if (x && !strcmp(x, "x10m"))
                dur = 60;
            else if (x && !strcmp(x, "x30d")) {
                dur = 43200;
                step = 60;
            }
            if (series < 20 || series % 20 != 0 || dur == 0) {
                fprintf(stderr, "tsd_load: --size wants N x 1d|1h|10m|30d, N a multiple of 20\n");
                return 2;
            }
            hosts = (int)(series / 20);
            metrics = 20;
            intervals = dur;
        } else if (!strcmp(a, "--step") && v)
            step = atoi(argv[++i]);
        else if (!strcmp(a, "--batch") && v)
            batch = atoi(argv[++i]);
        else if (!strcmp(a, "--start") && v)
            start = atoll(argv[++i]);
        else if (!strcmp(a, "--mode") && v)
            http_mode = !strcmp(argv[++i], "http");
        else if (!strcmp(a, "--ack"))
            ack = 1;
        else if (!strcmp(a, "--count")) /* print the stream's point count and exit */
            ack = -2;
        else if (!strcmp(a, "--print")) { /* dump the telnet stream to stdout and exit */
            conns = 1;
            http_mode = 0;
            ack = -1;
        } else {
            fprintf(stderr, "usage: tsd_load [--host H] [--port P] [--mode telnet|http] [--ack]\n"
                            "  [--conns C] [--hosts H] [--metrics M] [--intervals K] [--step S]\n"
                            "  [--batch B] [--size 2000x1d|100000x1h|1000000x10m|200x30d]\n"
                            "  [--start EPOCH_S] [--print | --count]\n");
            return 2;
        }
    }
    if (metrics > 20)
        metrics = 20;
    if (step < 1) {
        fprintf(stderr, "tsd_load: --step wants seconds >= 1\n");
        return 2;
    }
    if (ack == -2) { /* without generating it: a large size's stream is gigabytes */
        printf("%lld\n", (long long)hosts * metrics * intervals);
        return 0;
    }
    struct worker *w = calloc((size_t)conns, sizeof(*w));
    int *inbatch = calloc((size_t)conns, sizeof(int));
    char line[512], val[64], tags[256];
    for (int k = 0; k < intervals; k++) {
        for (int h = 0; h < hosts; h++) {
            tags_of(h, tags, sizeof(tags));
            for (int m = 0; m < metrics; m++) {
                int c = (h * metrics + m) % conns;
                value_of(h, m, k, val, sizeof(val));
                long long ts = start + (long long)k * step;
                int n;
                if (!http_mode) {
                    n = snprintf(line, sizeof(line), "put sys.%s %lld %s %s\n", metric_names[m], ts,
                                 val, tags);
                } else {
                    n = snprintf(line, sizeof(line),
                                 "%s{\"metric\":\"sys.%s\",\"timestamp\":%lld,\"value\":%s,"
                                 "\"tags\":{\"host\":\"host_%d\",\"dc\":\"dc_%d\",\"rack\":"
                                 "\"rack_%d\",\"service\":\"svc_%d\",\"os\":\"os_%d\"}}",
                                 inbatch[c] == 0 ? "[" : ",", metric_names[m], ts, val, h, h % 3,
                                 h % 40, h % 10, h % 2);
                }
                buf_add(&w[c].stream, line, (size_t)n);
                w[c].points++;
                if (http_mode && ++inbatch[c] == batch) {
                    buf_add(&w[c].stream, "]", 1);
                    w[c].bodies = realloc(w[c].bodies, (w[c].nbodies + 1) * sizeof(size_t));
                    w[c].bodies[w[c].nbodies++] = w[c].stream.n;
                    inbatch[c] = 0;
                }
            }
        }
    }
    for (int c = 0; http_mode && c < conns; c++) {
        if (inbatch[c] > 0) {
            buf_add(&w[c].stream, "]", 1);
            w[c].bodies = realloc(w[c].bodies, (w[c].nbodies + 1) * sizeof(size_t));
            w[c].bodies[w[c].nbodies++] = w[c].stream.n;
        }
    }
    if (ack == -1) {
        fwrite(w[0].stream.p, 1, w[0].stream.n, stdout);
        return 0;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int c = 0; c < conns; c++) {
        w[c].id = c;
        pthread_create(&w[c].th, NULL, worker_main, &w[c]);
    }
    long total = 0;
    int failed = 0;
    for (int c = 0; c < conns; c++) {
        pthread_join(w[c].th, NULL);
        total += w[c].points;
        failed |= w[c].failed;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("points %ld seconds %.3f rate %.0f\n", total, s, (double)total / s);
    return failed ? 1 : 0;
}
