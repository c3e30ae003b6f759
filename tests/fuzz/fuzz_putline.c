/* fuzz_putline.c - libFuzzer target for the telnet `put` line parser (tsd/put.c).
 * The parser must accept or reject any bytes without crashing, always write a NUL-terminated
 * reply on rejection, and on acceptance return a point whose strings lie inside the line and
 * whose names pass the name rules. */
#include <stdlib.h>
#include <string.h>

#include "tsd/put.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
    free(line);
    return 0;
}
