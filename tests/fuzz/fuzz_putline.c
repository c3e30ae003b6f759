/* fuzz_putline.c - libFuzzer target for the telnet `put` line parser (tsd/put.c).
 * The parser must accept or reject any bytes without crashing, always write a NUL-terminated
 * reply on rejection, and on acceptance return a point whose strings lie inside the line and
 * whose names pass the name rules.
 * The input is also read as lines ('\n'-separated, as a telnet connection sends them), parsed
 * one after another through one memo (put_parse_line_memo, as telnet.c does) and each also
 * without it: the status, the reply and the point must be the same, and where the memo's tags
 * were used, the series key from the memo must be put_point_key_write's. The first byte picks
 * the rules (tag limit, special characters) for the whole input. */
#include <stdlib.h>
#include <string.h>

#include "tsd/put.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Parses line[0..len) with and without memo; aborts on any difference. */
static void fuzz_memo_line(struct put_memo *memo, const struct put_rules *rules, const char *line,
                           size_t len)
{
    static struct put_point a, b;
    static char ma[2048], mb[2048], ka[4096], kb[4096];
    ma[0] = mb[0] = '\0';
    enum put_status sa = put_parse_line_memo(line, len, rules, memo, &a, ma, sizeof(ma));
    enum put_status sb = put_parse_line(line, len, rules, &b, mb, sizeof(mb));
    if (sa != sb || strcmp(ma, mb) != 0)
        abort();
    if (sa != PUT_OK) {
        if (memo->last)
            abort();
        return;
    }
    if (a.metric.p != b.metric.p || a.metric.len != b.metric.len || a.ts_ms != b.ts_ms ||
        a.ms != b.ms || a.value.kind != b.value.kind || a.ntags != b.ntags)
        abort();
    if (a.value.kind == PUT_INT ? a.value.i != b.value.i
                                : memcmp(&a.value.d, &b.value.d, sizeof(double)) != 0)
        abort();
    for (size_t i = 0; i < a.ntags; i++)
        if (a.tagk[i].p != b.tagk[i].p || a.tagk[i].len != b.tagk[i].len ||
            a.tagv[i].p != b.tagv[i].p || a.tagv[i].len != b.tagv[i].len)
            abort();
    if (memo->last && put_point_key_len(&a) <= sizeof(ka)) {
        size_t n = put_memo_key_write(memo, &a, ka);
        if (n != put_point_key_len(&b) || put_point_key_write(kb, &b) != kb + n ||
            memcmp(ka, kb, n) != 0)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *line = malloc(size + 1);
    if (!line)
        return 0;
    memcpy(line, data, size);
    line[size] = 'X'; /* not NUL: the parser must respect len */
    static struct put_point p;
    char msg[512];
    struct put_rules rules = {8, NULL};
    enum put_status st = put_parse_line(line, size, &rules, &p, msg, sizeof(msg));
    if (st == PUT_OK) {
        if (p.metric.p < line || p.metric.p + p.metric.len > line + size || p.ntags < 1 ||
            p.ntags > 8)
            abort();
        size_t bad;
        if (!put_name_valid(p.metric.p, p.metric.len, NULL, &bad))
            abort();
        for (size_t i = 0; i < p.ntags; i++)
            if (p.tagk[i].p < line || p.tagv[i].p + p.tagv[i].len > line + size)
                abort();
    } else if (!memchr(msg, '\0', sizeof(msg)) || strncmp(msg, "put: ", 5) != 0) {
        abort();
    }
    /* the same bytes as a connection's lines, through one memo; each line copied to its own
     * buffer so that reading past it is caught */
    static struct put_memo memo;
    memset(&memo, 0, sizeof(memo));
    struct put_rules lrules = {size > 0 ? 1 + data[0] % 20 : 8,
                               size > 0 && data[0] & 0x80 ? "@!" : NULL};
    for (size_t at = 0; at < size;) {
        const uint8_t *nl = memchr(data + at, '\n', size - at);
        size_t len = nl ? (size_t)(nl - (data + at)) : size - at;
        char *l = malloc(len + 1);
        if (!l)
            break;
        memcpy(l, data + at, len);
        l[len] = 'X';
        fuzz_memo_line(&memo, &lrules, l, len);
        free(l);
        at += len + 1;
    }
    free(line);
    return 0;
}
