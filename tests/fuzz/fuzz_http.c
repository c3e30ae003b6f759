/* fuzz_http.c - libFuzzer target for the TSD's request path: HTTP framing (request line,
 * headers, chunked and gzip bodies, pipelining), routing and the handlers behind it, and the
 * telnet framing for inputs that do not start with an upper-case letter.
 *
 * The real TSD runs in this process (started once, on 127.0.0.1, a free port and a temporary
 * data directory); each input is sent on a fresh loopback connection, the write side is shut,
 * and the reply is read until the TSD closes or one second passes. A crash, a sanitizer report
 * or a TSD that stops answering fails the run. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "tsd/conf.h"
#include "tsd/tsd.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int fuzz_port;
static char fuzz_dir[64];

/* Removes the TSD's temporary data directory when libFuzzer exits. */
static void fuzz_cleanup(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fuzz_dir);
    if (system(cmd) != 0) {
        /* nothing more to do at exit */
    }
}

static void *fuzz_tsd_main(void *arg)
{
    struct conf *c = arg;
    struct ct_err err = {0};
    if (tsd_run(c, &err) != CT_OK)
        fprintf(stderr, "fuzz_http: tsd_run: %s\n", err.msg);
    abort(); /* the TSD must not stop while the fuzzer runs */
    return NULL;
}

static int fuzz_connect(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)fuzz_port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int fuzz_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        abort();
    close(fd);
    return ntohs(a.sin_port);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    snprintf(fuzz_dir, sizeof fuzz_dir, "/tmp/ctsdb-fuzz-http-XXXXXX");
    if (!mkdtemp(fuzz_dir))
        abort();
    atexit(fuzz_cleanup);
    char data[128], port[16];
    snprintf(data, sizeof data, "%s/data", fuzz_dir);
    fuzz_port = fuzz_free_port();
    snprintf(port, sizeof port, "%d", fuzz_port);
    struct conf *c = NULL;
    struct ct_err err = {0};
    const char *kv[][2] = {{"tsd.network.port", port},
                           {"tsd.network.bind", "127.0.0.1"},
                           {"tsd.storage.directory", data},
                           {"tsd.logging.level", "error"},
                           {"tsd.http.request.enable_chunked", "true"},
                           {"tsd.core.socket.timeout", "2"},
                           {"tsd.storage.block_cache_bytes", "1048576"},
                           {"tsd.storage.memstore_flush_bytes", "1048576"}};
    if (conf_new(&c, &err) != CT_OK)
        abort();
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        if (conf_set(c, kv[i][0], kv[i][1], NULL, &err) != CT_OK)
            abort();
    pthread_t th;
    if (pthread_create(&th, NULL, fuzz_tsd_main, c) != 0)
        abort();
    for (int i = 0; i < 200; i++) { /* up to 10 s for the TSD to listen */
        int fd = fuzz_connect();
        if (fd >= 0) {
            close(fd);
            return 0;
        }
        usleep(50000);
    }
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = fuzz_connect();
    if (fd < 0)
        abort(); /* the TSD stopped answering */
    size_t off = 0;
    while (off < size) {
        ssize_t n = send(fd, data + off, size - off, MSG_NOSIGNAL);
        if (n <= 0)
            break; /* the TSD may close a connection it refuses */
        off += (size_t)n;
    }
    shutdown(fd, SHUT_WR);
    char buf[65536];
    for (int i = 0; i < 64; i++) {
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0)
            break;
    }
    close(fd);
    return 0;
}
