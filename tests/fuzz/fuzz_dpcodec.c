/* fuzz_dpcodec.c - libFuzzer target for the datapoint cell decoders (schema/dpcodec.c): OpenTSDB
 * single cells, compacted cells, appends and ctsdb's compressed cells.
 *
 * Input: [1 byte: qualifier length][qualifier][value]. The decoder must return points or
 * CT_ECORRUPT, never crash or read out of bounds; every point it returns lies inside the row's
 * hour (base..base+3600 s). */
#include <stdlib.h>
#include <string.h>

#include "schema/dpcodec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t qlen = data[0];
    if (qlen > size - 1)
        qlen = size - 1;
    const uint8_t *q = data + 1;
    const uint8_t *v = q + qlen;
    size_t vlen = size - 1 - qlen;
    /* copy so that reads past the end are caught by ASan */
    uint8_t *qc = malloc(qlen ? qlen : 1), *vc = malloc(vlen ? vlen : 1);
    if (!qc || !vc)
        abort();
    memcpy(qc, q, qlen);
    memcpy(vc, v, vlen);
    const int64_t base_s = 1356998400;
    struct dpcodec_iter it;
    dpcodec_iter_init(&it, base_s, qc, qlen, vc, vlen);
    struct dpcodec_point p;
    struct ct_err err = {0};
    size_t n = 0;
    while (n < 100000 && dpcodec_iter_next(&it, &p, &err) == CT_OK) {
        if (p.ts_ms < base_s * 1000 || p.ts_ms >= (base_s + 3600) * 1000)
            abort(); /* a point outside its row's hour */
        n++;
    }
    dpcodec_iter_end(&it);
    free(qc);
    free(vc);
    return 0;
}
