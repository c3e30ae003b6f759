/* tsd_load.c - deterministic TSD load generator for tools/bench/tsd_compare.sh and
 * tools/bench/query_bench.py.
 *
 * A devops-like workload: --hosts H machines x --metrics M metrics, each series tagged
 * host, dc, rack, service, os; one point per series every --step seconds (10 unless told; 60
 * for --size Nx30d) for --intervals K intervals starting at --start (epoch seconds).
 * Values are a fixed function of (host, metric, interval),
 * so every run and every target gets the same bytes. Each series always goes over the same
 * connection (series h*M+m -> connection (h*M+m) % C), in time order: interval k of every
 * series of a connection before interval k+1.
 *
 * Memory: the stream is never held whole. Each connection's part is produced in bounded pieces
 * (a 1 MiB chunk of telnet lines, one HTTP request of --batch points), so the tool's RSS stays
 * a few MiB at any size (it prints its peak, maxrss_kb).
 * Three ways to run:
 *   --gen DIR     writes the stream once, one file per connection (DIR/conn<c>.telnet holds
 *                 the `put` lines; DIR/conn<c>.http holds complete HTTP requests, with their end
 *                 offsets as native uint64 in DIR/conn<c>.idx) and DIR/meta (`mode conns
 *                 points`), then exits: generation happens before any clock starts;
 *   --replay DIR  sends what --gen wrote (sendfile from the page cache), timed alone: the rate
 *                 does not include generating the stream; the mode, connection count and point
 *                 count come from DIR/meta;
 *   neither       generates each connection's part on the fly in its sending thread (chunk by
 *                 chunk: generation is inside the timed window, as query_bench.py uses it).
 * Sending: telnet: C TCP connections send `put` lines; with --ack each then sends `version` and
 *   waits for its first reply line (for ctsdb: every earlier put of that connection is in the
 *   write-ahead log); http: C keep-alive connections POST /api/put JSON arrays of --batch points,
 *   one request at a time, and read each reply (ctsdb answers 204 once the points are logged).
 * Live streams: `--start now` places the stream at the current time when it is generated: its
 *   last interval is the current second rounded down to --step, the first (--intervals - 1)
 *   steps before (tsd_compare.sh LIVE=1: the points then belong to the open hours a TSD keeps in
 *   its ingest head, not to closed hours it backfills); `--start now-N` ends it N seconds
 *   earlier. DIR/meta records the start, step and intervals the stream was made with.
 * Output (stdout): `points N seconds S rate R maxrss_kb X` (send start to last ack); --count
 * prints the stream's point count alone; --print writes the telnet stream (one connection) to
 * stdout.
 * Build: cc -O2 -pthread -o tsd_load tools/bench/tsd_load.c -lm */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK_BYTES (1u << 20) /* telnet: lines are produced and sent/written this much at once */

static const char *host = "127.0.0.1";
static int port = 4242, conns = 4, hosts = 500, metrics = 20, intervals = 30, batch = 500;
static int step = 10; /* seconds between two points of a series */
static long long start = 1356998400;
static int http_mode = 0, ack = 0;

static void die(const char *what, const char *arg)
{
    fprintf(stderr, "tsd_load: %s%s%s: %s\n", what, arg ? " " : "", arg ? arg : "",
            strerror(errno));
    exit(2);
}

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

/* ---- the stream, one connection's part at a time ---------------------------------------- */

/* Walks connection c's points: for k in intervals, for its series s = c, c + C, ... < H*M. */
struct gen {
    long s, nseries;
    int c, k;
};

static void gen_init(struct gen *g, int c)
{
    g->c = c;
    g->k = 0;
    g->s = c;
    g->nseries = (long)hosts * metrics;
    if (g->s >= g->nseries) /* more connections than series: this one sends nothing */
        g->k = intervals;
}

/* The next point as (h, m, k); 0 at the end. */
static int gen_next(struct gen *g, int *h, int *m, int *k)
{
    if (g->k >= intervals)
        return 0;
    *h = (int)(g->s / metrics);
    *m = (int)(g->s % metrics);
    *k = g->k;
    g->s += conns;
    if (g->s >= g->nseries) {
        g->s = g->c;
        g->k++;
    }
    return 1;
}

static int fmt_telnet(char *out, size_t cap, int h, int m, int k)
{
    char val[64], tags[256];
    value_of(h, m, k, val, sizeof(val));
    tags_of(h, tags, sizeof(tags));
    return snprintf(out, cap, "put sys.%s %lld %s %s\n", metric_names[m],
                    start + (long long)k * step, val, tags);
}

static int fmt_json(char *out, size_t cap, int first, int h, int m, int k)
{
    char val[64];
    value_of(h, m, k, val, sizeof(val));
    return snprintf(out, cap,
                    "%s{\"metric\":\"sys.%s\",\"timestamp\":%lld,\"value\":%s,"
                    "\"tags\":{\"host\":\"host_%d\",\"dc\":\"dc_%d\",\"rack\":"
                    "\"rack_%d\",\"service\":\"svc_%d\",\"os\":\"os_%d\"}}",
                    first ? "[" : ",", metric_names[m], start + (long long)k * step, val, h, h % 3,
                    h % 40, h % 10, h % 2);
}

/* Fills buf (cap >= CHUNK_BYTES + 512) with whole telnet lines up to CHUNK_BYTES; returns the
 * bytes, 0 at the end; *points counts the lines. */
static size_t gen_telnet_chunk(struct gen *g, char *buf, long *points)
{
    size_t n = 0;
    int h, m, k;
    while (n < CHUNK_BYTES && gen_next(g, &h, &m, &k)) {
        n += (size_t)fmt_telnet(buf + n, 512, h, m, k);
        (*points)++;
    }
    return n;
}

/* Writes one complete HTTP request of up to --batch points into buf (cap >= batch * 512 +
 * 512); returns its length, 0 at the end. */
static size_t gen_http_request(struct gen *g, char *buf, long *points)
{
    char head[256];
    size_t body = 256; /* the body is built after room for the head, then moved next to it */
    int h, m, k, i;
    for (i = 0; i < batch && gen_next(g, &h, &m, &k); i++) {
        body += (size_t)fmt_json(buf + body, 512, i == 0, h, m, k);
        (*points)++;
    }
    if (i == 0)
        return 0;
    buf[body++] = ']';
    size_t blen = body - 256;
    int hn = snprintf(head, sizeof(head),
                      "POST /api/put HTTP/1.1\r\nHost: %s\r\nContent-Type: "
                      "application/json\r\nContent-Length: %zu\r\n\r\n",
                      host, blen);
    memmove(buf + hn, buf + 256, blen);
    memcpy(buf, head, (size_t)hn);
    return (size_t)hn + blen;
}

static size_t gen_buf_bytes(void)
{
    size_t http = (size_t)batch * 512 + 1024;
    return http > CHUNK_BYTES + 1024 ? http : CHUNK_BYTES + 1024;
}

/* ---- sending ---------------------------------------------------------------------------- */

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
        if (w <= 0)
            die("send", NULL);
        p += w;
        n -= (size_t)w;
    }
}

/* Sends bytes [off, end) of file ffd to socket fd. */
static void send_file_range(int fd, int ffd, off_t off, off_t end)
{
    while (off < end) {
        ssize_t w = sendfile(fd, ffd, &off, (size_t)(end - off));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO; /* the file is shorter than its index says */
            die("sendfile", NULL);
        }
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
            if (head + clen > cap)
                return -1;
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

/* After a connection's last put: `version`, then its first reply line. 0 when it came. */
static int wait_ack(int fd)
{
    char c;
    ssize_t r;
    send_all(fd, "version\n", 8);
    while ((r = recv(fd, &c, 1, 0)) == 1 && c != '\n') {
    }
    return r == 1 ? 0 : -1;
}

static int check_status(int st)
{
    if (st >= 200 && st < 300)
        return 0;
    fprintf(stderr, "tsd_load: HTTP status %d\n", st);
    return -1;
}

enum run_kind {
    RUN_DIRECT, /* generate and send, chunk by chunk */
    RUN_GEN,    /* generate into files */
    RUN_REPLAY, /* send the files */
};

struct worker {
    int id;
    enum run_kind kind;
    const char *dir;
    long points;
    pthread_t th;
    int failed;
};

static void file_path(char *out, size_t cap, const char *dir, int c, const char *ext)
{
    snprintf(out, cap, "%s/conn%d.%s", dir, c, ext);
}

static void write_all(int fd, const char *p, size_t n, const char *path)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            die("write", path);
        p += w;
        n -= (size_t)w;
    }
}

static void run_gen(struct worker *w, char *buf)
{
    char path[4096], ipath[4096];
    struct gen g;
    size_t n;
    uint64_t end = 0;
    gen_init(&g, w->id);
    file_path(path, sizeof(path), w->dir, w->id, http_mode ? "http" : "telnet");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        die("open", path);
    int ifd = -1;
    if (http_mode) {
        file_path(ipath, sizeof(ipath), w->dir, w->id, "idx");
        ifd = open(ipath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (ifd < 0)
            die("open", ipath);
    }
    for (;;) {
        n = http_mode ? gen_http_request(&g, buf, &w->points)
                      : gen_telnet_chunk(&g, buf, &w->points);
        if (n == 0)
            break;
        write_all(fd, buf, n, path);
        if (http_mode) {
            end += n;
            write_all(ifd, (const char *)&end, sizeof(end), ipath);
        }
    }
    if (close(fd) != 0)
        die("close", path);
    if (ifd >= 0 && close(ifd) != 0)
        die("close", ipath);
}

static void run_direct(struct worker *w, char *buf)
{
    static __thread char rb[65536];
    struct gen g;
    size_t n, have = 0;
    int fd = connect_to();
    gen_init(&g, w->id);
    for (;;) {
        n = http_mode ? gen_http_request(&g, buf, &w->points)
                      : gen_telnet_chunk(&g, buf, &w->points);
        if (n == 0)
            break;
        send_all(fd, buf, n);
        if (http_mode && check_status(read_response(fd, rb, sizeof(rb), &have)) != 0) {
            w->failed = 1;
            break;
        }
    }
    if (!http_mode && ack && wait_ack(fd) != 0)
        w->failed = 1;
    close(fd);
}

static void run_replay(struct worker *w)
{
    static __thread char rb[65536];
    char path[4096], ipath[4096];
    struct stat st;
    size_t have = 0;
    file_path(path, sizeof(path), w->dir, w->id, http_mode ? "http" : "telnet");
    int ffd = open(path, O_RDONLY);
    if (ffd < 0 || fstat(ffd, &st) != 0)
        die("open", path);
    int fd = connect_to();
    if (!http_mode) {
        send_file_range(fd, ffd, 0, st.st_size);
        if (ack && wait_ack(fd) != 0)
            w->failed = 1;
    } else {
        file_path(ipath, sizeof(ipath), w->dir, w->id, "idx");
        FILE *idx = fopen(ipath, "rb");
        if (!idx)
            die("open", ipath);
        uint64_t end, off = 0;
        while (fread(&end, sizeof(end), 1, idx) == 1) {
            if (end <= off || end > (uint64_t)st.st_size) {
                fprintf(stderr, "tsd_load: %s: offset %llu out of order\n", ipath,
                        (unsigned long long)end);
                exit(2);
            }
            send_file_range(fd, ffd, (off_t)off, (off_t)end);
            off = end;
            if (check_status(read_response(fd, rb, sizeof(rb), &have)) != 0) {
                w->failed = 1;
                break;
            }
        }
        fclose(idx);
    }
    close(ffd);
    close(fd);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    char *buf = NULL;
    if (w->kind != RUN_REPLAY && !(buf = malloc(gen_buf_bytes())))
        die("malloc", NULL);
    if (w->kind == RUN_GEN)
        run_gen(w, buf);
    else if (w->kind == RUN_DIRECT)
        run_direct(w, buf);
    else
        run_replay(w);
    free(buf);
    return NULL;
}

/* DIR/meta: `telnet|http CONNS POINTS START STEP INTERVALS` (only the first three are read). */
static void read_meta(const char *dir, long *points)
{
    char path[4096], mode[16];
    snprintf(path, sizeof(path), "%s/meta", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        die("open", path);
    if (fscanf(f, "%15s %d %ld", mode, &conns, points) != 3 || conns < 1) {
        fprintf(stderr, "tsd_load: %s: not `mode conns points`\n", path);
        exit(2);
    }
    fclose(f);
    http_mode = !strcmp(mode, "http");
}

int main(int argc, char **argv)
{
    const char *gen_dir = NULL, *replay_dir = NULL;
    int print = 0, live = 0;
    long live_back = 0;
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
        else if (!strcmp(a, "--start") && v) {
            v = argv[++i];
            if (!strncmp(v, "now", 3)) { /* resolved below, once --step and --intervals are known */
                char *e = NULL;
                live_back = v[3] == '-' ? strtol(v + 4, &e, 10) : 0;
                if (live_back < 0 || (v[3] && (v[3] != '-' || !e || *e || e == v + 4))) {
                    fprintf(stderr, "tsd_load: --start wants EPOCH_S, now or now-SECONDS\n");
                    return 2;
                }
                live = 1;
            } else
                start = atoll(v);
        }
        else if (!strcmp(a, "--mode") && v)
            http_mode = !strcmp(argv[++i], "http");
        else if (!strcmp(a, "--ack"))
            ack = 1;
        else if (!strcmp(a, "--gen") && v)
            gen_dir = argv[++i];
        else if (!strcmp(a, "--replay") && v)
            replay_dir = argv[++i];
        else if (!strcmp(a, "--count")) /* print the stream's point count and exit */
            ack = -2;
        else if (!strcmp(a, "--print")) /* dump the telnet stream to stdout and exit */
            print = 1;
        else {
            fprintf(stderr, "usage: tsd_load [--host H] [--port P] [--mode telnet|http] [--ack]\n"
                            "  [--conns C] [--hosts H] [--metrics M] [--intervals K] [--step S]\n"
                            "  [--batch B] [--size 2000x1d|100000x1h|1000000x10m|200x30d]\n"
                            "  [--start EPOCH_S|now|now-S] [--gen DIR | --replay DIR | --print | --count]\n");
            return 2;
        }
    }
    if (metrics > 20)
        metrics = 20;
    if (step < 1 || conns < 1 || batch < 1 || hosts < 1 || metrics < 1 || intervals < 0) {
        fprintf(stderr, "tsd_load: --step, --conns, --batch, --hosts, --metrics want >= 1\n");
        return 2;
    }
    if (live) { /* the last interval at the current time (minus N), rounded down to the step */
        long long end = (long long)time(NULL) - live_back;
        start = end / step * step - (long long)(intervals > 0 ? intervals - 1 : 0) * step;
    }
    long expect = (long)hosts * metrics * intervals;
    if (ack == -2) { /* without generating it */
        printf("%ld\n", expect);
        return 0;
    }
    if (print) { /* one connection's telnet stream, chunk by chunk */
        struct gen g;
        long points = 0;
        size_t n;
        char *buf = malloc(gen_buf_bytes());
        if (!buf)
            die("malloc", NULL);
        conns = 1;
        http_mode = 0;
        gen_init(&g, 0);
        while ((n = gen_telnet_chunk(&g, buf, &points)) > 0)
            if (fwrite(buf, 1, n, stdout) != n)
                return 1; /* e.g. `| head`: the reader closed the pipe */
        free(buf);
        return 0;
    }
    enum run_kind kind = gen_dir ? RUN_GEN : replay_dir ? RUN_REPLAY : RUN_DIRECT;
    if (replay_dir)
        read_meta(replay_dir, &expect);
    if (gen_dir && mkdir(gen_dir, 0755) != 0 && errno != EEXIST)
        die("mkdir", gen_dir);
    struct worker *w = calloc((size_t)conns, sizeof(*w));
    if (!w)
        die("calloc", NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int c = 0; c < conns; c++) {
        w[c].id = c;
        w[c].kind = kind;
        w[c].dir = gen_dir ? gen_dir : replay_dir;
        if (pthread_create(&w[c].th, NULL, worker_main, &w[c]) != 0) {
            fprintf(stderr, "tsd_load: cannot start a thread\n");
            return 2;
        }
    }
    long total = 0;
    int failed = 0;
    for (int c = 0; c < conns; c++) {
        pthread_join(w[c].th, NULL);
        total += w[c].points;
        failed |= w[c].failed;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (kind == RUN_REPLAY)
        total = failed ? 0 : expect; /* replay does not parse what it sends */
    if (kind == RUN_GEN) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/meta", gen_dir);
        FILE *f = fopen(path, "w");
        if (!f ||
            fprintf(f, "%s %d %ld %lld %d %d\n", http_mode ? "http" : "telnet", conns, total,
                    start, step, intervals) < 0 ||
            fclose(f) != 0)
            die("write", path);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("points %ld seconds %.3f rate %.0f maxrss_kb %ld\n", total, s, (double)total / s,
           ru.ru_maxrss);
    free(w);
    return failed ? 1 : 0;
}
