/* clock.c - see clock.h. The pinned value is re-read from the environment on each call; the
 * environment is only written by main() before threads start. */
#include "storage/clock.h"

#include <stdlib.h>
#include <time.h>

int64_t clock_now_ms(void)
{
    const char *pin = getenv("CTSDB_NOW_MS");
    if (pin && *pin) {
        char *end;
        long long v = strtoll(pin, &end, 10);
        if (*end == '\0' && v >= 0)
            return (int64_t)v;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t clock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
