/* telnet_micro.c - the telnet put path's parse-and-batch step in-process, for instruction counts:
 * reads a file of put lines (one connection's share of tsd_load's stream: `tsd_load --gen DIR
 * --conns 4` writes DIR/conn0.telnet) and sends its lines ROUNDS times through what telnet.c's
 * telnet_line does with a put on one connection: put_parse_line_memo with the connection's memo
 * (--no-memo: put_parse_line, every line parsed afresh), then the point into an ingest batch,
 * with its series key built from the memo when its tags came from there (ingest_batch_add_key),
 * else by ingest_batch_add. The pipeline's write function only marks points written. Under
 * callgrind with --toggle-collect=bench_lines the counts are the event loop's per-point parse,
 * check, series key and batch copy, without the loop's reads, the log or the store
 * (tools/bench/telnet_callgrind.sh).
 *
 * Usage: telnet_micro FILE [--rounds R] [--no-memo]   (default 1 round)
 * Prints lines, points written and lines refused; exits 1 if a line was refused or a point not
 * written. Never linked into bin/ctsdb. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsd/ingest.h"
#include "tsd/put.h"

#define MICRO_MAX_LINE 1024 /* telnet's line limit (tsd/tsd_int.h TELNET_MAX_LINE) */

static atomic_size_t micro_written;

static int micro_write(void *arg, struct ingest_batch *const *b, size_t nb, struct ct_err *err)
{
    (void)arg;
    (void)err;
    for (size_t i = 0; i < nb; i++)
        for (size_t k = 0; k < ingest_batch_count(b[i]); k++)
            ingest_batch_set_outcome(b[i], k, INGEST_WRITTEN, NULL);
    return CT_OK;
}

static void micro_done(void *arg, struct ingest_batch *b)
{
    size_t n = 0;
    for (size_t k = 0; k < ingest_batch_count(b); k++)
        n += ingest_batch_outcome(b, k, NULL) == INGEST_WRITTEN;
    atomic_fetch_add(&micro_written, n);
    ingest_batch_release(arg, b);
}

/* Adds p to *b (submitting a full batch and taking the next), as telnet_line does. */
static bool micro_add(struct ingest *g, struct ingest_batch **b, const struct put_point *p,
                      const struct put_memo *memo)
{
    char key[MICRO_MAX_LINE + PUT_MEMO_TEXT + 2];
    size_t klen = 0;
    uint64_t khash = 0;
    if (memo && memo->last && p->metric.len + 1 + memo->key_len <= sizeof(key)) {
        klen = put_memo_key_write(memo, p, key);
        khash = ingest_key_hash(g, key, klen);
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        bool ok =
            klen ? ingest_batch_add_key(*b, p, key, klen, khash, 1) : ingest_batch_add(*b, p, 1);
        if (ok)
            return true;
        ingest_submit(g, *b, micro_done, g);
        *b = ingest_batch_get(g);
    }
    return false;
}

/* Every line of text[0..len) once; returns the lines refused. */
static __attribute__((noinline)) size_t bench_lines(struct ingest *g, struct ingest_batch **b,
                                                    const char *text, size_t len,
                                                    struct put_memo *memo, struct put_point *p,
                                                    size_t *lines)
{
    static const struct put_rules rules = {8, NULL};
    char msg[4096];
    size_t refused = 0;
    for (const char *s = text, *end = text + len; s < end;) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
        enum put_status st = memo ? put_parse_line_memo(s, n, &rules, memo, p, msg, sizeof(msg))
                                  : put_parse_line(s, n, &rules, p, msg, sizeof(msg));
        if (st != PUT_OK || !micro_add(g, b, p, memo))
            refused++;
        ++*lines;
        s += n + 1;
    }
    return refused;
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    int rounds = 1;
    bool use_memo = true;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-memo"))
            use_memo = false;
        else if (!path && argv[i][0] != '-')
            path = argv[i];
        else {
            path = NULL; /* a usage error */
            break;
        }
    }
    if (!path || rounds < 1) {
        fprintf(stderr, "usage: telnet_micro FILE [--rounds R] [--no-memo]\n");
        return 2;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 2;
    }
    size_t cap = 1 << 20, len = 0;
    char *text = malloc(cap);
    for (size_t r; text && (r = fread(text + len, 1, cap - len, f)) > 0;) {
        len += r;
        if (len == cap) {
            char *t = realloc(text, cap *= 2);
            if (!t)
                free(text);
            text = t;
        }
    }
    fclose(f);
    struct put_point *p = malloc(sizeof(*p));
    struct put_memo *memo = calloc(1, sizeof(*memo));
    if (!text || !p || !memo)
        return 2;
    struct ingest_options o;
    ingest_options_init(&o);
    struct ct_err err = {0};
    struct ingest *g;
    if (ingest_new(&o, micro_write, NULL, &g, &err) != CT_OK) {
        fprintf(stderr, "telnet_micro: ingest_new: %s\n", err.msg);
        return 2;
    }
    struct ingest_batch *b = ingest_batch_get(g);
    size_t lines = 0, refused = 0;
    for (int r = 0; r < rounds; r++)
        refused += bench_lines(g, &b, text, len, use_memo ? memo : NULL, p, &lines);
    ingest_submit(g, b, micro_done, g);
    ingest_free(g); /* writes what was submitted; the done callbacks have run */
    size_t written = atomic_load(&micro_written);
    printf("lines %zu written %zu refused %zu\n", lines, written, refused);
    free(text);
    free(p);
    free(memo);
    return refused == 0 && written == lines ? 0 : 1;
}
