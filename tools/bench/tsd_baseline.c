/* tsd_baseline.c - the floor for TSD ingest: a bare C server that only reads the telnet stream
 * on loopback and splits it into lines and space-separated fields (no parsing of numbers, no
 * storage). tsd_compare.sh runs tsd_load against it to measure the rate at which the same
 * stream can merely be read and split; the TSD's target is at least half of that.
 * It answers a `version` line with one line so that tsd_load --ack works unchanged, prints
 * `listening on 127.0.0.1:PORT` on stderr, and on SIGTERM prints `lines N fields F` and exits.
 * Build: cc -O2 -pthread -o tsd_baseline tools/bench/tsd_baseline.c */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static atomic_long total_lines, total_fields;

static void *conn_main(void *arg)
{
    int fd = (int)(long)arg;
    static __thread char buf[1 << 16];
    size_t have = 0;
    long lines = 0, fields = 0;
    for (;;) {
        ssize_t r = recv(fd, buf + have, sizeof(buf) - have, 0);
        if (r <= 0)
            break;
        have += (size_t)r;
        char *p = buf, *end = buf + have;
        for (;;) {
            char *nl = memchr(p, '\n', (size_t)(end - p));
            if (!nl)
                break;
            /* split into fields */
            char *f = p;
            int nf = 0;
            while (f < nl) {
                char *sp = memchr(f, ' ', (size_t)(nl - f));
                nf++;
                if (!sp)
                    break;
                f = sp + 1;
            }
            fields += nf;
            lines++;
            if (nl - p == 7 && !memcmp(p, "version", 7))
                (void)!write(fd, "baseline\n", 9);
            p = nl + 1;
        }
        have = (size_t)(end - p);
        memmove(buf, p, have);
        if (have == sizeof(buf))
            have = 0; /* an over-long line: drop it */
    }
    atomic_fetch_add(&total_lines, lines);
    atomic_fetch_add(&total_fields, fields);
    close(fd);
    return NULL;
}

static void on_term(int sig)
{
    (void)sig;
    char msg[128];
    int n = snprintf(msg, sizeof(msg), "lines %ld fields %ld\n", atomic_load(&total_lines),
                     atomic_load(&total_fields));
    (void)!write(1, msg, (size_t)n);
    _exit(0);
}

int main(void)
{
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    socklen_t al = sizeof(a);
    if (bind(ls, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(ls, 128) != 0 ||
        getsockname(ls, (struct sockaddr *)&a, &al) != 0) {
        perror("tsd_baseline");
        return 1;
    }
    fprintf(stderr, "listening on 127.0.0.1:%d\n", ntohs(a.sin_port));
    for (;;) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0)
            continue;
        pthread_t th;
        pthread_create(&th, NULL, conn_main, (void *)(long)fd);
        pthread_detach(th);
    }
}
