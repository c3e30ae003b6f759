/* clock.h - the one clock of ctsdb. Every "now" in the engine, the schema layer, the shell and
 * the TSD comes from clock_now_ms(). CTSDB_NOW_MS=<ms since epoch> in the environment pins it.
 *
 * The environment is read ONCE (on the first call after start or after clock_reload()) and the
 * answer cached, because getenv() on every put was ~3% of a write. Whoever changes CTSDB_NOW_MS
 * at run time (tests, `ctsdb shell --now`) must call clock_reload() afterwards; setting it before
 * the first clock_now_ms() call needs nothing. */
#ifndef CT_CLOCK_H
#define CT_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Wall-clock milliseconds since the epoch, or the pinned value of CTSDB_NOW_MS. Thread-safe. */
int64_t clock_now_ms(void);
/* Forgets the cached CTSDB_NOW_MS: the next clock_now_ms() reads the environment again. Call it
 * after setenv/unsetenv of CTSDB_NOW_MS (not concurrently with them: getenv is not safe
 * against a concurrent setenv anyway). */
void clock_reload(void);
/* Monotonic nanoseconds for measuring durations (never pinned). */
uint64_t clock_mono_ns(void);
/* The real-time clock ms milliseconds from now (never pinned): the deadline a
 * pthread_cond_timedwait on a default condition variable takes. */
struct timespec clock_realtime_in(int64_t ms);

#endif
