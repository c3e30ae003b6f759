/* clock.h - the one clock of ctsdb. Every "now" in the engine, the schema layer, the shell and
 * the TSD comes from clock_now_ms(). CTSDB_NOW_MS=<ms since epoch> in the environment pins it
 * (read on every call, so a test or `ctsdb shell --now MS` can set it before use). */
#ifndef CT_CLOCK_H
#define CT_CLOCK_H

#include <stdint.h>

/* Wall-clock milliseconds since the epoch, or the pinned value of CTSDB_NOW_MS. */
int64_t clock_now_ms(void);
/* Monotonic nanoseconds for measuring durations (never pinned). */
uint64_t clock_mono_ns(void);

#endif
