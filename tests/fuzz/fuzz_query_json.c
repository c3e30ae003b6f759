/* fuzz_query_json.c - libFuzzer target for the /api/query POST body parser (query/qspec.c). */
#include <stdlib.h>
#include <string.h>

#include "query/qspec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size ? size : 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    struct ct_err err = {0};
    struct qspec *q = NULL;
    int rc = qspec_parse_json(s, size, 1700000000000LL, &q, &err);
    if (rc == CT_OK && !q)
        abort();
    if (rc != CT_OK && !err.msg[0])
        abort();
    qspec_free(q);
    free(s);
    return 0;
}
