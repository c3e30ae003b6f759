/* fuzz_promwrite.c - libFuzzer target for the remote-write body decoder (tsd/proto_prom.c):
 * prom_write_decode, which reads the usual shape of a WriteRequest in place and anything else
 * through protobuf-c, against prom_write_unpack, which reads everything through protobuf-c.
 *
 * Input: a decoded (not snappy) WriteRequest body. Both must give the same status and, when 0,
 * the same series (labels byte for byte, samples bit for bit); every series' labels must decode
 * the same way from both keys. Anything else aborts. */
#include <stdlib.h>
#include <string.h>

#include "tsd/proto_prom.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* copy so that reads past the end are caught by ASan */
    uint8_t *body = malloc(size ? size : 1);
    if (!body)
        abort();
    memcpy(body, data, size);
    struct prom_arena a1, a2;
    prom_arena_init(&a1);
    prom_arena_init(&a2);
    struct prom_series_in *s1 = NULL, *s2 = NULL;
    size_t n1 = 0, n2 = 0;
    int st1 = prom_write_decode(&a1, body, size, &s1, &n1);
    int st2 = prom_write_unpack(&a2, body, size, &s2, &n2);
    if (st1 != st2)
        abort();
    if (st1 == 0) {
        if (n1 != n2)
            abort();
        for (size_t i = 0; i < n1; i++) {
            if (!prom_series_in_equal(&s1[i], &s2[i]))
                abort();
            Prometheus__TimeSeries *l1, *l2;
            int d1 = prom_series_labels(&a1, &s1[i], &l1);
            int d2 = prom_series_labels(&a2, &s2[i], &l2);
            if (d1 != d2)
                abort();
            for (size_t j = 0; d1 == 0 && j < l1->n_labels; j++)
                if (strcmp(l1->labels[j]->name, l2->labels[j]->name) ||
                    strcmp(l1->labels[j]->value, l2->labels[j]->value))
                    abort();
        }
    }
    prom_arena_clear(&a1);
    prom_arena_clear(&a2);
    free(body);
    return 0;
}
