/* tstats.c - the TSD's global counters and latency histograms (see tstats.h).
 * Invariants: (1) both latency histograms count the same requests: tstats_http_latency_add
 * is the only writer and adds to each once. Locking: none (relaxed atomics, tstats.h). */
#include "tsd/tstats.h"

_Atomic uint64_t tstats_counters[TSTATS_NCOUNTERS];

struct lathist tstats_http_latency_ms = LATHIST_INITIALIZER(LATHIST_OTSDB_MS);
struct lathist tstats_http_latency_us = LATHIST_INITIALIZER(LATHIST_FINE_US);

void tstats_http_latency_add(uint64_t elapsed_ns)
{
    lathist_add(&tstats_http_latency_ms, elapsed_ns / 1000000);
    lathist_add(&tstats_http_latency_us, elapsed_ns / 1000);
}
