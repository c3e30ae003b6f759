/* fuzz_query_m.c - libFuzzer target for the `m=` and `tsuid=` query syntax (query/qspec.c):
 * any string parses or fails with a message; never a crash or a leak. */
#include <stdlib.h>
#include <string.h>

#include "query/qspec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = '\0';
    struct ct_err err = {0};
    struct qspec_sub sub;
    memset(&sub, 0, sizeof(sub));
    if (qspec_parse_m(s, &sub, &err) != CT_OK && !err.msg[0])
        abort(); /* a failure says why */
    qspec_sub_clear(&sub);
    memset(&sub, 0, sizeof(sub));
    (void)qspec_parse_tsuid_param(s, &sub, &err);
    qspec_sub_clear(&sub);
    free(s);
    return 0;
}
