/* http_timer.c - a keep-alive HTTP/1.1 client in C that times requests for query_bench.py
 * (--client c), so that a query's time is the server's answer plus loopback and not the
 * benchmark script's own request and parsing code (tens of microseconds in Python, which
 * dominated the tiniest queries on both sides).
 *
 * It is a co-process: `http_timer HOST:PORT [HOST:PORT ...]` opens one connection per
 * endpoint (TCP_NODELAY, reconnected when the server closes it), then reads commands from
 * stdin and answers each on stdout:
 *   in:  "<conn> <method> <path> <body length>\n" followed by that many body bytes
 *   out: "<ns> <status> <body length>\n" followed by the body bytes (chunked answers are
 *        de-chunked), or "error <message>\n"
 * <ns> is CLOCK_MONOTONIC from just before the request is written to the moment the answer's
 * last byte has been read; the parse of the answer (status line, Content-Length or chunked
 * framing) is part of it, as in any client. Bounded: a request line of at most 64 KiB, a body
 * of at most 64 MiB, a 600 s receive timeout.
 * Build: cc -O2 -o http_timer tools/bench/http_timer.c */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 16
#define MAX_LINE  (64 << 10)
#define MAX_BODY  (64u << 20)

struct conn {
    char host[64];
    int port;
    int fd;
    char *buf; /* received, not yet consumed: buf[off, len) */
    size_t off, len, cap;
};

static struct conn conns[MAX_CONNS];
static char *body; /* the answer's body, de-chunked */
static size_t body_len, body_cap;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *grow(void *p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return p;
    size_t n = *cap ? *cap : 1 << 16;
    while (n < need)
        n *= 2;
    void *q = realloc(p, n);
    if (!q) {
        fprintf(stderr, "http_timer: out of memory\n");
        exit(2);
    }
    *cap = n;
    return q;
}

static int conn_open(struct conn *c)
{
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)c->port);
    int one = 1;
    struct timeval tv = {600, 0};
    if (c->fd < 0 || inet_pton(AF_INET, c->host, &a.sin_addr) != 1 ||
        connect(c->fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0 ||
        setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0) {
        if (c->fd >= 0)
            close(c->fd);
        c->fd = -1;
        return -1;
    }
    c->off = c->len = 0;
    return 0;
}

static void conn_close(struct conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->off = c->len = 0;
}

/* Reads more bytes into c->buf; 0 at the end of the stream, -1 on error. */
static ssize_t conn_fill(struct conn *c)
{
    if (c->off > 0 && c->off == c->len)
        c->off = c->len = 0;
    c->buf = grow(c->buf, &c->cap, c->len + (1 << 16));
    ssize_t n;
    do
        n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
    while (n < 0 && errno == EINTR);
    if (n > 0)
        c->len += (size_t)n;
    return n;
}

/* The next CRLF-terminated line (NUL-terminated in place, without CRLF), or NULL. */
static char *conn_line(struct conn *c)
{
    for (;;) {
        char *s = c->buf + c->off;
        char *e = memmem(s, c->len - c->off, "\r\n", 2);
        if (e) {
            *e = '\0';
            c->off = (size_t)(e + 2 - c->buf);
            return s;
        }
        if (c->len - c->off > MAX_LINE || conn_fill(c) <= 0)
            return NULL;
    }
}

/* Appends n bytes of the stream to the answer's body. */
static int conn_take(struct conn *c, size_t n)
{
    if (body_len + n > MAX_BODY)
        return -1;
    body = grow(body, &body_cap, body_len + n);
    while (n > 0) {
        if (c->off == c->len && conn_fill(c) <= 0)
            return -1;
        size_t k = c->len - c->off < n ? c->len - c->off : n;
        memcpy(body + body_len, c->buf + c->off, k);
        body_len += k;
        c->off += k;
        n -= k;
    }
    return 0;
}

/* Reads one answer; its status, or -1. *close_after when the server ends the connection. */
static int read_answer(struct conn *c, int *close_after)
{
    char *l = conn_line(c);
    if (!l || strncmp(l, "HTTP/1.", 7) != 0 || strlen(l) < 12)
        return -1;
    int status = atoi(l + 9);
    long long length = -1;
    int chunked = 0;
    *close_after = 0;
    while ((l = conn_line(c)) && *l) {
        char *v = strchr(l, ':');
        if (!v)
            continue;
        *v++ = '\0';
        v += strspn(v, " \t");
        if (!strcasecmp(l, "content-length"))
            length = atoll(v);
        else if (!strcasecmp(l, "transfer-encoding") && strcasestr(v, "chunked"))
            chunked = 1;
        else if (!strcasecmp(l, "connection") && !strcasecmp(v, "close"))
            *close_after = 1;
    }
    if (!l)
        return -1;
    body_len = 0;
    if (chunked) {
        for (;;) {
            l = conn_line(c);
            if (!l)
                return -1;
            unsigned long n = strtoul(l, NULL, 16);
            if (n == 0) {
                while ((l = conn_line(c)) && *l) /* trailers, then the blank line */
                    ;
                return l ? status : -1;
            }
            if (conn_take(c, n) != 0 || !(l = conn_line(c)) || *l)
                return -1;
        }
    }
    if (length >= 0)
        return conn_take(c, (size_t)length) == 0 ? status : -1;
    /* neither: the body runs to the end of the stream */
    for (;;) {
        if (conn_take(c, c->len - c->off) != 0)
            return -1;
        ssize_t n = conn_fill(c);
        if (n == 0)
            break;
        if (n < 0)
            return -1;
    }
    *close_after = 1;
    return status;
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int nconns = argc - 1;
    if (nconns < 1 || nconns > MAX_CONNS) {
        fprintf(stderr, "usage: http_timer HOST:PORT [HOST:PORT ...] (at most %d)\n", MAX_CONNS);
        return 2;
    }
    for (int i = 0; i < nconns; i++) {
        struct conn *c = &conns[i];
        char *colon = strrchr(argv[i + 1], ':');
        if (!colon || (size_t)(colon - argv[i + 1]) >= sizeof(c->host)) {
            fprintf(stderr, "http_timer: bad endpoint %s\n", argv[i + 1]);
            return 2;
        }
        memcpy(c->host, argv[i + 1], (size_t)(colon - argv[i + 1]));
        c->port = atoi(colon + 1);
        c->fd = -1;
    }
    static char line[MAX_LINE];
    char *req = NULL, *rbody = NULL;
    size_t req_cap = 0, rbody_cap = 0;
    while (fgets(line, sizeof(line), stdin)) {
        int ci;
        char method[16], path[MAX_LINE];
        unsigned long blen;
        if (sscanf(line, "%d %15s %65535s %lu", &ci, method, path, &blen) != 4 || ci < 0 ||
            ci >= nconns || blen > MAX_BODY) {
            fprintf(stderr, "http_timer: bad command: %s", line);
            return 2;
        }
        rbody = grow(rbody, &rbody_cap, blen + 1);
        if (fread(rbody, 1, blen, stdin) != blen) {
            fprintf(stderr, "http_timer: short body\n");
            return 2;
        }
        struct conn *c = &conns[ci];
        req = grow(req, &req_cap, strlen(path) + blen + 256);
        int hl = sprintf(req, "%s %s HTTP/1.1\r\nHost: %s:%d\r\nAccept-Encoding: identity\r\n",
                         method, path, c->host, c->port);
        if (blen > 0 || strcmp(method, "GET") != 0)
            hl += sprintf(req + hl, "Content-Length: %lu\r\n", blen);
        hl += sprintf(req + hl, "\r\n");
        memcpy(req + hl, rbody, blen);
        if (c->fd < 0 && conn_open(c) != 0) {
            printf("error cannot connect to %s:%d: %s\n", c->host, c->port, strerror(errno));
            fflush(stdout);
            continue;
        }
        int close_after = 0;
        uint64_t t0 = now_ns();
        int status =
            send_all(c->fd, req, (size_t)hl + blen) == 0 ? read_answer(c, &close_after) : -1;
        uint64_t dt = now_ns() - t0;
        if (status < 0) {
            conn_close(c);
            printf("error request on connection %d failed\n", ci);
            fflush(stdout);
            continue;
        }
        if (close_after)
            conn_close(c);
        printf("%llu %d %zu\n", (unsigned long long)dt, status, body_len);
        fwrite(body, 1, body_len, stdout);
        fflush(stdout);
    }
    return 0;
}
