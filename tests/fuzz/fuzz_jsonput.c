/* fuzz_jsonput.c - libFuzzer target for the /api/put body reader (tsd/jsonput.c): any bytes are
 * either rejected with a message or walked point by point with every span inside the body or
 * the scratch buffer; then each point goes through the shared point checks (tsd/put.c). The
 * one-pass reader /api/put uses (jsonput_read, with its fast path) must answer as the
 * check-then-read pair (jsonput_parse): the same result, point count and message. */
#include <stdlib.h>
#include <string.h>

#include "tsd/jsonput.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_ctx {
    const char *body, *scratch;
    size_t len;
};

static int fuzz_in(const struct fuzz_ctx *c, struct put_str s)
{
    if (!s.p)
        return 1;
    return (s.p >= c->body && s.p + s.len <= c->body + c->len) ||
           (s.p >= c->scratch && s.p + s.len <= c->scratch + c->len + 1);
}

static int fuzz_point(void *arg, size_t index, struct jsonput_point *p)
{
    (void)index;
    const struct fuzz_ctx *c = arg;
    if (!fuzz_in(c, p->metric) || !fuzz_in(c, p->value) || !fuzz_in(c, p->timestamp))
        abort();
    for (size_t i = 0; i < p->ntags; i++)
        if (!fuzz_in(c, p->tagk[i]) || !fuzz_in(c, p->tagv[i]))
            abort();
    if (p->metric.p && p->value.p && p->ntags) {
        static struct put_point pt;
        memset(&pt, 0, sizeof(pt));
        pt.metric = p->metric;
        pt.ts_ms = 1356998400000;
        pt.ntags = p->ntags;
        memcpy(pt.tagk, p->tagk, p->ntags * sizeof(p->tagk[0]));
        memcpy(pt.tagv, p->tagv, p->ntags * sizeof(p->tagv[0]));
        struct put_rules rules = {8, NULL};
        char msg[512];
        (void)put_check_point(&pt, p->value, &rules, msg, sizeof(msg));
    }
    return 0;
}

static int fuzz_count(void *arg, size_t index, struct jsonput_point *p)
{
    (void)arg, (void)index, (void)p;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *body = malloc(size ? size : 1);
    char *scratch = malloc(size + 1);
    if (!body || !scratch)
        abort();
    memcpy(body, data, size);
    static struct jsonput_point point;
    struct fuzz_ctx c = {body, scratch, size};
    size_t n = 0, n2 = 0;
    char msg[256] = "", msg2[256] = "";
    int rc = jsonput_read(body, size, scratch, &point, fuzz_point, &c, &n, msg, sizeof(msg));
    int rc2 = jsonput_parse(body, size, scratch, &point, fuzz_count, NULL, &n2, msg2, sizeof(msg2));
    if (rc != rc2 || (rc == 0 && n != n2) || (rc < 0 && strcmp(msg, msg2) != 0))
        abort();
    free(body);
    free(scratch);
    return 0;
}
